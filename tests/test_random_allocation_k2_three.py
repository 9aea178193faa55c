"""Proposition 6, the (max, second, sum) law of k = 2 random allocation
(accountant/transformers/random_allocation_k2_three.py).

Independent values: the exact 2-of-3 pair by quadrature (tests/test_review18b_*, a
log-normal call in the third coordinate integrated over the other two), and a seeded
Monte Carlo of the exact likelihood ratio ``e_2(z) / C(T, 2)`` of both directions at
T 3 and 10 (tests/test_random_allocation_k2.py's ``_mc``), each bound asserted above
the lower end of a 99.9 % interval (mean - 3.29 standard errors), with the interval
shown able to reject a bound 5 % below the estimate.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpacct.accountant import random_allocation
from dpacct.accountant.transformers import random_allocation_k2 as k2
from dpacct.accountant.transformers.random_allocation_k2 import (
    AllocationK2Remove,
    uses_three,
)
from dpacct.accountant.transformers.random_allocation_k2_three import _add_binned, three_atoms
from dpacct.mechanisms import GaussianMechanism


def _curve(atoms, eps):
    v, q, c = atoms
    g = np.exp(np.asarray(eps, dtype=float))
    return np.maximum(v[None, :] - g[:, None], 0.0) @ q + c


@pytest.mark.slow
def test_holds_the_exact_2_of_3_pair_below_proposition_3():
    from test_review18b_k2_quadrature import _exact_t3

    # sigma 0.7, T 3: the curve is above the exact pair's (quadrature) at every
    # epsilon, within 25 % of it in the tail (measured 1.21, 1.12, 1.04 at 6, 9, 10),
    # and below Proposition 3's there
    eps = np.array([0.0, 1.0, 3.0, 6.0, 9.0, 10.0])
    exact = _exact_t3(0.7, eps)[:, 0]
    new = _curve(k2.k2_remove_atoms(0.7, 3), eps)  # Proposition 6's (cached)
    old = _curve(k2._build(0.7, 3, False), eps)
    assert np.all(new >= exact), (new, exact)
    assert np.all(new[3:] <= 1.25 * exact[3:]), (new / exact)
    assert np.all(new[3:] < old[3:]), (new, old)
    # the mechanism's answer: 10.070 at delta 1e-6 (main, Proposition 3: 10.174); the
    # exact pair is at delta 9.0e-7 there and at 1.3e-6 1 % lower
    assert uses_three(0.7, 3)
    e = float(random_allocation(GaussianMechanism(0.7), 3, k=2).epsilon(1e-6))
    assert e < 10.1
    at, below = _exact_t3(0.7, [e, 0.99 * e]).max(axis=1)
    assert at <= 1e-6 < below


def _check(bound, mean, se):
    lcb = mean - 3.29 * se
    assert np.all(lcb > 0.95 * mean), "the check could not reject a bound 5 % low"
    assert np.all(bound >= lcb), (bound, mean, se)


def _one_epoch_above_monte_carlo(t, eps):
    """One epoch at sigma 0.7: Proposition 6's atoms, the remove mechanism and the
    route's pair above the Monte Carlo of the exact pair."""
    from test_random_allocation_k2 import _mc

    sigma = 0.7
    assert uses_three(sigma, t)
    rng = np.random.default_rng(39_300 + t)
    (rm, rse), (am, ase) = _mc(sigma, t, eps, 1_000_000, rng)
    e = np.array(eps)
    _check(_curve(k2.k2_remove_atoms(sigma, t), e), rm, rse)  # Proposition 6's
    _check(np.asarray(AllocationK2Remove(sigma, t, progress=False).delta(e)), rm, rse)
    mech = np.asarray(random_allocation(GaussianMechanism(sigma), t, k=2).delta(e))
    _check(mech, np.maximum(rm, am), np.where(rm >= am, rse, ase))


@pytest.mark.slow
def test_both_directions_above_monte_carlo_at_t3():
    _one_epoch_above_monte_carlo(3, [0.0, 0.5])


def test_bad_input():
    with pytest.raises(ValueError, match="t must be"):
        three_atoms(1.0, 2)


def test_second_region_values_are_l2_rounded_up_one_grid_step():
    # Proposition 6's value L''(m_1, m_2, r) = (m_1 m_2 + (m_1 + m_2) r + kappa r^2) /
    # C(T, 2), from the closed form: each binned atom is at or above it (sound) and
    # within one step of the log grid (tight; session 21's binning added m_2 r twice)
    from dpacct.accountant.transformers.random_allocation_k2_three import _bin_pairs

    t, dlog, off = 10, 1e-4, 400_000
    cc, kap = t * (t - 1) / 2.0, (t - 3) / (2.0 * (t - 2))
    m = np.array([1.0, 2.0, 3.0, 7.0])
    w1 = np.array([0.0, 0.1, 0.2, 0.05])
    law, r = np.array([0.0, 0.3, 0.0, 0.7]), np.array([0.0, 4.0, 8.0, 12.0])
    hist = np.zeros(off + 100_000)
    tail = _bin_pairs(0.0, hist, law, r, m, w1, 1, 0.01, 0.002, t, off, 1e-30, 1e-30,
                      0.0, dlog)
    assert tail == 0.0
    nz = np.flatnonzero(hist)
    got = np.exp((nz - off) * dlog)
    want = {}
    for m1, wq in ((3.0, t * 0.01 * 0.2), (7.0, t * 0.01 * 0.05), (2.0, 0.002)):
        for rv, pr in ((4.0, 0.3), (12.0, 0.7)):
            val = (m1 * 2.0 + (m1 + 2.0) * rv + kap * rv * rv) / cc
            want[val] = want.get(val, 0.0) + wq * pr
    vals = np.array(sorted(want))
    assert got.size == vals.size
    assert np.all(got >= vals) and np.all(got <= vals * np.exp(dlog) * (1 + 1e-12)), (
        got / vals)
    np.testing.assert_allclose(hist[nz], [want[v] for v in vals], rtol=1e-14)


