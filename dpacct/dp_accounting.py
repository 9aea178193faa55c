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
``neighbouring == "replace-one"``: nothing is relabelled silently.  dp_accounting's
RDP accountant reads the same events against ``C`` (no halving); that reading is
offered as a named choice, ``replace_one_sensitivity=1``, and
:meth:`DpEventAccountant.summary` says which reading is in force (the argument:
docs/theory/algorithms.md, section 'The replace-one convention').

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

The conversion itself (one branch per event class) is :mod:`dpacct._dp_event_convert`.

This module is an optional extra: ``import dpacct`` never imports it or dp_accounting.
"""

from __future__ import annotations

import math
import textwrap

from dpacct.accountant.extras import missing_extra

try:
    import dp_accounting
    from dp_accounting import dp_event
    from dp_accounting.privacy_accountant import NeighboringRelation
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("dpacct.dp_accounting", "dp_accounting", exc) from exc

from dpacct._dp_accounting_attacks import AttackBounds
from dpacct._dp_event_convert import (
    REPLACE_ONE_LABEL,  # noqa: F401 - dpacct's replace-one label, kept at this address
    Converted,
    ReplaceOneZCDPMechanism,
    UnsupportedEventError,
    as_mechanism,
    check_relation,
    convert,
    reading,
)
from dpacct._dp_event_fields import (
    check_replace_one_sensitivity,
    check_runs,
    convention_note,
    ledger_compose,
)
from dpacct.accountant import Mechanism
from dpacct.accountant.validation import check_count, check_delta, check_epsilon, check_tol

__all__ = [
    "DpEventAccountant",
    "NeighboringRelation",
    "ReplaceOneZCDPMechanism",
    "UnsupportedEventError",
    "from_dp_event",
]

_ADD_REMOVE = NeighboringRelation.ADD_OR_REMOVE_ONE
_REPLACE = NeighboringRelation.REPLACE_ONE


def from_dp_event(
    event: dp_event.DpEvent,
    *,
    neighboring_relation: NeighboringRelation = _ADD_REMOVE,
    replace_one_sensitivity: float = 2.0,
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
    replace_one_sensitivity : {2.0, 1.0}
        Under ``REPLACE_ONE``: how far apart neighbouring sums are, in units of the
        per-record bound ``C`` an event's noise parameter is stated against.  2
        (default): one record's clipped vector swapped for another's, the noise
        multiplier is halved.  1: dp_accounting's RDP reading (the sums differ by at
        most ``C``), sound only if that holds.  Ignored under ``ADD_OR_REMOVE_ONE``.

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
        range (named, e.g. ``event.events[1].count``; a Gaussian-type noise scale must
        be 0 or at least 1e-100, counts and sizes at most ``2**63 - 1``).
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
    >>> from_dp_event(dpa.GaussianDpEvent(2.0), replace_one_sensitivity=1,  # dp_accounting's
    ...               neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    ReplaceOneGaussianMechanism(sigma=2.0)
    """
    relation = check_relation(neighboring_relation)
    with reading(check_replace_one_sensitivity(replace_one_sensitivity)):
        converted = convert(event, relation, "event")
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
    return as_mechanism(converted.parts, relation)


