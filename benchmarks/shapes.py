"""Issue 25's table in one run: dpacct beside its best sound peer at every shape.

Each row is a workload of the issue ("Tight at every shape"): long schedules of random
phases, a per-step decaying sigma, the online loops that ask for epsilon every 100
steps (constant and decaying sigma, with and without a budget), the growth from 1 000 to
10 000 distinct phases, the calibrated noise multiplier and NoisyGD's squared-loss path.
dpacct and the peer (dp_accounting's PLD accountant at its default interval, Opacus'
RDP accountant, or the plain numpy loop) are measured in the same run, each call in a
fresh subprocess of :func:`benchmarks.peers.measure` (imports excluded from the time,
peak memory the resident-set high-water mark of the call), and the table gives

* the answer of each (epsilon; sigma for calibration; ``||mean iterate||`` for NoisyGD),
  the answer ratio ``dpacct / peer`` (above 1: dpacct prints the larger epsilon);
* the seconds and peak MB of each, and the speed ratio ``peer seconds / dpacct seconds``
  (above 1: dpacct is faster);
* for calibration, the budget each sigma uses, re-evaluated with dpacct's precise
  accountant (``epsilon_bounds(delta, tol=1e-5)``, upper end / target).

Run from the repository root::

    python -m benchmarks.shapes                 # the issue's sizes (about 10 minutes)
    python -m benchmarks.shapes --quick         # smaller sizes, same shapes (about 2)
    python -m benchmarks.shapes --only 'online*' --json benchmarks/results/shapes.json

Timings depend on the machine and its load: compare the rows of one run.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import sys
from collections.abc import Sequence
from typing import Any

from benchmarks.peer_registry import register

Workload = dict[str, Any]

HERE = "benchmarks.shapes:"

# --------------------------------------------------------------------------- runners
# (each ``runner(workload) -> dict`` with keys among epsilon, lower, upper, sigma, note;
# called by name in a subprocess of the peer harness, which times the whole call)


_DPACCT = ("dpacct.accountant", "dpacct.mechanisms", "dpacct.calibrators", "benchmarks.ours")


@register(
    HERE + "dpacct_epsilon",
    peer="dpacct",
    method="PrivacyAccountant, epsilon(delta)",
    kinds=("schedule",),
    imports=_DPACCT,
)
def dpacct_epsilon(workload: Workload) -> dict[str, Any]:
    """:func:`benchmarks.ours.epsilon_default` (a ledger fed phase by phase, then asked
    once), with dpacct imported before the timer like the peers' libraries."""
    from benchmarks import ours

    return ours.epsilon_default(workload)


@register(
    HERE + "dpacct_calibrate",
    peer="dpacct",
    method="noise_multiplier",
    kinds=("calibrate",),
    imports=_DPACCT,
)
def dpacct_calibrate(workload: Workload) -> dict[str, Any]:
    """:func:`benchmarks.ours.calibrate`, dpacct imported before the timer."""
    from benchmarks import ours

    return ours.calibrate(workload)


def _online_sigmas(workload: Workload):
    import numpy as np

    t = np.arange(workload["steps"])
    return workload["sigma"] * workload.get("gamma", 1.0) ** t


@register(
    HERE + "dpacct_online",
    peer="dpacct",
    method="PrivacyAccountant loop",
    kinds=("online",),
    imports=("dpacct.accountant", "dpacct.mechanisms"),
)
def dpacct_online(workload: Workload) -> dict[str, Any]:
    """A training loop on dpacct's ledger: one ``step`` per iteration, ``epsilon(delta)``
    every ``every`` steps; with ``budget`` the ledger refuses the step that would pass it
    (the loop then stops)."""
    from dpacct.accountant import BudgetExceededError, PrivacyAccountant

    delta, every, budget = workload["delta"], workload["every"], workload.get("budget")
    if budget is None:
        acct = PrivacyAccountant(progress=False)
    else:
        acct = PrivacyAccountant(budget_epsilon=budget, budget_delta=delta, progress=False)
    q = workload["sample_rate"]
    answers: list[float] = []
    accepted = 0
    for sigma in _online_sigmas(workload).tolist():
        try:
            acct.step(noise_multiplier=sigma, sample_rate=q)
        except BudgetExceededError:
            answers.append(acct.epsilon(delta))  # the spend when the filter stopped the run
            break
        accepted += 1
        if accepted % every == 0:
            answers.append(acct.epsilon(delta))
    eps = answers[-1] if answers else math.nan
    return {"epsilon": eps, "upper": eps, "note": f"{accepted} steps, {len(answers)} queries"}


