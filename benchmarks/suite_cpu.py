"""CPU seconds per test of the suite: a pytest plugin that records them, and a report.

Wall durations lie on a shared machine (a test's wall time grows with the load); its CPU
time does not.  The plugin records, for every test, the process's CPU time
(:func:`time.process_time`) and that of its waited-for children
(``resource.getrusage(RUSAGE_CHILDREN)``: notebook kernels, CLI subprocesses) over the
test's whole protocol (setup, call, teardown), plus the wall seconds and the start and
end times (the xdist schedule), as one JSON line per test in a file per worker.  Each
worker also writes its collection's CPU.

Off by default.  On with an environment variable (``tests/conftest.py`` registers the
plugin when it is set)::

    DPACCT_TEST_CPU_DIR=/tmp/cpu_new python -m pytest -q -n 2

or, for a checkout whose conftest does not know the variable (an old commit), as a plugin
on ``PYTHONPATH``::

    DPACCT_TEST_CPU_DIR=/tmp/cpu_old PYTHONPATH=DIR_WITH_A_COPY python -m pytest -q -n 2 \\
        -p suite_cpu

The report (top tests, per module, growths between two runs)::

    python -m benchmarks.suite_cpu /tmp/cpu_new [--old /tmp/cpu_old] [--top 60]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from collections import defaultdict
from pathlib import Path

import pytest

#: the environment variable naming the directory the per-worker JSON files go to
ENV = "DPACCT_TEST_CPU_DIR"


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _out_file(config) -> Path:
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    folder = Path(os.environ[ENV])
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{worker}.jsonl"


def _write(config, record: dict) -> None:
    with _out_file(config).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")


def pytest_sessionstart(session):
    session.config._suite_cpu_t0 = (time.process_time(), _children_cpu())


def pytest_collection_finish(session):
    own0, child0 = session.config._suite_cpu_t0
    _write(session.config, {
        "collection": True,
        "cpu": time.process_time() - own0,
        "children": _children_cpu() - child0,
        "items": len(session.items),
    })


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    own0, child0, wall0 = time.process_time(), _children_cpu(), time.time()
    yield
    own1, child1, wall1 = time.process_time(), _children_cpu(), time.time()
    _write(item.config, {
        "id": item.nodeid,
        "cpu": own1 - own0,
        "children": child1 - child0,
        "wall": wall1 - wall0,
        "start": wall0,
        "end": wall1,
        "worker": getattr(item.config, "workerinput", {}).get("workerid", "main"),
    })


# ----------------------------------------------------------------------------------
# the report
# ----------------------------------------------------------------------------------


def load(folder: str | os.PathLike) -> tuple[dict[str, dict], dict[str, float]]:
    """``({node id: record}, {worker: collection CPU s})`` of a run's JSON files; a test's
    ``total`` is its own CPU plus its children's."""
    tests: dict[str, dict] = {}
    collection: dict[str, float] = {}
    for path in sorted(Path(folder).glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if rec.get("collection"):
                collection[path.stem] = rec["cpu"] + rec["children"]
                continue
            rec["total"] = rec["cpu"] + rec["children"]
            tests[rec["id"]] = rec
    return tests, collection


def module_of(node_id: str) -> str:
    """``tests/test_x.py::test_y[1]`` -> ``tests/test_x.py``."""
    return node_id.split("::", 1)[0]


def by_module(tests: dict[str, dict]) -> dict[str, float]:
    """CPU seconds per test module (children included)."""
    out: dict[str, float] = defaultdict(float)
    for node_id, rec in tests.items():
        out[module_of(node_id)] += rec["total"]
    return dict(out)


def _summary(name: str, tests: dict[str, dict], collection: dict[str, float]) -> None:
    total = sum(r["total"] for r in tests.values())
    children = sum(r["children"] for r in tests.values())
    if tests:
        wall = max(r["end"] for r in tests.values()) - min(r["start"] for r in tests.values())
    else:
        wall = 0.0
    print(f"{name}: {len(tests)} tests, {total:.1f} CPU s (children {children:.1f}), "
          f"collection {sum(collection.values()):.1f} CPU s over {len(collection)} workers, "
          f"first start to last end {wall:.0f} s wall")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("new", help="the run's directory of JSON files")
    parser.add_argument("--old", help="another run's directory, to compare against")
    parser.add_argument("--top", type=int, default=60, help="how many tests to list")
    args = parser.parse_args(argv)
    new, new_coll = load(args.new)
    _summary("new", new, new_coll)
    print(f"\ntop {args.top} tests by CPU s (own + children):")
    for node_id, rec in sorted(new.items(), key=lambda kv: -kv[1]["total"])[: args.top]:
        print(f"{rec['total']:8.2f} {rec['children']:7.2f}  {node_id}")
    mods = by_module(new)
    if args.old:
        old, old_coll = load(args.old)
        _summary("old", old, old_coll)
        old_mods = by_module(old)
        print("\nmodules, CPU s old -> new (largest change first):")
        names = set(mods) | set(old_mods)
        for m in sorted(names, key=lambda m: -abs(mods.get(m, 0) - old_mods.get(m, 0)))[:60]:
            a, b = old_mods.get(m, 0.0), mods.get(m, 0.0)
            print(f"{a:8.2f} {b:8.2f} {b - a:+8.2f}  {m}")
        both = sorted(set(new) & set(old))
        print(f"\ntests in both runs ({len(both)}), largest growth old -> new (top {args.top}):")
        growth = {k: new[k]["total"] - old[k]["total"] for k in both}
        for node_id in sorted(growth, key=lambda k: -growth[k])[: args.top]:
            a, b = old[node_id]["total"], new[node_id]["total"]
            print(f"{a:8.2f} {b:8.2f} {growth[node_id]:+8.2f}  {node_id}")
        added = sorted(set(new) - set(old), key=lambda k: -new[k]["total"])
        print(f"\ntests of the new run only ({len(added)}), by CPU s:")
        for node_id in added[: args.top]:
            print(f"{new[node_id]['total']:8.2f}  {node_id}")
    else:
        print("\nmodules by CPU s:")
        for m, s in sorted(mods.items(), key=lambda kv: -kv[1])[:60]:
            print(f"{s:8.2f}  {m}")


if __name__ == "__main__":
    main()
