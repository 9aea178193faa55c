"""Cells fine in their bulk and coarse in their tail (``accountant/pld/split_cells.py``).

Independent references: the closed-form hockey-stick curve of one Poisson-subsampled
Gaussian step (normal CDFs at the loss preimage), the P- and Q-masses of the pair
(one, and at most one), the all-fine connect-the-dots cells of ``sgm_cells`` (another
code path over a uniform grid), and exact linear convolutions (``np.convolve``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import subsampled_gaussian_delta

from dpacct.accountant.pld import split_cells as sc
from dpacct.accountant.pld.coarsen import coarsen
from dpacct.accountant.pld.groups import compose_fine_group
from dpacct.accountant.pld.sgm_cells import _pessimistic_cells

SIG = np.array([0.6, 0.8, 1.0, 1.7, 3.0])
QS = np.array([0.3, 0.02, 0.01, 0.001, 0.1])


def _curve(first, pmf, step, eps, inf=0.0):
    """``sum_l p_l (1 - e^{eps - l})_+`` plus the mass at ``+inf``."""
    loss = (first + np.arange(pmf.size)) * step
    return float(np.sum(pmf * np.maximum(-np.expm1(eps - loss), 0.0))) + inf


def _exact_curve(sigma, q, eps, add):
    """delta(eps) of one step, one direction (the shared closed form)."""
    way = "add" if add else "remove"
    return float(subsampled_gaussian_delta(q, sigma, eps, direction=way))


@pytest.mark.parametrize("add", [False, True])
def test_all_fine_split_is_the_uniform_fine_discretisation(monkeypatch, add):
    # with the bulk covering the whole range the nodes are the uniform fine grid's:
    # the PMFs are those of the uniform connect-the-dots code, bin for bin
    monkeypatch.setattr(sc, "CORE_SHARE", 0.0)
    step, factor, tau = 1e-3, 8, 1e-12
    f0, p0, i0 = _pessimistic_cells(SIG, QS, step / factor, tau, add)
    f1, p1, i1 = sc.split_cells(SIG, QS, step, factor, tau, add)
    for a, b, fa, fb in zip(p0, p1, f0, f1, strict=True):
        shift = int(fa - fb)  # the split grid may start up to a coarse bin lower
        assert 0 <= shift < factor
        assert np.all(b[:shift] == 0)
        np.testing.assert_allclose(b[shift : shift + a.size], a, rtol=1e-12, atol=1e-300)
        assert np.all(b[shift + a.size :] == 0)
    np.testing.assert_allclose(i1, i0, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("add", [False, True])
def test_split_cells_keep_both_masses_and_dominate_the_exact_curve(add):
    step, factor, tau = 1e-3, 8, 1e-12
    first, pmfs, infs = sc.split_cells(SIG, QS, step, factor, tau, add)
    fine = step / factor
    for i, (s, q) in enumerate(zip(SIG, QS, strict=True)):
        pmf = pmfs[i]
        loss = (first[i] + np.arange(pmf.size)) * fine
        # P-mass one (the cut tail at +inf), Q-mass at most one
        assert abs(pmf.sum() + infs[i] - 1.0) < 1e-12
        assert np.sum(pmf * np.exp(-loss)) <= 1.0 + 1e-12
        # the tail's nodes are a coarse step apart: fewer nonzero bins than nodes
        assert np.count_nonzero(pmf) < 0.9 * pmf.size or pmf.size < 4 * factor
        for eps in (0.0, 0.01, 0.05, 0.2, 0.5, 1.0, 2.0):
            got = _curve(first[i], pmf, fine, eps, infs[i])
            assert got >= _exact_curve(s, q, eps, add) - 1e-13


@pytest.mark.parametrize("add", [False, True])
def test_coarsened_split_cell_is_the_coarse_cell_and_lies_above_the_split_one(add):
    # connect-the-dots keeps each bin's P- and Q-masses, so re-discretising the split
    # cell onto the coarse grid gives the coarse cell itself (the coarse nodes are
    # split nodes); by Jensen the coarse curve is above the split one
    step, factor, tau = 1e-3, 4, 1e-12
    first, pmfs, infs = sc.split_cells(SIG, QS, step, factor, tau, add)
    c_first, c_pmfs, c_infs = _pessimistic_cells(SIG, QS, step, tau, add)
    for i in range(SIG.size):
        cf, cp, _ = coarsen(int(first[i]), pmfs[i], factor, step / factor)
        n = min(cp.size, c_pmfs[i].size)
        assert cf == c_first[i]
        # but for the end coarse bins: the fine range may end inside them (the mass
        # beyond a cell's end node is put on it or at +inf, a few 1e-13 here)
        np.testing.assert_allclose(cp[2 : n - 2], c_pmfs[i][2 : n - 2], rtol=1e-9, atol=1e-15)
        np.testing.assert_allclose(cp[:n], c_pmfs[i][:n], rtol=0, atol=1e-11)
        for eps in (0.0, 0.02, 0.1, 0.5, 1.5):
            split = _curve(first[i], pmfs[i], step / factor, eps, infs[i])
            coarse = _curve(c_first[i], c_pmfs[i], step, eps, c_infs[i])
            # (up to the end bins' masses: the split cell may send to +inf what the
            # coarse cell puts on its end node)
            assert split <= coarse + 1e-12


def test_split_group_is_the_exact_composition_within_its_error():
    # four steps of two cells at a coarse step: the fine PMFs convolved exactly, then
    # coarsened, against the group's FFT composition and its certified error
    step, factor, tau = 1e-2, 4, 1e-10
    sig, qs, counts = np.array([0.9, 1.3]), np.array([0.05, 0.2]), np.array([2.0, 2.0])
    first, pmfs, infs = sc.split_cells(sig, qs, step, factor, tau, False)
    exact, origin = np.array([1.0]), 0
    for f, p, k in zip(first, pmfs, counts, strict=True):
        for _ in range(int(k)):
            exact, origin = np.convolve(exact, p), origin + int(f)
    e_first, e_pmf, _ = coarsen(origin, exact, factor, step / factor)
    out = sc.split_fine_group(sig, qs, counts, step, factor, tau, False, 1e-12)
    assert out is not None
    g_first, g_pmf, err, log_fin = out
    assert err < 1e-9
    assert log_fin == pytest.approx(float(counts @ np.log1p(-infs)), rel=1e-12)
    for eps in (0.0, 0.05, 0.2, 0.6, 1.2):
        assert abs(_curve(g_first, g_pmf, step, eps) - _curve(e_first, e_pmf, step, eps)) <= (
            err + 1e-12
        )


def test_split_group_is_the_fine_group_up_to_the_tail_widening():
    # the same group composed from all-fine cells (groups.compose_fine_group): the split
    # one is a coarsening of it in the tail, so its epsilon is at or above, and close
    from dpacct.accountant.pld.grid import GridPLD

    args = (np.array([1.0, 1.4]), np.array([0.01, 0.02]), np.array([200.0, 100.0]), 1e-3, 8)

    def eps(out):
        first, pmf, err, log_fin = out
        return GridPLD(1e-3, first, pmf, -math.expm1(log_fin) + err, True).epsilon(1e-5)

    split = eps(sc.split_fine_group(*args, 1e-14, False, 1e-12))
    fine = eps(compose_fine_group(*args, 1e-14, False, 1e-12))
    assert fine * (1 - 1e-9) <= split <= fine * (1 + 2e-5)


@settings(max_examples=20, deadline=None)
@given(
    sigma=st.floats(0.5, 4.0),
    q=st.floats(1e-3, 1.0),
    factor=st.sampled_from([1, 2, 8, 16]),
    add=st.booleans(),
)
def test_split_cells_are_sound_for_any_cell(sigma, q, factor, add):
    first, pmfs, infs = sc.split_cells(np.array([sigma]), np.array([q]), 1e-3, factor, 1e-12, add)
    pmf, fine = pmfs[0], 1e-3 / factor
    assert np.all(pmf >= 0) and abs(pmf.sum() + infs[0] - 1.0) < 1e-12
    for eps in (0.0, 0.1, 1.0):
        assert _curve(first[0], pmf, fine, eps, infs[0]) >= _exact_curve(sigma, q, eps, add) - 1e-13


def test_bad_factor_is_refused():
    with pytest.raises(ValueError, match="factor"):
        sc.split_cells(SIG, QS, 1e-3, 3, 1e-12, False)
