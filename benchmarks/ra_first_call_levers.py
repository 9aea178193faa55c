"""Random allocation's first call at sigma 0.8 (issue 37): where the law's build goes, and levers.

    python -m benchmarks.ra_first_call_levers --hash            # the law's digest per (sigma, T)
    cd /tmp && OTHER_PYTHON /path/to/benchmarks/ra_first_call_levers.py --hash  # its dpacct
    python -m benchmarks.ra_first_call_levers --phases          # CPU per function of one build
    python -m benchmarks.ra_first_call_levers --cover 1.0 0.8   # window cut at T e^c (dropped)
    python -m benchmarks.ra_first_call_levers --coarse-tail 1.0,0.6 0.1,0.3   # (dropped)
    python -m benchmarks.ra_first_call_levers --resolution 0.8 0.5            # (dropped)

``--hash`` prints a SHA-1 of the one-epoch sum law (:func:`~dpacct.accountant.transformers.
random_allocation_pld.allocation_sum_law`: its entries, step, absorbed and high parts)
for each ``(sigma, T)``: run it under two interpreters (this checkout and an older main)
to show a speed change leaves the law the same bit for bit.  ``--phases`` times each
function of one cold build (``time.process_time``, inclusive, nested calls counted in
both).  The last three rebuild the law with one lever changed (monkeypatched here, never
in the library) and print its answers: ``epsilon`` at delta 1e-6 and 1e-10 for one epoch
and for ten composed (the engine's composition of the same pair), beside the unchanged
law's, so that "equal or tighter" can be read off; with the build's CPU seconds.

* ``--cover c``: every window top and the one-term cut at ``T e^c`` (the high event of
  the module, 4., takes what lies above: sound whatever ``c``);
* ``--coarse-tail x,H``: after the base law and every pairwise sum, the mass above
  ``x T`` moved onto a lattice of step ``H`` (a mean-preserving split, so sound): the
  spread a two-grid law (fine body, coarse tail) would add, not its speed;
* ``--resolution r``: the law's ``resolution`` (its steps ``1 / r`` times the default).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import inspect
import math
import time

import numpy as np

SETTINGS = ((0.8, 1000), (0.8, 10_000), (1.0, 1000), (1.0, 10_000), (2.0, 1000),
            (2.0, 10_000), (0.5, 1000), (0.7, 777), (1.3, 3), (0.9, 100), (3.0, 12_345))


def law_digest(sigma: float, steps: int) -> str:
    """SHA-1 (16 hex digits) of the law's entries and its scalars."""
    from dpacct.accountant.transformers.random_allocation_pld import allocation_sum_law

    law = allocation_sum_law(sigma, steps, progress=False)
    scalars = np.array([law.step, law.q_absorbed, law.s_absorbed, law.q_high, law.s_high,
                        law.high_at])
    return hashlib.sha1(law.q.tobytes() + scalars.tobytes()).hexdigest()[:16]


def phases(sigma: float, steps: int) -> dict:
    """CPU seconds per function of one cold build (inclusive)."""
    from dpacct.accountant.pld import pld_fft
    from dpacct.accountant.transformers import random_allocation_pld as rp

    acc: collections.Counter = collections.Counter()
    saved = []

    def wrap(mod, name):
        f = getattr(mod, name)
        saved.append((mod, name, f))

        def timed(*a, **k):
            t0 = time.process_time()
            try:
                return f(*a, **k)
            finally:
                acc[name] += time.process_time() - t0

        setattr(mod, name, timed)

    for n in ("_fft_convolve", "_tilted_convolve", "_bounded_convolve", "_exp_progression",
              "_tilted", "_tilt_rate", "_fft_roundoff", "_certified_side"):
        wrap(pld_fft, n)
    for n in ("_add", "_product", "_above", "_trim", "_base_law", "_lognormal_cells",
              "_coarsen"):
        wrap(rp, n)
    rp._LAWS.clear()
    try:
        t0 = time.process_time()
        rp.allocation_sum_law(sigma, steps, progress=False)
        acc["(build)"] = time.process_time() - t0
    finally:
        for mod, name, f in saved:
            setattr(mod, name, f)
    return dict(acc.most_common())


def _answers(sigma: float, steps: int, res: float = 1.0) -> tuple[float, list[float]]:
    """(build CPU s, [eps 1e-6, eps 1e-10, ten epochs eps 1e-6, eps 1e-10]), cold."""
    from dpacct.accountant import compose
    from dpacct.accountant.transformers import random_allocation_pld as rp

    rp._LAWS.clear()
    rp._PAIR_LAWS.clear()
    t0 = time.process_time()
    rp.allocation_sum_law(sigma, steps, res, progress=False)
    build = time.process_time() - t0
    ep = rp.AllocationEpochPair(sigma, steps, res, progress=False)
    ten = compose([ep], counts=[10])
    return build, [float(ep.epsilon(d)) for d in (1e-6, 1e-10)] + [
        float(ten.epsilon(d)) for d in (1e-6, 1e-10)]


def _print(label: str, build: float, eps: list[float], ref: list[float] | None) -> None:
    marks = "" if ref is None else "  " + " ".join(
        "=" if e == r else ("lower" if e < r else "HIGHER") for e, r in zip(eps, ref, strict=True))
    print(f"| {label} | {build:.3f} | " + " | ".join(repr(e) for e in eps) + f" |{marks}")


