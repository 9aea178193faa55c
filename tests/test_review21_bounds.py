"""Review 21 (issue 37): DP-SGD brackets against main's certified upper ends.

ws21-bounds cuts the optimistic ladder of ``epsilon_bounds`` and stops the add
direction's screening ladder early.  A lower end above main's certified upper end would
be provably above the truth; an upper end above main's would be looser.  The bars are
main's (aeb560c) ``epsilon_bounds`` on three settings, whose brackets are 1e-5 to 2e-5
relative wide, so a lower end that rose past the truth by more than that fails here.

No finding (a guard).  Measured on ws21-bounds (0d6b5c8..464b915) against main, in one
run each: 12 settings (q 1e-4..0.5, sigma 0.5..4, T 1..1e7, delta 1e-3..1e-12) and 40
random ones (q log-uniform in [1e-4, 0.9], sigma in [0.4, 5], T up to 3e6, delta 1e-12
to 1e-2): epsilon, both ends of epsilon_bounds and delta(1) bit-equal; delta(0.5, 2, 8)
and epsilon at tol 1e-2 and 1e-4 on 5 more, bit-equal.
"""

from __future__ import annotations

import pytest

from dpacct.accountant import compose, poisson_subsample
from dpacct.mechanisms import GaussianMechanism

# (q, sigma, T, delta): main's (lower, upper)
MAIN = [
    ((0.01, 1.1, 10_000, 1e-5), (5.192542998946773, 5.192605208193242)),
    ((0.004, 0.8, 1_000_000, 1e-5), (61.82286620589071, 61.83812571008151)),
    ((0.1, 2.0, 300, 1e-9), (6.083969294203926, 6.084094682452959)),
]


@pytest.mark.parametrize(("setting", "main"), MAIN)
def test_brackets_stay_below_mains_upper_end(setting, main):
    q, sigma, steps, delta = setting
    run = compose([poisson_subsample(GaussianMechanism(sigma), q)], counts=[steps])
    lo, hi = map(float, run.epsilon_bounds(delta))
    assert lo <= main[1], (lo, main)  # main's upper end is certified: the truth is below
    assert hi <= main[1] * (1 + 1e-12), (hi, main)
    assert float(run.epsilon(delta)) == hi
