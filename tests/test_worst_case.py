"""accountant/families/worst_case.py: the worst-case pairs of a pure epsilon, a Gaussian-DP mu and
an (epsilon, delta) guarantee, against the pairs written out and summed in mpmath, and
their trade-off curves against a linear program over all randomized tests."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import optimize

from dpacct.accountant import REPLACE_ONE, Mechanism, MissingCapabilityError
from dpacct.accountant.families.worst_case import (
    EpsilonDeltaDeclaration,
    GaussianDPDeclaration,
    PureEpsilonDeclaration,
)


def rr_pair(eps0: float) -> tuple[list, list]:
    """Binary randomized response (Kairouz, Oh, Viswanath 2015, Theorem 2.1)."""
    with mpmath.workdps(40):
        p = mpmath.e ** mpmath.mpf(eps0) / (1 + mpmath.e ** mpmath.mpf(eps0))
        return [p, 1 - p], [1 - p, p]


def kov_pair(eps0: float, delta0: float) -> tuple[list, list]:
    """The four-point pair that dominates every (eps0, delta0)-DP mechanism (Kairouz,
    Oh, Viswanath 2015, Theorem 2.1): a revealing outcome of P-mass delta0 each way."""
    with mpmath.workdps(40):
        d, t = mpmath.mpf(delta0), mpmath.e ** mpmath.mpf(eps0)
        hi, lo = (1 - d) * t / (1 + t), (1 - d) / (1 + t)
        return [d, hi, lo, mpmath.mpf(0)], [mpmath.mpf(0), lo, hi, d]


def hockey_stick(p, q, eps: float) -> float:
    with mpmath.workdps(40):
        return float(mpmath.fsum(max(a - mpmath.e**eps * b, 0) for a, b in zip(p, q, strict=True)))


def renyi(p, q, alpha: float) -> float:
    with mpmath.workdps(40):
        a = mpmath.mpf(alpha)
        total = mpmath.fsum(x**a * y ** (1 - a) for x, y in zip(p, q, strict=True) if x > 0)
        return float(mpmath.log(total) / (a - 1))


def tradeoff_lp(p, q, alpha: float) -> float:
    """min over tests phi in [0, 1]^n of 1 - E_Q[phi] subject to E_P[phi] <= alpha
    (Dong, Roth, Su 2019, Definition 2.1), by linear programming."""
    p, q = np.array(p, dtype=float), np.array(q, dtype=float)
    res = optimize.linprog(-q, A_ub=[p], b_ub=[alpha], bounds=[(0, 1)] * p.size, method="highs")
    return 1.0 + res.fun


FPRS = [0.0, 1e-4, 0.05, 0.3, 0.7, 1.0]
EPS = [0.0, 0.1, 0.5, 1.0, 2.0, 5.0]


@pytest.mark.parametrize("eps0", [0.1, 1.0, 4.0])
def test_pure_epsilon_is_randomized_response(eps0):
    m = Mechanism.from_pure_epsilon(eps0)
    p, q = rr_pair(eps0)
    for eps in EPS:
        assert float(m.delta(eps)) == pytest.approx(hockey_stick(p, q, eps), rel=1e-12, abs=1e-17)
    for alpha in (1.5, 2.0, 30.0):
        assert float(m.rdp(alpha)) == pytest.approx(renyi(p, q, alpha), rel=1e-10)
    beta = m.tradeoff(np.array(FPRS))
    np.testing.assert_allclose(beta, [tradeoff_lp(p, q, a) for a in FPRS], atol=1e-9)
    assert m.pure_epsilon == eps0


@pytest.mark.parametrize(("eps0", "delta0"), [(0.5, 1e-6), (1.0, 0.01), (3.0, 0.2), (0.0, 0.1)])
def test_epsilon_delta_is_the_four_point_pair(eps0, delta0):
    m = Mechanism.from_epsilon_delta(eps0, delta0)
    p, q = kov_pair(eps0, delta0)
    for eps in EPS:
        assert float(m.delta(eps)) == pytest.approx(hockey_stick(p, q, eps), rel=1e-12, abs=1e-17)
    beta = m.tradeoff(np.array(FPRS))
    np.testing.assert_allclose(beta, [tradeoff_lp(p, q, a) for a in FPRS], atol=1e-9)
    # the revealing outcome has infinite loss: no finite Renyi divergence
    assert not m.has_rdp and m.pure_epsilon == math.inf
    with pytest.raises(MissingCapabilityError, match="every Renyi divergence is infinite"):
        m.rdp(2.0)


@pytest.mark.parametrize(("eps0", "delta0"), [(1.0, 1e-5), (0.5, 0.25), (2.0, 1e-12)])
def test_epsilon_delta_declaration_answers_its_own_pair(eps0, delta0):
    # the upper curve is rounded up on its rising part only: at and above eps0 it is
    # the declared delta0 exactly, so epsilon(delta0) is eps0 (review of session 41: a
    # factor on the whole sum put delta(eps0) an ulp above delta0, epsilon(delta0) = inf)
    m = Mechanism.from_epsilon_delta(eps0, delta0)
    assert float(m.delta(eps0)) == delta0 and float(m.delta(eps0 + 1.0)) == delta0
    assert m.epsilon(delta0) == eps0
    lo, hi = m.epsilon_bounds(delta0)
    assert lo <= eps0 == hi
    # below eps0 the curve is at or above the exact hockey stick (rounded up)
    p, q = kov_pair(eps0, delta0)
    assert float(m.delta(0.5 * eps0)) >= hockey_stick(p, q, 0.5 * eps0) * (1 - 1e-15)


def test_epsilon_delta_with_zero_delta_is_pure():
    m = Mechanism.from_epsilon_delta(0.7, 0.0)
    assert m.pure_epsilon == 0.7 and m.has_rdp
    p, q = rr_pair(0.7)
    assert float(m.rdp(3.0)) == pytest.approx(renyi(p, q, 3.0), rel=1e-10)


@pytest.mark.parametrize("mu", [0.3, 1.0, 3.0])
def test_gaussian_dp_states_the_gaussian_pair(mu):
    m = Mechanism.from_gdp(mu)
    assert m.gdp_mu() == mu
    # D_alpha(N(mu, 1) || N(0, 1)) by quadrature
    for alpha in (1.5, 4.0):
        with mpmath.workdps(30):

            def integrand(x, a=alpha):
                return mpmath.npdf(x, mu, 1) ** a * mpmath.npdf(x, 0, 1) ** (1 - a)

            exact = float(
                mpmath.log(mpmath.quad(integrand, [-40, 0, alpha * mu, 60])) / (alpha - 1)
            )
        assert float(m.rdp(alpha)) == pytest.approx(exact, rel=1e-12)
    # the trade-off of the threshold test at t: (Q(x > t), P(x <= t)) with Q = N(0, 1)
    t = 0.4
    fpr = float(mpmath.ncdf(-t))
    assert float(m.tradeoff(np.array([fpr]))[0]) == pytest.approx(float(mpmath.ncdf(t - mu)))


@pytest.mark.parametrize(
    ("build", "exc", "name"),
    [
        (lambda: PureEpsilonDeclaration(0.0), ValueError, "epsilon"),
        (lambda: PureEpsilonDeclaration(math.inf), ValueError, "epsilon"),
        (lambda: PureEpsilonDeclaration(1.0, neighbouring="swap"), ValueError, "neighbouring"),
        (lambda: GaussianDPDeclaration(0.0), ValueError, "mu"),
        (lambda: GaussianDPDeclaration(math.nan), ValueError, "mu"),
        (lambda: EpsilonDeltaDeclaration(1.0, 1.0), ValueError, "delta"),
        (lambda: EpsilonDeltaDeclaration(1.0, -0.1), ValueError, "delta"),
        (lambda: EpsilonDeltaDeclaration(-1.0, 0.1), ValueError, "epsilon"),
        (lambda: EpsilonDeltaDeclaration(1.0, 0.1, neighbouring=None), ValueError, "neighbouring"),
    ],
)
def test_declarations_validate_their_fields(build, exc, name):
    with pytest.raises(exc, match=name):
        build()


def test_declarations_keep_the_relation_and_describe_themselves():
    d = PureEpsilonDeclaration(1.0, neighbouring=REPLACE_ONE)
    assert d.neighbouring == REPLACE_ONE
    assert repr(d) == "PureEpsilonDeclaration(epsilon=1.0, neighbouring='replace-one')"
    assert repr(GaussianDPDeclaration(0.5)) == "GaussianDPDeclaration(mu=0.5)"
    assert GaussianDPDeclaration.declares.gdp and not PureEpsilonDeclaration.declares.gdp


def test_epsilon_delta_has_no_rdp_and_says_so():
    m = Mechanism.from_epsilon_delta(1.0, 1e-6)
    with pytest.raises(
        MissingCapabilityError, match=r"EpsilonDeltaMechanism\(epsilon=1.0.*delta=1e-06 > 0"
    ):
        m.rdp(2.0)
    # delta = 0 is pure DP, with an RDP curve
    pure = Mechanism.from_epsilon_delta(1.0, 0.0)
    assert pure.pure_epsilon == 1.0
    assert float(pure.rdp(2.0)) == pytest.approx(float(Mechanism.from_pure_epsilon(1.0).rdp(2.0)))
