"""Grid PLDs: certified discretisation, composition, tail cuts, inversion."""

import math

import numpy as np
import pytest
from scipy import integrate

from dpacct.accountant.loss_law import AtomicLossLaw, GaussianLossLaw, PoissonSubsampledLossLaw
from dpacct.accountant.pld import GridPLD, discretize
from dpacct.accountant.pld_fft import _accurate_convolve, _tail_cuts
from dpacct.mechanisms import gaussian_delta

EPS = np.array([0.0, 0.3, 1.0, 2.5, 5.0])


@pytest.mark.parametrize("step", [1e-1, 1e-2, 1e-3])
def test_gaussian_discretisation_brackets(step):
    law = GaussianLossLaw(mu=1.0)
    exact = law.hockey_stick(EPS)
    up = discretize(law, step, pessimistic=True)
    lo = discretize(law, step, pessimistic=False)
    assert np.all(up.delta(EPS) >= exact * (1 - 1e-12))
    assert np.all(lo.delta(EPS) <= exact * (1 + 1e-12))
    # mass is conserved by the upper discretisation
    assert up.pmf.sum() + up.inf_mass == pytest.approx(1.0, abs=1e-12)


def test_gap_is_second_order_in_the_step():
    law = GaussianLossLaw(mu=1.0)
    exact = law.hockey_stick(np.array([1.0]))[0]
    gaps = []
    for step in (2.0**-4, 2.0**-6):
        lo = discretize(law, step, pessimistic=False).delta(1.0)
        gaps.append((exact - lo) / exact)
    # a step four times smaller shrinks the error about sixteen-fold
    assert gaps[1] < gaps[0] / 10


@pytest.mark.parametrize("count", [2, 7, 100, 1000])
def test_self_composition_of_gaussians_matches_closed_form(count):
    """k Gaussians with mu compose to a Gaussian with mu sqrt(k) (exactly)."""
    mu = 0.5
    law = GaussianLossLaw(mu=mu)
    up = discretize(law, 2.0**-7, pessimistic=True).self_compose(count)
    lo = discretize(law, 2.0**-7, pessimistic=False).self_compose(count)
    mu_k = mu * math.sqrt(count)
    eps = np.array([0.5, 1.0, 2.0]) * max(mu_k, 1.0)
    exact = gaussian_delta(mu_k, eps)
    assert np.all(up.delta(eps) >= exact * (1 - 1e-9))
    assert np.all(lo.delta(eps) <= exact * (1 + 1e-9))
    np.testing.assert_allclose(up.delta(eps), exact, rtol=2e-2)
    np.testing.assert_allclose(lo.delta(eps), exact, rtol=2e-2)


def test_composition_cost_is_logarithmic_in_count():
    law = GaussianLossLaw(mu=1e-3)
    base = discretize(law, 2.0**-16, pessimistic=True)
    small = base.self_compose(10)
    big = base.self_compose(10**7)
    # the grid adapts: the composed PLD has a bounded size either way
    assert big.pmf.size < 20 * small.pmf.size + 10_000
    mu_k = 1e-3 * math.sqrt(1e7)
    exact = gaussian_delta(mu_k, np.array([5.0]))[0]
    assert big.delta(5.0) >= exact * (1 - 1e-9)
    assert big.delta(5.0) == pytest.approx(exact, rel=2e-2)


def test_two_step_dpsgd_against_quadrature():
    """Two subsampled-Gaussian steps: delta by nested quadrature of the exact law."""
    q, sigma = 0.2, 1.0
    law = PoissonSubsampledLossLaw(GaussianLossLaw(mu=1 / sigma), q, "remove")

    # delta_2(eps) = E_{x ~ P}[ hockey_1(eps - L(x)) ], P = (1-q) N(0,1) + q N(1,1)
    def loss(x):
        return math.log1p(q * math.expm1((2 * x - 1) / (2 * sigma**2)))

    def dens(x):
        return (1 - q) * math.exp(-x * x / 2) / math.sqrt(2 * math.pi) + q * math.exp(
            -((x - 1) ** 2) / 2
        ) / math.sqrt(2 * math.pi)

    def integrand(x, eps):
        return dens(x) * float(law.hockey_stick(np.array([eps - loss(x)]))[0])

    step = 2.0**-12
    up = discretize(law, step, pessimistic=True).self_compose(2)
    lo = discretize(law, step, pessimistic=False).self_compose(2)
    for eps in (0.0, 0.2, 0.6):
        want, err = integrate.quad(integrand, -12, 13, args=(eps,), epsabs=1e-13, limit=400)
        assert err < 1e-9
        assert lo.delta(eps) <= want + 1e-9
        assert up.delta(eps) >= want - 1e-9
        assert up.delta(eps) == pytest.approx(want, rel=1e-3)


