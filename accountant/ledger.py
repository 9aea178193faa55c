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
schedulers, batch-size warm-up) are accounted through :mod:`dpacct.accountant.schedule`:
beyond ``EXACT_PHASES`` distinct ``(sigma, q)`` phases every step is rounded to a
dominating cell of a fine geometric grid (``grid``, 0.1 % by default) for upper bounds
and to a dominated cell for lower bounds, so a query costs what the cells cost.  The
filter then keeps the composition of the history it has already checked and only
adds what is new: while every record is a DP-SGD step, as the spectra of its grid
cells on one shared loss grid (:class:`~dpacct.accountant.schedule.IncrementalEpsilon`:
adding steps multiplies spectra, a check is one inverse FFT, every aliasing and
round-off error bounded and added); otherwise as composed PLDs, convolving only the
new block.  Checking a step costs about what adding it costs, never a recomposition
of the whole history.

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
  refused when the summed RDP would cross ``B``.  (Gaussian-DP filters are the other
  proven fully adaptive route -- Smith & Thakurta 2022; Koskela, Tobaben & Honkela
  2022 -- but a subsampled step is not exactly Gaussian-DP, so they are not used.)

The ledger saves to and loads from JSON (:meth:`~PrivacyAccountant.save`,
:meth:`~PrivacyAccountant.load`): the write is atomic (temporary file in the same
directory, ``fsync``, ``os.replace``), the file carries a schema version and a SHA-256
checksum of its canonical content -- or, with a secret key (``key=`` or the environment
variable ``DPACCT_LEDGER_KEY``), an HMAC-SHA256 signature that nobody without the key
can forge -- and loading rejects corrupt, truncated, edited or wrongly signed files
with a :class:`LedgerFileError`.  The format lives in
:mod:`dpacct.accountant.ledger_file`.  Mechanisms are written through the explicit
registry of :mod:`dpacct.accountant.serialization`; nothing is pickled.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .compose import ComposedMechanism, compose
from .gaussian import GaussianMechanism
from .ledger_file import (
    FORMAT,
    SCHEMA_VERSION,
    LedgerFileError,
    parse_content,
    read_json,
    seal,
    unseal,
    write_atomic,
)
from .mechanism import Mechanism, PLDSettings
from .pld import GridPLD
from .schedule import (
    DEFAULT_GRID,
    EXACT_CELLS,
    EXACT_VALUES,
    IncrementalEpsilon,
    _check_grid,
    _lower_step,
    _scaled_settings,
    fast_epsilon_bounds,
    round_schedule,
    schedule_mechanism,
)
from .serialization import to_dict
from .subsample import PoissonSubsampledMechanism, poisson_subsample
from .validation import check_count, check_delta, check_epsilon, check_positive, check_sample_rate

__all__ = [
    "FORMAT",
    "SCHEMA_VERSION",
    "BudgetExceededError",
    "LedgerFileError",
    "PrivacyAccountant",
]

#: up to this many distinct mechanisms the ledger composes them exactly (as before);
#: beyond, DP-SGD steps are rounded to the grid and the filter becomes incremental
EXACT_PHASES = 16
#: the incremental filter's look-ahead certifies future steps dominated by the current
#: one loosened by this relative amount (smaller sigma, larger q): a slowly changing
#: schedule is covered by one certificate for many steps
LOOKAHEAD_SLACK = 2.0**-6
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


@dataclass
class _Credit:
    """Filter certificate: ``remaining`` more records of ``mechanism`` fit the budget.

    ``epsilon`` is the accountant's bound for the ledger with all of them recorded, an
    upper bound (at the budget's delta) for every ledger state up to there.
    """

    mechanism: Mechanism
    remaining: int
    epsilon: float
    version: int


