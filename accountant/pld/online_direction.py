"""One direction of the online ledger's composition, kept as a spectrum (the DP-SGD wing).

:class:`_Direction` holds the committed blocks of
:class:`~dpacct.accountant.pld.incremental.IncrementalEpsilon` in one direction (remove
or add): each block a :class:`~dpacct.accountant.pld.groups.Segment` on the history's
loss grid (:class:`_Block`), :data:`GROUP_BLOCKS` of them composed into one group PMF on
the group's own window, and the groups' product kept as a spectrum on the history's
grid, with the running sums its certificate needs.  Split from
:mod:`~dpacct.accountant.pld.incremental`, which cuts the steps into blocks and answers
the queries.
"""

from __future__ import annotations

import copy
import math

import numpy as np
from scipy import fft as sp_fft

from .block_rules import (
    BLOCK_ALIAS_SHARE,
    BLOCK_ALIAS_TRIES,
    TRIM_SHARE,
    BlockKey,
    Items,
    _delta_factor,
    _factor,
    _trim,
)
from .coarsen import coarsen
from .graded_cells import graded_cells
from .groups import (
    BLOCK_ORDERS,
    Segment,
    _block_rows,
    _cell_sizes,
    _compose_group,
    _row_lambdas,
)
from .pld_fft import (
    _ORDERS,
    FAST_MAX_N,
    NEG_WEIGHTS_CACHED,
    _alias,
    _l2,
    _power,
    _spectral_error,
    _window,
)
from .pld_settings import tail_budgets
from .schedule_fast import _finish

__all__: list[str] = []

#: transforms of recent block PMFs on the history's grid kept per direction (bytes): a
#: repeated block (a constant-sigma loop) is transformed once
RECENT_BYTES = 1 << 22
#: hypothetical blocks kept per direction (a filter's look-aheads repeat them, and a
#: constant-sigma loop's queries the pieces of its pending steps, :func:`_pieces`)
ASKED_BLOCKS = 16
#: fine discretisations of recent cells kept per direction (bytes): the pending steps
#: of every query are composed again, mostly of the same cells
FINE_CELL_BYTES = 1 << 22
#: log-MGF rows of recent fine cells kept per direction (rows): a query's pending
#: block is composed again at every query, mostly of the same cells, and a cell's row
#: is a function of the cell alone (:meth:`_Direction._lambdas`)
CELL_ROWS = 4096
#: committed block PMFs kept per direction for reuse (bytes): a repeated block (a
#: constant-sigma loop) is composed once
KNOWN_BYTES = 1 << 24
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
#: a group PMF's end runs of mass up to this many per-step tail cuts go to ``+inf``
#: (:func:`_trim`): the round-off's positive crumbs across the group's window would
#: otherwise double the history's grid; a block's share (``TRIM_SHARE`` per step,
#: thousands of steps) moved 1 000 random phases' answer by 1e-8 relative
GROUP_TRIM = 1.0


#: candidate placements of the history's window tried by :func:`_placed` (the slack of a
#: grid longer than the window needs, split between the two tails)
PLACEMENTS = 65


