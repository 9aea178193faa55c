"""Vectorised certified discretisation of many Poisson-subsampled Gaussian cells.

A discretiser of the PLD engine: every distinct ``(sigma, q)`` cell of a DP-SGD
schedule is discretised at once on one shared loss grid, from closed-form bin masses
(differences of normal CDFs at the loss preimages), pessimistically by
connect-the-dots (Doroshenko et al. 2022, Algorithm 1; :func:`_pessimistic_cells`) or
optimistically by the engine's dominated hull construction
(:mod:`~dpacct.accountant.pld.grid`; :func:`_optimistic_cells`).  The PMFs feed the shared
FFT composition of :mod:`~dpacct.accountant.pld.pld_fft`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..laws.sgm_split import cell_numerators, upper_shares
from ..numerics import SUBNORMAL_FLOOR
from .pld_hull import _decaying_rows, _lower_hull

__all__: list[str] = []


def _loss_of_x(x: np.ndarray, sigma: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Remove-direction loss ``log(1 - q + q exp((2x - 1) / (2 sigma^2)))``."""
    with np.errstate(divide="ignore"):
        return np.logaddexp(np.log1p(-q), np.log(q) + (2 * x - 1) / (2 * sigma**2))


def _spread(values: np.ndarray, cell: np.ndarray, count: np.ndarray | None) -> np.ndarray:
    """Per-cell ``values`` at every node: ``values[cell]``, or (``count``: the nodes of
    each cell, ``cell`` being ``np.repeat(arange, count)``) the same array by
    ``np.repeat``, without a gather through the index array (issue 37, session 34)."""
    return values[cell] if count is None else np.repeat(values, count)


def _x_of_loss(
    a: np.ndarray,
    sigma: np.ndarray,
    q: np.ndarray,
    cell: np.ndarray | None = None,
    count: np.ndarray | None = None,
) -> np.ndarray:
    """Preimage of the remove-direction loss: ``L(x) = a`` (``-inf`` below its range).

    With ``cell`` (each node's cell), ``sigma`` and ``q`` are per cell: their logarithms
    and squares are taken once a cell and gathered to the nodes (the same values as
    taken at every node, each an elementwise function of the same input; ``count``:
    see :func:`_spread`)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if cell is None:
            floor, log_q, s2 = np.log1p(-q), np.log(q), sigma**2
        else:
            floor, log_q, s2 = (
                _spread(v, cell, count) for v in (np.log1p(-q), np.log(q), sigma**2)
            )
        inner = a + np.log1p(-np.exp(floor - a))  # log(e^a - (1 - q)), precise at q = 1
        x = s2 * (inner - log_q) + 0.5
    return np.where(a > floor, x, -np.inf)


#: bins evaluated at once by the vectorised discretisation: bounds its temporaries
#: (about 20 float arrays of this length) whatever the number of cells
BIN_BLOCK = 1 << 18


def _cell_ranges(
    sigma: np.ndarray,
    q: np.ndarray,
    step: float,
    tau: float,
    add: bool,
    pile: np.ndarray | None = None,
):
    """First node and bin count of every cell's grid (see :func:`_cell_bins`).

    With ``pile`` (remove direction), a cell with a finite ``pile[i]`` has its grid
    nodes at ``pile[i] + k * step`` instead (see :func:`_pile_nodes`), from ``pile[i]``
    up: its first node is ``floor(pile[i] / step)``, and :func:`_pile_shift` gives the
    offset of its nodes from the shared grid."""
    if not tau > 0:
        z = 40.0
    elif 1.0 - tau < 1.0:
        z = float(special.ndtri(1.0 - tau))
    else:
        # 1 - tau rounds to 1 (tau below 1.1e-16: a small delta over many steps), where
        # ndtri(1) = inf gave an infinite window and a crash; the upper quantile of tau
        # is -ndtri(tau), exact there
        z = float(-special.ndtri(tau))
    lo_x, hi_x = -sigma * z, 1.0 + sigma * z
    with np.errstate(divide="ignore"):
        floor = np.log1p(-q)
    if not add:
        lo_l = np.maximum(_loss_of_x(lo_x, sigma, q), floor)
        hi_l = _loss_of_x(hi_x, sigma, q)
    else:
        lo_l = -_loss_of_x(hi_x, sigma, q)
        hi_l = np.minimum(-_loss_of_x(lo_x, sigma, q), -floor)
    first = np.floor(lo_l / step).astype(np.int64)
    last = np.maximum(np.ceil(hi_l / step).astype(np.int64), first + 1)
    if pile is not None:
        has = np.isfinite(pile)
        p_first = np.floor(np.where(has, pile, 0.0) / step).astype(np.int64)
        shift = _pile_shift(pile, step)
        p_last = np.ceil((hi_l - shift) / step).astype(np.int64)
        first = np.where(has, p_first, first)
        last = np.where(has, np.maximum(p_last, p_first + 1), last)
    return first, last - first


def _pile_shift(pile: np.ndarray, step: float) -> np.ndarray:
    """Offset in ``[0, step)`` of a pile cell's nodes from the shared grid (0 without)."""
    has = np.isfinite(pile)
    p = np.where(has, pile, 0.0)
    return np.where(has, p - np.floor(p / step) * step, 0.0)


