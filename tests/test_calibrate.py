"""Tests for ``dpacct.calibrators.calibrate``, the generic calibrator's interface; its
search (``dpacct.calibrators.search``) is tested in ``test_search.py`` and the DP-SGD
calibrators (``dpacct.calibrators.dpsgd``) in ``test_dpsgd.py``.

The central claim: a calibrated continuous parameter meets the budget and misses it by
at most the default relative tolerance, ``target (1 - 5e-5) <= epsilon <= target``, where epsilon
is recomputed independently with the engine (a fresh mechanism, no shared cache).
Integer parameters are the extreme feasible value (``n`` fits, ``n + 1`` does not).
"""

from __future__ import annotations

import math

import pytest

from dpacct.accountant import compose
from dpacct.accountant.mechanism import Mechanism
from dpacct.calibrators import (
    analytic_gaussian_sigma,
    calibrate,
)
from dpacct.mechanisms import GaussianMechanism

DELTA = 1e-5
RTOL = 5e-5  # the calibrators' default relative tolerance (0.005 % of the budget)


def gaussian(s: float) -> Mechanism:
    return GaussianMechanism(sigma=s)


def in_window(eps: float, target: float, rtol: float = RTOL) -> bool:
    return target * (1.0 - rtol) <= eps <= target


# ----------------------------------------------------------------------------------
# the generic calibrator
# ----------------------------------------------------------------------------------


def test_calibrate_continuous_matches_analytic_gaussian():
    res = calibrate(gaussian, 1.0, DELTA)
    sigma, mech = res  # unpacks as (parameter, mechanism)
    assert mech == GaussianMechanism(sigma=sigma)
    assert in_window(GaussianMechanism(sigma=sigma).epsilon(DELTA), 1.0)
    assert sigma == pytest.approx(analytic_gaussian_sigma(1.0, DELTA), rel=2e-3)


def test_calibrate_rtol_is_honoured():
    res = calibrate(gaussian, 1.0, DELTA, rtol=1e-8)
    assert in_window(res.epsilon, 1.0, rtol=1e-8)
    assert res.parameter == pytest.approx(analytic_gaussian_sigma(1.0, DELTA), rel=1e-7)


def test_fixed_ratio_family_calibrates_the_common_scale():
    def two_scales(sigma1, sigma2):
        return compose([GaussianMechanism(sigma=sigma1), GaussianMechanism(sigma=sigma2)])

    res = calibrate(two_scales, 1.0, DELTA, ratios={"sigma1": 2.0, "sigma2": 3.0})
    s = res.parameter
    assert res.parameters == {"sigma1": 2.0 * s, "sigma2": 3.0 * s}
    assert in_window(two_scales(2.0 * s, 3.0 * s).epsilon(DELTA), 1.0)
    # the same family, positional
    res2 = calibrate(two_scales, 1.0, DELTA, ratios=[2.0, 3.0])
    assert res2.parameters == (2.0 * res2.parameter, 3.0 * res2.parameter)
    assert res2.parameter == pytest.approx(s, rel=2e-3)


def test_progress_bar_is_silent_for_fast_searches(capsys):
    calibrate(gaussian, 1.0, DELTA)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_fast_search_does_not_import_the_progress_bar():
    """tqdm (about 15 ms) is imported only once a search has run for seconds, not on
    the first evaluation of every search (a fresh process, so nothing imported it)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from dpacct.calibrators import noise_multiplier\n"
        "noise_multiplier(epsilon=3.0, delta=1e-5, sample_rate=0.01, steps=1000)\n"
        "print('tqdm' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


# ----------------------------------------------------------------------------------
# input validation
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "exc", "name"),
    [
        ({"epsilon": 0.0}, ValueError, "epsilon"),
        ({"epsilon": -1.0}, ValueError, "epsilon"),
        ({"epsilon": math.nan}, ValueError, "epsilon"),
        ({"epsilon": math.inf}, ValueError, "epsilon"),
        ({"delta": 0.0}, ValueError, "delta"),
        ({"delta": 1.0}, ValueError, "delta"),
        ({"delta": math.nan}, ValueError, "delta"),
        ({"rtol": 0.0}, ValueError, "rtol"),
        ({"rtol": 0.7}, ValueError, "rtol"),
        ({"interval": (2.0, 1.0)}, ValueError, "interval"),
        ({"interval": (-1.0, 1.0)}, ValueError, r"interval\[0\]"),
        ({"interval": 3.0}, TypeError, "interval"),
        ({"ratios": {"a": -1.0}}, ValueError, "ratios"),
        ({"ratios": [2.0], "integer": True}, ValueError, "ratios"),
        ({"max_evaluations": 1}, ValueError, "max_evaluations"),
        ({"start": 0.0}, ValueError, "start"),
        ({"estimate": 3.0}, TypeError, "estimate"),
    ],
)
def test_calibrate_rejects_bad_arguments(kwargs, exc, name):
    args = {"epsilon": 1.0, "delta": DELTA}
    args.update(kwargs)
    with pytest.raises(exc, match=name):
        calibrate(gaussian, **args)


def test_calibrate_rejects_bad_families():
    with pytest.raises(TypeError, match="family must be callable"):
        calibrate(3.0, 1.0, DELTA)
    with pytest.raises(TypeError, match="family must return a Mechanism"):
        calibrate(lambda s: s, 1.0, DELTA)


# ----------------------------------------------------------------------------------
# pure DP: delta = 0 calibrates on Mechanism.pure_epsilon
# ----------------------------------------------------------------------------------
def test_pure_dp_calibration_against_closed_forms():
    from dpacct.mechanisms import LaplaceMechanism, RandomizedResponse, TreeQuantiles

    # a tree of depth 3 with Laplace(s) per level costs 3 / s: s = 3 / epsilon
    tree = calibrate(lambda s: TreeQuantiles(lower=0.0, upper=1.0, bins=4096, scale=s),
                     epsilon=0.7, delta=0)
    assert tree.mechanism.depth == 3
    assert tree.parameter == pytest.approx(3 / 0.7, rel=1.001e-3)
    assert 0.7 * (1 - 1e-3) <= tree.epsilon <= 0.7
    assert tree.delta == 0.0
    # the largest number of Laplace(b=8) releases at pure epsilon 1 is 8 (1/8 is exact in
    # binary; with b=10 the float 0.1 lies above 1/10, and the cap rounds its sums up)
    k = calibrate(lambda k: compose([LaplaceMechanism(b=8.0)], counts=[k]), epsilon=1.0,
                  delta=0, integer=True)
    assert k.parameter == 8
    # binary randomized response is ln(p / (1 - p))-DP
    rr = calibrate(lambda p: RandomizedResponse(p=p), epsilon=1.0, delta=0,
                   interval=(0.55, 0.9), domain=(0.5, 1.0))
    assert math.log(rr.parameter / (1 - rr.parameter)) == pytest.approx(1.0, rel=1.001e-3)
    with pytest.raises(ValueError, match="delta=0 needs a pure-DP family"):
        calibrate(lambda s: GaussianMechanism(sigma=s), epsilon=1.0, delta=0)
    with pytest.raises(ValueError, match="delta"):
        calibrate(lambda s: LaplaceMechanism(b=s), epsilon=1.0, delta=-1e-9)
