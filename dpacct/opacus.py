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
import numbers
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

from dpacct.accountant.ledger import BudgetExceededError, PrivacyAccountant
from dpacct.accountant.validation import check_count, check_delta, check_tol

__all__ = ["MECHANISM", "OpacusAccountant", "register"]

#: the name under which :class:`OpacusAccountant` is registered with Opacus
MECHANISM = "dpacct"

#: Opacus accountants whose ``history`` has the same meaning as ours (one
#: Poisson-subsampled Gaussian per step, as ``(noise_multiplier, sample_rate, steps)``):
#: their checkpoints can be loaded into an :class:`OpacusAccountant`
_COMPATIBLE_MECHANISMS = frozenset({MECHANISM, "rdp", "prv", "gdp"})


class OpacusAccountant(IAccountant):
    """Opacus ``IAccountant`` whose epsilon is dpacct's: sound, with a certified bracket.

    Each optimiser step is one Poisson-subsampled Gaussian mechanism (add/remove
    neighbours); the steps compose by dpacct's privacy-loss-distribution engine
    (connect-the-dots discretisation, Doroshenko et al. 2022; both neighbouring
    directions), so :meth:`get_epsilon` is an upper bound on the true epsilon, as
    Opacus' PRV accountant's upper end is, and typically tighter.

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
    ) -> None:
        super().__init__()
        self.history: list[tuple[float, float, int]] = []
        # the PrivacyAccountant validates the budget (both or neither, ranges)
        self._options: dict[str, Any] = {
            "budget_epsilon": budget_epsilon,
            "budget_delta": budget_delta,
            "tol": check_tol(tol),
        }
        self._ledger = PrivacyAccountant(**self._options)
        self._synced: list[tuple[float, float, int]] = []
        self._non_private = 0  # steps recorded with noise_multiplier == 0

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
            A parameter out of range or not a number (nothing recorded).
        BudgetExceededError
            With a budget, the step would exceed it (nothing recorded).
        """
        sigma, q = _check_step(noise_multiplier, sample_rate, "")
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
        """
        d = check_delta(delta)
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

        The hook records a step with the optimiser's *current* ``noise_multiplier``
        (so noise schedulers are followed) and sampling rate ``sample_rate`` times the
        number of accumulated micro-batches (virtual steps of
        ``BatchMemoryManager``: one logical step over several Poisson batches).

        Parameters
        ----------
        sample_rate : float
            Expected Poisson sampling rate of one micro-batch, in (0, 1].
        """
        _, q = _check_step(1.0, sample_rate, "")

        def hook(optimizer: Any) -> None:
            self.step(
                noise_multiplier=optimizer.noise_multiplier,
                sample_rate=q * optimizer.accumulated_iterations,
            )

        return hook

    def state_dict(self, destination: Any = None) -> Any:
        """The accountant's state for a checkpoint: ``history`` and ``mechanism``.

        The layout is Opacus' (``PrivacyEngine.save_checkpoint`` stores it); the
        budget and ``tol`` are configuration, not state, and are not saved.

        Parameters
        ----------
        destination : mutable mapping, optional
            Where to write the state (as Opacus passes it); None: a new ``OrderedDict``.
        """
        if destination is None:
            destination = OrderedDict()
        destination["history"] = [tuple(entry) for entry in self.history]
        destination["mechanism"] = self.mechanism()
        return destination

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore ``history`` from :meth:`state_dict` output, validating it first.

        Checkpoints of Opacus' ``rdp``, ``prv`` and ``gdp`` accountants are accepted
        too: their history records the same steps.

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
        if not isinstance(state_dict, Mapping) or not state_dict:
            raise ValueError(
                "state_dict is empty or not a mapping; cannot be loaded into the dpacct "
                f"accountant (got {type(state_dict).__name__})"
            )
        for key in ("history", "mechanism"):
            if key not in state_dict:
                raise ValueError(f"state_dict has no key {key!r}; cannot be loaded")
        mechanism = state_dict["mechanism"]
        if mechanism not in _COMPATIBLE_MECHANISMS:
            raise ValueError(
                f"state_dict of mechanism {mechanism!r} cannot be loaded into the dpacct "
                f"accountant (accepted: {sorted(_COMPATIBLE_MECHANISMS)})"
            )
        history = _check_history(state_dict["history"], "state_dict['history']")
        ledger, non_private = self._build(history)
        self.history = history
        self._ledger, self._non_private, self._synced = ledger, non_private, list(history)

    # ------------------------------------------------------------ dpacct extras
    def epsilon_bounds(self, delta: float) -> tuple[float, float]:
        """``(lower, upper)`` bracket of the true epsilon spent so far (dpacct's PLD).

        Parameters
        ----------
        delta : float
            Target delta, in (0, 1).
        """
        d = check_delta(delta)
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
        ledger = self._sync()
        if self._non_private:
            return 1.0
        return float(ledger.delta(epsilon))

    @property
    def ledger(self) -> PrivacyAccountant:
        """The dpacct :class:`~dpacct.accountant.PrivacyAccountant` of the history.

        It holds the private steps (``noise_multiplier > 0``); save it with its
        ``save`` method for a checksummed JSON record of the run (``save(path, key=...)``
        signs it; see :meth:`~dpacct.accountant.PrivacyAccountant.save`).
        """
        return self._sync()

    def __repr__(self) -> str:
        return f"OpacusAccountant(steps={len(self)}, entries={len(self.history)})"

    # ------------------------------------------------------------ internals
    def _sync(self) -> PrivacyAccountant:
        """The ledger of the current ``history`` (rebuilt if it was reassigned)."""
        if self.history != self._synced:
            history = _check_history(self.history, "history")
            ledger, non_private = self._build(history)
            self.history = history
            self._ledger, self._non_private, self._synced = ledger, non_private, list(history)
        return self._ledger

    def _build(self, history: list[tuple[float, float, int]]) -> tuple[PrivacyAccountant, int]:
        ledger = PrivacyAccountant(**self._options)
        non_private = 0
        for sigma, q, n in history:
            if sigma > 0.0:
                ledger.step(noise_multiplier=sigma, sample_rate=q, count=n)
            else:
                non_private += n
        if non_private and ledger.budget is not None:
            raise BudgetExceededError(
                f"budget exceeded: the history holds {non_private} step(s) with "
                "noise_multiplier=0 (not differentially private)",
                epsilon=math.inf,
                budget_epsilon=ledger.budget[0],
                budget_delta=ledger.budget[1],
            )
        return ledger, non_private


