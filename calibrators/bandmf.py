"""Noise-multiplier calibration for BandMF under cyclic Poisson sampling."""

from __future__ import annotations

import math
from typing import Literal, overload

import numpy as np

from dpacct.accountant import GaussianMechanism, compose
from dpacct.accountant.transformers.truncated_poisson import TruncatedPoissonGaussianMechanism
from dpacct.accountant.validation import check_count, check_sample_rate
from dpacct.mechanisms.algorithms.bandmf import (
    bandmf_sensitivity,
    check_truncation,
    checked_strategy,
    unamplified_scale,
)
from dpacct.mechanisms.algorithms.bandmf_balls_in_bins import (
    BandMFBallsInBins,
    balls_in_bins_candidates,
    banded_plan,
    two_band_points,
)
from dpacct.mechanisms.algorithms.bandmf_lowfreq import lowfreq_points

from .calibrate import Calibration, calibrate
from .dpsgd import noise_multiplier

__all__ = [
    "bandmf_balls_in_bins_noise_multiplier",
    "bandmf_min_sep_noise_multiplier",
    "bandmf_noise_multiplier",
]


@overload
def bandmf_noise_multiplier(
    epsilon: float,
    delta: float,
    iterations: int,
    *,
    num_bands: int,
    sample_rate: float,
    strategy: object | None = ...,
    largest_group_size: int | None = ...,
    max_batch_size: int | None = ...,
    amplification: bool = ...,
    rtol: float = ...,
    tol: float | None = ...,
    full_output: Literal[False] = ...,
) -> float: ...
@overload
def bandmf_noise_multiplier(
    epsilon: float,
    delta: float,
    iterations: int,
    *,
    num_bands: int,
    sample_rate: float,
    strategy: object | None = ...,
    largest_group_size: int | None = ...,
    max_batch_size: int | None = ...,
    amplification: bool = ...,
    rtol: float = ...,
    tol: float | None = ...,
    full_output: Literal[True],
) -> Calibration: ...
# long function: most of its lines are the numpydoc docstring and the three modes
# (plain, truncated, unamplified) each one calibration call
def bandmf_noise_multiplier(
    epsilon: float,
    delta: float,
    iterations: int,
    *,
    num_bands: int,
    sample_rate: float,
    strategy: object | None = None,
    largest_group_size: int | None = None,
    max_batch_size: int | None = None,
    amplification: bool = True,
    rtol: float = 1e-3,
    tol: float | None = None,
    full_output: bool = False,
) -> float | Calibration:
    """The noise multiplier for which a BandMF run meets ``(epsilon, delta)``.

    The run of :func:`~dpacct.mechanisms.amplified_bandmf` is DP-SGD with
    ``ceil(iterations / num_bands)`` steps at noise multiplier ``sigma / s``, ``s`` the
    strategy's largest column norm (Choquette-Choo et al. 2023, arXiv:2306.08153,
    Section 4), so the answer is ``s`` times :func:`noise_multiplier`'s for those
    steps: the same mechanism, calibrated by the same search.  With
    ``largest_group_size`` and ``max_batch_size`` (truncated Poisson batches, JAX
    Privacy's ``truncated_amplified_bandmf_event``) the rounds are
    :class:`~dpacct.accountant.TruncatedPoissonGaussianMechanism` steps, calibrated by
    :func:`calibrate`, searching upward from the untruncated answer (it never returns
    less).  With ``amplification=False`` (any lower-triangular strategy, BLT included;
    no amplification, see :func:`~dpacct.mechanisms.amplified_bandmf`) the run is one
    Gaussian mechanism and the answer is its sensitivity times the Gaussian's noise.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1).
    iterations : int
        Training steps, >= 1.
    num_bands : int
        Bands of the strategy (groups of the cyclic sampler), >= 1.
    sample_rate : float
        Poisson sampling probability within the active group, in (0, 1].
    strategy : array_like, optional
        The ``iterations x iterations`` banded lower-triangular strategy; default: column
        norm one.
    largest_group_size : int, optional
        Records in the largest group, >= 1; with ``max_batch_size`` (both or neither).
    max_batch_size : int, optional
        The largest batch kept, >= 1; with ``largest_group_size``.
    amplification : bool
        ``False``: account without amplification (any lower-triangular strategy);
        default ``True``.
    rtol : float
        The epsilon reached lies in ``[epsilon * (1 - rtol), epsilon]`` (default 1e-3).
    tol : float, optional
        Accuracy of the engine's epsilon.
    full_output : bool
        Return the DP-SGD :class:`~dpacct.calibrators.Calibration` of the normalised
        noise multiplier (its ``parameter`` is ``sigma / s``) instead of ``sigma``.

    Returns
    -------
    float or Calibration
        The noise multiplier (or the calibration of the normalised one).

    Examples
    --------
    >>> from dpacct.mechanisms import amplified_bandmf
    >>> sigma = bandmf_noise_multiplier(2.0, 1e-6, 2_000, num_bands=4, sample_rate=0.004)
    >>> run = amplified_bandmf(sigma, 2_000, num_bands=4, sample_rate=0.004)
    >>> bool(2.0 * (1 - 1e-3) <= run.epsilon(1e-6) <= 2.0)
    True

    Truncated batches (cut at 110 for an expected 100) need more noise, and so does a
    run without amplification:

    >>> bool(bandmf_noise_multiplier(2.0, 1e-6, 2_000, num_bands=4, sample_rate=0.004,
    ...                              amplification=False) > sigma)
    True

    >>> cut = bandmf_noise_multiplier(2.0, 1e-6, 2_000, num_bands=4, sample_rate=0.004,
    ...                               largest_group_size=25_000, max_batch_size=110)
    >>> bool(cut >= sigma)
    True
    """
    n = check_count(iterations, "iterations")
    b = check_count(num_bands, "num_bands")
    q = check_sample_rate(sample_rate)
    if not isinstance(amplification, (bool, np.bool_)):
        raise TypeError(f"amplification must be True or False, got {type(amplification).__name__}")
    if not amplification:
        scale = unamplified_scale(strategy, n, b, largest_group_size, max_batch_size)
        res = calibrate(
            lambda s: GaussianMechanism(sigma=s),
            epsilon,
            delta,
            increasing=False,
            rtol=rtol,
            tol=tol,
            name="noise_multiplier",
            progress=False,
        )
        return res if full_output else scale * float(res.parameter)
    scale = 1.0 if strategy is None else bandmf_sensitivity(checked_strategy(strategy, n), b)
    rounds = math.ceil(n / b)
    res = noise_multiplier(
        epsilon, delta, q, rounds, rtol=rtol, tol=tol, full_output=True, progress=False
    )
    if check_truncation(largest_group_size, max_batch_size):
        untruncated = float(res.parameter)
        res = calibrate(
            lambda s: compose(
                [
                    TruncatedPoissonGaussianMechanism(
                        s, q, dataset_size=largest_group_size, max_batch_size=max_batch_size
                    )
                ],
                counts=[rounds],
            ),
            epsilon,
            delta,
            interval=(untruncated, 2.0 * untruncated),
            domain=(untruncated * (1 - 1e-9), math.inf),
            increasing=False,
            rtol=rtol,
            tol=tol,
            name="noise_multiplier",
            progress=False,
        )
    return res if full_output else scale * float(res.parameter)