#: the pile node of a cell is searched within this many steps above ``log(1 - q)``
PILE_WIDTH = 16


def _pile_nodes(sigma: np.ndarray, q: np.ndarray, step: float) -> np.ndarray:
    """Per cell, a first node ``o`` whose bin holds the pile at ``log(1 - q)`` as one atom
    *on* the node (``nan`` for ``q = 1``: no floor, no pile).

    The remove-direction loss ``L(x) = log(1 - q + q e^{(2x - 1)/(2 s^2)})`` is bounded
    below by ``log(1 - q)`` and its mass piles up just above that floor (about a third of
    it within ``1e-3`` for ``s = 0.55, q = 0.01``).  The optimistic construction merges
    every bin into one atom and then lowers the nodes of the bin by its chord gap; at
    the lowest node, whose curve is pinned at ``t = 0`` by the total P-mass, that gap
    becomes excess mass moved to the bottom, a first-order bias that compounds over the
    composition (2.7 % of epsilon at a loss step of ``1e-3``).  Merging *everything*
    below ``o + step`` into the first bin ``(o, o + step]`` (a post-processing, so still
    dominated) puts the pile's atom at ``c(o + step) = log(P(L <= o + step) / Q(L <= o +
    step))``; choosing ``o`` as the fixed point ``c(o + step) = o`` (by bisection, from
    below: ``c(o + step) >= o``) puts that atom on the node, where it has no chord gap.
    ``o`` is kept within ``PILE_WIDTH`` steps of the floor (when no fixed point lies
    there, the farthest node: its bin's atom still lies inside the bin).
    """
    has = q < 1.0
    out = np.full(sigma.shape, np.nan)
    if not has.any():
        return out
    s, qq = sigma[has], q[has]
    floor = np.log1p(-qq)

    def atom(y):  # merged loss of {L <= y}, through log-CDFs (no cancellation)
        u = _x_of_loss(y, s, qq) / s
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            ratio = np.exp(special.log_ndtr(u - 1.0 / s) - special.log_ndtr(u))
            return np.log1p(qq * (ratio - 1.0))

    lo, hi = floor.copy(), floor + PILE_WIDTH * step
    beyond = atom(hi + step) >= hi
    for _ in range(48):
        mid = 0.5 * (lo + hi)
        up = atom(mid + step) >= mid
        lo = np.where(up, mid, lo)
        hi = np.where(up, hi, mid)
    o = np.where(beyond, floor + PILE_WIDTH * step, lo)
    # a hair lower: the atom stays at or above the node despite the CDFs' round-off
    out[has] = o - 1e-9 * step
    return out


