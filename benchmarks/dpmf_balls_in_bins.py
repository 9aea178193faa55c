"""DP-MF under balls-in-bins: dpacct's certified bound beside JAX Privacy's Monte Carlo.

    python -m benchmarks.dpmf_balls_in_bins                  # rows from the cache + live dpacct
    python -m benchmarks.dpmf_balls_in_bins --mc 1e6         # also dpacct's own MC estimate
    python -m benchmarks.dpmf_balls_in_bins --jax NAME --samples 1e7   # refresh one cache row
    python -m benchmarks.dpmf_balls_in_bins --rows b2_n8_k4,b2_n100_k10 --mc 2e6 --calibrate

Each row: a configuration (steps ``n``, cycle length ``k``, the strategy's first column
``c_col`` normalised to norm 1, noise multiplier, delta), dpacct's certified
``bandmf_balls_in_bins(...).epsilon(delta)`` computed live with its CPU seconds
(``time.process_time``, a fresh mechanism), JAX Privacy's Monte Carlo point estimate
from ``benchmarks/data/dpmf_jax_mc.json`` (``experimental.monte_carlo.
sample_generation.get_privacy_loss_sample`` with ``BallsInBinsSampling``, both
directions; the estimate is the epsilon where the larger direction's averaged
``(1 - e^{eps - L})_+`` crosses delta, interpolated in ``log delta`` on the cached grid
of epsilons; sample count, CPU seconds, version and command stored with it), and the
ratio dpacct / JAX.  JAX is not a dependency of dpacct: ``--jax`` needs
``jax-privacy`` (the ``bench`` extra) and writes the cache atomically.

The rows ``*_diag`` switch the cause of the gap off: a diagonal strategy (DP-SGD) has
orthogonal modes, where the Gram domination of docs/theory/dpmf_balls_in_bins.md costs
nothing, and the certified bound meets the estimate (``--mc`` prints dpacct's own
k-dimensional Monte Carlo of the same pair beside it, validated against JAX's on the
rows both have).  The ``Thm 2/3/4`` column is Theorem 2 of the same page (a transfer
operator over the cycle, two-band strategies, 51 points) or Theorem 3 (three bands or
more: what the default answers, the least of Theorems 1, 4 -- residue classes each
dominated by a two-band transfer, Theorem 3 its case without the shared Gaussian -- and,
for ``k <= 64``, 5 -- the whole pair dominated by ``alpha I`` plus the Gram's frequencies
0 and +-1); ``default`` is what ``bandmf_balls_in_bins`` uses without ``two_band``
(``T2@points``/``T3@points``/``T4@points``, ``+T5@FxP``, when the estimated cost is
within budget).
``--calibrate [NAMES]`` adds the calibrations of ``CALIBRATIONS`` (the reviewer's n 6, k 3
case; n 8 and 100): Theorem 1's noise multiplier beside the default calibrator's (refined
on Theorem 2 for two bands), each in a fresh process, with the Monte Carlo epsilon at it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

CACHE = Path(__file__).parent / "data" / "dpmf_jax_mc.json"
DELTA = 1e-5
#: name -> (n, k, c_col before normalisation, noise multiplier)
CONFIGS = {
    "b2_n8_k4": (8, 4, (1.0, 0.5), 2.0),
    "b4_n100_k10": (100, 10, (1.0, 0.5, 0.25, 0.125), 4.0),
    "b4_n100_k10_diag": (100, 10, (1.0,), 4.0),
    "b2_n100_k10": (100, 10, (1.0, 0.5), 4.0),
    "b16_n2000_k100": (2000, 100, "sqrt", 8.0),
}


def c_col(spec) -> np.ndarray:
    """The first column, normalised (``"sqrt"``: 16 bands of ``(1 - x)^(-1/2)``'s
    coefficients, the optimal-Toeplitz shape of BandMF)."""
    from scipy import special

    if spec == "sqrt":
        j = np.arange(16)
        c = np.exp(special.gammaln(j + 0.5) - special.gammaln(0.5) - special.gammaln(j + 1))
    else:
        c = np.asarray(spec, dtype=float)
    return c / np.linalg.norm(c)


def epsilon_from_grid(grid, d_rem, d_add, delta: float) -> float:
    """Smallest epsilon on the grid (log-linear between points) with both deltas <= delta."""
    g = np.asarray(grid)
    d = np.maximum(np.asarray(d_rem), np.asarray(d_add))
    ok = np.nonzero(d <= delta)[0]
    if ok.size == 0:
        return math.inf
    i = int(ok[0])
    if i == 0:
        return float(g[0])
    lo, hi = math.log(max(d[i - 1], 1e-300)), math.log(max(d[i], 1e-300))
    t = (lo - math.log(delta)) / (lo - hi) if lo != hi else 1.0
    return float(g[i - 1] + t * (g[i] - g[i - 1]))


def run_jax(name: str, samples: int, chunk: int = 200_000) -> dict:
    """JAX Privacy's Monte Carlo of one configuration (slow: minutes per 10^6 samples)."""
    import jax_privacy
    from jax_privacy import batch_selection
    from jax_privacy.experimental.monte_carlo import sample_generation

    n, k, spec, sigma = CONFIGS[name]
    c = c_col(spec)
    grid = np.round(np.arange(0.0, 8.0001, 0.02), 4)
    strategy = batch_selection.BallsInBinsSampling(cycle_length=k, iterations=n)
    acc = {"remove": np.zeros_like(grid), "add": np.zeros_like(grid)}
    done, seed, t0 = 0, 0, time.process_time()
    while done < samples:
        m = min(chunk, samples - done)
        for direction, positive in (("remove", True), ("add", False)):
            seed += 1
            loss, _ = sample_generation.get_privacy_loss_sample(
                strategy=strategy, noise_multiplier=sigma, c_col=c,
                positive_sample=positive, num_samples=m, seed=seed,
            )
            for j in range(0, loss.size, 10_000):
                v = -np.expm1(np.minimum(grid[:, None] - loss[None, j : j + 10_000], 0.0))
                acc[direction] += v.sum(axis=1)
        done += m
    return {
        "peer": "jax-privacy",
        "version": getattr(jax_privacy, "__version__", "2.0.0"),
        "command": f"python -m benchmarks.dpmf_balls_in_bins --jax {name} --samples {samples}",
        "samples": done,
        "cpu_seconds": time.process_time() - t0,
        "epsilon_grid": grid.tolist(),
        "delta_remove": (acc["remove"] / done).tolist(),
        "delta_add": (acc["add"] / done).tolist(),
    }


