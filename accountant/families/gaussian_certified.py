"""Float bounds on the exact Gaussian curve, with an error bound for every operation.

The exact privacy curve of ``mu``-GDP (Balle & Wang 2018, "Improving the Gaussian
Mechanism for Differential Privacy", Theorem 8) is

    ``delta(eps) = Phi(a) - e^eps Phi(b)``,  ``a = mu/2 - eps/mu``,  ``b = -mu/2 - eps/mu``,

:func:`log_delta_bounds` returns an interval that contains the exact ``log delta`` at
the floats ``mu`` and ``eps`` (taken as exact reals), from a bound on the error of
every floating-point step.  Where ``-37 <= a <= 0`` it uses the scaled form
``delta = e^(-a^2/2) (erfcx(-a/sqrt 2) - erfcx((mu - a)/sqrt 2)) / 2`` (see
:func:`_log_f_bound`: ``erfcx``'s error, measured at most ``5.3 u`` against mpmath on
10^5 points of ``[0, 1e5]``, is allowed ``32 u``; the rounding of ``a`` is taken by
monotonicity), which is not amplified by the size of ``log Phi``.  Both ``erfcx`` and
``log Phi`` are the scalar functions of
:mod:`~dpacct.accountant.families.normal_tails` (on the C library's ``erfc``; SciPy's,
used before, cost a first epsilon the import of ``scipy.special``, issue 37), whose
errors, measured on the same kind of grids as SciPy's, are within the same allowances.
Elsewhere it evaluates in log space, ``log delta = log Phi(a) + log(-expm1(x))`` with ``x = eps +
log Phi(b) - log Phi(a) <= 0``, bounding:

1. ``a`` and ``b``: two IEEE roundings each, so ``|a_float - a| <= 1.01 u (eps/mu +
   |a|)`` (``u = 2^-53``), and the same for ``b``.
2. ``log Phi`` (:func:`~dpacct.accountant.families.normal_tails.log_ndtr`) at the
   float argument: **a measured bound, inflated** (nothing documents one).  Against
   mpmath at 40 digits (50 000 points of ``-1e4 <= t <= 0`` and 50 000 of ``0 < t <=
   37``, geometric and uniform; tests/test_normal_tails.py repeats it on a fresh grid
   and requires at most half the allowance) the relative error was at most ``3.5 u`` for
   ``t <= 1`` and ``1.7 t^2 u`` above ``t = 4`` (the argument scaling ``t / sqrt 2``
   inside ``erfc`` is amplified by ``t^2`` where ``log Phi(t) ~ -Phi(-t)``; SciPy's
   ``log_ndtr``, used before, on the same points: ``4.9 u`` and ``2.0 t^2 u``).  We
   allow ``(16 + 4 t^2) u`` relative, at least 2.5x every measured error (the worst
   measured share 0.40; SciPy's 0.50), and only for ``-1e4 <= t <= 37``
   (above about 37.5 ``Phi(-t)`` is subnormal and the relative error grows without
   bound; there the caller falls back to mpmath).
3. The error of ``a`` moves ``log Phi`` by at most ``sup |(log Phi)'| |a_float - a|``,
   and ``(log Phi)'(t) = phi(t) / Phi(t) <= max(0, -t) + 1`` (the inverse Mills
   ratio: ``Phi(-s) / phi(s) >= 2 / (s + sqrt(s^2 + 4))`` for ``s >= 0``, Birnbaum
   1942 / Sampford 1953, so ``phi(t)/Phi(t) <= (s + sqrt(s^2+4))/2 <= s + 1`` at ``t
   = -s``; and ``phi(t)/Phi(t) <= phi(0)/Phi(0) < 0.8`` for ``t >= 0``).
4. ``x``: the two roundings of ``eps + log Phi(b) - log Phi(a)`` add ``1.01 u (|eps +
   log Phi(b)| + |x|)``; ``-expm1`` is decreasing, so the ends of ``x``'s interval give
   the ends of ``1 - e^x`` (the exact ``x`` is at most 0, since delta >= 0).
5. ``exp``, ``expm1``, ``log`` of the C library (glibc documents at most 1-2 ulp for
   them on x86-64; measured below 1.1 ulp): ``8 u`` relative each, and the final sums
   rounded, all added as ``8 u (|log Phi(a)| + |log(1 - e^x)| + 2)`` in log space.

Every bound is then multiplied by ``1.001`` for the rounding of the error terms
themselves.  The interval is wide where the two terms cancel (``x`` near 0: small
``mu``, or epsilons near 0); the callers then ask mpmath, so a certified answer never
rests on an interval that cannot decide.  The derivation in full:
docs/theory/analytic_gaussian.md.
"""

