"""The loader matrix: every data path an Opacus user builds, run for real and accounted or refused.

Each row is a real CPU loop with Opacus 1.6's ``PrivacyEngine(accountant="dpacct")`` (a
linear model on 240 random records, a few steps) or a real iteration of the loader, and
asserts the scheme dpacct reports and its number -- or the refusal and what it names.
No row may end with a number smaller than its scheme's proved one in silence.  The
expected numbers are independent of the code under test: Google's dp_accounting PLD for
Poisson rows, the Gaussian-DP curve written out with scipy for shuffled and sequential
rows (one Gaussian per epoch), and for fixed-size batches without replacement the
composition of :func:`~dpacct.mechanisms.fixed_size_gaussian_step` (whose digits
another change improves) bounded below by the Poisson number at the same rate.

The table of rows is in docs/user_guide/ml_engineer.md ("The loader matrix").
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")
dpa = pytest.importorskip("dp_accounting")

from opacus import PrivacyEngine  # noqa: E402
from opacus.data_loader import DPDataLoader  # noqa: E402
from opacus.utils.batch_memory_manager import BatchMemoryManager  # noqa: E402
from opacus.utils.uniform_sampler import UniformWithReplacementSampler  # noqa: E402
from oracles import gaussian_epsilon, subsampled_gaussian_epsilon  # noqa: E402
from torch.utils.data import (  # noqa: E402
    BatchSampler,
    DataLoader,
    DistributedSampler,
    RandomSampler,
    SequentialSampler,
    TensorDataset,
    WeightedRandomSampler,
)

from dpacct.accountant import compose  # noqa: E402
from dpacct.mechanisms import fixed_size_gaussian_step  # noqa: E402
from dpacct.opacus import (  # noqa: E402
    MECHANISM,
    FixedSizeBatchSampler,
    UnaccountedSamplerError,
)

N = 240
BATCH = 24  # 10 batches per epoch
SIGMA = 1.2
DELTA = 1e-5

pytestmark = [
    pytest.mark.filterwarnings("ignore:Secure RNG turned off:UserWarning"),
    pytest.mark.filterwarnings("ignore:Full backward hook:UserWarning"),
    pytest.mark.filterwarnings("ignore:Optimal order:UserWarning"),
]


# ----------------------------------------------------------------------------------
# independent references
# ----------------------------------------------------------------------------------


def _poisson_pld(q: float, steps: int, sigma: float = SIGMA) -> float:
    """dp_accounting's PLD epsilon of ``steps`` Poisson-subsampled Gaussians."""
    event = dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma))
    acct = dpa.pld.PLDAccountant(value_discretization_interval=1e-4)
    return acct.compose(event, steps).get_epsilon(DELTA)


# ----------------------------------------------------------------------------------
# the loop
# ----------------------------------------------------------------------------------


def _data(n: int = N) -> TensorDataset:
    g = torch.Generator().manual_seed(0)
    X = torch.randn(n, 5, generator=g)
    return TensorDataset(X, (X[:, 0] > 0).float())


def _gen(seed: int = 1) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _private(loader, *, poisson_sampling: bool, accountant=None):
    """make_private with dpacct; returns (engine, model, optimizer, loader, warnings)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(5, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    engine = PrivacyEngine(accountant=MECHANISM)
    if accountant is not None:
        engine.accountant = accountant
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = engine.make_private(
            module=model,
            optimizer=optimizer,
            data_loader=loader,
            noise_multiplier=SIGMA,
            max_grad_norm=1.0,
            poisson_sampling=poisson_sampling,
        )
    ours = [str(w.message) for w in caught if "Opacus replaced" in str(w.message)]
    return (engine, *out, ours)


def _train(model, optimizer, loader, epochs: int, *, accumulate: int = 1, stop=None) -> int:
    """Iterate ``epochs`` passes; step every ``accumulate`` batches; ``stop``: break early."""
    loss_fn = torch.nn.BCEWithLogitsLoss()
    steps = 0
    for _ in range(epochs):
        for i, (xb, yb) in enumerate(loader):
            if stop is not None and i >= stop:
                break
            loss_fn(model(xb).squeeze(-1), yb).backward()
            if (i + 1) % accumulate == 0:
                optimizer.step()
                optimizer.zero_grad()
                steps += 1
    return steps


def _refused(match: str, run) -> str:
    """Run ``run`` and return the refusal's message (which must contain ``match``)."""
    with pytest.raises(UnaccountedSamplerError, match=match) as info:
        run()
    return str(info.value)


