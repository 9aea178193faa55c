"""The readers of dp_accounting event fields (dpacct._dp_event_fields).

Stand-in events (plain objects with the fields) keep these tests free of dp_accounting;
the whole vocabulary is fuzzed in tests/test_fuzz_inputs.py.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from dpacct._dp_event_fields import (
    REPLACE_ONE_SENSITIVITIES,
    check_replace_one_sensitivity,
    convention_note,
    count_field,
    is_infinite_field,
    real_field,
    real_sequence_field,
    step_counts_field,
)


def ev(**fields):
    return SimpleNamespace(**fields)


@pytest.mark.parametrize(
    ("value", "error", "text"),
    [
        (math.nan, ValueError, "must lie in [0, inf), got nan"),
        (math.inf, ValueError, "must lie in [0, inf), got inf"),
        (-1, ValueError, "got -1.0"),
        (10**400, ValueError, "an integer with 401 digits"),
        (True, TypeError, "got bool True"),
        (1 + 0j, TypeError, "got complex"),
        (np.array([1.0, 2.0]), TypeError, "got ndarray"),
        (None, TypeError, "got NoneType None"),
        ("1", TypeError, "got str '1'"),
    ],
)
def test_real_field_refuses_naming_the_field(value, error, text):
    with pytest.raises(error) as info:
        real_field(ev(x=value), "event.events[2]", "x")
    assert "event.events[2].x" in str(info.value) and text in str(info.value)


def test_real_field_accepts_numbers_in_range():
    assert real_field(ev(x=np.float64(2.5)), "e", "x") == 2.5
    assert real_field(ev(x=np.array(3)), "e", "x") == 3.0  # a 0-d array is its number
    assert real_field(ev(x=1e308), "e", "x") == 1e308
    assert real_field(ev(x=math.inf), "e", "x", allow_inf=True) == math.inf
    with pytest.raises(ValueError, match=r"e.x must lie in \[0, 1\], got 1.5"):
        real_field(ev(x=1.5), "e", "x", upper=1.0)


def test_counts_follow_check_count():
    assert count_field(ev(n=2.0), "e", "n") == 2 and type(count_field(ev(n=2.0), "e", "n")) is int
    assert count_field(ev(n=np.int64(7)), "e", "n") == 7
    assert count_field(ev(n=0), "e", "n") == 0
    with pytest.raises(ValueError, match=r"e\.n must be an integer >= 1"):
        count_field(ev(n=0), "e", "n", allow_zero=False)
    with pytest.raises(TypeError, match=r"e\.n must be an integer, got float 2.5"):
        count_field(ev(n=2.5), "e", "n")


def test_step_counts():
    for value in (8, 8.0, [8.0], (3, 8), np.array([8]), np.array(8)):
        assert max(step_counts_field(ev(step_counts=value), "e")) == 8
    with pytest.raises(ValueError, match=r"e.step_counts\[1\] must be an integer >= 0"):
        step_counts_field(ev(step_counts=[4, -2]), "e")
    with pytest.raises(ValueError, match="non-empty"):
        step_counts_field(ev(step_counts=[]), "e")
    with pytest.raises(ValueError, match="shape"):
        step_counts_field(ev(step_counts=np.ones((2, 2))), "e")


def test_real_sequences():
    assert real_sequence_field(ev(s=(0, 1.5)), "e", "s") == [0.0, 1.5]
    assert real_sequence_field(ev(s=np.array([0.5, 0.5])), "e", "s") == [0.5, 0.5]
    with pytest.raises(TypeError, match=r"e\.s must be a list of real numbers, got NoneType"):
        real_sequence_field(ev(s=None), "e", "s")
    with pytest.raises(ValueError, match=r"e.s\[1\] must be a finite number, got inf"):
        real_sequence_field(ev(s=[0, math.inf]), "e", "s")
    with pytest.raises(ValueError, match=r"e.s\[0\] must be a finite number within"):
        real_sequence_field(ev(s=[10**400]), "e", "s")
    with pytest.raises(TypeError, match=r"e.s\[0\] must be a real number, got bool"):
        real_sequence_field(ev(s=[True]), "e", "s")


def test_is_infinite_field_never_compares_arrays():
    assert is_infinite_field(ev(rho=math.inf), "rho")
    assert is_infinite_field(ev(rho=np.float64(math.inf)), "rho")
    for value in (np.array([math.inf, 1.0]), None, 10**400, True, 1.0):
        assert not is_infinite_field(ev(rho=value), "rho")


def test_replace_one_sensitivity_is_one_of_two_named_readings():
    assert set(REPLACE_ONE_SENSITIVITIES) == {1.0, 2.0}
    assert check_replace_one_sensitivity(np.float64(2.0)) == 2.0
    for bad in (0.5, 4.0, math.nan):
        with pytest.raises(ValueError, match="replace_one_sensitivity must be 2"):
            check_replace_one_sensitivity(bad)
    assert "2 C" in convention_note(2.0) and "replace_one_sensitivity=1" in convention_note(2.0)
    assert "Sound only if" in convention_note(1.0)


def test_noise_scales_are_zero_or_evaluable():
    from dpacct._dp_event_fields import MIN_NOISE, noise_field

    assert noise_field(ev(s=0), "e", "s") == 0.0
    assert noise_field(ev(s=MIN_NOISE), "e", "s") == 1e-100
    for tiny in (5e-324, 1e-300, 9.9e-101):
        with pytest.raises(ValueError, match=r"e\.s must be 0 \(no noise\) or at least 1e-100"):
            noise_field(ev(s=tiny), "e", "s")
