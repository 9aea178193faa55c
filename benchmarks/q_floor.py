"""Rows for the Q-mass floor of the grid discretisation (session 31, ws31-hugeeps).

A bin whose Q-mass is below ``grid.Q_FLOOR`` (2^-970) is read in log space where the law
can (the Gaussian), else rounded onto a node (``accountant/pld/grid.py``).  Everyday
rows (DP-SGD, Gaussian with Laplace, subsampled with a full-batch Gaussian) should keep
every bit, and so do sigma 0.04 and 0.05 (epsilon 418, 284: no bin below the floor);
the rows with a Gaussian part at sigma 0.02-0.03 (epsilon 700-1460) change: their old
lower end was above the upper (RuntimeError), their old upper end below the truth at
tol 1e-3, or (sigma 0.03) both ends read from underflowed Q-masses.

    python -m benchmarks.q_floor [--json PATH]
    python -m benchmarks.alternate --old OLD --new . --rounds 2 -- benchmarks.q_floor

Each row: ``lower``/``upper`` of ``epsilon_bounds(1e-5, tol)`` (or ``error``), the
process CPU seconds of the query, and ``lost``: how many bins of the Gaussian parts'
discretisations were left below the floor and rounded (new code only; -1 on old code).
"""

from __future__ import annotations

import argparse
import json
import time


def _rows():
    from dpacct.accountant import compose, poisson_subsample
    from dpacct.mechanisms import GaussianMechanism, LaplaceMechanism

    sub = poisson_subsample(GaussianMechanism(sigma=1.0), 0.002)
    dpsgd = poisson_subsample(GaussianMechanism(1.1), 0.01)
    mixed = [GaussianMechanism(1.0), LaplaceMechanism(b=2.0)]
    sub_g = [poisson_subsample(GaussianMechanism(0.8), 0.05), GaussianMechanism(5.0)]
    out = [
        ("dpsgd q0.01 s1.1 T1000", compose([dpsgd], [1000]), None),
        ("G1 x10 + Lap2 x5", compose(mixed, [10, 5]), None),
        ("sub(0.8,0.05) x100 + G5", compose(sub_g, [100, 1]), None),
        ("sub + G0.1", compose([sub, GaussianMechanism(0.1)], [1, 1]), None),
    ]
    for s in (0.029922201260282486, 0.03, 0.02, 0.04, 0.05):
        for tol in (None, 1e-3):
            out.append((f"sub + G{s}", compose([sub, GaussianMechanism(s)], [1, 1]), tol))
    lap_g = [LaplaceMechanism(b=10.0), GaussianMechanism(0.029922201260282486)]
    out.append(("Lap10 + G0.0299", compose(lap_g, [1, 1]), None))
    return out


def _count_lost():
    """Wrap ``grid._bins_from_law`` to count the bins flagged ``q_lost`` (new code)."""
    from dpacct.accountant.pld import grid, twoscale

    if not hasattr(grid, "Q_FLOOR"):
        return None
    seen = [0]
    orig = grid._bins_from_law

    def counting(*a, **k):
        b = orig(*a, **k)
        if b.q_lost is not None:
            seen[0] += int(b.q_lost.sum())
        return b

    grid._bins_from_law = counting
    twoscale._bins_from_law = counting
    return seen


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    seen = _count_lost()
    results = []
    for name, run, tol in _rows():
        before = seen[0] if seen else 0
        t0 = time.process_time()
        rec = {"row": name, "tol": str(tol)}
        try:
            lo, hi = run.epsilon_bounds(1e-5, tol=tol)
            rec.update(lower=lo, upper=hi)
        except RuntimeError as e:
            rec["error"] = str(e).split(": ")[-1][:60]
        rec["cpu_s"] = time.process_time() - t0
        rec["lost"] = (seen[0] - before) if seen else -1
        results.append(rec)
        print(f"{name:26s} tol={rec['tol']:6s} lower={rec.get('lower', float('nan'))!r:22} "
              f"upper={rec.get('upper', float('nan'))!r:22} lost={rec['lost']:4d} "
              f"cpu={rec['cpu_s']:.3f}s {rec.get('error', '')}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results}, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
