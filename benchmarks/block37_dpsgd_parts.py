"""Issue 37, session 38: what a cold DP-SGD ``epsilon`` consists of, in CPU seconds.

**An unsound experiment** for every variant but ``library`` (module functions patched in
a fresh process before the one timed call; their answers are not bounds).  Each variant
runs in its own fresh process (imports before the clock), the variants alternated round
by round, CPU time (``time.process_time``) of the one call, medians printed:

* ``library``: the call as it is, with its FFTs, its discretisation and its ladder timed
  from inside (``pld_fft._rfft`` / ``_irfft``, ``discretize_split`` and
  ``self_compose_split`` as ``compose`` calls them wrapped: each wrapper
  adds two ``process_time`` calls, ~1 us, to each of a few hundred calls);
* ``no certificate``: ``CERTIFY_ROUNDOFF = False``;
* ``no certificate + plain products``: also every ladder product one plain FFT
  convolution clipped at 0 (no tilted recomputation of the far tails);
* ``bare FFTs of the plan``: the lengths the library call transformed (recorded in the
  ``library`` run), each transformed once more on random input with bare ``numpy.fft``
  and nothing else: what the library's own plan costs in pocketfft alone;
* ``floor h=2^a n=N``: :func:`benchmarks.dpsgd_floor_min.floor_epsilon`, one tilted
  uncertified FFT power (its own discretisation included);
* ``opacus``: ``RDPAccountant`` on the same question.

Run from the repository root::

    python -m benchmarks.block37_dpsgd_parts --rows 1e4 1e6 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ROWS = {"1e4": (0.01, 1.1, 10_000), "1e6": (0.004, 0.8, 1_000_000)}
#: session 27's floors (log2 step, length): within the bracket's width / within 2e-6
FLOORS = {"1e4": [(-13, 61_440), (-14, 122_880)], "1e6": [(-12, 122_880), (-14, 786_432)]}
TARGET = {"1e4": 5.1926, "1e6": 61.838}

_HEAD = """
import sys, time, json
q, s, t = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
"""

_DPACCT = _HEAD + """
from dpacct.accountant import compose, poisson_subsample
from dpacct.mechanisms import GaussianMechanism
import dpacct.accountant.pld.pld_fft as _pf
import dpacct.accountant.pld.twoscale as _ts
import dpacct.accountant.pld.spectral_parts as _sp
import dpacct.accountant.pld.groups as _gr
import dpacct.accountant.transformers.compose as _co
LOG = {"fft": [], "fft_cpu": 0.0, "disc_cpu": 0.0, "ladder_cpu": 0.0}
def _wrap(f, kind):
    def g(x, n, *a, **k):
        t0 = time.process_time(); r = f(x, n, *a, **k); LOG["fft_cpu"] += time.process_time() - t0
        LOG["fft"].append((kind, int(n))); return r
    return g
if "{variant}" == "library":
    _pf._rfft = _wrap(_pf._rfft, "r"); _pf._irfft = _wrap(_pf._irfft, "i")
    _sp._rfft = _pf._rfft; _gr._rfft = _pf._rfft
    def _timed(f, key):
        def g(*a, **k):
            t0 = time.process_time(); r = f(*a, **k); LOG[key] += time.process_time() - t0
            return r
        return g
    _co.discretize_split = _timed(_co.discretize_split, "disc_cpu")
    _co.self_compose_split = _timed(_co.self_compose_split, "ladder_cpu")
if "{variant}" in ("nocert", "plain"):
    _pf.CERTIFY_ROUNDOFF = False
if "{variant}" == "plain":
    import numpy as _np
    def _plain(a, b, tail=0.0):
        return _np.maximum(_pf._fft_convolve(a, b, a is b), 0.0)
    _pf._accurate_convolve = _plain
