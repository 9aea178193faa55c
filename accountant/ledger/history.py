"""The privacy filter's composed history: what has been checked, kept composed.

Two representations of the same thing, the pessimistic privacy loss distributions (both
directions) of every record the filter has checked, so that a check costs what the
new records cost and never a recomposition of the whole ledger:

* :class:`_FastHistory` -- while every record is a DP-SGD step: the product of the
  spectra of its blocks of steps, each block composed on a finer loss grid and
  re-discretised once, on one shared loss grid
  (:class:`~dpacct.accountant.pld.schedule.IncrementalEpsilon`);
* :class:`_PLDHistory` -- otherwise: composed :class:`~dpacct.accountant.pld.grid.GridPLD`
  pairs, convolving only each new block.

:class:`BudgetHistory` holds the current one and switches from the first to the second
when a record is not a DP-SGD step or the fast path cannot certify.

Both take blocks of :class:`~dpacct.accountant.ledger.records.Entry` and read each
entry's classification; neither looks at a mechanism's type.
"""

from __future__ import annotations

import math

import numpy as np

from ..mechanism import PLDSettings
from ..pld.grid import GridPLD
from ..pld.pld_pair import PLDPair
from ..pld.schedule import IncrementalEpsilon, _scaled_settings
from ..transformers.compose import ComposedMechanism
from .records import Entry, GaussianFold, Records, full_batch, phases_of, rounded, same

__all__ = ["BudgetHistory"]


class _PLDHistory:
    """Pessimistic PLDs (remove and add direction) of the records checked so far.

    Held as a :class:`~dpacct.accountant.pld.pld_pair.PLDPair` (one PLD, ``add=None``, while
    every block has one law for both directions; each direction composed on its own
    once a block does not).  Its epsilon is the larger of both directions' own curves.

    ``fold(parts)`` composes the new records as one block (DP-SGD steps rounded up to
    the grid, :func:`~dpacct.accountant.ledger.records.rounded`) and convolves it into
    the history; ``epsilon_with`` evaluates the history with a hypothetical block
    without keeping it.  Tail budget: block ``i`` (folded or hypothetical) and its
    convolution may move mass ``tail / ((i + 1)(i + 2))``, half each, which sums to at
    most ``tail`` over any number of blocks, so every answer is certified like the
    engine's.
    """

    def __init__(self, delta: float, tol: float | None, grid: float, progress: bool) -> None:
        self.target_delta = delta  # (not ``delta``: that is the method below)
        self.tol = tol
        self.grid = grid
        self.progress = progress
        self.settings = PLDSettings(tol, delta)
        self.plds: PLDPair | None = None
        self.blocks = 0
        #: structural cost counter: convolutions of the history with a block
        self.convolutions = 0
        self._eps: float | None = 0.0

    def _share(self) -> float:
        i = self.blocks
        return 1.0 / ((i + 1) * (i + 2))

    def _block(self, parts: list[Entry]) -> PLDPair:
        mech = rounded(parts, self.grid, True, self.progress)
        settings = _scaled_settings(self.settings, 0.5 * self._share())
        if isinstance(mech, ComposedMechanism) and mech._gaussian is not None:
            # all Gaussians: one Gaussian in closed form, discretised like any law
            mech = ComposedMechanism(parts=((mech._gaussian, 1),))
        pair = mech._pair(True, settings)
        add = pair.add_pld()
        # one PLD for both directions (declared, or the same object read twice, as a
        # composition of Gaussians in closed form does): stored once, add=None.  The
        # history reads each direction's own curve (no swapped bound), as it always has.
        symmetric = add is pair.remove
        return PLDPair(pair.remove, None if symmetric else add, symmetric, False)

    def _with(self, block: PLDPair) -> PLDPair:
        if self.plds is None:
            return block
        cut = 0.5 * self.settings.tail * self._share()
        resolution = self.settings.resolution_for(True)
        cap = getattr(self.settings, "coarse_cap", None)

        def convolved(mine: GridPLD, theirs: GridPLD) -> GridPLD:
            self.convolutions += 1
            return mine.convolve(theirs, cut)._coarsened(resolution, cap)

        remove = convolved(self.plds.remove, block.remove)
        if self.plds.symmetric and block.symmetric:
            return PLDPair(remove, None, True, False)
        return PLDPair(remove, convolved(self.plds.add_pld(), block.add_pld()), False, False)

    def fold(self, parts: list[Entry]) -> bool:
        self.plds = self._with(self._block(parts))
        self.blocks += 1
        self._eps = None
        return True

    def epsilon_with(self, parts: list[Entry], fit_only: bool = False) -> float:
        return self._with(self._block(parts)).epsilon(self.target_delta).epsilon

    def epsilon(self) -> float:
        if self._eps is None:
            self._eps = 0.0 if self.plds is None else self.plds.epsilon(self.target_delta).epsilon
        return self._eps

    def delta(self, epsilon: np.ndarray) -> tuple[np.ndarray, float]:
        """Delta at ``epsilon`` of the composed pair (both directions' own curves, as
        :meth:`epsilon` reads them), and the floor of the readings (the larger mass
        at ``+inf``)."""
        if self.plds is None:
            return np.zeros(np.shape(epsilon)), 0.0
        out = np.asarray(self.plds.delta(np.asarray(epsilon, dtype=float)), dtype=float)
        floor = self.plds.remove.inf_mass
        if not self.plds.symmetric:
            floor = max(floor, self.plds.add_pld().inf_mass)
        return out, float(floor)


