"""The one-shot sweep's table (issue 37) counts the answers above the old checkout's, and
its shapes are seeded.  No timing is asserted and no subprocess is started."""

from __future__ import annotations

from benchmarks import oneshot_sweep


def test_shapes_are_seeded_and_of_both_kinds():
    a, b = oneshot_sweep.shapes(4, seed=1), oneshot_sweep.shapes(4, seed=1)
    assert a == b and a != oneshot_sweep.shapes(4, seed=2)
    assert [name[0] for name, _ in a] == ["p", "p", "p", "d"]
    assert all(c == 1 for _, _, c in a[3][1])  # decaying single steps


def test_table_counts_the_answers_above_old():
    results = {
        "p0": {
            "old": {"status": "ok", "epsilon": [1.0, 2.0], "cpu": 1.0},
            "new": {"status": "ok", "epsilon": [1.0 + 1e-6, 2.0 - 1e-6], "cpu": 0.5},
        },
        "p1": {
            "old": {"status": "ok", "epsilon": [3.0, 4.0], "cpu": 1.0},
            "new": {"status": "over 1 s"},
        },
    }
    table = oneshot_sweep.format_table(results, [1e-5, 1e-6])
    assert table.splitlines()[-1] == "new above old: 1 of 2 answers (worst +1.00e-06 relative)"
    assert "| p0 | 1e-05 | 1.0 | 1.000001 | +1.00e-06 | 1.00 | 0.50 |" in table
    assert "over 1 s" in table
