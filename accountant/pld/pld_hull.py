"""Shared numerical kernels of the PLD engine: lower convex hulls and decaying sums.

The optimistic (lower-bound) discretisation of :mod:`~dpacct.accountant.pld.grid` and the
vectorised subsampled-Gaussian cells of :mod:`~dpacct.accountant.pld.sgm_cells` fit a
convex piecewise-linear curve below a pair's hockey-stick curve (its lower convex hull)
and need the sums ``sum_{i >= j} x_i e^{-rate (i - j)}`` with full relative precision;
both are here, once.
"""

from __future__ import annotations

import numpy as np

__all__: list[str] = []


def _lower_hull(x: np.ndarray, y: np.ndarray, seg: np.ndarray | None = None) -> np.ndarray:
    """Indices of the lower convex hull of points sorted by ``x`` (vectorised passes).

    A point strictly above the chord of two other points (one on each side) is not a
    hull vertex, so every pass removes, at once, each tested point above the chord of
    the points ``d`` places to its left and right among those left (and of its
    neighbour on one side and the point ``d`` places away on the other: the tangent
    to a point lowered below a convex run removes the whole run at once).  The stride
    ``d`` doubles while passes remove points and starts again from 1 when one removes
    none.  Only points near a removal are tested again (a point's neighbour test
    changes only when a neighbour goes); when a stride-1 pass over them removes
    nothing, every consecutive triple is convex: the chain is the lower hull.

    ``seg`` (optional) gives the hulls of many point sets at once: the sets are
    concatenated, ``seg`` is the non-decreasing set number of every point (each set
    sorted by ``x``), and a point is only tested against the chord of two points of
    its own set, so each set keeps its ends and ends as its own lower hull.
    """
    keep = np.arange(x.size)
    dirty = np.ones(x.size, dtype=bool)
    d = 1
    for _ in range(4000):
        n = keep.size
        if n < 3:
            return keep
        d = d if 2 * d < n else 1
        cand = np.flatnonzero(dirty[1:-1]) + 1
        if d == 1:
            dirty[cand] = False  # tested now; re-marked below if a neighbour goes
        drop = np.zeros(n, dtype=bool)
        strides = ((d, d),) if d == 1 else ((d, d), (1, d), (d, 1))
        removed = 0
        for left, right in strides:
            # cand is sorted: the points with both chord ends inside, by bisection
            lo, hi = np.searchsorted(cand, (left, n - right))
            i = cand[lo:hi]
            a, b, c = keep[i - left], keep[i], keep[i + right]
            if seg is not None:  # chords only within one set
                same = seg[a] == seg[c]
                i, a, b, c = i[same], a[same], b[same], c[same]
            # point b is removed when it lies strictly above the chord from a to c
            xa, ya = x[a], y[a]
            above = (y[b] - ya) * (x[c] - xa) > (y[c] - ya) * (x[b] - xa)
            gone = i[above]
            removed += gone.size
            drop[gone] = True
        if removed:
            survivors = ~drop
            # position (among the survivors) just after each removed point: the
            # removed position less the number of removed points before it
            gone = np.flatnonzero(drop)
            after = gone - np.arange(gone.size)
            keep, dirty = keep[survivors], dirty[survivors]
            reach = 2 * d + 1
            size = keep.size
            # survivors within reach of a removal are tested again: the ranges
            # [after - reach, after + reach), clipped to the chain
            starts = np.clip(after - reach, 0, size)
            ends = np.clip(after + reach, 0, size)
            if gone.size * 2 * reach <= size:
                # few short ranges: their positions themselves (O(removed * reach)
                # instead of three passes over the whole chain; the same set)
                lens = ends - starts
                shift = np.repeat(starts - (np.cumsum(lens) - lens), lens)
                dirty[np.arange(int(lens.sum())) + shift] = True
            else:
                # +1 at the start of each range, -1 past its end
                mark = np.bincount(starts, minlength=size + 1)
                mark -= np.bincount(ends, minlength=size + 1)
                dirty |= np.cumsum(mark)[:-1] > 0
            d *= 2
        elif d == 1:
            return keep
        else:
            d = 1
    # pragma: no cover - pathological inputs: the sequential chain, set by set
    if seg is None:  # pragma: no cover
        return _lower_hull_chain(x, y)
    parts = np.split(np.arange(x.size), np.flatnonzero(np.diff(seg)) + 1)  # pragma: no cover
    return np.concatenate([p[_lower_hull_chain(x[p], y[p])] for p in parts])  # pragma: no cover


