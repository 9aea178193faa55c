"""Random allocation's base split against 50-digit mpmath: is its rounding a soundness problem?

    python -m benchmarks.ra_base_split                    # the table of benchmarks/README.md
    python -m benchmarks.ra_base_split --sigmas 0.8 5 --steps 1000
    python -m benchmarks.ra_base_split --two-step         # T = 2 margins over the exact pair

:func:`~dpacct.accountant.transformers.random_allocation_pld._base_law` splits the
log-normal ``X`` (``log X ~ N(-1/(2 sigma^2), 1/sigma^2)``) of each cell ``[a, a + h]``
onto its two ends with the cell's first moment kept: ``right = (M - a m) / h`` goes to
``a + h`` (``m``, ``M`` the cell's mass and first moment, from ``ndtr`` differences).  The
numerator is about ``m h / 2``, so the rounding of ``M`` and ``a m`` is divided by ``h``.

What the module's proof (its docstring, 1.-2.) needs is that the split law ``X'`` dominates
``X`` in the convex order: equal means and ``E(X' - t)_+ >= E(X - t)_+`` at every ``t``.  The
exact split is *equal* to ``X`` in that functional at every node ``t = k h`` (the spread
only adds between nodes), so the node values are where a rounding error shows: the
deficit ``D_k = E(X' - kh)_+ - E(X - kh)_+`` (call side, remove direction) and
``P_k = E(kh - X')_+ - E(kh - X)_+`` (put side, add direction), both with the split's
absorbed high part (``q_hi``, ``s_hi``) counted as the module counts it.

For each ``(sigma, T)`` the step and the cut are those a
``random_allocation(GaussianMechanism(sigma), T).epsilon(1e-6)`` call uses (read by
instrumenting ``_base_law``; every caller in the library takes ``resolution = 1``).
Printed per setting:

* the cells and the largest ``a / h``;
* per cell (all cells up to ``--cells``, else half that many spread over the window,
  the ends included, and the other half the heaviest cells), against the same cell's
  mass and numerator at 50 digits on the exact nodes ``k h``: the largest relative
  error of ``right`` and the largest error in units of the cell's mass, and the net
  signed error ``sum h (right - right_true)`` over the cells checked divided by ``sum h
  |right - right_true|`` (``+1`` all up, ``-1`` all down); how many cells the ``clip``
  changed (both clips move mass down);
* the whole law, exactly (its entries summed as integers): total mass ``- 1`` and mean
  ``- 1``;
* at the nodes (all up to ``--nodes``, else half that many spread linearly and
  geometrically over the window and half over the cells of positive mass; the put side
  at ``kh <= T`` only, the others enter no answer at ``epsilon >= 0``): the least
  ``D_k`` and ``P_k`` (negative: a deficit) and the relative deficits ``rho_call =
  max(-D_k / E(X - kh)_+)``, ``rho_put = max(-P_k / E(kh - X)_+)`` over the nodes where
  that stop-loss is at least :data:`FLOOR`, ``T rho`` (below), the largest absolute
  deficit at the other nodes, and -- for comparison -- the largest relative error of
  the call's closed form ``ndtr(-sigma (log t - c)) - t ndtr(-sigma (log t + c))``
  evaluated in double at the same nodes (the rounding the edges' ``ndtr`` values carry
  by themselves, with no split in it).

How a base deficit reaches an answer.  Between nodes the split's stop-loss is the chord
of its node values and the truth's is convex (below its chord), so ``-D(u) <= rho_call
E(X - u)_+`` at every ``u`` once it holds at the nodes (likewise the put side).
Replacing the ``T`` exact terms by split ones one at a time, each replacement loses at
most ``rho`` times the stop-loss of the sum before it (condition on the other terms), so
``E(S' - t)_+ >= (1 - rho_call)^T E(S - t)_+`` and ``E(t - S')_+ >= (1 - rho_put)^T E(t -
S)_+``: the remove and add directions' delta fall at most ``T rho`` relative (plus, from
the nodes below :data:`FLOOR`, at most ``e^eps`` times their absolute deficit).  (The later
steps only add spread and certified round-off upwards.)  ``--two-step`` instead reads the
``T = 2`` law's margins over the exact pair (mpmath quadrature): the spread the split
and the pairwise sum add, which a deficit would have to exceed.
"""

from __future__ import annotations

import argparse
import math
from itertools import accumulate

import mpmath
import numpy as np
from scipy import special

#: the relative deficits are read where the stop-loss is at least this; below, the
#: absolute deficit is printed (it can move no answer of a delta above ~1e-15)
FLOOR = 1e-30
SIGMAS = (0.5, 0.6, 0.65, 0.8, 1.0, 2.0, 5.0, 50.0, 1e4)
STEPS = (1000, 10_000, 100_000)


