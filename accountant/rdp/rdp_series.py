"""Log-space series helpers shared by the subsampled-RDP bounds.

:mod:`~dpacct.accountant.rdp.subsampled_rdp` (the sampled Gaussian) and
:mod:`~dpacct.accountant.rdp.subsampled_rdp_general` (any mechanism) evaluate binomial
expansions in log space, in bounded memory, with a round-off allowance per term, and
turn integer-order bounds into real-order ones by the convexity of the cumulant
(see :mod:`~dpacct.accountant.rdp.subsampled_rdp`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# Tail of the fractional-order series: number of terms fed to the Cohen-Villegas-Zagier
# accelerator, and its certified relative error 1 / T_n(3) (T_n the Chebyshev polynomial).
_CVZ_TERMS = 64
# Round-off allowance: 4 ulps (of 1.0) per unit of log-magnitude that enters a term.
_ULP4 = 2.0**-50
#: Largest order whose bound is computed from its binomial expansion: the expansions
#: have one term per integer up to the order, so an order of 1e12 would need terabytes.
#: Above it every subsampled-RDP bound returns the base mechanism's own RDP (for the sampled
#: Gaussian ``alpha / (2 sigma^2)``), a valid bound because subsampling never increases
#: the Renyi divergence (joint quasi-convexity, van Erven & Harremoes 2014, Theorem 13:
#: ``D_alpha((1-q) Q + q P || Q) <= max(D_alpha(Q || Q), D_alpha(P || Q))``).  At such
#: orders the sampled Gaussian's curve is within ``alpha log(1/q) / (alpha - 1)`` (about
#: ``log(1/q)``) of ``alpha / (2 sigma^2)`` (its ``k = alpha`` term alone gives that lower
#: bound), a small relative loss unless ``sigma`` is large.  The (epsilon, delta)
#: conversions use orders far below the limit.
MAX_EXPANSION_ORDER = 2.0**16
#: orders are expanded in groups of at most this many terms in total (bounded memory)
_CHUNK_TERMS = 1 << 20


# ----------------------------------------------------------------------------------
# small log-space helpers
# ----------------------------------------------------------------------------------


def _segment_logsumexp(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Log-sum-exp of ``values`` over contiguous, non-empty segments beginning at ``starts``.

    ``-inf`` entries are zeros; a segment holding ``+inf`` sums to ``+inf``.
    """
    n_seg = starts.size
    if n_seg == 0:
        return np.empty(0)
    seg = np.repeat(np.arange(n_seg), np.diff(np.append(starts, values.size)))
    peak = np.maximum.reduceat(values, starts)
    shift = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        weights = np.exp(values - shift[seg])
    weights[~np.isfinite(weights)] = 0.0
    total = np.bincount(seg, weights=weights, minlength=n_seg)
    with np.errstate(divide="ignore"):
        out = np.log(total) + shift
    out[peak == -np.inf] = -np.inf
    out[peak == np.inf] = np.inf
    return out


def _segment_logsumexp_up(
    log_terms: np.ndarray, magnitude: np.ndarray, starts: np.ndarray
) -> np.ndarray:
    """Segment log-sum-exp of non-negative terms, rounded up by a round-off allowance.

    ``magnitude`` is, per term, the sum of the absolute values that were added to form
    its logarithm; the term may be off by about ``4 ulps`` per unit of that (plus its own
    size), and the sum is raised by that much so that it stays an upper bound.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        err = np.where(
            np.isfinite(log_terms),
            log_terms + np.log(_ULP4 * (16.0 + magnitude + np.abs(log_terms))),
            log_terms,
        )
    return np.logaddexp(_segment_logsumexp(log_terms, starts), _segment_logsumexp(err, starts))


def _segments(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flattened layout of segments with the given (positive) lengths.

    Returns ``(starts, owner, position)``: the first flat index of every segment, the
    segment of every flat index and the position of every flat index in its segment.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    starts = np.zeros(lengths.size, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    owner = np.repeat(np.arange(lengths.size), lengths)
    position = np.arange(int(lengths.sum()), dtype=np.int64) - starts[owner]
    return starts, owner, position


def _chunked(fn: Callable[[np.ndarray], np.ndarray], orders: np.ndarray) -> np.ndarray:
    """Apply a per-order expansion to groups of orders of bounded total length."""
    if orders.size == 0:
        return np.empty(0)
    lengths = np.floor(orders) + _CVZ_TERMS + 2.0
    out = np.empty(orders.shape)
    start, total = 0, 0.0
    for i, n in enumerate(lengths):
        if i > start and total + n > _CHUNK_TERMS:
            out[start:i] = fn(orders[start:i])
            start, total = i, 0.0
        total += n
    out[start:] = fn(orders[start:])
    return out


# ----------------------------------------------------------------------------------
# integer orders -> real orders
# ----------------------------------------------------------------------------------


def _monotone_envelope(orders: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Lower every bound to the smallest bound at an order at least as large.

    The Renyi divergence is non-decreasing in its order (van Erven & Harremoes 2014,
    Theorem 3), and so is a mechanism's RDP curve; a bound at ``alpha' >= alpha`` is
    therefore also a bound at ``alpha``.  This makes the returned curve non-decreasing
    over the orders asked for in one call.
    """
    if orders.size < 2:
        return bounds
    perm = np.argsort(orders, kind="stable")
    env = np.minimum.accumulate(bounds[perm][::-1])[::-1]
    out = np.empty_like(bounds)
    out[perm] = env
    return out


def _needed_integers(orders: np.ndarray) -> np.ndarray:
    """Sorted integer orders ``>= 2`` around finite orders ``> 1``: their floors and ceilings."""
    return np.unique(np.concatenate([np.maximum(np.floor(orders), 2.0), np.ceil(orders)]))


def _cgf_chord(orders: np.ndarray, need: np.ndarray, cgf_need: np.ndarray) -> np.ndarray:
    """Chord of the cumulant ``(alpha - 1) eps(alpha)`` between neighbouring integer orders.

    ``cgf_need`` holds (bounds on) the cumulant at the integers ``need`` (from
    :func:`_needed_integers`).  The cumulant is convex in ``alpha`` (van Erven & Harremoes
    2014, Corollary 2) and ``0`` at ``alpha = 1``, so the chord bounds it at every real
    order in between; at the integer orders themselves the value is returned unchanged.
    """
    lo = np.floor(orders)
    hi = np.ceil(orders)
    c_hi = cgf_need[np.searchsorted(need, hi)]
    c_lo = np.where(lo < 2.0, 0.0, cgf_need[np.searchsorted(need, np.maximum(lo, 2.0))])
    w = orders - lo
    with np.errstate(invalid="ignore"):
        chord = np.where(hi == lo, c_hi, (1.0 - w) * c_lo + w * c_hi)
    chord[np.isnan(chord)] = np.inf
    return chord
