"""Numerical helpers and named floating-point limits shared by every layer.

The mechanisms, the calibrators and the command line import these from here
(``dpacct.accountant.numerics``) rather than keeping private copies.  Nothing here
imports SciPy: :func:`brentq` is Brent's method in pure Python (importing
``scipy.optimize`` cost 0.15 s of a cold calibration), which keeps ``import dpacct``,
``dpacct --help`` and the first calibration fast.

Examples
--------
>>> import math
>>> math.isfinite(math.exp(EXP_OVERFLOW))
True
>>> brentq(lambda x: x * x - 2.0, 0.0, 2.0, xtol=1e-15)
1.414213562373095
"""

from __future__ import annotations

import importlib
import math
import os
import time
from collections.abc import Callable

import numpy as np

__all__ = [
    "EXP_MAX",
    "EXP_OVERFLOW",
    "SUBNORMAL_FLOOR",
    "TINY",
    "LazyBar",
    "LazyModule",
    "brentq",
    "float_bisect",
    "float_crossing",
    "invert_decreasing",
    "logsumexp",
    "next_up",
    "nonzero_at",
    "roll_left",
    "scipy_special",
]

#: Largest argument passed to ``exp`` where a value may be large: ``exp(x)`` is finite
#: for ``x < 709.78`` (``log`` of the largest double); 700 leaves a margin of about
#: ``e^9 = 8100`` so that a product or a sum with the result stays finite too.  Used
#: as ``exp(min(x, EXP_OVERFLOW))`` and, negated, as the matching lower clip.
EXP_OVERFLOW = 700.0

#: Cap for an ``exp`` whose result is used alone (no product or sum follows that could
#: overflow): ``exp(709.0)`` is about ``8.2e307``, just inside the double range.
EXP_MAX = 709.0

#: A positive floor far below any probability the library reports (the smallest normal
#: double is ``2.2e-308``): ``log(max(p, TINY))`` and ``x / max(y, TINY)`` stay finite,
#: and an upper bound moved up by ``TINY`` stays sound.
TINY = 1e-300

#: A floor inside the subnormal range, for ``log(max(mass, SUBNORMAL_FLOOR))`` where a
#: mass may itself be subnormal (down to ``4.9e-324``) and must keep its magnitude:
#: ``log(1e-320)`` is about ``-737``, so ``exp(x + log(mass))`` stays a finite double.
SUBNORMAL_FLOOR = 1e-320


