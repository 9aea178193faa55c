"""AIM: adaptive and iterative selection of the marginals to measure, under a zCDP filter.

McKenna, Mullins, Sheldon, Miklau 2022, "AIM: an adaptive and iterative mechanism for
differentially private synthetic data", PVLDB 15(11), arXiv:2201.12677: Algorithm 1 (and
the authors' reference ``mechanisms/aim.py`` of Private-PGM for the defaults).  With a
total zCDP budget ``rho``, ``T = 16 d`` planned rounds and the share ``alpha = 0.9`` of
each round for measurement:

1. **Initialise**: every 1-way marginal with Gaussian noise ``sigma_0 = sqrt(T / (2 alpha
   rho))`` (sensitivity 1 under add/remove; ``1/(2 sigma^2)``-zCDP each, Bun & Steinke
   2016, Proposition 1.6).
2. **Rounds**: with the current model ``p`` (the weighted least-squares estimate of all
   measurements projected onto consistent tables, then the IPF joint), *select* a
   candidate marginal ``r`` of the workload's downward closure by the exponential
   mechanism at ``epsilon_t`` on the quality ``w_r (||M_r(D) - M_r(p)||_1 - sqrt(2/pi)
   sigma_t n_r)`` (Section 4.2: the expected L1 error of a fresh measurement is
   subtracted; ``w_r = sum_{s in W} |r & s|``, the workload weight of Section 4.1),
   whose sensitivity is ``max_r w_r``; *measure* it with noise ``sigma_t``; refit.
   Budget annealing (Section 4.3): when the refit moved ``M_r(p)`` by at most
   ``sqrt(2/pi) sigma_t n_r`` in L1, the next round uses ``sigma / 2`` and
   ``2 epsilon`` (four times the cost).  When the remaining budget is below twice a
   round's cost, the last round spends exactly what remains (``alpha`` of it measuring).

Privacy (docs/theory/algorithms.md, section "AIM").  An ``epsilon``-exponential mechanism
is ``epsilon``-bounded-range and so ``epsilon^2/8``-zCDP (Cesar & Rogers 2021, Lemma 3.2);
a Gaussian release of sensitivity 1 is ``1/(2 sigma^2)``-zCDP.  Each round's parameters
are chosen from earlier outputs, so the rounds compose *adaptively*: every release goes
through :class:`ZCDPFilter`, which refuses (before drawing anything) any release that
would take the exactly summed (rational arithmetic) zCDP costs above ``rho``.  At every
Renyi order ``a`` the costs' RDP ``a rho_t`` then sums to at most ``a rho`` on every
run, so by the Renyi filter (Feldman & Zrnic 2021, Theorem 3.1; Whitehouse, Ramdas,
Rogers, Wu 2023 for zCDP filters) the run is ``(a, a rho)``-RDP at every ``a``, i.e.
``rho``-zCDP: the paper's privacy theorem (AIM is ``rho``-zCDP).  Its ``(epsilon, delta)`` is the
engine's conversion of ``rho``-zCDP (:class:`~dpacct.mechanisms.ZCDPMechanism`, the
Canonne-Kamath-Steinke bound optimised over all orders): :meth:`AIM.primitives` is that
one mechanism.

Differences from the reference implementation: the model is the full joint distribution
(IPF on the weighted-least-squares projection of the measurements, see
:func:`~dpacct.mechanisms.algorithms.synthesis.project_marginals`) instead of a
graphical model fitted by mirror descent, so the product of the domain sizes is capped
(:data:`MAX_CELLS`) and no model-size filter of candidates is needed; workloads of 1- and
2-way marginals only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations

import numpy as np

from dpacct.accountant.serialization import register_mechanism
from dpacct.accountant.validation import (
    check_count,
    check_positive,
    check_probability,
    check_rng,
)

from ..primitives.exponential import ExponentialMechanism
from ..primitives.gaussian import GaussianMechanism
from ..primitives.generic import ZCDPMechanism
from .algorithm import Algorithm
from .synthesis_columns import Column, _check_columns, encode, with_data_types
from .synthesis_estimate import ipf, project_marginals
from .synthesis_model import FittedSynthesizer

__all__ = ["AIM", "ZCDPFilter", "workload_error"]

#: largest full domain (number of cells) whose joint distribution AIM's model holds
MAX_CELLS = 2**22
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _gaussian_cost(sigma: float) -> Fraction:
    """Exact zCDP cost ``1 / (2 sigma^2)`` of a unit-sensitivity Gaussian release."""
    return 1 / (2 * Fraction(sigma) ** 2)


def _exponential_cost(epsilon: float) -> Fraction:
    """Exact zCDP cost ``epsilon^2 / 8`` of an ``epsilon``-exponential mechanism."""
    return Fraction(epsilon) ** 2 / 8


class ZCDPFilter:
    """A zCDP privacy filter: adaptive releases whose summed zCDP never exceeds ``rho``.

    Every release states its zCDP cost -- ``1/(2 sigma^2)`` for a Gaussian release of a
    sensitivity-1 query (Bun & Steinke 2016, Proposition 1.6), ``epsilon^2/8`` for the
    ``epsilon``-exponential mechanism (bounded range; Cesar & Rogers 2021, Lemma 3.2) --
    and is refused with ``RuntimeError`` *before* any noise is drawn when the exact
    (rational) sum of the costs so far and its own would exceed ``rho``.  The costs may
    depend on earlier outputs: the run is ``rho``-zCDP by the Renyi filter (Feldman &
    Zrnic 2021, Theorem 3.1) applied at every order (module docstring).  The noise is
    drawn only by :class:`~dpacct.mechanisms.GaussianMechanism` and
    :class:`~dpacct.mechanisms.ExponentialMechanism` releases.

    Parameters
    ----------
    rho : float
        The total budget, > 0.
    rng : numpy.random.Generator
        The run's only source of randomness.

    Examples
    --------
    >>> f = ZCDPFilter(0.5, np.random.default_rng(0))
    >>> _ = f.gaussian(np.zeros(3), sigma=1.0)           # spends 1/2
    >>> f.spent, f.remaining
    (0.5, 0.0)
    >>> f.exponential(np.zeros(2), epsilon=0.1, sensitivity=1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    RuntimeError: zCDP filter: a release costing 0.00125 would take the spent 0.5 above ...
    """

    def __init__(self, rho: float, rng: np.random.Generator) -> None:
        self.rho = check_positive("rho", rho)
        self.rng = check_rng(rng)
        self._total = Fraction(self.rho)
        self._spent = Fraction(0)
        #: every release made: ``(kind, parameter, zCDP cost rounded up)``
        self.log: list[tuple[str, float, float]] = []

    @property
    def spent(self) -> float:
        """The zCDP spent so far (exact sum, rounded to the nearest float)."""
        return float(self._spent)

    @property
    def remaining_exact(self) -> Fraction:
        """The budget left, exactly."""
        return self._total - self._spent

    @property
    def remaining(self) -> float:
        """The budget left, rounded down (a release costing at most this is admitted)."""
        r = self._total - self._spent
        f = float(r)
        return math.nextafter(f, -math.inf) if Fraction(f) > r else f

    def _admit(self, cost: Fraction, kind: str, parameter: float) -> None:
        if self._spent + cost > self._total:
            raise RuntimeError(
                f"zCDP filter: a release costing {float(cost):.6g} would take the spent "
                f"{float(self._spent):.6g} above the budget rho={self.rho!r} (nothing was drawn)"
            )
        self._spent += cost
        self.log.append((kind, parameter, math.nextafter(float(cost), math.inf)))

    def gaussian(self, value: np.ndarray, *, sigma: float) -> np.ndarray:
        """Gaussian release of a sensitivity-1 (L2) query with noise ``sigma``."""
        self._admit(_gaussian_cost(sigma), "gaussian", sigma)
        return GaussianMechanism(sigma=sigma).release(value, sensitivity=1.0, rng=self.rng)

    def exponential(self, scores: np.ndarray, *, epsilon: float, sensitivity: float) -> int:
        """Exponential-mechanism choice among ``scores`` (utility of that sensitivity)."""
        self._admit(_exponential_cost(epsilon), "exponential", epsilon)
        mech = ExponentialMechanism(epsilon=epsilon)
        return int(mech.release(scores, sensitivity=sensitivity, rng=self.rng))


def _sigma_within(budget: float) -> float:
    """Smallest float ``sigma`` with ``1/(2 sigma^2) <= budget`` exactly."""
    sigma = math.sqrt(1.0 / (2.0 * budget))
    while _gaussian_cost(sigma) > Fraction(budget):
        sigma = math.nextafter(sigma, math.inf)
    return sigma


def _epsilon_within(budget: float | Fraction) -> float:
    """Largest float ``epsilon`` with ``epsilon^2/8 <= budget`` exactly."""
    eps = math.sqrt(8.0 * float(budget))
    while _exponential_cost(eps) > Fraction(budget):
        eps = math.nextafter(eps, 0.0)
    return eps


def _check_workload(workload: object, names: list[str]) -> tuple[tuple[str, ...], ...]:
    if isinstance(workload, str):
        if workload == "2-way":
            return tuple(combinations(names, 2))
        if workload == "1-way":
            return tuple((n,) for n in names)
        raise ValueError(f"workload must be '1-way', '2-way' or a sequence of name tuples, "
                         f"got {workload!r}")
    out = []
    for w in workload:  # type: ignore[attr-defined]
        w = (w,) if isinstance(w, str) else tuple(w)
        if not 1 <= len(w) <= 2 or len(set(w)) != len(w):
            raise ValueError(f"workload entries must be 1 or 2 distinct column names, got {w!r}")
        unknown = [n for n in w if n not in names]
        if unknown:
            raise ValueError(f"workload names unknown columns {unknown}; columns: {names}")
        out.append(tuple(sorted(w, key=names.index)))
    if not out or len(set(out)) != len(out):
        raise ValueError("workload must be non-empty without repeated marginals")
    return tuple(out)


class _Model:
    """The estimate from all measurements so far (post-processing only)."""

    def __init__(self, sizes: tuple[int, ...]) -> None:
        self.sizes = sizes
        self.sums: dict[tuple[int, ...], np.ndarray] = {}  # sum of y / sigma^2
        self.precision: dict[tuple[int, ...], float] = {}  # sum of 1 / sigma^2
        self.joint: np.ndarray | None = None
        self.probs: list[np.ndarray] = []
        self.cliques: tuple[tuple[int, ...], ...] = ()
        self.rows = 1.0
        self.iterations = 0

    def add(self, clique: tuple[int, ...], y: np.ndarray, sigma: float) -> None:
        w = 1.0 / sigma**2
        self.sums[clique] = self.sums.get(clique, 0.0) + w * y
        self.precision[clique] = self.precision.get(clique, 0.0) + w

    def fit(self) -> None:
        """Inverse-variance combination per marginal, weighted projection, IPF joint."""
        cliques = tuple(sorted(self.sums, key=lambda c: (len(c), c)))
        tables = [self.sums[c] / self.precision[c] for c in cliques]
        # row count: inverse-variance combination of the table totals (var n_C / prec_C)
        tvar = np.array([t.size / self.precision[c] for c, t in zip(cliques, tables, strict=True)])
        totals = np.array([t.sum() for t in tables])
        self.rows = max(float(np.dot(1.0 / tvar, totals) / np.sum(1.0 / tvar)), 1.0)
        weights = [self.precision[c] for c in cliques]
        self.probs, self.iterations = project_marginals(
            [t / self.rows for t in tables], cliques, self.sizes, weights=weights
        )
        self.cliques = cliques
        self.joint, _ = ipf(self.probs, cliques, self.sizes)

    def marginal(self, clique: tuple[int, ...]) -> np.ndarray:
        other = tuple(a for a in range(len(self.sizes)) if a not in clique)
        return self.rows * self.joint.sum(axis=other)  # type: ignore[union-attr]


@register_mechanism("aim")
@dataclass(frozen=True)
class AIM(Algorithm):
    """AIM synthetic data (McKenna, Mullins, Sheldon, Miklau 2022, Algorithm 1).

    Parameters
    ----------
    columns : sequence of CategoricalColumn or BinnedNumericColumn
        At least two columns; their domains are public; the product of their sizes at
        most :data:`MAX_CELLS`.
    rho : float
        Total zCDP budget, in [1e-300, 1e300]; the run is ``rho``-zCDP whatever the
        rounds turn out to be (:class:`ZCDPFilter`).
    workload : '2-way', '1-way' or sequence of column-name tuples
        The marginals the synthetic data should answer (1 or 2 columns each); the
        candidates are their downward closure.
    rounds : int or None
        The planned number of rounds ``T`` (sets the initial per-round budget
        ``rho / T``); ``None``: ``16 d`` as in the paper; at least ``d``.
    alpha : float
        Share of each round's budget spent on the measurement, in (0, 1); 0.9 as in
        the paper.

    Examples
    --------
    >>> from dpacct.mechanisms.algorithms.synthesis import CategoricalColumn
    >>> cols = [CategoricalColumn(n, [0, 1]) for n in "abc"]
    >>> aim = AIM(cols, rho=0.5)
    >>> aim.primitives()
    ([ZCDPMechanism(rho=0.5)], [1])
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 2, 2000)
    >>> model = aim.fit({"a": a, "b": a, "c": rng.integers(0, 2, 2000)}, rng=rng)
    >>> ("a", "b") in model.selected, model.spent_rho <= 0.5
    (True, True)
    """

    columns: tuple[Column, ...]
    rho: float = 1.0
    workload: str | tuple[tuple[str, ...], ...] = "2-way"
    rounds: int | None = None
    alpha: float = 0.9

    def __post_init__(self) -> None:
        cols = _check_columns(self.columns)
        if len(cols) < 2:
            raise ValueError(f"AIM needs at least 2 columns, got {len(cols)}")
        object.__setattr__(self, "columns", cols)
        cells = math.prod(c.size for c in cols)
        if cells > MAX_CELLS:
            raise ValueError(
                f"AIM holds the joint distribution: the product of the column sizes must be "
                f"at most {MAX_CELLS}, got {cells} (use MST for larger domains)"
            )
        rho = check_positive("rho", self.rho)
        if not 1e-300 <= rho <= 1e300:
            raise ValueError(f"rho must lie in [1e-300, 1e300], got {rho!r}")
        object.__setattr__(self, "rho", rho)
        names = [c.name for c in cols]
        object.__setattr__(self, "workload", _check_workload(self.workload, names))
        if self.rounds is not None:
            t = check_count(self.rounds, "rounds")
            if t < len(cols):
                raise ValueError(f"rounds must be at least the number of columns {len(cols)}, "
                                 f"got {t}")
            object.__setattr__(self, "rounds", t)
        object.__setattr__(self, "alpha", check_probability("alpha", self.alpha))

    # ------------------------------------------------------------------ privacy
    @property
    def sizes(self) -> tuple[int, ...]:
        """Domain size of every column."""
        return tuple(c.size for c in self.columns)

    @property
    def planned_rounds(self) -> int:
        """``T``: :attr:`rounds`, or ``16 d``."""
        return self.rounds if self.rounds is not None else 16 * len(self.columns)

    @property
    def zcdp_rho(self) -> float:
        """The zCDP guarantee of every run: :attr:`rho` (enforced by :class:`ZCDPFilter`)."""
        return self.rho

    def primitives(self) -> tuple[list, list[int]]:
        """``([ZCDPMechanism(rho)], [1])``: the run is ``rho``-zCDP (module docstring)."""
        return [ZCDPMechanism(rho=self.rho)], [1]

    def candidates(self) -> tuple[list[tuple[int, ...]], np.ndarray]:
        """The workload's downward closure (column indices) and each one's weight.

        The weight is ``w_r = sum_{s in W} |r & s|`` (Section 4.1 of the paper).
        """
        names = [c.name for c in self.columns]
        work = [tuple(names.index(n) for n in w) for w in self.workload]  # type: ignore[union-attr]
        closure = sorted({s for w in work for k in (1, 2) for s in combinations(w, k)},
                         key=lambda c: (len(c), c))
        weights = np.array([sum(len(set(r) & set(w)) for w in work) for r in closure], float)
        return closure, weights

    # ---------------------------------------------------------------------- run
    def fit(self, data: object, *, rng: np.random.Generator) -> FittedSynthesizer:
        """Run AIM on ``data`` and fit the sampling model.

        Parameters
        ----------
        data : mapping, DataFrame or 2-D array
            Rows over :attr:`columns`, read by column name when named.
        rng : numpy.random.Generator
            Source of all the privacy noise.

        Returns
        -------
        FittedSynthesizer
            IPF generator; :attr:`~FittedSynthesizer.selected` the marginals chosen in
            order, and ``spent_rho`` / ``privacy_log`` the filter's account: the zCDP
            summed over the releases actually made (at most :attr:`rho`) and every
            release ``(kind, parameter, cost)``.
        """
        check_rng(rng)
        codes = encode(self.columns, data)
        sizes, d = self.sizes, len(self.columns)
        budget = ZCDPFilter(self.rho, rng)
        cand, weights = self.candidates()
        shapes = [tuple(sizes[a] for a in c) for c in cand]
        ncells = np.array([math.prod(s) for s in shapes], float)
        exact = [
            np.bincount(np.ravel_multi_index(tuple(codes[:, a] for a in c), s),
                        minlength=math.prod(s)).reshape(s) * 1.0
            for c, s in zip(cand, shapes, strict=True)
        ]
        model = _Model(sizes)
        noisy: dict[tuple[int, ...], list[np.ndarray]] = {}
        T, alpha = self.planned_rounds, self.alpha
        # ---- 1. the 1-way marginals, sigma_0 = sqrt(T / (2 alpha rho))
        sigma = _sigma_within(alpha * self.rho / T)
        epsilon = _epsilon_within((1.0 - alpha) * self.rho / T)
        for a in range(d):
            y = budget.gaussian(np.bincount(codes[:, a], minlength=sizes[a]) * 1.0, sigma=sigma)
            model.add((a,), y, sigma)
            noisy.setdefault((a,), []).append(y)
        model.fit()
        # ---- 2. adaptive rounds
        selected: list[tuple[int, ...]] = []
        last = False
        while not last:
            remaining = budget.remaining
            cost = float(_gaussian_cost(sigma) + _exponential_cost(epsilon))
            if remaining < 2.0 * cost:  # the last round spends what remains
                last = True
                sigma = _sigma_within(alpha * remaining)
                epsilon = _epsilon_within(budget.remaining_exact - _gaussian_cost(sigma))
            estimates = [model.marginal(c) for c in cand]
            err = np.array([np.abs(x - e).sum() for x, e in zip(exact, estimates, strict=True)])
            scores = weights * (err - _SQRT_2_OVER_PI * sigma * ncells)
            pick = budget.exponential(scores, epsilon=epsilon, sensitivity=float(weights.max()))
            c = cand[pick]
            y = budget.gaussian(exact[pick], sigma=sigma)
            model.add(c, y, sigma)
            noisy.setdefault(c, []).append(y)
            selected.append(c)
            before = estimates[pick]
            model.fit()
            moved = np.abs(model.marginal(c) - before).sum()
            if moved <= _SQRT_2_OVER_PI * sigma * ncells[pick]:  # budget annealing
                sigma, epsilon = sigma / 2.0, epsilon * 2.0
        # ---- the sampling model (post-processing)
        fitted = FittedSynthesizer._build(
            self, model.probs, None, model.rows, model.iterations, "ipf", cliques=model.cliques
        )
        names = [c.name for c in self.columns]
        # a marginal measured more than once: the inverse-variance combination
        object.__setattr__(fitted, "noisy_tables", {
            tuple(names[a] for a in c): model.sums[c] / model.precision[c] for c in noisy
        })
        object.__setattr__(fitted, "selected", tuple(tuple(names[a] for a in c) for c in selected))
        object.__setattr__(fitted, "data_columns", with_data_types(self.columns, data))
        object.__setattr__(fitted, "spent_rho", budget.spent)
        object.__setattr__(fitted, "privacy_log", tuple(budget.log))
        return fitted


def workload_error(
    fitted: FittedSynthesizer, data: object, workload: Sequence[Sequence[str]] | None = None
) -> float:
    """Average total variation distance of the model's workload marginals to ``data``'s.

    ``mean_r 0.5 ||M_r(D)/|D| - M_r(p)||_1``, the error measure of the paper's
    experiments (Section 6) evaluated on the fitted model.

    Parameters
    ----------
    fitted : FittedSynthesizer
    data : mapping, DataFrame or 2-D array
    workload : sequence of column-name tuples, optional
        Default: the synthesizer's workload (AIM) or all pairs.
    """
    cols = fitted.columns
    names = [c.name for c in cols]
    if workload is None:
        workload = getattr(fitted.synthesizer, "workload", None) or tuple(combinations(names, 2))
    codes = encode(cols, data)
    out = []
    for w in workload:
        idx = [names.index(n) for n in w]
        shape = tuple(cols[a].size for a in idx)
        real = np.bincount(np.ravel_multi_index(tuple(codes[:, a] for a in idx), shape),
                           minlength=math.prod(shape)).reshape(shape) / max(len(codes), 1)
        out.append(0.5 * np.abs(real - fitted.probability(list(w))).sum())
    return float(np.mean(out))
