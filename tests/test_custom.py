"""Five-line user-defined mechanisms, one per declared capability.

Each capability (an exact delta(eps) curve, an RDP curve, a privacy-loss law, a pure
epsilon, a fixed (epsilon, delta)) is declared in a few lines, then composed,
Poisson-subsampled, recorded in a ledger and calibrated, and every answer is checked
against a value computed independently of the engine:

* Gaussian closed forms: the curve of a ``mu``-GDP mechanism (Balle & Wang 2018,
  Theorem 8; Dong, Roth, Su 2019, Corollary 2.13: ``k`` compositions are
  ``mu sqrt(k)``-GDP), inverted with ``scipy.optimize.brentq``;
* exact sums in mpmath for randomized response and the Kairouz-Oh-Viswanath pair,
  composed and Poisson-subsampled by enumeration of the binomial counts;
* dp_accounting's PLDs (``from_privacy_parameters`` for the (eps, delta) pair;
  ``from_gaussian_mechanism`` with ``pessimistic_estimate=False`` for certified lower
  bounds of the subsampled Gaussian).

The derived answers must be sound (never below the exact value) and tight where the
capability allows.  Queries that cannot be answered soundly raise an error naming the
mechanism and what it lacks.
"""

from __future__ import annotations

import math
from functools import partial

import mpmath
import numpy as np
import pytest
from oracles import (
    gaussian_delta_curve,
    gaussian_epsilon,
    gaussian_mu,
    invert_delta,
    laplace_delta_curve,
)
from scipy import optimize

from dpacct.accountant import (
    ADD_REMOVE,
    REPLACE_ONE,
    Capabilities,
    GaussianLossLaw,
    Mechanism,
    MissingCapabilityError,
    PrivacyAccountant,
    compose,
    poisson_subsample,
    subsample_without_replacement,
)
from dpacct.accountant.families.custom import (
    loss_law_from_delta_curve,
)
from dpacct.calibrators import calibrate
from dpacct.mechanisms import GaussianMechanism, LaplaceMechanism, ReplaceOneGaussianMechanism

DELTA = 1e-5


# ----------------------------------------------------------------------------------
# independent references
# ----------------------------------------------------------------------------------
gaussian_curve = gaussian_delta_curve


laplace_curve = laplace_delta_curve


def pair_composed_delta(p, q, count: int, eps: float) -> mpmath.mpf:
    """Exact delta(eps) of ``count`` independent copies of a pair on finitely many
    outcomes (P-masses ``p``, Q-masses ``q``; index 0 may be P-only), by enumeration
    of the multinomial counts, in 50-digit arithmetic."""
    mpmath.mp.dps = 50
    p = [mpmath.mpf(x) for x in p]
    q = [mpmath.mpf(x) for x in q]
    n = len(p)
    total = mpmath.mpf(0)

    def rec(i, left, coef, pp, qq):
        nonlocal total
        if i == n - 1:
            c = coef
            pp2, qq2 = pp * p[i] ** left, qq * q[i] ** left
            total += c * max(mpmath.mpf(0), pp2 - mpmath.e**eps * qq2)
            return
        for j in range(left + 1):
            rec(i + 1, left - j, coef * mpmath.binomial(left, j), pp * p[i] ** j, qq * q[i] ** j)

    rec(0, count, mpmath.mpf(1), mpmath.mpf(1), mpmath.mpf(1))
    return total


def subsampled_pairs(p, q, rate):
    """Remove and add pairs of the Poisson-subsampled mechanism (Zhu, Dong, Wang 2022,
    Theorem 11): ``((1-r) Q + r P, Q)`` and ``(Q, (1-r) Q + r P)``."""
    mix = [(1 - rate) * b + rate * a for a, b in zip(p, q, strict=True)]
    return (mix, list(q)), (list(q), mix)


# ----------------------------------------------------------------------------------
# 1. an exact delta(eps) curve
# ----------------------------------------------------------------------------------
def test_delta_curve_five_lines():
    m = Mechanism.from_delta_curve(gaussian_curve, name="gaussian mu=1")
    assert repr(m) == "DeltaCurveMechanism(name='gaussian mu=1')"
    # the mechanism itself: the curve, inverted
    assert m.epsilon(DELTA) == pytest.approx(gaussian_epsilon(1.0, DELTA), rel=1e-10)
    # composed 10 times: mu = sqrt(10) (Dong, Roth, Su 2019, Corollary 2.13)
    exact = gaussian_epsilon(math.sqrt(10), DELTA)
    run = compose([m], counts=[10])
    got = run.epsilon(DELTA)
    assert exact <= got <= exact * (1 + 1e-3)
    lo, hi = run.epsilon_bounds(DELTA)
    assert lo <= hi == got
    assert run.delta(exact) >= DELTA * (1 - 1e-9)
    # a ledger gives the same answer
    acct = PrivacyAccountant()
    acct.record(m, 4)
    acct.record(m, 6)
    assert acct.epsilon(DELTA) == pytest.approx(got, rel=1e-9)


