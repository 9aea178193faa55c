"""Dong & Özgür 2026's Monte Carlo noise for random allocation, against dpacct's certified sigma.

    python -m benchmarks.samplers_dong_ozgur                 # the table (MC from the cache)
    python -m benchmarks.samplers_dong_ozgur --only k1-T100-e2
    python -m benchmarks.samplers_dong_ozgur --mc --bis-root PATH [--samples N]   # re-run MC

Dong & Özgür, "Less random, more private: what is the optimal subsampling scheme for
DP-SGD?" (arXiv 2605.07072) call random allocation "balanced iteration subsampling"
(BIS): every record independently picks ``k`` of the ``T`` steps, uniformly; one
allocation for the whole run.  Their accountant (github.com/dong-xin-ao-andy/
bis-mc-accountant, commit 74a1143, MIT) estimates both hockey-stick divergences of the
BIS Gaussian mixture ``P`` against ``Q = N(0, sigma^2 I_T)`` by Monte Carlo (exact
likelihood by an elementary-symmetric-polynomial recurrence, samples screened by
Maclaurin's inequalities) and calibrates sigma on a grid, Estimate-Verify-Release
style.  Zero-out adjacency under independent per-record allocation is the same pair as
add/remove (removing a record changes no other record's steps), so dpacct's
``random_allocation(GaussianMechanism(sigma), steps=T, k=k)`` accounts the same
mechanism.

Columns, per configuration (T, k, epsilon, delta):

* **Poisson sigma**: dpacct's certified calibrated noise multiplier for Poisson
  subsampling at rate ``k / T`` for ``T`` steps (``noise_multiplier``), live.
* **MC sigma**: the sigma where the peer's Monte Carlo estimate of
  ``max(H(P||Q), H(Q||P))`` at ``e^epsilon`` meets delta (its "optimistic" point
  estimate, not its EVR-certified grid value, which needs ~1e8 draws per candidate),
  found by bisection with common random numbers (the same seed at every sigma);
  ``N`` draws per direction and sigma; read from ``benchmarks/data/
  samplers_dong_ozgur.json`` (``--mc`` recomputes it; the peer's code is imported from
  ``--bis-root``, a checkout of the repository above).  An estimate, not a bound; its
  relative standard error at MC sigma is printed (``MC se``).
* **dpacct sigma**: the certified calibrated sigma of dpacct's public
  ``random_allocation`` (``calibrate``, rtol 5e-5), live; at ``k > 1`` today a
  reduction to blocks of one-of-m pairs (its docstring), so the column moves when the
  certified k-of-T bracket of issue 39 is merged behind the same call.
* **certified lower eps at MC sigma** (k = 1): dpacct's certified lower bound on the
  true epsilon at the MC sigma (``random_allocation_lower_epsilon``); above the target
  epsilon, the MC sigma is provably too small (the estimate's noise, not a tighter
  truth), and dpacct's own bracket shows how close its sigma is to the truth.
* **true sigma >=** (k = 1): the least sigma at which dpacct's certified lower bound
  is at most epsilon (:func:`sigma_floor`): the true calibrated sigma is at least this;
  **recovered % of the true**: ``(Poisson - dpacct) / (Poisson - floor)``, a lower
  bound on the share of the *true* reduction that dpacct's certified sigma keeps.
* **recovered %**: ``(Poisson - dpacct) / (Poisson - MC)``, the share of the Monte
  Carlo noise reduction against Poisson that the certified sigma keeps (target >= 90).
* **dpacct s**: CPU seconds of dpacct's calibration (``time.process_time``); ``*``: the
  sigma and seconds of an earlier run of this table (``--reuse PATH``, its ``--json``).

The configurations: the two the peer's repository runs (``run_example.sh``: T 391, k 5,
epsilon 8, delta 1.25e-5; ``submit_bis_calibration.sbatch``: T 10 000, k 205, epsilon
8, delta 1e-5 -- 1e8 draws of 10 000 Gaussians per candidate on 16 cores, not run
here: its MC column stays empty), and a small grid of DP-SGD-like settings (k = 1 and
k > 1, epsilon 2 and 8) whose Monte Carlo fits this machine.  The paper's own table of
60+ configurations was not reachable from here (only its abstract: "up to 9.6 %").
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

#: the peer's repository and the commit its numbers were made with
PEER = "github.com/dong-xin-ao-andy/bis-mc-accountant"
PEER_COMMIT = "74a1143"

CACHE = Path(__file__).resolve().parent / "data" / "samplers_dong_ozgur.json"

#: (name, T, k, epsilon, delta, where the configuration comes from)
CONFIGS: tuple[tuple[str, int, int, float, float, str], ...] = (
    ("k1-T100-e8", 100, 1, 8.0, 1e-5, "grid"),
    ("k2-T100-e8", 100, 2, 8.0, 1e-5, "grid"),
    ("example-T391-k5", 391, 5, 8.0, 1.25e-5, "peer's run_example.sh"),
    ("k1-T100-e2", 100, 1, 2.0, 1e-5, "grid"),
    ("k4-T200-e8", 200, 4, 8.0, 1e-5, "grid"),
    ("k1-T391-e8", 391, 1, 8.0, 1e-5, "grid"),
    ("k5-T391-e2", 391, 5, 2.0, 1e-5, "grid"),
    ("sbatch-T10000-k205", 10_000, 205, 8.0, 1e-5, "peer's submit_bis_calibration.sbatch"),
)

#: draws per direction and sigma for --mc, by T (their N x T normals per evaluation)
MC_BUDGET = 2e8
#: configurations whose Monte Carlo is out of reach here
MC_SKIP = ("sbatch-T10000-k205",)


def poisson_sigma(t: int, k: int, epsilon: float, delta: float) -> float:
    """dpacct's certified noise multiplier for ``T`` Poisson steps at rate ``k / T``."""
    from dpacct.calibrators import noise_multiplier

    return float(noise_multiplier(epsilon=epsilon, delta=delta, sample_rate=k / t, steps=t))


