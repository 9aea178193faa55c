"""Tests for ``dpacct.mechanisms.algorithms.synthesis_columns``: the column specifications of the
marginal synthesizer (categorical and binned numeric), their encoding and decoding."""

from __future__ import annotations

import numpy as np
import pytest
from test_synthesis import diabetes

from dpacct.mechanisms.algorithms.synthesis import (
    BinnedNumericColumn,
    CategoricalColumn,
    MarginalSynthesizer,
    Table,
    encode,
)


class TestColumns:
    def test_categorical_validation(self):
        with pytest.raises(ValueError, match="must not be empty"):
            CategoricalColumn("c", [])
        with pytest.raises(ValueError, match="unique"):
            CategoricalColumn("c", ["a", "b", "a"])
        with pytest.raises(ValueError, match="NaN"):
            CategoricalColumn("c", [1.0, float("nan")])
        with pytest.raises(TypeError, match="string"):
            CategoricalColumn("c", "abc")
        with pytest.raises(TypeError, match="name"):
            CategoricalColumn("", ["a"])

    def test_binned_validation(self):
        with pytest.raises(ValueError, match="strictly increasing"):
            BinnedNumericColumn("v", [0, 1, 1, 2])
        with pytest.raises(ValueError, match="strictly increasing"):
            BinnedNumericColumn("v", [2, 1])
        with pytest.raises(ValueError, match="finite"):
            BinnedNumericColumn("v", [0, 1, np.inf])
        with pytest.raises(ValueError, match="finite"):
            BinnedNumericColumn("v", [0, np.nan])
        with pytest.raises(ValueError, match="at least 2"):
            BinnedNumericColumn("v", [0.0])

    def test_frozen(self):
        col = CategoricalColumn("c", ["a"])
        with pytest.raises(AttributeError):
            col.name = "d"  # type: ignore[misc]

    def test_encode_codes(self):
        cols = [CategoricalColumn("c", ["x", "y", "z"]), BinnedNumericColumn("v", [0, 1, 2, 4])]
        codes = encode(cols, {"c": ["z", "x", "y", "x"], "v": [0.0, 1.0, 3.99, 4.0]})
        assert codes.tolist() == [[2, 0], [0, 1], [1, 2], [0, 2]]
        arr = np.array([[0, 0.5], [1, 2.5]])
        cols2 = [CategoricalColumn("c", [0, 1]), BinnedNumericColumn("v", [0, 1, 2, 4])]
        assert encode(cols2, arr).tolist() == [[0, 0], [1, 2]]

    @pytest.mark.parametrize(
        ("data", "match"),
        [
            ({"c": ["x", "w"], "v": [0.5, 0.5]}, "'c' contains 'w'"),
            ({"c": ["x", "y"], "v": [0.5, 4.5]}, "'v' contains 4.5, outside its edges"),
            ({"c": ["x", "y"], "v": [-0.1, 0.5]}, "'v' contains -0.1"),
            ({"c": ["x", "y"], "v": [np.nan, 0.5]}, "'v' contains NaN"),
            ({"c": np.array([np.nan, 1.0]), "v": [0.5, 0.5]}, "'c' contains NaN"),
            ({"c": [], "v": []}, "at least one row"),
            ({"c": ["x"]}, "missing columns"),
            ({"c": ["x", "y"], "v": [0.5]}, "equal lengths"),
        ],
    )
    def test_encode_errors(self, data, match):
        cols = [CategoricalColumn("c", ["x", "y"]), BinnedNumericColumn("v", [0, 1, 4])]
        with pytest.raises(ValueError, match=match):
            encode(cols, data)

    def test_bin_aligned_range_query_sums_whole_bins(self):
        # diabetes values sit exactly on bin edges (ages 30, 40, ...): intervals are
        # [low, high) like the bins, so a bin-aligned query is a sum of marginal cells
        cols, data = diabetes()
        real = Table.from_data(cols, data)
        age = np.asarray(cols[0].edges)
        target = np.asarray(cols[5].edges)
        tab = real.marginal(["age", "target"])
        for i, j, k, m in [(0, 2, 1, 4), (1, 6, 0, 7), (2, 3, 3, 5)]:
            q = {"age": (age[i], age[j]), "target": (target[k], target[m])}
            assert real.range_query(q) == tab[i:j, k:m].sum()
        assert real.range_query({"age": (age[0], age[-1])}) == real.n_rows

    def test_encode_array_shape_errors(self):
        cols = [CategoricalColumn("c", [0, 1]), BinnedNumericColumn("v", [0, 1, 4])]
        with pytest.raises(ValueError, match="3 columns but 2"):
            encode(cols, np.zeros((4, 3)))
        with pytest.raises(ValueError, match="2-D"):
            encode(cols, np.zeros(4))
        with pytest.raises(ValueError, match="at least one row"):
            encode(cols, np.zeros((0, 2)))
        with pytest.raises(ValueError, match="unique names"):
            encode([cols[0], cols[0]], np.zeros((2, 2)))