def test_delta_curve_poisson_subsampled_against_dp_accounting():
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    sigma, rate, steps = 1.0, 0.01, 1000
    m = Mechanism.from_delta_curve(partial(gaussian_curve, mu=1.0 / sigma), name="gaussian")
    got = compose([poisson_subsample(m, rate)], counts=[steps]).epsilon(DELTA)
    interval = 1e-4
    low = (
        pld.from_gaussian_mechanism(
            sigma,
            sampling_prob=rate,
            pessimistic_estimate=False,
            value_discretization_interval=interval,
        )
        .self_compose(steps)
        .get_epsilon_for_delta(DELTA)
    )
    # sound: never below dp_accounting's certified lower bound; tight: within its
    # discretisation loss (count * interval) plus 0.2 %
    assert low <= got <= (low + steps * interval) * 1.002


def test_delta_curve_calibrates():
    # family: 10 compositions of a mu-GDP curve; target (2, 1e-5)
    def family(mu):
        m = Mechanism.from_delta_curve(partial(gaussian_curve, mu=mu), name=f"mu={mu:.6g}")
        return compose([m], counts=[10])

    cal = calibrate(family, epsilon=2.0, delta=DELTA, interval=(0.1, 0.5))
    mu_star = gaussian_mu(2.0, DELTA) / math.sqrt(10)
    assert cal.epsilon <= 2.0
    assert cal.parameter <= mu_star * (1 + 1e-9)  # the budget is met for the true curve
    assert cal.parameter == pytest.approx(mu_star, rel=2e-3)


def test_delta_curve_bounded_loss_has_rdp_and_pure_epsilon():
    # the Laplace curve reaches 0 at eps = 1/b: a bounded loss, no mass at +inf
    m = Mechanism.from_delta_curve(partial(laplace_curve, b=2.0), name="laplace b=2")
    assert m.pure_epsilon == pytest.approx(0.5, rel=1e-9)
    assert m.pure_epsilon >= 0.5
    assert m.has_rdp
    # Laplace RDP (Mironov 2017, Proposition 6) at alpha = 2, eps0 = 1/b = 0.5
    a, e0 = 2.0, 0.5
    exact = math.log(
        a / (2 * a - 1) * math.exp((a - 1) * e0) + (a - 1) / (2 * a - 1) * math.exp(-a * e0)
    ) / (a - 1)
    assert exact <= float(m.rdp(2.0)) <= exact + 1e-4
    # so it can be subsampled without replacement once stated for replace-one
    local = Mechanism.from_delta_curve(
        partial(laplace_curve, b=2.0), name="laplace b=2", neighbouring=REPLACE_ONE
    )
    step = subsample_without_replacement(local, 0.1)
    assert 0 < step.epsilon(DELTA) < local.epsilon(DELTA)


def test_delta_curve_without_rdp_says_what_it_lacks():
    m = Mechanism.from_delta_curve(gaussian_curve, name="gaussian mu=1")
    assert not m.has_rdp
    with pytest.raises(MissingCapabilityError, match=r"gaussian mu=1.*delta\(eps\) curve"):
        m.rdp(2.0)
    # without an RDP curve, subsampling without replacement amplifies the curve itself
    # (Balle, Barthe, Gaboardi 2018, Table 1); composing that needs PLDs or RDP, which
    # it has neither of: the error names the part
    local = Mechanism.from_delta_curve(gaussian_curve, name="local-gauss", neighbouring=REPLACE_ONE)
    step = subsample_without_replacement(local, 0.1)
    with pytest.raises(MissingCapabilityError, match=r"without a PLD: .*local-gauss"):
        compose([step], [10]).epsilon(DELTA)


def test_delta_curve_subsamples_without_replacement_by_amplification():
    """Independent value: the Gaussian's epsilon at delta / q by mpmath bisection of
    the Balle-Wang curve, then ``log(1 + q (e^eps - 1))``."""
    q = 0.1
    local = Mechanism.from_delta_curve(gaussian_curve, name="local-gauss", neighbouring=REPLACE_ONE)
    step = subsample_without_replacement(local, q)
    eps_b = mpmath.mpf(gaussian_epsilon(1.0, DELTA / q))
    want = float(mpmath.log1p(q * mpmath.expm1(eps_b)))
    got = step.epsilon(DELTA)
    assert want <= got <= want * (1 + 1e-6)
    assert step.delta(got) <= DELTA * (1 + 1e-9)
    lo, hi = step.epsilon_bounds(DELTA)
    assert lo == 0.0 and hi == got  # no lower bound from an amplification bound


