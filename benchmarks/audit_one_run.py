"""One-run audits: dpacct's ``audit_one_run`` beside JAX Privacy's auditor, and the gap
between an audit and the certified epsilon on a worked DP-SGD run.

Part 1 (peer table): fixed generated canary scores (every canary's score a ``mu``-GDP
release of its coin), audited by dpacct and by JAX Privacy's ``CanaryScoreAuditor``
(jax-privacy 2.0.0, live) in the same run; the lower bounds, their ratio and CPU time.
Four rows per estimator: the *same test* (one threshold fixed in advance, JAX's
``Explicit``), where dpacct must never be below JAX; each library's own threshold
search (dpacct: a union bound over the halving grid of guess counts; JAX: its
``Bonferroni`` strategy, which divides by the number of ROC-hull thresholds, a
label-dependent count); dpacct's own search beside JAX's search made valid (its
significance divided by all m + 1 candidate thresholds); and dpacct over every count
(``guesses="all"``) beside that valid JAX search, where dpacct must never be below.
Then null games (true epsilon 0): how often each library's own search reports epsilon
> 0 at nominal 5 % -- JAX's exceeds it at large m, so no valid search can be
pointwise above JAX's own.

Part 2 (worked example): DP-SGD in numpy on the suite's small model (the MLP
30-16-1 of tests/test_opacus.py, on scikit-learn's breast-cancer data), Poisson
sampling, per-sample clipping at C, Gaussian noise, the noise multiplier calibrated by
dpacct to epsilon 8 at delta 1e-5.  ``m`` white-box Dirac gradient canaries (Steinke,
Nasr & Jagielski 2023, Section 6; Nasr et al. 2023): canary ``j`` is a record whose
clipped gradient is ``C e_j`` on its own coordinate, inserted by a fair coin and then
sampled like every record; its score is the sum over steps of the released noisy
gradient's coordinate ``j`` ("sum"), or the per-step log-likelihood ratio of "a
Poisson-sampled ``C e_j`` was added" summed over steps ("lr"), or that ratio on the
residual after the auditor subtracts the clipped gradients of the other records, which it
computed itself ("res": each canary is then seen through exactly the accounted
subsampled-Gaussian step).  The audit's lower
bound is set beside the certified epsilon of the same run.

Run: ``python -m benchmarks.audit_one_run`` (a few CPU seconds).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from dpacct.accountant import compose, poisson_subsample
from dpacct.calibrators import noise_multiplier
from dpacct.mechanisms import GaussianMechanism, audit_one_run

DELTA = 1e-5
CONFIDENCE = 0.95


def _cpu(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` and its CPU seconds."""
    t = time.process_time()
    out = fn(*args, **kwargs)
    return out, time.process_time() - t


def peer_table(seed: int = 20261128) -> list[dict]:
    """dpacct beside JAX Privacy on the same generated scores."""
    from jax_privacy.auditing import CanaryScoreAuditor, Explicit

    rng = np.random.default_rng(seed)
    rows = []
    for mu, m in ((1.0, 200), (2.0, 1000), (4.0, 1000), (2.0, 5000)):
        inserted = rng.random(m) < 0.5
        s = rng.normal(mu * inserted, 1.0)
        s_in, s_out = s[inserted], s[~inserted]
        jax = CanaryScoreAuditor(s_in, s_out)
        # a threshold fixed in advance: the score one standard deviation above the
        # held-out mean plus half the shift (not looked up from the labels)
        t_fixed = mu / 2 + 1.0
        for est in ("steinke", "fdp"):
            jfun = jax.epsilon_one_run if est == "steinke" else jax.epsilon_one_run_fdp
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                j_fix, tj_fix = _cpu(jfun, 1 - CONFIDENCE, DELTA,
                                     threshold_strategy=Explicit(t_fixed))
                j_own, tj_own = _cpu(jfun, 1 - CONFIDENCE, DELTA)
                # JAX's search made valid: its hull count replaced by all m + 1
                # candidate thresholds (it divides its significance by the hull count)
                sig_valid = (1 - CONFIDENCE) * len(jax._fn_counts) / (m + 1)
                j_val, tj_val = _cpu(jfun, sig_valid, DELTA)
            ours = {"delta": DELTA, "confidence": CONFIDENCE, "estimator": est}
            if est == "fdp":  # JAX Privacy's f-DP audit is the Gaussian family's
                ours["family"] = "gaussian"
            o_fix, to_fix = _cpu(audit_one_run, s_in, s_out, threshold=t_fixed, **ours)
            o_own, to_own = _cpu(audit_one_run, s_in, s_out, **ours)
            o_all, to_all = _cpu(audit_one_run, s_in, s_out, guesses="all", **ours)
            for mode, o, j, to, tj in (("fixed threshold", o_fix, j_fix, to_fix, tj_fix),
                                       ("own search", o_own, j_own, to_own, tj_own),
                                       ("valid vs own", o_own, j_val, to_own, tj_val),
                                       ("all vs valid", o_all, j_val, to_all, tj_val)):
                rows.append({
                    "mu": mu, "m": m, "estimator": est, "mode": mode,
                    "dpacct": o.epsilon_lower, "jax": float(j),
                    "ratio": o.epsilon_lower / float(j) if j > 0 else float("nan"),
                    "dpacct_s": to, "jax_s": tj,
                })
    return rows


