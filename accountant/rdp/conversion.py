"""Conversions between Renyi DP and (epsilon, delta)-DP, and simple RDP curves.

The conversion from an RDP curve to (epsilon, delta) uses the improved bound of
Canonne, Kamath & Steinke 2020 ("The Discrete Gaussian for Differential Privacy",
Proposition 12; equivalently Balle et al. 2020, "Hypothesis Testing Interpretations and
Renyi Differential Privacy", Theorem 21):

    eps(delta) = min_{alpha > 1}  rdp(alpha) + log((alpha - 1) / alpha)
                                  - (log delta + log alpha) / (alpha - 1).

The minimum is taken over *real* orders: first on a fixed grid, then refined by
six successively finer grids around the best point.  Every order of a correct curve
gives a valid bound, so the optimiser only affects tightness, and the search is
deterministic (no dependence on a library's optimiser defaults).  A curve is used only
up to its first decrease (:func:`trusted_prefix`): the Renyi divergence is
non-decreasing in its order, so a decreasing curve has failed somewhere (typically in
floating point at huge orders) and its values there are refused, not trusted.
The argument in full: docs/theory/rdp.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..numerics import _log_expm1
from ..validation import check_alpha, check_delta, check_epsilon, check_positive

__all__ = [
    "pure_dp_rdp",
    "randomized_response_rdp",
    "rdp_to_delta",
    "rdp_to_delta_grid",
    "rdp_to_epsilon",
    "rdp_to_epsilon_at_orders",
    "trusted_prefix",
    "zcdp_rdp",
]

RdpCurve = Callable[[np.ndarray], np.ndarray]

#: orders of the initial grid search: real orders up to 64 (log-spaced in alpha - 1),
#: then integers up to 8192 (large real orders are costly for some curves and the
#: optimum there is flat)
_GRID = np.concatenate(
    [1.0 + np.geomspace(1e-4, 63.0, 49), np.array([64, 96, 128, 192, 256, 384, 512, 768,
                                                   1024, 1536, 2048, 3072, 4096, 6144, 8192])]
).astype(float)


#: a value below the running maximum of the values at smaller orders by more than this
#: relative amount is a *decrease*: the curve is not trusted from that order on.  Smaller
#: dips are round-off of a correct curve (a few ulps); they are lifted to the running
#: maximum, so no value below the curve's monotone part is ever used.
_DIP_RTOL = 1e-10


def _eps_from(r: np.ndarray, a: np.ndarray, log_delta: float) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        val = r + np.log1p(-1.0 / a) - (log_delta + np.log(a)) / (a - 1.0)
    return np.where(np.isnan(val), np.inf, val)


def _log_delta_from(r: np.ndarray, a: np.ndarray, eps) -> np.ndarray:
    # the bracket is a sum of terms of size |r| + eps + |log1p(-1/a)|, each off by an
    # ulp or two; multiplied by (a - 1) that round-off matters at large orders (at
    # alpha ~ 1e17 one ulp of r = 1 is e^10 in delta), so it is added, not ignored
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        log1p_a = np.log1p(-1.0 / a)
        err = 2.0**-50 * ((a - 1.0) * (np.abs(r) + eps + np.abs(log1p_a)) + np.log(a))
        val = (a - 1.0) * (r - eps + log1p_a) - np.log(a) + err
    return np.where(np.isnan(val), np.inf, val)


def _check_curve(rdp: object) -> RdpCurve:
    if not callable(rdp):
        raise TypeError(
            f"rdp must be a callable alpha -> RDP epsilon (vectorised), got "
            f"{type(rdp).__name__} {rdp!r}"
        )
    return rdp  # type: ignore[return-value]


def _evaluate(rdp: RdpCurve, alpha: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(rdp(np.asarray(alpha, dtype=float)), dtype=float).reshape(-1)


def _no_finite_order(rdp: RdpCurve) -> None:
    """Called when no order gave a finite bound: a curve of NaNs is an error, not inf."""
    raw = _evaluate(rdp, _GRID)
    if np.isnan(raw).all():
        raise ValueError("the RDP curve returned NaN at every order tried (1 < alpha <= 8192)")


def trusted_prefix(alpha: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The part of an RDP curve that can be trusted: up to its first decrease.

    The Renyi divergence is non-decreasing in its order (van Erven & Harremoes 2014,
    Theorem 3), so a sound RDP bound that *decreases* has gone wrong somewhere -- for
    instance a closed form that collapses in floating point at huge orders (the
    bounded-range curve of the exponential mechanism once dropped to 0 above
    ``alpha ~ 1e16 / epsilon``, and an optimiser that searches far orders found it).
    Nothing tells which side of the decrease is wrong, so:

    * orders from the first decrease on (a value below the running maximum of the
      values at smaller orders by more than ``1e-10`` relative) are dropped;
    * smaller dips (round-off of a correct curve) are lifted to that running maximum,
      so a kept value is never below what the curve certifies at a smaller order;
    * NaN values carry no information and are skipped.

    Parameters
    ----------
    alpha : numpy.ndarray
        Orders, sorted increasingly.
    values : numpy.ndarray
        The curve at those orders.

    Returns
    -------
    (alpha, values) : tuple of numpy.ndarray
        The trusted orders and their (lifted) values.

    Examples
    --------
    >>> a = np.array([2.0, 4.0, 8.0, 16.0])
    >>> trusted_prefix(a, np.array([0.1, 0.2, 0.0, 0.3]))   # 0.0 at alpha = 8: dropped
    (array([2., 4.]), array([0.1, 0.2]))
    """
    keep = ~np.isnan(values)
    a, r = alpha[keep], values[keep]
    if r.size == 0:
        return a, r
    run = np.maximum.accumulate(r)
    with np.errstate(invalid="ignore"):
        floor = np.where(np.isinf(run), run, run - _DIP_RTOL * np.abs(run))
    prev = np.concatenate([[-np.inf], floor[:-1]])
    drop = np.flatnonzero(r < prev)
    n = int(drop[0]) if drop.size else r.size
    return a[:n], run[:n]


