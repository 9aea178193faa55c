"""Issue 37, session 30: a cold DP-SGD ``epsilon`` taken apart, part by part switched off.

**An unsound experiment** (every variant but ``library``): module functions of
:mod:`dpacct.accountant.pld.pld_fft` are monkeypatched in a fresh process before the one
timed call, so the answers of those variants are *not* bounds; they say what a part
costs, not what the library may print.

The rule for calling a target blocked is to switch the named cause off and show the gap
moving with it.  Session 27 measured the floor (:mod:`benchmarks.dpsgd_floor_min`: one
bare tilted FFT power, uncertified, at dpacct's accuracy) at 1.14x Opacus' RDP call at
T 1e4.  This script counts the instructions of one cold ``epsilon(1e-5)`` (constant
sigma, :data:`benchmarks.dpsgd_floor.ROWS`) under callgrind (load-free), for

* ``library``: the call as it is;
* ``no certificate``: ``CERTIFY_ROUNDOFF = False`` (the FFT products' rigorous per-entry
  round-off bounds are neither computed nor added; the spectral power's certificate
  stays);
* ``no certificate + plain products``: in addition every ladder product is one plain FFT
  convolution clipped at 0 (no tilted recomputation of the far tails, whose relative
  precision the ladder's later levels rely on);

beside the floor (:func:`benchmarks.dpsgd_floor_min.callgrind_floor` at the step and
length given) and Opacus' ``RDPAccountant``; each total split by
:func:`benchmarks.dpsgd_floor.categories` (transforms, numpy, libm, interpreter, ...).
:func:`gaps` prints, per category, what each variant spends above the floor.

Run from the repository root::

    python -m benchmarks.ev37_dpsgd_parts                 # T 1e4, all variants
    python -m benchmarks.ev37_dpsgd_parts --rows 1e4,1e6 --floor 1e4:-14:122880

Measured: benchmarks/README.md, "Issue 37's speed targets, session 30".
"""

from __future__ import annotations

import argparse
import sys

from benchmarks.dpsgd_floor import ROWS, callgrind, callgrind_script, parse_rows

__all__ = ["VARIANTS", "callgrind_variant", "gaps", "main", "parse_floor"]

#: variant name -> code run after the imports, before the timed call (unsound but
#: ``library``: flagged in every printed row)
VARIANTS: dict[str, str] = {
    "library": "",
    "no certificate (unsound)": (
        "import dpacct.accountant.pld.pld_fft as _pf\n_pf.CERTIFY_ROUNDOFF = False\n"
    ),
    "no certificate + plain products (unsound)": (
        "import numpy as _np\n"
        "import dpacct.accountant.pld.pld_fft as _pf\n"
        "_pf.CERTIFY_ROUNDOFF = False\n"
        "def _plain(a, b, tail=0.0):\n"
        "    return _np.maximum(_pf._fft_convolve(a, b, a is b), 0.0)\n"
        "_pf._accurate_convolve = _plain\n"
    ),
}

_CHILD = """
import sys, time
from dpacct.accountant import compose, poisson_subsample
from dpacct.mechanisms import GaussianMechanism
q, s, t = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
{patch}
m = compose([poisson_subsample(GaussianMechanism(sigma=s), sample_rate=q)], counts=[t])
time.process_time()
r = m.epsilon(1e-5)
time.process_time()
print(repr(r))
"""

#: session 27's floors (:mod:`benchmarks.dpsgd_floor_min`): row -> (log2 step, length);
#: both within 2e-6 of dpacct's upper end
FLOORS = {"1e4": (-14, 122_880), "1e6": (-14, 786_432)}


