"""Review of the Opacus shuffled lower end (``OpacusAccountant.epsilon_bounds``).

A ``RandomSampler(num_samples=m)`` with ``m < n`` (and, by a smaller margin,
``drop_last=True``) is identified as ``"shuffle"``: each pass draws ``m`` of the ``n``
records without replacement, so a record is in a pass with probability ``r = m / n``
only.  The lower end is :func:`shuffled_batches`' (the larger of the largest-coordinate
and sum-statistic attacks on ``T = len(loader)`` steps), which assumes the target is in
one batch of every pass.  An upper bound on the truth over *every* pair of zero-out
neighbours: given the target is not drawn, both datasets give the same law ``M_0``;
given it is, each placement is one Gaussian of sensitivity 1, so by joint convexity
``delta(eps) <= r delta_G(eps; 1/sigma)``, i.e. ``epsilon(delta) <= epsilon_G(delta /
r)`` (mpmath closed form).  At n 1000, m 10, batch 5 (T 2), sigma 1, delta 1e-5 the
printed lower end is 3.6965 and the truth at most 3.139.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from opacus_runs import make_private, toy_data  # noqa: E402
from oracles import gaussian_epsilon  # noqa: E402
from torch.utils.data import DataLoader, RandomSampler, TensorDataset  # noqa: E402


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_shuffled_lower_end_with_a_subset_sampler_is_below_the_truth():
    n, m, batch, sigma, delta = 1000, 10, 5, 1.0, 1e-5
    data = toy_data(n)
    sampler = RandomSampler(data, num_samples=m, generator=torch.Generator().manual_seed(1))
    loader = DataLoader(data, batch_size=batch, sampler=sampler)
    engine, model, opt, loader = make_private(loader, sigma, lr=0.1)
    assert engine.accountant.data_path.scheme == "shuffle"
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for xb, yb in loader:  # one whole pass: len(loader) == 2 steps
        loss_fn(model(xb).squeeze(-1), yb).backward()
        opt.step()
        opt.zero_grad()
    assert len(engine.accountant) == 2
    lower, upper = engine.accountant.epsilon_bounds(delta)
    truth_at_most = gaussian_epsilon(1.0 / sigma, delta * n / m)
    assert truth_at_most < upper
    assert lower <= truth_at_most


@pytest.mark.parametrize(
    ("num_samples", "drop_last", "batch", "every"),
    [(None, False, 7, True), (None, True, 5, True), (None, True, 7, False), (50, False, 5, False)],
)
def test_a_shuffled_path_says_whether_every_record_is_in_every_pass(
    num_samples, drop_last, batch, every
):
    from dpacct._opacus_data_path import identify

    data = TensorDataset(torch.zeros(100, 2))
    sampler = RandomSampler(data, num_samples=num_samples)
    loader = DataLoader(data, batch_size=batch, sampler=sampler, drop_last=drop_last)
    path = identify(loader)
    assert path.scheme == "shuffle"
    assert path.every_record is every
