"""Tests for the marginal-based synthetic data generator and its calibrator."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes

from dpacct.accountant import compose
from dpacct.calibrators.synthesis import calibrate_synthesizer
from dpacct.mechanisms.gaussian import GaussianMechanism
from dpacct.mechanisms.laplace import LaplaceMechanism
from dpacct.mechanisms.synthesis import (
    BinnedNumericColumn,
    CategoricalColumn,
    MarginalSynthesizer,
    Table,
    _Layout,
    _project_consistent,
    encode,
    ipf,
    project_marginals,
    project_simplex,
)

EPSILONS = (0.1, 1.0, 10.0, 100.0)


# ----------------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------------


def generated(n: int = 4000, seed: int = 0):
    """Two numeric columns with correlation 0.9, a categorical column driven by x,
    and an independent categorical column."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = 0.9 * x + np.sqrt(1 - 0.81) * rng.normal(size=n)
    w = np.where(x + 0.5 * rng.normal(size=n) > 0, "hi", "lo")
    z = rng.integers(0, 3, size=n)
    edges = np.linspace(-4.5, 4.5, 10)
    x, y = np.clip(x, -4.5, 4.5), np.clip(y, -4.5, 4.5)  # test data only: keep in domain
    cols = [
        BinnedNumericColumn("x", edges),
        BinnedNumericColumn("y", edges),
        CategoricalColumn("w", ["lo", "hi"]),
        CategoricalColumn("z", [0, 1, 2]),
    ]
    return cols, {"x": x, "y": y, "w": w, "z": z}


def diabetes():
    """sklearn's diabetes data, six columns binned with fixed (public) edges."""
    d = load_diabetes(scaled=False)
    X = d.data
    data = {
        "age": X[:, 0],
        "sex": X[:, 1].astype(int),
        "bmi": X[:, 2],
        "bp": X[:, 3],
        "s5": X[:, 8],
        "target": d.target,
    }
    cols = [
        BinnedNumericColumn("age", [18, 30, 40, 50, 60, 70, 80]),
        CategoricalColumn("sex", [1, 2]),
        BinnedNumericColumn("bmi", [15, 20, 25, 30, 35, 45]),
        BinnedNumericColumn("bp", [60, 80, 90, 100, 110, 140]),
        BinnedNumericColumn("s5", [3, 4, 4.5, 5, 5.5, 6.5]),
        BinnedNumericColumn("target", [0, 50, 100, 150, 200, 250, 300, 350]),
    ]
    return cols, data


def tvd(p: np.ndarray, q: np.ndarray) -> float:
    p = np.asarray(p, float) / np.sum(p)
    q = np.asarray(q, float) / np.sum(q)
    return 0.5 * float(np.abs(p - q).sum())


def all_marginals(cols):
    names = [c.name for c in cols]
    return [(a,) for a in names] + list(itertools.combinations(names, 2))


def code_corr(table: Table, a: str, b: str) -> float:
    j, k = [c.name for c in table.columns].index(a), [c.name for c in table.columns].index(b)
    return float(np.corrcoef(table.codes[:, j], table.codes[:, k])[0, 1])


# ----------------------------------------------------------------------------------
# column specifications and encoding
# ----------------------------------------------------------------------------------


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
        np.testing.assert_array_equal(fit_r.probability(["a", "b"]),
                                      fit_o.probability(["a", "b"]))
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
        np.testing.assert_array_equal(fit_w.noisy_tables[("a", "b")],
                                      fit_o.noisy_tables[("a", "b")])
        with pytest.warns(UserWarning, match=r"\['u'\]"):
            encode(cols, {"a": [0], "b": [1], "u": [1]})

    def test_missing_columns_are_named(self):
        pd, cols, ordered, _, _ = self.frame_and_columns()
        with pytest.raises(ValueError, match=r"DataFrame is missing columns \['b'\].*'B'"):
            encode(cols, ordered.rename(columns={"b": "B"}))
        with pytest.raises(ValueError, match=r"missing columns \['a', 'b'\]"):
            MarginalSynthesizer(cols, scale=1.0).fit(pd.DataFrame({"c": [1]}),
                                                      rng=np.random.default_rng(0))
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
# privacy
# ----------------------------------------------------------------------------------


