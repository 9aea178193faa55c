"""The Opacus accountant's state changes (dpacct._opacus_state), without training: each
refusal names what is wrong, and the ledger of a history is the composition of its
private steps."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler  # noqa: E402

from dpacct._opacus_data_path import DataPath, UnaccountedSamplerError  # noqa: E402
from dpacct._opacus_state import adopted_path, build_ledger, check_adopted, state_history  # noqa: E402
from dpacct.accountant import BudgetExceededError, compose, poisson_subsample  # noqa: E402
from dpacct.mechanisms import GaussianMechanism  # noqa: E402

ACCEPTED = frozenset({"dpacct", "rdp"})
POISSON = DataPath("poisson", "UniformWithReplacementSampler", 10, 0.1)
SHUFFLE = DataPath("shuffle", "RandomSampler", 10, 0.1, 24)


def test_state_history_names_what_is_wrong():
    for bad, match in [
        ({}, "state_dict is empty or not a mapping"),
        ([("history", [])], "state_dict is empty or not a mapping"),
        ({"history": []}, "no key 'mechanism'"),
        ({"history": [], "mechanism": "gdp"}, r"accepted: \['dpacct', 'rdp'\]"),
        ({"history": [(1.0, 2.0, 1)], "mechanism": "rdp"}, r"state_dict\['history'\]"),
    ]:
        with pytest.raises(ValueError, match=match):
            state_history(bad, ACCEPTED)
    good = {"history": [[1.0, 0.01, 3]], "mechanism": "dpacct"}
    assert state_history(good, ACCEPTED) == [(1.0, 0.01, 3)]


def test_the_ledger_holds_the_private_steps_and_counts_the_others():
    ledger, non_private = build_ledger({}, [(1.0, 0.01, 100), (0.0, 0.01, 2)])
    assert non_private == 2
    run = compose([poisson_subsample(GaussianMechanism(sigma=1.0), 0.01)], counts=[100])
    assert ledger.epsilon(1e-5) == pytest.approx(run.epsilon(1e-5), rel=1e-6)
    budget = {"budget_epsilon": 10.0, "budget_delta": 1e-5}
    with pytest.raises(BudgetExceededError, match="2 step"):
        build_ledger(budget, [(1.0, 0.01, 100), (0.0, 0.01, 2)])


def test_a_new_data_path_is_checked_before_it_is_adopted():
    check_adopted(SHUFFLE, None, recorded=True, budget=False)
    check_adopted(POISSON, POISSON, recorded=True, budget=True)
    with pytest.raises(ValueError, match="enforced for Poisson sampling only"):
        check_adopted(SHUFFLE, None, recorded=False, budget=True)
    with pytest.raises(ValueError, match="data path changed during the run"):
        check_adopted(SHUFFLE, POISSON, recorded=True, budget=False)
    check_adopted(SHUFFLE, POISSON, recorded=False, budget=False)  # nothing recorded yet


def test_an_unaccounted_sampler_is_refused_unless_poisson_is_assumed():
    data = TensorDataset(torch.zeros(40, 1))
    sampler = WeightedRandomSampler([1.0] * 40, num_samples=40)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    with pytest.raises(UnaccountedSamplerError):
        adopted_path(loader, False, False, assume_poisson=False)
    path = adopted_path(loader, False, False, assume_poisson=True)
    assert (path.scheme, path.sampler, path.assumed) == ("poisson", "WeightedRandomSampler", True)
    assert path.sample_rate == 1 / 5 and path.steps_per_epoch == 5
