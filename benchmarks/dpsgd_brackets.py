"""Issue 37: every DP-SGD ``epsilon_bounds`` end, old code against new, on one grid.

A speed change to the PLD engine may move a bracket's ends only in the safe direction:
an upper end down (or not at all), a lower end up (or not at all).  This script asks
``epsilon_bounds`` of constant-sigma DP-SGD (``compose([poisson_subsample(Gaussian)],
counts=[T])``) on the grid

* q in {1e-4, 1e-3, 1e-2, 0.1, 0.5}, sigma in {0.5, 0.8, 1.1, 2, 5}, T in {1e2, 1e4, 1e6},
  delta 1e-5 (75 questions), and
* session 17's grid: q in {1e-3, 1e-2, 0.1}, sigma in {0.6, 1, 2}, T in {2e3, 1e4, 1e5,
  1e6}, delta in {1e-5, 1e-9} (72 questions),

once with this interpreter's dpacct and once with ``--old`` (another interpreter, e.g. the
system ``python`` that imports the main checkout, run from a neutral folder), each side in
one fresh process, and prints, per end, how many moved which way and by how much
(relative), and every question whose upper end rose or lower end fell::

    python -m benchmarks.dpsgd_brackets --old python --json /tmp/brackets.json

``--new-only`` skips the old side; ``--cache FILE`` keeps the old side's answers (they
depend only on the old checkout) and reuses them when the file exists (its CPU total is
then from the run that wrote it: compare speeds with ``benchmarks.everyday``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

NEUTRAL_CWD = Path(os.environ.get("TMPDIR", "/tmp"))

GRID_75 = [
    (q, s, t, 1e-5)
    for q, s, t in itertools.product(
        (1e-4, 1e-3, 1e-2, 0.1, 0.5), (0.5, 0.8, 1.1, 2.0, 5.0), (100, 10_000, 1_000_000)
    )
]
GRID_72 = [
    (q, s, t, d)
    for q, s, t, d in itertools.product(
        (1e-3, 1e-2, 0.1), (0.6, 1.0, 2.0), (2000, 10_000, 100_000, 1_000_000), (1e-5, 1e-9)
    )
]
QUESTIONS = GRID_75 + GRID_72

_CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
from dpacct.accountant import compose, poisson_subsample
from dpacct.mechanisms import GaussianMechanism
out = []
for q, s, t, d in json.loads(sys.argv[1]):
    m = compose([poisson_subsample(GaussianMechanism(sigma=s), sample_rate=q)], counts=[t])
    c = time.process_time()
    lo, hi = m.epsilon_bounds(d)
    out.append([q, s, t, d, float(lo), float(hi), time.process_time() - c])
print(json.dumps(out))
"""


def answers(python: str) -> list[list[float]]:
    """``[q, sigma, T, delta, lower, upper, cpu]`` for every question, in one process."""
    proc = subprocess.run(
        [python, "-c", _CHILD, json.dumps(QUESTIONS)], capture_output=True, text=True,
        cwd=NEUTRAL_CWD, check=False,
    )
    if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def compare(old: list, new: list) -> dict:
    """Counts of ends moved each way, the largest relative moves, and the unsafe ones."""
    report: dict = {"questions": len(new), "upper": {}, "lower": {}, "unsafe": []}
    for end, idx, safe_sign in (("upper", 5, -1), ("lower", 4, 1)):
        moves = []
        for o, n in zip(old, new, strict=True):
            a, b = o[idx], n[idx]
            rel = 0.0 if a == b else (b - a) / abs(a) if a else float("inf")
            moves.append(rel)
            if rel * safe_sign < 0:
                report["unsafe"].append({"question": n[:4], "end": end, "old": a, "new": b,
                                         "relative": rel})
        safe = [m for m in moves if m * safe_sign > 0]
        bad = [m for m in moves if m * safe_sign < 0]
        report[end] = {
            "equal": sum(m == 0 for m in moves),
            "tighter": len(safe),
            "looser": len(bad),
            "tighter_range": [min(map(abs, safe)), max(map(abs, safe))] if safe else None,
            "looser_range": [min(map(abs, bad)), max(map(abs, bad))] if bad else None,
        }
    report["cpu_old"] = sum(o[6] for o in old)
    report["cpu_new"] = sum(n[6] for n in new)
    return report


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", default="python", help="interpreter importing the old dpacct")
    ap.add_argument("--cache", help="JSON file keeping the old side's answers")
    ap.add_argument("--new-only", action="store_true")
    ap.add_argument("--json", help="write old, new and the comparison here")
    args = ap.parse_args(argv)
    new = answers(sys.executable)
    if args.new_only:
        print(json.dumps(new))
        return
    if args.cache and Path(args.cache).exists():
        old = json.loads(Path(args.cache).read_text())
    else:
        old = answers(args.old)
        if args.cache:
            tmp = Path(args.cache).with_suffix(".tmp")
            tmp.write_text(json.dumps(old))
            tmp.replace(args.cache)
    report = compare(old, new)
    for end in ("upper", "lower"):
        print(f"{end}: {report[end]}")
    print(f"CPU s of all questions: old {report['cpu_old']:.2f}, new {report['cpu_new']:.2f}")
    for u in report["unsafe"]:
        print(f"UNSAFE {u}")
    if not report["unsafe"]:
        print("no upper end rose and no lower end fell")
    if args.json:
        Path(args.json).write_text(json.dumps({"old": old, "new": new, "report": report}))


if __name__ == "__main__":
    main()
