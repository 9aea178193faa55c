"""Connect-the-dots cells fine in their bulk and coarse in their long tail.

A subsampled-Gaussian step's privacy loss is concentrated within a few ``q`` of zero,
but its range runs out to a few loss units on one side (the remove direction's large
``x``, the add direction's mirror): at a fine step ``h / K`` almost all of a cell's bins
hold the long tail's tiny mass.  Connect-the-dots (Doroshenko et al. 2022, Algorithm 1)
is a dominating discretisation for *any* set of nodes -- each bin between two
consecutive nodes ``a < b`` sends its P-mass ``m`` and Q-mass ``n`` to ``a`` and ``b``
with ``p_b = (m - e^a n) / (1 - e^{-(b - a)})``, ``p_a = m - p_b``, which keeps both
masses and is a mean-preserving spread of ``e^{-loss}`` inside the bin (the argument of
:mod:`~dpacct.accountant.pld.coarsen`) -- so the cells here take fine nodes
(``h / K``) over their bulk, the losses of ``x`` up to the bulk's end, and coarse
nodes (``h``, every ``K``-th fine node) over the long tail beyond.  The widening of the
loss is ``(h / K)^2 / 4`` per unit of mass in the bulk and ``h^2 / 4`` per unit of the
tail's mass (at most :data:`CORE_SHARE` ``/ K^2`` of the P- and Q-mass there), for a
fraction of the fine cell's bins.  :func:`split_fine_group` composes such cells like
:func:`~dpacct.accountant.pld.groups.compose_fine_group`.
"""

from __future__ import annotations

import math  # noqa: F401 (doctest namespace)

import numpy as np
from scipy import special

from ..laws.sgm_split import cell_numerators, upper_shares
from .groups import Segment, coarsened_group
from .sgm_cells import (
    _blocks,
    _cell_ranges,
    _joined_bin_masses,
    _loss_of_x,
    _node_cdfs,
)

__all__: list[str] = []


#: the fine nodes of a cell cover the losses of ``x <= x_c`` (remove direction; the add
#: direction's mirror), ``x_c`` the smallest ``x`` beyond which the mixture ``(1 - q)
#: N(0, s^2) + q N(1, s^2)`` (and so ``N(0, s^2)``) has at most ``CORE_SHARE / factor^2``
#: of its mass: the coarse tail then widens the loss by at most ``CORE_SHARE`` times
#: what the fine bulk does
CORE_SHARE = 0.1


def _core_x(sigma: np.ndarray, q: np.ndarray, share: float) -> np.ndarray:
    """Smallest ``x`` (to bisection precision, from above) with ``(1 - q) ndtr(-x / s) +
    q ndtr((1 - x) / s) <= share``: the end of a cell's fine bulk."""
    lo = -10.0 * sigma
    hi = 1.0 + 10.0 * sigma
    keep = 1 - q  # (the same array at every step: made once)
    for _ in range(24):  # to 2^-24 of the bracket: far below a coarse bin
        mid = 0.5 * (lo + hi)
        tail = keep * special.ndtr(-mid / sigma) + q * special.ndtr((1 - mid) / sigma)
        over = tail > share
        lo = np.where(over, mid, lo)
        hi = np.where(over, hi, mid)
    return hi


