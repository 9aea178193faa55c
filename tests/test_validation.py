"""``dpacct.accountant.validation``: the checks every public entry point uses.

Each check returns the value it accepts as the plain Python type (so arithmetic after
it never meets a numpy scalar or a bool), accepts exactly its documented range with
the documented open/closed ends, and refuses everything else with an error naming the
parameter (the bad-input catalogue, ``tests/test_bad_input_*.py``, covers the public
API; here each check is tested at its boundaries)."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest

from dpacct.accountant.validation import (
    MAX_COUNT,
    check_alpha,
    check_count,
    check_epsilon,
    check_finite,
    check_fpr,
    check_positive,
    check_probability,
    check_rng,
    check_tol,
    is_real_type,
    show_value,
)


@pytest.mark.parametrize(
    "value, shown",
    [
        (np.float64(0.5), "0.5"),
        (np.int64(3), "3"),
        ([np.int64(3), 2.5], "[3, 2.5]"),
        ((1,), "(1,)"),
        ("0.1", "'0.1'"),
        (10**400, "an integer with 401 digits"),
        (10**24, "1000000000000000000000000"),  # 25 digits: still written out
    ],
)
def test_show_value_prints_numbers_plainly(value, shown):
    assert show_value(value) == shown


def test_accepted_values_come_back_as_python_floats():
    for value in (np.float32(0.25), np.int64(2), Fraction(1, 4), 3):
        out = check_positive("x", value)
        assert type(out) is float and out == float(value)


@pytest.mark.parametrize("bad", [True, "1", None, [1.0], 1j])
def test_non_reals_are_type_errors_naming_the_parameter(bad):
    with pytest.raises(TypeError, match=r"^sigma must be a real number"):
        check_positive("sigma", bad)


def test_is_real_type():
    assert is_real_type(float) and is_real_type(np.int32) and is_real_type(Fraction)
    assert not is_real_type(bool) and not is_real_type(np.bool_) and not is_real_type(str)


def test_positive_boundaries():
    assert check_positive("b", 5e-324) == 5e-324  # the smallest positive double
    assert check_positive("b", math.inf, allow_inf=True) == math.inf
    for bad, text in [
        (0.0, r"\(0, inf\), got 0\.0"),
        (-1.0, r"\(0, inf\), got -1\.0"),
        (math.nan, r"\(0, inf\), got nan"),
    ]:
        with pytest.raises(ValueError, match=f"b must lie in {text}"):
            check_positive("b", bad)
    with pytest.raises(ValueError, match=r"b must lie in \(0, inf\), got inf"):
        check_positive("b", math.inf)
    with pytest.raises(ValueError, match="within the float range"):
        check_positive("b", 10**400)


@pytest.mark.parametrize(
    "low_open, high_open, interval, inside, outside",
    [
        (True, True, "(0, 1)", [1e-300, 0.5, 1 - 2**-53], [0.0, 1.0]),
        (False, True, "[0, 1)", [0.0, 0.5], [1.0, -1e-300]),
        (True, False, "(0, 1]", [1.0, 1e-300], [0.0, 1 + 2**-52]),
        (False, False, "[0, 1]", [0.0, 1.0], [-1e-300, 1 + 2**-52]),
    ],
)
def test_probability_ends(low_open, high_open, interval, inside, outside):
    for x in inside:
        assert check_probability("p", x, low_open=low_open, high_open=high_open) == x
    for x in [*outside, math.nan]:
        with pytest.raises(ValueError, match=f"p must lie in {re.escape(interval)}"):
            check_probability("p", x, low_open=low_open, high_open=high_open)


def test_epsilon_finite_and_tol_boundaries():
    assert check_epsilon(0.0) == 0.0
    assert check_finite("x", -1e308) == -1e308
    for bad in (-1e-300, math.inf, math.nan):
        with pytest.raises(ValueError, match=r"epsilon must lie in \[0, inf\)"):
            check_epsilon(bad)
    assert check_tol(None) is None and check_tol(0.4999) == 0.4999
    for bad in (0.0, 0.5, math.nan):
        with pytest.raises(ValueError, match=r"tol must lie in \(0, 0\.5\)"):
            check_tol(bad)


def test_count_boundaries():
    assert check_count(1) == 1 and check_count(0, allow_zero=True) == 0
    assert check_count(3.0) == 3 and type(check_count(np.int64(7))) is int
    assert check_count(MAX_COUNT) == 2**63 - 1
    with pytest.raises(ValueError, match=r"count must be an integer <= 2\*\*63 - 1"):
        check_count(2**63)
    with pytest.raises(ValueError, match="count must be an integer >= 1, got 0"):
        check_count(0)
    with pytest.raises(TypeError, match=r"count must be an integer, got float 2\.5"):
        check_count(2.5)
    with pytest.raises(ValueError, match=r"count must be an integer in \[1, 2\*\*63 - 1\]"):
        check_count(math.inf)


def test_orders_and_false_positive_rates_are_arrays_in_range():
    np.testing.assert_array_equal(check_alpha([1.5, math.inf]), [1.5, math.inf])
    with pytest.raises(ValueError, match=r"alpha must be > 1 .*got 1\.0"):
        check_alpha([2.0, 1.0])
    np.testing.assert_array_equal(check_fpr(np.array([0.0, 1.0])), [0.0, 1.0])
    with pytest.raises(ValueError, match=r"fpr must lie in \[0, 1\], got 1\.5"):
        check_fpr([0.5, 1.5])


def test_rng_must_be_a_generator():
    rng = np.random.default_rng(0)
    assert check_rng(rng) is rng
    for bad in (0, None, np.random.RandomState(0)):
        with pytest.raises(TypeError, match=r"rng must be a numpy\.random\.Generator"):
            check_rng(bad)
