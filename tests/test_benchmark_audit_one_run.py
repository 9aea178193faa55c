"""The worked DP-SGD example of ``benchmarks/audit_one_run.py`` at a small size: every
audited lower bound stays below the certified epsilon of the same run (an audit above
it would mean a broken bound on one side), and the calibration hits its target."""

from __future__ import annotations

import pytest

bench = pytest.importorskip("benchmarks.audit_one_run")
pytest.importorskip("sklearn")


def test_worked_example_audits_stay_below_the_certified_epsilon():
    out = bench.worked_dpsgd(seed=1, canaries=400, steps=60, sample_rate=0.2, epsilon=8.0)
    assert out["certified"] <= 8.0 + 1e-9
    audits = [value[0] for key, value in out.items() if ":" in key]
    assert len(audits) == 9  # three scores (sum, likelihood ratio, residual) x three bounds
    for res in audits:
        assert 0.0 <= res.epsilon_lower <= res.epsilon_upper == out["certified"]
        assert res.ratio == pytest.approx(res.epsilon_lower / out["certified"], rel=1e-12)
    # at this size the residual score (the other records' gradients subtracted) gives a
    # nonzero bound (1.81 Steinke at this seed) far above the plain likelihood ratio's
    assert out["res: steinke"][0].epsilon_lower > 5 * out["lr: steinke"][0].epsilon_lower > 0.0
