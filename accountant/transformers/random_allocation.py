"""Random allocation ("balls and bins"): each record takes part in k of the T steps.

In an epoch of ``T`` steps, every record is put into ``k`` distinct steps chosen
uniformly at random (Chua et al. 2025, "Balls-and-bins sampling for DP-SGD": ``k = 1``;
Feldman & Shenfeld 2025, "Privacy amplification by random allocation").  The steps
run a Gaussian mechanism on the records allocated to them, and epochs are composed.

What is certified here (Gaussian base mechanism with noise multiplier ``sigma``):

* **Reduction to one pair per block** (Proposition 1 of
  docs/theory/allocation_shuffling.md, proved there by a simulation kernel): with
  ``T = k m + r``, ``0 <= r < k``, an epoch of adaptive Gaussian steps under k-of-T
  allocation is dominated, in both orders, by ``r`` one-of-``(m + 1)`` pairs and
  ``k - r`` one-of-``m`` pairs (below, ``T'`` is the block's size); epochs compose.
* **Remove direction (the mixture first)**, exact Renyi divergence of the dominating
  pair (per block of ``T`` steps) at integer orders:
  with ``P = (1/T) sum_j N(e_j, sigma^2 I_T)`` and ``Q = N(0, sigma^2 I_T)``,
  ``E_Q[(P/Q)^a] = T^-a sum_{(j_1..j_a)} exp((sum_j n_j^2 - a) / (2 sigma^2))``, the sum
  over the ``T^a`` tuples of steps with ``n_j`` the multiplicity of step ``j``
  (Feldman & Shenfeld 2025, Corollary 6.2, first part), summed as a coefficient of a
  power series, every order at once, round-off bounded
  (:mod:`~dpacct.accountant.transformers.random_allocation_rdp`).  RDP is
  non-decreasing in the order, so a real order is answered by the next integer up.
  Orders up to ``MAX_ORDER``.
* **Add direction (the Gaussian first)**, the smaller of two upper bounds at each
  order: (i) by concavity of the logarithm,
  ``log((1/T) sum_j e^{y_j}) >= (1/T) sum_j y_j``, so the privacy loss is at most the
  loss of a Gaussian with noise multiplier ``sigma sqrt(T)`` plus ``(1 - 1/T) / (2 sigma^2)``,
  pointwise; hence RDP ``<= a / (2 T sigma^2) + (1 - 1/T) / (2 sigma^2)`` (the same
  argument as Feldman & Shenfeld 2025's "direct" add bound, here per block, ``T``
  the block's size); (ii)
  :func:`add_rdp`, a bound on the negative moment ``E[M^{-(a-1)}]`` of the mean ``M``
  of ``T`` log-normal likelihood ratios (Taylor with remainder near 1, Chernoff /
  Maurer tail bounds below), which is ``O(a / T)`` for large ``T`` instead of
  ``1 / (2 sigma^2)`` per epoch, evaluated at the integer orders
  :data:`ADD_ORDERS` (up to 256: no partition sum is needed).  A real order takes the
  least bound at any evaluated order at or above it (RDP is non-decreasing in the
  order).
* **No amplification**: each record is in ``k`` Gaussian steps per epoch, so the run is
  never worse than ``k * epochs`` Gaussians (exact, composed in closed form).
* **Decomposition (one epoch, k = 1), an estimate not used in the answer**: Feldman &
  Shenfeld 2025 (arXiv 2502.08202, their "decomposition" bound; formulas checked
  against random-allocation 1.0.5's ``decomposition.py``; theorem number and proof not
  checked here, hence :meth:`RandomAllocationMechanism.decomposition_delta_estimate`
  and its absence from ``epsilon``/``delta``) state that one allocation epoch
  is dominated, in both orders, by ``(R, Q)`` with ``R`` the output of ``T`` Poisson-
  subsampled steps at rate ``1/T`` *conditioned on the record being sampled at least
  once*. The Poisson run's output is ``P = (1 - lam) Q + lam R``, ``lam = 1 - (1 -
  1/T)^T``, so (this project's algebra, exact for any such mixture; cf. Balle, Barthe,
  Gaboardi 2018, Theorem 2, advanced joint convexity)
  ``H_{e^eps}(R || Q) = H_{1 + lam (e^eps - 1)}(P || Q) / lam`` and
  ``H_{e^eps}(Q || R) = H_{e^eps'}(Q || P) / lam'`` with
  ``eps' = -log(1 - lam (1 - e^-eps))``, ``lam' = lam / (lam + e^eps (1 - lam))``;
  the Poisson run's hockey-stick divergences are bounded by dpacct's pessimistic PLDs
  (remove and add direction).  Tested above Monte Carlo estimates of both directions
  (T = 2 to 100).

* **PLD route (the default, usually the smallest)**: one epoch's dominating pair is
  built from the law of the sum of the ``T'`` log-normal likelihood ratios, split
  mean-preserving onto a grid (a convex-order dominating pair; the "PLD realization"
  of Feldman & Shenfeld 2026, arXiv 2602.17284, Algorithms 1-2 of Appendix C, with
  this project's discretisation and proof:
  :mod:`~dpacct.accountant.transformers.random_allocation_pld`), and ``k * epochs`` of them are
  composed by the certified PLD engine (:attr:`RandomAllocationMechanism.pld_route`).

``epsilon(delta)`` is the least of: the PLD route; the largest over the two directions of each
direction's least route -- the RDP conversion of that direction's curve (Canonne, Kamath, Steinke
2020), and for the add direction the direct bound (the pointwise Gaussian-plus-constant argument
above, with the exact Gaussian curve of Balle & Wang 2018 instead of its RDP); the unamplified
Gaussian; and at ``k = 2`` (``3 <= T <= 300``, sigma >= 0.45, unless ``direct=False``) the direct
(max, sum) route (:attr:`RandomAllocationMechanism.k2_route`,
:mod:`~dpacct.accountant.transformers.random_allocation_k2`), at ``k = 3`` (where
:attr:`RandomAllocationMechanism._has_k3_route`) the direct (max, second, sum) route
(:attr:`RandomAllocationMechanism.k3_route`,
:mod:`~dpacct.accountant.transformers.random_allocation_k3`), at ``k >= 4`` likewise
(:attr:`RandomAllocationMechanism.k4_route`,
:mod:`~dpacct.accountant.transformers.random_allocation_k4`). Each is a sound upper bound, so the
least is. ``delta(epsilon)`` likewise. **What is not used here**: Feldman & Shenfeld's "recursive"
bound (Poisson subsampling at an inflated rate ``e^{2 gamma} / T`` plus a tail term; on the 36
benchmark settings the PLD route is already below random-allocation 1.0.5's combined bound, which
includes it -- benchmarks/README.md); and the multi-epoch "direct" add bound as random-allocation
1.0.5 computes it, which pays the ``(1 - 1/T) / (2 sigma^2)`` term once for all epochs -- the
pointwise argument above pays it per composition, and the smaller value is not adopted without a
proof.

**The premise of every route** -- that one epoch of adaptive Gaussian steps is dominated
by the pair ``P = (1/T) sum_j N(e_j, sigma^2 I_T)``, ``Q = N(0, sigma^2 I_T)`` (per block,
for ``k > 1``) -- is Proposition 1 of docs/theory/allocation_shuffling.md, proved there
(Feldman & Shenfeld 2025, Section 6, state the ``k = 1`` case); the suite checks it by
quadrature against adaptive
strategies, and the Monte Carlo checks test the bounds against the pair.

At every ``k`` the lower end of ``epsilon_bounds`` is certified for the mechanism itself:
the larger of the attack below (with ``k`` shifted coordinates) and the sum-statistic
attack of :mod:`~dpacct.accountant.transformers.random_allocation_sum_lower` (docs/theory/
allocation_k_of_t.md, Proposition 2); ``epsilon`` is the upper end.

A **certified lower bound** (:func:`random_allocation_lower_epsilon`) comes from one attack: the
target's gradient is a unit vector, everyone else's is zero, and the adversary looks at the largest
noisy coordinate of the epoch -- a post-processing of the mechanism's pair, so its (epsilon, delta)
curve lies below the mechanism's (its outcomes are binned, a further post-processing).
:func:`random_allocation_delta_mc` is a **Monte Carlo estimate** of the exact ``k = 1`` curve, with
a confidence interval, and no guarantee. The argument in full: docs/theory/allocation_shuffling.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from ..families.gaussian import sigma_below
from ..mechanism import Capabilities, Mechanism, PLDSettings
from ..pld.pld_pair import PLDPair
from ..rdp.conversion import rdp_to_delta, rdp_to_epsilon
from ..relations import ADD_REMOVE
from ..serialization import register_mechanism
from ..validation import (
    as_real_array,
    check_count,
    check_delta,
    check_epsilon,
    check_tol,
    pure_epsilon_at_zero_delta,
)
from .compose import compose
from .random_allocation_k2 import (
    K2_MAX_STEPS,
    K2_MIN_SIGMA,
    K2_MIN_STEPS,
    AllocationK2Remove,
    allocation_k2_pair,
)
from .random_allocation_k3 import (
    K3_MAX_SIGMA,
    K3_MAX_STEPS,
    K3_MIN_SIGMA,
    K3_MIN_STEPS,
    AllocationK3Remove,
    allocation_k3_pair,
    k3_sq3_routed,
    k3_tried,
)
from .random_allocation_k4 import AllocationKRemove, allocation_k_pair, k_tried, sq_routed
from .random_allocation_lower import (
    gaussian_epsilon_is_zero,
    random_allocation_delta_mc,
    random_allocation_lower_epsilon,
)
from .random_allocation_pld import AllocationEpochPair
from .random_allocation_rdp import (
    MAX_ORDER,
    _add_rdp_suffix_min,
    add_rdp,
    remove_rdp,  # noqa: F401  (re-exported: its home before the split)
    remove_rdp_orders,
)
from .random_allocation_sum_lower import SUM_MIN_SIGMA, sum_statistic_lower_epsilon
from .subsample import poisson_subsample

#: the least noise multiplier at which the PLD route is tried
#: (:attr:`RandomAllocationMechanism.pld_route`)
PLD_MIN_SIGMA = 0.35

__all__ = [
    "RandomAllocationMechanism",
    "add_rdp",
    "random_allocation",
    "random_allocation_delta_mc",
    "random_allocation_lower_epsilon",
]


def _gaussian_sigma(mechanism: object) -> float:
    """The noise multiplier of a mechanism that states a Gaussian-DP ``mu``
    (:meth:`Mechanism.gdp_mu`) under add/remove neighbours: ``1 / mu``, taken just
    below (a smaller sigma only loosens the bounds); the engine's
    :class:`~dpacct.accountant.families.gaussian.GaussianMechanism` gives its own ``sigma``."""
    mu = mechanism.gdp_mu() if isinstance(mechanism, Mechanism) else None
    if mu is None or mechanism.neighbouring != ADD_REMOVE:
        raise TypeError(
            "mechanism must state a Gaussian-DP mu under add/remove neighbours, e.g. a "
            "GaussianMechanism (the random-allocation bounds are for Gaussian steps), "
            f"got {mechanism!r}"
        )
    if mechanism.noise_parameter == "sigma":  # a GaussianMechanism itself
        return float(mechanism.sigma)
    return sigma_below(mu)


@dataclass(frozen=True, repr=False)
class RandomAllocationMechanism(Mechanism):
    """Epochs of random allocation of every record to ``k`` of ``steps`` Gaussian steps.

    Use :func:`random_allocation` to build one.  ``epsilon`` / ``delta`` / ``rdp`` are
    sound upper bounds (see the module docstring for what is certified).

    Parameters
    ----------
    base : GaussianMechanism
        The step's mechanism (noise multiplier ``sigma``).
    steps : int
        Steps per epoch ``T``, >= 1.
    k : int, default 1
        Steps each record takes part in per epoch, ``1 <= k <= steps``.
    epochs : int, default 1
        Epochs composed, >= 1.
    direct : bool, default True
        At ``k = 2`` and ``k = 3`` also try the direct route (:attr:`k2_route`,
        :attr:`k3_route`; a law built in a few CPU seconds per ``(sigma, T)``); False:
        the blocks only.

    Examples
    --------
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> ra = RandomAllocationMechanism(GaussianMechanism(sigma=1.0), steps=1000)
    >>> ra.sigma, ra == random_allocation(GaussianMechanism(sigma=1.0), steps=1000)
    (1.0, True)
    """

    base: Mechanism
    steps: int
    k: int = 1
    epochs: int = 1
    direct: bool = True

    declares = Capabilities(rdp=True)

    def __post_init__(self) -> None:
        _gaussian_sigma(self.base)
        # counts accept integral floats (2.0) as everywhere else, stored as ints
        for name in ("steps", "k", "epochs"):
            object.__setattr__(self, name, check_count(getattr(self, name), name))
        if self.k > self.steps:
            raise ValueError(f"k must be <= steps ({self.steps}), got {self.k}")
        if not isinstance(self.direct, bool):
            raise TypeError(f"direct must be True or False, got {self.direct!r}")

    @property
    def sigma(self) -> float:
        """The noise multiplier of the base Gaussian step."""
        return _gaussian_sigma(self.base)

    @property
    def unamplified(self) -> Mechanism:
        """The certified bound without amplification: ``k * epochs`` Gaussian steps."""
        return compose([self.base], counts=[self.k * self.epochs])

    def blocks(self) -> tuple[tuple[int, int], ...]:
        """``(steps per block, blocks in the run)`` of the reduction (Proposition 1).

        With ``T = k m + r``, ``0 <= r < k``, each epoch is bounded by ``r`` one-of-
        ``(m + 1)`` and ``k - r`` one-of-``m`` allocations (docs/theory/
        allocation_shuffling.md, Proposition 1, proved there).

        Examples
        --------
        >>> from dpacct.mechanisms import GaussianMechanism
        >>> random_allocation(GaussianMechanism(sigma=1.0), 10, k=3, epochs=2).blocks()
        ((3, 4), (4, 2))
        """
        m, r = divmod(self.steps, self.k)
        pairs = ((m, self.k - r), (m + 1, r))
        return tuple((t, n * self.epochs) for t, n in pairs if n > 0)

    def _rdp_directions(self, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Upper bounds on the RDP of the remove and of the add direction (each capped
        by the unamplified Gaussian, which bounds both); RDP adds over the blocks."""
        a = np.asarray(alpha, dtype=float)
        s = self.sigma
        out = self.k * self.epochs * a / (2.0 * s * s)  # no amplification
        rem, add = np.zeros(a.shape), np.zeros(a.shape)
        ceil = np.ceil(a)  # exact: RDP is non-decreasing in the order
        small = ceil <= MAX_ORDER
        for t, reps in self.blocks():
            add_t = a / (2.0 * t * s * s) + (1.0 - 1.0 / t) / (2.0 * s * s)
            # RDP is non-decreasing in the order: a bound at any order >= a holds at a
            # (the suffix minimum over the evaluated orders keeps the curve monotone)
            orders, suffix = _add_rdp_suffix_min(s, t)
            idx = np.searchsorted(orders, a, side="left")
            best = np.minimum(add_t, suffix[np.minimum(idx, orders.size - 1)])
            add += reps * np.where(idx < orders.size, best, add_t)
            rem_t = np.full(a.shape, np.inf)
            orders_small = np.maximum(ceil[small], 2.0).astype(int)
            rem_t[small] = remove_rdp_orders(s, t)[orders_small] * (1.0 + 1e-12)
            rem += reps * rem_t
        return np.minimum(out, rem), np.minimum(out, add)

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        rem, add = self._rdp_directions(alpha)
        return np.maximum(rem, add)

    def _direct_add_delta(self, epsilon: np.ndarray) -> np.ndarray:
        """Add direction, pointwise: loss <= Gaussian loss + constant per composition.

        Per block of ``T'`` steps the add-direction privacy loss is at most that of a
        Gaussian with noise ``sigma sqrt(T')`` plus ``C = (1 - 1/T') / (2 sigma^2)``,
        pointwise (module docstring; Feldman & Shenfeld 2025's direct add bound), so over
        the blocks ``delta(eps) <= delta_G(eps - sum C)`` for the Gaussian with
        ``mu^2 = sum 1 / (T' sigma^2)``, whose curve is exact at every real argument
        (Balle & Wang 2018, Theorem 8): ``Phi(mu/2 - e/mu) - e^e Phi(-mu/2 - e/mu)``.
        """
        s = self.sigma
        blocks = self.blocks()
        mu = math.sqrt(sum(n / t for t, n in blocks)) / s
        shift = sum(n * (1.0 - 1.0 / t) for t, n in blocks) / (2.0 * s * s)
        shifted = np.asarray(epsilon, dtype=float) - shift
        with np.errstate(over="ignore", invalid="ignore"):
            first = special.ndtr(mu / 2.0 - shifted / mu)
            second = np.exp(shifted + special.log_ndtr(-mu / 2.0 - shifted / mu))
            d = first - second
        d = np.where(np.isfinite(d), d, 1.0)
        return np.clip(d * (1.0 + 1e-9) + 1e-15, 0.0, 1.0)

    def _direct_add_epsilon(self, delta: float) -> float:
        """Smallest epsilon of the direct add bound at ``delta`` (bisection; the value
        returned is one where the bound was checked)."""
        lo, hi = 0.0, 1.0
        while float(self._direct_add_delta(np.array([hi]))[0]) > delta:
            lo, hi = hi, 2.0 * hi
            if hi > 1e6:
                return math.inf
        if float(self._direct_add_delta(np.array([0.0]))[0]) <= delta:
            return 0.0
        for _ in range(80):
            if hi - lo <= 1e-10 * hi:
                break
            mid = 0.5 * (lo + hi)
            if float(self._direct_add_delta(np.array([mid]))[0]) <= delta:
                hi = mid
            else:
                lo = mid
        return hi

    @property
    def has_decomposition(self) -> bool:
        """True when the one-epoch decomposition bound applies.

        That is for ``k = 1``, one epoch and ``steps >= 2``.
        """
        return self.k == 1 and self.epochs == 1 and self.steps >= 2

    def _poisson_plds(self, delta_hint: float | None, tol: float | None):
        """Pessimistic PLD pair of ``T`` Poisson steps at rate ``1 / T``."""
        key = ("ra_poisson_plds", delta_hint, tol)
        cache = self._cache()
        if key not in cache:
            run = compose([poisson_subsample(self.base, 1.0 / self.steps)], counts=[self.steps])
            pair = run._pair(True, PLDSettings(tol, delta_hint))
            add = None if pair.symmetric else pair.add_pld()  # composed now, kept
            cache[key] = PLDPair(pair.remove, add, pair.symmetric, pair.swap_bounds_add)
        return cache[key]

    def decomposition_delta_estimate(
        self,
        epsilon,
        *,
        tol: float | None = None,
        delta_hint: float | None = None,
        both: bool = True,
    ):
        """Delta(epsilon) of one epoch by decomposition (k = 1): an *estimate*.

        ``max`` of the remove and add directions' values (module docstring,
        "Decomposition"), or the pair ``(remove, add)`` with ``both=False``; at most 1.
        Only for ``k = 1`` and one epoch.  It rests on Feldman & Shenfeld 2025's
        decomposition theorem, whose number and proof were not checked here, so it is
        not part of :meth:`epsilon` or :meth:`delta`; where the PLD route is finite
        it cannot be smaller than that route by more than its discretisation error.

        Parameters
        ----------
        epsilon : float or array_like
            Epsilon(s), >= 0.
        tol : float, optional
            Relative accuracy of the Poisson-subsampled PLDs the bound reads
            (as in :meth:`Mechanism.epsilon`).
        delta_hint : float, optional
            The delta the caller is solving for, which sets the PLDs' tail budget
            (:class:`~dpacct.accountant.mechanism.PLDSettings`); None: the default.
        both : bool, default True
            True: the larger of the two directions' bounds; False: the pair
            ``(remove, add)``.

        Examples
        --------
        >>> from dpacct.mechanisms import GaussianMechanism
        >>> ra = random_allocation(GaussianMechanism(sigma=1.0), steps=1000)
        >>> d = ra.decomposition_delta_estimate([0.3, 1.0])
        >>> bool(d[0] > d[1] > 0)
        True
        """
        if not self.has_decomposition:
            raise ValueError("the decomposition bound is for k = 1 and one epoch (steps >= 2)")
        eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
        pair = self._poisson_plds(delta_hint, tol)
        t = self.steps
        lam = -math.expm1(t * math.log1p(-1.0 / t))  # P(sampled at least once)
        with np.errstate(over="ignore"):
            # remove: H_{e^eps}(R||Q) = H_{1 + lam (e^eps - 1)}(P||Q) / lam
            eps_r = np.log1p(lam * np.expm1(eps))
            d_rem = np.asarray(pair.remove.delta(eps_r), dtype=float) / lam
            # add: H_{e^eps}(Q||R) = H_{e^eps'}(Q||P) / lam'
            eps_a = -np.log1p(-lam * -np.expm1(-eps))
            d_qp = pair.add_delta(eps_a)
            # 1 / lam' = (lam + e^eps (1 - lam)) / lam, in log space
            log_inv = np.logaddexp(math.log(lam), eps + math.log1p(-lam)) - math.log(lam)
            d_add = d_qp * np.exp(log_inv)
        d_rem, d_add = (
            np.minimum(np.nan_to_num(d * (1.0 + 1e-10), nan=1.0, posinf=1.0), 1.0)
            for d in (d_rem, d_add)
        )
        return np.maximum(d_rem, d_add) if both else (d_rem, d_add)

    @staticmethod
    def _first_passing(fn, delta: float) -> float:
        """Smallest epsilon found with ``fn(epsilon) <= delta`` (a grid, then bisection).

        Sound whatever the shape of ``fn``: the value returned is one where ``fn`` was
        evaluated and found ``<= delta``.
        """
        grid = np.concatenate([[0.0], np.geomspace(1e-4, 60.0, 400)])
        ok = np.nonzero(fn(grid) <= delta)[0]
        if ok.size == 0:
            return math.inf
        hi = float(grid[ok[0]])
        lo = float(grid[ok[0] - 1]) if ok[0] > 0 else hi
        for _ in range(40):  # bisection between a failing and a passing point
            if hi - lo <= 1e-9 * max(hi, 1e-12):
                break
            mid = 0.5 * (lo + hi)
            if float(fn(np.array([mid]))[0]) <= delta:
                hi = mid
            else:
                lo = mid
        return hi

    @property
    def pld_route(self) -> Mechanism:
        """The run as ``k * epochs`` compositions of the one-epoch PLD pair.

        Each factor is
        :class:`~dpacct.accountant.transformers.random_allocation_pld.AllocationEpochPair`
        per block of ``T'`` steps (:meth:`blocks`; Proposition 1 of
        docs/theory/allocation_shuffling.md), composed by the certified PLD engine: a
        sound upper bound in both
        directions at once.  The lower end of its ``epsilon_bounds`` bounds that
        dominating pair, not the mechanism; the certified lower bound on the mechanism
        is :func:`random_allocation_lower_epsilon`.
        """
        key = ("ra_pld_route",)
        cache = self._cache()
        if key not in cache:
            blocks = self.blocks()
            pairs = [AllocationEpochPair(self.sigma, t) for t, _ in blocks]
            counts = [n for _, n in blocks]
            cache[key] = compose(pairs, counts=counts) if sum(counts) > 1 else pairs[0]
        return cache[key]

    @property
    def _has_k2_route(self) -> bool:
        """Whether the direct k = 2 route (:mod:`.random_allocation_k2`) is tried: ``k = 2``,
        ``3 <= T <=`` :data:`K2_MAX_STEPS` (above, the blocks are within 0.3 % of the lower
        end and the direct law's lattice grows with ``T``) and sigma >= :data:`K2_MIN_SIGMA`.
        Its law is built once per ``(sigma, T)``: a few CPU seconds at sigma 1, T 100,
        about 40 at sigma 0.45 (a progress bar after 2 s)."""
        return (
            self.direct
            and self.k == 2
            and max(K2_MIN_STEPS, 3) <= self.steps <= K2_MAX_STEPS
            and self.sigma >= K2_MIN_SIGMA
            and self.base.noise_parameter == "sigma"
        )

    @property
    def k2_route(self) -> Mechanism:
        """The direct k = 2 route: per epoch, the (max, sum) remove direction of
        docs/theory/allocation_k_of_t.md and the blocks' add direction, composed by the
        engine (:func:`~dpacct.accountant.transformers.random_allocation_k2.allocation_k2_pair`).
        Only where :attr:`_has_k2_route`.
        """
        if not self._has_k2_route:
            raise ValueError("the direct route is for k = 2, 3 <= steps <= "
                             f"{K2_MAX_STEPS} and sigma >= {K2_MIN_SIGMA}")
        key = ("ra_k2_route",)
        cache = self._cache()
        if key not in cache:
            cache[key] = allocation_k2_pair(float(self.base.sigma), self.steps, self.epochs)
        return cache[key]

    @property
    def _has_k3_route(self) -> bool:
        """Whether the direct k = 3 route (:mod:`.random_allocation_k3`, Proposition 7 of
        docs/theory/allocation_k_of_t.md) is tried: ``k = 3`` where
        :func:`~dpacct.accountant.transformers.random_allocation_k3.k3_tried` (measured
        below the blocks there; a law of 1-45 CPU seconds per ``(sigma, T)``)."""
        return (
            self.direct
            and self.k == 3
            and self.base.noise_parameter == "sigma"
            and k3_tried(float(self.base.sigma), self.steps)
        )

    @property
    def k3_route(self) -> Mechanism:
        """The direct k = 3 route: per epoch, the remove direction of
        :func:`~dpacct.accountant.transformers.random_allocation_k3.k3_atoms` (Proposition
        10's four levels from T 10; one epoch: Lemma 4; several: the envelope with the
        three blocks, Proposition 5) and the blocks' add direction
        (:func:`~dpacct.accountant.transformers.random_allocation_k3.allocation_k3_pair`).
        Only where :attr:`_has_k3_route`.
        """
        if not self._has_k3_route:
            raise ValueError(f"the direct route is for k = 3, {K3_MIN_STEPS} <= steps <= "
                             f"{K3_MAX_STEPS} and {K3_MIN_SIGMA} <= sigma <= {K3_MAX_SIGMA} "
                             "where k3_tried (random_allocation_k3.py)")
        key = ("ra_k3_route",)
        cache = self._cache()
        if key not in cache:
            cache[key] = allocation_k3_pair(float(self.base.sigma), self.steps, self.epochs)
        return cache[key]

    @property
    def _extra_routes(self) -> tuple[Mechanism, ...]:
        """The answers take the least of all routes: where :attr:`k3_route`'s law is
        Proposition 13's (``k3_sq3_routed``) also on Propositions 12 and 10's laws, where
        :attr:`k4_route`'s is Proposition 15's or 16's (``sq_routed``) on Proposition 10's."""
        cache, s = self._cache(), float(self.base.sigma)
        k4 = self._has_k4_route and sq_routed(s, self.steps, self.k)
        if ("ra_k3_extra",) not in cache and (k4 or (self._has_k3_route and k3_sq3_routed(
                s, self.steps))):
            cache[("ra_k3_extra",)] = (allocation_k_pair(s, self.steps, self.k, self.epochs,
                                                         four=True),) if k4 else tuple(
                allocation_k3_pair(s, self.steps, self.epochs, **{flag: True})
                for flag in ("maclaurin_first", "four"))
        return cache.get(("ra_k3_extra",), ())

    @property
    def _has_k4_route(self) -> bool:
        """Whether the direct route at ``k >= 4`` (:mod:`.random_allocation_k4`;
        at ``k = 4`` and ``5`` Proposition 10's four-level law, on coarse nodes at small
        sigma, docs/theory/allocation_k_of_t.md) is tried: where
        :func:`~dpacct.accountant.transformers.random_allocation_k4.k_tried` (measured
        below the blocks there)."""
        return (
            self.direct
            and self.k >= 4
            and self.base.noise_parameter == "sigma"
            and k_tried(float(self.base.sigma), self.steps, self.k)
        )

    @property
    def k4_route(self) -> Mechanism:
        """The direct route at ``k >= 4``: per epoch, the remove direction of
        :func:`~dpacct.accountant.transformers.random_allocation_k4.k_atoms` (Proposition
        10's four levels, or Proposition 9's (max, second, sum) law) and the ``k`` blocks'
        add direction
        (:func:`~dpacct.accountant.transformers.random_allocation_k4.allocation_k_pair`).
        Only where :attr:`_has_k4_route`.
        """
        if not self._has_k4_route:
            raise ValueError("the direct route at k >= 4 is tried only where k_tried "
                             "(random_allocation_k4.py)")
        key = ("ra_k4_route",)
        cache = self._cache()
        if key not in cache:
            cache[key] = allocation_k_pair(float(self.base.sigma), self.steps, self.k,
                                           self.epochs)
        return cache[key]

    @property
    def _direct_route(self) -> Mechanism | None:
        """:attr:`k2_route`, :attr:`k3_route` or :attr:`k4_route` where tried, else None."""
        if self._has_k2_route:
            return self.k2_route
        if self._has_k4_route:
            return self.k4_route
        return self.k3_route if self._has_k3_route else None

    def _k2_remove_pld(self, tol: float | None, first: bool = False):
        """The pessimistic PLD of the direct route's *remove* direction alone (its law
        composed over the epochs; k = 2 or 3), for :meth:`_k2_split_epsilon`; ``first``:
        on Proposition 12's law where k = 3's is Proposition 13's (``maclaurin_first``)."""
        key = ("ra_k2_remove", tol, first)
        cache = self._cache()
        if key not in cache:
            s, several = float(self.base.sigma), self.epochs > 1
            if self.k >= 4:
                part = AllocationKRemove(s, self.steps, self.k, envelope=several, four=first)
            else:
                remove = AllocationK2Remove if self.k == 2 else AllocationK3Remove
                part = remove(s, self.steps, envelope=several,
                              **({"maclaurin_first": True} if first else {}))
            run = compose([part], counts=[self.epochs]) if self.epochs > 1 else part
            cache[key] = run._pld_one(True, PLDSettings(tol), 0)
        return cache[key]

    def _k2_split_epsilon(self, delta: float, tol: float | None) -> float:
        """The direct route's remove direction with the add direction of the other
        routes: ``max(remove, add)``, each a sound bound on its own direction (the pair
        meets ``delta`` at an epsilon where both do).  Where the blocks' add laws put
        more than ``delta`` at loss +inf (beyond their grid: the one-step block of T 3,
        small sigma) the route's own composition is infinite, this is not (sigma 0.5,
        T 5, delta 1e-5: 13.36 against the blocks' 15.01)."""
        firsts = (False, True) if self._extra_routes else (False,)  # 13's and 12's law
        rem = min(float(self._k2_remove_pld(tol, f).epsilon(delta)) for f in firsts)
        return max(rem, self._epsilon_directions(delta, tol)[1])

    def _epsilon_directions(self, delta: float, tol: float | None) -> tuple[float, float]:
        """Upper bounds on epsilon(delta) of the remove and of the add direction, each
        the least over its routes (RDP conversion of its own curve, the direct add
        bound)."""
        key = ("ra_eps_dirs", delta, tol)
        cache = self._cache()
        if key in cache:
            return cache[key]
        rem = rdp_to_epsilon(lambda a: self._rdp_directions(a)[0], delta)
        add = min(
            rdp_to_epsilon(lambda a: self._rdp_directions(a)[1], delta),
            self._direct_add_epsilon(delta),
        )
        cache[key] = (rem, add)
        return rem, add

    def epsilon(self, delta, *, tol: float | None = None):
        """Sound upper bound on epsilon at ``delta``.

        The larger of the two directions' bounds (the pair must satisfy both), each the
        least of its sound routes: RDP conversion of that direction's curve and, for
        the add direction, the direct bound;
        then the smaller of that and the unamplified Gaussian.  (Each direction's true
        hockey-stick curve is non-increasing, so a direction certified at a smaller
        epsilon is certified at the larger.)

        Parameters
        ----------
        delta : float or array_like
            Target delta(s), in (0, 1).
        tol : float, optional
            Relative accuracy of the PLD routes, as in :meth:`Mechanism.epsilon`.

        Examples
        --------
        >>> from dpacct.mechanisms import GaussianMechanism
        >>> ra = random_allocation(GaussianMechanism(sigma=1.0), steps=1000, epochs=10)
        >>> bool(ra.epsilon(1e-6) <= ra.unamplified.epsilon(1e-6))
        True
        """
        check_tol(tol)
        d_arr = as_real_array("delta", delta)
        flat = [check_delta(d, allow_zero=True) for d in d_arr.reshape(-1)]
        if 0.0 in flat:  # pure DP: a Gaussian has none, and this names pure_epsilon
            pure_epsilon_at_zero_delta(self)
        out = np.array([self._epsilon_at(d, tol) for d in flat])
        return float(out[0]) if d_arr.ndim == 0 else out.reshape(d_arr.shape)

    @property
    def _has_pld_route(self) -> bool:
        """Whether :attr:`pld_route` is tried: ``k < T`` and sigma >= :data:`PLD_MIN_SIGMA`
        (the epoch law has variance ``e^{1/sigma^2} - 1``; below sigma 0.55 it is built
        on at most 2^19 cells with its tail exact up to loss 9, a few CPU seconds a law:
        at 0.4 it is still within 1e-3 of the certified lower bound where its epsilon is
        below 9 (T 100: 8.6043 against 8.6017, RDP 9.57; 0.35, T 1000: 8.7705 against
        8.7505, RDP 10.14), and infinite (the other routes answer) where the epsilon is
        above; an overflow below 0.15)."""
        return self.steps > self.k and self.sigma >= PLD_MIN_SIGMA

    def _epsilon_at(self, delta: float, tol: float | None) -> float:
        """:meth:`epsilon` at one delta; 0 at once when the unamplified Gaussian is 0
        there (every route is >= 0: nothing is left to amplify, e.g. sigma = 1e6)."""
        if gaussian_epsilon_is_zero(math.sqrt(self.k * self.epochs) / self.sigma, delta):
            return 0.0  # (the composed Gaussian itself overflows at sigma = 1e308)
        unamplified = float(self.unamplified.epsilon(delta))
        if unamplified == 0.0:
            return 0.0
        direct = self._direct_route
        return min(
            max(self._epsilon_directions(delta, tol)),
            unamplified,
            float(self.pld_route.epsilon(delta, tol=tol)) if self._has_pld_route else math.inf,
            float(direct.epsilon(delta, tol=tol)) if direct is not None else math.inf,
            self._k2_split_epsilon(delta, tol) if direct is not None else math.inf,
            *(float(r.epsilon(delta, tol=tol)) for r in self._extra_routes),
        )

    def _epsilon_bounds(self, delta: float, tol: float | None) -> tuple[float, float]:
        """The bracket at one delta > 0: :meth:`epsilon` above (the least of every
        route, not only the RDP curve's) and, for Gaussian steps, the larger of two
        certified lower bounds below: the largest-coordinate attack
        (:func:`random_allocation_lower_epsilon`) and the sum-statistic attack
        (:func:`~dpacct.accountant.transformers.random_allocation_sum_lower.sum_statistic_lower_epsilon`,
        docs/theory/allocation_k_of_t.md; at k = 1 built for ``hi``), at every ``k``;
        ``k = steps`` is the unamplified Gaussian, whose own bracket is used.  Both ends
        bound the mechanism itself."""
        hi = self._epsilon_at(delta, tol)
        lo = 0.0
        if self.base.noise_parameter == "sigma" and hi > 0.0:
            # the exact sigma: a lower bound at a smaller one would not be one
            s = float(self.base.sigma)
            if self.k == self.steps:
                lo = float(self.unamplified.epsilon_bounds(delta)[0])
            else:
                lo = random_allocation_lower_epsilon(
                    s, self.steps, delta, epochs=self.epochs, k=self.k
                )
                if self.k == 1 and s >= SUM_MIN_SIGMA:
                    lo = max(lo, sum_statistic_lower_epsilon(
                        s, self.steps, delta, k=1, epochs=self.epochs, epsilon_hint=hi))
        return min(lo, hi), hi

    def delta(self, epsilon, *, tol: float | None = None):
        """Sound upper bound on delta at ``epsilon``.

        The larger of the two directions' bounds, each the least of its routes (see
        :meth:`epsilon`), then the smaller of that and the unamplified Gaussian.

        Parameters
        ----------
        epsilon : float or array_like
            Epsilon(s), >= 0.
        tol : float, optional
            Relative accuracy of the PLD routes, as in :meth:`Mechanism.epsilon`.
        """
        check_tol(tol)
        e_arr = as_real_array("epsilon", epsilon)
        flat = np.array([check_epsilon(e) for e in e_arr.reshape(-1)])
        rem = np.array([rdp_to_delta(lambda a: self._rdp_directions(a)[0], float(e)) for e in flat])
        add = np.array([rdp_to_delta(lambda a: self._rdp_directions(a)[1], float(e)) for e in flat])
        add = np.minimum(add, self._direct_add_delta(flat))
        out = np.minimum(np.maximum(rem, add), np.asarray(self.unamplified.delta(flat)))
        if self._has_pld_route:
            out = np.minimum(out, np.asarray(self.pld_route.delta(flat, tol=tol), dtype=float))
        direct = self._direct_route
        if direct is not None:
            out = np.minimum(out, np.asarray(direct.delta(flat, tol=tol), dtype=float))
            rem_k2 = np.min([np.asarray(self._k2_remove_pld(tol, f).delta(flat), float)
                             for f in ((False, True) if self._extra_routes else (False,))],
                            axis=0)
            out = np.minimum(out, np.maximum(rem_k2, add))  # as _k2_split_epsilon
        for extra in self._extra_routes:
            out = np.minimum(out, np.asarray(extra.delta(flat, tol=tol), float))
        return float(out[0]) if e_arr.ndim == 0 else out.reshape(e_arr.shape)

    def __repr__(self) -> str:
        return (
            f"RandomAllocationMechanism({self.base!r}, steps={self.steps}, k={self.k}, "
            f"epochs={self.epochs}" + ("" if self.direct else ", direct=False") + ")"
        )


