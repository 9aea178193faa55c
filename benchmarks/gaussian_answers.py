"""A Gaussian's answers, old checkout against new, and every differing one against mpmath.

The start-up work of issue 37 (session 47) moved the certified Gaussian curve from
SciPy's ``erfcx`` / ``log_ndtr`` / ``ndtri`` to the scalar functions of
:mod:`dpacct.accountant.families.normal_tails`, within the same error allowances.  The
certified answers may then move by a few ulps (a delta is the upper end of a certified
interval, which moves with the function values) or by one step of the certified grid
(an epsilon's end is the first point of a ``2^-46``-relative grid that the bounds
certify).  This script asks both checkouts the same questions, each in a fresh
interpreter (:func:`benchmarks._checkouts.run_in_checkout`), and reports how many
answers are bit-equal, how the others differ, and checks every differing answer against
the exact curve at 60 digits (for ``mu = 1 / sigma`` as a real number): a delta must be
at least the exact delta, an epsilon's upper end must have exact delta at most the
target, a lower end at least it.

    python -m benchmarks.gaussian_answers --old /work/main        # 2 000 questions
    python -m benchmarks.gaussian_answers --old /work/main --n 500 --seed 3

Then the same for a few routes that do not use the certified curve (:func:`others`),
which must be bit-equal.

Questions (seeded): ``sigma`` log-uniform in ``[0.02, 2000]``; ``epsilon(delta)`` and
``epsilon_bounds(delta)`` at ``delta`` log-uniform in ``[1e-15, 0.5]``; ``delta(eps)`` at
``eps = mu (mu / 2 + z)`` for ``z`` uniform in ``[-3, 30]`` (deltas from about 1 to 1e-200)
and ``eps`` log-uniform in ``[1e-6, 10]``; ``compose``: ``epsilon(delta)`` of that Gaussian
composed ``k`` times (``k`` log-uniform in ``[1, 10^4]``, a closed-form Gaussian of
``sigma / sqrt k``); ``analytic``: ``calibrators.analytic_gaussian_sigma(eps, delta)``,
``eps`` log-uniform in ``[0.01, 20]`` (the argument column holds ``delta``; its exact
check: the exact curve at ``1 / sigma`` and ``eps`` is at most ``delta``).
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

from benchmarks._checkouts import run_in_checkout

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def questions(n: int, seed: int) -> list[tuple[str, float, float]]:
    """``n`` seeded questions ``(kind, sigma, argument, extra)``, kinds ``epsilon``,
    ``bounds`` (``epsilon_bounds``), ``delta``, ``compose`` (``extra`` = the count) and
    ``analytic`` (``extra`` = the target epsilon; ``sigma`` unused)."""
    rng = np.random.default_rng(seed)
    out: list[tuple[str, float, float, float]] = []
    for i in range(n):
        sigma = float(10 ** rng.uniform(math.log10(0.02), math.log10(2000.0)))
        mu = 1.0 / sigma
        kind = ("epsilon", "bounds", "delta", "delta", "compose", "analytic")[i % 6]
        extra = 0.0
        if kind == "delta":
            if rng.random() < 0.5:
                arg = max(0.0, mu * (mu / 2 + float(rng.uniform(-3.0, 30.0))))
            else:
                arg = float(10 ** rng.uniform(-6, 1))
        else:
            arg = float(10 ** rng.uniform(-15, math.log10(0.5)))
        if kind == "compose":
            extra = float(round(10 ** rng.uniform(0, 4)))
        elif kind == "analytic":
            extra = float(10 ** rng.uniform(-2, math.log10(20.0)))
        out.append((kind, sigma, arg, extra))
    return out


def answers() -> list:
    """Every question's answer from the dpacct this interpreter imports (run in each
    checkout by :func:`main`; ``GAUSSIAN_ANSWERS`` = ``n,seed``)."""
    from dpacct import GaussianMechanism, compose
    from dpacct.calibrators.dpsgd import analytic_gaussian_sigma

    n, seed = (int(v) for v in os.environ["GAUSSIAN_ANSWERS"].split(","))
    out = []
    for kind, sigma, arg, extra in questions(n, seed):
        m = GaussianMechanism(sigma)
        if kind == "epsilon":
            out.append(m.epsilon(arg))
        elif kind == "bounds":
            out.append(list(m.epsilon_bounds(arg)))
        elif kind == "compose":
            out.append(compose([m], counts=[int(extra)]).epsilon(arg))
        elif kind == "analytic":
            out.append(analytic_gaussian_sigma(extra, arg))
        else:
            out.append(m.delta(arg))
    return out


def others() -> list:
    """Answers of routes that do not go through the certified Gaussian curve (they must
    stay bit-equal: session 47 changed only when their modules import ``scipy.special``):
    DP-SGD's epsilon and bracket, Laplace and randomized response, a subsampled RDP
    curve, the Gaussian trade-off (SciPy's array ``ndtri`` / ``ndtr``), a DP-SGD
    calibration, sampling without replacement, a Poisson-subsampled Laplace's delta."""
    import dpacct as dp
    from dpacct.mechanisms import replace_one

    g = dp.GaussianMechanism(1.1)
    step = dp.poisson_subsample(g, 0.01)
    return [
        dp.compose([step], [10_000]).epsilon(1e-5),
        list(dp.compose([step], [1000]).epsilon_bounds(1e-5)),
        dp.compose([dp.LaplaceMechanism(10.0)], counts=[100]).epsilon(1e-6),
        dp.RandomizedResponse(0.75).epsilon(1e-6),
        dp.compose([step], [100]).rdp([2, 4.5, 32]).tolist(),
        dp.GaussianMechanism(1.0).tradeoff([0.01, 0.1]).tolist(),
        dp.noise_multiplier(epsilon=3.0, delta=1e-5, sample_rate=0.01, steps=1000),
        dp.subsample_without_replacement(replace_one(dp.GaussianMechanism(2.0)), 0.1).epsilon(
            1e-6),
        dp.compose([dp.poisson_subsample(dp.LaplaceMechanism(2.0), 0.05)], [200]).delta(1.0),
    ]


def _exact_delta(sigma: float, eps: float, k: float = 1.0):
    """The exact curve at ``mu = sqrt(k) / sigma`` (real: ``k`` Gaussians of ``sigma``)
    and ``eps``, 60 digits plus what cancellation costs."""
    import mpmath

    with mpmath.workdps(60 + max(0, math.ceil(math.log10(sigma)))):
        m, e = mpmath.sqrt(mpmath.mpf(k)) / mpmath.mpf(sigma), mpmath.mpf(eps)
        return mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m)


