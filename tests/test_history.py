"""The budgeted ledger's composed history (``dpacct.accountant.ledger.history``).

Expected values are independent of the code under test: the Gaussian closed form
(Balle & Wang 2018, Theorem 8) for a composition of Gaussians, dp_accounting's PLD
accountant for Poisson-subsampled Laplace records (an asymmetric pair), and the count
of convolutions a history of ``n`` blocks must make (``n - 1`` per direction that
differs).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracles import gaussian_epsilon

from dpacct.accountant import PrivacyAccountant, poisson_subsample
from dpacct.accountant.ledger import _FastHistory, _PLDHistory
from dpacct.accountant.ledger.records import Entry, classify
from dpacct.mechanisms import GaussianMechanism, LaplaceMechanism

DELTA = 1e-5
GRID = 2.0**-10


def _entry(mechanism, count=1):
    return Entry(mechanism, count, classify(mechanism))


def test_symmetric_blocks_keep_one_pld_and_one_convolution_per_block():
    history = _PLDHistory(DELTA, None, GRID, False)
    for b in (20.0, 21.0, 22.0, 23.0):
        history.fold([_entry(LaplaceMechanism(b=b))])
    # a Laplace mechanism has one loss law for both directions: one PLD, n - 1 = 3
    # convolutions for 4 blocks
    assert history.plds.symmetric and history.plds.add is None
    assert history.convolutions == 3
    # an asymmetric block (Poisson-subsampled Laplace): both directions from now on
    history.fold([_entry(poisson_subsample(LaplaceMechanism(b=1.0), 0.05), 3)])
    assert not history.plds.symmetric and history.plds.add is not None
    assert history.convolutions == 5


def test_epsilon_with_leaves_the_history_unchanged():
    history = _PLDHistory(DELTA, None, GRID, False)
    history.fold([_entry(LaplaceMechanism(b=5.0))])
    before = history.epsilon()
    plds = history.plds
    with_more = history.epsilon_with([_entry(LaplaceMechanism(b=5.0), 10)])
    assert history.plds is plds and history.blocks == 1
    assert history.epsilon() == before
    # ten more Laplace(5) releases add epsilon (pure bound: 11 / 5 at most in total)
    assert before < with_more <= 11 / 5 + 1e-9


def test_gaussian_blocks_bound_the_closed_form_from_above():
    sigmas = [3.0, 3.5, 4.0, 4.5, 5.0, 6.0]
    history = _PLDHistory(DELTA, None, GRID, False)
    for s in sigmas:
        history.fold([_entry(GaussianMechanism(sigma=s))])
    mu = math.sqrt(sum(1.0 / s**2 for s in sigmas))
    exact = gaussian_epsilon(mu, DELTA)
    eps = history.epsilon()
    # sound (the grid rounds sigma down, never up) and tight to the grid's 0.1 %
    assert exact <= eps <= exact * 1.01


def test_subsampled_laplace_history_agrees_with_dp_accounting():
    dp_accounting = pytest.importorskip("dp_accounting")
    pld = pytest.importorskip("dp_accounting.pld")
    scales = [1.0, 1.2, 1.4, 1.6]
    history = _PLDHistory(DELTA, None, GRID, False)
    for b in scales:
        history.fold([_entry(poisson_subsample(LaplaceMechanism(b=b), 0.05), 5)])
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    for b in scales:
        event = dp_accounting.PoissonSampledDpEvent(0.05, dp_accounting.LaplaceDpEvent(b))
        accountant.compose(event, 5)
    theirs = accountant.get_epsilon(DELTA)
    assert history.epsilon() == pytest.approx(theirs, rel=1e-2)


def test_budgeted_ledger_moves_from_the_fast_history_to_the_pld_history():
    acct = PrivacyAccountant(budget_epsilon=50.0, budget_delta=DELTA, progress=False)
    rng = np.random.default_rng(3)
    for s in 1.0 + rng.random(20):
        acct.step(noise_multiplier=float(s), sample_rate=0.01, count=10)
    assert isinstance(acct._history.now(), _FastHistory)
    steps_only = acct.epsilon(DELTA)
    acct.record(LaplaceMechanism(b=10.0))
    assert isinstance(acct._history.now(), _PLDHistory)
    # adding a release never lowers epsilon, and costs at most its pure epsilon 0.1
    after = acct.epsilon(DELTA)
    assert steps_only < after <= steps_only * 1.01 + 0.1


# --------------------------------------- the online route's fold (issue 37, session 22)
#: full-batch noise multipliers, and 17 distinct subsampled phases between them: 18
#: distinct records (the fold counts as one), so the ledger is routed "online"
FULL_BATCH = [float(s) for s in 9.0 * 0.998 ** np.arange(100)]
PHASES = [(1.0 + k / 30, 0.01, 10) for k in range(17)]


def _mixed(**kwargs) -> PrivacyAccountant:
    acct = PrivacyAccountant(progress=False, **kwargs)
    for t, s in enumerate(FULL_BATCH):
        acct.step(noise_multiplier=s, sample_rate=1.0)
        if t % 6 == 0:
            sigma, q, count = PHASES[t // 6]
            acct.step(noise_multiplier=sigma, sample_rate=q, count=count)
    return acct


def _folded_sigma_up() -> float:
    """``1 / sqrt(sum 1 / sigma^2)`` at 50 digits, rounded up to a float: a Gaussian
    dominated by the full-batch records' composition (Dong, Roth & Su 2022, Cor. 3.3)."""
    import mpmath as mp

    with mp.workdps(50):
        exact = 1 / mp.sqrt(mp.fsum(1 / mp.mpf(s) ** 2 for s in FULL_BATCH))
        out = float(exact)
        return out if out >= exact else math.nextafter(out, math.inf)


