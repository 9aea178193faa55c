"""Validation of regression data shared by the algorithms that fit on ``(X, y)``.

Every check raises with the argument's name; data that violate declared bounds are
refused unless the caller asks for clipping (``out_of_range="clip"``), never clipped
silently.
"""

from __future__ import annotations

import numpy as np

from dpacct.accountant.numerics import TINY
from dpacct.accountant.validation import show_value

__all__ = [
    "as_design_matrix",
    "as_target_vector",
    "binary_coding",
    "check_class_labels",
    "check_regression_data",
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
