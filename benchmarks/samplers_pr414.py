"""Random allocation at k = 1: dpacct against dp_accounting PR #414 (Feldman & Shenfeld 2026).

    python -m benchmarks.samplers_pr414 --pr-root PATH          # the table, one run
    python -m benchmarks.samplers_pr414 --pr-root PATH --quick  # T 100 and 1 000 only
    python -m benchmarks.samplers_pr414 --pr-root PATH --json out.json

Feldman & Shenfeld, "Efficient privacy loss accounting for subsampling and random
allocation" (arXiv 2602.17284), compute the PLD of random allocation ("PLD
realization"); their implementation is google/differential-privacy pull request #414
(``dp_accounting.pld.random_allocation`` and ``RandomAllocationDpEvent``; not merged
into dp-accounting 0.6.0 on PyPI).  ``--pr-root`` is the PR's ``python/dp_accounting``
folder (a checkout of ``refs/pull/414/head``, commit 125d46c, 2026-08-19); it is put
first on the path of a *child* process, so the installed dp-accounting 0.6.0 is never
shadowed here.  The peer is asked as a JAX Privacy / dp_accounting user would ask it:
``PLDAccountant().compose(RandomAllocationDpEvent(GaussianDpEvent(sigma),
num_selected=1, num_steps=T), count=epochs).get_epsilon(delta)`` (its default
discretisation 1e-4; the event's PLD is the PR's dominating ("upper") bound).

Settings: the 36 k = 1 settings of ``benchmarks/random_allocation.py`` (sigma 0.8, 1,
2; T 100, 1 000, 10 000; 1 and 10 epochs; delta 1e-6 and 1e-10).  The PR's tests use
only toy settings (T 2 to 5), and Feldman & Shenfeld's table of published numbers was
not reachable from here, so this grid stands in for "the k = 1 settings they publish".

Columns: dpacct's certified ``epsilon(delta)`` of ``random_allocation(
GaussianMechanism(sigma), steps=T, epochs=epochs)`` and its CPU seconds (fresh
mechanism per setting; the second delta of a setting reuses the law, as a user's
second query would); the PR's epsilon and its CPU seconds (one child process per
(sigma, T, epochs), both deltas from one PLD, the PLD's construction charged to the
first delta); ours / theirs.  CPU seconds (``time.process_time``); the machine was
shared with other jobs, so the times are noisy.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time

from benchmarks.beyond_epsilon import RA_DELTAS, RA_EPOCHS, RA_SIGMAS, RA_STEPS

#: the PR's head commit that the numbers were made with
PR_COMMIT = "125d46c"
#: wall-clock cap of one peer child (seconds)
CAP = 3600.0

_CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
sigma, steps, epochs = float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
deltas = [float(x) for x in sys.argv[5:]]
out = []
c0 = time.process_time()
acc = pld_privacy_accountant.PLDAccountant()
event = dp_event.RandomAllocationDpEvent(
    dp_event.GaussianDpEvent(sigma), num_selected=1, num_steps=steps)
acc.compose(event, count=epochs)
for d in deltas:
    eps = acc.get_epsilon(d)
    c1 = time.process_time()
    out.append({"delta": d, "epsilon": float(eps), "cpu": c1 - c0})
    c0 = c1
print(json.dumps(out))
"""


def peer(pr_root: str, sigma: float, steps: int, epochs: int, deltas, cap: float):
    """The PR's epsilons for ``deltas`` in one fresh child process (None on failure)."""
    cmd = [sys.executable, "-c", _CHILD, pr_root, repr(sigma), str(steps), str(epochs)]
    cmd += [repr(d) for d in deltas]
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
        return None, f"over {cap:.0f} s"
    if done.returncode != 0:
        return None, (done.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(done.stdout.strip().splitlines()[-1]), ""


def ours(sigma: float, steps: int, epochs: int, deltas) -> list[dict]:
    """dpacct's certified epsilons for ``deltas`` (one mechanism), with CPU seconds."""
    from dpacct.accountant import random_allocation
    from dpacct.mechanisms import GaussianMechanism

    mech = random_allocation(GaussianMechanism(sigma=sigma), steps=steps, epochs=epochs)
    out = []
    for d in deltas:
        c0 = time.process_time()
        eps = float(mech.epsilon(d))
        out.append({"delta": d, "epsilon": eps, "cpu": time.process_time() - c0})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pr-root", required=True, help="the PR's python/dp_accounting folder")
    parser.add_argument("--quick", action="store_true", help="T 100 and 1 000 only")
    parser.add_argument(
        "--settings",
        metavar="S,T,E;...",
        help="only these (sigma, T, epochs) settings, in this order (e.g. '2,100,1;1,100,1')",
    )
    parser.add_argument("--cap", type=float, default=CAP, help="seconds one peer child may take")
    parser.add_argument("--json", metavar="PATH", help="write every row to this file")
    args = parser.parse_args(argv)
    steps_grid = RA_STEPS[:2] if args.quick else RA_STEPS
    print(
        f"dp_accounting PR #414 @ {PR_COMMIT} (child processes, cap {args.cap:.0f} s) beside "
        "dpacct, one run; CPU seconds; the machine was shared."
    )
    print(
        "| sigma | T | epochs | delta | dpacct eps | dpacct s | PR #414 eps | PR #414 s "
        "| dpacct / PR |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    if args.settings:
        grid = [
            (float(a), int(b), int(c))
            for a, b, c in (item.split(",") for item in args.settings.split(";"))
        ]
    else:
        grid = [(s, t, e) for s in RA_SIGMAS for t in steps_grid for e in RA_EPOCHS]
    rows = []
    for s, t, e in grid:
        mine = ours(s, t, e, RA_DELTAS)
        theirs, why = peer(args.pr_root, s, t, e, RA_DELTAS, args.cap)
        for i, d in enumerate(RA_DELTAS):
            row = {"sigma": s, "T": t, "epochs": e, "delta": d, **{
                "ours": mine[i]["epsilon"], "ours_s": mine[i]["cpu"]}}
            if theirs:
                row.update(theirs=theirs[i]["epsilon"], their_s=theirs[i]["cpu"])
                cells = (
                    f"{row['theirs']:.4f} | {row['their_s']:.2f} "
                    f"| {row['ours'] / row['theirs']:.4f}"
                )
            else:
                row["peer_error"] = why
                cells = f"not measured ({why}) | - | -"
            rows.append(row)
            print(
                f"| {s} | {t} | {e} | {d:g} | {row['ours']:.4f} | {row['ours_s']:.2f} "
                f"| {cells} |",
                flush=True,
            )
    both = [r for r in rows if "theirs" in r]
    above = [r for r in both if r["ours"] > r["theirs"]]
    print(f"\ndpacct at or below PR #414 on {len(both) - len(above)} of {len(both)} settings.")
    for r in above:
        print(
            f"- above at sigma {r['sigma']}, T {r['T']}, epochs {r['epochs']}, delta "
            f"{r['delta']:g}: {r['ours']:.4f} against {r['theirs']:.4f}"
        )
    if args.json:
        from benchmarks.checkouts import write_json

        write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
