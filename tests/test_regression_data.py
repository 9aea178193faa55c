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


# ----------------------------------------------------------------------------------
# tables: feature names recorded at fit, columns read by name afterwards
# ----------------------------------------------------------------------------------
def regression_table(n=400, seed=0, names=("age", "income", "score")):
    """A DataFrame of ``n`` rows with unit-bounded rows and a linear target in [-1, 1]."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, len(names))) / np.sqrt(len(names))
    y = np.clip(X @ np.array([1.0, -2.0, 0.5][: len(names)]) + 0.3, -1.0, 1.0)
    return pd.DataFrame(X, columns=list(names)), y


def check_reads_table_by_name(fit, methods=("predict",), y=None, y_arg=False):
    """The reordered-table case for one estimator, as scikit-learn users expect it.

    ``fit(X, y)`` returns a model.  The model records ``feature_names_in_``; every method
    in ``methods`` (``predict``, or ``score(X, y)``-like with ``y_arg``) gives on the
    columns in another order exactly what it gives on the fit's order and on the array
    (the array with a ``UserWarning``); a missing or an extra column raises; a table at
    prediction after an array at fit is read by position with a ``UserWarning``.
    """
    df, target = regression_table()
    target = target if y is None else y(target)
    model = fit(df, target)
    assert list(model.feature_names_in_) == ["age", "income", "score"]
    assert model.n_features_in_ == 3
    reordered = df[["score", "age", "income"]]

    def call(m, name, X):
        return getattr(m, name)(X, target) if y_arg else getattr(m, name)(X)

    for name in methods:
        want = call(model, name, df)
        np.testing.assert_array_equal(call(model, name, reordered), want)
        with pytest.warns(UserWarning, match="no feature names"):
            np.testing.assert_array_equal(call(model, name, df.to_numpy()), want)
        with pytest.raises(ValueError, match=r"missing \['income'\], unexpected \[\]"):
            call(model, name, df[["age", "score"]])
        with pytest.raises(ValueError, match=r"missing \[\], unexpected \['extra'\]"):
            call(model, name, df.assign(extra=1.0))
    on_array = fit(df.to_numpy(), target)
    assert on_array.feature_names_in_ is None
    by_position = call(on_array, methods[0], df.to_numpy())
    with pytest.warns(UserWarning, match="fitted without feature names"):
        np.testing.assert_array_equal(call(on_array, methods[0], reordered),
                                      call(on_array, methods[0], reordered.to_numpy()))
    with pytest.warns(UserWarning, match="fitted without feature names"):
        np.testing.assert_array_equal(call(on_array, methods[0], df), by_position)
    return model


def test_feature_names_follow_scikit_learn():
    pd = pytest.importorskip("pandas")
    from dpacct.mechanisms.algorithms._regression_data import feature_names, select_features

    assert feature_names(np.zeros((2, 2))) is None
    assert feature_names(pd.DataFrame(np.zeros((2, 2)))) is None  # integer names: ignored
    with pytest.raises(TypeError, match="all be strings"):
        feature_names(pd.DataFrame({"a": [1.0], 0: [2.0]}))
    with pytest.raises(ValueError, match="unique"):
        feature_names(pd.DataFrame([[1.0, 2.0]], columns=["a", "a"]))
    fitted = np.array(["a", "b"], dtype=object)
    out = select_features(pd.DataFrame({"b": [2.0], "a": [1.0]}), fitted)
    assert out.to_numpy().tolist() == [[1.0, 2.0]]
