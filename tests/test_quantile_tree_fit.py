"""Tests for ``dpacct.mechanisms.algorithms.quantile_tree_fit`` and the tree's level budgets.

Independent references: a dense weighted least-squares solve (``np.linalg.lstsq`` on
the node-by-real-leaf incidence matrix, rows scaled by ``1 / sd``) for the consistent
counts; brute-force enumeration of which nodes cover a real leaf; a numerical
minimisation (scipy) of the prefix variance for the level shares; explicit compositions
of the per-level primitives (and, for Gaussian noise, the closed form of composed
Gaussians) for the privacy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

from dpacct.accountant import compose
from dpacct.accountant.serialization import from_dict, to_dict
from dpacct.mechanisms.algorithms.quantile_tree_fit import (
    level_shares,
    real_nodes,
    tree_least_squares,
)
from dpacct.mechanisms.algorithms.quantiles import (
    TreeQuantiles,
    bin_counts,
    hay_consistency,
    isotonic_counts,
    quantiles_from_counts,
)
from dpacct.mechanisms.primitives.gaussian import GaussianMechanism
from dpacct.mechanisms.primitives.laplace import LaplaceMechanism

QUARTILES = np.array([0.25, 0.5, 0.75])


def height(bins, b):
    return math.ceil(round(math.log(bins, b), 12)) if bins > 1 else 0


def real_incidence(bins, b, h, measured):
    """Rows: the measured real nodes (level by level); columns: the real leaves."""
    rows, lv = [], []
    for lvl in range(h + 1):
        if not measured[lvl]:
            continue
        span = b ** (h - lvl)
        for node in range(b**lvl):
            cover = np.zeros(bins)
            cover[node * span:min((node + 1) * span, bins)] = 1.0
            if cover.any():              # covers a real leaf
                rows.append(cover)
                lv.append(lvl)
    return np.array(rows), np.array(lv)


# ----------------------------------------------------------------------------------
# real nodes
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("bins, b", [(70, 25), (1000, 25), (5000, 25), (9, 3), (10, 3),
                                     (2, 2), (17, 4)])
def test_real_nodes_by_enumeration(bins, b):
    h = height(bins, b)
    assert b**h >= bins > (b ** (h - 1) if h else 0)
    for lvl in range(h + 1):
        span = b ** (h - lvl)
        brute = sum(1 for node in range(b**lvl) if node * span < bins)
        assert real_nodes(bins, b, lvl, h) == brute


# ----------------------------------------------------------------------------------
# weighted least squares with structural zeros
# ----------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(b=st.integers(2, 6), bins=st.integers(2, 80), root=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_tree_least_squares_is_weighted_lstsq(b, bins, root, seed):
    rng = np.random.default_rng(seed)
    h = height(bins, b)
    measured = [root or lvl > 0 for lvl in range(h + 1)]
    if not any(measured[:-1]) and h == 0:
        return
    var = rng.uniform(0.2, 5.0, size=h + 1)
    noisy = [rng.normal(4.0, 3.0, size=real_nodes(bins, b, lvl, h)) if measured[lvl]
             else None for lvl in range(h + 1)]
    got = tree_least_squares(noisy, b, bins, variances=var)
    A, lv = real_incidence(bins, b, h, measured)
    y = np.concatenate([n for n in noisy if n is not None])
    sd = np.sqrt(var[lv])
    leaves, *_ = np.linalg.lstsq(A / sd[:, None], y / sd, rcond=None)
    np.testing.assert_allclose(got[-1][:bins], leaves, rtol=1e-9, atol=1e-9)
    # padding exactly zero, every level the sum of its children
    assert (got[-1][bins:] == 0.0).all()
    for lvl in range(h):
        np.testing.assert_allclose(got[lvl], got[lvl + 1].reshape(-1, b).sum(1), atol=1e-9)
        assert got[lvl].shape == (b**lvl,)


@pytest.mark.parametrize("b, h", [(2, 4), (3, 3), (25, 2)])
@pytest.mark.parametrize("root", [True, False])
def test_tree_least_squares_is_hay_on_complete_trees(b, h, root):
    rng = np.random.default_rng(b + h)
    noisy = [rng.normal(size=b**lvl) for lvl in range(h + 1)]
    if not root:
        noisy[0] = None
    got = tree_least_squares(noisy, b, b**h)
    want = hay_consistency(noisy, b, root_measured=root)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)


def test_tree_least_squares_bad_input():
    ok = [np.zeros(1), np.zeros(2), np.zeros(3)]
    tree_least_squares(ok, 2, 3)
    with pytest.raises(ValueError, match="3 levels"):
        tree_least_squares(ok[:2], 2, 3)
    with pytest.raises(ValueError, match=r"noisy_levels\[1\].*real"):
        tree_least_squares([np.zeros(1), np.zeros(1), np.zeros(3)], 2, 3)
    with pytest.raises(ValueError, match="leaf level"):
        tree_least_squares([np.zeros(1), np.zeros(2), None], 2, 3)
    with pytest.raises(ValueError, match="finite"):
        tree_least_squares([np.zeros(1), np.array([0.0, np.inf]), np.zeros(3)], 2, 3)
    with pytest.raises(ValueError, match="variances"):
        tree_least_squares(ok, 2, 3, variances=[1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="bins"):
        tree_least_squares([np.zeros(1)], 2, 1)
    with pytest.raises(ValueError, match="branching"):
        tree_least_squares(ok, 1, 3)


# ----------------------------------------------------------------------------------
# level shares
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("noise, power", [("laplace", 2.0), ("gaussian", 1.0)])
@pytest.mark.parametrize("bins, b, root", [(1000, 25, True), (70, 25, True),
                                           (5000, 25, False), (300, 7, True)])
def test_level_shares_minimise_the_prefix_variance(noise, power, bins, b, root):
    # prefix variance sum_l k_l / w_l^power (Laplace: var 2/(w eps)^2; Gaussian:
    # var 1/(2 w rho)), k_l = mean number of level-l nodes in a prefix, root 1/2
    h = height(bins, b)
    m = np.array([sum(1 for node in range(b**lvl) if node * b ** (h - lvl) < bins)
                  for lvl in range(h + 1)])
    k = np.array([0.5] + [np.mean(np.arange(min(mm, b))) for mm in m[1:]])
    if not root:
        k = k[1:]
    got = level_shares(bins, b, root_measured=root, noise=noise)
    assert got.sum() == pytest.approx(1.0, rel=1e-12)

    def cost(z):
        w = np.exp(z) / np.exp(z).sum()
        return float(np.sum(k / w**power))

    best = optimize.minimize(cost, np.zeros(k.size), method="Nelder-Mead",
                             options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000})
    w_best = np.exp(best.x) / np.exp(best.x).sum()
    np.testing.assert_allclose(got, w_best, rtol=1e-3)
    assert cost(np.log(got)) <= best.fun * (1 + 1e-9)


def test_level_shares_one_bin():
    assert level_shares(1, 2, root_measured=True).tolist() == [1.0]


# ----------------------------------------------------------------------------------
# TreeQuantiles with a level budget: privacy from the releases
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("root", [True, False])
def test_prefix_budget_laplace_privacy(root):
    alg = TreeQuantiles(lower=0.0, upper=100.0, bins=1000, branching=25, scale=4.0,
                        measure_root=root, level_budget="prefix")
    scales = alg.level_scales
    assert scales.size == alg.depth == (4 if root else 3)
    ref = compose([LaplaceMechanism(b=float(s)) for s in scales])
    for d in (1e-3, 1e-6, 1e-10):
        assert alg.epsilon(d) == pytest.approx(ref.epsilon(d), rel=1e-9, abs=1e-12)
    # pure DP: sum of 1 / scale_l = depth / scale, the equal split's budget
    eps = alg.depth / 4.0
    assert float(np.sum(1.0 / scales)) == pytest.approx(eps, rel=1e-12)
    assert alg.delta(eps * (1 + 1e-9)) == pytest.approx(0.0, abs=1e-9)
    assert alg.delta(eps * 0.95) > 1e-4


def test_prefix_budget_gaussian_privacy_equals_the_equal_split():
    # composed Gaussians are one Gaussian with 1/sigma^2 = sum 1/sigma_l^2
    kw = dict(lower=0.0, upper=1.0, bins=300, branching=7, scale=4.0, noise="gaussian",
              measure_root=True)
    prefix = TreeQuantiles(**kw, level_budget="prefix")
    uniform = TreeQuantiles(**kw)
    single = GaussianMechanism(sigma=4.0 / math.sqrt(prefix.depth))
    for d in (1e-5, 1e-9):
        assert prefix.epsilon(d) == pytest.approx(single.epsilon(d), rel=1e-6)
        assert prefix.epsilon(d) == pytest.approx(uniform.epsilon(d), rel=1e-6)
    assert len(set(np.round(prefix.level_scales, 9))) > 1


def test_explicit_level_weights_and_serialisation():
    alg = TreeQuantiles(lower=0.0, upper=1.0, bins=9, branching=3, scale=3.0,
                        measure_root=True, level_budget=[1, 1, 2])
    assert alg.level_budget == (1.0, 1.0, 2.0)
    np.testing.assert_allclose(alg.level_scales, [3.0 / (3 * 0.25)] * 2 + [3.0 / 1.5])
    assert from_dict(to_dict(alg)) == alg
    rel = alg.release(np.linspace(0, 1, 40), rng=np.random.default_rng(0))
    assert [lv.size for lv in rel.noisy_levels] == [1, 3, 9]


@pytest.mark.parametrize("bad", ["equal", [1.0, 2.0], [1.0, -1.0, 1.0], [1.0, np.inf, 1.0]])
def test_bad_level_budget(bad):
    with pytest.raises(ValueError, match="level_budget"):
        TreeQuantiles(lower=0.0, upper=1.0, bins=9, branching=3, scale=1.0,
                      measure_root=True, level_budget=bad)


# ----------------------------------------------------------------------------------
# accuracy at fixed seeds
# ----------------------------------------------------------------------------------
def padded_hay_quartiles(x, bins, b, scale, rng):
    """The former estimator: every padding node measured, Hay et al. on the full tree."""
    h = height(bins, b)
    leaves = np.zeros(b**h)
    leaves[:bins] = bin_counts(x, 0.0, 100.0, bins, out_of_range="clip")
    noisy = [leaves.reshape(b**lvl, -1).sum(1) + rng.laplace(0.0, scale, b**lvl)
             for lvl in range(h + 1)]
    cons = hay_consistency(noisy, b)[-1][:bins]
    return quantiles_from_counts(isotonic_counts(cons), QUARTILES, 0.0, 100.0)


def quartile_errors(fn, trials, seed):
    rng = np.random.default_rng(seed)
    errs = []
    for _ in range(trials):
        x = rng.exponential(20.0, size=1000)
        errs.append(np.abs(fn(x, rng) - np.quantile(x, QUARTILES)))
    return np.array(errs)


def test_real_nodes_only_beats_measuring_the_padding():
    # the OpenDP tutorial's tree at 70 bins: b = 25, root measured, epsilon = 1
    alg = TreeQuantiles(lower=0.0, upper=100.0, bins=70, branching=25, scale=3.0,
                        measure_root=True, out_of_range="clip")
    new = quartile_errors(lambda x, r: alg.quantiles(x, QUARTILES, rng=r), 300, 1)
    old = quartile_errors(lambda x, r: padded_hay_quartiles(x, 70, 25, 3.0, r), 300, 1)
    assert new.mean() < 0.85 * old.mean()
    assert (np.median(new, axis=0) < np.median(old, axis=0)).all()


@pytest.mark.parametrize("bins", [70, 1000])
def test_prefix_budget_beats_the_equal_split(bins):
    kw = dict(lower=0.0, upper=100.0, bins=bins, branching=25, measure_root=True,
              out_of_range="clip")
    depth = TreeQuantiles(**kw, scale=1.0).depth
    uniform = TreeQuantiles(**kw, scale=float(depth))          # epsilon = 1
    prefix = TreeQuantiles(**kw, scale=float(depth), level_budget="prefix")
    assert prefix.delta(1.0) == pytest.approx(0.0, abs=1e-9) == uniform.delta(1.0)
    e_u = quartile_errors(lambda x, r: uniform.quantiles(x, QUARTILES, rng=r), 300, 2)
    e_p = quartile_errors(lambda x, r: prefix.quantiles(x, QUARTILES, rng=r), 300, 2)
    assert e_p.mean() < 0.9 * e_u.mean()


# ----------------------------------------------------------------------------------
# discrete Laplace noise (OpenDP's integer noise)
# ----------------------------------------------------------------------------------
def test_discrete_laplace_histogram_and_tree_privacy():
    from dpacct.mechanisms.algorithms.quantiles import HistogramQuantiles
    from dpacct.mechanisms.primitives.discrete import DiscreteLaplaceMechanism

    hist = HistogramQuantiles(lower=0.0, upper=1.0, bins=50, scale=2.0,
                              noise="discrete_laplace")
    ref = compose([DiscreteLaplaceMechanism(scale=2.0)])
    for d in (1e-3, 1e-8):
        assert hist.epsilon(d) == pytest.approx(ref.epsilon(d), rel=1e-9, abs=1e-12)
    assert hist.delta(0.5) == pytest.approx(0.0, abs=1e-12)
    rel = hist.release(np.linspace(0, 1, 100), rng=np.random.default_rng(0))
    assert rel.noisy_counts.dtype.kind == "i"
    tree = TreeQuantiles(lower=0.0, upper=1.0, bins=70, branching=25, scale=3.0,
                         measure_root=True, noise="discrete_laplace", level_budget="prefix")
    ref = compose([DiscreteLaplaceMechanism(scale=float(s)) for s in tree.level_scales])
    assert tree.epsilon(1e-6) == pytest.approx(ref.epsilon(1e-6), rel=1e-9, abs=1e-12)
    assert float(np.sum(1.0 / tree.level_scales)) == pytest.approx(1.0, rel=1e-12)
    assert tree.delta(1.0 + 1e-9) == pytest.approx(0.0, abs=1e-9)
    out = tree.release(np.linspace(0, 1, 100), rng=np.random.default_rng(1))
    assert all(lv.dtype.kind == "i" for lv in out.noisy_levels)


@pytest.mark.parametrize("scale", [0.3, 1.0, 4.0, 25.0])
def test_noise_variance_by_summing_the_pmf(scale):
    from dpacct.mechanisms.algorithms.quantile_readout import _noise_variance

    k = np.arange(-4000, 4001, dtype=float)
    p = np.exp(-np.abs(k) / scale)
    assert _noise_variance("discrete_laplace", scale) == pytest.approx(
        float(np.sum(k**2 * p) / np.sum(p)), rel=1e-10)
    assert _noise_variance("laplace", scale) == pytest.approx(2 * scale**2)
    assert _noise_variance("gaussian", scale) == pytest.approx(scale**2)


@settings(max_examples=40, deadline=None)
@given(bins=st.integers(1, 300), b=st.integers(2, 30), root=st.booleans(),
       budget=st.sampled_from(["uniform", "prefix"]),
       noise=st.sampled_from(["laplace", "gaussian", "discrete_laplace"]),
       seed=st.integers(0, 2**32 - 1))
def test_tree_release_is_consistent_for_any_shape(bins, b, root, budget, noise, seed):
    alg = TreeQuantiles(lower=-1.0, upper=2.0, bins=bins, branching=b, scale=2.0,
                        measure_root=root, level_budget=budget, noise=noise)
    rng = np.random.default_rng(seed)
    rel = alg.release(rng.uniform(-1.0, 2.0, size=200), rng=rng)
    h = alg.height
    # only the real nodes are released; every level is the sum of its children
    assert [None if lv is None else lv.size for lv in rel.noisy_levels] == [
        None if (lvl == 0 and not alg.root_measured) else real_nodes(bins, b, lvl, h)
        for lvl in range(h + 1)]
    assert (rel.levels[-1][bins:] == 0.0).all()
    for lvl in range(h):
        np.testing.assert_allclose(rel.levels[lvl], rel.levels[lvl + 1].reshape(-1, b).sum(1),
                                   atol=1e-8)
    q = rel.quantiles([0.0, 0.25, 0.5, 0.75, 1.0])
    assert (np.diff(q) >= -1e-12).all() and (q >= -1.0).all() and (q <= 2.0).all()