def _check_step(noise_multiplier: object, sample_rate: object, where: str) -> tuple[float, float]:
    """Validate one step's parameters; ``where`` prefixes the parameter names."""
    sigma = _real(f"{where}noise_multiplier", noise_multiplier)
    if not (math.isfinite(sigma) and sigma >= 0.0):
        raise ValueError(f"{where}noise_multiplier must lie in [0, inf), got {sigma!r}")
    q = _real(f"{where}sample_rate", sample_rate)
    if not 0.0 < q <= 1.0:
        raise ValueError(f"{where}sample_rate must lie in (0, 1], got {q!r}")
    return sigma, q


def _real(name: str, value: object) -> float:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a real number, got bool {value!r}")
    if isinstance(value, numbers.Real):
        return float(value)
    item = getattr(value, "item", None)  # numpy / torch scalars
    if callable(item) and getattr(value, "ndim", 1) == 0:
        return _real(name, item())
    raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")


def _check_history(history: object, name: str) -> list[tuple[float, float, int]]:
    """Opacus' history as a validated list of ``(sigma, q, steps)`` tuples."""
    if isinstance(history, str | bytes) or not isinstance(history, list | tuple):
        raise ValueError(
            f"{name} must be a list of (noise_multiplier, sample_rate, steps), "
            f"got {type(history).__name__}"
        )
    out: list[tuple[float, float, int]] = []
    for i, entry in enumerate(history):
        if not isinstance(entry, list | tuple) or len(entry) != 3:
            raise ValueError(
                f"{name}[{i}] must be a (noise_multiplier, sample_rate, steps) triple, "
                f"got {entry!r}"
            )
        sigma, q = _check_step(entry[0], entry[1], f"{name}[{i}].")
        out.append((sigma, q, check_count(entry[2], f"{name}[{i}].steps")))
    return out


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
