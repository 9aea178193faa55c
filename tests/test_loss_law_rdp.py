"""accountant/laws/loss_law_rdp.py: the Renyi divergence of the pair a privacy-loss law
describes, and the swapped law (the other neighbouring direction), against mpmath sums
and quadratures of the definitions (Mironov 2017, Definition 3)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from dpacct.accountant import Mechanism
from dpacct.accountant.laws.loss_law import AtomicLossLaw, GaussianLossLaw, PoissonSubsampledLossLaw
from dpacct.accountant.laws.loss_law_rdp import loss_law_rdp, swapped_loss_law


def mp_rdp_two_atoms(p0: float, q0: float, alpha: float) -> float:
    """D_alpha(P || Q) of P = (p0, 1 - p0), Q = (q0, 1 - q0), in 50 digits."""
    with mpmath.workdps(50):
        p, q, a = mpmath.mpf(p0), mpmath.mpf(q0), mpmath.mpf(alpha)
        total = p**a * q ** (1 - a) + (1 - p) ** a * (1 - q) ** (1 - a)
        return float(mpmath.log(total) / (a - 1))


@pytest.mark.parametrize(("p0", "q0"), [(0.9, 0.1), (0.5, 0.25), (0.999, 1e-6), (0.01, 0.02)])
@pytest.mark.parametrize("alpha", [1.01, 2.0, 7.5, 64.0])
def test_two_atom_law_against_mpmath(p0, q0, alpha):
    law = AtomicLossLaw.from_pair(np.array([p0, 1 - p0]), np.array([q0, 1 - q0]))
    expected = mp_rdp_two_atoms(p0, q0, alpha)
    assert float(loss_law_rdp(law, alpha)) == pytest.approx(expected, rel=1e-10)
    # the swapped law is the pair (Q, P)
    back = mp_rdp_two_atoms(q0, p0, alpha)
    assert float(loss_law_rdp(swapped_loss_law(law), alpha)) == pytest.approx(back, rel=1e-10)


def mp_gaussian_rdp(mu: float, alpha: float) -> float:
    """D_alpha(N(mu, 1) || N(0, 1)) by quadrature of E_Q[(dP/dQ)^alpha], 30 digits."""
    with mpmath.workdps(30):

        def integrand(x):
            return mpmath.npdf(x, mu, 1) ** alpha * mpmath.npdf(x, 0, 1) ** (1 - alpha)

        moment = mpmath.quad(integrand, [-40, 0, alpha * mu, 60])
        return float(mpmath.log(moment) / (alpha - 1))


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.5])
def test_gaussian_law_against_mpmath_quadrature(mu):
    alphas = [1.5, 2.0, 6.0]
    got = loss_law_rdp(GaussianLossLaw(mu=mu), alphas)
    for a, g in zip(alphas, got, strict=True):
        assert float(g) == pytest.approx(mp_gaussian_rdp(mu, a), rel=1e-12)


def test_mass_at_infinite_loss_gives_infinite_divergence_and_bad_orders_are_refused():
    law = AtomicLossLaw.from_pair(np.array([0.1, 0.9]), np.array([0.0, 1.0]))
    assert law.inf_mass == pytest.approx(0.1)
    assert np.all(np.isinf(loss_law_rdp(law, [1.5, 2.0])))
    # its swap has no mass at +inf (Q is absolutely continuous w.r.t. P): finite
    assert float(loss_law_rdp(swapped_loss_law(law), 2.0)) == pytest.approx(
        mp_rdp_two_atoms(0.0, 0.1, 2.0), rel=1e-10
    )
    for bad in (1.0, 0.5, math.nan):
        with pytest.raises(ValueError, match="alpha"):
            loss_law_rdp(GaussianLossLaw(mu=1.0), bad)


def test_loss_law_rdp_of_atomic_law_is_exact():
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    law = AtomicLossLaw.from_pair(p, q)
    for a in (1.5, 2.0, 7.0):
        exact = math.log(float(np.sum(p**a * q ** (1 - a)))) / (a - 1)
        assert float(loss_law_rdp(law, a)) == pytest.approx(exact, rel=1e-12)
    m = Mechanism.from_loss_laws(law)
    # both directions: the add direction is the swapped pair (Q, P)
    a = 3.0
    rev = math.log(float(np.sum(q**a * p ** (1 - a)))) / (a - 1)
    fwd = math.log(float(np.sum(p**a * q ** (1 - a)))) / (a - 1)
    assert float(m.rdp(a)) == pytest.approx(max(fwd, rev), rel=1e-12)


@pytest.mark.parametrize("generic", [False, True])
def test_swapped_law_is_the_other_direction(generic):
    # delta_{Q,P}(eps) = 1 - e^eps + e^eps delta_{P,Q}(-eps)
    if generic:
        law = PoissonSubsampledLossLaw(GaussianLossLaw(mu=2.0), 0.2, "remove")
    else:
        law = AtomicLossLaw.from_pair(
            np.array([0.6, 0.3, 0.1, 0.0]), np.array([0.1, 0.3, 0.4, 0.2])
        )
    swapped = swapped_loss_law(law)
    eps = np.linspace(-3.0, 3.0, 61)
    expected = 1.0 - np.exp(eps) + np.exp(eps) * law.hockey_stick(-eps)
    assert np.allclose(swapped.hockey_stick(eps), np.clip(expected, 0, 1), atol=1e-12)
    assert swapped_loss_law(swapped).hockey_stick(eps) == pytest.approx(law.hockey_stick(eps))


def test_closed_forms_are_declared_by_the_family_for_itself():
    """The engine takes a law's closed forms from ``closed_form``, which a subclass does
    not inherit (it may change the law) but may declare again."""
    from dpacct.accountant.capabilities import _DeclaredHere

    class Opaque(GaussianLossLaw):
        pass

    class Vouched(GaussianLossLaw):
        closed_form = _DeclaredHere("gaussian")

    law = AtomicLossLaw.from_pair(np.array([0.5, 0.5]), np.array([0.25, 0.75]))
    assert GaussianLossLaw(mu=1.0).closed_form == "gaussian" and law.closed_form == "atomic"
    assert Opaque(mu=1.0).closed_form is None
    assert swapped_loss_law(Opaque(mu=1.0)) is not Opaque(mu=1.0)  # wrapped, not trusted
    v = Vouched(mu=1.0)
    assert swapped_loss_law(v) is v
    np.testing.assert_array_equal(loss_law_rdp(v, [2.0, 3.0]), [1.0, 1.5])
