"""The symmetrised loss law (accountant/laws/symmetrised_law.py) against independent values.

The reference curves here are computed from the *pair of distributions* by quadrature
(mpmath at 30 digits), never from the law's own distribution
functions: the mixture ``((1 - q) N(0, 1) + q N(mu, 1), N(0, 1))`` and its swap, and the
symmetric pair's curve read as ``max(delta_R, delta_A)`` at every real epsilon.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpacct.accountant.laws.loss_law import (
    AtomicLossLaw,
    GaussianLossLaw,
    PoissonSubsampledLossLaw,
    PrivacyLossLaw,
)
from dpacct.accountant.laws.symmetrised_law import SymmetrisedLossLaw

DPS = 30


def _mixture_curves(mu: float, q: float, eps: float) -> tuple[mp.mpf, mp.mpf]:
    """``delta`` of R = ((1-q) N0 + q N_mu, N0) and of its swap A at ``eps``, by
    30-digit quadrature of ``(p - e^eps r)_+`` split at the crossing points."""
    with mp.workdps(DPS):
        return _mixture_curves_at(mp.mpf(mu), mp.mpf(q), mp.mpf(eps))


def _mixture_curves_at(mu, q, eps):
    def p(x):
        return (1 - q) * mp.npdf(x) + q * mp.npdf(x, mu)

    def r(x):
        return mp.npdf(x)

    # the likelihood ratio p / r = 1 - q + q e^{mu x - mu^2/2} is increasing in x
    def cross(a):  # p / r = a  ->  x
        t = (a - 1 + q) / q
        return None if t <= 0 else (mp.log(t) + mu**2 / 2) / mu

    a = mp.e**eps
    xr = cross(a)
    dr = (
        mp.quad(lambda x: p(x) - a * r(x), [xr, xr + 5, mp.inf])
        if xr is not None
        else 1 - a
    )
    xa = cross(1 / a)  # r / p > a  <=>  p / r < 1 / a
    da = mp.quad(lambda x: r(x) - a * p(x), [-mp.inf, xa - 5, xa]) if xa is not None else 0
    return max(dr, mp.mpf(0)), max(da, mp.mpf(0))


CASES = [(2.0, 0.01), (1.0, 0.1), (0.5, 0.5), (4.0, 0.002)]


@pytest.mark.parametrize(("mu", "q"), CASES)
def test_curve_is_the_larger_of_both_orders(mu, q):
    """At every real epsilon the law's curve is max(delta_R, delta_A) of the mixture."""
    law = SymmetrisedLossLaw(PoissonSubsampledLossLaw(GaussianLossLaw(mu=mu), q, "remove"))
    for eps in (-1.0, -0.01, 0.0, 0.2, 3.0):
        dr, da = _mixture_curves(mu, q, eps)
        want = float(max(dr, da))
        got = float(law.hockey_stick(np.array([eps]))[0])
        assert got == pytest.approx(want, rel=1e-9, abs=1e-16), (eps, got, float(dr), float(da))


@pytest.mark.parametrize(("mu", "q"), CASES)
def test_larger_direction_is_the_remove_mixture_for_positive_eps(mu, q):
    """delta_R >= delta_A on eps >= 0 (proved in docs/theory/fixed_size.md): the
    condition under which the mirror construction is the symmetrisation."""
    for eps in (0.0, 0.05, 0.3, 1.0, 2.5):
        dr, da = _mixture_curves(mu, q, eps)
        with mp.workdps(DPS):
            assert dr >= da * (1 - mp.mpf(10) ** -25), (eps, dr, da)


def test_distribution_functions_are_consistent():
    """cdf + sf = total finite mass, dQ = e^{-L} dP on bins, and the atom at 0."""
    half = PoissonSubsampledLossLaw(GaussianLossLaw(mu=1.5), 0.05, "remove")
    law = SymmetrisedLossLaw(half)
    x = np.linspace(-3, 3, 121)
    np.testing.assert_allclose(law.cdf_p(x) + law.sf_p(x), 1.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(law.cdf_q(x) + law.sf_q(x), 1.0, rtol=0, atol=1e-15)
    assert law.cdf_p(np.array([0.0]))[0] - law.cdf_p(np.array([-1e-300]))[0] == pytest.approx(
        law.atom, rel=1e-12
    )
    # bins away from 0: Q-mass between the e^{-L} bounds of the P-mass
    edges = np.linspace(-2.0, 2.0, 81)
    mp_, mq_ = law.bin_masses(edges)
    lo, hi = edges[:-1], edges[1:]
    assert np.all(mq_ <= mp_ * np.exp(-lo) * (1 + 1e-9) + 1e-300)
    assert np.all(mq_ >= mp_ * np.exp(-hi) * (1 - 1e-9))
    # the symmetric pair: Q_S(L <= -t) = P_S(L >= t)
    t = np.array([0.01, 0.1, 0.5])
    np.testing.assert_allclose(law.cdf_q(-t), law.sf_p(t), rtol=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    mu=st.floats(0.05, 8.0),
    q=st.floats(1e-4, 1.0),
    eps=st.floats(0.0, 5.0),
)
def test_symmetric_duality(mu, q, eps):
    """delta(-eps) = 1 - e^{-eps} (1 - delta(eps)): the pair is its own swap."""
    law = SymmetrisedLossLaw(PoissonSubsampledLossLaw(GaussianLossLaw(mu=mu), q, "remove"))
    d = law.hockey_stick(np.array([-eps, eps]))
    assert d[0] == pytest.approx(1 - np.exp(-eps) * (1 - d[1]), rel=1e-9, abs=1e-14)
    assert law.atom >= 0.0


class _TooHeavy(PrivacyLossLaw):
    """Not a pair's larger direction: P-mass 0.9 and Q-mass 0.5 on L > 0."""

    def cdf_p(self, x):
        return np.where(np.asarray(x) < 0, 0.0, 0.1)

    def sf_p(self, x):
        return np.where(np.asarray(x) < 0, 1.0, 0.9)

    def cdf_q(self, x):
        return np.where(np.asarray(x) < 0, 0.0, 0.5)

    def sf_q(self, x):
        return np.where(np.asarray(x) < 0, 1.0, 0.5)


def test_refuses_a_law_that_is_not_the_larger_direction():
    with pytest.raises(ValueError, match="not the larger direction"):
        SymmetrisedLossLaw(_TooHeavy())


def test_bad_input():
    with pytest.raises(TypeError, match="half"):
        SymmetrisedLossLaw("gaussian")
    atomic = AtomicLossLaw(np.array([0.5]), np.array([1.0]), lattice=0.5)
    with pytest.raises(ValueError, match="continuous"):
        SymmetrisedLossLaw(atomic)