@pytest.mark.slow
def test_one_and_several_epochs_above_monte_carlo_at_t10():
    # one epoch at T 10 (its law is also the one the split must differ from: built once
    # here, where two tests built it before), then several epochs, which split M_2 at
    # 3.4 standard deviations (its own law, cached apart from one epoch's): the route
    # over 2 epochs against Monte Carlo of the exact pair
    from test_random_allocation_k2 import _mc

    sigma, t, eps = 0.7, 10, [0.5, 1.0, 1.5]
    _one_epoch_above_monte_carlo(t, [0.0, 0.5, 1.0])
    one = k2.k2_remove_atoms(sigma, t)
    two = k2.k2_remove_atoms(sigma, t, several=True)
    assert one[0].size != two[0].size or not np.array_equal(one[1], two[1])
    rng = np.random.default_rng(39_322)
    (rm, rse), (am, ase) = _mc(sigma, t, eps, 1_000_000, rng, epochs=2)
    e = np.array(eps)
    mech = random_allocation(GaussianMechanism(sigma), t, k=2, epochs=2)
    # the mechanism's own route (allocation_k2_pair(sigma, t, 2), cached on it): built
    # once for both checks (a separate allocation_k2_pair call re-composed it, ~1.2 s)
    run = mech.k2_route
    assert run.parts[0][1] == 2  # the remove law over 2 epochs
    _check(np.asarray(run.delta(e)), np.maximum(rm, am), np.where(rm >= am, rse, ase))
    _check(np.asarray(mech.delta(e)), np.maximum(rm, am), np.where(rm >= am, rse, ase))


# the binning kernel (issue 37, session 25): in place and over the indices' range alone, it
# adds to the histogram exactly what ``hist += bincount(index, weights, minlength=hist.size)``
# on the written-out index adds
def _reference(hist, lv, wts, off, ops, dlog):
    lv = np.maximum(lv * (1.0 + ops), 1e-300)
    ix = np.ceil(np.log(lv) / dlog).astype(np.int64) + off
    ix = np.clip(ix, 0, hist.size - 1)
    hist += np.bincount(ix.ravel(), weights=wts.ravel(), minlength=hist.size)


def test_add_binned_equals_the_whole_histograms_bincount():
    rng = np.random.default_rng(37_251)
    for i in range(40):
        shape = (int(rng.integers(0, 30)), int(rng.integers(1, 50)))
        lv = rng.exponential(1.0, shape) * 10.0 ** rng.uniform(-320, 3, shape)
        lv[rng.uniform(size=shape) < 0.1] = 0.0  # 0 goes up to the grid's least
        wts = rng.uniform(0.0, 1e-3, shape)
        nbin = int(rng.integers(1000, 60_000))
        off = int(rng.integers(0, nbin))  # some indices clipped at either end
        hist = rng.uniform(0.0, 1.0, nbin) * (rng.uniform(size=nbin) < 0.3)
        want = hist.copy()
        _reference(want, lv.copy(), wts, off, 1e-12, 1e-2 if i % 2 else 1e-4)
        _add_binned(hist, lv, wts, off, 1e-12, 1e-2 if i % 2 else 1e-4)
        assert hist.tobytes() == want.tobytes()


@pytest.mark.slow
def test_second_region_lattice_step_h2_keeps_the_exact_2_of_3_pair_below():
    # three_atoms' h2 (the second region's lattice step; session 33's measurements at
    # Dong & Ozgur's two epochs): at a finer and a coarser step than the default the
    # curve stays above the exact 2-of-3 pair by quadrature (an independent value) and
    # within 25 % of it in the tail; a curve 10 % lower fails the first check (the
    # ratio at epsilon 0 is 1.102, measured: 0.9 x the curve is below the exact pair)
    from test_review18b_k2_quadrature import _exact_t3

    from dpacct.accountant.transformers.random_allocation_k2_three import _settings

    eps = np.array([0.0, 1.0, 3.0, 6.0, 9.0])
    exact = _exact_t3(0.7, eps)[:, 0]
    h = _settings(0.7, 3)[3]
    default = _curve(three_atoms(0.7, 3), eps)
    curves = [_curve(three_atoms(0.7, 3, h2=h2), eps) for h2 in (h / 4.0, 4.0 * h)]
    for got in curves:
        assert np.all(got >= exact), got / exact
        assert np.all(got[3:] <= 1.25 * exact[3:]), got / exact
    assert any(not np.array_equal(got, default) for got in curves)  # h2 reaches the law
