"""A group of cells composed on a fine grid and coarsened once (``pld.groups``).

Independent references: the closed-form hockey-stick curve of the Gaussian mechanism
(``k`` steps of sigma are one of ``sigma / sqrt(k)``; Balle & Wang 2018, Theorem 8) and
of one Poisson-subsampled Gaussian step (the loss is monotone in the output, so the
curve is a difference of normal tails at the threshold), both in ``mpmath``.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from oracles import gaussian_delta, subsampled_gaussian_delta
from scipy import special

from dpacct.accountant.pld import groups
from dpacct.accountant.pld.grid import GridPLD
from dpacct.accountant.pld.groups import compose_fine_group
from dpacct.accountant.pld.pld_fft import _ORDERS

mpmath.mp.dps = 40
STEP = 1e-3


def _group_pld(sigma, q, count, factor):
    seg = compose_fine_group(
        np.array([sigma]), np.array([q]), np.array([count]), STEP, factor, 1e-15, False, 1e-13
    )
    return GridPLD(STEP, seg.first, seg.pmf, min(-math.expm1(seg.log_fin) + seg.err, 1.0), True)


@pytest.mark.parametrize("factor", [1, 4, 16])
@pytest.mark.parametrize(("sigma", "count"), [(2.0, 1), (4.0, 50), (8.0, 400)])
def test_gaussian_steps_stay_above_the_closed_form(sigma, count, factor):
    pld = _group_pld(sigma, 1.0, count, factor)
    mu = math.sqrt(count) / sigma
    for eps in (-0.5, 0.0, 0.1, 0.5, 1.0, 2.0):
        exact = gaussian_delta(mu, eps)
        got = mpmath.mpf(float(pld.delta(eps))) * (1 + 1e-12)
        assert got >= exact
        # connect-the-dots is second order: the widening shrinks with the fine step
        assert got - exact <= 5e-2 * (count * (STEP / factor) ** 2 + STEP**2) + 1e-12


@pytest.mark.parametrize(("sigma", "q"), [(1.0, 0.01), (0.8, 0.1), (2.0, 0.3)])
def test_one_subsampled_step_stays_above_the_closed_form(sigma, q):
    pld = _group_pld(sigma, q, 1, 8)
    for eps in (0.0, 0.01, 0.05, 0.2, 1.0):
        exact = subsampled_gaussian_delta(q, sigma, eps, direction="remove")
        if exact < 1e-14:
            continue
        got = mpmath.mpf(float(pld.delta(eps))) * (1 + 1e-12)
        assert exact <= got <= exact + 1e-6


def test_the_fine_group_is_tighter_than_one_discretisation_per_step():
    eps = [_group_pld(1.0, 0.01, 2000, f).epsilon(1e-5) for f in (1, 2, 8)]
    assert eps[0] > eps[1] > eps[2]


def test_factor_must_be_a_power_of_two():
    with pytest.raises(ValueError, match="factor"):
        compose_fine_group(
            np.array([1.0]), np.array([0.1]), np.array([1]), STEP, 3, 1e-15, False, 1e-13
        )


def test_row_lambdas_bound_the_log_mgf_of_pmfs_of_very_different_lengths():
    # a short PMF beside one 60 loss units long: a table scaled by the long row's end
    # weights the short row's mass by e^{-t * 60}, which underflows for t >= 16
    rng = np.random.default_rng(0)
    step = 1e-3
    pmfs = [rng.uniform(0, 1, 50), rng.uniform(0, 1, 60_000) * np.exp(-np.arange(60_000) / 500)]
    pmfs = [p / p.sum() for p in pmfs]
    firsts = np.array([-20, -3000])
    lp, ln = groups._row_lambdas(step, firsts, pmfs)
    for i, p in enumerate(pmfs):
        losses = (firsts[i] + np.arange(p.size)) * step
        for k, t in enumerate(_ORDERS):
            exact_pos = special.logsumexp(t * losses, b=p)
            exact_neg = special.logsumexp(-t * losses, b=p)
            # upper bounds, and tight (the slack is a few ulps times the length)
            assert exact_pos <= lp[i, k] <= exact_pos + 1e-9 * (1 + abs(exact_pos))
            assert exact_neg <= ln[i, k] <= exact_neg + 1e-9 * (1 + abs(exact_neg))


def test_row_lambdas_of_a_long_pmf_hold_one_uncached_table_of_its_length():
    # the top of a 100 000-phase tree: PMFs hundreds of thousands of bins long.  One
    # weight table of the longest row (80 bytes a bin), not the two power-of-two tables
    # (and a temporary) of _chernoff_weights, and none of it kept after the call
    import tracemalloc

    from dpacct.accountant.pld import pld_fft

    n = 3 * pld_fft.NEG_WEIGHTS_CACHED + 1  # the old width: 4 x the cached limit
    pmf = np.exp(-(((np.arange(n) - n / 2) / (n / 8)) ** 2))
    pmf /= pmf.sum()
    pld_fft._neg_weights_cached.cache_clear()
    tracemalloc.start()
    try:
        lp, ln = groups._row_lambdas(STEP, np.array([-n // 2]), [pmf])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    table = n * _ORDERS.size * 8
    assert peak < 1.5 * table  # 15.7 MB; before: 65 MB (w_pos, w_neg at 2^18 rows)
    assert pld_fft._neg_weights_cached.cache_info().currsize == 0
    losses = (-n // 2 + np.arange(n)) * STEP
    for k, t in enumerate(_ORDERS):
        for sign, got in ((1, lp[0, k]), (-1, ln[0, k])):
            exact = special.logsumexp(sign * t * losses, b=pmf)
            assert exact <= got <= exact + 1e-9 * (1 + abs(exact))


def test_neg_weights_are_the_chernoff_tables_rows_bit_for_bit():
    from dpacct.accountant.pld import pld_fft

    for length in (1, 7, 1000, pld_fft.NEG_WEIGHTS_CACHED + 3):
        width = 1 << max(length - 1, 1).bit_length()
        want = pld_fft._chernoff_weights.__wrapped__(width, STEP)[1][:length]
        got = pld_fft._neg_weights(length, STEP)
        assert got.shape[0] >= length
        assert np.array_equal(got[:length], want)


def test_group_pmf_mass_stays_at_most_one():
    # a factor of mass above 1 (as a group PMF with its round-off may be): the group
    # PMF is scaled to mass at most 1 and the mass removed is inside its error
    step = 1e-2
    pmf = np.array([0.25, 0.5, 0.25 + 1e-9])
    seg = groups._compose_group(step, np.array([0]), [pmf], np.array([4.0]), 1e-12)
    first, out, err = seg.first, seg.pmf, seg.err
    exact = np.convolve(np.convolve(pmf, pmf), np.convolve(pmf, pmf))
    assert math.fsum(out) <= 1.0
    assert err >= math.fsum(exact) - 1.0 > 0
    lo, hi = min(first, 0), max(first + out.size, exact.size)
    got, want = np.zeros(hi - lo), np.zeros(hi - lo)
    got[first - lo : first - lo + out.size] = out
    want[-lo : -lo + exact.size] = exact
    assert np.sum(np.abs(got - want)) <= 2 * err


def test_spectrum_product_holds_at_most_two_block_sized_tables():
    # 64 PMFs on a 65 536-point window: blocks of 32 rows (2^21 entries).  The product
    # is the plain one, and the traced peak stays near a block and its spectrum (the
    # scatter-built block, the previous block and its spectrum kept alive while the
    # next were built: 83 MB here before)
    import tracemalloc

    from dpacct.accountant.pld import pld_fft

    rng = np.random.default_rng(1)
    n, length = 1 << 16, 30_000
    pmfs = [rng.uniform(0, 1, length) for _ in range(64)]
    pmfs = [p / p.sum() for p in pmfs]
    counts = np.array([1, 2] * 32, dtype=np.int64)
    tracemalloc.start()
    try:
        spec, mults = pld_fft._spectrum_product(pmfs, counts, n)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    block = 32 * n * 8
    assert peak < 2.6 * block
    want = np.ones(n // 2 + 1, dtype=complex)
    for p, k in zip(pmfs, counts, strict=True):
        want *= np.fft.rfft(p, n) ** int(k)
    assert np.allclose(spec, want, rtol=1e-9, atol=1e-12)
    assert mults >= 64


@pytest.mark.parametrize("m", [1000, 4097, 36_001, 46_000, 46_875, 47_000, 100_003, 262_145])
def test_quiet_len_holds_the_window_with_no_larger_roundoff_bound(m):
    """Issue 37: the group's transform length holds ``m`` points, stays within the
    slack of the fastest length, is 5-smooth (pocketfft's modelled passes), and its
    round-off bound ``rho(n) sqrt(n)`` is at most the fastest length's."""
    from scipy import fft as sp_fft

    from dpacct.accountant.pld.pld_fft import _fft_rel, _pass_model

    fast = sp_fft.next_fast_len(m, real=True)
    n = groups._quiet_len(m)
    assert m <= n <= groups.QUIET_SLACK * fast
    _pass_model(n)  # raises unless 5-smooth
    assert _fft_rel(n) * math.sqrt(n) <= _fft_rel(fast) * math.sqrt(fast)


def test_quiet_len_leaves_radix_five_lengths_for_radix_four_ones():
    # 46 875 = 3 5^6 (the fastest above 46 000 is 46 080 = 2^10 45): 49 152 = 3 2^14
    # carries a bound 0.73 times 46 875's (pocketfft's radix-5 passes err more)
    assert groups._quiet_len(46_875) == 49_152


def test_a_block_window_chosen_among_budgets_has_no_larger_error():
    """Issue 37: a ledger block (256 steps of 26 random cells on a fine grid) composed
    with its window chosen among three aliasing budgets (the largest 1e-12) carries an
    l1 error bound (aliasing + round-off) no larger than at the former budget alone
    (1e-12 * 2^-20), and the two PMFs agree within the two bounds."""
    from dpacct.accountant.pld.graded_cells import graded_cells

    rng = np.random.default_rng(37)
    sigma, q = rng.uniform(0.8, 2.0, 26), rng.uniform(0.001, 0.02, 26)
    counts = np.full(26, 10.0)
    counts[-1] = 6.0
    firsts, pmfs, _ = graded_cells(sigma, q, STEP, 4, 1e-15, False)
    fine = STEP / 4
    new = groups._compose_group(fine, firsts, pmfs, counts, 1e-12, 3)
    old = groups._compose_group(fine, firsts, pmfs, counts, 1e-12 * 2.0**-20, 1)
    assert new.err <= old.err
    lo = max(new.first, old.first)
    hi = min(new.first + new.pmf.size, old.first + old.pmf.size)
    a, b = new.pmf[lo - new.first : hi - new.first], old.pmf[lo - old.first : hi - old.first]
    outside = (new.pmf.sum() - a.sum()) + (old.pmf.sum() - b.sum())
    diff = np.abs(a - b)
    assert diff.sum() + outside <= new.err + old.err + 1e-15


def test_bounded_product_covers_the_forward_error_against_long_double():
    """Issue 37: the blocks' componentwise forward bound (``_bounded_product``).  The
    product of the computed transforms ``prod_c rfft(p_c)^{k_c}`` (taken in long
    double, so only the transforms' own errors remain) is within ``fwd`` in l2 over the
    full spectrum of the exact product, each DFT summed in 80-bit long double; nine
    cells (scipy's threaded rows), counts 1-60, a spiky cell and a point mass; and the
    bound is at least 4 times below the normwise one it replaces (8 here)."""
    if np.finfo(np.longdouble).nmant < 63:
        pytest.skip("needs an 80-bit long double")
    rng = np.random.default_rng(3700)
    n = 1200  # 2^4 3 5^2: every radix
    pmfs = []
    for i in range(9):
        width = int(rng.integers(30, 200))
        x = np.arange(width)
        p = np.exp(-0.5 * ((x - width / 2) / (width / 8)) ** 2) + 1e-4 * rng.random(width)
        if i == 3:
            p = rng.random(width) ** 30
        if i == 5:
            p = np.zeros(width)
            p[width // 3] = 1.0
        pmfs.append(p / p.sum())
    counts = np.array([1, 2, 5, 3, 60, 7, 1, 4, 2], dtype=np.int64)
    spec, mults, fwd = groups._bounded_product(pmfs, counts, n)
    ang = 2 * np.pi * np.arange(n, dtype=np.longdouble) / np.longdouble(n)
    cos, sin = np.cos(ang), np.sin(ang)
    k = np.arange(n // 2 + 1)
    got = np.ones(k.size, dtype=np.clongdouble)
    exact = np.ones(k.size, dtype=np.clongdouble)
    # the transforms as the product takes them: nine rows at once (scipy's threads)
    rows = groups._rfft(groups._dense(pmfs, np.array([p.size for p in pmfs]), n), n)
    for p, c, row in zip(pmfs, counts.tolist(), rows, strict=True):
        idx = np.outer(k, np.arange(p.size)) % n
        lp = p.astype(np.longdouble)
        exact *= (cos[idx] @ lp - 1j * (sin[idx] @ lp)) ** c
        got *= row.astype(np.clongdouble) ** c
    # the full spectrum's l2 norm squared: the stored half twice, less k = 0 and n / 2
    d = np.abs(got - exact).astype(float) ** 2
    err = math.sqrt(2.0 * d.sum() - d[0] - d[-1])
    slack = 1e3 * 2.0**-64 * float(counts.sum())  # the reference's own sums and powers
    assert err - slack <= fwd
    assert err > 0.0
    # bit for bit the product _spectrum_product forms, with the same count of products
    ref, ref_mults = groups._spectrum_product(pmfs, counts, n)
    assert mults == ref_mults and np.array_equal(spec, ref)
    normwise = sum(c * groups._l2(p) for p, c in zip(pmfs, counts.tolist(), strict=True))
    assert fwd < normwise * groups._fft_rel(n) * math.sqrt(n) / 4


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_bounded_product_bound_is_attained_by_radial_forward_errors(monkeypatch, sign):
    """Issue 37: the propagation in ``_bounded_product`` is sharp, not only sound.
    Transforms that err by almost their whole allowance ``e_c = kappa ||p_c||_1``
    (``kappa`` raised to 1e-4, so that the allowance itself matters to the products), each
    moved radially outward or inward -- the worst cases of the telescoped products --
    give a product that differs from the exact one (long double) by at least half of
    ``fwd`` and at most ``fwd`` (0.81 of it, both ways): a propagation that dropped a
    count ``k_c`` fails (0.0075 > 0.0007).  (Reading the moduli without their allowance
    is not caught in l2 here: 0.818 of ``fwd`` inward.)"""
    if np.finfo(np.longdouble).nmant < 63:
        pytest.skip("needs an 80-bit long double")
    kappa = 1e-4
    monkeypatch.setattr(groups, "_pass_model", lambda n: (kappa, kappa))
    rng = np.random.default_rng(3701)
    n = 600
    pmfs = []
    for _ in range(4):
        width = int(rng.integers(20, 120))
        p = np.exp(-0.5 * ((np.arange(width) - width / 2) / (width / 6)) ** 2)
        pmfs.append(p / p.sum())
    counts = np.array([3, 1, 40, 9], dtype=np.int64)
    ang = 2 * np.pi * np.arange(n, dtype=np.longdouble) / np.longdouble(n)
    cos, sin = np.cos(ang), np.sin(ang)
    k = np.arange(n // 2 + 1)
    exact_rows, moved_rows = [], []
    for p in pmfs:
        idx = np.outer(k, np.arange(p.size)) % n
        lp = p.astype(np.longdouble)
        a = cos[idx] @ lp - 1j * (sin[idx] @ lp)
        e = kappa * float(p.sum()) * 0.99999
        exact_rows.append(a)
        moved_rows.append((a * (1 + sign * e / np.abs(a))).astype(complex))
    moved = np.array(moved_rows)
    monkeypatch.setattr(groups, "_rfft", lambda block, n: moved[: block.shape[0]].copy())
    _, _, fwd = groups._bounded_product(pmfs, counts, n)
    got = np.ones(k.size, dtype=np.clongdouble)
    exact = np.ones(k.size, dtype=np.clongdouble)
    for a, b, c in zip(exact_rows, moved_rows, counts.tolist(), strict=True):
        exact *= a**c
        got *= b.astype(np.clongdouble) ** c
    d = np.abs(got - exact).astype(float) ** 2
    err = math.sqrt(2.0 * d.sum() - d[0] - d[-1])
    assert 0.5 * fwd <= err <= fwd


@pytest.mark.parametrize(
    "counts",
    [
        [4] + [10] * 24 + [6],  # a block of phases: its first and last cut short (a run)
        [10, 3] * 6 + [10] * 9,  # most rows, not one run (a mask)
        [1, 2, 3, 2, 1, 5, 5, 7, 1, 2, 9],  # few rows each (their indices)
    ],
)
def test_bounded_product_in_column_slices_is_the_whole_table_bit_for_bit(monkeypatch, counts):
    """Issue 37 (session 22): ``_bounded_product`` forms its bounds a few columns at a
    time (``PRODUCT_COLUMNS``) and reduces each count's rows as a run, a mask or a
    selection.  Every entry of the spectrum and of the bound is the same computation in
    the same order as over the whole table at once, so the spectrum, the products'
    count and ``fwd`` are bit for bit those of one slice holding every column, and
    the spectrum is the one ``_spectrum_product`` forms; rows split in two chunks
    (``n`` so long that a chunk holds 16 rows) too."""
    rng = np.random.default_rng(3702)
    pmfs = []
    for _ in counts:
        p = rng.random(int(rng.integers(20, 900))) ** 4
        pmfs.append(p / p.sum())
    counts = np.array(counts, dtype=np.int64)
    for n in (4096, 1 << 17):
        monkeypatch.setattr(groups, "PRODUCT_COLUMNS", 1 << 40)
        whole = groups._bounded_product(pmfs, counts, n)
        monkeypatch.setattr(groups, "PRODUCT_COLUMNS", 700)
        sliced = groups._bounded_product(pmfs, counts, n)
        assert np.array_equal(whole[0], sliced[0])
        assert whole[1:] == sliced[1:]
        ref, ref_mults = groups._spectrum_product(pmfs, counts, n)
        assert np.array_equal(sliced[0], ref) and sliced[1] == ref_mults


def test_row_lambdas_computed_apart_with_the_calls_longest_row_are_the_calls_rows():
    # a caller's cache (the online direction's fine cells) makes rows in several calls:
    # with ``longest`` the call's longest row, each is the whole call's row bit for bit,
    # also where the whole call's rows do not share one table (a row beyond
    # NEG_WEIGHTS_CACHED: short sparse rows then sum every entry, not the nonzero ones)
    from dpacct.accountant.pld import pld_fft
    from dpacct.accountant.pld.graded_cells import graded_cells

    firsts, pmfs, _ = graded_cells(
        np.array([0.9, 1.3, 2.0, 3.0]), np.array([0.02, 0.01, 0.005, 0.05]), 1e-3, 4, 1e-15, False
    )
    long_pmf = np.zeros(pld_fft.NEG_WEIGHTS_CACHED + 5)
    long_pmf[::7] = 1.0
    long_pmf /= long_pmf.sum()
    rng = np.random.default_rng(26)
    short = np.zeros(3000)  # sparse and at most SPARSE_ROW long
    short[rng.choice(3000, 400, replace=False)] = rng.random(400)
    short /= short.sum()
    for rows in ([*pmfs, short], [*pmfs, short, long_pmf]):
        first = np.array([*firsts, -40, 7][: len(rows)], dtype=np.int64)
        longest = max(p.size for p in rows)
        whole = groups._row_lambdas(STEP / 4, first, rows)
        for part in ([0, 2], [1, 3, 4], list(range(len(rows)))[::-1]):
            got = groups._row_lambdas(STEP / 4, first[part], [rows[i] for i in part], longest)
            for w, g in zip(whole, got, strict=True):
                assert np.array_equal(w[part], g)
    # the short sparse row's two paths round differently: without the call's longest
    # row, rows made apart would not be the call's
    alone = groups._row_lambdas(STEP / 4, np.array([-40]), [short])
    apart = groups._row_lambdas(STEP / 4, np.array([-40]), [short], long_pmf.size)
    assert not np.array_equal(alone[0], apart[0])
    assert np.allclose(alone[0], apart[0], rtol=1e-13, atol=1e-13)


def test_block_rows_bound_the_log_mgf_at_every_block_order():
    # the block's rows at BLOCK_ORDERS against log-sum-exp in long double: dense, sparse
    # (graded-like) and a row beyond the cached tables; never below, within the slack
    rng = np.random.default_rng(7)
    dense = rng.random(300)
    sparse = np.zeros(9000)
    sparse[rng.choice(9000, 400, replace=False)] = rng.random(400)
    long = np.zeros(70_000)
    long[::97] = rng.random(long[::97].size)
    pmfs = [p / p.sum() for p in (dense, sparse, long)]
    firsts = np.array([-40, -3000, 5])
    step = 1.25e-4
    lp, ln = groups._block_rows(step, firsts, pmfs)
    t = groups.BLOCK_ORDERS.astype(np.longdouble)
    for i, p in enumerate(pmfs):
        nz = np.flatnonzero(p)
        loss = (firsts[i] + nz).astype(np.longdouble) * np.longdouble(step)
        lw = np.log(p[nz].astype(np.longdouble))
        for sign, got in ((1, lp[i]), (-1, ln[i])):
            e = lw[:, None] + sign * loss[:, None] * t[None, :]
            m = e.max(axis=0)
            exact = (m + np.log(np.exp(e - m).sum(axis=0))).astype(float)
            assert np.all(got >= exact), (i, sign, got - exact)
            # summed columns within the slack: the upper side's all, the lower side's
            # powers of two (its extra orders are the convexity bound, only valid)
            cols = slice(None) if sign == 1 else slice(0, _ORDERS.size)
            gap = (got - exact)[cols]
            assert np.all(
                gap <= 2.0 * (p.size + 8) * 2.0**-53 + 1e-14 * (1 + np.abs(exact[cols]))
            ), (i, sign, gap)
        # the lower side's extra columns: the larger neighbouring power of two's
        hi = np.searchsorted(_ORDERS, groups.BLOCK_ORDERS[_ORDERS.size :])
        assert np.array_equal(ln[i, _ORDERS.size :], np.maximum(ln[i, hi - 1], ln[i, hi]))
    # the powers-of-two columns are _row_lambdas', bit for bit
    lp0, ln0 = groups._row_lambdas(step, firsts, pmfs)
    assert np.array_equal(lp[:, : _ORDERS.size], lp0)
    assert np.array_equal(ln[:, : _ORDERS.size], ln0)


def _random_block(seed: int, cells: int = 26):
    rng = np.random.default_rng(seed)
    sig, q = rng.uniform(0.8, 2.0, cells), rng.uniform(1e-3, 2e-2, cells)
    return {(float(s), float(r)): 10 for s, r in zip(sig, q, strict=True)}


def test_a_random_phase_blocks_window_is_shorter_than_at_powers_of_two_and_holds_its_tails(
    monkeypatch,
):
    # the online ledger's block (26 random phases x 10 steps, as benchmarks.ledger_phases)
    # is transformed on fewer points than any window the powers-of-two orders allow
    # (main's path: counted, not timed), and the mass of the exact composition outside
    # the shorter window -- the cells' product on 2^18 points -- is within its aliasing
    from dpacct.accountant.pld.block_rules import BLOCK_ALIAS_TRIES, _delta_factor, _factor
    from dpacct.accountant.pld.chernoff_window import _window
    from dpacct.accountant.pld.online_direction import _Direction

    items = _random_block(8)  # 65 536 points on main's path, 49 152 here
    d = _Direction(1e-5, 1e-3, False, 1 << 20)
    seen: list[tuple[int, int]] = []
    real = groups._rfft
    monkeypatch.setattr(groups, "_rfft", lambda b, n: seen.append(b.shape) or real(b, n))
    d._compose(items, 256)
    points = sum(r * c for r, c in seen)
    factor = _delta_factor(_factor(items, d.step, 256), 256, d.delta)
    fine = d.step / factor
    cells = d._cells(items, factor)
    firsts = np.array([c[0] for c in cells], dtype=np.int64)
    pmfs = [c[1] for c in cells]
    counts = np.array(list(items.values()), dtype=float)
    lp, ln = groups._row_lambdas(fine, firsts, pmfs)
    width = max(p.size for p in pmfs)
    least = min(
        groups._quiet_len(
            max(
                _window(fine, counts @ lp, counts @ ln, d.block_alias * groups.ALIAS_TRY**j)[1],
                width,
            )
        )
        for j in range(BLOCK_ALIAS_TRIES)
    )
    assert points < 0.9 * len(pmfs) * least, (points, least)
    raw = groups._compose_spectrum(
        fine,
        firsts,
        pmfs,
        counts,
        d.block_alias,
        groups._block_rows,
        BLOCK_ALIAS_TRIES,
        orders=groups.BLOCK_ORDERS,
    )
    n, alias, a_idx, origin = raw[1], raw[4], raw[5], raw[6]
    big = 1 << 18
    spec = np.ones(big // 2 + 1, dtype=complex)
    for p, k in zip(pmfs, counts.astype(int), strict=True):
        spec *= np.fft.rfft(p, big) ** k
    y = np.fft.irfft(spec, big)  # node origin + j at index j (no wrap: 32 loss units)
    nodes = origin + np.arange(big)
    outside = float(np.sum(y[(nodes < a_idx) | (nodes >= a_idx + n)]))
    assert outside <= alias, (outside, alias)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_more_orders_keep_the_budget_and_never_take_a_noisier_length(seed):
    # a small block (11 cells x 9 steps): the budget is the powers of two's choice, the
    # length no longer and no worse in kappa(n) sqrt(n) (a pending block of the decaying
    # online loop once went to 13 824 radix-3 points and a larger certified error), and
    # the certified error no larger than at the powers of two (up to the rows' rounding)
    from dpacct.accountant.pld.graded_cells import graded_cells

    rng = np.random.default_rng(seed)
    sig, q = rng.uniform(1.2, 2.0, 11), rng.uniform(5e-3, 2e-2, 11)
    firsts, pmfs, _ = graded_cells(sig, q, 1e-3, 8, 1e-15, False)
    firsts = np.asarray(firsts, dtype=np.int64)
    counts = np.full(11, 9.0)
    old = groups._compose_spectrum(1.25e-4, firsts, pmfs, counts, 1e-12, groups._row_lambdas, 3)
    new = groups._compose_spectrum(
        1.25e-4, firsts, pmfs, counts, 1e-12, groups._block_rows, 3, orders=groups.BLOCK_ORDERS
    )
    assert new[1] <= old[1]
    assert groups._componentwise_scale(new[1]) <= groups._componentwise_scale(old[1])
    seg_old = groups._compose_group(1.25e-4, firsts, pmfs, counts, 1e-12, 3, groups._row_lambdas)
    seg_new = groups._compose_group(
        1.25e-4, firsts, pmfs, counts, 1e-12, 3, groups._block_rows, groups.BLOCK_ORDERS
    )
    # (the aliasing at more orders rounds apart from that at 10: 1e-14 relative)
    assert seg_new.err <= seg_old.err * (1 + 1e-12), (seg_new.err, seg_old.err)


def test_rows_grouped_by_count_keep_every_product_and_sum():
    """Issue 37, session 33: ``_bounded_product`` groups a chunk's rows by count (a
    stable sort) so that each count's products run over one slice.  Against the rows in
    their own order, each count picked by mask or index (``_rows_of``), the grouped rows
    give every group's products and the sum ``tele`` bit for bit, the sum taken back in
    the rows' own order (``back``): 27 rows of scattered counts 8-12 and moduli spread
    over 40 decades, columns in several slices (a one-column last slice too)."""
    rng = np.random.default_rng(3733)
    nr, half = 27, 2 * (groups.PRODUCT_COLUMNS // 27) + 1
    scale = 10.0 ** rng.integers(-30, 10, (nr, 1))
    spec = (rng.standard_normal((nr, half)) + 1j * rng.standard_normal((nr, half))) * scale
    k = rng.integers(8, 13, nr).astype(np.int64)
    e = rng.random(nr) * 1e-15

    def run(rows, counts, errs, back):
        uniq = np.unique(counts).tolist()
        picks = [(kk, groups._rows_of(counts == kk), True) for kk in uniq]
        out = {kk: (np.empty(half, dtype=complex), np.empty(half)) for kk in uniq}
        tele = np.zeros(half)
        groups._slice_products(rows, counts, errs, picks, out, tele, back)
        return out, tele, [p for _, (_, p), _ in picks]

    own, tele_own, picks_own = run(spec, k, e, None)
    order = np.argsort(k, kind="stable")
    grouped, tele_grouped, picks_grouped = run(spec[order], k[order], e[order], np.argsort(order))
    assert not all(isinstance(p, slice) for p in picks_own)
    assert all(isinstance(p, slice) for p in picks_grouped)
    assert np.array_equal(tele_own, tele_grouped)
    for kk, (g, gm) in own.items():
        assert np.array_equal(g, grouped[kk][0]) and np.array_equal(gm, grouped[kk][1])