# ----------------------------------------------------------------------------------
# 2. an RDP curve
# ----------------------------------------------------------------------------------
def cks_epsilon(rdp, delta):
    """Canonne, Kamath, Steinke 2020, Proposition 12, minimised by scipy over alpha."""

    def f(log_am1):
        a = 1.0 + math.exp(log_am1)
        return rdp(a) + math.log1p(-1 / a) - (math.log(delta) + math.log(a)) / (a - 1)

    res = optimize.minimize_scalar(
        f, bounds=(-8.0, 9.0), method="bounded", options={"xatol": 1e-10}
    )
    return float(res.fun)


def test_rdp_five_lines():
    sigma = 2.0
    m = Mechanism.from_rdp(lambda a: a / (2 * sigma**2), name="gaussian sigma=2")
    assert repr(m) == "RDPCurveMechanism(name='gaussian sigma=2')"
    run = compose([m], counts=[10])
    # RDP composition adds; the conversion is sound (>= the exact Gaussian) and the
    # real-order optimum of the CKS bound
    ref = cks_epsilon(lambda a: 10 * a / (2 * sigma**2), DELTA)
    exact = gaussian_epsilon(math.sqrt(10) / sigma, DELTA)
    got = run.epsilon(DELTA)
    assert exact <= got
    assert got == pytest.approx(ref, rel=1e-6)
    assert got >= ref * (1 - 1e-9)
    # RDP gives no lower bound
    assert run.epsilon_bounds(DELTA) == (0.0, got)
    acct = PrivacyAccountant()
    acct.record(m, 10)
    assert acct.epsilon(DELTA) == pytest.approx(got, rel=1e-9)
    cal = calibrate(
        lambda s: compose([Mechanism.from_rdp(lambda a: a / (2 * s**2), name="g")], [10]),
        epsilon=2.0,
        delta=DELTA,
    )
    # independent: sigma at which the CKS bound of 10 alpha / (2 sigma^2) is 2
    s_ref = optimize.brentq(
        lambda s: cks_epsilon(lambda a: 10 * a / (2 * s**2), DELTA) - 2.0, 1.0, 50.0
    )
    assert cal.epsilon <= 2.0
    assert cal.parameter == pytest.approx(s_ref, rel=2e-3)
    assert cal.parameter >= s_ref * (1 - 1e-6)


def test_rdp_subsampled_is_sound_against_the_exact_subsampled_gaussian():
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    sigma, rate, steps = 1.0, 0.01, 1000
    m = Mechanism.from_rdp(lambda a: a / (2 * sigma**2), name="gaussian")
    step = poisson_subsample(m, rate)
    # at integer orders the general bound is never below the exact subsampled-Gaussian
    # RDP (Mironov, Talwar, Zhang 2019, Section 3.3), evaluated in mpmath
    mpmath.mp.dps = 40
    for a in (2, 5, 20):
        exact = mpmath.log(
            sum(
                mpmath.binomial(a, k)
                * (1 - rate) ** (a - k)
                * mpmath.mpf(rate) ** k
                * mpmath.e ** ((k * k - k) / (2 * sigma**2))
                for k in range(a + 1)
            )
        ) / (a - 1)
        got = float(step.rdp(float(a)))
        assert got >= float(exact) * (1 - 1e-12)
        assert got <= float(exact) * 1.5
    got = compose([step], counts=[steps]).epsilon(DELTA)
    low = (
        pld.from_gaussian_mechanism(sigma, sampling_prob=rate, pessimistic_estimate=False)
        .self_compose(steps)
        .get_epsilon_for_delta(DELTA)
    )
    assert low <= got <= 2 * low


def test_rdp_replace_one_subsamples_without_replacement():
    m = Mechanism.from_rdp(lambda a: a / 2.0, name="g", neighbouring=REPLACE_ONE)
    assert m.neighbouring == REPLACE_ONE
    step = subsample_without_replacement(m, 0.01)
    assert 0 < step.epsilon(DELTA) < m.epsilon(DELTA)
    with pytest.raises(ValueError, match="poisson_subsample"):
        poisson_subsample(m, 0.01)


