# ruff: noqa: E402
"""ledger epsilon on seeded phase schedules near the benchmark's shapes."""

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
bounds = len(sys.argv) > 3
rng = np.random.default_rng(seed)
res = {}
for i in range(n_runs):
    sched, shape = seeded_phase_schedule(rng, 300)
    t0 = time.process_time()
    a = PrivacyAccountant(progress=False)
    for s, qq, kk in sched:
        a.step(noise_multiplier=s, sample_rate=qq, count=kk)
    rec = {"shape": shape}
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
