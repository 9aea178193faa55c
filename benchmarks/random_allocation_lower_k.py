"""Issue 39: the certified lower end of k-of-T random allocation, old against new, alternated.

    python -m benchmarks.random_allocation_lower_k --old /work/main:python
    python -m benchmarks.random_allocation_lower_k --old /work/main:python --repeats 3

Each row (sigma, T, k, epochs; delta 1e-6) runs
``random_allocation_lower_epsilon(sigma, T, delta, epochs=E, k=k)`` -- the lower end of
``epsilon_bounds`` at k >= 2 (the larger of the largest-coordinate attack and the
sum-statistic attack, docs/theory/allocation_k_of_t.md, Proposition 2 and Corollary 2a)
-- in a fresh child per checkout, old and new alternated ``--repeats`` times, and prints
both lower ends, their ratio and the least CPU seconds of each (``time.process_time``,
imports excluded; the machine may be loaded).  The upper end is not computed: it does
not change with the lower end (``benchmarks.random_allocation_k`` prints whole brackets).
"""

from __future__ import annotations

import argparse

#: (sigma, T, k, epochs): the rows of benchmarks.random_allocation_k with k >= 2 and
#: T <= 300 (where the search over c runs), and one row above 300 steps (no search)
ROWS = (
    (1.0, 100, 3, 1),
    (0.8, 100, 3, 1),
    (1.0, 10, 3, 1),
    (0.8, 10, 3, 1),
    (0.7, 10, 3, 1),
    (1.0, 100, 3, 5),
    (0.8, 50, 4, 1),
    (0.7, 20, 4, 1),
    (1.0, 20, 4, 1),
    (1.0, 100, 4, 1),
    (0.7, 50, 4, 1),
    (0.8, 100, 5, 1),
    (1.0, 100, 5, 1),
    (1.0, 100, 2, 1),
    (1.0, 10, 2, 1),
    (0.8, 100, 2, 1),
    (0.6, 100, 2, 1),
    (0.5, 10, 2, 1),
    (0.6, 5, 2, 1),
    (0.7, 3, 2, 1),
    (1.0, 100, 2, 5),
    (1.0, 10, 2, 5),
    (0.7, 3, 2, 3),
    (2.0, 100, 2, 10),
    (1.0, 1000, 2, 1),
)
DELTA = 1e-6

_CHILD = """
import json, sys, time
sigma, t, k, e, d = (f(a) for f, a in zip((float, int, int, int, float), sys.argv[1:6]))
from dpacct.accountant.transformers.random_allocation_lower import (
    random_allocation_lower_epsilon)
c0 = time.process_time()
lo = random_allocation_lower_epsilon(sigma, t, d, epochs=e, k=k)
print(json.dumps({"lo": float(lo), "cpu": time.process_time() - c0}))
"""


def main(argv: list[str] | None = None) -> None:
    from benchmarks.checkouts import old_new_sides, run_in_checkout

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="ROOT:PYTHON of the checkout to compare with")
    ap.add_argument("--repeats", type=int, default=1, help="old/new alternations per row")
    ap.add_argument("--cap", type=float, default=600.0)
    args = ap.parse_args(argv)
    sides = old_new_sides(args.old)
    print("| sigma | T | k | epochs | old lower | new lower | new / old | old CPU s | new CPU s |")
    print("| --- " * 9 + "|")
    for sigma, t, k, e in ROWS:
        got: dict[str, list[dict]] = {name: [] for name in sides}
        for _ in range(args.repeats):
            for name, (root, py) in sides.items():
                got[name].append(run_in_checkout(root, py, [_CHILD, *map(str, (
                    sigma, t, k, e, DELTA))], args.cap))
        if any(r["status"] != "ok" for rs in got.values() for r in rs):
            print(f"| {sigma:g} | {t} | {k} | {e} | {got} |")
            continue
        old, new = (min(got[n], key=lambda r: r["cpu"]) for n in ("old", "new"))
        print(f"| {sigma:g} | {t} | {k} | {e} | {old['lo']:.5f} | {new['lo']:.5f} "
              f"| {new['lo'] / old['lo']:.5f} | {old['cpu']:.2f} | {new['cpu']:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
