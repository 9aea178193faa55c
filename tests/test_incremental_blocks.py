"""The online ledger's blocks (``accountant/pld/incremental.py``, issue 25).

A block of steps is composed on a finer loss grid and re-discretised once onto the
history's; the answers must stay certified upper bounds (at or above independent lower
bounds: the one-shot path's certified lower end, dp_accounting's optimistic PLD), be at
least as tight as composing every step on the history's grid (the one-shot path at the
same step) and within 1e-4 of dp_accounting's pessimistic PLD at a fine grid; blocks
are cut by the steps alone, so batching, queries and a filter's trials change nothing.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ledgers import ledger
from scipy import special
from sgm_oracles import dp_accounting_epsilon

from dpacct.accountant import compose, poisson_subsample
from dpacct.accountant.pld import block_rules as rules
from dpacct.accountant.pld import incremental as inc_mod
from dpacct.accountant.pld import online_direction as direction_mod
from dpacct.accountant.pld.block_rules import BLOCK_STEPS, FINE_BUDGET, _factor
from dpacct.accountant.pld.incremental import IncrementalEpsilon
from dpacct.accountant.pld.schedule import round_schedule
from dpacct.accountant.pld.schedule_fast import FAST_STEP, fast_epsilon_bounds
from dpacct.accountant.pld.schedule_grid import _round
from dpacct.mechanisms import GaussianMechanism

DELTA = 1e-5


def _random_phases(n: int, steps: int, seed: int) -> list[tuple[float, float, int]]:
    rng = np.random.default_rng(seed)
    sig = rng.uniform(0.8, 2.0, n)
    qs = rng.uniform(0.001, 0.02, n)
    return [(float(s), float(q), steps) for s, q in zip(sig, qs, strict=True)]


SCHEDULES = {
    "random phases": _random_phases(40, 10, 3),
    "decaying sigma": [(1.5 * 0.999**t, 0.01, 1) for t in range(600)],
    "constant sigma": [(1.0, 0.01, 3000)],
    "narrow steps": [(3.8, 0.01, 2000)],
}


def _online(phases) -> float:
    inc = IncrementalEpsilon(DELTA)
    inc.fold(phases)
    eps = inc.epsilon()
    assert eps is not None
    return eps


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_answer_inside_the_one_shot_bracket(name):
    phases = SCHEDULES[name]
    ours = _online(phases)
    # the certified lower end of the unrounded steps (rounded down), at a finer step
    down = round_schedule(phases, upper=False, exact_values=64)
    lower = fast_epsilon_bounds(down, DELTA, step=FAST_STEP / 4, upper=False)[0]
    assert lower <= ours
    # at least as tight as composing every step on the history's own grid (the
    # one-shot path on the same cells and step), up to the longer window's terms
    up = round_schedule(phases, upper=True, exact_values=64)
    same_grid = fast_epsilon_bounds(up, DELTA, step=FAST_STEP, lower=False, factor=1)[1]
    assert ours <= same_grid * (1 + 1e-5), (ours, same_grid)


#: dp_accounting 0.6.0's epsilon at interval 1e-4 of many distinct phases (a peer's
#: numbers, pinned: 5-6 s CPU each to rebuild): `dp_accounting_epsilon(phases, DELTA,
#: 1e-4, pessimistic)` of tests/sgm_oracles.py; the peer is asked live beside each at
#: 1e-3 (under 1 s), whose coarser grid is looser: lower when optimistic, higher when
#: pessimistic
PINNED_OPTIMISTIC_1E4 = 1.2142884838896364  # _random_phases(20, 15, 11)
PINNED_PESSIMISTIC_1E4 = {30: 0.9541466840680962}  # number of phases: _random_phases(30, 10, 7)


@pytest.mark.slow
def test_answer_at_or_above_dp_accountings_optimistic_pld():
    # a few hundred unrounded steps, an independent lower bound at a fine grid
    phases = _random_phases(20, 15, 11)
    live = dp_accounting_epsilon(phases, DELTA, 1e-3, pessimistic=False)
    assert live <= PINNED_OPTIMISTIC_1E4 <= _online(phases)


@pytest.mark.slow
@pytest.mark.parametrize(
    "phases",
    [_random_phases(30, 10, 7), [(1.0, 0.01, 2000)]],
    ids=["random phases", "constant sigma"],
)
def test_answer_within_1e4_of_dp_accountings_pessimistic_pld(phases):
    # tightness: the blocks' finer grid puts the online answer at dp_accounting's
    # pessimistic PLD at its fine 1e-4 interval (measured +0.7e-4 and -0.2e-4)
    ours = _online(phases)
    peer = PINNED_PESSIMISTIC_1E4.get(len(phases))
    if peer is None:  # one phase, self-composed: 0.4 s live
        peer = dp_accounting_epsilon(phases, DELTA, 1e-4, pessimistic=True)
    else:
        assert peer <= dp_accounting_epsilon(phases, DELTA, 1e-3, pessimistic=True)
    assert ours <= peer * (1 + 1e-4)


@settings(max_examples=8, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from([0.9, 1.1, 1.3, 2.0]), st.integers(1, 120)),
        min_size=1,
        max_size=12,
    ),
    cuts=st.lists(st.integers(0, 12), max_size=4),
)
def test_blocks_and_answer_do_not_depend_on_batching_or_queries(steps, cuts):
    phases = [(s, 0.01, k) for s, k in steps]
    once = IncrementalEpsilon(DELTA)
    once.fold(phases)
    batched = IncrementalEpsilon(DELTA)
    bounds = [*sorted(set(cuts)), len(phases)]
    start = 0
    for b in bounds:
        batched.fold(phases[start:b])
        batched.epsilon()  # a query between batches
        batched.epsilon([(0.7, 0.02, 50)])  # and a hypothetical one
        start = max(start, b)
    assert batched._blocks == once._blocks
    assert batched._pending == once._pending
    assert batched.epsilon() == once.epsilon()


def test_a_cell_of_several_steps_is_composed_at_their_dominating_step():
    # two sigmas in one grid cell: composed at the smaller sigma (and the larger q),
    # which lies between them and the cell's grid point
    inc = IncrementalEpsilon(DELTA)
    # no exact slot left (pairs, sigma values): values are rounded
    inc._exact_pairs = dict.fromkeys((float(k), 1.0) for k in range(rules.EXACT_STEPS))
    inc._exact_sigma = set(range(64))
    inc._exact_q = {0.01}
    w = math.log1p(inc.grid)
    node = math.exp(round(math.log(1.2) / w) * w)
    a, b = node * (1 + 2.0**-12), node * (1 + 2.0**-11)
    assert _round(a, 0.01, w, True) == _round(b, 0.01, w, True)
    inc.fold([(a, 0.01, 100), (b, 0.01, 100)])
    (members,) = inc._pending.values()
    assert set(members) == {(a, 0.01), (b, 0.01)}
    both = inc.epsilon()
    alone = IncrementalEpsilon(DELTA)
    alone.fold([(a, 0.01, 200)])  # every step at the smaller sigma, kept exact
    assert both == alone.epsilon()


def test_checkpoint_and_rollback_across_a_block_commit():
    n = BLOCK_STEPS
    inc = IncrementalEpsilon(DELTA)
    inc.fold([(1.1, 0.01, n - 5)])
    before = inc.epsilon()
    state = inc.checkpoint()
    inc.fold([(1.1, 0.01, 10)])  # commits a block
    assert len(inc._blocks) == 1
    after = inc.epsilon()
    assert after > before
    inc.rollback(state)
    assert inc._blocks == [] and inc.epsilon() == before
    inc.fold([(1.1, 0.01, 10)])
    assert inc.epsilon() == after
    fresh = IncrementalEpsilon(DELTA)
    fresh.fold([(1.1, 0.01, n + 5)])
    assert fresh.epsilon() == after


def test_lookahead_blocks_use_the_smaller_budget_and_only_raise_the_answer(monkeypatch):
    # a hypothetical query's blocks are composed at LOOKAHEAD_BUDGET: a coarser fine
    # grid is a coarsening of the finer one (connect-the-dots keeps each bin's masses),
    # so the answer is at or above the one at the fold's budget, and close to it
    assert _factor({(2.0, 0.01): 256}, FAST_STEP, inc_mod.LOOKAHEAD_BUDGET) <= 8
    assert _factor({(2.0, 0.01): 256}, FAST_STEP) > 8
    history = [(2.0 * 0.999**t, 0.01, 1) for t in range(700)]
    extra = [(1.7, 0.012, 900)]

    def asked(budget):
        monkeypatch.setattr(inc_mod, "LOOKAHEAD_BUDGET", budget)
        inc = IncrementalEpsilon(DELTA)
        inc.fold(history)
        return inc.epsilon(extra), inc.epsilon()

    cheap, kept = asked(8)
    fine, kept_too = asked(FINE_BUDGET)
    assert kept == kept_too  # what was asked never changes the kept answer
    assert fine * (1 - 1e-9) <= cheap <= fine * (1 + 1e-3)
    assert cheap > fine  # the budget is used: a coarser grid, a looser answer


@pytest.mark.parametrize(("sigma", "q", "steps"), [(2.0, 0.01, 3000), (0.8, 0.02, 1000)])
def test_one_phase_history_within_1e4_of_the_exact_route(sigma, q, steps):
    # one constant-sigma phase folded into the incremental history (the ledger answers
    # such a ledger as its composition since issue 36; the engine still must be close)
    inc = IncrementalEpsilon(DELTA)
    inc.fold([(sigma, q, steps)])
    online = inc.epsilon()
    low, exact = compose(
        [poisson_subsample(GaussianMechanism(sigma=sigma), q)], [steps]
    ).epsilon_bounds(DELTA)
    assert low <= online <= exact * (1 + 1e-4), (low, online, exact)


def test_a_history_beyond_kept_bytes_is_carried_to_longer_grids(monkeypatch):
    # with no block PMF kept every growth of the grid carries the composition as one
    # PMF, its l1 error counted: the answer is at or above the exact rebuild's, close
    # to it, and still a function of the steps alone.  The blocks' fine-grid budget is
    # pinned at 128 (session 18 made it 256): at 256 these 800 phases' first grid
    # already holds the whole history, so nothing would be carried
    monkeypatch.setattr(rules, "EXACT_BUDGET", 128)
    monkeypatch.setattr(rules, "EXACT_FACTOR", 1)  # session 19's floor of 8 a cell, off
    phases = _random_phases(800, 10, 7)
    exact = _online(phases)
    monkeypatch.setattr(direction_mod, "KEPT_BYTES", 0)
    # groups of two blocks: the first group is committed early, so the grid grows after
    monkeypatch.setattr(direction_mod, "GROUP_BLOCKS", 2)
    inc = IncrementalEpsilon(DELTA)
    inc.fold(phases)
    carried = inc.epsilon()
    assert inc.remove.kept is None and inc.remove.carried > 0.0
    assert exact <= carried <= exact * (1 + 1e-4)
    # asked after every 7 phases while the first blocks are cut (a block closes at 256
    # steps; a query before that picks the history's step from pending steps, which
    # must not stick), then after every 70: 21 queries, not 115 (the loop 9.3 -> 4.1
    # CPU s, session 33).  A query's step kept for good (``_use_step`` made to return
    # once it has run) fails both, 4.9731197 against 4.9729524
    again = IncrementalEpsilon(DELTA)
    cuts = [*range(0, 70, 7), *range(70, len(phases), 70)]
    for a, b in zip(cuts, [*cuts[1:], len(phases)], strict=True):
        again.fold(phases[a:b])
        again.epsilon()
    assert again.epsilon() == carried


@pytest.mark.parametrize(
    ("sigma", "q", "split"),
    [(1.0, 0.01, True), (3.0, 0.05, True), (4.0, 0.001, True), (20.0, 0.001, False)],
)
def test_a_one_cell_pending_block_is_queried_in_binary_pieces(sigma, q, split, monkeypatch):
    # the pending steps of a constant-sigma loop are composed in pieces of 2^j steps
    # (each coarsened once) while their extra coarsenings stay a small share of the
    # history's loss variance: at a power of two the same block as the fold's,
    # otherwise within 1e-4 of it (either side: the pieces' windows differ), inside the
    # exact composition's bracket; steps so small that a coarsening is a visible share
    # of their variance (sigma 20, q 0.001) are composed whole
    assert inc_mod._pieces({(sigma, q): 200}, 64, 1e-3, 1.0) == [
        ({(sigma, q): 128}, 64),
        ({(sigma, q): 64}, 64),
        ({(sigma, q): 8}, 64),
    ]
    assert inc_mod._pieces({(sigma, q): 3, (sigma, 2 * q): 4}, 64, 1e-3, 1.0) == [
        ({(sigma, q): 3, (sigma, 2 * q): 4}, 64)
    ]

    def answers(counts):
        inc = IncrementalEpsilon(DELTA)
        out = []
        done = 0
        for n in counts:
            inc.fold([(sigma, q, n - done)])
            done = n
            out.append(inc.epsilon())
        return out

    counts = [4 * BLOCK_STEPS + r for r in (64, 100, 200, 255)]
    pieces = answers(counts)
    monkeypatch.setattr(inc_mod, "_pieces", lambda items, budget, *_: [(items, budget)])
    whole = answers(counts)
    assert pieces[0] == whole[0]  # 64 pending steps: one piece, the same block
    assert (pieces[1:] != whole[1:]) == split
    for p, w, n in zip(pieces, whole, counts, strict=True):
        low, _ = compose(
            [poisson_subsample(GaussianMechanism(sigma=sigma), q)], [n]
        ).epsilon_bounds(DELTA)
        assert low <= p and abs(p / w - 1) <= 1e-4, (n, low, w, p)


@pytest.mark.slow
def test_ledger_bracket_contains_dp_accountings_pessimistic_pld_at_a_tenfold_finer_interval():
    # issue 37: 300 unrounded steps in 3 phases through the ledger; dp_accounting's
    # pessimistic PLD at interval 1e-5 (ten times finer than its default; an upper
    # bound of the truth up to its round-off) lies inside the ledger's certified
    # bracket, and its optimistic PLD (a lower bound) below the upper end
    phases = [(1.5, 0.01, 100), (1.3, 0.012, 100), (1.2, 0.015, 100)]
    acct = ledger(phases)
    lo, hi = acct.epsilon_bounds(DELTA)
    # dp_accounting 0.6.0 at interval 1e-5 costs about 15 s CPU (two PLDs of each phase
    # at 1e-5), so its values are pinned (a peer's numbers):
    # `dp_accounting_epsilon(phases, DELTA, 1e-5, pessimistic)` of tests/sgm_oracles.py
    # on these phases gave them; its default interval is computed live, and the pinned
    # pessimistic value must sit just below the live one (a finer grid is tighter)
    fine_hi = 0.8470683053615102
    fine_lo = 0.8455682850871834
    default_hi = dp_accounting_epsilon(phases, DELTA, 1e-4, pessimistic=True)
    assert fine_hi <= default_hi <= fine_hi * (1 + 1e-4)
    assert lo <= fine_hi <= hi, (lo, fine_hi, hi)
    assert lo <= hi and fine_lo <= hi
    assert hi <= default_hi * (1 + 1e-4)


def test_exact_blocks_bracket_the_exact_gdp_epsilon():
    """Issue 37, session 20: 300 steps of sigma 20 * 0.998^t at q 1; the first
    ``EXACT_STEPS`` (128) pairs, then ``EXACT_VALUES`` (64) sigmas, are each their own
    exact cell and make one block of 192 cells composed whole, the rest rounded.  With q = 1 the
    schedule is exactly mu-GDP, mu^2 = sum sigma_t^-2 (Dong, Roth & Su 2019, Corollary
    2.5), whose delta(eps) (their Corollary 2.13) is evaluated with mpmath and inverted
    by bisection; measured: the upper end +1.5e-5 relative (5.431662 against 5.431581)."""
    import mpmath as mp

    sigmas = [20.0 * 0.998**t for t in range(300)]
    mu = math.sqrt(sum(s**-2 for s in sigmas))

    def gdp_delta(eps: float) -> float:
        with mp.workdps(30):
            m, e = mp.mpf(mu), mp.mpf(eps)
            return float(mp.ncdf(-e / m + m / 2) - mp.exp(e) * mp.ncdf(-e / m - m / 2))

    lo_t, hi_t = 0.0, 50.0
    for _ in range(60):  # delta(eps) decreases in eps
        mid = 0.5 * (lo_t + hi_t)
        lo_t, hi_t = (mid, hi_t) if gdp_delta(mid) > DELTA else (lo_t, mid)
    truth = hi_t
    inc = IncrementalEpsilon(DELTA)
    inc.fold([(s, 1.0, 1) for s in sigmas])
    # the first block: the exact pairs and the next EXACT_VALUES sigmas kept exact
    assert len(inc._blocks[0][0]) > rules.EXACT_STEPS
    hi = inc.epsilon()
    assert truth * (1 - 1e-12) <= hi <= truth * (1 + 5e-5), (truth, hi)


def _reference_epsilons(phases, delta: float, grid: float) -> tuple[float, float]:
    """Lower and upper bounds on the remove direction's epsilon of ``phases`` (``(sigma,
    q, 1)`` each), composed independently of the ledger: every step's privacy loss
    ``L(x) = log(1 - q + q e^{(2x - 1) / (2 sigma^2)})``, ``x`` under ``P = (1 - q)
    N(0, sigma^2) + q N(1, sigma^2)``, increasing in ``x`` with the closed-form preimage
    ``x(a) = sigma^2 log((e^a - 1 + q) / q) + 1/2`` (Koskela et al. 2020, Section 6),
    binned on ``grid`` with each bin's P-mass put at its lower node (a lower bound; the
    mass beyond the last node is dropped) or at its upper node (an upper bound: the
    curve ``E_P (1 - e^{eps - L})_+`` rises in every step's loss; the mass beyond the
    last node goes to ``+inf``), composed by one circular FFT of numpy on a window of
    ``[-2, 24)`` loss units, far wider than the composed loss.  Each step's upper-node
    law is its lower-node law moved up one node, so the upper composition is the lower
    one moved up ``len(phases)`` nodes (a circular shift: the same numbers as composing
    it on its own, at half the cost)."""
    n = 1 << 19
    base = round(-2.0 / grid)  # the window's first node
    total = None
    finite = 1.0  # the composition's finite mass (up): the rest is at +inf
    for sigma, q, count in phases:
        assert count == 1
        x_max = 1.0 + 9.0 * sigma  # beyond: P-mass below 1e-19
        l_max = math.log1p(-q + q * math.exp((2 * x_max - 1) / (2 * sigma**2)))
        j = np.arange(math.floor(math.log1p(-q) / grid), math.ceil(l_max / grid) + 1)
        inner = np.expm1(j * grid) + q
        with np.errstate(divide="ignore", invalid="ignore"):
            x = np.where(inner > 0, sigma**2 * (np.log(inner) - math.log(q)) + 0.5, -np.inf)
        cdf = (1 - q) * special.ndtr(x / sigma) + q * special.ndtr((x - 1) / sigma)
        pmf = np.zeros(n)
        pmf[j[:-1] % n] = np.diff(cdf)  # P(a_j < L <= a_j+1), at the lower node a_j
        finite *= cdf[-1]
        spec = np.fft.rfft(pmf)
        total = spec if total is None else total * spec
    down = np.maximum(np.fft.irfft(total, n), 0.0)
    # the composed node of entry i: the one congruent to i mod n in the window
    losses = (base + (np.arange(n) - base) % n) * grid

    def epsilon(comp, inf: float) -> float:
        def curve(eps: float) -> float:
            return float(np.sum(comp * -np.expm1(np.minimum(eps - losses, 0.0)))) + inf

        lo, hi = 0.0, 20.0
        for _ in range(60):  # the curve decreases in eps
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if curve(mid) > delta else (lo, mid)
        return hi

    return epsilon(down, 0.0), epsilon(np.roll(down, len(phases)), 1.0 - finite)


@pytest.mark.slow
def test_ledger_blocks_sit_between_independent_fine_compositions_at_300_phases():
    """Issue 37, session 22: 300 distinct single steps (random sigma in [0.8, 2], q in
    [0.001, 0.02]) through the ledger's blocks (the first 128 exact cells, the rest
    rounded: four blocks composed on their fine grids, coarsened and in the group being
    filled, twelve steps pending) against the same
    steps composed by an independent numpy FFT on a 5e-5 grid, each bin rounded up
    (an upper bound) or down (a lower bound): the ledger's certified epsilon is at or
    above the lower composition, and its remove direction, which the blocks compose,
    at most the upper one: the references are 300 x 5e-5 = 0.015 apart, and the
    blocks' finer grid and the cells' rounding keep the ledger inside (measured
    1.245487 <= 1.252994 <= 1.260487)."""
    phases = [(s, q, 1) for s, q, _ in _random_phases(300, 1, 22)]
    inc = IncrementalEpsilon(DELTA)
    inc.fold(phases)
    ours = inc.epsilon()
    blocks, _ = inc._asked(())
    remove = float(inc.remove.pld(blocks).epsilon(DELTA))
    lower, upper = _reference_epsilons(phases, DELTA, 5e-5)
    assert len(inc._blocks) == 4 and inc._pending_steps == 12
    assert lower <= remove <= ours
    assert remove <= upper, (lower, remove, upper)
