"""Column specifications and tables for marginal synthesis.

The public domain of every column (:class:`CategoricalColumn`, :class:`BinnedNumericColumn`)
and the encoding of data into integer codes (:func:`encode`), reading named tables by
column name.  Part of :mod:`dpacct.mechanisms.algorithms.synthesis` (its module
docstring describes the whole recipe); every name here is importable from there.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpacct.accountant.validation import real_array, show_value

__all__ = [
    "BinnedNumericColumn",
    "CategoricalColumn",
    "Column",
    "encode",
    "with_data_types",
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
    integer : bool or None
        The column holds integers: synthetic values are drawn uniformly among the
        integers of a bin (``ceil(edges[k]) .. ceil(edges[k+1]) - 1``, the last bin up
        to ``floor(edges[-1])``) and returned as ``int64``, and range weights count
        integers; every bin must contain one.  ``False``: real numbers, drawn uniformly
        inside the bin.  ``None`` (default): as the data's column type when the
        synthesizer is fitted (:func:`with_data_types`): an integer dtype (numpy
        ``int``/``uint``, pandas ``Int64``) makes it an integer column, so integer ages
        come back as integers, not as 21.73.  The dtype is the table's schema, not its
        values (a float column of whole numbers stays real: declare ``integer=True``);
        left unresolved (no data seen) it behaves as ``False``.
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
    >>> auto = BinnedNumericColumn("age", [18, 30, 60, 91])    # integer=None: as the data
    >>> with_data_types([auto], {"age": np.array([25, 40])})[0].integer
    True
    """

    name: str
    edges: tuple[float, ...]
    integer: bool | None = None
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
        if self.integer is not None and not isinstance(self.integer, bool | np.bool_):
            raise TypeError(f"integer of column {self.name!r} must be a bool or None, got "
                            f"{self.integer!r}")
        if self.integer is not None:
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
        return _integer_ranges(self.edges)

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


def _named_columns(data: object) -> list[Any] | None:
    """The column names of a named table (mapping, DataFrame-like, structured array),
    or ``None`` for data read by position (a plain 2-D array or nested sequence)."""
    if isinstance(data, Mapping):
        return list(data)
    if isinstance(data, np.ndarray):
        return list(data.dtype.names) if data.dtype.names else None
    cols = getattr(data, "columns", None)
    if cols is not None and hasattr(data, "__getitem__") and not isinstance(cols, str | bytes):
        try:  # pandas, polars and other DataFrames: read by name, never by position
            return list(cols)
        except TypeError:
            return None
    return None


def _column_arrays(columns: tuple[Column, ...], data: object) -> list[np.ndarray]:
    """Split ``data`` into one array per column specification, matched by name.

    A named table (a mapping ``{name: values}``, a pandas or polars DataFrame, a
    structured numpy array) is read by column name, whatever its column order; its
    columns that are not specified are not read, and a ``UserWarning`` names them.  A
    plain 2-D array has no names and is read by position.
    """
    names = [c.name for c in columns]
    present = _named_columns(data)
    if present is not None:
        what = "data" if isinstance(data, Mapping) else f"the {type(data).__name__}"
        missing = [n for n in names if n not in present]
        extra = [k for k in present if k not in names]
        if missing:
            raise ValueError(
                f"{what} is missing columns {missing!r} (declared columns {names!r}; "
                f"its columns are {present!r})"
            )
        dupes = sorted({n for n in names if present.count(n) > 1})
        if dupes:
            raise ValueError(f"{what} has more than one column named {dupes!r}")
        if extra:
            warnings.warn(
                f"{what} has columns {extra!r} that are not in columns {names!r}; they are "
                "ignored (not read)",
                UserWarning,
                stacklevel=4,
            )
        arrays = [np.asarray(data[n]) for n in names]  # type: ignore[index]
        for n, a in zip(names, arrays, strict=True):
            if a.ndim != 1:
                raise ValueError(f"data[{n!r}] must be one-dimensional, got shape {a.shape}")
        lengths = {len(a) for a in arrays}
        if len(lengths) > 1:
            raise ValueError(f"data columns must have equal lengths, got {sorted(lengths)!r}")
        return arrays
    if isinstance(data, str | bytes) or data is None:
        raise TypeError(
            f"data must be a mapping of columns, a DataFrame or a 2-D array, got {data!r}"
        )
    arr = np.asarray(data)
    if arr.ndim != 2:
        raise ValueError(f"data must be a 2-D array (rows x columns), got shape {arr.shape}")
    if arr.shape[1] != len(columns):
        raise ValueError(
            f"data has {arr.shape[1]} columns but {len(columns)} column specifications were given"
        )
    return [arr[:, j] for j in range(arr.shape[1])]


