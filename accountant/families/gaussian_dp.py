"""Closed forms of Gaussian differential privacy: the curves of the ``mu``-GDP pair
``N(0, 1)``, ``N(mu, 1)``.

The exact privacy curve (Balle & Wang 2018, Theorem 8), its inverse, the trade-off curve
(Dong, Roth, Su 2019, Definition 2.7) and the noise multiplier a ``mu`` stands for.
Every mechanism that declares a Gaussian-DP ``mu`` states these curves; this module
imports no mechanism, so each of them can (:mod:`dpacct.accountant.families.gaussian` holds the
:class:`~dpacct.accountant.families.gaussian.GaussianMechanism` itself).
"""

from __future__ import annotations

import math
import sys

import numpy as np

from ..curve_down import _SUBNORMAL_SLACK  # two subnormal ulps (ndtr at a subnormal)
from ..numerics import brentq, invert_decreasing
from ..numerics import scipy_special as special
from ..validation import as_float_array, check_delta, check_positive
from . import normal_tails
from .gaussian_certified import at_most, delta_upper, log_delta_bounds

__all__ = [
    "SIGMA_ROUND_DOWN",
    "certified_gaussian_bracket",
    "certified_gaussian_delta",
    "certified_gaussian_epsilon",
    "gaussian_delta",
    "gaussian_delta_at_most_exact",
    "gaussian_epsilon",
    "gaussian_log_delta",
    "gaussian_tpr_up",
    "gaussian_tradeoff",
    "huge_mu_bracket",
    "sigma_below",
]


def gaussian_delta(mu: float, epsilon: np.ndarray) -> np.ndarray:
    """Exact delta(eps) of the Gaussian mechanism with ``mu = sensitivity / sigma``.

    Balle & Wang 2018 ("Improving the Gaussian Mechanism for Differential Privacy",
    Theorem 8): ``delta = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)``, evaluated
    in log space as ``Phi(a) * (1 - exp(eps + log Phi(b) - log Phi(a)))`` so that
    deltas down to 1e-300 keep their relative precision.

    Parameters
    ----------
    mu : float
        ``sensitivity / sigma``, > 0.
    epsilon : numpy.ndarray
        Epsilons (real).

    Examples
    --------
    >>> round(float(gaussian_delta(1.0, np.array([1.0]))[0]), 6)
    0.126937
    """
    mu = check_positive("mu", mu)
    eps = as_float_array("epsilon", epsilon)
    a = mu / 2.0 - eps / mu
    b = -mu / 2.0 - eps / mu
    log_pa = special.log_ndtr(a)
    log_pb = special.log_ndtr(b)
    with np.errstate(over="ignore", invalid="ignore"):
        x = eps + log_pb - log_pa
        val = np.exp(log_pa) * -np.expm1(np.minimum(x, 0.0))
    return np.clip(np.where(np.isnan(val), 0.0, val), 0.0, 1.0)


def gaussian_log_delta(mu: float, eps: float) -> float:
    """``log delta(eps)`` of ``mu``-GDP (``-inf`` where delta is 0), from
    :func:`gaussian_delta`.

    Examples
    --------
    >>> round(gaussian_log_delta(1.0, 1.0), 6)  # log 0.126937
    -2.064066
    """
    d = float(gaussian_delta(mu, np.array([eps]))[0])
    return math.log(d) if d > 0 else -math.inf


