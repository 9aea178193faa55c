"""A ledger fed a schedule phase by phase, asked once: two checkouts alternated.

A ``PrivacyAccountant`` is fed the phases of a schedule (one ``step(count=)`` call a
phase) and asked ``epsilon(1e-5)`` once, in a fresh subprocess of each checkout (old:
say main; new: this one), alternating for a few rounds.  Each row prints the answers
and the CPU seconds (``time.process_time``) of the loop and the query, their range
over the rounds, and the peak resident memory; ``growth`` is the time at ``10 N``
phases over the time at ``N``.  The schedules: N random phases x 10 (sigma uniform in
[0.8, 2], q in [0.001, 0.02], seed 0, as :mod:`benchmarks.shapes`) and per-step
decaying sigmas ``s0 * 0.9999^t`` at q 0.01.

Run from the repository root::

    python -m benchmarks.ledger_phases --old /path/to/main:/path/to/python --rounds 2

Timings depend on the machine and its load: compare the rows of one run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from benchmarks.checkouts import checkout_env, old_new_sides, write_json

ROWS = {
    "100 phases x 10": ("phases", 2.0, 100),
    "1000 phases x 10": ("phases", 2.0, 1000),
    "decaying 1.5, 1906 steps": ("decay", 1.5, 1906),
    "decaying 2.0, 10000 steps": ("decay", 2.0, 10_000),
    "10000 phases x 10": ("phases", 2.0, 10_000),
    "100000 phases x 10": ("phases", 2.0, 100_000),
}

_CHILD = r"""
import json, resource, sys, time
import numpy as np
from dpacct.accountant import PrivacyAccountant
kind, s0, n = json.loads(sys.argv[1])
if kind == "phases":
    rng = np.random.default_rng(0)
    sig, q = rng.uniform(0.8, 2.0, n), rng.uniform(0.001, 0.02, n)
    sched = [(float(a), float(b), 10) for a, b in zip(sig, q)]
else:
    sched = [(s0 * 0.9999**t, 0.01, 1) for t in range(n)]
acct = PrivacyAccountant(progress=False)
t0 = time.process_time()
for s, qq, k in sched:
    acct.step(noise_multiplier=s, sample_rate=qq, count=k)
eps = acct.epsilon(1e-5)
cpu = time.process_time() - t0
mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"epsilon": eps, "cpu": cpu, "peak_mb": mb}))
"""


def _run(root: str, python: str, row: tuple, timeout: float) -> dict[str, Any]:
    # the checkout's own dpacct (PYTHONPATH=root alone would import the interpreter's
    # install for dpacct.accountant etc.: the folders map into one namespace)
    env = dict(checkout_env(root, extra_path=[root]), OMP_NUM_THREADS="1")
    try:
        res = subprocess.run(
            [python, "-c", _CHILD, json.dumps(list(row))],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"status": f"over {timeout:g} s"}
    if res.returncode != 0:
        return {"status": "error", "error": res.stderr.strip().splitlines()[-1:]}
    return {"status": "ok", **json.loads(res.stdout.strip().splitlines()[-1])}


def measure(sides, rows: Sequence[str], rounds: int, timeout: float) -> dict[str, Any]:
    """``{row: {side: [record per round]}}``, the sides alternated within each round."""
    out: dict[str, Any] = {name: {side: [] for side in sides} for name in rows}
    for _ in range(rounds):
        for name in rows:
            for side, (root, python) in sides.items():
                rec = _run(root, python, ROWS[name], timeout)
                out[name][side].append(rec)
                print(name, side, json.dumps(rec), file=sys.stderr, flush=True)
    return out


def format_table(results: dict[str, Any]) -> str:
    """A markdown table: per row and side, the answer, the CPU range and peak MB."""
    sides = list(next(iter(results.values())))
    head = "| schedule |" + "".join(f" {s} epsilon | {s} CPU s | {s} MB |" for s in sides)
    lines = [head, "|" + " --- |" * (1 + 3 * len(sides))]
    for name, recs in results.items():
        line = f"| {name} |"
        for side in sides:
            ok = [r for r in recs[side] if r.get("status") == "ok"]
            if not ok:
                line += f" {recs[side][0].get('status') if recs[side] else ''} | | |"
                continue
            cpu = sorted(r["cpu"] for r in ok)
            span = f"{cpu[0]:.3g}" if len(cpu) == 1 else f"{cpu[0]:.3g}-{cpu[-1]:.3g}"
            line += f" {ok[0]['epsilon']:.9f} | {span} | {max(r['peak_mb'] for r in ok):.0f} |"
        lines.append(line)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ledger_phases")
    p.add_argument("--old", help="ROOT:PYTHON of the checkout to compare against")
    p.add_argument("--rows", nargs="+", default=list(ROWS)[:-1], choices=list(ROWS))
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per call")
    p.add_argument("--json", help="write the records to this file")
    args = p.parse_args(argv)
    results = measure(old_new_sides(args.old), args.rows, args.rounds, args.timeout)
    if args.json:
        write_json(args.json, results)
    print(format_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