def dpacct_sigma(t: int, k: int, epsilon: float, delta: float, start: float) -> tuple[float, float]:
    """dpacct's certified calibrated sigma for k-of-T random allocation, and its CPU s."""
    from dpacct.accountant import random_allocation
    from dpacct.calibrators import calibrate
    from dpacct.mechanisms import GaussianMechanism

    def family(s: float):
        return random_allocation(GaussianMechanism(sigma=s), steps=t, k=k)

    c0 = time.process_time()
    cal = calibrate(
        family,
        epsilon,
        delta,
        interval=(0.85 * start, start),
        increasing=False,
        name="noise_multiplier",
        progress=False,
    )
    return float(cal.parameter), time.process_time() - c0


def sigma_floor(t: int, *, epsilon: float, delta: float, hi: float) -> float:
    """k = 1: the least sigma not excluded by dpacct's certified lower bound.

    Below it, ``random_allocation_lower_epsilon`` exceeds ``epsilon``: no accountant
    can certify ``(epsilon, delta)`` there, so the true calibrated sigma is at least this
    (bisection to 1e-6, returned rounded down).
    """
    from dpacct.accountant import random_allocation_lower_epsilon

    lo = hi
    while random_allocation_lower_epsilon(lo, t, delta) <= epsilon:
        lo *= 0.9
    while hi - lo > 1e-6:
        mid = 0.5 * (lo + hi)
        if random_allocation_lower_epsilon(mid, t, delta) > epsilon:
            lo = mid
        else:
            hi = mid
    return lo


# --------------------------------------------------------------------------------------
# the peer's Monte Carlo (imported from --bis-root)


def _peer_delta(t: int, k: int, sigma: float, epsilon: float, n: int, seed: int) -> dict:
    """The peer's two Monte Carlo hockey-stick estimates at one sigma (its own sampler)."""
    from bis_calibration import _worker_generate_chunk
    from delta_calculation import delta_from_epsilon_and_samples

    out = {"sigma": sigma}
    for i, direction in enumerate(("forward", "reverse")):
        # the peer's worker in this process (its pool of one would spawn a process per
        # call); assembled as its generate_compressed_samples_parallel does
        zeros, positive, _ = _worker_generate_chunk(
            (t, k, sigma, epsilon, n, seed + 500000003 * i, direction)
        )
        samples = np.concatenate(([0.0], positive))
        counts = np.concatenate(([float(zeros)], np.ones(positive.size)))
        est = float(delta_from_epsilon_and_samples(epsilon, samples, counts))
        # standard error of the mean of the per-draw contributions (zeros included)
        contrib = -np.expm1(np.minimum(epsilon - samples, 0.0))
        second = float(np.sum(counts * contrib**2)) / n
        se = math.sqrt(max(second - est**2, 0.0) / n)
        out[direction] = est
        out[f"{direction}_se"] = se
    return out


