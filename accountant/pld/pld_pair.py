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
  (:func:`swapped_delta`) dominates the add direction
  (Dong, Roth, Su 2022, Section 2).  Always False for an optimistic pair.

The rules (one swapped-curve rule, :func:`swapped_delta`, at every site):

* :meth:`PLDPair.delta` (``Mechanism.delta``): the remove curve and, element by
  element, the smallest upper bound on the add direction at hand -- the swapped
  bound, then a coarse add PLD (the loader's ``coarse=True``), then the add PLD on the
  pair's settings, each tried only at the epsilons where the ones before are above the
  remove curve (nothing of the add direction when the pair is symmetric).
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
  :mod:`~dpacct.accountant.pld.incremental`) compose their own cells and ask the
  same :func:`swapped_delta` whether the add direction is needed;
  :func:`swapped_epsilon` searches the smallest epsilon it certifies.  (Before,
  they used the complement identity read through ``GridPLD.delta(-eps)``, and the
  general engine a Q-mass formula with ten times the mass drift added: one
  statement, two error treatments; :func:`swapped_delta` is the identity evaluated
  as the Q-mass formula with every rounding bounded.)

This module imports only :mod:`~dpacct.accountant.pld.grid` and
:mod:`~dpacct.accountant.numerics` (no cycle through the mechanisms).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..numerics import EXP_OVERFLOW, TINY
from .grid import GridPLD

