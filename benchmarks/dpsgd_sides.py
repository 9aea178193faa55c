"""Issue 37: what the lower end of a DP-SGD ``epsilon_bounds`` costs beside its upper end.

``epsilon_bounds`` is the upper end (``epsilon``) plus an optimistic composition, so it
is at most 2x ``epsilon`` only when the lower end costs no more than the upper.  On a
loaded 2-core machine the CPU time of one call moves by a third between runs, so this
script also counts the work, which does not move: for the upper end (the first
``epsilon``) and for the lower end (the rest of ``epsilon_bounds`` on the same mechanism)

* ``fft_points``: the input lengths summed over the FFT convolutions
  (``pld_fft._fft_convolve``) and ``fft_calls`` their number;
* ``spectral``: transforms of the spectral power (``pld_fft._rfft`` calls made by
  :mod:`~dpacct.accountant.pld.spectral_parts`);
* ``hulls`` and ``hull_bins``: optimistic constructions (``grid._lower_from_bins``: the
  chord gaps, the lower hull) and the bins they were given;

with the lower end, the bracket's width, and the CPU seconds (min and median over
``--rounds``, the variants alternated in one process, a fresh mechanism each time).

Variants of the optimistic side (experiments, patched in this process; ``main`` is
the library as it is):

* ``coarse4096``: the optimistic tail on ``COARSE_POINTS[True]`` (4 096) points instead
  of ``COARSE_POINTS[False]`` (8 192);
* ``first2``: the optimistic first bulk step halved (the grid of ``grid_step`` / 2, in
  the composition's own call);
* ``first2+coarse4096``: both.

Run from the repository root::

    python -m benchmarks.dpsgd_sides                       # both rows, every variant
    python -m benchmarks.dpsgd_sides --rows 1e6 --variants main,coarse4096 --rounds 7

Measured (session 23, load 12-14; work counts exact, CPU min in ms):

| row | variant | lower end | width | FFT points lower / upper | hull bins | CPU lower / upper |
| --- | --- | --- | --- | --- | --- | --- |
| T 1e4 | main | 5.192542999 | 1.20e-5 | 434 323 / 241 630 | 64 628 | 54 / 38 |
| T 1e4 | coarse4096 | 5.192542365 | 1.21e-5 | 307 411 | 50 654 | 46 / 31 |
| T 1e4 | first2+coarse4096 | 5.192566025 | 7.55e-6 | 353 932 | 72 276 | 57 / 37 |
| T 1e6 | main | 61.822866206 | 2.47e-4 | 926 702 / 680 936 | 132 017 | 165 / 79 |
| T 1e6 | coarse4096 | 61.822613433 | 2.51e-4 | 717 529 | 117 532 | 112 / 78 |
| T 1e6 | first2+coarse4096 | 61.836110190 | 3.26e-5 | 844 973 | 174 497 | 150 / 79 |

Neither is the library's: ``coarse4096`` lowers every lower end it was tried on (by
1.2e-7 and 4.1e-6 relative here); ``first2+coarse4096`` raised 128 of the 147 lower ends
of :mod:`benchmarks.dpsgd_brackets` (up to 1.7e-3 relative) but lowered 18 (small q and
sigma, T 100, delta 1e-9: up to 1.5e-2 at q 1e-4, sigma 0.5, T 1e6), and cost 35.1
against 29.8 CPU s over the 147.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from contextlib import contextmanager

ROWS = {"1e4": (0.01, 1.1, 10_000), "1e6": (0.004, 0.8, 1_000_000)}
VARIANTS = ("main", "coarse4096", "first2", "first2+coarse4096")
DELTA = 1e-5


@contextmanager
def _variant(name: str):
    """The optimistic side as variant ``name`` (module attributes patched, restored)."""
    import dpacct.accountant.pld.twoscale as ts
    import dpacct.accountant.transformers.compose as cm

    if name not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {name!r}")
    points, grid_step = ts.COARSE_POINTS[False], cm.grid_step
    if "coarse4096" in name:
        ts.COARSE_POINTS[False] = ts.COARSE_POINTS[True]
    if "first2" in name:
        def halved(law, pessimistic, settings, *, use_anchor=True):
            step = grid_step(law, pessimistic, settings, use_anchor=use_anchor)
            return step if pessimistic else step / 2.0

        cm.grid_step = halved
    try:
        yield
    finally:
        ts.COARSE_POINTS[False], cm.grid_step = points, grid_step


@contextmanager
def _counting(work: Counter):
    """Count the work named in the module docstring into ``work``."""
    import dpacct.accountant.pld.grid as gr
    import dpacct.accountant.pld.pld_fft as pf
    import dpacct.accountant.pld.spectral_parts as sp

    convolve, rfft, hull = pf._fft_convolve, sp._rfft, gr._lower_from_bins

    def counted_convolve(a, b, square):
        work["fft_calls"] += 1
        work["fft_points"] += a.size + b.size
        return convolve(a, b, square)

    def counted_rfft(x, n):
        work["spectral"] += 1
        return rfft(x, n)

    def counted_hull(b):
        work["hulls"] += 1
        work["hull_bins"] += b.m.size
        return hull(b)

    pf._fft_convolve, sp._rfft, gr._lower_from_bins = counted_convolve, counted_rfft, counted_hull
    try:
        yield
    finally:
        pf._fft_convolve, sp._rfft, gr._lower_from_bins = convolve, rfft, hull


def measure(row: str, variant: str) -> dict:
    """One fresh mechanism of ``row``: ``epsilon``, then ``epsilon_bounds``, counted."""
    from dpacct.accountant import compose, poisson_subsample
    from dpacct.mechanisms import GaussianMechanism

    q, sigma, steps = ROWS[row]
    mech = compose([poisson_subsample(GaussianMechanism(sigma=sigma), sample_rate=q)],
                   counts=[steps])
    upper_work, lower_work = Counter(), Counter()
    with _variant(variant):
        with _counting(upper_work):
            c0 = time.process_time()
            upper = mech.epsilon(DELTA)
            c1 = time.process_time()
        with _counting(lower_work):
            lower, _ = mech.epsilon_bounds(DELTA)
            c2 = time.process_time()
    return {"lower": float(lower), "upper": float(upper), "cpu_upper": c1 - c0,
            "cpu_lower": c2 - c1, "upper_work": dict(upper_work),
            "lower_work": dict(lower_work)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1e4,1e6", help="comma-separated: 1e4, 1e6")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    variants = args.variants.split(",")
    print("| row | variant | lower end | width | upper work | lower work "
          "| CPU ms upper min/med | CPU ms lower min/med | lower/upper (min) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in args.rows.split(","):
        runs: dict[str, list[dict]] = {v: [] for v in variants}
        for r in range(args.rounds):
            for v in variants if r % 2 == 0 else variants[::-1]:
                runs[v].append(measure(row, v))
        for v in variants:
            got = runs[v]
            first = got[0]
            up = [g["cpu_upper"] * 1e3 for g in got]
            lo = [g["cpu_lower"] * 1e3 for g in got]
            width = (first["upper"] - first["lower"]) / first["upper"]
            work = [" ".join(f"{k} {w[k]}" for k in sorted(w))
                    for w in (first["upper_work"], first["lower_work"])]
            print(f"| {row} | {v} | {first['lower']:.9f} | {width:.2e} | {work[0]} | {work[1]} "
                  f"| {min(up):.1f}/{statistics.median(up):.1f} "
                  f"| {min(lo):.1f}/{statistics.median(lo):.1f} | {min(lo) / min(up):.2f} |")


if __name__ == "__main__":
    main()
