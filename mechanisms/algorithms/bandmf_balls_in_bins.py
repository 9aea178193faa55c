"""DP matrix factorisation (BandMF, BLT, any non-negative lower-triangular strategy)
under balls-in-bins batches: a deterministic, certified upper bound.

The run releases ``C x + z``, ``z ~ N(0, sigma^2 I_n)``, for an ``n x n`` non-negative
lower-triangular strategy ``C``.  Balls-in-bins with cycle length ``k`` (JAX Privacy's
``BallsInBinsSampling``; Choquette-Choo, Ganesh, Haque, Steinke, Thakurta 2024,
arXiv:2410.06266, Definition 3.1) puts every record in one bin ``s`` drawn uniformly
from ``{0, ..., k-1}``, and the record takes part in every step ``i`` with
``i % k == s``.  The pair that JAX Privacy's Monte Carlo accountant samples (their
Lemma 3.2, for non-negative ``C``) is

    ``P = N(0, sigma^2 I_n)``  against  ``Q = (1/k) sum_s N(m_s, sigma^2 I_n)``,
    ``m_s = C x_s``,  ``x_s`` the indicator of ``{s, s + k, s + 2k, ...}``,

both directions.  This module bounds that pair's hockey-stick curves from above, with
no sampling (docs/theory/dpmf_balls_in_bins.md proves each step):

1. **Only the Gram matrix matters** (Lemma 1 there): the pair is fixed, up to an
   isometry, by ``G = M^T M`` (``M = [m_0, ..., m_{k-1}]``).
2. **Gram domination** (Lemma 2): if ``alpha I - G`` is positive semi-definite,
   appending to every mean ``m_s`` the ``s``-th column of ``(alpha I - G)^{1/2}`` gives
   a pair with orthogonal means of norm ``sqrt(alpha)`` -- random allocation of one
   of ``k`` Gaussian steps of noise multiplier ``sigma / sqrt(alpha)`` -- from which
   the original pair is a projection (post-processing).
3. **Revealed residues** (Lemma 3): ``Q`` is the average over ``r`` of the uniform
   mixtures ``Q_r`` over the bins ``s = r (mod g)``; each hockey-stick divergence of
   ``(Q, P)`` (both orders) is at most the largest over ``r`` of ``(Q_r, P)``'s.  With
   ``g`` at least the number of bands, the bins of one class have (nearly) disjoint
   modes, so ``alpha`` drops to the largest mode norm squared.
4. ``alpha_r`` is the Perron root of the class's non-negative Gram block, bounded above
   rigorously by the Collatz-Wielandt ratio of a power-iteration vector (Horn &
   Johnson, *Matrix Analysis*, 2nd ed., Corollary 8.1.29), inflated for round-off.

The answer is the least, over the class counts ``g`` tried (``1..bands``, and ``k``:
no amplification), of the largest certified random-allocation epsilon over the classes
(:class:`~dpacct.accountant.transformers.random_allocation.RandomAllocationMechanism`,
whose PLD route is a certified bracket).  Every candidate is an upper bound, so the
least is.  It is *not* tight: the Gram domination replaces the correlated modes by
orthogonal ones of a larger norm (the benchmark ``benchmarks/dpmf_balls_in_bins.py``
measures the gap to JAX Privacy's Monte Carlo estimate, and how it moves with the
correlation switched off).

For two-band strategies :func:`bandmf_balls_in_bins` also takes Theorem 2 of the same
page (:mod:`.bandmf_two_band`, a transfer operator over the cycle, within a few percent
of the estimate) when its estimated cost is within :data:`TWO_BAND_BUDGET`.  The Theorem 1
machinery lives in :mod:`.bandmf_balls_in_bins_core` (re-exported here).
"""

from __future__ import annotations

import numpy as np

from dpacct.accountant.validation import check_positive
from dpacct.mechanisms.algorithms.bandmf_balls_in_bins_core import (
    MAX_CLASSES,
    BandMFBallsInBins,
    balls_in_bins_candidates,
    balls_in_bins_gram,
    bandmf_balls_in_bins_delta_mc,
)
from dpacct.mechanisms.algorithms.bandmf_banded import (
    banded_classes,
    banded_cost,
)
from dpacct.mechanisms.algorithms.bandmf_banded_shared import (
    bandmf_shared_balls_in_bins,
    shared_plan,
)
from dpacct.mechanisms.algorithms.bandmf_lowfreq import (
    bandmf_lowfreq_balls_in_bins,
    lowfreq_points,
)
from dpacct.mechanisms.algorithms.bandmf_two_band import (
    _two_band_cost,
    bandmf_two_band_balls_in_bins,
)