__all__ = ["PLDPair", "PairEpsilon", "pld_nodes", "swapped_delta", "swapped_epsilon"]


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
        return bool(np.all(swapped_delta(self.remove, epsilon) <= delta))

    def delta(self, epsilon: np.ndarray) -> np.ndarray:
        """Upper (lower, for an optimistic pair) bound on delta, both directions.

        The add direction is bounded element by element by the smallest bound at hand:
        the swapped remove curve (when it holds), then the coarse add PLD (when the
        loader has coarse settings), and the add PLD on the pair's settings only at
        the epsilons where neither is at or below the remove curve; the smallest is
        kept.  Each is an upper bound on the add direction's delta (a pessimistic
        pair: the loader composes the coarse and the fine add PLD with the pair's
        flag), so the result is at most ``max(remove, add)`` on the pair's settings,
        element by element (below it where a screen is below the add PLD).  An
        optimistic pair returns ``max(remove, add)``.
        """
        d_rem = np.asarray(self.remove.delta(epsilon), dtype=float)
        if self.symmetric:
            return d_rem
        if not self.remove.pessimistic:  # a lower bound: both directions' curves
            return np.maximum(d_rem, self.add_pld().delta(epsilon))
        eps = np.asarray(epsilon, dtype=float)
        bound = np.full(d_rem.shape, np.inf)
        if self.swap_bounds_add:
            bound = np.asarray(swapped_delta(self.remove, eps), dtype=float).reshape(d_rem.shape)
        need = bound > d_rem
        read = None  # the add PLD already read at the epsilons in need
        if need.any() and self.loader is not None and self.add is None:
            # the coarse add PLD (the pair's own one when the loader has no coarse
            # settings: then it is the fine one below, read once)
            read = self.add_pld(coarse=True)
            vals = np.asarray(read.delta(eps[need]), dtype=float).reshape(-1)
            bound[need] = np.minimum(bound[need], vals)
            need = bound > d_rem
        if need.any():
            fine = self.add_pld()
            if fine is not read:
                vals = np.asarray(fine.delta(eps[need]), dtype=float).reshape(-1)
                bound[need] = np.minimum(bound[need], vals)
        return np.maximum(d_rem, bound)

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
            d = np.minimum(d, np.asarray(swapped_delta(self.remove, epsilon), dtype=float))
        return d

    def advantage_upper(self) -> float:
        """Upper bound on ``delta(0)``, the total variation (the same both ways)."""
        upper = float(self.remove.delta(0.0))
        if self.swap_bounds_add:
            upper = min(upper, float(swapped_delta(self.remove, 0.0)))
        return upper

    def envelope_inputs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Nodes ``u >= 0`` and both directions' deltas there, ``(u, d_remove, d_add)``,
        for the trade-off envelope (:mod:`~dpacct.accountant.queries.tradeoff`)."""
        rem = self.remove
        if self.remove.pessimistic and (self.symmetric or self.swap_bounds_add):
            u = pld_nodes(rem, swapped=True)
            d_r = np.asarray(rem.delta(u), dtype=float)
            d_a = np.asarray(swapped_delta(rem, u), dtype=float)
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


#: unit round-off of a double
_U = 2.0**-53
#: relative error allowed for numpy's ``exp`` of a double (4 ulps; its kernels are
#: within 1 ulp on the platforms measured)
_EXP_REL = 8 * _U
#: unit round-off of numpy's extended precision (equal to ``_U`` where it is a double)
_LD_U = float(np.finfo(np.longdouble).eps) / 2


#: block length of :func:`_blocked_cumsum`
_BLOCK = 256


def _blocked_cumsum(x: np.ndarray) -> np.ndarray:
    """Prefix sums of non-negative ``x``, sequential within blocks of ``_BLOCK`` and
    across the block totals: each is within ``(min(n, _BLOCK) + ceil(n / _BLOCK) + 2)
    u`` of its value (``n = len(x)``, ``u = 2^-53``; plain sequential sums would allow
    ``n u``)."""
    blocks, before = _blocks_of(x)
    return (blocks + before[:, None]).reshape(-1)[: x.size]


def _blocks_of(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_blocked_cumsum`'s parts: the sums within blocks (rows, zero-padded)
    and the sums of the blocks before each row."""
    n = x.size
    m = -(-n // _BLOCK)
    pad = np.empty(m * _BLOCK)
    pad[:n] = x
    pad[n:] = 0.0  # (only the padding zeroed: the same array as zeros filled)
    blocks = np.cumsum(pad.reshape(m, _BLOCK), axis=1)
    return blocks, np.concatenate([[0.0], np.cumsum(blocks[:-1, -1])])


def _blocked_last(x: np.ndarray) -> np.floating:
    """``_blocked_cumsum(x)[-1]`` (``x`` not empty) without the other sums."""
    blocks, before = _blocks_of(x)
    return blocks[-1, (x.size - 1) % _BLOCK] + before[-1]


class _SwappedCurve:
    """The tables of :func:`swapped_delta` for one PLD, built once per PLD.

    ``q_above[k]`` is the Q-mass ``sum_{i >= k} p_i e^{-l_i}`` of the losses from the
    ``k``-th up and ``p_below[k]`` the P-mass of the ``k`` lowest losses, both by
    :func:`_blocked_cumsum` (error at most ``sum_err`` times ``u`` of the sum);
    ``excess`` bounds ``max(sum p + inf_mass - 1, 0)`` from above (summed in extended
    precision).  Only weights ``e^{-l} <= e^eps`` enter (the masses below ``-eps``
    enter through their P-mass), so FFT noise at very negative losses, whose Q-mass
    weights are huge, never meets a cancellation.
    """

    __slots__ = ("excess", "losses", "n", "p_below", "pmf", "q_above", "sum_err")

    def __init__(self, pld: GridPLD, tables: bool = True) -> None:
        if not pld.pessimistic:
            raise ValueError("only a pessimistic PLD bounds the swapped pair")
        self.losses = pld.losses
        pmf = self.pmf = pld.pmf
        self.n = pmf.size
        self.q_above = self.p_below = None
        if tables:
            x = self._weighted(0)
            self.q_above = np.concatenate([_blocked_cumsum(x[::-1])[::-1], [0.0]])
            self.p_below = np.concatenate([[0.0], _blocked_cumsum(pmf)])
        self.sum_err = min(self.n, _BLOCK) + math.ceil(self.n / _BLOCK) + 2
        total = np.sum(pmf.astype(np.longdouble)) + np.longdouble(pld.inf_mass)
        excess = float(total - 1)
        err = (math.log2(self.n + 1) + 22) * _LD_U * (float(total) + 1.0) + _U * abs(excess)
        self.excess = max(excess + err * (1 + 1e-6), 0.0)

    def __call__(self, epsilon: float | np.ndarray) -> float | np.ndarray:
        eps = np.asarray(epsilon, dtype=float)
        bad = ~(eps >= -EXP_OVERFLOW)  # nan, or below: the bound 1
        # the add direction's delta does not increase with eps: beyond EXP_OVERFLOW
        # the value there bounds it
        e = np.clip(np.where(bad, 0.0, eps), -EXP_OVERFLOW, EXP_OVERFLOW)
        k = np.searchsorted(self.losses, -e, side="left")  # losses[:k] < -eps
        t = np.exp(e)
        r, s2 = self._masses(k)
        # e^eps S or e^eps X can leave the float range (eps near EXP_OVERFLOW, e.g. eps
        # = inf asked of a PLD whose certified mass far exceeds 1): the bound is then
        # inf or nan (inf - inf), and 1, the trivial bound on any delta, is returned
        with np.errstate(over="ignore", invalid="ignore"):
            ts2 = t * s2
            tx = t * self.excess
            v = ((1.0 - r) - ts2) + tx
            err = (
                (_EXP_REL + (self.sum_err + 1) * _U) * r
                + (_EXP_REL + (self.sum_err + 1) * _U) * ts2
                + (_EXP_REL + _U) * tx
                + 5 * _U * (1.0 + r + ts2 + tx)
            )
            bound = v + err * (1 + 1e-6) + TINY
        out = np.clip(np.where(np.isfinite(bound), bound, 1.0), 0.0, 1.0)
        out = np.where(bad, 1.0, out)
        return float(out) if out.ndim == 0 else out

    def _weighted(self, k: int) -> np.ndarray:
        """The Q-masses ``p_l e^{-l}`` of the losses from the ``k``-th up."""
        with np.errstate(over="ignore", under="ignore"):
            # a loss below -EXP_OVERFLOW is clipped: it is only ever read for
            # eps > EXP_OVERFLOW, which is evaluated at EXP_OVERFLOW
            return self.pmf[k:] * np.exp(np.minimum(-self.losses[k:], EXP_OVERFLOW))

    def _masses(self, k):
        """``(q_above[k], p_below[k])``; without the tables (one epsilon asked), the two
        entries alone: the Q-masses from ``k`` up summed from the top and the P-masses
        below ``k`` from the bottom, in the tables' blocks (a prefix's blocked sums are
        the whole array's first entries, the same floats), so only the suffix from the
        cut is exponentiated (issue 37, session 34)."""
        if self.q_above is not None:
            return self.q_above[k], self.p_below[k]
        k = int(k)
        r = _blocked_last(self._weighted(k)[::-1]) if k < self.n else np.float64(0.0)
        s2 = _blocked_last(self.pmf[:k]) if k > 0 else np.float64(0.0)
        return r, s2


def swapped_delta(pld: GridPLD, epsilon: float | np.ndarray) -> float | np.ndarray:
    """Upper bound on the add direction's delta at ``epsilon``, from the remove PLD.

    For any pair of probability measures and real ``eps``,
    ``delta_{Q,P}(eps) = 1 - e^eps + e^eps delta_{P,Q}(-eps)`` (write
    ``sup_S Q(S) - e^eps P(S)`` through the complement of ``S``).  The curve of a
    pessimistic PLD -- connect-the-dots discretisation, tail cuts, aliasing and the
    round-off its route certifies all included -- lies above the remove direction's
    curve at every real argument, negative ones included (its discrete pair
    dominates the true one in the trade-off order; Dong, Roth & Su 2022, Section 2),
    and the right-hand side increases with it, so the bound holds for the add
    direction, whose pairs are the swapped remove pairs.

    With the PLD's P-masses ``p_l`` at losses ``l`` and ``p_inf`` at ``+inf`` the
    right-hand side is, exactly,

    ``1 - sum_l p_l min(e^{-l}, e^eps) + e^eps (sum_l p_l + p_inf - 1)``,

    the Q-mass formula (``Q`` has mass ``p_l e^{-l}`` at each loss and the rest where
    ``P`` has none) plus ``e^eps`` times the PLD's excess P-mass.  It is evaluated as
    ``1 - R - e^eps S + e^eps X`` with the Q-mass ``R`` of the losses ``>= -eps``,
    the P-mass ``S`` of those below and ``X`` the excess (a negative excess is taken
    as 0, which only raises the bound), and made sound in floating point by adding a
    bound on every rounding: ``exp`` to 4 ulps, the products to one unit round-off
    ``u = 2^-53``, the prefix sums of ``n`` terms (sequential within blocks of 256
    and across the block totals) to ``(min(n, 256) + ceil(n / 256) + 2) u`` of their
    value, ``X`` summed in extended precision, and ``6 u`` of the magnitudes for the
    additions.  See
    docs/theory/pld.md ("Both neighbouring directions").

    Parameters
    ----------
    pld : GridPLD
        A pessimistic PLD of the remove direction (a certified discretisation of a
        loss law or a composition of such).
    epsilon : float or array_like
        Real epsilon(s); NaN or below ``-EXP_OVERFLOW`` gives the trivial bound 1.

    Returns
    -------
    float or numpy.ndarray
        The bound, in [0, 1].

    Examples
    --------
    >>> from dpacct.accountant.laws.loss_law import GaussianLossLaw
    >>> from dpacct.accountant.pld.grid import discretize
    >>> pld = discretize(GaussianLossLaw(mu=1.0), 1e-3, pessimistic=True)
    >>> # the Gaussian pair is symmetric: the swapped curve is the curve itself
    >>> bool(abs(swapped_delta(pld, 1.0) - pld.delta(1.0)) < 1e-6)
    True
    """
    return _SwappedCurve(pld, tables=np.ndim(epsilon) > 0)(epsilon)


def swapped_epsilon(
    pld: GridPLD, delta: float, start: float, hi: float | None = None
) -> float | None:
    """An epsilon ``>= start`` at which the swapped curve certifies ``delta``, or None.

    Every ``e`` with ``swapped_delta(pld, e) <= delta`` bounds the add direction's
    epsilon at ``delta``; the search only needs the curve to be checked at the point
    returned, not to be monotone.  ``hi``: a point known to pass.  The swapped curve
    of a connect-the-dots pair can be much looser than the add direction's own
    composition, so without ``hi`` the search gives up (None) beyond a small relative
    gap.
    """
    if not math.isfinite(start):  # nothing >= start to search (the gap would never close)
        return None
    curve = _SwappedCurve(pld)
    lo, gap = start, max(1e-3, 1e-3 * abs(start))
    if hi is None:
        hi = start + gap
    while curve(hi) > delta:
        lo, gap = hi, 2 * gap
        hi = start + gap
        if gap > 2.0**-12 * abs(start) + 1e-4:  # looser than the add direction itself
            return None
    for _ in range(40):  # bisection to 1e-7 relative (the answer is checked at hi)
        if hi - lo <= 1e-7 * max(1.0, abs(hi)):
            break
        mid = 0.5 * (lo + hi)
        if curve(mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi
