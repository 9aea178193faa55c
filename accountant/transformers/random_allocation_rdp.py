"""Renyi bounds of one random-allocation epoch (k = 1, Gaussian steps), both directions.

* :func:`remove_rdp` -- the exact Renyi divergence ``D_a(P || Q)`` at integer orders up to
  :data:`MAX_ORDER` (Feldman & Shenfeld 2025, Corollary 6.2, first part), summed as the
  coefficient of a power series (below) instead of over the partitions of ``a``;
* :func:`add_rdp` -- an upper bound on ``D_a(Q || P)`` (this project's derivation, in its
  docstring), evaluated at :data:`ADD_ORDERS`.

``P = (1/T) sum_j N(e_j, sigma^2 I_T)`` and ``Q = N(0, sigma^2 I_T)``: the pair of
:mod:`~dpacct.accountant.transformers.random_allocation`, whose docstring states what
rests on them.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
from scipy import special

from ..numerics import EXP_OVERFLOW, logsumexp
from ..validation import show_value

__all__ = ["ADD_ORDERS", "MAX_ORDER", "add_rdp", "remove_rdp", "remove_rdp_orders"]

#: largest integer Renyi order evaluated exactly by :func:`remove_rdp`
MAX_ORDER = 32

_U = 2.0**-53


def _log_poly_product(
    a: np.ndarray, ea: np.ndarray, b: np.ndarray, eb: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Log-coefficients of the product of two power series, truncated to ``a.size``
    terms, ``c_k = log sum_{i + j = k} e^{a_i + b_j}``, with a bound on each one's
    absolute error.

    ``ea``, ``eb`` bound the inputs' errors.  A sum of positive terms errs in the log by
    at most its largest term's error, ``max_{i + j = k} (ea_i + eb_j)``; the evaluation
    adds its own: the exponents ``a_i + b_j`` and their shift by the largest round to
    ``u`` of ``|a_i| + |b_j|`` and of twice that, ``exp`` and the sum of at most ``n``
    positive terms to ``(n + 4) u`` relative, the ``log`` and the shift back to ``2 u``
    of ``|c_k|`` -- ``6 u D_k + 2 u |c_k| + (n + 8) u`` with ``D_k`` the largest
    ``|a_i| + |b_j|`` on the anti-diagonal.  The constant coefficient is the single term
    ``a_0 + b_0``, rounded once (a sum of errors that would otherwise double at every
    squaring).
    """
    n = a.size
    i = np.arange(n)
    rows, cols = i[:, None], i[:, None] + i[None, :]

    def sheared(values: np.ndarray) -> np.ndarray:
        out = np.full((n, 2 * n - 1), -np.inf)
        out[rows, cols] = values
        return out[:, :n]

    c = logsumexp(sheared(a[:, None] + b[None, :]), axis=0)
    live = np.isfinite(a)[:, None] & np.isfinite(b)[None, :]
    mag = np.where(live, np.abs(a)[:, None] + np.abs(b)[None, :], -np.inf)
    carried = np.where(live, ea[:, None] + eb[None, :], -np.inf)
    d = np.maximum(sheared(mag).max(axis=0), 0.0)
    err = np.maximum(sheared(carried).max(axis=0), 0.0)
    err = err + 6.0 * _U * d + 2.0 * _U * np.abs(np.where(np.isfinite(c), c, 0.0))
    err += (n + 8) * _U
    # c_0 is one term, a_0 + b_0, rounded once (exp(0) = 1 and log(1) = 0 are exact):
    # the constant coefficient of a power of f(x / T) stays exactly 0 with no error
    err[0] = ea[0] + eb[0] + _U * abs(float(c[0]))
    return c, err