# ----------------------------------------------------------------------------------
# the rows
# ----------------------------------------------------------------------------------


def test_row_opacus_default_poisson_loader():
    engine, model, opt, loader, _ = _private(DataLoader(_data(), batch_size=BATCH),
                                             poisson_sampling=True)  # fmt: skip
    assert type(loader) is DPDataLoader
    steps = _train(model, opt, loader, 2)
    acct = engine.accountant
    assert acct.data_path.scheme == "poisson" and acct.history == [(SIGMA, 0.1, steps)]
    assert engine.get_epsilon(DELTA) == pytest.approx(_poisson_pld(0.1, steps), rel=2e-3)
    # Opacus divides by int(240 * 0.1) = 24, which is 23 for 239 records (Opacus #819)
    text = acct.summary(DELTA)
    assert "= 24, which is 23" in text and "(zero-out neighbours)" in text


def test_row_opacus_default_poisson_loader_whose_normaliser_is_fixed():
    # 250 records, batches of 24: q = 1/11, int(249/11) = int(250/11) = int(251/11) = 22
    engine, model, opt, loader, _ = _private(DataLoader(_data(250), batch_size=BATCH),
                                             poisson_sampling=True)  # fmt: skip
    steps = _train(model, opt, loader, 1)
    text = engine.accountant.summary(DELTA)
    assert "(add/remove neighbours)" in text and "#819" not in text
    assert engine.get_epsilon(DELTA) == pytest.approx(_poisson_pld(1 / 11, steps), rel=2e-3)


def test_row_dp_data_loader_given_with_poisson_sampling_false():
    dp_loader = DPDataLoader.from_data_loader(DataLoader(_data(), batch_size=BATCH))
    engine, model, opt, loader, _ = _private(dp_loader, poisson_sampling=False)
    steps = _train(model, opt, loader, 1)
    acct = engine.accountant
    assert acct.data_path.scheme == "poisson" and acct.data_path.sample_rate == 0.1
    assert engine.get_epsilon(DELTA) == pytest.approx(_poisson_pld(0.1, steps), rel=2e-3)


def test_row_poisson_batch_sampler_at_its_own_rate_not_nine_times_less():
    """Issue 35: the ledger recorded 1/len(loader) = 0.05 and printed 1.31; the rate is 0.5."""
    sampler = UniformWithReplacementSampler(num_samples=N, sample_rate=0.5, steps=20,
                                            generator=_gen())  # fmt: skip
    engine, model, opt, loader, _ = _private(DataLoader(_data(), batch_sampler=sampler),
                                             poisson_sampling=False)  # fmt: skip
    assert _train(model, opt, loader, 1) == 20
    acct = engine.accountant
    assert acct.data_path.scheme == "poisson"
    assert acct.history == [(SIGMA, 0.5, 20)]
    eps = engine.get_epsilon(DELTA)
    assert eps == pytest.approx(_poisson_pld(0.5, 20), rel=2e-3)  # about 11.53
    assert eps > 11.5  # not 1.31
    text = acct.summary(DELTA)
    assert "0.05" in text and "0.5 is recorded" in text


def test_row_shuffle():
    loader = DataLoader(_data(), batch_size=BATCH, shuffle=True, generator=_gen())
    engine, model, opt, loader, _ = _private(loader, poisson_sampling=False)
    _train(model, opt, loader, 2)
    assert engine.accountant.data_path.scheme == "shuffle"
    expected = gaussian_epsilon(math.sqrt(2) / SIGMA, DELTA)
    assert engine.get_epsilon(DELTA) == pytest.approx(expected, rel=1e-6)


