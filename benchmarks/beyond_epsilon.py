"""Beyond epsilon: attack risk against riskcal, random allocation against
random-allocation, shuffling beside Poisson -- in one run.

    python -m benchmarks.beyond_epsilon            # everything (several minutes)
    python -m benchmarks.beyond_epsilon --quick    # skips the peers' slowest settings

Peers (optional; a missing one is reported and skipped): riskcal 1.5.1,
random-allocation 1.0.5.  Timings are wall-clock seconds of one call, imports excluded.
"""

# ruff: noqa: B023  (every lambda here is called at once, inside _timed, in its loop turn)
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

ALPHAS = (0.01, 0.05, 0.1)
RISK_SETTINGS = ((0.002, 0.5, 10_000), (0.01, 1.0, 10_000))


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def attack_risk(quick: bool) -> None:
    from dpacct.accountant.attack_risk import tradeoff_bounds
    from dpacct.calibrators import dpsgd_mechanism, risk_noise_multiplier

    try:
        from dp_accounting.pld import privacy_loss_distribution as pld_mod
        from riskcal.analysis import get_beta_from_pld
        from riskcal.calibration.dpsgd import find_noise_multiplier_for_err_rates
    except ImportError as exc:  # pragma: no cover - optional peer
        print(f"riskcal not installed ({exc}); attack-risk comparison skipped")
        get_beta_from_pld = None
    a = np.array(ALPHAS)
    print("## (a) attack risk: beta = FNR at FPR alpha (higher = safer)\n")
    print("| setting | alpha | dpacct certified lower (safe) | dpacct upper | riskcal 1e-4 grid "
          "| riskcal 1e-3 grid | dpacct s | riskcal s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for q, s, n in RISK_SETTINGS:
        (lo, hi), t_ours = _timed(lambda: tradeoff_bounds(dpsgd_mechanism(s, q, n), a))
        rc4 = rc3 = [float("nan")] * 3
        t_rc = float("nan")
        if get_beta_from_pld is not None:
            def peer(grid):
                pld = pld_mod.from_gaussian_mechanism(
                    standard_deviation=s, sampling_prob=q, use_connect_dots=True,
                    value_discretization_interval=grid).self_compose(n)
                return get_beta_from_pld(pld, alpha=a)
            rc4, t_rc = _timed(lambda: peer(1e-4))
            rc3 = peer(1e-3)
        for i, al in enumerate(ALPHAS):
            print(f"| q={q} sigma={s} {n} steps | {al} | {lo[i]:.6f} | {hi[i]:.6f} | "
                  f"{rc4[i]:.6f} | {rc3[i]:.6f} | {t_ours:.2f} | {t_rc:.2f} |")
    print("\nNoise for TPR <= 0.1 at FPR 0.01:\n")
    print("| setting | dpacct sigma | certified TPR | nearest infeasible sigma | dpacct s "
          "| riskcal sigma | dpacct TPR at riskcal sigma | riskcal s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    from dpacct.accountant.attack_risk import tpr_at

    for q, _s, n in RISK_SETTINGS:
        res, t_ours = _timed(lambda: risk_noise_multiplier(
            tpr=0.1, fpr=0.01, sample_rate=q, steps=n, full_output=True))
        sig_rc = t_rc = tpr_rc = float("nan")
        if get_beta_from_pld is not None and not quick:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sig_rc, t_rc = _timed(lambda: find_noise_multiplier_for_err_rates(
                    alpha=0.01, beta=0.9, sample_rate=q, num_steps=n))
            tpr_rc = float(tpr_at(dpsgd_mechanism(sig_rc, q, n), 0.01))
        print(f"| q={q} {n} steps | {res.parameter:.6f} | {res.risk:.6f} | "
              f"{res.infeasible:.6f} | {t_ours:.2f} | {sig_rc:.6f} | {tpr_rc:.6f} | {t_rc:.2f} |")


RA_SIGMAS = (0.8, 1.0, 2.0)
RA_STEPS = (100, 1000, 10_000)
RA_EPOCHS = (1, 10)


def random_allocation(quick: bool, delta: float = 1e-6) -> None:
    from dpacct.accountant.random_allocation import (
        random_allocation as ra,
    )
    from dpacct.accountant.random_allocation import (
        random_allocation_lower_epsilon,
    )
    from dpacct.mechanisms import GaussianMechanism

    try:
        from random_allocation.comparisons.definitions import PrivacyParams, SchemeConfig
        from random_allocation.random_allocation_scheme.combined import (
            allocation_epsilon_combined,
        )
    except ImportError as exc:  # pragma: no cover
        print(f"random-allocation not installed ({exc}); its column is skipped")
        allocation_epsilon_combined = None
    print(f"\n## (b) random allocation, k = 1, delta = {delta:g}\n")
    print("| sigma | T | epochs | dpacct upper | dpacct s | dpacct certified lower "
          "| random-allocation 'combined' | their s | unamplified |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for s in RA_SIGMAS:
        for t in RA_STEPS:
            for e in RA_EPOCHS:
                mech = ra(GaussianMechanism(sigma=s), t, epochs=e)
                up, t_ours = _timed(lambda: float(mech.epsilon(delta)))
                low = random_allocation_lower_epsilon(s, t, delta, epochs=e)
                theirs = t_theirs = float("nan")
                if allocation_epsilon_combined is not None and not (quick and t > 1000):
                    cfg = SchemeConfig(allocation_direct_alpha_orders=list(range(2, 33)))
                    p = PrivacyParams(sigma=s, num_steps=t, num_selected=1, num_epochs=e,
                                      epsilon=None, delta=delta)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        try:
                            theirs, t_theirs = _timed(
                                lambda: allocation_epsilon_combined(p, cfg))
                        except Exception as exc:  # a peer's failure is reported, not fatal
                            print(f"<!-- random-allocation failed: {exc!r} -->")
                print(f"| {s} | {t} | {e} | {up:.4f} | {t_ours:.3f} | {low:.4f} | "
                      f"{theirs:.4f} | {t_theirs:.2f} | "
                      f"{float(mech.unamplified.epsilon(delta)):.4f} |")


def shuffling() -> None:
    from dpacct.accountant.shuffling import shuffled_batches
    from dpacct.mechanisms import GaussianMechanism

    print("\n## (c) shuffled fixed-size batches, delta = 1e-5\n")
    print("| workload | proved lower | proved upper | Poisson (usual report) | s |")
    print("| --- | --- | --- | --- | --- |")
    for name, s, t, e in (
        ("q=0.01 sigma=1 10k steps (100 epochs of 100 batches)", 1.0, 100, 100),
        ("MNIST 256/60000 sigma=1.1, 60 epochs of 234 batches", 1.1, 234, 60),
    ):
        r, sec = _timed(lambda: shuffled_batches(GaussianMechanism(sigma=s), t, e, 1e-5))
        print(f"| {name} | {r.lower:.4f} | {r.upper:.4f} | {r.poisson:.4f} | {sec:.3f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the peers' slowest runs")
    parser.add_argument("--part", choices=("a", "b", "c"), action="append",
                        help="run only these parts (repeatable)")
    args = parser.parse_args(argv)
    parts = args.part or ["a", "b", "c"]
    if "a" in parts:
        attack_risk(args.quick)
    if "b" in parts:
        random_allocation(args.quick)
    if "c" in parts:
        shuffling()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
