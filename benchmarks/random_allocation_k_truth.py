"""Issue 39, any k: where the truth lies in the bracket, by importance sampling (an ESTIMATE).

    python -m benchmarks.random_allocation_k_truth 1.0 100 4 2.4,2.5,2.6 [--n 200000]
    python -m benchmarks.random_allocation_k_truth 1.0 100 4 2.4,2.5,2.6 --levels 1,2

Measurement only: ``delta(eps) = E_Q[(Lambda_k - e^eps)_+]`` (remove direction) of the exact
k-of-T pair, ``Lambda_k = e_k(z) / C(T, k)`` with ``z_t = exp((x_t - 1/2) / sigma^2)``,
estimated by importance sampling from the mixture over shifts ``a`` (weights ``w_a``) of
``P_k^{(a)}`` (the record's ``k`` steps shifted by ``a`` instead of 1), whose density
against ``Q`` is ``sum_a w_a e_k(z^{(a)}) / C(T, k)``, ``z^{(a)}_t = exp((a x_t - a^2 / 2) /
sigma^2)``; ``e_k`` by the recurrence over the coordinates (no cancellation).  With
``--levels`` it also estimates, on the same draws, the pointwise upper bounds of
docs/theory/allocation_k_of_t.md ("k >= 4, direct"): ``levels = L`` splits off the ``L``
largest coordinates and bounds the others' ``e_j`` by Maclaurin's inequality,
``e_k <= sum_i e_i(M_1..M_L) C(T-L, k-i) (R_L / (T-L))^(k-i)``; ``L = 12`` is Proposition
9's split (``V_1`` where ``M_2 <= theta``, ``V_2`` above); a level written ``qL`` (``q1``,
``q12``, ``q123``) keeps the others' sum of squares too and bounds their ``e_j`` by Lemma 11
(``max_elementary_given_sums``; ``rL`` does so in the first region only, ``--sq-steps``
rounds the others onto a lattice first: session 28's measurements).  A certified law built from a
pointwise bound cannot be below that bound's own curve, so a bound whose estimate is
above the blocks' ``epsilon`` rules out the law.  Prints the estimates, their standard
errors and the epsilon at which each crosses ``delta`` (linear in log delta between the
given points).  At k = 3 it replaces session 22's ``benchmarks.random_allocation_k3_truth``
(same sampler, same draws for a seed: ``--levels 12 --theta-sd S`` is its ``--pointwise 2
--theta-sd S``, ``--levels 3`` its ``--pointwise 3``; sigma 1, T 10, 40 000 draws: the same
crossings, 5.6949 / 5.9106 / 5.7253); docs/theory/allocation_k_of_t.md cites its runs.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from dpacct.accountant.transformers.random_allocation_k_law_sq import (
    max_elementary_given_sums,
)


def elementary(z: np.ndarray, k: int) -> np.ndarray:
    """``e_0 .. e_k`` of each row of ``z >= 0`` (shape ``(n, k + 1)``), by the recurrence
    ``e_j <- e_j + z_t e_{j-1}`` over the columns (sums of non-negative terms only)."""
    e = np.zeros((z.shape[0], k + 1))
    e[:, 0] = 1.0
    for col in z.T:
        e[:, 1:] += e[:, :-1] * col[:, None]
    return e


def split_bound(z: np.ndarray, k: int, levels: int) -> np.ndarray:
    """``Lambda_k``'s pointwise upper bound with the ``levels`` largest coordinates kept
    and Maclaurin on the others: ``sum_i e_i(top) C(n, k-i) (R / n)^(k-i) / C(T, k)``,
    ``n = T - levels``, ``R`` the others' sum."""
    t = z.shape[1]
    zs = np.sort(z, axis=1)
    top = zs[:, t - levels:]
    r = zs[:, : t - levels].sum(1)
    n = t - levels
    et = elementary(top, min(k, levels))
    out = np.zeros(z.shape[0])
    for i in range(min(k, levels) + 1):
        j = k - i
        if j > n:
            continue
        mac = math.comb(n, j) * (r / n) ** j if j else np.ones_like(r)
        out += et[:, i] * mac
    return out / math.comb(t, k)


SQ_STEPS = [0.0, 0.0, 0.0, 0.0]  # --sq-steps: steps of (sum, squares), a cap, a ratio
_SPREAD = np.random.Generator(np.random.PCG64(28))  # the spread's draws (H < 0)


