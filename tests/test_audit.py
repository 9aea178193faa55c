"""Tests for ``dpacct.mechanisms.audit``: empirical audits of claimed trade-off curves.

The audit must pass honest mechanisms (with a fixed seed), come close to an exact curve
(so the pass is not vacuous), and fail a claim that is stronger than the outputs
support.  The Clopper-Pearson intervals are checked against ``scipy.stats.binomtest``
(an independent implementation of the exact interval).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from dpacct.accountant import compose, poisson_subsample, subsample_without_replacement
from dpacct.mechanisms import (
    AuditResult,
    GaussianMechanism,
    LaplaceMechanism,
    PureDPMechanism,
    RandomizedResponse,
    ReplaceOneGaussianMechanism,
    audit,
)
from dpacct.mechanisms.audit import clopper_pearson

SEED = 12345

HONEST = [
    GaussianMechanism(sigma=1.0),
    LaplaceMechanism(b=1.0),
    RandomizedResponse(p=0.75),
    RandomizedResponse(p=0.5, k=4),
    poisson_subsample(GaussianMechanism(sigma=1.0), sample_rate=0.2),
    poisson_subsample(LaplaceMechanism(b=1.0), sample_rate=0.2),
]


def gaussian_sampler(sigma: float):
    def sample(rng, n):
        return rng.normal(1.0, sigma, n), rng.normal(0.0, sigma, n)

    return sample


@pytest.fixture(scope="module")
def honest_results() -> dict[str, AuditResult]:
    return {repr(m): audit(m, np.random.default_rng(SEED)) for m in HONEST}


# ----------------------------------------------------------------------------------
# honest mechanisms pass, and the audit is close to exact curves
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("mech", HONEST, ids=repr)
def test_honest_mechanisms_pass(mech, honest_results):
    res = honest_results[repr(mech)]
    assert res.passed
    assert res.violations.size == 0
    # every confidence box reaches the claimed curve (the quantity the verdict uses)
    assert np.all(res.beta_high >= res.claimed_beta_low)
    # the estimates are bracketed by their intervals
    assert np.all((res.alpha_low <= res.alpha_hat) & (res.alpha_hat <= res.alpha_high))
    assert np.all((res.beta_low <= res.beta_hat) & (res.beta_hat <= res.beta_high))
    # sampling noise only: no estimate dips far below the claim
    assert res.max_gap < 0.02
    # an empirical lower bound on epsilon never exceeds the proven upper bound
    assert res.epsilon_lower_bound(1e-5) <= mech.epsilon(1e-5)


@pytest.mark.parametrize("mech", HONEST, ids=repr)
def test_audit_attains_exact_curves(mech, honest_results):
    """The best test reaches the claimed total-variation advantage within a few percent.

    All six claims are tight (exact curves, or PLD-derived bounds within 1e-4), so the
    audit must come close; with 1e5 samples the advantage's noise is 0.5 to 3 percent.
    """
    res = honest_results[repr(mech)]
    assert res.tightness == pytest.approx(1.0, abs=0.06)


def test_gaussian_points_hug_the_curve(honest_results):
    res = honest_results[repr(GaussianMechanism(sigma=1.0))]
    assert res.tightness == pytest.approx(1.0, abs=0.03)
    # in the body of the curve every natural-orientation test is within 3 % of f
    body = res.reject_above == (res.null_hypothesis == "D'")
    body &= (res.alpha_hat > 0.02) & (res.alpha_hat < 0.6)
    assert body.sum() >= 20
    rel = np.abs(res.beta_hat[body] - res.claimed_beta[body]) / res.claimed_beta[body]
    assert rel.max() < 0.03
    assert rel.min() < 0.005
    # the empirical epsilon is a sizeable fraction of the proven one
    assert 2.0 < res.epsilon_lower_bound(1e-5) < GaussianMechanism(sigma=1.0).epsilon(1e-5)


def test_randomized_response_hits_the_vertex(honest_results):
    """Rejecting D' on answer 0 has errors (q, 1 - p): the vertex of the RR curve."""
    res = honest_results[repr(RandomizedResponse(p=0.75))]
    assert res.thresholds.size == 4  # one threshold (binary answers), four tests
    np.testing.assert_allclose(res.alpha_hat[0], 0.25, atol=0.006)
    np.testing.assert_allclose(res.beta_hat[0], 0.25, atol=0.006)
    # pure DP: the audit's epsilon is close to log 3 from below
    assert 1.05 < res.epsilon_lower_bound() <= np.log(3.0)


# ----------------------------------------------------------------------------------
# broken claims fail
# ----------------------------------------------------------------------------------
def test_broken_gaussian_claim_is_flagged():
    claim = GaussianMechanism(sigma=3.0)
    res = audit(claim, np.random.default_rng(SEED), sampler=gaussian_sampler(1.0))
    assert not res.passed
    assert res.violations.size >= 50
    assert np.all(res.beta_high[res.violations] < res.claimed_beta_low[res.violations])
    assert res.max_gap > 0.2
    assert res.tightness > 2.5  # the outputs have ~3x the advantage the claim allows
    assert res.epsilon_lower_bound(1e-5) > claim.epsilon(1e-5)


