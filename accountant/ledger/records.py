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
import sys
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..families.gaussian import GaussianMechanism
from ..mechanism import Mechanism
from ..pld.schedule import EXACT_VALUES, round_schedule, schedule_mechanism
from ..relations import ADD_REMOVE
from ..routes import EXACT_PHASES, ledger_route
from ..transformers.compose import compose
from ..transformers.subsample import PoissonSubsampledMechanism

__all__ = ["EXACT_PHASES", "Entry", "GaussianFold", "Records", "Step", "classify", "full_batch"]

#: the one key under which every full-batch Gaussian record counts for routing
FOLD_KEY = ("full-batch Gaussians, folded",)
#: a float's value is an integer multiple of ``2**-_SHIFT`` (the least subnormal)
_SHIFT = 1074

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


def _inverse_square(sigma: float, upper: bool) -> float:
    """``1 / sigma^2`` rounded up (``upper``) or down to a float, exactly: the float
    quotient, moved by one ulp when exact rational arithmetic finds it on the wrong
    side (``inf`` beyond the float range; ``0.0`` below it when rounding down)."""
    exact = 1 / Fraction(sigma) ** 2
    try:
        out = float(exact)  # rounded to nearest
    except OverflowError:
        return math.inf if upper else sys.float_info.max
    if upper and Fraction(out) < exact:
        out = math.nextafter(out, math.inf)
    elif not upper and Fraction(out) > exact:
        out = math.nextafter(out, 0.0)
    return out


def _units(value: float) -> int:
    """A finite float ``>= 0`` as the integer ``value * 2**_SHIFT`` (exact)."""
    num, den = value.as_integer_ratio()
    return num << (_SHIFT - (den.bit_length() - 1))


def _float_of(units: int, upper: bool) -> float:
    """``units * 2**-_SHIFT`` rounded up (``upper``) or down to a float (``inf`` above
    the float range when rounding up, the largest float when rounding down)."""
    try:
        out = units / (1 << _SHIFT)  # int / int: correctly rounded
    except OverflowError:
        return math.inf if upper else sys.float_info.max
    back = _units(out)
    if upper and back < units:
        out = math.nextafter(out, math.inf)
    elif not upper and back > units:
        out = math.nextafter(out, 0.0)
    return out