# long function: 42 lines are the docstring (the contract and scipy's tolerance rule it
# keeps); the body is Brent's method in one loop
def brentq(
    f: Callable[[float], float],
    a: float,
    b: float,
    *,
    xtol: float = 2e-12,
    rtol: float = 8.881784197001252e-16,
    maxiter: int = 100,
) -> float:
    """A root of ``f`` in ``[a, b]`` by Brent's method, in pure Python.

    Brent (1973), *Algorithms for Minimization without Derivatives*, Chapter 4
    (procedure *zero*): inverse quadratic interpolation or the secant step when it
    stays inside the bracket and shrinks it fast enough, bisection otherwise, so the
    bracket ``[b, c]`` (``f(b)``, ``f(c)`` of opposite signs) always holds a root and
    the iteration ends within about ``log2((b - a) / tol)^2`` evaluations.  It returns
    ``b`` once the bracket's half-width is below ``tol = (xtol + rtol |b|) / 2``, so a
    root lies within ``xtol + rtol |b|`` of the answer -- the contract of
    :func:`scipy.optimize.brentq` (same keywords and defaults), whose import (0.15 s
    of a cold noise-multiplier calibration, issue 37) is avoided.  Give the
    tolerances explicitly: results must not depend on defaults.

    Parameters
    ----------
    f : callable
        Continuous function of one float with ``f(a)`` and ``f(b)`` of opposite signs
        (or one of them zero).
    a, b : float
        The bracket.
    xtol, rtol : float
        Absolute and relative tolerance of the root (``xtol > 0``, ``rtol >= 4 u``,
        ``u = 2^-53``: a smaller relative step could leave ``b`` unchanged).
    maxiter : int
        Most iterations; beyond, :class:`RuntimeError`.

    Returns
    -------
    float
        The root found.

    Raises
    ------
    ValueError
        If ``f(a)`` and ``f(b)`` have the same sign (or ``f`` returns nan), or a tolerance
        is out of range.

    Examples
    --------
    >>> round(brentq(lambda x: math.exp(x) - 3.0, 0.0, 2.0, xtol=1e-14, rtol=1e-14), 12)
    1.098612288668
    """
    if not xtol > 0 or not rtol >= 4 * 2.0**-52:
        raise ValueError(
            f"xtol must be > 0 and rtol >= 4 * 2**-52 (a step can move b), got "
            f"xtol={xtol!r}, rtol={rtol!r}"
        )
    fa, fb = float(f(a)), float(f(b))
    if fa == 0.0:
        return a
    if fb == 0.0:
        return b
    if math.isnan(fa) or math.isnan(fb) or (fa > 0) == (fb > 0):
        raise ValueError(f"f(a) and f(b) must have different signs, got {fa!r} and {fb!r}")
    c, fc = a, fa  # b and c bracket the root; a is the previous iterate
    d = e = b - a
    for _ in range(maxiter):
        if (fb > 0) == (fc > 0):
            c, fc = a, fa
            d = e = b - a
        if abs(fc) < abs(fb):  # b is the best estimate so far
            a, fa = b, fb
            b, fb = c, fc
            c, fc = a, fa
        tol = 0.5 * (xtol + rtol * abs(b))
        m = 0.5 * (c - b)
        if fb == 0.0 or abs(m) <= tol:
            return b
        if abs(e) >= tol and abs(fa) > abs(fb):
            s = fb / fa
            if a == c:  # secant
                p, q = 2.0 * m * s, 1.0 - s
            else:  # inverse quadratic interpolation through a, b, c
                q, r = fa / fc, fb / fc
                p = s * (2.0 * m * q * (q - r) - (b - a) * (r - 1.0))
                q = (q - 1.0) * (r - 1.0) * (s - 1.0)
            if p > 0:
                q = -q
            else:
                p = -p
            # accept the interpolation only inside the bracket and if it shrinks the
            # step faster than the one before last; else bisect
            if 2.0 * p < min(3.0 * m * q - abs(tol * q), abs(e * q)):
                e, d = d, p / q
            else:
                d = e = m
        else:
            d = e = m
        a, fa = b, fb
        b += d if abs(d) > tol else (tol if m > 0 else -tol)
        fb = float(f(b))
        if math.isnan(fb):
            raise ValueError(f"f returned nan at {b!r}")
    raise RuntimeError(f"brentq did not converge in {maxiter} iterations")


def nonzero_at(x: np.ndarray) -> np.ndarray:
    """Indices of the nonzero entries of the flattened ``x``: ``np.flatnonzero(x)``,
    the same indices (NaN counts as nonzero, ``-0.0`` does not), found through the
    boolean array ``x != 0``.

    numpy finds the nonzero entries of a float array one call of the dtype's test per
    entry, and those of a boolean array in vectorised runs: on the fine cells of the
    online ledger's blocks (long and mostly zeros) ``np.flatnonzero`` was 7.3 % of the
    decaying loop's instructions (issue 37, session 33), this about a fifth of that.

    Examples
    --------
    >>> x = np.array([0.0, 1.5, -0.0, np.nan, 0.0, -2.0])
    >>> nonzero_at(x).tolist(), np.flatnonzero(x).tolist()
    ([1, 3, 5], [1, 3, 5])
    """
    return np.flatnonzero(np.asarray(x) != 0)


def roll_left(y: np.ndarray, k: int) -> np.ndarray:
    """``np.roll(y, -k)`` of a 1-d array (a new array, ``y[(i + k) % n]`` at ``i``) as
    one concatenation, without ``np.roll``'s general axis handling: an inverse
    transform's window rolled to its first node at every composition and query
    (issue 37, session 34).

    Examples
    --------
    >>> y = np.arange(5.0)
    >>> roll_left(y, 2).tolist(), np.roll(y, -2).tolist()
    ([2.0, 3.0, 4.0, 0.0, 1.0], [2.0, 3.0, 4.0, 0.0, 1.0])
    """
    k = int(k) % y.size if y.size else 0
    return np.concatenate((y[k:], y[:k]))


def next_up(x: float, ulps: int = 1) -> float:
    """``x`` moved ``ulps`` floats towards ``+inf`` (``inf`` and NaN unchanged).

    Examples
    --------
    >>> next_up(1.0) - 1.0 == 2.0**-52
    True
    >>> next_up(math.inf, 3)
    inf
    """
    for _ in range(ulps):
        if not math.isfinite(x):
            return x
        x = math.nextafter(x, math.inf)
    return x


