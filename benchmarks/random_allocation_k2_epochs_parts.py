"""Issue 39, k = 2 over several epochs: what holds the certified upper end (measurement).

    python -m benchmarks.random_allocation_k2_epochs_parts bracket 0.5339,0.5385,0.5422
    python -m benchmarks.random_allocation_k2_epochs_parts law 0.5385 --theta-sd 3.4,2.6 \\
        [--h2 1] [--step 32]

``bracket``: the mechanism's certified ``epsilon_bounds(delta)`` (``random_allocation(...,
k=2, epochs=E)``, the library as it is) at each sigma, with its CPU seconds.  ``law``: the
several-epoch law of Proposition 6 (``three_atoms``) built with the split of ``M_2`` at
``--theta-sd`` standard deviations above an unshifted coordinate's log-mean and, where
given, the second region's lattice step ``--h2`` and coarse step ``--step`` (default: the
library's settings for several epochs, ``three_settings``), put in the route's cache in
place of the library's, and the route's remove-direction epsilon over the epochs
(``_k2_split_epsilon``: certified for any of these settings, Proposition 6 holds at every
split and lattice), with the law's CPU seconds and its P-mass ``sum q v + charge``.  The
estimates of the truth and of the pointwise bounds on the same draws are
``benchmarks.random_allocation_k_epochs_truth --pld`` (``--level 12 --theta-sd S``).
"""

from __future__ import annotations

import argparse
import time


def bracket(sigmas, t: int, epochs: int, delta: float) -> None:
    """Print the certified bracket at each sigma."""
    from dpacct.accountant import random_allocation
    from dpacct.mechanisms import GaussianMechanism

    for s in sigmas:
        c0 = time.process_time()
        lo, hi = random_allocation(GaussianMechanism(s), t, k=2, epochs=epochs).epsilon_bounds(
            delta)
        print(f"sigma {s:g}, T {t}, E {epochs}, delta {delta:g}: lower {lo:.5f} upper "
              f"{hi:.5f} ({time.process_time() - c0:.1f} CPU s)", flush=True)


def law(sigma: float, t: int, epochs: int, delta: float, theta_sd: float,
        h2: float | None, step: float | None) -> float:
    """The route's remove epsilon with the several-epoch law built at these settings."""
    from dpacct.accountant import random_allocation
    from dpacct.accountant.transformers import random_allocation_k2 as k2
    from dpacct.accountant.transformers import random_allocation_k2_three as m3
    from dpacct.mechanisms import GaussianMechanism

    kw = {}
    if h2 is not None:
        kw["h2"] = h2
    if step is not None:
        kw["step"] = step
    c0 = time.process_time()
    atoms = m3.three_atoms(sigma, t, log_theta=-0.5 / sigma**2 + theta_sd / sigma, **kw)
    cpu = time.process_time() - c0
    k2._ATOMS.clear()
    k2._ATOMS[(sigma, t, True)] = atoms
    mech = random_allocation(GaussianMechanism(sigma), t, k=2, epochs=epochs)
    eps = mech._k2_split_epsilon(delta, None)
    v, q, c = atoms
    print(f"sigma {sigma:g}, T {t}, E {epochs}, delta {delta:g}, theta {theta_sd:g} sd, "
          f"h2 {h2}, step {step}: remove epsilon {eps:.5f}, law {cpu:.1f} CPU s, P-mass "
          f"{float(q @ v) + c:.5f}", flush=True)
    return eps


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("bracket", "law"))
    ap.add_argument("sigmas", help="comma-separated sigmas")
    ap.add_argument("--t", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--theta-sd", default="3.4")
    ap.add_argument("--h2", type=float, default=None)
    ap.add_argument("--step", type=float, default=None)
    args = ap.parse_args(argv)
    sigmas = [float(s) for s in args.sigmas.split(",")]
    if args.what == "bracket":
        bracket(sigmas, args.t, args.epochs, args.delta)
        return
    for s in sigmas:
        for sd in (float(x) for x in args.theta_sd.split(",")):
            law(s, args.t, args.epochs, args.delta, sd, args.h2, args.step)


if __name__ == "__main__":
    main()