# long function: most of its lines are the numpydoc docstring (five theorems, one search)
def bandmf_balls_in_bins_noise_multiplier(
    epsilon: float,
    delta: float,
    iterations: int,
    *,
    cycle_length: int,
    strategy: object,
    max_classes: int = 16,
    rtol: float = 1e-3,
    tol: float | None = None,
    full_output: bool = False,
    two_band: bool | None = None,
    progress: bool | None = None,
) -> float | Calibration:
    """The noise multiplier for which DP-MF under balls-in-bins meets ``(epsilon, delta)``.

    Calibrates the certified bound of
    :func:`~dpacct.mechanisms.algorithms.bandmf_balls_in_bins.bandmf_balls_in_bins`
    (docs/theory/dpmf_balls_in_bins.md, Theorems 1, 2, 4 and 5).  First Theorem 1 by
    :func:`calibrate`: the smallest noise multiplier (to ``rtol``) whose certified
    epsilon is at most ``epsilon``, searched down from the run without amplification (a
    Gaussian of sensitivity the largest mode norm, always feasible).  Then, for a
    two-band strategy where Theorem 2 is used (``two_band``, as in
    ``bandmf_balls_in_bins``; its cost estimated at 0.8 times Theorem 1's answer), a
    secant search in ``(log sigma, log epsilon)`` below Theorem 1's answer on the least
    of the two bounds (three evaluations at n 8, k 4, rtol 0.01): it returns a noise
    multiplier whose least epsilon is at most ``epsilon`` (evaluated),
    and ``sigma / (1 + rtol)`` or more has been evaluated above ``epsilon`` (so ``rtol``
    is then relative in the noise multiplier).  For three bands or more (``two_band``
    None) the same search runs on the least of Theorems 1 and 4 where Theorem 4 is
    affordable (:func:`~dpacct.mechanisms.algorithms.bandmf_balls_in_bins.banded_plan`).
    Where Theorem 5 (the whole pair with the frequencies ``0, +-1`` kept; ``4 <= k <=
    64``) is admitted by
    :func:`~dpacct.mechanisms.algorithms.bandmf_lowfreq.lowfreq_points`, the answer is
    then lowered on the default bound itself (``bandmf_balls_in_bins`` with its
    defaults: the least of Theorems 1, 4 and 5, its grids chosen at each sigma), at
    most :data:`LOWFREQ_EVALUATIONS` of its evaluations (~20-35 CPU s each at four
    bands, n 100, k 10): one at the Theorems 1/4 answer, then secant steps below it,
    the first on the Theorems 1/4 slope.  The returned noise multiplier's
    ``bandmf_balls_in_bins(...).epsilon(delta)`` was evaluated at most ``epsilon``
    (certified); ``rtol`` holds only where the budget closed the bracket.
    A Theorem 1 evaluation visits its candidates by their certified lower bounds and
    skips those that cannot win; the search is steered by that lower-bound floor
    (:meth:`~dpacct.mechanisms.algorithms.bandmf_balls_in_bins.BandMFBallsInBins.floor`).

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1).
    iterations : int
        Steps ``n``, >= 1.
    cycle_length : int
        Bins ``k`` of balls-in-bins, ``1 <= k <= n``.
    strategy : array_like
        ``n x n`` non-negative lower-triangular strategy, or the first column of a
        banded Toeplitz one (JAX Privacy's ``c_col``).
    max_classes : int
        As in :func:`~dpacct.mechanisms.algorithms.bandmf_balls_in_bins.bandmf_balls_in_bins`.
    rtol : float
        The epsilon reached lies in ``[epsilon * (1 - rtol), epsilon]``.
    tol : float, optional
        Accuracy of the engine's epsilon.
    full_output : bool
        Return the :class:`~dpacct.calibrators.Calibration` instead of the number.
    two_band : bool, optional
        ``None`` (default): refine with Theorem 2 when affordable; ``True``: always
        (51 points; two-band strategies only); ``False``: Theorem 1 alone.
    progress : bool, optional
        ``tqdm`` progress bars: Theorem 1's search after a few seconds by default, the
        Theorem 5 steps at once (each takes seconds); ``False``: none.

    Returns
    -------
    float or Calibration

    Examples
    --------
    >>> from dpacct.mechanisms.algorithms.bandmf_balls_in_bins import bandmf_balls_in_bins
    >>> s = bandmf_balls_in_bins_noise_multiplier(2.0, 1e-5, 4, cycle_length=2,
    ...                                           strategy=[1.0, 0.5], rtol=1e-2,
    ...                                           two_band=False)   # Theorem 1 alone
    >>> run = bandmf_balls_in_bins(s, 4, cycle_length=2, strategy=[1.0, 0.5], two_band=False)
    >>> bool(2.0 * (1 - 1e-2) <= run.epsilon(1e-5) <= 2.0)
    True

    By default (``two_band=None``) this two-band run is refined on Theorem 2 (a
    smaller answer, with the guarantee above; tests/test_bandmf_balls_in_bins.py).
    """
    candidates = balls_in_bins_candidates(iterations, cycle_length, strategy, max_classes)
    # the g = k candidate is the Gaussian of the largest mode norm (no amplification)
    norm = math.sqrt(max(alpha for size, splits in candidates[-1][1] for _, alpha in splits))
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise TypeError(f"progress must be None, True or False, got {progress!r}")
    gaussian = calibrate(
        lambda s: GaussianMechanism(sigma=s), epsilon, delta, increasing=False, rtol=rtol,
        tol=tol, name="noise_multiplier", progress=False,
    )
    top = norm * float(gaussian.parameter) * (1.0 + 1e-9)
    # steered by the same bound on the splits' certified lower bounds (microseconds):
    # the first evaluation lands near the answer, and a Theorem 1 evaluation costs
    # only the candidates whose lower bound can still win (docs/theory, "Calibration")
    res = calibrate(
        lambda s: BandMFBallsInBins(s, candidates),
        epsilon,
        delta,
        interval=(top / 2.0, top),
        domain=(0.0, math.inf),
        increasing=False,
        estimate=lambda s: BandMFBallsInBins(s, candidates).floor(delta),
        rtol=rtol,
        tol=tol,
        name="noise_multiplier",
        progress=progress,
    )
    if two_band is not None and not isinstance(two_band, (bool, np.bool_)):
        raise TypeError(f"two_band must be None, True or False, got {two_band!r}")
    sigma1 = float(res.parameter)
    banded = None if two_band is not None else banded_plan(
        0.8 * sigma1, iterations, cycle_length, strategy)
    if banded is not None:  # three bands or more: Theorem 4, its choice made once
        res, slope = _refine_two_band(res, iterations, cycle_length, strategy, candidates,
                                      banded[1], rtol, tol, classes=banded[0])
        if lowfreq_points(0.9 * float(res.parameter), iterations, cycle_length,
                          strategy) is not None:  # Theorem 5 too: the default's least
            res = _refine_lowfreq(res, slope, iterations, cycle_length, strategy,
                                  max_classes, rtol, tol, progress)
        return res if full_output else float(res.parameter)
    points = None if two_band is False else two_band_points(
        0.8 * sigma1, iterations, cycle_length, strategy, force=two_band is True)
    if points is not None:
        res, _ = _refine_two_band(res, iterations, cycle_length, strategy, candidates, points,
                                  rtol, tol)
    return res if full_output else float(res.parameter)


