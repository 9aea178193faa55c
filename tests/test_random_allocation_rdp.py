"""Random allocation's Renyi bounds: the series-power remove moments against mpmath, the
add bound's Chernoff envelope against the brute minimum."""

from __future__ import annotations

import numpy as np
import pytest

from dpacct.accountant.transformers.random_allocation_rdp import (
    _ADD_THETAS,
    MAX_ORDER,
    _chernoff,
    _log_phi_upper,
    remove_rdp,
    remove_rdp_orders,
)


@pytest.mark.parametrize(("sigma", "steps"), [(2.0, 10_000), (0.8, 1000), (1.0, 100), (3.0, 2**15)])
def test_remove_rdp_at_order_two_is_at_or_above_the_closed_form(sigma, steps):
    # order 2: E_Q[(P/Q)^2] = 1 + (e^{1/sigma^2} - 1) / T (the T diagonal tuples), in
    # mpmath; the partition sum minus 2 log T lost 5e-7 of it at sigma 2, T 1e4 (below)
    import mpmath as mp

    mp.mp.dps = 40
    exact = float(mp.log(1 + mp.expm1(1 / mp.mpf(sigma) ** 2) / steps))
    got = remove_rdp(2, sigma, steps)
    assert exact <= got <= exact * (1 + 1e-7)


def test_remove_rdp_high_orders_against_tuples_sum_by_counts():
    # orders up to 32 at T = 40: the sum over tuples grouped by multiplicity vectors
    # (T^-a sum over compositions n of a: a!/prod n_j! exp((sum n^2 - a)/(2 s^2))),
    # enumerated as partitions with their arrangements, in mpmath
    import mpmath as mp
    from sympy.utilities.iterables import partitions

    mp.mp.dps = 50
    sigma, steps = 0.9, 40
    for order in (7, 20, 32):
        total = mp.mpf(0)
        for part in partitions(order):
            length = sum(part.values())
            if length > steps:
                continue
            ways = mp.factorial(order)
            for size, mult in part.items():
                ways /= mp.factorial(size) ** mult * mp.factorial(mult)
            ways *= mp.factorial(steps) / mp.factorial(steps - length)
            sq = sum(size * size * mult for size, mult in part.items())
            total += ways * mp.e ** (mp.mpf(sq - order) / (2 * mp.mpf(sigma) ** 2))
        exact = float(mp.log(total / mp.mpf(steps) ** order) / (order - 1))
        got = remove_rdp(order, sigma, steps)
        assert exact <= got <= exact * (1 + 1e-12)



@pytest.mark.parametrize("sigma", [0.6, 0.8, 1.3, 4.0])
def test_chernoff_envelope_is_the_brute_minimum(sigma):
    # the lower envelope of the lines theta m + log_phi(theta) gives the same minimum
    # as the full (m, theta) table, to rounding
    m = np.concatenate([np.exp(-np.geomspace(1e-6, 30.0, 3000)), [1.0, 0.5, 1e-300]])
    brute = (1000 * (_ADD_THETAS[None, :] * m[:, None] + _log_phi_upper(sigma)[None, :])).min(
        axis=1
    )
    got = _chernoff(sigma, 1000, m)
    assert np.allclose(got, brute, rtol=1e-14, atol=1e-12)


def test_remove_orders_table_and_bad_order():
    table = remove_rdp_orders(1.0, 100)
    assert table.shape == (MAX_ORDER + 1,)
    assert np.all(np.diff(table[2:]) >= 0)  # RDP non-decreasing in the order
    assert remove_rdp(5, 1.0, 100) == table[5]
    for bad in (1, 33, 2.5):
        with pytest.raises(ValueError, match="order"):
            remove_rdp(bad, 1.0, 100)
