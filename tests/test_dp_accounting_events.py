"""dp_accounting's whole vocabulary through dpacct (issue 23, the "events" part).

Every ``DpEvent`` subclass of the installed dp_accounting is either accounted or refused
with a reason; each newly accounted event is compared with dp_accounting's own
accountant on the same event (its PLD accountant where it has one, pessimistic, at its
default grid and a 10x finer one; its RDP accountant otherwise): dpacct's upper bound is
at or below it (within dpacct's own bracket width for a PLD), and dpacct's lower bound
is at or below it.  Independent values (mpmath sums, brute-force counts, closed forms)
decide the facts the comparisons rest on.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

dpa = pytest.importorskip("dp_accounting")

import attr  # noqa: E402
from dp_accounting import NeighboringRelation as Rel  # noqa: E402
from dp_accounting import dp_event as de  # noqa: E402
from dp_accounting.pld import PLDAccountant  # noqa: E402
from dp_accounting.rdp import RdpAccountant  # noqa: E402
from scipy import special, stats  # noqa: E402

from dpacct import _dp_event_mapping as mapping  # noqa: E402
from dpacct.accountant import tpr_bounds  # noqa: E402
from dpacct.dp_accounting import (  # noqa: E402
    DpEventAccountant,
    ReplaceOneZCDPMechanism,
    UnsupportedEventError,
    from_dp_event,
)
from dpacct.mechanisms import (  # noqa: E402
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    ExponentialMechanism,
    GaussianMechanism,
    PermuteAndFlip,
    ReplaceOneGaussianMechanism,
    ZCDPMechanism,
    zcdp_epsilon,
)

DELTA = 1e-6


def rdp_epsilon(event, relation=Rel.ADD_OR_REMOVE_ONE, delta=DELTA) -> float:
    acct = RdpAccountant(neighboring_relation=relation)
    acct.compose(event)
    return float(acct.get_epsilon(delta))


def pld_epsilon(event, interval=1e-4, delta=DELTA) -> float:
    acct = PLDAccountant(value_discretization_interval=interval)
    acct.compose(event)
    return float(acct.get_epsilon(delta))


# ------------------------------------------------- stand-ins for the events after 0.6.0
# the fields of google/differential-privacy's python/dp_accounting/dp_event.py (Aug 2026)
@attr.s(frozen=True, slots=True, auto_attribs=True)
class EpsilonDeltaDpEvent(de.DpEvent):
    epsilon: float
    delta: float


@attr.s(frozen=True, slots=True, auto_attribs=True)
class DiscreteGaussianDpEvent(de.DpEvent):
    sigma: float
    sensitivity: float = 1.0
    dimension: int | None = None


@attr.s(frozen=True, slots=True, auto_attribs=True)
class ExponentialMechanismDpEvent(de.DpEvent):
    epsilon: float


@attr.s(frozen=True, slots=True, auto_attribs=True)
class PermuteAndFlipDpEvent(de.DpEvent):
    epsilon: float


def newer(name: str):
    """The installed class when dp_accounting has it, else the stand-in above."""
    return getattr(de, name, None) or globals()[name]


# ------------------------------------------------------------------ walk every event
G = de.GaussianDpEvent(2.0)
#: one instance of every event class dp_accounting has had, by class name
SAMPLES = {
    "NoOpDpEvent": lambda: de.NoOpDpEvent(),
    "NonPrivateDpEvent": lambda: de.NonPrivateDpEvent(),
    "UnsupportedDpEvent": lambda: de.UnsupportedDpEvent(),
    "GaussianDpEvent": lambda: G,
    "LaplaceDpEvent": lambda: de.LaplaceDpEvent(2.0),
    "DiscreteLaplaceDpEvent": lambda: de.DiscreteLaplaceDpEvent(0.5, 3),
    "RandomizedResponseDpEvent": lambda: de.RandomizedResponseDpEvent(0.5, 4),
    "ZCDpEvent": lambda: de.ZCDpEvent(0.1, 0.05),
    "SelfComposedDpEvent": lambda: de.SelfComposedDpEvent(G, 3),
    "ComposedDpEvent": lambda: de.ComposedDpEvent([G, G]),
    "PoissonSampledDpEvent": lambda: de.PoissonSampledDpEvent(0.1, G),
    "SampledWithReplacementDpEvent": lambda: de.SampledWithReplacementDpEvent(100, 10, G),
    "SampledWithoutReplacementDpEvent": lambda: de.SampledWithoutReplacementDpEvent(100, 10, G),
    "SingleEpochTreeAggregationDpEvent": lambda: de.SingleEpochTreeAggregationDpEvent(2.0, 8),
    "RepeatAndSelectDpEvent": lambda: de.RepeatAndSelectDpEvent(G, 3.0, 1.0),
    "MixtureOfGaussiansDpEvent": lambda: de.MixtureOfGaussiansDpEvent(2.0, [0.0, 1.0], [0.5, 0.5]),
    # small n and b: dpacct's one-step truncated PLD has a component per batch-size bin
    "TruncatedSubsampledGaussianDpEvent": lambda: de.TruncatedSubsampledGaussianDpEvent(
        20, 0.1, 3, 1.0
    ),
    "EpsilonDeltaDpEvent": lambda: newer("EpsilonDeltaDpEvent")(1.0, 1e-7),
    "DiscreteGaussianDpEvent": lambda: newer("DiscreteGaussianDpEvent")(3.0, 1.0, 1),
    "ExponentialMechanismDpEvent": lambda: newer("ExponentialMechanismDpEvent")(1.0),
    "PermuteAndFlipDpEvent": lambda: newer("PermuteAndFlipDpEvent")(1.0),
}
#: accounted under REPLACE_ONE only (a replace-one notion)
REPLACE_ONLY = {"RandomizedResponseDpEvent", "SampledWithoutReplacementDpEvent"}


def _all_subclasses(cls) -> set[type]:
    out = set()
    for sub in cls.__subclasses__():
        out |= {sub} | _all_subclasses(sub)
    return out


INSTALLED = sorted(
    # attrs' slotted classes replace the class they decorate; the replaced one lingers
    # in __subclasses__() until the garbage collector runs, so keep only the module's own
    # (otherwise xdist workers can collect different duplicates)
    {c for c in _all_subclasses(de.DpEvent) if getattr(de, c.__name__, None) is c},
    key=lambda c: c.__name__,
)


def test_the_walk_sees_the_installed_vocabulary():
    names = {c.__name__ for c in INSTALLED}
    assert len(names) >= 17 and "MixtureOfGaussiansDpEvent" in names  # 0.6.0 has 17


@pytest.mark.parametrize("cls", INSTALLED, ids=lambda c: c.__name__)
def test_every_installed_event_is_accounted_or_refused_with_a_reason(cls):
    name = cls.__name__
    assert name in SAMPLES, f"{name}: a DpEvent class dpacct has never seen; map or refuse it"
    event = SAMPLES[name]()
    assert type(event) is cls
    relation = Rel.REPLACE_ONE if name in REPLACE_ONLY else Rel.ADD_OR_REMOVE_ONE
    acct = DpEventAccountant(relation)
    if name in mapping.REFUSED:
        with pytest.raises(UnsupportedEventError, match=name) as info:
            acct.compose(event)
        assert mapping.REFUSED[name] in str(info.value)  # the reason is given
        assert not acct.supports(event)
        return
    acct.compose(event)
    eps = acct.get_epsilon(DELTA)
    assert eps == math.inf if name == "NonPrivateDpEvent" else 0.0 <= eps < math.inf


def test_sampling_with_replacement_is_refused_naming_why_and_what_instead():
    with pytest.raises(UnsupportedEventError) as info:
        from_dp_event(SAMPLES["SampledWithReplacementDpEvent"]())
    msg = str(info.value)
    assert "with* replacement" in msg and "certify" in msg
    assert "SampledWithoutReplacementDpEvent" in msg and "PoissonSampledDpEvent" in msg


# ------------------------------------------------------------------ tree aggregation


@pytest.mark.parametrize(
    ("sigma", "steps"), [(1.0, 1), (2.0, [100, 37]), (0.7, 1024), (5.0, [3, 0, 1000])]
)
def test_tree_aggregation_is_a_gaussian_at_or_below_dp_accountings_rdp(sigma, steps):
    event = de.SingleEpochTreeAggregationDpEvent(sigma, steps)
    mech = from_dp_event(event)
    depth = max(steps if isinstance(steps, list) else [steps]).bit_length()
    assert mech == GaussianMechanism(sigma=sigma / math.sqrt(depth))
    # dp_accounting states it under REPLACE_SPECIAL (the record zeroed out): the same
    # shift of the record's nodes, alpha * depth / (2 sigma^2)
    alphas = np.array([1.5, 2.0, 8.0, 64.0])
    np.testing.assert_allclose(mech.rdp(alphas), alphas * depth / (2 * sigma**2), rtol=1e-12)
    theirs = rdp_epsilon(event, Rel.REPLACE_SPECIAL)
    lo, hi = mech.epsilon_bounds(DELTA)
    assert lo <= hi <= theirs
    replace = from_dp_event(event, neighboring_relation=Rel.REPLACE_ONE)
    assert replace == ReplaceOneGaussianMechanism(sigma=sigma / (2 * math.sqrt(depth)))


def test_tree_aggregation_edge_cases():
    assert (
        DpEventAccountant().compose(de.SingleEpochTreeAggregationDpEvent(1.0, 0)).get_epsilon(DELTA)
        == 0.0
    )
    acct = DpEventAccountant().compose(de.SingleEpochTreeAggregationDpEvent(0.0, 4))
    assert acct.get_epsilon(DELTA) == math.inf
    for bad in ([], -1, [4, -2], "8", 2.5):
        with pytest.raises((TypeError, ValueError), match="step_counts"):
            from_dp_event(de.SingleEpochTreeAggregationDpEvent(1.0, bad))


# ------------------------------------------------------------------ repeat-and-select
INNER = {
    "gaussian": de.GaussianDpEvent(4.0),
    "dpsgd": de.SelfComposedDpEvent(de.PoissonSampledDpEvent(0.01, de.GaussianDpEvent(1.0)), 100),
    "laplace": de.LaplaceDpEvent(2.0),
}


#: every (shape, mean) for the cheap inner events; the DP-SGD inner (a subsampled
#: Gaussian's RDP, under 1 s a case since the base curve is evaluated once) at one mean
#: over every shape
RS_SHAPES = [0.0, 0.5, 1.0, 3.0, math.inf]
RS_CASES = [
    (inner, shape, mean)
    for inner in sorted(INNER)
    for shape in RS_SHAPES
    for mean in ([3.0] if inner == "dpsgd" else [1.0, 3.0, 100.0])
]


@pytest.mark.parametrize(("inner", "shape", "mean"), RS_CASES)
def test_repeat_and_select_at_or_below_dp_accountings_rdp(inner, shape, mean):
    event = de.RepeatAndSelectDpEvent(INNER[inner], mean, shape)
    ours = from_dp_event(event)
    assert ours.epsilon(DELTA) <= rdp_epsilon(event)
    lo, hi = ours.epsilon_bounds(DELTA)
    assert lo <= hi
    # K >= 1 runs of which the best is released: never more private than one run
    # (the Poisson law, which may run 0 times, excepted)
    if math.isfinite(shape):
        assert hi >= from_dp_event(INNER[inner]).epsilon_bounds(DELTA)[0]


def test_repeat_and_select_quick_case_against_dp_accounting():
    event = de.RepeatAndSelectDpEvent(de.GaussianDpEvent(4.0), 10.0, 1.0)
    assert from_dp_event(event).epsilon(DELTA) <= rdp_epsilon(event)


def test_repeat_and_select_refuses_a_base_without_rdp_and_bad_fields():
    eps_delta = newer("EpsilonDeltaDpEvent")(1.0, 1e-6)
    with pytest.raises(UnsupportedEventError, match="Renyi"):
        from_dp_event(de.RepeatAndSelectDpEvent(eps_delta, 3.0, 1.0))
    with pytest.raises(ValueError, match="mean"):
        from_dp_event(de.RepeatAndSelectDpEvent(G, 0.5, 1.0))
    with pytest.raises(ValueError, match="shape"):
        from_dp_event(de.RepeatAndSelectDpEvent(G, 3.0, -1.0))


# ------------------------------------------------------------------ zCDP with xi > 0
@pytest.mark.parametrize(("rho", "xi"), [(0.1, 0.05), (0.01, 1.0), (2.0, 0.3), (1e-6, 1e-3)])
def test_zcdp_with_xi_shifts_the_conversion_and_beats_dp_accountings_rdp(rho, xi):
    event = de.ZCDpEvent(rho, xi)
    mech = from_dp_event(event)
    assert mech == ZCDPMechanism(rho=rho, xi=xi)
    np.testing.assert_allclose(mech.rdp([2.0, 5.5]), [xi + 2 * rho, xi + 5.5 * rho], rtol=1e-14)
    eps = mech.epsilon(DELTA)
    # the CKS conversion is rdp(a) + (a term free of the curve): xi passes through
    assert eps == pytest.approx(xi + zcdp_epsilon(rho, DELTA), rel=1e-11)
    assert eps <= xi + zcdp_epsilon(rho, DELTA)  # the tight rounding (zcdp_epsilon_tight)
    assert eps <= rdp_epsilon(event)
    assert mech.delta(eps) <= DELTA * (1 + 1e-9)
    replace = from_dp_event(event, neighboring_relation=Rel.REPLACE_ONE)
    assert replace == ReplaceOneZCDPMechanism(rho=rho, xi=xi)


def test_zcdp_edge_cases():
    pure = from_dp_event(de.ZCDpEvent(0.0, 0.5))  # D_alpha <= 0.5 at every order: pure
    assert pure.pure_epsilon == 0.5
    assert DpEventAccountant().compose(de.ZCDpEvent(0.0, 0.0)).get_epsilon(DELTA) == 0.0
    # JAX Privacy builds ZCDpEvent(inf) for a zero noise multiplier
    assert DpEventAccountant().compose(de.ZCDpEvent(math.inf)).get_epsilon(DELTA) == math.inf
    with pytest.raises(ValueError, match="xi"):
        ZCDPMechanism(rho=0.1, xi=-1.0)
    assert repr(ZCDPMechanism(rho=0.5)) == "ZCDPMechanism(rho=0.5)"


# --------------------------------------------------- discrete Laplace, any sensitivity
def discrete_laplace_hockey_stick(a: float, k: int, eps: float) -> float:
    """sum_x max(P(x - k) - e^eps P(x), 0) for P(y) = tanh(a/2) e^{-a|y|}, summed in
    mpmath: the finite window plus the geometric tails in closed form."""
    mp.mp.dps = 40
    a, e = mp.mpf(a), mp.e ** mp.mpf(eps)
    c = mp.tanh(a / 2)

    def pm(y):
        return c * mp.e ** (-a * abs(y))

    total = mp.fsum(max(pm(x - k) - e * pm(x), 0) for x in range(0, k + 1))
    # x >= k + 1: P(x - k) - e P(x) = c e^{-a(x - k)} (1 - e e^{-ak}) (geometric)
    tail = c * mp.e ** (-a) / (1 - mp.e ** (-a)) * max(1 - e * mp.e ** (-a * k), 0)
    # x <= -1: P(x - k) - e P(x) = c e^{-a(|x| + k)} (1 - e e^{ak}) < 0
    return float(total + tail)


@pytest.mark.parametrize(("a", "k"), [(0.5, 2), (1.0, 3), (0.1, 7), (2.0, 1)])
def test_discrete_laplace_of_sensitivity_k_one_step_is_exact(a, k):
    mech = from_dp_event(de.DiscreteLaplaceDpEvent(a, k))
    for eps in (0.0, 0.3 * a * k, 0.9 * a * k):
        exact = discrete_laplace_hockey_stick(a, k, eps)
        assert float(mech.delta(eps)) == pytest.approx(exact, rel=1e-8, abs=1e-15)
        assert float(mech.delta(eps)) >= exact * (1 - 1e-12)  # never below the truth


@pytest.mark.parametrize(("a", "k", "count"), [(0.5, 2, 10), (1.0, 3, 4), (0.2, 5, 30)])
@pytest.mark.parametrize("interval", [1e-4, 1e-5])
def test_discrete_laplace_of_sensitivity_k_against_dp_accountings_pld(a, k, count, interval):
    event = de.SelfComposedDpEvent(de.DiscreteLaplaceDpEvent(a, k), count)
    lo, hi = from_dp_event(event).epsilon_bounds(DELTA)
    theirs = pld_epsilon(event, interval)
    assert lo <= theirs
    assert hi <= theirs + (hi - lo) + 1e-12


def test_discrete_laplace_sensitivity_one_is_the_class_and_replace_doubles_the_shift():
    assert from_dp_event(de.DiscreteLaplaceDpEvent(0.5, 1)) == DiscreteLaplaceMechanism(scale=2.0)
    replace = from_dp_event(de.DiscreteLaplaceDpEvent(0.5, 2), neighboring_relation=Rel.REPLACE_ONE)
    shift4 = DiscreteLaplaceMechanism.of_sensitivity(2.0, 4)
    assert replace.neighbouring == "replace-one"
    assert float(replace.delta(0.5)) == pytest.approx(float(shift4.delta(0.5)), rel=1e-14)


# ------------------------------------------------- the events newer than dp_accounting 0.6
def test_epsilon_delta_event_is_the_worst_mechanism_with_that_guarantee():
    mech = from_dp_event(newer("EpsilonDeltaDpEvent")(1.0, 1e-6))
    assert float(mech.delta(1.0)) == pytest.approx(1e-6, rel=1e-12)
    # Kairouz, Oh, Viswanath 2015: delta(0) = delta + (1 - delta)(e - 1)/(e + 1)
    expected = 1e-6 + (1 - 1e-6) * math.tanh(0.5)
    assert float(mech.delta(0.0)) == pytest.approx(expected, rel=1e-12)
    inf = DpEventAccountant().compose(newer("EpsilonDeltaDpEvent")(math.inf, 0.0))
    assert inf.get_epsilon(DELTA) == math.inf


def test_discrete_gaussian_event():
    event_cls = newer("DiscreteGaussianDpEvent")
    assert from_dp_event(event_cls(3.0, 1.0, 1)) == DiscreteGaussianMechanism(sigma=3.0)
    # any dimension (None: unknown): rho = Delta^2 / (2 sigma^2) (product noise)
    assert from_dp_event(event_cls(3.0, 2.0)) == ZCDPMechanism(rho=4.0 / 18.0)
    assert from_dp_event(event_cls(3.0, 1.0, 5)) == ZCDPMechanism(rho=1.0 / 18.0)
    replace = from_dp_event(event_cls(3.0, 1.0, 1), neighboring_relation=Rel.REPLACE_ONE)
    assert replace == ReplaceOneZCDPMechanism(rho=4.0 / 18.0)


def test_discrete_gaussian_product_noise_is_rho_zcdp_by_brute_force():
    """The Renyi divergence of a 2-D integer shift of product discrete Gaussian noise,
    summed in mpmath, is below alpha |shift|^2 / (2 sigma^2)."""
    mp.mp.dps = 30
    sigma, shift, alpha = mp.mpf("0.8"), (1, 1), mp.mpf(3)
    z = mp.fsum(mp.e ** (-(x**2) / (2 * sigma**2)) for x in range(-40, 41))

    def pm(x, mu):
        return mp.e ** (-((x - mu) ** 2) / (2 * sigma**2)) / z

    per_coord = [
        mp.log(mp.fsum(pm(x, 0) ** alpha * pm(x, m) ** (1 - alpha) for x in range(-40, 41)))
        / (alpha - 1)
        for m in shift
    ]
    bound = alpha * sum(m * m for m in shift) / (2 * sigma**2)
    assert float(sum(per_coord)) <= float(bound)


def test_selection_events():
    assert from_dp_event(newer("ExponentialMechanismDpEvent")(1.0)) == ExponentialMechanism(1.0)
    assert from_dp_event(newer("PermuteAndFlipDpEvent")(1.0)) == PermuteAndFlip(1.0)
    for name in ("ExponentialMechanismDpEvent", "PermuteAndFlipDpEvent"):
        replace = from_dp_event(newer(name)(1.0), neighboring_relation=Rel.REPLACE_ONE)
        assert replace.neighbouring == "replace-one" and replace.pure_epsilon == 1.0
    # composed with a Gaussian: one mechanism, every part accounted
    run = DpEventAccountant().compose(
        de.ComposedDpEvent([G, newer("ExponentialMechanismDpEvent")(0.5)]), 3
    )
    assert 0.0 < run.get_epsilon(DELTA) < math.inf


# ------------------------------------------------- TPR at FPR and the GDP estimate
@pytest.mark.parametrize(("sigma", "count"), [(1.0, 1), (2.0, 4), (5.0, 100)])
def test_true_positive_rates_and_gdp_estimate_of_gaussians(sigma, count):
    acct = DpEventAccountant().compose(de.GaussianDpEvent(sigma), count)
    mu = math.sqrt(count) / sigma  # Dong, Roth, Su 2019, Corollary 3.3
    fpr = np.array([1e-6, 1e-3, 0.01, 0.1, 0.5])
    expected = stats.norm.cdf(stats.norm.ppf(fpr) + mu)
    np.testing.assert_allclose(acct.get_true_positive_rates(fpr), expected, rtol=1e-9)
    # an estimate: 1 - beta loses digits at the FPR grid's 1e-12 end
    assert acct.get_gdp_parameter_estimate() == pytest.approx(mu, rel=1e-4)


def test_true_positive_rates_of_dpsgd_are_certified_and_monotone():
    event = de.SelfComposedDpEvent(de.PoissonSampledDpEvent(0.01, de.GaussianDpEvent(1.0)), 300)
    acct = DpEventAccountant().compose(event)
    fpr = np.logspace(-6, np.log10(0.5), 30)
    tpr = acct.get_true_positive_rates(fpr)
    assert np.all(np.diff(tpr) >= 0) and np.all(tpr >= fpr) and np.all(tpr <= 1)
    # the true TPR lies in the certified bracket, of which this is the upper end
    lower, upper = tpr_bounds(acct.mechanism(), fpr)
    np.testing.assert_allclose(tpr, upper, rtol=1e-12)
    assert np.all(lower <= tpr)
    # (epsilon, delta)-DP implies TPR <= e^eps FPR + delta; both are bounds of accuracy
    # 1e-4 (relative) on the truth, so the curve is below it up to that accuracy
    eps = acct.get_epsilon(DELTA)
    assert np.all(tpr <= (np.exp(eps) * fpr + DELTA) * (1 + 1e-4))
    mu = acct.get_gdp_parameter_estimate(fpr)
    assert np.all(special.ndtr(special.ndtri(fpr) + mu) >= tpr - 1e-12)


def test_true_positive_rates_edge_cases():
    assert DpEventAccountant().get_true_positive_rates(0.1) == pytest.approx(0.1)
    assert DpEventAccountant().get_gdp_parameter_estimate() == 0.0
    non_private = DpEventAccountant().compose(de.NonPrivateDpEvent())
    assert non_private.get_true_positive_rates(0.1) == 1.0
    assert non_private.get_gdp_parameter_estimate() == math.inf
    with pytest.raises(ValueError, match="false_positive_rates"):
        DpEventAccountant().get_true_positive_rates(1.5)
    with pytest.raises(ValueError, match="false_positive_rates"):
        DpEventAccountant().get_gdp_parameter_estimate(np.array([0.0, 0.1]))
