"""Per-record Renyi filters for DP-SGD: every record its own budget, all records at once.

Feldman & Zrnic 2021 ("Individual privacy accounting via a Renyi filter", NeurIPS;
arXiv 2008.11193): the Renyi filter theorem holds for *individual* privacy losses.  At a
Renyi order ``alpha`` fixed before the run, let ``rho_t^(i)`` be a bound on the RDP of
step ``t`` with respect to record ``i`` (adding or removing ``x_i``), chosen from
everything released before step ``t`` and from ``x_i`` itself.  If record ``i`` takes
part only while ``sum_t rho_t^(i) <= B``, the whole run is ``(alpha, B)``-RDP with
respect to ``x_i``; ``B`` converts to the budget ``(epsilon, delta)`` by Canonne,
Kamath & Steinke 2020, Proposition 12.

In DP-SGD with Poisson sampling at rate ``q``, noise ``sigma * C`` and record ``i``'s
per-sample gradient clipped to ``C_i = r_i * C`` (``0 < r_i <= 1``), step ``t`` is, with
respect to ``x_i``, the Poisson-subsampled Gaussian with noise multiplier
``sigma / r_i`` (Mironov, Talwar & Zhang 2019), whatever the other records do.  Its cost
must be fixed *before the step's randomness*: ``r_i`` may depend on past releases and on
``x_i``, never on whether ``x_i`` is sampled at this step nor on earlier (hidden)
sampling.  The proof and the design choices: ``docs/theory/per_record.md``.

:class:`PerRecordFilter` keeps, for ``n`` records and ``K`` orders, the summed RDP of
each record (an ``n x K`` array) and decides which records still fit.  Ratios are rounded
*up* to a geometric grid of :data:`LEVELS` (``2**(-j/4)``), so that the per-step costs are
a small ``levels x orders`` table; steps of equal ``(sigma, q)`` and equal thresholds form
a *segment* whose cost is folded into the array once, at its end, so a step costs a
few operations over ``n`` and none over ``n x K``.  No Python loop over records.

The report (:meth:`PerRecordFilter.epsilons`) is the Renyi odometer of each record:
by Ville's maximal inequality applied to the supermartingale
``exp((alpha - 1)(L_t - sum_{s<=t} rho_s))`` of the individual privacy loss ``L_t``, with
probability at least ``1 - delta / K`` the loss never exceeds
``sum rho(alpha) + log(K / delta) / (alpha - 1)`` at any step; a union over the ``K``
orders gives the minimum over orders at total probability ``delta``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..rdp.subsampled_rdp import subsampled_gaussian_rdp
from ..validation import check_count, check_delta, check_epsilon, check_positive

__all__ = ["LEVELS", "ORDERS", "PerRecordFilter", "PerRecordState", "quantise_ratios"]

#: the clipping-threshold grid: ratio ``r = C_i / C`` of level ``j`` is ``2**(-j/4)``
LEVELS = 2.0 ** (-np.arange(49) / 4.0)
#: orders tracked for every record: the report's minimum runs over them, and the filter's
#: single order is one of them
ORDERS = np.concatenate([1.0 + np.geomspace(0.05, 1.0, 8)[:-1], np.geomspace(2.0, 512.0, 33)])
#: costs are rounded up by this relative amount, so that the float sums ``base + k * c``
#: (a few roundings of relative size 2**-53) stay above the exact sums
_COST_UP = 1.0 + 2.0**-40


def _sum_up(rdp: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """``rdp`` times ``1 + (steps + 1) 2^-52`` (per record): an upper bound on the exact
    sum of which ``rdp`` is the float running sum.  Each fold adds one non-negative term
    to a record's sum only if it charged the record a step, so a record's sum went
    through at most ``steps`` additions, and a float sum of ``n`` non-negative terms is at
    least ``1 - gamma_n`` times the exact one (Higham 2002, eq. (4.4));
    ``1 / (1 - gamma_n) <= 1 + (n + 1) 2^-52`` while ``n 2^-53 <= 1/4``.  (:data:`_COST_UP`
    alone covers only about ``2^12`` folds.)"""
    grow = 1.0 + (np.asarray(steps, dtype=float) + 1.0) * 2.0**-52
    return rdp * (grow[:, None] if rdp.ndim == 2 else grow)


def quantise_ratios(ratios: object) -> np.ndarray:
    """Levels (indices into :data:`LEVELS`) of the smallest grid ratio ``>= ratio``.

    A ratio is ``C_i / C``, record ``i``'s clipping threshold over the run's; the level's
    ratio is at least the asked one (the threshold is never lowered by rounding: the
    record is clipped at the level's ratio and charged for it).  Ratios below the last
    level take the last level.

    Parameters
    ----------
    ratios : array_like of float
        In ``(0, 1]``.

    Examples
    --------
    >>> quantise_ratios([1.0, 0.5, 0.3, 1e-9]).tolist()
    [0, 4, 6, 48]
    """
    r = np.asarray(ratios, dtype=float)
    if r.ndim != 1 or not np.all((r > 0) & (r <= 1)):
        raise ValueError("ratios must be a 1-d array of clipping ratios C_i / C in (0, 1]")
    # LEVELS decreases: the last index whose ratio is >= r
    idx = np.searchsorted(-LEVELS, -r, side="right") - 1
    return np.clip(idx, 0, len(LEVELS) - 1).astype(np.int16)


@dataclass(frozen=True)
class PerRecordState:
    """A snapshot of the filter: the summed RDP and the status of every record.

    Attributes
    ----------
    orders : ndarray, shape (K,)
    rdp : ndarray, shape (n, K)
        Each record's summed RDP at every order (an upper bound).
    steps : ndarray of int, shape (n,)
        Steps each record was eligible for (charged), sampled or not.
    active : ndarray of bool, shape (n,)
        Records still in the run.
    ratios : ndarray, shape (n,)
        Each record's current clipping ratio ``C_i / C`` (after rounding up).
    """

    orders: np.ndarray
    rdp: np.ndarray
    steps: np.ndarray
    active: np.ndarray
    ratios: np.ndarray


class PerRecordFilter:
    """Individual Renyi filters for ``n`` records of a DP-SGD run (Feldman & Zrnic 2021).

    Each step is a Poisson-subsampled Gaussian (rate ``q``, noise multiplier ``sigma``);
    record ``i``, clipped at ratio ``r_i`` of the run's clipping norm, pays the RDP of the
    subsampled Gaussian with noise multiplier ``sigma / r_i`` at every step it is
    eligible for, sampled or not (Mironov, Talwar & Zhang 2019, Section 3; computed by
    :func:`~dpacct.accountant.rdp.subsampled_rdp.subsampled_gaussian_rdp`).  With a
    budget, record ``i`` is dropped for good before the first step whose cost would take
    its sum at the filter's order above ``B`` (the individual Renyi filter).

    Parameters
    ----------
    n : int
        Number of records.
    budget_epsilon, budget_delta : float, optional
        The per-record budget (both or neither); without it nothing is dropped and the
        filter only accounts.
    order : float, optional
        The filter's Renyi order (one of :data:`ORDERS`'s range, > 1); None: chosen at
        the first step from its ``(sigma, q)`` alone -- the order at which most such
        worst-case steps fit -- so that nothing data-dependent enters it.

    Examples
    --------
    >>> f = PerRecordFilter(4, budget_epsilon=2.0, budget_delta=1e-5)
    >>> f.set_ratios([1.0, 0.5, 0.25, 0.125])
    >>> for _ in range(1000):
    ...     mask = f.begin_step(sigma=1.5, sample_rate=0.05)
    >>> mask.tolist()                   # the two largest thresholds spent their budget
    [False, False, True, True]
    >>> f.state().steps.tolist()        # steps each record was charged
    [112, 700, 1000, 1000]
    >>> f.epsilons(1e-5).round(2).tolist()
    [2.8, 2.7, 1.52, 0.74]

    Every record is ``(2.0, 1e-5)``-DP by the filter; the odometer (a time-uniform bound
    with a union over the orders) is looser than the budget for the records the filter
    stopped, and far below it for the others.
    """

    def __init__(
        self,
        n: int,
        *,
        budget_epsilon: float | None = None,
        budget_delta: float | None = None,
        order: float | None = None,
    ) -> None:
        self.n = check_count(n, "n")
        if (budget_epsilon is None) != (budget_delta is None):
            raise ValueError("budget_epsilon and budget_delta must be given together")
        self.budget: tuple[float, float] | None = None
        if budget_epsilon is not None:
            eps = check_epsilon(budget_epsilon, "budget_epsilon")
            if not 0.0 < eps < math.inf:
                raise ValueError(f"budget_epsilon must be in (0, inf), got {budget_epsilon!r}")
            self.budget = (eps, check_delta(budget_delta, "budget_delta"))
        self.order: float | None = None
        if order is not None:
            a = check_positive("order", order)
            if not 1.0 < a < math.inf:
                raise ValueError(f"order must be a real number > 1, got {order!r}")
            self.order = a
        self.orders = ORDERS.copy()
        self._k = -1  # column of the filter's order in self.orders
        self.rdp = np.zeros((self.n, len(self.orders)))
        self.steps = np.zeros(self.n, dtype=np.int64)
        self.active = np.ones(self.n, dtype=bool)
        self.level = np.zeros(self.n, dtype=np.int16)
        self._limit = math.inf  # B at the filter's order, rounded down
        # the open segment: (sigma, q), its cost table, steps done, each record's last
        # eligible step in it, and who was active at its start
        self._seg: tuple[float, float] | None = None
        self._table = np.zeros((0, len(self.orders)))
        self._done = 0
        self._last = np.zeros(self.n, dtype=np.int64)
        self._start_active = self.active.copy()

    # ------------------------------------------------------------ thresholds
    def set_ratios(self, ratios: object, *, indices: object = None) -> None:
        """Set records' clipping ratios ``C_i / C`` (rounded up to :data:`LEVELS`).

        Call only with ratios fixed from what the filter may use: released outputs and
        the records themselves, never from whether a record was sampled.

        Parameters
        ----------
        ratios : array_like of float in (0, 1]
        indices : array_like of int, optional
            The records the ratios belong to (default: all ``n``, in order).
        """
        levels = quantise_ratios(ratios)
        idx = np.arange(self.n) if indices is None else np.asarray(indices, dtype=np.int64)
        if idx.shape != levels.shape:
            raise ValueError(
                f"ratios has {levels.size} entries for {idx.size} indices"
            )
        if idx.size and (idx.min() < 0 or idx.max() >= self.n):
            raise ValueError(f"indices must lie in [0, {self.n})")
        self._fold()
        self.level[idx] = levels

    @property
    def ratios(self) -> np.ndarray:
        """Each record's clipping ratio ``C_i / C`` (the grid value it is clipped at)."""
        return LEVELS[self.level]

    # ------------------------------------------------------------ steps
    def begin_step(self, *, sigma: float, sample_rate: float) -> np.ndarray:
        """Charge one step to every eligible record; return who is eligible.

        Called before the step's randomness (before the batch is drawn): a record is
        eligible if it is still active and the step's cost keeps its sum at the filter's
        order within the budget; otherwise it is dropped for good.  Every eligible
        record is charged, whether the step then samples it or not.

        Parameters
        ----------
        sigma : float
            The step's noise multiplier (noise std over the run's clipping norm), > 0.
        sample_rate : float
            The Poisson sampling rate, in (0, 1].

        Returns
        -------
        ndarray of bool, shape (n,)
            The eligible records (read-only view; valid until the next call).
        """
        s = check_positive("sigma", sigma)
        if not math.isfinite(s):
            raise ValueError(f"sigma must be finite, got {sigma!r}")
        q = float(sample_rate)
        if not 0.0 < q <= 1.0:
            raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate!r}")
        if self._seg != (s, q):
            self._fold()
            self._open(s, q)
        self._done += 1
        mask = self._last >= self._done
        mask &= self._start_active
        mask.flags.writeable = False
        return mask

    def _open(self, sigma: float, q: float) -> None:
        """Start a segment at ``(sigma, q)``: cost table and each record's last step."""
        if self.order is None and self.budget is not None:
            self.order = self._choose_order(sigma, q)
        if self._k < 0:
            if self.order is not None and not np.any(self.orders == self.order):
                self.orders = np.sort(np.append(self.orders, self.order))
                self.rdp = np.zeros((self.n, len(self.orders)))
            self._k = (
                int(np.flatnonzero(self.orders == self.order)[0]) if self.order else 0
            )
            if self.budget is not None:
                self._limit = float(_rdp_budget(self.budget, self.order)) * (1 - 2.0**-40)
        self._seg = (sigma, q)
        used = np.unique(self.level)
        table = np.zeros((len(LEVELS), len(self.orders)))
        for j in used:  # a loop over <= 49 threshold levels, not over records
            table[j] = subsampled_gaussian_rdp(q, sigma / LEVELS[j], self.orders) * _COST_UP
        self._table = table
        self._done = 0
        self._start_active = self.active.copy()
        if self.budget is None:
            self._last = np.full(self.n, np.iinfo(np.int64).max // 2)
            return
        c = table[self.level, self._k]
        base = _sum_up(self.rdp[:, self._k], self.steps)  # the sum's round-off covered
        room = self._limit - base
        with np.errstate(divide="ignore", invalid="ignore"):
            last = np.where(c > 0, np.floor(room / c), np.inf)
        last = np.clip(np.nan_to_num(last, nan=-1.0, posinf=2.0**62), -1, 2.0**62)
        last = last.astype(np.int64)
        # the float check of the fold (base + k * c <= limit) decides, not the division
        last -= (base + last * c > self._limit).astype(np.int64)
        last = np.maximum(last, 0)
        self._last = last

    def _fold(self) -> None:
        """Add the open segment's steps to every record's sums; drop the exhausted."""
        if self._seg is None or self._done == 0:
            self._seg = None
            return
        took = np.minimum(self._last, self._done) * self._start_active
        self.rdp += took[:, None] * self._table[self.level]
        self.steps += took
        # a record that was not eligible at some step of the segment is dropped for good
        self.active &= self._last >= self._done
        self._seg = None
        self._done = 0

    # ------------------------------------------------------------ answers
    def state(self) -> PerRecordState:
        """The summed RDP of every record so far (the open segment folded in)."""
        seg, done = self._seg, self._done
        self._fold()
        if seg is not None and done:
            # reopen the same segment, so the next step continues it
            self._open(*seg)
        return PerRecordState(
            self.orders.copy(), self.rdp.copy(), self.steps.copy(), self.active.copy(),
            self.ratios,
        )

    def epsilons(self, delta: float) -> np.ndarray:
        """Each record's Renyi odometer at ``delta``: a bound on its realised loss.

        ``min over the K orders of rdp_i(alpha) + log(K / delta) / (alpha - 1)``: with
        probability at least ``1 - delta`` (over the run), record ``i``'s privacy loss
        stays below it at every step (Ville's inequality on the supermartingale of the
        Renyi filter's proof, union over the orders; docs/theory/per_record.md).  For a
        record whose thresholds were fixed in advance this is an ``(epsilon_i,
        delta)``-DP guarantee for it.

        Parameters
        ----------
        delta : float
            In (0, 1).
        """
        d = check_delta(delta)
        st = self.state()
        a = st.orders
        extra = (math.log(len(a)) - math.log(d)) / (a - 1.0)
        return np.min(_sum_up(st.rdp, st.steps) + extra[None, :], axis=1)

    def state_dict(self) -> dict[str, object]:
        """Everything a resumed run needs: sums, steps, status, thresholds, order, budget.

        A run restarted from a checkpoint must restore it (:meth:`load_state_dict`):
        a fresh filter would readmit every record with nothing spent.
        """
        st = self.state()
        return {
            "n": self.n, "budget": self.budget, "order": self.order,
            "orders": st.orders, "rdp": st.rdp, "steps": st.steps, "active": st.active,
            "level": self.level.copy(),
        }

    def load_state_dict(self, state: dict[str, object]) -> None:
        """Restore :meth:`state_dict` output (same ``n`` and budget; validated first).

        Parameters
        ----------
        state : dict
            From :meth:`state_dict`.

        Raises
        ------
        ValueError
            Another filter's state, or arrays of the wrong shape or out of range: the
            orders finite and > 1 (one row of ``rdp`` each, finite and >= 0), ``order``
            one of them, ``steps`` integers >= 0 (a negative count would make a spent
            record's bound negative and readmit it), levels in range (nothing changed).
        """
        if state.get("n") != self.n or state.get("budget") != self.budget:
            raise ValueError(
                f"state of a filter for n={state.get('n')}, budget={state.get('budget')}; "
                f"this one has n={self.n}, budget={self.budget}"
            )
        orders = np.asarray(state["orders"], dtype=float)
        rdp = np.asarray(state["rdp"], dtype=float)
        raw_steps = np.asarray(state["steps"])
        if raw_steps.dtype.kind not in "iu" or raw_steps.min(initial=0) < 0:
            raise ValueError(
                f"state['steps'] must be integers >= 0, got dtype {raw_steps.dtype} "
                f"with minimum {raw_steps.min(initial=0)}"
            )
        order = state.get("order")
        if orders.ndim != 1 or not np.all(np.isfinite(orders) & (orders > 1)):
            raise ValueError("state['orders'] must be a 1-D array of finite orders > 1")
        if order is not None and not np.any(orders == float(order)):
            raise ValueError(f"state['order'] {order!r} is not one of state['orders']")
        steps = raw_steps.astype(np.int64)
        active = np.asarray(state["active"], dtype=bool)
        level = np.asarray(state["level"], dtype=np.int16)
        k = len(orders)
        if (
            rdp.shape != (self.n, k) or steps.shape != (self.n,) or active.shape != (self.n,)
            or level.shape != (self.n,) or not np.all(np.isfinite(rdp) & (rdp >= 0))
            or level.min(initial=0) < 0 or level.max(initial=0) >= len(LEVELS)
        ):
            raise ValueError("state has arrays of the wrong shape or values out of range")
        self._seg, self._done = None, 0
        self.orders, self.rdp, self.steps = orders.copy(), rdp.copy(), steps.copy()
        self.active, self.level = active.copy(), level.copy()
        self.order = None if order is None else float(order)
        self._k = -1 if order is None else int(np.flatnonzero(orders == self.order)[0])
        if self.budget is not None and self.order is not None:
            self._limit = float(_rdp_budget(self.budget, self.order)) * (1 - 2.0**-40)
        self._start_active = self.active.copy()

    def budget_epsilon(self) -> float | None:
        """The certified per-record epsilon of the filter (at ``budget_delta``), if any."""
        return None if self.budget is None else self.budget[0]

    def _choose_order(self, sigma: float, q: float) -> float:
        """The order (of :data:`ORDERS`) at which most worst-case steps fit the budget."""
        assert self.budget is not None
        rho = subsampled_gaussian_rdp(q, sigma, ORDERS)
        room = _rdp_budget(self.budget, ORDERS)
        with np.errstate(divide="ignore", invalid="ignore"):
            fits = np.where((room > 0) & (rho > 0), room / rho, -np.inf)
        return float(ORDERS[int(np.argmax(fits))])


def _rdp_budget(budget: tuple[float, float], alpha: object) -> np.ndarray:
    """RDP budget ``B(alpha)`` converting to ``(epsilon, delta)``: the inverse of
    Canonne, Kamath & Steinke 2020, Proposition 12,
    ``eps = B + log(1 - 1/alpha) - (log delta + log alpha) / (alpha - 1)``."""
    eps, delta = budget
    a = np.asarray(alpha, dtype=float)
    return eps - np.log1p(-1.0 / a) + (math.log(delta) + np.log(a)) / (a - 1.0)
