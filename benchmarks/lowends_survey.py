"""Are the lower ends of ``epsilon_bounds`` below the truth?  A survey per family.

    python -m benchmarks.lowends_survey                    # 200 cases per family
    python -m benchmarks.lowends_survey --cases 50 --json out.json
    python -m benchmarks.alternate --old /tmp/lowends_old --new . -- benchmarks.lowends_survey

For each mechanism family whose bracket has a lower end other than 0, random parameters
(log-uniform, edges included) and deltas log-uniform in ``[1e-300, 0.5]`` are drawn from
a seeded :class:`numpy.random.Generator`; the lower end ``lo`` of ``epsilon_bounds(delta)``
is checked against the true curve evaluated at 60 digits (``mpmath.workdps(60)``, closed
forms or exact sums, independent of dpacct's code): ``lo`` is above the true epsilon
exactly when ``delta_true(lo) < delta`` (every curve here is strictly decreasing where
positive).  A row per family: the cases, the violations, the largest relative excess
``(lo - eps_true) / eps_true`` (estimated as ``(delta - delta_true(lo)) / |slope|``, so
only its order of magnitude is meant), and the median relative width ``(hi - lo) / hi``.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import mpmath
import numpy as np

from dpacct.accountant import compose, poisson_subsample
from dpacct.accountant.mechanism import Mechanism
from dpacct.mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    PermuteAndFlip,
    PureDPMechanism,
    RandomizedResponse,
)

mpf = mpmath.mpf


def _loguni(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _rr_truth(p, q, e):
    """``(p - e^e q)_+`` for a two-outcome-class pair (P-mass p, Q-mass q on the top atom)."""
    return max(mpf(0), p - mpmath.exp(e) * q)


def _expit(x):
    return 1 / (1 + mpmath.exp(-x))


def _pure_truth(e0):
    e0 = mpf(e0)
    p = _expit(e0)
    return lambda e: _rr_truth(p, p * mpmath.exp(-e0), e)


def _gauss_truth(mu):
    mu = mpf(mu)
    return lambda e: (mpmath.ncdf(-e / mu + mu / 2) - mpmath.exp(e) * mpmath.ncdf(-e / mu - mu / 2))


def _dgauss_truth(sigma):
    s2 = mpf(sigma) ** 2
    reach = int(60 * sigma) + 20
    xs = range(-reach, reach + 2)
    z = mpmath.fsum(mpmath.exp(-mpf(x) ** 2 / (2 * s2)) for x in xs)

    def curve(e):
        out = []
        for x in xs:
            loss = (2 * mpf(x) - 1) / (2 * s2)
            if loss > e:
                px = mpmath.exp(-(mpf(x) - 1) ** 2 / (2 * s2)) / z
                out.append(px * (1 - mpmath.exp(e - loss)))
        return mpmath.fsum(out)

    return curve


def _composed_pure_truth(e1, n1, e2, n2):
    """Two binary RR pairs composed ``n1`` and ``n2`` times: sum over the outcome counts."""
    e1, e2 = mpf(e1), mpf(e2)
    p1, p2 = _expit(e1), _expit(e2)
    cells = []
    for j1 in range(n1 + 1):
        for j2 in range(n2 + 1):
            c = mpmath.binomial(n1, j1) * mpmath.binomial(n2, j2)
            pm = c * p1**j1 * (1 - p1) ** (n1 - j1) * p2**j2 * (1 - p2) ** (n2 - j2)
            loss = e1 * (2 * j1 - n1) + e2 * (2 * j2 - n2)
            cells.append((pm, loss))
    return lambda e: mpmath.fsum(pm * (1 - mpmath.exp(e - lo)) for pm, lo in cells if lo > e)


def _subsampled_pure_truth(e0, q):
    """Poisson subsampled binary RR(e0): both directions' two-outcome hockey sticks."""
    e0, q = mpf(e0), mpf(q)
    p = _expit(e0)
    a, b = (p, 1 - p), (1 - p, p)
    mix = tuple(q * x + (1 - q) * y for x, y in zip(a, b, strict=True))

    def curve(e):
        w = mpmath.exp(e)
        rem = sum(max(mpf(0), m - w * y) for m, y in zip(mix, b, strict=True))
        add = sum(max(mpf(0), y - w * m) for m, y in zip(mix, b, strict=True))
        return max(rem, add)

    return curve


