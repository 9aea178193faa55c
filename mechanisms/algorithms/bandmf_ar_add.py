"""The add direction of Theorem 6 (Theorem 6' of docs/theory/dpmf_balls_in_bins.md,
session 36): a law for ``E_P[chi(Z')]`` of the white-noise-plus-cyclic-AR(1) stand-in
of :mod:`.bandmf_ar_standin`, ``chi`` convex, non-increasing, ``0 <= chi <= 1``.

The remove law replaces each innovation by hat masses linear in the process value
``w`` (``psi(Z')`` is convex in it).  For the add integrand that fails (``chi`` of a
convex increasing function is not convex), so here, as in Theorem 2's add direction,
the hats of ``W_s`` given the past are piecewise linear in ``y = exp(lam_s w)``: every
later term of ``Z'`` is ``exp(C pi_j W_s) = y^(C pi_j / lam_s)`` times a positive factor,
concave in ``y`` when ``C pi_j <= lam_s`` (:func:`_lams` takes the least such
``lam_s``), so ``chi(Z')`` is convex in ``y``.  The tails swap sides: the mass above the
grid is moved onto its last node at no charge (the integrand is non-increasing), the
mass below the first node is charged at most 1 per unit.  The ``X_s`` hats are linear in
``exp(A x)`` (``Z'`` is affine in it), partial sums are rounded with mean at most the sum,
and every sum at or above 1 is held in one absorbing cell (the later terms are
non-negative and ``chi`` is non-increasing).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from dpacct.mechanisms.algorithms.bandmf_ar_standin import (
    _add_term,
    _future,
    _law_setup,
)
from dpacct.mechanisms.algorithms.bandmf_ar_sweep import apply_term, term_cells
from dpacct.mechanisms.algorithms.bandmf_two_band import (
    _TERM_SLACK,
    _compact,
    _hat_weights,
)

__all__ = ["ar_add_law", "exp_hats"]

#: relative slack on each float hat mass, against the sum of the normal-cdf terms it is
#: formed from (``ndtr`` to about 1e-14 relative, ``exp`` of arguments below 80 to
#: 2e-14, the cancellation of a cell's two parts at most ``1 / expm1(lam step)``)
_HAT_REL = 1e-10
#: relative slack on a state's charged mass (the hat sums' float excess per step,
#: ``t`` steps, and the ``ndtr`` of the charged tail)
_CHARGE_REL = 1e-6
#: relative enlargement of each ``lam_s`` over ``C max pi_j`` (the float products of
#: the regression coefficients: relative ``t u``)
_LAM_REL = 1e-12


def _dphi(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``Phi(hi) - Phi(lo)`` (``lo <= hi``) from the two tail values on the side where both
    are at most 1/2 where possible, and the sum of the two terms used (for the error)."""
    upper = lo >= 0
    a = np.where(upper, special.ndtr(-lo), special.ndtr(hi))
    b = np.where(upper, special.ndtr(-hi), special.ndtr(lo))
    return np.maximum(a - b, 0.0), a + b