def null_rates(games: int = 1000, seed: int = 6) -> list[dict]:
    """Share of null games (scores independent of the coins: true epsilon 0) in which each
    library's own threshold search reports epsilon > 0, at nominal 1 - CONFIDENCE.  A
    valid search stays at or below it; JAX's ROC-hull Bonferroni does not at large m."""
    from jax_privacy.auditing import CanaryScoreAuditor

    rng = np.random.default_rng(seed)
    rows = []
    for m in (100, 1000, 10_000):
        over_j = over_o = 0
        for _ in range(games):
            inserted = rng.random(m) < 0.5
            s = rng.normal(0.0, 1.0, m)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                jax = CanaryScoreAuditor(s[inserted], s[~inserted])
                over_j += jax.epsilon_one_run(1 - CONFIDENCE, 1e-6) > 0
            over_o += audit_one_run(s[inserted], s[~inserted], delta=0.0).epsilon_lower > 0
        se = np.sqrt(CONFIDENCE * (1 - CONFIDENCE) / games)
        rows.append({"m": m, "games": games, "dpacct": over_o / games, "jax": over_j / games,
                     "se": se})
    return rows


def _mlp_per_sample_grads(theta, x, y):
    """Per-sample gradients of the BCE loss of the MLP 30-16-1 (ReLU), flattened as
    [W1 (30 x 16), b1 (16), w2 (16), b2 (1)]."""
    w1 = theta[:480].reshape(30, 16)
    b1, w2, b2 = theta[480:496], theta[496:512], theta[512]
    pre = x @ w1 + b1
    h = np.maximum(pre, 0.0)
    logit = h @ w2 + b2
    dlogit = 1.0 / (1.0 + np.exp(-logit)) - y
    dh = dlogit[:, None] * w2[None, :] * (pre > 0)
    g_w1 = (x[:, :, None] * dh[:, None, :]).reshape(x.shape[0], 480)
    return np.concatenate([g_w1, dh, dlogit[:, None] * h, dlogit[:, None]], axis=1)


def worked_dpsgd(
    seed: int = 7, canaries: int = 500, sample_rate: float = 0.1, steps: int = 300,
    clip: float = 1.0, lr: float = 0.5, epsilon: float = 8.0,
) -> dict:
    """The DP-SGD run with Dirac gradient canaries, its audits and its certified epsilon."""
    from sklearn.datasets import load_breast_cancer

    rng = np.random.default_rng(seed)
    data = load_breast_cancer()
    x = (data.data - data.data.mean(0)) / data.data.std(0)
    y = data.target.astype(float)
    sigma = noise_multiplier(epsilon=epsilon, delta=DELTA, sample_rate=sample_rate,
                             steps=steps)
    certified = compose([poisson_subsample(GaussianMechanism(sigma=sigma), sample_rate)],
                        counts=[steps])
    dim = 513
    theta = rng.normal(0.0, 0.1, dim)
    coords = rng.choice(dim, size=canaries, replace=False)  # one coordinate each
    inserted = rng.random(canaries) < 0.5
    per_step = np.empty((steps, canaries))
    residual = np.empty((steps, canaries))
    expected_batch = sample_rate * (x.shape[0] + inserted.sum())
    t0 = time.process_time()
    for t in range(steps):
        take = rng.random(x.shape[0]) < sample_rate
        g = _mlp_per_sample_grads(theta, x[take], y[take])
        norms = np.linalg.norm(g, axis=1, keepdims=True)
        total = (g / np.maximum(1.0, norms / clip)).sum(0)
        known = total[coords]  # the non-canary records' clipped sum on the canary axes
        sampled = inserted & (rng.random(canaries) < sample_rate)
        np.add.at(total, coords[sampled], clip)  # the Dirac canaries' clipped gradients
        noisy = total + rng.normal(0.0, sigma * clip, dim)
        per_step[t] = noisy[coords]  # white-box: the released update on each canary's axis
        residual[t] = noisy[coords] - known  # minus what the auditor's own records put there
        theta -= lr * noisy / expected_batch
    train_s = time.process_time() - t0
    acc = float(np.mean(((_mlp_per_sample_grads(theta, x, y)[:, 512] + y) > 0.5) == y))
    out = {"sigma": sigma, "certified": certified.epsilon(DELTA), "train_cpu_s": train_s,
           "train_accuracy": acc, "canaries": canaries, "steps": steps,
           "sample_rate": sample_rate}
    # three white-box scores: the sum of the canary's coordinate over the steps; the
    # log-likelihood ratio of "a Poisson(q)-sampled C e_j was added" per step (the
    # Neyman-Pearson statistic of the subsampled Gaussian, ignoring the other records);
    # the same ratio on the residual after subtracting the other records' clipped
    # gradients, which the auditor computed itself ("res").  DP holds against an
    # adversary who knows every other record, so the residual score is legitimate; it
    # sees each canary through exactly the accounted step, a Poisson(q)-sampled
    # Gaussian, and its per-step ratio is that step's Neyman-Pearson statistic.
    def llr(values):
        z = values / (sigma * clip)
        return np.logaddexp(np.log1p(-sample_rate),
                            np.log(sample_rate) + z / sigma - 0.5 / sigma**2).sum(0)

    for score_name, scores in (("sum", per_step.sum(0)), ("lr", llr(per_step)),
                               ("res", llr(residual))):
        for est, fam in (("steinke", None), ("fdp", "gaussian"), ("fdp", "eps_delta")):
            kw = {"family": fam} if fam else {}
            res, cpu = _cpu(audit_one_run, scores[inserted], scores[~inserted], delta=DELTA,
                            confidence=CONFIDENCE, estimator=est, upper=certified, **kw)
            out[f"{score_name}: " + est + (f"/{fam}" if fam else "")] = (res, cpu)
    return out


