"""The plot and the numbers of docs/user_guide/batch_samplers.md ("Which batch sampler?").

    python -m benchmarks.samplers_plot            # writes docs/_static/batch_samplers.png
                                                  # and docs/_static/batch_samplers.json

One typical DP-SGD run: 60 000 records, expected batch 600 (T = 100 steps per epoch,
sampling rate 0.01), 10 epochs (1 000 steps), delta 1e-5.  For each noise multiplier of
:data:`SIGMAS`, the epsilon of every batch sampler dpacct accounts, through the public
API only (so the page follows the library: re-running this script moves a curve when
a route behind ``random_allocation`` tightens; the direct k = 2 route of issue 39 does
not move the k = 10 one, out of its range, nor the k = 2 variant below):

* ``dp.sampler_report(sigma, 1e-5, scheme=..., dataset_size=60_000, batch_size=600,
  epochs=10)``: Poisson, shuffling (proved upper bound and Chua et al.'s lower bound),
  balls-in-bins (random allocation, k = 1 per epoch), random allocation with k = 10 of
  the 1 000 steps (one allocation for the run), fixed-size (replace-one; in the JSON,
  not on the plot: another neighbouring relation);
* ``amplified_bandmf(sigma, 1000, num_bands=4, sample_rate=0.04)``: DP-MF (BandMF, 4
  bands, a strategy of column norm one) under cyclic Poisson sampling (the records in 4
  groups, each step samples its group at rate 0.04: the same expected batch of 600);
* JAX Privacy's ``BallsInBinsSampling`` run over 10 cycles keeps each record's bin
  (steps ``j, j + T, ...``): not the per-epoch balls-in-bins above.  Bracketed here
  by 10 unamplified Gaussians above (``GaussianMechanism(sigma / sqrt(10))``) and,
  below, the query that sums a record's 10 steps: one allocation of 1 of ``T`` at
  noise multiplier ``sigma / sqrt(10)`` (``random_allocation_lower_epsilon``);
* in the JSON only (:func:`k2_variant`): random allocation of 2 of each 200 steps over
  5 blocks, where ``random_allocation`` also tries its direct k = 2 route.

It also writes the table of the page (between its marker comments).  The docs build
never runs this; tests/test_batch_samplers_page.py checks that the page's table is the
JSON's and recomputes the numbers.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

DOCS_STATIC = Path(__file__).resolve().parent.parent / "docs" / "_static"
PNG = DOCS_STATIC / "batch_samplers.png"
JSON = DOCS_STATIC / "batch_samplers.json"
PAGE = DOCS_STATIC.parent / "user_guide" / "batch_samplers.md"
#: the page's generated table sits between these two lines
TABLE_START = "<!-- samplers-table: generated from docs/_static/batch_samplers.json -->"
TABLE_END = "<!-- end samplers-table -->"
#: the noise multiplier of the page's table
TABLE_SIGMA = 1.0

#: the run: records, expected batch size, epochs, delta, BandMF bands
DATASET, BATCH, EPOCHS, DELTA, BANDS = 60_000, 600, 10, 1e-5, 4
#: noise multipliers on the plot's x-axis
SIGMAS = (0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 1.5, 2.0)

#: curve name -> (label on the plot, style)
CURVES = {
    "poisson": ("Poisson (Opacus default)", dict(color="C0", marker="o")),
    "shuffle": ("shuffling, proved upper bound (10 unamplified Gaussians)",
                dict(color="C3", marker="s")),
    "shuffle_lower": ("shuffling, certified lower bound", dict(color="C3", ls="--")),
    "balls-in-bins": ("balls-in-bins (random allocation, k = 1 per epoch)",
                      dict(color="C2", marker="^")),
    "random-allocation": (f"random allocation, k = {EPOCHS} of the {EPOCHS * DATASET // BATCH} "
                          "steps (today: the reduction)",
                          dict(color="C4", marker="v", ls=":")),
    "bandmf": (f"DP-MF: BandMF ({BANDS} bands), cyclic Poisson", dict(color="C1", marker="D")),
    "fixed_bins_lower": ("JAX BallsInBinsSampling over 10 cycles (fixed bins): lower bound",
                         dict(color="0.4", ls="--")),
}


def epsilons(sigma: float) -> dict[str, float]:
    """Every scheme's epsilon at ``sigma`` for the run (public API only)."""
    import dpacct as dp
    from dpacct.accountant import random_allocation_lower_epsilon
    from dpacct.mechanisms import GaussianMechanism, amplified_bandmf

    rep = dp.sampler_report(
        sigma, DELTA, scheme="poisson", dataset_size=DATASET, batch_size=BATCH, epochs=EPOCHS
    )
    out = {r.scheme: float(r.epsilon) for r in rep.rows}
    out["shuffle_lower"] = float(rep["shuffle"].lower)
    out["balls-in-bins_lower"] = float(rep["balls-in-bins"].lower)
    steps = rep.steps_per_epoch * EPOCHS
    run = amplified_bandmf(
        sigma, steps, num_bands=BANDS, sample_rate=min(1.0, BANDS * BATCH / DATASET)
    )
    out["bandmf"] = float(run.epsilon(DELTA))
    # JAX Privacy's BallsInBinsSampling(iterations=10 T, cycle_length=T) keeps a record's
    # bin in every cycle: above, E unamplified Gaussians (each record is in exactly E
    # steps); below, the linear query that sums a record's E steps, which is one
    # allocation of 1 of T at noise multiplier sigma / sqrt(E) (max-test lower bound)
    fixed = GaussianMechanism(sigma=sigma / math.sqrt(EPOCHS))
    out["fixed_bins"] = float(fixed.epsilon(DELTA))
    out["fixed_bins_lower"] = float(
        random_allocation_lower_epsilon(sigma / math.sqrt(EPOCHS), rep.steps_per_epoch, DELTA)
    )
    return out


