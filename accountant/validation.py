"""Parameter validation shared by every public entry point, in every layer.

This is the public home of the checks: the mechanisms, the calibrators and the
integrations import them from here (``dpacct.accountant.validation``).

Every check raises a :class:`ValueError` (or :class:`TypeError` for a value that is
not a number at all) whose message names the parameter and the allowed range.
Nothing is clipped into range silently.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

import numpy as np

__all__ = [
    "MAX_COUNT",
    "as_float_array",
    "as_real_array",
    "check_alpha",
    "check_count",
    "check_delta",
    "check_epsilon",
    "check_finite",
    "check_flag",
    "check_fpr",
    "check_positive",
    "check_probability",
    "check_real_values",
    "check_release_args",
    "check_rng",
    "check_sample_rate",
    "check_tol",
    "is_real_type",
    "iter_pairs",
    "pure_epsilon_at_zero_delta",
    "real_array",
    "show_value",
]


def show_value(value: object) -> str:
    """``value`` as an error message shows it: numbers plain, never ``np.float64(0.5)``.

    numpy scalars print as the Python number they hold, sequences element by element,
    integers too long to read by their length; anything else by its ``repr``.

    Examples
    --------
    >>> show_value(np.float64(0.5)), show_value([np.int64(3), 2.5]), show_value("0.1")
    ('0.5', '[3, 2.5]', "'0.1'")
    >>> show_value(10**400)
    'an integer with 401 digits'
    """
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, int) and not isinstance(value, bool):
        return _short_int(value)
    if isinstance(value, list | tuple) and len(value) <= 20:
        inner = ", ".join(show_value(v) for v in value)
        if isinstance(value, tuple):
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        return f"[{inner}]"
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."


def _as_real(name: str, value: object) -> float:
    if type(value) is float:  # the common case, before the abstract-class checks
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real | np.floating | np.integer):
        if isinstance(value, np.ndarray) and value.ndim == 0:
            return _as_real(name, value.item())
        raise TypeError(
            f"{name} must be a real number, got {type(value).__name__} {show_value(value)}"
        )
    try:
        return float(value)
    except OverflowError:  # a Python int beyond the float range, e.g. 10**400
        raise ValueError(
            f"{name} must be a finite number within the float range (about 1.8e308), got "
            f"{_short_int(int(value))}"
        ) from None


def is_real_type(kind: type) -> bool:
    """Whether values of type ``kind`` are real numbers (bools and strings are not)."""
    return issubclass(kind, numbers.Real | np.floating | np.integer) and not issubclass(
        kind, bool | np.bool_
    )


def check_finite(name: str, value: object) -> float:
    """Return ``value`` as a float, raising if it is not a finite real number."""
    x = _as_real(name, value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be a finite number, got {x!r}")
    return x


def check_positive(name: str, value: object, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float, requiring ``value > 0`` (and finite unless allowed)."""
    x = _as_real(name, value)
    if math.isnan(x) or x <= 0 or (math.isinf(x) and not allow_inf):
        upper = "inf]" if allow_inf else "inf)"
        raise ValueError(f"{name} must lie in (0, {upper}, got {x!r}")
    return x


def check_probability(
    name: str, value: object, *, low_open: bool = True, high_open: bool = True
) -> float:
    """Return ``value`` as a float in the unit interval with the requested open/closed ends."""
    x = _as_real(name, value)
    lo_ok = x > 0 if low_open else x >= 0
    hi_ok = x < 1 if high_open else x <= 1
    if math.isnan(x) or not (lo_ok and hi_ok):
        interval = ("(" if low_open else "[") + "0, 1" + (")" if high_open else "]")
        raise ValueError(f"{name} must lie in {interval}, got {x!r}")
    return x


def check_delta(
    value: object, name: str = "delta", *, allow_zero: bool = False, what: str | None = None
) -> float:
    """A delta of an (epsilon, delta) guarantee: a float in the open interval (0, 1).

    With ``allow_zero`` a delta of exactly 0 is accepted too (the caller answers it from
    the pure epsilon, see :func:`pure_epsilon_at_zero_delta`).  Without it, 0 is refused
    with a message that says why: ``delta = 0`` asks for pure DP, and ``what`` (the
    mechanism or family the query is about) declares no ``pure_epsilon``.

    Examples
    --------
    >>> check_delta(1e-5), check_delta(0, allow_zero=True)
    (1e-05, 0.0)
    >>> check_delta(0.0, what="the Gaussian mechanism")
    Traceback (most recent call last):
    ...
    ValueError: delta=0 asks for pure DP, but the Gaussian mechanism has no pure epsilon \
(pure_epsilon is not declared); use delta in (0, 1)
    """
    if allow_zero:
        return check_probability(name, value, low_open=False)
    x = _as_real(name, value)
    if x == 0 and what is not None:
        raise ValueError(
            f"{name}=0 asks for pure DP, but {what} has no pure epsilon (pure_epsilon is "
            f"not declared); use {name} in (0, 1)"
        )
    if x == 0:
        raise ValueError(
            f"{name} must lie in (0, 1), got 0.0 ({name}=0, pure DP, is answered from a "
            "mechanism's pure_epsilon, which this call does not use)"
        )
    return check_probability(name, x)


