"""The connect-the-dots split's numerator ``m - r`` of a Poisson-subsampled Gaussian,
from the base bin, with a bound on its error (session 46).

The pessimistic grid (:func:`~dpacct.accountant.pld.grid._upper_from_bins`; Doroshenko,
Ghazi, Kamath, Kumar, Manurangsi 2022, Algorithm 1) puts ``(m - r) / (1 - e^{-h})`` of a
bin's P-mass ``m`` on its upper node, ``r = e^{a} Q[a, b]`` the bin's scaled Q-mass and
``h`` the step.  ``m - r`` is about ``m h / 2``: taken as a difference of the law's bin
masses, the rounding of its distribution functions (``u min(F, 1 - F)`` each) is divided
by ``h``.  At ``q = 1e-6`` (steps of ``2e-9``) that moved mass down as well as up, and
``poisson_subsample(GaussianMechanism(5), 1e-6).delta(0)`` read ``4e-10`` relative below
the truth (benchmarks/README.md, sessions 42 and 46).

**The identity.**  The subsampled pair (Zhu, Dong & Wang 2022, Theorem 11; the law's
class docstring) is, with the base pair ``(P0, Q0)`` of the base loss ``x``:

* remove: ``P = (1-q) Q0 + q P0``, ``Q = Q0``, ``y = log(1 - q + q e^x)``;
* add: ``P = P0``, ``Q = (1-q) P0 + q Q0``, ``y = -log(1 - q + q e^{-x})``.

A bin ``(a, b]`` of ``y`` is the base bin ``B = (x_a, x_b]`` (the float preimages the
law's own bin masses are taken at), so, exactly,

* remove: ``m - r = q P0(B) - (e^a - 1 + q) Q0(B) = q (P0(B) - e^{x_a} Q0(B))``;
* add: ``m - r = e^a ((e^{-a} - 1 + q) P0(B) - q Q0(B)) = q e^{a - x_a} (P0(B) - e^{x_a}
  Q0(B))``,

``e^{x_a} = (e^a - 1 + q) / q`` being the exact preimage of the node ``a``.  The base bin
is wider than ``h`` by about ``1 / (q e^x)``, so its masses ``P0(B)``, ``Q0(B)`` (normal
CDF differences) carry errors ``q`` times smaller than the subsampled ones, and the
difference cancels over ``2 / (x_b - x_a)`` instead of ``2 / h``.

**The error bound** (:func:`split_numerators` returns it with the value).  Every
operation's error is bounded and added, then the sum is multiplied by 1.01 (second-order
terms; ``u = 2^-53``):

1. The argument ``z = (x -+ mu^2/2) / mu`` of each normal tail: three roundings, so
   ``|z_float - z| <= 2.5 u (|z| + mu / 2)``; it moves ``Phi`` by at most
   ``phi(z) e^{|z| dz} dz``, with ``phi(t) <= min(phi(0), Phi(t) (1 + t^2) / |t|)`` at
   ``t = -|z|`` (Mills' ratio, ``Phi(t) >= phi(t) |t| / (1 + t^2)`` for ``t < 0``;
   Gordon 1941) read from ``ndtr``'s value (a relative error far below the 1.01 of
   the final inflation) and ``e^{|z| dz} <= 1 + 2 |z| dz`` (``|z| dz <= 1``: ``|z| <=
   40`` and ``mu < 10^12``).
2. ``scipy.special.ndtr`` at ``t <= 0`` (the smaller tail is read at every edge: the
   CDF below the mode, the survival function above, ``1 - Phi(t_a) - Phi(t_b)`` for the
   bin across it): **a measured bound, inflated** (SciPy documents none).  Against
   mpmath at 40 digits (26 000 points of ``-38 <= t <= 0``, uniform and geometric) its
   relative error was at most ``4.3 (1 + t^2) u`` (the argument scaling inside ``erfc``
   amplifies by ``t^2``); we allow ``KAPPA (1 + t^2) u`` with ``KAPPA = 16``, for
   ``t >= -37.5`` only.  Below, ``ndtr`` underflows (0 past -37.6): the value itself
   plus ``ABS_FLOOR`` is allowed.  ``tests/test_sgm_split.py`` re-measures on a fresh
   sample and requires at most half the allowance.
3. ``exp`` and ``expm1`` (C library; glibc documents at most 1-2 ulp): ``8 u``
   relative, as in :mod:`~dpacct.accountant.families.gaussian_certified`.
4. Each product, sum and difference: one rounding of its result (``u`` relative).

A caller rounds ``m - r`` up by the bound; the split then puts at least the exact share
on the upper node, and moving P-mass up within a bin raises ``delta(eps) = E_P[(1 -
e^{eps - L})_+]`` at every real ``eps`` (docs/theory/pld.md, "The split at a fine
step").
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

__all__ = ["split_numerators"]

_U = 2.0**-53
#: allowed relative error of ``ndtr(t)``, ``t <= 0``, in units of ``u (1 + t^2)``
#: (measured at most 4.3 against mpmath; module docstring, item 2)
KAPPA = 16.0
#: below this argument ``ndtr`` is not trusted (it underflows to 0 past about -37.6)
T_MIN = -37.5
#: allowed absolute error of ``ndtr(t)`` below :data:`T_MIN` (``Phi(-37.5) < 5e-308``)
ABS_FLOOR = 1e-305
#: allowed relative error of ``exp`` and ``expm1``
EXP_REL = 8.0 * _U
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _base_masses(z: np.ndarray, dz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Normal masses of the bins between the increasing arguments ``z`` (``+-inf``
    allowed), and a bound on each mass's error as ``Phi`` at the exact arguments, ``dz``
    bounding each argument's rounding."""
    with np.errstate(invalid="ignore", over="ignore"):
        t = -np.abs(z)  # the smaller tail at every edge: Phi(z) below 0, Phi(-z) above
        v = special.ndtr(t)
        finite = np.isfinite(t)
        tt = np.where(finite, t, 0.0)
        dzz = np.where(finite, dz, 0.0)
        # phi(t) <= Phi(t) (1 + t^2) / |t| for t < 0 (Mills' ratio) and <= phi(0); the
        # argument's error moves it by at most e^{|t| dz} <= 1 + 2 |t| dz (|t| dz <= 1)
        with np.errstate(divide="ignore"):
            phi = np.minimum(_INV_SQRT_2PI, v * (1.0 + tt * tt) / np.abs(tt))
        moved = 1.01 * phi * (1.0 + 2.0 * np.abs(tt) * dzz) * dzz
        ev = np.where(
            t >= T_MIN, KAPPA * _U * (1.0 + tt * tt) * v + moved, v + ABS_FLOOR
        )
        ev = np.where(finite, ev, 0.0)  # Phi(-inf) = 0 exactly
    za, zb = z[:-1], z[1:]
    va, vb = v[:-1], v[1:]
    left, right = zb <= 0.0, za >= 0.0
    mass = np.where(left, vb - va, np.where(right, va - vb, (1.0 - va) - vb))
    # the difference's rounding; across the mode two roundings of values below 1
    err = ev[:-1] + ev[1:] + np.where(left | right, _U * np.abs(mass), 2.0 * _U)
    return mass, err


