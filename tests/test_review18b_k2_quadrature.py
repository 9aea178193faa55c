"""Review 18b (issue 39): 2-of-3 random allocation against an exact quadrature.

No finding: these are the review's passing checks, kept as regressions because the
module's own tests (tests/test_random_allocation_k2.py) check sigma = 1 only, by Monte
Carlo.  The independent value: with ``Y_t = exp((x_t - 1/2) / sigma^2)`` and
``Lambda = (Y_1 Y_2 + Y_3 (Y_1 + Y_2)) / 3`` (the exact likelihood ratio of one epoch),
``Lambda - gamma`` is linear in ``Y_3``, so ``E_Q[(Lambda - gamma)_+]`` and
``E_Q[(1 - gamma Lambda)_+]`` are a log-normal call and put in ``Y_3`` (closed form),
integrated over ``(x_1, x_2)`` by a trapezoid rule on ``[-15, 15]^2`` standard
deviations (step 0.04: converged to 1e-5 relative at delta 1e-9, measured against step
0.02).  Nothing here is taken from dpacct.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from dpacct.accountant import random_allocation
from dpacct.accountant.transformers.random_allocation_k2 import AllocationK2Remove
from dpacct.mechanisms import GaussianMechanism


def _exact_t3(sigma: float, eps: np.ndarray, step: float = 0.04) -> np.ndarray:
    """``[(remove, add)]`` deltas of the exact 2-of-3 pair at each epsilon."""
    z = np.arange(-15.0, 15.0 + step / 2, step)
    w = np.exp(-0.5 * z * z)
    w /= w.sum()
    s, m = 1.0 / sigma, -0.5 / sigma**2
    y = np.exp(m + s * z)
    y1, y2 = y[:, None], y[None, :]
    total, prod, weight = y1 + y2, y1 * y2, np.outer(w, w)
    out = []
    for e in np.atleast_1d(eps):
        g = math.exp(float(e))
        with np.errstate(all="ignore"):
            c = (3 * g - prod) / total
            d2 = (m - np.log(c)) / s
            call = np.where(c > 0, special.ndtr(d2 + s) - c * special.ndtr(d2), 1 - c)
            cp = (3 / g - prod) / total
            d2 = (m - np.log(cp)) / s
            put = np.where(cp > 0, cp * special.ndtr(-d2) - special.ndtr(-d2 - s), 0.0)
        out.append((float(np.sum(weight * total / 3 * call)),
                    float(np.sum(weight * g * total / 3 * put))))
    return np.array(out)


def _check(sigma: float, eps: np.ndarray, deltas: list[float]) -> None:
    exact = _exact_t3(sigma, eps)
    rem = np.asarray(AllocationK2Remove(sigma, 3, progress=False).delta(eps))
    ra = random_allocation(GaussianMechanism(sigma), 3, k=2)
    both = np.asarray(ra.delta(eps))
    assert np.all(rem >= exact[:, 0] * (1 - 1e-4)), (rem, exact[:, 0])
    assert np.all(both >= exact.max(axis=1) * (1 - 1e-4)), (both, exact)
    for d in deltas:
        # the bracket holds the exact epsilon: exact delta at its lower end >= d >= at
        # its upper end (delta decreases in epsilon)
        lo, hi = map(float, ra.epsilon_bounds(d))
        at_lo, at_hi = _exact_t3(sigma, [lo, hi]).max(axis=1)
        assert at_lo >= d * (1 - 1e-4) and at_hi <= d * (1 + 1e-4), (d, lo, at_lo, hi, at_hi)


def test_sigma_3_both_directions_and_the_bracket_hold_the_exact_values():
    # measured (the review): remove bound / exact 1.10 at eps 0, 1.22 at eps 1; the
    # bracket at 1e-9 is (2.2169, 2.3646) around the exact 2.2184 (quadrature), so a
    # lower end 0.07 % too high or an upper end 7 % too low fails here
    _check(3.0, np.array([0.0, 0.5, 1.0, 2.0]), [1e-3, 1e-9])


@pytest.mark.slow
@pytest.mark.parametrize("sigma", [0.45, 1.0])  # 0.6 (24 s CPU) measured sound, left out
def test_small_sigma_settings_hold_the_exact_values(sigma):
    # below sigma 0.65 the law is built on a coarse lattice with a larger pair charge
    # (_settings): the least-tested branch; measured sound at eps 0..8, deltas to 1e-12
    _check(sigma, np.array([0.0, 1.0, 3.0, 6.0]), [1e-3, 1e-6])