def test_row_sequential():
    engine, model, opt, loader, _ = _private(DataLoader(_data(), batch_size=BATCH),
                                             poisson_sampling=False)  # fmt: skip
    _train(model, opt, loader, 3)
    assert engine.accountant.data_path.scheme == "sequential"
    expected = gaussian_epsilon(math.sqrt(3) / SIGMA, DELTA)
    assert engine.get_epsilon(DELTA) == pytest.approx(expected, rel=1e-6)


def _weighted_loader():
    weights = torch.linspace(0.1, 1.0, N)
    sampler = WeightedRandomSampler(weights, N, generator=_gen())
    return DataLoader(_data(), batch_size=BATCH, sampler=sampler)


def test_row_weighted_without_poisson_sampling_is_refused():
    message = _refused("WeightedRandomSampler with replacement",
                       lambda: _private(_weighted_loader(), poisson_sampling=False))  # fmt: skip
    assert "assume_poisson=True" in message and "no (epsilon, delta) guarantee" in message


def test_row_weighted_with_poisson_sampling_warns_that_the_weighting_is_gone():
    original = _weighted_loader()
    engine, model, opt, loader, caught = _private(original, poisson_sampling=True)
    assert len(caught) == 1 and "WeightedRandomSampler" in caught[0]
    assert "not applied" in caught[0]
    steps = _train(model, opt, loader, 1)
    acct = engine.accountant
    assert acct.data_path.scheme == "poisson"
    assert "Opacus replaced the data loader's WeightedRandomSampler" in acct.summary(DELTA)
    assert engine.get_epsilon(DELTA) == pytest.approx(_poisson_pld(0.1, steps), rel=2e-3)


def _distributed_loader():
    sampler = DistributedSampler(_data(), num_replicas=2, rank=0, shuffle=True, seed=0)
    return DataLoader(_data(), batch_size=BATCH, sampler=sampler)


def test_row_distributed_sampler():
    message = _refused("DistributedSampler",
                       lambda: _private(_distributed_loader(), poisson_sampling=False))  # fmt: skip
    assert "cannot account this data path" in message
    # poisson_sampling=True: Opacus samples the whole dataset at 1/len(loader) = 1/5
    engine, model, opt, loader, caught = _private(_distributed_loader(), poisson_sampling=True)
    assert len(caught) == 1 and "DistributedSampler" in caught[0]
    steps = _train(model, opt, loader, 1)
    assert engine.accountant.data_path.sample_rate == pytest.approx(0.2, rel=1e-12)
    assert engine.get_epsilon(DELTA) == pytest.approx(_poisson_pld(0.2, steps), rel=2e-3)


def test_row_fixed_size_without_replacement():
    loader = DataLoader(_data(), batch_sampler=FixedSizeBatchSampler(N, BATCH, generator=_gen()))
    engine, model, opt, loader, _ = _private(loader, poisson_sampling=False)
    steps = _train(model, opt, loader, 2)
    acct = engine.accountant
    assert acct.data_path.scheme == "fixed-size" and acct.data_path.relation == "replace-one"
    eps = engine.get_epsilon(DELTA)
    ours = compose([fixed_size_gaussian_step(SIGMA, BATCH / N)], counts=[steps]).epsilon(DELTA)
    assert eps == pytest.approx(ours, rel=1e-9)
    assert eps >= _poisson_pld(BATCH / N, steps) * (1 - 2e-3)  # replace-one costs more


@pytest.mark.parametrize("drop_last", [True, False])
def test_row_drop_last(drop_last):
    loader = DataLoader(_data(250), batch_size=BATCH, shuffle=True, drop_last=drop_last,
                        generator=_gen())  # fmt: skip
    engine, model, opt, loader, _ = _private(loader, poisson_sampling=False)
    assert len(loader) == (10 if drop_last else 11)
    _train(model, opt, loader, 2)
    acct = engine.accountant
    assert acct.data_path.scheme == "shuffle" and len(acct) == 2 * len(loader)
    expected = gaussian_epsilon(math.sqrt(2) / SIGMA, DELTA)
    assert engine.get_epsilon(DELTA) == pytest.approx(expected, rel=1e-6)


