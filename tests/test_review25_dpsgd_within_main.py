"""Review 25 guard (issue 37: the DP-SGD ladder's plan may move answers, equal or tighter).

Constant-sigma DP-SGD (``compose([poisson_subsample(Gaussian)], counts=[T])``) against
main's (ac8030b) certified bracket on the same question.  main's two ends are certified
bounds on the true epsilon (on the reviewer's rows main's ends sit inside dp_accounting's
optimistic / pessimistic PLD at interval 1e-5 where that reference is not noise-limited;
the q = 1 route is the exact Gaussian), so

* soundness: the upper end is at least main's lower end and the lower end at most main's
  upper end (a bracket disjoint from main's excludes the truth);
* equal or tighter: the upper end at most main's, the lower end at least main's, up to
  moves of round-off size, 1e-9 relative (the lead's decision in session 25: accepted and
  disclosed, as +2e-14 / +2.2e-10 were for the k-law before; ws25-ladder 226bfdb's
  exact-exponent tilts move some upper ends up by at most 4.2e-11 here).

The rows are a sample of the reviewer's 72 random settings (q 1e-4..1, sigma 0.5..20,
T 1..1e7, delta 1e-3..1e-12; PCG64(2525)) at 0.15-0.3 CPU s each, T from 110 to 1e6.
The guard fails on an upper end raised 1e-8 relative, on ``pld_fft._TILT_MIS = 1`` and on
any end moved out of main's bracket; a certificate term of 1e-10 dropped passes it.
"""

from __future__ import annotations

import pytest

from dpacct.accountant import compose, poisson_subsample
from dpacct.mechanisms import GaussianMechanism

#: a move of round-off size, relative (accepted, session 25)
ROUNDOFF = 1e-9

# (q, sigma, T, delta, main's lower end, main's upper end), main ac8030b, repr
MAIN = [
    (0.01, 1.1, 10_000, 1e-05, 5.192542998946773, 5.192605208193242),
    (0.01197, 1.6974, 171, 0.00017, 0.2829055115536031, 0.2829109911697757),
    (0.3, 5.0, 1000, 1e-05, 9.529285415355545, 9.52950864398938),
    (0.004, 0.8, 1_000_000, 1e-05, 61.82286620589071, 61.83812571008151),
    (0.000259, 2.0797, 110, 9.84e-08, 0.0052890999276146745, 0.00528917480016496),
    (0.447485, 1.4819, 8039, 4.84e-11, 582.3639354268536, 582.4063756710673),
    # ws25-ladder 226bfdb's exact-exponent tilts put this upper end 4.2e-11 above main's
    # (1.9824445974778842): within the round-off allowance
    (0.001331, 0.7987, 379, 3.88e-11, 1.982313444761943, 1.9824445973949063),
]


@pytest.mark.parametrize(("q", "sigma", "steps", "delta", "lo_main", "hi_main"), MAIN)
def test_dpsgd_bracket_lies_inside_mains(q, sigma, steps, delta, lo_main, hi_main):
    run = compose([poisson_subsample(GaussianMechanism(sigma=sigma), sample_rate=q)],
                  counts=[steps])
    lo, hi = run.epsilon_bounds(delta)
    assert lo_main <= hi and lo <= hi_main, (lo_main, lo, hi, hi_main)  # sound
    assert hi <= hi_main * (1 + ROUNDOFF), (hi, hi_main)  # no looser upper end
    assert lo >= lo_main * (1 - ROUNDOFF), (lo, lo_main)  # no looser lower end
    assert lo <= hi
