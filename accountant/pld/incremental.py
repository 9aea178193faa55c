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

from .block_rules import (
    BLOCK_CELLS,
    EXACT_BUDGET,
    EXACT_FACTOR,
    EXACT_STEPS,
    Cell,
    Items,
    Members,
    _budget,
    _composed,
    _cut,
    _history_step,
    _variance,
)
from .online_direction import _Direction
from .pld_pair import swapped_delta, swapped_epsilon
from .schedule_fast import ADD_STEP_FACTOR, FAST_STEP
from .schedule_grid import DEFAULT_GRID, EXACT_VALUES, _check_grid, _round_q, _round_sigma

__all__ = ["IncrementalEpsilon"]

#: the fine-grid cost budget (:data:`~dpacct.accountant.pld.block_rules.FINE_BUDGET`)
#: of the blocks of hypothetical steps (a filter's look-ahead): they only have to stay
#: below the budget, never to match a fold, and a coarser fine grid only raises their
#: answer (it stays a certified bound)
LOOKAHEAD_BUDGET = 8

#: a query composes a pending one-cell block in pieces (:func:`_pieces`) only while
#: their extra coarsenings, ``step^2 / 4`` each beyond the first, add at most this share
#: to the loss variance of every step folded so far: a history of tiny steps on the
#: coarsest grid (sigma 20, q 0.001: each coarsening is a few 1e-4 of a block's
#: variance) composes it whole, as its fold will
PIECES_VARIANCE_SHARE = 1e-4
#: the swapped curve of the remove direction stands for the add direction only when it
#: certifies delta within this relative distance of the remove direction's epsilon;
#: beyond, the add direction is composed too and the smaller bound taken (its own
#: composition can be tighter: sigma 5, q 1, 50 steps, whose directions are equal, the
#: swapped curve gave 3.7e-4 above both with the tail cuts a tenth as large)
SWAPPED_SLACK = 2.0**-16
#: where the swapped curve does not certify it, the add direction is first composed on
#: a grid this many times the history's step, its blocks at the look-ahead's fine-grid
#: budget (:data:`LOOKAHEAD_BUDGET`): when that cheap upper bound is already at most
#: the remove direction's epsilon it is the answer's add side; only otherwise is the
#: add direction composed at :data:`~dpacct.accountant.pld.schedule_fast.ADD_STEP_FACTOR`
#: (10 000 random phases x 10: the add direction, 6 % below the remove one, cost a
#: third of the fold)
ADD_COARSE_FACTOR = 16
#: where that cheap bound is above the remove direction's epsilon, the add direction is
#: next composed on the same coarse grid with its blocks at their own fine-grid budgets
#: (the *mid* add direction: the coarse one's looseness is its fine grid, ``K = 2`` at
#: the look-ahead budget), and only where that is above too, at ``ADD_STEP_FACTOR``.
#: 30 000 random phases x 10 (issue 37, session 21): remove 47.1218, coarse add
#: 47.4170, fine add 44.8053; at 100 000 phases the fine add direction was 17 % of the
#: CPU (36 of 207 s, loaded machine), the coarse one 5 %.  Any of them certifies the
#: add side; once the fine one is made the mid one is dropped
ADD_MID_FACTOR = ADD_COARSE_FACTOR
#: a query composes a pending block of exact cells in two parts: its first multiple of
#: this many cells and the rest (:func:`_chunks`) ...
QUERY_CELLS = BLOCK_CELLS
#: ... when it holds more than this many (the per-step budget-filter tests of
#: tests/test_online.py: 23.8 s CPU at 64, 41.9 s whole at every size, main 20.2 s,
#: loaded machine)
QUERY_WHOLE = 64




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
        return _chunks(items, budget)
    ((cell, count),) = items.items()
    bits = [1 << j for j in range(count.bit_length() - 1, -1, -1) if count >> j & 1]
    extra = (len(bits) - 1) * step * step / 4.0
    if extra > PIECES_VARIANCE_SHARE * (var + _variance(items)[0]):
        return [(items, budget)]
    return [({cell: k}, budget) for k in bits]


