"""The f-DP trade-off curve as the dual of hockey-stick divergences.

For an ordered pair ``(P, Q)`` with ``delta_QP(u) = H_{e^u}(Q||P)`` and
``delta_PQ(u) = H_{e^u}(P||Q)`` (``u >= 0``), the trade-off curve is

    T(P, Q)(alpha) = sup_{u >= 0} max(1 - delta_QP(u) - e^u alpha,
                                       e^{-u} (1 - alpha - delta_PQ(u)))

(Dong, Roth, Su 2022, Proposition 2.12 and its proof).  Every term is monotone in
both deltas, so on any set of nodes ``u`` and with upper bounds on the deltas the
maximum is a lower bound on ``T``: the safe side (an upper bound on every attack's
true-positive rate).  For a symmetric mechanism (one ``delta(eps)`` curve for both
directions) the two deltas are the same curve.  The argument in full: docs/theory/fdp.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..interface import Routed

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..pld.pld_settings import PLDSettings

__all__ = [
    "ENVELOPE_ROUNDOFF",
    "ROUND_ABS",
    "ROUND_REL",
    "TRADEOFF_NODES",
    "pld_route",
    "pld_tradeoff_lower",
    "pld_tradeoff_upper",
    "tradeoff_envelope",
    "tradeoff_from_delta",
]

#: relative and absolute outward rounding of every certified trade-off value computed
#: from PLD nodes (float round-off in the envelope stays inside it)
ROUND_REL = 1e-10
ROUND_ABS = 1e-15

#: alphas evaluated per block (memory: block x nodes doubles)
BLOCK_ELEMENTS = 4_000_000
#: epsilon nodes at which a ``delta(eps)`` curve is sampled for its dual: 0 and 600
#: geometric nodes from 1e-4 to 60 (beyond 60, ``e^eps alpha`` exceeds one for every
#: alpha a float can resolve above ``1e-26``)
TRADEOFF_NODES = np.concatenate([[0.0], np.geomspace(1e-4, 60.0, 600)])

#: what is taken off the envelope read at a mechanism's own nodes (``extra_nodes`` of
#: :func:`tradeoff_from_delta`): a bound on the float round-off of one envelope term.
#: ``1 - d - e^u a`` where it is positive has ``e^u a < 1``: the exponential (within
#: 2 ulps, an assumption on the platform's libm, not proved here), the product and the
#: two subtractions each err by at most a few units of ``2^-53``; ``e^-u (1 - a - d)``
#: has both factors in [0, 1] and the same count.  ``2^-49`` is 16 units of ``2^-53``,
#: twice the sum of those counts.
ENVELOPE_ROUNDOFF = 2.0**-49


def tradeoff_from_delta(
    delta_fn, fpr: np.ndarray, extra_nodes: np.ndarray | None = None
) -> np.ndarray:
    """Lower bound on the trade-off curve from an upper bound ``delta_fn`` on the
    privacy curve (of both directions), at the false-positive rates ``fpr``: the
    envelope :func:`tradeoff_envelope` on :data:`TRADEOFF_NODES`.

    ``extra_nodes`` (epsilons ``>= 0``) are a mechanism's own nodes, for a curve whose
    Neyman-Pearson trade-off has its vertices there (the loss atoms of a discrete
    pair: the supporting line of slope ``-e^u`` at an atom ``u`` touches the segment of
    the trade-off curve with that likelihood ratio, so the envelope on every atom is
    the trade-off curve itself).  The envelope on them, less
    :data:`ENVELOPE_ROUNDOFF`, is a lower bound as well, and the larger of the two is
    returned: no value is below what the fixed nodes alone give.

    Examples
    --------
    A pure ``log 3``-DP curve, ``delta(eps) = max(0, (3 - e^eps) / 4)`` (randomized
    response with p = 3/4), gives ``1 - 3 a`` near ``a = 0``:

    >>> d = lambda e: np.maximum(0.0, (3.0 - np.exp(e)) / 4.0)
    >>> bool(abs(tradeoff_from_delta(d, np.array([0.05]))[0] - 0.85) < 1e-3)
    True
    """
    nodes = TRADEOFF_NODES
    out = tradeoff_envelope(fpr, nodes, np.asarray(delta_fn(nodes), dtype=float))
    if extra_nodes is None:
        return out
    own = np.asarray(extra_nodes, dtype=float).reshape(-1)
    if own.size == 0:
        return out
    if not (np.all(np.isfinite(own)) and np.all(own >= 0.0)):
        raise ValueError("extra_nodes must be finite epsilons >= 0")
    at_own = tradeoff_envelope(fpr, own, np.asarray(delta_fn(own), dtype=float))
    return np.maximum(out, at_own - ENVELOPE_ROUNDOFF)


def tradeoff_envelope(
    fpr: np.ndarray,
    eps: np.ndarray,
    delta: np.ndarray,
    delta_swapped: np.ndarray | None = None,
) -> np.ndarray:
    """``max(0, max_j max(1 - delta[j] - e^{eps_j} a, e^{-eps_j} (1 - a - delta_swapped[j])))``.

    The dual of a ``delta(eps)`` curve sampled at the nodes ``eps`` (all ``>= 0``),
    evaluated at every false-positive rate ``a`` of ``fpr`` (Dong, Roth, Su 2022,
    Proposition 2.12).  Any nodes and any upper bounds on the deltas give a lower
    bound on the trade-off curve.  At ``a = 0`` a node contributes ``1 - delta`` (also
    where ``e^eps`` overflows, rather than NaN); at ``a > 0`` a node whose ``e^eps``
    overflows contributes a line below zero (never a clamped slope, which at a
    subnormal ``a`` would read about ``1 - delta``, above the curve).

    Parameters
    ----------
    fpr : numpy.ndarray
        False-positive rates in [0, 1] (any shape; flattened).
    eps : numpy.ndarray
        The nodes, 1-D, each ``>= 0``.
    delta : numpy.ndarray
        ``delta_QP`` at the nodes (upper bounds).
    delta_swapped : numpy.ndarray, optional
        ``delta_PQ`` at the nodes; ``delta`` when omitted (a symmetric pair).

    Returns
    -------
    numpy.ndarray
        1-D lower bound on ``T(fpr)``, one value per false-positive rate, each ``>= 0``.

    Examples
    --------
    A pure ``log 3``-DP pair (``delta(0) = 1/2``, ``delta(log 3) = 0``) gives
    ``max(1/2 - a, 1 - 3 a, (1 - a) / 3)``:

    >>> import numpy as np
    >>> eps = np.log(3.0)
    >>> tradeoff_envelope(np.array([0.0, 0.1, 0.5]), np.array([0.0, eps]), np.array([0.5, 0.0]))
    array([1.        , 0.7       , 0.16666667])
    """
    alpha = np.asarray(fpr, dtype=float).reshape(-1)
    u = np.asarray(eps, dtype=float).reshape(-1)
    d_qp = np.asarray(delta, dtype=float).reshape(-1)
    d_pq = d_qp if delta_swapped is None else np.asarray(delta_swapped, dtype=float).reshape(-1)
    out = np.zeros(alpha.size)
    # e^u unclamped: a clamped slope with the node's own delta is not a supporting line
    # (at a subnormal a, u past EXP_OVERFLOW read 1 - delta - e^709.78 a, about 1 - delta,
    # far above the curve); where e^u overflows the line is below zero for every a > 0
    # and is its supremum 1 - delta at a = 0
    with np.errstate(over="ignore"):
        eu = np.exp(u)
    emu = np.exp(-u)
    block = max(1, BLOCK_ELEMENTS // max(u.size, 1))
    one_qp = 1.0 - d_qp
    for start in range(0, alpha.size, block):
        a = alpha[start : start + block, None]
        with np.errstate(over="ignore", invalid="ignore"):
            t1 = np.where(a == 0.0, one_qp[None, :], one_qp[None, :] - eu[None, :] * a)
            t2 = emu[None, :] * (1.0 - a - d_pq[None, :])
        best = np.maximum(np.nan_to_num(t1, nan=0.0, neginf=0.0).max(axis=1), t2.max(axis=1))
        out[start : start + block] = np.maximum(best, 0.0)
    return out


# ----------------------------------------------------------------- the PLD route
# One route for the safe side, shared by :meth:`Mechanism.tradeoff` and
# :func:`~dpacct.accountant.queries.attack_risk.tradeoff_bounds`, so that the value the first
# returns is the lower end of the bracket the second certifies (see the module
# docstring of :mod:`~dpacct.accountant.queries.attack_risk` for the argument).


def pld_route(mech: Routed) -> bool:
    """Whether ``mech``'s trade-off curve is read off its privacy loss distributions.

    Parameters
    ----------
    mech : Routed
        The mechanism that describes the privacy (``mechanism.privacy``).

    Returns
    -------
    bool
        True when it has PLDs and neither an exact ``delta(eps)`` curve nor an exact
        trade-off curve (those answer in closed form).

    Examples
    --------
    >>> from dpacct.accountant import compose, poisson_subsample
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> pld_route(GaussianMechanism(sigma=1.0))
    False
    >>> pld_route(compose([poisson_subsample(GaussianMechanism(sigma=1.0), 0.1)], [10]).privacy)
    True
    """
    return mech.has_pld and not (mech.has_exact_curve or mech.capabilities.exact_tradeoff)


def pld_tradeoff_lower(mech: Routed, alpha: np.ndarray, settings: PLDSettings) -> np.ndarray:
    """Certified lower bound on the trade-off curve from the pessimistic PLDs.

    The envelope evaluated on every node of the pessimistic PLDs (the Neyman-Pearson
    curve of the discrete dominating pair they define; see
    :mod:`~dpacct.accountant.queries.attack_risk`), rounded down by :data:`ROUND_REL` and
    :data:`ROUND_ABS` and clipped to ``[0, 1 - alpha]``.  Both
    :meth:`Mechanism.tradeoff` and the lower end of
    :func:`~dpacct.accountant.queries.attack_risk.tradeoff_bounds` are this value.

    Parameters
    ----------
    mech : Routed
        A mechanism on the PLD route (:func:`pld_route`).
    alpha : numpy.ndarray
        False-positive rates in [0, 1], 1-D.
    settings : PLDSettings
        Grid settings of the PLDs (from the requested ``tol``).

    Returns
    -------
    numpy.ndarray
        One lower bound per false-positive rate.

    Examples
    --------
    >>> from dpacct.accountant import PLDSettings, compose, poisson_subsample
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> run = compose([poisson_subsample(GaussianMechanism(sigma=1.0), 0.1)], [10])
    >>> low = pld_tradeoff_lower(run.privacy, np.array([0.01, 0.1]), PLDSettings(None))
    >>> bool(np.all(low == run.tradeoff([0.01, 0.1])))
    True
    """
    alpha = np.asarray(alpha, dtype=float).reshape(-1)
    u, d_r, d_a = mech._pair(True, settings).envelope_inputs()
    # T(P_r, Q_r): its delta_QP is the add direction's curve, delta_PQ the remove's
    low_r = tradeoff_envelope(alpha, u, d_a, d_r)
    low_a = tradeoff_envelope(alpha, u, d_r, d_a)  # T(P_a, Q_a): the swap
    low = np.minimum(low_r, low_a) * (1.0 - ROUND_REL) - ROUND_ABS
    return np.clip(low, 0.0, 1.0 - alpha)


def pld_tradeoff_upper(mech: Routed, alpha: np.ndarray, settings: PLDSettings) -> np.ndarray:
    """Upper bound on the trade-off curve from the optimistic PLDs.

    The exact supremum of the envelope over the optimistic PLDs' nodes, rounded up by
    :data:`ROUND_REL` and :data:`ROUND_ABS`: the upper end of
    :func:`~dpacct.accountant.queries.attack_risk.tradeoff_bounds`.

    Parameters
    ----------
    mech : Routed
        A mechanism on the PLD route (:func:`pld_route`).
    alpha : numpy.ndarray
        False-positive rates in [0, 1], 1-D.
    settings : PLDSettings
        Grid settings of the PLDs (from the requested ``tol``).

    Returns
    -------
    numpy.ndarray
        One upper bound per false-positive rate (not clipped).

    Examples
    --------
    >>> from dpacct.accountant import PLDSettings, compose, poisson_subsample
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> run = compose([poisson_subsample(GaussianMechanism(sigma=1.0), 0.1)], [10])
    >>> a, settings = np.array([0.01, 0.1]), PLDSettings(None)
    >>> bool(np.all(pld_tradeoff_lower(run.privacy, a, settings)
    ...             <= pld_tradeoff_upper(run.privacy, a, settings)))
    True
    """
    alpha = np.asarray(alpha, dtype=float).reshape(-1)
    u, d_r, d_a = mech._pair(False, settings).envelope_inputs()
    up_r = tradeoff_envelope(alpha, u, d_a, d_r)
    up_a = tradeoff_envelope(alpha, u, d_r, d_a)
    return np.minimum(up_r, up_a) * (1.0 + ROUND_REL) + ROUND_ABS