def test_epsilon_inverts_delta():
    law = GaussianLossLaw(mu=1.0)
    pld = discretize(law, 1e-3, pessimistic=True)
    for d in (0.3, 1e-3, 1e-6, 1e-10):
        e = pld.epsilon(d)
        assert pld.delta(e) <= d * (1 + 1e-9)
        assert pld.delta(e * (1 - 1e-6) - 1e-9) > d
    assert pld.epsilon(0.99) == 0.0


def test_infinite_mass_gives_infinite_epsilon():
    pld = GridPLD(step=0.5, offset=0, pmf=np.array([0.5, 0.4]), inf_mass=0.1, pessimistic=True)
    assert pld.epsilon(0.05) == math.inf
    assert pld.delta(100.0) == pytest.approx(0.1)


def test_regrid_keeps_certificates():
    law = GaussianLossLaw(mu=0.7)
    exact = law.hockey_stick(EPS)
    up = discretize(law, 2.0**-10, pessimistic=True).regrid(2.0**-6)
    lo = discretize(law, 2.0**-10, pessimistic=False).regrid(2.0**-6)
    assert up.step == 2.0**-6
    assert np.all(up.delta(EPS) >= exact * (1 - 1e-12))
    assert np.all(lo.delta(EPS) <= exact * (1 + 1e-12))


def test_lattice_law_is_exact():
    p = 0.75
    c = math.log(3.0)
    law = AtomicLossLaw.from_pair(np.array([p, 1 - p]), np.array([1 - p, p]), lattice=c)
    up = discretize(law, c, pessimistic=True).self_compose(10, max_step=c)
    lo = discretize(law, c, pessimistic=False).self_compose(10, max_step=c)
    eps = np.array([0.0, 2 * c, 4 * c + 0.1])
    np.testing.assert_allclose(up.delta(eps), lo.delta(eps), rtol=1e-9, atol=1e-15)


def test_tail_cuts_match_brute_force():
    rng = np.random.default_rng(1)
    for _ in range(200):
        a = rng.random(rng.integers(1, 40)) ** 6
        b = rng.random(rng.integers(1, 40)) ** 6
        a /= a.sum()
        b /= b.sum()
        c = np.convolve(a, b)
        tail = 10 ** rng.uniform(-6, -0.5)
        # the bottom cut has its own budget (GridPLD.convolve gives it more)
        bottom = tail * 10 ** rng.uniform(-1, 3)
        k_lo, m_lo, k_hi, m_hi = _tail_cuts(a, b, c, tail, bottom)
        top = np.cumsum(c[::-1])[::-1]
        bot = np.cumsum(c)
        if k_hi < c.size:
            assert m_hi == pytest.approx(top[k_hi], rel=1e-12, abs=1e-18)
            assert m_hi <= tail
        if k_lo >= 0:
            assert m_lo == pytest.approx(bot[k_lo], rel=1e-12, abs=1e-18)
            assert m_lo <= bottom


