"""accountant/pld/schedule_tilted.py: the tilted composition's delta of DP-SGD phases,
checked against an independent value -- two distinct Poisson-subsampled Gaussian steps
composed, by one mpmath quadrature over the first step's output
(``oracles.two_subsampled_gaussians_delta``; closed-form second step) -- at deltas from
1e-13 down to 5e-24, where the untilted fast path's round-off floor (about 5e-12 on
these two steps) is far above the answer.  Power: with the untilting factor
``e^{K(t)}`` left out, the four tilted cases fall below the exact ones and the
soundness assertion fails (checked; the case at epsilon 0 takes ``t = 0``)."""

from __future__ import annotations

import oracles
import pytest

from dpacct.accountant.pld.schedule_fast import fast_upper
from dpacct.accountant.pld.schedule_tilted import tilted_delta

#: (first step, second step, epsilon): ``(sigma, q)`` each; exact deltas 1.4e-15,
#: 5.5e-24, 1.6e-13, 1.1e-18 and, at epsilon 0 (no tilt helps: t = 0), about 0.02
CASES = [
    ((0.8, 0.01), (0.9, 0.02), 5.0),
    ((0.8, 0.01), (0.9, 0.02), 8.0),
    ((1.0, 1e-3), (1.2, 2e-3), 0.5),
    ((1.0, 1e-3), (1.2, 2e-3), 1.5),
    ((0.8, 0.01), (0.9, 0.02), 0.0),
]


@pytest.mark.parametrize(("first", "second", "eps"), CASES)
def test_tilted_delta_is_sound_and_tight_against_the_quadrature(first, second, eps):
    exact = float(oracles.two_subsampled_gaussians_delta(first, second, eps))
    phases = [(first[0], first[1], 1), (second[0], second[1], 1)]
    got, share, _, _ = tilted_delta(phases, eps, min(1.0, exact))
    assert got >= exact, (got, exact)  # sound: never below the truth
    # tight: connect-the-dots on the 1e-3 loss grid, 4e-6 - 3e-5 relative measured
    assert got <= exact * (1.0 + 1e-3), (got, exact)
    assert 0.0 <= share < 1e-2


def test_the_untilted_floor_is_above_the_tilted_answer():
    # why the route exists: the untilted fast path's certificate floor (about 5e-12)
    phases = [(0.8, 0.01, 1), (0.9, 0.02, 1)]
    got = tilted_delta(phases, 5.0, 1e-15).delta
    _, floor = fast_upper(phases, 1e-9)
    assert floor > 1e3 * got


@pytest.mark.parametrize(
    ("eps", "target", "name"),
    [(-1.0, 1e-5, "epsilon"), (float("nan"), 1e-5, "epsilon"), (1.0, 0.0, "target"),
     (1.0, 2.0, "target")],
)
def test_bad_input_names_the_parameter(eps, target, name):
    with pytest.raises(ValueError, match=name):
        tilted_delta([(1.0, 0.01, 10)], eps, target)


def test_tilted_epsilon_is_sound_and_within_a_hundredth_of_the_truth():
    # the exact delta (quadrature) at the answer is at most the target, 0.01 below it
    # above (the answer is a multiple of the 1e-3 grid step)
    from dpacct.accountant.pld.schedule_tilted import tilted_epsilon

    pair = ((0.8, 0.01), (0.9, 0.02))
    e = tilted_epsilon([(0.8, 0.01, 1), (0.9, 0.02, 1)], 1e-20, 1.0)
    assert float(oracles.two_subsampled_gaussians_delta(*pair, e)) <= 1e-20
    assert float(oracles.two_subsampled_gaussians_delta(*pair, e - 0.01)) > 1e-20


@pytest.mark.parametrize("eps", [0.003, 0.05])
def test_a_tilt_that_would_floor_the_bulk_is_capped(eps):
    # issue 37 (review 33): on small-q steps whose cells' losses are all below a few
    # 1e-3, the Chernoff exponent still falls at the largest t allowed, where the bulk's
    # tilted masses go under TILT_FLOOR and their P-mass to +inf: 63d0fb5 answers
    # 0.0083 here (sound, useless).  t is now capped where the floored mass stays under
    # TILT_CAP_SHARE of the tails' cut, so the answer is at most the tails' budget
    # (1e-4 of the target; fails on 63d0fb5) and still above the quadrature's value
    pair = ((2.8, 2e-5), (2.9, 4e-5))
    exact = float(oracles.two_subsampled_gaussians_delta(*pair, eps))
    got = tilted_delta([(2.8, 2e-5, 1), (2.9, 4e-5, 1)], eps, 1e-15)
    assert got.delta >= exact, (got, exact)
    assert got.delta <= 1e-4 * 1e-15, got
    assert got.cut == pytest.approx(1.0)  # the tails' cut is the whole answer here
