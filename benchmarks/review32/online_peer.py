# ruff: noqa: E402
"""usage: online_peer.py ours|peer N STEPS [INTERVAL]: seeded decaying / stepped online histories
(STEPS steps each). ours: the online ledger's epsilon(1e-5) every 50 steps (run under
runin.py for a checkout); peer: dp_accounting 0.6.0's optimistic PLD at INTERVAL (below the
truth) at the last step. JSON lines."""

import json
import sys
import time
import warnings

warnings.simplefilter("ignore")
import numpy as np


def histories(n, steps):
    rng = np.random.Generator(np.random.PCG64(3236))
    out = []
    for _ in range(n):
        s0 = float(rng.uniform(0.9, 2.5))
        rate = float(rng.uniform(0.9990, 0.99995))
        q = float(np.exp(rng.uniform(np.log(3e-3), np.log(0.05))))
        jump = int(rng.integers(steps // 4, steps))  # q doubles there
        out.append([(s0 * rate**t, q * (2.0 if t >= jump else 1.0)) for t in range(steps)])
    return out


mode, n, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
interval = float(sys.argv[4]) if len(sys.argv) > 4 else 5e-5
for i, h in enumerate(histories(n, steps)):
    t0 = time.process_time()
    rec = {"i": i}
    if mode == "ours":
        from dpacct.accountant import PrivacyAccountant

        a = PrivacyAccountant(progress=False)
        r = []
        for t, (s, q) in enumerate(h):
            a.step(noise_multiplier=s, sample_rate=q)
            if (t + 1) % 50 == 0 or t + 1 == len(h):
                r.append(float(a.epsilon(1e-5)))
        rec["eps"] = r
    else:
        sys.path.insert(0, "tests")
        from sgm_oracles import dp_accounting_epsilon

        rec["opt"] = dp_accounting_epsilon([(s, q, 1) for s, q in h], 1e-5, interval, False)
    rec["cpu"] = time.process_time() - t0
    print(json.dumps(rec), flush=True)