def gaussian_epsilon(mu: float, delta: float) -> float:
    """Epsilon at ``delta`` of ``mu``-Gaussian DP (a Gaussian with sigma = 1 / mu).

    Inverts the exact curve of Balle & Wang 2018 (Theorem 8) to about 1e-12 relative
    accuracy; not rounded in either direction (use ``Mechanism.epsilon`` for a bound).

    Parameters
    ----------
    mu : float
        ``sensitivity / sigma``, > 0.
    delta : float
        Target delta, in (0, 1).

    Examples
    --------
    >>> round(gaussian_epsilon(1.0, 1e-5), 4)
    4.3772
    """
    mu = check_positive("mu", mu)
    delta = check_delta(delta, what="Gaussian DP")
    log_d = math.log(delta)
    if gaussian_log_delta(mu, 0.0) <= log_d:
        return 0.0
    if mu > HUGE_MU:
        # beyond mpmath's and the float curve's reach: the closed-form upper end of
        # huge_mu_bracket (about mu^2 / 2, inf once that overflows)
        return huge_mu_bracket(mu, delta)[1]
    hi = max(1.0, mu * mu)
    while gaussian_log_delta(mu, hi) > log_d:
        hi *= 2.0
        if hi > 1e300:
            return math.inf

    def f(e: float) -> float:
        v = gaussian_log_delta(mu, e)
        return max(v, -1e300) - log_d

    return brentq(f, 0.0, hi, xtol=1e-15, rtol=1e-13, maxiter=500)


def gaussian_delta_at_most_exact(mu: float, eps: float, delta: float) -> bool:
    """True if ``Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu) <= delta`` for the exact
    curve at the floats ``mu``, ``eps``: decided by the certified float bounds of
    :func:`~dpacct.accountant.families.gaussian_certified.at_most` where they can, else
    at 50 digits plus those the cancellation costs at small ``mu``.

    Examples
    --------
    >>> gaussian_delta_at_most_exact(1.0, 1.0, 0.127), gaussian_delta_at_most_exact(1.0, 1.0, 0.126)
    (True, False)
    """
    decided = at_most(mu, eps, delta)
    if decided is not None:
        return decided
    return bool(_gaussian_delta_mp(mu, eps) <= delta)


def _gaussian_delta_mp(mu, eps):
    """The exact curve (an ``mpmath.mpf``) at the reals ``mu`` and ``eps`` (floats, taken
    as exact), at 50 digits plus the ``log10(1 / mu)`` that the difference of the two
    normal tails cancels."""
    import mpmath

    with mpmath.workdps(50 + max(0, math.ceil(-math.log10(mu)))):
        m, e = mpmath.mpf(mu), mpmath.mpf(eps)
        return mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m)


def certified_gaussian_delta(mu: float, epsilon: np.ndarray) -> np.ndarray:
    """Upper bounds on the exact ``mu``-GDP curve at each ``epsilon`` (a flat array), at
    ``mu (1 + 2^-50)``: the upper end of the certified float interval
    (:func:`~dpacct.accountant.families.gaussian_certified.log_delta_bounds`) where it is
    at most ``2^-40`` wide (relative) and above 1e-300, else the curve at 50 digits (plus
    what cancellation costs) rounded up to a float.

    The float curve (:func:`gaussian_delta`) can be below the exact one where it cancels
    (relative 2e-14 at sigma 20, 4e-8 near delta 1e-277 at sigma 4 300); this is what
    :meth:`Mechanism.delta <dpacct.accountant.Mechanism.delta>` answers for a mechanism
    with a Gaussian-DP ``mu``.  About 10 us a value on the float path, 0.3 ms at 50
    digits.

    Examples
    --------
    >>> d = certified_gaussian_delta(1 / 20.142713465865768, np.array([0.32990195621628216]))
    >>> bool(d[0] >= 1.2797679843643706e-13)  # the curve at 60 digits
    True
    """
    mu_up = mu * (1.0 + SIGMA_ROUND_DOWN)
    out = np.empty(epsilon.size)
    if mu > HUGE_MU:
        return _huge_mu_delta_up(mu_up, epsilon)
    for i, e in enumerate(epsilon.tolist()):
        if e / mu_up - mu_up / 2 >= 40.0:
            # delta <= Phi(mu/2 - eps/mu) <= Phi(-40) < 1e-349, below the least positive
            # float, which bounds it (mpmath's erfc overflows near eps/mu ~ 1e154)
            out[i] = math.nextafter(0.0, 1.0)
            continue
        direct = delta_upper(mu_up, e)  # small mu, |a| <= 1: within a few u
        bounds = log_delta_bounds(mu_up, e)
        if bounds is not None and bounds[1] - bounds[0] <= 2.0**-40 and bounds[1] > -690.0:
            # exp within 1 ulp (glibc); 4 ulps and one more step up cover it
            up = math.nextafter(math.exp(bounds[1]) * (1.0 + 2.0**-51), math.inf)
            out[i] = min(up, 1.0 if direct is None else direct, 1.0)
            continue
        exact = _gaussian_delta_mp(mu_up, e)
        value = float(exact)
        out[i] = min(math.nextafter(value, math.inf) if value < exact else value, 1.0)
    return out


