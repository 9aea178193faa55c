"""Issue 37: instructions of one dp_accounting event's call, dpacct (old and new) beside
dp_accounting's RDP accountant, under callgrind (load-free).

The rows are :data:`benchmarks.events.ROWS`; each side runs ``python -c`` in a fresh
process under ``valgrind --tool=callgrind``, counting from the child's first
``time.process_time`` call (after the imports and the event's construction) to its second:
dpacct's ``from_dp_event(event, ...).epsilon(delta)`` (under ``REPLACE_ONE`` with
``replace_one_sensitivity=1``, as :mod:`benchmarks.events`), dp_accounting 0.6.0's
``RdpAccountant().compose(event)`` and ``get_epsilon(delta)``.  CPU milliseconds under a
load of 10-30 are noise; instruction counts are repeatable.

    python -m benchmarks.events_callgrind --only laplace
    python -m benchmarks.events_callgrind --only zCDP --old /tmp/events_old --no-peer
    python -m benchmarks.events_callgrind --only laplace --exact --old /tmp/events_old
"""

from __future__ import annotations

import argparse
import sys

from benchmarks.checkouts import checkout_env
from benchmarks.dpsgd_floor import callgrind_script
from benchmarks.events import ROWS

#: the child: builds the event, then one call between two process_time marks
_CHILD = """
import sys, time
from dp_accounting import dp_event as de
from dp_accounting import NeighboringRelation as NR
side, source, rel, delta = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
relation = getattr(NR, rel)
if side == 'ours':
    from dpacct.dp_accounting import from_dp_event
else:
    from dp_accounting.rdp import RdpAccountant
event = eval(source)
time.process_time()
if side == 'ours':
    eps = from_dp_event(event, neighboring_relation=relation,
                        replace_one_sensitivity=1.0).epsilon(delta)
else:
    acct = RdpAccountant(neighboring_relation=relation)
    acct.compose(event)
    eps = acct.get_epsilon(delta)
time.process_time()
print(repr(float(eps)))
"""


def count(row: tuple, side: str, root: str | None) -> dict:
    """Instructions of one side of one row (``root``: the dpacct checkout, or this one)."""
    import os

    _, rel, delta, source = row
    env = checkout_env(root) if root else None
    saved = dict(os.environ)
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        return callgrind_script(sys.executable, _CHILD, [side, source, rel, repr(delta)],
                                prefix="events_cg_")
    finally:
        os.environ.clear()
        os.environ.update(saved)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="rows whose name contains this")
    parser.add_argument("--exact", action="store_true", help="--only names one row exactly")
    parser.add_argument("--old", help="also count dpacct's side from this checkout")
    parser.add_argument("--no-peer", action="store_true", help="skip dp_accounting's RDP")
    args = parser.parse_args(argv)
    rows = [r for r in ROWS if not args.only or args.only in r[0]]
    if args.exact:
        rows = [r for r in rows if r[0] == args.only]
    print("| event | side | epsilon | instructions (M) |")
    print("| --- | --- | --- | --- |")
    for row in rows:
        sides = [("new", "ours", None)]
        if args.old:
            sides.insert(0, ("old", "ours", args.old))
        if not args.no_peer:
            sides.append(("dp_accounting RDP", "rdp", None))
        for label, side, root in sides:
            try:
                res = count(row, side, root)
            except RuntimeError as exc:  # a peer that refuses the event
                print(f"| {row[0]} | {label} | refused: {str(exc)[-80:]!r} | - |", flush=True)
                continue
            print(f"| {row[0]} | {label} | {res['answer']} | {res['total'] / 1e6:.2f} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
