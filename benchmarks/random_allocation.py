"""Random allocation (k = 1) against random-allocation 1.0.5, side by side, 36 settings.

    python -m benchmarks.random_allocation                 # all 36 settings
    python -m benchmarks.random_allocation --no-peer       # dpacct alone
    python -m benchmarks.random_allocation --json out.json
    python -m benchmarks.random_allocation --first-call --old-python python   # issue 37

Settings: sigma in {0.8, 1, 2}, T in {100, 1 000, 10 000}, 1 and 10 epochs, delta in
{1e-6, 1e-10}.  Columns: dpacct's ``epsilon(delta)`` (the least of its sound routes),
its PLD route alone and the time of the whole call; the peer's
``allocation_epsilon_combined`` (the least of its local, analytic, direct, recursive
and -- one epoch -- decomposition bounds, RDP orders 2..32) in a child process capped
at ``--cap`` seconds, and its time.  Wall-clock seconds of one call, imports excluded,
caches cold (each setting is a fresh mechanism; the one-epoch law is cached across
deltas of one setting, as a user's second query would be).

Where dpacct is above the peer, a line follows naming which of the peer's bounds
decides and whether it is proved; none is expected (see benchmarks/README.md).

``--first-call`` (issue 37) measures instead the *first* call in a fresh process:
``epsilon(1e-6)`` and ``epsilon_bounds(1e-6)`` of one epoch at sigma 0.8, 1, 2 and T
1e3, 1e4, and the README's ``sampler_report`` example -- CPU seconds
(``time.process_time``) and wall seconds of the call, imports excluded, and the
process's peak resident memory (MB, imports included) -- for this checkout and, with
``--old-python``, for another interpreter's dpacct (e.g. the system ``python`` that
imports an older main), the two alternated round by round (``--rounds``, medians
printed); beside them random-allocation 1.0.5's ``allocation_epsilon_combined`` in a
fresh process of this interpreter, in the same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from benchmarks.beyond_epsilon import (
    PEER_CAP,
    RA_DELTAS,
    RA_EPOCHS,
    RA_SIGMAS,
    RA_STEPS,
    _capped,
    _fmt_peer,
    _peer_allocation,
)


def _ours(sigma: float, steps: int, epochs: int, delta: float) -> dict:
    from dpacct.accountant.transformers.random_allocation import random_allocation
    from dpacct.mechanisms import GaussianMechanism

    mech = random_allocation(GaussianMechanism(sigma=sigma), steps, epochs=epochs)
    t0 = time.perf_counter()
    eps = float(mech.epsilon(delta))
    sec = time.perf_counter() - t0
    return {"ours": eps, "ours_s": sec, "pld_route": float(mech.pld_route.epsilon(delta))}


#: the first-call workloads of issue 37: (label, kind, sigma, T)
FIRST_CALLS = (
    *(
        (f"{kind} sigma {s:g}, T {t:g}", kind, s, t)
        for s in (0.8, 1.0, 2.0)
        for t in (1000, 10_000)
        for kind in ("epsilon", "epsilon_bounds")
    ),
    ("README sampler_report (sigma 1.1, 60 000 / 600, 10 epochs)", "sampler_report", 1.1, 100),
)

#: one first call in a fresh process: imports before the clock, then the call; prints
#: JSON (answer, cpu, wall, peak MB of the process)
_CHILD = """
import json, resource, sys, time
kind, sigma, steps = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
if kind == "peer":
    sys.path.insert(0, sys.argv[4])
    from benchmarks.beyond_epsilon import _peer_allocation
    call = lambda: _peer_allocation(sigma, steps, 1, 1e-6)
else:
    import dpacct as dp
    from dpacct.accountant.transformers.random_allocation import random_allocation
    from dpacct.mechanisms import GaussianMechanism
    f = dp.sampler_report  # the lazy import, before the clock
    if kind == "sampler_report":
        def call():
            r = f(1.1, 1e-5, scheme="shuffle", dataset_size=60_000, batch_size=600, epochs=10)
            return (r.epsilon, r["balls-in-bins"].epsilon, r["random-allocation"].epsilon)
    else:
        ra = random_allocation(GaussianMechanism(sigma=sigma), steps)
        call = lambda: getattr(ra, kind)(1e-6)
