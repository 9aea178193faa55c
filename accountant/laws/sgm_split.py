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
5. **Narrow bins by quadrature.**  The CDF differences still cancel over ``2 / (x_b -
   x_a)``, and item 2's allowance is relative to the tail value ``Phi(t)``, not to the
   bin's mass: on DP-SGD's grids (``q e^x`` near one, the base bin barely wider than the
   step) that bound cost ``8.8e-10`` relative on epsilon, ``2.9e-8`` at ``q = 1 - 1e-9``.
   So where the bin is narrow, ``Delta = x_b - x_a <= R / 8`` with ``R = min(mu, 1,
   1 / (|alpha| + 1))``, ``alpha = z_a / mu``, and ``|z_a| <= 37``, the cancelling part is
   taken as one integral of a positive integrand,
   ``P0(B) - e^{x_a} Q0(B) = phi(z_a) / mu int_0^Delta (1 - e^{-t}) e^{-alpha t - t^2 /
   (2 mu^2)} dt``, by the :data:`ORDER` = 8-point Gauss-Legendre rule (nodes and
   weights from 40-digit mpmath, rounded once).  Its truncation error is at most
   ``3.55e-10 Delta^17 M / R^16`` (the rule's remainder with Cauchy's estimate of the
   16th derivative on disks of radius ``R``, ``M <= 17.5 R`` the integrand's modulus
   there), against an integral of at least ``0.42 Delta^2``: below ``4.2e-22`` relative,
   allowed :data:`TRUNCATION`.  The rounding: each node's integrand ``~21 u`` (``expm1``,
   ``exp``, the node's rounding times ``|t g'/g| <= 1.15``), the sum of eight positive
   terms ``8 u``, ``phi(z_a)`` ``(10 + 1.5 z^2) u`` and ``z_a``'s own rounding ``|z| dz``,
   ``Delta``'s ``2 u``: allowed ``(64 + 8 z^2 + 2 |z| mu) u`` relative.  The node ``a``'s
   exact preimage differs from the float ``x_a``; that part, ``(q e^{x_a} - (e^a - 1 +
   q)) Q0(B)`` (remove; add likewise with ``P0(B)``), is a small correction bounded term
   by term as above.  Measured on six (sigma, q, step) grids against 50-digit truths: the
   error is at most 16 % of the bound, the bulk's relative error ``1e-13`` (it was
   ``4e-9`` for the CDF differences on DP-SGD's fine grid).

Bins outside item 5's range (the wide bins of the tails, where the cancellation is mild)
keep the CDF differences and items 1-4.  A caller rounds ``m - r`` up by the bound; the
split then puts at least the exact share on the upper node, and moving P-mass up within
a bin raises ``delta(eps) = E_P[(1 - e^{eps - L})_+]`` at every real ``eps``
(docs/theory/pld.md, "The split at a fine step").
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
#: Gauss-Legendre order of the narrow bins' quadrature (module docstring, item 5)
ORDER = 8
#: its truncation error, relative, on the bins it is used for (derived: below 4.2e-22)
TRUNCATION = 1e-20


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


#: the 8-point Gauss-Legendre rule on ``[0, 1]``: nodes ``(1 + x_i) / 2`` and weights
#: ``w_i / 2``, each the float nearest its 40-digit value (Newton-refined in mpmath:
#: ``tests/test_sgm_split.py`` recomputes them; held as literals, an mpmath start-up cost
#: 0.25 s on the first grid)
_NODES = np.array([0.019855071751231884, 0.10166676129318664, 0.2372337950418355,
                   0.4082826787521751, 0.591717321247825, 0.7627662049581645,
                   0.8983332387068134, 0.9801449282487681])
_WEIGHTS = np.array([0.05061426814518813, 0.11119051722668724, 0.15685332293894363,
                     0.181341891689181, 0.181341891689181, 0.15685332293894363,
                     0.11119051722668724, 0.05061426814518813])


