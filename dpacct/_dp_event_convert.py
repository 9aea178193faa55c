"""dp_accounting's ``DpEvent`` trees as dpacct mechanisms: the conversion rules.

Private helpers of :mod:`dpacct.dp_accounting` (which documents the rules, in its module
docstring, and offers them as :func:`~dpacct.dp_accounting.from_dp_event` and
:class:`~dpacct.dp_accounting.DpEventAccountant`): :func:`convert` validates one event
tree and turns it into ``(mechanism, count)`` parts without recording anything,
:func:`as_mechanism` composes the parts.  The two public classes defined here,
:class:`UnsupportedEventError` and :class:`ReplaceOneZCDPMechanism`, belong to
:mod:`dpacct.dp_accounting` (their ``__module__`` says so) and are imported from there.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from dpacct.accountant.extras import missing_extra

try:
    import dp_accounting
    from dp_accounting import dp_event
    from dp_accounting.privacy_accountant import NeighboringRelation
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("dpacct.dp_accounting", "dp_accounting", exc) from exc

from dpacct import _dp_event_mapping as _mapping
from dpacct._dp_accounting_mixtures import with_mixture_events
from dpacct._dp_event_fields import (
    MIN_NOISE,
    check_runs,
    count_field,
    is_infinite_field,
    noise_field,
    real_field,
    step_counts_field,
)
from dpacct.accountant import (
    REPLACE_ONE,
    Mechanism,
    compose,
    poisson_subsample,
    subsample_without_replacement,
)
from dpacct.accountant._rounding import sum_up
from dpacct.accountant.transformers.repeat_select import repeat_and_select
from dpacct.accountant.validation import show_value
from dpacct.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    RandomizedResponse,
    ReplaceOneGaussianMechanism,
    ReplaceOneLaplaceMechanism,
    ZCDPMechanism,
)
from dpacct.mechanisms.primitives._discrete_laplace_law import discrete_laplace_law
from dpacct.mechanisms.primitives.laplace_fold import LaplaceComposition

__all__ = [
    "REPLACE_ONE_LABEL",
    "Converted",
    "ReplaceOneZCDPMechanism",
    "UnsupportedEventError",
    "as_mechanism",
    "check_relation",
    "convert",
    "reading",
]

#: dpacct's label of the replace-one relation (that of sampling without replacement)
REPLACE_ONE_LABEL = REPLACE_ONE

_ADD_REMOVE = NeighboringRelation.ADD_OR_REMOVE_ONE
_REPLACE = NeighboringRelation.REPLACE_ONE


class UnsupportedEventError(dp_accounting.UnsupportedEventError, ValueError):
    """A ``DpEvent`` that dpacct cannot account (soundly) under the chosen relation.

    Also a ``dp_accounting.UnsupportedEventError`` (what dp_accounting's accountants
    raise) and a :class:`ValueError`.

    Parameters
    ----------
    message : str
        The explanation shown to the user.
    event : DpEvent
        The offending (sub)event.
    path : str
        Where it sits in the tree, e.g. ``"event.events[2].event"``.

    Attributes
    ----------
    event, path
        The parameters of the same names.
    """

    def __init__(self, message: str, *, event: Any, path: str) -> None:
        super().__init__(message)
        self.event = event
        self.path = path


UnsupportedEventError.__module__ = "dpacct.dp_accounting"


# --------------------------------------------------------------- replace-one mechanisms
@dataclass(frozen=True, repr=False)
class ReplaceOneZCDPMechanism(ZCDPMechanism):
    """A ``rho``-zCDP (or ``(xi, rho)``-zCDP) guarantee stated for the replace-one relation.

    Parameters
    ----------
    rho : float
        The zCDP parameter, > 0.
    xi : float, default 0.0
        The additive constant of ``(xi, rho)``-zCDP, >= 0.

    Examples
    --------
    >>> ReplaceOneZCDPMechanism(rho=0.5).rdp(2.0)
    1.0
    >>> ReplaceOneZCDPMechanism(rho=0.5, xi=0.25).rdp(2.0)
    1.25
    """

    neighbouring = REPLACE_ONE_LABEL


ReplaceOneZCDPMechanism.__module__ = "dpacct.dp_accounting"


# --------------------------------------------------------------------- conversion
@dataclass
class Converted:
    """An event tree as dpacct parts: ``(mechanism, count)`` pairs, plus a flag set by a
    non-private event (infinite epsilon)."""

    parts: list[tuple[Mechanism, int]]
    non_private: bool = False

    def times(self, count: int) -> Converted:
        return Converted([(m, c * count) for m, c in self.parts], self.non_private)


def check_relation(value: object) -> NeighboringRelation:
    if not isinstance(value, NeighboringRelation):
        raise TypeError(
            "neighboring_relation must be a dp_accounting.NeighboringRelation, got "
            f"{type(value).__name__} {show_value(value)}"
        )
    if value not in (_ADD_REMOVE, _REPLACE):
        raise ValueError(
            f"neighboring_relation={value} is not supported by dpacct; use "
            "NeighboringRelation.ADD_OR_REMOVE_ONE or NeighboringRelation.REPLACE_ONE"
        )
    return value


def _unsupported(event: Any, path: str, why: str) -> UnsupportedEventError:
    return UnsupportedEventError(
        f"{type(event).__name__} at {path} is not supported: {why} (event: {event!r})",
        event=event,
        path=path,
    )


def _nonneg(event: Any, path: str, field: str, *, upper: float = math.inf) -> float:
    return real_field(event, path, field, upper=upper)


def _count(event: Any, path: str, field: str, *, allow_zero: bool = True) -> int:
    return count_field(event, path, field, allow_zero=allow_zero)


#: how a REPLACE_ONE event's noise parameter is read (``replace_one_sensitivity``): set
#: by :func:`from_dp_event` and :class:`DpEventAccountant` around each conversion
_SENSITIVITY: contextvars.ContextVar[float] = contextvars.ContextVar(
    "replace_one_sensitivity", default=2.0
)


@contextmanager
def reading(sensitivity: float) -> Iterator[None]:
    token = _SENSITIVITY.set(sensitivity)
    try:
        yield
    finally:
        _SENSITIVITY.reset(token)


#: the largest noise scale of a discrete Gaussian event dpacct evaluates (its law's
#: tails are summed in floats; beyond it sigma**2 leaves the float range)
_MAX_DISCRETE_SIGMA = 1e100
#: the smallest discrete-Laplace parameter ``a`` (noise ``~ exp(-a |x|)``) evaluated: the
#: privacy-loss grid cannot resolve the losses ``+-a k`` far below it
_MIN_DISCRETE_LAPLACE = 1e-50


# long function: one dispatch branch per dp_accounting event class, each a few lines; the
# events newer than 0.6 are already in _convert_more
def convert(event: Any, relation: NeighboringRelation, path: str) -> Converted:
    """Validate and convert one event tree (nothing is recorded anywhere)."""
    replace = relation is _REPLACE
    if not isinstance(event, dp_event.DpEvent):
        raise TypeError(f"{path} must be a dp_accounting DpEvent, got {type(event).__name__}")
    if isinstance(event, dp_event.NoOpDpEvent):
        return Converted([])
    if isinstance(event, dp_event.NonPrivateDpEvent):
        return Converted([], non_private=True)
    if isinstance(event, dp_event.SelfComposedDpEvent):
        count = _count(event, path, "count")
        inner = convert(event.event, relation, f"{path}.event")
        check_runs(inner.parts, count, f"{path}.count")
        return inner.times(count) if count else Converted([])
    if isinstance(event, dp_event.ComposedDpEvent):
        events = event.events
        if isinstance(events, str | bytes) or not hasattr(events, "__iter__"):
            raise TypeError(f"{path}.events must be a list of DpEvents, got {events!r}")
        out = Converted([])
        for i, sub in enumerate(events):
            part = convert(sub, relation, f"{path}.events[{i}]")
            out.parts.extend(part.parts)
            out.non_private |= part.non_private
        return out
    if isinstance(event, dp_event.GaussianDpEvent):
        s = noise_field(event, path, "noise_multiplier")
        if s == 0.0:
            return Converted([], non_private=True)
        # replace-one: the sum moves by up to 2 C (default), so half the noise per unit
        # sensitivity; replace_one_sensitivity=1 reads it against C, as dp_accounting's RDP
        k = _SENSITIVITY.get()
        mech = ReplaceOneGaussianMechanism(sigma=s / k) if replace else GaussianMechanism(sigma=s)
        return Converted([(mech, 1)])
    if isinstance(event, dp_event.LaplaceDpEvent):
        b = _nonneg(event, path, "noise_multiplier")
        if b == 0.0:
            return Converted([], non_private=True)
        k = _SENSITIVITY.get()
        mech = ReplaceOneLaplaceMechanism(b=b / k) if replace else LaplaceMechanism(b=b)
        return Converted([(mech, 1)])
    if isinstance(event, dp_event.DiscreteLaplaceDpEvent):
        a = _nonneg(event, path, "noise_parameter")
        if 0.0 < a < _MIN_DISCRETE_LAPLACE:
            raise ValueError(
                f"{path}.noise_parameter must be 0 (no noise) or at least 1e-50 (a noise "
                f"scale 1 / a of at most 1e50, what dpacct's grid resolves), got {a!r}"
            )
        sens = _count(event, path, "sensitivity")
        if sens == 0:
            return Converted([])
        if a == 0.0:
            return Converted([], non_private=True)
        shift = sens * (2 if replace and _SENSITIVITY.get() == 2.0 else 1)
        if not math.isfinite(a * shift):
            raise ValueError(
                f"{path}.noise_parameter * shift (the pure epsilon a * {shift}) must be "
                f"finite, got {path}.noise_parameter={a!r}"
            )
        # pmf ~ exp(-a |x|): dpacct's scale t has pmf ~ exp(-|x| / t); shift k (2k replace)
        if replace and shift == sens:  # replace_one_sensitivity=1: the shift k itself
            law = discrete_laplace_law(1.0 / a, sens)
            name = f"discrete Laplace scale={1.0 / a!r} shift={sens}"
            mech = Mechanism.from_loss_laws(law, name=name, neighbouring=REPLACE_ONE)
            return Converted([(mech, 1)])
        return Converted([(_mapping.discrete_laplace(a, sens, replace), 1)])
    if isinstance(event, dp_event.RandomizedResponseDpEvent):
        r = _nonneg(event, path, "noise_parameter", upper=1.0)
        k = _count(event, path, "num_buckets", allow_zero=False)
        if not replace:
            raise _unsupported(
                event,
                path,
                "randomized response is a replace-one guarantee on one input value; "
                "account it with neighboring_relation=NeighboringRelation.REPLACE_ONE",
            )
        if k == 1 or r == 1.0:  # the output does not depend on the input
            return Converted([])
        # dp_accounting: "with probability r answer uniformly among all k values"; dpacct:
        # "the truth with probability p": p = 1 - r + r / k (mechanisms.randomized_response)
        p = 1.0 - r * (k - 1) / k
        if p >= 1.0:  # r = 0, or so small that p rounds to 1: epsilon inf is sound
            return Converted([], non_private=True)
        return Converted([(RandomizedResponse(p=p, k=k), 1)])
    if isinstance(event, dp_event.ZCDpEvent):
        if is_infinite_field(event, "rho"):  # JAX Privacy's zCDP event at sigma = 0
            return Converted([], non_private=True)
        rho = _nonneg(event, path, "rho")
        xi = _nonneg(event, path, "xi")
        mech = _mapping.zcdp(rho, xi, replace, ReplaceOneZCDPMechanism)
        return Converted([] if mech is None else [(mech, 1)])
    if isinstance(event, dp_event.PoissonSampledDpEvent):
        q = _nonneg(event, path, "sampling_probability", upper=1.0)
        if replace:
            raise _unsupported(
                event,
                path,
                "dpacct accounts Poisson subsampling under ADD_OR_REMOVE_ONE only; use "
                "neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE",
            )
        inner = convert(event.event, relation, f"{path}.event")
        if q == 0.0 or (not inner.parts and not inner.non_private):
            return Converted([])
        if inner.non_private:
            raise _unsupported(event, path, "a Poisson-subsampled non-private event")
        return Converted([(poisson_subsample(as_mechanism(inner.parts, relation), q), 1)])
    if isinstance(event, dp_event.SampledWithoutReplacementDpEvent):
        n = _count(event, path, "source_dataset_size", allow_zero=False)
        m = _count(event, path, "sample_size")
        if m > n:
            raise ValueError(f"{path}.sample_size={m} exceeds {path}.source_dataset_size={n}")
        if not replace:
            raise _unsupported(
                event,
                path,
                "sampling without replacement is defined under REPLACE_ONE (a fixed batch "
                "size presumes a fixed dataset size); use "
                "neighboring_relation=NeighboringRelation.REPLACE_ONE",
            )
        inner = convert(event.event, relation, f"{path}.event")
        if m == 0 or (not inner.parts and not inner.non_private):
            return Converted([])
        if inner.non_private:
            raise _unsupported(event, path, "a subsampled non-private event")
        base = as_mechanism(inner.parts, relation)
        return Converted([(subsample_without_replacement(base, m / n), 1)])
    return _convert_more(event, relation, path)


def _is(event: Any, name: str) -> bool:
    """``event`` is dp_accounting's class ``name``, or (for a class the installed version
    lacks) an event of a class of that name."""
    cls = getattr(dp_event, name, None)
    return isinstance(event, cls) if cls is not None else type(event).__name__ == name


def _convert_more(event: Any, relation: NeighboringRelation, path: str) -> Converted:
    """Tree aggregation, repeat-and-select and the events newer than dp_accounting 0.6."""
    replace = relation is _REPLACE
    if _is(event, "SingleEpochTreeAggregationDpEvent"):
        s = noise_field(event, path, "noise_multiplier")
        depth = _mapping.tree_depth(step_counts_field(event, path))
        if depth == 0:
            return Converted([])
        if s == 0.0:
            return Converted([], non_private=True)
        if replace and _SENSITIVITY.get() == 1.0:
            return Converted([(ReplaceOneGaussianMechanism(sigma=s / math.sqrt(depth)), 1)])
        return Converted([(_mapping.tree_aggregation(s, depth, replace), 1)])
    if _is(event, "RepeatAndSelectDpEvent"):
        mean = _nonneg(event, path, "mean")
        shape = real_field(event, path, "shape", allow_inf=True)  # inf: Poisson
        if mean < 1.0:
            raise ValueError(f"{path}.mean must be >= 1 (the mean number of runs), got {mean!r}")
        inner = convert(event.event, relation, f"{path}.event")
        if inner.non_private or not inner.parts:
            return inner
        base = as_mechanism(inner.parts, relation)
        if not base.has_rdp:
            raise _unsupported(
                event,
                path,
                f"the repeated event has no Renyi-DP curve ({base!r}), which the "
                "Papernot & Steinke 2022 bound needs",
            )
        return Converted([(repeat_and_select(base, mean, shape), 1)])
    if _is(event, "EpsilonDeltaDpEvent"):
        inf = is_infinite_field(event, "epsilon")  # no guarantee at all
        eps = math.inf if inf else _nonneg(event, path, "epsilon")
        delta = _nonneg(event, path, "delta", upper=1.0)
        if math.isinf(eps) or delta == 1.0:
            return Converted([], non_private=True)
        mech = _mapping.epsilon_delta(eps, delta, replace)
        return Converted([] if mech is None else [(mech, 1)])
    if _is(event, "DiscreteGaussianDpEvent"):
        sigma = real_field(event, path, "sigma", upper=_MAX_DISCRETE_SIGMA)
        sens = real_field(event, path, "sensitivity", upper=_MAX_DISCRETE_SIGMA)
        if sigma > 0.0 and 0.0 < sens < sigma * MIN_NOISE:
            raise ValueError(
                f"{path}.sensitivity / {path}.sigma must be 0 or at least 1e-100 (else "
                f"Delta^2 / (2 sigma^2) underflows), got {sens!r} / {sigma!r}"
            )
        dim = None if getattr(event, "dimension", None) is None else _count(
            event, path, "dimension", allow_zero=False
        )
        if sens > 0.0 and sigma < sens / _MAX_DISCRETE_SIGMA:
            # sigma = 0, or so small that Delta^2 / (2 sigma^2) leaves the float range:
            # epsilon = inf is a sound answer (the noise is almost surely 0)
            return Converted([], non_private=True)
        if replace and _SENSITIVITY.get() == 1.0:
            sens = sens / 2  # read against 1 C: the mapping doubles it under REPLACE_ONE
        mech = _mapping.discrete_gaussian(sigma, sens, dim, replace, ReplaceOneZCDPMechanism)
        return Converted([] if mech is None else [(mech, 1)])
    for name in ("ExponentialMechanismDpEvent", "PermuteAndFlipDpEvent"):
        if _is(event, name):
            eps = _nonneg(event, path, "epsilon")
            mech = _mapping.pure_selection(eps, name, replace)
            return Converted([] if mech is None else [(mech, 1)])
    why = _mapping.REFUSED.get(type(event).__name__, "dpacct has no mechanism for it")
    raise _unsupported(event, path, why)


# the mixture events (MixtureOfGaussians, TruncatedSubsampledGaussian): issue 23
convert = with_mixture_events(convert, Converted, _unsupported)


def _merge_gaussians(
    parts: list[tuple[Mechanism, int]], relation: NeighboringRelation
) -> list[tuple[Mechanism, int]]:
    """Replace-one Gaussians in closed form, as compose does for add/remove ones: ``k_i``
    runs at ``sigma_i`` are one with ``sigma^-2 = sum k_i sigma_i^-2`` (DRS 2019, Cor. 3.3)."""
    if relation is not _REPLACE:
        return parts
    merges = [getattr(m, "replace_one_closed_form", None) == "gaussian" for m, _ in parts]
    gauss = [p for p, ok in zip(parts, merges, strict=True) if ok]
    if len(gauss) == 0 or (len(gauss) == 1 and gauss[0][1] == 1):
        return parts
    precision = math.fsum(c / m.sigma**2 for m, c in gauss)  # type: ignore[attr-defined]
    rest = [p for p, ok in zip(parts, merges, strict=True) if not ok]
    return [(ReplaceOneGaussianMechanism(sigma=1.0 / math.sqrt(precision)), 1), *rest]


def _merge_zcdp(parts: list[tuple[Mechanism, int]]) -> list[tuple[Mechanism, int]]:
    """zCDP guarantees alone (one class, so one relation) as one: ``k_i`` runs of
    ``(xi_i, rho_i)``-zCDP have the Renyi curve ``sum k_i (xi_i + rho_i alpha)`` (Renyi
    DP composes additively, Mironov 2017, Proposition 1), which is ``(sum k_i xi_i,
    sum k_i rho_i)``-zCDP; both sums exact, rounded up (a larger rho or xi is still a
    guarantee).  The one mechanism is answered by the exact optimum over all real orders
    (:func:`~dpacct.mechanisms.zcdp_epsilon_tight`), the composition by the grid of
    orders: the same bound, never looser."""
    kinds = {type(m) for m, _ in parts}
    if len(kinds) != 1 or kinds.pop() not in (ZCDPMechanism, ReplaceOneZCDPMechanism):
        return parts
    if len(parts) == 1 and parts[0][1] == 1:
        return parts
    cls = type(parts[0][0])
    rho = sum_up((c, m.rho) for m, c in parts)  # type: ignore[attr-defined]
    xi = sum_up((c, m.xi) for m, c in parts)  # type: ignore[attr-defined]
    return [(cls(rho=rho, xi=xi), 1)]


def _merge_laplace(parts: list[tuple[Mechanism, int]]) -> list[tuple[Mechanism, int]] | Mechanism:
    """Runs of one Laplace mechanism alone (one class and one ``b``) as a
    :class:`~dpacct.mechanisms.primitives.laplace_fold.LaplaceComposition`: the same
    composition, answered by its closed form (exact to a certified ~1e-11 in delta)
    instead of the PLD grid's discretisation."""
    laplace = (LaplaceMechanism, ReplaceOneLaplaceMechanism)
    if not parts or any(type(m) not in laplace for m, _ in parts):
        return parts
    if len({(type(m), m.b) for m, _ in parts}) != 1:  # type: ignore[attr-defined]
        return parts
    total = sum(c for _, c in parts)
    if total <= 1:
        return parts
    return LaplaceComposition(parts=((parts[0][0], total),))


def as_mechanism(parts: list[tuple[Mechanism, int]], relation: NeighboringRelation) -> Mechanism:
    parts = _merge_zcdp(_merge_gaussians(parts, relation))
    merged = _merge_laplace(parts)
    if isinstance(merged, Mechanism):
        return merged
    if len(parts) == 1 and parts[0][1] == 1:
        return parts[0][0]
    return compose([m for m, _ in parts], [c for _, c in parts])
