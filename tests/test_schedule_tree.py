"""The schedule fast path's tree of groups (``schedule_fast._compose_tree``).

Many cells are composed in groups on the groups' own windows, and the group PMFs a
level up; the flat product transforms every cell on the whole composition's window.
Independent references: the exact linear convolution of the cells' PMFs (``np.convolve``:
sums of non-negative terms), the log-MGF by ``logsumexp``, and the flat product, each
within its own certified error.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpacct.accountant.pld import groups
from dpacct.accountant.pld import schedule_fast as fast
from dpacct.accountant.pld.sgm_cells import _cell_ranges, _pessimistic_cells

DELTA = 1e-5


def _cells(n, seed, count=10):
    rng = np.random.default_rng(seed)
    sig = rng.uniform(0.8, 2.0, n)
    qs = rng.uniform(0.001, 0.02, n)
    return sig, qs, np.full(n, float(count))


def _finite_delta(first, pmf, step, eps):
    """``sum_l p_l (1 - e^{eps - l})_+`` of a PMF from grid node ``first`` on."""
    losses = (first + np.arange(pmf.size)) * step
    return float(np.sum(pmf * np.maximum(-np.expm1(eps - losses), 0.0)))


def _tree(monkeypatch, sig, qs, cnt, step, tau, budget, add=False, cells=4, fanin=3):
    monkeypatch.setattr(fast, "TREE_CELLS", cells)
    monkeypatch.setattr(fast, "TREE_FANIN", fanin)
    return fast._pessimistic_tree(sig, qs, cnt, step, tau, budget, add)


def test_tree_is_within_its_error_of_the_exact_composition(monkeypatch):
    # 9 cells, one step each, at a coarse step: the exact discrete composition by direct
    # (non-negative) convolutions; the tree (groups of 3, then one level up) is within
    # its certified error of it at every eps
    step, delta = 1e-2, 1e-3
    sig, qs, cnt = _cells(9, seed=1, count=1)
    tau = 1e-4 * delta / cnt.sum()
    firsts, pmfs, infs = _pessimistic_cells(sig, qs, step, tau, False)
    exact = np.array([1.0])
    for p in pmfs:
        exact = np.convolve(exact, p)
    first = int(firsts.sum())
    pld, err = _tree(monkeypatch, sig, qs, cnt, step, tau, 1e-4 * delta, cells=4, fanin=3)
    assert err < 1e-6
    fin = float(np.prod(1 - infs))
    assert pld.inf_mass >= 1 - fin  # the cut tails, then the error, at +inf
    for eps in (0.0, 0.1, 0.3, 0.6, 1.0, 2.0):
        want = _finite_delta(first, exact, step, eps)
        got = _finite_delta(pld.offset, pld.pmf, step, eps)
        assert abs(got - want) <= err
        # the pessimistic PLD's curve (error at +inf) is at or above the exact one
        assert pld.delta(eps) >= want + (1 - fin) * (1 - 1e-9)


@pytest.mark.parametrize("add", [False, True])
def test_tree_equals_the_flat_product_within_both_errors(monkeypatch, add):
    step = 1e-3
    sig, qs, cnt = _cells(200, seed=7)
    tau = 1e-4 * DELTA / cnt.sum()
    firsts, pmfs, infs = _pessimistic_cells(sig, qs, step, tau, add)
    flat, err_flat = fast._compose_cells(step, firsts, pmfs, infs, cnt, 1e-4 * DELTA, True)
    tree, err_tree = _tree(monkeypatch, sig, qs, cnt, step, tau, 1e-4 * DELTA, add, 16, 8)
    assert 0 < err_tree < 1e-7 and 0 < err_flat < 1e-7
    # the same finite composition up to the two certified errors, at every eps
    for eps in np.linspace(0.0, 1.5 * flat.epsilon(DELTA), 12):
        d_flat = _finite_delta(flat.offset, flat.pmf, step, eps)
        d_tree = _finite_delta(tree.offset, tree.pmf, step, eps)
        assert abs(d_flat - d_tree) <= err_flat + err_tree
    # the same +inf mass from the cut tails
    assert tree.inf_mass - err_tree == pytest.approx(flat.inf_mass - err_flat, rel=1e-9)


def test_tree_bracket_holds_and_keeps_the_flat_answers(monkeypatch):
    # 300 phases (beyond TREE_CELLS): the tree's upper bound is above the flat lower
    # bound and its lower bound below the flat upper, each within 0.05 % of the flat one
    rng = np.random.default_rng(3)
    phases = [
        (float(s), float(q), 10)
        for s, q in zip(rng.uniform(0.8, 2.0, 300), rng.uniform(0.001, 0.02, 300), strict=True)
    ]
    lo_tree, hi_tree = fast.fast_epsilon_bounds(phases, DELTA)
    monkeypatch.setattr(fast, "TREE_CELLS", 10**9)
    lo_flat, hi_flat = fast.fast_epsilon_bounds(phases, DELTA)
    assert lo_flat <= hi_tree and lo_tree <= hi_flat
    assert lo_tree <= hi_tree
    assert math.isclose(hi_tree, hi_flat, rel_tol=5e-4)
    assert math.isclose(lo_tree, lo_flat, rel_tol=5e-4)


def test_tree_groups_cells_by_width_and_declines_like_the_flat_product(monkeypatch):
    sig, qs, cnt = _cells(40, seed=2)
    step, tau = 1e-3, 1e-4 * DELTA / cnt.sum()
    widths = _cell_ranges(sig, qs, step, tau, False)[1]
    seen = []

    def cells(ids):
        seen.append(widths[ids])
        return _pessimistic_cells(sig[ids], qs[ids], step, tau, False)

    monkeypatch.setattr(fast, "TREE_CELLS", 8)
    monkeypatch.setattr(fast, "TREE_FANIN", 8)
    assert fast._compose_tree(step, cells, widths, cnt, 1e-4 * DELTA, True) is not None
    assert sum(w.size for w in seen) == 40
    assert all(a.max() <= b.min() for a, b in itertools.pairwise(seen))
    monkeypatch.setattr(groups, "FAST_MAX_N", 64)
    assert fast._compose_tree(step, cells, widths, cnt, 1e-4 * DELTA, True) is None


def test_fine_tree_is_within_its_error_of_the_exact_fine_composition(monkeypatch):
    # 9 one-step cells, groups of 3 composed on a grid 4x finer and coarsened once: the
    # exact reference convolves each group's fine cells directly (non-negative sums),
    # coarsens it (connect-the-dots, coarsen.coarsen) and convolves the group PMFs; the
    # tree is within its certified error of it at every eps, and above the coarse
    # tree's cells only by that error where the fine groups are tighter
    from dpacct.accountant.pld.coarsen import coarsen
    from dpacct.accountant.pld.split_cells import split_cells

    step, factor, delta = 1e-2, 4, 1e-3
    sig, qs, cnt = _cells(9, seed=5, count=1)
    tau = 1e-4 * delta / cnt.sum()
    monkeypatch.setattr(fast, "TREE_CELLS", 4)
    monkeypatch.setattr(fast, "TREE_FANIN", 3)
    monkeypatch.setattr(fast, "FINE_GROUP_CELLS", 3)
    monkeypatch.setattr(fast, "FINE_GROUP_MAX_CELLS", 3)
    pld, err = fast._pessimistic_tree(sig, qs, cnt, step, tau, 1e-4 * delta, False, factor)
    assert 0 < err < 1e-6
    order = np.argsort(_cell_ranges(sig, qs, step, tau, False)[1], kind="stable")
    exact, origin, fin = np.array([1.0]), 0, 1.0
    for g in range(3):
        ids = order[3 * g : 3 * g + 3]
        firsts, pmfs, infs = split_cells(sig[ids], qs[ids], step, factor, tau, False)
        group, g_first = np.array([1.0]), 0
        for f, p in zip(firsts, pmfs, strict=True):
            group, g_first = np.convolve(group, p), g_first + int(f)
        fin *= float(np.prod(1 - infs))
        c_first, c_pmf, _ = coarsen(g_first, group, factor, step / factor)
        exact, origin = np.convolve(exact, c_pmf), origin + c_first
    assert pld.inf_mass >= 1 - fin
    coarse, _ = fast._pessimistic_tree(sig, qs, cnt, step, tau, 1e-4 * delta, False, 1)
    for eps in (0.0, 0.1, 0.3, 0.6, 1.0, 2.0):
        want = _finite_delta(origin, exact, step, eps)
        got = _finite_delta(pld.offset, pld.pmf, step, eps)
        assert abs(got - want) <= err
        assert pld.delta(eps) >= want + (1 - fin) * (1 - 1e-9)
        assert pld.delta(eps) <= coarse.delta(eps) + err


@pytest.mark.parametrize("add", [False, True])
def test_fine_groups_fall_back_to_coarser_factors_and_decline_at_the_end(monkeypatch, add):
    # a fine window longer than the FFT limit: the group is retried at half the factor,
    # down to the cells on the coarse grid, and the tree declines only when that fails
    sig, qs, cnt = _cells(6, seed=4)
    step, tau = 1e-3, 1e-4 * DELTA / cnt.sum()
    want, _ = fast._pessimistic_tree(sig, qs, cnt, step, tau, 1e-4 * DELTA, add, 1)
    n_coarse = want.pmf.size
    monkeypatch.setattr(groups, "FAST_MAX_N", 2 * n_coarse)
    got, _ = fast._pessimistic_tree(sig, qs, cnt, step, tau, 1e-4 * DELTA, add, 16)
    assert got is not None
    # at most the coarse cells' answer (a finer factor where it fit; at factor 1 the
    # groups' extra composition level carries a little more round-off)
    assert got.epsilon(DELTA) <= want.epsilon(DELTA) * (1 + 1e-6)
    monkeypatch.setattr(groups, "FAST_MAX_N", 64)
    assert fast._pessimistic_tree(sig, qs, cnt, step, tau, 1e-4 * DELTA, add, 16) is None
