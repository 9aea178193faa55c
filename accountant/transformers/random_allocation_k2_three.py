"""The k = 2 remove direction from the two largest coordinates: the (max, second, sum) law.

Proposition 3 (:mod:`.random_allocation_k2`) bounds the likelihood ratio ``Lambda =
e_2(Y) / C(T, 2)`` of one 2-of-T epoch by ``L'(M, R)`` from the largest coordinate ``M``
and the sum ``R`` of the others, with Cauchy-Schwarz on the others' squares.  That step
is loose when the second largest coordinate ``M_2`` is itself large (both of the
record's steps in their tails: ``L'`` counts ``M_2^2`` that ``e_2`` does not have).
Proposition 6 (docs/theory/allocation_k_of_t.md, "The (max, second, sum) law") splits
the space at a level ``theta`` of ``M_2``:

1. **M_2 <= theta**: Proposition 3 with its second cut ``b = theta`` (the others of
   ``M`` are ``<= min(M, theta)`` there), no pair charge.
2. **M_2 > theta**: with ``R'`` the sum of the ``T - 2`` others, Cauchy-Schwarz on
   *their* squares gives ``Lambda <= L''(M_1, M_2, R') = (M_1 M_2 + (M_1 + M_2) R' +
   kappa R'^2) / C(T, 2)``, ``kappa = (T-3) / (2 (T-2))``, increasing in each argument and
   convex in ``R'``.  ``Q(M_1 in I_i, M_2 in I_j) = T dF_i dG_j`` for a cell ``I_i``
   above ``I_j`` (``G = F^(T-1)``), at most ``C(T, 2) dF_j^2 F(a_j)^(T-2)`` on the
   diagonal; given both, the others are i.i.d. ``Y | Y < M_2``, below ``Y | Y <= c``
   for a cut ``c >= min(a_j, b')`` off the event that three coordinates exceed ``b'``
   (charged by a union over triples), and ``M_2`` above ``b`` is charged by the pair
   union of Proposition 3.

The others' lattice laws, the cell bounds and the outward rounding are Proposition 3's
(:mod:`.random_allocation_k2`), and live here (``_settings``, ``_max_cell_weights``,
``_term_law``, ``_sum_power``, ``_second_cut``, ``_bin_cells``, ``_cut_cells``; "module,
n." in their docstrings is that module's list), imported by it: no import cycle.  Built
where Proposition 3's law is loose (:func:`~.random_allocation_k2.uses_three`): sigma 0.6,
T 100, delta 1e-6: 5.5963 against 5.6854 (docs/theory/allocation_k_of_t.md, measured
there).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..numerics import LazyBar
from .random_allocation_k2_hull import _cells_lower, _cells_upper, _err
from .random_allocation_pld import PROGRESS_DELAY
from .random_allocation_sum_lower import _power

__all__: list[str] = []

#: relative margin for the float operations after the special functions (each a few
#: ulps; at most a few hundred of them compound on any entry)
_OPS = 1e-12
#: the union bound on P_2(two coordinates above b) is aimed at this
_CHARGE = 1e-9
#: log-grid step of the atoms' values (rounded up onto it)
_DLOG = 1e-4
#: lattice entries and M cells below this mass are charged in full
_DROP = 1e-25
#: the smallest T and sigma the direct bound is built for (the route of
#: :class:`~dpacct.accountant.RandomAllocationMechanism` needs T > k = 2)
K2_MIN_STEPS = 2
K2_MIN_SIGMA = 0.45
#: the largest T the route of :class:`~dpacct.accountant.RandomAllocationMechanism` tries
K2_MAX_STEPS = 300


def _max_cell_weights(sigma: float, t: int, levels: np.ndarray) -> np.ndarray:
    """Upper bounds on ``Q(M in (e^{l_{j-1}}, e^{l_j}])`` (the first cell: ``M <= e^{l_0}``).

    ``F(m)^T - F(m')^T = F^T (1 - (1 - c / F)^T)`` with ``c = F(m) - F(m')`` the one-term
    cell mass (no cancellation); increasing in ``F`` and in ``c``, so evaluated at upper
    bounds of both and rounded up."""
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    z = (levels - mu0) / s0
    log_f = special.log_ndtr(z) * (1.0 - _err(z))  # log F <= 0, moved towards 0
    f_up = np.exp(log_f)
    c = np.empty(levels.size)
    c[0] = f_up[0]
    c[1:] = _cells_upper(z[:-1], z[1:])
    c = np.minimum(c, f_up)
    with np.errstate(divide="ignore"):
        w = f_up**t * -np.expm1(t * np.log1p(-c / f_up))
    w[0] = f_up[0] ** t
    return w * (1.0 + _OPS)


def _term_law(sigma: float, cut: float, h: float, n: int) -> np.ndarray:
    """Entrywise upper bound of a law on ``{0, h, ..., (n-1) h}`` above ``Y | Y <= cut`` in
    the increasing convex order: each cell ``[a, a + h]``'s mass goes to its two ends
    with the upper node's share ``u = (E[Y; cell] - a P(cell)) / h`` bounded above (the
    chord of an increasing convex function; all its mass at the upper node when the
    bound on ``u`` exceeds the bound on the mass); the last cell ends at ``cut``."""
    lower, upper = _term_shares(sigma, cut, h, n)
    top = lower.size
    out = np.zeros(n)
    out[:top] += lower
    out[1 : top + 1] += upper
    return out * (1.0 + _OPS)


def _term_shares(sigma: float, cut: float, h: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)``: :func:`_term_law`'s two shares of each cell ``c = [c h, (c + 1)
    h]`` (the last ending at ``cut``), ``lower[c]`` going to ``c h`` and ``upper[c]`` to
    ``(c + 1) h`` (upper bounds, before :func:`_term_law`'s final ``1 + _OPS``); kept apart
    for laws that credit each atom with something of its cell (the others' sum of
    squares: the cell's lower end's, :mod:`.random_allocation_k_law_sq3`)."""
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    top = min(math.ceil(cut / h), n - 1)
    edges = np.arange(top + 1) * h
    edges[-1] = cut
    with np.errstate(divide="ignore"):
        z = (np.log(edges) - mu0) / s0
    zc = (math.log(cut) - mu0) / s0
    norm_lo = float(special.ndtr(zc)) * (1.0 - float(_err(np.array([zc]))[0]) - 1e-15)
    mass_up = _cells_upper(z[:-1], z[1:]) / norm_lo
    mass_lo = _cells_lower(z[:-1], z[1:]) / (norm_lo * (1.0 + 1e-13))
    # E[Y; Y in cell] = Phi(z_hi - s0) - Phi(z_lo - s0)  (E Y = 1)
    mom_up = _cells_upper(z[:-1] - s0, z[1:] - s0) / norm_lo
    width = np.diff(edges)
    a = edges[:-1]
    u = (mom_up - a * mass_lo) / width
    u = u + 1e-15 * (mom_up + a * mass_lo) / width  # the subtraction's own round-off
    u = np.clip(u, 0.0, mass_up)
    return mass_up - u, u


