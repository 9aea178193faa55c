"""The atom of a subsampled Laplace at its anchor stays on its node in the optimistic
discretisation (its cdf jumps a few ulps below the float anchor).  Independent values:
the exact one-step curve by mpmath quadrature, dp_accounting's numbers for 20 steps."""

from __future__ import annotations

import mpmath as mp

from dpacct.accountant import compose, poisson_subsample
from dpacct.mechanisms import LaplaceMechanism


def _sub_laplace_delta(q, b, eps):
    """Exact delta of one Poisson-subsampled Laplace step, max of both directions."""
    q, b, eps = mp.mpf(q), mp.mpf(b), mp.mpf(eps)

    def lap(x, c):
        return mp.exp(-abs(x - c) / b) / (2 * b)

    def mix(x):
        return (1 - q) * lap(x, 0) + q * lap(x, 1)

    def remove(x):
        return mix(x) - mp.exp(eps) * lap(x, 0)

    def add(x):
        return lap(x, 0) - mp.exp(eps) * mix(x)

    def hockey_stick(h):
        pts = [mp.mpf(0), mp.mpf(1)]
        if (h(pts[0]) > 0) != (h(pts[1]) > 0):  # one crossing inside [0, 1]
            pts.insert(1, mp.findroot(h, (pts[0], pts[1]), solver="anderson"))
        return mp.quad(lambda x: max(h(x), 0), [-mp.inf, *pts, mp.inf])

    return max(hockey_stick(remove), hockey_stick(add))


def _sub_laplace_eps(q, b, delta):
    lo, hi = mp.mpf(0), mp.mpf(1) / b
    for _ in range(64):
        mid = (lo + hi) / 2
        if _sub_laplace_delta(q, b, mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def test_one_subsampled_laplace_step_bracket_holds_the_truth():
    mp.mp.dps = 30
    truth = _sub_laplace_eps(0.1, 5.0, 1e-5)  # 0.021874840525849520...
    lo, hi = poisson_subsample(LaplaceMechanism(b=5.0), 0.1).epsilon_bounds(1e-5)
    assert mp.mpf(lo) <= truth <= mp.mpf(hi)
    # the lower end lost a whole grid step before (1.6 % bracket)
    assert hi - lo <= 1e-5 * hi


def test_twenty_subsampled_laplace_steps():
    run = compose([poisson_subsample(LaplaceMechanism(b=5.0), 0.1)], counts=[20])
    lo, hi = run.epsilon_bounds(1e-5)
    # dp_accounting 0.14 (PLD, value discretisation 1e-6): connect-the-dots upper
    # 0.28516287301363885, privacy-buckets lower 0.2851484106810065
    assert lo <= 0.28516287301363885
    assert hi >= 0.2851484106810065
    assert hi - lo <= 1e-3 * hi  # was 2.0 %
