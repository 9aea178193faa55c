"""Validation, binning and the read-out of quantiles from counts (binned quantiles).

The shared pieces of :mod:`dpacct.mechanisms.algorithms.quantiles`: argument checks (also used by
:mod:`dpacct.mechanisms.algorithms.theil_sen`), equal-width binning, the isotonic read-out of
noisy counts and the piecewise-uniform quantile convention, all described in the
module docstring of :mod:`dpacct.mechanisms.algorithms.quantiles` ("Read-out", "Quantile
convention").
"""

from __future__ import annotations

import numpy as np

from dpacct.accountant.mechanism import Mechanism
from dpacct.accountant.validation import (
    as_float_array,
    check_count,
    check_finite,
    check_rng,
)

from ..primitives.discrete import DiscreteLaplaceMechanism
from ..primitives.noise import NOISES, noise_mechanism

__all__ = [
    "bin_counts",
    "check_data",
    "check_out_of_range",
    "check_quantile",
    "check_range",
    "check_rng",
    "isotonic_counts",
    "quantiles_from_counts",
]

_NOISES = NOISES
_OUT_OF_RANGE = ("raise", "clip")


# ---------------------------------------------------------------------------------
# validation helpers (shared with mechanisms.theil_sen)
# ---------------------------------------------------------------------------------
def check_range(lower: object, upper: object, names: tuple[str, str] = ("lower", "upper")):
    """Two finite floats with ``lower < upper``.

    Examples
    --------
    >>> check_range(0, 1)
    (0.0, 1.0)
    """
    lo = check_finite(names[0], lower)
    hi = check_finite(names[1], upper)
    if not lo < hi:
        raise ValueError(f"{names[0]} must be < {names[1]}, got {names[0]}={lo!r}, "
                         f"{names[1]}={hi!r}")
    return lo, hi


def check_out_of_range(out_of_range: object) -> str:
    """``"raise"`` (refuse data outside the declared range) or ``"clip"`` (clip it).

    Examples
    --------
    >>> check_out_of_range("clip")
    'clip'
    >>> check_out_of_range("drop")
    Traceback (most recent call last):
    ...
    ValueError: out_of_range must be 'raise' or 'clip', got 'drop'
    """
    if not isinstance(out_of_range, str) or out_of_range not in _OUT_OF_RANGE:
        raise ValueError(f"out_of_range must be 'raise' or 'clip', got {out_of_range!r}")
    return out_of_range


def check_data(name: str, data: object, lower: float | None = None,
               upper: float | None = None, *, min_size: int = 1,
               out_of_range: str = "raise") -> np.ndarray:
    """A non-empty finite 1-D float array, inside ``[lower, upper]`` when given.

    With ``out_of_range="clip"`` values outside ``[lower, upper]`` are clipped to it (a
    per-record transformation with a public range: sensitivities are unchanged);
    with ``"raise"`` (default) they raise ``ValueError``.

    Examples
    --------
    >>> check_data("data", [1, 2], 0.0, 5.0).tolist()
    [1.0, 2.0]
    >>> check_data("data", [-1, 7], 0.0, 5.0, out_of_range="clip").tolist()
    [0.0, 5.0]
    """
    mode = check_out_of_range(out_of_range)
    arr = as_float_array(name, data)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"{name} must contain at least {min_size} value(s), got {arr.size}")
    if not np.isfinite(arr).all():
        bad = float(arr[~np.isfinite(arr)][0])
        raise ValueError(f"{name} must be finite (no inf), got {bad!r}")
    if lower is not None and upper is not None:
        lo, hi = float(arr.min()), float(arr.max())
        if lo < lower or hi > upper:
            if mode == "clip":
                return np.clip(arr, lower, upper)
            raise ValueError(
                f"{name} must lie in the declared range [{lower!r}, {upper!r}], got values "
                f"in [{lo!r}, {hi!r}]; widen the range, or pass out_of_range='clip' to "
                "clip them (values are never clipped silently)"
            )
    return arr


