"""accountant/families/declared.py: the declarations a mechanism is built from (an exact curve, an
RDP curve, loss laws), their field checks, and what each derives, against closed forms
and mpmath."""

from __future__ import annotations

import math
from functools import partial

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
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


# ---------------------------------------------------------------- delta_down (issue 37)
def _rr_truth_epsilon(p: float, k: int, delta: float):
    """The true epsilon of k-ary RR at ``delta``, at 60 digits (its own precision):
    ``max(0, eps0 + log1p(-delta / p))``, ``eps0 = log(p (k - 1) / (1 - p))`` (0 from
    ``delta = delta(0) = p - q`` on)."""
    with mpmath.workdps(60):
        pm, dm = mpmath.mpf(p), mpmath.mpf(delta)
        qm = (1 - pm) / (k - 1)
        if dm >= pm - qm:
            return mpmath.mpf(0)
        return mpmath.log(pm / qm) + mpmath.log1p(-dm / pm)


def _declared_rr(p: float, k: int, twin: bool):
    from dpacct.mechanisms import RandomizedResponse

    rr = RandomizedResponse(p=p, k=k)
    down = rr._delta_exact_down if twin else None
    return rr, Mechanism.from_delta_curve(rr._delta_exact, name="rr", delta_down=down)


@pytest.mark.parametrize(
    ("p", "k", "delta"),
    [(0.5 + 1e-9, 2, 1e-12), (1 / 3 + 4e-13, 3, 1e-290), (0.1 + 3e-7, 10, 2e-8), (0.75, 2, 0.1)],
)
def test_a_declared_lower_curve_certifies_the_lower_end(p, k, delta):
    """Randomized response declared by its upper curve and its rounded-down twin: the lower
    end is at or below the 60-digit true epsilon, and is the one RandomizedResponse itself
    gives (both read the same lower curve).  Fails on c16fd7f (no delta_down)."""
    rr, declared = _declared_rr(p, k, twin=True)
    lo, hi = declared.epsilon_bounds(delta)
    assert lo == rr.epsilon_bounds(delta)[0]
    with mpmath.workdps(60):
        truth = _rr_truth_epsilon(p, k, delta)
        assert mpmath.mpf(lo) <= truth <= mpmath.mpf(hi)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    k=st.sampled_from([2, 3, 10, 1000]),
    log_offset=st.floats(-15.0, -0.001),
    log_delta=st.floats(-300.0, -0.31),
)
def test_declared_lower_curve_property(k, log_offset, log_delta):
    p = 1.0 / k + (1.0 - 1.0 / k) * 10.0**log_offset
    delta = 10.0**log_delta
    _, declared = _declared_rr(p, k, twin=True)
    lo, hi = declared.epsilon_bounds(delta)
    with mpmath.workdps(60):
        assert mpmath.mpf(lo) <= _rr_truth_epsilon(p, k, delta) <= mpmath.mpf(hi)


def test_without_a_lower_curve_the_lower_end_is_the_declared_curves_crossing():
    """Without delta_down the curve is taken as exact: the lower end is within the
    bisection's 1e-13 of where the float curve crosses delta.  A float curve that errs
    low (here the author's exp(eps) q cancels near p = 1/k) puts it above the truth;
    the docstring says so."""
    p, k, delta = 1 / 3 + 4e-13, 3, 1e-290
    q = (1 - p) / (k - 1)
    naive = Mechanism.from_delta_curve(lambda e: np.maximum(0.0, p - np.exp(e) * q), name="rr")
    lo, hi = naive.epsilon_bounds(delta)
    assert 0.0 < lo <= hi <= lo * (1 + 1e-12)
    with mpmath.workdps(60):
        assert mpmath.mpf(lo) > _rr_truth_epsilon(p, k, delta)  # not certified


def test_a_lower_curve_is_checked():
    curve = laplace_delta_curve
    with pytest.raises(TypeError, match="delta_down"):
        Mechanism.from_delta_curve(curve, name="lap", delta_down=0.5)
    above = Mechanism.from_delta_curve(curve, name="lap", delta_down=lambda e: curve(e) + 1e-3)
    with pytest.raises(ValueError, match="delta_down"):
        above.epsilon_bounds(1e-6)
    # a lower curve below 0 somewhere is still a lower bound: kept, not refused
    low = Mechanism.from_delta_curve(curve, name="lap", delta_down=lambda e: curve(e) - 1e-3)
    lo, hi = low.epsilon_bounds(0.1)
    assert 0.0 < lo <= hi
