"""Issue 39, several epochs: the composed exact pair's remove delta, importance-sampled (ESTIMATE).

    python -m benchmarks.random_allocation_k_epochs_truth 1.0 100 3 4.34,4.38,4.42 --epochs 5
    python -m benchmarks.random_allocation_k_epochs_truth 1.0 100 3 0 --epochs 5 --pld \\
        --n 1600000 --shifts 1,1.5,2,2.5,3

Measurement only, as :mod:`benchmarks.random_allocation_k_truth` for one epoch: the
remove direction of ``E`` composed epochs of the exact k-of-T pair is ``delta(eps) =
E_Q[(prod_e Lambda_k(x_e) - e^eps)_+]`` (independent epochs, ``Lambda_k = e_k(z) / C(T,
k)``); each draw takes one shift for all its epochs (``--per-epoch``: one per epoch), so
the proposal's density against ``Q`` is the mean over the shifts of the product of the
epochs' densities (the product of the epochs' mixture densities).  Prints the estimates,
their standard errors and the epsilon at which they cross ``delta``.  The weights are
heavy-tailed at several epochs (sigma 1, T 100, 5 epochs: +-10 % at 4e5 draws), so
``--pld`` instead composes an importance-sampled histogram of one epoch's loss
(:func:`pld_epochs`: +-0.003 in epsilon at 4e5 draws).
"""

from __future__ import annotations

import math

import numpy as np

from benchmarks.random_allocation_k_truth import _bound, common_arguments, elementary, print_row


def is_delta_epochs(sigma, t, k, epochs, eps, n, rng, shifts=(1.0, 1.5, 2.0),
                    chunk=10_000, common=True):
    """``(mean, se)`` of the importance-sampled remove delta of ``epochs`` composed epochs
    at each ``eps`` (explicit generator ``rng``).  ``common``: one shift per draw for all
    its epochs (the proposal's density against ``Q`` is the mean over the shifts of the
    product of the epochs' densities: close to an exponential tilt of the composition);
    else a shift per epoch (the product of the epochs' mixture densities)."""
    shifts = np.asarray(shifts, dtype=float)
    g = np.exp(np.asarray(eps, dtype=float))
    ck = math.comb(t, k)
    s1, s2 = np.zeros(g.size), np.zeros(g.size)
    done = 0
    while done < n:
        b = min(chunk, n - done)
        log_lam = np.zeros(b)
        log_prod = np.zeros((b, shifts.size))  # common: per shift, the product over epochs
        log_mix = np.zeros(b)  # per epoch: the sum of the log mixture densities
        comp = rng.integers(0, shifts.size, b)
        for _ in range(epochs):
            x = rng.normal(0.0, sigma, (b, t))
            if not common:
                comp = rng.integers(0, shifts.size, b)
            idx = np.argsort(rng.random((b, t)), axis=1)[:, :k]
            x[np.arange(b)[:, None], idx] += shifts[comp][:, None]
            one = np.stack([elementary(np.exp((a * x - 0.5 * a * a) / sigma**2), k)[:, k] / ck
                            for a in shifts], axis=1)
            log_prod += np.log(one)
            log_mix += np.log(one.mean(1))
            log_lam += np.log(elementary(np.exp((x - 0.5) / sigma**2), k)[:, k] / ck)
        if common:
            top = log_prod.max(1)
            log_mix = top + np.log(np.exp(log_prod - top[:, None]).mean(1))
        lam = np.exp(log_lam)
        v = np.maximum(lam[:, None] - g[None, :], 0.0) * np.exp(-log_mix)[:, None]
        s1 += v.sum(0)
        s2 += (v * v).sum(0)
        done += b
    m = s1 / n
    return m, np.sqrt(np.maximum(s2 / n - m * m, 0.0) / n)


