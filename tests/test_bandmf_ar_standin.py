"""Theorem 6 (docs/theory/dpmf_balls_in_bins.md): the white-noise-plus-cyclic-AR(1)
stand-in of a residue class and its remove law."""

import math

import mpmath as mp
import numpy as np
import pytest

from dpacct.mechanisms.algorithms.bandmf_ar_standin import (
    _hats,
    ar_coefficients,
    ar_instances,
    ar_remove_law,
)
from dpacct.mechanisms.algorithms.bandmf_balls_in_bins_core import balls_in_bins_gram
from dpacct.mechanisms.algorithms.bandmf_banded_shared import shared_law_delta
from dpacct.mechanisms.algorithms.bandmf_two_band import _hat_weights


def _remove_delta_mc(gram: np.ndarray, sigma: float, eps: float, samples: int,
                     seed: int) -> tuple[float, float]:
    """Monte Carlo of ``E_P[(Z - e^eps)_+]`` for the pair of ``gram`` (mean, standard error)."""
    rng = np.random.default_rng(seed)
    vals, vecs = np.linalg.eigh(gram)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))
    v = rng.standard_normal((samples, gram.shape[0])) @ root.T / sigma
    z = np.mean(np.exp(v - np.diag(gram) / (2 * sigma * sigma)), axis=1)
    x = np.maximum(z - math.exp(eps), 0.0)
    return float(x.mean()), float(x.std() / math.sqrt(samples))


def test_coefficients_reproduce_the_cyclic_ar1_covariance():
    t, rho = 9, 0.6
    k = ar_coefficients(t, rho)[3]
    d = np.minimum(np.arange(t), t - np.arange(t))
    # the wrapped AR(1): sum over windings of rho^|d + m t|, normalised (closed form)
    want = np.array([sum(rho ** abs(int(x) + m * t) for m in range(-60, 61)) for x in d])
    want /= want[0]
    assert np.allclose(k[0], want, rtol=0, atol=1e-12)
    assert np.allclose(k, k.T, atol=1e-14)


@pytest.mark.parametrize(("t", "rho", "match"), [(2, 0.5, "t must"), (5, 1.0, "rho must"),
                                                   (5, 0.0, "rho must")])
def test_coefficients_refuse_bad_input(t, rho, match):
    with pytest.raises(ValueError, match=match):
        ar_coefficients(t, rho)


def test_instances_refuse_bad_input():
    with pytest.raises(ValueError, match="gamma"):
        ar_instances([1.0, 0.5, 0.25], 24, 8, 1, 0.5, -1.0)
    with pytest.raises(ValueError, match="beta"):
        ar_instances([1.0, 0.5, 0.25], 24, 8, 1, 0.5, 1.0, beta=-0.1)


@pytest.mark.parametrize(("col", "n", "k", "g", "rho", "gamma"), [
    ([1.0, 0.5, 0.25, 0.125], 100, 10, 1, 0.5, 8.0),
    ([1.0, 0.8, 0.6, 0.4, 0.2], 60, 12, 2, 0.45, 3.0),
])
def test_instances_dominate_every_class_block(col, n, k, g, rho, gamma):
    gram = balls_in_bins_gram(col, n, k)
    for t, a, gam, r, beta in ar_instances(col, n, k, g, rho, gamma):
        ref = a * np.eye(t) + gam * ar_coefficients(t, r)[3] + beta
        for c in range(g):
            idx = np.arange(c, k, g)
            if idx.size == t:
                assert np.linalg.eigvalsh(ref - gram[np.ix_(idx, idx)])[0] >= 0.0


def test_domination_by_monte_carlo_and_its_guard():
    """The class pair's remove delta is at most the stand-in pair's (fixed seed, common
    random numbers impossible across dimensions: 4 standard errors); a stand-in whose
    ``a`` is halved (not dominating: 0.210 against 0.225) falls below the class pair, so
    the check can fail."""
    col, n, k, sigma, eps = [1.0, 0.7, 0.5, 0.3], 48, 8, 3.0, 0.2
    gram = balls_in_bins_gram(col, n, k)
    t, a, gam, r, beta = ar_instances(col, n, k, 1, 0.5, 0.5 * float(gram[0, 0]))[0]
    ar = ar_coefficients(t, r)[3]
    mine, se1 = _remove_delta_mc(gram, sigma, eps, 400_000, 11)
    theirs, se2 = _remove_delta_mc(a * np.eye(t) + gam * ar + beta, sigma, eps, 400_000, 12)
    assert mine <= theirs + 4 * math.hypot(se1, se2)
    weak, se3 = _remove_delta_mc(0.5 * a * np.eye(t) + gam * ar + beta, sigma, eps, 400_000, 13)
    assert weak < mine - 4 * math.hypot(se1, se3)


