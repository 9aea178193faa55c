"""Independent values for the Poisson-subsampled Gaussian (DP-SGD) used by several tests.

Nothing here calls dpacct: each value comes from a closed form evaluated with scipy or
mpmath, so a test comparing the library against it cannot be true by construction.

* :func:`sum_statistic_epsilon_lower` -- a sound LOWER bound on the epsilon of ``steps``
  compositions of the subsampled Gaussian: the hypothesis test that thresholds the sum of
  all released values.  Post-processing cannot increase privacy loss, so every threshold
  ``t`` gives ``epsilon >= log(P(S > t) - delta) - log Q(S > t)`` (the hockey-stick
  divergence of the pair is at least that of the pair of laws of ``S``).  Under the
  neighbour without the record ``S ~ N(0, steps sigma^2)``; with it, ``S`` is a mixture
  over ``K ~ Binomial(steps, q)`` of ``N(K, steps sigma^2)``.
* :func:`rdp_epsilon_upper` -- a sound UPPER bound: the RDP of one step at integer orders
  by the binomial expansion of Mironov, Talwar & Zhang 2019 (Section 3.3) in mpmath,
  composed additively, converted by Canonne, Kamath & Steinke 2020, Proposition 12.
"""

from __future__ import annotations

import math

import numpy as np
from oracles import subsampled_gaussian_rdp
from scipy import stats


def sum_statistic_epsilon_lower(q: float, sigma: float, steps: int, delta: float) -> float:
    """Largest epsilon certified by thresholding the sum of the outputs (a lower bound)."""
    k = np.arange(stats.binom.ppf(1e-15, steps, q), stats.binom.isf(1e-15, steps, q) + 1)
    w = stats.binom.pmf(k, steps, q)
    scale = sigma * math.sqrt(steps)
    t = np.linspace(k[0], k[-1] + 10 * scale, 2001)
    # P(S > t) as the mixture over K (in blocks of K to bound the memory); the mass of K
    # outside the range is < 2e-15 and only lowers P, so the bound stays a lower bound
    p_tail = np.zeros_like(t)
    for i in range(0, k.size, 1000):
        kb, wb = k[i : i + 1000, None], w[i : i + 1000, None]
        p_tail += (wb * stats.norm.sf((t[None, :] - kb) / scale)).sum(axis=0)
    log_q_tail = stats.norm.logsf(t / scale)
    ok = p_tail > delta
    return float(np.max(np.log(p_tail[ok] - delta) - log_q_tail[ok]))


def rdp_epsilon_upper(
    q: float, sigma: float, steps: int, delta: float, max_order: int = 256
) -> float:
    """Epsilon from the integer-order RDP curve of ``steps`` compositions (an upper bound)."""
    best = math.inf
    for a in range(2, max_order + 1):
        r = steps * subsampled_gaussian_rdp(q, sigma, a)
        # Canonne, Kamath & Steinke 2020, Proposition 12
        eps = r + math.log1p(-1 / a) - (math.log(delta) + math.log(a)) / (a - 1)
        best = min(best, eps)
    return max(best, 0.0)


def dp_accounting_epsilon(phases, delta: float, interval: float, pessimistic: bool) -> float:
    """dp_accounting's PLD epsilon of DP-SGD phases ``(sigma, q, count)``, unrounded: its
    own discretisation (connect-the-dots when pessimistic), self-composition and
    composition, both directions.  Pessimistic is above the true epsilon, optimistic
    below it (a peer's value, not dpacct's; skips the test without dp_accounting)."""
    import logging

    import pytest

    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as pldm

    logging.getLogger().setLevel(logging.ERROR)  # its optimistic connect-dots notice
    out = None
    for sigma, q, count in phases:
        pld = pldm.from_gaussian_mechanism(
            standard_deviation=sigma,
            sampling_prob=q,
            value_discretization_interval=interval,
            pessimistic_estimate=pessimistic,
            use_connect_dots=pessimistic,
        )
        pld = pld.self_compose(count) if count > 1 else pld
        out = pld if out is None else out.compose(pld)
    return float(out.get_epsilon_for_delta(delta))
