"""Exact curves rounded down: the certified lower ends of ``epsilon_bounds``.

An exact curve ``delta(eps)`` is evaluated in floats, so the value a mechanism's
``_delta_exact`` returns can sit a few ulps above or below the true curve, and its
parameters (an ``epsilon0 = log(p / q)`` computed from ``p``, a ``1 / scale``) carry
rounding of their own.  The router's bisection
(:func:`~dpacct.accountant.numerics.invert_decreasing`) gives an upper end with
``delta_fn(hi) <= delta``; its lower end only has ``delta_fn(lo) > delta`` on the float
curve, which is not a proof that the *true* curve is above ``delta`` there (session 35's
survey, ``benchmarks/lowends_survey.py``: k-ary randomized response with ``p`` near
``1 / k`` had 316 of 2 000 lower ends above the 60-digit truth, by up to the whole
width of the bracket).

A mechanism that can bound its curve from below defines ``_delta_exact_down(eps)``: a
float curve that is *never above* the true ``delta(eps)``, with the float error of each
step proved (the constants below).  The router then takes as lower end the largest float
where that curve is still above ``delta`` (:func:`lower_end`): there the true curve is
above ``delta`` too, so the true epsilon is larger.  A declared curve
(``Mechanism.from_delta_curve``) states its own as ``delta_down=``; without one it is
taken as exact, as before.

Error model: IEEE double arithmetic rounds each ``+ - * /`` to nearest (relative error
at most ``u = 2^-53``); Python's scalar ``math.exp`` / ``expm1`` / ``log1p`` (glibc) are
within one ulp (``2^-52`` relative; glibc's documented bound on x86-64), numpy's
vectorised ones within four ulps (``2^-50``: on AVX-512 CPUs numpy dispatches them to SIMD
code documented to 4 ULP) -- relied on, not proved here, and checked against mpmath in
``tests/test_curve_down.py``.  :data:`DOWN_FACTOR`'s ``2^-49`` (16u) covers one
vectorised call (8u) and up to three roundings.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .numerics import EXP_MAX, float_bisect, float_crossing

__all__ = [
    "DOWN_FACTOR",
    "exp_down",
    "float_above",
    "float_below",
    "gap_up",
    "kov_constants",
    "kov_tradeoff_down",
    "line_down",
    "lower_end",
    "rr_delta_down",
    "scaled_down",
]

#: one minus a relative allowance of ``2^-49`` (8 ulps at 1): more than the few roundings
#: (one libm call of one ulp, two or three ``+ *`` of half an ulp each) between a curve's
#: exact value and the float a ``*_down`` function returns, so that multiplying by it
#: (itself rounded by half an ulp) leaves the float below the true value
DOWN_FACTOR = 1.0 - 2.0**-49


def float_below(x) -> float:
    """A float ``<= x`` for a positive 50-digit ``x``: ``x`` rounded, one ulp down.

    Rounding to nearest is within half an ulp; one step down is a whole ulp, far more
    than the ``1e-50`` relative error of a 50-digit ``x``.

    Examples
    --------
    >>> import mpmath
    >>> with mpmath.workdps(50):
    ...     third = mpmath.mpf(1) / 3
    ...     bool(mpmath.mpf(float_below(third)) < third)
    True
    """
    return math.nextafter(float(x), -math.inf)


def float_above(x) -> float:
    """A float ``>= x`` for a 50-digit (or float) ``x``: ``x`` rounded, one ulp up; the
    mirror of :func:`float_below`.

    Examples
    --------
    >>> float_above(1.0) == math.nextafter(1.0, 2.0)
    True
    """
    return math.nextafter(float(x), math.inf)


def gap_up(epsilon: np.ndarray, eps0_lo: float) -> np.ndarray:
    """``min(eps - eps0, 0)`` rounded up, for an ``eps0`` bounded below by ``eps0_lo``.

    The float subtraction rounds to nearest; one ulp towards ``+inf`` makes it at least
    the exact ``eps - eps0_lo``, which is at least ``eps - eps0``: a curve decreasing in
    the gap (``-expm1(gap)``) is then read no higher than at the true gap.

    Examples
    --------
    >>> gap_up(np.array([0.1, 2.0]), 1.0).tolist() == [math.nextafter(-0.9, 0.0), 0.0]
    True
    """
    g = np.asarray(epsilon, dtype=float) - eps0_lo
    return np.minimum(np.nextafter(g, np.inf), 0.0)


def rr_delta_down(p_lo: float, eps0_lo: float, epsilon, d0: float = 0.0) -> np.ndarray:
    """``d0 + p (1 - e^{eps - eps0})_+`` rounded down, from ``p_lo <= p``, ``eps0_lo <= eps0``.

    The hockey-stick curve of binary / k-ary randomized response and of every pure (or
    ``(eps0, d0)``) guarantee's Kairouz-Oh-Viswanath pair (Kairouz, Oh, Viswanath 2015,
    Theorem 2.1): ``p`` is the P-mass of the top atom, ``eps0`` its loss.  The curve
    increases in ``p``, ``eps0`` and ``d0``, so lower parameters give a lower curve;
    the gap is rounded up (:func:`gap_up`), ``expm1`` errs by four ulps (numpy's), the
    product and the sum by half an ulp each, and :data:`DOWN_FACTOR` takes all of it off.

    Examples
    --------
    >>> p = float(1 / (1 + math.exp(-1.0)))
    >>> down = rr_delta_down(math.nextafter(p, 0), math.nextafter(1.0, 0), np.array([0.5]))
    >>> bool(down[0] < p * -math.expm1(-0.5))
    True
    """
    term = p_lo * -np.expm1(gap_up(epsilon, eps0_lo))
    return np.minimum((d0 + term) * DOWN_FACTOR, 1.0)


def kov_constants(eps0, d0: float = 0.0, cache: dict | None = None) -> tuple[float, float]:
    """``(p_lo, eps0_lo)`` of the ``(eps0, d0)`` pair of Kairouz, Oh, Viswanath (2015,
    Theorem 2.1), rounded down from 50 digits: ``p = (1 - d0) e^eps0 / (1 + e^eps0)``,
    the P-mass of its top atom, and ``eps0`` itself (a float, or an ``mpmath`` value
    for a parameter that no float holds, e.g. ``1 / scale``).  ``cache`` (an instance
    cache) keeps them, so the 50-digit work is done once per mechanism.

    Examples
    --------
    >>> p_lo, e_lo = kov_constants(1.0)
    >>> bool(p_lo < 1 / (1 + math.exp(-1.0)) and e_lo < 1.0)
    True
    """
    key = ("kov_down", d0)
    if cache is not None and key in cache:
        return cache[key]
    import mpmath  # lazily: the everyday Gaussian queries import no mpmath

    with mpmath.workdps(50):
        e = mpmath.mpf(eps0)
        p = (1 - mpmath.mpf(d0)) / (1 + mpmath.exp(-e))
        out = (float_below(p), float_below(e))
    if cache is not None:
        cache[key] = out
    return out


def lower_end(
    down: Callable[[np.ndarray], np.ndarray], delta: float, start: float, ceiling: float
) -> float:
    """The largest float ``lo`` in ``[0, ceiling)`` with ``down(lo) > delta``, else 0.

    ``down`` is a curve never above the true one, so the true ``delta(lo) > delta`` and
    the true epsilon at ``delta`` is above ``lo``: a certified lower end.  ``ceiling`` is
    the bracket's upper end (where the upper curve, hence ``down``, is at most
    ``delta``) and ``start`` a guess (the bisection's lower end): from a certified guess
    a float bisection up to ``ceiling`` (about ten evaluations across the bisection's
    ``1e-13``), from an uncertified one a galloping search down
    (:func:`~dpacct.accountant.numerics.float_crossing`).

    Examples
    --------
    >>> lo = lower_end(lambda e: np.exp(-e) * DOWN_FACTOR, 1e-3, 6.9, 7.0)
    >>> bool(lo < math.log(1e3) < math.nextafter(lo, 8.0) + 1e-14)
    True
    """

    def below(x: float) -> bool:  # down(x) <= delta: x is not a certified lower end
        return float(down(np.array([x]))[0]) <= delta

    start = min(start, ceiling)
    if not math.isfinite(ceiling):  # no upper end (a curve above delta up to 2^1000)
        if not below(start):
            return start
        ceiling = start
    if below(0.0):
        return 0.0
    if below(start):  # the guess is not certified: gallop down from it
        return float_crossing(lambda x: x >= ceiling or below(x), start, ceiling)[0]
    # down(start) > delta, and the ceiling is never certified: bisect between them
    return float_bisect(below, start, ceiling)[0]


# ----------------------------------------------------------------- trade-off curves
# ``Mechanism.tradeoff`` promises a curve never above the true one.  The closed forms
# are maxima of a few pieces, each decreasing in the mechanism's privacy parameter
# (a larger ``epsilon0``, ``1 / b`` or ``mu`` gives a lower curve): each piece is
# evaluated at a parameter rounded *up* and rounded down by its own float error, and
# a maximum of lower bounds of the pieces is a lower bound of the maximum.  Error
# model: ``u = 2^-53`` per ``+ - * /``; libm's scalar ``math.exp`` within one ulp (2u);
# numpy's vectorised ``exp`` / ``log`` / ``log1p`` within four ulps (:data:`_VEC`:
# on AVX-512 CPUs numpy dispatches them to SIMD code documented to 4 ULP); below
# ``2^-1022`` an ``exp`` within one subnormal ulp (``2^-1074``) absolute, so a product
# that may be subnormal is computed in log space or has two subnormal ulps taken off.

_U = 2.0**-53
#: relative error allowed to numpy's vectorised exp / log / log1p (4 ulps)
_VEC = 8.0 * _U
#: below this an ``exp`` is evaluated in log space (its result may be subnormal)
_LOG_SPACE_BELOW = 1e-290
#: two subnormal ulps, taken off a value that may be subnormal
_SUBNORMAL_SLACK = 1e-323


def exp_down(arg: np.ndarray, err: np.ndarray) -> np.ndarray:
    """``e^x`` rounded down for every ``x >= arg - err`` (``arg`` the float argument,
    ``err >= 0`` a bound on its distance from the exact one).

    ``exp(arg)`` (4 ulps, or one subnormal ulp absolute), ``e^-err`` (4 ulps) and their
    product (u) are inside ``1 - 20u``; two subnormal ulps come off last.

    Examples
    --------
    >>> v = exp_down(np.array([-1.0, -745.0]), np.array([1e-15, 1e-12]))
    >>> bool(v[0] < math.exp(-1.0) < v[0] * (1 + 1e-14) and v[1] == 0.0)
    True
    """
    with np.errstate(invalid="ignore", under="ignore", over="ignore"):
        v = np.exp(arg) * (np.exp(-np.asarray(err, dtype=float)) * (1.0 - 20.0 * _U))
    return np.maximum(np.where(np.isnan(v), 0.0, v) - _SUBNORMAL_SLACK, 0.0)


def line_down(c_lo: float, s_hi: float, fpr: np.ndarray) -> np.ndarray:
    """``max(c - e^s a, 0)`` rounded down, from ``c_lo <= c`` and ``s_hi >= s``.

    The supporting line of slope ``-e^s`` through ``(0, c)`` of a trade-off curve (for
    the ``(eps0, d0)`` curve ``c = 1 - d0``, ``s = eps0``; Dong, Roth, Su 2019, Eq. 5).
    ``e^s a`` is the product of ``math.exp(s)`` (2u) and ``a`` (u), or beyond
    ``s = 709``, where ``e^s`` overflows, ``exp(s + log a)``, whose argument errs by at
    most ``8u |log a| + u |s + log a|``; it is raised by its error bound (and a
    subnormal ulp) before it is subtracted, and the difference is taken down by
    :data:`DOWN_FACTOR`.  At ``a = 0`` the value is ``c_lo`` itself (nothing was
    rounded).  Near the line's zero the value is the difference of two numbers near
    ``c``: its absolute error is a few u, so a value of ``1e-13`` there (the crossing
    with the other line at ``epsilon0 = 30``) is known to about ``1e-3`` of itself.

    Examples
    --------
    >>> a = np.array([0.0, 0.1, 0.5])
    >>> v = line_down(1.0, 1.0, a)
    >>> bool(v[0] == 1.0 and 0 < v[1] < 1 - math.e * 0.1 and v[2] == 0.0)
    True
    """
    a = np.asarray(fpr, dtype=float)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        if s_hi < EXP_MAX:  # e^s finite
            x_hi = (math.exp(s_hi) * a) * (1.0 + 8.0 * _U) + _SUBNORMAL_SLACK
        else:
            log_a = np.log(a)
            y = s_hi + log_a
            err = 8.0 * _U * np.abs(log_a) + _U * np.abs(y)
            # (1 + 16u) covers exp's 8u and the products' roundings; expm1 keeps E exact
            x_hi = np.exp(y) * (1.0 + (np.expm1(1.01 * err) + 16.0 * _U)) + _SUBNORMAL_SLACK
        out = np.maximum((c_lo - x_hi) * DOWN_FACTOR, 0.0)
    out = np.where(a == 0.0, c_lo, out)
    return np.where(np.isnan(out), 0.0, out)


def _one_minus_down(fpr: np.ndarray, d0: float) -> np.ndarray:
    """``1 - d0 - a`` rounded down: as ``(1 - a) - d0`` (``1 - a`` exact for ``a >=
    1/2``, Sterbenz; else within u), or for ``d0 >= 1/2`` as ``(1 - d0) - a`` (``1 - d0``
    exact), so that near the zero the value keeps its precision; the last subtraction
    within u of its result."""
    if d0 >= 0.5:
        w = (1.0 - d0) - fpr
        err = _U * np.abs(w)
    else:
        w = (1.0 - fpr) - d0
        err = np.where(fpr >= 0.5, 0.0, _U * (1.0 - fpr)) + _U * np.abs(w)
    return np.maximum((w - 1.01 * err) * (1.0 - 2.0 * _U), 0.0)


def scaled_down(s_hi: float, fpr: np.ndarray, d0: float = 0.0) -> np.ndarray:
    """``max(e^-s (1 - d0 - a), 0)`` rounded down, from ``s_hi >= s`` (``d0`` exact).

    The other supporting line of the ``(eps0, d0)`` curve (``s = eps0``): ``1 - d0 - a``
    rounded down (:func:`_one_minus_down`), then ``math.exp`` (2u) and the product (u)
    inside :data:`DOWN_FACTOR`'s ``2^-49``, and two subnormal ulps (the product may be
    subnormal); where ``e^-s`` is itself below ``1e-290`` the product is
    ``exp(-s + log w)`` (:func:`exp_down`, the argument within ``8u |log w| +
    u |-s + log w|``).

    Examples
    --------
    >>> v = scaled_down(1.0, np.array([0.5, 1.0]))
    >>> bool(0 < v[0] < math.exp(-1.0) * 0.5 and v[1] == 0.0)
    True
    >>> bool(scaled_down(744.0, np.array([1e-300]))[0] < 5e-324)   # e^-744 is 8e-324
    True
    """
    a = np.asarray(fpr, dtype=float)
    w = _one_minus_down(a, d0)
    scale = math.exp(-s_hi)
    if scale >= _LOG_SPACE_BELOW:
        return np.maximum(scale * w * DOWN_FACTOR - _SUBNORMAL_SLACK, 0.0)
    with np.errstate(divide="ignore"):
        log_w = np.log(w)
    arg = -s_hi + log_w
    return exp_down(arg, 8.0 * _U * np.abs(log_w) + _U * np.abs(arg))


def kov_tradeoff_down(eps0_hi: float, fpr: np.ndarray, d0: float = 0.0) -> np.ndarray:
    """The ``(eps0, d0)`` trade-off curve ``max(0, 1 - d0 - e^eps0 a, e^-eps0 (1 - d0 - a))``
    (Dong, Roth, Su 2019, Equation 5; Kairouz, Oh, Viswanath 2015) rounded down, from
    ``eps0_hi >= eps0`` (``d0`` a float taken as exact).

    Examples
    --------
    >>> v = kov_tradeoff_down(1.0, np.array([0.0, 0.2, 1.0]))
    >>> bool(v[0] == 1.0 and v[1] < max(1 - math.e * 0.2, math.exp(-1) * 0.8) and v[2] == 0)
    True
    """
    c_lo = 1.0 if d0 == 0.0 else math.nextafter(1.0 - d0, -math.inf)
    return np.maximum(line_down(c_lo, eps0_hi, fpr), scaled_down(eps0_hi, fpr, d0))
