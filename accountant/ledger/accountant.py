"""The online privacy accountant: a ledger that a training loop feeds.

:class:`PrivacyAccountant` records what was run -- DP-SGD steps through :meth:`step`,
any mechanism through :meth:`record` -- and answers, at any moment, the epsilon spent
so far.  Identical consecutive entries merge into one entry with a count, so a million
steps at one noise multiplier are a single ``(mechanism, 1_000_000)`` entry, and a query
costs what composing a handful of mechanisms costs, not a loop over steps.

With a declared budget the accountant is a *privacy filter*: a step or record that
would take epsilon (at the budget's delta) above the budget raises
:class:`BudgetExceededError` and leaves the ledger unchanged.  To keep a training loop
fast, an accepted check certifies the budget for a geometrically growing number of
further identical steps ahead (one accountant evaluation covers many steps: adding
mechanisms never lowers epsilon, so if ``ledger + k steps`` fits, every prefix fits).

Training loops whose noise multiplier or sample rate changes at every step (noise
schedulers, batch-size warm-up) are accounted through :mod:`dpacct.accountant.pld.schedule`:
beyond ``EXACT_PHASES`` distinct ``(sigma, q)`` phases every step is rounded to a
dominating cell of a fine geometric grid (``grid``, 0.1 % by default) for upper bounds
and to a dominated cell for lower bounds, so a query costs what the cells cost.  The
filter then keeps the composition of the history it has already checked and only
adds what is new: while every record is a DP-SGD step, as the spectra of its grid
cells on one shared loss grid (:class:`~dpacct.accountant.pld.schedule.IncrementalEpsilon`:
adding steps multiplies spectra, a check is one inverse FFT, every aliasing and
round-off error bounded and added); otherwise as composed PLDs, convolving only the
new block.  Checking a step costs about what adding it costs, never a recomposition
of the whole history, and the filter decides on the very answer :meth:`epsilon` gives
(a look-ahead certifies many steps far from the budget; near it, each step is folded
and the answer read, rolled back on refusal).

Two kinds of filter, by what the training loop may do:

* ``adaptive=False`` (default): the sequence of mechanisms must not depend on the
  mechanisms' outputs -- a schedule fixed in advance, such as Opacus' ``StepNoise`` or
  ``ExponentialNoise`` driven by the step count, or a batch-size warm-up.  The filter
  stops a *fixed* sequence at a data-independent point, so the PLD bound of the
  recorded prefix is a valid (epsilon, delta) guarantee.  PLD accounting has no fully
  adaptive composition theorem in general, so this mode claims none.
* ``adaptive=True``: the next ``(sigma, q)`` may depend on everything released so far.
  The filter then rests on the fully adaptive composition theorem for Renyi DP
  (Feldman & Zrnic 2021, "Individual privacy accounting via a Renyi filter",
  NeurIPS): for one order ``alpha`` fixed before the run and a budget ``B``, an
  adaptively chosen sequence of mechanisms whose
  *summed* RDP at ``alpha`` never exceeds ``B`` is ``(alpha, B)``-RDP as a whole, even
  though each term is chosen after seeing the previous outputs.  ``B`` is set so that
  ``(alpha, B)``-RDP converts to the budget ``(budget_epsilon, budget_delta)`` by
  Canonne, Kamath & Steinke 2020, Proposition 12 (Balle et al. 2020, Theorem 21):
  ``eps = B + log(1 - 1/alpha) - (log delta + log alpha) / (alpha - 1)``.  A step is
  refused when the summed RDP would cross ``B``.  ``adaptive="renyi_orders"`` tracks
  many orders at once (a mixture of the orders' supermartingales, weights fixed at
  the first record so that it never admits fewer copies of the first record than
  ``True``; ``"renyi_orders_wide"`` spreads more weight, for schedules that move),
  and ``adaptive="gdp"`` is the Gaussian-DP filter of Smith & Thakurta 2022 for
  full-batch Gaussian records (a subsampled step is not Gaussian-DP,
  so it refuses them); see :mod:`~dpacct.accountant.ledger.adaptive_filters`.

The ledger saves to and loads from JSON (:meth:`~PrivacyAccountant.save`,
:meth:`~PrivacyAccountant.load`): the write is atomic (temporary file in the same
directory, ``fsync``, ``os.replace``), the file carries a schema version and a SHA-256
checksum of its canonical content -- or, with a secret key (``key=`` or the environment
variable ``DPACCT_LEDGER_KEY``), an HMAC-SHA256 signature that nobody without the key
can forge -- and loading rejects corrupt, truncated, edited or wrongly signed files
with a :class:`LedgerFileError`.  The format lives in
:mod:`dpacct.accountant.ledger.ledger_file`.  Mechanisms are written through the explicit
registry of :mod:`dpacct.accountant.serialization`; nothing is pickled.
"""

