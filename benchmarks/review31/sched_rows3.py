# ruff: noqa: E402
"""ledger epsilon at deltas 1e-3..1e-7 and delta(eps) on seeded phase schedules."""

import json
import sys
import time
import warnings

warnings.simplefilter("ignore")
import numpy as np
from phase_schedules import seeded_phase_schedule  # this folder (run as a script)

from dpacct.accountant import PrivacyAccountant

n_runs = int(sys.argv[1])
seed = int(sys.argv[2])
rng = np.random.default_rng(seed)
res = {}
for i in range(n_runs):
    sched, shape = seeded_phase_schedule(rng, 120)
    rec = {"shape": shape}
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
