"""benchmarks/dpsgd_sides.py: its counters and variants leave the answers and the
library as they were, and its variants reach the optimistic side only."""

from __future__ import annotations

import pytest

from benchmarks.dpsgd_sides import _variant, measure


def test_counting_leaves_the_bracket_and_counts_each_side():
    """q 0.01, sigma 1.1, T 1e4: the counted bracket is the library's (an uncounted
    fresh mechanism), the upper end builds no optimistic hull, the lower end does."""
    from dpacct.accountant import compose, poisson_subsample
    from dpacct.mechanisms import GaussianMechanism

    got = measure("1e4", "main")
    run = compose([poisson_subsample(GaussianMechanism(sigma=1.1), sample_rate=0.01)],
                  counts=[10_000])
    assert (got["lower"], got["upper"]) == tuple(run.epsilon_bounds(1e-5))
    assert got["upper_work"]["fft_points"] > 0 and "hulls" not in got["upper_work"]
    assert got["lower_work"]["hulls"] > 0 and got["lower_work"]["fft_points"] > 0


def test_a_variant_moves_the_lower_end_only_and_is_undone():
    import dpacct.accountant.pld.twoscale as ts
    import dpacct.accountant.transformers.compose as cm

    before = (dict(ts.COARSE_POINTS), cm.grid_step)
    main, coarse = measure("1e4", "main"), measure("1e4", "coarse4096")
    assert (dict(ts.COARSE_POINTS), cm.grid_step) == before
    assert coarse["upper"] == main["upper"] and coarse["lower"] != main["lower"]
    assert coarse["lower_work"]["fft_points"] < main["lower_work"]["fft_points"]
    with pytest.raises(ValueError, match="variant"), _variant("finer"):
        pass
