"""Validation of regression data shared by the algorithms that fit on ``(X, y)``.

Every check raises with the argument's name; data that violate declared bounds are
refused unless the caller asks for clipping (``out_of_range="clip"``), never clipped
silently.
"""

from __future__ import annotations

import warnings

import numpy as np

from dpacct.accountant.numerics import TINY
from dpacct.accountant.validation import show_value

__all__ = [
    "as_design_matrix",
    "as_target_vector",
    "binary_coding",
    "check_class_labels",
    "check_feature_names",
    "check_regression_data",
    "feature_names",
    "select_features",
]

#: relative slack allowed when checking declared bounds (floating-point rounding of
#: data scaled to exactly the bound); anything larger is rejected
BOUND_SLACK = 1e-10


def _as_float(name: str, value: object, shape: str) -> np.ndarray:
    if value is None or isinstance(value, str | bytes):
        raise TypeError(f"{name} must be a {shape} array of numbers, got {show_value(value)}")
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        kind = type(value).__name__
        raise TypeError(f"{name} must be a {shape} array of numbers, got {kind}") from exc


def as_design_matrix(name: str, value: object, n_features: int | None = None) -> np.ndarray:
    """A finite, non-empty 2-D float array (rows = records).

    Examples
    --------
    >>> as_design_matrix("X", [[1, 2], [3, 4]]).shape
    (2, 2)
    >>> as_design_matrix("X", [[1.0, float("nan")]])
    Traceback (most recent call last):
    ...
    ValueError: X must not contain NaN or infinite values (finite numbers only)
    """
    arr = _as_float(name, value, "2-D")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (one row per record), got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(
            f"{name} must not be empty (at least one row and one column), got shape {arr.shape}"
        )
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(
            f"{name} must have {n_features} columns (the fitted features; mismatched "
            f"shapes), got shape {arr.shape}"
        )
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must not contain NaN or infinite values (finite numbers only)")
    return arr


def feature_names(X: object) -> np.ndarray | None:
    """The column names of a table ``X`` (a pandas DataFrame), as scikit-learn reads them.

    ``None`` for an array, or for a table whose column names are none of them strings
    (a DataFrame built from an array has integer names: scikit-learn ignores them too);
    otherwise the names as an object array, as scikit-learn's ``feature_names_in_``.

    Raises
    ------
    TypeError
        Column names that mix strings and other types.
    ValueError
        Repeated column names (a column could not be read by its name).

    Examples
    --------
    >>> import pandas as pd
    >>> feature_names(pd.DataFrame({"age": [30], "income": [1.0]})).tolist()
    ['age', 'income']
    >>> feature_names(np.zeros((1, 2))) is None
    True
    """
    columns = getattr(X, "columns", None)
    if columns is None or isinstance(X, np.ndarray):
        return None
    names = list(columns)
    is_str = [isinstance(c, str) for c in names]
    if not any(is_str):
        return None
    if not all(is_str):
        kinds = sorted({type(c).__name__ for c in names})
        raise TypeError(
            f"X's column names must all be strings (or none of them), got types {kinds}: "
            "convert them with X.columns = X.columns.astype(str)")
    if len(set(names)) != len(names):
        repeated = sorted({c for c in names if names.count(c) > 1})
        raise ValueError(f"X's column names must be unique, got {repeated} more than once")
    return np.asarray(names, dtype=object)


def check_feature_names(names: object, n_features: int) -> np.ndarray | None:
    """A model's ``feature_names_in_``: None, or ``n_features`` distinct strings.

    Examples
    --------
    >>> check_feature_names(["a", "b"], 2).tolist()
    ['a', 'b']
    >>> check_feature_names(["a"], 2)
    Traceback (most recent call last):
    ...
    ValueError: feature_names_in_ must hold 2 distinct strings (one per feature), got ['a']
    """
    if names is None:
        return None
    arr = np.asarray(list(names), dtype=object)  # type: ignore[call-overload]
    ok = (arr.ndim == 1 and arr.size == n_features and len(set(arr.tolist())) == arr.size
          and all(isinstance(c, str) for c in arr))
    if not ok:
        raise ValueError(f"feature_names_in_ must hold {n_features} distinct strings (one "
                         f"per feature), got {show_value(names)}")
    arr.setflags(write=False)
    return arr


