"""The subsampled Gaussian's split numerators from the base bin (accountant/laws/sgm_split.py).

Truths are 50-digit mpmath values of ``m - r`` for the bin whose base-loss edges are the
law's float preimages of the nodes (the bin the law's masses measure), ``m`` its P-mass,
``r = e^{a} Q(bin)``.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpacct.accountant.laws.loss_law import GaussianLossLaw, PoissonSubsampledLossLaw
from dpacct.accountant.laws.sgm_split import KAPPA, T_MIN, split_numerators
from dpacct.accountant.pld import grid
from dpacct.accountant.pld.grid import _bins_from_law, _upper_from_bins, discretize

U = 2.0**-53
#: (sigma, q, step): the xfail's fine grid, DP-SGD's fine and coarse grids, q near 1
SETTINGS = [
    (5.0, 1e-6, 1.862645149230957e-09),
    (1.1, 0.01, 6.103515625e-05),
    (0.8, 0.004, 3.0517578125e-05),
    (1.1, 0.01, 9.765625e-04),
    (0.5, 0.3, 2.0**-12),
    (2.0, 1e-4, 2.0**-22),
]


def _nodes(law, step, tail=1e-12):
    lo, hi = law.quantile_bounds(tail)
    first, last = math.floor(lo / step) - 1, math.ceil(hi / step) + 1
    return np.arange(first, last + 1, dtype=float) * step


def _truth(law, nodes, idx):
    """50-digit ``m - r`` and ``m`` of the bins ``idx``."""
    x = law._preimage(nodes)[0]
    q = mp.mpf(law.sample_rate)
    out = []
    with mp.workdps(50):
        mu = mp.mpf(law.base.mu)
        for j in idx:
            xa, xb = mp.mpf(x[j]), mp.mpf(x[j + 1])
            p0, q0 = (mp.ncdf((xb - s) / mu) - mp.ncdf((xa - s) / mu)
                      for s in (mu**2 / 2, -(mu**2) / 2))
            if law.direction == "remove":
                m, nq = (1 - q) * q0 + q * p0, q0
            else:
                m, nq = p0, (1 - q) * p0 + q * q0
            out.append((m - mp.exp(mp.mpf(nodes[j])) * nq, m))
    return out


@pytest.mark.parametrize("direction", ["remove", "add"])
@pytest.mark.parametrize(("sigma", "q", "step"), SETTINGS)
def test_numerators_within_their_bound_and_tight(sigma, q, step, direction):
    law = PoissonSubsampledLossLaw(GaussianLossLaw(mu=1.0 / sigma), q, direction)
    nodes = _nodes(law, step)
    d, err = split_numerators(law, nodes)
    n = d.size
    idx = np.unique(np.concatenate([np.linspace(0, n - 1, 150).astype(int), [0, n - 1]]))
    old_worst = new_worst = 0.0
    m_law, nq_law = law.bin_masses(nodes)
    for j, (t, m) in zip(idx, _truth(law, nodes, idx), strict=True):
        assert abs(mp.mpf(d[j]) - t) <= mp.mpf(err[j]), (j, d[j], err[j], t)
        if m > 1e-6:  # the bound moves a small part of the bin's mass between its nodes
            assert err[j] <= 1e-10 * float(m) * -math.expm1(-step), (j, err[j], t, m)
            new_worst = max(new_worst, abs(float(mp.mpf(d[j]) - t)))
            old = mp.mpf(m_law[j]) - mp.exp(mp.mpf(nodes[j])) * mp.mpf(nq_law[j])
            old_worst = max(old_worst, abs(float(old - t)))
    # the point of the identity: at these steps the difference of the law's masses is
    # far off (up to 4e3x the new error on the xfail's grid), the base bin's is not worse
    assert new_worst <= old_worst


@pytest.mark.parametrize("n", [4, 7])
def test_the_quadrature_rule_and_where_it_is_used(n):
    from dpacct.accountant.laws.sgm_split import RHO, RULES, _narrow, truncation_coefficient

    # each literal is the float nearest the rule's 40-digit value (Newton on P_n in mpmath)
    nodes, weights = RULES[n]
    with mp.workdps(40):
        for x0, h, w in zip(np.polynomial.legendre.leggauss(n)[0], nodes, weights, strict=True):
            x = mp.mpf(float(x0))
            for _ in range(8):
                dp = n * (x * mp.legendre(n, x) - mp.legendre(n - 1, x)) / (x * x - 1)
                x -= mp.legendre(n, x) / dp
            dp = n * (x * mp.legendre(n, x) - mp.legendre(n - 1, x)) / (x * x - 1)
            assert h == float((1 + x) / 2) and w == float(1 / ((1 - x * x) * dp * dp))
    # it integrates polynomials of degree 2 n - 1 exactly (to rounding), not 2 n
    for k in range(2 * n):
        assert abs(float(np.dot(weights, nodes**k)) - 1 / (k + 1)) <= 4 * U
    assert abs(float(np.dot(weights, nodes ** (2 * n))) - 1 / (2 * n + 1)) > 1e-12
    # the remainder's constant (n!)^4 / ((2n+1) ((2n)!)^3), read off the rule itself: its
    # error on t^(2n) is that constant times (2n)!
    with mp.workdps(40):
        terms = (mp.mpf(float(w)) * mp.mpf(float(h)) ** (2 * n)
                 for h, w in zip(nodes, weights, strict=True))
        err = mp.mpf(1) / (2 * n + 1) - mp.fsum(terms)
        const = float(err / mp.factorial(2 * n))
    assert truncation_coefficient(n) == pytest.approx(
        17.5 / 0.42 * const * math.factorial(2 * n), rel=1e-6)
    # the 7-point rule covers every narrow bin (Delta / R <= 1/8)
    assert RHO[7] > 1 / 8 > RHO[4]
    # on the xfail's grid the narrow bins are nearly all; a wide bin is left to the CDFs
    law = PoissonSubsampledLossLaw(GaussianLossLaw(mu=0.2), 1e-6, "remove")
    x = law._preimage(_nodes(law, 1.862645149230957e-09))[0]
    with np.errstate(invalid="ignore"):  # -inf - -inf below the loss's floor
        ok = _narrow(np.diff(x), (x[:-1] - 0.02) / 0.2, 0.2)[2]
    assert ok.mean() > 0.9
    wide = _narrow(np.array([0.1]), np.array([-0.1]), 0.2)[2]
    assert not wide[0]


@pytest.mark.parametrize(("sigma", "q", "step"), SETTINGS)
def test_quadrature_within_its_relative_bound(sigma, q, step):
    # the cancelling part alone, P0(B) - e^{x_a} Q0(B) at the float edges, at 50 digits
    from dpacct.accountant.laws.sgm_split import _narrow

    mu = 1.0 / sigma
    law = PoissonSubsampledLossLaw(GaussianLossLaw(mu=mu), q, "remove")
    x = law._preimage(_nodes(law, step))[0]
    with np.errstate(invalid="ignore"):  # -inf - -inf below the loss's floor
        d0, rel, ok, _ = _narrow(np.diff(x), (x[:-1] - 0.5 * mu**2) / mu, mu)
    idx = np.flatnonzero(ok)[:: max(1, int(ok.sum()) // 60)]
    worst = 0.0
    with mp.workdps(50):
        m = mp.mpf(mu)
        for j in idx:
            xa, xb = mp.mpf(x[j]), mp.mpf(x[j + 1])
            p0 = mp.ncdf((xb - m**2 / 2) / m) - mp.ncdf((xa - m**2 / 2) / m)
            q0 = mp.ncdf((xb + m**2 / 2) / m) - mp.ncdf((xa + m**2 / 2) / m)
            t = p0 - mp.exp(xa) * q0
            assert abs(mp.mpf(d0[j]) - t) <= rel[j] * abs(mp.mpf(d0[j])), (j, d0[j], t)
            worst = max(worst, float(abs(mp.mpf(d0[j]) - t) / t))
    assert worst > 0.0  # the rounding is there (the bound is not vacuous)


def test_ndtr_within_the_allowance():
    # re-measure scipy's ndtr on a fresh sample: at most half of what the bound allows
    from scipy import special

    rng = np.random.default_rng(4646)
    t = np.concatenate([-rng.uniform(0.0, -T_MIN, 1500), -(10.0 ** rng.uniform(-12, 1.5, 500))])
    v = special.ndtr(t)
    with mp.workdps(40):
        for ti, vi in zip(t, v, strict=True):
            exact = mp.ncdf(mp.mpf(ti))
            rel = abs((mp.mpf(vi) - exact) / exact) / U
            assert rel <= 0.5 * KAPPA * (1.0 + ti * ti), (ti, rel)


@pytest.mark.parametrize("direction", ["remove", "add"])
@pytest.mark.parametrize(("sigma", "q", "step"), SETTINGS[:3])
def test_split_keeps_mass_and_rounds_up(sigma, q, step, direction):
    law = PoissonSubsampledLossLaw(GaussianLossLaw(mu=1.0 / sigma), q, direction)
    lo, hi = _nodes(law, step)[[1, -2]]
    b = _bins_from_law(law, step, float(lo), float(hi))
    assert b.split is not None
    nodes = (b.first + np.arange(b.m.size + 1)) * step  # the bins' nodes
    c = -math.expm1(-step)
    _, pmf, _ = _upper_from_bins(b)
    # each bin's upper share; the PMF is node j+1 <- share_j, node j <- m_j - share_j
    shares = grid._split_up(b, c)
    assert np.all(shares >= 0.0) and np.all(shares <= b.m)
    rebuilt = np.zeros(b.m.size + 1)
    rebuilt[1:] += shares
    rebuilt[:-1] += b.m - shares
    rebuilt[0] += b.bottom[0]
    assert np.array_equal(rebuilt, pmf)
    assert abs(pmf.sum() - (b.m.sum() + b.bottom[0])) <= 1e-14
    n = b.m.size
    idx = np.unique(np.linspace(0, n - 1, 120).astype(int))
    with mp.workdps(50):
        for j, (t, m) in zip(idx, _truth(law, nodes, idx), strict=True):
            exact = min(max(t / (1 - mp.exp(-mp.mpf(step))), 0), mp.mpf(b.m[j]))
            assert mp.mpf(shares[j]) >= exact, (j, shares[j], exact, m)


@pytest.mark.parametrize("direction", ["remove", "add"])
def test_pessimistic_grid_dominates_the_exact_curve(direction):
    sigma, q, step = 5.0, 1e-6, 1.862645149230957e-09
    law = PoissonSubsampledLossLaw(GaussianLossLaw(mu=1.0 / sigma), q, direction)
    pld = discretize(law, step, pessimistic=True, tail=1e-15)
    eps = np.array([0.0, 1e-7, 5e-7, 1e-6, 2e-6])
    got = pld.delta(eps)
    mu = mp.mpf(1.0 / sigma)
    with mp.workdps(40):
        for e, g in zip(eps, got, strict=True):
            # hockey stick of the pair, read through the base: delta = E_P[(1 - e^{e-L})_+]
            if direction == "remove":
                x = mp.log((mp.exp(mp.mpf(e)) - 1 + q) / q)  # loss > e  <=>  base x > this
                tail_p = 1 - mp.ncdf((x - mu**2 / 2) / mu)
                tail_q = 1 - mp.ncdf((x + mu**2 / 2) / mu)
                exact = q * tail_p + (1 - q) * tail_q - mp.exp(mp.mpf(e)) * tail_q
            elif mp.exp(-mp.mpf(e)) - 1 + q <= 0:  # above the largest loss -log(1 - q)
                exact = mp.mpf(0)
            else:
                x = -mp.log((mp.exp(-mp.mpf(e)) - 1 + q) / q)
                tail_p = 1 - mp.ncdf((x - mu**2 / 2) / mu)
                tail_q = 1 - mp.ncdf((x + mu**2 / 2) / mu)
                exact = tail_p - mp.exp(mp.mpf(e)) * ((1 - q) * tail_p + q * tail_q)
            assert g >= exact, (e, g, exact)
            # and not by much: the grid's own error, and the tails (1e-15 each) at +inf
            assert g <= exact * (1 + 1e-2) + 2e-15, (e, g, exact)


def test_other_laws_keep_the_grid_difference():
    # a plain Gaussian law supplies no numerators: the split reads m - r as before
    b = _bins_from_law(GaussianLossLaw(mu=1.0), 1e-3, -3.0, 4.0)
    assert b.split is None


@pytest.mark.parametrize("mu", [1e-300, 1e-160, 40.0])
@pytest.mark.parametrize("direction", ["remove", "add"])
def test_extreme_mu_falls_back_without_raising(mu, direction):
    # mu^2 underflows (a noise multiplier of 1e300: ZeroDivisionError in the first cut of
    # the quadrature), or e^{x_a} overflows (mu 40: losses past 709): those bins keep the
    # differences or go whole onto their upper node, and the grid is still built
    law = PoissonSubsampledLossLaw(GaussianLossLaw(mu=mu), 0.01, direction)
    lo, hi = law.quantile_bounds(1e-12)
    step = (hi - lo) / 2000 if hi > lo else 1e-300
    b = _bins_from_law(law, step, lo, hi)
    assert b.split is not None
    _, pmf, _ = _upper_from_bins(b)
    assert np.all(np.isfinite(pmf)) and np.all(pmf >= 0.0)
    assert abs(pmf.sum() - (b.m.sum() + b.bottom[0])) <= 1e-12


# ---------------------------------------------------------------- the cells' numerators
#: (sigma, q, step) for the vectorised cells: main's q = 1e-7 grid read delta(0) 2.9e-10
#: below the total variation, DP-SGD's, q near one
CELL_SETTINGS = [
    (2.0, 1e-7, 2.0**-31),
    (5.0, 1e-6, 1.862645149230957e-09),
    (1.1, 0.01, 6.103515625e-05),
    (0.5, 0.3, 2.0**-12),
    (4.0, 1.0 - 1e-9, 2.0**-16),
]


def _cell_truth(xl, xr, s, q, node, add):
    """50-digit ``m - r`` of a cell's bin between data preimages ``xl``, ``xr``."""
    with mp.workdps(50):
        s, q = mp.mpf(s), mp.mpf(q)
        lo, hi = sorted((mp.mpf(xl), mp.mpf(xr)))
        n0 = mp.ncdf(hi / s) - mp.ncdf(lo / s)  # N(0, s^2)
        n1 = mp.ncdf((hi - 1) / s) - mp.ncdf((lo - 1) / s)  # N(1, s^2)
        mix = (1 - q) * n0 + q * n1
        m, nq = (n0, mix) if add else (mix, n0)
        return m - mp.exp(mp.mpf(node)) * nq, m


