"""The remove/add pair of privacy loss distributions, and its direction logic, once.

Add/remove neighbours have two directions: *remove* (the pair ``(P, Q)``) and *add*
(``(Q, P)`` of another dataset pair).  epsilon and delta are the larger of the two,
so every PLD query asks the same questions -- is the add direction needed, does the
swapped remove PLD already bound it, are the directions one law -- and
:class:`PLDPair` answers them here.  It holds the remove PLD, the add PLD when it
has been composed (``None`` when symmetric or not needed), and two flags declared by
the mechanism (:meth:`~dpacct.accountant.mechanism.Mechanism._pair`):

* ``symmetric``: both directions have one and the same law, so the add PLD *is*
  the remove PLD (``Mechanism._directions_equal``; a composition of Gaussians in
  closed form says False, as before, and then reads the same PLD twice);
* ``swap_bounds_add``: the pessimistic remove PLD is a certified (connect-the-dots)
  discretisation of a loss law or a composition of such, so its swap
  (:meth:`GridPLD.swapped_delta_bound`) dominates the add direction
  (Dong, Roth, Su 2022, Section 2).  Always False for an optimistic pair.

The rules, each the one its site applied before this module (answers unchanged):

* :meth:`PLDPair.delta` (``Mechanism.delta``): the remove curve; the add direction
  is composed only when the pair is not symmetric and the swapped bound is above the
  remove curve at one of the requested epsilons.
* :meth:`PLDPair.epsilon` (``Mechanism.epsilon``): the remove epsilon when symmetric
  or when the swapped bound certifies ``delta`` there; else a coarse add PLD first
  (the loader's ``coarse=True``), the fine one only when the coarse epsilon is above
  the remove one.
* :meth:`PLDPair.add_delta` (random allocation's decomposition): the add direction's
  own curve, tightened by the swapped bound where it holds (the minimum of both).
* :meth:`PLDPair.advantage_upper` (attack risk): ``delta(0)`` is the total-variation
  distance, the same in both directions, so the smaller of the remove curve and the
  swapped bound.
* :meth:`PLDPair.envelope_inputs` (trade-off curves): a pessimistic pair that can be
  swapped uses the swapped bound for the add direction at every node (never composes
  the add PLD: any upper bound is sound in the envelope); symmetric pairs take the
  smaller of the two bounds for both; otherwise both PLDs' curves.
* The fast DP-SGD paths (:mod:`~dpacct.accountant.pld.schedule_fast`,
  :mod:`~dpacct.accountant.pld.incremental`) compose their own cells and use the
  complement identity :func:`swapped_delta_identity` instead of
  :meth:`GridPLD.swapped_delta_bound`; :func:`swapped_epsilon` searches the smallest
  epsilon it certifies.  For a PLD whose P-mass (``pmf`` plus ``inf_mass``) is exactly
  one the two are the same number; they differ in how a total mass ``1 + d`` is
  charged.  The identity reads the certified curve at ``-eps`` and multiplies its error
  by ``e^eps`` (so the fast paths' round-off, held at ``+inf``, costs
  ``(e^eps - 1) d``); the Q-mass formula adds ``10 |d|`` to the missing Q-mass.  Either
  one alone would loosen some answers (the identity above ``eps = ln 11``, the Q-mass
  formula below it), so both are kept.

This module imports only :mod:`~dpacct.accountant.pld.grid` and
:mod:`~dpacct.accountant.numerics` (no cycle through the mechanisms).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..numerics import TINY
from .grid import GridPLD

__all__ = ["PLDPair", "PairEpsilon", "pld_nodes", "swapped_delta_identity", "swapped_epsilon"]


@dataclass(frozen=True)
class PairEpsilon:
    """An epsilon read off a pair, with the PLDs read and the directions that decided.

    ``plds`` lists the remove PLD and any add PLD composed on the way (possibly the
    coarse one); ``deciding`` indexes the directions (0 remove, 1 add) whose epsilon
    is the answer.
    """

    epsilon: float
    plds: list[GridPLD]
    deciding: list[int]


@dataclass(frozen=True)
class PLDPair:
    """The (remove, add) PLDs of a mechanism and the direction logic.

    Parameters
    ----------
    remove : GridPLD
        The remove direction's PLD.
    add : GridPLD or None
        The add direction's PLD; None when symmetric or not composed (then
        ``loader`` composes it on demand).
    symmetric : bool
        Both directions have one law (the add PLD is the remove PLD).
    swap_bounds_add : bool
        The (pessimistic) remove PLD, swapped, dominates the add direction.
    loader : callable, optional
        ``loader(coarse)`` returns the add PLD, on the pair's grid settings
        (``coarse=False``) or on the coarse ones (``coarse=True``).

    Examples
    --------
    >>> from dpacct.accountant.laws.loss_law import GaussianLossLaw
    >>> from dpacct.accountant.pld.grid import discretize
    >>> rem = discretize(GaussianLossLaw(mu=1.0), 1e-3, pessimistic=True)
    >>> pair = PLDPair(rem, None, symmetric=True, swap_bounds_add=True)
    >>> bool(pair.delta(np.array([1.0]))[0] == rem.delta(1.0))
    True
    """

    remove: GridPLD
    add: GridPLD | None = None
    symmetric: bool = False
    swap_bounds_add: bool = False
    loader: Callable[[bool], GridPLD] | None = field(default=None, repr=False, compare=False)

    def add_pld(self, coarse: bool = False) -> GridPLD:
        """The add direction's PLD: the remove one when symmetric, else the stored or
        the loaded one (``coarse``: on the loader's coarse grid; the stored one when
        there is no loader)."""
        if self.symmetric:
            return self.remove
        if self.add is not None and (not coarse or self.loader is None):
            return self.add
        if self.loader is None:
            raise ValueError("the add direction is needed but the pair has no add PLD")
        return self.loader(coarse)

    def swap_certifies(self, epsilon, delta) -> bool:
        """True when the swapped remove PLD certifies the add direction's delta at
        ``epsilon`` to be at most ``delta`` (at every element of arrays)."""
        if not self.swap_bounds_add:
            return False
        return bool(np.all(self.remove.swapped_delta_bound(epsilon) <= delta))

    def delta(self, epsilon: np.ndarray) -> np.ndarray:
        """Upper (lower, for an optimistic pair) bound on delta, both directions."""
        d_rem = np.asarray(self.remove.delta(epsilon), dtype=float)
        if self.symmetric or self.swap_certifies(epsilon, d_rem):
            return d_rem
        return np.maximum(d_rem, self.add_pld().delta(epsilon))

    def epsilon(self, delta: float) -> PairEpsilon:
        """epsilon at ``delta``, the larger of the two directions', composing the add
        direction only where it could be the larger (module docstring)."""
        rem = self.remove
        e_rem = rem.epsilon(delta)
        if self.symmetric or self.swap_certifies(e_rem, delta):
            return PairEpsilon(e_rem, [rem], [0])
        add = self.add_pld(coarse=True)
        if add.epsilon(delta) <= e_rem:
            return PairEpsilon(e_rem, [rem, add], [0])
        add = self.add_pld()
        e_add = add.epsilon(delta)
        return PairEpsilon(max(e_rem, e_add), [rem, add], [0, 1] if e_add >= e_rem else [0])

    def add_delta(self, epsilon: np.ndarray) -> np.ndarray:
        """Upper bound on the add direction's delta alone: its own curve, and the
        swapped remove bound where that holds (the smaller)."""
        d = np.asarray(self.add_pld().delta(epsilon), dtype=float)
        if self.swap_bounds_add:
            d = np.minimum(d, np.asarray(self.remove.swapped_delta_bound(epsilon), dtype=float))
        return d

    def advantage_upper(self) -> float:
        """Upper bound on ``delta(0)``, the total variation (the same both ways)."""
        upper = float(self.remove.delta(0.0))
        if self.swap_bounds_add:
            upper = min(upper, float(self.remove.swapped_delta_bound(0.0)))
        return upper

    def envelope_inputs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Nodes ``u >= 0`` and both directions' deltas there, ``(u, d_remove, d_add)``,
        for the trade-off envelope (:mod:`~dpacct.accountant.queries.tradeoff`)."""
        rem = self.remove
        if self.remove.pessimistic and (self.symmetric or self.swap_bounds_add):
            u = pld_nodes(rem, swapped=True)
            d_r = np.asarray(rem.delta(u), dtype=float)
            d_a = np.asarray(rem.swapped_delta_bound(u), dtype=float)
            if self.symmetric:
                d_a = d_r = np.minimum(d_r, d_a)  # one law, both orders: either bound holds
            return u, d_r, d_a
        add = self.add_pld()
        u = pld_nodes(rem, add)
        return u, np.asarray(rem.delta(u), dtype=float), np.asarray(add.delta(u), dtype=float)

    def rdp(self, alpha: np.ndarray) -> np.ndarray:
        """Renyi divergence bound at ``alpha``, the larger of the two directions'."""
        return np.maximum(self.remove.rdp(alpha), self.add_pld().rdp(alpha))


