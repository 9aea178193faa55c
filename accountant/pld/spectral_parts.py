"""The spectral power's two ends: its componentwise forward error, and the optimistic
side's settling of its certificate.

:func:`~dpacct.accountant.pld.twoscale._spectral_top` composes the top levels of a
self-composition by one transform raised to a power.  This module holds the bound on
the forward transforms' error carried through that power (:func:`_spectral_power`)
and, for a lower bound (the optimistic side of ``epsilon_bounds``), the step that turns
"within ``err`` in l1 of an optimistic measure" into an optimistic PLD
(:func:`_optimistic_settle`).  The argument in full: docs/theory/pld.md.
"""

from __future__ import annotations

import math

import numpy as np

from .grid import GridPLD, _trim
from .pld_fft import _pass_model, _power, _rfft

__all__: list[str] = []


def _optimistic_settle(
    step: float, first: int, y: np.ndarray, inf_mass: float, err: float
) -> GridPLD:
    """An optimistic PLD below every measure within ``err`` in l1 of ``y``.

    ``y`` (with ``inf_mass`` at ``+inf``) is within ``err`` in l1 of the exact product
    ``Y`` of optimistic factors, so ``delta_Y(t) >= delta_y(t) - err`` at every ``t``
    (each hockey-stick integrand lies in [0, 1]).  A GridPLD cannot carry ``-err``; the
    top of ``y`` is moved to ``-inf`` instead (which only lowers a curve): with ``l_k``
    the last node where ``delta_y(l_k) >= err``, the part ``rho`` of ``y`` above
    ``l_k`` (and at ``+inf``) is dropped.  At ``t >= l_k`` the rest has no mass above
    ``t``: its curve is 0.  At ``t < l_k``, ``delta_rho(t) >= delta_rho(l_k) =
    delta_y(l_k) >= err``, so the rest's curve ``delta_y - delta_rho`` is at most
    ``delta_y - err <= delta_Y`` (the mass at ``+inf`` is always in ``rho``).  (When
    the mass at ``+inf`` is at least ``err``, ``err`` is taken off it instead: that
    lowers every delta by exactly ``err``.)  What it costs at a target ``t``:
    ``delta_rho(t)``, at most the P-mass above ``l_k``, a few ``err`` (about 2e-11
    against delta 1e-5 on DP-SGD).  The node deltas are sums of non-negative terms,
    trusted to ``1e-9`` relative.
    """
    if inf_mass - err >= 1e-12 * inf_mass:
        # the mass at +inf lowers every delta by itself: take err off it
        first, y = _trim(first, y)
        return GridPLD(step, first, y, (inf_mass - err) * (1.0 - 1e-12), False)
    d_nodes, _ = GridPLD(step, first, y, inf_mass, False)._node_tables()
    above = np.flatnonzero(d_nodes * (1.0 - 1e-9) >= err * (1.0 + 1e-9))
    if above.size == 0:
        return GridPLD(step, first, np.zeros(1), 0.0, False)
    # rho is everything above l_k; when l_k is the last node, the mass at +inf alone
    # (then delta_y(l_k) = inf_mass >= err)
    first, y = _trim(first, y[: int(above[-1]) + 1])
    return GridPLD(step, first, y, 0.0, False)


def _spectral_power(pmfs: list[np.ndarray], masses: list[float], high: int, n: int):
    """``rfft(p_0)^high * rfft(p_1)`` (the second factor optional), the number of
    complex products, and a componentwise bound on the forward errors carried into it.

    Every computed forward transform is within ``kappa ||p||_1`` of the exact one at
    *every* frequency (:func:`~dpacct.accountant.pld.pld_fft._pass_model`: each input
    reaches an output along one path of butterflies, whose intermediates are exact DFT
    sums of disjoint sets of inputs).  With ``A^ = A + e``, ``B^ = B + f``, ``|e| <= eA =
    kappa M_A``, ``|f| <= eB`` and ``m = |A^| + eA >= max(|A|, |A^|)``,

        |A^h B^ - A^h B| <= h eA m^(h-1) (|B^| + eB) + m^h eB

    frequency by frequency, from the computed spectra: where ``|A^|`` is below one the
    power damps the forward error, which the normwise ``h ||e||_2`` does not see (4-14
    times smaller on the DP-SGD workloads, issue 37).  The full spectrum's l2 norm is
    at most ``sqrt(2)`` times the stored half's; the roundings of this evaluation (abs,
    the power, the products, the sum) are covered by ``exp((4 h + n + 16) u)``.
    """
    kappa = _pass_model(n)[1]
    a = _rfft(pmfs[0], n)
    e_a = kappa * masses[0] * (1 + 1e-12)
    m = np.abs(a)
    m += e_a
    # the transform is this call's own: the power may take it over (the same floats,
    # one spectrum fewer alive at the lower end's high-water mark; issue 37, session 36)
    spec, mults = _power(a, high, consume=True)
    del a
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        m_pow = m ** (high - 1)
        if len(pmfs) > 1:
            b = _rfft(pmfs[1], n)
            spec = np.multiply(b, spec, out=spec)
            mults += 1
            e_b = kappa * masses[1] * (1 + 1e-12)
            # bound (|b| + e_b) + m_pow m e_b, in place: m m_pow e_b into m (the same
            # products: IEEE multiplication commutes), then bound into m_pow
            b_up = np.abs(b)
            del b
            b_up += e_b
            m *= m_pow
            m *= e_b
            bound = np.multiply(high * e_a, m_pow, out=m_pow)
            bound *= b_up
            bound += m
        else:
            bound = np.multiply(high * e_a, m_pow, out=m_pow)
        total = 2.0 * float(np.sum(np.multiply(bound, bound, out=bound)))
    fwd = math.sqrt(total) * math.exp((4 * high + n + 16) * 2.0**-53) * (1 + 1e-12)
    return spec, mults, (fwd if math.isfinite(fwd) else math.inf)
