"""Review 32: Lemma 11's ``hat G_3`` (``hat_elementary(r, s, n, 3)``), on which ws32-k3me's
Proposition 13 rests, against the largest ``e_3`` found by search.

For each n and each point s / r^2 of the band [1/n, 1] (r = 1; e_3 is homogeneous), the
search maximises ``e_3(x)`` over ``x >= 0`` with ``sum x = 1`` and ``sum x^2 = s``. It takes
the largest of two things: every two-valued vector (p copies of a, q of b, the rest 0, solved
in closed form), and SLSQP from 20 seeded random starts. It prints the least ratio of the
bound to the largest ``e_3`` found; a ratio below 1 would be a counterexample.

    python benchmarks/review32/k3_lemma11_search.py
"""

import itertools
import math

import numpy as np
from scipy.optimize import minimize

from dpacct.accountant.transformers.random_allocation_k_law_sq3 import hat_elementary


def e3(x):
    """e_3 by the recurrence (sums of non-negative terms: no cancellation)."""
    e = [1.0, 0.0, 0.0, 0.0]
    for v in np.asarray(x, float):
        e[3] += e[2] * v
        e[2] += e[1] * v
        e[1] += v
    return e[3]


def e3_smooth(x):
    """e_3 through power sums, for the optimiser only (smooth, vectorised)."""
    e1 = x.sum()
    return (e1**3 - 3 * e1 * (x * x).sum() + 2 * (x**3).sum()) / 6


def two_valued(n, s):
    """The largest e_3 over vectors of p values a, q values b (a > b >= 0), rest 0."""
    best = 0.0
    for p, q in itertools.product(range(1, n + 1), range(0, n + 1)):
        if p + q > n:
            continue
        # p a + q b = 1, p a^2 + q b^2 = s
        if q == 0:
            if abs(1.0 / p - s) < 1e-12:
                best = max(best, e3(np.full(p, 1.0 / p)))
            continue
        # b = (1 - p a) / q; p a^2 + (1 - p a)^2 / q = s
        aa = p + p * p / q
        bb = -2 * p / q
        cc = 1 / q - s
        disc = bb * bb - 4 * aa * cc
        if disc < 0:
            continue
        for a in ((-bb + math.sqrt(disc)) / (2 * aa), (-bb - math.sqrt(disc)) / (2 * aa)):
            b = (1 - p * a) / q
            if a >= 0 and b >= -1e-15:
                best = max(best, e3(np.array([a] * p + [max(b, 0.0)] * q)))
    return best


def searched(n, s, rng):
    best = 0.0
    cons = (
        {"type": "eq", "fun": lambda x: x.sum() - 1.0},
        {"type": "eq", "fun": lambda x: (x * x).sum() - s},
    )
    for _ in range(20):
        x0 = rng.dirichlet(np.full(n, 0.5))
        r = minimize(lambda x: -e3_smooth(x), x0, method="SLSQP", bounds=[(0, None)] * n,
                     constraints=cons, options={"ftol": 1e-14, "maxiter": 500})
        x = np.maximum(r.x, 0.0)
        if abs(x.sum() - 1) < 1e-9 and abs((x * x).sum() - s) < 1e-9:
            best = max(best, e3(x))
    return best


def main():
    rng = np.random.Generator(np.random.PCG64(3238))
    worst = math.inf
    for n in (3, 4, 5, 7, 10, 19, 29):
        for frac in np.linspace(0.0, 1.0, 41):
            s = 1.0 / n + frac * (1.0 - 1.0 / n)
            found = max(two_valued(n, s), searched(n, s, rng) if n <= 10 else 0.0)
            bound = float(hat_elementary(np.array(1.0), np.array(s), n, 3))
            if found > 0:
                ratio = bound / found
                worst = min(worst, ratio)
                if ratio < 1 - 1e-13:
                    print(f"COUNTEREXAMPLE n {n} s {s}: bound {bound} < found {found}")
        print(f"n {n}: least bound / found so far {worst:.15f}")


if __name__ == "__main__":
    main()
