"""Transformations whose stability the library derives, float round-off included.

:class:`~dpacct.mechanisms.Transformation` takes the user's word for a stability.  The
constructors here build the everyday steps of an analyst's pipeline -- select and cast
columns, impute, clamp, resize, then sum, count, mean, variance or a histogram -- and
*derive* each one's stability, under the add/remove relation and under replace-one
(``docs/theory/transformations.md`` proves every number).  Two things make the claim
cover what the computer outputs, not only the real-number function:

* **the float implementation is fixed and analysed**: sums are computed by
  :func:`pairwise_sum` (a balanced binary tree of IEEE additions, depth
  ``h = ceil(log2 n)``), whose error is at most ``gamma_h * sum |x_i|`` with
  ``gamma_k = k u / (1 - k u)``, ``u = 2**-53`` (Higham 2002, "Accuracy and Stability
  of Numerical Algorithms", 2nd ed., Section 4.2, bound (4.6) for pairwise summation;
  the recursive-summation bound is ``gamma_{n-1}``, (4.4));
* **the round-off of both neighbours is added to the stability**: for a float sum
  ``S*``, ``|S*(D) - S*(D')| <= |S(D) - S(D')| + err(D) + err(D')`` (the argument
  OpenDP's float sums use, Casacuberta, Shoemate, Vadhan, Wagaman 2022), and the
  stability is computed in exact rational arithmetic and rounded *up* to a float.

The float error needs a public bound on the number of records: ``max_records`` (a sum,
default ``2**20``, OpenDP's) or the exact ``size`` (a mean or a variance, OpenDP's
known-size convention; for a private size chain :func:`resize` first, which maps an
add/remove neighbour to a one-record replacement).  Row-wise steps (select, cast,
impute, clamp) map one record to one record: 1-stable under either relation.  ``a >> b``
chains steps; the stabilities multiply and the relations must agree.

Examples
--------
>>> data = {"age": ["34", "n/a", "51", "200"]}
>>> pipeline = (select_column("age") >> cast_float() >> impute_constant(40.0)
...             >> clamp(0.0, 100.0) >> bounded_sum((0.0, 100.0)))
>>> pipeline(data)
225.0
>>> pipeline.relation, float(pipeline.stability - 100.0) * 2**33 // 1   # 2 gamma_20 2**20 100
('add/remove', 4000.0)
>>> round(pipeline.then_laplace(scale=200.0).pure_epsilon, 6)
0.5
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpacct.accountant.mechanism import Mechanism
from dpacct.accountant.relations import ADD_REMOVE, REPLACE_ONE
from dpacct.accountant.validation import (
    as_float_array,
    check_count,
    check_finite,
    check_real_values,
    show_value,
)

from ..primitives.gaussian import ReplaceOneGaussianMechanism
from ..primitives.laplace import ReplaceOneLaplaceMechanism
from .transformations import Transformation, TransformedMechanism

__all__ = [
    "DEFAULT_MAX_RECORDS",
    "ProvedTransformation",
    "bounded_mean",
    "bounded_sum",
    "bounded_variance",
    "cast_float",
    "clamp",
    "count",
    "count_by_categories",
    "impute_constant",
    "pairwise_sum",
    "pairwise_sum_error",
    "resize",
    "select_column",
    "select_columns",
]

#: the public bound on the number of records a sum assumes unless told (OpenDP's)
DEFAULT_MAX_RECORDS = 2**20
#: the unit round-off of float64
_U = Fraction(1, 2**53)
#: sums whose worst case n * max|x| exceeds this are refused (no overflow can occur)
_OVERFLOW = Fraction(2) ** 1000
#: a multiplication or division that underflows errs by an absolute amount at most this
#: (Higham 2002, (2.8)); additions and subtractions that underflow are exact
_ETA = Fraction(1, 2**1074)
_RELATIONS = (ADD_REMOVE, REPLACE_ONE)


# ------------------------------------------------------------------ float summation
def pairwise_sum(values: Any) -> Any:
    """Sum along the first axis by a balanced binary tree of float64 additions.

    Level by level, element ``2i`` is added to element ``2i + 1`` (a zero is appended
    to an odd level: adding 0 is exact), so every input passes through at most
    ``ceil(log2 n)`` roundings.  The order is fixed by this function, not by numpy's
    summation kernel, so the error bound :func:`pairwise_sum_error` is a theorem about
    *this* output.  Vectorised: ``log2 n`` array additions.

    Parameters
    ----------
    values : array_like
        Shape ``(n,)`` or ``(n, d)``; float64.

    Returns
    -------
    float or numpy.ndarray
        The sum (a float for 1-D input, shape ``(d,)`` for 2-D); 0 for ``n = 0``.

    Examples
    --------
    >>> pairwise_sum([1.0, 2.0, 3.0])
    6.0
    >>> pairwise_sum(np.ones((5, 2))).tolist()
    [5.0, 5.0]
    """
    x = np.asarray(values, dtype=np.float64)
    if x.shape[0] == 0:
        out = np.zeros(x.shape[1:])
    else:
        while x.shape[0] > 1:
            if x.shape[0] % 2:
                x = np.concatenate([x, np.zeros((1, *x.shape[1:]))])
            x = x[0::2] + x[1::2]
        out = x[0]
    return float(out) if out.ndim == 0 else out


def _gamma(k: int) -> Fraction:
    """Higham's ``gamma_k = k u / (1 - k u)`` (2002, Section 3.1), exactly."""
    return k * _U / (1 - k * _U)