def _split_nodes(
    sigma: np.ndarray, q: np.ndarray, step: float, factor: int, tau: float, add: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per cell, its first fine node, node count, and the flat fine-grid node indices.

    Returns ``(first, count, cell, nodes)``: cell ``i`` has ``count[i]`` nodes, fine
    indices ``nodes[cell == i]`` increasing from ``first[i]``; consecutive nodes are one
    fine step apart in the bulk and ``factor`` fine steps apart in the tail.  The
    node range covers the fine cell's range (:func:`~dpacct.accountant.pld.sgm_cells.
    _cell_ranges`, tail beyond ``tau``), widened to whole coarse bins on the tail side.
    """
    fine = step / factor
    f_first, f_nb = _cell_ranges(sigma, q, fine, tau, add)
    f_last = f_first + f_nb
    core_l = _loss_of_x(_core_x(sigma, q, CORE_SHARE / factor**2), sigma, q)
    if not add:
        cut = np.ceil(core_l / step).astype(np.int64) * factor
        cut = np.clip(cut, f_first, f_last)
        n_fine = cut - f_first  # fine bins, then coarse bins up to past f_last
        n_coarse = -((cut - f_last) // factor)
        first = f_first
    else:
        cut = np.floor(-core_l / step).astype(np.int64) * factor
        cut = np.clip(cut, f_first, f_last)
        n_coarse = -((f_first - cut) // factor)
        n_fine = f_last - cut
        first = cut - n_coarse * factor
    count = n_fine + n_coarse + 1
    cell = np.repeat(np.arange(sigma.size), count)
    k = np.arange(cell.size) - np.repeat(np.cumsum(count) - count, count)
    if not add:
        d = n_fine[cell]
        nodes = np.where(k <= d, first[cell] + k, cut[cell] + (k - d) * factor)
    else:
        d = n_coarse[cell]
        nodes = np.where(k <= d, first[cell] + k * factor, cut[cell] + (k - d))
    return first, count, cell, nodes


def _split_block(sigma, q, step, factor, tau, add, split=None):
    """:func:`split_cells` of one block of cells: ``(first, pmfs, infs)`` (``split``: its
    :func:`_split_nodes`, if already computed)."""
    fine = step / factor
    first, count, cell, nodes = split or _split_nodes(sigma, q, step, factor, tau, add)
    a = nodes * fine
    cum_p, tail_p, cum_q, tail_q, xx = _node_cdfs(a, sigma, q, cell, add, count, with_x=True)
    starts = np.cumsum(count) - count
    ends = starts + count - 1
    keep, m, _ = _joined_bin_masses(cum_p, tail_p, cum_q, tail_q, ends)
    left_node = nodes[:-1][keep]
    right_node = nodes[1:][keep]
    width = (right_node - left_node) * fine
    # the split numerators from the base bins (sgm_split.cell_numerators; the difference
    # of the masses cancels at a fine step)
    bc = cell[:-1][keep]
    split = cell_numerators(a[:-1][keep], xx[:-1][keep], xx[1:][keep], sigma[bc], q[bc], add)
    right = upper_shares(split, -np.expm1(-width), m)
    left = m - right
    # cell i's PMF: fine nodes first[i] .. last node, at offset base[i] of the flat array
    lengths = nodes[ends] - first + 1
    base = np.cumsum(lengths) - lengths
    # each kept bin's cell offset: a cell's count - 1 bins are kept, in cell order, so
    # ``(base - first)[cell[:-1][keep]]`` is this repeat (the same integers)
    off = np.repeat(base - first, count - 1)
    # every node is the left end of at most one bin and the right end of at most one:
    # each entry is ``0 + left + right`` in that order, summed by one bincount pass as
    # the two fancy-index sums ``pmf[l] += left; pmf[r] += right`` on zeros form it,
    # without their gathers (the scatter 15 % faster; issue 37, session 33)
    pmf = np.bincount(
        np.concatenate([left_node + off, right_node + off]),
        weights=np.concatenate([left, right]),
        minlength=int(lengths.sum()),
    )
    pmf[base] += cum_p[starts]  # mass below the grid rounded up onto the first node
    return first, np.split(pmf, base[1:]), np.asarray(tail_p[ends], dtype=float)


def split_cells(
    sigma: np.ndarray, q: np.ndarray, step: float, factor: int, tau: float, add: bool
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """Connect-the-dots PMFs of subsampled-Gaussian cells on the grid ``step / factor``,
    with nodes only every ``factor`` fine steps in the long tail.

    Same output as :func:`~dpacct.accountant.pld.sgm_cells._pessimistic_cells` at
    ``step / factor`` (``(first, pmfs, infs)``: fine node of each PMF's first entry, the
    PMFs, the P-mass cut beyond the last node, which goes to ``+inf``), and dominating
    for the same reason; only the nodes beyond the bulk (:data:`CORE_SHARE`) are coarse.
    Cells are discretised in blocks of bounded size.

    Examples
    --------
    The P-mass is one up to the cut tail, the Q-mass (``sum p e^{-loss}``) at most one,
    and the tail's nodes are ``factor`` fine steps apart.

    >>> first, pmfs, infs = split_cells(
    ...     np.array([1.0]), np.array([0.01]), 1e-3, 8, 1e-12, False)
    >>> loss = (first[0] + np.arange(pmfs[0].size)) * 1e-3 / 8
    >>> bool(abs(pmfs[0].sum() + infs[0] - 1) < 1e-12)
    True
    >>> bool(np.sum(pmfs[0] * np.exp(-loss)) <= 1 + 1e-12)
    True
    >>> nz = np.flatnonzero(pmfs[0])
    >>> bool(np.all(np.diff(nz[-50:]) == 8) and np.all(np.diff(nz[:50]) == 1))
    True
    """
    if not (isinstance(factor, int | np.integer) and factor >= 1 and factor & (factor - 1) == 0):
        raise ValueError(f"factor must be a power of two >= 1, got {factor!r}")
    sigma = np.asarray(sigma, dtype=float)
    q = np.asarray(q, dtype=float)
    return _by_blocks(sigma, q, step, factor, tau, add, _split_nodes)


def _by_blocks(sigma, q, step, factor, tau, add, nodes):
    """The cells ``(sigma, q)`` discretised by connect-the-dots on the node sets
    ``nodes(sigma, q, step, factor, tau, add)`` gives (:func:`_split_nodes`, or the
    graded cells' levels), in blocks of at most :data:`~dpacct.accountant.pld.
    sgm_cells.BIN_BLOCK` nodes: ``(first, pmfs, infs)``."""
    split = nodes(sigma, q, step, factor, tau, add)
    blocks = _blocks(split[1])
    if len(blocks) == 1:
        return _split_block(sigma, q, step, factor, tau, add, split)
    firsts, pmfs, infs = [], [], []
    for blk in blocks:
        sub = nodes(sigma[blk], q[blk], step, factor, tau, add)
        f, p, i = _split_block(sigma[blk], q[blk], step, factor, tau, add, sub)
        firsts.append(f)
        pmfs.extend(p)
        infs.append(i)
    return np.concatenate(firsts), pmfs, np.concatenate(infs)


def split_fine_group(
    sigma: np.ndarray,
    q: np.ndarray,
    counts: np.ndarray,
    step: float,
    factor: int,
    tau: float,
    add: bool,
    alias_budget: float,
) -> Segment | None:
    """:func:`~dpacct.accountant.pld.groups.compose_fine_group` with the cells of
    :func:`split_cells`: composed at ``step / factor`` on the group's own Chernoff
    window, re-discretised once onto ``step`` (:func:`~dpacct.accountant.pld.coarsen.
    coarsen`).  Returns the :class:`~dpacct.accountant.pld.groups.Segment` ``(first,
    pmf, err, log_fin)`` on the ``step`` grid, or ``None``
    when the fine window would be too long.

    Examples
    --------
    >>> seg = split_fine_group(
    ...     np.array([1.0]), np.array([0.01]), np.array([300.0]), 1e-3, 8, 1e-14, False,
    ...     1e-12)
    >>> bool(abs(seg.pmf.sum() - math.exp(seg.log_fin)) < 1e-9 and seg.err < 1e-9)
    True
    """
    cells = split_cells(sigma, q, step, factor, tau, add)
    return coarsened_group(cells, counts, step, factor, alias_budget)
