"""Tests for ``dpacct.mechanisms.algorithms.quantiles``: histogram quantiles, and what the
histogram and the tree share (read-out accuracy, out-of-range data, bad input).  The
tree, the exponential-mechanism quantile and the read-out helpers have their own test
modules (``test_quantile_tree.py``, ``test_quantile_exponential.py``,
``test_quantile_readout.py``).

Independent references: explicit compositions built by hand for the privacy;
``np.quantile`` and a plain read-out written here for the accuracy checks.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpacct.accountant import compose
from dpacct.mechanisms.algorithms.quantiles import (
    HistogramQuantiles,
    TreeQuantiles,
    bin_counts,
    quantiles_from_counts,
)
from dpacct.mechanisms.primitives.gaussian import GaussianMechanism
from dpacct.mechanisms.primitives.laplace import LaplaceMechanism

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


