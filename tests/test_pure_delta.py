"""``delta = 0`` means pure DP everywhere (issue 21, item 4).

``epsilon(0)`` is the pure epsilon where the mechanism has one; where it has none the
query raises a ``ValueError`` naming ``pure_epsilon``.  Expected values are closed
forms evaluated independently (``fractions`` for sums, ``mpmath`` for logarithms).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from dpacct.accountant import (
    Mechanism,
    PrivacyAccountant,
    compose,
    poisson_subsample,
    random_allocation,
    subsample_without_replacement,
)
from dpacct.calibrators import (
    analytic_gaussian_sigma,
    calibrate,
    get_noise_multiplier,
    max_steps,
    noise_multiplier,
)
from dpacct.mechanisms import (
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    PureDPMechanism,
    RandomizedResponse,
    ZCDPMechanism,
)

NO_PURE = re.compile(r"delta=0 asks for pure DP, but .* has no pure epsilon \(pure_epsilon")

mpmath.mp.dps = 50


def _mp_float_up(x: mpmath.mpf) -> float:
    """The smallest float >= the exact value ``x``."""
    f = float(x)
    return f if mpmath.mpf(f) >= x else math.nextafter(f, math.inf)


@pytest.mark.parametrize("b", [1.0, 2.0, 3.0, 0.37, 1e-3, 250.0])
def test_laplace_epsilon_at_zero_is_one_over_b(b):
    from fractions import Fraction

    m = LaplaceMechanism(b=b)
    # 1 / b rounded up: the float quotient, or the next float when it is below the real
    up = m.epsilon(0)
    assert Fraction(up) * Fraction(b) >= 1 and up in (1.0 / b, np.nextafter(1.0 / b, np.inf))
    assert m.epsilon(0.0) == up and m.epsilon(np.float64(0.0)) == up
    lo, hi = m.epsilon_bounds(0)
    assert hi == up
    # the exact curve is positive just below 1/b: the bracket is tight
    assert 1.0 / b * (1 - 1e-9) <= lo <= hi


def test_zero_inside_an_array_of_deltas():
    m = LaplaceMechanism(b=2.0)
    out = m.epsilon([0.0, 1e-5, 0.0])
    assert out.shape == (3,)
    assert out[0] == out[2] == 0.5
    assert out[1] == m.epsilon(1e-5) < 0.5


@pytest.mark.parametrize(("p", "k"), [(0.75, 2), (0.9, 2), (0.6, 5), (0.5, 3)])
def test_randomized_response_pure_epsilon(p, k):
    # k-ary RR answers truthfully with probability p and each other value with
    # (1 - p) / (k - 1): the pure epsilon is log(p (k - 1) / (1 - p)) (Warner 1965)
    m = RandomizedResponse(p=p) if k == 2 else RandomizedResponse(p=p, k=k)
    exact = mpmath.log(mpmath.mpf(p) * (k - 1) / (1 - mpmath.mpf(p)))
    eps0 = m.epsilon(0)
    assert eps0 >= _mp_float_up(exact)  # sound: never below the truth
    assert eps0 <= float(exact) * (1 + 1e-14) + 1e-300
    assert m.delta(eps0) == 0.0


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.7])
def test_generic_pure_dp(eps):
    assert PureDPMechanism(epsilon=eps).epsilon(0) == eps
    assert Mechanism.from_pure_epsilon(eps).epsilon(0) == eps
    assert ExponentialMechanism(epsilon=eps, bounded_range=False).epsilon(0) >= eps * (1 - 1e-15)


def test_composition_of_laplaces_sums_pure_epsilons_rounded_up():
    parts, counts = [LaplaceMechanism(b=2.0), LaplaceMechanism(b=5.0)], [3, 7]
    run = compose(parts, counts=counts)
    exact = sum(Fraction(c) / Fraction(m.b) for m, c in zip(parts, counts, strict=True))
    eps0 = run.epsilon(0)
    assert Fraction(eps0) >= exact  # rounded up, never below the exact sum
    assert eps0 <= float(exact) * (1 + 1e-14)
    lo, hi = run.epsilon_bounds(0)
    assert hi == eps0 and 0 < lo <= hi
    assert run.delta(eps0) == 0.0


def test_composition_pure_epsilon_is_never_below_the_exact_sum():
    # ten copies of the float 1/3: a float sum would round to nearest (possibly down)
    third = 1.0 / 3.0
    run = compose([LaplaceMechanism(b=3.0)], counts=[10])
    assert Fraction(run.epsilon(0)) >= 10 * Fraction(third)


@pytest.mark.parametrize(("q", "b"), [(0.01, 1.0), (0.2, 0.5), (0.5, 4.0), (1e-4, 0.1)])
def test_poisson_subsampled_laplace_amplified_pure_epsilon(q, b):
    # Balle, Barthe & Gaboardi 2018: eps' = log(1 + q (e^eps - 1))
    m = poisson_subsample(LaplaceMechanism(b=b), q)
    exact = mpmath.log(1 + mpmath.mpf(q) * mpmath.expm1(1 / mpmath.mpf(b)))
    eps0 = m.epsilon(0)
    assert eps0 >= _mp_float_up(exact)
    assert eps0 <= float(exact) * (1 + 1e-13)
    lo, hi = m.epsilon_bounds(0)
    assert hi == eps0 and lo <= hi


def test_without_replacement_subsampled_rr_amplified_pure_epsilon():
    rr = RandomizedResponse(p=0.75)
    m = subsample_without_replacement(rr, 0.1)
    exact = mpmath.log(1 + mpmath.mpf("0.1") * (mpmath.mpf(3) - 1))  # e^log(3) - 1 = 2
    assert float(exact) * (1 - 1e-15) <= m.epsilon(0) <= float(exact) * (1 + 1e-13)


@pytest.mark.parametrize(
    "mech",
    [
        GaussianMechanism(sigma=1.0),
        poisson_subsample(GaussianMechanism(sigma=1.0), 0.01),
        compose([LaplaceMechanism(b=1.0), GaussianMechanism(sigma=2.0)], counts=[1, 1]),
        ZCDPMechanism(rho=0.1),
    ],
    ids=repr,
)
def test_no_pure_epsilon_raises_naming_it(mech):
    assert math.isinf(mech.pure_epsilon)
    with pytest.raises(ValueError, match=NO_PURE):
        mech.epsilon(0)
    with pytest.raises(ValueError, match=NO_PURE):
        mech.epsilon_bounds(0.0)
    with pytest.raises(ValueError, match=NO_PURE):
        mech.epsilon(np.array([1e-5, 0.0]))


def test_composition_names_the_part_without_a_pure_epsilon():
    run = compose([LaplaceMechanism(b=1.0), GaussianMechanism(sigma=2.0)], counts=[1, 1])
    with pytest.raises(ValueError, match=r"its part GaussianMechanism\(sigma=2\.0\) declares"):
        run.epsilon(0)


def test_random_allocation_has_no_pure_epsilon():
    ra = random_allocation(GaussianMechanism(sigma=1.0), steps=100)
    with pytest.raises(ValueError, match=NO_PURE):
        ra.epsilon(0)


def test_gaussian_calibrators_refuse_delta_zero_naming_pure_epsilon():
    with pytest.raises(ValueError, match=NO_PURE):
        noise_multiplier(epsilon=1.0, delta=0, sample_rate=0.01, steps=100)
    with pytest.raises(ValueError, match=NO_PURE):
        max_steps(epsilon=1.0, delta=0.0, noise_multiplier=1.0, sample_rate=0.01)
    with pytest.raises(ValueError, match=NO_PURE):
        analytic_gaussian_sigma(1.0, 0.0)
    with pytest.raises(ValueError, match=r"target_delta=0 asks for pure DP.*pure_epsilon"):
        get_noise_multiplier(target_epsilon=1.0, target_delta=0.0, sample_rate=0.01, steps=100)
    with pytest.raises(ValueError, match="pure_epsilon"):
        calibrate(lambda s: GaussianMechanism(sigma=s), epsilon=1.0, delta=0)


def test_calibrate_at_delta_zero_meets_the_pure_target():
    res = calibrate(lambda b: LaplaceMechanism(b=b), epsilon=0.5, delta=np.float64(0.0))
    assert LaplaceMechanism(b=res.parameter).epsilon(0) <= 0.5


@pytest.mark.parametrize(
    "mech",
    [
        LaplaceMechanism(b=0.8),
        RandomizedResponse(p=0.7),
        PureDPMechanism(epsilon=0.9),
        compose([LaplaceMechanism(b=4.0)], counts=[5]),
        poisson_subsample(LaplaceMechanism(b=1.0), 0.05),
    ],
    ids=repr,
)
def test_delta_is_exactly_zero_from_the_pure_epsilon_on(mech):
    eps0 = mech.epsilon(0)
    assert mech.delta(eps0) == 0.0
    assert mech.delta(eps0 * 1.5) == 0.0
    d = mech.delta(np.array([eps0, 2 * eps0]))
    assert np.all(d == 0.0)


def test_laplace_delta_is_positive_below_the_pure_epsilon():
    # closed form of the Laplace hockey-stick curve: delta(eps) = 1 - exp((eps - 1/b) / 2)
    b = 2.0
    eps = 0.5 * (1 - 1e-6)
    exact = -math.expm1((eps - 1 / b) / 2)
    assert LaplaceMechanism(b=b).delta(eps) == pytest.approx(exact, rel=1e-6)
    assert LaplaceMechanism(b=b).delta(eps) > 0


def test_ledger_epsilon_at_zero():
    acct = PrivacyAccountant()
    assert acct.epsilon(0) == 0.0
    acct.record(LaplaceMechanism(b=2.0), count=3)
    acct.record(PureDPMechanism(epsilon=0.7))
    exact = 3 * Fraction(0.5) + Fraction(0.7)
    assert Fraction(acct.epsilon(0)) >= exact
    assert acct.epsilon(0) <= float(exact) * (1 + 1e-14)
    lo, hi = acct.epsilon_bounds(0)
    assert hi == acct.epsilon(0) and lo <= hi
    acct.step(noise_multiplier=1.0, sample_rate=0.01)
    with pytest.raises(ValueError, match=NO_PURE):
        acct.epsilon(0)