def check_quantile(q: object, name: str = "q") -> np.ndarray:
    """Quantile levels in ``[0, 1]`` (scalar or array).

    Examples
    --------
    >>> check_quantile([0.0, 0.5]).tolist()
    [0.0, 0.5]
    """
    arr = as_float_array(name, q)
    if ((arr < 0) | (arr > 1)).any():
        bad = arr[(arr < 0) | (arr > 1)].ravel()[0]
        raise ValueError(f"{name} must lie in [0, 1], got {float(bad)!r}")
    return arr


#: the noise families of the binned quantiles: the shared ones, and the discrete Laplace
#: (integer noise on integer counts, as OpenDP's tutorial adds: at the same scale it is
#: as private as the continuous one, pure ``1/scale``-DP, with a smaller variance)
_QUANTILE_NOISES = (*_NOISES, "discrete_laplace")
#: the families whose per-level budgets add up as pure epsilon ``1 / scale``
_PURE_NOISES = ("laplace", "discrete_laplace")


def _check_noise(noise: object) -> str:
    if not isinstance(noise, str) or noise.lower() not in _QUANTILE_NOISES:
        raise ValueError(f"noise must be 'laplace' or 'gaussian' (or 'discrete_laplace'), "
                         f"got {noise!r}")
    return noise.lower()


def _check_branching(branching: object, name: str = "branching") -> int:
    b = check_count(branching, name)
    if b < 2:
        raise ValueError(f"{name} must be an integer >= 2, got {b}")
    return b


def _unit_mechanism(noise: str, scale: float) -> Mechanism:
    if noise == "discrete_laplace":
        return DiscreteLaplaceMechanism(scale=scale)
    return noise_mechanism(noise, scale)


def _noise_variance(noise: str, scale: np.ndarray | float) -> np.ndarray:
    """Variance of the noise of scale ``scale``: ``2 s^2`` (Laplace), ``s^2`` (Gaussian),
    ``2 e^{-1/s} / (1 - e^{-1/s})^2`` (discrete Laplace)."""
    s = np.asarray(scale, dtype=float)
    if noise == "laplace":
        return 2.0 * s**2
    if noise == "gaussian":
        return s**2
    r = np.exp(-1.0 / s)
    return 2.0 * r / (-np.expm1(-1.0 / s)) ** 2




# ---------------------------------------------------------------------------------
# binned data and reading quantiles off counts
# ---------------------------------------------------------------------------------
def bin_counts(data: object, lower: float, upper: float, bins: int, *,
               out_of_range: str = "raise") -> np.ndarray:
    """Counts of ``data`` in ``bins`` equal-width bins on ``[lower, upper]``.

    Bin ``j`` is ``[lower + j w, lower + (j + 1) w)`` with ``w = (upper - lower) / bins``;
    the last bin also holds ``upper``.  Values outside the range raise ``ValueError``
    (``out_of_range="raise"``, default) or are clipped into it (``"clip"``: they count
    in the first or last bin).

    Examples
    --------
    >>> bin_counts([0.0, 0.1, 0.5, 1.0], 0.0, 1.0, 4).tolist()
    [2, 0, 1, 1]
    >>> bin_counts([-3.0, 0.5, 9.0], 0.0, 1.0, 2, out_of_range="clip").tolist()
    [1, 2]
    """
    lo, hi = check_range(lower, upper)
    k = check_count(bins, "bins")
    x = check_data("data", data, lo, hi, out_of_range=out_of_range)
    idx = np.floor((x - lo) / (hi - lo) * k).astype(np.int64)
    idx = np.clip(idx, 0, k - 1)  # only x == upper (and rounding at the edges) move
    return np.bincount(idx, minlength=k)


