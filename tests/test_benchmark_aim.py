"""The AIM topic of ``python -m benchmarks.algorithms`` (benchmarks/algos/aim.py)."""

from __future__ import annotations

import json

import pytest

aim = pytest.importorskip("benchmarks.algos.aim")
from benchmarks.algos._common import ROW_KEYS  # noqa: E402


def test_rows_read_the_cached_peer_and_give_reasons():
    rows = aim.rows(seeds=2, quick=True)
    assert len(rows) == 4
    cache = json.loads(aim.CACHE.read_text())
    for r in rows:
        assert set(ROW_KEYS) <= set(r) and r["seeds"] == 3
        assert r["verdict"] in ("better", "parity", "worse")
        assert r["verdict"] != "worse" or r["why"].strip()
        assert "cached" in r["peer"]
    errors = [r for r in rows if "TVD" in r["metric"]]
    assert all(0 < r["dpacct"] < 0.05 for r in errors)
    # the peer's column is the cache's median (five seeds a row)
    for r, eps in zip(errors, aim.EPSILONS, strict=True):
        peer = sorted(x["error"] for x in cache["runs"][str(eps)])
        assert r["peer_value"] == pytest.approx(peer[len(peer) // 2], rel=1e-12)


def test_the_peer_cache_records_its_commands():
    cache = json.loads(aim.CACHE.read_text())
    assert cache["mbi"] == "2.0.0" and cache["commands"]
    assert all(len(cache["runs"][str(e)]) >= 3 for e in aim.EPSILONS)
