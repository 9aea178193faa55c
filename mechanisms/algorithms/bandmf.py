"""DP-MF with a banded strategy (BandMF) under cyclic Poisson sampling.

Choquette-Choo, McMahan, Rush, Thakurta et al. 2023, "(Amplified) Banded Matrix
Factorization: A unified approach to private training" (NeurIPS 2023,
arXiv:2306.08153), Section 4.  The training run releases ``C X + Z`` for a
lower-triangular strategy ``C`` (``n x n`` for ``n`` iterations), the per-step clipped
gradient sums ``X`` and Gaussian noise ``Z`` of standard deviation ``noise_multiplier``
per unit of clipping norm.  The ``n`` steps are cut into ``b = num_bands`` groups of
examples used cyclically (group ``g`` at steps ``g, g + b, g + 2b, ...``), each step
Poisson-sampling its group at rate ``sample_rate``.  When ``C`` is ``b``-banded
(``C[i, j] = 0`` for ``i - j >= b``) the column of a step is supported on rows
``j .. j + b - 1``, so an example's participations touch disjoint rows: each is one
Poisson-subsampled Gaussian mechanism with sensitivity ``||C[:, j]||``, and an example
takes part in at most ``ceil(n / b)`` rounds.  The run is therefore at least as private
as ``ceil(n / b)`` DP-SGD steps of noise multiplier ``noise_multiplier / max_j
||C[:, j]||`` -- the event JAX Privacy's ``amplified_bandmf_event`` builds (with the
column norm normalised to one).

A strategy that is not ``b``-banded (a BLT or a dense optimised strategy) has
overlapping column supports; this argument does not cover it, and such a matrix is
refused (the mixture-of-Gaussians MMCC bound of Choquette-Choo et al. 2023, "Privacy
amplification for matrix mechanisms", is the route for those).  Under *balls-in-bins*
batches instead (JAX Privacy's ``BallsInBinsSampling``) any non-negative
lower-triangular strategy, BLT included, has a certified bound:
:func:`~dpacct.mechanisms.algorithms.bandmf_balls_in_bins.bandmf_balls_in_bins`.
"""

from __future__ import annotations

import math

import numpy as np

from dpacct.accountant import GaussianMechanism, Mechanism, compose, poisson_subsample
from dpacct.accountant.transformers.truncated_poisson import TruncatedPoissonGaussianMechanism
from dpacct.accountant.validation import check_count, check_positive, check_sample_rate

__all__ = ["amplified_bandmf", "bandmf_sensitivity"]


def bandmf_sensitivity(strategy: object, num_bands: int) -> float:
    """Largest column norm ``max_j ||C[:, j]||_2`` of a ``b``-banded lower-triangular strategy.

    The sensitivity of one participation of an example in DP-MF (module docstring).

    Parameters
    ----------
    strategy : array_like
        The strategy matrix ``C``, square, real, lower triangular and ``num_bands``-banded
        (``C[i, j] = 0`` unless ``0 <= i - j < num_bands``).
    num_bands : int
        The number of bands ``b``, >= 1.

    Returns
    -------
    float
        The largest column norm, > 0.

    Raises
    ------
    ValueError
        Not square, not finite, not lower triangular, not ``b``-banded (naming the first
        offending entry), or all zero.

    Examples
    --------
    >>> import numpy as np
    >>> c = np.eye(4) + 0.5 * np.eye(4, k=-1)    # 2 bands
    >>> bandmf_sensitivity(c, 2)                  # sqrt(1 + 0.25)
    1.118033988749895
    """
    b = check_count(num_bands, "num_bands")
    c = _square(strategy)
    i, j = np.indices(c.shape)
    outside = (c != 0.0) & ((i < j) | (i - j >= b))
    if outside.any():
        r, s = (int(v[0]) for v in np.nonzero(outside))
        what = "lower triangular" if r < s else f"{b}-banded (C[i, j] = 0 for i - j >= {b})"
        raise ValueError(
            f"strategy must be {what}; C[{r}, {s}] = {float(c[r, s])!r}.  The cyclic Poisson "
            "amplification of BandMF (Choquette-Choo et al. 2023, arXiv:2306.08153) needs "
            "disjoint column supports, which only a b-banded strategy has; a BLT or dense "
            "strategy is not covered (its amplification, the MMCC bound of arXiv:2306.04713, "
            "is not implemented).  Use a banded strategy, or account without amplification: "
            "amplified_bandmf(..., amplification=False)"
        )
    norm = float(np.sqrt(np.max(np.sum(c * c, axis=0))))
    if norm == 0.0:
        raise ValueError("strategy must not be all zero")
    return norm


def _square(strategy: object) -> np.ndarray:
    """The strategy as a finite, non-empty, real square matrix (else the error)."""
    try:
        c = np.asarray(strategy, dtype=float)
    except (TypeError, ValueError, OverflowError) as exc:
        raise TypeError(f"strategy must be a real square matrix, got {strategy!r}") from exc
    if c.ndim != 2 or c.shape[0] != c.shape[1] or c.shape[0] == 0:
        raise ValueError(f"strategy must be a non-empty square matrix, got shape {c.shape}")
    if not np.all(np.isfinite(c)):
        raise ValueError("strategy must contain only finite numbers")
    return c


