"""Theorem 6' (docs/theory/dpmf_balls_in_bins.md, session 36): the add direction of the
white-noise-plus-cyclic-AR(1) stand-in, its hats linear in ``exp(lam w)`` and Lemma 10's
exponents."""

import math

import mpmath as mp
import numpy as np
import pytest

import dpacct.mechanisms.algorithms.bandmf_ar_add as ar_add
from dpacct.mechanisms.algorithms.bandmf_ar_add import _lams, ar_add_law, exp_hats
from dpacct.mechanisms.algorithms.bandmf_ar_standin import (
    ar_coefficients,
    ar_instances,
    ar_remove_law,
)
from dpacct.mechanisms.algorithms.bandmf_balls_in_bins_core import balls_in_bins_gram
from dpacct.mechanisms.algorithms.bandmf_banded_shared import ar_coarser, shared_law_delta


def _ratio_mc(gram: np.ndarray, sigma: float, samples: int, seed: int) -> np.ndarray:
    """Samples of ``Z = dQ/dP`` under ``P`` for the pair of ``gram`` (fixed-seed Generator)."""
    rng = np.random.default_rng(seed)
    vals, vecs = np.linalg.eigh(gram)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))
    v = rng.standard_normal((samples, gram.shape[0])) @ root.T / sigma
    return np.mean(np.exp(v - np.diag(gram) / (2 * sigma * sigma)), axis=1)


def _delta_mc(z: np.ndarray, eps: float, up: bool) -> tuple[float, float]:
    """Mean and standard error of the remove ``(Z - e^eps)_+`` or add ``(1 - e^eps Z)_+``."""
    x = np.maximum(z - math.exp(eps), 0.0) if up else np.maximum(1 - math.exp(eps) * z, 0.0)
    return float(x.mean()), float(x.std() / math.sqrt(z.size))


@pytest.mark.parametrize(("mu", "sd", "lam"), [(0.3, 0.7, 0.9), (-1.0, 0.7, 0.9),
                                               (2.5, 1.3, 0.2), (-3.0, 0.4, 2.0)])
def test_exp_hats_against_mpmath(mu, sd, lam):
    """Each float hat mass (hats linear in ``exp(lam w)``, upper tail moved onto the last
    node) is at or above a 30-digit quadrature of its integral, by at most 1e-7
    relative (1e-5 for masses below 1e-10, whose slack is relative to the larger terms
    they are formed from); the charged lower tail likewise."""
    grid = np.linspace(-4.0, 2.0, 13)
    got, below = exp_hats(np.array([mu]), sd, lam, grid)
    with mp.workdps(30):
        ys = [mp.exp(lam * mp.mpf(float(x))) for x in grid]

        def dens(w):
            return mp.npdf(w, mu, sd)

        for j in range(grid.size):
            want = mp.mpf(0)
            if j > 0:
                want += mp.quad(lambda w, j=j: (mp.exp(lam * w) - ys[j - 1])
                                / (ys[j] - ys[j - 1]) * dens(w), [grid[j - 1], grid[j]])
            if j < grid.size - 1:
                want += mp.quad(lambda w, j=j: (ys[j + 1] - mp.exp(lam * w))
                                / (ys[j + 1] - ys[j]) * dens(w), [grid[j], grid[j + 1]])
            else:
                want += 1 - mp.ncdf(grid[-1], mu, sd)
            rel = 1e-7 if want > 1e-10 else 1e-5  # the slack is relative to the Phi terms
            assert float(want) <= got[0, j] <= float(want) * (1 + rel) + 1e-290
        tail = mp.ncdf(grid[0], mu, sd)
        assert float(tail) <= below[0] <= float(tail) * (1 + 1e-7) + 1e-290


