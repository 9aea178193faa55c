"""Fixed-size batches without replacement: dpacct's PLD bracket beside dp_accounting's RDP.

    python -m benchmarks.fixed_size                  # 27 settings
    python -m benchmarks.fixed_size --quick          # 3 settings
    python -m benchmarks.fixed_size --json out.json

One DP-SGD run of ``T`` steps, each on a batch of ``b = q n`` of ``n = 60 000`` records
drawn without replacement, noise multiplier ``sigma`` (noise ``sigma C`` on gradients
clipped at ``C``), replace-one neighbours, ``delta = 1e-5``; ``sigma`` in {0.8, 1, 2},
``q`` in {0.001, 0.01, 0.05}, ``T`` in {100, 1 000, 10 000}.

The same physical mechanism on both sides: dpacct's
``compose([fixed_size_gaussian_step(sigma, q)], [T])`` (noise ``sigma / 2`` per unit of
the replace-one sensitivity ``2C``) and dp_accounting 0.6.0's ``RdpAccountant`` under
``REPLACE_ONE`` on ``SampledWithoutReplacementDpEvent(n, b, GaussianDpEvent(sigma /
2))`` (dp_accounting reads a Gaussian's noise against a sensitivity of 1 there, so the
halving is made explicit; fed ``sigma`` it would account a mechanism with half the
sensitivity).

Columns: dpacct's certified bracket ``epsilon_bounds(delta)`` (of the symmetric pair that
dominates the run, docs/theory/fixed_size.md), the certified lower end of the composed
one-directional mixture (a dataset attains it: a lower bound on the run's epsilon), CPU
seconds (``time.process_time``) and peak traced memory (``tracemalloc``, a second call
on a fresh mechanism) of the bracket; dp_accounting's RDP epsilon and CPU seconds from
the same process; the ratio of dpacct's upper end to dp_accounting's RDP.
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc

N = 60_000
DELTA = 1e-5
SIGMAS = (0.8, 1.0, 2.0)
RATES = (0.001, 0.01, 0.05)
STEPS = (100, 1_000, 10_000)
QUICK = ((1.0, 0.01, 1_000), (2.0, 0.001, 10_000), (0.8, 0.05, 100))


def _run(sigma: float, q: float, steps: int):
    from dpacct.accountant import compose
    from dpacct.mechanisms import fixed_size_gaussian_step

    return compose([fixed_size_gaussian_step(sigma, q)], [steps])


def ours(sigma: float, q: float, steps: int, delta: float = DELTA) -> dict:
    """dpacct's bracket, its CPU time and peak memory, and the attained lower bound."""
    from dpacct.accountant import compose, poisson_subsample
    from dpacct.mechanisms import GaussianMechanism

    t0 = time.process_time()
    lower, upper = _run(sigma, q, steps).epsilon_bounds(delta)
    cpu = time.process_time() - t0
    tracemalloc.start()
    _run(sigma, q, steps).epsilon_bounds(delta)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # the remove mixture composed T times is attained by a dataset pair (other records'
    # gradients all equal to the replaced record's new one): its certified lower end is
    # a lower bound on the run's epsilon
    attained = compose([poisson_subsample(GaussianMechanism(sigma / 2), q)], [steps])
    run_lower = float(attained.pld(pessimistic=False)[0].epsilon(delta))
    return {
        "lower": float(lower),
        "upper": float(upper),
        "run_lower": run_lower,
        "cpu_s": cpu,
        "peak_mib": peak / 2**20,
    }


def peer(sigma: float, q: float, steps: int, delta: float = DELTA) -> dict:
    """dp_accounting's RDP epsilon on the same mechanism, and its CPU time."""
    import dp_accounting as dpa

    b = round(q * N)
    event = dpa.SelfComposedDpEvent(
        dpa.SampledWithoutReplacementDpEvent(N, b, dpa.GaussianDpEvent(sigma / 2)), steps
    )
    t0 = time.process_time()
    acct = dpa.rdp.RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    eps = float(acct.compose(event).get_epsilon(delta))
    return {"rdp": eps, "rdp_cpu_s": time.process_time() - t0}


def row(sigma: float, q: float, steps: int) -> dict:
    """One setting: both sides and the ratio of dpacct's upper end to the RDP epsilon."""
    out = {"sigma": sigma, "q": q, "T": steps, **ours(sigma, q, steps), **peer(sigma, q, steps)}
    out["ratio"] = out["upper"] / out["rdp"]
    return out


HEADER = (
    "| sigma | q | T | dpacct lower | dpacct upper | attained (run lower) | dpacct CPU s "
    "| dpacct peak MiB | dp_accounting RDP | their CPU s | upper / RDP |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
)


def fmt(r: dict) -> str:
    """One markdown table line."""
    return (
        f"| {r['sigma']} | {r['q']} | {r['T']} | {r['lower']:.4f} | {r['upper']:.4f} "
        f"| {r['run_lower']:.4f} | {r['cpu_s']:.2f} | {r['peak_mib']:.1f} | {r['rdp']:.4f} "
        f"| {r['rdp_cpu_s']:.2f} | {r['ratio']:.3f} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three settings only")
    parser.add_argument("--json", metavar="PATH", help="write every row to this file")
    args = parser.parse_args(argv)
    settings = (
        QUICK if args.quick else [(s, q, t) for s in SIGMAS for q in RATES for t in STEPS]
    )
    rows = []
    print(HEADER)
    for sigma, q, steps in settings:
        r = row(sigma, q, steps)
        rows.append(r)
        print(fmt(r), flush=True)
    ratios = [r["ratio"] for r in rows]
    print(
        f"\nupper / RDP: min {min(ratios):.3f}, max {max(ratios):.3f}; "
        f"dpacct CPU total {sum(r['cpu_s'] for r in rows):.1f} s, "
        f"dp_accounting {sum(r['rdp_cpu_s'] for r in rows):.1f} s"
    )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