def pure_epsilon_at_zero_delta(mechanism: object, name: str = "delta") -> float:
    """The answer to ``epsilon(delta=0)``: ``mechanism.pure_epsilon`` when it is finite.

    A mechanism without one (Gaussian, subsampled Gaussian, ...) raises a
    :class:`ValueError` that names ``pure_epsilon``.

    Examples
    --------
    >>> from dpacct.mechanisms import GaussianMechanism, LaplaceMechanism
    >>> pure_epsilon_at_zero_delta(LaplaceMechanism(b=2.0))
    0.5
    >>> pure_epsilon_at_zero_delta(GaussianMechanism(sigma=1.0))
    Traceback (most recent call last):
    ...
    ValueError: delta=0 asks for pure DP, but GaussianMechanism(sigma=1.0) has no pure \
epsilon (pure_epsilon is not declared); use delta in (0, 1)
    """
    eps = float(mechanism.pure_epsilon)  # type: ignore[attr-defined]
    if not math.isfinite(eps):
        what = repr(mechanism)
        # a composition names its first part without one (the sum is then infinite)
        parts = getattr(mechanism, "parts", None)
        if isinstance(parts, tuple):
            lacking = [m for m, _ in parts if not math.isfinite(float(m.pure_epsilon))]
            if lacking:
                what += f" (its part {lacking[0]!r} declares none)"
        check_delta(0.0, name, what=what)
    return eps


def check_sample_rate(value: object, name: str = "sample_rate") -> float:
    """A Poisson sampling probability: a float in (0, 1]."""
    return check_probability(name, value, high_open=False)


def check_epsilon(value: object, name: str = "epsilon") -> float:
    """An epsilon of an (epsilon, delta) guarantee: a finite float >= 0."""
    x = _as_real(name, value)
    if math.isnan(x) or x < 0 or math.isinf(x):
        raise ValueError(f"{name} must lie in [0, inf), got {x!r}")
    return x


#: largest repetition count accepted (numpy's int64 range; a count beyond it cannot be
#: stored in the ledger's arrays, and no privacy claim at that count is meaningful)
MAX_COUNT = 2**63 - 1


def check_count(value: object, name: str = "count", *, allow_zero: bool = False) -> int:
    """A repetition count: an integer >= 1 (>= 0 when ``allow_zero``)."""
    low = 0 if allow_zero else 1
    if type(value) is int and low <= value <= MAX_COUNT:  # the common case, at once
        return value
    given = value  # shown as given (1e308 stays a float) if it is out of range
    if isinstance(value, bool) or not isinstance(value, numbers.Integral | np.integer):
        if isinstance(value, float | np.floating) and not math.isfinite(value):
            raise ValueError(
                f"{name} must be an integer in [{low}, 2**63 - 1], got {float(value)!r}"
            )
        if isinstance(value, float | np.floating) and float(value).is_integer():
            value = int(value)
        else:
            raise TypeError(
                f"{name} must be an integer, got {type(value).__name__} {show_value(value)}"
            )
    n = int(value)
    if n < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {n}")
    if n > MAX_COUNT:
        raise ValueError(
            f"{name} must be an integer <= 2**63 - 1 (about 9.2e18), got {show_value(given)}"
        )
    return n


def _short_int(n: int) -> str:
    """A readable form of a possibly enormous integer."""
    text = str(n)
    return text if len(text) <= 25 else f"an integer with {len(text)} digits"


def real_array(name: str, value: object, what: str) -> np.ndarray:
    """``value`` as a float array if it is a real number or an array of real numbers.

    Strings, ``None``, booleans and arrays of other dtypes are refused (``np.asarray``
    would parse ``'1e-5'``, read ``None`` as NaN and ``True`` as 1.0).  ``what`` completes
    the message "``name`` must be ...".

    Examples
    --------
    >>> real_array("value", [1, 2.5], "a number or an array of numbers")
    array([1. , 2.5])
    >>> real_array("value", None, "an integer or an array of integers")
    Traceback (most recent call last):
    ...
    TypeError: value must be an integer or an array of integers, got NoneType None
    """
    bad = value is None or isinstance(value, str | bytes | bool | np.bool_)
    raw = None
    if not bad:
        try:
            raw = np.asarray(value)
        except (TypeError, ValueError):
            bad = True
    if raw is not None and raw.dtype.kind == "O" and not bad:
        # a Python int beyond int64 (and so perhaps beyond the float range)
        items = raw.reshape(-1).tolist()
        if items and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in items):
            return np.array([_as_real(name, v) for v in items]).reshape(raw.shape)
    if bad or raw is None or raw.dtype.kind not in "iuf":
        kind = type(value).__name__
        raise TypeError(f"{name} must be {what}, got {kind} {show_value(value)}")
    return raw.astype(float)


