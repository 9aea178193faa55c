"""accountant/families/declared.py: the declarations a mechanism is built from (an exact curve, an
RDP curve, loss laws), their field checks, and what each derives, against closed forms
and mpmath."""

from __future__ import annotations

import math
from functools import partial

import mpmath
import numpy as np
import pytest
from oracles import gaussian_delta_curve, laplace_delta_curve

from dpacct.accountant import ADD_REMOVE, REPLACE_ONE, Mechanism, MissingCapabilityError
from dpacct.accountant.families.declared import (
    DeltaCurveDeclaration,
    LossLawDeclaration,
    RDPCurveDeclaration,
    check_name,
    check_relation,
    memo_rdp,
)
from dpacct.accountant.laws.loss_law import AtomicLossLaw, GaussianLossLaw

DELTA = 1e-5


gaussian_curve = gaussian_delta_curve


laplace_curve = laplace_delta_curve


def rr_renyi(eps0: float, alpha: float) -> float:
    """D_alpha of binary randomized response with P = (p, 1 - p), Q = (1 - p, p)."""
    with mpmath.workdps(40):
        t, a = mpmath.e ** mpmath.mpf(eps0), mpmath.mpf(alpha)
        p = t / (1 + t)
        return float(mpmath.log(p**a * (1 - p) ** (1 - a) + (1 - p) ** a * p ** (1 - a)) / (a - 1))


def test_check_relation_and_check_name():
    assert check_relation(ADD_REMOVE) == ADD_REMOVE and check_relation(REPLACE_ONE) == REPLACE_ONE
    with pytest.raises(ValueError, match="neighbouring must be"):
        check_relation("add")
    assert check_name("x") == "x"
    for bad in ("", None, 3):
        with pytest.raises(TypeError, match="name must be a non-empty string"):
            check_name(bad)


@pytest.mark.parametrize(
    ("build", "exc", "name"),
    [
        (lambda: DeltaCurveDeclaration(0.5, name="x"), TypeError, "delta_curve"),
        (lambda: DeltaCurveDeclaration(gaussian_curve, name=""), TypeError, "name"),
        (lambda: DeltaCurveDeclaration(gaussian_curve, "g", "swap"), ValueError, "neighbouring"),
        (lambda: RDPCurveDeclaration("a / 2", name="r"), TypeError, "rdp_curve"),
        (lambda: RDPCurveDeclaration(abs, name="r", epsilon_pure=0.0), ValueError, "pure_epsilon"),
        (lambda: RDPCurveDeclaration(abs, name="r", epsilon_pure=-1), ValueError, "pure_epsilon"),
        (lambda: LossLawDeclaration("gauss", GaussianLossLaw(mu=1.0)), TypeError, "remove"),
        (lambda: LossLawDeclaration(GaussianLossLaw(mu=1.0), None), TypeError, "add"),
        (lambda: LossLawDeclaration(*[GaussianLossLaw(mu=1.0)] * 2, name=""), TypeError, "name"),
    ],
)
def test_declarations_validate_their_fields(build, exc, name):
    with pytest.raises(exc, match=name):
        build()


def test_an_exact_curve_gives_rdp_only_when_it_reaches_zero():
    # Laplace b = 2 is 0.5-DP: its curve is 0 from eps = 0.5 on, its pure epsilon is
    # that end and its Renyi curve is finite (at most 0.5-DP RR's)
    lap = Mechanism.from_delta_curve(partial(laplace_curve, b=2.0), name="lap")
    assert lap.capabilities.rdp and lap.pure_epsilon == pytest.approx(0.5, rel=1e-9)
    a = 3.0
    # Laplace RDP (Mironov 2017, Proposition 6), eps0 = 1/b
    e0 = 0.5
    exact = math.log(
        a / (2 * a - 1) * math.exp((a - 1) * e0) + (a - 1) / (2 * a - 1) * math.exp(-a * e0)
    ) / (a - 1)
    assert exact <= float(lap.rdp(a)) <= min(exact * (1 + 1e-3), rr_renyi(0.5, a) * (1 + 1e-9))
    # the Gaussian never reaches 0: no finite Renyi curve follows from finitely many values
    gauss = Mechanism.from_delta_curve(gaussian_curve, name="gauss")
    assert not gauss.capabilities.rdp and gauss.pure_epsilon == math.inf
    with pytest.raises(MissingCapabilityError, match=r"gauss.*still positive"):
        gauss.rdp(2.0)


def test_an_rdp_curve_is_capped_by_its_pure_epsilon():
    # RDP of an eps-DP mechanism is at most that of eps-RR (Bun & Steinke 2016, Prop. 3.3)
    m = Mechanism.from_rdp(lambda a: 10.0 * np.asarray(a), name="loose", pure_epsilon=0.5)
    alphas = np.array([1.01, 2.0, 8.0])
    expected = [min(10 * a, rr_renyi(0.5, a)) for a in alphas]
    np.testing.assert_allclose(m.rdp(alphas), expected, rtol=1e-10)
    assert m.pure_epsilon == 0.5
    with pytest.raises(ValueError, match=r"neg.*negative"):
        Mechanism.from_rdp(lambda a: -np.ones_like(a), name="neg").rdp(2.0)


def test_loss_laws_give_the_worse_direction():
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    fwd = AtomicLossLaw.from_pair(p, q)
    back = AtomicLossLaw.from_pair(q, p)
    m = Mechanism.from_loss_laws(fwd, back)
    a = 4.0
    want = max(
        math.log(float(np.sum(p**a * q ** (1 - a)))) / (a - 1),
        math.log(float(np.sum(q**a * p ** (1 - a)))) / (a - 1),
    )
    assert float(m.rdp(a)) == pytest.approx(want, rel=1e-12)


def test_memo_rdp_computes_each_order_once():
    m = Mechanism.from_rdp(lambda a: np.asarray(a) / 2.0, name="memo")
    calls: list[list[float]] = []

    def compute(a):
        calls.append(list(a))
        return a * 3.0

    out = memo_rdp(m, np.array([[2.0, 3.0], [2.0, 5.0]]), compute)
    np.testing.assert_array_equal(out, [[6.0, 9.0], [6.0, 15.0]])
    out = memo_rdp(m, np.array([3.0, 7.0]), compute)
    np.testing.assert_array_equal(out, [9.0, 21.0])
    assert calls == [[2.0, 3.0, 5.0], [7.0]]


def test_rdp_with_pure_epsilon_caps():
    m = Mechanism.from_rdp(lambda a: a / 2.0, name="g", pure_epsilon=0.5)
    assert m.pure_epsilon == 0.5
    assert m.epsilon(DELTA) <= 0.5
    # the RDP curve is capped by randomized response's (Bun & Steinke 2016, Prop. 3.3)
    assert float(m.rdp(100.0)) <= 0.5


def test_loss_law_with_infinite_loss_has_no_rdp():
    law = AtomicLossLaw.from_pair(np.array([0.1, 0.5, 0.4]), np.array([0.0, 0.5, 0.5]))
    m = Mechanism.from_loss_laws(law, name="leaky")
    assert not m.has_rdp
    with pytest.raises(MissingCapabilityError, match=r"leaky.*remove.*infinite privacy loss"):
        m.rdp(2.0)
    assert m.epsilon(0.2) < math.inf  # (eps, delta) queries still work