def _blocks(sizes: np.ndarray, limit: int = BIN_BLOCK) -> list[slice]:
    """Consecutive runs of cells whose summed ``sizes`` stay below ``limit`` (one cell
    at least per run)."""
    ends = np.cumsum(sizes)
    out, start, base = [], 0, 0
    while start < sizes.size:
        stop = int(np.searchsorted(ends, base + limit, side="right"))
        stop = max(stop, start + 1)
        out.append(slice(start, stop))
        base, start = int(ends[stop - 1]), stop
    return out


def _table_blocks(widths: np.ndarray, limit: int) -> list[slice]:
    """Runs of cells (``widths`` sorted increasing) whose padded table -- rows times
    the widest row -- stays below ``limit`` entries (one cell at least per run)."""
    out, start, total = [], 0, widths.size
    while start < total:
        cost = (np.arange(1, total - start + 1)) * widths[start:]
        stop = start + max(int(np.searchsorted(cost, limit, side="right")), 1)
        out.append(slice(start, stop))
        start = stop
    return out


def _normal_pair(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ndtr(u), ndtr(-u))`` from one evaluation: the smaller of the two is computed
    directly (full relative precision), the larger as one minus it (to half an ulp of
    its value, which is at least 1/2)."""
    small = special.ndtr(-np.abs(u))
    big = 1.0 - small
    neg = u < 0
    return np.where(neg, small, big), np.where(neg, big, small)


def _node_cdfs(
    a: np.ndarray,
    sigma: np.ndarray,
    q: np.ndarray,
    cell: np.ndarray,
    add: bool,
    count: np.ndarray | None = None,
    with_x: bool = False,
):
    """``(cum_p, tail_p, cum_q, tail_q)``: the P- and Q-probabilities of ``L <= a`` and
    ``L > a`` at every node ``a`` (``sigma``, ``q``: per cell; ``cell``: each node's;
    ``count``: see :func:`_spread`), from both normal tails (no cancellation); with
    ``with_x``, the nodes' data preimages ``x(a)`` (add: ``x(-a)``) fifth.  Remove
    direction: ``L <= a`` iff ``x <= x(a)``, P the mixture ``(1 - q) N(0, s^2) + q N(1,
    s^2)``, Q ``N(0, s^2)``; add direction: ``-L <= a`` iff ``x >= x(-a)``, P ``N(0,
    s^2)``, Q the mixture."""
    s, qq = _spread(sigma, cell, count), _spread(q, cell, count)
    xx = _x_of_loss(-a if add else a, sigma, q, cell, count)
    f0, s0 = _normal_pair(xx / s)
    f1, s1 = _normal_pair((xx - 1) / s)
    if not with_x:
        del xx
    q0 = _spread(1 - q, cell, count)
    mix_cdf, mix_sf = q0 * f0 + qq * f1, q0 * s0 + qq * s1
    out = (mix_cdf, mix_sf, f0, s0) if not add else (s0, f0, mix_sf, mix_cdf)
    return (*out, xx) if with_x else out


def _bin_masses(cum: np.ndarray, tail: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Mass of every bin between consecutive nodes, from the CDF below the median and
    from the tail above it (the smaller of the two, so no cancellation), the bins
    ``keep`` selects, clipped at zero."""
    d_cum = cum[1:] - cum[:-1]
    d_tail = tail[:-1] - tail[1:]
    return np.maximum(np.where(cum[1:] < 0.5, d_cum, d_tail)[keep], 0.0)


def _joined_bin_masses(cum_p, tail_p, cum_q, tail_q, ends: np.ndarray):
    """``(keep, P masses, Q masses)`` of cells laid end to end on one node array
    (:func:`_node_cdfs`' four arrays; ``ends`` each cell's last node): the bins between
    consecutive nodes of one cell, the pseudo-bins from a cell's last node to the next
    cell's first dropped (``keep`` False), masses by :func:`_bin_masses`."""
    keep = np.ones(cum_p.size - 1, dtype=bool)
    keep[ends[:-1]] = False
    return keep, _bin_masses(cum_p, tail_p, keep), _bin_masses(cum_q, tail_q, keep)


