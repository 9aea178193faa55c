"""What the FFT round-off certificate costs, and how large it is against the error.

Two tables, each checkout (old: say main; new: this branch) run alternately in fresh
subprocesses:

* **cost**: CPU seconds (``time.process_time``) of one call after its imports, with the
  round-off in the certificate (``pld_fft.CERTIFY_ROUNDOFF = True``, the library's
  setting) and without it (False: the estimates only, unsound, the experiment), the
  median over the rounds, their ratio, and the answers (the certified upper bound must
  not rise, the lower bound not fall, from old to new);
* **size**: the rigorous bound ``pld_fft._fft_roundoff(a, b)`` of a plain FFT
  convolution beside its measured error (against ``numpy.convolve`` in 80-bit long
  double, whose own error, typically ``sqrt(n) 2^-64`` of an entry, is a percent or so
  of the measured one; ``tests/test_pld_fft.py`` bounds it rigorously) and the
  ``4u max|c|`` estimate the uncertified path uses, on small PMFs of the engine's shapes.

Run from the repository root::

    python -m benchmarks.roundoff --old /work/main:python --rounds 3

(``--old`` left out: this checkout alone.)  Timings depend on the machine and its load:
compare the columns of one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from typing import Any

from benchmarks.checkouts import old_new_sides, run_in_checkout, write_json

#: name -> (kind, arguments)
TIME_ROWS = {
    "DP-SGD epsilon, q 0.01, sigma 1.1, T 1e4": ("dpsgd", [0.01, 1.1, 10_000, False]),
    "DP-SGD epsilon, q 0.004, sigma 0.8, T 1e6": ("dpsgd", [0.004, 0.8, 1_000_000, False]),
    "DP-SGD epsilon_bounds, q 0.01, sigma 1.1, T 1e4": ("dpsgd", [0.01, 1.1, 10_000, True]),
    "DP-SGD epsilon_bounds, q 0.004, sigma 0.8, T 1e6": ("dpsgd", [0.004, 0.8, 1_000_000, True]),
    "ledger, 1000 phases x 10, epsilon": ("ledger", [1000]),
}

SIZE_ROWS = ["gauss w20", "gauss w200", "gauss w1500", "one-sided tail", "random pmf"]

_TIME_CHILD = r"""
import json, sys, time
spec = json.loads(sys.argv[1])
import numpy as np
from dpacct.accountant.pld import pld_fft
pld_fft.CERTIFY_ROUNDOFF = spec["certify"]
from dpacct.accountant import PrivacyAccountant, compose, poisson_subsample
from dpacct.mechanisms import GaussianMechanism
kind, args = spec["row"]
def call():
    if kind == "dpsgd":
        q, sigma, steps, bounds = args
        m = compose([poisson_subsample(GaussianMechanism(sigma=sigma), q)], counts=[steps])
        return list(m.epsilon_bounds(1e-5)) if bounds else [None, m.epsilon(1e-5)]
    rng = np.random.default_rng(0)
    sig, q = rng.uniform(0.8, 2.0, args[0]), rng.uniform(0.001, 0.02, args[0])
    acct = PrivacyAccountant(progress=False)
    for s, r in zip(sig.tolist(), q.tolist()):
        acct.step(noise_multiplier=s, sample_rate=r, count=10)
    return [None, acct.epsilon(1e-5)]
t0 = time.process_time()
lower, upper = call()
print(json.dumps({"cpu": time.process_time() - t0, "lower": lower, "upper": upper}))
"""

_SIZE_CHILD = r"""
import json, sys
import numpy as np
from dpacct.accountant.pld import pld_fft
name = json.loads(sys.argv[1])["row"]
rng = np.random.default_rng(5)
def gauss(w):
    n = int(12 * w) + 1
    return np.exp(-0.5 * ((np.arange(n) - n / 2) / w) ** 2)
if name.startswith("gauss"):
    a = b = gauss(float(name[7:]))
elif name == "one-sided tail":
    i = np.arange(3000.0)
    a = b = np.exp(-0.5 * ((i - 20) / 4) ** 2) + 1e-3 * np.exp(-i / 80.0)
else:
    a, b = rng.random(2000) ** 3, rng.random(1500) ** 3
