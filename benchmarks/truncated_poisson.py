"""Truncated Poisson (a Poisson batch cut at b records) against dp_accounting, one run.

    python -m benchmarks.truncated_poisson              # the rows of benchmarks/README.md
    python -m benchmarks.truncated_poisson --no-peer    # dpacct alone
    python -m benchmarks.truncated_poisson --json out.json

Rows: one DP-SGD step ``TruncatedPoissonGaussianMechanism(1.0, 0.01, 1000, b)`` at
delta 1e-6 for b in {2, 5, 10, 50} (the sizes of issue 35, where main took 17-236 s),
and dp_accounting's own example ``TruncatedSubsampledGaussianDpEvent(60000, 0.004, 300,
1.0)`` composed 1000 times at delta 1e-5.  Columns: dpacct's ``epsilon`` and CPU
seconds (``time.process_time``, one call, fresh mechanism, imports excluded), its
certified bracket and what the bracket is of (``bounds``: here always the dominating
pair), then dp_accounting 0.6.0's PLD accountant on the same event
(``value_discretization_interval`` 1e-4), its CPU seconds, and ours / theirs.

dp_accounting bounds the cut components by one replace-one pair at their average rate,
dpacct by the revealed mixture of every count's own pair (the proof is in
``accountant/transformers/truncated_poisson.py``); neither answer bounds the other in
general, so the ratio shows how the two constructions compare, not an error.
"""

from __future__ import annotations

import argparse
import json
import time

ROWS = [
    # (noise multiplier, sample rate, dataset size, max batch size, count, delta)
    (1.0, 0.01, 1000, 2, 1, 1e-6),
    (1.0, 0.01, 1000, 5, 1, 1e-6),
    (1.0, 0.01, 1000, 10, 1, 1e-6),
    (1.0, 0.01, 1000, 50, 1, 1e-6),
    (1.0, 0.004, 60000, 300, 1000, 1e-5),
]


def _ours(sigma, q, n, b, count, delta) -> dict:
    from dpacct.accountant import TruncatedPoissonGaussianMechanism, compose

    step = TruncatedPoissonGaussianMechanism(sigma, q, n, b)
    mech = step if count == 1 else compose([step], counts=[count])
    t0 = time.process_time()
    eps = float(mech.epsilon(delta))
    sec = time.process_time() - t0
    bracket = mech.epsilon_bounds(delta)
    return {
        "ours": eps,
        "ours_cpu_s": sec,
        "lower": float(bracket[0]),
        "upper": float(bracket[1]),
        "bounds": bracket.bounds,
    }


def _theirs(sigma, q, n, b, count, delta) -> dict:
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant

    event = dp_event.TruncatedSubsampledGaussianDpEvent(n, q, b, sigma)
    t0 = time.process_time()
    acct = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    acct.compose(event, count)
    eps = float(acct.get_epsilon(delta))
    return {"theirs": eps, "their_cpu_s": time.process_time() - t0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-peer", action="store_true", help="measure dpacct alone")
    parser.add_argument("--json", metavar="PATH", help="write every row to this file")
    args = parser.parse_args(argv)
    import dpacct.accountant  # noqa: F401  (imports outside the timings)

    out = []
    print(
        "| sigma | q | n | b | steps | delta | dpacct | dpacct CPU s | bracket (bounds) "
        "| dp_accounting PLD 1e-4 | their CPU s | ours / theirs |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in ROWS:
        rec = dict(zip(("sigma", "q", "n", "b", "steps", "delta"), row, strict=True))
        rec.update(_ours(*row))
        if not args.no_peer:
            rec.update(_theirs(*row))
        theirs = rec.get("theirs")
        ratio = "-" if theirs is None else f"{rec['ours'] / theirs:.5f}"
        peer = "-" if theirs is None else f"{theirs:.6f} | {rec['their_cpu_s']:.2f}"
        if theirs is None:
            peer = "- | -"
        print(
            f"| {rec['sigma']} | {rec['q']} | {rec['n']} | {rec['b']} | {rec['steps']} "
            f"| {rec['delta']:g} | {rec['ours']:.6f} | {rec['ours_cpu_s']:.2f} "
            f"| [{rec['lower']:.6f}, {rec['upper']:.6f}] ({rec['bounds']}) | {peer} | {ratio} |",
            flush=True,
        )
        out.append(rec)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
