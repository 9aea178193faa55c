# ruff: noqa: E402
"""usage: sched_lower_direct.py N [INTERVAL]: ws32-schedbr's lower end on optimistic fine groups
(fast_epsilon_bounds(..., lower_factor=K, upper=False)) at every (step, K) on small seeded phase
schedules, against the plain lower end at the same step, the fast path's upper end and
dp_accounting 0.6.0's pessimistic PLD at INTERVAL (above the truth). JSON lines."""

import json
import sys
import time
import warnings

warnings.simplefilter("ignore")
import numpy as np

sys.path.insert(0, "tests")
from sgm_oracles import dp_accounting_epsilon

from dpacct.accountant.pld.schedule import fast_epsilon_bounds

n = int(sys.argv[1])
interval = float(sys.argv[2]) if len(sys.argv) > 2 else 1e-6
rng = np.random.Generator(np.random.PCG64(3235))
for i in range(n):
    nph = int(rng.integers(2, 5))
    k = int(rng.integers(2, 12))
    sig = rng.uniform(0.9, 3.0, nph)
    q = np.exp(rng.uniform(np.log(1e-3), np.log(0.05), nph))
    d = [1e-5, 1e-4, 1e-3][i % 3]
    ph = [(float(a), float(b), k) for a, b in zip(sig, q, strict=True)]
    t0 = time.process_time()
    rec = {"i": i, "delta": d, "phases": ph}
    rec["hi"] = float(fast_epsilon_bounds(ph, d, lower=False)[1])
    rows = []
    for h in (1e-3, 5e-4, 2.5e-4):
        plain = fast_epsilon_bounds(ph, d, step=h, upper=False)
        for kk in (2, 4, 8, 16):
            r = fast_epsilon_bounds(ph, d, step=h, lower_factor=kk, upper=False)
            rows.append([h, kk, None if plain is None else float(plain[0]),
                         None if r is None else float(r[0])])
    rec["lows"] = rows
    rec["cpu_ours"] = time.process_time() - t0
    rec["pess"] = dp_accounting_epsilon(ph, d, interval, True)
    rec["cpu"] = time.process_time() - t0
    print(json.dumps(rec), flush=True)