from __future__ import annotations

import math

from .normal_tails import erfcx as _erfcx
from .normal_tails import log_ndtr as _log_ndtr

__all__ = ["at_most", "delta_upper", "log_delta_bounds"]

_U = 2.0**-53
#: the float bound is used only for arguments of ``log Phi`` in this range (measured)
T_MIN = -1e4
T_MAX = 37.0
#: ``mu`` below this: ``mu / 2`` could be subnormal (not correctly rounded relative)
MU_MIN = 1e-290
#: where ``a > 0`` a log-form interval at most this wide is returned as it is; wider
#: ones (small ``mu``: it cancels) are intersected with the scaled form's
NARROW = 2.0**-44


def _log_ndtr_rel(t: float) -> float:
    """Allowed relative error of ``log_ndtr(t)``, in units of ``u`` (see the module
    docstring, item 2)."""
    return 16.0 + 4.0 * t * t if t > 0.0 else 16.0


_SQRT1_2 = 0.7071067811865476
_LOG_HALF = math.log(0.5)
#: allowed relative error of :func:`~dpacct.accountant.families.normal_tails.erfcx` on
#: ``[0, 1e5]``, in units of ``u`` (measured at most 5.3 u against mpmath on 10^5 points;
#: SciPy's ``erfcx``, used before, 8.2 u: 32 u is 6x and 4x those)
ERFCX_REL = 32.0


#: 4-point Gauss-Legendre on [-1, 1]: ``1 + xi_i`` and the weights (the nodes
#: ``sqrt(3/7 -+ 2/7 sqrt(6/5))`` and weights ``(18 +- sqrt 30) / 36`` correctly rounded,
#: checked against mpmath in tests/test_gaussian_certified.py; ``1 + xi`` is then within
#: ``1.5 u`` of its real value)
_GL_ONE_PLUS = (
    1.0 - 0.8611363115940526,
    1.0 - 0.33998104358485626,
    1.0 + 0.33998104358485626,
    1.0 + 0.8611363115940526,
)
_GL_WEIGHTS = (0.34785484513745385, 0.6521451548625461, 0.6521451548625461, 0.34785484513745385)
#: ``(n!)^4 / ((2n + 1) ((2n)!)^3)`` at ``n = 4`` (the Gauss-Legendre remainder, on an
#: interval of length ``h``, is this times ``h^9`` times the 8th derivative), rounded up
_GL_REMAINDER = 5.6242e-10
#: ``2 / sqrt(pi)``, and ``1 / sqrt(pi)``
_TWO_OVER_SQRT_PI = 1.1283791670955126
_INV_SQRT_PI = 0.5641895835477563
#: ``h`` (``mu / sqrt 2``) up to which :func:`_erfcx_drop` is tried (``mu <= 0.21``);
#: above, the difference form cancels by less and the extra four ``erfcx`` cost more
#: than they gain (0.3 ms of 1.1 ms on 59 certified epsilons at mu 0.2-1.5 with 0.5)
DROP_MAX_H = 0.15


