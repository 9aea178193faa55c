"""Issue 39, k = 3: a PROTOTYPE of the one-region (max, sum, sum of squares) law (an ESTIMATE).

    python -m benchmarks.random_allocation_k_sq_law 1.2 30 [--h 0.05 --g 0.25 --cap 30]

Measurement only, not a certificate, of a design the measurement REJECTS (docs/theory/
allocation_k_of_t.md, "The others' sum of squares": with one region the others include the
record's second and third coordinates, whose squares the cap cuts; sigma 1.2, T 30:
2.82758 in 44 CPU s against Proposition 10's 2.69073 in 3 s).  It follows the structure of
a one-region law built on Lemma 11: on ``{M_2 <= b}`` (``b`` where
Proposition 9's union ``U_2(b)`` is 1e-9, charged with ``U_1`` of the top)
``Lambda_3 <= (G_3(R, S) + M_1 G_2(R, S)) / C(T, 3)`` with ``R, S`` the sum and sum of
squares of the ``T - 1`` others; ``M_1``'s cells carry Proposition 10's chords
(``chord_weights``), the others of a cell are cut at a coarse cut node at or above its upper
end (Lemma 11 (ii): the value increases in each coordinate), each other's ``z`` is spread
onto the multiples of ``h`` with its mean kept (Lemma 11 (iii): convex in ``R``) and its
``z^2`` rounded down to a multiple of ``g`` and capped at ``cap`` (the value decreases in
``S``), the ``T - 1``-fold law by one FFT power on a grid that holds its mass, then ``R``
spread onto a coarse step and ``S`` rounded down onto one.  NOT certified: the FFT
power's round-off and the mass beyond its grid (wrapped around) are not bounded, and the
per-coordinate masses are plain floats.  Prints the remove direction's epsilon at delta
beside Proposition 10's law (``remove_atoms4``, main's route at k = 3) and both CPU times.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import special

from dpacct.accountant.transformers.random_allocation_k2_three import _DLOG
from dpacct.accountant.transformers.random_allocation_k_law import (
    _CHARGE2,
    _least,
    union_charge,
)
from dpacct.accountant.transformers.random_allocation_k_law4 import (
    _DROP_Q,
    _bin_rows,
    chord_weights,
    remove_atoms4,
)


def g_hat(r: np.ndarray, s: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(hat G_2, hat G_3)`` of Lemma 11 (iii) on the whole quadrant (convex in ``r``,
    decreasing in ``s``, equal to the largest ``e_2``, ``e_3`` on the feasible band)."""
    g2 = np.maximum(r * r - s, 0.0) / 2.0
    v = np.maximum(s / n - r * r / n**2, 0.0)
    g3 = (r**3 * (1 - 4 / n**2) - 3 * r * s * (1 - 2 / n)
          + 2 * n * (n - 2) / math.sqrt(n - 1) * v**1.5) / 6.0
    return g2, np.where(r * r <= s, 0.0, np.maximum(g3, 0.0))


