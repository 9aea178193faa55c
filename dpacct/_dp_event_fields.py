"""Reading the fields of a dp_accounting ``DpEvent``, and the replace-one sensitivity.

Private helpers of :mod:`dpacct.dp_accounting` and :mod:`dpacct._dp_accounting_mixtures`.
dp_accounting's events are ``attrs`` classes that check nothing, so every field dpacct
reads passes through one of the readers here, which raise a :class:`TypeError` (not a
number: ``None``, a string, a boolean, a complex number, an array of several values) or
a :class:`ValueError` (NaN, infinite, beyond the float range such as ``10**400``, out of
range) whose message names the field by its place in the tree (``event.events[1].count``)
and the allowed range.  Counts follow :func:`~dpacct.accountant.validation.check_count`,
the convention of every count in dpacct: an integer, or a float that is one (``2.0``).

The second half states how a ``REPLACE_ONE`` event's noise parameter is read
(:data:`REPLACE_ONE_SENSITIVITIES`, :func:`check_replace_one_sensitivity`,
:func:`convention_note`).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from dpacct.accountant.validation import MAX_COUNT, check_count, show_value

__all__ = [
    "MIN_NOISE",
    "REPLACE_ONE_SENSITIVITIES",
    "check_replace_one_sensitivity",
    "check_runs",
    "convention_note",
    "count_field",
    "is_infinite_field",
    "ledger_compose",
    "noise_field",
    "real_field",
    "real_sequence_field",
    "step_counts_field",
]


def _scalar(value: object) -> object:
    """A 0-d numpy array as the number it holds (anything else unchanged)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value.item()
    return value


def _as_float(name: str, value: object) -> float:
    """``value`` as a float: a real number that is not a boolean, within the float range."""
    value = _scalar(value)
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} "
                        f"{show_value(value)}")
    try:
        return float(value)
    except OverflowError:  # a Python int beyond the float range, e.g. 10**400
        raise ValueError(f"{name} must be a finite number within the float range (about "
                         f"1.8e308), got {show_value(value)}") from None


def real_field(
    event: Any, path: str, field: str, *, upper: float = math.inf, allow_inf: bool = False
) -> float:
    """The real field ``event.<field>`` as a float in ``[0, upper]``.

    Parameters
    ----------
    event : DpEvent
        The event.
    path : str
        Its place in the tree (``"event.events[1]"``), for the message.
    field : str
        The field's name.
    upper : float, default inf
        The largest value allowed.
    allow_inf : bool, default False
        Whether ``inf`` is allowed (only where the event defines it, e.g. the Poisson
        ``shape`` of ``RepeatAndSelectDpEvent``).

    Examples
    --------
    >>> class Ev:
    ...     noise_multiplier = 10**400
    >>> real_field(Ev(), "event", "noise_multiplier")
    Traceback (most recent call last):
    ...
    ValueError: event.noise_multiplier must be a finite number within the float range \
(about 1.8e308), got an integer with 401 digits
    """
    name = f"{path}.{field}"
    x = _as_float(name, getattr(event, field, None))
    if math.isnan(x) or x < 0 or x > upper or (math.isinf(x) and not allow_inf):
        top = ("inf]" if allow_inf else "inf)") if math.isinf(upper) else f"{upper:g}]"
        raise ValueError(f"{name} must lie in [0, {top}, got {x!r}")
    return x


#: the smallest positive noise scale (per unit of sensitivity) of a Gaussian-type event
#: that dpacct evaluates: below it ``1 / sigma**2`` leaves the float range, and the
#: epsilon (about ``1 / (2 sigma^2)``) exceeds 1e199 anyway
MIN_NOISE = 1e-100


def noise_field(event: Any, path: str, field: str) -> float:
    """A noise scale: 0 (no noise: the event is non-private) or in ``[1e-100, inf)``.

    Examples
    --------
    >>> class Ev:
    ...     noise_multiplier = 1e-300
    >>> noise_field(Ev(), "event", "noise_multiplier")
    Traceback (most recent call last):
    ...
    ValueError: event.noise_multiplier must be 0 (no noise) or at least 1e-100, got 1e-300
    """
    x = real_field(event, path, field)
    if 0.0 < x < MIN_NOISE:
        raise ValueError(f"{path}.{field} must be 0 (no noise) or at least 1e-100, got {x!r}")
    return x


