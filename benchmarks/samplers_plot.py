"""The plot and the numbers of docs/user_guide/batch_samplers.md ("Which batch sampler?").

    python -m benchmarks.samplers_plot            # writes docs/_static/batch_samplers.png
                                                  # and docs/_static/batch_samplers.json

One typical DP-SGD run: 60 000 records, expected batch 600 (T = 100 steps per epoch,
sampling rate 0.01), 10 epochs (1 000 steps), delta 1e-5.  For each noise multiplier of
:data:`SIGMAS`, the epsilon of every batch sampler dpacct accounts, through the public
API only (so the page follows the library: when the certified k-of-T random-allocation
bracket of issue 39 is merged behind ``random_allocation``, re-running this script
moves its curve):

* ``dp.sampler_report(sigma, 1e-5, scheme=..., dataset_size=60_000, batch_size=600,
  epochs=10)``: Poisson, shuffling (proved upper bound and Chua et al.'s lower bound),
  balls-in-bins (random allocation, k = 1 per epoch), random allocation with k = 10 of
  the 1 000 steps (one allocation for the run), fixed-size (replace-one; in the JSON,
  not on the plot: another neighbouring relation);
* ``amplified_bandmf(sigma, 1000, num_bands=4, sample_rate=0.04)``: DP-MF (BandMF, 4
  bands, a strategy of column norm one) under cyclic Poisson sampling (the records in 4
  groups, each step samples its group at rate 0.04: the same expected batch of 600).

The docs build never runs this; tests/test_batch_samplers_page.py checks that the
page's table is the JSON's and recomputes its cheap rows.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

DOCS_STATIC = Path(__file__).resolve().parent.parent / "docs" / "_static"
PNG = DOCS_STATIC / "batch_samplers.png"
JSON = DOCS_STATIC / "batch_samplers.json"

#: the run: records, expected batch size, epochs, delta, BandMF bands
DATASET, BATCH, EPOCHS, DELTA, BANDS = 60_000, 600, 10, 1e-5, 4
#: noise multipliers on the plot's x-axis
SIGMAS = (0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 1.5, 2.0)

#: curve name -> (label on the plot, style)
CURVES = {
    "poisson": ("Poisson (Opacus default)", dict(color="C0", marker="o")),
    "shuffle": ("shuffling, proved upper bound", dict(color="C3", marker="s")),
    "shuffle_lower": ("shuffling, lower bound (Chua et al.)", dict(color="C3", ls="--")),
    "balls-in-bins": ("balls-in-bins (random allocation, k = 1 per epoch)",
                      dict(color="C2", marker="^")),
    "random-allocation": (f"random allocation, k = {EPOCHS} of {EPOCHS} epochs' steps",
                          dict(color="C4", marker="v", ls=":")),
    "bandmf": (f"DP-MF: BandMF ({BANDS} bands), cyclic Poisson", dict(color="C1", marker="D")),
}


def epsilons(sigma: float) -> dict[str, float]:
    """Every scheme's epsilon at ``sigma`` for the run (public API only)."""
    import dpacct as dp
    from dpacct.mechanisms import amplified_bandmf

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
    return out


def compute() -> dict:
    """The numbers of the plot and the page, with the CPU seconds they took."""
    import dpacct

    c0 = time.process_time()
    rows = []
    for s in SIGMAS:
        rows.append({"sigma": s, **epsilons(s)})
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


def plot(data: dict, path: Path) -> None:
    """Epsilon against the noise multiplier, one curve per sampler, log y."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = data["rows"]
    xs = [r["sigma"] for r in rows]
    fig, ax = plt.subplots(figsize=(7.5, 4.6), layout="constrained")
    for key, (label, style) in CURVES.items():
        ax.plot(xs, [r[key] for r in rows], label=label, **style)
    ax.set_yscale("log")
    ax.set_xlabel("noise multiplier sigma")
    ax.set_ylabel(f"epsilon at delta = {DELTA:g}")
    ax.set_title(
        f"{DATASET:,} records, batch {BATCH}, {EPOCHS} epochs "
        f"({DATASET // BATCH * EPOCHS:,} steps)".replace(",", " "),
        fontsize="medium",
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
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
    print(f"wrote {PNG} and {JSON} ({data['cpu_s']:.0f} CPU s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