def _with_build_patch(patch: str):
    """``_build`` with ``patch`` inserted before the base law is split (a copy, compiled
    in the module's namespace; restored by the caller)."""
    from dpacct.accountant.transformers import random_allocation_pld as rp

    src = inspect.getsource(rp._build)
    anchor = "    power = _trim(_base_law("
    assert anchor in src
    ns = dict(vars(rp))
    exec(src.replace(anchor, patch + anchor), ns)  # a benchmark's experiment, not the library
    return ns


def cover(sigma: float, steps: int, covers: list[float]) -> None:
    from dpacct.accountant.transformers import random_allocation_pld as rp

    print("| cut | build CPU s | eps 1e-6 | eps 1e-10 | 10 epochs 1e-6 | 10 epochs 1e-10 |")
    print("| --- | --- | --- | --- | --- | --- |")
    build, ref = _answers(sigma, steps)
    _print("as built", build, ref, None)
    orig = rp._build
    cap = [math.inf]
    ns = _with_build_patch(
        "    top = min(top, CAP[0] * t)\n    base_top = min(base_top, CAP[0] * t)\n"
    )
    ns["CAP"] = cap
    rp._build = ns["_build"]
    try:
        for c in covers:
            cap[0] = math.exp(c)
            build, eps = _answers(sigma, steps)
            _print(f"T e^{c:g}", build, eps, ref)
    finally:
        rp._build = orig
        rp._LAWS.clear()
        rp._PAIR_LAWS.clear()


def _coarse(part, step: float, start: float, h_tail: float):
    """Mass at or above the first multiple of ``h_tail`` past ``start`` moved onto that
    lattice, each node's mass split between its two lattice neighbours with its value
    kept (a mean-preserving spread)."""
    m = round(h_tail / step)
    if m < 2:
        return part
    q, off, *rest = part
    g0 = -(-math.ceil(start / step) // m) * m
    i0 = max(g0 - off, 0)
    if i0 >= q.size:
        return part
    g = off + np.arange(i0, q.size)
    r = g % m
    base = g - r
    w = r / m
    out = np.zeros(max(q.size, int(base[-1]) - off + m + 1))
    out[:i0] = q[:i0]
    np.add.at(out, base - off, q[i0:] * (1 - w))
    np.add.at(out, base - off + m, q[i0:] * w)
    return (out, off, *rest)


def coarse_tail(sigma: float, steps: int, configs: list[tuple[float, float]]) -> None:
    from dpacct.accountant.transformers import random_allocation_pld as rp

    print("| tail above x T on step H | build CPU s | eps 1e-6 | eps 1e-10 | 10 epochs 1e-6 "
          "| 10 epochs 1e-10 |")
    print("| --- | --- | --- | --- | --- | --- |")
    build, ref = _answers(sigma, steps)
    _print("as built", build, ref, None)
    add, base = rp._add, rp._base_law
    cfg: list = [None]

    def add2(a, b, step, t, top, below=False):
        return _coarse(add(a, b, step, t, top, below), step, *cfg[0])

    def base2(s, step, top):
        return _coarse(base(s, step, top), step, *cfg[0])

    rp._add, rp._base_law = add2, base2
    try:
        for x, h in configs:
            cfg[0] = (x * steps, h)
            build, eps = _answers(sigma, steps)
            _print(f"x {x:g}, H {h:g}", build, eps, ref)
    finally:
        rp._add, rp._base_law = add, base
        rp._LAWS.clear()
        rp._PAIR_LAWS.clear()


def resolution(sigma: float, steps: int, values: list[float]) -> None:
    print("| resolution | build CPU s | eps 1e-6 | eps 1e-10 | 10 epochs 1e-6 | 10 epochs 1e-10 |")
    print("| --- | --- | --- | --- | --- | --- |")
    build, ref = _answers(sigma, steps)
    _print("1", build, ref, None)
    for r in values:
        build, eps = _answers(sigma, steps, r)
        _print(f"{r:g}", build, eps, ref)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sigma", type=float, default=0.8)
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--hash", action="store_true", help="the law's digest per setting")
    ap.add_argument("--phases", action="store_true", help="CPU per function of one build")
    ap.add_argument("--cover", type=float, nargs="*", help="window cuts T e^c")
    ap.add_argument("--coarse-tail", nargs="*", help="x,H pairs: tail above x T on step H")
    ap.add_argument("--resolution", type=float, nargs="*", help="law resolutions")
    args = ap.parse_args(argv)
    if args.hash:
        for s, t in SETTINGS:
            print(s, t, law_digest(s, t))
    if args.phases:
        for name, sec in phases(args.sigma, args.steps).items():
            print(f"{name:20s} {sec:.3f}")
    if args.cover:
        cover(args.sigma, args.steps, args.cover)
    if args.coarse_tail:
        coarse_tail(args.sigma, args.steps,
                    [tuple(float(v) for v in c.split(",")) for c in args.coarse_tail])
    if args.resolution:
        resolution(args.sigma, args.steps, args.resolution)


if __name__ == "__main__":
    main()
