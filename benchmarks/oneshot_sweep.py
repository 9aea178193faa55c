"""The one-shot ``schedule_mechanism`` on random shapes, two checkouts alternated.

Issue 37 asks the one-shot schedule path to answer no higher than main's on any shape
(session 22's finer pass alone was above main's on 8 of 12 random shapes).  Each shape
(seeded, :func:`shapes`) is answered at several deltas in one fresh subprocess of each
checkout (old: say main; new: this one), the two alternated; the table gives both
epsilons, the relative difference ``new / old - 1`` (above 0: the new one is looser)
and each side's CPU seconds for all the deltas of the shape (``time.process_time``,
building included).  The last line counts the answers above old's.

Shapes: random phases (17-150 of them, sigma in a random range within 0.6-3.5, q
log-uniform in a random range within 1e-3-0.1, counts 1-40 or all 10) and decaying
single steps (``sigma_0 * r^t``, 300-1 500 steps), the kinds of the review's and of
:mod:`benchmarks.schedule_oneshot`'s rows.

Run from the repository root::

    python -m benchmarks.oneshot_sweep --old /path/to/main:/path/to/python --shapes 16

Timings depend on the machine and its load: compare the rows of one run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchmarks.checkouts import old_new_sides, run_in_checkout, write_json

DELTAS = (1e-3, 1e-5, 1e-6)

_CHILD = r"""
import json, sys, time
from dpacct.accountant.pld.schedule import schedule_mechanism
phases = [tuple(p) for p in json.loads(sys.argv[1])]
deltas = json.loads(sys.argv[2])
t0 = time.process_time()
run = schedule_mechanism([(float(s), float(q), int(c)) for s, q, c in phases], progress=False)
eps = [float(run.epsilon(d)) for d in deltas]
print(json.dumps({"epsilon": eps, "cpu": time.process_time() - t0}))
"""


def shapes(
    count: int, seed: int = 0, counts: tuple[int, int] = (1, 40)
) -> list[tuple[str, list[tuple[float, float, int]]]]:
    """``count`` random schedules ``(name, phases)`` from ``numpy.random.default_rng(seed)``:
    three of random phases (steps a phase uniform in ``counts``, or all 10) to one of
    decaying single steps."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        if i % 4 == 3:
            n = int(rng.integers(300, 1501))
            s0, r = float(rng.uniform(1.0, 3.0)), float(rng.choice([0.9999, 0.9995, 0.999]))
            q = float(rng.choice([0.005, 0.01, 0.02]))
            name = f"d{i}: {n} steps of {s0:.2f} * {r}^t, q {q}"
            out.append((name, [(s0 * r**t, q, 1) for t in range(n)]))
            continue
        n = int(rng.integers(17, 151))
        lo, width = float(rng.uniform(0.6, 2.5)), float(rng.uniform(0.05, 1.0))
        qlo = float(np.exp(rng.uniform(np.log(1e-3), np.log(3e-2))))
        qhi = min(qlo * float(rng.uniform(1.5, 10.0)), 0.1)
        sig = rng.uniform(lo, lo + width, n)
        qs = np.exp(rng.uniform(np.log(qlo), np.log(qhi), n))
        steps = rng.integers(counts[0], counts[1] + 1, n) if rng.random() < 0.5 else np.full(n, 10)
        name = f"p{i}: {n} phases, sigma {lo:.2f}-{lo + width:.2f}, q {qlo:.1e}-{qhi:.1e}"
        out.append(
            (name, [(float(a), float(b), int(c)) for a, b, c in zip(sig, qs, steps, strict=True)])
        )
    return out


def measure(sides, count: int, seed: int, deltas: Sequence[float], timeout: float, counts=(1, 40)):
    """``{shape name: {side: record}}``, the sides alternated shape by shape."""
    out: dict[str, Any] = {}
    for name, phases in shapes(count, seed, counts):
        out[name] = {}
        for side, (root, python) in sides.items():
            rec = run_in_checkout(
                root, python, [_CHILD, json.dumps(phases), json.dumps(list(deltas))], timeout
            )
            out[name][side] = rec
            print(name, side, json.dumps(rec), file=sys.stderr, flush=True)
    return out


def format_table(results: dict[str, Any], deltas: Sequence[float]) -> str:
    """A markdown table, one line per shape and delta, and a count of new > old."""
    head = "| shape | delta | old epsilon | new epsilon | new / old - 1 | old CPU s | new CPU s |"
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    above, total, worst = 0, 0, 0.0
    for name, recs in results.items():
        old, new = recs.get("old", {}), recs.get("new", {})
        for j, d in enumerate(deltas):
            o = old.get("epsilon", [None] * len(deltas))[j] if old.get("status") == "ok" else None
            n = new.get("epsilon", [None] * len(deltas))[j] if new.get("status") == "ok" else None
            rel = "" if o is None or n is None else f"{n / o - 1:+.2e}"
            if o is not None and n is not None:
                total += 1
                if n > o:
                    above += 1
                    worst = max(worst, n / o - 1)
            cpu = (
                (f"{old['cpu']:.2f}" if o is not None else old.get("status", "")),
                (f"{new['cpu']:.2f}" if n is not None else new.get("status", "")),
            )
            cpu = cpu if j == 0 else ("", "")
            label = name if j == 0 else ""
            lines.append(f"| {label} | {d:g} | {o!r} | {n!r} | {rel} | {cpu[0]} | {cpu[1]} |")
    lines.append("")
    lines.append(f"new above old: {above} of {total} answers (worst {worst:+.2e} relative)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.oneshot_sweep")
    p.add_argument("--old", help="ROOT:PYTHON of the checkout to compare against")
    p.add_argument("--shapes", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--deltas", type=float, nargs="+", default=list(DELTAS))
    p.add_argument("--counts", type=int, nargs=2, default=[1, 40], help="steps a phase")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per call")
    p.add_argument("--json", help="write the records to this file")
    args = p.parse_args(argv)
    sides = old_new_sides(args.old)
    results = measure(sides, args.shapes, args.seed, args.deltas, args.timeout, tuple(args.counts))
    if args.json:
        write_json(args.json, results)
    print(format_table(results, args.deltas))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
