"""Scalar normal-tail functions on the C library's ``erfc``: ``erfcx``, ``log Phi`` and
``Phi^-1``, for the certified Gaussian curve without ``scipy.special``.

Importing ``scipy.special`` costs about 0.2-0.3 s of CPU (SciPy 1.17's array-API layer
clones the numpy namespace, importing ``numpy.f2py``, ``numpy.testing`` and
``numpy.random``), half of ``import dpacct`` plus one Gaussian epsilon (issue 37).  The
certified bounds of :mod:`~dpacct.accountant.families.gaussian_certified` and the float
root of :func:`~dpacct.accountant.families.gaussian_dp.certified_gaussian_epsilon`
evaluate ``erfcx`` and ``log Phi`` at a few dozen scalars, so they use these instead;
every array route keeps SciPy's ufuncs (imported where they run).

The certified bounds rest on the relative error of :func:`erfcx` and :func:`log_ndtr`,
which nothing documents: as for SciPy's functions before, it is **measured against
mpmath, inflated, and re-measured by the tests** (tests/test_normal_tails.py, on a fresh
grid, requires at most a third of the allowance for ``erfcx`` and half for ``log Phi``).
Measured on x86-64, glibc 2.36, against mpmath at 40 digits (``python -m
benchmarks.normal_tails_errors``: 10^5 points each, geometric and uniform, dense near
the branch points; SciPy 1.17's functions on the same points in brackets):

* :func:`erfcx` on ``[0, 1e5]``: at most ``5.3 u`` relative (``u = 2^-53``; SciPy
  ``7.9 u``), within the ``32 u`` that
  :data:`~dpacct.accountant.families.gaussian_certified.ERFCX_REL` allows (6x).
* :func:`log_ndtr` on ``[-1e4, 37]``: at most ``3.5 u`` relative for ``t <= 1`` (SciPy
  ``4.9 u``) and ``1.7 t^2 u`` above ``t = 4`` (SciPy ``2.0 t^2 u``: the rounding of
  ``t / sqrt 2`` moves ``erfc`` by ``t^2`` times itself where ``log Phi(t) ~
  -Phi(-t)``); at most 0.40 of the ``(16 + 4 t^2) u`` that
  :func:`~dpacct.accountant.families.gaussian_certified._log_ndtr_rel` allows anywhere
  (SciPy 0.50).

The errors come from the C library's ``erfc``, ``exp``, ``log`` and ``log1p`` (glibc's
are fdlibm's, within a few ulps), each step's rounding, and the rounding of the
arguments; on another C library the tests measure that library's.
"""

from __future__ import annotations

import math

__all__ = ["erfcx", "log_ndtr", "ndtri"]

_SQRT1_2 = 0.7071067811865476
_INV_SQRT_PI = 0.5641895835477563
#: ``log(sqrt(2 pi))``
_LOG_SQRT_2PI = 0.9189385332046728
#: Dekker's splitter for doubles, ``2^27 + 1``
_SPLIT = 134217729.0
#: below this ``erfcx(x) = exp(x^2) erfc(x)``: ``erfc(26) ~ 5.7e-296`` is still a normal
#: float and ``exp(676)`` finite; above, the asymptotic series
_SERIES_X = 26.0


def _exp_square(x: float) -> float:
    """``exp(x^2)`` for ``|x| < 26.6``, without the ``x^2 u`` relative error of the rounded
    square: ``x^2 = hi + lo`` exactly (Dekker's product, ``|lo| <= ulp(hi) / 2``), then
    ``exp(hi) (1 + lo)`` (``e^lo - 1 - lo <= lo^2``, below ``2^-100``)."""
    hi = x * x
    c = _SPLIT * x
    xh = c - (c - x)
    xl = x - xh
    lo = ((xh * xh - hi) + 2.0 * xh * xl) + xl * xl
    return math.exp(hi) * (1.0 + lo)


