"""Issue 37's "linear in phases": the ledger's fold with its transforms timed, and switched off.

The issue asks for 10x the distinct phases in at most 11x the time (1 000 -> 10 000 ->
100 000) and 100 000 distinct phases in under 20 s and 200 MB.  Session 29 named the
floor: one transform per distinct cell per block.  This script measures how much of the
fold that floor is, in a fresh subprocess per run (the schedules of
:mod:`benchmarks.ledger_phases`: N random phases x 10, sigma in [0.8, 2], q in [0.001,
0.02], seed 0), each variant alternated round by round:

* ``lib``: the library as it is, every real transform of at least :data:`STUB_FROM`
  points (``numpy.fft.rfft`` / ``irfft`` and ``scipy.fft.rfft`` / ``irfft``, which
  :mod:`~dpacct.accountant.pld.pld_fft` calls; scipy's on every core for blocks of 8
  rows or more, so their CPU counts both cores' threads) timed (``time.process_time``
  around each call): their CPU, count and points;
* ``stub`` (**UNSOUND experiment**, answers meaningless): those transforms replaced by
  no-ops of the same shapes -- ``rfft`` returns ones (the spectrum of a point mass at
  the origin), ``irfft`` a point mass at the origin -- so that every other pass (the
  tables, the products, the round-off bounds, the Chernoff rows, the re-grids) runs on
  arrays of the same sizes: the CPU left is what the fold costs besides its transforms.

Each run prints epsilon(1e-5) (meaningless under ``stub``), the CPU seconds of the fold
and query, the peak RSS, and the transforms' CPU, count and points.

Run from the repository root::

    python -m benchmarks.ev37b_phases --phases 1000 10000 --variants lib stub --rounds 2

Timings depend on the machine's load: compare the rows of one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence

from benchmarks.checkouts import run_in_checkout, write_json

__all__ = ["STUB_FROM", "VARIANTS", "format_table", "growth", "main"]

VARIANTS = ("lib", "stub")
#: transforms shorter than this are left alone (timed, not stubbed): the cells' own
#: small transforms and the engine's checks
STUB_FROM = 1024

_CHILD = r"""
import json, resource, sys, time
import numpy as np
variant, n, stub_from = json.loads(sys.argv[1])
FFT = {"cpu": 0.0, "calls": 0, "points": 0}
import scipy.fft as _sfft
def _forward(real):
    def rfft(x, n=None, *a, **k):
        m = x.shape[-1] if n is None else n
        if m < stub_from:
            return real(x, n, *a, **k)
        t = time.process_time()
        if variant == "stub":
            out = np.ones(x.shape[:-1] + (m // 2 + 1,), dtype=complex)
        else:
            out = real(x, n, *a, **k)
        FFT["cpu"] += time.process_time() - t
        FFT["calls"] += 1
        FFT["points"] += m * (x.size // max(x.shape[-1], 1))
        return out
    return rfft
def _inverse(real):
    def irfft(s, n=None, *a, **k):
        m = 2 * (s.shape[-1] - 1) if n is None else n
        if m < stub_from:
            return real(s, n, *a, **k)
        t = time.process_time()
        if variant == "stub":
            out = np.zeros(s.shape[:-1] + (m,))
            out[..., 0] = 1.0
        else:
            out = real(s, n, *a, **k)
        FFT["cpu"] += time.process_time() - t
        FFT["calls"] += 1
        FFT["points"] += m * (s.size // max(s.shape[-1], 1))
        return out
    return irfft
irfft = _inverse(np.fft.irfft)
np.fft.rfft, np.fft.irfft = _forward(np.fft.rfft), irfft
_sfft.rfft, _sfft.irfft = _forward(_sfft.rfft), _inverse(_sfft.irfft)
from dpacct.accountant import PrivacyAccountant
from dpacct.accountant.pld import pld_fft as _pf
_pf._irfft = irfft  # bound at import
rng = np.random.default_rng(0)
sig, q = rng.uniform(0.8, 2.0, n), rng.uniform(0.001, 0.02, n)
acct = PrivacyAccountant(progress=False)
t0 = time.process_time()
for s, qq in zip(sig, q):
    acct.step(noise_multiplier=float(s), sample_rate=float(qq), count=10)
eps = float(acct.epsilon(1e-5))
cpu = time.process_time() - t0
mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"epsilon": eps, "cpu": cpu, "peak_mb": mb, "fft_cpu": FFT["cpu"],
                  "fft_calls": FFT["calls"], "fft_points": FFT["points"]}))
"""


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def growth(results: dict[int, dict[str, list]], n: int, variant: str) -> float | None:
    """The median CPU at ``n`` phases over the median at ``n / 10`` (same variant), or
    None where either is missing.

    Examples
    --------
    >>> res = {100: {"lib": [{"status": "ok", "cpu": 1.0}]},
    ...        1000: {"lib": [{"status": "ok", "cpu": 10.5}, {"status": "ok", "cpu": 11.5}]}}
    >>> growth(res, 1000, "lib")
    11.0
    >>> growth(res, 100, "lib") is None
    True
    """

    def med(k: int) -> float | None:
        rs = results.get(k, {}).get(variant, [])
        return _median([r["cpu"] for r in rs if r.get("status") == "ok"])

    if n % 10:
        return None
    a, b = med(n // 10), med(n)
    return None if a is None or b is None or a <= 0 else b / a


def format_table(results: dict[int, dict[str, list]]) -> str:
    """One line per phase count and variant: epsilon, CPU median (range), growth over a
    tenth the phases, peak MB, the transforms' CPU, its share, calls and points."""
    head = (
        "| phases x 10 | variant | epsilon | CPU s (median, range) | growth | peak MB "
        "| transforms CPU s | share | transforms | points |"
    )
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    for n, by in results.items():
        for variant, rs in by.items():
            ok = [r for r in rs if r.get("status") == "ok"]
            label = variant + (" (UNSOUND experiment)" if variant == "stub" else "")
            if not ok:
                status = rs[0].get("status") if rs else "not run"
                lines.append(f"| {n} | {label} | {status} |" + " |" * 7)
                continue
            cpus = sorted(r["cpu"] for r in ok)
            cpu = _median(cpus)
            fft = _median([r["fft_cpu"] for r in ok])
            g = growth(results, n, variant)
            lines.append(
                f"| {n} | {label} | {ok[0]['epsilon']:.9f} "
                f"| {cpu:.3g} ({cpus[0]:.3g}-{cpus[-1]:.3g}) "
                f"| {'' if g is None else f'{g:.1f}x'} | {max(r['peak_mb'] for r in ok):.0f} "
                f"| {fft:.3g} | {fft / cpu:.0%} | {ok[0]['fft_calls']} | {ok[0]['fft_points']:,} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ev37b_phases")
    p.add_argument("--phases", type=int, nargs="+", default=[1000, 10_000])
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--json", help="write the records to this file")
    args = p.parse_args(argv)
    results: dict[int, dict[str, list]] = {n: {v: [] for v in args.variants} for n in args.phases}
    for r in range(args.rounds):
        for n in args.phases:
            for v in args.variants if r % 2 == 0 else args.variants[::-1]:
                arg = json.dumps([v, n, STUB_FROM])
                rec = run_in_checkout(".", sys.executable, [_CHILD, arg], args.timeout)
                results[n][v].append(rec)
                print(n, v, json.dumps(rec), file=sys.stderr, flush=True)
    if args.json:
        write_json(args.json, results)
    print(format_table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
