"""conftest.py's layout of the collection for pytest-xdist's ``worksteal``: the long
tests head the workers' blocks, and a group of tests that build one per-process value
(``TOGETHER``) is dealt to one block, one after the other."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("_dpacct_root_conftest", ROOT / "conftest.py")
root_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(root_conftest)


def _items(n):
    return [SimpleNamespace(nodeid=f"t{i}") for i in range(n)]


def _blocks(out, workers):
    size = len(out) // workers
    return [[it.nodeid for it in out[i * size:(i + 1) * size]] for i in range(workers)]


def test_long_tests_head_the_blocks_and_every_test_is_kept():
    items = _items(20)
    out = root_conftest._layout(items, 2, {"t3": 5.0, "t15": 4.0, "t7": 1.0})
    assert sorted(it.nodeid for it in out) == sorted(it.nodeid for it in items)
    a, b = _blocks(out, 2)
    assert {a[0], b[0]} == {"t3", "t15"}  # the two longest, one per block
    assert "t7" in (a[1], b[1])


def test_a_group_goes_to_one_block_one_after_the_other():
    items = _items(20)
    seconds = {"t3": 5.0, "t15": 4.0, "t7": 1.0}
    out = root_conftest._layout(items, 2, seconds, (("t3", "t15"), ("t9", "missing")))
    assert sorted(it.nodeid for it in out) == sorted(it.nodeid for it in items)
    blocks = _blocks(out, 2)
    with_group = next(b for b in blocks if "t3" in b)
    assert with_group[:2] == ["t3", "t15"]
    # a group with one collected test is an ordinary test
    assert "t9" not in (blocks[0][:2] + blocks[1][:2])


def test_the_groups_name_collected_tests():
    for group in root_conftest.TOGETHER:
        for nodeid in group:
            path, name = nodeid.split("::")
            # a parametrised case names its function before the brackets
            name = name.split("[")[0]
            assert f"def {name}(" in (ROOT / path).read_text(encoding="utf-8"), nodeid
