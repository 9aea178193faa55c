"""Which rate an Opacus run's ledger records (dpacct._opacus_rates): the data path's.

Issue 35: with Opacus' own Poisson sampler given as a batch sampler and
``poisson_sampling=False``, the hook passes ``1 / len(loader)`` (0.05) while the
batches are drawn at the sampler's rate (0.5); the ledger recorded 0.05.  These tests
pin the rule (the sampler's rate is recorded, Opacus' number only compared) and check
that Opacus' noise-multiplier search calibrates for the rate that runs; the expected
epsilon is dp_accounting's PLD, not dpacct's.
"""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")
dpa = pytest.importorskip("dp_accounting")

from opacus import PrivacyEngine  # noqa: E402
from opacus.utils.uniform_sampler import UniformWithReplacementSampler  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from dpacct._opacus_data_path import DataPath  # noqa: E402
from dpacct._opacus_rates import (  # noqa: E402
    check_history,
    check_step,
    hook_rate,
    normaliser_note,
    rate_note,
    resolve_history,
    step_rate,
)
from dpacct.opacus import MECHANISM, OpacusAccountant  # noqa: E402

N = 240
DELTA = 1e-5
POISSON = DataPath("poisson", "UniformWithReplacementSampler", 20, 0.5)
ASSUMED = DataPath("poisson", "WeightedRandomSampler", 10, 0.1, None, True)
SHUFFLE = DataPath("shuffle", "RandomSampler", 10, 0.1, 24)


def _pld(q: float, sigma: float, steps: int) -> float:
    event = dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma))
    acct = dpa.pld.PLDAccountant(value_discretization_interval=1e-4)
    return acct.compose(event, steps).get_epsilon(DELTA)


def test_the_hook_records_the_identified_rate():
    assert hook_rate(POISSON, 0.05, 1) == 0.5  # the sampler's rate, not 1/len(loader)
    assert hook_rate(POISSON, 1 / 19, 1) == 0.5  # also when Opacus' number is larger
    assert hook_rate(ASSUMED, 0.2, 1) == 0.2  # nothing verified: the larger one
    assert hook_rate(ASSUMED, 0.05, 2) == 0.2
    assert hook_rate(SHUFFLE, 0.5, 3) == pytest.approx(0.3, rel=1e-15)  # batches counted
    assert hook_rate(None, 0.1, 1) == 0.1


def test_a_hand_step_that_contradicts_the_sampler_is_refused_naming_both_numbers():
    with pytest.raises(ValueError, match=r"sample_rate=0\.05.*rate 0\.5"):
        step_rate(POISSON, 0.05)
    assert step_rate(POISSON, 0.5) == 0.5
    assert step_rate(SHUFFLE, 0.1) == 0.1 and step_rate(ASSUMED, 0.3) == 0.3


def test_an_assigned_history_is_raised_to_the_sampler_rate_never_lowered():
    history = [(1.2, 0.05, 20), (1.0, 0.6, 2), (0.0, 0.5, 1)]
    assert resolve_history(POISSON, history) == [(1.2, 0.5, 20), (1.0, 0.6, 2), (0.0, 0.5, 1)]
    assert resolve_history(SHUFFLE, history) == history
    assert resolve_history(ASSUMED, history) == history


def test_the_note_names_both_numbers_only_when_they_differ():
    assert "0.05" in rate_note(POISSON, 0.05) and "0.5 is recorded" in rate_note(POISSON, 0.05)
    assert rate_note(POISSON, 0.5) is None and rate_note(None, 0.1) is None
    assert rate_note(SHUFFLE, 0.1) is None and "0.1 is recorded" in rate_note(SHUFFLE, 0.05)


def test_validation_names_the_parameter():
    with pytest.raises(TypeError, match="noise_multiplier"):
        check_step(True, 0.1, "")
    with pytest.raises(ValueError, match=r"h\[0\]\.sample_rate"):
        check_history([(1.0, 1.5, 2)], "h")
    with pytest.raises(ValueError, match="list of"):
        check_history("abc", "h")


