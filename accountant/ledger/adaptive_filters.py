"""Fully adaptive privacy filters beyond one Renyi order: many orders at once, and GDP.

Three filters for loops whose next mechanism may depend on everything released so far
(the proofs are written out in ``docs/theory/renyi_filter.md``):

* :class:`RenyiOrdersFilter` (``adaptive="renyi_orders"``): the summed Renyi DP is
  tracked at the orders :func:`renyi_orders_grid` around the one-order filter's order.
  For each order ``a`` the process ``exp((a - 1) (L_t - S_t(a)))`` -- ``L_t`` the
  realised privacy loss, ``S_t(a)`` the summed RDP of the mechanisms chosen so far --
  is a nonnegative supermartingale (the argument of Feldman & Zrnic 2021, "Individual
  privacy accounting via a Renyi filter", NeurIPS, Theorem 3.1).  A mixture of them
  with weights ``w_a`` fixed before anything is released is one too, and it bounds the
  hockey-stick divergence of the whole adaptive run by ``delta`` as long as
  ``sum_a w_a delta / delta_a(S(a)) >= 1``, where ``delta_a(S)`` is the delta that
  ``(a, S)``-RDP converts to at the budget's epsilon (Canonne, Kamath & Steinke 2020,
  Proposition 12).  With all weight on one order this is the one-order filter.  The
  weights are fixed at the first record so that the first record, repeated, is
  admitted at least as often as by the one-order filter (:func:`renyi_orders_spread`).
* :class:`RenyiOrdersWideFilter` (``adaptive="renyi_orders_wide"``): the same mixture
  over every order of ``ADAPTIVE_ORDERS`` with a fixed quarter of the weight spread:
  far more steps when the schedule moves away from the first record, 1-6 % fewer when
  it does not.
* :class:`GDPFilter` (``adaptive="gdp"``): full-batch Gaussian records only.  Smith &
  Thakurta 2022 ("Fully adaptive composition for Gaussian differential privacy", arXiv
  2210.17520, main theorem): adaptively chosen ``mu_t``-GDP mechanisms whose
  ``sum mu_t^2`` never exceeds ``mu^2`` are ``mu``-GDP together -- the parameters of
  non-adaptive composition (Dong, Roth & Su 2019, Corollary 3.3).  The budget ``mu`` is
  the largest float whose exact GDP curve (Balle & Wang 2018, Theorem 8) is at most
  ``budget_delta`` at ``budget_epsilon``, decided by certified arithmetic.

The vectorised core, :func:`renyi_mixture_log_ratio`, evaluates the mixture condition
for any number of independent ledgers at once (orders x records), for per-record
filters.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ..families.gaussian_dp import gaussian_delta_at_most_exact, gaussian_epsilon
from ..mechanism import Mechanism
from .filters import ADAPTIVE_ORDERS, RenyiFilter, _refusal
from .records import Entry, key

__all__ = [
    "ORDERS_HALF",
    "ORDERS_SPREAD",
    "ORDERS_STEP",
    "ORDERS_WIDTH",
    "GDPFilter",
    "RenyiOrdersFilter",
    "RenyiOrdersWideFilter",
    "gdp_budget",
    "renyi_log_delta",
    "renyi_mixture_log_ratio",
    "renyi_orders_grid",
    "renyi_orders_spread",
    "renyi_orders_weights",
]

#: the every-order filter's weights are fixed at the first record from these constants
#: (and the budget, the first record and the order grid below): a saved
#: ``adaptive="renyi_orders"`` ledger writes only its centre order and rebuilds them from
#: its first entry, so changing any of them needs a new filter name, never an edit under
#: this one.  ORDERS_SPREAD caps the share of weight spread around the centre (the share
#: actually spread is the largest up to it that keeps the one-order filter's count for
#: the first record, :func:`renyi_orders_spread`)
ORDERS_SPREAD = 0.5
#: width of that spread: a Gaussian kernel in ``log(order)`` (0.1: a factor 1.105)
ORDERS_WIDTH = 0.1
#: the orders: ``centre * exp(ORDERS_STEP * j)`` for ``|j| <= ORDERS_HALF`` (and > 1)
ORDERS_STEP = 0.01
ORDERS_HALF = 12


def _target_slack(copies: float) -> float:
    """Relative slack on ``copies`` times the first record's RDP when the spread is
    chosen: at least what the filter's own check adds to that state when it is reached
    in at most ``copies`` records (the sum's round-off ``(n + 1) 2^-53``, the margin
    ``(n + 1) 2^-52`` and two more roundings), plus the check's ``_SUM_SLACK``; for
    runs of at most 10^7 records (beyond, the slack would swamp the state)."""
    return 4.0 * (min(copies, 1e7) + 2.0) * 2.0**-52 + 2.0 * _SUM_SLACK
#: relative slack on the summed RDP for the round-off of the check itself (the running
#: sum's own round-off is covered by :func:`_sum_margin`, which grows with its length)
_SUM_SLACK = 1e-12


def _sum_margin(adds: int) -> float:
    """``1 + (adds + 1) 2^-52``: a float sum of ``adds`` non-negative products
    ``count * rdp`` is at least ``(1 - gamma_adds)`` times the exact one (Higham 2002,
    "Accuracy and Stability of Numerical Algorithms", eq. (4.4): each term passes
    through at most ``adds`` roundings of relative size ``2^-53``), and
    ``1 / (1 - gamma_n) <= 1 + (n + 1) 2^-52`` while ``n 2^-53 <= 1/4``."""
    return 1.0 + (adds + 1) * 2.0**-52


_U = 2.0**-53


def renyi_log_delta(orders: np.ndarray, spent: np.ndarray, epsilon: float) -> np.ndarray:
    """``log delta`` that ``(alpha, spent)``-RDP converts to at ``epsilon``, per order.

    Canonne, Kamath & Steinke 2020, Proposition 12 (Balle et al. 2020, Theorem 21):
    ``delta = exp((alpha - 1) (spent - epsilon)) (1 - 1/alpha)^(alpha - 1) / alpha``,
    the supremum over ``L`` of ``(1 - e^(epsilon - L))_+ e^(-(alpha - 1) L)`` times
    ``E[e^((alpha - 1) L)] <= e^((alpha - 1) spent)``.

    Parameters
    ----------
    orders : numpy.ndarray
        Renyi orders (> 1), shape ``(k,)``.
    spent : numpy.ndarray
        Summed RDP, shape ``(k,)`` or ``(k, n)`` (orders first; ``n`` ledgers).
    epsilon : float
        The epsilon of the budget, >= 0.

    Returns
    -------
    numpy.ndarray
        ``log delta``, the shape of ``spent``.

    Examples
    --------
    >>> a = np.array([2.0])
    >>> float(renyi_log_delta(a, np.array([1.0]), 2.0)[0]) == -1.0 + math.log(0.25)
    True
    """
    a = np.asarray(orders, dtype=float)
    s = np.asarray(spent, dtype=float)
    if s.ndim == 2:
        a = a[:, None]
    return (a - 1.0) * (s - epsilon) + (a - 1.0) * np.log1p(-1.0 / a) - np.log(a)


def renyi_mixture_log_ratio(
    spent: np.ndarray, orders: np.ndarray, log_weights: np.ndarray, budget: tuple[float, float]
) -> np.ndarray:
    """``log sum_a w_a delta / delta_a(spent_a)``: the filter admits while it is >= 0.

    The mixture condition of :class:`RenyiOrdersFilter` (proof in
    ``docs/theory/renyi_filter.md``), vectorised over ledgers: ``spent`` is the summed
    RDP with the orders on axis 0 and, optionally, one column per ledger (per record).

    Parameters
    ----------
    spent : numpy.ndarray
        Summed RDP, shape ``(k,)`` or ``(k, n)``.
    orders : numpy.ndarray
        The ``k`` Renyi orders (> 1).
    log_weights : numpy.ndarray
        ``log w_a`` (shape ``(k,)``, or ``(k, n)``: one weight vector per ledger;
        ``sum w_a <= 1``; ``-inf`` for no weight), fixed before anything was released.
    budget : (float, float)
        ``(epsilon, delta)``.

    Returns
    -------
    numpy.ndarray
        Shape ``()`` or ``(n,)``; ``>= 0`` where the ledger is within the budget.

    Examples
    --------
    >>> a = np.array([16.0, 64.0])
    >>> w = np.log([0.5, 0.5])
    >>> bool(renyi_mixture_log_ratio(np.array([0.1, 0.4]), a, w, (1.0, 1e-5)) >= 0)
    True
    >>> bool(renyi_mixture_log_ratio(np.array([0.5, 2.0]), a, w, (1.0, 1e-5)) >= 0)
    False

    Three ledgers (records) at once, orders on the first axis:

    >>> spent = np.array([[0.1, 0.5, 0.1], [0.4, 2.0, 3.0]])
    >>> renyi_mixture_log_ratio(spent, a, w, (1.0, 1e-5)) >= 0
    array([ True, False,  True])
    """
    eps, delta = budget
    s = np.asarray(spent, dtype=float) * (1.0 + _SUM_SLACK)
    lw = np.asarray(log_weights, dtype=float)
    if s.ndim == 2 and lw.ndim == 1:
        lw = lw[:, None]
    terms = lw + math.log(delta) - renyi_log_delta(orders, s, eps)
    return logsumexp(terms, axis=0)


def renyi_orders_weights(
    orders: np.ndarray, center: int, spread: float = ORDERS_SPREAD, width: float = ORDERS_WIDTH
) -> np.ndarray:
    """``log w``: ``1 - spread`` on ``orders[center]``, ``spread`` over all orders by a
    Gaussian kernel in ``log(order)`` of standard deviation ``width`` around it.

    Parameters
    ----------
    orders : numpy.ndarray
        The Renyi orders (> 1).
    center : int
        Index of the order holding most weight.
    spread, width : float
        The share of weight spread around it, in [0, 1], and the kernel's width.

    Examples
    --------
    >>> w = np.exp(renyi_orders_weights(np.array([2.0, 4.0, 8.0]), 1, 0.25, 0.25))
    >>> bool(abs(w.sum() - 1) < 1e-12 and w[1] > 0.75 and abs(w[0] - w[2]) < 1e-15)
    True
    """
    la = np.log(np.asarray(orders, dtype=float))
    kernel = np.exp(-0.5 * ((la - la[center]) / width) ** 2)
    w = spread * kernel / kernel.sum()
    w[center] += 1.0 - spread
    with np.errstate(divide="ignore"):
        return np.log(w)


def renyi_orders_grid(centre: float) -> np.ndarray:
    """The every-order filter's orders: ``centre * exp(ORDERS_STEP * j)``, ``|j| <=
    ORDERS_HALF``, those above 1 (``centre`` itself is always one of them, exactly).

    Examples
    --------
    >>> g = renyi_orders_grid(4.0)
    >>> g.size, float(g[ORDERS_HALF]), round(float(g[-1] / g[0]), 4)
    (25, 4.0, 1.2712)
    """
    j = np.arange(-ORDERS_HALF, ORDERS_HALF + 1)
    grid = centre * np.exp(ORDERS_STEP * j)
    grid[ORDERS_HALF] = centre
    return grid[(grid > 1.0 + 1e-9) | (j == 0)]


def renyi_orders_spread(
    orders: np.ndarray,
    center: int,
    first_rdp: np.ndarray,
    copies: float,
    budget: tuple[float, float],
    cap: float = ORDERS_SPREAD,
    width: float = ORDERS_WIDTH,
) -> float:
    """The largest share ``s <= cap`` of weight to spread such that ``copies`` copies of
    the first record still meet the mixture condition.

    With weights ``(1 - s) [centre] + s k`` (``k`` the kernel of
    :func:`renyi_orders_weights`) the mixture ratio at a fixed state is linear in ``s``:
    ``(1 - s) r_c + s K``, ``r_c = delta / delta_c`` at the centre and ``K = sum_a k_a
    delta / delta_a``.  The answer is ``cap`` if the ratio is at least 1 there, else
    ``(r_c - 1) / (r_c - K)`` (the ratio is at least 1 on ``[0, s]``) when ``r_c >=
    1``, else 0 (no share keeps the count; the filter is then the centre order
    alone).  The state is ``copies`` times the first record's RDP, raised by
    ``_target_slack(copies)``; the answer is rounded down to a multiple of ``2^-40``.

    Parameters
    ----------
    orders : numpy.ndarray
        The orders (> 1).
    center : int
        Index of the centre order.
    first_rdp : numpy.ndarray
        The first record's RDP at ``orders``.
    copies : float
        How many copies of it must fit (the one-order filter's count), >= 0.
    budget : (float, float)
        ``(epsilon, delta)``.
    cap, width : float
        The largest share, and the kernel's width.

    Examples
    --------
    >>> a = renyi_orders_grid(8.0)
    >>> rho = a / (2 * 10.0**2)                  # a Gaussian, sigma 10: 44.6 copies fit
    >>> s = renyi_orders_spread(a, ORDERS_HALF, rho, 44, (3.0, 1e-5))
    >>> 0.0 < s <= ORDERS_SPREAD
    True
    >>> renyi_orders_spread(a, ORDERS_HALF, rho, 45, (3.0, 1e-5))  # 45 do not fit at 8
    0.0
    """
    if copies <= 0:
        return float(cap)
    eps, delta = budget
    spent = copies * np.asarray(first_rdp, dtype=float) * (1.0 + _target_slack(copies))
    log_r = math.log(delta) - renyi_log_delta(orders, spent * (1.0 + _SUM_SLACK), eps)
    la = np.log(np.asarray(orders, dtype=float))
    kernel = np.exp(-0.5 * ((la - la[center]) / width) ** 2)
    kernel /= kernel.sum()
    log_rc = float(log_r[center])
    log_k = float(logsumexp(log_r, b=kernel))
    if cap > 0.0 and np.logaddexp(math.log1p(-cap) if cap < 1.0 else -math.inf,
                                  math.log(cap) + log_k) >= 0.0:
        return float(cap)  # the ratio is linear in s: at least 1 at the cap
    if log_rc < 0.0:
        return 0.0
    # K < 1 <= r_c here: (r_c - 1) / (r_c - K), from the logs without overflow
    top = -math.expm1(-log_rc)  # (r_c - 1) / r_c
    bottom = -math.expm1(log_k - log_rc)  # (r_c - K) / r_c
    s = min(float(cap), top / bottom * (1.0 - 1e-9))
    return math.floor(s * 2.0**40) / 2.0**40


class RenyiOrdersFilter:
    """The fully adaptive filter over many Renyi orders (``adaptive="renyi_orders"``).

    Tracks the summed RDP at each order of :func:`renyi_orders_grid` around the order
    ``a0`` the one-order filter would fix, and admits a record while the mixture
    condition :func:`renyi_mixture_log_ratio` holds with the weights of
    :func:`renyi_orders_weights`: ``1 - s`` on ``a0`` and ``s`` spread around it, ``s``
    the largest share (up to ``ORDERS_SPREAD``) at which the first record, repeated,
    is admitted as often as by the one-order filter (:func:`renyi_orders_spread`).  All
    of it is fixed at the first record, before anything is released.  Validity: the
    supermartingale of Feldman & Zrnic 2021 (Theorem 3.1) at each order, mixed; and on
    every schedule that repeats the first record it admits at least as many steps as
    ``adaptive=True`` (``docs/theory/renyi_filter.md``).  O(orders) per record.

    Parameters
    ----------
    budget : (float, float)
        ``(budget_epsilon, budget_delta)``.
    order : float or None
        The centre order ``a0`` (any order > 1); None: the one-order filter's choice
        at the first record.

    Examples
    --------
    >>> from dpacct.accountant import poisson_subsample
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> f = RenyiOrdersFilter((3.0, 1e-5), None)
    >>> step = Entry.of(poisson_subsample(GaussianMechanism(sigma=1.0), 0.01), 2000)
    >>> f.admit(step); f.charge(step)
    >>> round(f.order, 2), bool(0 < f.spread <= ORDERS_SPREAD), bool(f.epsilon_of(f.spent) < 3)
    (6.35, True, True)
    """

    name = "renyi_orders"

    def __init__(self, budget: tuple[float, float], order: float | None) -> None:
        self.budget = budget
        self.order: float | None = None
        self.orders: np.ndarray | None = None
        self.spent: np.ndarray | None = None
        self._adds = 0  # additions into spent, for the round-off margin of the sum
        self.spread: float | None = None
        self.log_weights: np.ndarray | None = None
        self._cache: dict[Any, np.ndarray] = {}
        if order is not None:
            self._set_centre(float(order))

    def _set_centre(self, order: float) -> None:
        self.order = order
        self.orders = renyi_orders_grid(order)
        self.spent = np.zeros(self.orders.size)
        self._cache.clear()

    def _fix_weights(self, entry: Entry) -> None:
        """Centre (unless given) and weights, from the first record alone."""
        if self.order is None:
            self._set_centre(RenyiFilter(self.budget, None)._choose_order(entry.mechanism))
        assert self.orders is not None and self.order is not None
        center = int(np.argmin(np.abs(self.orders - self.order)))
        self.spread = self._spread(entry, center)
        self.log_weights = renyi_orders_weights(self.orders, center, self.spread, self._width())
        # renyi_mixture_log_ratio's terms as  const - slope * spent  (one record's check
        # is then a handful of length-k array operations)
        a = self.orders
        eps, delta = self.budget
        self._slope = (a - 1.0) * (1.0 + _SUM_SLACK)
        self._const = (
            self.log_weights + math.log(delta) + (a - 1.0) * eps
            - (a - 1.0) * np.log1p(-1.0 / a) + np.log(a)
        )

    def _spread(self, entry: Entry, center: int) -> float:
        """The share of weight spread: the largest (up to ``ORDERS_SPREAD``) at which the
        one-order filter's count of the first record still fits."""
        one = RenyiFilter(self.budget, self.order)
        rho0 = one.rdp_at(entry.mechanism)
        limit = one._safe_rdp_budget(self.order)
        copies = 0.0
        if limit >= 0.0 and rho0 > 0.0:
            # at least the one-order filter's count (it admits n copies only if n rho0 <= limit)
            copies = float(math.floor(limit / rho0 * (1.0 + 1e-12)))
        return renyi_orders_spread(
            self.orders, center, self.rdp_at(entry.mechanism), copies, self.budget
        )

    def _width(self) -> float:
        return ORDERS_WIDTH

    def _log_ratio(self, spent: np.ndarray) -> float:
        """:func:`renyi_mixture_log_ratio` of ``spent`` at the budget, for this filter."""
        terms = self._const - self._slope * spent
        top = float(terms.max())
        if not math.isfinite(top):
            return top
        return top + math.log(float(np.exp(terms - top).sum()))

    def rdp_at(self, mechanism: Mechanism) -> np.ndarray:
        """RDP of ``mechanism`` at every order of the filter (cached)."""
        k = key(mechanism)
        value = self._cache.get(k)
        if value is None:
            if not mechanism.has_rdp:
                raise ValueError(
                    f"adaptive='renyi_orders' accounts by Renyi DP, and {mechanism!r} has no "
                    "RDP curve (nothing was recorded)"
                )
            value = np.asarray(mechanism.rdp(self.orders), dtype=float)
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[k] = value
        return value

    def admit(self, entry: Entry) -> None:
        """Raise :class:`BudgetExceededError` if the mixture condition would fail."""
        if not entry.mechanism.has_rdp:
            self.rdp_at(entry.mechanism)  # raises, before anything is fixed
        if self.log_weights is not None:
            return self._check(entry)
        # weights tried on this first record are kept only if it is admitted (it is then
        # the first recorded entry, the one a saved file rebuilds them from); a refused
        # record releases nothing, so the next one chooses them afresh
        fresh = self.order is None
        self._fix_weights(entry)
        try:
            self._check(entry)
        except Exception:
            self.log_weights = self.spread = None
            if fresh:
                self.order = self.orders = self.spent = None
                self._cache.clear()
            raise

    def _check(self, entry: Entry) -> None:
        total = self.spent + entry.count * self.rdp_at(entry.mechanism)
        # the float sum may sit below the exact one by its round-off: check an upper bound
        total = total * _sum_margin(self._adds + 1)
        if self._log_ratio(total) >= 0.0:
            return
        eps = self.epsilon_of(total)
        detail = f"the Renyi-orders mixture to epsilon {eps:.6g}"
        raise _refusal(entry, eps, self.budget, detail, "(adaptive Renyi-orders filter)")

    def charge(self, entry: Entry) -> None:
        """Add the record's RDP at every order to the running sums."""
        if self.log_weights is None:
            self._fix_weights(entry)
        self.spent = self.spent + entry.count * self.rdp_at(entry.mechanism)
        self._adds += 1

    restore = charge

    def epsilon_of(self, spent: np.ndarray) -> float:
        """The least epsilon at which the mixture condition holds for ``spent`` (at the
        budget's delta), by bisection to 1e-9 relative, rounded up."""
        delta = self.budget[1]

        def ok(eps: float) -> bool:
            return float(
                renyi_mixture_log_ratio(spent, self.orders, self.log_weights, (eps, delta))
            ) >= 0.0

        hi = max(self.budget[0], 1.0)
        while not ok(hi):
            hi *= 2.0
            if hi > 1e12:
                return math.inf
        lo = 0.0
        while hi - lo > 1e-9 * hi:
            mid = 0.5 * (lo + hi)
            if ok(mid):
                hi = mid
            else:
                lo = mid
        return hi

    def options(self) -> dict[str, Any]:
        """``adaptive``, the centre order and, for ``"renyi_orders"``, the weights' version.

        Ledgers saved before the weights were chosen per first record name
        ``"renyi_orders"`` without ``renyi_weights``; they are read back as
        ``"renyi_orders_wide"`` (those weights exactly), since switching a run's
        mixture weights part-way would void the filter's guarantee.
        """
        out: dict[str, Any] = {"adaptive": self.name, "adaptive_order": self.order}
        if self.name == "renyi_orders":
            out["renyi_weights"] = RENYI_WEIGHTS_VERSION
        return out


#: the version of ``adaptive="renyi_orders"``'s weights a saved ledger records (2: chosen
#: per first record; files without it hold version 1, today's ``"renyi_orders_wide"``)
RENYI_WEIGHTS_VERSION = 2

#: the weights of ``adaptive="renyi_orders_wide"``, fixed (they are part of its saved
#: ledgers, which write only the centre): a quarter of the weight spread over
#: ``ADAPTIVE_ORDERS`` by a Gaussian kernel of width 0.25 in ``log(order)``
WIDE_SPREAD = 0.25
WIDE_WIDTH = 0.25


class RenyiOrdersWideFilter(RenyiOrdersFilter):
    """Every order of ``ADAPTIVE_ORDERS``, a fixed quarter of the weight spread
    (``adaptive="renyi_orders_wide"``).

    :class:`RenyiOrdersFilter` with other weights: ``1 - WIDE_SPREAD`` on the grid order
    nearest the centre and ``WIDE_SPREAD`` spread over the whole grid (a kernel of width
    ``WIDE_WIDTH`` in ``log(order)``).  It keeps admitting when the schedule moves far
    from its first record (139 steps where ``adaptive=True`` admits 7 at q 0.01,
    epsilon 3, sigma 1.5 then 0.8), at 1-6 % fewer steps on a constant schedule:
    with fixed weights no filter of this kind does both
    (``docs/theory/renyi_filter.md``).  This was ``adaptive="renyi_orders"`` before
    its weights were chosen per first record.

    Examples
    --------
    >>> f = RenyiOrdersWideFilter((3.0, 1e-5), 7.0)
    >>> f.order, f.orders.size
    (7.127189745122715, 60)
    """

    name = "renyi_orders_wide"

    def _set_centre(self, order: float) -> None:
        grid = np.asarray(ADAPTIVE_ORDERS, dtype=float)
        self.order = float(grid[int(np.argmin(np.abs(np.log(grid) - math.log(order))))])
        self.orders = grid
        self.spent = np.zeros(grid.size)
        self._cache.clear()

    def _spread(self, entry: Entry, center: int) -> float:
        return WIDE_SPREAD

    def _width(self) -> float:
        return WIDE_WIDTH


def gdp_budget(epsilon: float, delta: float) -> float:
    """The largest float ``mu`` whose ``mu``-GDP curve is at most ``delta`` at ``epsilon``.

    Balle & Wang 2018, Theorem 8 (the exact curve of Gaussian DP), decided by certified
    float bounds or 50-digit arithmetic
    (:func:`~dpacct.accountant.families.gaussian_dp.gaussian_delta_at_most_exact`) and
    bisected over floats: the answer is sound (never above the exact root).

    Examples
    --------
    >>> mu = gdp_budget(1.0, 1e-5)
    >>> round(mu, 6)
    0.268051
    """
    guess = 1.0 / max(gaussian_epsilon(1.0, delta), 1e-300) * max(epsilon, 1e-300)
    lo, hi = 0.0, max(guess, 1e-12)
    while gaussian_delta_at_most_exact(hi, epsilon, delta):
        lo, hi = hi, 2.0 * hi
    # invariant: ok(lo) (or lo == 0), not ok(hi)
    while True:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            return lo
        if gaussian_delta_at_most_exact(mid, epsilon, delta):
            lo = mid
        else:
            hi = mid


def _mu_squared_up(sigma: float) -> float:
    """A float at least ``1 / sigma^2`` (two roundings, each within one ulp)."""
    return math.nextafter(1.0 / (sigma * sigma) * (1.0 + 4.0 * _U), math.inf)


class GDPFilter:
    """The fully adaptive Gaussian-DP filter (``adaptive="gdp"``): full-batch Gaussians.

    Smith & Thakurta 2022 (arXiv 2210.17520): a fully adaptive sequence of
    ``mu_t``-GDP mechanisms with ``sum mu_t^2 <= mu^2`` almost surely is ``mu``-GDP.  A
    record is admitted when the exact (rational) sum of upper bounds on ``mu_t^2`` stays
    at most ``gdp_budget(budget)^2``.  Only records with a Gaussian-DP ``mu`` and no
    subsampling (a :class:`GaussianMechanism`, or a DP-SGD step at ``sample_rate=1``)
    are accepted: a subsampled Gaussian is not ``mu``-GDP for any useful ``mu``.

    Parameters
    ----------
    budget : (float, float)
        ``(budget_epsilon, budget_delta)``.
    """

    name = "gdp"
    order = None

    def __init__(self, budget: tuple[float, float]) -> None:
        self.budget = budget
        self.mu = gdp_budget(*budget)
        self.limit = Fraction(self.mu) ** 2
        self.spent = Fraction(0)

    @staticmethod
    def cost(entry: Entry) -> Fraction:
        """An upper bound on the record's ``count * mu^2``, exact as a fraction."""
        step = entry.step
        if step is None or step.q != 1.0:
            raise ValueError(
                "adaptive='gdp' accounts full-batch Gaussian records only (a Gaussian "
                "mechanism, or a step with sample_rate=1); "
                f"{entry.mechanism!r} is not one (nothing was recorded): use "
                "adaptive='renyi_orders' for subsampled steps"
            )
        return entry.count * Fraction(_mu_squared_up(step.sigma_upper))

    def admit(self, entry: Entry) -> None:
        """Raise :class:`BudgetExceededError` if ``sum mu_t^2`` would pass ``mu^2``."""
        total = self.spent + self.cost(entry)
        if total <= self.limit:
            return
        mu = math.sqrt(float(total))
        eps = gaussian_epsilon(mu, self.budget[1])
        detail = f"the summed mu^2 to {float(total):.6g} > {float(self.limit):.6g} (mu {mu:.6g})"
        raise _refusal(
            entry, eps, self.budget, f"{detail}, i.e. epsilon {eps:.6g}", "(adaptive GDP filter)"
        )

    def charge(self, entry: Entry) -> None:
        """Add the record's ``count * mu^2`` to the running sum."""
        self.spent += self.cost(entry)

    restore = charge

    def options(self) -> dict[str, Any]:
        """``adaptive='gdp'`` (the budget's mu follows from the budget)."""
        return {"adaptive": self.name}