def _cell_bins(
    sigma: np.ndarray,
    q: np.ndarray,
    step: float,
    tau: float,
    add: bool,
    pile: np.ndarray | None = None,
    with_split: bool = False,
):
    """Bin masses of every cell on the shared grid ``a_j = j * step``, vectorised.

    The Poisson-subsampled Gaussian's dominating pair (remove direction)
    ``P = (1 - q) N(0, s^2) + q N(1, s^2)``, ``Q = N(0, s^2)`` has the increasing loss
    ``L(x) = log(1 - q + q e^{(2x - 1)/(2 s^2)})`` with the closed-form preimage
    ``x(a) = s^2 log((e^a - 1 + q)/q) + 1/2`` (Zhu, Dong & Wang 2022, Section 5;
    Koskela et al. 2020, Section 6), so the P- and Q-masses of every bin are
    differences of normal CDFs at ``x(a_j)``: no root finding.  The add direction is
    the swapped pair (loss ``-L(x)``, ``x ~ N(0, s^2)``).  Each cell's grid runs from
    the loss at ``x = -s z`` to the loss at ``x = 1 + s z`` (``z = isf(tau)``; mass
    beyond: at most ``tau`` on each side), clipped to the loss's own range.

    With ``pile`` (:func:`_pile_nodes`; remove direction only) a cell with a finite
    ``pile[i]`` has its nodes at ``pile[i] + k step`` (node index ``k`` plus its
    :func:`_pile_shift`) and everything below its first node is merged into its first
    bin (its bottom masses are then zero).

    Returns the per-cell first node, bin count, and the flat bin arrays ``m`` (P-mass),
    ``n`` (Q-mass) and nodes, plus bottom/top P- and Q-masses per cell; with
    ``with_split``, the bins' split numerators and their error bounds eighth
    (:func:`~dpacct.accountant.laws.sgm_split.cell_numerators`).  The callers
    go through :func:`_blocks` so that the temporaries stay bounded.
    """
    first, nb = _cell_ranges(sigma, q, step, tau, add, pile)
    cell = np.repeat(np.arange(sigma.size), nb + 1)
    starts = np.concatenate([[0], np.cumsum(nb + 1)[:-1]])
    j = np.arange(cell.size) - starts[cell] + first[cell]
    a = j * step
    if pile is not None:
        if add:
            raise ValueError("pile nodes are for the remove direction")
        a = a + _pile_shift(pile, step)[cell]
    cum_p, tail_p, cum_q, tail_q, xx = _node_cdfs(a, sigma, q, cell, add, with_x=True)
    del j
    keep = np.ones(a.size - 1, dtype=bool)
    keep[starts[1:] - 1] = False  # drop the pseudo-bins between cells
    if pile is not None:  # pile cells: everything below the first node in the first bin
        at = starts[np.isfinite(pile)]
        cum_p, cum_q = cum_p.copy(), cum_q.copy()
        tail_p, tail_q = tail_p.copy(), tail_q.copy()
        cum_p[at] = cum_q[at] = 0.0
        tail_p[at] = tail_q[at] = 1.0

    m = _bin_masses(cum_p, tail_p, keep)
    n = _bin_masses(cum_q, tail_q, keep)
    ends = starts + nb
    bottom = (cum_p[starts], cum_q[starts])
    top = (tail_p[ends], tail_q[ends])
    bin_nodes = np.delete(a, ends)  # left node of every bin
    if not with_split:
        return first, nb, m, n, bin_nodes, bottom, top
    if pile is not None:  # a pile cell's first bin holds everything below its node
        raise ValueError("with_split is for grids without pile nodes")
    # each bin's split numerator from its base bin (sgm_split.cell_numerators)
    bc = cell[:-1][keep]
    split = cell_numerators(bin_nodes, xx[:-1][keep], xx[1:][keep], sigma[bc], q[bc], add)
    return first, nb, m, n, bin_nodes, bottom, top, split


