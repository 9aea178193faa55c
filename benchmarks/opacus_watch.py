"""CPU cost of dpacct's watch on what an Opacus run iterates (issue 35), per training step.

The suite's small model (tests/test_opacus.py: a 30-16-1 MLP, batches of 32 from 455
records, here random features of the breast-cancer shape) is trained on CPU with
Opacus 1.6 three ways, in the same process, alternating, for a few rounds:

* ``watched``: ``PrivacyEngine(accountant="dpacct")`` as users get it: the loader's
  batch sampler is watched (:mod:`dpacct._opacus_watch`) and every step is checked
  before the ledger records it;
* ``unwatched``: the same accountant with the watch taken off (the loader's own batch
  sampler put back, no step check): what the accountant cost before issue 35;
* ``opacus rdp``: Opacus' own ``RDPAccountant`` (the peer: no data-path checks).

Each cell is the CPU time (``time.process_time``) per optimiser step of one epoch, the
best of ``rounds * epochs`` epochs run interleaved (one epoch of each setting in turn,
so that load drifts hit all three alike); ``overhead`` is watched / unwatched - 1 (the
budget is 5 %).  The watch's own work is also timed alone (``see`` + ``check_step``
on a batch of 32 indices, 20 000 times), which load disturbs far less than a step.
torch runs on one thread: on a shared machine its idle intra-op threads spin and
their CPU time swamps the comparison.

Run from the repository root::

    python -m benchmarks.opacus_watch            # 3 rounds of 5 epochs per setting
    python -m benchmarks.opacus_watch --rounds 5 --epochs 10

Timings depend on the machine and its load: compare the rows of one run.
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any

import numpy as np

N, FEATURES, BATCH = 455, 30, 32


def _setup(kind: str, poisson: bool, seed: int = 0) -> tuple[Any, Any, Any, Any]:
    import torch
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    import dpacct.opacus  # noqa: F401  (registers "dpacct")

    g = torch.Generator().manual_seed(seed)
    X = torch.randn(N, FEATURES, generator=g)
    data = TensorDataset(X, (X[:, 0] > 0).float())
    loader = DataLoader(data, batch_size=BATCH, shuffle=not poisson, generator=g)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = PrivacyEngine(accountant="rdp" if kind == "opacus rdp" else "dpacct")
        model, optimizer, loader = engine.make_private(
            module=model,
            optimizer=torch.optim.SGD(model.parameters(), lr=0.5),
            data_loader=loader,
            noise_multiplier=1.0,
            max_grad_norm=1.0,
            poisson_sampling=poisson,
        )
    if kind == "unwatched":
        watched = loader.batch_sampler
        object.__setattr__(loader, "batch_sampler", watched.__dict__["_inner"])
        engine.accountant._watch = None
    return engine, model, optimizer, loader


def _epoch_cpu(setup: tuple[Any, Any, Any, Any]) -> float:
    """CPU seconds per optimiser step over one pass of the loader."""
    import torch

    _, model, optimizer, loader = setup
    loss_fn = torch.nn.BCEWithLogitsLoss()
    steps = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.process_time()
        for xb, yb in loader:
            optimizer.zero_grad()
            loss_fn(model(xb).squeeze(-1), yb).backward()
            optimizer.step()
            steps += 1
        return (time.process_time() - start) / steps


def _watch_alone(repeats: int = 20_000) -> float:
    """CPU seconds of one batch's ``see`` plus one ``check_step``, on a Poisson path."""
    from dpacct._opacus_data_path import DataPath
    from dpacct._opacus_watch import BatchWatch

    class _Opt:  # a DPOptimizer's per-sample gradient of the batch
        def __init__(self) -> None:
            import torch

            p = torch.nn.Parameter(torch.zeros(1))
            p.grad_sample = torch.zeros(BATCH, 1)
            self.params = [p]

    rng = np.random.default_rng(0)
    batches = [sorted(rng.choice(N, BATCH, replace=False).tolist()) for _ in range(64)]
    w = BatchWatch(DataPath("poisson", "UniformWithReplacementSampler", 14, 1 / 14), N, tuple)
    w.start(())
    opt = _Opt()
    start = time.process_time()
    for i in range(repeats):
        w.see(batches[i % 64])
        w.check_step(opt, 1)
    return (time.process_time() - start) / repeats


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)  # CPU time of spinning intra-op threads is load, not work
    kinds = ("watched", "unwatched", "opacus rdp")
    print("| loader | watched ms/step | unwatched ms/step | overhead | opacus rdp ms/step "
          "| watched / opacus rdp |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- |")
    for poisson in (True, False):
        setups = {k: _setup(k, poisson) for k in kinds}
        best = {k: float("inf") for k in kinds}
        for _ in range(args.rounds * args.epochs):  # one epoch of each, interleaved
            for kind in kinds:
                best[kind] = min(best[kind], _epoch_cpu(setups[kind]))
        name = "Poisson (Opacus default)" if poisson else "shuffle, poisson_sampling=False"
        w, u, r = (best[k] * 1e3 for k in kinds)
        print(f"| {name} | {w:.3f} | {u:.3f} | {w / u - 1:+.1%} | {r:.3f} | {w / r:.2f} |")
    alone = _watch_alone()
    step = min(best["unwatched"], best["watched"])
    print(f"\nthe watch alone (see + check_step, batch of {BATCH}): {alone * 1e6:.1f} us "
          f"per step = {alone / step:.1%} of an unwatched shuffled step")  # fmt: skip


if __name__ == "__main__":
    main()