def ours(name: str, delta: float) -> tuple[float, float]:
    """dpacct's Theorem 1 epsilon and its CPU seconds (a fresh mechanism)."""
    from dpacct.mechanisms.algorithms.bandmf_balls_in_bins import bandmf_balls_in_bins

    n, k, spec, sigma = CONFIGS[name]
    t0 = time.process_time()
    eps = float(bandmf_balls_in_bins(sigma, n, cycle_length=k, strategy=c_col(spec),
                                     two_band=False).epsilon(delta))
    return eps, time.process_time() - t0


def default_route(name: str) -> str:
    """What ``bandmf_balls_in_bins`` uses by default: Theorem 2's, 3's or 4's grid points
    (with ``+T5@FxP`` where Theorem 5 is built beside them: factor and own points) or
    "T1"."""
    from dpacct.mechanisms.algorithms.bandmf_balls_in_bins import banded_plan, two_band_points
    from dpacct.mechanisms.algorithms.bandmf_lowfreq import lowfreq_points

    n, k, spec, sigma = CONFIGS[name]
    if (found := banded_plan(sigma, n, k, c_col(spec))) is not None:
        g, pf, bf = found[0]
        route = (f"T3@{found[1]} g{g}" if pf == "thm3" else
                 f"T4@{found[1]} g{g} p{pf} b{bf}")
        if (low := lowfreq_points(sigma, n, k, c_col(spec))) is not None:
            route += f"+T5@{low[1][0]}x{low[1][1]}"
        return route
    points = two_band_points(sigma, n, k, c_col(spec))
    return "T1" if points is None else f"T2@{points}"


#: calibrations of ``--calibrate``: name -> (n, k, c_col as given (not normalised), target
#: epsilon, delta); ``rev_n6_k3`` is the reviewer's case of session 19 (600 s, unfinished)
CALIBRATIONS = {
    "rev_n6_k3": (6, 3, (1.0, 1.0), 4.0, 1e-3),
    "b2_n8_k4": (8, 4, (1.0, 0.5), 2.0, DELTA),
    "b2_n100_k10": (100, 10, (1.0, 0.5), 2.0, DELTA),
    "b4_n100_k10": (100, 10, (1.0, 0.5, 0.25, 0.125), 2.0, DELTA),
}


