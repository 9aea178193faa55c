"""The ledger benchmark's counted work (``--count``, issue 37): the group products'
transformed rows and points, numbers that do not move with the machine's load.  No
timing is asserted."""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks import ledger_phases

ROOT = str(Path(__file__).resolve().parents[1])  # this checkout


def test_counted_rows_are_the_blocks_cells_by_the_cut_rule():
    # 30 random phases x 10 steps (the rows' shape, seed 0), cut into blocks of 256 steps
    # (block_rules.BLOCK_STEPS; the phases all distinct and exact): a block holds every
    # phase that has a step in it, so its rows are the phases its steps touch: 26 + 5
    # (the pending block: steps 256-299), one product a block
    rows = 0
    for start in range(0, 300, 256):
        stop = min(start + 256, 300)
        rows += (stop - 1) // 10 - start // 10 + 1
    rec = ledger_phases._run(ROOT, sys.executable, ("phases", 2.0, 30), 300.0, count=True)
    assert rec["status"] == "ok"
    assert rec["products"] == 2 and rec["rows"] == rows == 31
    # each row is transformed at its block's window: at least the widest cell (a few loss
    # units on the h / 8 grid), at most FAST_MAX_N
    assert 4096 * rows < rec["points"] < (1 << 20) * rows


def test_the_table_prints_each_sides_counts():
    def rec(points):
        return {
            "status": "ok",
            "epsilon": 2.0,
            "cpu": 0.3,
            "peak_mb": 100.0,
            "products": 4,
            "rows": 103,
            "points": points,
        }

    results = {"100 phases x 10": {"old": [rec(6_356_992)], "new": [rec(5_000_000)]}}
    table = ledger_phases.format_table(results)
    head, _, line = table.splitlines()
    assert "old points" in head and "new rows" in head
    assert line.endswith("| 4 | 103 | 6,356,992 | 4 | 103 | 5,000,000 |")