def _unamplified_sensitivity(strategy: object, num_bands: int) -> float:
    """Sensitivity of a whole DP-MF run without amplification, any lower-triangular strategy.

    ``sqrt(max_g sum_{i, j in P_g} |<C[:, i], C[:, j]>|)`` with ``P_g = {g, g + b,
    g + 2b, ...}`` the steps of cyclic group ``g`` (module docstring of
    :func:`amplified_bandmf`, ``amplification=False``).  For a ``b``-banded strategy
    the columns of one group are orthogonal and this is ``sqrt(max_g sum_{j in P_g}
    ||C[:, j]||^2)``.

    Parameters
    ----------
    strategy : array_like
        The ``n x n`` lower-triangular strategy ``C`` (any bands: BLT, dense).
    num_bands : int
        Groups ``b`` of the cyclic sampler (an example takes part only at steps
        ``g, g + b, ...``), >= 1.

    Returns
    -------
    float
        The sensitivity, > 0.

    Examples
    --------
    >>> import numpy as np
    >>> _unamplified_sensitivity(np.eye(6), 2)   # 3 orthogonal unit columns per group
    1.7320508075688772
    """
    b = check_count(num_bands, "num_bands")
    c = _square(strategy)
    upper = np.triu(c, k=1)
    if np.any(upper != 0.0):
        r, s = (int(v[0]) for v in np.nonzero(upper))
        raise ValueError(
            f"strategy must be lower triangular (a streaming factorisation); C[{r}, {s}] = "
            f"{float(c[r, s])!r}"
        )
    n = c.shape[0]
    gram = np.abs(c.T @ c)
    i, j = np.indices(gram.shape)
    same = (i - j) % b == 0  # both steps in one cyclic group
    per_group = np.bincount(i[same] % b, weights=gram[same], minlength=min(b, n))
    norm = float(np.sqrt(np.max(per_group)))
    if norm == 0.0:
        raise ValueError("strategy must not be all zero")
    return norm


