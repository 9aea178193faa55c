"""Refresh ``tests/durations.json``: the suite's long tests and their recorded seconds.

The root ``conftest.py`` deals the tests recorded here to the xdist workers first,
longest first (see its section "pytest-xdist"), so that no long test is left to run
alone at the end of ``python -m pytest -n auto``.  After a run with
``--junitxml=FILE``::

    python tests/durations.py FILE [--min SECONDS]

writes every test that took at least ``--min`` seconds (default 1.5).  Only the order
and the rough proportions matter: a missing or stale entry changes the order of the
run, never its outcome.
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit", type=Path)
    parser.add_argument("--min", type=float, default=1.5, help="seconds (default 1.5)")
    args = parser.parse_args(argv)
    seconds: dict[str, float] = {}
    for case in ET.parse(args.junit).getroot().iter("testcase"):
        t = float(case.get("time", 0.0))
        if t >= args.min and case.find("skipped") is None:
            seconds[node_id(case)] = round(t, 1)
    ordered = dict(sorted(seconds.items(), key=lambda kv: (-kv[1], kv[0])))
    OUT.write_text(json.dumps(ordered, indent=0) + "\n", encoding="utf-8")
    print(f"{len(ordered)} tests, {sum(ordered.values()):.0f} s -> {OUT}")


if __name__ == "__main__":
    main()
