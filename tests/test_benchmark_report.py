"""The benchmark's checks (``benchmarks/run.py``), on hand-made records.

The default answer is held against the peers' default settings, the precise answer
(``tol = 3e-7``) against every setting, the peers' slow precise ones included.
"""

from __future__ import annotations

import pytest

run = pytest.importorskip("benchmarks.run")


def _rec(runner, upper=None, lower=None, seconds=0.01):
    return {
        "runner": runner,
        "workload": "dpsgd_q0.01",
        "epsilon": upper if upper is not None else lower,
        "lower": lower,
        "upper": upper,
        "seconds": seconds,
        "status": "ok",
        "note": None,
        "peak_mb": 80.0,
    }


def _checks(default_peer_upper, fine_peer_upper, ours=1.0, ours_precise=0.995):
    records = [
        _rec("benchmarks.ours:epsilon_default", upper=ours),
        _rec("benchmarks.ours:bracket_default", upper=ours, lower=0.99),
        _rec("benchmarks.ours:epsilon_tol_min", upper=ours_precise, seconds=0.3),
        _rec("dp_accounting.pld", upper=default_peer_upper, seconds=0.4),
        _rec("dp_accounting.pld_fine", upper=fine_peer_upper, seconds=4.0),
    ]
    _, checks = run.report(records)
    return {line.split(" -- ")[0].split(": ", 1)[1]: line for line in checks if " -- " in line}


def test_the_default_answer_is_held_against_default_settings_only():
    checks = _checks(default_peer_upper=1.001, fine_peer_upper=0.998)
    assert checks["tight"].startswith("[PASS]")
    checks = _checks(default_peer_upper=0.999, fine_peer_upper=0.998)
    assert checks["tight"].startswith("[FAIL]") and "dp_accounting.pld 0.9990000" in checks["tight"]


def test_the_precise_answer_is_held_against_every_setting():
    lines = run.report(
        [
            _rec("benchmarks.ours:epsilon_default", upper=1.0),
            _rec("benchmarks.ours:bracket_default", upper=1.0, lower=0.99),
            _rec("benchmarks.ours:epsilon_tol_min", upper=0.995, seconds=0.3),
            _rec("dp_accounting.pld", upper=1.001, seconds=0.4),
            _rec("dp_accounting.pld_fine", upper=0.994, seconds=4.0),
        ]
    )[1]
    precise = next(line for line in lines if "precise" in line)
    assert precise.startswith("[MISS]") and "dp_accounting.pld_fine" in precise
    assert run._precise("dp_accounting.pld_fine") and not run._precise("dp_accounting.pld")