def random_allocation(
    mechanism: Mechanism, steps: int, *, k: int = 1, epochs: int = 1, direct: bool = True
) -> RandomAllocationMechanism:
    """Random allocation of every record to ``k`` of ``steps`` steps, for ``epochs``.

    Parameters
    ----------
    mechanism : GaussianMechanism
        The step's mechanism (noise multiplier ``sigma``).
    steps : int
        Steps per epoch ``T``, >= 1.
    k : int
        Steps each record takes part in per epoch, ``1 <= k <= steps``.
    epochs : int
        Epochs composed, >= 1.
    direct : bool, default True
        At ``k = 2``, ``3 <= steps <= 300``, sigma >= 0.45: also try the direct
        (max, sum) route (:attr:`RandomAllocationMechanism.k2_route`) and keep the
        smaller epsilon; its law costs a few CPU seconds at sigma 1, T 100 (about 30 at
        sigma 0.5; a progress bar after 2 s); at ``k = 3`` likewise the (max, second, sum)
        route (:attr:`RandomAllocationMechanism.k3_route`) where
        ``_has_k3_route``, and at ``k >= 4`` where ``_has_k4_route``
        (:attr:`RandomAllocationMechanism.k4_route`).  False: the blocks only.

    Returns
    -------
    RandomAllocationMechanism

    Raises
    ------
    TypeError
        ``mechanism`` is not a Gaussian mechanism.
    ValueError
        A count out of range (named).

    Examples
    --------
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> ra = random_allocation(GaussianMechanism(sigma=1.0), steps=1000, epochs=1)
    >>> round(float(ra.epsilon(1e-6)), 3)
    0.172
    """
    return RandomAllocationMechanism(mechanism, steps, k, epochs, direct)


# saved as {"type": "random_allocation", "params": {"base", "steps", "k", "epochs",
# "direct"}}; serialization._ENGINE_MODULES imports this module when a file names the type
register_mechanism("random_allocation", RandomAllocationMechanism)
