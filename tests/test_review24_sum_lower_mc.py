"""Review 24 (issue 39): the searched sum-statistic lower end against the exact pair.

ws24-k3low searches the statistic's parameter ``c`` (``sum_statistic_lower_epsilon``
at ``k >= 2``, up to 300 steps) and keeps the largest lower end.  Every ``c`` gives a
post-processing of the mechanism's pair, so the largest must stay at or below the
mechanism's true epsilon.  At sigma 1, T 10, k 3, delta 1e-3 the searched end (3.535570)
lies within about 1.5 % in delta of the truth (two 1.5e6-draw runs: delta_true at it
1.0106e-3 and 1.0172e-3), so a certificate that moved it up by 1 % in epsilon would put
it above the truth by about 9 % in delta.

The independent side: the remove direction ``E_Q[(Lambda - e^eps)_+]`` of the exact
pair, ``Lambda = e_3(z) / C(10, 3)``, ``z_t = exp((x_t - 1/2) / sigma^2)``, sampled
from an equal mixture of ``P`` with the record's three coordinates shifted by
``a`` in (1, 1.5, 2) (density ratio to ``Q``: the mixture's ``e_3(z^(a)) / C(10, 3)``)
with an explicit ``numpy.random.Generator``.  The lower end is unsound if the 99.9 %
upper end of ``delta_true`` there is below delta.  The bar: main's (90c93e7) lower end,
which a larger set of statistics may only raise.
"""

from __future__ import annotations

import math

import numpy as np
from test_review24_k4_law_t100_mc import _log_e  # e_j by the same recurrence

from dpacct.accountant.transformers.random_allocation_sum_lower import (
    sum_statistic_lower_epsilon,
)

SIGMA, T, K, DELTA = 1.0, 10, 3, 1e-3
#: main's (90c93e7) sum_statistic_lower_epsilon(1.0, 10, 1e-3, k=3)
MAIN_LOWER = 3.530649185468451
SHIFTS = (1.0, 1.5, 2.0)


def _mc_upper(eps: float, n: int, rng: np.random.Generator) -> float:
    """The 99.9 % upper end of the remove direction's delta at ``eps``."""
    lc = math.log(math.comb(T, K))
    a = np.array(SHIFTS)
    x = rng.normal(0.0, SIGMA, (n, T))
    idx = np.argsort(rng.random((n, T)), axis=1)[:, :K]
    x[np.arange(n)[:, None], idx] += a[rng.integers(0, a.size, n)][:, None]
    log_lr = _log_e((x - 0.5) / SIGMA**2, K)[:, K] - lc
    log_dens = np.logaddexp.reduce(
        [_log_e((s * x - 0.5 * s * s) / SIGMA**2, K)[:, K] - lc for s in a], axis=0
    ) - math.log(a.size)
    v = np.maximum(np.exp(log_lr - log_dens) - np.exp(eps - log_dens), 0.0)
    return float(v.mean() + 3.2905 * v.std() / math.sqrt(n))


def test_searched_lower_end_is_below_the_exact_pair_and_not_below_mains():
    lo = sum_statistic_lower_epsilon(SIGMA, T, DELTA, k=K)
    assert lo >= MAIN_LOWER * (1 - 1e-12)
    top = _mc_upper(lo, 200_000, np.random.Generator(np.random.PCG64(2424)))
    assert top >= DELTA, (lo, top)