def select_features(X: object, fitted: np.ndarray | None, owner: str = "model") -> object:
    """``X`` with its columns in the order of the fitted feature names (read by name).

    A model fitted on a table records its column names (``feature_names_in_``, as
    scikit-learn).  At prediction a table is read by name: its columns are reordered to
    the fitted order, and a missing or an unexpected name raises ``ValueError``.  An
    array (no names) is read by position, with a ``UserWarning`` if the model was fitted
    on a table; a table given to a model fitted on an array is also read by position,
    with a ``UserWarning`` (scikit-learn warns in both cases).

    Parameters
    ----------
    X : array_like or pandas.DataFrame
        The data at prediction.
    fitted : numpy.ndarray or None
        The model's ``feature_names_in_`` (None: fitted on an array).
    owner : str
        Named in the messages.

    Examples
    --------
    >>> import pandas as pd
    >>> X = pd.DataFrame({"b": [2.0], "a": [1.0]})
    >>> select_features(X, np.array(["a", "b"], dtype=object)).columns.tolist()
    ['a', 'b']
    >>> select_features(X, np.array(["a", "c"], dtype=object))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: X's columns must be the model's fitted feature names ['a', 'c']: missing ...
    """
    given = feature_names(X)
    if fitted is None:
        if given is not None:
            warnings.warn(
                f"X has feature names, but the {owner} was fitted without feature names: "
                "its columns are read by position", UserWarning, stacklevel=3)
        return X
    if given is None:
        warnings.warn(
            f"X has no feature names, but the {owner} was fitted with feature names "
            f"{list(fitted)}: its columns are read by position in that order",
            UserWarning, stacklevel=3)
        return X
    want = set(fitted)
    missing = [c for c in fitted if c not in set(given)]
    extra = [c for c in given if c not in want]
    if missing or extra:
        raise ValueError(
            f"X's columns must be the {owner}'s fitted feature names {list(fitted)}: "
            f"missing {missing}, unexpected {extra}")
    return X[list(fitted)]


def as_target_vector(name: str, value: object, n_rows: int) -> np.ndarray:
    """A finite 1-D float array with one entry per row of the design matrix."""
    arr = _as_float(name, value, "1-D")
    if arr.ndim != 1:
        raise ValueError(
            f"{name} must be a 1-D array (one entry per record), got shape {arr.shape}"
        )
    if arr.shape[0] != n_rows:
        raise ValueError(
            f"{name} must have one entry per row of X (mismatched shapes): X has {n_rows} "
            f"rows, {name} has {arr.shape[0]}"
        )
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must not contain NaN or infinite values (finite numbers only)")
    return arr