def _nine_times_loader():
    sampler = UniformWithReplacementSampler(num_samples=N, sample_rate=0.5, steps=20,
                                            generator=torch.Generator().manual_seed(0))  # fmt: skip
    X = torch.randn(N, 5, generator=torch.Generator().manual_seed(1))
    return DataLoader(TensorDataset(X, (X[:, 0] > 0).float()), batch_sampler=sampler)


def _noise_search(*, poisson_sampling):
    """Opacus' make_private_with_epsilon for epsilon 3 over 2 epochs of the 0.5-rate
    sampler: ``(optimizer, loader)``."""
    model = torch.nn.Linear(5, 1)
    engine = PrivacyEngine(accountant=MECHANISM)
    _, optimizer, loader = engine.make_private_with_epsilon(
        module=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        data_loader=_nine_times_loader(),
        target_epsilon=3.0,
        target_delta=DELTA,
        epochs=2,
        max_grad_norm=1.0,
        poisson_sampling=poisson_sampling,
    )
    return optimizer, loader


def test_the_noise_search_calibrates_for_the_rate_that_runs():
    """make_private_with_epsilon asks for epsilon 3 over 2 epochs of the 0.5-rate sampler."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        optimizer, _ = _noise_search(poisson_sampling=False)
    sigma = optimizer.noise_multiplier
    assert _pld(0.5, sigma, 40) <= 3.0 * (1 + 2e-3)  # the target holds at the real rate
    assert _pld(0.5, sigma, 40) >= 2.9  # and is nearly met


def test_a_hand_step_on_the_accounted_poisson_loader_is_refused():
    acct = OpacusAccountant()
    acct.attach_data_loader(_nine_times_loader())
    with pytest.raises(ValueError, match="cannot be told"):
        acct.step(noise_multiplier=1.0, sample_rate=0.05)
    acct.step(noise_multiplier=1.0, sample_rate=0.5)
    acct.history = [(1.0, 0.05, 3)]  # as Opacus' noise search assigns it
    assert acct.get_epsilon(DELTA) == pytest.approx(_pld(0.5, 1.0, 3), rel=2e-3)
    assert acct.history == [(1.0, 0.5, 3)]


def test_the_normaliser_note_follows_the_floor_of_n_q_for_each_neighbour():
    for n in range(20, 400, 7):
        for steps in (3, 7, 10, 11):
            q = 1 / steps
            m = int(n * q)
            moves = int((n - 1) * q) != m or int((n + 1) * q) != m  # written out
            note = normaliser_note(n, q, m)
            assert (note is not None) == moves
            if note is not None:
                assert f"= {m}, which is" in note and "#819" in note


def test_a_checkpoint_recorded_at_opacus_rate_is_restored_at_the_sampler_rate():
    """A checkpoint of the 9x run saved before issue 35: history at 0.05, data path 0.5."""
    state = {
        "history": [(1.2, 0.05, 20)],
        "mechanism": MECHANISM,
        "data_path": dict(POISSON.as_dict()),
    }
    acct = OpacusAccountant()
    acct.load_state_dict(state)
    assert acct.history == [(1.2, 0.5, 20)]
    assert acct.get_epsilon(DELTA) == pytest.approx(_pld(0.5, 1.2, 20), rel=2e-3)  # ~11.53


def test_the_noise_search_calibrates_for_opacus_rate_when_opacus_replaces_the_sampler():
    """poisson_sampling=True: Opacus swaps the 0.5-rate sampler for its own at 1/20."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        optimizer, loader = _noise_search(poisson_sampling=True)
    assert any("replaced the data loader's UniformWithReplacementSampler" in str(w.message)
               for w in caught)  # fmt: skip
    assert loader.batch_sampler.sample_rate == pytest.approx(0.05, rel=1e-12)
    eps = _pld(0.05, optimizer.noise_multiplier, 40)
    assert 2.9 <= eps <= 3.0 * (1 + 2e-3)  # calibrated for the rate that runs, not 0.5
