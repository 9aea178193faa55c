"""Privacy filters: strategies that decide whether a record still fits a budget.

A filter sits in front of the ledger's records (:class:`Filter`): ``admit`` raises
:class:`BudgetExceededError` -- and nothing is recorded -- when a record would take the
ledger over the budget; ``charge`` tells it a record was recorded; ``options`` is the
state a saved ledger keeps.  A ledger without a budget has no filter.  Two strategies:

* :class:`PLDFilter` (``adaptive=False``): the sequence of mechanisms is fixed in
  advance, so stopping it at a data-independent point keeps the PLD bound of the
  recorded prefix a valid (epsilon, delta) guarantee.  An accepted check certifies a
  geometrically growing number of further records (adding mechanisms never lowers
  epsilon); a record that repeats the last one is certified for the largest number of
  copies that fits (:func:`_largest_count`, O(log n) compositions); beyond
  ``EXACT_PHASES`` distinct mechanisms the check is incremental
  (:mod:`dpacct.accountant.ledger.history`).  Far from the budget no PLD check runs at
  all: on a ledger of DP-SGD steps, the steps' summed Renyi DP certifies the next ones
  first (:mod:`dpacct.accountant.ledger.rdp_credit`); answers and refusals stay the
  PLD's.
* :class:`RenyiFilter` (``adaptive=True``): the fully adaptive composition theorem for
  Renyi DP (Feldman & Zrnic 2021, NeurIPS): at one order ``alpha`` fixed before the run,
  records whose summed RDP never exceeds ``B`` are ``(alpha, B)``-RDP together, with
  ``B`` converting to the budget by Canonne, Kamath & Steinke 2020, Proposition 12.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..mechanism import Mechanism
from ..pld.schedule import _cell_mechanism
from .history import BudgetHistory
from .rdp_credit import RdpCredit
from .records import Entry, Records, Step, classify, key, same

__all__ = ["BudgetExceededError", "Filter", "PLDFilter", "RenyiFilter"]

#: the look-ahead certifies future steps dominated by the current one loosened by this
#: relative amount (smaller sigma, larger q): a slowly changing schedule is covered by
#: one certificate for many steps
LOOKAHEAD_SLACK = 2.0**-6
#: the incremental check tries this wider loosening first: a decaying schedule is
#: then checked about once per 6 % of its sigma, not once per 1.6 %
WIDE_SLACK = 2.0**-4
#: a look-ahead certifies future records only when its epsilon is at most
#: ``budget * (1 - CERTIFICATE_MARGIN)``; closer to the budget every record is checked
#: on the queries' own answer (:meth:`PLDFilter._admit_incremental`).  Privacy never
#: rests on the margin: the look-ahead's answer is a certified bound on the records it
#: covers (they are dominated by its candidates).  The margin keeps the *printed*
#: answer inside the budget after those records are folded in their own blocks of the
#: online ledger: each block's discretisation widens its loss variance by a share of
#: order 1e-5 to 1e-4 (up to eight times that for a block cut early by its distinct
#: cells; :mod:`~dpacct.accountant.pld.incremental`), so the folded answer can exceed
#: the look-ahead's by a few 1e-4 relative at most.  An engineering margin from those
#: shares, not a proof; 2^-16 was enough while every step was discretised alike
CERTIFICATE_MARGIN = 2.0**-11
#: the most records one certificate covers
MAX_COVER = 1 << 40
#: the search for the largest admissible count stops guessing (and halves its
#: bracket) after this many evaluations that did not halve it
_STALL = 2
#: candidate orders for the adaptive (Renyi) filter's single, fixed order
ADAPTIVE_ORDERS = np.concatenate(
    [1.0 + np.geomspace(0.05, 1.0, 12)[:-1], np.geomspace(2.0, 512.0, 49)]
)


class BudgetExceededError(RuntimeError):
    """A step or record refused by a privacy filter; the ledger is unchanged.

    Raised by :meth:`PrivacyAccountant.step` and :meth:`PrivacyAccountant.record`.

    Parameters
    ----------
    message : str
        The explanation shown to the user.
    epsilon : float
        Epsilon (at the budget's delta) the ledger would have reached; for the adaptive
        filter, the conversion of the summed Renyi DP it would have reached.
    budget_epsilon, budget_delta : float
        The declared budget.

    Attributes
    ----------
    epsilon, budget_epsilon, budget_delta : float
        The parameters of the same names.
    """

    def __init__(self, message: str, *, epsilon: float, budget_epsilon: float, budget_delta: float):
        super().__init__(message)
        self.epsilon = epsilon
        self.budget_epsilon = budget_epsilon
        self.budget_delta = budget_delta


BudgetExceededError.__module__ = "dpacct.accountant.ledger"


class Filter(Protocol):
    """What a privacy filter does for the ledger (a ledger without budget has none)."""

    budget: tuple[float, float]

    def admit(self, entry: Entry) -> None:
        """Raise :class:`BudgetExceededError` if recording ``entry`` exceeds the budget."""

    def charge(self, entry: Entry) -> None:
        """``entry`` was recorded (after ``admit`` let it through, or from a file)."""

    def options(self) -> dict[str, Any]:
        """The filter's settings a saved ledger keeps."""


def _refusal(
    entry: Entry, eps: float, budget: tuple[float, float], detail: str, why: str
) -> BudgetExceededError:
    budget_eps, budget_delta = budget
    return BudgetExceededError(
        f"budget exceeded: recording {entry.count} x {entry.mechanism!r} would take "
        f"{detail} > budget_epsilon={budget_eps:g} at delta={budget_delta:g} {why}; the "
        "ledger is unchanged",
        epsilon=eps,
        budget_epsilon=budget_eps,
        budget_delta=budget_delta,
    )


@dataclass
class _Credit:
    """Filter certificate: ``remaining`` more records of ``mechanism`` fit the budget.

    ``epsilon`` is the accountant's bound for the ledger with all of them recorded, an
    upper bound (at the budget's delta) for every ledger state up to there.
    """

    mechanism: Mechanism
    step: Step | None
    remaining: int
    epsilon: float
    version: int
    #: whether it was granted on the online route (the composed history): a record
    #: that moves the ledger to the other route is checked again
    online: bool = False
    #: granted by the Renyi-DP running bound (:class:`RdpCredit`): ``epsilon`` is the
    #: RDP conversion's, never an answer of the ledger
    by_rdp: bool = False

    def covers(self, entry: Entry) -> bool:
        """True if ``entry`` is dominated by the certified record (the same one, or a
        DP-SGD step with at least its sigma and at most its q)."""
        if same(self.mechanism, entry.mechanism):
            return True
        return self.step is not None and entry.step is not None and self.step.covers(entry.step)


def _candidate(entry: Entry, slack: float) -> Entry:
    """The record to certify for ``entry``: itself, or (``slack`` > 0) the DP-SGD step
    that dominates it loosened by ``slack`` (smaller sigma, larger q)."""
    step = entry.step
    if slack == 0 or step is None:
        return entry
    cell = _cell_mechanism(step.sigma_upper * (1.0 - slack), min(step.q * (1.0 + slack), 1.0))
    return Entry(cell, 1, classify(cell))


def _guess(a: tuple[int, float], b: tuple[int, float] | None, budget: float, base: int) -> float:
    """Where ``eps(k) = budget`` by a straight line through ``a`` and ``b`` (or, without
    ``b``, through ``a`` and the origin) in ``(log(base + k), log eps)``: epsilon of a
    composition grows about like a power of the number of records, between its square
    root and linear.  A guess only (nan when the points do not allow one); the search
    that uses it is bracketed."""
    (ka, ea), slope = a, 1.0
    if not (0.0 < ea < math.inf and budget > 0.0):
        return math.nan
    xa = math.log(base + ka)
    if b is not None:
        kb, eb = b
        if not (0.0 < eb < math.inf) or eb == ea:
            return math.nan
        slope = (math.log(eb) - math.log(ea)) / (math.log(base + kb) - xa)
        if not slope > 0.0:
            return math.nan
    return math.exp(min(xa + (math.log(budget) - math.log(ea)) / slope, 700.0)) - base


def _largest_count(
    bound: Callable[[int], float], count: int, budget: float, base: int = 0
) -> tuple[int, float]:
    """The largest ``k`` in ``[count, MAX_COVER]`` with ``bound(k) <= budget``.

    ``bound(k)`` is epsilon of the ledger with ``k`` more copies of a record, which
    never falls as ``k`` grows (adding mechanisms never lowers epsilon).  ``count`` is
    evaluated first: when it does not fit, ``(0, bound(count))``.  Otherwise the
    search brackets the answer between a fitting and a failing count and narrows it
    to adjacent counts, so ``bound(k + 1) > budget`` was evaluated for the ``k``
    returned (unless ``k`` is the cap).  The points are placed by a secant through the
    last two (:func:`_guess`, ``base`` being the records already counted) and by
    halving the bracket when the secant stalls: O(log n) evaluations, about six on a
    constant DP-SGD schedule.

    Returns
    -------
    (int, float)
        ``k`` and ``bound(k)``.

    Examples
    --------
    >>> _largest_count(lambda k: 0.1 * k**0.5, 1, 1.0)
    (100, 1.0)
    >>> _largest_count(lambda k: 0.1 * k**0.5, 101, 1.0)[0]
    0
    """
    eps = bound(count)
    if not eps <= budget:
        return 0, eps
    lo: tuple[int, float] = (count, eps)
    hi: tuple[int, float] | None = None
    points = [lo]
    while hi is None:  # a failing count: at least double, at most 16-fold in base + k
        if lo[0] >= MAX_COVER:
            return lo
        guess = _guess(points[-1], points[-2] if len(points) > 1 else None, budget, base)
        k = 2 * lo[0] if math.isnan(guess) else max(int(min(guess, MAX_COVER)), 2 * lo[0])
        k = min(k, 16 * (base + lo[0]) - base, MAX_COVER)
        points.append((k, bound(k)))
        if points[-1][1] <= budget:
            lo = points[-1]
        else:
            hi = points[-1]
    stall = 0
    while hi[0] - lo[0] > 1:  # narrow the bracket to adjacent counts
        width = hi[0] - lo[0]
        guess = _guess(points[-2], points[-1], budget, base) if stall < _STALL else math.nan
        if math.isnan(guess):
            k = lo[0] + width // 2
        else:
            k = int(min(max(math.floor(guess), lo[0] + 1), hi[0] - 1))
        points.append((k, bound(k)))
        if points[-1][1] <= budget:
            lo = points[-1]
        else:
            hi = points[-1]
        stall = 0 if 2 * (hi[0] - lo[0]) <= width else stall + 1
    return lo


class PLDFilter:
    """The fixed-schedule privacy filter (``adaptive=False``), by the engine's PLDs.

    Parameters
    ----------
    records : Records
        The ledger's records (read, never written).
    history : BudgetHistory
        The composed history at the budget's delta, which the incremental check uses.
    tol : float or None
        The ledger's accuracy setting.
    spent : callable
        ``spent(delta)``: the ledger's epsilon, for the refusal message.
    """

    def __init__(
        self,
        records: Records,
        history: BudgetHistory,
        tol: float | None,
        spent: Callable[[float], float],
    ) -> None:
        self.records = records
        self.history = history
        self.budget = history.budget
        self.tol = tol
        self.spent = spent
        self.credit: _Credit | None = None
        self.lookahead = 1
        #: the records' Renyi DP, summed: admits far from the budget without a PLD check
        self.rdp = RdpCredit(self.budget[1])

    # ------------------------------------------------------------------ interface
    def admit(self, entry: Entry) -> None:
        """Raise :class:`BudgetExceededError` if ``entry`` would exceed the budget."""
        credit = self.credit
        if (
            credit is not None
            and credit.version == self.records.version
            and credit.covers(entry)
            and credit.remaining >= entry.count
            and credit.online == (self.records.route(entry) == "online")
        ):
            return
        if self._admit_rdp(entry):
            return
        if self.records.route(entry) == "online":
            self._admit_incremental(entry)
        else:
            self._admit_exact(entry)

    def charge(self, entry: Entry) -> None:
        """Note a recorded ``entry``: spend the credit (or drop it)."""
        if self.credit is not None:
            if self.credit.covers(entry) and self.credit.remaining >= entry.count:
                self.credit.remaining -= entry.count
                self.credit.version = self.records.version
            else:
                self.credit = None
        self.rdp.charge(entry)

    def restore(self, entry: Entry) -> None:
        """An entry read from a file: only its Renyi DP is summed (no credit is saved)."""
        self.rdp.charge(entry)

    def options(self) -> dict[str, Any]:
        """No settings of its own (budget, tol and grid are the ledger's)."""
        return {}

    def certified(self, delta: float) -> float | None:
        """The certificate's epsilon when it holds for the current ledger at ``delta``."""
        credit = self.credit
        if credit is None or credit.version != self.records.version or credit.by_rdp:
            return None
        if delta >= self.budget[1]:
            return credit.epsilon
        return None

    def _moved(self, entry: Entry) -> bool:
        """True if ``entry`` is a DP-SGD step other than the certified record (the
        schedule moved): the checks then try candidates loosened from it first."""
        credit = self.credit
        return entry.step is not None and (
            credit is None or not same(credit.mechanism, entry.mechanism)
        )

    # ------------------------------------------------------------ Renyi-DP check
    def _admit_rdp(self, entry: Entry) -> bool:
        """Admit ``entry`` by the records' summed Renyi DP when it is far from the budget.

        The candidates are those of the PLD checks (the record itself or, when a
        DP-SGD step moved, the record loosened by ``WIDE_SLACK`` or
        ``LOOKAHEAD_SLACK``); each is given the most copies ``k >= count`` whose summed
        RDP, with the records', converts to at most ``budget * (1 -
        CERTIFICATE_MARGIN)`` (:meth:`RdpCredit.fits`).  The first loosened candidate
        that covers at least as many copies as the record itself (or 1024 records)
        is granted a credit for them: every ledger state up to there has a true
        epsilon within the budget, since RDP composes by addition and each covered
        record is dominated by the candidate.  False when even the record does not
        fit, or when a record other than a DP-SGD step was ever recorded (the RDP
        check is then off, :class:`RdpCredit`): the PLD checks decide.
        """
        limit = self.budget[0] * (1.0 - CERTIFICATE_MARGIN)
        k0, eps0 = self.rdp.fits(entry, limit)
        if k0 == 0:
            return False
        best = (entry, k0, eps0)
        if self._moved(entry):
            want = min(k0, 1024 * entry.count)
            for slack in (WIDE_SLACK, LOOKAHEAD_SLACK):
                one = _candidate(entry, slack)
                k, eps = self.rdp.fits(Entry(one.mechanism, entry.count, one.step), limit)
                if k >= want:
                    best = (one, k, eps)
                    break
        one, k, eps = best
        self.credit = _Credit(
            one.mechanism,
            one.step,
            k,
            eps,
            self.records.version,
            self.records.route(entry) == "online",
            by_rdp=True,
        )
        return True

    # ------------------------------------------------------------ exact check
    def _bound_with(self, entry: Entry) -> float:
        # the composition the queries answer with (full-batch Gaussians folded)
        mech = self.records.composition(entry)
        return float(mech.epsilon(self.budget[1], tol=self.tol))

    def _admit_exact(self, entry: Entry) -> None:
        """Raise if recording ``entry`` would exceed the budget (exact composition).

        Accepting grants a credit.  A record that repeats the last one recorded (the
        schedule is not moving) is checked for ``count`` copies and, when they fit,
        certified for the largest number of copies that fits
        (:func:`_largest_count`): a long run of identical steps costs O(log steps)
        compositions in all, and the step after the certified ones is refused by the
        same check as before.  Otherwise the accountant checks ``ledger + k`` records
        with ``k >= count`` growing geometrically while checks succeed (and shrinking
        when one fails).
        """
        budget_eps, budget_delta = self.budget
        credit, count = self.credit, entry.count
        entries = self.records.entries
        if entries and same(entries[-1].mechanism, entry.mechanism):
            base = sum(e.count for e in entries)
            k, eps = _largest_count(
                lambda n: self._bound_with(Entry(entry.mechanism, n, entry.step)),
                count,
                budget_eps,
                base,
            )
            if k:
                self._grant(Entry(entry.mechanism, k, entry.step), eps)
                return
            self.lookahead = 1
            spent = self.spent(budget_delta)
            why = f"(spent so far: {spent:.6g})"
            raise _refusal(entry, eps, self.budget, f"epsilon to {eps:.6g}", why)
        k = max(count, self.lookahead)
        # a DP-SGD step whose sigma or q changed: certify steps dominated by it loosened
        # by LOOKAHEAD_SLACK first (as the incremental check does), so a slowly changing
        # schedule is not checked at every step
        loosen = (
            entry.step is not None
            and credit is not None
            and not same(credit.mechanism, entry.mechanism)
            and credit.step is not None
        )
        eps = math.inf
        for slack in (LOOKAHEAD_SLACK, 0.0) if loosen else (0.0,):
            one = _candidate(entry, slack)
            while True:
                candidate = Entry(one.mechanism, k, one.step)
                eps = self._bound_with(candidate)
                if eps <= budget_eps:
                    self._grant(candidate, eps)
                    return
                if k == count:
                    break
                k = max(count, k // 4)
                self.lookahead = max(1, k)
        self.lookahead = 1
        spent = self.spent(budget_delta) if self.records.entries else 0.0
        why = f"(spent so far: {spent:.6g})"
        raise _refusal(entry, eps, self.budget, f"epsilon to {eps:.6g}", why)

    def _grant(self, candidate: Entry, eps: float, online: bool = False) -> None:
        self.credit = _Credit(
            candidate.mechanism,
            candidate.step,
            candidate.count,
            eps,
            self.records.version,
            online,
        )
        self.lookahead = min(2 * candidate.count, MAX_COVER)

    # ------------------------------------------------------ incremental check
    def _admit_incremental(self, entry: Entry) -> None:
        """Filter check decided on the queries' own answer, at about one step's cost.

        The filter and the queries share one composed history
        (:class:`~dpacct.accountant.ledger.history.BudgetHistory`).  A record is
        refused exactly when the answer :meth:`PrivacyAccountant.epsilon` would give
        with it recorded passes the budget: that answer is computed by folding the
        record into the history as recording it does (:meth:`BudgetHistory.trial`,
        rolled back on refusal), never by another route.

        Most records skip that fold: an accepted look-ahead certifies ``k >= count``
        future records, each dominated by a candidate (the record itself, or --
        when the schedule moved -- the record loosened by ``WIDE_SLACK``, else by
        ``LOOKAHEAD_SLACK``, else not: smaller sigma, larger q; the subsampled
        Gaussian's profile is monotone in both, see
        :mod:`dpacct.accountant.pld.schedule`), with ``k`` growing geometrically while
        look-aheads pass.  A look-ahead is one hypothetical query on the kept loss grid
        (none when the steps do not fit it: nothing is copied), and it certifies only
        when its epsilon is below the budget by the relative margin
        ``CERTIFICATE_MARGIN``, which covers the round-off between composing the
        candidates at once and folding the dominated records one block at a time.
        """
        budget_eps = self.budget[0]
        count = entry.count
        history = self.history.now()
        # a DP-SGD step that is not the certified one (the schedule moved): certify
        # steps dominated by it loosened first, so a slowly moving schedule is covered
        slacks = (WIDE_SLACK, LOOKAHEAD_SLACK, 0.0) if self._moved(entry) else (0.0,)
        ones = [_candidate(entry, slack) for slack in slacks]
        limit = budget_eps * (1.0 - CERTIFICATE_MARGIN)
        k = max(count, self.lookahead)
        while k > count:
            for one in ones:
                candidate = Entry(one.mechanism, k, one.step)
                eps = history.epsilon_with([candidate], fit_only=True)
                if eps is not None and eps <= limit:
                    self._grant(candidate, eps, online=True)
                    return
            k = max(count, k // 4)
        self.lookahead = 1
        self.credit = None
        eps = self.history.trial(entry)  # the answer with the record recorded
        if eps <= budget_eps:
            self.lookahead = 4
            return
        spent = self.history.epsilon()
        why = f"(spent so far: {spent:.6g})"
        raise _refusal(entry, eps, self.budget, f"epsilon to {eps:.6g}", why)


def _rdp_epsilon(rdp: float, alpha: float, delta: float) -> float:
    """Canonne, Kamath & Steinke 2020, Proposition 12, at one order."""
    return rdp + math.log1p(-1.0 / alpha) - (math.log(delta) + math.log(alpha)) / (alpha - 1.0)


class RenyiFilter:
    """The fully adaptive privacy filter (``adaptive=True``): a Renyi filter.

    Rests on the fully adaptive composition theorem for Renyi DP (Feldman & Zrnic 2021,
    "Individual privacy accounting via a Renyi filter", NeurIPS).  O(1) per record.

    Parameters
    ----------
    budget : (float, float)
        ``(budget_epsilon, budget_delta)``.
    order : float or None
        The Renyi order; None: chosen at the first record (:meth:`_choose_order`).
    """

    def __init__(self, budget: tuple[float, float], order: float | None) -> None:
        self.budget = budget
        self.order = order
        self.spent = 0.0
        #: float additions made to ``spent``: the sum's round-off bound grows with them
        self.adds = 0
        self._cache: dict[Any, float] = {}

    def admit(self, entry: Entry) -> None:
        """Raise :class:`BudgetExceededError` if the summed RDP would cross the budget.

        The running sum is a float: after ``n`` additions of non-negative terms it is at
        most ``(n - 1) u`` relatively below the exact sum (Higham 2002, "Accuracy and
        Stability of Numerical Algorithms", section 4.2, with ``u = 2**-53``), so it is
        raised by that much (and the product ``count * rdp`` by one more rounding) before
        it is compared; the budget's own few roundings are taken off the limit.
        """
        budget_delta = self.budget[1]
        if self.order is None:
            self.order = self._choose_order(entry.mechanism)
        total = self.spent + entry.count * self.rdp_at(entry.mechanism)
        limit = self._safe_rdp_budget(self.order)
        if total * (1.0 + (self.adds + 3) * 2.0**-52) <= limit:
            return
        eps = float(_rdp_epsilon(total, self.order, budget_delta))
        detail = (
            f"the summed Renyi DP at order {self.order:g} to {total:.6g} > {limit:.6g}, "
            f"i.e. epsilon {eps:.6g}"
        )
        raise _refusal(entry, eps, self.budget, detail, "(adaptive Renyi filter)")

    def charge(self, entry: Entry) -> None:
        """Add the record's RDP at the filter's order to the running sum."""
        self.spent += entry.count * self.rdp_at(entry.mechanism)
        self.adds += 1

    restore = charge

    def options(self) -> dict[str, Any]:
        """``adaptive`` and the fixed order."""
        return {"adaptive": True, "adaptive_order": self.order}

    def rdp_at(self, mechanism: Mechanism) -> float:
        """RDP of ``mechanism`` at the filter's order (cached)."""
        k = key(mechanism)
        value = self._cache.get(k)
        if value is None:
            if not mechanism.has_rdp:
                raise ValueError(
                    f"adaptive=True accounts by Renyi DP, and {mechanism!r} has no RDP curve "
                    "(nothing was recorded)"
                )
            value = float(np.asarray(mechanism.rdp(self.order), dtype=float))
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[k] = value
        return value

    def _rdp_budget(self, alpha: np.ndarray | float) -> np.ndarray | float:
        """RDP budget ``B`` at ``alpha`` whose conversion is the (epsilon, delta) budget.

        Inverts Canonne, Kamath & Steinke 2020, Proposition 12:
        ``eps = B + log(1 - 1/alpha) - (log delta + log alpha) / (alpha - 1)``.
        """
        eps, delta = self.budget
        a = np.asarray(alpha, dtype=float)
        return eps - np.log1p(-1.0 / a) + (math.log(delta) + np.log(a)) / (a - 1.0)

    def _safe_rdp_budget(self, alpha: float) -> float:
        """:meth:`_rdp_budget` at one order, lowered by a bound on its float round-off.

        Its three terms are each within a few ulps; ``16 u`` of their summed magnitudes
        covers them and the sum's two roundings.
        """
        eps, delta = self.budget
        terms = (eps, math.log1p(-1.0 / alpha), (math.log(delta) + math.log(alpha)) / (alpha - 1.0))
        return float(self._rdp_budget(alpha)) - 16 * 2.0**-53 * math.fsum(abs(t) for t in terms)

    def _choose_order(self, mechanism: Mechanism) -> float:
        """The order at which the most copies of the first record fit the budget.

        Chosen from the first record's parameters, which are fixed before anything is
        released, so the order is data-independent as the Renyi filter requires.
        """
        if not mechanism.has_rdp:
            raise ValueError(
                f"adaptive=True accounts by Renyi DP, and {mechanism!r} has no RDP curve "
                "(nothing was recorded)"
            )
        rho = np.asarray(mechanism.rdp(ADAPTIVE_ORDERS), dtype=float)
        budget = np.asarray(self._rdp_budget(ADAPTIVE_ORDERS), dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            fits = np.where((budget > 0) & (rho > 0), budget / rho, -np.inf)
            fits = np.where((budget > 0) & (rho == 0), np.inf, fits)
        return float(ADAPTIVE_ORDERS[int(np.argmax(fits))])
