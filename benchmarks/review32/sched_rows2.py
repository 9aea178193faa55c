# ruff: noqa: E402
"""ledger epsilon on seeded phase schedules near the benchmark's shapes."""

import json
import sys
import time
import warnings

warnings.simplefilter("ignore")
import numpy as np

from dpacct.accountant import PrivacyAccountant

n_runs = int(sys.argv[1])
seed = int(sys.argv[2])
bounds = len(sys.argv) > 3
rng = np.random.default_rng(seed)
res = {}
for i in range(n_runs):
    nph = int(rng.integers(3, 300))
    k = int(rng.integers(2, 21))
    lo_s, hi_s = sorted(rng.uniform(0.6, 3.0, 2))
    lq = sorted(rng.uniform(np.log(5e-4), np.log(0.05), 2))
    sig = rng.uniform(lo_s, hi_s, nph)
    q = np.exp(rng.uniform(lq[0], lq[1], nph))
    sched = [(float(a), float(b), k) for a, b in zip(sig, q, strict=False)]
    t0 = time.process_time()
    a = PrivacyAccountant(progress=False)
    for s, qq, kk in sched:
        a.step(noise_multiplier=s, sample_rate=qq, count=kk)
    rec = {"shape": [nph, k, lo_s, hi_s, float(np.exp(lq[0])), float(np.exp(lq[1]))]}
    try:
        rec["eps5"] = float(a.epsilon(1e-5))
        rec["eps9"] = float(a.epsilon(1e-9))
        rec["d1"] = float(a.delta(0.5))
        if bounds:
            rec["lo5"] = float(a.epsilon_bounds(1e-5)[0])
    except Exception as e:
        rec["err"] = repr(e)[:200]
    rec["cpu"] = time.process_time() - t0
    res[f"s{seed}_{i}"] = rec
    print(i, rec, file=sys.stderr, flush=True)
print(json.dumps(res))
