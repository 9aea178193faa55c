"""Tests for the marginal-based synthetic data generator and its calibrator (its
columns, estimation and sampling have their own modules: ``test_synthesis_columns.py``,
``test_synthesis_estimate.py``, ``test_synthesis_model.py``)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes

from dpacct.accountant import compose
from dpacct.calibrators.synthesis import calibrate_synthesizer
from dpacct.mechanisms.algorithms.synthesis import (
    BinnedNumericColumn,
    CategoricalColumn,
    MarginalSynthesizer,
    Table,
)
from dpacct.mechanisms.primitives.gaussian import GaussianMechanism
from dpacct.mechanisms.primitives.laplace import LaplaceMechanism

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
# count options and raw noisy tables
# ----------------------------------------------------------------------------------
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
    # one primitive used once answers as that primitive (its exact inversion), never
    # above the engine's generic route for it
    assert no_count.epsilon(1e-6) == LaplaceMechanism(b=2.0).epsilon(1e-6)
    assert no_count.epsilon(1e-6) <= compose([LaplaceMechanism(b=2.0)]).epsilon(1e-6)
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




def test_calibrate_synthesizer_auto_noise():
    """noise='auto': Laplace at delta = 0, else the noise with the smaller cell variance."""
    cols = [CategoricalColumn(n, [0, 1, 2]) for n in "abcde"]
    assert calibrate_synthesizer(1.0, 0.0, cols).noise == "laplace"
    # ten 2-way marginals at delta = 1e-6: Gaussian (Laplace's variance 2 b^2 is larger)
    auto = calibrate_synthesizer(1.0, 1e-6, cols)
    lap = calibrate_synthesizer(1.0, 1e-6, cols, noise="laplace")
    gau = calibrate_synthesizer(1.0, 1e-6, cols, noise="gaussian")
    assert auto.noise == "gaussian" and gau.scale**2 < 2 * lap.scale**2
    assert auto.scale == gau.scale and 0.999 <= auto.epsilon(1e-6) <= 1.0
    # one marginal, no count, tiny delta: Laplace b = 1/eps (variance 2) beats Gaussian
    one = calibrate_synthesizer(1.0, 1e-10, cols[:1], "1-way", count=None)
    assert one.noise == "laplace" and one.epsilon(1e-10) <= 1.0
    with pytest.raises(ValueError, match="noise"):
        calibrate_synthesizer(1.0, 1e-6, cols, noise="uniform")
