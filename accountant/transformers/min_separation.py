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

The separation ``b`` is therefore *not credited*: the bound is that of Poisson
sampling at the same ``p``, while the sampler's records take part at the lower rate
``p / (1 + (b - 1) p)`` in the stationary regime.  :func:`min_separation_delta_mc`
estimates the exact pair (a Monte Carlo *estimate*, for checks and benchmarks), and
``benchmarks/min_separation.py`` measures how far above it the certified bound is.

The bracket of :meth:`~dpacct.accountant.mechanism.Mechanism.epsilon_bounds` brackets
the dominating Poisson pair (``bounds == "dominating pair"``): only its upper end bounds
the b-min-sep run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..capabilities import _DeclaredHere
from ..mechanism import Mechanism
from ..validation import check_count, check_epsilon, check_positive, check_sample_rate
from .compose import compose
from .subsample import PoissonSubsampledMechanism, _subsampled_gaussian_of

__all__ = [
    "MinSeparationSubsampledMechanism",
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
    >>> round(run.epsilon(1e-5), 3)
    6.188
    >>> run.epsilon_bounds(1e-5).bounds
    'dominating pair'
    """
    from ...mechanisms.primitives.gaussian import GaussianMechanism

    sigma = check_positive("noise_multiplier", noise_multiplier)
    n = check_count(steps, "steps")
    step = min_separation_subsample(GaussianMechanism(sigma=sigma), sample_rate,
                                    min_sep=min_sep)
    return compose([step], counts=[n])


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
    epsilon,
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
    e_arr = np.asarray(epsilon, dtype=float)
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