class _FastHistory:
    """The filter's history of DP-SGD steps on the incremental fast path.

    A thin adapter of :class:`~dpacct.accountant.pld.schedule.IncrementalEpsilon` to the
    interface of :class:`_PLDHistory`: ``fold`` returns False, and ``epsilon_with`` /
    ``epsilon`` return ``None``, when a record is not a DP-SGD step or the fast path
    cannot certify (the ledger then moves to a :class:`_PLDHistory`).  The cost counter
    ``convolutions`` counts inverse FFTs (one per check).

    Full-batch Gaussian records are not cells of it: they are folded into one Gaussian
    (:class:`~dpacct.accountant.ledger.records.GaussianFold`, its sigma rounded down,
    Dong, Roth & Su 2022, Corollary 3.3), which every query composes as one block
    (:meth:`~dpacct.accountant.pld.incremental.IncrementalEpsilon.set_gauss`), as the
    ``"exact"`` and ``"rounded"`` routes compose it; a lone full-batch step is
    composed at its own sigma.
    """

    def __init__(self, delta: float, grid: float, budget: float) -> None:
        self.inc = IncrementalEpsilon(delta, grid=grid)
        self.budget = budget
        self.gauss = GaussianFold()
        #: the full-batch steps folded: how many, and the sigma of the first
        self._lone: tuple[int, float] = (0, 0.0)

    @property
    def convolutions(self) -> int:
        return self.inc.inverse_transforms

    def checkpoint(self) -> tuple:
        """The state :meth:`rollback` returns to (a filter's trial)."""
        return self.inc.checkpoint(), self.gauss.copy(), self._lone

    def rollback(self, state: tuple) -> None:
        """Back to :meth:`checkpoint`'s state (the trial's record forgotten)."""
        inc, self.gauss, self._lone = state
        self.inc.rollback(inc)

    def _sigma(self, parts: list[Entry]) -> tuple[GaussianFold, tuple[int, float], float | None]:
        """The fold with the full-batch ``parts`` added (a copy when there are any), the
        lone-step count, and the noise multiplier a query composes; ``nan`` when the
        folded sigma is not a positive float (the engine's route)."""
        fold, (count, first) = self.gauss, self._lone
        news = [e for e in parts if full_batch(e)]
        if news:
            fold = fold.copy()
            for e in news:
                assert e.step is not None
                fold.add(e.step, e.count)
                count, first = count + e.count, first if count else e.step.sigma_upper
        if count == 0:
            return fold, (count, first), None
        if count == 1:
            return fold, (count, first), first  # one step: its own sigma, not re-rounded
        sigma = fold.sigma(upper=True)
        return fold, (count, first), math.nan if sigma is None else sigma

    def fold(self, parts: list[Entry]) -> bool:
        steps = phases_of([e for e in parts if not full_batch(e)], upper=True)
        if steps is None:
            return False
        self.inc.fold(steps)
        if any(full_batch(e) for e in parts):
            self.gauss, self._lone, sigma = self._sigma(parts)
            if sigma is not None and math.isnan(sigma):
                return False
            self.inc.set_gauss(sigma)
        return self.inc.ok

    def epsilon_with(self, parts: list[Entry], fit_only: bool = False) -> float | None:
        """Epsilon with the hypothetical ``parts`` (a filter's look-ahead): every one,
        full-batch ones too, as a step beside the kept fold (a sound upper bound on
        folding them: no new Gaussian composed per look-ahead)."""
        steps = phases_of(parts, upper=True)
        if steps is None:
            return None
        try:
            return self.inc.epsilon(steps, fit_only=fit_only)
        except OverflowError:  # an epsilon beyond exp's range: the engine's route
            return None

    def epsilon(self) -> float | None:
        try:
            return self.inc.epsilon()
        except OverflowError:  # an epsilon beyond exp's range: the engine's route
            return None

    def delta(self, epsilon: np.ndarray) -> tuple[np.ndarray, float] | None:
        try:
            return self.inc.delta_at(epsilon)
        except OverflowError:  # beyond exp's range: the engine's route
            return None