def calibration_one(name: str, two_band: bool | None) -> dict:
    """One calibration (rtol 1e-2) and its CPU seconds, in this process."""
    from dpacct.calibrators import bandmf_balls_in_bins_noise_multiplier as cal

    n, k, spec, eps, delta = CALIBRATIONS[name]
    c = np.asarray(spec, dtype=float) if name.startswith("rev") else c_col(spec)
    t0 = time.process_time()
    res = cal(eps, delta, n, cycle_length=k, strategy=c, rtol=1e-2, full_output=True,
              two_band=two_band)
    return {"sigma": float(res.parameter), "epsilon": float(res.epsilon),
            "evaluations": int(res.evaluations), "cpu": time.process_time() - t0}


def calibration_rows(names: list[str], samples: int = 1_000_000) -> None:
    """Theorem 1's and the default calibration of each ``CALIBRATIONS`` row, each in a
    fresh process (CPU seconds of the calibration alone), with dpacct's Monte Carlo
    epsilon (an estimate) at the default's noise multiplier."""
    import subprocess

    for name in names:
        n, k, spec, eps, delta = CALIBRATIONS[name]
        out = {}
        for label, flag in (("T1", "False"), ("default", "None")):
            code = ("import json, os; os.environ['TQDM_DISABLE'] = '1'; "
                    "from benchmarks.dpmf_balls_in_bins import calibration_one; "
                    f"print(json.dumps(calibration_one({name!r}, {flag})))")
            run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True, cwd=str(Path(__file__).parent.parent))
            out[label] = json.loads(run.stdout.strip().splitlines()[-1])
        c = np.asarray(spec, dtype=float) if name.startswith("rev") else c_col(spec)
        mc = mc_epsilon(c, n, k, out["default"]["sigma"], delta, samples)
        one, two = out["T1"], out["default"]
        print(f"calibration {name} (eps {eps}, delta {delta:g}): Theorem 1 sigma "
              f"{one['sigma']:.4f} ({one['evaluations']} evaluations, {one['cpu']:.1f} s); "
              f"default sigma {two['sigma']:.4f} (bound {two['epsilon']:.4f}, "
              f"{two['evaluations']} evaluations, {two['cpu']:.1f} s); MC eps at it {mc:.4f} "
              f"({samples:.0e} per direction, an estimate)", flush=True)


def ours_two_band(name: str, delta: float) -> tuple[float, float]:
    """Theorem 2's bound (two bands, 51 points) or the default's for three bands or more
    (Theorem 4 at the default's choice of classes, split and points, its search included;
    Theorem 3 is its case without the shared Gaussian; and Theorem 5 where ``k <= 64``;
    docs/theory/dpmf_balls_in_bins.md), each the least of it and Theorem 1's, and its CPU
    seconds; ``(nan, 0)`` where neither applies."""
    from dpacct.mechanisms.algorithms.bandmf_balls_in_bins import (
        banded_plan,
        bandmf_balls_in_bins,
    )
    from dpacct.mechanisms.algorithms.bandmf_two_band import bandmf_two_band_balls_in_bins

    n, k, spec, sigma = CONFIGS[name]
    c = c_col(spec)
    t0 = time.process_time()
    if c.size == 2:
        run = bandmf_two_band_balls_in_bins(sigma, n, cycle_length=k, strategy=c)
    elif banded_plan(sigma, n, k, c) is not None:
        # the plan's search is timed inside the default, with its Monte Carlo estimates
        # drawn afresh (the library keeps them per process: session 45), as in a new process
        from dpacct.mechanisms.algorithms import bandmf_banded_shared

        bandmf_banded_shared._MC.clear()
        t0 = time.process_time()
        run = bandmf_balls_in_bins(sigma, n, cycle_length=k, strategy=c)
    else:
        return math.nan, 0.0
    return float(run.epsilon(delta)), time.process_time() - t0


def own_mc(name: str, delta: float, samples: int) -> float:
    """dpacct's k-dimensional Monte Carlo estimate of the same pair (an estimate) for the
    configuration ``name``: :func:`mc_epsilon`."""
    n, k, spec, sigma = CONFIGS[name]
    return mc_epsilon(c_col(spec), n, k, sigma, delta, samples)


