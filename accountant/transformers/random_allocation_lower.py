"""Random allocation checked from below: a certified lower bound and a Monte Carlo estimate.

* :func:`random_allocation_lower_epsilon` -- the epsilon of one attack (the target's
  gradient a unit vector, everyone else's zero, the adversary reading the largest noisy
  coordinate of the epoch, binned): a post-processing of the mechanism's pair, so a
  certified lower bound;
* :func:`random_allocation_delta_mc` -- a Monte Carlo estimate of the exact ``k = 1``
  curve, with a confidence interval and no guarantee.

Both are re-exported by :mod:`~dpacct.accountant.transformers.random_allocation`, whose docstring
states the mechanism and its upper bounds (docs/theory/allocation_shuffling.md).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..families.gaussian_dp import certified_gaussian_delta
from ..laws.loss_law import AtomicLossLaw
from ..mechanism import Capabilities, Mechanism
from ..numerics import logsumexp
from ..validation import check_count, check_delta, check_epsilon, check_positive, check_probability
from .compose import compose
from .random_allocation_sum_lower import (
    SUM_MIN_SIGMA,
    _atomic_epsilon_lower,
    _shared,
    sum_statistic_lower_epsilon,
)

__all__ = [
    "gaussian_epsilon_is_zero",
    "random_allocation_delta_mc",
    "random_allocation_lower_epsilon",
]


def gaussian_epsilon_is_zero(mu: float, delta: float) -> bool:
    """True when ``N(mu, 1)`` against ``N(0, 1)`` has epsilon 0 at ``delta``.

    That is when ``delta`` is at least the pair's total variation
    ``2 Phi(mu / 2) - 1 = erf(mu / (2 sqrt 2))`` (its delta at epsilon 0), bounded above
    by :func:`~dpacct.accountant.families.gaussian_dp.certified_gaussian_delta` (the
    curve every Gaussian's ``delta()`` answers).  Any run dominated by that pair (at most
    ``mu^2 sigma^2`` unamplified unit steps) then has epsilon 0 too, which answers
    ``sigma = 1e6`` or ``1e308`` at once, where the amplification routes would take
    seconds or overflow.

    Examples
    --------
    >>> gaussian_epsilon_is_zero(1e-7, 1e-6), gaussian_epsilon_is_zero(1.0, 1e-6)
    (True, False)
    """
    return bool(certified_gaussian_delta(mu, np.zeros(1))[0] <= delta)


#: relative error allowed per unit of a log-CDF value (a few hundred ulps: scipy's
#: ``log_ndtr`` is accurate to a few ulps, the products and ``log1mexp`` add a few more)
_LOG_ULPS = 1e-13


def _log1mexp(x: np.ndarray) -> np.ndarray:
    """``log(1 - e^x)`` for ``x <= 0``, accurate near 0 and for very negative ``x``."""
    x = np.minimum(x, 0.0)
    with np.errstate(divide="ignore"):
        return np.where(x > -math.log(2.0), np.log(-np.expm1(x)), np.log1p(-np.exp(x)))


def _log_max_cdf_sf(z: np.ndarray, shifts: tuple[float, ...], counts: tuple[int, ...]):
    """``log F`` and ``log(1 - F)`` of ``max`` of independent ``N(shift_j, 1)``, ``counts_j`` each.

    ``1 - F`` comes from the survival functions, not from ``1 - F``: where every factor's
    upper tail is below ``1e-200`` it is their sum (relative error below ``1e-190``,
    the inclusion-exclusion remainder), elsewhere ``log(1 - exp(log F))`` with ``log F``
    built from ``log_ndtr`` (accurate, since then ``1 - F`` is not below ``1e-200``).
    """
    log_f = sum(c * special.log_ndtr(z - s) for s, c in zip(shifts, counts, strict=True))
    log_tails = [math.log(c) + special.log_ndtr(s - z) for s, c in zip(shifts, counts, strict=True)]
    tail_sum = logsumexp(np.stack(log_tails), axis=0)
    log_sf = np.where(tail_sum < -460.0, tail_sum, _log1mexp(log_f))
    return log_f, log_sf


def _log_bin_masses(log_f: np.ndarray, log_sf: np.ndarray):
    """Log-masses of ``(-inf, z_0], (z_0, z_1], ..., (z_B, inf)`` and their error bounds.

    A bin's mass is ``F(b) - F(a)`` where ``F(b) <= 1/2`` and ``S(a) - S(b)`` otherwise
    (``S = 1 - F``), each as ``log`` of the larger plus ``log1mexp`` of the difference of
    logs: no cancellation near 1, no underflow in the tails.  The returned bound ``eta``
    on the absolute error of each log-mass is ``_LOG_ULPS (1 + |log a| + |log b|)`` for
    the two logs, plus that error over ``|log a - log b|`` for ``log1mexp`` (its
    derivative is at most ``1 / |x|``).
    """
    lf_a, lf_b = log_f[:-1], log_f[1:]
    ls_a, ls_b = log_sf[:-1], log_sf[1:]
    use_cdf = lf_b <= -math.log(2.0)
    hi = np.where(use_cdf, lf_b, ls_a)
    lo = np.where(use_cdf, lf_a, ls_b)
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = lo - hi  # <= 0 (NaN where both are -inf: an empty bin, eta = inf below)
        err = _LOG_ULPS * (1.0 + np.abs(hi) + np.where(np.isfinite(lo), np.abs(lo), 0.0))
        inner = hi + _log1mexp(gap)
        eta = err + np.where(gap < 0, 2.0 * err / np.abs(gap), np.inf)
    log_m = np.concatenate([[log_f[0]], inner, [log_sf[-1]]])
    e0 = _LOG_ULPS * (1.0 + abs(log_f[0]))
    e1 = _LOG_ULPS * (1.0 + abs(log_sf[-1]))
    eta = np.concatenate([[e0], eta, [e1]])
    return log_m, eta


def _max_test_laws(sigma: float, steps: int, bins: int = 4000, k: int = 1):
    """Loss laws ``(remove, add)`` of the binned largest coordinate, rounded to lower-bound.

    The statistic is ``max_j x_j / sigma`` of one epoch's ``T`` coordinates, binned at
    ``bins + 1`` edges in ``[-1, 9 + 1/sigma]``; ``Q`` (record absent) is the law of the
    largest of ``T`` standard normals, ``P`` (record in one uniform step) of the largest
    of ``N(1/sigma, 1)`` and ``T - 1`` standard normals (``k`` of ``N(1/sigma, 1)`` and
    ``T - k`` standard normals when the record is in ``k`` steps).  Masses are computed in log
    space (:func:`_log_bin_masses`) and rounded outward by their error bound ``eta``:
    in each direction the numerator's masses down (``e^{-eta}``), the denominator's up
    (``e^{+eta}``).  This is the safe way for a lower bound: pointwise
    ``(p'_i - e^eps q'_i)_+ <= (p_i - e^eps q_i)_+`` when ``p' <= p`` and ``q' >= q``, so
    every hockey-stick divergence, and hence epsilon, of the rounded pair is at most the
    binned pair's; products of such measures keep both inequalities, so composed epochs do
    too.  Losses are differences of log-masses, so no mass underflows into an infinite
    loss; an atom whose numerator underflows to 0 is dropped (rounded down to 0).
    """
    mu = 1.0 / sigma  # the record's mean in units of sigma (0 when sigma is huge)
    z = np.linspace(-1.0, 9.0 + mu, bins + 1)
    lq_f, lq_s = _log_max_cdf_sf(z, (0.0,), (steps,))
    if steps > k:
        lp_f, lp_s = _log_max_cdf_sf(z, (mu, 0.0), (k, steps - k))
    else:
        lp_f, lp_s = _log_max_cdf_sf(z, (mu,), (k,))
    log_q, eta_q = _log_bin_masses(lq_f, lq_s)
    log_p, eta_p = _log_bin_masses(lp_f, lp_s)

    def law(log_num, eta_num, log_den, eta_den):
        with np.errstate(invalid="ignore"):
            num = log_num - eta_num  # rounded down
            den = log_den + eta_den  # rounded up (NaN where unknown: the atom is dropped)
        mass = np.exp(num)
        keep = (mass > 0) & np.isfinite(den)
        return AtomicLossLaw(losses=num[keep] - den[keep], p=mass[keep])

    return law(log_p, eta_p, log_q, eta_q), law(log_q, eta_q, log_p, eta_p)


class _MaxTestPair(Mechanism):
    """The binned largest-coordinate statistic of one allocation epoch (k = 1),
    with masses rounded for a lower bound (:func:`_max_test_laws`)."""

    declares = Capabilities(loss_laws=True)

    def __init__(self, sigma: float, steps: int, bins: int = 4000, k: int = 1) -> None:
        self._laws = _max_test_laws(sigma, steps, bins, k)

    def _loss_laws(self):
        return self._laws


def random_allocation_lower_epsilon(
    sigma: float, steps: int, delta: float, *, epochs: int = 1, k: int = 1
) -> float:
    """Certified lower bound on epsilon of random allocation, from one attack.

    The attack (Chua et al. 2024, "How private are DP-SGD implementations?", Section 4:
    a unit gradient for the target, zero for everyone else) observes, per epoch, the
    largest of the ``T`` noisy coordinates, binned.  Its pair is a post-processing of
    the mechanism's, so its epsilon -- taken at the lower end of the engine's certified
    bracket after composing the epochs -- is below the mechanism's.  The bins' masses
    are computed in log space (upper tails from survival functions) and rounded by
    their error bound in the safe direction for a lower bound: the numerator of each
    direction down, the denominator up (:func:`_max_test_laws`), so every
    hockey-stick divergence of the rounded pair is at most the binned pair's.  One
    epoch (and any ``sigma < 1e-4``, whose losses are too wide for a grid: then one
    epoch bounds them all) is read exactly off the rounded atoms
    (:func:`_atomic_epsilon_lower`); several epochs are composed by the PLD engine.

    Parameters
    ----------
    sigma : float
        Noise multiplier of each step, > 0.
    steps : int
        Steps per epoch ``T``, >= 1.
    delta : float
        Target delta, in (0, 1).
    epochs : int, default 1
        Epochs composed, >= 1.
    k : int, default 1
        Steps per record per epoch, ``1 <= k <= steps``.

    Examples
    --------
    >>> lo = random_allocation_lower_epsilon(1.0, 100, 1e-6)
    >>> bool(0.5 < lo < 2.5)
    True
    """
    s = check_positive("sigma", sigma)
    t = check_count(steps, "steps")
    e = check_count(epochs, "epochs")
    d = check_delta(delta)
    kk = check_count(k, "k")
    if kk > t:
        raise ValueError(f"k must be <= steps ({t}), got {kk}")
    if kk > 1:
        best = _max_test_lower(s, t, d, e, kk)
        if kk < t and s >= SUM_MIN_SIGMA:
            best = max(best, sum_statistic_lower_epsilon(s, t, d, k=kk, epochs=e))
        return best
    return _max_test_lower(s, t, d, e, 1)


def _max_test_lower(s: float, t: int, d: float, e: int, k: int) -> float:
    """The largest-coordinate attack's certified lower bound (checked arguments).

    Shared inside a
    :func:`~dpacct.accountant.transformers.random_allocation_sum_lower.shared_lower_bounds`
    block."""
    return _shared(("max", s, t, d, e, k), lambda: _max_test_lower_computed(s, t, d, e, k))


def _max_test_lower_computed(s: float, t: int, d: float, e: int, k: int) -> float:
    """:func:`_max_test_lower` computed."""
    if e == 1 or s < _ENGINE_SIGMA:
        # one epoch's pair read exactly (no PLD grid: tighter, and below _ENGINE_SIGMA
        # the losses reach ~1 / sigma^2, too wide for a grid); with several epochs it is
        # a lower bound on all of them (the other epochs only add loss)
        return max(_atomic_epsilon_lower(law, d) for law in _max_test_laws(s, t, k=k))
    pair = _MaxTestPair(s, t, k=k)
    run = compose([pair], counts=[e]) if e > 1 else pair
    return float(run.epsilon_bounds(d)[0])


#: below this sigma the lower bound reads one epoch's atoms directly (no PLD grid)
_ENGINE_SIGMA = 1e-4


def random_allocation_delta_mc(
    sigma: float,
    steps: int,
    epsilon: float | list[float] | np.ndarray,
    *,
    epochs: int = 1,
    samples: int = 200_000,
    rng: np.random.Generator,
    confidence: float = 0.99,
    direction: str = "remove",
) -> tuple[float, float, float] | tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Monte Carlo *estimate* of delta(epsilon) of one direction (k = 1); no guarantee.

    ``direction="remove"`` samples the exact privacy loss
    ``L = sum_epochs log((1/T) sum_j e^{(x_j - 1/2)/sigma^2})`` under ``P`` (record in a
    uniform step; Chua et al. 2025, Section 4); ``direction="add"`` samples
    ``L = -sum_epochs log((1/T) sum_j e^{(x_j - 1/2)/sigma^2})`` under ``Q`` (record
    absent).  Either way the estimate averages ``(1 - e^{epsilon - L})_+``.  Returns
    ``(estimate, low, high)``, the interval from the normal approximation at
    ``confidence``; for several epsilons, one array each, from the same draws.

    Parameters
    ----------
    sigma : float
        Noise multiplier of each step, > 0.
    steps : int
        Steps per epoch ``T``, >= 1.
    epsilon : float or 1-D array of float
        The epsilon(s) at which delta is estimated, each >= 0; several are estimated
        from one set of draws.
    epochs : int, default 1
        Epochs composed, >= 1.
    samples : int, default 200_000
        Monte Carlo samples, >= 2 (an integral float such as ``2.0`` is accepted); the
        interval narrows like ``1/sqrt(samples)``.  When every sample is 0 the normal
        interval would be ``[0, 0]``: its upper end is then ``1 - (1 - confidence)^(1/n)``
        instead (exact for any variable in ``[0, 1]``, since ``P(X = 0) <= 1 - E X``).
    rng : numpy.random.Generator
        The source of randomness (required: the estimate is reproducible only from a
        seeded generator).
    confidence : float, default 0.99
        Coverage of the normal-approximation interval, in (0, 1).
    direction : {"remove", "add"}
        The neighbouring direction sampled.

    Examples
    --------
    >>> import numpy as np
    >>> est, lo, hi = random_allocation_delta_mc(1.0, 100, 1.0, samples=20_000,
    ...                                          rng=np.random.default_rng(0))
    >>> bool(0 <= lo <= est <= hi)
    True
    >>> est, lo, hi = random_allocation_delta_mc(1.0, 100, [0.5, 1.0], samples=20_000,
    ...                                          rng=np.random.default_rng(0))
    >>> bool(est[0] >= est[1])
    True
    """
    s = check_positive("sigma", sigma)
    t = check_count(steps, "steps")
    e = check_count(epochs, "epochs")
    several = isinstance(epsilon, list | tuple | np.ndarray)
    if several and np.ndim(epsilon) != 1:
        raise ValueError(f"epsilon must be a number or a 1-D array, got shape {np.shape(epsilon)}")
    epsilons = np.array(
        [check_epsilon(x, f"epsilon[{i}]") for i, x in enumerate(epsilon)]
        if several
        else [check_epsilon(epsilon)]
    )
    n = check_count(samples, "samples")
    if n < 2:
        raise ValueError(f"samples must be an integer >= 2 (the interval needs a spread), got {n}")
    confidence = check_probability("confidence", confidence)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {rng!r}")
    if direction not in ("remove", "add"):
        raise ValueError(f"direction must be 'remove' or 'add', got {direction!r}")
    shift, sign = (1.0, 1.0) if direction == "remove" else (0.0, -1.0)
    total = np.zeros(n)
    chunk = max(1, 2_000_000 // t)
    for _ in range(e):
        for start in range(0, n, chunk):
            m = min(chunk, n - start)
            x = rng.normal(0.0, s, size=(m, t))
            x[:, 0] += shift  # by symmetry the record's step can be the first
            y = (x - 0.5) / (s * s)
            total[start : start + m] += sign * (logsumexp(y, axis=1) - math.log(t))
    z = float(special.ndtri(0.5 + 0.5 * confidence))
    out = []
    for eps in epsilons:
        vals = -np.expm1(np.minimum(eps - total, 0.0))
        est = float(vals.mean())
        se = float(vals.std(ddof=1)) / math.sqrt(n)
        low, high = max(est - z * se, 0.0), est + z * se
        if float(vals.max()) == 0.0:  # no spread to estimate: the exact all-zero bound
            high = -math.expm1(math.log1p(-confidence) / n)
        out.append((est, low, high))
    if not several:
        return out[0]
    est_a, low_a, high_a = (np.array(col) for col in zip(*out, strict=True))
    return est_a, low_a, high_a
