"""``delta = 0``: the pure-DP answers of every mechanism.

A delta of exactly 0 asks for pure DP.  ``epsilon(0)`` is the mechanism's declared
:attr:`~dpacct.accountant.Mechanism.pure_epsilon` (the sum of the parts' for a
composition, rounded up; the amplified ``log(1 + q (e^eps - 1))`` for a Poisson
subsample, Balle, Barthe & Gaboardi 2018, Theorem 9), and a mechanism without one
(Gaussian, subsampled Gaussian, ...) raises a :class:`ValueError` naming
``pure_epsilon``.  The bracket of :func:`pure_epsilon_bounds` has that pure epsilon as
its upper end; its lower end is certified by the route that answers at ``delta > 0``.
"""

from __future__ import annotations

from .capabilities import MissingCapabilityError
from .curve_down import lower_end
from .interface import Routed
from .numerics import invert_decreasing
from .validation import pure_epsilon_at_zero_delta

__all__ = ["LOWER_DELTA", "pure_epsilon_bounds"]

#: the delta whose certified lower epsilon bounds the pure epsilon from below (the true
#: epsilon(delta) does not increase with delta, so any delta > 0 gives a lower bound)
LOWER_DELTA = 1e-15


def pure_epsilon_bounds(mechanism: Routed, tol: float | None) -> tuple[float, float]:
    """``(lower, upper)`` bracket of the true pure epsilon of ``mechanism``.

    ``upper`` is the declared pure epsilon.  ``lower`` is, for an exact ``delta(eps)``,
    the largest epsilon found where that curve is still positive (no pure DP below
    it; read on the curve rounded down, ``_delta_exact_down``, where the mechanism has
    one: :mod:`~dpacct.accountant.curve_down`); otherwise the certified lower end at
    ``delta = 1e-15`` (0 when the mechanism has no route that gives one).

    Examples
    --------
    >>> from dpacct.mechanisms import LaplaceMechanism
    >>> lo, hi = pure_epsilon_bounds(LaplaceMechanism(b=2.0), None)
    >>> hi, bool(0.5 - 1e-12 < lo <= hi)
    (0.5, True)
    """
    upper = pure_epsilon_at_zero_delta(mechanism)
    if mechanism.has_exact_curve:
        lower = invert_decreasing(mechanism._delta_exact, 0.0, upper)[0]
        down = getattr(mechanism, "_delta_exact_down", None)
        if down is not None and lower > 0.0:  # where the curve rounded down is positive
            lower = lower_end(down, 0.0, lower, upper)
    else:
        try:
            lower = mechanism._epsilon_bounds(LOWER_DELTA, tol)[0]
        except MissingCapabilityError:
            lower = 0.0
    return (min(float(lower), upper), upper)
