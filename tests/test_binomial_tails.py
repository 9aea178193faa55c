"""``accountant/binomial_tails.py``: scipy's binomial ufuncs with scipy.stats' edges, the
same doubles as ``scipy.stats.binom`` (the independent implementation is the oracle)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpacct.accountant.binomial_tails import binom_pmf, binom_sf

_N = st.sampled_from([0, 1, 2, 7, 100, 10_000, 10**7, 10**12])
_P = st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.5 + 1e-7, 1 - 1e-12, 1e-300]))


@settings(max_examples=300, deadline=None)
@given(n=_N, p=_P, data=st.data())
def test_sf_is_scipy_stats_bit_for_bit(n, p, data):
    ks = data.draw(st.lists(st.integers(-3, n + 3), min_size=1, max_size=8))
    k = np.array(ks, dtype=float)
    np.testing.assert_array_equal(binom_sf(k, n, p), stats.binom.sf(k, n, p))
    # scalars, and the thresholds the exact RR composition asks (-1 and n)
    for j in (-1.0, 0.0, float(n), float(n) / 2.0 + 0.5):
        assert binom_sf(j, n, p) == stats.binom.sf(j, n, p)


def test_sf_edges_and_bad_parameters():
    assert binom_sf(-np.inf, 4, 0.3) == 1.0 and binom_sf(np.inf, 4, 0.3) == 0.0
    for args in ((1.0, 4.5, 0.3), (1.0, 4, 1.5), (np.nan, 4, 0.3), (1.0, -1, 0.3)):
        assert np.isnan(binom_sf(*args)) and np.isnan(stats.binom.sf(*args))
    out = binom_sf(np.array([[0.0], [1.0]]), np.array([2, 3]), 0.5)
    np.testing.assert_array_equal(out, stats.binom.sf(np.array([[0.0], [1.0]]), [2, 3], 0.5))


@settings(max_examples=100, deadline=None)
@given(n=_N, p=_P, data=st.data())
def test_pmf_inside_the_support_is_scipy_stats(n, p, data):
    k = np.array(data.draw(st.lists(st.integers(0, n), min_size=1, max_size=8)), dtype=float)
    np.testing.assert_array_equal(binom_pmf(k, n, p), stats.binom.pmf(k, n, p))
