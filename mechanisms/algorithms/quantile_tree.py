"""The b-ary tree of noisy counts with Hay et al. 2010 consistency (:class:`TreeQuantiles`).

Part of :mod:`dpacct.mechanisms.algorithms.quantiles` (see its module docstring for the read-out and
the quantile convention shared with :class:`~dpacct.mechanisms.HistogramQuantiles`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpacct.accountant.serialization import register_mechanism
from dpacct.accountant.validation import (
    as_float_array,
    check_count,
    check_finite,
    check_positive,
    show_value,
)

from .algorithm import Algorithm, PlannedRelease
from .quantile_readout import (
    _PURE_NOISES,
    _check_branching,
    _check_noise,
    _noise_variance,
    _unit_mechanism,
    bin_counts,
    check_out_of_range,
    check_quantile,
    check_range,
    isotonic_counts,
    quantiles_from_counts,
)
from .quantile_tree_fit import _tree_height, level_shares, real_nodes, tree_least_squares

__all__ = [
    "TreeQuantiles",
    "TreeRelease",
    "choose_branching",
    "hay_consistency",
]


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
    top = n if max_branching is None else min(n, _check_branching(max_branching, "max_branching"))
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
    if isinstance(noisy_levels, str | bytes) or not hasattr(noisy_levels, "__iter__"):
        shown = show_value(noisy_levels)
        raise TypeError(f"noisy_levels must be a sequence of arrays, got {shown}")
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
        Noisy counts of the real nodes of each level (those covering at least one real
        bin), root first (the root entry is ``None`` when not measured).
    levels : tuple of numpy.ndarray
        Consistent counts of every node, padding included (exactly 0), root first
        (:func:`~dpacct.mechanisms.algorithms.quantile_tree_fit.tree_least_squares`).

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
    ``b^h``).  Every node holds the count of the records under it.  The hierarchical
    method of Hay, Rastogi, Miklau, Suciu 2010 releases every level with independent
    Laplace / Gaussian noise of scale ``scale`` and makes the counts consistent with
    their least-squares estimator (:func:`hay_consistency`, Theorem 3).  Padding nodes
    (covering no real bin) hold no data whatever the data set, so they are neither
    measured nor estimated: the counts are made consistent by the weighted
    least-squares estimate with the padding fixed at zero
    (:func:`~dpacct.mechanisms.algorithms.quantile_tree_fit.tree_least_squares`, which is Hay et
    al.'s estimator when ``bins`` is a power of ``b``).

    Privacy.  One record changes exactly one count per level by one, so each level is a
    sensitivity-1 histogram release and the algorithm is the composition of ``depth``
    such releases: ``depth = h + 1`` when the root is measured (``measure_root=True``,
    as in Hay et al.), ``h`` when it is not (the default: the root count is the sum of
    its children, and its budget is better spent on the other levels; Qardaji, Yang,
    Li 2013 make the same observation).  A one-bin tree is its root and always measures
    it.  With ``level_budget="uniform"`` every level has noise scale ``scale``; with
    ``"prefix"`` (or explicit weights) level ``l`` gets a share ``w_l`` of the same total
    -- Laplace ``scale_l = scale / (depth w_l)``, so the pure-DP budgets ``1 / scale_l``
    add up to ``depth / scale`` as for the equal split; Gaussian ``scale_l = scale /
    sqrt(depth w_l)``, so ``sum 1 / scale_l^2 = depth / scale^2`` (the same
    zero-concentrated budget) -- and the algorithm is the composition of these
    ``depth`` releases (:attr:`level_scales`).  ``"prefix"`` is
    :func:`~dpacct.mechanisms.algorithms.quantile_tree_fit.level_shares`, the split that minimises
    the noise of a prefix count (a quantile's input; what it gains:
    docs/theory/algorithms.md, section 'Tree quantiles').

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
    noise : {'laplace', 'gaussian', 'discrete_laplace'}
        As in :class:`~dpacct.mechanisms.algorithms.quantiles.HistogramQuantiles` (default Laplace).
    measure_root : bool
        Measure the root level too (default False).
    level_budget : {'uniform', 'prefix'} or sequence of float
        How the levels share the budget: equally (default), by
        :func:`~dpacct.mechanisms.algorithms.quantile_tree_fit.level_shares`, or in proportion to
        ``depth`` positive weights (measured levels, root first).
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
    level_budget: str | tuple = "uniform"

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
        budget = self.level_budget
        if isinstance(budget, str):
            if budget not in ("uniform", "prefix"):
                raise ValueError(f"level_budget must be 'uniform', 'prefix' or a sequence "
                                 f"of {self.depth} positive weights, got {budget!r}")
        else:
            w = as_float_array("level_budget", budget)
            if w.shape != (self.depth,) or not (np.isfinite(w).all() and (w > 0).all()):
                raise ValueError(f"level_budget must be 'uniform', 'prefix' or a sequence "
                                 f"of {self.depth} positive finite weights (one per "
                                 f"measured level, root first), got {budget!r}")
            object.__setattr__(self, "level_budget", tuple(float(v) for v in w))

    @property
    def level_scales(self) -> np.ndarray:
        """Noise scale of each measured level, root (if measured) first.

        Examples
        --------
        >>> alg = TreeQuantiles(lower=0.0, upper=1.0, bins=1000, branching=25, scale=4.0,
        ...                     measure_root=True, level_budget="prefix")
        >>> alg.level_scales.round(2).tolist()      # 1/scale_l add up to 4/4 = 1
        [7.77, 7.77, 2.69, 2.69]
        """
        if isinstance(self.level_budget, str) and self.level_budget == "uniform":
            return np.full(self.depth, self.scale)
        if isinstance(self.level_budget, str):
            w = level_shares(self.bins, self.branching, root_measured=self.root_measured,
                             noise=self.noise)
        else:
            w = np.asarray(self.level_budget) / np.sum(self.level_budget)
        if self.noise in _PURE_NOISES:
            return self.scale / (self.depth * w)
        return self.scale / np.sqrt(self.depth * w)

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
        """``depth`` sensitivity-1 Laplace / Gaussian histogram releases (one per level).

        One line ``"level"`` of ``depth`` releases at ``scale`` for the equal split, else
        one line ``"level l"`` per measured level at its :attr:`level_scales`.
        """
        if isinstance(self.level_budget, str) and self.level_budget == "uniform":
            return (PlannedRelease("level", _unit_mechanism(self.noise, self.scale),
                                   self.depth),)
        top = self.height + 1 - self.depth
        return tuple(PlannedRelease(f"level {top + i}", _unit_mechanism(self.noise, float(sc)), 1)
                     for i, sc in enumerate(self.level_scales))

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
        leaves = np.zeros(b**h, dtype=np.int64 if self.noise == "discrete_laplace" else float)
        leaves[: self.bins] = bin_counts(data, self.lower, self.upper, self.bins,
                                         out_of_range=self.out_of_range)
        top = 0 if self.root_measured else 1
        uniform = isinstance(self.level_budget, str) and self.level_budget == "uniform"
        noisy: list[np.ndarray | None] = [None] * (h + 1)
        for lvl in range(top, h + 1):
            # only the real nodes: a padding node's count is 0 whatever the data
            true = leaves.reshape(b**lvl, -1).sum(axis=1)[: real_nodes(self.bins, b, lvl, h)]
            noisy[lvl] = session.release("level" if uniform else f"level {lvl}", true)
        session.finish()
        if self.bins == 1:
            consistent = [np.asarray(noisy[0], dtype=float)]
        else:
            variances = np.ones(h + 1)
            variances[top:] = _noise_variance(self.noise, self.level_scales)
            consistent = tree_least_squares(noisy, b, self.bins, variances=variances)
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
