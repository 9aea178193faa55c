"""Renyi DP of any mechanism under subsampling, from its RDP curve.

* :func:`poisson_subsampled_rdp` -- Poisson subsampling (Zhu & Wang 2019, Theorem 6);
* :func:`subsampled_without_replacement_rdp` -- sampling without replacement,
  replace-one neighbours (Wang, Balle & Kasiviswanathan 2019, Theorem 9).

Both are re-exported by :mod:`~dpacct.accountant.rdp.subsampled_rdp`, whose docstring states
the log-space evaluation and the real-order extension they share.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..numerics import EXP_OVERFLOW, _log_expm1
from ..numerics import scipy_special as special
from ..validation import check_alpha, check_sample_rate
from .rdp_series import (
    MAX_EXPANSION_ORDER,
    _cgf_chord,
    _chunked,
    _monotone_envelope,
    _needed_integers,
    _segment_logsumexp_up,
    _segments,
)

__all__ = ["poisson_subsampled_rdp", "subsampled_without_replacement_rdp"]

RdpFunction = Callable[[np.ndarray], np.ndarray]

# ----------------------------------------------------------------------------------
# general mechanisms (Zhu & Wang 2019; Wang, Balle & Kasiviswanathan 2019)
# ----------------------------------------------------------------------------------


def _evaluate_rdp_fn(rdp_fn: RdpFunction, orders: np.ndarray) -> np.ndarray:
    """Call the base mechanism's RDP function once on a 1-d array and check the result."""
    if not callable(rdp_fn):
        raise TypeError(f"rdp_fn must be callable (alpha -> RDP epsilon), got {rdp_fn!r}")
    values = np.asarray(rdp_fn(orders.copy()), dtype=float)
    try:
        values = np.broadcast_to(values, orders.shape).astype(float)
    except ValueError as exc:
        raise ValueError(
            f"rdp_fn must return one value per order: got shape {values.shape} "
            f"for {orders.shape[0]} orders"
        ) from exc
    if np.isnan(values).any():
        bad = float(orders[np.isnan(values)][0])
        raise ValueError(f"rdp_fn returned NaN at alpha={bad!r}")
    if (values < 0).any():
        bad = float(orders[values < 0][0])
        raise ValueError(
            f"rdp_fn returned a negative RDP epsilon at alpha={bad!r}: "
            f"{float(values[values < 0][0])!r}"
        )
    return values


def _general_bound(
    sample_rate: object,
    rdp_fn: RdpFunction,
    alpha: object,
    log_moment: Callable[[np.ndarray, float, np.ndarray, float], np.ndarray],
) -> np.ndarray:
    """Shared driver: integer-order log moments, chords between them, minimum with the base."""
    gamma = check_sample_rate(sample_rate)
    orders = check_alpha(alpha)
    flat = orders.ravel()
    finite = np.isfinite(flat)
    fvals = flat[finite]
    # the theorem is evaluated at the integers around every order; the base curve is
    # needed at 2 .. the largest of them, at the orders themselves, and at inf
    # above MAX_EXPANSION_ORDER only the base curve (and the pure-DP cap) is used
    small = fvals <= MAX_EXPANSION_ORDER
    need = _needed_integers(fvals[small]) if small.any() else np.empty(0)
    top = int(need[-1]) if need.size else 1
    grid = np.arange(2.0, top + 1.0)
    base = _evaluate_rdp_fn(rdp_fn, np.concatenate([grid, fvals, [np.inf]]))
    base_grid = base[: grid.size]
    base_at = base[grid.size : grid.size + fvals.size]
    eps_inf = float(base[-1])

    out = np.empty(flat.shape)
    if gamma == 1.0:  # no subsampling: the base curve itself
        out[finite] = base_at
        out[~finite] = eps_inf
        return out.reshape(orders.shape)

    # the subsampled mechanism is at most as private at any order as at alpha = inf,
    # where pure-DP amplification gives log(1 + gamma (e^eps - 1)) (Balle, Barthe &
    # Gaboardi 2018, Theorems 8 and 9)
    if eps_inf < EXP_OVERFLOW:
        amplified_inf = math.log1p(gamma * math.expm1(eps_inf))
    else:  # log((1 - gamma) + gamma e^eps) without overflow (inf stays inf)
        amplified_inf = float(np.logaddexp(math.log1p(-gamma), math.log(gamma) + eps_inf))
    out[~finite] = amplified_inf
    if fvals.size:
        vals = np.minimum(base_at, amplified_inf)
        if need.size:
            sv = fvals[small]
            moments = _chunked(lambda o: log_moment(o, gamma, base_grid, eps_inf), need)
            bound = _cgf_chord(sv, need, moments)
            vals[small] = np.minimum(bound / (sv - 1.0), vals[small])
        out[finite] = vals
    return _monotone_envelope(flat, out).reshape(orders.shape)