@cache
def _remove_log_moments(sigma: float, steps: int) -> np.ndarray:
    """Upper bounds on ``log E_Q[(P/Q)^a]`` for ``a = 0 .. MAX_ORDER`` (one epoch).

    Feldman & Shenfeld 2025 (Corollary 6.2, first part): ``E_Q[(P/Q)^a] = T^-a sum
    exp((sum_j n_j^2 - a) / (2 sigma^2))`` over the ``T^a`` tuples of steps, ``n_j`` the
    multiplicity of step ``j``.  Grouping the tuples by their multiplicities
    ``(n_1, ..., n_T)`` (``a! / prod n_j!`` tuples each) and using ``sum n_j = a``,
    this is ``a! [x^a] f(x / T)^T`` with ``f(x) = sum_n e^{n (n - 1) / (2 sigma^2)}
    x^n / n!`` -- the same sum (this project's algebra), computed by repeated squaring
    of the series truncated at degree ``MAX_ORDER``, in log space (all terms positive).
    Every coefficient carries a bound on its round-off
    (:func:`_log_poly_product`), which is added: the value returned is never below the
    exact log-moment.
    """
    n = np.arange(MAX_ORDER + 1, dtype=float)
    lt = math.log(steps)
    base = n * (n - 1.0) / (2.0 * sigma * sigma) - special.gammaln(n + 1.0) - n * lt
    base_err = 8.0 * _U * (np.abs(base) + n * n)  # the terms' own rounding (gammaln: ulps)
    out: tuple[np.ndarray, np.ndarray] | None = None
    cur = (base, base_err)
    k = steps
    while k:
        if k & 1:
            out = cur if out is None else _log_poly_product(*out, *cur)
        k >>= 1
        if k:
            cur = _log_poly_product(*cur, *cur)
    logs = out[0] + special.gammaln(n + 1.0)
    return logs + out[1] + 8.0 * _U * (np.abs(logs) + n * n)


@cache
def remove_rdp_orders(sigma: float, steps: int) -> np.ndarray:
    """:func:`remove_rdp` at every order ``0 .. MAX_ORDER`` (entries 0 and 1 hold order
    2's value: RDP is non-decreasing in the order), from one series power."""
    logs = _remove_log_moments(float(sigma), int(steps))
    orders = np.maximum(np.arange(MAX_ORDER + 1), 2)
    return np.maximum(logs[orders], 0.0) / (orders - 1.0)


def remove_rdp(order: int, sigma: float, steps: int) -> float:
    """Exact Renyi divergence ``D_order(P || Q)`` of one allocation epoch (k = 1).

    Feldman & Shenfeld 2025, Corollary 6.2 (first part), summed as in
    :func:`_remove_log_moments`; rounded up (the value is at or above the exact
    divergence, by the round-off of the sum).  Integer ``order`` in
    ``2 .. MAX_ORDER``.

    Examples
    --------
    One step (T = 1) is the Gaussian mechanism: ``order / (2 sigma^2)``.

    >>> round(remove_rdp(4, 2.0, 1), 12)
    0.5
    """
    if not (isinstance(order, (int, np.integer)) and 2 <= order <= MAX_ORDER):
        raise ValueError(f"order must be an integer in [2, {MAX_ORDER}], got {show_value(order)}")
    return float(remove_rdp_orders(float(sigma), int(steps))[order])


#: cells of the grids behind :func:`add_rdp` (u = -log m; standardised log-normal)
_ADD_U_CELLS = 4000
_ADD_W_CELLS = 4000
#: Chernoff parameters theta tried for the lower tail of the mean
_ADD_THETAS = np.geomspace(1e-2, 1e5, 240)


