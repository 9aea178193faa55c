"""Tests for ``dpacct.mechanisms.primitives.permute_and_flip``.

References: the permute-and-flip algorithm run literally (random order, coin flips)
over every permutation, exact; sampled frequencies against it; the pure-DP curves of
``PureDPMechanism`` (the accounting claimed).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpacct.accountant.serialization import from_dict, to_dict
from dpacct.mechanisms import PureDPMechanism
from dpacct.mechanisms.primitives.permute_and_flip import PermuteAndFlip


def literal_law(u, eps, sens):
    """McKenna & Sheldon 2020, Algorithm 1, enumerated over every order."""
    u = np.asarray(u, dtype=float)
    p = np.exp(eps * (u - u.max()) / (2 * sens))
    law = np.zeros(u.size)
    perms = list(itertools.permutations(range(u.size)))
    for perm in perms:
        alive = 1.0
        for _ in range(200):                       # pass after pass until a head
            for i in perm:
                law[i] += alive * p[i]
                alive *= 1.0 - p[i]
            if alive < 1e-15:
                break
    return law / len(perms)


def test_sampled_law_is_permute_and_flip():
    u = [0.0, 2.0, 1.0, -1.5, 2.0]
    pf = PermuteAndFlip(epsilon=1.3)
    exact = literal_law(u, 1.3, 0.5)
    assert exact.sum() == pytest.approx(1.0, abs=1e-12)
    rng = np.random.default_rng(0)
    draws = 40_000
    picks = np.bincount([pf.release(u, sensitivity=0.5, rng=rng) for _ in range(draws)],
                        minlength=5) / draws
    band = 5.0 * np.sqrt(exact * (1 - exact) / draws)
    assert np.all(np.abs(picks - exact) <= band)


def test_best_candidate_gets_more_than_under_the_exponential_mechanism():
    # McKenna & Sheldon 2020, Theorem 2: never a worse expected utility
    u = np.array([0.0, -1.0, -1.0, -2.0, -3.0])
    exact = literal_law(u, 1.0, 1.0)
    em = np.exp(u / 2) / np.exp(u / 2).sum()
    assert exact @ u >= em @ u
    assert exact[0] > em[0]


def test_accounted_as_pure_dp():
    pf = PermuteAndFlip(epsilon=0.7)
    ref = PureDPMechanism(epsilon=0.7)
    assert pf.pure_epsilon == 0.7
    for d in (1e-2, 1e-6):
        assert pf.epsilon(d) == ref.epsilon(d)
    np.testing.assert_allclose(pf.rdp([2.0, 8.0]), ref.rdp([2.0, 8.0]))


def test_round_trip_and_validation():
    pf = PermuteAndFlip(epsilon=0.25)
    assert from_dict(to_dict(pf)) == pf
    with pytest.raises(ValueError, match="epsilon"):
        PermuteAndFlip(epsilon=0.0)
    with pytest.raises(ValueError, match="scores"):
        pf.release([], sensitivity=1.0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="scores"):
        pf.release([0.0, np.nan], sensitivity=1.0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="sensitivity"):
        pf.release([0.0], sensitivity=-1.0, rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        pf.release([0.0], sensitivity=1.0, rng=1)