@register(
    HERE + "opacus_online",
    peer="opacus",
    method="opacus RDP (RDPAccountant's orders), summed per step",
    kinds=("online",),
    imports=("opacus.accountants",),
)
def opacus_online(workload: Workload) -> dict[str, Any]:
    """The same loop on Opacus' RDP analysis: its ``RDPAccountant``'s per-step RDP at
    its default orders, added up as the loop goes (the accountant itself recomputes its
    whole history at every ``get_epsilon``, which for 10 000 distinct sigmas asked 100
    times takes about an hour), converted by ``get_privacy_spent`` every ``every`` steps.
    With ``budget`` the loop stops at the first answer above it (Opacus has no filter:
    it checks only when asked)."""
    import numpy as np
    from opacus.accountants import RDPAccountant
    from opacus.accountants.analysis.rdp import compute_rdp, get_privacy_spent

    delta, every, budget = workload["delta"], workload["every"], workload.get("budget")
    orders = RDPAccountant.DEFAULT_ALPHAS
    q = workload["sample_rate"]
    rdp = np.zeros(len(orders))
    last: tuple[float, np.ndarray] | None = None  # a repeated sigma is not recomputed
    answers: list[float] = []
    accepted = 0
    for sigma in _online_sigmas(workload).tolist():
        if last is None or last[0] != sigma:
            last = (
                sigma,
                np.asarray(compute_rdp(q=q, noise_multiplier=sigma, steps=1, orders=orders)),
            )
        rdp = rdp + last[1]
        accepted += 1
        if accepted % every == 0:
            answers.append(float(get_privacy_spent(orders=orders, rdp=rdp, delta=delta)[0]))
            if budget is not None and answers[-1] > budget:
                break
    eps = answers[-1] if answers else math.nan
    return {"epsilon": eps, "upper": eps, "note": f"{accepted} steps, {len(answers)} queries"}


@register(
    HERE + "opacus_accountant_online",
    peer="opacus",
    method="opacus RDPAccountant (step, get_epsilon)",
    kinds=("online",),
    imports=("opacus.accountants",),
)
def opacus_accountant_online(workload: Workload) -> dict[str, Any]:
    """The loop on Opacus' own ``RDPAccountant``: ``step`` per iteration, ``get_epsilon``
    every ``every`` steps.  Its history merges repeated ``(sigma, q)``, so a constant
    sigma costs one RDP evaluation per query (a decaying one: the whole history per
    query, hence :func:`opacus_online` for those rows)."""
    from opacus.accountants import RDPAccountant

    delta, every, budget = workload["delta"], workload["every"], workload.get("budget")
    acct = RDPAccountant()
    q = workload["sample_rate"]
    answers: list[float] = []
    accepted = 0
    for sigma in _online_sigmas(workload).tolist():
        acct.step(noise_multiplier=sigma, sample_rate=q)
        accepted += 1
        if accepted % every == 0:
            answers.append(float(acct.get_epsilon(delta)))
            if budget is not None and answers[-1] > budget:
                break
    eps = answers[-1] if answers else math.nan
    return {"epsilon": eps, "upper": eps, "note": f"{accepted} steps, {len(answers)} queries"}


def _regression(workload: Workload):
    import numpy as np

    n, d = workload["n"], workload["d"]
    rng = np.random.default_rng(workload["seed"])
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.clip(X @ np.linspace(1.0, -1.0, d) + 0.1 * rng.normal(size=n), -1.0, 1.0)
    return X, y


def _noisy_gd(workload: Workload):
    from dpacct.mechanisms import NoisyGD

    return NoisyGD(
        sigma=workload["sigma"],
        iterations=workload["iterations"],
        loss="linear",
        x_bound=1.0,
        y_bound=1.0,
        theta_bound=workload["theta_bound"],
    )