def split_bound_sq(z: np.ndarray, k: int, levels: int) -> np.ndarray:
    """As :func:`split_bound`, with the others' ``e_j`` bounded given their sum AND sum of
    squares (Lemma 11, ``max_elementary_given_sums``) instead of Maclaurin's inequality on
    their sum.  With ``SQ_STEPS = [h, g]`` nonzero, each other's ``z`` is rounded up to a
    multiple of ``h`` and its ``z^2`` down to a multiple of ``g`` before summing (what a
    lattice law of the pair with those steps, by monotone rounding alone, would pay; a
    third entry ``cap`` caps each ``z^2`` there, which only lowers ``S``; a fourth, ``rho``,
    rounds the summed spread ``S - R^2 / n`` down to a power of ``rho``, as a lattice's
    coarse axis could after the convolution power);
    ``h < 0``: ``z`` spread onto the two multiples of ``|h|`` around it with its mean kept
    (a chord law's per-coordinate spread, drawn once per coordinate)."""
    t = z.shape[1]
    zs = np.sort(z, axis=1)
    top = zs[:, t - levels:]
    low = zs[:, : t - levels]
    h, g, cap, rho = SQ_STEPS
    if cap:
        low_sq = np.minimum(low * low, cap)
    else:
        low_sq = low * low
    if h < 0:  # a mean-preserving spread onto the multiples of |h|, one draw per z
        lo = np.floor(low / -h) * -h
        r = (lo - h * (_SPREAD.random(low.shape) < (low - lo) / -h)).sum(1)
    else:
        r = (np.ceil(low / h) * h if h else low).sum(1)
    s = (np.floor(low_sq / g) * g if g else low_sq).sum(1)
    n = t - levels
    if rho:  # the spread s - r^2 / n rounded down to a power of rho (after the sum)
        w = np.maximum(s - r * r / n, 1e-300)
        s = r * r / n + rho ** np.floor(np.log(w) / math.log(rho))
    et = elementary(top, min(k, levels))
    out = np.zeros(z.shape[0])
    for i in range(min(k, levels) + 1):
        if k - i <= n:
            out += et[:, i] * max_elementary_given_sums(r, s, n, k - i)
    return out / math.comb(t, k)


def _bound(z: np.ndarray, sigma: float, k: int, level, sds: float = 4.1,
           sds3: float = 2.0) -> np.ndarray:
    """``level`` 12: Proposition 9's split (``V_1`` if ``M_2 <= theta`` else ``V_2``;
    ``theta`` ``sds`` standard deviations above the mean of an unshifted ``log z``);
    ``level`` 123: Proposition 10's (``V_1`` if ``M_2 <= theta``, else ``V_2`` if
    ``M_3 <= theta_3`` (``sds3`` standard deviations), else ``V_3``); else
    :func:`split_bound`; a level written ``qL`` (``q12``, ``q123``, ``q4``) is the same
    with the others' sum of squares kept too (:func:`split_bound_sq`), ``r12`` / ``r123``
    with it kept in the first region (``M_2 <= theta``) only, ``p12`` / ``p123`` in the
    others only (Proposition 12 keeps Proposition 10's first region)."""
    sb = s1 = split_bound
    if isinstance(level, str):  # "q": squares kept in every region; "r": in region 1
        # only; "p": in regions 2 and 3 only (Proposition 12's split)
        s1 = split_bound if level[0] == "p" else split_bound_sq
        sb = split_bound_sq if level[0] in "qp" else split_bound
        level = int(level[1:])
    if level not in (12, 123):
        return sb(z, k, level)
    zs = np.sort(z, axis=1)
    theta = math.exp(-0.5 / sigma**2 + sds / sigma)
    out = np.where(zs[:, -2] <= theta, s1(z, k, 1), sb(z, k, 2))
    if level == 123:
        theta3 = math.exp(-0.5 / sigma**2 + sds3 / sigma)
        out = np.where((zs[:, -2] > theta) & (zs[:, -3] > theta3), sb(z, k, 3), out)
    return out


