"""accountant/laws/delta_curve_law.py: connect-the-dots from an exact privacy curve to a loss
law that dominates it, checked against closed-form curves (Gaussian, Laplace, randomized
response)."""

from __future__ import annotations

import math
from functools import partial

import mpmath
import numpy as np
import pytest
from oracles import gaussian_delta_curve, laplace_delta_curve

from dpacct.accountant.laws.delta_curve_law import (
    CURVE_MAX_EPSILON,
    call_vectorised,
    curve_end,
    loss_law_from_delta_curve,
)
from dpacct.accountant.laws.loss_law_rdp import swapped_loss_law

gaussian_curve = gaussian_delta_curve


laplace_curve = laplace_delta_curve


def rr_curve(eps, eps0=1.0):
    """Binary randomized response with P = (p, 1 - p), Q = (1 - p, p), p = e^eps0 /
    (1 + e^eps0): delta(eps) = sum_x max(P(x) - e^eps Q(x), 0), summed here."""
    eps = np.asarray(eps, dtype=float)
    p = math.exp(eps0) / (1 + math.exp(eps0))
    return np.maximum(p - np.exp(eps) * (1 - p), 0.0) + np.maximum(1 - p - np.exp(eps) * p, 0.0)


@pytest.mark.parametrize(
    "curve",
    [
        partial(gaussian_curve, mu=0.3),
        partial(gaussian_curve, mu=3.0),
        partial(laplace_curve, b=0.7),
        # binary randomized response with eps0 = 2 (a pure-DP, bounded loss)
        lambda e: np.maximum(0.0, (np.exp(2.0) - np.exp(e)) / (1 + np.exp(2.0))),
    ],
    ids=["gauss0.3", "gauss3", "laplace", "rr"],
)
def test_connect_the_dots_law_dominates(curve):
    law = loss_law_from_delta_curve(curve)
    eps = np.concatenate([np.linspace(0.0, 3.0, 3001), np.geomspace(3.0, 40.0, 500)])
    d_true = curve(eps)
    d_law = law.hockey_stick(eps)
    assert np.all(d_law >= d_true)  # at grid points and between them
    assert np.max(d_law - d_true) <= 1e-6 * np.max(d_true) + 1e-15
    # negative epsilons: the symmetric extension 1 - e^-eps (1 - delta(eps))
    neg = law.hockey_stick(-eps[1:])
    sym = 1.0 - np.exp(-eps[1:]) * (1.0 - d_true[1:])
    assert np.all(neg >= sym - 1e-12)
    # the law is a pair of probability distributions, symmetric in its directions
    p_total = law.p.sum() + law.inf_mass
    q_total = (law.p * np.exp(-law.losses)).sum() + law.q_neg_inf_mass
    assert p_total == pytest.approx(1.0, abs=1e-9)
    assert q_total == pytest.approx(1.0, abs=1e-9)
    mirror = swapped_loss_law(law)
    assert np.allclose(mirror.hockey_stick(eps), d_law, rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("eps0", [0.1, 1.0, 3.0])
def test_the_law_of_a_pure_dp_curve_is_randomized_response_itself(eps0):
    # the curve of eps0-RR is linear in e^eps: its chords are exact, so the law must
    # be the two atoms +-eps0 with the RR masses, and reproduce the curve everywhere
    law = loss_law_from_delta_curve(partial(rr_curve, eps0=eps0))
    eps = np.linspace(-2 * eps0, 2 * eps0, 401)
    assert law.inf_mass == 0.0
    got = law.hockey_stick(eps)
    want = np.where(
        eps >= 0, rr_curve(np.abs(eps), eps0), 1 - np.exp(eps) * (1 - rr_curve(-eps, eps0))
    )
    assert np.all(got >= want - 1e-15)  # dominates
    # and equals it, up to the 1e-12 relative round-up the construction adds
    assert np.all(got - want <= 1e-9 * want + 1e-11)
    # the masses: e^eps0 / (1 + e^eps0) at +eps0 and 1 / (1 + e^eps0) at -eps0, in
    # mpmath; what the round-up spreads over other atoms is below 1e-8 in total
    top = mpmath.e**eps0 / (1 + mpmath.e**eps0)
    at_top = np.isclose(law.losses, eps0, rtol=1e-9, atol=0)
    at_bottom = np.isclose(law.losses, -eps0, rtol=1e-9, atol=0)
    assert float(law.p[at_top].sum()) == pytest.approx(float(top), rel=1e-9)
    assert float(law.p[at_bottom].sum()) == pytest.approx(float(1 - top), rel=1e-9)
    assert float(law.p[~(at_top | at_bottom)].sum()) < 1e-8


def test_curve_end_finds_the_zero_of_a_bounded_loss_and_the_tail_otherwise():
    # Laplace with b = 2: delta(eps) = 0 from eps = 1/b = 0.5 on
    assert curve_end(partial(laplace_curve, b=2.0), 1e-20) == pytest.approx(0.5, rel=1e-12)
    # the Gaussian never reaches 0: the end is where the curve crosses the tail
    end = curve_end(gaussian_curve, 1e-20)
    assert float(gaussian_curve(end)) <= 1e-20 < float(gaussian_curve(end * (1 - 1e-9)))
    assert curve_end(lambda e: np.zeros_like(e), 1e-20) == 0.0
    assert curve_end(lambda e: np.full_like(e, 0.5), 1e-20) == CURVE_MAX_EPSILON


def test_identical_outputs_give_the_zero_loss():
    law = loss_law_from_delta_curve(lambda e: np.zeros_like(e))
    assert list(law.losses) == [0.0] and list(law.p) == [1.0]


def test_call_vectorised_accepts_scalar_functions_and_names_nans():
    x = np.array([0.0, 1.0, 2.0])
    np.testing.assert_array_equal(call_vectorised(lambda e: float(e) + 1, x, "f", "o"), x + 1)
    np.testing.assert_array_equal(call_vectorised(lambda e: 3.0, x, "f", "o"), [3.0] * 3)
    with pytest.raises(ValueError, match=r"owner: the curve returned NaN at 1\.0"):
        call_vectorised(lambda e: np.where(e == 1.0, np.nan, e), x, "curve", "owner")


@pytest.mark.parametrize(
    ("curve", "kwargs", "exc", "text"),
    [
        (0.5, {}, TypeError, "delta_curve"),
        (gaussian_curve, {"tail": 0.0}, ValueError, "tail"),
        (gaussian_curve, {"rtol": -1.0}, ValueError, "rtol"),
        (lambda e: np.full_like(e, 1.5), {}, ValueError, r"\[0, 1\]"),
        (lambda e: np.minimum(1.0, 0.1 + 0.01 * e), {}, ValueError, "non-increasing"),
        (lambda e: np.maximum(0.0, 0.9 - 0.9 * e), {}, ValueError, "symmetric"),
    ],
    ids=["not-callable", "tail", "rtol", "above-one", "rising", "steep"],
)
def test_bad_curves_are_refused_naming_what_is_wrong(curve, kwargs, exc, text):
    with pytest.raises(exc, match=text):
        loss_law_from_delta_curve(curve, **kwargs)
