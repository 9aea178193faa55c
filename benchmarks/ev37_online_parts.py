"""Issue 37, session 30: the decaying online loop with its queries switched off.

The target: a ``PrivacyAccountant`` stepping 10 000 times at q 0.01 with sigma ``2 *
0.9999^t`` and asked ``epsilon(1e-5)`` every 100 steps, no slower than Opacus'
``RDPAccountant`` on the constant loop (sigma 1, the same steps and queries).  A profile
puts most of the loop in the queries (each composes the pending block of distinct cells:
:mod:`dpacct.accountant.pld.online_direction`).  To show the gap moves with that cause,
the rows here, each one cold call in a fresh process (:func:`benchmarks.everyday.measure`,
imports excluded, CPU seconds), alternated round by round, medians:

* ``decaying, every 100``: the issue's loop (as ``benchmarks.everyday``'s ``online
  decaying``);
* ``decaying, steps + 1 query``: the same 10 000 steps, one ``epsilon(1e-5)`` at the end
  (99 of the 100 queries switched off: a different workload, not a different answer; its
  one answer is the loop's last);
* ``decaying, steps only``: the steps alone, no query;
* ``opacus constant, every 100``: the peer's loop.

``--budget`` instead times the decaying loop under budgets of 8 and 20 (the filter refuses
the step that would pass the budget and the loop stops there; this loop ends at 5.86, so
neither refuses: the rows time the filtered ledger) beside the same Opacus loop.
``--noisygd`` instead times NoisyGD's squared loss (``benchmarks.shapes``' row: n 10 000,
d 20, 50 000 iterations, sigma 50) against the plain numpy loop on ``X'X``, the same two
runners, by CPU of the call (``benchmarks.shapes`` reports the least wall time, which a
loaded machine spoils).

    python -m benchmarks.ev37_online_parts --rounds 3
    python -m benchmarks.ev37_online_parts --rounds 3 --budget
    python -m benchmarks.ev37_online_parts --rounds 3 --noisygd
    python -m benchmarks.ev37_online_parts --rounds 3 --experiment

``--callgrind STEPS`` counts instructions instead (valgrind's callgrind, the loop of
``STEPS`` steps, imports excluded; ``--budget-epsilon B`` under a budget), old and new
with ``--old``: ``python -m benchmarks.ev37_online_parts --callgrind 3000 --old
/tmp/online_old``.

``--experiment`` times the decaying loop with the cost of its queries' pending blocks
switched off two ways (:data:`EXPERIMENT_ROWS`).

``--old ROOT`` (an old checkout's root folder, e.g. from ``git archive``) adds every dpacct
row run by the old checkout, alternated with the new one in each round, and reports
whether the old and new answers (every printed epsilon of the loop) are equal:

    python -m benchmarks.ev37_online_parts --rounds 3 --old /tmp/online_old
    python -m benchmarks.ev37_online_parts --rounds 3 --budget --old /tmp/online_old

Measured: benchmarks/README.md, "Issue 37's speed targets, session 30" and "Session 31
(ws31-online)".
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from benchmarks.everyday import (
    _DPACCT_IMPORTS,
    _LOOP,
    _OPACUS_CONSTANT_LOOP,
    _OPACUS_IMPORTS,
    measure,
)

__all__ = ["BUDGET_ROWS", "EXPERIMENT_ROWS", "NOISYGD_ROWS", "ROWS", "main", "run", "same_answers"]

_DECAY = "noise_multiplier=2.0 * 0.9999**t, sample_rate=0.01"
_ACCT = "PrivacyAccountant(progress=False)"

#: row -> (imports, body)
ROWS: dict[str, tuple[str, str]] = {
    "decaying, every 100": (_DPACCT_IMPORTS, _LOOP.format(make=_ACCT, ask="epsilon",
                                                           step=_DECAY)),
    "decaying, steps + 1 query": (_DPACCT_IMPORTS, _LOOP.format(
        make=_ACCT, ask="epsilon", step=_DECAY).replace("% 100 == 0", "== 10_000")),
    "decaying, steps only": (_DPACCT_IMPORTS, (
        f"acct = {_ACCT}\nfor t in range(10_000):\n    acct.step({_DECAY})\n"
        "return 0.0, 'no query'")),
    "opacus constant, every 100": (_OPACUS_IMPORTS, _OPACUS_CONSTANT_LOOP),
}


_BUDGET_LOOP = """from dpacct.accountant import BudgetExceededError
acct = PrivacyAccountant(budget_epsilon={budget}, budget_delta=1e-5, progress=False)
eps, accepted = [], 0
for t in range(10_000):
    try:
        acct.step({step})
    except BudgetExceededError:
        eps.append(float(acct.epsilon(1e-5)))
        break
    accepted += 1
    if (t + 1) % 100 == 0:
        eps.append(float(acct.epsilon(1e-5)))
