"""Cells whose node spacing grows along the tail (``accountant/pld/graded_cells.py``).

Independent references: the closed-form hockey-stick curve of one Poisson-subsampled
Gaussian step (``test_split_cells._exact_curve``: normal CDFs at the loss preimage), the
P- and Q-masses of the pair (one, and at most one), and the uniform fine
connect-the-dots cells of ``sgm_cells`` (another code path; every graded node is one of
their nodes, so the graded curve lies above theirs, by Jensen, and close).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_split_cells import _curve, _exact_curve

from dpacct.accountant.pld import graded_cells as gc
from dpacct.accountant.pld import sgm_cells
from dpacct.accountant.pld.sgm_cells import _pessimistic_cells

SIG = np.array([0.6, 0.8, 1.0, 1.7, 3.0, 1.2])
QS = np.array([0.3, 0.02, 0.01, 0.001, 0.1, 1.0])
EPS = (0.0, 0.01, 0.05, 0.2, 0.5, 1.0, 2.0, 4.0)


@pytest.mark.parametrize("add", [False, True])
def test_without_levels_the_cells_are_the_uniform_fine_ones(monkeypatch, add):
    # a zero level share puts the whole range in the fine bulk: bin for bin the
    # uniform connect-the-dots code at step / factor
    monkeypatch.setattr(gc, "LEVEL_SHARE", 0.0)
    step, factor, tau = 1e-3, 4, 1e-12
    f0, p0, i0 = _pessimistic_cells(SIG, QS, step / factor, tau, add)
    f1, p1, i1 = gc.graded_cells(SIG, QS, step, factor, tau, add)
    np.testing.assert_array_equal(f1, f0)
    for a, b in zip(p0, p1, strict=True):
        assert a.size == b.size
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(i1, i0, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("add", [False, True])
def test_graded_cells_keep_both_masses_and_lie_between_the_exact_and_uniform_curves(add):
    step, factor, tau = 1e-3, 8, 1e-14
    first, pmfs, infs = gc.graded_cells(SIG, QS, step, factor, tau, add)
    u_first, u_pmfs, u_infs = _pessimistic_cells(SIG, QS, step / factor, tau, add)
    fine = step / factor
    for i, (s, q) in enumerate(zip(SIG, QS, strict=True)):
        pmf = pmfs[i]
        loss = (first[i] + np.arange(pmf.size)) * fine
        assert np.all(pmf >= 0)
        assert abs(pmf.sum() + infs[i] - 1.0) < 1e-12
        assert np.sum(pmf * np.exp(-loss)) <= 1.0 + 1e-12
        # the same range as the uniform cell: no more mass cut, no longer PMF
        assert first[i] == u_first[i] and pmf.size == u_pmfs[i].size
        assert infs[i] <= u_infs[i] * (1 + 1e-12) + 1e-300
        for eps in EPS:
            got = _curve(first[i], pmf, fine, eps, infs[i])
            uniform = _curve(u_first[i], u_pmfs[i], fine, eps, u_infs[i])
            assert got >= _exact_curve(s, q, eps, add) - 1e-13
            assert got >= uniform - 1e-14  # a coarser node set: a mean-preserving spread
            assert got <= uniform + 1e-3 * max(uniform, 1e-9) + 1e-14


def test_the_tail_is_held_by_few_nodes():
    _, pmfs, _ = gc.graded_cells(
        np.array([1.0, 1.5, 0.8]), np.array([0.01, 0.01, 0.02]), 1e-3, 8, 1e-17, False
    )
    for pmf in pmfs:
        assert np.count_nonzero(pmf) < pmf.size / 4


def test_cells_are_discretised_independently_of_their_batch():
    args = (1e-3, 4, 1e-14)
    for add in (False, True):
        f, p, i = gc.graded_cells(SIG, QS, *args, add)
        for k in range(SIG.size):
            fk, pk, ik = gc.graded_cells(SIG[k : k + 1], QS[k : k + 1], *args, add)
            assert fk[0] == f[k] and ik[0] == i[k]
            np.testing.assert_array_equal(pk[0], p[k])


@settings(max_examples=30, deadline=None)
@given(
    sigma=st.floats(0.5, 4.0),
    q=st.floats(1e-3, 1.0),
    factor=st.sampled_from([1, 2, 8, 64]),
    tau=st.sampled_from([1e-10, 1e-14, 1e-18]),
    add=st.booleans(),
)
def test_graded_cells_are_sound_for_any_cell(sigma, q, factor, tau, add):
    first, pmfs, infs = gc.graded_cells(np.array([sigma]), np.array([q]), 1e-3, factor, tau, add)
    pmf, fine = pmfs[0], 1e-3 / factor
    assert np.all(pmf >= 0) and abs(pmf.sum() + infs[0] - 1.0) < 1e-12
    for eps in (0.0, 0.1, 1.0, 3.0):
        assert _curve(first[0], pmf, fine, eps, infs[0]) >= _exact_curve(sigma, q, eps, add) - 1e-13


def test_bad_factor_is_refused():
    with pytest.raises(ValueError, match="factor"):
        gc.graded_cells(SIG, QS, 1e-3, 3, 1e-12, False)


@pytest.mark.parametrize(
    "phases",
    [
        [(1.5 * 0.999**t, 0.01, 1) for t in range(600)],
        [(1.0, 0.01, 3000)],
        [(0.9 + 0.01 * i, 0.02, 20) for i in range(60)],
    ],
)
def test_the_ledger_on_graded_cells_is_the_uniform_cells_answer_or_a_little_above(
    monkeypatch, phases
):
    # every graded cell dominates its uniform fine cell, and domination survives
    # composition and coarsening: the ledger's answer can only move up, and little
    from dpacct.accountant.pld.incremental import IncrementalEpsilon

    def answer():
        inc = IncrementalEpsilon(1e-5)
        inc.fold(phases)
        return inc.epsilon()

    graded = answer()
    monkeypatch.setattr(gc, "LEVEL_SHARE", 0.0)  # the whole range fine: uniform cells
    uniform = answer()
    assert uniform * (1 - 1e-9) <= graded <= uniform * (1 + 1e-5)


def test_many_cells_are_discretised_in_blocks_as_one_by_one():
    # more nodes than one block of the vectorised discretisation holds: the cells are
    # cut into blocks, and each comes out as it does alone
    rng = np.random.default_rng(5)
    sig = rng.uniform(0.8, 2.0, 1500)
    qs = rng.uniform(0.001, 0.02, 1500)
    f, p, i = gc.graded_cells(sig, qs, 1e-3, 8, 1e-14, False)
    assert len(p) == 1500 and sum(np.count_nonzero(x) for x in p) > sgm_cells.BIN_BLOCK
    for k in (0, 777, 1499):
        fk, pk, ik = gc.graded_cells(sig[k : k + 1], qs[k : k + 1], 1e-3, 8, 1e-14, False)
        assert fk[0] == f[k] and ik[0] == i[k]
        np.testing.assert_array_equal(pk[0], p[k])
