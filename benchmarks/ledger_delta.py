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
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from typing import Any

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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ledger_delta")
    p.add_argument("--json", help="write the rows to this file")
    p.add_argument("--only", action="append", help="run only this ledger (repeatable)")
    p.add_argument("--eps", action="append", type=float, help="ask delta at this epsilon")
    args = p.parse_args(argv)
    results: list[dict[str, Any]] = []
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
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(args.json)) or ".")
        with os.fdopen(fd, "w") as f:
            json.dump({"command": sys.argv, "results": results}, f, indent=1)
        os.replace(tmp, args.json)
    return 0 if all(r["back_ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