def child_script(variant: str) -> str:
    """The child's source for ``variant`` (one of :data:`VARIANTS`)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
    return _CHILD.format(patch=VARIANTS[variant])


def callgrind_variant(python: str, tag: str, variant: str) -> dict:
    """Instructions of one cold ``epsilon(1e-5)`` under ``variant`` in a fresh ``python``
    process (callgrind dumps before each ``process_time``: part 2 is the call alone).
    ``{"answer", "total", "categories"}``."""
    q, sigma, steps = ROWS[tag]
    return callgrind_script(python, child_script(variant), [str(q), str(sigma), str(steps)],
                            prefix="ev37_parts_")


def gaps(rows: dict[str, dict], floor: str) -> dict[str, dict[str, float]]:
    """Per measured side (``rows``: name -> :func:`callgrind_variant`'s dict), its
    instructions above the side named ``floor``, in total and per category (negative:
    below the floor)."""
    if floor not in rows:
        raise ValueError(f"floor must be one of {sorted(rows)}, got {floor!r}")
    base = rows[floor]
    out = {}
    for name, got in rows.items():
        cats = set(got["categories"]) | set(base["categories"])
        out[name] = {"total": got["total"] - base["total"],
                     **{c: got["categories"].get(c, 0) - base["categories"].get(c, 0)
                        for c in sorted(cats)}}
    return out


def parse_floor(text: str) -> dict[str, tuple[int, int]]:
    """``--floor ROW:LOG2STEP:LENGTH[,...]`` -> ``{row: (log2 step, length)}``."""
    out = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        bits = part.split(":")
        if len(bits) != 3:
            raise ValueError(f"floor must be ROW:LOG2STEP:LENGTH, got {part!r}")
        tag = parse_rows(bits[0])[0]
        k, n = int(bits[1]), int(bits[2])
        if k >= 0 or n < 2:
            raise ValueError(f"floor's log2 step must be < 0 and length >= 2, got {part!r}")
        out[tag] = (k, n)
    return out


def main(argv: list[str] | None = None) -> int:
    from benchmarks.dpsgd_floor_min import callgrind_floor

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1e4", help="comma-separated: 1e4, 1e6")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--floor", default=None,
                    help="ROW:LOG2STEP:LENGTH[,...] (default: session 27's floors)")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="comma-separated variant names")
    ap.add_argument("--no-floor", action="store_true", help="skip the floor")
    ap.add_argument("--no-opacus", action="store_true", help="skip Opacus (its import is "
                    "slow under valgrind; benchmarks.dpsgd_floor --callgrind counts it too)")
    ap.add_argument("--target", type=float, default=5.192605208118023,
                    help="the floor's tilt target when the library variant is not run "
                         "(default: T 1e4's epsilon on main e1071f5)")
    args = ap.parse_args(argv)
    floors = dict(FLOORS)
    if args.floor:
        floors.update(parse_floor(args.floor))
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for v in variants:
        child_script(v)  # checks the name
    print("| row | side | answer | instructions (M) | by category (M) |")
    print("| --- | --- | --- | --- | --- |")
    for tag in parse_rows(args.rows):
        got: dict[str, dict] = {}
        for v in variants:
            got[v] = callgrind_variant(args.python, tag, v)
        lib = got.get("library")
        target = float(lib["answer"]) if lib else args.target
        k, n = floors[tag]
        if target and not args.no_floor:
            got[f"floor h 2^{k}, n {n} (unsound)"] = callgrind_floor(
                sys.executable, tag, 2.0**k, n, target)
        if not args.no_opacus:
            got["Opacus RDP"] = callgrind(args.python, tag, "opacus")
        for name, r in got.items():
            cats = ", ".join(f"{c} {v / 1e6:.1f}" for c, v in r["categories"].items())
            print(f"| T {tag} | {name} | {r['answer']} | {r['total'] / 1e6:.1f} | {cats} |",
                  flush=True)
        floor = next((f for f in got if f.startswith("floor")), None)
        if floor:
            print(f"\nT {tag}: above the floor (M instructions; negative: below)")
            for name, d in gaps(got, floor).items():
                parts = ", ".join(f"{c} {v / 1e6:+.1f}" for c, v in d.items() if c != "total")
                print(f"- {name}: {d['total'] / 1e6:+.1f} ({parts})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
