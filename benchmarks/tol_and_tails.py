"""Two measurements of session 32 (issue 37): where the ``tails small q`` row's time goes,
and how far the subsampled Gaussian's PLD answer is from the truth at large epsilon
against the ``tol`` it was asked for.

``--tails``: the small-q ledger of ``benchmarks.everyday`` (sigma ``1 + 0.001 t``, q
``1e-4 (1 + t mod 5)``, 1 500 steps), then ``epsilon(1e-5)``, ``epsilon_bounds(1e-5)``
and ``delta(0.5)``, each with its CPU seconds; the history at delta 1e-5's reading and
floor at epsilon 0.5; and the rounded schedule's ``delta(0.5)`` with the FFT products'
round-off certificate switched off (``--uncertified``: an experiment, not a bound).

``--tol``: one Poisson-subsampled Gaussian step at sigma and q over a grid, its
``epsilon_bounds(1e-5)`` at the default ``tol`` and at ``tol=1e-3`` against the exact
epsilon of the closed-form oracle (``tests/oracles.subsampled_gaussian_epsilon``,
mpmath): the upper end's relative error in units of the tolerance (above 1: the
tolerance not met; every row is sound, the upper end above the truth).

``--tilted`` (session 33): on ledgers whose composed histories' floor is far above
the answer, the router's ``delta(eps)`` (:func:`~dpacct.accountant.routes.online_delta`)
beside the schedule rounded up by the engine (old main's answer there, the RDP
conversion included) and the tilted composition of the steps
(:mod:`~dpacct.accountant.pld.schedule_tilted`): the measurement behind
``ONLINE_DELTA_TILT_ALONE``.

    python -m benchmarks.tol_and_tails --tails [--uncertified]
    python -m benchmarks.tol_and_tails --tol [--sigmas 0.05,0.1,0.2]
    python -m benchmarks.tol_and_tails --tilted
    python -m benchmarks.tol_and_tails --later [--ledger "small q x 1500"]

``--later`` (session 34): one ledger of ``--tilted`` asked in sequence (review 33, F3:
a later epsilon paid the rounded schedule): ``epsilon(1e-5)``, then ``delta`` at the
ledger's epsilons in the order given by ``--order`` (default: 0.5 first, then the
others), then ``epsilon(1e-13)`` and ``delta`` at that answer (the two directions read
back), each with its CPU seconds and the sequence's total.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np


def _timed(fn):
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def tails(uncertified: bool, records: list) -> None:
    """The small-q ledger's tail questions, each timed (CPU seconds)."""
    from dpacct.accountant import PrivacyAccountant
    from dpacct.accountant.pld import pld_fft

    if uncertified:
        pld_fft.CERTIFY_ROUNDOFF = False  # an experiment: the answers are not bounds
    acct = PrivacyAccountant(progress=False)
    for t in range(1_500):
        acct.step(noise_multiplier=1.0 + 0.001 * t, sample_rate=1e-4 * (1 + t % 5))
    for name, fn in (("epsilon(1e-5)", lambda: acct.epsilon(1e-5)),
                     ("epsilon_bounds(1e-5)", lambda: acct.epsilon_bounds(1e-5))):
        out, cpu = _timed(fn)
        print(f"{name}: {out} in {cpu:.2f} s", flush=True)
        ends = (("lower", out[0]), ("upper", out[1])) if isinstance(out, tuple) else (
            ("epsilon", out),)
        records.append({"workload": f"tails small q {name}", **{k: float(v) for k, v in ends},
                        "cpu_s": cpu})
    ledger = acct._ledger
    (reading, floor), cpu = _timed(lambda: ledger.online(1e-5).delta(np.array([0.5])))
    print(f"the history at 1e-5 reads delta(0.5) {float(reading[0]):.4g}, floor {floor:.4g}"
          f" ({cpu:.2f} s)", flush=True)
    out, cpu = _timed(lambda: acct.delta(0.5))
    tag = " (uncertified: not a bound)" if uncertified else ""
    print(f"delta(0.5): {out:.6g} in {cpu:.2f} s{tag}", flush=True)
    records.append({"workload": "tails small q delta(0.5)", "delta": float(out), "cpu_s": cpu})


def _small_q(n: int = 1_500) -> list[tuple[float, float, int]]:
    return [(1.0 + 0.001 * t, 1e-4 * (1 + t % 5), 1) for t in range(n)]


#: ledgers whose histories' floor (about 1e-9) is above their delta at some epsilons:
#: the tails row's, review 28's 19 small-q phases, tests/test_ledger_delta's seventeen
#: records, and 200 distinct steps of q 1e-3
TILT_LEDGERS = {
    "small q x 1500": (_small_q(), (0.1, 0.15, 0.2, 0.3, 0.5, 1.0)),
    "review28 19": (
        [(2.8 + 0.02 * i, 2e-5 * (1 + i % 12), 1 + i % 2) for i in range(19)],
        (0.05, 0.215, 4.0),
    ),
    "seventeen x 100": ([(1.0 + t / 20, 0.01, 100) for t in range(17)], (2.2, 3.0, 4.0)),
    "q 1e-3 x 200": ([(0.9 + 0.005 * t, 1e-3, 5) for t in range(200)], (0.5, 1.0, 2.0)),
}