def test_row_gradient_accumulation():
    loader = DataLoader(_data(), batch_size=BATCH, shuffle=True, generator=_gen())
    engine, model, opt, loader, _ = _private(loader, poisson_sampling=False)
    _train(model, opt, loader, 2, accumulate=2)
    assert engine.accountant.history == [(SIGMA, 0.2, 10)]
    expected = gaussian_epsilon(math.sqrt(2) / SIGMA, DELTA)
    assert engine.get_epsilon(DELTA) == pytest.approx(expected, rel=1e-6)
    # over Poisson batches a record can be in several of them: refused (Opacus refuses
    # it itself for poisson_sampling=True; dpacct for its Poisson sampler given as is)
    sampler = UniformWithReplacementSampler(num_samples=N, sample_rate=0.1, generator=_gen())
    engine, model, opt, loader, _ = _private(DataLoader(_data(), batch_sampler=sampler),
                                             poisson_sampling=False)  # fmt: skip
    with pytest.raises(ValueError, match="accumulation over 2 Poisson batches"):
        _train(model, opt, loader, 1, accumulate=2)
    assert engine.accountant.history == []


def test_row_batch_memory_manager():
    engine, model, opt, loader, _ = _private(DataLoader(_data(), batch_size=BATCH),
                                             poisson_sampling=True)  # fmt: skip
    physical = 0
    loss_fn = torch.nn.BCEWithLogitsLoss()
    with BatchMemoryManager(data_loader=loader, max_physical_batch_size=8,
                            optimizer=opt) as memory_safe:  # fmt: skip
        for xb, yb in memory_safe:
            opt.zero_grad()
            loss_fn(model(xb).squeeze(-1), yb).backward()
            opt.step()
            physical += 1
    acct = engine.accountant
    assert physical > 10 and acct.history == [(SIGMA, 0.1, 10)]
    assert engine.get_epsilon(DELTA) == pytest.approx(_poisson_pld(0.1, 10), rel=2e-3)
    # over shuffled batches: each logical batch of 24 split in 3, one step each
    loader = DataLoader(_data(), batch_size=BATCH, shuffle=True, generator=_gen())
    engine, model, opt, loader, _ = _private(loader, poisson_sampling=False)
    with BatchMemoryManager(data_loader=loader, max_physical_batch_size=8,
                            optimizer=opt) as memory_safe:  # fmt: skip
        for xb, yb in memory_safe:
            opt.zero_grad()
            loss_fn(model(xb).squeeze(-1), yb).backward()
            opt.step()
    assert engine.accountant.history == [(SIGMA, 0.1, 10)]
    expected = gaussian_epsilon(1 / SIGMA, DELTA)
    assert engine.get_epsilon(DELTA) == pytest.approx(expected, rel=1e-6)


def test_row_batch_size_changes_in_place():
    loader = DataLoader(_data(), batch_size=BATCH, shuffle=True, generator=_gen())
    engine, model, opt, loader, _ = _private(loader, poisson_sampling=False)
    _train(model, opt, loader, 1)
    loader.batch_sampler.batch_size = 2 * BATCH  # the forwarded write reaches the sampler
    message = _refused("batch sampler changed", lambda: _train(model, opt, loader, 1))
    assert "24" in message and "48" in message
    assert len(engine.accountant) == 10  # the steps before it stay accounted
    opt.zero_grad()
    _refused("batch sampler changed", lambda: _train(model, opt, loader, 1))  # it stays


class _FixedOrderPoisson(UniformWithReplacementSampler):
    """Claims Poisson sampling, yields the same fixed batches in order."""

    def __iter__(self):
        for i in range(self.steps):
            yield list(range((i * BATCH) % N, (i * BATCH) % N + BATCH))


class _SameBatch(FixedSizeBatchSampler):
    """Claims fresh fixed-size batches, yields the same batch every time."""

    def __iter__(self):
        for _ in range(self.steps):
            yield list(range(self.batch_size))


class _MyRandom(RandomSampler):
    pass


class _MySequential(SequentialSampler):
    pass


