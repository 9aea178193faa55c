"""Mechanisms known only through a privacy parameter: pure epsilon-DP, or rho-zCDP.

Use these to account for a black-box component whose analysis gives only its pure-DP
epsilon or its zCDP rho.  The curves are the tightest that hold for *every* mechanism
with that guarantee (for pure DP; for zCDP the RDP curve is the definition itself), so
for a particular mechanism they are upper bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpacct.accountant.mechanism import Capabilities, Mechanism
from dpacct.accountant.numerics import EXP_OVERFLOW
from dpacct.accountant.rdp.conversion import zcdp_rdp
from dpacct.accountant.serialization import register_mechanism
from dpacct.accountant.validation import check_delta, check_epsilon, check_positive

from .randomized_response import PureDPCurves

__all__ = [
    "PureDPMechanism",
    "ZCDPMechanism",
    "zcdp_delta",
    "zcdp_epsilon",
    "zcdp_epsilon_tight",
]


@dataclass(frozen=True, repr=False, init=False)
class PureDPMechanism(PureDPCurves, Mechanism):
    """Any ``epsilon``-DP mechanism, accounted by its worst case: binary randomized response.

    Every ``epsilon``-DP mechanism is, in each neighbouring direction, a post-processing
    of binary randomized response with ``p = e^epsilon / (1 + e^epsilon)`` (Kairouz, Oh,
    Viswanath 2015, "The composition theorem for differential privacy", Theorem 2.1 and
    the discussion after it; Dong, Roth, Su 2019, Proposition 2.5 in f-DP terms).  The
    curves below are therefore exact for randomized response and sound upper bounds for
    any other ``epsilon``-DP mechanism:

    * ``delta(eps') = max(0, (1 - e^{eps' - epsilon}) / (1 + e^{-epsilon}))``
      (``= (e^epsilon - e^eps') / (1 + e^epsilon)``);
    * RDP: :func:`~dpacct.accountant.pure_dp_rdp` (Bun & Steinke 2016, Proposition 3.3);
    * privacy loss: atoms ``+-epsilon`` with P-masses ``p, 1 - p`` on the lattice
      ``epsilon`` (exact PLD composition, as in Kairouz, Oh, Viswanath 2015);
    * trade-off ``f_{epsilon,0}(a) = max(0, 1 - e^epsilon a, e^-epsilon (1 - a))``
      (Dong, Roth, Su 2019, Equation 5).

    Parameters
    ----------
    epsilon : float
        The pure-DP parameter, > 0 and finite; available afterwards as ``epsilon0``
        (``epsilon`` is the query method ``epsilon(delta)``).

    Examples
    --------
    >>> m = PureDPMechanism(epsilon=1.0)
    >>> m
    PureDPMechanism(epsilon=1.0)
    >>> m.epsilon0
    1.0
    >>> round(m.delta(0.0), 6)       # tanh(1/2)
    0.462117
    >>> round(m.epsilon(1e-6), 6)    # 1 + log(1 - 1e-6 (1 + e^-1))
    0.999999
    >>> round(float(m.rdp(2.0)), 6)  # log((e^2 + e^-1) / (1 + e))
    0.735326
    """

    #: the pure-DP parameter, stored as ``epsilon0`` because ``epsilon`` is the
    #: :meth:`~dpacct.accountant.mechanism.Mechanism.epsilon` query of every mechanism
    epsilon0: float

    declares = Capabilities(exact_curve=True, rdp=True, loss_laws=True, exact_tradeoff=True)

    def __init__(self, epsilon: float) -> None:
        object.__setattr__(self, "epsilon0", check_positive("epsilon", epsilon))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon0!r})"


def _encode_zcdp(m: ZCDPMechanism) -> dict[str, float]:
    # xi = 0 is written as before xi existed, so stored ledgers keep their bytes
    return {"rho": m.rho, **({"xi": m.xi} if m.xi else {})}


@register_mechanism("zcdp", encode=_encode_zcdp)
@dataclass(frozen=True, repr=False)
class ZCDPMechanism(Mechanism):
    """Any ``rho``-zCDP mechanism: Renyi-DP ``alpha * rho`` at every order, nothing more.

    zCDP (Bun & Steinke 2016, Definition 1.1) fixes only the RDP curve, so this class
    states only :meth:`rdp`; epsilon/delta queries are answered by the RDP conversion
    (Canonne, Kamath, Steinke 2020, Proposition 12) optimised exactly over *all* real
    orders (:func:`zcdp_epsilon`, :func:`zcdp_delta`; the generic conversion's order
    grid stops at 8192, far below the optimum for tiny ``rho``), which for
    ``alpha * rho`` is never worse than the classical
    ``rho + 2 sqrt(rho log(1/delta))`` (Bun & Steinke 2016, Proposition 1.3).  There is
    no privacy loss distribution (zCDP does not determine one), hence no lower bound:
    :meth:`epsilon_bounds` returns ``(0, upper)``.  Note that a ``rho``-zCDP mechanism
    need not be dominated by the Gaussian mechanism with ``sigma = 1/sqrt(2 rho)``, so
    the Gaussian curve is *not* a valid bound here.

    With ``xi > 0`` the guarantee is ``(xi, rho)``-zCDP (Bun & Steinke 2016, Definition
    1.1 in full: ``D_alpha <= xi + rho * alpha`` at every order), the RDP curve of, for
    example, a discrete Gaussian in several dimensions or a ``ZCDpEvent(rho, xi)``.  The
    conversions shift by ``xi`` exactly: the CKS bound is ``rdp(a)`` plus a term free of
    the curve, so ``epsilon(delta) = xi + epsilon_{rho}(delta)`` and
    ``delta(eps) = delta_{rho}(eps - xi)`` for ``eps >= xi`` (below ``xi`` the generic
    conversion answers).

    Parameters
    ----------
    rho : float
        The zCDP parameter, > 0 and finite.
    xi : float, default 0.0
        The additive constant of ``(xi, rho)``-zCDP, >= 0 and finite.

    Examples
    --------
    >>> round(ZCDPMechanism(rho=0.5, xi=0.1).epsilon(1e-5)
    ...       - ZCDPMechanism(rho=0.5).epsilon(1e-5), 12)
    0.1
    >>> m = ZCDPMechanism(rho=0.5)
    >>> m.rdp([2.0, 4.5])
    array([1.  , 2.25])
    >>> m.route
    'rdp'
    >>> bool(m.epsilon(1e-5) < 0.5 + 2 * np.sqrt(0.5 * np.log(1e5)))
    True
    """

    rho: float
    xi: float = 0.0

    declares = Capabilities(rdp=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", check_positive("rho", self.rho))
        object.__setattr__(self, "xi", check_epsilon(self.xi, "xi"))

    def __repr__(self) -> str:
        xi = f", xi={self.xi!r}" if self.xi else ""
        return f"{type(self).__name__}(rho={self.rho!r}{xi})"

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        return zcdp_rdp(self.rho, alpha) + self.xi

    def _epsilon_upper(self, delta: float, tol: float | None) -> float:
        # The exact optimum over all real orders (zcdp_epsilon_tight).  The generic
        # conversion searches the same bound on a grid of orders (up to 8192; for tiny rho
        # the optimal order sqrt(log(1/delta)/rho) lies far beyond it) and rounds up by
        # 1e-12 of its value: where the optimum's certified error (2^-44 of its terms'
        # magnitudes) is below that rounding, the optimum is never above the grid's
        # answer and the grid is skipped; otherwise both are computed and the smaller wins.
        tight, scale = zcdp_epsilon_tight(self.rho, delta)
        value = math.nextafter(self.xi + tight, math.inf) if self.xi else tight
        if value > 0.0 and _SKIP_GRID * (scale + self.xi) <= 1e-12 * value:
            return value
        return min(super()._epsilon_upper(delta, tol), value)

    def delta(self, epsilon, *, tol: float | None = None):
        """Sound upper bound on delta at ``epsilon``; see :meth:`Mechanism.delta`.

        Answered by :func:`zcdp_delta`, the exact optimum over all real orders of the
        RDP conversion the generic route evaluates on a grid of orders (so never above
        it), for the curve ``alpha * rho``.

        Parameters
        ----------
        epsilon : float or array_like
            Epsilon(s), >= 0.
        tol : float, optional
            Unused by the closed form; accepted for the common interface.

        Examples
        --------
        >>> m = ZCDPMechanism(rho=1e-12)
        >>> bool(m.delta(m.epsilon(1e-10)) <= 1e-10 * (1 + 1e-12))  # delta rounds up 1e-12
        True
        """
        eps = np.asarray(epsilon, dtype=float)
        flat = [check_epsilon(float(e)) for e in eps.reshape(-1)]  # NaN, inf, < 0
        below = [e for e in flat if e < self.xi]  # below xi: the generic conversion
        low = np.atleast_1d(super().delta(below, tol=tol)) if below else []
        generic = dict(zip(below, low, strict=True))
        vals = [generic[e] if e < self.xi else zcdp_delta(self.rho, e - self.xi) for e in flat]
        out = np.reshape(vals, eps.shape)
        return float(out) if eps.ndim == 0 else out


# ---------------------------------------------------------------------------------------
# the CKS / Balle et al. conversion for the linear RDP curve alpha * rho, solved exactly
# ---------------------------------------------------------------------------------------
def _bisect_log_order(g, lo: float, hi: float) -> float:
    """Root of an increasing ``g(u)`` in ``[lo, hi]`` (``g(lo) < 0 < g(hi)``), ``u = log(a-1)``."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if g(mid) < 0.0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _optimal_log_order(rho: float, log_inv_delta: float) -> float:
    """``u = log(a - 1)`` at the root of ``rho (a-1)^2 + log a = log(1/delta)`` (bisected)."""
    log_rho = math.log(rho)

    def g(u: float) -> float:  # rho (a-1)^2 + log a - log(1/delta), increasing in u
        return math.exp(log_rho + 2.0 * u) + math.log1p(math.exp(u)) - log_inv_delta

    # g(hi) >= (e^2 - 1) log(1/delta) > 0
    hi = 0.5 * (math.log(log_inv_delta) - log_rho) + 1.0
    lo = hi - 1.0
    while g(lo) >= 0.0:
        lo -= 2.0 * abs(lo) + 1.0
    return _bisect_log_order(g, lo, hi)


def _log_one_minus_inv(u: float) -> float:
    """``log(1 - 1/a)`` for ``a = 1 + e^u``, i.e. ``-log(1 + e^-u)``, without cancellation."""
    return u - math.log1p(math.exp(u)) if u < 0.0 else -math.log1p(math.exp(-u))


def zcdp_epsilon(rho: float, delta: float) -> float:
    """Smallest epsilon the RDP conversion certifies for ``rho``-zCDP, over all orders.

    Canonne, Kamath, Steinke 2020, Proposition 12 (Balle et al. 2020, Theorem 21): any
    order ``a > 1`` gives ``(eps(a), delta)``-DP with, for the zCDP curve ``a * rho``
    (Bun & Steinke 2016, Definition 1.1),

        eps(a) = a rho + log(1 - 1/a) - (log delta + log a) / (a - 1).

    Its derivative is ``eps'(a) = rho - (log(1/delta) - log a) / (a - 1)^2``, which is
    increasing (for ``a < 1/delta`` the subtracted term decreases, beyond it it is
    negative), so ``eps`` is minimised at the unique root of
    ``rho (a - 1)^2 + log a = log(1/delta)``.  The root is bracketed and bisected in
    ``u = log(a - 1)`` with no upper cap on the order (for ``rho = 1e-12`` it is near
    ``6e6`` at ``delta = 1e-15``, far beyond a fixed grid).  Any order gives a valid
    bound, so bisection round-off affects tightness only; the value is rounded up by
    ``1e-12`` of the terms' magnitude.  Never larger than Bun & Steinke 2016, Proposition 1.3
    (``rho + 2 sqrt(rho log(1/delta))``).

    Parameters
    ----------
    rho : float
        The zCDP parameter, > 0.
    delta : float
        Target delta, in (0, 1).

    Examples
    --------
    >>> rho, delta = 1e-12, 1e-15
    >>> eps = zcdp_epsilon(rho, delta)
    >>> classical = rho + 2 * np.sqrt(rho * np.log(1 / delta))
    >>> bool(eps <= classical), round(float(eps / classical), 3)
    (True, 0.727)
    """
    rho = check_positive("rho", rho)
    delta = check_delta(delta, what="zCDP")
    log_inv_delta = -math.log(delta)
    log_rho = math.log(rho)
    u = _optimal_log_order(rho, log_inv_delta)
    log_a = math.log1p(math.exp(u))
    # a rho = rho + e^u rho, for a - 1 = e^u of any size
    terms = (
        rho,
        math.exp(log_rho + u),
        _log_one_minus_inv(u),
        (log_inv_delta - log_a) * math.exp(-u),
    )
    # round up by far more than the round-off of the three terms; a negative value
    # certifies epsilon = 0 (a bound at a smaller epsilon holds at larger ones)
    eps = math.fsum(terms) + 1e-12 * sum(abs(t) for t in terms)
    return max(eps, 0.0)


#: the optimum's certified error (``_TIGHT_MARGIN``) plus the grid route's float error,
#: relative to the terms' magnitudes: under 1e-12 of the answer, the grid is skipped
_SKIP_GRID = 2.0**-44
#: the rounding of :func:`zcdp_epsilon_tight`, relative to its terms' magnitudes: 16x
#: the four ulps each term may be off
_TIGHT_MARGIN = 2.0**-46


def zcdp_epsilon_tight(rho: float, delta: float) -> tuple[float, float]:
    """:func:`zcdp_epsilon` evaluated at a float order, rounded up by its float error.

    The same bound (Canonne, Kamath, Steinke 2020, Proposition 12; Balle et al. 2020,
    Theorem 21) at the same optimal order, but every term is computed from the float
    order ``a`` itself (``a - 1`` exact for ``a <= 2``, ``log(1 - 1/a)`` as
    ``log(a - 1) - log(a)`` there), so each is within four ulps of the bound at ``a``
    (any order gives a valid bound), and the rounding is ``2^-46`` of the terms'
    magnitudes (with the cancelling numerator ``log(1/delta) - log a`` counted at its
    parts' size) instead of :func:`zcdp_epsilon`'s ``1e-12``.

    Parameters
    ----------
    rho, delta : float
        As :func:`zcdp_epsilon`: ``rho > 0``, ``delta`` in (0, 1).

    Returns
    -------
    (float, float)
        The certified epsilon (>= 0) and the magnitude its rounding is relative to.

    Examples
    --------
    >>> eps, scale = zcdp_epsilon_tight(1.0, 1e-6)
    >>> bool(eps < zcdp_epsilon(1.0, 1e-6)), round(eps, 9)
    (True, 7.766216625)
    """
    rho = check_positive("rho", rho)
    delta = check_delta(delta, what="zCDP")
    log_inv_delta = -math.log(delta)
    u = _optimal_log_order(rho, log_inv_delta)
    a = 1.0 + math.exp(u)
    if a == 1.0 or not math.isfinite(a):  # the order is not a float: the plain value
        return zcdp_epsilon(rho, delta), math.inf
    am1, log_a = a - 1.0, math.log(a)
    last = math.log1p(-1.0 / a) if a >= 2.0 else math.log(am1) - log_a
    terms = (rho * a, last, (log_inv_delta - log_a) / am1)
    scale = sum(abs(t) for t in terms) + (log_inv_delta + log_a) / am1
    eps = math.fsum(terms) + _TIGHT_MARGIN * scale
    return max(eps, 0.0), scale


def zcdp_delta(rho: float, epsilon: float) -> float:
    """Smallest delta the RDP conversion certifies for ``rho``-zCDP at ``epsilon``.

    The inverse form of :func:`zcdp_epsilon` (same references):
    ``log delta(a) = (a - 1) (a rho - eps + log(1 - 1/a)) - log a``, whose derivative
    ``(2a - 1) rho - eps + log(1 - 1/a)`` is increasing in ``a``: the minimum is at its
    unique root (or as ``a -> 1`` when it is positive everywhere, giving ``delta = 1``),
    found by bisection in ``log(a - 1)``.  Rounded up by ``1e-12`` relative.  Where
    Bun & Steinke 2016, Proposition 1.3 already gives ``delta < e^-750`` the result is 0.

    Parameters
    ----------
    rho : float
        The zCDP parameter, > 0.
    epsilon : float
        Epsilon, >= 0.

    Examples
    --------
    >>> d = zcdp_delta(1e-12, zcdp_epsilon(1e-12, 1e-15))
    >>> bool(0.99e-15 <= d <= 1e-15)
    True
    """
    rho = check_positive("rho", rho)
    eps = check_epsilon(epsilon)
    if eps > rho and (eps - rho) / math.sqrt(4.0 * rho) > math.sqrt(750.0):
        # Bun & Steinke 2016, Proposition 1.3: delta <= exp(-(eps - rho)^2 / (4 rho)),
        # which underflows to 0 here
        return 0.0
    log_rho = math.log(rho)

    def g(u: float) -> float:  # derivative of log delta(a), increasing in u
        # (2a - 1) rho - eps + log(1 - 1/a) with a = 1 + e^u
        return rho + 2.0 * math.exp(min(log_rho + u, EXP_OVERFLOW)) - eps + _log_one_minus_inv(u)

    hi = min(max(math.log(max(eps, 1.0)) - log_rho, 1.0), EXP_OVERFLOW)  # g(hi) > 0 unless capped
    lo = -1.0
    while g(lo) >= 0.0:
        if lo < -EXP_OVERFLOW:  # positive derivative everywhere: the infimum is at a -> 1
            return 1.0
        lo = 2.0 * lo - 1.0
    # (any order gives a valid bound: if even the cap has g < 0, the cap is used)
    u = _bisect_log_order(g, lo, hi) if g(hi) >= 0.0 else hi
    log_a = math.log1p(math.exp(u))
    a_rho = rho + math.exp(log_rho + u)
    log_d = math.exp(u) * (a_rho - eps + _log_one_minus_inv(u)) - log_a
    return min(1.0, math.exp(min(log_d, 0.0)) * (1.0 + 1e-12))


# ledger files store a pure-DP mechanism by its parameter's public name
register_mechanism(
    "pure_dp",
    PureDPMechanism,
    encode=lambda m: {"epsilon": m.epsilon0},
    decode=lambda params: PureDPMechanism(epsilon=params["epsilon"]),
)
