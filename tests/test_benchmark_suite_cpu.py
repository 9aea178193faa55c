"""benchmarks/suite_cpu.py (per-test CPU seconds) and tests/durations.py reading its files."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

from durations import cpu_seconds

from benchmarks import suite_cpu


def _burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_the_hook_records_a_tests_cpu_and_the_report_reads_it(tmp_path, monkeypatch):
    monkeypatch.setenv(suite_cpu.ENV, str(tmp_path))
    config = SimpleNamespace(workerinput={"workerid": "gw7"})
    item = SimpleNamespace(nodeid="tests/test_x.py::test_y[1]", config=config)
    hook = suite_cpu.pytest_runtest_protocol(item, None)  # the wrapper, as pluggy runs it
    next(hook)
    _burn(0.05)
    for _ in hook:  # the wrapper's end: it writes the record
        pass
    session = SimpleNamespace(config=config, items=[item])
    suite_cpu.pytest_sessionstart(session)
    suite_cpu.pytest_collection_finish(session)
    tests, collection = suite_cpu.load(tmp_path)
    rec = tests["tests/test_x.py::test_y[1]"]
    # the CPU burnt inside the test is counted (not a wall time: at least what was burnt)
    assert rec["cpu"] >= 0.05 and rec["worker"] == "gw7"
    assert rec["total"] == rec["cpu"] + rec["children"]
    assert set(collection) == {"gw7"}
    assert suite_cpu.by_module(tests) == {"tests/test_x.py": rec["total"]}
    # tests/durations.py reads the same directory as {node id: CPU s}
    assert cpu_seconds(tmp_path) == {"tests/test_x.py::test_y[1]": rec["total"]}


def test_report_lists_growth_between_two_runs(tmp_path, capsys):
    for name, secs in (("old", {"a.py::t": 1.0, "a.py::u": 2.0}),
                       ("new", {"a.py::t": 3.0, "b.py::v": 0.5})):
        (tmp_path / name).mkdir()
        lines = [json.dumps({"id": k, "cpu": v, "children": 0.0, "wall": v, "start": 0.0,
                             "end": v, "worker": "gw0"}) for k, v in secs.items()]
        (tmp_path / name / "gw0.jsonl").write_text("\n".join(lines) + "\n")
    suite_cpu.main([str(tmp_path / "new"), "--old", str(tmp_path / "old"), "--top", "5"])
    out = capsys.readouterr().out
    assert "    1.00     3.00    +2.00  a.py::t" in out  # the one test in both runs
    assert "    3.00     3.00    +0.00  a.py" in out  # module a: 1 + 2 -> 3
    assert "    0.50  b.py::v" in out  # the new run's own test
