"""DP matrix factorisation (BandMF, BLT, ...) on b-min-sep batches: a certified bound.

The run releases ``C x + z``, ``z ~ N(0, sigma^2 I_n)``, for an ``n x n`` lower-triangular
strategy ``C``, with the batches of JAX Privacy's ``BMinSepSampling`` (Dong & Ganesh
2026, arXiv 2602.09338: a record that took part in none of the previous ``b - 1``
steps joins with probability ``p``).  JAX Privacy accounts it by Monte Carlo only.
The bound here is two certified steps (Theorem 7 of docs/theory/dpmf_balls_in_bins.md):

1. **The strategy's norm.**  With ``||C||_2^2 <= alpha``, the run is a post-processing of
   DP-SGD on the same batches with noise multiplier ``sigma / sqrt(alpha)``, adaptive
   gradients included: from ``y' = sqrt(alpha) x + z'`` (``z' ~ N(0, sigma^2 I)``),
   ``C y' / sqrt(alpha) + w`` with independent ``w ~ N(0, sigma^2 (I - C C^T / alpha))``
   (positive semi-definite because ``||C||_2^2 <= alpha``) has the law of ``C x + z``,
   and its first ``i`` coordinates use ``y'_{<=i}`` only (``C`` lower triangular; ``w``
   drawn coordinate by coordinate from its conditionals), so the analyst's gradients
   at step ``i`` can be computed from the simulated prefix.
2. **The sampler.**  DP-SGD on b-min-sep batches is dominated by DP-SGD on Poisson
   batches of rate ``p`` (:mod:`dpacct.accountant.transformers.min_separation`).

``alpha`` is a rigorous upper bound on ``lambda_max(C^T C)``: the Collatz-Wielandt
ratio of a power-iteration vector for the non-negative ``C^T C`` (Horn & Johnson,
*Matrix Analysis*, 2nd ed., Corollary 8.1.29; inflated for round-off, as for
balls-in-bins), and for a banded Toeplitz first column also ``(sum_j |c_j|)^2`` (the
Toeplitz matrix's norm is at most its symbol's largest modulus); the least is kept.
The bound credits neither the separation nor the banded structure beyond ``alpha``:
it is loose against Monte Carlo where ``alpha`` exceeds the column norm (a 2-band
``(1, 1/2)`` column normalised to norm 1 has ``alpha`` up to 1.8), and tight as DP-SGD
(``C = I``, ``alpha = 1``) up to the uncredited separation.
"""

from __future__ import annotations

import math

import numpy as np

from dpacct.accountant import Mechanism
from dpacct.accountant.transformers.min_separation import MinSeparationGaussianRun
from dpacct.accountant.validation import check_count, check_positive
from dpacct.mechanisms.algorithms.bandmf_balls_in_bins_core import (
    _U,
    _strategy_matrix,
)

__all__ = ["bandmf_min_sep", "strategy_norm_squared_upper"]

#: power-iteration steps of the Collatz-Wielandt vector (any positive vector gives a
#: bound; more steps only tighten it)
POWER_STEPS = 300


def _perron_upper_op(matvec, n: int, terms: int) -> float:
    """A rigorous upper bound on the Perron root of a non-negative symmetric ``A`` given
    as ``v -> A v`` (computed as non-negative sums of at most ``terms`` products).

    Collatz-Wielandt: ``rho(A) <= max_i (A v)_i / v_i`` for any ``v > 0`` (Horn & Johnson,
    *Matrix Analysis*, 2nd ed., Corollary 8.1.29); ``v`` from a power iteration.  Each
    computed ``(A v)_i`` is within ``gamma_terms`` (relative) of the exact one (Higham
    2002, eq. (3.5): sums of non-negative products), and the quotient adds one rounding:
    the ratio is inflated by ``4 (terms + 2) u``.
    """
    v = np.ones(n)
    for _ in range(POWER_STEPS):
        w = matvec(v)
        top = float(w.max())
        if top == 0.0:
            return 0.0
        w = w / top + 1e-12  # stays positive
        if np.allclose(w, v, rtol=1e-13, atol=0.0):
            v = w
            break
        v = w
    ratio = float(np.max(matvec(v) / v))
    return ratio * (1.0 + 4.0 * (terms + 2) * _U)


def _exact_square(x: float, sq: float) -> bool:
    """Whether the float ``sq`` is exactly ``x * x`` (the product's rounding error,
    ``fma(x, x, -sq)``, is zero: checked in exact rational arithmetic)."""
    from fractions import Fraction

    return Fraction(x) * Fraction(x) == Fraction(sq)