def pld_nodes(*plds: GridPLD, swapped: bool = False) -> np.ndarray:
    """Every |loss| grid node of ``plds`` (the kinks of their delta curves), with 0 and
    a point beyond the last kink."""
    parts = [np.zeros(1)]
    for p in plds:
        losses = p.losses
        parts.append(losses[losses > 0])
        if swapped:
            parts.append(-losses[losses < 0])
    u = np.unique(np.concatenate(parts))
    return np.concatenate([u, [float(u[-1]) + 40.0]])


def swapped_delta_identity(pld: GridPLD, epsilon: float) -> float:
    """Upper bound on the swapped pair's delta at ``epsilon`` (the add direction).

    For any pair of probability measures ``delta_{Q,P}(eps) = 1 - e^eps + e^eps
    delta_{P,Q}(-eps)`` (write ``sup_S Q(S) - e^eps P(S)`` through complements).  The
    composed connect-the-dots pair dominates the true remove-direction pair, hence its
    swap dominates the add direction (Dong, Roth & Su 2022, Section 2: inversion keeps
    the trade-off order), and ``pld.delta(-eps)`` bounds its curve from above, errors
    included; the map is increasing in it.
    """
    if not math.isfinite(epsilon):
        return 1.0
    d = float(pld.delta(-epsilon))
    return float(-math.expm1(epsilon) + math.exp(epsilon) * d) * (1 + 1e-9) + TINY


def swapped_epsilon(
    pld: GridPLD, delta: float, start: float, hi: float | None = None
) -> float | None:
    """An epsilon ``>= start`` at which the swapped curve certifies ``delta``, or None.

    Every ``e`` with ``swapped_delta_identity(pld, e) <= delta`` bounds the add
    direction's epsilon at ``delta``; the search only needs the curve to be checked at
    the point returned, not to be monotone.  ``hi``: a point known to pass.  The
    swapped curve of a connect-the-dots pair can be much looser than the add
    direction's own composition, so without ``hi`` the search gives up (None) beyond a
    small relative gap.
    """
    lo, gap = start, max(1e-3, 1e-3 * abs(start))
    if hi is None:
        hi = start + gap
    while swapped_delta_identity(pld, hi) > delta:
        lo, gap = hi, 2 * gap
        hi = start + gap
        if gap > 2.0**-8 * abs(start) + 1e-2:  # looser than the add direction itself
            return None
    for _ in range(40):  # bisection to 1e-7 relative (the answer is checked at hi)
        if hi - lo <= 1e-7 * max(1.0, abs(hi)):
            break
        mid = 0.5 * (lo + hi)
        if swapped_delta_identity(pld, mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi
