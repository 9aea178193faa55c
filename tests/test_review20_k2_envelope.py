"""Review 20 (issue 39): the k = 2 route's one-epoch remove law against the exact pair.

Session 20 makes the remove law of one 2-of-T epoch the lower convex envelope of the
direct atoms (Proposition 3) and the two blocks (Proposition 1), Proposition 5 of
docs/theory/allocation_k_of_t.md.  The envelope is composed over epochs, which is sound
only if the law's hockey-stick curve ``H_gamma = sum_i p_i (1 - gamma e^(-l_i))_+ +
P(+inf)`` is above the exact epoch's at *every* ``gamma >= 0`` -- below ``gamma = 1``
(negative epsilon) too, where a one-epoch ``epsilon(delta)`` never looks.  Here that
curve is checked at ``T = 3`` against the exact quadrature of
tests/test_review18b_k2_quadrature.py (``E_Q[(Lambda - gamma)_+]``, the likelihood ratio
``Lambda`` of 2-of-3 allocation integrated in closed form in one coordinate and by a
trapezoid rule in the other two): nothing is taken from dpacct.

No finding (the review's passing check, a guard): measured on ws20-k2b at cd62a8a and
3998a33 (``envelope=True``: there the one-step block is the Gaussian pair itself),
law / exact = 1.0000 at gamma 0.001-0.01, 1.0013 at 0.1, 1.010 at 0.3, 1.027 at 0.6,
1.049 at 1, 1.11 at 3, 1.26 at 50 (sigma 1); sigma 0.7 and 2 alike.  It holds on
main too (there the law is Lemma 4's truncated atoms, also a pair for every gamma).
Several epochs were checked by Monte Carlo (3e5 draws a direction, 99.9 % intervals:
T 10 at E 2, 5, 10; T 20, E 3; T 30, E 6; T 100, E 2): no upper end below the truth.
"""

from __future__ import annotations

import math

import numpy as np
from test_review18b_k2_quadrature import _exact_t3

from dpacct.accountant.transformers.random_allocation_k2 import AllocationK2Remove


def test_one_epoch_remove_law_is_above_the_exact_curve_at_every_gamma():
    gammas = np.array([0.01, 0.1, 0.3, 0.6, 1.0, 3.0, 10.0, 50.0])
    try:  # ws20-k2b: several epochs compose the envelope, one epoch the truncated law
        pair = AllocationK2Remove(1.0, 3, progress=False, envelope=True)
    except TypeError:  # main: Lemma 4's truncated law, composed at every E
        pair = AllocationK2Remove(1.0, 3, progress=False)
    law = pair._loss_laws()[0]
    p, loss = np.asarray(law.p), np.asarray(law.losses)
    got = np.array(
        [float(np.sum(p * np.clip(1.0 - g * np.exp(-loss), 0.0, None))) + law.inf_mass
         for g in gammas]
    )
    exact = np.array([_exact_t3(1.0, [math.log(g)])[0, 0] for g in gammas])
    # the quadrature (step 0.04) is converged to about 1e-5 relative
    assert np.all(got >= exact * (1 - 2e-5)), np.c_[gammas, got / exact]
    # not vacuous: within a third of the exact value where delta lives
    assert np.all(got <= exact * 1.35), np.c_[gammas, got / exact]