def _erfcx_derivative_bound(n: int, x: float) -> float:
    """An upper bound on ``|erfcx^(n)|`` on ``[x, inf)``, for every real ``x``:
    ``erfcx(x) = (2 / sqrt pi) int_0^inf exp(-t^2 - 2 x t) dt`` for every real ``x``, so
    ``(-1)^n erfcx^(n)(x) = (2/sqrt pi) int (2t)^n exp(-t^2 - 2xt) dt`` is positive and
    decreasing.  For ``x >= 0`` it is at most ``2^n Gamma((n+1)/2) / sqrt pi`` (drop
    ``2xt``) and ``n! / (sqrt pi x^(n+1))`` (drop ``t^2``); for ``x = -c < 0``,
    ``e^(-t^2 + 2ct) = e^(c^2) e^(-(t-c)^2)`` and ``t = u + c`` give at most ``(2 /
    sqrt pi) 2^n e^(c^2) sum_k C(n, k) c^(n-k) Gamma((k+1)/2)`` (the integral over all
    ``u`` of ``(|u| + c)^n e^(-u^2)``, expanded).  Rounded up by 1 %."""
    if x < 0.0:
        c = -x
        total = sum(
            math.comb(n, k) * c ** (n - k) * math.gamma(0.5 * (k + 1)) for k in range(n + 1)
        )
        return 1.01 * _TWO_OVER_SQRT_PI * 2.0**n * math.exp(c * c) * total
    first = 2.0**n * math.gamma(0.5 * (n + 1)) * _INV_SQRT_PI
    if x > 1e-30:  # (x^(n+1) stays a normal float)
        first = min(first, math.factorial(n) * _INV_SQRT_PI / x ** (n + 1))
    return 1.01 * first


def _erfcx_node(x: float) -> tuple[float, float]:
    """``erfcx(x)`` and a bound on its absolute error: SciPy's value for ``x >= 0``
    (``ERFCX_REL u`` relative, measured); for ``x < 0`` (small ``|x|``: the nodes of
    :func:`_erfcx_drop` left of 0, at epsilons below ``mu^2 / 2``) from ``erfcx(x) = 2
    e^(x^2) - erfcx(-x)`` (``erfc(x) = 2 - erfc(-x)``), with ``exp``'s ``8 u``, the
    square's rounding (``x^2 u`` relative inside ``exp``), SciPy's ``ERFCX_REL u`` at
    ``-x`` and the subtraction's rounding; the difference is at least 1 (``erfcx(-x)
    <= 1 <= e^(x^2)``), so it does not cancel."""
    if x >= 0.0:
        e = float(_erfcx(x))
        return e, ERFCX_REL * _U * e
    x2 = x * x
    big = 2.0 * math.exp(x2)
    small = float(_erfcx(-x))
    e = big - small
    err = (8.0 + 1.01 * x2) * _U * big + ERFCX_REL * _U * small + _U * e
    return e, 1.01 * err


def _erfcx_drop(s: float, h: float) -> tuple[float, float] | None:
    """``(lower, upper)`` on ``D = erfcx(s) - erfcx(s + h)`` for the floats ``s`` (real:
    ``s < 0`` at epsilons below ``mu^2 / 2``, its nodes there by :func:`_erfcx_node`) and
    ``h > 0`` taken as exact, without the cancellation of the difference.

    ``D = int_s^(s+h) g``, ``g = -erfcx' = 2/sqrt(pi) - 2x erfcx(x) > 0``, by 4-point
    Gauss-Legendre: the remainder is at most ``_GL_REMAINDER h^9 |erfcx^(9)(s)|``
    (``|g^(8)| = |erfcx^(9)|`` decreases, :func:`_erfcx_derivative_bound`).  Each ``g``
    cancels only by ``2x erfcx(x) / g ~ 2x^2`` (against ``~ 4 x^2 / h`` for the
    difference of two ``erfcx``): ``erfcx``'s relative error ``ERFCX_REL u``, the
    constant's and the product's roundings, and the node's rounding (``x`` within
    ``1.01 u (x + 2 p + 2 h)``, ``p = h (1 + xi) / 2`` the offset, moving ``g`` by at most
    ``|g'| = erfcx''`` times that) are bounded per node; the weights (half an ulp
    each) and the positive sum's four roundings add ``8 u`` of the sum.  Every bound
    is taken ``1.01`` times.  None when a node's error reaches its value.
    docs/theory/analytic_gaussian.md, "Small mu".
    """
    half = 0.5 * h  # exact
    total = 0.0
    err = 0.0
    for c, w in zip(_GL_ONE_PLUS, _GL_WEIGHTS, strict=True):
        p = half * c
        x = s + p
        if x >= 0.0:  # (inline: the common case)
            e = float(_erfcx(x))
            ee = ERFCX_REL * _U * e
        else:
            e, ee = _erfcx_node(x)
        two_x_e = 2.0 * x * e
        g = _TWO_OVER_SQRT_PI - two_x_e
        # the sum (u x), the product (u p), the constant 1 + xi (1.5 u absolute, times h/2)
        dx = 1.01 * _U * (abs(x) + 2.0 * p + 2.0 * h)
        eg = 1.01 * (
            2.0 * abs(x) * ee
            + 2.0 * _U * abs(two_x_e)
            + 2.0 * _U * _TWO_OVER_SQRT_PI
            + _U * abs(g)
            + _erfcx_derivative_bound(2, x - dx) * dx
        )
        if not eg < g:
            return None
        total += w * g
        err += w * eg
    q = half * total
    err = 1.01 * (half * err + 8.0 * _U * q)
    err += 1.01 * _GL_REMAINDER * h**9 * _erfcx_derivative_bound(9, s)
    if not err < q:
        return None
    return q - err, q + err


