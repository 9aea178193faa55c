"""Opacus integration: an accountant that Opacus' ``PrivacyEngine`` uses, backed by dpacct.

Opacus (Yousefpour et al. 2021, "Opacus: User-Friendly Differential Privacy Library
in PyTorch") asks its accountant for three things: a ``step`` after every noisy
optimiser step (through the hook of :meth:`~OpacusAccountant.get_optimizer_hook_fn`),
the epsilon spent so far, and -- inside ``make_private_with_epsilon`` -- epsilon for a
trial ``history`` while it bisects for the noise multiplier
(``opacus.accountants.utils.get_noise_multiplier``).  Opacus 1.6 builds its accountant
from a *name*: ``PrivacyEngine(accountant="prv")`` calls
``opacus.accountants.create_accountant(mechanism=...)``, which looks the name up in a
registry that ``opacus.accountants.register_accountant`` extends, and
``get_noise_multiplier`` creates a fresh accountant from ``accountant.mechanism()``.
Importing this module registers :class:`OpacusAccountant` under the name ``"dpacct"``
(:data:`MECHANISM`), so every one of those paths accounts through dpacct::

    import dpacct.opacus                      # registers "dpacct" with opacus
    engine = PrivacyEngine(accountant="dpacct")
    model, optimizer, loader = engine.make_private_with_epsilon(...)
    ...
    engine.get_epsilon(delta=1e-5)            # dpacct's sound upper bound

Opacus' ``history`` -- a list of ``(noise_multiplier, sample_rate, steps)`` -- is the
source of truth, as in Opacus' own accountants: whoever assigns it (the noise-multiplier
search, ``load_state_dict``) is honoured.  The answers come from a dpacct
:class:`~dpacct.accountant.PrivacyAccountant` rebuilt from it on demand: each entry is a
Poisson-subsampled Gaussian (add/remove neighbours), composed by dpacct's PLD engine
with a certified ``(lower, upper)`` bracket (:meth:`OpacusAccountant.epsilon_bounds`).
Noise schedulers (``opacus.schedulers.ExponentialNoise``, ``StepNoise``, ...) change
``optimizer.noise_multiplier`` between epochs; the hook reads it at every step, so a
schedule is a history of several entries.

This module is an optional extra: ``import dpacct`` never imports it, torch or opacus.
Without them, importing it raises an :class:`ImportError` saying what to install.
"""

from __future__ import annotations

import math
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from dpacct.accountant.extras import missing_extra

try:
    from opacus.accountants import IAccountant, create_accountant, register_accountant
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra(
        "dpacct.opacus",
        "opacus",
        exc,
        also="torch==2.13.0",
        note='or any torch build, then pip install "dpacct[opacus]"',
    ) from exc

from dpacct._opacus_allocation import RandomAllocationBatchSampler
from dpacct._opacus_data_path import (
    FIXED_SIZE,
    POISSON,
    DataPath,
    FixedSizeBatchSampler,
    UnaccountedSamplerError,
    carried,
    data_path_from_state,
    draws_poisson,
    opacus_call,
    replaced_sampler,
    replaced_text,
    signature,
)
from dpacct._opacus_passes import PassLog
from dpacct._opacus_per_record import PerRecordAccounting, PerRecordPoissonSampler, PerRecordReport
from dpacct._opacus_rates import (
    check_history,
    check_step,
    hook_rate,
    normaliser_note,
    rate_note,
    resolve_history,
    step_rate,
)
from dpacct._opacus_scheme import epsilon_lines, scheme_bounds, scheme_mechanism
from dpacct._opacus_state import adopted_path, build_ledger, check_adopted, state_history
from dpacct._opacus_watch import BatchWatch, check_batches, watch
from dpacct.accountant.bracket import DOMINATING_PAIR, Bracket
from dpacct.accountant.bracket import MECHANISM as MECHANISM_BRACKET
from dpacct.accountant.ledger import BudgetExceededError, PrivacyAccountant
from dpacct.accountant.validation import check_delta, check_epsilon, check_flag, check_tol

