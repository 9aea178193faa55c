"""Schedules that change at every step: rounding, brackets, incremental and adaptive filters.

References used here are independent of the rounding: the closed form of composed
Gaussians (q = 1: noise multipliers combine exactly, 1/sigma_eff^2 = sum 1/sigma_i^2)
and dp_accounting's optimistic PLD (a lower oracle) for a small subsampled schedule.
No wall-clock assertions: cost is checked by counting convolutions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from ledgers import ledger
from sgm_oracles import dp_accounting_epsilon

from dpacct.accountant import BudgetExceededError, PrivacyAccountant
from dpacct.accountant import ledger as ledger_module
from dpacct.accountant.pld.schedule import (
    round_schedule,
    round_step,
    schedule_mechanism,
)
from dpacct.mechanisms import GaussianMechanism

DELTA = 1e-5


def test_rounding_directions_and_grid_points():
    rng = np.random.default_rng(1)
    for sigma, q in zip(rng.uniform(0.3, 5, 200), rng.uniform(1e-4, 1, 200), strict=True):
        su, qu = round_step(float(sigma), float(q), 2**-9)
        sl, ql = round_step(float(sigma), float(q), 2**-9, upper=False)
        assert su <= sigma <= sl and ql <= q <= qu <= 1.0
        assert sl / su <= (1 + 2**-9) * (1 + 1e-12) and qu / ql <= (1 + 2**-9) * (1 + 1e-12)
    # a value on the grid stays put, so a re-rounded schedule is unchanged
    su, qu = round_step(1.3, 0.01, 2**-9)
    assert round_step(su, qu, 2**-9) == (su, qu)


def test_rounding_rejects_bad_input():
    with pytest.raises(ValueError, match="grid"):
        round_step(1.0, 0.01, grid=0.7)
    with pytest.raises(ValueError, match="noise_multiplier"):
        round_step(-1.0, 0.01)
    with pytest.raises(ValueError, match="sample_rate"):
        round_step(1.0, 1.5)
    with pytest.raises(TypeError, match="triple"):
        round_schedule([(1.0, 0.01)])
    with pytest.raises(ValueError, match="count"):
        round_schedule([(1.0, 0.01, 0)])


def test_q1_schedule_brackets_the_closed_form():
    # full-batch Gaussians compose exactly: an independent reference
    sigmas = [1.0 * 0.99**t for t in range(300)]
    exact = GaussianMechanism(sigma=sum(s**-2 for s in sigmas) ** -0.5).epsilon(DELTA)
    steps = [(s, 1.0, 1) for s in sigmas]
    up = schedule_mechanism(round_schedule(steps, 2**-8, upper=True), progress=False)
    lo = schedule_mechanism(round_schedule(steps, 2**-8, upper=False), progress=False)
    upper, lower = up.epsilon(DELTA), lo.epsilon_bounds(DELTA)[0]
    assert lower <= exact <= upper
    assert upper <= exact * (1 + 4 * 2**-8)


@pytest.mark.parametrize(
    ("phases", "error", "match"),
    [
        ([(1.0, 0.01, 2.5)], TypeError, r"phases\[0\] count must be an integer"),
        ([(1.0, 0.01, 5), (1.0, 0.01, -1)], ValueError, r"phases\[1\] count must be"),
        ([(1.0, 0.01, 0)], ValueError, r"phases\[0\] count must be an integer >= 1"),
        ([(1.0, 1.5, 3)], ValueError, r"phases\[0\] sample_rate"),
    ],
)
def test_schedule_mechanism_refuses_bad_phases_by_name(phases, error, match):
    """Main truncated a count of 2.5 to 2 and composed a count of -1 or 0 (a weaker
    claim than the steps run); every phase is now checked, both paths."""
    from dpacct.accountant.pld import schedule

    for build in (schedule_mechanism, getattr(schedule, "schedule_reference", None)):
        if build is not None:
            with pytest.raises(error, match=match):
                build(phases, progress=False)


def test_constant_unit_phases_are_the_one_mechanism_route():
    """Issue 37: a constant schedule given step by step is answered as one mechanism
    composed ``T`` times (the engine's one-mechanism route, :func:`compose` of the
    subsampled Gaussian with a count), bracket and all.  Main composed the 300 phases in
    chunks and a tree of convolutions: 0.8576832 against 0.8576632, in 8.2 s CPU against
    0.07 s."""
    from dpacct.accountant import compose, poisson_subsample

    one = compose([poisson_subsample(GaussianMechanism(sigma=1.1), 0.01)], counts=[300])
    run = schedule_mechanism([(1.1, 0.01, 1)] * 300, progress=False)
    assert run.epsilon(DELTA) == one.epsilon(DELTA)
    assert tuple(run.epsilon_bounds(DELTA)) == tuple(one.epsilon_bounds(DELTA))


@pytest.mark.slow
def test_subsampled_schedule_brackets_independent_oracles():
    rng = np.random.default_rng(7)
    steps = [
        (float(s), float(q), 20)
        for s, q in zip(rng.uniform(0.9, 1.6, 24), rng.uniform(0.005, 0.02, 24), strict=True)
    ]
    acct = ledger(steps)
    assert len(acct.entries) > ledger_module.EXACT_PHASES  # the rounded route
    lower, upper = acct.epsilon_bounds(DELTA)
    # dp_accounting, optimistic (a lower estimate of the truth) must not exceed our upper:
    # dp_accounting 0.6.0's value at interval 1e-4, pinned (a peer's number, 6.5 s CPU to
    # rebuild by `dp_accounting_epsilon(steps, DELTA, 1e-4, pessimistic=False)` of
    # tests/sgm_oracles.py); asked live at 1e-3 (0.8 s), whose coarser grid is lower
    optimistic = 1.3268567768894513
    assert dp_accounting_epsilon(steps, DELTA, 1e-3, pessimistic=False) <= optimistic
    assert optimistic <= upper
    # and the exact per-step composition (no rounding) lies inside our bracket
    from dpacct.accountant import compose

    exact = compose([m for m, _ in acct.entries], [c for _, c in acct.entries])
    lo_exact, hi_exact = exact.epsilon_bounds(DELTA)
    assert lower <= hi_exact and lo_exact <= upper
    assert upper / lower - 1 < 0.02


def _decaying_filter(budget: float = 2.0, **kwargs):
    return PrivacyAccountant(budget_epsilon=budget, budget_delta=DELTA, progress=False, **kwargs)


def test_filter_refuses_before_crossing_and_leaves_the_ledger_unchanged():
    # budget 1: refused at step 139 (budget 2: 190, 2.2x the CPU with the exact
    # composition below); a filter admitting up to 1.05x its budget is caught here (the
    # prefix it keeps composes to 1.038 exactly)
    budget = 1.0
    acct = _decaying_filter(budget=budget)
    n = 0
    with pytest.raises(BudgetExceededError) as info:
        while True:
            acct.step(noise_multiplier=2.0 * 0.995**n, sample_rate=0.02)
            n += 1
    assert n > ledger_module.EXACT_PHASES  # the incremental route was used
    entries, steps = acct.entries, acct.steps
    assert steps == n and info.value.epsilon > budget
    # the recorded prefix is within budget by an independent route (exact composition)
    from dpacct.accountant import compose

    exact = compose([m for m, _ in entries], [c for _, c in entries])
    assert exact.epsilon(DELTA) <= budget
    assert acct.epsilon(DELTA) <= budget
    # refused again: nothing changes
    with pytest.raises(BudgetExceededError):
        acct.step(noise_multiplier=2.0 * 0.995**n, sample_rate=0.02)
    assert acct.entries == entries and acct.steps == steps


@pytest.mark.slow
def test_filter_check_is_incremental_on_the_engine_route(monkeypatch):
    # the engine's route (forced here: the fast path declines): count the engine's
    # compositions of history blocks: O(changes of the look-ahead cell + log n), never
    # one recomposition per step
    monkeypatch.setattr(ledger_module._FastHistory, "fold", lambda self, parts: False)
    # budget 1: refused at step 352 with 34 blocks (budget 2: step 688, 45 blocks, twice
    # the CPU).  Mutant caught: filters.py's `self.lookahead = 4` after an admitted
    # online trial (PLDFilter._admit_incremental) set to 1 composes 102 blocks > 352 / 4
    # here and fails (at budget 2 it passes: 146 < 688 / 4).  Not caught at either
    # budget: the look-ahead kept at 1 in _admit_exact and _grant (63 and 69 blocks)
    acct = _decaying_filter(budget=1.0)
    blocks = []
    real = ledger_module._PLDHistory._block

    def counting(self, parts):
        blocks.append(len(parts))
        return real(self, parts)

    monkeypatch.setattr(ledger_module._PLDHistory, "_block", counting)
    n = 0
    with pytest.raises(BudgetExceededError):
        while True:
            acct.step(noise_multiplier=2.0 * 0.999**n, sample_rate=0.02)
            n += 1
    assert n > 200
    assert len(blocks) < n / 4
    # no block ever recomposes the history: a folded block holds only the steps
    # recorded since the last fold, a look-ahead block one (dominating) step
    assert sum(blocks) <= n + len(blocks)
    assert acct.evaluations <= 2 * len(blocks)


def test_filter_check_is_incremental_on_the_fast_path(monkeypatch):
    # DP-SGD steps only: the fast history multiplies spectra; every cell is
    # transformed once per grid size, and a check is one inverse FFT per direction
    acct = _decaying_filter()
    folds, checks = [], []
    real_fold, real_with = ledger_module._FastHistory.fold, ledger_module._FastHistory.epsilon_with

    def fold(self, parts):
        folds.append(len(parts))
        return real_fold(self, parts)

    def epsilon_with(self, parts, fit_only=False):
        checks.append(len(parts))
        return real_with(self, parts, fit_only)

    monkeypatch.setattr(ledger_module._FastHistory, "fold", fold)
    monkeypatch.setattr(ledger_module._FastHistory, "epsilon_with", epsilon_with)
    n = 0
    with pytest.raises(BudgetExceededError):
        while True:
            acct.step(noise_multiplier=2.0 * 0.999**n, sample_rate=0.02)
            n += 1
    assert n > 200
    assert len(checks) < n / 4
    # each step folded once, never the history again; the refused step once more, in
    # its trial (folded, then rolled back: since the full-batch fold went in, a trial
    # folds through _FastHistory.fold, which this counts, not through inc.fold)
    assert sum(folds) <= n + 1
    assert isinstance(acct._history.current, ledger_module._FastHistory)
    inc = acct._history.current.inc
    assert acct.evaluations <= 2 * (len(checks) + len(folds))
    # forward transforms on the history's grid: one per committed block, one per
    # query for its pending block, and the rare re-sizes (each re-transforms the blocks)
    blocks = len(inc.remove.blocks) + inc.remove.inverse
    assert inc.remove.forward <= blocks * 8


def test_adaptive_filter_is_an_rdp_filter():
    acct = _decaying_filter(adaptive=True)
    n = 0
    with pytest.raises(BudgetExceededError, match="Renyi"):
        while True:
            acct.step(noise_multiplier=2.0 * 0.995**n, sample_rate=0.02)
            n += 1
    alpha = acct.adaptive_order
    assert alpha is not None and alpha > 1
    # summed RDP at the fixed order converts to at most the budget (CKS 2020, Prop. 12)
    total = sum(c * float(m.rdp(alpha)) for m, c in acct.entries)
    eps = total + math.log1p(-1 / alpha) - (math.log(DELTA) + math.log(alpha)) / (alpha - 1)
    assert eps <= 2.0
    with pytest.raises(ValueError, match="budget"):
        PrivacyAccountant(adaptive=True)
    with pytest.raises(TypeError, match="adaptive"):
        PrivacyAccountant(budget_epsilon=1.0, budget_delta=DELTA, adaptive=1)
    with pytest.raises(ValueError, match="adaptive_order"):
        PrivacyAccountant(budget_epsilon=1.0, budget_delta=DELTA, adaptive=True, adaptive_order=1.0)


def test_options_survive_save_and_load(tmp_path):
    acct = _decaying_filter(adaptive=True, grid=2**-8)
    for t in range(30):
        acct.step(noise_multiplier=3.0 * 0.99**t, sample_rate=0.01)
    path = tmp_path / "ledger.json"
    acct.save(path)
    back = PrivacyAccountant.load(path)
    assert back.adaptive and back.grid == 2**-8 and back.adaptive_order == acct.adaptive_order
    assert back.entries == acct.entries
    assert math.isclose(back._filter.spent, acct._filter.spent, rel_tol=1e-12)
