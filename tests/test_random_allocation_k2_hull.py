"""The envelope of two bounds on a k = 2 epoch's remove direction
(accountant/transformers/random_allocation_k2_hull.py, Proposition 5 of
docs/theory/allocation_k_of_t.md), on a pair known exactly: its hockey-stick curves, and
those of its two-fold product, are sums computed here with math.fsum; the route itself is
checked against Monte Carlo in tests/test_random_allocation_k2.py.
"""

from __future__ import annotations

import math

import numpy as np

from dpacct.accountant.transformers.random_allocation_k2_hull import envelope_remove_law


def _curve(vals, qmass, inf, gam):
    """Exact ``sum_i q_i (v_i - gamma)_+ + inf`` (math.fsum per gamma)."""
    return np.array([math.fsum(qi * max(vi - g, 0.0) for vi, qi in zip(vals, qmass, strict=True))
                               + inf
                     for g in gam])


def _product(vals, qmass, e):
    """The e-fold product pair's likelihood ratios and Q-masses, enumerated."""
    v, q = np.array([1.0]), np.array([1.0])
    for _ in range(e):
        v, q = np.outer(v, vals).ravel(), np.outer(q, qmass).ravel()
    return v, q


def test_envelope_law_bounds_the_exact_pair_below_both_bounds():
    # Proposition 5 (docs/theory/allocation_k_of_t.md) on a pair known exactly: C has
    # likelihood ratios (0.5, 1, 3) under Q; A splits the atom at 3 into 2 and 4 (a
    # convex-order bound: exact below 2, loose in the tail), B scales every ratio by
    # 1.02 (a pointwise bound with excess mass, as Cauchy-Schwarz: loose in the bulk,
    # tight in the tail).  The envelope must hold C at every gamma, in one and two
    # epochs (products enumerated), and lie strictly below each bound somewhere.
    qc = np.array([0.5, 0.3, 0.15])
    vc = np.array([0.5, 1.0, 3.0])
    qc = np.append(qc, 1.0 - qc.sum())  # the rest at ratio 0
    vc = np.append(vc, 0.0)
    assert abs(qc @ vc - 1.0) < 1e-15
    va, qa = np.array([0.5, 1.0, 2.0, 4.0]), np.array([0.5, 0.3, 0.075, 0.075])
    vb, qb = 1.02 * vc[:3], qc[:3]
    law = envelope_remove_law((vb, qb, 0.0), (va, qa * va, 0.0))
    ve, qe = np.exp(law.losses), law.p * np.exp(-law.losses)
    assert abs(float(law.p.sum()) + law.inf_mass - 1.0) < 1e-12
    gam = np.concatenate((np.linspace(0.0, 20.0, 2001), [0.77, 1.9, 3.03, 3.9]))
    for e in (1, 2):
        h = _curve(*_product(vc, qc, e), 0.0, gam)
        env = _curve(*_product(ve, qe, e), 0.0, gam) + e * law.inf_mass
        ga = _curve(*_product(va, qa, e), 0.0, gam)
        gb = _curve(*_product(vb, qb, e), 0.0, gam)
        assert np.all(env >= h - 1e-15)
        assert np.all(env <= np.minimum(ga, gb) + 1e-12)
        assert np.any(env < ga - 1e-3) and np.any(env < gb - 1e-3)
    # beyond B's top ratio (3.06) the envelope is B's 0 (A's is 0.0375 at 3.5); at 0.77
    # (bulk) it is A's, which is C's there
    one = _curve(ve, qe, law.inf_mass, np.array([0.77, 3.5]))
    assert abs(one[0] - _curve(vc, qc, 0.0, [0.77])[0]) < 1e-12
    assert one[1] < 1e-12 < _curve(va, qa, 0.0, [3.5])[0]