class GaussianFold:
    """Full-batch Gaussian records folded into one Gaussian mechanism, incrementally.

    A composition of Gaussian mechanisms with noise multipliers ``sigma_i`` (per unit
    of sensitivity), ``count_i`` times each, is exactly one Gaussian with ``mu^2 =
    sum_i count_i / sigma_i^2`` (Dong, Roth & Su 2022, "Gaussian differential
    privacy", JRSS-B, Corollary 3.3; a ``mu``-GDP record stands for ``sigma = 1 /
    mu``).  The sum is kept exactly: each term is ``1 / sigma^2`` rounded up (for
    the upper bounds, at the record's ``sigma_upper <= 1 / mu``) and down (for lower
    ends, at ``sigma_lower >= 1 / mu``) to a float, and floats are integer multiples
    of ``2^-1074``, so both sums are Python integers in those units: O(1) per record
    (integers of at most ~2 200 bits), no round-off.  The folded noise multiplier is
    then rounded the safe way: :meth:`sigma` ``(upper=True)`` is the largest float
    ``s`` with ``s^2 S_up <= 1`` (``S_up`` the sum rounded up: a smaller sigma, a
    dominating Gaussian), ``(upper=False)`` the smallest ``s`` with ``s^2 S_down >=
    1``.  The argument: docs/theory/analytic_gaussian.md, "Full-batch Gaussians in a
    ledger, folded".

    Examples
    --------
    >>> fold = GaussianFold()
    >>> fold.add(Step(2.0, 2.0, 1.0), 3)
    >>> fold.add(Step(4.0, 4.0, 1.0), 4)   # 3/4 + 4/16 = 1: one Gaussian at sigma 1
    >>> fold.sigma(upper=True), fold.sigma(upper=False), fold.entries
    (1.0, 1.0, 2)
    """

    __slots__ = ("_down", "_up", "entries")

    def __init__(self) -> None:
        self._up = 0
        self._down = 0
        #: full-batch Gaussian entries folded (merged repeats count once)
        self.entries = 0

    def copy(self) -> GaussianFold:
        """An independent copy (a filter's trial adds to it without recording)."""
        out = GaussianFold()
        out._up, out._down, out.entries = self._up, self._down, self.entries
        return out

    def add(self, step: Step, count: int, *, entry: bool = True) -> None:
        """Add ``count`` runs of the full-batch Gaussian ``step`` (``entry``: a new
        entry, not a repeat merged into the last one)."""
        up = _inverse_square(step.sigma_upper, True)
        self._up = -1 if self._up < 0 or math.isinf(up) else self._up + count * _units(up)
        self._down += count * _units(_inverse_square(step.sigma_lower, False))
        self.entries += int(entry)

    def sigma(self, upper: bool = True) -> float | None:
        """The folded noise multiplier: at most (``upper``) or at least the exact one;
        None when it is not a positive finite float (``mu^2`` beyond the float range
        for ``upper``, below it otherwise)."""
        if upper:
            if self._up <= 0:
                return None
            total = _float_of(self._up, True)
            if not math.isfinite(total):
                return None
            s = 1.0 / math.sqrt(total)
            while s > 0.0 and Fraction(s) ** 2 * Fraction(total) > 1:
                s = math.nextafter(s, 0.0)
        else:
            if self._down <= 0:
                return None
            total = _float_of(self._down, False)
            if total <= 0.0:
                return None
            s = 1.0 / math.sqrt(total)
            while math.isfinite(s) and Fraction(s) ** 2 * Fraction(total) < 1:
                s = math.nextafter(s, math.inf)
        return s if 0.0 < s < math.inf else None

    def mechanism(self, upper: bool = True) -> GaussianMechanism | None:
        """The folded Gaussian (:meth:`sigma`), or None."""
        s = self.sigma(upper)
        return None if s is None else GaussianMechanism(sigma=s)