def strategy_norm_squared_upper(strategy: object, iterations: int) -> float:
    """A rigorous upper bound ``alpha`` on ``||C||_2^2 = lambda_max(C^T C)``.

    Parameters
    ----------
    strategy : array_like
        ``iterations x iterations`` non-negative lower-triangular ``C``, or the non-zero
        entries of the first column of a banded Toeplitz ``C`` (JAX Privacy's ``c_col``).
    iterations : int
        Steps ``n``, >= 1.

    Returns
    -------
    float
        ``alpha >= ||C||_2^2`` (module docstring): the Collatz-Wielandt bound of
        ``C^T C`` and, for a first column, the least of it and the square of the
        column's absolute sum, each inflated for round-off.

    Examples
    --------
    >>> round(strategy_norm_squared_upper([1.0], 100), 12)             # the identity
    1.0
    >>> a = strategy_norm_squared_upper([1.0, 0.5], 8)
    >>> bool(1.25 < a < 2.25)                       # column norm^2 1.25, symbol bound 2.25
    True
    """
    n = check_count(iterations, "iterations")
    c = _strategy_matrix(strategy, n)  # checks every input by name
    col = np.asarray(strategy, dtype=float)
    if col.ndim == 1 and col.size == 1:  # C = c_0 I: ||C||^2 = c_0^2, rounded up
        sq = float(col[0]) * float(col[0])
        return sq if _exact_square(float(col[0]), sq) else math.nextafter(
            sq, math.inf)
    if col.ndim == 1:  # banded Toeplitz: C v and C^T w by convolutions, O(n bands)
        total = float(np.sum(np.abs(col)))
        # ||T(c)||_2 <= sup_t |sum_j c_j e^{i j t}| <= sum_j |c_j|
        symbol = total * total * (1.0 + 4.0 * (col.size + 2) * _U)

        def gram_times(v: np.ndarray) -> np.ndarray:
            cv = np.convolve(v, col)[:n]
            return np.convolve(cv[::-1], col)[:n][::-1]

        return min(symbol, _perron_upper_op(gram_times, n, 2 * col.size))

    def gram_times(v: np.ndarray) -> np.ndarray:  # C^T (C v): no n x n x n product
        return c.T @ (c @ v)

    bounds = [_perron_upper_op(gram_times, n, 2 * n)]
    return min(bounds)


def bandmf_min_sep(
    noise_multiplier: float,
    iterations: int,
    *,
    sample_rate: float,
    min_sep: int,
    strategy: object,
) -> Mechanism:
    """Certified privacy of DP-MF (BandMF, BLT, ...) on b-min-sep batches.

    Theorem 7 of docs/theory/dpmf_balls_in_bins.md (module docstring): ``iterations``
    steps of Poisson DP-SGD at rate ``sample_rate`` with noise multiplier
    ``noise_multiplier / sqrt(alpha)``, ``alpha`` a certified upper bound on
    ``||C||_2^2`` (:func:`strategy_norm_squared_upper`).  Neither the separation nor the
    bands beyond ``alpha`` are credited.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation per unit of clipping norm, > 0 (as JAX Privacy's
        ``noise_multiplier``: the strategy's norm is *not* divided out).
    iterations : int
        Steps ``n``, >= 1.
    sample_rate : float
        ``p`` (JAX Privacy's ``sampling_prob``), in (0, 1].
    min_sep : int
        ``b`` (JAX Privacy's ``min_sep``), >= 1.
    strategy : array_like
        ``n x n`` non-negative lower-triangular ``C``, or the non-zero entries of the
        first column of a banded Toeplitz ``C``.

    Returns
    -------
    Mechanism
        The composition of the dominating steps: ``epsilon``, ``delta``, ``rdp`` bound the
        run; ``epsilon_bounds`` brackets the dominating pair (``bounds == "dominating
        pair"``).

    Examples
    --------
    >>> import numpy as np
    >>> c = np.array([1.0, 0.5]) / np.sqrt(1.25)      # 2 bands, column norm 1
    >>> run = bandmf_min_sep(4.0, 100, sample_rate=0.1, min_sep=10, strategy=c)
    >>> from dpacct import dpsgd_mechanism
    >>> plain = dpsgd_mechanism(4.0, 0.1, 100)       # the same batches, C = I
    >>> bool(plain.epsilon(1e-5) < run.epsilon(1e-5))
    True
    """
    sigma = check_positive("noise_multiplier", noise_multiplier)
    n = check_count(iterations, "iterations")
    alpha = strategy_norm_squared_upper(strategy, n)
    return MinSeparationGaussianRun(sigma / math.sqrt(alpha), sample_rate, n, min_sep)