class TestPrivacy:
    def test_laplace_equals_hand_composition(self):
        cols, _ = generated(10)
        syn = MarginalSynthesizer(cols, "2-way", "laplace", scale=7.0, count_scale=3.0)
        # 4 columns -> 6 pairs, each Lap(7) on a sensitivity-1 histogram, plus Lap(3)
        hand = compose([LaplaceMechanism(b=7.0)] * 6 + [LaplaceMechanism(b=3.0)])
        for delta in (1e-3, 1e-6):
            assert syn.epsilon(delta) == pytest.approx(hand.epsilon(delta), rel=1e-9)
        assert syn.delta(0.5) == pytest.approx(hand.delta(0.5), rel=1e-9)
        np.testing.assert_allclose(syn.rdp([2.0, 8.0]), hand.rdp([2.0, 8.0]), rtol=1e-12)
        assert syn.pure_epsilon == pytest.approx(6 / 7 + 1 / 3, rel=1e-15)

    def test_gaussian_equals_hand_composition(self):
        cols, _ = generated(10)
        syn = MarginalSynthesizer(
            cols, [("x", "y"), ("w",), ("z", "x")], "gaussian", scale=2.0, count_scale=4.0
        )
        hand = compose([GaussianMechanism(sigma=2.0)] * 3 + [GaussianMechanism(sigma=4.0)])
        # Gaussians compose exactly: 1/s^2 = 3/4 + 1/16
        closed = GaussianMechanism(sigma=1.0 / np.sqrt(3 / 4 + 1 / 16))
        for delta in (1e-5, 1e-9):
            assert syn.epsilon(delta) == pytest.approx(hand.epsilon(delta), rel=1e-9)
            assert syn.epsilon(delta) == pytest.approx(closed.epsilon(delta), rel=1e-9)
        assert syn.pure_epsilon == np.inf

    def test_count_scale_defaults_to_scale(self):
        cols, _ = generated(10)
        syn = MarginalSynthesizer(cols, "1-way", "laplace", scale=5.0)
        hand = compose([LaplaceMechanism(b=5.0)] * 5)
        assert syn.epsilon(1e-6) == pytest.approx(hand.epsilon(1e-6), rel=1e-9)

    def test_sensitivity_of_every_marginal_is_one(self):
        # removing any one row changes every measured histogram in exactly one cell by 1
        cols, data = generated(300, seed=3)
        full = Table.from_data(cols, data)
        for r in (0, 17, 299):
            less = Table.from_data(cols, {k: np.delete(v, r) for k, v in data.items()})
            for m in all_marginals(cols):
                diff = full.marginal(list(m)) - less.marginal(list(m))
                assert np.abs(diff).sum() == 1.0
                assert np.sqrt((diff**2).sum()) == 1.0
            assert full.n_rows - less.n_rows == 1


# ----------------------------------------------------------------------------------
# projections
# ----------------------------------------------------------------------------------


