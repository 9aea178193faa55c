"""Lower convex hulls and decaying sums (``accountant/pld/pld_hull.py``) against brute force.

Independent references: Andrew's monotone chain, an O(n^2) vertex test on integer
points (exact in floating point), and the decaying sum written out as a direct
double sum.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpacct.accountant.pld.pld_hull import (
    _decaying_rows,
    _decaying_sum,
    _lower_hull,
    _lower_hull_chain,
    _lower_hull_to_min,
)


@pytest.mark.parametrize("seed", range(6))
def test_strided_lower_hull_matches_the_monotone_chain(seed):
    from dpacct.accountant.pld.pld_hull import _lower_hull, _lower_hull_chain

    rng = np.random.default_rng(seed)
    n = [3, 7, 60, 1000, 20000, 20000][seed]
    x = np.sort(rng.random(n)) + np.arange(n) * 1e-9
    y = (x - 0.5) ** 2 + rng.random(n) * [0.0, 1e-3, 1.0][seed % 3]
    # deep dips (nodes lowered by a chord gap) and a flat run of zeros at the end
    y = y - (rng.random(n) < 0.01) * rng.random(n) * 0.5
    if seed % 2:
        y = np.where(x > 0.7, 0.0, y)
    hull, chain = _lower_hull(x, y), _lower_hull_chain(x, y)
    # the chain drops collinear points, the passes keep them: the same polyline
    assert set(chain.tolist()) <= set(hull.tolist())
    np.testing.assert_allclose(
        np.interp(x, x[hull], y[hull]), np.interp(x, x[chain], y[chain]), rtol=0, atol=1e-12
    )
    assert np.all(y >= np.interp(x, x[hull], y[hull]) - 1e-12)


def test_segmented_hull_is_the_hull_of_every_set():
    rng = np.random.default_rng(7)
    xs, ys, segs = [], [], []
    for s in range(40):
        k = int(rng.integers(1, 300))
        x = np.sort(rng.uniform(0, 10, k))
        y = x**2 - 5 * x + rng.normal(0, 2, k) * (s % 3)
        xs.append(x), ys.append(y), segs.append(np.full(k, s))
    x, y, seg = np.concatenate(xs), np.concatenate(ys), np.concatenate(segs)
    got = _lower_hull(x, y, seg)
    offset = 0
    for s, (xi, yi) in enumerate(zip(xs, ys, strict=True)):
        # against Andrew's monotone chain, set by set (an independent algorithm; it
        # drops collinear points the passes keep: the same polyline)
        hull = got[seg[got] == s] - offset
        chain = _lower_hull_chain(xi, yi)
        assert set(chain.tolist()) <= set(hull.tolist())
        np.testing.assert_allclose(
            np.interp(xi, xi[hull], yi[hull]), np.interp(xi, xi[chain], yi[chain]), atol=1e-12
        )
        offset += xi.size


def _brute_hull(x: np.ndarray, y: np.ndarray) -> set[int]:
    """O(n^2) lower-hull test: point ``i`` is on the lower hull (a vertex or on an
    edge) iff it is the first or last point or no chord of a point to its left and
    one to its right passes strictly below it, i.e. ``max_{a<i} slope(a, i) <=
    min_{c>i} slope(i, c)``, compared by cross-multiplication (exact for the small
    integers used here)."""
    n = x.size
    out = {0, n - 1}
    for i in range(1, n - 1):
        ok = True
        for a in range(i):
            for c in range(i + 1, n):
                # i strictly above the chord a-c
                if (y[i] - y[a]) * (x[c] - x[a]) > (y[c] - y[a]) * (x[i] - x[a]):
                    ok = False
                    break
            if not ok:
                break
        if ok:
            out.add(i)
    return out


def _brute_hull_slopes(x: np.ndarray, y: np.ndarray) -> set[int]:
    """The same set by the O(n^2) slope criterion (an independent formulation)."""
    n = x.size
    out = {0, n - 1}
    for i in range(1, n - 1):
        left = max(range(i), key=lambda a: (y[i] - y[a]) / (x[i] - x[a]))
        right = min(range(i + 1, n), key=lambda c: (y[c] - y[i]) / (x[c] - x[i]))
        # slope(left, i) <= slope(i, right), cross-multiplied (denominators > 0)
        if (y[i] - y[left]) * (x[right] - x[i]) <= (y[right] - y[i]) * (x[i] - x[left]):
            out.add(i)
    return out


@pytest.mark.parametrize("seed", range(8))
def test_lower_hull_is_the_brute_force_hull_on_integer_points(seed):
    # integer coordinates below 2^20: every cross product is exact in floating point,
    # so the hull (collinear points included) is one exact set
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 70))
    x = np.sort(rng.choice(4 * n, size=n, replace=False)).astype(float)
    shape = [(x - 2 * n) ** 2 // max(n // 4, 1), np.zeros(n), 3 * x][seed % 3]
    y = shape + rng.integers(0, [1, 5, 40][seed % 3] + 1, n)
    want = _brute_hull(x, y)
    assert want == _brute_hull_slopes(x, y)
    got = _lower_hull(x, y)
    assert set(got.tolist()) == want
    assert np.all(np.diff(got) > 0)
    # the monotone chain keeps the vertices only (collinear points dropped)
    assert set(_lower_hull_chain(x, y).tolist()) <= want


@pytest.mark.parametrize("seed", range(12))
def test_hull_to_the_first_minimum_is_the_brute_force_hull_cut_there(seed):
    # integer points (exact cross products): a falling, roughly convex run with dips
    # (nodes lowered by a chord gap), bumps, a concave run into a low last point (the
    # tangent into the minimum), ties at the minimum and a rise after it; the hull up
    # to the first minimum is the O(n^2) brute-force hull of *all* points cut there
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(3, 60))
    x = np.sort(rng.choice(4 * n, size=n, replace=False)).astype(float)
    y = (x - 3 * n) ** 2 // max(n // 3, 1) + rng.integers(0, [1, 6, 60][seed % 3] + 1, n)
    y = y - (rng.random(n) < 0.15) * rng.integers(0, 30, n)
    if seed % 4 == 1:
        y[int(rng.integers(0, n)) :] = y.min()  # a flat run at the minimum
    if seed % 4 == 2:
        y[-1] = y.min() - 50  # a low last point below a concave run
    if seed % 4 == 3:
        y[0] = y.max() + 500  # a high first point (the point t = 0)
    k = int(np.argmin(y))
    want = sorted(i for i in _brute_hull(x, y) if i <= k)
    got = _lower_hull_to_min(x, y)
    assert got.tolist() == want
    two = np.array([0.0, 1.0])
    assert _lower_hull_to_min(two, np.array([3.0, 1.0])).tolist() == [0, 1]
    assert _lower_hull_to_min(two, np.array([3.0, 5.0])).tolist() == [0]
    # equal abscissae (tiny grid steps): the passes, cut at the first minimum
    flat_x = np.array([0.0, 1.0, 1.0, 1.0, 2.0, 3.0])
    flat_y = np.array([9.0, 4.0, 3.0, 5.0, 1.0, 2.0])
    hull = _lower_hull(flat_x, flat_y)
    want = hull[: int(np.argmin(flat_y[hull])) + 1].tolist()
    assert _lower_hull_to_min(flat_x, flat_y).tolist() == want


def test_lower_hull_of_few_points_keeps_them():
    x = np.array([0.0, 1.0])
    assert _lower_hull(x, np.array([3.0, -1.0])).tolist() == [0, 1]
    x3 = np.array([0.0, 1.0, 2.0])
    assert _lower_hull(x3, np.array([0.0, 5.0, 0.0])).tolist() == [0, 2]
    assert _lower_hull(x3, np.array([0.0, -5.0, 0.0])).tolist() == [0, 1, 2]


@pytest.mark.parametrize("rate", [1e-3, 0.37, 5.0, 600.0])
def test_decaying_sum_is_the_direct_double_sum(rate):
    rng = np.random.default_rng(int(rate * 1000))
    x = rng.random(300) ** 4
    i = np.arange(x.size)
    # y_j = sum_{i >= j} x_i e^{-rate (i - j)}, as an explicit (upper-triangular) sum
    expo = np.where(i[None, :] >= i[:, None], -rate * (i[None, :] - i[:, None]), -np.inf)
    want = (x[None, :] * np.exp(expo)).sum(axis=1)
    got = _decaying_sum(x, rate)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    np.testing.assert_allclose(_decaying_rows(np.vstack([x, x[::-1]]), rate)[0], want, rtol=1e-12)


def test_decaying_sum_keeps_relative_precision_over_many_blocks():
    # rate 2 over 1000 entries: blocks of 250; x falls from 1 to 1e-40, so every
    # term that matters is far above underflow.  y_j = x_j sum_{k <= 999 - j} e^{-2.01 k}
    # in closed form (a finite geometric sum)
    j = np.arange(1000.0)
    x = np.exp(-0.01 * 9.2 * j)
    rate = 2.0
    ratio = np.exp(-(rate + 0.092))
    want = x * -np.expm1((1000 - j) * np.log(ratio)) / (1 - ratio)
    np.testing.assert_allclose(_decaying_sum(x, rate), want, rtol=1e-12)


@pytest.mark.xfail(
    strict=True,
    reason="products x_i e^{-rate k} underflow inside a block when x itself is tiny "
    "(below about 1e-106 here): the docstring's 'full relative precision' holds only "
    "for entries well above the underflow range",
)
def test_decaying_sum_relative_precision_of_tiny_entries():
    x = np.exp(-0.5 * np.arange(1000.0))  # down to e^-500
    got = _decaying_sum(x, 2.0)
    want = x * -np.expm1((1000 - np.arange(1000.0)) * -2.5) / (1 - np.exp(-2.5))
    ok = want > 1e-290
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-12)


def test_decaying_sum_with_a_rate_below_the_unit_roundoff_is_the_suffix_sum():
    # e^{-2^-60} rounds to 1: the sum must be taken with the rate, not its exponential
    x = np.arange(1.0, 11.0)
    got = _decaying_sum(x, 2.0**-60)
    np.testing.assert_allclose(got, np.cumsum(x[::-1])[::-1], rtol=1e-15)
    assert _decaying_sum(np.zeros(0), 1.0).size == 0


def test_decaying_rows_match_row_by_row():
    rng = np.random.default_rng(5)
    x = rng.random((7, 1200)) ** 3
    for rate in (0.01, 1.3):
        got = _decaying_rows(x, rate)
        for r in range(x.shape[0]):
            np.testing.assert_allclose(got[r], _decaying_sum(x[r], rate), rtol=1e-13)


def test_decay_weights_are_the_fresh_exps_bit_for_bit_and_the_memo_is_bounded():
    # issue 37: the weights e^{-rate k} are kept per rate and read as prefixes; every
    # entry must be the exp a fresh computation gives, whatever the order of lengths
    from dpacct.accountant.pld import pld_hull

    rng = np.random.default_rng(11)
    for rate in (2.0**-10, 0.37, 2.0**-10):
        for n in (700, 300, 1300, 1):  # one block each (500 / rate entries or more)
            x = rng.random(n) ** 4
            k = np.arange(n)
            w = np.exp(-rate * k)
            want = np.cumsum((x * w)[::-1])[::-1] / w  # one block: the direct formula
            assert np.array_equal(_decaying_sum(x, rate), want)
            assert np.array_equal(pld_hull._decay_weights(rate, n), w)
    assert not pld_hull._decay_weights(0.37, 5).flags.writeable
    for rate in np.linspace(0.1, 0.2, 3 * pld_hull._WEIGHT_RATES):
        pld_hull._decay_weights(float(rate), 10)
    assert len(pld_hull._WEIGHTS) <= pld_hull._WEIGHT_RATES
