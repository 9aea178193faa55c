"""benchmarks/alternate.py's comparison of old and new answers, and benchmarks/checkouts.py's
import hook (the tools the lead compares old and new main with at merge time)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmarks.alternate import compare, split
from benchmarks.checkouts import checkout_env

ROOT = Path(__file__).resolve().parents[1]


def _answers(**rows: dict) -> dict:
    records = [{"runner": "r", "workload": w, **fields} for w, fields in rows.items()]
    return split(records)[0]


def _flags(old: dict, new: dict) -> dict[tuple[str, str], str]:
    lines, _ = compare([old], [new], decimals=6)
    return {(row, field): flag for row, field, _, _, flag in lines}


def test_equal_to_the_printed_digit_is_not_flagged_and_timings_are_not_answers():
    old = _answers(w={"epsilon": 1.2345671, "seconds": 0.5, "peak_mb": 80.0})
    new = _answers(w={"epsilon": 1.2345674, "seconds": 0.1, "peak_mb": 60.0})
    assert _flags(old, new) == {("r @ w", "epsilon"): ""}


def test_an_upper_bound_that_rises_is_looser_and_one_that_falls_only_changed():
    old = _answers(a={"epsilon": 1.0}, b={"epsilon": 1.0}, c={"lower": 0.9})
    new = _answers(a={"epsilon": 1.00001}, b={"epsilon": 0.99999}, c={"lower": 0.89999})
    flags = _flags(old, new)
    assert flags[("r @ a", "epsilon")] == "LOOSER"
    assert flags[("r @ b", "epsilon")] == "changed"
    assert flags[("r @ c", "lower")] == "LOOSER"
    assert compare([old], [new], decimals=6)[1] == 2


def test_a_bracket_must_lie_inside_the_old_one():
    old = _answers(w={"lower": 1.0, "upper": 2.0})
    inside = _answers(w={"lower": 1.1, "upper": 1.9})
    shifted = _answers(w={"lower": 0.5, "upper": 1.5})  # tighter top, but not inside
    assert compare([old], [inside], decimals=6)[1] == 0
    flags = _flags(old, shifted)
    assert flags[("r @ w", "bracket")] == "WIDER"


def test_rows_one_side_lacks_and_unsteady_answers_are_flagged():
    old = _answers(w={"epsilon": 1.0})
    new = _answers(w={"epsilon": 1.0}, x={"epsilon": 2.0})
    assert _flags(old, new)[("r @ x", "*")] == "new only"
    lines, _ = compare([old, _answers(w={"epsilon": 1.5})], [new, new], decimals=6)
    assert "unsteady (old)" in {flag for *_, flag in lines}


def test_the_checkout_hook_imports_dpacct_from_the_named_checkout():
    code = "import dpacct.accountant as a; print(a.__file__)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=checkout_env(ROOT),
        capture_output=True,
        text=True,
        cwd="/",
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()) == ROOT / "accountant" / "__init__.py"