a = a / a.sum()
b = a if b is a else b / b.sum()
c = pld_fft._fft_convolve(a, b, b is a)
ref = np.convolve(a.astype(np.longdouble), b.astype(np.longdouble))
err = float(np.abs(c.astype(np.longdouble) - ref).max())
print(json.dumps({"n": int(c.size), "bound": pld_fft._fft_roundoff(a, b), "error": err,
                  "estimate": 4 * 2.0**-53 * float(np.abs(c).max())}))
"""


def _run(root: str, python: str, child: str, spec: dict[str, Any]) -> dict[str, Any]:
    return run_in_checkout(root, python, [child, json.dumps(spec)], 900)


def measure_cost(
    sides: dict[str, tuple[str, str]], rows: Sequence[str], rounds: int
) -> dict[str, dict[str, Any]]:
    """``{row: {side: {"on": [...], "off": [...]}}}``, the four runs alternating."""
    out: dict[str, dict[str, Any]] = {}
    for name in rows:
        recs: dict[str, Any] = {s: {"on": [], "off": []} for s in sides}
        for _ in range(rounds):
            for side, (root, python) in sides.items():
                for certify in (True, False):
                    spec = {"row": TIME_ROWS[name], "certify": certify}
                    rec = _run(root, python, _TIME_CHILD, spec)
                    recs[side]["on" if certify else "off"].append(rec)
        out[name] = recs
        print(name, json.dumps(recs), file=sys.stderr, flush=True)
    return out


def _median(recs: list[dict[str, Any]]) -> float | None:
    cpu = [r["cpu"] for r in recs if r.get("status") == "ok"]
    return statistics.median(cpu) if cpu else None


def _answer(recs: list[dict[str, Any]], key: str) -> float | None:
    ok = [r for r in recs if r.get("status") == "ok"]
    return ok[-1][key] if ok else None


def format_cost(results: dict[str, dict[str, Any]]) -> str:
    sides = list(next(iter(results.values())))
    head = "| workload |"
    for s in sides:
        head += f" {s} certified s | {s} uncertified s | {s} ratio | {s} lower | {s} upper |"
    lines = [head, "|" + " --- |" * (1 + 5 * len(sides))]
    for name, recs in results.items():
        line = f"| {name} |"
        for s in sides:
            on, off = _median(recs[s]["on"]), _median(recs[s]["off"])
            ratio = on / off if on and off else None
            lo, hi = _answer(recs[s]["on"], "lower"), _answer(recs[s]["on"], "upper")
            line += (
                f" {on if on is None else format(on, '.4f')} | "
                f"{off if off is None else format(off, '.4f')} | "
                f"{ratio if ratio is None else format(ratio, '.2f')} | "
                f"{'' if lo is None else format(lo, '.10f')} | "
                f"{'' if hi is None else format(hi, '.10f')} |"
            )
        lines.append(line)
    return "\n".join(lines)


def measure_size(sides: dict[str, tuple[str, str]]) -> dict[str, dict[str, Any]]:
    return {
        name: {s: _run(root, py, _SIZE_CHILD, {"row": name}) for s, (root, py) in sides.items()}
        for name in SIZE_ROWS
    }


def format_size(results: dict[str, dict[str, Any]]) -> str:
    sides = list(next(iter(results.values())))
    head = "| PMFs | length | measured error | estimate 4u max c |"
    for s in sides:
        head += f" {s} bound | {s} bound / error |"
    lines = [head, "|" + " --- |" * (4 + 2 * len(sides))]
    for name, recs in results.items():
        first = next(r for r in recs.values() if r.get("status") == "ok")
        line = f"| {name} | {first['n']} | {first['error']:.2e} | {first['estimate']:.2e} |"
        for s in sides:
            r = recs[s]
            line += f" {r['bound']:.2e} | {r['bound'] / r['error']:.0f} |"
        lines.append(line)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.roundoff")
    p.add_argument("--old", help="ROOT:PYTHON of the checkout to compare against")
    p.add_argument("--rows", nargs="+", default=list(TIME_ROWS), choices=list(TIME_ROWS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", help="write the records to this file")
    args = p.parse_args(argv)
    sides = old_new_sides(args.old)
    size = measure_size(sides)
    print(format_size(size), flush=True)
    cost = measure_cost(sides, args.rows, args.rounds)
    print()
    print(format_cost(cost))
    if args.json:
        write_json(args.json, {"size": size, "cost": cost})
    return 0


if __name__ == "__main__":
    sys.exit(main())
