"""DP Theil-Sen against the non-private estimators on the same data.

n = 100 and 1 000: x ~ N(0, 1) declared on [-3, 3] (``out_of_range="clip"``), y = 2 x + 1
+ N(0, 0.5^2), epsilon = 2 split over the two medians, k = 10 matchings; absolute slope
error against the non-private Theil-Sen (scipy) on the same data.
(Moved from the former ``benchmarks/algorithms.py``.)
"""

from __future__ import annotations

import dataclasses

import numpy as np

from benchmarks.algos._common import peer_version, progress, row


def _algorithm():
    from dpacct.mechanisms import DPTheilSen

    names = {f.name for f in dataclasses.fields(DPTheilSen)}
    budget = {"epsilon": 2.0} if "epsilon" in names else {"epsilon0": 2.0}
    return DPTheilSen(**budget, x_lower=-3.0, x_upper=3.0, pred_lower=-10.0,
                      pred_upper=10.0, k=10, out_of_range="clip")


def rows(seeds: int = 100, quick: bool = False) -> list[dict]:
    from scipy.stats import theilslopes

    alg = _algorithm()
    peer = f"scipy {peer_version('scipy')} theilslopes (non-private)"
    out = []
    for n in ((100,) if quick else (100, 1000)):
        rng = np.random.default_rng(n)
        ours, theirs = [], []
        for _ in progress(range(seeds), desc=f"Theil-Sen n={n}"):
            x = rng.normal(size=n)
            y = 2.0 * x + 1.0 + rng.normal(0.0, 0.5, size=n)
            ours.append(abs(alg.fit(x, y, rng=rng).slope - 2.0))
            theirs.append(abs(theilslopes(y, x)[0] - 2.0))
        out.append(row(f"DP Theil-Sen, n = {n}, eps 2, k = 10", "|slope - 2| (lower is better)",
                       ours, peer, theirs,
                       why="the peer is the non-private estimator: the gap is the noise "
                           "that epsilon = 2 costs"))
    return out
