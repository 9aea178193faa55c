"""The one-shot schedule path beside the ledger and dp_accounting, two checkouts alternated.

Issue 37 asks for "the one-shot path no slower than the ledger" and both at or below
dp_accounting's default pessimistic PLD.  Each row is one schedule of
:mod:`benchmarks.ledger_phases` (the same generators and seeds), answered two ways in a
fresh subprocess of each checkout (old: say main; new: this one), alternating:

* ``ledger``: a ``PrivacyAccountant`` fed one ``step(count=)`` a phase, then
  ``epsilon(1e-5)`` and ``epsilon_bounds(1e-5)``;
* ``oneshot``: ``schedule_mechanism(phases)`` of the same phases, then
  ``epsilon(1e-5)`` and ``epsilon_bounds(1e-5)``;
* ``oneshot-fine`` (``--fine``, the new side only): the same with ``tol=1e-5``.

Each prints the answer, the lower end and the bracket's relative width, the CPU seconds
(``time.process_time``) of ``epsilon`` (building included) and of the bracket after it,
and the peak resident memory.  dp_accounting's answers (its default pessimistic PLD,
``PLDAccountant(value_discretization_interval=1e-4)``) are read from
:data:`PEER_CACHE` (minutes each; ``--peer-missing`` computes the ones missing there).

Run from the repository root::

    python -m benchmarks.schedule_oneshot --old /path/to/main:/path/to/python --rounds 2

Timings depend on the machine and its load: compare the rows of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from benchmarks.checkouts import old_new_sides, run_in_checkout, write_json
from benchmarks.ledger_phases import ROWS as LEDGER_ROWS

#: the rows of :mod:`benchmarks.ledger_phases` (same names, generators and seeds; the
#: child below builds them as its child does)
ROWS = {
    name: LEDGER_ROWS[name]
    for name in (
        "100 phases x 10",
        "1000 phases x 10",
        "1000 phases x 10, sigma 1-2, q log-uniform",
        "decaying 1.5, 200 steps",
        "decaying 1.5, 1906 steps",
    )
}
PATHS = ("ledger", "oneshot", "oneshot-fine")
#: ``oneshot-fine`` asks ``tol=FINE_TOL`` (this checkout only: main's engine route at
#: that tol takes minutes on 1 000 phases)
FINE_TOL = 1e-5

#: the child scripts' schedule of ``(kind, s0, n)`` (``np`` imported; sets ``sched``, a list
#: of ``(sigma, q, count)``): this module's rows and ``ev37b_schedules``' experiments
SCHEDULE_SRC = r"""if kind == "phases":
    rng = np.random.default_rng(0)
    sig, q = rng.uniform(0.8, 2.0, n), rng.uniform(0.001, 0.02, n)
    sched = [(float(a), float(b), 10) for a, b in zip(sig, q)]
elif kind == "phases_log":
    rng = np.random.default_rng(0)
    sig = rng.uniform(1.0, 2.0, n)
    q = np.exp(rng.uniform(np.log(1e-3), np.log(1e-2), n))
    sched = [(float(a), float(b), 10) for a, b in zip(sig, q)]
else:
    sched = [(s0 * 0.9999**t, 0.01, 1) for t in range(n)]
"""

_CHILD = r"""
import json, resource, sys, time
import numpy as np
from dpacct.accountant import PrivacyAccountant
from dpacct.accountant.pld.schedule import schedule_mechanism
kind, s0, n = json.loads(sys.argv[1])
path = sys.argv[2]
""" + SCHEDULE_SRC + r"""if path == "dpa":  # dp_accounting's default pessimistic PLD
    import dp_accounting as dpa
    from dp_accounting.pld import PLDAccountant
    t0 = time.process_time()
    peer = PLDAccountant(value_discretization_interval=1e-4)
    for s, qq, k in sched:
        peer.compose(dpa.PoissonSampledDpEvent(qq, dpa.GaussianDpEvent(s)), k)
    print(json.dumps({"epsilon": peer.get_epsilon(1e-5), "cpu": time.process_time() - t0}))
    sys.exit(0)
t0 = time.process_time()
if path == "ledger":
    acct = PrivacyAccountant(progress=False)
    for s, qq, k in sched:
        acct.step(noise_multiplier=s, sample_rate=qq, count=k)
    ask = acct
else:
    ask = schedule_mechanism(sched, progress=False)
opt = {"tol": float(sys.argv[3])} if len(sys.argv) > 3 else {}
eps = float(ask.epsilon(1e-5, **opt))
cpu = time.process_time() - t0
t0 = time.process_time()
lower = float(ask.epsilon_bounds(1e-5, **opt)[0])
bounds_cpu = time.process_time() - t0
mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"epsilon": eps, "cpu": cpu, "lower": lower, "bounds_cpu": bounds_cpu,
                  "peak_mb": mb}))
