"""Dong & Özgür's Monte Carlo, composed over epochs, against dpacct's certified sigma (k = 2).

    python -m benchmarks.samplers_dong_ozgur_epochs                  # table (MC cached)
    python -m benchmarks.samplers_dong_ozgur_epochs --mc [--check-peer PATH]  # re-run MC

Dong & Özgür's accountant (github.com/dong-xin-ao-andy/bis-mc-accountant @ 74a1143;
``benchmarks/samplers_dong_ozgur.py``) estimates one allocation's hockey-stick
divergences by plain Monte Carlo of the exact likelihood ratio ``e_k(w) / C(T, k)``
(``w_t = exp(y_t / sigma^2 - 1 / (2 sigma^2))``) and calibrates sigma on it.  It has no
epochs.  Here its estimator is composed over ``E`` epochs the only way the composition
is defined: each draw's privacy loss is the sum of ``E`` independent epochs' exact
log-likelihood ratios (forward: draws under ``P`` with the record's steps the first
``k`` of each epoch, by symmetry; reverse: under ``Q``), and delta is
``E[(1 - e^{eps - L})_+]`` in each direction, the larger taken, as theirs.  Vectorised
for ``k = 2`` (``2 e_2 = (sum w)^2 - sum w^2``, shifted by the row's largest log weight);
``--check-peer PATH`` compares each epoch's log-likelihood ratio on 200 draws with the
peer's own ``bis_log_likelihood_ratio_from_log_weights``.  An estimate, not a bound.
Bisection on sigma with common random numbers (one seed at every sigma) to a relative
width of 2e-3, as ``samplers_dong_ozgur.mc_sigma``.

Columns: Poisson sigma (dpacct's certified ``noise_multiplier`` at rate ``k / T`` for
``T * E`` steps), MC sigma (cached in ``benchmarks/data/samplers_dong_ozgur_epochs.json``),
dpacct's certified sigma (``random_allocation_noise_multiplier(..., k=2, epochs=E)``)
and that of the blocks alone (``direct=False``), each with its CPU seconds, and the
recovered share ``(Poisson - dpacct) / (Poisson - MC)`` (target >= 90 %).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

CACHE = Path(__file__).resolve().parent / "data" / "samplers_dong_ozgur_epochs.json"

#: (name, T, k, epochs, epsilon, delta): Dong & Özgür's k2-T100-e8 grid point, per epoch
CONFIGS = (("k2-T100-e8-E2", 100, 2, 2, 8.0, 1e-5),)


def _epoch_llr(y: np.ndarray, sigma: float) -> np.ndarray:
    """Exact log-likelihood ratio ``log(e_2(w) / C(T, 2))`` of each row of ``y``."""
    t = y.shape[1]
    lw = y / sigma**2 - 0.5 / sigma**2
    m = lw.max(axis=1)
    w = np.exp(lw - m[:, None])
    s1, s2 = w.sum(axis=1), (w * w).sum(axis=1)
    return 2.0 * m + np.log(0.5 * (s1 * s1 - s2)) - math.log(t * (t - 1) / 2.0)


def mc_delta(t: int, e: int, sigma: float, eps: float, n: int, seed: int) -> dict:
    """Both directions' Monte Carlo delta at ``eps`` over ``e`` epochs, with standard errors."""
    out = {"sigma": sigma}
    for i, direction in enumerate(("forward", "reverse")):
        rng = np.random.default_rng(seed + 500000003 * i)
        s1 = s2 = 0.0
        done = 0
        while done < n:
            b = min(50_000, n - done)
            loss = np.zeros(b)
            for _ in range(e):
                y = rng.normal(0.0, sigma, (b, t))
                if direction == "forward":
                    y[:, :2] += 1.0
                loss += _epoch_llr(y, sigma)
            if direction == "reverse":
                loss = -loss
            c = -np.expm1(np.minimum(eps - loss, 0.0))
            s1 += float(c.sum())
            s2 += float((c * c).sum())
            done += b
        est = s1 / n
        out[direction] = est
        out[f"{direction}_se"] = math.sqrt(max(s2 / n - est * est, 0.0) / n)
    return out


def check_peer(bis_root: str, t: int = 100, sigma: float = 0.55, n: int = 200) -> float:
    """Largest absolute difference between :func:`_epoch_llr` and the peer's exact
    log-likelihood ratio on ``n`` draws (forward direction)."""
    sys.path.insert(0, bis_root)
    from symmetric_polynomial import bis_log_likelihood_ratio_from_log_weights

    rng = np.random.default_rng(7)
    y = rng.normal(0.0, sigma, (n, t))
    y[:, :2] += 1.0
    ours = _epoch_llr(y, sigma)
    lw = y / sigma**2 - 0.5 / sigma**2
    theirs = np.array([bis_log_likelihood_ratio_from_log_weights(row, 2) for row in lw])
    return float(np.max(np.abs(ours - theirs)))