def certified_gaussian_bracket(
    mu: float, delta: float, lo: float, hi: float
) -> tuple[float, float]:
    """``(lo, hi)`` from a float inversion of the ``mu``-GDP curve, moved outwards until
    the exact curve (Balle & Wang 2018, Theorem 8) at 50 digits confirms them.

    The float curve (:func:`gaussian_delta`) cancels when ``mu`` is small: its relative
    error reached 2e-14 at deltas users ask for (sigma 17-25) and 4e-8 at ``delta``
    near 1e-277 (sigma 4 300), in both directions, so an epsilon inverted from it can
    sit below the truth.  Here ``hi`` is raised until ``delta(hi) <= delta`` holds for
    the exact curve at ``mu (1 + 2^-50)`` and ``lo`` lowered until ``delta(lo) >=
    delta`` at ``mu (1 - 2^-50)``: the real ``mu`` a float stands for (``1 / sigma``
    rounded, or a declared float) lies between, and delta grows with ``mu``.  An end
    that fails moves out by ``2^-44`` of itself, doubling, until it holds, and is then
    bisected back to ``2^-40`` of itself; a float upper end of 0 is checked too.  Each
    check asks the certified float bounds first
    (:func:`~dpacct.accountant.families.gaussian_certified.at_most`, about 10 us) and
    the 50-digit curve (about 0.3 ms) only where they cannot decide, so the ends are
    those the 50-digit checks alone would give.

    Examples
    --------
    >>> lo, hi = certified_gaussian_bracket(1 / 20.142713465865768, 1.2797679843643717e-13,
    ...                                     0.3299019562162755, 0.3299019562162755)
    >>> bool(lo < 0.32990195621628216 < hi)  # the root at 60 digits lies inside
    True
    """
    if mu > HUGE_MU:
        return huge_mu_bracket(mu, delta)
    mu_up = mu * (1.0 + SIGMA_ROUND_DOWN)
    mu_down = mu * (1.0 - SIGMA_ROUND_DOWN)

    def hi_ok(e: float) -> bool:
        decided = at_most(mu_up, e, delta)
        if decided is not None:
            return decided
        return bool(_gaussian_delta_mp(mu_up, e) <= delta)

    def lo_ok(e: float) -> bool:
        decided = _at_least(mu_down, e, delta)
        if decided is not None:
            return decided
        return bool(_gaussian_delta_mp(mu_down, e) >= delta)

    if hi == 0.0 and not hi_ok(0.0):
        # the float curve put delta(0) at or below delta, the exact one does not: search
        # up from a tiny epsilon by doubling, then bisect
        bad, hi = 0.0, 2.0**-1000
        while not hi_ok(hi):
            bad, hi = hi, 2.0 * hi
        hi = _narrowed(hi_ok, bad, hi)
    elif math.isfinite(hi) and hi > 0.0 and not hi_ok(hi):
        step = max(hi * 2.0**-44, 2.0**-1000)
        bad = hi
        while not hi_ok(hi):
            bad, hi, step = hi, hi + step, 2.0 * step
        hi = _narrowed(hi_ok, bad, hi)
    if lo > 0.0 and not lo_ok(lo):
        step = max(lo * 2.0**-44, 2.0**-1000)
        bad = lo
        while lo > 0.0 and not lo_ok(lo):
            bad, lo, step = lo, max(lo - step, 0.0), 2.0 * step
        lo = _narrowed(lo_ok, bad, lo) if lo > 0.0 else 0.0
    return lo, hi


