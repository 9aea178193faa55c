"""benchmarks/everyday.py: its rows measure the checkout they are pointed at, and print the
answers as fields that benchmarks/alternate.py compares."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from benchmarks.alternate import split
from benchmarks.checkouts import checkout_env
from benchmarks.everyday import _flat, measure

ROOT = Path(__file__).resolve().parents[1]
WHERE = ("import dpacct.accountant.pld.twoscale as t", "return 0.0, t.__file__")


def test_an_old_checkout_folder_is_measured_from_its_own_files():
    """``--old FOLDER`` imports that checkout (here a copy of this one's layout made of
    links, so that its files have another path)."""
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("dpacct", "accountant", "mechanisms", "calibrators"):
            os.symlink(ROOT / name, Path(tmp) / name)
        got = measure(tmp, *WHERE)
    assert got["note"].startswith(str(Path(tmp) / "accountant"))


def test_the_import_hook_of_alternate_reaches_the_rows(monkeypatch):
    """Under benchmarks.alternate the inherited PYTHONPATH holds the hook that maps dpacct
    to the checkout measured; the rows' subprocesses keep it (they dropped it, and both
    sides measured the installed dpacct)."""
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("dpacct", "accountant", "mechanisms", "calibrators"):
            os.symlink(ROOT / name, Path(tmp) / name)
        env = checkout_env(tmp)
        monkeypatch.setenv("PYTHONPATH", env["PYTHONPATH"])
        got = measure(sys.executable, *WHERE)
    assert got["note"].startswith(str(Path(tmp) / "accountant"))


def test_rows_print_fields_alternate_compares():
    new = {"answer": 5.19, "note": "lower 5.18", "cpu": 0.03, "wall": 0.04, "peak_mb": 3.0}
    bounds = _flat("dpsgd bounds T 1e4", new)
    assert (bounds["upper"], bounds["lower"], bounds["seconds"]) == (5.19, 5.18, 0.03)
    assert _flat("calibrate eps 3", new)["sigma"] == 5.19
    answers, timings = split([{"workload": "w", **_flat("dpsgd epsilon T 1e4", new)}])
    assert answers == {(("workload", "w"),): {"epsilon": 5.19}}
    assert set(timings[(("workload", "w"),)]) == {"seconds", "wall_s", "peak_mb"}


def test_split_times_the_same_call_warm_and_uncertified():
    """``--split``: the warm side asks the question once before the timed call, in the same
    process; the lines report each side's CPU against the cold one's, per round."""
    from benchmarks.everyday import _script, split_lines

    cold, warm = _script("", "return 1.0, None"), _script("", "return 1.0, None", warm=True)
    assert "run()  # warm" in warm and "run()  # warm" not in cold
    assert warm.index("run()  # warm") < warm.index("c0, w0 = time.process_time()")
    row = {"workload": "w", "new": {"answer": 5.0, "cpu": 0.03, "cpu_all": [0.03, 0.04]},
           "warm": {"answer": 5.0, "cpu": 0.02, "cpu_all": [0.02, 0.02]},
           "uncertified": {"answer": 4.9, "cpu": 0.025, "cpu_all": [0.025, 0.04]}}
    (line,) = split_lines([row])
    assert "cold / warm per round 1.75x" in line and "answer 4.9" in line
    assert "cold / uncertified per round 1.10x" in line