def _chunks(items: Items, budget: int) -> list[tuple[Items, int]]:
    """A pending block of cells as a query composes it: a block of more than
    :data:`QUERY_WHOLE` exact cells (``budget`` at least :data:`~dpacct.accountant.pld.
    block_rules.EXACT_FACTOR` times its cells, :func:`~dpacct.accountant.pld.
    block_rules._budget`) as its first :data:`QUERY_CELLS` times ``k`` cells, whole, at
    their exact budget, and the rest (fewer than ``QUERY_CELLS``) apart at theirs; any
    other block whole (up to ``QUERY_WHOLE`` cells: 50 decaying steps as 32 + 18 were
    up to 3e-6 above main at delta 1e-7 .. 5e-9, whole 5.6e-6 .. 4.4e-5 below).  A
    budget filter asks at every step: the first part changes only every ``QUERY_CELLS`` steps (found
    composed in between, and by the block's fold when it is the whole block), so a
    query composes at most ``QUERY_CELLS - 1`` new cells, as main's blocks of
    :data:`~dpacct.accountant.pld.block_rules.BLOCK_CELLS` did; the pending block whole
    at every step made the per-step filter tests 2x main's CPU.  Both parts are
    composed whole: composing the first in runs whose fine PMFs were kept and joined
    added the runs' l1 errors (128 decaying steps at delta 1e-9 +5.9e-4 over main,
    issue 37, session 20).  A function of the steps alone.

    Examples
    --------
    >>> items = {(1 + k / 1e3, 0.01): 1 for k in range(100)}
    >>> [(len(i), b) for i, b in _chunks(items, 800)]
    [(96, 768), (4, 256)]
    >>> [(len(i), b) for i, b in _chunks(dict(list(items.items())[:70]), 560)]
    [(64, 512), (6, 256)]
    """
    if budget < EXACT_FACTOR * len(items) or len(items) <= QUERY_WHOLE:
        return [(items, budget)]
    cells = list(items.items())
    cut = len(cells) - len(cells) % QUERY_CELLS
    out: list[tuple[Items, int]] = []
    if cut:
        out.append((dict(cells[:cut]), max(EXACT_BUDGET, EXACT_FACTOR * cut)))
    if cut < len(cells):
        out.append((dict(cells[cut:]), max(EXACT_BUDGET, EXACT_FACTOR * (len(cells) - cut))))
    return out


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
        chosen from the first block (:func:`~dpacct.accountant.pld.block_rules._history_step`).
    exact_steps : int, optional
        Distinct ``(sigma, q)`` pairs kept as their own cells (default
        :data:`~dpacct.accountant.pld.block_rules.EXACT_STEPS`); a one-shot query,
        which pays for them once, keeps more
        (:class:`~dpacct.accountant.pld.schedule.ScheduleMechanism`).

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
        self,
        delta: float,
        *,
        grid: float = DEFAULT_GRID,
        step: float | None = None,
        exact_steps: int = EXACT_STEPS,
    ) -> None:
        self.delta = delta
        self.exact_steps = exact_steps
        self.grid = _check_grid(grid)
        self.w = math.log1p(self.grid)
        #: the step is fixed when given, else by the first committed block
        self._given_step = step is not None
        self.step = FAST_STEP if step is None else float(step)
        self.remove = _Direction(delta, self.step, False, 1 << 20)
        self.add: _Direction | None = None
        #: the cheap add direction (:data:`ADD_COARSE_FACTOR`)
        self.add_coarse: _Direction | None = None
        #: ... and the mid one (:data:`ADD_MID_FACTOR`, blocks at their own budgets), and
        #: whether it could not be made (a window beyond FAST_MAX_N: not tried again)
        self.add_mid: _Direction | None = None
        self._no_mid = False
        #: the noise multiplier of one full-batch Gaussian composed at every query as a
        #: block of its own, never committed (a ledger's folded full-batch records,
        #: :meth:`set_gauss`), or None
        self.gauss: float | None = None
        self._eps: float | None = 0.0
        self.ok = True
        #: coordinate values kept exact in the cells (see :meth:`_cells`)
        self._exact_sigma: set[float] = set()
        self._exact_q: set[float] = set()
        #: ``(sigma, q)`` pairs kept as their own cells, in the order folded (see
        #: :meth:`_cells`; :meth:`rollback` drops the last ones claimed)
        self._exact_pairs: dict[Cell, None] = {}
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
        what was asked hypothetically before.  Before both, a folded step whose
        ``(sigma, q)`` is among the first ``exact_steps`` distinct pairs folded is
        its own cell (a decaying sigma of a few thousand steps, composed unrounded)."""
        out: list[tuple[Cell, Cell, int]] = []
        pairs = self._exact_pairs
        for sigma, q, count in steps:
            sigma, q = float(sigma), float(q)
            if (sigma, q) in pairs or (keep and len(pairs) < self.exact_steps and count > 0):
                pairs[(sigma, q)] = None
                if int(count) > 0:
                    out.append(((sigma, q), (sigma, q), int(count)))
                continue
            # each coordinate rounded only where it is not kept exact (_round's halves)
            key = (
                sigma
                if self._keep(self._exact_sigma, sigma, keep)
                else _round_sigma(sigma, self.w, True),
                q if self._keep(self._exact_q, q, keep) else _round_q(q, self.w, True),
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

    def _use_step(self, first_block: Items, budget: int) -> None:
        """Before anything is committed: the loss step of a history whose first block
        is ``first_block``, composed at the fine-grid budget ``budget``
        (:func:`~dpacct.accountant.pld.block_rules._history_step`); the directions,
        still empty, are made anew on it when it changes."""
        if self._given_step or self._blocks:
            return
        step = _history_step(first_block, budget, self.delta)
        if step != self.step:
            self.step = step
            self.remove = _Direction(self.delta, step, False, self.remove.horizon)
            if self.add is not None:
                self.add = _Direction(self.delta, ADD_STEP_FACTOR * step, True, self.add.horizon)
            if self.add_coarse is not None:
                self.add_coarse = _Direction(
                    self.delta, ADD_COARSE_FACTOR * step, True, self.add_coarse.horizon
                )
            if self.add_mid is not None:
                self.add_mid = _Direction(
                    self.delta, ADD_MID_FACTOR * step, True, self.add_mid.horizon
                )
            if self.gauss is not None:
                self._reserve()

    def set_gauss(self, sigma: float | None) -> bool:
        """Compose one full-batch Gaussian of noise multiplier ``sigma`` (None: none)
        at every query, as a block of its own (:meth:`_gauss_blocks`) beside the
        committed and pending steps: a ledger's full-batch records folded into one
        Gaussian (:class:`~dpacct.accountant.ledger.records.GaussianFold`, Dong, Roth &
        Su 2022, Corollary 3.3), re-set whenever the fold changes.  The kept grids are
        grown to hold it (:meth:`_reserve`), so a query does not carry them to a
        longer one.  Returns :attr:`ok`.

        Examples
        --------
        >>> inc = IncrementalEpsilon(1e-5)
        >>> inc.fold([(1.0 + k / 100, 0.01, 10) for k in range(20)])
        >>> a = inc.epsilon()
        >>> inc.set_gauss(10.0)
        True
        >>> bool(inc.epsilon() > a)
        True
        """
        if sigma != self.gauss:
            self.gauss = sigma
            self._eps = None
            if sigma is not None:
                self._reserve()
        return self.ok

    @staticmethod
    def _gauss_blocks(sigma: float | None, budget: int = EXACT_BUDGET) -> list[tuple[Items, int]]:
        """The Gaussian of :meth:`set_gauss` as a query's block: one cell ``(sigma, 1)``
        of one step, at the exact cells' fine-grid budget."""
        return [] if sigma is None else [({(sigma, 1.0): 1}, budget)]

    def _reserve(self) -> None:
        """Grow every kept direction's grid to hold its committed blocks with the
        Gaussian's (:meth:`~dpacct.accountant.pld.online_direction._Direction.
        reserve`); a direction that cannot certify it: :attr:`ok` False (the mid add
        direction, a shortcut only, is dropped)."""
        ((items, budget),) = self._gauss_blocks(self.gauss)
        self._into_directions("reserve", items, budget)

    def _into_directions(self, how: str, block: Items, budget: int) -> None:
        """``block`` committed (``how = "fold"``) or reserved for (``"reserve"``) in every
        kept direction: the coarse add one at :data:`LOOKAHEAD_BUDGET`; one that cannot
        certify it makes :attr:`ok` False, except the mid add direction, dropped."""
        self.ok = self.ok and getattr(self.remove, how)(block, budget)
        if self.add is not None:
            self.ok = self.ok and getattr(self.add, how)(block, budget)
        if self.add_coarse is not None:
            self.ok = self.ok and getattr(self.add_coarse, how)(block, LOOKAHEAD_BUDGET)
        if self.add_mid is not None and not getattr(self.add_mid, how)(block, budget):
            self.add_mid, self._no_mid = None, True  # a shortcut only: the fine one stays

    def _commit(self, block: Items, budget: int) -> None:
        self._use_step(block, budget)
        self._blocks.append((block, budget))
        self._var += _variance(block)[0]
        self._into_directions("fold", block, budget)

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
            # the pending steps cut off whole (a look-ahead's new cell closed their
            # block) are composed as a plain query composes them: a pending block of
            # exact cells in its runs, found composed (anew at every step of a budget
            # filter it was the filter's main cost)
            out = []
            for b in blocks:
                if b == self._pending:
                    out += _pieces(_composed(b), _budget(b), self.step, self._var)
                else:
                    out.append((_composed(b), LOOKAHEAD_BUDGET))
            return out, True
        # pending steps alone: at most one block, the partial one
        out = [p for b in blocks for p in _pieces(_composed(b), _budget(b), self.step, self._var)]
        return out, False

    def epsilon(
        self, extra: Iterable[tuple[float, float, int]] = (), *, fit_only: bool = False
    ) -> float | None:
        """Certified epsilon at ``delta`` of the composition (with ``extra``, not kept;
        with the Gaussian of :meth:`set_gauss`).

        ``None`` when the fast path cannot certify, or (``fit_only``, for a filter's
        cheap look-ahead) when the hypothetical ``extra`` steps do not fit the kept
        loss grid: then nothing is copied to a longer grid.
        """
        blocks, asked = self._asked(extra)
        if not asked and self._eps is not None:
            return self._eps
        if not self.ok:
            return None
        if blocks:
            self._use_step(*blocks[0])
        blocks = blocks + self._gauss_blocks(self.gauss)
        if not blocks and self.remove.total == 0:
            return 0.0
        rem = self.remove.pld(blocks, fit_only and asked)
        if rem is None:
            return None
        eps = float(rem.epsilon(self.delta))
        if not math.isfinite(eps):
            # the certificate's mass at +inf (its round-off floor) is above delta: no
            # epsilon certifies it here; the caller takes the engine's route
            return None
        if swapped_delta(rem, eps) > self.delta:
            # the add direction from the swapped curve first (no second composition)
            found = swapped_epsilon(rem, self.delta, eps)
            if found is not None and found <= eps * (1.0 + SWAPPED_SLACK):
                eps = found
            else:
                add_eps = self._add_epsilon(blocks, fit_only and asked, eps)
                if add_eps is None and found is None:
                    return None
                # each certifies the add side: the smaller
                eps = min(e for e in (found, add_eps) if e is not None)
        if not asked:
            self._eps = eps
        return eps

    def _add_epsilon(
        self, blocks: list[tuple[Items, int]], fit_only: bool, eps: float
    ) -> float | None:
        """``max(eps, add)``, ``add`` a certified bound on the add direction's epsilon:
        ``eps`` when the coarse add direction is already at most ``eps``
        (:data:`ADD_COARSE_FACTOR`), or, before the fine one is made, the mid one
        (:data:`ADD_MID_FACTOR`); else the smaller of the mid one's and the add direction
        composed at ``ADD_STEP_FACTOR`` (made on first use from the committed blocks,
        the mid one then dropped); None when it cannot certify."""
        coarse = self._coarse_add_pld(blocks, fit_only)
        if coarse is not None and float(coarse.epsilon(self.delta)) <= eps:
            return eps
        mid_eps = math.inf
        if self.add is None:
            mid = self._mid_add_pld(blocks, fit_only)
            if mid is not None:
                mid_eps = float(mid.epsilon(self.delta))
                if mid_eps <= eps:
                    return eps
        add = self._add_pld(blocks, fit_only)
        if add is None:
            return None if math.isinf(mid_eps) else max(eps, mid_eps)
        return max(eps, min(mid_eps, float(add.epsilon(self.delta))))

    def _add_pld(self, blocks: list[tuple[Items, int]], fit_only: bool):
        """The add direction's pessimistic PLD at ``ADD_STEP_FACTOR`` times the
        history's step with ``blocks`` composed too (the direction made on first use
        from the committed blocks); None when it cannot certify."""
        if not self.ok:
            return None
        if self.add is None:
            step = ADD_STEP_FACTOR * self.step
            self.add = _Direction(self.delta, step, True, self.remove.horizon)
            # the same blocks in the same order as the remove direction
            for block, budget in self._blocks:
                if not self.add.fold(block, budget):
                    self.ok = False
                    return None
            for items, budget in self._gauss_blocks(self.gauss):
                if not self.add.reserve(items, budget):
                    self.ok = False
                    return None
            self.add_mid = None  # the fine one is kept from now on
        return self.add.pld(blocks, fit_only)

    def _coarse_add_pld(self, blocks: list[tuple[Items, int]], fit_only: bool):
        """The add direction's pessimistic PLD on the coarse grid
        (:data:`ADD_COARSE_FACTOR`, blocks at :data:`LOOKAHEAD_BUDGET`), made on first
        use from the committed blocks; None when it cannot certify (the caller then
        composes the fine one)."""
        if self.add_coarse is None:
            self.add_coarse = _Direction(
                self.delta, ADD_COARSE_FACTOR * self.step, True, self.remove.horizon
            )
            for block, _ in self._blocks:
                if not self.add_coarse.fold(block, LOOKAHEAD_BUDGET):
                    self.ok = False
                    return None
            for items, _ in self._gauss_blocks(self.gauss):
                if not self.add_coarse.reserve(items, LOOKAHEAD_BUDGET):
                    self.ok = False
                    return None
        return self.add_coarse.pld([(items, LOOKAHEAD_BUDGET) for items, _ in blocks], fit_only)

    def _mid_add_pld(self, blocks: list[tuple[Items, int]], fit_only: bool):
        """The add direction's pessimistic PLD on the coarse grid (:data:`ADD_MID_FACTOR`)
        with every block at its own fine-grid budget, made on first use from the
        committed blocks; None when it cannot certify."""
        if not self.ok or self._no_mid:
            return None
        if self.add_mid is None:
            mid = _Direction(self.delta, ADD_MID_FACTOR * self.step, True, self.remove.horizon)
            for block, budget in self._blocks:
                if not mid.fold(block, budget):
                    self._no_mid = True  # the fine one may still certify
                    return None
            for items, budget in self._gauss_blocks(self.gauss):
                if not mid.reserve(items, budget):
                    self._no_mid = True
                    return None
            self.add_mid = mid
        return self.add_mid.pld(blocks, fit_only)

    def delta_at(self, epsilon) -> tuple[np.ndarray, float] | None:
        """Certified delta at ``epsilon`` (array) of the composition so far, and the
        floor of those readings: the history's own ``delta(eps)`` reader, on the
        representation :meth:`epsilon` reads.

        The same certificate as :meth:`epsilon`: the remove direction's pessimistic
        PLD (every block's l1 error, the aliasing and round-off of the history's
        product and the tails cut, all in its mass at ``+inf``, so its curve lies
        above the true one at every epsilon: :func:`_finish
        <dpacct.accountant.pld.schedule_fast._finish>`), and for the add direction
        the smallest of the bounds :meth:`epsilon` may read -- the remove PLD's
        swapped curve (:func:`~dpacct.accountant.pld.pld_pair.swapped_delta`), the
        coarse and the fine add direction, each composed only where the ones before
        leave the add side above the remove one.  The answer is the larger of the
        two directions'.  The tails were cut for this history's ``delta`` (a share of
        it, :func:`~dpacct.accountant.pld.pld_settings.tail_budgets`): sound at every
        epsilon, tight where the answer is not far below ``delta`` (the caller
        chooses the history, :func:`~dpacct.accountant.ledger_delta.online_delta`).  The
        floor is the remove PLD's mass at ``+inf`` (no reading is below it: the
        certificate's share of an answer).  ``None`` when the fast path cannot
        certify.

        Examples
        --------
        >>> inc = IncrementalEpsilon(1e-5)
        >>> inc.fold([(1.0 * 0.999**t, 0.01, 1) for t in range(500)])
        >>> e = inc.epsilon()
        >>> got, floor = inc.delta_at(np.array([e]))
        >>> bool(floor < got[0] <= 1e-5 * (1 + 1e-9))
        True
        """
        eps = np.asarray(epsilon, dtype=float)
        blocks, _ = self._asked(())
        if not self.ok:
            return None
        if blocks:
            self._use_step(*blocks[0])
        blocks = blocks + self._gauss_blocks(self.gauss)
        if not blocks and self.remove.total == 0:
            return np.zeros(eps.shape), 0.0
        rem = self.remove.pld(blocks)
        if rem is None:
            return None
        out = np.asarray(rem.delta(eps), dtype=float)
        add = np.asarray(swapped_delta(rem, eps), dtype=float)
        open_ = add > out  # where the swapped curve leaves the add side above
        if open_.any():
            coarse = self._coarse_add_pld(blocks, False)
            if coarse is not None:
                add = np.minimum(add, np.asarray(coarse.delta(eps), dtype=float))
            if self.add is None and np.any(open_ & (add > out)):
                mid = self._mid_add_pld(blocks, False)
                if mid is not None:
                    add = np.minimum(add, np.asarray(mid.delta(eps), dtype=float))
            if np.any(open_ & (add > out)):
                fine = self._add_pld(blocks, False)
                if fine is not None:
                    add = np.minimum(add, np.asarray(fine.delta(eps), dtype=float))
            # each bound certifies the add side: the smallest, against the remove one
            out = np.where(open_, np.maximum(out, add), out)
        return out, float(rem.inf_mass)

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
            kept(self.add_coarse),
            kept(self.add_mid),
            self._no_mid,
            self.gauss,
            self._eps,
            self.ok,
            set(self._exact_sigma),
            set(self._exact_q),
            len(self._exact_pairs),
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
            self.add_coarse,
            self.add_mid,
            self._no_mid,
            self.gauss,
            self._eps,
            self.ok,
            self._exact_sigma,
            self._exact_q,
            claimed,
            self._pending,
            self._pending_steps,
            self._blocks,
            self.step,
            self._var,
        ) = state
        # the pairs claimed since the checkpoint are the last ones of the dict (a
        # checkpoint is rolled back to before any earlier one is)
        while len(self._exact_pairs) > claimed:
            self._exact_pairs.popitem()
