"""A ledger fed a schedule phase by phase, asked once: two checkouts alternated.

A ``PrivacyAccountant`` is fed the phases of a schedule (one ``step(count=)`` call a
phase) and asked ``epsilon(1e-5)`` once, in a fresh subprocess of each checkout (old:
say main; new: this one), alternating for a few rounds.  Each row prints the answers
and the CPU seconds (``time.process_time``) of the loop and the query, their range
over the rounds, and the peak resident memory; ``growth`` is the median time at
``10 N`` phases over the time at ``N`` (same shape; linear in the phases is 10x).

The schedules: N random phases x 10 (sigma uniform in [0.8, 2], q in [0.001, 0.02],
seed 0, as :mod:`benchmarks.shapes`); per-step decaying sigmas ``s0 * 0.9999^t`` at
q 0.01; N phases x 10 with sigma uniform in [1, 2] and q log-uniform in [1e-3, 1e-2]
(seed 0), and N such phases of one step each.  The 100 000 x 10 rows run only when
named (``--rows``): minutes each.  ``--bounds`` also times ``epsilon_bounds(1e-5)``
after the query (its lower end, width and CPU), ``--width W`` asks it for
``width=W`` (a checkout without that keyword gives its default bracket).  ``--count``
also counts the work of the group products (the online blocks', the history's groups',
the schedule tree's: every :func:`~dpacct.accountant.pld.groups._compose_spectrum`
call): products, transformed rows and transform points (rows times length), numbers
that do not move with the machine's load, for comparing two checkouts' block work.

Run from the repository root::

    python -m benchmarks.ledger_phases --old /path/to/main:/path/to/python --rounds 2

Timings depend on the machine and its load: compare the rows of one run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from benchmarks.checkouts import old_new_sides, run_in_checkout, write_json

ROWS = {
    "100 phases x 10": ("phases", 2.0, 100),
    "1000 phases x 10": ("phases", 2.0, 1000),
    "1000 phases x 10, sigma 1-2, q log-uniform": ("phases_log", 2.0, 1000),
    "decaying 1.5, 200 steps": ("decay", 1.5, 200),
    "decaying 1.5, 1906 steps": ("decay", 1.5, 1906),
    "decaying 2.0, 10000 steps": ("decay", 2.0, 10_000),
    "10000 phases x 10": ("phases", 2.0, 10_000),
    "10000 phases x 10, sigma 1-2, q log-uniform": ("phases_log", 2.0, 10_000),
    "1000 phases x 1, sigma 1-2, q log-uniform": ("phases_log1", 2.0, 1000),
    "10000 phases x 1, sigma 1-2, q log-uniform": ("phases_log1", 2.0, 10_000),
    "100000 phases x 1, sigma 1-2, q log-uniform": ("phases_log1", 2.0, 100_000),
    "100000 phases x 10": ("phases", 2.0, 100_000),
    "100000 phases x 10, sigma 1-2, q log-uniform": ("phases_log", 2.0, 100_000),
    # issue 37, session 27: small distinct q (the session-26 review's bracket was 36 % wide)
    "20 phases x 50, q 1e-5..2e-4": ("tinyq", 1.0, 20),
}
#: rows left out unless named (--rows): each takes minutes
HEAVY = ("100000 phases x 10", "100000 phases x 10, sigma 1-2, q log-uniform")

_CHILD = r"""
import json, resource, sys, time
import numpy as np
from dpacct.accountant import PrivacyAccountant
kind, s0, n = json.loads(sys.argv[1])
COUNT = None
if "count" in sys.argv[3:]:  # the group products' work, counted (--count)
    from dpacct.accountant.pld import groups as _groups
    _cs = getattr(_groups, "_compose_spectrum", None)
    if _cs is not None:
        COUNT = {"products": 0, "rows": 0, "points": 0}
        def _counted(step, firsts, pmfs, *a, **k):
            res = _cs(step, firsts, pmfs, *a, **k)
            if res is not None:
                COUNT["products"] += 1
                COUNT["rows"] += len(pmfs)
                COUNT["points"] += len(pmfs) * int(res[1])
            return res
        _groups._compose_spectrum = _counted
if kind == "phases":
    rng = np.random.default_rng(0)
    sig, q = rng.uniform(0.8, 2.0, n), rng.uniform(0.001, 0.02, n)
    sched = [(float(a), float(b), 10) for a, b in zip(sig, q)]
