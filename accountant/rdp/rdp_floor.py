"""A certified floor under every RDP-to-delta conversion of a subsampled-Gaussian schedule.

A mechanism's ``delta(eps)`` without an exact curve is the smaller of its PLD bound and
its RDP conversion (:func:`~dpacct.accountant.routes.derived_delta`).  On a schedule of
many distinct Poisson-subsampled Gaussian steps the RDP conversion evaluates every
step's Renyi curve (Mironov, Talwar & Zhang 2019) at about a hundred orders: 22.7 s of
the 73 s of one ``delta`` on 1 500 distinct small-q steps (issue 37, session 27),
where it answered 1.5e-5 against the PLD's 1.2e-13.  :func:`rdp_log_delta_floor`
bounds from below, in at most a few tenths of a second, *any* such conversion's answer; where the
floor is at or above the PLD's answer the conversion cannot win and need not run.

The bound (proof in ``docs/theory/schedules.md``, "The RDP pass a delta can skip")
-------------------------------------------------------------------------------
Any sound RDP curve ``rho`` of the composition satisfies ``rho(a) >= D_a(P || Q)``
for the product of the steps' dominating pairs ``P_i = (1 - q_i) N(0, s_i^2) + q_i
N(1, s_i^2)``, ``Q_i = N(0, s_i^2)`` (that pair is attained by two neighbouring
datasets, and Renyi divergence is additive over products: van Erven & Harremoes
2014, Theorem 28).  At an integer order ``a`` (Mironov, Talwar & Zhang 2019,
Section 3.3)::

    exp((a - 1) D_a(P_i || Q_i)) = sum_k C(a, k) (1 - q_i)^(a - k) q_i^k exp(k (k - 1) / (2 s_i^2))

a sum of non-negative terms, so any subset of them is a lower bound; and ``D_a`` does
not decrease with the order (van Erven & Harremoes 2014, Theorem 3), with larger
``s`` or smaller ``q`` (a post-processing, module docstring of
:mod:`~dpacct.accountant.pld.schedule`).  The conversion's answer is
``exp(min_a f(a))`` over orders ``a > 1`` it visits, with
``f(a) = (a - 1)(rho(a) - eps + log(1 - 1/a)) - log a`` (Canonne, Kamath & Steinke
2020, Proposition 12; :func:`~dpacct.accountant.rdp.conversion.rdp_to_delta`, which
adds a round-off term and a factor ``1 + 1e-12``, both upward).  On ``[a_j, a_{j+1}]``
(consecutive orders of a grid), ``(a - 1) rho(a) >= L(a_j)`` (``L`` the composed
lower bound of ``(a - 1) D_a`` at ``a_j``, clipped at 0), ``-(a - 1) eps >= -(a_{j+1}
- 1) eps`` and ``g(a) = (a - 1) log(1 - 1/a) - log a`` decreases (its derivative is
``log(1 - 1/a) < 0``), so ``f(a) >= L(a_j) - (a_{j+1} - 1) eps + g(a_{j+1})``.  For
consecutive integers (and ``[1, 2]``, ``Lambda(1) = 0``) the convex ``(a - 1) D_a``
also lies above its tangents at both ends, their slopes bounded by chords of the exact
sums (an upper bound from the other cells' corners): the larger of the two lines less
``(a - 1) eps`` is smallest at an end or where they cross.  Beyond the last order ``A``:
``rho(a) >= rho(A)``
and ``g(a) >= -1 - log a``, and ``(a - 1) c - log a`` with ``c = rho_L(A) - eps > 0``
is smallest at ``max(A, 1/c)``.  The minimum of these pieces, less a round-off margin,
is the floor.
"""

from __future__ import annotations

import numpy as np

from ..numerics import logsumexp
from ..numerics import scipy_special as special

__all__ = ["floor_curve", "rdp_log_delta_floor", "rdp_may_win"]

