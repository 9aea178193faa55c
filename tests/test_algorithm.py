"""Algorithms and their release sessions (``dpacct.mechanisms.algorithms.algorithm``): the session
enforces the plan (no release beyond the claim, none missing, no unplanned label), the
plan is built once, and an algorithm's privacy is the composition of its planned
releases (checked against closed forms)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from oracles import gaussian_delta

from dpacct.mechanisms import GaussianMechanism, LaplaceMechanism, NoisyGD, PlannedRelease
from dpacct.mechanisms.algorithms.algorithm import Algorithm, ReleaseSession


# ----------------------------------------------------------------------------------
# the session enforces the plan
# ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Drifting(Algorithm):
    """Claims two Laplace releases; ``run`` makes ``made`` of them."""

    made: int

    def planned_releases(self):
        return (PlannedRelease("count", LaplaceMechanism(b=1.0), 2),)

    def run(self, rng):
        session = self.releases(rng)
        out = [session.release("count", 10.0) for _ in range(self.made)]
        session.finish()
        return out


def test_session_refuses_a_release_beyond_the_claim():
    rng = np.random.default_rng(0)
    with pytest.raises(RuntimeError, match="more often than the 2 time"):
        Drifting(made=3).run(rng)


def test_release_many_is_that_many_releases_draw_for_draw():
    """k rows in one call: the same numbers as k calls of release, counted k times."""
    mech = GaussianMechanism(sigma=1.5)
    plan = (PlannedRelease("g", mech, 5, sensitivity=0.7),)
    values = np.arange(15.0).reshape(5, 3) - 7.0
    one = ReleaseSession(plan, np.random.default_rng(11))
    singles = np.array([one.release("g", v) for v in values])
    many = ReleaseSession(plan, np.random.default_rng(11))
    head = many.release_many("g", values[:2])
    tail = many.release_many("g", values[2:])
    assert many.made == {"g": 5}
    np.testing.assert_array_equal(np.vstack([head, tail]), singles)
    # the noise itself: independent of the values, std sigma * sensitivity
    rng = np.random.default_rng(11)
    np.testing.assert_array_equal(singles, values + rng.normal(0.0, 1.5 * 0.7, size=(5, 3)))
    many.finish()


def test_release_many_refuses_before_drawing():
    plan = (PlannedRelease("g", GaussianMechanism(sigma=1.0), 3),)
    session = ReleaseSession(plan, np.random.default_rng(0))
    state = session.rng.bit_generator.state
    with pytest.raises(RuntimeError, match="more often than the 3"):
        session.release_many("g", np.zeros((4, 2)))
    with pytest.raises(ValueError, match="leading axis"):
        session.release_many("g", np.zeros((0, 2)))
    with pytest.raises(ValueError, match="leading axis"):
        session.release_many("g", 0.0)
    assert session.rng.bit_generator.state == state and session.made == {"g": 0}
    laplace = ReleaseSession((PlannedRelease("l", LaplaceMechanism(b=1.0), 2),),
                             np.random.default_rng(0))
    with pytest.raises(TypeError, match="GaussianMechanism"):
        laplace.release_many("l", np.zeros((2, 1)))
    from dpacct.accountant import poisson_subsample

    sub = ReleaseSession((PlannedRelease("s", poisson_subsample(GaussianMechanism(sigma=1.0),
                                                                0.1), 2),),
                         np.random.default_rng(0))
    with pytest.raises(TypeError, match="not subsampled"):
        sub.release_many("s", np.zeros((2, 1)))


def test_session_refuses_fewer_releases_than_claimed():
    with pytest.raises(RuntimeError, match="'count': 1 of 2"):
        Drifting(made=1).run(np.random.default_rng(0))
    assert len(Drifting(made=2).run(np.random.default_rng(0))) == 2


def test_session_refuses_an_unplanned_label_and_a_claim_without_release():
    session = Drifting(made=2).releases(np.random.default_rng(0))
    with pytest.raises(KeyError, match="no planned release 'other'"):
        session.release("other", 1.0)
    from dpacct.mechanisms import PureDPMechanism

    with pytest.raises(TypeError, match="has no release method"):
        PlannedRelease("x", PureDPMechanism(epsilon=1.0), 1)
    with pytest.raises(TypeError, match=r"rng must be a numpy\.random\.Generator"):
        Drifting(made=2).releases(0)


def test_plan_is_built_once():
    alg = NoisyGD(sigma=1.0, iterations=3, loss="linear", clip=1.0)
    assert alg.plan is alg.plan
    assert alg.primitives()[0][0] is alg.plan[0].mechanism


@dataclass(frozen=True)
class _TwoGaussians(Algorithm):
    """Claims ``count`` Gaussian releases of noise multiplier ``sigma`` and one of 3."""

    sigma: float
    count: int

    def planned_releases(self):
        return (
            PlannedRelease("mean", GaussianMechanism(sigma=self.sigma), self.count),
            PlannedRelease("size", GaussianMechanism(sigma=3.0), 1),
        )


def test_an_algorithm_is_described_by_its_planned_releases():
    alg = _TwoGaussians(sigma=2.0, count=4)
    assert alg.privacy is not alg
    # Gaussians of multipliers s_i compose to mu-GDP with mu^2 = sum 1 / s_i^2
    mu = math.sqrt(4 / 2.0**2 + 1 / 3.0**2)
    eps = 1.0
    exact = float(gaussian_delta(mu, eps))
    got = float(alg.delta(eps))
    assert got == pytest.approx(exact, rel=1e-9)
    # the release draws: the session hands out the planned mechanism's noise
    session = alg.releases(np.random.default_rng(0))
    draws = [session.release("mean", 0.0) for _ in range(4)]
    session.release("size", 0.0)
    session.finish()
    assert len(draws) == 4 and all(np.isfinite(draws))


