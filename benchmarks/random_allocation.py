"""Random allocation (k = 1) against random-allocation 1.0.5, side by side, 36 settings.

    python -m benchmarks.random_allocation                 # all 36 settings
    python -m benchmarks.random_allocation --no-peer       # dpacct alone
    python -m benchmarks.random_allocation --json out.json

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
"""

from __future__ import annotations

import argparse
import json
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-peer", action="store_true", help="measure dpacct alone")
    parser.add_argument(
        "--cap", type=float, default=PEER_CAP, help="seconds one peer call may take (default 120)"
    )
    parser.add_argument("--json", metavar="PATH", help="write every row to this file")
    args = parser.parse_args(argv)
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
                    row = {"sigma": s, "T": t, "epochs": e, "delta": delta, **_ours(s, t, e, delta)}
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
