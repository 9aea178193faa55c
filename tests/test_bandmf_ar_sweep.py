"""Tests of :mod:`dpacct.mechanisms.algorithms.bandmf_ar_sweep` against a brute-force
transfer: every state moved one at a time in Python floats (bisect on the grid, the
two-point mean-preserving split), independent of the vectorised rounding."""

from __future__ import annotations

import bisect
import math

import numpy as np
import pytest

from dpacct.mechanisms.algorithms.bandmf_ar_sweep import apply_term, term_cells


def _grid(theta: float, rho: float, size: int) -> np.ndarray:
    g = np.empty(size)
    g[0] = 0.0
    g[1:] = theta * np.exp(rho * np.arange(size - 1))
    return g


def _brute(g_in, g_out, d, cols, wg, wx, ex, big_c, half_s, t, fac, up):
    """Output masses on every cell of ``g_out``: each state ``(i, x, c)`` moved alone."""
    out = np.zeros((wg.size, g_out.size))
    top = float(g_out[-1])
    for i in range(wg.size):
        term_i = math.exp(big_c * float(wg[i]) - half_s)
        for x in range(ex.size):
            term = term_i * float(ex[x]) / t * fac
            for c in range(cols[0], cols[1]):
                m = float(d[i, c - cols[0]]) * float(wx[x])
                if m == 0.0:
                    continue
                y = float(g_in[c]) + term
                y = math.nextafter(y, math.inf) if up else max(math.nextafter(y, -math.inf), 0.0)
                if y >= top:
                    out[i, -1] += m  # the absorbing top (add direction)
                    continue
                j = bisect.bisect_right(g_out.tolist(), y) - 1
                p = (y - g_out[j]) / (g_out[j + 1] - g_out[j])
                out[i, j] += m * (1.0 - p)
                out[i, j + 1] += m * p
    return out


def _case(seed: int, up: bool):
    rng = np.random.default_rng(seed)
    g_in = _grid(1e-3, 0.05, 120)
    g_out = _grid(1e-3, 0.04, 200 if up else 90)
    wg = np.sort(rng.normal(size=4))
    ex = np.exp(rng.normal(scale=0.5, size=3))
    wx = rng.random(3)
    wx /= wx.sum()
    cols = (10, 70)
    d = rng.random((4, cols[1] - cols[0]))
    d[1] = 0.0  # a dead row: skipped by apply_term, zero in the brute force
    return g_in, g_out, d, cols, wg, wx, ex


@pytest.mark.parametrize("up", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_term_matches_brute_force(seed, up):
    g_in, g_out, d, cols, wg, wx, ex = _case(seed, up)
    big_c, half_s, t, fac = 0.7, 0.3, 5, 1.0 if up else 3.0
    cells = term_cells(g_in, cols, g_out, wg, ex, big_c, half_s, t, fac, up)
    assert cells is not None
    new, off = apply_term(cells, d, cols, wx, g_out.size)
    got = np.zeros((wg.size, g_out.size))
    got[:, off : off + new.shape[1]] = new
    want = _brute(g_in, g_out, d, cols, wg, wx, ex, big_c, half_s, t, fac, up)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    # mass kept row by row
    np.testing.assert_allclose(got.sum(axis=1), d.sum(axis=1) * wx.sum(), rtol=1e-12)


def test_remove_direction_declines_at_the_grid_top():
    g_in, g_out, _d, cols, wg, _wx, ex = _case(0, True)
    # a term pushing sums past the last node: the caller's own transfer decides
    assert term_cells(g_in, cols, g_out, wg, ex, 0.7, 0.3, 5, 1e9, True) is None


def test_remove_rounding_is_mean_preserving_upwards():
    g_in, g_out, d, cols, wg, wx, ex = _case(3, True)
    cells = term_cells(g_in, cols, g_out, wg, ex, 0.7, 0.3, 5, 1.0, True)
    new, off = apply_term(cells, d, cols, wx, g_out.size)
    nodes = g_out[off : off + new.shape[1]]
    mean_out = new @ nodes
    terms = np.exp(0.7 * wg - 0.3)[:, None] * ex[None, :] / 5
    exact = (d @ g_in[cols[0] : cols[1]]) * wx.sum() + d.sum(axis=1) * (terms @ wx)
    # every state is rounded up by an ulp and split without bias: the mean never drops
    assert np.all(mean_out >= exact * (1 - 1e-13))
    np.testing.assert_allclose(mean_out, exact, rtol=1e-9)