@pytest.mark.parametrize("add", [False, True])
@pytest.mark.parametrize(("sigma", "q", "step"), CELL_SETTINGS)
def test_cell_numerators_within_their_bound(sigma, q, step, add):
    from dpacct.accountant.laws.sgm_split import cell_numerators
    from dpacct.accountant.pld.sgm_cells import _cell_ranges, _x_of_loss

    s_, q_ = np.array([sigma]), np.array([q])
    first, nb = _cell_ranges(s_, q_, step, 1e-12, add)
    a = (first[0] + np.arange(nb[0] + 1)) * step
    x = _x_of_loss(-a if add else a, np.full(a.size, sigma), np.full(a.size, q))
    d, err = cell_numerators(a[:-1], x[:-1], x[1:], np.full(nb[0], sigma),
                             np.full(nb[0], q), add)
    idx = np.unique(np.linspace(0, nb[0] - 1, 120).astype(int))
    for j in idx:
        t, m = _cell_truth(x[j], x[j + 1], sigma, q, a[j], add)
        assert abs(mp.mpf(d[j]) - t) <= mp.mpf(err[j]), (j, d[j], err[j], t)
        if m > 1e-6:  # and tight: a small part of the bin's mass moved up one step
            # (at q = 1e-7 up to 1.8e-7: the cells' float preimages sit 1e-9 off the
            # nodes' exact ones, log1p(-exp(.)) near the floor; bounded by g's term)
            assert err[j] <= 1e-6 * float(m) * -math.expm1(-step), (j, err[j], m)


@pytest.mark.parametrize(("sigma", "q", "step"), CELL_SETTINGS[:2])
def test_pessimistic_cell_is_above_the_total_variation(sigma, q, step):
    # delta(0) of one step is q TV(N(1, s^2), N(0, s^2)) = q (2 Phi(1 / (2 s)) - 1); the
    # difference of the masses read it 2.9e-10 below at q = 1e-7 (session 47)
    from dpacct.accountant.pld.sgm_cells import _pessimistic_cells

    first, pmfs, inf = _pessimistic_cells(np.array([sigma]), np.array([q]), step, 1e-15, False)
    p = pmfs[0]
    loss = (first[0] + np.arange(p.size)) * step
    with mp.workdps(40):
        got = mp.fsum(mp.mpf(float(w)) * -mp.expm1(-mp.mpf(float(v)))
                      for w, v in zip(p, loss, strict=True) if v > 0) + mp.mpf(float(inf[0]))
        truth = q * (2 * mp.ncdf(1 / (2 * mp.mpf(sigma))) - 1)
    assert got >= truth, float(got / truth - 1)
    assert got <= truth * (1 + 1e-8), float(got / truth - 1)
