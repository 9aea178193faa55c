"""dp_accounting's mixture events as dpacct mechanisms (used by :mod:`dpacct.dp_accounting`).

* ``MixtureOfGaussiansDpEvent(standard_deviation, sensitivities, sampling_probs)`` ->
  :class:`~dpacct.accountant.MixtureOfGaussiansMechanism` (add/remove; both directions).
* ``TruncatedSubsampledGaussianDpEvent(dataset_size, sampling_probability,
  truncated_batch_size, noise_multiplier)`` ->
  :class:`~dpacct.accountant.TruncatedPoissonGaussianMechanism` (add/remove).

Both are refused under ``REPLACE_ONE``: the pairs proved for them are add/remove pairs.
Events are recognised by class name, so this module never imports dp_accounting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._dp_event_fields import count_field, noise_field, real_field, real_sequence_field
from .accountant.families.mixture_gaussian import MixtureOfGaussiansMechanism
from .accountant.mechanism import Mechanism
from .accountant.transformers.truncated_poisson import TruncatedPoissonGaussianMechanism

__all__ = ["convert_mixture_event", "with_mixture_events"]

_NAMES = ("MixtureOfGaussiansDpEvent", "TruncatedSubsampledGaussianDpEvent")


#: the mixture mechanism's parameter names -> the event's field names (for messages)
_FIELDS = {"probabilities": "sampling_probs", "sensitivities": "sensitivities",
           "sigma": "standard_deviation"}


def convert_mixture_event(
    event: Any, replace: bool, path: str, unsupported: Callable[[Any, str, str], Exception]
) -> tuple[list[tuple[Mechanism, int]], bool] | None:
    """``(parts, non_private)`` for a mixture event, or ``None`` for any other event.

    Parameters
    ----------
    event : DpEvent
        The event.
    replace : bool
        True under ``REPLACE_ONE`` (refused), False under ``ADD_OR_REMOVE_ONE``.
    path : str
        Where the event sits in its tree (for messages).
    unsupported : callable
        ``(event, path, why) -> Exception``: the caller's refusal.

    Returns
    -------
    tuple or None
        The mechanisms with counts and whether the event is non-private.

    Examples
    --------
    >>> class MixtureOfGaussiansDpEvent:   # a stand-in with dp_accounting's fields
    ...     standard_deviation, sensitivities, sampling_probs = 1.0, [0, 1], [0.9, 0.1]
    >>> parts, non_private = convert_mixture_event(
    ...     MixtureOfGaussiansDpEvent(), False, "event", lambda e, p, w: ValueError(w))
    >>> parts[0][0].sensitivities, parts[0][1], non_private
    ((0.0, 1.0), 1, False)
    """
    name = type(event).__name__
    if name not in _NAMES:
        return None
    if replace:
        raise unsupported(
            event,
            path,
            "its dominating pair is proved for add/remove neighbours only; use "
            "neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE",
        )
    if name == "MixtureOfGaussiansDpEvent":
        s = noise_field(event, path, "standard_deviation")
        sens = real_sequence_field(event, path, "sensitivities")
        probs = real_sequence_field(event, path, "sampling_probs")
        if len(sens) == len(probs) and all(c == 0.0 for c in sens):
            return [], False  # the sensitivity is always 0: nothing is revealed
        if s == 0.0:
            return [], True
        try:
            return [(MixtureOfGaussiansMechanism(s, sens, probs), 1)], False
        except (TypeError, ValueError) as exc:
            msg = str(exc)
            named = [f for p, f in _FIELDS.items() if msg.startswith(p)] or ["fields"]
            raise type(exc)(f"{path}.{named[0]}: {msg}") from exc
    n = count_field(event, path, "dataset_size")
    q = real_field(event, path, "sampling_probability", upper=1.0)
    b = count_field(event, path, "truncated_batch_size")
    s = noise_field(event, path, "noise_multiplier")
    if n == 0 or q == 0.0 or b == 0:
        return [], False  # no record is ever used
    if s == 0.0:
        return [], True
    return [(TruncatedPoissonGaussianMechanism(s, q, n, b), 1)], False


def with_mixture_events(convert: Callable, converted: Callable, unsupported: Callable) -> Callable:
    """Wrap the integration's ``convert(event, relation, path)`` to handle the mixture events.

    The wrapper answers the two mixture events (:func:`convert_mixture_event`) and hands
    every other event to ``convert``; the integration rebinds its converter to it, so
    the events nested in composed or self-composed events reach it too.

    Parameters
    ----------
    convert : callable
        ``(event, relation, path) -> converted``, the integration's converter.
    converted : callable
        ``(parts, non_private) -> converted``, its result type.
    unsupported : callable
        ``(event, path, why) -> Exception``, its refusal.

    Returns
    -------
    callable
        The wrapped converter.

    Examples
    --------
    >>> wrapped = with_mixture_events(lambda e, r, p: "other", tuple, None)
    >>> wrapped(object(), None, "event")
    'other'
    """

    def wrapped(event: Any, relation: Any, path: str):
        replace = getattr(relation, "name", None) == "REPLACE_ONE"
        mixture = convert_mixture_event(event, replace, path, unsupported)
        if mixture is None:
            return convert(event, relation, path)
        return converted(*mixture)

    wrapped.__wrapped__ = convert  # type: ignore[attr-defined]
    wrapped.__doc__ = convert.__doc__
    return wrapped
