"""The connect-the-dots split of a purely atomic loss law, computed atom by atom.

The pessimistic discretisation (:mod:`~dpacct.accountant.pld.grid`) gives a bin
``(a_j, a_{j+1}]`` with P-mass ``m`` and Q-mass ``n`` the upper share

    ``(m - e^{a_j} n) / (1 - e^{-h})``,        ``h`` the step,

which keeps both masses of the bin.  Its numerator is of the order of ``m h``: on a fine
grid it is the difference of two nearly equal numbers, and the rounding of ``m`` and of
``e^{a_j} n`` (a few ulps of the distribution functions they are read from) moves about
``u m / h`` of mass between the two nodes.  At step ``1.6e-11`` (a Poisson-subsampled
pure-DP step at ``q eps0 = 1e-9``) that moved mass down a node, and the upper delta came
out ``1e-6`` relative below the binomial truth (session 41's fuzz).

For a law that is a finite set of atoms ``(y_i, w_i)`` (P-mass ``w_i`` at loss ``y_i``)
the numerator is a sum of positive terms, one per atom,

    ``m - e^{a_j} n = sum_i w_i (1 - e^{a_j - y_i})``,

with no cancellation.  :func:`atom_upper_pmf` splits the atoms one by one, each at its loss
rounded up (its float error bounded) and with the node rounded down, so each share is at
least the exact one, without reading the law's distribution functions (whose rounding
decides the bin of an atom within a few ulps of a node).  A larger upper share only moves
P-mass up, which raises
``delta(eps) = E_P[(1 - e^{eps - L})_+]`` at every real ``eps`` and survives composition
(docs/theory/pld.md, "The split at a fine step").
"""

from __future__ import annotations

import math

import numpy as np

from ..laws.loss_law import AtomicLossLaw, PoissonSubsampledLossLaw, PrivacyLossLaw

__all__ = ["atom_upper_pmf", "finite_atoms"]


_U = 2.0**-53
#: relative error allowed for an atom's loss: the image ``log1p(q expm1(x))`` under
#: subsampling is three calls (numpy's within four ulps each) and a product: 32u
_LOSS_ERR = 32.0 * _U


def finite_atoms(law: PrivacyLossLaw) -> tuple[np.ndarray, np.ndarray, float] | None:
    """The finite atoms ``(losses, P-masses, relative error of the losses)`` of a purely
    atomic law, else ``None``.  An :class:`AtomicLossLaw`'s losses are its definition
    (error 0); an image under subsampling is within ``32u`` of the real one.

    An :class:`AtomicLossLaw`, and a Poisson-subsampled one (any depth): under
    ``"remove"`` the atom ``(x, p)`` of the base goes to ``log1p(q expm1(x))`` with
    P-mass ``(1 - q) p e^{-x} + q p`` and the base's Q-only mass to ``log(1 - q)``;
    under ``"add"`` (the base is the law of ``log(dQ/dP)``) to ``-log1p(q expm1(-x))``
    with P-mass ``p``, and the base's ``+inf`` mass to ``-log(1 - q)``
    (:class:`PoissonSubsampledLossLaw`).

    Examples
    --------
    >>> law = AtomicLossLaw(losses=np.array([-1.0, 1.0]), p=np.array([0.25, 0.75]))
    >>> finite_atoms(law)[0].tolist(), finite_atoms(law)[2]
    ([-1.0, 1.0], 0.0)
    """
    if isinstance(law, AtomicLossLaw):
        return law.losses, law.p, 0.0
    if not isinstance(law, PoissonSubsampledLossLaw):
        return None
    base = finite_atoms(law.base)
    if base is None:
        return None
    x, p, err = base
    q = law.sample_rate
    with np.errstate(over="ignore", under="ignore"):
        if law.direction == "remove":
            y = np.log1p(q * np.expm1(x))
            w = (1.0 - q) * p * np.exp(-x) + q * p
            extra = (math.log1p(-q), (1.0 - q) * law.base.q_neg_inf_mass) if q < 1.0 else None
        else:
            y = -np.log1p(q * np.expm1(-x))
            w = p
            extra = (-math.log1p(-q), law.base.inf_mass) if q < 1.0 else None
    if extra is not None and extra[1] > 0.0:
        y = np.append(y, extra[0])
        w = np.append(w, extra[1])
    keep = np.isfinite(y) & np.isfinite(w) & (w > 0)
    # the image's error, plus the base's carried through h (slope at most 1 in the
    # relative sense near 0, and |h(x)| <= |x| elsewhere)
    return y[keep], w[keep], _LOSS_ERR + 2.0 * err