def pair_lattice(sigma, cut, n, h, g, cap, big_h, big_g):
    """``(r, s, mass)``: the prototype lattice law of the sum and sum of squares of ``n``
    i.i.d. ``z | z <= cut`` (module docstring), non-zero entries only."""
    a = 0.5 / sigma**2
    jmax = math.ceil(cut / h)
    e = np.minimum(np.arange(jmax + 1) * h, cut)
    with np.errstate(divide="ignore"):
        le = np.log(e)
    fc = special.ndtr((math.log(cut) + a) * sigma)
    cdf = special.ndtr((le + a) * sigma) / fc
    pe = special.ndtr((le - a) * sigma) / fc  # E[z; z <= x] / F(cut): E z = 1
    mass, part = np.diff(cdf), np.diff(pe)
    lo_pt = np.arange(jmax) * h
    up = np.clip((part - lo_pt * mass) / h, 0.0, mass)
    sidx = np.floor(np.minimum(lo_pt**2, cap) / g).astype(np.int64)
    ns1 = int(sidx.max()) + 1
    one = np.zeros((jmax + 1, ns1))
    np.add.at(one, (np.arange(jmax), sidx), mass - up)
    np.add.at(one, (np.arange(1, jmax + 1), sidx), up)
    rv, sv = np.arange(jmax + 1) * h, np.arange(ns1) * g
    pr, ps = one.sum(1), one.sum(0)
    mr, ms = pr @ rv, ps @ sv
    sr, ss = math.sqrt(max(pr @ rv**2 - mr**2, 0)), math.sqrt(max(ps @ sv**2 - ms**2, 0))
    nr = min(n * jmax + 1, int((n * mr + 25 * math.sqrt(n) * sr + 6 * cut) / h) + 1)
    nsz = min(n * (ns1 - 1) + 1, int((n * ms + 25 * math.sqrt(n) * ss + 6 * cap) / g) + 1)
    nr, nsz = 1 << math.ceil(math.log2(nr)), 1 << math.ceil(math.log2(nsz))
    spec = np.fft.rfft2(one, s=(nr, nsz))
    law = np.maximum(np.fft.irfft2(spec**n, s=(nr, nsz)), 0.0)
    # R: mean-preserving spread onto multiples of big_h; S: rounded down to big_g
    mr_, mg_ = max(1, round(big_h / h)), max(1, round(big_g / g))
    i = np.arange(nr)
    q, frac = i // mr_, (i % mr_) / mr_
    coarse = np.zeros((nr // mr_ + 2, nsz // mg_ + 1))
    scol = np.arange(nsz) // mg_
    tmp_lo = np.zeros((nr, coarse.shape[1]))
    np.add.at(tmp_lo.T, scol, law.T)  # rows: r index, columns: coarse s
    np.add.at(coarse, q, tmp_lo * (1 - frac)[:, None])
    np.add.at(coarse, q + 1, tmp_lo * frac[:, None])
    ri, si = np.nonzero(coarse > 0)
    return ri * mr_ * h, si * mg_ * g, coarse[ri, si]


def sq_law(sigma, t, *, h=0.05, g=0.25, cap=30.0, big_h=None, big_g=1.0, dl=0.05,
           cut_dl=0.25, lo_sd=1.0, top_sd=7.0):
    """``(values, q, charge)`` of the prototype (module docstring), ``k = 3``."""
    k, n = 3, t - 1
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    lb, charge = _least(sigma, t, k, 2, _CHARGE2)
    top = 0.5 / sigma**2 + top_sd / sigma
    charge += union_charge(sigma, t, k, 1, top)
    lo = mu0 + lo_sd * s0
    below = np.append(np.arange(lo, lb, dl), lb)
    above = np.arange(lb + dl, top + dl, dl)
    nodes = np.concatenate([below, above])
    nb = below.size - 1  # nodes[nb] = b
    cuts = np.append(np.arange(lo, lb, cut_dl), lb)
    fl, fu = chord_weights(sigma, nodes, t)
    gl, gu = chord_weights(sigma, nodes, 1)
    fb = special.ndtr((lb + 0.5 / sigma**2) * sigma) ** (t - 1)
    x = np.exp(nodes)
    ck = math.comb(t, k)
    off = math.ceil(40.0 / _DLOG)
    hist = np.zeros(math.ceil((k * math.log(2 * n * math.exp(top) + 10) + 41.0) / _DLOG))
    f0 = special.ndtr((lo + 0.5 / sigma**2) * sigma) ** t
    tail = 0.0
    owner = np.searchsorted(cuts, nodes - 1e-9)  # each cell's cut: the first at or above
    for ci, cut in enumerate(cuts):
        # the cells whose upper end is in (previous cut, this cut]; the first cut also
        # carries M_1 <= e^lo; the last (b) also the cells above b (others cut at b)
        idx = [c for c in range(1, nb + 1) if owner[c] == ci]
        wx = np.zeros(x.size)
        for c in idx:
            wx[c - 1] += fl[c]
            wx[c] += fu[c]
        if ci == 0:
            wx[0] += f0
        if ci == cuts.size - 1:
            for c in range(nb + 1, nodes.size):
                wx[c - 1] += t * fb * gl[c]
                wx[c] += t * fb * gu[c]
        if not wx.any():
            continue
        bh = big_h if big_h is not None else max(0.25, 0.1 * math.sqrt(n))
        r, s, m = pair_lattice(sigma, math.exp(cut), n, h, g, cap, bh, big_g)
        g2, g3 = g_hat(r, s, n)
        sel = np.nonzero(wx)[0]
        rows = np.stack([np.ones(sel.size), x[sel]], axis=1)
        p = np.stack([g3 / ck, g2 / ck])
        tail += _bin_rows(hist, rows, p, wx[sel], m, off, _DROP_Q)
    nz = np.flatnonzero(hist > 0)
    return np.exp((nz - off) * _DLOG), hist[nz], float(tail) + charge


def epsilon_at(values, q, charge, delta):
    """The least epsilon with ``sum q (v - e^eps)_+ + charge <= delta`` (bisection)."""
    lo, hi = 0.0, float(np.log(values.max())) + 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        d = float(q @ np.maximum(values - math.exp(mid), 0.0)) + charge
        lo, hi = (mid, hi) if d > delta else (lo, mid)
    return hi


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sigma", type=float)
    ap.add_argument("t", type=int)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--h", type=float, default=0.05)
    ap.add_argument("--g", type=float, default=0.25)
    ap.add_argument("--cap", type=float, default=30.0)
    ap.add_argument("--big-g", type=float, default=1.0)
    ap.add_argument("--cut-dl", type=float, default=0.25)
    ap.add_argument("--no-old", action="store_true", help="skip Proposition 10's law")
    args = ap.parse_args(argv)
    c0 = time.process_time()
    v, q, ch = sq_law(args.sigma, args.t, h=args.h, g=args.g, cap=args.cap,
                      big_g=args.big_g, cut_dl=args.cut_dl)
    c1 = time.process_time()
    print(f"sigma {args.sigma:g}, T {args.t}, k 3, delta {args.delta:g}: prototype "
          f"(h {args.h}, g {args.g}, cap {args.cap}, G {args.big_g}, cuts {args.cut_dl}) "
          f"{epsilon_at(v, q, ch, args.delta):.5f} ({c1 - c0:.1f} CPU s; charge {ch:.2e}, "
          f"Q-mass {q.sum():.6f})")
    if not args.no_old:
        v, q, ch = remove_atoms4(args.sigma, args.t, 3)
        c2 = time.process_time()
        print(f"  Proposition 10's law: {epsilon_at(v, q, ch, args.delta):.5f} "
              f"({c2 - c1:.1f} CPU s)")


if __name__ == "__main__":
    main()