def test_accurate_convolution_keeps_tail_relative_precision():
    x = np.arange(-400, 401) * 0.02
    a = np.exp(-(x**2) / 2)
    a /= a.sum()
    c = _accurate_convolve(a, a, tail=1e-40)
    # exact convolution of two sampled Gaussians, computed in log space at the tail
    want_end = a[-1] * a[-1]
    assert c[-1] == pytest.approx(want_end, rel=1e-6)
    plain = np.convolve(a, a)
    np.testing.assert_allclose(c[700:900], plain[700:900], rtol=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_regridding_bins_match_an_atom_by_atom_count(seed):
    """Each fine atom at absolute index i falls in coarse bin ceil(i/f) - 1 at
    rem = i - f j fine steps above its left node: checked against a plain loop."""
    from dpacct.accountant.pld import _bins_from_grid

    rng = np.random.default_rng(seed)
    size, offset, f = int(rng.integers(1, 300)), int(rng.integers(-500, 500)), 2 ** (seed + 1)
    pmf = rng.random(size)
    pld = GridPLD(2.0**-7, offset, pmf / pmf.sum(), 0.0, True)
    bins = _bins_from_grid(pld, pld.step * f)
    m, r, atoms = {}, {}, {}
    for k, p in enumerate(pld.pmf):
        i = offset + k
        j = -((-i) // f) - 1
        rem = i - f * j
        m[j] = m.get(j, 0.0) + p
        r[j] = r.get(j, 0.0) + p * math.exp(-rem * pld.step)
        atoms[j] = atoms.get(j, 0.0) + (p if rem == f else 0.0)
    for j in m:
        assert bins.m[j - bins.first] == pytest.approx(m[j], rel=1e-12)
        assert bins.r[j - bins.first] == pytest.approx(min(r[j], m[j]), rel=1e-12)
        assert bins.atoms[j - bins.first] == pytest.approx(atoms[j], rel=1e-12, abs=0)
    assert bins.m.sum() == pytest.approx(1.0, rel=1e-12)


def test_tail_cuts_match_brute_force_on_long_arrays():
    """Arrays longer than the 64-entry first chunk (and squaring, b is a): the cut
    found by partial sums is the one full cumulative sums give, its mass exact."""
    rng = np.random.default_rng(7)
    for trial in range(120):
        a = rng.random(int(rng.integers(50, 700))) ** 8
        a /= a.sum()
        b = a if trial % 3 == 0 else rng.random(int(rng.integers(50, 700))) ** 8
        if b is not a:
            b /= b.sum()
        c = np.convolve(a, b)
        tail = 10 ** rng.uniform(-14, -1)
        k_lo, m_lo, k_hi, m_hi = _tail_cuts(a, b, c, tail)
        top = np.cumsum(c[::-1])[::-1]
        bot = np.cumsum(c)
        if k_hi < c.size:
            assert m_hi == pytest.approx(top[k_hi], rel=1e-9, abs=1e-18)
            assert m_hi <= tail
        if k_lo >= 0:
            assert m_lo == pytest.approx(bot[k_lo], rel=1e-9, abs=1e-18)
            assert m_lo <= tail


@pytest.mark.parametrize("side", [1, -1])
@pytest.mark.parametrize("square", [True, False])
def test_accurate_convolution_of_one_sided_tails_matches_direct_sums(side, square):
    """The one-step PLD of a subsampled mechanism: a narrow peak at one end and a long
    one-sided tail falling 40 orders of magnitude.  Every entry matches the direct
    convolution (sums of non-negative terms, exact to rounding) to 1e-8 relative."""
    i = np.arange(3000, dtype=float)
    a = np.exp(-0.5 * ((i - 20) / 4) ** 2) + 1e-3 * np.exp(-i / 80.0)
    b = a if square else np.exp(-0.5 * ((i[:2500] - 35) / 6) ** 2) + 1e-4 * np.exp(-i[:2500] / 60.0)
    if side < 0:
        a = a[::-1].copy()
        b = a if square else b[::-1].copy()
    got = _accurate_convolve(a, b, tail=1e-300)
    want = np.convolve(a, b)
    assert want.min() < 1e-30 * want.max()  # the tails really are deep
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=0)


@pytest.mark.parametrize("seed", range(6))
def test_strided_lower_hull_matches_the_monotone_chain(seed):
    from dpacct.accountant.pld_hull import _lower_hull, _lower_hull_chain

    rng = np.random.default_rng(seed)
    n = [3, 7, 60, 1000, 20000, 20000][seed]
    x = np.sort(rng.random(n)) + np.arange(n) * 1e-9
    y = (x - 0.5) ** 2 + rng.random(n) * [0.0, 1e-3, 1.0][seed % 3]
    # deep dips (nodes lowered by a chord gap) and a flat run of zeros at the end
    y = y - (rng.random(n) < 0.01) * rng.random(n) * 0.5
    if seed % 2:
        y = np.where(x > 0.7, 0.0, y)
    hull, chain = _lower_hull(x, y), _lower_hull_chain(x, y)
    # the chain drops collinear points, the passes keep them: the same polyline
    assert set(chain.tolist()) <= set(hull.tolist())
    np.testing.assert_allclose(
        np.interp(x, x[hull], y[hull]), np.interp(x, x[chain], y[chain]), rtol=0, atol=1e-12
    )
    assert np.all(y >= np.interp(x, x[hull], y[hull]) - 1e-12)


def test_as_law_is_the_atomic_law_of_the_grid():
    """``GridPLD.as_law``: the grid's atoms as a loss law, Q-masses ``p e^{-loss}``.

    Randomized response truthful with probability 3/4 has the losses +-log 3 with
    P-masses 3/4 and 1/4, so its PLD sits exactly on the grid of step log 3; its
    hockey-stick divergence is ``max(0, 3/4 - e^eps / 4)`` (written out by hand)."""
    step = math.log(3.0)
    pld = GridPLD(
        step=step, offset=-1, pmf=np.array([0.25, 0.0, 0.75]), inf_mass=0.0, pessimistic=True
    )
    law = pld.as_law()
    eps = np.array([0.0, 0.5, 1.0, step, 2.0])
    expected = np.maximum(0.0, 0.75 - np.exp(eps) * 0.25)
    assert law.hockey_stick(eps) == pytest.approx(expected, abs=1e-15)
    # the grid's own curve: the same, rounded up for floating point (a pessimistic PLD)
    d = pld.delta(eps)
    assert np.all(expected <= d) and np.all(d <= expected * (1 + 1e-9) + 1e-15)
