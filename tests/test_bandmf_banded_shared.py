"""Tests of mechanisms/algorithms/bandmf_banded_shared.py: Theorem 4 (residue classes
dominated by a two-band Gram plus a shared ``beta J``).

Independent values: the closed-form Gaussian integrals against mpmath quadrature; the
domination ``G' + beta J - G_r >= 0`` by ``numpy.linalg.eigvalsh``; Monte Carlo of both
directions of the dominating pair (the stand-in's Gram plus ``beta J``: what the
composed law bounds, nearly tight) and of the balls-in-bins pair itself.  Each Monte
Carlo check is shown able to fail at a lower epsilon.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from test_bandmf_banded import _gram_mc  # the same Monte Carlo of a Gram's pair

from dpacct.mechanisms.algorithms.bandmf_balls_in_bins import (
    balls_in_bins_gram,
    bandmf_balls_in_bins_delta_mc,
)
from dpacct.mechanisms.algorithms.bandmf_banded_shared import (
    bandmf_shared_balls_in_bins,
    shared_instances,
    shared_law_delta,
)

FOUR_BANDS = [1.0, 0.6, 0.4, 0.2]


def _quad(z, w, eps, mu, up):
    """sum_i w_i E[(z_i W - e^eps)_+] (remove) or E[(1 - e^eps z_i W)_+] (add), W the
    Gaussian likelihood ratio of shift mu, by mpmath quadrature."""
    g = mp.e ** eps
    tot = mp.mpf(0)
    for z_i, wi in zip(z, w, strict=True):
        zi = mp.mpf(z_i)

        def f(x, zi=zi):
            lr = mp.e ** (mu * x - mu * mu / 2)
            v = zi * lr - g if up else 1 - g * zi * lr
            return mp.npdf(x) * max(v, 0)
        pts = [-40, -5, 0, 5, 40]
        if zi > 0:  # the kink, where z W = e^eps (or e^-eps / z ... = 1)
            kink = float((mp.log(g / zi) + mu * mu / 2) / mu if up
                         else (-mp.log(g * zi) + mu * mu / 2) / mu)
            pts = sorted({*pts, min(max(kink, -40), 40)})
        tot += wi * mp.quad(f, pts)
    return float(tot)


def test_gaussian_composition_against_quadrature_and_mu_zero():
    z = np.array([0.0, 0.3, 1.0, 2.5, 7.0])
    w = np.array([0.1, 0.3, 0.35, 0.2, 0.05])
    for up in (True, False):
        for mu in (0.05, 0.7):
            got = shared_law_delta(z, w, 1e-7, up, np.array([0.0, 1.3]), mu)
            for e, d in zip((0.0, 1.3), got, strict=True):
                ref = _quad(z, w, e, mu, up) + 1e-7
                assert ref <= d <= ref * (1 + 1e-7) + 1e-15, (up, mu, e, d, ref)
    # mu = 0 is Theorem 2's own sum: the law itself
    d0 = shared_law_delta(z, w, 0.0, True, np.array([0.5]), 0.0)[0]
    assert d0 >= float(np.dot(w, np.maximum(z - math.exp(0.5), 0.0)))


def test_stand_in_plus_shared_dominates_and_the_shared_part_lowers_the_diagonal():
    n, k = 40, 8
    gram = balls_in_bins_gram(FOUR_BANDS, n, k)
    (t, n2, (c0, c1), beta), = shared_instances(FOUR_BANDS, n, k, 1, 1.0, 0.5)
    assert t == k and beta > 0
    ref = balls_in_bins_gram([c0, c1], n2, t) + beta
    assert np.linalg.eigvalsh(ref - gram).min() >= 0.0
    (_, n3, (d0, d1), b0), = shared_instances(FOUR_BANDS, n, k, 1, 1.0, 0.0)
    assert b0 == 0.0 and (n2 - 1) * (c0**2 + c1**2) < (n3 - 1) * (d0**2 + d1**2)


@pytest.mark.slow
def test_four_bands_whole_pair_above_monte_carlo_both_directions_and_lower_fails():
    """n 8, k 4, one class (g = 1) with beta > 0: the composed law against the Monte
    Carlo of the pair it bounds (the stand-in plus beta J) and of the balls-in-bins pair."""
    sigma, delta, n, k = 1.5, 1e-3, 8, 4
    run = bandmf_shared_balls_in_bins(sigma, n, cycle_length=k, strategy=FOUR_BANDS,
                                      points=41, candidates=(), choice=(1, 1.0, 0.5))
    (_, _, mu), = run.laws
    assert mu > 0
    eps = run.epsilon(delta)
    (t, n2, (c0, c1), beta), = shared_instances(FOUR_BANDS, n, k, 1, 1.0, 0.5)
    dom = balls_in_bins_gram([c0, c1], n2, t) + beta
    rng = np.random.default_rng(39_4)
    assert max(_gram_mc(dom, sigma, eps, rng, 200_000)) <= delta
    assert max(_gram_mc(dom, sigma, 0.95 * eps, rng, 200_000)) > delta  # can fail
    worst_at, worst_below = 0.0, 0.0
    for direction in ("remove", "add"):
        for e in (eps, 0.65 * eps):
            _, lo, _ = bandmf_balls_in_bins_delta_mc(
                sigma, n, e, cycle_length=k, strategy=FOUR_BANDS, samples=400_000, rng=rng,
                direction=direction, confidence=0.9999)
            if e == eps:
                worst_at = max(worst_at, lo)
            else:
                worst_below = max(worst_below, lo)
    assert worst_at <= delta
    assert worst_below > delta, (worst_at, worst_below)


def test_bad_input():
    with pytest.raises(ValueError, match="3 entries or more"):
        bandmf_shared_balls_in_bins(1.5, 8, cycle_length=4, strategy=[1.0, 0.5])
    with pytest.raises(ValueError, match="points"):
        bandmf_shared_balls_in_bins(1.5, 8, cycle_length=4, strategy=FOUR_BANDS, points=2)
    with pytest.raises(ValueError, match="cycle_length"):
        bandmf_shared_balls_in_bins(1.5, 8, cycle_length=8, strategy=FOUR_BANDS)


@pytest.mark.slow
def test_three_band_calibration_through_the_plan_holds_against_monte_carlo(monkeypatch):
    """The calibrator chooses Theorem 4's candidate once and refines on it, then on the
    default bound (Theorem 5 too, k 4): the returned noise multiplier's bound is at most
    the target, and the Monte Carlo delta of both directions there (lower end of a
    4-standard-error interval) is at most delta.  Theorem 5's default grids are cut to
    (11, 21) and Theorem 4's plan estimates each candidate on 50 000 draws (400 000 by
    default) for the test's cost: any grid gives a bound, the plan only chooses which
    certified bound to build, and here it chooses the same one (the same answer,
    sigma 1.53279, at 400 000, 50 000, 20 000 and 10 000 draws; 22 -> 12 CPU s)."""
    import dpacct.mechanisms.algorithms.bandmf_banded_shared as shared
    import dpacct.mechanisms.algorithms.bandmf_lowfreq as low
    from dpacct.calibrators import bandmf_balls_in_bins_noise_multiplier

    monkeypatch.setattr(low, "REMOVE_POINTS", ((11, 21),))
    monkeypatch.setattr(shared, "SEARCH_SAMPLES", 50_000)

    col = [1.0, 0.6, 0.3]
    res = bandmf_balls_in_bins_noise_multiplier(3.0, 1e-3, 8, cycle_length=4, strategy=col,
                                                rtol=0.05, full_output=True)
    assert type(res.mechanism).__name__ == "BandMFLowFreqBallsInBins"
    assert res.epsilon <= 3.0
    rng = np.random.default_rng(39_5)
    for direction in ("remove", "add"):
        _, lo, _ = bandmf_balls_in_bins_delta_mc(
            res.parameter, 8, 3.0, cycle_length=4, strategy=col, samples=200_000, rng=rng,
            direction=direction, confidence=0.9999)
        assert lo <= 1e-3


@pytest.mark.slow
def test_theorem6_remove_law_taken_where_built_and_theorem4s_where_not(monkeypatch):
    """A class size in ``ar`` gets Theorem 6's remove law and Theorem 4's add law (four
    entries); where Theorem 6's grid is too coarse for the innovations (5 points, no
    extra points for Theorem 6) the size falls back to Theorem 4's laws instead of
    failing."""
    from dpacct.mechanisms.algorithms import bandmf_banded_shared
    from dpacct.mechanisms.algorithms.bandmf_ar_standin import ar_instances
    from dpacct.mechanisms.algorithms.bandmf_banded_shared import _laws

    col, n, k, sigma = [1.0, 0.7, 0.5, 0.3], 40, 10, 2.0
    inst = shared_instances(col, n, k, 1, 1.0, 0.5)
    ar = {10: ar_instances(col, n, k, 1, 0.5, 1.0)[0]}
    built = _laws(sigma, inst, 17, ar)
    assert len(built[0]) == 4 and built[0][2] == 0.0 and built[0][3] > 0
    monkeypatch.setattr(bandmf_banded_shared, "AR_EXTRA_POINTS", 0)
    coarse = _laws(sigma, inst, 5, ar)
    assert len(coarse) == 1 and len(coarse[0]) == 3


def test_plan_takes_the_coarser_route_without_refining(monkeypatch):
    """Session 45: where the candidate with the least estimate takes the coarser route
    (``ar_choice`` then ``ar_coarser``), the plan returns it without ``_refine``'s coarse
    Theorem 4 laws; where it does not, ``_refine`` decides as before."""
    from dpacct.mechanisms.algorithms import bandmf_banded_shared as bs

    col, n, k, sigma = [1.0, 0.6, 0.3, 0.2], 40, 8, 2.0
    refined = []

    def refine(s, scored):
        refined.append(len(scored))
        return max(scored, key=lambda x: x[0])  # not the least: tells the two apart

    monkeypatch.setattr(bs, "_refine", refine)
    monkeypatch.setattr(bs, "ar_choice", lambda *a: {4: "stand-in"})
    monkeypatch.setattr(bs, "ar_coarser", lambda *a: (1, "stand-in"))
    scored = []
    proxy = bs._proxy_epsilon
    monkeypatch.setattr(bs, "_proxy_epsilon",
                        lambda s, inst: scored.append(proxy(s, inst)) or scored[-1])
    choice, _ = bs.shared_plan(sigma, n, k, col)
    assert not refined
    least = min(range(len(scored)), key=scored.__getitem__)
    monkeypatch.setattr(bs, "ar_coarser", lambda *a: None)
    scored.clear()
    other, _ = bs.shared_plan(sigma, n, k, col)
    assert refined and len(scored) > 1
    most = max(range(len(scored)), key=scored.__getitem__)
    assert least != most and choice != other


def test_failed_coarser_build_plans_again_by_the_coarse_bounds(monkeypatch):
    """Review 45: when the plan took a candidate for the coarser route without
    ``_refine`` and that route's laws cannot be built, the build plans again with
    ``_refine`` (the choice before session 45) instead of building Theorem 4 for an
    unvetted candidate; a caller's own ``choice`` still falls back to Theorem 4."""
    from dpacct.mechanisms.algorithms import bandmf_banded_shared as bs

    col, n, k, sigma = [1.0, 0.6, 0.3, 0.2], 40, 8, 2.0

    def refine(s, scored):
        return max(scored, key=lambda x: x[0])  # not the least: tells the two apart

    monkeypatch.setattr(bs, "_refine", refine)
    monkeypatch.setattr(bs, "ar_choice", lambda *a: {})
    monkeypatch.setattr(bs, "ar_coarser", lambda *a: (1, "stand-in"))
    monkeypatch.setattr(bs, "_coarser_laws", lambda *a: None)  # the coarser build fails
    built = []
    monkeypatch.setattr(bs, "_laws", lambda s, inst, pts, ar: built.append(inst) or ("t4",))
    first, _ = bs.shared_plan(sigma, n, k, col, points=(5,))
    again, _ = bs.shared_plan(sigma, n, k, col, points=(5,), coarser_first=False)
    assert first != again
    run = bs.bandmf_shared_balls_in_bins(sigma, n, cycle_length=k, strategy=col, points=5,
                                         candidates=())
    assert run.choice == again and built == [bs._instances_of(col, n, k, again)]
    built.clear()
    own = bs.bandmf_shared_balls_in_bins(sigma, n, cycle_length=k, strategy=col, points=5,
                                         candidates=(), choice=first)
    assert own.choice == first and built == [bs._instances_of(col, n, k, first)]


