"""dp_accounting's default pessimistic PLD on the decaying schedule ``2 * 0.9999^t`` (issue 37).

The issue's schedule targets name "the 10 000 decaying sigmas" (``2 * 0.9999^t``, q 0.01)
and "the first 1 906 steps of sigma 2 * 0.9999^t"; neither had a dp_accounting answer in
:data:`benchmarks.schedule_oneshot.PEER_CACHE` (the cached decaying rows start at 1.5).
One pass composes the steps one at a time into ``PLDAccountant(
value_discretization_interval=1e-4)`` and reads ``get_epsilon(1e-5)`` at the step counts
asked (``--at``), so the 1 906-step answer is a by-product of the 10 000-step one.  Minutes
of CPU (about 0.2-0.3 s a step); the answers are written to ``--json``.

Run from the repository root::

    nice -n 19 python -m benchmarks.ev37b_peer_decay --at 1906 10000 --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ev37b_peer_decay")
    p.add_argument("--s0", type=float, default=2.0)
    p.add_argument("--q", type=float, default=0.01)
    p.add_argument("--at", type=int, nargs="+", default=[1906, 10_000])
    p.add_argument("--json", help="write the answers to this file")
    args = p.parse_args(argv)
    import dp_accounting as dpa
    from dp_accounting.pld import PLDAccountant

    peer = PLDAccountant(value_discretization_interval=1e-4)
    out = {}
    t0 = time.process_time()
    for t in range(max(args.at)):
        peer.compose(dpa.PoissonSampledDpEvent(args.q, dpa.GaussianDpEvent(args.s0 * 0.9999**t)))
        if t + 1 in args.at:
            eps = peer.get_epsilon(1e-5)
            out[f"decaying {args.s0}, {t + 1} steps"] = {
                "epsilon": eps, "cpu": time.process_time() - t0,
                "version": getattr(dpa, "__version__", "?"),
            }
            print(t + 1, eps, time.process_time() - t0, flush=True, file=sys.stderr)
            if args.json:
                with open(args.json, "w") as fh:
                    json.dump(out, fh, indent=1)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
