"""accountant/families/normal_tails.py: the scalar ``erfcx``, ``log Phi`` and ``Phi^-1``
of the certified Gaussian curve, against mpmath at 40 digits (the measured errors the
certified bounds rest on, re-measured on fresh points), against SciPy's ufuncs they
replace, and at the edges of their domains."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import special

from dpacct.accountant.families import gaussian_certified as gc
from dpacct.accountant.families import normal_tails as nt

U = 2.0**-53


def test_log_ndtr_and_erfcx_errors_stay_within_the_allowed_constants():
    """Re-measure the two errors the certified bounds rest on (documented as measured
    and inflated, ``python -m benchmarks.normal_tails_errors`` for 10^5 points) on fresh
    points, dense near the branch points (``t = -1, 0``; ``x = 26``): ``log Phi`` at
    most half its allowance anywhere, ``erfcx`` at most a third of ``ERFCX_REL``."""
    rng = np.random.default_rng(2047)
    t = np.concatenate([-np.geomspace(1e-7, 1e4, 800), np.geomspace(1e-7, gc.T_MAX, 800),
                        rng.uniform(-60, gc.T_MAX, 800), rng.uniform(-1.2, 0.2, 300)])
    worst = 0.0
    for ti in t.tolist():
        li = nt.log_ndtr(ti)
        with mpmath.workdps(40):
            tt = mpmath.mpf(ti)
            ex = mpmath.log1p(-mpmath.ncdf(-tt)) if ti > 0 else mpmath.log(mpmath.ncdf(tt))
            rel = float(abs(mpmath.mpf(li) - ex) / abs(ex)) / U
        worst = max(worst, rel / gc._log_ndtr_rel(ti))
    assert worst < 0.5
    s = np.concatenate([np.geomspace(1e-8, 1e5, 1500), rng.uniform(0, 30, 500),
                        rng.uniform(25.0, 27.0, 300), [0.0]])
    worst = 0.0
    for si in s.tolist():
        ei = nt.erfcx(si)
        with mpmath.workdps(40):
            ss = mpmath.mpf(si)
            ex = mpmath.exp(ss * ss) * mpmath.erfc(ss)
            worst = max(worst, float(abs(mpmath.mpf(ei) - ex) / ex) / U)
    assert worst < gc.ERFCX_REL / 3


def test_the_functions_agree_with_scipys():
    """Within a few ulps of the ufuncs they replace on the certified path (``log Phi``
    within its allowance's scale where the argument's rounding is amplified)."""
    rng = np.random.default_rng(5)
    x = np.concatenate([np.geomspace(1e-6, 1e5, 400), rng.uniform(0, 40, 400)])
    ours = np.array([nt.erfcx(v) for v in x.tolist()])
    np.testing.assert_allclose(ours, special.erfcx(x), rtol=20 * U, atol=0)
    t = np.concatenate([rng.uniform(-1e3, 10.0, 400), rng.uniform(-3.0, 3.0, 400)])
    ours = np.array([nt.log_ndtr(v) for v in t.tolist()])
    ref = special.log_ndtr(t)
    assert np.all(np.abs(ours - ref) <= (40 + 8 * np.maximum(t, 0) ** 2) * U * np.abs(ref))
    p = np.concatenate([10 ** rng.uniform(-320, 0, 400), rng.uniform(0, 1, 400)])
    ours = np.array([nt.ndtri(v) for v in p.tolist()])
    np.testing.assert_allclose(ours, special.ndtri(p), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(
    ("x", "want"),
    [(0.0, 1.0), (math.inf, 0.0), (-30.0, math.inf), (1e300, nt._INV_SQRT_PI / 1e300)],
)
def test_erfcx_edges(x, want):
    assert nt.erfcx(x) == want
    assert math.isnan(nt.erfcx(math.nan))


def test_log_ndtr_edges():
    assert nt.log_ndtr(-math.inf) == -math.inf
    assert nt.log_ndtr(math.inf) == 0.0
    assert math.isnan(nt.log_ndtr(math.nan))
    assert nt.log_ndtr(-1e200) == -math.inf  # (0.5 t^2 overflows; no exception)
    # deep below the least float, where Phi itself underflows: the asymptotic value
    with mpmath.workdps(40):
        exact = mpmath.log(mpmath.ncdf(mpmath.mpf(-1e4)))
    assert abs(nt.log_ndtr(-1e4) - float(exact)) <= 8 * U * abs(float(exact))


def test_ndtri_edges_and_symmetry():
    assert nt.ndtri(0.0) == -math.inf and nt.ndtri(1.0) == math.inf
    assert math.isnan(nt.ndtri(-0.1)) and math.isnan(nt.ndtri(1.5))
    assert nt.ndtri(0.5) == 0.0
    assert nt.ndtri(0.75) == -nt.ndtri(0.25)  # (1 - 0.75 is exact)
    assert math.isfinite(nt.ndtri(5e-324))
