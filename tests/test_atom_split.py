"""accountant/pld/atom_split.py: the pessimistic split of purely atomic laws, atom by
atom, against 60-digit truths built from the pairs' definitions."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpacct.accountant.laws.loss_law import (
    AtomicLossLaw,
    GaussianLossLaw,
    PoissonSubsampledLossLaw,
)
from dpacct.accountant.pld.atom_split import _exact_products, atom_upper_pmf, finite_atoms
from dpacct.accountant.pld.grid import discretize


def _rr_base(eps0):
    p = math.exp(eps0) / (1 + math.exp(eps0))
    return AtomicLossLaw(losses=np.array([-eps0, eps0]), p=np.array([1 - p, p]))


def _true_atoms(eps0, base_p, q, direction):
    """The subsampled pair's atoms (loss, P-mass) at 60 digits, from the definitions:
    remove ((1-q) Q + q P, Q); add (Q, (1-q) Q + q P), with the base's float masses."""
    with mp.workdps(60):
        q = mp.mpf(q)
        out = []
        for x, p in zip((-eps0, eps0), base_p, strict=True):
            x, p = mp.mpf(x), mp.mpf(p)
            if direction == "remove":
                pq = p * mp.exp(-x)  # the base Q-mass
                out.append((mp.log(1 - q + q * mp.exp(x)), (1 - q) * pq + q * p))
            else:  # base is log(dQ/dP): P_a = Q, Q_a = P
                out.append((-mp.log(1 - q + q * mp.exp(-x)), p))
        return out


def _hockey(atoms, eps):
    with mp.workdps(60):
        e = mp.mpf(eps)
        return mp.fsum(w * (1 - mp.exp(e - y)) for y, w in atoms if y > e)


@pytest.mark.parametrize("direction", ["remove", "add"])
@pytest.mark.parametrize(("eps0", "q"), [(1e-4, 1e-5), (0.002, 1e-4), (1.0, 0.3)])
def test_images_are_within_their_error(eps0, q, direction):
    base = _rr_base(eps0)
    law = PoissonSubsampledLossLaw(base, q, direction)
    y, w, err = finite_atoms(law)
    truth = _true_atoms(eps0, base.p, q, direction)
    assert np.all(err > 0)
    for yi, wi, ei, (ty, tw) in zip(y, w, err, sorted(truth), strict=True):
        assert abs(mp.mpf(float(yi)) - ty) <= ei
        assert abs(mp.mpf(float(wi)) - tw) <= 1e-14 * tw