def test_hat_masses_against_mpmath():
    grid = np.linspace(-3.0, 8.0, 41)
    step = grid[1] - grid[0]
    mus = np.array([-3.0, -1.0, 0.4, 2.5])
    got = _hats(mus, 0.9, grid)
    with mp.workdps(30):
        for i, mu in enumerate(mus):
            for j in (0, 1, 5, 9, 13, 17, 25, 40):
                node = grid[j]
                def f(x, node=node, mu=mu):
                    return max(0, 1 - abs(x - node) / step) * mp.npdf(x, mu, 0.9)
                lo = node if j == 0 else node - step
                want = mp.quad(f, [lo, node, node + step])
                if j == 0:
                    want += mp.ncdf(grid[0], mu, 0.9)
                if want > 1e-30:
                    assert want <= got[i, j] <= want * (1 + 1e-8)
    with pytest.raises(ValueError, match="first node"):
        _hats(np.array([-3.5]), 0.9, grid)


def test_remove_law_bounds_the_stand_in_and_is_tight():
    """The certified remove delta of a small stand-in is at or above its Monte Carlo
    estimate (4 standard errors) and within 15 % of it (measured 4-7 %)."""
    sigma, inst = 2.0, (6, 1.0, 1.5, 0.5, 0.0)
    t, a, gam, r, _ = inst
    z, w, tail = ar_remove_law(sigma, inst, points=31, x_points=31, rho=0.03)
    gram = a * np.eye(t) + gam * ar_coefficients(t, r)[3]
    for eps in (0.05, 0.4):
        got = float(shared_law_delta(z, w, tail, True, np.array([eps]), 0.0)[0])
        est, se = _remove_delta_mc(gram, sigma, eps, 1_000_000, 5)
        assert got >= est - 4 * se
        assert got <= 1.15 * est


def test_remove_law_refuses_bad_input():
    inst = (6, 0.6, 0.8, 0.5, 0.0)
    with pytest.raises(ValueError, match="points"):
        ar_remove_law(1.0, inst, points=2)
    with pytest.raises(ValueError, match="rho"):
        ar_remove_law(1.0, inst, rho=0.7)
    with pytest.raises(ValueError, match="noise_multiplier"):
        ar_remove_law(0.0, inst)


def test_pruned_law_is_never_below_the_full_one():
    """Lemma 9 (session 35): dropping states and charging their values can only raise
    every delta.  With an aggressive threshold (1e-8: charges of 5e-5 that matter) the
    pruned law is at or above the unpruned one at every epsilon and shift; with the
    charges of the dropped states left out (``_prune`` returning 0) it falls below it
    (0.00076459 against 0.00077646 at eps 1.5), so the comparison can fail."""
    sigma, inst = 2.0, (6, 1.0, 1.5, 0.5, 0.0)
    full = ar_remove_law(sigma, inst, points=21, x_points=11, rho=0.05, prune=0.0)
    cut = ar_remove_law(sigma, inst, points=21, x_points=11, rho=0.05, prune=1e-8)
    assert cut[2] > full[2] + 1e-6          # states were dropped and charged
    assert cut[0].size < full[0].size
    eps = np.array([0.0, 0.05, 0.2, 0.4, 0.8, 1.5])
    for mu in (0.0, 0.3):
        d_full = shared_law_delta(*full, True, eps, mu)
        d_cut = shared_law_delta(*cut, True, eps, mu)
        assert np.all(d_cut >= d_full)
        assert np.all(d_cut <= d_full + 1e-4)


def test_exp_hats_bound_the_x_integral_and_beat_linear_hats():
    """The X hats of Theorem 6 are piecewise linear in ``u = e^{A x}``: for integrands
    convex and non-decreasing in ``u`` their sum is at least the exact integral (mpmath,
    the upper tail left out as Theorem 6 (i) charges it) and at most the sum with hats
    linear in ``x`` (the chord in ``u`` lies below the chord in ``x``)."""
    big_a = 0.7
    xg = np.linspace(-3.0, 8.0, 12)
    wu = _hat_weights(1, xg, big_a, True)
    wlin = _hat_weights(1, xg, None, True)
    for c, level in ((0.0, 1.0), (0.5, 2.0), (1.0, 5.0)):
        f = np.maximum(c + np.exp(big_a * xg) - level, 0.0)
        with mp.workdps(30):
            def g(x, c=c, level=level):
                return max(c + mp.exp(big_a * x) - level, 0) * mp.npdf(x)
            kink = float(mp.log(level - c) / big_a) if level > c else -3.0
            pts = sorted({-3.0, min(max(kink, -3.0), 8.0), 8.0})
            exact = mp.quad(g, pts) + max(c + math.exp(-3 * big_a) - level, 0) * mp.ncdf(-3)
        assert float(wu @ f) >= float(exact)
        assert float(wu @ f) <= float(wlin @ f)