return eps, f'{{accepted}} steps accepted, last {{eps[-1]:.9f}}'"""
#: ``--budget``: the decaying loop under a budget (the filter refuses the step that would
#: pass it; the loop then stops, as :func:`benchmarks.shapes.dpacct_online`), beside the
#: peer's constant loop
BUDGET_ROWS: dict[str, tuple[str, str]] = {
    **{f"decaying, every 100, budget {b:g}": (_DPACCT_IMPORTS, _BUDGET_LOOP.format(
        budget=b, step=_DECAY)) for b in (8.0, 20.0)},
    "opacus constant, every 100": ROWS["opacus constant, every 100"],
}

_PATCH_K2 = """import dpacct.accountant.pld.online_direction as _od
_od._factor = lambda items, step, budget=0: 2
"""
_PATCH_NO_PENDING = """import dpacct.accountant.pld.incremental as _inc
_asked = _inc.IncrementalEpsilon._asked
def _history_only(self, extra=()):
    blocks, asked = _asked(self, extra)
    return (blocks, asked) if asked else ([], False)
_inc.IncrementalEpsilon._asked = _history_only
"""
#: the queries' pending blocks composed at most ``K = 4`` (commits as main): the blocks a
#: query composes while its pending steps hold few cells (cap ``FINE_BUDGET // cells``
#: up to 32) have the longest fine windows (session 33)
_PATCH_PENDING_K4 = """import dpacct.accountant.pld.online_direction as _od
_pld, _f, _asking = _od._Direction.pld, _od._factor, []
def _pld_k4(self, *a, **k):
    _asking.append(1)
    try:
        return _pld(self, *a, **k)
    finally:
        _asking.pop()
_od._Direction.pld = _pld_k4
_od._factor = lambda items, step, budget=0: min(_f(items, step, budget), 4) if _asking else _f(
    items, step, budget)