class TestColumnNames:
    """Named tables (mappings, DataFrames, structured arrays) are read by column name."""

    @staticmethod
    def frame_and_columns(seed: int = 0):
        pd = pytest.importorskip("pandas")
        rng = np.random.default_rng(seed)
        n = 3000
        # both columns take values 0..3, so reading them by position would not fail:
        # it would silently swap them (a is skewed towards 0, b towards 3)
        a = rng.choice(4, size=n, p=[0.7, 0.1, 0.1, 0.1])
        b = np.where(rng.random(n) < 0.8, 3 - a, rng.integers(0, 4, n))
        cols = [CategoricalColumn("a", [0, 1, 2, 3]), CategoricalColumn("b", [0, 1, 2, 3])]
        return pd, cols, pd.DataFrame({"a": a, "b": b}), a, b

    def test_reordered_frame_gives_the_same_result_as_the_ordered_one(self):
        _, cols, ordered, a, b = self.frame_and_columns()
        reordered = ordered[["b", "a"]]
        np.testing.assert_array_equal(encode(cols, reordered), np.stack([a, b], axis=1))
        syn = MarginalSynthesizer(cols, "2-way", scale=2.0)
        fit_o = syn.fit(ordered, rng=np.random.default_rng(5))
        fit_r = syn.fit(reordered, rng=np.random.default_rng(5))
        for key, table in fit_o.noisy_tables.items():
            np.testing.assert_array_equal(fit_r.noisy_tables[key], table)
        np.testing.assert_array_equal(fit_r.probability(["a", "b"]), fit_o.probability(["a", "b"]))
        # the noisy (a, b) table is the true one plus noise, not its transpose
        true = np.zeros((4, 4))
        np.add.at(true, (a, b), 1)
        noisy = fit_r.noisy_tables[("a", "b")]
        assert np.abs(noisy - true).max() < 40 < np.abs(noisy - true.T).max()
        real = Table.from_data(cols, reordered)
        np.testing.assert_array_equal(real.column("a"), a)
        assert real.marginal("a")[0] == (a == 0).sum()

    def test_extra_columns_are_ignored_with_a_warning_naming_them(self):
        _, cols, ordered, _, _ = self.frame_and_columns()
        wide = ordered.assign(person_id=np.arange(len(ordered)), zip_code="02139")
        wide = wide[["person_id", "b", "zip_code", "a"]]
        with pytest.warns(UserWarning, match=r"\['person_id', 'zip_code'\].*ignored"):
            codes = encode(cols, wide)
        np.testing.assert_array_equal(codes, encode(cols, ordered))
        syn = MarginalSynthesizer(cols, "2-way", scale=2.0)
        with pytest.warns(UserWarning, match="person_id"):
            fit_w = syn.fit(wide, rng=np.random.default_rng(3))
        fit_o = syn.fit(ordered, rng=np.random.default_rng(3))
        np.testing.assert_array_equal(
            fit_w.noisy_tables[("a", "b")], fit_o.noisy_tables[("a", "b")]
        )
        with pytest.warns(UserWarning, match=r"\['u'\]"):
            encode(cols, {"a": [0], "b": [1], "u": [1]})

    def test_missing_columns_are_named(self):
        pd, cols, ordered, _, _ = self.frame_and_columns()
        with pytest.raises(ValueError, match=r"DataFrame is missing columns \['b'\].*'B'"):
            encode(cols, ordered.rename(columns={"b": "B"}))
        with pytest.raises(ValueError, match=r"missing columns \['a', 'b'\]"):
            MarginalSynthesizer(cols, scale=1.0).fit(
                pd.DataFrame({"c": [1]}), rng=np.random.default_rng(0)
            )
        dup = pd.concat([ordered, ordered[["a"]]], axis=1)
        with pytest.raises(ValueError, match=r"more than one column named \['a'\]"):
            encode(cols, dup)

    def test_structured_array_is_read_by_name(self):
        rec = np.array([(3, 0), (2, 1)], dtype=[("b", int), ("a", int)])
        cols = [CategoricalColumn("a", [0, 1, 2, 3]), CategoricalColumn("b", [0, 1, 2, 3])]
        assert encode(cols, rec).tolist() == [[0, 3], [1, 2]]
        # a plain array has no names: read by position
        assert encode(cols, np.array([[3, 0], [2, 1]])).tolist() == [[3, 0], [2, 1]]


