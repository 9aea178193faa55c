"""Renyi DP of subsampled mechanisms: the exact sampled Gaussian and two general bounds.

Three entry points, all vectorised over the Renyi order ``alpha`` (scalars or arrays of
real orders ``> 1``, ``+inf`` allowed) and all returning *upper bounds* on the RDP
epsilon of one subsampled step:

* :func:`subsampled_gaussian_rdp` -- the Poisson-subsampled Gaussian mechanism
  (Mironov, Talwar & Zhang 2019), exact up to floating point at integer and real orders;
* :func:`poisson_subsampled_rdp` -- any mechanism under Poisson subsampling, from its
  RDP curve (Zhu & Wang 2019, Theorem 6);
* :func:`subsampled_without_replacement_rdp` -- any mechanism under sampling without
  replacement, replace-one neighbours (Wang, Balle & Kasiviswanathan 2019, Theorem 9).

Everything is evaluated in log space: a bound ``exp((alpha - 1) * eps) = 1 + S`` is
computed as ``log S`` by a log-sum-exp over non-negative terms, and then
``eps = log1p(S) / (alpha - 1)``, so that orders of several thousand and noise
multipliers well below one neither overflow nor lose the small-``S`` digits.

Real (non-integer) orders of the general bounds use the convexity of the cumulant
``alpha -> (alpha - 1) * eps(alpha) = log E_Q[(P/Q)^alpha]`` in ``alpha`` (van Erven &
Harremoes 2014, "Renyi divergence and Kullback-Leibler divergence", IEEE Trans. Inf.
Theory, Corollary 2; this is how Wang, Balle & Kasiviswanathan 2019 and Zhu & Wang 2019
extend their integer-order bounds to real orders): if ``(alpha - 1) eps(alpha)`` is
bounded by ``U(a)`` and ``U(a + 1)`` at the neighbouring integers, the chord between
them bounds it in between, and at ``alpha = 1`` the cumulant is ``log 1 = 0``.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..numerics import _log_expm1, logsumexp
from ..numerics import scipy_special as special
from ..validation import check_alpha, check_positive, check_sample_rate
from .rdp_series import (
    _CVZ_TERMS,
    _ULP4,
    MAX_EXPANSION_ORDER,
    _cgf_chord,
    _chunked,
    _monotone_envelope,
    _needed_integers,
    _segment_logsumexp,
    _segment_logsumexp_up,
    _segments,
)
from .subsampled_rdp_general import poisson_subsampled_rdp, subsampled_without_replacement_rdp

__all__ = [
    "poisson_subsampled_rdp",
    "subsampled_gaussian_rdp",
    "subsampled_without_replacement_rdp",
]


def _log_minus_d(a: np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray]:
    """``log(1 - (1 - q)^a (1 + a q))`` for ``a > 0``, ``0 < q < 1``, and its relative error.

    ``(1 - q)^a (1 + a q) <= 1`` by Bernoulli's inequality.  Its logarithm
    ``L = a log1p(-q) + log1p(a q)`` cancels to ``-a (a + 1) q^2 / 2`` at small ``q``; there
    the series ``L = sum_{n >= 2} ((-1)^(n+1) (a q)^n - a q^n) / n`` (the ``n = 1`` terms
    cancel exactly) is summed instead.  It is used when ``a q <= 1/2`` and ``q <= 1/2``,
    where 64 terms leave a truncation error below ``2^-62`` relative.  Returns the log and
    a bound on the relative round-off of ``1 - (1 - q)^a (1 + a q)``.
    """
    a = np.asarray(a, dtype=float)
    t1, t2 = a * math.log1p(-q), np.log1p(a * q)
    value = t1 + t2
    with np.errstate(divide="ignore"):
        rho = _ULP4 * (8.0 + (np.abs(t1) + np.abs(t2)) / np.abs(value))
    use_series = (a * q <= 0.5) & (q <= 0.5)
    if np.any(use_series):
        n = np.arange(2, 66, dtype=float)
        aq = a[use_series, None] * q
        terms = ((-1.0) ** (n + 1.0) * aq**n - a[use_series, None] * q**n) / n
        value[use_series] = np.sum(terms[:, ::-1], axis=1)  # smallest terms first
        rho[use_series] = _ULP4 * 80.0
    value = np.minimum(value, 0.0)
    # |d/dL log(-expm1(L))| * |L| <= 1 for L < 0: the relative error carries over
    with np.errstate(divide="ignore"):
        return np.log(-np.expm1(value)), np.minimum(rho, 1.0)


# ----------------------------------------------------------------------------------
# the sampled Gaussian mechanism (Mironov, Talwar & Zhang 2019)
# ----------------------------------------------------------------------------------


def _integer_log_a_minus_1(q: float, sigma: float, orders: np.ndarray) -> np.ndarray:
    """``log(A_alpha - 1)`` at integer orders ``alpha >= 2``, for ``0 < q < 1``.

    MTZ 2019, Section 3.3: ``A_alpha = sum_k C(alpha, k) (1-q)^(alpha-k) q^k
    exp((k^2 - k) / (2 sigma^2))``.  Subtracting ``1 = sum_k C(alpha, k) (1-q)^(alpha-k) q^k``
    term by term leaves the exact sum ``A_alpha - 1 = sum_{k >= 2} C(alpha, k)
    (1-q)^(alpha-k) q^k expm1((k^2 - k) / (2 sigma^2))`` of non-negative terms (``k = 0, 1``
    vanish), which keeps full relative precision even when ``A_alpha - 1`` is tiny.
    """
    m = orders.astype(np.int64)
    starts, owner, pos = _segments(m - 1)  # k = 2 .. m
    k = (pos + 2).astype(float)
    a = m[owner].astype(float)
    g_a, g_k, g_ak = (special.gammaln(x + 1.0) for x in (a, k, a - k))
    x_k = k * (k - 1.0) / (2.0 * sigma * sigma)
    log_q, log_1mq = math.log(q), math.log1p(-q)
    log_terms = g_a - g_k - g_ak + (a - k) * log_1mq + k * log_q + _log_expm1(x_k)
    magnitude = g_a + g_k + np.abs(g_ak) + a * (abs(log_q) + abs(log_1mq)) + x_k
    return _segment_logsumexp_up(log_terms, magnitude, starts)


def _cvz_weights(n: int) -> tuple[np.ndarray, float]:
    """Weights ``c_{n,j} / d_n`` of the Chebyshev accelerator and its error factor ``1/d_n``.

    Cohen, Rodriguez Villegas & Zagier 2000 ("Convergence acceleration of alternating
    series", Experimental Math. 9, Proposition 1 and Algorithm 1): for
    ``S = sum_j (-1)^j b_j`` with ``b_j = int_0^1 x^j dmu(x)`` (``mu`` a positive measure),
    ``S_n = sum_{j < n} (-1)^j (c_{n,j} / d_n) b_j`` obeys ``|S - S_n| <= S / d_n`` with
    ``P_n(x) = T_n(1 - 2x) = sum_j (-1)^j p_j x^j``, ``d_n = P_n(-1) = T_n(3)`` and
    ``c_{n,j} = sum_{i > j} p_i``.  Here ``p_j = n/(n+j) C(n+j, 2j) 4^j``.
    """
    j = np.arange(n + 1, dtype=float)
    log_p = (
        np.log(n / (n + j))
        + special.gammaln(n + j + 1.0)
        - special.gammaln(2.0 * j + 1.0)
        - special.gammaln(n - j + 1.0)
        + j * math.log(4.0)
    )
    p = np.exp(log_p - log_p.max())
    tail_sums = np.cumsum(p[::-1])[::-1]  # tail_sums[j] = sum_{i >= j} p_i
    d = tail_sums[0]
    weights = tail_sums[1:] / d  # c_{n,j} / d_n for j = 0 .. n-1, all in (0, 1]
    inv_d = 1.0 / math.cosh(n * math.acosh(3.0))  # 1 / T_n(3), exactly
    return weights, inv_d


@functools.cache
def _cvz() -> tuple[np.ndarray, float]:
    """``_cvz_weights(_CVZ_TERMS)``, computed at the first use rather than at import
    (its ``gammaln`` would import ``scipy.special`` with the serialization registry,
    issue 37)."""
    return _cvz_weights(_CVZ_TERMS)


def _half_line_terms(
    log_gauss: np.ndarray,
    mag_gauss: np.ndarray,
    log_erfcx: np.ndarray,
    mag_erfcx: np.ndarray,
    y: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Log of ``exp(log_gauss) * Phi(y)``, also equal to ``exp(log_erfcx) * erfcx(-y/sqrt2)/2``.

    The first form is used for ``y >= 0`` (``log_ndtr`` is tiny there) and the second for
    ``y < 0``, where the first would subtract two large exponents.  Also returns each
    term's log-magnitude (for the round-off allowance): the given magnitudes plus the
    sensitivity of the normal-CDF factor to a relative error in ``y``.
    """
    t = np.empty_like(y)
    mag = np.empty_like(y)
    neg = y < 0.0
    with np.errstate(divide="ignore"):  # y = -inf: the term is exactly 0, log -inf
        log_e = np.log(0.5 * special.erfcx(-y[neg] / math.sqrt(2.0)))
    t[neg] = log_erfcx[neg] + log_e
    mag[neg] = mag_erfcx[neg] + y[neg] ** 2 + np.abs(log_e)
    pos = ~neg
    log_n = special.log_ndtr(y[pos])
    t[pos] = log_gauss[pos] + log_n
    mag[pos] = mag_gauss[pos] + 2.0 * np.abs(log_n)
    return t, mag


# long function: one vectorised log-space evaluation of both half-line series with their head
# sums, alternating tails and error terms, which share the per-order segments; 37 lines are the
# docstring
def _fractional_log_a_minus_1(q: float, sigma: float, orders: np.ndarray) -> np.ndarray:
    """Upper bound on ``log(A_alpha - 1)`` at non-integer orders ``alpha > 1``, ``0 < q < 1``.

    MTZ 2019, Section 3.3: split the real line at ``z0 = sigma^2 log(1/q - 1) + 1/2``, where
    ``(1-q) N(0, s^2)`` and ``q N(1, s^2)`` cross, and expand ``(mixture / N(0, s^2))^alpha``
    in a generalised binomial series on either side.  With ``Phi`` the normal CDF,

        A_1 = sum_k C(alpha, k) (1-q)^(alpha-k) q^k e^{(k^2-k)/(2 s^2)} Phi((z0 - k)/s),
        A_2 = sum_k C(alpha, k) (1-q)^k q^(alpha-k) e^{(b^2-b)/(2 s^2)} Phi((b - z0)/s),
              b = alpha - k,

    and ``A_alpha = A_1 + A_2``.  The ``k = 0, 1`` terms of ``A_1`` are traded for
    ``D = (1-q)^alpha + alpha q (1-q)^(alpha-1) - 1 <= 0`` and two tiny normal-tail
    corrections, so that ``A_alpha - 1`` is summed directly (no ``1 + tiny`` round-off).

    Tail bound.  For ``k > alpha`` the coefficients ``C(alpha, k)`` alternate in sign and
    ``|C(alpha, k)| = (|sin(pi alpha)| / pi) int_0^1 t^(k-alpha-1) (1-t)^alpha dt`` is a
    moment sequence in ``k``; the ``k``-dependent integrals are moment sequences too
    (``int mu_0 r^k`` with ``r = q mu_1 / ((1-q) mu_0) <= 1`` left of ``z0``, and the
    mirror-image ratio ``<= 1`` right of it), and so is their product.  So from
    ``K = floor(alpha) + 2`` on, each series is ``-sum_j (-1)^j b_{K+j}`` with ``b`` a
    Hausdorff moment sequence: an alternating series with decreasing terms, whose sum lies
    in ``[-b_K, 0]`` (Leibniz), and which the Cohen-Villegas-Zagier accelerator sums from
    64 terms with a certified error of at most ``b_K / T_64(3) < 1e-49 b_K`` -- far below
    the 1e-30 relative accuracy asked for.  That error bound is *added* to the result, so
    the value returned is an upper bound, not just an approximation.  (Plain truncation
    would need millions of terms: the tail terms decay only like ``k^-(alpha+2)``.)

    The terms right of the crossing are evaluated with ``erfcx``
    (``e^{(k^2-k)/(2s^2)} Phi(-(k-z0)/s) = e^{k log((1-q)/q) - z0^2/(2s^2)}
    erfcx((k-z0)/(s sqrt 2)) / 2``), which avoids subtracting two huge exponents.

    Floating point.  ``A_alpha - 1 = P - N`` is a difference of two sums of positive
    terms; their round-off (a few ulps per unit of log-magnitude of every term) is bounded
    by a running allowance that is added as well.  When ``A_alpha - 1`` is tiny compared
    with ``P`` (very large ``sigma``) this allowance dominates and the caller's chord bound
    from the integer orders takes over.
    """
    alpha = orders
    n_ord = alpha.size
    l1q = math.log1p(-q)
    lq = math.log(q)
    z0 = sigma * sigma * (l1q - lq) + 0.5
    s2 = 2.0 * sigma * sigma
    fl = np.floor(alpha)
    head_len = (fl + 2.0).astype(np.int64)  # k = 0 .. floor(alpha) + 1 summed directly
    starts, owner, pos = _segments(head_len + _CVZ_TERMS)
    k = pos.astype(float)
    a = alpha[owner]
    g_a, g_k, g_ak = (special.gammaln(x + 1.0) for x in (a, k, a - k))
    log_c = g_a - g_k - g_ak  # log |C(alpha, k)|
    # sign of C(alpha, k): + for k <= floor(alpha) + 1, then alternating
    past = k - fl[owner] - 1.0
    negative = (past > 0) & (np.mod(past, 2.0) == 1.0)
    c_mag = np.abs(g_a) + np.abs(g_k) + np.abs(g_ak)
    common = a * l1q - z0 * z0 / s2  # shared log prefactor of the erfcx forms
    common_mag = a * abs(l1q) + z0 * z0 / s2

    # series A_1 (left of z0), index k; the k = 0, 1 terms are replaced by D and the
    # corrections below
    t1, mag1 = _half_line_terms(
        log_c + (a - k) * l1q + k * lq + k * (k - 1.0) / s2,
        c_mag + np.abs(a - k) * abs(l1q) + k * abs(lq) + k * k / s2,
        log_c + common,
        c_mag + common_mag,
        (z0 - k) / sigma,
    )
    t1[k < 2.0] = -np.inf
    # series A_2 (right of z0), index k, exponent b = alpha - k
    b = a - k
    t2, mag2 = _half_line_terms(
        log_c + k * l1q + b * lq + b * (b - 1.0) / s2,
        c_mag + k * abs(l1q) + np.abs(b) * abs(lq) + b * b / s2,
        log_c + common,
        c_mag + common_mag,
        (b - z0) / sigma,
    )

    head = pos < head_len[owner]
    pos_head = head & ~negative
    neg_head = head & negative
    both = np.concatenate
    seg_both = both([starts, starts + k.size])
    head_pos = _segment_logsumexp(
        both([np.where(pos_head, t1, -np.inf), np.where(pos_head, t2, -np.inf)]), seg_both
    )
    head_neg = _segment_logsumexp(
        both([np.where(neg_head, t1, -np.inf), np.where(neg_head, t2, -np.inf)]), seg_both
    )
    with np.errstate(invalid="ignore"):
        err = both(
            [
                np.where(np.isfinite(t), t + np.log(_ULP4 * (16.0 + m)), -np.inf)
                for t, m in ((t1, mag1), (t2, mag2))
            ]
        )
    head_err = _segment_logsumexp(err, seg_both)

    # tails: -sum_j (-1)^j b_{K+j}, K = floor(alpha) + 2 (a negative coefficient), summed
    # by the accelerator; the upper bound on the tail is -(accel - 1/d_n) * b_K
    tail = ~head
    j = (pos - head_len[owner])[tail]
    tail_owner = owner[tail]
    first_tail = starts + head_len  # flat index of b_K in every segment
    cvz_weights, cvz_inv_d = _cvz()
    alt = np.where(j % 2 == 0, 1.0, -1.0) * cvz_weights[j]
    tail_pos, tail_neg, tail_err = [], [], []
    for t in (t1, t2):
        log_bk = t[first_tail]
        with np.errstate(invalid="ignore"):
            ratio = np.exp(t[tail] - log_bk[tail_owner])
        ratio[~np.isfinite(ratio)] = 0.0
        accel = np.bincount(tail_owner, weights=alt * ratio, minlength=n_ord)
        net = accel - cvz_inv_d
        with np.errstate(divide="ignore"):
            log_net = log_bk + np.log(np.abs(net))
        tail_neg.append(np.where(net > 0, log_net, -np.inf))
        tail_pos.append(np.where(net < 0, log_net, -np.inf))
        tail_err.append(log_bk + math.log(_CVZ_TERMS * _ULP4))  # summation round-off

    log_minus_d, d_rho = _log_minus_d(alpha - 1.0, q)
    c0 = alpha * l1q + special.log_ndtr(-z0 / sigma)
    c1 = np.log(alpha) + (alpha - 1.0) * l1q + lq + special.log_ndtr((1.0 - z0) / sigma)
    corr_rho = _ULP4 * (16.0 + alpha * (abs(l1q) + abs(lq)) + 2.0 * (z0 / sigma) ** 2)
    with np.errstate(invalid="ignore"):
        corr_err = logsumexp(
            np.column_stack(
                [
                    log_minus_d + np.log(d_rho),
                    np.where(np.isfinite(c0), c0 + np.log(corr_rho), -np.inf),
                    np.where(np.isfinite(c1), c1 + np.log(corr_rho), -np.inf),
                ]
            ),
            axis=1,
        )

    with np.errstate(divide="ignore"):
        log_p = logsumexp(
            np.column_stack([head_pos[:n_ord], head_pos[n_ord:], *tail_pos]), axis=1
        )
        log_n = logsumexp(
            np.column_stack([head_neg[:n_ord], head_neg[n_ord:], *tail_neg, log_minus_d, c0, c1]),
            axis=1,
        )
        log_e = logsumexp(
            np.column_stack([head_err[:n_ord], head_err[n_ord:], *tail_err, corr_err]), axis=1
        )
        # A - 1 <= P - N + E
        gap = -np.expm1(log_n - log_p) + np.exp(log_e - log_p)
        out = np.where(gap > 0, log_p + np.log(np.where(gap > 0, gap, 1.0)), np.inf)
    return out


def subsampled_gaussian_rdp(sample_rate: float, sigma: float, alpha: object) -> np.ndarray:
    r"""Renyi DP of the Poisson-subsampled Gaussian mechanism (one step of DP-SGD).

    Each record is included independently with probability ``q = sample_rate``; the
    sensitivity-1 query of the sample is released with ``N(0, sigma^2)`` noise.  Under
    add/remove-one neighbours the RDP at order ``alpha`` is the larger of the two
    directions, which for this mechanism is the "remove" direction (Mironov, Talwar &
    Zhang 2019, "Renyi Differential Privacy of the Sampled Gaussian Mechanism",
    arXiv:1908.10530, Section 3)::

        eps(alpha) = log(A_alpha) / (alpha - 1),
        A_alpha = E_{z ~ N(0, s^2)} [ ((1 - q) + q exp((2z - 1) / (2 s^2)))^alpha ].

    Integer orders use the finite binomial expansion (MTZ 2019, Section 3.3)
    ``A_alpha = sum_k C(alpha, k) (1-q)^(alpha-k) q^k exp((k^2 - k) / (2 sigma^2))``,
    summed as ``A_alpha - 1`` over non-negative terms in log space (log-gamma binomials),
    so orders up to ``1e4`` and ``sigma`` down to ``0.3`` neither overflow nor lose the
    small-``q`` digits.  Real orders use the two-series formula of MTZ 2019, Section 3.3
    (``A_alpha = A_1 + A_2`` with normal-CDF factors, split at
    ``z0 = sigma^2 log(1/q - 1) + 1/2``); the infinite tails are summed with a certified
    error bound that is added to the result (see ``_fractional_log_a_minus_1``), and the
    value is also capped by the chord of ``(alpha - 1) eps`` between the neighbouring
    integer orders (convexity), which is always a valid bound.

    Parameters
    ----------
    sample_rate : float
        Poisson sampling probability ``q`` in ``(0, 1]``.
    sigma : float
        Noise multiplier (noise standard deviation per unit of L2 sensitivity), ``> 0``.
    alpha : float or array_like
        Renyi order(s), real and ``> 1``; ``inf`` is allowed (and gives ``inf``).

    Returns
    -------
    numpy.ndarray
        RDP epsilon at every order, with the shape of ``alpha`` (0-d for a scalar).

    Raises
    ------
    ValueError
        If ``sample_rate`` is not in ``(0, 1]``, ``sigma`` is not positive and finite,
        or an order is ``<= 1`` or NaN.

    Notes
    -----
    With ``q = 1`` this is the plain Gaussian mechanism, ``alpha / (2 sigma^2)``, which
    also caps the result for every ``q`` (subsampling never hurts), and which is the
    value returned above ``MAX_EXPANSION_ORDER = 65536`` (the expansions need one term
    per integer up to the order; there the two differ by at most
    ``alpha log(1/q) / (alpha - 1)``).  Within one call the
    curve is made non-decreasing in ``alpha`` (a bound at a larger order is a bound at a
    smaller one), see ``_monotone_envelope``.

    All round-off and truncation allowances are added, never subtracted, so the error is
    always on the high side; the measured accuracy: docs/theory/subsampled_rdp.md,
    section 'Accuracy of the Poisson-subsampled Gaussian RDP'.

    Examples
    --------
    >>> from dpacct.accountant.rdp.subsampled_rdp import subsampled_gaussian_rdp
    >>> [round(float(e), 6) for e in subsampled_gaussian_rdp(0.01, 1.0, [2, 4.5, 8])]
    [0.000172, 0.000415, 0.000894]
    >>> float(subsampled_gaussian_rdp(1.0, 2.0, 3.0))  # no subsampling: alpha / (2 sigma^2)
    0.375
    """
    q = check_sample_rate(sample_rate)
    sigma = check_positive("sigma", sigma)
    orders = check_alpha(alpha)
    flat = orders.ravel()
    if q == 1.0:
        return (flat / (2.0 * sigma * sigma)).reshape(orders.shape)
    out = np.full(flat.shape, np.inf)  # alpha = inf
    finite = np.isfinite(flat)
    fvals = flat[finite]
    if fvals.size:
        # subsampling never hurts: the unsubsampled Gaussian's alpha / (2 sigma^2) is a
        # bound too (joint quasi-convexity of the Renyi divergence); above
        # MAX_EXPANSION_ORDER it is the bound used
        vals = fvals / (2.0 * sigma * sigma)
        small = fvals <= MAX_EXPANSION_ORDER
        sv = fvals[small]
        if sv.size:
            need = _needed_integers(sv)
            log_a = _chunked(lambda o: _integer_log_a_minus_1(q, sigma, o), need)
            cgf_need = np.logaddexp(0.0, log_a)  # log A_alpha
            bound = _cgf_chord(sv, need, cgf_need)  # exact at the integer orders
            frac = sv != np.floor(sv)
            if np.any(frac):
                log_f = _chunked(lambda o: _fractional_log_a_minus_1(q, sigma, o), sv[frac])
                bound[frac] = np.minimum(bound[frac], np.logaddexp(0.0, log_f))
            vals[small] = np.minimum(bound / (sv - 1.0), vals[small])
        out[finite] = vals
    return _monotone_envelope(flat, out).reshape(orders.shape)
