"""MST: marginal synthesis with a private selection of the pairs to measure.

McKenna, Miklau, Sheldon 2021, "Winning the NIST contest: a scalable and general
approach to differentially private synthetic data", Journal of Privacy and
Confidentiality 11(3), doi:10.29012/jpc.778: the mechanism MST (and the authors'
reference implementation, ``mechanisms/mst.py`` of Private-PGM, for the details).  With
a zCDP budget ``rho`` split in three equal parts, as in the paper:

1. **Measure the 1-way marginals**: each of the ``d`` column histograms with the
   Gaussian mechanism, ``sigma_1 = sqrt(3 d / (2 rho))`` (sensitivity 1; ``d`` of them
   are ``d / (2 sigma_1^2) = rho / 3``-zCDP, Bun & Steinke 2016, Proposition 1.6 and
   Lemma 1.7).
2. **Select** ``d - 1`` pairs forming a spanning tree: a
   Kruskal-style maximum spanning tree whose every edge is chosen by the exponential
   mechanism among the pairs that join two components, with utility the L1 distance
   ``||M_ab(D) - M_ab(estimate)||_1`` between the pair's true histogram and the one
   implied by the noisy 1-way marginals (the independence model).  One record changes
   a pair histogram by 1 in one cell and the estimate not at all (it is computed from
   step 1's releases), so the utility has sensitivity 1.  Each of the ``d - 1`` choices
   is an ``epsilon_s``-exponential mechanism with ``epsilon_s = sqrt(8 (rho / 3) / (d -
   1))``; an ``epsilon``-exponential mechanism is ``epsilon``-bounded-range and so
   ``epsilon^2 / 8``-zCDP (Durfee & Rogers 2019; Cesar & Rogers 2021, Section 3), and
   the ``d - 1`` choices spend ``rho / 3``.
3. **Measure the selected pairs**: each with ``sigma_2 = sqrt(3 (d - 1) / (2 rho))``,
   together ``rho / 3``.

Then (post-processing) the noisy tables are projected onto the local polytope
(:func:`~dpacct.mechanisms.algorithms.synthesis.project_marginals`; on a tree it is the marginal
polytope) and synthetic rows are generated as for
:class:`~dpacct.mechanisms.algorithms.synthesis.MarginalSynthesizer`.

Privacy is the engine's.  Every noisy quantity -- the ``d`` 1-way histograms, the ``d
- 1`` selections and the ``d - 1`` pair histograms -- is drawn through a planned
release of a :class:`~dpacct.mechanisms.GaussianMechanism` or an
:class:`~dpacct.mechanisms.ExponentialMechanism`, and the run's privacy is their
composition (:meth:`MST.primitives`): by construction it is at most ``rho``-zCDP, and
the engine's composition (the exact Gaussian RDP and the tight bounded-range RDP of
the exponential mechanism, Dong, Durfee, Rogers 2020) gives an epsilon at or below the
zCDP conversion of ``rho``.  :func:`dpacct.calibrators.calibrate_mst` finds the
largest ``rho`` whose run meets a target ``(epsilon, delta)``.

Differences from the reference implementation: no domain compression (its merging of
the categories whose noisy 1-way count is below ``3 sigma_1``), and the estimate weighs
the 1-way and pair tables equally (their noise deviations differ by the factor
``sqrt(d / (d - 1))``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from dpacct.accountant.serialization import register_mechanism
from dpacct.accountant.validation import check_positive, check_rng

from ..primitives.exponential import ExponentialMechanism
from ..primitives.gaussian import GaussianMechanism
from .algorithm import Algorithm, PlannedRelease
from .synthesis_columns import Column, _check_columns, encode, with_data_types
from .synthesis_estimate import project_marginals, project_simplex
from .synthesis_model import FittedSynthesizer

__all__ = ["MST"]

_GENERATORS = ("auto", "ipf", "tree")
#: largest full domain (number of cells) that generator='auto' fits by IPF
_IPF_MAX_CELLS = 2**20


def _pair_counts(codes: np.ndarray, a: int, b: int, sizes: tuple[int, ...]) -> np.ndarray:
    flat = np.ravel_multi_index((codes[:, a], codes[:, b]), (sizes[a], sizes[b]))
    return np.bincount(flat, minlength=sizes[a] * sizes[b]).reshape(sizes[a], sizes[b])


@register_mechanism("mst")
@dataclass(frozen=True)
class MST(Algorithm):
    """MST synthetic data (McKenna, Miklau, Sheldon 2021, Algorithm 1; module docstring).

    Parameters
    ----------
    columns : sequence of CategoricalColumn or BinnedNumericColumn
        At least two columns; their domains are public.
    rho : float
        Total zCDP budget, in [1e-300, 1e300], split in thirds between the 1-way
        measurements, the selection and the pair measurements (the paper's split).

    Examples
    --------
    >>> from dpacct.mechanisms.algorithms.synthesis import CategoricalColumn
    >>> cols = [CategoricalColumn(n, [0, 1]) for n in "abc"]
    >>> mst = MST(cols, rho=0.3)
    >>> [(type(m).__name__, c) for m, c in zip(*mst.primitives())]
    [('GaussianMechanism', 3), ('ExponentialMechanism', 2), ('GaussianMechanism', 2)]
    >>> round(mst.zcdp_rho, 12)          # 3/(2 s1^2) + 2 e^2/8 + 2/(2 s2^2)
    0.3
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 2, 2000)
    >>> model = mst.fit({"a": a, "b": a, "c": rng.integers(0, 2, 2000)}, rng=rng)
    >>> ("a", "b") in model.selected
    True
    """

    columns: tuple[Column, ...]
    rho: float = 1.0

    def __post_init__(self) -> None:
        cols = _check_columns(self.columns)
        if len(cols) < 2:
            raise ValueError(f"MST needs at least 2 columns, got {len(cols)}")
        object.__setattr__(self, "columns", cols)
        rho = check_positive("rho", self.rho)
        if not 1e-300 <= rho <= 1e300:
            # the noise scales sqrt(3 d / (2 rho)) and the inverse squares that composition
            # adds up must stay floats (rho = 1e308 made them 0 and divided by it)
            raise ValueError(f"rho must lie in [1e-300, 1e300], got {rho!r}")
        object.__setattr__(self, "rho", rho)

    # ------------------------------------------------------------------ privacy
    @property
    def sizes(self) -> tuple[int, ...]:
        """Domain size of every column."""
        return tuple(c.size for c in self.columns)

    @property
    def one_way_sigma(self) -> float:
        """Gaussian noise of each 1-way histogram, ``sqrt(3 d / (2 rho))``."""
        return math.sqrt(3.0 * len(self.columns) / (2.0 * self.rho))

    @property
    def selection_epsilon(self) -> float:
        """Epsilon of each of the ``d - 1`` exponential mechanisms, ``sqrt(8 (rho/3) / (d-1))``."""
        return math.sqrt(8.0 * (self.rho / 3.0) / (len(self.columns) - 1))

    @property
    def two_way_sigma(self) -> float:
        """Gaussian noise of each selected pair histogram, ``sqrt(3 (d - 1) / (2 rho))``."""
        return math.sqrt(3.0 * (len(self.columns) - 1) / (2.0 * self.rho))

    @property
    def zcdp_rho(self) -> float:
        """The zCDP parameter of the plan, equal to :attr:`rho` up to rounding.

        ``d / (2 s1^2) + (d-1) e^2/8 + (d-1) / (2 s2^2)``; the engine's accounting is at
        least as tight (module docstring).
        """
        d = len(self.columns)
        return (
            d / (2.0 * self.one_way_sigma**2)
            + (d - 1) * self.selection_epsilon**2 / 8.0
            + (d - 1) / (2.0 * self.two_way_sigma**2)
        )

    def planned_releases(self) -> tuple[PlannedRelease, ...]:
        """The releases of one run, all of sensitivity 1.

        ``d`` Gaussian 1-way histograms, ``d - 1`` exponential-mechanism selections and
        ``d - 1`` Gaussian pair histograms.
        """
        d = len(self.columns)
        return (
            PlannedRelease("1-way marginal", GaussianMechanism(sigma=self.one_way_sigma), d),
            PlannedRelease(
                "pair selection", ExponentialMechanism(epsilon=self.selection_epsilon), d - 1
            ),
            PlannedRelease("2-way marginal", GaussianMechanism(sigma=self.two_way_sigma), d - 1),
        )

    # ---------------------------------------------------------------------- run
    def fit(
        self, data: object, *, rng: np.random.Generator, generator: str = "auto"
    ) -> FittedSynthesizer:
        """Measure, select and measure on ``data``, then fit the model.

        Parameters
        ----------
        data : mapping, DataFrame or 2-D array
            Rows over :attr:`columns`, read by column name when named (see
            :func:`~dpacct.mechanisms.algorithms.synthesis.encode`).
        rng : numpy.random.Generator
            Source of all the privacy noise (the Gaussian noise and the selections).
        generator : 'auto', 'ipf' or 'tree'
            The sampling model, as in :meth:`MarginalSynthesizer.fit` (on the selected
            tree both represent the same distribution).

        Returns
        -------
        FittedSynthesizer
            With :attr:`~FittedSynthesizer.selected` the chosen pairs in order.
        """
        check_rng(rng)
        if generator not in _GENERATORS:
            raise ValueError(f"generator must be one of {_GENERATORS!r}, got {generator!r}")
        codes = encode(self.columns, data)
        sizes, d = self.sizes, len(self.columns)
        session = self.releases(rng)
        # ---- 1. the 1-way marginals
        one = [
            session.release("1-way marginal", np.bincount(codes[:, a], minlength=sizes[a]) * 1.0)
            for a in range(d)
        ]
        # the independence model those releases imply (post-processing): total from
        # the noisy totals (equal variances), shares projected onto the simplex
        n_one = max(float(np.mean([t.sum() for t in one])), 1.0)
        p_one = [project_simplex(t / n_one) for t in one]
        # ---- 2. selection: maximum spanning tree, every edge by the exponential mechanism
        pairs = list(combinations(range(d), 2))
        independent = {(a, b): n_one * np.outer(p_one[a], p_one[b]) for a, b in pairs}
        scores = np.array(
            [np.abs(_pair_counts(codes, a, b, sizes) - independent[a, b]).sum() for a, b in pairs]
        )
        component = np.arange(d)
        selected: list[tuple[int, int]] = []
        for _ in range(d - 1):
            open_ = np.array([component[a] != component[b] for a, b in pairs])
            candidates = np.flatnonzero(open_)
            pick = session.release("pair selection", scores[candidates])
            a, b = pairs[int(candidates[pick])]
            selected.append((a, b))
            component[component == component[b]] = component[a]
        # ---- 3. the selected pairs
        two = [
            session.release("2-way marginal", _pair_counts(codes, a, b, sizes) * 1.0)
            for a, b in selected
        ]
        session.finish()
        # ---- estimate (post-processing): row count by inverse-variance weighting of
        # every noisy table total, then the projection onto consistent tables
        tables = one + two
        variances = [t.size * self.one_way_sigma**2 for t in one] + [
            t.size * self.two_way_sigma**2 for t in two
        ]
        w = 1.0 / np.asarray(variances)
        row_estimate = float(np.dot(w, [t.sum() for t in tables]) / w.sum())
        norm = max(row_estimate, 1.0)
        cliques = tuple((a,) for a in range(d)) + tuple(selected)
        probs, iters = project_marginals([t / norm for t in tables], cliques, sizes)
        if generator == "auto":
            generator = "ipf" if math.prod(sizes) <= _IPF_MAX_CELLS else "tree"
        fitted = FittedSynthesizer._build(
            self, probs, None, row_estimate, iters, generator, cliques=cliques
        )
        names = [tuple(self.columns[a].name for a in c) for c in cliques]
        object.__setattr__(fitted, "noisy_tables", dict(zip(names, tables, strict=True)))
        object.__setattr__(
            fitted,
            "selected",
            tuple((self.columns[a].name, self.columns[b].name) for a, b in selected),
        )
        # integer columns of the data come back as integers (the dtype: schema, not values)
        object.__setattr__(fitted, "data_columns", with_data_types(self.columns, data))
        return fitted
