"""The exact samplers and value checks behind every release (``primitives/_release.py``).

Frequencies are tested against the exact probabilities with chi-square / binomial
tests at level 1e-6 (fixed seeds, so the tests are deterministic)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpacct.mechanisms.primitives._release import (
    bernoulli_rational,
    check_integer_values,
    is_integral,
    uniform_below,
)

LEVEL = 1e-6


def test_uniform_below_draws_numpys_bounded_uint64_stream():
    # the exact samplers' outputs (and notebook 06's stored numbers) rest on this stream:
    # the int64 fast path below 2**63 must draw what rng.integers(0, d, uint64) draws
    sizes = [2, 3, 7, 1000, 2**31, 2**32, 2**32 + 1, 2**53 + 5, 2**62, 2**63 - 1, 2**63, 2**64]
    mine, numpys = np.random.default_rng(5), np.random.default_rng(5)
    for d in sizes * 50:
        assert uniform_below(mine, d) == int(numpys.integers(0, d, dtype=np.uint64))


@pytest.mark.parametrize("d", [1, 2, 7, 2**64 + 3])
def test_uniform_below_is_uniform(d):
    rng = np.random.default_rng(11)
    n = 20_000
    draws = [uniform_below(rng, d) for _ in range(n)]
    assert all(0 <= x < d for x in draws)
    if d == 1:
        assert set(draws) == {0}
        return
    cells = 7 if d == 7 else 2
    if d == 2**64 + 3:
        # {0, ..., d-1} split at d // 2: the halves' probabilities are 1/2 within 1/d
        counts = np.bincount([int(x >= d // 2) for x in draws], minlength=2)
        expected = np.full(2, n / 2)
    else:
        counts = np.bincount(draws, minlength=cells)
        expected = np.full(cells, n / cells)
    assert stats.chisquare(counts, expected).pvalue > LEVEL


@pytest.mark.parametrize("p", [Fraction(1, 3), 0.1, Fraction(2**70 - 1, 2**70), 0.0, 1.0])
def test_bernoulli_rational_has_probability_p(p):
    rng = np.random.default_rng(5)
    draws = bernoulli_rational(rng, p, (200, 100))
    assert draws.shape == (200, 100) and draws.dtype == bool
    k, n, q = int(draws.sum()), draws.size, float(Fraction(p))
    if q in (0.0, 1.0):
        assert k == n * q
    else:
        assert stats.binomtest(k, n, q).pvalue > LEVEL


def test_check_integer_values_accepts_integers_only():
    arr, scalar = check_integer_values("value", 3.0)
    assert scalar and arr.dtype == np.int64 and int(arr) == 3
    arr, scalar = check_integer_values("value", [1, -2, 2**40])
    assert not scalar and arr.tolist() == [1, -2, 2**40]
    for bad in (0.5, [1, float("nan")], [float("inf")]):
        with pytest.raises(ValueError, match="value must contain only integers"):
            check_integer_values("value", bad)
    with pytest.raises(ValueError, match=r"magnitude at most 2\*\*62"):
        check_integer_values("value", 2.0**63)


def test_is_integral():
    assert is_integral(3) and is_integral(np.int8(3)) and is_integral(4.0)
    assert not is_integral(True) and not is_integral(np.bool_(False))
    assert not is_integral(0.5) and not is_integral("3") and not is_integral(float("inf"))
