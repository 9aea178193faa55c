# ruff: noqa: E402
"""ledger answers on heterogeneous schedules (seeded) and constant-sigma rows."""

import json
import sys
import time
import warnings

warnings.simplefilter("ignore")
import numpy as np

from dpacct.accountant import PrivacyAccountant


def scheds():
    rng = np.random.default_rng(3132)
    out = {}
    out["const 1.1 q0.01 x2000"] = [(1.1, 0.01, 2000)]
    out["const 0.8 q0.004 x5000 per-step"] = [(0.8, 0.004, 1)] * 5000
    out["const 2.0 q0.05 x300 per-step"] = [(2.0, 0.05, 1)] * 300
    out["two phases"] = [(1.0, 0.01, 500), (2.0, 0.02, 500)]
    out["near-const jitter"] = [
        (float(1.1 * (1 + 1e-6 * rng.standard_normal())), 0.01, 1) for _ in range(1000)
    ]
    out["decay 1.2*0.995^t q0.02 x128"] = [(1.2 * 0.995**t, 0.02, 1) for t in range(128)]
    out["decay 2*0.9999^t x1000"] = [(2.0 * 0.9999**t, 0.01, 1) for t in range(1000)]
    for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else 8):
        nph = int(rng.integers(2, 200))
        k = int(rng.integers(1, 30))
        sig = rng.uniform(0.6, 3.0, nph)
        q = np.exp(rng.uniform(np.log(1e-3), np.log(0.2), nph))
        out[f"random{i} {nph}x{k}"] = [
            (float(a), float(b), k) for a, b in zip(sig, q, strict=False)
        ]
    return out


res = {}
for name, sched in scheds().items():
    t0 = time.process_time()
    a = PrivacyAccountant(progress=False)
    for s, q, k in sched:
        a.step(noise_multiplier=s, sample_rate=q, count=k)
    rec = {}
    try:
        rec["eps5"] = float(a.epsilon(1e-5))
        rec["eps9"] = float(a.epsilon(1e-9))
        lo, hi = a.epsilon_bounds(1e-5)
        rec["lo5"], rec["hi5"] = float(lo), float(hi)
        rec["d1"] = float(a.delta(1.0))
    except Exception as e:
        rec["err"] = repr(e)[:200]
    rec["cpu"] = time.process_time() - t0
    res[name] = rec
    print(name, rec, file=sys.stderr, flush=True)
print(json.dumps(res))
