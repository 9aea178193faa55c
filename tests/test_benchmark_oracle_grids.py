"""The peer rows moved out of the suite (benchmarks/oracle_grids.py): they are all there.

Running a row takes dp_accounting 5-420 s, so the rows themselves are not run here; the
mechanisms they build and the grids they use are checked against the cases the suite
used to run (tests/test_mixture_gaussian.py, tests/test_truncated_poisson.py).
"""

from __future__ import annotations

import pytest

oracle_grids = pytest.importorskip("benchmarks.oracle_grids")


def test_every_removed_case_is_a_row():
    rows = oracle_grids._mixture_rows() + oracle_grids._truncated_rows()
    names = [(name, grid) for name, _, _, _, grid in rows]
    assert len(set(names)) == len(names) == 10
    built = {(name, count, grid): ours() for name, ours, _, count, grid in rows}
    from dpacct.accountant import MixtureOfGaussiansMechanism, TruncatedPoissonGaussianMechanism

    assert MixtureOfGaussiansMechanism(1.0, [0, 1, 2], [0.81, 0.18, 0.01]) in built.values()
    assert (
        TruncatedPoissonGaussianMechanism(0.8, 0.005, 100_000, 500)
        == built["truncated Poisson sigma 0.8, q 0.005, n 100000, b 500, 20 steps", 20, 1e-5]
    )
    assert {grid for _, _, _, _, grid in rows} == {1e-4, 1e-5}


def test_only_selects_rows(capsys):
    pytest.importorskip("dp_accounting")
    assert oracle_grids.main(["--only", "no such row"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 2 and "dp_accounting (pessimistic)" in out