def float_crossing(met: Callable[[float], bool], start: float,
                   ceiling: float = math.inf) -> tuple[float, float]:
    """Adjacent floats ``(lo, hi)`` in ``[0, ceiling]`` with ``met(lo)`` false and
    ``met(hi)`` true, for a ``met`` that is monotone (false, then true), false at 0 and
    true at ``ceiling``: a galloping search from ``start`` (steps of 1, 2, 4, ... ulps),
    then a bisection down to adjacent floats.  So ``hi`` is the smallest float where
    ``met`` holds, found in a few evaluations when ``start`` is a few ulps off.

    Examples
    --------
    >>> lo, hi = float_crossing(lambda x: x * x >= 2.0, 1.4)
    >>> hi == math.nextafter(lo, math.inf), lo * lo < 2.0 <= hi * hi
    (True, True)
    """
    x = min(max(start, 0.0), ceiling)
    step = math.ulp(x)
    if met(x):  # gallop down to a float that is not met
        hi = x
        while True:
            x = max(hi - step, 0.0)
            if not met(x):
                break
            hi, step = x, 2.0 * step
        lo = x
    else:  # gallop up to one that is
        lo = x
        while True:
            x = min(lo + step, ceiling)
            if met(x):
                break
            lo, step = x, 2.0 * step
        hi = x
    return float_bisect(met, lo, hi)


def float_bisect(met: Callable[[float], bool], lo: float, hi: float) -> tuple[float, float]:
    """Bisect ``[lo, hi]`` (``met(lo)`` false, ``met(hi)`` true, ``met`` monotone) down to
    adjacent floats ``(lo, hi)``; the midpoint falls back to ``lo``'s next float where
    rounding would repeat an end.

    Examples
    --------
    >>> lo, hi = float_bisect(lambda x: x >= 0.1, 0.0, 1.0)
    >>> hi == math.nextafter(lo, math.inf), lo < 0.1 <= hi
    (True, True)
    """
    while math.nextafter(lo, math.inf) < hi:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            mid = math.nextafter(lo, math.inf)
        if met(mid):
            hi = mid
        else:
            lo = mid
    return lo, hi


def invert_decreasing(
    delta_fn: Callable, delta: float, ceiling: float = math.inf
) -> tuple[float, float]:
    """Bracket ``(lo, hi)`` of the epsilon where a decreasing ``delta(eps)`` meets ``delta``.

    Bisection after a doubling search; ``delta_fn`` takes a numpy array of epsilons
    and returns their deltas.  ``ceiling`` is an epsilon known to need no delta (a
    pure-DP epsilon): the doubling search stops there.  Without one the search gives
    up (upper end ``inf``) only beyond ``2**1000``.  ``delta_fn(hi) <= delta`` holds at
    the upper end, so ``hi`` is a valid epsilon for an upper bound on the curve.

    This is the engine's one inversion: :class:`~dpacct.accountant.Mechanism` uses it
    for an exact ``delta(eps)``, and the mechanisms that invert a curve of their own
    call it too.

    Parameters
    ----------
    delta_fn : callable
        ``numpy.ndarray -> numpy.ndarray``, non-increasing in epsilon.
    delta : float
        Target delta in (0, 1).
    ceiling : float, optional
        An epsilon at which ``delta_fn`` is known to be 0.

    Returns
    -------
    tuple of float
        ``(lo, hi)`` with ``delta_fn(lo) > delta >= delta_fn(hi)`` (``(0, 0)`` when
        ``delta_fn(0) <= delta``), ``hi - lo <= 1e-13 hi``.

    Examples
    --------
    >>> import numpy as np
    >>> lo, hi = invert_decreasing(lambda e: np.exp(-e), 1e-3)
    >>> bool(lo <= math.log(1e3) <= hi and hi - lo < 1e-11)
    True
    """
    if float(delta_fn(np.array([0.0]))[0]) <= delta:
        return (0.0, 0.0)
    lo, hi = 0.0, min(1.0, ceiling)
    while hi < ceiling and float(delta_fn(np.array([hi]))[0]) > delta:
        lo, hi = hi, min(hi * 2.0, ceiling)
        if hi > 2.0**1000:
            return (lo, math.inf)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi) or hi - lo <= 1e-13 * hi:
            break
        if float(delta_fn(np.array([mid]))[0]) > delta:
            lo = mid
        else:
            hi = mid
    return (lo, hi)




