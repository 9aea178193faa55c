"""The algorithms at full utility and speed, each against a plain numpy baseline, in one run.

    python -m benchmarks.algorithms            # everything (about a minute on one core)
    python -m benchmarks.algorithms --quick    # fewer iterations and trials

1. **NoisyGD speed.**  50 000 iterations of noisy gradient descent for linear
   regression (n = 5 000 rows, d = 10 features and an intercept), timed against the
   plain numpy loop a tutorial writes (the summed gradient ``Z^T (Z theta - y)`` from
   the data at every step, per-example gradients clipped row by row for the clipped
   variant).  dpacct draws its noise through the planned Gaussian releases (one per
   iteration) and uses the sufficient statistics ``Z^T Z``, ``Z^T y`` when the loss is
   squared and the sensitivity comes from declared bounds.
2. **Quantile error against bins.**  Quartiles of 1 000 draws from Exponential(scale
   20) clipped to [0, 100], pure epsilon = 1 (Laplace, sensitivity 1), mean L2 error of
   the three quartiles over many trials, at 70 / 250 / 500 / 1 000 / 5 000 bins:
   HistogramQuantiles (isotonic read-out), the same noisy counts read from raw
   cumulative sums normalised by the noisy total (numpy, written here), the same
   counts clipped at zero (the former read-out), and TreeQuantiles at the same epsilon.
3. **DP Theil-Sen error** at n = 100 and 1 000: x ~ N(0, 1) declared on [-3, 3]
   (``out_of_range="clip"``; the count of data sets that the strict default would have
   refused is shown), y = 2 x + 1 + N(0, 0.5^2), epsilon = 2 split over the two
   medians, k = 10 matchings; mean absolute slope and intercept errors against the
   non-private Theil-Sen (scipy) and least squares (numpy) on the same data.

Timings are wall-clock seconds (``time.perf_counter``) of one run in this process;
numbers depend on the machine, the ratios much less.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

QUARTILES = np.array([0.25, 0.5, 0.75])
BINS = (70, 250, 500, 1000, 5000)


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


# ----------------------------------------------------------------------------------
# 1. NoisyGD against a plain numpy loop
# ----------------------------------------------------------------------------------
def _regression_data(n: int, d: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.clip(X @ np.linspace(1.0, -1.0, d) + 0.1 * rng.normal(size=n), -1.0, 1.0)
    return X, y


def plain_loop(X, y, T, std, lr, rng, clip=None):
    """The tutorial's loop: full-data gradient every step, Gaussian noise, averaging."""
    n = X.shape[0]
    Z = np.hstack([X, np.ones((n, 1))])
    theta = np.zeros(Z.shape[1])
    total = np.zeros_like(theta)
    for _ in range(T):
        r = Z @ theta - y
        if clip is None:
            g = Z.T @ r
        else:
            G = r[:, None] * Z                                   # per-example gradients
            norms = np.linalg.norm(G, axis=1)
            g = (G * np.minimum(1.0, clip / np.maximum(norms, 1e-300))[:, None]).sum(0)
        theta = theta - lr * (g + rng.normal(0.0, std, size=g.shape)) / n
        total += theta
    return total / T