@register(
    HERE + "dpacct_noisy_gd",
    peer="dpacct",
    method="NoisyGD.fit",
    kinds=("noisy_gd",),
    imports=("dpacct.mechanisms",),
)
def dpacct_noisy_gd(workload: Workload) -> dict[str, Any]:
    """``NoisyGD(loss="linear")`` with declared bounds: ``fit`` on the data."""
    import numpy as np

    X, y = _regression(workload)
    fit = _noisy_gd(workload).fit(X, y, rng=np.random.default_rng(workload["seed"]))
    theta = np.append(fit.coef, fit.intercept)
    return {"epsilon": float(np.linalg.norm(theta)), "note": f"theta[0] = {theta[0]!r}"}


@register(
    HERE + "numpy_noisy_gd",
    peer="numpy",
    method="numpy loop on X'X, X'y",
    kinds=("noisy_gd",),
    imports=("dpacct.mechanisms",),
)
def numpy_noisy_gd(workload: Workload) -> dict[str, Any]:
    """The plain numpy loop on the sufficient statistics ``A = Z'Z``, ``b = Z'y``: one
    ``rng.normal`` per step, the same noise std, learning rate, projection and average."""
    import numpy as np

    X, y = _regression(workload)
    gd = _noisy_gd(workload)  # its std, learning rate and radius (no fit)
    std, lr, radius = gd.noise_std, gd.learning_rate, gd.theta_bound
    rng = np.random.default_rng(workload["seed"])
    n = len(y)
    Z = np.hstack([X, np.ones((n, 1))])
    A, b = Z.T @ Z, Z.T @ y
    theta, total = np.zeros(Z.shape[1]), np.zeros(Z.shape[1])
    for _ in range(workload["iterations"]):
        noisy = A @ theta - b + rng.normal(0.0, std, size=theta.shape)
        theta = theta - lr * (noisy / n)
        norm = float(np.linalg.norm(theta))
        if norm > radius:
            theta = theta * (radius / norm)
        total += theta
    theta = total / workload["iterations"]
    return {"epsilon": float(np.linalg.norm(theta)), "note": f"theta[0] = {theta[0]!r}"}


# --------------------------------------------------------------------------- the rows


def _phases(n: int) -> Workload:
    return {
        "kind": "schedule",
        "generator": "random_phases",
        "phases": n,
        "steps_per_phase": 10,
        "sigma_range": [0.8, 2.0],
        "q_range": [0.001, 0.02],
        "seed": 0,
        "delta": 1e-5,
    }


def _decay(steps: int) -> Workload:
    return {
        "kind": "schedule",
        "generator": "exponential_noise",
        "sigma": 1.5,
        "gamma": 0.9999,
        "sample_rate": 0.01,
        "steps": steps,
        "delta": 1e-5,
    }


def _online(steps: int, sigma: float, gamma: float, budget: float | None) -> Workload:
    return {
        "kind": "online",
        "steps": steps,
        "every": 100,
        "sigma": sigma,
        "gamma": gamma,
        "sample_rate": 0.01,
        "delta": 1e-5,
        "budget": budget,
    }


