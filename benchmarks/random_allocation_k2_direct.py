"""Issue 39 prototype: a direct (sum, max) upper bound for 2-of-T random allocation.

    python -m benchmarks.random_allocation_k2_direct            # T 2, 3, 10 checks + T 100 rows
    python -m benchmarks.random_allocation_k2_direct --quick    # fewer Monte Carlo samples
    python -m benchmarks.random_allocation_k2_direct --pointwise  # each inequality's own cost

A research prototype in numpy, NOT a library route and NOT yet certified: the
discretisation is on the safe side, the convolution power is the engine's rigorous
kernel (rounded up, no wrap: the second-largest event is charged), but the cell masses
and moments (scipy's ``ndtr``) and ``F(m)^T`` are not rounded outward.

One epoch's exact pair at ``k = 2`` (docs/theory/allocation_k_of_t.md):
``Q = N(0, sigma^2 I_T)``, ``P = mean over 2-subsets S of N(1_S, sigma^2 I_T)``,
likelihood ratio ``L = e_2(Y) / C(T, 2)`` with ``Y_t = exp((x_t - 1/2) / sigma^2)``
i.i.d. log-normal under ``Q`` (``log Y ~ N(-1/(2 sigma^2), 1/sigma^2)``, ``E Y = 1``), and
the remove direction ``H_gamma(P || Q) = E_Q[(L - gamma)_+]``.

The bound.  Let ``M = max_t Y_t`` and ``R = sum_t Y_t - M`` (the other ``T - 1``).
``2 e_2 = (M + R)^2 - M^2 - R_2`` with ``R_2`` the others' sum of squares, and
``R_2 >= R^2 / (T - 1)`` (Cauchy-Schwarz), so pointwise

    ``L <= L'(M, R) = (2 M R + R^2 (T - 2) / (T - 1)) / (T (T - 1))``,

increasing in ``M`` and increasing convex in ``R``.  Given ``M = m`` the others are
i.i.d. ``Y | Y <= m`` (ties have probability 0), stochastically below ``Y | Y <= c`` for
every ``c >= m``.  So with ``M`` cells ``(m_{j-1}, m_j]`` of exact probability
``F(m_j)^T - F(m_{j-1})^T``,

    ``E_Q[(L - gamma)_+] <= sum_j P(M in cell j) E[(L'(m_j, R_c) - gamma)_+]``,

``R_c`` the sum of ``T - 1`` i.i.d. ``Y | Y <= c`` for a coarse cut ``c >= m_j``, and each
term is replaced by a mean-preserving split onto a lattice of step ``h`` (convex-order
larger; ``(L'(m, r) - gamma)_+`` is increasing and convex in ``r``), summed by FFT.
The mass of ``M`` above the top cell is charged ``P_k(M > top)`` (``E_Q[L; A] = P(A)``).
The same holds per epoch for a product of epochs (the loss is increasing in each
epoch's ``L``), but only one epoch is measured here.  The add direction needs a lower
bound on ``L``; it is not attempted (the block pair's add direction is far smaller at
the rows measured: its epsilon is printed).

What it is compared with: a Monte Carlo of the exact ``L`` (plain at T 2, 3, 10;
importance-sampled at T 100), the block route (``epsilon``) and the certified lower end
(``epsilon_bounds``) of ``random_allocation``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import special

# the library route built from this prototype: its rigorous convolution power, and its
# binning of L'(m_j, r) with the charges of the dropped cells (here without its outward
# rounding: ops=0)
from dpacct.accountant.transformers.random_allocation_k2 import _bin_cells
from dpacct.accountant.transformers.random_allocation_k2 import _sum_power as _power


def _log_ndtr_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``Phi(b) - Phi(a)`` for ``a <= b``, on the side of the median where it does not cancel."""
    lo = special.ndtr(b) - special.ndtr(a)
    hi = special.ndtr(-a) - special.ndtr(-b)
    return np.where(a > 0, hi, lo)