def _log_f_bound(t: float, mu: float, upper: bool) -> float | None:
    """Bound on ``log F(t)``, ``F(t) = Phi(t) - e^e' Phi(t - mu)`` with ``e' = mu (mu/2 -
    t)`` (the curve where ``a = t`` exactly), in the scaled form ``F = e^(-t^2/2)
    (erfcx(-t/sqrt 2) - erfcx((mu - t)/sqrt 2)) / 2`` (``Phi(s) = erfcx(-s/sqrt 2)
    e^(-s^2/2) / 2`` and ``e' - (t - mu)^2/2 = -t^2/2``): :func:`_d_bound`, its log
    (``4 u`` of every term for the roundings and ``log``'s error)."""
    d = _d_bound(t, mu, upper)
    if d is None or not d > 0.0:
        return d
    log_d = math.log(d)
    value = _LOG_HALF - 0.5 * t * t + log_d
    slack = 4.0 * _U * (t * t + abs(log_d) + 2.0)
    return value + slack if upper else value - slack


def _d_bound(t: float, mu: float, upper: bool) -> float | None:
    """Bound on ``D = erfcx(-t/sqrt 2) - erfcx((mu - t)/sqrt 2)`` (above for ``upper``);
    ``erfcx`` decreases, so its arguments are moved by a few ulps to the side that
    bounds ``D`` (upper: the first down, the second up).  None where it cannot bound
    above, ``-inf`` where its lower bound is not positive."""
    sa = -t * _SQRT1_2  # 2 roundings (constant, product): relative 2.01 u
    sb = (mu - t) * _SQRT1_2  # 3 roundings
    if upper:
        sa = math.nextafter(sa * (1.0 - 4.0 * _U), -math.inf)
        sb = math.nextafter(sb * (1.0 + 6.0 * _U), math.inf)
    else:
        sa = math.nextafter(sa * (1.0 + 4.0 * _U), math.inf)
        sb = math.nextafter(sb * (1.0 - 6.0 * _U), -math.inf)
    h = mu * _SQRT1_2  # 2 roundings: relative 2.01 u
    if not (sb <= 1e5 and (0.0 <= sa or h <= DROP_MAX_H)):
        return None
    if sa >= 0.0:
        ea = float(_erfcx(sa))
        eb = float(_erfcx(sb))
        d = ea - eb
        err = 1.01 * (ERFCX_REL * _U * (ea + eb) + _U * abs(d))
        d = d + err if upper else d - err
    else:
        # t > 0 (epsilon below mu^2 / 2, small mu): the integral form alone
        d = math.inf if upper else -math.inf
    if h <= DROP_MAX_H:
        # small mu: the difference as an integral (no cancellation), at s = sa and h
        # moved to the side that bounds it (D decreases in s, increases in h)
        h = h * (1.0 + 3.0 * _U) if upper else h * (1.0 - 3.0 * _U)
        h = math.nextafter(h, math.inf if upper else 0.0)
        drop = _erfcx_drop(sa, h)
        if drop is not None:
            d = min(d, drop[1]) if upper else max(d, drop[0])
    if math.isinf(d) and d > 0.0:
        return None
    if not d > 0.0:
        return -math.inf if not upper else None
    return d


