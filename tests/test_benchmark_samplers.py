"""benchmarks/samplers_dong_ozgur.py and samplers_pr414.py: the cache and the helpers."""

from __future__ import annotations

import json

import pytest

from benchmarks import samplers_dong_ozgur as do
from benchmarks import samplers_pr414 as pr

CACHE = json.loads(do.CACHE.read_text(encoding="utf-8"))


def test_the_cache_rows_are_the_configurations():
    """Every cached Monte Carlo row was made for the configuration of its name."""
    configs = {name: (t, k, eps, delta) for name, t, k, eps, delta, _ in do.CONFIGS}
    assert CACHE["rows"], "no Monte Carlo row cached"
    for name, row in CACHE["rows"].items():
        assert (row["T"], row["k"], row["epsilon"], row["delta"]) == configs[name], name
        assert row["evals"] and row["n_per_direction"] > 0 and "--mc" in row["command"]
        assert CACHE["peer_commit"] == do.PEER_COMMIT


def test_the_cached_k1_estimates_are_below_the_certified_floor():
    """What benchmarks/README.md says of them: at k = 1 dpacct's certified lower bound
    on epsilon at the MC sigma exceeds the target (the point estimate is provably
    low).  A re-run whose estimate is no longer below fails here."""
    from dpacct.accountant import random_allocation_lower_epsilon

    rows = [r for r in CACHE["rows"].values() if r["k"] == 1]
    assert rows
    for r in rows:
        assert random_allocation_lower_epsilon(r["sigma_mc"], r["T"], r["delta"]) > r["epsilon"]


@pytest.mark.parametrize(("t", "eps"), [(100, 2.0), (100, 8.0), (1000, 1.0)])
def test_sigma_floor_brackets_the_lower_bound_crossing(t, eps):
    from dpacct.accountant import random_allocation_lower_epsilon
    from dpacct.calibrators import noise_multiplier

    hi = noise_multiplier(epsilon=eps, delta=1e-5, sample_rate=1 / t, steps=t)
    floor = do.sigma_floor(t, epsilon=eps, delta=1e-5, hi=hi)
    assert floor < hi
    assert random_allocation_lower_epsilon(floor, t, 1e-5) > eps
    assert random_allocation_lower_epsilon(floor + 2e-6, t, 1e-5) <= eps


def test_the_pr_child_compiles_and_the_settings_parse():
    compile(pr._CHILD, "samplers_pr414 child", "exec")
    assert pr.PR_COMMIT == "125d46c"
