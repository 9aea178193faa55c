"""A ledger's history as a mechanism: the records behind the contract every mechanism keeps.

:class:`LedgerMechanism` is what a :class:`~dpacct.accountant.ledger.PrivacyAccountant`
has recorded, seen as one mechanism: its ``epsilon``, ``delta``, ``epsilon_bounds``,
``rdp`` and ``tradeoff`` are validated like any mechanism's and answered by the router
(:func:`~dpacct.accountant.routes.ledger_epsilon` and its siblings, from the row of the
decision table that :func:`~dpacct.accountant.routes.ledger_route` picks), so every
question of one ledger takes the same way down: accountant -> this mechanism -> the
router -> the representation the route names.  The accountant keeps only the state
(the records, the filter) and the budget, and asks this object.

The representations it holds for the router, each cached on the records' version:

* the composition of the records (:meth:`LedgerMechanism.composition`; the ``"exact"``
  route's answer, and :meth:`~dpacct.accountant.ledger.PrivacyAccountant.mechanism`);
* the schedule rounded up or down to the grid (:meth:`LedgerMechanism.accounted`;
  :func:`~dpacct.accountant.ledger.records.rounded`);
* the composed history at each delta asked
  (:meth:`LedgerMechanism.online`; :class:`~dpacct.accountant.ledger.history.BudgetHistory`,
  the budget's one shared with the fixed-schedule filter): on the ``"online"`` route
  both ``epsilon`` and ``delta`` read it
  (:func:`~dpacct.accountant.ledger_delta.online_delta`).

Wrapped by another mechanism (composed, subsampled), a ledger is described by
:attr:`LedgerMechanism.privacy`: its composition on the ``"exact"`` route, else the
schedule rounded up to the grid, which dominates every record.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from .. import routes
from ..bracket import Bracket
from ..capabilities import Capabilities
from ..ledger_delta import certified_epsilon
from ..mechanism import Mechanism
from ..pld.schedule import (
    _first_lower,
    _refined_lower,
)
from ..pld.schedule_tilted import TiltedDelta, tilted_delta, tilted_epsilon
from ..validation import (
    as_real_array,
    check_alpha,
    check_delta,
    check_epsilon,
    check_fpr,
    check_tol,
    pure_epsilon_at_zero_delta,
)
from .history import BudgetHistory
from .records import Records, rounded

__all__ = ["ONLINE_DELTAS", "LedgerMechanism"]

#: how many deltas (besides the budget's) keep a composed history for online queries
ONLINE_DELTAS = 4


class LedgerMechanism(Mechanism):
    """The records of a ledger as one mechanism, answered by the router.

    Parameters
    ----------
    records : Records
        The ledger's records (read, never written here).
    tol : float or None
        The ledger's accuracy: what ``tol=None`` means in the queries.
    grid : float
        Relative width of the rounding cells for DP-SGD schedules.
    progress : bool
        Whether a long composition of a rounded schedule shows a progress bar.
    budget_history : BudgetHistory, optional
        The composed history at the budget's delta, shared with the filter.
    certified : callable, optional
        ``delta -> float or None``: a filter's certified epsilon for the current
        records at ``delta`` (used when smaller, off the ``"online"`` route).

    Examples
    --------
    >>> from dpacct.accountant import PrivacyAccountant, compose, poisson_subsample
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> acct = PrivacyAccountant()
    >>> acct.step(noise_multiplier=1.0, sample_rate=0.01, count=1000)
    >>> ledger = acct.ledger
    >>> ledger.route, ledger.epsilon(1e-5) == acct.epsilon(1e-5)
    ('exact', True)
    >>> run = compose([poisson_subsample(GaussianMechanism(sigma=1.0), 0.01)], [1000])
    >>> ledger.epsilon(1e-5) == run.epsilon(1e-5), ledger.delta(2.0) == run.delta(2.0)
    (True, True)
    """

    def __init__(
        self,
        records: Records,
        *,
        tol: float | None,
        grid: float,
        progress: bool,
        budget_history: BudgetHistory | None = None,
        certified: Callable[[float], float | None] | None = None,
    ) -> None:
        self._records = records
        self._tol = tol
        self._grid = grid
        self._progress = progress
        self._certified = certified
        self._budget_history = budget_history
        #: the composed history at each delta asked (the budget's one is the filter's)
        self._online: dict[float, BudgetHistory] = {}
        if budget_history is not None:
            self._online[budget_history.budget[1]] = budget_history
        self._rounded_cache: dict[bool, tuple[int, Mechanism]] = {}
        self._composed: tuple[int, Mechanism | None] = (-1, None)
        self._eps_cache: dict[Any, Any] = {}
        self._pairs: tuple[int, dict[float, float]] = (-1, {})

    # ------------------------------------------------------------ what it is
    @property
    def route(self) -> str:  # type: ignore[override]
        """The router's choice for this ledger: ``"exact"``, ``"online"`` or
        ``"rounded"`` (:func:`~dpacct.accountant.routes.ledger_route`)."""
        return self._records.route()

    @property
    def empty(self) -> bool:
        """True when nothing has been recorded."""
        return not self._records.entries

    @property
    def neighbouring(self) -> str:  # type: ignore[override]
        """The records' neighbouring relation (add/remove for an empty ledger)."""
        entries = self._records.entries
        return entries[0].mechanism.neighbouring if entries else "add/remove"

    @property
    def privacy(self) -> Mechanism:
        """What describes the ledger to a wrapper (composition, subsampling): the
        composition of the records on the ``"exact"`` route, else the schedule rounded
        up to the grid (a dominating mechanism); itself when empty."""
        mech = self.accounted(upper=True)
        return self if mech is None else mech

    @property
    def capabilities(self) -> Capabilities:
        """The capabilities of :attr:`privacy` (none for an empty ledger)."""
        privacy = self.privacy
        return Capabilities() if privacy is self else privacy.capabilities

    def __repr__(self) -> str:
        steps = sum(e.count for e in self._records.entries)
        return f"LedgerMechanism(entries={len(self._records)}, steps={steps})"

    # ------------------------------------------------- representations (router's)
    def composition(self) -> Mechanism | None:
        """The composition of everything recorded so far (None when empty): with two
        or more full-batch Gaussian entries, the others composed with their fold into
        one Gaussian (:class:`~dpacct.accountant.ledger.records.GaussianFold`; the
        folded Gaussian alone when nothing else was recorded)."""
        version, mech = self._composed
        records = self._records
        if version != records.version:
            # full-batch Gaussians folded into one (Records.parts: O(1) for the fold)
            mech = records.composition()
            self._composed = (records.version, mech)
        return mech

    def composition_below(self) -> Mechanism | None:
        """For the lower end of an ``"exact"`` bracket: the composition with the folded
        Gaussian's sigma rounded *up*, when full-batch Gaussians are folded beside other
        records (None otherwise: :meth:`composition` serves both ends; a folded
        Gaussian alone brackets the true one by its own certificate,
        docs/theory/analytic_gaussian.md)."""
        records = self._records
        if not records.folded() or not records.others:
            return None
        return self.cached(("below",), partial(records.composition, upper=False))

    def accounted(self, upper: bool) -> Mechanism | None:
        """The composition (``"exact"`` route), else the schedule rounded up (``upper``)
        or down to the grid, other records kept (None when empty)."""
        records = self._records
        if not records.entries:
            return None
        if records.route() == "exact":
            return self.composition()
        cached = self._rounded_cache.get(upper)
        if cached is not None and cached[0] == records.version:
            return cached[1]
        mech = rounded(records.entries, self._grid, upper, self._progress)
        self._rounded_cache[upper] = (records.version, mech)
        return mech

    def online(self, delta: float) -> BudgetHistory:
        """The composed history at ``delta``, kept up to date by :meth:`charge`.

        Made on the first query at that delta from the records so far; at most
        ``ONLINE_DELTAS`` are kept (the budget's always), the oldest other one dropped.
        """
        history = self._online.get(delta)
        if history is None:
            budget = self._budget_history
            others = [d for d in self._online if budget is None or d != budget.budget[1]]
            if len(others) >= ONLINE_DELTAS:
                del self._online[others[0]]
            history = BudgetHistory(
                self._records, (math.inf, delta), self._tol, self._grid, self._progress
            )
            for entry in self._records.entries:
                history.restore(entry)
            self._online[delta] = history
        return history

    def online_deltas(self) -> list[float]:
        """The deltas of the composed histories kept (:meth:`online`), oldest first."""
        return list(self._online)

    def charge(self, entry: Any) -> None:
        """``entry`` was recorded: every composed history takes it."""
        for history in self._online.values():
            history.charge(entry)

    def certified(self, delta: float) -> float | None:
        """A filter's certified epsilon at ``delta`` for the current records, or None."""
        return None if self._certified is None else self._certified(delta)

    def fast_lower(
        self, delta: float, upper: float | None = None, width: float | None = None
    ) -> float | None:
        """The certified lower end of the characteristic-function fast path
        (:func:`~dpacct.accountant.pld.schedule.fast_epsilon_bounds`), or None.

        Used when every record is a DP-SGD step: the steps rounded down (on the loss
        grid of :func:`~dpacct.accountant.pld.schedule._lower_step`, as fine as the
        narrowest steps need); not rounded with at most ``EXACT_CELLS`` distinct steps,
        and a coordinate with at most ``EXACT_VALUES`` values keeps them; such phases
        on the optimistic fine groups of :mod:`~dpacct.accountant.pld.optimistic_groups`.
        ``None`` --
        the engine's route -- when a record is another mechanism or the fast path
        cannot certify.  With ``upper`` (the bracket's upper end) and ``width`` (asked
        by the caller), a lower end more than ``width`` (relative) below ``upper`` is
        recomputed on a finer step (:func:`~dpacct.accountant.pld.schedule._first_lower`
        with ``fine``, then :func:`~dpacct.accountant.pld.schedule._refined_lower`); the
        largest of the certified lower ends is returned.
        """
        below = self._records.phases(upper=False)
        if below is None:
            return None

        lo = self.cached(("fast_lower", delta), partial(_first_lower, below, delta, self._grid))
        if lo is None or upper is None or width is None or upper - lo <= width * upper:
            return lo
        fine = self.cached(
            ("fast_lower", delta, "fine"),
            partial(_first_lower, below, delta, self._grid, True),
        )
        lo = lo if fine is None else max(lo, fine)
        return self.cached(
            ("fast_lower", delta, upper, width),
            partial(_refined_lower, below, delta, lo, upper, self._grid, width),
        )

    def tilted(self, epsilon: float, target: float) -> TiltedDelta | None:
        """The certified delta at ``epsilon`` of the records' DP-SGD steps composed
        exponentially tilted (:func:`~dpacct.accountant.pld.schedule_tilted.tilted_delta`,
        tails sized for ``target``) with the shares of it that are certificate and cut,
        or None when a record is another mechanism or the composition cannot certify
        (cached).

        Every step at its sigma for upper bounds, each distinct ``(sigma, q)`` a cell;
        the router reads it where the composed histories' certificate floor is far above
        the answer (:func:`~dpacct.accountant.ledger_delta.online_delta`)."""
        return self._of_steps(("tilted", epsilon, target), tilted_delta, epsilon, target)

    def tilted_epsilon(self, delta: float, guess: float) -> float | None:
        """The certified epsilon at ``delta`` of the records' DP-SGD steps composed
        exponentially tilted at ``guess`` (:func:`~dpacct.accountant.pld.schedule_tilted.
        tilted_epsilon`), or None as :meth:`tilted` (cached); read by
        :func:`~dpacct.accountant.ledger_delta.online_epsilon` at tiny deltas."""
        return self._of_steps(("tilted epsilon", delta, guess), tilted_epsilon, delta, guess)

    def _of_steps(self, key: tuple, compute: Callable, first: float, second: float) -> Any:
        """``compute(phases, first, second)`` of the records' DP-SGD steps (every step at
        its sigma), cached under ``key``; None when a record is another mechanism."""
        phases = self._records.phases(upper=True)
        if phases is None:
            return None
        return self.cached(key, partial(compute, phases, float(first), float(second)))

    @property
    def entry_count(self) -> int:
        """The number of records (a step with its count is one)."""
        return len(self._records.entries)

    def certified_pairs(self) -> dict[float, float]:
        """The certified ``epsilon -> delta`` pairs answered for the records' current
        version (:func:`~dpacct.accountant.ledger_delta.remember`): kept apart from
        :meth:`cached`, which is cleared when full, and dropped when a record is added."""
        if self._pairs[0] != self._records.version:
            self._pairs = (self._records.version, {})
        return self._pairs[1]

    def cached(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()``, kept for the records' current version under ``key``."""
        full = (self._records.version, key)
        if full in self._eps_cache:
            return self._eps_cache[full]
        value = compute()
        if len(self._eps_cache) > 64:
            self._eps_cache.clear()
        self._eps_cache[full] = value
        return value

    # ------------------------------------------------------------------ queries
    def _tol_of(self, tol: float | None) -> float | None:
        return self._tol if tol is None else check_tol(tol)

    def epsilon(self, delta, *, tol: float | None = None):
        """Epsilon spent at ``delta`` (scalar or array): a sound upper bound, 0 when empty.

        ``delta = 0`` asks for pure DP (the composition's ``pure_epsilon``).  ``tol``:
        None is the ledger's; the composed history of the ``"online"`` route keeps the
        ledger's.  See :func:`~dpacct.accountant.routes.ledger_epsilon`.
        """
        tol = self._tol_of(tol)
        d_arr = as_real_array("delta", delta)
        out = []
        for d in d_arr.reshape(-1):
            d = check_delta(d, allow_zero=True)
            if d == 0:
                mech = self.composition()
                out.append(0.0 if mech is None else pure_epsilon_at_zero_delta(mech))
            else:
                ask = partial(routes.ledger_epsilon, self, d, tol)
                eps = self.cached(("eps", d, tol), ask)
                if self.route == "online":  # a pair remembered since (ledger_delta)
                    eps = min(eps, certified_epsilon(self, d))
                out.append(eps)
        arr = np.array(out, dtype=float).reshape(d_arr.shape)
        return float(arr) if np.ndim(d_arr) == 0 else arr

    def delta(self, epsilon, *, tol: float | None = None):
        """Delta spent at ``epsilon`` (scalar or array): a sound upper bound, 0 when empty.

        See :func:`~dpacct.accountant.routes.ledger_delta`.  Off the ``"exact"`` route
        the answers do not increase with epsilon (:meth:`_non_increasing`).
        """
        tol = self._tol_of(tol)
        e_arr = as_real_array("epsilon", epsilon)
        flat = np.array([check_epsilon(e) for e in e_arr.reshape(-1)], dtype=float)
        out = routes.ledger_delta(self, flat, tol)
        if self._records.entries and self.route != "exact":
            out = self._non_increasing(flat, out)
        out = out.reshape(e_arr.shape)
        return float(out) if np.ndim(e_arr) == 0 else out

    @staticmethod
    def _non_increasing(flat: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Each answer lowered to the smallest answer of the same call at an epsilon at
        most its own.

        Sound: the true ``delta(eps) = sup_S P(S) - e^eps Q(S)`` of every pair does not
        increase with ``eps``, so a sound upper bound at ``eps' <= eps`` is one at
        ``eps`` too, and the smallest of several sound bounds is sound.  Free: the
        answers are the ones already computed (the composed histories near their floor
        and the rounded schedule can each read a little higher at a larger epsilon).
        Only the call's own answers are compared, so an answer never depends on the
        questions asked before it: a curve asked as one array is non-increasing, and the
        same question always gets the same number.
        """
        order = np.lexsort((out, flat))
        running = np.empty_like(out)
        running[order] = np.minimum.accumulate(out[order])
        return running

    def epsilon_bounds(
        self, delta: float, *, tol: float | None = None, width: float | None = None
    ) -> Bracket:
        """``(lower, upper)`` bracket of the epsilon spent at ``delta``; with ``width``
        (relative, in (0, 0.5)) a DP-SGD ledger's lower end is refined on a finer loss
        step while the bracket is wider (at a few times the cost, as far as the fast
        path's finest step and the steps' rounding allow).

        See :func:`~dpacct.accountant.routes.ledger_bracket`.
        """
        d = check_delta(delta, allow_zero=True)
        return routes.ledger_bracket(self, d, self._tol_of(tol), check_tol(width, "width"))

    def rdp(self, alpha):
        """Renyi-DP epsilon of the records at order(s) ``alpha`` (0 when empty).

        See :func:`~dpacct.accountant.routes.ledger_rdp`.
        """
        a = check_alpha(alpha)
        out = routes.ledger_rdp(self, a.reshape(-1)).reshape(a.shape)
        return float(out) if np.ndim(a) == 0 else out

    def tradeoff(self, fpr, *, tol: float | None = None):
        """f-DP trade-off of the records: a lower bound on beta at ``fpr`` (``1 - fpr``
        when empty).  See :func:`~dpacct.accountant.routes.ledger_tradeoff`."""
        a = check_fpr(fpr)
        out = routes.ledger_tradeoff(self, a.reshape(-1), self._tol_of(tol)).reshape(a.shape)
        return float(out) if np.ndim(a) == 0 else out