def certified_gaussian_epsilon(mu: float, delta: float) -> tuple[float, float]:
    """A certified ``(lower, upper)`` bracket of the epsilon of ``mu``-GDP at ``delta``
    (Balle & Wang 2018, Theorem 8), for the real ``mu`` a float stands for.

    The float curve is inverted by a safeguarded Newton iteration on ``log delta``
    (its slope is ``-e^eps Phi(b) / delta``: ``d delta / d eps = -e^eps Phi(b)``, as
    ``e^eps phi(b) = phi(a)``), a handful of scalar evaluations.  The ends are then
    certified like :func:`certified_gaussian_bracket`'s -- ``delta(hi) <= delta`` at
    ``mu (1 + 2^-50)``, ``delta(lo) >= delta`` at ``mu (1 - 2^-50)`` -- by the float
    bounds of :func:`~dpacct.accountant.families.gaussian_certified.log_delta_bounds`,
    trying the points of a grid of 32-64 ulps beyond the float root.  Where those bounds
    cannot decide (cancellation at small ``mu``, extreme arguments) this is the
    bisection of the float curve followed by :func:`certified_gaussian_bracket` (50
    digits).  The bracket is usually 1e-13 to 1e-14 wide (relative).

    Examples
    --------
    >>> lo, hi = certified_gaussian_epsilon(1.0, 1e-5)
    >>> bool(lo <= 4.3771780956812 <= hi) and hi - lo < 1e-12
    True
    """
    if mu > HUGE_MU:
        return huge_mu_bracket(mu, delta)
    mu_up = mu * (1.0 + SIGMA_ROUND_DOWN)
    mu_down = mu * (1.0 - SIGMA_ROUND_DOWN)
    at_zero = at_most(mu_up, 0.0, delta)
    if at_zero:
        return 0.0, 0.0
    root = None if at_zero is None else _float_root(mu, delta)
    for attempt in range(2):
        if root is None or not root > 0.0:
            break
        hi = _certified_end(root, lambda e: at_most(mu_up, e, delta), math.inf)
        lo = _certified_end(root, lambda e: _at_least(mu_down, e, delta), 0.0)
        if hi is not None and lo is not None:
            return lo, hi
        # the float curve cancels at small mu, so its root can sit beyond the grid's
        # reach: once more from the root of the certified bounds' midpoint
        root = _bounds_root(mu, delta, root) if attempt == 0 else None
    lo, hi = invert_decreasing(lambda e: gaussian_delta(mu, e), delta)
    return certified_gaussian_bracket(mu, delta, lo, hi)


def _bounds_root(mu: float, delta: float, root: float) -> float | None:
    """``root`` moved by up to three Newton steps on the midpoint of the certified
    interval of ``log delta`` (:func:`~dpacct.accountant.families.gaussian_certified.
    log_delta_bounds`, accurate where the float curve cancels), with the float slope
    ``-e^eps Phi(b) / delta``; a starting point for the certified grid only (the
    answer's ends are checked by the bounds).  None where the bounds do not apply."""
    log_d = math.log(delta)
    for _ in range(3):
        bounds = log_delta_bounds(mu, root)
        if bounds is None or not math.isfinite(bounds[0]):
            return None
        mid = 0.5 * (bounds[0] + bounds[1])
        lb = normal_tails.log_ndtr(-0.5 * mu - root / mu)
        slope = -math.exp(root + lb - mid)
        if not (math.isfinite(slope) and slope < 0.0):
            return None
        step = (mid - log_d) / slope
        root = root - step
        if abs(step) <= 2.0**-50 * root:
            break
    return root if root > 0.0 else None


def _at_least(mu: float, eps: float, delta: float) -> bool | None:
    """Whether the exact curve at ``(mu, eps)`` is at least ``delta``, or None."""
    bounds = log_delta_bounds(mu, eps)
    if bounds is None:
        return None
    log_d = math.log(delta)
    margin = 4.0 * 2.0**-53 * (abs(log_d) + 1.0)
    if bounds[0] >= log_d + margin:
        return True
    if bounds[1] < log_d - margin:
        return False
    return None