def exp_hats(mu: np.ndarray, sd: float, lam: float, grid: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """Upper bounds on the hat masses of ``N(mu_i, sd^2)`` on ``grid`` (uniform, increasing)
    with hats piecewise linear in ``y = exp(lam w)``, the mass above ``grid[-1]`` moved onto
    it; and upper bounds on the masses below ``grid[0]`` (charged by the caller).

    On a cell ``[w_j, w_j + step]`` (standard units ``[a, a + h]``, ``l = lam sd``) with
    ``P`` its probability and ``T = E[exp(lam (W - w_j)); cell] = exp(l^2 / 2 - l a)
    (Phi(a + h - l) - Phi(a - l))`` (tilting), the upper node's share is
    ``(T - P) / (e^(l h) - 1)`` and the lower node's ``(e^(l h) P - T) / (e^(l h) - 1)``
    (they add up to ``P``, and ``h_j(y)`` is ``(y - y_j) / (y_{j+1} - y_j)`` there).
    Each is enlarged by :data:`_HAT_REL` times its terms' sum over ``e^(l h) - 1`` and
    by ``1e-300``.

    Parameters
    ----------
    mu : numpy.ndarray
        Means, one row each.
    sd : float
        Standard deviation, > 0.
    lam : float
        Exponent of the hats' variable, > 0.
    grid : numpy.ndarray
        Uniform increasing grid, at least 2 points.

    Returns
    -------
    masses : numpy.ndarray
        ``(mu.size, grid.size)``.
    below : numpy.ndarray
        ``P(W < grid[0])`` per row, rounded up.

    Examples
    --------
    >>> m, q = exp_hats(np.zeros(1), 1.0, 0.5, np.linspace(-8, 3, 23))
    >>> excess = m.sum() + q[0] - 1               # the slack only adds mass
    >>> bool(0 <= excess < 1e-7), bool(m[0, -1] > 0)
    (True, True)
    """
    step = float(grid[1] - grid[0])
    h, lv = step / sd, lam * sd
    c = (np.asarray(grid, dtype=float)[None, :] - np.asarray(mu, dtype=float)[:, None]) / sd
    a, b = c[:, :-1], c[:, 1:]
    p, perr = _dphi(a, b)
    pre = np.exp(0.5 * lv * lv - lv * a)
    tt, terr = _dphi(a - lv, b - lv)
    tt, terr = pre * tt, pre * terr
    e1 = math.expm1(lv * h)
    err = _HAT_REL * (terr + (1 + e1) * perr) / e1 + 1e-300
    up = np.maximum(tt - p, 0.0) / e1 + err
    low = np.maximum((1 + e1) * p - tt, 0.0) / e1 + err
    out = np.zeros(c.shape)
    out[:, :-1] += low
    out[:, 1:] += up
    top = special.ndtr(-c[:, -1])
    out[:, -1] += top * (1 + _HAT_REL) + 1e-300
    below = special.ndtr(c[:, 0]) * (1 + _HAT_REL) + 1e-300
    return out, below


def _lams(alpha: np.ndarray, beta: np.ndarray, tau: np.ndarray, big_c: float) -> np.ndarray:
    """Per step ``s``, the least ``lam_s`` (times ``1 + 1e-12``) with ``C pi_j <= lam_s`` for
    every later ``j`` (``pi_j`` the coefficient of ``W_s`` in ``W_j``; at ``s = 0``
    ``pi_j + kappa_j``: :func:`.bandmf_ar_standin._future`), so that every term ``j >= s`` is
    concave in ``exp(lam_s W_s)``."""
    t = alpha.size
    return np.array([big_c * float(_future(alpha, beta, tau, s)[0].max()) * (1 + _LAM_REL)
                     for s in range(t)])


def ar_add_law(noise_multiplier: float, instance: tuple, *, points: int = 41,
               x_points: int = 21, width: float = 8.0, moved_width: float = 3.0,
               rho: float = 0.03, theta: float = 1e-10,
               prune: float = 1e-17) -> tuple[np.ndarray, np.ndarray, float]:
    """A law ``(z, w)`` and tail with ``E_P[chi(Z')] <= sum_i w_i chi(z_i) + tail`` for every
    convex non-increasing ``chi`` with ``0 <= chi <= 1`` (the add direction: Theorem 6' of
    docs/theory/dpmf_balls_in_bins.md), for the stand-in ``(t, a, gamma, rho_ar, beta)``
    of :func:`.bandmf_ar_standin.ar_instances` (``beta`` composed afterwards by Lemma 6,
    :func:`.bandmf_banded_shared.shared_law_delta` with ``up=False``).

    Parameters
    ----------
    noise_multiplier, instance
        ``sigma`` (> 0) and the stand-in ``(t, a, gamma, rho_ar, beta)``.
    points, x_points, rho
        The grids as in :func:`.bandmf_ar_standin.ar_remove_law`: nodes of every ``W_s``
        and of every ``X_s`` (>= 3 each), the partial sums' log spacing (in (0, 0.5]).
    width, moved_width : float
        The grids' reach, in standard deviations, below the centre (that tail is charged)
        and above it (that tail is moved onto the last node), > 0 each.
    theta : float
        The least positive partial sum on the grid, in (0, 1).
    prune : float
        A state whose mass, times its ``W_0`` node's, is at most ``prune`` (>= 0) leaves
        the chain and its mass is added to ``tail`` (``chi <= 1``); 0 keeps every state.

    Returns
    -------
    z, w : numpy.ndarray
        Support (increasing; sums at or above 1 stored at the grid's first value >= 1)
        and masses.
    tail : float
        The charged tails and pruned mass (added to delta).

    Examples
    --------
    >>> z, w, tail = ar_add_law(2.0, (4, 1.0, 1.0, 0.5, 0.0), points=17, x_points=9)
    >>> bool(abs(w.sum() + tail - 1) < 1e-6), bool(tail < 1e-6)
    (True, True)
    """
    grids, coef = _law_setup(noise_multiplier, instance,
                             (points, x_points, width, moved_width, rho, theta, prune))
    _, t, points, x_points, width, moved, rho, theta, prune = grids
    alpha, beta, tau, cov, big_a, big_c, half = coef
    if theta >= 1.0:
        raise ValueError(f"theta must be in (0, 1), got {theta}")
    wsd = math.sqrt(float(np.diag(cov).max()))
    wg = np.linspace(-width * wsd, moved * wsd, points)
    xg = np.linspace(-width, moved, x_points)
    wx = _hat_weights(1, xg, big_a, False)  # linear in e^{A x}, upper tail moved
    ex = np.exp(big_a * xg)
    lams = _lams(alpha, beta, tau, big_c)
    w0, q0 = exp_hats(np.zeros(1), float(tau[0]), float(lams[0]), wg)
    # X lower tails (t of them, under P) and W_0's lower tail: the integrand is at most 1
    tail = (float(t * special.ndtr(-width)) + float(q0[0])) * (1 + 1e-9)
    cells = math.ceil(math.log(1.0 / theta) / rho) + 2
    g = np.concatenate([[0.0], theta * np.exp(rho * np.arange(cells))])
    g = g[: int(np.searchsorted(g, 1.0, side="left")) + 1]  # the absorbing top
    terms = (g, ex, wx, big_c, half, t, 1 - _TERM_SLACK)
    mass = np.zeros(g.size)
    for law, charged in _sweep((alpha, beta, tau, wg, lams), terms, w0[0], prune):
        tail += charged
        mass += law
    keep = mass > 0
    z, w = _compact(g[keep], mass[keep], False)
    return z, w, float(np.nextafter(tail, np.inf))


def _node_transfer(ctx: tuple, terms: tuple, i0: int, x0: float, m0: float,
                   prune: float) -> tuple[np.ndarray, float]:
    """The add transfer given ``W_0`` at node ``i0`` (value ``x0``, hat mass ``m0``): the
    final partial-sum masses times ``m0`` and what it adds to the tail (the charged lower
    tails of the innovations and the pruned states' masses, times ``m0``)."""
    wg = ctx[3]
    g, ex, wx, big_c, half, t, fac = terms
    d = _add_term(np.zeros((wg.size, g.size)), g, None, i0, x0, ex, wx, big_c, half[0], t,
                  fac, False)
    charged = 0.0
    for s in range(1, t):
        live = np.nonzero(d.any(axis=1))[0]
        occ = np.nonzero(d.any(axis=0))[0]
        bot, top = int(occ[0]), int(occ[-1]) + 1
        lower, cut, sums = _carry(ctx, s, x0, m0, d, live, (bot, top), prune)
        charged += lower
        charged += cut
        occ = np.nonzero(sums.any(axis=0))[0]
        if occ.size == 0:  # every state pruned
            return np.zeros(g.size), charged * (1 + _CHARGE_REL)
        lo, hi = int(occ[0]), int(occ[-1]) + 1
        d = _add_term(sums[:, lo:hi], g, (bot + lo, bot + hi), None, wg, ex, wx, big_c,
                      half[s], t, fac, False)
    return m0 * d.sum(axis=0), charged * (1 + _CHARGE_REL)


def _carry(ctx: tuple, s: int, x0: float, m0: float, d: np.ndarray, rows: np.ndarray,
           cells: tuple[int, int], prune: float) -> tuple[float, float, np.ndarray]:
    """Term ``s``'s kernel on one node's live ``rows`` and ``cells`` of ``d``: the charged
    lower tails and the pruned states' masses (each times ``m0``, added by the caller in
    that order; 0.0 without pruning) and the states moved to ``W_s``."""
    alpha, beta, tau, wg, lams = ctx
    kern, below = exp_hats(alpha[s] * wg[rows] + beta[s] * x0, float(tau[s]),
                           float(lams[s]), wg)
    sums = d[np.ix_(rows, np.arange(*cells))]
    lower = m0 * float(sums.sum(axis=1) @ below)
    sums = kern.T @ sums
    cut = 0.0
    if prune > 0.0:
        small = (sums > 0.0) & (sums * m0 <= prune)
        cut = m0 * float(sums[small].sum())
        sums[small] = 0.0
    return lower, cut, sums


def _sweep(ctx: tuple, terms: tuple, w0: np.ndarray, prune: float) -> list:
    """Every ``W_0`` node's add transfer, as :func:`_node_transfer` returns it (a list in
    node order), one term at a time over all nodes with each term's rounding computed
    once (session 45; :mod:`.bandmf_ar_sweep`): bit for bit ``_node_transfer``'s floats."""
    wg = ctx[3]
    g, ex, wx, big_c, half, t, fac = terms
    live = []  # [i0, x0, m0, masses, offset, charged]
    for i0, (x0, m0) in enumerate(zip(wg, w0, strict=True)):
        d = _add_term(np.zeros((wg.size, g.size)), g, None, i0, float(x0), ex, wx, big_c,
                      half[0], t, fac, False)
        live.append([i0, float(x0), float(m0), d, 0, 0.0])
    out: list = [None] * wg.size
    for s in range(1, t):
        moves = []
        for node in live:
            i0, x0, m0, d, off, charged = node
            rows = np.nonzero(d.any(axis=1))[0]
            occ = np.nonzero(d.any(axis=0))[0]
            bot, top = int(occ[0]), int(occ[-1]) + 1
            lower, cut, sums = _carry(ctx, s, x0, m0, d, rows, (bot, top), prune)
            charged += lower
            charged += cut
            node[5] = charged
            occ = np.nonzero(sums.any(axis=0))[0]
            if occ.size == 0:  # every state pruned
                out[i0] = (np.zeros(g.size), charged * (1 + _CHARGE_REL))
                continue
            lo, hi = int(occ[0]), int(occ[-1]) + 1
            moves.append((node, sums[:, lo:hi], (off + bot + lo, off + bot + hi)))
        live = [m[0] for m in moves]
        if not moves:
            break
        span = (min(m[2][0] for m in moves), max(m[2][1] for m in moves))
        cells = term_cells(g, span, g, wg, ex, big_c, half[s], t, fac, False)
        for node, sums, cols in moves:
            node[3], node[4] = apply_term(cells, sums, cols, wx, g.size)
    for i0, _, m0, d, off, charged in live:
        law = np.zeros(g.size)
        law[off:off + d.shape[1]] = m0 * d.sum(axis=0)
        out[i0] = (law, charged * (1 + _CHARGE_REL))
    return out
