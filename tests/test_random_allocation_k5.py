"""The k = 5 route on Proposition 16's law (accountant/transformers/random_allocation_k5.py).

The route choice, the law's settings reaching the builder (a spy), and, slow, the route at
sigma 1.2, T 20 against Proposition 10's route alone and an importance-sampled truth (the
law itself is tested against the importance-sampled exact pair and brute force in
tests/test_random_allocation_k_law_sq3_k5.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from dpacct.accountant.transformers import random_allocation_k5
from dpacct.accountant.transformers.random_allocation import random_allocation
from dpacct.accountant.transformers.random_allocation_k4 import (
    allocation_k_pair,
    k_atoms,
    sq_routed,
)
from dpacct.accountant.transformers.random_allocation_k5 import (
    K5_SQ_SETTINGS,
    k5_sq_atoms,
    k5_sq_routed,
)
from dpacct.mechanisms import GaussianMechanism


def test_route_choice():
    """Proposition 16's law is the k = 5 route's on sigma 1-1.2, T 10-20 only; there the
    mechanism holds Proposition 10's route too (the least of both is answered)."""
    assert k5_sq_routed(1.2, 20, 5) and k5_sq_routed(1.0, 10, 5)
    assert not (k5_sq_routed(1.0, 100, 5) or k5_sq_routed(1.2, 20, 4)
                or k5_sq_routed(0.9, 10, 5) or k5_sq_routed(1.2, 21, 5))
    assert sq_routed(1.2, 20, 5) and sq_routed(1.2, 20, 4) and not sq_routed(1.2, 20, 6)
    (extra,) = random_allocation(GaussianMechanism(1.0), 10, k=5)._extra_routes
    assert "four=True" in repr(extra)
    assert random_allocation(GaussianMechanism(1.0), 100, k=5)._extra_routes == ()


def test_k_atoms_builds_proposition_16s_law_on_its_settings(monkeypatch):
    """Where routed, the route's atoms are Proposition 16's law on :data:`K5_SQ_SETTINGS`
    (first region on Maclaurin at one epoch, with the squares over several), built once per
    (sigma, T, several epochs); ``four=True`` and other rows do not build it."""
    calls = []

    def spy(sigma, t, **kw):
        calls.append((sigma, t, kw))
        return np.array([1.0]), np.array([1.0]), 0.0

    monkeypatch.setattr(random_allocation_k5, "remove_atoms_sq3", spy)
    random_allocation_k5._last_law.cache_clear()
    k_atoms(1.2, 20, 5)
    k_atoms(1.2, 20, 5)
    k_atoms(1.2, 20, 5, epochs=3)
    assert len(calls) == 2
    for (sigma, t, kw), first in zip(calls, ("maclaurin", "squares"), strict=True):
        assert (sigma, t, kw["k"], kw["first"]) == (1.2, 20, 5, first)
        assert {key: kw[key] for key in K5_SQ_SETTINGS} == K5_SQ_SETTINGS
    k5_sq_atoms(1.0, 10)
    assert calls[-1][:2] == (1.0, 10)
    calls.clear()
    k_atoms(6.0, 6, 5, four=True)
    assert not calls
    random_allocation_k5._last_law.cache_clear()  # no spy's law left for later tests


@pytest.mark.slow
def test_route_below_proposition_10s_and_around_the_truth():
    """sigma 1.2, T 20, k 5, one epoch: the answer (the least of Proposition 16's and
    Proposition 10's routes) is below 0.98 times Proposition 10's route alone (measured
    5.30 or so against 5.48290, delta 1e-6), above the certified lower end and the
    importance-sampled truth (5.2488, session 36), never above Proposition 10's route."""
    deltas = (1e-6, 1e-3, 1e-8, 1.02e-9)
    mech = random_allocation(GaussianMechanism(1.2), 20, k=5)
    alone = allocation_k_pair(1.2, 20, 5, four=True, progress=False)
    new = np.array([float(mech.epsilon(d)) for d in deltas])
    old = np.array([float(alone.epsilon(d)) for d in deltas])
    assert np.all(new <= old + 1e-12) and new[0] < 0.98 * old[0]
    bracket = mech.epsilon_bounds(deltas[0])
    assert bracket[0] <= 5.2488 <= bracket[1] == new[0]
