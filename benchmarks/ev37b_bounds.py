"""Issue 37's "``epsilon_bounds`` at most 2x ``epsilon``": what in the lower end keeps it above.

Session 29 switched every lower-end FFT off (unsound) and still read 2.15x at T 1e4, and
named the optimistic *construction* as the cause.  This script counts the instructions
of one cold call (callgrind, as :func:`benchmarks.dpsgd_floor.callgrind` does: a fresh
process, only the call between two ``time.process_time()`` calls, load-free) of
``epsilon`` and of ``epsilon_bounds`` on the DP-SGD rows of
:data:`benchmarks.dpsgd_floor.ROWS`, with the optimistic side patched in the child
(the pessimistic side, which ``epsilon`` is, untouched):

* ``main``: the library as it is;
* ``hulls-rounddown`` (experiment, sound but looser): the optimistic construction
  (``grid._lower_from_bins``, the chord gaps and the lower hull: Doroshenko et al. 2022,
  Section 4) replaced by every bin rounded down to its lower node
  (``grid._round_down_from_bins``, the library's own fallback): what the hulls cost;
* ``tails-off`` (**UNSOUND experiment**, the lower end meaningless): the optimistic
  tail products (``twoscale._optimistic_coarse``: the coarse tail's convolutions with
  the bulk and their optimistic re-binning) replaced by the first factor's tail as it
  is;
* ``hulls-rounddown+tails-off`` (**UNSOUND**): both;
* ``coarse-as-upper`` (sound, looser; session 31): the optimistic tail grid with as few
  points as the pessimistic one's (``twoscale.COARSE_POINTS``), so its tail products are
  as long as the upper end's;
* ``hulls-rounddown+coarse-as-upper`` (sound, looser): both;
* ``exact-tilts`` (sound; session 35): the optimistic bulk products
  (:meth:`GridPLD.convolve <dpacct.accountant.pld.grid.GridPLD.convolve>`) tilt with
  exact exponents as the pessimistic ones do (n / 64 exps instead of n): what the
  inexact tilts cost.  Not the library's arithmetic: the lower ends move by round-off
  amplified downstream (about 1e-8 relative, either sign; benchmarks/README.md,
  session 35).

Each line prints the answer (upper, lower), the instructions (M) and the ratio to
``epsilon``'s; the lower end's instructions are the call's minus ``epsilon``'s.

Run from the repository root (minutes: valgrind)::

    python -m benchmarks.ev37b_bounds --rows 1e4 --variants main hulls-rounddown tails-off

Instruction counts do not move with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.dpsgd_floor import ROWS, callgrind_script

__all__ = ["PATCHES", "VARIANTS", "callgrind", "main", "ratio_table"]

#: the child's patch of each variant (applied to the optimistic side only)
PATCHES = {
    "main": "",
    "hulls-rounddown": """
from dpacct.accountant.pld import grid as _grid
_grid._lower_from_bins = _grid._round_down_from_bins
""",
    "tails-off": """
from dpacct.accountant.pld import twoscale as _ts
def _tail_as_is(a, b, tail):
    return a.coarse if a.coarse is not None else b.coarse
_ts._optimistic_coarse = _tail_as_is
""",
}
PATCHES["hulls-rounddown+tails-off"] = PATCHES["hulls-rounddown"] + PATCHES["tails-off"]
# session 31: the optimistic tail grid as coarse as the pessimistic one (sound, looser)
PATCHES["coarse-as-upper"] = """
from dpacct.accountant.pld import twoscale as _ts2
_ts2.COARSE_POINTS[False] = _ts2.COARSE_POINTS[True]
"""
PATCHES["hulls-rounddown+coarse-as-upper"] = PATCHES["hulls-rounddown"] + PATCHES["coarse-as-upper"]
# session 35: the optimistic bulk products with the pessimistic side's exact-exponent tilts
PATCHES["exact-tilts"] = """
from dpacct.accountant.pld import grid as _grid3
_cc3 = _grid3._certified_convolve
def _exact_lower(a, b, tail, upper, exact=False):
    return _cc3(a, b, tail, upper, exact or not upper)
_grid3._certified_convolve = _exact_lower
"""
VARIANTS = tuple(PATCHES)
#: whether a variant's lower end is still a certified lower bound
SOUND = {"main": True, "hulls-rounddown": True, "tails-off": False,
         "hulls-rounddown+tails-off": False, "coarse-as-upper": True,
         "hulls-rounddown+coarse-as-upper": True, "exact-tilts": True}

_CHILD = """
import sys, time
from dpacct.accountant import compose, poisson_subsample
from dpacct.mechanisms import GaussianMechanism
q, s, t, bounds = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
exec(sys.argv[5])
m = compose([poisson_subsample(GaussianMechanism(sigma=s), sample_rate=q)], counts=[t])
time.process_time()
r = m.epsilon_bounds(1e-5) if bounds else m.epsilon(1e-5)
time.process_time()
print(repr(r))
"""


def callgrind(python: str, row: str, side: str, variant: str = "main") -> dict:
    """Instructions of one cold ``epsilon`` (``side`` ``"epsilon"``) or
    ``epsilon_bounds`` (``"bounds"``) call under ``variant``'s patch:
    ``{"answer", "total", "categories"}``."""
    q, sigma, steps = ROWS[row]
    args = [str(q), str(sigma), str(steps), "1" if side == "bounds" else "0", PATCHES[variant]]
    return callgrind_script(python, _CHILD, args, prefix="ev37b_cg_")


def ratio_table(records: list[dict]) -> str:
    """Markdown lines ``row | variant | answer | M instructions | lower end M | x
    epsilon``, ``records`` holding ``row``, ``side``, ``variant``, ``answer``,
    ``total``; each row's ``epsilon`` record is the reference.

    Examples
    --------
    >>> recs = [{"row": "1e4", "side": "epsilon", "variant": "main", "answer": "5.19",
    ...          "total": 100e6},
    ...         {"row": "1e4", "side": "bounds", "variant": "main", "answer": "(5.1, 5.19)",
    ...          "total": 250e6}]
    >>> print(ratio_table(recs).splitlines()[-1])
    | T 1e4 | bounds, main | (5.1, 5.19) | 250.0 | 150.0 | 2.50 |
    """
    head = "| row | call, variant | answer | instructions (M) | lower end (M) | x epsilon |"
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    ref = {r["row"]: r["total"] for r in records if r["side"] == "epsilon"}
    for r in records:
        base = ref.get(r["row"])
        flag = "" if SOUND.get(r["variant"], True) else " (UNSOUND)"
        lower = "" if r["side"] == "epsilon" or base is None else f"{(r['total'] - base) / 1e6:.1f}"
        ratio = "" if base is None else f"{r['total'] / base:.2f}"
        lines.append(
            f"| T {r['row']} | {r['side']}, {r['variant']}{flag} | {r['answer']} "
            f"| {r['total'] / 1e6:.1f} | {lower} | {ratio} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ev37b_bounds")
    p.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--json", help="write the records here")
    args = p.parse_args(argv)
    records = []
    for row in args.rows:
        todo = [("epsilon", "main")] + [("bounds", v) for v in args.variants]
        for side, variant in todo:
            rec = {"row": row, "side": side, "variant": variant,
                   **callgrind(args.python, row, side, variant)}
            records.append(rec)
            print(json.dumps(rec), file=sys.stderr, flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    print(ratio_table(records))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