# ---------------------------------------------------------------------- accountant
class DpEventAccountant(AttackBounds, dp_accounting.PrivacyAccountant):
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
    replace_one_sensitivity : {2.0, 1.0}
        Under ``REPLACE_ONE``, the distance between neighbouring sums in units of the
        per-record bound ``C`` that a ``GaussianDpEvent``'s noise multiplier (and a
        Laplace, discrete Laplace, discrete Gaussian or tree-aggregation event's noise
        parameter) is stated against.  **2** (default): one record's clipped vector
        swapped for another's moves the sum by up to ``2 C``, so ``GaussianDpEvent(s)``
        is the Gaussian of noise multiplier ``s / 2`` per unit shift.  **1**:
        dp_accounting's RDP accountant's reading (the sums differ by at most ``C``),
        the same event at noise multiplier ``s``; its epsilon is far smaller and sound
        only if that bound holds.  :meth:`summary` says which is in force (argument:
        docs/theory/algorithms.md, section 'The replace-one convention').

    Notes
    -----
    On JAX Privacy's ``fixed_dpsgd_event(1.0, 1000, dataset_size=10000,
    batch_size=100)`` under ``REPLACE_ONE``, dp_accounting's RDP accountant prints
    3.58 at ``delta = 1e-5``, and 20.99 at noise multiplier 0.5, which is the default
    reading here; dpacct's PLD prints 14.82 by default and 2.20 with
    ``replace_one_sensitivity=1``: the readings differ by the sensitivity (a factor
    of about 6), the accountants by the PLD's margin over RDP.

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
    >>> DpEventAccountant(dpa.NeighboringRelation.REPLACE_ONE, replace_one_sensitivity=1)
    DpEventAccountant(neighboring_relation=REPLACE_ONE, replace_one_sensitivity=1.0, \
parts=0, non_private=False)
    """

    def __init__(
        self,
        neighboring_relation: NeighboringRelation = _ADD_REMOVE,
        *,
        tol: float | None = None,
        replace_one_sensitivity: float = 2.0,
    ) -> None:
        super().__init__(check_relation(neighboring_relation))
        self._tol = check_tol(tol)
        self._sensitivity = check_replace_one_sensitivity(replace_one_sensitivity)
        self._parts: dict[Mechanism, int] = {}
        self._non_private = False
        self._mechanism: Mechanism | None = None

    # ------------------------------------------------------- dp_accounting contract
    def _maybe_compose(
        self, event: dp_event.DpEvent, count: int, do_compose: bool
    ) -> dp_accounting.PrivacyAccountant.CompositionErrorDetails | None:
        try:
            with reading(self._sensitivity):
                converted = convert(event, self.neighboring_relation, "event")
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
        with reading(self._sensitivity):
            converted = convert(event, self.neighboring_relation, "event")
        check_runs(converted.parts, n, "count", already=self._parts)
        ledger_compose(self._ledger, event, n, dp_event.SelfComposedDpEvent)
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
        d = check_delta(target_delta, "target_delta", allow_zero=True)
        if self._non_private:
            return math.inf
        mech = self.mechanism()
        if d == 0:
            return 0.0 if mech is None else float(mech.pure_epsilon)
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

    def mechanism(self) -> Mechanism | None:
        """The dpacct mechanism of everything composed (None when nothing costs privacy)."""
        if self._mechanism is None and self._parts:
            self._mechanism = as_mechanism(list(self._parts.items()), self.neighboring_relation)
        return self._mechanism

    @property
    def replace_one_sensitivity(self) -> float:
        """The reading of a ``REPLACE_ONE`` event's noise parameter: 2.0 (default) or 1.0."""
        return self._sensitivity

    def summary(self, target_delta: float | None = None) -> str:
        """What is accounted, under which reading of the neighbouring relation, and (with
        ``target_delta``) the epsilon and its bracket.

        Parameters
        ----------
        target_delta : float, optional
            A delta in (0, 1) at which to print epsilon.

        Returns
        -------
        str
            Lines of text: the relation and, under ``REPLACE_ONE``, the sensitivity a
            noise multiplier is read against and how dp_accounting reads it.

        Examples
        --------
        >>> import dp_accounting as dpa
        >>> acct = DpEventAccountant(dpa.NeighboringRelation.REPLACE_ONE)
        >>> print(acct.compose(dpa.GaussianDpEvent(2.0)).summary())  # doctest: +ELLIPSIS
        DpEventAccountant: REPLACE_ONE, 1 mechanism(s)
          ReplaceOneGaussianMechanism(sigma=1.0) x 1
          REPLACE_ONE read with sensitivity 2 C: one record's clipped vector (norm <= C)
          ...
          replace_one_sensitivity=1 gives that reading.
        """
        relation = self.neighboring_relation.name
        lines = [f"DpEventAccountant: {relation}, {len(self._parts)} mechanism(s)"]
        lines += [f"  {mech!r} x {count}" for mech, count in self._parts.items()]
        if self._non_private:
            lines.append("  a NonPrivateDpEvent: epsilon = inf")
        if self.neighboring_relation is _REPLACE:
            note = convention_note(self._sensitivity)
            lines.append(textwrap.fill(note, 88, initial_indent="  ", subsequent_indent="  "))
        if target_delta is not None:
            d = check_delta(target_delta, "target_delta")
            eps = self.get_epsilon(d)
            lo, hi = self.epsilon_bounds(d)
            lines.append(f"  epsilon = {eps:.6g} at delta = {d:g} (bracket [{lo:.6g}, {hi:.6g}])")
        return "\n".join(lines)

    def __repr__(self) -> str:
        reading = (
            f"replace_one_sensitivity={self._sensitivity}, "
            if self.neighboring_relation is _REPLACE
            else ""
        )
        return (
            f"DpEventAccountant(neighboring_relation={self.neighboring_relation.name}, "
            f"{reading}parts={len(self._parts)}, non_private={self._non_private})"
        )

    def _record(self, converted: Converted, count: int) -> None:
        if count == 0:
            return
        for mech, c in converted.parts:
            self._parts[mech] = self._parts.get(mech, 0) + c * count
        self._non_private |= converted.non_private
        self._mechanism = None
