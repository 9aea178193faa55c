"""Random allocation in Opacus: RandomAllocationBatchSampler, recognised and accounted.

A real CPU training loop with Opacus 1.6's ``PrivacyEngine(accountant="dpacct")`` over
a loader that puts each record in ``k`` of the pass's batches: the accountant must
identify the sampler, account the run as k-of-T random allocation (the bracket of
docs/theory/allocation_k_of_t.md), and refuse a run that breaks the sampler's promise.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from opacus_runs import make_private, toy_data  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from dpacct._opacus_data_path import identify  # noqa: E402
from dpacct.accountant import random_allocation  # noqa: E402
from dpacct.mechanisms import GaussianMechanism  # noqa: E402
from dpacct.opacus import (  # noqa: E402
    RandomAllocationBatchSampler,
    UnaccountedSamplerError,
)

N, STEPS, K, SIGMA, DELTA = 120, 10, 2, 1.5, 1e-5

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _data():
    return toy_data(N)


def _loader(k=K):
    gen = torch.Generator().manual_seed(1)
    sampler = RandomAllocationBatchSampler(N, STEPS, k=k, generator=gen)
    return DataLoader(_data(), batch_sampler=sampler)


def _private(loader):
    return make_private(loader, SIGMA)


def _train(model, opt, loader, epochs):
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for _ in range(epochs):
        for xb, yb in loader:
            loss_fn(model(xb).squeeze(-1), yb).backward()
            opt.step()
            opt.zero_grad()


def test_sampler_puts_each_record_in_k_distinct_batches_per_pass():
    gen = torch.Generator().manual_seed(2)
    sampler = RandomAllocationBatchSampler(N, STEPS, k=3, generator=gen)
    for _ in range(3):
        batches = list(sampler)
        assert len(batches) == len(sampler) == STEPS
        counts = np.bincount(np.concatenate([np.asarray(b, dtype=int) for b in batches]),
                             minlength=N)
        assert np.all(counts == 3)
        assert all(len(set(b)) == len(b) for b in batches)
    # uniform k-subsets: each batch holds about k n / T records (mean over passes)
    sizes = [len(b) for _ in range(200) for b in sampler]
    assert abs(np.mean(sizes) - 3 * N / STEPS) < 1e-9  # exact: every record k times
    with pytest.raises(ValueError, match="k must be <= steps"):
        RandomAllocationBatchSampler(N, 3, k=4)


def test_each_k_subset_of_the_steps_is_equally_likely():
    # one record, 2 of 4 steps: the 6 subsets within 5 standard deviations of 1/6
    sampler = RandomAllocationBatchSampler(1, 4, k=2, generator=torch.Generator().manual_seed(3))
    passes = 6000
    seen = {}
    for _ in range(passes):
        key = tuple(j for j, b in enumerate(sampler) if b)
        seen[key] = seen.get(key, 0) + 1
    assert len(seen) == 6
    sd = (passes * (1 / 6) * (5 / 6)) ** 0.5
    assert all(abs(c - passes / 6) < 5 * sd for c in seen.values())


def test_identify_recognises_the_allocation_sampler_by_exact_class():
    path = identify(_loader())
    assert (path.scheme, path.steps_per_epoch, path.sample_rate) == (
        "random-allocation", STEPS, K / STEPS)
    assert "2 batch(es) per pass" in path.describe()

    class Other(RandomAllocationBatchSampler):
        pass

    with pytest.raises(UnaccountedSamplerError, match="a subclass of"):
        identify(DataLoader(_data(), batch_sampler=Other(N, STEPS, k=K)))


def test_training_loop_is_accounted_as_k_of_t_random_allocation():
    engine, model, opt, loader = _private(_loader())
    _train(model, opt, loader, 2)
    acct = engine.accountant
    expected = random_allocation(GaussianMechanism(SIGMA), STEPS, k=K, epochs=2)
    assert acct.get_epsilon(DELTA) == pytest.approx(float(expected.epsilon(DELTA)), rel=1e-12)
    lo, hi = acct.epsilon_bounds(DELTA)
    assert 0.0 < lo <= hi
    assert lo == pytest.approx(float(expected.epsilon_bounds(DELTA)[0]), rel=1e-12)
    # more than the Poisson number at the same rate is fine; below k Gaussians per epoch
    assert hi < float(GaussianMechanism(SIGMA / np.sqrt(2 * K)).epsilon(DELTA))


def test_a_sampler_changed_to_more_batches_per_record_is_refused():
    _, model, opt, loader = _private(_loader())
    _train(model, opt, loader, 1)
    loader.batch_sampler.k = 3  # in place, after identification
    with pytest.raises(UnaccountedSamplerError, match="changed after it was identified"):
        _train(model, opt, loader, 1)
