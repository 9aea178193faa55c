"""The (max, second, third, sum, sum of squares) law of one 3-of-T epoch's remove direction.

Proposition 12 of docs/theory/allocation_k_of_t.md ("The others' sum of squares"):
Proposition 10's law (:mod:`.random_allocation_k_law4`, its regions, cells, chords and
charges, called with other lattices and values) where, in its second and third regions,
the coordinates not kept ("the others", ``n`` of them) enter through their sum ``r`` *and*
their sum of squares ``s``, and their elementary symmetric polynomials through Lemma 11's
convex extension ``hat G_j(r, s)`` (:func:`hat_elementary`) instead of Maclaurin's
``C(n, j) (r / n)^j``.  What the proof uses of the value (Lemma 11 (ii), (iii)):

* it increases in each of the others' coordinates, so their cut may be raised (the
  lattices are shared between the cells: :data:`_CUT_STEP`) and one of them replaced by a
  larger value (region 3's ``E_1``: the other in ``(a, x_3)`` is kept as a fourth
  coordinate at ``x_3``, the lattice holding the ``T - 4`` others alone);
* it decreases in ``s`` and is convex in ``s`` at fixed ``r``, so ``s`` may be rounded
  down (each coordinate's square to its lattice cell's lower end's at the cell's lower
  atom and to the tangent's ``a^2 + 2 a h`` at its upper atom, capped at :data:`_CAP`;
  the rows above a top moved down) and onto any coarser lattice by the chord in ``s``
  (``g_0``, the rows' merges, the spread's bins: ``s - r^2 / n`` onto powers of
  :data:`_RHO`); the tangent's credit needs the value convex and non-decreasing along
  ``(1, 2c)``, ``0 <= c <= a``, at the points a chord reaches (``r >= a``, ``s >= a^2``),
  which Proposition 14 of the docs proves;
* at fixed ``s``, and along ``s = r^2 / n + v`` at fixed ``v``, it is convex in ``r``
  (``j <= 4``), so each coordinate's ``r`` may be spread on its lattice cell (its square
  fixed) and the sum onto the coarse lattice at its fixed spread ``v``; it is a
  polynomial with non-negative coefficients in the kept coordinates, as Proposition 10's
  chords need.

``k = 3`` and, with ``k=4``, ``k = 4`` (Proposition 15 of the docs: Lemma 11 (iv) proves
``hat G_4`` jointly convex on the band and every property above; the values take ``hat
G_{4-i}`` and ``C(T, 4)``, region 3's ``E_1`` a fifth term ``e_4`` of the kept four), and
with ``k=5``, ``k = 5`` (Proposition 16: Lemma 11 (v)'s ``hat G_5``; its tangent property
holds from ``n = 9`` others, so lattices of 5-8 others take the lower end's credit,
:func:`needs_lower_end`). The
first region (``M_2 <= theta``) is Proposition 10's; with ``first="squares"`` it keeps the
``T - 1`` others' (sum, sum of squares) too (Proposition 13 of
docs/theory/allocation_k_of_t.md: ``W_1 = (M_1 hat G_2 + hat G_3) / C(T, 3)``,
:func:`first_coefficients`; every other is below ``theta`` there, so the cap of their
squares cuts nothing), and ``first="both"`` returns both laws from one pass (Proposition
12's bit-equal to the law built alone). Measured (docs, Proposition 12; delta 1e-6, the
remove law's own epsilon): sigma 1.2, T 10: 4.40169 against Proposition 10's 4.41362 (the
pointwise bound 4.3744; 4.38536 with no cut raised, a lattice per cut: the raised cuts are
the largest loss); T 30: 2.68263 against 2.69073 (242 against 5 CPU s, 671 against 12 MB;
the pointwise bound 2.658), 2.66672 with no cut raised (``cut_step=1e-4``, 169 CPU s and
464 MB resident since each 2D product is only as wide as its sums and a cut's squarings
are shared; 386 s and 753 MB before, the same epsilon to 7 digits). On Proposition 10's
coarse nodes (``dl3=0.1, eta=8e-3``, 16 times fewer node triples to bin) with no cut
raised: 2.67237 in 34-38 CPU s; so routed there, at sigma 1.2-1.5, T 11-30
(:func:`.random_allocation_k3.k3_atoms`; docs, "Proposition 12 routed").
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..pld import pld_fft
from ..validation import check_count, check_positive
from .random_allocation_k2_three import _settings, _term_shares
from .random_allocation_k_law import _DROP_Q, _bin_affine, _dot
from .random_allocation_k_law4 import _LATTICE, _bin_rows, _build4
from .random_allocation_k_law_sq import max_elementary_given_sums

__all__ = ["first_coefficients", "hat_elementary", "needs_lower_end", "pair_power",
           "pair_term_law", "remove_atoms_sq3"]

_U = 2.0**-53
#: each other's z^2 is capped here (a cap only lowers s; measured +0.04 % at 100 on the
#: pointwise bound, sigma 1.2, T 30)
_CAP = 100.0
#: the sum of squares' lattice step of one coordinate (rounded down onto it)
_G0 = 0.125
#: rows of the (sum of squares) axis kept during the power: beyond it the step doubles
_ROWS = 512
#: the top of a partial sum's sum of squares (rows above it moved down to it): its mean
#: plus this many standard deviations
_TOP_SD = 7.0
#: the spread s - r^2 / n is put on powers of this ratio (times a unit) by chords in s
_RHO = 1.1
#: the lattices' cuts are raised onto multiples of this (log) step, shared by the cells
_CUT_STEP = 0.1
#: the per-coordinate lattice step of the sum (None: Proposition 10's); each coordinate's
#: square is credited below its own (the lower end's, the tangent's), so this step is also
#: a loss in s (about h^2 / 3 per coordinate with the tangent, a h with the lower end's)
_H = None
#: ``(least step, fraction of the sd)`` of the sum's coarse lattice (None: Proposition 10's)
_COARSE = None
#: True: every rounding of a sum of squares onto a coarser lattice (g_0, the rows'
#: merges, the spread's bins) is a floor (session 28's law); False: a chord in s, its
#: mean kept below the exact one (the value is convex in s: docs, Proposition 12, (3'))
_S_FLOOR = False
#: True: both atoms of a cell ``[a, a + h]`` credited ``a^2`` (Propositions 12-13 as in
#: sessions 28-33); False: the upper one the tangent ``a^2 + 2 a h`` (Proposition 14: the
#: value is convex along ``(1, 2a)`` wherever that chord reaches)
_LOWER_END = False


def hat_elementary(total: np.ndarray, squares: np.ndarray, n: int, j: int) -> np.ndarray:
    """Upper bounds (every operation rounded outward) on Lemma 11's ``hat G_j(total,
    squares)``, ``0 <= j <= 5``: ``1``, ``total``, ``((total^2 - squares) / 2)_+``, and for
    ``j = 3, 4, 5`` ``G_j`` on the band ``total^2 / n <= squares`` (0 above ``total^2``) and
    below it (``v = squares / n - total^2 / n^2 < 0``) Maclaurin's ``C(n, j) (total / n)^j``
    plus ``(n - 2) total (-v) / 2`` (``j = 3``), ``(n - 2) (n - 3) total^2 (-v) / (4 n)``
    (``j = 4``, Lemma 11 (iv)) or ``K m^3 (-v) / 12 + 3 K m v^2 / (16 n)`` (``j = 5``, ``K =
    n (n - 2) (n - 3) (n - 4)``, ``m = total / n``, Lemma 11 (v)): convex in ``total`` at
    fixed ``squares``, decreasing in ``squares`` and increasing in ``total`` (docs, Lemma 11
    (ii)-(v)).

    Parameters
    ----------
    total, squares : numpy.ndarray
        Sums ``>= 0`` and sums of squares, broadcast together (a negative sum of squares,
        reached by the lattice's spread at a fixed negative ``v``, takes the off-band
        form, which is convex along ``s = total^2 / n + v``).
    n : int
        How many numbers, ``>= 1`` (``j > n``: 0).
    j : int
        The degree, ``0 <= j <= 5``.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    ValueError
        If ``n < 1`` or ``j`` is outside ``[0, 5]``.

    Examples
    --------
    >>> v = float(hat_elementary(np.array(3.0), np.array(5.0), 3, 2))  # (9 - 5) / 2
    >>> 2.0 <= v <= 2.0 * (1 + 1e-14)  # rounded outward, never below
    True
    >>> bool(hat_elementary(np.array(3.0), np.array(0.0), 3, 3) > 1.0)  # below the band
    True
    >>> v = float(hat_elementary(np.array(5.0), np.array(7.0), 4, 4))  # e_4(1, 1, 1, 2)
    >>> 2.0 <= v <= 2.0 * (1 + 1e-12)
    True
    >>> v = float(hat_elementary(np.array(6.0), np.array(8.0), 5, 5))  # e_5(1, 1, 1, 1, 2)
    >>> 2.0 <= v <= 2.0 * (1 + 1e-12)
    True
    """
    n = check_count(n, "n")
    if not 0 <= j <= 5:
        raise ValueError(f"j must be in [0, 5], got j={j}")
    r, s = np.broadcast_arrays(np.asarray(total, float), np.asarray(squares, float))
    if j == 0:
        return np.ones(r.shape)
    if j == 1:
        return r.copy()
    if j == 2:
        return np.maximum(r * r * (1 + 4 * _U) - s, 0.0) * (0.5 * (1 + 4 * _U))
    if n < j:  # e_j of fewer than j numbers
        return np.zeros(r.shape)
    band = max_elementary_given_sums(r, np.maximum(s, 0.0), n, j, upper=True)  # v >= 0 only
    mac = max_elementary_given_sums(r, np.zeros(r.shape), n, j, upper=True)
    # bounds on v = s / n - r^2 / n^2 (each operation a relative u or two)
    q = r * r / (n * n)
    v_hi = s / n * (1 + 2 * _U) - q * (1 - 3 * _U)
    v_lo = s / n * (1 - 2 * _U) - q * (1 + 3 * _U)
    if j == 3:
        off = mac + (n - 2) * r * np.maximum(-v_lo, 0.0) * (0.5 * (1 + 8 * _U))
    elif j == 4:  # K m^2 (-v) / 4, K = n (n - 2) (n - 3) (an integer, exact), m = r / n
        off = mac + (r * r) * np.maximum(-v_lo, 0.0) * ((n - 2) * (n - 3) / (4 * n)
                                                         * (1 + 10 * _U))
    else:  # K m^3 (-v) / 12 + 3 K m v^2 / (16 n), K = n (n - 2) (n - 3) (n - 4), m = r / n
        neg = np.maximum(-v_lo, 0.0)  # |v| rounded up where v < 0 (both terms rise in it)
        k3 = (n - 2) * (n - 3) * (n - 4)  # an integer, exact
        off = mac + ((r * r * r) * neg * (k3 / (12 * n * n) * (1 + 10 * _U))
                     + r * (neg * neg) * (3 * k3 / (16 * n) * (1 + 10 * _U))) * (1 + 4 * _U)
    off *= 1 + 4 * _U
    return np.where(v_lo >= 0.0, band, np.where(v_hi < 0.0, off, np.maximum(band, off)))


def pair_term_law(sigma: float, cut: float, h: float, g: float, cap: float = _CAP,
                  lower_end: bool | None = None) -> np.ndarray:
    """Upper bounds on a law ``w[j, i]`` of one other's ``(z, z^2)`` on the lattice ``(i h,
    j g)`` (``z ~ Y | Y <= e^cut``, ``Y`` an unshifted coordinate): each cell ``[a, a + h]``
    (``a = c h``) puts :func:`.random_allocation_k2_three._term_shares`' two chord shares at
    its two ends, the lower one credited ``min(a^2, cap)`` and the upper one the tangent's
    ``min(a^2 + 2 a h, cap)`` (both below ``z^2`` on the chord: ``z^2 >= a^2 + 2 a (z -
    a)``), each put onto ``g N`` by the chord in ``s`` (the upper row's share rounded down).
    For every ``phi(r, s)`` convex in ``r``, convex and decreasing in ``s``, convex and
    non-decreasing along ``(1, 2c)``, ``0 <= c <= a``, at the points ``(r_0 + a + t, s_0 +
    a^2 + 2 c t)``, ``r_0, s_0 >= 0``, and non-negative, ``E phi(r_0 + z, s_0 + z^2) <=
    sum w phi(r_0 + i h, s_0 + j g)``: Proposition 14 of docs/theory/allocation_k_of_t.md
    proves that of Lemma 11's values; Proposition 12, (3'), (4) the rest.  With
    ``lower_end`` (default :data:`_LOWER_END`) both atoms are credited ``min(a^2, cap)``
    (Proposition 12's law; what ``hat G_5`` of ``5 <= n <= 8`` others needs: Lemma 11 (v)
    proves the tangent's property only from ``n = 9``).

    Examples
    --------
    >>> w = pair_term_law(1.0, 1.0, 0.25, 0.5)
    >>> bool(abs(w.sum() - 1.0) < 1e-9 and w.shape[1] == 12)
    True
    """
    lower, upper = _term_shares(sigma, math.exp(cut), h, 1 << 62)
    top = lower.size
    a = np.arange(top) * h
    # the lower atom credited a^2, the upper one the tangent a^2 + 2 a h (Proposition 14;
    # _LOWER_END: a^2 too, Proposition 12's), each rounded down and capped
    a2 = np.minimum(a * a * (1 - 4 * _U), cap)
    low = _LOWER_END if lower_end is None else lower_end
    t2 = a2 if low else np.minimum((a * a + 2 * a * h) * (1 - 8 * _U), cap)
    rows = []
    for sq in (a2, t2):
        x = sq / g
        j = np.floor(x * (1 - 1e-12)).astype(np.int64)
        # the upper row's share (x - j, rounded down): the chord in s (the value is convex
        # in s), its mean below the credited square's; _S_FLOOR: all of it on the lower row
        rows.append((j, np.zeros(top) if _S_FLOOR else np.clip(x - j - 1e-9, 0.0, 1.0)))
    w = np.zeros((int(max(rows[0][0].max(), rows[1][0].max())) + 2, top + 1))
    cols = np.arange(top)
    for share, col, (j, f) in ((lower, cols, rows[0]), (upper, cols + 1, rows[1])):
        # each add's cells are distinct (one per column), so a fancy-indexed add is exact
        w[j, col] += share * (1.0 - f)
        w[j + 1, col] += share * f
    return w * (1.0 + 1e-12)


def _rows_down(w: np.ndarray, factor: int, top: int | None = None) -> np.ndarray:
    """Row ``j`` of ``w`` moved to ``min(j, top)`` (the sum of squares rounded down), then
    onto the rows ``factor`` times coarser by the chord in ``s`` (``j = factor i + l``:
    ``1 - l / factor`` of it to ``i``, ``l / factor`` to ``i + 1``, exact in binary for a
    power of two; the value is convex in ``s``; :data:`_S_FLOOR`: all to ``i``), summed
    (non-negative sums: a relative ``rows * u`` at most, charged)."""
    rows = w.shape[0]
    j = np.arange(rows)
    if top is not None:
        j = np.minimum(j, top)
    i, frac = j // factor, (j % factor) / factor
    if _S_FLOOR:
        frac = np.zeros(rows)
    out = np.zeros((int(i[-1]) + 2, w.shape[1]))
    if top is None or top >= rows - 1:
        # rows j = factor i + l: each output row takes its shares in the order of j (the
        # order, so the sums, of an unbuffered add over the rows), l by l
        for up, part in ((0, 1.0 - frac), (1, frac)):
            for lo in range(min(factor, rows)):
                sel = w[lo::factor]
                out[up : up + sel.shape[0]] += sel * part[lo::factor][:, None]
    elif factor == 1:  # the rows above top summed onto it in order (a running sum)
        out[:top] = w[:top] * (1.0 - frac[:top])[:, None]
        out[top] = np.cumsum(w[top:] * (1.0 - frac[top:])[:, None], axis=0)[-1]
        out[1 : top + 1] += w[:top] * frac[:top, None]
        out[top + 1] += np.cumsum(w[top:] * frac[top:, None], axis=0)[-1]
    else:
        np.add.at(out, i, w * (1.0 - frac)[:, None])
        np.add.at(out, i + 1, w * frac[:, None])
    if not out[-1].any():
        out = out[:-1]
    return out * (1.0 + (rows + 2) * 2 * _U)


def _pair_product(a, b, width: int, r_top: int) -> np.ndarray:
    """Entrywise upper bound on the 2D convolution of ``a`` and ``b`` (rows: the sum of
    squares, columns: the sum, both ``width`` wide) by one 1D certified convolution of the
    rows laid end to end (no column beyond ``width - 1``: the sums' support ``r_top``)."""
    est, err = pld_fft._bounded_convolve(a.ravel(), b.ravel())
    side = pld_fft._certified_side(est, err, True, inplace=True)
    rows = a.shape[0] + b.shape[0]
    out = np.zeros(rows * width)
    out[: side.size] = side
    out = out.reshape(rows, width)[:-1]
    out[:, r_top + 1 :] = 0.0  # beyond the exact support: the transform's error alone
    return out


def pair_power(w: np.ndarray, m: int, g: float, *, rows: int = _ROWS, top_sd: float = _TOP_SD,
               squares: list | None = None) -> tuple[np.ndarray, float]:
    """``(law, step)``: an upper bound on the ``m``-fold 2D convolution power of ``w`` (a
    law on ``(i h, j g)``, rows ``j``) for functions convex and decreasing in the sum of
    squares: by repeated squaring, each product's rows above its mean plus ``top_sd``
    standard deviations plus twice one coordinate's largest square (the others' tail: one
    or two large) moved down to that row, and rows merged in twos by the chord in ``s``
    (the step doubled) while more than ``rows``.  Each product is laid out only as wide as
    its own sums reach (``(c_a + c_b)`` times one coordinate's), so a squaring does not
    depend on ``m``: ``squares``, a list shared between calls with the same ``w``, ``g``,
    ``rows`` and ``top_sd``, keeps ``w^2, w^4, ...`` for the next call.

    Examples
    --------
    >>> w = pair_term_law(1.0, 1.0, 0.25, 0.5)
    >>> p, step = pair_power(w, 3, 0.5)
    >>> bool(abs(p.sum() - 1.0) < 1e-8 and step >= 0.5)
    True
    """
    m = check_count(m, "m")
    col_top = int(np.flatnonzero(w.sum(axis=0))[-1])
    w = w[:, : col_top + 1]
    srow = w.sum(axis=1)
    jj = np.arange(w.shape[0]) * g
    mean = float(srow @ jj) / float(srow.sum())
    sd = math.sqrt(max(float(srow @ jj**2) / float(srow.sum()) - mean * mean, 0.0))

    big = float(jj[-1])  # one coordinate's largest square: room for two of them on top

    def settle(x, step, count):
        top = math.ceil((count * mean + top_sd * math.sqrt(count) * sd + 2 * big) / step) + 1
        x = _rows_down(x, 1, top) if x.shape[0] > top + 1 else x
        while x.shape[0] > rows:
            x, step = _rows_down(x, 2), 2 * step
        return x, step

    def product(x, y):
        (xa, ga, ca), (xb, gb, cb) = x, y
        step = max(ga, gb)
        if ga < step:
            xa = _rows_down(xa, round(step / ga))
        if gb < step:
            xb = _rows_down(xb, round(step / gb))
        width = (ca + cb) * col_top + 1  # the product's columns, no more
        xa = np.pad(xa, ((0, 0), (0, width - xa.shape[1])))
        xb = np.pad(xb, ((0, 0), (0, width - xb.shape[1])))
        z = _pair_product(xa, xb, width, (ca + cb) * col_top)
        z, step = settle(z, step, ca + cb)
        return z, step, ca + cb

    acc, base, level = None, (w, g, 1), 0
    while True:
        if m & 1:
            acc = base if acc is None else product(acc, base)
        m >>= 1
        if not m:
            return acc[0], acc[1]
        if squares is not None and level < len(squares):
            base = squares[level]
        else:
            base = product(base, base)
            if squares is not None:
                squares.append(base)
        level += 1


def _h_for_cut(h: float, cut: float, cols: float) -> float:
    """The per-coordinate step of a lattice cut at ``e^cut`` (regions 2-3, ``h_cols`` of
    :func:`remove_atoms_sq3`): ``h`` times the least power of ``2^(1/4)`` that leaves at
    most ``cols`` cells below the cut.  Any step ``> 0`` gives an upper bound
    (:func:`pair_term_law`); a coarser one where the cut is high keeps the lattice's
    columns, so its FFT work, bounded where the cells hold little mass.  A step whose
    ``e^cut / step`` is within ``1e-9`` of an integer is raised by ``1e-6`` of itself (no
    last cell of zero width in :func:`.random_allocation_k2_three._term_shares`).

    Examples
    --------
    >>> _h_for_cut(0.15, 1.0, 40.0), round(_h_for_cut(0.15, 3.0, 40.0), 6)
    (0.15, 0.504538)
    """
    need = math.exp(cut) / (cols * h)
    if need > 1.0:
        h = h * 2.0 ** (math.ceil(4.0 * math.log2(need)) / 4.0)
    ratio = math.exp(cut) / h
    return h * (1.0 + 1e-6) if abs(ratio - round(ratio)) < 1e-9 * ratio else h


def _pair_lattice(sigma, cut, h, folds, step, sd_frac, rho=_RHO, squares=None, lower_end=None,
                  cap=_CAP):
    """The others' lattice of Proposition 12: ``(r, s, w)``, the ``folds``-fold power of
    :func:`pair_term_law` cut at ``e^cut``, each entry's spread ``v = s - r^2 / folds``
    put on the two nearest of ``0, +-unit rho^i`` by the chord in ``s`` (the upper share
    rounded down), then its sum spread onto the coarse lattice (least step ``step``, at most
    ``sd_frac`` of its standard deviation) at that fixed spread: along ``s = r^2 / folds +
    v`` the value is convex in ``r`` (docs, Proposition 12, (4')); ``squares``: as
    :func:`pair_power`'s, for this cut; ``lower_end``, ``cap``: :func:`pair_term_law`'s."""
    w, g = pair_power(pair_term_law(sigma, cut, h, _G0, cap, lower_end=lower_end), folds, _G0,
                      rows=_ROWS, squares=squares)
    r = np.arange(w.shape[1]) * h
    mr = w.sum(axis=0)
    tot = float(mr.sum())
    sd = math.sqrt(max(float(mr @ r**2) / tot - (float(mr @ r) / tot) ** 2, 0.0))
    cstep = max(step, h, sd_frac * sd)
    jj, ii = np.nonzero(w)
    mass = w[jj, ii]
    # the spread, rounded down: to 0 in [0, unit), to unit * rho^floor(.) above; a
    # negative spread's magnitude rounded up to unit * rho^ceil(.)
    unit = g
    ri = np.arange(w.shape[1]) * h * (1 + 2 * _U)  # per column, then per entry
    s = (np.arange(w.shape[0]) * g * (1 - 2 * _U))[jj]
    v = s - (ri * ri / folds * (1 + 4 * _U))[ii]  # at most the entry's spread
    with np.errstate(divide="ignore"):
        lv = np.log(np.abs(v) / unit) / math.log(rho)
    b = np.where(v >= unit, np.floor(lv - 1e-9),
                 np.where(v >= 0.0, -1.0, -np.ceil(np.maximum(lv, 0.0) + 1e-9) - 2.0))
    b = b.astype(np.int64)

    def bin_value(bb):
        """Bin ``bb``'s spread ``v_b`` (0 for ``bb = -1``), from a table of the bins met."""
        lo = int(bb.min())
        kk = np.arange(lo, int(bb.max()) + 1)
        vk = np.where(kk >= 0, unit * rho ** np.maximum(kk, 0).astype(float), 0.0)
        table = np.where(kk <= -2, -unit * rho ** np.maximum(-(kk + 2), 0).astype(float), vk)
        return table[bb - lo]

    def spread_s(r_lo, bb):
        """A lower bound on ``r^2 / folds + v_b`` for ``r >= r_lo`` (negative where the
        curve leaves ``s >= 0``: :func:`hat_elementary`'s off-band form holds there)."""
        vb = bin_value(bb)
        vb = vb * np.where(vb > 0, 1 - 1e-12, 1 + 1e-12)
        base = r_lo * r_lo / folds * (1 - 4 * _U) + vb  # < 0 only off the band
        return base * np.where(base > 0, 1 - 4 * _U, 1 + 4 * _U)

    vb, vn = bin_value(b), bin_value(b + 1)
    if np.any(vb > v):  # each entry's spread (so its s) only rounded down
        raise ArithmeticError("a sum of squares was rounded up")
    # the chord in s between the bins b and b + 1 (the next larger spread): its share
    # rounded down (the value is convex and decreasing in s); _S_FLOOR: all at b
    f = np.clip((v - vb) / (vn - vb) * (1 - 1e-9) - 1e-12, 0.0, 1.0)
    if _S_FLOOR:
        f = np.zeros(f.size)
    b = np.concatenate((b, b + 1))
    mass = np.concatenate((mass * (1.0 - f), mass * f))
    x = np.arange(w.shape[1]) * h / cstep  # per column, then per entry
    lo = np.floor(x)
    u = np.minimum((x - lo) * (1.0 + 1e-15) + 1e-300, 1.0)  # the upper share rounded up
    ii = np.concatenate((ii, ii))
    lo, u = lo.astype(np.int64)[ii], u[ii]
    # each (share, spread) entry to its two sums lo, lo + 1, summed by (sum, spread bin)
    # on a dense index in this order (the lower sums' shares first); keys of zero mass
    # are left out (they add nothing to the law nor to its charge)
    b0, nbin = int(b.min()), int(b.max() - b.min()) + 1
    key = np.empty(2 * b.size, dtype=np.int64)
    np.multiply(lo, nbin, out=key[: b.size])
    key[: b.size] += b - b0
    np.add(key[: b.size], nbin, out=key[b.size :])
    mc = np.empty(2 * b.size)
    np.multiply(mass, 1.0 - u, out=mc[: b.size])
    np.multiply(mass, u, out=mc[b.size :])
    mc *= 1.0 + 1e-12
    wk = np.bincount(key, weights=mc)
    uk = np.flatnonzero(wk)
    wk = wk[uk] * (1.0 + 1e-12)
    rk = (uk // nbin) * cstep
    return rk * (1 + 2 * _U), spread_s(rk * (1 - 2 * _U), uk % nbin + b0), wk


def needs_lower_end(n: int, k: int) -> bool | None:
    """True where the tangent credit (Proposition 14) is not proved for the values of a
    lattice of ``n`` others at degree ``k``: ``k = 5`` and ``5 <= n <= 8`` (Lemma 11 (v):
    ``hat G_5`` is non-decreasing along the tangent chords iff ``n >= 9``, ``(k - 2)^2``;
    below 5 it is 0); else None (the module's default, :data:`_LOWER_END`).

    Examples
    --------
    >>> needs_lower_end(8, 5), needs_lower_end(9, 5), needs_lower_end(6, 4)
    (True, None, None)
    """
    return True if k >= 5 and 5 <= n < (k - 2) ** 2 else None


def first_coefficients(total: np.ndarray, squares: np.ndarray, t: int, k: int = 3
                       ) -> tuple[np.ndarray, np.ndarray]:
    """``(a, c)``: upper bounds on ``hat G_{k-1}(total, squares) / C(T, k)`` and ``hat
    G_k(total, squares) / C(T, k)`` of ``n = T - 1`` others (:func:`hat_elementary`, every
    operation rounded outward), so that ``W_1 = m a + c`` bounds ``Lambda_k = e_k(z) /
    C(T, k)`` for ``M_1 = m`` and the others' sum and sum of squares (Proposition 13 of
    docs/theory/allocation_k_of_t.md: ``e_k(z) = M_1 e_{k-1}(o) + e_k(o)``, ``e_2(o) =
    (r^2 - s) / 2``, ``e_j(o) <= G_j(r, s)``, Lemma 11; ``k = 4``: Proposition 15; ``k =
    5``: Proposition 16).

    Parameters
    ----------
    total, squares : numpy.ndarray
        The others' sums (rounded up) and sums of squares (rounded down).
    t : int
        Steps per epoch ``T``, >= ``k + 1``.
    k : int, default 3
        Steps per record per epoch, 3, 4 or 5.

    Returns
    -------
    tuple of numpy.ndarray

    Raises
    ------
    ValueError
        If ``k`` is not 3, 4 or 5 or ``t < k + 1``.

    Examples
    --------
    >>> a, c = first_coefficients(np.array(4.0), np.array(6.0), 4)  # others 1, 1, 2
    >>> m = 3.0  # e_3(3, 1, 1, 2) = 3 * 5 + 2 = 17, over C(4, 3) = 4 (attained)
    >>> bool(17 / 4 <= float(m * a + c) <= 17 / 4 * (1 + 1e-12))
    True
    >>> a, c = first_coefficients(np.array(5.0), np.array(7.0), 5, 4)  # others 1, 1, 1, 2
    >>> m = 3.0  # e_4(3, 1, 1, 1, 2) = 3 * 7 + 2 = 23, over C(5, 4) = 5 (attained)
    >>> bool(23 / 5 <= float(m * a + c) <= 23 / 5 * (1 + 1e-12))
    True
    """
    t = check_count(t, "steps")
    if k not in (3, 4, 5):
        raise ValueError(f"k must be 3, 4 or 5 for the sum-of-squares law, got k={k}")
    if t < k + 1:
        raise ValueError(f"steps must be >= {k + 1} for the first region's value, got "
                         f"steps={t}")
    ck = float(math.comb(t, k))
    return (hat_elementary(total, squares, t - 1, k - 1) / ck * (1 + 2 * _U),
            hat_elementary(total, squares, t - 1, k) / ck * (1 + 2 * _U))


def _first_squares(sigma, t, h, coarse, rho, low, low_step, k=3, cap=_CAP):
    """Proposition 13's first region (``M_2 <= theta``; docs/theory/allocation_k_of_t.md):
    the ``M_1`` cells of each cut of ``cut_list`` against the ``T - 1`` others' (sum, sum
    of squares) lattice (:func:`_pair_lattice`, per-coordinate step ``h``, coarse lattice
    ``coarse``) cut there, the value ``W_1 = (m hat G_{k-1}(r, s) + hat G_k(r, s)) / C(T,
    k)`` (``n = T - 1``; affine in ``m``, binned by
    :func:`.random_allocation_k_law._bin_affine`); cells and entries of mass below
    ``drop_w`` / ``drop_r`` charged ``E[W_1]`` in full.  A cut whose ``Q(M_1 <= e^cut) =
    F(cut)^T`` is below ``low`` is raised onto a multiple of ``low_step`` (at most the
    largest cut, ``theta``): fewer lattices where the cells hold almost no mass.  The
    ``first`` hook of :func:`.random_allocation_k_law4._build4`."""
    n = t - 1
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2

    def first(tail, hist, cut_list, m, w, off, drop_w, drop_r):
        top = max(cut for _, cut in cut_list)
        last, lat = None, None
        for sel, cut in cut_list:
            idx = np.flatnonzero(sel)
            if not idx.size:
                continue
            if t * float(special.log_ndtr((cut - mu0) / s0)) < math.log(low):
                cut = min(math.ceil(cut / low_step) * low_step, top)  # only raised
            if cut != last:
                rv, sv, lw = _pair_lattice(sigma, cut, h, n, coarse[0], coarse[1], rho,
                                           lower_end=needs_lower_end(n, k), cap=cap)
                lat, last = (*first_coefficients(rv, sv, t, k), lw), cut
            a, c, lw = lat
            tiny = idx[w[idx] < drop_w]
            tail += _dot(w[tiny], m[tiny] * _dot(lw, a) + _dot(lw, c))
            idx = idx[w[idx] >= drop_w]
            keep = lw > drop_r
            tail += _dot(w[idx], m[idx] * _dot(lw[~keep], a[~keep]) + _dot(lw[~keep], c[~keep]))
            tail += _bin_affine(hist, m[idx], a[keep], c[keep], w[idx], lw[keep], off, _DROP_Q)
        return tail

    return first


# long function: its docstring (about 60 lines) states every option's contract, and the two
# closures (the lattice and the binner) share the call's caches; the checks and the build
# are the rest
def remove_atoms_sq3(sigma: float, t: int, *, progress: bool = False, theta_sd: float = 2.2,
                     theta3_sd: float = 2.0, dl3: float = 0.05, eta: float = 2e-3,
                     top_sd: float = 7.0, cut_step: float = _CUT_STEP, rho: float = _RHO,
                     coarse: tuple[float, float] | None = None, first: str = "maclaurin",
                     first_coarse: tuple[float, float] = (0.25, 0.0625),
                     first_low: float = 1e-4, first_low_step: float = 0.25,
                     first_h: float | None = None, h: float | None = None,
                     h2: float | None = None, coarse2: tuple[float, float] | None = None,
                     k: int = 3, h_cols: float | None = None, cap: float = _CAP) -> tuple:
    """``(values, q, charge)``: for every ``gamma >= 0``, ``H_gamma(P_k || Q) <= sum_i q_i
    (values_i - gamma)_+ + charge`` (Proposition 12 of docs/theory/allocation_k_of_t.md;
    module docstring; ``k = 4``: Proposition 15), one k-of-T epoch's remove direction.

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0.
    t : int
        Steps per epoch ``T``, >= 5.
    progress : bool, default False
        Show a ``tqdm`` bar.
    theta_sd, theta3_sd, dl3, eta, top_sd : float
        Proposition 10's splits, nodes and top
        (:func:`.random_allocation_k_law4.remove_atoms4`).
    cut_step : float
        The others' cuts are raised onto multiples of this log step (lattices shared
        between the cells; larger: fewer lattices, a looser law), > 0.
    rho : float
        The spread ``s - r^2 / n`` is rounded down to powers of ``rho`` (> 1).
    coarse : tuple of float, optional
        ``(least step, fraction of the sd)`` of the others' coarse sum lattice in regions
        2 and 3, each > 0 (default :data:`_COARSE`, else Proposition 10's); finer: a
        tighter law at more CPU (sigma 1.5, T 20, delta 1e-6: 2.31791 at Proposition
        10's ``(1, 0.25)``, 2.31436 at ``(0.5, 0.125)``, 1.35 times the CPU; session 31).
    first : {"maclaurin", "squares", "both"}, default "maclaurin"
        The first region (``M_2 <= theta``): Proposition 10's (Maclaurin on the others'
        sum: Proposition 12's law), Proposition 13's (their sum of squares kept:
        :func:`first_coefficients`), or both laws from one pass, returned as
        ``(Proposition 13's, Proposition 12's)``.
    first_coarse : tuple of float
        ``(least step, fraction of the sd)`` of the first region's coarse sum lattice.
    first_low, first_low_step : float
        First-region cuts whose ``Q(M_1 <= e^cut)`` is below ``first_low`` are raised onto
        multiples of ``first_low_step`` (fewer lattices where the cells hold almost no
        mass), each > 0.
    first_h : float, optional
        The first region's per-coordinate lattice step (default: Proposition 10's ``h1``).
    h : float, optional
        The per-coordinate lattice step of the others' sum in regions 2 and 3, > 0
        (default :data:`_H`, else Proposition 10's; each coordinate's square is credited
        as its cell's lower end's, so a finer step is tighter in ``s`` too).
    h2, coarse2 : optional
        Region 2's own per-coordinate step (> 0) and coarse lattice (as ``coarse``): its
        one lattice (``M_3 <= theta_3``, the ``T - 2`` others) holds most of the mass, so
        refining it alone costs little (default: ``h`` and ``coarse``'s; session 33:
        sigma 1.5, T 11, 3 epochs, delta 1e-6: 5.68441 -> 5.66482 at ``(0.05, (0.25,
        0.0625))`` for no measurable CPU, against 5.66403 for ``h = 0.05`` in both regions
        at 1.5 times the law's CPU).
    k : int, default 3
        Steps per record per epoch, 3, 4 or 5 (``k = 4``: Proposition 15, ``hat G_4`` of
        Lemma 11 (iv); ``k = 5``: Proposition 16, ``hat G_5`` of Lemma 11 (v), the lattices
        of 5-8 others with the lower end's credit, :func:`needs_lower_end`).
    h_cols : float, optional
        Regions 2-3's lattices (not region 2's own ``h2``) keep at most this many cells
        per coordinate below their cut: the step is ``h`` raised by powers of ``2^(1/4)``
        where the cut is high (:func:`_h_for_cut`), > 0.  The high cuts' lattices hold
        little mass and most of the FFT work (session 36: sigma 1.2, T 20, delta 1e-6,
        session 35's nodes: 4.27471 in 4.4 CPU s, with ``h_cols`` 40 4.27642 in 3.0 s).
    cap : float, default :data:`_CAP`
        Each other's square is capped here (> 0; a cap only lowers ``s``; larger: tighter
        where the others' squares reach it, at more CPU; session 36, k = 5, sigma 1, T 10,
        delta 1e-6: 9.37310 at 100, 9.25469 at 400).

    Returns
    -------
    tuple
        Values (sorted, rounded up onto a log grid), their Q-masses and the charge; with
        ``first="both"`` a pair of such triples.

    Raises
    ------
    ValueError
        If ``sigma <= 0``, ``t < 5``, ``theta3_sd >= theta_sd``, ``cut_step <= 0``,
        ``h``, ``h2`` or ``h_cols <= 0``, ``rho <= 1``, an entry of ``coarse``, ``coarse2`` or
        ``first_coarse`` or ``first_low`` or ``first_low_step`` is not positive, or
        ``first`` is none of the three, ``k`` is not 3, 4 or 5 (``t < 6`` at ``k = 5``), or
        ``cap <= 0``.

    Examples
    --------
    >>> v, q, c = remove_atoms_sq3(4.0, 6)
    >>> bool(float(q @ v) + c >= 1.0)
    True
    >>> new, old = remove_atoms_sq3(4.0, 6, first="both")  # Propositions 13 and 12
    >>> bool(float(new[1] @ new[0]) + new[2] >= 1.0)
    True
    """
    sigma = check_positive("sigma", sigma)
    t = check_count(t, "steps")
    if k not in (3, 4, 5):
        raise ValueError(f"k must be 3, 4 or 5 for the sum-of-squares law, got k={k}")
    if t < max(5, k + 1):
        raise ValueError(f"steps must be >= {max(5, k + 1)} for the sum-of-squares law, got "
                         f"steps={t}")
    if not theta3_sd < theta_sd:
        raise ValueError(f"theta3_sd must be below theta_sd, got {theta3_sd} >= {theta_sd}")
    cut_step = check_positive("cut_step", cut_step)
    cap = check_positive("cap", cap)
    if not rho > 1.0:
        raise ValueError(f"rho must be > 1, got {rho}")
    if coarse is None:
        coarse = _LATTICE[t >= 50] if _COARSE is None else _COARSE
    step = check_positive("coarse[0]", coarse[0])
    sd_frac = check_positive("coarse[1]", coarse[1])
    if first not in ("maclaurin", "squares", "both"):
        raise ValueError(f"first must be 'maclaurin', 'squares' or 'both', got {first!r}")
    check_positive("first_coarse[0]", first_coarse[0])
    check_positive("first_coarse[1]", first_coarse[1])
    if first_h is not None:
        first_h = check_positive("first_h", first_h)
    h23 = _H if h is None else check_positive("h", h)
    if h2 is not None:
        h2 = check_positive("h2", h2)
    if h_cols is not None:
        h_cols = check_positive("h_cols", h_cols)
    if coarse2 is not None:
        coarse2 = (check_positive("coarse2[0]", coarse2[0]),
                   check_positive("coarse2[1]", coarse2[1]))
    first_low = check_positive("first_low", first_low)
    first_low_step = check_positive("first_low_step", first_low_step)
    cache: dict = {}
    powers: dict = {}  # a cut's squarings, shared by its folds (the last two cuts: E_0 of
    # cell s and E_1 of cell s - 1 are cut at the same node)

    def lattice(sig, cut, h, size, folds, st, sf):
        up = math.ceil(cut / cut_step)
        key = (up + (up * cut_step < cut), folds)  # a cut only raised
        if folds == t - 2 and (h2 is not None or coarse2 is not None):
            # region 2's one lattice (regions 3's have T - 3 or T - 4 folds): its own
            # steps, its squarings not shared with region 3's at the same cut
            if key not in cache:
                cache[key] = (*_pair_lattice(sig, key[0] * cut_step, h2 or h23 or h, folds,
                                             *(coarse2 or (st, sf)), rho,
                                             lower_end=needs_lower_end(folds, k), cap=cap),
                              folds, {})
            return cache[key]
        if key not in cache:
            low = needs_lower_end(folds, k)  # the squarings' law differs with it
            pkey = key[0] if low is None else (key[0], low)
            if pkey not in powers and len(powers) >= 2:
                del powers[next(iter(powers))]
            hh = h if h23 is None else h23
            if h_cols is not None:
                hh = _h_for_cut(hh, key[0] * cut_step, h_cols)
            cache[key] = (*_pair_lattice(sig, key[0] * cut_step, hh,
                                         folds, st, sf, rho, powers.setdefault(pkey, []),
                                         lower_end=low, cap=cap), folds, {})
        return cache[key]

    ck = float(math.comb(t, k))

    def binner(hist, ws, x, x3, coef, k, lat, shift, shift_sq, off):
        # the shifted other (E_1: at x_3, or at b_q in M_2's cell) is kept as a fourth
        # coordinate, the lattice's others alone in hat G (n = folds)
        n1, n2 = np.nonzero(ws)
        if not n1.size:
            return 0.0
        rv, sv, lw, n, values = lat
        x1, x2 = x[n1], x[n2]
        e1, e2, e3 = x1 + x2 + x3, x1 * x2 + (x1 + x2) * x3, x1 * x2 * x3
        e4 = None
        if shift:  # the fourth kept coordinate (e_4 counts only where k >= 4)
            e1, e2, e3, e4 = e1 + shift, e2 + e1 * shift, e3 + e2 * shift, e3 * shift
        e = [np.ones(n1.size), e1, e2, e3, e4]
        levels = min(len(coef) - 1 + (e4 is not None), k)
        rows = np.stack(e[: levels + 1], axis=1) * (1 + 6 * _U)
        if levels not in values:  # the lattice's hat G, shared by its M_3 nodes
            values[levels] = np.stack([hat_elementary(rv, sv, n, k - i) / ck * (1 + 2 * _U)
                                       for i in range(levels + 1)])
        p = values[levels]
        return _bin_rows(hist, rows, p, ws[n1, n2], lw, off, _DROP_Q)

    hook = None
    if first != "maclaurin":  # the first region's lattice step h1 is h from sigma 0.65
        h1 = _settings(sigma, t)[3] / (1.0 if sigma >= 0.65 else 4.0)
        hook = _first_squares(sigma, t, h1 if first_h is None else first_h, first_coarse, rho,
                              first_low, first_low_step, k, cap)
    out = _build4(sigma, t, k, progress, theta_sd, theta3_sd, dl3, eta, step, sd_frac,
                  top_sd, 1e-22, 1e-16, lattice=lattice, binner=binner, first=hook)
    return out[0] if first == "squares" else out
