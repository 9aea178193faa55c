"""Online certified epsilon of a growing DP-SGD ledger (the fast path kept open).

The steps are cut into *blocks* by the steps alone (:data:`BLOCK_CELLS` distinct cells
or :data:`BLOCK_STEPS` steps, whichever comes first), so the same steps make the same
blocks however they were batched or queried.  A committed block is composed on a loss
grid ``K`` times finer than the history's (:func:`_factor`: 2 to 64, finer for blocks
of few cells or of narrow losses), its cells discretised with node spacing growing
along their long tail (:func:`~dpacct.accountant.pld.graded_cells.graded_cells`),
composed on the block's own short Chernoff window
(:func:`~dpacct.accountant.pld.groups.coarsened_group`) and re-discretised once onto the
history's grid by connect-the-dots (:func:`~dpacct.accountant.pld.coarsen.coarsen`: the
coarse PMF dominates the fine one at every epsilon, and dominating pairs compose).  A
block of ``B`` steps thus widens the loss by ``B (h / K)^2 / 4 + h^2 / 4`` of variance
instead of ``B h^2 / 4`` (``h`` the history's step, ``K`` the factor).

Each direction keeps the product of its blocks' spectra on one shared grid
(:class:`_Direction`), so committing a block is one forward FFT and one product, and a
query composes the steps still pending (and a filter's hypothetical ones) as one more
fine block and costs one inverse FFT.  The certificate
(:func:`~dpacct.accountant.pld.schedule_fast._finish`) adds to delta: every block's
own l1 error (its fine composition's aliasing and round-off, the coarsening's slack),
the aliasing and round-off of the history's product, and the error carried when a
hypothetical query copies the history to a longer grid.  A block's steps that share a
rounding cell are composed at their own smallest sigma and largest q (a dominating step
of each, no farther from them than the cell's grid point); the end runs of a block PMF
of mass below half the per-step tail cut times its steps go to ``+inf``
(:func:`_trim`).  The block PMFs are kept (a few thousand points each, not every cell's
transform on the whole window), so a longer grid is rebuilt from them exactly, up to
:data:`KEPT_BYTES` of them; a longer history is carried to a longer grid as one PMF,
its l1 error counted.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable

import numpy as np
from scipy import fft as sp_fft

from .block_rules import (
    BLOCK_ALIAS_SHARE,
    TRIM_SHARE,
    BlockKey,
    Cell,
    Items,
    Members,
    _budget,
    _coarse_step,
    _composed,
    _cut,
    _factor,
    _trim,
    _variance,
)
from .graded_cells import graded_cells
from .groups import Segment, _compose_group, _row_lambdas, coarsened_group
from .pld_fft import (
    _ORDERS,
    FAST_MAX_N,
    _alias,
    _l2,
    _power,
    _spectral_error,
    _window,
)
from .pld_pair import swapped_delta, swapped_epsilon
from .pld_settings import tail_budgets
from .schedule_fast import ADD_STEP_FACTOR, FAST_STEP, _finish
from .schedule_grid import DEFAULT_GRID, EXACT_VALUES, _check_grid, _round

__all__ = ["IncrementalEpsilon"]

#: the fine-grid cost budget (:data:`~dpacct.accountant.pld.block_rules.FINE_BUDGET`)
#: of the blocks of hypothetical steps (a filter's look-ahead): they only have to stay
#: below the budget, never to match a fold, and a coarser fine grid only raises their
#: answer (it stays a certified bound)
LOOKAHEAD_BUDGET = 8

#: transforms of recent block PMFs on the history's grid kept per direction (bytes): a
#: repeated block (a constant-sigma loop) is transformed once
RECENT_BYTES = 1 << 22
#: hypothetical blocks kept per direction (a filter's look-aheads repeat them, and a
#: constant-sigma loop's queries the pieces of its pending steps, :func:`_pieces`)
ASKED_BLOCKS = 16
#: fine discretisations of recent cells kept per direction (bytes): the pending steps
#: of every query are composed again, mostly of the same cells
FINE_CELL_BYTES = 1 << 22
#: committed block PMFs kept per direction for reuse (bytes): a repeated block (a
#: constant-sigma loop) is composed once
KNOWN_BYTES = 1 << 24
#: a query composes a pending one-cell block in pieces (:func:`_pieces`) only while
#: their extra coarsenings, ``step^2 / 4`` each beyond the first, add at most this share
#: to the loss variance of every step folded so far: a history of tiny steps on the
#: coarsest grid (sigma 20, q 0.001: each coarsening is a few 1e-4 of a block's
#: variance) composes it whole, as its fold will
PIECES_VARIANCE_SHARE = 1e-4
#: a direction keeps its committed block PMFs, to rebuild its spectrum exactly on a
#: longer grid, while they take at most this (bytes; 10 000 random phases take 22 MB
#: in both directions); beyond, the spectrum is carried to a longer grid as one PMF
#: with its l1 error (:meth:`_Direction._carry`), so a long history's memory is its
#: spectrum's, not its blocks'
KEPT_BYTES = 48 << 20
#: committed blocks are composed this many at a time into one *group* PMF on the
#: group's own short window (:func:`~dpacct.accountant.pld.groups._compose_group`, its
#: aliasing and round-off in the certificate) before the group enters the history's
#: spectrum by one transform on the history's long grid: a transform per block on that
#: grid, whose length grows with the history, made the fold superlinear in the phases
#: (10 000 -> 100 000 random phases: most of the time in history-length FFTs); the
#: blocks of the group still being filled enter a query's product (once each, kept)
GROUP_BLOCKS = 16
#: the swapped curve of the remove direction stands for the add direction only when it
#: certifies delta within this relative distance of the remove direction's epsilon;
#: beyond, the add direction is composed (its own composition is tighter: sigma 5,
#: q 1, 50 steps, whose directions are equal, the swapped curve gave 3.7e-4 above
#: both once the tail cuts were a tenth as large)
SWAPPED_SLACK = 2.0**-16


class _Known(dict):
    """Committed blocks by content with the running size of their PMFs (``nbytes``):
    a checkpoint shares the dict, so the count lives with it, not with a direction
    (summing the PMFs anew at every commit made folding quadratic in the blocks)."""

    nbytes = 0


class _Block:
    """One block (or group of blocks) on the history's grid: its
    :class:`~dpacct.accountant.pld.groups.Segment` (the PMF from node ``first`` on, its
    l1 error ``err``, log finite mass ``log_fin``) with what the history's certificate
    needs of it: log-MGF bounds ``lam_pos``/``lam_neg``
    (:func:`~dpacct.accountant.pld.groups._row_lambdas`) and l2 norm ``l2`` (the
    forward round-off of its transform), and its number of ``steps``."""

    __slots__ = ("err", "first", "l2", "lam_neg", "lam_pos", "log_fin", "pmf", "steps")

    def __init__(self, step: float, seg: Segment, steps: int):
        self.first, self.pmf, self.err, self.log_fin = int(seg.first), seg.pmf, seg.err, seg.log_fin
        lp, ln = _row_lambdas(step, np.array([self.first]), [self.pmf])
        self.lam_pos, self.lam_neg = lp[0], ln[0]
        self.l2 = _l2(self.pmf)
        self.steps = steps


class _Direction:
    """One direction's composition of blocks, kept as its spectrum on ``n`` points.

    Everything the certificate needs is additive over the composed blocks and kept as
    running sums: the log-MGF bounds (aliasing window), the forward round-off
    (``sum_b ||p_b||``), the number of complex products, the origin, the log finite
    mass and the blocks' own l1 errors (``errs``).  Committing a block multiplies the
    spectrum by the block PMF's transform.  The grid length is a function of the kept
    blocks alone (:meth:`_length`: the power of two at least twice their Chernoff
    window), never of when steps were folded or what was asked hypothetically, and
    when it changes the spectrum is recomputed exactly from the kept block PMFs (small:
    a block's composed loss is a few thousand points; beyond :data:`KEPT_BYTES` of them,
    carried as one PMF, :meth:`_carry`), so the same steps give the same grid and the
    same answer however they were batched.  The tails are cut at
    ``tau = tail_budgets(delta, horizon).piece`` per step
    (:func:`~dpacct.accountant.pld.pld_settings.tail_budgets`) and the cut mass goes to
    +inf (sound for any number of steps; beyond ``horizon`` steps every block is
    recomposed with a 16 times longer horizon).
    """

    def __init__(self, delta: float, step: float, add: bool, horizon: int) -> None:
        self.delta = delta
        self.step = step
        self.add = add
        self.horizon = horizon
        budget = tail_budgets(delta, horizon)
        self.tau, self.alias_budget = budget.piece, budget.alias
        self.block_alias = BLOCK_ALIAS_SHARE * budget.alias / horizon
        #: the committed blocks' contents, in order
        self.blocks: list[tuple[BlockKey, int]] = []
        #: ... and their PMFs while they take at most :data:`KEPT_BYTES` (a longer grid
        #: is rebuilt from them exactly); None beyond (it is carried, :meth:`_carry`)
        self.kept: list[tuple[tuple[BlockKey, int], np.ndarray]] | None = []
        self.kept_bytes = 0
        self.total = 0
        self.n = 0
        self.spec: np.ndarray | None = None
        self.mults = 0
        t = _ORDERS.size
        self.lam_pos = np.zeros(t)
        self.lam_neg = np.zeros(t)
        self.norms = 0.0
        self.origin = 0
        self.log_fin = 0.0
        #: the sum of the committed blocks' l1 errors
        self.errs = 0.0
        #: the longest block PMF
        self.width = 1
        #: l1 error carried from shorter grids (:meth:`_carry`)
        self.carried = 0.0
        #: cost counters: forward transforms of block PMFs and inverse transforms
        self.forward = 0
        self.inverse = 0
        self._recent: dict[tuple[BlockKey, int], np.ndarray] = {}
        #: recent committed blocks by content (a repeated block is composed once),
        #: :data:`KNOWN_BYTES` of PMFs
        self._known: _Known = _Known()
        #: recent hypothetical and pending blocks by content and budget (a filter's
        #: look-aheads ask the same again)
        self._asked: dict[tuple[BlockKey, int], _Block] = {}
        #: fine discretisations of recent cells (:meth:`_cells`) and their bytes
        self._fine_cells: dict[tuple[float, float, float], tuple[int, np.ndarray, float]] = {}
        self._fine_bytes = 0
        #: committed blocks of the group being filled (:data:`GROUP_BLOCKS`), not yet in
        #: ``spec``; the product of the first ``partial_in`` of their transforms on the
        #: current grid (a cache the queries extend, never changed in place) and its
        #: number of complex products
        self.partial: list[tuple[tuple[BlockKey, int], _Block]] = []
        self.partial_spec: np.ndarray | None = None
        self.partial_in = 0
        self.partial_mults = 0

    def _block(self, items: Items, budget: int) -> tuple[tuple[BlockKey, int], _Block]:
        """The block ``items`` composed (or found composed) at the fine-grid cost budget
        ``budget`` (:func:`~dpacct.accountant.pld.block_rules._factor`), and its key."""
        key = (tuple(items.items()), budget)
        found = self._known.get(key) or self._asked.get(key)
        if found is None:
            found = _Block(self.step, self._compose(items, budget), sum(items.values()))
        return key, found

    def _cells(self, items: Items, factor: int) -> list[tuple[int, np.ndarray, float]]:
        """The cells of ``items`` discretised on the fine grid ``step / factor``
        (:func:`~dpacct.accountant.pld.graded_cells.graded_cells`, the missing ones in
        one vectorised call), kept: the pending steps of every query are composed
        again, mostly of the same cells."""
        fine = self.step / factor
        found = {c: self._fine_cells.get((c[0], c[1], fine)) for c in items}
        missing = [c for c, v in found.items() if v is None]
        if missing:
            firsts, pmfs, infs = graded_cells(
                np.array([s for s, _ in missing]),
                np.array([q for _, q in missing]),
                self.step,
                factor,
                self.tau,
                self.add,
            )
            for (s, q), f, p, i in zip(missing, firsts, pmfs, infs, strict=True):
                cell = (int(f), p.copy(), float(i))  # a copy: not a view of the flat array
                found[(s, q)] = cell
                while self._fine_cells and self._fine_bytes + p.nbytes > FINE_CELL_BYTES:
                    old = self._fine_cells.pop(next(iter(self._fine_cells)))
                    self._fine_bytes -= old[1].nbytes
                self._fine_cells[(s, q, fine)] = cell
                self._fine_bytes += p.nbytes
        out = [found[c] for c in items]
        return out  # type: ignore[return-value]

    def _compose(self, items: Items, budget: int) -> Segment:
        """The block ``items`` composed on the fine grid and coarsened onto the
        history's: :func:`~dpacct.accountant.pld.groups.coarsened_group` of the
        graded fine cells, kept (:meth:`_cells`), as a :class:`Segment`; raises
        OverflowError when the fine window would exceed :data:`FAST_MAX_N`."""
        factor = _factor(items, self.step, budget)
        cells = self._cells(items, factor)
        firsts = np.array([c[0] for c in cells], dtype=np.int64)
        infs = np.array([c[2] for c in cells])
        counts = np.array(list(items.values()), dtype=float)
        out = coarsened_group(
            (firsts, [c[1] for c in cells], infs), counts, self.step, factor, self.block_alias
        )
        if out is None:
            raise OverflowError("the block's fine window exceeds FAST_MAX_N")
        # the trimmed end runs: removed mass, at most ``moved``, counted as error (it
        # enters delta as +inf mass does)
        first, pmf, moved = _trim(out.first, out.pmf, TRIM_SHARE * self.tau * float(counts.sum()))
        return Segment(first, pmf, out.err + moved, out.log_fin)

    def _transform(self, key: tuple[BlockKey, int], block: _Block) -> np.ndarray:
        spec = self._recent.get(key)
        if spec is None or spec.size != self.n // 2 + 1:  # a copy on another grid
            spec = sp_fft.rfft(block.pmf, n=self.n, workers=-1)
            self.forward += 1
            while self._recent and (len(self._recent) + 1) * spec.nbytes > RECENT_BYTES:
                self._recent.pop(next(iter(self._recent)))
            self._recent[key] = spec
        return spec

    def _sums(self, blocks: list[_Block]):
        lam_pos, lam_neg = self.lam_pos.copy(), self.lam_neg.copy()
        norms, origin, log_fin, errs = self.norms, self.origin, self.log_fin, self.errs
        for b in blocks:
            lam_pos += b.lam_pos
            lam_neg += b.lam_neg
            norms += b.l2
            origin += b.first
            log_fin += b.log_fin
            errs += b.err
        return lam_pos, lam_neg, norms, origin, log_fin, errs

    def _rebuild_at(self, n: int) -> None:
        """The spectrum of the kept blocks on ``n`` points, recomputed from their PMFs
        one transform at a time (a repeated block raised to its count)."""
        self.n = n
        self._recent = {}
        counts: dict[tuple[BlockKey, int], int] = {}
        pmfs: dict[tuple[BlockKey, int], np.ndarray] = {}
        for key, pmf in self.kept or ():
            counts[key] = counts.get(key, 0) + 1
            pmfs[key] = pmf
        spec, mults = np.ones(n // 2 + 1, dtype=complex), 0
        with np.errstate(under="ignore", over="ignore", invalid="ignore"):
            for key, pmf in pmfs.items():
                pw, m = _power(sp_fft.rfft(pmf, n=n, workers=-1), counts[key])
                spec *= pw
                mults += m + 1
        self.spec, self.mults = spec, mults
        self.forward += len(pmfs)
        self.partial_spec, self.partial_in, self.partial_mults = None, 0, 0

    def _carry(self, n: int) -> None:
        """The kept composition carried to the longer grid ``n`` as one PMF (one inverse
        and one forward FFT; the block PMFs are not kept).

        Used once the block PMFs are no longer kept (:data:`KEPT_BYTES`; until then a
        longer grid is rebuilt from them exactly).  The composition fits its own
        window, so its inverse transform, rolled to the window's start and clipped at
        zero, is within l1 distance ``2 alias + round-off``
        (:func:`_spectral_error`) of the exact composition of the blocks; that distance
        is added to ``carried``, which enters delta (convolving with probability
        measures and folding a window do not increase an l1 distance, and the
        hockey-stick divergence moves by at most the l1 distance of the PMFs).  The
        grid grows only when the kept blocks' window does (:meth:`_length`), so the
        carries, like the blocks, are a function of the steps alone.
        """
        a_old, _ = _window(self.step, self.lam_pos, self.lam_neg, self.alias_budget)
        alias = _alias(self.step, self.lam_pos, self.lam_neg, a_old, self.n)
        freq_l2, y, inv_l1 = _spectral_error(self.spec, self.n, self.mults, self.norms)
        y = np.maximum(np.roll(y, -((a_old - self.origin) % self.n)), 0.0)
        self.carried = self.carried + 2.0 * alias + freq_l2 + inv_l1
        self.n = n
        self._recent = {}
        self.spec = sp_fft.rfft(y, n=n, workers=-1)
        self.mults = 0
        self.norms = _l2(y)
        self.origin = a_old
        self.forward += 1
        self.inverse += 1
        self.partial_spec, self.partial_in, self.partial_mults = None, 0, 0

    @staticmethod
    def _length(need: int, width: int) -> int:
        """The grid length for a window of ``need`` points and PMFs of ``width``: the
        power of two at least twice the larger (a margin for hypothetical steps)."""
        return 1 << max(2 * max(need, width, 1) - 1, 1).bit_length()

    def _reset_horizon(self, total: int) -> bool:
        """Recompose every kept block with a horizon of at least ``total`` steps
        (16 times longer, as often as needed); False if it cannot certify."""
        horizon = self.horizon
        while horizon < total:
            horizon *= 16
        blocks = [(dict(key), budget) for key, budget in self.blocks]
        self.__init__(self.delta, self.step, self.add, horizon)  # type: ignore[misc]
        return all(self.fold(items, budget) for items, budget in blocks)

    def _prepare(self, blocks: list[_Block], fit_only: bool = False) -> _Direction | None:
        """The direction on a grid that holds it with ``blocks`` composed: itself when
        the grid fits, else (for hypothetical steps) a copy on a longer grid, so what
        is asked never changes the kept state; None when it cannot certify, or (with
        ``fit_only``) when the kept grid does not hold it."""
        blocks = [b for _, b in self.partial] + blocks
        lam_pos, lam_neg = self._sums(blocks)[:2]
        _, need = _window(self.step, lam_pos, lam_neg, self.alias_budget)
        width = max([self.width] + [b.pmf.size for b in blocks])
        if self.spec is not None and need <= self.n and width <= self.n:
            return self
        if fit_only and self.spec is not None:
            return None  # a longer copy of the kept spectrum: not for a look-ahead
        n = self._length(need, width)
        if n > FAST_MAX_N:
            if max(need, width) > FAST_MAX_N:
                return None
            n = FAST_MAX_N
        return self._carried_to(n)

    def _carried_to(self, n: int) -> _Direction:
        """A copy on the longer grid ``n`` (:meth:`_carry`), for hypothetical steps: what
        is asked never changes the kept state."""
        other = copy.copy(self)
        if self.spec is None or not self.blocks:
            other._rebuild_at(n)
        else:
            other._carry(n)
        return other

    def _keep(self, key: tuple[BlockKey, int], block: _Block) -> None:
        """Keep a committed block for reuse (a repeated block), :data:`KNOWN_BYTES` of
        the most recent."""
        known = self._known
        if key in known:
            return
        while known and known.nbytes + block.pmf.nbytes > KNOWN_BYTES:
            known.nbytes -= known.pop(next(iter(known))).pmf.nbytes
        known[key] = block
        known.nbytes += block.pmf.nbytes

    def fold(self, items: Items, budget: int) -> bool:
        """Commit one block (``k`` steps of each cell in ``items``, composed at the
        fine-grid cost budget ``budget``); False if it cannot certify."""
        steps = sum(items.values())
        if self.total + steps > self.horizon and not self._reset_horizon(self.total + steps):
            return False
        try:
            key, block = self._block(items, budget)
        except OverflowError:
            return False
        pending = [b for _, b in self.partial] + [block]
        lam_pos, lam_neg = self._sums(pending)[:2]
        _, need = _window(self.step, lam_pos, lam_neg, self.alias_budget)
        width = max(self.width, block.pmf.size)
        n = self._length(need, width)
        if n > FAST_MAX_N:
            if max(need, width) > FAST_MAX_N:
                return False
            n = FAST_MAX_N
        if self.spec is None or (n > self.n and self.kept is not None):
            self._rebuild_at(n)
        elif n > self.n:
            self._carry(n)
        self.blocks.append(key)
        self._keep(key, block)
        self.partial = [*self.partial, (key, block)]  # a new list: checkpoints share it
        self.total += steps
        self.width = width
        if len(self.partial) >= GROUP_BLOCKS:
            self._commit_group()
        return True

    def _commit_group(self) -> None:
        """The filled group composed into one PMF (:meth:`_group`) and multiplied into
        the kept spectrum (one transform on the history's grid); the grid may grow to
        hold the group PMF, whose window is its own."""
        gkey = ("group", tuple(k for k, _ in self.partial))
        group = self._known.get(gkey)  # type: ignore[call-overload]
        if group is None:
            group = self._group([b for _, b in self.partial])
        if group is None:  # its window exceeds FAST_MAX_N: the blocks one by one
            members = list(self.partial)
        else:
            members = [(gkey, group)]
            self._keep(gkey, group)  # type: ignore[arg-type]
        width = max([self.width] + [b.pmf.size for _, b in members])
        if width > self.n:
            n = self._length(width, width)
            if n > FAST_MAX_N:
                n = FAST_MAX_N
            if self.kept is not None:
                self._rebuild_at(n)
            else:
                self._carry(n)
        self.partial, self.partial_spec, self.partial_in, self.partial_mults = [], None, 0, 0
        sums = self._sums([b for _, b in members])  # after a carry: its origin and norm
        with np.errstate(under="ignore", over="ignore", invalid="ignore"):
            # out of place: a checkpoint (:meth:`IncrementalEpsilon.checkpoint`)
            # keeps the previous spectrum
            for key, b in members:
                self.spec = self.spec * self._transform(key, b)  # type: ignore[operator]
                self.mults += 1
                if self.kept is not None:
                    self.kept = [*self.kept, (key, b.pmf)]  # a new list: checkpoints share it
                    self.kept_bytes += b.pmf.nbytes
                    if self.kept_bytes > KEPT_BYTES:
                        self.kept = None  # from now on a longer grid is carried (_carry)
        self.width = width
        self.lam_pos, self.lam_neg, self.norms, self.origin, self.log_fin, self.errs = sums

    def _group(self, blocks: list[_Block]) -> _Block | None:
        """The blocks composed into one PMF on their own window
        (:func:`~dpacct.accountant.pld.groups._compose_group`: its aliasing, round-off
        and normalisation an l1 error, added to the blocks' own; convolving with
        probability measures does not increase an l1 distance, so the errors add);
        None when that window would exceed :data:`FAST_MAX_N`."""
        out = _compose_group(
            self.step,
            np.array([b.first for b in blocks], dtype=np.int64),
            [b.pmf for b in blocks],
            np.ones(len(blocks)),
            self.block_alias,
        )
        if out is None:
            return None
        seg = Segment(
            out.first,
            out.pmf,
            out.err + math.fsum(b.err for b in blocks),
            math.fsum(b.log_fin for b in blocks),
        )
        return _Block(self.step, seg, sum(b.steps for b in blocks))

    def _partial_product(self) -> tuple[np.ndarray | None, int]:
        """The product of the partial group's transforms on the current grid and its
        number of complex products, the cache extended by the blocks not yet in it
        (out of place: a checkpoint may share the old array)."""
        spec, mults = self.partial_spec, self.partial_mults
        if self.partial_in < len(self.partial):
            with np.errstate(under="ignore", over="ignore", invalid="ignore"):
                for key, b in self.partial[self.partial_in :]:
                    t = self._transform(key, b)
                    spec = t if spec is None else spec * t
                    mults += 1
            self.partial_spec, self.partial_in, self.partial_mults = spec, len(self.partial), mults
        return spec, mults

    def pld(self, extra: list[tuple[Items, int]], fit_only: bool = False):
        """The composed pessimistic :class:`GridPLD` with the blocks ``extra`` (each
        with its fine-grid cost budget, see :meth:`_block`) composed too (not kept);
        None when it cannot certify or (``fit_only``) the kept grid does not hold it."""
        # a look-ahead's many steps of one candidate make many equal blocks: each
        # distinct block is composed once and its transform raised to its count
        counts: dict[tuple[BlockKey, int], int] = {}
        for items, budget in extra:
            key = (tuple(items.items()), budget)
            counts[key] = counts.get(key, 0) + 1
        distinct: dict[tuple[BlockKey, int], tuple[_Block, int]] = {}
        try:
            for key, k in counts.items():
                distinct[key] = (self._block(dict(key[0]), key[1])[1], k)
        except OverflowError:
            return None
        for key, (block, _) in distinct.items():
            if key not in self._known:
                self._asked[key] = block
                while len(self._asked) > ASKED_BLOCKS:
                    self._asked.pop(next(iter(self._asked)))
        blocks = [b for b, k in distinct.values() for _ in range(k)]
        on = self._prepare(blocks, fit_only)
        if on is None:
            return None
        made = on.forward
        lam_pos, lam_neg, norms, origin, log_fin, errs = on._sums(
            [b for _, b in on.partial] + blocks
        )
        a_idx, _ = _window(on.step, lam_pos, lam_neg, on.alias_budget)
        spec, mults = on.spec, on.mults
        partial, p_mults = on._partial_product()
        if partial is not None:
            spec = spec * partial  # type: ignore[operator]
            mults += p_mults + 1
        if on is not self:  # a copy on a longer grid: its transforms count here
            self.forward += on.forward - made
            made = on.forward
        if blocks:
            spec = spec.copy()  # type: ignore[union-attr]
            with np.errstate(under="ignore", over="ignore", invalid="ignore"):
                for key, (b, k) in distinct.items():
                    pw, m = _power(on._transform(key, b), k)
                    spec *= pw
                    mults += m + 1
            if on is not self:  # a copy on a longer grid: its transforms count here
                self.forward += on.forward - made
        alias = _alias(on.step, lam_pos, lam_neg, a_idx, on.n)
        self.inverse += 1
        out = _finish(
            on.step,
            spec,
            on.n,
            mults,
            norms,
            alias,
            a_idx,
            origin,
            log_fin,
            True,
            carried=on.carried + errs,
        )
        return out[0]


def _pieces(items: Items, budget: int, step: float, var: float) -> list[tuple[Items, int]]:
    """The pending block ``items`` as a query composes it: a block of one cell (a
    constant-sigma loop) in pieces of ``2^j`` steps, one for each binary digit of its
    count (at most eight below :data:`~dpacct.accountant.pld.block_rules.BLOCK_STEPS`),
    so that a loop's queries reuse a few pieces composed once each, their transforms
    kept, instead of composing every partial block anew; any other block whole.  A
    function of the steps alone, so the same steps give the same answer however they
    were queried.  Each piece is coarsened onto the history's grid once, so a query pays
    up to eight coarsenings where the fold of the full block pays one: a slightly looser
    bound on the pending steps, still certified, used only while those coarsenings
    (``step^2 / 4`` each beyond the first, ``step`` the history's) add at most
    :data:`PIECES_VARIANCE_SHARE` of ``var``, the loss variance of the committed steps,
    plus the block's (measured at most 4.2e-5 relative in epsilon at sigma 2-4, q
    0.001-0.004; the test allows 1e-4).

    Examples
    --------
    >>> _pieces({(1.0, 0.01): 200}, 128, 1e-3, 1.0)
    [({(1.0, 0.01): 128}, 128), ({(1.0, 0.01): 64}, 128), ({(1.0, 0.01): 8}, 128)]
    >>> _pieces({(20.0, 0.001): 200}, 128, 1e-3, 0.0)  # tiny steps: the block whole
    [({(20.0, 0.001): 200}, 128)]
    """
    if len(items) != 1:
        return [(items, budget)]
    ((cell, count),) = items.items()
    bits = [1 << j for j in range(count.bit_length() - 1, -1, -1) if count >> j & 1]
    extra = (len(bits) - 1) * step * step / 4.0
    if extra > PIECES_VARIANCE_SHARE * (var + _variance(items)[0]):
        return [(items, budget)]
    return [({cell: k}, budget) for k in bits]


class IncrementalEpsilon:
    """Certified upper bound on epsilon of a growing DP-SGD ledger, step by step.

    Steps are rounded up to their dominating cell (see :meth:`_cells`) and cut into
    blocks by the steps alone (:data:`BLOCK_CELLS` distinct cells or
    :data:`BLOCK_STEPS` steps).  A committed block is composed on a loss grid
    ``K`` times finer than the history's (:func:`_factor`) and re-discretised once onto it
    (:func:`~dpacct.accountant.pld.groups.coarsened_group` of graded cells), and enters
    each direction's kept spectrum as one factor (:class:`_Direction`); the steps still
    pending at a query, with any hypothetical ones, are cut into the blocks folding them
    would make (those holding hypothetical steps composed on a coarser fine grid,
    :data:`LOOKAHEAD_BUDGET`), so a query costs those blocks and one inverse FFT.

    Certificate: every block PMF dominates its steps' composition at every epsilon up
    to its l1 error (connect-the-dots on the fine grid, then once on the coarse one:
    :mod:`~dpacct.accountant.pld.coarsen`), and dominating pairs compose; the blocks'
    errors, the aliasing and round-off of the history's product and the tails cut
    (to ``+inf``) are all added to delta.

    The add direction is composed only once the remove direction's swapped curve
    (:func:`~dpacct.accountant.pld.pld_pair.swapped_delta`) no longer certifies it,
    on a loss grid :data:`ADD_STEP_FACTOR` times coarser; from then on both are kept.
    ``epsilon`` returns ``None`` when a window would exceed :data:`FAST_MAX_N` (the
    caller then uses the engine's route).

    Parameters
    ----------
    delta : float
        The delta of every answer.
    grid : float, default DEFAULT_GRID
        Relative width of the rounding cells in sigma and q.
    step : float, optional
        The history's loss step (the blocks are composed at ``step / K``); default:
        chosen from the first block's loss variance (:func:`_coarse_step`).

    Examples
    --------
    >>> inc = IncrementalEpsilon(1e-5)
    >>> inc.fold([(1.0 * 0.999**t, 0.01, 1) for t in range(500)])
    >>> a = inc.epsilon()
    >>> b = inc.epsilon([(0.6, 0.01, 100)])  # hypothetical, not kept
    >>> bool(0 < a < b) and inc.epsilon() == a
    True
    """

    def __init__(
        self, delta: float, *, grid: float = DEFAULT_GRID, step: float | None = None
    ) -> None:
        self.delta = delta
        self.grid = _check_grid(grid)
        self.w = math.log1p(self.grid)
        #: the step is fixed when given, else by the first committed block
        self._given_step = step is not None
        self.step = FAST_STEP if step is None else float(step)
        self.remove = _Direction(delta, self.step, False, 1 << 20)
        self.add: _Direction | None = None
        self._eps: float | None = 0.0
        self.ok = True
        #: coordinate values kept exact in the cells (see :meth:`_cells`)
        self._exact_sigma: set[float] = set()
        self._exact_q: set[float] = set()
        #: folded steps not yet composed (cell -> count, and their number), and the
        #: committed blocks
        self._pending: Members = {}
        self._pending_steps = 0
        self._blocks: list[tuple[Items, int]] = []
        #: the loss variance of the committed steps (:func:`_variance`)
        self._var = 0.0

    @property
    def inverse_transforms(self) -> int:
        return self.remove.inverse + (0 if self.add is None else self.add.inverse)

    def _cells(self, steps, *, keep: bool = True) -> list[tuple[Cell, Cell, int]]:
        """Every step with its cell, in order: ``(cell, (sigma, q), count)``.  The cells
        group the steps of a block that are composed as one dominating step
        (:func:`_composed`).  A coordinate value already kept exact, or a new one of a
        folded step while fewer than :data:`EXACT_VALUES` are kept (a constant q, a step
        schedule's few sigmas), is its own cell coordinate; others are rounded up to
        the grid (smaller sigma, larger q).  Only folded steps (``keep``) claim exact
        values, in the order they are recorded, so the cell of a step never depends on
        what was asked hypothetically before."""
        out: list[tuple[Cell, Cell, int]] = []
        for sigma, q, count in steps:
            sigma, q = float(sigma), float(q)
            cell_sigma, cell_q = _round(sigma, q, self.w, True)
            key = (
                sigma if self._keep(self._exact_sigma, sigma, keep) else cell_sigma,
                q if self._keep(self._exact_q, q, keep) else cell_q,
            )
            if int(count) > 0:
                out.append((key, (sigma, q), int(count)))
        return out

    @staticmethod
    def _keep(kept: set[float], value: float, keep: bool) -> bool:
        if value in kept:
            return True
        if keep and len(kept) < EXACT_VALUES:
            kept.add(value)
            return True
        return False

    def fold(self, steps: Iterable[tuple[float, float, int]]) -> None:
        """Add the steps ``(sigma, q, count)`` to the kept composition.

        Steps wait in a block until a new distinct cell would make it
        :data:`BLOCK_CELLS`, or it holds :data:`BLOCK_STEPS` steps; the block is then
        composed into both directions' spectra.
        """
        cells = self._cells(steps)
        if not cells:
            return
        self._eps = None
        blocks, self._pending, self._pending_steps = _cut(self._pending, self._pending_steps, cells)
        for block in blocks:
            self._commit(_composed(block), _budget(block))

    def _use_step(self, first_block: Items) -> None:
        """Before anything is committed: the loss step of a history whose first block
        is ``first_block`` (:func:`_coarse_step`); the directions, still empty, are
        made anew on it when it changes."""
        if self._given_step or self._blocks:
            return
        step = _coarse_step(first_block)
        if step != self.step:
            self.step = step
            self.remove = _Direction(self.delta, step, False, self.remove.horizon)
            if self.add is not None:
                self.add = _Direction(self.delta, ADD_STEP_FACTOR * step, True, self.add.horizon)

    def _commit(self, block: Items, budget: int) -> None:
        self._use_step(block)
        self._blocks.append((block, budget))
        self._var += _variance(block)[0]
        self.ok = self.ok and self.remove.fold(block, budget)
        if self.add is not None:
            self.ok = self.ok and self.add.fold(block, budget)

    def _asked(
        self, extra: Iterable[tuple[float, float, int]]
    ) -> tuple[list[tuple[Items, int]], bool]:
        """The blocks a query composes on top of the kept ones, with their fine-grid
        cost budgets: the pending steps and the hypothetical ``extra`` ones, cut as
        folding them would cut them (the last block partial), and whether ``extra``
        holds any step.  Pending steps alone are composed as their fold will compose
        them; blocks holding hypothetical steps (a filter's look-ahead) at
        :data:`LOOKAHEAD_BUDGET`: they only have to stay under a budget, and a coarser
        fine grid only raises their certified answer."""
        asked = self._cells(extra, keep=False)
        blocks, last, _ = _cut(self._pending, self._pending_steps, asked)
        if last:
            blocks.append(last)
        if asked:
            return [(_composed(b), LOOKAHEAD_BUDGET) for b in blocks], True
        # pending steps alone: at most one block, the partial one
        out = [p for b in blocks for p in _pieces(_composed(b), _budget(b), self.step, self._var)]
        return out, False

    def epsilon(
        self, extra: Iterable[tuple[float, float, int]] = (), *, fit_only: bool = False
    ) -> float | None:
        """Certified epsilon at ``delta`` of the composition (with ``extra``, not kept).

        ``None`` when the fast path cannot certify, or (``fit_only``, for a filter's
        cheap look-ahead) when the hypothetical ``extra`` steps do not fit the kept
        loss grid: then nothing is copied to a longer grid.
        """
        blocks, asked = self._asked(extra)
        if not asked and self._eps is not None:
            return self._eps
        if not self.ok:
            return None
        if not blocks and self.remove.total == 0:
            return 0.0
        if blocks:
            self._use_step(blocks[0][0])
        rem = self.remove.pld(blocks, fit_only and asked)
        if rem is None:
            return None
        eps = float(rem.epsilon(self.delta))
        if swapped_delta(rem, eps) > self.delta:
            # the add direction from the swapped curve first (no second composition)
            found = swapped_epsilon(rem, self.delta, eps)
            if found is not None and found <= eps * (1.0 + SWAPPED_SLACK):
                eps = found
            else:
                if self.add is None:
                    self.add = _Direction(
                        self.delta,
                        ADD_STEP_FACTOR * self.step,
                        True,
                        self.remove.horizon,
                    )
                    # the same blocks in the same order as the remove direction
                    for block, budget in self._blocks:
                        if not self.add.fold(block, budget):
                            self.ok = False
                            return None
                add = self.add.pld(blocks, fit_only and asked)
                if add is None:
                    return None
                eps = max(eps, float(add.epsilon(self.delta)))
        if not asked:
            self._eps = eps
        return eps

    def checkpoint(self) -> tuple:
        """The state :meth:`rollback` returns to (a filter's trial of a step it may
        refuse).  Cheap: the spectra are shared, never changed in place."""

        def kept(d: _Direction | None) -> _Direction | None:
            if d is None:
                return None
            out = copy.copy(d)
            out.blocks = list(d.blocks)
            return out

        return (
            kept(self.remove),
            kept(self.add),
            self._eps,
            self.ok,
            set(self._exact_sigma),
            set(self._exact_q),
            {cell: dict(m) for cell, m in self._pending.items()},
            self._pending_steps,
            list(self._blocks),
            self.step,
            self._var,
        )

    def rollback(self, state: tuple) -> None:
        """Return to the state of :meth:`checkpoint` (the trial's steps forgotten)."""
        (
            self.remove,
            self.add,
            self._eps,
            self.ok,
            self._exact_sigma,
            self._exact_q,
            self._pending,
            self._pending_steps,
            self._blocks,
            self.step,
            self._var,
        ) = state