def is_infinite_field(event: Any, field: str) -> bool:
    """Whether ``event.<field>`` is the real number ``+inf`` (no array comparison)."""
    value = _scalar(getattr(event, field, None))
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        return False
    try:
        return float(value) == math.inf
    except OverflowError:
        return False


def count_field(event: Any, path: str, field: str, *, allow_zero: bool = True) -> int:
    """The count field ``event.<field>``, read by :func:`check_count` (``2.0`` is 2)."""
    return check_count(_scalar(getattr(event, field, None)), f"{path}.{field}",
                       allow_zero=allow_zero)


def step_counts_field(event: Any, path: str) -> list[int]:
    """``SingleEpochTreeAggregationDpEvent.step_counts``: a count or a non-empty list
    (or 1-d array) of counts, each read by :func:`check_count`."""
    name = f"{path}.step_counts"
    raw = _scalar(event.step_counts)
    if isinstance(raw, np.ndarray):
        if raw.ndim != 1:
            raise ValueError(f"{name} must be a count or a 1-d list of counts, got an array "
                             f"of shape {raw.shape}")
        raw = raw.tolist()
    if isinstance(raw, list | tuple):
        if not raw:
            raise ValueError(f"{name} must be a count or a non-empty list of counts, got "
                             f"{show_value(raw)}")
        return [check_count(_scalar(c), f"{name}[{i}]", allow_zero=True)
                for i, c in enumerate(raw)]
    return [check_count(raw, name, allow_zero=True)]


def real_sequence_field(event: Any, path: str, field: str) -> list[float]:
    """A sequence-of-reals field (``sensitivities``, ``sampling_probs``) as finite floats;
    the ranges are checked by the mechanism it feeds."""
    name = f"{path}.{field}"
    raw = getattr(event, field, None)
    if isinstance(raw, np.ndarray):
        if raw.ndim != 1:
            raise ValueError(f"{name} must be a 1-d sequence of real numbers, got an array "
                             f"of shape {raw.shape}")
        raw = raw.tolist()
    if isinstance(raw, str | bytes) or not isinstance(raw, list | tuple):
        raise TypeError(f"{name} must be a list of real numbers, got {type(raw).__name__} "
                        f"{show_value(raw)}")
    out = [_as_float(f"{name}[{i}]", v) for i, v in enumerate(raw)]
    for i, x in enumerate(out):
        if not math.isfinite(x):
            raise ValueError(f"{name}[{i}] must be a finite number, got {x!r}")
    return out


def check_runs(parts: list, count: int, name: str, already: dict | None = None) -> None:
    """Refuse ``count`` repetitions of ``parts`` (``(mechanism, runs)`` pairs) that would
    take a mechanism past ``MAX_COUNT`` runs, with those ``already`` recorded: found when
    composed, not by a later query naming a ``counts[0]`` the user never passed.

    Examples
    --------
    >>> check_runs([("G", 2**40)], 2**40, "event.count")
    Traceback (most recent call last):
    ...
    ValueError: event.count=1099511627776 makes 1208925819614629174706176 runs of 'G', \
more than 2**63 - 1 (about 9.2e18)
    """
    for mech, runs in parts:
        total = runs * count + (already or {}).get(mech, 0)
        if total > MAX_COUNT:
            raise ValueError(
                f"{name}={count} makes {show_value(total)} runs of {mech!r}, more than "
                "2**63 - 1 (about 9.2e18)"
            )


