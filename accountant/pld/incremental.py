"""Online certified epsilon of a growing DP-SGD ledger (the fast path kept open).

Each direction's composition of subsampled-Gaussian cells is kept as its spectrum on
one shared loss grid, so composing new steps multiplies spectra and a query costs one
inverse FFT, with aliasing and round-off inside the certificate
(:mod:`~dpacct.accountant.pld.pld_fft`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable

import numpy as np
from scipy import fft as sp_fft

from .pld_fft import (
    _ORDERS,
    FAST_MAX_N,
    _alias,
    _cell_lambdas,
    _l2,
    _power,
    _spectral_error,
    _spectrum_product,
    _window,
)
from .pld_pair import swapped_delta, swapped_epsilon
from .pld_settings import tail_budgets
from .schedule_fast import ADD_STEP_FACTOR, FAST_STEP, _finish
from .schedule_grid import DEFAULT_GRID, EXACT_VALUES, _check_grid, _round
from .sgm_cells import _pessimistic_cells

__all__ = ["IncrementalEpsilon"]

#: folded steps wait, as hypothetical steps of every query, until a new distinct cell
#: would make this many; then the block is composed into the kept spectra.  Blocks are
#: cut by the steps alone, so the same steps are composed in the same order however
#: they were batched or queried
BLOCK_CELLS = 32
#: transforms of recent cells kept per direction (bytes)
RECENT_BYTES = 1 << 25


class _Direction:
    """One direction's composition of DP-SGD cells, kept as its spectrum on ``n`` points.

    Everything the certificate of :func:`_compose_cells` needs is additive over the
    composed cells and kept as running sums: the log-MGFs (aliasing window), the
    forward round-off (``sum_c k_c ||p_c||``), the number of complex products, the
    origin and the +inf mass.  Adding ``k`` steps of a cell multiplies the spectrum by
    the cell's transform to the ``k``.  The grid length is a function of the kept
    composition alone (:meth:`_length`: the power of two at least twice its Chernoff
    window), never of when steps were folded or what was asked hypothetically, and
    when it changes the spectrum is recomputed exactly from the cell list, so the same
    steps give the same grid and the same answer however they were batched.  The
    tails are cut at ``tau = tail_budgets(delta, horizon).piece`` per step
    (:func:`~dpacct.accountant.pld.pld_settings.tail_budgets`) and the cut mass goes
    to +inf (sound for any number of steps; beyond ``horizon`` steps every cell is
    re-discretised with a 16 times longer horizon).
    """

    GROWTH = 2.0

    def __init__(self, delta: float, step: float, add: bool, horizon: int) -> None:
        self.delta = delta
        self.step = step
        self.add = add
        self.horizon = horizon
        budget = tail_budgets(delta, horizon)
        self.tau, self.alias_budget = budget.piece, budget.alias
        self.counts: dict[tuple[float, float], int] = {}
        self.cells: dict[tuple[float, float], tuple] = {}
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
        #: the longest PMF among the folded cells
        self.width = 1
        #: l1 error of a copy carried to a longer grid (:meth:`_carried_to`); 0 when kept
        self.carried = 0.0
        #: cost counters: forward transforms of cells and inverse transforms
        self.forward = 0
        self.inverse = 0
        self._recent: dict[tuple[float, float], np.ndarray] = {}

    def _discretise(self, keys: list[tuple[float, float]]) -> None:
        new = [k for k in dict.fromkeys(keys) if k not in self.cells]
        if not new:
            return
        sig = np.array([s for s, _ in new])
        qs = np.array([q for _, q in new])
        firsts, pmfs, infs = _pessimistic_cells(sig, qs, self.step, self.tau, self.add)
        for i, key in enumerate(new):
            pmf = pmfs[i]
            # one cell at a time: a batch's shared padding would change the sums'
            # round-off, and a cell's numbers must not depend on what came with it
            lp, ln = _cell_lambdas(self.step, firsts[i : i + 1], [pmf])
            self.cells[key] = (
                int(firsts[i]),
                pmf,
                float(infs[i]),
                lp[0],
                ln[0],
                _l2(pmf),
            )

    def _transform(self, key: tuple[float, float]) -> np.ndarray:
        spec = self._recent.get(key)
        if spec is None:
            spec = sp_fft.rfft(self.cells[key][1], n=self.n, workers=-1)
            self.forward += 1
            while self._recent and (len(self._recent) + 1) * spec.nbytes > RECENT_BYTES:
                self._recent.pop(next(iter(self._recent)))
            self._recent[key] = spec
        return spec

    def _sums(self, items: dict[tuple[float, float], int]):
        lam_pos, lam_neg = self.lam_pos.copy(), self.lam_neg.copy()
        norms, origin, log_fin = self.norms, self.origin, self.log_fin
        for key, k in items.items():
            first, _, inf, lp, ln, nrm = self.cells[key]
            lam_pos += k * lp
            lam_neg += k * ln
            norms += k * nrm
            origin += k * first
            with np.errstate(divide="ignore"):
                log_fin += k * math.log1p(-min(inf, 1.0))
        return lam_pos, lam_neg, norms, origin, log_fin

    def _rebuild_at(self, n: int) -> None:
        """The spectrum of the cell list on ``n`` points, recomputed from the cells."""
        self.n = n
        self._recent = {}
        self.origin = sum(k * self.cells[key][0] for key, k in self.counts.items())
        self.norms = sum(k * self.cells[key][5] for key, k in self.counts.items())
        if self.counts:
            keys = list(self.counts)
            pmfs = [self.cells[k][1] for k in keys]
            counts = np.array([self.counts[k] for k in keys], dtype=np.int64)
            self.spec, self.mults = _spectrum_product(pmfs, counts, n)
            self.forward += len(keys)
        else:
            self.spec, self.mults = np.ones(n // 2 + 1, dtype=complex), 0

    @staticmethod
    def _length(need: int, width: int) -> int:
        """The grid length for a window of ``need`` points and PMFs of ``width``: the
        power of two at least twice the larger (a margin for hypothetical steps)."""
        return 1 << max(2 * max(need, width, 1) - 1, 1).bit_length()

    def _fit(self, need: int, width: int) -> bool:
        """Put the spectrum on the grid :meth:`_length` gives; False beyond
        :data:`FAST_MAX_N`.  A longer grid is recomputed exactly from the cells."""
        n = self._length(need, width)
        if n > FAST_MAX_N:
            if max(need, width) > FAST_MAX_N:
                return False
            n = FAST_MAX_N
        if self.spec is None or n > self.n:
            self._rebuild_at(n)
        return True

    def _reset_horizon(self, total: int) -> None:
        while self.horizon < total:
            self.horizon *= 16
        counts = self.counts
        self.__init__(self.delta, self.step, self.add, self.horizon)  # type: ignore[misc]
        self.fold(counts)

    def _prepare(
        self, items: dict[tuple[float, float], int], fit_only: bool = False
    ) -> _Direction | None:
        """The direction on a grid that holds it with ``items`` composed: itself when
        the grid fits, else (for hypothetical steps) a copy on a longer grid, so what
        is asked never changes the kept state; None when it cannot certify, or (with
        ``fit_only``) when the kept grid does not hold it.  Past the
        horizon the cut tails of the hypothetical steps still go to +inf (sound, a
        little looser): only folded steps re-discretise the cells."""
        self._discretise(list(items))
        lam_pos, lam_neg, _, _, _ = self._sums(items)
        _, need = _window(self.step, lam_pos, lam_neg, self.alias_budget)
        width = max([self.width] + [self.cells[key][1].size for key in items])
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
        """A copy on the longer grid ``n``, for hypothetical steps only.

        The kept composition fits its own window, so it is carried over as one PMF
        (one inverse and one forward FFT instead of one per cell): its l1 distance to
        the exact composition of the cells -- twice the aliased mass, plus the
        round-off bound of :func:`_spectral_error` -- is the copy's ``carried`` error,
        added to its answer (convolving with probability measures and folding the
        window do not increase an l1 distance, and the hockey-stick divergence moves by
        at most the l1 distance of the PMFs).
        """
        other = copy.copy(self)
        other._recent = {}
        if self.spec is None or self.total == 0:
            other._rebuild_at(n)
            return other
        a_old, _ = _window(self.step, self.lam_pos, self.lam_neg, self.alias_budget)
        alias = _alias(self.step, self.lam_pos, self.lam_neg, a_old, self.n)
        freq_l2, y, inv_l1 = _spectral_error(self.spec, self.n, self.mults, self.norms)
        y = np.maximum(np.roll(y, -((a_old - self.origin) % self.n)), 0.0)
        other.carried = 2.0 * alias + freq_l2 + inv_l1
        other.n = n
        other.spec = sp_fft.rfft(y, n=n, workers=-1)
        other.mults = 0
        other.norms = _l2(y)
        other.origin = a_old
        return other

    def fold(self, items: dict[tuple[float, float], int]) -> bool:
        """Compose ``k`` more steps of each cell in ``items``; False if it cannot certify."""
        if self.total + sum(items.values()) > self.horizon:
            self._reset_horizon(self.total + sum(items.values()))
        self._discretise(list(items))
        sums = self._sums(items)
        _, need = _window(self.step, sums[0], sums[1], self.alias_budget)
        width = max([self.width] + [self.cells[key][1].size for key in items])
        if not self._fit(need, width):
            return False
        with np.errstate(under="ignore", over="ignore", invalid="ignore"):
            for key, k in items.items():
                pw, m = _power(self._transform(key), k)
                # out of place: a checkpoint (:meth:`IncrementalEpsilon.checkpoint`)
                # keeps the previous spectrum
                self.spec = self.spec * pw  # type: ignore[operator]
                self.mults += m + 1
        for key, k in items.items():
            self.counts[key] = self.counts.get(key, 0) + k
        self.total += sum(items.values())
        self.width = width
        self.lam_pos, self.lam_neg, self.norms, self.origin, self.log_fin = sums
        return True

    def pld(self, extra: dict[tuple[float, float], int] | None = None, fit_only: bool = False):
        """The composed pessimistic :class:`GridPLD` (with ``extra`` steps, not kept);
        None when it cannot certify or (``fit_only``) the kept grid does not hold it."""
        extra = extra or {}
        on = self._prepare(extra, fit_only)
        if on is None:
            return None
        lam_pos, lam_neg, norms, origin, log_fin = on._sums(extra)
        a_idx, _ = _window(on.step, lam_pos, lam_neg, on.alias_budget)
        spec, mults = on.spec, on.mults
        if extra:
            spec = spec.copy()
            with np.errstate(under="ignore", over="ignore", invalid="ignore"):
                for key, k in extra.items():
                    pw, m = _power(on._transform(key), k)
                    spec *= pw
                    mults += m + 1
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
            carried=on.carried,
        )
        return out[0]


class IncrementalEpsilon:
    """Certified upper bound on epsilon of a growing DP-SGD ledger, step by step.

    The fast path of :func:`fast_epsilon_bounds` kept open: steps are rounded up to
    their dominating cell (:func:`round_step`), each direction's composition is kept
    as its spectrum (:class:`_Direction`), so composing new steps multiplies spectra
    and a query costs one inverse FFT.  The add direction is composed only once the
    remove direction's swapped curve
    (:func:`~dpacct.accountant.pld.pld_pair.swapped_delta`) no longer certifies it,
    on a loss grid :data:`ADD_STEP_FACTOR` times coarser; from then on both are kept.
    ``epsilon`` returns ``None`` when the window would exceed :data:`FAST_MAX_N` (the
    caller then uses the engine's route).

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
        self, delta: float, *, grid: float = DEFAULT_GRID, step: float = FAST_STEP
    ) -> None:
        self.delta = delta
        self.grid = _check_grid(grid)
        self.w = math.log1p(self.grid)
        self.step = step
        self.remove = _Direction(delta, step, False, 1 << 20)
        self.add: _Direction | None = None
        self._eps: float | None = 0.0
        self.ok = True
        #: coordinate values kept exact in the cells (see :meth:`_cells`)
        self._exact_sigma: set[float] = set()
        self._exact_q: set[float] = set()
        #: folded steps not yet composed (cell -> count), and the composed blocks
        self._pending: dict[tuple[float, float], int] = {}
        self._blocks: list[dict[tuple[float, float], int]] = []

    @property
    def inverse_transforms(self) -> int:
        return self.remove.inverse + (0 if self.add is None else self.add.inverse)

    def _cells(self, steps, *, keep: bool = True) -> dict[tuple[float, float], int]:
        """The dominating cell of every step.  A coordinate value already kept exact,
        or a new one of a folded step while fewer than :data:`EXACT_VALUES` are kept
        (a constant q, a step schedule's few sigmas), is used as it is; others are
        rounded up to the grid (smaller sigma, larger q).  Both are dominating cells,
        so the choice only trades merging for tightness, never soundness.  Only folded
        steps (``keep``) claim exact values, in the order they are recorded, so the
        cell of a step never depends on what was asked hypothetically before."""
        out: dict[tuple[float, float], int] = {}
        for sigma, q, count in steps:
            sigma, q = float(sigma), float(q)
            cell_sigma, cell_q = _round(sigma, q, self.w, True)
            key = (
                sigma if self._keep(self._exact_sigma, sigma, keep) else cell_sigma,
                q if self._keep(self._exact_q, q, keep) else cell_q,
            )
            out[key] = out.get(key, 0) + int(count)
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
        :data:`BLOCK_CELLS`; the block is then composed into both directions' spectra.
        """
        for step in steps:
            ((key, count),) = self._cells([step]).items()
            if count == 0:
                continue
            self._eps = None
            if key not in self._pending and len(self._pending) >= BLOCK_CELLS:
                self._commit()
            self._pending[key] = self._pending.get(key, 0) + count

    def _commit(self) -> None:
        block, self._pending = self._pending, {}
        self._blocks.append(block)
        self.ok = self.ok and self.remove.fold(block)
        if self.add is not None:
            self.ok = self.ok and self.add.fold(block)

    def epsilon(
        self, extra: Iterable[tuple[float, float, int]] = (), *, fit_only: bool = False
    ) -> float | None:
        """Certified epsilon at ``delta`` of the composition (with ``extra``, not kept).

        ``None`` when the fast path cannot certify, or (``fit_only``, for a filter's
        cheap look-ahead) when the hypothetical ``extra`` steps do not fit the kept
        loss grid: then nothing is copied to a longer grid.
        """
        asked = self._cells(extra, keep=False)
        if not asked and self._eps is not None:
            return self._eps
        items = dict(self._pending)
        for key, k in asked.items():
            items[key] = items.get(key, 0) + k
        if not self.ok:
            return None
        if not items and self.remove.total == 0:
            return 0.0
        rem = self.remove.pld(items, fit_only and bool(asked))
        if rem is None:
            return None
        eps = float(rem.epsilon(self.delta))
        if swapped_delta(rem, eps) > self.delta:
            # the add direction from the swapped curve first (no second composition)
            found = swapped_epsilon(rem, self.delta, eps)
            if found is not None:
                eps = found
            else:
                if self.add is None:
                    self.add = _Direction(
                        self.delta, ADD_STEP_FACTOR * self.step, True, self.remove.horizon
                    )
                    # the same blocks in the same order as the remove direction
                    for block in self._blocks:
                        if not self.add.fold(block):
                            self.ok = False
                            return None
                add = self.add.pld(items, fit_only and bool(asked))
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
            out.counts = dict(d.counts)
            return out

        return (
            kept(self.remove),
            kept(self.add),
            self._eps,
            self.ok,
            set(self._exact_sigma),
            set(self._exact_q),
            dict(self._pending),
            list(self._blocks),
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
            self._blocks,
        ) = state