def _sum_power(law: np.ndarray, m: int) -> np.ndarray:
    """Entrywise upper bound on the ``m``-fold convolution power of ``law`` (the
    engine's rigorous kernel, via the sum statistic's ``_power``); entries beyond the
    exact support ``m (top - 1)`` are 0 and set so (the kernel's absolute error bounds
    there would otherwise be weighted by ``L' ~ r^2``)."""
    top = int(np.flatnonzero(law)[-1]) + 1
    with np.errstate(all="ignore"):
        out = _power(law[:top], m, law.size, True)
    out = np.concatenate((out, np.zeros(law.size - out.size)))
    out[m * (top - 1) + 1 :] = 0.0
    return out


def _pair_charge(sigma: float, t: int, log_b: float) -> float:
    """Upper bound on ``P_2(two coordinates above e^{log_b})``: a union over pairs (both
    in the record's 2-subset, one, none)."""
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    zs = -(log_b - mu0 - 1.0 / sigma**2) / s0
    zu = -(log_b - mu0) / s0
    ps = float(special.ndtr(zs)) * (1.0 + float(_err(np.array([zs]))[0]))
    pu = float(special.ndtr(zu)) * (1.0 + float(_err(np.array([zu]))[0]))
    return (ps * ps + 2 * (t - 2) * ps * pu + (t - 2) * (t - 3) / 2 * pu * pu) * (1 + _OPS)


