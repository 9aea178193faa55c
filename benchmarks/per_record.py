"""CPU cost of per-record accounting (issue 40) per Opacus training step, at n = 50 000.

Two models on random data of n = 50 000 records, batches of 256 expected (q = 256 / n),
trained on CPU with Opacus 1.6 and dpacct's accountant two ways, in the same process,
alternating:

* ``opacus poisson``: Opacus' default Poisson loader (``make_private(poisson_sampling=
  True)``) and its clipping: the run without per-record accounting;
* ``per-record``: :class:`~dpacct._opacus_per_record.PerRecordAccounting` with a
  per-record budget: its sampler charges every admitted record's filter before each
  batch (``n`` records x the orders, folded lazily), draws the batch among them, and
  each sampled gradient is clipped at its own threshold before Opacus' clipping.

Each cell is the CPU time (``time.process_time``) per optimiser step over ``--steps``
steps, the best of ``--rounds`` interleaved rounds; ``overhead`` = per-record / opacus
poisson - 1 (the issue's budget: 5 %).  Also timed alone: the filter's step
(``begin_step`` at n = 50 000), and a threshold refresh (one pass of per-sample gradient
norms over all n records at the current model), whose cost is the user's choice of
cadence: it is shown per step amortised over one refresh per epoch and per ten epochs.
torch runs on one thread.

Run from the repository root::

    python -m benchmarks.per_record                 # 3 rounds of 100 steps
    python -m benchmarks.per_record --rounds 5 --steps 200

Timings depend on the machine and its load: compare the rows of one run.
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any

import numpy as np

N, BATCH = 50_000, 256
#: (name, features, hidden, classes): the suite's small MLP shape, and an MNIST-shaped MLP
MODELS = (("30-16-1 MLP", 30, 16, 1), ("784-128-10 MLP", 784, 128, 10))


def _data(features: int, classes: int, seed: int = 0) -> Any:
    import torch

    g = torch.Generator().manual_seed(seed)
    X = torch.randn(N, features, generator=g) / features**0.5
    y = (X[:, 0] > 0).float() if classes == 1 else torch.randint(0, classes, (N,), generator=g)
    return torch.utils.data.TensorDataset(X, y)


def _loss(classes: int) -> Any:
    import torch

    if classes == 1:
        crit = torch.nn.BCEWithLogitsLoss()
        return lambda out, y: crit(out.squeeze(-1), y)
    return torch.nn.CrossEntropyLoss()


def _setup(kind: str, model_spec: tuple, data: Any) -> dict[str, Any]:
    import torch
    from opacus import PrivacyEngine

    import dpacct.opacus  # noqa: F401  (registers "dpacct")
    from dpacct._opacus_per_record import PerRecordAccounting

    _, features, hidden, classes = model_spec
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(features, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, classes)
    )
    q = BATCH / N
    per_record = None
    if kind == "per-record":
        per_record = PerRecordAccounting(
            N, sample_rate=q, budget_epsilon=8.0, budget_delta=1e-5,
            generator=torch.Generator().manual_seed(1),
        )
        loader = per_record.data_loader(data)
    else:
        loader = torch.utils.data.DataLoader(data, batch_size=BATCH)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = PrivacyEngine(accountant="dpacct")
        model, optimizer, loader = engine.make_private(
            module=model,
            optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
            data_loader=loader,
            noise_multiplier=1.0,
            max_grad_norm=1.0,
            poisson_sampling=kind != "per-record",
        )
    loss = _loss(classes)
    if per_record is not None:
        per_record.attach(optimizer)
        per_record.refresh(model, data, lambda m, b: loss(m(b[0]), b[1]), batch_size=2048)
    return {"model": model, "optimizer": optimizer, "loader": loader, "loss": loss,
            "per_record": per_record, "data": data, "it": iter(loader)}


def _steps_cpu(setup: dict[str, Any], steps: int) -> float:
    """CPU seconds per optimiser step over ``steps`` steps (the loader restarted as needed)."""
    model, optimizer, loss = setup["model"], setup["optimizer"], setup["loss"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.process_time()
        for _ in range(steps):
            try:
                xb, yb = next(setup["it"])
            except StopIteration:
                setup["it"] = iter(setup["loader"])
                xb, yb = next(setup["it"])
            optimizer.zero_grad()
            loss(model(xb), yb).backward()
            optimizer.step()
        return (time.process_time() - start) / steps


def _filter_alone(repeats: int = 2000) -> float:
    """CPU seconds of one ``begin_step`` of the per-record filter at n = 50 000."""
    from dpacct.accountant.ledger.per_record import PerRecordFilter

    f = PerRecordFilter(N, budget_epsilon=8.0, budget_delta=1e-5)
    f.set_ratios(np.random.default_rng(0).uniform(1e-3, 1.0, N))
    f.begin_step(sigma=1.0, sample_rate=BATCH / N)
    start = time.process_time()
    for _ in range(repeats):
        f.begin_step(sigma=1.0, sample_rate=BATCH / N)
    return (time.process_time() - start) / repeats


def _refresh_cpu(setup: dict[str, Any]) -> float:
    pr, loss = setup["per_record"], setup["loss"]
    start = time.process_time()
    pr.refresh(setup["model"], setup["data"], lambda m, b: loss(m(b[0]), b[1]), batch_size=2048)
    return time.process_time() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)  # CPU time of spinning intra-op threads is load, not work
    kinds = ("per-record", "opacus poisson")
    print(f"n = {N}, q = {BATCH}/{N}, CPU ms per step (best of {args.rounds} rounds of "
          f"{args.steps} steps)")  # fmt: skip
    print("| model | per-record ms/step | opacus poisson ms/step | overhead "
          "| refresh s (one pass) | refresh per step, 1 / epoch | 1 / 10 epochs |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for spec in MODELS:
        data = _data(spec[1], spec[3])
        setups = {k: _setup(k, spec, data) for k in kinds}
        best = {k: float("inf") for k in kinds}
        for _ in range(args.rounds):
            for kind in kinds:
                best[kind] = min(best[kind], _steps_cpu(setups[kind], args.steps))
        refresh = _refresh_cpu(setups["per-record"])
        p, o = best["per-record"], best["opacus poisson"]
        epoch = N / BATCH
        print(f"| {spec[0]} | {p * 1e3:.3f} | {o * 1e3:.3f} | {p / o - 1:+.1%} | "
              f"{refresh:.2f} | {refresh / epoch / o:+.1%} | {refresh / epoch / 10 / o:+.1%} |")
    alone = _filter_alone()
    print(f"\nthe filter alone (begin_step over n = {N} records): {alone * 1e6:.0f} us per step")


if __name__ == "__main__":
    main()
