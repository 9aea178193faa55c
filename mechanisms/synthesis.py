"""Differentially private synthetic data from noisy 1-way and 2-way marginals.

The recipe follows the *select-measure-generate* paradigm of marginal-based synthesis
(McKenna, Sheldon, Miklau 2019, "Graphical-model based estimation and inference for
differential privacy", ICML; McKenna, Miklau, Sheldon 2021, "Winning the NIST contest:
a scalable and general approach to differentially private synthetic data"), in a
self-contained form without a graphical-model inference library:

1. **Measure.**  Every marginal in the chosen set (all 1-way marginals, all pairs, or
   an explicit list of one- and two-column sets) is released as a histogram with
   independent Laplace or Gaussian noise on every cell; the row count is released once
   more with its own noise.  Under add/remove-one-row neighbours a marginal histogram
   changes by exactly 1 in exactly one cell, so its L1 and its L2 sensitivity are both 1;
   the row count has sensitivity 1 too.  The privacy of the whole run is therefore the
   composition of one ``LaplaceMechanism(b=scale)`` (or ``GaussianMechanism(sigma=scale)``)
   per measured marginal and one with ``count_scale`` for the count:
   :meth:`MarginalSynthesizer.primitives`.

2. **Estimate** (post-processing, free of privacy cost).  The noisy histograms are
   scaled to proportions and replaced by their least-squares projection onto the *local
   polytope*: non-negative tables that sum to one and agree on every column they
   share.  This is the estimator of McKenna et al. 2019 (Eq. 2: ``argmin ||M mu - y||^2``
   over marginals) relaxed to the local polytope as in McKenna, Mullins, Sheldon,
   Miklau 2021 ("Relaxed marginal consistency for differentially private query
   answering", NeurIPS, Section 3); all measured cells have the same noise variance, so
   the unweighted L2 loss is the generalised least-squares (Gaussian maximum-likelihood)
   loss.  The projection is computed exactly by Dykstra's alternating projection
   algorithm (Boyle & Dykstra 1986) between

   * the affine set of mutually consistent tables (:func:`_project_consistent`: a
     closed form, the inverse-variance weighted averaging of Hay, Rastogi, Miklau,
     Suciu 2010 and PriView, Qardaji, Yang, Li 2014, Section 4.3), and
   * the product of probability simplices (:func:`project_simplex`, Wang &
     Carreira-Perpinan 2013, Algorithm 1).

3. **Generate.**  Synthetic rows are drawn from one of two models (``generator``):

   * ``'ipf'`` (default when the full domain has at most ``2**20`` cells): the
     maximum-entropy joint distribution whose marginals are the estimated tables,
     fitted by iterative proportional fitting (:func:`ipf`; Deming & Stephan 1940).
     This is the distribution Private-PGM estimates for the same measurements when
     they are realisable (McKenna et al. 2019, Section 4: the maximum-entropy
     solution is the graphical model over the measured cliques); rows are drawn from
     the joint table by inverse-CDF sampling.
   * ``'tree'`` (any domain size): the measured pairs form a graph over the columns;
     its maximum-weight spanning forest with mutual information (computed from the
     estimated pair tables) as weights is the Chow & Liu (1968) tree, the best tree
     approximation in Kullback-Leibler divergence.  Rows are sampled root first and
     then child given parent from the pairwise conditionals (ancestral sampling).  On
     a tree the local polytope equals the marginal polytope, so the sampled
     distribution reproduces every estimated table on a tree edge and every estimated
     1-way marginal exactly; measured pairs off the tree are only reflected through
     the tree.

   Binned numeric values are drawn uniformly inside their bin; an integer column
   (``BinnedNumericColumn(..., integer=True)``, e.g. ages in whole years) is drawn
   uniformly among the integers of its bin, so that its mean is not shifted by half a
   unit (a bin ``[30, 40)`` of integer ages holds 30..39, mean 34.5, not 35).

The fitted model answers marginals and range queries exactly for the distribution the
synthetic rows are drawn from (:meth:`FittedSynthesizer.marginal`,
:meth:`FittedSynthesizer.range_query`); a sampled :class:`Table` answers the same
queries empirically.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from dpacct.accountant.mechanism import Mechanism
from dpacct.accountant.serialization import register_mechanism
from dpacct.accountant.validation import check_count, check_positive, check_rng

from .algorithm import Algorithm, PlannedRelease
from .noise import NOISES, noise_mechanism

# the split modules' names stay importable from here (the private ones for the tests)
from .synthesis_columns import (  # noqa: F401
    BinnedNumericColumn,
    CategoricalColumn,
    Column,
    Table,
    _check_columns,
    _check_conditions,
    _column_arrays,
    _resolve,
    encode,
)
from .synthesis_estimate import (  # noqa: F401
    _Layout,
    _project_consistent,
    _project_simplices,
    ipf,
    project_marginals,
    project_simplex,
)
from .synthesis_model import FittedSynthesizer, _mutual_information  # noqa: F401

__all__ = [
    "BinnedNumericColumn",
    "CategoricalColumn",
    "FittedSynthesizer",
    "MarginalSynthesizer",
    "Table",
    "encode",
    "ipf",
    "project_marginals",
    "project_simplex",
]

# ----------------------------------------------------------------------------------
# the synthesizer
# ----------------------------------------------------------------------------------

_NOISES = NOISES
_GENERATORS = ("auto", "ipf", "tree")
#: largest full domain (number of cells) that generator='auto' fits by IPF
_IPF_MAX_CELLS = 2**20


def _check_generator(generator: object) -> str:
    if generator not in _GENERATORS:
        raise ValueError(f"generator must be one of {_GENERATORS!r}, got {generator!r}")
    return generator  # type: ignore[return-value]



def _cliques(columns: tuple[Column, ...], marginals: object) -> tuple[tuple[int, ...], ...]:
    d = len(columns)
    if isinstance(marginals, str):
        if marginals == "1-way":
            return tuple((j,) for j in range(d))
        if marginals == "2-way":
            if d < 2:
                raise ValueError("marginals='2-way' needs at least 2 columns")
            return tuple(combinations(range(d), 2))
        raise ValueError(
            f"marginals must be '1-way', '2-way' or a list of column tuples, got {marginals!r}"
        )
    try:
        items = list(marginals)  # type: ignore[call-overload]
    except TypeError as exc:
        raise TypeError(
            f"marginals must be '1-way', '2-way' or a list of column tuples, got {marginals!r}"
        ) from exc
    if not items:
        raise ValueError("marginals must not be empty")
    out = []
    for m in items:
        idx = _resolve(columns, m, "marginals")
        if len(idx) not in (1, 2):
            raise ValueError(f"marginals must have 1 or 2 columns each, got {m!r}")
        out.append(idx)
    if len({frozenset(c) for c in out}) != len(out):
        raise ValueError(f"marginals must not repeat a marginal, got {marginals!r}")
    uncovered = sorted(set(range(d)) - {a for c in out for a in c})
    if uncovered:
        raise ValueError(
            "marginals must cover every column; not measured: "
            f"{[columns[a].name for a in uncovered]!r}"
        )
    return tuple(out)


@register_mechanism("marginal_synthesizer")
@dataclass(frozen=True)
class MarginalSynthesizer(Algorithm):
    """Synthetic data from noisy marginals (measure, estimate, generate; module docstring).

    Privacy: each measured marginal histogram has L1 = L2 sensitivity 1 under
    add/remove one row (one cell changes by 1), and so has the row count, so the run is
    the composition of ``len(cliques)`` copies of ``LaplaceMechanism(b=scale)`` (or
    ``GaussianMechanism(sigma=scale)``) and, when the count is measured, one with
    ``count_scale`` for the count (:meth:`primitives`).  The column specifications
    (the domain) are public; clipping values of a binned column to its edges
    (``out_of_range="clip"`` on the column) is a per-record map and changes nothing.

    Parameters
    ----------
    columns : sequence of CategoricalColumn or BinnedNumericColumn
    marginals : '1-way', '2-way' or sequence of tuples of column names
        ``'1-way'``: every single column; ``'2-way'``: every pair of columns; or an
        explicit list of one- and two-column sets that together cover every column.
    noise : 'laplace' or 'gaussian'
    scale : float
        Noise scale per unit of sensitivity (Laplace ``b`` or Gaussian ``sigma``), > 0.
    count_scale : float, optional
        Noise scale of the row count (default: ``scale``), > 0; only with
        ``count="measure"``.
    count : 'measure', None or int
        How the number of rows is obtained.  ``'measure'`` (default): one more noisy
        release of the count, combined with the noisy table totals.  ``None``: no count
        release, the number of rows is estimated from the noisy table totals alone
        (the histograms are the only releases).  An int ``n``: the number of rows is
        public (e.g. a census total published anyway) and used as is; no count
        release.  (Under add/remove neighbours a public ``n`` is an assumption about
        the data set, stated by whoever gives it.)

    Examples
    --------
    >>> cols = [CategoricalColumn("a", [0, 1]), CategoricalColumn("b", [0, 1])]
    >>> syn = MarginalSynthesizer(cols, marginals="2-way", noise="laplace", scale=2.0)
    >>> syn.pure_epsilon         # one pair + the count, each 1/2-DP
    1.0
    >>> rng = np.random.default_rng(0)
    >>> x = rng.integers(0, 2, size=1000)
    >>> model = syn.fit({"a": x, "b": x}, rng=rng)   # perfectly correlated columns
    >>> t = model.sample(rng=rng)
    >>> abs(t.n_rows - 1000) < 20, bool((t.column("a") == t.column("b")).mean() > 0.98)
    (True, True)
    """

    columns: tuple[Column, ...]
    marginals: str | tuple[tuple[str, ...], ...] = "2-way"
    noise: str = "laplace"
    scale: float = 1.0
    count_scale: float | None = None
    count: str | int | None = "measure"

    def __post_init__(self) -> None:
        cols = _check_columns(self.columns)
        object.__setattr__(self, "columns", cols)
        if not isinstance(self.marginals, str):
            cliques = _cliques(cols, self.marginals)
            object.__setattr__(
                self, "marginals", tuple(tuple(cols[a].name for a in c) for c in cliques)
            )
        else:
            _cliques(cols, self.marginals)
        if self.noise not in _NOISES:
            raise ValueError(f"noise must be one of {_NOISES!r}, got {self.noise!r}")
        object.__setattr__(self, "scale", check_positive("scale", self.scale))
        if self.count is not None and not (isinstance(self.count, str)
                                           and self.count == "measure"):
            if isinstance(self.count, str):
                raise ValueError(f"count must be 'measure', None or a public number of rows, "
                                 f"got {self.count!r}")
            object.__setattr__(self, "count", check_count(self.count, "count"))
        if self.count != "measure":
            if self.count_scale is not None:
                raise ValueError(
                    f"count_scale is only used with count='measure', got count={self.count!r}"
                )
            return
        cs = self.scale if self.count_scale is None else self.count_scale
        object.__setattr__(self, "count_scale", check_positive("count_scale", cs))

    @property
    def measures_count(self) -> bool:
        """Whether the row count is released (``count='measure'``)."""
        return self.count == "measure"

    # ------------------------------------------------------------------ privacy
    @property
    def cliques(self) -> tuple[tuple[int, ...], ...]:
        """The measured marginals as tuples of column indices."""
        return _cliques(self.columns, self.marginals)

    @property
    def sizes(self) -> tuple[int, ...]:
        """Domain size of every column."""
        return tuple(c.size for c in self.columns)

    def _mechanism(self, scale: float) -> Mechanism:
        return noise_mechanism(self.noise, scale)

    def planned_releases(self) -> tuple[PlannedRelease, ...]:
        """One release per measured marginal and one for the row count, sensitivity 1.

        Examples
        --------
        >>> cols = [CategoricalColumn("a", [0, 1]), CategoricalColumn("b", [0, 1, 2])]
        >>> MarginalSynthesizer(cols, "1-way", "gaussian", scale=3.0, count_scale=5.0).primitives()
        ([GaussianMechanism(sigma=3.0), GaussianMechanism(sigma=5.0)], [2, 1])
        """
        marginals = PlannedRelease("marginal", self._mechanism(self.scale), len(self.cliques))
        if not self.measures_count:
            return (marginals,)
        return (
            marginals,
            PlannedRelease("row count", self._mechanism(self.count_scale), 1),  # type: ignore[arg-type]
        )

    @property
    def pure_epsilon(self) -> float:
        """Pure-DP epsilon ``k / scale + 1 / count_scale`` (Laplace; without the count
        term when the count is not measured); ``inf`` for Gaussian."""
        if self.noise != "laplace":
            return math.inf
        count_term = 1.0 / self.count_scale if self.measures_count else 0.0  # type: ignore[operator]
        return len(self.cliques) / self.scale + count_term

    # ---------------------------------------------------------------------- run
    def fit(
        self, data: object, *, rng: np.random.Generator, generator: str = "auto"
    ) -> FittedSynthesizer:
        """Measure the noisy marginals and count of ``data`` and fit the model.

        Parameters
        ----------
        data : mapping, DataFrame or 2-D array
            Rows over :attr:`columns` (see :func:`encode`): a mapping or DataFrame is
            read by column name (other columns are ignored with a warning naming
            them), a plain array by position; values must lie in the declared domain.
        rng : numpy.random.Generator
            Source of the privacy noise.
        generator : 'auto', 'ipf' or 'tree'
            The sampling model (post-processing; module docstring): ``'ipf'`` fits the
            maximum-entropy joint distribution matching every estimated marginal by
            iterative proportional fitting (needs the full domain in memory);
            ``'tree'`` uses the Chow-Liu tree of pairwise conditionals.  ``'auto'``
            picks ``'ipf'`` when the domain has at most ``2**20`` cells.
        """
        check_rng(rng)
        _check_generator(generator)
        codes = encode(self.columns, data)
        tables = []
        for c in self.cliques:
            shape = tuple(self.sizes[a] for a in c)
            flat = np.ravel_multi_index(tuple(codes[:, a] for a in c), shape)
            tables.append(np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape))
        return self._fit_tables(tables, codes.shape[0], rng, generator)

    def fit_counts(
        self, counts: object, *, rng: np.random.Generator, generator: str = "auto"
    ) -> FittedSynthesizer:
        """Like :meth:`fit`, from a full contingency table of the data.

        Parameters
        ----------
        counts : array_like, shape ``sizes``
            Non-negative integer counts of every combination of column codes.
        rng : numpy.random.Generator
        generator : 'auto', 'ipf' or 'tree'
            The sampling model (see :meth:`fit`).

        Examples
        --------
        >>> cols = [CategoricalColumn("a", [0, 1]), CategoricalColumn("b", [0, 1])]
        >>> syn = MarginalSynthesizer(cols, scale=0.01)
        >>> m = syn.fit_counts([[300, 0], [0, 700]], rng=np.random.default_rng(1))
        >>> np.round(m.marginal(["a", "b"])).tolist()
        [[300.0, 0.0], [0.0, 700.0]]
        """
        check_rng(rng)
        _check_generator(generator)
        if isinstance(counts, str | bytes):
            raise TypeError(f"counts must be an array of counts, got {counts!r}")
        try:
            arr = np.asarray(counts, dtype=float)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"counts must be an array of numbers, got {counts!r}") from exc
        if arr.shape != self.sizes:
            raise ValueError(
                f"counts must have shape {self.sizes} (the column sizes), got {arr.shape}"
            )
        if np.isnan(arr).any() or np.isinf(arr).any():
            raise ValueError("counts must be finite (no NaN or inf)")
        if (arr < 0).any():
            raise ValueError(f"counts must be non-negative, got {arr[arr < 0].ravel()[0]!r}")
        if (arr != np.round(arr)).any():
            bad = arr[arr != np.round(arr)].ravel()[0]
            raise ValueError(f"counts must be integers, got {bad!r}")
        n = int(arr.sum())
        if n == 0:
            raise ValueError("counts must contain at least one row (they sum to 0)")
        d = len(self.columns)
        tables = [
            arr.sum(axis=tuple(a for a in range(d) if a not in c)).transpose(
                np.argsort(np.argsort(c))
            )
            for c in self.cliques
        ]
        return self._fit_tables(tables, n, rng, generator)

    def _variance(self, scale: float) -> float:
        return 2.0 * scale**2 if self.noise == "laplace" else scale**2

    def _fit_tables(
        self, tables: list[np.ndarray], n: int, rng: np.random.Generator, generator: str
    ) -> FittedSynthesizer:
        # ---- measure (the only step that touches the data)
        session = self.releases(rng)
        noisy = [session.release("marginal", t.astype(float)) for t in tables]
        noisy_count = session.release("row count", float(n)) if self.measures_count else None
        session.finish()
        # ---- estimate (post-processing)
        # row count: inverse-variance weighted mean of the noisy count and the noisy
        # table totals (each an unbiased estimate of n, variances v_c and k_C v); a
        # public count is used as is
        v_t = self._variance(self.scale)
        est = [float(t.sum()) for t in noisy]
        var = [t.size * v_t for t in noisy]
        if noisy_count is not None:
            est.append(noisy_count)
            var.append(self._variance(self.count_scale))  # type: ignore[arg-type]
        w = 1.0 / np.asarray(var)
        row_estimate = float(np.dot(w, est) / w.sum())
        if isinstance(self.count, int):
            row_estimate = float(self.count)
        norm = max(row_estimate, 1.0)
        probs, iters = project_marginals([t / norm for t in noisy], self.cliques, self.sizes)
        if generator == "auto":
            generator = "ipf" if math.prod(self.sizes) <= _IPF_MAX_CELLS else "tree"
        fitted = FittedSynthesizer._build(self, probs, noisy_count, row_estimate, iters,
                                          generator)
        names = [tuple(self.columns[a].name for a in c) for c in self.cliques]
        object.__setattr__(fitted, "noisy_tables", dict(zip(names, noisy, strict=True)))
        return fitted


