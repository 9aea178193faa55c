"""Private quantiles: a noisy histogram, a b-ary tree of counts, the exponential mechanism.

Three algorithms release quantiles of one-dimensional data lying in a declared range
``[lower, upper]``.  Values outside it raise by default (nothing is clipped silently);
``out_of_range="clip"`` clips them to the range instead.  Clipping to a *public* range
is a per-record transformation applied before the counts are taken, so a neighbouring
dataset is still a neighbouring dataset after it and every sensitivity (and hence the
privacy claim) is unchanged.  Each is an
:class:`~dpacct.mechanisms.algorithm.Algorithm`, so its privacy is the composition of the
primitives it runs and it can be composed, subsampled and calibrated like any other
mechanism.  The neighbouring relation is add/remove one record.

* :class:`HistogramQuantiles` -- one Laplace or Gaussian histogram release over ``bins``
  equal-width bins (one record changes one count by one: L1 = L2 sensitivity 1), counts
  read out through an isotonic (pool-adjacent-violators) fit of their noisy
  cumulative sums, quantiles read off that monotone cumulative distribution with
  linear interpolation inside a bin.
* :class:`TreeQuantiles` -- the hierarchical method of Hay, Rastogi, Miklau, Suciu 2010
  ("Boosting the accuracy of differentially private histograms through consistency"):
  noisy counts of a ``b``-ary tree over the same bins, one histogram release per level,
  made consistent by their two-pass least-squares estimator (Theorem 3), from which
  range counts are read; quantiles come from the isotonic fit of the consistent
  cumulative counts.  The branching factor defaults to
  :func:`choose_branching` (after Qardaji, Yang, Li 2013).
* :class:`ExponentialQuantile` -- the exponential mechanism over the intervals between
  sorted data points (Smith 2011, "Privacy-preserving statistical estimation with
  optimal convergence rates", Section 3), or over a grid, sampled in log space with the
  Gumbel-max trick; accounted by the bounded-range analysis of
  :class:`~dpacct.mechanisms.exponential.ExponentialMechanism`.

Read-out (both binned methods).  The noisy counts ``c~_j`` are not read bin by bin:
clipping each at zero puts phantom mass into every empty bin (``E max(Lap(b), 0) =
b / 2`` per bin, so ``bins * b / 2`` in total), which drags the quantiles towards the
empty part of the range as the number of bins grows.  Instead the noisy cumulative
sums ``C~_j = sum_{i <= j} c~_i`` are replaced by their least-squares non-decreasing
fit (isotonic regression by pool-adjacent-violators; Barlow et al. 1972, the
monotone post-processing of a noisy CDF that Hay et al. 2010, Section 5, also use
for sorted queries), floored at zero; its increments are the non-negative counts the
quantiles are read from (:func:`isotonic_counts`).  This is post-processing of the
released counts and costs no privacy.  The error of a quantile then grows only with
the noise of a cumulative sum near the quantile, not with the number of empty bins.

Quantile convention (both binned methods).  Given non-negative bin counts ``c_j`` with
cumulative sums ``C_j`` and total ``T``, the ``q``-quantile is the point where the
piecewise-linear CDF (mass spread uniformly inside each bin) reaches ``q T``: with ``j``
the first bin whose cumulative count reaches ``q T`` (for ``q = 0``: the first non-empty
bin), it is ``lower + (j + (q T - C_{j-1}) / c_j) * width``.  If every count is zero
(possible after noise), the answer is the quantile of the uniform distribution on the
range, ``lower + q (upper - lower)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize

from dpacct.accountant.mechanism import Mechanism
from dpacct.accountant.serialization import register_mechanism
from dpacct.accountant.validation import (
    as_float_array,
    check_count,
    check_finite,
    check_positive,
    check_rng,
)

from .algorithm import Algorithm, PlannedRelease
from .exponential import ExponentialMechanism
from .noise import NOISES, noise_mechanism

__all__ = [
    "ExponentialQuantile",
    "HistogramQuantiles",
    "HistogramRelease",
    "TreeQuantiles",
    "TreeRelease",
    "bin_counts",
    "choose_branching",
    "hay_consistency",
    "isotonic_counts",
    "quantiles_from_counts",
    "smith_pieces",
    "smith_quantile",
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
        raise ValueError(f"{name} must be finite (no inf), got {arr[~np.isfinite(arr)][0]!r}")
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
        raise ValueError(f"{name} must lie in [0, 1], got {bad!r}")
    return arr


def _check_noise(noise: object) -> str:
    if not isinstance(noise, str) or noise.lower() not in _NOISES:
        raise ValueError(f"noise must be 'laplace' or 'gaussian', got {noise!r}")
    return noise.lower()


def _check_branching(branching: object) -> int:
    b = check_count(branching, "branching")
    if b < 2:
        raise ValueError(f"branching must be an integer >= 2, got {b}")
    return b


def _unit_mechanism(noise: str, scale: float) -> Mechanism:
    return noise_mechanism(noise, scale)




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
    return lo + (j + np.clip(frac, 0.0, 1.0)) * width


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
    fit = optimize.isotonic_regression(np.cumsum(c), increasing=True).x
    cum = np.maximum(fit, 0.0)
    return np.maximum(np.diff(cum, prepend=0.0), 0.0)


# ---------------------------------------------------------------------------------
# histogram
# ---------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class HistogramRelease:
    """The output of :class:`HistogramQuantiles`: noisy and post-processed bin counts.

    Each parameter is an attribute of the same name.

    Parameters
    ----------
    lower, upper : float
        The declared range.
    noisy_counts : numpy.ndarray
        The raw noisy counts (the released statistic).
    counts : numpy.ndarray
        ``isotonic_counts(noisy_counts)``, the non-negative post-processing the
        quantiles use (module docstring, "Read-out").

    Examples
    --------
    >>> rel = HistogramRelease(0.0, 2.0, np.array([1.5, -0.5]), np.array([1.0, 0.0]))
    >>> rel.quantiles(0.5).round(3).tolist()
    0.5
    """

    lower: float
    upper: float
    noisy_counts: np.ndarray
    counts: np.ndarray

    @property
    def edges(self) -> np.ndarray:
        """The ``bins + 1`` bin edges."""
        return np.linspace(self.lower, self.upper, self.counts.size + 1)

    def quantiles(self, q: object) -> np.ndarray:
        """Quantiles read off the non-negative counts (:func:`quantiles_from_counts`).

        Parameters
        ----------
        q : float or array_like
            Quantile level(s), in [0, 1].

        Examples
        --------
        >>> rel = HistogramRelease(0.0, 1.0, np.array([2.0, 2.0]), np.array([2.0, 2.0]))
        >>> rel.quantiles([0.25, 0.5]).tolist()
        [0.25, 0.5]
        """
        return quantiles_from_counts(self.counts, q, self.lower, self.upper)


@register_mechanism("histogram_quantiles")
@dataclass(frozen=True, repr=False)
class HistogramQuantiles(Algorithm):
    """Quantiles from one noisy histogram over equal-width bins.

    Counts of the data in ``bins`` equal-width bins on ``[lower, upper]`` receive
    independent Laplace (scale ``scale``) or Gaussian (standard deviation ``scale``)
    noise.  Under add/remove one record changes exactly one count by one, so the L1 and
    L2 sensitivities are 1 and the privacy is that of a single
    ``LaplaceMechanism(b=scale)`` or ``GaussianMechanism(sigma=scale)``.  The noisy
    cumulative counts are post-processed by isotonic regression
    (:func:`isotonic_counts`) and quantiles are read off that monotone CDF with linear
    interpolation inside a bin (module docstring).  Post-processing costs nothing, and
    the error does not grow with the number of empty bins (clipping each count at zero
    does: at epsilon = 1 on 1 000 draws it multiplies the quartile error by about 30
    at 1 000 bins; ``python -m benchmarks.algorithms``).

    Parameters
    ----------
    lower, upper : float
        Declared data range, finite, ``lower < upper``; data outside raise.
    bins : int
        Number of equal-width bins, >= 1.
    scale : float
        Noise scale per unit of sensitivity (Laplace ``b`` or Gaussian ``sigma``), > 0.
    noise : {'laplace', 'gaussian'}
        The noise distribution (default Laplace).
    out_of_range : {'raise', 'clip'}
        Data outside ``[lower, upper]``: raise ``ValueError`` (default) or clip to the
        range (a per-record map to a public range: the sensitivity stays 1).

    Examples
    --------
    >>> alg = HistogramQuantiles(lower=0.0, upper=1.0, bins=16, scale=1.0)
    >>> alg.epsilon(1e-9) <= 1.0          # Laplace(b=1) on a sensitivity-1 histogram
    True
    >>> x = np.random.default_rng(0).uniform(0.2, 0.8, size=2000)
    >>> med = alg.quantiles(x, 0.5, rng=np.random.default_rng(1))
    >>> bool(abs(med - np.median(x)) < 0.02)
    True
    """

    lower: float
    upper: float
    bins: int
    scale: float
    noise: str = "laplace"
    out_of_range: str = "raise"

    def __post_init__(self) -> None:
        lo, hi = check_range(self.lower, self.upper)
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        object.__setattr__(self, "bins", check_count(self.bins, "bins"))
        object.__setattr__(self, "scale", check_positive("scale", self.scale))
        object.__setattr__(self, "noise", _check_noise(self.noise))
        object.__setattr__(self, "out_of_range", check_out_of_range(self.out_of_range))

    def planned_releases(self) -> tuple[PlannedRelease, ...]:
        """One Laplace / Gaussian release of a sensitivity-1 histogram."""
        return (PlannedRelease("histogram", _unit_mechanism(self.noise, self.scale), 1),)

    def release(self, data: object, *, rng: np.random.Generator) -> HistogramRelease:
        """Run the mechanism: noisy counts and their non-negative post-processing.

        Parameters
        ----------
        data : array_like
            One-dimensional finite values in ``[lower, upper]`` (``out_of_range``
            decides what happens to others).
        rng : numpy.random.Generator
            The source of the noise.

        Examples
        --------
        >>> alg = HistogramQuantiles(lower=0.0, upper=1.0, bins=4, scale=0.5)
        >>> rel = alg.release([0.1, 0.2, 0.9], rng=np.random.default_rng(0))
        >>> bool((rel.counts >= 0).all()), rel.noisy_counts.shape
        (True, (4,))
        """
        true = bin_counts(data, self.lower, self.upper, self.bins,
                          out_of_range=self.out_of_range).astype(float)
        session = self.releases(rng)
        noisy = session.release("histogram", true)
        session.finish()
        return HistogramRelease(self.lower, self.upper, noisy, isotonic_counts(noisy))

    def quantiles(self, data: object, q: object, *, rng: np.random.Generator) -> np.ndarray:
        """Release the histogram and read the quantiles ``q`` off it (one release).

        Parameters
        ----------
        data : array_like
            One-dimensional finite values in ``[lower, upper]`` (``out_of_range``
            decides what happens to others).
        q : float or array_like
            Quantile level(s), in [0, 1].
        rng : numpy.random.Generator
            The source of the noise.

        Examples
        --------
        >>> alg = HistogramQuantiles(lower=0.0, upper=10.0, bins=10, scale=0.1)
        >>> x = np.repeat([1.5, 5.5, 8.5], 100)
        >>> alg.quantiles(x, [0.5], rng=np.random.default_rng(0)).round(1).tolist()
        [5.5]
        """
        qs = check_quantile(q)
        return self.release(data, rng=rng).quantiles(qs)


# ---------------------------------------------------------------------------------
# b-ary tree with Hay et al. consistency
# ---------------------------------------------------------------------------------
def _tree_height(bins: int, b: int) -> int:
    """Smallest ``h`` with ``b**h >= bins``."""
    h, cap = 0, 1
    while cap < bins:
        cap *= b
        h += 1
    return h


def choose_branching(bins: int, *, max_branching: int | None = None) -> int:
    """Branching factor for a tree over ``bins`` leaves (a documented heuristic).

    Qardaji, Yang, Li 2013 ("Understanding hierarchical methods for differentially
    private histograms", Section 4) show that a range query over a ``b``-ary tree of
    height ``h`` (levels below the root, each one histogram release at a fixed total
    budget, so per-node noise variance ``∝ h^2``) needs about ``(b - 1)`` nodes per
    level on average, so its error variance is ``∝ (b - 1) h^3``; minimising
    ``(b - 1) (log_b N)^3`` over real ``b`` gives ``ln b = 3 (1 - 1/b)``, i.e.
    ``b ≈ 16``, their recommendation.  Here ``h = ceil(log_b bins)`` is the actual
    integer height (the leaves are padded to ``b^h``), and we return the integer
    ``b`` in ``[2, min(bins, max_branching)]`` minimising ``(b - 1) h^3``; ties go to
    less padding, then smaller ``b``.  ``bins = 1`` returns 2 (a one-leaf tree).

    Parameters
    ----------
    bins : int
        Number of leaves, >= 1.
    max_branching : int, optional
        Upper limit for ``b`` (default ``bins``).

    Examples
    --------
    >>> choose_branching(4096), choose_branching(1024), choose_branching(256)
    (16, 32, 16)
    """
    n = check_count(bins, "bins")
    top = n if max_branching is None else min(n, _check_branching(max_branching))
    if top < 2:
        return 2
    b = np.arange(2, top + 1, dtype=np.int64)
    h = np.zeros_like(b)
    cap = np.ones_like(b)
    while (cap < n).any():
        grow = cap < n
        cap = np.where(grow, cap * b, cap)
        h = h + grow
    cost = (b - 1) * h.astype(float) ** 3
    order = np.lexsort((b, cap - n, cost))
    return int(b[order[0]])


def hay_consistency(noisy_levels: list[np.ndarray] | tuple[np.ndarray, ...],
                    branching: int, *, root_measured: bool = True) -> list[np.ndarray]:
    """Least-squares consistent counts of a ``b``-ary tree (Hay et al. 2010, Theorem 3).

    ``noisy_levels[l]`` holds the ``b**l`` noisy counts of level ``l`` (``l = 0`` the
    root, the last level the leaves), all with the same noise variance.  With heights
    ``i = 1`` at the leaves and ``i = h + 1`` at the root, the two passes of Hay,
    Rastogi, Miklau, Suciu 2010 (Section 4, Theorem 3) are

    * bottom-up: ``z[v] = h~[v]`` at a leaf, else ``z[v] = (b^i - b^{i-1}) / (b^i - 1)
      h~[v] + (b^{i-1} - 1) / (b^i - 1) sum_{children u} z[u]``;
    * top-down: ``h_bar[root] = z[root]``, else
      ``h_bar[v] = z[v] + (h_bar[parent] - sum_{siblings w of v, v included} z[w]) / b``,

    which is the unique consistent ``h_bar`` (every count equal to the sum of its
    children's) minimising ``||h_bar - h~||_2`` -- the ordinary least-squares estimate
    (and the best linear unbiased one, their Theorem 4).  Each pass is vectorised per
    level (children sums via ``reshape(-1, b).sum(1)``), the coefficients evaluated in
    the overflow-free forms ``(1 - 1/b) / (1 - b^-i)`` and ``(1/b - b^-i) / (1 - b^-i)``.

    With ``root_measured=False`` the root entry of ``noisy_levels`` is ignored (it may
    be ``None``): the least-squares problem splits into the ``b`` independent subtrees
    below the root, each solved by the same passes; the root estimate is the sum of its
    children.

    Parameters
    ----------
    noisy_levels : sequence of numpy.ndarray
        Level ``l`` of length ``branching ** l``, root first.
    branching : int
        The branching factor ``b >= 2``.
    root_measured : bool
        Whether level 0 was measured (default True, as in Hay et al.).

    Returns
    -------
    list of numpy.ndarray
        The consistent counts, level by level, root first.

    Examples
    --------
    >>> levels = [np.array([10.0]), np.array([4.0, 5.0])]
    >>> [lv.round(3).tolist() for lv in hay_consistency(levels, 2)]
    [[9.667], [4.333, 5.333]]
    """
    b = _check_branching(branching)
    levels = list(noisy_levels)
    if len(levels) == 0:
        raise ValueError("noisy_levels must contain at least one level")
    h = len(levels) - 1
    if not root_measured and h == 0:
        raise ValueError("root_measured=False needs a tree with at least two levels")
    arrs: list[np.ndarray] = []
    for lvl, arr in enumerate(levels):
        if lvl == 0 and not root_measured:
            arrs.append(np.zeros(1))
            continue
        a = as_float_array(f"noisy_levels[{lvl}]", arr)
        if a.shape != (b**lvl,):
            raise ValueError(f"noisy_levels[{lvl}] must have shape ({b**lvl},) for "
                             f"branching={b}, got {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError(f"noisy_levels[{lvl}] must be finite")
        arrs.append(a)
    top = 0 if root_measured else 1
    z: list[np.ndarray] = [np.empty(0)] * (h + 1)
    z[h] = arrs[h].copy()
    for lvl in range(h - 1, top - 1, -1):
        i = h - lvl + 1  # height of this level (leaves: 1)
        inv = float(b) ** (-i)
        a_coef = (1.0 - 1.0 / b) / (1.0 - inv)
        c_coef = (1.0 / b - inv) / (1.0 - inv)
        z[lvl] = a_coef * arrs[lvl] + c_coef * z[lvl + 1].reshape(-1, b).sum(axis=1)
    out: list[np.ndarray] = [np.empty(0)] * (h + 1)
    out[top] = z[top]
    for lvl in range(top + 1, h + 1):
        sib = z[lvl].reshape(-1, b).sum(axis=1)
        out[lvl] = z[lvl] + np.repeat((out[lvl - 1] - sib) / b, b)
    if not root_measured:
        out[0] = np.array([out[1].sum()])
    return out


@dataclass(frozen=True, eq=False)
class TreeRelease:
    """The output of :class:`TreeQuantiles`: noisy and consistent counts of every level.

    Each parameter is an attribute of the same name.

    Parameters
    ----------
    lower, upper : float
        The declared range.
    bins : int
        The number of real leaves (bins); leaves beyond ``bins`` are padding.
    branching : int
        The branching factor.
    noisy_levels : tuple of numpy.ndarray
        Noisy counts, root first (the root entry is ``None`` when not measured).
    levels : tuple of numpy.ndarray
        Consistent counts (:func:`hay_consistency`), root first.

    Examples
    --------
    >>> alg = TreeQuantiles(lower=0.0, upper=1.0, bins=8, branching=2, scale=0.5)
    >>> rel = alg.release([0.1, 0.2, 0.7], rng=np.random.default_rng(0))
    >>> bool(np.isclose(rel.levels[1].sum(), rel.levels[0][0]))
    True
    """

    lower: float
    upper: float
    bins: int
    branching: int
    noisy_levels: tuple
    levels: tuple

    @property
    def leaf_counts(self) -> np.ndarray:
        """Consistent counts of the ``bins`` real bins (may be negative)."""
        return self.levels[-1][: self.bins]

    @property
    def width(self) -> float:
        """Bin width."""
        return (self.upper - self.lower) / self.bins

    def quantiles(self, q: object) -> np.ndarray:
        """Quantiles from the consistent leaves.

        The cumulative consistent leaf counts (each prefix is, by consistency, the sum
        of the consistent counts of the tree nodes covering it) are made
        non-decreasing and non-negative by isotonic regression
        (:func:`isotonic_counts`; post-processing, no mass added in empty stretches as
        clipping each leaf at zero would, and no upward drift of the total as a
        running maximum would), then read as in :func:`quantiles_from_counts`.

        Parameters
        ----------
        q : float or array_like
            Quantile level(s), in [0, 1].

        Examples
        --------
        >>> lv = (np.array([4.0]), np.array([3.0, -1.0, 2.0]))
        >>> rel = TreeRelease(0.0, 3.0, 3, 3, lv, lv)
        >>> rel.quantiles([0.5, 1.0]).round(3).tolist()   # CDF 3, 2, 4 -> 2.5, 2.5, 4
        [0.8, 3.0]
        """
        counts = isotonic_counts(self.leaf_counts)
        return quantiles_from_counts(counts, q, self.lower, self.upper)

    def range_count(self, a: float, b: float) -> float:
        """Estimated number of records in ``[a, b]``, from the consistent leaves.

        Whole bins contribute their consistent counts (for bin-aligned ``a, b`` this
        equals the sum of the consistent counts of the tree nodes covering the range,
        by consistency); partially covered bins contribute in proportion to the
        covered length (the uniform-within-bin model).  Unbiased for bin-aligned
        ranges; may be negative.

        Parameters
        ----------
        a, b : float
            The range's ends, with ``lower <= a <= b <= upper``.

        Examples
        --------
        >>> alg = TreeQuantiles(lower=0.0, upper=4.0, bins=4, branching=2, scale=1e-6)
        >>> rel = alg.release([0.5, 1.5, 1.6, 3.5], rng=np.random.default_rng(0))
        >>> round(rel.range_count(1.0, 4.0), 3), round(rel.range_count(0.0, 0.5), 3)
        (3.0, 0.5)
        """
        lo = check_finite("a", a)
        hi = check_finite("b", b)
        if not (self.lower <= lo <= hi <= self.upper):
            raise ValueError(f"need lower <= a <= b <= upper = [{self.lower!r}, "
                             f"{self.upper!r}], got a={lo!r}, b={hi!r}")
        cum = np.concatenate([[0.0], np.cumsum(self.leaf_counts)])
        pos = (np.array([lo, hi]) - self.lower) / self.width
        j = np.minimum(np.floor(pos).astype(np.int64), self.bins - 1)
        frac = pos - j
        val = cum[j] + frac * self.leaf_counts[j]
        return float(val[1] - val[0])


@register_mechanism("tree_quantiles")
@dataclass(frozen=True, repr=False)
class TreeQuantiles(Algorithm):
    """Quantiles and range counts from a consistent ``b``-ary tree of noisy counts.

    The ``bins`` equal-width bins on ``[lower, upper]`` are the leaves of a ``b``-ary
    tree of height ``h = ceil(log_b bins)`` (the leaves are padded with empty bins to
    ``b^h``; padding counts are measured like the others and ignored when reading
    quantiles).  Every node holds the count of the records under it.  The hierarchical
    method of Hay, Rastogi, Miklau, Suciu 2010 releases every level with independent
    Laplace / Gaussian noise of scale ``scale`` and makes the counts consistent with
    their least-squares estimator (:func:`hay_consistency`, Theorem 3).

    Privacy.  One record changes exactly one count per level by one, so each level is a
    sensitivity-1 histogram release and the algorithm is the composition of ``depth``
    such releases: ``depth = h + 1`` when the root is measured (``measure_root=True``,
    as in Hay et al.), ``h`` when it is not (the default: the root count is the sum of
    its children, and its budget is better spent on the other levels; Qardaji, Yang,
    Li 2013 make the same observation).  A one-bin tree is its root and always measures
    it.

    Parameters
    ----------
    lower, upper : float
        Declared data range, finite, ``lower < upper``; data outside raise.
    bins : int
        Number of leaves (equal-width bins), >= 1.
    scale : float
        Noise scale per level and per unit of sensitivity (Laplace ``b`` or Gaussian
        ``sigma``), > 0.
    branching : int, optional
        Branching factor ``>= 2``; default :func:`choose_branching` of ``bins``.
    noise : {'laplace', 'gaussian'}
    measure_root : bool
        Measure the root level too (default False).
    out_of_range : {'raise', 'clip'}
        Data outside ``[lower, upper]``: raise (default) or clip to the range (the
        sensitivity of every level stays 1).

    Examples
    --------
    >>> alg = TreeQuantiles(lower=0.0, upper=1.0, bins=4096, scale=3.0)
    >>> alg.branching, alg.height, alg.depth      # 16**3 = 4096 leaves, 3 levels measured
    (16, 3, 3)
    >>> x = np.random.default_rng(0).beta(2.0, 5.0, size=5000)
    >>> q = alg.quantiles(x, [0.1, 0.5, 0.9], rng=np.random.default_rng(1))
    >>> bool(np.abs(q - np.quantile(x, [0.1, 0.5, 0.9])).max() < 0.01)
    True
    """

    lower: float
    upper: float
    bins: int
    scale: float
    branching: int | None = None
    noise: str = "laplace"
    measure_root: bool = False
    out_of_range: str = "raise"

    def __post_init__(self) -> None:
        lo, hi = check_range(self.lower, self.upper)
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        bins = check_count(self.bins, "bins")
        object.__setattr__(self, "bins", bins)
        object.__setattr__(self, "scale", check_positive("scale", self.scale))
        b = choose_branching(bins) if self.branching is None else _check_branching(
            self.branching)
        object.__setattr__(self, "branching", b)
        object.__setattr__(self, "noise", _check_noise(self.noise))
        if not isinstance(self.measure_root, bool | np.bool_):
            raise TypeError(f"measure_root must be a bool, got {self.measure_root!r}")
        object.__setattr__(self, "measure_root", bool(self.measure_root))
        object.__setattr__(self, "out_of_range", check_out_of_range(self.out_of_range))

    @property
    def height(self) -> int:
        """Levels below the root: the smallest ``h`` with ``branching**h >= bins``."""
        return _tree_height(self.bins, self.branching)

    @property
    def root_measured(self) -> bool:
        """Whether the root level is released (always for a one-leaf tree)."""
        return self.measure_root or self.height == 0

    @property
    def depth(self) -> int:
        """Number of measured levels, i.e. of composed histogram releases."""
        return self.height + (1 if self.root_measured else 0)

    def planned_releases(self) -> tuple[PlannedRelease, ...]:
        """``depth`` sensitivity-1 Laplace / Gaussian histogram releases (one per level)."""
        return (PlannedRelease("level", _unit_mechanism(self.noise, self.scale), self.depth),)

    def release(self, data: object, *, rng: np.random.Generator) -> TreeRelease:
        """Run the mechanism: noisy counts per level, then Hay et al. consistency.

        Parameters
        ----------
        data : array_like
            One-dimensional finite values in ``[lower, upper]`` (``out_of_range``
            decides what happens to others).
        rng : numpy.random.Generator
            The source of the noise.

        Examples
        --------
        >>> alg = TreeQuantiles(lower=0.0, upper=1.0, bins=9, branching=3, scale=1.0)
        >>> rel = alg.release(np.linspace(0, 1, 50), rng=np.random.default_rng(0))
        >>> [lv.size for lv in rel.levels], rel.noisy_levels[0] is None
        ([1, 3, 9], True)
        """
        session = self.releases(rng)
        b, h = self.branching, self.height
        leaves = np.zeros(b**h)
        leaves[: self.bins] = bin_counts(data, self.lower, self.upper, self.bins,
                                         out_of_range=self.out_of_range)
        top = 0 if self.root_measured else 1
        noisy: list[np.ndarray | None] = [None] * (h + 1)
        for lvl in range(top, h + 1):
            true = leaves.reshape(b**lvl, -1).sum(axis=1)
            noisy[lvl] = session.release("level", true)
        session.finish()
        consistent = hay_consistency(noisy, b, root_measured=self.root_measured)
        return TreeRelease(self.lower, self.upper, self.bins, b, tuple(noisy),
                           tuple(consistent))

    def quantiles(self, data: object, q: object, *, rng: np.random.Generator) -> np.ndarray:
        """Release the tree and read the quantiles ``q`` off its consistent leaves.

        Parameters
        ----------
        data : array_like
            One-dimensional finite values in ``[lower, upper]`` (``out_of_range``
            decides what happens to others).
        q : float or array_like
            Quantile level(s), in [0, 1].
        rng : numpy.random.Generator
            The source of the noise.

        Examples
        --------
        >>> alg = TreeQuantiles(lower=0.0, upper=10.0, bins=10, branching=2, scale=0.1)
        >>> x = np.repeat([1.5, 5.5, 8.5], 100)
        >>> alg.quantiles(x, [0.5], rng=np.random.default_rng(0)).round(1).tolist()
        [5.5]
        """
        qs = check_quantile(q)
        return self.release(data, rng=rng).quantiles(qs)


# ---------------------------------------------------------------------------------
# exponential mechanism
# ---------------------------------------------------------------------------------
def smith_pieces(values: np.ndarray, q: float, lower: float, upper: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Scores and piece boundaries of Smith's quantile utility on ``[lower, upper]``.

    Smith 2011, Section 3: the utility of an output ``y`` is ``u(y) = -|#{v < y} - q m|``
    (``m = len(values)``), constant between consecutive order statistics.  With ``z_0 =
    lower <= z_1 <= ... <= z_m <= z_{m+1} = upper`` (the values placed on the output
    range: a value below ``lower`` is below every output, so it counts in every rank,
    exactly like a value at ``lower``) piece ``[z_i, z_{i+1}]`` has score ``-|i - q m|``.

    Returns
    -------
    (scores, edges) : tuple of numpy.ndarray
        ``m + 1`` scores and ``m + 2`` edges, for ``ExponentialMechanism.release(scores,
        edges=edges, ...)``.

    Examples
    --------
    >>> scores, edges = smith_pieces(np.array([2.0, 1.0]), 0.5, 0.0, 4.0)
    >>> scores.tolist(), edges.tolist()
    ([-1.0, 0.0, -1.0], [0.0, 1.0, 2.0, 4.0])
    """
    m = values.size
    z = np.concatenate([[lower], np.sort(np.clip(values, lower, upper)), [upper]])
    return -np.abs(np.arange(m + 1, dtype=float) - q * m), z


def smith_quantile(values: np.ndarray, q: float, mechanism: ExponentialMechanism,
                   sensitivity: float, lower: float, upper: float,
                   rng: np.random.Generator) -> float:
    """One draw of Smith's exponential-mechanism quantile on ``[lower, upper]``.

    The output density on ``[lower, upper]`` is ``∝ exp(epsilon0 u(y) / (2 Delta))``
    for Smith's utility (:func:`smith_pieces`), ``epsilon0 = mechanism.epsilon0`` and
    ``Delta = sensitivity``: the continuous exponential mechanism over the pieces,
    drawn by ``mechanism.release(scores, edges=edges, ...)`` (piece ``i`` with
    probability ``∝ (z_{i+1} - z_i) exp(epsilon0 score_i / (2 Delta))`` by the
    Gumbel-max trick, then a uniform point inside it).

    Examples
    --------
    >>> v = np.arange(1.0, 100.0)
    >>> em = ExponentialMechanism(epsilon=100.0)
    >>> y = smith_quantile(v, 0.5, em, 1.0, 0.0, 100.0, np.random.default_rng(0))
    >>> 49.0 <= y <= 51.0
    True
    """
    scores, edges = smith_pieces(values, q, lower, upper)
    return mechanism.release(scores, sensitivity=sensitivity, rng=rng, edges=edges)


@register_mechanism("exponential_quantile")
@dataclass(frozen=True, repr=False)
class ExponentialQuantile(Algorithm):
    """A private quantile by the exponential mechanism (Smith 2011).

    Utility ``u(x, y) = -|#{x_i < y} - q n|`` for outputs ``y``: under add/remove the
    rank changes by at most 1 and ``q n`` by ``q``, so ``u`` changes by at most
    ``max(q, 1 - q) <= 1`` (sensitivity 1).

    * ``candidates="intervals"`` (default, Smith 2011, Section 3): the output density
      on ``[lower, upper]`` is ``∝ exp(epsilon0 u / 2)`` with respect to length: an
      interval between consecutive sorted points (and the range ends) is drawn with
      probability ``∝ length * exp(-epsilon0 |rank - q n| / 2)``, then a uniform point
      inside it (:func:`smith_quantile`).
    * ``candidates="grid"``: the exponential mechanism over ``grid_size`` equally
      spaced points of the range, with the same utility.

    Privacy.  Both are instances of the exponential mechanism with a sensitivity-1
    utility and exponent ``epsilon0 u / 2``; the privacy loss ``L(y) = (epsilon0 / 2)
    (u(x, y) - u(x', y)) + const`` has range at most ``epsilon0``, so the mechanism is
    ``epsilon0``-bounded-range (Durfee & Rogers 2019), which
    :class:`~dpacct.mechanisms.exponential.ExponentialMechanism` accounts by the tight curves
    of that class.  That is never looser than
    :class:`~dpacct.mechanisms.generic.PureDPMechanism` (also sound, as the mechanism is
    ``epsilon0``-DP) and strictly tighter: for the mechanism alone ``delta(0) =
    tanh(epsilon0/4)`` instead of ``tanh(epsilon0/2)``, and its RDP curve is smaller, so
    compositions are tighter too (one release keeps the exact bounded-range curve;
    several compose through its RDP curve).  Each call of :meth:`quantile` is one such release.

    Parameters
    ----------
    epsilon0 : float
        The pure-DP parameter of the exponential mechanism, > 0 (named as
        ``ExponentialMechanism.epsilon0``: ``epsilon`` is the privacy query method).
    lower, upper : float
        Declared data range, finite, ``lower < upper``; the output lies in it.
    candidates : {'intervals', 'grid'}
    grid_size : int
        Number of grid points for ``candidates="grid"``, >= 2.
    out_of_range : {'raise', 'clip'}
        Data outside ``[lower, upper]``: raise (default) or clip to the range (a
        per-record map: the utility's sensitivity stays 1).

    Examples
    --------
    >>> from dpacct.accountant import compose
    >>> from dpacct.mechanisms.generic import PureDPMechanism
    >>> alg = ExponentialQuantile(epsilon0=1.0, lower=-10.0, upper=10.0)
    >>> bool(alg.delta(0.0) < compose([PureDPMechanism(epsilon=1.0)]).delta(0.0))
    True
    >>> x = np.random.default_rng(0).normal(size=1001)
    >>> med = alg.quantile(x, 0.5, rng=np.random.default_rng(1))
    >>> bool(abs(med - np.median(x)) < 0.05)
    True
    """

    epsilon0: float
    lower: float
    upper: float
    candidates: str = "intervals"
    grid_size: int = 1024
    out_of_range: str = "raise"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon0", check_positive("epsilon0", self.epsilon0))
        lo, hi = check_range(self.lower, self.upper)
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        if self.candidates not in ("intervals", "grid"):
            raise ValueError(f"candidates must be 'intervals' or 'grid', got "
                             f"{self.candidates!r}")
        g = check_count(self.grid_size, "grid_size")
        if g < 2:
            raise ValueError(f"grid_size must be an integer >= 2, got {g}")
        object.__setattr__(self, "grid_size", g)
        object.__setattr__(self, "out_of_range", check_out_of_range(self.out_of_range))

    def planned_releases(self) -> tuple[PlannedRelease, ...]:
        """One ``epsilon0``-bounded-range exponential mechanism, utility sensitivity 1."""
        return (PlannedRelease("quantile", ExponentialMechanism(epsilon=self.epsilon0), 1),)

    def quantile(self, data: object, q: float, *, rng: np.random.Generator) -> float:
        """Release one private ``q``-quantile of ``data`` (one exponential mechanism).

        Parameters
        ----------
        data : array_like
            One-dimensional finite values in ``[lower, upper]`` (``out_of_range``
            decides what happens to others).
        q : float
            Quantile level, in [0, 1].
        rng : numpy.random.Generator
            The source of the noise.

        Examples
        --------
        >>> alg = ExponentialQuantile(epsilon0=2.0, lower=0.0, upper=100.0,
        ...                           candidates="grid", grid_size=101)
        >>> alg.quantile(np.arange(100.0), 0.25, rng=np.random.default_rng(0)) in range(20, 31)
        True
        """
        check_rng(rng)
        qv = check_quantile(q)
        if qv.ndim != 0:
            raise ValueError(f"q must be a scalar in [0, 1] (one release per call), got {q!r}")
        qf = float(qv)
        x = check_data("data", data, self.lower, self.upper, out_of_range=self.out_of_range)
        session = self.releases(rng)
        if self.candidates == "intervals":
            scores, edges = smith_pieces(x, qf, self.lower, self.upper)
            out = session.release("quantile", scores, edges=edges)
        else:
            grid = np.linspace(self.lower, self.upper, self.grid_size)
            ranks = np.searchsorted(np.sort(x), grid, side="left")
            out = float(grid[session.release("quantile", -np.abs(ranks - qf * x.size))])
        session.finish()
        return out

