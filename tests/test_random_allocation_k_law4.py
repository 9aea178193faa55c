"""The four-level law of k-of-T random allocation (accountant/transformers/
random_allocation_k_law4.py, Proposition 10 of docs/theory/allocation_k_of_t.md).

Independent values: the chords' masses and upper shares against scipy quadrature of the
cell laws (the mean of a log-normal on a cell in closed form, the largest of ``n`` by
``quad``); the pointwise bound ``V_3`` against ``e_k`` by the recurrence on random
points; the law's curve against an importance-sampled Monte Carlo of the exact pair's
remove direction at T = 5 and T = 10 (explicit ``numpy.random.Generator``; the proposal
shifts the record's coordinates by more than 1, so the estimate reaches delta 1e-5, where
the third region holds most of it), each check shown to reject a bound moved below the
estimate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special

from dpacct.accountant.transformers.random_allocation_k_law import value_coefficients
from dpacct.accountant.transformers.random_allocation_k_law4 import (
    chord_weights,
    pair_chord_weights,
    region_nodes,
    remove_atoms4,
)

_Z = 3.29  # two-sided 99.9 %


def _cdf(sigma, x):
    return special.ndtr((math.log(x) + 0.5 / sigma**2) * sigma)


def _pdf(sigma, x):
    z = (math.log(x) + 0.5 / sigma**2) * sigma
    return math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi) * sigma / x


def _quad(fn, a, b, points=None):
    return integrate.quad(fn, a, b, epsabs=0, epsrel=1e-12, points=points)[0]


def _exact_chord(dens, a, b):
    """The cell's mass and the chord's upper share ``int (x - a) dens / (b - a)``."""
    return _quad(dens, a, b), _quad(lambda x: (x - a) * dens(x), a, b) / (b - a)


def _max_density(sigma, n):
    return lambda x: n * _cdf(sigma, x) ** (n - 1) * _pdf(sigma, x)


def _pair_density(sigma, t, a):
    fa = _cdf(sigma, a)

    def g(x):  # (T-2)(T-3) f F^(T-4) (F - F(a))
        f = _cdf(sigma, x)
        return (t - 2) * (t - 3) * _pdf(sigma, x) * f ** (t - 4) * (f - fa)

    return g


@pytest.mark.parametrize("n", [1, 8, 98])
def test_chords_against_quadrature(n):
    sigma = 1.0
    nodes = np.array([1.0, 1.05, 1.3, 2.0, 2.02, 3.5])
    lo, up = chord_weights(sigma, nodes, n)
    dens = _max_density(sigma, n)
    for c in range(1, nodes.size):
        a, b = math.exp(nodes[c - 1]), math.exp(nodes[c])
        mu, u = _exact_chord(dens, a, b)
        assert lo[c] + up[c] >= mu * (1 - 1e-9) and lo[c] + up[c] <= mu * (1 + 1e-6)
        # the upper share is rounded up by at most one Riemann sub-interval's mass
        assert up[c] >= u * (1 - 1e-9) and up[c] <= u + mu / 256 * 1.01
        # so the chord is above E[phi] for convex increasing phi (one with a kink)
        mid = 0.5 * (a + b)
        for phi in (lambda x: x**3, lambda x, m=mid: max(x - m, 0.0)):
            exact = _quad(lambda x, p=phi: p(x) * dens(x), a, b, points=[mid])
            assert lo[c] * phi(a) + up[c] * phi(b) >= exact * (1 - 1e-9)
        # and the check can fail: a share a tenth of the mass above u is rejected
        assert not up[c] >= u + 0.1 * mu


def test_pair_chord_against_quadrature():
    sigma, t = 1.0, 20
    nodes = np.array([1.0, 1.05, 1.5, 2.5])
    lo, up = pair_chord_weights(sigma, nodes, t)
    for c in range(1, nodes.size):
        a, b = math.exp(nodes[c - 1]), math.exp(nodes[c])
        mu, u = _exact_chord(_pair_density(sigma, t, a), a, b)
        assert lo[c] + up[c] >= mu * (1 - 1e-9) and lo[c] + up[c] <= mu * 1.05
        assert up[c] >= u * (1 - 1e-9) and up[c] <= u + 0.05 * mu


def test_v3_is_above_the_exact_ratio():
    # V_3 = sum_i e_i(M_1, M_2, M_3) C(T-3, k-i) (R'' / (T-3))^(k-i) / C(T, k) >= e_k / C(T, k)
    rng = np.random.Generator(np.random.PCG64(2611))
    for t, k in ((5, 3), (10, 3), (12, 4)):
        z = np.exp(rng.normal(0.0, 1.5, (2000, t)))
        zs = np.sort(z, axis=1)
        m1, m2, m3, r = zs[:, -1], zs[:, -2], zs[:, -3], zs[:, :-3].sum(1)
        c = value_coefficients(t, k, 3)
        e = [np.ones_like(r), m1 + m2 + m3, m1 * m2 + m1 * m3 + m2 * m3, m1 * m2 * m3]
        v3 = sum(c[i] * e[i] * r ** (k - i) for i in range(4) if k - i >= 0)
        ek = [np.ones(z.shape[0])] + [np.zeros(z.shape[0]) for _ in range(k)]
        for col in z.T:
            for j in range(k, 0, -1):
                ek[j] += ek[j - 1] * col
        exact = ek[k] / math.comb(t, k)
        assert np.all(v3 >= exact * (1 - 1e-12))
        assert np.mean(v3 <= exact * 1.5) > 0.5  # and not trivially loose


def _is_remove(sigma, t, k, eps, n, rng, shifts=(1.0, 1.5, 2.0, 2.5)):
    """Importance sampling of ``E_Q[(e_k(z) / C(T, k) - e^eps)_+]``: the record's ``k``
    coordinates (a uniform ``k``-subset) shifted by ``a`` drawn uniformly from ``shifts``;
    the density against Q is the mean over ``a`` of ``e_k(z^(a)) / C(T, k)``."""
    g = np.exp(np.asarray(eps, dtype=float))
    x = rng.normal(0.0, sigma, (n, t))
    a = np.asarray(shifts)[rng.integers(0, len(shifts), n)]
    idx = np.argsort(rng.random((n, t)), axis=1)[:, :k]
    x[np.arange(n)[:, None], idx] += a[:, None]

    def ek(y):
        e = [np.ones(n)] + [np.zeros(n) for _ in range(k)]
        for col in y.T:
            for j in range(k, 0, -1):
                e[j] += e[j - 1] * col
        return e[k] / math.comb(t, k)

    dens = sum(ek(np.exp((s * x - 0.5 * s * s) / sigma**2)) for s in shifts) / len(shifts)
    v = np.maximum(ek(np.exp((x - 0.5) / sigma**2))[:, None] - g[None, :], 0.0) / dens[:, None]
    m = v.mean(0)
    return m, v.std(0) / math.sqrt(n)


@pytest.mark.parametrize(
    ("sigma", "t", "k", "eps", "cap"),
    [(1.0, 5, 3, [6.0, 7.0], 1.35), (1.0, 10, 3, [4.5, 5.0], 1.35),
     # k = 5 (the law is written for any k >= 3; not routed): sound and 2.2-2.3x the
     # estimate at this small T (at T 100, delta 1e-6 it is 3.4362 against the blocks'
     # 3.4857; docs, "four levels")
     (1.5, 8, 5, [4.5, 5.0], 2.6)],
)
def test_law_above_importance_sampling(sigma, t, k, eps, cap):
    v, q, c = remove_atoms4(sigma, t, k)
    e = np.asarray(eps)
    curve = np.maximum(v[None, :] - np.exp(e)[:, None], 0.0) @ q + c
    rng = np.random.Generator(np.random.PCG64(26_039 + t))
    m, se = _is_remove(sigma, t, k, e, 200_000, rng)
    assert np.all(m > 0) and np.all(m < 1e-3) and np.all(se < 0.03 * m)
    assert np.all(curve >= m - _Z * se), (curve, m, se)
    # the check can fail: the estimate shrunk by 10 %, and the law moved below it
    for low in (0.9 * m, np.minimum(curve, 0.9 * m)):
        assert not np.all(low >= m - _Z * se)
    # and the law is not loose: measured 1.07-1.12 (T 5), 1.20-1.21 (T 10) times the estimate
    # at k = 3 (the pointwise bound's own excess, docs: "where the width still is")
    assert np.all(curve <= cap * (m + _Z * se)), curve / m


def test_nodes_and_bad_input():
    n, i = region_nodes(1.0, 2.0, 1.5, 8.5, 0.05, 1e-3)
    assert n[i] == 2.0 and n[0] <= 1.5 and n[-1] >= 8.5
    assert np.all(np.diff(n) > 0) and np.all(np.diff(n) <= 0.05 + 1e-12)
    with pytest.raises(ValueError, match="sigma"):
        remove_atoms4(-1.0, 10, 3)
    with pytest.raises(ValueError, match="steps"):
        remove_atoms4(1.0, 4, 3)
    with pytest.raises(ValueError, match="k"):
        remove_atoms4(1.0, 10, 2)
    with pytest.raises(ValueError, match="theta3_sd"):
        remove_atoms4(1.0, 10, 3, theta_sd=2.0, theta3_sd=2.5)