def _narrow(xa: np.ndarray, xb: np.ndarray, za: np.ndarray, mu: float):
    """``P0(B) - e^{x_a} Q0(B) = int_B (1 - e^{x_a - x}) dP0(x)`` by quadrature on the bins
    where it is certified (module docstring, item 5): ``(value, relative error bound,
    usable)``; ``za = (x_a - mu^2/2) / mu`` as computed."""
    if not mu * mu > 0.0:  # mu below 1e-154: its square underflows, no narrow bins
        return np.zeros(xa.shape), np.zeros(xa.shape), np.zeros(xa.shape, dtype=bool)
    with np.errstate(invalid="ignore", over="ignore"):
        delta = xb - xa
        alpha = za / mu
        reach = np.minimum(min(mu, 1.0), 1.0 / (np.abs(alpha) + 1.0))
        ok = np.isfinite(xa) & np.isfinite(xb) & (delta <= reach / 8.0) & (np.abs(za) <= 37.0)
        dd, al, zz = (np.where(ok, v, 0.0) for v in (delta, alpha, za))
        beta = 0.5 / (mu * mu)
        acc = np.zeros(dd.shape)
        for h, w in zip(_NODES, _WEIGHTS, strict=True):  # the rule's nodes, over all bins
            t = dd * h
            acc += w * (-np.expm1(-t)) * np.exp(-t * (al + beta * t))
        d0 = (_INV_SQRT_2PI / mu) * np.exp(-0.5 * zz * zz) * (dd * acc)
    rel = (64.0 + 8.0 * zz * zz + 2.0 * np.abs(zz) * mu) * _U + TRUNCATION
    return d0, rel, ok


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
    a, xa = e[:-1], x[:-1]
    with np.errstate(invalid="ignore", over="ignore"):
        masses, zs = [], []
        for sign in (1.0, -1.0):  # P0 = N(mu^2/2, mu^2), Q0 = N(-mu^2/2, mu^2)
            z = (x - sign * shift) / mu
            zs.append(z)
            masses.append(_base_masses(z, 2.5 * _U * (np.abs(z) + 0.5 * mu)))
        (p0, ep), (q0, eq) = masses
        # narrow bins: the cancelling part P0(B) - e^{x_a} Q0(B) by quadrature, the rest
        # (the float x_a is not the exact preimage of the node a) a small correction
        d0, rel, ok = _narrow(xa, x[1:], zs[0][:-1], mu)
        e0 = rel * np.abs(d0)
        sign = 1.0 if law.direction == "remove" else -1.0
        em1 = np.expm1(sign * a)
        k = em1 + q  # remove: e^a - (1 - q); add: e^{-a} - (1 - q)
        ek = EXP_REL * np.abs(em1) + _U * np.abs(k)
        ex = q * np.exp(sign * xa)  # q e^{+-x_a}
        ok &= np.isfinite(ex)  # past e^709 the bin keeps the differences
        corr = np.where(ok, k - ex, 0.0) if sign < 0 else np.where(ok, ex - k, 0.0)
        ec = (EXP_REL + _U) * ex + ek + _U * np.abs(corr)
        if law.direction == "remove":
            d = np.where(ok, q * d0 + corr * q0, q * p0 - k * q0)
            err_n = q * e0 + np.abs(corr) * eq + ec * (np.abs(q0) + eq)
            err_n += 3.0 * _U * (q * np.abs(d0) + np.abs(corr * q0))
            err = q * ep + np.abs(k) * eq + ek * (np.abs(q0) + eq)
            err += 3.0 * _U * (q * np.abs(p0) + np.abs(k * q0))
            return d, 1.01 * np.where(ok, err_n, err)
        inner = np.where(ok, ex * d0 + corr * p0, k * p0 - q * q0)
        ei_n = ex * e0 + (EXP_REL + 2.0 * _U) * ex * np.abs(d0)
        ei_n += np.abs(corr) * ep + ec * (np.abs(p0) + ep)
        ei_n += 3.0 * _U * (ex * np.abs(d0) + np.abs(corr * p0))
        ei = np.abs(k) * ep + ek * (np.abs(p0) + ep) + q * eq
        ei += 3.0 * _U * (np.abs(k * p0) + q * np.abs(q0))
        ei = np.where(ok, ei_n, ei)
        ea = np.exp(a)
        d = ea * inner
        err = 1.01 * ea * ei + (EXP_REL + _U) * ea * np.abs(inner)
        return d, 1.01 * err
