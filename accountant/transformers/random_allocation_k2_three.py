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
(:mod:`.random_allocation_k2`).  Built where Proposition 3's law is loose (sigma below
:data:`THREE_MAX_SIGMA`): sigma 0.6, T 100, delta 1e-6 (docs/theory/allocation_k_of_t.md,
measured there).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..numerics import _bar_disabled
from .random_allocation_k2_hull import _cells_upper, _err
from .random_allocation_pld import PROGRESS_DELAY

__all__: list[str] = []

#: Proposition 6's law replaces Proposition 3's below this sigma
THREE_MAX_SIGMA = 0.8


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
    """``(log b', charge)``: the least ``b'`` (bisection) whose :func:`_triple_charge`
    is ``<= charge``, and that charge."""
    mu0, s0 = -0.5 / sigma**2, 1.0 / sigma
    lo, hi = mu0, mu0 + 40.0 * s0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _triple_charge(sigma, t, mid) > charge else (lo, mid)
    return hi, _triple_charge(sigma, t, hi)


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
    nbin = hist.size
    base = (a * rr + kap * rr * rr)[None, :]
    for ch in np.array_split(np.arange(b.size), max(1, b.size * rr.size // 4_000_000)):
        bb = b[ch][:, None]
        lv = (bb * a + (bb + a) * rr[None, :] + base) / cc
        lv = np.maximum(lv * (1.0 + ops), 1e-300)
        ix = np.ceil(np.log(lv) / dlog).astype(np.int64) + off
        np.clip(ix, 0, nbin - 1, out=ix)
        hist += np.bincount(
            ix.ravel(), weights=(wt[ch][:, None] * pr[None, :]).ravel(), minlength=nbin
        )
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
    """Proposition 6's settings beyond Proposition 3's (``k2._settings``): ``log_theta``
    (``M_2``'s split: 4.1 standard deviations above the mean of an unshifted ``log Y``),
    the first region's lattice step ``h1`` (a quarter of Proposition 3's below sigma
    0.65, where its lattice is coarse; measured: docs/theory/allocation_k_of_t.md)."""
    from . import random_allocation_k2 as k2

    h = k2._settings(sigma, t)[3]
    return {
        "log_theta": -0.5 / sigma**2 + 4.1 / sigma,
        "h1": h / 4.0 if sigma < 0.65 else h,
    }


def three_atoms(
    sigma: float, t: int, *, progress: bool = False, log_theta: float | None = None,
    h1: float | None = None, charge3: float = 1e-10, step: float = 32.0,
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
    log_theta, h1 : float, optional
        ``log`` of the split of ``M_2`` and the first region's lattice step
        (default: :func:`three_settings`).
    charge3 : float, default 1e-10
        The union bound on three coordinates above ``b'`` is aimed at this.
    step : float, default 32
        The second region's others' law is moved onto this lattice (mean kept).
    drop_r, drop_w : float
        The second region's lattice entries and cell pairs below these masses are
        charged ``E[L'']`` in full.

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
    from . import random_allocation_k2 as k2

    if not (isinstance(t, int) and t >= 3):
        raise ValueError(f"t must be an integer >= 3 for Proposition 6, got {t!r}")
    default = three_settings(sigma, t)
    log_theta = default["log_theta"] if log_theta is None else log_theta
    h1 = default["h1"] if h1 is None else h1
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    dl, coarse, fine, h, charge = k2._settings(sigma, t)
    lmax = 0.5 / sigma**2 + 8.0 / sigma
    lb2, tail = k2._second_cut(sigma, t, charge)  # M_2 above b: the pair union
    lb3, c3 = _third_cut(sigma, t, charge3)
    tail += c3
    lmin = mu0 + s0 * float(special.ndtri(1e-18 ** (1.0 / t)))
    levels = np.arange(lmin, lmax + dl, dl)
    jt = int(np.searchsorted(levels, log_theta))  # theta := levels[jt]
    jt = min(max(jt, 1), levels.size - 2)
    theta = float(levels[jt])
    jb = min(int(np.searchsorted(levels, lb2)), levels.size - 1)  # a_jb >= b
    w = k2._max_cell_weights(sigma, t, levels)
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
    vmax = m[-1] * max(n1 * h1, nb3 * h) * 2 + max(n1 * h1, nb3 * h) ** 2
    nbin = math.ceil((math.log(vmax) + 40.0) / k2._DLOG) + 2
    off = math.ceil(40.0 / k2._DLOG)
    hist = np.zeros(nbin)
    r1 = np.arange(n1) * h1
    z = (levels - mu0) / s0
    w1 = np.empty(levels.size)
    w1[0] = 0.0
    w1[1:] = _cells_upper(z[:-1], z[1:]) * (1.0 + k2._OPS)  # dF_i, i >= 1
    log_f = special.log_ndtr(z) * (1.0 - _err(z))
    wg = k2._max_cell_weights(sigma, t - 1, levels)  # dG_j (G = F^(T-1))
    diag = t * (t - 1) / 2.0 * w1**2 * np.exp((t - 2) * log_f) * (1.0 + k2._OPS)
    # M above theta with the others at most theta: one coordinate in the cell, the
    # T - 1 others <= theta, i.e. T dF_j F(theta)^(T-1), not the whole cell
    w = w.copy()
    above = np.arange(levels.size) > jt
    w[above] = np.minimum(
        w[above], t * w1[above] * math.exp((t - 1) * float(log_f[jt])) * (1.0 + k2._OPS)
    )
    cut_list = list(k2._cut_cells(levels, cuts, theta))
    js = np.arange(jt + 1, jb + 1)
    from tqdm import tqdm

    with tqdm(
        total=len(cut_list) + js.size, desc=f"random-allocation k=2 (max, second, sum) law "
        f"(T={t})", delay=PROGRESS_DELAY, disable=_bar_disabled(progress), leave=False,
    ) as bar:
        cache: dict[float, np.ndarray] = {}
        for sel, cut in cut_list:
            bar.update(1)
            if not sel.any():
                continue
            if cut not in cache:
                cache.clear()
                cache[cut] = k2._sum_power(k2._term_law(sigma, math.exp(cut), h1, n1), t - 1)
            tail = k2._bin_cells(tail, hist, cache[cut], r1, m, w, sel, t, off)
        # region 2: theta < M_2 <= a_jb, the others below min(cut(a_j), b')
            cache.clear()
        ci = np.searchsorted(cuts, levels[js])  # the least cut >= a_j
        for j, c in zip(js, ci, strict=True):
            bar.update(1)
            cut = min(float(cuts[min(c, cuts.size - 1)]), lb3)
            if cut not in cache:
                cache.clear()
                law = k2._sum_power(k2._term_law(sigma, math.exp(cut), h, nb3), t - 2)
                # the coarse lattice: at least `step`, at most a quarter of the sum's
                # standard deviation (adds at most var / 64 to its variance)
                rv = np.arange(nb3) * h
                mean = float(law @ rv)
                sd = math.sqrt(max(float(law @ (rv * rv)) - mean * mean, 0.0))
                cache[cut] = _coarsen(law, h, max(step, h, 0.25 * sd))
            rv, law = cache[cut]
            tail = _bin_pairs(
                tail, hist, law, rv, m, w1, int(j), float(wg[j]), float(diag[j]), t,
                off, drop_w, drop_r, k2._OPS, k2._DLOG,
            )
    hist *= 1.0 + k2._OPS
    nz = np.flatnonzero(hist > 0)
    vals = np.exp((nz - off) * k2._DLOG)
    return vals, hist[nz], float(tail) * (1.0 + k2._OPS)
