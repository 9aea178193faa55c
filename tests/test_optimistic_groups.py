"""The lower end's optimistic fine groups (issue 37, session 32): every cell's split PMF
is dominated by the exact subsampled Gaussian (closed-form hockey-stick), the lower end
on fine groups stays below independent upper bounds (dp_accounting's pessimistic PLD,
the fast path's own upper end) and above the plain lower end, and the rule picks the
coarsest step and the smallest factor that meet its shares."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from dpacct.accountant.pld.optimistic_groups import optimistic_fine_group, split_optimistic_cells
from dpacct.accountant.pld.optimistic_rule import lower_fine_rule
from dpacct.accountant.pld.schedule_fast import FAST_STEP, _lower_step, fast_epsilon_bounds
from dpacct.accountant.pld.sgm_cells import _pile_nodes, _pile_shift

DELTA = 1e-5


def _exact_curve(sigma: float, q: float, eps: np.ndarray) -> np.ndarray:
    """Hockey-stick ``P(L > eps) - e^eps Q(L > eps)`` of the Poisson-subsampled
    Gaussian's remove direction, in closed form (``x(eps)`` the loss's preimage)."""
    floor = math.log1p(-q)
    out = np.empty(eps.shape)
    low = eps <= floor
    out[low] = -np.expm1(eps[low])  # every loss is above eps
    e = eps[~low]
    x = sigma**2 * np.log((np.expm1(e) + q) / q) + 0.5
    p_tail = (1 - q) * special.ndtr(-x / sigma) + q * special.ndtr((1 - x) / sigma)
    out[~low] = p_tail - np.exp(e) * special.ndtr(-x / sigma)
    return out


def _curve(losses: np.ndarray, pmf: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """``sum_i p_i (1 - e^{eps - l_i})_+`` at every ``eps``."""
    gap = -np.expm1(eps[:, None] - losses[None, :])
    return np.sum(pmf[None, :] * np.maximum(gap, 0.0), axis=1)


@pytest.mark.parametrize(
    "sigma, q, factor", [(0.8, 0.02, 8), (1.5, 0.001, 16), (2.0, 0.01, 4), (0.6, 0.2, 2)]
)
def test_split_cells_are_dominated_by_the_exact_step(sigma, q, factor):
    # the split PMF (fine bulk, coarse tail, two hull constructions) at its losses
    # (grid + pile shift) never above the closed-form curve, and close to it
    step = FAST_STEP
    fine = step / factor
    s, qq = np.array([sigma]), np.array([q])
    pile = _pile_nodes(s, qq, fine)
    firsts, pmfs = split_optimistic_cells(s, qq, step, factor, 1e-13, pile)
    losses = (firsts[0] + np.arange(pmfs[0].size)) * fine + float(_pile_shift(pile, fine)[0])
    eps = np.linspace(math.log1p(-q) - 0.05, float(losses[-1]), 400)
    got, exact = _curve(losses, pmfs[0], eps), _exact_curve(sigma, q, eps)
    assert pmfs[0].min() >= 0 and pmfs[0].sum() <= 1.0 + 1e-12
    assert np.all(got <= exact + 1e-14), float(np.max(got - exact))
    # and close to it: within 0.1 % while the curve is above 1e-3, 1 % above 1e-6 and
    # 10 % above 1e-9 (the coarse tail; measured at q 1e-3: 7e-6, 0.67 % and 9.1 %)
    for floor, share in ((1e-3, 0.999), (1e-6, 0.99), (1e-9, 0.9)):
        live = exact > floor
        assert np.all(got[live] >= share * exact[live]), (floor, share)


def test_fine_group_is_dominated_by_the_exact_composition_of_its_steps():
    # one cell, 40 steps: the group's re-gridded PMF, less its error term, below the
    # exact 40-fold composition's curve; here above it, dp_accounting's pessimistic PLD
    # at interval 1e-5 (an upper bound of it; 0.6.0, `self_compose(40)` of
    # `from_gaussian_mechanism(standard_deviation=1.0, sampling_prob=0.02,
    # value_discretization_interval=1e-5)`, `get_delta_for_epsilon` at 0.2, 0.5, 1.0:
    # about 85 s CPU under load, pinned, a peer's numbers)
    sigma, q, k = 1.0, 0.02, 40
    peer = {0.2: 0.013419760004392742, 0.5: 0.0009790660769152055, 1.0: 1.7209874341773323e-05}
    step, factor = FAST_STEP, 8
    s, qq = np.array([sigma]), np.array([q])
    pile = _pile_nodes(s, qq, step / factor)
    seg, shift = optimistic_fine_group(s, qq, np.array([k]), step, factor, 1e-13, pile, 1e-13)
    assert 0.0 <= shift < step / factor and seg.pmf.min() >= 0 and seg.pmf.sum() <= 1.0
    losses = (seg.first + np.arange(seg.pmf.size)) * step + shift
    for eps, upper in peer.items():
        lo = float(_curve(losses, seg.pmf, np.array([eps]))[0]) - seg.err
        # below the truth (under the peer's upper bound), and within 0.5 % of it
        assert 0.995 * upper <= lo <= upper, (eps, lo, upper)


def _phases(seed: int, n: int, count: int, q_hi: float = 0.02):
    rng = np.random.default_rng(seed)
    return [
        (float(s), float(q), count)
        for s, q in zip(rng.uniform(0.8, 2.0, n), rng.uniform(0.001, q_hi, n), strict=True)
    ]


def test_lower_end_on_fine_groups_is_below_dp_accountings_pessimistic_pld():
    # 40 phases x 10 (three groups of cells, so the groups' shifts and errors add up):
    # the lower end on fine groups below dp_accounting's pessimistic PLD (an upper bound
    # of the truth: `dp_accounting_epsilon(phases, DELTA, 1e-4, True)` of
    # tests/sgm_oracles.py, 0.6.0, about 60 s CPU under load, pinned), above the plain
    # lower end, and the bracket with the fast path's own upper end narrower than 1e-4
    # (measured: lower 1.57383235, upper 1.57386970, 2.4e-5; the plain one 8.8e-5)
    phases = _phases(3, 40, 10)
    step, factor = lower_fine_rule(phases, DELTA, FAST_STEP)
    lo = fast_epsilon_bounds(phases, DELTA, step=step, upper=False, lower_factor=factor)[0]
    plain = fast_epsilon_bounds(phases, DELTA, step=_lower_step(phases), upper=False)[0]
    hi = fast_epsilon_bounds(phases, DELTA, lower=False)[1]
    peer = 1.573865162950926
    assert plain < lo <= min(hi, peer), (plain, lo, hi, peer)
    assert hi - lo <= 0.5 * (hi - plain) and hi - lo <= 1e-4 * hi, (lo, hi, plain)


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    n=st.integers(2, 40),
    count=st.integers(2, 30),
    q_hi=st.sampled_from([0.005, 0.02, 0.1]),
    factor=st.sampled_from([2, 4, 8]),
)
def test_lower_end_on_fine_groups_stays_below_the_upper_end(seed, n, count, q_hi, factor):
    phases = _phases(seed, n, count, q_hi)
    lo = fast_epsilon_bounds(phases, DELTA, step=FAST_STEP, upper=False, lower_factor=factor)[0]
    hi = fast_epsilon_bounds(phases, DELTA, lower=False)[1]
    assert 0.0 < lo <= hi, (lo, hi)


def test_lower_factor_is_validated():
    with pytest.raises(ValueError, match="lower_factor"):
        fast_epsilon_bounds([(1.0, 0.01, 10)] * 2, DELTA, upper=False, lower_factor=3)
