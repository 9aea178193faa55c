"""The rounding grid of DP-SGD schedules (``accountant/pld/schedule_grid.py``).

Cells are the points ``(1 + g)^k``; rounding a step up (for an upper bound) takes the
largest cell sigma at or below sigma and the smallest cell q at or above q (capped at
1), rounding down the reverse.  The expected cells are computed here by mpmath at 50
digits from that formula, independently of the module's floating-point snapping.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpacct.accountant.pld.schedule_grid import DEFAULT_GRID, _cell_value, _check_grid, _round


def _node(k: int, grid: float) -> float:
    """Cell value number ``k``: the documented formula ``exp(k * log1p(grid))``."""
    return math.exp(k * math.log1p(grid))


def _expected(sigma: float, q: float, grid: float, upper: bool) -> tuple[float, float]:
    """The cell by search: the node index is located with mpmath (50 digits), then the
    nearest nodes are scanned for the largest one at or below (smallest at or above)
    the value, in floating point as the grid is defined.  A value within 1e-12
    (relative) of a node is a node and keeps its own value."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    lw = mpmath.log1p(mpmath.mpf(grid))

    def below(v: float) -> float:
        k0 = int(mpmath.floor(mpmath.log(mpmath.mpf(v)) / lw))
        nodes = [_node(k, grid) for k in range(k0 - 2, k0 + 3)]
        if any(math.isclose(c, v, rel_tol=1e-12, abs_tol=0.0) for c in nodes):
            return v
        return max(c for c in nodes if c <= v)

    def above(v: float) -> float:
        k0 = int(mpmath.floor(mpmath.log(mpmath.mpf(v)) / lw))
        nodes = [_node(k, grid) for k in range(k0 - 2, k0 + 3)]
        if any(math.isclose(c, v, rel_tol=1e-12, abs_tol=0.0) for c in nodes):
            return v
        return min(c for c in nodes if c >= v)

    if upper:  # smaller sigma, larger q (capped at 1): a dominating cell
        return below(sigma), min(above(q), 1.0)
    return above(sigma), below(q)


@pytest.mark.parametrize("grid", [DEFAULT_GRID, 2.0**-7, 0.01, 0.3])
@pytest.mark.parametrize("upper", [True, False])
def test_rounding_is_the_documented_cell(grid, upper):
    rng = np.random.default_rng(int(grid * 1e6) + upper)
    sigmas = np.exp(rng.uniform(np.log(0.05), np.log(200.0), 300))
    qs = np.exp(rng.uniform(np.log(1e-6), 0.0, 300))
    w = math.log1p(grid)
    for sigma, q in zip(sigmas.tolist(), qs.tolist(), strict=True):
        got = _round(sigma, q, w, upper)
        assert got == _expected(sigma, q, grid, upper)
        s_cell, q_cell = got
        if upper:  # rounds up: less noise, more sampling; within one cell
            assert s_cell <= sigma and q <= q_cell <= 1.0
            assert sigma / s_cell < 1 + grid * (1 + 1e-12)
            assert q_cell == 1.0 or q_cell / q < 1 + grid * (1 + 1e-12)
        else:  # rounds down
            assert s_cell >= sigma and q_cell <= q
            assert s_cell / sigma < 1 + grid * (1 + 1e-12)
            assert q / q_cell < 1 + grid * (1 + 1e-12)


@pytest.mark.parametrize("upper", [True, False])
def test_nodes_stay_put_and_rounding_is_idempotent(upper):
    g = 2.0**-9
    w = math.log1p(g)
    for ks, kq in [(0, 0), (1, -1), (-300, -4000), (2500, -1), (17, -12345)]:
        sigma, q = _cell_value(ks, w), _cell_value(kq, w)
        assert sigma == _node(ks, g) and q == _node(kq, g)
        assert _round(sigma, q, w, upper) == (sigma, q)
    rng = np.random.default_rng(3)
    sigmas, qs = rng.uniform(0.3, 9, 100).tolist(), rng.uniform(1e-4, 1, 100).tolist()
    for sigma, q in zip(sigmas, qs, strict=True):
        once = _round(sigma, q, w, upper)
        assert _round(*once, w, upper) == once


def test_q_rounded_up_is_capped_at_one():
    w = math.log1p(0.01)
    assert _round(1.0, 0.999, w, True)[1] == 1.0  # the next node up is above 1
    assert _round(1.0, 1.0, w, True)[1] == 1.0
    assert _round(1.0, 1.0, w, False)[1] == 1.0  # 1 is the node k = 0
    assert _round(1.0, 0.999, w, False)[1] == _node(-1, 0.01)


@settings(max_examples=300, deadline=None)
@given(
    sigma=st.floats(1e-3, 1e4, allow_nan=False),
    q=st.floats(1e-9, 1.0, allow_nan=False),
    grid=st.floats(1e-6, 0.49),
)
def test_up_and_down_cells_bracket_the_step(sigma, q, grid):
    w = math.log1p(grid)
    su, qu = _round(sigma, q, w, True)
    sd, qd = _round(sigma, q, w, False)
    assert su <= sigma <= sd and qd <= q <= qu <= 1.0


@pytest.mark.parametrize("bad", [0.0, -0.1, 0.5, 0.7, 1.0, math.nan, math.inf])
def test_check_grid_rejects_values_outside_the_open_interval(bad):
    with pytest.raises(ValueError, match="grid"):
        _check_grid(bad)


def test_check_grid_accepts_and_returns_a_float():
    assert _check_grid(2**-10) == 2.0**-10
    assert _check_grid(np.float32(0.25)) == 0.25
    with pytest.raises(TypeError, match="grid"):
        _check_grid("0.1")


@settings(max_examples=200, deadline=None)
@given(st.floats(1e-3, 1e3), st.floats(1e-6, 1.0), st.booleans(), st.integers(-40, 40))
def test_round_halves_are_round_coordinatewise(sigma, q, upper, k):
    """``_round_sigma`` and ``_round_q`` are ``_round``'s two coordinates (the online
    ledger rounds only the one it does not keep exact), on and off the grid's nodes."""
    from dpacct.accountant.pld.schedule_grid import _round_q, _round_sigma

    w = math.log1p(DEFAULT_GRID)
    for s in (sigma, _cell_value(k, w)):
        for p in (q, min(_cell_value(-abs(k), w), 1.0)):
            assert (_round_sigma(s, w, upper), _round_q(p, w, upper)) == _round(s, p, w, upper)
