"""Tests for ``dpacct.mechanisms.algorithms.quantile_readout``: binning, reading quantiles off
(noisy) counts, and the isotonic fit of a noisy CDF -- against values by hand and the
min-max formula of isotonic regression."""

from __future__ import annotations

import numpy as np
import pytest

from dpacct.mechanisms.algorithms.quantiles import (
    bin_counts,
    isotonic_counts,
    quantiles_from_counts,
)


# ----------------------------------------------------------------------------------
# binning and reading quantiles off counts
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


# ----------------------------------------------------------------------------------
# read-out: isotonic fit of the noisy CDF, against independent values
# ----------------------------------------------------------------------------------
def isotonic_minmax(y):
    """Isotonic regression by its min-max formula (Barlow et al. 1972, Theorem 1.4.4):
    ``iso(y)_i = max_{s <= i} min_{t >= i} mean(y[s..t])``, brute force."""
    n = len(y)
    return np.array(
        [
            max(min(np.mean(y[s : t + 1]) for t in range(i, n)) for s in range(i + 1))
            for i in range(n)
        ]
    )


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


def test_quantiles_never_leave_the_range_by_rounding():
    # -1 + 287 * (3 / 287) rounds to 2.0000000000000004 in floating point
    assert -1.0 + 287 * (3.0 / 287) > 2.0
    q = quantiles_from_counts(np.ones(287), [0.0, 1.0], -1.0, 2.0)
    assert q.tolist() == [-1.0, 2.0]
