"""Time and peak memory of the schedule's fast path, two checkouts side by side.

The rows of :mod:`benchmarks.shapes` whose answers come from the characteristic-function
fast path (:func:`dpacct.accountant.pld.schedule_fast.fast_epsilon_bounds`, the ledger's
rounding, upper and lower ends), plus 100 000 distinct phases, each measured in a fresh
subprocess of each checkout (old: say main; new: this branch), alternating, for a few
rounds; the table gives the best time of each, the peak resident memory of that
call above the memory before it, and the peak of traced allocations (``tracemalloc``,
one extra, untimed call: what the arrays of the call take, whatever the allocator
keeps).  The answers must agree up to the fast path's own changes; ``growth`` is the
time at ``10 N`` phases over the time at ``N``.

Run from the repository root::

    python -m benchmarks.schedule_scaling --old /path/to/main:/path/to/python \\
        --rounds 3 --json benchmarks/results/schedule_scaling.json

(``--old`` left out: this checkout alone.)  Timings depend on the machine and its
load: compare the rows of one run.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from typing import Any

from benchmarks.checkouts import old_new_sides, run_in_checkout, write_json

ROWS = {
    "100 phases x 10": ("random_phases", 100),
    "1000 phases x 10": ("random_phases", 1000),
    "10000 phases x 10": ("random_phases", 10_000),
    "100000 phases x 10": ("random_phases", 100_000),
    "decaying sigma, 1906 steps": ("exponential_noise", 1906),
    "decaying sigma, 10000 steps": ("exponential_noise", 10_000),
}

# the child: builds the workload, times (or traces) one call of both ends
_CHILD = r"""
import json, resource, sys, time, tracemalloc
spec = json.loads(sys.argv[1])
from benchmarks.shapes import _decay, _phases
from benchmarks.peer_registry import schedule_of
from dpacct.accountant.pld.schedule import (
    EXACT_CELLS, EXACT_VALUES, _lower_step, fast_epsilon_bounds, round_schedule)
kind, n = spec["row"]
wl = _phases(n) if kind == "random_phases" else _decay(n)
steps = schedule_of(wl)
exact = {"exact_cells": EXACT_CELLS, "exact_values": EXACT_VALUES}
up = round_schedule(steps, 2.0**-10, upper=True, **exact)
down = round_schedule(steps, 2.0**-10, upper=False, **exact)
fast_epsilon_bounds([(1.0, 0.01, 10)], 1e-5)  # imports and caches outside the timer
def call():
    hi = fast_epsilon_bounds(up, 1e-5, lower=False)
    lo = fast_epsilon_bounds(down, 1e-5, step=_lower_step(down), upper=False)
    return (None if lo is None else lo[0]), (None if hi is None else hi[1])
def rss_kb():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0
if spec["trace"]:
    tracemalloc.start()
    lo, hi = call()
    out = {"traced_mb": tracemalloc.get_traced_memory()[1] / 2**20}
else:
    before = rss_kb()
    t0 = time.perf_counter()
    lo, hi = call()
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = {"seconds": seconds, "rss_mb": max(peak - before, 0) / 1024}
out.update(cells=len(up), lower=lo, upper=hi)
print(json.dumps(out))
"""


def _run(root: str, python: str, row: tuple[str, int], trace: bool, timeout: float):
    spec = json.dumps({"row": list(row), "trace": trace})
    return run_in_checkout(root, python, [_CHILD, spec], timeout)


def measure(
    sides: dict[str, tuple[str, str]], rows: Sequence[str], rounds: int, timeout: float
) -> dict[str, dict[str, Any]]:
    """``{row: {side: record}}``: best time over ``rounds`` alternating runs, the RSS
    peak of that run, the traced peak of one extra run."""
    out: dict[str, dict[str, Any]] = {}
    for name in rows:
        row = ROWS[name]
        recs: dict[str, Any] = {side: None for side in sides}
        for _ in range(rounds):
            for side, (root, python) in sides.items():
                if recs[side] is not None and recs[side]["status"] != "ok":
                    continue  # timed out or failed once: not again
                rec = _run(root, python, row, False, timeout)
                best = recs[side]
                if best is None or rec["status"] != "ok" or rec["seconds"] < best["seconds"]:
                    recs[side] = rec
        for side, (root, python) in sides.items():
            if recs[side]["status"] == "ok":
                traced = _run(root, python, row, True, 2 * timeout)
                recs[side]["traced_mb"] = traced.get("traced_mb")
        out[name] = recs
        print(name, json.dumps(recs), file=sys.stderr, flush=True)
    return out


def _f(x: Any, spec: str) -> str:
    return "" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def format_table(results: dict[str, dict[str, Any]]) -> str:
    """A markdown table: per row and side, seconds, RSS and traced MB, the answers."""
    sides = list(next(iter(results.values())))
    head = "| workload | cells |"
    for side in sides:
        head += f" {side} s | {side} MB (RSS / traced) | {side} lower | {side} upper |"
    lines = [head, "|" + " --- |" * (2 + 4 * len(sides))]
    for name, recs in results.items():
        cells = next((r.get("cells") for r in recs.values() if r.get("status") == "ok"), "")
        line = f"| {name} | {cells} |"
        for side in sides:
            r = recs[side]
            if r.get("status") != "ok":
                line += f" {r.get('status')} | | | |"
                continue
            mb = f"{_f(r.get('rss_mb'), '.0f')} / {_f(r.get('traced_mb'), '.0f')}"
            line += (
                f" {_f(r['seconds'], '.3g')} | {mb} | {_f(r['lower'], '.6f')} "
                f"| {_f(r['upper'], '.6f')} |"
            )
        lines.append(line)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.schedule_scaling")
    p.add_argument("--old", help="ROOT:PYTHON of the checkout to compare against")
    p.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per call")
    p.add_argument("--json", help="write the records to this file")
    args = p.parse_args(argv)
    sides = old_new_sides(args.old)
    results = measure(sides, args.rows, args.rounds, args.timeout)
    if args.json:
        write_json(args.json, results)
    print(format_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
