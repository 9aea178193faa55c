"""b-min-sep batches: the certified bound (Theorem 7) beside a Monte Carlo estimate.

Each row: DP-SGD (``strategy (1,)``) or a two-band BandMF on JAX Privacy's
``BMinSepSampling`` batches (warm start), the certified epsilon of
:func:`dpacct.min_separation_dpsgd` / :func:`dpacct.mechanisms.bandmf_min_sep` (the least of
its Poisson and block routes, both shown), the Monte
Carlo estimate of the exact pair (:func:`dpacct.min_separation_delta_mc`, the larger
direction, with its standard error), and, for reference only, Poisson DP-SGD at the
sampler's stationary participation rate ``p / (1 + (b - 1) p)`` (not a bound).  Epsilons
at ``--delta`` (default 1e-3, where the estimate's error is small): the estimate's is the
first epsilon of a grid (spacing 1/400 of the certified one) where the larger
direction's estimated delta is at or below it.

    python -m benchmarks.min_separation [--samples 100000] [--delta 1e-3] [--seed 0]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import dpacct as dp
from dpacct.mechanisms import bandmf_min_sep

#: (label, sigma, p, steps, min_sep, strategy)
ROWS = (
    ("DP-SGD, b 1 (Poisson)", 1.0, 0.05, 200, 1, (1.0,)),
    ("DP-SGD, b 4", 1.0, 0.05, 200, 4, (1.0,)),
    ("DP-SGD, b 16", 1.0, 0.05, 200, 16, (1.0,)),
    ("DP-SGD, b 8, p 0.2", 1.5, 0.2, 100, 8, (1.0,)),
    ("BandMF 2 bands (1, 1/2)/sqrt(1.25), b 4", 2.0, 0.1, 100, 4,
     tuple(np.array([1.0, 0.5]) / math.sqrt(1.25))),
)


def _certified(sigma, p, steps, b, strategy):
    if len(strategy) == 1 and strategy[0] == 1.0:
        return dp.min_separation_dpsgd(sigma, p, steps, min_sep=b)
    return bandmf_min_sep(sigma, steps, sample_rate=p, min_sep=b, strategy=strategy)


def _mc_eps_at(sigma, p, steps, b, strategy, target, samples, rng, guess):
    """The epsilon where the Monte Carlo estimate (larger direction) crosses ``target``,
    read on a grid of epsilons off one set of draws, and the crossing's delta's se."""
    grid = np.linspace(0.0, 1.5 * guess, 601)
    (rem, se), (add, se_a) = dp.min_separation_delta_mc(
        sigma, p, steps, grid, min_sep=b, strategy=strategy, samples=samples, rng=rng)
    est = np.maximum(rem, add)
    i = int(np.argmax(est <= target))  # the first grid epsilon at or below the target
    return float(grid[i]), float(max(se[i], se_a[i]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--delta", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    print(f"delta {args.delta:g}, {args.samples} draws per direction")
    print("| row | certified eps | its Poisson route / blocks route | Monte Carlo eps "
          "(estimate) | certified / estimate | Poisson at the stationary rate (not a bound) "
          "| certified CPU s | MC CPU s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, sigma, p, steps, b, strategy in ROWS:
        c0 = time.process_time()
        run = _certified(sigma, p, steps, b, strategy)
        eps = float(run.epsilon(args.delta))
        c1 = time.process_time()
        mc, _se = _mc_eps_at(sigma, p, steps, b, strategy, args.delta, args.samples, rng, eps)
        c2 = time.process_time()
        rate = p / (1.0 + (b - 1) * p)
        alpha = 1.0 if len(strategy) == 1 else dp.strategy_norm_squared_upper(strategy, steps)
        ref = float(dp.dpsgd_mechanism(sigma / math.sqrt(alpha), rate, steps).epsilon(args.delta))
        routes = " / ".join(f"{float(r.epsilon(args.delta)):.4f}" for r in run.routes())
        print(f"| {label} | {eps:.4f} | {routes} | {mc:.4f} | "
              f"{eps / mc if mc > 0 else math.inf:.3f} | {ref:.4f} | {c1 - c0:.2f} | "
              f"{c2 - c1:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
