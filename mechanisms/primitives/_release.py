"""Input checks and exact coin flips shared by the primitives' ``release`` methods.

Every primitive both states its privacy and adds the noise (docs/design.md, "One source of
truth for noise"); the checks here are the ones all releases share, so that each
``release`` refuses a bad input with an error that names the parameter, before any
randomness is drawn.
"""

from __future__ import annotations

import numbers
from fractions import Fraction

import numpy as np

from dpacct.accountant.validation import (
    check_real_values,
    check_release_args,
    real_array,
)

__all__ = [
    "bernoulli_rational",
    "check_integer_values",
    "check_real_values",
    "check_release_args",
    "uniform_below",
]


def check_integer_values(name: str, value: object) -> tuple[np.ndarray, bool]:
    """``value`` (an integer or an array of integers) as ``int64``, and whether it was a
    scalar.  Floats are accepted only when integral (``3.0``); booleans are refused.

    Examples
    --------
    >>> check_integer_values("value", [3, 4.0])
    (array([3, 4]), False)
    >>> check_integer_values("value", 0.5)
    Traceback (most recent call last):
    ...
    ValueError: value must contain only integers, got 0.5
    """
    arr = real_array(name, value, "an integer or an array of integers")
    if not np.isfinite(arr).all() or (arr != np.round(arr)).any():
        bad = arr[~np.isfinite(arr) | (arr != np.round(arr))].ravel()[0]
        raise ValueError(f"{name} must contain only integers, got {float(bad)!r}")
    if (np.abs(arr) > 2.0**62).any():
        raise ValueError(f"{name} must contain integers of magnitude at most 2**62")
    raw = np.asarray(value)
    out = raw.astype(np.int64) if raw.dtype.kind in "iu" else arr.astype(np.int64)
    return out, arr.ndim == 0


def uniform_below(rng: np.random.Generator, d: int) -> int:
    """One exact uniform draw from ``{0, ..., d - 1}`` (``d >= 1`` a Python int of any size).

    Up to ``2**64`` numpy's unbiased bounded integers (Lemire's rejection method); beyond,
    rejection sampling of ``bit_length(d - 1)`` random bits taken from ``rng.bytes``.
    Below ``2**63`` the default ``int64`` call draws exactly what the ``uint64`` one does
    (the same bounded draw of range ``d - 1``) at about 3/4 of the cost per call; the
    exact samplers of :mod:`.discrete` make millions of these calls.
    """
    if d < 2**63:
        return int(rng.integers(d)) if d > 1 else 0
    if d <= 2**64:
        return int(rng.integers(0, d, dtype=np.uint64))
    bits = (d - 1).bit_length()
    nbytes = (bits + 7) // 8
    while True:
        x = int.from_bytes(rng.bytes(nbytes), "little") >> (8 * nbytes - bits)
        if x < d:
            return x


def bernoulli_rational(rng: np.random.Generator, p: Fraction | float, size: tuple[int, ...]):
    """Boolean array of independent ``Bernoulli(p)`` draws, ``p`` an exact rational in [0, 1].

    A float ``p`` is the binary fraction it stores (``Fraction(p)`` is exact), so the
    coin has probability exactly ``p``, not ``p`` rounded to the 2^-53 grid of
    ``rng.random()``: ``U < numerator`` for ``U`` uniform on ``{0, ..., denominator - 1}``.
    """
    frac = Fraction(p)
    num, den = frac.numerator, frac.denominator
    n = int(np.prod(size, dtype=np.int64))
    if den <= 2**64:
        if den == 1:
            return np.full(size, num >= 1, dtype=bool)
        draws = rng.integers(0, den, size=n, dtype=np.uint64)
        return (draws < np.uint64(num)).reshape(size)
    return np.array([uniform_below(rng, den) < num for _ in range(n)], dtype=bool).reshape(size)


def is_integral(value: object) -> bool:
    """True for Python / numpy integers and integral floats (not booleans)."""
    if isinstance(value, bool | np.bool_):
        return False
    if isinstance(value, numbers.Integral):
        return True
    return isinstance(value, float | np.floating) and float(value).is_integer()
