"""The symmetrised loss law: one pair that dominates both orders of a relation.

Under a *symmetric* neighbouring relation (replace-one) a mechanism must be dominated
in both orders of every neighbouring pair by one and the same pair, because an
adaptive composition may meet one order at one step and the other at the next (Lebeda,
Regehr, Kamath, Steinke 2024, "Avoiding pitfalls for privacy accounting of subsampled
mechanisms under composition", the substitution case).  Composing one direction, or
each direction separately and taking the larger answer, is then not justified.

Given a loss law ``half`` of a pair ``(P_R, Q_R)`` whose hockey-stick curve is at least
that of the swapped pair ``(Q_R, P_R)`` at every ``eps >= 0``, the law built here is
the *symmetric* pair ``S`` whose curve is ``delta_R`` for ``eps >= 0`` and, by the
duality ``delta_{Q||P}(-eps) = 1 - e^{-eps} (1 - delta_{P||Q}(eps))``, the swapped
curve for ``eps < 0``: the larger of the two curves at every real ``eps`` (the
inequality above makes the larger one ``delta_R`` on ``eps >= 0`` and the swapped one
on ``eps < 0``).  In trade-off language ``S`` is the symmetrisation
``min{f, f^{-1}}**`` of Dong, Roth & Su 2019 (Theorem 4.2 for sampling without
replacement); as a loss law it is

* ``L > 0``: the loss of ``half`` under ``P_R`` (mass at ``+inf`` included);
* ``L = 0``: an atom of mass ``1 - P_R(L > 0) - Q_R(L > 0)`` (the straight segment of
  slope -1 in the trade-off curve);
* ``L < 0``: the mirror image, ``P_S(L <= -t) = Q_R(L >= t)``.

``Q_S`` follows from ``dQ_S = e^{-L} dP_S``, and ``S`` swapped is ``S`` itself.  The
argument (and the proof of the inequality for the subsampled Gaussian) is in
``docs/theory/fixed_size.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .loss_law import PrivacyLossLaw

__all__ = ["SymmetrisedLossLaw"]

#: the atom at 0 may come out this much below 0 in floating point before it is an error
_ATOM_SLACK = 1e-12


@dataclass(frozen=True, eq=False)
class SymmetrisedLossLaw(PrivacyLossLaw):
    """The symmetric pair whose hockey-stick curve is that of ``half`` for ``eps >= 0``.

    See the module docstring for the construction and when it dominates.

    Parameters
    ----------
    half : PrivacyLossLaw
        A law with no atom on ``(0, inf)`` (a continuous loss, such as the
        Poisson-subsampled transform of a Gaussian loss) whose curve at ``eps >= 0``
        is at least its swapped pair's.  Its P- and Q-masses on ``L > 0`` must leave a
        non-negative atom at 0, which is checked.

    Raises
    ------
    TypeError
        ``half`` is not a :class:`PrivacyLossLaw`.
    ValueError
        ``half`` has an atom (lattice or anchor) or puts more than total mass on
        ``L > 0`` under ``P_R`` and ``Q_R`` together.

    Examples
    --------
    >>> from dpacct.accountant.laws.loss_law import GaussianLossLaw, PoissonSubsampledLossLaw
    >>> half = PoissonSubsampledLossLaw(GaussianLossLaw(mu=2.0), 0.1, "remove")
    >>> law = SymmetrisedLossLaw(half)
    >>> eps = np.array([0.0, 0.5, 1.0])
    >>> bool(np.allclose(law.hockey_stick(eps), half.hockey_stick(eps), rtol=1e-12, atol=0))
    True
    >>> # the pair is symmetric: delta(-eps) = 1 - e^{-eps} (1 - delta(eps))
    >>> d = law.hockey_stick(np.array([-0.5, 0.5]))
    >>> bool(abs(d[0] - (1 - np.exp(-0.5) * (1 - d[1]))) < 1e-12)
    True
    """

    half: PrivacyLossLaw

    def __post_init__(self) -> None:
        half = self.half
        if not isinstance(half, PrivacyLossLaw):
            raise TypeError(f"half must be a PrivacyLossLaw, got {type(half).__name__}")
        if half.lattice is not None or half.anchor is not None:
            raise ValueError(
                "half must be a continuous loss law (no lattice or anchor): the mirror "
                "image is built from strict and non-strict tails that coincide only then"
            )
        zero = np.zeros(1)
        above_p = float(half.sf_p(zero)[0])
        above_q = float(half.sf_q(zero)[0])
        atom = 1.0 - half.inf_mass - above_p - above_q
        if not atom >= -_ATOM_SLACK:
            raise ValueError(
                f"half puts P-mass {above_p!r} (+ {half.inf_mass!r} at +inf) and Q-mass "
                f"{above_q!r} on L > 0, more than 1 together: it is not the larger "
                "direction of a pair, so its mirror image is no pair"
            )
        object.__setattr__(self, "inf_mass", half.inf_mass)
        object.__setattr__(self, "q_neg_inf_mass", half.inf_mass)
        object.__setattr__(self, "lattice", None)
        object.__setattr__(self, "anchor", None)
        object.__setattr__(self, "weak_anchor", False)
        object.__setattr__(self, "_atom", max(atom, 0.0))

    @property
    def atom(self) -> float:
        """The mass of the atom at ``L = 0`` (the same under ``P`` and ``Q``)."""
        return self._atom

    # P_S(L <= x) = Q_R(L >= -x) for x < 0 (no atoms of half off 0); 1 - inf - sf_p^R(x)
    # for x >= 0.  Q_S(L <= x) = inf_R + sf_p^R(-x) for x < 0; 1 - sf_q^R(x) for x >= 0.
    def cdf_p(self, x):
        return _mirrored(x, lambda m: self.half.sf_q(m),
                         lambda y: 1.0 - self.inf_mass - self.half.sf_p(y))

    def sf_p(self, x):
        return _mirrored(x, lambda m: 1.0 - self.inf_mass - self.half.sf_q(m),
                         lambda y: self.half.sf_p(y))

    def cdf_q(self, x):
        return _mirrored(x, lambda m: self.inf_mass + self.half.sf_p(m),
                         lambda y: 1.0 - self.half.sf_q(y))

    def sf_q(self, x):
        return _mirrored(x, lambda m: 1.0 - self.inf_mass - self.half.sf_p(m),
                         lambda y: self.half.sf_q(y))

    def spread(self) -> float:
        """The scale of ``half`` (its grid-safety floors included): the mirrored law
        spans the same losses, reflected."""
        return self.half.spread()


def _mirrored(x, below, above) -> np.ndarray:
    """``below(-x)`` where ``x < 0`` (the mirror image of ``half``), ``above(x)`` elsewhere;
    each side is evaluated at 0 where the other applies (no spurious overflow)."""
    x = np.asarray(x, dtype=float)
    neg = x < 0
    with np.errstate(invalid="ignore"):
        left = below(np.where(neg, -x, 0.0))
        right = above(np.where(neg, 0.0, x))
    return np.where(neg, left, right)