# ----------------------------------------------------------------------------------
# 3. a privacy-loss law
# ----------------------------------------------------------------------------------
class OpaqueGaussianLaw(GaussianLossLaw):
    """A Gaussian law the engine does not recognise: forces the generic quadrature."""


def test_loss_law_five_lines():
    m = Mechanism.from_loss_laws(GaussianLossLaw(mu=1.0))
    assert repr(m) == "LossLawMechanism(law=GaussianLossLaw(mu=1.0))"
    # rdp() is finite now: the Renyi divergence of the law, alpha mu^2 / 2
    assert np.array_equal(m.rdp([2.0, 10.0]), [1.0, 5.0])
    exact = gaussian_epsilon(math.sqrt(10), DELTA)
    got = compose([m], counts=[10]).epsilon(DELTA)
    assert exact <= got <= exact * (1 + 1e-3)
    acct = PrivacyAccountant()
    acct.record(m, 10)
    assert acct.epsilon(DELTA) == pytest.approx(got, rel=1e-9)
    cal = calibrate(
        lambda mu: compose([Mechanism.from_loss_laws(GaussianLossLaw(mu=mu))], [10]),
        epsilon=2.0,
        delta=DELTA,
        interval=(0.1, 0.5),
    )
    mu_star = gaussian_mu(2.0, DELTA) / math.sqrt(10)
    assert cal.parameter <= mu_star * (1 + 1e-9)
    assert cal.parameter == pytest.approx(mu_star, rel=2e-3)


def test_loss_law_generic_quadrature_rdp():
    m = Mechanism.from_loss_laws(OpaqueGaussianLaw(mu=1.0))
    alpha = np.array([1.01, 1.5, 2.0, 5.0, 10.0])
    got = m.rdp(alpha)
    exact = alpha / 2.0
    assert np.all(got >= exact)  # an upper bound (chord quadrature)
    assert np.all(got <= exact * (1 + 1e-4))
    # far orders, where the law's tail fades into underflow before the integrand
    # decays, are refused (inf), never underestimated
    assert np.isinf(m.rdp(60.0))
    # compositions and subsampling through the generic law
    exact_eps = gaussian_epsilon(math.sqrt(10), DELTA)
    got_eps = compose([m], counts=[10]).epsilon(DELTA)
    assert exact_eps <= got_eps <= exact_eps * (1 + 1e-3)
    sub = compose([poisson_subsample(m, 0.01)], counts=[1000]).epsilon(DELTA)
    ref = compose(
        [poisson_subsample(Mechanism.from_loss_laws(GaussianLossLaw(mu=1.0)), 0.01)], [1000]
    ).epsilon(DELTA)
    assert sub == pytest.approx(ref, rel=1e-4)


# ----------------------------------------------------------------------------------
# 4. a pure epsilon
# ----------------------------------------------------------------------------------
def rr_pair(eps0):
    p = math.exp(eps0) / (1 + math.exp(eps0))
    return [p, 1 - p], [1 - p, p]


def test_pure_epsilon_five_lines():
    m = Mechanism.from_pure_epsilon(0.5)
    assert repr(m) == "PureEpsilonMechanism(epsilon=0.5)"
    P, Q = rr_pair(0.5)
    run = compose([m], counts=[20])
    for eps in (0.5, 2.0, 5.0):
        exact = float(pair_composed_delta(P, Q, 20, eps))
        got = float(run.delta(eps))
        assert exact <= got <= exact * (1 + 1e-6) + 1e-15
    assert run.pure_epsilon == pytest.approx(10.0, rel=1e-12)
    assert run.pure_epsilon >= 10.0
    # RDP: Bun & Steinke 2016, Proposition 3.3 (sinh form) in mpmath
    mpmath.mp.dps = 40
    a, e = mpmath.mpf(3), mpmath.mpf("0.5")
    ref = mpmath.log((mpmath.sinh(a * e) - mpmath.sinh((a - 1) * e)) / mpmath.sinh(e)) / (a - 1)
    assert float(m.rdp(3.0)) == pytest.approx(float(ref), rel=1e-12)
    acct = PrivacyAccountant()
    acct.record(m, 20)
    assert acct.epsilon(DELTA) == pytest.approx(run.epsilon(DELTA), rel=1e-12)
    # calibrate the per-query epsilon of 20 queries to (3, 1e-5)
    cal = calibrate(lambda e: compose([Mechanism.from_pure_epsilon(e)], [20]), 3.0, DELTA)
    assert cal.epsilon <= 3.0
    P, Q = rr_pair(cal.parameter)
    exact = invert_delta(lambda x: pair_composed_delta(P, Q, 20, x), DELTA)
    assert exact <= 3.0 * (1 + 1e-9)
    assert exact >= 3.0 * (1 - 2e-3)


