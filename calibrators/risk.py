"""Calibrate to attack risk instead of (epsilon, delta).

Kulynych, Gomez, Kaissis, du Pin Calmon, Troncoso (NeurIPS 2024, "Attack-aware noise
calibration for differential privacy") show that calibrating noise to a bound on the
best membership-inference attack -- its TPR at a chosen FPR, or its advantage
TPR - FPR -- instead of to a conventional epsilon at a fixed delta often needs much
less noise for the same attack risk.  :func:`calibrate_risk` searches any family
``parameter -> Mechanism`` for the parameter meeting such a target;
:func:`risk_noise_multiplier`, :func:`risk_max_steps` and
:func:`risk_max_sample_rate` are the DP-SGD conveniences.

Safe side by construction: the risk of every candidate is the *certified upper bound*
(:func:`~dpacct.accountant.queries.attack_risk.tpr_at`,
:func:`~dpacct.accountant.queries.attack_risk.advantage`), and the answer is always a
candidate that was evaluated and met the target.  The search brackets the crossing on
a log scale (widening itself geometrically, up to twelve orders of magnitude) and
then narrows it by safeguarded regula falsi (Illinois) on ``log parameter`` until the
feasible and infeasible ends are within ``rtol`` of each other, so a continuous answer
uses at most ``rtol`` (relative) more noise (or fewer steps, a smaller rate) than the
certified bound requires.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from dpacct.accountant.mechanism import Mechanism
from dpacct.accountant.numerics import TINY
from dpacct.accountant.queries.attack_risk import advantage as _advantage
from dpacct.accountant.queries.attack_risk import tpr_at as _tpr_at
from dpacct.accountant.validation import (
    check_count,
    check_finite,
    check_positive,
    check_probability,
    check_sample_rate,
    check_tol,
    show_value,
)

from .calibrate import CalibrationError, UnreachableTargetError, _check_domain, _check_interval
from .dpsgd import dpsgd_mechanism

__all__ = [
    "RiskCalibration",
    "calibrate_risk",
    "risk_max_sample_rate",
    "risk_max_steps",
    "risk_noise_multiplier",
]

_MAX_WIDEN = 1e12


@dataclass(frozen=True)
class RiskCalibration:
    """Result of :func:`calibrate_risk`; unpacks as ``parameter, mechanism``.

    Each parameter is an attribute of the same name.

    Parameters
    ----------
    parameter : float or int
        The calibrated parameter.
    mechanism : Mechanism
        ``family(parameter)``.
    risk : float
        Its certified risk (TPR at ``fpr`` or advantage), ``<= target``.
    target : float
        The requested bound.
    metric : str
        ``"tpr"`` or ``"advantage"``.
    fpr : float or None
        The false-positive rate of a TPR target.
    infeasible : float or int or None
        The nearest evaluated parameter that misses the target (``None`` at a domain
        edge): the answer is within ``rtol`` of it.
    evaluations : int
        Mechanisms evaluated.
    seconds : float, default 0.0
        Wall-clock time the search took (not compared by ``==``).

    Examples
    --------
    >>> from dpacct.mechanisms import LaplaceMechanism
    >>> res = calibrate_risk(lambda b: LaplaceMechanism(b=b), advantage=0.2, increasing=False)
    >>> b, mech = res      # exact: 1 - exp(-1 / (2 b)) = 0.2 at b = 2.2407
    >>> round(b, 3), res.metric, bool(res.risk <= res.target == 0.2)
    (2.241, 'advantage', True)
    """

    parameter: float | int
    mechanism: Mechanism
    risk: float
    target: float
    metric: str
    fpr: float | None
    infeasible: float | int | None
    evaluations: int
    seconds: float = field(default=0.0, compare=False)

    def __iter__(self):
        yield self.parameter
        yield self.mechanism


def _target(tpr, fpr, advantage) -> tuple[str, float, float | None]:
    if advantage is not None:
        if tpr is not None or fpr is not None:
            raise ValueError("give either advantage or (tpr, fpr), not both")
        adv = check_probability("advantage", advantage)
        if not 0.0 < adv < 1.0:
            raise ValueError(f"advantage must lie in (0, 1), got {show_value(advantage)}")
        return "advantage", adv, None
    if tpr is None or fpr is None:
        raise TypeError("give a target: advantage=, or tpr= together with fpr=")
    a = check_probability("fpr", fpr)
    t = check_probability("tpr", tpr)
    if not 0.0 <= a < 1.0:
        raise ValueError(f"fpr must lie in [0, 1), got {show_value(fpr)}")
    if not a < t < 1.0:
        raise ValueError(f"tpr must lie in (fpr, 1) = ({a:g}, 1), got {show_value(tpr)}")
    return "tpr", t, a


# long function: 56 lines are the docstring; the body validates its nine parameters, then
# brackets and refines the search, which share the memo of evaluated points
def calibrate_risk(
    family: Callable[[float], Mechanism],
    *,
    tpr: float | None = None,
    fpr: float | None = None,
    advantage: float | None = None,
    increasing: bool,
    interval: tuple[float, float] = (0.5, 2.0),
    start: float | None = None,
    integer: bool = False,
    domain: tuple[float, float] = (0.0, math.inf),
    rtol: float = 1e-4,
    tol: float | None = None,
    name: str = "parameter",
    max_evaluations: int = 80,
) -> RiskCalibration:
    """Extreme parameter of ``family`` whose certified attack risk meets the target.

    Parameters
    ----------
    family : callable
        ``parameter -> Mechanism``; the risk must be monotone in the parameter.
    tpr, fpr : float, optional
        Target: the best attack's TPR at false-positive rate ``fpr`` is at most ``tpr``
        (Kulynych et al. 2024, Eq. (3)).
    advantage : float, optional
        Target: TPR - FPR of every attack is at most ``advantage`` (ibid., Section 3.1).
    increasing : bool
        Whether the risk grows with the parameter (steps, sample rate: True; noise:
        False).  The answer is the largest parameter meeting the target if True, the
        smallest otherwise.
    interval : (float, float)
        Where the search starts (it widens itself); ``0 < low <= high``.
    start : float, optional
        First parameter evaluated (default: the geometric middle of ``interval``).
    integer : bool
        Integer parameter (a number of steps).
    domain : (float, float)
        Allowed values; an edge meeting the target is returned as is.
    rtol : float
        Continuous parameters: the answer is within this relative distance of a
        parameter that misses the target; in (0, 0.5).  Default 1e-4.
    tol : float, optional
        PLD accuracy passed to the risk evaluations.
    name : str
        Parameter name for messages.
    max_evaluations : int
        Evaluation budget.

    Returns
    -------
    RiskCalibration

    Raises
    ------
    UnreachableTargetError
        No parameter in the searched range meets the target (the message gives the
        risks reached).
    ValueError, TypeError
        Invalid arguments, named.

    Examples
    --------
    Noise for which no attack on one Gaussian release has TPR above 0.1 at FPR 0.01
    (closed form: ``mu = Phi^-1(0.99) - Phi^-1(0.9) = 1.0446``, ``sigma = 1/mu``):

    >>> from dpacct.mechanisms import GaussianMechanism
    >>> res = calibrate_risk(lambda s: GaussianMechanism(sigma=s), tpr=0.1, fpr=0.01,
    ...                      increasing=False)
    >>> round(res.parameter, 3), bool(res.risk <= 0.1)
    (0.957, True)
    """
    t0 = time.perf_counter()
    if not callable(family):
        raise TypeError(f"family must be callable (parameter -> Mechanism), got {family!r}")
    metric, target, a = _target(tpr, fpr, advantage)
    if not isinstance(increasing, bool):
        raise TypeError(f"increasing must be True or False, got {show_value(increasing)}")
    rtol = check_finite("rtol", rtol)
    if not 0.0 < rtol < 0.5:
        raise ValueError(f"rtol must lie in (0, 0.5), got {show_value(rtol)}")
    tol = check_tol(tol)
    lo_i, hi_i = _check_interval(interval, integer=False)
    d_lo, d_hi = _check_domain(domain, integer=False)
    if isinstance(max_evaluations, bool) or not isinstance(max_evaluations, int):
        msg = f"max_evaluations must be an integer, got {show_value(max_evaluations)}"
        raise TypeError(msg)
    check_count(max_evaluations, "max_evaluations")
    if start is not None:
        start = check_positive("start", start)
    x0 = math.log(start) if start is not None else 0.5 * (math.log(lo_i) + math.log(hi_i))
    x_min = max(math.log(lo_i / _MAX_WIDEN), math.log(d_lo) if d_lo > 0 else -math.inf)
    x_max = min(math.log(hi_i * _MAX_WIDEN), math.log(d_hi) if math.isfinite(d_hi) else math.inf)
    x0 = min(max(x0, x_min), x_max)
    sign = 1.0 if increasing else -1.0  # risk grows along sign * x

    points: dict[float, tuple[float | int, Mechanism, float]] = {}

    def param(x: float) -> float | int:
        v = math.exp(x)
        if integer:
            return max(round(v), 1)
        return min(max(v, d_lo), d_hi) if d_lo > 0 else min(v, d_hi)

    def risk(x: float) -> float:
        p = param(x)
        key = float(p)
        if key not in points:
            if len(points) >= max_evaluations:
                raise CalibrationError(
                    f"no {name} found within {max_evaluations} evaluations",
                    searched=(min(points), max(points)),
                )
            mech = family(p)
            r = float(_tpr_at(mech, a, tol=tol)) if metric == "tpr" else float(
                _advantage(mech, tol=tol)
            )
            points[key] = (p, mech, r)
        return points[key][2]

    def feasible(x: float) -> bool:
        return risk(x) <= target

    # 1. bracket: xf feasible, xi infeasible
    xf = xi = None
    if feasible(x0):
        xf, step = x0, 0.25
        while True:
            x = min(max(xf + sign * step, x_min), x_max)
            if x == xf:  # domain edge: every value up to it is feasible
                break
            if feasible(x):
                xf, step = x, 2 * step
            else:
                xi = x
                break
    else:
        xi, step = x0, 0.25
        while True:
            x = min(max(xi - sign * step, x_min), x_max)
            if x == xi:
                reached = sorted(v[2] for v in points.values())
                raise UnreachableTargetError(
                    f"no {name} meets the target {metric} <= {target:g} in the searched "
                    f"range; risks reached: [{reached[0]:.6g}, {reached[-1]:.6g}]",
                    reachable=(reached[0], reached[-1]),
                    searched=(min(points), max(points)),
                )
            if feasible(x):
                xf = x
                break
            xi, step = x, 2 * step
    # 2. refine by Illinois regula falsi on g(x) = log risk - log target, safeguarded
    if xi is not None:
        gf = math.log(max(risk(xf), TINY)) - math.log(target)
        gi = math.log(max(risk(xi), TINY)) - math.log(target)
        side = 0
        while True:
            if integer:
                if abs(param(xf) - param(xi)) <= 1:
                    break
            elif abs(xf - xi) <= math.log1p(rtol):
                break
            x = xf - gf * (xi - xf) / (gi - gf) if gi != gf else 0.5 * (xf + xi)
            lo, hi = min(xf, xi), max(xf, xi)
            margin = 0.02 * (hi - lo)
            if not lo + margin < x < hi - margin:
                x = 0.5 * (xf + xi)
            if integer:
                mid = param(x)
                if mid in (param(xf), param(xi)):
                    x = math.log(0.5 * (param(xf) + param(xi)))
                x = math.log(param(x))
            g = math.log(max(risk(x), TINY)) - math.log(target)
            if g <= 0:
                xf, gf = x, g
                if side == 1:
                    gi *= 0.5
                side = 1
            else:
                xi, gi = x, g
                if side == -1:
                    gf *= 0.5
                side = -1
    p, mech, r = points[float(param(xf))]
    return RiskCalibration(
        parameter=p,
        mechanism=mech,
        risk=r,
        target=target,
        metric=metric,
        fpr=a,
        infeasible=None if xi is None else param(xi),
        evaluations=len(points),
        seconds=time.perf_counter() - t0,
    )


def _gdp_mu(metric: str, target: float, fpr: float | None) -> float:
    """mu of the Gaussian-DP curve meeting the target exactly (Dong, Roth, Su 2022, Eq. (6))."""
    from scipy.stats import norm

    if metric == "advantage":
        return 2.0 * float(norm.ppf(0.5 * (1.0 + target)))
    return float(norm.isf(fpr) - norm.isf(target))


def risk_noise_multiplier(
    *,
    sample_rate: float,
    steps: int,
    tpr: float | None = None,
    fpr: float | None = None,
    advantage: float | None = None,
    rtol: float = 1e-4,
    tol: float | None = None,
    full_output: bool = False,
) -> float | RiskCalibration:
    """Smallest DP-SGD noise multiplier whose certified attack risk meets the target.

    Starts from the central-limit (Gaussian-DP) estimate
    ``mu = q sqrt(T (e^{1/sigma^2} - 1))`` (Bu, Dong, Long, Su 2020, Eq. (5)) and
    certifies every candidate with :func:`~dpacct.accountant.queries.attack_risk.tpr_at`.

    Parameters
    ----------
    sample_rate : float
        Poisson sampling rate, in (0, 1].
    steps : int
        Number of steps, >= 1.
    tpr, fpr, advantage : float
        The target (see :func:`calibrate_risk`).
    rtol : float
        The answer is within ``rtol`` of a noise multiplier that misses the target.
    tol : float, optional
        PLD accuracy.
    full_output : bool
        Return the :class:`RiskCalibration` instead of sigma alone.

    Examples
    --------
    >>> sigma = risk_noise_multiplier(tpr=0.1, fpr=0.01, sample_rate=0.01, steps=1_000)
    >>> round(sigma, 3)
    0.633
    """
    q = check_sample_rate(sample_rate)
    n = check_count(steps, "steps")
    metric, target, a = _target(tpr, fpr, advantage)
    mu = _gdp_mu(metric, target, a)
    if q == 1.0:
        guess = math.sqrt(n) / mu
    else:
        guess = 1.0 / math.sqrt(math.log1p(mu * mu / (q * q * n)))
    res = calibrate_risk(
        lambda s: dpsgd_mechanism(s, q, n),
        tpr=tpr,
        fpr=fpr,
        advantage=advantage,
        increasing=False,
        interval=(guess / 1.05, guess * 1.05),
        start=guess,
        rtol=rtol,
        tol=tol,
        name="noise_multiplier",
    )
    return res if full_output else float(res.parameter)


def risk_max_steps(
    *,
    noise_multiplier: float,
    sample_rate: float,
    tpr: float | None = None,
    fpr: float | None = None,
    advantage: float | None = None,
    tol: float | None = None,
    full_output: bool = False,
) -> int | RiskCalibration:
    """Largest number of DP-SGD steps whose certified attack risk meets the target.

    Parameters
    ----------
    noise_multiplier : float
        Noise multiplier of every step, > 0.
    sample_rate : float
        Poisson sampling rate, in (0, 1].
    tpr, fpr : float, optional
        Target: the best attack's TPR at false-positive rate ``fpr`` is at most ``tpr``
        (see :func:`calibrate_risk`).
    advantage : float, optional
        Target: TPR - FPR of every attack is at most ``advantage``; give either it or
        ``(tpr, fpr)``.
    tol : float, optional
        Relative accuracy of the PLDs (as in :meth:`Mechanism.epsilon`).
    full_output : bool, default False
        Return the :class:`RiskCalibration` instead of the parameter alone.

    Examples
    --------
    >>> risk_max_steps(noise_multiplier=1.0, sample_rate=0.01, tpr=0.05, fpr=0.01)
    2611
    """
    sigma = check_positive("noise_multiplier", noise_multiplier)
    q = check_sample_rate(sample_rate)
    res = calibrate_risk(
        lambda n: dpsgd_mechanism(sigma, q, int(n)),
        tpr=tpr,
        fpr=fpr,
        advantage=advantage,
        increasing=True,
        interval=(10.0, 1000.0),
        integer=True,
        domain=(1.0, 2.0**62),
        tol=tol,
        name="steps",
    )
    return res if full_output else int(res.parameter)


def risk_max_sample_rate(
    *,
    noise_multiplier: float,
    steps: int,
    tpr: float | None = None,
    fpr: float | None = None,
    advantage: float | None = None,
    rtol: float = 1e-4,
    tol: float | None = None,
    full_output: bool = False,
) -> float | RiskCalibration:
    """Largest Poisson sampling rate whose certified attack risk meets the target.

    Parameters
    ----------
    noise_multiplier : float
        Noise multiplier of every step, > 0.
    steps : int
        Number of steps, >= 1.
    tpr, fpr : float, optional
        Target: the best attack's TPR at false-positive rate ``fpr`` is at most ``tpr``
        (see :func:`calibrate_risk`).
    advantage : float, optional
        Target: TPR - FPR of every attack is at most ``advantage``; give either it or
        ``(tpr, fpr)``.
    rtol : float, default 1e-4
        The answer is within ``rtol`` (relative) of a rate that misses the target.
    tol : float, optional
        Relative accuracy of the PLDs (as in :meth:`Mechanism.epsilon`).
    full_output : bool, default False
        Return the :class:`RiskCalibration` instead of the parameter alone.

    Examples
    --------
    >>> q = risk_max_sample_rate(noise_multiplier=1.0, steps=1_000, tpr=0.05, fpr=0.01)
    >>> round(q, 4)
    0.016
    """
    sigma = check_positive("noise_multiplier", noise_multiplier)
    n = check_count(steps, "steps")
    res = calibrate_risk(
        lambda q: dpsgd_mechanism(sigma, min(q, 1.0), n),
        tpr=tpr,
        fpr=fpr,
        advantage=advantage,
        increasing=True,
        interval=(1e-3, 1e-2),
        domain=(TINY, 1.0),
        rtol=rtol,
        tol=tol,
        name="sample_rate",
    )
    return res if full_output else float(res.parameter)
