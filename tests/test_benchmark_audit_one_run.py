"""The worked DP-SGD example of ``benchmarks/audit_one_run.py`` at a small size: every
audited lower bound stays below the certified epsilon of the same run (an audit above
it would mean a broken bound on one side), and the calibration hits its target."""

from __future__ import annotations

import pytest

bench = pytest.importorskip("benchmarks.audit_one_run")
pytest.importorskip("sklearn")


def test_worked_example_audits_stay_below_the_certified_epsilon():
    out = bench.worked_dpsgd(seed=1, canaries=200, steps=60, epsilon=4.0)
    assert out["certified"] <= 4.0 + 1e-9
    audits = [value[0] for key, value in out.items() if ":" in key]
    assert len(audits) == 6
    for res in audits:
        assert 0.0 <= res.epsilon_lower <= res.epsilon_upper == out["certified"]
        assert res.ratio == pytest.approx(res.epsilon_lower / out["certified"], rel=1e-12)
