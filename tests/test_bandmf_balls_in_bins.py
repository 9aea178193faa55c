"""Tests of mechanisms/algorithms/bandmf_balls_in_bins.py: DP-MF under balls-in-bins.

Independent values (the Gram matrix and the eigenvalue bounds are tested in
tests/test_bandmf_balls_in_bins_core.py): an exact two-dimensional quadrature of the
pair's hockey-stick divergences (n = 4, k = 2); Monte Carlo estimates of both
directions (n = 4 and 8, two bands), each shown able to fail by a deliberately wrong
bound (orthogonal modes of the true norm: the correlation of the modes dropped) that
lies below them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpacct.accountant import GaussianMechanism
from dpacct.accountant.transformers.random_allocation import random_allocation
from dpacct.mechanisms.algorithms.bandmf_balls_in_bins import (
    balls_in_bins_gram,
    bandmf_balls_in_bins,
    bandmf_balls_in_bins_delta_mc,
)

TWO_BANDS = [1.0, 0.5]


def _exact_deltas(sigma: float, gram: np.ndarray, eps: float) -> tuple[float, float]:
    """Both directions' delta(eps) of the k = 2 pair by quadrature on a fine grid.

    Under ``P``, ``v = R z / sigma`` with ``z ~ N(0, I_2)`` and ``R R^T = G``; the loss is
    ``L = log((e^{v_0 - G00/2s^2} + e^{v_1 - G11/2s^2}) / 2)``; remove:
    ``E_P[(e^L - e^eps)_+]``, add: ``E_P[(1 - e^{eps + L})_+]``.  Midpoint rule on
    ``[-9, 9]^2`` with 3000^2 cells (the integrands are Lipschitz; Gaussian tails past
    9 carry < 1e-18).
    """
    r = np.linalg.cholesky(gram)
    h = 18.0 / 3000
    z = -9.0 + h * (np.arange(3000) + 0.5)
    w = np.exp(-0.5 * z * z) * h / math.sqrt(2 * math.pi)
    rem = add = 0.0
    for i in range(0, 3000, 500):
        z0 = z[i : i + 500, None]
        v0 = r[0, 0] * z0 / sigma
        v1 = (r[1, 0] * z0 + r[1, 1] * z[None, :]) / sigma
        a = v0 - gram[0, 0] / (2 * sigma**2)
        b = v1 - gram[1, 1] / (2 * sigma**2)
        loss = np.logaddexp(a, b) - math.log(2.0)
        ww = w[i : i + 500, None] * w[None, :]
        rem += float(np.sum(ww * np.maximum(np.exp(loss) - math.exp(eps), 0.0)))
        add += float(np.sum(ww * np.maximum(1.0 - np.exp(eps + loss), 0.0)))
    return rem, add


def _wrong(sigma: float, gram: np.ndarray):
    """A deliberately wrong bound: the modes taken orthogonal with their true norms."""
    return random_allocation(GaussianMechanism(sigma / math.sqrt(gram.diagonal().max())), len(gram))


@pytest.mark.parametrize("sigma", [pytest.param(1.5, marks=pytest.mark.slow), 2.0])
def test_bound_is_above_exact_quadrature_at_n4(sigma):
    gram = balls_in_bins_gram(TWO_BANDS, 4, 2)
    np.testing.assert_allclose(gram, [[2.5, 1.5], [1.5, 2.25]], rtol=1e-15)
    run = bandmf_balls_in_bins(sigma, 4, cycle_length=2, strategy=TWO_BANDS, two_band=False)
    wrong = _wrong(sigma, gram)
    for eps in (0.5, 1.0, 2.0):
        rem, add = _exact_deltas(sigma, gram, eps)
        bound = run.delta(eps)
        assert max(rem, add) <= bound
        assert bound <= 1.5 * max(rem, add)  # tight at this size
        assert wrong.delta(eps) < max(rem, add)  # the check can fail


@pytest.mark.parametrize(("n", "k"), [(4, 2), pytest.param(8, 2, marks=pytest.mark.slow), (8, 4)])
def test_bound_is_above_monte_carlo_both_directions(n, k):
    sigma = 2.0
    gram = balls_in_bins_gram(TWO_BANDS, n, k)
    run = bandmf_balls_in_bins(sigma, n, cycle_length=k, strategy=TWO_BANDS, two_band=False)
    wrong = _wrong(sigma, gram)
    rng = np.random.default_rng(20260_39 + 10 * n + k)
    for eps in (0.5, 1.0):
        bound, low_bound = run.delta(eps), wrong.delta(eps)
        for direction in ("remove", "add"):
            _, lo, _ = bandmf_balls_in_bins_delta_mc(
                sigma, n, eps, cycle_length=k, strategy=TWO_BANDS, samples=100_000,
                rng=rng, direction=direction, confidence=0.9999,
            )
            assert lo <= bound, (direction, eps, lo, bound)
            assert low_bound < lo, (direction, eps, low_bound, lo)  # able to fail


def test_monte_carlo_estimate_agrees_with_quadrature():
    gram = balls_in_bins_gram(TWO_BANDS, 4, 2)
    rem, add = _exact_deltas(1.0, gram, 1.0)
    rng = np.random.default_rng(5)
    for direction, exact in (("remove", rem), ("add", add)):
        _, lo, hi = bandmf_balls_in_bins_delta_mc(
            1.0, 4, 1.0, cycle_length=2, strategy=TWO_BANDS, samples=200_000, rng=rng,
            direction=direction, confidence=0.9999,
        )
        assert lo <= exact <= hi


def test_no_amplification_cap_and_diagonal_strategy():
    # a diagonal strategy is DP-SGD: the modes are orthogonal, and the bound is random
    # allocation of one of k steps with sensitivity sqrt(epochs) (no slack at all)
    run = bandmf_balls_in_bins(3.0, 20, cycle_length=5, strategy=[1.0])
    ra = random_allocation(GaussianMechanism(3.0 / 2.0), 5)
    assert run.epsilon(1e-5) == pytest.approx(float(ra.epsilon(1e-5)), rel=1e-6)
    # never above the run without amplification (the g = k candidate)
    c = np.array([1.0, 0.6, 0.3])
    run = bandmf_balls_in_bins(3.0, 12, cycle_length=3, strategy=c)
    norm = math.sqrt(balls_in_bins_gram(c, 12, 3).diagonal().max())
    assert run.epsilon(1e-5) <= GaussianMechanism(3.0 / norm).epsilon(1e-5) * (1 + 1e-9)


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="non-negative"):
        bandmf_balls_in_bins(1.0, 4, cycle_length=2, strategy=[1.0, -0.5])
    with pytest.raises(ValueError, match="lower triangular"):
        bandmf_balls_in_bins(1.0, 2, cycle_length=1, strategy=[[1.0, 1.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match="cycle_length"):
        bandmf_balls_in_bins(1.0, 4, cycle_length=5, strategy=[1.0])
    with pytest.raises(ValueError, match="noise_multiplier"):
        bandmf_balls_in_bins(0.0, 4, cycle_length=2, strategy=[1.0])
    with pytest.raises(ValueError, match="first column"):
        bandmf_balls_in_bins(1.0, 2, cycle_length=2, strategy=[1.0, 0.5, 0.2])
    with pytest.raises(ValueError, match="shape"):
        bandmf_balls_in_bins(1.0, 3, cycle_length=2, strategy=np.eye(2))


def test_calibration_meets_the_target_from_below():
    from dpacct.calibrators import bandmf_balls_in_bins_noise_multiplier

    sigma = bandmf_balls_in_bins_noise_multiplier(
        2.0, 1e-5, 8, cycle_length=4, strategy=TWO_BANDS, rtol=1e-2, two_band=False
    )
    eps = bandmf_balls_in_bins(sigma, 8, cycle_length=4, strategy=TWO_BANDS,
                               two_band=False).epsilon(1e-5)
    assert 2.0 * (1 - 1e-2) <= eps <= 2.0
    # less noise than the run without amplification needs, more than orthogonal modes
    gram = balls_in_bins_gram(TWO_BANDS, 8, 4)
    assert _wrong(sigma, gram).epsilon(1e-5) < eps
    assert GaussianMechanism(sigma / math.sqrt(gram.diagonal().max())).epsilon(1e-5) > eps


def test_two_band_calibration_brackets_the_target_and_holds_against_quadrature():
    """The default calibration refines Theorem 1's noise with Theorem 2 (n 4, k 2): the
    answer meets the target on the library's bound and on the exact quadrature, the
    answer / (1 + rtol) does not meet it on the bound, and the exact pair at 0.9 times
    the answer breaks delta (the check can fail: a calibration 10 % too generous)."""
    from dpacct.calibrators import bandmf_balls_in_bins_noise_multiplier
    from dpacct.mechanisms.algorithms.bandmf_two_band import BandMFTwoBandBallsInBins

    eps, delta, rtol = 2.0, 1e-5, 1e-2
    res = bandmf_balls_in_bins_noise_multiplier(eps, delta, 4, cycle_length=2,
                                                strategy=TWO_BANDS, rtol=rtol, full_output=True)
    sigma = float(res.parameter)
    assert isinstance(res.mechanism, BandMFTwoBandBallsInBins)
    assert res.epsilon == res.mechanism.epsilon(delta) <= eps
    below = bandmf_balls_in_bins(sigma / (1 + rtol), 4, cycle_length=2, strategy=TWO_BANDS)
    assert below.epsilon(delta) > eps
    gram = balls_in_bins_gram(TWO_BANDS, 4, 2)
    assert max(_exact_deltas(sigma, gram, eps)) <= delta
    assert max(_exact_deltas(0.9 * sigma, gram, eps)) > delta