@cache
def _log_phi_upper(sigma: float) -> np.ndarray:
    """Upper bounds on ``log E[exp(-theta X)]`` at every ``_ADD_THETAS``.

    ``X = exp((y - 1/2) / sigma^2)``, ``y ~ N(0, sigma^2)``: ``log X = mu + w / sigma``
    with ``mu = -1 / (2 sigma^2)``, ``w ~ N(0, 1)``.  ``exp(-theta e^z)`` decreases in
    ``z``, so on each cell of a ``w`` grid it is at most its value at the left end;
    below the grid it is at most 1, above it at most its value at the grid's end.  The
    cells' Gaussian masses are exact differences of ``Phi``.
    """
    w = np.linspace(-14.0, 14.0, _ADD_W_CELLS + 1)
    cdf = special.ndtr(w)
    mass = np.concatenate([[cdf[0]], np.diff(cdf), [special.ndtr(-w[-1])]])
    z = -0.5 / (sigma * sigma) + np.concatenate([[-np.inf], w]) / sigma
    x = np.exp(z)  # value of X at the left end of each cell (0 for the lowest one)
    with np.errstate(divide="ignore"):
        log_mass = np.log(np.maximum(mass, 0.0))
    terms = log_mass[None, :] - _ADD_THETAS[:, None] * x[None, :]
    return logsumexp(terms, axis=1) * (1.0 + 1e-12) + 1e-15