def _aim(hi: float, e_hi: float, target: float, slope: float, rtol: float) -> float:
    """The secant's root from ``(hi, e_hi)``, moved up by ``rtol / 4``."""
    return hi * math.exp((math.log(target) - math.log(max(e_hi, 1e-300))) / slope) * (1 + rtol / 4)


def _secant(eps_at, target: float, hi: float, e_hi: float, lo: float | None,
            e_lo: float | None, slope: float, rtol: float, steps: int = 40) -> tuple:
    """Smallest feasible noise multiplier to ``rtol``: ``hi`` feasible (``e_hi <=
    target``), ``lo`` (if any) not; guesses by the secant of ``log epsilon`` against
    ``log sigma`` (``slope``: the last one, negative), aimed a little above the root so
    that the bracket closes from both sides; at most ``steps`` evaluations.  Returns
    ``(hi, e_hi, lo, e_lo, slope)``."""
    for _ in range(steps):
        if lo is not None and hi <= lo * (1 + rtol):
            break
        if lo is None:
            x = min(_aim(hi, e_hi, target, slope, rtol), hi / (1 + rtol))
        else:
            if e_lo > e_hi > 0:
                slope = (math.log(e_lo) - math.log(e_hi)) / (math.log(lo) - math.log(hi))
            x = _aim(hi, e_hi, target, slope, rtol)
            # keep strictly inside, and close within rtol when the root is near an end
            x = min(max(x, lo * (1 + rtol / 2)), hi / (1 + rtol / 2))
            if not lo < x < hi:
                x = math.sqrt(lo * hi)
        e_x = eps_at(x)
        if e_x <= target:
            if e_hi > e_x > 0 and hi != x:
                slope = (math.log(e_hi) - math.log(e_x)) / (math.log(hi) - math.log(x))
            hi, e_hi = x, e_x
        else:
            lo, e_lo = x, e_x
    return hi, e_hi, lo, e_lo, slope


