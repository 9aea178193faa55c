"""Prototype (issue #39): a certified delta(eps) for two-band DP-MF under balls-in-bins by a
transfer operator over the cycle, beside today's Gram-domination bound and Monte Carlo.

    python -m benchmarks.dpmf_b2_transfer                 # n 4/8 rows, default grids
    python -m benchmarks.dpmf_b2_transfer --points 61 --rho 0.01 --mc 2e6

The argument (docs/theory/dpmf_balls_in_bins.md, "Two bands: a transfer operator"):

* For a 2-banded Toeplitz ``C = (c0, c1) >= 0`` and cycle ``k >= 2``, group the rows of
  ``M = [C x_0, ..., C x_{k-1}]`` by their pattern: row 0 has ``c0`` in column 0 only
  (variable ``B``), every row ``i >= 1`` with ``i = r (mod k)`` has ``c0`` in column ``r``
  and ``c1`` in column ``r - 1`` (variable ``T_r``, the sum of those rows' noise / sigma,
  ``N(0, N_r)`` under ``P``, ``N_r`` = number of such rows: the partial last cycle is in
  ``N_r``).  Then ``v_s = (c0 T_s + c1 T_{s+1} + [s = 0] c0 B) / sigma`` and
  ``Z = (1/k) sum_s exp(v_s - G_ss / (2 sigma^2))`` is the likelihood ratio ``dQ/dP``;
  remove: ``E_P[(Z - e^eps)_+]``; add: ``E_P[(1 - e^eps Z)_+]``.
* Remove: ``(Z - g)_+`` is convex in each ``T_r`` (and ``B``) separately; replacing each
  independent coordinate by the "hat masses" of its law on a grid (a mean-preserving
  spread: the chord of a convex function lies above it) can only increase the
  expectation (Edmundson-Madansky, coordinate by coordinate).  The mass above the grid
  is bounded by ``E_P[Z 1{T_r > t_max}] = Q(T_r > t_max)``; the mass below is moved up to
  the grid's first point (``Z`` is increasing in every coordinate since ``C >= 0``).
* Add: ``(1 - g Z)_+`` is convex in each ``X_r = exp(lam T_r)``, ``lam = max(c) / sigma``
  (every term is ``X_r^{c_j / (sigma lam)}``, exponent in ``[0, 1]``: concave), so the
  hats are taken linear in ``X_r``; the mass below the grid is bounded by ``P(T_r <
  t_min)`` (the integrand is at most 1), the mass above is moved down to the last point.
* The sum over the cycle is a chain in ``T_1, ..., T_{k-1}`` given ``T_0`` (and ``B``):
  the state is ``(T_{s+1} point, partial sum)``; the partial sum is put on a grid
  ``{0} u {theta r^j}`` by an unbiased random rounding to its two neighbours (a
  martingale difference given all the ``T``'s, so Jensen on the convex final integrand
  makes the law of the rounded sum an upper bound); the last term is added exactly.
* Round-off: each term is enlarged (remove) or reduced (add) by 1e-12 relative; every
  rounded partial sum and rounding probability is moved one ulp in the safe direction
  (the differences are exact by Sterbenz); the weights are computed in mpmath (40
  digits) and rounded up; the non-negative sums are enlarged by 1e-8 relative and the
  final cancellation by its computed error bound.

A prototype to measure, not a library route; it prints per row: today's certified
epsilon, this bound's, the Monte Carlo estimate, the grid sizes and CPU seconds.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from benchmarks.dpmf_balls_in_bins import mc_epsilon

U = 2.0**-53


def delta_curve(n, k, c, sigma, eps_grid, *, points=41, width=8.0, rho=0.02, theta=1e-10,
                direction="remove"):
    """Certified upper bound on one direction's delta at every eps of ``eps_grid``.

    The grids, hat masses, tail bound and transfer steps are the library's
    (:mod:`dpacct.mechanisms.algorithms.bandmf_two_band`, built from this prototype);
    what stays here is the final step: the integrand summed over the exact last terms
    per ``T_0`` point, without the library's rounding of the law onto a log grid."""
    from dpacct.mechanisms.algorithms.bandmf_two_band import _grids, _step

    c0, c1 = (float(x) for x in c)
    up = direction == "remove"
    grids, half, tail = _grids(n, k, c0, c1, sigma, up, points, width)
    fac = (1 + 1e-12) if up else (1 - 1e-12)

    def term(s, a, b, extra=0.0):
        return np.exp(-half[s] + (c0 * a + c1 * b + extra) / sigma) / k * fac

    # the partial-sum grid: 0, then theta * e^(rho j) up to above the largest sum
    smax = sum(float(term(s, grids[s][0][-1], grids[(s + 1) % k][0][-1],
                          c0 * grids[k][0][-1] if s == 0 else 0.0)) for s in range(k))
    m = math.ceil(math.log(smax * 2 / theta) / rho) + 2
    g = np.concatenate([[0.0], theta * np.exp(rho * np.arange(m))])
    gam = np.exp(np.asarray(eps_grid, dtype=float))
    gam = np.nextafter(np.nextafter(gam, -np.inf if up else np.inf), -np.inf if up else np.inf)
    acc = np.zeros(gam.size)
    err = np.zeros(gam.size)
    t0s, w0s = grids[0]
    tb, wb = grids[k]
    t1, w1 = grids[1]
    toward = np.inf if up else -np.inf
    for x0, wx0 in zip(t0s, w0s, strict=True):
        if wx0 == 0.0:
            continue
        # term 0 from (B, T_1) given T_0 = x0: state (T_1 point, partial sum)
        y = np.nextafter(term(0, x0, t1[None, :], c0 * tb[:, None]), toward)[:, :, None]
        d = _step(wb[:, None], g, y, w1, up)
        for s in range(1, k - 1):
            ta, _ = grids[s]
            tb2, wb2 = grids[s + 1]
            live = np.nonzero(d.any(axis=1))[0]
            top = int(np.nonzero(d.any(axis=0))[0][-1]) + 1  # cells with mass
            tt = term(s, ta[live][:, None], tb2[None, :])        # (a, b)
            y = np.nextafter(g[None, None, :top] + tt[:, :, None], toward)
            if not up:
                y = np.maximum(y, 0.0)
            d = _step(d[live, :top], g, y, wb2, up)
        # the last term, added exactly, and the integrand at every eps
        tl, _ = grids[k - 1]
        yl = g[None, :] + term(k - 1, tl, x0)[:, None]
        yl = np.nextafter(yl, np.inf if up else -np.inf)
        if not up:
            yl = np.maximum(yl, 0.0)
        keep = d > 0
        yv, wv = yl[keep], d[keep] * wx0
        order = np.argsort(yv)
        yv, wv = yv[order], wv[order]
        cw = np.cumsum(wv)
        cwy = np.cumsum(wv * yv)
        if up:  # sum over y > gamma of w (y - gamma)
            i = np.searchsorted(yv, gam, side="right")
            sw = cw[-1] - np.where(i > 0, cw[np.maximum(i - 1, 0)], 0.0)
            swy = cwy[-1] - np.where(i > 0, cwy[np.maximum(i - 1, 0)], 0.0)
            val = swy - gam * sw
            # cumsum round-off (cw[-1] and the prefix, each <= size * u relative)
            err += 4 * yv.size * U * (cwy[-1] + gam * cw[-1])
        else:  # sum over y < 1 / gamma of w (1 - gamma y)
            i = np.searchsorted(yv, 1.0 / gam, side="left")
            sw = np.where(i > 0, cw[np.maximum(i - 1, 0)], 0.0)
            swy = np.where(i > 0, cwy[np.maximum(i - 1, 0)], 0.0)
            val = sw - gam * swy
            err += 4 * yv.size * U * (sw + gam * swy) + 4 * U * cw[-1]
        acc += np.maximum(val, 0.0)
    total = acc * (1 + 1e-8) + err + tail
    return total, {"cells_T": points, "cells_S": g.size, "tail": tail}


