"""accountant/pld/atom_split.py: the pessimistic split of purely atomic laws, atom by
atom, against 60-digit truths built from the pairs' definitions."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest

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
    assert err > 0
    for yi, wi, (ty, tw) in zip(y, w, sorted(truth), strict=True):
        assert abs(mp.mpf(float(yi)) - ty) <= err * abs(ty)
        assert abs(mp.mpf(float(wi)) - tw) <= 1e-14 * tw


@pytest.mark.parametrize("direction", ["remove", "add"])
@pytest.mark.parametrize(("eps0", "q", "points"), [(1e-4, 1e-5, 64), (0.002, 1e-4, 64), (1.0, 0.3, 7)])
def test_discretisation_dominates_at_every_real_epsilon(eps0, q, points, direction):
    base = _rr_base(eps0)
    law = PoissonSubsampledLossLaw(base, q, direction)
    truth = _true_atoms(eps0, base.p, q, direction)
    top = float(max(abs(y) for y, _ in truth))
    pld = discretize(law, top / points, pessimistic=True)
    rng = np.random.default_rng(5)
    # epsilons near the atoms and the nodes, negative ones included
    eps = np.concatenate([
        rng.uniform(-1.2 * top, 1.2 * top, 200),
        np.array([float(y) for y, _ in truth]),
        pld.losses[:: max(pld.losses.size // 50, 1)],
    ])
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
    pmf, beyond = atom_upper_pmf(law, 0, 3, 0.5)
    assert beyond == 0.0
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
    pmf, beyond = atom_upper_pmf(far, -2, 5, 0.5)
    assert beyond == 0.5 and pmf[0] == 0.5


def test_laws_with_a_continuous_part_have_no_atoms():
    assert finite_atoms(GaussianLossLaw(mu=1.0)) is None
    sub = PoissonSubsampledLossLaw(GaussianLossLaw(mu=1.0), 0.1, "remove")
    assert finite_atoms(sub) is None
    assert atom_upper_pmf(sub, 0, 10, 0.1) is None


def test_exact_products_are_exact():
    rng = np.random.default_rng(11)
    k = rng.integers(-(2**25), 2**25, size=300)
    step = 10.0 ** rng.uniform(-12, 2, size=300)
    for kk, st in zip(k, step, strict=True):
        hi, lo = _exact_products(np.array([kk]), float(st))
        assert Fraction(float(hi[0])) + Fraction(float(lo[0])) == int(kk) * Fraction(float(st))
