"""The spectral power's parts (``dpacct.accountant.pld.spectral_parts``).

The forward-error bound of ``_spectral_power`` is tested with the spectral power itself
in ``tests/test_twoscale.py`` (against an 80-bit direct product); here the optimistic
settling of its certificate, against brute-force hockey-stick sums.
"""

from __future__ import annotations

import math

import numpy as np
import pytest


def _hockey(losses: np.ndarray, p: np.ndarray, inf_mass: float, t: np.ndarray) -> np.ndarray:
    """delta(t) = inf_mass + sum_i p_i (1 - e^{t - l_i})_+, term by term (brute force)."""
    w = np.clip(-np.expm1(t[:, None] - losses[None, :]), 0.0, None)
    return inf_mass + w @ p


@pytest.mark.parametrize(("inf_mass", "err"), [(0.0, 1e-12), (0.0, 1e-6), (3e-10, 1e-12),
                                             (2e-8, 1e-9), (3e-10, 1e-9)])
def test_optimistic_settle_is_below_every_measure_within_err(inf_mass, err):
    """:func:`_optimistic_settle`: for a measure ``y`` (with mass at ``+inf``) and an
    l1 radius ``err``, the result's curve is at or below ``max(delta_y - err, 0)`` at
    every ``t`` (the lowest curve any measure within ``err`` of ``y`` can have, up to
    the factor ``1 - e^{t - l}`` of far atoms), by a brute-force sum (to 1e-13 relative,
    its own rounding); and it costs
    little: within ``50 err`` of ``delta_y - err`` where ``delta_y`` is above ``1e3
    err``.  ``y`` itself (no settling) fails the first check."""
    from dpacct.accountant.pld.spectral_parts import _optimistic_settle

    rng = np.random.default_rng(37)
    step, first = 2.0**-5, -120
    x = np.arange(600)
    y = np.exp(-0.5 * ((x - 160) / 36.0) ** 2) * rng.uniform(0.5, 1.5, x.size)
    y = y / y.sum() * (1.0 - inf_mass)
    out = _optimistic_settle(step, first, y, inf_mass, err)
    assert not out.pessimistic
    t = np.linspace(-2.0, 16.0, 721)
    d_y = _hockey((first + x) * step, y, inf_mass, t)
    floor = np.maximum(d_y - err, 0.0)
    got = _hockey(out.losses, out.pmf, out.inf_mass, t)
    slack = 1e-13 * d_y  # the two brute-force sums' own rounding (err >= 1e-12)
    assert np.all(got <= floor + slack)
    assert np.all(out.delta(t) <= floor + slack)
    assert not np.all(d_y <= floor + slack)  # the unsettled measure is above it
    big = d_y > 1e3 * err
    assert np.all(got[big] >= floor[big] - 50 * err)


@pytest.mark.parametrize("high", [1, 2, 7, 40, 255])
@pytest.mark.parametrize("two", [False, True])
def test_spectral_power_is_the_formulation_without_reused_arrays(high, two):
    """:func:`_spectral_power` takes over its own transform and reuses its magnitude
    arrays (issue 37, session 36: fewer arrays of the window's size alive); its spectrum,
    product count and forward bound are those of the plain formulation (a copied power,
    fresh arrays for every term; written out here with numpy's own FFT) bit for bit, and
    the caller's PMFs are untouched."""
    from dpacct.accountant.pld.pld_fft import _pass_model, _power
    from dpacct.accountant.pld.spectral_parts import _spectral_power

    rng = np.random.default_rng(36)
    pmfs = [rng.uniform(0.0, 1.0, 50), rng.uniform(0.0, 1.0, 70)][: 1 + two]
    pmfs = [p / p.sum() for p in pmfs]
    kept = [p.copy() for p in pmfs]
    masses = [float(p.sum()) for p in pmfs]
    n = 1 << 9
    spec, mults, fwd = _spectral_power(pmfs, masses, high, n)
    kappa = _pass_model(n)[1]
    a = np.fft.rfft(pmfs[0], n)
    want, want_mults = _power(a, high)  # not consuming: a stays as it was
    e_a = kappa * masses[0] * (1 + 1e-12)
    mag = np.abs(a) + e_a
    bound = (high * e_a) * mag ** (high - 1)
    if two:
        b = np.fft.rfft(pmfs[1], n)
        want = b * want
        want_mults += 1
        e_b = kappa * masses[1] * (1 + 1e-12)
        bound = bound * (np.abs(b) + e_b) + (mag ** (high - 1) * mag) * e_b
    total = 2.0 * float(np.sum(bound * bound))
    want_fwd = math.sqrt(total) * math.exp((4 * high + n + 16) * 2.0**-53) * (1 + 1e-12)
    assert spec.tobytes() == want.tobytes()
    assert mults == want_mults
    assert fwd == want_fwd
    assert all(p.tobytes() == k.tobytes() for p, k in zip(pmfs, kept, strict=True))