def _term_law(sigma: float, cut: float, h: float, n: int) -> np.ndarray:
    """Mean-preserving split of ``Y | Y <= cut`` onto ``{0, h, ..., (n-1) h}``."""
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    top = min(math.ceil(cut / h), n - 1)
    edges = np.arange(top + 1) * h
    edges[-1] = cut
    with np.errstate(divide="ignore"):
        z = (np.log(edges) - mu0) / s0
    mass = _log_ndtr_diff(z[:-1], z[1:])  # P(Y in cell)
    mom = _log_ndtr_diff(z[:-1] - s0, z[1:] - s0)  # E[Y; cell]  (E Y = 1)
    norm = special.ndtr((math.log(cut) - mu0) / s0)
    mass, mom = mass / norm, mom / norm
    width = np.diff(edges)
    up = np.clip((mom - edges[:-1] * mass) / width, 0.0, mass)  # cell mean kept
    out = np.zeros(n)
    out[:top] += mass - up
    out[1 : top + 1] += up  # the last cell's upper end is cut <= top h: moved up to it
    return out


def _second_cut(sigma: float, t: int, charge: float) -> tuple[float, float]:
    """``(log b, P_2(A))``: ``A`` = at least two coordinates above ``b``, ``b`` the least
    with the union bound ``P_2(A) <= charge``, ``P_2`` the record-present law (2 shifted)."""
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2

    def p2(lb: float) -> float:
        ps = special.ndtr(-(lb - mu0 - 1 / sigma**2) / s0)
        pu = special.ndtr(-(lb - mu0) / s0)
        return ps * ps + 2 * (t - 2) * ps * pu + (t - 2) * (t - 3) / 2 * pu * pu

    lo, hi = mu0, mu0 + 40 * s0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if p2(mid) > charge else (lo, mid)
    return hi, p2(hi)