class TestProjections:
    def test_simplex_projection_kkt(self):
        rng = np.random.default_rng(0)
        for _ in range(20):
            v = rng.normal(size=7) * 2
            x = project_simplex(v)
            assert x.sum() == pytest.approx(1.0, abs=1e-12)
            assert (x >= 0).all()
            # KKT: x = max(v + lam, 0) with one lam; v + lam <= 0 where x == 0
            pos = x > 0
            lam = (x[pos] - v[pos]).mean()
            np.testing.assert_allclose(x[pos] - v[pos], lam, atol=1e-12)
            assert (v[~pos] + lam <= 1e-12).all()
        # hand-computed example: lam = (1 - 0.8 - 0.5)/2 = -0.15
        np.testing.assert_allclose(project_simplex([0.5, 0.8, -0.3]), [0.35, 0.65, 0.0])

    def test_consistent_projection_is_orthogonal(self):
        cliques, sizes = [(0,), (0, 1), (1, 2), (2, 0)], [2, 3, 4]
        lay = _Layout(cliques, sizes)
        rng = np.random.default_rng(1)
        x = rng.normal(size=lay.total)
        px = _project_consistent(x.copy(), lay)
        tabs = lay.split(px)
        # in the set: totals 1, shared columns agree
        assert all(t.sum() == pytest.approx(1.0, abs=1e-12) for t in tabs)
        np.testing.assert_allclose(tabs[0], tabs[1].sum(axis=1), atol=1e-12)
        np.testing.assert_allclose(tabs[0], tabs[3].sum(axis=0), atol=1e-12)
        np.testing.assert_allclose(tabs[1].sum(axis=0), tabs[2].sum(axis=1), atol=1e-12)
        np.testing.assert_allclose(tabs[2].sum(axis=0), tabs[3].sum(axis=1), atol=1e-12)
        # idempotent, and x - P(x) is orthogonal to the set (an affine set)
        np.testing.assert_allclose(_project_consistent(px.copy(), lay), px, atol=1e-12)
        for _ in range(5):
            y = _project_consistent(rng.normal(size=lay.total), lay)
            assert abs(np.dot(x - px, y - px)) < 1e-10

    def test_ipf_recovers_realisable_marginals_and_max_entropy(self):
        rng = np.random.default_rng(4)
        sizes = [2, 3, 4]
        joint = rng.dirichlet(np.ones(24)).reshape(sizes)
        p01, p12, p02 = joint.sum(axis=2), joint.sum(axis=0), joint.sum(axis=1)
        fit, _ = ipf([p01, p12, p02.T], [(0, 1), (1, 2), (2, 0)], sizes, tol=1e-10,
                     max_iter=5000, smoothing=0.0)
        np.testing.assert_allclose(fit.sum(axis=2), p01, atol=1e-9)
        np.testing.assert_allclose(fit.sum(axis=0), p12, atol=1e-9)
        np.testing.assert_allclose(fit.sum(axis=1), p02, atol=1e-9)
        # a chain 0 - 1 - 2: the maximum-entropy joint is p01 * p12 / p1
        chain, _ = ipf([p01, p12], [(0, 1), (1, 2)], sizes, tol=1e-12, smoothing=0.0)
        p1 = joint.sum(axis=(0, 2))
        np.testing.assert_allclose(chain, p01[:, :, None] * p12[None] / p1[None, :, None],
                                   atol=1e-10)
        # conflicting zero patterns: smoothing keeps a proper distribution
        a = np.array([[0.5, 0.0], [0.0, 0.5]])
        b = np.array([[0.0, 0.5], [0.5, 0.0]])
        bad, _ = ipf([a, b, a], [(0, 1), (1, 2), (0, 2)], [2, 2, 2])
        assert np.isfinite(bad).all() and bad.sum() == pytest.approx(1.0)

    def test_dykstra_is_the_projection_onto_the_polytope(self):
        # tree-structured cliques: the local polytope is the convex hull of the marginals
        # of point masses, so checking the variational inequality at every vertex proves
        # optimality of the projection
        sizes, cliques = [2, 3, 2], [(0,), (0, 1), (1, 2)]
        rng = np.random.default_rng(2)
        z = [rng.normal(0.2, 0.3, size=tuple(sizes[a] for a in c)) for c in cliques]
        p, _ = project_marginals(z, cliques, sizes, tol=1e-12, max_iter=20000)
        zf = np.concatenate([t.ravel() for t in z])
        pf = np.concatenate([t.ravel() for t in p])
        assert (pf >= 0).all()
        worst = -np.inf
        for x in itertools.product(*[range(s) for s in sizes]):
            v = []
            for c in cliques:
                t = np.zeros(tuple(sizes[a] for a in c))
                t[tuple(x[a] for a in c)] = 1.0
                v.append(t.ravel())
            worst = max(worst, float(np.dot(zf - pf, np.concatenate(v) - pf)))
        assert worst <= 1e-8
        # and a feasible input is its own projection
        joint = rng.dirichlet(np.ones(12)).reshape(sizes)
        true = [joint.sum(axis=(1, 2)), joint.sum(axis=2), joint.sum(axis=0)]
        q, _ = project_marginals(true, cliques, sizes)
        for a, b in zip(q, true, strict=True):
            np.testing.assert_allclose(a, b, atol=1e-9)


