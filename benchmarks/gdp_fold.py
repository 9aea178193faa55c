"""Full-batch Gaussian ledgers: old and new checkouts alternated, autodp beside (issue 37).

A ledger of full-batch Gaussian steps with many distinct noise multipliers is exactly one
Gaussian, ``mu^2 = sum 1 / sigma_t^2`` (Dong, Roth & Su 2022, Corollary 3.3).  Each row
runs in a fresh subprocess of each checkout (old: say main; new: this one), the sides
alternated for ``--rounds`` rounds, and prints the answer, the median CPU seconds
(``time.process_time``) of the loop and the queries after the imports, and the
relative gap to the exact epsilon (the mu-GDP curve's root in mpmath, 50 digits):

* ``300 sigmas``: ``step(noise_multiplier=9 * 0.998^t, sample_rate=1.0)`` for ``t <
  300``, then ``epsilon_bounds`` at delta 1e-5 (and 1e-10); the peer is autodp's
  ``ComposeGaussian`` of the 300 ``ExactGaussianMechanism`` (its ``get_approxDP``);
* ``loop``: 10 000 steps at ``sigma = 20 * 0.9999^t``, ``epsilon(1e-5)`` every 100;
* ``budget``: a filter of (8, 1e-5) fed ``sigma = 20 * 0.9995^t`` until it refuses
  (the step it refuses, and the epsilon then);
* ``online mixed``: the 300 sigmas with a subsampled phase (sigma ``1 + k / 30``, q 0.01,
  10 steps) after every tenth, 30 distinct phases: the ``"online"`` route, whose
  history composes the full-batch fold as one Gaussian (session 22; before, each
  full-batch step as a cell); ``epsilon`` at 1e-5 and 1e-10.  Its exact-route bracket
  (the subsampled steps composed with the one Gaussian, the engine's PLD) is
  14.4129158-14.4142651 at 1e-5 and 20.1123490-20.1140655 at 1e-10;
* ``online mixed budget``: the same fed to a filter of (12, 1e-5) until it refuses (the
  records admitted, and the epsilon then).

Run from the repository root::

    python -m benchmarks.gdp_fold --old /work/main:python --rounds 3

Timings depend on the machine and its load: compare the rows of one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence

from benchmarks.checkouts import old_new_sides, run_in_checkout

_CHILD = r"""
import json, sys, time
kind = sys.argv[1]
if kind == "autodp":
    from autodp import mechanism_zoo, transformer_zoo
    sig = [9.0 * 0.998**t for t in range(300)]
    t0 = time.process_time()
    mech = transformer_zoo.ComposeGaussian()(
        [mechanism_zoo.ExactGaussianMechanism(sigma=s) for s in sig], [1] * 300)
    out = {"answers": [mech.get_approxDP(d) for d in (1e-5, 1e-10)]}
    out["cpu"] = time.process_time() - t0
    print(json.dumps(out)); sys.exit()
from dpacct.accountant import BudgetExceededError, PrivacyAccountant
t0 = time.process_time()
if kind == "300 sigmas":
    acct = PrivacyAccountant(progress=False)
    for t in range(300):
        acct.step(noise_multiplier=9.0 * 0.998**t, sample_rate=1.0)
    out = {"answers": [list(acct.epsilon_bounds(d)) for d in (1e-5, 1e-10)]}
elif kind == "loop":
    acct = PrivacyAccountant(progress=False)
    eps = []
    for t in range(10_000):
        acct.step(noise_multiplier=20.0 * 0.9999**t, sample_rate=1.0)
        if (t + 1) % 100 == 0:
            eps.append(acct.epsilon(1e-5))
    out = {"answers": [eps[-1]]}
