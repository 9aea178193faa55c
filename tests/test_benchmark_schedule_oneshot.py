"""The one-shot schedule benchmark's table (issue 37) is well formed: each path's CPU over
its side's ledger, the gap to dp_accounting's cached answer, the bracket's width.  No
timing is asserted; the rows are the ledger benchmark's."""

from __future__ import annotations

from benchmarks import ledger_phases, schedule_oneshot


def test_rows_are_the_ledger_benchmarks_and_the_table_reads_the_records():
    assert all(ledger_phases.ROWS[n] == spec for n, spec in schedule_oneshot.ROWS.items())

    def rec(eps, lo, cpu):
        return {"status": "ok", "epsilon": eps, "lower": lo, "cpu": cpu, "bounds_cpu": 1.0,
                "peak_mb": 100.0}

    results = {
        "100 phases x 10": {
            "new ledger": [rec(2.0, 1.9, 0.2), rec(2.0, 1.9, 0.4), rec(2.0, 1.9, 0.3)],
            "new oneshot": [rec(2.0, 1.9, 0.6)],
            "new oneshot-fine": [{"status": "over 1 s"}],
        }
    }
    table = schedule_oneshot.format_table(results, {"100 phases x 10": {"epsilon": 1.6}})
    lines = table.splitlines()
    assert lines[2].startswith("| 100 phases x 10 | dp_accounting 1e-4 | 1.6 |")
    ledger, oneshot, fine = lines[3:]
    # the ledger's median CPU 0.3: the one-shot's 0.6 is 2.00 of it; gap (2 - 1.6) / 1.6
    assert "| 1.00 |" in ledger and "| 0.2-0.4 |" in ledger and "+2.50e-01" in ledger
    assert "| 2.00 |" in oneshot and "| 5.00e-02 |" in oneshot
    assert "over 1 s" in fine
