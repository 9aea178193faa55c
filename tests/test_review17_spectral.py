"""Review of the spectral power's round-off certificate (issue 37's ``_spectral_top``).

:func:`dpacct.accountant.pld.pld_fft._spectral_error` bounds the products' round-off of
a spectrum raised to a power ``k`` by repeated squaring as ``(1 + 3u)^M - 1`` relative,
``M`` the number of complex products (about ``2 log2 k``).  But squaring doubles the
relative error already present (``fl(x^2) = x^2 (1 + e)^2 (1 + e')``), so ``x^k`` by
repeated squaring carries a relative error growing like ``k u``, not ``log2(k) u``.
With the forward transforms' error set to zero (``norms = 0``) the returned
``freq_l2`` must bound the l2 distance between the computed power and the exact power
of the same input spectrum (mpmath, 40 digits); here it is exceeded 137 times.

Severity low: in :func:`~dpacct.accountant.pld.twoscale._spectral_top` the forward
term ``sum_c k_c ||p_c||_2 rho sqrt(n)`` is also linear in ``k`` and, since ``rho =
_fft_rel(n) >= 41 u`` (n >= 8), about 18 times the true product round-off (at most
``k sqrt(5) u ||spectrum||_2``), so the total stays a bound unless the forward
transforms reach most of their worst case together; no printed number
was found below the truth (sweeps of mu-GDP and DP-SGD compositions, counts 1 025 to
1e9, deltas 1e-3 to 1e-12, all bracketed).  The proof in docs/theory/pld.md should
carry ``k_c`` (e.g. ``(1 + sqrt(5) u)^(sum_c k_c) - 1``) instead of the product count.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np

from dpacct.accountant.pld import pld_fft


def test_spectral_error_bounds_the_round_off_of_a_power_by_squaring():
    n, k = 256, 2**16
    p = np.array([1.0 - 1e-6, 1e-6])
    spec, mults = pld_fft._spectrum_product([p], np.array([k]), n)
    # the very spectrum it raised (its power 1 is that spectrum times 1.0, exactly)
    x, _ = pld_fft._spectrum_product([p], np.array([1]), n)
    with mpmath.workdps(40):
        exact = np.array([complex(mpmath.mpc(complex(z)) ** k) for z in x])
    err = math.sqrt(float(np.sum(np.abs(spec - exact) ** 2)))
    freq_l2, _, _ = pld_fft._spectral_error(spec, n, mults, 0.0)
    assert err <= freq_l2