@pytest.mark.parametrize(
    ("make", "named"),
    [
        (lambda d: DataLoader(d, batch_sampler=_FixedOrderPoisson(num_samples=N, sample_rate=0.1)),
         "_FixedOrderPoisson (a subclass of UniformWithReplacementSampler"),
        (lambda d: DataLoader(d, batch_sampler=_SameBatch(N, BATCH)),
         "_SameBatch (a subclass of FixedSizeBatchSampler"),
        (lambda d: DataLoader(d, batch_size=BATCH, sampler=_MyRandom(d)),
         "_MyRandom inside a BatchSampler of batch size 24 (a subclass of RandomSampler"),
        (lambda d: DataLoader(d, batch_size=BATCH, sampler=_MySequential(d)),
         "_MySequential inside a BatchSampler of batch size 24 (a subclass of Sequential"),
        (lambda d: DataLoader(d, batch_sampler=type("MyBatches", (BatchSampler,), {})(
            RandomSampler(d), BATCH, False)), "MyBatches (a subclass of BatchSampler"),
    ],
)  # fmt: skip
def test_row_subclass_of_each_recognised_sampler_is_refused(make, named):
    message = _refused("exact class", lambda: _private(make(_data()), poisson_sampling=False))
    assert named in message and "assume_poisson=True" in message


def test_row_loader_swapped_after_make_private():
    loader = DataLoader(_data(), batch_size=BATCH, shuffle=True, generator=_gen())
    engine, model, opt, loader, _ = _private(loader, poisson_sampling=False)
    _train(model, opt, loader, 1)
    with_replacement = DataLoader(_data(), batch_size=BATCH,
                                  sampler=RandomSampler(_data(), replacement=True))  # fmt: skip
    message = _refused("not the one accounted", lambda: _train(model, opt, with_replacement, 1))
    assert "drew 0 since the last step" in message
    assert len(engine.accountant) == 10
    # attaching it instead names what it is
    _refused("RandomSampler with replacement",
             lambda: engine.accountant.attach_data_loader(with_replacement))  # fmt: skip


def test_row_sampler_swapped_in_place_for_one_with_replacement():
    loader = DataLoader(_data(), batch_size=BATCH, shuffle=True, generator=_gen())
    engine, model, opt, loader, _ = _private(loader, poisson_sampling=False)
    _train(model, opt, loader, 1)
    loader.batch_sampler.sampler = RandomSampler(_data(), replacement=True)
    _refused("batch sampler changed", lambda: _train(model, opt, loader, 1))
    assert len(engine.accountant) == 10


def test_row_original_loader_iterated_after_make_private():
    original = DataLoader(_data(), batch_size=BATCH, shuffle=True, generator=_gen())
    engine, model, opt, _, _ = _private(original, poisson_sampling=True)
    message = _refused("not the one accounted", lambda: _train(model, opt, original, 1))
    assert "Poisson sampling" in message
    assert engine.accountant.history == []


def test_row_index_range_longer_than_the_dataset():
    data = _data()
    longer = DataLoader(data, batch_size=BATCH, sampler=RandomSampler(range(N + 60)))
    message = _refused("RandomSampler", lambda: _private(longer, poisson_sampling=False))
    assert f"drawing from {N + 60} indices for a dataset of {N} records" in message
    # the range made longer in place after make_private, over a dataset that wraps its
    # indices around (nothing fails in torch): refused at the first step
    class Wrapping(TensorDataset):
        def __getitem__(self, i):
            return super().__getitem__(i % N)

    loader = DataLoader(Wrapping(*data.tensors), batch_size=BATCH, shuffle=True,
                        generator=_gen())  # fmt: skip
    engine, model, opt, loader, _ = _private(loader, poisson_sampling=False)
    loader.batch_sampler.sampler.data_source = range(N + 60)
    message = _refused("batch sampler changed", lambda: _train(model, opt, loader, 1))
    assert f"{N + 60}" in message and engine.accountant.history == []
    # a Poisson sampler over a longer range: refused the same way
    wide = UniformWithReplacementSampler(num_samples=N + 60, sample_rate=0.1)
    message = _refused("over 300 indices",
                       lambda: _private(DataLoader(data, batch_sampler=wide),
                                        poisson_sampling=False))  # fmt: skip


