"""Privacy-loss laws: distribution functions and hockey-stick curves vs mpmath."""

import mpmath as mp
import numpy as np
import pytest

from dpacct.accountant.laws.loss_law import AtomicLossLaw, GaussianLossLaw, PoissonSubsampledLossLaw

mp.mp.dps = 30


def mp_subsampled_hockey(q: float, sigma: float, eps: float, direction: str) -> mp.mpf:
    """Hockey stick of the Poisson-subsampled Gaussian pair by integration.

    remove: P = (1-q) N(0,s) + q N(1,s), Q = N(0,s);  add: the reverse pair.
    delta = int (p - e^eps q)_+ dx, split at the crossing point found by findroot.
    """
    s, q, eps = mp.mpf(sigma), mp.mpf(q), mp.mpf(eps)

    def phi(x, m):
        return mp.e ** (-((x - m) ** 2) / (2 * s**2)) / (s * mp.sqrt(2 * mp.pi))

    def mix(x):
        return (1 - q) * phi(x, 0) + q * phi(x, 1)

    if direction == "remove":
        p, qq = mix, (lambda x: phi(x, 0))
    else:
        p, qq = (lambda x: phi(x, 0)), mix

    def f(x):
        return max(p(x) - mp.e**eps * qq(x), 0)

    # the privacy loss is monotone in x: find where p = e^eps q and integrate one side
    g = lambda x: mp.log(p(x)) - mp.log(qq(x)) - eps  # noqa: E731
    lo, hi = mp.mpf(-40), mp.mpf(40)
    if g(lo) * g(hi) > 0:
        return mp.quad(f, [-mp.inf, 0, 1, mp.inf])
    x0 = mp.findroot(g, (lo, hi), solver="bisect")
    pts = [-mp.inf, x0, mp.inf]
    return mp.quad(f, pts)


@pytest.mark.parametrize("direction", ["remove", "add"])
@pytest.mark.parametrize("q, sigma", [(0.01, 1.0), (0.2, 0.7), (0.5, 2.0)])
@pytest.mark.parametrize("eps", [0.0, 0.05, 0.5, 2.0])
def test_subsampled_hockey_stick(direction, q, sigma, eps):
    law = PoissonSubsampledLossLaw(GaussianLossLaw(mu=1.0 / sigma), q, direction)
    got = float(law.hockey_stick(np.array([eps]))[0])
    want = float(mp_subsampled_hockey(q, sigma, eps, direction))
    assert got == pytest.approx(want, rel=1e-8, abs=1e-14)


@pytest.mark.parametrize("direction", ["remove", "add"])
def test_subsampled_masses_are_consistent(direction):
    """cdf + sf = total mass under both measures, and Q-mass = E_P[e^-L] per bin."""
    law = PoissonSubsampledLossLaw(GaussianLossLaw(mu=1.0), 0.05, direction)
    x = np.linspace(-3, 3, 101)
    np.testing.assert_allclose(law.cdf_p(x) + law.sf_p(x), 1 - law.inf_mass, rtol=0, atol=1e-14)
    np.testing.assert_allclose(law.cdf_q(x) + law.sf_q(x), 1.0, rtol=0, atol=1e-14)
    edges = np.linspace(-0.06, 0.06, 25)
    mp_, mq = law.bin_masses(edges)
    # within a bin, e^{-b} m <= q-mass <= e^{-a} m
    assert np.all(mq <= mp_ * np.exp(-edges[:-1]) * (1 + 1e-9) + 1e-17)
    assert np.all(mq >= mp_ * np.exp(-edges[1:]) * (1 - 1e-9) - 1e-17)


def test_gaussian_law_moments():
    law = GaussianLossLaw(mu=0.8)
    # P(L > mean) = 1/2 with mean mu^2/2
    assert float(law.sf_p(np.array([0.32]))[0]) == pytest.approx(0.5, rel=1e-14)
    assert float(law.sf_q(np.array([-0.32]))[0]) == pytest.approx(0.5, rel=1e-14)


def test_atomic_law_randomized_response():
    p = 0.8
    law = AtomicLossLaw.from_pair(np.array([p, 1 - p]), np.array([1 - p, p]))
    eps = np.log(p / (1 - p))
    # delta(0) = p - (1-p) (total variation); delta(log 4) = 0
    assert float(law.hockey_stick(np.array([0.0]))[0]) == pytest.approx(0.6, rel=1e-14)
    assert float(law.hockey_stick(np.array([eps]))[0]) == pytest.approx(0.0, abs=1e-15)


