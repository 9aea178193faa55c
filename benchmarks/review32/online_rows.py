# ruff: noqa: E402
"""online ledger readings: decaying loop, random schedules with mixed queries, budgets."""

import json
import sys
import warnings

warnings.simplefilter("ignore")
import numpy as np

from dpacct.accountant import BudgetExceededError, PrivacyAccountant

out = {}
which = sys.argv[1:] or ["decay", "random", "budget"]


def f(x):
    return float(x) if np.ndim(x) == 0 else [float(v) for v in x]


if "decay" in which:
    a = PrivacyAccountant(progress=False)
    r = []
    for t in range(10_000):
        a.step(noise_multiplier=2.0 * 0.9999**t, sample_rate=0.01)
        if (t + 1) % 100 == 0:
            r.append(float(a.epsilon(1e-5)))
    out["decay"] = r
    a = PrivacyAccountant(progress=False)
    r = []
    for t in range(3_000):
        a.step(noise_multiplier=1.0, sample_rate=0.01)
        if (t + 1) % 100 == 0:
            r.append(float(a.epsilon(1e-5)))
    out["constant"] = r
if "random" in which:
    rng = np.random.default_rng(3131)
    for run in range(8):
        a = PrivacyAccountant(progress=False)
        r = []
        n = int(rng.integers(50, 1500))
        s = float(rng.uniform(0.7, 3.0))
        qs = [float(x) for x in np.exp(rng.uniform(np.log(1e-3), np.log(0.1), 3))]
        for t in range(n):
            if rng.random() < 0.05:
                s = float(rng.uniform(0.7, 3.0))
            mode = rng.integers(0, 3)
            sig = s if mode == 0 else s * float(rng.uniform(0.95, 1.05))
            cnt = int(rng.integers(1, 20)) if rng.random() < 0.1 else 1
            a.step(noise_multiplier=sig, sample_rate=qs[int(rng.integers(0, 3))], count=cnt)
            if rng.random() < 0.03 or t == n - 1:
                kind = int(rng.integers(0, 4))
                try:
                    if kind == 0:
                        r.append(["eps", t, f(a.epsilon(1e-5))])
                    elif kind == 1:
                        r.append(["eps8", t, f(a.epsilon(1e-8))])
                    elif kind == 2:
                        r.append(["delta", t, f(a.delta(1.0))])
                    else:
                        r.append(["bounds", t, f(a.epsilon_bounds(1e-6))])
                except Exception as e:
                    r.append(["err", t, repr(e)[:150]])
        out[f"random{run}"] = r
if "budget" in which:
    for b in (2.0, 3.0, 4.5):
        a = PrivacyAccountant(budget_epsilon=b, budget_delta=1e-5, progress=False)
        r = []
        refused = []
        for t in range(10_000):
            try:
                a.step(noise_multiplier=2.0 * 0.9999**t, sample_rate=0.01)
            except BudgetExceededError:
                refused.append(t)
                if len(refused) >= 3:
                    break
                continue
            if (t + 1) % 100 == 0:
                r.append(float(a.epsilon(1e-5)))
        r.append(float(a.epsilon(1e-5)))
        # after refusals, tiny steps may still be accepted
        acc = 0
        for _k in range(50):
            try:
                a.step(noise_multiplier=5.0, sample_rate=1e-3)
                acc += 1
            except BudgetExceededError:
                break
        out[f"budget{b}"] = {
            "readings": r,
            "refused": refused,
            "tiny_accepted": acc,
            "final": float(a.epsilon(1e-5)),
            "steps": a.steps,
        }
print(json.dumps(out))
