"""Attack risk: what the best membership-inference attack can achieve, certified.

A mechanism's privacy is a statement about hypothesis tests.  For neighbouring
datasets ``D`` (without the target record) and ``D'`` (with it), an attack that sees
the output decides "member" or "not member"; its false-positive rate ``FPR = alpha``
and false-negative rate ``beta = 1 - TPR`` can never beat the trade-off curve
``f(alpha) = inf_{ordered neighbours} T(M(D), M(D'))(alpha)`` (Dong, Roth, Su 2022,
Definition 2.1).  Kulynych, Gomez, Kaissis, du Pin Calmon, Troncoso (NeurIPS 2024,
"Attack-aware noise calibration for differential privacy") argue that a privacy
budget is best stated and calibrated in these terms:

* :func:`advantage` -- ``max_alpha (1 - alpha - f(alpha))``, the largest TPR - FPR any
  attack reaches, equal to ``delta(0)``, the total-variation distance of the pair
  (Kairouz, Oh, Viswanath 2015; Kulynych et al. 2024, Section 3.1);
* :func:`tpr_at` -- the best attack's TPR at a given FPR, ``1 - f(alpha)``
  (Kulynych et al. 2024, Eq. (3));
* :func:`tradeoff_bounds` -- a certified bracket ``(lower, upper)`` of ``f`` itself.

How the numbers are certified
-----------------------------
For an ordered pair ``(P, Q)`` (``alpha = P``-mass of the rejection region, ``beta =
Q``-mass of its complement) the trade-off curve is the upper envelope of lines given
by the hockey-stick divergences ``H_t(Q||P) = sup_S Q(S) - t P(S)``:
``T(P, Q)(alpha) = sup_{t > 0} (1 - t alpha - H_t(Q||P))`` (Dong, Roth, Su 2022,
Proposition 2.12 and its proof).  Splitting at ``t = 1`` and using
``H_t(Q||P) = 1 - t + t H_{1/t}(P||Q)`` for ``t < 1`` gives, with
``delta_PQ(u) = H_{e^u}(P||Q)`` and ``delta_QP(u) = H_{e^u}(Q||P)`` for ``u >= 0``,

    T(P, Q)(alpha) = sup_{u >= 0} max(1 - delta_QP(u) - e^u alpha,
                                       e^{-u} (1 - alpha - delta_PQ(u))).      (*)

With add/remove neighbours the remove pair ``(P_r, Q_r)`` and the add pair
``(P_a, Q_a)`` are each other's swap (an add pair is a remove pair in the other order),
so ``delta_QP`` of the remove pair is the add direction's curve and vice versa, and
``f = min(T(P_r, Q_r), T(P_a, Q_a))``.

* **Lower bound on f (the safe side: an upper bound on every attack's TPR).**  (*) is
  monotone in both deltas, so upper bounds on them give a lower bound on ``T`` at every
  ``u`` evaluated -- any set of ``u`` is sound.  The upper bounds are the pessimistic
  (connect-the-dots) PLD of the remove direction and, for the add direction, that PLD
  swapped (:func:`~dpacct.accountant.pld.pld_pair.swapped_delta`), which is a
  dominating pair of the add direction.  Evaluated at every grid node (the kinks of
  the discrete curves), (*) is exactly the piecewise-linear Neyman-Pearson curve of the
  discrete dominating pair that the pessimistic PLD defines (Kulynych et al. 2024,
  Algorithm 1), which lies below the true curve (Doroshenko et al. 2022, Theorem 3.2:
  the connect-the-dots pair dominates the true one).
* **Upper bound on f.**  The optimistic PLDs give lower bounds on both directions'
  ``delta(u)`` for ``u >= 0``; between grid nodes each is ``a - b e^u`` (linear in
  ``e^u``), so both terms of (*) are linear in ``e^u`` (resp. ``e^{-u}``) between nodes
  and the supremum over all ``u`` is attained on the nodes: evaluating (*) on every
  node of the optimistic PLDs gives the exact supremum, an upper bound on ``T``.  This
  end brackets the curve of the mechanism's dominating pairs (as
  :meth:`Mechanism.epsilon_bounds` does): it is the mechanism's own curve when the pair
  is tight, as for the Gaussian and its Poisson subsampling (Zhu, Dong, Wang 2022,
  Theorem 11).

Mechanisms with an exact trade-off curve (Gaussian, Laplace, randomized response, ...)
answer exactly (both ends equal up to rounding).  Mechanisms known only through an
RDP curve or an exact ``delta(epsilon)`` get the dual of their (epsilon, delta) curve on
the safe side (:meth:`Mechanism.tradeoff`) and the trivial ``1 - alpha`` above.
The argument in full: docs/theory/fdp.md.
"""

