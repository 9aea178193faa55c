"""Tests of mechanisms/algorithms/bandmf_balls_in_bins_core.py: Theorem 1's machinery.

Independent values: the Gram matrix from the modes built step by step; the eigenvalue
bounds against ``numpy.linalg.eigvalsh`` (above it, and within 1e-9).  The bound
itself is tested in tests/test_bandmf_balls_in_bins.py.
"""

from __future__ import annotations

import numpy as np

from dpacct.mechanisms.algorithms.bandmf_balls_in_bins_core import (
    _lambda_max_upper,
    _perron_upper,
    balls_in_bins_gram,
)


def _modes(c: np.ndarray, k: int) -> np.ndarray:
    """The modes ``C x_s`` built from the sampler's participation vectors, one by one."""
    n = c.shape[0]
    out = np.zeros((n, k))
    for s in range(k):
        x = np.zeros(n)
        x[s::k] = 1.0
        out[:, s] = c @ x
    return out


def _toeplitz(col, n: int) -> np.ndarray:
    c = np.zeros((n, n))
    for i in range(n):
        for lag, v in enumerate(col):
            if i + lag < n:
                c[i + lag, i] = v
    return c


def test_gram_matches_modes_built_step_by_step():
    rng = np.random.default_rng(7)
    c = np.tril(rng.uniform(0, 1, size=(7, 7)))
    m = _modes(c, 3)
    np.testing.assert_allclose(balls_in_bins_gram(c, 7, 3), m.T @ m, rtol=1e-13, atol=0)
    col = [1.0, 0.5, 0.25]
    m = _modes(_toeplitz(col, 9), 4)
    np.testing.assert_allclose(balls_in_bins_gram(col, 9, 4), m.T @ m, rtol=1e-13, atol=0)


def test_eigenvalue_bounds_are_above_and_close():
    rng = np.random.default_rng(1)
    for _ in range(5):
        a = rng.uniform(0, 1, size=(6, 6))
        g = a @ a.T
        lam = np.linalg.eigvalsh(g)[-1]
        assert lam <= _perron_upper(g, 12) <= lam * (1 + 1e-9)
        h = g - 0.3  # not non-negative any more
        mu = np.linalg.eigvalsh(h)[-1]
        assert mu <= _lambda_max_upper(h) <= mu + 1e-9 * np.abs(h).max()
