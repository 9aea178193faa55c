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
from collections import namedtuple
from functools import lru_cache

import numpy as np

__all__ = ["WeightTables"]

_CacheInfo = namedtuple("_CacheInfo", "hits misses maxsize currsize")

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


class WeightTables:
    """Cached ``exp(-t_k j step)`` tables (rows ``j``, columns the orders ``t_k``), one
    per step, each grown from the tables already made instead of built anew.

    ``tables(width, step)`` is the table of ``width`` rows, entry for entry the one
    :func:`_neg_weights_table` makes (``exp`` of ``(j step) (-t_k)``, the product
    rounded as there): a row ``j`` is a function of the float ``j step`` alone, and
    ``j step`` is the same float in every table that has that loss on a node -- the
    kept table of the same step (its first rows), of a step ``2^m`` times larger (row
    ``j / 2^m``: ``j`` and ``2^m`` are exact, so the two products have the same exact
    value and round alike) or ``2^m`` times smaller (row ``j 2^m``).  Those rows are
    copied and only the others exponentiated.  The online ledger's loop asked for 27
    tables at six steps ``10^-3 / 2^i`` and widths 512 .. 65 536: 554 496 rows of ten
    exponentials built, about 9 % of its instructions over 3 000 steps (issue 37,
    session 34).  At most ``maxsize`` steps are kept, the least recently used dropped
    (as the ``lru_cache`` of ``(width, step)`` this replaces; a table is at most
    :data:`NEG_WEIGHTS_CACHED` rows).  ``cache_info()`` and ``cache_clear()`` as a
    ``functools.lru_cache``'s.

    Examples
    --------
    >>> tables = WeightTables(_ORDERS, 4)
    >>> a = tables(1024, 1e-3)
    >>> b = tables(4096, 5e-4)  # its even rows are a's
    >>> bool(np.array_equal(b, _neg_weights_table(4096, 5e-4)) and np.array_equal(b[::2][:1024], a))
    True
    """

    def __init__(self, orders: np.ndarray, maxsize: int) -> None:
        self.neg_orders = -np.asarray(orders, dtype=float)
        self.maxsize = int(maxsize)
        self._tables: dict[float, np.ndarray] = {}
        self.hits = self.misses = 0

    def __call__(self, width: int, step: float) -> np.ndarray:
        tables = self._tables
        own = tables.pop(step, None)
        if own is not None and own.shape[0] >= width:
            tables[step] = own  # the most recent
            self.hits += 1
            return own[:width]
        self.misses += 1
        out = np.empty((width, self.neg_orders.size))
        # the longest first rows kept: this step's own table, or one 2^k times finer
        # (its every 2^k-th row); then the even rows from the table of twice the step
        done, src = 0, None
        for c, tab in ([] if own is None else [(step, own)]) + list(tables.items()):
            m = _power_of_two(c, step)
            rows = 0 if m is None or m > 0 else min(tab.shape[0] >> -m, width)
            if rows > done:
                done, src = rows, tab[: rows << -m : 1 << -m]
        if src is not None:
            out[:done] = src[:done]
        coarse = tables.get(2.0 * step) if 2.0 * step != step else None
        if coarse is not None and done < width:
            even = done + (done & 1)  # the first even row not yet made
            top = min(width, 2 * coarse.shape[0])
            if even < top:
                out[even:top:2] = coarse[even // 2 : (top + 1) // 2]
                self._make(out, done | 1, top, 2, step)  # the odd rows of [done, top)
                done = max(done, top)
        if done < width:
            self._make(out, done, width, 1, step)
        tables[step] = out
        while len(tables) > self.maxsize:
            tables.pop(next(iter(tables)))
        return out

    def _make(self, out: np.ndarray, start: int, stop: int, every: int, step: float) -> None:
        """Rows ``start, start + every, ...`` below ``stop`` of ``out`` made as
        :func:`_neg_weights_table` makes them."""
        if start >= stop:
            return
        w = np.outer(np.arange(start, stop, every) * step, self.neg_orders)
        out[start:stop:every] = np.exp(w, out=w)

    def cache_info(self):
        """``(hits, misses, maxsize, currsize)``, as ``functools.lru_cache``'s."""
        return _CacheInfo(self.hits, self.misses, self.maxsize, len(self._tables))

    def cache_clear(self) -> None:
        """Drop every table (and the counts)."""
        self._tables.clear()
        self.hits = self.misses = 0


def _power_of_two(other: float, step: float) -> int | None:
    """``m`` with ``other = step 2^m`` exactly, or None."""
    frac, exp = math.frexp(other / step)
    if frac != 0.5 or math.ldexp(step, exp - 1) != other:
        return None
    return exp - 1


_neg_weights_cached = WeightTables(_ORDERS, 8)


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


def _log_up(x: np.ndarray, slack) -> np.ndarray:
    """``log x`` raised by ``slack`` and by ``2^-49`` of itself (numpy's vectorised log is
    within four ulps on AVX-512 CPUs); ``-inf`` (``x = 0``) stays ``-inf``."""
    with np.errstate(divide="ignore", invalid="ignore"):  # (-inf + inf: not taken)
        out = np.log(x)
        return np.where(np.isfinite(out), out + (slack + 2.0**-49 * np.abs(out)), out)


def _cell_lambdas(step: float, firsts: np.ndarray, pmfs: list[np.ndarray]):
    """Upper bounds on every cell's log-MGF ``Lambda_c(+-t) = log sum_j p_cj e^{+-t l_j}``
    at the Chernoff orders (rows: cells).

    The sums are of non-negative terms: their computed value is within a relative
    ``(width + 8) u`` of the exact one (Higham 2002, Section 3.1; the exponentials to a
    few ulps), so adding ``2 (width + 8) u`` to the logarithm gives an upper bound, with
    ``2^-49 |log|`` for numpy's vectorised ``log`` (within four ulps on AVX-512 CPUs).
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
            lp = _log_up(block @ w_pos, slack)
            ln = _log_up(block @ w_neg, slack)
        off = firsts[s0 : s0 + block.shape[0]] * step
        lp = lp + np.outer(off + j[-1], t)
        ln = ln - np.outer(off, t)
        # A row whose weighted sum underflowed to 0 (its mass far below the padded
        # width's end, at a large order) still has Lambda(+-t) <= +-t l_extreme +
        # log(mass): that bound, never -inf, stands in wherever it is smaller.
        with np.errstate(divide="ignore"):
            log_mass = _log_up(block.sum(axis=1), slack)
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
