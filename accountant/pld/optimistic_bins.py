"""The optimistic (lower-bound) grid pair of a set of bins: chord gaps and the lower hull.

Moved out of :mod:`~dpacct.accountant.pld.grid` (the library's 800-line limit; issue 37,
session 32), which imports it back.  The construction (Doroshenko, Ghazi, Kamath, Kumar,
Manurangsi 2022, Section 4, "optimistic" PLD; the argument as the engine uses it in the
module docstring of :mod:`~dpacct.accountant.pld.grid` and in docs/theory/pld.md, "Lower
bound: the optimistic construction"): each bin ``(a_j, a_{j+1}]`` is merged into one atom
(a post-processing of the true pair), the merged pair's hockey-stick curve is read at
every node ``t_j = e^{a_j}``, each node is lowered by the chord gap of its adjacent bins
(the most the chord between two nodes lies above the merged curve), bins whose gap
exceeds half the room above the next node are rounded down onto their lower node, and
the lower convex hull of the lowered node values (plus the point ``t = 0`` at the total
P-mass) is read back as masses on the nodes: a convex piecewise-linear curve below the
true one at every real epsilon, hence (composing part by part) a lower bound on delta.

Issue 37 (``epsilon_bounds`` at most 2x ``epsilon``): these constructions were 73 M of
the 412 M instructions of a DP-SGD ``epsilon_bounds`` at T 1e4 and 184 M of 1 044 M at
T 1e6 (the call is now 386 M and 953 M, the same answers).  The arithmetic per node is
the same as before, element by element, and so are the arrays; what changed is how much
of it is done (benchmarks/README.md, "Session 32 (ws32-bounds)"):

* the bins rounded down are found on the top :data:`_TOP_BINS` bins first (the node
  values there depend only on the bins above, and are the same floats as the whole
  recurrence's, :func:`_node_deltas_top`), and the whole recurrence is run once, with
  the final rounding, instead of once before and once after it; the bins below are
  then checked against the final values with a margin (:data:`_ROUND_MARGIN`), and
  if one comes near the threshold the original loop runs;
* the hull's few non-convex spots are repaired locally
  (:func:`~dpacct.accountant.pld.pld_hull._repair_hull`) instead of by passes over the
  whole chain;
* fewer temporary arrays (the gaps, the node deltas, the hull's abscissae).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .atom_split import AtomSplit
from .pld_hull import _decay_weights, _decaying_sum, _lower_hull_to_min

__all__: list[str] = []


@dataclass(frozen=True)
class _Bins:
    """P-masses ``m`` and scaled Q-masses ``r = Q-mass * e^{a_j}`` of grid bins.

    Nodes are ``a_j = (first + j) * step`` for ``j = 0..n``; bin ``j`` is
    ``(a_j, a_{j+1}]``.  ``bottom`` collects ``L <= a_0`` and ``top`` collects
    ``a_n < L < inf`` (as ``(m, r)`` with ``r`` scaled by ``e^{a_0}``, resp. ``e^{a_n}``).
    """

    step: float
    first: int
    m: np.ndarray
    r: np.ndarray
    bottom: tuple[float, float]
    top: tuple[float, float]
    inf_mass: float
    #: P-mass sitting exactly on the right node of each bin (exact, no chord gap)
    atoms: np.ndarray | None = None
    #: bins whose Q-mass is below ``Q_FLOOR`` (``r`` unknown): the pessimistic side
    #: rounds them up onto their upper node, the optimistic side down onto the lower
    q_lost: np.ndarray | None = None
    #: a purely atomic law's pessimistic node masses, split atom by atom, and its P-mass
    #: beyond the last node (:func:`~dpacct.accountant.pld.atom_split.atom_upper_pmf`)
    upper: AtomSplit | None = None
    #: the law's own split numerators ``m - r`` and bounds on their errors
    #: (:meth:`~dpacct.accountant.laws.loss_law.PrivacyLossLaw._split_numerators`),
    #: read by the pessimistic side only
    split: tuple[np.ndarray, np.ndarray] | None = None

#: largest grid step whose ``e^step`` the optimistic chords evaluate (``exp`` overflows
#: past about 709.78)
_MAX_EXP_STEP = 700.0
#: the rounded-down bins are searched on this many top bins first (they are the top
#: one or two on every DP-SGD construction measured)
_TOP_BINS = 64
#: a bin below the top ones counts as near the rounding threshold when its gap exceeds
#: half the room above its next node computed with the node value lowered by this
#: relative amount (the node values are sums of at most 2^21 non-negative terms, each
#: computed to a few units of round-off: their relative error is below 1e-9, so a bin
#: that passes this test was not rounded at any step of the original loop)
_ROUND_MARGIN = 1e-8


def _node_deltas(
    m: np.ndarray, r: np.ndarray, step: float, top_excess: float, r_top: float, inf_mass: float
) -> tuple[np.ndarray, np.ndarray]:
    """Exact hockey-stick of the merged-bin pair at every node, and the Q-tail sums.

    Returns ``delta[j]`` for ``j = 0..n`` and ``F[j] = sum_{i>=j} r_i e^{-(i-j) step}``
    (the Q-mass above node j, times ``e^{a_j}``), both by recurrences with positive
    terms only.
    """
    rr = np.concatenate([r, [r_top]])
    big_f = _decaying_sum(rr, step)
    inc = m - r
    inc += (-math.expm1(-step)) * big_f[1:]
    tail = np.empty(rr.size)
    tail[-1] = 0.0
    # the suffix sums, accumulated from the top into the reversed view
    np.cumsum(inc[::-1], out=tail[-2::-1])
    base = inf_mass + top_excess
    if base != 0.0:
        tail += base
    return tail, big_f


def _node_deltas_top(
    m: np.ndarray, r: np.ndarray, step: float, r_top: float, inf_mass: float, k: int
) -> np.ndarray:
    """The last ``k + 1`` entries of :func:`_node_deltas`' ``delta`` (nodes ``n - k ..
    n``; ``top_excess`` 0), the same floats: the recurrences run from the top, so these
    entries are the same sums of the same products, in the same order.  Only for
    ``n + 1`` within one block of :func:`~dpacct.accountant.pld.pld_hull._decaying_sum`
    (its weights indexed from node 0, no carry)."""
    n = m.size
    w = _decay_weights(step, n + 1)[n - k :]
    seg = np.empty(k + 1)
    seg[:k] = r[n - k :]
    seg[k] = r_top
    seg *= w
    f = np.cumsum(seg[::-1])[::-1] / w
    inc = m[n - k :] - r[n - k :]
    inc += (-math.expm1(-step)) * f[1:]
    tail = np.empty(k + 1)
    tail[-1] = 0.0
    np.cumsum(inc[::-1], out=tail[-2::-1])
    if inf_mass != 0.0:
        tail += inf_mass
    return tail


def _gaps(
    m: np.ndarray, r: np.ndarray, atoms: np.ndarray | None, step: float
) -> np.ndarray:
    """Chord gap of every bin (the most the chord between its two nodes lies above the
    merged bin's curve), the part of the bin on its upper node (``atoms``) excluded."""
    e_step = math.exp(step)
    if atoms is None and m.size and (m.min() < 0.0 or r.min() < 0.0):
        atoms = np.zeros(m.size)  # (never met: every bin source keeps 0 <= r <= m)
    if atoms is None:
        mc, rc = m, r  # (0 <= r <= m: the clips below leave them as they are)
    else:
        mc = m - atoms
        np.maximum(mc, 0.0, out=mc)
        rc = r - atoms * math.exp(-step)
        np.maximum(rc, 0.0, out=rc)
        np.minimum(rc, mc, out=rc)
    pos = rc > 0
    rho = np.full(m.size, e_step)
    np.divide(mc, rc, out=rho, where=pos)
    np.maximum(rho, 1.0, out=rho)
    # the clip at e_step and, within it, an atom within round-off of the upper node
    # sits on it: no gap (one pass: an entry above the threshold is e_step either way)
    np.copyto(rho, e_step, where=rho > e_step * (1.0 - 1e-12))
    # expm1: exp(step) - 1 stays positive for steps below 2^-53 (then m == r)
    g = mc - rc
    np.subtract(e_step, rho, out=rho)
    g *= rho
    g /= math.expm1(step)
    return g


#: :func:`_round_bins` recomputes the gaps of this many rounded bins or fewer on Python
#: floats (:func:`_gaps_few`): a numpy pass costs ~5 k instructions of dispatch
_FEW = 8


def _gaps_few(m: list, r: list, atoms: list | None, step: float) -> list:
    """:func:`_gaps` of a few bins on Python floats: the same IEEE operations in the same
    order, element by element (``np.maximum``, ``np.minimum`` and ``np.clip`` of non-NaN
    values; no fused operations), so the same floats.  ``tests/test_optimistic_bins.py``
    checks the equality."""
    e_step = math.exp(step)
    if atoms is None and m and (min(m) < 0.0 or min(r) < 0.0):
        atoms = [0.0] * len(m)
    decay = math.exp(-step)
    near = e_step * (1.0 - 1e-12)
    denom = math.expm1(step)
    out = []
    for j in range(len(m)):
        mc, rc = m[j], r[j]
        if atoms is not None:
            a = atoms[j]
            mc = mc - a
            if not mc >= 0.0:
                mc = 0.0
            rc = rc - a * decay
            if not rc >= 0.0:
                rc = 0.0
            if mc < rc:
                rc = mc
        rho = mc / rc if rc > 0 else e_step
        rho = e_step if rho > e_step else (1.0 if rho < 1.0 else rho)
        if rho > near:
            rho = e_step
        out.append((mc - rc) * (e_step - rho) / denom)
    return out


#: :func:`_abscissae`' tables, ``(step, parity) -> (K, e^{(k + parity / 2) step} for k = -K
#: .. K)``, of the latest steps (every bulk and spill re-grid of a squaring ladder lands on
#: the tail's one step: 17 of the 22 constructions of a DP-SGD ``epsilon_bounds`` at T 1e4)
_ABSCISSAE: dict[tuple[float, int], tuple[int, np.ndarray]] = {}
#: how many ``(step, parity)`` tables :data:`_ABSCISSAE` keeps, and the longest construction
#: whose abscissae go through them (memory: at most 8 tables of ``2^17`` floats)
_ABSCISSA_TABLES = 8
_ABSCISSA_MAX_N = 1 << 17


def _abscissae(step: float, first: int, n: int) -> np.ndarray | None:
    """The hull abscissae ``e^{(first + j) step - a_ref}``, ``a_ref = (first + n / 2) step``,
    for ``j = 0 .. n`` as :func:`_lower_from_bins` computes them (``np.exp`` of the
    differences), read from a table; None when ``step`` is not a power of two (or the
    indices are too large), where the caller computes them.

    On a power-of-two ``step`` (every binary grid of the ladders), ``(first + j) step`` and
    ``a_ref`` are exact, and so is their difference ``(j - n / 2) step`` (a multiple of
    ``step / 2`` below ``2^53`` of them): the exp's argument is the same float as the
    table's ``(k + p / 2) step`` (``p`` the parity of ``n``, ``k = j - (n + p) / 2``), so
    the entries are the same floats, each exp made once per step instead of once per
    construction (issue 37: the n + 1 exps of every construction, 2.7 M of the 50 M
    instructions of the constructions at T 1e4).  A new step, or a longer construction,
    computes only the entries it adds.
    """
    if math.frexp(step)[0] != 0.5 or step < 2.0**-1000 or n > _ABSCISSA_MAX_N:
        return None
    if abs(first) + n >= 1 << 50:
        return None
    p = n & 1
    reach = (n >> 1) + p  # k runs over -reach .. n // 2
    key = (step, p)
    got = _ABSCISSAE.get(key)
    if got is None or got[0] < reach:
        if got is None:
            table = np.exp((np.arange(-reach, reach + 1, dtype=float) + 0.5 * p) * step)
        else:  # the table held k = -old_k .. old_k: the entries on either side
            old_k, old = got
            lo = np.exp((np.arange(-reach, -old_k, dtype=float) + 0.5 * p) * step)
            hi = np.exp((np.arange(old_k + 1, reach + 1, dtype=float) + 0.5 * p) * step)
            table = np.concatenate([lo, old, hi])
        table.flags.writeable = False
        _ABSCISSAE.pop(key, None)
        for k in list(_ABSCISSAE)[: max(len(_ABSCISSAE) - _ABSCISSA_TABLES + 1, 0)]:
            _ABSCISSAE.pop(k, None)  # the oldest (a list: threads may share it)
        _ABSCISSAE[key] = got = (reach, table)
    k_max, table = got
    start = k_max - reach
    return table[start : start + n + 1]


def _round_down_from_bins(b: _Bins) -> tuple[int, np.ndarray, float]:
    """Fallback lower bound: every bin rounded down to its lower node."""
    pmf = np.zeros(b.m.size + 1)
    pmf[:-1] += b.m
    pmf[-1] += b.top[0]
    return b.first, pmf, b.inf_mass


def _round_bins(
    b: _Bins, r: np.ndarray, g: np.ndarray, atoms: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Round down onto their lower node the bins whose chord gap exceeds half the room
    above their next node (rounding lowers delta below, so repeat, at most 8 times);
    ``r`` and ``g`` are updated in place.  Returns the final node deltas and Q-tail
    sums (:func:`_node_deltas`)."""
    m, step, inf = b.m, b.step, b.inf_mass
    n = m.size
    m_top = b.top[0]
    decay = math.exp(-step)

    def rounded_of(bad: np.ndarray) -> np.ndarray:
        # the bin's continuous part onto its lower node; its atom (if any) stays
        # exactly on the upper node
        if atoms is None:
            return m[bad] * 1.0
        m_bad, a_bad = m[bad], atoms[bad]
        return (m_bad - a_bad) + a_bad * decay

    def regap(bad: np.ndarray, rounded: np.ndarray) -> None:
        # the gaps are per bin: only the rounded bins' change (a few: on Python floats,
        # the same operations, the same values)
        a_bad = None if atoms is None else atoms[bad]
        if bad.size <= _FEW:
            g[bad] = _gaps_few(m[bad].tolist(), rounded.tolist(),
                               None if a_bad is None else a_bad.tolist(), step)
        else:
            g[bad] = _gaps(m[bad], rounded, a_bad, step)

    k = _TOP_BINS
    if n > 2 * k and n + 1 <= 500.0 / step:
        # the rounding, on the top k bins (their node values depend on the bins above
        # only); every bin below must then be clear of the threshold
        r0 = r[n - k :].copy()
        g0 = g[n - k :].copy()
        lo = n - k
        delta = None  # the whole recurrence, once a rounding has been made
        for _ in range(8):
            # after a rounding the whole recurrence is run at once: its top entries are
            # the floats _node_deltas_top gives (same sums, same order), so the next
            # test reads them, and they are the final ones when it rounds nothing (the
            # usual case: one rounding per construction on DP-SGD; issue 37)
            top = _node_deltas_top(m, r, step, m_top, inf, k) if delta is None else delta[lo:]
            gt = g[lo:]
            bad = np.flatnonzero((gt > 0.5 * (top[1:] - inf)) & (gt > 0)) + lo
            if not bad.size:
                break
            rounded = rounded_of(bad)
            if np.array_equal(rounded, r[bad]):
                break  # already rounded down (see the loop below)
            r[bad] = rounded
            regap(bad, rounded)
            delta, big_f = _node_deltas(m, r, step, 0.0, m_top, inf)
        if delta is None:
            delta, big_f = _node_deltas(m, r, step, 0.0, m_top, inf)
        # a bin below is near when g > 0 and g > (delta (1 - margin) - inf) / 2 (g >= 0
        # everywhere, so with inf == 0 the first test is implied by the second)
        room = delta[1 : lo + 1] * (0.5 * (1.0 - _ROUND_MARGIN))
        if inf != 0.0:
            room -= 0.5 * inf
            np.maximum(room, 0.0, out=room)
        if not (g[:lo] > room).any():
            return delta, big_f
        r[lo:], g[lo:] = r0, g0  # a bin below comes near: the loop over all bins
    delta, big_f = _node_deltas(m, r, step, 0.0, m_top, inf)
    for _ in range(8):
        bad = np.flatnonzero((g > 0.5 * (delta[1:] - inf)) & (g > 0))
        if not bad.size:
            break
        rounded = rounded_of(bad)
        if np.array_equal(rounded, r[bad]):
            # already rounded down (its gap is round-off of m - r): every further pass
            # would recompute the same state, so stop with it.  Measured on DP-SGD
            # (q 0.01, sigma 1.1, T 1e4): 35 of the 61 repeats were such no-ops.
            break
        r[bad] = rounded
        delta, big_f = _node_deltas(m, r, step, 0.0, m_top, inf)
        regap(bad, rounded)
    return delta, big_f


# long function: one certified construction (round the top down, repair the chord gaps,
# take the lower hull, read its masses) whose steps share a dozen arrays; see issue 37
def _lower_from_bins(b: _Bins) -> tuple[int, np.ndarray, float]:
    """A grid pair dominated by the true pair (see the module docstring)."""
    step = b.step
    n = b.m.size
    m = b.m  # read only
    r = b.r.copy()
    # The top tail is rounded down onto the last node and the last bin onto its lower
    # node (pointwise rounding down), so that nothing is left above the grid.
    m_top = b.top[0]
    if n >= 1:
        r[-1] = m[-1]
    if b.q_lost is not None:  # unknown Q-mass: the whole bin rounded down (r = m)
        r[b.q_lost] = m[b.q_lost]
    if step > _MAX_EXP_STEP:  # e^step overflows (epsilons of order 1e8): plain lower bound
        return _round_down_from_bins(b)
    # atoms exactly on a node have no chord gap: only the rest of the bin is merged
    atoms = None
    if b.atoms is not None or b.q_lost is not None:
        atoms = b.atoms.copy() if b.atoms is not None else np.zeros(n)
        if n >= 1:
            atoms[-1] = 0.0  # the last bin was rounded down onto its lower node
        if b.q_lost is not None:
            atoms[b.q_lost] = 0.0
    g = _gaps(m, r, atoms, step)
    delta, big_f = _round_bins(b, r, g, atoms)
    # the construction's arrays are freed as soon as they are dead (below, and
    # before the hull and the masses): on the largest bulks (20 k bins at T 1e6) a dozen
    # of them alive at once set the heap's high-water mark, whose fresh pages the
    # kernel faults in one by one (issue 37, session 36)
    del r, atoms
    if n * step > 1200.0:  # e^(span/2) would overflow: use the plain lower bound
        return _round_down_from_bins(b)
    total_p = b.inf_mass + b.bottom[0] + float(m.sum()) + m_top
    # the points (t, y): t = 0 at the total P-mass, then every node lowered by the
    # larger chord gap of its two bins
    y_raw = np.empty(n + 2)
    y_raw[0] = total_p
    v = y_raw[1:]
    if n:
        np.subtract(delta[:-1], g, out=v[:-1])
        v[-1] = delta[-1] - g[-1]
        np.minimum(v[1:-1], delta[1:-1] - g[:-1], out=v[1:-1])
        # the node lowered by the larger gap: the smaller of the two lowered values
    else:
        v[:] = delta
    # the tangent at t = 0 (slope: the whole Q-mass) bounds the first node
    v[0] = min(v[0], total_p - (b.bottom[1] + big_f[0]))
    del delta, g, big_f, v
    a_ref = (b.first + 0.5 * n) * step
    # differences of order 1e-16 are round-off, not signal
    tiny = np.abs(y_raw) < 1e-15
    y = y_raw
    if tiny.any():
        y = y_raw.copy()
        y[tiny] = 0.0
    # a node inside a run of empty bins (no atom on either side, so no chord gap) is
    # on the chord of the run's ends (the curve is affine in t there): not a vertex,
    # unless the round-off cut above lowered it.  The passes removed these points a
    # few at a time (issue 37: 2/3 of the points of the spill's re-grids); dropped
    # first, with the points past the hull's lowest one (_lower_hull_to_min), whose
    # part up to there is all that is used below
    inner = None
    if n >= 2:
        empty = m == 0.0
        if empty.any():
            inner = np.zeros(n + 2, dtype=bool)
            inner[2 : n + 1] = empty[:-1] & empty[1:]
            if y is not y_raw:
                inner &= y == y_raw
            if not inner.any():
                inner = None
    # the abscissae t = e^(a_j - a_ref) (scaled: no overflow) of the points the hull
    # sees only
    # (on a power-of-two step they are read from a table shared by the constructions on
    # that step, the same floats: _abscissae)
    table = _abscissae(step, b.first, n)
    if inner is not None:
        pts = np.flatnonzero(~inner)
        t = np.empty(pts.size)
        if table is None:
            np.exp((b.first + (pts[1:] - 1)) * step - a_ref, out=t[1:])
        else:
            np.take(table, pts[1:] - 1, out=t[1:])
        y = y[pts]
    else:
        t = np.empty(n + 2)
        if table is None:
            np.exp((b.first + np.arange(n + 1)) * step - a_ref, out=t[1:])
        else:
            t[1:] = table
    t[0] = 0.0
    del y_raw
    hull = _lower_hull_to_min(t, y)
    if hull.size and hull[-1] == hull.size - 1:
        # every point up to the last vertex is one (a convex chain, often): slices
        h = hull.size
        keep = hull if inner is None else pts[:h]
        tk, yk = t[:h], y[:h]
    else:
        keep = hull if inner is None else pts[hull]
        tk, yk = t[hull], y[hull]
    nodes = keep - 1  # node index of each hull vertex (-1 for the point t = 0)
    del t, y, hull, keep
    inf_low = b.inf_mass
    neg = np.flatnonzero(yk < 0)
    if neg.size:
        # max(hull, 0) is still below the true curve; its kink where the hull crosses
        # zero is an atom off the grid, rounded down onto the node below it.
        k = int(neg[0])
        tc = tk[k - 1] + yk[k - 1] * (tk[k] - tk[k - 1]) / (yk[k - 1] - yk[k])
        slope = (yk[k] - yk[k - 1]) / (tk[k] - tk[k - 1])
        tk, yk, nodes = tk[:k], yk[:k], nodes[:k]
        slopes = np.diff(yk) / np.diff(tk)
        last_slope = slope
        extra_mass = tc * (0.0 - slope)
        j_c = math.floor((math.log(tc) + a_ref) / step + 1e-9) - b.first
        j_c = max(j_c, int(nodes[-1]) if nodes[-1] >= 0 else -1)
        inf_low = 0.0
    else:
        # a hull that rises at the end is cut at its minimum (the curve is then flat)
        k_min = int(np.argmin(yk))
        tk, yk, nodes = tk[: k_min + 1], yk[: k_min + 1], nodes[: k_min + 1]
        slopes = np.diff(yk) / np.diff(tk)
        last_slope = None
        extra_mass = 0.0
        j_c = -1
        inf_low = min(float(yk[-1]), b.inf_mass)
    if slopes.size == 0 and last_slope is None:
        return _round_down_from_bins(b)
    after = np.empty(slopes.size)
    if slopes.size:
        after[:-1] = slopes[1:]
        after[-1] = 0.0 if last_slope is None else last_slope
        after -= slopes
        after *= tk[1:]
        np.maximum(after, 0.0, out=after)
    del tk, yk, slopes
    pmf = np.zeros(n + 1)
    # hull vertices are distinct nodes: a plain store is the scattered add onto zeros
    pmf[nodes[1:]] = after
    if extra_mass > 0 and 0 <= j_c <= n:  # (below the grid it is dropped: lower bound)
        pmf[j_c] += extra_mass
    return b.first, pmf, inf_low
