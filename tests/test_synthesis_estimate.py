"""Tests for ``dpacct.mechanisms.algorithms.synthesis_estimate``: projections onto the simplex and
onto consistent marginals, and iterative proportional fitting."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpacct.mechanisms.algorithms.synthesis import (
    _Layout,
    _project_consistent,
    ipf,
    project_marginals,
    project_simplex,
)


class TestProjections:
    def test_simplex_projection_kkt(self):
        rng = np.random.default_rng(0)
        for _ in range(20):
            v = rng.normal(size=7) * 2
            x = project_simplex(v)
            assert x.sum() == pytest.approx(1.0, abs=1e-12)
            assert (x >= 0).all()
            # KKT: x = max(v + lam, 0) with one lam; v + lam <= 0 where x == 0
            pos = x > 0
            lam = (x[pos] - v[pos]).mean()
            np.testing.assert_allclose(x[pos] - v[pos], lam, atol=1e-12)
            assert (v[~pos] + lam <= 1e-12).all()
        # hand-computed example: lam = (1 - 0.8 - 0.5)/2 = -0.15
        np.testing.assert_allclose(project_simplex([0.5, 0.8, -0.3]), [0.35, 0.65, 0.0])

    def test_consistent_projection_is_orthogonal(self):
        cliques, sizes = [(0,), (0, 1), (1, 2), (2, 0)], [2, 3, 4]
        lay = _Layout(cliques, sizes)
        rng = np.random.default_rng(1)
        x = rng.normal(size=lay.total)
        px = _project_consistent(x.copy(), lay)
        tabs = lay.split(px)
        # in the set: totals 1, shared columns agree
        assert all(t.sum() == pytest.approx(1.0, abs=1e-12) for t in tabs)
        np.testing.assert_allclose(tabs[0], tabs[1].sum(axis=1), atol=1e-12)
        np.testing.assert_allclose(tabs[0], tabs[3].sum(axis=0), atol=1e-12)
        np.testing.assert_allclose(tabs[1].sum(axis=0), tabs[2].sum(axis=1), atol=1e-12)
        np.testing.assert_allclose(tabs[2].sum(axis=0), tabs[3].sum(axis=1), atol=1e-12)
        # idempotent, and x - P(x) is orthogonal to the set (an affine set)
        np.testing.assert_allclose(_project_consistent(px.copy(), lay), px, atol=1e-12)
        for _ in range(5):
            y = _project_consistent(rng.normal(size=lay.total), lay)
            assert abs(np.dot(x - px, y - px)) < 1e-10

    def test_ipf_recovers_realisable_marginals_and_max_entropy(self):
        rng = np.random.default_rng(4)
        sizes = [2, 3, 4]
        joint = rng.dirichlet(np.ones(24)).reshape(sizes)
        p01, p12, p02 = joint.sum(axis=2), joint.sum(axis=0), joint.sum(axis=1)
        fit, _ = ipf(
            [p01, p12, p02.T],
            [(0, 1), (1, 2), (2, 0)],
            sizes,
            tol=1e-10,
            max_iter=5000,
            smoothing=0.0,
        )
        np.testing.assert_allclose(fit.sum(axis=2), p01, atol=1e-9)
        np.testing.assert_allclose(fit.sum(axis=0), p12, atol=1e-9)
        np.testing.assert_allclose(fit.sum(axis=1), p02, atol=1e-9)
        # a chain 0 - 1 - 2: the maximum-entropy joint is p01 * p12 / p1
        chain, _ = ipf([p01, p12], [(0, 1), (1, 2)], sizes, tol=1e-12, smoothing=0.0)
        p1 = joint.sum(axis=(0, 2))
        np.testing.assert_allclose(
            chain, p01[:, :, None] * p12[None] / p1[None, :, None], atol=1e-10
        )
        # conflicting zero patterns: smoothing keeps a proper distribution
        a = np.array([[0.5, 0.0], [0.0, 0.5]])
        b = np.array([[0.0, 0.5], [0.5, 0.0]])
        bad, _ = ipf([a, b, a], [(0, 1), (1, 2), (0, 2)], [2, 2, 2])
        assert np.isfinite(bad).all() and bad.sum() == pytest.approx(1.0)

    def test_dykstra_is_the_projection_onto_the_polytope(self):
        # tree-structured cliques: the local polytope is the convex hull of the marginals
        # of point masses, so checking the variational inequality at every vertex proves
        # optimality of the projection
        sizes, cliques = [2, 3, 2], [(0,), (0, 1), (1, 2)]
        rng = np.random.default_rng(2)
        z = [rng.normal(0.2, 0.3, size=tuple(sizes[a] for a in c)) for c in cliques]
        p, _ = project_marginals(z, cliques, sizes, tol=1e-12, max_iter=20000)
        zf = np.concatenate([t.ravel() for t in z])
        pf = np.concatenate([t.ravel() for t in p])
        assert (pf >= 0).all()
        worst = -np.inf
        for x in itertools.product(*[range(s) for s in sizes]):
            v = []
            for c in cliques:
                t = np.zeros(tuple(sizes[a] for a in c))
                t[tuple(x[a] for a in c)] = 1.0
                v.append(t.ravel())
            worst = max(worst, float(np.dot(zf - pf, np.concatenate(v) - pf)))
        assert worst <= 1e-8
        # and a feasible input is its own projection
        joint = rng.dirichlet(np.ones(12)).reshape(sizes)
        true = [joint.sum(axis=(1, 2)), joint.sum(axis=2), joint.sum(axis=0)]
        q, _ = project_marginals(true, cliques, sizes)
        for a, b in zip(q, true, strict=True):
            np.testing.assert_allclose(a, b, atol=1e-9)
