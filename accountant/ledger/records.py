"""The ledger's records: what ran, how many times, and what kind of record it is.

Every record is classified once, when it is recorded (:func:`classify`), by
capability: a mechanism that declares a Gaussian-DP ``mu``
(:meth:`~dpacct.accountant.mechanism.Mechanism.gdp_mu`) under the add/remove relation,
plain or under Poisson sampling at rate ``q``, is a DP-SGD step ``(sigma, q)`` with
``sigma = 1 / mu`` (Dong, Roth & Su 2019, Definition 2.7: its curves are exactly those of
the Gaussian mechanism with that noise multiplier).  Every other mechanism is kept as
it is and answered by the engine's general route.  The queries and filters read the
classification from the record; nothing later looks at a mechanism's type.

A float ``mu`` rarely has an exact reciprocal, so a step carries two noise multipliers:
``sigma_upper <= 1 / mu`` (used for every upper bound) and ``sigma_lower >= 1 / mu``
(for the lower end of a bracket), each the nearest float on its side, found in exact
rational arithmetic.  They coincide when ``1 / mu`` is a float (``mu`` a power of two)
and for a mechanism that stores its noise multiplier exactly (a
:class:`~dpacct.accountant.families.gaussian.GaussianMechanism`, whose ``mu`` is computed from
``sigma``): then ``sigma`` itself is used.

A replace-one Gaussian is not a step: the schedule cells are add/remove mechanisms, and
Poisson sampling is refused under replace-one anyway, so the engine's route (which
keeps the relation) answers it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..families.gaussian import GaussianMechanism
from ..mechanism import Mechanism
from ..pld.schedule import EXACT_VALUES, round_schedule, schedule_mechanism
from ..relations import ADD_REMOVE
from ..routes import EXACT_PHASES, ledger_route
from ..transformers.subsample import PoissonSubsampledMechanism

__all__ = ["EXACT_PHASES", "Entry", "Records", "Step", "classify"]

@dataclass(frozen=True)
class Step:
    """A DP-SGD step: a Poisson-subsampled Gaussian with noise multiplier in
    ``[sigma_upper, sigma_lower]`` and sampling rate ``q``.

    Parameters
    ----------
    sigma_upper : float
        Noise multiplier used for upper bounds (at most the true one).
    sigma_lower : float
        Noise multiplier used for lower bounds (at least the true one).
    q : float
        Poisson sampling rate, in (0, 1].
    """

    sigma_upper: float
    sigma_lower: float
    q: float

    def phase(self, count: int, *, upper: bool = True) -> tuple[float, float, int]:
        """``(sigma, q, count)`` for :func:`~dpacct.accountant.pld.schedule.round_schedule`."""
        return (self.sigma_upper if upper else self.sigma_lower, self.q, int(count))

    def covers(self, other: Step) -> bool:
        """True if every step ``other`` stands for is dominated by this one (at least its
        sigma, at most its q)."""
        return other.sigma_upper >= self.sigma_lower and other.q <= self.q


def _sigma_pair(mu: float) -> tuple[float, float]:
    """The nearest floats below and above ``1 / mu`` (equal when ``1 / mu`` is a float)."""
    s = 1.0 / mu
    product = Fraction(s) * Fraction(mu)  # exact: s * mu vs 1
    if product == 1:
        return (s, s)
    if product < 1:
        return (s, math.nextafter(s, math.inf))
    return (math.nextafter(s, 0.0), s)


def classify(mechanism: Mechanism) -> Step | None:
    """The DP-SGD step ``mechanism`` is, by capability, or None (the engine's route).

    Parameters
    ----------
    mechanism : Mechanism
        A mechanism being recorded.

    Returns
    -------
    Step or None
        A :class:`Step` for a mechanism declaring a Gaussian-DP ``mu`` under the
        add/remove relation, plain (``q = 1``) or Poisson-subsampled; None otherwise.

    Examples
    --------
    >>> from dpacct.accountant import poisson_subsample
    >>> classify(poisson_subsample(Mechanism.from_gdp(0.5), 0.01))
    Step(sigma_upper=2.0, sigma_lower=2.0, q=0.01)
    """
    base, q = mechanism, 1.0
    if isinstance(mechanism, PoissonSubsampledMechanism):
        base, q = mechanism.base, float(mechanism.sample_rate)
    try:
        if base.neighbouring != ADD_REMOVE:
            return None
        mu = base.gdp_mu()
    except Exception:  # pragma: no cover - an exotic mechanism: the engine's route
        return None
    if mu is None:
        return None
    if isinstance(base, GaussianMechanism):
        # the noise multiplier is stored exactly (its mu is computed from it)
        sigma = float(base.sigma)
        return Step(sigma, sigma, q)
    upper, lower = _sigma_pair(float(mu))
    return Step(upper, lower, q)


def same(a: Mechanism, b: Mechanism) -> bool:
    """True if ``a`` and ``b`` are the same record (one entry with a count)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:  # pragma: no cover - exotic __eq__
        return False


def key(mechanism: Mechanism) -> Any:
    """A hashable identity of ``mechanism`` for counting distinct records."""
    try:
        hash(mechanism)
        return (type(mechanism), mechanism)
    except TypeError:
        return (type(mechanism), id(mechanism))


def _pld_capable(mechanism: Mechanism, step: Step | None) -> bool:
    try:
        return step is not None or bool(mechanism.has_pld)
    except Exception:  # pragma: no cover - exotic mechanisms
        return False


@dataclass(eq=False)
class Entry:
    """One ledger entry: ``count`` consecutive runs of ``mechanism``, classified once.

    Parameters
    ----------
    mechanism : Mechanism
        What ran.
    count : int
        How many consecutive times.
    step : Step or None
        Its classification (:func:`classify`).
    """

    mechanism: Mechanism
    count: int
    step: Step | None

    @classmethod
    def of(cls, mechanism: Mechanism, count: int) -> Entry:
        """Classify ``mechanism`` and wrap it with ``count``."""
        return cls(mechanism, count, classify(mechanism))


class Records:
    """The ledger's entries in the order recorded, with the facts the router decides on.

    Identical consecutive records merge into one entry.  ``version`` counts changes
    (caches key on it); ``all_steps`` and ``all_pld`` say whether every entry is a
    DP-SGD step, or has a privacy loss distribution.
    """

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.distinct: set[Any] = set()
        self.all_pld = True
        self.all_steps = True
        self.version = 0

    def __len__(self) -> int:
        return len(self.entries)

    def pairs(self) -> list[tuple[Mechanism, int]]:
        """``(mechanism, count)`` of every entry."""
        return [(e.mechanism, e.count) for e in self.entries]

    def append(self, entry: Entry) -> None:
        """Add ``entry`` (merged with the last entry when it is the same record)."""
        if self.entries and same(self.entries[-1].mechanism, entry.mechanism):
            self.entries[-1].count += entry.count
        else:
            self.entries.append(Entry(entry.mechanism, entry.count, entry.step))
            self.distinct.add(key(entry.mechanism))
            self.all_pld = self.all_pld and _pld_capable(entry.mechanism, entry.step)
            self.all_steps = self.all_steps and entry.step is not None
        self.version += 1

    def restore(self, entry: Entry) -> None:
        """Add ``entry`` as it was saved (no merging): a ledger read from a file."""
        self.entries.append(Entry(entry.mechanism, entry.count, entry.step))
        self.distinct.add(key(entry.mechanism))
        self.all_pld = self.all_pld and _pld_capable(entry.mechanism, entry.step)
        self.all_steps = self.all_steps and entry.step is not None
        self.version = 1

    def route(self, extra: Entry | None = None) -> str:
        """The router's choice for this ledger (counting ``extra``, a record being
        checked): ``"exact"``, ``"online"`` or ``"rounded"``
        (:func:`~dpacct.accountant.routes.ledger_route`; the records only supply the
        facts it decides on)."""
        n, all_pld = len(self.distinct), self.all_pld
        if extra is not None:
            if key(extra.mechanism) not in self.distinct:
                n += 1
            all_pld = all_pld and _pld_capable(extra.mechanism, extra.step)
        return ledger_route(n, all_pld)

    def phases(self, *, upper: bool) -> list[tuple[float, float, int]] | None:
        """Every entry as a DP-SGD phase ``(sigma, q, count)``, or None if one is not."""
        return phases_of(self.entries, upper=upper)


def phases_of(entries: list[Entry], *, upper: bool) -> list[tuple[float, float, int]] | None:
    """``entries`` as DP-SGD phases ``(sigma, q, count)``, or None if one is not a step."""
    out = []
    for e in entries:
        if e.step is None:
            return None
        out.append(e.step.phase(e.count, upper=upper))
    return out


def rounded(entries: list[Entry], grid: float, upper: bool, progress: bool) -> Mechanism:
    """DP-SGD steps rounded to the grid (up or down), other records kept as they are."""
    steps: list[tuple[float, float, int]] = []
    others: dict[Any, list[Any]] = {}
    for e in entries:
        if e.step is None:
            k = key(e.mechanism)
            if k in others:
                others[k][1] += e.count
            else:
                others[k] = [e.mechanism, e.count]
        else:
            steps.append(e.step.phase(e.count, upper=upper))
    # a coordinate with few values (a constant q) is kept: it adds no cells
    phases = round_schedule(steps, grid, upper=upper, exact_values=EXACT_VALUES) if steps else []
    return schedule_mechanism(
        phases, others=[(m, c) for m, c in others.values()], progress=progress
    )
