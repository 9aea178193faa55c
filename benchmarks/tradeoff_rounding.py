"""Closed-form trade-off curves before and after their rounding down, against 50 digits.

    python -m benchmarks.tradeoff_rounding                       # this checkout alone
    python -m benchmarks.tradeoff_rounding --old-root /path/to/old/checkout

For every closed form (the Gaussian, a Gaussian composition, Laplace, k-ary randomized
response, pure DP, an ``(epsilon, delta)`` declaration, the bounded-range exponential
mechanism) at 120 false-positive rates from ``1e-300`` to 1, the value of
``Mechanism.tradeoff`` is compared with the curve evaluated at 50 digits (mpmath) from
the mechanism's exact parameters: how many values are above it (the promise is none),
and how far below it the values are (median and largest relative gap, at normal
rates and values).
With ``--old-root`` the same is printed for another checkout's library, in a child
process (its layers imported from that directory), so the two are side by side; and
``DpEventAccountant``'s Gaussian-DP estimate for three Gaussians.
"""

from __future__ import annotations

import argparse

from benchmarks._checkouts import run_in_checkout

#: the rows: (label, constructor source, truth kind, parameters)
ROWS = (
    ("gaussian sigma 0.7", "GaussianMechanism(0.7)", "gauss", (1 / 0.7,)),
    ("gaussian sigma 5", "GaussianMechanism(5.0)", "gauss", (1 / 5.0,)),
    ("3 x sigma 2 + 1 x sigma 0.9", "compose([GaussianMechanism(2.0), GaussianMechanism(0.9)], "
     "counts=[3, 1])", "gauss_mix", ((2.0, 3), (0.9, 1))),
    ("laplace b 0.3", "LaplaceMechanism(0.3)", "laplace", (0.3,)),
    ("laplace b 1/740", "LaplaceMechanism(1 / 740)", "laplace", (1 / 740,)),
    ("4-RR p 0.6", "RandomizedResponse(p=0.6, k=4)", "rr", (0.6, 4)),
    ("pure eps 2", "PureDPMechanism(2.0)", "kov", (2.0, 0.0)),
    ("(1, 1e-6) declared", "Mechanism.from_epsilon_delta(1.0, 1e-6)", "kov", (1.0, 1e-6)),
    ("bounded range eps 3", "ExponentialMechanism(epsilon=3.0)", "br", (3.0,)),
)

def fprs():
    import numpy as np

    return np.concatenate([np.logspace(-300, -1, 100), np.linspace(0.1, 0.99, 20)])


def values() -> dict:
    """Every row's ``tradeoff`` at :func:`fprs`, and three Gaussian-DP estimates."""
    import dp_accounting as dpa

    from dpacct.accountant import compose
    from dpacct.accountant.mechanism import Mechanism
    from dpacct.dp_accounting import DpEventAccountant
    from dpacct.mechanisms import (
        ExponentialMechanism,
        GaussianMechanism,
        LaplaceMechanism,
        PureDPMechanism,
        RandomizedResponse,
    )

    names = {"compose": compose, "Mechanism": Mechanism, "GaussianMechanism": GaussianMechanism,
             "LaplaceMechanism": LaplaceMechanism, "RandomizedResponse": RandomizedResponse,
             "PureDPMechanism": PureDPMechanism, "ExponentialMechanism": ExponentialMechanism}
    a = fprs()
    out = {label: [float(v) for v in eval(src, names).tradeoff(a)] for label, src, _, _ in ROWS}
    out["gdp"] = [DpEventAccountant().compose(dpa.GaussianDpEvent(s)).get_gdp_parameter_estimate()
                  for s in (0.8, 2.0, 5.0)]
    return out


def _truth(kind: str, params, x: float):
    import mpmath as mp
    from scipy import special

    def ndtri(v):
        v = mp.mpf(v)
        y = mp.mpf(float(special.ndtri(float(v))))
        for _ in range(8):
            y -= (mp.ncdf(y) - v) / mp.npdf(y)
        return y

    a = mp.mpf(x)
    if kind in ("gauss", "gauss_mix"):
        mu = (mp.mpf(params[0]) if kind == "gauss"
              else mp.sqrt(sum(c / mp.mpf(s) ** 2 for s, c in params)))
        return mp.ncdf(-ndtri(x) - mu)
    if kind == "laplace":
        m = 1 / mp.mpf(params[0])
        if a < mp.exp(-m) / 2:
            return 1 - mp.exp(m) * a
        return mp.exp(-m) / (4 * a) if a <= 0.5 else mp.exp(-m) * (1 - a)
    if kind == "rr":
        p, k = mp.mpf(params[0]), params[1]
        q = (1 - p) / (k - 1)
        return max(mp.mpf(0), 1 - p / q * a, 1 - p + q - a, q / p * (1 - a))
    if kind == "kov":
        e, d = mp.mpf(params[0]), mp.mpf(params[1])
        return max(mp.mpf(0), 1 - d - mp.exp(e) * a, mp.exp(-e) * (1 - d - a))
    e = mp.mpf(params[0])
    return (1 - a) / (1 + mp.expm1(e) * a)


def _run(root: str | None) -> dict:
    """:func:`values` in a child process, for this checkout or ``root``'s library."""
    return run_in_checkout("benchmarks.tradeoff_rounding", "values", root)


def compare(roots: list[tuple[str, str | None]]) -> list[dict]:
    """One line per row and checkout: values above the 50-digit curve, and the gaps."""
    import mpmath as mp
    import numpy as np

    a = fprs()
    runs = {name: _run(root) for name, root in roots}
    lines = []
    with mp.workdps(50):
        for label, _, kind, params in ROWS:
            truth = [_truth(kind, params, float(x)) for x in a]
            for name, got in runs.items():
                above, gaps = 0, []
                for g, t, x in zip(got[label], truth, a, strict=True):
                    if mp.mpf(g) > t:
                        above += 1
                    elif t > 2.3e-308 and x > 2.3e-308:  # normal rates and values
                        gaps.append(float((t - mp.mpf(g)) / t))
                lines.append({"row": label, "checkout": name, "above": above,
                              "median_gap": float(np.median(gaps)) if gaps else 0.0,
                              "max_gap": max(gaps) if gaps else 0.0})
    gdp = {name: run["gdp"] for name, run in runs.items()}
    return lines, gdp


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old-root", help="another checkout of dpacct, compared side by side")
    args = parser.parse_args(argv)
    roots = [("this", None)] + ([("old", args.old_root)] if args.old_root else [])
    lines, gdp = compare(roots)
    head = f"{'row':30s} {'checkout':8s} {'above the truth':>16s}"
    print(f"{head} {'median gap':>11s} {'max gap':>9s}")
    for r in lines:
        print(f"{r['row']:30s} {r['checkout']:8s} {r['above']:>10d} / 120 {r['median_gap']:11.1e} "
              f"{r['max_gap']:9.1e}")
    for name, est in gdp.items():
        print(f"GDP estimate ({name}), sigma 0.8 / 2 / 5 (1/sigma: 1.25 / 0.5 / 0.2):",
              " ".join(f"{v:.9f}" for v in est))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