def _depth(n: int) -> int:
    return max(0, (n - 1).bit_length())          # ceil(log2 n), 0 for n <= 1


def pairwise_sum_error(max_records: int, magnitude: float) -> float:
    """Bound on ``|pairwise_sum(x) - sum(x)|`` for at most ``max_records`` values of
    absolute value at most ``magnitude``: ``gamma_h * N * magnitude``, rounded up.

    Higham 2002, Section 4.2, (4.6): a summation tree of depth ``h`` errs by at most
    ``gamma_h sum |x_i|``; here ``h = ceil(log2 N)`` and ``sum |x_i| <= N magnitude``.

    Parameters
    ----------
    max_records : int
        ``N``, >= 1.
    magnitude : float
        A bound on every ``|x_i|``.

    Returns
    -------
    float

    Examples
    --------
    >>> float(pairwise_sum_error(2**20, 1.0) * 2**33)      # gamma_20 * 2**20 = 20 / 2**33 (+)
    20.000000000000046
    >>> pairwise_sum_error(1, 5.0)                       # one value: no rounding
    0.0
    """
    n = check_count(max_records, "max_records")
    return _up(_gamma(_depth(n)) * n * Fraction(abs(check_finite("magnitude", magnitude))))


def _up(value: Fraction) -> float:
    """The smallest float >= ``value`` (an upper bound rounds up)."""
    f = float(value)
    return f if Fraction(f) >= value else math.nextafter(f, math.inf)


