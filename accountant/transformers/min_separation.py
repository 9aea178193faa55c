"""b-min-sep batches: a certified upper bound by conditional domination.

The sampler (JAX Privacy's ``BMinSepSampling``; Dong & Ganesh 2026, "Privacy
amplification for BandMF via b-min-sep subsampling", arXiv 2602.09338, Algorithms 1
and 2): at every step each record that took part in none of the previous ``b - 1``
steps joins the batch independently with probability ``p``; a record that took part
in one of them does not.  With a *warm start* (their Algorithm 2, JAX Privacy's default)
the first step already sees a history: a record sits in one of the ``b - 1`` previous
batches with probability ``(b - 1) p / (1 + (b - 1) p)`` (uniformly among them), the
stationary law of the chain, so that every step has the same expected batch size
``N / (b - 1 + 1 / p)``.  JAX Privacy accounts this sampler by Monte Carlo only.

**Theorem 7 (docs/theory/dpmf_balls_in_bins.md).**  Let a sampler be such that, at
every step ``i`` and given everything drawn before it (the record's own past
participations, the other records', but not the noise), the differing record joins
the batch with probability at most ``p``.  Then ``T`` steps of any base mechanism run on
its batches, adaptively, are dominated (add and remove neighbours) by ``T`` steps of
the base on Poisson batches of rate ``p``.  b-min-sep qualifies with any start and with
truncated batches (a record's probability is ``p`` or 0; truncation only lowers it).

*Proof.*  Fix the neighbouring datasets and a prefix ``y_{<i}`` of outputs.  Given
``y_{<i}``, the sampling history has some posterior law, and under it the record joins
step ``i`` with probability ``pi_i(y_{<i}) <= p`` (an average of values ``<= p``); the
step's noise is independent of the history.  So the conditional law of ``y_i`` is
``(1 - pi) A_0 + pi A_1`` (``A_1``: the base on the batch with the record, ``A_0``
without), against ``A_0`` on the other dataset.  With ``a = pi / p <= 1`` that law is
``a ((1 - p) A_0 + p A_1) + (1 - a) A_0``, and by the joint convexity of the
hockey-stick divergence ``H_g`` (both orders), ``H_g`` of the conditional pair is at most
``a H_g(M_p) + (1 - a) (1 - g)_+``, with ``M_p`` the Poisson pair of rate ``p`` and
``(1 - g)_+ <= H_g(M_p)`` (take the whole space): at most ``H_g(M_p)`` at every
``g >= 0``.  Every step is therefore dominated by ``M_p`` given any prefix, and the
adaptive composition of mechanisms each dominated by a fixed pair is dominated by the
product of the pairs (Zhu, Dong & Wang 2022, "Optimal accounting of differential
privacy via characteristic function", AISTATS, the adaptive composition theorem for
dominating pairs; the chain rule writes the run as the sequential composition of these
conditional kernels).  ``square``

This step bound does not credit the separation.  For Gaussian steps
(:class:`MinSeparationGaussianRun`, :func:`min_separation_dpsgd`) a second certified route
does, in part (Theorem 7 (ii)): blocks of ``b`` steps hold at most one participation,
each block is dominated (given any history) by the block that starts eligible, and that
block is a revealed mixture of Poisson-subsampled random allocations
(:class:`MinSeparationBlockPair`); the run answers the least of the two.  The sampler's
records take part at the stationary rate ``p / (1 + (b - 1) p)``, which neither route
reaches.  :func:`min_separation_delta_mc`
estimates the exact pair (a Monte Carlo *estimate*, for checks and benchmarks), and
``benchmarks/min_separation.py`` measures how far above it the certified bound is.

The bracket of :meth:`~dpacct.accountant.mechanism.Mechanism.epsilon_bounds` brackets
the dominating Poisson pair (``bounds == "dominating pair"``): only its upper end bounds
the b-min-sep run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..capabilities import _DeclaredHere
from ..laws.mixture_law import MixtureLossLaw
from ..mechanism import Capabilities, Mechanism
from ..validation import (
    as_real_array,
    check_count,
    check_epsilon,
    check_positive,
    check_sample_rate,
)
from .compose import compose
from .subsample import (
    PoissonSubsampledMechanism,
    _GridSafeSubsampledLaw,
    _subsampled_gaussian_of,
)

__all__ = [
    "MinSeparationBlockPair",
    "MinSeparationGaussianRun",
    "MinSeparationSubsampledMechanism",
    "block_weights",
    "min_separation_delta_mc",
    "min_separation_dpsgd",
    "min_separation_subsample",
]


@dataclass(frozen=True, repr=False)
class MinSeparationSubsampledMechanism(PoissonSubsampledMechanism):
    """``base`` run on a b-min-sep batch: accounted by its Poisson dominating pair.

    Built by :func:`min_separation_subsample`.  Every curve is that of
    :class:`~dpacct.accountant.transformers.subsample.PoissonSubsampledMechanism` at rate
    ``sample_rate``, which dominates each b-min-sep step given any history (Theorem 7,
    module docstring), so ``epsilon``, ``delta``, ``rdp`` and ``tradeoff`` are sound for
    the b-min-sep run; ``epsilon_bounds`` brackets the dominating pair (its ``bounds``
    is ``"dominating pair"``).

    Parameters
    ----------
    base : Mechanism
        The mechanism run on the batch (add/remove neighbours).
    sample_rate : float
        ``p``: the probability that an eligible record joins a batch, in (0, 1].
    min_sep : int
        ``b``: a record joins at most one of any ``b`` consecutive batches, >= 1.

    Examples
    --------
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> step = min_separation_subsample(GaussianMechanism(sigma=1.0), 0.01, min_sep=8)
    >>> step
    MinSeparationSubsampledMechanism(base=GaussianMechanism(sigma=1.0), sample_rate=0.01, min_sep=8)
    >>> step.epsilon_bounds(1e-5).bounds
    'dominating pair'
    """

    min_sep: int = 1

    #: its PLDs are those of the Poisson pair, which only dominates the step
    brackets_dominating_pair = True
    #: the pair accounted is exactly the Poisson-subsampled Gaussian when the base is a
    #: Gaussian (declared again: a subclass does not inherit the declaration)
    _subsampled_gaussian = _DeclaredHere(_subsampled_gaussian_of)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "min_sep", check_count(self.min_sep, "min_sep"))

    def __repr__(self) -> str:
        return (
            f"MinSeparationSubsampledMechanism(base={self.base!r}, "
            f"sample_rate={self.sample_rate!r}, min_sep={self.min_sep!r})"
        )


def min_separation_subsample(
    mechanism: Mechanism, sample_rate: float, *, min_sep: int
) -> MinSeparationSubsampledMechanism:
    """One step of ``mechanism`` on a b-min-sep batch (Theorem 7 of the module docstring).

    Compose it over the run's steps (:func:`~dpacct.accountant.transformers.compose.compose`):
    the domination holds step by step given any history, so any composition of such
    steps (with each other and with other mechanisms) is certified.

    Parameters
    ----------
    mechanism : Mechanism
        The base mechanism (add/remove neighbours).
    sample_rate : float
        ``p``: the probability that an eligible record joins the batch, in (0, 1].
    min_sep : int
        ``b`` (JAX Privacy's ``min_sep``), >= 1; ``b = 1`` is Poisson sampling.

    Returns
    -------
    MinSeparationSubsampledMechanism

    Raises
    ------
    ValueError, TypeError
        A parameter out of range, or a base not described for add/remove neighbours.

    Examples
    --------
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> from dpacct.accountant import compose, poisson_subsample
    >>> g = GaussianMechanism(sigma=1.0)
    >>> run = compose([min_separation_subsample(g, 0.01, min_sep=10)], counts=[1000])
    >>> plain = compose([poisson_subsample(g, 0.01)], counts=[1000])
    >>> run.epsilon(1e-5) == plain.epsilon(1e-5)     # the separation is not credited
    True
    """
    return MinSeparationSubsampledMechanism(mechanism, sample_rate, min_sep)


def min_separation_dpsgd(
    noise_multiplier: float, sample_rate: float, steps: int, *, min_sep: int
) -> Mechanism:
    """DP-SGD on b-min-sep batches (JAX Privacy's ``BMinSepSampling``): certified.

    ``steps`` Gaussian steps of noise multiplier ``noise_multiplier`` (clipping norm 1),
    each on a b-min-sep batch, warm start or not, truncated or not: dominated by
    Poisson DP-SGD at rate ``sample_rate`` (Theorem 7, module docstring; the separation
    is not credited).

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation over the clipping norm, > 0.
    sample_rate : float
        ``p`` (JAX Privacy's ``sampling_prob``), in (0, 1].
    steps : int
        Steps, >= 1.
    min_sep : int
        ``b``, >= 1.

    Returns
    -------
    Mechanism
        The composition of the steps; its ``epsilon_bounds`` brackets the dominating
        pair.

    Examples
    --------
    >>> run = min_separation_dpsgd(1.0, 0.01, 10_000, min_sep=16)
    >>> poisson, blocks = (round(r.epsilon(1e-5), 3) for r in run.routes())
    >>> poisson, blocks, run.epsilon(1e-5) == min(r.epsilon(1e-5) for r in run.routes())
    (6.188, 5.964, True)
    >>> run.epsilon_bounds(1e-5).bounds
    'dominating pair'
    """
    return MinSeparationGaussianRun(noise_multiplier, sample_rate, steps, min_sep)


#: below this noise multiplier the block route is not built and the Poisson route answers
#: alone: its random-allocation laws grow like ``e^(1 / sigma^2)`` (measured, p 0.02, T
#: 1000: b 16 at sigma 1.0 0.9 s, at 0.8 5.2 s, at 0.55 108 s and 2.5 GB; they overflow
#: near 0)
BLOCK_MIN_SIGMA = 0.75
#: every block length up to this keeps one component per allocation length ``m``;
#: beyond, the lengths kept are a geometric grid (each other ``m`` merged into the
#: largest kept length below it: Lemma B of the theory page)
KEEP_ALL = 16
#: the ratio of that grid
KEEP_RATIO = 1.25


def _kept_lengths(b: int) -> list[int]:
    """The allocation lengths ``m`` kept for a block of ``b`` steps (1 and ``b`` always)."""
    if b <= KEEP_ALL:
        return list(range(1, b + 1))
    kept = set(range(1, KEEP_ALL + 1))
    m = float(KEEP_ALL)
    while m < b:
        kept.add(int(m))
        m *= KEEP_RATIO
    kept.add(b)
    return sorted(kept)


def block_weights(sample_rate: float, min_sep: int) -> tuple[list[int], list[float], float]:
    """The revealed mixture of one block: lengths ``m``, their weights, and the
    subsampling rate shared by the components (Theorem 7 (ii) of
    docs/theory/dpmf_balls_in_bins.md).

    A record eligible from the block's first step joins its step ``j`` (``1 <= j <= b``)
    with probability ``w_j = p (1 - p)^(j - 1)``, and none with ``(1 - p)^b``.  With
    ``r = 1 - (1 - p)^b`` and ``lambda_m = m (w_m - w_(m+1))`` (``w_(b+1) = 0``; they sum
    to ``r``), the block's law with the record is ``sum_m (lambda_m / r) C_m``, ``C_m =
    (1 - r) N(0) + r U_m`` with ``U_m`` the Gaussian placed at a uniform one of the first
    ``m`` steps: a mixture of ``r``-subsampled random allocations.  Computed in exact
    rational arithmetic; a length not kept (:func:`_kept_lengths`) is merged into the
    largest kept one below it (``U_m`` is a post-processing of ``U_m'`` for ``m' <=
    m``); the weights ``lambda_m / r`` and the rate ``r`` are rounded *up* to floats: a
    larger weight or rate only raises every hockey-stick divergence (Lemma B there).

    Parameters
    ----------
    sample_rate : float
        ``p``, in (0, 1].
    min_sep : int
        ``b``, >= 1.

    Returns
    -------
    tuple
        ``(lengths, weights, rate)``.

    Examples
    --------
    >>> block_weights(0.5, 2)     # w = (1/2, 1/4), r = 3/4: weights 1/3, 2/3 (rounded up)
    ([1, 2], [0.33333333333333337, 0.6666666666666667], 0.75)
    """
    p = Fraction(check_sample_rate(sample_rate))
    b = check_count(min_sep, "min_sep")
    w = [p * (1 - p) ** (j - 1) for j in range(1, b + 1)] + [Fraction(0)]
    rate = 1 - (1 - p) ** b
    kept = _kept_lengths(b)
    merged = dict.fromkeys(kept, Fraction(0))
    for m in range(1, b + 1):
        merged[max(k for k in kept if k <= m)] += m * (w[m - 1] - w[m])

    def up(x: Fraction) -> float:
        f = float(x)
        return f if Fraction(f) >= x else math.nextafter(f, math.inf)

    return kept, [up(merged[m] / rate) for m in kept], min(up(rate), 1.0)


class MinSeparationBlockPair(Mechanism):
    """One block of ``b`` Gaussian steps on b-min-sep batches, as a dominating pair.

    The revealed mixture of :func:`block_weights`: with weight ``lambda_m / r`` the pair
    of random allocation of one of ``m`` steps (the certified convex-order pair of
    :class:`~dpacct.accountant.transformers.random_allocation_pld.AllocationEpochPair`;
    ``m = 1``: the Gaussian) Poisson-subsampled at the rate ``r = 1 - (1 - p)^b`` (Zhu,
    Dong & Wang 2022, Theorem 11, both directions).  Given any
    history, a block of a b-min-sep run is dominated by it (Theorem 7 (ii) of
    docs/theory/dpmf_balls_in_bins.md), so ``ceil(T / b)`` of them, composed, bound
    ``T`` steps.  Its bracket is the pair's (``bounds == "dominating pair"``).

    Parameters
    ----------
    noise_multiplier : float
        > 0.
    sample_rate : float
        ``p``, in (0, 1].
    min_sep : int
        ``b``, >= 1: the block's length.

    Examples
    --------
    >>> from dpacct.accountant import GaussianMechanism, poisson_subsample, compose
    >>> blocks = compose([MinSeparationBlockPair(1.0, 0.05, 16)], counts=[13])
    >>> steps = compose([poisson_subsample(GaussianMechanism(1.0), 0.05)], counts=[200])
    >>> bool(blocks.epsilon(1e-3) < 0.9 * steps.epsilon(1e-3))   # 200 steps, b = 16
    True
    """

    declares = Capabilities(loss_laws=True)
    #: its PLDs are the revealed mixture's, which only dominates the block
    brackets_dominating_pair = True

    def __init__(self, noise_multiplier: float, sample_rate: float, min_sep: int) -> None:
        self.noise_multiplier = check_positive("noise_multiplier", noise_multiplier)
        self.sample_rate = check_sample_rate(sample_rate)
        self.min_sep = check_count(min_sep, "min_sep")

    def _loss_laws(self):
        cache = self._cache()
        if "laws" not in cache:
            from .random_allocation_pld import AllocationEpochPair

            lengths, weights, rate = block_weights(self.sample_rate, self.min_sep)
            pairs = [AllocationEpochPair(self.noise_multiplier, m)._loss_laws()  # (a bar if slow)
                     for m in lengths]
            cache["laws"] = tuple(
                MixtureLossLaw(tuple(_GridSafeSubsampledLaw(pair[d], rate, direction)
                                     for pair in pairs), weights)
                for d, direction in ((0, "remove"), (1, "add"))
            )
        return cache["laws"]

    def __repr__(self) -> str:
        return (f"MinSeparationBlockPair(noise_multiplier={self.noise_multiplier!r}, "
                f"sample_rate={self.sample_rate!r}, min_sep={self.min_sep!r})")


class MinSeparationGaussianRun(Mechanism):
    """DP-SGD on b-min-sep batches: the least of two certified bounds (Theorem 7).

    (i) ``T`` Poisson-subsampled Gaussian steps at rate ``p``; (ii) ``ceil(T / b)``
    blocks of :class:`MinSeparationBlockPair` (for ``b > 1`` and noise multipliers from
    :data:`BLOCK_MIN_SIGMA`).  ``epsilon`` and ``delta`` answer the
    least of the two (both upper bounds); ``epsilon_bounds`` the bracket of the one whose
    upper end is the least, of its dominating pair (``bounds == "dominating pair"``);
    ``rdp`` the Poisson route's.

    Parameters
    ----------
    noise_multiplier : float
        > 0.
    sample_rate : float
        ``p``, in (0, 1].
    steps : int
        ``T``, >= 1.
    min_sep : int
        ``b``, >= 1.

    Examples
    --------
    >>> run = MinSeparationGaussianRun(1.0, 0.05, 200, 16)
    >>> bool(run.epsilon(1e-5) < run.routes()[0].epsilon(1e-5))   # the blocks win here
    True
    """

    declares = Capabilities(rdp=True)
    brackets_dominating_pair = True

    def __init__(self, noise_multiplier: float, sample_rate: float, steps: int,
                 min_sep: int) -> None:
        from ...mechanisms.primitives.gaussian import GaussianMechanism

        self.noise_multiplier = check_positive("noise_multiplier", noise_multiplier)
        self.sample_rate = check_sample_rate(sample_rate)
        self.steps = check_count(steps, "steps")
        self.min_sep = check_count(min_sep, "min_sep")
        step = MinSeparationSubsampledMechanism(
            GaussianMechanism(sigma=self.noise_multiplier), self.sample_rate, self.min_sep)
        self._poisson = compose([step], counts=[self.steps])

    def routes(self) -> tuple[Mechanism, ...]:
        """The certified routes: the Poisson composition, then the blocks (where ``b > 1``
        and the noise multiplier is at least :data:`BLOCK_MIN_SIGMA`; built on first use)."""
        if self.min_sep == 1 or self.noise_multiplier < BLOCK_MIN_SIGMA:
            return (self._poisson,)
        cache = self._cache()
        if "blocks" not in cache:
            pair = MinSeparationBlockPair(self.noise_multiplier, self.sample_rate,
                                          self.min_sep)
            cache["blocks"] = compose([pair], counts=[-(-self.steps // self.min_sep)])
        return (self._poisson, cache["blocks"])

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        return np.asarray(self._poisson.rdp(alpha), dtype=float)

    def _epsilon_upper(self, delta: float, tol: float | None) -> float:
        return min(float(r.epsilon(delta, tol=tol)) for r in self.routes())

    def _epsilon_bounds(self, delta: float, tol: float | None) -> tuple[float, float]:
        brackets = [r.epsilon_bounds(delta, tol=tol) for r in self.routes()]
        best = min(brackets, key=lambda br: br[1])
        return float(best[0]), float(best[1])

    def delta(self, epsilon, *, tol: float | None = None):
        """Sound upper bound on delta: the least of the routes' (Theorem 7).

        Parameters
        ----------
        epsilon : float or array_like
            Epsilon(s), >= 0.
        tol : float, optional
            Relative accuracy of the PLD routes.

        Returns
        -------
        float or numpy.ndarray
        """
        out = np.minimum.reduce([np.asarray(r.delta(epsilon, tol=tol), dtype=float)
                                 for r in self.routes()])
        return float(out) if np.ndim(out) == 0 else out

    def __repr__(self) -> str:
        return (f"MinSeparationGaussianRun(noise_multiplier={self.noise_multiplier!r}, "
                f"sample_rate={self.sample_rate!r}, steps={self.steps!r}, "
                f"min_sep={self.min_sep!r})")


def _check_strategy_column(strategy: object, min_sep: int) -> np.ndarray:
    """A banded Toeplitz first column ``c`` of at most ``min_sep`` finite entries."""
    try:
        c = np.atleast_1d(np.asarray(strategy, dtype=float))
    except (TypeError, ValueError, OverflowError) as exc:
        raise TypeError(f"strategy must be a real first column, got {strategy!r}") from exc
    if c.ndim != 1 or c.size == 0 or not np.all(np.isfinite(c)):
        raise ValueError("strategy must be a non-empty 1-D array of finite numbers")
    if c.size > min_sep:
        raise ValueError(
            f"the Monte Carlo estimate needs at most min_sep = {min_sep} bands (a record's "
            f"contributions then never overlap), got {c.size}"
        )
    return c


def _chain_sample(
    rng: np.random.Generator, samples: int, steps: int, p: float, b: int, warm: bool
) -> np.ndarray:
    """Participation indicators ``(samples, steps)`` of the record under b-min-sep."""
    # wait[i]: steps before the record is eligible again (0: eligible now)
    wait = np.zeros(samples, dtype=np.int64)
    if warm and b > 1:
        in_history = rng.random(samples) < (b - 1) * p / (1.0 + (b - 1) * p)
        slot = rng.integers(1, b, size=samples)  # the batch j steps back: wait b - j
        wait = np.where(in_history, b - slot, 0)
    out = np.zeros((samples, steps), dtype=bool)
    for t in range(steps):  # a Markov chain: one vectorised step per time step
        joins = (wait == 0) & (rng.random(samples) < p)
        out[:, t] = joins
        wait = np.where(joins, b - 1, np.maximum(wait - 1, 0))
    return out


def _log_ratio(y: np.ndarray, c: np.ndarray, p: float, b: int, sigma: float,
               warm: bool) -> np.ndarray:
    """``log dP/dQ`` at each row of ``y`` by the forward algorithm over the chain.

    States at the start of a step: ``real a`` (the last participation ``a + 1`` steps
    ago, ``a = 0 .. A - 1``, the last one meaning "``A`` or more, or never": eligible and
    silent; ``A = max(b, bands)``), and ``phantom s`` (a warm-start participation before
    step 0: eligible in ``s = 1 .. b - 1`` steps, silent).  A participation ``l`` steps
    ago adds ``c[l]`` to the step's mean (``l < bands``); at most one is within reach
    (``bands <= b``).
    """
    n_s, steps = y.shape
    bands = c.size
    big_a = max(b, bands)
    width = big_a + (b - 1)
    f = np.zeros((n_s, width))
    if warm and b > 1:
        f[:, big_a - 1] = 1.0 / (1.0 + (b - 1) * p)
        f[:, big_a:] = p / (1.0 + (b - 1) * p)  # phantom s = 1 .. b - 1
    else:
        f[:, big_a - 1] = 1.0
    log_scale = np.zeros(n_s)
    inv = 1.0 / (sigma * sigma)
    for t in range(steps):
        yt = y[:, t]

        def emit(lag: int, yt: np.ndarray = yt) -> np.ndarray | float:
            if lag >= bands:
                return 1.0
            m = c[lag]
            return np.exp((yt * m - 0.5 * m * m) * inv)

        new = np.zeros_like(f)
        joined = np.zeros(n_s)
        for a in range(big_a):  # real states
            mass = f[:, a]
            lag = min(a + 1, big_a - 1)
            if a + 1 >= b:  # eligible: joins with probability p
                joined += p * mass
                new[:, lag] += (1.0 - p) * mass * emit(a + 1)
            else:
                new[:, lag] += mass * emit(a + 1)
        for s in range(1, b):  # phantom states: silent, eligible in s steps
            mass = f[:, big_a + s - 1]
            if s == 1:  # eligible at the next step: an eligible, silent real state
                new[:, big_a - 1] += mass
            else:
                new[:, big_a + s - 2] += mass
        new[:, 0] += joined * emit(0)
        top = new.max(axis=1)
        top = np.where(top > 0.0, top, 1.0)  # (every path underflowed: log L = -inf)
        f = new / top[:, None]
        log_scale += np.log(top)
    with np.errstate(divide="ignore"):
        return log_scale + np.log(f.sum(axis=1))


def min_separation_delta_mc(
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    epsilon: float | np.ndarray,
    *,
    min_sep: int,
    strategy: object = (1.0,),
    warm_start: bool = True,
    samples: int = 100_000,
    rng: np.random.Generator,
) -> tuple[tuple[float, float], tuple[float, float]]:
    """A Monte Carlo *estimate* of the b-min-sep pair's delta at ``epsilon`` (not a bound).

    The pair: ``Q = N(0, s^2 I_T)`` (record absent) against ``P``, the law of ``C x +
    z`` with ``x`` the record's participations under b-min-sep and ``C`` the banded
    Toeplitz strategy of first column ``strategy`` (``(1,)``: DP-SGD); its likelihood
    ratio is computed exactly by the forward algorithm over the sampler's Markov chain
    (:func:`_log_ratio`).  ``delta_remove = E_P[(1 - e^eps / L)_+]`` and ``delta_add =
    E_Q[(1 - e^eps L)_+]``, each with its standard error.

    Parameters
    ----------
    noise_multiplier : float
        ``s``, > 0.
    sample_rate : float
        ``p``, in (0, 1].
    steps : int
        ``T``, >= 1.
    epsilon : float or array_like
        Epsilon(s), >= 0 (an array is read off the same draws).
    min_sep : int
        ``b``, >= 1, at least the number of bands of ``strategy``.
    strategy : array_like, default (1.0,)
        The first column of a banded Toeplitz strategy (finite; JAX Privacy's
        ``c_col``).
    warm_start : bool, default True
        The sampler's warm start (JAX Privacy's default).
    samples : int, default 100 000
        Draws per direction, >= 1.
    rng : numpy.random.Generator
        The randomness (explicit).

    Returns
    -------
    tuple
        ``((remove, its standard error), (add, its standard error))``: floats, or
        arrays shaped like ``epsilon``.

    Examples
    --------
    >>> import numpy as np
    >>> (rem, se), _ = min_separation_delta_mc(1.0, 0.5, 4, 1.0, min_sep=2,
    ...                                         samples=20_000, rng=np.random.default_rng(0))
    >>> bool(0.0 < rem < 0.2 and se < 0.01)
    True
    """
    s = check_positive("noise_multiplier", noise_multiplier)
    p = check_sample_rate(sample_rate)
    n = check_count(steps, "steps")
    e_arr = as_real_array("epsilon", epsilon)
    scalar, shape = e_arr.ndim == 0, e_arr.shape
    eps = np.array([check_epsilon(float(x)) for x in e_arr.reshape(-1)])
    b = check_count(min_sep, "min_sep")
    m = check_count(samples, "samples")
    if not isinstance(warm_start, (bool, np.bool_)):
        raise TypeError(f"warm_start must be True or False, got {warm_start!r}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator")
    c = _check_strategy_column(strategy, b)
    x = _chain_sample(rng, m, n, p, b, bool(warm_start)).astype(float)
    mean = np.zeros((m, n))
    for lag, value in enumerate(c):  # C x for a banded Toeplitz C
        mean[:, lag:] += value * x[:, : n - lag]
    y_p = mean + s * rng.standard_normal((m, n))
    y_q = s * rng.standard_normal((m, n))
    out = []
    for y, sign in ((y_p, -1.0), (y_q, 1.0)):
        log_l = _log_ratio(y, c, p, b, s, bool(warm_start))
        v = np.maximum(-np.expm1(eps[:, None] + sign * log_l[None, :]), 0.0)
        mean, se = v.mean(axis=1), v.std(axis=1) / math.sqrt(m)
        out.append((float(mean[0]), float(se[0])) if scalar else (mean.reshape(shape),
                                                                   se.reshape(shape)))
    return out[0], out[1]