# ----------------------------------------------------------------------------------
# integer columns, clipping
# ----------------------------------------------------------------------------------
def test_integer_column_decodes_uniformly_over_the_bin_integers():
    from scipy import stats

    col = BinnedNumericColumn("age", [18, 30, 40, 90.5], integer=True)
    rng = np.random.default_rng(0)
    vals = col.decode(np.full(60_000, 1), rng)
    assert vals.dtype == np.int64
    # bin [30, 40) holds exactly the integers 30..39, each with probability 1/10
    counts = np.bincount(vals - 30, minlength=10)
    assert counts.size == 10 and vals.min() == 30 and vals.max() == 39
    assert stats.chisquare(counts).pvalue > 1e-4
    # the last bin is closed: 40..90 (51 integers)
    last = col.decode(np.full(1000, 2), rng)
    assert last.min() >= 40 and last.max() <= 90
    # range weights count integers (brute force over the integers of each bin)
    for lo, hi in [(18, 24), (25.5, 35), (0, 100), (35, 90)]:
        want = []
        for a, b in [(18, 29), (30, 39), (40, 90)]:
            ints = np.arange(a, b + 1)
            inside = (ints >= lo) & ((ints <= hi) if hi >= 90.5 else (ints < hi))
            want.append(inside.mean())
        np.testing.assert_allclose(col.weights((lo, hi)), want, rtol=1e-12)
    with pytest.raises(ValueError, match="contains no integer"):
        BinnedNumericColumn("x", [0.2, 0.7, 2.0], integer=True)
    with pytest.raises(TypeError, match="integer"):
        BinnedNumericColumn("x", [0, 1], integer="yes")


def test_integer_ages_are_not_biased_by_half_a_year():
    rng = np.random.default_rng(1)
    ages = rng.integers(18, 90, size=20_000)  # 18..89
    edges = list(range(18, 91, 8))  # [18, 26), ..., [82, 90]
    means = {}
    for integer in (False, True):
        cols = [BinnedNumericColumn("age", edges, integer=integer)]
        syn = MarginalSynthesizer(cols, marginals="1-way", scale=0.05)
        model = syn.fit({"age": ages}, rng=rng)
        means[integer] = model.sample(200_000, rng=rng).column("age").mean()
    # continuous decoding shifts the mean by about half a year; integer decoding does not
    assert means[False] - ages.mean() > 0.35
    assert abs(means[True] - ages.mean()) < 0.1


