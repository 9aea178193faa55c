"""Repeat-and-select for private hyperparameter tuning: the best of a random number of runs.

Papernot & Steinke 2022, "Hyperparameter Tuning with Renyi Differential Privacy" (ICLR;
arXiv:2110.03620).  The number of runs ``K`` has mean ``mean`` and is drawn from

* a truncated negative binomial law of shape ``eta = shape`` (``0 < shape < inf``; the
  geometric law is ``shape = 1`` and the logarithmic law ``shape = 0``), whose halting
  probability ``gamma`` follows from the mean (their Definition 1):
  ``E[K] = eta (1 - gamma) / (gamma (1 - gamma^eta))`` (``(1 - gamma)/(gamma log(1/gamma))``
  at ``eta = 0``).  Their Theorem 2: for all orders ``lam > 1`` and ``lamhat > 1``,
  ``eps'(lam) <= eps(lam) + (1 + eta)(1 - 1/lamhat) eps(lamhat)
  + (1 + eta) log(1/gamma)/lamhat + log(E[K])/(lam - 1)``;
* a Poisson law (``shape = inf``).  Their Theorem 6:
  ``eps'(lam) <= eps(lam) + mean * deltahat + log(mean)/(lam - 1)``, where the base
  mechanism is ``(epshat, deltahat)``-DP at ``epshat = log(1 + 1/(lam - 1))``.

``eps`` is the base mechanism's (sound) RDP curve.  ``lamhat`` is minimised over a fixed
grid (every ``lamhat`` gives a valid bound), ``gamma`` is rounded down (the bound grows as
``gamma`` falls), and as RDP is non-decreasing in the order, the bound at ``lam`` is also
the smallest bound at any order ``>= lam`` on that grid (``1 + 10^-3 .. 1 + 10^4``, 1 000
orders; for the Poisson law only that envelope, a non-decreasing step function).
"""

from __future__ import annotations

import math

import numpy as np

from ..mechanism import Mechanism
from ..validation import _as_real

__all__ = ["repeat_and_select"]

#: the orders lamhat minimised over, and above a query order for the monotone envelope
_GRID = 1.0 + np.geomspace(1e-3, 1e4, 1000)


def _tnb_mean(gamma: float, shape: float) -> float:
    """Mean of the truncated negative binomial law (Papernot & Steinke 2022, Def. 1)."""
    log_inv = -math.log(gamma)
    u = -shape * log_inv  # shape * log(gamma) <= 0
    ratio = 1.0 if u == 0.0 else math.expm1(u) / u  # (gamma^eta - 1) / (eta log gamma)
    if gamma == 1.0:
        return 1.0
    return -math.expm1(-log_inv) / gamma / (log_inv * ratio)


def tnb_gamma(shape: float, mean: float) -> float:
    """The halting probability ``gamma`` of the law with this mean, rounded down."""
    if mean == 1.0:
        return 1.0
    if shape == 1.0:
        return 1.0 / mean * (1.0 - 2.0**-52)
    lo, hi = 0.0, 1.0  # the mean falls from inf (gamma -> 0) to 1 (gamma = 1)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if _tnb_mean(mid, shape) < mean:
            hi = mid
        else:
            lo = mid
    return lo