def epsilon_upper(deltas: np.ndarray, eps_grid: np.ndarray, delta: float) -> float:
    ok = np.nonzero(deltas <= delta)[0]
    return float(eps_grid[ok[0]]) if ok.size else math.inf


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=41)
    ap.add_argument("--rho", type=float, default=0.02)
    ap.add_argument("--width", type=float, default=8.0)
    ap.add_argument("--mc", type=float, default=0.0)
    ap.add_argument("--rows", default="n4k2,n8k2,n8k4,n8k4_norm")
    args = ap.parse_args(argv)
    from dpacct.mechanisms.algorithms.bandmf_balls_in_bins import bandmf_balls_in_bins

    rows = {
        "n4k2": (4, 2, (1.0, 0.5), 2.0),
        "n8k2": (8, 2, (1.0, 0.5), 2.0),
        "n8k4": (8, 4, (1.0, 0.5), 2.0),
        "n8k4_norm": (8, 4, tuple(np.array([1.0, 0.5]) / math.sqrt(1.25)), 2.0),
    }
    delta = 1e-5
    print("machine loaded (7 helpers on 2 cores): CPU seconds (process_time)")
    print(f"{'row':10} {'today':>8} {'s':>6} {'transfer':>9} {'s':>6} {'cells T,S':>10} "
          f"{'MC est':>8} {'today/MC':>8} {'new/MC':>7}")
    for name in args.rows.split(","):
        n, k, c, sigma = rows[name]
        t0 = time.process_time()
        today = float(bandmf_balls_in_bins(sigma, n, cycle_length=k, strategy=list(c),
                                           two_band=False).epsilon(delta))
        t_today = time.process_time() - t0
        t0 = time.process_time()
        eps_grid = np.round(np.arange(0.0, 8.0, 0.001), 6)
        rem, info = delta_curve(n, k, c, sigma, eps_grid, points=args.points,
                                width=args.width, rho=args.rho, direction="remove")
        add, _ = delta_curve(n, k, c, sigma, eps_grid, points=args.points,
                             width=args.width, rho=args.rho, direction="add")
        new = epsilon_upper(np.maximum(rem, add), eps_grid, delta)
        t_new = time.process_time() - t0
        mc = math.nan
        if args.mc:
            mc = mc_epsilon(c, n, k, sigma, delta, int(args.mc))
        print(f"{name:10} {today:8.4f} {t_today:6.1f} {new:9.4f} {t_new:6.1f} "
              f"{info['cells_T']:>4},{info['cells_S']:<5} {mc:8.4f} {today / mc:8.3f} "
              f"{new / mc:7.3f}", flush=True)




if __name__ == "__main__":
    main()