def quantiles_from_counts(counts: object, q: object, lower: float, upper: float) -> np.ndarray:
    """Quantiles of the piecewise-uniform distribution with non-negative bin ``counts``.

    The convention of the module docstring: linear interpolation of the CDF inside the
    bin where it reaches ``q * total``; for ``q = 0`` the lower edge of the first
    non-empty bin, for ``q = 1`` the upper edge of the last; all-zero counts give the
    uniform quantile ``lower + q (upper - lower)``.

    Parameters
    ----------
    counts : array_like
        Non-negative counts of equal-width bins on ``[lower, upper]``.
    q : float or array_like
        Quantile levels in ``[0, 1]``.
    lower, upper : float
        The range the bins cover.

    Returns
    -------
    numpy.ndarray
        The quantiles, with the shape of ``q``.

    Examples
    --------
    >>> quantiles_from_counts([0, 2, 2, 0], [0.0, 0.25, 0.5, 1.0], 0.0, 4.0).tolist()
    [1.0, 1.5, 2.0, 3.0]
    """
    lo, hi = check_range(lower, upper)
    c = as_float_array("counts", counts)
    if c.ndim != 1 or c.size == 0:
        raise ValueError(f"counts must be a non-empty 1-D array, got shape {c.shape}")
    if not np.isfinite(c).all() or (c < 0).any():
        raise ValueError("counts must be finite and non-negative")
    qs = check_quantile(q)
    width = (hi - lo) / c.size
    cum = np.cumsum(c)
    total = cum[-1]
    if not total > 0:
        return lo + qs * (hi - lo)
    t = qs * total
    # first bin whose cumulative count reaches t (for t = 0: the first non-empty bin)
    j = np.where(t > 0, np.searchsorted(cum, t, side="left"),
                 np.searchsorted(cum, 0.0, side="right"))
    j = np.minimum(j, c.size - 1)
    below = cum[j] - c[j]
    cj = c[j]
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(cj > 0, (t - below) / np.where(cj > 0, cj, 1.0), 0.0)
    # clipped: lo + bins * width can round one ulp above hi
    return np.clip(lo + (j + np.clip(frac, 0.0, 1.0)) * width, lo, hi)


def isotonic_counts(noisy: object) -> np.ndarray:
    """Non-negative counts from noisy ones, through an isotonic fit of the noisy CDF.

    The noisy cumulative sums ``C~_j`` are replaced by ``F = max(iso(C~), 0)``, where
    ``iso`` is the least-squares non-decreasing fit (isotonic regression by the
    pool-adjacent-violators algorithm, ``scipy.optimize.isotonic_regression``); the
    counts returned are the increments of ``F``.  ``F`` is the closest monotone CDF to
    the noisy one, so the total mass stays near the noisy total ``C~_last`` (unlike
    clipping each count at zero, which adds mass to every empty bin, or a running
    maximum, which only ever raises the CDF).  Post-processing: no privacy cost.

    Parameters
    ----------
    noisy : array_like
        Noisy counts (any sign), 1-D, finite.

    Returns
    -------
    numpy.ndarray
        Non-negative counts of the same length; their sum is ``max(0, F_last)``.

    Examples
    --------
    >>> isotonic_counts([3.0, -1.0, 2.0, 0.5]).tolist()   # CDF 3, 2, 4, 4.5 -> 2.5, 2.5, 4, 4.5
    [2.5, 0.0, 1.5, 0.5]
    >>> isotonic_counts([-2.0, 1.0]).tolist()              # CDF -2, -1 -> 0, 0
    [0.0, 0.0]
    """
    c = as_float_array("noisy", noisy)
    if c.ndim != 1 or c.size == 0:
        raise ValueError(f"noisy must be a non-empty 1-D array, got shape {c.shape}")
    if not np.isfinite(c).all():
        raise ValueError("noisy must contain only finite numbers")
    from scipy import optimize  # here, not at import: start-up (issue 37)

    fit = optimize.isotonic_regression(np.cumsum(c), increasing=True).x
    cum = np.maximum(fit, 0.0)
    return np.maximum(np.diff(cum, prepend=0.0), 0.0)
