"""``dpacct.mechanisms.primitives.noise``: the noise family named by ``noise=`` is the primitive
with that scale, checked through its closed-form privacy (Laplace: pure 1/b;
Gaussian: delta(eps) of Balle & Wang 2018, Theorem 8, written with scipy)."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from dpacct.mechanisms import GaussianMechanism, LaplaceMechanism
from dpacct.mechanisms.primitives.noise import NOISES, noise_mechanism


def test_the_names_are_the_two_families():
    assert NOISES == ("laplace", "gaussian")


@pytest.mark.parametrize("b", [0.5, 4.0])
def test_laplace_scale_is_b(b):
    mech = noise_mechanism("laplace", b)
    assert mech == LaplaceMechanism(b=b)
    # a count changed by one record: the privacy loss is at most 1/b
    assert mech.epsilon(0.0) == pytest.approx(1.0 / b, rel=1e-15)


@pytest.mark.parametrize("sigma", [0.8, 3.0])
def test_gaussian_scale_is_sigma(sigma):
    mech = noise_mechanism("gaussian", sigma)
    assert mech == GaussianMechanism(sigma=sigma)
    eps = 1.0
    want = stats.norm.cdf(0.5 / sigma - eps * sigma) - math.exp(eps) * stats.norm.cdf(
        -0.5 / sigma - eps * sigma
    )
    assert mech.delta(eps) == pytest.approx(want, rel=1e-9)