def delta_upper(mu: float, eps: float) -> float | None:
    """An upper bound on ``delta(eps)`` of ``mu``-GDP itself (not its log) from the
    scaled form where ``|a| <= 1`` at small ``mu`` (``mu / sqrt 2 <= DROP_MAX_H``), or
    None: ``F(a_up) = e^(-t^2/2) D / 2`` (:func:`_scaled_bounds`' monotonicity) with
    ``D`` bounded above (:func:`_d_bound`); ``t^2``'s rounding moves ``exp``'s argument by
    ``u t^2 / 2``, ``exp`` is within ``8 u`` and the product one rounding, so the
    float product times ``1 + 1.01 (10 + t^2) u``, one more ulp up, bounds it.  Within
    a few ``u`` of the curve near epsilon 0, where the log form's ``4 u |log delta|``
    of slack is 1e-13 at delta 1e-200.

    Examples
    --------
    >>> d = delta_upper(1e-6, 0.0)   # erf(mu / (2 sqrt 2)) = 3.98942280401...e-7
    >>> bool(3.989422804014e-07 < d < 3.989422804016e-07)
    True
    """
    if not (mu >= MU_MIN and eps >= 0.0 and mu * _SQRT1_2 <= DROP_MAX_H):
        return None
    r = eps / mu
    a = 0.5 * mu - r
    t = math.nextafter(a + 1.01 * _U * (r + abs(a)) + 1e-300, math.inf)
    if not -1.0 <= t <= 1.0:
        return None
    d = _d_bound(t, mu, True)
    if d is None:
        return None
    tt = t * t
    value = 0.5 * math.exp(-0.5 * tt) * d
    return math.nextafter(value * (1.0 + 1.01 * (10.0 + tt) * _U), math.inf)


def _scaled_bounds(mu: float, eps: float) -> tuple[float, float] | None:
    """``log delta`` bounds from the scaled form (:func:`_log_f_bound`) at ``t = a``
    rounded outwards: ``F`` increases with ``t`` (``e'`` decreases and the curve
    decreases in epsilon, for every real epsilon: ``F'(t) = mu e^e' Phi(t - mu) > 0``),
    so ``F(a_up)`` bounds the curve above and ``F(a_down)`` below.  Used where ``-37 <=
    a <= 0``, and at small ``mu`` (``mu / sqrt 2 <= DROP_MAX_H``) also where ``a > 0``
    (epsilon below ``mu^2 / 2``, delta(0) among them: the log-space form cancels
    there), by the integral form of the difference alone."""
    r = eps / mu
    a = 0.5 * mu - r
    da = 1.01 * _U * (r + abs(a)) + 1e-300
    a_up = math.nextafter(a + da, math.inf)
    a_down = math.nextafter(a - da, -math.inf)
    if not ((a_up <= 0.0 or mu * _SQRT1_2 <= DROP_MAX_H) and a_down >= -37.0):
        return None
    upper = _log_f_bound(a_up, mu, True)
    if upper is None:
        return None
    lower = _log_f_bound(a_down, mu, False)
    if lower is None:
        return None
    return lower, upper