def _refine_two_band(res: Calibration, iterations: int, cycle_length: int, strategy: object,
                     candidates: tuple, points: int, rtol: float,
                     tol: float | None, classes: int | None = None) -> tuple:
    """Lower Theorem 1's calibrated noise with the least of Theorems 1 and 2 (see
    :func:`bandmf_balls_in_bins_noise_multiplier`): ``points``-point grids, from
    Theorem 1's answer down, the first secant slope Theorem 1's (a first pass on
    21-point grids saved no fine evaluation at n 8, k 4 and was dropped).  With
    ``classes`` (a Theorem 4 choice, see
    :func:`~dpacct.mechanisms.algorithms.bandmf_banded_shared.shared_plan`), Theorem 4
    (b >= 3 bands) instead of Theorem 2.  Returns the calibration and the secant's last
    slope of ``log epsilon`` against ``log sigma``."""
    import time

    from dpacct.mechanisms.algorithms.bandmf_banded_shared import bandmf_shared_balls_in_bins
    from dpacct.mechanisms.algorithms.bandmf_two_band import bandmf_two_band_balls_in_bins

    def build(s: float, pts: int):
        if classes is not None:
            return bandmf_shared_balls_in_bins(s, iterations, cycle_length=cycle_length,
                                               strategy=strategy, choice=classes,
                                               points=pts, candidates=candidates)
        return bandmf_two_band_balls_in_bins(s, iterations, cycle_length=cycle_length,
                                             strategy=strategy, points=pts,
                                             candidates=candidates)

    start = time.perf_counter()
    target, delta = float(res.target_epsilon), float(res.delta)
    built: dict = {}

    def make(pts: int):
        def eps_at(s: float) -> float:
            if (s, pts) not in built:
                m = build(s, pts)
                built[(s, pts)] = (float(m.epsilon(delta, tol=tol)), m)
            return built[(s, pts)][0]
        return eps_at

    eps_at = make(points)
    hi = float(res.parameter)  # feasible: the least is at most Theorem 1's epsilon
    # the first slope: Theorem 1's, from one more of its (cheap) evaluations
    e_below = float(BandMFBallsInBins(0.95 * hi, candidates).epsilon(delta, tol=tol))
    slope = -1.0
    if e_below > float(res.epsilon) > 0:
        slope = (math.log(e_below) - math.log(float(res.epsilon))) / math.log(0.95)
    hi, e_hi, _, _, slope = _secant(eps_at, target, hi, eps_at(hi), None, None, slope, rtol)
    return Calibration(parameter=hi, mechanism=built[(hi, points)][1], epsilon=e_hi,
                       target_epsilon=target, delta=delta,
                       evaluations=res.evaluations + len(built),
                       seconds=res.seconds + time.perf_counter() - start), slope


