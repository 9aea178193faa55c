"""The schedule fast path's bracket: vectorised discretisation, exact cells, rounding.

Independent references: the engine's one-cell optimistic construction
(``pld._from_bins``, a loop over cells) for the vectorised one, the scalar rounding
``_round`` for the vectorised ``round_schedule``, the engine's one-set lower hull for
the segmented one, and the general composition route (``compose`` of
``poisson_subsample(GaussianMechanism(sigma), q)`` parts at tol=1e-5) for the
ledger's bracket.  No wall-clock assertions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpacct.accountant import PrivacyAccountant, compose, poisson_subsample
from dpacct.accountant import schedule as sch
from dpacct.accountant import schedule_fast as fast
from dpacct.accountant import sgm_cells as cells
from dpacct.accountant.pld import _Bins, _from_bins
from dpacct.accountant.pld_hull import _lower_hull, _lower_hull_chain
from dpacct.mechanisms import GaussianMechanism

DELTA = 1e-5


def _hockey(first, pmf, step, eps):
    """delta(eps) of a grid PMF under P (no mass at +inf)."""
    a = (first + np.arange(pmf.size)) * step
    return np.array([np.sum(pmf * np.maximum(-np.expm1(e - a), 0.0)) for e in eps])


def _cells(seed, n):
    rng = np.random.default_rng(seed)
    sig = np.concatenate([rng.uniform(0.5, 3.0, n), [0.55, 1.5, 0.8]])
    qs = np.concatenate([rng.uniform(1e-4, 0.5, n), [0.01, 0.001, 1.0]])
    return sig, qs


@pytest.mark.parametrize("add", [False, True])
@pytest.mark.parametrize("step", [1e-3, 2.5e-4])
def test_vectorised_optimistic_cells_match_the_engine_construction(add, step, monkeypatch):
    # small blocks: several padded tables of different widths
    monkeypatch.setattr(cells, "BIN_BLOCK", 1 << 15)
    sig, qs = _cells(4, 25)
    tau = 1e-13
    firsts, pmfs, infs = cells._optimistic_cells(sig, qs, step, tau, add)
    first, nb, m, n, nodes, _, top = cells._cell_bins(sig, qs, step, tau, add)
    r = cells._scaled_q(n, nodes, m)
    cuts = np.cumsum(nb)[:-1]
    eps = np.linspace(-0.5, 4.0, 46)
    for k, (mk, rk) in enumerate(zip(np.split(m, cuts), np.split(r, cuts), strict=True)):
        ref = _from_bins(
            _Bins(
                step=step,
                first=int(first[k]),
                m=mk,
                r=rk,
                bottom=(0.0, 0.0),
                top=(float(top[0][k]), 0.0),
                inf_mass=0.0,
            ),
            False,
        )
        assert infs[k] == ref.inf_mass == 0.0
        ours = _hockey(firsts[k], pmfs[k], step, eps)
        theirs = _hockey(ref.offset, ref.pmf, step, eps)
        # the same construction, summed in a different order: agreement to round-off
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)
        # never more P-mass than the cell has (excess mass would compound)
        assert pmfs[k].sum() <= (mk.sum() + top[0][k]) * (1 + 1e-14)
        assert np.all(pmfs[k] >= 0)


@pytest.mark.parametrize("add", [False, True])
def test_pessimistic_cells_keep_both_masses(add, monkeypatch):
    monkeypatch.setattr(cells, "BIN_BLOCK", 1 << 14)
    sig, qs = _cells(5, 15)
    step, tau = 1e-3, 1e-13
    firsts, pmfs, infs = cells._pessimistic_cells(sig, qs, step, tau, add)
    first, nb, m, _, _, bottom, top = cells._cell_bins(sig, qs, step, tau, add)
    assert len(pmfs) == sig.size
    for k, p in enumerate(pmfs):
        assert firsts[k] == first[k] and p.size == nb[k] + 1 and np.all(p >= 0)
        # connect-the-dots keeps the P-mass of the grid (bins + bottom), the top goes to +inf
        start = int(np.sum(nb[:k]))
        np.testing.assert_allclose(
            p.sum(), m[start : start + nb[k]].sum() + bottom[0][k], rtol=1e-12, atol=1e-300
        )
        assert infs[k] == top[0][k]


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


def test_vectorised_rounding_matches_round_step():
    rng = np.random.default_rng(2)
    steps = [
        (float(s), float(q), int(c))
        for s, q, c in zip(
            rng.uniform(0.3, 5, 500),
            rng.uniform(1e-4, 1, 500),
            rng.integers(1, 9, 500),
            strict=True,
        )
    ]
    steps.append((1.0, 1.0, 3))  # on the grid: stays put
    g = 2**-9
    w = math.log1p(g)
    for upper in (True, False):
        cells: dict[tuple[float, float], int] = {}
        for s, q, c in steps:
            key = sch._round(s, q, w, upper)
            cells[key] = cells.get(key, 0) + c
        want = [(s, q, c) for (s, q), c in sorted(cells.items())]
        assert sch.round_schedule(steps, g, upper=upper) == want


def test_exact_cells_and_values_are_not_rounded():
    decay = [(1.5 * 0.999**t, 0.01, 1) for t in range(400)]
    for upper in (True, False):
        # a constant q keeps its value; sigma is still rounded (and merged)
        out = sch.round_schedule(decay, 2**-8, upper=upper, exact_values=4)
        assert {q for _, q, _ in out} == {0.01}
        assert len(out) < 400 and sum(c for *_, c in out) == 400
        # few distinct steps: nothing is rounded
        out = sch.round_schedule(decay + decay[:5], 2**-8, upper=upper, exact_cells=400)
        assert sorted((s, q) for s, q, _ in out) == sorted((s, q) for s, q, _ in decay)
        assert sum(c for *_, c in out) == 405


def _general_route_bounds(phases):
    parts = [poisson_subsample(GaussianMechanism(sigma=s), q) for s, q, _ in phases]
    run = compose(parts, counts=[c for *_, c in phases])
    return run.epsilon_bounds(DELTA, tol=1e-5)


def test_ledger_bracket_contains_the_general_route():
    # 18 distinct phases: beyond the ledger's exact composition, so the fast path
    rng = np.random.default_rng(11)
    phases = [
        (float(s), float(q), 40)
        for s, q in zip(rng.uniform(0.9, 2.0, 18), rng.uniform(0.002, 0.02, 18), strict=True)
    ]
    acct = PrivacyAccountant(progress=False)
    for s, q, c in phases:
        acct.step(noise_multiplier=s, sample_rate=q, count=c)
    lo, hi = acct.epsilon_bounds(DELTA)
    assert hi == acct.epsilon(DELTA)
    e_lo, e_hi = _general_route_bounds(phases)
    # the general route's answer is inside the fast path's bracket (up to its own
    # 1e-5 bracket), and the fast bracket is tight
    assert lo <= e_hi and e_lo <= hi
    assert lo <= e_lo * (1 + 1e-9) and e_hi <= hi * (1 + 1e-9)
    assert hi <= lo * 1.005


def test_brackets_at_different_grids_intersect():
    # more distinct steps than EXACT_CELLS: the steps are rounded, sigma only (q constant)
    n = sch.EXACT_CELLS + 200
    sched = [(1.4 * 0.9995**t, 0.02, 1) for t in range(n)]
    brackets = []
    for grid in (2**-7, 2**-10):
        acct = PrivacyAccountant(progress=False, grid=grid)
        for s, q, c in sched:
            acct.step(noise_multiplier=s, sample_rate=q, count=c)
        brackets.append(acct.epsilon_bounds(DELTA))
    (lo1, hi1), (lo2, hi2) = brackets
    assert lo1 <= hi1 and lo2 <= hi2
    assert max(lo1, lo2) <= min(hi1, hi2)
    # the finer grid's bracket is the narrower one
    assert hi2 - lo2 < hi1 - lo1
    assert hi2 <= lo2 * 1.005


# ------------------------------------------------------------------ pile nodes
def _exact_remove_delta(sigma, q, eps):
    """delta(eps) of the remove-direction pair P = (1-q) N(0,s^2) + q N(1,s^2),
    Q = N(0,s^2), in closed form: P(L > eps) - e^eps Q(L > eps) (1 - e^eps below the
    loss's floor log(1 - q))."""
    from scipy import special

    out = []
    for e in eps:
        if q < 1 and e <= math.log1p(-q):
            out.append(-math.expm1(e))
            continue
        x = sigma**2 * (math.log(math.exp(e) - 1 + q) - math.log(q)) + 0.5
        p_tail = (1 - q) * special.ndtr(-x / sigma) + q * special.ndtr((1 - x) / sigma)
        out.append(p_tail - math.exp(e) * special.ndtr(-x / sigma))
    return np.array(out)


@pytest.mark.parametrize("step", [1e-3, 2.5e-4])
def test_pile_cells_are_dominated_by_the_exact_pair(step, monkeypatch):
    # every cell's grid PMF, at its shifted losses, has a curve below the exact one at
    # every eps (negative ones too: that is what makes composition keep the order)
    monkeypatch.setattr(cells, "BIN_BLOCK", 1 << 15)
    sig, qs = _cells(6, 12)
    sig, qs = np.append(sig, [3.0, 0.7]), np.append(qs, [1e-4, 0.2])
    pile = cells._pile_nodes(sig, qs, step)
    assert np.isnan(pile[qs == 1.0]).all() and np.isfinite(pile[qs < 1.0]).all()
    firsts, pmfs, infs = cells._optimistic_cells(sig, qs, step, 1e-13, False, pile)
    shift = cells._pile_shift(pile, step)
    assert np.all((shift >= 0) & (shift < step))
    for k in range(sig.size):
        losses = (firsts[k] + np.arange(pmfs[k].size)) * step + shift[k]
        if np.isfinite(pile[k]):
            # the grid starts at the pile node (trimmed to its first positive node)
            lead = (losses[0] - pile[k]) / step
            assert lead > -1e-6 and abs(lead - round(lead)) < 1e-6
            assert pile[k] >= math.log1p(-qs[k])
        eps = np.concatenate([losses[:40:3], np.linspace(-0.3, 3.0, 34)])
        ours = np.array(
            [np.sum(pmfs[k] * np.maximum(-np.expm1(e - losses), 0.0)) for e in eps]
        )
        exact = _exact_remove_delta(float(sig[k]), float(qs[k]), eps)
        assert np.all(ours <= exact + 1e-13), (sig[k], qs[k])
        assert pmfs[k].sum() <= 1.0 + 1e-14 and np.all(pmfs[k] >= 0) and infs[k] == 0.0


def test_pile_node_atom_sits_on_the_node():
    # the merged loss of {L <= o + step} is at (not below) the node o, and within a
    # hair of it when a fixed point exists (independent of the bisection's arithmetic:
    # the CDFs by mpmath)
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    step = 1e-3
    sig = np.array([0.55, 0.8, 1.5, 2.0])
    qs = np.array([0.01, 0.01, 0.02, 0.1])
    pile = cells._pile_nodes(sig, qs, step)
    for s, q, o in zip(sig.tolist(), qs.tolist(), pile.tolist(), strict=True):
        y = mpmath.mpf(o) + step
        x = s**2 * (mpmath.log(mpmath.exp(y) - 1 + q) - mpmath.log(q)) + mpmath.mpf(1) / 2
        p = (1 - q) * mpmath.ncdf(x / s) + q * mpmath.ncdf((x - 1) / s)
        atom = float(mpmath.log(p / mpmath.ncdf(x / s)))
        assert o <= atom <= o + 1e-9 * step + 1e-15


def test_shifted_epsilon_is_the_epsilon_of_the_shifted_losses():
    from dpacct.accountant.pld import GridPLD

    rng = np.random.default_rng(3)
    pmf = rng.uniform(0, 1, 300)
    pmf /= pmf.sum()
    step = 1e-3
    for shift, off in [(0.0, -50), (0.01234, -50), (2.5e-4, 100), (7.3, -200)]:
        pld = GridPLD(step, off, pmf, 0.0, False)
        want = (off + np.arange(pmf.size)) * step + shift
        for d in (1e-3, 0.05, 0.3):
            eps = fast._shifted_epsilon(pld, d, shift)
            # never above the true epsilon of the shifted losses (the curve at the
            # answer is still at or above the target), and within 1e-6 of it
            curve = np.sum(pmf * np.maximum(-np.expm1(eps - want), 0.0))
            above = np.sum(pmf * np.maximum(-np.expm1(eps + 1e-6 - want), 0.0))
            if eps > 0:
                assert curve >= d * (1 - 1e-12)
            assert above <= d


def test_lower_end_is_tight_at_the_engine_step():
    # a decaying sigma (the pile is what the coarse step used to miss): the lower end
    # at the upper end's own loss step stays within 0.1 % of the upper end, on the
    # same (unrounded) schedule
    steps = [(1.2 * 0.9998**t, 0.01, 1) for t in range(2000)]
    _, upper = fast.fast_epsilon_bounds(steps, DELTA, lower=False)
    lower, _ = fast.fast_epsilon_bounds(steps, DELTA, step=fast.FAST_STEP, upper=False)
    assert lower <= upper <= lower * 1.002


def test_lower_step_refines_for_narrow_steps():
    assert fast._lower_step([(0.8, 0.02, 100)]) == fast.FAST_STEP
    # q = 0.001: the loss of a step spreads over about a bin
    assert fast._lower_step([(1.5, 0.001, 100)]) == fast.FAST_STEP / 4
    mixed = [(0.8, 0.02, 100), (1.5, 0.002, 5000)]
    assert fast._lower_step(mixed) < fast.FAST_STEP
    assert fast._lower_step([]) == fast.FAST_STEP


def test_ledger_bracket_with_small_rates_contains_the_general_route():
    # small q (narrow steps: the finer lower step) and a decaying sigma, 20 phases
    phases = [(1.6 * 0.97**i, 0.002 + 0.0005 * (i % 5), 30) for i in range(20)]
    acct = PrivacyAccountant(progress=False)
    for s, q, c in phases:
        acct.step(noise_multiplier=s, sample_rate=q, count=c)
    lo, hi = acct.epsilon_bounds(DELTA)
    e_lo, e_hi = _general_route_bounds(phases)
    assert lo <= e_hi and e_lo <= hi
    assert lo <= e_lo * (1 + 1e-9) and e_hi <= hi * (1 + 1e-9)
    assert hi <= lo * 1.005
