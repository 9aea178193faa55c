"""One epoch's k = 2 remove direction from two bounds at once: the lower convex envelope.

Two certified upper bounds on the remove-direction hockey-stick curve
``h(gamma) = H_gamma(P_2 || Q)`` of one 2-of-T epoch are at hand, at every
``gamma >= 0``:

* ``g_B``, the direct (max, sum) atoms of Proposition 3
  (:func:`~dpacct.accountant.transformers.random_allocation_k2.k2_remove_atoms`): tight
  where delta lives (large ``gamma``), loose in the bulk, where the Cauchy-Schwarz
  excess (a few per cent of P-mass at sigma 1, T 100) shifts every epoch's loss up;
* ``g_A``, Proposition 1's two blocks (one-of-``floor(T/2)`` and one-of-``ceil(T/2)``,
  each :class:`~dpacct.accountant.transformers.random_allocation_pld.AllocationEpochPair`,
  a convex-order dominating pair), composed: tight in the bulk, looser in the tail.

``h`` is convex, so it lies below the greatest convex minorant ``psi`` of
``min(g_A, g_B)`` (with ``psi(0) = 1 = h(0)``), and ``psi`` is the hockey-stick curve
of a pair of probability measures, which dominates the epoch's remove direction at
every ``gamma >= 0`` and is below both bounds there; such pairs compose over epochs
(docs/theory/allocation_k_of_t.md, "Several epochs: the envelope of two bounds",
Proposition 5).  One epoch gains nothing at small delta (``psi = g_B`` there); several
do: sigma 1, T 100, E 5, delta 1e-6: 2.9024 against the blocks' 2.9068 and the direct
atoms' 3.0003.

The normal-CDF cell bounds with their error model (``_err``, ``_cells_upper``,
``_cells_lower``) live here and serve :mod:`.random_allocation_k2` too.

Numerics, each on the safe side: the blocks' losses are rounded up onto the atoms' log
grid (``H_gamma = sum p (1 - gamma e^{-l})_+`` grows with ``l``) and convolved with the
engine's rigorous kernel (estimate plus per-entry error bound); both curves are
evaluated from suffix sums with a relative margin covering the sums' round-off; the
envelope is taken by a monotone chain through points of the bounds' minimum; any such
chain is above ``h`` (``h`` is convex and below the minimum at the chain's vertices), so
the chain's float decisions do not matter; whatever the pair's own curve (evaluated
with a downward margin) falls short of the chain at its vertices is added to the
pair's mass at loss ``+inf`` (both are linear between the vertices).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..laws.loss_law import AtomicLossLaw, GaussianLossLaw
from ..pld.pld_fft import _bounded_convolve
from .random_allocation_pld import AllocationEpochPair

__all__: list[str] = []

#: relative margin on a suffix-sum evaluation of a hockey-stick curve, beyond the
#: sums' own round-off bound: the Q-masses' division and the double rounding of the
#: inputs (a few double unit roundoffs)
_SUM_MARGIN = 1e-15
#: losses below this are rounded up to it in the blocks' composed law (sound: a loss
#: rounded up only raises every hockey-stick value), which bounds the grid's length
_LOW_LOSS = -12.0

#: relative error allowed to scipy's ndtr / log_ndtr per unit of (5 + x^2) (a few ulps,
#: and the rounding of the argument x: as in the sum statistic's ``_term_bounds``)
_ETA = 1e-15


def _err(z: np.ndarray) -> np.ndarray:
    """Relative error bound of ndtr at argument ``z`` (the error model of
    :mod:`.random_allocation_k2`, 2.)."""
    zz = np.where(np.isfinite(z), z * z, 0.0)
    return _ETA * (5.0 + zz)


def _cells_upper(zlo: np.ndarray, zhi: np.ndarray) -> np.ndarray:
    """Upper bounds on ``Phi(zhi) - Phi(zlo)`` (``zlo <= zhi``): the difference taken on
    the side of the median where it does not cancel, plus the error of both ends (each
    at most ``_err`` relative to the CDF at the near end)."""
    left = zhi <= 0.0
    with np.errstate(invalid="ignore"):
        near = np.where(left, special.ndtr(zhi), special.ndtr(-zlo))
        mass = np.where(
            left, special.ndtr(zhi) - special.ndtr(zlo), special.ndtr(-zlo) - special.ndtr(-zhi)
        )
    x = np.where(left, zhi, -zlo)
    return np.maximum(mass, 0.0) + 2.0 * _err(x) * near + 1e-300


def _cells_lower(zlo: np.ndarray, zhi: np.ndarray) -> np.ndarray:
    """Lower bounds on ``Phi(zhi) - Phi(zlo)``, as :func:`_cells_upper`."""
    up = _cells_upper(zlo, zhi) - 1e-300
    left = zhi <= 0.0
    near = np.where(left, special.ndtr(zhi), special.ndtr(-zlo))
    x = np.where(left, zhi, -zlo)
    return np.maximum(up - 4.0 * _err(x) * near, 0.0)


def _gaussian_grid_up(mu: float, dlog: float) -> tuple[int, np.ndarray, float]:
    """:func:`_grid_up` of the Gaussian pair's remove law (one-step block): under ``P`` the
    loss is ``N(mu^2/2, mu^2)``; each cell ``(l_{i-1}, l_i]`` of the grid's 12 standard
    deviations either side (from :data:`_LOW_LOSS` up) takes an upper bound on its mass
    at ``l_i``, everything below at the first node, everything above at ``+inf``."""
    mean, sd = 0.5 * mu * mu, mu
    lo = math.ceil(max(_LOW_LOSS, mean - 12.0 * sd) / dlog)
    hi = math.ceil((mean + 12.0 * sd) / dlog)
    nodes = (lo + np.arange(hi - lo + 1)) * dlog
    z = np.concatenate(([-np.inf], (nodes - mean) / sd, [np.inf]))
    mass = _cells_upper(z[:-1], z[1:]) * (1.0 + 1e-12)  # nodes' rounding: below 1e-12
    return lo, mass[:-1], float(min(1.0, mass[-1]))


def _grid_up(law, dlog: float) -> tuple[int, np.ndarray, float]:
    """``(first index, P-masses, P(+inf))`` of ``law``'s remove direction with every loss
    rounded up onto ``dlog * Z`` (and to at least :data:`_LOW_LOSS`)."""
    if isinstance(law, GaussianLossLaw):
        return _gaussian_grid_up(law.mu, dlog)
    keep = law.p > 0
    loss = np.maximum(law.losses[keep], _LOW_LOSS)
    idx = np.ceil(loss / dlog + 1e-6).astype(np.int64)  # + 1e-6: float error of the ratio
    lo = int(idx.min())
    arr = np.bincount(idx - lo, weights=law.p[keep]) * (1.0 + 1e-12)
    return lo, arr, float(law.inf_mass)


def blocks_remove_atoms(
    laws: list[AtomicLossLaw], dlog: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """``(values, P-masses, P(+inf))`` of an upper bound on the remove direction of the
    product of the pairs whose remove laws are ``laws``: each rounded up onto the log grid
    of step ``dlog``, convolved (estimate plus the kernel's rigorous error bound).
    Values are likelihood ratios ``e^loss``, each at least the product's."""
    lo, arr, inf = _grid_up(laws[0], dlog)
    for law in laws[1:]:
        lo2, arr2, inf2 = _grid_up(law, dlog)
        est, err = _bounded_convolve(arr, arr2)
        arr = np.maximum(est + err, 0.0)
        lo += lo2
        inf = min(1.0, inf + inf2)  # P(either at +inf) <= the sum
    nz = np.flatnonzero(arr > 0.0)
    # exp of the grid point, rounded up: the argument's two roundings (2u of it) taken
    # up, numpy's exp within four ulps (8u) and the product inside 2^-48
    arg = (lo + nz) * dlog
    vals = np.exp(arg + 2.0**-51 * np.abs(arg)) * (1.0 + 2.0**-48)
    return vals, arr[nz], inf


def _curve(vals: np.ndarray, pm: np.ndarray, inf: float, gam: np.ndarray, side: int):
    """Bound on ``sum_i pm_i (1 - gam / vals_i)_+ + inf`` at every ``gam`` (``vals``
    sorted ascending), above (``side = 1``) or below (``side = -1``): suffix sums of P-
    and Q-mass in extended precision (each sum's round-off at most ``(n + 4)`` of its
    unit roundoffs, relative), then rounded to double with a margin that also covers
    the Q-masses' division (one double roundoff each)."""
    ld = np.longdouble
    qm = pm / vals
    sp = np.concatenate((np.cumsum(pm[::-1].astype(ld))[::-1], [ld(0)]))
    sq = np.concatenate((np.cumsum(qm[::-1].astype(ld))[::-1], [ld(0)]))
    i = np.searchsorted(vals, gam, side="right")
    a, b = sp[i], gam.astype(ld) * sq[i]
    margin = (float(np.finfo(ld).eps) * (vals.size + 4) + _SUM_MARGIN) * (a + b)
    out = (a - b + side * margin).astype(float)
    out = out * (1.0 + side * 4e-16) + side * 1e-300  # the conversion
    return (np.maximum(out, 0.0) if side > 0 else out) + inf


def _curve_up(vals: np.ndarray, pm: np.ndarray, inf: float, gam: np.ndarray) -> np.ndarray:
    """Upper bound on the curve of :func:`_curve`."""
    return _curve(vals, pm, inf, gam, 1)


def _curve_down(vals: np.ndarray, pm: np.ndarray, inf: float, gam: np.ndarray) -> np.ndarray:
    """Lower bound on the curve of :func:`_curve`."""
    return _curve(vals, pm, inf, gam, -1)


def _lower_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the lower convex hull of the points ``(x, y)`` (``x`` increasing):
    Andrew's monotone chain.  Float decisions do not matter for soundness: any chain
    through the points is above a convex function below them (module docstring)."""
    hull: list[int] = []
    xs, ys = x.tolist(), y.tolist()
    for i in range(len(xs)):
        xi, yi = xs[i], ys[i]
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            if (ys[b] - ys[a]) * (xi - xs[a]) >= (yi - ys[a]) * (xs[b] - xs[a]):
                hull.pop()
            else:
                break
        hull.append(i)
    return np.asarray(hull)


def envelope_remove_law(
    direct: tuple[np.ndarray, np.ndarray, float],
    blocks: tuple[np.ndarray, np.ndarray, float],
) -> AtomicLossLaw:
    """The remove law of the pair whose hockey-stick curve is the lower convex envelope of
    the two bounds (module docstring; Proposition 5 of docs/theory/allocation_k_of_t.md).

    Parameters
    ----------
    direct : tuple
        ``(values, Q-masses, charge)`` of
        :func:`~dpacct.accountant.transformers.random_allocation_k2.k2_remove_atoms`.
    blocks : tuple
        ``(values, P-masses, P(+inf))`` of :func:`blocks_remove_atoms`.

    Returns
    -------
    AtomicLossLaw
        A probability pair (P-mass 1 up to the charged round-off), whose
        ``H_gamma`` is at most both bounds' (up to that round-off) and at least the
        epoch's at every ``gamma >= 0``.

    Examples
    --------
    >>> import numpy as np
    >>> blocks = (np.array([0.5, 2.0]), np.array([0.25, 0.75]), 0.0)  # Q: 1/2, 3/8
    >>> direct = (np.array([0.5, 2.1]), np.array([0.5, 0.375]), 0.0)
    >>> law = envelope_remove_law(direct, blocks)
    >>> bool(abs(float(law.p.sum()) + law.inf_mass - 1.0) < 1e-6)
    True
    """
    vd, qd, kd = direct
    od = np.argsort(vd)
    vd, pd = vd[od], (qd * vd)[od]
    vb, pb, kb = blocks
    ob = np.argsort(vb)
    vb, pb = vb[ob], pb[ob]
    pts = np.unique(np.concatenate(([0.0], vd, vb)))
    f = np.minimum(_curve_up(vd, pd, kd, pts), _curve_up(vb, pb, kb, pts))
    f[0] = 1.0  # h(0) = E_Q[Lambda] = 1 exactly
    f = np.minimum.accumulate(f)  # h is non-increasing: a smaller later value bounds it
    hull = _lower_hull(pts, f)
    x, y = pts[hull], f[hull]
    s = np.diff(y) / np.diff(x)
    # psi = y_last + sum_j qv_j (x_j - gamma)_+ : slope increments at the vertices
    qv = np.empty(x.size - 1)
    qv[:-1] = s[1:] - s[:-1]
    qv[-1] = -s[-1]
    qv = np.maximum(qv, 0.0)
    xv = x[1:]
    p = qv * xv
    inf = float(y[-1])
    # what the pair's own curve falls short of the chosen vertices (both are linear
    # between them; any vertices on f give a curve above h, convex and <= f at them)
    short = float(np.max(y - _curve_down(xv, p, inf, x)))
    inf = min(1.0, inf + max(short, 0.0) * (1.0 + 1e-6))
    q_used = float(qv.sum())
    # losses rounded up: numpy's log within four ulps (8u of it), then one ulp more
    log_x = np.log(xv)
    losses = np.nextafter(log_x + 2.0**-49 * np.abs(log_x), np.inf)
    return AtomicLossLaw(
        losses=losses, p=p, inf_mass=inf, q_neg_inf_mass=min(1.0, max(0.0, 1.0 - q_used))
    )


def k2_envelope_law(
    sigma: float, t: int, direct, dlog: float, progress: bool = False
) -> AtomicLossLaw:
    """The envelope law of one 2-of-``t`` epoch from the direct atoms ``direct`` and the
    blocks of Proposition 1 (module docstring), on the log grid of step ``dlog``."""

    half, rest = divmod(t, 2)
    sizes = [half] * (2 - rest) + [half + 1] * rest
    laws = [AllocationEpochPair(sigma, m, progress=progress)._loss_laws()[0] for m in sizes]
    return envelope_remove_law(direct, blocks_remove_atoms(laws, dlog))

