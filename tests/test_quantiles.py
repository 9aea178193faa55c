"""Tests for ``dpacct.mechanisms.quantiles``: histogram, b-ary tree and
exponential-mechanism quantiles.

Independent references: explicit compositions built by hand for the privacy; a dense
least-squares solve (``np.linalg.lstsq`` on the node-by-leaf incidence matrix) for Hay et
al.'s consistency estimator; exact interval probabilities of Smith's mechanism computed
by a plain (non-log-space) formula; ``np.quantile`` for the accuracy checks.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpacct.accountant import compose
from dpacct.mechanisms.exponential import ExponentialMechanism
from dpacct.mechanisms.gaussian import GaussianMechanism
from dpacct.mechanisms.generic import PureDPMechanism
from dpacct.mechanisms.laplace import LaplaceMechanism
from dpacct.mechanisms.quantiles import (
    ExponentialQuantile,
    HistogramQuantiles,
    TreeQuantiles,
    bin_counts,
    choose_branching,
    hay_consistency,
    isotonic_counts,
    quantiles_from_counts,
    smith_quantile,
)

DELTAS = [1e-3, 1e-6, 1e-10]
ALPHAS = [1.5, 2.0, 8.0, 32.5]


def same_privacy(alg, ref):
    for d in DELTAS:
        assert alg.epsilon(d) == pytest.approx(ref.epsilon(d), rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(alg.rdp(ALPHAS), ref.rdp(ALPHAS), rtol=1e-12)
    assert alg.delta(0.5) == pytest.approx(ref.delta(0.5), rel=1e-12, abs=1e-15)


# ----------------------------------------------------------------------------------
# privacy = explicit composition
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("noise, mech", [("laplace", LaplaceMechanism(b=2.0)),
                                         ("gaussian", GaussianMechanism(sigma=2.0))])
def test_histogram_privacy_is_one_release(noise, mech):
    alg = HistogramQuantiles(lower=0.0, upper=1.0, bins=100, scale=2.0, noise=noise)
    same_privacy(alg, compose([mech], counts=[1]))


def test_histogram_laplace_is_pure_dp_at_one_over_scale():
    alg = HistogramQuantiles(lower=0.0, upper=1.0, bins=100, scale=0.5)
    assert alg.delta(2.0) == pytest.approx(0.0, abs=1e-12)   # 1/b = 2
    assert alg.delta(1.9) > 1e-3


@pytest.mark.parametrize("measure_root, depth", [(False, 3), (True, 4)])
def test_tree_privacy_is_depth_releases(measure_root, depth):
    # 1000 bins, b = 10: 10**3 = 1000 leaves, height 3
    alg = TreeQuantiles(lower=0.0, upper=1.0, bins=1000, branching=10, scale=3.0,
                        measure_root=measure_root)
    assert (alg.height, alg.depth) == (3, depth)
    same_privacy(alg, compose([LaplaceMechanism(b=3.0)], counts=[depth]))
    # pure DP: depth releases of Laplace(b) cost depth / b
    assert alg.delta(depth / 3.0) == pytest.approx(0.0, abs=1e-9)


def test_tree_gaussian_privacy_matches_closed_form():
    alg = TreeQuantiles(lower=-1.0, upper=1.0, bins=300, branching=7, scale=4.0,
                        noise="gaussian")
    assert alg.depth == 3   # 7**3 = 343 >= 300 > 49
    same_privacy(alg, compose([GaussianMechanism(sigma=4.0)] * 3))
    # three sigma-4 Gaussians = one Gaussian with sigma 4 / sqrt(3)
    single = GaussianMechanism(sigma=4.0 / math.sqrt(3.0))
    assert alg.epsilon(1e-6) == pytest.approx(single.epsilon(1e-6), rel=1e-6)


def test_one_bin_tree_measures_its_root():
    alg = TreeQuantiles(lower=0.0, upper=1.0, bins=1, branching=2, scale=1.0)
    assert (alg.height, alg.depth, alg.root_measured) == (0, 1, True)
    rel = alg.release([0.2, 0.3], rng=np.random.default_rng(0))
    assert rel.levels[0].shape == (1,)


def test_exponential_quantile_privacy():
    alg = ExponentialQuantile(epsilon0=0.7, lower=0.0, upper=1.0)
    same_privacy(alg, compose([ExponentialMechanism(epsilon=0.7)]))
    # the bounded-range accounting is tighter than generic pure DP ...
    pure = compose([PureDPMechanism(epsilon=0.7)])
    assert alg.epsilon(1e-6) < pure.epsilon(1e-6)
    assert alg.delta(0.0) < pure.delta(0.0)
    # ... and never claims better than the BR class allows: eps(delta) at most 0.7
    assert alg.epsilon(1e-6) <= 0.7 + 1e-12


# ----------------------------------------------------------------------------------
# Hay et al. consistency = least squares
# ----------------------------------------------------------------------------------
def incidence(b, h):
    """Node-by-leaf 0/1 matrix of a b-ary tree of height h, levels root first."""
    n = b**h
    rows = []
    for lvl in range(h + 1):
        width = b ** (h - lvl)
        for node in range(b**lvl):
            r = np.zeros(n)
            r[node * width:(node + 1) * width] = 1.0
            rows.append(r)
    return np.array(rows)


@pytest.mark.parametrize("b, h", [(2, 4), (3, 3), (4, 2), (5, 2), (16, 1)])
@pytest.mark.parametrize("root", [True, False])
def test_consistency_is_least_squares(b, h, root):
    rng = np.random.default_rng(b * 10 + h)
    sizes = [b**lvl for lvl in range(h + 1)]
    noisy = [rng.normal(5.0, 3.0, size=s) for s in sizes]
    got = hay_consistency(noisy if root else [None, *noisy[1:]], b, root_measured=root)
    H = incidence(b, h)
    target = np.concatenate(noisy)
    if not root:
        H, target = H[1:], target[1:]
    leaves, *_ = np.linalg.lstsq(H, target, rcond=None)
    want = incidence(b, h) @ leaves
    np.testing.assert_allclose(np.concatenate(got), want, rtol=1e-10, atol=1e-10)
    # consistency: every node is the sum of its children
    for lvl in range(h):
        np.testing.assert_allclose(got[lvl], got[lvl + 1].reshape(-1, b).sum(1), atol=1e-9)


def test_consistency_reduces_range_query_error():
    # least squares never hurts and, for long ranges, clearly helps vs summing leaves
    b, h, scale = 4, 4, 1.0
    rng = np.random.default_rng(3)
    truth = [np.zeros(b**lvl) for lvl in range(h + 1)]
    err_raw, err_cons = [], []
    for _ in range(400):
        noisy = [t + rng.laplace(0.0, scale, t.size) for t in truth]
        cons = hay_consistency(noisy, b)
        err_raw.append(noisy[-1][:200].sum() ** 2)
        err_cons.append(cons[-1][:200].sum() ** 2)
    assert np.mean(err_cons) < 0.25 * np.mean(err_raw)


def test_consistency_rejects_bad_levels():
    with pytest.raises(ValueError, match=r"noisy_levels\[1\]"):
        hay_consistency([np.zeros(1), np.zeros(3)], 2)
    with pytest.raises(ValueError, match="branching"):
        hay_consistency([np.zeros(1)], 1)
    with pytest.raises(ValueError, match="noisy_levels"):
        hay_consistency([], 2)


# ----------------------------------------------------------------------------------
# binning, reading quantiles, range queries
# ----------------------------------------------------------------------------------
def test_bin_counts_edges():
    assert bin_counts([0.0, 0.24, 0.25, 0.999, 1.0], 0.0, 1.0, 4).tolist() == [2, 1, 0, 2]


def test_quantiles_from_counts_by_hand():
    # mass 1 on [0, 1), 3 on [2, 3): total 4
    c = [1.0, 0.0, 3.0]
    got = quantiles_from_counts(c, [0.0, 0.125, 0.25, 0.5, 1.0], 0.0, 3.0)
    # q=0.125 -> t=0.5, halfway through bin 0; q=0.25 -> t=1, end of bin 0;
    # q=0.5 -> t=2, 1/3 into bin 2
    np.testing.assert_allclose(got, [0.0, 0.5, 1.0, 2.0 + 1.0 / 3.0, 3.0], atol=1e-12)
    np.testing.assert_allclose(quantiles_from_counts([0, 0], [0.3], 0.0, 10.0), [3.0])


def test_tiny_noise_reproduces_binned_quantiles():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 8.0, size=3000)
    qs = np.array([0.1, 0.37, 0.5, 0.9])
    want = quantiles_from_counts(bin_counts(x, 0.0, 8.0, 64), qs, 0.0, 8.0)
    for alg in (HistogramQuantiles(lower=0.0, upper=8.0, bins=64, scale=1e-9),
                TreeQuantiles(lower=0.0, upper=8.0, bins=64, branching=4, scale=1e-9),
                TreeQuantiles(lower=0.0, upper=8.0, bins=64, branching=3, scale=1e-9,
                              measure_root=True)):
        np.testing.assert_allclose(alg.quantiles(x, qs, rng=rng), want, atol=1e-6)
    # and the binned quantiles are within a bin width of the exact ones
    assert np.abs(want - np.quantile(x, qs)).max() < 8.0 / 64


def test_range_count_matches_truth_and_node_sums():
    rng = np.random.default_rng(1)
    x = rng.beta(2.0, 2.0, size=5000)
    alg = TreeQuantiles(lower=0.0, upper=1.0, bins=81, branching=3, scale=2.0)
    rel = alg.release(x, rng=rng)
    # bin-aligned range [27/81, 54/81) is exactly the middle node of level 1
    assert rel.range_count(27 / 81, 54 / 81) == pytest.approx(rel.levels[1][1], rel=1e-9)
    truth = np.sum((x >= 27 / 81) & (x < 54 / 81))
    assert abs(rel.range_count(27 / 81, 54 / 81) - truth) < 15   # noise std ~ 2.7
    assert rel.range_count(0.0, 1.0) == pytest.approx(rel.levels[0][0], rel=1e-9)
    with pytest.raises(ValueError, match="lower <= a <= b <= upper"):
        rel.range_count(0.5, 0.2)


def test_choose_branching():
    assert choose_branching(4096) == 16
    assert choose_branching(1024) == 32
    assert choose_branching(256) == 16
    assert choose_branching(1) == 2
    assert choose_branching(2) == 2
    assert choose_branching(4096, max_branching=8) == 8
    # the chosen b minimises (b - 1) * ceil(log_b bins)^3 by brute force
    for bins in (10, 100, 500, 3000):
        costs = {b: (b - 1) * math.ceil(math.log(bins) / math.log(b) - 1e-12) ** 3
                 for b in range(2, bins + 1)}
        best = min(costs.values())
        assert costs[choose_branching(bins)] == best
    assert TreeQuantiles(lower=0.0, upper=1.0, bins=4096, scale=1.0).branching == 16


# ----------------------------------------------------------------------------------
# utility: tree beats histogram for many bins
# ----------------------------------------------------------------------------------
def mean_quantile_error(alg, seeds, n=10_000):
    qs = np.linspace(0.05, 0.95, 19)
    errs = []
    for s in seeds:
        rng = np.random.default_rng(s)
        x = rng.beta(3.0, 6.0, size=n)
        errs.append(np.abs(alg.quantiles(x, qs, rng=rng) - np.quantile(x, qs)).mean())
    return float(np.mean(errs))


@pytest.mark.parametrize("bins, ratio", [(1024, 0.8), (4096, 0.5)])
def test_tree_beats_histogram_for_many_bins(bins, ratio):
    eps = 1.0
    hist = HistogramQuantiles(lower=0.0, upper=1.0, bins=bins, scale=1.0 / eps)
    depth = TreeQuantiles(lower=0.0, upper=1.0, bins=bins, scale=1.0).depth
    tree = TreeQuantiles(lower=0.0, upper=1.0, bins=bins, scale=depth / eps)
    # same pure-DP epsilon: a Laplace(b) level costs 1/b
    assert hist.delta(eps) == pytest.approx(0.0, abs=1e-9)
    assert tree.delta(eps) == pytest.approx(0.0, abs=1e-9)
    assert tree.delta(0.95 * eps) > 0
    seeds = range(10)
    e_hist, e_tree = mean_quantile_error(hist, seeds), mean_quantile_error(tree, seeds)
    assert e_tree < ratio * e_hist
    # and the tree is accurate in absolute terms: well under a hundredth of the range
    assert e_tree < 2e-3


# ----------------------------------------------------------------------------------
# read-out: isotonic fit of the noisy CDF, against independent values
# ----------------------------------------------------------------------------------
def isotonic_minmax(y):
    """Isotonic regression by its min-max formula (Barlow et al. 1972, Theorem 1.4.4):
    ``iso(y)_i = max_{s <= i} min_{t >= i} mean(y[s..t])``, brute force."""
    n = len(y)
    return np.array([max(min(np.mean(y[s:t + 1]) for t in range(i, n)) for s in range(i + 1))
                     for i in range(n)])


def test_isotonic_counts_against_min_max_formula():
    rng = np.random.default_rng(3)
    for _ in range(20):
        noisy = rng.laplace(size=12) + rng.integers(0, 3, size=12)
        want = np.diff(np.maximum(isotonic_minmax(np.cumsum(noisy)), 0.0), prepend=0.0)
        np.testing.assert_allclose(isotonic_counts(noisy), want, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="noisy must be a non-empty 1-D array"):
        isotonic_counts([])
    with pytest.raises(ValueError, match="noisy must not contain NaN"):
        isotonic_counts([1.0, np.nan])
    with pytest.raises(ValueError, match="noisy must contain only finite numbers"):
        isotonic_counts([1.0, np.inf])


def raw_cdf_quantiles(noisy, qs, lower, upper):
    """The plain read-out: raw noisy cumulative sums over the noisy total, first
    crossing, linear interpolation inside the bin (written here independently)."""
    cdf = np.cumsum(noisy) / np.sum(noisy)
    width = (upper - lower) / len(noisy)
    out = []
    for q in qs:
        j = int(np.argmax(cdf >= q))
        prev = cdf[j - 1] if j > 0 else 0.0
        frac = (q - prev) / (cdf[j] - prev) if cdf[j] > prev else 0.0
        out.append(lower + (j + min(max(frac, 0.0), 1.0)) * width)
    return np.array(out)


@pytest.mark.parametrize("bins", [70, 1000, 5000])
def test_histogram_error_does_not_grow_with_empty_bins(bins):
    # quartiles of 1000 Exponential(20) draws clipped to [0, 100], epsilon = 1: the
    # isotonic read-out is as good as reading the raw cumulative sums (within 10 %),
    # and far better than clipping each noisy count at zero (phantom mass in empty bins)
    qs = np.array([0.25, 0.5, 0.75])
    alg = HistogramQuantiles(lower=0.0, upper=100.0, bins=bins, scale=1.0,
                             out_of_range="clip")
    rng = np.random.default_rng(bins)
    ours, raw, clipped = [], [], []
    for _ in range(100):
        x = rng.exponential(20.0, size=1000)
        truth = np.quantile(np.minimum(x, 100.0), qs)
        rel = alg.release(x, rng=rng)
        ours.append(np.linalg.norm(rel.quantiles(qs) - truth))
        raw.append(np.linalg.norm(raw_cdf_quantiles(rel.noisy_counts, qs, 0, 100) - truth))
        clip0 = quantiles_from_counts(np.maximum(rel.noisy_counts, 0), qs, 0.0, 100.0)
        clipped.append(np.linalg.norm(clip0 - truth))
    assert np.mean(ours) < 1.1 * np.mean(raw)
    if bins >= 1000:
        assert np.mean(ours) < np.mean(clipped) / 5


def test_tree_read_out_does_not_inflate_the_total():
    # a running maximum of the CDF can only push it up (its total overshoots n by about
    # 26 here); the isotonic fit stays within a third of that bias
    alg = TreeQuantiles(lower=0.0, upper=1.0, bins=1024, scale=3.0)
    rng = np.random.default_rng(4)
    x = rng.beta(2.0, 5.0, size=2000)
    iso, runmax = [], []
    for _ in range(200):
        leaves = alg.release(x, rng=rng).leaf_counts
        iso.append(isotonic_counts(leaves).sum())
        runmax.append(max(0.0, np.maximum.accumulate(np.cumsum(leaves))[-1]))
    assert np.mean(runmax) - 2000 > 10
    assert abs(np.mean(iso) - 2000) < (np.mean(runmax) - 2000) / 3


@pytest.mark.parametrize("make", [
    lambda oor: HistogramQuantiles(lower=0.0, upper=1.0, bins=16, scale=1.0,
                                   out_of_range=oor),
    lambda oor: TreeQuantiles(lower=0.0, upper=1.0, bins=16, scale=1.0, out_of_range=oor),
])
def test_out_of_range_clip_equals_clipping_first(make):
    x = np.random.default_rng(0).normal(0.5, 0.4, size=300)
    assert (x < 0).any() and (x > 1).any()
    with pytest.raises(ValueError, match="out_of_range='clip'"):
        make("raise").quantiles(x, [0.5], rng=np.random.default_rng(1))
    got = make("clip").quantiles(x, [0.2, 0.5], rng=np.random.default_rng(1))
    want = make("raise").quantiles(np.clip(x, 0, 1), [0.2, 0.5], rng=np.random.default_rng(1))
    np.testing.assert_array_equal(got, want)
    # the privacy claim does not change
    assert make("clip").epsilon(1e-6) == make("raise").epsilon(1e-6)
    with pytest.raises(ValueError, match="out_of_range must be 'raise' or 'clip'"):
        make("drop")


def test_exponential_quantile_out_of_range():
    x = np.concatenate([np.random.default_rng(0).uniform(size=100), [5.0]])
    alg = ExponentialQuantile(epsilon0=1.0, lower=0.0, upper=1.0)
    with pytest.raises(ValueError, match="declared range"):
        alg.quantile(x, 0.5, rng=np.random.default_rng(1))
    clip = ExponentialQuantile(epsilon0=1.0, lower=0.0, upper=1.0, out_of_range="clip")
    assert clip.quantile(x, 0.5, rng=np.random.default_rng(1)) == alg.quantile(
        np.clip(x, 0, 1), 0.5, rng=np.random.default_rng(1))


# ----------------------------------------------------------------------------------
# exponential mechanism
# ----------------------------------------------------------------------------------
def test_smith_interval_probabilities():
    # 3 points in [0, 10]: intervals [0,1],[1,2],[2,6],[6,10]; q = 0.5, coefficient
    # epsilon0 / (2 Delta) = 2 / 2 = 1
    values = np.array([2.0, 1.0, 6.0])
    lengths = np.array([1.0, 1.0, 4.0, 4.0])
    w = lengths * np.exp(-1.0 * np.abs(np.arange(4) - 1.5))
    p = w / w.sum()
    rng = np.random.default_rng(5)
    em = ExponentialMechanism(epsilon=2.0)
    draws = np.array([smith_quantile(values, 0.5, em, 1.0, 0.0, 10.0, rng) for _ in range(20000)])
    freq = np.histogram(draws, bins=[0.0, 1.0, 2.0, 6.0, 10.0])[0] / draws.size
    np.testing.assert_allclose(freq, p, atol=0.015)
    # uniform inside an interval: the [6, 10] draws have mean 8
    assert np.mean(draws[draws > 6]) == pytest.approx(8.0, abs=0.1)


@pytest.mark.parametrize("candidates", ["intervals", "grid"])
def test_private_median_is_accurate(candidates):
    alg = ExponentialQuantile(epsilon0=1.0, lower=-10.0, upper=10.0, candidates=candidates,
                              grid_size=2001)
    errs, trivial = [], []
    for s in range(20):
        rng = np.random.default_rng(100 + s)
        x = rng.normal(3.0, 1.0, size=2001)
        med = alg.quantile(x, 0.5, rng=rng)
        errs.append(abs(med - np.median(x)))
        trivial.append(abs(0.0 - np.median(x)))   # midpoint of the declared range
    assert max(errs) < 0.05
    assert np.mean(errs) < 0.02
    assert np.mean(errs) < 0.01 * np.mean(trivial)


def test_private_quantile_other_levels_and_epsilon():
    rng = np.random.default_rng(7)
    x = rng.exponential(1.0, size=3000)
    for q in (0.1, 0.9):
        errs = {}
        for eps in (0.05, 2.0):
            alg = ExponentialQuantile(epsilon0=eps, lower=0.0, upper=20.0)
            errs[eps] = np.mean([abs(alg.quantile(x, q, rng=rng) - np.quantile(x, q))
                                 for _ in range(30)])
        assert errs[2.0] < 0.05
        assert errs[0.05] > 3 * errs[2.0]


# ----------------------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------------------
GEN = np.random.default_rng(0)


@pytest.mark.parametrize("make", [
    lambda: HistogramQuantiles(lower=0.0, upper=1.0, bins=8, scale=1.0),
    lambda: TreeQuantiles(lower=0.0, upper=1.0, bins=8, scale=1.0),
])
def test_binned_bad_data(make):
    alg = make()
    with pytest.raises(ValueError, match="data"):
        alg.quantiles([], 0.5, rng=GEN)
    with pytest.raises(ValueError, match="data must not contain NaN"):
        alg.quantiles([0.1, np.nan], 0.5, rng=GEN)
    with pytest.raises(ValueError, match="data must be finite"):
        alg.quantiles([0.1, np.inf], 0.5, rng=GEN)
    with pytest.raises(ValueError, match=r"declared range \[0.0, 1.0\]"):
        alg.quantiles([0.1, 1.5], 0.5, rng=GEN)
    with pytest.raises(ValueError, match="1-D"):
        alg.quantiles([[0.1, 0.2]], 0.5, rng=GEN)
    with pytest.raises(ValueError, match=r"q must lie in \[0, 1\]"):
        alg.quantiles([0.1, 0.2], [0.5, 1.2], rng=GEN)
    with pytest.raises(TypeError, match=r"rng must be a numpy\.random\.Generator"):
        alg.quantiles([0.1], 0.5, rng=np.random.RandomState(0))
    with pytest.raises(TypeError, match="rng"):
        alg.release([0.1], rng=0)


@pytest.mark.parametrize("cls", [HistogramQuantiles, TreeQuantiles])
def test_binned_bad_parameters(cls):
    with pytest.raises(ValueError, match="bins must be an integer >= 1"):
        cls(lower=0.0, upper=1.0, bins=0, scale=1.0)
    with pytest.raises(TypeError, match="bins"):
        cls(lower=0.0, upper=1.0, bins=2.5, scale=1.0)
    with pytest.raises(ValueError, match="lower must be < upper"):
        cls(lower=1.0, upper=1.0, bins=4, scale=1.0)
    with pytest.raises(ValueError, match="upper must be a finite"):
        cls(lower=0.0, upper=np.inf, bins=4, scale=1.0)
    with pytest.raises(ValueError, match="scale"):
        cls(lower=0.0, upper=1.0, bins=4, scale=0.0)
    with pytest.raises(ValueError, match="noise must be 'laplace' or 'gaussian'"):
        cls(lower=0.0, upper=1.0, bins=4, scale=1.0, noise="cauchy")


def test_tree_bad_branching():
    with pytest.raises(ValueError, match="branching must be an integer >= 2"):
        TreeQuantiles(lower=0.0, upper=1.0, bins=8, scale=1.0, branching=1)
    with pytest.raises(TypeError, match="branching"):
        TreeQuantiles(lower=0.0, upper=1.0, bins=8, scale=1.0, branching="4")
    with pytest.raises(TypeError, match="measure_root"):
        TreeQuantiles(lower=0.0, upper=1.0, bins=8, scale=1.0, measure_root="yes")


def test_exponential_quantile_bad_input():
    alg = ExponentialQuantile(epsilon0=1.0, lower=0.0, upper=1.0)
    with pytest.raises(ValueError, match="data must contain at least 1"):
        alg.quantile([], 0.5, rng=GEN)
    with pytest.raises(ValueError, match="NaN"):
        alg.quantile([np.nan], 0.5, rng=GEN)
    with pytest.raises(ValueError, match="declared range"):
        alg.quantile([-0.1, 0.5], 0.5, rng=GEN)
    with pytest.raises(ValueError, match=r"q must lie in \[0, 1\]"):
        alg.quantile([0.5], -0.1, rng=GEN)
    with pytest.raises(ValueError, match="q must be a scalar"):
        alg.quantile([0.5], [0.2, 0.5], rng=GEN)
    with pytest.raises(TypeError, match="rng"):
        alg.quantile([0.5], 0.5, rng=None)
    with pytest.raises(ValueError, match="epsilon0"):
        ExponentialQuantile(epsilon0=0.0, lower=0.0, upper=1.0)
    with pytest.raises(ValueError, match="candidates"):
        ExponentialQuantile(epsilon0=1.0, lower=0.0, upper=1.0, candidates="points")
    with pytest.raises(ValueError, match="grid_size"):
        ExponentialQuantile(epsilon0=1.0, lower=0.0, upper=1.0, grid_size=1)


def test_one_exponential_quantile_reports_the_exact_bounded_range_curve():
    """One release is accounted by the exact curve delta(0) = tanh(epsilon0 / 4)."""
    from dpacct.mechanisms.quantiles import ExponentialQuantile

    alg = ExponentialQuantile(epsilon0=1.0, lower=0.0, upper=1.0)
    assert alg.delta(0.0) == pytest.approx(math.tanh(0.25), rel=1e-12)


def test_quantiles_never_leave_the_range_by_rounding():
    # -1 + 287 * (3 / 287) rounds to 2.0000000000000004 in floating point
    assert -1.0 + 287 * (3.0 / 287) > 2.0
    q = quantiles_from_counts(np.ones(287), [0.0, 1.0], -1.0, 2.0)
    assert q.tolist() == [-1.0, 2.0]