def check_regression_data(
    X: object,
    y: object,
    *,
    labels01: bool = False,
    x_bound: float | None = None,
    y_bound: float | None = None,
    out_of_range: str = "raise",
) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``(X, y)``: shapes, finiteness, binary labels if asked, declared bounds.

    With ``labels01`` the labels must be coded ``{0, 1}`` or ``{-1, +1}``; ``-1`` is
    returned as ``0`` (use :func:`binary_coding` to know which coding was given).

    A row with ``||x|| > x_bound`` or a target with ``|y| > y_bound`` raises
    ``ValueError`` (``out_of_range="raise"``, default) or is clipped
    (``out_of_range="clip"``: the row is scaled to norm ``x_bound``, the target clipped
    to ``[-y_bound, y_bound]``).  Clipping with public bounds is a per-record
    transformation: a neighbouring dataset maps to a neighbouring dataset, so any
    sensitivity derived from the bounds holds for the clipped data.

    Examples
    --------
    >>> X, y = check_regression_data([[0.6, 0.8]], [0.5], x_bound=1.0, y_bound=1.0)
    >>> check_regression_data([[3.0, 4.0]], [0.5], x_bound=1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: X violates x_bound=1.0: row 0 has L2 norm 5.0 ...
    >>> X, y = check_regression_data([[3.0, 4.0]], [2.0], x_bound=1.0, y_bound=1.0,
    ...                              out_of_range="clip")
    >>> X.tolist(), y.tolist()
    ([[0.6000000000000001, 0.8]], [1.0])
    >>> check_regression_data([[1.0], [2.0]], [-1, 1], labels01=True)[1].tolist()
    [0.0, 1.0]
    """
    if out_of_range not in ("raise", "clip"):
        raise ValueError(f"out_of_range must be 'raise' or 'clip', got {out_of_range!r}")
    Xa = as_design_matrix("X", X)
    ya = as_target_vector("y", y, Xa.shape[0])
    if labels01:
        ya = _binary_labels(ya)
    if x_bound is not None:
        norms = np.linalg.norm(Xa, axis=1)
        worst = int(np.argmax(norms))
        if norms[worst] > x_bound * (1.0 + BOUND_SLACK):
            if out_of_range == "clip":
                Xa = Xa * np.minimum(1.0, x_bound / np.maximum(norms, TINY))[:, None]
            else:
                raise ValueError(
                    f"X violates x_bound={x_bound!r}: row {worst} has L2 norm "
                    f"{float(norms[worst])!r} (rescale the rows, declare a larger bound or "
                    "pass out_of_range='clip'; rows are never clipped silently)"
                )
    if y_bound is not None:
        worst = int(np.argmax(np.abs(ya)))
        if abs(ya[worst]) > y_bound * (1.0 + BOUND_SLACK):
            if out_of_range == "clip":
                ya = np.clip(ya, -y_bound, y_bound)
            else:
                raise ValueError(
                    f"y violates y_bound={y_bound!r}: entry {worst} is {float(ya[worst])!r} "
                    "(rescale the targets into [-y_bound, y_bound] or pass "
                    "out_of_range='clip'; they are never clipped silently)"
                )
    return Xa, ya


def binary_coding(y: object) -> str:
    """``"pm1"`` if the labels contain ``-1`` (coding ``{-1, +1}``), else ``"01"``.

    Examples
    --------
    >>> binary_coding([-1, 1, 1]), binary_coding([0, 1])
    ('pm1', '01')
    """
    return "pm1" if np.any(np.asarray(y, dtype=float) == -1.0) else "01"


def _binary_labels(ya: np.ndarray) -> np.ndarray:
    """Labels coded {0, 1} or {-1, +1} as floats in {0, 1} (``-1 -> 0``)."""
    ok01 = np.isin(ya, (0.0, 1.0))
    if ok01.all():
        return ya
    okpm = np.isin(ya, (-1.0, 1.0))
    if okpm.all():
        return (ya > 0).astype(float)
    bad = ya[~(ok01 | okpm)]
    detail = f"got {float(bad[0])!r}" if bad.size else "got both 0 and -1"
    raise ValueError(
        f"y must contain labels in {{0, 1}} or in {{-1, +1}} (one coding) for a binary "
        f"model, {detail}"
    )


def check_class_labels(y: object, n_rows: int, n_classes: int) -> np.ndarray:
    """Integer class labels in ``{0, ..., n_classes - 1}``, one per row, as ``int64``.

    Examples
    --------
    >>> check_class_labels([0, 2, 1.0], 3, 3).tolist()
    [0, 2, 1]
    >>> check_class_labels([0, 3], 2, 3)
    Traceback (most recent call last):
    ...
    ValueError: y must contain class labels in {0, ..., 2} (n_classes=3), got 3.0
    """
    ya = as_target_vector("y", y, n_rows)
    bad = (ya != np.round(ya)) | (ya < 0) | (ya > n_classes - 1)
    if bad.any():
        raise ValueError(
            f"y must contain class labels in {{0, ..., {n_classes - 1}}} "
            f"(n_classes={n_classes}), got {float(ya[bad][0])!r}"
        )
    return ya.astype(np.int64)
