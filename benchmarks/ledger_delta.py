"""epsilon and delta of one ledger, both directions (issue 36, "the same way down").

For ledgers of 1 (a constant run, the ``"exact"`` route), 17, 100, 1 000 and 10 000
distinct DP-SGD records (the ``"online"`` route), prints ``delta(e)`` at a few fixed
epsilons and the round trips ``delta(epsilon(d))`` (at most ``d``) and
``epsilon(delta(e))`` (at most ``e``), each query's CPU time, in a fresh ledger per
ledger kind.  Rows carry a ``delta`` field (an upper bound), so old and new checkouts
compare with::

    python -m benchmarks.alternate --old /tmp/old --new . -- benchmarks.ledger_delta

(``LOOSER`` there: a delta answer went up).  ``--only NAME`` runs one ledger; ``--eps E``
(repeatable) asks at those epsilons instead of :data:`EPSILONS` (e.g. ``--only
distinct100 --eps 7.25``: just above the history's floor, where the rounded schedule
answers too).  CPU time is ``time.process_time`` (the machine may be loaded).

``--smallq`` runs issue 37's small-q online loop instead (sigma ``1 + 0.001 t``, q
``1e-4 (1 + t mod 5)``, ``--steps`` steps, 1 500 by default, one ``epsilon(1e-5)``, then
``delta`` at ``--eps``, 0.5, 1 and 2 by default, in that order): its true delta is below
what the online histories read, so every query falls back to the engine on the schedule
rounded up (session 27: 72-76 s a query).  Each checkout runs in a fresh subprocess,
old and new alternated (``--old ROOT:PYTHON``, e.g. ``--old /work/main:python``), and
the row prints each query's answer and CPU seconds::

    python -m benchmarks.ledger_delta --smallq --old /work/main:python
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from benchmarks.checkouts import write_json

#: the epsilons every ledger is asked delta at
EPSILONS = (1.0, 2.0, 4.0, 8.0)
#: the delta of the round trip delta(epsilon(d))
ROUND_TRIP_DELTA = 1e-5
#: epsilon(delta(e)) is asked back only for answers at least this (an online ledger's
#: epsilon at a delta near its history's certificate floor takes minutes on main and
#: here alike: not this benchmark's question)
BACK_MIN_DELTA = 1e-7


def _schedules() -> dict[str, list[tuple[float, float, int]]]:
    import numpy as np

    from benchmarks.peer_registry import WORKLOADS, schedule_of

    rng = np.random.default_rng(0)
    random100 = [
        (float(s), float(q), 100)
        for s, q in zip(rng.uniform(0.8, 2.0, 100), rng.uniform(0.001, 0.02, 100), strict=True)
    ]
    return {
        "constant": [(1.1, 256 / 60_000, 14_063)],
        "distinct17": [(1.0 + t / 20, 0.01, 250) for t in range(17)],
        "distinct100": random100,
        "distinct1000": schedule_of(WORKLOADS["schedule_phases1000"]),
        "distinct10000": schedule_of(WORKLOADS["schedule_decay10k"]),
    }


def _ledger(phases: list[tuple[float, float, int]]) -> Any:
    from dpacct.accountant import PrivacyAccountant

    acct = PrivacyAccountant(progress=False)
    for sigma, q, count in phases:
        acct.step(noise_multiplier=sigma, sample_rate=q, count=count)
    return acct


def _timed(fn) -> tuple[Any, float]:
    t = time.process_time()
    out = fn()
    return out, time.process_time() - t


def rows(
    name: str, phases: list[tuple[float, float, int]], epsilons: tuple[float, ...] = EPSILONS
) -> list[dict[str, Any]]:
    """The answers for one ledger: delta at ``epsilons`` and the two round trips."""
    out: list[dict[str, Any]] = []
    acct = _ledger(phases)
    route = acct.route
    for e in epsilons:
        d, t = _timed(lambda e=e: acct.delta(e))
        back = acct.epsilon(d) if d >= BACK_MIN_DELTA else None
        out.append(
            {
                "ledger": name,
                "route": route,
                "query": f"delta(eps={e:g})",
                "delta": float(d),
                "eps_back": back,
                "back_ok": back is None or bool(back <= e * (1 + 1e-9)),
                "cpu_s": t,
            }
        )
    eps, t_eps = _timed(lambda: acct.epsilon(ROUND_TRIP_DELTA))
    d, t = _timed(lambda: acct.delta(eps))
    out.append(
        {
            "ledger": name,
            "route": route,
            "query": f"delta(epsilon({ROUND_TRIP_DELTA:g}))",
            "delta": float(d),
            "eps_asked": float(eps),
            "back_ok": bool(d <= ROUND_TRIP_DELTA * (1 + 1e-9)),
            "cpu_s": t,
            "eps_cpu_s": t_eps,
        }
    )
    return out


#: the small-q loop's child (``--smallq``): prints one JSON line
_SMALLQ_CHILD = r"""
import json, sys, time
from dpacct.accountant import PrivacyAccountant
steps, epsilons = json.loads(sys.argv[1])
acct = PrivacyAccountant(progress=False)
t0 = time.process_time()
for t in range(steps):
    acct.step(noise_multiplier=1.0 + 0.001 * t, sample_rate=1e-4 * (1 + t % 5))