__all__ = [
    "BandMFBallsInBins",
    "balls_in_bins_candidates",
    "balls_in_bins_gram",
    "banded_plan",
    "banded_points",
    "bandmf_balls_in_bins",
    "bandmf_balls_in_bins_delta_mc",
    "two_band_points",
]


def bandmf_balls_in_bins(
    noise_multiplier: float,
    iterations: int,
    *,
    cycle_length: int,
    strategy: object,
    max_classes: int = MAX_CLASSES,
    two_band: bool | None = None,
) -> BandMFBallsInBins:
    """Certified privacy of DP-MF (BandMF, BLT, ...) under balls-in-bins batches.

    Bounds the pair of JAX Privacy's balls-in-bins Monte Carlo accountant (module
    docstring; docs/theory/dpmf_balls_in_bins.md, Theorem 1) deterministically: the
    least, over residue-class counts ``g`` in ``1..max_classes`` and ``k``, of the
    largest random-allocation bound of the classes after Gram domination.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation per unit of clipping norm, > 0 (as JAX Privacy's
        ``noise_multiplier``: the strategy's column norm is *not* divided out).
    iterations : int
        Steps ``n``, >= 1.
    cycle_length : int
        Bins ``k``, ``1 <= k <= n`` (a record takes part every ``k`` steps).
    strategy : array_like
        ``n x n`` non-negative lower-triangular ``C``, or the non-zero entries of the
        first column of a banded Toeplitz ``C`` (JAX Privacy's ``c_col``).
    max_classes : int
        Largest residue-class count tried besides ``k``, >= 1 (default 16: the most
        bands the bound is built for; more only costs time).
    two_band : bool, optional
        For a two-band first column ``(c0, c1)``, ``c0, c1 > 0``, ``2 <= k < n``: also
        Theorem 2 (the transfer operator of
        :func:`~dpacct.mechanisms.algorithms.bandmf_two_band.bandmf_two_band_balls_in_bins`,
        1.5-4 % above Monte Carlo where Theorem 1 is 10-20 %) and answer the least of
        the two.  ``None`` (default): when affordable, at the most grid points of
        (51, 41, 31, 21) whose estimated CPU time
        (:func:`~dpacct.mechanisms.algorithms.bandmf_two_band._two_band_cost`) is at most
        :data:`TWO_BAND_BUDGET` seconds, else Theorem 1 alone.  ``True``: Theorem 2 at
        51 points whatever it costs (a ``ValueError`` for another strategy).  ``False``:
        Theorem 1 alone.  For a first column of ``b >= 3`` bands, ``None`` also takes
        Theorem 4 of the same page (residue classes, each dominated by a two-band
        transfer plus a shared Gaussian; Theorem 3 is its case without the Gaussian:
        :func:`~dpacct.mechanisms.algorithms.bandmf_banded_shared.bandmf_shared_balls_in_bins`)
        when affordable (:func:`banded_plan`), and the least of it and Theorem 1; and,
        for ``4 <= k <= 64``, Theorem 5 (the whole pair, no residue classes: the Gram
        matrix dominated by ``alpha I`` plus its frequencies ``0, +-1``,
        :func:`~dpacct.mechanisms.algorithms.bandmf_lowfreq.bandmf_lowfreq_balls_in_bins`)
        at the most grid points within
        :data:`~dpacct.mechanisms.algorithms.bandmf_lowfreq.LOWFREQ_BUDGET` estimated
        seconds, answering the least of the three.

    Returns
    -------
    BandMFBallsInBins
        Query ``epsilon``, ``delta``, ``epsilon_bounds`` (lower end 0), ``rdp``
        (a :class:`~dpacct.mechanisms.algorithms.bandmf_two_band.BandMFTwoBandBallsInBins`
        when Theorem 2 is used).

    Examples
    --------
    >>> import numpy as np
    >>> c = np.array([1.0, 0.5]) / np.sqrt(1.25)          # 2 bands, column norm 1
    >>> run = bandmf_balls_in_bins(2.0, 8, cycle_length=4, strategy=c, two_band=False)
    >>> eps = run.epsilon(1e-5)
    >>> from dpacct.accountant import GaussianMechanism   # no amplification: sqrt(2) norm
    >>> bool(eps < GaussianMechanism(2.0 / np.sqrt(2.0)).epsilon(1e-5))
    True

    Two bands, short cycle: Theorem 2 is affordable, and the least of the two is taken.

    >>> type(bandmf_balls_in_bins(2.0, 4, cycle_length=2, strategy=c)).__name__
    'BandMFTwoBandBallsInBins'
    """
    sigma = check_positive("noise_multiplier", noise_multiplier)
    candidates = balls_in_bins_candidates(iterations, cycle_length, strategy, max_classes)
    if two_band is not None and not isinstance(two_band, (bool, np.bool_)):
        raise TypeError(f"two_band must be None, True or False, got {two_band!r}")
    if two_band is False:
        return BandMFBallsInBins(sigma, candidates)
    if two_band is None and banded_classes(strategy, iterations, cycle_length) is not None:
        plan = banded_plan(sigma, iterations, cycle_length, strategy)
        base = None if plan is None else bandmf_shared_balls_in_bins(
            sigma, iterations, cycle_length=cycle_length, strategy=strategy,
            choice=plan[0], points=plan[1], candidates=candidates)
        low = lowfreq_points(sigma, iterations, cycle_length, strategy)
        if low is not None:
            return bandmf_lowfreq_balls_in_bins(
                sigma, iterations, cycle_length=cycle_length, strategy=strategy,
                factor_points=low[1][0], points=low[1][1], candidates=candidates, base=base)
        if base is not None:
            return base
    points = two_band_points(sigma, iterations, cycle_length, strategy,
                             force=two_band is True)
    if points is None:
        return BandMFBallsInBins(sigma, candidates)
    return bandmf_two_band_balls_in_bins(sigma, iterations, cycle_length=cycle_length,
                                         strategy=strategy, points=points,
                                         candidates=candidates)


