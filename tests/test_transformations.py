"""Tests for ``dpacct.mechanisms.algorithms.transformations``: your own transformations.

References: the Laplace mechanism's closed forms (pure epsilon ``c / b``; exact curve
``delta(eps) = 1 - exp((eps - c/b)/2)``), the analytic Gaussian curve of Balle & Wang
2018 (Theorem 8) written out with scipy, the group-privacy formula of Vadhan 2017
(Lemma 2.2) computed by hand, and empirical distances on random neighbours.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracles import gaussian_delta_sigma, gaussian_epsilon

from dpacct.accountant import compose
from dpacct.mechanisms import (
    ExponentialMechanism,
    ExponentialQuantile,
    GaussianMechanism,
    LaplaceMechanism,
    matching_transformation,
)
from dpacct.mechanisms.algorithms.transformations import (
    Transformation,
    TransformedMechanism,
    group_privacy,
    max_observed_distance,
    symmetric_distance,
)
from dpacct.mechanisms.primitives.generic import PureDPMechanism


def clipped_sum(bound):
    return Transformation(lambda x: float(np.clip(x, -bound, bound).sum()), bound, "l1",
                          name="clipped sum")


def clipped_vector_sum(bound):
    """Rows clipped to L2 norm ``bound``, summed: L2 stability ``bound``."""
    def f(x):
        x = np.atleast_2d(np.asarray(x, dtype=float))
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        return (x * np.minimum(1.0, bound / np.maximum(norms, 1e-300))).sum(0)
    return Transformation(f, bound, "l2", name="clipped vector sum")


# ----------------------------------------------------------------------------------
# scaled sensitivity: Laplace and Gaussian
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("c,b", [(1.0, 1.0), (2.0, 4.0), (0.3, 0.1), (5.0, 2.0)])
def test_laplace_epsilon_is_c_over_b(c, b):
    m = clipped_sum(c).then_laplace(scale=b)
    assert isinstance(m, TransformedMechanism)
    assert m.pure_epsilon == pytest.approx(c / b, rel=1e-12)
    for delta in (1e-2, 1e-5):
        # the exact Laplace curve inverted: eps = c/b + 2 log(1 - delta)
        expected = max(0.0, c / b + 2.0 * math.log1p(-delta))
        assert m.epsilon(delta) == pytest.approx(expected, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("c,s", [(1.0, 1.0), (2.0, 3.0), (0.5, 0.4)])
def test_gaussian_epsilon_is_the_analytic_gaussian_at_s_over_c(c, s):
    m = clipped_vector_sum(c).then_gaussian(scale=s)
    sigma = s / c
    for delta in (1e-3, 1e-6):
        expected = gaussian_epsilon(1 / sigma, delta)
        assert m.epsilon(delta) == pytest.approx(expected, rel=1e-4)
    assert m.delta(1.0) == pytest.approx(float(gaussian_delta_sigma(sigma, 1.0)), rel=1e-6)


def test_release_draws_the_asked_noise_through_the_primitive():
    rng = np.random.default_rng(0)
    const = Transformation(lambda x: np.zeros(50_000), 3.0, "l1", name="zeros")
    noisy = const.then_laplace(scale=2.0).release([1.0], rng=rng)
    assert abs(np.abs(noisy).mean() - 2.0) < 0.03          # E|Lap(b)| = b, not b * c
    gconst = Transformation(lambda x: np.zeros(50_000), 3.0, "l2", name="zeros")
    gnoisy = gconst.then_gaussian(scale=2.0).release([1.0], rng=rng)
    assert abs(gnoisy.std() - 2.0) < 0.03


def test_release_is_reproducible_with_the_generator():
    m = clipped_sum(1.0).then_laplace(scale=1.0)
    a = m.release([0.5, 2.0], rng=np.random.default_rng(7))
    b = m.release([0.5, 2.0], rng=np.random.default_rng(7))
    assert a == b
    assert a != m.release([0.5, 2.0], rng=np.random.default_rng(8))


def test_composes_like_any_mechanism():
    m = clipped_sum(2.0).then_laplace(scale=4.0)
    run = compose([m], counts=[3])
    assert run.pure_epsilon == pytest.approx(1.5)


# ----------------------------------------------------------------------------------
# group privacy
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 2, 5])
def test_group_privacy_of_pure_dp_is_k_epsilon(k):
    assert group_privacy(LaplaceMechanism(b=2.0), k).pure_epsilon == pytest.approx(k / 2.0)
    assert group_privacy(PureDPMechanism(epsilon=0.3), k).pure_epsilon == pytest.approx(0.3 * k)


def test_group_privacy_of_bounded_range_is_bounded_range():
    g = group_privacy(ExponentialMechanism(epsilon=0.4), 3)
    assert isinstance(g, ExponentialMechanism) and g.bounded_range
    assert g.epsilon0 == pytest.approx(1.2)
    plain = group_privacy(ExponentialMechanism(epsilon=0.4, bounded_range=False), 3)
    assert plain.pure_epsilon == pytest.approx(1.2)


@pytest.mark.parametrize("k", [2, 3, 7])
def test_group_privacy_of_approximate_dp_against_the_formula(k):
    mech = GaussianMechanism(sigma=3.0)
    delta = 1e-7
    eps = mech.epsilon(delta)
    g = group_privacy(mech, k, delta=delta)
    # Vadhan 2017, Lemma 2.2 by induction: delta (1 + e^eps + ... + e^{(k-1) eps})
    chain = sum(math.exp(i * eps) for i in range(k))
    assert g.epsilon(delta * chain * (1 + 1e-9)) <= k * eps * (1 + 1e-9)
    assert float(g.delta(k * eps)) == pytest.approx(delta * chain, rel=1e-9)
    # ... which is at most the stated k e^{(k-1) eps} delta
    assert delta * chain <= k * math.exp((k - 1) * eps) * delta


def test_group_privacy_of_an_algorithm_composes_its_primitives():
    alg = ExponentialQuantile(epsilon0=0.5, lower=0.0, upper=1.0)
    g = group_privacy(alg, 4)
    assert isinstance(g, ExponentialMechanism) and g.epsilon0 == pytest.approx(2.0)


def test_group_privacy_refuses_what_it_cannot_state():
    with pytest.raises(ValueError, match="delta is required"):
        group_privacy(GaussianMechanism(sigma=1.0), 2)
    with pytest.raises(ValueError, match="delta"):
        group_privacy(GaussianMechanism(sigma=0.05), 50, delta=0.5)   # delta_k >= 1
    with pytest.raises(ValueError, match="k"):
        group_privacy(LaplaceMechanism(b=1.0), 0)
    with pytest.raises(TypeError, match="Mechanism"):
        group_privacy("laplace", 2)


def test_then_runs_the_inner_mechanism_on_the_transformed_dataset():
    doubled = Transformation(lambda x: np.concatenate([x, x]), 2, "symmetric", name="twice")
    inner = ExponentialQuantile(epsilon0=0.5, lower=0.0, upper=10.0, candidates="grid",
                                grid_size=11)
    m = doubled.then(inner, "quantile", q=0.5)
    assert m.pure_epsilon == pytest.approx(1.0)
    out = m.release(np.full(50, 3.0), rng=np.random.default_rng(0))
    assert out in np.linspace(0.0, 10.0, 11)


# ----------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_stability_is_a_value_error_naming_it(bad):
    with pytest.raises(ValueError, match="stability"):
        Transformation(lambda x: x, bad, "l1")


def test_other_bad_inputs():
    with pytest.raises(ValueError, match="integer"):
        Transformation(lambda x: x, 1.5, "symmetric")
    with pytest.raises(ValueError, match="metric"):
        Transformation(lambda x: x, 1.0, "linf")
    with pytest.raises(TypeError, match="callable"):
        Transformation(3.0, 1.0, "l1")
    with pytest.raises(TypeError, match="stability"):
        Transformation(lambda x: x, "1", "l1")
    t = Transformation(lambda x: x, 1.0, "l2")
    with pytest.raises(ValueError, match="L1"):
        t.then_laplace(scale=1.0)
    with pytest.raises(ValueError, match="scale"):
        Transformation(lambda x: x, 1.0, "l1").then_laplace(scale=0.0)
    with pytest.raises(ValueError, match="symmetric"):
        t.then(ExponentialQuantile(epsilon0=1.0, lower=0, upper=1), "quantile")
    ds = Transformation(lambda x: x, 1, "symmetric")
    with pytest.raises(ValueError, match="method"):
        ds.then(ExponentialQuantile(epsilon0=1.0, lower=0, upper=1), "no_such_method")
    with pytest.raises(ValueError, match="Gaussian"):
        ds.then_gaussian(scale=1.0)
    with pytest.raises(TypeError, match="rng"):
        clipped_sum(1.0).then_laplace(1.0).release([1.0], rng=0)


def test_randomized_transformations_take_the_generator():
    t = Transformation(lambda x, rng: x + rng.normal(), 1.0, "l1", randomized=True)
    with pytest.raises(TypeError):
        t([1.0])
    assert t(1.0, np.random.default_rng(0)) == t(1.0, np.random.default_rng(0))
    with pytest.raises(TypeError, match="not randomized"):
        clipped_sum(1.0)([1.0], np.random.default_rng(0))


def test_chaining_multiplies_stabilities():
    dup = Transformation(lambda x: np.concatenate([x, x, x]), 3, "symmetric", name="x3")
    chain = dup >> clipped_sum(2.0)
    assert chain.stability == 6.0 and chain.metric == "l1"
    assert chain([1.0, 5.0]) == pytest.approx(9.0)
    with pytest.raises(ValueError, match="dataset-valued"):
        clipped_sum(1.0) >> dup


# ----------------------------------------------------------------------------------
# declared stabilities respected on random neighbours (a test helper, not a proof)
# ----------------------------------------------------------------------------------
def test_example_transformations_respect_their_stability():
    rng = np.random.default_rng(1)
    scalar_data = [rng.normal(0, 3, size=n) for n in (2, 5, 40)]
    vector_data = [rng.normal(0, 2, size=(n, 3)) for n in (2, 9, 30)]
    dup = Transformation(lambda x: np.concatenate([x, x]), 2, "symmetric", name="twice")
    cases = [(clipped_sum(1.5), scalar_data), (clipped_vector_sum(0.7), vector_data),
             (dup, scalar_data), (dup >> clipped_sum(0.5), scalar_data)]
    for t, data in cases:
        seen = max_observed_distance(t, data, rng=rng, trials=300)
        assert 0.0 < seen <= t.stability + 1e-9, t.name


def test_a_wrong_declaration_is_caught():
    rng = np.random.default_rng(2)
    unclipped = Transformation(lambda x: float(np.sum(x)), 1.0, "l1", name="sum")
    assert max_observed_distance(unclipped, [rng.normal(0, 5, 20)], rng=rng) > 1.0


def test_symmetric_distance():
    assert symmetric_distance([1, 2, 2], [2, 1, 2]) == 0
    assert symmetric_distance(np.array([[1, 2], [3, 4]]), np.array([[1, 2]])) == 1
    assert symmetric_distance([1, 1], [1, 2, 3]) == 3


def test_matching_transformation_declares_two_per_matching():
    t = matching_transformation(4, (0.25, 0.75), pairing="maximal")
    assert t.stability == 8 and t.metric == "symmetric" and t.randomized
    # the default without a bound on n is the balanced pairing: k + ceil(k / 2)
    assert matching_transformation(4, (0.25, 0.75)).stability == 4 + 2
    with pytest.raises(ValueError, match=r"randomized|deterministic"):
        max_observed_distance(t, [np.ones((4, 2))], rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="cut_points"):
        matching_transformation(1, (0.5,))
    with pytest.raises(ValueError, match=r"\(n, 2\)"):
        t(np.ones(5), np.random.default_rng(0))


def test_not_serialisable_but_its_privacy_is():
    from dpacct.accountant.serialization import from_dict, to_dict

    m = clipped_sum(2.0).then_laplace(scale=4.0)
    with pytest.raises(TypeError, match="not registered"):
        to_dict(m)                       # a Python function has no JSON form
    back = from_dict(to_dict(m.privacy))
    assert back.epsilon(1e-6) == m.epsilon(1e-6)


def test_matching_transformation_with_a_size_bound_is_k_stable():
    t = matching_transformation(4, (0.25, 0.75), max_records=30)
    assert t.stability == 4
    with pytest.raises(ValueError, match="max_records"):
        t(np.ones((31, 2)), np.random.default_rng(0))


def test_then_with_an_approximate_dp_mechanism_needs_and_uses_delta():
    from dpacct.mechanisms import HistogramQuantiles

    hist = HistogramQuantiles(lower=0.0, upper=1.0, bins=8, scale=4.0, noise="gaussian")
    doubled = Transformation(lambda x: np.concatenate([x, x]), 2, "symmetric", name="twice")
    with pytest.raises(ValueError, match="delta"):
        doubled.then(hist, "quantiles", q=[0.5])
    m = doubled.then(hist, "quantiles", delta=1e-6, q=[0.5])
    eps = hist.epsilon(1e-6)
    d2 = 1e-6 * (1.0 + math.exp(eps))
    assert m.delta(2 * eps) == pytest.approx(d2, rel=1e-9)
    out = m.release(np.random.default_rng(3).uniform(size=200), rng=np.random.default_rng(4))
    assert 0.0 <= float(out[0]) <= 1.0
