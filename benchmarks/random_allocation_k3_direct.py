"""Issue 39 (k = 3 plan): an UNCERTIFIED prototype of the direct k = 3 remove bound.

    python -m benchmarks.random_allocation_k3_direct 1.0 100 1e-6

Measurement only, not a library route: ``e_3(z) = M e_2(others) + e_3(others)`` with
``e_2(others) <= R^2 (T-2) / (2 (T-1))`` (Cauchy-Schwarz) and ``e_3(others) <= C(T-1, 3)
(R / (T-1))^3`` (Maclaurin), on the k = 2 module's M cells, cuts and lattice laws
(``accountant/transformers/random_allocation_k2.py``), with the k = 3 charges; the cell
masses and values are not rounded outward as the library's are.  Measured (session
20, loaded machine): 2.2004 at sigma 1, T 100, delta 1e-6 in 4.2 CPU s, against the
blocks' 2.1958 and the certified lower end 2.1097 (docs/theory/allocation_k_of_t.md,
"k = 3, direct").

``atoms3`` (session 21) is the (max, second, sum) law of Proposition 6 with k = 3's
value functions and charges, certified as the library's (its outward rounding): 2.1891 at
sigma 1, T 100, delta 1e-6 in 4.6 CPU s (remove direction), below the blocks' 2.1958.
Not a library route yet (the add direction, the envelope of three blocks and tests).
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np
from scipy import special

from dpacct.accountant.transformers import random_allocation_k2 as k2
from dpacct.accountant.transformers.random_allocation_k2_hull import _cells_upper, _err
from dpacct.accountant.transformers.random_allocation_k2_three import _coarsen, three_settings


def _charge(sigma: float, t: int, log_b: float) -> float:
    """P_3(two coordinates above e^log_b), a union over pairs (no outward rounding)."""
    s0, mu0 = 1 / sigma, -0.5 / sigma**2
    ps = special.ndtr(-(log_b - mu0 - 1 / sigma**2) / s0)
    pu = special.ndtr(-(log_b - mu0) / s0)
    return 3 * ps * ps + 3 * (t - 3) * ps * pu + (t - 3) * (t - 4) / 2 * pu * pu


def atoms(sigma: float, t: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(values, Q-masses, charge) of the k = 3 bound, sorted by value."""
    s0, mu0 = 1 / sigma, -0.5 / sigma**2
    lo, hi = mu0, mu0 + 40 * s0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _charge(sigma, t, mid) > 1e-9 else (lo, mid)
    lb, tail = hi, _charge(sigma, t, hi)
    dl, coarse, fine, h, _ = k2._settings(sigma, t)
    lmax = 0.5 / sigma**2 + 8 / sigma
    n = 1 << math.ceil(math.log2((t - 1) * math.exp(lb) / h + t + 2))
    lmin = mu0 + s0 * float(special.ndtri(1e-18 ** (1 / t)))
    levels = np.arange(lmin, lmax + dl, dl)
    w = k2._max_cell_weights(sigma, t, levels)
    m = np.exp(levels)
    tail += 3 * special.ndtr(-(lmax - (mu0 + 1 / sigma**2)) / s0)
    tail += (t - 3) * special.ndtr(-(lmax - mu0) / s0)
    cuts = np.arange(lmin + coarse, levels[-1] + coarse, coarse)
    if fine < coarse:
        cuts = cuts[cuts < mu0 + s0 * float(special.ndtri(0.5 ** (1 / t)))]
        cuts = np.concatenate((cuts, np.arange(cuts[-1] + fine, levels[-1] + fine, fine)))
    if cuts[-1] < levels[-1]:
        cuts = np.append(cuts, levels[-1])
    r = np.arange(n) * h
    c3, c31 = t * (t - 1) * (t - 2) / 6, (t - 1) * (t - 2) * (t - 3) / 6
    dlog, off = 1e-4, int(40 / 1e-4)
    nbin = int((math.log(m[-1] * (n * h) ** 2 + (n * h) ** 3) + 45) / dlog)
    hist = np.zeros(nbin)
    law, last = None, None
    for sel, cut in k2._cut_cells(levels, cuts, lb):
        if not sel.any():
            continue
        if cut != last:
            law, last = k2._sum_power(k2._term_law(sigma, math.exp(cut), h, n), t - 1), cut
        keep = law > 1e-25
        rr, pr = r[keep], law[keep]
        idx = np.flatnonzero(sel & (w > 1e-25))
        for ch in np.array_split(idx, max(1, idx.size * rr.size // 4_000_000)):
            lv = (m[ch][:, None] * (rr * rr * (t - 2) / (2 * (t - 1)))[None, :]
                  + (c31 * (rr / (t - 1)) ** 3)[None, :]) / c3
            ix = np.ceil(np.log(np.maximum(lv, 1e-300)) / dlog).astype(np.int64) + off
            hist += np.bincount(np.clip(ix, 0, nbin - 1).ravel(),
                                weights=(w[ch][:, None] * pr[None, :]).ravel(), minlength=nbin)
    nz = np.flatnonzero(hist > 0)
    return np.exp((nz - off) * dlog), hist[nz], float(tail)


def epsilon(vals: np.ndarray, q: np.ndarray, tail: float, delta: float) -> float:
    """The least epsilon (bisection) with sum q (v - e^eps)_+ + tail <= delta."""
    sp = np.cumsum((q * vals)[::-1])[::-1]
    sq = np.cumsum(q[::-1])[::-1]

    def d(e: float) -> float:
        g = math.exp(e)
        i = np.searchsorted(vals, g, side="right")
        return (sp[i] - g * sq[i] if i < vals.size else 0.0) + tail

    lo, hi = 0.0, 30.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if d(mid) <= delta else (mid, hi)
    return hi


def _tails(sigma: float, log_b: float) -> tuple[float, float]:
    """Upper bounds on the tails above ``e^log_b`` of a shifted and an unshifted
    coordinate (the ndtr error model of the library)."""
    s0, mu0 = 1 / sigma, -0.5 / sigma**2
    zs, zu = -(log_b - mu0 - 1 / sigma**2) / s0, -(log_b - mu0) / s0
    ps = float(special.ndtr(zs)) * (1 + float(_err(np.array([zs]))[0]))
    pu = float(special.ndtr(zu)) * (1 + float(_err(np.array([zu]))[0]))
    return ps, pu


def _cut3(sigma: float, t: int, charge: float, fn) -> tuple[float, float]:
    mu0, s0 = -0.5 / sigma**2, 1 / sigma
    lo, hi = mu0, mu0 + 40 * s0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if fn(*_tails(sigma, mid)) > charge else (lo, mid)
    return hi, fn(*_tails(sigma, hi)) * (1 + 1e-12)


def _hist_add(hist, vals, weights, off, dlog):
    ix = np.ceil(np.log(np.maximum(vals * (1 + 1e-12), 1e-300)) / dlog).astype(np.int64) + off
    hist += np.bincount(np.clip(ix, 0, hist.size - 1).ravel(), weights=weights.ravel(),
                        minlength=hist.size)


def atoms3(sigma: float, t: int, drop: float = 1e-22, drop_r: float = 1e-16):
    """(values, Q-masses, charge) of the k = 3 (max, second, sum) bound, CERTIFIED as
    Proposition 6 (docs/theory/allocation_k_of_t.md) with k = 3's value functions and
    charges: M_2 <= theta: ``e_3 <= M R^2 (T-2) / (2 (T-1)) + C(T-1, 3) (R / (T-1))^3``;
    M_2 > theta: ``e_3 <= M_1 M_2 R' + (M_1 + M_2) R'^2 (T-3) / (2 (T-2)) + C(T-2, 3)
    (R' / (T-2))^3``; P_3 unions: pairs ``3 p_s^2 + 3 (T-3) p_s p_u + C(T-3, 2) p_u^2``,
    triples ``p_s^3 + 3 (T-3) p_s^2 p_u + 3 C(T-3, 2) p_s p_u^2 + C(T-3, 3) p_u^3``,
    coordinates ``3 p_s + (T-3) p_u``.  Masses and values rounded up as the library's;
    entries and cell pairs below ``drop_r`` / ``drop`` charged E[value] in full."""
    s0, mu0 = 1 / sigma, -0.5 / sigma**2
    dl, coarse, fine, h, _ = k2._settings(sigma, t)
    st = three_settings(sigma, t)
    c3 = t * (t - 1) * (t - 2) / 6
    lb2, tail = _cut3(sigma, t, 1e-9, lambda ps, pu: 3 * ps * ps + 3 * (t - 3) * ps * pu
                      + (t - 3) * (t - 4) / 2 * pu * pu)
    n3 = t - 3
    lb3, ch3 = _cut3(sigma, t, 1e-10, lambda ps, pu: ps**3 + 3 * n3 * ps * ps * pu
                     + 3 * n3 * (n3 - 1) / 2 * ps * pu * pu + n3 * (n3 - 1) * (n3 - 2) / 6 * pu**3)
    tail += ch3
    lmax = 0.5 / sigma**2 + 8 / sigma
    lmin = mu0 + s0 * float(special.ndtri(1e-18 ** (1 / t)))
    levels = np.arange(lmin, lmax + dl, dl)
    ps, pu = _tails(sigma, float(levels[-1]))
    tail += (3 * ps + (t - 3) * pu) * (1 + 1e-12)
    jt = min(max(int(np.searchsorted(levels, st["log_theta"])), 1), levels.size - 2)
    theta = float(levels[jt])
    jb = min(int(np.searchsorted(levels, lb2)), levels.size - 1)
    m = np.exp(levels) * (1 + 1e-15)
    z = (levels - mu0) / s0
    w1 = np.zeros(levels.size)
    w1[1:] = _cells_upper(z[:-1], z[1:]) * (1 + 1e-12)
    log_f = special.log_ndtr(z) * (1 - _err(z))
    w = k2._max_cell_weights(sigma, t, levels).copy()
    above = np.arange(levels.size) > jt
    w[above] = np.minimum(w[above], t * w1[above] * math.exp((t - 1) * float(log_f[jt])))
    wg = k2._max_cell_weights(sigma, t - 1, levels)
    diag = t * (t - 1) / 2 * w1**2 * np.exp((t - 2) * log_f) * (1 + 1e-12)
    cuts = np.arange(lmin + coarse, levels[-1] + coarse, coarse)
    if fine < coarse:
        cuts = cuts[cuts < mu0 + s0 * float(special.ndtri(0.5 ** (1 / t)))]
        cuts = np.concatenate((cuts, np.arange(cuts[-1] + fine, levels[-1] + fine, fine)))
    if cuts[-1] < levels[-1]:
        cuts = np.append(cuts, levels[-1])
    h1 = st["h1"]
    n1 = 1 << math.ceil(math.log2((t - 1) * math.exp(theta) / h1 + t + 2))
    nb3 = 1 << math.ceil(math.log2((t - 2) * math.exp(lb3) / h + t + 2))
    big = max(n1 * h1, nb3 * h)
    dlog, off = k2._DLOG, math.ceil(40 / k2._DLOG)
    hist = np.zeros(math.ceil((math.log(m[-1] ** 2 * big + m[-1] * big**2 + big**3) + 41)
                              / dlog))
    # region 1: value = (a2 m r^2 + a3 r^3) / c3
    a2, a3 = (t - 2) / (2 * (t - 1)), math.comb(t - 1, 3) / (t - 1) ** 3
    r1 = np.arange(n1) * h1
    law, last = None, None
    for sel, cut in k2._cut_cells(levels, cuts, theta):
        if not sel.any():
            continue
        if cut != last:
            law, last = k2._sum_power(k2._term_law(sigma, math.exp(cut), h1, n1), t - 1), cut
        keep = law > drop_r
        rr, pr, pd, rd = r1[keep], law[keep], law[~keep], r1[~keep]
        idx = np.flatnonzero(sel)
        tiny = idx[w[idx] < drop]
        e2, e3 = float(law @ r1**2), float(law @ r1**3)
        tail += float(w[tiny] @ (a2 * m[tiny] * e2 + a3 * e3)) / c3
        idx = idx[w[idx] >= drop]
        tail += float(w[idx] @ (a2 * m[idx] * float(pd @ rd**2) + a3 * float(pd @ rd**3))) / c3
        for ch in np.array_split(idx, max(1, idx.size * rr.size // 4_000_000)):
            lv = (a2 * m[ch][:, None] * (rr * rr)[None, :] + (a3 * rr**3)[None, :]) / c3
            _hist_add(hist, lv, w[ch][:, None] * pr[None, :] * (1 + 1e-12), off, dlog)
    # region 2: value = (b a r + (b + a) k2 r^2 + k3 r^3) / c3
    q2, q3 = (t - 3) / (2 * (t - 2)), math.comb(t - 2, 3) / (t - 2) ** 3
    cache: dict = {}
    for j in range(jt + 1, jb + 1):
        c = int(np.searchsorted(cuts, levels[j]))
        cut = min(float(cuts[min(c, cuts.size - 1)]), lb3)
        if cut not in cache:
            cache.clear()
            lw = k2._sum_power(k2._term_law(sigma, math.exp(cut), h, nb3), t - 2)
            rv = np.arange(nb3) * h
            sd = math.sqrt(max(float(lw @ rv**2) - float(lw @ rv) ** 2, 0.0))
            cache[cut] = _coarsen(lw, h, max(32.0, h, 0.25 * sd))
        rv, lw = cache[cut]
        a = float(m[j])
        b = np.append(m[j + 1:], a)
        wt = np.append(t * float(wg[j]) * w1[j + 1:], diag[j]) * (1 + 1e-12)
        mom = [float(lw @ rv**p) for p in (1, 2, 3)]
        tiny = wt < drop
        tail += float(wt[tiny] @ (b[tiny] * a * mom[0] + (b[tiny] + a) * q2 * mom[1]
                                   + q3 * mom[2])) / c3
        b, wt = b[~tiny], wt[~tiny]
        if not b.size:
            continue
        keep = lw > drop_r
        rr, pr, pd, rd = rv[keep], lw[keep], lw[~keep], rv[~keep]
        tail += float(wt @ (b * a * float(pd @ rd) + (b + a) * q2 * float(pd @ rd**2)
                            + q3 * float(pd @ rd**3))) / c3
        for ch in np.array_split(np.arange(b.size), max(1, b.size * rr.size // 4_000_000)):
            bb = b[ch][:, None]
            lv = (bb * a * rr[None, :] + (bb + a) * (q2 * rr * rr)[None, :]
                  + (q3 * rr**3)[None, :]) / c3
            _hist_add(hist, lv, wt[ch][:, None] * pr[None, :], off, dlog)
    hist *= 1 + 1e-12
    nz = np.flatnonzero(hist > 0)
    return np.exp((nz - off) * dlog), hist[nz], float(tail) * (1 + 1e-12)


if __name__ == "__main__":
    sigma, t, delta = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    c0 = time.process_time()
    v, q, c = atoms(sigma, t)
    print(f"P-mass {float(q @ v) + c:.4f}; k = 3 direct remove epsilon "
          f"{epsilon(v, q, c, delta):.4f}; CPU {time.process_time() - c0:.1f} s")
    c0 = time.process_time()
    v, q, c = atoms3(sigma, t)
    print(f"(max, second, sum), certified: P-mass {float(q @ v) + c:.4f}; remove epsilon "
          f"{epsilon(v, q, c, delta):.4f}; CPU {time.process_time() - c0:.1f} s")
