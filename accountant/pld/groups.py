"""One group of cells composed on its own window, on the coarse grid or on a finer one.

The building block of the schedule fast path's tree (:func:`~dpacct.accountant.pld.
schedule_fast._compose_tree`) and of the online ledger's blocks (:mod:`~dpacct.
accountant.pld.incremental`): cells composed by one product of FFTs on the group's own
Chernoff window (characteristic-function accounting: Zhu, Dong & Wang 2022, Section 4;
Koskela et al. 2020, Section 4), the group's aliasing and round-off returned as an l1
error bound.  :func:`compose_fine_group` composes the group on a grid ``factor`` times
finer than the composition's and re-discretises the result once
(:func:`~dpacct.accountant.pld.coarsen.coarsen`), so the group pays one coarse
discretisation instead of one per step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import fft as sp_fft

from ..numerics import TINY, nonzero_at, roll_left
from .chernoff_window import WeightTables
from .coarsen import coarsen
from .pld_fft import (
    _ORDERS,
    _U,
    FAST_MAX_N,
    NEG_WEIGHTS_CACHED,
    _alias,
    _cell_lambdas,
    _dense,
    _fft_rel,
    _l2,
    _neg_weights,
    _pass_model,
    _power,
    _rfft,
    _spectral_error,
    _spectrum_product,
    _window,
)
from .sgm_cells import _pessimistic_cells

__all__ = ["Segment", "compose_fine_group"]


@dataclass(frozen=True, eq=False)
class Segment:
    """A composed stretch of DP-SGD steps on a loss grid: the unit the schedule fast
    path's tree and the online ledger's blocks and groups pass along.

    Attributes
    ----------
    first : int
        Grid node (multiple of the grid step) of ``pmf[0]``.
    pmf : numpy.ndarray
        The finite P-masses from node ``first`` on (non-negative, total at most 1).
    err : float
        An l1 bound on ``pmf`` minus the exact discrete composition it stands for
        (aliasing, round-off, normalisation, trimmed runs): added to delta at every
        epsilon.
    log_fin : float
        Log of the finite mass of the composed steps' discretisations, ``sum_i k_i
        log(1 - inf_i)`` (the rest lies at ``+inf``); 0 when not tracked.

    Examples
    --------
    >>> seg = Segment(3, np.array([0.25, 0.75]), 1e-12, -1e-9)
    >>> seg.first, seg.pmf.size, seg.err
    (3, 2, 1e-12)
    """

    first: int
    pmf: np.ndarray
    err: float
    log_fin: float = 0.0


#: the aliasing budgets :func:`_compose_spectrum` tries, each this times the one before
ALIAS_TRY = 2.0**-10
#: :func:`_quiet_len` may take a window up to this many times the fastest length's
QUIET_SLACK = 1.25


def _quiet_len(m: int) -> int:
    """A transform length of at least ``m`` points with the smallest round-off bound
    ``rho(n) sqrt(n)`` (:func:`~dpacct.accountant.pld.pld_fft._fft_rel`) among the
    fastest length (``next_fast_len``) and the lengths ``r 2^k`` (``r`` in 1, 3, 9)
    within :data:`QUIET_SLACK` of it.

    The forward round-off of a group's product spectrum, and so its l1 error in the
    certificate, is ``rho(n) sqrt(n)`` times the summed norms of its factors: pocketfft's
    radix-5 and radix-3 passes err more than its radix-4 ones, so a few more points can
    carry a smaller bound (46 875 = 3 5^6 points: ``7.3e-12``; 49 152 = 3 2^14:
    ``5.4e-12``).  Any length at least ``m`` holds the window, its aliasing computed at
    the length taken: tightness and speed only.

    Examples
    --------
    >>> _quiet_len(46_000)
    49152
    >>> _quiet_len(1000) >= 1000
    True
    """
    fast = sp_fft.next_fast_len(m, real=True)
    best, score = fast, _fft_rel(fast) * math.sqrt(fast)
    for r in (1, 3, 9):
        n = r << max(0, (-(-m // r) - 1).bit_length())
        if n < m or n > QUIET_SLACK * fast:
            continue
        s = _fft_rel(n) * math.sqrt(n)
        if s < score:
            best, score = n, s
    return best


def _componentwise_scale(n: int) -> float:
    """``kappa(n) sqrt(n)``: how the componentwise forward bound of
    :func:`_bounded_product` grows with the transform length (``kappa`` of
    :func:`~dpacct.accountant.pld.pld_fft._pass_model`; ``inf`` where the length is not
    5-smooth).  A shorter window is taken at more orders only where this is no larger:
    13 824 points (radix-3 passes) carried a larger bound than 16 384 for a pending
    block of 100 decaying steps (6.3e-12 against 5.6e-12; issue 37, session 28)."""
    try:
        return _pass_model(n)[1] * math.sqrt(n)
    except ValueError:
        return math.inf


def _cell_sizes(pmf: np.ndarray) -> tuple[float, float]:
    """A PMF's l2 norm (:func:`~dpacct.accountant.pld.pld_fft._l2`, rounded up) and an
    upper bound on its l1 norm (a sum of non-negative terms, within ``(size + 2) u``),
    as :func:`_compose_spectrum` and :func:`_bounded_product` take them: a caller that
    composes the same cells again keeps them (``sizes``)."""
    return _l2(pmf), float(np.sum(pmf)) * (1.0 + (pmf.size + 2) * _U)


def _compose_spectrum(
    step: float,
    firsts: np.ndarray,
    pmfs: list[np.ndarray],
    counts: np.ndarray,
    alias_budget: float,
    lambdas=_cell_lambdas,
    tries: int = 1,
    componentwise: bool = False,
    orders: np.ndarray = _ORDERS,
    sizes: tuple[np.ndarray, np.ndarray] | None = None,
):
    """The product spectrum of :func:`_compose_cells` on its Chernoff window, and what
    its certificate needs: ``(spec, n, mults, norms, alias, a_idx, origin)``; ``None``
    when the window would exceed :data:`FAST_MAX_N`.  ``counts`` are floats;
    ``lambdas(step, firsts, pmfs)`` bounds the PMFs' log-MGFs (:func:`_cell_lambdas`,
    or :func:`_row_lambdas` for PMFs of very different lengths).

    With ``tries > 1`` the window is sized at the aliasing budgets ``alias_budget
    ALIAS_TRY^j`` (``j < tries``) and the one whose certificate estimate -- its aliasing
    plus the forward round-off bound ``rho(n) sqrt(n) sum_c k_c ||p_c||_2`` -- is the
    smallest is taken: a block of narrow steps has a small round-off bound, which a
    large aliasing budget would dominate.  Any window is certified (its own aliasing and
    round-off are what the caller counts).  With ``componentwise`` the spectrum comes
    from :func:`_bounded_product` and its componentwise forward bound ``fwd`` is appended
    to the tuple.  ``orders``: the Chernoff orders of ``lambdas``' columns (default
    :data:`~dpacct.accountant.pld.chernoff_window._ORDERS`; :data:`BLOCK_ORDERS`, which
    begins with them, for rows of :func:`_block_rows`): the budget is chosen at the
    powers of two, then its window taken at every order if its quiet length is
    shorter with no larger :func:`_componentwise_scale`, its aliasing bounded at every
    order (Markov's inequality holds at each,
    so the window is no longer and the bound no higher).  ``sizes``: the PMFs' l2
    norms and l1 bounds as :func:`_cell_sizes` gives them, if the caller keeps them."""
    lam_c_pos, lam_c_neg = lambdas(step, firsts, pmfs)
    lam_pos = counts @ lam_c_pos
    lam_neg = counts @ lam_c_neg
    del lam_c_pos, lam_c_neg
    width = max(p.size for p in pmfs)
    l2s = np.array([_l2(p) for p in pmfs]) if sizes is None else sizes[0]
    norms = float(counts @ l2s)
    # the budget is chosen at the powers of two (the first columns), as without more
    # orders; more orders then only shorten that budget's window (or, where the quiet
    # length does not shrink, keep it and lower its aliasing bound): a window chosen
    # at more orders by the estimate alone took a larger budget's shorter window whose
    # aliasing outweighed the smaller round-off (a pending block of the decaying
    # online loop: 8 192 points at 1e-15 -> 6 400 at 1e-12, its l1 error 8.6e-12 ->
    # 9.8e-12; issue 37, session 28)
    p = _ORDERS.size
    best = None
    for j in range(max(int(tries), 1)):
        a_j, need = _window(step, lam_pos[:p], lam_neg[:p], alias_budget * ALIAS_TRY**j)
        n_j = _quiet_len(max(need, width, 2))
        if n_j > FAST_MAX_N:
            break  # a smaller budget only widens the window
        alias_j = _alias(step, lam_pos[:p], lam_neg[:p], a_j, n_j)
        est = alias_j + _fft_rel(n_j) * math.sqrt(n_j) * norms
        if best is None or est < best[0]:
            best = (est, a_j, n_j, alias_j, j)
    if best is None:
        return None
    _, a_idx, n, alias, j_best = best
    if orders.size > p:  # more orders (their first columns the powers of two)
        a_m, need = _window(step, lam_pos, lam_neg, alias_budget * ALIAS_TRY**j_best, orders)
        n_m = _quiet_len(max(need, width, 2))
        if n_m < n and _componentwise_scale(n_m) <= _componentwise_scale(n):
            a_idx, n = a_m, n_m
        alias = _alias(step, lam_pos, lam_neg, a_idx, n, orders)
    origin = int(np.dot(counts.astype(np.int64), firsts))
    if componentwise:
        masses = None if sizes is None else sizes[1]
        spec, mults, fwd = _bounded_product(pmfs, counts.astype(np.int64), n, masses)
        return spec, n, mults, norms, alias, a_idx, origin, fwd
    spec, mults = _spectrum_product(pmfs, counts.astype(np.int64), n)
    return spec, n, mults, norms, alias, a_idx, origin


#: :func:`_bounded_product` forms its bounds over this many table entries at a time
#: (rows times columns), so that its passes stay in cache: 26 rows of 32 769
#: frequencies (a block of random phases) took 46 ms CPU over the whole table and 36 ms
#: in slices, each entry bit for bit the same (issue 37, session 22, loaded machine)
PRODUCT_COLUMNS = 1 << 15


def _rows_of(sel: np.ndarray) -> tuple[int, slice | np.ndarray]:
    """The rows ``sel`` picks, as :func:`_bounded_product` reduces over them: their
    number, and a slice when they are one run (every row, or a block whose first and
    last phases are cut short), else the mask when they are most rows, else their
    indices.  Each gives the same products in the same order."""
    at = np.flatnonzero(sel)
    f = int(at.size)
    if at[-1] - at[0] + 1 == f:
        return f, slice(int(at[0]), int(at[-1]) + 1)
    if 2 * f > sel.size:
        return f, sel
    return f, at


def _slice_products(spec, k, e, picks, groups, tele, back=None) -> None:
    """:func:`_bounded_product`'s passes over one chunk of rows ``spec`` (counts ``k``,
    forward allowances ``e``), a few columns at a time (:data:`PRODUCT_COLUMNS`: they
    stay in cache): the moduli ``m`` raised by their allowance, ``tele += sum k e / m``,
    and each count's products of the rows and of ``m`` (``picks``: ``(count, (rows,
    pick), new)``, :func:`_rows_of`) set into (``new``) or multiplied into its
    ``groups`` entry.  Every entry is formed by the same operations in the same order as
    over the whole table (elementwise, or a reduction along the rows).  ``back``: the
    rows are the chunk's grouped by count (:func:`_bounded_product`), and ``q[back]``
    puts them back in the chunk's own order for the sum, which is then the same sum of
    the same rows in the same order."""
    half = spec.shape[1]
    cols = max(1, PRODUCT_COLUMNS // spec.shape[0])
    for c0 in range(0, half, cols):
        cs = slice(c0, min(c0 + cols, half))
        sp = spec[:, cs]
        m = np.abs(sp)
        m += e[:, None]
        m *= 1.0 + 4 * _U
        q = np.divide((k * e)[:, None], m)
        tele[cs] += np.sum(q if back is None else q[back], axis=0)
        for kk, (_, pick), new in picks:
            g, gm = groups[kk]
            if isinstance(pick, slice):
                prod, mprod = np.prod(sp[pick], axis=0), np.prod(m[pick], axis=0)
            elif pick.dtype == bool:
                w = pick[:, None]
                prod, mprod = np.prod(sp, axis=0, where=w), np.prod(m, axis=0, where=w)
            else:
                prod, mprod = np.prod(sp[pick], axis=0), np.prod(m[pick], axis=0)
            if new:
                g[cs], gm[cs] = prod, mprod
            else:
                g[cs] *= prod
                gm[cs] *= mprod


def _bounded_product(
    pmfs: list[np.ndarray], counts: np.ndarray, n: int, masses: np.ndarray | None = None
):
    """``prod_c rfft(p_c, n)^{k_c}`` as :func:`~dpacct.accountant.pld.pld_fft.
    _spectrum_product` forms it (the same products, the same count of them), and a
    componentwise bound on the forward round-off carried into it: ``(spec, mults, fwd)``,
    ``fwd`` an upper bound on the l2 norm, over the full spectrum, of the product of the
    computed transforms minus that of the exact ones.

    Each computed transform is within ``e_c = kappa ||p_c||_1`` of the exact one at
    every frequency (``kappa`` of :func:`~dpacct.accountant.pld.pld_fft._pass_model`,
    the length 5-smooth).  With ``m_c = |A^_c| + e_c >= max(|A_c|, |A^_c|)``,
    telescoping over the factors with ``|a^k - b^k| <= k |a - b| max(|a|, |b|)^(k-1)``
    gives, frequency by frequency,

        |prod_c A^_c^{k_c} - prod_c A_c^{k_c}| <= (prod_c m_c^{k_c}) sum_c k_c e_c / m_c,

    which grows with every ``m_c`` (so any upper bound on it may stand in: ``m_c`` is
    rounded up by a factor ``1 + 4u``, the modulus being within an ulp and the sum
    within ``u``).  ``prod_c m_c^{k_c}`` is formed as the spectrum is (cells of equal
    count multiplied, the product raised to the count by repeated squaring): real
    products, each within ``u`` relative, at most as many in any value's history as
    the spectrum's ``mults``; with the quotients and sums of ``sum_c k_c e_c / m_c``
    (``C`` cells) and the final norm, every rounding is relative to the bound itself
    and covered by ``exp((mults + 2 C + n + 32) u)`` (Higham 2002, Section 3.1).  A
    product that underflows loses less than ``2^-1022`` per rounding, added back.
    Where a block's composed spectrum has decayed -- all but the lowest frequencies of
    a block of hundreds of steps -- the bound is far below the normwise ``rho sqrt(n)
    sum_c k_c ||p_c||_2`` of :func:`~dpacct.accountant.pld.pld_fft._spectral_error`,
    which takes the smaller (docs/theory/pld.md, "The blocks' forward round-off").

    Examples
    --------
    >>> p = np.full(50, 0.02)
    >>> spec, mults, fwd = _bounded_product([p, p[:10] * 5], np.array([40, 3]), 1024)
    >>> exact = np.fft.rfft(p, 1024) ** 40 * np.fft.rfft(p[:10] * 5, 1024) ** 3
    >>> bool(np.max(np.abs(spec - exact)) < fwd < 1e-12)
    True
    """
    try:
        kappa = _pass_model(n)[1]
    except ValueError:  # not 5-smooth: the normwise bound alone
        spec, mults = _spectrum_product(pmfs, counts, n)
        return spec, mults, math.inf
    n_cells = len(pmfs)
    lengths = np.array([p.size for p in pmfs], dtype=np.int64)
    # an upper bound on each PMF's l1 norm (a sum of non-negative terms, within size u)
    if masses is None:  # else the caller's, as _cell_sizes gives them
        masses = np.array([float(np.sum(p)) * (1.0 + (p.size + 2) * _U) for p in pmfs])
    err = kappa * masses * (1.0 + 1e-12)
    half = n // 2 + 1
    tele = np.zeros(half)  # sum_c k_c e_c / m_c
    groups: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # count: (spectrum, m) products
    factors: dict[int, int] = {}
    rows = max(1, min(n_cells, (1 << 21) // n))
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        for s0 in range(0, n_cells, rows):
            nr = min(rows, n_cells - s0)
            k = np.asarray(counts[s0 : s0 + nr], dtype=np.int64)
            # the rows grouped by count (a stable sort): each count's products over one
            # slice of rows, not a mask or a gathered copy (every transform and product
            # bit for bit the same; the sum of ``k e / m`` in the rows' order, ``back``)
            at, back = np.arange(s0, s0 + nr), None
            if np.any(k[1:] < k[:-1]):
                order = np.argsort(k, kind="stable")
                at, back, k = at[order], np.argsort(order), k[order]
            block = _dense([pmfs[i] for i in at], lengths[at], n)
            spec = _rfft(block, n)
            del block
            e = err[at]
            # the rows' distinct counts, each picked as one run of rows, a mask or a
            # selection (:func:`_rows_of`), and whether it starts its group's product
            uniq = np.unique(k).tolist()
            picks = [_rows_of(k == kk) for kk in uniq]
            starts = [kk not in groups for kk in uniq]
            for kk, (f, _), new in zip(uniq, picks, starts, strict=True):
                if new:
                    groups[kk] = (np.empty(half, dtype=complex), np.empty(half))
                    factors[kk] = f
                else:
                    factors[kk] += f + 1
            _slice_products(
                spec, k, e, list(zip(uniq, picks, starts, strict=True)), groups, tele, back
            )
            del spec
        out = np.ones(half, dtype=complex)
        bound = np.ones(half)
        mults = 0
        for kk, (prod, mprod) in groups.items():
            pw, mm = _power(prod, kk, consume=True)  # the group's: used up here
            out *= pw
            del pw
            bound *= _power(mprod, kk, consume=True)[0]
            mults += kk * factors[kk] + mm + 1
        bound *= tele
        total = 2.0 * float(np.sum(bound * bound))
    fwd = math.sqrt(total) * math.exp((mults + 2 * n_cells + n + 32) * _U) * (1 + 1e-12)
    fwd += math.sqrt(2.0 * half) * (mults + n_cells + 2) * float(np.sum(counts)) * 2.0**-1020
    return out, mults, (fwd if math.isfinite(fwd) else math.inf)


#: :func:`_row_lambdas` sums only the nonzero entries of a row longer than this whose
#: nonzero entries are fewer than :data:`SPARSE_SHARE` of its length
SPARSE_ROW = 4096
SPARSE_SHARE = 0.25


def _row_lambdas(
    step: float,
    firsts: np.ndarray,
    pmfs: list[np.ndarray],
    longest: int | None = None,
    orders: np.ndarray = _ORDERS,
):
    """Upper bounds on every PMF's log-MGF at the Chernoff orders, as
    :func:`_cell_lambdas` gives them, each row scaled by its own ends.

    ``Lambda(t) = t l_last + log sum_j p_j e^{-t (l_last - l_j)}`` and ``Lambda(-t) =
    -t l_first + log sum_j p_j e^{-t (l_j - l_first)}``: the largest weight of every
    row is 1, so a row of PMFs of very different lengths (the tree's group PMFs, tens
    of loss units long) never underflows to an empty sum, as a table scaled by its
    widest row's end would.  The sums of non-negative terms are within a relative
    ``(length + 8) u`` of the exact ones (Higham 2002, Section 3.1); a weight or a
    product that underflows loses less than ``2^-1021`` a term, added back; so the
    logarithm plus ``2 (length + 8) u`` is an upper bound.

    Each row is a function of its PMF, its first node, ``step`` and whether the rows
    share one weight table (the longest row at most :data:`NEG_WEIGHTS_CACHED`):
    ``longest`` (at least every row's length) stands for the longest row of a larger
    call these rows are part of, so that rows computed apart (a caller's cache of
    them) are those of the whole call bit for bit.  ``orders``: the Chernoff orders
    (columns), :data:`~dpacct.accountant.pld.chernoff_window._ORDERS` or
    :data:`BLOCK_ORDERS` (:func:`_block_rows`).
    """
    lengths = np.array([p.size for p in pmfs], dtype=np.int64)
    t = orders
    # a graded cell (:mod:`~dpacct.accountant.pld.graded_cells`) is mostly zeros, which
    # add nothing: its nonzero terms alone.  Rows up to NEG_WEIGHTS_CACHED long share
    # one cached table, from which such a row gathers its weights; beyond, a long
    # sparse row makes them where they are (the table's entries bit for bit) and the
    # other rows share the longest dense row's table, counted first: no index array for
    # a long dense row (the tree's group PMFs)
    longest = int(lengths.max()) if longest is None else max(int(longest), int(lengths.max()))
    shared = longest <= NEG_WEIGHTS_CACHED
    least = 0 if shared else SPARSE_ROW
    # rows sharing the table (at most NEG_WEIGHTS_CACHED long) find their nonzero entries
    # once, for the test and the sums (counting them first, then finding them again, was
    # a sixth of this function in the online ledger's loop; issue 37, session 26); a long
    # row is only counted (no index array for a long dense row)
    nzs = [nonzero_at(p) if shared else None for p in pmfs]
    sparse = [
        p.size > least
        and (np.count_nonzero(p != 0) if nz is None else nz.size) < SPARSE_SHARE * p.size
        for p, nz in zip(pmfs, nzs, strict=True)
    ]
    dense = [n for n, sp in zip(lengths.tolist(), sparse, strict=True) if not sp]
    # more orders (BLOCK_ORDERS): their sums on the upper side only, from a table of
    # the extra orders beside the powers of two's; the lower side's extra columns are
    # bounded by convexity (:func:`_lower_side_more`)
    k = _ORDERS.size
    more = t.size > k
    width = (longest if shared else max(dense)) if shared or dense else 0
    w_neg = _neg_weights(width, step) if shared or dense else None
    w_more = _more_weights(width, step) if more and (shared or dense) else None
    sums_pos = np.empty((len(pmfs), t.size))
    sums_neg = np.empty((len(pmfs), k))
    for i, p in enumerate(pmfs):  # each row on its own length: no padding
        if sparse[i] and shared:
            # the table's rows gathered by take (the same entries as fancy indexing,
            # a quarter faster; issue 37, session 22)
            nz = nzs[i]
            pn = p[nz]
            sums_neg[i] = pn @ np.take(w_neg, nz, axis=0)
            up = p.size - 1 - nz
            sums_pos[i, :k] = pn @ np.take(w_neg, up, axis=0)
            if more:
                sums_pos[i, k:] = pn @ np.take(w_more, up, axis=0)
            continue
        if sparse[i]:
            nz = nonzero_at(p)
            w = np.outer(nz * step, -t[:k])
            sums_neg[i] = p[nz] @ np.exp(w, out=w)
            w = np.outer((p.size - 1 - nz) * step, -t)
            sums_pos[i] = p[nz] @ np.exp(w, out=w)
            continue
        w = w_neg[: p.size]  # type: ignore[index]
        sums_neg[i] = p @ w
        sums_pos[i, :k] = p[::-1] @ w
        if more:
            sums_pos[i, k:] = p[::-1] @ w_more[: p.size]  # type: ignore[index]
    out_pos = _rounded_logs(step, firsts, lengths, t, sums_pos, True)
    out_neg = _rounded_logs(step, firsts, lengths, t[:k], sums_neg, False)
    if more:
        out_neg = _lower_side_more(out_neg, t)
    return out_pos, out_neg


def _rounded_logs(step, firsts, lengths, t, sums, upper: bool) -> np.ndarray:
    """One side's log-MGF bounds from the rows' sums of weights at the orders ``t``
    (weights at most 1, relative to the row's last node for the upper side, its first
    for the lower): the logarithm rounded up by ``2 (length + 8) u`` and ``2^-49`` of
    itself (numpy's vectorised log within four ulps on AVX-512 CPUs), ``2^-1021`` a term
    for underflow, and the end's shift."""
    slack = (2.0 * (lengths + 8) * _U)[:, None]
    tiny = (lengths * 2.0**-1021)[:, None]
    firsts = np.asarray(firsts)
    logs = np.log(sums + tiny)  # (tiny > 0: finite)
    logs = logs + (slack + 2.0**-49 * np.abs(logs))
    if upper:
        return logs + np.outer((firsts + lengths - 1) * step, t)
    return logs - np.outer(firsts * step, t)


def _lower_side_more(out_neg: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The lower side's bounds at the extra orders ``t[k:]`` (the ``k`` powers of two
    first), each the larger of its two neighbouring powers of two's: ``Lambda(-t)`` is
    convex in ``t`` (Hoelder's inequality), so on ``[t_1, t_2]`` it is at most
    ``max(Lambda(-t_1), Lambda(-t_2))``, and the columns at ``t_1``, ``t_2`` are upper
    bounds.  No sums: the lower side's window was set by the largest order (64) in
    every fine block of 1 000 random phases, so its extra columns only need to be
    valid (issue 37, session 28)."""
    k = _ORDERS.size
    hi = np.searchsorted(_ORDERS, t[k:])
    return np.hstack([out_neg, np.maximum(out_neg[:, hi - 1], out_neg[:, hi])])


#: Chernoff orders a block's window is also sized at (:func:`_block_rows`), between the
#: powers of two of :data:`~dpacct.accountant.pld.chernoff_window._ORDERS`: a block of
#: random phases (26 cells x 10 steps on the h / 8 grid) has its upper tail's best order
#: near 5-7, where the powers of two gave a window of ~7.0 loss units above zero and
#: these 5.2-6.0 (the window 63 515 -> 53 155 points; the rows of 1 000 random phases
#: x 10, 64.1 M -> 58.1 M transform points).  Four orders: seven (2^1.5 .. 2^3.75 in
#: quarter steps) gave the same points, and each extra column costs its gather on the
#: upper side (issue 37, session 28)
BLOCK_ORDERS = np.concatenate([_ORDERS, 2.0 ** np.array([2.25, 2.5, 2.75, 3.5])])


def _more_weights_table(length: int, step: float) -> np.ndarray:
    # as chernoff_window._neg_weights_table, at BLOCK_ORDERS' extra orders
    w = np.outer(np.arange(length) * step, -BLOCK_ORDERS[_ORDERS.size :])
    return np.exp(w, out=w)


#: the extra orders' tables, grown as :func:`~dpacct.accountant.pld.chernoff_window.
#: _neg_weights`' are (:class:`~dpacct.accountant.pld.chernoff_window.WeightTables`)
_more_weights_cached = WeightTables(BLOCK_ORDERS[_ORDERS.size :], 4)


def _more_weights(length: int, step: float) -> np.ndarray:
    """``exp(-t_k j step)`` for ``j < length`` (rows) at :data:`BLOCK_ORDERS`' extra
    orders (columns): cached up to :data:`NEG_WEIGHTS_CACHED` rows at a power-of-two
    width, as :func:`~dpacct.accountant.pld.chernoff_window._neg_weights` is."""
    width = 1 << max(int(length) - 1, 1).bit_length()
    if width <= NEG_WEIGHTS_CACHED:
        return _more_weights_cached(width, step)
    return _more_weights_table(int(length), step)


def _block_rows(
    step: float, firsts: np.ndarray, pmfs: list[np.ndarray], longest: int | None = None
):
    """:func:`_row_lambdas`' upper bounds on every PMF's log-MGF at the orders
    :data:`BLOCK_ORDERS`: on the upper side the same sums of weights at most 1 and the
    same rounding-up (``2 (length + 8) u`` on the logarithm, ``2^-1021`` a term for
    underflow; Higham 2002, Section 3.1), the powers of two's columns bit for bit
    those of :func:`_row_lambdas`; on the lower side the powers of two's columns and,
    at the extra orders, the convexity bound of :func:`_lower_side_more`.

    Any order gives a valid Chernoff bound (Markov's inequality on ``e^{t L}``), so
    :func:`~dpacct.accountant.pld.chernoff_window._window` and :func:`~dpacct.accountant.
    pld.chernoff_window._alias` at these orders size a window and bound its aliasing as
    soundly as at the powers of two alone, and their minimum over more orders is
    smaller (docs/theory/schedules.md, "A block's window at more orders").

    Examples
    --------
    >>> p = np.array([0.25, 0.5, 0.25])
    >>> lp, ln = _block_rows(0.5, np.array([-1]), [p])
    >>> exact = np.log(p @ np.exp(np.outer(np.array([-0.5, 0.0, 0.5]), BLOCK_ORDERS)))
    >>> bool(np.all(lp[0] >= exact) and np.all(lp[0] - exact < 1e-14))
    True
    """
    return _row_lambdas(step, firsts, pmfs, longest, BLOCK_ORDERS)


def _compose_group(
    step: float,
    firsts: np.ndarray,
    pmfs: list[np.ndarray],
    counts: np.ndarray,
    alias_budget: float,
    tries: int = 1,
    lambdas=None,
    orders: np.ndarray = _ORDERS,
    sizes: tuple[np.ndarray, np.ndarray] | None = None,
) -> Segment | None:
    """One group of the tree: its cells composed on the group's own Chernoff window
    (``tries``: the windows :func:`_compose_spectrum` chooses among; ``lambdas``: the
    PMFs' log-MGF bounds at ``orders``, default :func:`_row_lambdas` at
    :data:`~dpacct.accountant.pld.chernoff_window._ORDERS`, or a caller's cache of its
    rows, e.g. :func:`_block_rows` at :data:`BLOCK_ORDERS`; ``sizes``: the PMFs' norms
    as :func:`_cell_sizes` gives them, a caller's cache).

    Returns a :class:`Segment` ``(first, pmf, err)``: the composed finite PMF (clipped
    at zero, trimmed to its positive entries) from grid node ``first`` on, and ``err``,
    the aliasing plus the round-off of :func:`_compose_cells`: the signed measure
    ``pmf - exact`` (exact: the group's discrete composition on the whole line) has positive
    and negative parts of mass at most ``err`` each (the folded mass is moved, not
    created; clipping at zero only moves an entry towards its exact, non-negative
    value). A PMF whose mass may exceed 1 (by at most ``err``) is divided by ``s``, an
    upper bound on its computed sum: that removes at most ``s - 1`` of mass, added to
    ``err``, and the composition a level up may take every factor's transform as at most
    1 in modulus.
    ``None`` when the window would exceed :data:`FAST_MAX_N`.
    """
    counts = np.asarray(counts, dtype=float)
    raw = _compose_spectrum(
        step,
        firsts,
        pmfs,
        counts,
        alias_budget,
        _row_lambdas if lambdas is None else lambdas,
        tries,
        componentwise=True,
        orders=orders,
        sizes=sizes,
    )
    if raw is None:
        return None
    spec, n, mults, norms, alias, a_idx, origin, fwd = raw
    freq_l2, y, inv_l1 = _spectral_error(spec, n, mults, norms, fwd)
    del spec
    y = np.maximum(roll_left(y, (a_idx - origin) % n), 0.0)
    err = alias + freq_l2 + inv_l1 + TINY
    mass = float(np.sum(y)) * (1 + y.size * _U) + TINY  # above the exact sum
    if mass > 1.0:
        y = y / mass
        err += mass - 1.0
    nz = nonzero_at(y)
    if nz.size == 0:
        return Segment(a_idx, np.zeros(1), err)
    return Segment(a_idx + int(nz[0]), y[nz[0] : nz[-1] + 1].copy(), err)


def compose_fine_group(
    sigma: np.ndarray,
    q: np.ndarray,
    counts: np.ndarray,
    step: float,
    factor: int,
    tau: float,
    add: bool,
    alias_budget: float,
) -> Segment | None:
    """Subsampled-Gaussian cells composed on a grid ``factor`` times finer than ``step``,
    re-discretised once onto ``step``: a dominating (pessimistic) group PMF.

    The cells ``(sigma[i], q[i])``, ``counts[i]`` steps each, are discretised by
    connect-the-dots at ``step / factor`` (:func:`~dpacct.accountant.pld.sgm_cells.
    _pessimistic_cells`, tails beyond ``tau`` a step to ``+inf``), composed by
    :func:`_compose_group` on the group's own Chernoff window (aliasing budget
    ``alias_budget``) and coarsened to ``step`` by :func:`~dpacct.accountant.pld.
    coarsen.coarsen`.  Each of the ``sum(counts)`` steps widens the loss by at most
    ``(step / factor)^2 / 4`` of variance and the group by ``step^2 / 4`` once, where
    discretising every step at ``step`` widens it by ``sum(counts) step^2 / 4``.

    Parameters
    ----------
    sigma, q : numpy.ndarray
        The cells' noise multipliers and sampling rates.
    counts : numpy.ndarray
        Steps of each cell (non-negative integers).
    step : float
        The coarse loss step of the result.
    factor : int
        Refinement, a power of two (so ``step / factor`` times ``factor`` is ``step``
        exactly and the fine nodes fall on the coarse ones).
    tau : float
        Tail mass cut per step at discretisation (goes to ``+inf``).
    add : bool
        The add direction (else remove).
    alias_budget : float
        Aliasing budget of the group's window.

    Returns
    -------
    Segment or None
        ``(first, pmf, err, log_fin)``: the group's finite PMF from node ``first`` of the
        ``step`` grid on, an l1 bound ``err`` on its error measure (aliasing, round-off,
        normalisation: add it to delta at every epsilon), and ``log_fin``, the log of the
        finite mass ``sum_i counts_i log(1 - inf_i)`` (the rest is at ``+inf``); ``None``
        when the fine window would exceed :data:`~dpacct.accountant.pld.pld_fft.FAST_MAX_N`.

    Examples
    --------
    Three hundred steps at sigma 1, q 0.01 on a 1e-3 grid, composed at 1.25e-4: the
    P-mass is one (up to the tail cut), and the bound is tighter than composing every
    step at 1e-3 (``factor=1``).

    >>> from dpacct.accountant.pld.grid import GridPLD
    >>> def eps(factor):
    ...     seg = compose_fine_group(
    ...         np.array([1.0]), np.array([0.01]), np.array([300]), 1e-3, factor,
    ...         1e-14, False, 1e-12)
    ...     assert abs(seg.pmf.sum() - math.exp(seg.log_fin)) < 1e-9
    ...     inf = -math.expm1(seg.log_fin) + seg.err
    ...     return GridPLD(1e-3, seg.first, seg.pmf, inf, True).epsilon(1e-5)
    >>> bool(eps(8) < eps(1))
    True
    """
    if not (isinstance(factor, int | np.integer) and factor >= 1 and factor & (factor - 1) == 0):
        raise ValueError(f"factor must be a power of two >= 1, got {factor!r}")
    sigma = np.asarray(sigma, dtype=float)
    q = np.asarray(q, dtype=float)
    cells = _pessimistic_cells(sigma, q, step / factor, tau, add)
    return coarsened_group(cells, counts, step, factor, alias_budget)


def coarsened_group(
    cells: tuple[np.ndarray, list[np.ndarray], np.ndarray],
    counts: np.ndarray,
    step: float,
    factor: int,
    alias_budget: float,
    tries: int = 1,
) -> Segment | None:
    """Cells already discretised at ``step / factor`` (``(firsts, pmfs, infs)``, each
    PMF dominating its step), ``counts[i]`` steps each, composed by
    :func:`_compose_group` and re-discretised once onto ``step``
    (:func:`~dpacct.accountant.pld.coarsen.coarsen`): the second half of
    :func:`compose_fine_group`, for any dominating fine cells (also those of
    :func:`~dpacct.accountant.pld.split_cells.split_cells`).  Returns
    the :class:`Segment` ``(first, pmf, err, log_fin)`` as :func:`compose_fine_group`
    does, or ``None``.
    """
    firsts, pmfs, infs = cells
    counts = np.asarray(counts, dtype=float)
    fine = step / factor
    with np.errstate(divide="ignore"):
        log_fin = float(counts @ np.log1p(-np.minimum(infs, 1.0)))
    out = _compose_group(fine, firsts, pmfs, counts, alias_budget, tries)
    del pmfs, cells
    if out is None:
        return None
    cfirst, cpmf, err = coarsen(int(out.first), out.pmf, int(factor), fine, out.err)
    return Segment(cfirst, cpmf, err, log_fin)