c0, w0 = time.process_time(), time.perf_counter()
out = call()
cpu, wall = time.process_time() - c0, time.perf_counter() - w0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out = [float(x) for x in out] if isinstance(out, tuple) else float(out)
print(json.dumps({"answer": out, "cpu": cpu, "wall": wall, "mb": peak}))
"""


def _first_call(python: str, kind: str, sigma: float, steps: int, cap: float) -> dict | None:
    """One fresh process of ``python`` running :data:`_CHILD`; None if it fails.

    The child runs in the temporary directory, so that each interpreter imports its
    own installed dpacct (not the checkout's ``dpacct/`` folder next to the cwd).
    """
    import tempfile
    from pathlib import Path

    root = str(Path(__file__).resolve().parent.parent)
    cmd = [python, "-c", _CHILD, kind, repr(sigma), str(steps), root]
    try:
        done = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=cap,
            check=False,
            cwd=tempfile.gettempdir(),
        )
    except subprocess.TimeoutExpired:
        return {"answer": None, "cpu": cap, "wall": cap, "mb": float("nan"), "timeout": True}
    if done.returncode != 0:
        print(f"  ({python} {kind} failed: {done.stderr.strip().splitlines()[-1:]})")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def _fmt_answer(ans) -> str:
    if ans is None:
        return "-"
    if isinstance(ans, list):
        return "(" + ", ".join(f"{a:.6f}" for a in ans) + ")"
    return f"{ans:.6f}"


#: issue 37's goal for a first call (an idle machine): CPU seconds and peak MB
GOAL_CPU, GOAL_MB = 1.0, 200.0


def flat_record(row: dict) -> dict:
    """One JSON record per workload for ``benchmarks.alternate``: the answer under the
    field names it compares (``epsilon``; ``lower``, ``upper``; the sampler report's
    rows), and the medians of this checkout's ``cpu``, ``wall`` and ``peak_mb``."""
    rec: dict = {"workload": row["workload"]}
    new = row["new"]
    if not new:
        return rec
    ans = new[-1]["answer"]
    if isinstance(ans, list) and len(ans) == 2:
        rec["lower"], rec["upper"] = ans
    elif isinstance(ans, list):
        rec["epsilon"], rec["epsilon_balls_in_bins"], rec["epsilon_random_allocation"] = ans
    else:
        rec["epsilon"] = ans
    rec["cpu"] = _median(new, "cpu")
    rec["wall"] = _median(new, "wall")
    rec["peak_mb"] = _median(new, "mb")
    return rec


def first_call(old_python: str | None, rounds: int, peer: bool, cap: float) -> list[dict]:
    """The issue-37 rows: this checkout (and ``old_python``) alternated, the peer beside;
    the last column says whether this checkout's medians meet the goal (under
    :data:`GOAL_CPU` CPU seconds and :data:`GOAL_MB` MB; the goal is for an idle machine,
    so a loaded one can miss it on CPU)."""
    print(
        "| workload | dpacct answer | CPU s | wall s | peak MB | old answer | old CPU s "
        "| old peak MB | old CPU / new CPU | random-allocation 1.0.5 | its CPU s "
        f"| its CPU / our CPU | < {GOAL_CPU:g} s and < {GOAL_MB:g} MB |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = []
    here = sys.executable
    for label, kind, sigma, steps in FIRST_CALLS:
        new, old = [], []
        for _ in range(rounds):  # alternated: new, old, new, old, ...
            r = _first_call(here, kind, sigma, steps, cap)
            if r:
                new.append(r)
            if old_python:
                r = _first_call(old_python, kind, sigma, steps, cap)
                if r:
                    old.append(r)
        theirs = None
        if peer and kind == "epsilon":
            theirs = _first_call(here, "peer", sigma, steps, cap)
        row = {"workload": label, "new": new, "old": old, "peer": theirs}
        rows.append(row)
        n_cpu = _median(new, "cpu") if new else float("nan")
        o_cpu = _median(old, "cpu") if old else float("nan")
        p_cpu = theirs["cpu"] if theirs else float("nan")
        met = bool(new) and n_cpu < GOAL_CPU and _median(new, "mb") < GOAL_MB
        verdict = "met" if met else "NOT met"
        print(
            f"| {label} | {_fmt_answer(new[-1]['answer'] if new else None)} | {n_cpu:.3f} "
            f"| {_median(new, 'wall') if new else float('nan'):.3f} "
            f"| {_median(new, 'mb') if new else float('nan'):.0f} "
            f"| {_fmt_answer(old[-1]['answer'] if old else None)} | {o_cpu:.3f} "
            f"| {_median(old, 'mb') if old else float('nan'):.0f} | {o_cpu / n_cpu:.2f} "
            f"| {_fmt_answer(theirs['answer'] if theirs else None)} "
            f"| {p_cpu:.3f} | {p_cpu / n_cpu:.2f} | {verdict} |",
            flush=True,
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-peer", action="store_true", help="measure dpacct alone")
    parser.add_argument(
        "--cap", type=float, default=PEER_CAP, help="seconds one peer call may take (default 120)"
    )
    parser.add_argument("--json", metavar="PATH", help="write every row to this file")
    parser.add_argument(
        "--first-call", action="store_true", help="issue 37: first calls in fresh processes"
    )
    parser.add_argument(
        "--old-python", metavar="PY", help="--first-call: another interpreter's dpacct, alternated"
    )
    parser.add_argument("--rounds", type=int, default=3, help="--first-call: rounds (median)")
    args = parser.parse_args(argv)
    if args.first_call:
        rows = first_call(args.old_python, args.rounds, not args.no_peer, args.cap)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump({"rows": [flat_record(r) for r in rows], "runs": rows}, fh, indent=1)
        return 0
    have_peer = not args.no_peer
    if have_peer:
        try:
            import random_allocation  # noqa: F401
        except ImportError as exc:  # pragma: no cover - optional peer
            print(f"random-allocation not installed ({exc}); its columns are skipped")
            have_peer = False
    print(
        "| sigma | T | epochs | delta | dpacct | dpacct PLD route | dpacct s "
        "| random-allocation 1.0.5 | their s | ours - theirs |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    rows, above = [], []
    for s in RA_SIGMAS:
        for t in RA_STEPS:
            for e in RA_EPOCHS:
                for delta in RA_DELTAS:
                    row = {
                        # a string field: benchmarks.alternate keys rows by them
                        "setting": f"sigma {s:g}, T {t}, epochs {e}, delta {delta:g}",
                        "sigma": s,
                        "T": t,
                        "epochs": e,
                        "delta": delta,
                        **_ours(s, t, e, delta),
                    }
                    theirs, their_s, diff = "-", "-", "-"
                    if have_peer:
                        status, val, sec = _capped(_peer_allocation, (s, t, e, delta), args.cap)
                        theirs, their_s = _fmt_peer(status, val, sec, args.cap)
                        if status == "ok":
                            row["theirs"], row["their_s"] = val, sec
                            diff = f"{row['ours'] - val:+.4f}"
                            if row["ours"] > val:
                                above.append(row)
                    rows.append(row)
                    print(
                        f"| {s} | {t} | {e} | {delta:g} | {row['ours']:.4f} "
                        f"| {row['pld_route']:.4f} | {row['ours_s']:.2f} | {theirs} "
                        f"| {their_s} | {diff} |",
                        flush=True,
                    )
    if have_peer:
        n_ok = sum("theirs" in r for r in rows)
        print(
            f"\ndpacct at or below random-allocation 1.0.5 on {n_ok - len(above)} of {n_ok} "
            "settings measured."
        )
        for r in above:
            print(
                f"- above at sigma={r['sigma']}, T={r['T']}, epochs={r['epochs']}, "
                f"delta={r['delta']:g}: {r['ours']:.4f} against {r['theirs']:.4f}"
            )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
