"""Pass starts of whole-pass Opacus runs (dpacct._opacus_passes): a run resumed mid-pass.

A restored loader starts a fresh pass, so a run checkpointed and resumed mid-pass has
more, shorter passes than its history's ``ceil(batches / T)``; a record can then be in
one batch of each.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from opacus_runs import make_private, toy_data  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from dpacct._opacus_data_path import DataPath, shuffled_mu2  # noqa: E402
from dpacct._opacus_passes import PassLog  # noqa: E402
from dpacct.accountant import compose, poisson_subsample  # noqa: E402
from dpacct.mechanisms import GaussianMechanism  # noqa: E402
from dpacct.opacus import MECHANISM, OpacusAccountant  # noqa: E402

N, DELTA = 120, 1e-5
SHUFFLE = DataPath("shuffle", "RandomSampler", 10, 0.1, 12)


def _shuffled_run(seed: int, sigma: float, steps: int):
    loader = DataLoader(toy_data(N), batch_size=N // steps, shuffle=True,
                        generator=torch.Generator().manual_seed(seed))  # fmt: skip
    return make_private(loader, sigma)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_shuffled_run_resumed_mid_pass_is_accounted_per_pass():
    # preempted after every step: each one-step chunk is the first batch of a fresh
    # shuffle, which holds a given record with probability 1/T independently of the
    # other chunks; with the other records' gradients zero, the run IS T Poisson steps
    # at rate 1/T (zero-out = both directions of add/remove), so the lower end of their
    # PLD bracket is a floor for the truth.  On main: 9.997 (one shuffled epoch) < 12.26.
    sigma, steps = 0.5, 10
    state = None
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for r in range(steps):
        engine, model, opt, loader = _shuffled_run(r, sigma, steps)
        if state is not None:
            engine.accountant.load_state_dict(state)
        for xb, yb in loader:
            loss_fn(model(xb).squeeze(-1), yb).backward()
            opt.step()
            opt.zero_grad()
            break
        state = engine.accountant.state_dict()
    truth_at_least = compose([poisson_subsample(GaussianMechanism(sigma), 1 / steps)],
                             counts=[steps]).epsilon_bounds(DELTA)[0]
    assert truth_at_least > 12.0
    assert engine.get_epsilon(DELTA) >= truth_at_least
    assert state["pass_starts"] == list(range(steps))


def _legacy(total: int) -> dict:
    return {"mechanism": MECHANISM, "history": [(1.0, 0.1, total)],
            "data_path": SHUFFLE.as_dict()}


def test_a_checkpoint_without_pass_starts_must_hold_whole_passes():
    with pytest.raises(ValueError, match="not a whole number of passes"):
        OpacusAccountant().load_state_dict(_legacy(15))
    acct = OpacusAccountant()
    acct.load_state_dict(_legacy(20))  # saved at an epoch's end: two whole passes
    assert len(acct) == 20
    # saved again, the first batch's pass start is written (an empty log is refused)
    state = acct.state_dict()
    assert state["pass_starts"] == [0]
    again = OpacusAccountant()
    again.load_state_dict(state)
    assert again.get_epsilon(DELTA) == acct.get_epsilon(DELTA)


@pytest.mark.parametrize("starts", [[-1, 3], [0, 0], [3, 1], [0, 20], [0.5], [[0]], []])
def test_forged_pass_starts_are_refused(starts):
    acct = OpacusAccountant()
    with pytest.raises(ValueError, match="pass_starts"):
        acct.load_state_dict({**_legacy(20), "pass_starts": starts})
    assert len(acct) == 0  # nothing changed


def test_pass_starts_fill_stretches_longer_than_an_epoch():
    log = PassLog()
    log.load({"pass_starts": [0, 3, 25]}, 30, 10)
    # [0, 3) one pass; [3, 25) is 22 batches: at least three passes; [25, 30) one
    assert log.starts(30, 10).tolist() == [0, 3, 13, 23, 25]
    assert log.epochs(30, 10) == (5, 2)


def _brute_mu2(sigmas, starts, total):
    """Max over placements of one record (at most one batch per pass) of
    sum_j (n_j / sigma_j)^2, one batch per step."""
    bounds = [*starts, total]
    passes = [range(a, b) for a, b in itertools.pairwise(bounds)]
    best = 0.0
    for choice in itertools.product(*[[None, *p] for p in passes]):
        n = np.zeros(total)
        for c in choice:
            if c is not None:
                n[c] += 1
        best = max(best, float(np.sum((n / sigmas) ** 2)))
    return best


def test_shuffled_mu2_with_pass_starts_bounds_every_placement():
    rng = np.random.default_rng(3)
    sigmas = rng.uniform(0.5, 2.0, size=7)
    starts = np.array([0, 2, 3, 6])
    got = shuffled_mu2(sigmas, np.ones(7, dtype=int), 4, starts)
    assert got == pytest.approx(_brute_mu2(sigmas, starts, 7), rel=1e-12, abs=0)