def test_pure_epsilon_poisson_subsampled_exact():
    m = Mechanism.from_pure_epsilon(1.0)
    rate, count = 0.1, 8
    run = compose([poisson_subsample(m, rate)], counts=[count])
    P, Q = rr_pair(1.0)
    (rp, rq), (ap, aq) = subsampled_pairs(P, Q, rate)
    for eps in (0.1, 0.4, 1.0):
        exact = max(
            float(pair_composed_delta(rp, rq, count, eps)),
            float(pair_composed_delta(ap, aq, count, eps)),
        )
        got = float(run.delta(eps))
        assert exact * (1 - 1e-9) <= got <= exact * (1 + 1e-3) + 1e-12
    # the amplified pure epsilon (Balle, Barthe, Gaboardi 2018, Theorem 8)
    assert poisson_subsample(m, rate).pure_epsilon >= math.log1p(rate * math.expm1(1.0))


def test_pure_epsilon_replace_one_subsamples_without_replacement():
    m = Mechanism.from_pure_epsilon(1.0, neighbouring=REPLACE_ONE)
    step = subsample_without_replacement(m, 0.05)
    assert 0 < step.epsilon(DELTA) < 1.0


# ----------------------------------------------------------------------------------
# 5. a fixed (epsilon, delta)
# ----------------------------------------------------------------------------------
def kov_pair(eps0, d0):
    """Kairouz, Oh, Viswanath 2015, Theorem 2.1: P and Q of the worst (eps, delta) pair."""
    s = 1 + math.exp(eps0)
    p = [d0, (1 - d0) * math.exp(eps0) / s, (1 - d0) / s, 0.0]
    return p, p[::-1]


def test_epsilon_delta_five_lines_against_dp_accounting():
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    common = pytest.importorskip("dp_accounting.pld.common")
    m = Mechanism.from_epsilon_delta(1.0, 1e-6)
    assert repr(m) == "EpsilonDeltaMechanism(epsilon=1.0, delta=1e-06)"
    run = compose([m], counts=[10])
    ref = pld.from_privacy_parameters(common.DifferentialPrivacyParameters(1.0, 1e-6))
    ref = ref.self_compose(10)
    for d in (1e-4, 1e-2):
        assert run.epsilon(d) == pytest.approx(ref.get_epsilon_for_delta(d), rel=1e-9)
    P, Q = kov_pair(1.0, 1e-6)
    for eps in (2.0, 5.0):
        exact = float(pair_composed_delta(P, Q, 10, eps))
        assert exact * (1 - 1e-12) <= float(run.delta(eps)) <= exact * (1 + 1e-6)
    # a single one: the curve in closed form, and the f_{eps, delta} trade-off
    assert m.epsilon(1e-6) == 1.0
    assert m.delta(0.0) == pytest.approx(1e-6 + (1 - 1e-6) * math.tanh(0.5), rel=1e-12)
    a = 0.1
    assert float(m.tradeoff(a)) == pytest.approx(
        max(0.0, 1 - 1e-6 - math.e * a, math.exp(-1) * (1 - 1e-6 - a)), rel=1e-12
    )
    acct = PrivacyAccountant()
    acct.record(m, 10)
    assert acct.epsilon(1e-4) == pytest.approx(run.epsilon(1e-4), rel=1e-12)
    cal = calibrate(lambda e: compose([Mechanism.from_epsilon_delta(e, 1e-7)], [10]), 3.0, 1e-4)
    assert cal.epsilon <= 3.0
    P, Q = kov_pair(cal.parameter, 1e-7)
    exact = invert_delta(lambda x: pair_composed_delta(P, Q, 10, x), 1e-4)
    assert 3.0 * (1 - 2e-3) <= exact <= 3.0 * (1 + 1e-9)


def test_epsilon_delta_poisson_subsampled_exact():
    m = Mechanism.from_epsilon_delta(1.0, 1e-3)
    rate, count = 0.2, 6
    run = compose([poisson_subsample(m, rate)], counts=[count])
    P, Q = kov_pair(1.0, 1e-3)
    (rp, rq), (ap, aq) = subsampled_pairs(P, Q, rate)
    for eps in (0.2, 0.8):
        exact = max(
            float(pair_composed_delta(rp, rq, count, eps)),
            float(pair_composed_delta(ap, aq, count, eps)),
        )
        got = float(run.delta(eps))
        assert exact * (1 - 1e-9) <= got <= exact * (1 + 1e-3)


