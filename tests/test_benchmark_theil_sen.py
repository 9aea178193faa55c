"""The Theil-Sen benchmark topic runs and returns well-formed rows (quick path)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.algos import theil_sen

KEYS = ("workflow", "metric", "dpacct", "dpacct_spread", "peer", "peer_value",
        "peer_spread", "seeds", "verdict", "why")


def test_quick_rows_are_well_formed():
    rows = theil_sen.rows(seeds=3, quick=True)
    assert rows
    for r in rows:
        assert set(KEYS) <= set(r)
        assert r["seeds"] == 3 and np.isfinite(r["dpacct"])
        assert r["verdict"] in ("better", "parity", "worse", "n/a")
        if r["verdict"] == "worse":
            assert r["why"].strip()


def test_opendp_pipelines_are_accounted_as_stated():
    pytest.importorskip("opendp")
    written, corrected = theil_sen.opendp_measurements(1.0)   # raises if a map disagrees
    rng = np.random.default_rng(0)
    x = rng.normal(size=100)
    data = np.column_stack([x, 2 * x + 1])
    for fit in (written, corrected):
        slope, intercept = fit(data, rng)
        assert np.isfinite(slope) and np.isfinite(intercept)


def test_slack_rows_cover_exact_loose_and_unknown_n():
    rows = theil_sen.slack_rows(seeds=3, quick=True)
    labels = {r["workflow"].split(": ", 1)[1] for r in rows}
    assert labels == {label for label, _, _ in theil_sen.SLACK}
    assert any("N = 2 n" in lab for lab in labels) and any("unknown" in lab for lab in labels)
    for r in rows:
        assert set(KEYS) <= set(r) and r["seeds"] == 3 and np.isfinite(r["dpacct"])
        if r["verdict"] == "worse":
            assert r["why"].strip()


def test_slack_table_lists_every_configuration_and_the_peer():
    table = theil_sen.slack_table(n=40, eps=1.0, median="grid", seeds=3)
    lines = table.splitlines()
    assert len(lines) == 2 + len(theil_sen.SLACK) + (
        2 if theil_sen._opendp_version() is not None else 0)
    assert "| 7.5 |" in table and "| 5 |" in table and "| 10 |" in table


def test_fair_rows_are_well_formed_and_told_to_the_worse_rows():
    rows = theil_sen.rows(seeds=3, quick=True)
    fair = [r for r in rows if "FAIR" in r["workflow"]]
    assert len(fair) == 2 * len(theil_sen.SLACK)
    assert not any(k.startswith("_") for r in rows for k in r)
    for r in fair:
        assert set(KEYS) <= set(r) and np.isfinite(r["dpacct"]) and "mean" in r["dpacct_spread"]
        if r["verdict"] != "n/a":
            assert "win rate" in r["why"] and "p90" in r["peer_spread"]


def test_fair_setup_draws_per_seed_and_reaches_the_peers_grid():
    from benchmarks.algos import _theil_sen_fair as fair

    draws = [fair.seed_setup(s, 100, "fair") for s in range(20)]
    assert draws == [fair.seed_setup(s, 100, "fair") for s in range(20)]   # per-seed, fixed
    offsets, slopes, intercepts = np.array(draws).T
    assert ((0 <= offsets) & (offsets < fair.STEP)).all() and np.ptp(offsets) > fair.STEP / 2
    assert np.ptp(slopes) > 1 and np.ptp(intercepts) > 1
    assert all(fair.seed_setup(s, 100, "shifted grid")[1:] == (2.0, 1.0) for s in range(5))
    # the win rate and the pre-declared verdict rule
    w, lo, hi = fair.win_rate(np.r_[np.zeros(30), np.ones(10)], np.full(40, 0.5))
    assert w == 0.75 and 0.6 < lo < 0.75 < hi < 0.9 and fair.fair_verdict(lo, hi) == "better"
    assert fair.fair_verdict(0.3, 0.45) == "worse" and fair.fair_verdict(0.45, 0.6) == "parity"
    pytest.importorskip("opendp")
    # the peer's candidates move with the offset: its medians land on the shifted grid,
    # while its slope stays a multiple of h / 3 whatever the offset (why the truth is random)
    offset = 0.37 * fair.STEP
    bounds = (-10.0 + offset, 10.0 + offset)
    _, corrected = theil_sen.opendp_measurements(1.0, y_bounds=bounds)
    rng = np.random.default_rng(5)
    x = rng.normal(size=200)
    slope, intercept = corrected(np.column_stack([x, 2 * x + 1]), rng)
    cuts = np.array([-1.5, 1.5])
    steps = (slope * cuts + intercept - bounds[0]) / fair.STEP
    np.testing.assert_allclose(steps, np.round(steps), atol=1e-6)
    np.testing.assert_allclose(slope / (fair.STEP / 3), round(slope / (fair.STEP / 3)),
                               atol=1e-6)
