"""The (max, second, third, sum) law of one k-of-T allocation epoch's remove direction.

Proposition 10 of docs/theory/allocation_k_of_t.md ("The four-level law"): the law of
Propositions 7 and 9 (:mod:`.random_allocation_k_law`) keeps the two largest coordinates
``M_1 >= M_2``; where the third ``M_3`` is large too, its value ``V_2`` counts ``M_3``
inside the others' sum ``R'`` and Cauchy-Schwarz / Maclaurin there count ``(M_1 + M_2)
M_3^2 / 2`` that ``e_k`` does not have.  The four-level law splits the second region once
more, at a level ``theta_3 < theta`` of ``M_3``:

1. ``M_2 <= theta``: ``V_1(M_1, R)`` (Proposition 9's first region, unchanged);
2. ``M_2 > theta``, ``M_3 <= theta_3``: ``V_2(M_1, M_2, R')`` with the others i.i.d.
   ``Y | Y <= theta_3`` (one lattice law), the pair masses ``T (T-1) dF_i dF_j
   F(theta_3)^(T-2)`` (exact);
3. ``M_2 > theta``, ``M_3 > theta_3``: ``V_3(M_1, M_2, M_3, R'') = sum_i e_i(M_1, M_2, M_3)
   C(n'', k-i) (R'' / n'')^(k-i) / C(T, k)`` (``n'' = T - 3``; Maclaurin on the others),
   which is affine in each kept coordinate: on coarse cells of ``(M_1, M_2, M_3)`` each
   coordinate's law is replaced by its two-point chord (a mean-preserving spread;
   ``(V_3 - gamma)_+`` is convex in each coordinate and the coordinates are independent
   given the cells), so the cells (:func:`region_nodes`) can be far coarser than
   Proposition 6's, whose values are taken at the cells' upper ends.  With ``M_3`` in the
   cell ``(a, b]`` the others are split on ``E_0`` (all below ``a``: cut at ``a``,
   exactly) and its complement (one of them in ``(a, M_3)``, a union over the others:
   at most ``M_3``, the other ``T - 4`` below ``b``), so that the cells need not be fine
   for the others' cut.

Measured (delta 1e-6, one epoch, the remove law's own curve; docs/theory/
allocation_k_of_t.md, "four levels"): sigma 1, T 100: 2.1370 against Proposition 7's
2.1558 (pointwise, importance sampling: about 2.133).

Charges: ``M_2`` above ``b`` (pairs), four coordinates above ``b'''`` (the others of
region 3 are then below ``min(M_3, b''')``), ``M_1`` above the last cell.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..numerics import LazyBar
from ..validation import check_count, check_positive
from .random_allocation_k2_hull import _cells_upper, _err
from .random_allocation_k2_three import (
    _DLOG,
    _OPS,
    _coarsen,
    _cut_cells,
    _joint_weights,
    _settings,
    _sum_power,
    _term_law,
)
from .random_allocation_k_law import (
    _CHARGE2,
    _CHUNK,
    _DROP_Q,
    _MARGIN,
    _PER_LOG2,
    _add_counts,
    _dot,
    _least,
    _levels_and_cuts,
    region_one,
    settings,
    union_charge,
    value_coefficients,
)
from .random_allocation_pld import PROGRESS_DELAY

__all__: list[str] = []

#: the aim of the union on four coordinates above b''' (with the top's, the charges stay
#: below Proposition 7's 1.1e-9, so no epsilon at a delta near that floor is above main's)
_CHARGE4 = 1e-11
#: ``(least step, fraction of the sum's standard deviation)`` of the others' coarse
#: lattice, from T 50 and below (sigma 1, T 100, delta 1e-6: Proposition 9's (1, 0.25)
#: 2.13816, (0.25, 0.1) 2.13699 (12.6 -> 17.3 CPU s, loaded); the spread adds up to
#: step^2 / 4 to the variance, which the tail at delta 1e-6 reads; sigma 0.8, T 10:
#: 8.04744 in 16.9 s against 8.04868 in 8.8 s)
_LATTICE = {True: (0.25, 0.1), False: (1.0, 0.25)}
#: sub-intervals of a cell in the upper Riemann sum of the chord's upper share
_SUB = 256


def _log_f_up(sigma: float, logx: np.ndarray) -> np.ndarray:
    """Upper bounds on ``log F(e^logx)`` (``F`` the CDF of an unshifted coordinate)."""
    z = (logx + 0.5 / sigma**2) * sigma
    return special.log_ndtr(z) * (1.0 - _err(z))


def _pow_diff_up(log_fb: np.ndarray, c: np.ndarray, n: int) -> np.ndarray:
    """Upper bounds on ``F(b)^n - F(x)^n`` from upper bounds ``log_fb`` on ``log F(b)`` and
    ``c`` on ``F(b) - F(x)`` (increasing in both; no cancellation)."""
    fb = np.exp(log_fb)
    c = np.minimum(c, fb)
    with np.errstate(divide="ignore"):
        out = fb**n * -np.expm1(n * np.log1p(-c / fb))
    return out * (1.0 + _OPS)


def chord_weights(sigma: float, nodes: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)``: for each cell ``(e^{nodes[c-1]}, e^{nodes[c]}]`` (``c >= 1``; entry
    0 is 0) upper bounds on the masses that the chord puts at its lower and upper end, of
    the law with CDF ``G = F^n`` (``n = 1``: one coordinate; ``n = T - 2``: the largest of
    ``T - 2``): ``mu = G(b) - G(a)``, the upper share ``u = (b - a)^{-1} int_a^b (G(b) -
    G(x)) dx`` (so that ``(mu - u) phi(a) + u phi(b) >= int phi dG`` over the cell for
    every convex ``phi``), ``u`` by the upper Riemann sum on :data:`_SUB` sub-intervals
    (``G(b) - G(x)`` decreases), capped at ``mu``; the lower mass is ``mu - u`` with
    ``mu``'s upper bound (``mu phi(a) + u (phi(b) - phi(a))`` increases in both for
    ``phi`` increasing).

    Examples
    --------
    >>> lo, up = chord_weights(1.0, np.log(np.array([1.0, 2.0, 4.0])), 1)
    >>> bool(lo[0] == up[0] == 0.0 and (lo[1:] > 0).all() and (up[1:] > 0).all())
    True
    """
    a, b = np.exp(nodes[:-1]), np.exp(nodes[1:])
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    frac = np.arange(_SUB) / _SUB
    x = a[:, None] + (b - a)[:, None] * frac[None, :]  # left ends of the sub-intervals
    zx = (np.log(x) - mu0) / s0
    zb = (nodes[1:] - mu0) / s0
    za = (nodes[:-1] - mu0) / s0
    cx = _cells_upper(np.minimum(zx, zb[:, None]), np.broadcast_to(zb[:, None], zx.shape))
    ca = _cells_upper(za, zb)
    if n == 1:
        mu, gx = ca * (1.0 + _OPS), cx * (1.0 + _OPS)
    else:
        lfb = _log_f_up(sigma, nodes[1:])
        mu = _pow_diff_up(lfb, ca, n)
        gx = _pow_diff_up(lfb[:, None], cx, n)
    u = np.minimum(gx.mean(axis=1) * (1.0 + 1e-12), mu)
    lower = np.concatenate(([0.0], mu - u))
    upper = np.concatenate(([0.0], u))
    return lower, upper