class _Record:
    """Every (order, value) evaluated so far, restricted to the trusted orders.

    Each evaluation (one call of the curve) is checked on its own by
    :func:`trusted_prefix`; the first decrease in any call ends the usable range for
    good.  Calls are not compared with each other: some curves are made monotone
    over the orders of one call (a bound at a larger order bounds the smaller ones),
    so an order's value may depend on the orders asked with it, and every value is a
    claimed bound at its order; an order evaluated twice keeps its smaller value.
    """

    def __init__(self, rdp: RdpCurve) -> None:
        self.rdp = rdp
        self.limit = math.inf
        self.a = np.empty(0)
        self.r = np.empty(0)

    def add(self, alpha: np.ndarray) -> None:
        values = _evaluate(self.rdp, alpha)
        a_ok, r_ok = trusted_prefix(alpha, values)
        finite = alpha[~np.isnan(values)]
        if a_ok.size < finite.size:
            self.limit = min(self.limit, float(finite[a_ok.size]))
        a_all = np.concatenate([self.a, a_ok])
        r_all = np.concatenate([self.r, r_ok])
        order = np.lexsort((r_all, a_all))
        a_all, r_all = a_all[order], r_all[order]
        first = np.concatenate([[True], a_all[1:] != a_all[:-1]]) if a_all.size else a_all > 0
        keep = first & (a_all < self.limit)
        self.a, self.r = a_all[keep], r_all[keep]


