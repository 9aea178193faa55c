"""Validation of regression data (``dpacct.mechanisms.algorithms._regression_data``): shapes and
finiteness named, labels in one binary coding, and declared bounds that refuse or,
when asked, clip (rows scaled to the bound, targets clipped) -- never silently."""

from __future__ import annotations

import numpy as np
import pytest

from dpacct.mechanisms.algorithms._regression_data import (
    as_design_matrix,
    as_target_vector,
    binary_coding,
    check_class_labels,
    check_regression_data,
)


def test_clipping_scales_rows_and_clips_targets():
    X = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, -2.0]])
    y = np.array([2.5, -0.5, -7.0])
    Xc, yc = check_regression_data(X, y, x_bound=1.0, y_bound=2.0, out_of_range="clip")
    # by hand: norm 5 -> scaled by 1/5; norm 0.5 kept; norm 2 -> scaled by 1/2
    np.testing.assert_allclose(Xc, [[0.6, 0.8], [0.3, 0.4], [0.0, -1.0]], rtol=1e-15)
    assert yc.tolist() == [2.0, -0.5, -2.0]
    with pytest.raises(ValueError, match=r"X violates x_bound=1\.0: row 0 has L2 norm 5\.0"):
        check_regression_data(X, y, x_bound=1.0)
    with pytest.raises(ValueError, match=r"y violates y_bound=2\.0: entry 2 is -7\.0"):
        check_regression_data(X / 10, y, y_bound=2.0)
    with pytest.raises(ValueError, match="out_of_range must be 'raise' or 'clip'"):
        check_regression_data(X, y, out_of_range="drop")


def test_a_row_exactly_at_the_bound_passes():
    # 0.6, 0.8 has norm 1 up to rounding: inside the bound's slack
    X, _ = check_regression_data([[0.6, 0.8]], [0.0], x_bound=1.0)
    assert X.tolist() == [[0.6, 0.8]]


def test_binary_labels_in_one_coding():
    assert binary_coding([-1, 1]) == "pm1" and binary_coding([0, 1, 1]) == "01"
    _, y = check_regression_data([[1.0]] * 3, [-1, 1, -1], labels01=True)
    assert y.tolist() == [0.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="got both 0 and -1"):
        check_regression_data([[1.0]] * 3, [-1, 0, 1], labels01=True)
    with pytest.raises(ValueError, match=r"got 2\.0"):
        check_regression_data([[1.0]] * 2, [0, 2], labels01=True)
    assert check_class_labels([0, 2, 1.0], 3, 3).tolist() == [0, 2, 1]
    with pytest.raises(ValueError, match=r"class labels in \{0, \.\.\., 1\}"):
        check_class_labels([0.5, 1], 2, 2)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ([1.0, 2.0], "2-D"),
        (np.zeros((0, 2)), "must not be empty"),
        ([[1.0, np.inf]], "NaN or infinite"),
        ("abc", "array of numbers"),
    ],
)
def test_design_matrix_refusals_name_x(value, match):
    with pytest.raises((ValueError, TypeError), match=f"X.*{match}|{match}"):
        as_design_matrix("X", value)
    with pytest.raises(ValueError, match="X must have 3 columns"):
        as_design_matrix("X", [[1.0, 2.0]], n_features=3)


def test_target_vector_must_match_the_rows():
    assert as_target_vector("y", [1, 2], 2).dtype == float
    with pytest.raises(ValueError, match="X has 3 rows, y has 2"):
        as_target_vector("y", [1.0, 2.0], 3)
    with pytest.raises(ValueError, match="1-D"):
        as_target_vector("y", [[1.0], [2.0]], 2)