__all__ = [
    "MECHANISM",
    "DataPath",
    "FixedSizeBatchSampler",
    "OpacusAccountant",
    "PerRecordAccounting",
    "PerRecordPoissonSampler",
    "PerRecordReport",
    "RandomAllocationBatchSampler",
    "UnaccountedSamplerError",
    "register",
]

#: the name under which :class:`OpacusAccountant` is registered with Opacus
MECHANISM = "dpacct"

#: Opacus accountants whose ``history`` has the same meaning as ours (one
#: Poisson-subsampled Gaussian per step, as ``(noise_multiplier, sample_rate, steps)``):
#: their checkpoints can be loaded into an :class:`OpacusAccountant`
_COMPATIBLE_MECHANISMS = frozenset({MECHANISM, "rdp", "prv", "gdp"})


class OpacusAccountant(IAccountant):
    """Opacus ``IAccountant`` whose epsilon is dpacct's: sound, with a certified bracket.

    The accountant reads the data path: the data loader given to ``make_private`` /
    ``make_private_with_epsilon`` (or attached later, :meth:`attach_data_loader`) and
    accounts the scheme it implements (:attr:`data_path`).  With Poisson sampling each
    optimiser step is one Poisson-subsampled Gaussian mechanism (add/remove
    neighbours); the steps compose by dpacct's privacy-loss-distribution engine
    (connect-the-dots discretisation, Doroshenko et al. 2022; both neighbouring
    directions), so :meth:`get_epsilon` is an upper bound on the true epsilon, as
    Opacus' PRV accountant's upper end is, and typically tighter.  Shuffled (or
    sequential) fixed-size batches are accounted by the proved bracket of
    :func:`~dpacct.accountant.shuffled_batches` (the Poisson number stays available as
    :meth:`poisson_epsilon`, not a guarantee for such a run); a
    :class:`FixedSizeBatchSampler` by the replace-one accounting of fixed-size batches;
    any other sampler (a subclass of a recognised one included: samplers are recognised
    by exact class) is refused with :class:`UnaccountedSamplerError`.  The data path is
    the one source of the recorded rate: a Poisson sampler's own ``sample_rate`` is
    recorded, and the ``1 / len(data_loader)`` Opacus' hook passes is only compared
    with it (:meth:`summary` names both when they differ).  The loader the run iterates
    is watched (:mod:`dpacct._opacus_watch`): a step whose batches break the identified
    scheme (an index twice in a shuffled epoch, a fixed-size batch of another size, an
    index outside the dataset, a loader that is not the one accounted) is refused inside
    ``optimizer.step()`` before it is recorded.

    Parameters
    ----------
    budget_epsilon, budget_delta : float, optional
        Together: a privacy filter.  A step that would take epsilon (at
        ``budget_delta``) above ``budget_epsilon`` raises
        :class:`~dpacct.accountant.BudgetExceededError` from inside
        ``optimizer.step()`` -- after the noise is drawn, before the parameters move --
        and is not recorded.
    tol : float, optional
        Relative accuracy of the epsilon answers (dpacct's default if None).
    assume_poisson : bool, default False
        The explicit override for a sampler dpacct cannot account (weighted,
        user-defined, or a hook attached without a loader): account the run as Poisson
        sampling at rate ``1 / len(data_loader)``.  Whoever sets it takes responsibility
        for that claim; :attr:`data_path` records that it was assumed.

    Attributes
    ----------
    history : list of (float, float, int)
        Opacus' record: ``(noise_multiplier, sample_rate, steps)`` per run of equal
        steps.  Assigning it (as Opacus' noise-multiplier search does) is allowed.

    Examples
    --------
    >>> from dpacct.opacus import OpacusAccountant
    >>> acct = OpacusAccountant()
    >>> for _ in range(1000):
    ...     acct.step(noise_multiplier=1.1, sample_rate=0.01)
    >>> acct.history, len(acct)
    ([(1.1, 0.01, 1000)], 1000)
    >>> round(acct.get_epsilon(delta=1e-5), 4)
    1.5154

    With Opacus (``import dpacct.opacus`` registers the name ``"dpacct"``)::

        from opacus import PrivacyEngine
        engine = PrivacyEngine(accountant="dpacct")
    """

    def __init__(
        self,
        *,
        budget_epsilon: float | None = None,
        budget_delta: float | None = None,
        tol: float | None = None,
        assume_poisson: bool = False,
    ) -> None:
        super().__init__()
        self._assume_poisson = check_flag("assume_poisson", assume_poisson)
        self._path: DataPath | None = None
        self._refused: str | None = None  # why the data path has no guarantee
        self._unseen = False  # hooked outside make_private, no loader attached
        self._watch: BatchWatch | None = None  # checks what the run iterates
        self._passes = PassLog()  # where the passes of a whole-pass run began
        self._passed: float | None = None  # the rate Opacus' hook was given
        self._replaced: str | None = None  # the sampler poisson_sampling=True dropped
        self._normaliser: str | None = None  # Opacus' normalisation differs (#819)
        self.history: list[tuple[float, float, int]] = []
        # the PrivacyAccountant validates the budget (both or neither, ranges)
        self._options: dict[str, Any] = {
            "budget_epsilon": budget_epsilon,
            "budget_delta": budget_delta,
            "tol": check_tol(tol),
        }
        self._ledger = PrivacyAccountant(**self._options)
        self._synced: list[tuple[float, float, int]] | None = []
        self._non_private = 0  # steps recorded with noise_multiplier == 0
        call = opacus_call()
        if call is not None and call[0] == "make_private_with_epsilon":
            # a trial accountant of Opacus' noise search: account the loader it was given
            engine = call[1].get("self")
            assume = self._assume_poisson or bool(
                getattr(getattr(engine, "accountant", None), "_assume_poisson", False)
            )
            self._assume_poisson = assume
            poisson = call[1].get("poisson_sampling", True)
            self._adopt(call[1].get("data_loader"), poisson, True, replaced=bool(poisson))

    # ------------------------------------------------------------ IAccountant
    @classmethod
    def mechanism(cls) -> str:
        """The accounting name Opacus knows this accountant by: ``"dpacct"``."""
        return MECHANISM

    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Record one optimiser step: a Poisson-subsampled Gaussian mechanism.

        Parameters
        ----------
        noise_multiplier : float
            Noise standard deviation over the clipping norm, >= 0 (0: a non-private
            step, after which epsilon is infinite).
        sample_rate : float
            Poisson sampling rate of the step, in (0, 1].

        Raises
        ------
        ValueError, TypeError
            A parameter out of range or not a number, or a ``sample_rate`` that differs
            from the rate of a verified Poisson data path (both are named; nothing
            recorded).
        BudgetExceededError
            With a budget, the step would exceed it (nothing recorded).
        """
        sigma, q = check_step(noise_multiplier, sample_rate, "")
        self._record(sigma, step_rate(self._path, q))

    def _record(self, sigma: float, q: float) -> None:
        """Record one step at the rate already resolved against the data path."""
        ledger = self._sync()
        if sigma > 0.0:
            ledger.step(noise_multiplier=sigma, sample_rate=q)
        elif ledger.budget is not None:
            raise BudgetExceededError(
                "budget exceeded: a step with noise_multiplier=0 is not differentially "
                "private (infinite epsilon); nothing was recorded",
                epsilon=math.inf,
                budget_epsilon=ledger.budget[0],
                budget_delta=ledger.budget[1],
            )
        else:
            self._non_private += 1
        last = self.history[-1] if self.history else None
        if last is not None and last[0] == sigma and last[1] == q:
            self.history[-1] = (sigma, q, last[2] + 1)
        else:
            self.history.append((sigma, q, 1))
        self._synced = list(self.history)

    def get_epsilon(self, delta: float, *, tol: float | None = None, **kwargs: Any) -> float:
        """Epsilon spent so far at ``delta``: a sound upper bound (0 before any step).

        Parameters
        ----------
        delta : float
            Target delta, in (0, 1).
        tol : float, optional
            Relative accuracy wanted (default: the accountant's ``tol``).
        **kwargs
            Ignored.  Opacus forwards the extra keyword arguments of
            ``make_private_with_epsilon`` here (and other accountants take options
            such as ``eps_error`` or ``alphas``); none of them applies to dpacct.

        Returns
        -------
        float
            ``inf`` if a non-private step (noise multiplier 0) was recorded.

        Raises
        ------
        UnaccountedSamplerError
            The data path has no proved guarantee (see :attr:`data_path`).
        """
        d = check_delta(delta)
        if not self._is_poisson():
            return self._scheme_bounds(d, need_lower=False)[1]
        ledger = self._sync()
        if self._non_private:
            return math.inf
        if tol is None:
            return float(ledger.epsilon(d))
        mech = ledger.mechanism()
        return 0.0 if mech is None else float(mech.epsilon(d, tol=check_tol(tol)))

    def __len__(self) -> int:
        """Number of optimiser steps recorded (the sum of the history's counts).

        Opacus' own RDP and PRV accountants return the number of *history entries*
        here; the ``IAccountant`` contract says steps, and Opacus only tests
        ``len(accountant) > 0``, on which both agree.
        """
        return sum(n for _, _, n in self.history)

    def get_optimizer_hook_fn(self, sample_rate: float) -> Callable[[Any], None]:
        """The callback Opacus attaches to its ``DPOptimizer`` (called once per step).

        Called by ``PrivacyEngine.make_private``, whose data loader it reads (the
        refusal of a sampler dpacct cannot account is raised here, before training).
        The hook records a step with the optimiser's *current* ``noise_multiplier`` (so
        noise schedulers are followed) and the data path's rate -- a Poisson sampler's own
        rate, or the accumulated batches over the batches per epoch (gradient
        accumulation over several batches is one logical step) -- ``sample_rate`` being
        only compared with it.  Before recording, the watch on the iterated loader checks
        that the step's batches came from the accounted loader and kept its scheme, and
        the hook checks them against the data path: accumulation over Poisson batches (a
        record could be in several) or over independently drawn fixed-size batches, and
        a batch larger than the loader's, raise ``ValueError`` from inside
        ``optimizer.step()`` before the parameters move, and nothing is recorded.

        Parameters
        ----------
        sample_rate : float
            Expected Poisson sampling rate of one micro-batch, in (0, 1].

        Raises
        ------
        UnaccountedSamplerError
            The data loader's sampler has no proved guarantee (and no override).
        """
        _, q = check_step(1.0, sample_rate, "")
        self._passed = q
        call = opacus_call()
        if call is not None and call[0] == "make_private":
            loader, poisson = call[1].get("data_loader"), call[1].get("poisson_sampling", True)
            self._adopt(loader, poisson, watch_loader=True)
            dataset = getattr(loader, "dataset", None)
            normaliser = call[1].get("expected_batch_size")
            if isinstance(normaliser, int) and hasattr(dataset, "__len__"):
                self._normaliser = normaliser_note(len(dataset), q, normaliser)
            name = replaced_sampler(loader) if poisson and loader is not None else None
            if name is not None:
                self._replaced = name
                warnings.warn(replaced_text(self._replaced, self._path), UserWarning, stacklevel=3)
        elif self._path is None and self._refused is None:
            if self._assume_poisson:
                self._path = DataPath(POISSON, "unknown", max(1, round(1.0 / q)), q, None, True)
            else:
                self._unseen = True

        def hook(optimizer: Any) -> None:
            k = optimizer.accumulated_iterations
            if self._watch is not None:
                self._watch.check_step(optimizer, k)  # before anything is recorded
            check_batches(self._path, optimizer, k)
            sigma, _ = check_step(optimizer.noise_multiplier, q, "")
            self._record(sigma, hook_rate(self._path, q, k))
            self._passes.note_step(self._watch, self._path, self.history)

        return hook

    def state_dict(self, destination: Any = None) -> Any:
        """The accountant's state for a checkpoint: ``history`` and ``mechanism``.

        The layout is Opacus' (``PrivacyEngine.save_checkpoint`` stores it), plus
        ``data_path`` (plain values) once a data loader was identified, so that a
        restored accountant accounts the same scheme, with ``pass_starts`` (where its
        passes began, :mod:`dpacct._opacus_passes`) and ``pass_prints`` (what the watch's
        repeated-pass check compares with); the budget and ``tol`` are not saved.

        Parameters
        ----------
        destination : mutable mapping, optional
            Where to write the state (as Opacus passes it); None: a new ``OrderedDict``.
        """
        if destination is None:
            destination = OrderedDict()
        destination["history"] = [tuple(entry) for entry in self.history]
        destination["mechanism"] = self.mechanism()
        if self._path is not None:
            destination["data_path"] = self._path.as_dict()
            destination.update(self._passes.saved(self._watch, self._path, self.history))
        return destination

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore ``history`` from :meth:`state_dict` output, validating it first.

        Checkpoints of Opacus' ``rdp``, ``prv`` and ``gdp`` accountants are accepted
        too: their history records the same steps.  A saved ``data_path`` is restored
        (and must agree with the loader this accountant already read, if any); the
        next step begins a new pass (:mod:`dpacct._opacus_passes`: without
        ``pass_starts``, a whole-pass history must be a whole number of passes); new passes
        are compared with the saved ``pass_prints`` (a checkpoint without them loads, but a
        sampler restored with its first seed then repeats the earlier passes unseen).

        Parameters
        ----------
        state_dict : Mapping
            A checkpoint's accountant state, with ``history`` and ``mechanism``.

        Raises
        ------
        ValueError
            Empty or malformed state, another mechanism's state, or invalid entries
            (nothing is changed).
        BudgetExceededError
            With a budget, the restored history already exceeds it (nothing changed).
        """
        history = state_history(state_dict, _COMPATIBLE_MECHANISMS)  # _opacus_state
        path = data_path_from_state(state_dict.get("data_path"), self._path)
        history = resolve_history(path or self._path, history)
        ledger, non_private = build_ledger(self._options, history)
        self._passes.load_state(state_dict, path or self._path, history, self._watch)
        self.history = history
        self._ledger, self._non_private, self._synced = ledger, non_private, list(history)
        if path is not None:
            path = carried(self._path, path)  # steps to come run under the current loader
            self._path, self._refused, self._unseen = path, None, False

    # ------------------------------------------------------------ dpacct extras
    def epsilon_bounds(self, delta: float) -> tuple[float, float]:
        """``(lower, upper)`` bracket of the true epsilon spent so far (dpacct's PLD).

        A :class:`~dpacct.accountant.bracket.Bracket`: its ``bounds`` is ``"dominating
        pair"`` for fixed-size batches (and truncated-Poisson records), whose bracket is
        that of a pair dominating the run, so that only the upper end bounds it.

        Parameters
        ----------
        delta : float
            Target delta, in (0, 1).
        """
        d = check_delta(delta)
        if not self._is_poisson():
            lower, upper = self._scheme_bounds(d, need_lower=True)
            # fixed-size batches: the bracket of S^T, a pair dominating every step
            # (docs/theory/fixed_size.md); only its upper end bounds the run
            assert self._path is not None
            subject = DOMINATING_PAIR if self._path.scheme == FIXED_SIZE else MECHANISM_BRACKET
            return Bracket(lower, upper, subject)
        ledger = self._sync()
        if self._non_private:
            return (math.inf, math.inf)
        return ledger.epsilon_bounds(d)

    def get_delta(self, epsilon: float) -> float:
        """Delta spent so far at ``epsilon``: a sound upper bound (1 after a non-private step).

        Parameters
        ----------
        epsilon : float
            Target epsilon, >= 0.
        """
        if not self._is_poisson():
            eps = check_epsilon(epsilon)
            self._sync()
            if self._non_private:
                return 1.0
            mech = self._scheme_mechanism()
            return 0.0 if mech is None else float(mech.delta(eps))
        ledger = self._sync()
        if self._non_private:
            return 1.0
        return float(ledger.delta(epsilon))

    @property
    def data_path(self) -> DataPath | None:
        """How the run forms its batches, as identified (None before a loader is seen)."""
        return self._path

    def attach_data_loader(self, data_loader: Any, *, poisson_sampling: bool = False) -> None:
        """Tell the accountant which data loader the run iterates.

        ``make_private`` does this itself; call it when the optimiser's hook was
        attached without ``make_private``, or to confirm the loader of a run.  A
        loader whose scheme or batches per epoch differ from those of the steps
        already recorded is refused: a run whose data path changes is not accounted.

        Parameters
        ----------
        data_loader : torch.utils.data.DataLoader
            The loader the training loop iterates.
        poisson_sampling : bool, default False
            True if Opacus replaces its sampler by Poisson sampling (the
            ``poisson_sampling`` argument of ``make_private``).

        Raises
        ------
        UnaccountedSamplerError
            The loader's sampler has no proved guarantee (and no override).
        ValueError
            The data path differs from the one the recorded steps used.
        """
        self._adopt(
            data_loader, check_flag("poisson_sampling", poisson_sampling), watch_loader=True
        )

    def poisson_epsilon(self, delta: float) -> float:
        """Epsilon of the history as Poisson sampling: what is usually reported.

        A guarantee only when :attr:`data_path` is Poisson sampling; for shuffled or
        fixed-size batches it is *not a guarantee for this run*, shown for comparison.

        Parameters
        ----------
        delta : float
            Target delta, in (0, 1).
        """
        d = check_delta(delta)
        ledger = self._sync()
        return math.inf if self._non_private else float(ledger.epsilon(d))

    def summary(self, delta: float) -> str:
        """What the run does and what it spent at ``delta``, in a few lines.

        Parameters
        ----------
        delta : float
            Target delta, in (0, 1).

        Examples
        --------
        >>> acct = OpacusAccountant()
        >>> acct.step(noise_multiplier=1.0, sample_rate=0.1)
        >>> print(acct.summary(1e-5))
        data path: steps recorded directly (Poisson sampling as declared by step())
        epsilon <= 1.685 (add/remove neighbours) at delta = 1e-05 (1 step)
        """
        d = check_delta(delta)
        path = self._path
        where = (
            "steps recorded directly (Poisson sampling as declared by step())"
            if path is None
            else path.describe()
        )
        lines = [f"data path: {where}"]
        if self._replaced is not None:
            lines.append(replaced_text(self._replaced, self._path))
        note = rate_note(path, self._passed)
        if note is not None:
            lines.append(note)
        lower_upper = (None, self.get_epsilon(d)) if self._is_poisson() else self.epsilon_bounds(d)
        steps = len(self)
        tail = f" at delta = {d:g} ({steps} step{'' if steps == 1 else 's'})"
        lines += epsilon_lines(
            path, lower_upper, tail, self._normaliser, lambda: self.poisson_epsilon(d)
        )
        return "\n".join(lines)

    @property
    def ledger(self) -> PrivacyAccountant:
        """The dpacct :class:`~dpacct.accountant.PrivacyAccountant` of the history.

        It holds the private steps (``noise_multiplier > 0``); save it with its
        ``save`` method for a checksummed JSON record of the run (``save(path, key=...)``
        signs it; see :meth:`~dpacct.accountant.PrivacyAccountant.save`).
        """
        return self._sync()

    def __repr__(self) -> str:
        scheme = "" if self._path is None else f", scheme={self._path.scheme!r}"
        return f"OpacusAccountant(steps={len(self)}, entries={len(self.history)}{scheme})"

    # ------------------------------------------------------------ internals
    def _adopt(
        self,
        data_loader: Any,
        poisson_sampling: object,
        soft: bool = False,
        *,
        watch_loader: bool = False,
        replaced: bool = False,
    ) -> None:
        """Identify ``data_loader``'s scheme and make it the run's data path.

        ``soft`` (Opacus' trial accountants): keep a refusal for :meth:`get_epsilon`
        instead of raising it here.  ``watch_loader``: the run iterates this loader,
        so watch its batches (:mod:`dpacct._opacus_watch`).  ``replaced``: Opacus will
        replace this loader's sampler (``make_private_with_epsilon``'s argument).
        """
        try:  # dpacct._opacus_state
            path = adopted_path(data_loader, bool(poisson_sampling), replaced, self._assume_poisson)
        except UnaccountedSamplerError as exc:
            if not soft:
                raise
            self._refused = str(exc)
            return
        check_adopted(path, self._path, bool(self.history), self._ledger.budget is not None)
        if self.history:
            path = carried(self._path, path)  # the recorded steps ran under the old path
        self._path, self._refused, self._unseen = path, None, False
        self._synced = None  # recorded rates are resolved against the new path
        if watch_loader:
            # a Poisson path read from the flag over a loader that does not draw Poisson
            # batches itself: Opacus' loader runs, this one must not be stepped on
            forbid = path.scheme == POISSON and not path.assumed and not draws_poisson(data_loader)
            old, self._watch = self._watch, watch(data_loader, path, signature, replaced=forbid)
            self._passes.rewatch(old, self._watch)

    def _is_poisson(self) -> bool:
        """Whether the history is Poisson sampling; raises if no guarantee follows."""
        if self._refused is not None:
            raise UnaccountedSamplerError(self._refused)
        if self._unseen:
            raise UnaccountedSamplerError(
                "the optimiser hook was attached outside PrivacyEngine.make_private, so "
                "the accountant has not seen the data loader and cannot tell which "
                "sampler the run uses: call accountant.attach_data_loader(data_loader, "
                "poisson_sampling=...) or, taking responsibility for the claim, build it "
                "with OpacusAccountant(assume_poisson=True)"
            )
        return self._path is None or self._path.scheme == POISSON

    def _scheme_mechanism(self) -> Any:
        """The run as a dpacct mechanism under its (non-Poisson) data path."""
        self._sync()
        assert self._path is not None
        return scheme_mechanism(self._path, self.history, self._passes)  # _opacus_scheme

    def _scheme_bounds(self, delta: float, *, need_lower: bool) -> tuple[float, float]:
        """``(lower, upper)`` epsilon of the run under its (non-Poisson) data path."""
        self._sync()
        if not self.history:
            return (0.0, 0.0)
        if self._non_private:
            return (math.inf, math.inf)
        assert self._path is not None
        return scheme_bounds(self._path, self.history, self._passes, delta, need_lower=need_lower)

    def _sync(self) -> PrivacyAccountant:
        """The ledger of the current ``history`` (rebuilt if it was reassigned)."""
        if self.history != self._synced:
            history = resolve_history(self._path, check_history(self.history, "history"))
            ledger, non_private = build_ledger(self._options, history)
            self.history = history
            self._ledger, self._non_private, self._synced = ledger, non_private, list(history)
        return self._ledger


def register(*, force: bool = False) -> None:
    """Register :class:`OpacusAccountant` with Opacus under :data:`MECHANISM`.

    Done on import of this module.  Registering again is a no-op; if another class
    holds the name, Opacus' ``register_accountant`` raises unless ``force``.

    Parameters
    ----------
    force : bool, default False
        Replace another class registered under :data:`MECHANISM`.

    Examples
    --------
    >>> from opacus.accountants import create_accountant
    >>> register()                      # already done on import: a no-op
    >>> type(create_accountant(mechanism=MECHANISM)).__name__
    'OpacusAccountant'
    """
    try:
        register_accountant(MECHANISM, OpacusAccountant, force=force)
    except ValueError:
        if not isinstance(create_accountant(mechanism=MECHANISM), OpacusAccountant):
            raise


register()