#: the orders of the floor's grid: every integer up to 256, then steps of 1/16 of the
#: order (the loss of a coarse step is ``(a_{j+1} - a_j) eps`` in log delta; where the
#: optimum lies there the floor is loose and the conversion simply runs)
FLOOR_ORDERS = np.unique(
    np.concatenate([np.arange(2, 257), np.round(256 * (17 / 16) ** np.arange(1, 160))])
).astype(float)
#: the binomial terms kept at each order: ``k`` in ``0..KEEP`` and ``a - KEEP..a`` (all
#: of them, the exact sum, up to the order ``2 KEEP + 1``)
KEEP = 32
#: ... and ``k`` in ``0..KEEP_HIGH``, ``a - KEEP_HIGH..a`` beyond
KEEP_HIGH = 4
#: relative round-off margin taken off every piece (float64 sums of at most a few
#: hundred terms err by ~1e-14 relative)
MARGIN = 1e-10
#: cells of ``log sigma`` and ``log q`` the steps are grouped into (within a cell the
#: largest sigma and the smallest q are taken: a dominated step)
CELL = float(np.log(1.01))


def _cells(sigma: np.ndarray, q: np.ndarray, counts: np.ndarray, *, dominated: bool):
    """The steps grouped into cells of :data:`CELL`: per group the largest sigma and the
    smallest q (``dominated``: a cell's divergence is at most each member's) or the
    smallest sigma and the largest q (at least), and the summed count."""
    key = np.stack([np.ceil(np.log(sigma) / CELL), np.floor(np.log(q) / CELL)], axis=1)
    _, inv = np.unique(key, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    n = int(inv.max()) + 1
    s_cell = np.full(n, -np.inf if dominated else np.inf)
    q_cell = np.full(n, np.inf if dominated else -np.inf)
    c_cell = np.zeros(n)
    (np.maximum if dominated else np.minimum).at(s_cell, inv, sigma)
    (np.minimum if dominated else np.maximum).at(q_cell, inv, q)
    np.add.at(c_cell, inv, counts)
    return s_cell, q_cell, c_cell


def _log_a(sigma: np.ndarray, q: np.ndarray, orders: np.ndarray, keep: int):
    """``log`` of the sum of the binomial terms ``k`` in ``0..keep`` and ``a - keep..a``
    of ``log E_Q[(P/Q)^a] = (a - 1) D_a(P || Q)`` for each cell (rows) at the integer
    orders (columns): a lower bound, exact (up to round-off) at ``a <= 2 keep + 1``; and
    the largest magnitude of a term's log (for the round-off margin)."""
    a = orders[None, :, None]
    low = np.arange(keep + 1, dtype=float)[None, None, :]
    # k in 0..keep (those <= a) and a - keep..a (those > keep): distinct k, each once
    k = np.concatenate([np.broadcast_to(low, (1, a.shape[1], keep + 1)), a - low], axis=2)
    kept = np.concatenate([low <= a, a - low > keep], axis=2)
    k = np.where(kept, k, 0.0)
    s = sigma[:, None, None]
    qq = q[:, None, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_binom = special.gammaln(a + 1) - special.gammaln(k + 1) - special.gammaln(a - k + 1)
        rest = np.where(a - k > 0, (a - k) * np.log1p(-qq), 0.0)
        terms = log_binom + rest + k * np.log(qq) + k * (k - 1) / (2.0 * s * s)
        terms = np.where(kept, terms, -np.inf)
        size = np.max(np.where(np.isfinite(terms), np.abs(terms), 0.0), axis=2)
        return logsumexp(terms, axis=2), size


def _composed(sigma, q, counts, orders, keep, *, dominated: bool) -> np.ndarray:
    """``sum_i count_i log E_Q[(P_i/Q_i)^a]`` over the cells at ``orders``, less
    (``dominated``: a lower bound) or plus (an upper bound, exact sums only) a round-off
    margin; the true value is at least 0."""
    s_cell, q_cell, c_cell = _cells(sigma, q, counts, dominated=dominated)
    log_a, size = _log_a(s_cell, q_cell, orders, keep)
    lam = c_cell @ np.maximum(log_a, 0.0)
    err = MARGIN * (c_cell @ (size + 1.0))
    return np.maximum(lam - err, 0.0) if dominated else lam + err


def floor_curve(
    sigma: np.ndarray, sample_rate: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The epsilon-free part of :func:`rdp_log_delta_floor`: at :data:`FLOOR_ORDERS`, a
    lower bound on ``(a - 1) D_a`` of the composition and an upper bound where the
    binomial sums are exact (``inf`` beyond).  A schedule keeps it for every query."""
    sig = np.asarray(sigma, dtype=float)
    qs = np.asarray(sample_rate, dtype=float)
    cnt = np.asarray(counts, dtype=float)
    orders = FLOOR_ORDERS
    # exact sums up to the order 2 KEEP + 1, beyond KEEP_HIGH terms at each end
    exact = orders[orders <= 2 * KEEP + 1]
    lam = np.concatenate([
        _composed(sig, qs, cnt, exact, KEEP, dominated=True),
        _composed(sig, qs, cnt, orders[exact.size :], KEEP_HIGH, dominated=True),
    ])
    # an upper bound at the integer orders whose sums are exact, for the slopes
    lam_up = np.full(orders.shape, np.inf)
    lam_up[: exact.size] = _composed(sig, qs, cnt, exact, KEEP, dominated=False)
    return lam, lam_up


def rdp_log_delta_floor(
    sigma: np.ndarray,
    sample_rate: np.ndarray,
    counts: np.ndarray,
    epsilons: np.ndarray,
    curve: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """A lower bound on ``log`` of every RDP-to-delta conversion's answer at ``epsilons``
    for the composition of Poisson-subsampled Gaussian steps (add/remove, sensitivity
    1): noise multipliers ``sigma``, sample rates ``sample_rate``, each ``counts``
    times.  See the module docstring for the argument.

    Parameters
    ----------
    sigma, sample_rate, counts : array_like
        One entry per distinct step: sigma > 0, q in (0, 1], count >= 1.
    epsilons : array_like
        The epsilons (>= 0).
    curve : tuple of numpy.ndarray, optional
        :func:`floor_curve` of the same steps, if kept (then the steps are not read).

    Returns
    -------
    numpy.ndarray
        ``F`` with ``log(delta_RDP(eps)) >= F`` for every sound RDP curve of the
        composition and every set of orders the conversion optimises over; same
        shape as ``epsilons``.

    Examples
    --------
    >>> from dpacct.accountant.rdp.conversion import rdp_to_delta
    >>> from dpacct.accountant.rdp.subsampled_rdp import subsampled_gaussian_rdp
    >>> floor = rdp_log_delta_floor([1.0], [0.01], [1000], [1.0])
    >>> d = rdp_to_delta(lambda a: 1000 * subsampled_gaussian_rdp(0.01, 1.0, a), 1.0)
    >>> bool(np.exp(floor[0]) <= d)
    True
    """
    lam, lam_up = floor_curve(sigma, sample_rate, counts) if curve is None else curve
    orders = FLOOR_ORDERS
    eps = np.asarray(epsilons, dtype=float).reshape(-1)[:, None]
    # the order 1 joins the grid: Lambda(1) = 0 exactly (E_Q[P/Q] = 1)
    a_all = np.concatenate([[1.0], orders])
    lam_all = np.concatenate([[0.0], lam])
    up_all = np.concatenate([[0.0], lam_up, [np.inf]])
    # g(a) = (a - 1) log(1 - 1/a) - log a at the orders (its value at 1 is not used)
    g = np.concatenate([[np.nan], (orders - 1.0) * np.log1p(-1.0 / orders) - np.log(orders)])
    a_lo, a_hi = a_all[:-1], a_all[1:]
    l_lo, l_hi = lam_all[:-1], lam_all[1:]
    unit = a_hi - a_lo == 1.0
    # on [a_j, a_{j+1}]: Lambda >= L_j (it does not decrease), and for consecutive
    # integers (convexity) the tangents at both ends, their slopes bounded by chords:
    # at a_j at least (L_j - U_{j-1}), at a_{j+1} at most (U_{j+2} - L_{j+1})
    # chords of unit width only: from a_j - 1 (an order of the grid) and to a_{j+1} + 1
    left_unit = np.concatenate([[False], a_lo[1:] - a_all[:-2] == 1.0])
    right_unit = np.concatenate([a_all[2:] - a_hi[:-1] == 1.0, [False]])
    with np.errstate(invalid="ignore"):
        s_lo = np.where(left_unit[1:], l_lo[1:] - up_all[:-3], 0.0)
        s_lo = np.maximum(np.concatenate([[0.0], s_lo]), 0.0)  # at a = 1: KL >= 0
        s_hi = np.where(unit & right_unit, up_all[2:] - l_hi, np.inf)
    s_hi = np.where(np.isnan(s_hi), np.inf, s_hi)

    def h(a):  # max of the two lines, less (a - 1) eps
        left = l_lo + s_lo * (a - a_lo)
        with np.errstate(invalid="ignore"):
            right = np.where(np.isfinite(s_hi), l_hi - s_hi * (a_hi - a), -np.inf)
        return np.maximum(left, right) - (a - 1.0) * eps

    with np.errstate(divide="ignore", invalid="ignore"):
        cross = (l_hi - l_lo - s_hi * a_hi + s_lo * a_lo) / (s_lo - s_hi)
    cross = np.where(np.isfinite(cross) & (cross > a_lo) & (cross < a_hi), cross, a_lo)
    # a piecewise-linear convex function: smallest at an end or at the crossing
    least = np.minimum(np.minimum(h(a_lo), h(a_hi)), h(cross))
    pieces = np.where(unit, least, l_lo - (a_hi - 1.0) * eps) + g[1:]
    pieces -= MARGIN * (np.abs(l_lo) + np.abs(l_hi) + a_hi * eps + 2.0)
    best = np.min(pieces, axis=1)
    # beyond the last order A: (a - 1)(rho_L(A) - eps) - 1 - log a, a >= A
    top = orders[-1]
    c = lam[-1] / (top - 1.0) - eps[:, 0]
    with np.errstate(divide="ignore"):
        at = np.maximum(top, 1.0 / np.where(c > 0, c, np.inf))
        tail = np.where(c > 0, (at - 1.0) * c - 1.0 - np.log(at), -np.inf)
    tail -= MARGIN * (np.abs(tail) + 2.0)
    best = np.minimum(best, tail)
    return best.reshape(np.shape(epsilons))


def rdp_may_win(mech, flat: np.ndarray, found: np.ndarray) -> np.ndarray:
    """Where (a boolean mask over ``flat``) the RDP conversion might answer below
    ``found``: everywhere, unless the mechanism states a certified floor under every
    RDP conversion of its curve (``_rdp_log_delta_floor``, a schedule of subsampled
    Gaussians: :func:`~dpacct.accountant.rdp.rdp_floor.rdp_log_delta_floor`) and that
    floor is at or above ``found`` (then ``min(found, rdp) == found``).

    Examples
    --------
    >>> import numpy as np
    >>> rdp_may_win(object(), np.array([1.0]), np.array([1e-9])).tolist()
    [True]
    """
    floor_of = getattr(mech, "_rdp_log_delta_floor", None)
    floor = None if floor_of is None else floor_of(flat)
    if floor is None:
        return np.ones(flat.shape, dtype=bool)
    with np.errstate(divide="ignore"):
        return ~(np.asarray(floor) >= np.log(found))
