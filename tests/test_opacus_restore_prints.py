"""The repeated-pass check across a checkpoint restore (dpacct._opacus_watch, pass_prints).

The watch refuses a pass whose batch repeats the batch at its place in the first (or the
previous) pass where fresh draws would repeat it with probability below 1e-12: the
sampler's draws are not fresh, and repeated draws of one batch are one step at less
noise, not independent steps.  Those fingerprints used to live only in the watch, so a
run restored from a checkpoint and restarted with the seed it began with repeated its
first pass unseen and was accounted as fresh epochs (an epsilon below the truth).  They
are now saved in the accountant's ``state_dict`` (``pass_prints``) and restored.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from opacus import PrivacyEngine  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from dpacct._opacus_data_path import DataPath  # noqa: E402
from dpacct.opacus import (  # noqa: E402
    MECHANISM,
    OpacusAccountant,
    RandomAllocationBatchSampler,
    UnaccountedSamplerError,
)

N, STEPS, DELTA = 120, 10, 1e-5
POISSON = DataPath("poisson", "UniformWithReplacementSampler", STEPS, 1 / STEPS)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _data() -> TensorDataset:
    x = torch.randn(N, 4, generator=torch.Generator().manual_seed(0))
    return TensorDataset(x, (x[:, 0] > 0).float())


def _private(engine: PrivacyEngine, loader: DataLoader, poisson: bool, sigma: float = 1.0):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return engine.make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.5),
            data_loader=loader, noise_multiplier=sigma, max_grad_norm=1.0,
            poisson_sampling=poisson,
        )  # fmt: skip


def _train(model, opt, loader, steps: int) -> int:
    """Up to ``steps`` optimiser steps over ``loader`` (passes as needed); steps run."""
    loss_fn, done = torch.nn.BCEWithLogitsLoss(), 0
    while done < steps:
        for xb, yb in loader:
            loss_fn(model(xb).squeeze(-1), yb).backward()
            opt.step()
            opt.zero_grad()
            done += 1
            if done == steps:
                break
    return done


@pytest.mark.parametrize("run_steps", [STEPS + 3, 4])  # mid-second pass, mid-first pass
def test_poisson_run_restored_with_its_first_seed_is_refused(run_steps):
    # Opacus' Poisson loader draws from torch's global generator: seeding it again after
    # the restore draws the first pass again.  On 93be0d0 the restored run trains on and
    # its repeated batches are accounted as fresh Poisson steps.
    engine = PrivacyEngine(accountant=MECHANISM)
    model, opt, loader = _private(engine, DataLoader(_data(), batch_size=N // STEPS), True)
    torch.manual_seed(11)
    _train(model, opt, loader, run_steps)
    state = engine.accountant.state_dict()

    engine = PrivacyEngine(accountant=MECHANISM)
    model, opt, loader = _private(engine, DataLoader(_data(), batch_size=N // STEPS), True)
    engine.accountant.load_state_dict(state)  # Opacus' load_checkpoint: after make_private
    torch.manual_seed(11)  # the run's seed, set again by the restarted script
    with pytest.raises(UnaccountedSamplerError, match=r"batch 1 of pass 1 .* first pass"):
        _train(model, opt, loader, 1)
    assert len(engine.accountant) == run_steps  # the repeated step was not recorded


def _allocation_loader(seed: int) -> DataLoader:
    sampler = RandomAllocationBatchSampler(N, STEPS, k=2,
                                           generator=torch.Generator().manual_seed(seed))
    return DataLoader(_data(), batch_sampler=sampler)


def test_allocation_run_restored_from_a_checkpoint_file_with_its_seed_is_refused(tmp_path):
    # A k-of-T allocation's batch j holds each record with probability k/T independently:
    # a repeat of one of ~24 of 120 records has chance ~1e-24 under fresh draws.
    engine = PrivacyEngine(accountant=MECHANISM)
    model, opt, loader = _private(engine, _allocation_loader(5), False)
    _train(model, opt, loader, 2 * STEPS)  # two whole passes
    path = tmp_path / "ckpt.pt"
    engine.save_checkpoint(path=path, module=model, optimizer=opt)

    def restored(seed: int):
        engine = PrivacyEngine(accountant=MECHANISM)
        model, opt, loader = _private(engine, _allocation_loader(seed), False)
        engine.load_checkpoint(path=path, module=model, optimizer=opt)
        return engine, model, opt, loader

    engine, model, opt, loader = restored(5)  # the same seed: the first pass again
    with pytest.raises(UnaccountedSamplerError, match="first pass"):
        _train(model, opt, loader, 1)
    assert len(engine.accountant) == 2 * STEPS
    # a fresh seed is not refused (the check does not fire on fresh draws)
    engine, model, opt, loader = restored(6)
    assert _train(model, opt, loader, STEPS) == STEPS
    assert np.isfinite(engine.get_epsilon(DELTA))


def test_allocation_jobs_restarted_from_their_seed_are_refused_or_accounted():
    # Four one-epoch jobs, each restored from the last checkpoint and restarted with the
    # seed the run began with: the same allocation S every epoch, so summing each step's
    # outputs over the epochs is a sufficient statistic and the run IS one k-of-T epoch
    # at sigma / sqrt(4); its certified lower bound is a floor for the truth.
    import math

    from dpacct.accountant.transformers.random_allocation_lower import (
        random_allocation_lower_epsilon,
    )

    sigma, jobs, state, eps = 1.5, 4, None, None
    try:
        for _ in range(jobs):
            engine = PrivacyEngine(accountant=MECHANISM)
            model, opt, loader = _private(engine, _allocation_loader(5), False, sigma)
            if state is not None:
                engine.accountant.load_state_dict(state)
            _train(model, opt, loader, STEPS)
            state = engine.accountant.state_dict()
        eps = engine.get_epsilon(DELTA)
    except UnaccountedSamplerError:
        return  # refused in the second job: sound
    truth_at_least = random_allocation_lower_epsilon(sigma / math.sqrt(jobs), STEPS, DELTA,
                                                     k=2)
    # on 93be0d0: 4.087 printed (four fresh epochs), the truth is at least 5.699
    assert eps >= truth_at_least


@pytest.mark.parametrize("poisson", [False, True])
def test_prints_restored_before_make_private_reach_the_watch(poisson):
    # Poisson: make_private watches the given loader, then the one it returns; the
    # restored fingerprints must reach the watch of the loader the run iterates
    def loader():
        return DataLoader(_data(), batch_size=N // STEPS) if poisson else _allocation_loader(5)

    engine = PrivacyEngine(accountant=MECHANISM)
    model, opt, run = _private(engine, loader(), poisson)
    torch.manual_seed(11)
    _train(model, opt, run, 3)  # a mid-pass checkpoint
    state = engine.accountant.state_dict()
    engine = PrivacyEngine(accountant=MECHANISM)
    engine.accountant.load_state_dict(state)  # restored first, then make_private
    model, opt, run = _private(engine, loader(), poisson)
    torch.manual_seed(11)
    with pytest.raises(UnaccountedSamplerError, match="first pass"):
        _train(model, opt, run, 1)
    fresh = OpacusAccountant()
    fresh.load_state_dict(state)
    assert fresh.state_dict()["pass_prints"] == state["pass_prints"]  # kept unwatched
    assert len(state["pass_prints"]["first"]) == STEPS


def _poisson_state(**extra) -> dict:
    return {"mechanism": MECHANISM, "history": [(1.0, 0.1, 20)],
            "data_path": POISSON.as_dict(), "pass_starts": [], **extra}


@pytest.mark.parametrize(
    "prints",
    [
        [1] * STEPS,  # not a mapping
        {"first": [None] * STEPS},  # a key missing
        {"first": [None] * STEPS, "previous": [None] * STEPS, "extra": []},
        {"first": [None] * (STEPS - 1), "previous": [None] * STEPS},  # a length
        {"first": [1.0] + [None] * (STEPS - 1), "previous": [None] * STEPS},
        {"first": [True] + [None] * (STEPS - 1), "previous": [None] * STEPS},
        {"first": ["7"] + [None] * (STEPS - 1), "previous": [None] * STEPS},
        {"first": [2**63] + [None] * (STEPS - 1), "previous": [None] * STEPS},
        {"first": [None] * STEPS, "previous": "0" * STEPS},
    ],
)
def test_forged_pass_prints_are_refused_and_nothing_changes(prints):
    acct = OpacusAccountant()
    with pytest.raises(ValueError, match="pass_prints"):
        acct.load_state_dict(_poisson_state(pass_prints=prints))
    assert len(acct) == 0 and acct.data_path is None


def test_pass_prints_for_a_scheme_without_the_check_are_refused():
    shuffle = DataPath("shuffle", "RandomSampler", STEPS, 0.1, 12)
    state = {**_poisson_state(), "data_path": shuffle.as_dict(),
             "pass_prints": {"first": [None] * STEPS, "previous": [None] * STEPS}}
    with pytest.raises(ValueError, match="no repeated-pass check"):
        OpacusAccountant().load_state_dict(state)


def test_a_checkpoint_without_pass_prints_still_loads():
    acct = OpacusAccountant()
    acct.load_state_dict(_poisson_state())
    assert len(acct) == 20 and "pass_prints" not in acct.state_dict()
    acct.load_state_dict(_poisson_state(pass_prints={"first": [-(2**63)] + [None] * 9,
                                                     "previous": [2**63 - 1] + [None] * 9}))
    assert acct.state_dict()["pass_prints"]["first"][0] == -(2**63)


def test_fingerprints_do_not_depend_on_the_process():
    # Python's hash of bytes is salted per process (PYTHONHASHSEED): a fingerprint
    # saved by one process must be what the restoring process computes
    code = ("import numpy as np; from dpacct._opacus_watch import fingerprint; "
            "print(fingerprint(np.array([9, 2, 40, 7])))")
    outs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        for seed in ("1", "2")
    }
    assert len(outs) == 1
