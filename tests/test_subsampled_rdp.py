"""Tests for ``dpacct.accountant.rdp.subsampled_rdp``.

Reference values are computed independently with mpmath: the binomial sum of Mironov,
Talwar & Zhang (2019) at integer orders (50 digits), and direct numerical integration of
the Renyi divergence integral at real orders.  The general bounds (Zhu & Wang; Wang,
Balle & Kasiviswanathan) are tested in ``test_subsampled_rdp_general.py``.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import oracles
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpacct.accountant.rdp.subsampled_rdp import (
    poisson_subsampled_rdp,
    subsampled_gaussian_rdp,
    subsampled_without_replacement_rdp,
)

# ----------------------------------------------------------------------------------
# independent references
# ----------------------------------------------------------------------------------


def mp_binomial_rdp(q: float, sigma: float, alpha: int) -> float:
    """RDP of the sampled Gaussian at an integer order from the MTZ binomial sum, 50 digits."""
    with mp.workdps(50):
        qm, s = mp.mpf(q), mp.mpf(sigma)
        total = mp.fsum(
            mp.binomial(alpha, k)
            * (1 - qm) ** (alpha - k)
            * qm**k
            * mp.exp(mp.mpf(k * k - k) / (2 * s * s))
            for k in range(alpha + 1)
        )
        return float(mp.log(total) / (alpha - 1))


def mp_quad_rdp(q: float, sigma: float, alpha: float, *, remove: bool = True) -> float:
    """Renyi divergence of the pair by quadrature (the shared oracle's real-order path)."""
    way = "remove" if remove else "add"
    return oracles.subsampled_gaussian_rdp(q, sigma, alpha, direction=way, dps=30)


def gaussian_rdp(sigma: float):
    """RDP curve of the Gaussian mechanism, alpha / (2 sigma^2) (inf at alpha = inf)."""
    return lambda a: np.asarray(a, dtype=float) / (2.0 * sigma * sigma)


# ----------------------------------------------------------------------------------
# subsampled Gaussian: exact values
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("q", "sigma", "alpha"),
    [
        (0.01, 1.0, 2),
        (0.01, 1.0, 32),
        (0.1, 0.5, 256),
        (0.05, 2.0, 64),
        (0.5, 0.8, 17),
        (0.99, 1.5, 5),
        (1e-5, 3.0, 10),  # A_alpha - 1 ~ 1e-11: checks the small-q digits
        (0.3, 0.3, 40),  # A_alpha ~ exp(1800): checks overflow safety
    ],
)
def test_integer_orders_match_mpmath_binomial_sum(q, sigma, alpha):
    got = float(subsampled_gaussian_rdp(q, sigma, alpha))
    want = mp_binomial_rdp(q, sigma, alpha)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=0.0)


def test_large_integer_order_matches_mpmath():
    got = float(subsampled_gaussian_rdp(0.01, 0.3, 2048))
    np.testing.assert_allclose(got, mp_binomial_rdp(0.01, 0.3, 2048), rtol=1e-10, atol=0.0)


REAL_ORDER_CASES = [
    (0.01, 1.0, 2.5),
    (0.1, 1.0, 7.3),
    (0.05, 2.0, 31.7),
    (0.3, 0.8, 1.5),
    (0.001, 1.0, 2.5),
    (0.2, 0.6, 12.5),
    (0.9, 1.5, 3.3),
    (0.5, 3.0, 1.01),  # order close to 1: the alternating tails carry the value
]


@pytest.mark.parametrize(("q", "sigma", "alpha"), REAL_ORDER_CASES)
def test_real_orders_match_quadrature(q, sigma, alpha):
    got = float(subsampled_gaussian_rdp(q, sigma, alpha))
    want = mp_quad_rdp(q, sigma, alpha)
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=0.0)
    # an upper bound: never below the truth beyond the quadrature's own accuracy
    assert got >= want * (1.0 - 1e-12)


@pytest.mark.parametrize(("q", "sigma", "alpha"), REAL_ORDER_CASES[:5])
def test_remove_direction_dominates_add_direction(q, sigma, alpha):
    got = float(subsampled_gaussian_rdp(q, sigma, alpha))
    other = mp_quad_rdp(q, sigma, alpha, remove=False)
    assert other <= got * (1.0 + 1e-12)


@pytest.mark.parametrize(("q", "sigma"), [(0.01, 1.0), (0.2, 0.5), (1e-4, 5.0), (0.7, 2.0)])
def test_real_orders_lie_between_neighbouring_integers(q, sigma):
    orders = np.array([2.5, 3.5, 7.3, 31.7, 100.25])
    got = subsampled_gaussian_rdp(q, sigma, orders)
    below = subsampled_gaussian_rdp(q, sigma, np.floor(orders))
    above = subsampled_gaussian_rdp(q, sigma, np.ceil(orders))
    assert np.all(got >= below * (1.0 - 1e-12))
    assert np.all(got <= above * (1.0 + 1e-12))


@pytest.mark.parametrize(("q", "sigma"), [(0.004, 1.1), (0.05, 0.7), (0.5, 4.0), (0.9, 0.4)])
def test_monotone_on_a_dense_grid_of_orders(q, sigma):
    orders = np.concatenate([1.0 + np.geomspace(1e-3, 1.0, 30), np.arange(2.05, 80.0, 0.1)])
    got = subsampled_gaussian_rdp(q, sigma, orders)
    assert np.all(np.diff(got) >= -1e-12 * got[1:])


