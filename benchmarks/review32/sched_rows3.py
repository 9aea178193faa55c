# ruff: noqa: E402
"""ledger epsilon at deltas 1e-3..1e-7 and delta(eps) on seeded phase schedules."""

import json
import sys
import time
import warnings

warnings.simplefilter("ignore")
import numpy as np

from dpacct.accountant import PrivacyAccountant

n_runs = int(sys.argv[1])
seed = int(sys.argv[2])
rng = np.random.default_rng(seed)
res = {}
for i in range(n_runs):
    nph = int(rng.integers(3, 120))
    k = int(rng.integers(2, 21))
    lo_s, hi_s = sorted(rng.uniform(0.6, 3.0, 2))
    lq = sorted(rng.uniform(np.log(5e-4), np.log(0.05), 2))
    sig = rng.uniform(lo_s, hi_s, nph)
    q = np.exp(rng.uniform(lq[0], lq[1], nph))
    sched = [(float(a), float(b), k) for a, b in zip(sig, q, strict=False)]
    rec = {"shape": [nph, k, float(lo_s), float(hi_s), float(np.exp(lq[0])), float(np.exp(lq[1]))]}
    t0 = time.process_time()
    for d in (1e-3, 1e-5, 3e-6, 1e-6, 9e-7, 1e-7):
        a = PrivacyAccountant(
            progress=False
        )  # a fresh ledger per delta: its first question sets its step
        for s, qq, kk in sched:
            a.step(noise_multiplier=s, sample_rate=qq, count=kk)
        rec[f"eps{d:g}"] = float(a.epsilon(d))
    a = PrivacyAccountant(progress=False)
    for s, qq, kk in sched:
        a.step(noise_multiplier=s, sample_rate=qq, count=kk)
    rec["d0.5"] = float(a.delta(0.5))
    rec["d2"] = float(a.delta(2.0))
    rec["eps1e-5_after"] = float(a.epsilon(1e-5))
    rec["eps1e-9_after"] = float(a.epsilon(1e-9))
    rec["cpu"] = time.process_time() - t0
    res[f"s{seed}_{i}"] = rec
    print(i, json.dumps(rec), file=sys.stderr, flush=True)
print(json.dumps(res))