def mc_sigma(
    t: int, k: int, epsilon: float, delta: float, lo: float, hi: float, n: int, seed: int
) -> dict:
    """Bisect sigma in ``[lo, hi]`` until the peer's max-direction estimate meets delta.

    Common random numbers: every sigma uses the same seed, so the estimate moves
    smoothly with sigma.  Stops at a relative width of 2e-3.
    """
    evals = []

    def worst(s: float) -> float:
        r = _peer_delta(t, k, s, epsilon, n, seed)
        evals.append(r)
        print(f"    sigma {s:.5f}: forward {r['forward']:.3e}, reverse {r['reverse']:.3e}")
        return max(r["forward"], r["reverse"])

    return bisect_sigma(worst, evals, delta, lo, hi)


def bisect_sigma(worst, evals: list, delta: float, lo: float, hi: float) -> dict:
    """The smallest sigma (to a relative width of 2e-3) whose ``worst(sigma)`` estimate
    is at most ``delta``, widening ``[lo, hi]`` first; ``evals`` holds the records that
    ``worst`` appended (each with ``sigma`` and both directions' estimates and standard
    errors), from which the answer's relative standard error is read."""
    while worst(lo) <= delta:  # widen downwards
        hi, lo = lo, lo * 0.9
    while worst(hi) > delta:  # widen upwards
        lo, hi = hi, hi * 1.1
    while hi / lo - 1 > 2e-3:
        mid = math.sqrt(lo * hi)
        if worst(mid) > delta:
            lo = mid
        else:
            hi = mid
    # the estimate's standard error at the answer, relative
    at = min(evals, key=lambda r: abs(r["sigma"] - hi))
    side = "forward" if at["forward"] >= at["reverse"] else "reverse"
    rel_se = at[f"{side}_se"] / at[side] if at[side] > 0 else float("inf")
    return {"sigma_mc": hi, "rel_se": rel_se, "dominant": side, "evals": evals}


def run_mc(
    bis_root: str, only: list[str] | None, samples: int | None, seed: int, path: Path = CACHE
) -> None:
    """Re-run the peer's Monte Carlo for the configurations and update the cache."""
    sys.path.insert(0, bis_root)
    from benchmarks.checkouts import write_json

    def load() -> dict:
        return json.loads(path.read_text()) if path.exists() else {"rows": {}}

    cache = load()
    cache.update(
        {
            "peer": PEER,
            "peer_commit": PEER_COMMIT,
            "what": "sigma where the peer's Monte Carlo max(H(P||Q), H(Q||P)) meets delta "
            "(bisection, common random numbers); an estimate, not a bound",
        }
    )
    for name, t, k, eps, delta, _src in CONFIGS:
        if (only and name not in only) or name in MC_SKIP:
            continue
        n = samples or int(MC_BUDGET / t)
        sp = poisson_sigma(t, k, eps, delta)
        print(f"{name}: T {t}, k {k}, eps {eps:g}, delta {delta:g}; Poisson {sp:.5f}; N {n}")
        c0 = time.process_time()
        r = mc_sigma(t, k, eps, delta, 0.88 * sp, sp, n, seed)
        r.update(
            {
                "T": t,
                "k": k,
                "epsilon": eps,
                "delta": delta,
                "n_per_direction": n,
                "seed": seed,
                "cpu_s": time.process_time() - c0,
                "command": "python -m benchmarks.samplers_dong_ozgur --mc --bis-root PATH "
                f"--only {name}" + (f" --samples {samples}" if samples else "")
                + f" --seed {seed}",
            }
        )
        cache = {**load(), **{k: v for k, v in cache.items() if k != "rows"}}
        cache["rows"][name] = r
        write_json(str(path), cache)  # re-read first: another --mc run may have written
        print(f"  MC sigma {r['sigma_mc']:.5f} (rel se {r['rel_se']:.2f})", flush=True)


