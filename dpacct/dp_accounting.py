"""dp_accounting integration: ``DpEvent`` trees in, and an accountant with its interface.

Google's ``dp_accounting`` describes what a program did as a tree of ``DpEvent``
objects (``dp_accounting.dp_event``) and accounts for it with a
``PrivacyAccountant`` (``supports``, ``compose``, ``get_epsilon``, ``get_delta``,
``ledger``).  This module offers both directions:

* :func:`from_dp_event` turns an event tree into a dpacct
  :class:`~dpacct.accountant.Mechanism` (composition, Poisson subsampling, sampling
  without replacement, the Gaussian, Laplace, discrete Laplace of any integer
  sensitivity, randomized-response and ``(xi, rho)``-zCDP events, tree aggregation,
  repeat-and-select, and the events newer than dp_accounting 0.6), whose every curve
  (epsilon, delta, bracket, RDP, trade-off) is then at hand;
* :class:`DpEventAccountant` is a ``dp_accounting.PrivacyAccountant``: code written for
  ``dp_accounting.pld.PLDAccountant`` switches by changing the line that constructs it.

Neighbouring relations, and the one explicit conversion
--------------------------------------------------------
An event's noise parameter is relative to a bound ``C`` on one record's contribution
(``GaussianDpEvent``: ``||v_i|| <= C``, ``noise_multiplier = s / C``; ``LaplaceDpEvent``
the same in L1).  Under ``ADD_OR_REMOVE_ONE`` (the default, as in dp_accounting) the
released sum moves by at most ``C`` between neighbours: the event is dpacct's
:class:`~dpacct.mechanisms.GaussianMechanism` / :class:`~dpacct.mechanisms.LaplaceMechanism`
with the same parameter.  Under ``REPLACE_ONE`` one record is swapped for another and
the sum moves by up to ``2 C``: the sensitivity doubles, so the event is the replace-one
mechanism with **half** the noise multiplier (``sigma / 2``, ``b / 2``; for the Gaussian
this is dp_accounting's own PLD convention, ``privacy_loss_mechanism.AdjacencyType.REPLACE``
shifts the two means by ``+-C``).  The halved mechanisms are the classes
:class:`~dpacct.mechanisms.ReplaceOneGaussianMechanism` and
:class:`~dpacct.mechanisms.ReplaceOneLaplaceMechanism` (what
:func:`~dpacct.mechanisms.replace_one` returns), labelled
``neighbouring == "replace-one"``: nothing is relabelled silently (how dp_accounting's
RDP accountant reads the same events: docs/theory/algorithms.md, section
'dp_accounting events').

``SampledWithoutReplacementDpEvent`` is defined under ``REPLACE_ONE`` only (a fixed batch
size presumes a fixed dataset size), and dpacct's
:func:`~dpacct.accountant.subsample_without_replacement` takes a replace-one base: its
inner event is converted under ``REPLACE_ONE`` with the halving above.  A Gaussian inner
event gets a PLD bracket of one symmetric pair per step that dominates both orders
(docs/theory/fixed_size.md; the bracket of that dominating pair), where dp_accounting
has RDP only (Wang, Balle, Kasiviswanathan 2019, Theorem 9, which dpacct also computes:
the smaller wins).  ``PoissonSampledDpEvent`` is accounted under
``ADD_OR_REMOVE_ONE`` only (dpacct's :func:`~dpacct.accountant.poisson_subsample`).
Randomized response (``RandomizedResponseDpEvent``) is a replace-one statement about one
input value, so it needs ``REPLACE_ONE`` (dp_accounting's accountants refuse it under
``ADD_OR_REMOVE_ONE`` too).  ``REPLACE_SPECIAL`` is not supported.

What each further event is accounted as
---------------------------------------
Discrete Laplace, ``(xi, rho)``-zCDP, single-epoch tree aggregation, repeat-and-select,
``EpsilonDeltaDpEvent``, discrete Gaussian, exponential-mechanism and permute-and-flip
events each become the dpacct mechanism of the same law; the list, with the papers and
theorems: docs/theory/algorithms.md, section 'dp_accounting events'.

Refused with their reason (:class:`UnsupportedEventError`, naming the event and its
place in the tree): ``SampledWithReplacementDpEvent`` (no bound dpacct can certify;
sample without replacement or with Poisson sampling instead) and ``UnsupportedDpEvent``.
``MixtureOfGaussiansDpEvent`` and ``TruncatedSubsampledGaussianDpEvent`` are accounted
under ``ADD_OR_REMOVE_ONE`` (:class:`~dpacct.accountant.MixtureOfGaussiansMechanism`,
:class:`~dpacct.accountant.TruncatedPoissonGaussianMechanism`) and refused under
``REPLACE_ONE``.

This module is an optional extra: ``import dpacct`` never imports it or dp_accounting.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from dpacct.accountant.extras import missing_extra

try:
    import dp_accounting
    from dp_accounting import dp_event
    from dp_accounting.privacy_accountant import NeighboringRelation
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("dpacct.dp_accounting", "dp_accounting", exc) from exc

from dpacct import _dp_event_mapping as _mapping
from dpacct._dp_accounting_mixtures import with_mixture_events
from dpacct.accountant import (
    REPLACE_ONE,
    Mechanism,
    compose,
    poisson_subsample,
    subsample_without_replacement,
)
from dpacct.accountant.transformers.repeat_select import repeat_and_select
from dpacct.accountant.validation import (
    check_count,
    check_delta,
    check_epsilon,
    check_fpr,
    check_tol,
)
from dpacct.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    RandomizedResponse,
    ReplaceOneGaussianMechanism,
    ReplaceOneLaplaceMechanism,
    ZCDPMechanism,
)

__all__ = [
    "DpEventAccountant",
    "NeighboringRelation",
    "ReplaceOneZCDPMechanism",
    "UnsupportedEventError",
    "from_dp_event",
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


# --------------------------------------------------------------------- conversion
@dataclass
class _Converted:
    """An event tree as dpacct parts: ``(mechanism, count)`` pairs, plus a flag set by a
    non-private event (infinite epsilon)."""

    parts: list[tuple[Mechanism, int]]
    non_private: bool = False

    def times(self, count: int) -> _Converted:
        return _Converted([(m, c * count) for m, c in self.parts], self.non_private)


def _relation(value: object) -> NeighboringRelation:
    if not isinstance(value, NeighboringRelation):
        raise TypeError(
            "neighboring_relation must be a dp_accounting.NeighboringRelation, got "
            f"{type(value).__name__} {value!r}"
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
    value = getattr(event, field)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{path}.{field} must be a real number, got {type(value).__name__} {value!r}"
        )
    x = float(value)
    if not (0.0 <= x <= upper) or (math.isinf(x) and math.isinf(upper)):
        interval = "[0, inf)" if math.isinf(upper) else f"[0, {upper:g}]"
        raise ValueError(f"{path}.{field} must lie in {interval}, got {value!r}")
    return x


def _count(event: Any, path: str, field: str, *, allow_zero: bool = True) -> int:
    return check_count(getattr(event, field), f"{path}.{field}", allow_zero=allow_zero)


# long function: one dispatch branch per dp_accounting event class, each a few lines; the
# events newer than 0.6 are already in _convert_more
def _convert(event: Any, relation: NeighboringRelation, path: str) -> _Converted:
    """Validate and convert one event tree (nothing is recorded anywhere)."""
    replace = relation is _REPLACE
    if not isinstance(event, dp_event.DpEvent):
        raise TypeError(f"{path} must be a dp_accounting DpEvent, got {type(event).__name__}")
    if isinstance(event, dp_event.NoOpDpEvent):
        return _Converted([])
    if isinstance(event, dp_event.NonPrivateDpEvent):
        return _Converted([], non_private=True)
    if isinstance(event, dp_event.SelfComposedDpEvent):
        count = _count(event, path, "count")
        inner = _convert(event.event, relation, f"{path}.event")
        return inner.times(count) if count else _Converted([])
    if isinstance(event, dp_event.ComposedDpEvent):
        events = event.events
        if isinstance(events, str | bytes) or not hasattr(events, "__iter__"):
            raise TypeError(f"{path}.events must be a list of DpEvents, got {events!r}")
        out = _Converted([])
        for i, sub in enumerate(events):
            part = _convert(sub, relation, f"{path}.events[{i}]")
            out.parts.extend(part.parts)
            out.non_private |= part.non_private
        return out
    if isinstance(event, dp_event.GaussianDpEvent):
        s = _nonneg(event, path, "noise_multiplier")
        if s == 0.0:
            return _Converted([], non_private=True)
        # replace-one: the sum moves by up to 2 C, so half the noise per unit sensitivity
        mech = ReplaceOneGaussianMechanism(sigma=s / 2) if replace else GaussianMechanism(sigma=s)
        return _Converted([(mech, 1)])
    if isinstance(event, dp_event.LaplaceDpEvent):
        b = _nonneg(event, path, "noise_multiplier")
        if b == 0.0:
            return _Converted([], non_private=True)
        mech = ReplaceOneLaplaceMechanism(b=b / 2) if replace else LaplaceMechanism(b=b)
        return _Converted([(mech, 1)])
    if isinstance(event, dp_event.DiscreteLaplaceDpEvent):
        a = _nonneg(event, path, "noise_parameter")
        sens = _count(event, path, "sensitivity")
        if sens == 0:
            return _Converted([])
        if a == 0.0:
            return _Converted([], non_private=True)
        # pmf ~ exp(-a |x|): dpacct's scale t has pmf ~ exp(-|x| / t); shift k (2k replace)
        return _Converted([(_mapping.discrete_laplace(a, sens, replace), 1)])
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
            return _Converted([])
        if r == 0.0:
            return _Converted([], non_private=True)
        # dp_accounting: "with probability r answer uniformly among all k values"; dpacct:
        # "the truth with probability p": p = 1 - r + r / k (mechanisms.randomized_response)
        p = 1.0 - r * (k - 1) / k
        return _Converted([(RandomizedResponse(p=p, k=k), 1)])
    if isinstance(event, dp_event.ZCDpEvent):
        if getattr(event, "rho", None) == math.inf:  # JAX Privacy's zCDP event at sigma = 0
            return _Converted([], non_private=True)
        rho = _nonneg(event, path, "rho")
        xi = _nonneg(event, path, "xi")
        mech = _mapping.zcdp(rho, xi, replace, ReplaceOneZCDPMechanism)
        return _Converted([] if mech is None else [(mech, 1)])
    if isinstance(event, dp_event.PoissonSampledDpEvent):
        q = _nonneg(event, path, "sampling_probability", upper=1.0)
        if replace:
            raise _unsupported(
                event,
                path,
                "dpacct accounts Poisson subsampling under ADD_OR_REMOVE_ONE only; use "
                "neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE",
            )
        inner = _convert(event.event, relation, f"{path}.event")
        if q == 0.0 or (not inner.parts and not inner.non_private):
            return _Converted([])
        if inner.non_private:
            raise _unsupported(event, path, "a Poisson-subsampled non-private event")
        return _Converted([(poisson_subsample(_as_mechanism(inner.parts, relation), q), 1)])
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
        inner = _convert(event.event, relation, f"{path}.event")
        if m == 0 or (not inner.parts and not inner.non_private):
            return _Converted([])
        if inner.non_private:
            raise _unsupported(event, path, "a subsampled non-private event")
        base = _as_mechanism(inner.parts, relation)
        return _Converted([(subsample_without_replacement(base, m / n), 1)])
    return _convert_more(event, relation, path)


def _is(event: Any, name: str) -> bool:
    """``event`` is dp_accounting's class ``name``, or (for a class the installed version
    lacks) an event of a class of that name."""
    cls = getattr(dp_event, name, None)
    return isinstance(event, cls) if cls is not None else type(event).__name__ == name


def _convert_more(event: Any, relation: NeighboringRelation, path: str) -> _Converted:
    """Tree aggregation, repeat-and-select and the events newer than dp_accounting 0.6."""
    replace = relation is _REPLACE
    if _is(event, "SingleEpochTreeAggregationDpEvent"):
        s = _nonneg(event, path, "noise_multiplier")
        counts = event.step_counts
        if isinstance(counts, numbers.Integral) and not isinstance(counts, bool):
            counts = [counts]
        if isinstance(counts, str | bytes) or not hasattr(counts, "__iter__") or not counts:
            raise ValueError(
                f"{path}.step_counts must be an integer >= 0 or a non-empty list of them, "
                f"got {event.step_counts!r}"
            )
        steps = [
            check_count(c, f"{path}.step_counts[{i}]", allow_zero=True)
            for i, c in enumerate(counts)
        ]
        depth = _mapping.tree_depth(steps)
        if depth == 0:
            return _Converted([])
        if s == 0.0:
            return _Converted([], non_private=True)
        return _Converted([(_mapping.tree_aggregation(s, depth, replace), 1)])
    if _is(event, "RepeatAndSelectDpEvent"):
        mean = _nonneg(event, path, "mean")
        shape = getattr(event, "shape", None)
        if isinstance(shape, bool) or not isinstance(shape, numbers.Real) or not shape >= 0:
            raise ValueError(f"{path}.shape must lie in [0, inf] (inf: Poisson), got {shape!r}")
        if mean < 1.0:
            raise ValueError(f"{path}.mean must be >= 1 (the mean number of runs), got {mean!r}")
        inner = _convert(event.event, relation, f"{path}.event")
        if inner.non_private or not inner.parts:
            return inner
        base = _as_mechanism(inner.parts, relation)
        if not base.has_rdp:
            raise _unsupported(
                event,
                path,
                f"the repeated event has no Renyi-DP curve ({base!r}), which the "
                "Papernot & Steinke 2022 bound needs",
            )
        return _Converted([(repeat_and_select(base, mean, float(shape)), 1)])
    if _is(event, "EpsilonDeltaDpEvent"):
        inf = getattr(event, "epsilon", None) == math.inf  # no guarantee at all
        eps = math.inf if inf else _nonneg(event, path, "epsilon")
        delta = _nonneg(event, path, "delta", upper=1.0)
        if math.isinf(eps) or delta == 1.0:
            return _Converted([], non_private=True)
        mech = _mapping.epsilon_delta(eps, delta, replace)
        return _Converted([] if mech is None else [(mech, 1)])
    if _is(event, "DiscreteGaussianDpEvent"):
        sigma = _nonneg(event, path, "sigma")
        sens = _nonneg(event, path, "sensitivity")
        dim = getattr(event, "dimension", None)
        if dim is not None:
            dim = check_count(dim, f"{path}.dimension")
        if sigma == 0.0 and sens > 0.0:
            return _Converted([], non_private=True)
        mech = _mapping.discrete_gaussian(sigma, sens, dim, replace, ReplaceOneZCDPMechanism)
        return _Converted([] if mech is None else [(mech, 1)])
    for name in ("ExponentialMechanismDpEvent", "PermuteAndFlipDpEvent"):
        if _is(event, name):
            eps = _nonneg(event, path, "epsilon")
            mech = _mapping.pure_selection(eps, name, replace)
            return _Converted([] if mech is None else [(mech, 1)])
    why = _mapping.REFUSED.get(type(event).__name__, "dpacct has no mechanism for it")
    raise _unsupported(event, path, why)


# the mixture events (MixtureOfGaussians, TruncatedSubsampledGaussian): issue 23
_convert = with_mixture_events(_convert, _Converted, _unsupported)


def _merge_gaussians(
    parts: list[tuple[Mechanism, int]], relation: NeighboringRelation
) -> list[tuple[Mechanism, int]]:
    """Replace-one Gaussians compose in closed form, as dpacct's compose does for
    add/remove ones: ``k_i`` runs at ``sigma_i`` are one Gaussian with
    ``sigma^-2 = sum k_i sigma_i^-2`` (Dong, Roth, Su 2019, Corollary 3.3)."""
    if relation is not _REPLACE:
        return parts
    gauss = [(m, c) for m, c in parts if type(m) is ReplaceOneGaussianMechanism]
    if len(gauss) == 0 or (len(gauss) == 1 and gauss[0][1] == 1):
        return parts
    precision = math.fsum(c / m.sigma**2 for m, c in gauss)  # type: ignore[attr-defined]
    rest = [(m, c) for m, c in parts if type(m) is not ReplaceOneGaussianMechanism]
    return [(ReplaceOneGaussianMechanism(sigma=1.0 / math.sqrt(precision)), 1), *rest]


def _as_mechanism(parts: list[tuple[Mechanism, int]], relation: NeighboringRelation) -> Mechanism:
    parts = _merge_gaussians(parts, relation)
    if len(parts) == 1 and parts[0][1] == 1:
        return parts[0][0]
    return compose([m for m, _ in parts], [c for _, c in parts])


def from_dp_event(
    event: dp_event.DpEvent,
    *,
    neighboring_relation: NeighboringRelation = _ADD_REMOVE,
) -> Mechanism:
    """The dpacct mechanism of a dp_accounting ``DpEvent`` tree.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        The tree: ``ComposedDpEvent``, ``SelfComposedDpEvent``,
        ``PoissonSampledDpEvent``, ``SampledWithoutReplacementDpEvent`` (under
        ``REPLACE_ONE``), ``RepeatAndSelectDpEvent`` over ``GaussianDpEvent``,
        ``LaplaceDpEvent``, ``DiscreteLaplaceDpEvent``, ``RandomizedResponseDpEvent``
        (under ``REPLACE_ONE``), ``ZCDpEvent``, ``SingleEpochTreeAggregationDpEvent``,
        the post-0.6 events (module docstring) and ``NoOpDpEvent``.
    neighboring_relation : dp_accounting.NeighboringRelation
        ``ADD_OR_REMOVE_ONE`` (default) or ``REPLACE_ONE``; under the latter Gaussian
        and Laplace noise multipliers are halved (module docstring).

    Returns
    -------
    Mechanism
        A single mechanism (a :func:`~dpacct.accountant.compose` of the parts when
        there are several).

    Raises
    ------
    UnsupportedEventError
        An event dpacct cannot account under this relation, named with its place in
        the tree; also for a ``NonPrivateDpEvent`` (no mechanism has infinite
        epsilon; :class:`DpEventAccountant` reports ``inf`` for it).
    ValueError
        A tree with no privacy cost at all (only no-ops), or an event field out of
        range (named, e.g. ``event.events[1].count``).
    TypeError
        Not a ``DpEvent``, a wrong ``neighboring_relation`` type, or a field of the
        wrong type.

    Examples
    --------
    >>> import dp_accounting as dpa
    >>> from dpacct.dp_accounting import from_dp_event
    >>> step = dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0))
    >>> run = from_dp_event(dpa.SelfComposedDpEvent(step, 10_000))
    >>> round(run.epsilon(1e-5), 3)
    6.188
    >>> from_dp_event(dpa.GaussianDpEvent(2.0),
    ...               neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    ReplaceOneGaussianMechanism(sigma=1.0)
    """
    relation = _relation(neighboring_relation)
    converted = _convert(event, relation, "event")
    if converted.non_private:
        raise UnsupportedEventError(
            "the event contains a NonPrivateDpEvent: no finite privacy guarantee "
            "(DpEventAccountant reports epsilon = inf for it)",
            event=event,
            path="event",
        )
    if not converted.parts:
        raise ValueError(
            "the event has no privacy cost (only no-ops); there is no mechanism to return"
        )
    return _as_mechanism(converted.parts, relation)


# ---------------------------------------------------------------------- accountant
class DpEventAccountant(dp_accounting.PrivacyAccountant):
    """A ``dp_accounting.PrivacyAccountant`` whose answers are dpacct's.

    Drop-in for ``dp_accounting.pld.PLDAccountant`` (and ``rdp.RdpAccountant``):
    ``supports(event)``, ``compose(event, count=1)`` (returns ``self``),
    ``get_epsilon(target_delta)``, ``get_delta(target_epsilon)``, ``ledger`` (the
    composed ``DpEvent``) and ``neighboring_relation`` behave as there.  Events are
    converted by :func:`from_dp_event`'s rules; the answers are dpacct's sound upper
    bounds (a PLD with a certified bracket where the parts have one, else RDP).

    Parameters
    ----------
    neighboring_relation : dp_accounting.NeighboringRelation
        ``ADD_OR_REMOVE_ONE`` (default) or ``REPLACE_ONE``.
    tol : float, optional
        Relative accuracy of the epsilon answers (dpacct's default if None).

    Examples
    --------
    >>> import dp_accounting as dpa
    >>> from dpacct.dp_accounting import DpEventAccountant
    >>> step = dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0))
    >>> acct = DpEventAccountant()            # was: dpa.pld.PLDAccountant()
    >>> acct.compose(step, 10_000).compose(dpa.GaussianDpEvent(20.0)) is acct
    True
    >>> round(acct.get_epsilon(target_delta=1e-5), 3)
    6.193
    >>> acct.supports(dpa.SampledWithReplacementDpEvent(100, 10, dpa.GaussianDpEvent(1.0)))
    False
    """

    def __init__(
        self,
        neighboring_relation: NeighboringRelation = _ADD_REMOVE,
        *,
        tol: float | None = None,
    ) -> None:
        super().__init__(_relation(neighboring_relation))
        self._tol = check_tol(tol)
        self._parts: dict[Mechanism, int] = {}
        self._non_private = False
        self._mechanism: Mechanism | None = None

    # ------------------------------------------------------- dp_accounting contract
    def _maybe_compose(
        self, event: dp_event.DpEvent, count: int, do_compose: bool
    ) -> dp_accounting.PrivacyAccountant.CompositionErrorDetails | None:
        try:
            converted = _convert(event, self.neighboring_relation, "event")
        except UnsupportedEventError as exc:
            return self.CompositionErrorDetails(invalid_event=exc.event, error_message=str(exc))
        except (TypeError, ValueError) as exc:
            return self.CompositionErrorDetails(invalid_event=event, error_message=str(exc))
        if do_compose:
            self._record(converted, count)
        return None

    def compose(self, event: dp_event.DpEvent, count: int = 1) -> DpEventAccountant:
        """Account for ``count`` runs of ``event``; returns ``self``.

        Everything is validated before anything is recorded.

        Parameters
        ----------
        event : dp_accounting.DpEvent
            The event tree to account.
        count : int, default 1
            How many times it runs, >= 0 (0 records nothing).

        Raises
        ------
        UnsupportedEventError
            An event dpacct cannot account under this relation (named, with its place).
        TypeError, ValueError
            ``event`` is not a ``DpEvent``, ``count`` is not an integer >= 0, or an
            event field is out of range.
        """
        if not isinstance(event, dp_event.DpEvent):
            raise TypeError(f"event must be a dp_accounting DpEvent, got {type(event).__name__}")
        n = check_count(count, "count", allow_zero=True)
        converted = _convert(event, self.neighboring_relation, "event")
        self._ledger.compose(event, n)
        self._record(converted, n)
        return self

    def get_epsilon(self, target_delta: float) -> float:
        """Epsilon of everything composed, at ``target_delta``: a sound upper bound.

        ``target_delta = 0`` gives the pure-DP epsilon (``inf`` if there is none);
        an empty accountant gives 0 and a non-private event ``inf``.

        Parameters
        ----------
        target_delta : float
            Target delta, in [0, 1).
        """
        if self._non_private:
            return math.inf
        mech = self.mechanism()
        if target_delta == 0:
            return 0.0 if mech is None else float(mech.pure_epsilon)
        d = check_delta(target_delta, "target_delta")
        return 0.0 if mech is None else float(mech.epsilon(d, tol=self._tol))

    def get_delta(self, target_epsilon: float) -> float:
        """Delta of everything composed, at ``target_epsilon``: a sound upper bound.

        Parameters
        ----------
        target_epsilon : float
            Target epsilon, >= 0.
        """
        e = check_epsilon(target_epsilon, "target_epsilon")
        if self._non_private:
            return 1.0
        mech = self.mechanism()
        return 0.0 if mech is None else float(mech.delta(e, tol=self._tol))

    # ------------------------------------------------------------- dpacct extras
    def epsilon_bounds(self, target_delta: float) -> tuple[float, float]:
        """``(lower, upper)`` bracket of the true epsilon, as dpacct's engine gives it.

        Parameters
        ----------
        target_delta : float
            Target delta, in (0, 1).
        """
        d = check_delta(target_delta, "target_delta")
        if self._non_private:
            return (math.inf, math.inf)
        mech = self.mechanism()
        return (0.0, 0.0) if mech is None else mech.epsilon_bounds(d, tol=self._tol)

    def get_true_positive_rates(
        self, false_positive_rates: float | np.ndarray, deltas: np.ndarray | None = None
    ) -> float | np.ndarray:
        """Certified upper bound on any membership-inference attack's TPR at given FPRs.

        dp_accounting's ``PLDAccountant.get_true_positive_rates`` (added in 2026) bounds
        the TPR through the ``(epsilon, delta)`` pairs at a grid of deltas; here it is
        ``1 - f(fpr)`` with ``f`` the safe-side trade-off curve of everything composed
        (:meth:`~dpacct.accountant.Mechanism.tradeoff`: exact where known, else the
        pessimistic PLDs' Neyman-Pearson curve; Kulynych et al. 2024, Eq. (3)), which is
        at least as tight: every ``(epsilon, delta)`` bound is implied by it.

        Parameters
        ----------
        false_positive_rates : float or numpy.ndarray
            FPR(s), in [0, 1].
        deltas : numpy.ndarray, optional
            Accepted for dp_accounting's interface and ignored: no delta grid is needed.

        Returns
        -------
        float or numpy.ndarray
            The TPR bound(s), shaped like ``false_positive_rates``.

        Examples
        --------
        >>> import dp_accounting as dpa
        >>> acct = DpEventAccountant().compose(dpa.GaussianDpEvent(1.0))
        >>> round(float(acct.get_true_positive_rates(0.01)), 4)  # 1 - Phi(Phi^-1(0.99) - 1)
        0.0924
        """
        fpr = check_fpr(false_positive_rates, "false_positive_rates")
        if self._non_private:
            out = np.ones_like(fpr)
        else:
            mech = self.mechanism()
            beta = None if mech is None else mech.tradeoff(fpr, tol=self._tol)
            out = fpr.copy() if beta is None else 1.0 - np.asarray(beta, dtype=float)
        return float(out) if np.ndim(false_positive_rates) == 0 else out.reshape(fpr.shape)

    def get_gdp_parameter_estimate(
        self, false_positive_rates: np.ndarray | None = None, deltas: np.ndarray | None = None
    ) -> float:
        """The smallest Gaussian-DP ``mu`` whose TPR curve is above the certified TPR
        bounds at the given FPRs (dp_accounting's ``get_gdp_parameter_estimate``).

        ``mu = max over fpr of Phi^-1(TPR(fpr)) - Phi^-1(fpr)`` (Dong, Roth, Su 2019,
        the ``mu``-GDP trade-off ``Phi(Phi^-1(1 - a) - mu)``), with ``TPR`` from
        :meth:`get_true_positive_rates`.  An estimate, as there: pessimistic at each FPR
        (certified TPR bounds), optimistic between the FPRs of the grid.

        Parameters
        ----------
        false_positive_rates : numpy.ndarray, optional
            FPRs in (0, 1); default ``numpy.logspace(-12, log10(0.5), 500)``, as
            dp_accounting.
        deltas : numpy.ndarray, optional
            Accepted for dp_accounting's interface and ignored.

        Returns
        -------
        float
            The estimate (``inf`` for a non-private event, 0 when nothing was composed).

        Examples
        --------
        >>> import dp_accounting as dpa
        >>> acct = DpEventAccountant().compose(dpa.GaussianDpEvent(2.0))
        >>> round(acct.get_gdp_parameter_estimate(), 4)   # 1/sigma
        0.5
        """
        if false_positive_rates is None:
            fpr = np.logspace(-12, np.log10(0.5), 500)
        else:
            fpr = check_fpr(false_positive_rates, "false_positive_rates").reshape(-1)
            if fpr.size == 0 or np.any((fpr <= 0) | (fpr >= 1)):
                raise ValueError("false_positive_rates must be a non-empty array in (0, 1)")
        if self._non_private:
            return math.inf
        tpr = np.asarray(self.get_true_positive_rates(fpr)).reshape(-1)
        with np.errstate(divide="ignore"):
            mu = special.ndtri(tpr) - special.ndtri(fpr)
        return max(float(np.max(mu)), 0.0)

    def mechanism(self) -> Mechanism | None:
        """The dpacct mechanism of everything composed (None when nothing costs privacy)."""
        if self._mechanism is None and self._parts:
            self._mechanism = _as_mechanism(list(self._parts.items()), self.neighboring_relation)
        return self._mechanism

    def __repr__(self) -> str:
        return (
            f"DpEventAccountant(neighboring_relation={self.neighboring_relation.name}, "
            f"parts={len(self._parts)}, non_private={self._non_private})"
        )

    def _record(self, converted: _Converted, count: int) -> None:
        if count == 0:
            return
        for mech, c in converted.parts:
            self._parts[mech] = self._parts.get(mech, 0) + c * count
        self._non_private |= converted.non_private
        self._mechanism = None
