"""Everyday answers of this checkout beside another's: what a change moved, and by how much.

    python -m benchmarks.answers_side_by_side --old-root /path/to/old/checkout

Each checkout answers the same calls in a child process of this interpreter (the other
checkout's library imported through :mod:`benchmarks._old_checkout`): DP-SGD epsilons and
a bracket, a calibration, Laplace, discrete Gaussian, bounded-range, pure-DP, declared,
subsampled and randomized-response answers, random allocation at k = 1 and 2, and the
README's ``sampler_report`` rows.  Printed: both values and the relative change of each.
No timing (see ``benchmarks.readme_speeds`` and ``benchmarks.alternate`` for speed).
"""

from __future__ import annotations

import argparse

from benchmarks._checkouts import run_in_checkout


def _calls() -> dict:
    """The calls, by name (each returns a float or a sequence of floats)."""
    import numpy as np

    import dpacct as dp
    from dpacct.accountant import compose, poisson_subsample
    from dpacct.accountant.mechanism import Mechanism
    from dpacct.mechanisms import (
        DiscreteGaussianMechanism,
        ExponentialMechanism,
        GaussianMechanism,
        LaplaceMechanism,
        PureDPMechanism,
        RandomizedResponse,
    )

    curve_eps = np.concatenate([[0.0], np.geomspace(1e-4, 20.0, 60)])

    def dpsgd_1000():
        return compose([poisson_subsample(GaussianMechanism(1.0), 0.01)], counts=[1000])

    def tuned():
        from dpacct.accountant import repeat_and_select

        return repeat_and_select(dpsgd_1000(), 3.0, float("inf"))

    def report():
        rep = dp.sampler_report(1.1, 1e-5, scheme="shuffle", dataset_size=60_000,
                                batch_size=600, epochs=10)
        return [r.epsilon for r in rep.rows]

    return {
        "DP-SGD q 0.01 sigma 1.1 T 1e4": lambda: dp.dpsgd_mechanism(1.1, 0.01, 10_000).epsilon(
            1e-5),
        "  its bracket": lambda: dp.dpsgd_mechanism(1.1, 0.01, 10_000).epsilon_bounds(1e-5),
        "DP-SGD q 0.004 sigma 0.8 T 1e6": lambda: dp.dpsgd_mechanism(0.8, 0.004, 10**6).epsilon(
            1e-5),
        "calibration eps 3": lambda: dp.noise_multiplier(epsilon=3.0, delta=1e-5,
                                                         sample_rate=0.01, steps=10_000),
        "Laplace b 10 x100 bracket": lambda: compose([LaplaceMechanism(10.0)],
                                                     counts=[100]).epsilon_bounds(1e-6),
        "Laplace b 0.5 delta": lambda: LaplaceMechanism(0.5).delta(np.array([0.5, 1.0, 1.9])),
        "Laplace b 0.5 bracket": lambda: LaplaceMechanism(0.5).epsilon_bounds(1e-8),
        "discrete Gaussian 1.3 bracket": lambda: DiscreteGaussianMechanism(1.3).epsilon_bounds(
            1e-6),
        "discrete Gaussian 1.3 delta": lambda: DiscreteGaussianMechanism(1.3).delta(
            np.array([0.5, 2.0])),
        "bounded range eps 2 bracket": lambda: ExponentialMechanism(epsilon=2.0).epsilon_bounds(
            1e-6),
        "pure 0.3 x10 bracket": lambda: compose([PureDPMechanism(0.3)],
                                                counts=[10]).epsilon_bounds(1e-6),
        "(1, 1e-6) delta": lambda: Mechanism.from_epsilon_delta(1.0, 1e-6).delta(
            np.array([0.2, 0.9])),
        "subsampled Laplace bracket": lambda: poisson_subsample(LaplaceMechanism(1.0),
                                                                0.05).epsilon_bounds(1e-6),
        "subsampled pure delta": lambda: poisson_subsample(PureDPMechanism(2.0), 0.1).delta(
            np.array([0.1, 0.5])),
        "binary RR x50 bracket": lambda: compose([RandomizedResponse(p=0.7, k=2)],
                                                 counts=[50]).epsilon_bounds(1e-6),
        "random allocation k 1 T 100": lambda: dp.random_allocation(
            GaussianMechanism(1.0), 100).epsilon_bounds(1e-6),
        "random allocation k 2 T 50": lambda: dp.random_allocation(
            GaussianMechanism(1.0), 50, k=2).epsilon_bounds(1e-6),
        "README sampler_report rows": report,
        # session 44: the add direction screened element by element (PLDPair.delta)
        "DP-SGD x1000 delta curve": lambda: dpsgd_1000().delta(curve_eps),
        "subsampled Gaussian q 0.3 curve": lambda: poisson_subsample(
            GaussianMechanism(0.7), 0.3).delta(curve_eps),
        "repeat-and-select Poisson eps": lambda: [
            tuned().epsilon(d) for d in (1e-3, 1e-6, 1e-9)],
        "repeat-and-select Poisson rdp": lambda: tuned().rdp(
            np.array([1.01, 1.5, 2.0, 3.0, 8.0, 20.0, 64.0, 300.0, 2000.0])),
    }


def answers() -> dict:
    """Every call's answer as a list of floats (or the error's text)."""
    import numpy as np

    out = {}
    for name, call in _calls().items():
        try:
            out[name] = [float(v) for v in np.asarray(call(), dtype=float).ravel()]
        except Exception as err:  # a call one checkout lacks is reported, not fatal
            out[name] = f"{type(err).__name__}: {err}"
    return out


def _run(root: str | None) -> dict:
    """:func:`answers` in a child process, for this checkout or ``root``'s library."""
    return run_in_checkout("benchmarks.answers_side_by_side", "answers", root)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old-root", required=True, help="another checkout of dpacct")
    args = parser.parse_args(argv)
    old, new = _run(args.old_root), _run(None)
    print(f"{'answer':34s} old -> new (relative change)")
    for name in new:
        o, n = old.get(name), new[name]
        if isinstance(o, str) or isinstance(n, str) or o is None:
            print(f"{name:34s} old: {o!r}  new: {n!r}")
            continue
        if len(n) > 12:  # a curve: how many points moved, each way, and the largest move
            rel = [(y - x) / abs(x) if x else y - x for x, y in zip(o, n, strict=True)]
            up, down = sum(r > 0 for r in rel), sum(r < 0 for r in rel)
            print(f"{name:34s} {len(n)} values: {up} up, {down} down, "
                  f"largest {max(rel, key=abs):+.1e}")
            continue
        cells = [f"{x:.12g} -> {y:.12g} ({(y - x) / abs(x) if x else y - x:+.1e})"
                 for x, y in zip(o, n, strict=True)]
        print(f"{name:34s} " + "; ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