def log_delta_bounds(mu: float, eps: float) -> tuple[float, float] | None:
    """``(lower, upper)`` on ``log delta(eps)`` of ``mu``-GDP (Balle & Wang 2018,
    Theorem 8) at the floats ``mu``, ``eps`` taken as exact, or None where the float
    error bound does not apply (then ask mpmath).

    ``lower`` may be ``-inf`` (no information).  See the module docstring for every
    error term.

    Examples
    --------
    >>> lo, hi = log_delta_bounds(1.0, 1.0)
    >>> bool(lo <= math.log(0.12693673750664397) <= hi and hi - lo < 1e-13)
    True
    >>> log_delta_bounds(100.0, 1.0) is None  # a = 49.99: beyond the measured range
    True
    """
    if not (mu >= MU_MIN and eps >= 0.0) or math.isinf(mu):
        return None
    a = 0.5 * mu - eps / mu
    if a < 0.0:
        scaled = _scaled_bounds(mu, eps)
        return scaled if scaled is not None else _log_space_bounds(mu, eps)
    logs = _log_space_bounds(mu, eps)
    if logs is not None and logs[1] - logs[0] <= NARROW:
        return logs  # (the scaled form's quadrature costs as much again)
    scaled = _scaled_bounds(mu, eps)
    if scaled is None or logs is None:
        return scaled if logs is None else logs
    # a > 0 at small mu: both bound the curve; their intersection is the tighter
    return max(scaled[0], logs[0]), min(scaled[1], logs[1])


def _log_space_bounds(mu: float, eps: float) -> tuple[float, float] | None:
    """``log delta`` bounds in log space (the module docstring, items 1-5), or None."""
    r = eps / mu
    a = 0.5 * mu - r
    b = -0.5 * mu - r
    if not (T_MIN <= b and a <= T_MAX):  # also NaN and inf
        return None
    la = float(_log_ndtr(a))
    lb = float(_log_ndtr(b))
    da = 1.01 * _U * (r + abs(a))
    db = 1.01 * _U * (r + abs(b))
    ea = 1.001 * (_log_ndtr_rel(a) * _U * abs(la) + (max(0.0, da - a) + 1.0) * da)
    eb = 1.001 * (_log_ndtr_rel(b) * _U * abs(lb) + (max(0.0, db - b) + 1.0) * db)
    s = eps + lb
    x = s - la
    ex = 1.001 * (ea + eb + 1.01 * _U * (abs(s) + abs(x)))
    x_low = min(x - ex, 0.0)
    w_up = -math.expm1(x_low)
    if not w_up > 0.0:
        return None
    log_w_up = math.log(w_up)
    upper = la + ea + log_w_up
    upper += 8.0 * _U * (abs(la) + abs(log_w_up) + 2.0) + 1e-300
    x_high = x + ex
    if x_high >= 0.0:
        return -math.inf, upper
    w_low = -math.expm1(x_high)
    log_w_low = math.log(w_low)
    lower = la - ea + log_w_low
    lower -= 8.0 * _U * (abs(la) + abs(log_w_low) + 2.0) + 1e-300
    return lower, upper


def at_most(mu: float, eps: float, delta: float) -> bool | None:
    """Whether the exact curve at ``(mu, eps)`` is at most ``delta`` (True / False), or
    None where the float bounds cannot decide (ask mpmath).

    Also decides without evaluating where ``a <= -39`` (the curve is below ``Phi(-39)
    < 1e-330``) and ``delta`` is a normal float.

    Examples
    --------
    >>> at_most(1.0, 1.0, 0.127), at_most(1.0, 1.0, 0.126)
    (True, False)
    """
    if not (0.0 < delta < 1.0):
        return None
    log_d = math.log(delta)
    if mu >= MU_MIN and math.isfinite(mu) and eps >= 0.0:
        r = eps / mu
        a = 0.5 * mu - r
        if a + 1.01 * _U * (r + abs(a)) < -39.0 and delta >= 1e-300:
            return True
        if a >= 0.0:
            # the log form alone first: it decides unless the curve is within its
            # width of delta (a calibration's check of delta(0) at small mu)
            decided = _decide(_log_space_bounds(mu, eps), log_d)
            if decided is not None:
                return decided
    return _decide(log_delta_bounds(mu, eps), log_d)


def _decide(bounds: tuple[float, float] | None, log_d: float) -> bool | None:
    """True (False) when ``bounds`` on ``log delta(eps)`` lie at most (above) ``log_d``
    by more than ``log``'s error; None otherwise."""
    if bounds is None:
        return None
    margin = 4.0 * _U * (abs(log_d) + 1.0)  # log's error (<= 1 ulp), generously
    if bounds[1] <= log_d - margin:
        return True
    if bounds[0] > log_d + margin:
        return False
    return None