m = compose([poisson_subsample(GaussianMechanism(sigma=s), sample_rate=q)], counts=[t])
c0 = time.process_time()
r = m.epsilon(1e-5)
c1 = time.process_time()
LOG.update(cpu=c1 - c0, answer=float(r))
print(json.dumps(LOG))
"""

_BARE = _HEAD + """
import numpy as np
plan = json.loads(sys.argv[4])
rng = np.random.default_rng(1)
xs = {n: rng.random(n) for _, n in plan}
specs = {n: np.fft.rfft(xs[n], n) for n in xs}  # inputs prepared before the clock
c0 = time.process_time()
for kind, n in plan:
    if kind == "r":
        np.fft.rfft(xs[n], n)
    else:
        np.fft.irfft(specs[n], n)
c1 = time.process_time()
print(json.dumps({"cpu": c1 - c0, "answer": None}))
"""

_FLOOR = _HEAD + """
import numpy, scipy.special  # imported before the clock, as the library's are
from benchmarks.dpsgd_floor_min import floor_epsilon
h, n, target = 2.0 ** int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
c0 = time.process_time()
r = floor_epsilon(q, s, t, h, n, target)
c1 = time.process_time()
print(json.dumps({"cpu": c1 - c0, "answer": float(r)}))
"""

_OPACUS = _HEAD + """
from opacus.accountants import RDPAccountant
c0 = time.process_time()
a = RDPAccountant(); a.history = [(s, q, t)]
r = a.get_epsilon(1e-5)
c1 = time.process_time()
print(json.dumps({"cpu": c1 - c0, "answer": float(r)}))
"""


def _child(src: str, args: list[str]) -> dict:
    out = subprocess.run([sys.executable, "-c", src, *args], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(tag: str, rounds: int) -> dict[str, list[dict]]:
    """Every variant of row ``tag`` once per round, alternated; the raw records."""
    q, s, t = ROWS[tag]
    base = [repr(q), repr(s), str(t)]
    res: dict[str, list[dict]] = {}
    for _ in range(rounds):
        for v in ("library", "nocert", "plain"):
            res.setdefault(v, []).append(_child(_DPACCT.replace("{variant}", v), base))
        plan = res["library"][-1]["fft"]
        res.setdefault("bare FFTs of the plan", []).append(
            _child(_BARE, [*base, json.dumps(plan)]))
        for a, n in FLOORS[tag]:
            res.setdefault(f"floor h=2^{a} n={n}", []).append(
                _child(_FLOOR, [*base, str(a), str(n), repr(TARGET[tag])]))
        res.setdefault("opacus", []).append(_child(_OPACUS, base))
    return res


def main(argv: list[str] | None = None) -> int:
    """Print one table per row: variant, median CPU, answer."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.block37_dpsgd_parts")
    p.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", help="write the raw records here")
    a = p.parse_args(argv)
    allres = {}
    for tag in a.rows:
        res = run(tag, a.rounds)
        allres[tag] = res
        lib = res["library"]
        print(f"\nT {tag}: q, sigma, T = {ROWS[tag]}")
        print("| variant | median CPU s | all CPU s | answer |")
        print("| --- | --- | --- | --- |")
        for v, recs in res.items():
            cpus = [r["cpu"] for r in recs]
            print(f"| {v} | {statistics.median(cpus):.4f} | "
                  f"{' / '.join(f'{c:.4f}' for c in cpus)} | {recs[-1]['answer']} |")
        plan = lib[-1]["fft"]
        sizes = sorted({n for _, n in plan})
        print(f"library: {len(plan)} transforms ({sum(k == 'r' for k, _ in plan)} forward), "
              f"lengths {sizes[0]}..{sizes[-1]}, sum of lengths {sum(n for _, n in plan)}; "
              f"inside the call: FFT CPU median "
              f"{statistics.median(r['fft_cpu'] for r in lib):.4f} s, discretisation "
              f"{statistics.median(r['disc_cpu'] for r in lib):.4f} s (the one-step grids), "
              f"the ladder (self_compose_split, FFTs included) "
              f"{statistics.median(r['ladder_cpu'] for r in lib):.4f} s")
    if a.json:
        Path(a.json).write_text(json.dumps(allres))
    return 0


if __name__ == "__main__":
    sys.exit(main())