def test_lams_meet_lemma_10_from_the_covariance():
    """``lam_0 >= C K_0j / K_00`` (the coefficient of ``W_0`` in ``E[W_j | W_0]``, from the
    covariance, not from the recursion the code uses) and ``lam_s >= C`` (``W_s``'s own
    term); on these stand-ins every coefficient is at most 1."""
    for t, rho in ((6, 0.5), (25, 0.45), (50, 0.7)):
        alpha, beta, tau, cov = ar_coefficients(t, rho)
        lams = _lams(alpha, beta, tau, 0.4)
        assert lams[0] >= 0.4 * float(np.max(cov[0] / cov[0, 0])) * (1 - 1e-12)
        assert np.all(lams >= 0.4) and np.all(lams <= 0.4 * (1 + 1e-11))


def _law_delta(law: tuple, up: bool, eps: float) -> float:
    return float(shared_law_delta(*law, up, np.array([eps]), 0.0)[0])


def test_both_directions_bound_both_pairs_and_a_wrong_hat_fails():
    """On a class of 6 bins (5 bands, n 60, k 12, two classes): the certified add (Theorem
    6') and remove (Theorem 6) deltas are at or above the Monte Carlo estimates of the
    stand-in's pair and of the class pair (fixed seeds, 4 standard errors), and the add
    law is within 20 % of its pair's (measured 1.5-3.5 %).  The check can fail: the same
    law with a wrong hat (the innovation's sd taken 0.8 times too small) falls below the
    estimate at epsilon 0.6 (0.0477 against 0.0498, 17 standard errors)."""
    col, n, k, sigma = [1.0, 0.8, 0.6, 0.4, 0.2], 60, 12, 4.0
    gram = balls_in_bins_gram(col, n, k)
    inst = ar_instances(col, n, k, 2, 0.45, 3.0)[0]
    t, a, gam, r, beta = inst
    stand = a * np.eye(t) + gam * ar_coefficients(t, r)[3] + beta
    idx = np.arange(0, k, 2)
    z_stand = _ratio_mc(stand, sigma, 1_000_000, 21)
    z_class = _ratio_mc(gram[np.ix_(idx, idx)], sigma, 1_000_000, 22)
    add = ar_add_law(sigma, inst, points=31, x_points=31, width=6.0, rho=0.02, prune=0.0)
    rem = ar_remove_law(sigma, inst, points=31, x_points=21, width=6.0, rho=0.02)
    for eps in (0.1, 0.3, 0.6):
        got_add, got_rem = _law_delta(add, False, eps), _law_delta(rem, True, eps)
        for zs in (z_stand, z_class):
            est, se = _delta_mc(zs, eps, False)
            assert got_add >= est - 4 * se
            est, se = _delta_mc(zs, eps, True)
            assert got_rem >= est - 4 * se
        est, _ = _delta_mc(z_stand, eps, False)
        assert got_add <= 1.2 * est
    right = ar_add.exp_hats
    try:
        ar_add.exp_hats = lambda mu, sd, lam, grid: right(mu, 0.8 * sd, lam, grid)
        wrong = ar_add_law(sigma, inst, points=31, x_points=31, width=6.0, rho=0.02,
                           prune=0.0)
    finally:
        ar_add.exp_hats = right
    est, se = _delta_mc(z_stand, 0.6, False)
    assert _law_delta(wrong, False, 0.6) < est - 4 * se  # 0.0477 against 0.0498


def test_pruned_add_law_is_never_below_the_full_one():
    """Dropped states' masses go to the tail (``chi <= 1``): with an aggressive threshold
    (1e-7) the pruned law's delta is at or above the full one's, and close to it."""
    sigma, inst = 2.0, (6, 1.0, 1.5, 0.5, 0.0)
    full = ar_add_law(sigma, inst, points=21, x_points=15, rho=0.03, prune=0.0)
    cut = ar_add_law(sigma, inst, points=21, x_points=15, rho=0.03, prune=1e-7)
    assert cut[2] > full[2] + 1e-6  # the charges are material
    for eps in (0.05, 0.3, 0.8, 1.5):
        a, b = _law_delta(full, False, eps), _law_delta(cut, False, eps)
        assert b >= a
        assert b <= a + 2 * cut[2]


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"points": 2}, "points"), ({"rho": 0.7}, "rho"), ({"theta": 1.0}, "theta"),
    ({"prune": -1.0}, "prune"), ({"noise_multiplier": 0.0}, "noise_multiplier")])
