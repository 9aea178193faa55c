"""Issue 39, k = 3: Proposition 12's law (the others' sum of squares) against Proposition 10's.

    python -m benchmarks.random_allocation_k_sq3 1.2 30 [1.2 100 ...] [--delta 1e-6]
        [--cut-step 0.1 --rho 1.1]
    python -m benchmarks.random_allocation_k_sq3 1.2 10 1.2 30 --cut-step 1e-4 \\
        --old /work/wt/fix29:/work/venvs/fix29/bin/python [--repeat 1]

Per row (sigma, T): the remove direction's epsilon at delta of each law's own atoms
(``remove_atoms4(sigma, T, 3)``, main's route at k = 3 from ``K3_FOUR_MIN_STEPS``, and
``remove_atoms_sq3(sigma, T)``), their CPU seconds (``time.process_time``) and peak MB
(``tracemalloc``), old and new alternated in one process.  Both are certified upper ends
of that direction; the route's bracket takes the larger of two directions and the blocks'
envelope, so these are the laws alone (docs/theory/allocation_k_of_t.md, Proposition 12).

``--brackets --old ROOT:PYTHON`` (session 31): rows ``sigma T epochs`` instead, the bracket
``epsilon_bounds(delta)`` of ``random_allocation(GaussianMechanism(sigma), T, k=3,
epochs=E)`` of checkout ``ROOT`` and of this one, each in a fresh process, old and new
alternated per row (:func:`benchmarks.checkouts.run_in_checkout`): lower, upper, width,
CPU s of the bracket, peak RSS MB, and whether the new ``epsilon`` at 10 deltas (1e-3 to
1.02e-9, the far tail where Proposition 12 was above Proposition 10 among them) and
``delta`` at 8 epsilons are all at most the old ones::

    python -m benchmarks.random_allocation_k_sq3 1.5 30 1 1.2 30 5 --brackets \
        --old /tmp/old:/work/venvs/k3w/bin/python

``--brackets --epochs 1,3,5 --old ROOT:PYTHON`` (session 32): rows ``sigma T``; per side
one fresh process per row computes the brackets at each number of epochs in turn (the
laws built once, at the first; the CPU column of the others is their compositions and
lower ends only), old then new per row; the last column also counts the equal answers::

    python -m benchmarks.random_allocation_k_sq3 1.5 11 1.2 30 --brackets --epochs 1,3,5 \
        --old /tmp/old:/work/venvs/k3me/bin/python

``--k 4`` (session 35) takes those brackets at ``k = 4`` (Proposition 15's route; ``--k 5``,
session 36, at ``k = 5``, Proposition 16's)::

    python -m benchmarks.random_allocation_k_sq3 1.2 20 1 10 --brackets --epochs 1,3 --k 4 \
        --old /tmp/k4_old:/work/venvs/k4/bin/python

``--old DIR:PYTHON``: instead, Proposition 12 of the checkout ``DIR`` (run by ``PYTHON``
with ``DIR`` as its working directory) against this one's, each in a subprocess of its
own, alternated (old, new, old, new, ...); the memory column is then each subprocess's
peak resident set (``ru_maxrss``, the interpreter's ~100 MB included), not tracemalloc's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import tracemalloc

from dpacct.accountant.transformers.random_allocation_k_law4 import remove_atoms4
from dpacct.accountant.transformers.random_allocation_k_law_sq3 import remove_atoms_sq3

from .random_allocation_k_sq_law import epsilon_at

_CHILD = """
import json, resource, sys, time
from dpacct.accountant.transformers.random_allocation_k_law_sq3 import remove_atoms_sq3
sys.path.insert(0, {here!r})
from benchmarks.random_allocation_k_sq_law import epsilon_at
c0 = time.process_time()
v, q, c = remove_atoms_sq3({sigma!r}, {t!r}, cut_step={cut_step!r}, rho={rho!r})
cpu = time.process_time() - c0
mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps([epsilon_at(v, q, c, {delta!r}), cpu, mb]))
"""


_EPOCHS_CHILD = """
import json, resource, sys, time
from dpacct.mechanisms import GaussianMechanism
from dpacct.accountant.transformers.random_allocation import random_allocation
sigma, t = float(sys.argv[1]), int(sys.argv[2])
k = int(sys.argv[6]) if len(sys.argv) > 6 else 3
out = []
for e in json.loads(sys.argv[3]):
    c0 = time.process_time()
    m = random_allocation(GaussianMechanism(sigma), t, k=k, epochs=e)
    lo, hi = m.epsilon_bounds(1e-6)
    cpu = time.process_time() - c0
    eps = [float(m.epsilon(d)) for d in json.loads(sys.argv[4])]
    dl = [float(x) for x in m.delta(json.loads(sys.argv[5]))]
    out.append({"e": e, "lo": lo, "hi": hi, "cpu": cpu, "eps": eps, "delta": dl})
mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"rows": out, "mb": mb}))
"""
#: the deltas and epsilons of ``--brackets``' never-looser check
_DELTAS = [1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 2e-9, 1.1e-9, 1.05e-9, 1.02e-9]
_EPSILONS = [0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0]


def _brackets(a) -> None:
    """Old and new brackets (``--brackets``), rows ``sigma T epochs``, alternated."""
    from .checkouts import old_new_sides, run_in_checkout

    sides = old_new_sides(a.old)
    print("| sigma | T | E | lower | upper old -> new | width % old -> new | CPU s old -> new "
          "| peak MB old -> new | new <= old at 10 deltas and 8 epsilons |")
    print("| --- " * 9 + "|")
    for i in range(0, len(a.rows), 3):
        row = [str(a.rows[i]), str(int(a.rows[i + 1])), str(int(a.rows[i + 2]))]
        got = {}
        for name, (root, python) in sides.items():
            # the epochs child with one epoch count: its one row, flattened
            args = [_EPOCHS_CHILD, *row[:2], json.dumps([int(row[2])]), json.dumps(_DELTAS),
                    json.dumps(_EPSILONS)]
            res = run_in_checkout(root, python, args, 3600.0)
            if res.get("rows"):
                res = {**res, **res["rows"][0]}
            got[name] = res
        o, n = got.get("old", got["new"]), got["new"]
        if "ok" not in (o["status"], n["status"]) or o["status"] != n["status"]:
            print(f"| {' | '.join(row)} | {o['status']} / {n['status']} |", flush=True)
            continue
        wo, wn = (100 * (r["hi"] - r["lo"]) / r["hi"] for r in (o, n))
        le = all(x <= y for x, y in zip(n["eps"] + n["delta"], o["eps"] + o["delta"],
                                        strict=True))
        print(f"| {' | '.join(row)} | {n['lo']:.5f} | {o['hi']:.5f} -> {n['hi']:.5f} | "
              f"{wo:.2f} -> {wn:.2f} | {o['cpu']:.1f} -> {n['cpu']:.1f} | "
              f"{o['mb']:.0f} -> {n['mb']:.0f} | {'yes' if le else 'NO'} |", flush=True)


def _brackets_epochs(a) -> None:
    """``--brackets --epochs 1,3,5``: rows ``sigma T``; per side one fresh process per row
    computes the brackets at every number of epochs in turn (the laws are built once, at
    the first, and kept: its CPU holds them, the others' only their compositions and
    lower ends), old then new per row."""
    from .checkouts import old_new_sides, run_in_checkout

    sides = old_new_sides(a.old)
    epochs = [int(x) for x in a.epochs.split(",")]
    print("| sigma | T | E | lower | upper old -> new | width % old -> new | CPU s old -> new "
          "| peak MB old -> new | new <= old at 10 deltas and 8 epsilons (equal) |")
    print("| --- " * 9 + "|")
    for i in range(0, len(a.rows), 2):
        row = [str(a.rows[i]), str(int(a.rows[i + 1]))]
        got = {name: run_in_checkout(root, python, [_EPOCHS_CHILD, *row, json.dumps(epochs),
                                                    json.dumps(_DELTAS),
                                                    json.dumps(_EPSILONS), str(a.k)], 7200.0)
               for name, (root, python) in sides.items()}
        o, n = got.get("old", got["new"]), got["new"]
        if "ok" not in (o["status"], n["status"]) or o["status"] != n["status"]:
            print(f"| {' | '.join(row)} | {o['status']} / {n['status']} |", flush=True)
            continue
        for ro, rn in zip(o["rows"], n["rows"], strict=True):
            wo, wn = (100 * (r["hi"] - r["lo"]) / r["hi"] for r in (ro, rn))
            pairs = list(zip(rn["eps"] + rn["delta"], ro["eps"] + ro["delta"], strict=True))
            le = all(x <= y for x, y in pairs)
            eq = sum(x == y for x, y in pairs)
            print(f"| {' | '.join(row)} | {rn['e']} | {rn['lo']:.5f} | {ro['hi']:.5f} -> "
                  f"{rn['hi']:.5f} | {wo:.2f} -> {wn:.2f} | {ro['cpu']:.1f} -> "
                  f"{rn['cpu']:.1f} | {o['mb']:.0f} -> {n['mb']:.0f} | "
                  f"{'yes' if le else 'NO'} ({eq}) |", flush=True)


def _measure(fn, *args, **kw):
    tracemalloc.start()
    t0 = time.process_time()
    v, q, c = fn(*args, **kw)
    cpu = time.process_time() - t0
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return v, q, c, cpu, peak


def _child(where: str, python: str, sigma: float, t: int, a) -> tuple[float, float, float]:
    """``(epsilon, CPU s, peak RSS MB)`` of Proposition 12 run by ``python`` in ``where``."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = _CHILD.format(here=here, sigma=sigma, t=t, cut_step=a.cut_step, rho=a.rho,
                         delta=a.delta)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")  # nothing written into DIR
    out = subprocess.run([python, "-c", code], cwd=where, check=True, capture_output=True,
                         text=True, env=env).stdout
    return tuple(json.loads(out.strip().splitlines()[-1]))


