"""Issue 37: where a DP-SGD ``epsilon``'s transform points go, and what each plan change buys.

A cold ``epsilon`` of constant-sigma DP-SGD is a squaring ladder of certified FFT
products and one spectral power (:func:`~dpacct.accountant.pld.twoscale.self_compose_split`).
This script

1. breaks every real transform of one call down (``--breakdown``) by direction (the
   remove PLD; the add direction's screening composition, :meth:`PLDPair.epsilon
   <dpacct.accountant.pld.pld_pair.PLDPair.epsilon>`; the optimistic side with
   ``--bounds``), squaring level, part (the fine bulk's product, the coarse tail's, an
   optimistic tail product) and kind: ``plain`` (a plain FFT product), ``skewed`` (the
   one tilted pass of two one-sided inputs,
   :func:`~dpacct.accountant.pld.pld_fft._convolve_choosing`),
   ``tails`` (a tilted recomputation of a product's far ends,
   :func:`~dpacct.accountant.pld.pld_fft._plain_first_convolve`) and ``spectral``;
2. runs plan variants (``--variants``), each in a fresh process with module constants
   or the transform-length rule patched, and prints the answer (``epsilon``, the upper
   end), its move against the library's and the work (points, transforms, distinct
   lengths).  A variant is a measurement, not a library setting.

Run from the repository root::

    python -m benchmarks.dpsgd_plan --breakdown --rows 1e6
    python -m benchmarks.dpsgd_plan --variants
    python -m benchmarks.dpsgd_plan --brackets "tilt rates x (1 - 2^-40) (a no-op)"

Measured (session 25, on main ac8030b's library, ``--variants``, load 12; points are
summed transform lengths, "rel" is (variant - library) / library, negative = tighter):

T 1e4:

| variant | epsilon | rel | points | transforms (lengths) |
| --- | --- | --- | --- | --- |
| library | 5.192605208193 | 0 | 689 130 | 91 (25) |
| spectral from m = 6, window up to 2^18 | 5.192602662106 | -4.9e-7 | 681 318 | 73 (18) |
| ... and 25 tail budgets of certificate | 5.192602662106 | -4.9e-7 | 681 318 | 73 (18) |
| screen (add direction) at 8 points per spread | = | 0 | = | = |
| screen at 4 points per spread | = | 0 | = | = |
| tails kept to 1e-8 relative (library 1e-10) | 5.192605208475 | +5.4e-11 | 652 942 | 82 (23) |
| tails kept to 1e-12 relative | 5.192605205094 | -6.0e-10 | 726 047 | 100 (24) |
| tails to 3e-7 2^m / span relative (by level) | 5.192605208176 | -3.4e-12 | 673 520 | 91 (24) |
| lengths 3-smooth (2^a 3^b) | 5.192605207431 | -1.5e-10 | 690 084 | 88 (18) |
| lengths 2^a 3^b, b <= 2 | 5.192605206868 | -2.6e-10 | 741 376 | 88 (13) |
| lengths powers of two | 5.192605208223 | +5.8e-12 | 881 152 | 88 (8) |

T 1e6:

| variant | epsilon | rel | points | transforms (lengths) |
| --- | --- | --- | --- | --- |
| library | 61.838125710082 | 0 | 1 852 171 | 232 (56) |
| spectral from m = 6, window up to 2^18 | 61.838125710082 | 0 | 2 220 319 | 224 (55) |
| ... and 25 tail budgets of certificate | 61.838082812634 | -6.9e-7 | 2 566 038 | 194 (48) |
| screen (add direction) at 8 points per spread | = | 0 | 1 725 673 | 236 (54) |
| screen at 4 points per spread | = | 0 | 1 629 355 | 230 (54) |
| tails kept to 1e-8 relative (library 1e-10) | 61.838158132104 | +5.2e-7 | 1 730 644 | 215 (58) |
| tails kept to 1e-12 relative | 61.838124431242 | -2.1e-8 | 1 981 234 | 253 (58) |
| tails to 3e-7 2^m / span relative (by level) | 61.838124605547 | -1.8e-8 | 1 857 242 | 235 (58) |
| lengths 3-smooth (2^a 3^b) | 61.838125515989 | -3.1e-9 | 1 904 001 | 230 (39) |
| lengths 2^a 3^b, b <= 2 | 61.838124772510 | -1.5e-8 | 2 104 064 | 232 (20) |
| lengths powers of two | 61.838124711670 | -1.6e-8 | 2 644 992 | 230 (9) |

What the tables say (each checked further where it looked useful):

* No variant does less transform work *and* answers tighter on both rows.  The levers
  trade points for tightness: earlier spectral powers are tighter but need longer windows
  (and the spectral power's own work, its Chernoff tables and ``|A|^(h-1)``, grows with
  them: under callgrind the T 1e4 ``epsilon`` went 195.9 -> 212.4 M instructions; at
  T 1e6 the wider window lets levels 11 and 12 transform and then decline on their
  certificate, 0.36 M points for nothing);
  keeping fewer tail entries (1e-8) saves 5-7 % of the points and loosens T 1e6 by
  5.2e-7, because a level's relative error compounds over the ``T / 2^m`` products that
  follow it.
* The screen's answers are bit-equal, but over the 147 questions of
  :mod:`benchmarks.dpsgd_brackets` the coarser screen fails more often (3 -> 14 -> 28 of
  101 screens) and the total work grows (197.5 -> 204.6 -> 218.8 M points).
* 3-smooth lengths: fewer plans (pocketfft built 48 plans for the 25 lengths of T 1e4:
  its plan cache is smaller than the ladder's working set) and T 1e4 at 192.1 against
  195.9 M instructions, but over the 147 brackets 50 upper ends rose (up to 1.4e-7
  relative; 97 fell): the round-off constants and the paths they decide (tails kept,
  spectral powers accepted) move both ways, so it is not an equal-or-tighter change.
  Under callgrind T 1e6 even rose, 508.0 -> 526.4 M (pocketfft 174.4 -> 187.3 M).
* Powers of two: pocketfft's radix-4 passes carry the smallest round-off constants, but
  the padding costs 28-43 % more points.
* Built (not a constant, so not in the tables; the tables above are main's library):
  the pessimistic ladder's tilt weights as exps of *exact* exponents (the rate rounded to
  21 bits) made as products ``e^{x0 + bB theta} e^{j theta}`` of two exp tables (``B +
  n/B`` exps instead of ``n``; :func:`~dpacct.accountant.pld.pld_fft._tilted_convolve`).
  The certificate's weight term is ~30 u instead of up to ~1e4 u; both target rows
  tighter (5.192605208193 -> ...208042, 61.838125710082 -> ...666081); T 1e4 185.6
  against 195.9 M instructions (libm 26.6 -> 17.2 M), T 1e6 466.6 against 508.0 M
  (libm 76.5 -> 40.7 M).  Over the 147 brackets 133 upper ends fell and 14 rose, by at
  most 1.25e-9 relative; the lower ends are bit-equal (the optimistic side keeps its
  arithmetic: applied there too, 21 lower ends fell, by up to 3.4e-7).
* Round-off-size moves are unavoidable for any change of the kernel's last bits: with
  blocks of 16, 32, 64 and 128 entries (the same certificate) the upper end of q 1e-3,
  sigma 0.6, T 1e4, delta 1e-9 is 5.172211343216, ...347212, ...351509, ...351521 (main:
  ...345047), and a no-op, ``--brackets "tilt rates x (1 - 2^-40) (a no-op)"`` on main's
  kernel (every tilt rate 1e-12 smaller; any rate is a valid tilt), raised 88 of 147
  upper ends (by up to 6.7e-10 relative) and lowered 74 lower ends (up to 3.5e-8): the
  bounds decide paths (which tail entries are recomputed, which spectral power is
  accepted).

The breakdown (``--breakdown``) at T 1e6: the remove direction is 1.42 M of the 1.85 M
points (13 squaring levels and one product, then the spectral power at m = 13: 182 k),
the add direction's screen 0.30 M (8 levels, spectral at m = 8: 86 k).  By part and
kind over both: the bulk's skewed passes 0.55 M (levels 1-5 of the remove ladder at
steps 3.05e-5 and 6.1e-5, 18-20 k points each, and the screen's first levels), plain
products 0.49 M, tilted tail recomputations 0.47 M, the coarse tail's products 0.59 M of
the total.  At T 1e4 (one direction): 689 k, spectral 111 k at m = 8, tails 198 k, the
coarse tail's products 268 k (39 %).
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import subprocess
import sys
import traceback
from collections import Counter

ROWS = {"1e4": (0.01, 1.1, 10_000), "1e6": (0.004, 0.8, 1_000_000)}
DELTA = 1e-5

#: plan variants: name -> patches (``module.CONSTANT`` -> value; ``lengths`` -> the
#: largest power of 3 allowed in a 2^a 3^b transform length, ``screen`` -> the add
#: direction's screening resolution, ``level_tails`` -> c of the per-level relative
#: precision ``c 2^m / span`` of the kept plain entries)
VARIANTS: dict[str, dict] = {
    "library": {},
    "spectral from m = 6, window up to 2^18": {
        "twoscale.SPECTRAL_FROM": 6, "twoscale.SPECTRAL_MAX_N": 1 << 18},
    "... and 25 tail budgets of certificate": {
        "twoscale.SPECTRAL_FROM": 6, "twoscale.SPECTRAL_MAX_N": 1 << 18,
        "twoscale.SPECTRAL_ERR_TAILS": 25.0},
    "screen (add direction) at 8 points per spread": {"screen": 8.0},
    "screen at 4 points per spread": {"screen": 4.0},
    "tails kept to 1e-8 relative (library 1e-10)": {"pld_fft.PLAIN_RELATIVE_ERROR": 1e-8},
    "tails kept to 1e-12 relative": {"pld_fft.PLAIN_RELATIVE_ERROR": 1e-12},
    "tails to 3e-7 2^m / span relative (by level)": {"level_tails": 3e-7},
    "lengths 3-smooth (2^a 3^b)": {"lengths": 40},
    "lengths 2^a 3^b, b <= 2": {"lengths": 2},
    "lengths powers of two": {"lengths": 0},
    "tilt rates x (1 - 2^-40) (a no-op)": {"tilt_scale": 1 - 2.0**-40},
}

__all__ = ["ROWS", "VARIANTS", "apply_variant", "brackets", "breakdown", "main",
           "measure_variant"]


def _lengths_rule(max_b: int):
    """The least ``2^a 3^b >= n`` with ``b <= max_b``."""
    table = sorted({(2**a) * (3**b) for a in range(36) for b in range(min(max_b, 22) + 1)
                    if (2**a) * (3**b) <= 2**34})

    def rule(n: int) -> int:
        return table[bisect.bisect_left(table, max(int(n), 1))]

    return rule


def apply_variant(patches: dict) -> None:
    """Patch this process's dpacct with a variant (:data:`VARIANTS`); for a throw-away
    process only (nothing is restored)."""
    import dpacct.accountant.pld.pld_fft as pf
    import dpacct.accountant.pld.pld_settings as ps
    import dpacct.accountant.pld.twoscale as ts

    modules = {"pld_fft": pf, "twoscale": ts}
    for key, value in patches.items():
        if "." in key:
            mod, name = key.split(".")
            if not hasattr(modules[mod], name):
                raise ValueError(f"unknown constant {key!r}")
            setattr(modules[mod], name, value)
        elif key == "lengths":
            pf._next_fast_len = ts._next_fast_len = _lengths_rule(int(value))
        elif key == "screen":
            screening = ps.PLDSettings.screening

            def coarser(self, err_tails, _res=float(value), _orig=screening):
                out = _orig(self, err_tails)
                out.resolution = min(out.resolution, _res)
                return out

            ps.PLDSettings.screening = coarser
        elif key == "tilt_scale":
            rate = pf._tilt_rate
            pf._tilt_rate = lambda p, side, _f=float(value), _r=rate: _r(p, side) * _f
        elif key == "level_tails":
            _level_tails(pf, ts, float(value))
        else:
            raise ValueError(f"unknown patch {key!r}")


def _level_tails(pf, ts, c: float) -> None:
    """The kept plain entries' relative precision ``c 2^m / span`` at squaring level
    ``m`` (``2^m / span`` read off the level's tail share, ``tail 2^m / (span levels)``)."""
    scope: dict = {}
    compose, convolve = ts.self_compose_split, ts._convolve

    def self_compose(base, count, *, tail, **kw):
        scope.update(tail=tail, levels=count.bit_length() + 1)
        return compose(base, count, tail=tail, **kw)

    def product(a, b, tail):
        frac = tail * scope["levels"] / scope["tail"] if scope else 1.0
        saved = pf.PLAIN_RELATIVE_ERROR
        pf.PLAIN_RELATIVE_ERROR = min(1e-4, max(1e-16, c * frac))
        try:
            return convolve(a, b, tail)
        finally:
            pf.PLAIN_RELATIVE_ERROR = saved

    ts.self_compose_split, ts._convolve = self_compose, product


def _counting(rows: list, state: dict):
    """Every ``numpy.fft.rfft`` / ``irfft`` appended to ``rows`` as ``(points, length,
    kind, direction, level, part)`` (``state`` read at the call; the recorder of
    :mod:`benchmarks.dpsgd_floor`); restored afterwards."""
    from benchmarks.dpsgd_floor import _recording

    def add(_: str, n: int, shape: list) -> None:
        names = [f.name for f in traceback.extract_stack()[:-2]]  # (add, rec_*) dropped
        part = "optimistic tail" if "_optimistic_tail_product" in names else state["part"]
        kind = _kind(names)
        rows.append((n * (shape[0] if len(shape) > 1 else 1), n, kind, state["direction"],
                     "-" if kind == "spectral" else state["level"],
                     "-" if kind == "spectral" else part))

    return _recording(rows, add)


def _kind(names: list[str]) -> str:
    """``spectral``, ``tails``, ``skewed`` or ``plain`` from the calling frames."""
    if "_spectral_power" in names or "_spectral_error" in names:
        return "spectral"
    if "_tilted_convolve" in names:
        inner = max(i for i, n in enumerate(names) if n == "_tilted_convolve")
        return "tails" if "_plain_first_convolve" in names[:inner] else "skewed"
    return "plain"


def breakdown(q: float, sigma: float, steps: int, bounds: bool = False) -> dict:
    """Transform points of one fresh ``epsilon`` (``bounds``: ``epsilon_bounds``) by
    direction, squaring level (1 = the first squaring's product), part (``bulk``,
    ``coarse``, ``optimistic tail``) and kind; ``{"answer", "total", "transforms",
    "lengths", "rows"}``, ``rows`` a list of ``(points, length, kind, direction, level,
    part)``, one per transform, in call order."""
    import dpacct.accountant.pld.grid as grid
    import dpacct.accountant.pld.twoscale as ts
    import dpacct.accountant.transformers.compose as tc
    from dpacct.accountant import compose, poisson_subsample
    from dpacct.mechanisms import GaussianMechanism

    state: dict = {"direction": "-", "level": 0, "part": "-", "fine": ()}
    composed = tc._self_composed
    convolve, grid_convolve = ts._convolve, grid.GridPLD.convolve

    def tagged(mech, count, pessimistic, settings, total_count, which, *args):
        screen = " screen" if settings.err_tails is not None else ""
        state["level"] = 0
        state["direction"] = (f"{'upper' if pessimistic else 'lower'} "
                              f"{'add' if which else 'remove'}{screen}")
        return composed(mech, count, pessimistic, settings, total_count, which, *args)

    def product(a, b, tail):
        state["level"] += 1
        state["fine"] = (a.fine, b.fine)
        return convolve(a, b, tail)

    def on_grid(self, other, *args, **kwargs):
        state["part"] = "bulk" if any(self is f for f in state["fine"]) else "coarse"
        return grid_convolve(self, other, *args, **kwargs)

    calls: list = []
    mech = compose([poisson_subsample(GaussianMechanism(sigma=sigma), sample_rate=q)],
                   counts=[steps])
    tc._self_composed, ts._convolve = tagged, product
    grid.GridPLD.convolve = on_grid
    try:
        with _counting(calls, state):
            answer = mech.epsilon_bounds(DELTA) if bounds else mech.epsilon(DELTA)
    finally:
        tc._self_composed, ts._convolve = composed, convolve
        grid.GridPLD.convolve = grid_convolve
    return {"answer": answer, "total": sum(c[0] for c in calls), "transforms": len(calls),
            "lengths": len({c[1] for c in calls}), "rows": calls}


_VARIANT_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[3])
from benchmarks.dpsgd_plan import apply_variant, breakdown
apply_variant(json.loads(sys.argv[1]))
q, s, t = json.loads(sys.argv[2])
got = breakdown(q, s, t)
print(json.dumps({k: got[k] for k in ("answer", "total", "transforms", "lengths")}))
"""


def measure_variant(patches: dict, tag: str, python: str = sys.executable) -> dict:
    """``{"answer", "total", "transforms", "lengths"}`` of the upper ``epsilon`` of row
    ``tag`` with ``patches`` applied, in a fresh ``python`` process."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run(
        [python, "-c", _VARIANT_CHILD, json.dumps(patches), json.dumps(ROWS[tag]), root],
        capture_output=True, text=True, check=False,
    )
    if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