def repeat_and_select(mechanism: Mechanism, mean: float, shape: float) -> Mechanism:
    """Run ``mechanism`` a random number of times and release the best run's output.

    The Renyi-DP bounds of Papernot & Steinke 2022 (module docstring: Theorem 2 for the
    truncated negative binomial laws, Theorem 6 for the Poisson law), applied to the
    base mechanism's RDP curve; epsilon and delta follow by the RDP conversion.  This is
    dp_accounting's ``RepeatAndSelectDpEvent(event, mean, shape)``.

    Parameters
    ----------
    mechanism : Mechanism
        One run; it must have a Renyi-DP curve.
    mean : float
        Mean number of runs ``E[K]``, finite and >= 1.
    shape : float
        ``0`` logarithmic, ``1`` geometric, ``0 < shape < inf`` truncated negative
        binomial, ``inf`` Poisson; >= 0.

    Returns
    -------
    Mechanism
        A mechanism known by its RDP curve, under the base mechanism's relation.

    Examples
    --------
    >>> from dpacct.accountant import GaussianMechanism
    >>> tuned = repeat_and_select(GaussianMechanism(sigma=4.0), mean=10.0, shape=1.0)
    >>> round(float(tuned.epsilon(1e-6)), 3)  # dp_accounting's RDP accountant: 2.272
    2.271
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a dpacct Mechanism, got {type(mechanism).__name__}")
    mu = _as_real("mean", mean)
    if not (math.isfinite(mu) and mu >= 1.0):
        raise ValueError(f"mean must be a finite number >= 1 (the mean number of runs), got {mu!r}")
    eta = _as_real("shape", shape)
    if math.isnan(eta) or eta < 0.0:
        raise ValueError(f"shape must lie in [0, inf] (inf: Poisson), got {eta!r}")
    if not mechanism.has_rdp:
        raise ValueError(
            f"repeat_and_select needs the base mechanism's Renyi-DP curve; {mechanism!r} has none"
        )
    log_mean = math.log(mu)
    poisson = math.isinf(eta)
    if poisson:  # Theorem 6

        def bound(a: np.ndarray) -> np.ndarray:
            epshat = np.log1p(1.0 / (a - 1.0))
            deltahat = np.asarray(mechanism.delta(epshat.reshape(-1)), dtype=float)
            extra = mu * deltahat.reshape(a.shape) + log_mean / (a - 1.0)
            return np.asarray(mechanism.rdp(a), dtype=float) + extra

    else:  # Theorem 2, lamhat minimised over the grid
        log_inv_gamma = -math.log(tnb_gamma(eta, mu))

        def hat(lam: np.ndarray) -> np.ndarray:
            rdp = np.asarray(mechanism.rdp(lam), dtype=float)
            return (1.0 - 1.0 / lam) * rdp + log_inv_gamma / lam

        on_grid = hat(_GRID)
        best = int(np.argmin(on_grid))
        # every lamhat gives a valid bound: refine between the grid's neighbours
        lo, hi = (
            np.log(_GRID[max(best - 1, 0)] - 1.0),
            np.log(_GRID[min(best + 1, _GRID.size - 1)] - 1.0),
        )
        from scipy import optimize  # here, not at import: start-up (issue 37)

        fine = optimize.minimize_scalar(
            lambda u: float(hat(np.array([1.0 + math.exp(u)]))[0]),
            bounds=(lo, hi),
            method="bounded",
            options={"xatol": 1e-10},
        )
        const = (1.0 + eta) * min(float(on_grid[best]), float(fine.fun))

        def bound(a: np.ndarray) -> np.ndarray:
            return np.asarray(mechanism.rdp(a), dtype=float) + log_mean / (a - 1.0) + const

    # RDP is non-decreasing in the order: a bound at any order >= alpha holds at alpha
    suffix_min = np.minimum.accumulate(bound(_GRID)[::-1])[::-1]

    def curve(alpha: np.ndarray) -> np.ndarray:
        a = np.asarray(alpha, dtype=float)
        idx = np.searchsorted(_GRID, a, side="left")
        above = np.where(idx < _GRID.size, suffix_min[np.minimum(idx, _GRID.size - 1)], np.inf)
        # Poisson: the grid envelope alone (its bound at lam itself dips between grid
        # orders, and a curve that decreases is trusted only below the dip)
        return above if poisson else np.minimum(bound(a), above)

    name = f"repeat_and_select({mechanism!r}, mean={mu!r}, shape={eta!r})"
    return Mechanism.from_rdp(curve, name=name, neighbouring=mechanism.neighbouring)
