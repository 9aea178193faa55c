"""The lower end's fine groups: optimistic cells fine in their bulk, composed, and
re-discretised once onto the composition's loss grid.

The schedule fast path's lower end (:func:`~dpacct.accountant.pld.schedule_fast.
fast_epsilon_bounds` with ``upper=False``) discretises every step by the engine's
optimistic construction (merged bins, lowered chord gaps, lower convex hull:
:func:`~dpacct.accountant.pld.grid._lower_from_bins`), which merges away up to about
``h^2 / 12`` of every step's loss variance at loss step ``h``; over many steps of a
narrow loss (DP-SGD phases with ``q`` of 1e-3 .. 2e-2) that is what holds the bracket
open (1 000 random phases x 10 at ``h = 5e-4``: 3.8e-4 wide, the upper end within 3e-6
of dp_accounting).  Halving ``h`` everywhere costs twice the time a halving, nearly all
of it in the cells' long tails (a loss range of several units a cell, at ``h``).

Here, as the upper end does with connect-the-dots (:mod:`~dpacct.accountant.pld.
split_cells`, :func:`~dpacct.accountant.pld.groups.compose_fine_group`):

* every cell is discretised optimistically on the fine grid ``h / K`` over its bulk
  (the losses of ``x`` up to the point where the mixture has at most
  ``CORE_SHARE / K^2`` of its mass beyond, :func:`~dpacct.accountant.pld.split_cells.
  _core_x`) and on the coarse grid ``h`` over its long tail beyond: the cell's
  P-measure is the sum of the two restrictions, each turned into a dominated grid
  pair by the engine's construction on its own uniform grid (a hull over the bulk's
  bins, a hull over the tail's), and the sum of dominated sub-measures is dominated
  by the sum (the hockey-stick curve ``sum_i p_i (1 - e^{eps - l_i})_+`` is additive
  over atoms, and composition is linear in it);
* a group of cells is composed on its own Chernoff window at ``h / K``
  (:func:`~dpacct.accountant.pld.groups._compose_group`, its aliasing and round-off
  an l1 error ``err`` carried into the certificate as the tree carries every group's)
  and re-discretised once onto ``h`` by the engine's optimistic re-grid
  (:meth:`~dpacct.accountant.pld.grid.GridPLD.regrid`, dominated by its input; the
  input is the computed non-negative PMF, which differs from the exact composition by
  an l1 measure of at most ``err``, so composing the re-grid with anything moves the
  hockey-stick value by at most ``err`` times the other's mass beyond domination --
  the same argument as the tree's, docs/theory/schedules.md, "The lower end's fine
  groups").

The pile nodes (:func:`~dpacct.accountant.pld.sgm_cells._pile_nodes`, chosen for the
fine step) shift every cell's grid off the shared one; a group's summed shift is split
into whole fine steps (moved into its PMF's first node) and a rest in ``[0, h / K)``,
returned for the caller to add at the end (:func:`~dpacct.accountant.pld.
schedule_fast._shifted_epsilon`).

Speed and tightness only: every ``K`` and every split is certified.  Nothing here was
taken from a paper beyond what the engine's optimistic construction and the tree
already rest on; the additivity of the curve over sub-measures is elementary.
"""

from __future__ import annotations

import math

import numpy as np

from .grid import GridPLD
from .groups import Segment, _compose_group
from .sgm_cells import (
    _blocks,
    _cell_ranges,
    _joined_bin_masses,
    _loss_of_x,
    _node_cdfs,
    _optimistic_block,
    _pile_shift,
    _scaled_q,
    _table_blocks,
)
from .split_cells import _core_x

__all__ = ["optimistic_fine_group", "split_optimistic_cells"]

#: a cell's fine bulk ends where the mixture has at most this much of its P-mass beyond
#: (:func:`_split_ranges`); the tail beyond is discretised on the coarse step.  Each cell
#: is split into two sub-measures, and the tail's lowest coarse bin carries a first-order
#: bias (its chord gap at the sub-measure's lowest node), so the share is small: 1 000
#: random phases x 10 at ``h = 1e-3``, ``K = 8``: lower end 5.319792 at 1e-3, 5.320067
#: at 1e-4 (1.62 s), 5.320092 at 1e-5 (2.26 s); on 100 phases x 10 at ``K = 1`` the
#: split at 1e-3 lost 2.5e-5 relative against no split and at 1e-5 nothing (session 32,
#: one loaded run each)
LOWER_CORE_SHARE = 1e-4