def rows(quick: bool = False) -> list[dict[str, Any]]:
    """The issue's workloads: name, what is compared, and the two runners' specs.

    ``--quick`` keeps every shape at a smaller size (fewer phases, steps, iterations).
    """
    big, small = (200, 20) if quick else (1000, 100)
    scale = (100, 1000) if quick else (1000, 10_000)
    decay_steps = 200 if quick else 1906
    online_steps = 2000 if quick else 10_000
    gd_iters = 5000 if quick else 50_000
    pld, rdp = "dp_accounting.pld", HERE + "opacus_online"
    out = [
        dict(
            name=f"schedule {big} phases x 10",
            ours=(HERE + "dpacct_epsilon", _phases(big)),
            peer=(pld, _phases(big)),
        ),
        dict(
            name=f"schedule {small} phases x 10",
            ours=(HERE + "dpacct_epsilon", _phases(small)),
            peer=(pld, _phases(small)),
        ),
        dict(
            name=f"per-step decaying sigma, first {decay_steps} steps",
            ours=(HERE + "dpacct_epsilon", _decay(decay_steps)),
            peer=(pld, _decay(decay_steps)),
        ),
        dict(
            name=f"per-step decaying sigma, {online_steps} steps (one query)",
            ours=(HERE + "dpacct_epsilon", _decay(online_steps)),
            peer=("opacus.rdp", _decay(online_steps)),
        ),
        dict(
            name=f"online constant sigma 1.0, eps every 100 of {online_steps}",
            ours=(HERE + "dpacct_online", _online(online_steps, 1.0, 1.0, None)),
            peer=(HERE + "opacus_accountant_online", _online(online_steps, 1.0, 1.0, None)),
        ),
    ]
    for budget in (None, 50.0, 20.0, 12.0, 8.0):
        wl = _online(online_steps, 2.0, 0.9999, budget)
        label = "no budget" if budget is None else f"budget {budget:g}"
        out.append(
            dict(
                name=f"online 2.0*0.9999^t, eps every 100 of {online_steps}, {label}",
                ours=(HERE + "dpacct_online", wl),
                # Opacus has no filter and its answers stay below every budget here: the
                # peer's loop is the same for every budget, measured once
                peer=(rdp, _online(online_steps, 2.0, 0.9999, None)),
            )
        )
    out.append(
        dict(
            name=f"distinct phases {scale[0]} -> {scale[1]} (time growth)",
            ours=(HERE + "dpacct_epsilon", _phases(scale[1])),
            base=(HERE + "dpacct_epsilon", _phases(scale[0])),
            peer=None,
        )
    )
    for eps in (1, 3, 8):
        wl = {
            "kind": "calibrate",
            "target_epsilon": float(eps),
            "delta": 1e-5,
            "sample_rate": 0.01,
            "steps": 10_000,
        }
        out.append(
            dict(
                name=f"calibrated sigma, eps {eps}, q 0.01, T 1e4",
                ours=(HERE + "dpacct_calibrate", wl),
                peer=("dp_accounting.pld_calibrate", wl),
            )
        )
    wl = {
        "kind": "noisy_gd",
        "n": 10_000,
        "d": 20,
        "iterations": gd_iters,
        "sigma": 50.0,
        "theta_bound": 2.0,
        "seed": 0,
    }
    out.append(
        dict(
            name=f"NoisyGD linear, n 10k, d 20, {gd_iters} iterations",
            ours=(HERE + "dpacct_noisy_gd", wl),
            peer=(HERE + "numpy_noisy_gd", wl),
        )
    )
    return out


# --------------------------------------------------------------------------- measuring


