"""The largest e_j given the sum and the sum of squares (accountant/transformers/
random_allocation_k_law_sq.py, Lemma 11 of docs/theory/allocation_k_of_t.md).

Independent values: ``e_j`` of explicit points by the recurrence (sums of non-negative
terms), an SLSQP maximisation of ``e_j`` over the constraint set from random starts
(scipy), and the formula at 50 digits (mpmath) for the outward-rounded certificate.  Each
domination check is shown to reject a bound 1 % lower, or the other two-value
configuration (the larger value ``n - 1`` times), on the same points.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import optimize

from dpacct.accountant.transformers.random_allocation_k_law_sq import (
    max_elementary_given_sums,
)


def _e(x: np.ndarray, j: int) -> np.ndarray:
    """``e_j`` of each row of ``x >= 0`` by the recurrence."""
    x = np.atleast_2d(x)
    e = np.zeros((x.shape[0], j + 1))
    e[:, 0] = 1.0
    for col in x.T:
        e[:, 1:] += e[:, :-1] * col[:, None]
    return e[:, j]


def _points(rng: np.random.Generator, n: int, rows: int) -> np.ndarray:
    """Log-normal rows of mixed spread, a tenth of them near the extremal configuration."""
    x = rng.lognormal(0.0, rng.uniform(0.1, 2.0, (rows, 1)), (rows, n))
    near = rows // 10
    x[:near, :-1] = 1.0
    x[:near, -1] = rng.uniform(1.0, 6.0, near)
    x[:near] *= 1.0 + 1e-3 * rng.standard_normal((near, n))
    x[near:2 * near, 0] = 0.0
    return x


@pytest.mark.parametrize("n", [2, 3, 5, 9, 27])
def test_dominates_every_point_and_is_attained(n):
    rng = np.random.Generator(np.random.PCG64(1100 + n))
    x = _points(rng, n, 4000)
    r, s = x.sum(1), (x * x).sum(1)
    m = r / n
    d = np.sqrt(np.maximum(s / n - m * m, 0.0) / (n - 1))
    for j in range(0, min(n, 6) + 1):
        ej = _e(x, j)
        g = max_elementary_given_sums(r, s, n, j)
        assert np.all(g >= ej * (1 - 1e-12) - 1e-300)
        if j >= 3:
            # power: 1 % less is beaten near the extremal configuration ...
            assert np.any(0.99 * g < ej)
            # ... and so is the other two-value point (the larger value n - 1 times)
            lo, hi = m - (n - 1) * d, m + d
            other = math.comb(n - 1, j) * hi**j + math.comb(n - 1, j - 1) * lo * hi ** (j - 1)
            assert np.any(other < ej * (1 - 1e-9))
        # attained: e_j of n - 1 copies of a and one b is the bound
        a, b = m - d, m + (n - 1) * d
        pts = np.concatenate([np.repeat(a[:, None], n - 1, 1), b[:, None]], 1)
        np.testing.assert_allclose(_e(pts, j), g, rtol=1e-9, atol=1e-300)
    # e_1 and e_2 are exact
    np.testing.assert_allclose(max_elementary_given_sums(r, s, n, 1), r, rtol=1e-12)
    np.testing.assert_allclose(max_elementary_given_sums(r, s, n, 2), (r * r - s) / 2,
                               rtol=1e-9, atol=1e-9 * float((r * r).max()))


@pytest.mark.parametrize(("n", "j"), [(4, 3), (6, 4), (6, 5)])
def test_against_a_numerical_maximum(n, j):
    rng = np.random.Generator(np.random.PCG64(70 + n * 10 + j))
    for _ in range(2):
        x0 = rng.lognormal(0.0, rng.uniform(0.3, 1.5), n)
        r, s = float(x0.sum()), float((x0 * x0).sum())
        cons = [{"type": "eq", "fun": lambda y, r=r: y.sum() - r},
                {"type": "eq", "fun": lambda y, s=s: (y * y).sum() - s}]
        best = float(_e(x0, j)[0])
        for _ in range(5):
            y = rng.lognormal(0.0, 1.0, n)
            res = optimize.minimize(lambda v: -_e(v, j)[0], y * r / y.sum(), method="SLSQP",
                                    constraints=cons, bounds=[(0.0, None)] * n)
            ok = abs(res.x.sum() - r) < 1e-8 * r and abs((res.x**2).sum() - s) < 1e-8 * s
            if res.success and ok:
                best = max(best, float(_e(res.x, j)[0]))
        g = float(max_elementary_given_sums(r, s, n, j))
        assert best <= g * (1 + 1e-6)
        assert best >= g * (1 - 1e-5)  # the optimiser finds the bound: it is sharp


def test_monotone_in_total_and_squares():
    n = 12
    r = np.linspace(0.5, 20.0, 400)
    for s0 in (1.0, 7.0, 30.0):
        for j in (2, 3, 5):
            g = max_elementary_given_sums(r, s0, n, j)
            assert np.all(np.diff(g) >= -1e-12 * g.max())
    s = np.linspace(0.0, 120.0, 400)
    for r0 in (3.0, 10.0):
        for j in (2, 3, 5):
            g = max_elementary_given_sums(r0, s, n, j)
            assert np.all(np.diff(g) <= 1e-12 * g.max())
            # squares below r^2 / n: Maclaurin's bound; above r^2: a = 0
            assert g[0] == pytest.approx(math.comb(n, j) * (r0 / n) ** j, rel=1e-12)
            assert g[-1] == 0.0


def test_upper_rounding_against_mpmath():
    rng = np.random.Generator(np.random.PCG64(5))
    mpmath.mp.dps = 50
    for _ in range(200):
        n = int(rng.integers(2, 200))
        j = int(rng.integers(1, min(n, 6) + 1))
        x = rng.lognormal(0.0, rng.uniform(0.01, 2.0), n)
        r = float(x.sum())
        s = float((x * x).sum()) * float(rng.choice([1.0, 1 + 1e-15, 1 - 1e-15]))
        up = float(max_elementary_given_sums(r, s, n, j, upper=True))
        plain = float(max_elementary_given_sums(r, s, n, j))
        rm, sm = mpmath.mpf(r), mpmath.mpf(s)
        m = rm / n
        v = min(max(sm / n - m * m, 0), (n - 1) * m * m)
        d = mpmath.sqrt(v / (n - 1))
        a, b = m - d, m + (n - 1) * d
        exact = math.comb(n - 1, j) * a**j + math.comb(n - 1, j - 1) * b * a ** (j - 1)
        assert mpmath.mpf(up) >= exact
        assert up <= plain * (1 + 1e-12) + 1e-300
        assert up >= plain


def test_small_cases_and_bad_input():
    assert float(max_elementary_given_sums(2.0, 1.0, 5, 0)) == 1.0
    assert float(max_elementary_given_sums(2.0, 1.0, 3, 4)) == 0.0
    assert float(max_elementary_given_sums(2.5, 6.25, 1, 1)) == 2.5
    with pytest.raises(ValueError, match="n"):
        max_elementary_given_sums(1.0, 1.0, 0, 2)
    with pytest.raises(ValueError, match="j"):
        max_elementary_given_sums(1.0, 1.0, 3, -1)
    with pytest.raises(ValueError, match="total"):
        max_elementary_given_sums(-1.0, 1.0, 3, 2)
    with pytest.raises(ValueError, match="squares"):
        max_elementary_given_sums(1.0, float("nan"), 3, 2)


def _kept_bound(z: np.ndarray, k: int, levels: int) -> np.ndarray:
    """``e_k(z)``'s bound keeping the ``levels`` largest and the others' (sum, squares)."""
    t = z.shape[1]
    zs = np.sort(z, axis=1)
    top, low = zs[:, t - levels:], zs[:, : t - levels]
    r, s = low.sum(1), (low * low).sum(1)
    return sum(_e(top, i) * max_elementary_given_sums(r, s, t - levels, k - i)
               for i in range(min(k, levels) + 1))


@pytest.mark.parametrize("t", [3, 5, 10])
def test_pointwise_bound_of_the_k_of_t_ratio(t):
    # the k-of-T pair's coordinates z = exp((x - 1/2) / sigma^2), the record's k steps
    # shifted (P_k) or not (Q): the bound keeping L = 1, 2, 3 coordinates is above e_k(z)
    # at every draw and within the spread's reach of it; 0.99 times it is beaten
    rng = np.random.Generator(np.random.PCG64(300 + t))
    sigma, k = 1.0, min(3, t)
    x = rng.normal(0.0, sigma, (20_000, t))
    x[: 10_000, :k] += 1.0
    z = np.exp((x - 0.5) / sigma**2)
    ek = _e(z, k)
    for levels in range(1, min(3, t - 1) + 1):
        b = _kept_bound(z, k, levels)
        assert np.all(b >= ek * (1 - 1e-12))
        assert np.any(0.99 * b < ek)
    if t == 10:  # and below Maclaurin's on the same split (it keeps more)
        zs = np.sort(z, axis=1)
        r = zs[:, :-1].sum(1)
        mac = math.comb(t - 1, k) * (r / (t - 1)) ** k + zs[:, -1] * math.comb(
            t - 1, k - 1) * (r / (t - 1)) ** (k - 1)
        assert np.all(_kept_bound(z, k, 1) <= mac * (1 + 1e-12))
        assert np.mean(_kept_bound(z, k, 1) < 0.9 * mac) > 0.1