def mc_epsilon(c, n: int, k: int, sigma: float, delta: float, samples: int,
               seed: int = 2026) -> float:
    """Monte Carlo estimate (not a bound) of the balls-in-bins pair of strategy column
    ``c``: the losses sampled once per direction as in ``bandmf_balls_in_bins_delta_mc``,
    then the epsilon where the larger direction's mean of ``(1 - e^{eps - L})_+`` is
    delta."""
    from scipy import optimize, special

    from dpacct.mechanisms.algorithms.bandmf_balls_in_bins import balls_in_bins_gram

    gram = balls_in_bins_gram(list(c), n, k)
    w, v = np.linalg.eigh(gram)
    root = v * np.sqrt(np.clip(w, 0.0, None))
    half = np.diag(gram) / (2 * sigma**2)
    rng = np.random.default_rng(seed)
    out = 0.0
    for direction in ("remove", "add"):
        losses = []
        for start in range(0, samples, 500_000):
            m = min(500_000, samples - start)
            x = rng.standard_normal((m, k)) @ root.T / sigma
            if direction == "remove":
                x += gram[:, rng.integers(k, size=m)].T / sigma**2
            loss = special.logsumexp(x - half, axis=1) - math.log(k)
            losses.append(loss if direction == "remove" else -loss)
        loss = np.concatenate(losses)

        def f(e, loss=loss):
            return float(np.mean(-np.expm1(np.minimum(e - loss, 0.0)))) - delta

        if f(0.0) > 0:
            out = max(out, optimize.brentq(f, 0.0, 20.0, xtol=1e-4))
    return out


def peak_mb() -> float:
    """This process's peak resident memory so far, in MB (``ru_maxrss``; Linux: KiB): the
    rows are run one process each, bounds before the Monte Carlo, so it is the bounds'
    peak (Theorem 1's and the default's, the larger)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jax", help="refresh JAX Privacy's cached row NAME")
    ap.add_argument("--samples", type=float, default=1e7)
    ap.add_argument("--mc", type=float, default=0.0, help="own MC samples (0: skip)")
    ap.add_argument("--rows", default=",".join(CONFIGS), help="configurations, comma-separated")
    ap.add_argument("--calibrate", nargs="?", const=",".join(CALIBRATIONS), default="",
                    help="also the calibrations (comma-separated CALIBRATIONS names; all)")
    args = ap.parse_args(argv)
    cache = json.loads(CACHE.read_text()) if CACHE.exists() else {}
    if args.jax:
        from benchmarks.checkouts import write_json

        cache[args.jax] = run_jax(args.jax, int(args.samples))
        write_json(str(CACHE), cache)
    print("machine loaded (8 helpers on 2 cores): CPU seconds, not wall")
    print(f"{'config':20} {'Thm 1':>7} {'cpu s':>6} {'Thm 2/3':>7} {'cpu s':>6} {'default':>7} "
          f"{'JAX MC eps':>10} {'samples':>9} {'T1/JAX':>6} {'T23/JAX':>7} {'own MC':>7} "
          f"{'T1/own':>6} {'T23/own':>7} {'peak MB':>7}")
    for name in args.rows.split(","):
        eps, sec = ours(name, DELTA)
        row = cache.get(name)
        jax = (
            epsilon_from_grid(row["epsilon_grid"], row["delta_remove"], row["delta_add"], DELTA)
            if row else math.nan
        )
        n_s = f"{row['samples']:.1e}" if row else "-"
        two, sec2 = ours_two_band(name, DELTA)
        peak = peak_mb()  # the bounds only: the Monte Carlo below allocates far more
        mc = own_mc(name, DELTA, int(args.mc)) if args.mc else math.nan
        print(f"{name:20} {eps:7.4f} {sec:6.1f} {two:7.4f} {sec2:6.1f} {default_route(name):>7} "
              f"{jax:10.4f} {n_s:>9} {eps / jax:6.3f} {two / jax:7.3f} {mc:7.4f} "
              f"{eps / mc:6.3f} {two / mc:7.3f} {peak:7.0f}", flush=True)
    if args.calibrate:
        calibration_rows(args.calibrate.split(","))
    sys.stdout.flush()


if __name__ == "__main__":
    os.environ.setdefault("TQDM_DISABLE", "1")
    main()