def test_row_early_break_from_each_epoch():
    # shuffled: a new permutation starts early, a record can come twice in 10 steps
    loader = DataLoader(_data(), batch_size=BATCH, shuffle=True, generator=_gen())
    engine, model, opt, loader, _ = _private(loader, poisson_sampling=False)
    message = _refused("early break", lambda: _train(model, opt, loader, 2, stop=4))
    assert "after 5 of its 10 batches" in message  # the loop drew a fifth, then broke
    assert len(engine.accountant) == 4
    # Poisson and fixed-size steps are independent: accounted as taken
    engine, model, opt, loader, _ = _private(DataLoader(_data(), batch_size=BATCH),
                                             poisson_sampling=True)  # fmt: skip
    assert _train(model, opt, loader, 3, stop=4) == 12
    assert engine.get_epsilon(DELTA) == pytest.approx(_poisson_pld(0.1, 12), rel=2e-3)
    fixed = DataLoader(_data(), batch_sampler=FixedSizeBatchSampler(N, BATCH, generator=_gen()))
    engine, model, opt, loader, _ = _private(fixed, poisson_sampling=False)
    assert _train(model, opt, loader, 3, stop=4) == 12
    ours = compose([fixed_size_gaussian_step(SIGMA, BATCH / N)], counts=[12]).epsilon(DELTA)
    assert engine.get_epsilon(DELTA) == pytest.approx(ours, rel=1e-9)


def test_row_assume_poisson_override_takes_responsibility_for_a_subclass():
    from dpacct.opacus import OpacusAccountant

    loader = DataLoader(_data(), batch_sampler=_SameBatch(N, BATCH, steps=10))
    override = OpacusAccountant(assume_poisson=True)
    engine, model, opt, loader, _ = _private(loader, poisson_sampling=False, accountant=override)
    steps = _train(model, opt, loader, 1)
    acct = engine.accountant
    assert acct.data_path.assumed and acct.data_path.sampler == "_SameBatch"
    assert "assume_poisson=True" in acct.summary(DELTA)
    assert engine.get_epsilon(DELTA) == pytest.approx(_poisson_pld(0.1, steps), rel=2e-3)


def test_the_matrix_has_at_least_sixteen_rows():
    rows = [name for name in globals() if name.startswith("test_row_")]
    assert len(rows) >= 16, rows
    assert np.unique(rows).size == len(rows)


# ----------------------------------------------------------------------------------
# review (issue 35): batches repeated across epochs by a reseeded random number generator
# ----------------------------------------------------------------------------------


def _epochs_with_reseed(loader, model, optimizer, epochs: int, reseed) -> list[list[torch.Tensor]]:
    """Train ``epochs`` passes, calling ``reseed()`` before each; returns each pass's batches."""
    loss_fn = torch.nn.BCEWithLogitsLoss()
    seen = []
    for _ in range(epochs):
        reseed()
        batches = []
        for xb, yb in loader:
            batches.append(xb.clone())
            optimizer.zero_grad()
            loss_fn(model(xb).squeeze(-1), yb).backward()
            optimizer.step()
        seen.append(batches)
    return seen


def _same_batches(seen) -> bool:
    first = seen[0]
    return all(
        len(b) == len(first) and all(torch.equal(x, y) for x, y in zip(b, first, strict=True))
        for b in seen[1:]
    )


