"""The peer-oracle cases too slow for the test suite: dpacct beside dp_accounting's PLD.

    python -m benchmarks.oracle_grids                  # every row (about 10 minutes)
    python -m benchmarks.oracle_grids --only 'mixture*' --json out.json

The test suite checks each of these mechanisms against dp_accounting on one case at a
coarse grid, inside the peer's own bracket (tests/test_mixture_gaussian.py,
tests/test_truncated_poisson.py).  The other cases and the fine grids the suite used to
run (a mixture PLD at interval 1e-5 takes minutes: dp_accounting finds a root per grid
point) are kept here.  Each row prints dpacct's bracket ``epsilon_bounds(delta)``
beside dp_accounting's pessimistic ``PrivacyLossDistribution`` (an upper bound) at the
row's value discretisation interval, the ratio of the two upper ends, both times, and
two checks: ``sound`` (dpacct's certified lower end is at or below the peer's upper
bound) and ``tight`` (dpacct's upper end is at most the peer's upper bound plus
dpacct's own bracket width).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import time
from collections.abc import Callable

DELTA = 1e-5


def _binomial_mixture(sigma: float, q: float, k: int) -> tuple[float, list[float], list[float]]:
    from scipy import stats

    pmf = stats.binom.pmf(range(k + 1), k, q)
    return sigma, [float(j) for j in range(k + 1)], [float(p) for p in pmf / pmf.sum()]


def _mixture_rows() -> list[tuple[str, Callable, Callable, int, float]]:
    from dpacct.accountant import MixtureOfGaussiansMechanism, user_level_dpsgd

    def mixture(sigma, sens, probs):
        def ours():
            return MixtureOfGaussiansMechanism(sigma, sens, probs)

        def peer(grid):
            from dp_accounting.pld import privacy_loss_distribution as dpa_pld

            return dpa_pld.from_mixture_gaussian_mechanism(
                sigma, sens, probs, value_discretization_interval=grid
            )

        return ours, peer

    def user(sigma, q, k):
        _, peer = mixture(*_binomial_mixture(sigma, q, k))
        return (lambda: user_level_dpsgd(sigma, q, k)), peer

    three = (1.0, [0.0, 1.0, 2.0], [0.81, 0.18, 0.01])
    four = (0.9, [0.0, 1.0, 2.0, 3.0], [0.85, 0.13, 0.015, 0.005])
    rows = [
        ("mixture sigma 1, c {0,1,2}, 100 steps", *mixture(*three), 100, 1e-4),
        ("mixture sigma 1, c {0,1,2}, 5 steps", *mixture(*three), 5, 1e-5),
        ("mixture sigma 0.9, c {0,1,2,3}, 30 steps", *mixture(*four), 30, 1e-4),
    ]
    rows += [
        (f"user-level sigma 1.2, q 0.01, k {k}, 200 steps", *user(1.2, 0.01, k), 200, 1e-4)
        for k in (1, 2, 8)
    ]
    return rows


def _truncated_rows() -> list[tuple[str, Callable, Callable, int, float]]:
    from dpacct.accountant import TruncatedPoissonGaussianMechanism

    def truncated(sigma, q, n, b):
        def ours():
            return TruncatedPoissonGaussianMechanism(sigma, q, n, b)

        def peer(grid):
            from dp_accounting.pld import privacy_loss_distribution as dpa_pld

            return dpa_pld.from_truncated_subsampled_gaussian_mechanism(
                n, q, b, sigma, value_discretization_interval=grid
            )

        return ours, peer

    cases = [
        ((1.0, 0.01, 10_000, 110), 100, (1e-4,)),
        ((1.0, 0.01, 10_000, 100), 100, (1e-4,)),
        ((0.8, 0.005, 100_000, 500), 20, (1e-4, 1e-5)),
    ]
    return [
        (
            f"truncated Poisson sigma {s}, q {q}, n {n}, b {b}, {count} steps",
            *truncated(s, q, n, b),
            count,
            grid,
        )
        for (s, q, n, b), count, grids in cases
        for grid in grids
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="GLOB", help="rows whose name matches")
    parser.add_argument("--json", metavar="PATH", help="write every row to this file")
    args = parser.parse_args(argv)
    try:
        import dp_accounting  # noqa: F401
    except ImportError as exc:  # pragma: no cover - optional peer
        print(f'dp_accounting not installed ({exc}): pip install "dpacct[test]"')
        return 1
    from dpacct.accountant import compose

    print(
        "| workload | grid | dpacct lower | dpacct upper | dpacct s | dp_accounting "
        "(pessimistic) | their s | upper ratio (ours / theirs) | sound | tight |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = []
    for name, ours, peer, count, grid in _mixture_rows() + _truncated_rows():
        if args.only and not any(fnmatch.fnmatch(name, g) for g in args.only):
            continue
        t0 = time.perf_counter()
        lo, hi = compose([ours()], [count]).epsilon_bounds(DELTA)
        ours_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        theirs = float(peer(grid).self_compose(count).get_epsilon_for_delta(DELTA))
        their_s = time.perf_counter() - t0
        row = {
            "workload": name,
            "grid": grid,
            "lower": lo,
            "upper": hi,
            "ours_s": ours_s,
            "theirs": theirs,
            "their_s": their_s,
            "sound": lo <= theirs,
            "tight": hi <= theirs + (hi - lo),
        }
        rows.append(row)
        print(
            f"| {name} | {grid:g} | {lo:.6f} | {hi:.6f} | {ours_s:.2f} | {theirs:.6f} "
            f"| {their_s:.1f} | {hi / theirs:.6f} | {row['sound']} | {row['tight']} |",
            flush=True,
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)
    return 0 if all(r["sound"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
