"""Random allocation at every k: dpacct's certified bracket beside random-allocation 1.0.5.

    python -m benchmarks.random_allocation_k              # every row, peer included
    python -m benchmarks.random_allocation_k --no-peer    # dpacct alone
    python -m benchmarks.random_allocation_k --json out.json
    python -m benchmarks.random_allocation_k --no-peer --only-k 4,5 --old /work/main:python
                                      # old and new dpacct side by side, same run
    python -m benchmarks.random_allocation_k --old /work/main:python --calibrations
                                      # the calibrations alone, old and new

Each row (sigma, T, k, epochs, delta) runs in a fresh child process: dpacct's
``epsilon_bounds(delta)`` of ``random_allocation(GaussianMechanism(sigma), T, k=k,
epochs=E)`` (upper end = ``epsilon()``; lower end certified for the mechanism,
docs/theory/allocation_k_of_t.md), its width relative to the upper end, the CPU
seconds of the call (``time.process_time``, imports excluded) and the child's peak
resident memory (MB, imports included), and the upper end of the blocks alone
(``direct=False``; differs at k = 2, 3 <= T <= 300, and at k = 3 and 4 where the
direct routes of ``random_allocation_k2`` / ``_k3`` / ``_k4`` are also tried) with its
CPU seconds (computed first; the bracket's CPU seconds include them, as the bracket
computes the blocks too); beside it, in the same
run, random-allocation 1.0.5's ``allocation_epsilon_combined`` (``num_selected = k``;
orders 2..32; its k > 1 answer is its own reduction) in a child capped at ``--cap``
seconds, and the ratio ours / theirs.  The machine may be loaded: CPU seconds, not wall.
With ``--old ROOT:PYTHON`` each row also runs the same child against another checkout
(``benchmarks.checkouts``) and prints both brackets, CPU seconds and peak MB, then the
noise multipliers of :data:`CALIBRATIONS` whose k is among the rows'.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

#: (sigma, T, k, epochs): the issue's two settings, then DP-SGD-like ones
ROWS = (
    (1.0, 1000, 2, 1),
    (1.0, 100, 3, 1),
    (1.0, 1000, 1, 1),
    (0.8, 1000, 2, 10),
    (1.0, 10_000, 4, 1),
    (2.0, 1000, 4, 10),
    (0.8, 10_000, 4, 1),
    (2.0, 100, 2, 10),
    (1.0, 100, 1, 10),
    # issue 39, the direct k = 2 route (random_allocation_k2.py) against the blocks
    (1.0, 100, 2, 1),
    (1.0, 10, 2, 1),
    (0.8, 100, 2, 1),
    (0.6, 100, 2, 1),
    (1.0, 100, 2, 5),
    # issue 39 (a): small T, where the route's own add direction was infinite
    (0.7, 3, 2, 1),
    (0.6, 5, 2, 1),
    (0.5, 10, 2, 1),
    # issue 39, several epochs (the envelope of the direct atoms and the blocks)
    (1.0, 100, 2, 2),
    (1.0, 100, 2, 10),
    (0.8, 100, 2, 5),
    (1.0, 10, 2, 5),
    (0.7, 3, 2, 3),
    # issue 39, the direct k = 3 route (random_allocation_k3.py) against the blocks
    (0.8, 100, 3, 1),
    (0.8, 10, 3, 1),
    (0.7, 10, 3, 1),
    (1.0, 10, 3, 1),
    (1.0, 100, 3, 5),
    (1.2, 30, 3, 1),
    # issue 39, k = 3 where the four-level law now beats the blocks (session 27)
    (1.2, 100, 3, 1),
    (1.5, 30, 3, 1),
    (1.0, 200, 3, 1),
    (0.6, 10, 3, 1),
    # issue 39, k >= 4 (random_allocation_k4.py)
    (0.7, 20, 4, 1),
    (0.8, 50, 4, 1),
    (1.0, 20, 4, 1),
    (1.0, 100, 4, 1),
    (0.7, 100, 4, 1),
    (1.2, 20, 4, 1),
    (1.0, 50, 4, 3),
    (0.7, 50, 4, 1),
    # issue 39, k = 4 through the four-level law (session 27)
    (1.0, 10, 4, 1),
    (0.8, 20, 4, 1),
    (1.0, 200, 4, 1),
    (1.2, 50, 4, 1),
    (1.0, 100, 4, 5),
    (0.8, 100, 5, 1),
    (1.0, 100, 5, 1),
    # issue 39, k = 5 through the four-level law, and its coarse nodes at k = 3, 4 and 5 at
    # small sigma (session 28)
    (1.0, 10, 5, 1),
    (0.8, 20, 5, 1),
    (0.8, 50, 5, 1),
    (1.0, 50, 5, 3),
    (0.65, 100, 4, 1),
    (0.6, 100, 4, 1),
    (0.7, 20, 5, 1),
    (0.7, 100, 5, 1),
    (0.6, 100, 3, 1),
)
DELTA = 1e-6
#: (epsilon, T, k) of the calibrations ``--old`` also runs (``delta`` = :data:`DELTA`, one
#: epoch): the noise multiplier each checkout's ``random_allocation_noise_multiplier``
#: returns, and its CPU seconds
CALIBRATIONS = ((8.0, 100, 4), (6.25, 50, 4), (3.0, 100, 4), (3.0, 100, 3), (9.7, 10, 5))

_OURS = """
import json, resource, sys, time
sigma, t, k, e, d = (f(a) for f, a in zip((float, int, int, int, float), sys.argv[1:6]))
from dpacct.accountant import random_allocation
from dpacct.mechanisms import GaussianMechanism
mech = random_allocation(GaussianMechanism(sigma), t, k=k, epochs=e)
blocks = random_allocation(GaussianMechanism(sigma), t, k=k, epochs=e, direct=False)
c1 = time.process_time()
direct = mech._has_k2_route or any(getattr(mech, f"_has_k{j}_route", False)
                                    for j in (3, 4))  # (old checkouts: no attribute)
