"""Issue 39, k = 3: where the truth lies in the bracket, by importance sampling (an ESTIMATE).

    python -m benchmarks.random_allocation_k3_truth 1.0 100 2.10,2.15,2.19 [--n 400000]

Measurement only: ``delta(eps) = E_Q[(Lambda_3 - e^eps)_+]`` (remove direction) of the exact
3-of-T pair, ``Lambda_3 = e_3(z) / C(T, 3)``, estimated by importance sampling from the
mixture over shifts ``a`` (weights ``w_a``) of ``P_3^{(a)}`` (the record's three steps
shifted by ``a`` instead of 1), whose density against ``Q`` is ``sum_a w_a e_3(z^{(a)}) /
C(T, 3)`` with ``z^{(a)}_t = exp((a x_t - a^2 / 2) / sigma^2)``; ``e_3`` by the recurrence
over the coordinates (no cancellation).  Prints the estimate, its standard error and
the remove-direction epsilon at which it crosses ``delta`` (linear in log delta between
the given points).  docs/theory/allocation_k_of_t.md, "k = 3, direct", cites its runs.
"""

from __future__ import annotations

import argparse
import math

import numpy as np


def _e3(z: np.ndarray) -> np.ndarray:
    e1 = np.zeros(z.shape[0])
    e2 = np.zeros(z.shape[0])
    e3 = np.zeros(z.shape[0])
    for j in range(z.shape[1]):
        e3 += e2 * z[:, j]
        e2 += e1 * z[:, j]
        e1 += z[:, j]
    return e3


def is_delta(sigma, t, eps, n, rng, shifts=(1.0, 2.5, 3.0, 3.5), weights=None, chunk=20_000,
             pointwise: int = 0, theta_sd: float = 3.4):
    """``(mean, se)`` of the importance-sampled remove-direction delta at each ``eps`` (of
    the exact ``Lambda_3``, or with ``pointwise`` 2 / 3 of :func:`_pointwise`'s bound)."""
    shifts = np.asarray(shifts, dtype=float)
    w = np.full(shifts.size, 1.0 / shifts.size) if weights is None else np.asarray(weights)
    g = np.exp(np.asarray(eps, dtype=float))
    c3 = t * (t - 1) * (t - 2) / 6.0
    s1, s2 = np.zeros(g.size), np.zeros(g.size)
    done = 0
    while done < n:
        b = min(chunk, n - done)
        x = rng.normal(0.0, sigma, (b, t))
        comp = rng.choice(shifts.size, size=b, p=w)
        idx = np.argsort(rng.random((b, t)), axis=1)[:, :3]
        x[np.arange(b)[:, None], idx] += shifts[comp][:, None]
        lam = _e3(np.exp((x - 0.5) / sigma**2)) / c3
        dens = np.zeros(b)
        for a, wa in zip(shifts, w, strict=True):
            dens += wa * _e3(np.exp((a * x - 0.5 * a * a) / sigma**2)) / c3
        if pointwise:
            lam = _pointwise(np.exp((x - 0.5) / sigma**2), sigma, t, pointwise, theta_sd)
        v = np.maximum(lam[:, None] - g[None, :], 0.0) / dens[:, None]
        s1 += v.sum(0)
        s2 += (v * v).sum(0)
        done += b
    m = s1 / n
    return m, np.sqrt(np.maximum(s2 / n - m * m, 0.0) / n)


def _pointwise(z: np.ndarray, sigma: float, t: int, levels: int,
               theta_sd: float = 3.4) -> np.ndarray:
    """Proposition 7's pointwise bound (``levels = 2``: ``V_1`` where ``M_2 <= theta``,
    ``V_2`` above; ``theta`` ``theta_sd`` standard deviations above the mean of an
    unshifted ``log Y``: the library's 3.4, session 22's 4.1), or (``levels = 3``) the
    (max, second, third, sum) bound ``(M_1 M_2 M_3 + e_2(M) R'' + e_1(M) k'' R''^2
    + C(T-3, 3) (R'' / (T-3))^3) / C(T, 3)`` with Cauchy-Schwarz and Maclaurin on the
    other ``T - 3``."""
    c3 = t * (t - 1) * (t - 2) / 6.0
    zs = np.sort(z, axis=1)
    m1, m2, m3 = zs[:, -1], zs[:, -2], zs[:, -3]
    tot = z.sum(1)
    if levels == 3:
        r = tot - m1 - m2 - m3
        n = t - 3
        k2 = (n - 1) / (2.0 * n) if n > 0 else 0.0
        k3 = (n * (n - 1) * (n - 2) / 6.0) / n**3 if n > 0 else 0.0
        return (m1 * m2 * m3 + (m1 * m2 + m1 * m3 + m2 * m3) * r + (m1 + m2 + m3) * k2 * r * r
                + k3 * r**3) / c3
    theta = np.exp(-0.5 / sigma**2 + theta_sd / sigma)
    r1, r2 = tot - m1, tot - m1 - m2
    v1 = (m1 * r1 * r1 * (t - 2) / (2 * (t - 1)) + math.comb(t - 1, 3) * (r1 / (t - 1)) ** 3) / c3
    v2 = (m1 * m2 * r2 + (m1 + m2) * r2 * r2 * (t - 3) / (2 * (t - 2))
          + math.comb(t - 2, 3) * (r2 / (t - 2)) ** 3) / c3
    return np.where(m2 <= theta, v1, v2)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sigma", type=float)
    ap.add_argument("t", type=int)
    ap.add_argument("eps", help="comma-separated epsilons")
    ap.add_argument("--n", type=int, default=400_000)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--shifts", default="1,2.5,3,3.5")
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--pointwise", type=int, default=0, help="2: Proposition 7's pointwise "
                    "bound; 3: the (max, second, third, sum) bound (same draws' law)")
    ap.add_argument("--theta-sd", type=float, default=3.4,
                    help="--pointwise 2: the split of M_2 in sd of log Y (session 22: 4.1)")
    args = ap.parse_args(argv)
    eps = np.array([float(e) for e in args.eps.split(",")])
    shifts = tuple(float(a) for a in args.shifts.split(","))
    rng = np.random.Generator(np.random.PCG64(args.seed))
    m, se = is_delta(args.sigma, args.t, eps, args.n, rng, shifts, pointwise=args.pointwise,
                     theta_sd=args.theta_sd)
    print(f"sigma {args.sigma:g}, T {args.t}, k 3, {args.n} draws, shifts {shifts}, "
          f"pointwise {args.pointwise}")
    for e, mm, s in zip(eps, m, se, strict=True):
        print(f"  eps {e:.4f}: delta {mm:.4e} +- {s:.1e}")
    ld = np.log(m)
    for i in range(eps.size - 1):
        lo, hi = ld[i], ld[i + 1]
        if lo >= np.log(args.delta) >= hi:
            f = (lo - np.log(args.delta)) / (lo - hi)
            cross = eps[i] + f * (eps[i + 1] - eps[i])
            print(f"  crosses delta {args.delta:g} at eps ~ {cross:.4f}")


if __name__ == "__main__":
    main()
