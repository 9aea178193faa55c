"""Tests for ``dpacct.mechanisms.algorithms.synthesis_table``: the ``Table`` of encoded rows and its
counting queries, against counts made here row by row."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from dpacct.mechanisms.algorithms.synthesis import BinnedNumericColumn, CategoricalColumn, Table

EDGES = [0.0, 10.0, 20.0, 40.0]


def _table(n: int = 500, seed: int = 0):
    rng = np.random.default_rng(seed)
    data = {
        "sex": rng.choice(["f", "m"], size=n),
        "age": rng.uniform(0.0, 40.0, size=n),
        "grade": rng.integers(0, 3, size=n),
    }
    cols = [
        CategoricalColumn("sex", ["f", "m"]),
        BinnedNumericColumn("age", EDGES),
        CategoricalColumn("grade", [0, 1, 2]),
    ]
    return Table.from_data(cols, data), data


def _bin(age: float) -> int:
    """The bin of ``age``: [0, 10), [10, 20), [20, 40] (closed at the top edge)."""
    return min(int(np.searchsorted(EDGES, age, side="right")) - 1, len(EDGES) - 2)


def test_marginals_are_the_row_counts():
    table, data = _table()
    assert table.n_rows == 500
    counts = Counter(
        (["f", "m"].index(s), _bin(a), int(g))
        for s, a, g in zip(data["sex"], data["age"], data["grade"], strict=True)
    )
    full = table.marginal(["sex", "age", "grade"])
    assert full.shape == (2, 3, 3) and full.sum() == 500
    for (i, j, k), c in counts.items():
        assert full[i, j, k] == c
    # a marginal in another axis order is the sum over the other columns, transposed
    np.testing.assert_array_equal(table.marginal(["grade", "sex"]), full.sum(axis=1).T)
    np.testing.assert_array_equal(table.marginal("age"), full.sum(axis=(0, 2)))


def test_range_queries_count_the_rows_meeting_every_condition():
    table, data = _table(seed=1)
    sex, age, grade = data["sex"], data["age"], data["grade"]
    assert table.range_query({"sex": ["m"]}) == int(np.sum(sex == "m"))
    assert table.range_query({"age": (10.0, 20.0)}) == int(np.sum((age >= 10) & (age < 20)))
    both = table.range_query({"sex": ["f"], "age": (5.0, 30.0), "grade": [0, 2]})
    mask = (sex == "f") & (age >= 5) & (age < 30) & np.isin(grade, [0, 2])
    assert both == int(mask.sum())
    # closed at the top edge of the domain
    assert table.range_query({"age": (20.0, 40.0)}) == int(np.sum(age >= 20))


def test_values_and_bad_names():
    table, data = _table(n=20, seed=2)
    np.testing.assert_array_equal(table.column("age"), data["age"])
    assert list(table.to_dict()) == ["sex", "age", "grade"]
    with pytest.raises(ValueError, match="height"):
        table.column("height")
    with pytest.raises(ValueError, match="height"):
        table.marginal(["sex", "height"])
