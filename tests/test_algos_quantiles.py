"""The quantile rows of ``python -m benchmarks.algorithms`` (``benchmarks/algos/quantiles.py``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

bench = pytest.importorskip("benchmarks.algos.quantiles")

KEYS = {"workflow": str, "metric": str, "dpacct": float, "dpacct_spread": str, "peer": str,
        "peer_value": float, "peer_spread": str, "seeds": int, "verdict": str, "why": str}


def test_quick_rows_have_the_runner_schema():
    rows = bench.rows(seeds=3, quick=True)
    assert len(rows) >= 8
    assert sum("exponential quantile" in r["workflow"] for r in rows) == 3
    for row in rows:
        assert set(row) == set(KEYS)
        for key, kind in KEYS.items():
            assert isinstance(row[key], kind), (key, row[key])
        assert row["seeds"] == 3
        assert row["verdict"] in ("better", "parity", "worse")
        if row["verdict"] == "worse":
            assert row["why"]
        if row["peer"] != "peer not installed":
            assert math.isfinite(row["dpacct"]) and math.isfinite(row["peer_value"])
        if row["peer"].startswith("OpenDP") and "verbatim" not in row["workflow"]:
            # the row states the neighbouring relation and the sensitivity
            assert "add/remove one" in row["workflow"]
            assert ("sensitivity 1" in row["workflow"]
                    or "sensitivity max(q, 1-q)" in row["workflow"])
    assert any(r["peer"].startswith("OpenDP") for r in rows) or all(
        r["peer"] == "peer not installed" for r in rows if "tutorial" in r["workflow"])


def test_tutorial_binning_is_shifted_by_one_bin():
    # the fact the module docstring states, checked on OpenDP itself
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    edges = np.linspace(0.0, 100.0, 11)
    names = [str(i) for i in range(10)]
    space = dp.vector_domain(dp.atom_domain(T=float)), dp.symmetric_distance()
    x = [0.5, 55.0, 99.0, 150.0]
    verbatim = space >> dp.t.then_find_bin(edges=edges) >> dp.t.then_index(names, "0")
    fixed = space >> dp.t.then_find_bin(edges=edges[1:-1]) >> dp.t.then_index(names, "0")
    assert verbatim(x) == ["1", "6", "0", "0"]
    assert fixed(x) == ["0", "5", "9", "9"]


def test_verdict_is_a_paired_bootstrap():
    rng = np.random.default_rng(0)
    base = rng.exponential(size=200)
    assert bench._verdict(base, base + 0.5) == "better"
    assert bench._verdict(base + 0.5, base) == "worse"
    assert bench._verdict(base, base + rng.normal(0, 1e-3, 200)) == "parity"


def test_opendp_exponential_peer_has_our_exponent():
    """OpenDP's quantile privacy map is ``2 max(a, 1-a) / scale``: at pure eps 1/3 its
    exponent is dpacct's ``eps u / (2 max(q, 1-q))`` (the rows compare selection rules at
    equal privacy), and the peer the rows build is at 1/3."""
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    cands = np.linspace(0.0, 100.0, 21).tolist()
    for a, meas in zip(bench.QUARTILES, bench.opendp_exponential_quartiles(dp, 20),
                       strict=True):
        assert meas.map(1) == pytest.approx(1 / 3, rel=1e-6) and meas.map(1) <= 1 / 3
        scale = 2 * max(a, 1 - a) / (1 / 3)
        direct = dp.m.make_private_quantile(domain, dp.symmetric_distance(),
                                            dp.max_divergence(), cands, float(a), scale)
        assert direct.map(1) == pytest.approx(1 / 3, rel=1e-12)
    assert bench._dpacct_exponential(20).epsilon0 == pytest.approx(1 / 3)