def test_monte_carlo_estimates_are_kept_and_equal_a_fresh_draw():
    """Session 45: ``_mc_epsilon`` keeps its seeded estimate per (Gram, sigma, delta); a
    kept one is the value a fresh draw gives, and a different Gram is drawn anew."""
    from dpacct.mechanisms.algorithms import bandmf_banded_shared as bs

    h = np.array([[2.0, 0.5, 0.1], [0.5, 2.0, 0.5], [0.1, 0.5, 2.0]])
    first = bs._mc_epsilon(h, 1.5, 1e-3)
    assert bs._mc_epsilon(h, 1.5, 1e-3) == first == bs._mc_draw(h, 1.5, 1e-3)
    h2 = h.copy()
    h2[0, 0] = 2.5
    assert bs._mc_epsilon(h2, 1.5, 1e-3) == bs._mc_draw(h2, 1.5, 1e-3) != first


def test_monte_carlo_memo_is_used_and_keyed_by_every_input(monkeypatch):
    """Review of session 45: a repeated call does not draw again; sigma, delta and the
    sample count are each part of the key."""
    from dpacct.mechanisms.algorithms import bandmf_banded_shared as bs

    monkeypatch.setattr(bs, "_MC", {})
    draws = []
    monkeypatch.setattr(bs, "_mc_draw", lambda h, s, d: draws.append((s, d)) or s + d)
    h = np.eye(3)
    assert bs._mc_epsilon(h, 1.5, 1e-3) == bs._mc_epsilon(h, 1.5, 1e-3) == 1.5 + 1e-3
    assert len(draws) == 1
    assert bs._mc_epsilon(h, 2.5, 1e-3) == 2.5 + 1e-3
    assert bs._mc_epsilon(h, 1.5, 1e-2) == 1.5 + 1e-2
    monkeypatch.setattr(bs, "SEARCH_SAMPLES", 1000)
    bs._mc_epsilon(h, 1.5, 1e-3)
    assert len(draws) == 4


def test_rows_times_is_the_product_in_row_blocks():
    """Session 45: the Monte Carlo's product in blocks of rows is the whole product (to
    the rounding of a dot product), every row filled, also past the last full block."""
    from dpacct.mechanisms.algorithms import bandmf_banded_shared as bs

    rng = np.random.default_rng(7)
    for rows in (1, bs._ROW_BLOCK, 3 * bs._ROW_BLOCK + 5):
        x, y = rng.standard_normal((rows, 13)), rng.standard_normal((13, 13))
        np.testing.assert_allclose(bs._rows_times(x, y), x @ y, rtol=0, atol=1e-13)
