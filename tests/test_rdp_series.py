"""Log-space series helpers of the subsampled-RDP bounds (``dpacct.accountant.rdp.rdp_series``),
each against a plain evaluation written here: mpmath at 50 digits for the log-space sums,
a loop over segments for the layout, brute force for the envelope and the chord."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpacct.accountant.numerics import _log_expm1
from dpacct.accountant.rdp.rdp_series import (
    _cgf_chord,
    _monotone_envelope,
    _needed_integers,
    _segment_logsumexp,
    _segment_logsumexp_up,
    _segments,
)


def test_log_expm1_matches_mpmath_without_overflow():
    x = np.array([0.0, 1e-300, 1e-8, 0.5, 1.0, 1.5, 30.0, 800.0, 1e6, np.inf])
    got = _log_expm1(x)
    assert got[0] == -np.inf and got[-1] == np.inf
    with mp.workdps(50):
        for xi, gi in zip(x[1:-1], got[1:-1], strict=True):
            assert gi == pytest.approx(float(mp.log(mp.expm1(mp.mpf(xi)))), rel=1e-14, abs=1e-14)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=6),
    st.integers(min_value=0, max_value=2**32 - 1),
)
def test_segment_logsumexp_matches_mpmath_per_segment(lengths, seed):
    rng = np.random.default_rng(seed)
    starts, owner, position = _segments(np.array(lengths))
    n = int(sum(lengths))
    values = rng.normal(0.0, 300.0, size=n)
    values[rng.random(n) < 0.2] = -np.inf  # zeros
    # the layout: one start per segment, positions 0..len-1, owners in order
    assert starts.tolist() == [sum(lengths[:i]) for i in range(len(lengths))]
    assert owner.tolist() == [i for i, m in enumerate(lengths) for _ in range(m)]
    assert position.tolist() == [j for m in lengths for j in range(m)]
    got = _segment_logsumexp(values, starts)
    up = _segment_logsumexp_up(values, np.zeros(n), starts)
    with mp.workdps(50):
        for i, s in enumerate(starts):
            seg = values[s : s + lengths[i]]
            finite = [mp.exp(mp.mpf(v)) for v in seg if np.isfinite(v)]
            if not finite:
                assert got[i] == -np.inf and up[i] == -np.inf
                continue
            exact = float(mp.log(mp.fsum(finite)))
            assert got[i] == pytest.approx(exact, rel=1e-13, abs=1e-12)
            # the rounded-up sum sits above the exact one, by a tiny allowance
            assert exact <= up[i] <= exact + 1e-9


def test_segment_logsumexp_with_an_infinite_term_is_infinite():
    out = _segment_logsumexp(np.array([0.0, np.inf, 1.0, 2.0]), np.array([0, 2]))
    assert out[0] == np.inf and out[1] == pytest.approx(math.log(math.e + math.e**2))


def test_monotone_envelope_is_the_suffix_minimum():
    orders = np.array([5.0, 2.0, 9.0, 3.0, 7.0])
    bounds = np.array([4.0, 3.0, 1.0, 6.0, 2.0])
    expected = [min(b for o, b in zip(orders, bounds, strict=True) if o >= oi) for oi in orders]
    assert _monotone_envelope(orders, bounds).tolist() == expected


def test_cgf_chord_interpolates_between_neighbouring_integers():
    # cumulant of the Gaussian with sigma = 1: (alpha - 1) alpha / 2, convex, 0 at 1
    orders = np.array([1.5, 2.0, 2.25, 3.7])
    need = _needed_integers(orders)
    assert need.tolist() == [2.0, 3.0, 4.0]
    cgf = (need - 1) * need / 2
    chord = _cgf_chord(orders, need, cgf)
    # by hand: between 1 (value 0) and 2 (value 1) at 1.5 -> 0.5; at 2 -> 1; between
    # 2 (1) and 3 (3) at 2.25 -> 1.5; between 3 (3) and 4 (6) at 3.7 -> 5.1
    assert chord == pytest.approx([0.5, 1.0, 1.5, 5.1], rel=1e-15)
    # a chord of a convex function lies above it
    assert np.all(chord >= (orders - 1) * orders / 2)