def _log_expm1(x, switch: float = 1.0) -> np.ndarray:
    """``log(e^x - 1)`` for ``x >= 0``, elementwise, without overflow or cancellation.

    ``x + log1p(-e^-x)`` above ``switch`` (no overflow of ``e^x``), ``log(expm1(x))``
    at or below it (``expm1`` keeps the digits a subtraction from 1 would lose); both
    are accurate to a few ulps anywhere above about 1, so ``switch`` only decides which
    rounding a caller gets: the RDP series and conversion use 1, the loss laws 30 (the
    values their grids, and the answers printed from them, were fixed with).  ``-inf``
    at 0 and ``inf`` at ``inf``.  The library's one copy.

    Examples
    --------
    >>> float(_log_expm1(1000.0)) == 1000.0
    True
    >>> bool(abs(float(_log_expm1(1e-20)) - math.log(1e-20)) < 1e-12)
    True
    """
    x = np.asarray(x, dtype=float)
    big = x > switch
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return np.where(
            big, x + np.log1p(-np.exp(-np.where(big, x, switch))), np.log(np.expm1(x))
        )


def _log_expm1_30(d: np.ndarray) -> np.ndarray:
    """``_log_expm1(d, 30.0)``, bit for bit, without evaluating the branch above 30 when
    no entry takes it (the edges of a grid discretisation: issue 37)."""
    if (d > 30.0).any():
        return _log_expm1(d, 30.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(np.expm1(d))


def logsumexp(a, axis: int | None = None) -> np.ndarray | float:
    """``log(sum(exp(a)))`` of a real array, the same floats as ``scipy.special.logsumexp``.

    SciPy's array-API wrapper costs about 0.25 ms a call, more than the arithmetic on
    the short rows the RDP series sum (the four calls of one subsampled-Gaussian RDP
    evaluation were half its time).  This is the same algorithm on plain numpy, step by
    step, so the results are the same doubles: with ``m`` the maximum along ``axis`` and
    ``k`` the number of entries equal to it, ``log1p(s / k) + log(k) + m``, where ``s``
    sums ``exp(a - m)`` over the other entries (``s = 0`` is kept as 0); a result that
    is not finite (an infinite or NaN entry, or every entry ``-inf``) is replaced by the
    direct ``log(sum(exp(a)))``.  Only the real, unweighted float64 case with an
    integer (or no) axis: ``b``, ``return_sign``, tuple axes and complex input are not
    supported, other float types are computed in float64 (scipy keeps their type), and
    a full reduction is a Python float.

    Parameters
    ----------
    a : array_like
        Real values (``-inf`` entries add nothing).
    axis : int, optional
        Axis to sum over; None: all entries.

    Returns
    -------
    float or numpy.ndarray
        The result, reduced over ``axis`` (a float for a full reduction).

    Examples
    --------
    >>> float(logsumexp([0.0, 0.0]))  # log 2
    0.6931471805599453
    >>> logsumexp(np.array([[0.0, -np.inf], [-np.inf, -np.inf]]), axis=1)
    array([  0., -inf])
    """
    x = np.asarray(a, dtype=float)
    if x.ndim == 0:
        x = x.reshape(1)
    if x.size == 0:
        shape = list(x.shape)
        if axis is None:
            return -math.inf
        shape[axis] = 1
        return np.squeeze(np.full(shape, -np.inf), axis=axis)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        direct = np.log(np.sum(np.exp(x), axis=axis, keepdims=True))
        top = np.max(x, axis=axis, keepdims=True)
        at_top = x == top
        count = np.sum(at_top, axis=axis, keepdims=True, dtype=float)
        rest = np.sum(np.exp(np.where(at_top, -np.inf, x) - top), axis=axis, keepdims=True)
        rest = np.where(rest == 0, rest, rest / count)
        out = np.log1p(rest) + np.log(count) + top
        # scipy's sign rule: sign(rest + 1) * sign(count) < 0 never holds for real input
        out = np.where(np.isfinite(out), out, direct)
    if axis is None:
        return float(out.reshape(-1)[0])
    return np.squeeze(out, axis=axis)[()]


def _bar_disabled(progress: bool) -> bool:
    """Whether a progress bar asked for with ``progress`` stays hidden.

    Hidden when the caller says ``progress=False`` or when the environment sets
    ``TQDM_DISABLE`` (tqdm's own switch, any non-empty value, as tqdm reads it): tqdm
    applies that switch only where ``disable=`` is not passed, and the library's bars
    pass it, so they ask here.  A test run or a notebook execution sets it so that its
    output never depends on how long a step takes on a loaded machine.

    Examples
    --------
    >>> _bar_disabled(False)
    True
    """
    return not progress or bool(os.environ.get("TQDM_DISABLE"))


class LazyBar:
    """A ``tqdm`` progress bar that imports ``tqdm`` only once the bar is due to show.

    The library's long builds show a bar after ``delay`` seconds (``tqdm``'s own
    ``delay``), so most calls never show one; but ``import tqdm`` alone costs about
    30 ms of CPU (its version lookup reads the package metadata), 10-20 % of a first
    random-allocation call that ends in 0.15-0.3 s (issue 37).  This stand-in counts
    the updates and creates the real bar -- with ``initial`` set to the count so far --
    at the first update after ``delay`` seconds, unless ``progress`` is False or the
    environment sets ``TQDM_DISABLE`` (:func:`_bar_disabled`).  It supports what the
    library's bars use: ``update``, ``close`` and the context manager.

    Parameters
    ----------
    total : int or None
        Expected number of updates (None: unknown, a counter).
    desc : str
        The bar's label.
    delay : float
        Seconds from construction before the bar may show (``>= 0``).
    progress : bool
        The caller's switch; False (any falsy value) never shows a bar.
    unit : str, default "it"
        What one update counts (tqdm's ``unit``).

    Examples
    --------
    >>> with LazyBar(total=3, desc="work", delay=60.0, progress=True) as bar:
    ...     for _ in range(3):
    ...         bar.update(1)
    >>> bar.n, bar.shown
    (3, False)
    """

    def __init__(
        self, total: int | None, desc: str, delay: float, progress: bool, unit: str = "it"
    ) -> None:
        # ``progress`` is read as the tqdm bars read it before (a falsy value hides the
        # bar): the public functions check their own flags, and a bar is no place to
        # refuse one half-way through a long build
        if not delay >= 0.0:
            raise ValueError(f"delay must be >= 0 seconds, got {delay!r}")
        self.total, self.desc, self.delay, self.unit = total, desc, float(delay), unit
        self.hidden = _bar_disabled(progress)
        self.start = time.perf_counter()
        self.n = 0
        self._bar = None

    @property
    def shown(self) -> bool:
        """Whether the real ``tqdm`` bar has been created."""
        return self._bar is not None

    def update(self, n: int = 1) -> None:
        """Count ``n`` more units of work; create the bar once it is due."""
        self.n += n
        if self._bar is not None:
            self._bar.update(n)
        elif not self.hidden and time.perf_counter() - self.start >= self.delay:
            from tqdm import tqdm  # the text bar: tqdm.auto would want ipywidgets in notebooks

            self._bar = tqdm(
                total=self.total, desc=self.desc, unit=self.unit, initial=self.n,
                leave=False, disable=False,
            )

    def close(self) -> None:
        """Close the bar if it was shown (clears its line: ``leave=False``)."""
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> LazyBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LazyModule:
    """A module imported at the first use of one of its names, not at the importer's.

    ``scipy.special`` costs 0.2-0.3 s of CPU to import (SciPy 1.17's array-API layer
    clones the numpy namespace), about half of ``import dpacct`` plus one Gaussian
    epsilon, which needs none of it (its scalars are
    :mod:`~dpacct.accountant.families.normal_tails`'); the engine's modules that use it
    on other routes name it through this stand-in (issue 37).  Each name is looked up
    once in the real module and then kept on the stand-in, so later uses cost what a
    module attribute costs.

    Parameters
    ----------
    name : str
        The module's full name.

    Examples
    --------
    >>> lazy = LazyModule("fractions")
    >>> lazy.Fraction(1, 3) + lazy.Fraction(1, 6)
    Fraction(1, 2)
    """

    def __init__(self, name: str) -> None:
        self._lazy_name = name

    def __getattr__(self, attr: str):
        if attr.startswith("__") or attr == "_lazy_name":  # (dunders: copy, pickle and
            raise AttributeError(attr)  # doctest probe them; _lazy_name: not yet set)
        value = getattr(importlib.import_module(self._lazy_name), attr)
        setattr(self, attr, value)
        return value

    def __repr__(self) -> str:
        return f"<LazyModule {self._lazy_name!r}>"


#: ``scipy.special``, imported at the first use of one of its names
scipy_special = LazyModule("scipy.special")
