"""Review 18: the Opacus shuffled lower end after a checkpoint of another sampler.

``DataPath.every_record`` (session 17) drops the shuffled attacks' lower end when a
pass does not hold every record (``RandomSampler(num_samples < n)``, ``drop_last``
with ``n % batch != 0``).  But :func:`dpacct._opacus_data_path.accounted_alike`
compares scheme, steps per pass, batch size and rate only, and
:meth:`OpacusAccountant.load_state_dict` then *replaces* the current path by the saved
one.  A checkpoint of a full-sampler run (``every_record=True``) restored into a run
whose loader is ``RandomSampler(num_samples=501)`` over ``n = 1000`` at batch 500 (both
2 steps a pass at rate 0.5) keeps ``every_record=True``, and the lower end assumes
every record in all 11 passes: it prints 14.04 where the truth is at most 11.75.

Upper bound on the truth over zero-out neighbours (the review17 argument): the full
pass is dominated by one Gaussian step (the record in one batch), each subset pass,
by joint convexity, by the Poisson-subsampled Gaussian at ``r = m / n`` (the record
drawn or not); composed, that is dp_accounting's pessimistic PLD (independent of
dpacct): 11.7525.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")
dpa_pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")

from opacus_runs import make_private, toy_data  # noqa: E402
from torch.utils.data import DataLoader, RandomSampler  # noqa: E402


def _train(loader, sigma, passes, state=None):
    engine, model, opt, loader = make_private(loader, sigma, lr=0.1)
    if state is not None:
        engine.accountant.load_state_dict(state)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for _ in range(passes):
        for xb, yb in loader:
            loss_fn(model(xb).squeeze(-1), yb).backward()
            opt.step()
            opt.zero_grad()
    return engine.accountant


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_restored_full_sampler_path_does_not_give_a_subset_run_a_lower_end():
    n, batch, m, sigma, delta, passes = 1000, 500, 501, 1.0, 1e-5, 10
    data = toy_data(n)
    seeded = torch.Generator().manual_seed(1)
    full = DataLoader(data, batch_size=batch, sampler=RandomSampler(data, generator=seeded))
    state = _train(full, sigma, 1).state_dict()
    subset = DataLoader(
        data,
        batch_size=batch,
        sampler=RandomSampler(data, num_samples=m, generator=torch.Generator().manual_seed(2)),
    )
    acct = _train(subset, sigma, passes, state)
    assert len(acct) == 2 * (passes + 1)
    lower, upper = acct.epsilon_bounds(delta)
    one = dpa_pld.from_gaussian_mechanism(
        sigma, pessimistic_estimate=True, value_discretization_interval=1e-3
    )
    sub = dpa_pld.from_gaussian_mechanism(
        sigma, sampling_prob=m / n, pessimistic_estimate=True, value_discretization_interval=1e-3
    )
    truth_at_most = one.compose(sub.self_compose(passes)).get_epsilon_for_delta(delta)
    assert truth_at_most == pytest.approx(11.7525, abs=1e-3)
    assert truth_at_most < upper
    assert lower <= truth_at_most


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_attaching_a_full_sampler_after_subset_passes_gives_no_lower_end():
    n, batch, m, sigma, delta, passes = 1000, 500, 501, 1.0, 1e-5, 10
    data = toy_data(n)
    seeded = torch.Generator().manual_seed(2)
    subset = DataLoader(
        data, batch_size=batch, sampler=RandomSampler(data, num_samples=m, generator=seeded)
    )
    acct = _train(subset, sigma, passes)
    assert acct.epsilon_bounds(delta)[0] == 0.0  # the subset run alone: no lower end
    full = DataLoader(data, batch_size=batch, sampler=RandomSampler(data))
    acct.attach_data_loader(full, poisson_sampling=False)  # no step taken under it
    lower, _ = acct.epsilon_bounds(delta)
    sub = dpa_pld.from_gaussian_mechanism(
        sigma, sampling_prob=m / n, pessimistic_estimate=True, value_discretization_interval=1e-3
    )
    truth_at_most = sub.self_compose(passes).get_epsilon_for_delta(delta)
    assert lower <= truth_at_most