def _family_draws(name: str, rng: np.random.Generator):
    """``(label, mechanism, truth curve)`` for one random member of family ``name``."""
    if name == "laplace" or name == "compose1_laplace":
        b = _loguni(rng, 1e-6, 1e8)
        m = LaplaceMechanism(b=b)
        if name == "compose1_laplace":
            m = compose([m], [1])
        e0 = 1 / mpf(b)
        return f"b={b!r}", m, lambda e: max(mpf(0), 1 - mpmath.exp((e - e0) / 2))
    if name in ("pure", "permute_flip", "from_pure_epsilon", "plain_exponential"):
        e0 = _loguni(rng, 1e-8, 700.0)
        m = {
            "pure": PureDPMechanism,
            "permute_flip": PermuteAndFlip,
            "from_pure_epsilon": Mechanism.from_pure_epsilon,
            "plain_exponential": lambda e: ExponentialMechanism(e, bounded_range=False),
        }[name](e0)
        return f"eps0={e0!r}", m, _pure_truth(e0)
    if name == "discrete_laplace":
        t = _loguni(rng, 1.5e-3, 1e8)
        return f"scale={t!r}", DiscreteLaplaceMechanism(scale=t), _pure_truth(1 / mpf(t))
    if name == "randomized_response":
        k = int(rng.choice([2, 3, 10, 1000]))
        p = 1.0 / k + (1.0 - 1.0 / k) * _loguni(rng, 1e-9, 0.999)
        if not p < 1.0:
            p = 0.99
        pm = mpf(p)
        return f"p={p!r},k={k}", RandomizedResponse(p=p, k=k), (
            lambda e: _rr_truth(pm, (1 - pm) / (k - 1), e)
        )
    if name in ("declared_rr", "declared_rr_down"):  # RR's curve through from_delta_curve
        k = int(rng.choice([2, 3, 10, 1000]))
        p = 1.0 / k + (1.0 - 1.0 / k) * _loguni(rng, 1e-9, 0.999)
        rr, pm = RandomizedResponse(p=p, k=k), mpf(p)
        down = {"delta_down": rr._delta_exact_down} if name == "declared_rr_down" else {}
        m = Mechanism.from_delta_curve(rr._delta_exact, name="rr", **down)
        return f"p={p!r},k={k}", m, lambda e: _rr_truth(pm, (1 - pm) / (k - 1), e)
    if name == "from_epsilon_delta":
        e0, d0 = _loguni(rng, 1e-6, 50.0), _loguni(rng, 1e-300, 1e-2)
        pm = (1 - mpf(d0)) * _expit(mpf(e0))
        return f"eps0={e0!r},d0={d0!r}", Mechanism.from_epsilon_delta(e0, d0), (
            lambda e: mpf(d0) + _rr_truth(pm, pm * mpmath.exp(-mpf(e0)), e)
        )
    if name == "bounded_range":
        e0 = _loguni(rng, 1e-6, 100.0)
        em = mpf(e0)
        return f"eps0={e0!r}", ExponentialMechanism(epsilon=e0), (
            lambda e: (mpmath.exp(em / 2) - mpmath.exp(min(e, em) / 2)) ** 2 / mpmath.expm1(em)
        )
    if name in ("gaussian", "gdp"):
        sigma = _loguni(rng, 1e-2, 1e4)
        m = GaussianMechanism(sigma=sigma) if name == "gaussian" else Mechanism.from_gdp(1 / sigma)
        mu = 1 / mpf(sigma) if name == "gaussian" else mpf(1 / sigma)
        return f"sigma={sigma!r}", m, _gauss_truth(mu)
    if name == "discrete_gaussian":
        sigma = _loguni(rng, 0.3, 20.0)
        return f"sigma={sigma!r}", DiscreteGaussianMechanism(sigma=sigma), _dgauss_truth(sigma)
    if name == "composed_pure_pld":
        e1, e2 = _loguni(rng, 0.05, 3.0), _loguni(rng, 0.05, 3.0)
        n1, n2 = int(rng.integers(1, 12)), int(rng.integers(1, 12))
        m = compose([PureDPMechanism(e1), PureDPMechanism(e2)], [n1, n2])
        return f"eps=({e1!r},{e2!r}),n=({n1},{n2})", m, _composed_pure_truth(e1, n1, e2, n2)
    if name == "binomial_rr":  # n copies of one binary RR: the binomial closed form
        e0, n = _loguni(rng, 0.01, 5.0), int(rng.integers(2, 60))
        m = compose([PureDPMechanism(e0)], [n])
        return f"eps0={e0!r},n={n}", m, _composed_pure_truth(e0, n, e0, 0)
    if name == "subsampled_pure":
        e0, q = _loguni(rng, 0.01, 20.0), _loguni(rng, 1e-4, 0.9)
        m = poisson_subsample(PureDPMechanism(e0), q)
        return f"eps0={e0!r},q={q!r}", m, _subsampled_pure_truth(e0, q)
    raise ValueError(f"unknown family {name!r}")