def _column_dtypes(columns: tuple[Column, ...], data: object) -> list[Any]:
    """The dtype of every declared column in ``data`` (read as :func:`encode` reads it),
    without converting the values (a pandas ``Int64`` column keeps its dtype)."""
    names = [c.name for c in columns]
    if _named_columns(data) is not None:
        if isinstance(data, np.ndarray):       # structured array
            return [data.dtype[n] for n in names]
        return [getattr(data[n], "dtype", None) or np.asarray(data[n]).dtype  # type: ignore[index]
                for n in names]
    return [a.dtype for a in _column_arrays(columns, data)]


def with_data_types(columns: Sequence[Column], data: object) -> tuple[Column, ...]:
    """The columns with every ``BinnedNumericColumn(integer=None)`` resolved from ``data``.

    ``integer=True`` when the data's column has an integer dtype (numpy ``int``/``uint``,
    pandas nullable ``Int64``; its ``dtype.kind`` is ``"i"`` or ``"u"``) and every bin
    contains an integer, else ``False``.  Only the column's *type* is read -- the
    table's schema, which does not depend on the records' values -- so the choice
    leaks nothing about them; a float column of whole numbers stays real.  Declared
    ``True`` / ``False`` are kept.  Other columns are returned unchanged.

    Parameters
    ----------
    columns : sequence of CategoricalColumn or BinnedNumericColumn
        The column specifications.
    data : mapping, DataFrame or 2-D array
        The table, as :func:`encode` reads it.

    Examples
    --------
    >>> cols = [BinnedNumericColumn("age", [0, 50, 100]), BinnedNumericColumn("bmi", [15, 45])]
    >>> [c.integer for c in with_data_types(cols, {"age": [20, 70], "bmi": [21.5, 30.0]})]
    [True, False]
    """
    cols = _check_columns(columns)
    if not any(isinstance(c, BinnedNumericColumn) and c.integer is None for c in cols):
        return cols
    out = []
    for c, dtype in zip(cols, _column_dtypes(cols, data), strict=True):
        if isinstance(c, BinnedNumericColumn) and c.integer is None:
            integral = (getattr(dtype, "kind", None) in ("i", "u")
                        and _every_bin_has_integer(c.edges))
            c = BinnedNumericColumn(c.name, c.edges, integral, c.out_of_range)
        out.append(c)
    return tuple(out)


def _every_bin_has_integer(edges: tuple[float, ...]) -> bool:
    lo, hi = _integer_ranges(edges)
    return bool((hi >= lo).all())


def _integer_ranges(edges: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """First and last integer of every bin (the last bin is closed on the right)."""
    e = np.asarray(edges)
    lo = np.ceil(e[:-1])
    hi = np.ceil(e[1:]) - 1.0
    hi[-1] = np.floor(e[-1])
    return lo, hi


def _encode_arrays(cols: tuple[Column, ...], arrays: list[np.ndarray]) -> np.ndarray:
    if len(arrays[0]) == 0:
        raise ValueError("data must contain at least one row, got 0")
    return np.stack([c.encode(a) for c, a in zip(cols, arrays, strict=True)], axis=1)


def encode(columns: Sequence[Column], data: object) -> np.ndarray:
    """Integer codes of ``data``: an ``(n, len(columns))`` array, column ``j`` in ``0..size_j-1``.

    Parameters
    ----------
    columns : sequence of CategoricalColumn or BinnedNumericColumn
        The column specifications (public domain).
    data : mapping, DataFrame or 2-D array
        A named table -- ``{name: values}``, a pandas (or polars) DataFrame, a
        structured numpy array -- is read **by column name**, in any column order;
        its columns that are not in ``columns`` are not read, and a ``UserWarning``
        names them (so a frame with an ID column or other fields can be passed as it
        is, and a misspelt name still fails: the declared column is then missing).  A
        plain ``(n, d)`` array has no names: its columns follow ``columns``.

    Raises
    ------
    ValueError
        Empty data, missing columns (named, with the columns the data has), a name
        that occurs twice, unequal lengths, NaN, an unknown category or a value
        outside a column's edges (the message names the column).

    Warns
    -----
    UserWarning
        When a named table has columns that are not in ``columns`` (named; ignored).

    Examples
    --------
    >>> cols = [CategoricalColumn("sex", ["f", "m"]), BinnedNumericColumn("bmi", [15, 25, 45])]
    >>> encode(cols, {"sex": ["m", "f"], "bmi": [22.0, 31.5]}).tolist()
    [[1, 0], [0, 1]]
    >>> encode(cols, {"bmi": [22.0, 31.5], "sex": ["m", "f"]}).tolist()   # by name
    [[1, 0], [0, 1]]
    """
    cols = _check_columns(columns)
    return _encode_arrays(cols, _column_arrays(cols, data))