def _measure(spec: tuple[str, Workload], name: str, args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks import peers

    runner, wl = spec
    return peers.measure(
        runner,
        {"name": name, **wl},
        repeats=args.repeats,
        timeout=args.timeout,
        repeat_budget=args.repeat_budget,
    )


def _budget_used(sigma: float | None, wl: Workload) -> float | None:
    """Upper end of dpacct's precise bracket at ``sigma`` over the target epsilon."""
    if sigma is None:
        return None
    from dpacct.accountant import compose, poisson_subsample
    from dpacct.mechanisms import GaussianMechanism

    run = compose(
        [poisson_subsample(GaussianMechanism(sigma=sigma), wl["sample_rate"])], counts=[wl["steps"]]
    )
    return run.epsilon_bounds(wl["delta"], tol=1e-5)[1] / wl["target_epsilon"]


def _answer(rec: dict[str, Any] | None) -> float | None:
    if rec is None or rec.get("status") != "ok":
        return None
    return rec["sigma"] if rec.get("sigma") is not None else rec.get("epsilon")


def measure_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Measure every selected row: dpacct and its peer, one after the other.

    With ``args.json`` the records measured so far are written after every row (a long
    run stopped half-way keeps its rows), and each row's table line goes to stderr.
    """
    out = []
    seen: dict[str, dict[str, Any]] = {}  # a peer measurement shared by several rows

    def once(spec: tuple[str, Workload], name: str) -> dict[str, Any]:
        key = json.dumps(spec, sort_keys=True)
        if key not in seen:
            seen[key] = _measure(spec, name, args)
        return seen[key]

    for row in rows(args.quick):
        if not any(fnmatch.fnmatch(row["name"], p) for p in args.only):
            continue
        print(f"measuring: {row['name']}", file=sys.stderr, flush=True)
        rec: dict[str, Any] = {"name": row["name"]}
        rec["ours"] = _measure(row["ours"], row["name"], args)
        if row.get("base") is not None:
            rec["base"] = _measure(row["base"], row["name"] + " (base)", args)
        if row["peer"] is not None and not args.no_peers:
            rec["peer"] = once(row["peer"], row["name"])
        if row["ours"][1]["kind"] == "calibrate":
            wl = row["ours"][1]
            rec["budget_used"] = {
                k: _budget_used(_answer(rec.get(k)), wl) for k in ("ours", "peer") if k in rec
            }
        out.append(rec)
        print(format_rows([rec]).splitlines()[-1], file=sys.stderr, flush=True)
        if getattr(args, "json", None):
            with open(args.json, "w") as fh:
                json.dump(out, fh, indent=1, default=str)
    return out


# --------------------------------------------------------------------------- the table


def _f(x: Any, spec: str) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return ""
    return format(x, spec)


def _cell(rec: dict[str, Any] | None) -> tuple[str, str, str]:
    if rec is None:
        return "", "", ""
    if rec.get("status") != "ok":
        return rec.get("status", "?"), "", ""
    return _f(_answer(rec), ".6f"), _f(rec.get("seconds"), ".3g"), _f(rec.get("peak_mb"), ".0f")


def format_rows(results: Sequence[dict[str, Any]]) -> str:
    """A markdown table: one line per row, dpacct beside the peer, and the ratios."""
    head = (
        "| workload | dpacct answer | s | MB | peer | peer answer | s | MB "
        "| speed (peer s / dpacct s) | answer (dpacct / peer) |"
    )
    lines = [head, "|" + " --- |" * 10]
    for r in results:
        ours, peer = r["ours"], r.get("peer")
        a, s, m = _cell(ours)
        pa, ps, pm = _cell(peer)
        speed = answer = ""
        pname = "" if peer is None else str(peer.get("method") or peer.get("runner"))
        if "base" in r:  # the growth row: time(10x the phases) / time(1x)
            b = r["base"]
            if b.get("status") == "ok" and ours.get("status") == "ok":
                speed = f"{ours['seconds'] / b['seconds']:.1f}x the time of {b['seconds']:.3g} s"
            pname = "(dpacct at 1/10 the phases)"
        elif peer is not None and peer.get("status") == "ok" and ours.get("status") == "ok":
            speed = f"{peer['seconds'] / ours['seconds']:.2f}"
            ao, ap = _answer(ours), _answer(peer)
            if ao is not None and ap not in (None, 0.0):
                answer = f"{ao / ap:.6f}"
        if "budget_used" in r:
            used = r["budget_used"]
            a += f" (uses {_f(100 * used['ours'], '.3f')} %)" if used.get("ours") else ""
            if used.get("peer"):
                pa += f" (uses {_f(100 * used['peer'], '.3f')} %)"
        lines.append(
            f"| {r['name']} | {a} | {s} | {m} | {pname} | {pa} | {ps} | {pm} | {speed} | {answer} |"
        )
    return "\n".join(lines)


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.shapes", description=__doc__.split("\n")[0]
    )
    p.add_argument("--quick", action="store_true", help="smaller sizes, the same shapes")
    p.add_argument("--only", nargs="+", default=["*"], help="row-name patterns (fnmatch)")
    p.add_argument("--no-peers", action="store_true", help="measure dpacct alone")
    p.add_argument("--repeats", type=int, default=3, help="timed calls per measurement")
    p.add_argument(
        "--repeat-budget",
        type=float,
        default=20.0,
        help="seconds after which no further repeat starts",
    )
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per subprocess")
    p.add_argument("--json", help="write every record to this file")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
    results = measure_rows(args)
    print(format_rows(results))
    bad = [r["name"] for r in results if r["ours"].get("status") != "ok"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
