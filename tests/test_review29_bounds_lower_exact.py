"""Review 29 (issue 37): ``epsilon_bounds``' lower end at or below the exact epsilon of
one and two subsampled-Gaussian steps, and never below main's.

ws29-cap makes ``epsilon_bounds`` cheaper (issue 37: at most 2x ``epsilon``); a cheaper
lower end may move up (tighter) but never above the truth.  Independent truths:

* one Poisson-subsampled Gaussian step, both directions, in closed form (the loss is
  monotone in the output, so each direction's hockey stick is two normal tails at the
  output where the loss crosses ``eps``: Balle & Wang 2018, Theorem 5's argument;
  Zhu, Dong & Wang 2022, Theorem 11 for the pair), bisected at 30 digits here;
* two steps: the same inner closed form integrated over the first step's output
  (40-digit mpmath quadrature split at the hockey stick's kink; the reviewer's
  /tmp/rv29/exact_sgm.py, pinned below, converged to 1e-14 between 30 and 40 digits);
* ``q = 1``: ten steps are one Gaussian of ``mu = sqrt(10) / sigma``.

The bar: main's (617417f) lower ends, which a change may only raise, and main's upper
ends, which it must keep.  Power: fails on a main snapshot whose ``routes.
epsilon_bracket`` lower end is moved halfway to the upper end (two-step rows: 0.1745472
> 0.1745461; 4.854048 > 4.854042); and when the lower end is lowered (main's bar).
About 2 CPU s.
"""

from __future__ import annotations

import mpmath as mp
import pytest
from pins import PIN_REL

import dpacct as dp

#: (q, sigma, steps, delta) -> (exact epsilon, main's lower end, main's upper end)
ROWS = {
    (0.01, 1.1, 1, 1e-5): (None, 0.14228382311776347, 0.1422935937460508),
    (1e-4, 0.4, 1, 1e-6): (None, 0.32174476773831, 0.321757084432653),
    (0.3, 1.5, 1, 1e-10): (None, 2.9210738952930306, 2.921083793712716),
    (0.01, 1.1, 2, 1e-5): (0.17454606542199258, 0.17454596892520916, 0.1745485177187601),
    (0.5, 1.0, 2, 1e-5): (4.854042488515233, 4.854024371603931, 4.854054391416261),
    (0.9, 0.6, 2, 1e-8): (15.197397377088691, 15.197147775121257, 15.197558586243419),
    (1.0, 4.0, 10, 1e-5): (None, 3.341409469239295, 3.3414094692394087),
    (0.01, 1.1, 10_000, 1e-5): (None, 5.192542998946773, 5.192605208042421),
}


def _one_step_delta(q, sigma, eps):
    """max over both directions of ``H_{e^eps}`` of one subsampled Gaussian step."""
    q, s, eps = mp.mpf(q), mp.mpf(sigma), mp.mpf(eps)
    out = mp.mpf(0)
    for remove in (True, False):
        # the output x where the loss log(1 - q + q e^{(2x - 1) / 2s^2}) equals +-eps
        a = (mp.exp(eps if remove else -eps) - 1 + q) / q
        if a <= 0:  # the loss never reaches eps (add direction, eps >= -log(1-q))
            continue
        x = (2 * s**2 * mp.log(a) + 1) / 2
        g = lambda z: mp.ncdf(z / s)  # noqa: E731
        if remove:  # P = (1-q) N(0) + q N(1) beyond x, Q = N(0)
            d = (1 - q) * g(-x) + q * g(1 - x) - mp.exp(eps) * g(-x)
        else:  # P = N(0) below x, Q the mixture
            d = g(x) - mp.exp(eps) * ((1 - q) * g(x) + q * g(x - 1))
        out = max(out, d)
    return out


def _bisect(f, delta):
    lo, hi = mp.mpf(0), mp.mpf(1)
    while f(hi) > delta:
        hi *= 2
    for _ in range(70):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) > delta else (lo, mid)
    return float(lo), float(hi)


def _exact(q, sigma, steps, delta, pinned):
    if pinned is not None:
        return pinned, pinned
    if steps == 1:
        return _bisect(lambda e: _one_step_delta(q, sigma, e), delta)
    if q == 1.0:
        mu = mp.sqrt(steps) / sigma
        return _bisect(
            lambda e: mp.ncdf(-e / mu + mu / 2) - mp.exp(e) * mp.ncdf(-e / mu - mu / 2), delta
        )
    return None


@pytest.mark.parametrize("row", list(ROWS), ids=[str(r) for r in ROWS])
def test_lower_end_at_or_below_the_exact_epsilon_and_never_below_mains(row):
    q, sigma, steps, delta = row
    pinned, main_lo, main_hi = ROWS[row]
    mp.mp.dps = 30
    step = dp.poisson_subsample(dp.GaussianMechanism(sigma=sigma), sample_rate=q)
    lo, hi = dp.compose([step], counts=[steps]).epsilon_bounds(delta)
    # main's ends up to the CPUs' spread (tests/pins.py: 1.4e-11 at T 1e4 between AVX2
    # and AVX-512 kernels), far below the moves this guards against (1e-6 and more)
    assert lo >= main_lo * (1 - PIN_REL), (row, lo, main_lo)
    assert hi <= main_hi * (1 + PIN_REL), (row, hi, main_hi)
    exact = _exact(q, sigma, steps, delta, pinned)
    if exact is not None:
        below, above = exact  # the bisection's ends: the truth is between them
        assert lo <= above * (1 + 1e-13), (row, lo, exact)
        assert hi >= below * (1 - 1e-13), (row, hi, exact)
    assert lo <= hi
