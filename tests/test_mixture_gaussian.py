"""The mixture-of-Gaussians mechanism and user-level DP-SGD, against independent values.

Oracles: mpmath (the exact one-step hockey-stick divergence of the mixture pair, both
directions, from the root of its monotone privacy loss; the exact Renyi moment of a
two-point mixture by the binomial expansion) and dp_accounting's PLD accountant.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpacct.accountant import (
    GaussianMechanism,
    MixtureOfGaussiansMechanism,
    compose,
    poisson_subsample,
    user_level_dpsgd,
)
from dpacct.accountant.serialization import from_dict, to_dict

mp.mp.dps = 40


def _exact_delta(sigma, sens, probs, eps, direction):
    """delta(eps) of (sum p_i N(c_i, s^2), N(0, s^2)) ('remove') or its swap ('add')."""
    s = mp.mpf(sigma)
    cs = [mp.mpf(c) for c in sens]
    ps = [mp.mpf(p) for p in probs]
    eps = mp.mpf(eps)

    def loss(y):  # log dP/dQ at y, increasing
        return mp.log(
            mp.fsum(p * mp.e ** ((c * y - c * c / 2) / s**2) for c, p in zip(cs, ps, strict=True))
        )

    target = eps if direction == "remove" else -eps
    floor = (
        mp.log(mp.fsum(p for c, p in zip(cs, ps, strict=True) if c == 0)) if 0 in sens else -mp.inf
    )
    if target <= floor:
        y = -mp.inf
    else:
        y = mp.findroot(lambda t: loss(t) - target, (mp.mpf(-200), mp.mpf(200)), solver="bisect")
        y = mp.findroot(lambda t: loss(t) - target, y)
    p_above = mp.fsum(p * mp.ncdf(-(y - c) / s) for c, p in zip(cs, ps, strict=True))
    q_above = mp.ncdf(-y / s)
    if direction == "remove":  # {y > y*}: P = mixture, Q = N(0)
        return float(p_above - mp.e**eps * q_above)
    # swapped: the set is {y < y*}, P = N(0), Q = mixture
    return float((1 - q_above) - mp.e**eps * (1 - p_above))


def _exact_epsilon(sigma, sens, probs, delta):
    def worst(e):
        return max(_exact_delta(sigma, sens, probs, e, d) for d in ("remove", "add"))

    lo, hi = 0.0, 1.0
    while worst(hi) > delta:
        lo, hi = hi, 2 * hi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if worst(mid) > delta else (lo, mid)
    return hi


CASES = [
    (1.0, [0.0, 1.0, 2.0], [0.81, 0.18, 0.01]),
    (0.7, [0.5, 1.5], [0.5, 0.5]),
    (2.0, [0.0, 1.0, 3.0, 4.0], [0.6, 0.2, 0.15, 0.05]),
]


@pytest.mark.parametrize(("sigma", "sens", "probs"), CASES)
def test_one_step_bracket_encloses_the_exact_epsilon(sigma, sens, probs):
    m = MixtureOfGaussiansMechanism(sigma, sens, probs)
    exact = _exact_epsilon(sigma, sens, probs, 1e-5)
    lo, hi = m.epsilon_bounds(1e-5)
    assert lo <= exact * (1 + 1e-9) and exact <= hi * (1 + 1e-9)
    assert hi - lo <= 1e-3 * hi


@pytest.mark.parametrize("k", [1, 2, 8])
def test_user_level_one_step_against_mpmath(k):
    sigma, q, delta = 1.0, 0.05, 1e-5
    step = user_level_dpsgd(noise_multiplier=sigma, sample_rate=q, examples_per_user=k)
    j = list(range(k + 1))
    pmf = [float(mp.binomial(k, i) * mp.mpf(q) ** i * (1 - mp.mpf(q)) ** (k - i)) for i in j]
    exact = _exact_epsilon(sigma, j, pmf, delta)
    lo, hi = step.epsilon_bounds(delta)
    assert lo <= exact * (1 + 1e-9) and exact <= hi * (1 + 1e-9)


def test_user_level_k1_is_example_level_dpsgd():
    step = user_level_dpsgd(noise_multiplier=1.1, sample_rate=0.01, examples_per_user=1)
    plain = poisson_subsample(GaussianMechanism(sigma=1.1), 0.01)
    ours = compose([step], counts=[500]).epsilon_bounds(1e-5)
    theirs = compose([plain], counts=[500]).epsilon_bounds(1e-5)
    width = max(ours[1] - ours[0], theirs[1] - theirs[0])
    assert ours[0] <= theirs[1] and theirs[0] <= ours[1]
    assert abs(ours[1] - theirs[1]) <= width


def test_more_examples_per_user_cost_more():
    eps = [compose([user_level_dpsgd(1.0, 0.02, k)], counts=[100]).epsilon(1e-5) for k in (1, 2, 4)]
    assert eps[0] < eps[1] < eps[2]


def test_single_component_is_the_gaussian_mechanism():
    m = MixtureOfGaussiansMechanism(2.0, [1.0], [1.0])
    exact = GaussianMechanism(sigma=2.0).epsilon(1e-6)
    lo, hi = m.epsilon_bounds(1e-6)
    assert lo <= exact * (1 + 1e-12) and exact <= hi * (1 + 1e-12)


def test_rdp_bounds_the_exact_two_point_moment():
    # remove direction of ((1-q) N(0) + q N(c), N(0)) at integer alpha:
    # E_Q[(dP/dQ)^alpha] = sum_j C(alpha, j) (1-q)^(alpha-j) q^j exp((j^2 - j) c^2 / (2 s^2))
    s, c, q = 1.5, 2.0, 0.1
    m = MixtureOfGaussiansMechanism(s, [0.0, c], [1 - q, q])
    for alpha in (2, 3, 5, 8):
        moment = mp.fsum(
            mp.binomial(alpha, j)
            * (1 - mp.mpf(q)) ** (alpha - j)
            * mp.mpf(q) ** j
            * mp.e ** ((j * j - j) * mp.mpf(c) ** 2 / (2 * mp.mpf(s) ** 2))
            for j in range(alpha + 1)
        )
        exact = float(mp.log(moment) / (alpha - 1))
        got = float(m.rdp(alpha))
        assert exact * (1 - 1e-12) <= got <= exact * (1 + 1e-3)
    # capped by the largest component's Gaussian at every order, and finite
    a = np.array([2.0, 50.0, 1e6])
    assert np.all(m.rdp(a) <= a * (c / s) ** 2 / 2 * (1 + 1e-12))


def test_equal_values_merge_and_round_trip():
    m = MixtureOfGaussiansMechanism(1.0, [1.0, 0.0, 1.0], [0.25, 0.5, 0.25])
    assert m.sensitivities == (0.0, 1.0) and m.probabilities == (0.5, 0.5)
    assert m == MixtureOfGaussiansMechanism(1.0, [0.0, 1.0], [0.5, 0.5])
    assert from_dict(to_dict(m)) == m


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"sigma": 0.0}, "sigma"),
        ({"sensitivities": [-1.0, 1.0]}, "sensitivities"),
        ({"sensitivities": [0.0, 0.0]}, "sensitivities"),
        ({"sensitivities": [0.0, math.inf]}, "sensitivities"),
        ({"probabilities": [0.5, 0.6]}, "probabilities"),
        ({"probabilities": [1.5, -0.5]}, "probabilities"),
        ({"probabilities": [1.0]}, "sensitivities and probabilities"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, name):
    args = {"sigma": 1.0, "sensitivities": [0.0, 1.0], "probabilities": [0.5, 0.5]} | kwargs
    with pytest.raises(ValueError, match=name):
        MixtureOfGaussiansMechanism(**args)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"examples_per_user": 0}, "examples_per_user"),
        ({"sample_rate": 0.0}, "sample_rate"),
        ({"noise_multiplier": -1.0}, "noise_multiplier"),
    ],
)
def test_user_level_bad_input(kwargs, name):
    args = {"noise_multiplier": 1.0, "sample_rate": 0.1, "examples_per_user": 2} | kwargs
    with pytest.raises(ValueError, match=name):
        user_level_dpsgd(**args)


# ------------------------------------------------------------------ dp_accounting
dpa = pytest.importorskip("dp_accounting")

#: the peer's certified bracket: its pessimistic connect-the-dots PLD (an upper bound)
#: and its optimistic privacy-buckets PLD (every loss rounded down: a lower bound).
#: Building a one-step mixture PLD is the peer's expensive part (a root per grid
#: point; 6.0 and 4.0 CPU s here); composing it is an FFT.  So the bracket at the
#: grids below is pinned (a peer's numbers, dp_accounting 0.6.0), and the peer is asked
#: live on grids ten times coarser (0.5 and 0.3 s): its coarse bracket must contain the
#: pinned one (a coarser grid is looser) and ours.  The fine grids (1e-4, 1e-5) and the
#: other cases are in benchmarks/mixtures.py.
MIXTURE = (1.0, (0.0, 1.0, 2.0), (0.81, 0.18, 0.01))
USER_K8 = (1.2, 0.01, 8)
MIXTURE_GRIDS = (3e-3, 3e-3)  # (pessimistic, optimistic) value_discretization_interval
USER_K8_GRIDS = (3e-3, 1e-2)

#: (case, count) -> the peer's (optimistic, pessimistic) epsilon at delta 1e-5 on the
#: grids above: ``_peer_plds(*args, *grids)``'s ``self_compose(count)``
#: ``.get_epsilon_for_delta(1e-5)``
PINNED_PEER = {
    ("mixture", 5): (5.0671364832170775, 5.074647229198706),
    ("mixture", 100): (16.080918684738986, 16.23103754199987),
    ("user_k8", 10): (2.0495381184131904, 2.133841513422295),
    ("user_k8", 200): (4.702681918605456, 6.124552172366425),
}


def _peer_plds(sigma, sens, probs, upper_grid, lower_grid):
    from dp_accounting.pld import privacy_loss_distribution as dpa_pld

    upper = dpa_pld.from_mixture_gaussian_mechanism(
        sigma, list(sens), list(probs), value_discretization_interval=upper_grid
    )
    lower = dpa_pld.from_mixture_gaussian_mechanism(
        sigma,
        list(sens),
        list(probs),
        pessimistic_estimate=False,
        use_connect_dots=False,
        value_discretization_interval=lower_grid,
    )
    return upper, lower


def _user_k8_pmf():
    from scipy import stats

    _, q, k = USER_K8
    pmf = stats.binom.pmf(np.arange(k + 1), k, q)
    return pmf / pmf.sum()


@pytest.fixture(scope="module")
def mixture_peer():
    """The peer's live bracket, ten times coarser than the pinned one."""
    up, low = MIXTURE_GRIDS
    return _peer_plds(*MIXTURE, upper_grid=10 * up, lower_grid=10 * low)


