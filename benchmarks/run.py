"""Side-by-side benchmark: dpacct against dp_accounting, prv_accountant, opacus, autodp.

One run measures every runner (ours and the peers') on every workload, each in a
fresh subprocess (:func:`benchmarks.peers.measure`), then prints one table per
workload with this project's numbers next to the peers', the ratios, and the checks
the issues ask for (soundness, tightness, speed, memory).  For the calibration
workloads it also evaluates, with dpacct's precise accountant, the true epsilon at
the sigma each library returned.

Run from the repository root::

    python -m benchmarks.run                 # everything (several minutes)
    python -m benchmarks.run --quick         # skips the peers' slowest settings
    python -m benchmarks.run --json benchmarks/results/run.json
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import ours, peers

OURS_PREFIX = "benchmarks.ours:"
#: peers' settings that take tens of seconds; skipped by --quick
SLOW = ("*fine*", "*prv_0.001*")
#: runners whose answer the peer harness flags as not a valid bound
INVALID_MARKERS = (
    "NOT valid",
    "not a bound",
    "count ignored",
    "vacuous",
    "one RR alone",
    "cuts off",
)


def _our_pairs(workload_patterns: Sequence[str]) -> list[tuple[str, str]]:
    pairs = []
    for wname, wl in peers.WORKLOADS.items():
        if not any(fnmatch.fnmatch(wname, p) for p in workload_patterns):
            continue
        if wl["kind"] == "calibrate":
            pairs.append((OURS_PREFIX + "calibrate", wname))
            continue
        for name, (_, func) in ours.RUNNERS.items():
            if wl["kind"] == "schedule" and name not in ("dpacct.epsilon", "dpacct.bracket"):
                continue  # long schedules: the default answer and bracket only
            pairs.append((OURS_PREFIX + func.__name__, wname))
    return pairs


def _is_valid(rec: dict[str, Any]) -> bool:
    note = str(rec.get("note") or "")
    return rec.get("status") == "ok" and not any(m in note for m in INVALID_MARKERS)


def _precise(label: str) -> bool:
    """True for a peer's non-default high-precision setting."""
    spec = peers.RUNNERS.get(label)
    return bool(spec and spec.precise)


def _label(rec: dict[str, Any]) -> str:
    if rec["runner"].startswith(OURS_PREFIX):
        func = rec["runner"][len(OURS_PREFIX) :]
        for name, (_, f) in ours.RUNNERS.items():
            if f.__name__ == func:
                return name
        return "dpacct." + func
    return rec["runner"]


def _f(x: Any, spec: str) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return format(x, spec)


def epsilon_at_sigma(workload: dict[str, Any], sigma: float) -> float:
    """dpacct's precise upper bound (tol=1e-5) for a calibrated sigma."""
    from dpacct.accountant import compose, poisson_subsample
    from dpacct.mechanisms import GaussianMechanism

    step = poisson_subsample(GaussianMechanism(sigma=sigma), workload["sample_rate"])
    run = compose([step], counts=[workload["steps"]])
    return run.epsilon(workload["delta"], tol=1e-5)