@pytest.mark.slow
def test_online_route_composes_the_full_batch_fold_as_one_gaussian(tmp_path):
    """The online route enters the full-batch records as one Gaussian: below main's
    composition of them as cells (the same incremental history fed every record as a
    step) and above the lower end of the exact composition of the subsampled steps
    with a Gaussian the records dominate (the engine's PLD bracket, another route)."""
    from dpacct.accountant import compose
    from dpacct.accountant.pld.incremental import IncrementalEpsilon

    acct = _mixed()
    assert acct.route == "online"
    dominated = compose(
        [poisson_subsample(GaussianMechanism(sigma=s), q) for s, q, _ in PHASES]
        + [GaussianMechanism(sigma=_folded_sigma_up())],
        [c for _, _, c in PHASES] + [1],
    )
    for delta in (1e-5, 1e-8):
        got = acct.epsilon(delta)
        cells = IncrementalEpsilon(delta)  # main: every full-batch step a cell
        cells.fold([e.step.phase(e.count) for e in acct._records.entries])
        main = cells.epsilon()
        lower = dominated.epsilon_bounds(delta)[0]
        assert lower <= got < main, (delta, lower, got, main)
    # a budgeted ledger's history (trials, rolled back or kept) answers the same
    budgeted = _mixed(budget_epsilon=1e3, budget_delta=1e-5)
    assert budgeted.epsilon(1e-5) == acct.epsilon(1e-5)
    # saved and reloaded (the fold rebuilt from the records at once): bit-equal
    path = tmp_path / "ledger.json"
    acct.save(path)
    back = PrivacyAccountant.load(path)
    for delta in (1e-5, 1e-8):
        assert back.epsilon(delta) == acct.epsilon(delta)
    assert back.delta(2.0) == acct.delta(2.0)


@pytest.mark.slow
def test_a_refused_trial_does_not_leave_the_mid_add_direction_off(tmp_path, monkeypatch):
    """``IncrementalEpsilon._no_mid`` (the mid add direction could not be made) is part
    of the checkpoint: a trial whose block the mid direction cannot fold, refused and
    rolled back, leaves the ledger as it was, so it answers bit-equal to its saved and
    reloaded copy and builds no fine add direction the copy does not (main: the flag
    survived the rollback; the original then composed the fine add direction on every
    later query).  The mid direction's failure (a window beyond FAST_MAX_N, rare) is
    forced on the refused step's block, and the coarse add direction declined, as in
    tests/test_incremental.py."""
    from dpacct.accountant import BudgetExceededError
    from dpacct.accountant.pld import incremental, online_direction

    mark = 0.37  # the refused step's noise multiplier
    fold = online_direction._Direction.fold

    def failing(self, items, budget):
        if getattr(self, "mid", False) and any(s == mark for s, _ in items):
            return False
        return fold(self, items, budget)

    commit = incremental.IncrementalEpsilon._commit

    def tagged(self, block, budget):
        if self.add_mid is not None:
            self.add_mid.mid = True
        return commit(self, block, budget)

    monkeypatch.setattr(online_direction._Direction, "fold", failing)
    monkeypatch.setattr(incremental.IncrementalEpsilon, "_commit", tagged)
    monkeypatch.setattr(
        incremental.IncrementalEpsilon, "_coarse_add_pld", lambda self, blocks, fit_only: None
    )
    acct = PrivacyAccountant(budget_epsilon=40.0, budget_delta=1e-6, progress=False)
    for k in range(20):
        acct.step(noise_multiplier=1.0 + k / 50, sample_rate=0.2, count=13)
    assert acct.route == "online"
    before = acct.epsilon(1e-6)
    inc = acct._history.current.inc
    assert inc.add_mid is not None and inc.add is None
    with pytest.raises(BudgetExceededError):
        acct.step(noise_multiplier=mark, sample_rate=0.2, count=300)
    inc = acct._history.current.inc
    assert not inc._no_mid and inc.add_mid is not None
    path = tmp_path / "ledger.json"
    acct.save(path)
    back = PrivacyAccountant.load(path)
    for delta in (1e-6, 1e-7):
        assert back.epsilon(delta) == acct.epsilon(delta)
    assert acct.epsilon(1e-6) == before
    assert acct._history.current.inc.add is None  # no fine add direction composed
