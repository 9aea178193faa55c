# ruff: noqa: E402
"""incremental ledger asked mixed questions vs fresh ledgers asked once."""

import json
import sys
import warnings

warnings.simplefilter("ignore")
import numpy as np

from dpacct.accountant import PrivacyAccountant

seed = int(sys.argv[1])
n = int(sys.argv[2])
rng = np.random.default_rng(seed)
steps = []
s = float(rng.uniform(0.8, 2.5))
qs = [float(x) for x in np.exp(rng.uniform(np.log(2e-3), np.log(0.05), 3))]
for _ in range(n):
    if rng.random() < 0.05:
        s = float(rng.uniform(0.8, 2.5))
    sig = s if rng.random() < 0.5 else s * float(rng.uniform(0.97, 1.03))
    steps.append(
        (sig, qs[int(rng.integers(0, 3))], int(rng.integers(1, 8)) if rng.random() < 0.1 else 1)
    )
qpts = [*sorted(set(int(x) for x in rng.integers(1, n, 6))), n]
kinds = [int(rng.integers(0, 4)) for _ in qpts]


def ask(a, kind):
    if kind == 0:
        return float(a.epsilon(1e-5))
    if kind == 1:
        return float(a.epsilon(1e-9))
    if kind == 2:
        return float(a.delta(1.0))
    return [float(x) for x in a.epsilon_bounds(1e-6)]


a = PrivacyAccountant(progress=False)
got = []
j = 0
for t, (sig, q, c) in enumerate(steps):
    a.step(noise_multiplier=sig, sample_rate=q, count=c)
    if j < len(qpts) and t + 1 == qpts[j]:
        got.append(ask(a, kinds[j]))
        j += 1
bad = []
for p, kind, g in zip(qpts, kinds, got, strict=False):
    f = PrivacyAccountant(progress=False)
    for sig, q, c in steps[:p]:
        f.step(noise_multiplier=sig, sample_rate=q, count=c)
    fr = ask(f, kind)
    if fr != g:
        bad.append([p, kind, g, fr])
print(
    json.dumps(
        {"seed": seed, "n": n, "queries": list(zip(qpts, kinds, got, strict=False)), "bad": bad}
    )
)
