"""Two-scale PLDs: a finely gridded bulk plus a coarsely gridded tail.

The privacy loss of one subsampled step is concentrated within a few sample rates of
zero but has tails reaching several units (a Gaussian in the loss of the sampled
record).  A single uniform grid fine enough for the bulk would need hundreds of
thousands of points to cover the tails, and the first squarings of a long
composition would be dominated by them.  Here the measure is split into two disjoint
parts, each a :class:`~dpacct.accountant.pld.grid.GridPLD` sub-measure:

* ``fine``: the bulk, on a grid of ``step``;
* ``coarse``: everything else (including the mass at ``+inf``), on a grid of
  ``coarse_step``, a power-of-two multiple of ``step``.

Every certified operation acts part by part.  The hockey-stick curve of a measure is
the sum of its parts' curves, and composition is bilinear and monotone in each factor
(``delta_{A x C}(t) = E_{C}[delta_A(t e^{-L_C})]``), so a pessimistic (optimistic)
discretisation of each part is a pessimistic (optimistic) discretisation of the whole.
Products involving the tail are computed on the coarse grid, after re-discretising the
fine factor onto it; mass that the bulk spreads beyond its window is moved into the
tail.  Once the bulk's own grid has coarsened to ``coarse_step`` the two parts merge
into one ordinary PLD.  The argument in full: docs/theory/pld.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..laws.loss_law import PrivacyLossLaw
from ..numerics import TINY
from .atom_split import AtomSplit
from .grid import (
    MAX_GRID,
    GridPLD,
    _Bins,
    _bins_from_law,
    _from_bins,
    _trim,
)
from .optimistic_tail import _add, _optimistic_tail_product, _scaled
from .pld_fft import (
    _alias,
    _cell_lambdas,
    _l2,
    _next_fast_len,
    _pass_model,
    _spectral_error,
    _window,
)
from .spectral_parts import _optimistic_settle, _spectral_power

__all__ = ["SplitPLD", "compose_split", "discretize_split", "self_compose_split"]

#: above this many points a single-grid discretisation is split
SPLIT_ABOVE = 1 << 14
#: the bulk window leaves at most this P-mass outside on each side (the coarse grid is
#: too coarse for the dense region near the bulk), and the coarse grid has about this
#: many points over the whole loss range.  The optimistic construction rounds
#: concentrated mass down by up to a grid step when it re-grids the bulk for products
#: with the tail, so it keeps a finer coarse grid.
BULK_TAIL = 1e-6
COARSE_POINTS = {True: 1 << 12, False: 1 << 13}
#: the bulk never spans more than this many fine points (its window then leaves more
#: mass to the tail), nor the tail more than this many coarse points (its grid then
#: coarsens): very skewed losses (small sigma) would otherwise need millions.  Both
#: scale with ``refine`` (tighter tolerances).  At the default tolerance 2^16 bulk
#: points answer q = 1e-3, sigma = 0.5 in 46 ms instead of 215 ms at 2^18, the upper
#: bound moving by 1.4e-5 relative; the DP-SGD benchmarks stay below the limit.
MAX_FINE = 1 << 16
MAX_COARSE = 1 << 15
#: an optimistic tail grid coarser than this many bulk steps gets up to SKEWED_BOOST
#: times more points (measured: the default bracket at q = 1e-4, sigma = 0.6 went
#: from 2.3 % to 0.07 % wide; the DP-SGD benchmarks are below the threshold)
SKEWED_RATIO = 256
SKEWED_BOOST = 8
#: an optimistic product of the tail with a bulk whose robust spread is below this many
#: tail steps is discretised after the product (:func:`_optimistic_tail_product`); a
#: wider bulk is re-gridded onto the tail's grid first, which is then accurate to
#: second order and cheaper
CONCENTRATED_BINS = 8
#: larger tail fractions tried, in order, when the bulk window is too wide
_WIDER = (1e-5, 1e-4, 1e-3, 1e-2, 0.05)


@dataclass(frozen=True)
class SplitPLD:
    """A PLD as the sum of a fine bulk and an optional coarse tail (both sub-measures)."""

    fine: GridPLD
    coarse: GridPLD | None

    @property
    def pessimistic(self) -> bool:
        return self.fine.pessimistic

    def merged(self, max_points: int | None = None) -> GridPLD:
        """One ordinary PLD on the coarser of the two grids.

        With ``max_points`` the result keeps the finest nested grid (a power-of-two
        multiple of the bulk's step, at most the tail's) on which it has at most that
        many points: the tail's atoms then sit exactly on nodes (no rounding at all)
        and only the bulk is re-discretised, by the certified regrid.
        """
        if self.coarse is None:
            return self.fine
        fine, coarse = self.fine, self.coarse
        step = max(fine.step, coarse.step)
        if max_points is not None and fine.step < coarse.step:
            lo = min(fine.losses[0], coarse.losses[0])
            hi = max(fine.losses[-1], coarse.losses[-1])
            step = fine.step
            while (hi - lo) / step > max_points and step < coarse.step:
                step *= 2.0
        return _add(fine.regrid(step), _onto_finer(coarse, step))


def _onto_finer(p: GridPLD, step: float) -> GridPLD:
    """``p`` on a finer nested grid (``p.step`` a multiple of ``step``): exact, every
    atom stays where it is; a coarser ``step`` is the certified regrid."""
    if step >= p.step:
        return p.regrid(step)
    k = round(p.step / step)
    pmf = np.zeros((p.pmf.size - 1) * k + 1)
    pmf[::k] = p.pmf
    return GridPLD(step, p.offset * k, pmf, p.inf_mass, p.pessimistic)


def _restrict(b: _Bins, lo_node: int, hi_node: int, inside: bool) -> _Bins:
    """Keep only the bins inside (or outside) the node range ``(lo_node, hi_node]``."""
    j = b.first + np.arange(b.m.size)  # left node of each bin
    mask = (j >= lo_node) & (j < hi_node)
    if not inside:
        mask = ~mask
    keep_tails = not inside
    return _Bins(
        step=b.step,
        first=b.first,
        m=np.where(mask, b.m, 0.0),
        r=np.where(mask, b.r, 0.0),
        bottom=b.bottom if keep_tails else (0.0, 0.0),
        top=b.top if keep_tails else (0.0, 0.0),
        inf_mass=b.inf_mass if keep_tails else 0.0,
        q_lost=None if b.q_lost is None else b.q_lost & mask,
        # the atom-by-atom split of an atomic law, restricted the same way (without it
        # the parts fell back to the bin split, whose cancellation at a fine step read
        # delta 7.5e-8 relative short: review 43)
        upper=None if b.upper is None else b.upper.restricted(mask, keep_tails),
        split=None if b.split is None else (np.where(mask, b.split[0], 0.0), b.split[1]),
    )


def discretize_split(
    law: PrivacyLossLaw,
    step: float,
    *,
    pessimistic: bool,
    tail: float,
    refine: int = 1,
    coarse_cap: float | None = None,
    fine_memo: dict | None = None,
) -> SplitPLD:
    """Certified discretisation of ``law`` with a fine bulk and a coarse tail.

    The bulk window holds all but ``BULK_TAIL / refine**2`` of the P-mass
    on each side; it is discretised on ``step``, the tail on about
    ``COARSE_POINTS[pessimistic] * refine`` points.  ``refine`` (a power of two, 1 at
    the default tolerance) makes both finer for tighter tolerances.  ``coarse_cap``
    bounds the tail's step (it then gets as many points as that needs, up to
    ``MAX_GRID / 4``): the engine sets it when the answer epsilon turns out small next
    to the tail grid.  If the whole range fits in ``SPLIT_ABOVE`` points no split is
    made.  ``fine_memo`` (a dict its owner keeps for this ``law`` object) shares the
    bulk's bins between the two ends of a bracket (:func:`_fine_bins`); the answer is
    the same with or without it.
    """
    lo, hi = law.quantile_bounds(tail)
    lo, hi = lo - step, hi + step
    if (hi - lo) / step <= SPLIT_ABOVE:
        return SplitPLD(_from_bins(_bins_from_law(law, step, lo, hi), pessimistic), None)
    b_lo, b_hi = law.quantile_bounds(BULK_TAIL / refine**2)
    for wider in _WIDER:
        if (b_hi - b_lo) / step <= MAX_FINE * refine:
            break
        b_lo, b_hi = law.quantile_bounds(wider)
    # size guard: even the narrowest window allowed is too wide for this step, so the
    # bulk grid is coarsened (by powers of two, staying nested; any grid is certified)
    while (b_hi - b_lo) / step > MAX_FINE * refine:
        step *= 2.0
    points = COARSE_POINTS[pessimistic] * refine
    ratio = max(4, 2 ** math.ceil(math.log2((hi - lo) / (points * step))))
    if not pessimistic and ratio > SKEWED_RATIO:
        # very skewed losses (small q and sigma): the optimistic re-gridding of the bulk
        # onto a much coarser tail grid loses most; give the tail more points
        boost = min(ratio // SKEWED_RATIO, SKEWED_BOOST)
        points *= boost
        ratio = max(4, ratio // boost)
    if coarse_cap is not None:
        # the tail grid no coarser than the cap, unless that would exceed MAX_GRID / 4
        floor = 2 ** math.ceil(math.log2(max((hi - lo) / (step * (MAX_GRID >> 2)), 1.0)))
        while ratio > max(2, floor) and step * ratio > coarse_cap:
            ratio //= 2
    # the bulk's window reaches a coarse node past each end of the bulk: about 3 ratio
    # fine points even for a bulk of width 0 (subsampled pure DP at q 1e-12: ratio 2^30,
    # a 24 GiB allocation); beyond MAX_GRID / 4 the bulk's step is coarsened instead
    while ratio > MAX_GRID >> 2:
        step *= 2.0
        ratio //= 2
    coarse_step = step * ratio
    lo_node = math.floor(b_lo / coarse_step) - 1
    hi_node = math.ceil(b_hi / coarse_step) + 1
    lo = min(lo, (lo_node - 1) * coarse_step)
    hi = max(hi, (hi_node + 1) * coarse_step)
    coarse_bins = _bins_from_law(law, coarse_step, lo, hi)
    coarse = _from_bins(_restrict(coarse_bins, lo_node, hi_node, inside=False), pessimistic)
    fine_bins = _fine_bins(law, step, lo_node * coarse_step, hi_node * coarse_step, fine_memo)
    fine = _from_bins(_restrict(fine_bins, lo_node * ratio, hi_node * ratio, True), pessimistic)
    return SplitPLD(fine, coarse)


def _fine_bins(law: PrivacyLossLaw, step: float, lo: float, hi: float, memo: dict | None) -> _Bins:
    """:func:`~dpacct.accountant.pld.grid._bins_from_law` ``(law, step, lo, hi)`` for
    the bulk of :func:`discretize_split`, which keeps only its bins (not its ends).

    ``memo`` (kept by the caller for this ``law``) holds the last bins computed on
    ``step``; a window inside theirs is read from them (issue 37: the lower end of
    ``epsilon_bounds`` discretises the bulk on the upper end's grid, over a window
    inside the upper end's).  The bins are the same floats: every bin's P- and Q-mass
    is computed element by element from its two nodes (``a_j = j * step``, the same
    float for the same ``j``; the law's distribution functions at them, their
    differences picked per bin, :func:`~dpacct.accountant.laws.loss_law._differences`,
    and ``r = min(nq e^{a_j}, m)``), so a bin's values do not depend on the window it
    was computed in.  Bins with atoms (an anchored law) or unread Q-masses are not
    shared (their handling reads the whole window).  ``tests/test_twoscale.py``
    checks the equality.
    """
    kept = None if memo is None else memo.get(step)
    if kept is not None and kept.atoms is None and kept.q_lost is None:
        first = math.floor(lo / step)  # the window's nodes, as _bins_from_law takes them
        last = max(math.ceil(hi / step), first + 1)
        a, z = first - kept.first, last - kept.first
        if 0 <= a < z <= kept.m.size:
            up = kept.upper
            if up is not None:
                up = AtomSplit(up.low[a:z], up.up[a:z], 0.0, 0.0)
            return _Bins(
                step=step,
                first=first,
                m=kept.m[a:z],
                r=kept.r[a:z],
                bottom=(0.0, 0.0),
                top=(0.0, 0.0),
                inf_mass=kept.inf_mass,
                upper=up,
                split=None if kept.split is None else (kept.split[0][a:z], kept.split[1][a:z]),
            )
    b = _bins_from_law(law, step, lo, hi)
    if memo is not None:
        memo.clear()  # the newest grid's only (memory)
        memo[step] = b
    return b


def _convolve(a: SplitPLD, b: SplitPLD, tail: float) -> SplitPLD:
    # the pessimistic ladder's products tilt with exact exponents (issue 37: a ~30u weight
    # term instead of up to ~1e4 u, and n / 64 exps instead of n; the optimistic side's
    # arithmetic is unchanged)
    fine = a.fine.convolve(b.fine, tail, exact_tilts=True)
    if a.coarse is None and b.coarse is None:
        return SplitPLD(fine, None)
    if not a.pessimistic:
        return SplitPLD(fine, _optimistic_coarse(a, b, tail))
    # the two tails may have coarsened differently: meet on the coarser grid.  A fine
    # part that multiplies the other's tail is re-gridded onto that grid, so it is
    # never finer than the fine part: a long product R (fine step 2^-7) times a
    # single step whose tail sat on 2^-17 was refined 1024-fold to 8-32 million
    # points (a mixture of 9.6e6 subsampled Gaussian and 6.6e4 subsampled discrete
    # Gaussian steps took 110 s); meeting on the coarser grid is what the binary
    # ladder does for single steps anyway (:func:`compose_split`)
    steps = [p.step for p in (a.coarse, b.coarse) if p is not None]
    if b.coarse is not None:
        steps.append(a.fine.step)
    if a.coarse is not None:
        steps.append(b.fine.step)
    cstep = max(steps)
    same = a is b
    if a.coarse is not None and a.coarse.step != cstep:
        a = SplitPLD(a.fine, a.coarse.regrid(cstep))
    if b.coarse is not None and b.coarse.step != cstep:
        b = SplitPLD(b.fine, b.coarse.regrid(cstep))
    if same:
        b = a
    if a is b and a.coarse is not None:
        # squaring: (f + c)^2 = f*f + c*(2 f + c), one coarse product instead of two
        both = _add(_scaled(a.fine.regrid(cstep), 2.0), a.coarse)
        return SplitPLD(fine, a.coarse.convolve(both, tail, exact_tilts=True))
    parts = []
    if a.coarse is not None:
        whole_b = b.fine.regrid(cstep) if b.coarse is None else _add(b.fine.regrid(cstep), b.coarse)
        parts.append(a.coarse.convolve(whole_b, tail, exact_tilts=True))
    if b.coarse is not None:
        parts.append(a.fine.regrid(cstep).convolve(b.coarse, tail, exact_tilts=True))
    coarse = parts[0] if len(parts) == 1 else _add(parts[0], parts[1])
    return SplitPLD(fine, coarse)


def _optimistic_coarse(a: SplitPLD, b: SplitPLD, tail: float) -> GridPLD:
    """The coarse part of the optimistic product ``a * b`` (see :func:`_convolve`).

    ``(f_a + c_a)(f_b + c_b) - f_a f_b = c_a (f_b + c_b) + c_b f_a``: every term has a
    coarse factor and is formed by :func:`_optimistic_tail_product` without
    re-gridding a fine factor first (a fine factor whose grid is not finer than the
    tail's is re-gridded onto it as before).
    """
    cstep = max(p.step for p in (a.coarse, b.coarse) if p is not None)

    def on_coarse(p: GridPLD | None) -> GridPLD | None:
        return None if p is None or p.step == cstep else p.regrid(cstep)

    ca = a.coarse if a.coarse is None or a.coarse.step == cstep else on_coarse(a.coarse)
    cb = b.coarse if b.coarse is None or b.coarse.step == cstep else on_coarse(b.coarse)

    def split_fine(f: GridPLD, w: float) -> tuple[list, list]:
        if f.step < cstep and f.spread() < CONCENTRATED_BINS * cstep:
            return [(f, w)], []
        g = f.regrid(cstep)
        return [], [_scaled(g, w) if w != 1.0 else g]

    if a is b or (ca is not None and ca is cb and a.fine is b.fine):
        fines, others = split_fine(a.fine, 2.0)
        return _optimistic_tail_product(ca, fines, [*others, ca], tail)
    parts = []
    if ca is not None:
        fines, others = split_fine(b.fine, 1.0)
        if cb is not None:
            others.append(cb)
        parts.append(_optimistic_tail_product(ca, fines, others, tail / 2))
    if cb is not None:
        fines, others = split_fine(a.fine, 1.0)
        parts.append(_optimistic_tail_product(cb, fines, others, tail / 2))
    return parts[0] if len(parts) == 1 else _add(parts[0], parts[1])


def _rebalance(
    s: SplitPLD,
    points_per_scale: float,
    max_step: float | None,
    refine: int = 1,
    coarse_cap: float | None = None,
) -> SplitPLD:
    """Coarsen the bulk as it widens, move its far parts into the tail, merge when equal.

    The tail is coarsened when it exceeds its size limit, but not beyond
    ``coarse_cap`` unless it exceeds ``MAX_GRID / 4`` points."""
    fine = s.fine._coarsened(points_per_scale, max_step)
    if s.coarse is None:
        return SplitPLD(fine, None)
    coarse = s.coarse
    limit = MAX_COARSE * refine * (1 if coarse.pessimistic else SKEWED_BOOST)
    while coarse.pmf.size > limit and (
        coarse_cap is None or coarse.step * 2 <= coarse_cap or coarse.pmf.size > MAX_GRID >> 2
    ):
        coarse = coarse.regrid(coarse.step * 2)
    s = SplitPLD(s.fine, coarse)
    cstep = coarse.step
    if fine.step >= cstep:
        return SplitPLD(_add(fine.regrid(cstep), coarse), None)
    ratio = round(cstep / fine.step)
    total = float(fine.pmf.sum())
    c = np.cumsum(fine.pmf)
    for bulk_tail in (BULK_TAIL / refine**2, *_WIDER):
        i_lo = int(np.searchsorted(c, bulk_tail * total, side="right"))
        i_hi = int(np.searchsorted(c, (1.0 - bulk_tail) * total, side="left"))
        if i_hi - i_lo <= MAX_FINE * refine:
            break
    lo_node = (fine.offset + i_lo) // ratio - 1  # coarse nodes around the bulk
    hi_node = -((-(fine.offset + i_hi)) // ratio) + 1
    a = lo_node * ratio - fine.offset  # fine indices of the window (lo_node, hi_node]
    z = hi_node * ratio - fine.offset
    if a <= 0 and z >= fine.pmf.size - 1:
        return SplitPLD(fine, s.coarse)
    a, z = max(a, 0), min(z, fine.pmf.size - 1)
    del c
    # the window's trimmed entries, copied (the bulk is kept in the ladder's memo: a
    # view would keep the whole product alive), and the rest: the same floats and
    # offsets as trimming a zero-padded copy of the window and fine.pmf minus it (x - x
    # is +0.0 and x - 0.0 is x for the finite entries of a PMF), with two arrays of the
    # product's size fewer (issue 37, session 36: the lower end's page faults)
    first_in, pmf_in = _trim(fine.offset + a + 1, fine.pmf[a + 1 : z + 1])
    if pmf_in.base is None:  # no positive entry: _trim's zeros(1), at the offset as before
        first_in = fine.offset
    else:
        pmf_in = pmf_in.copy()
    outside = fine.pmf.copy()
    outside[a + 1 : z + 1] = 0.0
    first_out, pmf_out = _trim(fine.offset, outside)
    bulk = GridPLD(fine.step, first_in, pmf_in, 0.0, fine.pessimistic)
    spill = GridPLD(fine.step, first_out, pmf_out, fine.inf_mass, fine.pessimistic)
    coarse = _add(s.coarse, spill.regrid(cstep)) if pmf_out.any() or spill.inf_mass else s.coarse
    return SplitPLD(bulk, coarse)


#: the most a memo of :func:`self_compose_split` keeps (bytes of its powers' arrays);
#: beyond it (fine tolerances, long counts) nothing is kept and the peak memory is as
#: without a memo
MEMO_BYTES = 16 << 20

#: a self-composition (either direction) whose count has more than ``SPECTRAL_FROM + 2`` bits
#: squares up to the ``2^m``-fold power, ``m >= SPECTRAL_FROM``, and composes the rest
#: by one spectral power (:func:`_spectral_top`) on that power's bulk grid: the first
#: ``m`` (at most ``bits - 3``) at which the Chernoff window has at most
#: ``SPECTRAL_MAX_N`` points and the certificate is within ``SPECTRAL_ERR_TAILS`` tail
#: budgets.  Measured (issue 37, CPU, loaded machine, ``python -m
#: benchmarks.spectral_power``): q 0.01, sigma 1.1, T 1e4 at m = 8: the upper epsilon
#: 5.1926115047 -> 5.1926053228 (one discretisation per 256 steps instead of one per
#: squaring level above) and 0.036 -> 0.030 s, 12 products replaced by one transform of
#: 36 864 points; from m = 6 it is tighter still (5.1926035) but slower (0.033 s: a
#: finer grid, a longer window).  q 0.004, sigma 0.8, T 1e6 at m = 15: 61.838275743 ->
#: 61.838172142, 0.075 -> 0.069 s; from m = 8 the certificate is 2.3e-9 (it grows with
#: ``T / 2^m``) and the answer looser (61.838385), from m = 12 7e-11 (70 budgets).
#: With the componentwise forward term (:func:`_spectral_power`, 4-14x smaller) it
#: takes over at m = 13 there (61.838125695) and stays at m = 8 at T 1e4 (5.1926052075).
SPECTRAL_FROM = 8
SPECTRAL_MAX_N = 1 << 16
#: ... and when its certificate (aliasing plus round-off, which grows with the power
#: and goes to ``+inf``) is at most this many times the composition's tail budget (a
#: millionth of the target delta): the ladder's tilted products keep tiny deltas
#: (``delta(eps)`` without a target, ``epsilon(1e-14)``) to relative precision, where
#: the spectral power's absolute round-off (5.9e-12 at T 1e4) would dominate them
SPECTRAL_ERR_TAILS = 10.0
#: a split PLD put on a grid ``step`` (:func:`_on_grid`) has at most its span in steps
#: (:func:`_span_points`) plus this many nodes: a part re-gridded onto a coarser nested
#: grid gains at most a node below its lowest atom and one at or above its highest (3
#: with the count of nodes over spans), one summed atom by atom at most two a side (5)
LOW_SPAN_NODES = 5


def _nbytes(p: SplitPLD) -> int:
    return p.fine.pmf.nbytes + (0 if p.coarse is None else p.coarse.pmf.nbytes)


# long function: 29 lines are the docstring; the body is one squaring ladder whose top
# levels may hand over to the spectral power (_spectral_top), kept together so the
# certificate's order of operations reads in one place
def self_compose_split(
    base: SplitPLD,
    count: int,
    *,
    tail: float,
    points_per_scale: float,
    max_step: float | None = None,
    refine: int = 1,
    coarse_cap: float | None = None,
    memo: dict | None = None,
    err_tails: float | None = None,
) -> GridPLD:
    """``count``-fold composition of a split PLD by repeated squaring.

    The powers ``base^(2^m)`` are formed by squaring, then the ones of the set bits of
    ``count`` are multiplied, the lowest first.  Tail budget, as in
    :meth:`GridPLD.self_compose` but with ``span = 2^count.bit_length()`` (> ``count``)
    in place of ``count``: a cut made on the ``2^m``-fold power is given ``tail * 2^m /
    (span * levels)`` and is repeated at most ``count / 2^m`` times, so a squaring level
    moves at most ``tail / levels`` in all, and so does each product.  A cut moves mass
    in the certified direction (to ``+inf``, or dropped when optimistic), so any budget
    is sound and a smaller one only cuts less; these depend on ``count`` only through
    its bit length (a canonical self-composition, docs/theory/pld.md).

    ``memo`` (a dict the caller keeps for this ``base``: its owner must key it by the
    base's law, grid and discretisation) keeps the powers of the newest budget (up to
    :data:`MEMO_BYTES`), so every count of one bit length shares the squarings: an
    online ledger asked every 100 steps pays about one product per set bit of the count
    per query.  The answer is
    the same with or without ``memo``.  (Multiplying the highest bit first would let
    consecutive counts share partial products too, but it came out looser: 7e-7
    relative at q 0.01, sigma 1.1, T 1e4, the small powers re-gridded onto the big
    one's coarse grid one by one.)

    A composition of a count of more than ``SPECTRAL_FROM + 2`` bits (at the
    default tolerance, on a free grid) stops squaring at the first level ``m >=
    SPECTRAL_FROM`` where one certified spectral power composes ``base^(2^m)`` taken
    ``count >> m`` times with the product of the lower set bits
    (:func:`_spectral_top`; its certificate goes to ``+inf``, or for an optimistic
    composition is taken off its top, :func:`_optimistic_settle`); the powers kept are
    then those up to ``m``.  (The optimistic side, the lower end of ``epsilon_bounds``,
    did the whole ladder before issue 37: q 0.01, sigma 1.1, T 1e4 its lower end
    5.192538128 -> 5.192542999 and 67 -> 55 ms.)  ``err_tails`` (None:
    :data:`SPECTRAL_ERR_TAILS`) is that certificate's limit in tail budgets; a
    composition made only to screen a direction
    (:data:`~dpacct.accountant.pld.pld_settings.SCREEN_ERR_TAILS`) may take a larger one:
    any certificate is sound, a larger one only looser.
    """
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    bits = count.bit_length()
    levels = bits + 1
    span = 1 << bits
    # (the powers do not depend on err_tails: it only decides where the ladder stops)
    err_tails = SPECTRAL_ERR_TAILS if err_tails is None else err_tails
    params = (tail, points_per_scale, max_step, refine, coarse_cap, bits)
    key = ("powers", params)
    # The memo holds tuples: a thread extends its own list and stores a new tuple, so
    # another thread sharing the part only ever reads a complete prefix of the powers
    kept: tuple = ()
    local: list | None = None
    if memo is not None:
        kept = memo.get(key, ())
        for k in list(memo):
            if k != key:
                memo.pop(k, None)  # only the newest budget's powers are kept (memory)
        local = list(kept) if kept else [base]
    size = sum(_nbytes(p) for p in local) if local else 0
    power = base
    result: SplitPLD | None = None
    # lowest bit first (measured tighter than highest first); a power not kept is
    # dropped once squared, as without a memo
    spectral = bits > SPECTRAL_FROM + 2 and max_step is None and refine == 1 and coarse_cap is None
    seen: dict = {}  # the spectral attempts' window width in loss units
    for m in range(bits):
        if m > 0:
            if local is not None and m < len(local):
                power = local[m]
            else:
                squared = _convolve(power, power, tail * 2.0**m / (span * levels))
                power = _rebalance(squared, points_per_scale, max_step, refine, coarse_cap)
                if local is not None:
                    local.append(power)
                    size += _nbytes(power)
                    if size > MEMO_BYTES:  # too large to keep: computed as without
                        local = None
                        memo.pop(key, None)
        if spectral and SPECTRAL_FROM <= m <= bits - 3:
            # the levels left (their squarings' and products' tail shares) become the
            # aliasing budget of one spectral power
            alias_budget = tail * (bits - m) / levels
            top = _spectral_top(
                power,
                result,
                count >> m,
                power.fine.step,
                alias_budget,
                err_tails * tail,
                seen,
            )
            if top is not None:
                if memo is not None and local is not None and len(local) > len(kept):
                    memo[key] = tuple(local)
                return top
        if not (count >> m) & 1:
            continue
        if result is None:
            result = _rebalance(power, points_per_scale, max_step, refine, coarse_cap)
        else:
            product = _convolve(result, power, tail / levels)
            result = _rebalance(product, points_per_scale, max_step, refine, coarse_cap)
    if memo is not None and local is not None and len(local) > len(kept):
        memo[key] = tuple(local)
    assert result is not None
    if not result.pessimistic:
        # the optimistic re-grid of a concentrated bulk onto the tail's grid rounds it
        # down by up to a step: keep the finest nested grid instead (the tail's atoms
        # stay exact, see :meth:`SplitPLD.merged`)
        return result.merged(MAX_GRID >> 2)
    return result.merged()


def _on_grid(p: SplitPLD, step: float) -> GridPLD:
    """``p`` as one PLD on ``step``, a power-of-two multiple or fraction of both its
    parts' steps: a part on a coarser grid is put onto ``step`` exactly (every atom
    stays a node), a part on a finer one is re-discretised by the certified regrid."""
    out = _onto_finer(p.fine, step)
    return out if p.coarse is None else _add(out, _onto_finer(p.coarse, step))


def _span_points(p: SplitPLD, step: float) -> float:
    """Steps of ``step`` from the lowest to the highest node of ``p``'s parts: what
    :func:`_on_grid` spans (its length minus one, up to a node at each end when a
    finer part is regridded), from the parts' ends alone."""
    parts = (p.fine,) if p.coarse is None else (p.fine, p.coarse)
    lo = min(q.offset * q.step for q in parts)
    hi = max((q.offset + q.pmf.size - 1) * q.step for q in parts)
    return (hi - lo) / step


def _mass_up(pmf: np.ndarray) -> float:
    """An upper bound on a cell's mass (a sum of non-negative terms, within n u)."""
    return float(np.sum(pmf)) * (1.0 + (pmf.size + 2) * 2.0**-53)


def _forward_declines(high: int, mass: float, size: int, max_err: float) -> bool:
    """Whether the spectral power's componentwise forward term at frequency 0 alone
    (about ``high * kappa`` times the power's mass to the ``high``) on the shortest
    window (``_next_fast_len(size)``, ``size`` the longest cell) exceeds ``max_err``."""
    # in logs: a pessimistic mass is a little above 1, and its power at a huge count
    # (2e15 steps) overflows a Python float (inf there means decline, as it should)
    log_mass = high * math.log(mass) if mass > 0.0 else -math.inf
    kappa = _pass_model(_next_fast_len(size))[1]
    return log_mass > 700.0 or high * kappa * math.exp(log_mass) > max_err


def _spectral_top(
    power: SplitPLD,
    low: SplitPLD | None,
    high: int,
    step: float,
    alias_budget: float,
    max_err: float,
    seen: dict | None = None,
) -> GridPLD | None:
    """Pessimistic ``power^high * low`` by one spectral power on the grid ``step``.

    The characteristic-function composition of the engine's FFT kernel (Zhu, Dong &
    Wang 2022, Section 4; Koskela et al. 2020, Section 4), as the schedule path uses it
    (:func:`~dpacct.accountant.pld.schedule_fast._compose_cells`): both factors are put
    on the one grid ``step`` (a certified pessimistic re-discretisation, or exactly onto
    a finer nested grid), transformed once on a window that the Chernoff bound on the
    composed loss (:func:`~dpacct.accountant.pld.pld_fft._window`) leaves at most
    ``alias_budget`` outside on each side, the spectrum of ``power`` raised to ``high``
    by repeated squaring and multiplied by that of ``low``, and inverted once.  The
    circular convolution folds the mass outside the window into it, at most
    :func:`~dpacct.accountant.pld.pld_fft._alias`; the round-off of the transforms and
    the products is at most ``freq_l2 + inv_l1`` in l1
    (:func:`~dpacct.accountant.pld.pld_fft._spectral_error`; Higham 2002, Theorem 24.2).
    A measure within ``err`` in l1 of the exact product has a hockey-stick curve within
    ``err`` of its curve at every epsilon, so the sum of the three is added to the mass
    at ``+inf``: the result is an upper bound (entries clipped at zero only move
    towards their exact, non-negative values).  Returns ``None`` when the window would
    exceed :data:`SPECTRAL_MAX_N` points, or the certificate ``max_err`` (checked
    before the transforms on the forward round-off alone): the caller keeps squaring.
    ``seen`` (the ladder's) keeps the window's width in loss units, about the same at
    every level (the whole composition's): a level whose step would need 1.1 times
    :data:`SPECTRAL_MAX_N` points for it declines before the Chernoff tables.
    """
    # the window holds every point of both factors on ``step``: a factor spanning more
    # than SPECTRAL_MAX_N of them is declined before it is built (near sampling rate
    # 1e-7 the tail's grid is 2^15 bulk steps and one factor ~1e8 points, 0.8 GB)
    if max(_span_points(p, step) for p in (power, low) if p is not None) > SPECTRAL_MAX_N + 2:
        return None
    if seen is not None and seen.get("width", 0.0) > 1.1 * SPECTRAL_MAX_N * step:
        # (checked before the factors are put on the grid: at T 1e6 a declined level
        # spent 1-3 ms building them; declining is always sound: the ladder goes on)
        return None
    cells = [_on_grid(power, step)]
    masses = [_mass_up(cells[0].pmf)]
    # ``low`` on the grid has at most _span_points + LOW_SPAN_NODES nodes: when the
    # power's cell is longer, the test is decided before ``low`` is built (an optimistic
    # re-grid: 1-2 ms a declined level at T 1e6; the same test, the same answer)
    size = cells[0].pmf.size
    if (low is None or size > _span_points(low, step) + LOW_SPAN_NODES) and _forward_declines(
        high, masses[0], size, max_err
    ):
        return None
    if low is not None:
        cells.append(_on_grid(low, step))
        masses.append(_mass_up(cells[1].pmf))
    counts = np.array([high, 1][: len(cells)], dtype=float)
    firsts = np.array([c.offset for c in cells], dtype=np.int64)
    pmfs = [c.pmf for c in cells]
    norms = float(counts @ np.array([_l2(p) for p in pmfs]))
    if _forward_declines(high, masses[0], max(p.size for p in pmfs), max_err):
        return None  # declined before the Chernoff tables (a million steps: 4 MB, 3 ms)
    lam_c_pos, lam_c_neg = _cell_lambdas(step, firsts, pmfs)
    lam_pos, lam_neg = counts @ lam_c_pos, counts @ lam_c_neg
    a_idx, need = _window(step, lam_pos, lam_neg, alias_budget)
    if seen is not None:
        seen["width"] = need * step
    n = _next_fast_len(max(need, max(p.size for p in pmfs), 2))
    if n > SPECTRAL_MAX_N:
        return None
    alias = _alias(step, lam_pos, lam_neg, a_idx, n)
    if alias + high * _pass_model(n)[1] > max_err:
        return None
    # _spectral_error's normwise forward term propagates the forward round-off through
    # the powers with |a^k - b^k| <= k |a - b| max(|a|, |b|)^(k-1) for transforms of
    # modulus at most 1; the ladder's pessimistic PMFs carry their products' round-off
    # bounds as extra mass (measured up to 2.3e-8 above 1), so their transforms may
    # exceed 1 in modulus by that much: that term is scaled by prod_c M_c^{k_c}
    log_grow = sum(k * math.log(max(m, 1.0)) for m, k in zip(masses, counts.tolist(), strict=True))
    norms *= math.exp(log_grow) * (1.0 + 1e-12)
    whole = counts.astype(np.int64)
    spec, mults, fwd = _spectral_power(pmfs, masses, high, n)
    freq_l2, y, inv_l1 = _spectral_error(spec, n, mults, norms, fwd)
    err = alias + freq_l2 + inv_l1 + TINY
    if err > max_err:
        return None
    origin = int(np.dot(whole, firsts))
    y = np.roll(y, -((a_idx - origin) % n))
    np.maximum(y, 0.0, out=y)  # (the roll's own array: one fewer of the window's size)
    # +inf: 1 - prod (1 - inf_c)^{k_c}, rounded up (down for a lower bound)
    with np.errstate(divide="ignore"):
        log_fin = float(counts @ np.log1p(-np.minimum([c.inf_mass for c in cells], 1.0)))
    first, y = _trim(a_idx, y)
    if not power.pessimistic:
        inf_mass = max(-math.expm1(log_fin) * (1 - 1e-12), 0.0)
        return _optimistic_settle(step, first, y, inf_mass, err)
    inf_mass = -math.expm1(log_fin) * (1 + 1e-12)
    return GridPLD(step, first, y, min(inf_mass + err, 1.0), True)


def compose_split(
    bases: list[SplitPLD],
    counts: list[int],
    *,
    tail: float,
    points_per_scale: float,
    max_step: float | None = None,
    refine: int = 1,
    coarse_cap: float | None = None,
) -> GridPLD:
    """``prod_i bases[i] ** counts[i]`` by one joint left-to-right binary ladder.

    Reading the counts' bits from the most significant down, the running product
    ``R`` is squared once per bit and then multiplied by the product of the
    single-step bases whose count has that bit set.  One ladder serves all parts, so
    a composition of several different mechanisms costs about as much as one of them
    instead of one self-composition per part.

    The multiplications are by single steps, re-gridded onto ``R``'s grid once that
    has coarsened.  For a pessimistic PLD this costs little (the upper bound moves by
    about 1e-6 relative on DP-SGD workloads), but an optimistic single step loses
    much more on a coarse grid, so lower bounds keep the per-part right-to-left
    squaring (:func:`self_compose_split`).

    Tail budget: an operation at bit ``j`` is followed by ``j`` squarings, which
    repeat whatever mass it moved ``2^j`` times, so the three operations at bit ``j``
    (squaring, building the factor, multiplying) share ``tail / (bits * 2^j)``; the
    total moved mass is at most ``tail``.
    """
    if not bases or len(bases) != len(counts):
        raise ValueError("bases and counts must be non-empty and of equal length")
    if any(c < 1 for c in counts):
        raise ValueError(f"counts must be >= 1, got {counts}")
    bits = max(c.bit_length() for c in counts)
    factors: dict[tuple[int, ...], SplitPLD] = {}
    result: SplitPLD | None = None
    for j in range(bits - 1, -1, -1):
        budget = tail / (3 * bits * 2.0**j)
        if result is not None:
            squared = _convolve(result, result, budget)
            result = _rebalance(squared, points_per_scale, max_step, refine, coarse_cap)
        members = tuple(i for i, c in enumerate(counts) if (c >> j) & 1)
        if not members:
            continue
        if members not in factors:
            # built once per distinct member set at the highest bit that uses it; its
            # cuts recur at every lower bit using it too (at most 2^(j+1) times in
            # all), hence half a share
            factor = bases[members[0]]
            for i in members[1:]:
                factor = _convolve(factor, bases[i], budget / (2 * len(members)))
                # coarsen as the product widens, as every other product here does
                factor = _rebalance(factor, points_per_scale, max_step, refine, coarse_cap)
            factors[members] = factor
        factor = factors[members]
        if result is None:
            result = _rebalance(factor, points_per_scale, max_step, refine, coarse_cap)
        else:
            product = _convolve(result, factor, budget)
            result = _rebalance(product, points_per_scale, max_step, refine, coarse_cap)
    assert result is not None
    return result.merged()