# ----------------------------------------------------------------------------------
# fitting and sampling
# ----------------------------------------------------------------------------------


class TestFitSample:
    @pytest.mark.parametrize("generator", ["tree", "ipf"])
    def test_model_is_consistent_and_sample_matches_model(self, generator):
        cols, data = generated(3000)
        syn = MarginalSynthesizer(cols, "2-way", "laplace", scale=20.0)
        model = syn.fit(data, rng=np.random.default_rng(0), generator=generator)
        assert model.generator == generator
        for p in model.tables.values():
            assert (p >= 0).all() and p.sum() == pytest.approx(1.0, abs=1e-9)
        np.testing.assert_allclose(
            model.tables[("x", "y")].sum(axis=1), model.tables[("x", "w")].sum(axis=1), atol=1e-6
        )
        # tree edges are reproduced exactly by the tree model; IPF matches every table
        # approximately (the noisy estimates need not be jointly realisable)
        for child, parent in model.parents.items():
            if parent is None:
                continue
            key = (parent, child) if (parent, child) in model.tables else (child, parent)
            np.testing.assert_allclose(model.probability(list(key)), model.tables[key],
                                       atol=1e-6 if generator == "tree" else 0.01)
        for name, p in model.one_way.items():
            np.testing.assert_allclose(model.probability([name]), p,
                                       atol=1e-5 if generator == "tree" else 0.01)
        # a large sample follows the model (multinomial sampling error only)
        t = model.sample(200_000, rng=np.random.default_rng(1))
        for m in all_marginals(cols):
            assert tvd(t.marginal(list(m)), model.probability(list(m))) < 0.01
        q = {"x": (-1.0, 0.5), "w": ["hi"]}
        assert t.range_query(q) == pytest.approx(model.range_query(q, n=200_000), rel=0.03)
        # decoded values lie in the bin of their code / are categories
        e = np.asarray(cols[0].edges)
        xv, xc = t.column("x"), t.codes[:, 0]
        assert ((xv >= e[xc]) & (xv <= e[xc + 1])).all()
        assert set(np.unique(t.column("w"))) <= {"lo", "hi"}

    def test_default_size_is_private_row_estimate(self):
        cols, data = generated(2500)
        syn = MarginalSynthesizer(cols, "2-way", scale=0.01)
        model = syn.fit(data, rng=np.random.default_rng(0))
        assert abs(model.noisy_count - 2500) < 1.0
        assert model.n_rows == 2500
        assert model.sample(rng=np.random.default_rng(0)).n_rows == 2500
        assert model.sample(0, rng=np.random.default_rng(0)).n_rows == 0

    @pytest.mark.parametrize(("noise", "sd"), [("laplace", 10.0 * np.sqrt(2)), ("gaussian", 10.0)])
    def test_row_estimate_unbiased_and_better_than_count(self, noise, sd):
        # 1-way tables of sizes 9, 9, 2, 3: the combined estimate has variance
        # 1 / (1 + 1/9 + 1/9 + 1/2 + 1/3) = 0.49 of the count's
        cols, data = generated(1000)
        syn = MarginalSynthesizer(cols, "1-way", noise, scale=10.0)
        fits = [syn.fit(data, rng=np.random.default_rng(s)) for s in range(300)]
        est = np.array([f.row_estimate for f in fits])
        raw = np.array([f.noisy_count for f in fits])
        assert abs(est.mean() - 1000) < 4 * est.std() / np.sqrt(300)
        ratio = np.mean((est - 1000) ** 2) / np.mean((raw - 1000) ** 2)
        assert 0.35 < ratio < 0.65, ratio
        # the count's noise has the declared scale (Laplace: sd = sqrt(2) b)
        assert 0.8 < raw.std() / sd < 1.2, raw.std()

    def test_fit_counts_equals_fit(self):
        cols, data = generated(1500)
        real = Table.from_data(cols, data)
        counts = real.marginal(["x", "y", "w", "z"])
        syn = MarginalSynthesizer(cols, [("y", "x"), ("w",), ("z", "w")], scale=3.0)
        a = syn.fit(data, rng=np.random.default_rng(5))
        b = syn.fit_counts(counts, rng=np.random.default_rng(5))
        for key in a.tables:
            np.testing.assert_array_equal(a.tables[key], b.tables[key])
        assert a.noisy_count == b.noisy_count

    def test_fit_counts_errors(self):
        cols = [CategoricalColumn("a", [0, 1]), CategoricalColumn("b", [0, 1])]
        syn = MarginalSynthesizer(cols, scale=1.0)
        rng = np.random.default_rng(0)
        with pytest.raises(ValueError, match="counts must be non-negative"):
            syn.fit_counts([[1, -1], [0, 2]], rng=rng)
        with pytest.raises(ValueError, match="counts must be integers"):
            syn.fit_counts([[1, 0.5], [0, 2]], rng=rng)
        with pytest.raises(ValueError, match="counts must be finite"):
            syn.fit_counts([[1, np.nan], [0, 2]], rng=rng)
        with pytest.raises(ValueError, match="counts must have shape"):
            syn.fit_counts([1, 2], rng=rng)
        with pytest.raises(ValueError, match="at least one row"):
            syn.fit_counts([[0, 0], [0, 0]], rng=rng)

    def test_parameter_errors(self):
        cols, data = generated(50)
        with pytest.raises(ValueError, match="scale"):
            MarginalSynthesizer(cols, scale=0.0)
        with pytest.raises(ValueError, match="scale"):
            MarginalSynthesizer(cols, scale=-1.0)
        with pytest.raises(ValueError, match="count_scale"):
            MarginalSynthesizer(cols, scale=1.0, count_scale=0.0)
        with pytest.raises(ValueError, match="noise"):
            MarginalSynthesizer(cols, noise="cauchy")
        with pytest.raises(ValueError, match="marginals"):
            MarginalSynthesizer(cols, marginals="3-way")
        with pytest.raises(ValueError, match="unknown column 'q'"):
            MarginalSynthesizer(cols, marginals=[("x", "q")])
        with pytest.raises(ValueError, match="1 or 2 columns"):
            MarginalSynthesizer(cols, marginals=[("x", "y", "w"), ("z",)])
        with pytest.raises(ValueError, match="not measured"):
            MarginalSynthesizer(cols, marginals=[("x", "y")])
        with pytest.raises(ValueError, match="repeat"):
            MarginalSynthesizer(cols, marginals=[("x", "y"), ("y", "x"), ("w", "z")])
        with pytest.raises(ValueError, match="columns must not be empty"):
            MarginalSynthesizer([])
        syn = MarginalSynthesizer(cols, scale=1.0)
        with pytest.raises(TypeError, match="rng"):
            syn.fit(data, rng=0)
        with pytest.raises(TypeError, match="rng"):
            syn.fit(data, rng=np.random.RandomState(0))
        model = syn.fit(data, rng=np.random.default_rng(0))
        with pytest.raises(TypeError, match="rng"):
            model.sample(rng=None)
        with pytest.raises(ValueError, match="n must be"):
            model.sample(-1, rng=np.random.default_rng(0))
        with pytest.raises(ValueError, match="'w': 'mid' is not one of"):
            model.range_query({"w": ["mid"]})
        with pytest.raises(ValueError, match="low <= high"):
            model.range_query({"x": (1.0, 0.0)})
        with pytest.raises(ValueError, match="unknown column"):
            model.marginal(["nope"])
        with pytest.raises(ValueError, match="generator"):
            syn.fit(data, rng=np.random.default_rng(0), generator="gibbs")
        bad = dict(data, w=np.where(data["w"] == "hi", "hi", "unknown"))
        with pytest.raises(ValueError, match="'w' contains 'unknown'"):
            syn.fit(bad, rng=np.random.default_rng(0))