def split_numerators(law: Any, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``m - r`` of every bin of a Poisson-subsampled Gaussian law, and error bounds.

    ``m`` is the bin's P-mass and ``r = e^{a_j} Q((a_j, a_{j+1}])`` its Q-mass scaled by
    its left edge, both of the bin whose base-loss edges are the law's float preimages of
    ``edges`` (the bin the law's own :meth:`bin_masses` measures), computed from the base
    bin (the identity and the bound: module docstring).

    Parameters
    ----------
    law : PoissonSubsampledLossLaw
        A law over a Gaussian base (``law.base.mu``), ``sample_rate < 1``.
    edges : numpy.ndarray
        Finite increasing bin edges of the subsampled loss.

    Returns
    -------
    d, err : numpy.ndarray
        The float value of ``m - r`` per bin and a bound on ``|d - (m - r)|`` (non-finite
        where the value overflows: the caller must not use those bins).

    Examples
    --------
    >>> from dpacct.accountant.laws.loss_law import GaussianLossLaw, PoissonSubsampledLossLaw
    >>> law = PoissonSubsampledLossLaw(GaussianLossLaw(mu=0.2), 1e-6, "remove")
    >>> edges = np.arange(-400, 2401) * 1.862645149230957e-09  # session 42's open grid
    >>> d, err = split_numerators(law, edges)
    >>> m, nq = law.bin_masses(edges)
    >>> bulk = m > 1e-4 * m.max()
    >>> float(np.max(err[bulk] / d[bulk])) < 1e-7  # the bound, relative to the numerator
    True
    >>> old = m - np.exp(edges[:-1]) * nq  # the difference of the law's masses
    >>> float(np.median(np.abs(old[bulk] - d[bulk]) / d[bulk])) > 1e-7  # off by far more
    True
    """
    e = np.asarray(edges, dtype=float)
    q, mu = float(law.sample_rate), float(law.base.mu)
    x = law._preimage(e)[0]
    shift = 0.5 * mu**2
    a = e[:-1]
    with np.errstate(invalid="ignore", over="ignore"):
        masses = []
        for sign in (1.0, -1.0):  # P0 = N(mu^2/2, mu^2), Q0 = N(-mu^2/2, mu^2)
            z = (x - sign * shift) / mu
            masses.append(_base_masses(z, 2.5 * _U * (np.abs(z) + 0.5 * mu)))
        (p0, ep), (q0, eq) = masses
        if law.direction == "remove":
            em1 = np.expm1(a)
            k = em1 + q  # e^a - (1 - q)
            ek = EXP_REL * np.abs(em1) + _U * np.abs(k)
            d = q * p0 - k * q0
            err = q * ep + np.abs(k) * eq + ek * (np.abs(q0) + eq)
            err += 3.0 * _U * (q * np.abs(p0) + np.abs(k * q0))
            return d, 1.01 * err
        em1 = np.expm1(-a)
        k = em1 + q  # e^{-a} - (1 - q)
        ek = EXP_REL * np.abs(em1) + _U * np.abs(k)
        inner = k * p0 - q * q0
        ei = np.abs(k) * ep + ek * (np.abs(p0) + ep) + q * eq
        ei += 3.0 * _U * (np.abs(k * p0) + q * np.abs(q0))
        ea = np.exp(a)
        d = ea * inner
        err = 1.01 * ea * ei + (EXP_REL + _U) * ea * np.abs(inner)
        return d, 1.01 * err
