"""Convenience calibrators for the everyday questions of DP-SGD and the Gaussian mechanism.

* :func:`noise_multiplier` -- the noise multiplier giving ``(epsilon, delta)`` for a
  number of steps (or epochs) at a Poisson sampling rate;
* :func:`max_steps` -- the largest number of steps a noise multiplier affords;
* :func:`max_sample_rate` -- the largest sampling rate a noise multiplier affords;
* :func:`analytic_gaussian_sigma` -- the exact calibration of one Gaussian mechanism
  (Balle & Wang 2018);
* :func:`get_noise_multiplier` -- :func:`noise_multiplier` under the argument names of
  opacus (``target_epsilon``, ``target_delta``, ``sample_rate``, ``epochs``/``steps``).

One DP-SGD step is ``poisson_subsample(GaussianMechanism(sigma), sample_rate)`` and a
run is its ``steps``-fold composition (:func:`dpsgd_mechanism`), accounted by the
engine's tightest sound route.  The searches are steered by a cheap estimate -- the
exact Gaussian curve when ``sample_rate = 1``, otherwise the Renyi DP of the subsampled
Gaussian (Mironov, Talwar & Zhang 2019) on a fixed set of about 120 orders, converted
with Canonne, Kamath & Steinke 2020 (Proposition 12) -- and then settled with the
engine's accountant, typically in two or three evaluations of the full composition.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Literal, overload

import numpy as np

from dpacct.accountant import compose, poisson_subsample
from dpacct.accountant.families.gaussian import (
    GaussianMechanism,
    gaussian_delta_at_most_exact,
    gaussian_epsilon,
    gaussian_log_delta,
)
from dpacct.accountant.mechanism import Mechanism
from dpacct.accountant.numerics import EXP_OVERFLOW, brentq
from dpacct.accountant.rdp.conversion import rdp_to_epsilon_at_orders
from dpacct.accountant.validation import (
    MAX_COUNT,
    check_count,
    check_delta,
    check_positive,
    check_sample_rate,
    show_value,
)

from .calibrate import Calibration, calibrate
from .search import DEFAULT_RTOL, CalibrationError, UnreachableTargetError

#: the smallest noise multiplier :func:`noise_multiplier` returns (the edge of its
#: search): a budget every larger one meets, such as epsilon = 1e308, is answered by it
#: (``Calibration.at_domain_edge``); DP-SGD at this sigma costs epsilon above 1e20
NOISE_MULTIPLIER_MIN = 1e-12

__all__ = [
    "analytic_gaussian_sigma",
    "dpsgd_mechanism",
    "gaussian_epsilon",
    "get_noise_multiplier",
    "max_sample_rate",
    "max_steps",
    "noise_multiplier",
    "resolve_steps",
    "steps_from_epochs",
]


#: Renyi orders of the steering estimate: dense where DP-SGD's optimal orders lie (2 to
#: 16), integers up to 64, a few large ones; fractional orders below 2 are costly
_ORDERS = np.concatenate(
    [
        [1.25, 1.5, 1.75],
        np.arange(2.0, 16.0, 0.25),
        np.arange(16.0, 65.0),
        [80.0, 96, 128, 192, 256, 512],
    ]
)


def dpsgd_mechanism(noise_multiplier: float, sample_rate: float, steps: int) -> Mechanism:
    """The privacy of ``steps`` DP-SGD steps: composed Poisson-subsampled Gaussians.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation over the clipping norm, > 0.
    sample_rate : float
        Poisson sampling probability of each record per step, in (0, 1].
    steps : int
        Number of steps, >= 1.

    Examples
    --------
    >>> run = dpsgd_mechanism(1.1, 256 / 60_000, 14_063)
    >>> round(run.epsilon(1e-5), 2)
    2.38
    """
    sigma = check_positive("noise_multiplier", noise_multiplier)
    q = check_sample_rate(sample_rate)
    n = check_count(steps, "steps")
    return compose([poisson_subsample(GaussianMechanism(sigma=sigma), q)], counts=[n])


def steps_from_epochs(epochs: float, sample_rate: float) -> int:
    """Number of steps in ``epochs`` passes at ``sample_rate``: ``epochs / sample_rate``.

    Rounded down as opacus does, after forgiving floating-point error (``3 / 0.01`` is
    ``299.99999999999994`` in floating point, and gives 300 steps here).

    Parameters
    ----------
    epochs : float
        Passes over the data, > 0 (fractions allowed).
    sample_rate : float
        Poisson sampling rate (expected batch size over dataset size), in (0, 1].

    Examples
    --------
    >>> steps_from_epochs(3, 0.01)
    300
    >>> steps_from_epochs(60, 256 / 60_000)
    14062
    """
    e = check_positive("epochs", epochs)
    q = check_sample_rate(sample_rate)
    raw = e / q
    if not raw * (1.0 + 1e-12) < MAX_COUNT:
        raise ValueError(
            "epochs must give at most 2**63 - 1 steps (epochs / sample_rate below "
            f"about 9.2e18), got epochs={show_value(e)} at sample_rate={show_value(q)}"
        )
    steps = math.floor(raw * (1.0 + 1e-12))
    if steps < 1:
        raise ValueError(f"epochs must give at least one step: epochs / sample_rate = {raw:g} < 1")
    return steps


def resolve_steps(steps: int | None, epochs: float | None, sample_rate: float) -> int:
    """The step count from exactly one of ``steps`` and ``epochs``.

    Parameters
    ----------
    steps : int or None
        A step count (an integer >= 1).
    epochs : float or None
        Passes over the data; converted with :func:`steps_from_epochs`.
    sample_rate : float
        The Poisson sampling rate (expected batch size / dataset size).

    Returns
    -------
    int
        The number of steps.

    Examples
    --------
    >>> resolve_steps(1000, None, 0.01)
    1000
    >>> resolve_steps(None, 3, 0.01)
    300
    >>> resolve_steps(10, 3, 0.01)
    Traceback (most recent call last):
    ...
    ValueError: give either steps or epochs, not both
    """
    if steps is not None and epochs is not None:
        raise ValueError("give either steps or epochs, not both")
    if steps is None and epochs is None:
        raise TypeError("one of steps or epochs is required")
    if steps is not None:
        return check_count(steps, "steps")
    return steps_from_epochs(epochs, sample_rate)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------
# exact Gaussian (the curve's maths lives in dpacct.accountant.families.gaussian)
# ----------------------------------------------------------------------------------


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """The smallest noise scale for which the Gaussian mechanism is (epsilon, delta)-DP.

    The analytic Gaussian mechanism of Balle & Wang 2018 ("Improving the Gaussian
    Mechanism for Differential Privacy", Theorem 8 and Algorithm 1): the mechanism with
    ``mu = sensitivity / sigma`` is (epsilon, delta)-DP iff
    ``Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu) <= delta``.  The left side grows
    with ``mu``, so ``mu`` is found by Brent's method on ``log delta`` (instead of the
    paper's reparametrisation), to machine precision, and rounded so that the returned
    sigma satisfies the inequality exactly (checked at 50 digits or more for the float
    returned, at ``mu`` rounded up).

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1).
    sensitivity : float
        L2 sensitivity of the query, > 0 (default 1: sigma is a noise multiplier).

    Returns
    -------
    float
        Noise standard deviation sigma (on the scale of ``sensitivity``).

    Examples
    --------
    >>> sigma = analytic_gaussian_sigma(1.0, 1e-5)
    >>> round(sigma, 6)
    3.730632
    >>> classical = math.sqrt(2 * math.log(1.25 / 1e-5)) / 1.0  # Dwork & Roth, Thm A.1
    >>> bool(sigma < classical)
    True
    """
    eps = check_positive("epsilon", epsilon)
    delta = check_delta(delta, what="the Gaussian mechanism")
    sens = check_positive("sensitivity", sensitivity)
    log_d = math.log(delta)

    def f(log_mu: float) -> float:
        return max(gaussian_log_delta(math.exp(log_mu), eps), -1e300) - log_d

    lo, hi = -1.0, 1.0
    while f(lo) > 0:
        lo -= 2.0 * (1.0 - lo)
        if lo < -EXP_OVERFLOW:  # pragma: no cover - delta(eps) at mu -> 0 goes to 0
            raise ValueError(f"no Gaussian reaches epsilon={eps!r}, delta={delta!r}")
    while f(hi) <= 0:
        hi += 2.0 * hi
        if hi > EXP_OVERFLOW:
            raise ValueError(f"epsilon={eps!r} at delta={delta!r} needs no noise (sigma -> 0)")
    log_mu = brentq(f, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    # Round to the side that meets the budget.  The float evaluation of the curve is
    # itself off in the last digits, so the returned sigma is certified at 50 digits:
    # step up until delta(eps; sensitivity / sigma) <= delta holds in mpmath for the
    # float that is returned (sigma * sensitivity), not only for its float image.
    sigma = 1.0 / math.exp(log_mu)
    for _ in range(64):
        if gaussian_log_delta(1.0 / sigma, eps) <= log_d:
            break
        sigma = math.nextafter(sigma, math.inf)
    out = sigma * sens
    if not math.isfinite(out * (1.0 + 1e-9)):
        # the std (noise multiplier times sensitivity) is not a float: mpmath's erfc then
        # overflowed at mu = sens / inf (OverflowError at sensitivity 1e308)
        raise ValueError(
            f"sensitivity must lie in (0, {sys.float_info.max / (sigma * (1.0 + 1e-9)):.6g}] "
            f"at epsilon={eps!r}, delta={delta!r} (the noise multiplier there is "
            f"{sigma:.6g} and the std, their product, must be a finite float), "
            f"got {sens!r}"
        )
    for step in range(200):
        # checked at a float at or above the exact ratio: sens / out rounds to nearest,
        # possibly below it, and delta grows with mu
        if gaussian_delta_at_most_exact(math.nextafter(sens / out, math.inf), eps, delta):
            return out
        # ulp by ulp first, then by a relative step doubling from 1e-12: the float curve
        # can be off by far more than an ulp where it cancels (small eps and delta)
        if step < 64:
            out = math.nextafter(out, math.inf)
        else:
            out *= 1.0 + 1e-12 * 2.0 ** (step - 64)
    raise RuntimeError(  # pragma: no cover - the float solution is within 1e-13
        f"analytic_gaussian_sigma could not certify sigma for epsilon={eps!r}, delta={delta!r}"
    )


# ----------------------------------------------------------------------------------
# steering estimates
# ----------------------------------------------------------------------------------


def _rdp_eps(rdp: np.ndarray, delta: float) -> float:
    """Min over ``_ORDERS`` of the RDP -> (eps, delta) conversion (Canonne et al. 2020)."""
    return rdp_to_epsilon_at_orders(_ORDERS, rdp, delta)


def _step_rdp(sigma: float, q: float) -> np.ndarray:
    return np.asarray(poisson_subsample(GaussianMechanism(sigma=sigma), q).rdp(_ORDERS))


#: the CLT steering estimate is used when it puts sigma at least this high (it is
#: within about 1 % there on DP-SGD workloads; below, the RDP estimate steers better)
_CLT_SIGMA = 1.2


def _clt_epsilon(sigma: float, q: float, steps: int, delta: float) -> float:
    """Central-limit estimate: ``mu = q sqrt(T (e^{1/sigma^2} - 1))`` Gaussian DP.

    Bu, Dong, Long, Su 2020 ("Deep learning with Gaussian differential privacy",
    Theorem 5).  Neither bound nor certified -- a cheap steering estimate only.
    """
    mu = q * math.sqrt(steps * math.expm1(min(1.0 / sigma**2, EXP_OVERFLOW)))
    return gaussian_epsilon(mu, delta)


def _estimate_sigma(
    q: float, steps: int, delta: float, epsilon: float | None = None
) -> Callable[[float], float]:
    """``sigma -> epsilon`` steering estimate for the search (never a bound).

    Exact for q = 1.  Otherwise the central-limit estimate when, for the target
    ``epsilon``, it puts sigma above ``_CLT_SIGMA`` (a microsecond per call), else the
    RDP conversion on ``_ORDERS`` (about 2 ms per call, better for small sigma).
    """
    if q == 1.0:
        return lambda sigma: gaussian_epsilon(math.sqrt(steps) / sigma, delta)
    if epsilon is not None:
        clt = partial(_clt_epsilon, q=q, steps=steps, delta=delta)
        if clt(_CLT_SIGMA) >= epsilon:
            return clt
    return lambda sigma: _rdp_eps(steps * _step_rdp(sigma, q), delta)


def _estimate_steps(sigma: float, q: float, delta: float) -> Callable[[float], float]:
    if q == 1.0:
        return lambda n: gaussian_epsilon(math.sqrt(n) / sigma, delta)
    per_step = _step_rdp(sigma, q)
    return lambda n: _rdp_eps(n * per_step, delta)


def _estimate_rate(sigma: float, steps: int, delta: float) -> Callable[[float], float]:
    def est(q: float) -> float:
        if q >= 1.0:
            return gaussian_epsilon(math.sqrt(steps) / sigma, delta)
        return _rdp_eps(steps * _step_rdp(sigma, q), delta)

    return est


# ----------------------------------------------------------------------------------
# the everyday questions
# ----------------------------------------------------------------------------------


@overload
def noise_multiplier(
    epsilon: float,
    delta: float,
    sample_rate: float = ...,
    steps: int | None = ...,
    *,
    epochs: float | None = ...,
    rtol: float = ...,
    tol: float | None = ...,
    full_output: Literal[False] = ...,
    progress: bool | None = ...,
) -> float: ...
@overload
def noise_multiplier(
    epsilon: float,
    delta: float,
    sample_rate: float = ...,
    steps: int | None = ...,
    *,
    epochs: float | None = ...,
    rtol: float = ...,
    tol: float | None = ...,
    full_output: Literal[True],
    progress: bool | None = ...,
) -> Calibration: ...
def noise_multiplier(
    epsilon: float,
    delta: float,
    sample_rate: float = 1.0,
    steps: int | None = None,
    *,
    epochs: float | None = None,
    rtol: float = DEFAULT_RTOL,
    tol: float | None = None,
    full_output: bool = False,
    progress: bool | None = None,
) -> float | Calibration:
    """The noise multiplier for which DP-SGD meets ``(epsilon, delta)``.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1).
    sample_rate : float
        Poisson sampling rate per step, in (0, 1] (default 1: full-batch noisy GD).
    steps : int, optional
        Number of steps, >= 1.
    epochs : float, optional
        Instead of ``steps``: passes over the data (``steps = epochs / sample_rate``,
        see :func:`steps_from_epochs`).
    rtol : float
        The epsilon reached lies in ``[epsilon * (1 - rtol), epsilon]`` (default 5e-5).
    tol : float, optional
        Accuracy of the engine's epsilon (``Mechanism.epsilon(delta, tol=)``).
    full_output : bool
        Return the full :class:`~dpacct.calibrators.calibrate.Calibration` (mechanism, epsilon
        reached, number of evaluations) instead of the noise multiplier alone.
    progress : bool, optional
        tqdm progress bar: shown after a few seconds by default.

    Returns
    -------
    float or Calibration
        The noise multiplier sigma (or the calibration result).

    Examples
    --------
    >>> sigma = noise_multiplier(epsilon=3.0, delta=1e-5, sample_rate=0.01, steps=10_000)
    >>> round(sigma, 2)
    1.57
    >>> eps = dpsgd_mechanism(sigma, 0.01, 10_000).epsilon(1e-5)
    >>> bool(3.0 * (1 - 5e-5) <= eps <= 3.0)
    True
    """
    eps = check_positive("epsilon", epsilon)
    delta = check_delta(delta, what="DP-SGD (a subsampled Gaussian)")
    q = check_sample_rate(sample_rate)
    n = resolve_steps(steps, epochs, q)

    def family(sigma: float) -> Mechanism:
        return compose([poisson_subsample(GaussianMechanism(sigma=sigma), q)], counts=[n])

    if q == 1.0:
        exact = _exact_gaussian(family, eps, delta, n, tol)
        if exact is not None:
            return exact if full_output else float(exact.parameter)
    res = calibrate(
        family,
        eps,
        delta,
        interval=(0.5, 2.0),
        rtol=rtol,
        domain=(NOISE_MULTIPLIER_MIN, math.inf),
        increasing=False,
        estimate=_estimate_sigma(q, n, delta, eps),
        tol=tol,
        name="noise_multiplier",
        progress=progress,
    )
    return res if full_output else float(res.parameter)


def _exact_gaussian(
    family: Callable[[float], Mechanism], eps: float, delta: float, steps: int, tol: float | None
) -> Calibration | None:
    """Without subsampling, ``steps`` Gaussians with sigma are one with sigma/sqrt(steps).

    The analytic calibration is exact; sigma is then nudged up by a few ulps-scale
    relative steps until the engine's epsilon (which rounds up) meets the target.
    """
    t0 = time.perf_counter()
    try:
        sigma = math.sqrt(steps) * analytic_gaussian_sigma(eps, delta)
    except ValueError:  # a budget no noise is needed for: the search's domain edge answers
        return None
    if not sigma >= NOISE_MULTIPLIER_MIN:
        return None
    for i in range(40):
        mech = family(sigma)
        achieved = float(mech.epsilon(delta, tol=tol))
        if achieved <= eps:
            return Calibration(
                parameter=sigma,
                mechanism=mech,
                epsilon=achieved,
                target_epsilon=eps,
                delta=delta,
                evaluations=i + 1,
                seconds=time.perf_counter() - t0,
            )
        sigma *= 1.0 + 1e-12 * 2.0**i
    return None  # pragma: no cover - fall back on the generic search


def max_steps(
    epsilon: float,
    delta: float,
    noise_multiplier: float,
    sample_rate: float = 1.0,
    *,
    tol: float | None = None,
    full_output: bool = False,
    progress: bool | None = None,
) -> int | Calibration:
    """The largest number of DP-SGD steps that stays within ``(epsilon, delta)``.

    Parameters
    ----------
    epsilon, delta : float
        Target, epsilon > 0 and delta in (0, 1).
    noise_multiplier : float
        Noise multiplier sigma, > 0.
    sample_rate : float
        Poisson sampling rate per step, in (0, 1].
    tol, full_output, progress
        As in :func:`noise_multiplier`.

    Returns
    -------
    int or Calibration
        The number of steps ``n``: ``n`` steps meet the budget and ``n + 1`` do not.

    Raises
    ------
    UnreachableTargetError
        Even one step exceeds the budget (the message gives epsilon of one step).
    CalibrationError
        Every count the search reaches (1e13) meets the budget (a huge
        ``noise_multiplier``); the message names it.

    Examples
    --------
    >>> max_steps(epsilon=1.0, delta=1e-5, noise_multiplier=10.0)
    7
    """
    eps = check_positive("epsilon", epsilon)
    delta = check_delta(delta, what="DP-SGD (a subsampled Gaussian)")
    sigma = check_positive("noise_multiplier", noise_multiplier)
    q = check_sample_rate(sample_rate)
    step = poisson_subsample(GaussianMechanism(sigma=sigma), q)

    try:
        res = calibrate(
            lambda n: compose([step], counts=[n]),
            eps,
            delta,
            interval=(1, 10),
            integer=True,
            increasing=True,
            estimate=_estimate_steps(sigma, q, delta),
            tol=tol,
            name="steps",
            progress=progress,
        )
    except UnreachableTargetError:
        raise
    except CalibrationError as exc:
        # every count the search reaches meets the budget: say which parameter makes
        # the run that cheap (the generic 'pass a wider interval' is not an option here)
        raise CalibrationError(
            f"noise_multiplier={sigma!r} at sample_rate={q!r} keeps every step count up to "
            f"{exc.searched[1]:.6g} within epsilon={eps!r} at delta={delta!r}: the largest "
            "count lies beyond the search (use a smaller noise_multiplier or a budget "
            "that binds)",
            reachable=exc.reachable,
            searched=exc.searched,
        ) from None
    return res if full_output else int(res.parameter)


def max_sample_rate(
    epsilon: float,
    delta: float,
    noise_multiplier: float,
    steps: int,
    *,
    rtol: float = DEFAULT_RTOL,
    tol: float | None = None,
    full_output: bool = False,
    progress: bool | None = None,
) -> float | Calibration:
    """The largest Poisson sampling rate that keeps ``steps`` DP-SGD steps within budget.

    Returns 1.0 when even full batches meet the budget.

    Parameters
    ----------
    epsilon, delta : float
        Target, epsilon > 0 and delta in (0, 1).
    noise_multiplier : float
        Noise multiplier sigma, > 0.
    steps : int
        Number of steps, >= 1.
    rtol, tol, full_output, progress
        As in :func:`noise_multiplier`.

    Examples
    --------
    >>> q = max_sample_rate(epsilon=3.0, delta=1e-5, noise_multiplier=1.0, steps=1_000)
    >>> bool(3.0 * (1 - 5e-5) <= dpsgd_mechanism(1.0, q, 1_000).epsilon(1e-5) <= 3.0)
    True
    >>> max_sample_rate(epsilon=3.0, delta=1e-5, noise_multiplier=50.0, steps=10)
    1.0
    """
    eps = check_positive("epsilon", epsilon)
    delta = check_delta(delta, what="DP-SGD (a subsampled Gaussian)")
    sigma = check_positive("noise_multiplier", noise_multiplier)
    n = check_count(steps, "steps")
    base = GaussianMechanism(sigma=sigma)

    res = calibrate(
        lambda q: compose([poisson_subsample(base, q)], counts=[n]),
        eps,
        delta,
        interval=(0.01, 0.1),
        rtol=rtol,
        domain=(0.0, 1.0),
        increasing=True,
        estimate=_estimate_rate(sigma, n, delta),
        tol=tol,
        name="sample_rate",
        progress=progress,
    )
    return res if full_output else float(res.parameter)


def get_noise_multiplier(
    target_epsilon: float,
    target_delta: float,
    sample_rate: float,
    epochs: float | None = None,
    steps: int | None = None,
    accountant: str | None = None,
    epsilon_tolerance: float | None = None,
) -> float:
    """:func:`noise_multiplier` with the signature of ``opacus.accountants.utils``.

    Parameters
    ----------
    target_epsilon, target_delta : float
        The privacy target.
    sample_rate : float
        Poisson sampling rate (batch size / dataset size).
    epochs : float, optional
        Passes over the data; ``steps = epochs / sample_rate`` rounded down as in opacus
        (forgiving floating-point error, see :func:`steps_from_epochs`).
    steps : int, optional
        Number of steps (instead of ``epochs``).
    accountant : str, optional
        Accepted for compatibility (``"rdp"``, ``"prv"``, ``"gdp"``, ``"pld"``) and
        otherwise ignored: dpacct always uses its tightest *sound* accountant.  (Note
        that opacus's ``"gdp"`` is an approximation, not a bound.)
    epsilon_tolerance : float, optional
        Absolute tolerance on epsilon as in opacus (its default is 0.01); default here
        is the relative tolerance (5e-5) of :func:`noise_multiplier`.

    Returns
    -------
    float
        The noise multiplier; epsilon reached is within ``[target - tolerance, target]``.

    Examples
    --------
    >>> sigma = get_noise_multiplier(target_epsilon=3.0, target_delta=1e-5,
    ...                               sample_rate=0.01, steps=10_000)
    >>> round(sigma, 2)
    1.57
    """
    if accountant is not None and accountant not in ("rdp", "prv", "gdp", "pld"):
        raise ValueError(
            f"accountant must be one of 'rdp', 'prv', 'gdp', 'pld' or None, got {accountant!r}"
        )
    eps = check_positive("target_epsilon", target_epsilon)
    delta = check_delta(target_delta, "target_delta", what="DP-SGD (a subsampled Gaussian)")
    q = check_sample_rate(sample_rate)
    rtol = DEFAULT_RTOL
    if epsilon_tolerance is not None:
        tol_abs = check_positive("epsilon_tolerance", epsilon_tolerance)
        rtol = min(tol_abs / eps, 0.49)
    return float(noise_multiplier(eps, delta, q, steps, epochs=epochs, rtol=rtol))
