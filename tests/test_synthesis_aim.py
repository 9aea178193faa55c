"""AIM (McKenna, Mullins, Sheldon, Miklau 2022) and its zCDP filter."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpacct.calibrators import calibrate_aim
from dpacct.mechanisms import (
    AIM,
    CategoricalColumn,
    ExponentialMechanism,
    GaussianMechanism,
    ZCDPMechanism,
)
from dpacct.mechanisms.algorithms.synthesis_aim import ZCDPFilter, workload_error
from dpacct.mechanisms.algorithms.synthesis_estimate import project_marginals


def _columns(sizes):
    return [CategoricalColumn(f"c{i}", list(range(k))) for i, k in enumerate(sizes)]


def _data(sizes, n, rng):
    """A chain c0 -> c1 -> ... with strong dependence, as a dict of columns."""
    cols = [rng.integers(0, sizes[0], n)]
    for k in sizes[1:]:
        prev = cols[-1]
        keep = rng.random(n) < 0.8
        cols.append(np.where(keep, prev % k, rng.integers(0, k, n)))
    return {f"c{i}": c for i, c in enumerate(cols)}


def _exact_cost(kind: str, parameter: float) -> Fraction:
    # independent of the filter: the zCDP of each primitive from its definition
    p = Fraction(parameter)
    return 1 / (2 * p * p) if kind == "gaussian" else p * p / 8


# ------------------------------------------------------------------ the filter
def test_filter_costs_bound_the_primitives_rdp():
    """The filter's cost is a zCDP bound of the primitive: RDP(a) <= a * cost at every order."""
    alphas = np.concatenate([1.0 + np.geomspace(1e-3, 1, 20), np.geomspace(2, 1e4, 40)])
    for sigma in (0.3, 1.0, 7.5):
        f = ZCDPFilter(1e6, np.random.default_rng(0))
        f.gaussian(np.zeros(2), sigma=sigma)
        cost = f.log[-1][2]
        assert cost == pytest.approx(1 / (2 * sigma**2), rel=1e-15)
        rdp = GaussianMechanism(sigma=sigma).rdp(alphas)
        assert np.all(rdp <= alphas * cost * (1 + 1e-12))
    for eps in (0.01, 0.5, 2.0):
        f = ZCDPFilter(1e6, np.random.default_rng(0))
        f.exponential(np.zeros(3), epsilon=eps, sensitivity=1.0)
        cost = f.log[-1][2]
        assert cost == pytest.approx(eps**2 / 8, rel=1e-15)
        rdp = ExponentialMechanism(epsilon=eps).rdp(alphas)
        assert np.all(rdp <= alphas * cost * (1 + 1e-12))


def test_filter_refuses_before_drawing():
    rng = np.random.default_rng(1)
    f = ZCDPFilter(0.1, rng)
    state = rng.bit_generator.state
    with pytest.raises(RuntimeError, match="above the budget"):
        f.gaussian(np.zeros(2), sigma=2.0)  # costs 0.125 > 0.1
    assert rng.bit_generator.state == state and f.spent == 0.0 and not f.log
    f.gaussian(np.zeros(2), sigma=math.sqrt(5.0))  # 0.1 exactly? at most 0.1
    assert f.spent <= 0.1


# ------------------------------------------------------------------ the budget
def _check_budget(seed, rho, sizes, n, rounds):
    rng = np.random.default_rng(seed)
    rounds = None if rounds is None else max(rounds, len(sizes))
    aim = AIM(_columns(sizes), rho=rho, rounds=rounds)
    fitted = aim.fit(_data(sizes, n, rng), rng=rng)
    spent = sum((_exact_cost(k, p) for k, p, _ in fitted.privacy_log), Fraction(0))
    assert spent <= Fraction(rho)
    # the last round spends what remains: almost all of the budget is used
    assert float(spent) >= rho * (1 - 1e-9)
    assert fitted.spent_rho <= rho
    # one selection and one measurement per round, after the d 1-way measurements
    kinds = [k for k, _, _ in fitted.privacy_log]
    d = len(sizes)
    assert kinds[:d] == ["gaussian"] * d
    assert kinds[d:] == ["exponential", "gaussian"] * len(fitted.selected)


@pytest.mark.parametrize("seed", range(5))
def test_spent_rho_never_exceeds_the_total(seed):
    """Summed from the releases actually made (exact rational sum), across seeds and data."""
    rng = np.random.default_rng(100 + seed)
    rho = float(10 ** rng.uniform(-3, 0.5))
    _check_budget(seed, rho, [2, 3, 2], int(rng.integers(1, 300)), None)


@pytest.mark.slow
@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    rho=st.floats(1e-4, 5.0),
    sizes=st.lists(st.integers(2, 4), min_size=2, max_size=4),
    n=st.integers(1, 400),
    rounds=st.sampled_from([None, 4, 9]),
)
def test_spent_rho_never_exceeds_the_total_property(seed, rho, sizes, n, rounds):
    _check_budget(seed, rho, sizes, n, rounds)