elif kind in ("phases_log", "phases_log1"):
    rng = np.random.default_rng(0)
    sig = rng.uniform(1.0, 2.0, n)
    q = np.exp(rng.uniform(np.log(1e-3), np.log(1e-2), n))
    k = 10 if kind == "phases_log" else 1
    sched = [(float(a), float(b), k) for a, b in zip(sig, q)]
elif kind == "tinyq":
    sched = [(s0 + 0.01 * i, 1e-5 * (1 + i), 50) for i in range(n)]
else:
    sched = [(s0 * 0.9999**t, 0.01, 1) for t in range(n)]
acct = PrivacyAccountant(progress=False)
t0 = time.process_time()
for s, qq, k in sched:
    acct.step(noise_multiplier=s, sample_rate=qq, count=k)
eps = acct.epsilon(1e-5)
cpu = time.process_time() - t0
mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out = {"epsilon": eps, "cpu": cpu, "peak_mb": mb, **(COUNT or {})}
if len(sys.argv) > 2 and sys.argv[2] == "dpa":  # dp_accounting's default PLD instead
    import dp_accounting as dpa
    from dp_accounting.pld import PLDAccountant
    t0 = time.process_time()
    peer = PLDAccountant(value_discretization_interval=1e-4)
    for s, qq, k in sched:
        peer.compose(dpa.PoissonSampledDpEvent(qq, dpa.GaussianDpEvent(s)), k)
    out = {"epsilon": peer.get_epsilon(1e-5), "cpu": time.process_time() - t0,
           "version": dpa.__version__ if hasattr(dpa, "__version__") else "?"}
elif len(sys.argv) > 2 and sys.argv[2].startswith("bounds"):
    width = float(sys.argv[2][6:]) if len(sys.argv[2]) > 6 else None
    t0 = time.process_time()
    try:  # a checkout without epsilon_bounds(width=) gives its default bracket
        out["lower"] = acct.epsilon_bounds(1e-5, **({} if width is None else {"width": width}))[0]
    except TypeError:
        out["lower"] = acct.epsilon_bounds(1e-5)[0]
    out["bounds_cpu"] = time.process_time() - t0