def test_q_one_is_the_plain_gaussian_mechanism():
    orders = np.array([1.5, 2.0, 7.3, 1e4, np.inf])
    np.testing.assert_allclose(
        subsampled_gaussian_rdp(1.0, 2.0, orders), orders / 8.0, rtol=1e-15, atol=0.0
    )


def test_infinite_order_is_infinite():
    assert np.isposinf(subsampled_gaussian_rdp(0.01, 1.0, np.inf))
    assert np.isposinf(subsampled_gaussian_rdp(0.01, 1.0, [2.0, np.inf])[1])


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("q", [1e-6, 0.01, 0.5, 0.999])
@pytest.mark.parametrize("sigma", [0.3, 1.0, 10.0])
def test_large_orders_are_finite_without_warnings(q, sigma):
    orders = np.array([2.0, 64.0, 512.5, 2048.0, 5000.5, 9999.5, 10000.0])
    got = subsampled_gaussian_rdp(q, sigma, orders)
    assert np.all(np.isfinite(got))
    assert np.all(got > 0.0)
    # subsampling never hurts: at most the unsubsampled Gaussian's alpha / (2 sigma^2)
    assert np.all(got <= orders / (2.0 * sigma * sigma) * (1.0 + 1e-12))
    assert np.all(np.diff(got) >= -1e-12 * got[1:])


def test_shapes_and_elementwise_agreement():
    orders = np.array([[2.0, 3.5], [17.25, 64.0]])
    got = subsampled_gaussian_rdp(0.02, 1.3, orders)
    assert got.shape == (2, 2)
    one_by_one = np.array(
        [[float(subsampled_gaussian_rdp(0.02, 1.3, a)) for a in row] for row in orders]
    )
    np.testing.assert_allclose(got, one_by_one, rtol=1e-14, atol=0.0)
    assert subsampled_gaussian_rdp(0.02, 1.3, 3.5).shape == ()
    assert subsampled_gaussian_rdp(0.02, 1.3, []).shape == (0,)


def test_many_orders_at_once_match_one_at_a_time():
    orders = np.concatenate(
        [1.0 + np.arange(1, 100) / 10.0, np.arange(12.0, 64.0), [256.0, 1024.0, 4096.0]]
    )
    together = subsampled_gaussian_rdp(0.01, 1.0, orders)
    alone = np.array([float(subsampled_gaussian_rdp(0.01, 1.0, [a])[0]) for a in orders])
    np.testing.assert_allclose(together, alone, rtol=1e-12, atol=0)
    assert np.all(np.diff(together) >= 0)  # Renyi divergence is non-decreasing in alpha

@settings(max_examples=60, deadline=None)
@given(
    q=st.floats(1e-5, 0.99),
    sigma=st.floats(0.4, 30.0),
    a1=st.floats(1.01, 200.0),
    a2=st.floats(1.01, 200.0),
)
def test_property_monotone_in_alpha_and_below_unsubsampled(q, sigma, a1, a2):
    lo, hi = sorted((a1, a2))
    v_lo, v_hi = subsampled_gaussian_rdp(q, sigma, [lo, hi])
    assert 0.0 <= v_lo <= v_hi * (1.0 + 1e-9)
    assert v_hi <= hi / (2.0 * sigma * sigma) * (1.0 + 1e-12)


@settings(max_examples=60, deadline=None)
@given(
    q1=st.floats(1e-5, 0.99),
    q2=st.floats(1e-5, 0.99),
    sigma=st.floats(0.4, 30.0),
    alpha=st.floats(1.01, 200.0),
)
def test_property_monotone_in_sample_rate(q1, q2, sigma, alpha):
    lo, hi = sorted((q1, q2))
    assert subsampled_gaussian_rdp(lo, sigma, alpha) <= subsampled_gaussian_rdp(
        hi, sigma, alpha
    ) * (1.0 + 1e-9)


# ----------------------------------------------------------------------------------
# input validation
# ----------------------------------------------------------------------------------

GENERAL = [poisson_subsampled_rdp, subsampled_without_replacement_rdp]


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5, float("nan"), float("inf")])
def test_bad_sample_rate(bad):
    with pytest.raises(ValueError, match="sample_rate"):
        subsampled_gaussian_rdp(bad, 1.0, 2.0)
    for fn in GENERAL:
        with pytest.raises(ValueError, match="sample_rate"):
            fn(bad, gaussian_rdp(1.0), 2.0)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_sigma(bad):
    with pytest.raises(ValueError, match="sigma"):
        subsampled_gaussian_rdp(0.1, bad, 2.0)


@pytest.mark.parametrize("bad", [1.0, 0.5, -3.0, float("nan"), [2.0, float("nan")], [3.0, 1.0]])
def test_bad_alpha(bad):
    with pytest.raises(ValueError, match="alpha"):
        subsampled_gaussian_rdp(0.1, 1.0, bad)
    for fn in GENERAL:
        with pytest.raises(ValueError, match="alpha"):
            fn(0.1, gaussian_rdp(1.0), bad)


def test_tiny_targets_calibrate_without_warnings():
    """A one-step calibration to a tiny epsilon drives the half-line terms to y = -inf,
    whose contribution is exactly zero: no divide-by-zero warning, a finite sigma."""
    import warnings

    from dpacct.calibrators import noise_multiplier

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sigmas = [
            noise_multiplier(epsilon=e, delta=1e-7, sample_rate=0.1, steps=1)
            for e in (0.02, 0.01, 0.001)
        ]
    assert all(math.isfinite(s) for s in sigmas)
    assert sigmas[0] < sigmas[1] < sigmas[2]
