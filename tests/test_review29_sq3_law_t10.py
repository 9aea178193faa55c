"""Review 29 (issue 39): Proposition 12's law at T 10, sigma 1.2 above an importance-sampled
exact 3-of-T pair, and never above main's where it is not the charge.

ws29-sq3 changes :func:`remove_atoms_sq3` (Proposition 12, the others' sum and sum of
squares; e.g. a chord in ``s`` instead of the floor of a sum of squares).  Its own Monte
Carlo test is at T 5; this one is at T 10 (coarse settings: cuts on a log step of 1, the
spread on powers of 2, cells at most 0.2 wide, as that test's), eps 3 and 4, against
``E_Q[(e_3(z) / C(10, 3) - e^eps)_+]``, ``z_t = exp((x_t - 1/2) / sigma^2)``, by the
k-subset-shift importance sampler of tests/test_random_allocation_k_law4.py (explicit
``numpy.random.Generator``; a sound curve never below its estimate less 3.29 standard
errors).  Main's curve is 1.8-2.8x the estimate here (1.7-2.5x on ws29-sq3's chord at
12:05).  The bar: main's (617417f) curve at eps 3-5.5 (the hockey stick above 1e-8,
where the charge ~1.0e-9 does not decide it), which a change may only lower.
Power: the bar fails on a main snapshot whose charge is 1.0001x main's (eps 5.5: 8.71914e-9
> 8.71904e-9); the Monte Carlo side only on gross errors at these coarse settings (the law
is 2.7x the estimate at eps 3): it fails with the law's Q-masses scaled by 0.3, not by 0.5,
nor with the others' e_3 dropped or the credited squares two cells up (the slack absorbs
them; ws29-sq3's own test at T 5 is the sharper one).  About 4 CPU s: marked slow.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_random_allocation_k_law4 import _is_remove

from dpacct.accountant.transformers.random_allocation_k_law_sq3 import remove_atoms_sq3

SIGMA, T = 1.2, 10
COARSE = dict(cut_step=1.0, rho=2.0, dl3=0.2, eta=1e-2)
EPS = np.array([3.0, 4.0, 5.0, 5.5])
#: main's (617417f) curve sum q (v - e^eps)_+ + charge of remove_atoms_sq3(1.2, 10, **COARSE)
MAIN = np.array([0.0008710206043899676, 1.4765129623712883e-05, 1.1422758572376852e-07,
                 8.719036163427144e-09])


@pytest.mark.slow  # about 4 CPU s (the law 2.5-3.5, the sampler 0.7)
def test_sq3_law_at_t10_above_the_exact_pair_and_not_above_mains():
    v, q, c = remove_atoms_sq3(SIGMA, T, **COARSE)
    curve = np.maximum(v[None, :] - np.exp(EPS)[:, None], 0.0) @ q + c
    assert np.all(curve <= MAIN * (1 + 1e-9)), (curve, MAIN)
    e = EPS[:2]
    m, se = _is_remove(SIGMA, T, 3, e, 400_000, np.random.Generator(np.random.PCG64(2910)))
    assert np.all(se < 0.05 * m), se / m
    assert np.all(curve[:2] >= m - 3.29 * se), (curve[:2], m, se)