def erfcx(x: float) -> float:
    """The scaled complementary error function ``exp(x^2) erfc(x)`` at a float ``x``
    (measured within ``5.3 u`` relative on ``[0, 1e5]``: the module docstring).

    For ``x < 26``: ``exp(x^2) erfc(x)``, the square split exactly (:func:`_exp_square`),
    so the error is ``erfc``'s and ``exp``'s plus two roundings.  Above, the asymptotic
    series ``erfcx(x) = (1 / (x sqrt pi)) sum_k (-1)^k (2k - 1)!! / (2 x^2)^k`` (Abramowitz
    & Stegun 7.1.23), to ``k = 7``: its remainder has the sign and at most the size of
    the first omitted term, ``15!! / (2 x^2)^8 < 2e-19`` at ``x = 26``.  Negative ``x``
    (not used by the library) take the first form, ``inf`` below about -26.6.

    Parameters
    ----------
    x : float

    Returns
    -------
    float

    Examples
    --------
    >>> round(erfcx(1.0), 12)   # e * erfc(1)
    0.427583576156
    >>> erfcx(0.0), erfcx(math.inf)
    (1.0, 0.0)
    """
    if x < _SERIES_X:
        if x < -26.6:
            return math.inf
        return _exp_square(x) * math.erfc(x)
    w = 0.5 / (x * x)
    s = 1.0 - w * (1.0 - 3.0 * w * (1.0 - 5.0 * w * (1.0 - 7.0 * w * (
        1.0 - 9.0 * w * (1.0 - 11.0 * w * (1.0 - 13.0 * w))))))
    return _INV_SQRT_PI / x * s


def log_ndtr(t: float) -> float:
    """``log Phi(t)``, the log of the standard normal CDF, at a float ``t`` (measured
    within ``3.5 u`` relative for ``t <= 1`` and ``1.7 t^2 u`` above 4: the module
    docstring).

    ``log1p(-erfc(t / sqrt 2) / 2)`` for ``t > 0`` (``Phi(t) = 1 - Phi(-t)``, no
    cancellation: ``Phi(-t) <= 1/2``); ``log(erfc(-t / sqrt 2) / 2)`` for ``-1 < t <=
    0``; below, ``log(erfcx(s) / 2) - s^2`` with ``s = -t / sqrt 2`` (``erfc = e^(-s^2)
    erfcx``), which stays finite and accurate where ``Phi(t)`` underflows.  ``-inf`` at
    ``-inf``.

    Parameters
    ----------
    t : float

    Returns
    -------
    float

    Examples
    --------
    >>> round(log_ndtr(0.0), 15) == round(math.log(0.5), 15)
    True
    >>> round(log_ndtr(-40.0), 6)   # Phi(-40) ~ 3.7e-350, below the least float
    -804.608442
    """
    if t > 0.0:
        return math.log1p(-0.5 * math.erfc(t * _SQRT1_2))
    if t > -1.0:
        return math.log(0.5 * math.erfc(-t * _SQRT1_2))
    if t == -math.inf:
        return -math.inf
    e = erfcx(-t * _SQRT1_2)
    if not e > 0.0:  # (NaN; 0 only beyond -1e308, where 0.5 t^2 is inf anyway)
        return -math.inf if e == 0.0 else e
    return math.log(0.5 * e) - 0.5 * t * t


def ndtri(p: float) -> float:
    """``Phi^-1(p)``, the standard normal quantile, at a float ``p`` in ``[0, 1]``: a
    starting point for root finding, **not** a certified value (relative error about
    ``1e-15``; no bound rests on it).

    Abramowitz & Stegun 26.2.23 (error below ``4.5e-4``) refined by Newton steps on
    ``log Phi(x) = log p`` (:func:`log_ndtr`, slope ``phi / Phi``) until a step is
    below ``2^-50`` of ``x``; ``p > 1/2`` by symmetry (``1 - p`` is exact there).

    Parameters
    ----------
    p : float

    Returns
    -------
    float

    Examples
    --------
    >>> round(ndtri(0.975), 9), ndtri(0.5)
    (1.959963985, 0.0)
    >>> round(ndtri(1e-300), 9)
    -37.047096299
    """
    if not 0.0 < p < 1.0:
        if p == 0.0:
            return -math.inf
        if p == 1.0:
            return math.inf
        return math.nan
    if p > 0.5:
        return -ndtri(1.0 - p)
    if p == 0.5:
        return 0.0
    log_p = math.log(p)
    t = math.sqrt(-2.0 * log_p)
    x = -(t - (2.515517 + t * (0.802853 + t * 0.010328))
          / (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))))
    for _ in range(8):
        lp = log_ndtr(x)
        # (log Phi)' = phi / Phi = exp(-x^2/2 - log sqrt(2 pi) - log Phi)
        slope = math.exp(-0.5 * x * x - _LOG_SQRT_2PI - lp)
        step = (lp - log_p) / slope
        x -= step
        if abs(step) <= 2.0**-50 * abs(x):
            break
    return x
