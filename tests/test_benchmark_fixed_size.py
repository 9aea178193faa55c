"""benchmarks/fixed_size.py: one row, measured on both sides of the same mechanism."""

from __future__ import annotations

import pytest

fixed_size = pytest.importorskip("benchmarks.fixed_size")
pytest.importorskip("dp_accounting")


def test_one_row_has_both_sides_and_the_ratio():
    r = fixed_size.row(1.0, 0.01, 100)
    assert r["run_lower"] <= r["upper"] and r["lower"] <= r["upper"]
    assert r["upper"] < r["rdp"]
    assert r["ratio"] == pytest.approx(r["upper"] / r["rdp"], rel=1e-12)
    assert r["peak_mib"] > 0 and r["cpu_s"] >= 0
    line = fixed_size.fmt(r)
    assert line.count("|") == fixed_size.HEADER.splitlines()[0].count("|")


def test_the_peer_reads_the_replace_one_noise_halved():
    """The peer is fed sigma / 2: at sigma = 2 its RDP equals the one dp_accounting gives
    GaussianDpEvent(1.0) directly (an independent call)."""
    import dp_accounting as dpa

    event = dpa.SelfComposedDpEvent(
        dpa.SampledWithoutReplacementDpEvent(fixed_size.N, 600, dpa.GaussianDpEvent(1.0)), 100
    )
    acct = dpa.rdp.RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    want = acct.compose(event).get_epsilon(fixed_size.DELTA)
    assert fixed_size.peer(2.0, 0.01, 100)["rdp"] == pytest.approx(want, rel=1e-12)