def _old_vs_new(a) -> None:
    where, _, python = a.old.partition(":")
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    print("| sigma | T | cut step | run | old eps | new eps | CPU s old -> new "
          "| peak RSS MB old -> new |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for i in range(0, len(a.rows), 2):
        sigma, t = a.rows[i], int(a.rows[i + 1])
        for r in range(a.repeat):
            eo, co, mo = _child(where, python or "python", sigma, t, a)
            en, cn, mn = _child(here, sys.executable, sigma, t, a)
            print(f"| {sigma} | {t} | {a.cut_step:g} | {r + 1} | {eo:.7f} | {en:.7f} | "
                  f"{co:.1f} -> {cn:.1f} | {mo:.0f} -> {mn:.0f} |", flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", nargs="+", type=float, help="sigma T pairs")
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--cut-step", type=float, default=0.1)
    ap.add_argument("--rho", type=float, default=1.1)
    ap.add_argument("--old", help="DIR:PYTHON, Proposition 12 of another checkout")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--brackets", action="store_true",
                    help="rows are sigma T epochs: the k = 3 brackets, old and new")
    ap.add_argument("--epochs", help="with --brackets: rows are sigma T, these epochs "
                    "(comma-separated) in one process per side and row")
    ap.add_argument("--k", type=int, default=3, help="with --brackets --epochs: k (session "
                    "35: 4, Proposition 15's route; session 36: 5, Proposition 16's)")
    a = ap.parse_args(argv)
    if a.brackets and a.epochs:
        if len(a.rows) % 2:
            raise SystemExit("rows: sigma T pairs")
        _brackets_epochs(a)
        return
    if a.brackets:
        if len(a.rows) % 3:
            raise SystemExit("rows: sigma T epochs triples")
        _brackets(a)
        return
    if len(a.rows) % 2:
        raise SystemExit("rows: sigma T pairs")
    if a.old:
        _old_vs_new(a)
        return
    print("| sigma | T | Prop. 10 eps | Prop. 12 eps | change % | CPU s 10 -> 12 "
          "| peak MB 10 -> 12 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for i in range(0, len(a.rows), 2):
        sigma, t = a.rows[i], int(a.rows[i + 1])
        v, q, c, cpu4, mb4 = _measure(remove_atoms4, sigma, t, 3)
        e4 = epsilon_at(v, q, c, a.delta)
        v, q, c, cpu12, mb12 = _measure(remove_atoms_sq3, sigma, t, cut_step=a.cut_step,
                                        rho=a.rho)
        e12 = epsilon_at(v, q, c, a.delta)
        print(f"| {sigma} | {t} | {e4:.5f} | {e12:.5f} | {100 * (e12 / e4 - 1):+.2f} | "
              f"{cpu4:.1f} -> {cpu12:.1f} | {mb4:.0f} -> {mb12:.0f} |", flush=True)


if __name__ == "__main__":
    main()
