"""accountant/routes.py: which representation answers a query.  The exact curve when a
mechanism has one (its answer is the closed form), else the PLD bracket (lower <= closed
form <= upper), else the RDP conversion; checked against the Gaussian closed forms
(Balle & Wang 2018, Theorem 8; Mironov 2017, Proposition 7) computed here with scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracles import gaussian_delta_curve, gaussian_epsilon
from scipy import stats

from dpacct.accountant import (
    Capabilities,
    Mechanism,
    MissingCapabilityError,
    compose,
    poisson_subsample,
    routes,
)
from dpacct.accountant.laws.loss_law import GaussianLossLaw
from dpacct.accountant.mechanism_cache import PLDUpper
from dpacct.mechanisms import GaussianMechanism

DELTAS = [1e-3, 1e-6, 1e-10]


def gdp_delta(eps, mu):
    return gaussian_delta_curve(eps, mu)


def gdp_epsilon(delta, mu):
    return gaussian_epsilon(mu, delta)


class LawOnly(Mechanism):
    """The mu-GDP Gaussian known only by its loss law (no closed-form curve)."""

    declares = Capabilities(loss_laws=True)

    def __init__(self, mu: float) -> None:
        self.mu = mu

    def _loss_laws(self):
        law = GaussianLossLaw(mu=self.mu)
        return law, law


class RDPOnly(Mechanism):
    declares = Capabilities(rdp=True)

    def _rdp(self, alpha):
        return np.asarray(alpha, dtype=float) / 2.0  # the 1-GDP Gaussian's


class Nothing(Mechanism):
    declares = Capabilities()


@pytest.mark.parametrize("mu", [0.2, 1.0, 4.0])
@pytest.mark.parametrize("delta", DELTAS)
def test_the_exact_curve_is_inverted_when_present(mu, delta):
    m = GaussianMechanism(sigma=1.0 / mu)
    exact = gdp_epsilon(delta, mu)
    upper = routes.epsilon_upper(m, delta, None)
    assert exact * (1 - 1e-12) <= upper <= exact * (1 + 1e-9) + 1e-12
    lo, hi = routes.epsilon_bracket(m, delta, None)
    # (the reference is itself a float root: equal to the bracket within 1e-12)
    assert lo <= exact * (1 + 1e-12) and exact <= hi * (1 + 1e-12)
    assert hi - lo <= 1e-9 * exact + 1e-12


@pytest.mark.parametrize("mu", [0.5, 2.0])
@pytest.mark.parametrize("delta", DELTAS)
def test_the_pld_bracket_encloses_the_closed_form_otherwise(mu, delta):
    m = LawOnly(mu)
    assert not m.has_exact_curve and m.has_pld
    exact = gdp_epsilon(delta, mu)
    lo, hi = routes.epsilon_bracket(m, delta, None)
    assert lo <= exact <= hi <= exact * (1 + 1e-3)
    assert hi == routes.epsilon_upper(m, delta, None)
    found = routes.pld_upper(m, delta, None)
    assert isinstance(found, PLDUpper) and found.epsilon >= exact


def test_a_tighter_tolerance_gives_a_narrower_bracket():
    m = compose([LawOnly(1.0)], [5])
    exact = gdp_epsilon(1e-6, math.sqrt(5))
    widths = []
    for tol in (1e-2, 1e-4, 1e-6):
        lo, hi = routes.epsilon_bracket(m, 1e-6, tol)
        assert lo <= exact <= hi
        widths.append(hi - lo)
    assert widths[0] >= widths[1] >= widths[2]


@pytest.mark.parametrize("delta", DELTAS)
def test_the_rdp_route_converts_the_curve(delta):
    m = RDPOnly()
    upper = routes.epsilon_upper(m, delta, None)
    # sound (above the exact 1-GDP epsilon) and at most the classical conversion at
    # any order: alpha / 2 + log(1 / delta) / (alpha - 1) (Mironov 2017, Proposition 3)
    assert upper >= gdp_epsilon(delta, 1.0)
    classical = min(a / 2 + math.log(1 / delta) / (a - 1) for a in np.linspace(1.1, 200, 4000))
    assert upper <= classical
    assert routes.epsilon_bracket(m, delta, None) == (0.0, upper)


def test_derived_delta_is_sound_and_tight_and_follows_epsilon():
    m = LawOnly(1.0)
    eps = np.array([0.0, 0.5, 2.0, 4.0])
    got = routes.derived_delta(m, eps, None)
    exact = gdp_delta(eps, 1.0)
    assert np.all(got >= exact) and np.all(got <= exact * (1 + 1e-2) + 1e-12)
    # read on the grids epsilon() uses: delta(epsilon(d)) <= d
    run = compose([poisson_subsample(GaussianMechanism(sigma=1.0), 0.01)], [300])
    for d in (1e-5, 1e-9):
        e = run.epsilon(d)
        assert float(routes.derived_delta(run, np.array([e]), None)[0]) <= d * (1 + 1e-9)


def test_rdp_curve_from_the_laws_is_the_closed_form():
    alphas = np.array([1.5, 2.0, 32.0])
    np.testing.assert_allclose(
        routes.rdp_curve(LawOnly(0.7), alphas), alphas * 0.49 / 2, rtol=1e-14
    )
    np.testing.assert_allclose(
        routes.derived_rdp(LawOnly(0.7), alphas), alphas * 0.49 / 2, rtol=1e-14
    )


def test_tradeoff_exact_when_declared_else_a_lower_bound():
    fpr = np.array([1e-4, 0.05, 0.5, 0.9])
    exact = stats.norm.cdf(stats.norm.isf(fpr) - 1.0)
    np.testing.assert_allclose(routes.tradeoff_curve(GaussianMechanism(1.0), fpr, None), exact)
    derived = routes.tradeoff_curve(LawOnly(1.0), fpr, None)
    assert np.all(derived <= exact + 1e-12) and np.all(derived >= exact - 1e-2)


def test_a_mechanism_without_a_route_names_what_it_lacks():
    with pytest.raises(MissingCapabilityError, match="Nothing"):
        routes.epsilon_upper(Nothing(), 1e-5, None)
    with pytest.raises(MissingCapabilityError):
        routes.derived_rdp(Nothing(), np.array([2.0]))