class _Stop(Exception):
    pass


def base_settings(sigma: float, steps: int) -> tuple[float, float]:
    """``(step, top)`` that ``random_allocation(GaussianMechanism(sigma), steps)``'s first
    ``epsilon(1e-6)`` hands to ``_base_law`` (the call is stopped there)."""
    from dpacct.accountant.transformers import random_allocation_pld as ra
    from dpacct.accountant.transformers.random_allocation import random_allocation
    from dpacct.mechanisms import GaussianMechanism

    seen = []
    orig = ra._base_law

    def record(s, step, top):
        seen.append((s, step, top))
        raise _Stop

    ra._base_law = record
    try:
        random_allocation(GaussianMechanism(sigma=sigma), steps).epsilon(1e-6)
    except _Stop:
        pass
    finally:
        ra._base_law = orig
    if not seen:
        raise RuntimeError(f"sigma {sigma}, T {steps}: the call did not build the sum law")
    s, step, top = seen[-1]
    assert s == sigma
    return step, top


def _phi(z):
    """Normal CDF at ``z`` (mpmath, relative precision in both tails)."""
    return mpmath.erfc(-z / mpmath.sqrt(2)) / 2


def _truth_cell(sigma: float, h: float, k: int) -> tuple:
    """Mass and numerator ``int_{kh}^{(k+1)h} (x - kh) dF(x)`` at mp.dps digits."""
    s = mpmath.mpf(sigma)
    c = 1 / (2 * s * s)
    a, b = k * mpmath.mpf(h), (k + 1) * mpmath.mpf(h)
    if k == 0:
        m = _phi(s * (mpmath.log(b) + c))
        mom = _phi(s * (mpmath.log(b) - c))
        return m, mom
    za, zb = s * (mpmath.log(a) + c), s * (mpmath.log(b) + c)
    wa, wb = s * (mpmath.log(a) - c), s * (mpmath.log(b) - c)
    if za < 0:  # below the median: CDF differences
        m = _phi(zb) - _phi(za)
        mom = _phi(wb) - _phi(wa)
    else:  # survival differences
        m = _phi(-za) - _phi(-zb)
        mom = _phi(-wa) - _phi(-wb)
    return m, mom - a * m


def _truth_call(sigma: float, t) -> mpmath.mpf:
    """``E(X - t)_+`` at mp.dps digits (``t`` an mpf; ``1 - t`` at ``t <= 0``)."""
    if t <= 0:
        return 1 - mpmath.mpf(t)
    s = mpmath.mpf(sigma)
    c = 1 / (2 * s * s)
    lt = mpmath.log(t)
    return _phi(-s * (lt - c)) - t * _phi(-s * (lt + c))


def _truth_put(sigma: float, t) -> mpmath.mpf:
    """``E(t - X)_+ = t F(t) - E[X; X <= t]`` at mp.dps digits (0 at ``t <= 0``)."""
    if t <= 0:
        return mpmath.mpf(0)
    s = mpmath.mpf(sigma)
    c = 1 / (2 * s * s)
    lt = mpmath.log(t)
    return t * _phi(s * (lt + c)) - _phi(s * (lt - c))


def _density(sigma: float, t) -> mpmath.mpf:
    """The log-normal density of ``X`` at ``t`` (0 at 0)."""
    if t == 0:
        return mpmath.mpf(0)
    s = mpmath.mpf(sigma)
    z = s * (mpmath.log(t) + 1 / (2 * s * s))
    return s * mpmath.npdf(z) / t


def _as_ints(x: np.ndarray) -> tuple[list[int], int]:
    """Non-negative floats as integers times ``2^-shift`` (exact)."""
    mant, expo = np.frexp(x)
    mi = (mant * 2.0**53).astype(np.int64)
    e = expo.astype(np.int64) - 53
    shift = int(-e[mi > 0].min()) if np.any(mi > 0) else 0
    pairs = zip(mi.tolist(), (e + shift).tolist(), strict=True)
    out = [int(v) << int(sh) if v else 0 for v, sh in pairs]
    return out, shift