class PrivacyAccountant:
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
        (:func:`~dpacct.accountant.schedule.round_step`).  Records that are not
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
        record needs a Renyi curve.  The queries (:meth:`epsilon`, ...) compose the
        recorded mechanisms as a fixed sequence in either mode; for a run whose
        choices were adaptive, the guarantee to quote is the budget.
    adaptive_order : float, optional
        The Renyi order of the adaptive filter, finite and > 1; only with
        ``adaptive=True``.  None (default): chosen at the first record, from its
        parameters alone (fixed before anything is released, so data-independent),
        as the order on a grid from about 1.05 to 512 at which the most copies of the
        first record fit the budget.  It cannot change afterwards.
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
    >>> filt.step(noise_multiplier=10.0, count=7)
    >>> filt.step(noise_multiplier=10.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dpacct.accountant.ledger.BudgetExceededError: budget exceeded: ...
    >>> filt.steps
    7

    The fully adaptive filter spends the same budget at a single Renyi order (here
    about 18, where a Gaussian step at sigma = 10 costs ``alpha / 200``), and admits
    one step fewer:

    >>> adaptive = PrivacyAccountant(budget_epsilon=1.0, budget_delta=1e-5, adaptive=True)
    >>> adaptive.step(noise_multiplier=10.0, count=6)
    >>> round(adaptive.adaptive_order, 2)
    17.96
    >>> adaptive.step(noise_multiplier=10.0)  # doctest: +ELLIPSIS
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
        adaptive: bool = False,
        adaptive_order: float | None = None,
        progress: bool = True,
    ) -> None:
        if (budget_epsilon is None) != (budget_delta is None):
            raise ValueError(
                "a budget needs both budget_epsilon and budget_delta "
                f"(got budget_epsilon={budget_epsilon!r}, budget_delta={budget_delta!r})"
            )
        self._budget: tuple[float, float] | None = None
        if budget_epsilon is not None:
            self._budget = (
                check_epsilon(budget_epsilon, "budget_epsilon"),
                check_delta(budget_delta, "budget_delta"),
            )
        if tol is not None:
            from .validation import check_tol

            tol = check_tol(tol)
        self._tol = tol
        self._grid = _check_grid(grid)
        if not isinstance(adaptive, bool):
            raise TypeError(f"adaptive must be True or False, got {adaptive!r}")
        if not isinstance(progress, bool):
            raise TypeError(f"progress must be True or False, got {progress!r}")
        if adaptive and self._budget is None:
            raise ValueError(
                "adaptive=True is a property of a privacy filter: give budget_epsilon and "
                "budget_delta too"
            )
        if adaptive_order is not None:
            if not adaptive:
                raise ValueError("adaptive_order is used only with adaptive=True")
            adaptive_order = check_positive("adaptive_order", adaptive_order)
            if not 1.0 < adaptive_order < math.inf:
                raise ValueError(
                    f"adaptive_order must be a finite Renyi order > 1, got {adaptive_order!r}"
                )
        self._adaptive = adaptive
        self._order: float | None = adaptive_order
        self._rdp_spent = 0.0
        self._rdp_cache: dict[Any, float] = {}
        self._progress = progress
        self._distinct: set[Any] = set()
        self._all_pld = True
        self._rounded_cache: dict[bool, tuple[int, Mechanism]] = {}
        self._history: _PLDHistory | _FastHistory | None = None
        self._pending: list[tuple[Mechanism, int]] = []
        self._entries: list[list[Any]] = []  # [mechanism, count]
        self._version = 0
        self._composed: tuple[int, Mechanism | None] = (-1, None)
        self._eps_cache: dict[tuple[int, float], float] = {}
        self._credit: _Credit | None = None
        self._lookahead = 1
        self._last_step: tuple[float, float, Mechanism] | None = None

    # ---------------------------------------------------------------- properties
    @property
    def entries(self) -> tuple[tuple[Mechanism, int], ...]:
        """The ledger: ``(mechanism, count)`` pairs in the order they were recorded."""
        return tuple((m, c) for m, c in self._entries)

    @property
    def steps(self) -> int:
        """Total number of records (the sum of the counts)."""
        return sum(c for _, c in self._entries)

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
        """True for a fully adaptive (Renyi) filter, see the module docstring."""
        return self._adaptive

    @property
    def grid(self) -> float:
        """Relative width of the rounding cells for DP-SGD schedules."""
        return self._grid

    @property
    def adaptive_order(self) -> float | None:
        """The adaptive filter's Renyi order (fixed at the first record), else None."""
        return self._order

    @property
    def evaluations(self) -> int:
        """Number of PLD convolutions the incremental filter has made (a cost counter)."""
        return 0 if self._history is None else self._history.convolutions

    def __repr__(self) -> str:
        budget = "" if self._budget is None else f", budget={self._budget}"
        return f"PrivacyAccountant(entries={len(self._entries)}, steps={self.steps}{budget})"

    # ------------------------------------------------------------------ feeding
    def step(self, *, noise_multiplier: float, sample_rate: float = 1.0, count: int = 1) -> None:
        """Record ``count`` DP-SGD steps: Poisson-subsampled Gaussian mechanisms.

        Parameters
        ----------
        noise_multiplier : float
            Noise standard deviation over the clipping norm, > 0.
        sample_rate : float
            Poisson sampling rate of the step, in (0, 1] (batch size over dataset size).
        count : int
            Number of identical steps, >= 1.

        Raises
        ------
        BudgetExceededError
            In filter mode, if the steps would exceed the budget (nothing recorded).
        """
        last = self._last_step
        if (
            last is not None
            and type(noise_multiplier) is float
            and type(sample_rate) is float
            and last[0] == noise_multiplier
            and last[1] == sample_rate
        ):
            mech = last[2]
        else:
            sigma = check_positive("noise_multiplier", noise_multiplier)
            q = check_sample_rate(sample_rate)
            mech = poisson_subsample(GaussianMechanism(sigma=sigma), q)
            self._last_step = (sigma, q, mech)
        self.record(mech, count)

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
        count = check_count(count, "count")
        if self._entries and mechanism.neighbouring != self._entries[0][0].neighbouring:
            raise ValueError(
                f"mechanism is accounted under the {mechanism.neighbouring!r} neighbouring "
                f"relation but this ledger holds {self._entries[0][0].neighbouring!r} "
                "records; one ledger tracks one relation (nothing was recorded)"
            )
        if self._budget is not None:
            if self._adaptive:
                self._admit_rdp(mechanism, count)
            elif self._many_phases(mechanism) and self._all_pld and _pld_capable(mechanism):
                self._admit_incremental(mechanism, count)
            else:
                self._admit(mechanism, count)
        self._append(mechanism, count)

    def _append(self, mechanism: Mechanism, count: int) -> None:
        if self._entries and _same(self._entries[-1][0], mechanism):
            self._entries[-1][1] += count
        else:
            self._entries.append([mechanism, count])
            self._distinct.add(_key(mechanism))
            self._all_pld = self._all_pld and _pld_capable(mechanism)
        if self._pending and _same(self._pending[-1][0], mechanism):
            self._pending[-1] = (mechanism, self._pending[-1][1] + count)
        else:
            self._pending.append((mechanism, count))
        if self._adaptive:
            self._rdp_spent += count * self._rdp_at(mechanism)
        self._version += 1
        if self._credit is not None:
            if _covers(self._credit.mechanism, mechanism) and self._credit.remaining >= count:
                self._credit.remaining -= count
                self._credit.version = self._version
            else:
                self._credit = None

    # ------------------------------------------------------------------ filter
    def _bound_with(self, mechanism: Mechanism, count: int) -> float:
        budget_delta = self._budget[1]  # type: ignore[index]
        mechs = [m for m, _ in self._entries] + [mechanism]
        counts = [c for _, c in self._entries] + [count]
        return float(compose(mechs, counts).epsilon(budget_delta, tol=self._tol))

    def _admit(self, mechanism: Mechanism, count: int) -> None:
        """Raise if recording ``count`` x ``mechanism`` would exceed the budget.

        Accepting grants a credit: the accountant checks ``ledger + k`` records with
        ``k >= count`` growing geometrically while checks succeed (and shrinking when
        one fails), so a long run of identical steps costs O(log steps) evaluations.
        """
        budget_eps, budget_delta = self._budget  # type: ignore[misc]
        credit = self._credit
        if (
            credit is not None
            and credit.version == self._version
            and _covers(credit.mechanism, mechanism)
            and credit.remaining >= count
        ):
            return
        k = max(count, self._lookahead)
        params = _step_params(mechanism)
        # a DP-SGD step whose sigma or q changed: certify steps dominated by it loosened
        # by LOOKAHEAD_SLACK first (as the incremental filter does), so a slowly changing
        # schedule is not checked at every step
        loosen = (
            params is not None
            and credit is not None
            and not _same(credit.mechanism, mechanism)
            and _step_params(credit.mechanism) is not None
        )
        eps = math.inf
        for slack in (LOOKAHEAD_SLACK, 0.0) if loosen else (0.0,):
            if slack > 0:
                sigma, q = params  # type: ignore[misc]
                candidate = _cell_step(sigma * (1.0 - slack), min(q * (1.0 + slack), 1.0))
            else:
                candidate = mechanism
            while True:
                eps = self._bound_with(candidate, k)
                if eps <= budget_eps:
                    self._credit = _Credit(candidate, k, eps, self._version)
                    self._lookahead = min(2 * k, 1 << 40)
                    return
                if k == count:
                    break
                k = max(count, k // 4)
                self._lookahead = max(1, k)
        self._lookahead = 1
        spent = self.epsilon(budget_delta) if self._entries else 0.0
        raise BudgetExceededError(
            f"budget exceeded: recording {count} x {mechanism!r} would take epsilon to "
            f"{eps:.6g} > budget_epsilon={budget_eps:g} at delta={budget_delta:g} "
            f"(spent so far: {spent:.6g}); the ledger is unchanged",
            epsilon=eps,
            budget_epsilon=budget_eps,
            budget_delta=budget_delta,
        )

    # ------------------------------------------------- incremental (PLD) filter
    def _many_phases(self, extra: Mechanism | None = None) -> bool:
        """True beyond EXACT_PHASES distinct mechanisms (counting ``extra``)."""
        n = len(self._distinct)
        if extra is not None and _key(extra) not in self._distinct:
            n += 1
        return n > EXACT_PHASES

    def _history_now(self) -> _PLDHistory | _FastHistory:
        """The composed PLDs of everything recorded, folding what is pending.

        While every record is a DP-SGD step the history is a :class:`_FastHistory`
        (spectra of the grid cells, one inverse FFT per check); a record of another
        kind, or a composition the fast path cannot certify, moves it for good to a
        :class:`_PLDHistory` that recomposes the entries once.
        """
        if self._history is None:
            if all(_step_params(m) is not None for m, _ in self._entries):
                self._history = _FastHistory(self._budget[1], self._grid, self._budget[0])  # type: ignore[index]
            else:
                self._history = self._pld_history()
        if self._pending:
            if not self._history.fold(self._pending):
                self._history = self._pld_history()
            self._pending = []
        return self._history

    def _pld_history(self) -> _PLDHistory:
        """A PLD history holding every entry recorded so far (the pending ones too)."""
        history = _PLDHistory(self._budget[1], self._tol, self._grid, self._progress)  # type: ignore[index]
        if self._entries:
            history.fold([(m, c) for m, c in self._entries])
        self._pending = []
        return history

    def _admit_incremental(self, mechanism: Mechanism, count: int) -> None:
        """Filter check that costs what the new records cost (many-phase ledgers).

        The accountant keeps the composed pessimistic PLDs (both directions) of the
        history it has checked (:class:`_PLDHistory`; DP-SGD steps rounded up to the
        grid).  A check convolves them with the PLD of the candidate records, never
        recomposing the history.  An accepted check certifies ``k >= count`` future
        records, each dominated by the candidate loosened by ``LOOKAHEAD_SLACK``
        (smaller sigma, larger q; the subsampled Gaussian's profile is monotone in
        both, see :mod:`dpacct.accountant.schedule`), with ``k`` growing
        geometrically while checks pass.  Later records inside the certificate are
        admitted at no cost; the first one outside it folds the admitted records into
        the history (one block composition and one convolution per direction) and
        checks again.
        """
        budget_eps, budget_delta = self._budget  # type: ignore[misc]
        credit = self._credit
        if (
            credit is not None
            and credit.version == self._version
            and credit.remaining >= count
            and _covers(credit.mechanism, mechanism)
        ):
            return
        history = self._history_now()
        params = _step_params(mechanism)
        k = max(count, self._lookahead)
        eps = math.inf
        for slack in (LOOKAHEAD_SLACK, 0.0):
            if params is not None and slack > 0:
                sigma, q = params
                dominating = _cell_step(sigma * (1.0 - slack), min(q * (1.0 + slack), 1.0))
            elif slack > 0:
                continue  # other mechanisms: no loosening, the mechanism itself
            else:
                dominating = mechanism
            while True:
                found = history.epsilon_with([(dominating, k)])
                if found is None:  # the fast path cannot certify: the engine's route
                    history = self._history = self._pld_history()
                    found = history.epsilon_with([(dominating, k)])
                eps = found
                if eps <= budget_eps:
                    self._credit = _Credit(dominating, k, eps, self._version)
                    self._lookahead = min(2 * k, 1 << 40)
                    return
                if k == count:
                    break
                k = max(count, k // 4)
                self._lookahead = max(1, k)
        self._lookahead = 1
        raise BudgetExceededError(
            f"budget exceeded: recording {count} x {mechanism!r} would take epsilon to "
            f"{eps:.6g} > budget_epsilon={budget_eps:g} at delta={budget_delta:g} "
            f"(spent so far: {_or_nan(history.epsilon()):.6g}); the ledger is unchanged",
            epsilon=eps,
            budget_epsilon=budget_eps,
            budget_delta=budget_delta,
        )

    # ------------------------------------------------------ adaptive (RDP) filter
    def _rdp_at(self, mechanism: Mechanism) -> float:
        key = _key(mechanism)
        value = self._rdp_cache.get(key)
        if value is None:
            if not mechanism.has_rdp:
                raise ValueError(
                    f"adaptive=True accounts by Renyi DP, and {mechanism!r} has no RDP curve "
                    "(nothing was recorded)"
                )
            value = float(np.asarray(mechanism.rdp(self._order), dtype=float))
            if len(self._rdp_cache) > 4096:
                self._rdp_cache.clear()
            self._rdp_cache[key] = value
        return value

    def _rdp_budget(self, alpha: np.ndarray | float) -> np.ndarray | float:
        """RDP budget ``B`` at ``alpha`` whose conversion is the (epsilon, delta) budget.

        Inverts Canonne, Kamath & Steinke 2020, Proposition 12:
        ``eps = B + log(1 - 1/alpha) - (log delta + log alpha) / (alpha - 1)``.
        """
        eps, delta = self._budget  # type: ignore[misc]
        a = np.asarray(alpha, dtype=float)
        return eps - np.log1p(-1.0 / a) + (math.log(delta) + np.log(a)) / (a - 1.0)

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

    def _admit_rdp(self, mechanism: Mechanism, count: int) -> None:
        """Renyi filter: O(1) per record.

        Rests on the fully adaptive composition theorem for Renyi DP (Feldman & Zrnic
        2021, "Individual privacy accounting via a Renyi filter", NeurIPS).
        """
        budget_eps, budget_delta = self._budget  # type: ignore[misc]
        if self._order is None:
            self._order = self._choose_order(mechanism)
        total = self._rdp_spent + count * self._rdp_at(mechanism)
        limit = float(self._rdp_budget(self._order))
        if total <= limit:
            return
        eps = float(_rdp_epsilon(total, self._order, budget_delta))
        raise BudgetExceededError(
            f"budget exceeded: recording {count} x {mechanism!r} would take the summed "
            f"Renyi DP at order {self._order:g} to {total:.6g} > {limit:.6g}, i.e. epsilon "
            f"{eps:.6g} > budget_epsilon={budget_eps:g} at delta={budget_delta:g} "
            "(adaptive Renyi filter); the ledger is unchanged",
            epsilon=eps,
            budget_epsilon=budget_eps,
            budget_delta=budget_delta,
        )

    # ------------------------------------------------------------------ queries
    def _accounted(self, upper: bool) -> Mechanism | None:
        """What the queries evaluate: the exact composition, or the rounded schedule.

        Up to ``EXACT_PHASES`` distinct mechanisms: the exact composition.  Beyond,
        DP-SGD steps are rounded to the grid -- up for upper bounds, down for lower
        bounds (:mod:`dpacct.accountant.schedule`) -- and the other records are kept.
        """
        if not self._entries:
            return None
        if not self._many_phases():
            return self.mechanism()
        cached = self._rounded_cache.get(upper)
        if cached is not None and cached[0] == self._version:
            return cached[1]
        mech = _rounded(self._entries, self._grid, upper, self._progress)
        self._rounded_cache[upper] = (self._version, mech)
        return mech

    def mechanism(self) -> Mechanism | None:
        """The composition of everything recorded so far (None when empty)."""
        version, mech = self._composed
        if version != self._version:
            mech = None
            if self._entries:
                mech = compose([m for m, _ in self._entries], [c for _, c in self._entries])
            self._composed = (self._version, mech)
        return mech

    def epsilon(self, delta: float) -> float:
        """Epsilon spent so far at ``delta``: a sound upper bound (0 for an empty ledger).

        In filter mode, for ``delta >= budget_delta`` the bound certified by the filter
        is used when smaller, so ``epsilon(budget_delta) <= budget_epsilon`` always.  At
        ``budget_delta`` itself a many-phase ledger answers from the filter's own
        composed history (incremental, never a recomposition).  That history rounds a
        coordinate's values beyond the first 64 it sees up to the grid, so the answer
        can sit a little above the upper end of :meth:`epsilon_bounds`, which composes
        the whole ledger at once (0.1 % on a loop with a new random sigma at every
        step).  Both are certified upper bounds.

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
        d = check_delta(delta)
        key = (self._version, d)
        if key in self._eps_cache:
            return self._eps_cache[key]
        if (
            self._budget is not None
            and d == self._budget[1]
            and self._many_phases()
            and self._all_pld
        ):
            # the filter's own composed history: incremental, never a recomposition
            history = self._history_now()
            found = history.epsilon()
            if found is None:
                history = self._history = self._pld_history()
                found = history.epsilon()
            eps = found
        else:
            fast = self._fast_bounds(d, lower=False) if self._many_phases() else None
            if fast is not None:
                eps = fast[1]
            else:
                mech = self._accounted(upper=True)
                eps = 0.0 if mech is None else float(mech.epsilon(d, tol=self._tol))
        credit = self._credit
        if (
            credit is not None
            and credit.version == self._version
            and self._budget is not None
            and d >= self._budget[1]
        ):
            eps = min(eps, credit.epsilon)
        if len(self._eps_cache) > 64:
            self._eps_cache.clear()
        self._eps_cache[key] = eps
        return eps

    def delta(self, epsilon: float) -> float:
        """Delta spent so far at ``epsilon``: a sound upper bound (0 when empty).

        Parameters
        ----------
        epsilon : float
            Target epsilon, >= 0.

        Returns
        -------
        float
            Delta, in [0, 1].
        """
        e = check_epsilon(epsilon)
        mech = self._accounted(upper=True)
        return 0.0 if mech is None else float(mech.delta(e, tol=self._tol))

    def epsilon_bounds(self, delta: float) -> tuple[float, float]:
        """``(lower, upper)`` bracket of the true epsilon spent, as the engine gives it.

        Beyond ``EXACT_PHASES`` distinct phases the lower end comes from the schedule
        rounded down (larger sigma, smaller q) and the upper end from the schedule
        rounded up, each certified by its own PLD; neither is clipped to the other.

        Parameters
        ----------
        delta : float
            Target delta, in (0, 1).

        Returns
        -------
        (float, float)
            ``(lower, upper)``; ``(0.0, 0.0)`` for an empty ledger.
        """
        d = check_delta(delta)
        if not self._entries:
            return (0.0, 0.0)
        if not self._many_phases():
            return self.mechanism().epsilon_bounds(d, tol=self._tol)  # type: ignore[union-attr]
        fast = self._fast_bounds(d, lower=True)
        if fast is not None:
            return fast
        upper = float(self._accounted(upper=True).epsilon(d, tol=self._tol))  # type: ignore[union-attr]
        lower = self._accounted(upper=False).epsilon_bounds(d, tol=self._tol)[0]  # type: ignore[union-attr]
        return (float(lower), upper)

    def _fast_bounds(self, delta: float, *, lower: bool) -> tuple[float, float] | None:
        """The characteristic-function fast path of :func:`fast_epsilon_bounds`.

        Used when every record is a DP-SGD step (beyond ``EXACT_PHASES`` distinct
        ones): the upper bound from the steps rounded up to the grid, the lower bound
        from the steps rounded down (on the loss grid of
        :func:`~dpacct.accountant.schedule._lower_step`: as fine as the narrowest
        steps need); neither is rounded when there are at most
        ``EXACT_CELLS`` distinct steps, and a coordinate with at most ``EXACT_VALUES``
        values keeps them.  ``None`` -- the engine's route -- when a
        record is another mechanism or the fast path cannot certify.
        """
        steps = []
        for mech, count in self._entries:
            params = _step_params(mech)
            if params is None:
                return None
            steps.append((params[0], params[1], int(count)))
        key = ("fast", self._version, delta, lower)
        if key in self._eps_cache:
            return self._eps_cache[key]  # type: ignore[return-value]
        # few distinct cells (or a coordinate with few values) stay unrounded
        exact = {"exact_cells": EXACT_CELLS, "exact_values": EXACT_VALUES}
        up = fast_epsilon_bounds(
            round_schedule(steps, self._grid, upper=True, **exact), delta, lower=False
        )
        out: tuple[float, float] | None = None
        if up is not None:
            lo_val = math.nan
            if lower:
                down = round_schedule(steps, self._grid, upper=False, **exact)
                lo = fast_epsilon_bounds(down, delta, step=_lower_step(down), upper=False)
                if lo is None:
                    return None
                lo_val = float(lo[0])
            out = (lo_val, float(up[1]))
        self._eps_cache[key] = out  # type: ignore[assignment]
        return out

    # ------------------------------------------------------------ serialisation
    def to_dict(self, *, key: bytes | str | None = None) -> dict[str, Any]:
        """The ledger as JSON-ready data, with schema version and seal.

        Parameters
        ----------
        key : bytes, str or None
            A secret of at least 16 bytes: the data is signed with HMAC-SHA256
            (``"signature"``, schema 2).  None reads the environment variable
            ``DPACCT_LEDGER_KEY``; without either, an unkeyed ``"checksum"`` (schema 1).
            See :mod:`dpacct.accountant.ledger_file` for the format and threat model.

        Returns
        -------
        dict
            The ledger's fields and its seal (``"checksum"`` or ``"signature"``).

        Raises
        ------
        TypeError
            A recorded mechanism's class is not registered in
            :mod:`dpacct.accountant.serialization`, or ``key`` is not bytes or str.
        ValueError
            ``key`` is shorter than 16 bytes.
        """
        payload: dict[str, Any] = {
            "format": FORMAT,
            "budget": None
            if self._budget is None
            else {"epsilon": self._budget[0], "delta": self._budget[1]},
            "tol": self._tol,
            "entries": [{"mechanism": to_dict(m), "count": int(c)} for m, c in self._entries],
        }
        options = self._options()
        if options:
            payload["options"] = options
        return seal(payload, key=key)

    def _options(self) -> dict[str, Any]:
        """Non-default settings that change what the ledger certifies (saved with it)."""
        options: dict[str, Any] = {}
        if self._grid != DEFAULT_GRID:
            options["grid"] = self._grid
        if self._adaptive:
            options["adaptive"] = True
            options["adaptive_order"] = self._order
        return options

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        *,
        source: str = "ledger data",
        key: bytes | str | None = None,
        allow_unsigned: bool = False,
    ) -> PrivacyAccountant:
        """Rebuild a ledger from :meth:`to_dict` output, verifying everything.

        Parameters
        ----------
        data : mapping
            The output of :meth:`to_dict` (or the parsed JSON of a saved file).
        source : str
            Where the data came from, for messages.
        key : bytes, str or None
            The key the ledger was signed with; None reads ``DPACCT_LEDGER_KEY``.
        allow_unsigned : bool
            With a key, also accept a ledger sealed only by an unkeyed checksum.
            See :meth:`load` for the rules.

        Returns
        -------
        PrivacyAccountant
            The restored ledger (its filter state rebuilt from the entries).

        Raises
        ------
        LedgerFileError
            Wrong format or schema version, checksum or signature mismatch, a signed
            ledger without a key, an unsigned one with a key, invalid entries
            (negative or non-integer counts, unknown mechanism types, bad parameters).
        """
        payload = unseal(data, key=key, allow_unsigned=allow_unsigned, source=source)
        content = parse_content(payload, source=source)
        try:
            acct = cls(**content.kwargs)
        except (TypeError, ValueError) as exc:
            raise LedgerFileError(f"{source}: invalid budget or tol: {exc}") from exc
        if acct._adaptive and acct._order is None and content.entries:
            raise LedgerFileError(
                f"{source}: an adaptive filter with records must state its adaptive_order"
            )
        for i, (mech, count) in enumerate(content.entries):
            # restored verbatim: the budget was checked when the entries were recorded
            acct._entries.append([mech, count])
            acct._distinct.add(_key(mech))
            acct._all_pld = acct._all_pld and _pld_capable(mech)
            acct._pending.append((mech, count))
            if acct._adaptive:
                try:
                    acct._rdp_spent += count * acct._rdp_at(mech)
                except ValueError as exc:
                    raise LedgerFileError(f"{source}: entries[{i}].mechanism: {exc}") from exc
        acct._version = 1 if acct._entries else 0
        return acct

    def save(self, path: str | os.PathLike[str], *, key: bytes | str | None = None) -> None:
        """Write the ledger to ``path`` as JSON, atomically, checksummed or signed.

        The content goes to a temporary file in the same directory, which is flushed
        and ``fsync``-ed, then renamed over ``path`` with ``os.replace``: a crash at any
        moment leaves either the previous file or the new one, never a mix.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write; an existing file is replaced (keeping its permissions).
        key : bytes, str or None
            A secret of at least 16 bytes (e.g. ``secrets.token_bytes(32)``): the file
            is signed with HMAC-SHA256.  None reads the environment variable
            ``DPACCT_LEDGER_KEY`` now; without either, the file carries an unkeyed
            SHA-256 checksum.  The key is never written to the file.

        Raises
        ------
        TypeError
            An unregistered mechanism in the ledger, or ``key`` not bytes or str.
        ValueError
            ``key`` (or ``DPACCT_LEDGER_KEY``) shorter than 16 bytes.

        Notes
        -----
        Threat model.  Unkeyed, the checksum detects corruption, truncation and careless
        edits, but anyone can edit the file and recompute it.  Keyed, nobody without the
        key can change the file so that it verifies.  Neither protects against someone
        who holds the key, deleting the file, or replacing it with an older file signed
        with the same key (a rollback: the file carries no counter or timestamp).  See
        the user guide page "Ledger files".

        Examples
        --------
        >>> import os, secrets, tempfile
        >>> acct = PrivacyAccountant()
        >>> acct.step(noise_multiplier=1.0, sample_rate=0.01, count=500)
        >>> key = secrets.token_bytes(32)
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = os.path.join(tmp, "ledger.json")
        ...     acct.save(path, key=key)
        ...     restored = PrivacyAccountant.load(path, key=key)
        >>> restored.entries == acct.entries
        True
        """
        write_atomic(path, self.to_dict(key=key))

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        key: bytes | str | None = None,
        allow_unsigned: bool = False,
    ) -> PrivacyAccountant:
        """Read a ledger written by :meth:`save`, verifying its checksum or signature.

        Parameters
        ----------
        path : str or os.PathLike
            The file to read.
        key : bytes, str or None
            The key the ledger was signed with.  None reads the environment variable
            ``DPACCT_LEDGER_KEY`` now; an explicit key wins over it.
        allow_unsigned : bool
            With a key, also accept a file that carries only an unkeyed checksum (still
            verified).  Default False.

        Returns
        -------
        PrivacyAccountant
            The ledger with its entries, budget and options (the filter's certificate
            is not saved: the next check recomputes it).

        Raises
        ------
        FileNotFoundError
            No file at ``path``.
        LedgerFileError
            The file is empty, truncated, not JSON, of another format or schema
            version, fails its checksum or signature, is signed but no key was given,
            is unsigned but a key was given, or holds invalid entries.
        TypeError, ValueError
            A bad ``key`` (wrong type, shorter than 16 bytes) or ``allow_unsigned``.

        Notes
        -----
        The rules: a signed file loads only with the key that signed it; without any
        key it is refused (never loaded unverified).  With a key, an unsigned file is
        refused unless ``allow_unsigned=True``: someone without the key who edits a
        signed ledger can only re-seal it with an unkeyed checksum or strip the seal,
        and must not thereby downgrade it.  Without a key, an unsigned file loads once
        its checksum verifies (corruption detection only: anyone can recompute a
        checksum).  The threat model is in :meth:`save`.

        Examples
        --------
        >>> import os, secrets, tempfile
        >>> acct = PrivacyAccountant()
        >>> acct.step(noise_multiplier=1.0, count=3)
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = os.path.join(tmp, "ledger.json")
        ...     acct.save(path, key=secrets.token_bytes(32))
        ...     PrivacyAccountant.load(path, key=secrets.token_bytes(32))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        dpacct.accountant.ledger_file.LedgerFileError: ...: signature mismatch: ...
        """
        source = os.fspath(path)
        return cls.from_dict(
            read_json(source), source=source, key=key, allow_unsigned=allow_unsigned
        )


def _same(a: Mechanism, b: Mechanism) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:  # pragma: no cover - exotic __eq__
        return False


# ---------------------------------------------------------------------- helpers
def _key(mechanism: Mechanism) -> Any:
    try:
        hash(mechanism)
        return (type(mechanism), mechanism)
    except TypeError:
        return (type(mechanism), id(mechanism))


def _step_params(mechanism: Mechanism) -> tuple[float, float] | None:
    """``(sigma, q)`` of a DP-SGD step (a Poisson-subsampled or plain Gaussian), else None.

    Only the engine's own :class:`~dpacct.accountant.gaussian.GaussianMechanism` is
    taken as a step: its noise multiplier is exact, which the rounding onto the
    schedule grid needs (a ``sigma`` recovered from a declared Gaussian-DP ``mu`` is
    off by up to an ulp, in either direction).  Other mechanisms are recorded as they
    are, by the engine's general route.
    """
    if type(mechanism) is GaussianMechanism:
        return (float(mechanism.sigma), 1.0)
    if type(mechanism) is PoissonSubsampledMechanism and type(mechanism.base) is GaussianMechanism:
        return (float(mechanism.base.sigma), float(mechanism.sample_rate))
    return None


def _cell_step(sigma: float, q: float) -> Mechanism:
    from .schedule import _cell_mechanism

    return _cell_mechanism(sigma, q)


def _covers(certified: Mechanism, mechanism: Mechanism) -> bool:
    """True if ``mechanism`` is dominated by ``certified`` (same one, or a DP-SGD step
    with at least its sigma and at most its q)."""
    if _same(certified, mechanism):
        return True
    a, b = _step_params(certified), _step_params(mechanism)
    return a is not None and b is not None and b[0] >= a[0] and b[1] <= a[1]


def _pld_capable(mechanism: Mechanism) -> bool:
    try:
        return bool(mechanism.has_pld) or _step_params(mechanism) is not None
    except Exception:  # pragma: no cover - exotic mechanisms
        return False


def _rounded(
    entries: list[list[Any]] | list[tuple[Mechanism, int]], grid: float, upper: bool, progress: bool
) -> Mechanism:
    """DP-SGD steps rounded to the grid (up or down), other records kept as they are."""
    steps: list[tuple[float, float, int]] = []
    others: dict[Any, list[Any]] = {}
    for mech, count in entries:
        params = _step_params(mech)
        if params is None:
            key = _key(mech)
            if key in others:
                others[key][1] += count
            else:
                others[key] = [mech, count]
        else:
            steps.append((params[0], params[1], int(count)))
    # a coordinate with few values (a constant q) is kept: it adds no cells
    phases = round_schedule(steps, grid, upper=upper, exact_values=EXACT_VALUES) if steps else []
    return schedule_mechanism(
        phases, others=[(m, c) for m, c in others.values()], progress=progress
    )


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else value


def _rdp_epsilon(rdp: float, alpha: float, delta: float) -> float:
    """Canonne, Kamath & Steinke 2020, Proposition 12, at one order."""
    return rdp + math.log1p(-1.0 / alpha) - (math.log(delta) + math.log(alpha)) / (alpha - 1.0)


class _PLDHistory:
    """Pessimistic PLDs (remove and add direction) of the records checked so far.

    ``fold(parts)`` composes the new records as one block (DP-SGD steps rounded up to
    the grid, :func:`_rounded`) and convolves it into the history; ``epsilon_with``
    evaluates the history with a hypothetical block without keeping it.  Tail
    budget: block ``i`` (folded or hypothetical) and its convolution may move mass
    ``tail / ((i + 1)(i + 2))``, half each, which sums to at most ``tail`` over any
    number of blocks, so every answer is certified like the engine's.
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

    def _block(self, parts: list[tuple[Mechanism, int]]) -> tuple[GridPLD, GridPLD]:
        mech = _rounded(parts, self.grid, True, self.progress)
        settings = _scaled_settings(self.settings, 0.5 * self._share())
        if isinstance(mech, ComposedMechanism) and mech._gaussian is not None:
            # all Gaussians: one Gaussian in closed form, discretised like any law
            mech = ComposedMechanism(parts=((mech._gaussian, 1),))
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

    def fold(self, parts: list[tuple[Mechanism, int]]) -> bool:
        self.plds = self._with(self._block(parts))
        self.blocks += 1
        self._eps = None
        return True

    def epsilon_with(self, parts: list[tuple[Mechanism, int]]) -> float:
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

    @staticmethod
    def _steps(parts: list[tuple[Mechanism, int]]) -> list[tuple[float, float, int]] | None:
        out = []
        for mech, count in parts:
            params = _step_params(mech)
            if params is None:
                return None
            out.append((params[0], params[1], int(count)))
        return out

    def fold(self, parts: list[tuple[Mechanism, int]]) -> bool:
        steps = self._steps(parts)
        if steps is None:
            return False
        self.inc.fold(steps)
        return self.inc.ok

    def epsilon_with(self, parts: list[tuple[Mechanism, int]]) -> float | None:
        steps = self._steps(parts)
        # decided against the budget: a value <= budget is certified, above means refuse
        return None if steps is None else self.inc.epsilon(steps, cap=self.budget)

    def epsilon(self) -> float | None:
        return self.inc.epsilon()
