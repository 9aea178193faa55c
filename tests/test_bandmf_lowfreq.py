"""Tests of mechanisms/algorithms/bandmf_lowfreq.py: Theorem 5 (the whole balls-in-bins
pair, its Gram matrix dominated by ``alpha I`` plus the frequencies ``0, +-1``).

Independent values: the domination ``G' - G >= 0`` by ``numpy.linalg.eigvalsh``; Monte
Carlo estimates (explicit ``numpy.random.Generator``) of both directions of the
balls-in-bins pair and of the dominating pair, at small ``n``.  Each Monte Carlo check
is shown able to fail: at a lower epsilon the estimate's lower end is above delta.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_bandmf_banded import _gram_mc  # the same Monte Carlo of a Gram's pair

from dpacct.mechanisms.algorithms.bandmf_balls_in_bins import (
    balls_in_bins_gram,
    bandmf_balls_in_bins,
    bandmf_balls_in_bins_delta_mc,
)
from dpacct.mechanisms.algorithms.bandmf_banded_shared import bandmf_shared_balls_in_bins
from dpacct.mechanisms.algorithms.bandmf_lowfreq import (
    BandMFLowFreqBallsInBins,
    bandmf_lowfreq_balls_in_bins,
    lowfreq_delta_law,
    lowfreq_instance,
    lowfreq_points,
)

THREE_BANDS = [1.0, 0.6, 0.3]
FOUR_BANDS = [1.0, 0.5, 0.25, 0.125]


def _stand_in(inst: tuple, k: int) -> np.ndarray:
    alpha, beta, gamma = inst
    ang = 2 * np.pi * np.arange(k) / k
    c, s = np.cos(ang), np.sin(ang)
    return alpha * np.eye(k) + beta + gamma * (np.outer(c, c) + np.outer(s, s))


@pytest.mark.parametrize(("col", "n", "k"), [(THREE_BANDS, 12, 4), (FOUR_BANDS, 100, 10),
                                             ([1.0, 0.5, 0.5, 0.2], 30, 7)])
def test_stand_in_dominates_the_gram_and_keeps_the_low_frequencies(col, n, k):
    gram = balls_in_bins_gram(col, n, k)
    inst = lowfreq_instance(col, n, k)
    ref = _stand_in(inst, k)
    assert np.linalg.eigvalsh(ref - gram).min() >= 0.0
    # not loose: alpha is near the largest eigenvalue of G off the frequencies 0, +-1
    # (the projector built from the DFT matrix's columns 0, 1, k - 1)
    f = np.fft.fft(np.eye(k))[:, [0, 1, k - 1]] / np.sqrt(k)
    proj = np.eye(k) - (f @ f.conj().T).real
    off = float(np.linalg.eigvalsh(proj @ gram @ proj).max())
    assert off <= inst[0] <= 1.1 * off
    assert inst[0] < np.linalg.eigvalsh(gram).max()  # the kept part is not raised to alpha I


def _pair_deltas(sigma, n, k, col, eps, rng, samples):
    worst = 0.0
    for direction in ("remove", "add"):
        _, lo, _ = bandmf_balls_in_bins_delta_mc(
            sigma, n, eps, cycle_length=k, strategy=col, samples=samples, rng=rng,
            direction=direction, confidence=0.9999)
        worst = max(worst, lo)
    return worst


@pytest.mark.slow
def test_theorem_5_alone_is_above_monte_carlo_both_directions_and_a_lower_epsilon_fails():
    # four bands (column norm 1), n 30, k 6: Theorem 5 alone 2.78, the pair's Monte
    # Carlo epsilon 2.35
    col = list(np.array(FOUR_BANDS) / np.linalg.norm(FOUR_BANDS))
    sigma, n, k, delta = 2.0, 30, 6, 1e-3
    run = bandmf_lowfreq_balls_in_bins(sigma, n, cycle_length=k, strategy=col,
                                       factor_points=21, points=31, candidates=())
    eps = run.epsilon(delta)  # Theorem 5 alone: no Theorem 1 candidates, no Theorem 4
    rng = np.random.default_rng(39_5)
    assert _pair_deltas(sigma, n, k, col, eps, rng, 300_000) <= delta
    assert _pair_deltas(sigma, n, k, col, 0.8 * eps, rng, 300_000) > delta
    # the step the law adds: the dominating pair's own Monte Carlo is below the bound at
    # eps and above delta at 0.85 eps
    ref = _stand_in(lowfreq_instance(col, n, k), k)
    assert max(_gram_mc(ref, sigma, eps, rng, samples=300_000)) <= delta
    assert max(_gram_mc(ref, sigma, 0.85 * eps, rng, samples=300_000)) > delta


@pytest.mark.slow
def test_each_direction_is_above_the_dominating_pairs_monte_carlo():
    # small grids: the laws are bounds whatever the grid; checked per direction
    sigma, n, k = 2.0, 20, 5
    inst = lowfreq_instance(FOUR_BANDS, n, k)
    ref = _stand_in(inst, k)
    rng = np.random.default_rng(39_51)
    mu = math.sqrt(inst[1]) / sigma
    from dpacct.mechanisms.algorithms.bandmf_banded_shared import shared_law_delta

    for e in (0.5, 1.0):
        mc = _gram_mc(ref, sigma, e, rng)
        for i, d in enumerate(("remove", "add")):
            z, w, tail = lowfreq_delta_law(sigma, inst, k, d, factor_points=15, points=31,
                                           width=6.0)
            bound = float(shared_law_delta(z, w, tail, d == "remove", np.array([e]), mu)[0])
            assert bound >= mc[i], (d, e, bound, mc[i])
            # and not trivially loose: within a factor 3 of the estimate's lower end
            assert bound <= 3 * max(mc[i], 1e-6), (d, e, bound, mc[i])


def test_law_is_a_probability_law_and_the_remove_mean_is_at_least_one():
    inst = lowfreq_instance(THREE_BANDS, 12, 4)
    z, w, tail = lowfreq_delta_law(2.0, inst, 4, "remove", factor_points=11, points=21)
    assert abs(float(w.sum()) - 1.0) < 1e-9 and tail < 1e-12
    assert float((z * w).sum()) >= 1.0 - 1e-9  # E_P[Z] = 1; the hats only add mass upwards
    assert np.all(np.diff(z) > 0)


@pytest.fixture
def coarse_default(monkeypatch):
    """The default at test cost: Theorem 5's grids cut to (11, 21) (``lowfreq_points``
    still takes the most of ``REMOVE_POINTS`` within its budget) and Theorem 4's plan
    fixed to Theorem 3's classes at 21 points (the plan's own search, a Monte Carlo per
    candidate and coarse bounds, is tested in test_bandmf_banded_shared.py).  At the
    defaults a build at n 8, k 4 takes some 6 CPU s, at n 40, k 5 some 12."""
    import dpacct.calibrators.bandmf as calibrator
    import dpacct.mechanisms.algorithms.bandmf_balls_in_bins as default
    import dpacct.mechanisms.algorithms.bandmf_lowfreq as low

    def plan(sigma, iterations, cycle_length, strategy):
        return (max(1, math.ceil(len(strategy) / 2)), "thm3", 0.0), 21

    monkeypatch.setattr(low, "REMOVE_POINTS", ((11, 21),))
    monkeypatch.setattr(default, "banded_plan", plan)
    monkeypatch.setattr(calibrator, "banded_plan", plan)


@pytest.mark.slow
def test_default_takes_the_least_of_theorems_1_4_and_5(coarse_default):
    sigma, n, k = 2.0, 8, 4
    default = bandmf_balls_in_bins(sigma, n, cycle_length=k, strategy=THREE_BANDS)
    assert isinstance(default, BandMFLowFreqBallsInBins) and default.lowfreq
    one = bandmf_balls_in_bins(sigma, n, cycle_length=k, strategy=THREE_BANDS, two_band=False)
    eps = np.array([0.5, 1.0, 2.0])
    assert np.all(default.delta(eps) <= one.delta(eps) + 1e-15)
    # the least, at every epsilon, of Theorem 4 (``base``) and Theorem 5 alone; Theorem 4
    # is the lower at every epsilon here and Theorem 5 at four bands, n 20, k 5, so a
    # least that kept either one alone fails one of the two
    wins = []
    for col, n, k in ((THREE_BANDS, 8, 4), (FOUR_BANDS, 20, 5)):
        base = bandmf_shared_balls_in_bins(sigma, n, cycle_length=k, strategy=col,
                                           points=11, choice=(2, "thm3", 0.0), candidates=())
        alone = bandmf_lowfreq_balls_in_bins(sigma, n, cycle_length=k, strategy=col,
                                             factor_points=9, points=15, candidates=())
        both = bandmf_lowfreq_balls_in_bins(sigma, n, cycle_length=k, strategy=col,
                                            factor_points=9, points=15, candidates=(),
                                            base=base)
        assert np.array_equal(both.delta(eps), np.minimum(base.delta(eps), alone.delta(eps)))
        assert both.epsilon(1e-3) <= min(base.epsilon(1e-3), alone.epsilon(1e-3)) * (1 + 1e-6)
        a, b = alone.delta(eps), base.delta(eps)
        wins.append((bool(np.all(a < b)), bool(np.all(b < a))))
    assert wins == [(False, True), (True, False)]


def test_bad_input():
    with pytest.raises(ValueError, match="cycle_length"):
        lowfreq_instance(FOUR_BANDS, 100, 3)  # no frequency besides 0, +-1
    assert lowfreq_points(3.0, 12, 3, THREE_BANDS) is None
    with pytest.raises(ValueError, match="cycle_length"):
        lowfreq_instance(FOUR_BANDS, 1000, 65)
    with pytest.raises(ValueError, match="alpha_factor"):
        lowfreq_instance(FOUR_BANDS, 100, 10, alpha_factor=1.0)
    inst = lowfreq_instance(FOUR_BANDS, 100, 10)
    with pytest.raises(ValueError, match="direction"):
        lowfreq_delta_law(4.0, inst, 10, "both")
    with pytest.raises(ValueError, match="points"):
        lowfreq_delta_law(4.0, inst, 10, "remove", factor_points=2)
    with pytest.raises(ValueError, match="too coarse"):
        lowfreq_delta_law(0.5, inst, 10, "add", factor_points=5)
    with pytest.raises(ValueError, match="too small"):
        lowfreq_delta_law(0.01, inst, 10, "remove")
    assert lowfreq_points(0.01, 100, 10, FOUR_BANDS) is None
    with pytest.raises(TypeError, match="base"):
        bandmf_lowfreq_balls_in_bins(4.0, 100, cycle_length=10, strategy=FOUR_BANDS,
                                     base="theorem 4")
    assert lowfreq_points(8.0, 2000, 100, FOUR_BANDS) is None


@pytest.mark.slow
def test_calibration_refines_on_theorem_5_and_meets_the_target_under_the_default(
        coarse_default):
    """Four bands, n 30, k 10, target 2 at 1e-5, the default at ``coarse_default``'s
    grids (some 13 CPU s; main's n 40, k 5 case took some 60, and at these coarse grids
    Theorem 5 does not win there): the calibrated noise meets the target under the
    default bound, rebuilt here, and the default's own Theorems 1/4 part is above the
    target there (measured 2.09), so the answer is below what a Theorems 1/4
    calibration can reach: the refinement on Theorem 5 did it."""
    import dpacct.calibrators.bandmf as calibrator
    from dpacct.mechanisms.algorithms.bandmf_banded_shared import BandMFSharedBallsInBins

    target, delta, n, k = 2.0, 1e-5, 30, 10
    res = calibrator.bandmf_balls_in_bins_noise_multiplier(
        target, delta, n, cycle_length=k, strategy=FOUR_BANDS, rtol=0.01, full_output=True,
        progress=False)
    default = bandmf_balls_in_bins(res.parameter, n, cycle_length=k, strategy=FOUR_BANDS)
    assert isinstance(default, BandMFLowFreqBallsInBins) and default.lowfreq and default.laws
    assert default.epsilon(delta) <= target
    assert res.epsilon == pytest.approx(default.epsilon(delta), rel=1e-12)
    t14 = BandMFSharedBallsInBins(res.parameter, default.candidates, default.laws,
                                  default.choice)
    assert t14.epsilon(delta) > target


def test_calibration_bad_input_is_refused_by_name():
    from dpacct.calibrators import bandmf_balls_in_bins_noise_multiplier as cal

    with pytest.raises(TypeError, match="progress"):
        cal(3.0, 1e-5, 12, cycle_length=4, strategy=THREE_BANDS, progress="yes")
    with pytest.raises(ValueError, match="cycle_length"):
        cal(3.0, 1e-5, 12, cycle_length=13, strategy=THREE_BANDS, progress=False)
    with pytest.raises(ValueError, match="iterations"):
        cal(3.0, 1e-5, 0, cycle_length=4, strategy=THREE_BANDS, progress=False)
