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
#: seconds riskcal's noise calibration may take (in a child process) before it is
#: recorded as not measured
RISKCAL_CAP = 120.0


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def attack_risk(quick: bool) -> None:
    from dpacct.accountant.queries.attack_risk import tradeoff_bounds
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
    from dpacct.accountant.queries.attack_risk import tpr_at

    for q, _s, n in RISK_SETTINGS:
        res, t_ours = _timed(lambda: risk_noise_multiplier(
            tpr=0.1, fpr=0.01, sample_rate=q, steps=n, full_output=True))
        sig_txt, tpr_txt, t_txt = "-", "-", "-"
        if get_beta_from_pld is not None and not quick:
            status, val, sec = _capped(
                find_noise_multiplier_for_err_rates, (0.01, 0.9, q, n), RISKCAL_CAP)
            sig_txt, t_txt = _fmt_peer(status, val, sec, RISKCAL_CAP)
            if status == "ok":
                sig_txt = f"{float(val):.6f}"
                tpr_txt = f"{float(tpr_at(dpsgd_mechanism(float(val), q, n), 0.01)):.6f}"
        print(f"| q={q} {n} steps | {res.parameter:.6f} | {res.risk:.6f} | "
              f"{res.infeasible:.6f} | {t_ours:.2f} | {sig_txt} | {tpr_txt} | {t_txt} |")


RA_SIGMAS = (0.8, 1.0, 2.0)
RA_STEPS = (100, 1000, 10_000)
RA_EPOCHS = (1, 10)
RA_DELTAS = (1e-6, 1e-10)
#: seconds one peer call may take before it is recorded as not measured
PEER_CAP = 120.0


def _child(queue, fn, args) -> None:  # pragma: no cover - runs in a child process
    import contextlib
    import io

    # peers print progress notes; they are not part of the report
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        try:
            out = fn(*args)
        except Exception as exc:  # a peer's failure is reported, not fatal
            queue.put(("error", repr(exc), time.perf_counter() - t0))
            return
        queue.put(("ok", out, time.perf_counter() - t0))


def _capped(fn, args, cap: float):
    """Run ``fn(*args)`` in a child process; ``(status, value, seconds)``.

    ``status`` is ``"ok"``, ``"error"`` or ``"timeout"`` (the child is terminated at
    ``cap`` seconds, and the value is ``None``).  The seconds are the child's own
    measurement of the call (imports excluded) when it finishes.
    """
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(queue, fn, args), daemon=True)
    proc.start()
    try:
        status, value, sec = queue.get(timeout=cap)
    except Exception:  # queue.Empty: the cap was reached
        status, value, sec = "timeout", None, cap
    proc.join(timeout=5)
    if proc.is_alive():
        proc.terminate()
        proc.join()
    return status, value, sec


def _peer_allocation(sigma: float, steps: int, epochs: int, delta: float,
                     direction: str = "BOTH") -> float:
    """random-allocation 1.0.5's tightest provable epsilon: 'combined' (the min of its
    local, analytic, direct, recursive and -- one epoch -- decomposition bounds), for
    both directions or one (``"ADD"`` / ``"REMOVE"``)."""
    from random_allocation.comparisons.definitions import (
        Direction,
        PrivacyParams,
        SchemeConfig,
    )
    from random_allocation.random_allocation_scheme.combined import (
        allocation_epsilon_combined,
    )

    cfg = SchemeConfig(allocation_direct_alpha_orders=list(range(2, 33)))
    p = PrivacyParams(sigma=sigma, num_steps=steps, num_selected=1, num_epochs=epochs,
                      epsilon=None, delta=delta)
    return float(allocation_epsilon_combined(p, cfg, direction=Direction[direction]))


def _fmt_peer(status: str, value, sec: float, cap: float) -> tuple[str, str]:
    if status == "ok":
        return f"{value:.4f}", f"{sec:.2f}"
    if status == "timeout":
        return f"not measured (> {cap:.0f} s)", f"> {cap:.0f}"
    return f"failed: {value}", f"{sec:.2f}"


def random_allocation(quick: bool, cap: float = PEER_CAP) -> None:
    from dpacct.accountant.transformers.random_allocation import (
        random_allocation as ra,
    )
    from dpacct.accountant.transformers.random_allocation import (
        random_allocation_lower_epsilon,
    )
    from dpacct.mechanisms import GaussianMechanism

    try:
        import random_allocation as _peer  # noqa: F401
        have_peer = True
    except ImportError as exc:  # pragma: no cover
        print(f"random-allocation not installed ({exc}); its column is skipped")
        have_peer = False
    print("\n## (b) random allocation, k = 1 (balls and bins)\n")
    print(f"Peer: random-allocation 1.0.5 `allocation_epsilon_combined` (orders 2..32), "
          f"each call in a child process capped at {cap:.0f} s.\n")
    print("| sigma | T | epochs | delta | dpacct upper | deciding | dpacct s "
          "| dpacct certified lower | random-allocation combined | their s | ours - theirs |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    above = []
    for s in RA_SIGMAS:
        for t in RA_STEPS:
            for e in RA_EPOCHS:
                for delta in RA_DELTAS:
                    mech = ra(GaussianMechanism(sigma=s), t, epochs=e)
                    up, t_ours = _timed(lambda: float(mech.epsilon(delta)))
                    rem, add = mech._epsilon_directions(delta, None)
                    unamp = float(mech.unamplified.epsilon(delta))
                    route = ("unamplified" if up >= unamp * (1 - 1e-12) else
                             "remove" if rem >= add else "add")
                    low = random_allocation_lower_epsilon(s, t, delta, epochs=e)
                    theirs, t_theirs, diff = "-", "-", "-"
                    if have_peer and not (quick and t > 1000):
                        status, val, sec = _capped(_peer_allocation, (s, t, e, delta), cap)
                        theirs, t_theirs = _fmt_peer(status, val, sec, cap)
                        if status == "ok":
                            diff = f"{up - val:+.4f}"
                            if up > val * 1.01:
                                above.append((s, t, e, delta, rem, add, val))
                    print(f"| {s} | {t} | {e} | {delta:g} | {up:.4f} | {route} | {t_ours:.2f} "
                          f"| {low:.4f} | {theirs} | {t_theirs} | {diff} |", flush=True)
    if not above:
        return
    print("\nWhere dpacct is above the peer by more than 1 %, each direction on its own:\n")
    print("| sigma | T | epochs | delta | dpacct remove | dpacct add | peer remove | peer add "
          "| peer both |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for s, t, e, delta, rem, add, val in above:
        cells = []
        for direction in ("REMOVE", "ADD"):
            status, v, sec = _capped(_peer_allocation, (s, t, e, delta, direction), cap)
            cells.append(_fmt_peer(status, v, sec, cap)[0])
        print(f"| {s} | {t} | {e} | {delta:g} | {rem:.4f} | {add:.4f} | {cells[0]} "
              f"| {cells[1]} | {val:.4f} |", flush=True)


def shuffling() -> None:
    from dpacct.accountant.transformers.shuffling import shuffled_batches
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
    parser.add_argument("--cap", type=float, default=PEER_CAP,
                        help="seconds one random-allocation call may take (default 120)")
    parser.add_argument("--part", choices=("a", "b", "c"), action="append",
                        help="run only these parts (repeatable)")
    args = parser.parse_args(argv)
    parts = args.part or ["a", "b", "c"]
    if "a" in parts:
        attack_risk(args.quick)
    if "b" in parts:
        random_allocation(args.quick, args.cap)
    if "c" in parts:
        shuffling()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