# ----------------------------------------------------------------------------------
# 6. a Gaussian-DP mu
# ----------------------------------------------------------------------------------
def mp_subsampled_gaussian_rdp(q: float, mu: float, alpha: int) -> float:
    """Integer-order RDP of the Poisson-subsampled Gaussian by the exact binomial sum
    (Mironov, Talwar, Zhang 2019, Theorem 5 with sigma = 1/mu), in 50-digit mpmath."""
    mpmath.mp.dps = 50
    q, mu = mpmath.mpf(q), mpmath.mpf(mu)
    total = mpmath.fsum(
        mpmath.binomial(alpha, k) * (1 - q) ** (alpha - k) * q**k
        * mpmath.e ** ((k * k - k) * mu * mu / 2)
        for k in range(alpha + 1)
    )  # fmt: skip
    return float(mpmath.log(total) / (alpha - 1))


def test_gdp_five_lines():
    m = Mechanism.from_gdp(0.5)
    assert repr(m) == "GaussianDPMechanism(mu=0.5)" and m.gdp_mu() == 0.5
    # composes in closed form: mu^2 adds up, sqrt(4 * 0.25) = 1
    run = compose([m], counts=[4])
    assert run.route == "exact" and run.gdp_mu() == pytest.approx(1.0, rel=1e-15)
    assert run.epsilon(DELTA) == pytest.approx(gaussian_epsilon(1.0, DELTA), rel=1e-10)
    # Poisson-subsampled: the tight subsampled-Gaussian RDP, against the binomial sum
    step = poisson_subsample(m, 0.05)
    for alpha in (2, 5, 16):
        want = mp_subsampled_gaussian_rdp(0.05, 0.5, alpha)
        assert float(step.rdp(alpha)) == pytest.approx(want, rel=1e-9)
    # in a ledger, and the same answer as the Gaussian mechanism of noise 1 / mu
    acct = PrivacyAccountant()
    acct.record(step, 100)
    ref = compose([poisson_subsample(GaussianMechanism(sigma=2.0), 0.05)], [100])
    assert acct.epsilon(DELTA) == pytest.approx(ref.epsilon(DELTA), rel=1e-9)
    # calibrates: the mu of 10 compositions at (1, 1e-5) is the exact Gaussian's / sqrt(10)
    cal = calibrate(lambda mu: compose([Mechanism.from_gdp(mu)], [10]), 1.0, DELTA)
    want = gaussian_mu(1.0, DELTA) / math.sqrt(10)
    assert cal.parameter <= want * (1 + 1e-9)  # the budget is met for the true curve
    assert cal.parameter == pytest.approx(want, rel=2e-3)


def test_gdp_replace_one_subsamples_without_replacement():
    m = Mechanism.from_gdp(1.0, neighbouring=REPLACE_ONE)
    step = subsample_without_replacement(m, 0.01)
    ref = subsample_without_replacement(ReplaceOneGaussianMechanism(sigma=1.0), 0.01)
    assert step.epsilon(DELTA) == pytest.approx(ref.epsilon(DELTA), rel=1e-12)


# ----------------------------------------------------------------------------------
# declarations
# ----------------------------------------------------------------------------------


def test_rdp_is_derived_from_declared_laws_and_named_when_it_cannot_be():
    """A subclass declaring only loss laws gets its Renyi curve from them (the
    Gaussian law's is ``alpha mu^2 / 2``, Mironov 2017, Proposition 7), a composition
    adds its parts' curves, and a part with no finite curve is named."""

    class LawsOnly(Mechanism):
        declares = Capabilities(loss_laws=True)

        def _loss_laws(self):
            law = GaussianLossLaw(mu=0.8)
            return law, law

    alphas = np.array([1.5, 2.0, 8.0])
    np.testing.assert_allclose(LawsOnly().rdp(alphas), alphas * 0.32, rtol=1e-14)
    assert LawsOnly().has_rdp  # derived: the law puts no mass at +inf
    mixed = compose([LawsOnly(), GaussianMechanism(sigma=2.0)], [3, 2])
    np.testing.assert_allclose(mixed.rdp(alphas), alphas * (3 * 0.32 + 2 / 8), rtol=1e-14)
    # composable with a part known only by its RDP curve: the sum of the two curves,
    # alpha (3 * 0.32 + 1/8), is that of a Gaussian with mu^2 = 2 (3 * 0.32 + 1/8)
    rdp_only = Mechanism.from_rdp(lambda a: a / 8.0, name="rdp only")
    both = compose([LawsOnly(), rdp_only], [3, 1])
    mu = math.sqrt(2 * (3 * 0.32 + 1 / 8))
    assert both.route == "rdp"
    assert gaussian_epsilon(mu, DELTA) <= both.epsilon(DELTA) <= 1.2 * gaussian_epsilon(mu, DELTA)
    curve_only = Mechanism.from_delta_curve(gaussian_curve, name="curve-only part")
    with pytest.raises(MissingCapabilityError, match="curve-only part"):
        compose([curve_only, GaussianMechanism(sigma=2.0)], [3, 2]).rdp(2.0)


