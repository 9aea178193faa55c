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

``eps`` is the base mechanism's (sound) RDP curve.  The base curve is evaluated *once*,
on the fixed orders :data:`ORDERS` (a superset of dp_accounting's default RDP orders,
about 180 of them, integers above 64 so that series-based curves stay cheap), and only
its trusted part (:func:`~dpacct.accountant.rdp.conversion.trusted_prefix`: up to its
first decrease) is used.  ``lamhat`` is minimised over those orders, then over two
finer vectorised grids around the best one and a parabolic step (every ``lamhat`` gives
a valid bound, so the search affects tightness only); ``gamma`` is rounded down (the
bound grows as ``gamma`` falls) and the computed bounds are rounded up by ``2^-48``
relative.  ``deltahat`` (Theorem 6) is the smaller of two sound upper bounds on the
base's delta: its own (exact curve, or pessimistic privacy-loss distribution) and the
RDP conversion of its values at :data:`ORDERS`.  As RDP is non-decreasing in the order,
a bound at an order ``>= lam`` also holds at ``lam``: the curve returned at the orders
of one call is the running minimum, from the top, of the bounds at those orders and at
:data:`ORDERS`, so it is non-decreasing over every call.  The argument in full:
docs/theory/algorithms.md, section 'dp_accounting events'.
"""

from __future__ import annotations

import math

import numpy as np

from ..mechanism import Mechanism
from ..pld.pld_settings import DEFAULT_TOL, SCREEN_ERR_TAILS, PLDSettings
from ..rdp.conversion import _log_delta_from, trusted_prefix
from ..validation import _as_real

__all__ = ["repeat_and_select"]

#: the orders at which the base curve is evaluated: near 1, dp_accounting's default RDP
#: orders (``1 + x/10`` for x = 1..99, 11..63, 128, 256, 512, 1024), integer orders at
#: ratio about 2^(1/4) from 64 to 1024, then 2048 and 4096 (a series-based curve costs
#: about the order at each large order; larger orders are asked only where needed)
ORDERS = np.unique(
    np.concatenate(
        [
            1.0 + np.geomspace(1e-3, 0.1, 11)[:-1],
            1.0 + np.arange(1, 100) / 10.0,
            np.arange(11.0, 64.0),
            np.round(64.0 * 2.0 ** (np.arange(0, 17) / 4.0)),
            np.array([2048.0, 4096.0]),
        ]
    )
)

#: the PLD tolerance of the base's delta in Theorem 6 (``None``: the default, 1e-4).  The
#: bound adds ``mean * deltahat``, so deltahat's accuracy is multiplied by the mean: at
#: tolerance 0.1 the Poisson law of 1 000 subsampled Gaussians (mean 3) is about twice as
#: fast, but a composition of a Gaussian and a Laplace at mean 100 comes out 0.26 % looser
#: than on the default grid.  Every grid gives a sound upper bound.
_DELTAHAT_TOL: float | None = None

#: relative slack added to a computed constant term (a few ulps of its float evaluation)
_ROUND_UP = 1.0 + 2.0**-48


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


def _base_rdp(mechanism: Mechanism, alpha: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(mechanism.rdp(alpha), dtype=float).reshape(alpha.shape)


def _checked_rdp(mechanism: Mechanism, alpha: np.ndarray, a: np.ndarray, r: np.ndarray):
    """The base curve at ``alpha`` (within the trusted orders ``a``, values ``r``); NaN
    where it is NaN or falls below the value at the largest trusted order ``<= alpha``
    (a decrease: not trusted, as in :func:`trusted_prefix`)."""
    rf = _base_rdp(mechanism, alpha)
    k = np.searchsorted(a, alpha, side="right") - 1
    below = np.where(k >= 0, r[np.maximum(k, 0)], -np.inf)
    floor = below - 1e-10 * np.abs(below)
    return np.where(rf >= floor, rf, np.nan)


def _deltahat(mechanism: Mechanism, a: np.ndarray, r: np.ndarray):
    """``epsilon -> delta`` of the base mechanism for Theorem 6: the smaller of two sound
    upper bounds, the RDP conversion of the base's values ``r`` at the orders ``a``
    (Canonne, Kamath & Steinke 2020, Proposition 12, with its float allowance) and the
    base's own delta: its exact curve, or else its pessimistic privacy-loss distribution
    at tolerance ``_DELTAHAT_TOL`` (built once, then read at every epsilon asked), or else its
    RDP route."""
    base = mechanism.privacy
    pair = None
    if not base.has_exact_curve and base.has_pld:
        # the add direction is screened by the swapped remove curve and a coarse add PLD
        # (tol 0.1); the add PLD on the pair's settings is composed only where neither
        # is at or below the remove curve (PLDPair.delta), so deltahat is never above
        # the pair's max(remove, add)
        coarse = PLDSettings(max(_DELTAHAT_TOL or DEFAULT_TOL, 0.1)).screening(SCREEN_ERR_TAILS)
        pair = base._pair(True, PLDSettings(_DELTAHAT_TOL), coarse)

    def deltahat(eps: np.ndarray) -> np.ndarray:
        log_d = _log_delta_from(r[None, :], a[None, :], eps[:, None])
        out = np.minimum(1.0, np.exp(np.minimum(np.min(log_d, axis=1), 0.0)) * (1.0 + 1e-12))
        own = pair.delta(eps) if pair is not None else base.delta(eps)
        return np.minimum(out, np.asarray(own, dtype=float).reshape(eps.shape))

    return deltahat


def _min_lamhat(
    mechanism: Mechanism, a: np.ndarray, r: np.ndarray, log_inv_gamma: float, limit: float
) -> float:
    """``min over lamhat > 1 of (1 - 1/lamhat) eps(lamhat) + log(1/gamma)/lamhat``.

    Over the trusted orders ``a`` (values ``r``), then two vectorised grids of 33 orders
    spread over the two cells around the best (in ``u = log(lamhat - 1)``; each shrinks
    the bracket 16-fold), then the vertex of the parabola through the best and its two
    neighbours in ``u``.  Every ``lamhat`` gives a valid bound, so the search affects
    tightness only; a refined order whose value is NaN or below the curve's trusted part
    is ignored.  Three calls of the base curve in all, and while the best order is the
    largest one tried, orders doubling beyond it (below ``limit``, the first order at
    which the base curve was not trusted) up to ``2^60`` times it.
    """

    def hat(lam: np.ndarray, rdp: np.ndarray) -> np.ndarray:
        val = (1.0 - 1.0 / lam) * rdp + log_inv_gamma / lam
        return np.where(np.isnan(val), np.inf, val)

    def add(lam, val, new):
        new = new[(new > 1.0) & (new < limit)]
        lam = np.concatenate([lam, new])
        val = np.concatenate([val, hat(new, _checked_rdp(mechanism, new, a, r))])
        order = np.lexsort((val, lam))
        lam, val = lam[order], val[order]
        first = np.concatenate([[True], lam[1:] != lam[:-1]])
        return lam[first], val[first]

    lam, val = a, hat(a, r)
    if int(np.argmin(val)) == val.size - 1 and math.isfinite(float(val[-1])):
        lam, val = add(lam, val, float(a[-1]) * 2.0 ** np.arange(1.0, 61.0))
    for _ in range(2):
        i = int(np.argmin(val))
        u = np.log(lam - 1.0)
        lo, hi = u[max(i - 1, 0)], u[min(i + 1, u.size - 1)]
        lam, val = add(lam, val, 1.0 + np.exp(np.linspace(lo, hi, 33)))
    i = int(np.argmin(val))
    if 0 < i < lam.size - 1 and np.all(np.isfinite(val[i - 1 : i + 2])):
        u = np.log(lam[i - 1 : i + 2] - 1.0)
        v = val[i - 1 : i + 2]
        # vertex of the parabola through (u_j, v_j), j = i-1, i, i+1
        d1, d2 = (v[1] - v[0]) / (u[1] - u[0]), (v[2] - v[1]) / (u[2] - u[1])
        curv = (d2 - d1) / (u[2] - u[0])
        if curv > 0.0:
            vertex = 0.5 * (u[0] + u[1]) - d1 / (2.0 * curv)
            if u[0] < vertex < u[2]:
                lam, val = add(lam, val, np.array([1.0 + math.exp(vertex)]))
    return float(np.min(val))


def repeat_and_select(mechanism: Mechanism, mean: float, shape: float) -> Mechanism:
    """Run ``mechanism`` a random number of times and release the best run's output.

    The Renyi-DP bounds of Papernot & Steinke 2022 (module docstring: Theorem 2 for the
    truncated negative binomial laws, Theorem 6 for the Poisson law), applied to the
    base mechanism's RDP curve; epsilon and delta follow by the RDP conversion.  This is
    dp_accounting's ``RepeatAndSelectDpEvent(event, mean, shape)``.  The base curve is
    evaluated once, here, at about 180 orders; the returned curve then costs one base
    evaluation per call (and, for the Poisson law, one read of the base's PLD, built at
    construction).

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
    raw = _base_rdp(mechanism, ORDERS)
    a, r = trusted_prefix(ORDERS, raw)
    # the first order from which the base curve is not trusted (inf: none)
    finite = ORDERS[~np.isnan(raw)]
    limit = float(finite[a.size]) if a.size < finite.size else math.inf
    if a.size == 0:  # no finite trusted order: nothing is certified
        return Mechanism.from_rdp(
            lambda alpha: np.full(np.shape(alpha), np.inf),
            name=f"repeat_and_select({mechanism!r}, mean={mu!r}, shape={eta!r})",
            neighbouring=mechanism.neighbouring,
        )
    if math.isinf(eta):  # Theorem 6
        deltahat = _deltahat(mechanism, a, r)

        def bound_at(lam: np.ndarray, rdp: np.ndarray) -> np.ndarray:
            extra = mu * deltahat(np.log1p(1.0 / (lam - 1.0))) + log_mean / (lam - 1.0)
            return (rdp + extra) * _ROUND_UP

    else:  # Theorem 2, lamhat minimised over the orders and refined
        log_inv_gamma = -math.log(tnb_gamma(eta, mu))
        const = (1.0 + eta) * _min_lamhat(mechanism, a, r, log_inv_gamma, limit) * _ROUND_UP

        def bound_at(lam: np.ndarray, rdp: np.ndarray) -> np.ndarray:
            return (rdp + log_mean / (lam - 1.0)) * _ROUND_UP + const

    on_grid = bound_at(a, r)
    on_grid = np.where(np.isnan(on_grid), np.inf, on_grid)
    # RDP is non-decreasing in the order: a bound at any order >= alpha holds at alpha
    envelope = np.minimum.accumulate(on_grid[::-1])[::-1]

    def curve(alpha: np.ndarray) -> np.ndarray:
        q = np.asarray(alpha, dtype=float)
        flat = q.reshape(-1)
        idx = np.searchsorted(a, flat, side="left")
        env = np.where(idx < a.size, envelope[np.minimum(idx, a.size - 1)], np.inf)
        # the bound at the asked orders themselves (below the first untrusted order),
        # then the running minimum from the top over the asked orders: non-decreasing
        ok = (flat > 1.0) & (flat < limit)
        own = np.full(flat.shape, np.inf)
        if ok.any():
            at = flat[ok]
            own[ok] = bound_at(at, _checked_rdp(mechanism, at, a, r))
        own = np.where(np.isnan(own), env, np.minimum(own, env))
        order = np.argsort(flat, kind="stable")
        run = np.minimum.accumulate(own[order][::-1])[::-1]
        out = np.empty_like(run)
        out[order] = run
        return out.reshape(q.shape)

    name = f"repeat_and_select({mechanism!r}, mean={mu!r}, shape={eta!r})"
    return Mechanism.from_rdp(curve, name=name, neighbouring=mechanism.neighbouring)