def test_binned_column_out_of_range_clip():
    strict = BinnedNumericColumn("x", [0, 1, 2])
    with pytest.raises(ValueError, match="out_of_range='clip'"):
        strict.encode([-1.0, 0.5, 3.0])
    clip = BinnedNumericColumn("x", [0, 1, 2], out_of_range="clip")
    assert clip.encode([-1.0, 0.5, 3.0]).tolist() == [0, 0, 1]
    with pytest.raises(ValueError, match="out_of_range"):
        BinnedNumericColumn("x", [0, 1], out_of_range="drop")


def test_integer_data_come_back_as_integers_by_default():
    """``BinnedNumericColumn`` without ``integer``: integer ages sample as integers (before:
    continuous values inside the bins, age 21.73), float data stay real, and a declared
    ``integer=False`` is kept.  DataFrame, mapping and 2-D array inputs alike."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(2)
    ages = rng.integers(18, 90, size=3000)
    bmi = rng.uniform(15, 45, size=3000)
    cols = [BinnedNumericColumn("age", list(range(18, 91, 8))),
            BinnedNumericColumn("bmi", [15, 25, 35, 45])]
    syn = MarginalSynthesizer(cols, marginals="2-way", scale=0.1)
    for data in (pd.DataFrame({"bmi": bmi, "age": ages}), {"age": ages, "bmi": bmi},
                 pd.DataFrame({"age": pd.array(ages, dtype="Int64"), "bmi": bmi})):
        out = syn.fit(data, rng=rng).sample(2000, rng=rng)
        age = out.column("age")
        assert age.dtype == np.int64 and age.min() >= 18 and age.max() <= 90
        assert out.column("bmi").dtype == np.float64
        assert not np.array_equal(out.column("bmi"), np.round(out.column("bmi")))
    # a 2-D float array has float columns: real values, as declared by the data's type
    arr = np.column_stack([ages, bmi])
    assert syn.fit(arr, rng=rng).sample(50, rng=rng).column("age").dtype == np.float64
    # an explicit declaration wins over the data's type
    real = MarginalSynthesizer([BinnedNumericColumn("age", [18, 50, 90], integer=False)],
                               marginals="1-way", scale=0.1)
    assert real.fit({"age": ages}, rng=rng).sample(50, rng=rng).column("age").dtype.kind == "f"
    # the model's range queries count integers for the resolved column too
    model = syn.fit({"age": ages, "bmi": bmi}, rng=rng)
    assert model.columns[0].integer is True and model.synthesizer.columns[0].integer is None


def test_with_data_types_reads_the_type_only():
    from dpacct.mechanisms.algorithms.synthesis_columns import with_data_types

    cols = [BinnedNumericColumn("a", [0, 5, 10]), BinnedNumericColumn("b", [0.1, 0.6, 0.9]),
            CategoricalColumn("c", ["x", "y"])]
    data = {"a": np.array([1, 7]), "b": np.array([0, 1]) + 0.2, "c": ["x", "y"]}
    a, b, c = with_data_types(cols, data)
    assert a.integer is True and b.integer is False and c is cols[2]
    # whole numbers in a float column: still real (the values are not inspected)
    (f,) = with_data_types(cols[:1], {"a": np.array([1.0, 7.0])})
    assert f.integer is False
    # an integer column whose bins hold no integer stays real instead of failing
    (g,) = with_data_types([BinnedNumericColumn("g", [0.2, 0.7])], {"g": np.array([0, 1])})
    assert g.integer is False
    t = Table.from_data(cols[:1], {"a": np.array([1, 7])})
    assert t.column("a").dtype == np.int64
    assert BinnedNumericColumn("x", [0, 1]).integer is None
