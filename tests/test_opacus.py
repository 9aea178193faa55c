"""dpacct as Opacus' accountant (dpacct.opacus), in a real CPU training loop.

A two-layer MLP on scikit-learn's breast-cancer data is trained with Opacus 1.6's
``PrivacyEngine(accountant="dpacct")``: ``make_private_with_epsilon`` calibrates the
noise through dpacct (Opacus' bisection, ``get_noise_multiplier``, asks the registered
accountant), a ``StepNoise`` scheduler lowers the noise every few epochs, and the
optimiser hook records every step.  The epsilon the engine reports must equal dpacct's
own ledger of the (sigma, q) recorded by the loop, and lie at or below Opacus' PRV
accountant's upper bound plus its error and below Opacus' RDP accountant.
"""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from opacus import PrivacyEngine  # noqa: E402
from opacus.accountants import PRVAccountant, RDPAccountant, create_accountant  # noqa: E402
from opacus.accountants.utils import get_noise_multiplier  # noqa: E402
from opacus.schedulers import ExponentialNoise, StepNoise  # noqa: E402

from dpacct.accountant import (  # noqa: E402
    BudgetExceededError,
    PrivacyAccountant,
    compose,
    poisson_subsample,
)
from dpacct.mechanisms import GaussianMechanism  # noqa: E402
from dpacct.opacus import MECHANISM, OpacusAccountant  # noqa: E402

DELTA = 1e-5
TARGET = 3.0
EPOCHS = 24
#: StepNoise lowers the noise by GAMMA every STEP_EPOCHS epochs: four noise levels
STEP_EPOCHS = 6
GAMMA = 0.8
BATCH = 32
PRV_EPS_ERROR = 0.01

# torch's notice for a first layer whose inputs need no gradient (harmless here); the
# module trains a model with Opacus: slow
pytestmark = [
    pytest.mark.filterwarnings("ignore:Full backward hook:UserWarning"),
    pytest.mark.slow,
]


def _loader(cancer, batch_size: int = BATCH):
    Xtr, _, ytr, _, _, _ = cancer
    data = torch.utils.data.TensorDataset(
        torch.tensor(Xtr, dtype=torch.float32), torch.tensor(ytr, dtype=torch.float32)
    )
    return torch.utils.data.DataLoader(data, batch_size=batch_size)


def _mlp():
    return torch.nn.Sequential(torch.nn.Linear(30, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))


def _accuracy(model, X, y) -> float:
    with torch.no_grad():
        logits = model(torch.tensor(X, dtype=torch.float32)).squeeze(-1)
    return float(((logits > 0).numpy() == (y > 0.5)).mean())


@pytest.fixture(scope="module")
def trained(cancer):
    """One private training run; returns what the assertions need."""
    torch.manual_seed(0)
    model = _mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # secure_mode=False, per-sample hooks notices
        engine = PrivacyEngine(accountant=MECHANISM)
        model, optimizer, loader = engine.make_private_with_epsilon(
            module=model,
            optimizer=optimizer,
            data_loader=_loader(cancer),
            target_epsilon=TARGET,
            target_delta=DELTA,
            epochs=EPOCHS,
            max_grad_norm=1.0,
        )
    sigma0 = optimizer.noise_multiplier
    scheduler = StepNoise(optimizer, step_size=STEP_EPOCHS, gamma=GAMMA)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    recorded: list[tuple[float, float]] = []  # (sigma, q) of every step, seen by the loop
    q = 1.0 / len(loader)
    for _ in range(EPOCHS):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss_fn(model(xb).squeeze(-1), yb).backward()
            optimizer.step()
            recorded.append((float(optimizer.noise_multiplier), q))
        scheduler.step()
    _, Xte, _, yte, majority, _ = cancer
    return {
        "engine": engine,
        "model": model,
        "optimizer": optimizer,
        "sigma0": sigma0,
        "q": q,
        "steps_per_epoch": len(loader),
        "recorded": recorded,
        "accuracy": _accuracy(model, Xte, yte),
        "majority": majority,
    }