def as_real_array(name: str, value: object) -> np.ndarray:
    """A real number or an array of them as floats (NaN kept: callers check ranges).

    Examples
    --------
    >>> as_real_array("delta", [1e-5, 1e-6])
    array([1.e-05, 1.e-06])
    >>> as_real_array("delta", "1e-5")
    Traceback (most recent call last):
    ...
    TypeError: delta must be a real number or an array of real numbers, got str '1e-5'
    """
    return real_array(name, value, "a real number or an array of real numbers")


def check_flag(name: str, value: object) -> bool:
    """A boolean switch: ``True`` or ``False`` (numpy booleans too), nothing else."""
    if not isinstance(value, bool | np.bool_):
        kind = type(value).__name__
        raise TypeError(f"{name} must be a bool (True or False), got {kind} {show_value(value)}")
    return bool(value)


def as_float_array(name: str, value: object) -> np.ndarray:
    """Convert a scalar or sequence to a float array, rejecting NaN and non-numbers."""
    arr = real_array(name, value, "a number or an array of numbers")
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not contain NaN, got {show_value(value)}")
    return arr


def check_alpha(value: object, name: str = "alpha") -> np.ndarray:
    """Renyi orders: real numbers > 1 (scalars or arrays); +inf is allowed."""
    arr = as_float_array(name, value)
    if (arr <= 1).any():
        bad = arr[arr <= 1].ravel()[0]
        raise ValueError(f"{name} must be > 1 (real Renyi orders), got {float(bad)!r}")
    return arr


def check_fpr(value: object, name: str = "fpr") -> np.ndarray:
    """False-positive rates for a trade-off curve: numbers in [0, 1]."""
    arr = as_float_array(name, value)
    if ((arr < 0) | (arr > 1)).any():
        bad = arr[(arr < 0) | (arr > 1)].ravel()[0]
        raise ValueError(f"{name} must lie in [0, 1], got {float(bad)!r}")
    return arr


def check_tol(value: object | None, name: str = "tol") -> float | None:
    """A relative tolerance in (0, 0.5) or None for the default."""
    if value is None:
        return None
    x = _as_real(name, value)
    if math.isnan(x) or not (0 < x < 0.5):
        raise ValueError(f"{name} must lie in (0, 0.5), got {x!r}")
    return x


def iter_pairs(name: str, items: Iterable[object]) -> list[object]:
    """Materialise an iterable argument, with a clear error when it is not iterable."""
    try:
        return list(items)
    except TypeError as exc:
        raise TypeError(f"{name} must be a list of mechanisms, got {show_value(items)}") from exc


def check_rng(rng: object, name: str = "rng") -> np.random.Generator:
    """Require an explicit :class:`numpy.random.Generator` (no global state, no seeds).

    Examples
    --------
    >>> isinstance(check_rng(np.random.default_rng(0)), np.random.Generator)
    True
    >>> check_rng(0)
    Traceback (most recent call last):
    ...
    TypeError: rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(0)), got int 0
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{name} must be a numpy.random.Generator (e.g. numpy.random.default_rng(0)), "
            f"got {type(rng).__name__} {show_value(rng)}"
        )
    return rng


def check_release_args(sensitivity: object, rng: object) -> tuple[float, np.random.Generator]:
    """``sensitivity`` > 0 and finite, ``rng`` a :class:`numpy.random.Generator`."""
    return check_positive("sensitivity", sensitivity), check_rng(rng)


def check_real_values(name: str, value: object) -> tuple[np.ndarray, bool]:
    """``value`` (a real number or an array of them, all finite) as floats, and whether
    it was a scalar.

    Examples
    --------
    >>> check_real_values("value", [1, 2.5])
    (array([1. , 2.5]), False)
    >>> check_real_values("value", float("inf"))
    Traceback (most recent call last):
    ...
    ValueError: value must contain only finite numbers, got inf
    """
    arr = real_array(name, value, "a real number or an array of real numbers")
    if not np.isfinite(arr).all():
        bad = arr[~np.isfinite(arr)].ravel()[0]
        raise ValueError(f"{name} must contain only finite numbers, got {float(bad)!r}")
    return arr, arr.ndim == 0