@pytest.fixture(scope="module")
def user_k8_peer():
    """The peer's live bracket, ten times coarser than the pinned one."""
    up, low = USER_K8_GRIDS
    return _peer_plds(USER_K8[0], range(USER_K8[2] + 1), _user_k8_pmf(), upper_grid=10 * up,
                      lower_grid=10 * low)


def _check_inside_peer_bracket(ours, peer, pinned, count, delta=1e-5):
    """The peer's lower <= our upper, our lower <= the peer's upper (both sound), and our
    upper no looser than the peer's pessimistic answer (tight), against the pinned
    bracket; the live coarse bracket contains the pinned one (its pessimistic end within
    1 %) and ours."""
    lo, hi = ours
    upper, lower = peer
    coarse_hi = upper.self_compose(count).get_epsilon_for_delta(delta)
    coarse_lo = lower.self_compose(count).get_epsilon_for_delta(delta)
    peer_lo, peer_hi = pinned
    assert coarse_lo <= peer_lo and peer_hi <= coarse_hi <= peer_hi * (1 + 1e-2)
    assert coarse_lo <= hi and lo <= coarse_hi
    assert peer_lo <= hi
    assert lo <= peer_hi
    assert hi <= peer_hi
    return peer_lo, peer_hi


@pytest.mark.slow
@pytest.mark.parametrize("count", [5, 100])
def test_against_dp_accounting_pld(mixture_peer, count):
    # 5 steps: the privacy-buckets bound is within 5 grid steps of the truth, a close
    # check of our upper end; 100 steps: the long composition
    mech = MixtureOfGaussiansMechanism(*MIXTURE)
    ours = compose([mech], counts=[count]).epsilon_bounds(1e-5)
    peer_lo, _ = _check_inside_peer_bracket(ours, mixture_peer, PINNED_PEER["mixture", count],
                                            count)
    assert ours[1] - peer_lo <= count * 3e-3


@pytest.mark.slow
@pytest.mark.parametrize("count", [10, 200])
def test_user_level_against_dp_accounting_pld(user_k8_peer, count):
    sigma, q, k = USER_K8
    step = user_level_dpsgd(noise_multiplier=sigma, sample_rate=q, examples_per_user=k)
    ours = compose([step], counts=[count]).epsilon_bounds(1e-5)
    peer_lo, _ = _check_inside_peer_bracket(ours, user_k8_peer, PINNED_PEER["user_k8", count],
                                            count)
    assert ours[1] - peer_lo <= count * 1e-2


def test_user_level_noise_multiplier_calibrates_with_the_generic_calibrator():
    from dpacct.calibrators import calibrate

    def family(s):
        return compose([user_level_dpsgd(s, 0.01, 4)], counts=[1000])

    found = calibrate(family, 8.0, 1e-5)
    assert family(found.parameter).epsilon(1e-5) <= 8.0
    assert family(found.parameter * 0.99).epsilon(1e-5) > 8.0 * (1 - 1e-2)
