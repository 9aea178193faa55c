"""Tests for ``dpacct.mechanisms.algorithms.quantile_tree``: b-ary tree quantiles, Hay et al.'s
consistency and the choice of branching.

Independent references: explicit compositions built by hand for the privacy; a dense
least-squares solve (``np.linalg.lstsq`` on the node-by-leaf incidence matrix) for the
consistency estimator; a brute-force minimum for the branching.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_quantiles import same_privacy

from dpacct.accountant import compose
from dpacct.mechanisms.algorithms.quantiles import (
    TreeQuantiles,
    choose_branching,
    hay_consistency,
    isotonic_counts,
)
from dpacct.mechanisms.primitives.gaussian import GaussianMechanism
from dpacct.mechanisms.primitives.laplace import LaplaceMechanism


@pytest.mark.parametrize("measure_root, depth", [(False, 3), (True, 4)])
def test_tree_privacy_is_depth_releases(measure_root, depth):
    # 1000 bins, b = 10: 10**3 = 1000 leaves, height 3
    alg = TreeQuantiles(
        lower=0.0, upper=1.0, bins=1000, branching=10, scale=3.0, measure_root=measure_root
    )
    assert (alg.height, alg.depth) == (3, depth)
    same_privacy(alg, compose([LaplaceMechanism(b=3.0)], counts=[depth]))
    # pure DP: depth releases of Laplace(b) cost depth / b
    assert alg.delta(depth / 3.0) == pytest.approx(0.0, abs=1e-9)


def test_tree_gaussian_privacy_matches_closed_form():
    alg = TreeQuantiles(lower=-1.0, upper=1.0, bins=300, branching=7, scale=4.0, noise="gaussian")
    assert alg.depth == 3  # 7**3 = 343 >= 300 > 49
    same_privacy(alg, compose([GaussianMechanism(sigma=4.0)] * 3))
    # three sigma-4 Gaussians = one Gaussian with sigma 4 / sqrt(3)
    single = GaussianMechanism(sigma=4.0 / math.sqrt(3.0))
    assert alg.epsilon(1e-6) == pytest.approx(single.epsilon(1e-6), rel=1e-6)


def test_one_bin_tree_measures_its_root():
    alg = TreeQuantiles(lower=0.0, upper=1.0, bins=1, branching=2, scale=1.0)
    assert (alg.height, alg.depth, alg.root_measured) == (0, 1, True)
    rel = alg.release([0.2, 0.3], rng=np.random.default_rng(0))
    assert rel.levels[0].shape == (1,)


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
            r[node * width : (node + 1) * width] = 1.0
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


def test_range_count_matches_truth_and_node_sums():
    rng = np.random.default_rng(1)
    x = rng.beta(2.0, 2.0, size=5000)
    alg = TreeQuantiles(lower=0.0, upper=1.0, bins=81, branching=3, scale=2.0)
    rel = alg.release(x, rng=rng)
    # bin-aligned range [27/81, 54/81) is exactly the middle node of level 1
    assert rel.range_count(27 / 81, 54 / 81) == pytest.approx(rel.levels[1][1], rel=1e-9)
    truth = np.sum((x >= 27 / 81) & (x < 54 / 81))
    assert abs(rel.range_count(27 / 81, 54 / 81) - truth) < 15  # noise std ~ 2.7
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
        costs = {
            b: (b - 1) * math.ceil(math.log(bins) / math.log(b) - 1e-12) ** 3
            for b in range(2, bins + 1)
        }
        best = min(costs.values())
        assert costs[choose_branching(bins)] == best
    assert TreeQuantiles(lower=0.0, upper=1.0, bins=4096, scale=1.0).branching == 16


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


def test_tree_bad_branching():
    with pytest.raises(ValueError, match="branching must be an integer >= 2"):
        TreeQuantiles(lower=0.0, upper=1.0, bins=8, scale=1.0, branching=1)
    with pytest.raises(TypeError, match="branching"):
        TreeQuantiles(lower=0.0, upper=1.0, bins=8, scale=1.0, branching="4")
    with pytest.raises(TypeError, match="measure_root"):
        TreeQuantiles(lower=0.0, upper=1.0, bins=8, scale=1.0, measure_root="yes")
