"""Property tests over every registered mechanism type, with randomly drawn parameters.

For each registry name a strategy draws an instance (``FAMILIES``); the properties:

* RDP non-decreasing in alpha up to 1e22 and <= the pure epsilon (Renyi divergence is
  non-decreasing in its order, van Erven & Harremoes 2014, Theorem 3);
* ``epsilon_bounds(delta)`` ordered, its upper end equal to ``epsilon(delta)``;
* ``delta(epsilon(d)) <= d`` (round-off room 1e-9 relative);
* monotone in the noise / sample rate / count / delta: ``lower(more private) <=
  upper(less private)``, and the upper bounds ordered up to the bracket's width.

Excluded for now (being fixed in the PLD files): a single Poisson-subsampled Gaussian
step with ``sigma <= 0.6`` and ``q <= 0.01`` (grid error), and ``q < 1e-4`` with
``sigma <= 0.6`` over many steps (brackets ~2x wide); the strategies draw
``sigma >= 0.7`` and ``q >= 1e-3`` for subsampled Gaussians.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from registry_examples import EXAMPLES, REGISTERED, LossLawOnly

import dpacct.mechanisms as M
from dpacct.accountant import (
    Mechanism,
    MixtureOfGaussiansMechanism,
    TruncatedPoissonGaussianMechanism,
    compose,
    poisson_subsample,
    random_allocation,
    subsample_without_replacement,
)

RUNS: dict[str, int] = {}
SETTINGS = settings(
    deadline=None,
    derandomize=True,
    max_examples=16,
    suppress_health_check=[HealthCheck.too_slow],
)

pos = st.floats(0.7, 8.0)
eps0 = st.floats(1e-3, 3.0)
rate = st.floats(1e-3, 0.3)
count = st.integers(1, 50)

_REPLACE_ONE = ("randomized_response", "replace_one_gaussian", "replace_one_laplace")
_prim = {
    "gaussian": pos.map(lambda s: M.GaussianMechanism(sigma=s)),
    "laplace": pos.map(lambda b: M.LaplaceMechanism(b=b)),
    "randomized_response": st.floats(0.55, 0.95).map(lambda p: M.RandomizedResponse(p=p)),
    "discrete_gaussian": st.floats(0.8, 5.0).map(lambda s: M.DiscreteGaussianMechanism(sigma=s)),
    "discrete_laplace": pos.map(lambda s: M.DiscreteLaplaceMechanism(scale=s)),
    "pure_dp": eps0.map(lambda e: M.PureDPMechanism(epsilon=e)),
    "zcdp": st.floats(1e-6, 0.5).map(lambda r: M.ZCDPMechanism(rho=r)),
    "exponential": eps0.map(lambda e: M.ExponentialMechanism(epsilon=e)),
    "exponential_pure_dp": eps0.map(lambda e: M.ExponentialMechanism(e, bounded_range=False)),
    "permute_and_flip": eps0.map(lambda e: M.PermuteAndFlip(epsilon=e)),
    "test_loss_law_only": st.floats(0.2, 1.5).map(lambda mu: LossLawOnly(mu=mu)),
    "replace_one_gaussian": pos.map(lambda s: M.replace_one(M.GaussianMechanism(sigma=s))),
    "replace_one_laplace": pos.map(lambda b: M.ReplaceOneLaplaceMechanism(b=b)),
    "gaussian_dp": st.floats(0.1, 1.5).map(Mechanism.from_gdp),
    "pure_epsilon": eps0.map(Mechanism.from_pure_epsilon),
    "epsilon_delta": st.builds(Mechanism.from_epsilon_delta, eps0, st.floats(1e-12, 1e-9)),
}
#: the relations the transformers are proved for: Poisson subsampling takes add/remove
#: bases, sampling without replacement replace-one bases
_add_remove = st.one_of(*(v for k, v in _prim.items() if k not in _REPLACE_ONE))
_replace_one = st.one_of(*(_prim[k] for k in _REPLACE_ONE))
_base = st.one_of(*_prim.values())
FAMILIES = dict(_prim)
FAMILIES.update(
    {
        "poisson_subsample": st.builds(poisson_subsample, _add_remove, rate),
        "subsample_without_replacement": st.builds(
            subsample_without_replacement, _replace_one, rate
        ),
        "compose": st.builds(lambda m, n: compose([m], counts=[n]), _base, count),
        "laplace_composition": st.builds(
            lambda b, n: M.LaplaceComposition(parts=((M.LaplaceMechanism(b=b), n),)), pos, count
        ),
        "noisy_gd": st.builds(
            lambda s, n: M.NoisyGD(sigma=s, iterations=n, loss="linear", clip=1.0),
            st.floats(5.0, 50.0),
            st.integers(1, 100),
        ),
        "dp_sgd": st.builds(
            lambda s, q, n: M.DPSGD(sigma=s, sample_rate=q, steps=n, loss="logistic"),
            st.floats(0.8, 3.0),
            st.floats(1e-3, 0.1),
            st.integers(1, 200),
        ),
        "ssp": st.floats(1.0, 20.0).map(lambda s: M.SSP(noise_scale=s, x_bound=1.0, y_bound=1.0)),
        "adassp": st.floats(1.0, 20.0).map(
            lambda s: M.AdaSSP(noise_scale=s, x_bound=1.0, y_bound=1.0)
        ),
        "histogram_quantiles": st.floats(0.5, 10.0).map(
            lambda s: M.HistogramQuantiles(lower=0.0, upper=1.0, bins=16, scale=s)
        ),
        "tree_quantiles": st.floats(0.5, 10.0).map(
            lambda s: M.TreeQuantiles(lower=0.0, upper=1.0, bins=16, scale=s)
        ),
        "exponential_quantile": eps0.map(
            lambda e: M.ExponentialQuantile(epsilon0=e, lower=-1.0, upper=1.0)
        ),
        "dp_theil_sen": eps0.map(
            lambda e: M.DPTheilSen(
                epsilon=e, x_lower=0.0, x_upper=1.0, pred_lower=-1.0, pred_upper=1.0
            )
        ),
        "marginal_synthesizer": st.floats(0.5, 10.0).map(
            lambda s: M.MarginalSynthesizer(
                (M.CategoricalColumn("a", [0, 1]), M.CategoricalColumn("b", [0, 1, 2])),
                scale=s,
            )
        ),
        "mixture_of_gaussians": st.builds(
            lambda s, c, p: MixtureOfGaussiansMechanism(s, [0.0, c], [1.0 - p, p]),
            pos,
            st.floats(0.5, 3.0),
            st.floats(0.01, 1.0),
        ),
        "truncated_poisson_gaussian": st.builds(
            lambda s, q, extra: TruncatedPoissonGaussianMechanism(
                s, q, dataset_size=40, max_batch_size=max(1, round(40 * q) + extra)
            ),
            pos,
            st.floats(0.02, 0.1),
            st.integers(0, 3),
        ),
        "mst": st.floats(0.05, 5.0).map(
            lambda r: M.MST(
                (M.CategoricalColumn("a", [0, 1]), M.CategoricalColumn("b", [0, 1, 2])),
                rho=r,
            )
        ),
        # k = 1 only: the k = 2 direct route builds its law in seconds (its own tests,
        # tests/test_random_allocation_k2.py, check it against quadrature and Monte Carlo)
        "random_allocation": st.builds(
            lambda s, t: random_allocation(M.GaussianMechanism(sigma=s), t),
            st.floats(1.0, 4.0),
            st.integers(2, 20),
        ),
        "aim": st.floats(0.05, 5.0).map(
            lambda r: M.AIM(
                (M.CategoricalColumn("a", [0, 1]), M.CategoricalColumn("b", [0, 1, 2])),
                rho=r,
            )
        ),
    }
)
NAMES = sorted(REGISTERED)


def test_every_registered_type_has_a_strategy():
    assert sorted(set(NAMES) - set(FAMILIES)) == []
    assert set(EXAMPLES) == set(FAMILIES)


def _count(name):
    RUNS[name] = RUNS.get(name, 0) + 1


#: families whose one-step PLD takes seconds to build (the mixture law's grid over a wide
#: loss range: 45 s for one bracket at sigma 0.7, c 3; 254 s for 16 draws), drawn fewer
#: times here; ``DPACCT_PEER_DRAWS=all`` draws them 16 times too
FEW_DRAWS = {"mixture_of_gaussians": 4, "truncated_poisson_gaussian": 6, "random_allocation": 4}
ALL_DRAWS = os.environ.get("DPACCT_PEER_DRAWS", "") == "all"


@pytest.mark.parametrize("name", NAMES)
def test_curves_and_brackets(name):
    @settings(
        SETTINGS, max_examples=SETTINGS.max_examples if ALL_DRAWS else FEW_DRAWS.get(name, 16)
    )
    @given(mech=FAMILIES[name], delta=st.sampled_from([1e-3, 1e-6, 1e-10]))
    def check(mech, delta):
        _count(name)
        if mech.has_rdp:
            a = 1.0 + np.geomspace(1e-4, 1e22, 300)
            r = np.asarray(mech.rdp(a))
            assert np.all(r >= 0)
            assert np.all((r[1:] >= r[:-1]) | (np.diff(r) >= -1e-12 * np.abs(r[1:])))
            assert np.all(r <= mech.pure_epsilon * (1 + 1e-12))
        lo, hi = mech.epsilon_bounds(delta)
        up = mech.epsilon(delta)
        assert 0.0 <= lo <= hi
        assert hi == pytest.approx(up, rel=1e-12)
        if math.isfinite(up):
            # every route, PLD included (delta() also reads the grids epsilon() used)
            assert mech.delta(up) <= delta * (1 + 1e-9)
        # monotone in delta: a smaller delta never needs a smaller epsilon
        lo2, hi2 = mech.epsilon_bounds(delta / 100)
        assert lo <= hi2
        assert hi <= hi2 * (1 + 1e-12) + (hi2 - lo2)

    before = RUNS.get(name, 0)
    check()
    # every family was exercised (not only rejected by its strategy): checked here, in
    # the test that ran it, so it holds however the suite is split between processes
    assert RUNS.get(name, 0) > before, name


@SETTINGS
@given(s=st.floats(0.7, 6.0), f=st.floats(1.05, 2.0), q=st.floats(1e-3, 0.2), n=count)
def test_monotone_in_sigma(s, f, q, n):
    delta = 1e-6
    noisy = compose([poisson_subsample(M.GaussianMechanism(sigma=s * f), q)], counts=[n])
    loud = compose([poisson_subsample(M.GaussianMechanism(sigma=s), q)], counts=[n])
    lo_n, hi_n = noisy.epsilon_bounds(delta)
    lo_l, hi_l = loud.epsilon_bounds(delta)
    assert lo_n <= hi_l
    assert hi_n <= hi_l + (hi_l - lo_l) + 1e-12 * hi_l


@SETTINGS
@given(
    base=st.one_of(_prim["laplace"], _prim["gaussian"], _prim["exponential"]),
    q=st.floats(1e-3, 0.2),
    f=st.floats(1.1, 4.0),
    n=count,
)
def test_monotone_in_sample_rate(base, q, f, n):
    delta = 1e-6
    small = compose([poisson_subsample(base, q)], counts=[n])
    big = compose([poisson_subsample(base, min(q * f, 1.0))], counts=[n])
    lo_s, hi_s = small.epsilon_bounds(delta)
    lo_b, hi_b = big.epsilon_bounds(delta)
    assert lo_s <= hi_b
    assert hi_s <= hi_b + (hi_b - lo_b) + 1e-12 * hi_b


@SETTINGS
@given(base=_base, n=count, extra=st.integers(1, 50))
def test_monotone_in_count(base, n, extra):
    delta = 1e-6
    few, many = compose([base], counts=[n]), compose([base], counts=[n + extra])
    lo_f, hi_f = few.epsilon_bounds(delta)
    lo_m, hi_m = many.epsilon_bounds(delta)
    assert lo_f <= hi_m
    assert hi_f <= hi_m + (hi_m - lo_m) + 1e-12 * hi_m


@pytest.mark.parametrize(
    "mech,delta",
    [
        # were 1.3e-4, 7e-9 and 4e-8 relative above delta, and 4.3x for the refined
        # grids of the last case, when delta() read only the default grids
        (M.DPSGD(sigma=1.0, sample_rate=0.015625, steps=1, loss="logistic"), 1e-3),
        (poisson_subsample(M.GaussianMechanism(sigma=1.0), 0.25), 1e-10),
        (compose([M.DiscreteGaussianMechanism(sigma=1.0)], counts=[2]), 1e-10),
        (compose([poisson_subsample(M.GaussianMechanism(sigma=1.0), 0.01)], [10_000]), 1e-5),
        (compose([poisson_subsample(M.GaussianMechanism(sigma=0.5), 2e-6)], [300]), 1e-5),
        (compose([M.LaplaceMechanism(b=5.0), M.GaussianMechanism(sigma=3.0)], [20, 7]), 1e-8),
    ],
)
def test_pld_delta_of_epsilon_strict(mech, delta):
    eps = mech.epsilon(delta)
    assert mech.delta(eps) <= delta * (1 + 1e-9)
    # the bracket's upper end is the same answer, and its lower end is below it
    lo, hi = mech.epsilon_bounds(delta)
    assert lo <= hi == eps
