"""The audit's binomial law (session 25, issue 37): scipy's ufuncs called directly give
``scipy.stats.binom``'s values bit for bit, so ``steinke_p_value`` is unchanged."""

from __future__ import annotations

import numpy as np
from scipy import stats

from dpacct.mechanisms.audit_one_run import _binomial, steinke_p_value


def test_binomial_ufuncs_equal_scipy_stats_bit_for_bit():
    sf, pmf = _binomial()
    rng = np.random.default_rng(37_25)
    for _ in range(60):
        n = int(rng.integers(1, 5000))
        p = float(rng.choice([0.0, 1.0, 0.5, rng.uniform(), 1.0 - 1e-12 * rng.uniform()]))
        k = rng.integers(0, n, 20)
        for kk in k.tolist():
            assert float(sf(float(kk), float(n), p)) == float(stats.binom.sf(kk, n, p))
        ks = np.arange(min(n, 300), -1, -1)
        assert np.array_equal(pmf(ks.astype(float), float(n), p), stats.binom.pmf(ks, n, p))


def test_steinke_p_value_against_its_definition():
    # Theorem 3.1 of Steinke, Nasr & Jagielski 2023 evaluated through scipy.stats
    m, r, v, eps, delta = 1000, 200, 140, 0.6, 1e-6
    q = np.exp(eps) / (1 + np.exp(eps))
    tail = stats.binom.sf(v - 1, r, q)
    part = np.cumsum(stats.binom.pmf(np.arange(v - 1, -1, -1), r, q)) / np.arange(1, v + 1)
    want = min(tail + 2 * m * delta * part.max(), 1.0)
    assert steinke_p_value(m, r, v, eps, delta) == want
