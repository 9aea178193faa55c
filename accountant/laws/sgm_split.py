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
   (2 mu^2)} dt``, by a Gauss-Legendre rule of :data:`RULES` (nodes and weights from
   40-digit mpmath, rounded once): 4 points where ``Delta / R <= RHO[4] = 0.014`` (most
   bins of DP-SGD's grids), else 7.  The ``n``-point rule's remainder (Abramowitz &
   Stegun 25.4.30) with Cauchy's estimate of the ``2n``-th derivative on disks of radius
   ``R`` (``M <= 17.5 R`` the integrand's modulus there), against an integral of at least
   ``0.42 Delta^2``, is at most :func:`truncation_coefficient` ``(n) (Delta / R)^(2n-1)``
   relative: below :data:`TRUNCATION` ``= u`` on the bins each rule is used for (session
   46's first version took 8 points everywhere, below ``4.2e-22``).  The rounding: each
   node's integrand ``~21 u`` (``expm1``, ``exp``, the node's rounding times ``|t g'/g|
   <= 1.15``), the sum of at most eight positive terms ``8 u``, ``phi(z_a)`` ``(10 + 1.5
   z^2) u`` and ``z_a``'s own rounding ``|z| dz``, ``Delta``'s ``2 u``: allowed ``(64 +
   8 z^2 + 2 |z| mu) u`` relative.  Measured on six (sigma, q, step) grids against
   50-digit truths: the error is at most 16 % of the bound, the bulk's relative error
   ``1e-13`` (it was ``4e-9`` for the CDF differences on DP-SGD's fine grid).
6. **The float node's preimage, on narrow bins.**  The node ``a``'s exact preimage
   differs from the float ``x_a``: with ``g = q e^{x_a} - (e^a - 1 + q)`` (remove; add:
   ``e^{-x}`` and ``e^{-a}``), ``m - r = q D + g Q0(B)`` (remove) and ``m - r = q e^{a -
   x_a} D - e^a g P0(B)`` (add), ``D = P0(B) - e^{x_a} Q0(B)`` the integral of item 5.
   ``g`` is taken as ``q e^{a} expm1(x_a - a) - (1 - q) expm1(a)`` (add: signs flipped),
   which does not cancel at ``q`` near one (as ``q e^{x_a} - (e^a - 1 + q)`` it lost
   ``8 u e^a`` to ``exp``'s rounding: ``3e-8`` on an online ledger at ``q = 1 - 1e-9``),
   with error at most ``(19 + |v|) u |t1| + 10 u |t2| + u |g|`` (``v = x_a - a``: its
   subtraction's rounding moves ``expm1`` by at most ``(1 + |v|) u`` relative).  The
   term ``g Q0(B)`` (resp. ``e^a g P0(B)``) is not evaluated: its size goes into the
   error, with ``Q0(B) <= e^{-x_a} P0(B)`` (the densities' ratio on ``B``) and ``P0(B) <=
   1.2 (Delta / mu) phi(z_a)`` (the density varies by at most ``e^{|alpha| Delta} <=
   e^{1/8}`` over the bin, ``z_a``'s rounding by ``e^{0.01}``, required of a narrow
   bin): no normal CDF is evaluated on a narrow bin (session 47; the CDF differences had
   been taken for this correction, a third of the split's cost).  Results below the
   normal range get :data:`SUBNORMAL` more.

Bins outside item 5's range (the wide bins of the tails, where the cancellation is mild)
keep the CDF differences and items 1-4, evaluated at their edges only.  A caller rounds
``m - r`` up by the bound; the split then puts at least the exact share on the upper
node, and moving P-mass up within a bin raises ``delta(eps) = E_P[(1 - e^{eps -
L})_+]`` at every real ``eps`` (docs/theory/pld.md, "The split at a fine step").
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..numerics import scipy_special as special

__all__ = ["cell_numerators", "split_numerators", "truncation_coefficient", "upper_shares"]

_U = 2.0**-53
#: allowed relative error of ``ndtr(t)``, ``t <= 0``, in units of ``u (1 + t^2)``
#: (measured at most 4.3 against mpmath; module docstring, item 2)
KAPPA = 16.0
#: below this argument ``ndtr`` is not trusted (it underflows to 0 past about -37.6)
T_MIN = -37.5
#: allowed absolute error of ``ndtr(t)`` below :data:`T_MIN` (``Phi(-37.5) < 5e-308``)
ABS_FLOOR = 1e-305
#: absolute allowance for the operations whose results fall below the normal range
#: (``2^-1022``; a relative bound does not hold there), irrelevant to any delta
SUBNORMAL = 1e-300
#: allowed relative error of ``exp`` and ``expm1``
EXP_REL = 8.0 * _U
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
#: allowed relative truncation error of the narrow bins' quadrature (module docstring,
#: item 5; a hundredth of its rounding allowance ``64 u``)
TRUNCATION = _U


def _tails(z: np.ndarray, dz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``Phi(-|z|)`` at every argument (``+-inf`` allowed) and a bound on its error as
    ``Phi`` at the exact argument, ``dz`` bounding each argument's rounding (module
    docstring, items 1-2)."""
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        t = -np.abs(z)  # the smaller tail at every edge: Phi(z) below 0, Phi(-z) above
        v = special.ndtr(t)
        finite = np.isfinite(t)
        tt = np.where(finite, t, 0.0)
        dzz = np.where(finite, dz, 0.0)
        # phi(t) <= Phi(t) (1 + t^2) / |t| for t < 0 (Mills' ratio) and <= phi(0); the
        # argument's error moves it by at most e^{|t| dz} <= 1 + 2 |t| dz (|t| dz <= 1)
        phi = np.minimum(_INV_SQRT_2PI, v * (1.0 + tt * tt) / np.abs(tt))
        moved = 1.01 * phi * (1.0 + 2.0 * np.abs(tt) * dzz) * dzz
        ev = np.where(t >= T_MIN, KAPPA * _U * (1.0 + tt * tt) * v + moved, v + ABS_FLOOR)
        ev = np.where(finite, ev, 0.0)  # Phi(-inf) = 0 exactly
    return v, ev


def _masses(za, zb, va, vb, ea, eb) -> tuple[np.ndarray, np.ndarray]:
    """Normal masses of the bins ``(za, zb]`` from :func:`_tails` at their ends, and
    bounds on their errors."""
    left, right = zb <= 0.0, za >= 0.0
    mass = np.where(left, vb - va, np.where(right, va - vb, (1.0 - va) - vb))
    # the difference's rounding; across the mode two roundings of values below 1
    err = ea + eb + np.where(left | right, _U * np.abs(mass), 2.0 * _U)
    return mass, err


#: Gauss-Legendre rules on ``[0, 1]`` by their order ``n``: nodes ``(1 + x_i) / 2`` and
#: weights ``w_i / 2``, each the float nearest its 40-digit value (Newton-refined in
#: mpmath: ``tests/test_sgm_split.py`` recomputes them; held as literals, an mpmath
#: start-up cost 0.25 s on the first grid)
RULES = {
    4: (np.array([0.06943184420297371, 0.33000947820757187, 0.6699905217924281,
                  0.9305681557970263]),
        np.array([0.17392742256872692, 0.32607257743127305, 0.32607257743127305,
                  0.17392742256872692])),
    7: (np.array([0.025446043828620736, 0.12923440720030277, 0.2970774243113014, 0.5,
                  0.7029225756886985, 0.8707655927996972, 0.9745539561713793]),
        np.array([0.06474248308443485, 0.13985269574463832, 0.19091502525255946,
                  0.2089795918367347, 0.19091502525255946, 0.13985269574463832,
                  0.06474248308443485])),
}


def truncation_coefficient(n: int) -> float:
    """``C_n`` with the ``n``-point rule's relative truncation error at most ``C_n (Delta /
    R)^(2n - 1)`` on a narrow bin (module docstring, item 5): the remainder
    ``Delta^(2n+1) (n!)^4 / ((2n+1) ((2n)!)^3) f^(2n)(xi)`` (Abramowitz & Stegun 25.4.30)
    with Cauchy's ``|f^(2n)| <= (2n)! M / R^(2n)``, ``M <= 17.5 R``, over an integral of at
    least ``0.42 Delta^2``."""
    return 17.5 / 0.42 * math.factorial(n) ** 4 / (
        (2 * n + 1) * math.factorial(2 * n) ** 2
    )


#: the largest ``Delta / R`` at which each rule's truncation is below :data:`TRUNCATION`
#: (0.0142 for 4 points, 0.19 for 7: every narrow bin, ``Delta / R <= 1/8``)
RHO = {n: 0.99 * (TRUNCATION / truncation_coefficient(n)) ** (1.0 / (2 * n - 1))
       for n in RULES}


def _rule(n: int, dd: np.ndarray, al: np.ndarray, beta: float) -> np.ndarray:
    """``int_0^1 (1 - e^{-t}) e^{-alpha t - beta t^2} |_{t = Delta s} ds`` by the
    ``n``-point rule, per bin."""
    acc = np.zeros(dd.shape)
    for h, w in zip(*RULES[n], strict=True):  # the rule's nodes, over all bins at once
        t = dd * h
        acc += w * (-np.expm1(-t)) * np.exp(-t * (al + beta * t))
    return acc


def _narrow(delta: np.ndarray, za: np.ndarray, mu):
    """``D = P0(B) - e^{x_a} Q0(B) = int_B (1 - e^{x_a - x}) dP0(x)`` by quadrature on
    the bins where it is certified (module docstring, item 5): ``(value, relative error
    bound, usable, phi(z_a))``; ``delta`` the base bins' widths, ``za = (x_a - mu^2/2) /
    mu`` as computed, ``mu`` a float or one per bin; ``phi(z_a)`` the normal density
    there as computed (zero where not usable)."""
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        mu = np.asarray(mu, dtype=float)
        alpha = za / mu
        reach = np.minimum(np.minimum(mu, 1.0), 1.0 / (np.abs(alpha) + 1.0))
        ok = np.isfinite(delta) & (delta <= reach / 8.0) & (np.abs(za) <= 37.0)
        ok &= mu * mu > 0.0  # mu below 1e-154: its square underflows, no narrow bins
        # z_a's rounding moves phi(z_a) by at most e^{0.01} (item 6's bound of P0(B))
        ok &= 2.5 * _U * np.abs(za) * (np.abs(za) + 0.5 * mu) <= 0.01
        dd, al, zz = (np.where(ok, v, 0.0) for v in (delta, alpha, za))
        beta = np.where(ok, 0.5 / (mu * mu), 0.0)
        # 4 points where they are enough (most bins of DP-SGD's grids), else 7
        acc = _rule(4, dd, al, beta)
        wider = np.flatnonzero(ok & (delta > RHO[4] * reach))
        if wider.size:
            acc[wider] = _rule(7, dd[wider], al[wider], beta if beta.ndim == 0 else beta[wider])
        phi = _INV_SQRT_2PI * np.exp(-0.5 * zz * zz)
        d0 = (phi / mu) * (dd * acc)
        rel = (64.0 + 8.0 * zz * zz + 2.0 * np.abs(zz) * mu) * _U + TRUNCATION
    return d0, rel, ok, phi


def _core(a, za, delta, v, dv, q, mu, sign: float, rel_extra: float = 0.0):
    """``m - r`` and its error bound on the narrow bins (module docstring, items 5-6):
    ``(d, err, usable)``.

    Per bin: ``a`` its left node, ``za`` P0's standard argument at its left base edge
    ``x_a`` and ``delta`` the base bin's width (as computed), ``v = sign (x_a - a)`` and
    ``dv`` a bound on ``v``'s error; ``q`` and ``mu`` floats or one per bin; ``sign`` +1
    (remove) or -1 (add); ``rel_extra`` more relative error of the quadrature (a caller
    whose ``delta`` or ``mu`` carries more rounding).
    """
    d0, rel, ok, phi = _narrow(delta, za, mu)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        # g = q e^{sign x_a} - (e^{sign a} - 1 + q) as t1 - t2, no cancellation at q ~ 1
        ea = np.exp(sign * a)
        em = np.expm1(v)
        t1 = q * ea * em
        t2 = (1.0 - q) * np.expm1(sign * a)
        g = t1 - t2
        ex = q * ea * (1.0 + em)  # q e^{sign x_a}; v's error moves t1 by ex dv
        eg = 19.0 * _U * np.abs(t1) + 1.01 * ex * dv + 10.0 * _U * np.abs(t2) + _U * np.abs(g)
        # P0(B) <= 1.2 (Delta / mu) phi(z_a) on a narrow bin (item 6)
        pb = 1.2 * delta / mu * phi
        if sign > 0:  # m - r = q D + g Q0(B), Q0(B) <= e^{-x_a} P0(B) = q / ex P0(B)
            d = q * d0
            err = np.abs(d) * (rel + rel_extra + 2.0 * _U) + (np.abs(g) + eg) * pb * (q / ex)
        else:  # m - r = q e^{a - x_a} D - e^a g P0(B), q e^{a - x_a} = q e^v
            d = q * (1.0 + em) * d0
            err = np.abs(d) * (rel + rel_extra + 11.0 * _U + 1.01 * dv)
            err += (np.abs(g) + eg) * pb / ea
        # 1.01: the error terms' own rounding and second-order terms; SUBNORMAL: the
        # relative bounds do not hold for results below the normal range
        err = 1.01 * err + SUBNORMAL
        ok &= np.isfinite(d) & np.isfinite(err)
    return d, err, ok


def _wide(a, p0, ep, q0, eq, q, sign: float) -> tuple[np.ndarray, np.ndarray]:
    """``m - r`` and its error bound from the base bin's normal masses ``p0``, ``q0``
    and their error bounds (module docstring, items 1-4); per bin as :func:`_core`."""
    with np.errstate(invalid="ignore", over="ignore"):
        em1 = np.expm1(sign * a)
        k = em1 + q  # remove: e^a - (1 - q); add: e^{-a} - (1 - q)
        ek = EXP_REL * np.abs(em1) + _U * np.abs(k)
        if sign > 0:  # m - r = q P0(B) - k Q0(B)
            d = q * p0 - k * q0
            err = q * ep + np.abs(k) * eq + ek * (np.abs(q0) + eq)
            err += 3.0 * _U * (q * np.abs(p0) + np.abs(k * q0))
            return d, 1.01 * err
        inner = k * p0 - q * q0  # m - r = e^a (k P0(B) - q Q0(B))
        ei = np.abs(k) * ep + ek * (np.abs(p0) + ep) + q * eq
        ei += 3.0 * _U * (np.abs(k * p0) + q * np.abs(q0))
        ea = np.exp(a)
        d = ea * inner
        err = 1.01 * ea * ei + (EXP_REL + _U) * ea * np.abs(inner)
        return d, 1.01 * err


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
    a, xa, xb = e[:-1], x[:-1], x[1:]
    sign = 1.0 if law.direction == "remove" else -1.0
    with np.errstate(invalid="ignore", over="ignore"):
        zp = (x - 0.5 * mu**2) / mu  # P0's standard argument at each edge
        v = sign * (xa - a)  # x_a is the bin's exact edge: v's one rounding
        d, err, ok = _core(a, zp[:-1], xb - xa, v, _U * np.abs(v), q, mu, sign)
    if not ok.all():  # the wide bins: CDF differences at their edges only
        idx = np.flatnonzero(~ok)
        need = np.zeros(e.size, dtype=bool)
        need[idx] = need[idx + 1] = True
        at = np.flatnonzero(need)
        lo = np.searchsorted(at, idx)  # the bin's left edge in ``at``, its right edge next
        masses = []
        # P0 = N(mu^2/2, mu^2), Q0 = N(-mu^2/2, mu^2)
        for z in (zp[at], (x[at] + 0.5 * mu**2) / mu):
            t, et = _tails(z, 2.5 * _U * (np.abs(z) + 0.5 * mu))
            masses.extend(_masses(z[lo], z[lo + 1], t[lo], t[lo + 1], et[lo], et[lo + 1]))
        d[idx], err[idx] = _wide(a[idx], *masses, q, sign)
    return d, err


def cell_numerators(
    a: np.ndarray, xl: np.ndarray, xr: np.ndarray, s: np.ndarray, q: np.ndarray, add: bool
) -> tuple[np.ndarray, np.ndarray]:
    """``m - r`` of bins of Poisson-subsampled Gaussian cells in data coordinates, and
    error bounds (the vectorised cells of :mod:`~dpacct.accountant.pld.sgm_cells`).

    A cell's remove pair is ``P = (1 - q) N(0, s^2) + q N(1, s^2)``, ``Q = N(0, s^2)``
    with loss ``L(x) = log(1 - q + q e^{l(x)})``, ``l(x) = (x - 1/2) / s^2``; its add
    pair is the swap (loss ``-L(x)``).  That is the law of this module with ``mu = 1/s``
    and base loss ``l(x)`` (remove) or ``-l(x)`` (add): a bin's base bin is the
    interval of ``x`` between the float preimages the cell's masses are taken at, its
    width ``|xr - xl| / s^2`` and P0's standard argument ``(xl - 1) / s`` (remove) or
    ``-xl / s`` (add) at its left base edge.  ``l(xl)`` is computed, not exact: ``v``'s
    error bound takes its rounding (``4 u |l|``), and the quadrature ``4 u`` more for
    ``1 / s`` and the width's roundings.

    Parameters
    ----------
    a : numpy.ndarray
        Each bin's left node (loss).
    xl, xr : numpy.ndarray
        The data preimages of the bin's left and right nodes (remove: ``xl < xr``; add:
        the preimages of ``-a``, ``xl > xr``).
    s, q : numpy.ndarray
        Each bin's cell's noise multiplier and sample rate (``q < 1``).
    add : bool
        The direction.

    Returns
    -------
    d, err : numpy.ndarray
        As :func:`split_numerators`.

    Examples
    --------
    >>> from dpacct.accountant.pld.sgm_cells import _x_of_loss
    >>> a = np.arange(0, 50) * 2.0**-20
    >>> s, q = np.full(51, 2.0), np.full(51, 1e-3)
    >>> x = _x_of_loss(np.append(a, 50 * 2.0**-20), s, q)
    >>> d, err = cell_numerators(a, x[:-1], x[1:], s[:-1], q[:-1], False)
    >>> bool(np.all(err < 1e-9 * d))
    True
    """
    sign = -1.0 if add else 1.0
    with np.errstate(invalid="ignore", over="ignore"):
        mu = 1.0 / s
        s2 = s * s
        la = (xl - 0.5) / s2  # l(xl), four roundings
        v = la - a if not add else la + a  # sign (x_a - a), x_a = sign l(xl)
        dv = 4.0 * _U * np.abs(la) + _U * np.abs(v)
        za = (xl - 1.0) / s if not add else -xl / s
        d, err, ok = _core(a, za, np.abs(xr - xl) / s2, v, dv, q, mu, sign, 4.0 * _U)
        if not ok.all():
            idx = np.flatnonzero(~ok)
            xlo, xhi = (xl[idx], xr[idx]) if not add else (-xl[idx], -xr[idx])
            si, masses = s[idx], []
            # P0: N(1, s^2) (remove) or N(0, s^2) (add); Q0 the other; (x - 1) / s and
            # x / s, each from the exact x: at most two roundings
            shifts = (1.0, 0.0) if not add else (0.0, -1.0)
            for c in shifts:
                zl, zh = (xlo - c) / si, (xhi - c) / si
                tl, el = _tails(zl, 2.02 * _U * np.abs(zl))
                th, eh = _tails(zh, 2.02 * _U * np.abs(zh))
                masses.extend(_masses(zl, zh, tl, th, el, eh))
            qi = q[idx] if np.ndim(q) else q
            d[idx], err[idx] = _wide(a[idx], *masses, qi, sign)
    return d, err


def upper_shares(split: tuple[np.ndarray, np.ndarray], c, m: np.ndarray) -> np.ndarray:
    """Each bin's upper-node share ``(d + err) / c`` from its split numerator, rounded up,
    in ``[0, m]``; a bin whose bound is not finite goes whole onto its upper node.

    ``d`` approximates ``m - r`` within ``err`` (:func:`split_numerators`,
    :func:`cell_numerators`), so the share is at least the exact connect-the-dots share;
    the sum and the quotient are rounded up by ``4 u`` and ``16 u`` (``c = 1 - e^{-h}``'s
    ``expm1``: at most ``8 u``).  Putting more of a bin's P-mass on its upper node raises
    delta at every epsilon (docs/theory/pld.md, "The split at a fine step").  Used by the
    grid (:func:`~dpacct.accountant.pld.grid._upper_from_bins`) and the schedules' cells.

    Parameters
    ----------
    split : tuple of numpy.ndarray
        ``(d, err)`` per bin.
    c : float or numpy.ndarray
        ``1 - e^{-width}``, one for all bins or one per bin.
    m : numpy.ndarray
        Each bin's P-mass.

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> s = upper_shares((np.array([1e-6, np.inf]), np.array([1e-15, 0.0])), 1e-3, np.ones(2))
    >>> bool(s[0] >= (1e-6 + 1e-15) / 1e-3), float(s[1])  # rounded up; the inf bin whole
    (True, 1.0)
    """
    d, err = split
    u = 2.0**-53
    with np.errstate(invalid="ignore", over="ignore"):
        up = (d + err) * (1.0 + 4.0 * u) / c * (1.0 + 16.0 * u)
        return np.where(np.isfinite(up), np.minimum(np.maximum(up, 0.0), m), m)