from __future__ import annotations

import math

from ..bracket import Bracket
from ..families.gaussian import GaussianMechanism
from ..mechanism import Mechanism
from ..pld.schedule import DEFAULT_GRID, _check_grid
from ..transformers.subsample import PoissonSubsampledMechanism
from ..validation import (
    check_count,
    check_delta,
    check_epsilon,
    check_positive,
    check_sample_rate,
    check_tol,
    show_value,
)
from .adaptive_filters import GDPFilter, RenyiOrdersFilter, RenyiOrdersWideFilter
from .filters import Filter, PLDFilter, RenyiFilter
from .history import BudgetHistory
from .ledger_mechanism import LedgerMechanism
from .records import Entry, Records, Step
from .saving import LedgerFileMethods

__all__ = ["PrivacyAccountant"]

#: the fully adaptive filters by name (``adaptive=True`` is ``"renyi"``)
ADAPTIVE_FILTERS = frozenset({"renyi", "renyi_orders", "renyi_orders_wide", "gdp"})


class PrivacyAccountant(LedgerFileMethods):
    """A ledger of the mechanisms a training job ran, answering the epsilon spent so far.

    Parameters
    ----------
    budget_epsilon : float, optional
        With ``budget_delta``: a privacy filter that refuses whatever would take
        epsilon at ``budget_delta`` above ``budget_epsilon`` (>= 0).
    budget_delta : float, optional
        The delta of the budget, in (0, 1).  Both or neither: without a budget the
        accountant only records and answers queries.
    tol : float, optional
        Accuracy passed to the engine's ``epsilon(delta, tol=)``; None (default): the
        engine's default.
    grid : float, default 2**-10
        Relative width of the rounding cells for DP-SGD steps, in (0, 0.5); the
        default is about 0.1 %.  Rounding applies only once the ledger holds more than
        ``EXACT_PHASES`` (16) distinct mechanisms -- a noise or batch-size schedule
        that changes at every step; below that everything is composed exactly and
        ``grid`` has no effect.  Beyond it, DP-SGD steps ``(sigma, q)`` are rounded
        to a cell with smaller sigma and larger q for upper bounds (a dominating step,
        so :meth:`epsilon` and :meth:`delta` stay sound) and with larger sigma and
        smaller q for the lower end of :meth:`epsilon_bounds`
        (:func:`~dpacct.accountant.pld.schedule.round_step`).  Records that are not
        DP-SGD steps are never rounded, values already on the grid are not moved, a
        coordinate with at most 64 distinct values (a constant q) keeps them, and a
        ledger of DP-SGD steps only with at most 1024 distinct steps is answered
        unrounded.  A coarser grid is faster and widens the bracket (about four
        times ``grid``, relative); a finer one is slower and tighter.
    adaptive : bool, default False
        Which guarantee the privacy filter gives; needs a budget.  ``False``: the
        sequence of mechanisms must be fixed in advance (it may change over time, but
        not depend on the mechanisms' outputs); the filter refuses the first record
        that would take the ledger's epsilon bound at ``budget_delta`` (the engine's
        tightest, usually a privacy loss distribution) above ``budget_epsilon``, and
        the recorded prefix is ``(budget_epsilon, budget_delta)``-DP.  ``True``: each
        ``(sigma, q)`` or mechanism may be chosen after seeing everything released so
        far; the filter is a Renyi filter (Feldman & Zrnic 2021) that refuses a
        record when the summed Renyi DP at one order ``adaptive_order`` would exceed
        the Renyi budget that converts to ``(budget_epsilon, budget_delta)``, and
        the whole adaptive run is ``(budget_epsilon, budget_delta)``-DP.  The Renyi
        filter costs O(1) per record but is looser, so it admits fewer steps; every
        record needs a Renyi curve.  ``"renyi"`` is ``True``.  ``"renyi_orders"``:
        fully adaptive too, tracking the summed Renyi DP at orders within 13 % of the
        one ``True`` would fix and admitting while a mixture of them (weights fixed at
        the first record) converts to the budget
        (:class:`~dpacct.accountant.ledger.adaptive_filters.RenyiOrdersFilter`): never
        fewer steps than ``True`` on a schedule that repeats the first record, a few
        more when it moves.  ``"renyi_orders_wide"``: every order of the grid with a
        quarter of the weight spread (up to 20 times the steps of ``True`` at epsilon
        3 when the schedule moves far from the first record, 1-6 % fewer on a
        constant one).  ``"gdp"``:
        fully adaptive, full-batch Gaussian records only (Smith & Thakurta 2022):
        ``sum mu_t^2`` up to the ``mu`` of the budget, the parameters of non-adaptive
        composition (:class:`~dpacct.accountant.ledger.adaptive_filters.GDPFilter`).  The queries
        (:meth:`epsilon`, ...) compose the recorded mechanisms as a fixed sequence in
        every mode; for a run whose choices were adaptive, the guarantee to quote is
        the budget.
    adaptive_order : float, optional
        The Renyi order of the adaptive filter, finite and > 1; only with
        ``adaptive=True`` (or ``"renyi"``; with ``"renyi_orders"``: the order holding
        most weight; ``"renyi_orders_wide"``: the same, moved to the nearest grid
        order).  None (default): chosen at the first record, from its parameters
        alone (fixed before anything is released, so data-independent), as the order
        on a grid from about 1.05 to 512 at which the most copies of the first
        record fit the budget.  It cannot change afterwards.
    progress : bool, default True
        Show a ``tqdm`` progress bar (on stderr, "composing N phases (upper bound)")
        while a query or filter check composes a rounded many-phase schedule and the
        work lasts more than about two seconds; ``False`` hides it.  It never
        changes a result.

    Examples
    --------
    >>> acct = PrivacyAccountant()
    >>> acct.step(noise_multiplier=1.1, sample_rate=256 / 60_000, count=14_063)
    >>> eps = acct.epsilon(delta=1e-5)
    >>> bool(2.0 < eps < 2.6)
    True
    >>> for _ in range(1000):          # one call per training step: still one entry
    ...     acct.step(noise_multiplier=1.1, sample_rate=256 / 60_000)
    >>> acct.steps, len(acct.entries)
    (15063, 1)

    A privacy filter:

    >>> filt = PrivacyAccountant(budget_epsilon=1.0, budget_delta=1e-5)
    >>> filt.step(noise_multiplier=10.0, sample_rate=1.0, count=7)
    >>> filt.step(noise_multiplier=10.0, sample_rate=1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dpacct.accountant.ledger.BudgetExceededError: budget exceeded: ...
    >>> filt.steps
    7

    The fully adaptive filter spends the same budget at a single Renyi order (here
    about 18, where a Gaussian step at sigma = 10 costs ``alpha / 200``), and admits
    one step fewer:

    >>> adaptive = PrivacyAccountant(budget_epsilon=1.0, budget_delta=1e-5, adaptive=True)
    >>> adaptive.step(noise_multiplier=10.0, sample_rate=1.0, count=6)
    >>> round(adaptive.adaptive_order, 2)
    17.96
    >>> adaptive.step(noise_multiplier=10.0, sample_rate=1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dpacct.accountant.ledger.BudgetExceededError: budget exceeded: ...
    """

    def __init__(
        self,
        *,
        budget_epsilon: float | None = None,
        budget_delta: float | None = None,
        tol: float | None = None,
        grid: float = DEFAULT_GRID,
        adaptive: bool | str = False,
        adaptive_order: float | None = None,
        progress: bool = True,
    ) -> None:
        if (budget_epsilon is None) != (budget_delta is None):
            raise ValueError(
                "a budget needs both budget_epsilon and budget_delta "
                f"(got budget_epsilon={show_value(budget_epsilon)}, "
                f"budget_delta={show_value(budget_delta)})"
            )
        self._budget: tuple[float, float] | None = None
        if budget_epsilon is not None:
            self._budget = (
                check_epsilon(budget_epsilon, "budget_epsilon"),
                check_delta(budget_delta, "budget_delta"),
            )
        if tol is not None:
            tol = check_tol(tol)
        grid = _check_grid(grid)
        if isinstance(adaptive, str):
            if adaptive not in ADAPTIVE_FILTERS:
                raise ValueError(
                    f"adaptive must be False, True or one of {sorted(ADAPTIVE_FILTERS)}, got "
                    f"{adaptive!r}"
                )
        elif not isinstance(adaptive, bool):
            raise TypeError(
                f"adaptive must be False, True or one of {sorted(ADAPTIVE_FILTERS)}, got "
                f"{show_value(adaptive)}"
            )
        kind = "renyi" if adaptive is True else (adaptive or None)
        if not isinstance(progress, bool):
            raise TypeError(f"progress must be True or False, got {show_value(progress)}")
        if kind is not None and self._budget is None:
            raise ValueError(
                f"adaptive={adaptive!r} is a property of a privacy filter: give "
                "budget_epsilon and budget_delta too"
            )
        if adaptive_order is not None:
            if kind not in ("renyi", "renyi_orders", "renyi_orders_wide"):
                raise ValueError(
                    "adaptive_order is used only with adaptive=True, 'renyi', 'renyi_orders' "
                    "or 'renyi_orders_wide'"
                )
            adaptive_order = check_positive("adaptive_order", adaptive_order)
            if not 1.0 < adaptive_order < math.inf:
                raise ValueError(
                    "adaptive_order must be a finite Renyi order > 1, got "
                    f"{show_value(adaptive_order)}"
                )
        self._tol = tol
        self._grid = grid
        self._progress = progress
        self._records = Records()
        self._filter: Filter | None = None
        self._history: BudgetHistory | None = None
        if self._budget is not None:
            self._history = BudgetHistory(self._records, self._budget, tol, grid, progress)
            if kind == "renyi":
                self._filter = RenyiFilter(self._budget, adaptive_order)
            elif kind == "renyi_orders":
                self._filter = RenyiOrdersFilter(self._budget, adaptive_order)
            elif kind == "renyi_orders_wide":
                self._filter = RenyiOrdersWideFilter(self._budget, adaptive_order)
            elif kind == "gdp":
                self._filter = GDPFilter(self._budget)
            else:
                self._filter = PLDFilter(self._records, self._history, tol, self.epsilon)
        filt = self._filter
        #: the records as a mechanism: every query asks it (and it asks the router)
        self._ledger = LedgerMechanism(
            self._records,
            tol=tol,
            grid=grid,
            progress=progress,
            budget_history=self._history,
            certified=filt.certified if isinstance(filt, PLDFilter) else None,
        )
        self._last_step: tuple[float, float, Mechanism, Step] | None = None

    # ---------------------------------------------------------------- properties
    @property
    def entries(self) -> tuple[tuple[Mechanism, int], ...]:
        """The ledger: ``(mechanism, count)`` pairs in the order they were recorded."""
        return tuple((e.mechanism, e.count) for e in self._records.entries)

    @property
    def steps(self) -> int:
        """Total number of records (the sum of the counts)."""
        return sum(e.count for e in self._records.entries)

    @property
    def budget(self) -> tuple[float, float] | None:
        """``(budget_epsilon, budget_delta)`` of a privacy filter, else None."""
        return self._budget

    @property
    def tol(self) -> float | None:
        """Accuracy passed to the engine (None: the engine's default)."""
        return self._tol

    @property
    def adaptive(self) -> bool:
        """True for a fully adaptive filter (any of them), see the module docstring."""
        return isinstance(self._filter, RenyiFilter | RenyiOrdersFilter | GDPFilter)

    @property
    def adaptive_filter(self) -> str | None:
        """The fully adaptive filter's name, or None.

        One of ``"renyi"``, ``"renyi_orders"``, ``"renyi_orders_wide"``, ``"gdp"``.
        """
        if isinstance(self._filter, RenyiFilter):
            return "renyi"
        if isinstance(self._filter, RenyiOrdersFilter | GDPFilter):
            return self._filter.name
        return None

    @property
    def grid(self) -> float:
        """Relative width of the rounding cells for DP-SGD schedules."""
        return self._grid

    @property
    def adaptive_order(self) -> float | None:
        """The adaptive filter's Renyi order (fixed at the first record), else None.

        For ``adaptive="renyi_orders"``: the order holding most weight.
        """
        if isinstance(self._filter, RenyiFilter | RenyiOrdersFilter):
            return self._filter.order
        return None

    @property
    def evaluations(self) -> int:
        """Number of PLD convolutions the incremental filter has made (a cost counter)."""
        return 0 if self._history is None else self._history.convolutions

    @property
    def route(self) -> str:
        """How the queries answer now: the router's choice from the records'
        classification (:func:`~dpacct.accountant.routes.ledger_route`).

        ``"exact"``: at most ``EXACT_PHASES`` (16) distinct records, answered as their
        composition, a mechanism like any other -- however many steps they count, so
        a ledger of one repeated DP-SGD step prints what its composition prints.
        Full-batch Gaussian records (``sample_rate=1.0``, or a recorded Gaussian
        mechanism) count as one: they compose to exactly one Gaussian, ``mu^2`` the
        sum of theirs (Dong, Roth & Su 2022, Corollary 3.3), which the composition
        holds in their place, so noisy gradient descent with any noise schedule is
        answered in closed form.
        ``"online"``: more, each with a privacy loss distribution: epsilon is read off
        the composed history (incremental; the fixed-schedule filter decides on the
        same answer), the other questions off the schedule rounded to the grid.
        ``"rounded"``: more, one without: the DP-SGD steps rounded to the grid,
        composed with the other records by the engine.

        Examples
        --------
        >>> acct = PrivacyAccountant()
        >>> acct.step(noise_multiplier=1.0, sample_rate=0.01, count=10_000)
        >>> acct.route                      # one repeated step: its composition
        'exact'
        >>> for t in range(20):             # a noise schedule: a new phase per step
        ...     acct.step(noise_multiplier=1.0 + t / 100, sample_rate=0.01)
        >>> acct.route
        'online'
        >>> gd = PrivacyAccountant()
        >>> for t in range(300):           # full batch: one Gaussian, whatever the sigmas
        ...     gd.step(noise_multiplier=9.0 * 0.998**t, sample_rate=1.0)
        >>> gd.route, round(gd.epsilon(1e-5), 6)
        ('exact', 14.386364)
        """
        return self._records.route()

    def __repr__(self) -> str:
        budget = "" if self._budget is None else f", budget={self._budget}"
        return f"PrivacyAccountant(entries={len(self._records)}, steps={self.steps}{budget})"

    # ------------------------------------------------------------------ feeding
    def step(
        self, *, noise_multiplier: float, sample_rate: float | None = None, count: int = 1
    ) -> None:
        """Record ``count`` DP-SGD steps: Poisson-subsampled Gaussian mechanisms.

        Parameters
        ----------
        noise_multiplier : float
            Noise standard deviation over the clipping norm, > 0.
        sample_rate : float
            Poisson sampling rate of the step, in (0, 1] (batch size over dataset size).
            Required: a full-batch step (noisy gradient descent) says ``sample_rate=1.0``,
            so that a forgotten rate is never read as a full batch in silence.
        count : int
            Number of identical steps, >= 1.

        Raises
        ------
        TypeError
            ``sample_rate`` not given.
        BudgetExceededError
            In filter mode, if the steps would exceed the budget (nothing recorded).

        Examples
        --------
        >>> acct = PrivacyAccountant()
        >>> acct.step(noise_multiplier=1.1, sample_rate=0.01, count=1000)
        >>> acct.step(noise_multiplier=10.0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: PrivacyAccountant.step() needs sample_rate, ... full-batch steps
        """
        if sample_rate is None:
            raise TypeError(
                "PrivacyAccountant.step() needs sample_rate, the Poisson sampling rate in "
                "(0, 1] (batch size over dataset size); pass sample_rate=1.0 for full-batch "
                "steps"
            )
        last = self._last_step
        if (
            last is not None
            and type(noise_multiplier) is float
            and type(sample_rate) is float
            and last[0] == noise_multiplier
            and last[1] == sample_rate
        ):
            mech, step = last[2], last[3]
        else:
            sigma = check_positive("noise_multiplier", noise_multiplier)
            q = check_sample_rate(sample_rate)
            base = GaussianMechanism(sigma=sigma)
            # what poisson_subsample(base, q) returns, q already checked (a decaying
            # loop makes one per step; issue 37, session 34)
            mech = base if q == 1.0 else PoissonSubsampledMechanism(base=base, sample_rate=q)
            # what classify() finds for a Gaussian that stores its sigma, without asking
            step = Step(sigma, sigma, q)
            self._last_step = (sigma, q, mech, step)
        self._record(Entry(mech, check_count(count, "count"), step))

    def record(self, mechanism: Mechanism, count: int = 1) -> None:
        """Record ``count`` runs of ``mechanism`` (any :class:`Mechanism`).

        Parameters
        ----------
        mechanism : Mechanism
            What ran, under the same neighbouring relation as the records already in
            the ledger; with ``adaptive=True`` it needs a Renyi curve.
        count : int, default 1
            Number of identical runs, >= 1.

        Raises
        ------
        TypeError
            ``mechanism`` is not a Mechanism or ``count`` is not an integer.
        ValueError
            ``count`` < 1, or ``mechanism`` uses a different neighbouring relation
            from the records already in the ledger.
        BudgetExceededError
            In filter mode, if the record would exceed the budget (nothing recorded).
        """
        if not isinstance(mechanism, Mechanism):
            raise TypeError(f"mechanism must be a Mechanism, got {type(mechanism).__name__}")
        self._record(Entry.of(mechanism, check_count(count, "count")))  # classified once

    def _record(self, entry: Entry) -> None:
        """Record a classified entry: the relation check, the filter, the histories."""
        mechanism = entry.mechanism
        entries = self._records.entries
        if entries and mechanism.neighbouring != entries[0].mechanism.neighbouring:
            raise ValueError(
                f"mechanism is accounted under the {mechanism.neighbouring!r} neighbouring "
                f"relation but this ledger holds {entries[0].mechanism.neighbouring!r} "
                "records; one ledger tracks one relation (nothing was recorded)"
            )
        if self._filter is not None:
            self._filter.admit(entry)
        self._records.append(entry)
        self._ledger.charge(entry)
        if self._filter is not None:
            self._filter.charge(entry)

    # ------------------------------------------------------------------ queries
    @property
    def ledger(self) -> LedgerMechanism:
        """The records as a mechanism
        (:class:`~dpacct.accountant.ledger.ledger_mechanism.LedgerMechanism`).

        Every query of the accountant is this mechanism's, routed by
        :mod:`~dpacct.accountant.routes` like any mechanism's; it also takes ``tol``
        and answers :meth:`~LedgerMechanism.rdp` and :meth:`~LedgerMechanism.tradeoff`.

        Examples
        --------
        >>> acct = PrivacyAccountant()
        >>> acct.step(noise_multiplier=1.0, sample_rate=0.01, count=100)
        >>> acct.ledger.epsilon(1e-5) == acct.epsilon(1e-5)
        True
        """
        return self._ledger

    def mechanism(self) -> Mechanism | None:
        """The composition of everything recorded so far (None when empty)."""
        return self._ledger.composition()

    def epsilon(self, delta: float) -> float:
        """Epsilon spent so far at ``delta``: a sound upper bound (0 for an empty ledger).

        ``delta = 0`` asks for pure DP: the recorded composition's ``pure_epsilon`` (the
        sum of the records', rounded up); a ledger holding a record without one
        (a Gaussian, a DP-SGD step) raises a :class:`ValueError` naming it.

        One route per question, with or without a budget, chosen by the router
        (:func:`~dpacct.accountant.routes.ledger_epsilon`) for :attr:`ledger`.  A ledger
        of more than ``EXACT_PHASES`` (16) distinct records, each with a privacy loss
        distribution, answers from its composed history at ``delta`` (incremental: a
        query costs about one inverse FFT, never a recomposition); at
        ``budget_delta`` that history is the filter's own, and the filter refuses
        exactly the first record whose answer here would pass ``budget_epsilon``, so
        ``epsilon(budget_delta) <= budget_epsilon`` always and a budget never changes
        an answer.  The history rounds a coordinate's values beyond the first 64 it
        sees up to the grid, so the answer can sit a little above the exact
        composition's (0.1 % on a loop with a new random sigma at every step).  Other
        ledgers are composed by the engine, and in filter mode, for ``delta >=
        budget_delta``, the filter's certified bound is used when smaller.

        Parameters
        ----------
        delta : float
            Target delta, in (0, 1).

        Returns
        -------
        float
            Epsilon, >= 0.

        Examples
        --------
        >>> acct = PrivacyAccountant()
        >>> acct.epsilon(1e-5)
        0.0
        >>> acct.step(noise_multiplier=1.0, sample_rate=0.01)
        >>> bool(0 < acct.epsilon(1e-5) < 1)
        True
        """
        return float(self._ledger.epsilon(check_delta(delta, allow_zero=True)))

    def delta(self, epsilon: float) -> float:
        """Delta spent so far at ``epsilon``: a sound upper bound (0 when empty).

        Routed like :meth:`epsilon` (:func:`~dpacct.accountant.routes.ledger_delta`).

        Parameters
        ----------
        epsilon : float
            Target epsilon, >= 0.

        Returns
        -------
        float
            Delta, in [0, 1].
        """
        return float(self._ledger.delta(check_epsilon(epsilon)))

    def epsilon_bounds(self, delta: float, *, width: float | None = None) -> Bracket:
        """``(lower, upper)`` bracket of the true epsilon spent, as the engine gives it.

        Beyond ``EXACT_PHASES`` distinct phases the lower end comes from the schedule
        rounded down (larger sigma, smaller q), certified by its own PLD, and the upper
        end is the answer :meth:`epsilon` gives (the composed history), so the two
        queries agree; neither end is clipped to the other
        (:func:`~dpacct.accountant.routes.ledger_bracket`).

        Parameters
        ----------
        delta : float
            Target delta, in (0, 1).
        width : float, optional
            A bracket width to aim for, relative to the upper end, in (0, 0.5): when
            every step is a DP-SGD step and the bracket is wider, its lower end is
            recomputed on a finer loss step (a few times the cost of the default
            bracket; it stops at the fast path's finest step, and beyond
            ``EXACT_CELLS`` distinct steps the steps' rounding holds the bracket).
            None (default): the bracket as first computed.

        Returns
        -------
        Bracket
            ``(lower, upper)``; ``(0.0, 0.0)`` for an empty ledger.  Its ``bounds`` is
            ``"dominating pair"`` when a recorded mechanism's bracket is of a pair
            that only dominates it (truncated Poisson): then only ``upper`` bounds it.

        Examples
        --------
        >>> acct = PrivacyAccountant(progress=False)
        >>> for t in range(50):
        ...     acct.step(noise_multiplier=1.5 * 0.99**t, sample_rate=0.02)
        >>> lo, hi = acct.epsilon_bounds(1e-5)
        >>> lo2, hi2 = acct.epsilon_bounds(1e-5, width=1e-4)
        >>> bool(lo <= lo2 <= hi2 == hi)
        True
        """
        return self._ledger.epsilon_bounds(delta, width=width)
