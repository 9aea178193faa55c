"""The :class:`Table` of rows over declared columns, which answers counting queries.

Part of :mod:`dpacct.mechanisms.algorithms.synthesis` (its module docstring describes the whole
recipe); :class:`Table` is importable from there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .synthesis_columns import (
    BinnedNumericColumn,
    CategoricalColumn,
    Column,
    _column_arrays,
    _encode_arrays,
    with_data_types,
)

__all__ = ["Table"]


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


def _numeric_values(col: BinnedNumericColumn, values: np.ndarray) -> np.ndarray:
    """Floats, or ``int64`` for an integer column holding whole numbers."""
    v = np.asarray(values, dtype=float)
    if col.integer and np.array_equal(v, np.round(v)):
        return v.astype(np.int64)
    return v


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
    :meth:`FittedSynthesizer.sample`.  Answers counting queries empirically.  The values
    of an integer column (declared ``integer=True``, or ``integer=None`` on data of an
    integer dtype: :func:`~dpacct.mechanisms.algorithms.synthesis_columns.with_data_types`)
    are ``int64``, of other numeric columns ``float``.

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
        cols = with_data_types(columns, data)
        arrays = _column_arrays(cols, data)
        codes = _encode_arrays(cols, arrays)
        values = {c.name: _numeric_values(c, a) if isinstance(c, BinnedNumericColumn) else a
                  for c, a in zip(cols, arrays, strict=True)}
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
