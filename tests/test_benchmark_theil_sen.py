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