def test_row_poisson_batches_repeated_every_epoch_are_refused_or_accounted():
    # torch.manual_seed(...) inside the epoch loop (a common reproducibility slip) makes
    # Opacus' Poisson sampler (global RNG, generator=None) draw the same batches every
    # epoch, while the noise comes from its own generator: E epochs are then T Poisson
    # steps, each a Gaussian of noise SIGMA / sqrt(E) on the same batch (the E noisy
    # sums of one batch are equivalent to their mean), which constant gradients attain.
    epochs = 4
    torch.manual_seed(0)
    model = torch.nn.Linear(5, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    engine = PrivacyEngine(accountant=MECHANISM)
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=optimizer, data_loader=DataLoader(_data(), batch_size=BATCH),
        noise_multiplier=SIGMA, max_grad_norm=1.0, poisson_sampling=True,
        noise_generator=torch.Generator().manual_seed(5),
    )  # fmt: skip
    try:
        reseed = lambda: torch.manual_seed(1234)  # noqa: E731
        seen = _epochs_with_reseed(loader, model, optimizer, epochs, reseed)
        eps = engine.get_epsilon(DELTA)
    except UnaccountedSamplerError:
        return  # refused: the run broke the promise of fresh Poisson batches
    assert _same_batches(seen)  # the premise of the reference below
    truth = _poisson_pld(1.0 / len(loader), len(loader), SIGMA / math.sqrt(epochs))
    assert eps >= truth  # on main: 3.33 printed, the run's epsilon is 8.34


def _fixed_size_one_step_epsilon(sigma: float, q: float, delta: float) -> float:
    """Epsilon of one fixed-size step at noise ``sigma`` (replace-one, so mu = 2 / sigma),
    attained by a dataset pair: ``q delta_N(log(1 + (e^eps - 1) / q))`` (Balle, Barthe,
    Gaboardi 2018, Table 1), the remove direction of the Poisson-subsampled Gaussian at
    noise sigma / 2."""
    return subsampled_gaussian_epsilon(q, sigma / 2.0, delta, direction="remove")


def test_row_fixed_size_batches_repeated_every_epoch_are_refused_or_accounted():
    # the generator given to FixedSizeBatchSampler reseeded at every epoch: the same T
    # batches each epoch.  Step j of every epoch is then one fixed-size step at noise
    # SIGMA / sqrt(E); one such step alone already costs more than the number printed.
    epochs = 8
    gen = torch.Generator()
    loader = DataLoader(_data(), batch_sampler=FixedSizeBatchSampler(N, BATCH, generator=gen))
    torch.manual_seed(0)
    model = torch.nn.Linear(5, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    engine = PrivacyEngine(accountant=MECHANISM)
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=SIGMA,
        max_grad_norm=1.0, poisson_sampling=False,
    )  # fmt: skip
    try:
        seen = _epochs_with_reseed(loader, model, optimizer, epochs, lambda: gen.manual_seed(7))
        eps = engine.get_epsilon(DELTA)
    except UnaccountedSamplerError:
        return
    assert _same_batches(seen)
    truth_at_least = _fixed_size_one_step_epsilon(SIGMA / math.sqrt(epochs), BATCH / N, DELTA)
    assert eps >= truth_at_least  # on main: 20.11 printed, one step alone costs more


# ----------------------------------------------------------------------------------
# review (issue 35): a data path of another rate adopted from a checkpoint or a loader
# ----------------------------------------------------------------------------------


def _fixed_size_attained(q: float, steps: int, sigma: float = SIGMA) -> float:
    """A lower bound on the epsilon of ``steps`` fixed-size steps at rate ``q``.

    The one-directional pairs R (remove-like) and A (its swap) of the Poisson-subsampled
    Gaussian at replace-one noise ``sigma / 2`` are each attained by a dataset pair
    (docs/theory/fixed_size.md), so dp_accounting's optimistic PLD of that subsampled
    Gaussian (the larger of the two directions) is below the run's epsilon.
    """
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    pld = pld_lib.from_gaussian_mechanism(
        sigma / 2, sampling_prob=q, pessimistic_estimate=False,
        value_discretization_interval=1e-4, use_connect_dots=False,
    )  # fmt: skip
    return pld.self_compose(steps).get_epsilon_for_delta(DELTA)


