"""Directed rounding for the few places where upper bounds are combined in floats.

A pure-DP epsilon of a composition is a sum of products ``count * epsilon_i``; the
float sum rounded to nearest can land below the exact value (13 x pure 8.28890632385842
summed to 7.1e-15 below ``13 * 8.28890632385842``, which put the reported epsilon 2.9e-15
below the true one at delta 4.23e-15).  Here sums are exact (rational arithmetic on the
float inputs) and rounded up to the next float; closed forms evaluated by libm are
moved up by more ulps than their proven error.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from fractions import Fraction

from .numerics import EXP_OVERFLOW, next_up

__all__ = ["amplified_pure_up", "next_up", "quotient_down", "quotient_up", "sum_up"]


def sum_up(terms: Iterable[tuple[int, float]]) -> float:
    """``sum count * value`` over ``(count, value)`` pairs, exactly, rounded up.

    Any infinite value makes the sum ``inf``.

    Examples
    --------
    >>> e = 8.28890632385842
    >>> 13 * e < sum_up([(13, e)])  # the float product rounds down here
    True
    >>> sum_up([(2, 0.5), (3, 0.25)])  # exact sums stay exact
    1.75
    """
    exact = Fraction(0)
    for count, value in terms:
        value = float(value)
        if math.isnan(value):
            return math.nan
        if math.isinf(value):
            return math.inf if value > 0 else -math.inf
        exact += count * Fraction(value)
    out = float(exact)  # rounded to nearest
    if Fraction(out) < exact:
        out = math.nextafter(out, math.inf)
    return out


def quotient_up(a: float, b: float) -> float:
    """``a / b`` (finite, ``b > 0``) rounded up: the float quotient, or the next float
    when it lies below the real one (it rounds to nearest); ``inf`` beyond the range.

    Examples
    --------
    >>> quotient_up(1.0, 2.0), quotient_up(1.0, 3.0) > 1 / 3
    (0.5, True)
    """
    out = a / b
    if math.isfinite(out) and Fraction(out) * Fraction(b) < Fraction(a):
        out = math.nextafter(out, math.inf)
    return out


def quotient_down(a: float, b: float) -> float:
    """``a / b`` (finite, ``b > 0``) rounded down: the largest float ``t`` with
    ``t b <= a`` in exact arithmetic.

    Examples
    --------
    >>> quotient_down(1e-7, 0.1) < 1e-6 == 1e-7 / 0.1  # the float quotient rounds up
    True
    """
    out = a / b
    if not math.isfinite(out):  # beyond the float range: the largest float is below
        return math.copysign(sys.float_info.max, out)
    if Fraction(out) * Fraction(b) > Fraction(a):
        out = math.nextafter(out, -math.inf)
    return out


def amplified_pure_up(q: float, eps: float) -> float:
    """``log(1 + q (e^eps - 1))``, rounded up (Balle, Barthe, Gaboardi 2018, Thm 8).

    ``expm1``, the product and ``log1p`` each err by at most about one ulp and
    ``log1p`` does not amplify a relative error of its argument, so four ulps up are
    an upper bound; above ``eps = 700`` the overflow-free form
    ``logaddexp(log(1 - q), log q + eps)`` is moved up by eight.
    """
    if not math.isfinite(eps):
        return math.inf if eps > 0 else eps
    if q >= 1.0 or eps == 0.0:  # log(1 + q (e^0 - 1)) = 0 is computed exactly
        return eps
    if eps < EXP_OVERFLOW:
        return next_up(math.log1p(q * math.expm1(eps)), 4)
    big = math.log(q) + eps
    small = math.log1p(-q)
    return next_up(big + math.log1p(math.exp(small - big)), 8)