# ------------------------------------------------------------------ the class
@dataclass(frozen=True)
class ProvedTransformation(Transformation):
    """A :class:`~dpacct.mechanisms.Transformation` whose stability the library derived.

    Built by this module's constructors, not by hand.  ``relation`` is the neighbouring
    relation the ``stability`` is stated for (``None`` for a row-wise step, which is
    1-stable under either and keeps it); ``output_relation`` (dataset outputs only) is
    the relation its output stability is counted in: ``stability`` added/removed
    records, or ``stability`` replaced records.  ``derivation`` is the formula.

    Parameters
    ----------
    function, stability, metric, name, randomized
        As :class:`~dpacct.mechanisms.Transformation`.
    relation : {'add/remove', 'replace-one'} or None
        The input relation of ``stability`` (``None``: row-wise, either).
    output_relation : {'add/remove', 'replace-one'} or None
        For dataset outputs: what ``stability`` counts (``None``: as ``relation``).
    derivation : str
        The formula of the stability, for the record.
    bounds_map : callable, optional
        Dataset outputs: ``(lo, hi)`` guaranteed on the input values (or ``None``) ->
        ``(lo, hi)`` guaranteed on the output values (or ``None``).
    input_bounds : (float, float), optional
        Aggregates: the values they need; a chain must guarantee them (clamp first).

    Examples
    --------
    >>> t = bounded_sum((2.0, 3.0), max_records=100)
    >>> t.relation, t.metric, t.stability > 3.0
    ('add/remove', 'l1', True)
    >>> bounded_sum((2.0, 3.0), relation="replace-one").then_laplace(2.0).neighbouring
    'replace-one'
    """

    relation: str | None = None
    output_relation: str | None = None
    derivation: str = ""
    bounds_map: Any = None
    input_bounds: tuple[float, float] | None = None

    def _guaranteed(self, bounds: tuple[float, float] | None = None) -> Any:
        return self.bounds_map(bounds) if self.bounds_map is not None else None

    def _mid(self) -> str | None:
        return self.output_relation or self.relation

    def __rshift__(self, other: Transformation) -> Transformation:
        """Chain: stabilities multiply; the relation ``self`` outputs must be the one
        ``other`` is stated for.  A plain (declared) transformation after a proved one
        is taken as add/remove and gives a plain (declared) chain."""
        if not isinstance(other, Transformation):
            return NotImplemented
        if self.metric != "symmetric":
            raise ValueError(f"only a dataset-valued transformation can be followed by "
                             f"another; {self.name} outputs in {self.metric}")
        mid = self._mid()
        need = other.relation if isinstance(other, ProvedTransformation) else ADD_REMOVE
        if need is not None and mid is not None and need != mid:
            raise ValueError(f"{other.name} is stated for {need!r} neighbours, but "
                             f"{self.name} outputs {mid!r} neighbours")
        plain = Transformation.__rshift__(self, other)
        if not isinstance(other, ProvedTransformation):
            return plain
        if other.input_bounds is not None:
            lo, hi = other.input_bounds
            got = self._guaranteed()
            if got is None or not lo <= got[0] <= got[1] <= hi:
                raise ValueError(
                    f"{other.name} needs values in [{lo}, {hi}], which {self.name} does not "
                    f"guarantee: chain clamp({lo}, {hi}) (and a resize fill inside) first")
        relation = self.relation or need
        out_rel = None
        if other.metric == "symmetric":
            out_rel = other.output_relation or other.relation or mid
        return ProvedTransformation(
            plain.function, plain.stability, plain.metric, name=plain.name,
            randomized=plain.randomized, relation=relation, output_relation=out_rel,
            derivation=f"({self.derivation or 1}) * ({other.derivation or 1})",
            bounds_map=lambda b: other._guaranteed(self._guaranteed(b)),
            input_bounds=self.input_bounds)

    def _noise(self, mech: TransformedMechanism, replace_cls: type) -> TransformedMechanism:
        if self.relation is None:
            raise ValueError(f"{self.name} states no neighbouring relation")
        if self.relation == ADD_REMOVE:
            return mech
        p = mech.primitive
        prim = replace_cls(b=p.b) if replace_cls is ReplaceOneLaplaceMechanism else \
            replace_cls(sigma=p.sigma)
        return TransformedMechanism(self, prim)

    def then_laplace(self, scale: float) -> TransformedMechanism:
        """Laplace noise of ``scale``: pure ``stability / scale``-DP under ``relation``.

        Parameters
        ----------
        scale : float
            The Laplace scale actually added, > 0.

        Returns
        -------
        TransformedMechanism

        Examples
        --------
        >>> count().then_laplace(scale=2.0).pure_epsilon
        0.5
        """
        return self._noise(super().then_laplace(scale), ReplaceOneLaplaceMechanism)

    def then_gaussian(self, scale: float) -> TransformedMechanism:
        """Gaussian noise of standard deviation ``scale``: noise multiplier
        ``scale / stability`` under ``relation``.

        Parameters
        ----------
        scale : float
            The standard deviation actually added, > 0.

        Returns
        -------
        TransformedMechanism

        Examples
        --------
        >>> h = count_by_categories(["a", "b"], metric="l2", relation="replace-one")
        >>> m = h.then_gaussian(scale=2.0)
        >>> m.neighbouring, round(m.primitive.sigma, 9)    # 2 / sqrt(2)
        ('replace-one', 1.414213562)
        """
        return self._noise(super().then_gaussian(scale), ReplaceOneGaussianMechanism)

    def then(self, mechanism: Mechanism, method: str, *, delta: float | None = None,
             **kwargs: Any) -> TransformedMechanism:
        """A dataset mechanism (add/remove) on the output: group privacy at distance
        ``stability`` (``2 stability`` when the output moves by replaced records).

        Parameters
        ----------
        mechanism : Mechanism
            Under add/remove.
        method : str
            Its method that runs on data.
        delta : float, optional
            For a mechanism without a pure epsilon (:func:`group_privacy`).
        **kwargs
            Passed on to ``method``.

        Returns
        -------
        TransformedMechanism
        """
        if self.relation == REPLACE_ONE:
            raise ValueError("group privacy chains add/remove steps; this transformation "
                             "is stated for replace-one neighbours")
        k = int(self.stability) * (2 if self._mid() == REPLACE_ONE else 1)
        t = Transformation(self.function, k, "symmetric", name=self.name,
                           randomized=self.randomized)
        return t.then(mechanism, method, delta=delta, **kwargs)