def test_gaussian_dp_parts_compose_in_closed_form_and_keep_their_laws():
    """Every route of a composition of mu-GDP parts is the Gaussian's: its RDP, and its
    loss law when it is nested in another composition or subsampled (no looser route
    than the same parts flat)."""

    class OnlyMu(Mechanism):
        declares = Capabilities(gdp=True, exact_curve=True)

        def _gdp_mu(self):
            return 0.5

        def _delta_exact(self, epsilon):
            return gaussian_curve(epsilon, 0.5)

    run = compose([OnlyMu()], [4])
    assert run.route == "exact" and float(run.rdp(2.0)) == pytest.approx(1.0, rel=1e-14)
    lap = LaplaceMechanism(b=5.0)
    nested = compose([compose([GaussianMechanism(sigma=2.0)], [10]), lap], [1, 1])
    flat = compose([GaussianMechanism(sigma=2.0), lap], [10, 1])
    assert nested.route == flat.route == "pld"
    assert nested.epsilon(DELTA) == pytest.approx(flat.epsilon(DELTA), rel=1e-4)
    sub = compose([poisson_subsample(compose([GaussianMechanism(sigma=1.0)], [1]), 0.01)], [1000])
    ref = compose([poisson_subsample(GaussianMechanism(sigma=1.0), 0.01)], [1000])
    assert sub.epsilon(DELTA) == pytest.approx(ref.epsilon(DELTA), rel=1e-9)


def test_wrappers_describe_themselves_from_their_children():
    """No wrapper forwards the engine's private hooks: an algorithm is read through
    its public ``privacy``, compositions and subsamplers from their parts'
    capabilities."""
    from dpacct.mechanisms import Algorithm

    assert not any(hook in vars(Algorithm) for hook in Capabilities.HOOKS.values())
    assert not hasattr(Mechanism, "_overrides")
    lap = LaplaceMechanism(b=2.0)
    assert poisson_subsample(lap, 0.1).capabilities == Capabilities(rdp=True, loss_laws=True)
    rdp_only = Mechanism.from_rdp(lambda a: a / 8.0)
    assert poisson_subsample(rdp_only, 0.1).capabilities == Capabilities(rdp=True)
    mixed = compose([lap, rdp_only], [1, 1])
    assert mixed.capabilities == Capabilities(rdp=True) and mixed.route == "rdp"


# ----------------------------------------------------------------------------------
# mixtures and errors
# ----------------------------------------------------------------------------------
def test_capabilities_compose_together():
    parts = [
        Mechanism.from_delta_curve(gaussian_curve, name="g"),
        Mechanism.from_loss_laws(GaussianLossLaw(mu=1.0)),
        Mechanism.from_pure_epsilon(0.1),
        Mechanism.from_epsilon_delta(0.1, 1e-8),
    ]
    run = compose(parts, counts=[2, 3, 5, 5])
    lo, hi = run.epsilon_bounds(DELTA)
    # independent lower bound: the Gaussian parts alone (mu = sqrt(5))
    assert gaussian_epsilon(math.sqrt(5), DELTA) <= lo <= hi < math.inf
    # RDP is composable only where every part has one: the (eps, delta) part has none
    assert not run.has_rdp
    rdp_parts = compose([*parts[1:3], Mechanism.from_rdp(lambda a: a / 2, name="r")], [1, 1, 1])
    assert rdp_parts.has_rdp


