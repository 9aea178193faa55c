# ruff: noqa: E402
"""Review 32 reproducer: one seeded decaying history (online_peer.py's history 1) read every 50
steps; run under runin.py for old main and for ws32-online, and compare the lines."""

import json
import sys
import warnings

warnings.simplefilter("ignore")
import numpy as np

from dpacct.accountant import PrivacyAccountant

rng = np.random.Generator(np.random.PCG64(3236))
for _ in range(2):
    s0 = float(rng.uniform(0.9, 2.5))
    rate = float(rng.uniform(0.9990, 0.99995))
    q = float(np.exp(rng.uniform(np.log(3e-3), np.log(0.05))))
    jump = int(rng.integers(1500 // 4, 1500))
print(json.dumps({"s0": s0, "rate": rate, "q": q, "jump": jump}), file=sys.stderr)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
a = PrivacyAccountant(progress=False)
for t in range(steps):
    a.step(noise_multiplier=s0 * rate**t, sample_rate=q * (2.0 if t >= jump else 1.0))
    if (t + 1) % 50 == 0 and t + 1 >= 1150:
        print(t + 1, repr(float(a.epsilon(1e-5))))