def _zhu_wang_log_moment(
    orders: np.ndarray, gamma: float, base_grid: np.ndarray, eps_inf: float
) -> np.ndarray:
    """Zhu & Wang 2019, Theorem 6, as a cumulant ``(alpha - 1) eps'(alpha)``, integer ``alpha``.

    The theorem's bracket is ``(1-g)^(a-1) (a g - g + 1) + C(a,2) g^2 (1-g)^(a-2) e^{eps(2)}
    + 3 sum_{l=3}^a C(a,l) (1-g)^(a-l) g^l e^{(l-1) eps(l)}``.  Subtracting the binomial
    identity ``1 = sum_l C(a,l) (1-g)^(a-l) g^l`` term by term gives the exact rewrite
    ``1 + C(a,2) g^2 (1-g)^(a-2) expm1(eps(2)) + sum_{l>=3} C(a,l) (1-g)^(a-l) g^l
    (3 e^{(l-1) eps(l)} - 1)``, whose terms are all non-negative.
    """
    m = orders.astype(np.int64)
    starts, owner, pos = _segments(m - 1)  # l = 2 .. m
    ell = (pos + 2).astype(float)
    a = m[owner].astype(float)
    eps_l = base_grid[(ell - 2).astype(np.int64)]
    y = (ell - 1.0) * eps_l
    with np.errstate(invalid="ignore"):
        factor = np.where(ell == 2.0, _log_expm1(eps_l), y + np.log(3.0 - np.exp(-y)))
    factor[np.isinf(y)] = np.inf
    g_a, g_l, g_al = (special.gammaln(x + 1.0) for x in (a, ell, a - ell))
    log_g, log_1mg = math.log(gamma), math.log1p(-gamma)
    log_terms = g_a - g_l - g_al + (a - ell) * log_1mg + ell * log_g + factor
    magnitude = g_a + g_l + g_al + a * (abs(log_g) + abs(log_1mg)) + np.abs(factor)
    return np.logaddexp(0.0, _segment_logsumexp_up(log_terms, magnitude, starts))


def _wbk_log_moment(
    orders: np.ndarray, gamma: float, base_grid: np.ndarray, eps_inf: float
) -> np.ndarray:
    """Wang, Balle & Kasiviswanathan 2019, Theorem 9, as a cumulant, integer ``alpha >= 2``.

    ``(a-1) eps'(a) <= log(1 + g^2 C(a,2) min{4 (e^{eps(2)} - 1),
    e^{eps(2)} min{2, (e^{eps(inf)} - 1)^2}} + sum_{j=3}^a g^j C(a,j) e^{(j-1) eps(j)}
    min{2, (e^{eps(inf)} - 1)^j})``.  With ``eps(inf) = inf`` the minima reduce to the
    pure-DP-free branch (``2`` and ``min{4 (e^{eps(2)} - 1), 2 e^{eps(2)}}``).
    """
    m = orders.astype(np.int64)
    starts, owner, pos = _segments(m - 1)  # j = 2 .. m
    j = (pos + 2).astype(float)
    a = m[owner].astype(float)
    eps_j = base_grid[(j - 2).astype(np.int64)]
    log_em1_inf = float(_log_expm1(np.array([eps_inf]))[0])  # log(e^{eps(inf)} - 1)
    log_two = math.log(2.0)
    with np.errstate(invalid="ignore"):
        pure_factor = np.minimum(log_two, j * log_em1_inf)  # log min{2, (e^eps_inf - 1)^j}
    two = np.minimum(math.log(4.0) + _log_expm1(eps_j), eps_j + pure_factor)
    factor = np.where(j == 2.0, two, (j - 1.0) * eps_j + pure_factor)
    factor[np.isnan(factor)] = -np.inf  # 0 * inf from eps(inf) = 0 and eps(j) = inf
    g_a, g_j, g_aj = (special.gammaln(x + 1.0) for x in (a, j, a - j))
    log_terms = g_a - g_j - g_aj + j * math.log(gamma) + factor
    magnitude = g_a + g_j + g_aj + j * abs(math.log(gamma)) + np.abs(factor)
    return np.logaddexp(0.0, _segment_logsumexp_up(log_terms, magnitude, starts))