def table(only: list[str] | None, json_out: str | None, reuse: str | None = None) -> list[dict]:
    """Print the table: Poisson, MC (cache), dpacct certified, recovered %, time.

    ``reuse``: a ``--json`` file of an earlier run of this table, whose dpacct sigma and
    seconds are printed instead of calibrating again (marked ``*``).
    """
    earlier = {}
    if reuse:
        earlier = {r["config"]: r for r in json.loads(Path(reuse).read_text())}
    print(
        f"Monte Carlo: {PEER} @ {PEER_COMMIT} (cached in {CACHE.name}); dpacct live.  "
        "CPU seconds; the machine was shared."
    )
    print(
        "| config | T | k | eps | delta | Poisson sigma | MC sigma | MC se | MC N | "
        "certified lower eps at MC sigma | dpacct sigma | MC reduction % | "
        "dpacct reduction % | recovered % | true sigma >= | recovered % of the true | "
        "dpacct s |"
    )
    print("| --- " * 17 + "|")
    rows = []
    for name, t, k, eps, delta, src in CONFIGS:
        if only and name not in only:
            continue
        sp = poisson_sigma(t, k, eps, delta)
        if name in earlier:
            ours, sec, mark = earlier[name]["dpacct"], earlier[name]["dpacct_s"], "*"
        else:
            (ours, sec), mark = dpacct_sigma(t, k, eps, delta, sp), ""
        # read now: a --mc run may be filling the cache meanwhile
        cache = json.loads(CACHE.read_text()) if CACHE.exists() else {"rows": {}}
        mc = cache["rows"].get(name)
        row = {
            "config": name,
            "source": src,
            "T": t,
            "k": k,
            "epsilon": eps,
            "delta": delta,
            "poisson": sp,
            "dpacct": ours,
            "dpacct_s": sec,
        }
        ours_red = 100 * (sp - ours) / sp
        if mc:
            row.update(mc=mc["sigma_mc"], mc_rel_se=mc["rel_se"], mc_n=mc["n_per_direction"])
            mc_red = 100 * (sp - mc["sigma_mc"]) / sp
            rec = 100 * (sp - ours) / (sp - mc["sigma_mc"]) if sp > mc["sigma_mc"] else math.nan
            row["recovered"] = rec
            low, floor_cells = "-", "- | -"
            if k == 1:  # dpacct's certified lower bound on the true epsilon at the MC sigma
                from dpacct.accountant import random_allocation_lower_epsilon

                row["lower_eps_at_mc"] = random_allocation_lower_epsilon(
                    mc["sigma_mc"], t, delta
                )
                low = f"{row['lower_eps_at_mc']:.3f}"
                floor = sigma_floor(t, epsilon=eps, delta=delta, hi=sp)
                row["sigma_floor"] = floor
                row["recovered_vs_floor"] = 100 * (sp - ours) / (sp - floor)
                floor_cells = f"{floor:.4f} | {row['recovered_vs_floor']:.0f}"
            mc_cells = (
                f"{mc['sigma_mc']:.4f} | {mc['rel_se']:.2f} | {mc['n_per_direction']:.0e} "
                f"| {low} | {ours:.4f} | {mc_red:.2f} | {ours_red:.2f} | {rec:.0f} "
                f"| {floor_cells}"
            )
        else:
            mc_cells = f"- | - | - | - | {ours:.4f} | - | {ours_red:.2f} | - | - | -"
        rows.append(row)
        if json_out:  # after every row: a long run can be stopped and --reuse'd
            from benchmarks.checkouts import write_json

            write_json(json_out, rows)
        print(
            f"| {name} | {t} | {k} | {eps:g} | {delta:g} | {sp:.4f} | {mc_cells} "
            f"| {sec:.1f}{mark} |",
            flush=True,
        )
    done = [r for r in rows if "recovered" in r]
    if done:
        ok = sum(r["recovered"] >= 90 for r in done)
        print(f"\nrecovered >= 90 % on {ok} of {len(done)} configurations with an MC sigma.")
        floors = [r for r in done if "recovered_vs_floor" in r]
        ok_f = sum(r["recovered_vs_floor"] >= 90 for r in floors)
        print(
            f"recovered >= 90 % of the true reduction (certified floor) on {ok_f} of "
            f"{len(floors)} k = 1 configurations."
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="configuration names (default: all)")
    parser.add_argument("--json", metavar="PATH", help="write the table's rows to this file")
    parser.add_argument(
        "--reuse", metavar="PATH", help="dpacct's sigmas from an earlier --json (marked *)"
    )
    parser.add_argument("--mc", action="store_true", help="re-run the peer's Monte Carlo")
    parser.add_argument(
        "--bis-root",
        default=os.environ.get("BIS_MC_ACCOUNTANT"),
        help="checkout of bis-mc-accountant (or $BIS_MC_ACCOUNTANT)",
    )
    parser.add_argument("--samples", type=int, help="--mc: draws per direction and sigma")
    parser.add_argument("--seed", type=int, default=20260507, help="--mc: the common seed")
    parser.add_argument("--cache", default=str(CACHE), help="--mc: the JSON cache to update")
    args = parser.parse_args(argv)
    if args.mc:
        if not args.bis_root:
            parser.error("--mc needs --bis-root (a checkout of bis-mc-accountant)")
        run_mc(args.bis_root, args.only, args.samples, args.seed, Path(args.cache))
        return 0
    table(args.only, args.json, args.reuse)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