def noisy_gd_speed(quick: bool) -> None:
    from dpacct.mechanisms import NoisyGD

    T = 5_000 if quick else 50_000
    n, d = 5_000, 10
    X, y = _regression_data(n, d, 0)
    Z = np.hstack([X, np.ones((n, 1))])
    lsq = np.linalg.lstsq(Z, y, rcond=None)[0]
    rows = []
    setups = [
        ("declared bounds (theta_bound 2)", dict(x_bound=1.0, y_bound=1.0, theta_bound=2.0),
         None),
        ("declared bounds (adaptive GS_t)", dict(x_bound=1.0, y_bound=1.0), None),
        ("per-example clipping (C = 1)", dict(clip=1.0), 1.0),
    ]
    sigma = 50.0
    for name, kw, clip in setups:
        gd = NoisyGD(sigma=sigma, iterations=T, loss="linear", **kw)
        fit, t_ours = _timed(lambda gd=gd: gd.fit(X, y, rng=np.random.default_rng(1)))
        std = sigma * (clip if clip is not None else gd.sensitivity if not gd.adaptive
                       else gd.adaptive_sensitivity(np.linalg.norm(lsq)))
        theta_plain, t_plain = _timed(
            lambda std=std, clip=clip: plain_loop(X, y, T, std, 1.0,
                                                  np.random.default_rng(1), clip))
        err_ours = np.linalg.norm(np.append(fit.coef, fit.intercept) - lsq)
        err_plain = np.linalg.norm(theta_plain - lsq)
        rows.append((name, t_ours, t_plain, err_ours, err_plain))
    eps = NoisyGD(sigma=sigma, iterations=T, loss="linear", clip=1.0).epsilon(1e-5)
    print(f"\n## NoisyGD, {T} iterations, n = {n}, d = {d} (+ intercept), sigma = {sigma}, "
          f"epsilon(1e-5) = {eps:.3g}")
    print("\n| sensitivity | dpacct s | plain numpy loop s | ratio | "
          "||theta - lsq|| dpacct | plain |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, a, b, ea, eb in rows:
        print(f"| {name} | {a:.2f} | {b:.2f} | {a / b:.2f} | {ea:.4f} | {eb:.4f} |")
    print("\n(the plain loop's noise std is fixed at dpacct's declared-bound value; for the "
          "adaptive row it uses GS at the least-squares solution)")


# ----------------------------------------------------------------------------------
# 2. quantiles against bins
# ----------------------------------------------------------------------------------
def raw_cumsum_quantiles(noisy, qs, lower, upper):
    """Raw noisy cumulative sums over the noisy total, first crossing, linear inside."""
    cdf = np.cumsum(noisy) / np.sum(noisy)
    width = (upper - lower) / len(noisy)
    out = []
    for q in qs:
        j = int(np.argmax(cdf >= q))
        prev = cdf[j - 1] if j > 0 else 0.0
        frac = (q - prev) / (cdf[j] - prev) if cdf[j] > prev else 0.0
        out.append(lower + (j + min(max(frac, 0.0), 1.0)) * width)
    return np.array(out)


def quantile_errors(quick: bool) -> None:
    from dpacct.mechanisms import HistogramQuantiles, TreeQuantiles
    from dpacct.mechanisms.quantiles import quantiles_from_counts

    trials = 50 if quick else 300
    eps = 1.0
    print(f"\n## Quartiles of 1000 Exponential(20) draws clipped to [0, 100], pure epsilon "
          f"= {eps}, mean L2 error over {trials} trials")
    print("\n| bins | HistogramQuantiles (isotonic) | raw cumulative sums (numpy) | "
          "counts clipped at 0 (former) | TreeQuantiles | tree depth |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for bins in BINS:
        hist = HistogramQuantiles(lower=0.0, upper=100.0, bins=bins, scale=1.0 / eps,
                                  out_of_range="clip")
        depth = TreeQuantiles(lower=0.0, upper=100.0, bins=bins, scale=1.0).depth
        tree = TreeQuantiles(lower=0.0, upper=100.0, bins=bins, scale=depth / eps,
                             out_of_range="clip")
        rng = np.random.default_rng(bins)
        errs = {k: [] for k in ("iso", "raw", "clip", "tree")}
        for _ in range(trials):
            x = rng.exponential(20.0, size=1000)
            truth = np.quantile(np.minimum(x, 100.0), QUARTILES)
            rel = hist.release(x, rng=rng)
            errs["iso"].append(np.linalg.norm(rel.quantiles(QUARTILES) - truth))
            raw = raw_cumsum_quantiles(rel.noisy_counts, QUARTILES, 0.0, 100.0)
            errs["raw"].append(np.linalg.norm(raw - truth))
            clipped = quantiles_from_counts(np.maximum(rel.noisy_counts, 0.0), QUARTILES,
                                            0.0, 100.0)
            errs["clip"].append(np.linalg.norm(clipped - truth))
            errs["tree"].append(np.linalg.norm(tree.quantiles(x, QUARTILES, rng=rng) - truth))
        m = {k: float(np.mean(v)) for k, v in errs.items()}
        print(f"| {bins} | {m['iso']:.2f} | {m['raw']:.2f} | {m['clip']:.2f} | "
              f"{m['tree']:.2f} | {depth} |")


# ----------------------------------------------------------------------------------
# 3. DP Theil-Sen
# ----------------------------------------------------------------------------------
def theil_sen_errors(quick: bool) -> None:
    from scipy.stats import theilslopes

    from dpacct.mechanisms import DPTheilSen

    trials = 50 if quick else 200
    alg = DPTheilSen(epsilon=2.0, x_lower=-3.0, x_upper=3.0, pred_lower=-10.0,
                     pred_upper=10.0, k=10, out_of_range="clip")
    print(f"\n## DP Theil-Sen, epsilon = 2 (pure), k = 10, {trials} data sets per n: mean "
          "absolute error of slope / intercept (truth 2 / 1)")
    print("\n| n | refused by out_of_range='raise' | DP Theil-Sen slope | intercept | "
          "Theil-Sen (scipy) slope | intercept | least squares (numpy) slope | intercept |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n in (100, 1000):
        rng = np.random.default_rng(n)
        refused = 0
        e = {k: [] for k in ("dp_s", "dp_i", "ts_s", "ts_i", "ls_s", "ls_i")}
        for _ in range(trials):
            x = rng.normal(size=n)
            y = 2.0 * x + 1.0 + rng.normal(0.0, 0.5, size=n)
            refused += bool((np.abs(x) > 3.0).any())
            fit = alg.fit(x, y, rng=rng)
            ts = theilslopes(y, x)
            ls = np.linalg.lstsq(np.column_stack([x, np.ones(n)]), y, rcond=None)[0]
            for key, (s, i) in (("dp", (fit.slope, fit.intercept)),
                                ("ts", (ts[0], ts[1])), ("ls", (ls[0], ls[1]))):
                e[key + "_s"].append(abs(s - 2.0))
                e[key + "_i"].append(abs(i - 1.0))
        m = {k: float(np.mean(v)) for k, v in e.items()}
        print(f"| {n} | {refused} of {trials} | {m['dp_s']:.3f} | {m['dp_i']:.3f} | "
              f"{m['ts_s']:.3f} | {m['ts_i']:.3f} | {m['ls_s']:.3f} | {m['ls_i']:.3f} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations and trials")
    args = parser.parse_args(argv)
    noisy_gd_speed(args.quick)
    quantile_errors(args.quick)
    theil_sen_errors(args.quick)


if __name__ == "__main__":
    main()
