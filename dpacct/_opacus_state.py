"""The Opacus accountant's state changes, each validated before anything changes.

Private helpers of :class:`dpacct.opacus.OpacusAccountant` (which keeps the state):

* :func:`adopted_path`: the data path of a data loader -- identified
  (:func:`~dpacct._opacus_data_path.identify`), or, under ``assume_poisson``, Poisson
  sampling at ``1 / len(data_loader)``, marked as assumed -- and :func:`check_adopted`,
  which refuses a new path that a budget cannot enforce or that differs from the one
  the recorded steps used;
* :func:`state_history`: the history of a checkpoint's accountant state, checked
  (a mapping with ``history`` and ``mechanism``, a compatible mechanism, valid entries);
* :func:`build_ledger`: the dpacct :class:`~dpacct.accountant.PrivacyAccountant` of a
  history, and how many of its steps are non-private.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

from dpacct._opacus_data_path import (
    POISSON,
    DataPath,
    UnaccountedSamplerError,
    accounted_alike,
    identify,
)
from dpacct._opacus_rates import check_history
from dpacct.accountant.ledger import BudgetExceededError, PrivacyAccountant

__all__ = ["adopted_path", "build_ledger", "check_adopted", "state_history"]


def adopted_path(
    data_loader: Any, poisson_sampling: bool, replaced: bool, assume_poisson: bool
) -> DataPath:
    """The data path of ``data_loader``: identified, or assumed Poisson sampling.

    Raises
    ------
    UnaccountedSamplerError
        The sampler has no proved guarantee and ``assume_poisson`` is False.
    """
    try:
        return identify(data_loader, poisson_sampling=poisson_sampling, replaced=replaced)
    except UnaccountedSamplerError:
        if not assume_poisson:
            raise
    steps = len(data_loader)
    batch_sampler = getattr(data_loader, "batch_sampler", None)
    found = getattr(batch_sampler, "sampler", batch_sampler)
    return DataPath(POISSON, type(found).__name__, steps, 1.0 / steps, None, True)


def check_adopted(path: DataPath, old: DataPath | None, recorded: bool, budget: bool) -> None:
    """Refuse ``path`` when a ``budget`` is set and it is not Poisson sampling, or when
    steps were ``recorded`` under an ``old`` path that it does not account alike."""
    if path.scheme != POISSON and budget:
        raise ValueError(
            f"the data path is {path.describe()}: a privacy budget (budget_epsilon, "
            "budget_delta) is enforced for Poisson sampling only; check "
            "get_epsilon() after each epoch instead, or use Poisson sampling"
        )
    if recorded and old is not None and not accounted_alike(old, path):
        raise ValueError(
            f"the data path changed during the run: the recorded steps used "
            f"{old.describe()}, the new loader has {path.describe()}; a run whose "
            "data path changes is not accounted (use a new accountant for the new "
            "loader and compose the two ledgers)"
        )


def state_history(
    state_dict: Mapping[str, Any], accepted: Collection[str]
) -> list[tuple[float, float, int]]:
    """The checked ``history`` of a checkpoint's accountant state whose ``mechanism`` is
    one of ``accepted`` (ValueError naming what is wrong)."""
    if not isinstance(state_dict, Mapping) or not state_dict:
        raise ValueError(
            "state_dict is empty or not a mapping; cannot be loaded into the dpacct "
            f"accountant (got {type(state_dict).__name__})"
        )
    for key in ("history", "mechanism"):
        if key not in state_dict:
            raise ValueError(f"state_dict has no key {key!r}; cannot be loaded")
    mechanism = state_dict["mechanism"]
    if mechanism not in accepted:
        raise ValueError(
            f"state_dict of mechanism {mechanism!r} cannot be loaded into the dpacct "
            f"accountant (accepted: {sorted(accepted)})"
        )
    return check_history(state_dict["history"], "state_dict['history']")


def build_ledger(
    options: Mapping[str, Any], history: list[tuple[float, float, int]]
) -> tuple[PrivacyAccountant, int]:
    """The ledger (a :class:`PrivacyAccountant` built with ``options``) of the private
    steps of ``history``, and the number of its non-private steps (noise 0), which a
    budget refuses (:class:`BudgetExceededError`)."""
    ledger = PrivacyAccountant(**options)
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
