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
from typing import NamedTuple

import numpy as np

from ..laws.loss_law import AtomicLossLaw, PoissonSubsampledLossLaw, PrivacyLossLaw
from ..laws.loss_law_sgm import KEPT

__all__ = ["AtomSplit", "atom_upper_pmf", "finite_atoms"]


_U = 2.0**-53
#: numpy's exp, expm1, log and log1p (glibc) are within one ulp; each is allowed four
#: (8u relative) in the error bounds below
_CALL = 8.0 * _U
#: an absolute floor on every image's error (a subnormal intermediate loses its
#: relative precision, never more than a few multiples of the least subnormal)
_TINY_ERR = 16 * 5e-324
#: past this base loss ``expm1`` would overflow; the image is written around ``x``
_BIG = 700.0


def _image(x: np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray]:
    """``h(x) = log((1 - q) + q e^x)`` and a bound on the absolute error of its float,
    for ``0 < q < 1``, computed three ways so that no branch overflows or cancels:

    * ``x > 700``: ``x + log q + log1p((1 - q)/q e^{-x})`` (``expm1`` would overflow);
    * ``z = q expm1(x) < -1/2`` (``q`` near 1, ``x`` negative): ``log((1 - q) + q e^x)``,
      a sum of two positive terms (``log1p`` near ``-1`` would amplify ``z``'s rounding
      by ``1/(1 + z)``: 6e7 ulps at ``q = 1 - 1e-10``);
    * else ``log1p(z)``, whose error from ``z``'s (9u relative) is ``9u |z|/(1 + z)``.

    Examples
    --------
    >>> y, err = _image(np.array([-800.0, 0.5, 800.0]), 0.25)
    >>> bool(abs(y[2] - (800 + math.log(0.25))) < 1e-12), bool(np.all(err < 1e-14 * (1 + abs(y))))
    (True, True)
    """
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        big = x > _BIG
        xs = np.where(big, 0.0, x)
        z = q * np.expm1(xs)
        low = z < -0.5
        # the log1p branch
        y_a = np.log1p(z)
        e_a = 2.0 * _CALL * (np.abs(z) / np.maximum(1.0 + z, 0.5) + np.abs(y_a))
        # the sum-of-positives branch: argument within 10u relative, log's own 8u
        y_b = np.log((1.0 - q) + q * np.exp(xs))
        e_b = 2.0 * _CALL * (1.0 + np.abs(y_b))
        # around x: x + log q + t, t = log1p(e^{log1p(-q) - log q - x})
        lq = math.log(q)
        t = np.log1p(np.exp(math.log1p(-q) - lq - np.where(big, x, _BIG)))
        y_c = (np.where(big, x, 0.0) + lq) + t
        e_c = 2.0 * _CALL * (np.abs(x) + abs(lq) + np.abs(t))
        y = np.where(big, y_c, np.where(low, y_b, y_a))
        err = np.where(big, e_c, np.where(low, e_b, e_a)) + _TINY_ERR
    return y, err


#: the methods that define a law's distribution: a subclass overriding any of them is a
#: different law, whose atoms are not its parent's (it keeps the bin split)
_DEFINING = (
    "cdf_p",
    "sf_p",
    "cdf_q",
    "sf_q",
    "bin_masses",
    "_bins_and_ends",
    "hockey_stick",
    "quantile_bounds",
    "_log_q_bins",
)


def _keeps(law: PrivacyLossLaw, cls: type) -> bool:
    """Whether ``law``'s class defines its distribution as ``cls`` does."""
    kept = _DEFINING + (KEPT if cls is PoissonSubsampledLossLaw else ())
    return all(getattr(type(law), m, None) is getattr(cls, m, None) for m in kept)