def _check_relation(relation: object) -> str:
    if relation not in _RELATIONS:
        raise ValueError(f"relation must be one of {_RELATIONS}, got {relation!r}")
    return str(relation)


def _row(fn: Any, name: str, doc: str, bounds_map: Any = None) -> ProvedTransformation:
    return ProvedTransformation(fn, 1, "symmetric", name=name, derivation=doc,
                                bounds_map=bounds_map)


# ------------------------------------------------------------------ row-wise steps
def select_column(name: str) -> ProvedTransformation:
    """The column ``name`` of a table (a mapping of columns, e.g. a DataFrame): 1-stable.

    Row ``i`` of the output is a function of row ``i`` of the input alone, so an added,
    removed or replaced record adds, removes or replaces one output record.  A list
    column is kept value by value (dtype object), never coerced to a common type.

    Parameters
    ----------
    name : str
        The column's key.

    Examples
    --------
    >>> select_column("x")({"x": [1, 2], "y": [3, 4]}).tolist()
    [1, 2]
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {show_value(name)}")

    def select(data: Any) -> np.ndarray:
        try:
            col = data[name]
        except (KeyError, IndexError) as exc:
            raise ValueError(f"the data have no column {name!r}") from exc
        if hasattr(col, "dtype"):            # a typed column: its type is the schema's
            return np.asarray(col)
        # a list: each value kept as it is (np.asarray would turn 0.0 into '0.0' when
        # another record is a string: a record's output would depend on the others)
        out = np.empty(len(col), dtype=object)
        out[:] = list(col)
        return out

    return _row(select, f"select {name!r}", "1 (row-wise)")


def select_columns(names: Sequence[str]) -> ProvedTransformation:
    """The columns ``names`` of a table, as the rows of an ``(n, len(names))`` array:
    1-stable (row-wise).

    Parameters
    ----------
    names : sequence of str
        The columns' keys, in the output's column order.

    Examples
    --------
    >>> select_columns(["y", "x"])({"x": [1, 2], "y": [3, 4]}).tolist()
    [[3, 1], [4, 2]]
    """
    names = tuple(names)
    if not names or not all(isinstance(n, str) for n in names):
        raise TypeError(f"names must be a non-empty sequence of str, got {names!r}")
    one = [select_column(n).function for n in names]
    return _row(lambda data: np.column_stack([f(data) for f in one]),
                f"select {list(names)}", "1 (row-wise)")


def _to_float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def cast_float() -> ProvedTransformation:
    """Every value to float64; a value that does not parse becomes NaN: 1-stable.

    Examples
    --------
    >>> cast_float()(np.array(["1.5", "x", None], dtype=object)).tolist()
    [1.5, nan, nan]
    """
    conv = np.frompyfunc(_to_float, 1, 1)

    def cast(data: Any) -> np.ndarray:
        arr = np.asarray(data)
        if arr.dtype.kind in "biuf":
            return arr.astype(np.float64)
        return np.asarray(conv(arr), dtype=np.float64)

    return _row(cast, "cast float", "1 (row-wise)")


def impute_constant(value: float) -> ProvedTransformation:
    """Replace NaN by ``value``: 1-stable (row-wise).

    Parameters
    ----------
    value : float
        Finite.

    Examples
    --------
    >>> impute_constant(0.0)([1.0, np.nan]).tolist()
    [1.0, 0.0]
    """
    v = check_finite("value", value)
    return _row(lambda data: np.where(np.isnan(d := np.asarray(data, dtype=np.float64)), v, d),
                f"impute {v!r}", "1 (row-wise)")


def clamp(lower: Any, upper: Any) -> ProvedTransformation:
    """Clip every value to ``[lower, upper]`` (per column for arrays of bounds): 1-stable.

    Clipping returns an input or a bound: exact in floats.  NaN is refused (impute
    first); infinite bounds leave that side open.

    Parameters
    ----------
    lower, upper : float or array_like
        Bounds, ``lower <= upper``, broadcast over the columns.

    Examples
    --------
    >>> clamp(0.0, 1.0)([-2.0, 0.5, 7.0]).tolist()
    [0.0, 0.5, 1.0]
    >>> clamp([-3.0, -np.inf], [3.0, np.inf])([[5.0, 9.0]]).tolist()
    [[3.0, 9.0]]
    """
    lo, hi = as_float_array("lower", lower), as_float_array("upper", upper)
    if not np.all(lo <= hi):
        raise ValueError(f"clamp needs lower <= upper, got {show_value(lower)}, "
                         f"{show_value(upper)}")

    def clip(data: Any) -> np.ndarray:
        d = np.asarray(data, dtype=np.float64)
        if np.isnan(d).any():
            raise ValueError("clamp received NaN: chain impute_constant first")
        return np.clip(d, lo, hi)

    scalar = (float(lo), float(hi)) if lo.ndim == hi.ndim == 0 else None
    return _row(clip, f"clamp [{lower}, {upper}]", "1 (row-wise)", lambda b: scalar)


def resize(size: int, fill: Any, *, relation: str = ADD_REMOVE) -> ProvedTransformation:
    """Exactly ``size`` records: pad with ``fill``, or keep a uniformly random subset.

    Randomised.  An add/remove neighbour becomes a one-record *replacement* under a
    coupling (docs/theory/transformations.md): stability 1 from ``relation`` to
    replace-one.  This is how a mean or a variance, which needs a public size, takes
    data whose size is private (OpenDP's ``make_resize``; it counts the replacement
    as symmetric distance 2).

    Parameters
    ----------
    size : int
        The output's number of records, >= 1.
    fill : float or array_like
        The padding record (public).
    relation : {'add/remove', 'replace-one'}
        The neighbouring relation the stability is stated for.

    Examples
    --------
    >>> r = resize(4, 0.0)
    >>> r([1.0, 2.0], np.random.default_rng(0)).tolist()
    [1.0, 2.0, 0.0, 0.0]
    >>> r.output_relation, r.stability
    ('replace-one', 1.0)
    """
    size = check_count(size, "size")
    relation = _check_relation(relation)
    fill_row = check_real_values("fill", fill)[0]

    def fit(data: Any, rng: np.random.Generator) -> np.ndarray:
        d = np.asarray(data, dtype=np.float64)
        n = d.shape[0]
        if n >= size:
            return d[np.sort(rng.choice(n, size=size, replace=False))]
        pad = np.broadcast_to(fill_row, (size - n, *d.shape[1:]))
        return np.concatenate([d, pad])

    return ProvedTransformation(fit, 1, "symmetric", name=f"resize {size}", randomized=True,
                                relation=relation, output_relation=REPLACE_ONE,
                                bounds_map=lambda b: b if b is not None and fill_row.ndim == 0
                                and b[0] <= float(fill_row) <= b[1] else None,
                                derivation="1 replaced record (coupling)")


# ------------------------------------------------------------------ aggregates
def _bounds(bounds: object) -> tuple[float, float]:
    try:
        lo, hi = bounds  # type: ignore[misc]
    except (TypeError, ValueError):
        raise ValueError(f"bounds must be a pair (lower, upper), got {show_value(bounds)}"
                         ) from None
    lo, hi = check_finite("bounds[0]", lo), check_finite("bounds[1]", hi)
    if not lo <= hi:
        raise ValueError(f"bounds must have lower <= upper, got {bounds!r}")
    return lo, hi


def _in_bounds(data: Any, lo: float, hi: float, limit: int, what: str) -> np.ndarray:
    d = np.asarray(data, dtype=np.float64)
    if d.ndim != 1:
        raise ValueError(f"{what} takes a 1-D array of values, got shape {d.shape}")
    if d.size > limit:
        raise ValueError(f"{what}: the data have {d.size} records, more than the "
                         f"declared bound {limit} (its float error assumes at most that)")
    if not np.all((d >= lo) & (d <= hi)):
        raise ValueError(f"{what} needs values in [{lo}, {hi}] (no NaN): chain clamp first")
    return d


def _check_magnitude(n: int, mag: Fraction, what: str) -> None:
    if n * mag > _OVERFLOW:
        raise ValueError(f"{what}: {n} records of magnitude up to {float(mag):.3g} could "
                         "overflow float64; narrow the bounds")


def bounded_sum(bounds: tuple[float, float], *, max_records: int = DEFAULT_MAX_RECORDS,
                relation: str = ADD_REMOVE) -> ProvedTransformation:
    """The float sum of values in ``[L, U]`` (:func:`pairwise_sum`), L1 stability derived.

    * add/remove: ``max(|L|, |U|) + 2 e``;
    * replace-one: ``(U - L) + 2 e``,

    with ``e = gamma_h N max(|L|, |U|)`` the bound on either neighbour's round-off
    (:func:`pairwise_sum_error`, ``N = max_records``).  Datasets of more than
    ``max_records`` records, or with values outside the bounds, are refused.

    Parameters
    ----------
    bounds : (float, float)
        ``(L, U)``, finite, ``L <= U``.
    max_records : int
        A public upper bound on the number of records, >= 1.
    relation : {'add/remove', 'replace-one'}

    Examples
    --------
    >>> s = bounded_sum((0.0, 10.0), max_records=1000)
    >>> s([1.0, 2.5]), s.stability > 10.0
    (3.5, True)
    >>> round(bounded_sum((2.0, 3.0), relation="replace-one").stability, 6)   # U - L
    1.0
    """
    lo, hi = _bounds(bounds)
    n = check_count(max_records, "max_records")
    relation = _check_relation(relation)
    mag = max(Fraction(abs(lo)), Fraction(abs(hi)))
    _check_magnitude(n, mag, "bounded_sum")
    err = _gamma(_depth(n)) * n * mag
    ideal = mag if relation == ADD_REMOVE else Fraction(hi) - Fraction(lo)
    c = _up(ideal + 2 * err)
    if c == 0.0:
        raise ValueError(f"bounded_sum with bounds {bounds!r} is constant under {relation}: "
                         "release it without noise")
    return ProvedTransformation(
        lambda data: pairwise_sum(_in_bounds(data, lo, hi, n, "bounded_sum")), c, "l1",
        name=f"sum [{lo}, {hi}]", relation=relation, input_bounds=(lo, hi),
        derivation=("max(|L|,|U|)" if relation == ADD_REMOVE else "U-L") + " + 2 gamma_h N M")


def count(*, relation: str = ADD_REMOVE) -> ProvedTransformation:
    """The number of records (an exact integer): L1 stability 1 under add/remove.

    Under replace-one the count does not change: it is public, and this refuses.

    Parameters
    ----------
    relation : {'add/remove', 'replace-one'}
        The neighbouring relation the stability is stated for.

    Examples
    --------
    >>> count()(np.zeros(7)), count().stability
    (7, 1.0)
    """
    if _check_relation(relation) == REPLACE_ONE:
        raise ValueError("under replace-one the number of records is the same for all "
                         "neighbours (public): release it without noise")
    return ProvedTransformation(lambda data: int(np.shape(data)[0]), 1, "l1", name="count",
                                relation=ADD_REMOVE, derivation="1")


def count_by_categories(categories: Sequence[Any], *, null_category: bool = True,
                        metric: str = "l1", relation: str = ADD_REMOVE
                        ) -> ProvedTransformation:
    """Counts of each public category (a histogram), plus one bin for the rest.

    One added or removed record moves one count by 1 (L1 and L2 stability 1); one
    replaced record moves at most two counts by 1 each (L1 2, L2 ``sqrt 2``).  The
    counts are exact integers.  With ``null_category=False`` values outside the
    categories are dropped (the same stabilities bound it).

    Parameters
    ----------
    categories : sequence
        Distinct public categories.
    null_category : bool
        Whether to count the values outside ``categories`` in a last bin.
    metric : {'l1', 'l2'}
        The output metric.
    relation : {'add/remove', 'replace-one'}
        The neighbouring relation the stability is stated for.

    Examples
    --------
    >>> h = count_by_categories(["a", "b"])
    >>> h(np.array(["a", "c", "a"])).tolist()
    [2, 0, 1]
    >>> count_by_categories(["a"], relation="replace-one").stability
    2.0
    """
    cats = list(categories)
    if not cats or len(set(cats)) != len(cats):
        raise ValueError(f"categories must be distinct and non-empty, got {cats!r}")
    if metric not in ("l1", "l2"):
        raise ValueError(f"metric must be 'l1' or 'l2', got {metric!r}")
    relation = _check_relation(relation)
    index = {c: i for i, c in enumerate(cats)}
    k = len(cats)

    def histogram(data: Any) -> np.ndarray:
        if len(data) == 0:
            return np.zeros(k + null_category, dtype=np.int64)
        if hasattr(data, "dtype") and np.asarray(data).dtype.kind in "biufUS":
            # a typed column: one lookup per distinct value
            uniq, inv = np.unique(np.asarray(data), return_inverse=True)
            slot = np.array([index.get(v.item(), k) for v in uniq])[inv.ravel()]
        else:
            # a list or objects: each value looked up as it is (no coercion to a common
            # type, which would make a record's bin depend on the other records)
            slot = np.fromiter((index.get(v, k) for v in data), dtype=np.int64,
                               count=len(data))
        counts = np.bincount(slot, minlength=k + 1)
        return counts if null_category else counts[:k]

    c = 1.0 if relation == ADD_REMOVE else (2.0 if metric == "l1"
                                            else math.nextafter(math.sqrt(2.0), math.inf))
    return ProvedTransformation(histogram, c, metric, name="count by categories",
                                relation=relation, derivation="1 / 2 (l1), sqrt 2 (l2)")


def _sized(size: object, relation: object, what: str) -> int:
    n = check_count(size, "size")
    if _check_relation(relation) != REPLACE_ONE:
        raise ValueError(
            f"{what} needs a public dataset size: state it with size= and relation="
            "'replace-one' (a record replaced), or chain resize(size, fill) first, which "
            "maps add/remove neighbours to replace-one; a bound on the size is not enough")
    return n


def _sized_values(data: Any, lo: float, hi: float, n: int, what: str) -> np.ndarray:
    d = _in_bounds(data, lo, hi, n, what)
    if d.size != n:
        raise ValueError(f"{what}: the declared size is {n}, the data have {d.size} "
                         "records (chain resize)")
    return d


def _mean_error(n: int, mag: Fraction) -> Fraction:
    e_sum = _gamma(_depth(n)) * n * mag
    return e_sum / n + _U * (mag + e_sum / n) + _ETA


def bounded_mean(bounds: tuple[float, float], size: int, *,
                 relation: str = REPLACE_ONE) -> ProvedTransformation:
    """The mean of exactly ``size`` values in ``[L, U]``: L1 stability
    ``(U - L) / n + 2 e_mean`` under replace-one.

    Computed as ``pairwise_sum(x) / n``; ``e_mean = e / n + u (M + e / n)`` bounds its
    round-off (``e`` the sum's, ``u = 2**-53``, ``M = max(|L|, |U|)``).

    Parameters
    ----------
    bounds : (float, float)
        ``(L, U)``, finite.
    size : int
        The public number of records.
    relation : {'replace-one'}
        Add/remove is refused (chain :func:`resize`).

    Examples
    --------
    >>> m = bounded_mean((0.0, 10.0), 4)
    >>> m([1.0, 2.0, 3.0, 6.0]), round(m.stability, 12)
    (3.0, 2.5)
    """
    lo, hi = _bounds(bounds)
    n = _sized(size, relation, "bounded_mean")
    mag = max(Fraction(abs(lo)), Fraction(abs(hi)))
    _check_magnitude(n, mag, "bounded_mean")
    c = _up((Fraction(hi) - Fraction(lo)) / n + 2 * _mean_error(n, mag))
    if c == 0.0:
        raise ValueError("bounded_mean with L = U is constant")
    return ProvedTransformation(
        lambda data: pairwise_sum(_sized_values(data, lo, hi, n, "bounded_mean")) / n, c,
        "l1", name=f"mean [{lo}, {hi}] of {n}", relation=REPLACE_ONE, input_bounds=(lo, hi),
        derivation="(U-L)/n + 2 e_mean")


def bounded_variance(bounds: tuple[float, float], size: int, *, ddof: int = 1,
                     relation: str = REPLACE_ONE) -> ProvedTransformation:
    """The variance of exactly ``size`` values in ``[L, U]``: L1 stability
    ``(U - L)^2 (n - 1) / (n (n - ddof)) + 2 e_var`` under replace-one.

    Two passes: ``c = pairwise_sum(x) / n``, then ``pairwise_sum((x - c)^2) / (n - ddof)``.
    Replacing one record moves the sum of squared deviations by at most
    ``(1 - 1/n)(U - L)^2`` (docs/theory/transformations.md); ``e_var`` bounds the
    round-off, the inexact centre included.

    Parameters
    ----------
    bounds : (float, float)
        ``(L, U)``, finite.
    size : int
        The public number of records, >= 2.
    ddof : int
        Divide by ``size - ddof``; ``0 <= ddof < size``.
    relation : {'replace-one'}
        Add/remove is refused (chain :func:`resize`).

    Examples
    --------
    >>> v = bounded_variance((0.0, 1.0), 4)
    >>> v([0.0, 0.0, 1.0, 1.0]), round(v.stability, 12)      # (1 - 1/4) / 3
    (0.3333333333333333, 0.25)
    """
    lo, hi = _bounds(bounds)
    n = _sized(size, relation, "bounded_variance")
    ddof = check_count(ddof, "ddof", allow_zero=True)
    if not (n >= 2 and ddof < n):
        raise ValueError(f"bounded_variance needs size >= 2 and 0 <= ddof < size, got "
                         f"size={n}, ddof={ddof}")
    mag = max(Fraction(abs(lo)), Fraction(abs(hi)))
    w = Fraction(hi) - Fraction(lo)
    _check_magnitude(n, max(mag, w * w), "bounded_variance")
    e_c = _mean_error(n, mag)
    e_q = n * e_c * e_c + _gamma(_depth(n) + 3) * n * (w + e_c) ** 2 + 2 * n * _ETA
    e_v = (e_q + _U * (n * w * w / 4 + e_q)) / (n - ddof) + _ETA
    c = _up(w * w * (n - 1) / n / (n - ddof) + 2 * e_v)
    if w == 0:
        raise ValueError("bounded_variance with L = U is constant")

    def variance(data: Any) -> float:
        d = _sized_values(data, lo, hi, n, "bounded_variance")
        centre = pairwise_sum(d) / n
        dev = d - centre
        return pairwise_sum(dev * dev) / (n - ddof)

    return ProvedTransformation(variance, c, "l1", name=f"variance [{lo}, {hi}] of {n}",
                                relation=REPLACE_ONE, input_bounds=(lo, hi),
                                derivation="(U-L)^2 (n-1)/(n (n-ddof)) + 2 e_var")
