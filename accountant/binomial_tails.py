"""The binomial law's survival function and mass, as ``scipy.stats.binom`` computes them.

``scipy.stats.binom.sf`` checks its arguments and places the support's edges around
scipy's own ufunc (``scipy.special._ufuncs._binom_sf``, Boost's incomplete beta): 85 us
a call, more than the arithmetic for the short arrays the exact binary-RR composition
asks (:class:`~dpacct.accountant.transformers.compose._BinaryRRComposition`: 282 calls
per ``epsilon``, 24 of its 30 ms; issue 37), and importing ``scipy.stats`` costs
0.1-0.3 s of a cold call.  :func:`binom_sf` and :func:`binom_pmf` call the same ufuncs
and place the same edges, so the values are the same doubles (tested against
``scipy.stats.binom``); where another scipy lacks the ufuncs, ``scipy.stats.binom``
itself is used.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

__all__ = ["binom_pmf", "binom_sf"]


@functools.cache
def _ufuncs() -> tuple[Callable, Callable] | None:
    try:
        from scipy.special._ufuncs import _binom_pmf, _binom_sf
    except ImportError:  # pragma: no cover - another scipy: the public functions
        return None
    return _binom_sf, _binom_pmf


def binom_sf(k, n, p) -> np.ndarray | float:
    """``P[X > k]`` for ``X ~ Binomial(n, p)``, exactly as ``scipy.stats.binom.sf``.

    Parameters
    ----------
    k : array_like
        Thresholds (any real; ``floor(k)`` is used, as scipy does).
    n : int or array_like
        Number of trials, an integer >= 0.
    p : float or array_like
        Success probability in [0, 1].

    Returns
    -------
    float or numpy.ndarray
        1 below the support (``k < 0``), 0 from ``n`` on, else scipy's value clipped to
        [0, 1]; shaped as the broadcast arguments.

    Examples
    --------
    >>> float(binom_sf(0, 2, 0.5))  # P[X >= 1] = 3/4
    0.75
    >>> float(binom_sf(-1, 5, 0.3)), float(binom_sf(5, 5, 0.3))
    (1.0, 0.0)
    """
    funcs = _ufuncs()
    if funcs is None:  # pragma: no cover
        from scipy import stats

        return stats.binom.sf(k, n, p)
    kk, nn, pp = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (k, n, p)))
    bad = ~((nn >= 0) & (nn == np.floor(nn)) & (pp >= 0) & (pp <= 1)) | np.isnan(kk)
    inside = (kk >= 0) & (kk < nn) & np.isfinite(kk) & ~bad
    with np.errstate(invalid="ignore"):
        vals = np.clip(funcs[0](np.floor(kk), nn, pp), 0.0, 1.0)
    out = np.where(inside, vals, np.where((kk < 0) & ~bad, 1.0, 0.0))
    out = np.where(bad, np.nan, out)
    return out[()] if out.ndim == 0 else out


def binom_pmf(k, n, p) -> np.ndarray | float:
    """``P[X = k]`` for ``X ~ Binomial(n, p)`` and integral ``0 <= k <= n``, as
    ``scipy.stats.binom.pmf`` evaluates it inside its support (scipy's ufunc, clipped to
    [0, 1]); outside the support the caller must not ask.

    Examples
    --------
    >>> float(binom_pmf(1, 2, 0.5))
    0.5
    """
    funcs = _ufuncs()
    if funcs is None:  # pragma: no cover
        from scipy import stats

        return stats.binom.pmf(k, n, p)
    return np.clip(funcs[1](k, n, p), 0.0, 1.0)
