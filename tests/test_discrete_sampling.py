"""The exact discrete Laplace sampler on arrays (mechanisms/primitives/_discrete_sampling.py).

Each path is checked against the pmf by a chi-square test at the suite's level: the
array coin of CKS 2020's Algorithm 1, the array trials of Algorithm 2 (with Python
integers where ``U + t V`` passes 2^63) and the per-draw path for ``t >= 2^63``.  The
mechanism-level pmf tests (``DiscreteLaplaceMechanism.release``) are in test_releases.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats
from test_releases import LEVEL, _chi_square_pmf

from dpacct.mechanisms.primitives._discrete_sampling import _bernoulli_exp_array
from dpacct.mechanisms.primitives.discrete import (
    DiscreteLaplaceMechanism,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)


@pytest.mark.parametrize("gamma", [(0, 7), (3, 10), (7, 7), (9, 10)])
def test_bernoulli_exp_coin_on_arrays(gamma):
    # the array coin runs Algorithm 1 with Bernoulli(num / (den k)) drawn as two uniforms;
    # one array mixes the four numerators (each entry its own coin): each against exp(-num/den)
    num, den = gamma
    n = 20_000
    nums = np.array([0, num] * (n // 2), dtype=np.int64)
    heads = _bernoulli_exp_array(np.random.default_rng(30), nums, den)
    assert heads[0::2].all()  # exp(-0) = 1
    assert stats.binomtest(int(heads[1::2].sum()), n // 2, math.exp(-num / den)).pvalue > LEVEL


@pytest.mark.parametrize(
    ("scale", "n"),
    [
        (Fraction(2**62 + 1, 2**61), 20_000),  # the array path, u + t v past int64: Python ints
        (Fraction(2**64 + 1, 2**63), 1_500),  # t >= 2^63: one Python call chain per draw
        (Fraction(7, 3), 20_000),  # floor(X / s) with s = 3
        (Fraction(2**63 - 1, 2**64), 20_000),  # s past int64 (scale ~ 1/2): Python integers
    ],
)
def test_discrete_laplace_pmf_on_each_path(scale, n):
    noisy = sample_discrete_laplace(scale, n, np.random.default_rng(31))
    r = math.exp(-1.0 / float(scale))

    def pmf(x: int) -> float:
        return (1 - r) / (1 + r) * r ** abs(x)

    assert _chi_square_pmf(noisy, pmf, cut=int(3 * float(scale)) + 2) > LEVEL


def test_a_tiny_float_scale_releases_its_input():
    # the reviewer's case (03:05): a float scale below ~2^-10 has a denominator past 2^63;
    # P(noise != 0) = 2 e^{-1/scale} / (1 + e^{-1/scale}) ~ 0 at scale 1e-4
    # (5 values: one call chain per draw; 300: the array path's all-zero shortcut)
    for n in (5, 300):
        noisy = DiscreteLaplaceMechanism(scale=1e-4).release(
            np.arange(n), rng=np.random.default_rng(0))
        assert noisy.tolist() == list(range(n))


# bad scales name their parameter: on main NaN raised Fraction's own ValueError (no name),
# an infinity an OverflowError and the string "2" was accepted as 2 (review 26)
@pytest.mark.parametrize("sampler, name", [(sample_discrete_laplace, "scale"),
                                           (sample_discrete_gaussian, "sigma")])
@pytest.mark.parametrize("bad, error", [(math.nan, ValueError), (math.inf, ValueError),
                                        (-math.inf, ValueError), (0.0, ValueError),
                                        (-2, ValueError), (np.float32("nan"), ValueError),
                                        ("2", TypeError), (True, TypeError),
                                        (None, TypeError)])
def test_bad_scales_name_their_parameter(sampler, name, bad, error):
    with pytest.raises(error, match=name):
        sampler(bad, 3, np.random.default_rng(0))


def test_numpy_and_exact_scales_are_taken_exactly():
    # float32 1.5 is the double 1.5 (exactly); an int64 and a Fraction are rationals
    pairs = [(np.float32(1.5), 1.5), (np.int64(3), 3), (np.float64(0.25), Fraction(1, 4))]
    for scale, same in pairs:
        a = sample_discrete_laplace(scale, 200, np.random.default_rng(5))
        b = sample_discrete_laplace(same, 200, np.random.default_rng(5))
        assert np.array_equal(a, b)