def test_engine_uses_the_dpacct_accountant(trained):
    engine = trained["engine"]
    assert isinstance(engine.accountant, OpacusAccountant)
    assert engine.accountant.mechanism() == "dpacct"
    assert isinstance(create_accountant(mechanism="dpacct"), OpacusAccountant)


def test_make_private_with_epsilon_calibrates_through_dpacct(trained):
    """Opacus' bisection (epsilon_tolerance 0.01) on dpacct's epsilon: the calibrated
    sigma meets the target by dpacct's sound bound, within the tolerance."""
    sigma0, q = trained["sigma0"], trained["q"]
    steps = int(EPOCHS / q)
    eps = compose([poisson_subsample(GaussianMechanism(sigma=sigma0), q)], [steps]).epsilon(DELTA)
    assert TARGET - 0.01 <= eps <= TARGET


def test_hook_records_every_step_and_the_schedule(trained):
    acct = trained["engine"].accountant
    recorded = trained["recorded"]
    assert len(acct) == len(recorded) == EPOCHS * trained["steps_per_epoch"]
    sigmas = [s for s, _, _ in acct.history]
    levels = EPOCHS // STEP_EPOCHS
    np.testing.assert_allclose(
        sigmas, [trained["sigma0"] * GAMMA**k for k in range(levels)], rtol=1e-12, atol=0
    )
    assert [n for _, _, n in acct.history] == [STEP_EPOCHS * trained["steps_per_epoch"]] * levels


def test_reported_epsilon_equals_an_independent_ledger(trained):
    engine = trained["engine"]
    reported = engine.get_epsilon(DELTA)
    ledger = PrivacyAccountant()
    for sigma, q in trained["recorded"]:
        ledger.step(noise_multiplier=sigma, sample_rate=q)
    assert reported == pytest.approx(ledger.epsilon(DELTA), rel=1e-12, abs=0)
    # and the direct composition of the distinct steps
    pairs: dict[tuple[float, float], int] = {}
    for pair in trained["recorded"]:
        pairs[pair] = pairs.get(pair, 0) + 1
    direct = compose(
        [poisson_subsample(GaussianMechanism(sigma=s), q) for s, q in pairs], list(pairs.values())
    ).epsilon(DELTA)
    assert reported == pytest.approx(direct, rel=1e-12, abs=0)
    # the noise went down after calibration, so the run spent more than the target
    assert reported > TARGET


def test_reported_epsilon_within_opacus_prv_and_below_rdp(trained):
    acct = trained["engine"].accountant
    ours = acct.get_epsilon(DELTA)
    lower, upper = acct.epsilon_bounds(DELTA)
    assert lower <= ours == upper
    prv = PRVAccountant()
    rdp = RDPAccountant()
    for sigma, q in trained["recorded"]:
        prv.step(noise_multiplier=sigma, sample_rate=q)
        rdp.step(noise_multiplier=sigma, sample_rate=q)
    prv_upper = prv.get_epsilon(DELTA, eps_error=PRV_EPS_ERROR)  # Opacus returns its upper end
    assert ours <= prv_upper + PRV_EPS_ERROR
    # the PRV estimate is within 2 eps_error of its upper end (Gopi et al. 2021, Thm 5.5)
    assert ours >= prv_upper - 2 * PRV_EPS_ERROR - 1e-9
    assert ours < rdp.get_epsilon(DELTA)


def test_private_model_learns(trained):
    assert trained["accuracy"] > trained["majority"] + 0.1


