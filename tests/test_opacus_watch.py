"""The watch on what an Opacus run iterates (dpacct._opacus_watch), without training.

The watch is fed batches directly (and through a real torch ``DataLoader``); its verdict
is compared with a brute-force reading of the same batches: a Python set per pass for
"each index once per epoch", explicit range and size checks.  The real training loops
are in tests/test_opacus_loader_matrix.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from dpacct._opacus_data_path import DataPath, identify, signature  # noqa: E402
from dpacct._opacus_watch import BatchWatch, WatchedBatchSampler, watch  # noqa: E402
from dpacct.opacus import UnaccountedSamplerError  # noqa: E402

SHUFFLE = DataPath("shuffle", "RandomSampler", 4, 0.25, 3)
POISSON = DataPath("poisson", "UniformWithReplacementSampler", 4, 0.25)
FIXED = DataPath("fixed-size", "FixedSizeBatchSampler", 4, 0.25, 3)


class _Opt:
    """What the check reads from a DPOptimizer: no per-sample gradients kept."""

    def __init__(self) -> None:
        self.params: list = []


def _brute_force_once(passes: list[list[list[int]]], n: int, b: int, t: int) -> bool:
    """True when every pass draws each index of range(n) at most once, <= t batches <= b."""
    for batches in passes:
        seen: set[int] = set()
        if len(batches) > t:
            return False
        for batch in batches:
            if len(batch) > b or any(i < 0 or i >= n or i in seen for i in batch):
                return False
            if len(set(batch)) != len(batch):
                return False
            seen.update(batch)
    return True


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.lists(st.lists(st.integers(-1, 12), min_size=1, max_size=3), min_size=1, max_size=4),
        min_size=1,
        max_size=3,
    )
)
def test_shuffled_watch_agrees_with_a_brute_force_reading(passes):
    w = BatchWatch(SHUFFLE, 12, lambda s: ())
    for batches in passes:
        w.start(None)
        for batch in batches:
            w.see(batch)
    assert (w.broken is None) == _brute_force_once(passes, 12, 3, 4)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_true_shuffles_are_never_flagged(seed):
    rng = np.random.default_rng(seed)
    w = BatchWatch(DataPath("shuffle", "RandomSampler", 5, 0.2, 4), 18, lambda s: ())
    for _ in range(3):
        w.start(None)
        perm = rng.permutation(18)
        for j in range(0, 18, 4):
            w.see(perm[j : j + 4].tolist())
    assert w.broken is None


def test_each_promise_names_what_it_found():
    w = BatchWatch(FIXED, 12, lambda s: ())
    w.start(None)
    w.see([0, 1, 2])
    w.see([0, 1])
    assert "a batch of 2 records" in w.broken and "another size" in w.broken
    w = BatchWatch(POISSON, 12, lambda s: ())
    w.start(None)
    w.see([3, 3])
    assert "index 3 drawn twice in one batch" in w.broken
    w = BatchWatch(POISSON, 12, lambda s: ())
    w.start(None)
    w.see([3, 12])
    assert "index 12 drawn, outside the dataset of 12 records" in w.broken
    w = BatchWatch(SHUFFLE, 12, lambda s: ())
    w.start(None)
    for batch in ([0], [1], [2], [3], [4]):
        w.see(batch)
    assert "5 batches in one pass" in w.broken


def test_a_changed_sampler_and_an_early_break_are_seen_at_the_next_pass():
    w = BatchWatch(SHUFFLE, 12, lambda s: (s,))
    w.start("a")
    w.see([0, 1, 2])
    w.start("b")
    assert "it was a, it is now b" in w.broken
    w = BatchWatch(SHUFFLE, 12, lambda s: ())
    w.start(None)
    w.see([0, 1, 2])
    w.check_step(_Opt(), 1)  # a step used the pass ...
    w.start(None)  # ... which ends after 1 of 4 batches
    assert "restarted after 1 of its 4 batches" in w.broken
    with pytest.raises(UnaccountedSamplerError, match="nothing was recorded"):
        w.check_step(_Opt(), 1)


def test_a_peek_is_forgotten_and_a_step_without_a_drawn_batch_is_refused():
    w = BatchWatch(SHUFFLE, 12, lambda s: ())
    w.start(None)
    w.see([0, 1, 2])  # a peek: no step used this pass
    w.start(None)
    assert w.broken is None and len(w.pending) == 0
    w.see([5, 6, 7])
    w.check_step(_Opt(), 1)
    with pytest.raises(UnaccountedSamplerError, match="drew 0 since the last step"):
        w.check_step(_Opt(), 1)


def test_the_replaced_loader_may_be_iterated_but_not_stepped_on():
    class Opt:
        def __init__(self, size):
            p = torch.nn.Parameter(torch.zeros(1))
            p.grad_sample = torch.zeros(size, 1)
            self.params = [p]

    w = BatchWatch(POISSON, 12, lambda s: (), replaced=True)
    w.start(None)
    w.see([0, 1, 2])
    w.check_step(Opt(5), 1)  # the step's batch (5 records) came from elsewhere
    w.see([3, 4, 5])
    with pytest.raises(UnaccountedSamplerError, match="which Opacus replaced"):
        w.check_step(Opt(3), 1)


def test_watching_a_loader_keeps_its_batches_length_and_attributes():
    data = TensorDataset(torch.arange(12.0).reshape(12, 1))
    loader = DataLoader(data, batch_size=3, shuffle=True,
                        generator=torch.Generator().manual_seed(0))  # fmt: skip
    path = identify(loader)
    state = watch(loader, path, signature)
    assert type(loader.batch_sampler) is WatchedBatchSampler
    assert len(loader) == 4 and loader.batch_sampler.batch_size == 3
    seen = torch.cat([xb for (xb,) in loader]).flatten().sort().values
    assert torch.equal(seen, torch.arange(12.0)) and state.broken is None
    assert identify(loader) == path  # identification sees through the watch
    again = watch(loader, path, signature)  # re-watching replaces the watch, not the proxy
    assert again is not state and type(loader.batch_sampler.__dict__["_inner"]).__name__ == (
        "BatchSampler"
    )
    assert watch(DataLoader(data, batch_size=None), path, signature) is None


def test_a_change_before_the_first_pass_is_seen():
    data = TensorDataset(torch.arange(12.0).reshape(12, 1))
    loader = DataLoader(data, batch_size=3)
    state = watch(loader, identify(loader), signature)
    loader.batch_sampler.batch_size = 4  # between make_private and the first epoch
    list(loader)
    assert "batch sampler changed" in state.broken and "3" in state.broken


@pytest.mark.parametrize(
    ("scheme", "q", "size"),
    [("poisson", 0.1, None), ("fixed-size", 0.1, 24)],
)
def test_a_pass_that_repeats_an_earlier_one_is_refused(scheme, q, size):
    # a sampler reseeded every epoch draws the same batches: not fresh, independent steps
    rng = np.random.default_rng(3)
    n, steps = 240, 10
    draws = [np.sort(rng.choice(n, size=24, replace=False)) for _ in range(steps)]
    w = BatchWatch(DataPath(scheme, "sampler", steps, q, size), n, lambda s: ())
    w.start(None)
    for b in draws:
        w.see(b)
    assert w.broken is None
    w.start(None)
    w.see(rng.choice(n, size=24, replace=False))  # a fresh first batch: fine
    assert w.broken is None
    w.see(draws[1])  # the second batch repeats the first pass's second batch
    assert w.broken is not None and "batch 2 of pass 2" in w.broken
    assert "probability" in w.broken


def test_a_repeat_that_fresh_draws_make_likely_is_not_evidence():
    # four records at rate 0.5: every subset has probability 1/16, repeats happen by chance
    w = BatchWatch(DataPath("poisson", "sampler", 2, 0.5, None), 4, lambda s: ())
    for _ in range(3):
        w.start(None)
        w.see([0, 2])
        w.see([1])
    assert w.broken is None