def mc_sigma(t, e, eps, delta, lo, hi, n, seed) -> dict:
    """Bisect sigma until the larger direction's estimate meets ``delta`` (common seed)."""
    evals = []

    def worst(s: float) -> float:
        r = mc_delta(t, e, s, eps, n, seed)
        evals.append(r)
        print(f"    sigma {s:.5f}: forward {r['forward']:.3e}, reverse {r['reverse']:.3e}",
              flush=True)
        return max(r["forward"], r["reverse"])

    from benchmarks.samplers_dong_ozgur import bisect_sigma

    return bisect_sigma(worst, evals, delta, lo, hi)


def _poisson(t, k, e, eps, delta) -> float:
    from dpacct.calibrators import noise_multiplier

    return float(noise_multiplier(epsilon=eps, delta=delta, sample_rate=k / t, steps=t * e))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mc", action="store_true", help="re-run the Monte Carlo")
    ap.add_argument("--check-peer", metavar="PATH", help="bis-mc-accountant checkout")
    ap.add_argument("--samples", type=int, default=2_000_000)
    ap.add_argument("--seed", type=int, default=20260507)
    ap.add_argument("--json", metavar="PATH", help="write the table's rows here")
    args = ap.parse_args(argv)
    from benchmarks.checkouts import write_json

    if args.check_peer:
        print(f"largest |ours - peer's| log-likelihood ratio: {check_peer(args.check_peer):.2e}")
    if args.mc:
        cache = json.loads(CACHE.read_text()) if CACHE.exists() else {"rows": {}}
        for name, t, k, e, eps, delta in CONFIGS:
            sp = _poisson(t, k, e, eps, delta)
            print(f"{name}: Poisson {sp:.5f}", flush=True)
            c0 = time.process_time()
            r = mc_sigma(t, e, eps, delta, 0.85 * sp, sp, args.samples, args.seed)
            r.update(T=t, k=k, epochs=e, epsilon=eps, delta=delta,
                     n_per_direction=args.samples, seed=args.seed,
                     cpu_s=time.process_time() - c0,
                     command=f"python -m benchmarks.samplers_dong_ozgur_epochs --mc "
                     f"--samples {args.samples} --seed {args.seed}")
            cache["rows"][name] = r
            cache["what"] = ("sigma where the Monte Carlo max(H(P||Q), H(Q||P)) of the "
                             "exact pair composed over the epochs meets delta; an estimate")
            write_json(str(CACHE), cache)
            print(f"  MC sigma {r['sigma_mc']:.5f} (rel se {r['rel_se']:.2f})", flush=True)
        return 0
    from dpacct.calibrators import random_allocation_noise_multiplier

    cache = json.loads(CACHE.read_text()) if CACHE.exists() else {"rows": {}}
    print("| config | T | k | epochs | eps | delta | Poisson sigma | MC sigma | MC se "
          "| blocks sigma | blocks s | dpacct sigma | dpacct s | recovered % (blocks) |")
    print("| --- " * 14 + "|")
    rows = []
    for name, t, k, e, eps, delta in CONFIGS:
        sp = _poisson(t, k, e, eps, delta)
        c0 = time.process_time()
        sb = random_allocation_noise_multiplier(eps, delta, t, k=k, epochs=e, direct=False)
        cb = time.process_time() - c0
        c0 = time.process_time()
        sd = random_allocation_noise_multiplier(eps, delta, t, k=k, epochs=e)
        cd = time.process_time() - c0
        mc = cache["rows"].get(name)
        row = dict(config=name, T=t, k=k, epochs=e, epsilon=eps, delta=delta, poisson=sp,
                   blocks=sb, blocks_s=cb, dpacct=sd, dpacct_s=cd)
        if mc:
            row.update(mc=mc["sigma_mc"], mc_rel_se=mc["rel_se"],
                       recovered=100 * (sp - sd) / (sp - mc["sigma_mc"]),
                       recovered_blocks=100 * (sp - sb) / (sp - mc["sigma_mc"]))
            cells = (f"{mc['sigma_mc']:.4f} | {mc['rel_se']:.2f} | {sb:.4f} | {cb:.1f} | "
                     f"{sd:.4f} | {cd:.1f} | {row['recovered']:.0f} "
                     f"({row['recovered_blocks']:.0f})")
        else:
            cells = f"- | - | {sb:.4f} | {cb:.1f} | {sd:.4f} | {cd:.1f} | -"
        rows.append(row)
        print(f"| {name} | {t} | {k} | {e} | {eps:g} | {delta:g} | {sp:.4f} | {cells} |",
              flush=True)
    if args.json:
        write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
