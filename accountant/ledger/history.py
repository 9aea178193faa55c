"""The privacy filter's composed history: what has been checked, kept composed.

Two representations of the same thing, the pessimistic privacy loss distributions (both
directions) of every record the filter has checked, so that a check costs what the
new records cost and never a recomposition of the whole ledger:

* :class:`_FastHistory` -- while every record is a DP-SGD step: the spectra of the grid
  cells on one shared loss grid (:class:`~dpacct.accountant.schedule.IncrementalEpsilon`);
* :class:`_PLDHistory` -- otherwise: composed :class:`~dpacct.accountant.pld.GridPLD`
  pairs, convolving only each new block.

Both take blocks of :class:`~dpacct.accountant.ledger.records.Entry` and read each
entry's classification; neither looks at a mechanism's type.
"""

from __future__ import annotations

from ..compose import ComposedMechanism
from ..mechanism import PLDSettings
from ..pld import GridPLD
from ..schedule import IncrementalEpsilon, _scaled_settings
from .records import Entry, phases_of, rounded

__all__: list[str] = []


class _PLDHistory:
    """Pessimistic PLDs (remove and add direction) of the records checked so far.

    ``fold(parts)`` composes the new records as one block (DP-SGD steps rounded up to
    the grid, :func:`~dpacct.accountant.ledger.records.rounded`) and convolves it into
    the history; ``epsilon_with`` evaluates the history with a hypothetical block
    without keeping it.  Tail budget: block ``i`` (folded or hypothetical) and its
    convolution may move mass ``tail / ((i + 1)(i + 2))``, half each, which sums to at
    most ``tail`` over any number of blocks, so every answer is certified like the
    engine's.
    """

    def __init__(self, delta: float, tol: float | None, grid: float, progress: bool) -> None:
        self.delta = delta
        self.tol = tol
        self.grid = grid
        self.progress = progress
        self.settings = PLDSettings(tol, delta)
        self.plds: tuple[GridPLD, GridPLD] | None = None
        self.blocks = 0
        #: structural cost counter: convolutions of the history with a block
        self.convolutions = 0
        self._eps: float | None = 0.0

    def _share(self) -> float:
        i = self.blocks
        return 1.0 / ((i + 1) * (i + 2))

    def _block(self, parts: list[Entry]) -> tuple[GridPLD, GridPLD]:
        mech = rounded(parts, self.grid, True, self.progress)
        settings = _scaled_settings(self.settings, 0.5 * self._share())
        if isinstance(mech, ComposedMechanism) and mech._gaussian is not None:
            # all Gaussians: one Gaussian in closed form, discretised like any law
            mech = ComposedMechanism(parts=((mech._gaussian, 1),))
        # remove/add direction logic (moved unchanged; for the PLD pair type later)
        return (mech._pld_one(True, settings, 0), mech._pld_one(True, settings, 1))

    def _with(self, block: tuple[GridPLD, GridPLD]) -> tuple[GridPLD, GridPLD]:
        if self.plds is None:
            return block
        cut = 0.5 * self.settings.tail * self._share()
        resolution = self.settings.resolution_for(True)
        cap = getattr(self.settings, "coarse_cap", None)
        self.convolutions += 2
        return tuple(  # type: ignore[return-value]
            self.plds[w].convolve(block[w], cut)._coarsened(resolution, cap) for w in (0, 1)
        )

    def fold(self, parts: list[Entry]) -> bool:
        self.plds = self._with(self._block(parts))
        self.blocks += 1
        self._eps = None
        return True

    def epsilon_with(self, parts: list[Entry]) -> float:
        plds = self._with(self._block(parts))
        return max(p.epsilon(self.delta) for p in plds)

    def epsilon(self) -> float:
        if self._eps is None:
            self._eps = 0.0 if self.plds is None else max(p.epsilon(self.delta) for p in self.plds)
        return self._eps


class _FastHistory:
    """The filter's history of DP-SGD steps on the incremental fast path.

    A thin adapter of :class:`~dpacct.accountant.schedule.IncrementalEpsilon` to the
    interface of :class:`_PLDHistory`: ``fold`` returns False, and ``epsilon_with`` /
    ``epsilon`` return ``None``, when a record is not a DP-SGD step or the fast path
    cannot certify (the ledger then moves to a :class:`_PLDHistory`).  The cost counter
    ``convolutions`` counts inverse FFTs (one per check).
    """

    def __init__(self, delta: float, grid: float, budget: float) -> None:
        self.inc = IncrementalEpsilon(delta, grid=grid)
        self.budget = budget

    @property
    def convolutions(self) -> int:
        return self.inc.inverse_transforms

    def fold(self, parts: list[Entry]) -> bool:
        steps = phases_of(parts, upper=True)
        if steps is None:
            return False
        self.inc.fold(steps)
        return self.inc.ok

    def epsilon_with(self, parts: list[Entry]) -> float | None:
        steps = phases_of(parts, upper=True)
        # decided against the budget: a value <= budget is certified, above means refuse
        return None if steps is None else self.inc.epsilon(steps, cap=self.budget)

    def epsilon(self) -> float | None:
        return self.inc.epsilon()