def _least_cut(fn, sigma: float, t: int, charge: float) -> tuple[float, float]:
    """``(log b, charge)``: the least ``b`` (bisection) whose charge ``fn(sigma, t,
    log b)`` (decreasing in ``b``: :func:`_pair_charge`, :func:`_triple_charge`) is
    ``<= charge``, and that charge."""
    mu0, s0 = -0.5 / sigma**2, 1.0 / sigma
    lo, hi = mu0, mu0 + 40.0 * s0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if fn(sigma, t, mid) > charge else (lo, mid)
    return hi, fn(sigma, t, hi)


def _second_cut(sigma: float, t: int, charge: float) -> tuple[float, float]:
    """``(log b, charge)``: the least ``b`` whose :func:`_pair_charge` is ``<= charge``."""
    return _least_cut(_pair_charge, sigma, t, charge)


def _settings(sigma: float, t: int) -> tuple[float, float, float, float, float]:
    """``(dl, coarse, fine, h, charge)``: the M cells' log step, the log step of the cuts
    the others' law is rebuilt at (``fine`` above the median of M), the lattice step and
    the pair charge (measured: docs/theory/allocation_k_of_t.md)."""
    var = math.expm1(1.0 / sigma**2)
    # below 0.65 a coarse lattice and a larger pair charge (sigma 0.6, T 100, delta 1e-6:
    # 5.6961 in 4.9 CPU s against 5.7146 in 39 s with the settings below; the charge
    # 1e-8 leaves delta <= 1e-8 to the blocks); cuts every 0.1 above the median of M
    # (session 20: 5.6854 against 5.6960 at 0.25, +13 % CPU; T 5: 11.3326 against
    # 11.3547; sigma 0.5, T 10: 13.2681 against 13.2918)
    if sigma < 0.65:
        return 2e-3, 0.25, 0.1, 4.0 * max(1.0, var / 58.6), 1e-8
    if t < 50:
        return 1e-3, 0.05, 0.05, 0.15 * max(1.0, var / 2.0), _CHARGE
    # sigma 1, T 100, delta 1e-6: cuts 0.1 above the median of M give 1.53204 (0.97 %
    # above the lower end) in 8.4 CPU s, against 1.53330 (1.05 %) in 4.9 s at 0.25
    # everywhere and 1.53204 in 10.3 s at 0.1 everywhere (issue 39 (b))
    return 1e-3, 0.25, 0.1, 0.15 * max(1.0, var / 2.0), _CHARGE


