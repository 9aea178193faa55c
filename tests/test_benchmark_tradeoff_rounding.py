"""``benchmarks.tradeoff_rounding``: this checkout's closed-form trade-off curves are
never above their 50-digit values on the benchmark's rows, and the old-checkout import
(``benchmarks._old_checkout``) really reads the named directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import tradeoff_rounding

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_no_row_is_above_the_truth_and_the_gdp_estimates_are_exact():
    lines, gdp = tradeoff_rounding.compare([("this", None)])
    assert len(lines) == len(tradeoff_rounding.ROWS)
    for r in lines:
        assert r["above"] == 0, r
        assert r["max_gap"] < 1e-10, r  # rounded down by its error bound, no more
    assert gdp["this"] == pytest.approx([1.25, 0.5, 0.2], rel=1e-8)


def test_the_old_checkout_import_reads_the_named_root(tmp_path):
    # this checkout's four package directories, linked under another root
    root = tmp_path / "old"
    root.mkdir()
    for layer in ("dpacct", "accountant", "mechanisms", "calibrators"):
        os.symlink(ROOT / layer, root / layer)
    code = ("from benchmarks import _old_checkout\n"
            "import dpacct.accountant.curve_down as cd, dpacct\n"
            "print(dpacct.__file__); print(cd.__file__)")
    env = dict(os.environ, PYTHONPATH=str(ROOT), DPACCT_ROOT=str(root))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.split()
    assert out[0].startswith(str(root)) and out[1].startswith(str(root)), out