def test_atomic_law_infinite_losses():
    law = AtomicLossLaw.from_pair(np.array([0.5, 0.5, 0.0]), np.array([0.25, 0.0, 0.75]))
    assert law.inf_mass == pytest.approx(0.5)
    assert law.q_neg_inf_mass == pytest.approx(0.75)
    assert float(law.hockey_stick(np.array([100.0]))[0]) == pytest.approx(0.5)


@pytest.mark.parametrize("tail", [1e-3, 1e-12, 1e-20])
def test_quantile_bounds_guarantee(tail):
    law = PoissonSubsampledLossLaw(GaussianLossLaw(mu=1.25), 0.001, "remove")
    lo, hi = law.quantile_bounds(tail)
    assert float(law.cdf_p(np.array([lo]))[0]) <= tail
    assert float(law.sf_p(np.array([hi]))[0]) <= tail
    assert lo < hi


def test_quantiles_and_spread_are_searched_once_per_law():
    # both ends of epsilon_bounds plan their grids from one law (issue 37): the
    # bisections run once per tail, and the kept answers are a fresh law's, bit for bit
    calls = []

    class Counting(PoissonSubsampledLossLaw):
        def sf_p(self, x):
            calls.append(1)
            return super().sf_p(x)

    law = Counting(GaussianLossLaw(mu=1 / 1.1), 0.01, "remove")
    first = (law.quantile_bounds(1e-20), law.quantile_bounds(1e-6), law.spread())
    asked = len(calls)
    again = (law.quantile_bounds(1e-20), law.quantile_bounds(1e-6), law.spread())
    assert len(calls) == asked > 0
    fresh = PoissonSubsampledLossLaw(GaussianLossLaw(mu=1 / 1.1), 0.01, "remove")
    assert first == again == (fresh.quantile_bounds(1e-20), fresh.quantile_bounds(1e-6),
                              fresh.spread())


@pytest.mark.parametrize("edge", [-3.7e12, -2.5, -1e-7, 0.0, 4e-9, 0.37, 12.5, 8e13])
def test_boundary_search_finds_the_flip_point_anywhere(edge):
    """The vectorised bracket covers +-1e-3 * 2^47; beyond it the scalar doubling
    takes over.  The point returned satisfies the predicate and is within 1e-10
    relative (or 1e-300 absolute) of the true flip point."""
    from dpacct.accountant.laws.loss_law import _boundary

    x = _boundary(lambda v: np.asarray(v) >= edge)
    assert x >= edge
    assert x - edge <= 1e-10 * max(abs(edge), abs(x)) + 1e-300


def _masses_by_the_full_rule(law, edges):
    """Bin masses with every distribution function evaluated at every edge."""
    out = []
    for cdf, sf in ((law.cdf_p, law.sf_p), (law.cdf_q, law.sf_q)):
        c, s = cdf(edges), sf(edges)
        use_cdf = c[1:] < s[:-1]
        out.append(np.maximum(np.where(use_cdf, c[1:] - c[:-1], s[:-1] - s[1:]), 0.0))
    return out


@pytest.mark.parametrize("seed", range(8))
def test_bin_masses_evaluate_each_side_only_where_needed(seed):
    """The shortcut (one distribution function per side of the median) gives exactly
    the masses of the full rule, for windows left of, right of and around the median,
    and for laws with mass at +inf."""
    from dpacct.mechanisms import LaplaceMechanism

    rng = np.random.default_rng(seed)
    laws = [
        GaussianLossLaw(mu=float(rng.uniform(0.1, 3))),
        PoissonSubsampledLossLaw(GaussianLossLaw(mu=1.2), float(rng.uniform(1e-3, 0.5)), "remove"),
        PoissonSubsampledLossLaw(GaussianLossLaw(mu=0.7), float(rng.uniform(1e-3, 0.5)), "add"),
        AtomicLossLaw.from_pair(np.array([0.2, 0.7, 0.1]), np.array([0.5, 0.5, 0.0])),
        LaplaceMechanism(b=float(rng.uniform(0.5, 5)))._loss_laws()[0],
    ]
    for law in laws:
        lo, hi = law.quantile_bounds(1e-12)
        for a, b in ((lo, hi), (lo, 0.5 * (lo + hi)), (0.5 * (lo + hi), hi), (lo - 1, lo)):
            edges = np.sort(rng.uniform(a, b, size=int(rng.integers(2, 400))))
            got = law.bin_masses(edges)
            want = _masses_by_the_full_rule(law, edges)
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])