def finite_atoms(law: PrivacyLossLaw) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The finite atoms ``(losses, P-masses, absolute errors of the losses)`` of a purely
    atomic law, else ``None``.  An :class:`AtomicLossLaw`'s losses are its definition
    (error 0); an image under subsampling carries its own float error (:func:`_image`)
    plus the base's, unamplified: the image ``h`` has slope in ``[0, 1]``.

    An :class:`AtomicLossLaw`, and a Poisson-subsampled one (any depth): under
    ``"remove"`` the atom ``(x, p)`` of the base goes to ``h(x) = log((1-q) + q e^x)``
    with P-mass ``q p + (1 - q) p e^{-x}`` and the base's Q-only mass to
    ``log(1 - q)``; under ``"add"`` (the base is the law of ``log(dQ/dP)``) to
    ``-h(-x)`` with P-mass ``p``, and the base's ``+inf`` mass to ``-log(1 - q)``
    (:class:`PoissonSubsampledLossLaw`).  Atoms at any loss are kept (an image past the
    float range would be ``+inf``, pushed beyond the grid, never dropped).

    Examples
    --------
    >>> law = AtomicLossLaw(losses=np.array([-1.0, 1.0]), p=np.array([0.25, 0.75]))
    >>> y, w, err = finite_atoms(law)
    >>> y.tolist(), err.tolist()
    ([-1.0, 1.0], [0.0, 0.0])
    """
    if isinstance(law, AtomicLossLaw) and _keeps(law, AtomicLossLaw):
        return law.losses, law.p, np.zeros(law.losses.size)
    if not (isinstance(law, PoissonSubsampledLossLaw) and _keeps(law, PoissonSubsampledLossLaw)):
        return None
    base = finite_atoms(law.base)
    if base is None:
        return None
    x, p, err = base
    q = law.sample_rate
    if q >= 1.0:  # the identity
        return x, p, err
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        if law.direction == "remove":
            y, e = _image(x, q)
            # (1 - q) p e^{-x} in log space: it is a Q-mass times (1 - q), never above 1
            w = q * p + (1.0 - q) * np.exp(np.log(p) - x)
            extra = (math.log1p(-q), (1.0 - q) * law.base.q_neg_inf_mass)
        else:
            y, e = _image(-x, q)
            y = -y
            w = p
            extra = (-math.log1p(-q), law.base.inf_mass)
    e = e + err
    if extra[1] > 0.0:
        y = np.append(y, extra[0])
        w = np.append(w, extra[1])
        e = np.append(e, _CALL * abs(extra[0]) + _TINY_ERR)
    keep = (w > 0) & ~np.isnan(y) & (y > -np.inf)
    return y[keep], w[keep], e[keep] * (1.0 + 8.0 * _U)


class AtomSplit(NamedTuple):
    """The pessimistic split of an atomic law, bin by bin (:func:`atom_upper_pmf`):
    bin ``j`` (between nodes ``j`` and ``j + 1``) puts ``low[j]`` on its lower node and
    ``up[j]`` on its upper one; ``below`` goes onto the first node and ``beyond`` to
    ``+inf``.  Kept per bin so that the two-scale discretisation can restrict it to a
    range of bins (:func:`~dpacct.accountant.pld.twoscale._restrict`)."""

    low: np.ndarray
    up: np.ndarray
    below: float
    beyond: float

    def pmf(self) -> np.ndarray:
        """The masses on the nodes (``below`` on the first)."""
        out = np.zeros(self.low.size + 1)
        out[:-1] += self.low
        out[1:] += self.up
        out[0] += self.below
        return out

    def restricted(self, mask: np.ndarray, tails: bool) -> AtomSplit:
        """Only the bins of ``mask``; ``below`` and ``beyond`` only with ``tails``."""
        return AtomSplit(
            np.where(mask, self.low, 0.0),
            np.where(mask, self.up, 0.0),
            self.below if tails else 0.0,
            self.beyond if tails else 0.0,
        )


def atom_upper_pmf(law: PrivacyLossLaw, first: int, count: int, step: float) -> AtomSplit | None:
    """The pessimistic masses of a purely atomic ``law`` on the ``count`` nodes
    ``(first + i) * step``, split atom by atom (module docstring), per bin, and the
    P-mass beyond the last node (it goes to ``+inf``); ``None`` for any other law.

    Every atom's loss is first rounded up past its float error (:func:`finite_atoms`),
    to ``y'``; it then sits in the bin whose upper node, a
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
    >>> split = atom_upper_pmf(law, 0, 3, 0.5)
    >>> pmf, share = split.pmf(), (1 - math.exp(-0.3)) / (1 - math.exp(-0.5))
    >>> bool(0 <= pmf[1] - share < 1e-12 and abs(pmf.sum() - 1) < 1e-15), split.beyond
    (True, 0.0)
    """
    atoms = finite_atoms(law)
    if atoms is None or count < 2:
        return None
    y, w, err = atoms
    atoms = (y, w)
    with np.errstate(invalid="ignore"):
        y_up = np.where(err > 0, np.nextafter(y + err, np.inf), y)
    hi, lo = _exact_products(first + np.arange(count), step)
    # first node at or above y' as a real number: hi + lo >= y'
    k = np.searchsorted(hi, y_up, side="left")
    ks = np.minimum(k, count - 1)
    k = np.where((k < count) & (hi[ks] == y_up) & (lo[ks] < 0), k + 1, k)
    j = k - 1
    beyond = float(np.sum(w[j >= count - 1]))
    below = j < 0
    mid = ~below & (j < count - 1)
    j, y_up, w = j[mid], y_up[mid], w[mid]
    with np.errstate(over="ignore"):
        g = -np.expm1((hi[j] - y_up) + lo[j])
    c = -math.expm1(-step)
    # expm1 within four ulps (8u), the difference, product and quotient: 16u
    share = np.minimum(w * g / c * (1.0 + 16.0 * _U), w)
    up = np.bincount(j, weights=share, minlength=count - 1)
    low = np.bincount(j, weights=w - share, minlength=count - 1)
    return AtomSplit(low, up, float(np.sum(atoms[1][below])), beyond)


def _exact_products(k: np.ndarray, step: float) -> tuple[np.ndarray, np.ndarray]:
    """``k * step`` as ``hi + lo`` exactly (Dekker's product, 1971): ``hi`` the rounded
    float, ``lo`` its error.  Both factors are split (Veltkamp) into halves of at most
    26 bits, whose four products are exact; exact for every float ``k`` and ``step``
    whose product neither overflows nor underflows.

    >>> hi, lo = _exact_products(np.array([10]), 7.7)
    >>> float(hi[0]), float(lo[0]) > 0
    (77.0, True)
    """
    k = np.asarray(k, dtype=float)
    k_hi, k_lo = _veltkamp(k)
    s_hi, s_lo = _veltkamp(step)
    hi = k * step
    lo = ((k_hi * s_hi - hi) + k_hi * s_lo + k_lo * s_hi) + k_lo * s_lo
    return hi, lo


def _veltkamp(a):
    """``a = hi + lo`` with both halves of at most 26 significant bits."""
    t = 134217729.0 * a  # 2^27 + 1
    hi = t - (t - a)
    return hi, a - hi