#: most evaluations of the default bound (Theorem 5 included, ~20-35 CPU s each at four
#: bands, n 100, k 10) that :func:`bandmf_balls_in_bins_noise_multiplier` spends on
#: lowering the Theorems 1/4 answer
LOWFREQ_EVALUATIONS = 4


def _refine_lowfreq(res: Calibration, slope: float, iterations: int, cycle_length: int,
                    strategy: object, max_classes: int, rtol: float, tol: float | None,
                    progress: bool | None) -> Calibration:
    """Lower the Theorems 1/4 calibration ``res`` on the default bound
    (:func:`~dpacct.mechanisms.algorithms.bandmf_balls_in_bins.bandmf_balls_in_bins`: the
    least of Theorems 1, 4 and 5), by at most :data:`LOWFREQ_EVALUATIONS` of its
    evaluations: one at ``res``'s noise multiplier, then secant steps (``slope`` first,
    the Theorems 1/4 curve's) below it.  The answer is an evaluated point of the default
    bound at most the target, at or below ``res``'s noise multiplier.  Should the default
    be above the target at ``res``'s noise multiplier (its grids follow sigma; not seen),
    the search climbs by ``4 rtol`` steps within the same budget, and returns ``res``
    unchanged (certified by Theorems 1/4 as before) if none is feasible."""
    import time

    from tqdm import tqdm

    from dpacct.mechanisms.algorithms.bandmf_balls_in_bins import bandmf_balls_in_bins

    start = time.perf_counter()
    target, delta = float(res.target_epsilon), float(res.delta)
    built: dict = {}
    with tqdm(total=LOWFREQ_EVALUATIONS, desc="DP-MF calibration (Theorem 5)",
              leave=False, **({"disable": True} if progress is False else {})) as bar:
        # disable= passed only for progress=False: tqdm's own TQDM_DISABLE stays in force

        def eps_at(s: float) -> float:
            if s not in built:
                m = bandmf_balls_in_bins(s, iterations, cycle_length=cycle_length,
                                         strategy=strategy, max_classes=max_classes)
                built[s] = (float(m.epsilon(delta, tol=tol)), m)
                bar.update(1)
            return built[s][0]

        hi = float(res.parameter)
        e_hi, lo, e_lo = eps_at(hi), None, None
        while e_hi > target:  # pragma: no cover - the default's grids moved with sigma
            if len(built) >= LOWFREQ_EVALUATIONS:
                return res
            lo, e_lo, hi = hi, e_hi, hi * (1 + 4 * rtol)
            e_hi = eps_at(hi)
        hi, e_hi, _, _, _ = _secant(eps_at, target, hi, e_hi, lo, e_lo, slope, rtol,
                                    steps=LOWFREQ_EVALUATIONS - len(built))
    return Calibration(parameter=hi, mechanism=built[hi][1], epsilon=e_hi,
                       target_epsilon=target, delta=delta,
                       evaluations=res.evaluations + len(built),
                       seconds=res.seconds + time.perf_counter() - start)


