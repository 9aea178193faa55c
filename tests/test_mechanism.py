"""The ``Mechanism`` base class (``dpacct.accountant.mechanism``): a subclass supplies
one primitive, declares it, and the base class derives every query from it.

Each test writes a small subclass that knows one thing about the Gaussian mechanism of
noise multiplier 1 (its exact curve, its RDP curve or its loss law) and checks the
derived queries against the Gaussian's closed forms (Balle & Wang 2018, Theorem 8;
Dong, Roth & Su 2022, Eq. 6; Mironov 2017, Proposition 7), computed here with scipy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracles import gaussian_delta_curve, gaussian_epsilon
from scipy import optimize, stats

from dpacct.accountant import Capabilities, Mechanism
from dpacct.accountant.laws.loss_law import GaussianLossLaw

MU = 1.0  # the Gaussian of noise multiplier 1 is 1-GDP
DELTAS = [1e-3, 1e-5, 1e-9]


def gdp_delta(eps, mu=MU):
    return gaussian_delta_curve(eps, mu)


def gdp_epsilon(delta, mu=MU):
    return gaussian_epsilon(mu, delta)


class CurveOnly(Mechanism):
    """Knows the exact privacy curve delta(eps)."""

    declares = Capabilities(exact_curve=True)

    def _delta_exact(self, epsilon):
        return gdp_delta(epsilon)


class RDPOnly(Mechanism):
    """Knows the RDP curve alpha / (2 sigma^2) = alpha / 2."""

    declares = Capabilities(rdp=True)

    def _rdp(self, alpha):
        return np.asarray(alpha, dtype=float) / 2.0


class LawOnly(Mechanism):
    """Knows the privacy-loss law of the dominating pair (both directions)."""

    declares = Capabilities(loss_laws=True)

    def _loss_laws(self):
        law = GaussianLossLaw(mu=MU)
        return law, law


@pytest.mark.parametrize("delta", DELTAS)
def test_exact_curve_is_inverted_for_epsilon(delta):
    m = CurveOnly()
    assert m.route == "exact"
    exact = gdp_epsilon(delta)
    assert exact <= m.epsilon(delta) <= exact * (1 + 1e-9) + 1e-12
    lo, hi = m.epsilon_bounds(delta)
    assert lo <= exact <= hi


@pytest.mark.parametrize("delta", DELTAS)
def test_rdp_curve_converts_to_a_sound_epsilon(delta):
    m = RDPOnly()
    got = m.epsilon(delta)
    # sound: never below the exact Gaussian epsilon (every conversion of the true RDP
    # curve is an upper bound on it) ...
    assert got >= gdp_epsilon(delta)

    # ... and at most the Canonne-Kamath-Steinke 2020 conversion, minimised over alpha here
    def cks(a):
        return a / 2 + math.log1p(-1 / a) - (math.log(delta) + math.log(a)) / (a - 1)

    best = optimize.minimize_scalar(cks, bounds=(1.0001, 1e4), method="bounded").fun
    assert got <= best * (1 + 1e-6)
    assert m.rdp(np.array([2.0, 7.5])) == pytest.approx([1.0, 3.75], rel=1e-15)


@pytest.mark.parametrize("delta", DELTAS)
def test_loss_law_gives_a_certified_bracket(delta):
    m = LawOnly()
    exact = gdp_epsilon(delta)
    lo, hi = m.epsilon_bounds(delta)
    assert lo <= exact <= hi <= exact * (1 + 1e-3)
    assert m.epsilon(delta) >= exact
    eps = np.array([0.0, 0.5, 2.0])
    assert np.all(m.delta(eps) >= gdp_delta(eps))
    # the grid PLDs: the pessimistic one above the exact curve, the optimistic one below
    up, _ = m.pld(pessimistic=True)
    down, _ = m.pld(pessimistic=False)
    assert np.all(down.delta(eps) <= gdp_delta(eps) + 1e-15)
    assert np.all(up.delta(eps) >= gdp_delta(eps))


def test_tradeoff_is_derived_from_the_curve():
    fpr = np.array([1e-3, 0.05, 0.3, 0.9])
    beta = CurveOnly().tradeoff(fpr)
    exact = stats.norm.cdf(stats.norm.isf(fpr) - MU)
    # a certified lower bound on the trade-off curve, close to the exact one
    assert np.all(beta <= exact + 1e-12) and np.all(beta >= exact - 1e-3)


def test_a_query_the_mechanism_cannot_answer_names_what_is_missing():
    with pytest.raises(NotImplementedError, match=r"cannot answer rdp\(\).*needs a Renyi-DP curve"):
        CurveOnly().rdp(2.0)


def test_declarations_must_match_the_hooks():
    with pytest.raises(TypeError, match="declares rdp=True but defines no _rdp"):

        class Missing(Mechanism):
            declares = Capabilities(rdp=True)

    with pytest.raises(TypeError, match="does not declare it"):

        class Undeclared(Mechanism):
            def _rdp(self, alpha):
                return alpha


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda m: m.epsilon(1.5), "delta"),
        (lambda m: m.epsilon(-1e-5), "delta"),
        (lambda m: m.delta(-1.0), "epsilon"),
        (lambda m: m.delta(float("nan")), "epsilon"),
    ],
)
def test_bad_queries_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call(CurveOnly())


def test_delta_of_no_epsilon_is_an_empty_array():
    """Review 44: an empty epsilon array raised on the PLD route (a reduction over no
    values); every route now answers an empty array of the same shape."""
    from dpacct.accountant import compose, poisson_subsample
    from dpacct.mechanisms import GaussianMechanism

    for mech in (
        GaussianMechanism(1.0),
        compose([poisson_subsample(GaussianMechanism(1.0), 0.1)], counts=[10]),
    ):
        for shape in ((0,), (0, 3)):
            out = mech.delta(np.zeros(shape))
            assert isinstance(out, np.ndarray) and out.shape == shape
