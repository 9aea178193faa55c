"""Review 35 (ws35-lowends 7738bff): an algorithm of one primitive used once must answer every
query at least as tightly as that primitive.

Until 7738bff ``Algorithm.privacy`` was the primitive itself for one primitive used once; since
then it is ``compose([primitive])``, which delegates ``epsilon``, ``epsilon_bounds`` and ``delta``
to the part (bea7c91) but answers ``tradeoff`` through the composition's own PLD route: for a
one-step DP-SGD (sigma 1.1, q 0.01) ``tradeoff(0.3)`` fell from 0.6965023294 to 0.6965005092 and
``tradeoff(0.01)`` from 0.98931796057 to 0.98931795838 (looser: a trade-off curve is a lower
bound on beta).  This test fails on 7738bff and passes on main 6aa3888."""

import numpy as np

from dpacct.mechanisms.algorithms.dp_sgd import DPSGD


def test_one_step_dpsgd_answers_as_its_primitive():
    alg = DPSGD(sigma=1.1, sample_rate=0.01, steps=1, loss="logistic")
    (prim,), (count,) = alg.primitives()
    assert count == 1
    fpr = np.array([1e-6, 0.01, 0.3, 0.7])
    alpha = np.array([1.5, 2.0, 8.0, 40.0])
    # trade-off: a lower bound on beta, so never below the primitive's
    assert np.all(np.asarray(alg.tradeoff(fpr)) >= np.asarray(prim.tradeoff(fpr)))
    assert np.all(np.asarray(alg.privacy.tradeoff(fpr)) >= np.asarray(prim.tradeoff(fpr)))
    # upper bounds: never above the primitive's
    assert np.all(np.asarray(alg.rdp(alpha)) <= np.asarray(prim.rdp(alpha)))
    for delta in (1e-9, 1e-5):
        assert alg.epsilon(delta) <= prim.epsilon(delta)
        lo, hi = alg.epsilon_bounds(delta)
        plo, phi = prim.epsilon_bounds(delta)
        assert lo >= plo and hi <= phi
    eps = np.array([0.0, 0.2, 1.0])
    assert np.all(np.asarray(alg.delta(eps)) <= np.asarray(prim.delta(eps)))