_BRACKETS_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[2])
from benchmarks.dpsgd_plan import apply_variant
from benchmarks import dpsgd_brackets
apply_variant(json.loads(sys.argv[1]))
exec(dpsgd_brackets._CHILD.replace("json.loads(sys.argv[1])", "dpsgd_brackets.QUESTIONS"))
"""


def brackets(patches: dict, python: str = sys.executable) -> dict:
    """Every question of :mod:`benchmarks.dpsgd_brackets` (``epsilon_bounds``) with and
    without ``patches``, each side in one fresh process: its :func:`compare
    <benchmarks.dpsgd_brackets.compare>` report (the unpatched library as "old")."""
    from benchmarks.dpsgd_brackets import compare

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sides = []
    for p in ({}, patches):
        proc = subprocess.run([python, "-c", _BRACKETS_CHILD, json.dumps(p), root],
                              capture_output=True, text=True, check=False)
        if proc.returncode:
            raise RuntimeError(proc.stderr[-2000:])
        sides.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return compare(*sides)


def _print_breakdown(tag: str, bounds: bool) -> None:
    got = breakdown(*ROWS[tag], bounds=bounds)
    print(f"T {tag} {'epsilon_bounds' if bounds else 'epsilon'}: {got['answer']!r}, "
          f"{got['total']} points, {got['transforms']} transforms, {got['lengths']} lengths")
    by_level: Counter = Counter()
    by_kind: Counter = Counter()
    for points, _, kind, direction, level, part in got["rows"]:
        by_level[(direction, level)] += points
        by_kind[(direction, part, kind)] += points
    print("| direction | part | kind | points |")
    print("| --- | --- | --- | --- |")
    for (direction, part, kind), points in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        print(f"| {direction} | {part} | {kind} | {points} |")
    print("| direction | level | points |")
    print("| --- | --- | --- |")
    for (direction, level), points in by_level.items():
        print(f"| {direction} | {level} | {points} |")


def _print_variants(rows: list[str], names: list[str]) -> None:
    for tag in rows:
        base = measure_variant({}, tag)
        print(f"T {tag}:\n")
        print("| variant | epsilon | rel | points | transforms (lengths) |")
        print("| --- | --- | --- | --- | --- |")
        for name in names:
            got = base if name == "library" else measure_variant(VARIANTS[name], tag)
            rel = (got["answer"] - base["answer"]) / base["answer"]
            print(f"| {name} | {got['answer']:.12f} | {rel:+.1e} | {got['total']} | "
                  f"{got['transforms']} ({got['lengths']}) |", flush=True)
        print()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1e4,1e6", help="comma-separated: 1e4, 1e6")
    ap.add_argument("--breakdown", action="store_true", help="the transform breakdown")
    ap.add_argument("--bounds", action="store_true", help="breakdown of epsilon_bounds")
    ap.add_argument("--variants", action="store_true", help="the plan variants' table")
    ap.add_argument("--only", help="comma-separated variant names (with --variants)")
    ap.add_argument("--brackets", metavar="VARIANT",
                    help="the 147 brackets with this variant against the library's")
    args = ap.parse_args(argv)
    from benchmarks.dpsgd_floor import parse_rows  # the same two rows

    rows = parse_rows(args.rows)
    names = list(VARIANTS) if not args.only else ["library", *args.only.split(",")]
    for name in names:
        if name not in VARIANTS:
            raise ValueError(f"variant must be among {sorted(VARIANTS)}, got {name!r}")
    if args.brackets:
        if args.brackets not in VARIANTS:
            raise ValueError(f"variant must be among {sorted(VARIANTS)}, got {args.brackets!r}")
        report = brackets(VARIANTS[args.brackets])
        for end in ("upper", "lower"):
            print(f"{end}: {report[end]}")
        return 0
    if not (args.breakdown or args.variants):
        args.breakdown = True
    if args.breakdown:
        for tag in rows:
            _print_breakdown(tag, args.bounds)
    if args.variants:
        _print_variants(rows, names)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
