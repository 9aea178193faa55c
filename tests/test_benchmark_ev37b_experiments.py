"""benchmarks/ev37b_*.py (issue 37, session 30): the experiments' variants parse and are
flagged as the docstrings say, each patch reaches the code it names (its answer moves,
and in the direction its soundness allows), the timed-only variants leave the answer
as the library's, and the tables read their records."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest

from benchmarks import ev37b_bounds, ev37b_phases, ev37b_schedules
from benchmarks.checkouts import run_in_checkout


def test_variants_parse_and_are_flagged():
    parse, flag = ev37b_schedules.parse_variant, ev37b_schedules.experiment_flag
    assert parse("ledger:grid=16,step=4") == ("ledger", {"grid": "16", "step": "4"})
    assert flag({"grid": "16"}) == ""  # a documented option: the library as it is
    assert flag({"exact": "4096"}) == "experiment"
    assert flag({"roundoff": "0", "step": "2"}) == "UNSOUND experiment"
    assert flag({"off": "fine"}) == "UNSOUND experiment"
    for bad in ("engine", "ledger:grid", "ledger:tol=3", "oneshot:off=tails", "ledger:off=fine"):
        with pytest.raises(ValueError):
            parse(bad)


def _schedule_child(variant: str, n: int) -> dict:
    path, opts = ev37b_schedules.parse_variant(variant)
    arg = json.dumps([path, opts, "phases", 2.0, n, False, None])
    rec = run_in_checkout(".", sys.executable, [ev37b_schedules._CHILD, arg], 300)
    assert rec["status"] == "ok", rec
    return rec


@pytest.mark.slow
def test_schedule_patches_reach_the_ledger():
    """20 random phases x 10: a quarter of the history step moves the ledger's epsilon
    (the patch reaches ``_coarse_step``), and zero round-off can only lower it (the
    certificate's terms are non-negative); the default is the library's own answer."""
    import numpy as np

    from dpacct.accountant import PrivacyAccountant

    rng = np.random.default_rng(0)
    sig, q = rng.uniform(0.8, 2.0, 20), rng.uniform(0.001, 0.02, 20)
    acct = PrivacyAccountant(progress=False)
    for s, qq in zip(sig, q, strict=True):
        acct.step(noise_multiplier=float(s), sample_rate=float(qq), count=10)
    base = _schedule_child("ledger", 20)["epsilon"]
    assert base == acct.epsilon(1e-5)
    assert _schedule_child("ledger:step=4", 20)["epsilon"] != base
    assert _schedule_child("ledger:roundoff=0", 20)["epsilon"] < base


@pytest.mark.slow
def test_phases_timing_keeps_the_answer_and_stub_replaces_transforms():
    """The ``lib`` variant only times the transforms (its answer is the library's to
    the bit); ``stub`` replaces them (its answer moves, its transforms take ~no CPU)."""
    import numpy as np

    from dpacct.accountant import PrivacyAccountant

    lib = run_in_checkout(".", sys.executable,
                          [ev37b_phases._CHILD, json.dumps(["lib", 30, 1024])], 300)
    stub = run_in_checkout(".", sys.executable,
                           [ev37b_phases._CHILD, json.dumps(["stub", 30, 1024])], 300)
    rng = np.random.default_rng(0)
    sig, q = rng.uniform(0.8, 2.0, 30), rng.uniform(0.001, 0.02, 30)
    acct = PrivacyAccountant(progress=False)
    for s, qq in zip(sig, q, strict=True):
        acct.step(noise_multiplier=float(s), sample_rate=float(qq), count=10)
    assert lib["epsilon"] == acct.epsilon(1e-5)
    assert lib["fft_calls"] > 0 and stub["fft_calls"] > 0
    assert stub["epsilon"] != lib["epsilon"]


def test_phases_growth_and_table():
    res = {100: {"lib": [{"status": "ok", "cpu": 2.0, "epsilon": 1.0, "peak_mb": 9,
                          "fft_cpu": 1.0, "fft_calls": 3, "fft_points": 4096}]},
           1000: {"lib": [{"status": "ok", "cpu": 30.0, "epsilon": 2.0, "peak_mb": 10,
                           "fft_cpu": 6.0, "fft_calls": 30, "fft_points": 40960}]}}
    assert ev37b_phases.growth(res, 1000, "lib") == 15.0
    last = ev37b_phases.format_table(res).splitlines()[-1]
    assert "| 15.0x |" in last and "| 20% |" in last and "40,960" in last


def _bounds_native(variant: str) -> tuple[float, float]:
    """``epsilon_bounds`` of q 0.01, sigma 1.1, T 100 under ``variant``'s patch, run
    natively (no valgrind) in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", ev37b_bounds._CHILD, "0.01", "1.1", "100", "1",
         ev37b_bounds.PATCHES[variant]],
        capture_output=True, text=True, check=True,
    )
    return ast.literal_eval(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_bounds_patches_touch_the_lower_end_only():
    """The patches leave the upper end (``epsilon``, the pessimistic side) bit for bit
    and move the lower end; the sound stand-in (every bin rounded down) only lowers it.
    (The tails' patch too: the combined variant's lower end differs from the hulls'.)"""
    lo, up = _bounds_native("main")
    lo_h, up_h = _bounds_native("hulls-rounddown")
    lo_b, up_b = _bounds_native("hulls-rounddown+tails-off")
    assert up_h == up and up_b == up
    assert lo_h < lo
    assert lo_b != lo_h


@pytest.mark.slow
def test_bounds_exact_tilts_patch_moves_the_lower_end_only():
    """Session 35's ``exact-tilts`` variant leaves the upper end bit for bit and changes
    the lower end's arithmetic.  It fails with the patch doing nothing (the lower end
    equal) and with its condition inverted (``exact`` off for the pessimistic products:
    the upper end moves, 0.5497659501407087 -> 0.5497659501410075)."""
    lo, up = _bounds_native("main")
    lo_x, up_x = _bounds_native("exact-tilts")
    assert up_x == up
    assert lo_x != lo and lo_x <= up


def test_bounds_ratio_table():
    recs = [{"row": "1e6", "side": "epsilon", "variant": "main", "answer": "61.8",
             "total": 400e6},
            {"row": "1e6", "side": "bounds", "variant": "tails-off", "answer": "(1, 2)",
             "total": 900e6}]
    last = ev37b_bounds.ratio_table(recs).splitlines()[-1]
    assert last == "| T 1e6 | bounds, tails-off (UNSOUND) | (1, 2) | 900.0 | 500.0 | 2.25 |"
