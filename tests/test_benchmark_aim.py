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
    # the peer's column is the cache's median (an even count averages the middle two)
    for r, eps in zip(errors, aim.EPSILONS, strict=True):
        peer = sorted(x["error"] for x in cache["runs"][str(eps)])
        mid = (peer[(len(peer) - 1) // 2] + peer[len(peer) // 2]) / 2
        assert r["peer_value"] == pytest.approx(mid, rel=1e-12)


def test_the_peer_cache_records_its_commands():
    cache = json.loads(aim.CACHE.read_text())
    assert cache["mbi"] == "2.0.0" and cache["commands"]
    assert all(len(cache["runs"][str(e)]) >= 3 for e in aim.EPSILONS)


def test_peer_runs_merge_into_the_cache_seed_by_seed(tmp_path, monkeypatch):
    """``--peer`` keeps the cached seeds, runs only the missing ones (the epsilons taking
    turns), and rewrites the file after every run: a run stopped part-way keeps what it
    finished; a cache made with another mbi version is refused, not overwritten."""
    calls = []

    def fake_peer(eps, seed, codes, names, sizes, info=None):
        calls.append((eps, seed))
        if len(calls) == 3:
            raise KeyboardInterrupt                      # stopped during the third run
        return 0.01 * eps, 1.0

    monkeypatch.setattr(aim, "peer", fake_peer)
    monkeypatch.setattr(aim, "_mbi", lambda: (None, None, "2.0.0"))
    path = tmp_path / "cache.json"
    path.write_text(json.dumps({"commands": ["first"], "mbi": "2.0.0", "rows": aim.N_ROWS,
                                "delta": aim.DELTA, "runs": {"1.0": [
                                    {"seed": 5, "error": 0.5, "cpu_seconds": 9.0}]}}))
    with pytest.raises(KeyboardInterrupt):
        aim._peer_runs(path, (1.0, 3.0), 5, 3, "second", None, None, None)
    assert calls == [(3.0, 5), (1.0, 6), (3.0, 6)]
    kept = json.loads(path.read_text())
    assert kept["commands"] == ["first", "second"]
    assert [r["seed"] for r in kept["runs"]["1.0"]] == [5, 6]
    assert kept["runs"]["1.0"][0]["error"] == 0.5                 # the cached seed kept
    assert [r["seed"] for r in kept["runs"]["3.0"]] == [5]
    assert not [p for p in tmp_path.iterdir() if p.name != "cache.json"]   # no temp left
    monkeypatch.setattr(aim, "_mbi", lambda: (None, None, "2.1.0"))
    with pytest.raises(SystemExit, match=r"mbi 2\.0\.0"):
        aim._peer_runs(path, (1.0,), 5, 1, "third", None, None, None)
