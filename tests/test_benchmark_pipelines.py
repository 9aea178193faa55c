"""The sum / mean / variance pipeline benchmark topic: well-formed rows, and the noise
scales it sets give both libraries the claimed epsilon (quick path)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.algos import pipelines

KEYS = ("workflow", "metric", "dpacct", "dpacct_spread", "peer", "peer_value",
        "peer_spread", "seeds", "verdict", "why")


def test_quick_rows_are_well_formed():
    rows = pipelines.rows(seeds=3, quick=True)
    assert rows
    for r in rows:
        assert set(KEYS) <= set(r)
        assert r["seeds"] == 3
        assert r["verdict"] in ("better", "parity", "worse", "n/a")


def test_mixed_sign_sum_uses_two_thirds_of_opendps_stability():
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    _, truth, _, c_ours, c_theirs = pipelines._pipelines(dp, "sum", (-50.0, 100.0))
    assert c_ours == pytest.approx(100.0, rel=1e-8)
    assert c_theirs == pytest.approx(150.0, rel=1e-8)
    assert truth(np.array([-80.0, 120.0, 3.0])) == 53.0