# ----------------------------------------------------------------------------------
# utility
# ----------------------------------------------------------------------------------


def mean_tvd(cols, data, marginals, eps, seeds, *, n_sample=None):
    real = Table.from_data(cols, data)
    out = []
    for s in seeds:
        syn = calibrate_synthesizer(eps, 0.0, cols, marginals, "laplace", count_fraction=0.1)
        model = syn.fit(data, rng=np.random.default_rng(s))
        if n_sample is None:
            out.append(
                np.mean([tvd(model.probability(list(m)), real.marginal(list(m)))
                         for m in all_marginals(cols)])
            )
        else:
            t = model.sample(n_sample, rng=np.random.default_rng(100 + s))
            out.append(
                np.mean([tvd(t.marginal(list(m)), real.marginal(list(m)))
                         for m in all_marginals(cols)])
            )
    return float(np.mean(out))


class TestUtility:
    def test_tvd_converges_generated(self):
        cols, data = generated(4000)
        real = Table.from_data(cols, data)
        errs = [mean_tvd(cols, data, "2-way", e, range(3)) for e in EPSILONS]
        assert all(a > b for a, b in itertools.pairwise(errs)), errs
        assert errs[-1] < 0.005, errs
        # the synthetic table itself (a large sample) converges too
        errs_sample = [mean_tvd(cols, data, "2-way", e, range(2), n_sample=100_000)
                       for e in (0.1, 100.0)]
        assert errs_sample[1] < 0.02 < errs_sample[0]
        # trivial baseline: the uniform distribution on every marginal
        uniform = np.mean([tvd(np.ones_like(real.marginal(list(m))), real.marginal(list(m)))
                           for m in all_marginals(cols)])
        assert errs[1] < 0.5 * uniform

    def test_tvd_converges_diabetes(self):
        cols, data = diabetes()
        errs = [mean_tvd(cols, data, "2-way", e, range(3)) for e in EPSILONS]
        assert all(a > b for a, b in itertools.pairwise(errs)), errs
        assert errs[-1] < 0.01, errs
        # at a huge budget 1-way synthesis is limited by the independence it assumes
        one_way = mean_tvd(cols, data, "1-way", 100.0, range(2))
        assert errs[-1] < 0.5 * one_way, (errs, one_way)

    def test_correlation_kept_by_2way_lost_by_1way(self):
        cols, data = generated(4000)
        real = Table.from_data(cols, data)
        r_true = code_corr(real, "x", "y")
        assert r_true > 0.8
        r = {}
        for marg in ("1-way", "2-way"):
            vals = []
            for s in range(3):
                syn = calibrate_synthesizer(5.0, 0.0, cols, marg, "laplace")
                t = syn.fit(data, rng=np.random.default_rng(s)).sample(
                    rng=np.random.default_rng(10 + s)
                )
                vals.append(code_corr(t, "x", "y"))
            r[marg] = float(np.mean(vals))
        assert abs(r["1-way"]) < 0.05, r
        assert r["2-way"] > 0.9 * r_true, (r, r_true)

    def test_correlation_breast_cancer(self):
        # mean radius and mean perimeter: correlation ~0.99 in the bundled data
        X = load_breast_cancer().data
        cols = [
            BinnedNumericColumn("radius", np.linspace(5, 30, 11)),
            BinnedNumericColumn("perimeter", np.linspace(40, 200, 11)),
            BinnedNumericColumn("texture", np.linspace(5, 40, 8)),
        ]
        data = {"radius": X[:, 0], "perimeter": X[:, 2], "texture": X[:, 1]}
        real = Table.from_data(cols, data)
        r_true = code_corr(real, "radius", "perimeter")
        assert r_true > 0.9
        rs = {}
        for marg, eps in (("1-way", 10.0), ("2-way", 10.0), ("2-way", 100.0)):
            syn = calibrate_synthesizer(eps, 1e-6, cols, marg, "gaussian")
            t = syn.fit(data, rng=np.random.default_rng(0)).sample(
                20_000, rng=np.random.default_rng(1)
            )
            rs[marg, eps] = code_corr(t, "radius", "perimeter")
        # only 569 rows: at epsilon = 10 the noise on 100-cell tables still blurs the
        # diagonal a little; at epsilon = 100 the correlation is essentially kept
        assert abs(rs["1-way", 10.0]) < 0.05, rs
        assert rs["2-way", 10.0] > 0.8 * r_true, (rs, r_true)
        assert rs["2-way", 100.0] > 0.95 * r_true, (rs, r_true)

    def test_range_query_error_shrinks(self):
        cols, data = generated(4000)
        real = Table.from_data(cols, data)
        qrng = np.random.default_rng(99)
        edges = np.asarray(cols[0].edges)
        queries = []
        for _ in range(30):  # bin-aligned 2-D range queries
            i, j = np.sort(qrng.choice(len(edges), 2, replace=False))
            k, m = np.sort(qrng.choice(len(edges), 2, replace=False))
            queries.append({"x": (edges[i], edges[j]), "y": (edges[k], edges[m])})
            queries.append({"x": (edges[i], edges[j]), "w": ["hi"]})
        truth = np.array([real.range_query(q) for q in queries])
        errs = []
        for eps in EPSILONS:
            e = []
            for s in range(3):
                syn = calibrate_synthesizer(eps, 0.0, cols, "2-way", "laplace")
                model = syn.fit(data, rng=np.random.default_rng(s))
                ans = np.array([model.range_query(q) for q in queries])
                e.append(np.mean(np.abs(ans - truth)) / real.n_rows)
            errs.append(float(np.mean(e)))
        assert all(a > b for a, b in itertools.pairwise(errs)), errs
        assert errs[-1] < 0.001, errs


