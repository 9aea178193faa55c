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


@pytest.mark.parametrize("steps_up", [1, 10**4, 10**12, 10**15, None])
def test_inverse_converges_near_the_flat_left_end(steps_up):
    # with a zero sensitivity the loss flattens to log p_0 on the left; the inverse must
    # be the root there (bisection in mpmath at 60 digits), not a point Newton crept to
    import math

    import mpmath

    law = GaussianMixtureLossLaw(
        sigma=0.5, sensitivities=[0.0, 1.0, 3.0], probabilities=[0.5, 0.3, 0.2]
    )
    floor = math.log(0.5)
    x = 3.0 if steps_up is None else floor + steps_up * math.ulp(floor)
    mpmath.mp.dps = 60
    a = [mpmath.mpf(0), mpmath.mpf(2), mpmath.mpf(6)]
    # the law holds log p_i rounded to doubles; the reference uses those exact values
    logp = [mpmath.mpf(float(v)) for v in np.log([0.5, 0.3, 0.2])]
    target = mpmath.mpf(x)

    def excess(t):
        terms = [mpmath.exp(lp + ai * t - ai * ai / 2) for lp, ai in zip(logp, a, strict=True)]
        return mpmath.log(sum(terms)) - target

    lo, hi = mpmath.mpf(-400), mpmath.mpf(50)
    for _ in range(300):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if excess(mid) < 0 else (lo, mid)
    t = float(law._inverse(np.array([x]))[0])
    assert t == pytest.approx(float(hi), rel=1e-9, abs=1e-9)