loop = time.process_time() - t0
t0 = time.process_time()
eps = acct.epsilon(1e-5)
first = time.process_time() - t0
deltas, cpu = [], []
for e in epsilons:
    t0 = time.process_time()
    deltas.append(float(acct.delta(e)))
    cpu.append(time.process_time() - t0)
print(json.dumps({"loop_cpu": loop, "epsilon": eps, "epsilon_cpu": first, "deltas": deltas,
                  "cpu": cpu}))
"""


def smallq(old: str | None, steps: int, epsilons: tuple[float, ...], rounds: int) -> list:
    """The small-q loop's ``delta`` queries in each checkout (``--old``), alternated
    per round: one record per round and side."""
    from benchmarks.checkouts import old_new_sides, run_in_checkout

    out = []
    for _ in range(rounds):
        for side, (root, python) in old_new_sides(old).items():
            rec = run_in_checkout(
                root, python, [_SMALLQ_CHILD, json.dumps([steps, list(epsilons)])], 3600.0
            )
            rec["side"] = side
            out.append(rec)
            if rec.get("status") != "ok":
                print(f"smallq {steps:5d} {side:3} {rec.get('status')} {rec.get('error')}")
                continue
            cells = "  ".join(
                f"delta({e:g}) {d:.10e} cpu {c:6.2f} s"
                for e, d, c in zip(epsilons, rec["deltas"], rec["cpu"], strict=True)
            )
            print(
                f"smallq {steps:5d} {side:3} loop {rec['loop_cpu']:5.2f} s  epsilon(1e-5) "
                f"{rec['epsilon']:.10f} {rec['epsilon_cpu']:5.2f} s  {cells}",
                flush=True,
            )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ledger_delta")
    p.add_argument("--json", help="write the rows to this file")
    p.add_argument("--only", action="append", help="run only this ledger (repeatable)")
    p.add_argument("--eps", action="append", type=float, help="ask delta at this epsilon")
    p.add_argument("--smallq", action="store_true", help="the small-q online loop instead")
    p.add_argument("--steps", type=int, default=1500, help="--smallq: steps of the loop")
    p.add_argument("--old", help="--smallq: ROOT:PYTHON of the old checkout (alternated)")
    p.add_argument("--rounds", type=int, default=1, help="--smallq: rounds")
    args = p.parse_args(argv)
    results: list[dict[str, Any]] = []
    if args.smallq:
        results = smallq(args.old, args.steps, tuple(args.eps or (0.5, 1.0, 2.0)), args.rounds)
        if args.json:
            write_json(args.json, {"command": sys.argv, "results": results})
        return 0 if all(r.get("status") == "ok" for r in results) else 1
    for name, phases in _schedules().items():
        if args.only and name not in args.only:
            continue
        for row in rows(name, phases, tuple(args.eps or EPSILONS)):
            results.append(row)
            print(
                f"{row['ledger']:14} {row['route']:7} {row['query']:24} "
                f"delta {row['delta']:.6e}  ok {row['back_ok']!s:5}  cpu {row['cpu_s']:.2f} s",
                flush=True,
            )
    if args.json:
        write_json(args.json, {"command": sys.argv, "results": results})
    return 0 if all(r["back_ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