class BudgetHistory:
    """The composed PLDs, at the budget's delta, of every record of a budgeted ledger.

    Kept up to date lazily: recorded entries wait in ``pending`` until a check or a
    query at the budget's delta folds them in.  The fixed-schedule filter checks
    against it; the ledger answers ``epsilon(budget_delta)`` from it when it holds more
    than ``EXACT_PHASES`` distinct records (in either filter mode).

    Parameters
    ----------
    records : Records
        The ledger's records (read, never written).
    budget : (float, float)
        ``(budget_epsilon, budget_delta)``.
    tol, grid, progress
        The ledger's settings.
    """

    def __init__(
        self,
        records: Records,
        budget: tuple[float, float],
        tol: float | None,
        grid: float,
        progress: bool,
    ) -> None:
        self.records = records
        self.budget = budget
        self.tol = tol
        self.grid = grid
        self.progress = progress
        self.current: _PLDHistory | _FastHistory | None = None
        self.pending: list[Entry] = []
        #: the entry :meth:`trial` accepted and folded, until it is charged
        self._folded: Entry | None = None

    @property
    def convolutions(self) -> int:
        """PLD convolutions (or inverse FFTs) made so far: a cost counter."""
        return 0 if self.current is None else self.current.convolutions

    def charge(self, entry: Entry) -> None:
        """``entry`` was recorded: pending, merged with the last pending one if the same
        (nothing to do when :meth:`trial` has already folded it)."""
        if self._folded is entry:
            self._folded = None
            return
        self._folded = None
        if self.pending and same(self.pending[-1].mechanism, entry.mechanism):
            last = self.pending[-1]
            self.pending[-1] = Entry(last.mechanism, last.count + entry.count, last.step)
        else:
            self.pending.append(Entry(entry.mechanism, entry.count, entry.step))

    def restore(self, entry: Entry) -> None:
        """An entry read from a file: pending, as saved (no merging)."""
        self.pending.append(Entry(entry.mechanism, entry.count, entry.step))

    def now(self) -> _PLDHistory | _FastHistory:
        """The composed PLDs of everything recorded, folding what is pending.

        While every record is a DP-SGD step the history is a :class:`_FastHistory`
        (spectra of the grid cells, one inverse FFT per check); a record of another
        kind, or a composition the fast path cannot certify, moves it for good to a
        :class:`_PLDHistory` that recomposes the entries once.
        """
        if self.current is None:
            if self.records.all_steps:
                self.current = _FastHistory(self.budget[1], self.grid, self.budget[0])
            else:
                self.current = self.rebuild()
        if self.pending:
            if not self.current.fold(self.pending):
                self.current = self.rebuild()
            self.pending = []
        return self.current

    def rebuild(self) -> _PLDHistory:
        """A PLD history holding every entry recorded so far (the pending ones too)."""
        history = _PLDHistory(self.budget[1], self.tol, self.grid, self.progress)
        if self.records.entries:
            history.fold([Entry(e.mechanism, e.count, e.step) for e in self.records.entries])
        self.pending = []
        return history

    def trial(self, entry: Entry) -> float:
        """The answer :meth:`epsilon` would give with ``entry`` recorded: the filter's
        exact check, decided on the very number the queries give.

        On the fast path ``entry`` is folded into the kept composition (its cell, its
        block: what recording it does) and the answer read; above the budget the fold
        is rolled back, else it is kept and :meth:`charge` of ``entry`` adds nothing.
        On the PLD path the answer is the composition with ``entry`` as the next block,
        which is what folding it as the next pending block gives.
        """
        current = self.now()
        if isinstance(current, _FastHistory):
            if entry.step is not None:
                state = current.checkpoint()
                found = current.epsilon() if current.fold([entry]) else None
                if found is not None:
                    if found <= self.budget[0]:
                        self._folded = entry
                    else:
                        current.rollback(state)
                    return found
                current.rollback(state)
            current = self.current = self.rebuild()
        found = current.epsilon_with([entry])
        assert found is not None  # a PLD history always answers
        return found

    def epsilon(self) -> float:
        """Epsilon at the budget's delta of everything recorded (incremental)."""
        found = self.now().epsilon()
        if found is None:
            self.current = self.rebuild()
            found = self.current.epsilon()
        return found

    def delta(self, epsilon: np.ndarray) -> tuple[np.ndarray, float] | None:
        """Delta at ``epsilon`` (array) of everything recorded, read off the same
        composed history (and certificate) as :meth:`epsilon`, and the floor of the
        readings (their mass at ``+inf``); its tails were cut for the budget's delta
        (sound at every epsilon).  ``None`` when the fast path cannot certify (no PLD
        history is composed for a delta query: the caller takes another route)."""
        return self.now().delta(epsilon)
