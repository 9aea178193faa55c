"""Tests for ``dpacct.mechanisms.algorithms.quantile_exponential``: the exponential-mechanism
quantile (Smith 2011) over the intervals between data points.

Independent references: the explicit composition for the privacy (the bounded-range
exponential mechanism, delta(0) = tanh(epsilon0 / 4)); exact interval probabilities
computed by a plain (non-log-space) formula; ``np.quantile`` for the accuracy checks.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_quantiles import GEN, same_privacy

from dpacct.accountant import compose
from dpacct.mechanisms.algorithms.quantiles import ExponentialQuantile, smith_quantile
from dpacct.mechanisms.primitives.exponential import ExponentialMechanism
from dpacct.mechanisms.primitives.generic import PureDPMechanism


def test_exponential_quantile_privacy():
    alg = ExponentialQuantile(epsilon0=0.7, lower=0.0, upper=1.0)
    same_privacy(alg, compose([ExponentialMechanism(epsilon=0.7)]))
    # the bounded-range accounting is tighter than generic pure DP ...
    pure = compose([PureDPMechanism(epsilon=0.7)])
    assert alg.epsilon(1e-6) < pure.epsilon(1e-6)
    assert alg.delta(0.0) < pure.delta(0.0)
    # ... and never claims better than the BR class allows: eps(delta) at most 0.7
    assert alg.epsilon(1e-6) <= 0.7 + 1e-12


def test_exponential_quantile_out_of_range():
    x = np.concatenate([np.random.default_rng(0).uniform(size=100), [5.0]])
    alg = ExponentialQuantile(epsilon0=1.0, lower=0.0, upper=1.0)
    with pytest.raises(ValueError, match="declared range"):
        alg.quantile(x, 0.5, rng=np.random.default_rng(1))
    clip = ExponentialQuantile(epsilon0=1.0, lower=0.0, upper=1.0, out_of_range="clip")
    assert clip.quantile(x, 0.5, rng=np.random.default_rng(1)) == alg.quantile(
        np.clip(x, 0, 1), 0.5, rng=np.random.default_rng(1)
    )


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
    alg = ExponentialQuantile(
        epsilon0=1.0, lower=-10.0, upper=10.0, candidates=candidates, grid_size=2001
    )
    errs, trivial = [], []
    for s in range(20):
        rng = np.random.default_rng(100 + s)
        x = rng.normal(3.0, 1.0, size=2001)
        med = alg.quantile(x, 0.5, rng=rng)
        errs.append(abs(med - np.median(x)))
        trivial.append(abs(0.0 - np.median(x)))  # midpoint of the declared range
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
            errs[eps] = np.mean(
                [abs(alg.quantile(x, q, rng=rng) - np.quantile(x, q)) for _ in range(30)]
            )
        assert errs[2.0] < 0.05
        assert errs[0.05] > 3 * errs[2.0]


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
    from dpacct.mechanisms.algorithms.quantiles import ExponentialQuantile

    alg = ExponentialQuantile(epsilon0=1.0, lower=0.0, upper=1.0)
    assert alg.delta(0.0) == pytest.approx(math.tanh(0.25), rel=1e-12)