# ----------------------------------------------------------------------------------
# calibrator
# ----------------------------------------------------------------------------------


class TestCalibrator:
    def test_pure_laplace_closed_form(self):
        cols, _ = generated(10)
        for eps in EPSILONS:
            syn = calibrate_synthesizer(eps, 0.0, cols, "2-way", "laplace", count_fraction=0.2)
            assert eps * (1 - 1e-12) <= syn.pure_epsilon <= eps
            assert 1.0 / syn.count_scale == pytest.approx(0.2 * eps, rel=1e-12)
            assert 6.0 / syn.scale == pytest.approx(0.8 * eps, rel=1e-12)

    @pytest.mark.parametrize("noise", ["laplace", "gaussian"])
    @pytest.mark.parametrize("eps", [0.5, 4.0])
    def test_approximate_dp_meets_target(self, noise, eps):
        cols, _ = generated(10)
        delta = 1e-6
        syn = calibrate_synthesizer(eps, delta, cols, "2-way", noise, count_fraction=0.1)
        got = syn.epsilon(delta)
        assert eps * (1 - 1e-3) <= got <= eps
        hand = compose(
            [GaussianMechanism(sigma=syn.scale) if noise == "gaussian"
             else LaplaceMechanism(b=syn.scale)] * 6
            + [GaussianMechanism(sigma=syn.count_scale) if noise == "gaussian"
               else LaplaceMechanism(b=syn.count_scale)]
        )
        assert hand.epsilon(delta) == pytest.approx(got, rel=1e-9)
        if noise == "gaussian":
            # the count receives count_fraction of 1/sigma^2
            share = syn.count_scale**-2 / (6 * syn.scale**-2 + syn.count_scale**-2)
            assert share == pytest.approx(0.1, rel=1e-9)
        else:
            assert syn.pure_epsilon > eps  # PLD accounting beats the pure sum

    def test_calibrator_errors(self):
        cols, _ = generated(10)
        with pytest.raises(ValueError, match="epsilon"):
            calibrate_synthesizer(0.0, 1e-6, cols)
        with pytest.raises(ValueError, match="count_fraction"):
            calibrate_synthesizer(1.0, 1e-6, cols, count_fraction=1.0)
        with pytest.raises(ValueError, match="delta"):
            calibrate_synthesizer(1.0, 0.0, cols, noise="gaussian")
        with pytest.raises(ValueError, match="delta"):
            calibrate_synthesizer(1.0, 1.5, cols)
        with pytest.raises(ValueError, match="noise"):
            calibrate_synthesizer(1.0, 1e-6, cols, noise="uniform")