def _placed(step: float, lam_pos: np.ndarray, lam_neg: np.ndarray, budget: float, n: int) -> int:
    """First node of the ``n``-point circular window of the history's product: the one,
    among :data:`PLACEMENTS` evenly spread over the slack ``n - need``, whose Chernoff
    bound on the mass outside (:func:`~dpacct.accountant.pld.pld_fft._alias`, both
    tails) is smallest.

    :func:`~dpacct.accountant.pld.pld_fft._window` sizes a window of ``need`` points
    with each tail at most ``budget``; the grid is longer (at least twice that,
    :meth:`_Direction._length`), and starting it at the window's first node left the
    lower tail's aliasing at the full budget (a share of delta: ``1e-4 delta`` in the
    certificate of every reading).  Any first node is sound, the aliasing at the one
    chosen being what enters the certificate; every candidate still covers the
    window (``a <= bottom``, ``a + n - 1 >= top``), and the choice is a function of the
    composed blocks alone (docs/theory/schedules.md, "The history's window").

    Examples
    --------
    >>> lam = 0.5 * _ORDERS**2  # a standard normal loss: Lambda(t) = t^2 / 2 both ways
    >>> bottom, need = _window(0.01, lam, lam, 1e-6)
    >>> a = _placed(0.01, lam, lam, 1e-6, 4 * need)
    >>> bool(a < bottom and _alias(0.01, lam, lam, a, 4 * need) < 1e-30)
    True
    """
    bottom, need = _window(step, lam_pos, lam_neg, budget)
    slack = n - need
    if slack <= 0:
        return bottom
    a = bottom - np.unique(np.round(np.linspace(0.0, slack, PLACEMENTS)).astype(np.int64))
    t = _ORDERS[None, :]
    lp = (lam_pos + 1e-12 * np.abs(lam_pos))[None, :]
    ln = (lam_neg + 1e-12 * np.abs(lam_neg))[None, :]
    # log of each tail's bound, as _alias computes it, for every candidate
    above = np.min(lp - t * ((a + n) * step)[:, None], axis=1)
    below = np.min(ln + t * ((a - 1) * step)[:, None], axis=1)
    return int(a[int(np.argmin(np.logaddexp(above, below)))])


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
        self.block_alias = BLOCK_ALIAS_SHARE * budget.alias
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
        self._fine_cells: dict[
            tuple[float, float, float], tuple[int, np.ndarray, float, float, float]
        ] = {}
        self._fine_bytes = 0
        #: their log-MGF rows (:meth:`_lambdas`), at most :data:`CELL_ROWS`
        self._cell_rows: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
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

    def _cells(
        self, items: Items, factor: int
    ) -> list[tuple[int, np.ndarray, float, float, float]]:
        """The cells of ``items`` discretised on the fine grid ``step / factor``
        (:func:`~dpacct.accountant.pld.graded_cells.graded_cells`, the missing ones in
        one vectorised call), kept: the pending steps of every query are composed
        again, mostly of the same cells.  Each ``(first, pmf, inf, l2, l1)``, its norms
        as :func:`~dpacct.accountant.pld.groups._cell_sizes` gives them (kept too: a
        composition takes both of every cell)."""
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
            # views of one flat array no longer than the cache itself are kept as they
            # are (evicted in order, they hold at most one such array beyond the
            # budget); of a longer one, copies, so that it is not held whole
            own = sum(p.nbytes for p in pmfs) > FINE_CELL_BYTES
            for (s, q), f, p, i in zip(missing, firsts, pmfs, infs, strict=True):
                p = p.copy() if own else p
                cell = (int(f), p, float(i), *_cell_sizes(p))
                found[(s, q)] = cell
                while self._fine_cells and self._fine_bytes + p.nbytes > FINE_CELL_BYTES:
                    old = self._fine_cells.pop(next(iter(self._fine_cells)))
                    self._fine_bytes -= old[1].nbytes
                self._fine_cells[(s, q, fine)] = cell
                self._fine_bytes += p.nbytes
        out = [found[c] for c in items]
        return out  # type: ignore[return-value]

    def _lambdas(self, keys: list[tuple[float, float, float]]):
        """:func:`~dpacct.accountant.pld.groups._block_rows` (the log-MGF bounds at
        :data:`~dpacct.accountant.pld.groups.BLOCK_ORDERS`) for the fine cells ``keys``
        (``(sigma, q, fine step)``, as :meth:`_cells` keeps them), each row made once
        and kept (:data:`CELL_ROWS`).  A row is a function of its cell, the step and
        whether the call's rows share one weight table (its longest row, passed on), so
        the rows are those of one call over all the cells, bit for bit."""

        def lambdas(step: float, firsts: np.ndarray, pmfs: list[np.ndarray]):
            longest = max(p.size for p in pmfs)
            shared = longest <= NEG_WEIGHTS_CACHED
            rows = self._cell_rows
            found = [rows.get((key, shared)) for key in keys]
            miss = [i for i, r in enumerate(found) if r is None]
            if miss:
                lp, ln = _block_rows(
                    step, np.asarray(firsts)[miss], [pmfs[i] for i in miss], longest
                )
                for j, i in enumerate(miss):
                    found[i] = (lp[j], ln[j])
                    while len(rows) >= CELL_ROWS:
                        rows.pop(next(iter(rows)))
                    rows[(keys[i], shared)] = found[i]
            return (
                np.array([r[0] for r in found]),  # type: ignore[index]
                np.array([r[1] for r in found]),  # type: ignore[index]
            )

        return lambdas

    def _compose(self, items: Items, budget: int) -> Segment:
        """The block ``items`` composed on the fine grid and coarsened onto the
        history's: the graded fine cells (:meth:`_cells`) composed on the fine grid
        ``step / K`` by one product (:func:`~dpacct.accountant.pld.groups.
        _compose_group`), coarsened once (:func:`~dpacct.accountant.pld.coarsen.
        coarsen`) and its end runs trimmed (:func:`~dpacct.accountant.pld.block_rules.
        _trim`), as a :class:`Segment`.  ``K`` is :func:`~dpacct.accountant.pld.
        block_rules._factor`'s, at most :data:`~dpacct.accountant.pld.block_rules.
        SMALL_DELTA_FACTOR` below :data:`~dpacct.accountant.pld.block_rules.SMALL_DELTA`
        for a block at the exact budget (:func:`~dpacct.accountant.pld.block_rules.
        _delta_factor`).  A block is composed whole: composing it in runs of 32 cells
        whose fine PMFs were kept and joined (issue 37, session 20, first round) added
        the runs' l1 errors, which put answers above main's at small delta (128 decaying
        steps +5.9e-4 at 1e-9, 260 steps +4e-9 at 1e-5).  Raises OverflowError when
        the fine window would exceed :data:`FAST_MAX_N`.

        Where a block's time goes (issue 37, session 22; 26 random phases x 10 at ``K =
        8``, CPU on a loaded machine): the cells' discretisation 14 ms, their Chernoff
        bounds 9 ms, 26 transforms of 65 536 points 15-17 ms, the round-off bound's
        passes 5 ms (14 before they went in column slices).  The window is the block's
        Chernoff window at its aliasing budget (1e-12), about 8 loss units at the
        powers-of-two orders (63 515 fine points; the composed mass beyond 5.5 units is
        1e-12, beyond 7.1 1e-14): at the orders that set it every step's far tail adds
        to the bound; at :data:`~dpacct.accountant.pld.groups.BLOCK_ORDERS` (four
        orders between them, session 28) about 6.4 units (53 155 points).  A bulk-fine,
        tail-coarse split does not shorten it much: with every cell cut at loss ``A``
        the bulk's Chernoff window is still 4.1 units at ``A = 0.5`` (the tails, 7e-3 of
        a block's mass, then composed on the coarse grid), 5.0 at 1, 8.0 at 2, and each
        cell would need two coarse rows (bulk and whole) for the tail terms."""
        factor = _delta_factor(_factor(items, self.step, budget), budget, self.delta)
        fine = self.step / factor
        cells = self._cells(items, factor)
        counts = np.array(list(items.values()), dtype=float)
        infs = np.array([c[2] for c in cells])
        if counts.size == 1 and counts[0] == 1.0:
            # one step (the ledger's folded full-batch Gaussian, a lone pending step):
            # its fine cell is its composition; a transform would only add its window's
            # aliasing and round-off to the block's error
            first0, pmf0, err0 = cells[0][0], cells[0][1], 0.0
        else:
            out = _compose_group(
                fine,
                np.array([c[0] for c in cells], dtype=np.int64),
                [c[1] for c in cells],
                counts,
                self.block_alias,
                BLOCK_ALIAS_TRIES,
                self._lambdas([(s, q, fine) for s, q in items]),
                BLOCK_ORDERS,
                (np.array([c[3] for c in cells]), np.array([c[4] for c in cells])),
            )
            if out is None:
                raise OverflowError("the block's fine window exceeds FAST_MAX_N")
            first0, pmf0, err0 = out.first, out.pmf, out.err
        with np.errstate(divide="ignore"):
            log_fin = float(counts @ np.log1p(-np.minimum(infs, 1.0)))
        cfirst, cpmf, err = coarsen(int(first0), pmf0, int(factor), fine, err0)
        # the trimmed end runs: removed mass, at most ``moved``, counted as error (it
        # enters delta as +inf mass does)
        first, pmf, moved = _trim(cfirst, cpmf, TRIM_SHARE * self.tau * float(counts.sum()))
        return Segment(first, pmf, err + moved, log_fin)

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
                pw, m = _power(sp_fft.rfft(pmf, n=n, workers=-1), counts[key], consume=True)
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
        a_old = _placed(self.step, self.lam_pos, self.lam_neg, self.alias_budget, self.n)
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

    def reserve(self, items: Items, budget: int) -> bool:
        """Grow the kept grid to hold the committed blocks with the block ``items`` too
        (composed at every query, never committed: the ledger's folded full-batch
        Gaussian), as :meth:`fold` grows it for a committed block: rebuilt exactly from
        the kept block PMFs, else carried (:meth:`_carry`); the block is kept for the
        queries (:meth:`pld`).  False if it cannot certify."""
        try:
            key, block = self._block(items, budget)
        except OverflowError:
            return False
        if key not in self._known:
            self._asked[key] = block
            while len(self._asked) > ASKED_BLOCKS:
                self._asked.pop(next(iter(self._asked)))
        lam_pos, lam_neg = self._sums([b for _, b in self.partial] + [block])[:2]
        _, need = _window(self.step, lam_pos, lam_neg, self.alias_budget)
        n = self._length(need, max(self.width, block.pmf.size))
        if n > FAST_MAX_N:
            if max(need, self.width, block.pmf.size) > FAST_MAX_N:
                return False
            n = FAST_MAX_N
        if self.spec is None or (n > self.n and self.kept is not None):
            self._rebuild_at(max(n, self.n))
        elif n > self.n:
            self._carry(n)
        return True

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
            BLOCK_ALIAS_TRIES,
        )
        if out is None:
            return None
        steps = sum(b.steps for b in blocks)
        # its end runs (round-off's positive crumbs across the group's window, the
        # tails) trimmed (:data:`GROUP_TRIM`): a shorter PMF, a shorter grid
        first, pmf, moved = _trim(out.first, out.pmf, GROUP_TRIM * self.tau)
        seg = Segment(
            first,
            pmf,
            out.err + moved + math.fsum(b.err for b in blocks),
            math.fsum(b.log_fin for b in blocks),
        )
        return _Block(self.step, seg, steps)

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
        a_idx = _placed(on.step, lam_pos, lam_neg, on.alias_budget, on.n)
        spec, mults = on.spec, on.mults
        partial, p_mults = on._partial_product()
        if partial is not None:
            spec = spec * partial  # type: ignore[operator]
            mults += p_mults + 1
        if on is not self:  # a copy on a longer grid: its transforms count here
            self.forward += on.forward - made
            made = on.forward
        if blocks:
            # the kept spectrum is shared (the direction's, a checkpoint's): the first
            # product out of place, the rest into it; a block of count 1 multiplies by
            # its kept transform itself (``_power`` would copy it: the same values)
            fresh = partial is not None  # ``spec * partial`` above is this query's
            with np.errstate(under="ignore", over="ignore", invalid="ignore"):
                for key, (b, k) in distinct.items():
                    t = on._transform(key, b)
                    pw, m = (t, 0) if k == 1 else _power(t, k)
                    if fresh:
                        spec *= pw
                    else:
                        spec, fresh = spec * pw, True  # type: ignore[operator]
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