def atom_upper_pmf(
    law: PrivacyLossLaw, first: int, count: int, step: float
) -> tuple[np.ndarray, float] | None:
    """The pessimistic masses of a purely atomic ``law`` on the ``count`` nodes
    ``(first + i) * step``, split atom by atom (module docstring), and the P-mass beyond
    the last node (it goes to ``+inf``); ``None`` for any other law.

    Every atom's loss is first rounded up past its float error (``32u`` of it for an
    image under subsampling), to ``y'``; it then sits in the bin whose upper node, a
    real product ``k h`` (:func:`_exact_products`), is the first at or above ``y'``, and
    the share of its mass on that node is ``(1 - e^{a - y'}) / (1 - e^{-h})`` with the
    lower node ``a`` exact and the quotient raised by its rounding (16u): at least the
    exact share of the atom at ``y'``.  So the result is the connect-the-dots
    discretisation of a law whose atoms sit at or above the true ones, which dominates
    it (moving P-mass up raises delta at every real epsilon).  Atoms below the first node
    go onto it.

    Examples
    --------
    >>> law = AtomicLossLaw(losses=np.array([0.3]), p=np.array([1.0]))
    >>> pmf, beyond = atom_upper_pmf(law, 0, 3, 0.5)
    >>> share = (1 - math.exp(-0.3)) / (1 - math.exp(-0.5))
    >>> bool(0 <= pmf[1] - share < 1e-12 and abs(pmf.sum() - 1) < 1e-15), beyond
    (True, 0.0)
    """
    atoms = finite_atoms(law)
    if atoms is None or count < 2:
        return None
    y, w, err = atoms
    y_up = y + err * np.abs(y) + (5e-324 if err > 0 else 0.0)
    hi, lo = _exact_products(first + np.arange(count), step)
    # first node at or above y' as a real number: hi + lo >= y'
    k = np.searchsorted(hi, y_up, side="left")
    ks = np.minimum(k, count - 1)
    k = np.where((k < count) & (hi[ks] == y_up) & (lo[ks] < 0), k + 1, k)
    j = k - 1
    beyond = float(np.sum(w[j >= count - 1]))
    below = j < 0
    pmf = np.zeros(count)
    pmf[0] += float(np.sum(w[below]))
    mid = ~below & (j < count - 1)
    j, y_up, w = j[mid], y_up[mid], w[mid]
    with np.errstate(over="ignore"):
        g = -np.expm1((hi[j] - y_up) + lo[j])
    c = -math.expm1(-step)
    # expm1 within four ulps (8u), the difference, product and quotient: 16u
    share = np.minimum(w * g / c * (1.0 + 16.0 * _U), w)
    pmf += np.bincount(j + 1, weights=share, minlength=count)
    pmf += np.bincount(j, weights=w - share, minlength=count)
    return pmf, beyond


def _exact_products(k: np.ndarray, step: float) -> tuple[np.ndarray, np.ndarray]:
    """``k * step`` as ``hi + lo`` exactly (Dekker's product, 1971): ``hi`` the rounded
    float, ``lo`` its error, for integers ``|k| < 2^26`` (``step`` split into two
    halves of 26 and 27 bits, each product with ``k`` exact).  Larger ``|k|`` get the
    error's bound, half an ulp, rounded up in sign (never met: grids stay below 2^22
    nodes from an offset of the same order).

    >>> hi, lo = _exact_products(np.array([10]), 7.7)
    >>> float(hi[0]), float(lo[0]) > 0
    (77.0, True)
    """
    k = np.asarray(k, dtype=float)
    t = 134217729.0 * step  # 2^27 + 1
    s_hi = t - (t - step)
    s_lo = step - s_hi
    hi = k * step
    lo = (k * s_hi - hi) + k * s_lo
    big = np.abs(k) >= 2.0**26
    if big.any():
        lo = np.where(big, 0.5 * np.spacing(np.abs(hi)), lo)
    return hi, lo