def _minimise(
    rdp: RdpCurve, objective: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> tuple[float, float]:
    """Minimum of ``objective(alpha, rdp(alpha))`` over the trusted real orders.

    A grid (doubling beyond 8192 while the optimum sits at the end), then six finer
    vectorised grids, each of 17 orders spread over the two cells around the current
    best (in ``log(alpha - 1)``), shrinking the bracket eight-fold.  Every call of the
    curve passes through :func:`trusted_prefix` (see :class:`_Record`): orders from a
    decrease of the curve on never produce the answer.
    """
    rec = _Record(rdp)
    rec.add(_GRID.copy())
    if rec.a.size and rec.a[-1] == _GRID[-1]:
        vals = objective(rec.a, rec.r)
        if int(np.argmin(vals)) == vals.size - 1 and math.isfinite(float(vals[-1])):
            # the optimum lies beyond 8192 (tiny per-order cost, e.g. rho-zCDP with tiny
            # rho): keep doubling (the call includes 8192, so a collapse is seen)
            rec.add(_GRID[-1] * 2.0 ** np.arange(0, 61))
    if rec.a.size == 0:
        return math.nan, math.inf
    vals = objective(rec.a, rec.r)
    i = int(np.argmin(vals))
    if not math.isfinite(float(vals[i])):
        return float(rec.a[i]), float(vals[i])
    for _ in range(6):
        u = np.log(rec.a - 1.0)
        # neighbours of the best order, ignoring re-evaluations of (nearly) itself
        below, above = u[u < u[i] - 1e-9], u[u > u[i] + 1e-9]
        lo = below[-1] if below.size else u[i]
        hi = above[0] if above.size else u[i]
        rec.add(1.0 + np.exp(np.linspace(lo, hi, 17)))
        vals = objective(rec.a, rec.r)
        i = int(np.argmin(vals))
    return float(rec.a[i]), float(vals[i])


def rdp_to_epsilon(rdp: RdpCurve, delta: float) -> float:
    """Smallest epsilon certified by an RDP curve at ``delta`` (real-order optimisation).

    Canonne, Kamath & Steinke 2020, Proposition 12 (Balle et al. 2020, Theorem 21),
    over the trusted part of the curve (:func:`trusted_prefix`).

    Parameters
    ----------
    rdp : callable
        Vectorised RDP curve ``alpha -> epsilon_alpha`` for real ``alpha > 1``.
    delta : float
        Target delta in (0, 1).

    Examples
    --------
    >>> # Gaussian mechanism with sigma = 1: rdp(alpha) = alpha / 2
    >>> round(rdp_to_epsilon(lambda a: a / 2.0, 1e-5), 4)
    4.7284
    >>> # a curve that collapses to 0 beyond alpha = 100 is used only below 100
    >>> broken = lambda a: np.where(a < 100, 1e-3 * a, 0.0)
    >>> bool(rdp_to_epsilon(broken, 1e-5) > 0.1)
    True
    """
    rdp = _check_curve(rdp)
    delta = check_delta(delta)
    log_delta = math.log(delta)
    _, eps = _minimise(rdp, lambda a, r: _eps_from(r, a, log_delta))
    if not math.isfinite(eps):
        _no_finite_order(rdp)
        return math.inf
    eps = max(eps, 0.0)
    return eps + 1e-12 * eps + 1e-15


def rdp_to_epsilon_at_orders(alpha: np.ndarray, values: np.ndarray, delta: float) -> float:
    """The RDP -> (epsilon, delta) conversion minimised over given orders only.

    Canonne, Kamath & Steinke 2020, Proposition 12 (Balle et al. 2020, Theorem 21):
    ``min_alpha rdp(alpha) + log(1 - 1/alpha) - (log delta + log alpha) / (alpha - 1)``,
    floored at 0, over the orders given (no refinement between them, no check that the
    curve is monotone, not rounded up).  Any order gives a valid bound, so this is an
    upper bound up to float round-off; use :func:`rdp_to_epsilon` for the certified
    value.  Cheap when the curve is already evaluated on a fixed grid (a calibrator's
    steering estimate).

    Parameters
    ----------
    alpha : numpy.ndarray
        Renyi orders > 1.
    values : numpy.ndarray
        The RDP curve at ``alpha`` (same shape).
    delta : float
        Target delta in (0, 1); not validated (callers check it once).

    Returns
    -------
    float
        The smallest epsilon over the orders (``inf`` when none is finite).

    Examples
    --------
    >>> a = np.array([2.0, 8.0, 16.0, 32.0])
    >>> round(rdp_to_epsilon_at_orders(a, a / 2.0, 1e-5), 4)  # Gaussian, sigma = 1
    5.2141
    >>> bool(rdp_to_epsilon_at_orders(a, a / 2.0, 1e-5) >= rdp_to_epsilon(lambda x: x / 2.0, 1e-5))
    True
    """
    val = _eps_from(np.asarray(values, dtype=float), np.asarray(alpha, dtype=float),
                    math.log(delta))
    return max(float(val.min()), 0.0)


def rdp_to_delta(rdp: RdpCurve, epsilon: float) -> float:
    """Smallest delta certified by an RDP curve at ``epsilon`` (real-order optimisation).

    The inverse form of the same bound:
    ``log delta = (alpha-1)(rdp(alpha) - eps + log(1 - 1/alpha)) - log alpha``, over
    the trusted part of the curve (:func:`trusted_prefix`).

    Parameters
    ----------
    rdp : callable
        The RDP curve ``alpha -> eps_alpha``, vectorised over real orders > 1.
    epsilon : float
        The epsilon at which delta is certified, >= 0.

    Examples
    --------
    >>> d = rdp_to_delta(lambda a: a / 2.0, 4.7284)
    >>> bool(9.9e-6 < d <= 1.001e-5)
    True
    """
    rdp = _check_curve(rdp)
    epsilon = check_epsilon(epsilon)
    _, log_d = _minimise(rdp, lambda a, r: _log_delta_from(r, a, epsilon))
    if not math.isfinite(log_d):
        _no_finite_order(rdp)
        return 1.0
    # a log delta >= 0 is the trivial delta = 1 (exp overflowed above 709: a replace-one
    # subsampled mechanism run 10**7 times at epsilon = 1)
    return min(1.0, math.exp(min(log_d, 0.0)) * (1.0 + 1e-12))


def rdp_to_delta_grid(rdp: RdpCurve, epsilons: np.ndarray) -> np.ndarray:
    """``rdp_to_delta`` for many epsilons at once, minimising over the fixed grid only.

    One evaluation of the RDP curve serves every epsilon; each value is a valid
    bound (any order is), a little looser than the refined :func:`rdp_to_delta`.

    Examples
    --------
    >>> d = rdp_to_delta_grid(lambda a: a / 2.0, np.array([4.7284, 6.0]))
    >>> bool(d[0] >= rdp_to_delta(lambda a: a / 2.0, 4.7284) and d[1] < d[0])
    True
    """
    eps = np.asarray(epsilons, dtype=float)
    a, r = trusted_prefix(_GRID, _evaluate(rdp, _GRID))
    if a.size == 0:
        return np.ones(eps.shape)
    log_d = _log_delta_from(r[None, :], a[None, :], eps.reshape(-1)[:, None])
    log_d = log_d.reshape(eps.shape + a.shape)
    return np.minimum(1.0, np.exp(np.minimum(np.min(log_d, axis=-1), 0.0)) * (1.0 + 1e-12))


def randomized_response_rdp(epsilon: float, log_q: float, alpha: np.ndarray) -> np.ndarray:
    """Exact Renyi divergence of a randomized-response pair at real orders ``alpha``.

    The pair: an output with probabilities ``p = e^epsilon q`` under ``P`` and ``q``
    under ``Q``, the mirror output with ``q`` and ``p``, and any number of outputs with
    equal probabilities (binary randomized response, k-ary randomized response,
    discrete Laplace).  With ``a = alpha - 1`` and ``x = a epsilon`` (Mironov 2017,
    Definition 3, summed over the output classes),

        a D_alpha = log(1 + p (e^x - 1) + q (e^-x - 1))
                  = log1p(q e^{-x} (e^x - 1) (e^{x + epsilon} - 1)),

    the second form being an exact rewrite (use ``p = q e^epsilon``) whose terms are all
    positive: it is evaluated in log space, ``log1p(exp(log q - x + log(e^x - 1) +
    log(e^{x + epsilon} - 1)))``, with no cancellation at small ``a epsilon`` (where the
    plain form ``epsilon + log1p(...) / a`` loses every digit) and no overflow or
    collapse at large orders (``alpha`` up to ``1e22`` and ``inf``, where
    ``D_inf = epsilon``).

    Parameters
    ----------
    epsilon : float
        The log-likelihood ratio ``log(p / q)`` of the informative outputs, > 0.
    log_q : float
        ``log q``, the log of the smaller probability of an informative output.
    alpha : array_like
        Real orders > 1 (``inf`` allowed).

    Examples
    --------
    >>> eps = 1.0   # binary randomized response: q = 1 / (1 + e)
    >>> d = randomized_response_rdp(eps, -math.log1p(math.e), np.array([2.0]))[0]
    >>> round(float(d), 6)   # log((e^2 + e^-1) / (1 + e))
    0.735326
    """
    a = np.asarray(alpha, dtype=float) - 1.0
    finite = np.isfinite(a)
    af = np.where(finite, a, 1.0)
    x = af * epsilon
    with np.errstate(under="ignore", divide="ignore", invalid="ignore"):
        l1, l2 = _log_expm1(x), _log_expm1(x + epsilon)
        log_s = log_q - x + l1 + l2
        # rounded up (an RDP curve is read as an upper bound): the four terms cancel
        # (log q against log(e^{x + eps} - 1) at large eps), so log_s is known to the
        # rounding of its terms, each within 32u (numpy's log / exp within four ulps,
        # the sums); logaddexp and the division within 2^-48 relative.  The order's own
        # rounding: a = alpha - 1 is exact for alpha <= 2 and for short orders (2.5,
        # 32); else its error r (TwoSum) moves D by at most |r| dD/da <= 2 eps |r| / a
        # (cgf convex: dD/da <= 2 (D(2a) - D(a)) / a).  Near order 1 at epsilon 40 the
        # nearest value was 8e-15 relative below the truth (fuzz, review 41).
        slack = 2.0**-48 * (np.abs(log_q) + np.abs(x) + np.abs(l1) + np.abs(l2) + 1.0)
        cgf = np.logaddexp(0.0, log_s + slack)
        alpha_f = np.where(finite, np.asarray(alpha, dtype=float), 2.0)
        back = af - alpha_f
        order_err = np.abs((alpha_f - (af - back)) + (-1.0 - back))
        val = cgf / af * (1.0 + 2.0**-48) + 2.0 * epsilon * order_err / af
        val = np.where(finite, val, epsilon)
    return np.minimum(np.maximum(np.nextafter(val, np.inf), 0.0), epsilon)


def pure_dp_rdp(epsilon: float, alpha: np.ndarray) -> np.ndarray:
    """Tight RDP of a pure ``epsilon``-DP mechanism at real orders ``alpha``.

    Bun & Steinke 2016, Proposition 3.3 (the sinh form), attained by binary randomized
    response with ``q = 1 / (1 + e^epsilon)``: ``D_alpha = (1/(alpha-1)) log((sinh(alpha
    eps) - sinh((alpha-1) eps)) / sinh(eps))``, evaluated by
    :func:`randomized_response_rdp` (no cancellation near ``alpha = 1``, no collapse at
    large orders).

    Parameters
    ----------
    epsilon : float
        The pure-DP epsilon, >= 0.
    alpha : numpy.ndarray
        Renyi orders, real and > 1 (``inf`` allowed: the value is ``epsilon``).

    Examples
    --------
    >>> float(pure_dp_rdp(1.0, np.array([np.inf]))[0])
    1.0
    >>> bool(pure_dp_rdp(1.0, np.array([2.0]))[0] < 1.0)
    True
    """
    eps = check_epsilon(epsilon)
    a = check_alpha(alpha)
    if eps == 0.0:
        return np.zeros(a.shape)
    log_q = -float(np.logaddexp(0.0, eps))
    return randomized_response_rdp(eps, log_q, a)


def zcdp_rdp(rho: float, alpha: np.ndarray) -> np.ndarray:
    """RDP curve ``alpha * rho`` of a ``rho``-zCDP mechanism (Bun & Steinke 2016, Def. 1.1).

    Parameters
    ----------
    rho : float
        The zCDP parameter, >= 0.
    alpha : numpy.ndarray
        Renyi orders, > 1.

    Examples
    --------
    >>> zcdp_rdp(0.5, np.array([2.0, 4.0]))
    array([1., 2.])
    """
    rho = check_positive("rho", rho)
    return rho * check_alpha(alpha)
