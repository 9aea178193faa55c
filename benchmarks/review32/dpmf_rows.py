# ruff: noqa: E402
"""usage: dpmf_rows.py [N]: bandmf_balls_in_bins epsilon(1e-5) and delta(1) on small seeded configs
(two to four bands, k 2..12), run under runin.py for a checkout. JSON."""

import json
import math
import sys
import time
import warnings

warnings.simplefilter("ignore")
import numpy as np

from dpacct.mechanisms.algorithms.bandmf_balls_in_bins import bandmf_balls_in_bins

rng = np.random.Generator(np.random.PCG64(3237))
out = []
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 8):
    bands = int(rng.integers(2, 5))
    col = np.sort(rng.uniform(0.1, 1.0, bands))[::-1]
    col = col / math.sqrt(float(col @ col))
    k = int(rng.integers(2, 13))
    n = k * int(rng.integers(2, 6)) + int(rng.integers(0, k))
    sigma = float(rng.uniform(1.0, 4.0))
    t0 = time.process_time()
    m = bandmf_balls_in_bins(sigma, n, cycle_length=k, strategy=[float(c) for c in col])
    rec = {"bands": bands, "k": k, "n": n, "sigma": sigma, "col": [float(c) for c in col],
           "eps": float(m.epsilon(1e-5)), "d1": float(m.delta(1.0))}
    rec["cpu"] = time.process_time() - t0
    out.append(rec)
    print(json.dumps(rec), flush=True)