def _split_ranges(sigma, q, step, factor, tau, pile):
    """Per cell (remove direction, pile nodes at the fine step): its first fine node,
    fine bins up to the cut (a whole coarse node) and coarse bins beyond."""
    fine = step / factor
    f_first, f_nb = _cell_ranges(sigma, q, fine, tau, False, pile)
    f_last = f_first + f_nb
    core_l = _loss_of_x(_core_x(sigma, q, LOWER_CORE_SHARE), sigma, q)
    cut = np.ceil(core_l / step).astype(np.int64) * factor
    cut = np.clip(cut, f_first + 1, np.maximum(f_last, f_first + 1))
    # the cut on a whole coarse node at or above the fine range's end, when clipped
    cut = -((-cut) // factor) * factor
    n_fine = cut - f_first
    n_coarse = np.maximum(-((cut - f_last) // factor), 1)
    return f_first, n_fine, n_coarse, cut


def _split_optimistic_block(sigma, q, step, factor, tau, pile):
    """Optimistic PMFs (on the fine grid) of one block of cells: ``(firsts, pmfs)``."""
    fine = step / factor
    first, n_fine, n_coarse, cut = _split_ranges(sigma, q, step, factor, tau, pile)
    count = n_fine + n_coarse + 1  # nodes: fine ones up to the cut, coarse ones beyond
    cells = np.arange(sigma.size)
    cell = np.repeat(cells, count)
    starts = np.cumsum(count) - count
    k = np.arange(cell.size) - starts[cell]
    d = n_fine[cell]
    nodes = np.where(k <= d, first[cell] + k, cut[cell] + (k - d) * factor)
    shift = _pile_shift(pile, fine)
    a = nodes * fine + shift[cell]
    cum_p, tail_p, cum_q, tail_q = _node_cdfs(a, sigma, q, cell, False)
    # everything below a cell's first node merged into its first bin (the pile)
    has = np.isfinite(pile)
    at = starts[has]
    cum_p[at] = cum_q[at] = 0.0
    tail_p[at] = tail_q[at] = 1.0
    ends = starts + count - 1
    keep, m, n = _joined_bin_masses(cum_p, tail_p, cum_q, tail_q, ends)
    left = a[:-1][keep]
    r = _scaled_q(n, left, m)
    bin_cell = cell[:-1][keep]
    bin_k = k[:-1][keep]
    in_bulk = bin_k < n_fine[bin_cell]
    top = np.asarray(tail_p[ends], dtype=float)
    # the bulk: fine bins from the first node to the cut, nothing above (the tail is the
    # other sub-measure); the tail: coarse bins from the cut, the cut tail on its top
    bulk_pmf, bulk_starts = _optimistic_block(
        first, n_fine, m[in_bulk], r[in_bulk], np.zeros(sigma.size), fine
    )
    tail_pmf, tail_starts = _optimistic_block(
        cut // factor, n_coarse, m[~in_bulk], r[~in_bulk], top, step
    )
    firsts = first.copy()
    pmfs = []
    for i in range(sigma.size):
        nf, nc = int(n_fine[i]), int(n_coarse[i])
        out = np.zeros(nf + nc * factor + 1)
        out[: nf + 1] = bulk_pmf[bulk_starts[i] : bulk_starts[i] + nf + 1]
        out[nf :: factor] += tail_pmf[tail_starts[i] : tail_starts[i] + nc + 1]
        nz = np.flatnonzero(out)
        if nz.size == 0:
            pmfs.append(np.zeros(1))
            continue
        firsts[i] = first[i] + int(nz[0])
        pmfs.append(out[nz[0] : nz[-1] + 1])
    return firsts, pmfs


def split_optimistic_cells(sigma, q, step, factor, tau, pile):
    """Dominated (optimistic) PMFs of subsampled-Gaussian cells (remove direction) on
    the fine grid ``step / factor``, fine over their bulk and ``factor`` fine steps
    apart over their long tail (see the module docstring), in blocks of bounded size.

    ``pile``: the cells' pile nodes at the fine step (:func:`~dpacct.accountant.pld.
    sgm_cells._pile_nodes`); cell ``i``'s PMF sits at the losses ``(firsts[i] + k) *
    step / factor + shift[i]`` (``shift`` from :func:`~dpacct.accountant.pld.sgm_cells.
    _pile_shift` at the fine step).  Returns ``(firsts, pmfs)``.

    Examples
    --------
    >>> from dpacct.accountant.pld.sgm_cells import _pile_nodes
    >>> s, qq = np.array([1.0]), np.array([0.01])
    >>> firsts, pmfs = split_optimistic_cells(s, qq, 1e-3, 4, 1e-12, _pile_nodes(s, qq, 2.5e-4))
    >>> bool(0.999 < pmfs[0].sum() <= 1.0)
    True
    """
    sigma = np.asarray(sigma, dtype=float)
    q = np.asarray(q, dtype=float)
    _, n_fine, n_coarse, _ = _split_ranges(sigma, q, step, factor, tau, pile)
    sizes = n_fine + n_coarse + 2
    order = np.argsort(sizes, kind="stable")
    firsts = np.zeros(sigma.size, dtype=np.int64)
    out: list[np.ndarray | None] = [None] * sigma.size
    for blk in _table_blocks(sizes[order], 1 << 18):
        ids = order[blk]
        for sub in _blocks(sizes[ids]):
            sel = ids[sub]
            f, p = _split_optimistic_block(sigma[sel], q[sel], step, factor, tau, pile[sel])
            firsts[sel] = f
            for cid, pm in zip(sel.tolist(), p, strict=True):
                out[cid] = pm
    return firsts, out


def optimistic_fine_group(sigma, q, counts, step, factor, tau, pile, alias_budget):
    """The cells ``(sigma[i], q[i])``, ``counts[i]`` steps each, discretised by
    :func:`split_optimistic_cells` at ``step / factor``, composed on the group's own
    window (:func:`~dpacct.accountant.pld.groups._compose_group`) and re-discretised
    once onto ``step`` by the engine's optimistic re-grid: ``(Segment, shift)``, the
    group's dominated PMF on the ``step`` grid (``log_fin`` 0: nothing at ``+inf``) with
    its l1 error bound, and the rest ``shift`` in ``[0, step / factor)`` of its summed
    pile shift (its losses are ``shift`` larger than its grid says), or ``None`` when
    the fine window would be too long.

    Examples
    --------
    Forty steps of sigma 1, q 0.02 on a 1e-3 grid, composed at 1.25e-4: the group's
    delta at epsilon 1 (its error term taken off) is within 1e-4 of dp_accounting's
    pessimistic 1.72099e-05 (interval 1e-5), and below it.

    >>> from dpacct.accountant.pld.sgm_cells import _pile_nodes
    >>> s, qq = np.array([1.0]), np.array([0.02])
    >>> seg, rest = optimistic_fine_group(
    ...     s, qq, np.array([40.0]), 1e-3, 8, 1e-13, _pile_nodes(s, qq, 1.25e-4), 1e-13)
    >>> loss = (seg.first + np.arange(seg.pmf.size)) * 1e-3 + rest
    >>> d = float(np.sum(seg.pmf * np.maximum(-np.expm1(1.0 - loss), 0.0))) - seg.err
    >>> bool(1.72099e-05 * (1 - 1e-4) < d < 1.72099e-05)
    True
    """
    fine = step / factor
    counts = np.asarray(counts, dtype=float)
    firsts, pmfs = split_optimistic_cells(sigma, q, step, factor, tau, pile)
    seg = _compose_group(fine, firsts, pmfs, counts, alias_budget)
    del pmfs
    if seg is None:
        return None
    total = float(counts @ _pile_shift(pile, fine))
    whole = math.floor(total / fine)
    rest = total - whole * fine
    if rest < 0.0 or rest >= fine:  # pragma: no cover - round-off at a node
        rest = min(max(rest, 0.0), fine)
    coarse = GridPLD(fine, int(seg.first) + whole, seg.pmf, 0.0, False).regrid(step)
    return Segment(int(coarse.offset), coarse.pmf, seg.err, 0.0), rest