def _spread(n: int, count: int) -> np.ndarray:
    if n + 1 <= count:
        return np.arange(n + 1)
    lin = np.linspace(0, n, count // 2).astype(int)
    geo = np.geomspace(1, n, count // 2).astype(int)
    return np.unique(np.concatenate(([0, 1, 2, n - 1, n], lin, geo)))


def measure(sigma: float, step: float, top: float, steps: int, cells: int = 2000,
            nodes: int = 2000) -> dict:
    """The measurements of the module docstring for one ``(sigma, step, top)``."""
    from dpacct.accountant.transformers import random_allocation_pld as ra

    mpmath.mp.dps = 50
    n = math.floor(top / step)
    q, off, _, _, q_hi, s_hi = ra._base_law(sigma, step, top)
    assert off == 0 and q.size == n + 1
    # the library's line, re-evaluated per cell (q holds two cells' shares per entry)
    edges = np.arange(n + 1) * step
    mass, moment = ra._lognormal_cells(sigma, edges)
    num = moment - edges[:-1] * mass
    clipped = int(np.count_nonzero((num < 0) | (num > step * mass)))
    right = np.clip(num / step, 0.0, mass)
    h = mpmath.mpf(step)
    # per cell
    worst_rel = worst_mass = mpmath.mpf(0)
    signed = absolute = mpmath.mpf(0)
    heavy = np.argsort(mass)[-(cells // 2):]  # the bulk, where a bias would count
    for k in np.union1d(_spread(n - 1, cells // 2), heavy).tolist():
        m_t, num_t = _truth_cell(sigma, step, k)
        if m_t < 1e-300:  # subnormal masses (the clipped cells): counted in "clipped"
            continue
        r_t = num_t / h
        err = mpmath.mpf(float(right[k])) - r_t
        signed += h * err
        absolute += h * abs(err)
        if r_t > 0:
            worst_rel = max(worst_rel, abs(err) / r_t)
        worst_mass = max(worst_mass, abs(err) / m_t)
    # the whole law, exactly
    qi, shift = _as_ints(q)
    scale = mpmath.ldexp(mpmath.mpf(1), -shift)
    s0 = list(accumulate(reversed(qi)))[::-1]  # s0[k] = sum_{j >= k} q_j
    s1 = list(accumulate(reversed([j * v for j, v in enumerate(qi)])))[::-1]
    total_mass = s0[0] * scale + mpmath.mpf(q_hi)
    total_mean = h * s1[0] * scale + mpmath.mpf(s_hi)
    d_min = p_min = d_rel = p_rel = mpmath.inf
    d_far = p_far = mpmath.mpf(0)  # the deficits where the stop-loss is below FLOOR
    cf_rel = mpmath.mpf(0)
    c = 0.5 / (sigma * sigma)
    live = np.flatnonzero(mass > 0)  # the support: where the stop-loss moves
    dense = np.linspace(live[0], live[-1] + 1, nodes // 2).astype(int)
    for k in np.union1d(_spread(n, nodes // 2), dense).tolist():
        t = k * h
        code = h * (s1[k] - k * s0[k]) * scale + mpmath.mpf(s_hi) - t * mpmath.mpf(q_hi)
        call = _truth_call(sigma, t)
        d = code - call
        d_min = min(d_min, d)
        if call >= FLOOR:
            d_rel = min(d_rel, d / call)
            # the same node's closed form in double, from the same ndtr: the rounding the
            # edges alone carry, with no split in it
            tf = k * step
            cf = 1.0
            if k:
                lt = math.log(tf)
                cf = special.ndtr(-sigma * (lt - c)) - tf * special.ndtr(-sigma * (lt + c))
            cf_rel = max(cf_rel, abs(mpmath.mpf(float(cf)) - call) / call)
        else:
            d_far = max(d_far, -d)
        if t > steps:  # the put side at u > T enters no answer at epsilon >= 0
            continue
        # E(t - X')_+ = h sum_{j < k} (k - j) q_j and E(t - X)_+ = t F(t) - E[X; X <= t],
        # each directly (through put-call parity their difference would need far more
        # digits in the left tail)
        p = h * (k * (s0[0] - s0[k]) - (s1[0] - s1[k])) * scale - _truth_put(sigma, t)
        put = _truth_put(sigma, t)
        p_min = min(p_min, p)
        if put >= FLOOR:
            p_rel = min(p_rel, p / put)
        else:
            p_far = max(p_far, -p)
    return {
        "sigma": sigma, "step": step, "cells": n, "a_over_h": n - 1, "clipped": clipped,
        "cell_rel": float(worst_rel), "cell_mass": float(worst_mass),
        "net_sign": float(signed / absolute) if absolute else 0.0,
        "mass_err": float(total_mass - 1), "mean_err": float(total_mean - 1),
        "d_min": float(d_min), "d_rel": float(d_rel), "p_min": float(p_min),
        "p_rel": float(p_rel), "d_far": float(d_far), "p_far": float(p_far),
        "cf_rel": float(cf_rel),
    }


def two_step_truth(sigma: float, gamma: float) -> tuple:
    """``H_gamma(P||Q)`` and ``H_gamma(Q||P)`` of the exact pair at ``T = 2`` (mpmath).

    Remove: ``E(S/2 - gamma)_+ = E_{X_1}[E(X_2 - (2 gamma - X_1))_+] / 2``; add:
    ``E(1 - gamma S/2)_+ = (gamma/2) E_{X_1}[E((2/gamma - X_1) - X_2)_+]``; the inner
    expectations in closed form, the outer by ``mpmath.quad`` over ``log X_1``.
    """
    s = mpmath.mpf(sigma)
    c = 1 / (2 * s * s)
    g = mpmath.mpf(gamma)

    def dens(y):
        return s * mpmath.npdf(s * (y + c))

    lo = -c - 40 / s
    kink = mpmath.log(2 * g)
    # above the kink the inner call is linear: (1 - 2 gamma) P(X_1 > 2 gamma) + E[X_1; ...]
    rem_hi = (1 - 2 * g) * _phi(-s * (kink + c)) + _phi(-s * (kink - c))
    rem_lo = mpmath.quad(lambda y: dens(y) * _truth_call(sigma, 2 * g - mpmath.exp(y)),
                         mpmath.linspace(lo, kink, 9))
    kink_add = mpmath.log(2 / g)
    add = mpmath.quad(lambda y: dens(y) * _truth_put(sigma, 2 / g - mpmath.exp(y)),
                      mpmath.linspace(lo, kink_add, 9))
    return (rem_hi + rem_lo) / 2, g / 2 * add


def two_step_margins(sigma: float, epsilons=(0.0, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0)) -> list[tuple]:
    """``(epsilon, rel. margin remove, rel. margin add)`` of the ``T = 2`` law over the truth."""
    from dpacct.accountant.transformers.random_allocation_pld import allocation_sum_law

    mpmath.mp.dps = 30
    law = allocation_sum_law(sigma, 2, progress=False)
    out = []
    for eps in epsilons:
        gamma = math.exp(eps)
        rem, add = law.hockey_stick(gamma)
        t_rem, t_add = two_step_truth(sigma, gamma)
        def rel(ours, truth):
            return float((ours - truth) / truth) if truth > 0 else math.nan

        out.append((eps, rel(rem[0], t_rem), rel(add[0], t_add), float(t_rem), float(t_add)))
    return out


HEADER = ("| sigma | T | step | cells | clipped | right: max rel err | max err / mass "
          "| net sign | mass - 1 | mean - 1 | min D | rho_call | min P | rho_put "
          "| T rho: remove / add | deficit below 1e-30 | closed form in double |")


def row(sigma: float, steps: int, r: dict) -> str:
    e = lambda x: f"{x:+.1e}"  # noqa: E731
    return (f"| {sigma:g} | {steps:g} | {r['step']:.4g} | {r['cells']} | {r['clipped']} "
            f"| {r['cell_rel']:.1e} | {r['cell_mass']:.1e} | {r['net_sign']:+.2f} "
            f"| {e(r['mass_err'])} | {e(r['mean_err'])} | {e(r['d_min'])} "
            f"| {max(-r['d_rel'], 0.0):.1e} | {e(r['p_min'])} | {max(-r['p_rel'], 0.0):.1e} "
            f"| {steps * max(-r['d_rel'], 0.0):.1e} / {steps * max(-r['p_rel'], 0.0):.1e} "
            f"| {max(r['d_far'], r['p_far']):.1e} | {r['cf_rel']:.1e} |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sigmas", type=float, nargs="+", default=SIGMAS)
    ap.add_argument("--steps", type=int, nargs="+", default=STEPS)
    ap.add_argument("--cells", type=int, default=2000)
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--two-step", action="store_true",
                    help="the T = 2 law's margins over the exact pair instead")
    args = ap.parse_args(argv)
    if args.two_step:
        print("| sigma | epsilon | delta remove | margin remove | delta add | margin add |")
        print("| --- | --- | --- | --- | --- | --- |")
        for sigma in args.sigmas:
            for eps, mr, ma, tr, ta in two_step_margins(sigma):
                print(f"| {sigma:g} | {eps:g} | {tr:.3e} | {mr:+.2e} | {ta:.3e} | {ma:+.2e} |",
                      flush=True)
        return
    print(HEADER)
    print("|" + " --- |" * (HEADER.count("|") - 1))
    for sigma in args.sigmas:
        for t in args.steps:
            step, top = base_settings(sigma, t)
            print(row(sigma, t, measure(sigma, step, top, t, args.cells, args.nodes)),
                  flush=True)


if __name__ == "__main__":
    main()