def full_batch(entry: Entry) -> bool:
    """True for a full-batch Gaussian record: a DP-SGD step at ``q = 1`` (a Gaussian
    mechanism, or any record declaring a Gaussian-DP ``mu``), which the ledger folds."""
    return entry.step is not None and entry.step.q == 1.0


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
    DP-SGD step, or has a privacy loss distribution.  Full-batch Gaussian records
    (:func:`full_batch`) are also folded, as they are recorded, into one Gaussian
    (``fold``, a :class:`GaussianFold`: O(1) per record) and count as one distinct
    record for routing; the entries themselves are kept as recorded (a saved ledger
    holds every record, the fold is derived).
    """

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        #: the entries that are not full-batch Gaussians (the same objects)
        self.others: list[Entry] = []
        self.fold = GaussianFold()
        self.distinct: set[Any] = set()
        self.all_pld = True
        self.all_steps = True
        self.version = 0

    def __len__(self) -> int:
        return len(self.entries)

    def pairs(self) -> list[tuple[Mechanism, int]]:
        """``(mechanism, count)`` of every entry."""
        return [(e.mechanism, e.count) for e in self.entries]

    def folded(self, extra: Entry | None = None) -> bool:
        """Whether the composition folds the full-batch Gaussians (with ``extra``): at
        least two such entries (one entry is composed as it is, as before the fold)."""
        n = self.fold.entries + (1 if extra is not None and full_batch(extra) else 0)
        return n >= 2

    def parts(
        self, extra: Entry | None = None, *, upper: bool = True
    ) -> list[tuple[Mechanism, int]]:
        """The composition's parts (with ``extra``, a record being checked): every
        entry, or -- when :meth:`folded` -- the entries that are not full-batch
        Gaussians followed by the folded Gaussian (its sigma rounded down, or up for
        ``upper=False``: :meth:`GaussianFold.sigma`); O(1) for the fold."""
        if not self.folded(extra):
            out = self.pairs()
            if extra is not None:
                out.append((extra.mechanism, extra.count))
            return out
        fold = self.fold
        if extra is not None and full_batch(extra):
            fold = fold.copy()
            fold.add(extra.step, extra.count)
        gauss = fold.mechanism(upper=upper)
        entries = self.entries if gauss is None else self.others
        out = [(e.mechanism, e.count) for e in entries]
        if extra is not None and (gauss is None or not full_batch(extra)):
            out.append((extra.mechanism, extra.count))
        if gauss is not None:
            out.append((gauss, 1))
        return out

    def composition(
        self, extra: Entry | None = None, *, upper: bool = True
    ) -> Mechanism | None:
        """The composition of the records (with ``extra``); the folded Gaussian itself
        when it is the only part (None when empty).  ``upper=False``: the fold's sigma
        rounded up (a Gaussian dominated by the records': for lower ends)."""
        parts = self.parts(extra, upper=upper)
        if not parts:
            return None
        if len(parts) == 1 and parts[0][1] == 1 and self.folded(extra):
            return parts[0][0]
        return compose([m for m, _ in parts], [c for _, c in parts])

    def _add(self, entry: Entry) -> None:
        new = Entry(entry.mechanism, entry.count, entry.step)
        self.entries.append(new)
        if full_batch(new):
            self.fold.add(new.step, new.count)
            self.distinct.add(FOLD_KEY)
        else:
            self.others.append(new)
            try:  # key(new.mechanism), its hash taken once (by the set)
                self.distinct.add((type(new.mechanism), new.mechanism))
            except TypeError:
                self.distinct.add((type(new.mechanism), id(new.mechanism)))
        self.all_pld = self.all_pld and _pld_capable(new.mechanism, new.step)
        self.all_steps = self.all_steps and new.step is not None

    def append(self, entry: Entry) -> None:
        """Add ``entry`` (merged with the last entry when it is the same record)."""
        if self.entries and same(self.entries[-1].mechanism, entry.mechanism):
            last = self.entries[-1]
            last.count += entry.count
            if full_batch(last):
                self.fold.add(last.step, entry.count, entry=False)
        else:
            self._add(entry)
        self.version += 1

    def restore(self, entry: Entry) -> None:
        """Add ``entry`` as it was saved (no merging): a ledger read from a file."""
        self._add(entry)
        self.version = 1

    def route(self, extra: Entry | None = None) -> str:
        """The router's choice for this ledger (counting ``extra``, a record being
        checked): ``"exact"``, ``"online"`` or ``"rounded"``
        (:func:`~dpacct.accountant.routes.ledger_route`; the records only supply the
        facts it decides on).  Every full-batch Gaussian counts as one record."""
        n, all_pld = len(self.distinct), self.all_pld
        if extra is not None:
            if (FOLD_KEY if full_batch(extra) else key(extra.mechanism)) not in self.distinct:
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
    """DP-SGD steps rounded to the grid (up or down), other records kept as they are;
    two or more full-batch Gaussian entries are folded into one Gaussian
    (:class:`GaussianFold`, its sigma rounded down for ``upper``, up otherwise), kept
    unrounded as one record."""
    fold = GaussianFold()
    for e in entries:
        if full_batch(e):
            fold.add(e.step, e.count)
    gauss = fold.mechanism(upper) if fold.entries >= 2 else None
    steps: list[tuple[float, float, int]] = []
    others: dict[Any, list[Any]] = {}
    for e in entries:
        if gauss is not None and full_batch(e):
            continue
        if e.step is None:
            k = key(e.mechanism)
            if k in others:
                others[k][1] += e.count
            else:
                others[k] = [e.mechanism, e.count]
        else:
            steps.append(e.step.phase(e.count, upper=upper))
    if gauss is not None:
        others[FOLD_KEY] = [gauss, 1]
    # a coordinate with few values (a constant q) is kept: it adds no cells
    phases = round_schedule(steps, grid, upper=upper, exact_values=EXACT_VALUES) if steps else []
    return schedule_mechanism(
        phases, others=[(m, c) for m, c in others.values()], progress=progress
    )
