# ruff: noqa: E402
"""usage: sched_peer.py ours|peer N [INTERVAL [small [ROWS]]]: seeded random phase schedules
(the lower end's fine-group rule applies: >= 2 phases, >= 2 steps each, delta 1e-5 / 1e-6),
the ledger's default bracket (ours, run under runin.py for a checkout) or dp_accounting 0.6.0's
pessimistic and optimistic PLD at INTERVAL (peer). JSON lines."""

import json
import sys
import time
import warnings

warnings.simplefilter("ignore")
import numpy as np


def schedules(n):
    rng = np.random.Generator(np.random.PCG64(3232 if SMALL is None else 3233))
    out = []
    for i in range(n):
        nph = int(rng.integers(2, 25 if SMALL is None else 5))
        k = int(rng.integers(2, 40 if SMALL is None else 12))
        sig = rng.uniform(0.6, 3.0, nph)
        q = np.exp(rng.uniform(np.log(1e-3), np.log(0.05 if SMALL is None else 0.02), nph))
        d = [1e-5, 1e-6, 1e-3][i % 3]
        out.append((d, [(float(a), float(b), k) for a, b in zip(sig, q, strict=True)]))
    return out


mode, n = sys.argv[1], int(sys.argv[2])
interval = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-5
SMALL = sys.argv[4] if len(sys.argv) > 4 else None  # "small": 2-4 phases of 2-11 steps
ONLY = {int(v) for v in sys.argv[5].split(",")} if len(sys.argv) > 5 else None
for i, (d, ph) in enumerate(schedules(n)):
    if ONLY is not None and i not in ONLY:
        continue
    t0 = time.process_time()
    rec = {"i": i, "delta": d, "phases": len(ph), "k": ph[0][2]}
    if mode == "ours":
        from dpacct.accountant import PrivacyAccountant

        a = PrivacyAccountant(progress=False)
        for s, q, c in ph:
            a.step(noise_multiplier=s, sample_rate=q, count=c)
        lo, hi = a.epsilon_bounds(d)
        rec["lo"], rec["hi"], rec["eps"] = float(lo), float(hi), float(a.epsilon(d))
    else:
        sys.path.insert(0, "tests")
        from sgm_oracles import dp_accounting_epsilon

        rec["pess"] = dp_accounting_epsilon(ph, d, interval, True)
        rec["opt"] = dp_accounting_epsilon(ph, d, interval, False)
    rec["cpu"] = time.process_time() - t0
    print(json.dumps(rec), flush=True)