@cache
def _chernoff_envelope(sigma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The lines ``theta m + log_phi(theta)`` of :data:`_ADD_THETAS` that reach the lower
    envelope, in the order in which they do as ``m`` grows, and the breakpoints between
    them (the convex-hull trick: each line is kept only where it is the least)."""
    log_phi = _log_phi_upper(sigma)
    keep: list[int] = []
    for i in range(_ADD_THETAS.size - 1, -1, -1):  # decreasing slopes
        while len(keep) >= 2:
            j, k = keep[-2], keep[-1]
            # line k is never the least once line i meets line j no later than k does
            x_ji = (log_phi[i] - log_phi[j]) / (_ADD_THETAS[j] - _ADD_THETAS[i])
            x_jk = (log_phi[k] - log_phi[j]) / (_ADD_THETAS[j] - _ADD_THETAS[k])
            if x_ji <= x_jk:
                keep.pop()
            else:
                break
        keep.append(i)
    idx = np.array(keep)
    th, lp = _ADD_THETAS[idx], log_phi[idx]
    breaks = (lp[1:] - lp[:-1]) / (th[:-1] - th[1:])
    return th, lp, breaks


def _chernoff(sigma: float, steps: int, m: np.ndarray) -> np.ndarray:
    """``min_theta T (theta m + log_phi(theta))`` over :data:`_ADD_THETAS`, for every
    ``m``: the least of the envelope's line at ``m`` and its two neighbours (any theta
    gives a valid Chernoff bound; the neighbours only absorb the rounding of the
    breakpoints)."""
    th, lp, breaks = _chernoff_envelope(sigma)
    pos = np.searchsorted(breaks, m)
    best = np.full(m.shape, np.inf)
    for shift in (-1, 0, 1):
        j = np.clip(pos + shift, 0, th.size - 1)
        best = np.minimum(best, steps * (th[j] * m + lp[j]))
    return best


# long function: 66 lines are the docstring (the bound, its theorem and the premise it rests
# on); the body is 61 lines
@cache
def add_rdp(order: float, sigma: float, steps: int) -> float:
    """Upper bound on the add-direction Renyi divergence of one allocation epoch (k = 1).

    The add direction compares ``Q = N(0, sigma^2 I_T)`` (record absent) with the mixture
    ``P = (1/T) sum_j N(e_j, sigma^2 I_T)``: ``D_a(Q || P) = log E_Q[M^{-b}] / b`` with
    ``b = a - 1`` and ``M = (1/T) sum_j X_j``, ``X_j = exp((y_j - 1/2) / sigma^2)``
    i.i.d. log-normal with ``E X = 1`` and ``Var X = e^{1/sigma^2} - 1``
    (the likelihood ratio of Feldman & Shenfeld 2025, Section 6, in the other order).
    This project's derivation, each step an inequality in the safe direction:

    1. for ``0 < m0 < 1`` and ``m >= m0``, Taylor's theorem with Lagrange remainder at
       1 gives ``m^{-b} <= 1 - b (m - 1) + c (m - 1)^2``, ``c = b (b + 1) m0^{-b-2} / 2``
       (the second derivative is largest at ``m0``); the right side is positive for
       ``m < 1``, so ``E[M^{-b}] <= 1 + c Var(M) + E[M^{-b}; M < m0]`` with
       ``Var(M) = (e^{1/sigma^2} - 1) / T``;
    2. ``E[M^{-b}; M < m0] = m0^{-b} P(M < m0) + int_0^{m0} b m^{-b-1} P(M < m) dm``
       (layer cake);
    3. ``P(M < m)`` is at most the least of: Chernoff,
       ``inf_theta e^{theta T m} E[e^{-theta X}]^T`` (the Laplace transform bounded from
       above cell by cell, :func:`_log_phi_upper`); Maurer 2003 (Theorem 1, a
       non-negative variable's lower tail), ``exp(-T (1 - m)^2 / (2 E X^2))``; and
       ``P(max_j X_j < T m) = F_X(T m)^T`` (``M >= max_j X_j / T``).  Each is
       non-decreasing in ``m``, so the integral of step 2 is bounded by an upper
       Riemann sum on a grid in ``u = -log m`` (the power integrated exactly per cell);
       beyond the grid, ``F_X(T m)^T <= exp(-T sigma^2 (u - u0)^2 / 2)``
       (``Phi(-x) <= e^{-x^2/2}``, ``u0 = log T + 1 / (2 sigma^2)``) integrates in closed
       form;
    4. the bound is minimised over ``m0`` on the grid's nodes;
    5. a second bound needs no ``m0``: with ``c(m) = b (b + 1) min(m, 1)^{-b-2} / 2``
       the Taylor bound holds for every ``m > 0``, so
       ``E[M^{-b}] <= 1 + c(1) Var(M) + E[h(M); M < 1]``,
       ``h(m) = (c(m) - c(1)) (1 - m)^2`` (decreasing on (0, 1), zero at 1), and
       ``E[h(M); M < 1] = int_0^1 (-h'(m)) P(M < m) dm`` is bounded cell by cell by the
       tail bound at the cell's right end times the exact rise of ``h``; the smaller
       of the two bounds is returned, rounded up.

    For large ``T`` this is about ``a (a / (a - 1)) (e^{1/sigma^2} - 1) / (2 T)`` --
    the leading term of the true divergence -- instead of the ``1 / (2 sigma^2)`` that
    the concavity bound pays; for small ``T`` and large orders the concavity bound
    (module docstring) is smaller, and the mechanism takes the smaller of the two.

    Parameters
    ----------
    order : float
        Renyi order ``a > 1`` (real).
    sigma : float
        Noise multiplier, > 0.
    steps : int
        Steps per epoch ``T``, >= 1.

    Returns
    -------
    float
        An upper bound on ``D_order(Q || P)`` (``inf`` if no finite bound is found).

    Examples
    --------
    One step is the Gaussian mechanism, ``order / (2 sigma^2)`` exactly:

    >>> round(add_rdp(4, 2.0, 1), 6) >= 0.5
    True

    Large ``T``: far below the concavity bound's ``1 / (2 sigma^2) = 0.5``:

    >>> bool(add_rdp(8, 1.0, 1000) < 0.05)
    True
    """
    a = float(order)
    if not a > 1.0:
        raise ValueError(f"order must be > 1, got {show_value(order)}")
    s = float(sigma)
    t = int(steps)
    beta = a - 1.0
    s2 = s * s
    if t == 1:
        return a / (2.0 * s2)
    if 1.0 / s2 > 700.0:  # e^{1/sigma^2} overflows: no finite bound from this route
        return math.inf
    var = math.expm1(1.0 / s2) / t
    u0 = math.log(t) + 0.5 / s2
    prec = t * s2
    umax = u0 + beta / prec + 14.0 / math.sqrt(prec) + 1.0
    half = _ADD_U_CELLS // 2
    u = np.concatenate([np.geomspace(1e-6, 1.0, half), np.linspace(1.0, umax, half + 1)[1:]])
    m = np.exp(-u)
    # log P(M < m): the least of the three bounds of step 3
    maurer = -t * (1.0 - m) ** 2 / (2.0 * math.exp(1.0 / s2))
    largest = t * special.log_ndtr(s * (math.log(t) - u + 0.5 / s2))
    chernoff = _chernoff(s, t, m)
    log_b = np.minimum(np.minimum(maurer, largest), np.minimum(chernoff, 0.0))
    with np.errstate(over="ignore", invalid="ignore"):
        cells = np.exp(log_b[:-1] + beta * u[1:] + np.log(-np.expm1(-beta * np.diff(u))))
        far = (
            beta
            * math.exp(min(beta * u0 + beta * beta / (2.0 * prec), EXP_OVERFLOW))
            * math.sqrt(2.0 * math.pi / prec)
            * float(special.ndtr(-(umax - u0 - beta / prec) * math.sqrt(prec)))
        )
        below = np.concatenate([np.cumsum(cells[::-1])[::-1], [0.0]])
        tails = below + far + np.exp(log_b + beta * u)
        growth = np.exp(np.minimum((beta + 2.0) * u, EXP_OVERFLOW))
        main = 1.0 + 0.5 * beta * (beta + 1.0) * growth * var
        total = main + tails
        # step 1' (no m0): with c(m) = b (b+1) min(m,1)^{-b-2} / 2 the Taylor bound holds
        # for every m > 0, so E[M^{-b}] <= 1 + c(1) Var(M) + E[h(M); M < 1] with
        # h(m) = (c(m) - c(1)) (1 - m)^2, decreasing on (0, 1) and 0 at 1; layer cake:
        # E[h(M); M < 1] = int_0^1 (-h'(m)) P(M < m) dm <= sum over cells of
        # P-bound at the cell's right end times the exact rise of h across the cell
        c1 = 0.5 * beta * (beta + 1.0)
        h = c1 * np.expm1(np.minimum((beta + 2.0) * u, EXP_OVERFLOW)) * (-np.expm1(-u)) ** 2
        rise = np.diff(h)  # h(m_{i+1}) - h(m_i) >= 0 (u increasing, m decreasing)
        # (the first cell, m in (e^{-u_0}, 1), is taken with P(M < m) <= 1)
        inner = float(h[0] + np.sum(np.exp(log_b[:-1]) * rise))
        # beyond the grid: dh/du <= (b + 4) c(m) and P(M < m) <= e^{-prec (u - u0)^2 / 2}
        b2 = beta + 2.0
        far2 = (
            (beta + 4.0)
            * c1
            * math.exp(min(b2 * u0 + b2 * b2 / (2.0 * prec), EXP_OVERFLOW))
            * math.sqrt(2.0 * math.pi / prec)
            * float(special.ndtr(-(umax - u0 - b2 / prec) * math.sqrt(prec)))
        )
        layered = 1.0 + c1 * var + inner + far2
    total = np.append(total[np.isfinite(total)], layered if math.isfinite(layered) else [])
    if total.size == 0:
        return math.inf
    best = float(total.min()) * (1.0 + 1e-9)
    return math.log(best) / beta


#: integer orders at which :func:`add_rdp` is evaluated (the add direction has no
#: partition sum, so it goes beyond ``MAX_ORDER``, sparsely)
ADD_ORDERS = (*range(2, MAX_ORDER + 1), 40, 48, 64, 80, 96, 128, 160, 192, 256)


@cache
def _add_rdp_suffix_min(sigma: float, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """``(orders, min_{o' >= o} add_rdp(o'))`` over :data:`ADD_ORDERS`.

    The true divergence is non-decreasing in the order (van Erven & Harremoes 2014,
    Theorem 3), so a bound at a larger order holds at a smaller one; the suffix minimum
    is the tightest such bound and is itself non-decreasing.
    """
    orders = np.array(ADD_ORDERS, dtype=float)
    vals = np.array([add_rdp(float(o), sigma, steps) for o in orders])
    return orders, np.minimum.accumulate(vals[::-1])[::-1]
