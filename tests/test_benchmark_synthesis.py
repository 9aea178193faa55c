"""The synthesis topic of ``python -m benchmarks.algorithms`` (benchmarks/algos/synthesis.py)."""

from __future__ import annotations

import importlib.util

import pytest

synthesis = pytest.importorskip("benchmarks.algos.synthesis")

KEYS = (
    "workflow",
    "metric",
    "dpacct",
    "dpacct_spread",
    "peer",
    "peer_value",
    "peer_spread",
    "seeds",
    "verdict",
    "why",
)


def check(rows, seeds):
    assert len(rows) == 9
    for r in rows:
        assert tuple(r) == KEYS
        assert r["verdict"] in ("better", "parity", "worse", "n/a")
        assert r["seeds"] == seeds and 0 < r["dpacct"] < 0.1
        assert r["verdict"] != "worse" or r["why"].strip()


def test_rows_without_the_peer_say_so(monkeypatch):
    monkeypatch.setattr(synthesis, "_mbi", lambda: None)
    rows = synthesis.rows(seeds=3, quick=True)
    check(rows, 3)
    assert all("not installed" in r["peer"] and r["verdict"] == "n/a" for r in rows)
    by_metric = {(r["workflow"], r["metric"]): r["dpacct"] for r in rows}
    # rounding is the default because it beats i.i.d. draws on the sampled table
    for eps in ("1", "3"):
        wf = f"marginal synthesis, same 21 noisy 2-way marginals, eps {eps}"
        assert (
            by_metric[wf, "2-way TVD of the sampled table (rounding)"]
            < by_metric[wf, "2-way TVD of the sampled table (dpacct i.i.d., former default)"]
        )


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("mbi") is None, reason="mbi not installed")
def test_rows_with_private_pgm():
    rows = synthesis.rows(seeds=3, quick=True)
    check(rows, 3)
    assert all(r["peer"].startswith(("Private-PGM (mbi", "MST on Private-PGM")) for r in rows)
    assert all(r["peer_value"] is not None and 0 < r["peer_value"] < 0.1 for r in rows)