def compare(qs, old, new) -> dict:
    """Counts of equal and differing answers, their relative moves, and the exact
    check of every differing answer (``unsound`` must stay empty)."""
    report = {"equal": 0, "differ": 0, "higher": 0, "lower": 0, "max_rel": 0.0,
              "unsound": [], "by_kind": {}}
    for (kind, sigma, arg, extra), a, b in zip(qs, old, new, strict=True):
        pairs = list(zip(a, b, strict=True)) if kind == "bounds" else [(a, b)]
        for end, (x, y) in enumerate(pairs):
            label = kind if kind != "bounds" else ("bounds lo", "bounds hi")[end]
            kinds = report["by_kind"].setdefault(
                label, {"equal": 0, "differ": 0, "higher": 0, "lower": 0, "max_rel": 0.0})
            if x == y:
                report["equal"] += 1
                kinds["equal"] += 1
                continue
            report["differ"] += 1
            kinds["differ"] += 1
            side = "higher" if y > x else "lower"
            report[side] += 1
            kinds[side] += 1
            if math.isfinite(x) and x != 0.0:
                rel = abs(y - x) / abs(x)
                report["max_rel"] = max(report["max_rel"], rel)
                kinds["max_rel"] = max(kinds["max_rel"], rel)
            if kind == "delta":
                ok = y >= _exact_delta(sigma, arg)
            elif label == "bounds lo":
                ok = y == 0.0 or _exact_delta(sigma, y) >= arg
            elif kind == "compose":  # k Gaussians of sigma: one of sigma / sqrt(k)
                ok = _exact_delta(sigma, y, extra) <= arg
            elif kind == "analytic":  # y is a sigma at sensitivity 1, extra the epsilon
                ok = _exact_delta(y, extra) <= arg
            else:
                ok = _exact_delta(sigma, y) <= arg
            if not ok:
                report["unsound"].append((label, sigma, arg, x, y))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", default="/work/main", help="old checkout")
    parser.add_argument("--new", default=ROOT, help="new checkout (default: this one)")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=47)
    args = parser.parse_args(argv)
    os.environ["GAUSSIAN_ANSWERS"] = f"{args.n},{args.seed}"
    old = run_in_checkout("benchmarks.gaussian_answers", "answers", args.old)
    new = run_in_checkout("benchmarks.gaussian_answers", "answers", args.new)
    rep = compare(questions(args.n, args.seed), old, new)
    print(f"old = {args.old}, new = {args.new}, {args.n} questions (seed {args.seed})")
    print(f"answers: {rep['equal']} bit-equal, {rep['differ']} differ ({rep['higher']} "
          f"higher, {rep['lower']} lower; largest relative move {rep['max_rel']:.2e})")
    for label, c in sorted(rep["by_kind"].items()):
        print(f"  {label:<10} {c['equal']:>5} equal {c['differ']:>5} differ ({c['higher']}"
              f" higher, {c['lower']} lower, largest relative move {c['max_rel']:.2e})")
    print(f"differing answers checked against the exact curve: {len(rep['unsound'])} unsound")
    for row in rep["unsound"]:
        print("  UNSOUND", row)
    old_o = run_in_checkout("benchmarks.gaussian_answers", "others", args.old)
    new_o = run_in_checkout("benchmarks.gaussian_answers", "others", args.new)
    same = sum(a == b for a, b in zip(old_o, new_o, strict=True))
    print(f"other routes (``others``): {same} of {len(old_o)} answers bit-equal")
    return 1 if rep["unsound"] else 0


if __name__ == "__main__":
    sys.exit(main())