@pytest.mark.parametrize(
    "build, exc, text",
    [
        (lambda: Mechanism.from_delta_curve(0.5, name="x"), TypeError, "delta_curve"),
        (lambda: Mechanism.from_delta_curve(gaussian_curve, name=""), TypeError, "name"),
        (lambda: Mechanism.from_rdp("a/2"), TypeError, "rdp_curve"),
        (lambda: Mechanism.from_rdp(lambda a: a, pure_epsilon=-1.0), ValueError, "pure_epsilon"),
        (lambda: Mechanism.from_loss_laws("gauss"), TypeError, "remove"),
        (lambda: Mechanism.from_pure_epsilon(0.0), ValueError, "epsilon"),
        (lambda: Mechanism.from_pure_epsilon(math.inf), ValueError, "epsilon"),
        (lambda: Mechanism.from_epsilon_delta(1.0, 1.0), ValueError, "delta"),
        (lambda: Mechanism.from_epsilon_delta(-1.0, 0.1), ValueError, "epsilon"),
        (lambda: Mechanism.from_pure_epsilon(1.0, neighbouring="swap"), ValueError, "neighbouring"),
    ],
)
def test_bad_declarations(build, exc, text):
    with pytest.raises(exc, match=text):
        build()


def test_bad_curves_are_named():
    rising = Mechanism.from_delta_curve(lambda e: np.minimum(1.0, 0.1 + 0.01 * e), name="rising")
    with pytest.raises(ValueError, match="non-increasing"):
        compose([rising], [2]).epsilon(DELTA)
    nan = Mechanism.from_delta_curve(lambda e: np.full(np.shape(e), np.nan), name="broken")
    with pytest.raises(ValueError, match=r"broken.*NaN"):
        nan.epsilon(DELTA)
    negative = Mechanism.from_rdp(lambda a: -np.ones_like(a), name="negrdp")
    with pytest.raises(ValueError, match=r"negrdp.*negative"):
        negative.epsilon(DELTA)
    # a one-directional curve steeper at 0 than any symmetric pair allows
    steep = lambda e: np.maximum(0.0, 0.9 - 0.9 * e)  # noqa: E731
    with pytest.raises(ValueError, match="symmetric"):
        loss_law_from_delta_curve(steep)


def test_scalar_only_functions_are_accepted():
    m = Mechanism.from_rdp(lambda a: float(a) / 2.0, name="scalar")  # float(array) fails
    assert m.epsilon(DELTA) == pytest.approx(Mechanism.from_rdp(lambda a: a / 2.0).epsilon(DELTA))
    c = Mechanism.from_delta_curve(lambda e: float(gaussian_curve(e)), name="scalar curve")
    assert c.epsilon(DELTA) == pytest.approx(gaussian_epsilon(1.0, DELTA), rel=1e-10)


def test_default_relation_and_exports():
    import dpacct

    assert Mechanism.from_pure_epsilon(1.0).neighbouring == ADD_REMOVE
    for name in (
        "mechanism_from_delta_curve",
        "mechanism_from_rdp",
        "mechanism_from_loss_laws",
        "mechanism_from_pure_epsilon",
        "mechanism_from_epsilon_delta",
        "MissingCapabilityError",
    ):
        assert getattr(dpacct, name) is getattr(dpacct.accountant, name)


def test_mechanism_from_spelling_is_deprecated_and_builds_the_same_mechanism():
    """One spelling per factory: ``Mechanism.from_*``; the module functions
    ``mechanism_from_*`` warn (DeprecationWarning, pointing at the caller's line) for
    one release and build the same mechanism."""
    import numpy as np

    from dpacct.accountant.families import custom as c
    from dpacct.accountant.laws.loss_law import GaussianLossLaw

    law = GaussianLossLaw(mu=0.7)
    lap = lambda e: np.maximum(0.0, 1 - np.exp((e - 1) / 2))  # noqa: E731  Laplace(b=1)
    half = lambda a: a / 2.0  # noqa: E731
    cases = {
        "loss_laws": ((law,), {}),
        "pure_epsilon": ((0.3,), {}),
        "epsilon_delta": ((1.0, 1e-6), {}),
        "gdp": ((0.5,), {"neighbouring": REPLACE_ONE}),
        "rdp": ((half,), {"name": "g"}),
        "delta_curve": ((lap,), {"name": "l"}),
    }
    for name, (args, kwargs) in cases.items():
        new = getattr(Mechanism, f"from_{name}")(*args, **kwargs)
        with pytest.warns(DeprecationWarning, match=rf"mechanism_from_{name} is deprecated") as w:
            old = getattr(c, f"mechanism_from_{name}")(*args, **kwargs)
        assert f"Mechanism.from_{name}" in str(w[0].message)
        assert w[0].filename == __file__  # the warning names the caller, not custom.py
        assert type(old) is type(new) and repr(old) == repr(new)
        assert old.epsilon(1e-5) == new.epsilon(1e-5)
    laplace = Mechanism.from_delta_curve(lap, name="l").epsilon(1e-3)
    assert abs(laplace - (1 + 2 * np.log1p(-1e-3))) < 1e-9