def bandmf_min_sep_noise_multiplier(
    epsilon: float,
    delta: float,
    iterations: int,
    *,
    sample_rate: float,
    min_sep: int,
    strategy: object,
    rtol: float = 1e-3,
    tol: float | None = None,
    progress: bool | None = None,
) -> float:
    """The noise multiplier for which DP-MF on b-min-sep batches meets ``(epsilon, delta)``.

    Calibrates the certified bound of
    :func:`~dpacct.mechanisms.algorithms.bandmf_min_sep.bandmf_min_sep` (Theorem 7 of
    docs/theory/dpmf_balls_in_bins.md) by :func:`calibrate`: the smallest noise multiplier
    (to ``rtol``) whose certified epsilon is at most ``epsilon``.  The search starts at
    the Poisson route's answer (the DP-SGD calibration of
    :func:`~dpacct.calibrators.dpsgd.noise_multiplier` times ``sqrt(alpha)``, feasible
    for the bound, which is the least of that route and the blocks') and its estimate
    is the Poisson route at the sampler's stationary rate (a guess that steers the
    search only).  ``strategy=[1.0]`` calibrates DP-SGD on b-min-sep batches.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1).
    iterations : int
        Steps ``n``, >= 1.
    sample_rate : float
        ``p`` (JAX Privacy's ``sampling_prob``), in (0, 1].
    min_sep : int
        ``b``, >= 1.
    strategy : array_like
        ``n x n`` non-negative lower-triangular strategy, or the first column of a
        banded Toeplitz one.
    rtol : float
        The epsilon reached lies in ``[epsilon * (1 - rtol), epsilon]``.
    tol : float, optional
        Accuracy of the engine's epsilon.
    progress : bool, optional
        ``tqdm`` progress bar of the search (after a few seconds by default).

    Returns
    -------
    float

    Examples
    --------
    >>> from dpacct.mechanisms.algorithms.bandmf_min_sep import bandmf_min_sep
    >>> c = [1.0, 0.5]
    >>> s = bandmf_min_sep_noise_multiplier(3.0, 1e-5, 200, sample_rate=0.05, min_sep=4,
    ...                                     strategy=c, rtol=1e-2)
    >>> run = bandmf_min_sep(s, 200, sample_rate=0.05, min_sep=4, strategy=c)
    >>> bool(3.0 * (1 - 1e-2) <= run.epsilon(1e-5) <= 3.0)
    True
    """
    from dpacct.accountant.transformers.min_separation import MinSeparationGaussianRun
    from dpacct.mechanisms.algorithms.bandmf_min_sep import (
        bandmf_min_sep,
        strategy_norm_squared_upper,
    )

    n = check_count(iterations, "iterations")
    p = check_sample_rate(sample_rate)
    b = check_count(min_sep, "min_sep")
    root = math.sqrt(strategy_norm_squared_upper(strategy, n))  # checks the strategy
    poisson = float(noise_multiplier(epsilon, delta, p, n, rtol=rtol, tol=tol)) * root
    stationary = p / (1.0 + (b - 1) * p)

    def guess(sigma: float) -> float:
        return float(MinSeparationGaussianRun(sigma / root, stationary, n, 1).epsilon(delta))

    res = calibrate(
        lambda s: bandmf_min_sep(s, n, sample_rate=p, min_sep=b, strategy=strategy),
        epsilon, delta, interval=(poisson / 4.0, poisson * (1.0 + 1e-6)), increasing=False,
        rtol=rtol, tol=tol, estimate=guess, name="noise_multiplier", progress=progress,
    )
    return float(res.parameter)
