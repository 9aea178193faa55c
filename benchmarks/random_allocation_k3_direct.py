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
value functions and charges, certified: 2.1891 at sigma 1, T 100, delta 1e-6 in 4.6 CPU s
(remove direction), below the blocks' 2.1958.  Since session 22 it is the library's
Proposition 7 (``random_allocation_k3.py``, the route of ``random_allocation(..., k=3)``)
at the prototype's coarse step 32.
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np
from scipy import special

from dpacct.accountant.transformers import random_allocation_k2 as k2


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


def atoms3(sigma: float, t: int, drop: float = 1e-22, drop_r: float = 1e-16):
    """(values, Q-masses, charge) of the k = 3 (max, second, sum) bound, CERTIFIED: the
    library's Proposition 7 (``accountant/transformers/random_allocation_k3.py``, built
    from this prototype in session 22) at session 21's coarse step 32 (the library's
    default is 8 at T >= 50, 2 below)."""
    from dpacct.accountant.transformers.random_allocation_k3 import k3_remove_atoms

    return k3_remove_atoms(sigma, t, drop_w=drop, drop_r=drop_r, step=32.0)


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
