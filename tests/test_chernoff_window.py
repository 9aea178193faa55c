"""The Chernoff window of a circular convolution (``accountant/pld/chernoff_window.py``).

Independent references: exact log-MGFs in mpmath (30 digits) and by ``logsumexp``; the
exact composed PMF by repeated ``numpy.convolve`` for the mass outside a window; the
weight tables against ``numpy.exp`` of their formulas.  (These tests lived in
``tests/test_pld_fft.py`` until the functions moved out of ``pld_fft``, issue 37.)
"""

from __future__ import annotations

import numpy as np
import pytest

from dpacct.accountant.pld import chernoff_window, pld_fft


def _pmf(rng: np.random.Generator, n: int, power: float = 3.0) -> np.ndarray:
    p = rng.random(n) ** power
    return p / p.sum()


def test_pld_fft_re_exports_the_same_functions():
    names = ("_ORDERS", "_alias", "_cell_lambdas", "_window", "_neg_weights",
             "_chernoff_weights", "_clear_weights", "_dense", "NEG_WEIGHTS_CACHED")
    for name in names:
        assert getattr(pld_fft, name) is getattr(chernoff_window, name)


def test_chernoff_window_bounds_the_mass_outside_it():
    # cells on a shared grid (with offsets); the exact composed PMF by numpy.convolve
    mpmath = pytest.importorskip("mpmath")
    step = 0.01
    rng = np.random.default_rng(6)
    pmfs = [_pmf(rng, 80, 4.0), _pmf(rng, 150, 2.0), _pmf(rng, 30)]
    firsts = np.array([-20, 5, -60])
    counts = np.array([6, 4, 9])
    lam_c_pos, lam_c_neg = chernoff_window._cell_lambdas(step, firsts, pmfs)
    # each cell's bound is above its exact log-MGF (mpmath, 30 digits) and close to it
    mpmath.mp.dps = 30
    for c, (p, f) in enumerate(zip(pmfs, firsts, strict=True)):
        for i, t in enumerate(chernoff_window._ORDERS):
            for sign, lam in ((1, lam_c_pos), (-1, lam_c_neg)):
                exact = mpmath.log(
                    mpmath.fsum(
                        mpmath.mpf(float(pj)) * mpmath.exp(sign * t * (int(f) + j) * step)
                        for j, pj in enumerate(p)
                    )
                )
                assert float(exact) <= lam[c, i] <= float(exact) + 1e-9 * (1 + abs(float(exact)))
    lam_pos, lam_neg = counts @ lam_c_pos, counts @ lam_c_neg
    total = np.array([1.0])
    for p, k in zip(pmfs, counts, strict=True):
        for _ in range(k):
            total = np.convolve(total, p)
    origin = int(counts @ firsts)
    index = origin + np.arange(total.size)
    for budget in (1e-3, 1e-8, 1e-14):
        a_idx, n = chernoff_window._window(step, lam_pos, lam_neg, budget)
        outside = float(total[(index < a_idx) | (index >= a_idx + n)].sum())
        bound = chernoff_window._alias(step, lam_pos, lam_neg, a_idx, n)
        assert outside <= bound <= 2.5 * budget
    # a window cut deliberately too short: the bound still covers what is outside
    mid = origin + total.size // 2
    for a_idx, n in [(mid - 50, 100), (mid - 200, 300), (origin + 10, total.size - 30)]:
        outside = float(total[(index < a_idx) | (index >= a_idx + n)].sum())
        assert 0 < outside <= chernoff_window._alias(step, lam_pos, lam_neg, a_idx, n)


def test_cell_lambdas_stay_upper_bounds_when_a_short_row_underflows():
    # a short cell beside a very long one: its weights (scaled by the long row's end)
    # underflow at large orders; the bound must still be above the exact log-MGF
    from scipy.special import logsumexp

    from dpacct.accountant.pld.chernoff_window import _ORDERS, _cell_lambdas

    step = 1e-3
    short, long_ = np.full(3, 1 / 3), np.full(200_000, 1 / 200_000)
    firsts = np.array([5_000, 0])
    lam_pos, lam_neg = _cell_lambdas(step, firsts, [short, long_])
    for row, (pmf, first) in enumerate(zip([short, long_], firsts, strict=True)):
        losses = (first + np.arange(pmf.size)) * step
        for k, t in enumerate(_ORDERS):
            assert lam_pos[row, k] >= logsumexp(t * losses, b=pmf) - 1e-12
            assert lam_neg[row, k] >= logsumexp(-t * losses, b=pmf) - 1e-12


@pytest.mark.parametrize("width, step", [(9216, 2.0**-11), (1024, 2.0**-30), (3000, 0.5),
                                         (2048, 0.0013)])
def test_chernoff_weights_are_the_exponentials_of_their_formulas_bit_for_bit(width, step):
    """``w_pos`` is ``w_neg`` reversed on a power-of-two step (issue 37: half the
    exponentials of a cold spectral power): both tables are still exactly
    ``exp((l_j - l_last) t)`` and ``exp(-l_j t)``, computed here directly; another step
    computes ``w_pos`` itself."""
    j = np.arange(width) * step
    w_pos, w_neg = chernoff_window._chernoff_weights.__wrapped__(width, step)
    assert np.array_equal(w_pos, np.exp(np.outer(j - j[-1], chernoff_window._ORDERS)))
    assert np.array_equal(w_neg, np.exp(-np.outer(j, chernoff_window._ORDERS)))
    assert w_pos.flags.c_contiguous and w_pos.shape == (width, chernoff_window._ORDERS.size)


def test_weight_tables_grown_from_other_steps_are_the_tables_bit_for_bit():
    """``WeightTables`` copies rows from the tables already made (its own first rows, a
    ``2^k`` finer step's every ``2^k``-th row, the doubled step's even rows) and
    exponentiates the rest: every entry must be the float ``_neg_weights_table`` makes
    (compared bit for bit, so a row taken from the wrong place or a sign of zero shows),
    whatever the order of the requests (the online loop's, then shuffled ones)."""
    from dpacct.accountant.pld.groups import BLOCK_ORDERS, _more_weights_table

    loop = [(4096, 0.000125), (1024, 0.001), (16384, 3.125e-05), (512, 0.001),
            (2048, 0.001), (4096, 0.00025), (2048, 0.0005), (8192, 0.000125),
            (16384, 6.25e-05), (32768, 3.125e-05), (16384, 0.000125), (4096, 0.0005),
            (8192, 0.00025), (4096, 0.001), (32768, 6.25e-05), (8192, 0.001)]
    rng = np.random.default_rng(34)
    steps = [1e-3 / 2.0**i for i in range(7)] + [0.0013, 0.00065, 2.0**-11]
    shuffled = [(int(rng.integers(1, 9000)), float(rng.choice(steps))) for _ in range(120)]
    k = chernoff_window._ORDERS.size
    for orders, table in ((chernoff_window._ORDERS, chernoff_window._neg_weights_table),
                          (BLOCK_ORDERS[k:], _more_weights_table)):
        for maxsize, requests in ((8, loop), (3, shuffled)):
            tables = chernoff_window.WeightTables(orders, maxsize)
            for width, step in requests:
                got = tables(width, step)
                want = table(width, step)
                assert got.shape == want.shape and got.flags.c_contiguous
                assert np.array_equal(got.view(np.int64), want.view(np.int64)), (width, step)
            info = tables.cache_info()
            assert info.misses >= 1 and info.currsize <= maxsize
            tables.cache_clear()
            assert tables.cache_info().currsize == 0
