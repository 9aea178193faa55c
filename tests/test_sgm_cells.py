"""Vectorised subsampled-Gaussian cells (``accountant/pld/sgm_cells.py``).

Independent references: the engine's one-cell optimistic construction
(``pld._from_bins``) for the vectorised one, and the closed-form hockey-stick curve of
the Poisson-subsampled Gaussian pair in both directions (pessimistic cells lie above
it, optimistic ones below), with mpmath for the pile node.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracles import subsampled_gaussian_delta

from dpacct.accountant.pld import sgm_cells as cells
from dpacct.accountant.pld.grid import _Bins, _from_bins


def _hockey(first, pmf, step, eps):
    """delta(eps) of a grid PMF under P (no mass at +inf)."""
    a = (first + np.arange(pmf.size)) * step
    return np.array([np.sum(pmf * np.maximum(-np.expm1(e - a), 0.0)) for e in eps])


def _cells(seed, n):
    rng = np.random.default_rng(seed)
    sig = np.concatenate([rng.uniform(0.5, 3.0, n), [0.55, 1.5, 0.8]])
    qs = np.concatenate([rng.uniform(1e-4, 0.5, n), [0.01, 0.001, 1.0]])
    return sig, qs


@pytest.mark.parametrize("add", [False, True])
@pytest.mark.parametrize("step", [1e-3, 2.5e-4])
def test_vectorised_optimistic_cells_match_the_engine_construction(add, step, monkeypatch):
    # small blocks: several padded tables of different widths
    monkeypatch.setattr(cells, "BIN_BLOCK", 1 << 15)
    sig, qs = _cells(4, 25)
    tau = 1e-13
    firsts, pmfs, infs = cells._optimistic_cells(sig, qs, step, tau, add)
    first, nb, m, n, nodes, _, top = cells._cell_bins(sig, qs, step, tau, add)
    r = cells._scaled_q(n, nodes, m)
    cuts = np.cumsum(nb)[:-1]
    eps = np.linspace(-0.5, 4.0, 46)
    for k, (mk, rk) in enumerate(zip(np.split(m, cuts), np.split(r, cuts), strict=True)):
        ref = _from_bins(
            _Bins(
                step=step,
                first=int(first[k]),
                m=mk,
                r=rk,
                bottom=(0.0, 0.0),
                top=(float(top[0][k]), 0.0),
                inf_mass=0.0,
            ),
            False,
        )
        assert infs[k] == ref.inf_mass == 0.0
        ours = _hockey(firsts[k], pmfs[k], step, eps)
        theirs = _hockey(ref.offset, ref.pmf, step, eps)
        # the same construction, summed in a different order: agreement to round-off
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)
        # never more P-mass than the cell has (excess mass would compound)
        assert pmfs[k].sum() <= (mk.sum() + top[0][k]) * (1 + 1e-14)
        assert np.all(pmfs[k] >= 0)


@pytest.mark.parametrize("add", [False, True])
def test_pessimistic_cells_keep_both_masses(add, monkeypatch):
    monkeypatch.setattr(cells, "BIN_BLOCK", 1 << 14)
    sig, qs = _cells(5, 15)
    step, tau = 1e-3, 1e-13
    firsts, pmfs, infs = cells._pessimistic_cells(sig, qs, step, tau, add)
    first, nb, m, _, _, bottom, top = cells._cell_bins(sig, qs, step, tau, add)
    assert len(pmfs) == sig.size
    for k, p in enumerate(pmfs):
        assert firsts[k] == first[k] and p.size == nb[k] + 1 and np.all(p >= 0)
        # connect-the-dots keeps the P-mass of the grid (bins + bottom), the top goes to +inf
        start = int(np.sum(nb[:k]))
        np.testing.assert_allclose(
            p.sum(), m[start : start + nb[k]].sum() + bottom[0][k], rtol=1e-12, atol=1e-300
        )
        assert infs[k] == top[0][k]


def _exact_remove_delta(sigma, q, eps):
    """delta(eps) of the remove-direction pair P = (1-q) N(0,s^2) + q N(1,s^2),
    Q = N(0,s^2) (the shared closed form)."""
    return _exact_delta(sigma, q, eps, False)


@pytest.mark.parametrize("step", [1e-3, 2.5e-4])
def test_pile_cells_are_dominated_by_the_exact_pair(step, monkeypatch):
    # every cell's grid PMF, at its shifted losses, has a curve below the exact one at
    # every eps (negative ones too: that is what makes composition keep the order)
    monkeypatch.setattr(cells, "BIN_BLOCK", 1 << 15)
    sig, qs = _cells(6, 12)
    sig, qs = np.append(sig, [3.0, 0.7]), np.append(qs, [1e-4, 0.2])
    pile = cells._pile_nodes(sig, qs, step)
    assert np.isnan(pile[qs == 1.0]).all() and np.isfinite(pile[qs < 1.0]).all()
    firsts, pmfs, infs = cells._optimistic_cells(sig, qs, step, 1e-13, False, pile)
    shift = cells._pile_shift(pile, step)
    assert np.all((shift >= 0) & (shift < step))
    for k in range(sig.size):
        losses = (firsts[k] + np.arange(pmfs[k].size)) * step + shift[k]
        if np.isfinite(pile[k]):
            # the grid starts at the pile node (trimmed to its first positive node)
            lead = (losses[0] - pile[k]) / step
            assert lead > -1e-6 and abs(lead - round(lead)) < 1e-6
            assert pile[k] >= math.log1p(-qs[k])
        eps = np.concatenate([losses[:40:3], np.linspace(-0.3, 3.0, 34)])
        ours = np.array([np.sum(pmfs[k] * np.maximum(-np.expm1(e - losses), 0.0)) for e in eps])
        exact = _exact_remove_delta(float(sig[k]), float(qs[k]), eps)
        assert np.all(ours <= exact + 1e-13), (sig[k], qs[k])
        assert pmfs[k].sum() <= 1.0 + 1e-14 and np.all(pmfs[k] >= 0) and infs[k] == 0.0


def test_pile_node_atom_sits_on_the_node():
    # the merged loss of {L <= o + step} is at (not below) the node o, and within a
    # hair of it when a fixed point exists (independent of the bisection's arithmetic:
    # the CDFs by mpmath)
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    step = 1e-3
    sig = np.array([0.55, 0.8, 1.5, 2.0])
    qs = np.array([0.01, 0.01, 0.02, 0.1])
    pile = cells._pile_nodes(sig, qs, step)
    for s, q, o in zip(sig.tolist(), qs.tolist(), pile.tolist(), strict=True):
        y = mpmath.mpf(o) + step
        x = s**2 * (mpmath.log(mpmath.exp(y) - 1 + q) - mpmath.log(q)) + mpmath.mpf(1) / 2
        p = (1 - q) * mpmath.ncdf(x / s) + q * mpmath.ncdf((x - 1) / s)
        atom = float(mpmath.log(p / mpmath.ncdf(x / s)))
        assert o <= atom <= o + 1e-9 * step + 1e-15


def _exact_delta(sigma, q, eps, add):
    """The hockey-stick curve of the Poisson-subsampled Gaussian pair, one direction."""
    way = "add" if add else "remove"
    return np.array([float(subsampled_gaussian_delta(q, sigma, e, direction=way)) for e in eps])


def _grid_delta(first, pmf, inf, step, eps):
    losses = (first + np.arange(pmf.size)) * step
    return np.array([inf + np.sum(pmf * np.maximum(-np.expm1(e - losses), 0.0)) for e in eps])


_PAIRS = [(0.6, 0.02), (1.0, 0.01), (2.0, 0.2), (0.8, 1.0), (4.0, 1e-3), (1.3, 0.5)]


@pytest.mark.parametrize("add", [False, True])
def test_pessimistic_cells_dominate_the_exact_curve(add):
    sig = np.array([s for s, _ in _PAIRS])
    qs = np.array([q for _, q in _PAIRS])
    step, tau = 1e-3, 1e-12
    firsts, pmfs, infs = cells._pessimistic_cells(sig, qs, step, tau, add)
    for k, (s, q) in enumerate(_PAIRS):
        eps = np.concatenate([np.linspace(-0.5, 0.05, 12), np.linspace(0.05, 4.0, 40)])
        ours = _grid_delta(firsts[k], pmfs[k], infs[k], step, eps)
        exact = _exact_delta(s, q, eps, add)
        # above the true curve at every eps (up to the round-off of the sums) ...
        assert np.all(ours >= exact - 1e-13), (s, q)
        # ... and tight: connect-the-dots is within about step^2/8 of it, plus the cut
        assert np.all(ours <= exact + step**2 + 4 * tau), (s, q)
        assert infs[k] <= tau and pmfs[k].sum() + infs[k] == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("add", [False, True])
def test_optimistic_cells_lie_below_the_exact_curve(add):
    sig = np.array([s for s, _ in _PAIRS])
    qs = np.array([q for _, q in _PAIRS])
    step, tau = 1e-3, 1e-12
    firsts, pmfs, infs = cells._optimistic_cells(sig, qs, step, tau, add)
    for k, (s, q) in enumerate(_PAIRS):
        eps = np.concatenate([np.linspace(-0.5, 0.05, 12), np.linspace(0.05, 4.0, 40)])
        ours = _grid_delta(firsts[k], pmfs[k], infs[k], step, eps)
        exact = _exact_delta(s, q, eps, add)
        assert np.all(ours <= exact + 1e-13), (s, q)
        assert np.all(ours >= exact - 2 * step - 4 * tau), (s, q)  # and close
        assert infs[k] == 0.0 and np.all(pmfs[k] >= 0)


def test_loss_and_its_preimage_are_the_log_density_ratio():
    from scipy import stats

    rng = np.random.default_rng(8)
    sigma = rng.uniform(0.3, 5.0, 200)
    q = rng.uniform(1e-4, 1.0, 200)
    x = rng.normal(0.5, 3.0, 200)
    # log dP/dQ at x, from the two densities
    want = np.logaddexp(
        np.log1p(-q) + stats.norm.logpdf(x, 0, sigma), np.log(q) + stats.norm.logpdf(x, 1, sigma)
    ) - stats.norm.logpdf(x, 0, sigma)
    loss = cells._loss_of_x(x, sigma, q)
    np.testing.assert_allclose(loss, want, rtol=1e-10, atol=1e-12)
    # the preimage inverts the loss (checked in the loss domain: near the floor
    # log(1 - q) the loss is flat in x and x(a) ill-conditioned)
    a = np.log1p(-q) + rng.uniform(1e-3, 5.0, 200)
    np.testing.assert_allclose(
        cells._loss_of_x(cells._x_of_loss(a, sigma, q), sigma, q), a, rtol=1e-10, atol=1e-12
    )
    # below the loss's floor log(1 - q) there is no preimage
    assert np.all(cells._x_of_loss(np.log1p(-q) - 1e-3, sigma, q) == -np.inf)


def test_node_cdfs_spread_by_counts_are_the_gathered_ones_bit_for_bit():
    """With the cells' node ``count`` (``cell`` being ``np.repeat(arange, count)``) the
    per-cell values reach the nodes by ``np.repeat``: every CDF the float the gather
    through ``cell`` gives, both directions, a cell of one node among them."""
    rng = np.random.default_rng(3)
    sigma = rng.uniform(0.5, 3.0, 7)
    q = np.array([0.01, 0.2, 1.0, 1e-4, 0.5, 0.03, 0.9])
    count = np.array([5, 1, 40, 3, 1, 17, 9])
    cell = np.repeat(np.arange(sigma.size), count)
    a = rng.normal(0.0, 2.0, cell.size)
    for add in (False, True):
        want = cells._node_cdfs(a, sigma, q, cell, add)
        got = cells._node_cdfs(a, sigma, q, cell, add, count)
        for w, g in zip(want, got, strict=True):
            assert np.array_equal(w.view(np.int64), g.view(np.int64))
    assert np.array_equal(cells._x_of_loss(a, sigma, q, cell, count),
                          cells._x_of_loss(a, sigma, q, cell))
