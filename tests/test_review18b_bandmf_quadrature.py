"""Review 18b (issue 39): two-band BandMF under balls-in-bins at n = 4, k = 2 against an
exact quadrature, on the strategies the module's tests do not cover.

No finding: the review's passing checks, kept as regressions (tests/test_bandmf_two_band.py
checks ``c = (1, 0.5)``; here ``c1 > c0``, ``c1 = 0`` and ``c1 = 3 c0``, at the coarse
``points=11`` where the hat masses are furthest from the Gaussians).  The independent
value is built from the matrix itself, not from the module's reduction: the modes
``m_s = C u_s / sigma`` (``C`` the 4 x 4 two-band Toeplitz matrix, ``u_s`` the indicator
of the steps ``i = s (mod 2)``) span a plane; with ``M = Q R`` the likelihood ratio is
``Z = (1/2) (e^{R_00 a_0 - h_0} + e^{R_01 a_0 + R_11 a_1 - h_1})`` in two independent
standard normals, ``h_s = |m_s|^2 / 2``, so ``E_P[(Z - gamma)_+]`` and
``E_P[(1 - gamma Z)_+]`` are a log-normal call and put in ``a_1`` (closed form),
integrated over ``a_0`` by a trapezoid rule (step 0.001 on [-15, 15]: at c1 = 0, eps 3
it agrees with mpmath split at the kink to 1e-10 relative; step 0.01 was 4e-6 high).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from dpacct.mechanisms.algorithms.bandmf_two_band import (
    _law_delta,
    bandmf_two_band_balls_in_bins,
)


def _exact_n4_k2(sigma: float, c0: float, c1: float, eps: float) -> tuple[float, float]:
    n, k = 4, 2
    c = np.diag(np.full(n, c0)) + np.diag(np.full(n - 1, c1), -1)
    u = np.zeros((n, k))
    u[np.arange(n), np.arange(n) % k] = 1.0
    modes = c @ u / sigma
    h = 0.5 * np.sum(modes * modes, axis=0)
    r = np.linalg.qr(modes)[1]
    z = np.arange(-15.0, 15.0005, 0.001)
    w = np.exp(-0.5 * z * z)
    w /= w.sum()
    a = 0.5 * np.exp(r[0, 0] * z - h[0])
    b = 0.5 * np.exp(r[0, 1] * z - h[1])
    s = abs(r[1, 1])
    mean = math.exp(s * s / 2)  # E e^{s a_1}
    g = math.exp(eps)
    with np.errstate(all="ignore"):
        cut = (g - a) / b
        d2 = -np.log(cut) / s
        call = np.where(cut > 0, mean * special.ndtr(d2 + s) - cut * special.ndtr(d2), mean - cut)
        cut = (1 / g - a) / b
        d2 = -np.log(cut) / s
        put = np.where(cut > 0, cut * special.ndtr(-d2) - mean * special.ndtr(-d2 - s), 0.0)
    return float(w @ (b * call)), float(w @ (g * b * put))


def test_the_quadrature_reproduces_the_modules_documented_value():
    # bandmf_two_band_balls_in_bins's docstring: exact delta(1.0) = 0.038172 at sigma 2,
    # c = (1, 0.5) (its own quadrature); this one is built from the matrix
    assert max(_exact_n4_k2(2.0, 1.0, 0.5, 1.0)) == pytest.approx(0.038172, abs=2e-6)


STRATEGIES = [(0.5, 1.0), (1.0, 0.0), (1.0, 3.0)]


@pytest.mark.parametrize(("c0", "c1"), STRATEGIES)
def test_each_transfer_law_holds_the_exact_value(c0, c1):
    # Theorem 2's two laws (the new code; 0.1 s each at points=11)
    run = bandmf_two_band_balls_in_bins(1.0, 4, cycle_length=2, strategy=[c0, c1], points=11)
    (zr, wr, tr), (za, wa, ta) = run.laws
    for eps in (0.0, 1.0, 3.0):
        rem, add = _exact_n4_k2(1.0, c0, c1, eps)
        e = np.array([eps])
        assert float(_law_delta(zr, wr, tr, True, e)[0]) >= rem
        assert float(_law_delta(za, wa, ta, False, e)[0]) >= add


@pytest.mark.slow
@pytest.mark.parametrize(("c0", "c1"), STRATEGIES)
def test_the_least_of_both_theorems_holds_the_exact_value(c0, c1):
    # run.delta takes the least of Theorem 1 (PLD routes: 1.5-5 CPU s per epsilon here)
    # and Theorem 2; at c = (1, 0), eps 3 Theorem 1 answers 0.01079697235 against the
    # exact 0.01079695627 (mpmath, split at the kink): 1.5e-6 relative above it
    run = bandmf_two_band_balls_in_bins(1.0, 4, cycle_length=2, strategy=[c0, c1], points=11)
    for eps in (0.0, 3.0):
        assert float(run.delta(eps)) >= max(_exact_n4_k2(1.0, c0, c1, eps))
