"""What NoisyGD and DP-SGD share, in one place: the validation of their parameters (loss,
clipping or declared bounds, step size, ridge penalty, classes), so that both refuse the
same inputs with the same messages, and the numerical pieces of a training step (data
checks, per-example residuals, clipped gradient sums, projection, ridge gradient, mean
loss).  Everything here is private; :mod:`dpacct.mechanisms.algorithms.noisy_gd` re-exports it for
:mod:`dpacct.mechanisms.algorithms.dp_sgd`."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from dpacct.accountant.validation import (
    check_count,
    check_finite,
    check_flag,
    check_positive,
    show_value,
)
from dpacct.mechanisms.algorithms._regression_data import (
    as_design_matrix,
    check_class_labels,
    check_regression_data,
)

__all__: list[str] = []

_LOSSES = ("linear", "logistic", "softmax")


def _check_loss(loss: object) -> str:
    if loss not in _LOSSES:
        raise ValueError(f"loss must be one of {_LOSSES}, got {loss!r}")
    return str(loss)


def _optional_positive(name: str, value: object) -> float | None:
    return None if value is None else check_positive(name, value)


def _check_data(
    X: object,
    y: object,
    loss: str,
    *,
    x_bound: float | None = None,
    y_bound: float | None = None,
    n_classes: int | None = None,
    out_of_range: str = "raise",
) -> tuple[np.ndarray, np.ndarray]:
    """Validate a design matrix and targets; check (or clip) declared bounds.

    Binary labels may be coded {0, 1} or {-1, +1} (returned as {0, 1}); softmax labels
    are integers in ``{0, ..., n_classes - 1}``.
    """
    if loss == "softmax":
        if n_classes is None:
            raise ValueError("loss='softmax' needs n_classes")
        Xa = as_design_matrix("X", X)
        ya = check_class_labels(y, Xa.shape[0], n_classes)
        if x_bound is not None:
            Xa, _ = check_regression_data(Xa, np.zeros(Xa.shape[0]), x_bound=x_bound,
                                          out_of_range=out_of_range)
        return Xa, ya
    return check_regression_data(
        X, y, labels01=loss == "logistic", x_bound=x_bound, y_bound=y_bound,
        out_of_range=out_of_range,
    )


def _augment(X: np.ndarray, fit_intercept: bool) -> np.ndarray:
    if not fit_intercept:
        return X
    return np.hstack([X, np.ones((X.shape[0], 1))])


def _softmax(Z: np.ndarray) -> np.ndarray:
    """Row-wise softmax (max-shifted, so no overflow); a new array."""
    P = Z - Z.max(axis=-1, keepdims=True)
    np.exp(P, out=P)
    P /= P.sum(axis=-1, keepdims=True)
    return P


def _residuals(Xa: np.ndarray, y: np.ndarray, theta: np.ndarray, loss: str) -> np.ndarray:
    """``r_i`` with per-example gradient ``x_i r_i^T``: ``x.theta - y``, ``sigmoid - y``, or
    ``softmax(x Theta) - onehot(y)`` (a row of length ``K``)."""
    z = Xa @ theta
    if loss == "linear":
        return z - y
    if loss == "logistic":
        return special.expit(z) - y
    r = _softmax(z)
    r[np.arange(r.shape[0]), y] -= 1.0
    return r


def _clipped_gradient_sum(
    Xa: np.ndarray,
    y: np.ndarray,
    theta: np.ndarray,
    loss: str,
    clip: float | None,
    row_norms: np.ndarray | None = None,
) -> np.ndarray:
    """Sum over rows of the per-example gradients, each clipped to L2 norm ``clip``.

    The per-example gradient is ``x_i r_i^T`` (a residual times the row; for softmax
    ``r_i`` is the vector ``p_i - e_{y_i}`` and the gradient a ``d x K`` matrix), so its
    (Frobenius) norm is ``||x_i|| ||r_i||`` and the clipped sum is ``Xa^T (r * factor)``:
    one matrix product per call, no ``n x d`` (or ``n x d x K``) array of gradients.
    ``row_norms`` (``||x_i||``, precomputed by the caller) saves a pass over the data.
    """
    r = _residuals(Xa, y, theta, loss)
    if clip is None:
        return Xa.T @ r
    if row_norms is None:
        row_norms = np.linalg.norm(Xa, axis=1)
    rn = np.abs(r) if r.ndim == 1 else np.linalg.norm(r, axis=1)
    norms = rn * row_norms
    factor = clip / np.maximum(norms, clip)
    return Xa.T @ (r * factor if r.ndim == 1 else r * factor[:, None])


def _norm(theta: np.ndarray) -> float:
    """``float(np.linalg.norm(theta))`` (the 2-norm, Frobenius for a matrix), bit for bit.

    numpy computes it as ``sqrt(v.dot(v))`` on ``v = theta.ravel(order="K")``; this is
    the same arithmetic without the dispatch, for loops that take it every step.
    """
    v = theta.ravel(order="K")
    return math.sqrt(float(v.dot(v)))


def _project(theta: np.ndarray, radius: float | None) -> np.ndarray:
    if radius is None:
        return theta
    norm = _norm(theta)
    return theta if norm <= radius else theta * (radius / norm)


def _l2_gradient(theta: np.ndarray, l2: float, fit_intercept: bool) -> np.ndarray | float:
    """Gradient of ``l2/2 * ||coef||^2`` (the intercept row is not penalised)."""
    if l2 == 0.0:
        return 0.0
    g = l2 * theta
    if fit_intercept:
        g[-1] = 0.0
    return g


def _mean_loss(Xa: np.ndarray, y: np.ndarray, theta: np.ndarray, loss: str) -> float:
    """Mean squared error (linear), log-loss (logistic) or cross-entropy (softmax)."""
    z = Xa @ theta
    if loss == "linear":
        return float(np.mean((z - y) ** 2))
    if loss == "logistic":
        return float(np.mean(np.logaddexp(0.0, z) - y * z))
    lse = special.logsumexp(z, axis=1)
    return float(np.mean(lse - z[np.arange(z.shape[0]), y]))


def _check_sensitivity_fields(alg) -> None:
    """Validate the fields shared by NoisyGD and DP-SGD (clip, bounds, step size, ...)."""
    object.__setattr__(alg, "loss", _check_loss(alg.loss))
    for name in ("clip", "x_bound", "y_bound", "theta_bound"):
        if hasattr(alg, name):
            object.__setattr__(alg, name, _optional_positive(name, getattr(alg, name)))
    object.__setattr__(alg, "learning_rate", check_positive("learning_rate", alg.learning_rate))
    l2 = check_finite("l2", alg.l2)
    if l2 < 0:
        raise ValueError(f"l2 must lie in [0, inf), got {show_value(l2)}")
    object.__setattr__(alg, "l2", l2)
    object.__setattr__(alg, "fit_intercept", check_flag("fit_intercept", alg.fit_intercept))
    if alg.loss == "softmax":
        if alg.n_classes is None:
            raise ValueError("loss='softmax' needs n_classes (the public number of classes)")
        k = check_count(alg.n_classes, "n_classes")
        if k < 2:
            raise ValueError(f"n_classes must be an integer >= 2, got {k}")
        object.__setattr__(alg, "n_classes", k)
    elif alg.n_classes is not None:
        raise ValueError(f"n_classes is only used by loss='softmax', got loss={alg.loss!r}")
    if hasattr(alg, "out_of_range") and alg.out_of_range not in ("raise", "clip"):
        raise ValueError(f"out_of_range must be 'raise' or 'clip', got {alg.out_of_range!r}")
    x_bound = getattr(alg, "x_bound", None)
    if (alg.clip is None) == (x_bound is None):
        raise ValueError(
            "give exactly one of clip (per-example gradient clipping) or x_bound "
            f"(declared data bounds), got clip={show_value(alg.clip)}, "
            f"x_bound={show_value(x_bound)}"
        )
    y_bound = getattr(alg, "y_bound", None)
    adaptive = getattr(alg, "adaptive", None)
    if adaptive is not None:
        adaptive = check_flag("adaptive", adaptive)
    if x_bound is None:
        if y_bound is not None:
            raise ValueError("y_bound is only used with x_bound (declared bounds), not with clip")
        if adaptive:
            raise ValueError("adaptive=True needs declared bounds (x_bound, y_bound), not clip")
        adaptive = False
    elif alg.loss == "linear":
        if y_bound is None:
            raise ValueError(
                "loss='linear' with x_bound needs y_bound (the gradient bound depends on "
                f"it), got y_bound={show_value(y_bound)}"
            )
        if adaptive is None:
            adaptive = alg.theta_bound is None
        if not adaptive and alg.theta_bound is None:
            raise ValueError(
                "loss='linear' with x_bound and adaptive=False needs theta_bound (the "
                "fixed gradient bound depends on it), got "
                f"theta_bound={show_value(alg.theta_bound)}"
            )
    else:
        if y_bound is not None:
            raise ValueError(
                f"y_bound is not used by loss={alg.loss!r} (labels are bounded by the model)"
            )
        if adaptive:
            raise ValueError(f"adaptive=True is for loss='linear', got loss={alg.loss!r}")
        adaptive = False
    if hasattr(alg, "adaptive"):
        object.__setattr__(alg, "adaptive", adaptive)
