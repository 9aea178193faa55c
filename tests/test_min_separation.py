"""b-min-sep batches (Theorem 7 of docs/theory/dpmf_balls_in_bins.md): the Poisson pair
dominates, checked against Monte Carlo of the exact pair in both directions, and the
Monte Carlo's likelihood ratio against a brute-force sum over participation patterns."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import dpacct as dp
from dpacct.accountant.transformers import min_separation as ms


def _patterns(steps: int, p: float, b: int, warm: bool) -> dict[tuple[int, ...], float]:
    """Every participation pattern of the record with its probability, by recursion over
    the sampler's rule (independent of the module's chain and forward algorithm)."""
    start = {0: 1.0}
    if warm and b > 1:
        z = 1.0 + (b - 1) * p
        start = {0: 1.0 / z, **{b - j: p / z for j in range(1, b)}}
    out: dict[tuple[int, ...], float] = {}

    def walk(t: int, wait: int, prob: float, seq: tuple[int, ...]) -> None:
        if t == steps:
            out[seq] = out.get(seq, 0.0) + prob
            return
        if wait == 0:
            walk(t + 1, b - 1, prob * p, (*seq, 1))
            if p < 1.0:
                walk(t + 1, 0, prob * (1.0 - p), (*seq, 0))
        else:
            walk(t + 1, wait - 1, prob, (*seq, 0))

    for wait, prob in start.items():
        walk(0, wait, prob, ())
    return out


def _brute_log_ratio(y, c, p, b, sigma, warm):
    n = y.shape[1]
    total = np.zeros(y.shape[0])
    for seq, prob in _patterns(n, p, b, warm).items():
        x = np.array(seq, dtype=float)
        m = np.zeros(n)
        for lag, v in enumerate(c):
            m[lag:] += v * x[: n - lag]
        total += prob * np.exp((y @ m - 0.5 * m @ m) / sigma**2)
    return np.log(total)


def test_patterns_are_a_probability_law():
    for b, warm in ((1, True), (2, True), (3, False), (4, True)):
        law = _patterns(6, 0.4, b, warm)
        assert math.isclose(sum(law.values()), 1.0, rel_tol=1e-12)
        for seq in law:  # at most one participation in any b consecutive steps
            ones = [i for i, v in enumerate(seq) if v]
            assert all(j - i >= b for i, j in itertools.pairwise(ones))


@pytest.mark.parametrize("b, strategy", [(1, (1.0,)), (2, (1.0,)), (3, (1.0,)),
                                         (2, (0.8, 0.6)), (3, (0.8, 0.6))])
@pytest.mark.parametrize("warm", [True, False])
def test_forward_likelihood_ratio_is_the_sum_over_patterns(b, warm, strategy):
    rng = np.random.default_rng(11)
    y = rng.normal(0.3, 1.2, size=(40, 6))
    c = np.array(strategy)
    got = ms._log_ratio(y, c, 0.35, b, 0.9, warm)
    want = _brute_log_ratio(y, c, 0.35, b, 0.9, warm)
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)


def test_chain_sample_has_the_patterns_law():
    rng = np.random.default_rng(5)
    x = ms._chain_sample(rng, 200_000, 4, 0.4, 3, True)
    law = _patterns(4, 0.4, 3, True)
    keys, counts = np.unique(x.astype(int), axis=0, return_counts=True)
    for key, count in zip(map(tuple, keys), counts, strict=True):
        expect = law[key]
        se = math.sqrt(expect * (1 - expect) / 200_000)
        assert abs(count / 200_000 - expect) <= 5 * se + 1e-12


def test_steps_are_poissons_and_the_run_takes_the_least_route():
    g = dp.GaussianMechanism(1.1)
    step = dp.min_separation_subsample(g, 0.01, min_sep=16)
    steps = dp.compose([step], counts=[2_000])
    plain = dp.dpsgd_mechanism(1.1, 0.01, 2_000)
    assert steps.epsilon(1e-5) == plain.epsilon(1e-5)
    assert steps.epsilon_bounds(1e-5).bounds == "dominating pair"
    assert plain.epsilon_bounds(1e-5).bounds == "mechanism"
    assert step.subsampled_gaussian() == (0.01, 1 / 1.1)
    run = dp.min_separation_dpsgd(1.1, 0.01, 2_000, min_sep=16)
    routes = [float(r.epsilon(1e-5)) for r in run.routes()]
    assert routes[0] == plain.epsilon(1e-5)
    assert run.epsilon(1e-5) == min(routes)
    assert float(run.delta(1.0)) == min(float(r.delta(1.0)) for r in run.routes())
    lo, hi = run.epsilon_bounds(1e-5)
    assert hi == min(routes) and 0 < lo <= hi
    assert run.epsilon_bounds(1e-5).bounds == "dominating pair"
    assert len(dp.min_separation_dpsgd(1.1, 0.01, 10, min_sep=1).routes()) == 1


@pytest.mark.parametrize("p, b", [(0.5, 2), (0.05, 4), (0.3, 7), (0.02, 40), (1.0, 3)])
def test_block_weights_decompose_the_geometric_block(p, b):
    # the mixture's law of the participating step must put at least w_j = p (1-p)^(j-1)
    # on every step j (rates and weights rounded up), and its weights sum to >= 1
    lengths, weights, rate = ms.block_weights(p, b)
    assert lengths[0] == 1 and lengths[-1] == b and rate <= 1.0
    assert math.fsum(weights) >= 1.0 - 1e-15 and math.fsum(weights) <= 1.0 + 1e-12
    assert rate >= 1.0 - (1.0 - p) ** b * (1 + 1e-15)
    mass = np.zeros(b)
    for m, wt in zip(lengths, weights, strict=True):
        mass[:m] += wt * rate / m
    want = np.array([p * (1 - p) ** j for j in range(b)])
    # merging moves a length's weight to a shorter one (mass towards the first steps):
    # every prefix holds at least the exact prefix mass, and the total is kept
    assert np.all(np.cumsum(mass) >= np.cumsum(want) * (1 - 1e-12))
    assert math.isclose(mass.sum(), want.sum(), rel_tol=1e-12)
    if b <= ms.KEEP_ALL:  # nothing merged: the decomposition is exact
        np.testing.assert_allclose(mass, want, rtol=1e-12)


@pytest.mark.parametrize("sigma, p, b", [(1.0, 0.05, 4), (0.8, 0.3, 3), (1.5, 0.6, 2)])
def test_block_pair_is_above_monte_carlo_of_the_geometric_block(sigma, p, b):
    # Lemma B: the block's pair (participation at step j w.p. p (1-p)^(j-1), at most one)
    # is dominated by the revealed mixture; checked against its Monte Carlo, both orders
    rng = np.random.default_rng(int(100 * sigma + 10 * b))
    n = 200_000
    w = np.array([p * (1 - p) ** j for j in range(b)])
    j = rng.choice(b + 1, size=n, p=np.r_[w, 1.0 - w.sum()])
    yp = rng.normal(0.0, sigma, (n, b))
    hit = j < b
    yp[np.nonzero(hit)[0], j[hit]] += 1.0
    yq = rng.normal(0.0, sigma, (n, b))

    def lr(y):
        return 1.0 - w.sum() + (w * np.exp((y - 0.5) / sigma**2)).sum(axis=1)

    blk = ms.MinSeparationBlockPair(sigma, p, b)
    for eps in (0.2, 0.7, 1.5):
        rem = np.maximum(1 - np.exp(eps) / lr(yp), 0.0)
        add = np.maximum(1 - np.exp(eps) * lr(yq), 0.0)
        cert = float(blk.delta(eps))
        for v in (rem, add):
            assert v.mean() - 5 * v.std() / math.sqrt(n) <= cert


def test_monte_carlo_at_min_sep_one_is_the_exact_poisson_pair():
    # b = 1 is Poisson sampling: the estimate must meet the exact certified curve
    # (an independent value: the PLD engine's bracket of the subsampled Gaussian)
    rng = np.random.default_rng(3)
    (rem, se), (add, se_a) = dp.min_separation_delta_mc(
        1.0, 0.3, 6, 1.0, min_sep=1, samples=200_000, rng=rng)
    lo_hi = dp.dpsgd_mechanism(1.0, 0.3, 6)
    exact = float(lo_hi.delta(1.0))
    assert abs(max(rem, add) - exact) <= 5 * max(se, se_a) + 1e-4 * exact


@pytest.mark.parametrize("steps, b, warm", [(2, 2, True), (3, 3, True), (10, 2, True),
                                            (10, 3, False), (3, 2, False)])
def test_certified_delta_is_above_monte_carlo_of_both_directions(steps, b, warm):
    rng = np.random.default_rng(steps * 10 + b)
    run = dp.min_separation_dpsgd(0.9, 0.4, steps, min_sep=b)
    for eps in (0.3, 1.0, 2.0):
        cert = float(run.delta(eps))
        (rem, se), (add, se_a) = dp.min_separation_delta_mc(
            0.9, 0.4, steps, eps, min_sep=b, warm_start=warm, samples=100_000, rng=rng)
        assert rem - 5 * se <= cert
        assert add - 5 * se_a <= cert


def test_the_monte_carlo_check_rejects_a_bound_below_the_truth():
    # one step's delta is not a bound for ten: the same check must say so
    rng = np.random.default_rng(2)
    one = float(dp.min_separation_dpsgd(0.9, 0.4, 1, min_sep=2).delta(1.0))
    (rem, se), _ = dp.min_separation_delta_mc(0.9, 0.4, 10, 1.0, min_sep=2,
                                              samples=100_000, rng=rng)
    assert rem - 5 * se > one


def test_the_separation_lowers_the_estimate_and_the_bound():
    rng = np.random.default_rng(4)
    est = [dp.min_separation_delta_mc(1.0, 0.3, 8, 1.0, min_sep=b, samples=50_000,
                                      rng=rng)[0][0] for b in (1, 2, 4)]
    assert est[0] > est[1] > est[2]
    bounds = [float(dp.min_separation_dpsgd(1.0, 0.3, 8, min_sep=b).delta(1.0))
              for b in (1, 2, 4)]
    assert bounds[0] > bounds[1] > bounds[2]
    assert all(e <= c for e, c in zip(est, bounds, strict=True))


def test_small_noise_keeps_the_poisson_route_alone():
    below = dp.min_separation_dpsgd(ms.BLOCK_MIN_SIGMA * 0.9, 0.1, 20, min_sep=4)
    above = dp.min_separation_dpsgd(ms.BLOCK_MIN_SIGMA * 1.1, 0.1, 20, min_sep=4)
    assert len(below.routes()) == 1 and len(above.routes()) == 2


def test_bad_input_is_named():
    g = dp.GaussianMechanism(1.0)
    with pytest.raises(ValueError, match="min_sep"):
        dp.min_separation_subsample(g, 0.1, min_sep=0)
    with pytest.raises(ValueError, match="sample_rate"):
        dp.min_separation_dpsgd(1.0, 1.5, 10, min_sep=2)
    with pytest.raises(ValueError, match="noise_multiplier"):
        dp.min_separation_dpsgd(-1.0, 0.1, 10, min_sep=2)
    with pytest.raises(ValueError, match="steps"):
        dp.min_separation_dpsgd(1.0, 0.1, 0, min_sep=2)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="bands"):
        dp.min_separation_delta_mc(1.0, 0.1, 4, 1.0, min_sep=2, strategy=[1, 1, 1], rng=rng)
    with pytest.raises(TypeError, match="Generator"):
        dp.min_separation_delta_mc(1.0, 0.1, 4, 1.0, min_sep=2, rng=0)
    with pytest.raises(TypeError, match="warm_start"):
        dp.min_separation_delta_mc(1.0, 0.1, 4, 1.0, min_sep=2, warm_start=1, rng=rng)
