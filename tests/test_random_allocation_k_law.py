"""The law builder of random allocation at every k >= 3
(accountant/transformers/random_allocation_k_law.py, Propositions 7 and 9 of
docs/theory/allocation_k_of_t.md).

Independent values: the value functions against ``e_k`` computed by the recurrence of
``benchmarks.random_allocation_k_truth`` on random vectors, and at k = 3 against
Proposition 7's closed forms; the union charge against a brute-force sum over every
``j``-set; the binning against ``math.log`` and ``math.ceil`` element by element, and its
charge of the dropped elements against their expected value summed directly.  (The laws
themselves are checked against closed forms and Monte Carlo in
tests/test_random_allocation_k3.py and tests/test_random_allocation_k4.py.)
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.random_allocation_k_truth import elementary
from dpacct.accountant.transformers.random_allocation_k2_three import _DLOG
from dpacct.accountant.transformers.random_allocation_k_law import (
    _add_counts,
    _bin_affine,
    _tails,
    settings,
    union_charge,
    value_coefficients,
)


def test_value_functions_and_charges_against_brute_force():
    # V_1, V_2 >= e_k / C(T, k) on random vectors (Maclaurin); equal when the others
    # are equal; the union charge equals the brute-force sum over j-sets
    rng = np.random.Generator(np.random.PCG64(39_400))
    t, k = 7, 4
    z = np.exp(rng.normal(0.0, 1.5, (2000, t)))
    z[0, :] = 1.0  # all equal: Maclaurin is an equality
    ek = elementary(z, k)[:, k] / math.comb(t, k)
    zs = np.sort(z, axis=1)
    c1, c2 = value_coefficients(t, k, 1), value_coefficients(t, k, 2)
    r1, r2 = zs[:, :-1].sum(1), zs[:, :-2].sum(1)
    v1 = c1[1] * zs[:, -1] * r1 ** (k - 1) + c1[0] * r1**k
    v2 = (c2[2] * zs[:, -1] * zs[:, -2] * r2 ** (k - 2)
          + c2[1] * (zs[:, -1] + zs[:, -2]) * r2 ** (k - 1) + c2[0] * r2**k)
    assert np.all(v1 >= ek * (1 - 1e-12)) and np.all(v2 >= ek * (1 - 1e-12))
    assert v1[0] == pytest.approx(ek[0], rel=1e-12) and v2[0] == pytest.approx(ek[0], rel=1e-12)
    assert not np.all(v2 <= ek * 1.01)  # the bound is not an identity
    ps, pu = _tails(1.0, 2.0)
    brute = 0.0
    for idx in range(1 << t):  # every 3-set of coordinates, the record's steps 0..k-1
        if bin(idx).count("1") == 3:
            brute += math.prod(ps if (idx >> c) & 1 and c < k else pu
                               for c in range(t) if (idx >> c) & 1)
    assert union_charge(1.0, t, k, 3, 2.0) == pytest.approx(brute, rel=1e-10)


def test_k3_coefficients_are_proposition_7s():
    # Proposition 7: V_1 = (m r^2 (T-2) / (2 (T-1)) + C(T-1, 3) (r / (T-1))^3) / C(T, 3),
    # V_2 = (m_1 m_2 r + (m_1 + m_2) r^2 (T-3) / (2 (T-2)) + C(T-2, 3) (r / (T-2))^3) / C(T, 3)
    for t in (3, 10, 100):
        c3 = math.comb(t, 3)
        c1, c2 = value_coefficients(t, 3, 1), value_coefficients(t, 3, 2)
        assert c1 == pytest.approx([math.comb(t - 1, 3) / (t - 1) ** 3 / c3,
                                    (t - 2) / (2.0 * (t - 1)) / c3], rel=1e-14)
        assert c2 == pytest.approx([math.comb(t - 2, 3) / (t - 2) ** 3 / c3,
                                    (t - 3) / (2.0 * (t - 2)) / c3, 1.0 / c3], rel=1e-14)
    assert settings(1.0, 100, 3)["log_theta"] == pytest.approx(-0.5 + 3.4)
    assert settings(1.0, 100, 4)["log_theta"] == pytest.approx(-0.5 + 3.0)


def test_binning_rounds_every_value_up_by_at_most_one_step_and_charges_the_rest():
    rng = np.random.Generator(np.random.PCG64(39_240))
    b = np.exp(rng.normal(0.0, 3.0, 300))
    a, c = np.exp(rng.normal(0.0, 3.0, 500)), np.exp(rng.normal(0.0, 3.0, 500))
    c[:5] = 0.0
    wb, pc = np.exp(rng.normal(-20.0, 6.0, 300)), np.exp(rng.normal(-20.0, 6.0, 500))
    off, drop = 400_000, 1e-20
    hist = np.zeros(2 * off)
    charge = _bin_affine(hist, b, a, c, wb, pc, off, drop)
    v, mass = b[:, None] * a[None, :] + c[None, :], wb[:, None] * pc[None, :]
    # reference index ceil(ln v / _DLOG) + off, element by element
    exact = np.array([math.ceil(math.log(x) / _DLOG) for x in v.ravel()]) + off
    kept = (mass >= drop).ravel()
    ref_kept = np.bincount(exact[kept], weights=mass.ravel()[kept], minlength=hist.size)
    ref_all = np.bincount(exact, weights=mass.ravel(), minlength=hist.size)

    def tail(h):
        return np.cumsum(h[::-1])[::-1]

    # every element of mass >= drop is binned, at its exact index or one above
    assert np.all(tail(hist) >= tail(ref_kept) * (1 - 1e-12))
    assert np.all(tail(hist)[1:] <= tail(ref_all)[:-1] * (1 + 1e-12))
    assert mass[mass >= drop].sum() <= hist.sum() <= mass.sum() * (1 + 1e-12)
    # what is not binned is charged its E[value]: binned + charged bounds E[value] from
    # above, by at most one grid step
    grid = np.exp((np.arange(hist.size) - off) * _DLOG)
    total, truth = float(hist @ grid) + charge, float((mass * v).sum())
    assert 0 < charge <= float((mass * v)[mass < drop].sum()) * (1 + 1e-9)
    assert truth * (1 - 1e-12) <= total <= truth * math.exp(_DLOG) * (1 + 1e-9)
    down = np.roll(hist, -1)  # the check can fail: every atom one grid step lower
    assert not np.all(tail(down) >= tail(ref_kept) * (1 - 1e-12))


@pytest.mark.parametrize("rows", [1, 2])
def test_add_counts_is_one_bincount_over_the_span_bit_for_bit(rows):
    """Session 33: the counts of index 0 (values at or below the grid's least) far below
    the rest are added apart (a slot just below the least other index); every bin must be
    bit-equal to one ``bincount`` over ``0..hi`` (sequential sums in the input's order)."""
    rng = np.random.Generator(np.random.PCG64(33_101))
    nb = 400_000
    cases = []
    for zeros in (0, 1, 500):
        ix = rng.integers(300_000, 300_000 + 5_000, 20_000)
        ix[rng.choice(ix.size, zeros, replace=False)] = 0
        cases.append(ix)
    cases.append(rng.integers(0, 3, 1_000))  # lo 0, hi small: one bincount
    cases.append(np.r_[np.zeros(10, np.int64), rng.integers(1, 9_000, 1_000)])  # lo2 1
    cases.append(rng.integers(5, 50_000, 1_000))  # lo > 0
    for ix in cases:
        wt = np.exp(rng.normal(-10.0, 5.0, ix.size))
        start = np.exp(rng.normal(-10.0, 5.0, (rows, nb)))[0 if rows == 1 else slice(None)]
        hist, ref = start.copy(), start.copy()
        lo, hi = int(ix.min()), int(ix.max())
        ref[..., : hi + 1] += np.bincount(ix, weights=wt, minlength=hi + 1)
        _add_counts(hist, ix.copy(), wt, lo, hi)
        assert np.array_equal(hist, ref)
