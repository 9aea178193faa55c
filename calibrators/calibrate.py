"""The generic calibrator: search a family of mechanisms for the parameter meeting a target.

A *family* maps a parameter to a :class:`~dpacct.accountant.mechanism.Mechanism`
(``sigma -> GaussianMechanism(sigma)``, ``steps -> compose([step], [steps])``, ...).
:func:`calibrate` finds

* for a **continuous** parameter, a value whose epsilon at the target delta lies in
  ``[epsilon * (1 - rtol), epsilon]``: the budget is always met, and missed by at most
  the relative tolerance ``rtol``;
* for an **integer** parameter, the extreme value that meets the budget: the largest
  count when epsilon grows with the parameter (steps), the smallest one when it shrinks.

How the search works (all on a log scale of the parameter, so that the scale of the
parameter does not matter):

1. **Bracket.**  Evaluate the starting point(s); step towards the crossing, doubling the
   step (in log space) each time the crossing is not yet bracketed.  The bracket stops
   growing at the ``domain`` edges or twelve orders of magnitude beyond ``interval``;
   if the target is still not bracketed an :class:`UnreachableTargetError` (or a
   :class:`CalibrationError`) says which range of epsilon the family reaches there.
   Nothing is capped silently.
2. **Refine.**  A secant step on ``log epsilon`` against ``log parameter`` aimed at the
   middle of the tolerance window, safeguarded by bisection whenever it leaves the
   bracket or stalls.  With a cheap ``estimate`` of epsilon (for example a CLT or RDP
   approximation), the secant corrects the *residual* between the accountant and the
   estimate instead, which usually lands in the window after two or three accountant
   evaluations.  Each mechanism is evaluated at most once per parameter value.

The answer is always taken on the side that meets the budget (the feasible side of the
bracket), whatever happens to the search.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dpacct.accountant.mechanism import Mechanism
from dpacct.accountant.numerics import TINY
from dpacct.accountant.validation import (
    check_count,
    check_delta,
    check_epsilon,
    check_finite,
    check_flag,
    check_positive,
    check_tol,
    show_value,
)

from .search import (
    _MAX_WIDEN,
    DEFAULT_RTOL,
    CalibrationError,
    UnreachableTargetError,
    _run,
    _Search,
)

__all__ = [
    "Calibration",
    "CalibrationError",
    "UnreachableTargetError",
    "calibrate",
]


@dataclass(frozen=True)
class Calibration:
    """Result of :func:`calibrate`.

    Iterating over it yields ``(parameter, mechanism)``, so
    ``sigma, mech = calibrate(...)`` works.  Each parameter is an attribute of the
    same name.

    Parameters
    ----------
    parameter : float or int
        The calibrated parameter (the common scale for fixed-ratio families).
    mechanism : Mechanism
        ``family(parameter)``: the calibrated mechanism.
    epsilon : float
        Its epsilon at ``delta`` (<= ``target_epsilon``).
    target_epsilon : float
        The target epsilon.
    delta : float
        The target delta (0 for pure DP).
    evaluations : int
        Number of distinct mechanisms whose epsilon was computed.
    parameters : dict or tuple, optional
        For fixed-ratio families, the individual parameters passed to the family.
    at_domain_edge : bool
        True when the answer is an edge of ``domain`` (every parameter up to the edge
        meets the budget, e.g. a sampling rate of 1), so ``epsilon`` may be well below
        the target.
    seconds : float, default 0.0
        Wall-clock time the search took (not compared by ``==``).

    Examples
    --------
    >>> from dpacct.mechanisms import LaplaceMechanism
    >>> res = calibrate(lambda b: LaplaceMechanism(b=b), epsilon=0.5, delta=0)
    >>> b, mech = res          # pure DP: epsilon = 1 / b, so b = 2
    >>> b, mech, res.epsilon, res.at_domain_edge
    (2.0, LaplaceMechanism(b=2.0), 0.5, False)
    """

    parameter: float | int
    mechanism: Mechanism
    epsilon: float
    target_epsilon: float
    delta: float
    evaluations: int
    parameters: Mapping[str, float] | tuple[float, ...] | None = None
    at_domain_edge: bool = False
    seconds: float = field(default=0.0, compare=False)

    def __iter__(self):
        yield self.parameter
        yield self.mechanism


# ----------------------------------------------------------------------------------
# argument handling
# ----------------------------------------------------------------------------------


def _check_ratios(ratios: Any) -> Mapping[str, float] | tuple[float, ...] | None:
    if ratios is None:
        return None
    if isinstance(ratios, Mapping):
        if not ratios:
            raise ValueError("ratios must not be empty")
        return {str(k): check_positive(f"ratios[{k!r}]", v) for k, v in ratios.items()}
    if isinstance(ratios, str | bytes) or not isinstance(ratios, Sequence):
        raise TypeError(
            f"ratios must be a mapping of parameter names to ratios or a sequence of ratios, "
            f"got {type(ratios).__name__}"
        )
    if not ratios:
        raise ValueError("ratios must not be empty")
    return tuple(check_positive(f"ratios[{i}]", v) for i, v in enumerate(ratios))


def _builder(family: Callable[..., Any], ratios) -> Callable[[float], tuple[Any, Any]]:
    """``scale -> (mechanism, individual parameters)``."""
    if ratios is None:
        return lambda s: (family(s), None)
    if isinstance(ratios, Mapping):

        def build_named(s: float):
            params = {k: r * s for k, r in ratios.items()}
            return family(**params), params

        return build_named

    def build_positional(s: float):
        params = tuple(r * s for r in ratios)
        return family(*params), params

    return build_positional


def _check_interval(interval: Any, integer: bool) -> tuple[float, float]:
    try:
        lo, hi = interval
    except (TypeError, ValueError) as exc:
        raise TypeError(f"interval must be a pair (low, high), got {show_value(interval)}") from exc
    lo = check_positive("interval[0]", lo)
    hi = check_positive("interval[1]", hi)
    if lo > hi:
        raise ValueError(f"interval must satisfy low <= high, got ({lo!r}, {hi!r})")
    if integer and lo < 1:
        raise ValueError(f"interval must lie in [1, inf) for an integer parameter, got {lo!r}")
    return lo, hi


def _check_domain(domain: Any, integer: bool) -> tuple[float, float]:
    if domain is None:
        return (1.0, math.inf) if integer else (0.0, math.inf)
    try:
        lo, hi = domain  # a string of two characters would unpack too: refused below
    except (TypeError, ValueError) as exc:
        msg = f"domain must be a pair (low, high) of numbers, got {show_value(domain)}"
        raise TypeError(msg) from exc
    lo = check_epsilon(lo, "domain[0]")  # in [0, inf)
    hi = check_positive("domain[1]", hi, allow_inf=True)
    if not lo < hi:
        raise ValueError(f"domain must satisfy 0 <= low < high, got ({lo!r}, {hi!r})")
    if integer and lo < 1:
        lo = 1.0
    return lo, hi


# ----------------------------------------------------------------------------------
# the search
# ----------------------------------------------------------------------------------


# long function: 116 lines are the docstring (the contract of every search parameter); the body
# is 91 lines
def calibrate(
    family: Callable[..., Mechanism],
    epsilon: float,
    delta: float,
    *,
    interval: tuple[float, float] | None = None,
    integer: bool = False,
    rtol: float = DEFAULT_RTOL,
    domain: tuple[float, float] | None = None,
    increasing: bool | None = None,
    ratios: Mapping[str, float] | Sequence[float] | None = None,
    estimate: Callable[[float], float] | None = None,
    start: float | None = None,
    tol: float | None = None,
    name: str = "parameter",
    max_evaluations: int = 60,
    progress: bool | None = None,
) -> Calibration:
    """Find the parameter of ``family`` whose mechanism meets ``(epsilon, delta)``.

    Parameters
    ----------
    family : callable
        ``parameter -> Mechanism``; with ``ratios``, called with the individual
        parameters (see below).  Epsilon must be monotone in the parameter.
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1); or exactly 0 for a pure-DP target, where every
        mechanism of the family must have a finite
        :attr:`~dpacct.accountant.Mechanism.pure_epsilon` (Laplace, randomized response,
        the exponential mechanism, their compositions; a family without one, such as
        the Gaussian, raises ``ValueError`` naming it).
    interval : (float, float), optional
        Starting interval of the parameter, ``0 < low <= high``; default ``(0.5, 2)``,
        or ``(1, 10)`` for integers.  The bracket widens
        itself (geometrically in log space) when the target lies outside, up to twelve
        orders of magnitude beyond either end (and never beyond ``domain``).
    integer : bool
        Integer parameter (a number of steps or repetitions): return the largest
        integer meeting the budget when epsilon increases with the parameter, the
        smallest one otherwise.
    rtol : float
        Continuous parameters: the returned epsilon lies in
        ``[epsilon * (1 - rtol), epsilon]``; in (0, 0.5).  Default 5e-5.
    domain : (float, float), optional
        Allowed parameter values, ``[low, high]`` (``low = 0`` is excluded).  Default
        ``(0, inf)``, or ``[1, inf)`` for integers.  When every value up to an edge meets
        the budget, the edge is returned (``at_domain_edge=True``).
    increasing : bool, optional
        Whether epsilon increases with the parameter; detected when omitted (from
        ``estimate`` if given, else by evaluating both ends of ``interval``).
    ratios : mapping or sequence of float, optional
        Fixed-ratio multi-parameter families: calibrate the common scale ``s`` of
        ``family(**{name: ratio * s})`` (mapping) or ``family(*[ratio * s, ...])``
        (sequence).  E.g. ``ratios={"sigma1": 2, "sigma2": 3}``.
    estimate : callable, optional
        A cheap approximation ``parameter -> epsilon`` at ``delta`` (need not be a
        bound).  Used only to steer the search; the answer is checked with the
        mechanism's own (sound) epsilon.
    start : float, optional
        First parameter to evaluate (default: where ``estimate`` meets the target,
        else the geometric middle of ``interval``).
    tol : float, optional
        Accuracy passed to ``Mechanism.epsilon(delta, tol=tol)``.
    name : str
        Name of the parameter, used in error messages.
    max_evaluations : int
        Maximum number of mechanisms evaluated (default 60).
    progress : bool, optional
        Show a tqdm progress bar: ``None`` (default) shows one only after a few
        seconds, ``True`` at once, ``False`` never.

    Returns
    -------
    Calibration
        ``parameter``, ``mechanism``, the achieved ``epsilon`` and diagnostics; it
        unpacks as ``parameter, mechanism``.

    Raises
    ------
    UnreachableTargetError
        The family cannot reach the target (a ``ValueError``; the message and the
        ``reachable`` attribute give the range of epsilon it reaches).
    CalibrationError
        Every parameter searched meets the budget and no domain edge stops the search,
        or the search ran out of evaluations before meeting the budget.
    ValueError, TypeError
        Invalid arguments (the message names the parameter and its allowed range).

    Examples
    --------
    Calibrating a Gaussian mechanism (continuous parameter):

    >>> from dpacct.mechanisms import GaussianMechanism
    >>> sigma, mech = calibrate(lambda s: GaussianMechanism(sigma=s), epsilon=1.0, delta=1e-5)
    >>> bool(0.999 <= mech.epsilon(1e-5) <= 1.0)
    True
    >>> round(sigma, 2)
    3.73

    A pure-DP target (``delta=0``): the Laplace scale of a sensitivity-1 histogram.

    >>> from dpacct.mechanisms import HistogramQuantiles
    >>> res = calibrate(lambda s: HistogramQuantiles(lower=0.0, upper=1.0, bins=64, scale=s),
    ...                 epsilon=0.5, delta=0)
    >>> bool(2.0 <= res.parameter <= 2.0 * 1.001), bool(0.999 * 0.5 <= res.epsilon <= 0.5)
    (True, True)
    >>> calibrate(lambda s: GaussianMechanism(sigma=s), epsilon=1.0, delta=0)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: delta=0 needs a pure-DP family, but GaussianMechanism(sigma=...) ...

    The largest number of compositions (integer parameter):

    >>> from dpacct.accountant import compose
    >>> res = calibrate(lambda k: compose([GaussianMechanism(sigma=10.0)], counts=[k]),
    ...                 epsilon=1.0, delta=1e-5, integer=True, name="steps")
    >>> res.parameter
    7
    >>> bool(res.epsilon <= 1.0 < compose([GaussianMechanism(sigma=10.0)], [8]).epsilon(1e-5))
    True

    A two-parameter family with fixed ratios (two Gaussians with scales 2s and 3s):

    >>> res = calibrate(lambda sigma1, sigma2: compose([GaussianMechanism(sigma=sigma1),
    ...                                                 GaussianMechanism(sigma=sigma2)]),
    ...                 epsilon=1.0, delta=1e-5, ratios={"sigma1": 2, "sigma2": 3})
    >>> {k: round(v, 3) for k, v in res.parameters.items()}  # doctest: +SKIP
    {'sigma1': 4.479, 'sigma2': 6.719}
    >>> bool(res.parameters["sigma2"] == 1.5 * res.parameters["sigma1"])
    True
    """
    t0 = time.perf_counter()
    if not callable(family):
        raise TypeError(f"family must be callable (parameter -> Mechanism), got {family!r}")
    target = check_positive("epsilon", epsilon)
    delta = check_delta(delta, allow_zero=True)  # 0: pure DP, on Mechanism.pure_epsilon
    rtol = check_finite("rtol", rtol)
    if not 0 < rtol < 0.5:
        raise ValueError(f"rtol must lie in (0, 0.5), got {show_value(rtol)}")
    integer = check_flag("integer", integer)
    if increasing is not None:
        increasing = check_flag("increasing", increasing)
    tol = check_tol(tol)
    ratios = _check_ratios(ratios)
    if integer and ratios is not None:
        raise ValueError("ratios (fixed-ratio families) require a continuous parameter")
    if interval is None:
        interval = (1, 10) if integer else (0.5, 2.0)
    lo, hi = _check_interval(interval, integer)
    dom = _check_domain(domain, integer)
    if not (dom[0] <= hi and lo <= dom[1]):
        raise ValueError(f"interval {(lo, hi)!r} lies outside the domain {dom!r}")
    lo, hi = max(lo, dom[0]), min(hi, dom[1])
    if lo <= 0:
        lo = min(hi, TINY) if hi > 0 else hi
    if start is not None:
        start = check_positive("start", start)
        if not dom[0] <= start <= dom[1]:
            raise ValueError(
                f"start must lie in the domain {show_value(dom)}, got {show_value(start)}"
            )
    if estimate is not None and not callable(estimate):
        msg = f"estimate must be callable (parameter -> epsilon), got {show_value(estimate)}"
        raise TypeError(msg)
    if isinstance(max_evaluations, bool) or not isinstance(max_evaluations, int):
        msg = f"max_evaluations must be an integer, got {show_value(max_evaluations)}"
        raise TypeError(msg)
    if check_count(max_evaluations, "max_evaluations") < 2:
        raise ValueError(f"max_evaluations must be an integer >= 2, got {max_evaluations}")

    search = _Search(
        _builder(family, ratios),
        target,
        delta,
        tol=tol,
        integer=integer,
        rtol=rtol,
        domain=dom,
        limits=(lo / _MAX_WIDEN, hi * _MAX_WIDEN),
        estimate=estimate,
        name=name,
        max_evaluations=max_evaluations,
        progress=progress,
    )
    try:
        x = _run(search, lo, hi, start, increasing)
    finally:
        search.close()
    h, mech, params, eps = search.points[x]
    p = search.param(x)
    edge = (search.sign > 0 and p >= dom[1]) or (search.sign < 0 and p <= dom[0])
    if not integer:
        edge = edge and h < search.window
    return Calibration(
        parameter=p,
        mechanism=mech,
        epsilon=eps,
        target_epsilon=target,
        delta=delta,
        evaluations=len(search.points),
        parameters=params,
        at_domain_edge=bool(edge),
        seconds=time.perf_counter() - t0,
    )