@pytest.mark.parametrize("direction", ["remove", "add"])
@pytest.mark.parametrize(
    ("eps0", "q", "points"), [(1e-4, 1e-5, 64), (0.002, 1e-4, 64), (1.0, 0.3, 7)]
)
def test_discretisation_dominates_at_every_real_epsilon(eps0, q, points, direction):
    base = _rr_base(eps0)
    law = PoissonSubsampledLossLaw(base, q, direction)
    truth = _true_atoms(eps0, base.p, q, direction)
    top = float(max(abs(y) for y, _ in truth))
    pld = discretize(law, top / points, pessimistic=True)
    rng = np.random.default_rng(5)
    # epsilons near the atoms and the nodes, negative ones included
    eps = np.concatenate(
        [
            rng.uniform(-1.2 * top, 1.2 * top, 200),
            np.array([float(y) for y, _ in truth]),
            pld.losses[:: max(pld.losses.size // 50, 1)],
        ]
    )
    for e in eps:
        exact = _hockey(truth, float(e))
        got = mp.mpf(float(pld.delta(float(e))))
        assert got >= exact, (e, got, exact)
    # tight: one step's chord gap at most, not a mass moved a node
    mid = float(truth[1][0]) * 0.5 if truth[1][0] > 0 else 0.0
    exact = _hockey(truth, mid)
    assert float(pld.delta(mid)) <= float(exact) * (1 + 1e-3) + 1e-15


def test_the_split_keeps_a_fine_step_sound_where_the_bins_were_not():
    # the reproducer of session 41's fuzz, one step: q eps0 = 1e-9, step 1.6e-11
    base = _rr_base(1e-4)
    law = PoissonSubsampledLossLaw(base, 1e-5, "remove")
    truth = _true_atoms(1e-4, base.p, 1e-5, "remove")
    pld = discretize(law, 1.562578126822904e-11, pessimistic=True)
    for e in np.linspace(-1.1e-9, 1.1e-9, 101):
        assert mp.mpf(float(pld.delta(float(e)))) >= _hockey(truth, float(e))


def test_atoms_sit_at_or_above_their_float_on_a_real_node():
    law = AtomicLossLaw(losses=np.array([0.3, 0.75]), p=np.array([0.4, 0.6]))
    split = atom_upper_pmf(law, 0, 3, 0.5)
    pmf = split.pmf()
    assert split.beyond == 0.0 and split.below == 0.0
    with mp.workdps(40):
        c = 1 - mp.exp(-mp.mpf(0.5))
        s1 = (1 - mp.exp(mp.mpf(0) - mp.mpf(0.3))) / c  # 0.3 in (0, 0.5]
        s2 = (1 - mp.exp(mp.mpf(0.5) - mp.mpf(0.75))) / c  # 0.75 in (0.5, 1]
        want = [0.4 * (1 - s1), 0.4 * s1 + 0.6 * (1 - s2), 0.6 * s2]
    # the top node gets at least its exact share, the bottom one at most: P-mass moves up
    assert want[2] <= pmf[2] <= want[2] * (1 + 1e-14)
    assert want[0] * (1 - 1e-14) <= pmf[0] <= want[0]
    assert abs(math.fsum(pmf) - 1.0) < 1e-15
    # an atom beyond the last node goes to +inf, one below the first onto it
    far = AtomicLossLaw(losses=np.array([-3.0, 5.0]), p=np.array([0.5, 0.5]))
    split = atom_upper_pmf(far, -2, 5, 0.5)
    assert split.beyond == 0.5 and split.below == 0.5 and split.pmf()[0] == 0.5
    # restricted to some bins, the tails only with tails=True
    part = split.restricted(np.array([True, False, False, False]), tails=False)
    assert part.below == part.beyond == 0.0 and part.pmf().sum() == 0.0


def test_laws_with_a_continuous_part_have_no_atoms():
    assert finite_atoms(GaussianLossLaw(mu=1.0)) is None
    sub = PoissonSubsampledLossLaw(GaussianLossLaw(mu=1.0), 0.1, "remove")
    assert finite_atoms(sub) is None
    assert atom_upper_pmf(sub, 0, 10, 0.1) is None


def test_exact_products_are_exact():
    rng = np.random.default_rng(11)
    k = rng.integers(-(2**25), 2**25, size=300)
    step = 10.0 ** rng.uniform(-12, 2, size=300)
    for kk, s in zip(k, step, strict=True):
        hi, lo = _exact_products(np.array([kk]), float(s))
        assert Fraction(float(hi[0])) + Fraction(float(lo[0])) == int(kk) * Fraction(float(s))


def _pair_hockey(base_losses, base_p, q, direction, eps, dps=80):
    """delta(eps) of the Poisson-subsampled pair of a two-atom base, at ``dps`` digits,
    from the pair's masses (no loss images): sum over atoms of (P' - e^eps Q')_+."""
    with mp.workdps(dps):
        q, e = mp.mpf(q), mp.exp(mp.mpf(eps))
        total = mp.mpf(0)
        for x, p in zip(base_losses, base_p, strict=True):
            p = mp.mpf(p)
            qm = p * mp.exp(-mp.mpf(x))  # the base Q-mass
            if direction == "remove":  # ((1-q) Q + q P, Q)
                a, b = (1 - q) * qm + q * p, qm
            else:  # (Q', P') with Q' = base Q, P' = (1-q) base Q + q base P ... as laws
                a, b = p, (1 - q) * p + q * qm
            total += max(a - e * b, 0)
        return total


@pytest.mark.parametrize("eps", [300.0, 600.0, 712.0])
def test_atoms_past_expm1_overflow_are_kept(eps):
    """Review 42: images of atoms past 709.78 (expm1 overflow) were dropped, and a
    subsampled two-atom law at +-715 read delta(300) as 1e-300."""
    x = np.array([-715.0, 715.0])
    p = np.array([math.exp(-715.0) / (1 + math.exp(-715.0)), 1 / (1 + math.exp(-715.0))])
    base = AtomicLossLaw(losses=x, p=p)
    pld = discretize(PoissonSubsampledLossLaw(base, 0.5, "remove"), 1e-2, pessimistic=True)
    truth = _pair_hockey(x, p, 0.5, "remove", eps)
    assert truth > 0.4
    assert pld.delta(eps) >= truth


def test_subsampled_discrete_gaussian_far_tail():
    """Review 42: a subsampled discrete Gaussian at sigma 0.0456 has atoms beyond 709;
    delta(300) read 1e-300 against 1.86e-105 (the old main's value, restored)."""
    from dpacct.accountant import poisson_subsample
    from dpacct.mechanisms import DiscreteGaussianMechanism

    sigma, q = 0.0456, 0.5
    m = poisson_subsample(DiscreteGaussianMechanism(sigma), q)
    with mp.workdps(60):
        s2 = mp.mpf(sigma) ** 2
        ks = range(-40, 41)
        z = mp.fsum(mp.exp(-(mp.mpf(k) ** 2) / (2 * s2)) for k in ks)
        pk = {k: mp.exp(-(mp.mpf(k) ** 2) / (2 * s2)) / z for k in ks}
        e = mp.exp(300)
        # remove: ((1-q) N(0) + q N(1), N(0)) and add: (N(0), (1-q) N(0) + q N(1))
        rem = mp.fsum(max((1 - q) * pk[k] + q * pk.get(k - 1, 0) - e * pk[k], 0) for k in ks)
        add = mp.fsum(max(pk[k] - e * ((1 - q) * pk[k] + q * pk.get(k - 1, 0)), 0) for k in ks)
    truth = max(rem, add)
    assert truth > 1e-106
    assert m.delta(300.0) >= truth


def test_images_near_q_one_are_within_their_error():
    """Review 42: at q = 1 - 1e-10, log1p(q expm1(x)) near -1 amplified the rounding of
    its argument 6e7 times past the 32u allowed; the grid read 1.1e-15 against 6.6e-8."""
    from scipy.special import expit

    x = np.array([-30.0, 30.0])
    p = expit(x)
    q = 1.0 - 1e-10
    base = AtomicLossLaw(losses=x, p=p)
    law = PoissonSubsampledLossLaw(base, q, "add")
    y, _, err = finite_atoms(law)
    with mp.workdps(60):
        for yi, ei, xi in zip(y, err, x, strict=True):
            ty = -mp.log(1 - mp.mpf(q) + mp.mpf(q) * mp.exp(-mp.mpf(xi)))
            assert abs(mp.mpf(float(yi)) - ty) <= ei
    eps = 23.02491545677185
    pld = discretize(law, 2.0**-22, pessimistic=True, tail=1e-9)
    assert pld.delta(eps) >= _pair_hockey(x, p, q, "add", eps)


def test_exact_products_exact_for_large_multipliers():
    """Review 42: multipliers past 2^26 had a half-ulp bound rounded the wrong way for
    the lower node; both factors are now split, exact for every k."""
    k = np.array([2.0**26 + 3, -(2.0**40) - 7, 2.0**52 - 1])
    step = 0.1
    hi, lo = _exact_products(k, step)
    for ki, h, low in zip(k, hi, lo, strict=True):
        assert Fraction(float(h)) + Fraction(float(low)) == Fraction(float(ki)) * Fraction(step)


def _true_image(x, q, direction):
    with mp.workdps(80):
        q, x = mp.mpf(q), mp.mpf(x)
        sign = 1 if direction == "remove" else -1
        z = q * mp.expm1(sign * x)  # log1p keeps tiny images exact at 80 digits
        return sign * mp.log1p(z)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    x=st.floats(-900.0, 900.0),
    q1=st.one_of(st.floats(1e-12, 1 - 1e-12), st.sampled_from([1e-300, 0.5, 1 - 2.0**-52])),
    q2=st.floats(1e-6, 1 - 1e-9),
    d1=st.sampled_from(["remove", "add"]),
    d2=st.sampled_from(["remove", "add"]),
    nested=st.booleans(),
)
def test_images_within_their_error_property(x, q1, q2, d1, d2, nested):
    """Every image, at any depth, is within its stated absolute error of the 80-digit
    truth, composed from the real (not float) images."""
    base = AtomicLossLaw(losses=np.array([x]), p=np.array([1.0]))
    law = PoissonSubsampledLossLaw(base, q1, d1)
    truth = _true_image(x, q1, d1)
    if nested:
        law = PoissonSubsampledLossLaw(law, q2, d2)
        truth = _true_image(truth, q2, d2)
    got = finite_atoms(law)
    # the remove direction adds the Q-only atom log(1 - q) only if the base has one
    y, err = got[0], got[2]
    assert y.size >= 1
    i = int(np.argmin(np.abs(y - float(truth))))
    with mp.workdps(80):
        assert abs(mp.mpf(float(y[i])) - truth) <= mp.mpf(float(err[i]))


def test_two_scale_parts_keep_the_atom_split():
    """Review 43: the two-scale discretisation restricted its bins without the atom
    split, and fell back to the bin split's cancellation: 7.5e-8 relative short."""
    from dpacct.accountant.pld.twoscale import discretize_split

    p = np.array(
        [0.5008014262316833, 0.49919852584075847, 3.852235941135071e-08, 9.40519873217109e-09]
    )
    q = np.array(
        [0.49919852584075847, 0.5008014262316833, 9.40519873217109e-09, 3.852235941135071e-08]
    )
    x = np.log(p) - np.log(q)
    rate = 5.035425789946229e-05
    law = PoissonSubsampledLossLaw(AtomicLossLaw(losses=x, p=p), rate, "add")
    eps, step = 1.6015377330347125e-07, 1.0136314766042486e-09
    split = discretize_split(law, step, pessimistic=True, tail=1e-18)
    assert split.coarse is not None  # the case is the two-scale one
    with mp.workdps(60):
        e = mp.exp(mp.mpf(eps))
        truth = mp.fsum(
            max(mp.mpf(a) - e * ((1 - mp.mpf(rate)) * mp.mpf(a) + mp.mpf(rate) * mp.mpf(b)), 0)
            for a, b in zip(p, q, strict=True)
        )
    assert split.merged(1 << 19).delta(eps) >= truth


def test_subsampled_pure_dp_near_q_one():
    """Review 43: subsampled PureDP(30) at q = 1 - 1e-9 went two-scale and read delta
    1.5 % short just below the top loss (its node's float 1.1e-16 below the real one)."""
    from dpacct.accountant import poisson_subsample
    from dpacct.mechanisms import PureDPMechanism

    e0, rate = 30.0, 0.999999999
    m = poisson_subsample(PureDPMechanism(e0), rate)
    with mp.workdps(60):
        q, ee = mp.mpf(rate), mp.exp(mp.mpf(e0))
        pp, pq = ee / (1 + ee), 1 / (1 + ee)  # the pure-DP pair's atoms (P, Q)

        def truth(eps):
            e = mp.exp(mp.mpf(eps))
            # remove ((1-q) Q + q P, Q) and add (Q, (1-q) Q + q P) over the pair's two atoms
            rem = sum(max((1 - q) * b + q * a - e * b, 0) for a, b in ((pp, pq), (pq, pp)))
            add = sum(max(b - e * ((1 - q) * b + q * a), 0) for a, b in ((pp, pq), (pq, pp)))
            return max(rem, add)

        for eps in (29.999999969, 29.999999998999993):
            assert m.delta(eps) >= truth(eps)


def test_a_subclass_with_its_own_functions_keeps_them():
    """Review 43: a subclass of AtomicLossLaw overriding its distribution functions was
    discretised from its parent's atoms (delta 1e-300 against its own 0.347)."""
    other = _rr_base(2.0)

    class Reported(AtomicLossLaw):
        def cdf_p(self, x):
            return other.cdf_p(x)

        def sf_p(self, x):
            return other.sf_p(x)

        def cdf_q(self, x):
            return other.cdf_q(x)

        def sf_q(self, x):
            return other.sf_q(x)

        def bin_masses(self, e):
            return other.bin_masses(e)

        def _bins_and_ends(self, e):
            return other._bins_and_ends(e)

        def quantile_bounds(self, t):
            return other.quantile_bounds(t)

    base = _rr_base(1.0)
    law = Reported(losses=base.losses, p=base.p)
    assert finite_atoms(law) is None
    assert finite_atoms(PoissonSubsampledLossLaw(law, 0.5, "remove")) is None
    own = float(law.hockey_stick(np.array([1.5]))[0])
    assert own > 0.3
    assert discretize(law, 0.01, pessimistic=True).delta(1.5) >= own