def test_prune_refuses_bad_input():
    with pytest.raises(ValueError, match="prune"):
        ar_remove_law(1.0, (6, 0.6, 0.8, 0.5, 0.0), prune=-1.0)


def test_late_grid_bounds_the_stand_in_and_sits_between_the_grids():
    """Session 38: a finer partial-sum grid from term ``late_from`` on.  Every term's
    rounding is a mean-preserving spread onto its own grid, so the law's mean stays at
    least ``E[Z'] = 1`` and its delta at or above the Monte Carlo estimate; it lies
    between the all-coarse and the all-fine laws' deltas (0.05 early, 0.01 late), below
    the coarse one (the late grid is used: rounding onto the early grid throughout gives
    the coarse law), and ``late_from >= t`` or ``late_rho == rho`` give the plain law
    bit for bit."""
    sigma, inst = 2.0, (6, 1.0, 1.5, 0.5, 0.0)
    t, a, gam, r, _ = inst
    kw = {"points": 21, "x_points": 11}
    coarse = ar_remove_law(sigma, inst, rho=0.05, **kw)
    fine = ar_remove_law(sigma, inst, rho=0.01, **kw)
    mixed = ar_remove_law(sigma, inst, rho=0.05, late_rho=0.01, late_from=3, **kw)
    assert float(np.sum(mixed[0] * mixed[1])) >= 1.0
    gram = a * np.eye(t) + gam * ar_coefficients(t, r)[3]
    for eps in (0.05, 0.4):
        e = np.array([eps])
        d_c, d_f, d_m = (float(shared_law_delta(*law, True, e, 0.0)[0])
                         for law in (coarse, fine, mixed))
        est, se = _remove_delta_mc(gram, sigma, eps, 400_000, 7)
        assert d_m >= est - 4 * se
        assert d_f <= d_m < d_c
    for same in (ar_remove_law(sigma, inst, rho=0.05, late_rho=0.01, late_from=t, **kw),
                 ar_remove_law(sigma, inst, rho=0.05, late_rho=0.05, late_from=2, **kw)):
        assert all(np.array_equal(x, y) for x, y in zip(same[:2], coarse[:2], strict=True))
        assert same[2] == coarse[2]


def test_late_grid_refuses_bad_input():
    inst = (6, 0.6, 0.8, 0.5, 0.0)
    with pytest.raises(ValueError, match="late_rho"):
        ar_remove_law(1.0, inst, late_rho=0.6)
    with pytest.raises(ValueError, match="late_rho"):
        ar_remove_law(1.0, inst, late_rho=0.0)
    with pytest.raises(ValueError, match="late_from"):
        ar_remove_law(1.0, inst, late_rho=0.01, late_from=-1)
    with pytest.raises(ValueError, match="late_from"):
        ar_remove_law(1.0, inst, late_rho=0.01, late_from=1.5)


def _sweep_args(monkeypatch, module, law, *args, **kwargs):
    """The ``(ctx, terms, w0, prune)`` that ``law`` passes to ``module._sweep``."""
    seen = {}
    sweep = module._sweep

    def spy(*a):
        seen["args"] = a
        return sweep(*a)

    monkeypatch.setattr(module, "_sweep", spy)
    law(*args, **kwargs)
    return seen["args"]


@pytest.mark.parametrize("inst, sigma, kwargs", [
    ((6, 1.0, 2.0, 0.5, 0.0), 2.0, {"points": 17, "x_points": 9, "rho": 0.03}),
    ((9, 3.0, 10.0, 0.6, 0.0), 4.0, {"points": 25, "x_points": 11, "rho": 0.02,
                                     "late_rho": 0.01, "late_from": 4, "prune": 1e-9}),
])
def test_sweep_is_the_per_node_transfer_bit_for_bit(monkeypatch, inst, sigma, kwargs):
    """Session 45: every ``W_0`` node's transfer run one term at a time, each term's
    rounding computed once for all nodes (``_sweep``), returns ``_node_transfer``'s
    floats exactly, node by node (the second case prunes whole nodes and states, and
    switches grids at ``late_from``)."""
    from dpacct.mechanisms.algorithms import bandmf_ar_standin as m

    ctx, terms, w0, prune = _sweep_args(monkeypatch, m, m.ar_remove_law, sigma, inst,
                                        **kwargs)
    new = m._sweep(ctx, terms, w0, prune)
    old = [m._node_transfer(ctx, terms, i, float(x), float(w), prune)
           for i, (x, w) in enumerate(zip(ctx[3], w0, strict=True))]
    assert len(new) == len(old)
    for (law_new, tail_new), (law_old, tail_old) in zip(new, old, strict=True):
        assert tail_new == tail_old
        assert (law_new is None) == (law_old is None)
        if law_old is not None:
            assert np.array_equal(law_new, law_old)
    assert any(law is not None for law, _ in new)