def _certified_end(root: float, ok, direction: float) -> float | None:
    """The first point of the grid ``2^(e - 46)`` (``root = m 2^e``, ``1/2 <= m < 1``:
    32 to 64 ulps of ``root``) at or beyond ``root`` towards ``direction`` where ``ok``
    holds (True; False and None -- undecided -- move on), trying 8 grid points; None
    if none holds (the former bisection of the 50-digit curve is then as tight: it
    stops at ``1e-13`` relative).  A fixed grid keeps the certified ends monotone in
    ``mu`` wherever both are certified at their first grid point: a larger ``mu`` has a
    larger root, which never rounds to a smaller grid point."""
    step = math.ldexp(1.0, math.frexp(root)[1] - 46)
    up = direction > root
    k = math.ceil(root / step) if up else math.floor(root / step)
    for i in range(8):
        e = (k + i if up else k - i) * step  # exact: an integer below 2^47 times 2^j
        if e < 0.0:
            return None
        if ok(e):
            return e
    return None


def _float_root(mu: float, delta: float) -> float | None:
    """The epsilon where the float curve (Balle & Wang 2018, Theorem 8, in log space)
    meets ``delta``: safeguarded Newton on ``log delta(eps) - log delta``, started at the
    upper bound ``mu (mu/2 - Phi^-1(delta))`` (where ``Phi(a) = delta``).  None if the
    curve is not finite there (the callers then bisect)."""
    log_d = math.log(delta)
    half = 0.5 * mu
    log_ndtr = normal_tails.log_ndtr  # (scalars: SciPy's import is half a first call's time)

    def g(e: float) -> tuple[float, float]:
        r = e / mu
        la = log_ndtr(half - r)
        lb = log_ndtr(-half - r)
        x = min(e + lb - la, 0.0)
        w = -math.expm1(x)
        if not w > 0.0:
            return math.inf, 0.0
        log_delta = la + math.log(w)
        # slope of log delta: -e^eps Phi(b) / delta
        return log_delta - log_d, -math.exp(e + lb - log_delta)

    lo, hi = 0.0, mu * (half - normal_tails.ndtri(delta))
    if not (math.isfinite(hi) and hi > 0.0):
        return None
    val, slope = g(hi)
    grow = 0
    while val > 0.0:
        lo, hi, grow = hi, 2.0 * hi, grow + 1
        if grow > 60:
            return None
        val, slope = g(hi)
    e = hi
    for _ in range(100):
        if not (math.isfinite(val) and slope < 0.0):
            nxt = 0.5 * (lo + hi)
        else:
            nxt = e - val / slope
            if not lo < nxt < hi:
                nxt = 0.5 * (lo + hi)
        if nxt in (lo, hi) or abs(nxt - e) <= 2.0**-52 * e:
            break
        e = nxt
        val, slope = g(e)
        if val > 0.0:
            lo = e
        else:
            hi = e
    return e


#: above this ``mu`` (a noise multiplier below 1e-150) the 50-digit curve is not
#: evaluated (mpmath's ``erfc`` overflows for arguments near 1e154) and the closed-form
#: bounds of :func:`huge_mu_bracket` answer instead
HUGE_MU = 1e150