def k2_variant(sigma: float) -> float:
    """Not plotted (the page quotes it): random allocation of k = 2 of each 2 T steps,
    E / 2 blocks, where ``random_allocation`` also tries its direct k = 2 route
    (3 <= 2 T <= 300); about 10 CPU s a sigma, so kept out of :func:`epsilons`."""
    from dpacct.accountant import random_allocation
    from dpacct.mechanisms import GaussianMechanism

    pair = random_allocation(
        GaussianMechanism(sigma), 2 * DATASET // BATCH, k=2, epochs=EPOCHS // 2
    )
    return float(pair.epsilon(DELTA))


def compute() -> dict:
    """The numbers of the plot and the page, with the CPU seconds they took."""
    import dpacct

    c0 = time.process_time()
    rows = []
    for s in SIGMAS:
        rows.append({"sigma": s, **epsilons(s), "random-allocation_k2": k2_variant(s)})
        print(f"sigma {s}: " + ", ".join(f"{k} {v:.4f}" for k, v in rows[-1].items()
                                         if k != "sigma"), flush=True)
    return {
        "dpacct_version": getattr(dpacct, "__version__", "?"),
        "command": "python -m benchmarks.samplers_plot",
        "run": {"dataset_size": DATASET, "batch_size": BATCH, "epochs": EPOCHS,
                "delta": DELTA, "bandmf_bands": BANDS},
        "rows": rows,
        "cpu_s": time.process_time() - c0,
    }


#: the page's table: (label, upper key, lower key or None, relation, loader / library)
TABLE_ROWS = (
    ("Poisson", "poisson", None, "add/remove",
     "Opacus default (`poisson_sampling=True`); JAX Privacy `CyclicPoissonSampling`"),
    ("shuffling", "shuffle", "shuffle_lower", "zero-out",
     "`DataLoader(shuffle=True)`; Opacus `poisson_sampling=False`"),
    ("balls-in-bins (k = 1 per epoch, fresh bins each epoch)", "balls-in-bins",
     "balls-in-bins_lower", "add/remove",
     "a loader that puts each record in one random batch per epoch; JAX Privacy "
     "`BallsInBinsSampling` for one cycle"),
    (f"random allocation, k = {EPOCHS} of the {EPOCHS * DATASET // BATCH} steps",
     "random-allocation", None, "add/remove", "`dp.sampler_report(..., k=10)`"),
    (f"DP-MF: BandMF, {BANDS} bands, cyclic Poisson", "bandmf", None, "add/remove",
     f"JAX Privacy `CyclicPoissonSampling(cycle_length={BANDS})` + `amplified_bandmf_event`"),
    (f"JAX `BallsInBinsSampling` over {EPOCHS} cycles (fixed bins)", "fixed_bins",
     "fixed_bins_lower", "add/remove", "not accounted today: a bracket only"),
    ("fixed-size batches without replacement", "fixed-size", None, "replace-one",
     "a fresh fixed-size batch each step"),
)


def page_table(data: dict) -> str:
    """The page's markdown table at :data:`TABLE_SIGMA`, from the JSON's numbers."""
    row = next(r for r in data["rows"] if r["sigma"] == TABLE_SIGMA)
    lines = [
        "| sampler | epsilon (upper bound) | certified lower bound | relation | loader |",
        "| --- | --- | --- | --- | --- |",
    ]
    for label, up, low, relation, loader in TABLE_ROWS:
        lower = "-" if low is None else f"{row[low]:.3f}"
        lines.append(f"| {label} | {row[up]:.3f} | {lower} | {relation} | {loader} |")
    return "\n".join(lines)


def write_page_table(data: dict, page: Path = PAGE) -> None:
    """Replace the table between the page's markers by :func:`page_table`."""
    text = page.read_text(encoding="utf-8")
    head, rest = text.split(TABLE_START + "\n", 1)
    _, tail = rest.split(TABLE_END, 1)
    page.write_text(f"{head}{TABLE_START}\n{page_table(data)}\n{TABLE_END}{tail}", "utf-8")


def plot(data: dict, path: Path) -> None:
    """Epsilon against the noise multiplier, one curve per sampler, log y."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = data["rows"]
    xs = [r["sigma"] for r in rows]
    fig, ax = plt.subplots(figsize=(7.5, 6.8), layout="constrained")
    for key, (label, style) in CURVES.items():
        ax.plot(xs, [r[key] for r in rows], label=label, **style)
    ax.set_yscale("log")
    ax.set_xlabel("noise multiplier sigma")
    ax.set_ylabel(f"epsilon at delta = {DELTA:g}")
    ax.set_title(
        f"{DATASET:_} records, expected batch {BATCH}, {EPOCHS} epochs "
        f"({DATASET // BATCH * EPOCHS:_} steps)".replace("_", " "),
        fontsize="medium",
    )
    ax.grid(True, which="both", alpha=0.3)
    fig.legend(loc="outside lower center", fontsize="small", ncols=1)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replot", action="store_true", help="redraw the PNG from the JSON")
    args = parser.parse_args(argv)
    if args.replot:
        data = json.loads(JSON.read_text())
    else:
        data = compute()
        from benchmarks.checkouts import write_json

        write_json(str(JSON), data)
    plot(data, PNG)
    write_page_table(data)
    print(f"wrote {PNG}, {JSON} and the table of {PAGE.name} ({data['cpu_s']:.0f} CPU s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
