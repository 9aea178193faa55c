"""accountant/mechanism_cache.py: the per-instance cache of a mechanism, its keys, and
the named results the routes store there."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from dpacct.accountant import compose, poisson_subsample, routes
from dpacct.accountant.mechanism_cache import (
    PLDUpper,
    PLDUpperAt,
    instance_cache,
    pld_key,
    pld_upper_key,
)
from dpacct.accountant.pld.pld_settings import PLDSettings
from dpacct.mechanisms import GaussianMechanism


@dataclass(frozen=True)
class Frozen:
    x: float


def test_instance_cache_is_per_instance_and_works_on_frozen_dataclasses():
    a, b = Frozen(1.0), Frozen(1.0)
    assert a == b
    instance_cache(a)["k"] = 1
    assert instance_cache(a) is instance_cache(a) and instance_cache(a) == {"k": 1}
    assert instance_cache(b) == {}  # equal objects do not share a cache
    assert a == b and hash(a) == hash(b)  # the cache is not a field


def test_keys_name_their_query_and_arguments():
    s, t = PLDSettings(1e-4, 1e-6), PLDSettings(1e-3, 1e-6)
    assert pld_key(True, s) == pld_key(True, PLDSettings(1e-4, 1e-6))
    assert len({pld_key(True, s), pld_key(False, s), pld_key(True, t)}) == 3
    assert pld_key(True, s)[0] == "pld" and pld_upper_key(1e-5, None)[0] == "pld_upper"
    assert pld_upper_key(1e-5, None) != pld_upper_key(1e-6, None) != pld_upper_key(1e-6, 1e-3)


def test_results_are_named_tuples():
    assert PLDUpperAt._fields == ("epsilon", "plds", "deciding")
    assert PLDUpper._fields == ("epsilon", "plds", "deciding", "settings", "tried")


def test_the_routes_store_their_named_result_under_its_key():
    run = compose([poisson_subsample(GaussianMechanism(sigma=1.0), 0.02)], [50])
    found = routes.pld_upper(run, 1e-5, None)
    assert isinstance(found, PLDUpper)
    assert instance_cache(run)[pld_upper_key(1e-5, None)] is found
    assert routes.pld_upper(run, 1e-5, None) is found  # read back, not recomputed
    assert found.settings is found.tried[-1]
    assert all(0 <= d <= 1 for d in found.deciding)
    assert found.epsilon == pytest.approx(max(found.plds[d].epsilon(1e-5) for d in found.deciding))


def test_epsilon_bounds_is_kept_like_epsilon_and_asked_again_does_no_work(monkeypatch):
    calls = []
    bracket = routes.epsilon_bracket

    def counted(mech, delta, tol):
        calls.append((delta, tol))
        return bracket(mech, delta, tol)

    monkeypatch.setattr(routes, "epsilon_bracket", counted)
    run = compose([poisson_subsample(GaussianMechanism(sigma=1.0), 0.02)], [50])
    first = run.epsilon_bounds(1e-5)
    assert run.epsilon_bounds(1e-5) is first  # the kept (immutable) Bracket, no work
    assert calls == [(1e-5, None)]
    assert instance_cache(run)[("eps_bounds", 1e-5, None)] is first
    # keyed like epsilon's cache: another delta or tol is another question
    assert run.epsilon_bounds(1e-6) != first and run.epsilon_bounds(1e-5, tol=1e-3) != first
    assert calls == [(1e-5, None), (1e-6, None), (1e-5, 1e-3)]
    assert first[1] == run.epsilon(1e-5) and 0 < first[0] <= first[1]
    # a fresh equal object asks afresh
    assert compose([poisson_subsample(GaussianMechanism(sigma=1.0), 0.02)], [50]).epsilon_bounds(
        1e-5
    ) == first
    assert len(calls) == 4
