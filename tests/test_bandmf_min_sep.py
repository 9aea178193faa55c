"""DP-MF on b-min-sep batches (Theorem 7 of docs/theory/dpmf_balls_in_bins.md): the norm
bound against numpy's eigenvalues, and the certified delta against Monte Carlo of the
exact two-band pair at n = 4 and 8, both directions."""

from __future__ import annotations

import numpy as np
import pytest

import dpacct as dp
from dpacct.mechanisms.algorithms.bandmf_min_sep import (
    bandmf_min_sep,
    strategy_norm_squared_upper,
)

_TWO_BANDS = np.array([1.0, 0.5]) / np.sqrt(1.25)


def _toeplitz(c, n):
    m = np.zeros((n, n))
    for lag, v in enumerate(c[:n]):
        m[np.arange(lag, n), np.arange(0, n - lag)] = v
    return m


@pytest.mark.parametrize("c", [(1.0,), tuple(_TWO_BANDS), (1.0, 0.5, 0.25, 0.125),
                               (0.3, 0.0, 0.9)])
@pytest.mark.parametrize("n", [4, 8, 64, 300])
def test_norm_bound_is_above_the_largest_eigenvalue_and_close(c, n):
    truth = float(np.linalg.eigvalsh(_toeplitz(np.array(c), n).T @ _toeplitz(np.array(c), n))[-1])
    for strategy in (c, _toeplitz(np.array(c), n)):  # as a first column and as a matrix
        alpha = strategy_norm_squared_upper(strategy, n)
        assert alpha >= truth * (1 - 1e-14)  # (eigvalsh's own error is ~n u)
        assert alpha <= truth * (1 + 1e-3)


def test_identity_strategy_is_dpsgd():
    run = bandmf_min_sep(1.2, 500, sample_rate=0.02, min_sep=4, strategy=[1.0])
    plain = dp.min_separation_dpsgd(1.2, 0.02, 500, min_sep=4)
    assert strategy_norm_squared_upper([1.0], 500) == 1.0
    assert run.epsilon(1e-6) == plain.epsilon(1e-6)
    assert run.epsilon_bounds(1e-6).bounds == "dominating pair"


@pytest.mark.parametrize("n, b, warm", [(4, 2, True), (4, 3, False), (8, 2, True),
                                        (8, 3, True)])
def test_two_band_bound_is_above_monte_carlo_of_both_directions(n, b, warm):
    rng = np.random.default_rng(100 * n + b)
    run = bandmf_min_sep(0.8, n, sample_rate=0.5, min_sep=b, strategy=_TWO_BANDS)
    for eps in (0.5, 1.5):
        cert = float(run.delta(eps))
        (rem, se), (add, se_a) = dp.min_separation_delta_mc(
            0.8, 0.5, n, eps, min_sep=b, strategy=_TWO_BANDS, warm_start=warm,
            samples=100_000, rng=rng)
        assert rem - 5 * se <= cert
        assert add - 5 * se_a <= cert


def test_the_check_rejects_the_column_norm_without_the_sampler():
    # one step at the column norm (no composition over the n steps) is below the truth:
    # the same Monte Carlo check must say so
    rng = np.random.default_rng(9)
    one = float(bandmf_min_sep(0.8, 1, sample_rate=0.5, min_sep=2, strategy=[1.0]).delta(1.5))
    (rem, se), _ = dp.min_separation_delta_mc(0.8, 0.5, 8, 1.5, min_sep=2,
                                              strategy=_TWO_BANDS, samples=100_000, rng=rng)
    assert rem - 5 * se > one


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="non-negative"):
        strategy_norm_squared_upper([1.0, -0.5], 4)
    with pytest.raises(ValueError, match="iterations"):
        strategy_norm_squared_upper([1.0], 0)
    with pytest.raises(ValueError, match="min_sep"):
        bandmf_min_sep(1.0, 8, sample_rate=0.1, min_sep=0, strategy=[1.0])
    with pytest.raises(ValueError, match="noise_multiplier"):
        bandmf_min_sep(0.0, 8, sample_rate=0.1, min_sep=2, strategy=[1.0])
