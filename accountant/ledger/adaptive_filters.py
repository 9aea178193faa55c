"""Fully adaptive privacy filters beyond one Renyi order: every order at once, and GDP.

Two filters for loops whose next mechanism may depend on everything released so far
(the proofs are written out in ``docs/theory/renyi_filter.md``):

* :class:`RenyiOrdersFilter` (``adaptive="renyi_orders"``): the summed Renyi DP is
  tracked at every order of ``ADAPTIVE_ORDERS``.  For each order ``a`` the process
  ``exp((a - 1) (L_t - S_t(a)))`` -- ``L_t`` the realised privacy loss, ``S_t(a)`` the
  summed RDP of the mechanisms chosen so far -- is a nonnegative supermartingale (the
  argument of Feldman & Zrnic 2021, "Individual privacy accounting via a Renyi
  filter", NeurIPS, Theorem 3.1).  A mixture of them with weights ``w_a`` fixed
  before anything is released is one too, and it bounds the hockey-stick divergence
  of the whole adaptive run by ``delta`` as long as
  ``sum_a w_a delta / delta_a(S(a)) >= 1``, where ``delta_a(S)`` is the delta that
  ``(a, S)``-RDP converts to at the budget's epsilon (Canonne, Kamath & Steinke 2020,
  Proposition 12).  With all weight on one order this is the one-order filter; with
  weights spread over the orders it keeps admitting when the schedule moves away from
  the order the first record suggests.
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
    "ORDERS_SPREAD",
    "ORDERS_WIDTH",
    "GDPFilter",
    "RenyiOrdersFilter",
    "gdp_budget",
    "renyi_log_delta",
    "renyi_mixture_log_ratio",
    "renyi_orders_weights",
]

#: share of the multi-order filter's weight spread over ``ADAPTIVE_ORDERS`` around the
#: order the first record favours (the one-order filter's choice), which keeps the rest.
#: These two constants and the order grid define the weights of a saved
#: ``adaptive="renyi_orders"`` ledger (only its centre order is written): the weights
#: must not change once anything is released, so changing any of them needs a new
#: filter name, never an edit under this one
ORDERS_SPREAD = 0.25
#: width of that spread: a Gaussian kernel in ``log(order)`` (0.25: a factor 1.28)
ORDERS_WIDTH = 0.25
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


class RenyiOrdersFilter:
    """The fully adaptive filter over every Renyi order (``adaptive="renyi_orders"``).

    Tracks the summed RDP at each order of ``ADAPTIVE_ORDERS`` and admits a record while
    the mixture condition :func:`renyi_mixture_log_ratio` holds with the weights of
    :func:`renyi_orders_weights`, centred on the order the one-order filter would fix
    (chosen from the first record, before anything is released).  Validity: the
    supermartingale of Feldman & Zrnic 2021 (Theorem 3.1) at each order, mixed;
    ``docs/theory/renyi_filter.md``.  O(orders) per record.

    Parameters
    ----------
    budget : (float, float)
        ``(budget_epsilon, budget_delta)``.
    order : float or None
        The order holding the weight ``1 - ORDERS_SPREAD`` (one of ``ADAPTIVE_ORDERS``,
        else the nearest of them); None: chosen at the first record.

    Examples
    --------
    >>> from dpacct.accountant import poisson_subsample
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> f = RenyiOrdersFilter((3.0, 1e-5), None)
    >>> step = Entry.of(poisson_subsample(GaussianMechanism(sigma=1.0), 0.01), 2000)
    >>> f.admit(step); f.charge(step)
    >>> round(f.order, 2), bool(f.epsilon_of(f.spent) < 3.0)
    (6.35, True)
    """

    name = "renyi_orders"

    def __init__(self, budget: tuple[float, float], order: float | None) -> None:
        self.budget = budget
        self.orders = np.asarray(ADAPTIVE_ORDERS, dtype=float)
        self.spent = np.zeros(self.orders.size)
        self._adds = 0  # additions into spent, for the round-off margin of the sum
        self.order: float | None = None
        self.log_weights: np.ndarray | None = None
        self._cache: dict[Any, np.ndarray] = {}
        if order is not None:
            self._centre(order)

    def _centre(self, order: float) -> None:
        i = int(np.argmin(np.abs(np.log(self.orders) - math.log(order))))
        self.order = float(self.orders[i])
        self.log_weights = renyi_orders_weights(self.orders, i)
        # renyi_mixture_log_ratio's terms as  const - slope * spent  (one record's check
        # is then a handful of length-k array operations)
        a = self.orders
        eps, delta = self.budget
        self._slope = (a - 1.0) * (1.0 + _SUM_SLACK)
        self._const = (
            self.log_weights + math.log(delta) + (a - 1.0) * eps
            - (a - 1.0) * np.log1p(-1.0 / a) + np.log(a)
        )

    def _log_ratio(self, spent: np.ndarray) -> float:
        """:func:`renyi_mixture_log_ratio` of ``spent`` at the budget, for this filter."""
        terms = self._const - self._slope * spent
        top = float(terms.max())
        if not math.isfinite(top):
            return top
        return top + math.log(float(np.exp(terms - top).sum()))

    def rdp_at(self, mechanism: Mechanism) -> np.ndarray:
        """RDP of ``mechanism`` at every order (cached)."""
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
        if self.order is None:
            self._centre(RenyiFilter(self.budget, None)._choose_order(entry.mechanism))
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
        if self.order is None:
            self._centre(RenyiFilter(self.budget, None)._choose_order(entry.mechanism))
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
        """``adaptive`` and the order holding most weight."""
        return {"adaptive": self.name, "adaptive_order": self.order}


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
