"""Validation of the parameters that NoisyGD and DP-SGD share (loss, clipping or declared
bounds, step size, ridge penalty, classes), in one place so that both algorithms refuse
the same inputs with the same messages."""

from __future__ import annotations

from dpacct.accountant.validation import (
    check_count,
    check_finite,
    check_flag,
    check_positive,
)

__all__: list[str] = []

_LOSSES = ("linear", "logistic", "softmax")


def _check_loss(loss: object) -> str:
    if loss not in _LOSSES:
        raise ValueError(f"loss must be one of {_LOSSES}, got {loss!r}")
    return str(loss)


def _optional_positive(name: str, value: object) -> float | None:
    return None if value is None else check_positive(name, value)


def _check_sensitivity_fields(alg) -> None:
    """Validate the fields shared by NoisyGD and DP-SGD (clip, bounds, step size, ...)."""
    object.__setattr__(alg, "loss", _check_loss(alg.loss))
    for name in ("clip", "x_bound", "y_bound", "theta_bound"):
        if hasattr(alg, name):
            object.__setattr__(alg, name, _optional_positive(name, getattr(alg, name)))
    object.__setattr__(alg, "learning_rate", check_positive("learning_rate", alg.learning_rate))
    l2 = check_finite("l2", alg.l2)
    if l2 < 0:
        raise ValueError(f"l2 must lie in [0, inf), got {l2!r}")
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
            f"(declared data bounds), got clip={alg.clip!r}, x_bound={x_bound!r}"
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
                f"it), got y_bound={y_bound!r}"
            )
        if adaptive is None:
            adaptive = alg.theta_bound is None
        if not adaptive and alg.theta_bound is None:
            raise ValueError(
                "loss='linear' with x_bound and adaptive=False needs theta_bound (the "
                f"fixed gradient bound depends on it), got theta_bound={alg.theta_bound!r}"
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
