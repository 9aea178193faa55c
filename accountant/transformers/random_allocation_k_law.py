"""The (max, second, sum) law of one k-of-T allocation epoch's remove direction, any k >= 3.

One epoch allocates the record to a uniform ``k``-subset of ``T`` Gaussian steps (noise
multiplier ``sigma``).  With ``Y_t = exp((x_t - 1/2) / sigma^2)`` i.i.d. log-normal under
``Q = N(0, sigma^2 I_T)`` (``E Y = 1``) the likelihood ratio of the exact pair is
``Lambda_k = e_k(Y) / C(T, k)`` (docs/theory/allocation_k_of_t.md, "The exact pair of one
epoch"; Proposition 1' there).  Proposition 9 of docs/theory/allocation_k_of_t.md ("k >= 4,
direct"; at ``k = 3`` it is Proposition 7, "k = 3, direct") bounds ``H_gamma(P_k || Q)``
at every ``gamma >= 0`` by Proposition 6's machinery (:mod:`.random_allocation_k2_three`)
with k's value functions and charges.  With ``M_1 >= M_2`` the two largest coordinates,
``R`` the sum of all but ``M_1``, ``R'`` of all but both, ``n = T - 1``, ``n' = T - 2``
and Maclaurin's inequality ``e_j(o) <= C(m, j) (s / m)^j`` for ``m`` non-negative reals
of sum ``s`` (at ``j = 2`` it is Cauchy-Schwarz):

* ``M_2 <= theta``: ``e_k <= M_1 C(n, k-1) (R / n)^(k-1) + C(n, k) (R / n)^k``;
* ``M_2 > theta``: ``e_k <= M_1 M_2 C(n', k-2) (R' / n')^(k-2) + (M_1 + M_2) C(n', k-1)
  (R' / n')^(k-1) + C(n', k) (R' / n')^k``

(:func:`value_coefficients`), both increasing in the coordinates and increasing convex
in the sum; the charges are ``P_k``'s unions over ``j``-sets of coordinates above a cut
(:func:`union_charge`: ``j = 2``, ``M_2`` above ``b``; ``3``, three above ``b'``; ``1``,
``M_1`` above the last cell).  The cells, their Q-masses (which do not depend on ``k``),
the lattice laws of the others and every outward rounding are Proposition 6's.

The numerics (docs/theory/allocation_k_of_t.md, "k = 3, direct", session 23's "Cost"):
the values ``b_i a_r + c_r`` of a chunk of (cell, lattice entry) elements are binned by
``log2`` into reused buffers (:func:`_bin_affine`, the index rounded up with a margin
that covers the values' and ``log2``'s round-off); 1-d sums use ``einsum``
(:func:`_dot`); elements of Q-mass below :data:`_DROP_Q` are charged their
``E[value]`` in full, not binned (sound: ``(v - gamma)_+ <= v``, the step of Proposition
6, (2) that charges any dropped mass).  The settings that the proofs leave free (the
split ``theta``, the coarse lattice's least step, the M cells' log step) are
:func:`settings`'s, one set for ``k = 3`` and one for ``k >= 4``; :mod:`.random_allocation_k3`
and :mod:`.random_allocation_k4` route the two.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..numerics import LazyBar
from ..validation import check_count, check_positive
from .random_allocation_k2_hull import _err, blocks_remove_atoms, envelope_remove_law
from .random_allocation_k2_three import (
    _DLOG,
    _OPS,
    _coarsen,
    _cut_cells,
    _joint_weights,
    _settings,
    _sum_power,
    _term_law,
    three_settings,
)
from .random_allocation_pld import PROGRESS_DELAY, AllocationEpochPair

__all__: list[str] = []

#: the aims of the unions on two and three coordinates above the cuts b, b'
_CHARGE2 = 1e-9
_CHARGE3 = 1e-10
#: index units (log-grid steps) per unit of ``log2``
_PER_LOG2 = math.log(2.0) / _DLOG
#: added to the grid index before it is truncated: ``ln(1 + _OPS) / _DLOG`` (the values'
#: own round-off, 1e-8) plus ``log2``'s error (a few ulps of ``|log2 v| <= 1000``, times
#: ``_PER_LOG2``: below 2e-8) and the index's own products (1e-10), generously
_MARGIN = 1e-7
#: (cell, lattice entry) elements of Q-mass below this are charged ``E[value]`` in full,
#: not binned: 38 % of the elements, of P-mass 1e-19 in all (k = 3, sigma 1, T 100; the
#: curve moves up by at most 2.4e-10 relative at eps 0-10, sigma 1 and 0.8, T 10 and 100)
_DROP_Q = 1e-28
#: elements per chunk of the binning (buffers reused: a few hundred kB, in cache)
_CHUNK = 1 << 16
#: the second region's coarse lattice step is at least this many standard deviations of
#: the others' sum (Proposition 6's quarter)
_SD_FRAC = 0.25


def _tails(sigma: float, log_b: float) -> tuple[float, float]:
    """Upper bounds on ``P(Y > e^{log_b})`` of a shifted and of an unshifted coordinate
    (the ndtr error model of :mod:`.random_allocation_k2_hull`)."""
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    zs = -(log_b - mu0 - 1.0 / sigma**2) / s0
    zu = -(log_b - mu0) / s0
    ps = float(special.ndtr(zs)) * (1.0 + float(_err(np.array([zs]))[0]))
    pu = float(special.ndtr(zu)) * (1.0 + float(_err(np.array([zu]))[0]))
    return ps, pu


def union_charge(sigma: float, t: int, k: int, j: int, log_b: float) -> float:
    """Upper bound on ``P_k(j coordinates above e^{log_b})``: a union over ``j``-sets of
    coordinates, ``i`` of them among the record's ``k`` steps (``C(k, i) C(T-k, j-i)``
    sets, each of probability ``p_s^i p_u^(j-i)`` under every ``N(1_S, sigma^2 I)``).

    Examples
    --------
    >>> bool(union_charge(1.0, 10, 4, 2, 3.0) < union_charge(1.0, 10, 4, 2, 2.0))
    True
    """
    ps, pu = _tails(sigma, log_b)
    total = sum(math.comb(k, i) * math.comb(t - k, j - i) * ps**i * pu ** (j - i)
                for i in range(min(j, k) + 1))
    return total * (1.0 + _OPS)


def _least(sigma: float, t: int, k: int, j: int, charge: float) -> tuple[float, float]:
    """``(log b, charge)``: the least ``b`` (bisection) whose :func:`union_charge` on
    ``j``-sets is ``<= charge``, and that charge."""
    mu0, s0 = -0.5 / sigma**2, 1.0 / sigma
    lo, hi = mu0, mu0 + 40.0 * s0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if union_charge(sigma, t, k, j, mid) > charge else (lo, mid)
    return hi, union_charge(sigma, t, k, j, hi)


def value_coefficients(t: int, k: int, levels: int) -> list[float]:
    """``[c_0, ..., c_levels]``: Maclaurin's coefficients ``C(n, k-i) / n^(k-i) / C(T, k)``
    (``n = T - levels``) of the value function that keeps ``levels`` (1 or 2) coordinates:
    ``V = sum_i e_i(kept) c_i r^(k-i)``.

    Examples
    --------
    >>> value_coefficients(4, 4, 2)  # T = k: e_4 = M_1 M_2 y_3 y_4 <= M_1 M_2 R'^2 / 4
    [0.0, 0.0, 0.25]
    """
    n, ck = t - levels, math.comb(t, k)  # n >= k - 2 >= 1
    return [math.comb(n, k - i) / float(n) ** (k - i) / ck for i in range(levels + 1)]


def settings(sigma: float, t: int, k: int) -> dict:
    """The settings Propositions 7 and 9 leave free (measured: docs/theory/
    allocation_k_of_t.md, "k = 3, direct" and "k >= 4, direct"; delta 1e-6, CPU s of the
    law on a loaded machine):

    * ``log_theta``, the split of ``M_2``: ``THETA`` standard deviations above the mean of
      an unshifted ``log Y``; ``k = 3``: 3.4 (Proposition 6's 4.1 left most of the tail
      to ``V_1``, whose Cauchy-Schwarz step counts ``M_2^2``: sigma 0.8, T 10: 8.3306
      against 8.8874; sigma 1, T 100: 2.1597 at step 8 against 2.1728); ``k >= 4``: 3.0
      (``V_1`` lumps ``k - 1`` of the record's coordinates into ``R``: sigma 0.8, T 50,
      k 4, the pointwise bound 6.14 at 3 sd, 6.18 at 3.5);
    * ``step``, the second region's coarse lattice's least step: ``V_2`` multiplies ``R'``
      by ``M_1 M_2``; ``k = 3``: 4 from T 50, 8 from T 10, 0.5 below (sigma 1, T 100:
      2.15971 at 8 (8.3 s), 2.15577 at 4 (10.6 s); sigma 0.8, T 10: 8.33059 at 8, 8.29732
      at 2 (30 s); sigma 1.5, T 3: 5.8343 at 0.5, 6.7906 at 8); ``k >= 4``: 1 (sigma 2,
      T = k = 4: 6.518 at 8, 5.078 at 1, 5.029 at 0.1);
    * ``dl``, the M cells' log step (each value is rounded up by at most a factor
      ``(1 + dl)^2``, epsilon by at most ``2 dl``; region 2 costs about ``1 / dl^2``):
      ``k = 3`` Proposition 6's (:func:`.random_allocation_k2_three._settings`);
      ``k >= 4`` 6e-3 (session 23: 4e-3; sigma 0.8, T 50, k 4: 6.1817 in 6.6 s against
      6.1781 in 87.5 s at 1e-3);
    * ``cuts``, the spacing of the cuts the others' law is rebuilt at, as a fraction of
      Proposition 6's (its ``M_2`` cells' others are cut at the next cut above their
      upper end: the finer, the tighter, and each cut is one FFT power): ``k = 3`` 1;
      ``k >= 4`` 1/3 below T 50, 1/2 from T 50 (session 24, delta 1e-6, k 4, law CPU s
      on a loaded machine; at dl 4e-3 and cuts 1: sigma 0.7, T 20: 11.76552 (9.3 s);
      sigma 1, T 20: 5.97251; sigma 0.8, T 50: 6.18165; sigma 1, T 100: 2.81467 (2.2 s);
      sigma 0.7, T 100: 6.35053 (9.6 s); at dl 6e-3 and these cuts: 11.74515 (6.2 s),
      5.96714, 6.17226, 2.81150 (3.0 s), 6.34218 (18.1 s); sigma 1.2, T 20: 4.45269 ->
      4.44916);
    * ``h1``, the first region's lattice step: Proposition 6's
      (:func:`.random_allocation_k2_three.three_settings`).

    Examples
    --------
    >>> settings(1.0, 100, 3)["step"], settings(1.0, 100, 4)["step"]
    (4.0, 1.0)
    """
    if k == 3:
        sds, step, dl, cuts = 3.4, (4.0 if t >= 50 else 8.0 if t >= 10 else 0.5), None, 1.0
    else:
        sds, step, dl, cuts = 3.0, 1.0, 6e-3, (0.5 if t >= 50 else 1.0 / 3.0)
    return {"log_theta": -0.5 / sigma**2 + sds / sigma, "step": step,
            "dl": _settings(sigma, t)[0] if dl is None else dl, "cuts": cuts,
            "h1": three_settings(sigma, t)["h1"]}


def _dot(x: np.ndarray, y: np.ndarray) -> float:
    """``sum x_i y_i`` of two 1-d arrays without BLAS (whose threads cost milliseconds a
    call on a loaded machine: 1.7 ms CPU for 32 768 entries against 0.01 ms); summation
    order aside, the same sum (the charges carry a ``1 + _OPS`` margin)."""
    return float(np.einsum("i,i->", x, y))


def _bin_affine(hist, b, a, c, wb, pc, off, drop: float = 0.0) -> float:
    """Add ``wb_i pc_r`` at the values ``b_i a_r + c_r >= 0`` rounded up onto the log grid
    of step ``_DLOG`` (index ``off`` at 1; 0 and values below the grid's least go up to
    it) after a ``1 + _OPS`` margin: index ``ceil(ln v / _DLOG) + off <= trunc(log2 v *
    _PER_LOG2 + off + 1 + _MARGIN)``.  Elements of mass ``wb_i pc_r < drop`` are not
    binned but returned, charged their ``E[value]`` in full (rounded up); each row takes
    a prefix of the entries sorted by ``pc`` (so a chunk's rows share its widest
    prefix, and what lies past it is charged).  No value is clipped from above: an
    index past the end of ``hist`` raises."""
    nb = hist.size
    if not (a.size and b.size):
        return 0.0
    order = np.argsort(-pc, kind="stable")
    pc, a, c = pc[order], a[order], c[order]
    # suffix sums of pc a and pc c: what lies past a prefix (the last entry 0)
    sa = np.append(np.cumsum((pc * a)[::-1])[::-1], 0.0)
    sc = np.append(np.cumsum((pc * c)[::-1])[::-1], 0.0)
    with np.errstate(divide="ignore"):
        need = np.searchsorted(-pc, -(drop / wb), side="right") if drop > 0 else \
            np.full(b.size, a.size)
    rows_order = np.argsort(-need, kind="stable")
    b, wb, need = b[rows_order], wb[rows_order], need[rows_order]
    size = max(_CHUNK, a.size)  # a chunk holds at least one row
    v, wt, ix = np.empty(size), np.empty(size), np.empty(size, dtype=np.int64)
    shift = off + 1.0 + _MARGIN
    charge = 0.0
    s = 0
    with np.errstate(divide="ignore"):
        while s < b.size:
            width = int(need[s])
            rows = b.size - s if width == 0 else max(1, _CHUNK // width)
            bb, ww = b[s : s + rows, None], wb[s : s + rows, None]
            s += bb.shape[0]
            charge += _dot(ww[:, 0], bb[:, 0] * sa[width] + sc[width])
            if width == 0:
                continue
            n = bb.shape[0] * width
            vv = v[:n].reshape(bb.shape[0], width)
            np.multiply(bb, a[:width], out=vv)
            vv += c[:width]
            np.log2(vv, out=vv)  # -inf at 0: index 0 below
            vv *= _PER_LOG2
            np.maximum(vv, -shift, out=vv)
            ixn = ix[:n]
            np.add(v[:n], shift, out=ixn, casting="unsafe")  # >= 0: truncation is floor
            np.multiply(ww, pc[:width], out=wt[:n].reshape(bb.shape[0], width))
            lo, hi = int(ixn.min()), int(ixn.max())
            if hi >= nb:
                raise ArithmeticError("a value of the k-of-T law fell beyond the log grid")
            _add_counts(hist, ixn, wt[:n], lo, hi)
    # the suffix sums and this sum: a few hundred ulps at most, all terms >= 0
    return charge * (1.0 + _OPS)


def _add_counts(hist, ix, wt, lo: int, hi: int) -> None:
    """``hist[..., i] += sum of wt[ix == i]`` (each bin's sum in the order of ``ix``, as
    one ``bincount`` over ``lo..hi``); ``ix`` is overwritten.  Where index 0 (values at or
    below the grid's least, zeros among them) lies far below the rest (``hi > ix.size``),
    those elements are counted in a slot just below the least other index, so that the
    counts span that index to ``hi``, not ``0`` to ``hi`` (the same sums: bit-equal)."""
    if lo == 0 and hi > ix.size:
        lo2 = int(np.min(ix, where=ix > 0, initial=hi))
        if lo2 > 1:
            np.maximum(ix, lo2 - 1, out=ix)  # index 0 -> lo2 - 1 (no element there)
            ix -= lo2 - 1
            got = np.bincount(ix, weights=wt, minlength=hi - lo2 + 2)
            hist[..., 0] += got[0]
            hist[..., lo2 : hi + 1] += got[1:]
            return
    if lo:
        ix -= lo
    hist[..., lo : hi + 1] += np.bincount(ix, weights=wt, minlength=hi - lo + 1)


def _first_region(tail, hist, law, r, m, w, sel, k, c, off, drop_w, drop_r) -> float:
    """M_2 <= theta: the M_1 cells ``sel`` (upper ends ``m``, Q-masses ``w``) against the
    others' ``(T-1)``-fold law ``law`` on ``r``: ``V_1 = c_1 m r^(k-1) + c_0 r^k`` binned;
    cells and entries of mass below ``drop_w`` / ``drop_r`` charged ``E[V_1]`` in full."""
    p1, p0 = r ** (k - 1), r**k
    idx = np.flatnonzero(sel)
    tiny = idx[w[idx] < drop_w]
    tail += _dot(w[tiny], c[1] * m[tiny] * _dot(law, p1) + c[0] * _dot(law, p0))
    idx = idx[w[idx] >= drop_w]
    keep = law > drop_r
    e1, e0 = _dot(law[~keep], p1[~keep]), _dot(law[~keep], p0[~keep])
    tail += _dot(w[idx], c[1] * m[idx] * e1 + c[0] * e0)
    return tail + _bin_affine(hist, m[idx], c[1] * p1[keep], c[0] * p0[keep], w[idx],
                              law[keep], off, _DROP_Q)


def region_one(tail, hist, bar, sigma, t, k, cut_list, h1, n1, m, w, c1, off, drop_w,
               drop_r) -> float:
    """Proposition 9's first region (``M_2 <= theta``): the M_1 cells of each cut of
    ``cut_list`` against the others' ``(T-1)``-fold lattice law (step ``h1``, ``n1``
    entries) cut there (:func:`_first_region`), one power per distinct cut."""
    r1 = np.arange(n1) * h1
    law, last = None, None
    for sel, cut in cut_list:
        bar.update(1)
        if not sel.any():
            continue
        if cut != last:
            law, last = _sum_power(_term_law(sigma, math.exp(cut), h1, n1), t - 1), cut
        tail = _first_region(tail, hist, law, r1, m, w, sel, k, c1, off, drop_w, drop_r)
    return tail


def _second_pairs(tail, hist, law, rv, m, w1, j, wj, dj, t, k, c, off, drop_w,
                  drop_r) -> float:
    """M_2 in cell ``j`` against every M_1 cell above it (and the diagonal):
    ``V_2 = c_2 b a r^(k-2) + c_1 (b + a) r^(k-1) + c_0 r^k`` at the cells' upper ends
    ``b >= a`` over the others' ``(T-2)``-fold law ``law`` on ``rv``; Q-masses ``T wj dF_i``
    and ``dj`` (Proposition 6, (4)); pairs and entries below ``drop_w`` / ``drop_r``
    charged ``E[V_2]`` in full."""
    a = float(m[j])
    b = np.append(m[j + 1 :], a)  # the diagonal last: both at most a_j
    wt = np.append(t * wj * w1[j + 1 :], dj) * (1.0 + _OPS)
    p2, p1, p0 = rv ** (k - 2), rv ** (k - 1), rv**k
    # value = b (c_2 a p_2 + c_1 p_1) + (c_1 a p_1 + c_0 p_0), all terms >= 0
    slope, base = c[2] * a * p2 + c[1] * p1, c[1] * a * p1 + c[0] * p0
    tiny = wt < drop_w
    tail += _dot(wt[tiny], b[tiny] * _dot(law, slope) + _dot(law, base))
    b, wt = b[~tiny], wt[~tiny]
    if not b.size:
        return tail
    keep = law > drop_r
    tail += _dot(wt, b * _dot(law[~keep], slope[~keep]) + _dot(law[~keep], base[~keep]))
    return tail + _bin_affine(hist, b, slope[keep], base[keep], wt, law[keep], off, _DROP_Q)


def remove_atoms(
    sigma: float, t: int, k: int, *, progress: bool = False, drop_w: float = 1e-22,
    drop_r: float = 1e-16, step: float | None = None, log_theta: float | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """``(values, q, charge)``: for every ``gamma >= 0``, ``H_gamma(P_k || Q) <= sum_i q_i
    (values_i - gamma)_+ + charge`` (Propositions 7 and 9 of docs/theory/
    allocation_k_of_t.md; module docstring).  The arguments are those of
    :func:`.random_allocation_k4.k_remove_atoms` (``t`` is its ``steps``), whose docstring
    describes them and which, like :func:`.random_allocation_k3.k3_remove_atoms`, only
    forwards here; ``step`` and ``log_theta`` default to :func:`settings`'s.

    Raises
    ------
    ValueError
        If ``sigma <= 0``, ``k < 3`` (k = 2 has its own law) or ``t < k``.
    """
    sigma = check_positive("sigma", sigma)
    t = check_count(t, "steps")
    k = check_count(k, "k")
    if k < 3:
        raise ValueError(f"k must be >= 3 for the direct bound (k = 2 has its own law), got k={k}")
    if t < k:
        raise ValueError(f"steps must be >= k for the direct bound, got steps={t}, k={k}")
    st = settings(sigma, t, k)
    step = st["step"] if step is None else step
    log_theta = st["log_theta"] if log_theta is None else log_theta
    key = (sigma, t, k, drop_w, drop_r, step, log_theta, st["dl"], st["cuts"], st["h1"])
    if key not in _ATOMS:
        _ATOMS.clear()  # one law kept: a few MB, and a few CPU seconds to rebuild
        _ATOMS[key] = _build(sigma, t, k, progress, drop_w, drop_r, step, log_theta,
                             st["dl"], st["cuts"], st["h1"])
    return _ATOMS[key]


#: the last atoms built, by (sigma, T, k, settings)
_ATOMS: dict[tuple, tuple[np.ndarray, np.ndarray, float]] = {}


def _levels_and_cuts(sigma, t, dl, scale, lmax) -> tuple[np.ndarray, np.ndarray]:
    """Proposition 6's M cells (log upper ends, step ``dl``) and the cuts the others'
    law is rebuilt at (Proposition 6's spacing times ``scale``)."""
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    _, coarse, fine, _, _ = _settings(sigma, t)
    coarse, fine = coarse * scale, fine * scale
    lmin = mu0 + s0 * float(special.ndtri(1e-18 ** (1.0 / t)))
    levels = np.arange(lmin, lmax + dl, dl)
    cuts = np.arange(lmin + coarse, levels[-1] + coarse, coarse)
    if fine < coarse:  # finer above the median of M
        cuts = cuts[cuts < mu0 + s0 * float(special.ndtri(0.5 ** (1.0 / t)))]
        cuts = np.concatenate((cuts, np.arange(cuts[-1] + fine, levels[-1] + fine, fine)))
    if cuts[-1] < levels[-1]:
        cuts = np.append(cuts, levels[-1])
    return levels, cuts


def _build(sigma, t, k, progress, drop_w, drop_r, step, log_theta, dl, scale, h1):
    h = _settings(sigma, t)[3]
    lb2, tail = _least(sigma, t, k, 2, _CHARGE2)  # M_2 above b
    lb3, ch3 = _least(sigma, t, k, 3, _CHARGE3)  # A_3
    tail += ch3
    levels, cuts = _levels_and_cuts(sigma, t, dl, scale, 0.5 / sigma**2 + 8.0 / sigma)
    tail += union_charge(sigma, t, k, 1, float(levels[-1]))  # M_1 above the last cell
    jt = min(max(int(np.searchsorted(levels, log_theta)), 1), levels.size - 2)
    theta = float(levels[jt])
    jb = min(int(np.searchsorted(levels, lb2)), levels.size - 1)
    m = np.exp(levels) * (1.0 + 1e-15)
    w, w1, wg, diag = _joint_weights(sigma, t, levels, jt)
    n1 = 1 << math.ceil(math.log2((t - 1) * math.exp(theta) / h1 + t + 2))
    nb3 = 1 << math.ceil(math.log2((t - 2) * math.exp(lb3) / h + t + 2))
    # m_1 + m_2 + r <= big (r on the coarse lattice: at most one step above the sum),
    # so every value is <= e_k(.) / C(T, k) <= big^k / (k! C(T, k)) <= big^k: none clipped
    big = 2.0 * (max(n1 * h1, nb3 * h) + max(step, _SD_FRAC * nb3 * h) + m[-1])
    off = math.ceil(40.0 / _DLOG)
    hist = np.zeros(math.ceil((k * math.log(big) + 41.0) / _DLOG))
    c1, c2 = value_coefficients(t, k, 1), value_coefficients(t, k, 2)
    cut_list = list(_cut_cells(levels, cuts, theta))
    js = np.arange(jt + 1, jb + 1)
    with LazyBar(
        total=len(cut_list) + js.size, desc=f"random-allocation k={k} law (T={t})",
        delay=PROGRESS_DELAY, progress=progress,
    ) as bar:
        tail = region_one(tail, hist, bar, sigma, t, k, cut_list, h1, n1, m, w, c1, off,
                          drop_w, drop_r)
        cache: dict[float, tuple[np.ndarray, np.ndarray]] = {}
        ci = np.searchsorted(cuts, levels[js])  # region 2: theta < M_2 <= a_jb
        for j, cc in zip(js, ci, strict=True):
            bar.update(1)
            cut = min(float(cuts[min(cc, cuts.size - 1)]), lb3)
            if cut not in cache:
                cache.clear()
                lw = _sum_power(_term_law(sigma, math.exp(cut), h, nb3), t - 2)
                rv = np.arange(nb3) * h
                sd = math.sqrt(max(_dot(lw, rv**2) - _dot(lw, rv) ** 2, 0.0))
                cache[cut] = _coarsen(lw, h, max(step, h, _SD_FRAC * sd))
            rv, lw = cache[cut]
            tail = _second_pairs(tail, hist, lw, rv, m, w1, int(j), float(wg[j]),
                                 float(diag[j]), t, k, c2, off, drop_w, drop_r)
    hist *= 1.0 + _OPS
    nz = np.flatnonzero(hist > 0)
    return np.exp((nz - off) * _DLOG), hist[nz], float(tail) * (1.0 + _OPS)


def block_sizes(t: int, k: int) -> list[int]:
    """Proposition 1's ``k`` blocks of a ``k``-of-``t`` epoch.

    Examples
    --------
    >>> block_sizes(10, 3)
    [3, 3, 4]
    """
    q, r = divmod(t, k)
    return [q] * (k - r) + [q + 1] * r


def envelope_law(sigma: float, t: int, k: int, direct, progress: bool = False):
    """The remove law whose curve is the lower convex envelope of the atoms ``direct`` and
    of Proposition 1's ``k`` blocks (Proposition 5, which needs of the epoch only that its
    curve is convex with value 1 at 0: true at every k)."""
    laws = [AllocationEpochPair(sigma, s, progress=progress)._loss_laws()[0]
            for s in block_sizes(t, k)]
    return envelope_remove_law(direct, blocks_remove_atoms(laws, _DLOG))