def _bin_cells(
    tail: float, hist: np.ndarray, law: np.ndarray, r: np.ndarray, m: np.ndarray,
    w: np.ndarray, sel: np.ndarray, t: int, off: int, *, drop: float = _DROP,
    ops: float = _OPS, dlog: float = _DLOG,
) -> float:
    """The M cells ``sel`` (upper ends ``m``, Q-masses ``w``) against the others' lattice
    law ``law`` on the values ``r``: ``L'(m_j, r)`` binned into ``hist`` (log grid of
    step ``dlog``, index ``off`` at 1, rounded up by ``1 + ops``), and ``tail`` plus the
    charge for the M cells and lattice entries of mass below ``drop`` (module, 2.-3.)."""
    tt = t * (t - 1)
    ratio = (t - 2) / (t - 1)
    er, er2 = float(law @ r), float(law @ (r * r))
    # M cells of tiny mass: charged E[L'(m_j, R)] in full
    tiny = sel & (w < drop)
    tail += (2 * float(w[tiny] @ m[tiny]) * er + float(w[tiny].sum()) * er2 * ratio) / tt
    sel = sel & ~tiny
    if not sel.any():
        return tail
    keep = law > drop
    rr, pr = r[keep], law[keep]
    pd, rd = law[~keep], r[~keep]
    tail += (
        2 * float(w[sel] @ m[sel]) * float(pd @ rd)
        + float(w[sel].sum()) * float(pd @ (rd * rd)) * ratio
    ) / tt
    idx = np.flatnonzero(sel)
    for ch in np.array_split(idx, max(1, idx.size * rr.size // 4_000_000)):
        mj, wj = m[ch], w[ch]
        lv = 2.0 * mj[:, None] * rr[None, :]
        lv += (rr * rr * ratio)[None, :]
        lv /= tt
        _add_binned(hist, lv, wj[:, None] * pr[None, :], off, ops, dlog)
    return tail


def _add_binned(
    hist: np.ndarray, lv: np.ndarray, wts: np.ndarray, off: int, ops: float, dlog: float
) -> None:
    """``hist[ceil(log(lv (1 + ops)) / dlog) + off] += wts`` (the index clipped to
    ``hist``, ``lv`` raised to at least 1e-300: 0 goes up to the grid's least), as
    ``hist += bincount(index, wts, minlength=hist.size)`` gives it bit for bit: the
    same operations in place on ``lv`` (overwritten), and the bins counted over the
    indices' range alone (a bin outside it gains ``+0.0``, which changes no
    non-negative entry; issue 37, session 25: a third of the time at sigma 0.7, T 10)."""
    nbin = hist.size
    lv *= 1.0 + ops
    np.maximum(lv, 1e-300, out=lv)
    np.log(lv, out=lv)
    lv /= dlog
    np.ceil(lv, out=lv)
    ix = lv.astype(np.int64).ravel()
    ix += off
    np.clip(ix, 0, nbin - 1, out=ix)
    if not ix.size:  # no entry kept: nothing to add
        return
    lo, hi = int(ix.min()), int(ix.max())
    ix -= lo
    hist[lo : hi + 1] += np.bincount(ix, weights=wts.ravel(), minlength=hi - lo + 1)


def _cut_cells(levels: np.ndarray, cuts: np.ndarray, lb: float):
    """``(sel, cut)`` per cut: the M cells it takes and the others' cut ``min(c, lb)``."""
    c_lo = -np.inf
    for c in cuts:
        sel = (levels > c_lo) & (levels <= c + 1e-12)
        c_lo = c + 1e-12
        yield sel, min(c, lb)
    if c_lo < levels[-1]:
        raise ArithmeticError("an M cell was left out of the k = 2 law")




def _triple_charge(sigma: float, t: int, log_b: float) -> float:
    """Upper bound on ``P_2(three coordinates above e^{log_b})``: a union over triples
    (both of the record's steps and one other, one of them and two others, three
    others)."""
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    zs = -(log_b - mu0 - 1.0 / sigma**2) / s0
    zu = -(log_b - mu0) / s0
    ps = float(special.ndtr(zs)) * (1.0 + float(_err(np.array([zs]))[0]))
    pu = float(special.ndtr(zu)) * (1.0 + float(_err(np.array([zu]))[0]))
    n = t - 2
    return (n * ps * ps * pu + n * (n - 1) * ps * pu * pu + n * (n - 1) * (n - 2) / 6 * pu**3) * (
        1 + 1e-12
    )


def _third_cut(sigma: float, t: int, charge: float) -> tuple[float, float]:
    """``(log b', charge)``: the least ``b'`` whose :func:`_triple_charge` is ``<=
    charge``."""
    return _least_cut(_triple_charge, sigma, t, charge)


def _bin_pairs(
    tail: float, hist: np.ndarray, law: np.ndarray, r: np.ndarray, m: np.ndarray,
    w1: np.ndarray, j: int, wj: float, dj: float, t: int, off: int, drop: float,
    drop_r: float, ops: float, dlog: float,
) -> float:
    """The M_2 cell ``j`` (upper end ``m[j]``; ``wj`` bounds ``Q(M_2 in I_j)`` over
    ``T dF``, ``dj`` the diagonal's mass bound) against every M_1 cell above it (``w1``:
    upper bounds on ``dF_i``) and the others' lattice law ``law`` on ``r``:
    ``L''(m_i, m_j, r)`` binned into ``hist`` (log grid of step ``dlog``, index ``off``
    at 1), cells and entries of mass below ``drop`` charged ``E[L'']`` in full."""
    cc = t * (t - 1) / 2.0
    kap = (t - 3) / (2.0 * (t - 2))
    a = float(m[j])
    b = np.append(m[j + 1 :], a)  # the diagonal last: both at most a_j
    wt = np.append(t * wj * w1[j + 1 :], dj) * (1.0 + ops)
    er, er2 = float(law @ r), float(law @ (r * r))
    tiny = wt < drop
    tail += float(wt[tiny] @ (b[tiny] * a + (b[tiny] + a) * er)) / cc
    tail += float(wt[tiny].sum()) * kap * er2 / cc
    b, wt = b[~tiny], wt[~tiny]
    if not b.size:
        return tail
    keep = law > drop_r
    rr, pr = r[keep], law[keep]
    pd, rd = law[~keep], r[~keep]
    tail += (
        float(wt @ (b * a)) * float(pd.sum()) + float(wt @ (b + a)) * float(pd @ rd)
        + float(wt.sum()) * kap * float(pd @ (rd * rd))
    ) / cc
    # L''(m_i, a_j, r) = m_i a_j + (m_i + a_j) r + kappa r^2 (session 21 added a_j r
    # twice: sound, but sigma 0.6, T 100, delta 1e-6 read 5.6155 instead of 5.596)
    base = (a * rr + kap * rr * rr)[None, :]
    for ch in np.array_split(np.arange(b.size), max(1, b.size * rr.size // 4_000_000)):
        bb = b[ch][:, None]
        # (bb a + bb r + base) / cc in place (the sum commutes bit for bit)
        lv = bb * rr[None, :]
        lv += bb * a
        lv += base
        lv /= cc
        _add_binned(hist, lv, wt[ch][:, None] * pr[None, :], off, ops, dlog)
    return tail


def _coarsen(law: np.ndarray, h: float, step: float) -> tuple[np.ndarray, np.ndarray]:
    """``(values, masses)``: ``law`` (entrywise upper bounds of a law on ``h N``) with
    each atom split between the neighbouring nodes of ``step N`` keeping its mean (the
    chord: above in the convex order, and ``sum q phi`` grows entrywise for
    ``phi >= 0``)."""
    nz = np.flatnonzero(law)
    r = nz * h
    lo = np.floor(r / step)
    u = r / step - lo
    u = np.minimum(u * (1.0 + 1e-15) + 1e-300, 1.0)  # the upper share rounded up
    lo = lo.astype(np.int64)
    top = int(lo.max()) + 2
    out = np.bincount(lo, weights=law[nz] * (1.0 - u), minlength=top)
    out += np.bincount(lo + 1, weights=law[nz] * u, minlength=top)
    return np.arange(top) * step, out * (1.0 + 1e-12)


def three_settings(sigma: float, t: int) -> dict:
    """Proposition 6's settings beyond Proposition 3's (``_settings``): ``log_theta``
    (``M_2``'s split: 4.1 standard deviations above the mean of an unshifted ``log Y``;
    ``log_theta_epochs`` at 3.4 for the laws of several epochs),
    the first region's lattice step ``h1`` (a quarter of Proposition 3's below sigma
    0.65, where its lattice is coarse; measured: docs/theory/allocation_k_of_t.md)."""
    h = _settings(sigma, t)[3]
    return {
        "log_theta": -0.5 / sigma**2 + 4.1 / sigma,
        # several epochs: 3.4 (sigma 0.5385, T 100, E 2, delta 1e-5: 7.9949 against 8.0364;
        # one epoch prefers 4.1: sigma 0.6, T 100, delta 1e-6 5.5963 against 5.5976)
        "log_theta_epochs": -0.5 / sigma**2 + 3.4 / sigma,
        "h1": h / 4.0 if sigma < 0.65 else h,
    }


def _second_region(
    tail: float, hist: np.ndarray, bar, sigma: float, t: int, levels: np.ndarray,
    cuts: np.ndarray, lb3: float, js: np.ndarray, h: float, nb3: int, step: float,
    m: np.ndarray, w1: np.ndarray, wg: np.ndarray, diag: np.ndarray, off: int,
    drop_w: float, drop_r: float,
) -> float:
    """Proposition 6's second region: each M_2 cell ``j`` in ``js`` against the M_1
    cells above it (:func:`_bin_pairs`), the others' ``(T-2)``-fold lattice law cut at
    ``min(the least cut >= a_j, b')`` and moved onto the coarse lattice
    (:func:`_coarsen`)."""
    cache: dict[float, tuple[np.ndarray, np.ndarray]] = {}
    ci = np.searchsorted(cuts, levels[js])  # the least cut >= a_j
    for j, c in zip(js, ci, strict=True):
        bar.update(1)
        cut = min(float(cuts[min(c, cuts.size - 1)]), lb3)
        if cut not in cache:
            cache.clear()
            law = _sum_power(_term_law(sigma, math.exp(cut), h, nb3), t - 2)
            # the coarse lattice: at least `step`, at most a quarter of the sum's
            # standard deviation (adds at most var / 64 to its variance)
            rv = np.arange(nb3) * h
            mean = float(law @ rv)
            sd = math.sqrt(max(float(law @ (rv * rv)) - mean * mean, 0.0))
            cache[cut] = _coarsen(law, h, max(step, h, 0.25 * sd))
        rv, law = cache[cut]
        tail = _bin_pairs(
            tail, hist, law, rv, m, w1, int(j), float(wg[j]), float(diag[j]), t, off,
            drop_w, drop_r, _OPS, _DLOG,
        )
    return tail


def _joint_weights(
    sigma: float, t: int, levels: np.ndarray, jt: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(w, dF, dG, diag)``: upper bounds on the first region's cell masses (Proposition
    3's ``w_j``, and ``T dF_j F(theta)^(T-1)`` above ``theta = e^{levels[jt]}``), on
    ``dF_i``, on ``dG_j`` (``G = F^(T-1)``) and on the diagonal's ``C(T, 2) dF_j^2
    F(a_j)^(T-2)`` (Proposition 6, (3)-(4))."""
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    w = _max_cell_weights(sigma, t, levels)
    z = (levels - mu0) / s0
    w1 = np.empty(levels.size)
    w1[0] = 0.0
    w1[1:] = _cells_upper(z[:-1], z[1:]) * (1.0 + _OPS)  # dF_i, i >= 1
    log_f = special.log_ndtr(z) * (1.0 - _err(z))
    wg = _max_cell_weights(sigma, t - 1, levels)  # dG_j (G = F^(T-1))
    diag = t * (t - 1) / 2.0 * w1**2 * np.exp((t - 2) * log_f) * (1.0 + _OPS)
    # M above theta with the others at most theta: one coordinate in the cell, the
    # T - 1 others <= theta, i.e. T dF_j F(theta)^(T-1), not the whole cell
    above = np.arange(levels.size) > jt
    w[above] = np.minimum(
        w[above], t * w1[above] * math.exp((t - 1) * float(log_f[jt])) * (1.0 + _OPS)
    )
    return w, w1, wg, diag


def three_atoms(
    sigma: float, t: int, *, progress: bool = False, log_theta: float | None = None,
    h1: float | None = None, charge3: float = 1e-10, step: float = 32.0, h2: float | None = None,
    drop_r: float = 1e-16, drop_w: float = 1e-22,
) -> tuple[np.ndarray, np.ndarray, float]:
    """``(values, q, charge)`` of Proposition 6: for every ``gamma >= 0``,
    ``H_gamma(P_2 || Q) <= sum_i q_i (values_i - gamma)_+ + charge`` (module).

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0.
    t : int
        Steps per epoch ``T``, >= 3.
    progress : bool, default False
        Show a ``tqdm`` bar after :data:`PROGRESS_DELAY` seconds.
    log_theta, h1, h2 : float, optional
        ``log`` of ``M_2``'s split, the first and second regions' lattice steps (default:
        :func:`three_settings`; ``h2``: Proposition 3's step, ``_settings``)
    charge3, step, drop_r, drop_w : float
        The aim of the union bound on three coordinates above ``b'``; the least step of
        the second region's coarse lattice; masses of its lattice entries and cell pairs
        below which they are charged ``E[L'']`` in full.

    Returns
    -------
    tuple
        Values (rounded up onto a log grid), their Q-masses and the charge.

    Examples
    --------
    >>> v, q, c = three_atoms(1.0, 3)
    >>> bool(float(q @ v) + c >= 1.0)
    True
    """
    if not (isinstance(t, int) and t >= 3):
        raise ValueError(f"t must be an integer >= 3 for Proposition 6, got {t!r}")
    default = three_settings(sigma, t)
    log_theta = default["log_theta"] if log_theta is None else log_theta
    h1 = default["h1"] if h1 is None else h1
    dl, coarse, fine, h, charge = _settings(sigma, t)
    h = h if h2 is None else h2  # the second region's lattice step
    s0, mu0, lmax = 1.0 / sigma, -0.5 / sigma**2, 0.5 / sigma**2 + 8.0 / sigma
    lb2, tail = _second_cut(sigma, t, charge)  # M_2 above b: the pair union
    lb3, c3 = _third_cut(sigma, t, charge3)
    tail += c3
    lmin = mu0 + s0 * float(special.ndtri(1e-18 ** (1.0 / t)))
    levels = np.arange(lmin, lmax + dl, dl)
    jt = int(np.searchsorted(levels, log_theta))  # theta := levels[jt]
    jt = min(max(jt, 1), levels.size - 2)
    theta = float(levels[jt])
    jb = min(int(np.searchsorted(levels, lb2)), levels.size - 1)  # a_jb >= b
    m = np.exp(levels) * (1.0 + 1e-15)
    # P_2(M_1 above the last level): a union over coordinates
    zs = (levels[-1] - (mu0 + 1.0 / sigma**2)) / s0
    zu = (levels[-1] - mu0) / s0
    top = 2.0 * special.ndtr(-zs) * (1 + _err(np.array([zs]))[0])
    top += (t - 2) * special.ndtr(-zu) * (1 + _err(np.array([zu]))[0])
    tail += float(top)
    cuts = np.arange(lmin + coarse, levels[-1] + coarse, coarse)
    if fine < coarse:
        cuts = cuts[cuts < mu0 + s0 * float(special.ndtri(0.5 ** (1.0 / t)))]
        cuts = np.concatenate((cuts, np.arange(cuts[-1] + fine, levels[-1] + fine, fine)))
    if cuts[-1] < levels[-1]:
        cuts = np.append(cuts, levels[-1])
    # region 1: M_2 <= theta, Proposition 3 with b = theta
    n1 = 1 << math.ceil(math.log2((t - 1) * math.exp(theta) / h1 + t + 2))
    nb3 = 1 << math.ceil(math.log2((t - 2) * math.exp(lb3) / h + t + 2))
    vmax = (m[-1] + max(n1 * h1, nb3 * h)) ** 2  # >= (m_1 + r)(m_2 + r): no value clipped
    nbin = math.ceil((math.log(vmax) + 40.0) / _DLOG) + 2
    off = math.ceil(40.0 / _DLOG)
    hist = np.zeros(nbin)
    r1 = np.arange(n1) * h1
    w, w1, wg, diag = _joint_weights(sigma, t, levels, jt)
    cut_list = list(_cut_cells(levels, cuts, theta))
    js = np.arange(jt + 1, jb + 1)
    with LazyBar(
        total=len(cut_list) + js.size, desc=f"random-allocation k=2 (max, second, sum) law "
        f"(T={t})", delay=PROGRESS_DELAY, progress=progress,
    ) as bar:
        cache: dict[float, np.ndarray] = {}
        for sel, cut in cut_list:
            bar.update(1)
            if not sel.any():
                continue
            if cut not in cache:
                cache.clear()
                cache[cut] = _sum_power(_term_law(sigma, math.exp(cut), h1, n1), t - 1)
            tail = _bin_cells(tail, hist, cache[cut], r1, m, w, sel, t, off)
        # region 2: theta < M_2 <= a_jb, the others below min(cut(a_j), b')
        tail = _second_region(
            tail, hist, bar, sigma, t, levels, cuts, lb3, js, h, nb3, step, m, w1, wg,
            diag, off, drop_w, drop_r,
        )
    hist *= 1.0 + _OPS
    nz = np.flatnonzero(hist > 0)
    vals = np.exp((nz - off) * _DLOG)
    return vals, hist[nz], float(tail) * (1.0 + _OPS)