def pld_epochs(sigma, t, k, epochs, delta, n, rng, shifts=(1.0, 1.5, 2.0, 2.5), batches=8,
               lo=-8.0, dl=1e-3, bins=1 << 14, chunk=20_000, level=None, sds=2.2,
               sds3=2.0):
    """The composed epsilon at ``delta`` from an importance-sampled histogram of one
    epoch's loss ``log Lambda_k`` under ``P_k`` (an ESTIMATE): the draws of the shift
    mixture weighted by ``Lambda_k / g`` (``g`` the mixture's density against ``Q``),
    binned on ``lo + j dl`` (the extremes into the end bins), the histogram's
    ``epochs``-fold convolution power by FFT, and the remove delta ``sum_l p(l) (1 -
    e^(eps - l))_+`` solved for ``eps``.  Returns ``(pooled, per batch)``: the pooled
    histogram's epsilon and each of ``batches`` independent batches' (their spread /
    sqrt(batches) is the standard error).  With ``level`` (as
    :func:`benchmarks.random_allocation_k_truth._bound`) the pointwise upper bound ``V``
    replaces ``Lambda_k``: the histogram of ``log V`` weighted by ``V / g`` is the measure
    ``V dQ``, and its convolution power gives ``E_Q[(prod_e V_e - e^eps)_+]``, the
    composed curve of a law that is exact for that bound."""
    shifts = np.asarray(shifts, dtype=float)
    ck = math.comb(t, k)
    per = n // batches
    hists = np.zeros((batches, bins))
    for bi in range(batches):
        done = 0
        while done < per:
            b = min(chunk, per - done)
            x = rng.normal(0.0, sigma, (b, t))
            comp = rng.integers(0, shifts.size, b)
            idx = np.argsort(rng.random((b, t)), axis=1)[:, :k]
            x[np.arange(b)[:, None], idx] += shifts[comp][:, None]
            g = np.mean([elementary(np.exp((a * x - 0.5 * a * a) / sigma**2), k)[:, k] / ck
                         for a in shifts], axis=0)
            z = np.exp((x - 0.5) / sigma**2)
            lam = (elementary(z, k)[:, k] / ck if level is None
                   else _bound(z, sigma, k, level, sds, sds3))
            j = np.clip(np.floor((np.log(lam) - lo) / dl + 0.5), 0, bins - 1).astype(int)
            hists[bi] += np.bincount(j, weights=lam / g, minlength=bins)
            done += b
        hists[bi] /= per

    def eps_of(h):
        size = 1 << math.ceil(math.log2(epochs * bins))
        p = np.maximum(np.fft.irfft(np.fft.rfft(h, size) ** epochs, size), 0.0)
        loss = epochs * lo + np.arange(size) * dl
        lo_e, hi_e = 0.0, float(loss[-1])
        for _ in range(60):
            e = 0.5 * (lo_e + hi_e)
            above = loss > e
            d = float(p[above] @ -np.expm1(e - loss[above]))
            lo_e, hi_e = (e, hi_e) if d > delta else (lo_e, e)
        return hi_e

    return eps_of(hists.mean(0)), [eps_of(h) for h in hists]


def main(argv: list[str] | None = None) -> None:
    ap = common_arguments(__doc__, "1,1.5,2", 20261130)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--per-epoch", action="store_true", help="a shift per epoch (default: "
                    "one shift per draw for all its epochs)")
    ap.add_argument("--level", default=None,
                    type=lambda v: v if v[:1] in ("q", "p", "r") else int(v),
                    help="with --pld: the pointwise bound (12, 123 or L; q12, q123 or qL with "
                    "the others' sum of squares kept; pL in regions 2-3 only, as Proposition "
                    "12; rL in the first region only) instead of the exact ratio")
    ap.add_argument("--theta-sd", type=float, default=2.2)
    ap.add_argument("--theta3-sd", type=float, default=2.0)
    ap.add_argument("--pld", action="store_true", help="compose an importance-sampled "
                    "histogram of one epoch's loss instead (pld_epochs; eps ignored)")
    args = ap.parse_args(argv)
    eps = np.array([float(e) for e in args.eps.split(",")])
    shifts = tuple(float(a) for a in args.shifts.split(","))
    rng = np.random.Generator(np.random.PCG64(args.seed))
    if args.pld:
        pooled, each = pld_epochs(args.sigma, args.t, args.k, args.epochs, args.delta,
                                  args.n, rng, shifts, level=args.level,
                                  sds=args.theta_sd, sds3=args.theta3_sd)
        se = float(np.std(each, ddof=1)) / math.sqrt(len(each))
        print(f"sigma {args.sigma:g}, T {args.t}, k {args.k}, {args.epochs} epochs, "
              f"{args.n} draws, shifts {shifts}, level {args.level}: composed histogram's "
              f"epsilon at {args.delta:g}: {pooled:.4f} +- {se:.4f} (batches {np.round(each, 4)})")
        return
    m, se = is_delta_epochs(args.sigma, args.t, args.k, args.epochs, eps, args.n, rng, shifts,
                            common=not args.per_epoch)
    print(f"sigma {args.sigma:g}, T {args.t}, k {args.k}, {args.epochs} epochs, {args.n} "
          f"draws, shifts {shifts}")
    print_row("exact", eps, m, se, args.delta)


if __name__ == "__main__":
    main()