from __future__ import annotations

import numpy as np

from ..mechanism import Mechanism, PLDSettings
from ..validation import check_fpr, check_tol
from .tradeoff import ROUND_ABS, ROUND_REL, pld_route, pld_tradeoff_lower, pld_tradeoff_upper

__all__ = [
    "advantage",
    "advantage_bounds",
    "tpr_at",
    "tpr_bounds",
    "tradeoff_bounds",
]


def _check_mechanism(mechanism: object) -> Mechanism:
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a dpacct Mechanism, got {type(mechanism).__name__}")
    # the curves are read off the mechanism that describes it (an algorithm's releases)
    return mechanism.privacy


def _bounds(mech: Mechanism, alpha: np.ndarray, tol: float | None, upper: bool):
    flat = alpha.reshape(-1).astype(float)
    if mech.capabilities.exact_tradeoff:
        exact = np.clip(np.asarray(mech._tradeoff_exact(flat), dtype=float), 0.0, 1.0)
        low = exact * (1.0 - ROUND_REL) - ROUND_ABS
        high = exact * (1.0 + ROUND_REL) + ROUND_ABS
    elif pld_route(mech):
        # the same call as Mechanism.tradeoff's, so tradeoff() is this lower end
        settings = PLDSettings(tol)
        low = pld_tradeoff_lower(mech, flat, settings)
        high = pld_tradeoff_upper(mech, flat, settings) if upper else np.ones_like(flat)
    else:
        low = np.asarray(mech.tradeoff(flat, tol=tol), dtype=float)
        high = 1.0 - flat
    low = np.clip(low, 0.0, 1.0 - flat)
    high = np.clip(np.maximum(high, low), 0.0, 1.0 - flat)
    return low.reshape(alpha.shape), high.reshape(alpha.shape)


def _out(values: np.ndarray, like: np.ndarray):
    return float(values) if np.ndim(like) == 0 else values


def tradeoff_bounds(mechanism: Mechanism, fpr, *, tol: float | None = None):
    """Certified bracket ``(lower, upper)`` of the trade-off curve ``beta = f(alpha)``.

    ``f(alpha)`` is the smallest false-negative rate any test reaches at false-positive
    rate ``alpha`` over all ordered neighbouring pairs (Dong, Roth, Su 2022,
    Definition 2.1).  ``lower`` is the safe side (every attack's FNR is at least it):
    the Neyman-Pearson curve of the discrete dominating pair defined by the
    pessimistic PLD.  ``upper`` comes from the optimistic PLD (exact supremum over its
    nodes); see the module docstring for the argument.

    Parameters
    ----------
    mechanism : Mechanism
        Any dpacct mechanism (composed, subsampled, ...).
    fpr : float or array_like
        False-positive rate(s) ``alpha`` in [0, 1].
    tol : float, optional
        Relative accuracy of the PLDs (as in :meth:`Mechanism.epsilon`); default 1e-4.

    Returns
    -------
    (lower, upper) : floats or numpy arrays shaped like ``fpr``

    Raises
    ------
    TypeError
        ``mechanism`` is not a :class:`Mechanism`.
    ValueError
        ``fpr`` outside [0, 1] or NaN; ``tol`` outside (0, 0.5).

    Examples
    --------
    One Poisson-subsampled Gaussian step:

    >>> from dpacct.accountant import poisson_subsample
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> step = poisson_subsample(GaussianMechanism(sigma=1.0), sample_rate=0.1)
    >>> lo, hi = tradeoff_bounds(step, 0.01)
    >>> bool(0.0 <= lo <= hi <= 0.99)
    True
    >>> round(lo, 4)
    0.9818
    """
    mech = _check_mechanism(mechanism)
    a = check_fpr(fpr)
    tol = check_tol(tol)
    low, high = _bounds(mech, a, tol, upper=True)
    return _out(low, a), _out(high, a)