def report(results: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """The tables and the list of check lines."""
    out: list[str] = []
    checks: list[str] = []
    by_wl: dict[str, list[dict[str, Any]]] = {}
    for rec in results:
        by_wl.setdefault(rec["workload"], []).append(rec)
    for wname, recs in by_wl.items():
        wl = peers.WORKLOADS[wname]
        out.append(f"\n== {wname}: {json.dumps({k: v for k, v in wl.items() if k != 'kind'})}")
        if wl["kind"] == "calibrate":
            out.append(
                f"{'runner':34} {'sigma':>10} {'true eps':>10} {'budget used':>11} "
                f"{'seconds':>8} {'ratio':>7} {'peak MB':>8}"
            )
            mine = next((r for r in recs if r["runner"] == OURS_PREFIX + "calibrate"), None)
            my_t = mine.get("seconds") if mine else None
            for rec in recs:
                sigma = rec.get("sigma")
                eps = epsilon_at_sigma(wl, sigma) if sigma else None
                used = eps / wl["target_epsilon"] if eps else None
                ratio = rec["seconds"] / my_t if (rec.get("seconds") and my_t) else None
                out.append(
                    f"{_label(rec):34} {_f(sigma, '10.6f')} {_f(eps, '10.6f')} "
                    f"{_f(used, '11.5f')} {_f(rec.get('seconds'), '8.3f')} "
                    f"{_f(ratio, '7.1f')} {_f(rec.get('peak_mb'), '8.1f')}"
                )
            if mine and mine.get("sigma"):
                eps = epsilon_at_sigma(wl, mine["sigma"])
                ok = eps <= wl["target_epsilon"] and eps >= wl["target_epsilon"] * (1 - 1e-3)
                checks.append(
                    f"[{'PASS' if ok else 'FAIL'}] {wname}: dpacct sigma {mine['sigma']:.6f} "
                    f"gives epsilon {eps:.6f} (target {wl['target_epsilon']:g}), "
                    f"{my_t:.3f} s"
                )
            continue
        out.append(
            f"{'runner':34} {'epsilon':>11} {'lower':>11} {'upper':>11} {'seconds':>8} "
            f"{'t ratio':>7} {'up ratio':>9} {'peak MB':>8}  note"
        )
        mine = {r["runner"]: r for r in recs if r["runner"].startswith(OURS_PREFIX)}
        eps_rec = mine.get(OURS_PREFIX + "epsilon_default")
        br_rec = mine.get(OURS_PREFIX + "bracket_default")
        my_t = eps_rec.get("seconds") if eps_rec else None
        my_up = eps_rec.get("upper") if eps_rec else None
        for rec in recs:
            t = rec.get("seconds")
            up = rec.get("upper")
            ratio_t = t / my_t if (t and my_t) else None
            ratio_up = my_up / up if (up and my_up) else None
            note = rec.get("note") or rec.get("error") or ""
            out.append(
                f"{_label(rec):34} {_f(rec.get('epsilon'), '11.6f')} "
                f"{_f(rec.get('lower'), '11.6f')} {_f(up, '11.6f')} {_f(t, '8.4f')} "
                f"{_f(ratio_t, '7.1f')} {_f(ratio_up, '9.6f')} "
                f"{_f(rec.get('peak_mb'), '8.1f')}  {str(note)[:60]}"
            )
        if not (eps_rec and br_rec and my_up is not None):
            checks.append(f"[FAIL] {wname}: dpacct produced no result")
            continue
        lower = br_rec.get("lower") or 0.0
        valid_peers = [r for r in recs if not r["runner"].startswith(OURS_PREFIX)]
        valid_peers = [r for r in valid_peers if _is_valid(r)]
        peer_lowers = [r["lower"] for r in valid_peers if r.get("lower") is not None]
        peer_uppers = [(r["upper"], _label(r)) for r in valid_peers if r.get("upper")]
        sound = my_up >= max([*peer_lowers, lower]) * (1 - 1e-12)
        checks.append(
            f"[{'PASS' if sound else 'FAIL'}] {wname}: sound -- our upper {my_up:.6f} >= "
            f"every certified lower bound (max {max([*peer_lowers, lower]):.6f})"
        )
        # the default answer against the peers' default settings; the precise answer
        # (tol = MIN_TOL) against every setting, the peers' slow precise ones included
        default_uppers = [(u, n) for u, n in peer_uppers if not _precise(n)]
        above = [(u, n) for u, n in default_uppers if my_up > u]
        checks.append(
            f"[{'PASS' if not above else 'FAIL'}] {wname}: tight -- our default upper <= "
            f"every peer's default upper"
            + (
                ""
                if not above
                else " (above: " + ", ".join(f"{n} {u:.7f}" for u, n in above) + ")"
            )
        )
        precise = mine.get(OURS_PREFIX + "epsilon_tol_min")
        if precise and precise.get("upper") and peer_uppers:
            best_up, best_name = min(peer_uppers)
            best_rec = next(r for r in valid_peers if _label(r) == best_name)
            p_up, p_t = precise["upper"], precise.get("seconds") or math.nan
            speed = (best_rec.get("seconds") or math.nan) / p_t
            status = "PASS" if p_up <= best_up else "MISS"
            checks.append(
                f"[{status}] {wname}: precise (tol=3e-7) upper {p_up:.8f} in {p_t:.3f} s vs "
                f"the tightest peer setting {best_name} {best_up:.8f} (rel. gap "
                f"{p_up / best_up - 1:+.1e}; the peer takes {speed:.1f}x as long)"
            )
        width = my_up / lower - 1 if lower > 0 else math.inf
        checks.append(
            f"[{'PASS' if width <= 5e-3 else 'FAIL'}] {wname}: bracket "
            f"[{lower:.6f}, {my_up:.6f}] relative width {width:.2e} (<= 0.5%)"
        )
        if wl["kind"] == "schedule":
            pld_peer = next((r for r in valid_peers if _label(r) == "dp_accounting.pld"), None)
            checks.append(
                f"[{'PASS' if my_t < 1.0 else 'MISS'}] {wname}: schedule answers in "
                f"{my_t:.3f} s (target 1 s)"
            )
            if pld_peer and pld_peer.get("upper") and pld_peer.get("seconds"):
                ok = my_up <= pld_peer["upper"] * 1.001
                speed = pld_peer["seconds"] / my_t
                checks.append(
                    f"[{'PASS' if ok and speed >= 10 else 'MISS'}] {wname}: upper "
                    f"{my_up:.6f} vs dp_accounting PLD {pld_peer['upper']:.6f} (target <= "
                    f"+0.1 %), {speed:.1f}x its speed (target 10x)"
                )
        if wl["kind"] == "ledger":
            checks.append(
                f"[{'PASS' if my_t < 0.1 else 'MISS'}] {wname}: ledger answers in "
                f"{my_t:.3f} s (target 0.1 s)"
            )
        if wl["kind"] == "dpsgd":
            fast = my_t < 0.05
            slower = [
                _label(r) for r in valid_peers if r.get("seconds") and r["seconds"] < my_t
            ]
            checks.append(
                f"[{'PASS' if fast else 'MISS'}] {wname}: answer in {my_t:.3f} s "
                f"(target 0.05 s); faster than "
                + ("every peer" if not slower else "all but " + ", ".join(slower))
            )
        mems = [r.get("peak_mb") for r in mine.values() if r.get("peak_mb") is not None]
        if mems:
            checks.append(
                f"[{'PASS' if max(mems) < 300 else 'FAIL'}] {wname}: peak memory "
                f"{max(mems):.1f} MB (< 300 MB)"
            )
    return "\n".join(out), checks


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the slowest peer settings")
    parser.add_argument("--workloads", nargs="*", default=["*"], help="glob patterns")
    parser.add_argument("--peers", nargs="*", default=["*"], help="peer runner globs")
    parser.add_argument("--no-peers", action="store_true", help="measure dpacct only")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--json", type=Path, help="write all records to this file")
    args = parser.parse_args(argv)

    pairs = _our_pairs(args.workloads)
    if not args.no_peers:
        peer_pairs = peers.plan(args.peers, args.workloads)
        if args.quick:
            peer_pairs = [
                (r, w) for r, w in peer_pairs if not any(fnmatch.fnmatch(r, p) for p in SLOW)
            ]
        pairs += peer_pairs
    pairs.sort(key=lambda rw: list(peers.WORKLOADS).index(rw[1]))
    results = peers.run_table(pairs, timeout=args.timeout)
    table, checks = report(results)
    print(table)
    print("\n== checks")
    print("\n".join(checks))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"environment": peers.environment(), "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