#: estimated CPU seconds up to which :func:`bandmf_balls_in_bins` adds Theorem 2 by default
TWO_BAND_BUDGET = 10.0
#: the same for Theorem 4 (b >= 3 bands; its search adds about one CPU second per
#: candidate; the 16-band, n 2000 row's best classes are estimated at 12 s at 31 points and
#: 27 s at 41, measured 8 s and 15 s: 0.8615 and 0.8438 at sigma 8, delta 1e-5)
BANDED_BUDGET = 30.0


def banded_plan(sigma: float, iterations: int, cycle_length: int,
                strategy: object) -> tuple | None:
    """``(choice, points)`` of Theorem 4 by default for three bands or more (None:
    Theorem 1 alone): where Theorem 3 applies
    (:func:`~dpacct.mechanisms.algorithms.bandmf_banded.banded_classes`), the class
    count and split of
    :func:`~dpacct.mechanisms.algorithms.bandmf_banded_shared.shared_plan` within
    :data:`BANDED_BUDGET`.

    Examples
    --------
    >>> banded_plan(2.0, 8, 4, [1.0, 0.5]) is None      # two bands: Theorem 2's business
    True
    """
    if banded_classes(strategy, iterations, cycle_length) is None:
        return None
    return shared_plan(sigma, iterations, cycle_length, strategy, budget=BANDED_BUDGET)


def banded_points(sigma: float, iterations: int, cycle_length: int,
                  strategy: object) -> tuple[int, int] | None:
    """``(classes, points)`` of Theorem 3 by default for three bands or more (None:
    Theorem 1 alone): ``classes`` from
    :func:`~dpacct.mechanisms.algorithms.bandmf_banded.banded_classes`, ``points`` the most of
    (51, 41, 31, 21) whose estimated CPU time is within :data:`TWO_BAND_BUDGET`.

    Examples
    --------
    >>> banded_points(4.0, 100, 10, [1.0, 0.5, 0.25, 0.125])
    (2, 51)
    """
    g = banded_classes(strategy, iterations, cycle_length)
    if g is None:
        return None
    for points in (51, 41, 31, 21):
        if banded_cost(sigma, iterations, cycle_length, strategy, g, points) <= TWO_BAND_BUDGET:
            return g, points
    return None


def two_band_points(sigma: float, iterations: int, cycle_length: int, strategy: object, *,
                    force: bool = False) -> int | None:
    """Grid points for Theorem 2 by default (None: Theorem 1 alone); see the
    ``two_band`` parameter of :func:`bandmf_balls_in_bins` (inputs checked there).

    Examples
    --------
    >>> two_band_points(2.0, 8, 4, [1.0, 0.5]), two_band_points(2.0, 8, 4, [1.0])
    (51, None)
    """
    c = np.asarray(strategy, dtype=float)
    fits = (c.shape == (2,) and c[0] > 0 and c[1] > 0 and 2 <= cycle_length < iterations)
    if force:
        if not (c.shape == (2,) and c[0] > 0 and 2 <= cycle_length < iterations):
            raise ValueError(
                "two_band=True needs a two-band first column (c0 > 0, c1 >= 0) and "
                f"2 <= cycle_length < iterations, got strategy shape {c.shape}, "
                f"cycle_length {cycle_length}, iterations {iterations}")
        return 51
    if not fits:
        return None
    for points in (51, 41, 31, 21):
        if _two_band_cost(sigma, iterations, cycle_length, c, points=points) <= TWO_BAND_BUDGET:
            return points
    return None


