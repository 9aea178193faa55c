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
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from dpacct.accountant.mechanism import Mechanism
from dpacct.accountant.serialization import register_mechanism
from dpacct.accountant.validation import (
    check_count,
    check_positive,
    check_rng,
    real_array,
    show_value,
)

from .algorithm import Algorithm, PlannedRelease
from .noise import NOISES, noise_mechanism

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
# column specifications
# ----------------------------------------------------------------------------------


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    return name


def _is_nan(value: object) -> bool:
    return isinstance(value, numbers.Real | np.floating) and math.isnan(float(value))


@dataclass(frozen=True)
class CategoricalColumn:
    """A categorical column with an explicit, public list of categories.

    The categories are the column's domain: they are public (chosen without looking
    at the data), and a value that is not one of them raises an error when encoded.

    Parameters
    ----------
    name : str
        Column name (non-empty).
    categories : sequence
        The distinct categories (hashable, not NaN), at least one.

    Examples
    --------
    >>> col = CategoricalColumn("smoker", ["no", "yes"])
    >>> col.size
    2
    >>> col.encode(["yes", "no", "yes"]).tolist()
    [1, 0, 1]
    >>> col.decode(np.array([0, 1])).tolist()
    ['no', 'yes']
    """

    name: str
    categories: tuple[Any, ...]

    def __post_init__(self) -> None:
        _check_name(self.name)
        if isinstance(self.categories, str | bytes):
            raise TypeError(
                f"categories of column {self.name!r} must be a sequence of categories, "
                f"got the string {self.categories!r}"
            )
        try:
            cats = tuple(self.categories)
        except TypeError as exc:
            raise TypeError(
                f"categories of column {self.name!r} must be a sequence, got {self.categories!r}"
            ) from exc
        if not cats:
            raise ValueError(f"categories of column {self.name!r} must not be empty")
        if any(_is_nan(c) for c in cats):
            raise ValueError(f"categories of column {self.name!r} must not contain NaN")
        try:
            unique = len(set(cats))
        except TypeError as exc:
            raise TypeError(f"categories of column {self.name!r} must be hashable") from exc
        if unique != len(cats):
            raise ValueError(f"categories of column {self.name!r} must be unique, got {cats!r}")
        object.__setattr__(self, "categories", cats)

    @property
    def size(self) -> int:
        """Number of categories (cells of this column's 1-way marginal)."""
        return len(self.categories)

    def _category_array(self) -> np.ndarray:
        arr = np.asarray(self.categories)
        if arr.ndim != 1 or arr.tolist() != list(self.categories):
            arr = np.empty(len(self.categories), dtype=object)
            arr[:] = list(self.categories)
        return arr

    def encode(self, values: object) -> np.ndarray:
        """Integer codes ``0 .. size-1`` of ``values``; unknown values raise ``ValueError``.

        Parameters
        ----------
        values : array_like
            One-dimensional values, each one of the categories.
        """
        vals = np.asarray(values)
        if vals.ndim != 1:
            raise ValueError(
                f"column {self.name!r} must be one-dimensional, got shape {vals.shape}"
            )
        if vals.dtype.kind == "f" and np.isnan(vals).any():
            raise ValueError(f"column {self.name!r} contains NaN")
        try:
            uniq, inverse = np.unique(vals, return_inverse=True)
        except TypeError as exc:
            raise TypeError(
                f"column {self.name!r} mixes value types that cannot be compared: {exc}"
            ) from exc
        lookup = {c: i for i, c in enumerate(self.categories)}
        codes_of_unique = np.empty(len(uniq), dtype=np.int64)
        for i, u in enumerate(uniq.tolist()):  # loop over distinct values, not rows
            if _is_nan(u):
                raise ValueError(f"column {self.name!r} contains NaN")
            if u not in lookup:
                raise ValueError(
                    f"column {self.name!r} contains {u!r}, which is not one of its "
                    f"categories {self.categories!r}"
                )
            codes_of_unique[i] = lookup[u]
        return codes_of_unique[inverse.reshape(-1)]

    def decode(self, codes: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """The categories of integer ``codes``.

        Parameters
        ----------
        codes : numpy.ndarray
            Integer codes, in ``0 .. size-1``.
        rng : numpy.random.Generator, optional
            Unused (categories need no randomness); kept for symmetry with
            :meth:`BinnedNumericColumn.decode`.
        """
        return self._category_array()[np.asarray(codes, dtype=np.int64)]

    def weights(self, condition: object) -> np.ndarray:
        """Indicator over the categories of a range-query condition (allowed categories).

        Parameters
        ----------
        condition : object
            The allowed categories: one category or an iterable of them.
        """
        if isinstance(condition, str | bytes) or not isinstance(condition, Iterable):
            condition = [condition]
        allowed = list(condition)
        lookup = {c: i for i, c in enumerate(self.categories)}
        w = np.zeros(self.size)
        for c in allowed:
            if _is_nan(c) or c not in lookup:
                raise ValueError(
                    f"condition on column {self.name!r}: {c!r} is not one of its "
                    f"categories {self.categories!r}"
                )
            w[lookup[c]] = 1.0
        return w


@dataclass(frozen=True)
class BinnedNumericColumn:
    """A numeric column discretised into bins with public, fixed edges.

    Bin ``k`` is ``[edges[k], edges[k+1])``, the last one closed on the right, so the
    domain is ``[edges[0], edges[-1]]``.  A value outside it (or NaN) raises an error
    when encoded, unless ``out_of_range="clip"``: then it is clipped to the domain
    (a per-record map with public edges, so a marginal's sensitivity stays 1).

    Parameters
    ----------
    name : str
        Column name (non-empty).
    edges : sequence of float
        At least two finite, strictly increasing bin edges.
    integer : bool
        The column holds integers (default False): synthetic values are drawn
        uniformly among the integers of a bin (``ceil(edges[k]) .. ceil(edges[k+1]) -
        1``, the last bin up to ``floor(edges[-1])``), and range weights count
        integers; every bin must contain one.
    out_of_range : {'raise', 'clip'}
        Values outside the edges: raise (default) or clip to the domain.

    Examples
    --------
    >>> col = BinnedNumericColumn("age", [0, 30, 60, 100])
    >>> col.size
    3
    >>> col.encode([0, 29.9, 30, 100]).tolist()
    [0, 0, 1, 2]
    >>> col.weights((15, 45)).tolist()    # overlap of [15, 45] with each bin
    [0.5, 0.5, 0.0]
    >>> ages = BinnedNumericColumn("age", [18, 30, 60, 91], integer=True)
    >>> ages.decode(np.array([0, 0, 2]), np.random.default_rng(0)).dtype.kind
    'i'
    >>> ages.weights((18, 24)).tolist()[0]   # 18..23 of the 12 ages 18..29
    0.5
    """

    name: str
    edges: tuple[float, ...]
    integer: bool = False
    out_of_range: str = "raise"

    def __post_init__(self) -> None:
        _check_name(self.name)
        what = f"edges of column {self.name!r}"
        e = real_array(what, self.edges, "numbers")  # no strings, bools or complex
        if e.ndim != 1 or e.size < 2:
            raise ValueError(
                f"{what} must be a 1-D sequence of at least 2 numbers, "
                f"got {show_value(self.edges)}"
            )
        if not np.isfinite(e).all():
            raise ValueError(f"{what} must be finite, got {show_value(self.edges)}")
        if not (np.diff(e) > 0).all():
            raise ValueError(f"{what} must be strictly increasing, got {show_value(self.edges)}")
        object.__setattr__(self, "edges", tuple(float(x) for x in e))
        if not isinstance(self.integer, bool | np.bool_):
            raise TypeError(f"integer of column {self.name!r} must be a bool, got "
                            f"{self.integer!r}")
        object.__setattr__(self, "integer", bool(self.integer))
        if self.out_of_range not in ("raise", "clip"):
            raise ValueError(f"out_of_range of column {self.name!r} must be 'raise' or 'clip', "
                             f"got {self.out_of_range!r}")
        if self.integer:
            lo, hi = self._integer_ranges()
            if (hi < lo).any():
                k = int(np.argmax(hi < lo))
                raise ValueError(
                    f"integer column {self.name!r}: bin {k} [{e[k]!r}, {e[k + 1]!r}) contains "
                    "no integer"
                )

    @property
    def size(self) -> int:
        """Number of bins."""
        return len(self.edges) - 1

    def _integer_ranges(self) -> tuple[np.ndarray, np.ndarray]:
        """First and last integer of every bin (the last bin is closed on the right)."""
        e = np.asarray(self.edges)
        lo = np.ceil(e[:-1])
        hi = np.ceil(e[1:]) - 1.0
        hi[-1] = np.floor(e[-1])
        return lo, hi

    def encode(self, values: object) -> np.ndarray:
        """Bin index of each value; NaN or values outside the edges raise ``ValueError``.

        Parameters
        ----------
        values : array_like
            One-dimensional numbers (outside the edges: clipped with
            ``out_of_range='clip'``).
        """
        try:
            v = np.asarray(values, dtype=float)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"column {self.name!r} must contain numbers") from exc
        if v.ndim != 1:
            raise ValueError(f"column {self.name!r} must be one-dimensional, got shape {v.shape}")
        if np.isnan(v).any():
            raise ValueError(f"column {self.name!r} contains NaN")
        lo, hi = self.edges[0], self.edges[-1]
        outside = (v < lo) | (v > hi)
        if outside.any():
            if self.out_of_range == "clip":
                v = np.clip(v, lo, hi)
            else:
                raise ValueError(
                    f"column {self.name!r} contains {float(v[outside][0])!r}, outside its "
                    f"edges [{lo!r}, {hi!r}] (declare out_of_range='clip' to clip)"
                )
        codes = np.searchsorted(np.asarray(self.edges), v, side="right") - 1
        return np.minimum(codes, self.size - 1).astype(np.int64)

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Values drawn uniformly inside the bins ``codes``.

        Uniformly among the bin's integers, as ``int64``, for an integer column.

        Parameters
        ----------
        codes : numpy.ndarray
            Bin indices, in ``0 .. size-1``.
        rng : numpy.random.Generator
            The source of the within-bin draws.
        """
        codes = np.asarray(codes, dtype=np.int64)
        if self.integer:
            lo, hi = self._integer_ranges()
            first = lo[codes].astype(np.int64)
            span = (hi[codes] - lo[codes]).astype(np.int64) + 1
            return first + np.floor(rng.random(codes.shape) * span).astype(np.int64)
        e = np.asarray(self.edges)
        return e[codes] + rng.random(codes.shape) * (e[codes + 1] - e[codes])

    def weights(self, condition: object) -> np.ndarray:
        """Fraction of each bin inside the interval ``condition = (low, high)``.

        Intervals are half-open, ``[low, high)``, like the bins (and closed at the top
        edge of the domain, like the last bin), so a query whose ends are bin edges
        covers whole bins exactly.

        Parameters
        ----------
        condition : tuple of float
            The interval ``(low, high)``, ``low <= high``.
        """
        try:
            lo, hi = (float(x) for x in condition)  # type: ignore[union-attr]
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"condition on column {self.name!r} must be an interval (low, high), "
                f"got {condition!r}"
            ) from exc
        if math.isnan(lo) or math.isnan(hi) or lo > hi:
            raise ValueError(
                f"condition on column {self.name!r} must satisfy low <= high, got {condition!r}"
            )
        if self.integer:
            # integers m of each bin with lo <= m < hi (m <= hi at the domain's top edge)
            first, last = self._integer_ranges()
            top = math.floor(hi) if hi >= self.edges[-1] else math.ceil(hi) - 1
            inside = np.minimum(last, top) - np.maximum(first, math.ceil(lo)) + 1
            return np.clip(inside, 0.0, None) / (last - first + 1)
        e = np.asarray(self.edges)
        overlap = np.clip(np.minimum(e[1:], hi) - np.maximum(e[:-1], lo), 0.0, None)
        return overlap / np.diff(e)

    def contains(self, values: np.ndarray, condition: object) -> np.ndarray:
        """Boolean mask of ``low <= value < high`` (``<= high`` at the domain's top edge).

        Parameters
        ----------
        values : numpy.ndarray
            Numbers of the column.
        condition : tuple of float
            The interval ``(low, high)``.
        """
        self.weights(condition)  # validation
        lo, hi = (float(x) for x in condition)  # type: ignore[union-attr]
        upper = (values <= hi) if hi >= self.edges[-1] else (values < hi)
        return (values >= lo) & upper


Column = CategoricalColumn | BinnedNumericColumn


def _check_columns(columns: object) -> tuple[Column, ...]:
    if isinstance(columns, CategoricalColumn | BinnedNumericColumn):
        columns = (columns,)
    try:
        cols = tuple(columns)  # type: ignore[arg-type]
    except TypeError as exc:
        raise TypeError(
            f"columns must be a sequence of column specifications, got {columns!r}"
        ) from exc
    if not cols:
        raise ValueError("columns must not be empty")
    for c in cols:
        if not isinstance(c, CategoricalColumn | BinnedNumericColumn):
            raise TypeError(
                f"columns must contain CategoricalColumn or BinnedNumericColumn objects, "
                f"got {type(c).__name__}"
            )
    names = [c.name for c in cols]
    if len(set(names)) != len(names):
        raise ValueError(f"columns must have unique names, got {names!r}")
    return cols


def _column_arrays(columns: tuple[Column, ...], data: object) -> list[np.ndarray]:
    """Split ``data`` (mapping name -> values, or 2-D array) into one array per column."""
    names = [c.name for c in columns]
    if isinstance(data, Mapping):
        missing = [n for n in names if n not in data]
        extra = [k for k in data if k not in names]
        if missing:
            raise ValueError(f"data is missing columns {missing!r}")
        if extra:
            raise ValueError(f"data has columns {extra!r} that are not in columns {names!r}")
        arrays = [np.asarray(data[n]) for n in names]
        for n, a in zip(names, arrays, strict=True):
            if a.ndim != 1:
                raise ValueError(f"data[{n!r}] must be one-dimensional, got shape {a.shape}")
        lengths = {len(a) for a in arrays}
        if len(lengths) > 1:
            raise ValueError(f"data columns must have equal lengths, got {sorted(lengths)!r}")
        return arrays
    if isinstance(data, str | bytes) or data is None:
        raise TypeError(f"data must be a 2-D array or a mapping of columns, got {data!r}")
    arr = np.asarray(data)
    if arr.ndim != 2:
        raise ValueError(f"data must be a 2-D array (rows x columns), got shape {arr.shape}")
    if arr.shape[1] != len(columns):
        raise ValueError(
            f"data has {arr.shape[1]} columns but {len(columns)} column specifications were given"
        )
    return [arr[:, j] for j in range(arr.shape[1])]


def encode(columns: Sequence[Column], data: object) -> np.ndarray:
    """Integer codes of ``data``: an ``(n, len(columns))`` array, column ``j`` in ``0..size_j-1``.

    Parameters
    ----------
    columns : sequence of CategoricalColumn or BinnedNumericColumn
        The column specifications (public domain).
    data : mapping or 2-D array
        ``{name: values}`` with one entry per column, or an ``(n, d)`` array whose columns
        follow ``columns``.

    Raises
    ------
    ValueError
        Empty data, missing/extra columns, unequal lengths, NaN, an unknown category or a
        value outside a column's edges (the message names the column).

    Examples
    --------
    >>> cols = [CategoricalColumn("sex", ["f", "m"]), BinnedNumericColumn("bmi", [15, 25, 45])]
    >>> encode(cols, {"sex": ["m", "f"], "bmi": [22.0, 31.5]}).tolist()
    [[1, 0], [0, 1]]
    """
    cols = _check_columns(columns)
    arrays = _column_arrays(cols, data)
    n = len(arrays[0])
    if n == 0:
        raise ValueError("data must contain at least one row, got 0")
    return np.stack([c.encode(a) for c, a in zip(cols, arrays, strict=True)], axis=1)


# ----------------------------------------------------------------------------------
# tables
# ----------------------------------------------------------------------------------


def _resolve(columns: tuple[Column, ...], names: object, what: str = "columns") -> tuple[int, ...]:
    if isinstance(names, str):
        names = (names,)
    try:
        names = tuple(names)  # type: ignore[arg-type]
    except TypeError as exc:
        raise TypeError(f"{what} must be a column name or a sequence of names") from exc
    index = {c.name: j for j, c in enumerate(columns)}
    out = []
    for n in names:
        if n not in index:
            raise ValueError(f"{what}: unknown column {n!r}; known columns are {list(index)!r}")
        out.append(index[n])
    if len(set(out)) != len(out):
        raise ValueError(f"{what} must not repeat a column, got {names!r}")
    return tuple(out)


def _check_conditions(conditions: object) -> Mapping[str, object]:
    if not isinstance(conditions, Mapping):
        raise TypeError(
            f"conditions must be a mapping {{column name: condition}}, got {conditions!r}"
        )
    return conditions


@dataclass(frozen=True, eq=False)
class Table:
    """A table of rows over declared columns: integer codes plus the values they stand for.

    Built from real data with :meth:`from_data`, or returned by
    :meth:`FittedSynthesizer.sample`.  Answers counting queries empirically.

    Parameters
    ----------
    columns : tuple of column specifications
        The table's columns, in order.
    codes : ndarray of int, shape (n, d)
        The integer code of every cell (column ``j`` in ``0 .. columns[j].size - 1``).
    values : dict of name -> ndarray
        The values (categories, or numbers for binned numeric columns).

    Examples
    --------
    >>> cols = [CategoricalColumn("sex", ["f", "m"]), BinnedNumericColumn("bmi", [15, 25, 45])]
    >>> t = Table.from_data(cols, {"sex": ["m", "f", "m"], "bmi": [22.0, 31.5, 40.0]})
    >>> t.marginal(["sex", "bmi"]).tolist()
    [[0.0, 1.0], [1.0, 1.0]]
    >>> t.range_query({"sex": ["m"], "bmi": (20, 30)})
    1
    """

    columns: tuple[Column, ...]
    codes: np.ndarray
    values: Mapping[str, np.ndarray] = field(repr=False)

    @classmethod
    def from_data(cls, columns: Sequence[Column], data: object) -> Table:
        """Validate and encode ``data`` (see :func:`encode`), keeping its values.

        Parameters
        ----------
        columns : sequence of CategoricalColumn or BinnedNumericColumn
            The column specifications, with unique names.
        data : object
            The table, as accepted by :func:`encode`.
        """
        cols = _check_columns(columns)
        codes = encode(cols, data)
        arrays = _column_arrays(cols, data)
        values = {
            c.name: (np.asarray(a, dtype=float) if isinstance(c, BinnedNumericColumn) else a)
            for c, a in zip(cols, arrays, strict=True)
        }
        return cls(cols, codes, values)

    @property
    def n_rows(self) -> int:
        """Number of rows."""
        return int(self.codes.shape[0])

    def column(self, name: str) -> np.ndarray:
        """The values of column ``name``.

        Parameters
        ----------
        name : str
            A column name.
        """
        (j,) = _resolve(self.columns, [name], "name")
        return self.values[self.columns[j].name]

    def marginal(self, columns: object) -> np.ndarray:
        """Counts of the marginal over ``columns`` (an array of shape ``(size, ...)``).

        Parameters
        ----------
        columns : str or sequence of str
            Column name(s), in the order of the output's axes.
        """
        idx = _resolve(self.columns, columns)
        shape = tuple(self.columns[j].size for j in idx)
        flat = np.ravel_multi_index(tuple(self.codes[:, j] for j in idx), shape)
        counts = np.bincount(flat, minlength=int(np.prod(shape)))
        return counts.astype(float).reshape(shape)

    def range_query(self, conditions: Mapping[str, object]) -> int:
        """Number of rows meeting every condition.

        ``conditions`` maps a column name to the allowed categories (categorical) or a
        half-open interval ``(low, high)`` meaning ``[low, high)`` (binned numeric; closed
        at the top edge of the domain).

        Parameters
        ----------
        conditions : Mapping
            Column name -> condition, as above.
        """
        conds = _check_conditions(conditions)
        mask = np.ones(self.n_rows, dtype=bool)
        for name, cond in conds.items():
            (j,) = _resolve(self.columns, [name], "conditions")
            col = self.columns[j]
            if isinstance(col, CategoricalColumn):
                allowed = np.flatnonzero(col.weights(cond) > 0)
                mask &= np.isin(self.codes[:, j], allowed)
            else:
                mask &= col.contains(self.values[col.name], cond)
        return int(mask.sum())

    def to_dict(self) -> dict[str, np.ndarray]:
        """The values as ``{name: array}``."""
        return {c.name: self.values[c.name] for c in self.columns}


# ----------------------------------------------------------------------------------
# projections
# ----------------------------------------------------------------------------------


def project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row of ``v`` onto the probability simplex.

    Wang & Carreira-Perpinan 2013, "Projection onto the probability simplex: an efficient
    algorithm with a simple proof, and an application", Algorithm 1 (also Duchi et al.
    2008, Figure 1): sort ``u`` descending, ``rho = max{j : u_j + (1 - sum_{i<=j} u_i)/j > 0}``,
    ``lambda = (1 - sum_{i<=rho} u_i) / rho``, answer ``max(v + lambda, 0)``.  Rows may be
    padded with NaN (ignored and returned as NaN), so tables of different sizes are
    projected in one vectorised call.

    Parameters
    ----------
    v : array_like, shape (k,) or (m, k)

    Examples
    --------
    >>> project_simplex(np.array([0.5, 0.8, -0.3])).tolist()
    [0.35, 0.65, 0.0]
    >>> project_simplex(np.array([[0.2, 0.2], [3.0, np.nan]])).tolist()
    [[0.5, 0.5], [1.0, nan]]
    """
    v = np.asarray(v, dtype=float)
    one_d = v.ndim == 1
    x = np.atleast_2d(v)
    valid = ~np.isnan(x)
    if not valid.any(axis=1).all():
        raise ValueError("project_simplex: every row needs at least one non-NaN entry")
    u = -np.sort(-x, axis=1)  # descending; NaN stays last
    css = np.cumsum(u, axis=1)
    j = np.arange(1, x.shape[1] + 1)
    cond = (u + (1.0 - css) / j) > 0  # False on NaN
    rho = cond.sum(axis=1)
    lam = (1.0 - css[np.arange(x.shape[0]), rho - 1]) / rho
    out = np.maximum(x + lam[:, None], 0.0)
    out[~valid] = np.nan
    return out[0] if one_d else out


class _Layout:
    """Flat layout of a list of tables (cliques of 1 or 2 columns) for the projections."""

    def __init__(self, cliques: Sequence[tuple[int, ...]], sizes: Sequence[int]) -> None:
        self.cliques = [tuple(c) for c in cliques]
        self.shapes = [tuple(sizes[a] for a in c) for c in self.cliques]
        self.ncells = np.array([int(np.prod(s)) for s in self.shapes])
        self.offsets = np.concatenate([[0], np.cumsum(self.ncells)])
        self.total = int(self.offsets[-1])
        self.table_of_cell = np.repeat(np.arange(len(self.cliques)), self.ncells)
        width = int(self.ncells.max())
        self.pad = np.full((len(self.cliques), width), -1, dtype=np.int64)
        for t, (o, k) in enumerate(zip(self.offsets[:-1], self.ncells, strict=True)):
            self.pad[t, :k] = np.arange(o, o + k)
        self.pad_valid = self.pad >= 0
        # per attribute shared by >= 2 tables: the cells, their group (table, value)
        # and the number of cells per value in their table
        self.groups: list[tuple[np.ndarray, np.ndarray, np.ndarray, int, int]] = []
        for a in sorted({a for c in self.cliques for a in c}):
            tabs = [t for t, c in enumerate(self.cliques) if a in c]
            if len(tabs) < 2:
                continue
            cells, grp, per = [], [], []
            for local, t in enumerate(tabs):
                pos = self.cliques[t].index(a)
                idx = np.indices(self.shapes[t])[pos].ravel()
                cells.append(np.arange(self.offsets[t], self.offsets[t + 1]))
                grp.append(local * sizes[a] + idx)
                per.append(self.ncells[t] // sizes[a])
            self.groups.append(
                (np.concatenate(cells), np.concatenate(grp), np.array(per, float), len(tabs),
                 sizes[a])
            )

    def split(self, x: np.ndarray) -> list[np.ndarray]:
        return [
            x[o:o + k].reshape(s)
            for o, k, s in zip(self.offsets[:-1], self.ncells, self.shapes, strict=True)
        ]


def _project_consistent(x: np.ndarray, lay: _Layout) -> np.ndarray:
    """Euclidean projection onto {every table sums to 1, shared columns agree}.

    For column ``a`` shared by tables ``C`` with ``k_C`` cells per value of ``a``, the
    closest consistent tables move table ``C`` by ``(mu - m_C) / k_C`` on every cell of
    value row ``i``, with ``mu = sum_C (m_C / k_C) / sum_C (1 / k_C)``: the
    inverse-variance weighted average of the tables' ``a``-marginals ``m_C`` (Hay et al.
    2010; Qardaji, Yang, Li 2014, Section 4.3).  Once all totals agree, the correction
    directions of different columns are mutually orthogonal (zero-sum row-constant
    against zero-sum column-constant), so one pass over the columns is the exact
    projection onto the intersection.
    """
    sums = np.bincount(lay.table_of_cell, weights=x, minlength=len(lay.cliques))
    x = x + ((1.0 - sums) / lay.ncells)[lay.table_of_cell]
    for cells, grp, per, ntab, size in lay.groups:
        m = np.bincount(grp, weights=x[cells], minlength=ntab * size).reshape(ntab, size)
        mu = (m / per[:, None]).sum(axis=0) / (1.0 / per).sum()
        x[cells] += ((mu[None, :] - m) / per[:, None]).ravel()[grp]
    return x


def _project_simplices(x: np.ndarray, lay: _Layout) -> np.ndarray:
    padded = np.where(lay.pad_valid, x[np.maximum(lay.pad, 0)], np.nan)
    proj = project_simplex(padded)
    return proj[lay.pad_valid]


def project_marginals(
    tables: Sequence[np.ndarray],
    cliques: Sequence[tuple[int, ...]],
    sizes: Sequence[int],
    *,
    max_iter: int = 2000,
    tol: float = 1e-9,
) -> tuple[list[np.ndarray], int]:
    """Least-squares projection of noisy proportion tables onto the local polytope.

    Solves ``min sum_C ||P_C - Z_C||^2`` over tables ``P_C >= 0`` that sum to one and
    agree on every column they share (McKenna, Mullins, Sheldon, Miklau 2021,
    Section 3), by Dykstra's algorithm (Boyle & Dykstra 1986) alternating the exact
    projection onto the consistent tables (:func:`_project_consistent`) and onto the
    simplices (:func:`project_simplex`).  Dykstra's iterates converge to the projection
    onto the intersection (not merely a point of it).

    Parameters
    ----------
    tables : sequence of ndarray
        Noisy tables (proportions: counts divided by an estimate of the row count), one
        per clique, of shape ``(sizes[a], ...)`` for the clique's columns ``a``.
    cliques : sequence of tuple of int
        The columns (indices) of each table: one or two columns each.
    sizes : sequence of int
        Domain size of every column.
    max_iter : int
        Maximum number of Dykstra iterations.
    tol : float
        Stop when the simplex iterate is within ``tol`` (max-norm) of the consistent one.

    Returns
    -------
    (list of ndarray, int)
        The projected tables (non-negative, each summing to one; consistent to ``tol``)
        and the number of iterations used.

    Examples
    --------
    >>> p, _ = project_marginals([np.array([0.7, 0.4]), np.array([[0.5, 0.0], [0.1, 0.3]])],
    ...                          [(0,), (0, 1)], [2, 2])
    >>> np.round(p[0], 4).tolist(), np.round(p[1].sum(axis=1), 4).tolist()
    ([0.6167, 0.3833], [0.6167, 0.3833])
    """
    if len(tables) != len(cliques) or not tables:
        raise ValueError("tables and cliques must be non-empty and of equal length")
    lay = _Layout(cliques, sizes)
    for t, (tab, shape) in enumerate(zip(tables, lay.shapes, strict=True)):
        if np.shape(tab) != shape:
            raise ValueError(f"tables[{t}] must have shape {shape}, got {np.shape(tab)}")
    z = np.concatenate([np.asarray(t, dtype=float).ravel() for t in tables])
    if not np.isfinite(z).all():
        raise ValueError("tables must be finite")
    x = z.copy()
    p = np.zeros_like(z)
    q = np.zeros_like(z)
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007
        y = _project_consistent(x + p, lay)
        p = x + p - y
        x_new = _project_simplices(y + q, lay)
        q = y + q - x_new
        gap = float(np.max(np.abs(x_new - y)))
        step = float(np.max(np.abs(x_new - x)))
        x = x_new
        if gap < tol and step < tol:
            break
    return lay.split(x), it


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


def ipf(
    targets: Sequence[np.ndarray],
    cliques: Sequence[tuple[int, ...]],
    sizes: Sequence[int],
    *,
    max_iter: int = 100,
    tol: float = 1e-6,
    smoothing: float = 1e-6,
) -> tuple[np.ndarray, int]:
    """Iterative proportional fitting of a joint distribution to marginal targets.

    Deming & Stephan 1940 (also Bishop, Fienberg, Holland 1975, Section 3.5): start
    from the uniform distribution and cycle over the targets, rescaling the joint so
    that its marginal on clique ``C`` equals ``targets[C]``.  With consistent targets
    that some positive distribution matches, the iterates converge to the
    maximum-entropy distribution with those marginals (Csiszar 1975, Theorem 3.2), the
    maximum-likelihood fit of the log-linear model with one interaction per clique.
    Targets that are consistent but not jointly realisable (possible for cyclic sets of
    pairs) are matched approximately; the fit stops after ``max_iter`` cycles.  Each
    target is mixed with a ``smoothing`` share of the uniform table so that conflicting
    zero cells cannot annihilate the whole joint (the fitted marginals move by at most
    ``smoothing`` in total variation).

    Parameters
    ----------
    targets : sequence of ndarray
        Probability tables (non-negative, summing to one), one per clique.
    cliques : sequence of tuple of int
        The columns of each target.
    sizes : sequence of int
        Domain size of every column.
    max_iter : int
        Maximum number of cycles over the targets.
    tol : float
        Stop when every marginal is within ``tol`` (max-norm) of its target.
    smoothing : float
        Share of the uniform table mixed into each target, in ``[0, 1)``.

    Returns
    -------
    (ndarray, int)
        The joint distribution (shape ``sizes``) and the number of cycles used.

    Examples
    --------
    >>> p, _ = ipf([np.array([[0.4, 0.1], [0.1, 0.4]]), np.array([[0.3, 0.2], [0.2, 0.3]])],
    ...            [(0, 1), (1, 2)], [2, 2, 2])
    >>> np.round(p.sum(axis=2), 3).tolist(), round(float(p[0, 0, 0]), 3)   # 0.4 * 0.3 / 0.5
    ([[0.4, 0.1], [0.1, 0.4]], 0.24)
    """
    d = len(sizes)
    joint = np.full(tuple(sizes), 1.0 / math.prod(sizes))
    plan = []
    for t, c in zip(targets, cliques, strict=True):
        other = tuple(a for a in range(d) if a not in c)
        # target laid out on the clique's columns in increasing order, broadcastable
        tt = np.transpose(np.asarray(t, dtype=float), np.argsort(c))
        tt = (1.0 - smoothing) * tt / tt.sum() + smoothing / tt.size
        plan.append((other, np.expand_dims(tt, other)))
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007
        for other, target in plan:
            m = joint.sum(axis=other, keepdims=True)
            joint *= np.where(m > 0, target / np.where(m > 0, m, 1.0), 0.0)
        gap = max(
            float(np.max(np.abs(joint.sum(axis=other, keepdims=True) - target)))
            for other, target in plan
        )
        if gap < tol:
            break
    return joint / joint.sum(), it


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
        The public column specifications (the domain), with unique names.
    marginals : '1-way', '2-way' or sequence of tuples of column names
        ``'1-way'``: every single column; ``'2-way'``: every pair of columns; or an
        explicit list of one- and two-column sets that together cover every column.
    noise : 'laplace' or 'gaussian'
        The noise added to every release (default ``'laplace'``: pure DP).
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
                                 f"got {show_value(self.count)}")
            object.__setattr__(self, "count", check_count(self.count, "count"))
        if self.count != "measure":
            if self.count_scale is not None:
                raise ValueError(
                    "count_scale is only used with count='measure', got "
                    f"count={show_value(self.count)}"
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
        """Pure-DP epsilon ``k / scale + 1 / count_scale`` (Laplace); ``inf`` for Gaussian.

        Without the count term when the count is not measured.
        """
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
        data : mapping or 2-D array
            Rows over :attr:`columns` (see :func:`encode`); values must lie in the
            declared domain.
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
            The source of the noise.
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
            raise TypeError(f"counts must be an array of counts, got {show_value(counts)}")
        try:
            arr = np.asarray(counts, dtype=float)
        except (TypeError, ValueError) as exc:
            shown = show_value(counts)
            raise TypeError(f"counts must be an array of numbers, got {shown}") from exc
        if arr.shape != self.sizes:
            raise ValueError(
                f"counts must have shape {self.sizes} (the column sizes), got {arr.shape}"
            )
        if np.isnan(arr).any() or np.isinf(arr).any():
            raise ValueError("counts must be finite (no NaN or inf)")
        if (arr < 0).any():
            raise ValueError(f"counts must be non-negative, got {float(arr[arr < 0].ravel()[0])!r}")
        if (arr != np.round(arr)).any():
            bad = arr[arr != np.round(arr)].ravel()[0]
            raise ValueError(f"counts must be integers, got {float(bad)!r}")
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


def _mutual_information(p: np.ndarray) -> float:
    pa = p.sum(axis=1, keepdims=True)
    pb = p.sum(axis=0, keepdims=True)
    prod = pa * pb
    mask = (p > 0) & (prod > 0)
    return float(np.sum(p[mask] * np.log(p[mask] / prod[mask])))


@dataclass(frozen=True, eq=False)
class FittedSynthesizer:
    """A fitted marginal synthesizer: the estimated marginals and the sampling model.

    Everything here is post-processing of the noisy measurements.  The sampled
    distribution is the IPF joint (``generator='ipf'``) or
    ``P(root) * prod_child P(child | parent)`` over the Chow-Liu forest of the measured
    pairs (``generator='tree'``); see the module docstring.  Build it with
    :meth:`MarginalSynthesizer.fit`.  Each parameter is an attribute of the same name.

    Parameters
    ----------
    synthesizer : MarginalSynthesizer
        The synthesizer that was fitted.
    tables : dict
        Estimated probability table of every measured marginal (keyed by column names).
    one_way : dict
        Estimated 1-way distribution of every column.
    parents : dict
        Parent column of every column in the sampling forest (``None`` for roots).
    order : tuple of int
        Column indices in sampling order (every parent before its children).
    conditionals : dict
        Column index -> table of ``P(child | parent)`` (rows: the parent's values), for
        every column with a parent.
    noisy_count : float or None
        The noisy row count as released (None when the count was not measured).
    noisy_tables : dict
        The raw noisy histograms as released (counts, possibly negative), keyed by the
        column names of each measured marginal: the released statistics themselves,
        before any post-processing.
    row_estimate : float
        Inverse-variance weighted combination of the noisy count and the noisy table
        totals (a better estimate of the row count, by post-processing).
    iterations : int
        Dykstra iterations used by the projection.
    generator : str
        ``'ipf'`` or ``'tree'``.
    joint : ndarray or None
        The IPF joint distribution over all columns (``generator='ipf'`` only).

    Examples
    --------
    >>> cols = [CategoricalColumn("a", [0, 1]), CategoricalColumn("b", [0, 1])]
    >>> fitted = MarginalSynthesizer(cols, scale=0.01).fit_counts(
    ...     [[30, 10], [10, 50]], rng=np.random.default_rng(0))
    >>> fitted.parents, fitted.n_rows              # 100 rows, 40 of them with a = 0
    ({'a': None, 'b': 'a'}, 100)
    >>> np.round(fitted.one_way["a"], 2).tolist()
    [0.4, 0.6]
    """

    synthesizer: MarginalSynthesizer
    tables: Mapping[tuple[str, ...], np.ndarray]
    one_way: Mapping[str, np.ndarray]
    parents: Mapping[str, str | None]
    order: tuple[int, ...]
    conditionals: Mapping[int, np.ndarray] = field(repr=False)
    noisy_count: float | None = 0.0
    row_estimate: float = 0.0
    iterations: int = 0
    generator: str = "tree"
    joint: np.ndarray | None = field(default=None, repr=False)
    noisy_tables: Mapping[tuple[str, ...], np.ndarray] = field(default_factory=dict, repr=False)

    @classmethod
    def _build(
        cls,
        syn: MarginalSynthesizer,
        probs: list[np.ndarray],
        noisy_count: float | None,
        row_estimate: float,
        iterations: int,
        generator: str = "tree",
    ) -> FittedSynthesizer:
        cols, cliques, d = syn.columns, syn.cliques, len(syn.columns)
        # 1-way distributions: weighted average of every table's projection (they agree
        # to the projection tolerance); weights 1/k_C as in the projection
        one_way = []
        for a in range(d):
            acc, wsum = np.zeros(cols[a].size), 0.0
            for c, p in zip(cliques, probs, strict=True):
                if a in c:
                    other = tuple(i for i, b in enumerate(c) if b != a)
                    k = p.size / cols[a].size
                    acc += p.sum(axis=other) / k
                    wsum += 1.0 / k
            v = np.maximum(acc / wsum, 0.0)
            one_way.append(v / v.sum())
        # Chow-Liu maximum spanning forest over the measured pairs (Kruskal)
        pairs = [(c, p) for c, p in zip(cliques, probs, strict=True) if len(c) == 2]
        weighted = sorted(
            ((_mutual_information(p), c, p) for c, p in pairs), key=lambda t: -t[0]
        )
        root = list(range(d))

        def find(i: int) -> int:
            while root[i] != i:
                root[i] = root[root[i]]
                i = root[i]
            return i

        adj: dict[int, list[tuple[int, np.ndarray]]] = {a: [] for a in range(d)}
        for _, (u, v), p in weighted:
            ru, rv = find(u), find(v)
            if ru != rv:
                root[ru] = rv
                adj[u].append((v, p))  # p indexed (u, v)
                adj[v].append((u, p.T))
        # orient from the smallest column of each component (breadth first)
        parent: dict[int, int | None] = {}
        conditionals: dict[int, np.ndarray] = {}
        order: list[int] = []
        for r in range(d):
            if r in parent:
                continue
            parent[r] = None
            queue = [r]
            while queue:
                u = queue.pop(0)
                order.append(u)
                for v, p_uv in adj[u]:
                    if v in parent:
                        continue
                    parent[v] = u
                    rows = p_uv.sum(axis=1, keepdims=True)
                    cond = np.where(rows > 0, p_uv / np.where(rows > 0, rows, 1.0), one_way[v])
                    conditionals[v] = cond
                    queue.append(v)
        joint = None
        if generator == "ipf":
            joint, _ = ipf(probs, cliques, syn.sizes)
        return cls(
            synthesizer=syn,
            tables={tuple(cols[a].name for a in c): p for c, p in zip(cliques, probs, strict=True)},
            one_way={cols[a].name: one_way[a] for a in range(d)},
            parents={
                cols[a].name: (None if parent[a] is None else cols[parent[a]].name)  # type: ignore[index]
                for a in range(d)
            },
            order=tuple(order),
            conditionals=conditionals,
            noisy_count=noisy_count,
            row_estimate=row_estimate,
            iterations=iterations,
            generator=generator,
            joint=joint,
        )

    @property
    def columns(self) -> tuple[Column, ...]:
        """The synthesizer's column specifications."""
        return self.synthesizer.columns

    @property
    def n_rows(self) -> int:
        """Default synthetic table size: the estimated row count, rounded, at least 0."""
        return max(0, round(self.row_estimate))

    def _check_n(self, n: object) -> int:
        if n is None:
            return self.n_rows
        return check_count(n, "n", allow_zero=True)

    # ------------------------------------------------------------ model queries
    def _contract(self, out: tuple[int, ...], weights: Mapping[int, np.ndarray]) -> np.ndarray:
        """``sum_x P(x) prod_a w_a(x_a)`` keeping the columns ``out``."""
        operands: list[Any] = []
        if self.joint is not None:
            operands += [self.joint, list(range(len(self.columns)))]
            for a, w in weights.items():
                operands += [w, [a]]
            return np.einsum(*operands, list(out), optimize="greedy")
        names = [c.name for c in self.columns]
        for a in self.order:
            par = self.parents[names[a]]
            if par is None:
                operands += [self.one_way[names[a]], [a]]
            else:
                operands += [self.conditionals[a], [names.index(par), a]]
        for a, w in weights.items():
            operands += [w, [a]]
        return np.einsum(*operands, list(out), optimize="greedy")

    def probability(self, columns: object) -> np.ndarray:
        """The model's distribution of ``columns`` (sums to one).

        Parameters
        ----------
        columns : str or sequence of str
            Column name(s), in the order of the output's axes.

        Examples
        --------
        >>> cols = [CategoricalColumn("a", [0, 1]), CategoricalColumn("b", [0, 1])]
        >>> m = MarginalSynthesizer(cols, scale=0.01).fit_counts(
        ...     [[30, 10], [10, 50]], rng=np.random.default_rng(0))
        >>> np.round(m.probability(["b", "a"]), 2).tolist()
        [[0.3, 0.1], [0.1, 0.5]]
        """
        idx = _resolve(self.columns, columns)
        return self._contract(idx, {})

    def marginal(self, columns: object) -> np.ndarray:
        """Expected counts of the marginal over ``columns`` in a table of :attr:`n_rows` rows.

        Parameters
        ----------
        columns : str or sequence of str
            Column name(s), in the order of the output's axes.
        """
        return self.n_rows * self.probability(columns)

    def range_query(self, conditions: Mapping[str, object], *, n: int | None = None) -> float:
        """Expected number of rows of an ``n``-row synthetic table meeting ``conditions``.

        ``conditions`` maps column names to allowed categories (categorical columns) or
        an interval ``(low, high)`` meaning ``[low, high)`` (binned numeric; closed at the
        top edge of the domain; values are uniform in a bin,
        so a partly covered bin counts by its covered fraction).

        Parameters
        ----------
        conditions : Mapping
            Column name -> condition, as above.
        n : int, optional
            Rows of the synthetic table, >= 0; None: :attr:`n_rows`.

        Examples
        --------
        >>> cols = [CategoricalColumn("a", ["x", "y"]), BinnedNumericColumn("v", [0, 1, 2])]
        >>> m = MarginalSynthesizer(cols, scale=0.01).fit_counts(
        ...     [[40, 0], [0, 60]], rng=np.random.default_rng(0))
        >>> round(m.range_query({"a": ["y"], "v": (1.5, 2.0)}))
        30
        """
        conds = _check_conditions(conditions)
        weights = {}
        for name, cond in conds.items():
            (j,) = _resolve(self.columns, [name], "conditions")
            weights[j] = self.columns[j].weights(cond)
        return float(self._check_n(n) * self._contract((), weights))

    # ----------------------------------------------------------------- sampling
    def sample(self, n: int | None = None, *, rng: np.random.Generator) -> Table:
        """Draw a synthetic table of ``n`` rows (default :attr:`n_rows`) by ancestral sampling.

        Parameters
        ----------
        n : int, optional
            Number of rows, >= 0.
        rng : numpy.random.Generator
            The source of the draws (sampling is post-processing: no privacy cost).
        """
        check_rng(rng)
        n = self._check_n(n)
        d = len(self.columns)
        names = [c.name for c in self.columns]
        codes = np.zeros((n, d), dtype=np.int64)
        if self.joint is not None:
            cdf = np.cumsum(self.joint.ravel())
            flat = np.searchsorted(cdf, rng.random(n) * cdf[-1], side="right")
            flat = np.minimum(flat, cdf.size - 1)
            codes = np.stack(np.unravel_index(flat, self.joint.shape), axis=1).astype(np.int64)
        for a in self.order if self.joint is None else ():
            par = self.parents[names[a]]
            u = rng.random(n)
            if par is None:
                cdf = np.cumsum(self.one_way[names[a]])
                c = np.searchsorted(cdf, u * cdf[-1], side="right")
            else:
                cdf = np.cumsum(self.conditionals[a], axis=1)
                rows = cdf[codes[:, names.index(par)]]
                c = (u[:, None] * rows[:, -1:] >= rows).sum(axis=1)
            codes[:, a] = np.minimum(c, self.columns[a].size - 1)
        values = {col.name: col.decode(codes[:, j], rng) for j, col in enumerate(self.columns)}
        return Table(self.columns, codes, values)
