"""Refresh ``tests/durations.json``: the suite's long tests and their recorded seconds.

The root ``conftest.py`` deals the tests recorded here to the xdist workers first,
longest first (see its section "pytest-xdist"), so that no long test is left to run
alone at the end of ``python -m pytest -n auto``.  After a run with
``--junitxml=FILE``::

    python tests/durations.py FILE [--min SECONDS]

writes every test that took at least ``--min`` seconds (default 1.5).  Only the order
and the rough proportions matter: a missing or stale entry changes the order of the
run, never its outcome.

In place of the XML file, the directory of a run with per-test CPU recorded
(``DPACCT_TEST_CPU_DIR=DIR``, ``benchmarks/suite_cpu.py``) gives each test's CPU seconds
(its own and its child processes'), which a loaded machine inflates far less than
wall seconds (session 33, load average 20: notebook 05 took 31 CPU s and 186 s wall;
idle, 20.5 s wall).

A partial run (a few modules, or a full run stopped early) updates the file instead
with ``--merge``: the tests it timed replace their entries (or are added), every other
entry is kept, and the new times are put on the file's scale first (multiplied by the
median ratio recorded / measured over the tests both hold, so a run on a more or less
loaded machine does not reorder the rest).
"""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "durations.json"


def node_id(case: ET.Element) -> str:
    """A junit ``testcase`` -> its pytest node id (``tests/test_x.py::test_y[p]``)."""
    file, cls, name = case.get("file"), case.get("classname", ""), case.get("name", "")
    parts = cls.split(".")
    if file is None:  # junit_family xunit2 has no file attribute: rebuild it
        # "tests.test_x" or "tests.test_x.TestClass"
        k = next((i for i, p in enumerate(parts) if p.startswith("test_")), len(parts) - 1)
        file = "/".join(parts[: k + 1]) + ".py"
        parts = parts[k + 1 :]
    else:
        stem = Path(file).with_suffix("").parts
        parts = parts[len(stem) :]
    return "::".join([file, *parts, name])


def junit_seconds(path: Path) -> dict[str, float]:
    """``{node id: seconds}`` of the tests a junit XML file records as run."""
    timed: dict[str, float] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.find("skipped") is None:
            timed[node_id(case)] = float(case.get("time", 0.0))
    return timed


def cpu_seconds(folder: Path) -> dict[str, float]:
    """``{node id: CPU seconds}`` (own + children) of a ``benchmarks/suite_cpu.py`` run."""
    timed: dict[str, float] = {}
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if not rec.get("collection"):
                timed[rec["id"]] = rec["cpu"] + rec["children"]
    return timed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit", type=Path, help="a junit XML file, or a suite_cpu directory")
    parser.add_argument("--min", type=float, default=1.5, help="seconds (default 1.5)")
    parser.add_argument(
        "--merge", action="store_true", help="update the file from a partial run (see above)"
    )
    args = parser.parse_args(argv)
    timed = cpu_seconds(args.junit) if args.junit.is_dir() else junit_seconds(args.junit)
    scale, seconds = 1.0, {}
    if args.merge and OUT.is_file():
        seconds = {k: float(v) for k, v in json.loads(OUT.read_text()).items()}
        ratios = sorted(seconds[k] / t for k, t in timed.items() if k in seconds and t > 0)
        if ratios:
            scale = ratios[len(ratios) // 2]
        for k in timed:
            seconds.pop(k, None)
    for k, t in timed.items():
        if t * scale >= args.min:
            seconds[k] = round(t * scale, 1)
    ordered = dict(sorted(seconds.items(), key=lambda kv: (-kv[1], kv[0])))
    OUT.write_text(json.dumps(ordered, indent=0) + "\n", encoding="utf-8")
    note = f" (merged; the run's times x {scale:.3g})" if args.merge else ""
    print(f"{len(ordered)} tests, {sum(ordered.values()):.0f} s -> {OUT}{note}")


if __name__ == "__main__":
    main()