def test_privacy_is_the_zcdp_conversion():
    aim = AIM(_columns([2, 3, 2]), rho=0.2)
    ref = ZCDPMechanism(rho=0.2)
    assert aim.epsilon(1e-6) == ref.epsilon(1e-6)
    # the classical bound (Bun & Steinke 2016, Prop. 1.3) is never better than the engine's
    assert aim.epsilon(1e-6) <= 0.2 + 2 * math.sqrt(0.2 * math.log(1e6))


def test_calibrate_aim_meets_the_target():
    cols = _columns([3, 3, 2, 2])
    aim = calibrate_aim(1.0, 1e-6, cols)
    assert 0.999 <= aim.epsilon(1e-6) <= 1.0
    # independent check: the CKS conversion evaluated on a dense grid of orders
    alphas = np.linspace(1.001, 2000, 400_000)
    cks = (aim.rho * alphas + np.log1p(-1 / alphas)
           - (math.log(1e-6) + np.log(alphas)) / (alphas - 1))
    assert cks.min() <= 1.0 + 1e-9
    with pytest.raises(ValueError, match="delta"):
        calibrate_aim(1.0, 0.0, cols)


# ------------------------------------------------------------------ behaviour
def test_selects_the_dependent_pair_and_samples():
    rng = np.random.default_rng(3)
    n = 3000
    a = rng.integers(0, 3, n)
    data = {"a": a, "b": (a + (rng.random(n) < 0.1)) % 3, "c": rng.integers(0, 2, n),
            "d": rng.integers(0, 2, n)}
    cols = [CategoricalColumn("a", [0, 1, 2]), CategoricalColumn("b", [0, 1, 2]),
            CategoricalColumn("c", [0, 1]), CategoricalColumn("d", [0, 1])]
    fitted = AIM(cols, rho=1.0).fit(data, rng=rng)
    assert ("a", "b") in fitted.selected
    assert workload_error(fitted, data) < 0.02
    synth = fitted.sample(rng=rng)
    assert set(synth.to_dict()) == {"a", "b", "c", "d"}
    assert abs(synth.n_rows - n) < 0.05 * n


def test_better_than_the_independence_model_on_average():
    """On a chain the adaptive rounds beat the 1-way-only model (all budget on 1-way)."""
    sizes = [3, 3, 3, 3]
    rng = np.random.default_rng(5)
    data = _data(sizes, 2000, rng)
    ours, indep = [], []
    for s in range(4):
        fitted = AIM(_columns(sizes), rho=0.1).fit(data, rng=np.random.default_rng(s))
        ours.append(workload_error(fitted, data))
        one = AIM(_columns(sizes), rho=0.1, workload="1-way").fit(
            data, rng=np.random.default_rng(s))
        indep.append(workload_error(one, data, workload=AIM(_columns(sizes)).workload))
    assert np.mean(ours) < 0.5 * np.mean(indep)


def test_dataframe_read_by_name():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    data = _data([2, 3, 2], 500, rng)
    cols = _columns([2, 3, 2])
    a = AIM(cols, rho=0.5).fit(pd.DataFrame(data), rng=np.random.default_rng(1))
    b = AIM(cols, rho=0.5).fit(pd.DataFrame(data)[["c2", "c0", "c1"]],
                              rng=np.random.default_rng(1))
    assert a.selected == b.selected


def test_weighted_projection_matches_closed_form():
    """Two noisy 1-way tables of the same column: the weighted projection is the
    inverse-variance average (projected onto the simplex; here inside it)."""
    z1, z2 = np.array([0.3, 0.7]), np.array([0.5, 0.5])
    p, _ = project_marginals([z1, np.outer(z2, [0.5, 0.5])], [(0,), (0, 1)], [2, 2],
                             weights=[4.0, 1.0])
    # table 2 has k = 2 cells per value: its marginal weighs w2 / k against w1 / 1
    mu = (4.0 * z1 + (1.0 / 2) * z2) / (4.0 + 0.5)
    np.testing.assert_allclose(p[0], mu, atol=1e-8)
    np.testing.assert_allclose(p[1].sum(axis=1), mu, atol=1e-8)
    with pytest.raises(ValueError, match="weights"):
        project_marginals([z1, z2], [(0,), (0,)], [2], weights=[1.0, -1.0])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"rho": 0.0}, "rho"),
        ({"rounds": 1}, "rounds"),
        ({"alpha": 1.0}, "alpha"),
        ({"workload": "3-way"}, "workload"),
        ({"workload": [("c0", "zz")]}, "unknown"),
        ({"workload": [("c0", "c1", "c2")]}, "1 or 2"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AIM(_columns([2, 2, 2]), **kwargs)


def test_domain_cap():
    with pytest.raises(ValueError, match="MST"):
        AIM(_columns([64] * 4), rho=1.0)