def ledger_compose(ledger: Any, event: Any, count: int, self_composed: type) -> None:
    """Record ``count`` runs of ``event`` in dp_accounting's ledger (a ``DpEventBuilder``).

    The builder unrolls a ``SelfComposedDpEvent`` (the class ``self_composed``) and wants
    a Python ``int`` count >= 1; dpacct reads counts by :func:`check_count` (``2.0`` is 2,
    ``0`` records nothing), so the self-compositions are unrolled here, counts read.

    Examples
    --------
    >>> class Ledger:
    ...     def compose(self, event, count): print(event, count)
    >>> class Self:
    ...     event, count = "G", 3.0
    >>> ledger_compose(Ledger(), Self(), 2, Self)
    G 6
    """
    while isinstance(event, self_composed):
        count *= check_count(event.count, "event.count", allow_zero=True)
        event = event.event
    if count:
        ledger.compose(event, count)


# ------------------------------------------------------------ the replace-one reading
#: the readings of a ``REPLACE_ONE`` event's noise parameter that dpacct offers, by the
#: L2 (L1 for Laplace) distance between neighbouring sums, in units of the per-record
#: bound ``C`` the noise parameter is stated against
REPLACE_ONE_SENSITIVITIES = {
    2.0: "one record's clipped vector (norm <= C) swapped for another's moves the sum by "
    "up to 2 C (the triangle inequality, attained by opposite vectors); dpacct's default",
    1.0: "the two neighbouring sums are taken to differ by at most C, as dp_accounting's "
    "RDP accountant reads a GaussianDpEvent under REPLACE_ONE; half the physical swap",
}


def check_replace_one_sensitivity(value: object) -> float:
    """``replace_one_sensitivity``: 2 (default, the physical swap) or 1 (dp_accounting's
    reading); nothing else.

    Examples
    --------
    >>> check_replace_one_sensitivity(2), check_replace_one_sensitivity(1.0)
    (2.0, 1.0)
    >>> check_replace_one_sensitivity(0.5)
    Traceback (most recent call last):
    ...
    ValueError: replace_one_sensitivity must be 2 (a clipped record swapped for another, \
dpacct's default) or 1 (dp_accounting's reading), got 0.5
    """
    x = _as_float("replace_one_sensitivity", value)
    if x not in REPLACE_ONE_SENSITIVITIES:
        raise ValueError(
            "replace_one_sensitivity must be 2 (a clipped record swapped for another, "
            f"dpacct's default) or 1 (dp_accounting's reading), got {x!r}"
        )
    return x


def convention_note(sensitivity: float) -> str:
    """The paragraph a summary prints about the ``REPLACE_ONE`` reading in force.

    Examples
    --------
    >>> print(convention_note(2.0))  # doctest: +NORMALIZE_WHITESPACE
    REPLACE_ONE read with sensitivity 2 C: one record's clipped vector (norm <= C) swapped
    for another's moves the sum by up to 2 C (the triangle inequality, attained by
    opposite vectors); dpacct's default. GaussianDpEvent(s) is the Gaussian of noise
    multiplier s / 2 per unit shift (LaplaceDpEvent: b / 2), as dp_accounting's PLD
    accountant reads it. dp_accounting's RDP accountant (the one it has for
    SampledWithoutReplacementDpEvent) reads s against C, a far smaller epsilon for the
    same event; replace_one_sensitivity=1 gives that reading.
    """
    if sensitivity == 2.0:
        return (
            f"REPLACE_ONE read with sensitivity 2 C: {REPLACE_ONE_SENSITIVITIES[2.0]}. "
            "GaussianDpEvent(s) is the Gaussian of noise multiplier s / 2 per unit shift "
            "(LaplaceDpEvent: b / 2), as dp_accounting's PLD accountant reads it. "
            "dp_accounting's RDP accountant (the one it has for "
            "SampledWithoutReplacementDpEvent) reads s against C, a far smaller epsilon "
            "for the same event; replace_one_sensitivity=1 gives that reading."
        )
    return (
        "REPLACE_ONE read with sensitivity 1 C (chosen: replace_one_sensitivity=1): "
        f"{REPLACE_ONE_SENSITIVITIES[1.0]}. GaussianDpEvent(s) is the Gaussian of noise "
        "multiplier s per unit shift. Sound only if neighbouring sums really differ by at "
        "most C (e.g. vectors clipped to C / 2); for one record's clipped vector swapped "
        "for another's it is not: the default replace_one_sensitivity=2 is."
    )
