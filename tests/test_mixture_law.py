"""The mixture loss laws (``accountant/laws/mixture_law.py``) against independent values.

``GaussianMixtureLossLaw`` against the exact one-step hockey-stick divergence of the
pair computed in mpmath (both directions), and ``MixtureLossLaw`` against the weighted
average of its components' curves and masses.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_mixture_gaussian import CASES, _exact_delta

from dpacct.accountant.laws.loss_law_rdp import swapped_loss_law
from dpacct.accountant.laws.mixture_law import GaussianMixtureLossLaw, MixtureLossLaw


@pytest.mark.parametrize(("sigma", "sens", "probs"), CASES)
def test_law_is_the_exact_pair_in_both_directions(sigma, sens, probs):
    law = GaussianMixtureLossLaw(sigma, sens, probs)
    swapped = swapped_loss_law(law)
    for eps in (-0.5, 0.0, 0.3, 1.0, 3.0):
        want_r = _exact_delta(sigma, sens, probs, eps, "remove")
        want_a = _exact_delta(sigma, sens, probs, eps, "add")
        got_r = float(law.hockey_stick(np.array([eps]))[0])
        got_a = float(swapped.hockey_stick(np.array([eps]))[0])
        assert got_r == pytest.approx(want_r, rel=1e-9, abs=1e-15)
        assert got_a == pytest.approx(want_a, rel=1e-9, abs=1e-15)


def test_revealed_mixture_law_averages_its_components():
    a = GaussianMixtureLossLaw(1.0, [0.0, 1.0], [0.5, 0.5])
    b = GaussianMixtureLossLaw(0.5, [1.0], [1.0])
    mix = MixtureLossLaw((a, b), (0.3, 0.7))
    e = np.array([-1.0, 0.0, 0.5, 2.0])
    want = 0.3 * a.hockey_stick(e) + 0.7 * b.hockey_stick(e)
    np.testing.assert_allclose(mix.hockey_stick(e), want, rtol=1e-12, atol=1e-15)
    edges = np.linspace(-3, 3, 11)
    m_p, m_q = mix.bin_masses(edges)
    np.testing.assert_allclose(m_p, np.diff(mix.cdf_p(edges)), rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(m_q, np.diff(mix.cdf_q(edges)), rtol=1e-9, atol=1e-15)