def is_delta(sigma, t, k, eps, n, rng, shifts=(1.0, 2.5, 3.0, 3.5), weights=None,
             chunk=20_000, levels=(), sds: float = 4.1, sds3: float = 2.0):
    """``{name: (mean, se)}`` of the importance-sampled remove-direction delta at each
    ``eps``: ``"exact"`` for ``Lambda_k``, ``L`` for each pointwise bound in ``levels``."""
    shifts = np.asarray(shifts, dtype=float)
    w = np.full(shifts.size, 1.0 / shifts.size) if weights is None else np.asarray(weights)
    g = np.exp(np.asarray(eps, dtype=float))
    ck = math.comb(t, k)
    names = ["exact", *levels]
    s1 = {m: np.zeros(g.size) for m in names}
    s2 = {m: np.zeros(g.size) for m in names}
    done = 0
    while done < n:
        b = min(chunk, n - done)
        x = rng.normal(0.0, sigma, (b, t))
        comp = rng.choice(shifts.size, size=b, p=w)
        idx = np.argsort(rng.random((b, t)), axis=1)[:, :k]
        x[np.arange(b)[:, None], idx] += shifts[comp][:, None]
        z = np.exp((x - 0.5) / sigma**2)
        dens = np.zeros(b)
        for a, wa in zip(shifts, w, strict=True):
            dens += wa * elementary(np.exp((a * x - 0.5 * a * a) / sigma**2), k)[:, k] / ck
        for name in names:
            lam = (elementary(z, k)[:, k] / ck if name == "exact"
                   else _bound(z, sigma, k, name, sds, sds3))
            v = np.maximum(lam[:, None] - g[None, :], 0.0) / dens[:, None]
            s1[name] += v.sum(0)
            s2[name] += (v * v).sum(0)
        done += b
    out = {}
    for name in names:
        m = s1[name] / n
        out[name] = (m, np.sqrt(np.maximum(s2[name] / n - m * m, 0.0) / n))
    return out


def crossing(eps: np.ndarray, delta_hat: np.ndarray, delta: float) -> float | None:
    """The epsilon where ``delta_hat`` (decreasing) crosses ``delta``, linear in log
    delta between the given points; None if it does not cross between them."""
    with np.errstate(divide="ignore"):
        ld = np.log(delta_hat)
    for i in range(eps.size - 1):
        if ld[i] >= math.log(delta) >= ld[i + 1]:
            f = (ld[i] - math.log(delta)) / (ld[i] - ld[i + 1])
            return float(eps[i] + f * (eps[i + 1] - eps[i]))
    return None


def common_arguments(doc: str, shifts: str, seed: int) -> argparse.ArgumentParser:
    """The parser of the truth scripts' shared arguments (sigma, T, k, epsilons, draws,
    delta, the proposal's shifts, the generator's seed)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("sigma", type=float)
    ap.add_argument("t", type=int)
    ap.add_argument("k", type=int)
    ap.add_argument("eps", help="comma-separated epsilons")
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--shifts", default=shifts)
    ap.add_argument("--seed", type=int, default=seed)
    return ap


def main(argv: list[str] | None = None) -> None:
    ap = common_arguments(__doc__, "1,2.5,3,3.5", 20261129)
    ap.add_argument("--levels", default="", help="comma-separated pointwise bounds: L keeps "
                    "the L largest coordinates; 12 is Proposition 9's V_1 / V_2 split, 123 "
                    "Proposition 10's V_1 / V_2 / V_3 split; qL the same keeping the others' "
                    "sum of squares, rL keeping it in the first region only, pL in the others only")
    ap.add_argument("--theta-sd", type=float, default=4.1, help="the split of level 12, "
                    "in standard deviations of an unshifted log z above its mean")
    ap.add_argument("--theta3-sd", type=float, default=2.0, help="the second split of "
                    "level 123 (M_3), in standard deviations as --theta-sd")
    ap.add_argument("--sq-steps", default="0,0", help="H,G: levels q/r round each other's "
                    "z up to a multiple of H (H < 0: spread onto multiples of |H|, mean "
                    "kept) and z^2 down to one of G (0: exact); a third value caps each z^2, a "
                    "fourth rounds the sum's spread S - R^2/n down to a power of it")
    args = ap.parse_args(argv)
    eps = np.array([float(e) for e in args.eps.split(",")])
    shifts = tuple(float(a) for a in args.shifts.split(","))
    levels = tuple(v if v[0] in "qrp" else int(v) for v in args.levels.split(",") if v)
    SQ_STEPS[:] = ([float(v) for v in args.sq_steps.split(",")] + [0.0, 0.0])[:4]
    rng = np.random.Generator(np.random.PCG64(args.seed))
    res = is_delta(args.sigma, args.t, args.k, eps, args.n, rng, shifts, levels=levels,
                   sds=args.theta_sd, sds3=args.theta3_sd)
    print(f"sigma {args.sigma:g}, T {args.t}, k {args.k}, {args.n} draws, shifts {shifts}")
    for name, (m, se) in res.items():
        print_row(name, eps, m, se, args.delta)


def print_row(name, eps, m, se, delta) -> None:
    """One estimate's line: where it crosses ``delta`` and its values at ``eps``."""
    cells = ", ".join(f"{e:.4f}: {mm:.3e} +- {s:.0e}" for e, mm, s in zip(eps, m, se,
                                                                         strict=True))
    cross = crossing(eps, m, delta)
    at = f"{cross:.4f}" if cross is not None else "outside the points"
    print(f"  {name}: crosses {delta:g} at eps ~ {at}   ({cells})")


if __name__ == "__main__":
    main()