#: family -> how many cases relative to ``--cases`` (the slow ones fewer)
FAMILIES = {
    "laplace": 1.0, "compose1_laplace": 1.0, "pure": 1.0, "permute_flip": 0.5,
    "from_pure_epsilon": 1.0, "plain_exponential": 0.5, "discrete_laplace": 1.0,
    "randomized_response": 1.0, "from_epsilon_delta": 1.0, "bounded_range": 1.0,
    "gaussian": 0.5, "gdp": 0.5, "discrete_gaussian": 0.15, "composed_pure_pld": 0.1,
    "binomial_rr": 0.25, "declared_rr": 0.5, "declared_rr_down": 0.5,
    "subsampled_pure": 0.25,
}


def _delta_draw(rng: np.random.Generator, i: int) -> float:
    edges = (1e-300, 5e-324 * 2**60, 0.5, 1e-16, 0.25)
    if i < len(edges):
        return edges[i]
    return _loguni(rng, 1e-300, 0.5)


def survey(name: str, cases: int, seed: int) -> dict:
    rng = np.random.default_rng([seed, sum(map(ord, name))])
    bad, worst, widths, examples, cpu, dump = 0, 0.0, [], [], 0.0, []
    for i in range(cases):
        with mpmath.workdps(60):  # the truths' constants are made at 60 digits too
            label, mech, truth = _family_draws(name, rng)
        delta = _delta_draw(rng, i)
        t0 = time.process_time()
        lo, hi = mech.epsilon_bounds(delta)
        cpu += time.process_time() - t0
        if hi > 0:
            widths.append((hi - lo) / hi)
        with mpmath.workdps(60):
            d_lo = truth(mpf(lo)) if lo > 0 else mpf(1)
            dump.append([label, delta, lo, hi, bool(d_lo >= delta)])
            if d_lo < delta:  # lo is above the true epsilon
                bad += 1
                h = mpf(lo) * mpf(2) ** -30 + mpf(2) ** -1074
                slope = (truth(mpf(lo) - h) - d_lo) / h
                excess = float((delta - d_lo) / slope / lo) if slope > 0 else math.inf
                worst = max(worst, excess)
                if len(examples) < 3:
                    examples.append(f"{label},delta={delta!r}: lo={lo!r}")
    return {
        "family": name, "cases": cases, "violations": bad, "worst_rel_excess": worst,
        "median_rel_width": float(np.median(widths)) if widths else 0.0,
        "cpu_seconds": cpu, "examples": "; ".join(examples), "cases_list": dump,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=35)
    parser.add_argument("--family", action="append", help="only these families")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--dump", help="write every case (label, delta, lo, hi, sound) here")
    args = parser.parse_args(argv)
    rows = []
    for name, share in FAMILIES.items():
        if args.family and name not in args.family:
            continue
        try:
            row = survey(name, max(3, int(args.cases * share)), args.seed)
        except TypeError as exc:  # a family this checkout cannot build (delta_down)
            print(f"{name:22s} not available here: {exc}", flush=True)
            continue
        rows.append(row)
        print(
            f"{name:22s} cases {row['cases']:4d}  violations {row['violations']:4d}  "
            f"worst excess {row['worst_rel_excess']:.2e}  median width "
            f"{row['median_rel_width']:.2e}  cpu {row['cpu_seconds']:.2f}s  {row['examples']}",
            flush=True,
        )
    if args.json:  # the examples are not a row's label (benchmarks.alternate matches rows)
        out = [{k: v for k, v in r.items() if k not in ("examples", "cases_list")} for r in rows]
        with open(args.json, "w") as fh:
            json.dump({"results": out}, fh, indent=1)
    if args.dump:
        with open(args.dump, "w") as fh:
            json.dump({r["family"]: r["cases_list"] for r in rows}, fh)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
