# ruff: noqa: E402
"""epsilon and epsilon_bounds on DP-SGD rows (fixed + seeded random) and other compositions."""

import json
import sys
import warnings

warnings.simplefilter("ignore")
import numpy as np

import dpacct as dp
from dpacct.accountant import PrivacyAccountant

rows = [
    (0.01, 1.1, 10_000, 1e-5),
    (0.004, 0.8, 1_000_000, 1e-5),
    (0.1, 2.0, 300, 1e-9),
    (0.01, 1.1, 1, 1e-5),
    (0.01, 1.1, 2, 1e-5),
    (0.5, 1.0, 2, 1e-5),
    (0.9, 0.6, 2, 1e-8),
    (1e-4, 0.4, 1, 1e-6),
    (0.3, 1.5, 1, 1e-10),
    (1.0, 4.0, 10, 1e-5),
    (0.01, 1.1, 10_000, 1e-12),
    (0.01, 1.1, 10_000, 1e-3),
    (0.001, 0.7, 100_000, 1e-7),
]
rng = np.random.default_rng(31)
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 30):
    q = float(np.exp(rng.uniform(np.log(1e-4), np.log(0.9))))
    s = float(rng.uniform(0.4, 5.0))
    T = int(np.exp(rng.uniform(0, np.log(3e5))))
    d = float(10 ** rng.uniform(-12, -2))
    rows.append((q, s, T, d))
out = []
for q, s, T, d in rows:
    run = dp.compose(
        [dp.poisson_subsample(dp.GaussianMechanism(sigma=s), sample_rate=q)], counts=[T]
    )
    rec = {"row": ["dpsgd", q, s, T, d]}
    try:
        lo, hi = run.epsilon_bounds(d)
        rec["lo"], rec["hi"] = float(lo), float(hi)
        rec["eps"] = float(run.epsilon(d))
    except Exception as e:
        rec["err"] = repr(e)[:200]
    out.append(rec)
others = {
    "laplace x50": lambda: dp.compose([dp.LaplaceMechanism(b=10.0)], counts=[50]),
    "sub laplace": lambda: dp.compose(
        [dp.poisson_subsample(dp.LaplaceMechanism(b=2.0), sample_rate=0.05)], counts=[500]
    ),
    "gauss+laplace": lambda: dp.compose(
        [dp.GaussianMechanism(sigma=5.0), dp.LaplaceMechanism(b=20.0)], counts=[10, 10]
    ),
    "two sgm": lambda: dp.compose(
        [
            dp.poisson_subsample(dp.GaussianMechanism(sigma=1.0), sample_rate=0.01),
            dp.poisson_subsample(dp.GaussianMechanism(sigma=2.0), sample_rate=0.05),
        ],
        counts=[500, 300],
    ),
}
for name, mk in others.items():
    for d in (1e-5, 1e-10):
        rec = {"row": [name, d]}
        try:
            m = mk()
            lo, hi = m.epsilon_bounds(d)
            rec["lo"], rec["hi"] = float(lo), float(hi)
        except Exception as e:
            rec["err"] = repr(e)[:200]
        out.append(rec)


def ledger(kind):
    a = PrivacyAccountant(progress=False)
    if kind == "smallq":
        for t in range(300):
            a.step(noise_multiplier=1.0 + 0.001 * t, sample_rate=1e-4 * (1 + t % 5))
    else:
        for t in range(500):
            a.step(noise_multiplier=1.5 * 0.999**t, sample_rate=0.02)
    return a


for kind in ("smallq", "decay"):
    a = ledger(kind)
    for d in (1e-5, 1e-9):
        rec = {"row": ["ledger " + kind, d]}
        try:
            lo, hi = a.epsilon_bounds(d)
            rec["lo"], rec["hi"] = float(lo), float(hi)
        except Exception as e:
            rec["err"] = repr(e)[:200]
        out.append(rec)
print(json.dumps(out))