def test_broken_randomized_response_claim_is_flagged():
    claim = RandomizedResponse(p=0.75)
    truth = RandomizedResponse(p=0.8)

    def sample(rng, n):  # binary answers on true values 0 (D) and 1 (D'), as +-1 scores
        on_d = np.where(rng.random(n) < truth.p, 1.0, -1.0)
        on_d_prime = np.where(rng.random(n) < truth.p, -1.0, 1.0)
        return on_d, on_d_prime

    res = audit(claim, np.random.default_rng(SEED), sampler=sample)
    assert not res.passed
    assert res.epsilon_lower_bound() > claim.epsilon0


def test_non_private_outputs_are_flagged():
    """Outputs that reveal the record (a deterministic sampler) fail any Gaussian claim."""

    def reveal(rng, n):
        return np.ones(n), np.zeros(n)

    res = audit(
        GaussianMechanism(sigma=1.0), np.random.default_rng(0), samples=1000, sampler=reveal
    )
    assert not res.passed
    np.testing.assert_array_equal(res.thresholds[:1], [0.5])
    assert res.alpha_hat[0] == 0.0 and res.beta_hat[0] == 0.0


def test_reversed_orientation_is_audited():
    """A sampler whose outputs decrease with the record is caught by the reversed tests."""
    base = gaussian_sampler(1.0)

    def negated(rng, n):
        on_d, on_d_prime = base(rng, n)
        return -on_d, -on_d_prime

    res = audit(GaussianMechanism(sigma=3.0), np.random.default_rng(SEED), sampler=negated)
    assert not res.passed
    flagged = res.violations
    # only tests of the reversed orientation (D' rejected at or below t, D above t)
    assert np.all(res.reject_above[flagged] == (res.null_hypothesis[flagged] == "D"))
    honest = audit(GaussianMechanism(sigma=1.0), np.random.default_rng(SEED), sampler=negated)
    assert honest.passed
    assert honest.tightness == pytest.approx(1.0, abs=0.03)


def test_both_neighbouring_orders_are_audited(honest_results):
    res = honest_results[repr(GaussianMechanism(sigma=1.0))]
    m = res.thresholds.size // 4
    assert set(res.null_hypothesis) == {"D'", "D"}
    # the D-null test at t swaps the errors of the D'-null test at t
    np.testing.assert_array_equal(res.alpha_hat[m : 2 * m], res.beta_hat[:m])
    np.testing.assert_array_equal(res.beta_high[m : 2 * m], res.alpha_high[:m])


def test_honest_audits_rarely_fail():
    """Family-wise error control: 40 independent audits of an honest claim all pass
    (the chance of one false alarm is at most 5 % each; Bonferroni is conservative)."""
    mech = GaussianMechanism(sigma=2.0)
    fails = sum(not audit(mech, np.random.default_rng(s), samples=5000).passed for s in range(40))
    assert fails <= 4


# ----------------------------------------------------------------------------------
# statistics
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [0, 1, 7, 50, 99, 100])
@pytest.mark.parametrize("level", [0.9, 0.999])
def test_clopper_pearson_matches_scipy_binomtest(k, level):
    low, high = clopper_pearson(np.array([k]), 100, level)
    ref = stats.binomtest(k, 100).proportion_ci(confidence_level=level, method="exact")
    np.testing.assert_allclose([low[0], high[0]], [ref.low, ref.high], rtol=1e-9, atol=1e-12)


def test_intervals_are_bonferroni_corrected():
    """With m thresholds each interval has level 1 - (1 - confidence) / (2 m)."""
    n, confidence = 400, 0.9
    on_d = np.linspace(-1.0, 3.0, n)
    on_d_prime = np.linspace(-2.0, 2.0, n)

    def fixed(rng, size):
        return on_d, on_d_prime

    thresholds = [-0.5, 0.0, 0.7]
    res = audit(
        GaussianMechanism(sigma=1.0),
        np.random.default_rng(0),
        samples=n,
        confidence=confidence,
        thresholds=thresholds,
        sampler=fixed,
    )
    level = 1 - (1 - confidence) / (2 * len(thresholds))
    for i, t in enumerate(thresholds):
        k_alpha = int(np.sum(on_d_prime > t))
        k_beta = int(np.sum(on_d <= t))
        assert res.alpha_hat[i] == k_alpha / n and res.beta_hat[i] == k_beta / n
        ref_a = stats.binomtest(k_alpha, n).proportion_ci(level, method="exact")
        ref_b = stats.binomtest(k_beta, n).proportion_ci(level, method="exact")
        np.testing.assert_allclose(
            [res.alpha_low[i], res.alpha_high[i], res.beta_low[i], res.beta_high[i]],
            [ref_a.low, ref_a.high, ref_b.low, ref_b.high],
            rtol=1e-9,
        )
    # the sampler's arrays were not sorted in place
    assert on_d_prime[0] == -2.0 and np.all(np.diff(on_d) > 0)