elif kind.startswith("online mixed"):
    budget = kind.endswith("budget")
    kw = {"budget_epsilon": 12.0, "budget_delta": 1e-5} if budget else {}
    acct = PrivacyAccountant(progress=False, **kw)
    n = 0
    try:
        for t in range(300):
            acct.step(noise_multiplier=9.0 * 0.998**t, sample_rate=1.0)
            n += 1
            if t % 10 == 0:
                acct.step(noise_multiplier=1.0 + (t // 10) / 30, sample_rate=0.01, count=10)
                n += 1
    except BudgetExceededError:
        pass
    deltas = (1e-5,) if budget else (1e-5, 1e-10)
    out = {"answers": ([n] if budget else []) + [acct.epsilon(d) for d in deltas]}
else:
    acct = PrivacyAccountant(budget_epsilon=8.0, budget_delta=1e-5, progress=False)
    n = 0
    try:
        while True:
            acct.step(noise_multiplier=20.0 * 0.9995**n, sample_rate=1.0)
            n += 1
    except BudgetExceededError:
        pass
    out = {"answers": [n, acct.epsilon(1e-5)]}
out["cpu"] = time.process_time() - t0
out["route"] = acct.route
print(json.dumps(out))
"""

ROWS = ("300 sigmas", "loop", "budget", "online mixed", "online mixed budget")


def _exact(mus_squared: float, delta: float) -> float:
    """The exact epsilon of mu-GDP at ``delta`` (Balle & Wang 2018, Theorem 8), mpmath."""
    import mpmath as mp

    with mp.workdps(50):
        mu, d = mp.sqrt(mp.mpf(mus_squared)), mp.mpf(delta)

        def curve(e):
            return mp.ncdf(mu / 2 - e / mu) - mp.exp(e) * mp.ncdf(-mu / 2 - e / mu) - d

        z = -mp.sqrt(2) * mp.erfinv(2 * d - 1)
        return float(mp.findroot(curve, (mp.mpf(0), mu * (mu / 2 + z)), solver="illinois",
                                 maxsteps=200, verify=False))


def truths() -> dict[str, list[float]]:
    """The exact answers of each row (the budget row: its refused step's predecessor)."""
    import mpmath as mp

    with mp.workdps(50):
        s300 = mp.fsum(1 / (9 * mp.mpf(0.998) ** t) ** 2 for t in range(300))
        loop = mp.fsum(1 / (20 * mp.mpf(0.9999) ** t) ** 2 for t in range(10_000))
    return {"300 sigmas": [_exact(s300, 1e-5), _exact(s300, 1e-10)],
            "loop": [_exact(loop, 1e-5)]}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.gdp_fold")
    p.add_argument("--old", help="ROOT:PYTHON of the checkout to compare against")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--timeout", type=float, default=600.0)
    args = p.parse_args(argv)
    sides = old_new_sides(args.old)
    recs: dict[str, dict[str, list]] = {r: {s: [] for s in [*sides, "autodp"]} for r in ROWS}
    for _ in range(args.rounds):
        for row in ROWS:
            for side, (root, python) in sides.items():
                recs[row][side].append(run_in_checkout(root, python, [_CHILD, row], args.timeout))
            if row == "300 sigmas":
                root, python = sides["new"]
                recs[row]["autodp"].append(
                    run_in_checkout(root, python, [_CHILD, "autodp"], args.timeout))
    exact = truths()
    print("| row | side | route | answers | exact | CPU s (median) | old CPU / new CPU |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for row in ROWS:
        cpu = {}
        for side, got in recs[row].items():
            ok = [r for r in got if r.get("status") == "ok"]
            if not ok:
                if got:
                    print(f"| {row} | {side} | {got[0].get('status')} | | | | |")
                continue
            cpu[side] = statistics.median(r["cpu"] for r in ok)
            ratio = ""
            if side == "new" and "old" in cpu:
                ratio = f"{cpu['old'] / cpu['new']:.1f}"
            ans = json.dumps(ok[0]["answers"])
            print(f"| {row} | {side} | {ok[0].get('route', '')} | {ans} | "
                  f"{exact.get(row, '')} | {cpu[side]:.4f} | {ratio} |")
        if "autodp" in cpu and "new" in cpu:
            print(f"| {row} | autodp CPU / new CPU | | | | {cpu['autodp'] / cpu['new']:.1f} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