"""

#: dp_accounting 0.6.0's answers at its default interval 1e-4, with where each came from
PEER_CACHE = "benchmarks/data/schedule_oneshot_dp_accounting.json"


def _run(root: str, python: str, row: tuple, path: str, timeout: float) -> dict[str, Any]:
    args = [_CHILD, json.dumps(list(row)), path.split("-")[0]]
    if path == "oneshot-fine":
        args.append(repr(FINE_TOL))
    return run_in_checkout(root, python, args, timeout)


def peer_answers(rows: Sequence[str], timeout: float, compute: bool) -> dict[str, Any]:
    """dp_accounting's default pessimistic PLD per row, from :data:`PEER_CACHE` (and,
    with ``compute``, computed in this interpreter for the rows missing there)."""
    cache: dict[str, Any] = {}
    if os.path.exists(PEER_CACHE):
        with open(PEER_CACHE) as fh:
            cache = json.load(fh)
    for name in rows:
        if compute and name not in cache:
            rec = _run(".", sys.executable, ROWS[name], "dpa", timeout)
            if rec.get("status") == "ok":
                import dp_accounting

                rec["version"] = getattr(dp_accounting, "__version__", "?")
                rec["command"] = "python -m benchmarks.schedule_oneshot --peer-missing"
                cache[name] = rec
                write_json(PEER_CACHE, cache)
    return cache


def measure(
    sides, rows: Sequence[str], rounds: int, timeout: float, fine: bool = False
) -> dict[str, Any]:
    """``{row: {side/path: [record per round]}}``, sides and paths alternated."""
    paths = PATHS if fine else PATHS[:2]
    out: dict[str, Any] = {
        name: {
            f"{side} {path}": []
            for side in sides
            for path in paths
            if not (path == "oneshot-fine" and side == "old")
        }
        for name in rows
    }
    for _ in range(rounds):
        for name in rows:
            for path in paths:
                for side, (root, python) in sides.items():
                    if path == "oneshot-fine" and side == "old":
                        continue
                    rec = _run(root, python, ROWS[name], path, timeout)
                    out[name][f"{side} {path}"].append(rec)
                    print(name, side, path, json.dumps(rec), file=sys.stderr, flush=True)
    return out


def _span(values: list[float]) -> str:
    values = sorted(values)
    if len(values) == 1:
        return f"{values[0]:.3g}"
    return f"{values[0]:.3g}-{values[-1]:.3g}"


def format_table(results: dict[str, Any], peer: dict[str, Any]) -> str:
    """A markdown table, one line per row and side/path: epsilon, its gap to
    dp_accounting, the lower end and the bracket's width, the CPU ranges, the peak MB;
    and ``x ledger``, the path's epsilon CPU over the same side's ledger (median)."""
    head = (
        "| schedule | side, path | epsilon | gap to dp_accounting | lower | width "
        "| epsilon CPU s | x ledger | bounds CPU s | peak MB |"
    )
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    for name, recs in results.items():
        ref = peer.get(name, {}).get("epsilon")
        lines.append(f"| {name} | dp_accounting 1e-4 | {ref if ref else '':.9} | | | | | | | |")
        medians = {}
        for key, rs in recs.items():
            ok = [r for r in rs if r.get("status") == "ok"]
            if ok:
                cpu = sorted(r["cpu"] for r in ok)
                medians[key] = cpu[len(cpu) // 2]
        for key, rs in recs.items():
            ok = [r for r in rs if r.get("status") == "ok"]
            if not ok:
                status = rs[0].get("status") if rs else ""
                lines.append(f"| {name} | {key} | {status} | | | | | | | |")
                continue
            eps, lo = ok[0]["epsilon"], ok[0]["lower"]
            gap = f"{(eps - ref) / ref:+.2e}" if ref else ""
            ledger = medians.get(key.split()[0] + " ledger")
            ratio = f"{medians[key] / ledger:.2f}" if ledger else ""
            lines.append(
                f"| {name} | {key} | {eps:.9f} | {gap} | {lo:.9f} | {(eps - lo) / eps:.2e} "
                f"| {_span([r['cpu'] for r in ok])} | {ratio} "
                f"| {_span([r['bounds_cpu'] for r in ok])} "
                f"| {max(r['peak_mb'] for r in ok):.0f} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.schedule_oneshot")
    p.add_argument("--old", help="ROOT:PYTHON of the checkout to compare against")
    p.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per call")
    p.add_argument("--json", help="write the records to this file")
    p.add_argument("--fine", action="store_true", help=f"also tol={FINE_TOL} (new side)")
    p.add_argument(
        "--peer-missing",
        action="store_true",
        help=f"compute dp_accounting's answers missing from {PEER_CACHE} (minutes each)",
    )
    args = p.parse_args(argv)
    peer = peer_answers(args.rows, args.timeout, args.peer_missing)
    results = measure(old_new_sides(args.old), args.rows, args.rounds, args.timeout, args.fine)
    if args.json:
        write_json(args.json, results)
    print(format_table(results, peer))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
