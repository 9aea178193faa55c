"""MST (McKenna, Miklau, Sheldon 2021): privacy from its primitives, selection, fit."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest

from dpacct.accountant import compose
from dpacct.calibrators import calibrate_mst
from dpacct.mechanisms import (
    MST,
    BinnedNumericColumn,
    CategoricalColumn,
    ExponentialMechanism,
    GaussianMechanism,
    Table,
)

DELTA = 1e-6


def columns(d: int, k: int = 3):
    return [CategoricalColumn(f"c{j}", list(range(k))) for j in range(d)]


def one_strong_pair(n: int, seed: int, heavy=(1, 3), d: int = 5):
    """d columns of 3 values, independent except one strongly dependent pair."""
    rng = np.random.default_rng(seed)
    data = {f"c{j}": rng.integers(0, 3, n) for j in range(d)}
    a, b = heavy
    copy = rng.random(n) < 0.85
    data[f"c{b}"] = np.where(copy, data[f"c{a}"], data[f"c{b}"])
    return columns(d), data


# ----------------------------------------------------------------------------------
# privacy: the run is the composition of its primitives
# ----------------------------------------------------------------------------------


def bounded_range_rdp_brute_force(alpha: float, eps: float) -> float:
    """Worst two-point epsilon-bounded-range pair's Renyi divergence, by a grid over t.

    Losses t (P-mass pi) and t - eps with pi = (e^eps - e^t)/(e^eps - 1) (E_P[e^-L] = 1);
    D_alpha = log(pi e^{a t} + (1 - pi) e^{a (t - eps)}) / a, a = alpha - 1, maximised
    over t in [0, eps] on a fine grid (Dong, Durfee, Rogers 2020's reduction).
    """
    t = np.linspace(0.0, eps, 20_001)
    pi = (math.exp(eps) - np.exp(t)) / math.expm1(eps)
    a = alpha - 1.0
    with np.errstate(divide="ignore"):
        return float(np.max(a * t + np.log(pi + (1.0 - pi) * np.exp(-a * eps))) / a)


@pytest.mark.parametrize(("d", "rho"), [(2, 0.05), (5, 0.3), (9, 2.0)])
def test_privacy_is_the_composition_of_the_planned_primitives(d, rho):
    mst = MST(columns(d), rho=rho)
    # the paper's split: sigma_1 = sqrt(3d/(2 rho)), eps_s = sqrt(8 (rho/3)/(d-1)),
    # sigma_2 = sqrt(3(d-1)/(2 rho)); written here from the formulas, not read back
    s1 = math.sqrt(3 * d / (2 * rho))
    e = math.sqrt(8 * (rho / 3) / (d - 1))
    s2 = math.sqrt(3 * (d - 1) / (2 * rho))
    mechanisms, counts = mst.primitives()
    assert mechanisms == [
        GaussianMechanism(sigma=s1),
        ExponentialMechanism(epsilon=e),
        GaussianMechanism(sigma=s2),
    ]
    assert counts == [d, d - 1, d - 1]
    # zCDP: d/(2 s1^2) + (d-1) e^2/8 + (d-1)/(2 s2^2) = rho/3 + rho/3 + rho/3
    assert mst.zcdp_rho == pytest.approx(rho, rel=1e-12)
    hand = compose(
        [GaussianMechanism(sigma=s1), ExponentialMechanism(epsilon=e), GaussianMechanism(sigma=s2)],
        counts=[d, d - 1, d - 1],
    )
    assert mst.epsilon(DELTA) == pytest.approx(hand.epsilon(DELTA), rel=1e-12)
    # independently: RDP = alpha (d/(2 s1^2) + (d-1)/(2 s2^2)) + (d-1) BR(alpha), the
    # BR curve by brute force, converted by Canonne-Kamath-Steinke 2020 (Prop. 12)
    alphas = np.exp(np.linspace(np.log(1.001), np.log(5e3), 500))
    gauss = d / (2 * s1**2) + (d - 1) / (2 * s2**2)
    rdp = np.array([a * gauss + (d - 1) * bounded_range_rdp_brute_force(a, e) for a in alphas])
    np.testing.assert_allclose(mst.rdp(alphas), rdp, rtol=1e-6, atol=0)
    assert (mst.rdp(alphas) <= alphas * rho * (1 + 1e-12)).all()  # within rho-zCDP

    def convert(curve: np.ndarray) -> float:
        return float(
            np.min(curve + np.log1p(-1 / alphas) - (np.log(DELTA) + np.log(alphas)) / (alphas - 1))
        )

    eps = mst.epsilon(DELTA)
    assert eps == pytest.approx(convert(rdp), rel=2e-5)
    # at or below the zCDP conversion of rho (the paper's accounting), and below
    # Bun & Steinke's rho + 2 sqrt(rho log(1/delta))
    assert eps <= convert(alphas * rho) * (1 + 1e-9)
    assert eps < rho + 2 * math.sqrt(rho * math.log(1 / DELTA))


def test_every_noisy_quantity_is_drawn_through_the_planned_releases(monkeypatch):
    calls: list[tuple[str, float, int]] = []
    for cls in (GaussianMechanism, ExponentialMechanism):
        real = cls.release

        def spy(self, value, *args, _real=real, **kwargs):
            calls.append((type(self).__name__, kwargs["sensitivity"], np.size(value)))
            return _real(self, value, *args, **kwargs)

        monkeypatch.setattr(cls, "release", spy)
    cols, data = one_strong_pair(500, seed=0)
    mst = MST(cols, rho=0.5)
    model = mst.fit(data, rng=np.random.default_rng(0))
    d = len(cols)
    kinds = [c[0] for c in calls]
    assert kinds == ["GaussianMechanism"] * d + ["ExponentialMechanism"] * (d - 1) + [
        "GaussianMechanism"
    ] * (d - 1)
    assert all(c[1] == 1.0 for c in calls)
    # the selections see the pairs that join two components: 10, then fewer
    sizes = [c[2] for c in calls if c[0] == "ExponentialMechanism"]
    assert sizes[0] == math.comb(d, 2) and sizes == sorted(sizes, reverse=True)
    assert len(model.selected) == d - 1
    # the selected pairs form a spanning tree (d - 1 edges, connected)
    reach = {model.selected[0][0]}
    for _ in range(d):
        reach |= {b for a, b in model.selected if a in reach} | {
            a for a, b in model.selected if b in reach
        }
    assert reach == {c.name for c in cols}


# ----------------------------------------------------------------------------------
# selection and fit
# ----------------------------------------------------------------------------------


def test_selection_picks_the_heavy_pair_first():
    # L1 score of the heavy pair ~ 2 * 0.85 * (2/3) n against O(sqrt(n)) for the others:
    # at n = 3000 and eps_s = sqrt(8 (1/3) / 4) = 0.82 the exponential mechanism's odds
    # for any other pair are below e^{-0.41 * 3000} -- the first choice is the heavy pair
    for seed in range(10):
        cols, data = one_strong_pair(3000, seed=seed)
        model = MST(cols, rho=1.0).fit(data, rng=np.random.default_rng(100 + seed))
        assert model.selected[0] == ("c1", "c3"), (seed, model.selected)
        # and the fitted model keeps the dependence: P(c3 == c1) ~ 0.85 + 0.15/3 = 0.9
        joint = model.probability(["c1", "c3"])
        assert np.trace(joint) == pytest.approx(0.9, abs=0.03)


def test_mst_sample_keeps_the_heavy_pair_and_reads_frames_by_name():
    pd = pytest.importorskip("pandas")
    cols, data = one_strong_pair(3000, seed=7)
    real = Table.from_data(cols, data)
    frame = pd.DataFrame(data)[["c4", "c3", "c2", "c1", "c0"]].assign(extra=1)
    with pytest.warns(UserWarning, match="extra"):
        model = MST(cols, rho=1.0).fit(frame, rng=np.random.default_rng(1))
    t = model.sample(rng=np.random.default_rng(2))
    assert abs(t.n_rows - 3000) < 30
    tv = {
        pair: 0.5 * np.abs(t.marginal(pair) / t.n_rows - real.marginal(pair) / 3000).sum()
        for pair in combinations([c.name for c in cols], 2)
    }
    assert tv[("c1", "c3")] < 0.03
    assert max(tv.values()) < 0.05
    assert ("c1", "c3") in model.noisy_tables


def test_calibrate_mst_meets_the_target_with_more_budget_than_the_zcdp_conversion():
    cols = columns(6, k=4)
    for eps in (0.5, 1.0, 3.0):
        mst = calibrate_mst(eps, DELTA, cols)
        assert eps * (1 - 1e-3) <= mst.epsilon(DELTA) <= eps
        # the paper's budget: rho with rho + 2 sqrt(rho log(1/delta)) = eps
        L = math.log(1 / DELTA)
        paper_rho = (math.sqrt(L + eps) - math.sqrt(L)) ** 2
        assert mst.rho > paper_rho


def test_validation():
    with pytest.raises(ValueError, match="at least 2 columns"):
        MST(columns(1), rho=1.0)
    with pytest.raises(ValueError, match="rho"):
        MST(columns(3), rho=0.0)
    cols, data = one_strong_pair(50, seed=0)
    with pytest.raises(ValueError, match="generator must be one of"):
        MST(cols, rho=1.0).fit(data, rng=np.random.default_rng(0), generator="pgm")
    with pytest.raises(TypeError):
        MST(cols, rho=1.0).fit(data, rng=0)
    with pytest.raises(ValueError, match="pure_epsilon"):  # delta = 0: Gaussians, no pure DP
        calibrate_mst(1.0, 0.0, cols)
    with pytest.raises(TypeError, match="delta"):
        calibrate_mst(1.0, np.ones((2, 2)), cols)
    binned = [BinnedNumericColumn("x", [0, 1, 2]), CategoricalColumn("y", ["a", "b"])]
    model = MST(binned, rho=1.0).fit(
        {"x": [0.5, 1.5] * 50, "y": ["a", "b"] * 50}, rng=np.random.default_rng(0)
    )
    assert model.selected == (("x", "y"),)


def test_an_integer_dtype_column_comes_back_as_integers():
    # MST read the column's dtype like MarginalSynthesizer only after the merge of the
    # integer-column change: integer ages came back as 21.73
    rng = np.random.default_rng(7)
    data = {"age": rng.integers(18, 90, 500), "flag": rng.integers(0, 2, 500)}
    cols = [BinnedNumericColumn("age", [18, 40, 65, 90]), CategoricalColumn("flag", [0, 1])]
    synthetic = MST(cols, rho=0.5).fit(data, rng=rng).sample(200, rng=rng)
    ages = synthetic.column("age")
    assert ages.dtype.kind == "i" and 18 <= ages.min() and ages.max() <= 90
    floats = {"age": data["age"].astype(float), "flag": data["flag"]}
    again = MST(cols, rho=0.5).fit(floats, rng=rng).sample(200, rng=rng).column("age")
    assert again.dtype.kind == "f"  # the dtype decides, not the values


def test_a_budget_every_rho_meets_returns_the_largest_rho():
    """epsilon = 1e308: the zCDP start was inf ('interval[1] must lie in (0, inf)'). MST's
    rho lies in [1e-300, 1e300] and rho = 1e300 meets the budget, so the answer is
    that edge, not an error."""
    cols = columns(3)
    mst = calibrate_mst(1e308, DELTA, cols)
    assert mst.rho == 1e300
    assert mst.epsilon(DELTA) <= 1e308
    # the largest epsilon below the edge is still calibrated inside the range
    inner = calibrate_mst(1e299, DELTA, cols)
    assert inner.rho < 1e300 and 0.99995e299 <= inner.epsilon(DELTA) <= 1e299
