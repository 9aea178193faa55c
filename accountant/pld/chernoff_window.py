"""The Chernoff window of a circular (FFT) convolution: how long a transform must be.

A product of many PMFs' spectra, inverted on ``n`` points, is the composed PMF folded
(aliased) modulo ``n``.  Markov's inequality at the orders :data:`_ORDERS` bounds the
composed mass beyond any window from the cells' log-moment generating functions: for
every order ``t``, ``P(L >= x) <= exp(Lambda(t) - t x)`` and ``P(L <= x) <= exp(Lambda(-t)
+ t x)``, with ``Lambda`` the sum of the cells' ``Lambda_c`` times their counts.  This
module holds

* the cells' log-MGFs at the orders, rounded up (:func:`_cell_lambdas`; the exponential
  weight tables :func:`_chernoff_weights`, :func:`_neg_weights`, cached);
* the window whose tails are both below a budget (:func:`_window`), and the bound on
  the mass outside a given window (:func:`_alias`), which enters the certificate.

Split out of :mod:`~dpacct.accountant.pld.pld_fft` (issue 37: that module had reached
the 800-line limit); :mod:`~dpacct.accountant.pld.pld_fft` re-exports every name, so
``pld_fft._window`` and the rest are these functions.  The argument in full:
docs/theory/schedules.md (the window and its aliasing budget).

Examples
--------
>>> lam = 0.5 * _ORDERS**2  # a standard normal loss: Lambda(+-t) = t^2 / 2
>>> bottom, need = _window(0.01, lam, lam, 1e-6)
>>> bool(_alias(0.01, lam, lam, bottom, need) <= 2e-6)  # each tail below 1e-6
True
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

__all__: list[str] = []

#: the unit round-off of binary64 (``pld_fft._U``)
_U = 2.0**-53

#: Chernoff orders for the window (both tails)
_ORDERS = np.array([0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0])


def _dense(pmfs: list[np.ndarray], lengths: np.ndarray, width: int) -> np.ndarray:
    """The PMFs as the rows of a zero-padded table of ``width`` columns.

    Copied in row by row: a scatter through flat row and column indices (two int64
    arrays and a concatenation, each as long as the PMFs together) took four times the
    table's memory, at the peak of a schedule's lower end (with the frees of
    :func:`_spectrum_product`, 10 000 phases x 10: traced 78 -> 70 MB, the rest the
    cells' discretisation); the loop is over at most a few hundred rows of one block.
    """
    out = np.zeros((len(pmfs), width))
    for i, (p, n) in enumerate(zip(pmfs, lengths.tolist(), strict=True)):
        out[i, :n] = p
    return out


@lru_cache(maxsize=8)
def _chernoff_weights(width: int, step: float) -> tuple[np.ndarray, np.ndarray]:
    w_neg = _neg_weights_table(width, step)  # exp in place: one array, no temporaries
    if math.frexp(step)[0] != 0.5:  # w_pos shifted by the last node: no overflow
        j = np.arange(width) * step
        return np.exp(np.outer(j - j[-1], _ORDERS)), w_neg
    # power-of-two steps: j_i - j_last = -j_(last-i), times the orders exactly: w_neg reversed
    return np.ascontiguousarray(w_neg[::-1]), w_neg  # bit for bit, half the exps (issue 37)


#: :func:`_neg_weights` tables of at most this many rows (80 bytes a row) are cached;
#: longer ones -- the top of a schedule's tree, hundreds of thousands of bins at 100 000
#: phases -- are made for the one call that needs them, at the length it needs
NEG_WEIGHTS_CACHED = 1 << 16


@lru_cache(maxsize=8)
def _neg_weights_cached(width: int, step: float) -> np.ndarray:
    return _neg_weights_table(width, step)


def _neg_weights_table(length: int, step: float) -> np.ndarray:
    # exp(-t_k l_j) in place: j (-t) is -(j t) exactly, so the entries are
    # _chernoff_weights' w_neg bit for bit, with one table of memory instead of three
    w = np.outer(np.arange(length) * step, -_ORDERS)
    return np.exp(w, out=w)


def _clear_weights() -> None:
    """Drop every cached Chernoff weight table (:func:`_chernoff_weights`,
    :func:`_neg_weights`)."""
    _chernoff_weights.cache_clear()
    _neg_weights_cached.cache_clear()


def _neg_weights(length: int, step: float) -> np.ndarray:
    """``exp(-t_k j step)`` for ``j`` in ``0 .. length - 1`` (rows) and the Chernoff
    orders ``t_k`` (columns), at least ``length`` rows: the rows of the second table of
    :func:`_chernoff_weights` (the same entries), without the first.

    Tables up to :data:`NEG_WEIGHTS_CACHED` rows are cached at a power-of-two width
    (few sizes); longer ones are made at ``length`` and not kept.

    Examples
    --------
    >>> w = _neg_weights(5, 0.5)
    >>> bool(w.shape[0] >= 5 and np.array_equal(w[:5], _chernoff_weights(8, 0.5)[1][:5]))
    True
    """
    width = 1 << max(int(length) - 1, 1).bit_length()
    if width <= NEG_WEIGHTS_CACHED:
        return _neg_weights_cached(width, step)
    return _neg_weights_table(int(length), step)


def _cell_lambdas(step: float, firsts: np.ndarray, pmfs: list[np.ndarray]):
    """Upper bounds on every cell's log-MGF ``Lambda_c(+-t) = log sum_j p_cj e^{+-t l_j}``
    at the Chernoff orders (rows: cells).

    The sums are of non-negative terms: their computed value is within a relative
    ``(width + 8) u`` of the exact one (Higham 2002, Section 3.1; the exponentials to a
    few ulps), so adding ``2 (width + 8) u`` to the logarithm gives an upper bound.
    Where a weighted sum underflows to 0 the row's extreme loss bounds it instead
    (``Lambda(+-t) <= +-t l_extreme + log(mass)``); empty rows (all mass at +inf) get 0,
    an upper bound.
    """
    lengths = np.array([p.size for p in pmfs], dtype=np.int64)
    width = -(-int(lengths.max()) // 1024) * 1024  # padded: the weights are cached
    n_cells = len(pmfs)
    t = _ORDERS
    out_pos = np.zeros((n_cells, t.size))
    out_neg = np.zeros((n_cells, t.size))
    rows = max(1, min(n_cells, (1 << 20) // max(width, 1)))
    j = np.arange(width) * step
    w_pos, w_neg = _chernoff_weights(width, step)
    slack = 2.0 * (width + 8) * _U
    firsts = np.asarray(firsts)
    for s0 in range(0, n_cells, rows):
        block = _dense(pmfs[s0 : s0 + rows], lengths[s0 : s0 + rows], width)
        with np.errstate(divide="ignore"):
            lp = np.log(block @ w_pos) + slack
            ln = np.log(block @ w_neg) + slack
        off = firsts[s0 : s0 + block.shape[0]] * step
        lp = lp + np.outer(off + j[-1], t)
        ln = ln - np.outer(off, t)
        # A row whose weighted sum underflowed to 0 (its mass far below the padded
        # width's end, at a large order) still has Lambda(+-t) <= +-t l_extreme +
        # log(mass): that bound, never -inf, stands in wherever it is smaller.
        with np.errstate(divide="ignore"):
            log_mass = np.log(block.sum(axis=1)) + slack
        last = off + (lengths[s0 : s0 + block.shape[0]] - 1) * step
        lp = np.minimum(
            np.nan_to_num(lp, nan=np.inf, neginf=np.inf), log_mass[:, None] + np.outer(last, t)
        )
        ln = np.minimum(
            np.nan_to_num(ln, nan=np.inf, neginf=np.inf), log_mass[:, None] - np.outer(off, t)
        )
        out_pos[s0 : s0 + block.shape[0]] = np.where(np.isfinite(lp), lp, 0.0)
        out_neg[s0 : s0 + block.shape[0]] = np.where(np.isfinite(ln), ln, 0.0)
    return out_pos, out_neg


def _window(
    step: float,
    lam_pos: np.ndarray,
    lam_neg: np.ndarray,
    alias_budget: float,
    orders: np.ndarray = _ORDERS,
):
    """First node and length of the window outside which each tail is below the budget
    (``lam_pos``, ``lam_neg``: the log-MGF bounds at ``orders``, default :data:`_ORDERS`)."""
    t = orders
    lam_pos = lam_pos + 1e-12 * np.abs(lam_pos)
    lam_neg = lam_neg + 1e-12 * np.abs(lam_neg)
    log_b = math.log(alias_budget)
    top = math.ceil(float(np.min((lam_pos - log_b) / t)) / step)
    bottom = math.floor(float(np.max((log_b - lam_neg) / t)) / step)
    return bottom, top - bottom + 1


def _alias(
    step: float,
    lam_pos: np.ndarray,
    lam_neg: np.ndarray,
    a_idx: int,
    n: int,
    orders: np.ndarray = _ORDERS,
) -> float:
    """Chernoff bound on the composed mass outside the window ``[a_idx, a_idx + n)``
    (``lam_pos``, ``lam_neg``: the log-MGF bounds at ``orders``, default :data:`_ORDERS`)."""
    t = orders
    lam_pos = lam_pos + 1e-12 * np.abs(lam_pos)
    lam_neg = lam_neg + 1e-12 * np.abs(lam_neg)
    with np.errstate(over="ignore"):
        above = float(np.min(np.exp(lam_pos - t * (a_idx + n) * step)))
        below = float(np.min(np.exp(lam_neg + t * (a_idx - 1) * step)))
    return above + below