b = float(blocks.epsilon(d)) if direct else None  # first: its laws built here
cpu_b = time.process_time() - c1
c0 = time.process_time()
lo, hi = mech.epsilon_bounds(d)
cpu = time.process_time() - c0 + (cpu_b if b is not None else 0.0)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
b, cpu_b = (float(hi), cpu) if b is None else (b, cpu_b)
print(json.dumps({"lo": float(lo), "hi": float(hi), "cpu": cpu, "mb": peak, "blocks": b,
                  "cpu_blocks": cpu_b}))
"""

_CALIBRATE = """
import json, sys, time
eps, t, k, d = (f(a) for f, a in zip((float, int, int, float), sys.argv[1:5]))
from dpacct.calibrators import random_allocation_noise_multiplier
c0 = time.process_time()
s = float(random_allocation_noise_multiplier(eps, d, t, k=k))
print(json.dumps({"sigma": s, "cpu": time.process_time() - c0}))
"""

_PEER = """
import json, sys, time
sigma, t, k, e, d = (f(a) for f, a in zip((float, int, int, int, float), sys.argv[1:6]))
from random_allocation.comparisons.definitions import Direction, PrivacyParams, SchemeConfig
from random_allocation.random_allocation_scheme.combined import allocation_epsilon_combined
cfg = SchemeConfig(allocation_direct_alpha_orders=list(range(2, 33)))
p = PrivacyParams(sigma=sigma, num_steps=t, num_selected=k, num_epochs=e, epsilon=None, delta=d)
c0 = time.process_time()
v = float(allocation_epsilon_combined(p, cfg, direction=Direction.BOTH))
print(json.dumps({"eps": v, "cpu": time.process_time() - c0}))
"""


def _child(code: str, args: tuple, cap: float | None) -> dict:
    try:
        out = subprocess.run(
            [sys.executable, "-c", code, *map(str, args)],
            capture_output=True,
            text=True,
            timeout=cap,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"status": f"not measured (> {cap:.0f} s)"}
    if out.returncode != 0:
        return {"status": "failed: " + out.stderr.strip().splitlines()[-1][:80]}
    return {"status": "ok", **json.loads(out.stdout.strip().splitlines()[-1])}


def _old_new(args, rows, ks) -> None:
    """Old and new dpacct's brackets side by side (``--old``), each row in fresh children;
    then the calibrations of :data:`CALIBRATIONS` whose k is among ``ks`` (all if None)."""
    from benchmarks.checkouts import old_new_sides, run_in_checkout, write_json

    sides = old_new_sides(args.old)
    rows = [] if args.calibrations else rows
    print("| sigma | T | k | epochs | old lower | old upper | old width % | old CPU s | old MB "
          "| new lower | new upper | new width % | new CPU s | new MB | upper new/old |")
    print("| --- " * 15 + "|")
    out = []
    for sigma, t, k, e in rows:
        res = {name: run_in_checkout(root, py, [_OURS, *map(str, (sigma, t, k, e, DELTA))],
                                     args.cap)
               for name, (root, py) in sides.items()}
        out.append({"sigma": sigma, "T": t, "k": k, "epochs": e, "delta": DELTA, **res})
        cells = []
        for name in ("old", "new"):
            r = res[name]
            if r["status"] != "ok":
                cells.append(f"{r['status']} | | | |")
                continue
            w = 100.0 * (r["hi"] - r["lo"]) / r["hi"]
            cells.append(f"{r['lo']:.5f} | {r['hi']:.5f} | {w:.2f} | {r['cpu']:.1f} | "
                         f"{r['mb']:.0f}")
        ratio = (f"{res['new']['hi'] / res['old']['hi']:.5f}"
                 if all(res[n]["status"] == "ok" for n in ("old", "new")) else "")
        print(f"| {sigma:g} | {t} | {k} | {e} | {cells[0]} | {cells[1]} | {ratio} |", flush=True)
    print("\n| epsilon | T | k | old sigma | old CPU s | new sigma | new CPU s |")
    print("| --- " * 7 + "|")
    for eps, t, k in (c for c in CALIBRATIONS if ks is None or c[2] in ks):
        res = {name: run_in_checkout(root, py, [_CALIBRATE, *map(str, (eps, t, k, DELTA))],
                                     args.cap)
               for name, (root, py) in sides.items()}
        out.append({"epsilon": eps, "T": t, "k": k, "delta": DELTA, **res})
        cells = [f"{r['sigma']:.5f} | {r['cpu']:.1f}" if r["status"] == "ok" else
                 f"{r['status']} |" for r in (res["old"], res["new"])]
        print(f"| {eps:g} | {t} | {k} | {cells[0]} | {cells[1]} |", flush=True)
    if args.json:
        write_json(args.json, {"delta": DELTA, "command": " ".join(sys.argv), "rows": out})


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--cap", type=float, default=300.0)
    ap.add_argument("--json")
    ap.add_argument("--only-k", help="only the rows with these k (comma-separated)")
    ap.add_argument("--max-steps", type=int, help="only the rows with T <= this")
    ap.add_argument("--old", help="ROOT:PYTHON of the checkout to compare with (no peer)")
    ap.add_argument("--calibrations", action="store_true",
                    help="with --old: the calibrations only, not the rows")
    args = ap.parse_args(argv)
    ks = None if args.only_k is None else {int(v) for v in args.only_k.split(",")}
    rows = [r for r in ROWS if (ks is None or r[2] in ks)
            and (args.max_steps is None or r[1] <= args.max_steps)]
    if args.old:
        _old_new(args, rows, ks)
        return
    print(
        "| sigma | T | k | epochs | dpacct lower | dpacct upper | width % | CPU s | peak MB "
        "| blocks upper | blocks width % | blocks CPU s "
        "| random-allocation 1.0.5 | their CPU s | ours / theirs |"
    )
    print("| --- " * 15 + "|")
    done = []  # (main printed no row here: it reset `rows` before the loop)
    for sigma, t, k, e in rows:
        ours = _child(_OURS, (sigma, t, k, e, DELTA), None)
        peer = {"status": "skipped"} if args.no_peer else _child(_PEER, (sigma, t, k, e, DELTA),
                                                                  args.cap)
        row = {"sigma": sigma, "T": t, "k": k, "epochs": e, "delta": DELTA, "ours": ours,
               "peer": peer}
        done.append(row)
        if ours["status"] != "ok":
            print(f"| {sigma:g} | {t} | {k} | {e} | {ours['status']} |")
            continue
        width = 100.0 * (ours["hi"] - ours["lo"]) / ours["hi"]
        if peer["status"] == "ok":
            theirs = f"{peer['eps']:.4f} | {peer['cpu']:.2f} | {ours['hi'] / peer['eps']:.3f}"
        else:
            theirs = f"{peer['status']} | | "
        print(
            f"| {sigma:g} | {t} | {k} | {e} | {ours['lo']:.5f} | {ours['hi']:.5f} | "
            f"{width:.2f} | {ours['cpu']:.2f} | {ours['mb']:.0f} | {ours['blocks']:.5f} | "
            f"{100.0 * (ours['blocks'] - ours['lo']) / ours['blocks']:.2f} | "
            f"{ours['cpu_blocks']:.2f} | {theirs} |"
        )
    if args.json:
        from benchmarks.checkouts import write_json

        write_json(args.json, {"delta": DELTA, "rows": done})


if __name__ == "__main__":
    main()