def _scaled_q(n: np.ndarray, nodes: np.ndarray, m: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", over="ignore"):
        r = np.where(n > 0, np.exp(np.log(np.maximum(n, SUBNORMAL_FLOOR)) + nodes), 0.0)
    return np.minimum(r, m)


def _pessimistic_cells(sigma, q, step, tau, add):
    """Connect-the-dots PMFs (Doroshenko et al. 2022, Algorithm 1) of every cell.

    Returns ``(first, pmfs, inf_mass)`` with ``pmfs`` a list of arrays (views of one
    flat array).  Cells are discretised in blocks of at most :data:`BIN_BLOCK` bins.
    """
    _, nb_all = _cell_ranges(sigma, q, step, tau, add)
    firsts, flats, infs = [], [], []
    c = -math.expm1(-step)
    for blk in _blocks(nb_all + 1):
        first, nb, m, _, _, bottom, top, split = _cell_bins(
            sigma[blk], q[blk], step, tau, add, with_split=True
        )
        right = upper_shares(split, c, m)
        left = m - right
        # PMF of cell i: nb_i + 1 nodes, at offset starts_i of the flat output
        starts = np.concatenate([[0], np.cumsum(nb + 1)[:-1]])
        pos = np.arange(m.size) + np.repeat(np.arange(nb.size), nb)  # bin j -> node j
        pmf = np.zeros(int(np.sum(nb + 1)))
        pmf[pos] += left  # distinct nodes: plain fancy-index sums
        pmf[pos + 1] += right
        pmf[starts] += bottom[0]  # mass below the grid rounded up onto the first node
        firsts.append(first)
        flats.append((pmf, starts[1:]))
        infs.append(np.asarray(top[0], dtype=float))
    out = [p for pmf, cuts in flats for p in np.split(pmf, cuts)]
    return np.concatenate(firsts), out, np.concatenate(infs)


# long function: one vectorised pass of pld._lower_from_bins over a table of cells; its
# stages share a dozen row-shaped temporaries that splitting would have to pass around
def _optimistic_block(first, nb, m, r, m_top, step):
    """The engine's optimistic grid pair (:func:`~dpacct.accountant.pld.grid._lower_from_bins`
    with no atoms, no mass below the grid and none at +inf) for a block of cells.

    Each cell's bins are a row of a zero-padded table: the padding has no mass, so the
    recurrences (decaying sums, reverse cumulative sums, chord gaps) give every row the
    values of the one-cell computation; the lower convex hulls of all rows are taken at
    once (:func:`~dpacct.accountant.pld.grid._lower_hull` with set numbers) and turned into
    node masses by segment operations.  Returns the flat PMF (``nb_i + 1`` nodes per
    cell, concatenated) before trimming.
    """
    rows = nb.size
    width = int(nb.max())
    col = np.arange(m.size) - np.repeat(np.cumsum(nb) - nb, nb)
    row = np.repeat(np.arange(rows), nb)
    big_m = np.zeros((rows, width))
    big_r = np.zeros((rows, width))
    big_m[row, col] = m
    big_r[row, col] = r
    last = nb - 1
    idx = np.arange(rows)
    # the top tail rounded down onto the last node, the last bin onto its lower node
    big_r[idx, last] = big_m[idx, last]
    e_step = math.exp(step)
    em1 = math.expm1(step)
    c = -math.expm1(-step)

    def deltas(big_r):
        rr = np.zeros((rows, width + 1))
        rr[:, :width] = big_r
        rr[idx, nb] = m_top
        big_f = _decaying_rows(rr, step)
        inc = (big_m - big_r) + c * big_f[:, 1:]
        delta = np.zeros((rows, width + 1))
        delta[:, :width] = np.cumsum(inc[:, ::-1], axis=1)[:, ::-1]
        return delta, big_f

    def gaps(big_r):
        rc = np.clip(big_r, 0.0, big_m)
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = np.where(rc > 0, big_m / rc, e_step)
        rho = np.clip(rho, 1.0, e_step)
        rho = np.where(rho > e_step * (1.0 - 1e-12), e_step, rho)
        return (big_m - rc) * (e_step - rho) / em1

    delta, big_f = deltas(big_r)
    g = gaps(big_r)
    for _ in range(8):
        bad = (g > 0.5 * delta[:, 1:]) & (g > 0)
        if not bad.any():
            break
        big_r = np.where(bad, big_m, big_r)
        delta, big_f = deltas(big_r)
        g = gaps(big_r)
    x = np.zeros((rows, width + 1))
    x[:, :-1] = g
    x[:, 1:] = np.maximum(x[:, 1:], g)
    v = delta - x
    total_p = big_m.sum(axis=1) + m_top
    v[:, 0] = np.minimum(v[:, 0], total_p - big_f[:, 0])
    del big_r, big_f, delta, g, x
    # points of row i: (0, total_p) and (e^{a_j - a_ref}, v_j) for j = 0..nb_i
    npts = nb + 2
    seg = np.repeat(idx, npts)
    pos = np.arange(seg.size) - np.repeat(np.cumsum(npts) - npts, npts)  # 0..nb_i+1
    a_ref = (first + 0.5 * nb) * step
    node = pos - 1
    with np.errstate(over="ignore"):  # only spans beyond 1200 overflow: fallback below
        tx = np.where(pos == 0, 0.0, np.exp((first[seg] + node) * step - a_ref[seg]))
    ty = np.where(pos == 0, total_p[seg], v[seg, np.maximum(node, 0)])
    ty = np.where(np.abs(ty) < 1e-15, 0.0, ty)
    del v
    keep = _lower_hull(tx, ty, seg)
    tk, yk, sk, nk = tx[keep], ty[keep], seg[keep], node[keep]
    # per row: where the hull is cut (first vertex below zero, else its minimum)
    seg_start = np.searchsorted(sk, idx, side="left")
    negs = np.flatnonzero(yk < 0)
    has_neg = np.zeros(rows, dtype=bool)
    cut = np.zeros(rows, dtype=np.int64)
    if negs.size:
        u, at = np.unique(sk[negs], return_index=True)
        has_neg[u] = True
        cut[u] = negs[at] - 1  # last vertex kept: the one before the first negative
    order = np.lexsort((yk, sk))  # per row, the (first) minimum comes first
    kmin = order[seg_start]
    end = np.where(has_neg, cut, kmin)
    # vertices kept: positions seg_start..end of each row
    vpos = np.arange(tk.size)
    kept = vpos <= end[sk]
    # slope from each vertex to the next one of its row (meaningful before `end`)
    dt = np.diff(tk)
    with np.errstate(divide="ignore", invalid="ignore"):
        slopes = np.append(np.diff(yk) / np.where(dt != 0, dt, 1.0), 0.0)
    # the last kept vertex of a row: the slope after it is the cut segment's (has_neg)
    # or zero (the hull is flat after its minimum)
    e = end
    nxt = np.minimum(e + 1, tk.size - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        tc = tk[e] + yk[e] * (tk[nxt] - tk[e]) / (yk[e] - yk[nxt])
        last_slope = np.where(has_neg, slopes[e], 0.0)
    after = np.where(vpos == end[sk], last_slope[sk], slopes)
    before = np.concatenate([[0.0], slopes[:-1]])
    inner = kept & (vpos > seg_start[sk])  # every kept vertex but the point t = 0
    masses = tk * (after - before)
    out_starts = np.concatenate([[0], np.cumsum(nb + 1)[:-1]])
    pmf = np.zeros(int(np.sum(nb + 1)))
    sel = np.flatnonzero(inner)
    pmf[out_starts[sk[sel]] + nk[sel]] += np.maximum(masses[sel], 0.0)  # distinct nodes
    # a hull crossing zero: its kink is an atom off the grid, rounded down to a node
    with np.errstate(divide="ignore", invalid="ignore"):
        extra = tc * (0.0 - last_slope)
        jc = np.floor((np.log(np.where(has_neg, tc, 1.0)) + a_ref) / step + 1e-9) - first
    jc = np.where(np.isfinite(jc), jc, -1).astype(np.int64)
    jc = np.maximum(jc, np.where(nk[e] >= 0, nk[e], -1))
    add = has_neg & (extra > 0) & (jc >= 0) & (jc <= nb)
    pmf[out_starts[add] + jc[add]] += extra[add]
    # no slope at all (the hull is the point t = 0 alone), or a span whose e^(span/2)
    # would overflow: every bin rounded down onto its lower node
    fallback = ((end == seg_start) & ~has_neg) | (nb * step > 1200.0)
    if fallback.any():
        for i in np.flatnonzero(fallback):  # pragma: no cover - degenerate cells
            lo = out_starts[i]
            pmf[lo : lo + nb[i] + 1] = 0.0
            pmf[lo : lo + nb[i]] = m[np.sum(nb[:i]) : np.sum(nb[:i]) + nb[i]]
            pmf[lo + nb[i]] += m_top[i]
    # keep at most the input's P-mass (see pld._from_bins): scale down any excess
    total_out = np.add.reduceat(pmf, out_starts)
    scale = np.where(
        (total_out > total_p) & (total_out > 0),
        total_p / np.where(total_out > 0, total_out, 1.0),
        1.0,
    )
    pmf *= np.repeat(scale, nb + 1)
    return pmf, out_starts


def _optimistic_cells(sigma, q, step, tau, add, pile=None):
    """Dominated grid pairs of every cell: the engine's optimistic construction
    (merged bins, lowered chord gaps, lower convex hull; :mod:`dpacct.accountant.pld.grid`)
    applied to the vectorised bin masses of all cells at once (:func:`_optimistic_block`),
    in blocks of similar length (so little padding) of at most :data:`BIN_BLOCK` bins.

    With ``pile`` (:func:`_pile_nodes`) the cells' grids start at their pile nodes: the
    PMF of cell ``i`` then sits at the losses ``(firsts[i] + k) step + shift[i]``
    (``shift`` from :func:`_pile_shift`), which the caller adds after composing."""
    _, nb_all = _cell_ranges(sigma, q, step, tau, add, pile)
    order = np.argsort(nb_all, kind="stable")
    firsts = np.zeros(sigma.size, dtype=np.int64)
    out: list[np.ndarray | None] = [None] * sigma.size
    for blk in _table_blocks(nb_all[order] + 2, BIN_BLOCK):
        ids = order[blk]
        sub = None if pile is None else pile[ids]
        first, nb, m, n, nodes, _, top = _cell_bins(sigma[ids], q[ids], step, tau, add, sub)
        r = _scaled_q(n, nodes, m)
        pmf, starts = _optimistic_block(first, nb, m, r, np.asarray(top[0], float), step)
        # trim every row to its first and last positive node (segment reductions)
        where = np.arange(pmf.size)
        pos = pmf > 0
        lo = np.minimum.reduceat(np.where(pos, where, pmf.size), starts)
        hi = np.maximum.reduceat(np.where(pos, where, -1), starts)
        empty = hi < 0
        lo = np.where(empty, starts, lo)
        hi = np.where(empty, starts, hi)
        firsts[ids] = first + (lo - starts)
        rows = [pmf[a : b + 1] for a, b in zip(lo.tolist(), hi.tolist(), strict=True)]
        for cid, p in zip(ids.tolist(), rows, strict=True):
            out[cid] = p
    return firsts, out, np.zeros(sigma.size)
