"""The measured errors behind the certified Gaussian curve's scalar functions (issue 37).

:mod:`dpacct.accountant.families.normal_tails` replaces SciPy's ``erfcx``, ``log_ndtr``
and ``ndtri`` on the certified Gaussian path (so that a first Gaussian epsilon does not
import ``scipy.special``); the certified bounds allow ``ERFCX_REL = 32 u`` for ``erfcx``
on ``[0, 1e5]`` and ``(16 + 4 t^2) u`` for ``log Phi(t)`` on ``[-1e4, 37]`` (``u =
2^-53``), constants measured for SciPy's functions.  This script measures both
implementations against mpmath at 40 digits on the same points, ``--points`` of each
function (geometric and uniform, and dense around the branch points ``x = 26`` and ``t =
-1, 0``), and prints the worst relative error in units of ``u`` and as a fraction of
the allowance; and ``ndtri``'s relative distance from SciPy's (a starting point only).

    python -m benchmarks.normal_tails_errors                  # 10^5 points each
    python -m benchmarks.normal_tails_errors --points 20000 --seed 3

tests/test_normal_tails.py repeats a smaller measurement on every run.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import mpmath
import numpy as np
from scipy import special

from dpacct.accountant.families import gaussian_certified as gc
from dpacct.accountant.families import normal_tails as nt

U = 2.0**-53


def erfcx_points(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` points of ``[0, 1e5]``: geometric, uniform on ``[0, 30]`` and near 26."""
    k = n // 4
    return np.concatenate([
        np.geomspace(1e-10, 1e5, k), rng.uniform(0.0, 30.0, k), rng.uniform(25.0, 27.0, k),
        10 ** rng.uniform(-3, 5, n - 3 * k - 1), [0.0],
    ])


def log_ndtr_points(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` points of ``[-1e4, 37]``: geometric on both sides of 0, uniform, and near
    the branch points -1 and 0."""
    k = n // 6
    return np.concatenate([
        -np.geomspace(1e-10, 1e4, k), np.geomspace(1e-10, gc.T_MAX, k),
        rng.uniform(-60.0, gc.T_MAX, k), rng.uniform(-1.5, 0.5, k),
        -(10 ** rng.uniform(-3, 4, k)), 10 ** rng.uniform(-3, math.log10(gc.T_MAX), n - 5 * k),
    ])


def erfcx_errors(points: np.ndarray) -> dict[str, float]:
    """Worst relative errors (units of u) of ours and SciPy's ``erfcx`` at ``points``."""
    worst = {"ours": 0.0, "scipy": 0.0, "ours_at": 0.0}
    theirs = special.erfcx(points).tolist()
    with mpmath.workdps(40):
        for x, sc in zip(points.tolist(), theirs, strict=True):
            xx = mpmath.mpf(x)
            exact = mpmath.exp(xx * xx) * mpmath.erfc(xx)
            ours = float(abs(mpmath.mpf(nt.erfcx(x)) - exact) / exact) / U
            if ours > worst["ours"]:
                worst["ours"], worst["ours_at"] = ours, x
            worst["scipy"] = max(worst["scipy"], float(abs(mpmath.mpf(sc) - exact) / exact) / U)
    return worst


def log_ndtr_errors(points: np.ndarray) -> dict[str, float]:
    """Worst relative errors of ours and SciPy's ``log Phi`` at ``points``, as fractions
    of the allowance ``gc._log_ndtr_rel(t) u``, and in units of u (``t <= 1``) and of
    ``t^2 u`` (``t > 4``, where the ``t^2`` term of the error dominates)."""
    worst = {k: 0.0 for k in ("ours", "scipy", "ours_low", "scipy_low", "ours_t2",
                              "scipy_t2", "ours_at")}
    theirs = special.log_ndtr(points).tolist()
    with mpmath.workdps(40):
        for t, sc in zip(points.tolist(), theirs, strict=True):
            tt = mpmath.mpf(t)
            exact = mpmath.log1p(-mpmath.ncdf(-tt)) if t > 0 else mpmath.log(mpmath.ncdf(tt))
            for side, value in (("ours", nt.log_ndtr(t)), ("scipy", sc)):
                rel = float(abs(mpmath.mpf(value) - exact) / abs(exact)) / U
                share = rel / gc._log_ndtr_rel(t)
                if side == "ours" and share > worst["ours"]:
                    worst["ours_at"] = t
                worst[side] = max(worst[side], share)
                if t <= 1.0:
                    worst[f"{side}_low"] = max(worst[f"{side}_low"], rel)
                elif t > 4.0:
                    worst[f"{side}_t2"] = max(worst[f"{side}_t2"], rel / (t * t))
    return worst


def ndtri_distance(rng: np.random.Generator, n: int) -> float:
    """Worst ``|ours - scipy| / max(|scipy|, 1e-3)`` of ``ndtri`` on ``(0, 1)``."""
    ps = np.concatenate([10 ** rng.uniform(-320, 0, n // 2), rng.uniform(0, 1, n - n // 2)])
    ref = special.ndtri(ps).tolist()
    return max(abs(nt.ndtri(p) - r) / max(abs(r), 1e-3) for p, r in zip(ps.tolist(), ref,
                                                                        strict=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    t0 = time.process_time()
    e = erfcx_errors(erfcx_points(rng, args.points))
    print(f"erfcx on [0, 1e5], {args.points} points: ours {e['ours']:.2f} u "
          f"(at x = {e['ours_at']!r}), scipy {e['scipy']:.2f} u; allowed {gc.ERFCX_REL:g} u")
    lg = log_ndtr_errors(log_ndtr_points(rng, args.points))
    print(f"log_ndtr on [-1e4, 37], {args.points} points: worst share of the allowance "
          f"ours {lg['ours']:.3f} (at t = {lg['ours_at']!r}), scipy {lg['scipy']:.3f}; "
          f"t <= 1: ours {lg['ours_low']:.2f} u, scipy {lg['scipy_low']:.2f} u; "
          f"t > 4: ours {lg['ours_t2']:.3f} t^2 u, scipy {lg['scipy_t2']:.3f} t^2 u")
    print(f"ndtri: worst relative distance from scipy's {ndtri_distance(rng, 20_000):.2e}")
    print(f"({time.process_time() - t0:.1f} s CPU)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