# long function: most of its lines are the numpydoc docstring, which carries the
# soundness argument of both modes (amplified and not); the code is ~20 lines
def amplified_bandmf(
    noise_multiplier: float,
    iterations: int,
    *,
    num_bands: int,
    sample_rate: float,
    strategy: object | None = None,
    largest_group_size: int | None = None,
    max_batch_size: int | None = None,
    amplification: bool = True,
) -> Mechanism:
    """The privacy of a BandMF training run under cyclic Poisson sampling.

    ``ceil(iterations / num_bands)`` Poisson-subsampled Gaussians of noise multiplier
    ``noise_multiplier / bandmf_sensitivity(strategy, num_bands)`` (Choquette-Choo et al.
    2023, arXiv:2306.08153, Section 4; module docstring): the same as JAX Privacy's
    ``amplified_bandmf_event(noise_multiplier / sensitivity, iterations,
    num_bands=..., sampling_prob=...)``.

    With ``largest_group_size`` and ``max_batch_size`` (both or neither) the batches are
    truncated Poisson: a group's Poisson batch larger than ``max_batch_size`` is cut to a
    uniformly random ``max_batch_size`` of its records (Chua et al. 2024,
    arXiv:2411.04205; Ganesh et al. 2025, arXiv:2508.15089).  Each round is then a
    :class:`~dpacct.accountant.TruncatedPoissonGaussianMechanism` on the group that
    holds the record, the same as JAX Privacy's ``truncated_amplified_bandmf_event(...,
    largest_group_size=..., truncated_batch_size=...)``.  The banded argument is
    unchanged (docs/theory/algorithms.md, section 'BandMF').

    **Strategies that are not banded (BLT, dense).**  The amplified bound needs a
    ``b``-banded strategy (disjoint column supports) and is refused otherwise; the
    amplification of such strategies (MMCC, Choquette-Choo, Ganesh, Steinke, Thakurta
    2023, arXiv:2306.04713) is not implemented.  ``amplification=False`` accounts any
    lower-triangular strategy without amplification: an example of group ``g`` takes
    part at most at the steps ``P_g = {g, g + b, ...}`` (whatever the sampler draws),
    so the run is at least as private as one Gaussian mechanism of noise multiplier
    ``noise_multiplier / Delta``, ``Delta^2 = max_g sum_{i, j in P_g} |<C_i, C_j>|``
    (Denisov, McMahan, Rush, Smith, Thakurta 2022, arXiv:2202.08312, Theorem 2.1).  The
    sample rate is then unused and truncation is refused.  The argument in full:
    docs/theory/algorithms.md, section 'BandMF'.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation per unit of clipping norm, > 0.
    iterations : int
        Training steps ``n``, >= 1.
    num_bands : int
        Bands ``b`` of the strategy (and groups of the cyclic sampler), >= 1.
    sample_rate : float
        Poisson sampling probability of an example of the active group, in (0, 1].
    strategy : array_like, optional
        The ``n x n`` strategy matrix ``C``; its largest column norm is the sensitivity.
        Default: a strategy normalised to column norm one (as JAX Privacy assumes).
    largest_group_size : int, optional
        Records in the largest of the ``num_bands`` groups, >= 1 (usually
        ``ceil(dataset_size / num_bands)``; JAX Privacy's ``largest_group_size``):
        the dataset of the truncated-Poisson step.  Give it with ``max_batch_size``.
    max_batch_size : int, optional
        The largest batch kept, >= 1 (JAX Privacy's ``truncated_batch_size``).  Give it
        with ``largest_group_size``.
    amplification : bool
        ``True`` (default): cyclic Poisson amplification of a banded strategy.
        ``False``: no amplification, any lower-triangular strategy (see above); the
        default strategy is then ``b``-banded with column norm one.

    Returns
    -------
    Mechanism
        The composed run (query ``epsilon``, ``delta``, ``epsilon_bounds``, ...).

    Examples
    --------
    >>> run = amplified_bandmf(1.0, 2_000, num_bands=4, sample_rate=0.004)
    >>> [count for _, count in run.parts]    # ceil(2000 / 4) rounds
    [500]
    >>> round(run.epsilon(1e-6), 3)
    0.622

    Truncated batches (100 000 records in 4 groups, expected batch 100, cut at 120)
    can only cost more:

    >>> cut = amplified_bandmf(1.0, 2_000, num_bands=4, sample_rate=0.004,
    ...                        largest_group_size=25_000, max_batch_size=120)
    >>> bool(cut.epsilon(1e-6) >= run.epsilon(1e-6))
    True

    A BLT-like strategy (dense below the diagonal) without amplification:

    >>> import numpy as np
    >>> lags = np.subtract.outer(np.arange(8), np.arange(8))
    >>> blt = np.tril(0.5 ** lags.clip(0))
    >>> unamplified = amplified_bandmf(4.0, 8, num_bands=2, sample_rate=0.1, strategy=blt,
    ...                                amplification=False)
    >>> round(unamplified.epsilon(1e-6), 3)    # one Gaussian: no sampling benefit
    3.205
    """
    sigma = check_positive("noise_multiplier", noise_multiplier)
    n = check_count(iterations, "iterations")
    b = check_count(num_bands, "num_bands")
    q = check_sample_rate(sample_rate)
    if not isinstance(amplification, (bool, np.bool_)):
        raise TypeError(f"amplification must be True or False, got {type(amplification).__name__}")
    rounds = math.ceil(n / b)
    if not amplification:
        return GaussianMechanism(
            sigma=sigma / unamplified_scale(strategy, n, b, largest_group_size, max_batch_size)
        )
    if strategy is not None:
        sigma = sigma / bandmf_sensitivity(checked_strategy(strategy, n), b)
    return compose([_round(sigma, q, largest_group_size, max_batch_size)], counts=[rounds])


def checked_strategy(strategy: object, n: int) -> np.ndarray:
    """The strategy, checked to be ``n x n``."""
    c = np.asarray(strategy)
    if c.shape != (n, n):
        raise ValueError(
            f"strategy must be iterations x iterations = {n} x {n}, got shape {c.shape}"
        )
    return c


def unamplified_scale(
    strategy: object, n: int, b: int, largest_group_size: object, max_batch_size: object
) -> float:
    """The run's sensitivity without amplification (``amplification=False``)."""
    if largest_group_size is not None or max_batch_size is not None:
        raise ValueError(
            "largest_group_size and max_batch_size (truncated batches) need "
            "amplification=True: without amplification a cut batch can swap one record's "
            "gradient for another's, which this bound does not cover"
        )
    if strategy is None:  # b-banded, column norm one: orthogonal unit columns per group
        return math.sqrt(math.ceil(n / b))
    return _unamplified_sensitivity(checked_strategy(strategy, n), b)


def check_truncation(largest_group_size: object, max_batch_size: object) -> bool:
    """Validate the truncation pair (both or neither); whether batches are truncated."""
    given = {"largest_group_size": largest_group_size, "max_batch_size": max_batch_size}
    for name, value in given.items():
        if value is not None:
            check_count(value, name)
    if (largest_group_size is None) != (max_batch_size is None):
        missing = "max_batch_size" if max_batch_size is None else "largest_group_size"
        raise ValueError(
            "largest_group_size and max_batch_size must be given together (truncated "
            f"Poisson batches) or both left None; {missing} is missing"
        )
    return largest_group_size is not None


def _round(sigma: float, q: float, largest_group_size: object, max_batch_size: object) -> Mechanism:
    """One round of an example: Poisson-subsampled Gaussian, truncated or not."""
    if not check_truncation(largest_group_size, max_batch_size):
        return poisson_subsample(GaussianMechanism(sigma=sigma), q)
    return TruncatedPoissonGaussianMechanism(
        sigma, q, dataset_size=largest_group_size, max_batch_size=max_batch_size
    )