def main() -> None:
    print("Part 1: dpacct.audit_one_run beside JAX Privacy 2.0.0 CanaryScoreAuditor, "
          f"delta {DELTA:g}, confidence {CONFIDENCE} (CPU s; the machine was loaded)")
    print(f"{'mu':>4} {'m':>5} {'estimator':>8} {'mode':>16} {'dpacct':>9} {'jax':>9} "
          f"{'ratio':>7} {'dpacct s':>9} {'jax s':>7}")
    for r in peer_table():
        print(f"{r['mu']:4.1f} {r['m']:5d} {r['estimator']:>8} {r['mode']:>16} "
              f"{r['dpacct']:9.5f} {r['jax']:9.5f} {r['ratio']:7.4f} {r['dpacct_s']:9.3f} "
              f"{r['jax_s']:7.3f}")
    print("\nNull games (scores independent of the coins, true epsilon 0): share reporting "
          f"epsilon > 0 with each library's own search, nominal {1 - CONFIDENCE:.2f} "
          "(dpacct at delta 0, JAX at delta 1e-6)")
    for r in null_rates():
        print(f"  m={r['m']:6d}, {r['games']} games: dpacct {r['dpacct']:.4f}, JAX "
              f"{r['jax']:.4f} (standard error at the nominal level {r['se']:.4f})")
    names = tuple(f"{sc}: {e}" for sc in ("sum", "lr", "res")
                  for e in ("steinke", "fdp/gaussian", "fdp/eps_delta"))
    ratios: dict[str, list[float]] = {n: [] for n in names}
    for seed in range(5):
        w = worked_dpsgd(seed=seed)
        if seed == 0:
            print(f"\nPart 2: numpy DP-SGD, MLP 30-16-1 on breast cancer, q={w['sample_rate']}, "
                  f"T={w['steps']}, sigma={w['sigma']:.4f} (calibrated by dpacct to epsilon 8 "
                  f"at delta {DELTA:g}; certified epsilon {w['certified']:.4f}), "
                  f"{w['canaries']} Dirac gradient canaries, confidence {CONFIDENCE}")
        print(f"seed {seed}: training {w['train_cpu_s']:.2f} CPU s, accuracy "
              f"{w['train_accuracy']:.3f}")
        for name in names:
            res, cpu = w[name]
            mu = f", mu >= {res.mu_lower:.4f}" if res.mu_lower is not None else ""
            ratios[name].append(res.ratio)
            print(f"  {name:>18}: epsilon >= {res.epsilon_lower:.4f}{mu} ({res.correct}/"
                  f"{res.guesses} correct), lower / certified = {res.ratio:.4f}; "
                  f"{cpu:.3f} CPU s")
    print("gap ratio lower / certified at epsilon 8 over 5 seeds (median [min, max]):")
    for name in names:
        r = np.array(ratios[name])
        print(f"  {name:>18}: {np.median(r):.4f} [{r.min():.4f}, {r.max():.4f}]; "
              f"certified / lower {1 / np.median(r):.2f}")

if __name__ == "__main__":
    main()
