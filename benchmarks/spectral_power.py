"""Issue 37's experiment: the top of a DP-SGD self-composition by one spectral power.

A constant-sigma DP-SGD epsilon composes one subsampled-Gaussian step ``T`` times by
repeated squaring on two-scale grids (:func:`~dpacct.accountant.pld.twoscale.
self_compose_split`, ~17-27 certified products).  Since issue 37 a count of more than
``2^10`` squares only up to the ``2^SPECTRAL_FROM``-fold power and composes the rest by
one certified spectral power (:func:`~dpacct.accountant.pld.twoscale._spectral_top`:
Chernoff window, round-off and aliasing into the ``+inf`` mass), when its window has at
most ``SPECTRAL_MAX_N`` points and its certificate is at most ``SPECTRAL_ERR_TAILS`` tail
budgets.  This benchmark runs, each in a fresh process, cold, alternated over
``--rounds``:

* ``ladder``: the squaring ladder all the way (``SPECTRAL_FROM = 64``; main before);
* ``default``: the library as it is;
* ``spectral from m``: the spectral power forced from level ``m`` (both caps off), to show
  why it is not used there (the certificate grows with ``T / 2^m``, the window with the
  grid's fineness).

and prints the upper epsilon at delta 1e-5, the spectral certificate (the ``+inf`` mass
it added; ``-`` where the ladder answered), the CPU seconds (median) and ``ladder CPU /
row CPU``.  Timings depend on the machine and its load: compare the rows of one run::

    python -m benchmarks.spectral_power --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from benchmarks.everyday import measure

_IMPORTS = """
from dpacct.accountant import compose, poisson_subsample
from dpacct.mechanisms import GaussianMechanism
from dpacct.accountant.pld import twoscale
"""

_BODY = """{setup}
seen = []
real = twoscale._spectral_top
def recording(*args, **kwargs):
    out = real(*args, **kwargs)
    if out is not None:
        seen.append(out.inf_mass)
    return out
twoscale._spectral_top = recording
run = compose([poisson_subsample(GaussianMechanism(sigma={sigma}), sample_rate={q})],
              counts=[{steps}])
return run.epsilon(1e-5), (max(seen) if seen else None)"""

_SETUPS = {
    "ladder": "twoscale.SPECTRAL_FROM = 64",
    "default": "pass",
}
for _m in (6, 8, 12):
    _SETUPS[f"spectral from {_m}"] = (
        f"twoscale.SPECTRAL_FROM = {_m}; twoscale.SPECTRAL_MAX_N = 1 << 21; "
        "twoscale.SPECTRAL_ERR_TAILS = float('inf')"
    )

WORKLOADS = {
    "q 0.01, sigma 1.1, T 1e4": (0.01, 1.1, 10_000, ("ladder", "default", "spectral from 6")),
    "q 0.004, sigma 0.8, T 1e6": (
        0.004, 0.8, 1_000_000, ("ladder", "default", "spectral from 8", "spectral from 12")
    ),
}


def run(rounds: int = 3) -> list[dict]:
    rows = []
    for name, (q, sigma, steps, variants) in WORKLOADS.items():
        runs: dict[str, list[dict]] = {v: [] for v in variants}
        for _ in range(rounds):
            for v in variants:
                body = _BODY.format(setup=_SETUPS[v], sigma=sigma, q=q, steps=steps)
                runs[v].append(measure(sys.executable, _IMPORTS, body))
        ladder_cpu = statistics.median(r["cpu"] for r in runs["ladder"])
        for v in variants:
            cpu = statistics.median(r["cpu"] for r in runs[v])
            row = {
                "workload": name,
                "variant": v,
                "epsilon": runs[v][0]["answer"],
                "certificate": runs[v][0]["note"],
                "seconds": cpu,
                "ladder_over_row_cpu": ladder_cpu / cpu if cpu else None,
            }
            rows.append(row)
            cert = "-" if row["certificate"] is None else f"{row['certificate']:.1e}"
            print(f"| {name} | {v} | {row['epsilon']:.9f} | {cert} | {cpu:.4f} | "
                  f"{row['ladder_over_row_cpu']:.2f} |", flush=True)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    print("| workload | variant | epsilon | spectral certificate | CPU s | ladder CPU / CPU |")
    print("| --- | --- | --- | --- | --- | --- |")
    rows = run(args.rounds)
    if args.json:
        tmp = Path(args.json).with_suffix(".tmp")
        tmp.write_text(json.dumps(rows, indent=1))
        tmp.replace(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