def poisson_subsampled_rdp(sample_rate: float, rdp_fn: RdpFunction, alpha: object) -> np.ndarray:
    r"""General RDP bound for a Poisson-subsampled mechanism, from its RDP curve.

    Zhu & Wang 2019 ("Poisson Subsampled Renyi Differential Privacy", ICML, Theorem 6,
    the general upper bound): if the base mechanism is ``(l, eps(l))``-RDP at the integer
    orders ``l = 2 .. alpha``, then with sampling probability ``g`` and integer
    ``alpha >= 2`` the subsampled mechanism is ``(alpha, eps'(alpha))``-RDP with::

        (alpha-1) eps'(alpha) <= log[ (1-g)^(alpha-1) (alpha g - g + 1)
                                      + C(alpha,2) g^2 (1-g)^(alpha-2) e^{eps(2)}
                                      + 3 sum_{l=3}^alpha C(alpha,l) (1-g)^(alpha-l) g^l
                                          e^{(l-1) eps(l)} ].

    Non-integer orders use the chord of the cumulant ``(alpha-1) eps'`` between
    ``floor(alpha)`` and ``ceil(alpha)`` (the cumulant is convex in ``alpha``; van Erven &
    Harremoes 2014, Corollary 2, as used by Zhu & Wang 2019 and by Wang, Balle &
    Kasiviswanathan 2019), and between ``alpha = 1`` (cumulant ``0``) and ``alpha = 2`` for
    ``1 < alpha < 2``.  The result is capped by the base curve itself (subsampling never
    hurts) and by the pure-DP amplification ``log(1 + g (e^{eps(inf)} - 1))`` of the
    base's ``eps(inf)`` (Balle, Barthe & Gaboardi 2018), which is also the value returned
    at ``alpha = inf``.  Orders above ``MAX_EXPANSION_ORDER = 65536`` get only these
    caps (the sum has one term per integer up to ``alpha``).

    Parameters
    ----------
    sample_rate : float
        Poisson sampling probability ``g`` in ``(0, 1]``.
    rdp_fn : callable
        RDP curve of the base mechanism: maps a 1-d float array of orders (integers
        ``2 .. ceil(max alpha)``, the requested orders, and ``inf``) to RDP epsilons
        ``>= 0`` (``inf`` allowed).  It is called once.
    alpha : float or array_like
        Renyi order(s), real and ``> 1``; ``inf`` allowed.

    Returns
    -------
    numpy.ndarray
        Upper bound on the RDP epsilon at every order, with the shape of ``alpha``,
        non-decreasing in ``alpha`` across the orders of one call.

    Raises
    ------
    ValueError
        For ``sample_rate`` outside ``(0, 1]``, an order ``<= 1`` or NaN, or an
        ``rdp_fn`` that returns NaN, a negative value or the wrong number of values.
    TypeError
        If ``rdp_fn`` is not callable.

    Examples
    --------
    >>> from dpacct.accountant.rdp.subsampled_rdp import poisson_subsampled_rdp
    >>> gaussian = lambda a: a / (2 * 1.0**2)   # Gaussian mechanism, sigma = 1
    >>> [round(float(e), 6) for e in poisson_subsampled_rdp(0.01, gaussian, [2, 4.5, 8])]
    [0.000172, 0.00051, 0.001404]
    """
    return _general_bound(sample_rate, rdp_fn, alpha, _zhu_wang_log_moment)


def subsampled_without_replacement_rdp(
    sample_rate: float, rdp_fn: RdpFunction, alpha: object
) -> np.ndarray:
    r"""General RDP bound for subsampling without replacement (replace-one neighbours).

    Wang, Balle & Kasiviswanathan 2019 ("Subsampled Renyi Differential Privacy and
    Analytical Moments Accountant", AISTATS, Theorem 9): a mechanism that is
    ``(l, eps(l))``-RDP, run on a uniformly random subset of ``m`` out of ``n`` records
    (``g = m / n``), is ``(alpha, eps'(alpha))``-RDP for integer ``alpha >= 2`` with::

        (alpha-1) eps'(alpha) <= log( 1 + g^2 C(alpha,2) min{ 4 (e^{eps(2)} - 1),
                                                e^{eps(2)} min{2, (e^{eps(inf)} - 1)^2} }
                                      + sum_{j=3}^alpha g^j C(alpha,j) e^{(j-1) eps(j)}
                                                min{2, (e^{eps(inf)} - 1)^j} ).

    When the base has no pure-DP guarantee (``eps(inf) = inf``) the minima select the
    branch that does not use it.  Non-integer orders use the chord of the cumulant
    between neighbouring integers (and between ``alpha = 1`` and ``2``), as in
    :func:`poisson_subsampled_rdp`; the result is capped by the base curve and by
    ``log(1 + g (e^{eps(inf)} - 1))`` (Balle, Barthe & Gaboardi 2018), the value at
    ``alpha = inf``.  With ``g = 1`` the base curve is returned unchanged.

    Parameters
    ----------
    sample_rate : float
        Sampling ratio ``g = m / n`` in ``(0, 1]``.
    rdp_fn : callable
        RDP curve of the base mechanism under replace-one neighbours (see
        :func:`poisson_subsampled_rdp`); it must accept ``inf``.
    alpha : float or array_like
        Renyi order(s), real and ``> 1``; ``inf`` allowed.

    Returns
    -------
    numpy.ndarray
        Upper bound on the RDP epsilon at every order, with the shape of ``alpha``,
        non-decreasing in ``alpha`` across the orders of one call.

    Raises
    ------
    ValueError
        For ``sample_rate`` outside ``(0, 1]``, an order ``<= 1`` or NaN, or an
        ``rdp_fn`` that returns NaN, a negative value or the wrong number of values.
    TypeError
        If ``rdp_fn`` is not callable.

    Examples
    --------
    >>> from dpacct.accountant.rdp.subsampled_rdp import subsampled_without_replacement_rdp
    >>> gaussian = lambda a: a / (2 * 2.0**2)   # Gaussian mechanism, sigma = 2
    >>> bound = subsampled_without_replacement_rdp(0.01, gaussian, [2, 4.5, 8])
    >>> [round(float(e), 6) for e in bound]
    [0.000114, 0.000268, 0.000488]
    """
    return _general_bound(sample_rate, rdp_fn, alpha, _wbk_log_moment)