def huge_mu_bracket(mu: float, delta: float) -> tuple[float, float]:
    """A certified ``(lower, upper)`` bracket of the epsilon of ``mu``-GDP at ``delta``
    for ``mu > 1e150``, from two closed-form bounds on the exact curve of Balle & Wang
    2018 (Theorem 8), ``delta(eps) = Phi(a) - e^eps Phi(b)`` with ``a = mu/2 - eps/mu``,
    ``b = -mu/2 - eps/mu``.

    Upper end: the subtracted term is nonnegative, so ``delta(eps) <= Phi(a)``, which
    is at most ``delta`` once ``a <= Phi^-1(delta)``: ``eps = mu (mu/2 + z)`` with ``z
    >= -Phi^-1(delta)``.  Lower end: Mills' inequality ``Phi(b) <= phi(b) / |b|`` and
    the identity ``e^eps phi(b) = phi(a)`` give ``delta(eps) >= Phi(a) - phi(a) / |b|
    >= Phi(a) - 0.4 / (mu / 2)``; at ``a = -s`` with ``Phi(-s) = 2 delta + 1e-100``
    this exceeds ``delta`` (``0.8 / mu < 1e-150``), so ``eps = mu (mu/2 + s)`` is at
    most the truth.  Both use ``mu (1 -+ 2^-50)`` (the real ``mu`` a float stands for)
    and round outwards; an upper end beyond the largest float is ``inf``, a lower end
    there is the largest float (the truth exceeds it).  The relative width is about
    ``4 |Phi^-1(delta)| / mu``.

    Examples
    --------
    >>> lo, hi = huge_mu_bracket(1e160, 1e-5)
    >>> lo, hi
    (1.7976931348623157e+308, inf)
    >>> lo, hi = huge_mu_bracket(1e152, 1e-5)
    >>> bool(lo <= 0.5e304 <= hi) and hi / lo < 1 + 1e-12
    True
    """
    mu_up = mu * (1.0 + SIGMA_ROUND_DOWN)
    mu_down = mu * (1.0 - SIGMA_ROUND_DOWN)
    z = float(-special.ndtri(delta))
    z = math.nextafter(z + 1e-9 * (1.0 + abs(z)), math.inf)
    with np.errstate(over="ignore"):
        upper = math.nextafter(math.nextafter(mu_up / 2.0 + z, math.inf) * mu_up, math.inf)
        p = 2.0 * delta + 1e-100
        if p >= 1.0:
            lower = 0.0
        else:
            s = float(-special.ndtri(p))
            s = s - 1e-9 * (1.0 + abs(s))
            lower = math.nextafter(
                math.nextafter(mu_down / 2.0 + s, 0.0) * mu_down * (1.0 - 1e-15), 0.0
            )
    if math.isinf(upper):
        upper = math.inf
    lower = min(max(lower, 0.0), sys.float_info.max)
    return lower, upper


def _huge_mu_delta_up(mu_up: float, epsilon: np.ndarray) -> np.ndarray:
    """``Phi(mu/2 - eps/mu)``, an upper bound on the ``mu``-GDP curve (its subtracted
    term is nonnegative; Balle & Wang 2018, Theorem 8), with the argument rounded up and
    the normal CDF's relative error (below 1e-14) covered by ``1 + 1e-12``."""
    with np.errstate(over="ignore", invalid="ignore"):
        ratio = np.nextafter(np.asarray(epsilon, dtype=float) / mu_up, -np.inf)
        a = np.nextafter(mu_up / 2.0 - ratio, np.inf)
        out = np.minimum(special.ndtr(a) * (1.0 + 1e-12), 1.0)
    return np.where(out > 0.0, out, math.nextafter(0.0, 1.0))


def _narrowed(ok, bad: float, good: float) -> float:
    """Bisect between a point where ``ok`` fails and one where it holds, down to ``2^-40``
    of the latter; returns the last point where it holds."""
    while abs(good - bad) > 2.0**-40 * abs(good):
        mid = 0.5 * (bad + good)
        if ok(mid):
            good = mid
        else:
            bad = mid
    return good


#: relative margin by which a noise multiplier recovered from a Gaussian-DP ``mu`` is
#: lowered: ``mu`` itself and ``1 / mu`` (or a sum of squares and its root) each round
#: by up to half an ulp, eight ulps covers them (a smaller sigma is the safe side)
SIGMA_ROUND_DOWN = 2.0**-50


def sigma_below(mu: float) -> float:
    """A noise multiplier at most ``1 / mu`` for the exact real ``mu`` a float stands
    for: ``(1 / mu) (1 - 2^-50)``.  The Gaussian with this sigma dominates the
    ``mu``-GDP mechanism, so every curve computed from it is an upper bound.

    Examples
    --------
    >>> s = sigma_below(0.5)
    >>> s < 2.0 and 2.0 - s < 1e-14
    True
    """
    return (1.0 / float(mu)) * (1.0 - SIGMA_ROUND_DOWN)