def tilted_rows(records: list) -> None:
    """Per ledger and epsilon: the router's answer and CPU, the history floor, the
    engine's rounded schedule (with RDP) and the tilted composition."""
    from dpacct.accountant import PrivacyAccountant

    try:
        from dpacct.accountant.routes import ONLINE_DELTA_TILT_TARGET
    except ImportError:  # an old checkout: the router's answer only
        ONLINE_DELTA_TILT_TARGET = None
    print("| ledger | eps | router delta | CPU s | floor | rounded (engine) | tilted |"
          " tilted share |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, (phases, epsilons) in TILT_LEDGERS.items():
        acct = PrivacyAccountant(progress=False)
        for sigma, q, count in phases:
            acct.step(noise_multiplier=sigma, sample_rate=q, count=count)
        acct.epsilon(1e-5)
        ledger = acct._ledger
        for eps in epsilons:
            got, cpu = _timed(lambda e=eps, a=acct: a.delta(e))
            floor = float(ledger.online(1e-5).delta(np.array([eps]))[1])
            engine = tilted = share = math.nan
            if ONLINE_DELTA_TILT_TARGET is not None:
                engine = float(ledger.accounted(True).delta(np.array([eps]))[0])
                found = ledger.tilted(eps, min(1.0, ONLINE_DELTA_TILT_TARGET * floor))
                if found is not None:
                    tilted, share = found[0], found[1]
            print(f"| {name} | {eps:g} | {got:.6e} | {cpu:.2f} | {floor:.2e} | {engine:.6e} |"
                  f" {tilted:.6e} | {share:.1e} |", flush=True)
            records.append({"ledger": name, "eps": f"{eps:g}", "delta": got, "cpu_s": cpu})


def later_rows(name: str, order: list[float] | None, records: list) -> None:
    """One ledger's questions in sequence, each timed (CPU seconds)."""
    from dpacct.accountant import PrivacyAccountant

    phases, epsilons = TILT_LEDGERS[name]
    acct = PrivacyAccountant(progress=False)
    for sigma, q, count in phases:
        acct.step(noise_multiplier=sigma, sample_rate=q, count=count)
    total = 0.0
    asked = [("epsilon(1e-5)", lambda: acct.epsilon(1e-5))]
    for eps in order or sorted(epsilons, key=lambda e: (e != 0.5, e)):
        asked.append((f"delta({eps:g})", lambda e=eps: acct.delta(e)))
    asked.append(("epsilon(1e-13)", lambda: acct.epsilon(1e-13)))
    asked.append(("delta(epsilon(1e-13))", lambda: acct.delta(acct.epsilon(1e-13))))
    for label, fn in asked:
        out, cpu = _timed(fn)
        total += cpu
        print(f"{name} {label}: {out!r} in {cpu:.2f} s", flush=True)
        records.append({"ledger": name, "question": label, "value": float(out), "cpu_s": cpu})
    print(f"{name}: {total:.2f} s in all", flush=True)
    records.append({"ledger": name, "question": "all", "cpu_s": total})


def tol_rows(sigmas: list[float], records: list) -> None:
    """Upper and lower ends against the exact epsilon, in units of the tolerance."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import oracles

    from dpacct.accountant import poisson_subsample
    from dpacct.mechanisms import GaussianMechanism

    print("| sigma | q | exact epsilon | tol | upper / exact - 1 | in tols | lower / exact - 1 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for sigma in sigmas:
        for q in (0.99, 0.5, 0.1, 0.01):
            exact = oracles.subsampled_gaussian_epsilon(q, sigma, 1e-5)
            for tol in (1e-4, 1e-3):  # 1e-4: the default
                mech = poisson_subsample(GaussianMechanism(sigma), sample_rate=q)
                lo, hi = mech.epsilon_bounds(1e-5, tol=tol)
                up = hi / exact - 1.0
                print(f"| {sigma:g} | {q:g} | {exact:.6f} | {tol:g} | {up:+.2e} | "
                      f"{up / tol:.1f} | {lo / exact - 1.0:+.2e} |", flush=True)
                records.append({"sigma": f"{sigma:g}", "q": f"{q:g}", "tol": f"{tol:g}",
                                "lower": float(lo), "upper": float(hi)})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tails", action="store_true", help="the small-q ledger's tail questions")
    parser.add_argument("--uncertified", action="store_true",
                        help="with --tails: the round-off certificate off (an experiment)")
    parser.add_argument("--tol", action="store_true", help="one step against the exact epsilon")
    parser.add_argument("--tilted", action="store_true",
                        help="delta below the histories' floor: router, engine, tilted")
    parser.add_argument("--later", action="store_true",
                        help="one --tilted ledger's questions in sequence")
    parser.add_argument("--ledger", default="small q x 1500", help="with --later: which")
    parser.add_argument("--order", default=None,
                        help="with --later: comma-separated epsilons, in the order asked")
    parser.add_argument("--json", default=None, help="write the answers here (records)")
    parser.add_argument("--sigmas", default="0.0299,0.05,0.1,0.2,0.3,0.5,0.8",
                        help="with --tol: comma-separated noise multipliers")
    args = parser.parse_args(argv)
    if not (args.tails or args.tol or args.tilted or args.later):
        parser.error("give --tails, --tol, --tilted or --later")
    records: list[dict] = []
    if args.tails:
        tails(args.uncertified, records)
    if args.tilted:
        tilted_rows(records)
    if args.later:
        order = None if args.order is None else [float(e) for e in args.order.split(",")]
        later_rows(args.ledger, order, records)
    if args.tol:
        tol_rows([float(s) for s in args.sigmas.split(",")], records)
    if args.json:
        Path(args.json).write_text(json.dumps({"results": records}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