"""
#: ``--experiment``: the loop with the cause of its queries' cost switched off, each in
#: the same fresh-process harness: every block (the queries' pending ones and the
#: committed ones) composed on the grid ``h / 2`` instead of :func:`~dpacct.accountant.
#: pld.block_rules._factor`'s (sound, other answers: the pending blocks' cells are then
#: discretised once per query at one factor, and a commit finds the last query's cells),
#: and the queries reading the committed blocks only (the pending steps left out:
#: *unsound*, an experiment for the share of the pending block's composition)
EXPERIMENT_ROWS: dict[str, tuple[str, str]] = {
    "decaying, every 100": ROWS["decaying, every 100"],
    "decaying, every 100, every block at K = 2 (experiment)": (
        _DPACCT_IMPORTS + _PATCH_K2, ROWS["decaying, every 100"][1]),
    "decaying, every 100, pending blocks at K <= 4 (experiment, looser)": (
        _DPACCT_IMPORTS + _PATCH_PENDING_K4, ROWS["decaying, every 100"][1]),
    "decaying, every 100, pending steps not composed (unsound experiment)": (
        _DPACCT_IMPORTS + _PATCH_NO_PENDING, ROWS["decaying, every 100"][1]),
    "opacus constant, every 100": ROWS["opacus constant, every 100"],
}

_GD = ("{'kind': 'noisy_gd', 'n': 10_000, 'd': 20, 'iterations': 50_000, 'sigma': 50.0, "
       "'theta_bound': 2.0, 'seed': 0}")
#: ``--noisygd``: row -> (imports, body)
NOISYGD_ROWS: dict[str, tuple[str, str]] = {
    # dpacct bound first (the installed mapping), then this checkout's benchmarks first
    name: ("import sys\nimport dpacct.mechanisms\n"
           f"sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})\n"
           "from benchmarks.shapes import dpacct_noisy_gd, numpy_noisy_gd\n",
           f"r = {fn}({_GD})\nreturn r['epsilon'], r.get('note')")
    for name, fn in (("NoisyGD.fit (squared loss)", "dpacct_noisy_gd"),
                     ("numpy loop on X'X", "numpy_noisy_gd"))
}


def run(
    rounds: int, rows: dict[str, tuple[str, str]] | None = None, old: str | None = None
) -> dict[str, dict]:
    """Every row once per round, alternated: ``{row: {"cpu": [...], "answer": ...,
    "values": ...}}``; with ``old`` (a checkout's root folder or an interpreter), every
    dpacct row also as ``"<row> (old)"``, measured right after the new one."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    rows = ROWS if rows is None else rows
    sides = []
    for name, (imports, body) in rows.items():
        sides.append((name, sys.executable, imports, body))
        if old is not None and imports == _DPACCT_IMPORTS:
            sides.append((f"{name} (old)", old, imports, body))
    out: dict[str, dict] = {
        k: {"cpu": [], "answer": None, "values": None, "note": None} for k, *_ in sides
    }
    for _ in range(rounds):
        for name, python, imports, body in sides:
            got = measure(python, imports, body)
            out[name]["cpu"].append(got["cpu"])
            out[name]["answer"], out[name]["note"] = got["answer"], got["note"]
            out[name]["values"] = got.get("values")
    return out


#: ``--callgrind``'s child: the decaying loop of ``steps`` steps (``budget`` > 0: under that
#: budget), counted between its two ``time.process_time`` calls, every answer printed
CALLGRIND_CHILD = """import sys, time
from dpacct.accountant import PrivacyAccountant, BudgetExceededError
budget, steps = float(sys.argv[1]), int(sys.argv[2])
time.process_time()
acct = (PrivacyAccountant(budget_epsilon=budget, budget_delta=1e-5, progress=False) if budget
        else PrivacyAccountant(progress=False))
eps = []
for t in range(steps):
    try:
        acct.step(noise_multiplier=2.0 * 0.9999**t, sample_rate=0.01)
    except BudgetExceededError:
        eps.append(("refused", t, float(acct.epsilon(1e-5))))
        break
    if (t + 1) % 100 == 0:
        eps.append(float(acct.epsilon(1e-5)))
time.process_time()
print(repr(eps))
"""


def callgrind_rows(steps: int, budget: float, old: str | None) -> dict[str, dict]:
    """Instructions of :data:`CALLGRIND_CHILD` (the loop, imports excluded) under
    valgrind's callgrind, for this tree and (``old``: a checkout's root folder) the old
    one: ``{side: {"total", "answer"}}``; deterministic whatever the load."""
    import os

    from benchmarks.checkouts import checkout_env
    from benchmarks.dpsgd_floor import callgrind_script

    out = {}
    for side, root in (("new", None), ("old", old)):
        if side == "old" and root is None:
            continue
        saved = dict(os.environ)
        try:
            if root is not None:
                os.environ.update(checkout_env(root))
            got = callgrind_script(sys.executable, CALLGRIND_CHILD, [str(budget), str(steps)],
                                   prefix="ev37_online_cg_")
        finally:
            os.environ.clear()
            os.environ.update(saved)
        out[side] = {"total": got["total"], "answer": got["answer"]}
    return out


def same_answers(got: dict[str, dict]) -> dict[str, str]:
    """Per row with an old twin: ``"equal"`` when every printed epsilon of the last
    round is the same float on both sides, else the largest relative difference."""
    out = {}
    for name, r in got.items():
        twin = got.get(f"{name} (old)")
        if twin is None:
            continue
        a = r["values"] if r["values"] is not None else [r["answer"]]
        b = twin["values"] if twin["values"] is not None else [twin["answer"]]
        if a == b:
            out[name] = f"equal ({len(a)} answers)"
        elif None in a or None in b or len(a) != len(b):
            out[name] = "?"
        else:
            worst = max(abs(x - y) / abs(y) for x, y in zip(a, b, strict=True) if y)
            out[name] = f"differ (largest {worst:.1e} relative)"
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--noisygd", action="store_true")
    ap.add_argument("--budget", action="store_true")
    ap.add_argument("--experiment", action="store_true")
    ap.add_argument("--callgrind", type=int, default=None, metavar="STEPS",
                    help="instructions of the decaying loop of STEPS steps (with --old: "
                         "old and new) under callgrind instead of CPU seconds")
    ap.add_argument("--budget-epsilon", type=float, default=0.0,
                    help="with --callgrind: the loop under this budget (0: none)")
    ap.add_argument("--old", default=None,
                    help="an old checkout's root folder (or an interpreter importing it)")
    args = ap.parse_args(argv)
    if args.callgrind is not None:
        cg = callgrind_rows(args.callgrind, args.budget_epsilon, args.old)
        for side, r in cg.items():
            print(f"{side}: {r['total']:,} instructions")
        if "old" in cg:
            same = "equal" if cg["old"]["answer"] == cg["new"]["answer"] else "DIFFER"
            print(f"new / old {cg['new']['total'] / cg['old']['total']:.4f}; answers {same}")
        return 0
    rows = (NOISYGD_ROWS if args.noisygd else BUDGET_ROWS if args.budget
            else EXPERIMENT_ROWS if args.experiment else None)
    got = run(args.rounds, rows, args.old)
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"{args.rounds} rounds alternated, CPU s of the call (medians); load {load}")
    print("| row | CPU s (median) | per round | answer / note |")
    print("| --- | --- | --- | --- |")
    for name, r in got.items():
        cpus = [c for c in r["cpu"] if c is not None]
        med = statistics.median(cpus) if cpus else None
        per = " ".join(f"{c:.2f}" for c in cpus)
        print(f"| {name} | {'-' if med is None else f'{med:.3f}'} | {per} | {r['note']} |")
    for name, verdict in same_answers(got).items():
        new = statistics.median([c for c in got[name]["cpu"] if c is not None] or [0.0])
        old = statistics.median([c for c in got[f"{name} (old)"]["cpu"] if c is not None]
                                or [0.0])
        ratio = f"{old / new:.3f}" if new and old else "-"
        print(f"old vs new, {name}: answers {verdict}; old CPU / new CPU {ratio} "
              f"(per round: " + " ".join(
                  f"{o / n:.2f}" for o, n in zip(got[f"{name} (old)"]["cpu"],
                                                 got[name]["cpu"], strict=True) if o and n)
              + ")")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