print(json.dumps(out))
"""

#: dp_accounting's answers (its default pessimistic PLD, interval 1e-4), cached: each
#: takes minutes (100 phases: 20 s CPU)
PEER_CACHE = "benchmarks/data/ledger_phases_dp_accounting.json"


def _run(
    root: str, python: str, row: tuple, timeout: float, mode: str = "", count: bool = False
) -> dict[str, Any]:
    args = [_CHILD, json.dumps(list(row)), mode] + (["count"] if count else [])
    return run_in_checkout(root, python, args, timeout)


def peer_answers(rows: Sequence[str], timeout: float) -> dict[str, Any]:
    """dp_accounting's default pessimistic PLD on each row, from :data:`PEER_CACHE` or
    computed (in this interpreter, its installed dp_accounting) and written there."""
    import os

    cache: dict[str, Any] = {}
    if os.path.exists(PEER_CACHE):
        with open(PEER_CACHE) as fh:
            cache = json.load(fh)
    for name in rows:
        if name not in cache:
            rec = _run(".", sys.executable, ROWS[name], timeout, "dpa")
            if rec.get("status") == "ok":
                rec["command"] = "python -m benchmarks.ledger_phases --peer"
                cache[name] = rec
                write_json(PEER_CACHE, cache)
    return cache


def measure(
    sides, rows: Sequence[str], rounds: int, timeout: float, mode: str = "", count: bool = False
) -> dict[str, Any]:
    """``{row: {side: [record per round]}}``, the sides alternated within each round
    (``count``: each record with the group products' counted work, ``--count``)."""
    out: dict[str, Any] = {name: {side: [] for side in sides} for name in rows}
    for _ in range(rounds):
        for name in rows:
            for side, (root, python) in sides.items():
                rec = _run(root, python, ROWS[name], timeout, mode, count)
                out[name][side].append(rec)
                print(name, side, json.dumps(rec), file=sys.stderr, flush=True)
    return out


def _tenth(name: str) -> str | None:
    """The row of the same shape with a tenth of the phases (``growth``), if any."""
    head, _, rest = name.partition(" ")
    if not head.isdigit() or int(head) % 10 or not rest.startswith("phases"):
        return None
    return f"{int(head) // 10} {rest}"


def growth(results: dict[str, Any], name: str, side: str) -> float | None:
    """The median CPU of row ``name`` over that of the row with a tenth of its phases
    (same shape, same side), when both ran: 1 for linear in the phases is 10."""
    small = _tenth(name)
    if small is None or small not in results:
        return None

    def med(row: str) -> float | None:
        cpu = sorted(r["cpu"] for r in results[row][side] if r.get("status") == "ok")
        return cpu[len(cpu) // 2] if cpu else None

    big, low = med(name), med(small)
    return None if big is None or not low else big / low


def format_table(results: dict[str, Any], peer: dict[str, Any] | None = None) -> str:
    """A markdown table: per row and side, the answer, the CPU range and peak MB (and
    the lower end and its relative width with ``--bounds``); with ``peer``,
    dp_accounting's answer and each side's relative gap to it."""
    sides = list(next(iter(results.values())))
    cols = " epsilon | {} CPU s | {} MB | {} growth |"
    head = "| schedule |" + "".join(f" {s}" + cols.format(s, s, s) for s in sides)
    extra = [s for s in sides if any("lower" in r for r in next(iter(results.values()))[s])]
    head += "".join(f" {s} lower | {s} width | {s} bounds CPU s |" for s in extra)
    counted = [s for s in sides if any("points" in r for r in next(iter(results.values()))[s])]
    head += "".join(f" {s} products | {s} rows | {s} points |" for s in counted)
    if peer is not None:
        head += " dp_accounting |" + "".join(f" {s} gap |" for s in sides)
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    for name, recs in results.items():
        line = f"| {name} |"
        best: dict[str, float] = {}
        for side in sides:
            ok = [r for r in recs[side] if r.get("status") == "ok"]
            if not ok:
                line += f" {recs[side][0].get('status') if recs[side] else ''} | | | |"
                continue
            cpu = sorted(r["cpu"] for r in ok)
            span = f"{cpu[0]:.3g}" if len(cpu) == 1 else f"{cpu[0]:.3g}-{cpu[-1]:.3g}"
            best[side] = ok[0]["epsilon"]
            line += f" {ok[0]['epsilon']:.9f} | {span} | {max(r['peak_mb'] for r in ok):.0f} |"
            g = growth(results, name, side)
            line += f" {g:.1f}x |" if g is not None else " |"
        for side in extra:
            ok = [r for r in recs[side] if "lower" in r]
            if ok:
                lo, hi = ok[0]["lower"], ok[0]["epsilon"]
                bc = sorted(r["bounds_cpu"] for r in ok)
                span = f"{bc[0]:.3g}" if len(bc) == 1 else f"{bc[0]:.3g}-{bc[-1]:.3g}"
                line += f" {lo:.9f} | {(hi - lo) / hi:.2e} | {span} |"
            else:
                line += " | | |"
        for side in counted:
            ok = [r for r in recs[side] if "points" in r]
            if ok:  # deterministic: the first round's
                line += f" {ok[0]['products']} | {ok[0]['rows']} | {ok[0]['points']:,} |"
            else:
                line += " | | |"
        if peer is not None:
            ref = peer.get(name, {}).get("epsilon")
            line += f" {ref:.9f} |" if ref else " |"
            for side in sides:
                gap = (best[side] - ref) / ref if ref and side in best else None
                line += f" {gap:+.2e} |" if gap is not None else " |"
        lines.append(line)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ledger_phases")
    p.add_argument("--old", help="ROOT:PYTHON of the checkout to compare against")
    p.add_argument(
        "--rows", nargs="+", default=[r for r in ROWS if r not in HEAVY], choices=list(ROWS)
    )
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per call")
    p.add_argument("--json", help="write the records to this file")
    p.add_argument("--bounds", action="store_true", help="also epsilon_bounds' lower end")
    p.add_argument(
        "--width",
        type=float,
        help="with --bounds: epsilon_bounds(width=) (a checkout without it: its default)",
    )
    p.add_argument(
        "--count",
        action="store_true",
        help="also count the group products' work (products, rows, transform points)",
    )
    p.add_argument(
        "--peer", action="store_true", help=f"dp_accounting's answers too (cached: {PEER_CACHE})"
    )
    args = p.parse_args(argv)
    mode = "bounds" if args.bounds else ""
    if args.bounds and args.width is not None:
        mode += repr(args.width)
    results = measure(
        old_new_sides(args.old), args.rows, args.rounds, args.timeout, mode, args.count
    )
    if args.json:
        write_json(args.json, results)
    print(format_table(results, peer_answers(args.rows, args.timeout) if args.peer else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
