"""Exact discrete-Laplace draws: dpacct's array sampler beside its one-draw path and OpenDP.

``sample_discrete_laplace(scale, n, rng)`` runs Canonne, Kamath & Steinke's (2020)
Algorithms 1-2 on numpy arrays of trials from 128 draws on (session 26); below that, and
for the row ``dpacct, one draw at a time``, it is one Python call chain per draw (main's
algorithm before session 26).  OpenDP's vector ``make_laplace`` on integers (its exact
discrete Laplace, in Rust) is the peer where it is installed (the bench extra).  CPU
seconds of one call (``time.process_time``), the least of ``--repeats``, in this process.

Run from the repository root::

    python -m benchmarks.discrete_sampling            # 20 000 draws at scales 2, 7/3, 1000
    python -m benchmarks.discrete_sampling --n 100000 --repeats 5
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction

import numpy as np

from dpacct.mechanisms.primitives._discrete_sampling import _discrete_laplace_one
from dpacct.mechanisms.primitives.discrete import sample_discrete_laplace

SCALES = {"2": 2.0, "7/3": Fraction(7, 3), "1000": 1000.0}


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        c0 = time.process_time()
        fn()
        best = min(best, time.process_time() - c0)
    return best


def _opendp(scale: float, n: int):
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")
    meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int),
                             scale=float(scale))
    zeros = [0] * n
    return lambda: meas(zeros)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000, help="draws per call")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    print("| scale | draws | dpacct (arrays) s | dpacct, one draw at a time s | OpenDP s "
          "| one-at-a-time / arrays | OpenDP / arrays |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, scale in SCALES.items():
        rng = np.random.default_rng(26)
        frac = Fraction(scale)
        t, s = frac.numerator, frac.denominator
        ours = _best(lambda sc=scale, g=rng: sample_discrete_laplace(sc, args.n, g), args.repeats)
        one = _best(lambda g=rng, t=t, s=s: [_discrete_laplace_one(g, t, s) for _ in range(args.n)],
                    args.repeats)
        peer = _opendp(scale, args.n)
        theirs = _best(peer, args.repeats) if peer is not None else float("nan")
        print(f"| {name} | {args.n} | {ours:.4f} | {one:.3f} | {theirs:.3f} | {one / ours:.0f} "
              f"| {theirs / ours:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