def test_checkpoint_round_trip(trained, tmp_path):
    engine = trained["engine"]
    path = tmp_path / "checkpoint.pt"
    engine.save_checkpoint(path=path, module=trained["model"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fresh = PrivacyEngine(accountant="dpacct")
    fresh.load_checkpoint(path=path, module=_wrap_like(trained["model"]))
    assert fresh.accountant.history == engine.accountant.history
    assert fresh.get_epsilon(DELTA) == pytest.approx(engine.get_epsilon(DELTA), rel=1e-12)


def _wrap_like(module):
    from opacus import GradSampleModule

    return GradSampleModule(_mlp()) if isinstance(module, GradSampleModule) else _mlp()


def test_privacy_filter_refuses_the_step_that_overspends(cancer):
    """A budgeted accountant stops training inside optimizer.step(): the noisy
    gradient is drawn but the parameters do not move and nothing is recorded."""
    torch.manual_seed(1)
    model = _mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = PrivacyEngine(accountant="dpacct")
        engine.accountant = OpacusAccountant(budget_epsilon=1.0, budget_delta=DELTA)
        model, optimizer, loader = engine.make_private(
            module=model,
            optimizer=optimizer,
            data_loader=_loader(cancer),
            noise_multiplier=1.0,
            max_grad_norm=1.0,
        )
    loss_fn = torch.nn.BCEWithLogitsLoss()
    refused = None
    for step in range(10_000):
        xb, yb = next(iter(loader))
        optimizer.zero_grad()
        loss_fn(model(xb).squeeze(-1), yb).backward()
        before = [p.detach().clone() for p in model.parameters()]
        try:
            optimizer.step()
        except BudgetExceededError as exc:
            refused = (step, exc)
            break
    assert refused is not None
    step, exc = refused
    assert len(engine.accountant) == step
    assert exc.epsilon > 1.0
    assert engine.get_epsilon(DELTA) <= 1.0
    for p, b in zip(model.parameters(), before, strict=True):
        assert torch.equal(p.detach(), b)


def test_noise_multiplier_search_and_exponential_schedule_without_training():
    """get_noise_multiplier(accountant="dpacct") and ExponentialNoise's schedule, fed
    through the optimiser hook of a stand-in optimiser."""
    sigma = get_noise_multiplier(
        target_epsilon=2.0, target_delta=DELTA, sample_rate=0.01, steps=2000, accountant="dpacct"
    )
    eps = compose([poisson_subsample(GaussianMechanism(sigma=sigma), 0.01)], [2000]).epsilon(DELTA)
    assert 2.0 - 0.01 <= eps <= 2.0

    class Optim:  # what the hook reads from a DPOptimizer
        noise_multiplier = sigma
        accumulated_iterations = 1

    # a hook wired by hand has no data loader to read: without it (or the explicit
    # override) no epsilon is claimed
    blind = OpacusAccountant()
    blind.get_optimizer_hook_fn(sample_rate=0.01)(Optim())
    with pytest.raises(ValueError, match="has not seen the data loader"):
        blind.get_epsilon(DELTA)
    acct = OpacusAccountant(assume_poisson=True)
    hook = acct.get_optimizer_hook_fn(sample_rate=0.01)
    assert acct.data_path.assumed and acct.data_path.scheme == "poisson"
    optim = Optim()
    scheduler = ExponentialNoise(optim, gamma=1.1)  # type: ignore[arg-type]
    for _ in range(5):
        for _ in range(400):
            hook(optim)
        scheduler.step()
    assert [n for _, _, n in acct.history] == [400] * 5
    np.testing.assert_allclose(
        [s for s, _, _ in acct.history], [sigma * 1.1**k for k in range(5)], rtol=1e-12
    )
    # more noise than calibrated: less than the target spent
    assert acct.get_epsilon(DELTA) < eps


def test_history_is_the_source_of_truth():
    acct = OpacusAccountant()
    acct.history = [(1.0, 0.01, 500), (2.0, 0.02, 100)]
    expected = compose(
        [
            poisson_subsample(GaussianMechanism(sigma=1.0), 0.01),
            poisson_subsample(GaussianMechanism(sigma=2.0), 0.02),
        ],
        [500, 100],
    ).epsilon(DELTA)
    assert acct.get_epsilon(DELTA) == pytest.approx(expected, rel=1e-12)
    assert len(acct) == 600
    acct.step(noise_multiplier=2.0, sample_rate=0.02)
    assert acct.history[-1] == (2.0, 0.02, 101)
    assert acct.ledger.steps == 601


def test_state_dict_layout_and_foreign_checkpoints():
    acct = OpacusAccountant()
    acct.step(noise_multiplier=1.0, sample_rate=0.1)
    state = acct.state_dict()
    assert dict(state) == {"history": [(1.0, 0.1, 1)], "mechanism": "dpacct"}
    # an RDP accountant's checkpoint records the same steps
    rdp = RDPAccountant()
    for _ in range(30):
        rdp.step(noise_multiplier=1.2, sample_rate=0.05)
    acct.load_state_dict(rdp.state_dict())
    assert acct.history == [(1.2, 0.05, 30)] and len(acct) == 30
    with pytest.raises(ValueError, match="mechanism 'other'"):
        acct.load_state_dict({"history": [], "mechanism": "other"})
    with pytest.raises(ValueError, match="no key 'history'"):
        acct.load_state_dict({"mechanism": "dpacct"})
    with pytest.raises(ValueError, match="empty"):
        acct.load_state_dict({})
    with pytest.raises(ValueError, match=r"state_dict\['history'\]\[0\]\.sample_rate"):
        acct.load_state_dict({"history": [(1.0, 1.5, 3)], "mechanism": "dpacct"})
    assert acct.history == [(1.2, 0.05, 30)]  # unchanged by the refused loads


def test_bad_input_names_the_parameter():
    acct = OpacusAccountant()
    with pytest.raises(ValueError, match="sample_rate"):
        acct.step(noise_multiplier=1.0, sample_rate=0.0)
    with pytest.raises(ValueError, match="noise_multiplier"):
        acct.step(noise_multiplier=-1.0, sample_rate=0.1)
    with pytest.raises(TypeError, match="noise_multiplier"):
        acct.step(noise_multiplier="1.0", sample_rate=0.1)
    with pytest.raises(ValueError, match="delta"):
        acct.get_epsilon(0.0)
    with pytest.raises(ValueError, match="budget"):
        OpacusAccountant(budget_epsilon=1.0)
    with pytest.raises(ValueError, match="sample_rate"):
        acct.get_optimizer_hook_fn(sample_rate=2.0)
    acct.history = [(1.0, 0.1)]
    with pytest.raises(ValueError, match=r"history\[0\] must be"):
        acct.get_epsilon(DELTA)
    assert acct.history == [(1.0, 0.1)]  # left for the user to fix


def test_non_private_steps_and_empty_accountant():
    acct = OpacusAccountant()
    assert acct.get_epsilon(DELTA) == 0.0 and len(acct) == 0
    acct.step(noise_multiplier=torch.tensor(1.0), sample_rate=np.float64(0.1))
    assert acct.history == [(1.0, 0.1, 1)]
    acct.step(noise_multiplier=0.0, sample_rate=0.1)
    assert acct.get_epsilon(DELTA) == math.inf and acct.get_delta(1.0) == 1.0
    filt = OpacusAccountant(budget_epsilon=5.0, budget_delta=DELTA)
    with pytest.raises(BudgetExceededError):
        filt.step(noise_multiplier=0.0, sample_rate=0.1)
    assert len(filt) == 0


def test_core_import_loads_no_extra_and_missing_extra_says_what_to_install():
    code = (
        "import sys, dpacct\n"
        "dpacct.compose, dpacct.PrivacyAccountant, dpacct.noise_multiplier\n"
        "bad = [m for m in ('torch', 'opacus', 'dp_accounting') if m in sys.modules]\n"
        "assert not bad, bad\n"
        "sys.modules['opacus'] = None  # as if not installed\n"
        "try:\n"
        "    import dpacct.opacus\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert 'pip install torch==2.13.0 "dpacct[opacus]"' in out