def test_reproducible_and_immutable():
    a = audit(LaplaceMechanism(b=2.0), np.random.default_rng(7), samples=3000)
    b = audit(LaplaceMechanism(b=2.0), np.random.default_rng(7), samples=3000)
    np.testing.assert_array_equal(a.alpha_hat, b.alpha_hat)
    np.testing.assert_array_equal(a.beta_high, b.beta_high)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.passed = False  # type: ignore[misc]
    with pytest.raises(ValueError):
        a.alpha_hat[0] = 0.5
    assert "passed=True" in repr(a)


# ----------------------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("samples", [0, -5])
def test_bad_samples(samples):
    with pytest.raises(ValueError, match="samples"):
        audit(GaussianMechanism(sigma=1.0), np.random.default_rng(0), samples=samples)


def test_non_integer_samples():
    with pytest.raises(TypeError, match="samples"):
        audit(GaussianMechanism(sigma=1.0), np.random.default_rng(0), samples=10.5)


@pytest.mark.parametrize("confidence", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_bad_confidence(confidence):
    with pytest.raises(ValueError, match="confidence"):
        audit(GaussianMechanism(sigma=1.0), np.random.default_rng(0), confidence=confidence)


@pytest.mark.parametrize("rng", [0, None, np.random.RandomState(0), "seed"])
def test_rng_must_be_a_generator(rng):
    with pytest.raises(TypeError, match="rng"):
        audit(GaussianMechanism(sigma=1.0), rng)


@pytest.mark.parametrize(
    "mech",
    [
        PureDPMechanism(epsilon=1.0),  # a claim only: no release to sample
        subsample_without_replacement(ReplaceOneGaussianMechanism(sigma=1.0), 0.1),
        compose([RandomizedResponse(p=0.75)], counts=[3]),
    ],
    ids=repr,
)
def test_unsupported_mechanism_needs_a_sampler(mech):
    with pytest.raises(TypeError, match="sampler"):
        audit(mech, np.random.default_rng(0), samples=100)
    # with a sampler any claim can be audited
    res = audit(mech, np.random.default_rng(0), samples=2000, sampler=gaussian_sampler(50.0))
    assert res.passed


def test_mechanism_without_tradeoff():
    with pytest.raises(TypeError, match="mechanism"):
        audit(object(), np.random.default_rng(0), sampler=gaussian_sampler(1.0))


@pytest.mark.parametrize(
    ("output", "match"),
    [
        (lambda n: (np.zeros(n), np.zeros(n - 1)), "shape"),
        (lambda n: np.zeros(n), "pair"),
        (lambda n: (np.zeros(n), np.full(n, np.nan)), "NaN"),
    ],
)
def test_bad_sampler_output(output, match):
    with pytest.raises(ValueError, match=match):
        audit(
            GaussianMechanism(sigma=1.0),
            np.random.default_rng(0),
            samples=50,
            sampler=lambda rng, n: output(n),
        )


def test_sampler_must_be_callable():
    with pytest.raises(TypeError, match="sampler"):
        audit(GaussianMechanism(sigma=1.0), np.random.default_rng(0), sampler=3)


@pytest.mark.parametrize(
    ("thresholds", "exc"),
    [([], ValueError), ([[0.0, 1.0]], ValueError), ([0.0, np.nan], ValueError), ("0", TypeError)],
)
def test_bad_thresholds(thresholds, exc):
    with pytest.raises(exc, match="thresholds"):
        audit(GaussianMechanism(sigma=1.0), np.random.default_rng(0), thresholds=thresholds)


def test_epsilon_lower_bound_validates_delta(honest_results):
    res = honest_results[repr(GaussianMechanism(sigma=1.0))]
    with pytest.raises(ValueError, match="delta"):
        res.epsilon_lower_bound(-0.1)
    assert res.epsilon_lower_bound(0.0) >= res.epsilon_lower_bound(0.1)


# ----------------------------------------------------------------------------------
# plot
# ----------------------------------------------------------------------------------
def test_plot_without_matplotlib_names_the_extra(honest_results, monkeypatch):
    # issue 21: a bare ModuleNotFoundError told the user nothing about the extra
    import sys

    res = honest_results[repr(GaussianMechanism(sigma=1.0))]
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    with pytest.raises(ImportError, match=r'pip install "dpacct\[plot\]"') as info:
        res.plot()
    assert "AuditResult.plot()" in str(info.value) and "matplotlib" in str(info.value)
    assert not isinstance(info.value, ModuleNotFoundError)


def test_plot(honest_results):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = honest_results[repr(GaussianMechanism(sigma=1.0))]
    ax = res.plot()
    try:
        assert "type I" in ax.get_xlabel() and "type II" in ax.get_ylabel()
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert any("claimed" in s for s in labels)
        assert any("audited" in s for s in labels)
    finally:
        plt.close(ax.figure)
    broken = audit(
        GaussianMechanism(sigma=3.0),
        np.random.default_rng(SEED),
        samples=5000,
        sampler=gaussian_sampler(1.0),
    )
    fig, ax2 = plt.subplots()
    try:
        assert broken.plot(ax=ax2) is ax2
        labels = [t.get_text() for t in ax2.get_legend().get_texts()]
        assert any("violation" in s for s in labels)
    finally:
        plt.close(fig)
