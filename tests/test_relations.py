"""Neighbouring relations: transformers refuse the relation they are not proved for,
and a change of relation is an explicit conversion with its price, never a relabel."""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracles import gaussian_delta

import dpacct as dp
from dpacct.accountant import (
    ADD_REMOVE,
    REPLACE_ONE,
    compose,
    poisson_subsample,
    subsample_without_replacement,
)
from dpacct.mechanisms import (
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    RandomizedResponse,
    ReplaceOneGaussianMechanism,
    ReplaceOneLaplaceMechanism,
    fixed_size_gaussian_step,
    replace_one,
)


def test_poisson_subsampling_refuses_a_replace_one_base():
    """Reported: poisson_subsample(RandomizedResponse, q) relabelled a local mechanism as
    add/remove, so compose then accepted RR together with a Gaussian."""
    with pytest.raises(ValueError, match=r"poisson_subsample needs .*'add/remove'.*Theorem 11"):
        poisson_subsample(RandomizedResponse(p=0.75), 0.1)
    with pytest.raises(ValueError, match="add/remove"):
        poisson_subsample(ReplaceOneGaussianMechanism(sigma=1.0), 0.1)
    # and so RR never meets a Gaussian in one composition
    with pytest.raises(ValueError, match="different neighbouring relations"):
        compose([RandomizedResponse(p=0.75), GaussianMechanism(sigma=1.0)], counts=[1, 1])


def test_sampling_without_replacement_refuses_an_add_remove_base():
    """Reported: subsample_without_replacement(GaussianMechanism(...), q) silently took an
    add/remove base although its theorem needs replace-one."""
    for base in (GaussianMechanism(sigma=2.0), LaplaceMechanism(b=1.0), ExponentialMechanism(1.0)):
        with pytest.raises(ValueError, match=r"needs .*'replace-one'.*replace_one"):
            subsample_without_replacement(base, 0.1)
    step = subsample_without_replacement(RandomizedResponse(p=0.75), 0.1)  # local: replace-one
    assert step.neighbouring == REPLACE_ONE


@pytest.mark.parametrize("sigma", [0.7, 2.0, 5.0])
def test_replace_one_gaussian_against_the_closed_form(sigma):
    """A sum with add/remove sensitivity C moves by 2C under replace-one (attained by
    g(x') = -g(x)), so noise sigma*C is (2/sigma)-GDP for replace-one neighbours."""
    conv = replace_one(GaussianMechanism(sigma=sigma))
    assert conv == ReplaceOneGaussianMechanism(sigma=sigma / 2)
    assert conv.neighbouring == REPLACE_ONE
    eps = conv.epsilon(1e-6)
    assert gaussian_delta(2.0 / sigma, eps) == pytest.approx(1e-6, rel=1e-7)
    # the attaining pair: clipped gradients g = +C and g' = -C, noise sigma * C
    c = 1.0
    mu_attained = abs(c - (-c)) / (sigma * c)
    assert mu_attained == pytest.approx(2.0 / sigma)


def test_replace_one_laplace_doubles_the_pure_epsilon():
    conv = replace_one(LaplaceMechanism(b=3.0))
    assert conv == ReplaceOneLaplaceMechanism(b=1.5)
    assert conv.pure_epsilon == pytest.approx(2.0 / 3.0, rel=1e-15)


def test_replace_one_with_a_stated_factor_and_bad_factors():
    assert replace_one(GaussianMechanism(sigma=2.0), sensitivity_factor=1.0).sigma == 2.0
    for bad in (0.5, 2.5, math.nan, math.inf):
        with pytest.raises(ValueError, match="sensitivity_factor"):
            replace_one(GaussianMechanism(sigma=2.0), sensitivity_factor=bad)
    with pytest.raises(ValueError, match="already accounted under 'replace-one'"):
        replace_one(RandomizedResponse(p=0.8))
    with pytest.raises(TypeError, match="converts GaussianMechanism and LaplaceMechanism"):
        replace_one(poisson_subsample(GaussianMechanism(sigma=1.0), 0.1))
    with pytest.raises(TypeError, match="mechanism must be a Mechanism"):
        replace_one("gaussian")  # type: ignore[arg-type]


def test_fixed_size_step_is_the_explicit_conversion_in_one_call():
    step = fixed_size_gaussian_step(noise_multiplier=1.0, sample_rate=0.01)
    want = subsample_without_replacement(ReplaceOneGaussianMechanism(sigma=0.5), 0.01)
    assert step == want and step.neighbouring == REPLACE_ONE
    run = compose([step], counts=[1000])
    # sampling without replacement can only help: below the unsampled replace-one run
    plain = compose([ReplaceOneGaussianMechanism(sigma=0.5)], counts=[1000]).epsilon(1e-5)
    assert 0 < run.epsilon(1e-5) < plain
    # a ledger of fixed-size steps refuses a Poisson (add/remove) step
    acct = dp.PrivacyAccountant()
    acct.record(step, 10)
    with pytest.raises(ValueError, match="neighbouring relation"):
        acct.step(noise_multiplier=1.0, sample_rate=0.01)


def test_relations_are_named_constants():
    assert GaussianMechanism(sigma=1.0).neighbouring == ADD_REMOVE
    assert RandomizedResponse(p=0.8).neighbouring == REPLACE_ONE
    assert compose([RandomizedResponse(p=0.8)], counts=[3]).neighbouring == REPLACE_ONE
    # replace-one compositions: RR with a converted Gaussian is allowed (one relation)
    mixed = compose(
        [RandomizedResponse(p=0.75), replace_one(GaussianMechanism(sigma=4.0))], counts=[2, 3]
    )
    lo, hi = mixed.epsilon_bounds(1e-6)
    assert 0 < lo <= hi and np.isfinite(hi)


def test_replace_one_reads_the_declared_noise_parameter_which_subclasses_lose():
    """replace_one converts a family that declares its noise parameter for itself
    (``noise_parameter``); a subclass, which may change the curve, does not inherit the
    declaration and is refused, as the exact-type test it replaces did."""
    from dpacct.mechanisms import GaussianMechanism, LaplaceMechanism

    class Tweaked(GaussianMechanism):
        pass

    assert GaussianMechanism(sigma=1.0).noise_parameter == "sigma"
    assert LaplaceMechanism(b=1.0).noise_parameter == "b"
    assert Tweaked(sigma=1.0).noise_parameter is None
    assert ReplaceOneGaussianMechanism(sigma=1.0).noise_parameter is None
    with pytest.raises(TypeError, match="replace_one converts GaussianMechanism"):
        replace_one(Tweaked(sigma=1.0))
