"""benchmarks/dpsgd_plan.py: the breakdown counts the call's own transforms, leaves the
answer and the patched functions as they were, and refuses unknown variants."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.dpsgd_plan import VARIANTS, _lengths_rule, apply_variant, breakdown


def test_breakdown_is_the_calls_transforms_and_restores():
    """q 0.01, sigma 1.1, T 300: the answer is a fresh unrecorded mechanism's, the rows
    sum to the total, every transform is a product's (plain, skewed or tails: no
    spectral power below 2^10 steps) on a tagged level of the remove direction, and
    numpy and the patched engine functions are themselves again afterwards."""
    import dpacct.accountant.pld.grid as grid
    import dpacct.accountant.pld.twoscale as ts
    import dpacct.accountant.transformers.compose as tc
    from dpacct.accountant import compose, poisson_subsample
    from dpacct.mechanisms import GaussianMechanism

    before = (np.fft.rfft, np.fft.irfft, ts._convolve, tc._self_composed,
              grid.GridPLD.convolve)
    got = breakdown(0.01, 1.1, 300)
    assert (np.fft.rfft, np.fft.irfft, ts._convolve, tc._self_composed,
            grid.GridPLD.convolve) == before
    fresh = compose([poisson_subsample(GaussianMechanism(sigma=1.1), sample_rate=0.01)],
                    counts=[300])
    assert got["answer"] == fresh.epsilon(1e-5)
    rows = got["rows"]
    assert got["transforms"] == len(rows) > 0
    assert got["total"] == sum(r[0] for r in rows)
    assert {r[2] for r in rows} <= {"plain", "skewed", "tails"}
    assert {r[3] for r in rows} == {"upper remove"}
    assert all(isinstance(r[4], int) and r[4] >= 1 for r in rows)
    assert {r[5] for r in rows} <= {"bulk", "coarse"}


def test_lengths_rule_and_unknown_variants():
    """The 2^a 3^b rule returns the least such length (checked by brute force on a
    range); an unknown constant or patch is refused by name."""
    for max_b in (0, 2, 40):
        rule = _lengths_rule(max_b)
        for n in range(1, 3000, 37):
            m = n
            while True:
                k = m
                while k % 2 == 0:
                    k //= 2
                b = 0
                while k % 3 == 0:
                    k //= 3
                    b += 1
                if k == 1 and b <= max_b:
                    break
                m += 1
            assert rule(n) == m, (max_b, n)
    with pytest.raises(ValueError, match="NOT_A_CONSTANT"):
        apply_variant({"pld_fft.NOT_A_CONSTANT": 1})
    with pytest.raises(ValueError, match="bogus"):
        apply_variant({"bogus": 1})
    assert "library" in VARIANTS and VARIANTS["library"] == {}