def pair_chord_weights(sigma: float, nodes: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)`` as :func:`chord_weights`, for ``M_3`` in the cell ``(a, b]`` with
    one of the ``T - 3`` others in ``(a, M_3)`` (Proposition 10, (3), the event ``E_1``):
    the law of density ``g(x) = (T-2) (T-3) f(x) F(x)^(T-4) (F(x) - F(a))`` on the cell
    (a union over the others: at least the density of ``M_3`` times the probability
    that some other is above ``a``).  ``G(b) - G(x) = int_x^b g`` is bounded on each
    sub-interval by ``g``'s bound at its upper end times its ``F``-mass (``g / f``
    increases), summed from the top.

    Examples
    --------
    >>> lo, up = pair_chord_weights(1.0, np.log(np.array([1.0, 2.0, 4.0])), 10)
    >>> bool((lo[1:] >= 0).all() and (up[1:] > 0).all())
    True
    """
    a, b = np.exp(nodes[:-1]), np.exp(nodes[1:])
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    frac = np.arange(_SUB + 1) / _SUB
    x = a[:, None] + (b - a)[:, None] * frac[None, :]
    x[:, -1] = b
    zx = (np.log(x) - mu0) / s0
    za = (nodes[:-1] - mu0) / s0
    step = _cells_upper(zx[:, :-1], zx[:, 1:])  # F-mass of each sub-interval
    above_a = _cells_upper(np.broadcast_to(za[:, None], zx[:, 1:].shape), zx[:, 1:])
    log_f = special.log_ndtr(zx[:, 1:]) * (1.0 - _err(zx[:, 1:]))
    g = (t - 2.0) * (t - 3.0) * np.exp((t - 4) * log_f) * above_a * step * (1.0 + _OPS)
    tail = np.cumsum(g[:, ::-1], axis=1)[:, ::-1]  # G(b) - G(x_i), i < SUB
    mu = tail[:, 0] * (1.0 + 1e-12)
    u = np.minimum(tail.mean(axis=1) * (1.0 + 1e-12), mu)
    return np.concatenate(([0.0], mu - u)), np.concatenate(([0.0], u))


def _node_masses(sigma, t, nodes, q_lo, q_hi):
    """Yield ``(s, lo, up, dist)`` for the ``M_3`` cells ``s = q_hi, ..., 1``, then ``(0,
    D, None, None)``: ``lo[n1, n2]`` (``up``) upper bounds on the Q-mass that the chords
    put at the nodes ``(n1, n2)`` of ``(M_1, M_2)`` and the lower (upper) node of
    ``M_3``'s cell ``s`` when ``M_3`` shares ``M_2``'s cell (docs: Proposition 10, (3)):
    ``p > q = s`` at most ``T (T-1) (T-2) / 2 dF_p dF_q^2 F(b_q)^(T-3)``, ``p = q = s`` at
    most ``C(T, 3) dF_q^3 F(b_q)^(T-3)`` (the values are symmetric in the three
    coordinates); ``dist[n1, n2]`` the chords' masses of ``(M_1, M_2)`` in cells ``p >= q
    > s`` (``p = q`` halved), ``q_lo <= q <= q_hi``, to be multiplied by ``T (T-1)`` and
    ``M_3``'s own masses in cell ``s``; ``D`` the same over ``q >= q_lo``, for the second
    region."""
    nn = nodes.size
    fl, fu = chord_weights(sigma, nodes, 1)
    a = np.zeros((nn, nn))  # a[c]: the chord of cell c over the nodes (one coordinate)
    idx = np.arange(1, nn)
    a[idx, idx - 1], a[idx, idx] = fl[1:], fu[1:]
    above = np.zeros((nn, nn))  # above[q] = sum over p > q of a[p]
    above[:-1] = np.cumsum(a[::-1], axis=0)[::-1][1:]
    d = np.zeros((nn, nn))  # over q' > q (so far): (p > q') + (p = q') / 2, as (n1, n2)
    tt = t * (t - 1.0)
    zero = np.zeros((nn, nn))
    for q in range(q_hi, 0, -1):
        lo = up = zero
        dist = d * (1.0 + _OPS)
        if q >= q_lo:  # M_3 in M_2's cell q: p > q = s and p = q = s
            pq = tt * (t - 2) / 2.0 * np.multiply.outer(above[q], a[q])
            pq += tt * (t - 2) / 6.0 * np.multiply.outer(a[q], a[q])
            lo, up = pq * fl[q] * (1.0 + _OPS), pq * fu[q] * (1.0 + _OPS)
            d = d + np.multiply.outer(above[q], a[q]) + 0.5 * np.multiply.outer(a[q], a[q])
        yield q, lo, up, dist
    yield 0, d * (1.0 + _OPS), None, None


def _bin_rows(hist, e, p, wrow, pc, off, drop: float) -> float:
    """Add ``wrow_i pc_r`` at the values ``sum_j e_ij p_jr >= 0`` (``e``, ``p`` >= 0: the
    symmetric functions of a row's kept coordinates and the lattice's powers times the
    coefficients) rounded up onto the log grid, as :func:`.random_allocation_k_law._bin_affine`
    does for ``b_i a_r + c_r`` (the same index, margin and chunks; a value of a few
    non-negative products and sums errs by a few ulps, inside the margin).  Elements of
    mass ``wrow_i pc_r < drop`` are charged their ``E[value]`` in full (returned): each row
    takes a prefix of the entries sorted by ``pc``, the rest is charged from suffix sums."""
    nb = hist.shape[-1]
    if not (pc.size and wrow.size):
        return 0.0
    order = np.argsort(-pc, kind="stable")
    pc, p = pc[order], p[:, order]
    suffix = np.zeros((p.shape[0], pc.size + 1))
    suffix[:, :-1] = np.cumsum((pc * p)[:, ::-1], axis=1)[:, ::-1]
    with np.errstate(divide="ignore"):
        need = np.searchsorted(-pc, -(drop / wrow), side="right")
    rows_order = np.argsort(-need, kind="stable")
    e, wrow, need = e[rows_order], wrow[rows_order], need[rows_order]
    size = max(_CHUNK, pc.size)
    v, wt, ix = np.empty(size), np.empty(size), np.empty(size, dtype=np.int64)
    tmp = np.empty(size)
    shift = off + 1.0 + _MARGIN
    # the same operations on the same operands as one product per element (bit-equal):
    # a first column equal in every row (e_0) is multiplied once per entry, and where a
    # lower bound on every value (all terms >= 0, rounded down far beyond the products'
    # ulps) is above the grid's least, no value is clamped there and the clamp is skipped
    p0 = e[0, 0] * p[0] if bool((e[:, 0] == e[0, 0]).all()) else None
    least = sum(float(e[:, j].min()) * float(p[j].min()) for j in range(p.shape[0]))
    with np.errstate(divide="ignore"):
        clamp = not math.log2(least * (1.0 - 1e-9)) * _PER_LOG2 > 1.0 - shift if least > 0 \
            else True
    charge = 0.0
    s = 0
    with np.errstate(divide="ignore"):
        while s < wrow.size:
            width = int(need[s])
            rows = wrow.size - s if width == 0 else max(1, _CHUNK // width)
            ee, ww = e[s : s + rows], wrow[s : s + rows]
            s += ee.shape[0]
            charge += _dot(ww, (ee * suffix[:, width]).sum(axis=1))
            if width == 0:
                continue
            n = ee.shape[0] * width
            vv = v[:n].reshape(ee.shape[0], width)
            tv = tmp[:n].reshape(ee.shape[0], width)
            if p0 is None:
                np.multiply(ee[:, :1], p[0, :width], out=vv)
            else:
                np.copyto(vv, p0[:width])
            for j in range(1, p.shape[0]):
                np.multiply(ee[:, j : j + 1], p[j, :width], out=tv)
                vv += tv
            np.log2(vv, out=vv)  # -inf at 0: index 0 below
            vv *= _PER_LOG2
            if clamp:
                np.maximum(vv, -shift, out=vv)
            ixn = ix[:n]
            np.add(v[:n], shift, out=ixn, casting="unsafe")  # >= 0: truncation is floor
            np.multiply(ww[:, None], pc[:width], out=wt[:n].reshape(ee.shape[0], width))
            lo, hi = int(ixn.min()), int(ixn.max())
            if hi >= nb:
                raise ArithmeticError("a value of the four-level law fell beyond the log grid")
            # (a 2-row hist: two laws sharing these values, each row added the same)
            _add_counts(hist, ixn, wt[:n], lo, hi)
    return charge * (1.0 + _OPS)


def _bin_nodes(hist, ws, x, x3, coef, k, rv, lw, off) -> float:
    """The node pairs ``(n1, n2)`` of ``ws`` (masses) with ``M_3`` at ``x3`` (0: the second
    region's ``V_2``) against the lattice ``(rv, lw)``: ``V = sum_i coef_i e_i(x) r^(k-i)``
    binned by :func:`_bin_rows`."""
    n1, n2 = np.nonzero(ws)
    if not n1.size:
        return 0.0
    x1, x2 = x[n1], x[n2]
    e = [np.ones(n1.size), x1 + x2 + x3, x1 * x2 + (x1 + x2) * x3, x1 * x2 * x3]
    rows = np.stack(e[: len(coef)], axis=1)
    p = np.stack([coef[i] * rv ** (k - i) if k >= i else np.zeros_like(rv)
                  for i in range(len(coef))])
    return _bin_rows(hist, rows, p, ws[n1, n2], lw, off, _DROP_Q)


def region_nodes(sigma: float, theta: float, lt3: float, top: float, dl3: float,
                 eta: float) -> tuple[np.ndarray, int]:
    """``(nodes, i)``: the log nodes of regions 2 and 3, from about ``lt3`` to at least
    ``top``, ``nodes[i] = theta``; a cell at ``l`` is at most ``dl3`` wide and at most
    ``eta / (e^l phi(z_l) / sigma)`` (its share of ``E[Y]``, ``eta`` times its width at
    most): the others of an ``M_3`` cell are cut at its upper end, and the law above
    ``Y | Y <= e^a`` they gain is about ``T - 3`` times that share.

    Examples
    --------
    >>> n, i = region_nodes(1.0, 2.0, 1.5, 8.5, 0.05, 1e-3)
    >>> bool(n[i] == 2.0 and n[0] <= 1.5 and n[-1] >= 8.5 and (np.diff(n) <= 0.05 + 1e-12).all())
    True
    """
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2

    def width(lv: float) -> float:
        z = (lv - mu0) / s0
        dens = math.exp(lv - 0.5 * z * z) / math.sqrt(2.0 * math.pi) / s0
        return min(dl3, eta / dens)

    down, lv = [], theta
    while lv > lt3:
        lv -= width(lv)
        down.append(lv)
    up, lv = [theta], theta
    while lv < top:
        lv += width(lv)
        up.append(lv)
    return np.array(down[::-1] + up), len(down)


def _lattice(sigma, cut, h, n, folds, step, sd_frac):
    """The others' ``folds``-fold lattice law cut at ``e^cut``, moved onto the coarse
    lattice (least step ``step``, at most ``sd_frac`` of its standard deviation)."""
    lw = _sum_power(_term_law(sigma, math.exp(cut), h, n), folds)
    rv = np.arange(n) * h
    sd = math.sqrt(max(_dot(lw, rv**2) - _dot(lw, rv) ** 2, 0.0))
    return _coarsen(lw, h, max(step, h, sd_frac * sd))


def remove_atoms4(
    sigma: float, t: int, k: int, *, progress: bool = False, theta_sd: float = 2.2,
    theta3_sd: float = 2.0, dl3: float = 0.05, step: float | None = None,
    sd_frac: float | None = None,
    eta: float = 2e-3, top_sd: float = 7.0, drop_w: float = 1e-22, drop_r: float = 1e-16,
) -> tuple[np.ndarray, np.ndarray, float]:
    """``(values, q, charge)``: for every ``gamma >= 0``, ``H_gamma(P_k || Q) <= sum_i q_i
    (values_i - gamma)_+ + charge`` (Proposition 10 of docs/theory/allocation_k_of_t.md;
    module docstring).  The last law built is kept.

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0.
    t : int
        Steps per epoch ``T``, >= 5.
    k : int
        Steps per record per epoch, 3 <= k <= T.
    progress : bool, default False
        Show a ``tqdm`` bar after :data:`PROGRESS_DELAY` seconds.
    theta_sd, theta3_sd : float
        The splits of ``M_2`` and ``M_3``, in standard deviations of an unshifted ``log Y``
        above its mean (``theta3_sd < theta_sd``).
    dl3, eta : float
        The nodes of regions 2 and 3 (:func:`region_nodes`).
    step, sd_frac : float, optional
        The coarse lattice of the others in regions 2 and 3: its least step, and at most
        ``sd_frac`` of their sum's standard deviation (default :data:`_LATTICE`).
    top_sd : float
        ``M_1`` above a shifted coordinate's log-mean plus ``top_sd`` standard deviations
        is charged (at most the region-1 cells' top).
    drop_w, drop_r : float
        Region 1's cells and lattice entries below these masses are charged ``E[V_1]`` in
        full (Proposition 9).

    Returns
    -------
    tuple
        Values (sorted, rounded up onto a log grid), their Q-masses and the charge.

    Raises
    ------
    ValueError
        If ``sigma <= 0``, ``k < 3``, ``t < max(k, 5)`` or ``theta3_sd >= theta_sd``.

    Examples
    --------
    >>> v, q, c = remove_atoms4(4.0, 6, 3)
    >>> bool(float(q @ v) + c >= 1.0)
    True
    """
    sigma = check_positive("sigma", sigma)
    t = check_count(t, "steps")
    k = check_count(k, "k")
    if k < 3:
        raise ValueError(f"k must be >= 3 for the four-level law, got k={k}")
    if t < max(k, 5):
        raise ValueError(f"steps must be >= max(k, 5) for the four-level law, got steps={t}")
    if not theta3_sd < theta_sd:
        raise ValueError(f"theta3_sd must be below theta_sd, got {theta3_sd} >= {theta_sd}")
    d_step, d_frac = _LATTICE[t >= 50]
    step = d_step if step is None else step
    sd_frac = d_frac if sd_frac is None else sd_frac
    key = (sigma, t, k, theta_sd, theta3_sd, dl3, eta, step, sd_frac, top_sd, drop_w, drop_r)
    if key not in _ATOMS4:
        _ATOMS4.clear()
        _ATOMS4[key] = _build4(sigma, t, k, progress, theta_sd, theta3_sd, dl3, eta, step,
                               sd_frac, top_sd, drop_w, drop_r)
    return _ATOMS4[key]


#: the last law built, by its arguments
_ATOMS4: dict[tuple, tuple[np.ndarray, np.ndarray, float]] = {}


def _maclaurin_lattice(sigma, cut, h, n, folds, step, sd_frac):
    """The default lattice of :func:`_build4`: :func:`_lattice` (the others' sum)."""
    return _lattice(sigma, cut, h, n, folds, step, sd_frac)


def _maclaurin_bin(hist, ws, x, x3, coef, k, lat, shift, shift_sq, off) -> float:
    """The default binning of :func:`_build4`: :func:`_bin_nodes` against the lattice
    ``lat = (rv, lw)`` shifted by ``shift`` (``shift_sq``, the shifted coordinate's square
    credited, is for laws that keep the others' sum of squares)."""
    rv, lw = lat
    return _bin_nodes(hist, ws, x, x3, coef, k, rv + shift if shift else rv, lw, off)


def _first_regions(first, tail, hist, bar, sigma, t, k, cut_list, h1, n1, m, w, c1, off,
                   drop_w, drop_r):
    """``(hist, tail)`` after the first region (``M_2 <= theta``): Proposition 10's
    (:func:`region_one`) into ``hist``; with a ``first`` hook (see :func:`_build4`), the
    hook's region into row 0 of a two-row histogram and Proposition 10's into row 1, the
    tails likewise."""
    if first is None:
        return hist, region_one(tail, hist, bar, sigma, t, k, cut_list, h1, n1, m, w, c1,
                                off, drop_w, drop_r)
    hist = np.zeros((2, hist.size))
    old = region_one(tail, hist[1], bar, sigma, t, k, cut_list, h1, n1, m, w, c1, off,
                     drop_w, drop_r)
    return hist, np.array([first(tail, hist[0], cut_list, m, w, off, drop_w, drop_r), old])


def _build4(sigma, t, k, progress, theta_sd, theta3_sd, dl3, eta, step, sd_frac, top_sd,
            drop_w, drop_r, lattice=_maclaurin_lattice, binner=_maclaurin_bin, first=None):
    """Proposition 10's law; ``lattice(sigma, cut, h, size, folds, step, sd_frac)`` builds
    the others' lattice law (cut at ``e^cut``, ``folds`` of them) and ``binner(hist, ws,
    x, x3, coef, k, lat, shift, shift_sq, off)`` bins the node pairs ``ws`` against it
    (one of the others at ``shift``, its square credited as ``shift_sq``; ``coef`` the
    Maclaurin coefficients of the level); the defaults are Proposition 10's (Maclaurin
    on the others' sum), and a law keeping more of the others (their sum of squares,
    :mod:`.random_allocation_k_law_sq3`) passes its own.  ``first(tail, hist, cut_list, m,
    w, off, drop_w, drop_r)``, if given, bins a second first region (``M_2 <= theta``) into
    its own row: the law is then built twice in one pass, ``(first's, Proposition 10's
    first region)``, regions 2-3 and their charges added to both rows in the same order
    (so the second is bit-equal to the law built without ``first``)."""
    st = settings(sigma, t, k)
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    h1, dl, scale = st["h1"], st["dl"], st["cuts"]
    h = _settings(sigma, t)[3]
    lb2, tail = _least(sigma, t, k, 2, _CHARGE2)  # M_2 above b
    lb4, ch4 = _least(sigma, t, k, 4, _CHARGE4)  # four above b'''
    tail += ch4
    levels, cuts = _levels_and_cuts(sigma, t, dl, scale, 0.5 / sigma**2 + 8.0 / sigma)
    # M_1 above e^top (a shifted coordinate top_sd standard deviations up; <= the last
    # cell of region 1, so this also covers M_1 above it)
    top = min(float(levels[-1]), 0.5 / sigma**2 + top_sd / sigma)
    tail += union_charge(sigma, t, k, 1, top)
    jt = min(max(int(np.searchsorted(levels, mu0 + theta_sd * s0)), 1), levels.size - 2)
    theta = float(levels[jt])
    # regions 2, 3: nodes from theta_3 (about theta3_sd) up, theta one of them
    nodes, below = region_nodes(sigma, theta, mu0 + theta3_sd * s0, top, dl3,
                                eta)
    lt3 = float(nodes[0])
    q_lo = below + 1
    q_hi = min(int(np.searchsorted(nodes, lb2)), nodes.size - 1)  # the cell holding b
    x = np.exp(nodes) * (1.0 + 1e-15)
    m = np.exp(levels) * (1.0 + 1e-15)
    w = _joint_weights(sigma, t, levels, jt)[0]
    n1 = 1 << math.ceil(math.log2((t - 1) * math.exp(theta) / h1 + t + 2))
    n2 = 1 << math.ceil(math.log2((t - 2) * math.exp(lt3) / h + t + 2))
    nb4 = 1 << math.ceil(math.log2((t - 3) * math.exp(lb4) / h + t + 2))
    big = 2.0 * (max(n1 * h1, n2 * h, nb4 * h) + max(step, sd_frac * nb4 * h)
                 + max(m[-1], x[-1]))
    off = math.ceil(40.0 / _DLOG)
    hist = np.zeros(math.ceil((k * math.log(big) + 41.0) / _DLOG))
    c1, c2, c3 = (value_coefficients(t, k, lev) for lev in (1, 2, 3))
    cut_list = list(_cut_cells(levels, cuts, theta))
    with LazyBar(
        total=len(cut_list) + 1 + nodes.size, desc=f"random-allocation k={k} "
        f"four-level law (T={t})", delay=PROGRESS_DELAY, progress=progress,
    ) as bar:
        hist, tail = _first_regions(first, tail, hist, bar, sigma, t, k, cut_list, h1, n1, m,
                                    w, c1, off, drop_w, drop_r)
        fl, fu = chord_weights(sigma, nodes, 1)
        e1l, e1u = pair_chord_weights(sigma, nodes, t)
        log_f0 = (t - 3) * _log_f_up(sigma, nodes)  # F(a)^(T-3) at a cell's lower node
        log_f1 = (t - 4) * _log_f_up(sigma, nodes)  # F(b)^(T-4) at its upper node
        zn = (nodes + 0.5 / sigma**2) * sigma
        cell_f = np.concatenate(([0.0], _cells_upper(zn[:-1], zn[1:])))  # F(b) - F(a)
        tt = t * (t - 1.0)
        for s, w_lo, w_up, dist in _node_masses(sigma, t, nodes, q_lo, q_hi):
            bar.update(1)
            if w_up is None:
                d2 = w_lo
                break
            # region 3, M_3 in cell s = (a, b] (docs: Proposition 10, (5)): E_0, the others
            # below a: the cells' masses times F(a)^(T-3) (M_2 in a cell above: M_3 of
            # density (T-2) f F(a)^(T-3)); E_1, one of them in (a, M_3): it is at most
            # M_3 (at most b if M_2 shares the cell), the other T - 4 below b
            lb, la = min(float(nodes[s]), lb4), min(float(nodes[s - 1]), lb4)
            f0 = math.exp(float(log_f0[s - 1])) * (1.0 + _OPS)
            g0 = (t - 2.0) * f0
            # each part: the cut, the folds, the shifted other at M_3's lower / upper
            # node and its square credited (E_1, s < q: a^2 at both, so that the value
            # stays convex in x_3; the same cell: b_q, its own square), the masses
            parts = [(la, t - 3, 0.0, 0.0, 0.0, f0 * w_lo + tt * g0 * fl[s] * dist,
                      f0 * w_up + tt * g0 * fu[s] * dist)]
            if float(nodes[s - 1]) < lb4:  # else E_1 has four coordinates above b'''
                f1 = (t - 3) * math.exp(float(log_f1[s])) * float(cell_f[s]) * (1.0 + _OPS)
                xa, xb = float(x[s - 1]), float(x[s])
                xa2 = math.exp(2.0 * float(nodes[s - 1])) * (1.0 - 1e-15)  # <= a^2
                parts.append((lb, t - 4, xa, xb, xa2, tt * e1l[s] * dist, tt * e1u[s] * dist))
                parts.append((lb, t - 4, xb, xb, xb * xb * (1.0 - 1e-15), f1 * w_lo, f1 * w_up))
            for cut, folds, sh_lo, sh_up, sh_sq, ws_lo, ws_up in parts:
                if not (ws_lo.any() or ws_up.any()):
                    continue
                lat = lattice(sigma, cut, h, nb4, folds, step, sd_frac)
                for n3, ws, sh in ((s - 1, ws_lo, sh_lo), (s, ws_up, sh_up)):
                    tail += binner(hist, ws, x, float(x[n3]), c3, k, lat, sh, sh_sq, off)
        # region 2: M_3 <= theta_3: the others i.i.d. Y | Y <= theta_3, and the chords'
        # masses times T (T-1) F(theta_3)^(T-2)
        g3 = math.exp((t - 2) * float(_log_f_up(sigma, np.array([lt3]))[0]))
        d2 *= t * (t - 1.0) * g3 * (1.0 + _OPS)
        lat = lattice(sigma, lt3, h, n2, t - 2, step, sd_frac)
        tail += binner(hist, d2, x, 0.0, c2, k, lat, 0.0, 0.0, off)
    hist *= 1.0 + _OPS
    if first is not None:
        return tuple(_atoms_of(hist[i], float(tail[i]), off) for i in range(2))
    return _atoms_of(hist, float(tail), off)


def _atoms_of(hist, tail, off):
    """``(values, q, charge)`` of a histogram on the log grid (index ``off`` at 1)."""
    nz = np.flatnonzero(hist > 0)
    return np.exp((nz - off) * _DLOG), hist[nz], tail * (1.0 + _OPS)