def _lower_hull_to_min(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The lower hull of points sorted by increasing ``x``, up to the first index
    ``k`` of ``min(y)``: the vertices of :func:`_lower_hull` up to ``k``.

    Three exact reductions come first (proofs in docs/theory/pld.md, "Lower bound: the
    optimistic construction"): the points right of ``k`` are dropped (they never
    change the hull's part up to ``k``); the hull's edge into ``k`` starts at a
    maximiser ``J`` of ``slope(j, k)`` over ``j < k`` and the one out of point 0 ends
    at a minimiser of ``slope(0, j)`` (both are supporting lines), so the points
    between the ends of either edge that lie strictly above it are not on the hull
    and are dropped before the passes; when no point is then above its neighbours'
    chord, the chain is the hull.  (When two points up to ``k`` share one ``x``, e.g.
    ``t = e^l`` on steps below the unit round-off, the slopes are undefined and the
    passes alone run.)  Measured (issue 37, the 22 and 40 hulls of the optimistic
    side of ``epsilon_bounds`` on DP-SGD at T 1e4 and 1e6): 12.2 -> 7.3 ms and 25.7
    -> 17.7 ms CPU, the same vertices on every one.  The strided passes peel a long
    run ending at a low last point a few points per cycle of passes (147 passes on
    one of them); the tangent removes it at once.
    """
    if y.size == 0:
        return np.arange(0)
    k = int(np.argmin(y))
    if not np.all(x[1 : k + 1] > x[:k]):
        # equal abscissae (t = e^l of steps below the unit round-off): the slopes are
        # undefined, so the passes on all the points, cut at the first minimum
        hull = _lower_hull(x, y)
        return hull[: int(np.argmin(y[hull])) + 1]
    x, y = x[: k + 1], y[: k + 1]
    # the chain's positions, None while they are all of 0 .. k; the chain's points are
    # copied as slices (a gather per point costs ten times a copied one)
    pos = None
    xs, ys = x, y
    if k >= 2:
        # the edge into k: from the last maximiser J of slope(j, k)
        s = (y[k] - y[:k]) / (x[k] - x[:k])
        j_in = k - 1 - int(np.argmax(s[::-1]))
        del s  # (dead: freed before the chain's copies, issue 37 session 36)
        if j_in < k - 1:
            on = (y[j_in + 1 : k] - y[j_in]) * (x[k] - x[j_in]) <= (y[k] - y[j_in]) * (
                x[j_in + 1 : k] - x[j_in]
            )
            if not on.all():
                # the kept points by one mask: the same points in the same order as
                # the concatenated pieces, without their index and gathered copies
                # (issue 37, session 36: fewer temporaries of the bulk's size)
                keep = np.ones(k + 1, dtype=bool)
                keep[j_in + 1 : k] = on
                pos = np.flatnonzero(keep)
                xs, ys = x[keep], y[keep]
    if xs.size >= 3:
        # the edge out of point 0: to the last minimiser of slope(0, j)
        s = (ys[1:] - ys[0]) / (xs[1:] - xs[0])
        j_out = s.size - int(np.argmin(s[::-1]))  # a position in the chain
        del s
        if j_out > 1:
            on = (ys[1:j_out] - ys[0]) * (xs[j_out] - xs[0]) <= (ys[j_out] - ys[0]) * (
                xs[1:j_out] - xs[0]
            )
            if not on.all():
                keep = np.ones(xs.size, dtype=bool)
                keep[1:j_out] = on
                pos = np.flatnonzero(keep) if pos is None else pos[keep]
                xs, ys = xs[keep], ys[keep]
    if xs.size >= 3:
        # the passes' first test (every point against its neighbours' chord) on
        # slices: when it removes nothing the chain is already the hull
        lhs = (ys[1:-1] - ys[:-2]) * (xs[2:] - xs[:-2])
        bad = np.flatnonzero(lhs > (ys[2:] - ys[:-2]) * (xs[1:-1] - xs[:-2]))
        if not bad.size:
            return np.arange(k + 1) if pos is None else pos
        hull = _repair_hull(xs, ys, bad + 1)
    else:
        hull = _lower_hull(xs, ys)
    return hull if pos is None else pos[hull]


#: :func:`_repair_hull` hands a window longer than this to the vectorised passes
_CHAIN_MAX = 4096


def _strict_chain(xs: list, ys: list) -> list:
    """Andrew's monotone chain on Python floats, popping a point only when it lies
    *strictly* above the chord of its neighbours (collinear points are kept, as the
    passes of :func:`_lower_hull` keep them); the same predicate, evaluated the same
    way, as :func:`_lower_hull`'s test."""
    h: list = []
    for i in range(len(xs)):
        xi, yi = xs[i], ys[i]
        while len(h) >= 2:
            a, b = h[-2], h[-1]
            xa, ya = xs[a], ys[a]
            if (ys[b] - ya) * (xi - xa) > (yi - ya) * (xs[b] - xa):
                h.pop()
            else:
                break
        h.append(i)
    return h


def _near_collinear(x: np.ndarray, y: np.ndarray, h: list) -> bool:
    """Whether a consecutive triple of the chain ``h`` is collinear to within 1e-15
    relative (where floating-point orientation tests stop being consistent)."""
    xs, ys = x[h].tolist(), y[h].tolist()
    for i in range(1, len(h) - 1):
        lhs = (ys[i] - ys[i - 1]) * (xs[i + 1] - xs[i - 1])
        rhs = (ys[i + 1] - ys[i - 1]) * (xs[i] - xs[i - 1])
        if abs(lhs - rhs) <= 1e-15 * (abs(lhs) + abs(rhs)):
            return True
    return False


def _repair_hull(x: np.ndarray, y: np.ndarray, bad: np.ndarray) -> np.ndarray:
    """The lower hull of points sorted by strictly increasing ``x`` whose consecutive
    triples are convex except those with their middle at ``bad`` (sorted positions,
    each in ``1 .. n - 2``): the same vertices as :func:`_lower_hull`.

    Every point outside windows around the bad middles stays; inside a window the
    hull is the monotone chain (:func:`_strict_chain`, or the passes of
    :func:`_lower_hull` for a window longer than :data:`_CHAIN_MAX`).  The result is
    the hull when every triple of it is convex (a convex chain through some of the
    points with every dropped point above it is the lower hull): triples away from
    the windows are as tested by the caller, triples inside a window are convex by
    construction, so only the two triples centred on each window's ends are tested;
    a window whose end fails is widened on that side (doubling), and windows that
    meet are merged.  The optimistic constructions' chains are convex but for a few
    points near ``t = 0`` (round-off of nearly affine node values) or a short run
    (issue 37: 60.6 M instructions of the vectorised passes at T 1e6 for 5 hulls).
    """
    n = x.size
    # windows [lo, hi] (inclusive) around the bad middles, with `pad` points a side
    pad = 4
    wins: list = []
    for b in bad.tolist():
        lo, hi = max(b - pad, 0), min(b + pad, n - 1)
        if wins and lo <= wins[-1][1] + 1:
            wins[-1][1] = hi
        else:
            wins.append([lo, hi])

    def above(a: int, b: int, c: int) -> bool:  # b strictly above the chord a-c
        xa, ya = float(x[a]), float(y[a])
        return (float(y[b]) - ya) * (float(x[c]) - xa) > (float(y[c]) - ya) * (float(x[b]) - xa)

    settled = False
    for _ in range(64):
        hulls = []
        grow = []
        for lo, hi in wins:
            if (lo == 0 and settled) or hi - lo + 1 > _CHAIN_MAX:
                # (a window from the first point whose chain has a nearly collinear
                # triple, once its extent has settled: the nearly affine start of an
                # optimistic curve, where floating-point predicates of nearly
                # collinear points disagree, and the passes drop what they dropped on
                # the whole chain)
                h = (lo + _lower_hull(x[lo : hi + 1], y[lo : hi + 1])).tolist()
            else:
                xl, yl = x[lo : hi + 1].tolist(), y[lo : hi + 1].tolist()
                h = [lo + i for i in _strict_chain(xl, yl)]
            hulls.append(h)
            # the triples centred on the window's ends (each widened on failure)
            left = lo > 0 and len(h) >= 2 and above(lo - 1, lo, h[1])
            right = hi < n - 1 and len(h) >= 2 and above(h[-2], hi, hi + 1)
            grow.append((left, right))
        if not any(a or b for a, b in grow):
            if settled or wins[0][0] != 0 or not _near_collinear(x, y, hulls[0]):
                break
            settled = True
            continue
        new: list = []
        for (lo, hi), (left, right) in zip(wins, grow, strict=True):
            width = hi - lo + 1
            if left:
                lo = max(lo - width, 0)
            if right:
                hi = min(hi + width, n - 1)
            if new and lo <= new[-1][1] + 1:
                new[-1][1] = max(new[-1][1], hi)
            else:
                new.append([lo, hi])
        wins = new
    else:  # pragma: no cover - 64 doublings cover any chain
        return _lower_hull(x, y)
    keep = np.ones(n, dtype=bool)
    for (lo, hi), h in zip(wins, hulls, strict=True):
        keep[lo : hi + 1] = False
        keep[h] = True
    return np.flatnonzero(keep)


def _lower_hull_chain(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Andrew's monotone chain (lower part), a sequential fallback."""
    hull: list[int] = []
    for i in range(x.size):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            if (y[b] - y[a]) * (x[i] - x[a]) >= (y[i] - y[a]) * (x[b] - x[a]):
                hull.pop()
            else:
                break
        hull.append(i)
    return np.asarray(hull)


#: :func:`_decay_weights`' arrays, the longest made for each of the latest rates
_WEIGHTS: dict[float, np.ndarray] = {}
#: how many rates :data:`_WEIGHTS` keeps (the grids of one composition: a handful)
_WEIGHT_RATES = 8


def _decay_weights(rate: float, n: int) -> np.ndarray:
    """``e^{-rate k}`` for ``k = 0 .. n - 1``, a read-only array.

    Entry by entry the same floats as ``np.exp(-rate * np.arange(n))``: each is the exp
    of the same product, so a prefix of a longer array made for ``rate`` is read
    instead of computed again (issue 37: the optimistic end of a DP-SGD
    ``epsilon_bounds`` made 192 k of these exps on a few grids' steps), and a longer one
    is the shorter one extended by the entries it lacks.
    """
    w = _WEIGHTS.get(rate)
    if w is None or w.size < n:
        if w is None:
            w = np.exp(-rate * np.arange(n))
        else:  # only the entries it lacks (elementwise: the same floats as made whole)
            w = np.concatenate([w, np.exp(-rate * np.arange(w.size, n))])
        w.flags.writeable = False
        _WEIGHTS.pop(rate, None)
        for old in list(_WEIGHTS)[: max(len(_WEIGHTS) - _WEIGHT_RATES + 1, 0)]:
            _WEIGHTS.pop(old, None)  # the oldest rates (a list: threads may share it)
        _WEIGHTS[rate] = w
    return w[:n]


def _decaying_sum(x: np.ndarray, rate: float) -> np.ndarray:
    """``y[j] = sum_{i >= j} x[i] e^{-rate (i - j)}`` for non-negative ``x``, ``rate > 0``.

    ``rate`` is the grid step itself, not ``exp(-step)``: for steps below ``2^-53`` the
    latter rounds to exactly 1.  Computed block by block as
    ``(sum_{i >= j} x_i w_i) / w_j`` with ``w_k = e^{-rate k}`` inside a block short
    enough that ``w`` cannot underflow, plus the decayed carry of the block above:
    only sums of non-negative terms, so full relative precision.
    """
    n = x.size
    if n == 0:
        return np.empty(0)
    block = max(1, min(n, int(min(500.0 / rate, 2.0**62))))
    if block == n:  # one block (every grid of the DP-SGD ladders): no carry, no copy
        w = _decay_weights(rate, n)
        s = x * w
        y = np.empty(n)
        np.cumsum(s[::-1], out=y[::-1])
        y /= w
        return y
    y = np.empty(n)
    carry = 0.0
    for start in range(((n - 1) // block) * block, -1, -block):
        seg = x[start : start + block]
        w = _decay_weights(rate, seg.size)
        s = np.cumsum((seg * w)[::-1])[::-1] / w
        if carry:
            s = s + carry * np.exp(-rate * (seg.size - np.arange(seg.size)))
        y[start : start + seg.size] = s
        carry = float(s[0])
    return y


def _decaying_rows(x: np.ndarray, rate: float) -> np.ndarray:
    """Row-wise :func:`~dpacct.accountant.pld.grid._decaying_sum`: ``y[:, j] = sum_{i >= j}
    x[:, i] e^{-rate (i - j)}`` for non-negative ``x``, by the same blocks (positive
    terms only, so full relative precision)."""
    rows, n = x.shape
    y = np.empty_like(x)
    block = max(1, min(n, int(min(500.0 / rate, 2.0**62))))
    carry = np.zeros(rows)
    for start in range(((n - 1) // block) * block, -1, -block):
        seg = x[:, start : start + block]
        k = np.arange(seg.shape[1])
        w = np.exp(-rate * k)
        s = np.cumsum((seg * w)[:, ::-1], axis=1)[:, ::-1] / w
        s += carry[:, None] * np.exp(-rate * (seg.shape[1] - k))
        y[:, start : start + seg.shape[1]] = s
        carry = s[:, 0].copy()
    return y
