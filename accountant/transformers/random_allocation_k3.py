"""A direct upper bound for 3-of-T random allocation: the (max, second, sum) law at k = 3.

One epoch allocates the record to a uniform 3-subset of ``T`` Gaussian steps (noise
multiplier ``sigma``).  With ``Y_t = exp((x_t - 1/2) / sigma^2)`` i.i.d. log-normal under
``Q = N(0, sigma^2 I_T)`` (``E Y = 1``) the likelihood ratio of the exact pair is
``Lambda_3 = e_3(Y) / C(T, 3)`` (docs/theory/allocation_k_of_t.md, "The exact pair of one
epoch"; Proposition 1' there: the pair dominates the adaptive epoch).  Proposition 7 of
docs/theory/allocation_k_of_t.md ("k = 3, direct") bounds its remove direction
``H_gamma(P_3 || Q)`` at every ``gamma >= 0`` by the machinery of Proposition 6 (the
k = 2 (max, second, sum) law, :mod:`.random_allocation_k2_three`) with k = 3's value
functions and charges.  With ``M_1 >= M_2`` the two largest coordinates, ``R`` the sum of
all but ``M_1`` and ``R'`` of all but both,

* ``M_2 <= theta``: ``e_3 <= M_1 R^2 (T-2) / (2 (T-1)) + C(T-1, 3) (R / (T-1))^3``
  (Cauchy-Schwarz on ``e_2`` of the others, Maclaurin on their ``e_3``);
* ``M_2 > theta``: ``e_3 <= M_1 M_2 R' + (M_1 + M_2) R'^2 (T-3) / (2 (T-2)) + C(T-2, 3)
  (R' / (T-2))^3``;

both increasing in the coordinates and increasing convex in the sum; the charges are
``P_3``'s unions: two coordinates above ``b`` ``3 p_s^2 + 3 (T-3) p_s p_u + C(T-3, 2)
p_u^2``, three above ``b'`` ``p_s^3 + 3 (T-3) p_s^2 p_u + 3 C(T-3, 2) p_s p_u^2 + C(T-3, 3)
p_u^3``, one above the last cell ``3 p_s + (T-3) p_u``.  The cells, their Q-masses
(which do not depend on ``k``), the lattice laws of the others and every outward
rounding are Proposition 6's, imported from :mod:`.random_allocation_k2_three`.

The atoms go through Lemma 4 (one epoch: a probability pair dominating the remove
direction) or Proposition 5 (several epochs: the lower convex envelope with the three
blocks of Proposition 1, :func:`k3_envelope_law`); the add direction is the blocks'
(:func:`allocation_k3_pair`), as at k = 2.  ``M_2`` is split at 3.4 standard deviations
(:func:`_log_theta`; session 22 split at Proposition 6's 4.1, where ``V_1``'s
Cauchy-Schwarz step, which counts ``M_2^2``, held most of the excess: measured by
importance sampling of the pointwise bounds, docs/theory/allocation_k_of_t.md).
Measured (delta 1e-6, one epoch; main is the blocks): sigma 1, T 100: 2.1558 against
2.1958; sigma 0.8, T 100: 3.6552 against 3.8047; sigma 0.8, T 10: 8.3306 against 9.7489;
sigma 1, T 10: 5.9893 against 6.2095.  At sigma 1.2, T 100 and sigma 1.5, T 30 it loses
to the blocks, so it is tried only where :func:`k3_tried`
(docs/theory/allocation_k_of_t.md, "k = 3, direct").
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..mechanism import Mechanism
from ..numerics import _bar_disabled
from ..validation import check_count, check_positive
from .random_allocation_k2 import AllocationK2Remove, _AddDirectionOnly
from .random_allocation_k2_hull import _err, blocks_remove_atoms, envelope_remove_law
from .random_allocation_k2_three import (
    _DLOG,
    _OPS,
    _coarsen,
    _cut_cells,
    _joint_weights,
    _least_cut,
    _settings,
    _sum_power,
    _term_law,
    three_settings,
)
from .random_allocation_pld import PROGRESS_DELAY, AllocationEpochPair

__all__: list[str] = []

#: the range where the route of :class:`~dpacct.accountant.RandomAllocationMechanism` is
#: tried at k = 3 (:func:`k3_tried`; measured: docs/theory/allocation_k_of_t.md, "k = 3,
#: direct")
K3_MIN_STEPS = 10
K3_MAX_STEPS = 100
K3_MIN_SIGMA = 0.65
K3_MAX_SIGMA = 1.25
#: the split of M_2, in standard deviations of log Y (:func:`_log_theta`)
_THETA_SD = 3.4
#: the aims of the unions on two and three coordinates above the cuts b, b'
_CHARGE2 = 1e-9
_CHARGE3 = 1e-10


def _tails(sigma: float, log_b: float) -> tuple[float, float]:
    """Upper bounds on ``P(Y > e^{log_b})`` of a shifted and of an unshifted coordinate
    (the ndtr error model of :mod:`.random_allocation_k2_hull`)."""
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    zs = -(log_b - mu0 - 1.0 / sigma**2) / s0
    zu = -(log_b - mu0) / s0
    ps = float(special.ndtr(zs)) * (1.0 + float(_err(np.array([zs]))[0]))
    pu = float(special.ndtr(zu)) * (1.0 + float(_err(np.array([zu]))[0]))
    return ps, pu


def _pair_charge3(sigma: float, t: int, log_b: float) -> float:
    """Upper bound on ``P_3(two coordinates above e^{log_b})``: a union over pairs (two of
    the record's three steps, one of them, none)."""
    ps, pu = _tails(sigma, log_b)
    n = t - 3
    return (3 * ps * ps + 3 * n * ps * pu + n * (n - 1) / 2 * pu * pu) * (1.0 + _OPS)


def _triple_charge3(sigma: float, t: int, log_b: float) -> float:
    """Upper bound on ``P_3(three coordinates above e^{log_b})``: a union over triples."""
    ps, pu = _tails(sigma, log_b)
    n = t - 3
    return (
        ps**3 + 3 * n * ps * ps * pu + 3 * n * (n - 1) / 2 * ps * pu * pu
        + n * (n - 1) * (n - 2) / 6 * pu**3
    ) * (1.0 + _OPS)


#: index units (log-grid steps) per unit of ``log2``
_PER_LOG2 = math.log(2.0) / _DLOG
#: added to the grid index before it is truncated: ``ln(1 + _OPS) / _DLOG`` (the values'
#: own round-off, 1e-8) plus ``log2``'s error (a few ulps of ``|log2 v| <= 1000``, times
#: ``_PER_LOG2``: below 2e-8) and the index's own products (1e-10), generously
_MARGIN = 1e-7
#: (cell, lattice entry) elements of Q-mass below this are charged ``E[value]`` in full,
#: not binned: 38 % of the elements, of P-mass 1e-19 in all (sigma 1, T 100; the curve
#: moves up by at most 2.4e-10 relative at eps 0-10, sigma 1 and 0.8, T 10 and 100)
_DROP_Q = 1e-28
#: elements per chunk of the binning (buffers reused: a few hundred kB, in cache)
_CHUNK = 1 << 16
#: the second region's coarse lattice step is at least this many standard deviations of
#: the others' sum (Proposition 6's quarter)
_SD_FRAC = 0.25


def _bin(hist: np.ndarray, vals: np.ndarray, weights: np.ndarray, off: int) -> None:
    """Add ``weights`` at ``vals`` rounded up onto the log grid of step ``_DLOG`` (index
    ``off`` at 1; 0 goes up to the grid's least value) after a ``1 + _OPS`` margin
    (session 22's binning, kept for :mod:`.random_allocation_k4`; this module bins with
    the faster :func:`_bin_affine`)."""
    lv = np.maximum(vals * (1.0 + _OPS), 1e-300)
    ix = np.ceil(np.log(lv) / _DLOG).astype(np.int64) + off
    np.clip(ix, 0, hist.size - 1, out=ix)
    hist += np.bincount(ix.ravel(), weights=weights.ravel(), minlength=hist.size)


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
                raise ArithmeticError("a k = 3 value fell beyond the log grid")
            if lo:
                ixn -= lo
            hist[lo : hi + 1] += np.bincount(ixn, weights=wt[:n], minlength=hi - lo + 1)
    # the suffix sums and this sum: a few hundred ulps at most, all terms >= 0
    return charge * (1.0 + _OPS)


def _first_region(tail, hist, law, r, m, w, sel, t, off, drop_w, drop_r) -> float:
    """M_2 <= theta: the M_1 cells ``sel`` (upper ends ``m``, Q-masses ``w``) against the
    others' ``(T-1)``-fold law ``law`` on ``r = (r, r^2, r^3)``: ``(a_2 m r^2 + a_3 r^3) /
    C(T, 3)`` binned; cells and entries of mass below ``drop_w`` / ``drop_r`` charged in
    full."""
    c3 = math.comb(t, 3)
    a2, a3 = (t - 2) / (2.0 * (t - 1)), math.comb(t - 1, 3) / (t - 1) ** 3
    r, r2, r3 = r
    idx = np.flatnonzero(sel)
    tiny = idx[w[idx] < drop_w]
    tail += _dot(w[tiny], a2 * m[tiny] * _dot(law, r2) + a3 * _dot(law, r3)) / c3
    idx = idx[w[idx] >= drop_w]
    keep = law > drop_r
    e2d, e3d = _dot(law[~keep], r2[~keep]), _dot(law[~keep], r3[~keep])
    tail += _dot(w[idx], a2 * m[idx] * e2d + a3 * e3d) / c3
    return tail + _bin_affine(hist, m[idx], a2 * r2[keep] / c3, a3 * r3[keep] / c3, w[idx],
                              law[keep], off, _DROP_Q)


def _second_pairs(tail, hist, law, rv, m, w1, j, wj, dj, t, off, drop_w, drop_r) -> float:
    """M_2 in cell ``j`` against every M_1 cell above it (and the diagonal): value
    ``(b a r + (b + a) q_2 r^2 + q_3 r^3) / C(T, 3)`` at the cells' upper ends ``b >= a``
    over the others' ``(T-2)``-fold law ``law`` on ``rv``; Q-masses ``T wj dF_i`` and
    ``dj`` (Proposition 6, (4)); pairs and entries below ``drop_w`` / ``drop_r`` charged
    ``E[value]`` in full."""
    c3 = math.comb(t, 3)
    q2, q3 = (t - 3) / (2.0 * (t - 2)), math.comb(t - 2, 3) / (t - 2) ** 3
    a = float(m[j])
    b = np.append(m[j + 1 :], a)  # the diagonal last: both at most a_j
    wt = np.append(t * wj * w1[j + 1 :], dj) * (1.0 + _OPS)
    mom = [_dot(law, rv**p) for p in (1, 2, 3)]
    tiny = wt < drop_w
    tail += _dot(wt[tiny], b[tiny] * a * mom[0] + (b[tiny] + a) * q2 * mom[1]
                 + q3 * mom[2]) / c3
    b, wt = b[~tiny], wt[~tiny]
    if not b.size:
        return tail
    keep = law > drop_r
    rr, pr, pd, rd = rv[keep], law[keep], law[~keep], rv[~keep]
    tail += _dot(wt, b * a * _dot(pd, rd) + (b + a) * q2 * _dot(pd, rd**2)
                 + q3 * _dot(pd, rd**3)) / c3
    # value = b (a r + q_2 r^2) + (a q_2 r^2 + q_3 r^3), all terms >= 0
    r2 = rr * rr
    return tail + _bin_affine(hist, b, (a * rr + q2 * r2) / c3,
                              (a * q2 * r2 + q3 * r2 * rr) / c3, wt, pr, off, _DROP_Q)


def k3_remove_atoms(
    sigma: float, steps: int, *, progress: bool = False, drop_w: float = 1e-22,
    drop_r: float = 1e-16, step: float | None = None, log_theta: float | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """``(values, q, charge)``: for every ``gamma >= 0``, ``H_gamma(P_3 || Q) <= sum_i q_i
    (values_i - gamma)_+ + charge`` (Proposition 7 of docs/theory/allocation_k_of_t.md;
    module docstring).

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0.
    steps : int
        Steps per epoch ``T``, >= 3 (at ``T = 3`` the bound is of the exact pair, a
        Gaussian: no amplification).
    progress : bool, default False
        Show a ``tqdm`` bar after :data:`PROGRESS_DELAY` seconds.
    drop_w, drop_r, step : float, optional
        Cell pairs and lattice entries below these masses are charged ``E[value]`` in
        full; the least step of the second region's coarse lattice (default
        :func:`_step`).
    log_theta : float, optional
        ``log`` of the split of ``M_2`` (default :func:`_log_theta`: 3.4 standard
        deviations above the mean of an unshifted ``log Y``).

    Returns
    -------
    tuple
        Values (sorted, rounded up onto a log grid), their Q-masses and the charge.

    Examples
    --------
    >>> v, q, c = k3_remove_atoms(5.0, 3)  # T = 3: the exact pair is a Gaussian
    >>> bool(float(q @ v) + c >= 1.0)
    True
    """
    sigma = check_positive("sigma", sigma)
    t = check_count(steps, "steps")
    if t < 3:
        raise ValueError(f"steps must be >= 3 for the direct k = 3 bound, got {t}")
    if log_theta is None:
        log_theta = _log_theta(sigma)
    if step is None:
        step = _step(t)
    key = (sigma, t, drop_w, drop_r, step, log_theta)
    if key not in _ATOMS:
        _ATOMS.clear()  # one law kept: a few MB, and a few CPU seconds to rebuild
        _ATOMS[key] = _build(sigma, t, progress, drop_w, drop_r, step, log_theta)
    return _ATOMS[key]


#: the last atoms built, by (sigma, T, settings)
_ATOMS: dict[tuple, tuple[np.ndarray, np.ndarray, float]] = {}


def _build(
    sigma, t, progress, drop_w, drop_r, step, log_theta
) -> tuple[np.ndarray, np.ndarray, float]:
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    dl, coarse, fine, h, _ = _settings(sigma, t)
    st = three_settings(sigma, t)
    lb2, tail = _least_cut(_pair_charge3, sigma, t, _CHARGE2)  # M_2 above b
    lb3, ch3 = _least_cut(_triple_charge3, sigma, t, _CHARGE3)  # A_3
    tail += ch3
    lmin = mu0 + s0 * float(special.ndtri(1e-18 ** (1.0 / t)))
    levels = np.arange(lmin, 0.5 / sigma**2 + 8.0 / sigma + dl, dl)
    ps, pu = _tails(sigma, float(levels[-1]))
    tail += (3 * ps + (t - 3) * pu) * (1.0 + _OPS)  # M_1 above the last cell
    jt = min(max(int(np.searchsorted(levels, log_theta)), 1), levels.size - 2)
    theta = float(levels[jt])
    jb = min(int(np.searchsorted(levels, lb2)), levels.size - 1)
    m = np.exp(levels) * (1.0 + 1e-15)
    w, w1, wg, diag = _joint_weights(sigma, t, levels, jt)
    cuts = np.arange(lmin + coarse, levels[-1] + coarse, coarse)
    if fine < coarse:  # finer above the median of M
        cuts = cuts[cuts < mu0 + s0 * float(special.ndtri(0.5 ** (1.0 / t)))]
        cuts = np.concatenate((cuts, np.arange(cuts[-1] + fine, levels[-1] + fine, fine)))
    if cuts[-1] < levels[-1]:
        cuts = np.append(cuts, levels[-1])
    h1 = st["h1"]
    n1 = 1 << math.ceil(math.log2((t - 1) * math.exp(theta) / h1 + t + 2))
    nb3 = 1 << math.ceil(math.log2((t - 2) * math.exp(lb3) / h + t + 2))
    big = max(n1 * h1, nb3 * h) + m[-1]  # every sum and coordinate is below it
    off = math.ceil(40.0 / _DLOG)
    hist = np.zeros(math.ceil((3.0 * math.log(big) + 41.0) / _DLOG))  # e_3 <= big^3
    r1 = np.arange(n1) * h1
    r1 = (r1, r1 * r1, r1 * r1 * r1)
    cut_list = list(_cut_cells(levels, cuts, theta))
    js = np.arange(jt + 1, jb + 1)
    from tqdm import tqdm

    with tqdm(
        total=len(cut_list) + js.size, desc=f"random-allocation k=3 law (T={t})",
        delay=PROGRESS_DELAY, disable=_bar_disabled(progress), leave=False,
    ) as bar:
        law, last = None, None
        for sel, cut in cut_list:  # region 1: M_2 <= theta
            bar.update(1)
            if not sel.any():
                continue
            if cut != last:
                law, last = _sum_power(_term_law(sigma, math.exp(cut), h1, n1), t - 1), cut
            tail = _first_region(tail, hist, law, r1, m, w, sel, t, off, drop_w, drop_r)
        cache: dict[float, tuple[np.ndarray, np.ndarray]] = {}
        ci = np.searchsorted(cuts, levels[js])  # region 2: theta < M_2 <= a_jb
        for j, c in zip(js, ci, strict=True):
            bar.update(1)
            cut = min(float(cuts[min(c, cuts.size - 1)]), lb3)
            if cut not in cache:
                cache.clear()
                lw = _sum_power(_term_law(sigma, math.exp(cut), h, nb3), t - 2)
                rv = np.arange(nb3) * h
                sd = math.sqrt(max(_dot(lw, rv**2) - _dot(lw, rv) ** 2, 0.0))
                cache[cut] = _coarsen(lw, h, max(step, h, _SD_FRAC * sd))
            rv, lw = cache[cut]
            tail = _second_pairs(tail, hist, lw, rv, m, w1, int(j), float(wg[j]),
                                 float(diag[j]), t, off, drop_w, drop_r)
    hist *= 1.0 + _OPS
    nz = np.flatnonzero(hist > 0)
    return np.exp((nz - off) * _DLOG), hist[nz], float(tail) * (1.0 + _OPS)


def k3_tried(sigma: float, t: int) -> bool:
    """Whether the route is tried at k = 3: where its law was measured below the blocks
    (delta 1e-6, one epoch, split at 3.4 sd; docs/theory/allocation_k_of_t.md, "k = 3,
    direct"): sigma 0.65-1.05 at ``10 <= T <= 100`` (sigma 1, T 10: 5.9893 against
    6.2095; sigma 0.9, T 10: 6.9804 against 7.3132; sigma 1, T 100: 2.1558 against
    2.1958) and up to 1.25 at ``10 <= T <= 30`` (sigma 1.2: T 10 4.6618 against 4.7043,
    T 30 2.7681 against 2.7870); the blocks were tighter at sigma 1.2, T 100 (1.4554
    against 1.4501), sigma 1.5, T 30 (1.9577 against 1.9103) and, split at 4.1 sd, at
    T 300 (sigma 1: 1.1865 against 1.1803).

    Examples
    --------
    >>> k3_tried(1.0, 100), k3_tried(1.2, 100), k3_tried(1.2, 10)
    (True, False, True)
    """
    if not (K3_MIN_STEPS <= t <= K3_MAX_STEPS and K3_MIN_SIGMA <= sigma <= K3_MAX_SIGMA):
        return False
    return sigma <= 1.05 or t <= 30


def _log_theta(sigma: float) -> float:
    """``log theta``, the split of ``M_2`` between ``V_1`` and ``V_2``: 3.4 standard
    deviations above the mean of an unshifted ``log Y`` (Proposition 6's 4.1 left most of
    the tail to ``V_1``, whose Cauchy-Schwarz step counts ``M_2^2``; docs/theory/
    allocation_k_of_t.md, "k = 3, direct": delta 1e-6, sigma 0.8, T 10: 8.3306 against
    8.8874; sigma 1, T 100: 2.1597 at step 8, 2.1553 at step 2 against 2.1728)."""
    return -0.5 / sigma**2 + _THETA_SD / sigma


def _step(t: int) -> float:
    """The least step of the second region's coarse lattice at k = 3: ``V_2`` multiplies
    ``R'`` by ``M_1 M_2``, so Proposition 6's 32 costs (session 22, split at 4.1 sd: sigma
    1, T 100: 2.1891 at 32, 2.1728 at 8; sigma 0.8, T 10: 9.0098 at 32, 8.8874 at 8,
    8.8844 at 2).  Split at 3.4 sd (:func:`_log_theta`; delta 1e-6, CPU s of the law on a
    loaded machine): sigma 1, T 100: 2.15971 at 8 (8.3 s), 2.15577 at 4 (10.6 s),
    2.15529 at 2 (10.8 s); sigma 0.8, T 100: 3.65523 at 4 (19.1 s) and at 2 (24.3 s);
    sigma 0.8, T 10: 8.33059 at 8 (10.8 s), 8.29732 at 2 (29.7 s).  So 4 from T 50, 8
    from T 10; below T 10 (``R'`` a sum of at most 7 terms) 0.5 (sigma 1.5, T 3: 5.8343
    against the exact 5.7604; 6.7906 at 8)."""
    return 4.0 if t >= 50 else 8.0 if t >= 10 else 0.5


def _block_sizes(t: int) -> list[int]:
    """Proposition 1's three blocks of a 3-of-``t`` epoch."""
    m, r = divmod(t, 3)
    return [m] * (3 - r) + [m + 1] * r


def k3_envelope_law(sigma: float, t: int, direct, progress: bool = False):
    """The remove law whose curve is the lower convex envelope of the atoms ``direct`` and
    of Proposition 1's three blocks (Proposition 5, which needs of the epoch only that its
    curve is convex with value 1 at 0: true at every k)."""
    laws = [AllocationEpochPair(sigma, s, progress=progress)._loss_laws()[0]
            for s in _block_sizes(t)]
    return envelope_remove_law(direct, blocks_remove_atoms(laws, _DLOG))


class AllocationK3Remove(AllocationK2Remove):
    """The remove direction of one 3-of-T allocation epoch, bounded directly (module):
    :class:`.random_allocation_k2.AllocationK2Remove` with Proposition 7's atoms and the
    envelope with three blocks.

    Its add direction is the identity (see :class:`.random_allocation_k2.AllocationK2Remove`
    for why the engine's swapped reading stays sound): :func:`allocation_k3_pair`
    composes it with the blocks' add laws.

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0.
    steps : int
        Steps per epoch ``T``, >= 3.
    progress : bool, default True
        Progress bar while the law is built.
    envelope : bool, default False
        True: the envelope with the three blocks (Proposition 5), for several epochs;
        False: the truncated atoms (Lemma 4).

    Examples
    --------
    >>> round(float(AllocationK3Remove(5.0, 3, progress=False).epsilon(1e-3)), 2)
    0.93
    >>> from dpacct.mechanisms import GaussianMechanism  # the exact pair at T = 3
    >>> round(float(GaussianMechanism(5.0 / 3**0.5).epsilon(1e-3)), 2)
    0.87
    """

    def __init__(
        self, sigma: float, steps: int, *, progress: bool = True, envelope: bool = False
    ) -> None:
        super().__init__(sigma, steps, progress=progress, envelope=envelope)
        if self.steps < 3:
            raise ValueError(f"steps must be >= 3 for the direct k = 3 bound, got {steps}")

    def _atoms(self) -> tuple[np.ndarray, np.ndarray, float]:
        return k3_remove_atoms(self.sigma, self.steps, progress=self.progress)

    def _envelope_law(self, atoms):
        return k3_envelope_law(self.sigma, self.steps, atoms, self.progress)


def allocation_k3_pair(sigma: float, steps: int, epochs: int = 1, *, progress: bool = True):
    """The direct k = 3 route: per epoch, :class:`AllocationK3Remove` (remove direction)
    and the add directions of Proposition 1's three blocks, composed over ``epochs``.

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0.
    steps : int
        Steps per epoch ``T``, >= 3 (at ``T = 3`` the bound is of the exact pair, a
        Gaussian: no amplification).
    epochs : int, default 1
        Epochs, >= 1.
    progress : bool, default True
        Progress bars while the laws are built.

    Returns
    -------
    Mechanism
        A composition whose ``epsilon`` / ``delta`` are sound upper bounds.

    Examples
    --------
    >>> run = allocation_k3_pair(5.0, 3, progress=False)
    >>> round(float(run.epsilon(1e-3)), 2)
    0.93
    """
    from .compose import compose

    s = check_positive("sigma", sigma)
    t = check_count(steps, "steps")
    e = check_count(epochs, "epochs")
    parts: list[Mechanism] = [AllocationK3Remove(s, t, progress=progress, envelope=e > 1)]
    counts = [e]
    for size in sorted(set(_block_sizes(t))):
        parts.append(_AddDirectionOnly(AllocationEpochPair(s, size, progress=progress)))
        counts.append(_block_sizes(t).count(size) * e)
    return compose(parts, counts=counts)