def summax_law(
    sigma: float, t: int, *, dl: float = 1e-3, h: float | None = None,
    coarse: float | None = None, lmax: float | None = None, dlog: float = 1e-4,
    drop: float = 1e-25, charge: float = 1e-9,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Atoms ``(L' values, Q-probabilities)`` and the charged mass, one epoch, k = 2.

    ``L'`` is rounded up onto a log grid of step ``dlog`` (atoms at ``e^{i dlog}``).  The
    charged mass (added to every delta) is: ``P_2(M > e^lmax)``; ``P_2(A)``, ``A`` = two
    coordinates above ``b`` (off ``A`` the others are ``<= min(M, b)``, so every cut is
    ``<= b``, the sum of the others is ``<= (T - 1) b`` and the linear convolution fits
    the FFT length: no wrap); and ``E[L'; cell]`` of the lattice cells and ``M`` cells
    dropped for their tiny mass."""
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    if lmax is None:
        lmax = 0.5 / sigma**2 + 8.0 / sigma  # shifted log Y 8 sd above its mean
    if coarse is None:
        coarse = 0.25 if t >= 50 else 0.02
    if h is None:
        h = 0.05 * max(1.0, math.expm1(1 / sigma**2) / 2)  # Var Y = e^{1/sigma^2} - 1
    lb, tail = _second_cut(sigma, t, charge)
    n = 1 << math.ceil(math.log2((t - 1) * math.exp(lb) / h + t + 2))
    lmin = mu0 + s0 * float(special.ndtri(1e-18 ** (1.0 / t)))  # P(M <= e^lmin) = 1e-18
    levels = np.arange(lmin, lmax + dl, dl)
    logF = special.log_ndtr((levels - mu0) / s0)
    cdf_t = np.exp(t * logF)
    w = np.diff(cdf_t, prepend=0.0)  # P(M in (m_{j-1}, m_j]); the first takes M <= m_0
    m = np.exp(levels)
    # P_2(M > e^lmax) <= 2 P(shifted > .) + (T - 2) P(unshifted > .)
    tail += 2 * special.ndtr(-(lmax - (mu0 + 1 / sigma**2)) / s0) + (t - 2) * special.ndtr(
        -(lmax - mu0) / s0
    )
    cuts = np.arange(lmin + coarse, lmax + coarse, coarse)
    nbin = math.ceil((math.log(2 * m[-1] * n * h + (n * h) ** 2) + 40) / dlog) + 2
    off = math.ceil(40 / dlog)  # log-grid index 0 is e^{-40}; below that goes to 0
    hist = np.zeros(nbin)
    r = np.arange(n) * h
    c_lo = -np.inf
    cache: dict[float, np.ndarray] = {}
    for c in cuts:
        sel = (levels > c_lo) & (levels <= c + 1e-12)
        c_lo = c + 1e-12
        if not sel.any():
            continue
        cut = min(c, lb)
        if cut not in cache:
            cache.clear()
            cache[cut] = _power(_term_law(sigma, math.exp(cut), h, n), t - 1)
        law = cache[cut]
        tail = _bin_cells(tail, hist, law, r, m, w, sel, t, off, drop=drop, ops=0.0,
                          dlog=dlog)
    vals = np.exp((np.arange(nbin) - off) * dlog)
    nz = hist > 0
    return vals[nz], hist[nz], float(tail)


def delta_bound(vals: np.ndarray, probs: np.ndarray, tail: float, eps: np.ndarray) -> np.ndarray:
    g = np.exp(np.atleast_1d(eps))
    order = np.argsort(vals)
    v, p = vals[order], probs[order]
    # E[(L' - g)_+] = sum_{v > g} p v - g sum_{v > g} p via suffix sums
    s1 = np.cumsum((p * v)[::-1])[::-1]
    s0 = np.cumsum(p[::-1])[::-1]
    i = np.searchsorted(v, g, side="right")
    a1 = np.where(i < v.size, s1[np.minimum(i, v.size - 1)], 0.0)
    a0 = np.where(i < v.size, s0[np.minimum(i, v.size - 1)], 0.0)
    return a1 - g * a0 + tail


def eps_of(delta_fn, delta: float, lo: float = 0.0, hi: float = 20.0) -> float:
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if delta_fn(mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def exact_L(x: np.ndarray, sigma: float, shift: float = 1.0) -> np.ndarray:
    """``e_2(Y) / C(T, 2)`` of each row, ``Y = exp((shift x - shift^2/2) / sigma^2)``."""
    t = x.shape[1]
    y = np.exp((shift * x - 0.5 * shift**2) / sigma**2)
    p1, p2 = y.sum(1), (y * y).sum(1)
    return (p1 * p1 - p2) / (t * (t - 1))


def mc_delta(sigma, t, eps, n, rng, chunk=200_000):
    """Plain Monte Carlo of ``E_Q[(L - e^eps)_+]`` (mean, standard error)."""
    g = np.exp(np.asarray(eps))
    s, ss, done = np.zeros(g.size), np.zeros(g.size), 0
    while done < n:
        b = min(chunk, n - done)
        L = exact_L(rng.normal(0.0, sigma, (b, t)), sigma)
        v = np.maximum(L[:, None] - g[None, :], 0.0)
        s += v.sum(0)
        ss += (v * v).sum(0)
        done += b
    mean = s / n
    return mean, np.sqrt(np.maximum(ss / n - mean**2, 0) / n)


def _proposal_draw(sigma, t, b, rng, wts, shifts):
    """``b`` draws of the proposal ``R = w_0 P + sum_a w_a P_a`` (``P_a``: one uniform
    coordinate shifted by ``a``, another by 1, an ordered pair), with ``Y = exp((x -
    1/2)/sigma^2)``, the exact ``L`` and the density ``dR/dQ`` at each draw."""
    x = rng.normal(0.0, sigma, (b, t))
    comp = rng.choice(len(wts), size=b, p=wts)
    i = rng.integers(0, t, b)
    j = (i + rng.integers(1, t, b)) % t
    x[np.arange(b), i] += np.take((1.0, *shifts), comp)
    x[np.arange(b), j] += 1.0
    y1 = np.exp((x - 0.5) / sigma**2)
    ex = exact_L(x, sigma)
    dens = wts[0] * ex
    for wa, a in zip(wts[1:], shifts, strict=True):
        ya = np.exp((a * x - 0.5 * a * a) / sigma**2)
        dens = dens + wa * (ya.sum(1) * y1.sum(1) - (ya * y1).sum(1)) / (t * (t - 1))
    return y1, ex, dens


def is_delta(sigma, t, eps, n, rng, shifts=(4.0, 5.5), chunk=20_000):
    """Importance-sampled ``E_Q[(L - e^eps)_+]``: proposal ``R = 0.3 P + sum_a 0.35 P_a``
    (:func:`_proposal_draw`)."""
    g = np.exp(np.asarray(eps))
    wts = (0.3,) + (0.7 / len(shifts),) * len(shifts)
    s, ss, done = np.zeros(g.size), np.zeros(g.size), 0
    while done < n:
        b = min(chunk, n - done)
        _, L, dens = _proposal_draw(sigma, t, b, rng, wts, shifts)
        v = np.maximum(L[:, None] - g[None, :], 0.0) / dens[:, None]
        s += v.sum(0)
        ss += (v * v).sum(0)
        done += b
    mean = s / n
    return mean, np.sqrt(np.maximum(ss / n - mean**2, 0) / n)


def pointwise_is(sigma, t, eps, n, rng, shifts, chunk=20_000):
    """Importance-sampled ``E_Q[(X - e^eps)_+]`` for ``X`` the exact ``L``, the (max, sum)
    bound ``L'`` and the (max, second, sum) bound (``R_2 >= M_2^2 + (R - M_2)^2 / (T-2)``),
    all on the same draws: how much each pointwise inequality costs before any grid."""
    g = np.exp(np.asarray(eps))
    wts = (0.3,) + (0.7 / len(shifts),) * len(shifts)
    acc = {k: np.zeros(g.size) for k in ("exact", "max_sum", "max2_sum")}
    done = 0
    while done < n:
        b = min(chunk, n - done)
        y1, ex, dens = _proposal_draw(sigma, t, b, rng, wts, shifts)
        ys = np.sort(y1, axis=1)
        big, second = ys[:, -1], ys[:, -2]
        rest = y1.sum(1) - big
        cs1 = (2 * big * rest + rest**2 * (t - 2) / (t - 1)) / (t * (t - 1))
        cs2 = (2 * big * rest + rest**2 - second**2 - (rest - second) ** 2 / (t - 2)) / (
            t * (t - 1))
        for k, v in (("exact", ex), ("max_sum", cs1), ("max2_sum", cs2)):
            acc[k] += (np.maximum(v[:, None] - g[None, :], 0.0) / dens[:, None]).sum(0)
        done += b
    return {k: v / n for k, v in acc.items()}


def _calibrate(fn, target: float, lo: float, hi: float, iters: int = 7) -> float:
    """Least sigma in [lo, hi] (bisection, rounded up) with ``fn(sigma) <= target``."""
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if fn(mid) <= target else (mid, hi)
    return hi


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--pointwise", action="store_true",
                    help="only the pointwise inequalities' cost (importance sampling)")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(20261129)
    if args.pointwise:
        print("## T 100, k 2: E_Q[(X - e^eps)_+] by importance sampling, 4e5 draws, same draws")
        for sigma, eps, shifts in ((1.0, [1.50, 1.52, 1.533, 1.555], (4.0, 5.5)),
                                   (0.4946, [7.37, 7.6, 8.0, 9.0], (2.5, 3.5))):
            res = pointwise_is(sigma, 100, eps, 400_000, rng, shifts)
            print(f"sigma {sigma:g}, eps {eps}")
            for k, v in res.items():
                print(f"  {k:9s}", " ".join(f"{x:.3e}" for x in v))
        return
    nmc = 200_000 if args.quick else 2_000_000
    print("## soundness at small T (sigma 1, k 2): bound >= Monte Carlo of the exact pair")
    print("| T | eps | (sum, max) bound | MC delta | MC se | bound / MC |")
    print("| --- | --- | --- | --- | --- | --- |")
    for t in (2, 3, 10):
        vals, probs, tail = summax_law(1.0, t)
        eps = np.array([0.5, 1.0, 2.0, 3.0])
        b = delta_bound(vals, probs, tail, eps)
        mc, se = mc_delta(1.0, t, eps, nmc, rng)
        for e, bb, mm, s in zip(eps, b, mc, se, strict=True):
            print(f"| {t} | {e:g} | {bb:.4e} | {mm:.4e} | {s:.1e} | {bb / mm:.3f} |", flush=True)
    from dpacct.accountant import random_allocation
    from dpacct.mechanisms import GaussianMechanism

    print()
    print("## T 100, k 2, one epoch: certified lower end, (sum, max), blocks; IS estimate")
    print("| sigma | delta | lower | (sum, max) | blocks | width now % | width (sum, max) % "
          "| (sum, max) CPU s | blocks add dir eps |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    opts = {1.0: {}, 0.4946: {"h": 4.0, "charge": 1e-8, "dl": 2e-3}}
    for sigma, delta, shifts in ((1.0, 1e-6, (4.0, 5.5)), (0.4946, 1e-5, (2.5, 3.5))):
        mech = random_allocation(GaussianMechanism(sigma), 100, k=2)
        lo, hi = mech.epsilon_bounds(delta)
        add = mech._epsilon_directions(delta, None)[1]
        c0 = time.process_time()
        vals, probs, tail = summax_law(sigma, 100, **opts[sigma])
        ours = eps_of(lambda e, v=vals, p=probs, tl=tail: float(delta_bound(v, p, tl, e)[0]),
                      delta)
        cpu = time.process_time() - c0
        print(f"| {sigma:g} | {delta:g} | {lo:.5f} | {ours:.5f} | {hi:.5f} "
              f"| {100 * (hi - lo) / hi:.2f} | {100 * (ours - lo) / ours:.2f} | {cpu:.1f} "
              f"| {add:.4f} |", flush=True)
        grid = np.linspace(lo, ours, 7)
        est, se = is_delta(sigma, 100, grid, 200_000 if args.quick else 1_000_000, rng, shifts)
        print(f"   IS estimate of delta at eps {np.round(grid, 4).tolist()} (target {delta:g}):")
        cells = (f"{v:.3e}(se {s:.0e})" for v, s in zip(est, se, strict=True))
        print("   " + " ".join(cells), flush=True)
    print()
    print("## Dong & Ozgur's T 100, k 2, eps 8, delta 1e-5: calibrated sigma")
    print("(Poisson 0.5359 and Monte Carlo 0.4811 from benchmarks/data/samplers_dong_ozgur.json;"
          " blocks 0.4946 from benchmarks/README.md)")
    c0 = time.process_time()

    def eps_at(sigma: float) -> float:
        v, p, tl = summax_law(sigma, 100, **opts[0.4946])
        return eps_of(lambda e: float(delta_bound(v, p, tl, e)[0]), 1e-5)

    at_blocks = eps_at(0.4946)
    sig = _calibrate(eps_at, 8.0, 0.478, 0.4946, iters=4 if args.quick else 5)
    rec = (0.5359 - sig) / (0.5359 - 0.4811)
    print(f"(sum, max) eps at the blocks' sigma 0.4946: {at_blocks:.4f}; (sum, max) sigma "
          f"{sig:.4f}; recovered {100 * rec:.0f} % of the MC reduction (blocks: 75 %); "
          f"CPU {time.process_time() - c0:.0f} s")


if __name__ == "__main__":
    main()