#: the float error model of the Gaussian trade-off (:func:`_gaussian_cdf_bounds`), in
#: units of ``u = 2^-53``: scipy's ``ndtri`` within this many u relative (measured
#: against mpmath: at most 6.7 u, near a = 0.136, from 1e-320 to 1) ...
_NDTRI_U = 32.0
#: ... and ``ndtr(z)`` within ``(_NDTR_U0 + _NDTR_U2 z^2)`` u relative (measured: at most
#: 12 u near z = -1.41 and 3.5 (1 + z^2) u on [-37.7, 8]: its ``exp(-z^2 / 2)`` reads a
#: rounded argument), plus two subnormal ulps absolute; below about -37.68 it returns 0
#: (the true value is up to 5e-311): safe for the trade-off, not for a TPR bound
#: (:func:`gaussian_tpr_up` bounds the tail by Mills' ratio's series there)
_NDTR_U0 = 32.0
_NDTR_U2 = 12.0
_U = 2.0**-53
#: below this ``z``, :func:`gaussian_tpr_up` bounds ``Phi(z)`` by ``phi(z) / |z|``
_TAIL_Z = -37.0


def _gaussian_cdf_bounds(
    x: np.ndarray, mu_hi: float, sign: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(z, E, ndtr(z), rel)`` at ``z = -x - mu_hi`` (``sign = -1``) or ``x + mu_hi``
    (``sign = +1``), for ``x = ndtri(a)`` as computed: ``E`` bounds ``|z - z_exact|`` and
    ``rel`` the relative distance of the float ``ndtr(z)`` from the true ``Phi`` at the
    exact ``z`` (where ``ndtr`` is normal).

    ``x`` errs by at most ``_NDTRI_U u |x|``, the sum by ``u |z|``: ``E``.  ``log Phi``
    has slope ``phi / Phi <= max(-z, 0) + 1`` (Birnbaum's bound on Mills' ratio), so
    ``Phi`` moves by a factor within ``exp(E (|z| + E + 1))``; ``ndtr``'s own error adds
    ``(_NDTR_U0 + _NDTR_U2 z^2) u``.
    """
    z = sign * x + (mu_hi if sign > 0 else -mu_hi)
    with np.errstate(invalid="ignore", over="ignore"):
        e = _U * (_NDTRI_U * np.abs(x) + np.abs(z)) * (1.0 + 1e-9)
        rel = np.expm1(e * (np.abs(z) + e + 1.0)) + _U * (_NDTR_U0 + _NDTR_U2 * z * z)
    # (not finite only where z or E overflows: then nothing is known, rel 1)
    rel = np.where(np.isfinite(rel), rel, 1.0) * (1.0 + 1e-6)
    return z, e, special.ndtr(z), rel


def gaussian_tradeoff(mu: float, fpr: np.ndarray) -> np.ndarray:
    """Trade-off curve of ``mu``-GDP, ``Phi(Phi^-1(1 - a) - mu)`` (Dong, Roth, Su 2019,
    Definition 2.7), evaluated as ``Phi(-Phi^-1(a) - mu)`` and rounded down: never above
    the true curve.

    The two forms are equal (``Phi^-1(1 - a) = -Phi^-1(a)``), but ``1 - a`` rounds to 1
    for ``a`` below ``2^-54`` and loses the relative precision of every smaller ``a``:
    ``Phi(Phi^-1(1 - 1e-17) - 10)`` evaluated as written gave 1.0 against the true
    0.0660, far above the curve (the unsafe side).  ``mu`` is taken as within half an
    ulp of the true one (``1 / sigma`` rounded) and read one ulp up (a larger ``mu``
    gives a lower curve); the value is then lowered by the float error of ``ndtri``,
    the sum and ``ndtr`` (:func:`_gaussian_cdf_bounds`: about ``(32 + 45 z^2) u``
    relative, ``z = -Phi^-1(a) - mu``; ``3e-12`` at ``|z| = 25``).  ``beta(0) = 1`` and
    ``beta(1) = 0`` exactly.

    Examples
    --------
    >>> round(float(gaussian_tradeoff(1.0, np.array([0.05]))[0]), 6)  # Phi(1.644854 - 1)
    0.740489
    >>> round(float(gaussian_tradeoff(10.0, np.array([1e-17]))[0]), 4)  # not 1.0
    0.066
    """
    a = np.asarray(fpr, dtype=float)
    with np.errstate(divide="ignore"):
        x = special.ndtri(a)
    _, _, value, rel = _gaussian_cdf_bounds(x, math.nextafter(float(mu), math.inf), -1.0)
    out = np.maximum(value * (1.0 - rel) - _SUBNORMAL_SLACK, 0.0) * (1.0 - 4.0 * _U)
    return np.where(a == 0.0, 1.0, np.where(a == 1.0, 0.0, out))


def gaussian_tpr_up(mu: float, fpr: np.ndarray) -> np.ndarray:
    """``1 - beta(a)`` of ``mu``-GDP, the most powerful test's true-positive rate
    ``Phi(Phi^-1(a) + mu)`` (Dong, Roth, Su 2019, Definition 2.7), rounded up.

    Computed directly rather than as ``1 - gaussian_tradeoff``: at ``a = 1e-12`` the TPR
    is about ``4e-12`` and ``beta`` within ``1e-11`` of 1, so a rounding of ``beta`` by a
    few ulps moves ``1 - beta`` by ``1e-4`` of itself; here it is ``(32 + 45 z^2) u``
    relative (``z = Phi^-1(a) + mu``), the error model of :func:`gaussian_tradeoff`.
    Where ``z + E < -37`` (scipy's ``ndtr`` is subnormal below -37.5 and 0 below -37.68)
    the bound is Mills' ratio's asymptotic series cut after an even term: with
    ``t = -(z + E)``, ``Phi(-t) = phi(t) R(t)`` and ``t R(t) = 1 - 1/t^2 + 3/t^4 -
    15/t^6 + 105/t^8 - ...``, whose remainder has the sign of the first omitted term
    (``R(t)`` integrates ``e^{-tx} e^{-x^2/2}``, and ``e^{-y}``'s Taylor remainder has
    the sign of its first omitted term; Abramowitz & Stegun 26.2.12), so the sum to
    ``105/t^8`` is an upper bound, within ``945/t^10`` (``2e-13``) of the truth there.

    Examples
    --------
    >>> tpr = gaussian_tpr_up(0.5, np.array([1e-12, 0.05]))
    >>> bool(tpr[0] > 0 and abs(tpr[1] - (1 - gaussian_tradeoff(0.5, np.array([0.05]))[0])) < 1e-12)
    True
    >>> bool(gaussian_tpr_up(1e-3, np.array([1e-315]))[0] > 1e-315)   # not flushed to 0
    True
    """
    a = np.asarray(fpr, dtype=float)
    with np.errstate(divide="ignore"):
        x = special.ndtri(a)
    z, e, value, rel = _gaussian_cdf_bounds(x, math.nextafter(float(mu), math.inf), 1.0)
    out = np.minimum((value * (1.0 + rel) + _SUBNORMAL_SLACK) * (1.0 + 4.0 * _U), 1.0)
    with np.errstate(invalid="ignore"):  # a = 0: z = -inf, E = inf (answered below)
        z_up = z + e * (1.0 + 1e-9)
    tail = z_up < _TAIL_Z
    if np.any(tail):
        t = -z_up[tail]
        # log(phi(t) / t) = -t^2/2 - log t - log(2 pi)/2: its float error is at most
        # u (t^2 + 8 |log t| + 4 |arg| + 4) (t^2 within u, numpy's log 4 ulps, three
        # sums); exp 4 ulps; the series (terms below 1e-3, each within a few u) 8u
        arg = -0.5 * t * t - np.log(t) - 0.9189385332046728
        err = _U * (t * t + 8.0 * np.abs(np.log(t)) + 4.0 * np.abs(arg) + 4.0)
        w = 1.0 / (t * t)
        series = 1.0 - w * (1.0 - w * (3.0 - w * (15.0 - 105.0 * w)))
        mills = np.exp(arg) * np.exp(err) * series * (1.0 + 32.0 * _U) + _SUBNORMAL_SLACK
        out[tail] = np.minimum(mills, 1.0)
    return np.where(a == 0.0, 0.0, np.where(a == 1.0, 1.0, out))
