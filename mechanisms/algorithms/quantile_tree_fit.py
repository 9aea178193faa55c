"""Estimators of a b-ary tree of noisy counts whose padding leaves are known empty.

:class:`~dpacct.mechanisms.algorithms.quantiles.TreeQuantiles` measures only the *real* nodes of
its tree (those covering at least one of its ``bins`` leaves: :func:`real_nodes`), may
give its levels different shares of the privacy budget (:func:`level_shares`), and
reads the counts back by weighted least squares (:func:`tree_least_squares`), which for
a complete tree with equal noise is the estimator of Hay, Rastogi, Miklau, Suciu 2010
(:func:`~dpacct.mechanisms.algorithms.quantiles.hay_consistency`).
"""

from __future__ import annotations

import numpy as np

from dpacct.accountant.validation import as_float_array, check_count

from .quantile_readout import _PURE_NOISES, _check_branching, _check_noise

__all__ = ["level_shares", "real_nodes", "tree_least_squares"]


def _tree_height(bins: int, b: int) -> int:
    """Smallest ``h`` with ``b**h >= bins``."""
    h, cap = 0, 1
    while cap < bins:
        cap *= b
        h += 1
    return h


def real_nodes(bins: int, branching: int, level: int, height: int) -> int:
    """Number of nodes of ``level`` that cover at least one of the ``bins`` real leaves.

    In a ``b``-ary tree of height ``h`` whose first ``bins`` leaves are real (the rest,
    up to ``b^h``, padding), node ``j`` of level ``l`` covers leaves ``[j b^(h-l),
    (j + 1) b^(h-l))``; the first ``ceil(bins / b^(h-l))`` of them cover a real leaf.

    Examples
    --------
    >>> [real_nodes(1000, 25, lvl, 3) for lvl in range(4)]
    [1, 2, 40, 1000]
    """
    span = branching ** (height - level)
    return -(-bins // span)


def tree_least_squares(noisy_levels: list[np.ndarray | None] | tuple[np.ndarray | None, ...],
                       branching: int, bins: int, *,
                       variances: object = None) -> list[np.ndarray]:
    """Least-squares consistent counts of a ``b``-ary tree whose padding leaves are empty.

    The tree has height ``h`` (the smallest with ``b^h >= bins``); only its *real* nodes
    (:func:`real_nodes`: those covering at least one of the ``bins`` real leaves) are
    measured, with independent noise of variance ``variances[l]`` on level ``l``; the
    padding leaves ``bins, ..., b^h - 1`` hold no data (they lie outside the declared
    range), so their counts are known to be zero and are not estimated.  The result is
    the weighted least-squares estimate: the leaf counts ``x`` (padding fixed at 0)
    minimising ``sum_v (y_v - sum_{leaves under v} x)^2 / variances[level(v)]`` over the
    measured nodes ``v``, returned as the consistent counts of every level.  For Gaussian
    noise it is the maximum-likelihood estimate; for any noise with these variances the
    best linear unbiased one (Gauss-Markov).

    It is computed by two passes over the levels (the exact Gaussian message passing on
    a tree, which for a complete tree with equal variances is Hay, Rastogi, Miklau,
    Suciu 2010, Theorem 3, :func:`hay_consistency`):

    * bottom-up, each node gets the estimate ``z`` of its count from the measurements
      in its subtree and that estimate's variance ``V``: a leaf ``z = y``, ``V =
      variances[h]`` (padding ``z = V = 0``); an inner node with children sums ``S =
      sum z_u``, ``W = sum V_u`` has ``z = (y / s + S / W) / (1 / s + 1 / W)``, ``V = 1 /
      (1 / s + 1 / W)`` when measured with variance ``s`` (``z = S``, ``V = 0`` when
      ``W = 0``), and ``z = S``, ``V = W`` when not measured;
    * top-down, the root keeps ``z``; the children of a node with final count ``c``
      share the difference ``c - S`` in proportion to their variances: ``x_u = z_u +
      (c - S) V_u / W``.

    Post-processing of the released counts: it costs no privacy.

    Parameters
    ----------
    noisy_levels : sequence of numpy.ndarray or None
        Level ``l`` (root first, ``h + 1`` levels) holds the noisy counts of its
        ``real_nodes(bins, branching, l, h)`` real nodes, or ``None`` when the level was
        not measured.  The leaf level must be measured.
    branching : int
        The branching factor ``b >= 2``.
    bins : int
        The number of real leaves, ``>= 2``.
    variances : float or sequence of float, optional
        The noise variance of each level (one number for all levels), > 0; default 1.
        Only their ratios matter.

    Returns
    -------
    list of numpy.ndarray
        The consistent counts, level by level, root first, level ``l`` of length
        ``b**l`` (padding nodes exactly 0).

    Examples
    --------
    Three leaves of a binary tree (one padding leaf), every real node measured:

    >>> levels = [np.array([10.0]), np.array([7.0, 2.0]), np.array([3.0, 3.0, 2.0])]
    >>> [lv.round(3).tolist() for lv in tree_least_squares(levels, 2, 3)]
    [[9.385], [7.077, 2.308], [3.538, 3.538, 2.308, 0.0]]
    """
    # long function: 60 of its lines are the docstring (the estimator, its weights and why
    # it is the Hay et al. solution on full trees); the code is one least-squares solve
    b = _check_branching(branching)
    n_bins = check_count(bins, "bins")
    if n_bins < 2:
        raise ValueError(f"bins must be an integer >= 2, got {n_bins}")
    h = _tree_height(n_bins, b)
    levels = list(noisy_levels)
    if len(levels) != h + 1:
        raise ValueError(f"noisy_levels must hold {h + 1} levels (root first) for "
                         f"bins={n_bins}, branching={b}, got {len(levels)}")
    var = np.broadcast_to(as_float_array("variances", 1.0 if variances is None
                                         else variances), (h + 1,))
    if not (np.isfinite(var).all() and (var > 0).all()):
        raise ValueError(f"variances must be finite and > 0, got {variances!r}")
    ys: list[np.ndarray | None] = []
    for lvl, arr in enumerate(levels):
        if arr is None:
            if lvl == h:
                raise ValueError("noisy_levels: the leaf level must be measured")
            ys.append(None)
            continue
        size = real_nodes(n_bins, b, lvl, h)
        a = as_float_array(f"noisy_levels[{lvl}]", arr)
        if a.shape != (size,):
            raise ValueError(f"noisy_levels[{lvl}] must have shape ({size},) (the real "
                             f"nodes) for bins={n_bins}, branching={b}, got {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError(f"noisy_levels[{lvl}] must be finite")
        ys.append(a)

    def child_sums(vals: np.ndarray, lvl: int) -> np.ndarray:
        # sums over the b children of each real node of level lvl (padding children: 0)
        n = real_nodes(n_bins, b, lvl, h)
        full = np.zeros(n * b)
        full[: vals.size] = vals
        return full.reshape(n, b).sum(axis=1)

    z: list[np.ndarray] = [np.empty(0)] * (h + 1)
    v: list[np.ndarray] = [np.empty(0)] * (h + 1)
    z[h] = ys[h]
    v[h] = np.full(ys[h].size, var[h])
    sums: list[np.ndarray] = [np.empty(0)] * h
    wsum: list[np.ndarray] = [np.empty(0)] * h
    for lvl in range(h - 1, -1, -1):
        s, w = child_sums(z[lvl + 1], lvl), child_sums(v[lvl + 1], lvl)
        sums[lvl], wsum[lvl] = s, w
        y = ys[lvl]
        if y is None:
            z[lvl], v[lvl] = s, w
            continue
        known = w == 0.0
        w_safe = np.where(known, 1.0, w)
        prec = 1.0 / var[lvl] + 1.0 / w_safe
        z[lvl] = np.where(known, s, (y / var[lvl] + s / w_safe) / prec)
        v[lvl] = np.where(known, 0.0, 1.0 / prec)
    out: list[np.ndarray] = [np.empty(0)] * (h + 1)
    final = z[0]
    out[0] = final
    for lvl in range(h):
        w = wsum[lvl]
        share = np.where(w > 0, (final - sums[lvl]) / np.where(w > 0, w, 1.0), 0.0)
        kids = z[lvl + 1] + np.repeat(share, b)[: z[lvl + 1].size] * v[lvl + 1]
        full = np.zeros(b ** (lvl + 1))
        full[: kids.size] = kids
        out[lvl + 1] = full
        final = kids
    return out


def level_shares(bins: int, branching: int, *, root_measured: bool,
                 noise: str = "laplace") -> np.ndarray:
    """Shares of the privacy budget for the measured levels of a tree read by prefixes.

    A quantile is read off prefix counts (a cumulative distribution).  A prefix of the
    leaves is the disjoint union of ``d_l`` nodes of each level ``l``, where ``d_l`` is
    the ``l``-th base-``b`` digit of its end, so about ``k_l = (min(m_l, b) - 1) / 2``
    nodes of level ``l`` on average (``m_l`` real nodes, :func:`real_nodes`; a level
    with fewer than ``b`` real nodes -- the first level below the root of a padded
    tree -- is used less).  The root, measured, enters every quantile through the total
    ``q T``; it is given ``k_0 = 1/2`` (a heuristic weight: at the OpenDP tutorial's
    settings the quartile error is flat for ``k_0`` between 1/4 and 1).  Minimising the
    variance ``sum_l k_l Var_l`` of such a prefix at a fixed total budget (the budget
    allocation argument of Cormode, Procopiuc, Srivastava, Shen, Yu 2012, "Differentially
    private spatial decompositions", here in one dimension) gives:

    * Laplace, level ``l`` at ``epsilon_l = w_l epsilon`` (variance ``2 / epsilon_l^2``,
      pure-DP budgets add up): ``w_l ∝ k_l^(1/3)`` (also used for the discrete
      Laplace, whose variance is close to it);
    * Gaussian, level ``l`` at ``rho_l = w_l rho`` (variance ``1 / (2 rho_l)``,
      zero-concentrated budgets add up): ``w_l ∝ k_l^(1/2)``.

    The consistent (least-squares) estimate is not the naive sum of nodes, so this is a
    heuristic; ``python -m benchmarks.algorithms`` measures it against the equal split.

    Parameters
    ----------
    bins : int
        Number of real leaves, >= 1.
    branching : int
        Branching factor, >= 2.
    root_measured : bool
        Whether the root level is measured (it gets a share only then).
    noise : {'laplace', 'gaussian', 'discrete_laplace'}

    Returns
    -------
    numpy.ndarray
        The shares ``w_l`` of the measured levels, root (if measured) first, summing
        to 1.

    Examples
    --------
    >>> level_shares(1000, 25, root_measured=True).round(3).tolist()   # 1, 2, 40, 1000 nodes
    [0.129, 0.129, 0.371, 0.371]
    >>> level_shares(1000, 25, root_measured=True, noise="gaussian").round(3).tolist()
    [0.085, 0.085, 0.415, 0.415]
    """
    n = check_count(bins, "bins")
    b = _check_branching(branching)
    kind = _check_noise(noise)
    h = _tree_height(n, b)
    if h == 0:
        return np.ones(1)
    m = np.array([real_nodes(n, b, lvl, h) for lvl in range(h + 1)], dtype=float)
    k = (np.minimum(m, b) - 1.0) / 2.0
    k[0] = 0.5
    if not root_measured:
        k = k[1:]
    w = k ** (1.0 / 3.0 if kind in _PURE_NOISES else 0.5)
    return w / w.sum()