def tpr_bounds(mechanism: Mechanism, fpr, *, tol: float | None = None):
    """Bracket ``(lower, upper)`` of the best attack's true-positive rate at ``fpr``.

    ``upper = 1 - lower(f)`` is the certified bound (no membership-inference attack
    reaches a higher TPR at this FPR); ``lower = 1 - upper(f)`` shows how tight it is.
    See :func:`tradeoff_bounds`.

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism (or composed run) attacked.
    fpr : float or array_like
        False-positive rate(s) of the attack, in [0, 1].
    tol : float, optional
        Relative accuracy of the PLDs, as in :meth:`Mechanism.epsilon`; default 1e-4.

    Examples
    --------
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> lo, hi = tpr_bounds(GaussianMechanism(sigma=1.0), 0.01)
    >>> round(hi, 4)  # 1 - Phi(Phi^-1(0.99) - 1)
    0.0924
    """
    mech = _check_mechanism(mechanism)
    a = check_fpr(fpr)
    tol = check_tol(tol)
    low, high = _bounds(mech, a, tol, upper=True)
    return _out(1.0 - high, a), _out(1.0 - low, a)


def tpr_at(mechanism: Mechanism, fpr, *, tol: float | None = None):
    """Certified upper bound on the best membership-inference attack's TPR at ``fpr``.

    ``1 - lower(f)(fpr)`` (Kulynych et al. 2024, Eq. (3)): computed from the
    pessimistic PLD alone, so it is as fast as :meth:`Mechanism.epsilon`.

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism (or composed run) attacked.
    fpr : float or array_like
        False-positive rate(s) in [0, 1].
    tol : float, optional
        Relative accuracy of the PLDs; default 1e-4.

    Examples
    --------
    >>> from dpacct.calibrators import dpsgd_mechanism
    >>> run = dpsgd_mechanism(1.0, 0.01, 1_000)
    >>> round(tpr_at(run, 0.01), 3)
    0.029
    """
    mech = _check_mechanism(mechanism)
    a = check_fpr(fpr)
    tol = check_tol(tol)
    low, _ = _bounds(mech, a, tol, upper=False)
    return _out(1.0 - low, a)


def advantage_bounds(mechanism: Mechanism, *, tol: float | None = None) -> tuple[float, float]:
    """Bracket ``(lower, upper)`` of the largest TPR - FPR any attack reaches.

    The advantage is ``delta(0)``, the total-variation distance of the neighbouring
    pair (Kairouz, Oh, Viswanath 2015; Kulynych et al. 2024, Proposition 3.1); it is
    the same in both neighbouring directions, so the upper end is the smaller of the
    certified upper bounds (the pessimistic PLD of either direction, the swapped
    remove PLD, the mechanism's own ``delta(0)``), the lower end the larger of the
    optimistic PLDs' values.

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism (or composed run) attacked.
    tol : float, optional
        Relative accuracy of the PLDs, as in :meth:`Mechanism.epsilon`; default 1e-4.

    Examples
    --------
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> lo, hi = advantage_bounds(GaussianMechanism(sigma=1.0))
    >>> round(hi, 6)  # 2 Phi(1/2) - 1
    0.382925
    """
    mech = _check_mechanism(mechanism)
    tol = check_tol(tol)
    upper = float(mech.delta(0.0, tol=tol))
    lower = 0.0
    if mech.has_exact_curve:
        return upper * (1.0 - ROUND_REL), upper
    if mech.has_pld:
        settings = PLDSettings(tol)
        upper = min(upper, mech._pair(True, settings).advantage_upper())
        lower = float(mech._pair(False, settings).delta(0.0))
    return min(lower, upper), upper


def advantage(mechanism: Mechanism, *, tol: float | None = None) -> float:
    """Certified upper bound on the largest TPR - FPR any membership attack reaches.

    Equal to ``delta(epsilon=0)`` (Kulynych et al. 2024, Proposition 3.1); see
    :func:`advantage_bounds`.

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism (or composed run) attacked.
    tol : float, optional
        Relative accuracy of the PLDs, as in :meth:`Mechanism.epsilon`; default 1e-4.

    Examples
    --------
    >>> from dpacct.calibrators import dpsgd_mechanism
    >>> round(advantage(dpsgd_mechanism(1.0, 0.01, 1_000)), 3)
    0.161
    """
    mech = _check_mechanism(mechanism)
    tol = check_tol(tol)
    upper = float(mech.delta(0.0, tol=tol))
    if mech.has_pld and not mech.has_exact_curve:
        upper = min(upper, mech._pair(True, PLDSettings(tol)).advantage_upper())
    return upper