# ----------------------------------------------------------------------------------
# integer columns, count options, raw noisy tables, clipping
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
    ages = rng.integers(18, 90, size=20_000)          # 18..89
    edges = list(range(18, 91, 8))                    # [18, 26), ..., [82, 90]
    means = {}
    for integer in (False, True):
        cols = [BinnedNumericColumn("age", edges, integer=integer)]
        syn = MarginalSynthesizer(cols, marginals="1-way", scale=0.05)
        model = syn.fit({"age": ages}, rng=rng)
        means[integer] = model.sample(200_000, rng=rng).column("age").mean()
    # continuous decoding shifts the mean by about half a year; integer decoding does not
    assert means[False] - ages.mean() > 0.35
    assert abs(means[True] - ages.mean()) < 0.1


def test_count_options_and_raw_noisy_tables(monkeypatch):
    cols = [CategoricalColumn("a", [0, 1]), CategoricalColumn("b", [0, 1, 2])]
    rng = np.random.default_rng(2)
    data = {"a": rng.integers(0, 2, 5000), "b": rng.integers(0, 3, 5000)}
    released = []
    real = LaplaceMechanism.release

    def spy(self, value, *args, **kwargs):
        out = real(self, value, *args, **kwargs)
        released.append(np.array(out, dtype=float))
        return out

    monkeypatch.setattr(LaplaceMechanism, "release", spy)
    no_count = MarginalSynthesizer(cols, marginals="2-way", scale=2.0, count=None)
    assert no_count.primitives() == ([LaplaceMechanism(b=2.0)], [1])
    assert no_count.pure_epsilon == 0.5
    assert no_count.epsilon(1e-6) == compose([LaplaceMechanism(b=2.0)]).epsilon(1e-6)
    model = no_count.fit(data, rng=rng)
    assert model.noisy_count is None and len(released) == 1
    # the raw noisy table on the model is what was released
    np.testing.assert_array_equal(model.noisy_tables[("a", "b")], released[0])
    assert abs(model.n_rows - 5000) < 30
    public = MarginalSynthesizer(cols, marginals="2-way", scale=2.0, count=5000)
    assert public.fit(data, rng=rng).n_rows == 5000
    measured = MarginalSynthesizer(cols, marginals="2-way", scale=2.0)
    assert len(measured.fit(data, rng=rng).noisy_tables) == 1
    with pytest.raises(ValueError, match="count_scale is only used"):
        MarginalSynthesizer(cols, scale=1.0, count=None, count_scale=2.0)
    with pytest.raises(ValueError, match="count must be 'measure'"):
        MarginalSynthesizer(cols, scale=1.0, count="public")
    syn = calibrate_synthesizer(1.0, 0.0, cols, "1-way", "laplace", count=None)
    assert syn.scale == pytest.approx(2.0, rel=1e-12) and syn.pure_epsilon <= 1.0
    gauss = calibrate_synthesizer(1.0, 1e-6, cols, "1-way", "gaussian", count=None)
    assert 0.999 <= gauss.epsilon(1e-6) <= 1.0 and len(gauss.primitives()[0]) == 1


def test_binned_column_out_of_range_clip():
    strict = BinnedNumericColumn("x", [0, 1, 2])
    with pytest.raises(ValueError, match="out_of_range='clip'"):
        strict.encode([-1.0, 0.5, 3.0])
    clip = BinnedNumericColumn("x", [0, 1, 2], out_of_range="clip")
    assert clip.encode([-1.0, 0.5, 3.0]).tolist() == [0, 0, 1]
    with pytest.raises(ValueError, match="out_of_range"):
        BinnedNumericColumn("x", [0, 1], out_of_range="drop")