def test_attaching_a_fixed_size_loader_of_another_rate_never_lowers_the_recorded_steps():
    # 10 steps at q = 24/240, then a loader with the same batch size and batches per
    # epoch over 2400 records (q = 0.01) is attached: the recorded steps were taken at
    # 0.1 and must keep costing that (main: 8.51 before, 2.58 after, no new step).
    loader = DataLoader(_data(), batch_sampler=FixedSizeBatchSampler(N, BATCH, generator=_gen()))
    engine, model, opt, loader, _ = _private(loader, poisson_sampling=False)
    steps = _train(model, opt, loader, 1)
    truth = _fixed_size_attained(BATCH / N, steps)
    assert engine.get_epsilon(DELTA) >= truth
    other = DataLoader(_data(2400), batch_sampler=FixedSizeBatchSampler(2400, BATCH, steps=10))
    try:
        engine.accountant.attach_data_loader(other)
    except (ValueError, UnaccountedSamplerError):
        return  # refused: the data path changed
    assert engine.get_epsilon(DELTA) >= truth


def test_checkpoint_of_another_poisson_rate_does_not_price_the_new_steps():
    # A checkpoint of a run whose Poisson sampler drew at 0.01 (10 batches per epoch)
    # restored into a run on Opacus' default loader at 1/len(loader) = 0.1: the new steps
    # are drawn at 0.1 and must cost at least their own Poisson number (main: 0.253
    # printed, the 10 new steps alone cost 1.98).
    sampler = UniformWithReplacementSampler(num_samples=2400, sample_rate=0.01, steps=10)
    found = _checkpoint_then_run(DataLoader(_data(2400), batch_sampler=sampler),
                                 DataLoader(_data(), batch_size=BATCH), poisson_sampling=True)
    if found is not None:  # None: refused, the checkpoint's data path is not this run's
        eps, steps, loader = found
        assert eps >= _poisson_pld(1.0 / len(loader), steps)


def _checkpoint_then_run(first, second, *, poisson_sampling=False):
    """One epoch on ``first``, its accountant's state loaded into a run on ``second``,
    one epoch there: ``(epsilon, steps of the second run, its loader)``, or None if the
    checkpoint or a step was refused."""
    engine, model, opt, loader, _ = _private(first, poisson_sampling=False)
    _train(model, opt, loader, 1)
    state = engine.accountant.state_dict()
    engine, model, opt, loader, _ = _private(second, poisson_sampling=poisson_sampling)
    try:
        engine.accountant.load_state_dict(state)
        steps = _train(model, opt, loader, 1)
        return engine.get_epsilon(DELTA), steps, loader
    except (ValueError, UnaccountedSamplerError):
        return None


def test_checkpoint_of_another_fixed_size_rate_does_not_price_the_new_steps():
    # the same with fixed-size batches: checkpoint at 24 of 2400, run on 24 of 240
    # (main: 2.90 printed, the 10 new steps alone cost at least 8.34)
    big = FixedSizeBatchSampler(2400, BATCH, steps=10, generator=_gen())
    small = FixedSizeBatchSampler(N, BATCH, generator=_gen())
    found = _checkpoint_then_run(DataLoader(_data(2400), batch_sampler=big),
                                 DataLoader(_data(), batch_sampler=small))
    if found is not None:
        eps, steps, _ = found
        assert eps >= _fixed_size_attained(BATCH / N, steps)


def test_fixed_size_bracket_is_a_lower_bound_on_the_run_or_says_it_is_a_dominating_pairs():
    # The fixed-size bracket is that of S^T, a pair that dominates the run; the run's own
    # worst case is only known to lie above R^T (attained, docs/theory/fixed_size.md).
    # Its lower end (main: 8.5097) is above R^T's (8.3416), so the accountant must say
    # it brackets a dominating pair (as the ledger and compose() do), or give a lower
    # end that is a lower bound, and its summary must not call it the run's bracket.
    loader = DataLoader(_data(), batch_sampler=FixedSizeBatchSampler(N, BATCH, generator=_gen()))
    engine, model, opt, loader, _ = _private(loader, poisson_sampling=False)
    steps = _train(model, opt, loader, 1)
    bracket = engine.accountant.epsilon_bounds(DELTA)
    attained = _fixed_size_attained(BATCH / N, steps)
    if getattr(bracket, "bounds", "mechanism") == "mechanism":
        assert bracket[0] <= attained
        assert "proved bracket" not in engine.accountant.summary(DELTA) or bracket[0] <= attained
    else:
        assert bracket.bounds == "dominating pair"
        assert "dominating pair" in engine.accountant.summary(DELTA)