def test_add_law_refuses_bad_input(kwargs, match):
    args = {"noise_multiplier": 1.0, **kwargs}
    sigma = args.pop("noise_multiplier")
    with pytest.raises(ValueError, match=match):
        ar_add_law(sigma, (6, 0.6, 0.8, 0.5, 0.0), **args)


def test_coarser_route_keeps_the_correlation_per_bin():
    """``ar_coarser`` halves the class count with ``rho^(1/2)`` and the same ``gamma``, and
    its instance is certified for every class block of twice the bins; nothing without
    Theorem 6 at the chosen count."""
    col, n, k, sigma = [1.0, 0.8, 0.6, 0.4, 0.2], 120, 32, 4.0
    inst = ar_instances(col, n, k, 2, 0.45, 3.0)[0]
    assert ar_coarser(sigma, col, n, k, (2, 1.0, 0.0), {}) is None
    assert ar_coarser(sigma, col, n, k, (3, 1.0, 0.0), {inst[0]: inst}) is None
    got = ar_coarser(sigma, col, n, k, (2, 1.0, 0.0), {inst[0]: inst})
    if got is not None:
        g, (t, a, gam, r, beta) = got
        assert (g, t, gam) == (1, 2 * inst[0], inst[2])
        assert r == pytest.approx(math.sqrt(inst[3]), rel=1e-15)
        ref = a * np.eye(t) + gam * ar_coefficients(t, r)[3] + beta
        assert np.linalg.eigvalsh(ref - balls_in_bins_gram(col, n, k))[0] >= 0.0


@pytest.mark.parametrize("inst, sigma, kwargs", [
    ((4, 1.0, 1.0, 0.5, 0.0), 2.0, {"points": 17, "x_points": 9, "rho": 0.03, "prune": 0.0}),
    ((6, 3.0, 3.0, 0.5, 0.0), 1.0, {"points": 17, "x_points": 9, "rho": 0.03, "prune": 1e-9}),
])
def test_add_sweep_is_the_per_node_transfer_bit_for_bit(monkeypatch, inst, sigma, kwargs):
    """Session 45: the add law's ``_sweep`` (one term at a time over every ``W_0`` node)
    returns ``_node_transfer``'s floats exactly, node by node; both cases reach the
    absorbing top cell (sums at or above 1), whose upper parts the window drops."""
    from dpacct.mechanisms.algorithms import bandmf_ar_sweep

    seen = {"top": 0}
    apply_term = bandmf_ar_sweep.apply_term

    def spy_apply(cells, d, cols, wx, size):
        out, off = apply_term(cells, d, cols, wx, size)
        seen["top"] += cells[3] + cells[4] - 2 == size - 1  # the top j is the last cell
        return out, off

    sweep = ar_add._sweep

    def spy(*a):
        seen["args"] = a
        return sweep(*a)

    monkeypatch.setattr(ar_add, "_sweep", spy)
    monkeypatch.setattr(ar_add, "apply_term", spy_apply)
    ar_add_law(sigma, inst, **kwargs)
    ctx, terms, w0, prune = seen["args"]
    assert seen["top"] > 0
    new = sweep(ctx, terms, w0, prune)
    old = [ar_add._node_transfer(ctx, terms, i, float(x), float(w), prune)
           for i, (x, w) in enumerate(zip(ctx[3], w0, strict=True))]
    for (law_new, tail_new), (law_old, tail_old) in zip(new, old, strict=True):
        assert tail_new == tail_old
        assert np.array_equal(law_new, law_old)
