"""Differentially private simple linear regression by DP Theil-Sen (Alabi et al. 2020).

Alabi, McMillan, Sarathy, Smith, Vadhan 2020 ("Differentially private simple linear
regression", Section 3, Algorithms DPTheilSen and DPTheilSenkMatch) estimate the line
``y = slope x + intercept`` robustly: pair the points up, let each pair's line predict
``y`` at two fixed cut points ``x1 < x2``, release a private median of each set of
predictions with the exponential mechanism, and recover the line from the two medians
(post-processing).  Predicting at two points instead of privatising the slopes keeps
both medians on the scale of ``y`` and lets one declared range bound them.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, fields

import numpy as np

from dpacct.accountant.serialization import register_mechanism
from dpacct.accountant.validation import (
    check_count,
    check_finite,
    check_positive,
    check_probability,
    show_value,
)

from ..primitives.exponential import ExponentialMechanism
from ..primitives.permute_and_flip import PermuteAndFlip
from .algorithm import Algorithm, PlannedRelease
from .quantiles import check_data, check_out_of_range, check_range, check_rng, smith_pieces
from .transformations import Transformation

__all__ = ["MEDIANS", "PAIRINGS", "DPTheilSen", "TheilSenFit", "matching_transformation",
           "pair_predictions", "pairing_stability", "thinned_sizes"]

#: the private medians :class:`DPTheilSen` offers
MEDIANS = ("intervals", "grid")
#: the pairings :class:`DPTheilSen` offers: ``"maximal"`` (``k`` uniformly random maximal
#: matchings, stability ``2 k``), ``"balanced"`` (parity-balanced: ``ceil(k / 2)`` maximal
#: and ``floor(k / 2)`` one-short matchings, stability ``k + ceil(k / 2)``, no bound on
#: ``n`` needed), ``"slots"`` (slot matchings over a declared ``max_records = N`` slots,
#: stability ``k`` for datasets of at most ``N`` records), ``"thinned"`` (the maximal
#: matching of ``N`` records thinned one record at a time down to ``n``,
#: :func:`thinned_sizes`: stability ``k`` for datasets of at most ``N`` records, with
#: more pairs than slots at every ``n < N``); ``"auto"`` is ``"thinned"`` with a declared
#: ``max_records`` and ``"balanced"`` without (the better pairing of each guarantee).
#: The theorems: docs/theory/algorithms.md, 'Stability of the pairings and the slack of a
#: record bound' and 'A pairing that degrades gracefully with the slack'.
PAIRINGS = ("auto", "maximal", "balanced", "slots", "thinned")


def pairing_stability(k: int, pairing: str) -> int:
    """Stability of the pairing of ``k`` matchings in the symmetric distance.

    The largest number of pair predictions (counting a replaced one twice) by which the
    coupled outputs on add/remove neighbours can differ: ``2 k`` for ``"maximal"``,
    ``k + ceil(k / 2)`` for ``"balanced"``, ``k`` for ``"slots"`` and ``"thinned"``
    (datasets within the declared bound); the medians' utility sensitivity is half of it.  Proof:
    docs/theory/algorithms.md, 'Stability of the pairings and the slack of a record
    bound' (checked by brute force over all matchings in ``tests/test_theil_sen.py``).

    Parameters
    ----------
    k : int
        Number of matchings, >= 1.
    pairing : {'maximal', 'balanced', 'slots', 'thinned'}
        The pairing (``"auto"`` must be resolved first: it depends on ``max_records``).

    Examples
    --------
    >>> [pairing_stability(10, p) for p in ("maximal", "balanced", "slots")]
    [20, 15, 10]
    >>> pairing_stability(1, "balanced")          # one matching: nothing to balance
    2
    """
    k = check_count(k, "k")
    if pairing == "maximal":
        return 2 * k
    if pairing == "balanced":
        return k + (k + 1) // 2
    if pairing in ("slots", "thinned"):
        return k
    raise ValueError(f"pairing must be one of ('maximal', 'balanced', 'slots', 'thinned') "
                     f"here, got {pairing!r}")


def _resolve_pairing(pairing: object, max_records: int | None) -> str:
    if not isinstance(pairing, str) or pairing not in PAIRINGS:
        raise ValueError(f"pairing must be one of {PAIRINGS}, got {show_value(pairing)}")
    if pairing == "auto":
        return "thinned" if max_records is not None else "balanced"
    if pairing in ("slots", "thinned") and max_records is None:
        raise ValueError(f"pairing={pairing!r} needs a declared max_records (a public upper "
                         "bound on the number of records, an integer >= 2)")
    return pairing


def thinned_sizes(n: int, bound: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """Numbers of pairs of ``k`` independent *thinned* matchings of ``n <= bound`` records.

    The law of one size is that of the number of pairs left when a uniformly random
    maximal matching of ``bound`` records (``floor(bound / 2)`` pairs) loses records one
    at a time, each removal a uniformly random record, down to ``n``: with ``m + 1``
    records and ``j`` pairs, the removed record is paired with probability ``2 j / (m +
    1)`` and its pair is lost (``j - 1``); otherwise it was unpaired and two of the
    unpaired records left are paired (``j + 1``), when at least two are (``2 j + 2 <=
    m``; else ``j``).  Each step draws one integer uniform on ``{0, ..., m}`` (an exact
    rational probability); cost ``O((bound - n) k)``, about 1 s of CPU for ``bound - n =
    500 000`` at ``k = 10`` (a loop over the steps: each depends on the last).  Given its
    size the matching is
    uniform (:func:`pair_predictions`); the coupling that makes the pairing 1-stable:
    docs/theory/algorithms.md, 'A pairing that degrades gracefully with the slack'.

    Parameters
    ----------
    n : int
        Number of records, ``0 <= n <= bound``.
    bound : int
        The public bound ``N`` on the number of records, >= 2.
    k : int
        Number of matchings, >= 1.
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray
        ``k`` integers in ``[0, floor(n / 2)]``; all ``floor(n / 2)`` when ``n = bound``.

    Examples
    --------
    >>> thinned_sizes(10, 10, 3, np.random.default_rng(0)).tolist()
    [5, 5, 5]
    >>> sizes = thinned_sizes(1000, 2000, 200, np.random.default_rng(0))
    >>> bool(340 < sizes.mean() < 370)    # about n/3 + n/(6 c^3) = 354 pairs at c = 2
    True
    """
    if not 0 <= n <= bound:
        raise ValueError(f"the data have {n} records, more than the declared "
                         f"max_records = {bound}")
    sizes = [bound // 2] * k
    block = max(1, 2 ** 20 // k)
    for top in range(bound - 1, n - 1, -block):      # from m + 1 records to m
        m = np.arange(top, max(top - block, n - 1), -1)
        draws = rng.integers(0, m[:, None] + 1, size=(m.size, k))
        for mm, row in zip(m.tolist(), draws.tolist(), strict=True):
            for i, u in enumerate(row):
                j = sizes[i]
                if u < 2 * j:
                    sizes[i] = j - 1
                elif 2 * j + 2 <= mm:
                    sizes[i] = j + 1
    return np.array(sizes, dtype=np.int64)


def pair_predictions(x: np.ndarray, y: np.ndarray, k: int, cut_points: tuple[float, float],
                     rng: np.random.Generator, *, slots: int | None = None,
                     balanced: bool = False,
                     thinned: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Predictions at the cut points of the lines through ``k`` random matchings' pairs.

    Each matching is a uniformly random maximal matching of the ``n`` records (a random
    permutation, paired two by two; with ``n`` odd the last record is unmatched); the
    ``k`` matchings are independent.  With ``slots = N`` (``N >= n``; rounded up to
    even) it is the *slot matching*: the records are placed in ``n`` uniformly random
    distinct slots among ``N``, the slots are paired ``(0, 1), (2, 3), ...``, and two
    records form a pair when they sit in the two slots of a slot pair (for ``N = n``
    or ``n + 1`` the same law as the maximal matching).  With ``balanced=True`` (and no
    ``slots``) the matchings of odd index ``j = 1, 3, ...`` are *one-short*: uniformly
    random matchings with ``floor((n - 1) / 2)`` pairs (a random permutation paired two
    by two, the last two records left out when ``n`` is even); those of even index stay
    maximal (the *parity-balanced* matchings of :data:`PAIRINGS`).  With ``thinned = N``
    (``N >= n``) matching ``j`` has :func:`thinned_sizes`' random number ``J_j`` of pairs
    and is uniform given it: a random permutation whose first ``2 J_j`` records are
    paired two by two (for ``N = n`` the maximal matching).  Pair ``(i, j)`` predicts
    ``y_i + (y_j - y_i) (x_c - x_i) / (x_j - x_i)`` at ``x_c``; pairs with ``x_i = x_j``
    (no slope) are dropped.  Vectorised over all pairs.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Predictions at ``cut_points[0]`` and at ``cut_points[1]``.

    Examples
    --------
    >>> x = np.array([0.0, 1.0, 2.0, 3.0]); y = 2 * x + 1
    >>> p1, p2 = pair_predictions(x, y, 3, (1.0, 2.0), np.random.default_rng(0))
    >>> p1.round(6).tolist(), p2.round(6).tolist()
    ([3.0, 3.0, 3.0, 3.0, 3.0, 3.0], [5.0, 5.0, 5.0, 5.0, 5.0, 5.0])
    >>> p1, _ = pair_predictions(x, y, 3, (1.0, 2.0), np.random.default_rng(0), slots=40)
    >>> p1.size <= 6
    True
    """
    n = x.size
    if (slots is not None) + balanced + (thinned is not None) > 1:
        raise ValueError("pair_predictions takes one of slots, balanced=True or thinned")
    if thinned is not None:
        sizes = thinned_sizes(n, thinned, k, rng)
        m = n // 2
        perms = rng.permuted(np.tile(np.arange(n), (k, 1)), axis=1)
        keep = np.arange(m)[None, :] < sizes[:, None]
        a, b = perms[:, 0: 2 * m: 2][keep], perms[:, 1: 2 * m: 2][keep]
    elif slots is None:
        m = n // 2
        perms = rng.permuted(np.tile(np.arange(n), (k, 1)), axis=1)
        a = perms[:, 0: 2 * m: 2]
        b = perms[:, 1: 2 * m: 2]
        if balanced and n % 2 == 0 and m >= 1:
            # one-short matchings (odd rows) leave their last pair out: floor((n-1)/2) pairs
            keep = np.ones((k, m), dtype=bool)
            keep[1::2, m - 1] = False
            a, b = a[keep], b[keep]
        a, b = a.ravel(), b.ravel()
    else:
        size = slots + slots % 2
        if n > size:
            raise ValueError(f"the data have {n} records, more than the declared "
                             f"max_records = {slots}")
        place = rng.permuted(np.tile(np.arange(size), (k, 1)), axis=1)[:, :n]
        occupant = np.full((k, size), -1)
        occupant[np.arange(k)[:, None], place] = np.arange(n)[None, :]
        a, b = occupant[:, 0::2].ravel(), occupant[:, 1::2].ravel()
        both = (a >= 0) & (b >= 0)
        a, b = a[both], b[both]
    dx = x[b] - x[a]
    ok = dx != 0
    a, b, dx = a[ok], b[ok], dx[ok]
    slope = (y[b] - y[a]) / dx
    x1, x2 = cut_points
    return y[a] + slope * (x1 - x[a]), y[a] + slope * (x2 - x[a])


def matching_transformation(k: int, cut_points: tuple[float, float], *,
                            max_records: int | None = None,
                            pairing: str = "auto") -> Transformation:
    """The pairing step of DP Theil-Sen as a transformation: stability ``2 k`` for the
    maximal matchings (``k`` with a declared ``max_records``; :func:`pairing_stability`
    for every pairing).

    Maps a dataset of ``(x, y)`` rows (an ``(n, 2)`` array) to the multiset of the
    rows ``(prediction at x1, prediction at x2)`` of :func:`pair_predictions` over ``k``
    independent random matchings.  Its stability in the symmetric distance is ``2 k``:
    under the coupling of :class:`DPTheilSen`'s docstring one added record changes at
    most one pair per matching, a replaced pair being one removed and one added row;
    no coupling does better when the smaller dataset has an even size (the docstring's
    counterexample), so ``k`` (OpenDP's tutorial) would be unsound.  With a declared
    ``max_records`` the matchings are thinned (or slot) matchings
    (:func:`pair_predictions`), for which one added record adds or removes at most one
    pair per matching: stability ``k``, for datasets of at most ``max_records`` records
    (more raise ``ValueError``).  With ``pairing="balanced"`` (the default without a
    bound) the matchings alternate maximal and one-short (:func:`pair_predictions`) and
    the stability is ``k + ceil(k / 2)`` with no bound on the number of records.

    Parameters
    ----------
    k : int
        Number of matchings, >= 1.
    cut_points : tuple of float
        ``(x1, x2)``.
    max_records : int, optional
        A public upper bound on the number of records, >= 2.
    pairing : {'auto', 'maximal', 'balanced', 'slots', 'thinned'}
        See :data:`PAIRINGS` (default ``"auto"``: thinned with ``max_records``, balanced
        without).

    Examples
    --------
    >>> matching_transformation(10, (0.25, 0.75)).stability        # balanced
    15.0
    >>> t = matching_transformation(3, (0.25, 0.75), pairing="maximal")
    >>> t.stability, t.metric, t.randomized
    (6.0, 'symmetric', True)
    >>> data = np.column_stack([np.arange(6.0), 2 * np.arange(6.0)])
    >>> t(data, np.random.default_rng(0)).shape        # 3 matchings of 3 pairs
    (9, 2)
    """
    k = check_count(k, "k")
    bound = _check_max_records(max_records)
    mode = _resolve_pairing(pairing, bound)
    slots = bound if mode == "slots" else None
    thinned = bound if mode == "thinned" else None
    try:
        c1, c2 = (check_finite("cut_points[0]", cut_points[0]),
                  check_finite("cut_points[1]", cut_points[1]))
    except (TypeError, IndexError) as exc:
        raise ValueError(
            f"cut_points must be a pair (x1, x2), got {show_value(cut_points)}") from exc

    def predict(data: object, rng: np.random.Generator) -> np.ndarray:
        arr = np.asarray(data, dtype=float)
        if arr.ndim != 2 or arr.shape[1] != 2:
            raise ValueError(f"data must be an (n, 2) array of (x, y) rows, got shape "
                             f"{arr.shape}")
        if bound is not None and arr.shape[0] > bound:
            raise ValueError(f"the data have {arr.shape[0]} records, more than the "
                             f"declared max_records = {bound}")
        return np.column_stack(pair_predictions(arr[:, 0], arr[:, 1], k, (c1, c2), rng,
                                                 slots=slots,
                                                 balanced=mode == "balanced",
                                                 thinned=thinned))

    return Transformation(predict, pairing_stability(k, mode), "symmetric",
                          name="pair predictions", randomized=True)


def _check_max_records(max_records: object) -> int | None:
    if max_records is None:
        return None
    n = check_count(max_records, "max_records")
    if n < 2:
        raise ValueError(f"max_records must be an integer >= 2, got {show_value(max_records)}")
    return n


@dataclass(frozen=True, eq=False)
class TheilSenFit:
    """The released line of :class:`DPTheilSen`.

    Each parameter is an attribute of the same name.

    Parameters
    ----------
    slope, intercept : float
        The line, recovered from the two private medians.
    cut_points : tuple of float
        ``(x1, x2)``.
    medians : tuple of float
        The private medians of the predictions at ``x1`` and ``x2``.

    Examples
    --------
    >>> fit = TheilSenFit(2.0, 1.0, (0.25, 0.75), (1.5, 2.5))
    >>> fit.predict([0.0, 1.0]).tolist()
    [1.0, 3.0]
    """

    slope: float
    intercept: float
    cut_points: tuple[float, float]
    medians: tuple[float, float]

    def predict(self, x: object) -> np.ndarray:
        """``slope * x + intercept``.

        Parameters
        ----------
        x : array_like
            Points at which the line is evaluated (finite).

        Examples
        --------
        >>> TheilSenFit(-1.0, 2.0, (0.25, 0.75), (1.75, 1.25)).predict([2.0]).tolist()
        [0.0]
        """
        return self.slope * check_data("x", x) + self.intercept


@dataclass(frozen=True, repr=False, init=False)
class DPTheilSen(Algorithm):
    """DP Theil-Sen with ``k`` matchings (Alabi et al. 2020, DPTheilSenkMatch).

    1. Draw ``k`` independent random matchings of the records (:func:`pair_predictions`;
       uniformly random maximal matchings in the paper, ``pairing="maximal"``; ``k = 1``
       is their DPTheilSenMatch; the default pairing is below).
    2. For every pair, the prediction of its line at ``x1`` and at ``x2`` (by default the
       25th and 75th percentiles of the declared x range).
    3. A private median of each set of predictions on ``[pred_lower, pred_upper]`` by
       the exponential mechanism of Smith 2011
       (:func:`~dpacct.mechanisms.algorithms.quantiles.smith_quantile`)
       with budgets ``epsilon1 = split * epsilon`` and ``epsilon2 = (1 - split) *
       epsilon`` and utility sensitivity ``Delta`` (:attr:`sensitivity`; ``k`` for
       maximal matchings): density ``∝ exp(-epsilon_j |rank - m/2| / (2 Delta))`` over
       ``m`` predictions.  A prediction outside the declared range
       counts below (above) every output; the median itself always lies in the range.
    4. ``slope = (p2 - p1) / (x2 - x1)``, ``intercept = p1 - slope x1`` (post-processing).

    Limitation (of Smith's interval mechanism): it gives no mass to single points, so
    when most predictions coincide (points exactly on a line) the two intervals around
    the atom have ranks 0 and ``m`` and the median is no better than a guess; noisy
    data, the case the method is for, do not have this problem.

    Privacy (add/remove one record): ``compose([ExponentialMechanism(epsilon1),
    ExponentialMechanism(epsilon2)])``.  The ``k`` matchings of neighbouring datasets can
    be coupled so that the prediction multisets differ by at most ``k`` single-point
    edits, so the median utility ``-|rank(y) - m/2|`` has sensitivity ``k`` and each
    median is an ``epsilon_j``-bounded-range exponential mechanism
    (:class:`~dpacct.mechanisms.primitives.exponential.ExponentialMechanism`).  The
    privacy argument in full: docs/theory/algorithms.md, section 'DP Theil-Sen'.

    Without a bound on the number of records the pairing is 2-stable per matching, not
    1-stable as OpenDP's Theil-Sen tutorial declares (the counterexample: same section).
    A declared bound on the number of records restores 1-stability.  With
    ``max_records = N`` each matching is a *thinned matching* (:func:`thinned_sizes`,
    :func:`pair_predictions`; or a *slot matching* with ``pairing="slots"``): the
    sensitivity is ``k / 2``, and the guarantee holds only on datasets of at most ``N``
    records (more raise, as data outside the declared x range do).

    The pairing and a loose bound.  Without a bound the default is
    ``pairing="balanced"``: ``ceil(k / 2)`` maximal and ``floor(k / 2)`` one-short
    matchings (:func:`pair_predictions`), whose replaced pairs fall on opposite parities
    of ``n``, give sensitivity ``(k + ceil(k / 2)) / 2`` (``3 k / 4`` for even ``k``)
    with about ``n / 2`` pairs per matching (``pairing="maximal"``, sensitivity ``k``,
    was the default before).  With ``max_records = N`` the thinned matchings keep
    about ``n / 3 + n / (6 c^3)`` pairs at the slack ``c = N / n``, so, counted as
    sensitivity per paired record, the medians' noise relative to an exact ``N = n``
    is about ``3 c^3 / (2 c^3 + 1)``: 1 at ``c = 1``, 1.31 at 1.5, 1.41 at 2, never
    above the balanced pairing's 3/2, and below the slot matchings' ``(N - 1) / (n -
    1)`` at every ``n < N`` -- no choice that needs ``n`` (:func:`pairing_stability`;
    the theorems and the measurements: docs/theory/algorithms.md, section 'DP
    Theil-Sen').

    The median.  ``median="intervals"`` (default) is Smith's continuous exponential
    mechanism on ``[pred_lower, pred_upper]``; ``median="grid"`` selects one of
    ``grid_size`` equally spaced candidates of that range by permute-and-flip
    (:class:`~dpacct.mechanisms.PermuteAndFlip`, McKenna & Sheldon 2020), with the same
    utility and sensitivity; its privacy is ``compose([PermuteAndFlip(epsilon1),
    PermuteAndFlip(epsilon2)])``.  Choose the grid for a few hundred records or fewer
    (the measurements: docs/theory/algorithms.md, section 'DP Theil-Sen').

    Parameters
    ----------
    epsilon : float
        The estimator's total pure-DP budget, > 0 and finite: the whole fit is
        ``epsilon``-DP (the matchings cost nothing; the two medians share the budget,
        ``split * epsilon`` for the median at ``x1`` and ``(1 - split) * epsilon`` for
        the one at ``x2``, see :attr:`budgets`).  Available afterwards as ``epsilon0``
        (``epsilon`` is the query method ``epsilon(delta)``, which, through the
        bounded-range analysis, can answer slightly below the budget at a positive
        delta).
    x_lower, x_upper : float
        Declared range of ``x`` (it places the default cut points); data outside raise
        unless ``out_of_range="clip"``.
    pred_lower, pred_upper : float
        Declared range of the predictions at the cut points (the medians' output range).
    k : int
        Number of matchings, >= 1 (default 10).
    split : float
        Fraction of ``epsilon`` for the median at ``x1``, in (0, 1) (default 0.5).
    cut_points : tuple of float, optional
        ``(x1, x2)`` with ``x_lower <= x1 < x2 <= x_upper``.
    median : {'intervals', 'grid'}
        Smith's interval mechanism (default) or permute-and-flip over a grid of
        ``grid_size`` candidates (see "The median" above).
    grid_size : int
        Number of equally spaced candidates on ``[pred_lower, pred_upper]`` for
        ``median="grid"``, >= 2 (default 100, as in OpenDP's tutorial).
    max_records : int, optional
        A public upper bound on the number of records, >= 2: the matchings become
        thinned matchings and the medians' sensitivity is ``k / 2`` (see "A declared
        bound" above; drawing the thinned sizes costs ``O((N - n) k)``).
        The guarantee then covers datasets of at most ``max_records`` records; ``fit``
        raises ``ValueError`` on more (with any pairing).
    pairing : {'auto', 'maximal', 'balanced', 'slots', 'thinned'}
        How the records are paired (:data:`PAIRINGS`, "The pairing and a loose bound"
        above): ``"auto"`` (default) is ``"thinned"`` with ``max_records`` and
        ``"balanced"`` without (sensitivity ``(k + ceil(k / 2)) / 2`` instead of the
        maximal matchings' ``k``); ``"slots"`` and ``"thinned"`` need ``max_records``.
    out_of_range : {'raise', 'clip'}
        An ``x`` outside ``[x_lower, x_upper]``: raise ``ValueError`` (default) or clip
        it to the range.  Clipping maps each record ``(x_i, y_i)`` to ``(clip(x_i),
        y_i)`` with a public range, a per-record transformation, so neighbouring data
        stay neighbouring and the privacy claim above is unchanged (the privacy argument
        does not use the x range at all: predictions outside ``[pred_lower,
        pred_upper]`` are already handled by the ranks).  Clipping does bias the pair
        slopes of the clipped records, so declare a range that holds almost all of x.
    epsilon0 : float, optional
        Deprecated keyword name of ``epsilon`` (a ``DeprecationWarning``); giving both
        is a ``TypeError``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(0, 1, 2000); y = 2 * x + 1 + rng.normal(0, 0.1, 2000)
    >>> alg = DPTheilSen(epsilon=1.0, x_lower=0, x_upper=1, pred_lower=-10, pred_upper=10)
    >>> alg.budgets
    (0.5, 0.5)
    >>> fit = alg.fit(x, y, rng=np.random.default_rng(1))
    >>> round(fit.slope, 1), round(fit.intercept, 1)
    (2.0, 1.0)

    The default pairing without a bound is the parity-balanced one (sensitivity ``3 k /
    4``, ``k`` for the maximal matchings); a public bound on the number of records
    lowers it to ``k / 2``:

    >>> alg.sensitivity, DPTheilSen(1.0, 0, 1, -10, 10, pairing="maximal").sensitivity
    (7.5, 10.0)
    >>> DPTheilSen(1.0, 0, 1, -10, 10, max_records=5000).sensitivity
    5.0
    """

    #: the total pure-DP budget, stored as ``epsilon0`` because ``epsilon`` is the
    #: :meth:`~dpacct.accountant.mechanism.Mechanism.epsilon` query of every mechanism
    epsilon0: float
    x_lower: float
    x_upper: float
    pred_lower: float
    pred_upper: float
    k: int = 10
    split: float = 0.5
    cut_points: tuple[float, float] | None = None
    out_of_range: str = "raise"
    median: str = "intervals"
    grid_size: int = 100
    max_records: int | None = None
    pairing: str = "auto"

    def __init__(
        self,
        epsilon: float | None = None,
        x_lower: float | None = None,
        x_upper: float | None = None,
        pred_lower: float | None = None,
        pred_upper: float | None = None,
        k: int = 10,
        split: float = 0.5,
        cut_points: tuple[float, float] | None = None,
        out_of_range: str = "raise",
        median: str = "intervals",
        grid_size: int = 100,
        max_records: int | None = None,
        pairing: str = "auto",
        *,
        epsilon0: float | None = None,
    ) -> None:
        if epsilon0 is not None:
            if epsilon is not None:
                raise TypeError(
                    "DPTheilSen got both epsilon and its deprecated name epsilon0; "
                    "give epsilon only (the total pure-DP budget)"
                )
            warnings.warn(
                "DPTheilSen(epsilon0=...) is deprecated; use epsilon=... (the same total "
                "pure-DP budget of the estimator)",
                DeprecationWarning,
                stacklevel=2,
            )
            epsilon = epsilon0
        given = {"epsilon": epsilon, "x_lower": x_lower, "x_upper": x_upper,
                 "pred_lower": pred_lower, "pred_upper": pred_upper}
        missing = [name for name, value in given.items() if value is None]
        if missing:
            raise TypeError(
                "DPTheilSen missing required argument(s): " + ", ".join(missing))
        for name, value in (*given.items(), ("k", k), ("split", split),
                            ("cut_points", cut_points), ("out_of_range", out_of_range),
                            ("median", median), ("grid_size", grid_size),
                            ("max_records", max_records), ("pairing", pairing)):
            object.__setattr__(self, "epsilon0" if name == "epsilon" else name, value)
        self.__post_init__()

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon0", check_positive("epsilon", self.epsilon0))
        xl, xu = check_range(self.x_lower, self.x_upper, ("x_lower", "x_upper"))
        object.__setattr__(self, "x_lower", xl)
        object.__setattr__(self, "x_upper", xu)
        pl, pu = check_range(self.pred_lower, self.pred_upper, ("pred_lower", "pred_upper"))
        object.__setattr__(self, "pred_lower", pl)
        object.__setattr__(self, "pred_upper", pu)
        object.__setattr__(self, "k", check_count(self.k, "k"))
        object.__setattr__(self, "split", check_probability("split", self.split))
        if self.cut_points is None:
            cuts = (xl + 0.25 * (xu - xl), xl + 0.75 * (xu - xl))
        else:
            try:
                c1, c2 = self.cut_points
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    f"cut_points must be a pair (x1, x2), got {show_value(self.cut_points)}"
                ) from exc
            cuts = (check_finite("cut_points[0]", c1), check_finite("cut_points[1]", c2))
            if not (xl <= cuts[0] < cuts[1] <= xu):
                raise ValueError(
                    f"cut_points must satisfy x_lower <= x1 < x2 <= x_upper = [{xl!r}, "
                    f"{xu!r}], got {cuts!r}")
        object.__setattr__(self, "cut_points", cuts)
        object.__setattr__(self, "out_of_range", check_out_of_range(self.out_of_range))
        if self.median not in MEDIANS:
            raise ValueError(f"median must be one of {MEDIANS}, got {self.median!r}")
        g = check_count(self.grid_size, "grid_size")
        if g < 2:
            raise ValueError(
                f"grid_size must be an integer >= 2, got {show_value(self.grid_size)}")
        object.__setattr__(self, "grid_size", g)
        object.__setattr__(self, "max_records", _check_max_records(self.max_records))
        _resolve_pairing(self.pairing, self.max_records)

    def __repr__(self) -> str:
        args = [f"epsilon={self.epsilon0!r}"] + [
            f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)[1:]
        ]
        return f"DPTheilSen({', '.join(args)})"

    @property
    def budgets(self) -> tuple[float, float]:
        """``(epsilon1, epsilon2)``: the two medians' pure-DP parameters."""
        return self.split * self.epsilon0, (1.0 - self.split) * self.epsilon0

    def planned_releases(self) -> tuple[PlannedRelease, ...]:
        """Two selections, the medians at ``x1`` and ``x2``: bounded-range exponential
        mechanisms (intervals) or permute-and-flip (grid).

        Each with utility sensitivity :attr:`sensitivity` (class docstring).
        """
        e1, e2 = self.budgets
        select = PermuteAndFlip if self.median == "grid" else ExponentialMechanism
        return (
            PlannedRelease("median at x1", select(epsilon=e1), 1, sensitivity=self.sensitivity),
            PlannedRelease("median at x2", select(epsilon=e2), 1, sensitivity=self.sensitivity),
        )

    @property
    def sensitivity(self) -> float:
        """The medians' utility sensitivity: half of :func:`pairing_stability` (``k``
        maximal, ``(k + ceil(k / 2)) / 2`` balanced, ``k / 2`` slots or thinned).
        """
        return pairing_stability(self.k, self.resolved_pairing) / 2

    @property
    def resolved_pairing(self) -> str:
        """The pairing used: ``pairing`` with ``"auto"`` resolved (``"thinned"`` with a
        declared ``max_records``, ``"balanced"`` without).
        """
        return _resolve_pairing(self.pairing, self.max_records)

    def fit(self, x: object, y: object, *, rng: np.random.Generator) -> TheilSenFit:
        """Release the private line for data ``(x, y)``.

        Parameters
        ----------
        x, y : array_like
            1-D, the same length >= 2, finite; ``x`` inside the declared range.
        rng : numpy.random.Generator
            Source of all randomness (matchings and the two medians).

        Examples
        --------
        >>> alg = DPTheilSen(epsilon=4.0, x_lower=0, x_upper=10, pred_lower=-50,
        ...                  pred_upper=50, k=5)
        >>> rng = np.random.default_rng(0)
        >>> x = np.linspace(0, 10, 500); y = 3 * x - 2 + rng.normal(0, 0.5, 500)
        >>> fit = alg.fit(x, y, rng=rng)
        >>> round(fit.slope, 1), round(fit.intercept, 1)
        (3.0, -2.0)
        """
        check_rng(rng)
        xa = check_data("x", x, self.x_lower, self.x_upper, min_size=2,
                        out_of_range=self.out_of_range)
        ya = check_data("y", y)
        if xa.shape != ya.shape:
            raise ValueError(f"x and y must have the same shape, got {xa.shape} and "
                             f"{ya.shape}")
        x1, x2 = self.cut_points
        # the matchings are part of the algorithm (their randomness is what the coupling
        # argument of the class docstring averages over), not noise of a primitive
        mode = self.resolved_pairing
        if self.max_records is not None and xa.size > self.max_records:
            raise ValueError(f"the data have {xa.size} records, more than the declared "
                             f"max_records = {self.max_records}")
        p1, p2 = pair_predictions(xa, ya, self.k, (x1, x2), rng,
                                  slots=self.max_records if mode == "slots" else None,
                                  balanced=mode == "balanced",
                                  thinned=self.max_records if mode == "thinned" else None)
        lo, hi = self.pred_lower, self.pred_upper
        session = self.releases(rng)
        medians = []
        grid = np.linspace(lo, hi, self.grid_size) if self.median == "grid" else None
        for label, preds in (("median at x1", p1), ("median at x2", p2)):
            if grid is None:
                scores, edges = smith_pieces(preds, 0.5, lo, hi)
                medians.append(session.release(label, scores, edges=edges))
            else:
                ranks = np.searchsorted(np.sort(preds), grid, side="left")
                index = session.release(label, -np.abs(ranks - 0.5 * preds.size))
                medians.append(float(grid[index]))
        session.finish()
        m1, m2 = medians
        slope = (m2 - m1) / (x2 - x1)
        return TheilSenFit(float(slope), float(m1 - slope * x1), (x1, x2), (m1, m2))


def _encode_theil_sen(m: DPTheilSen) -> dict:
    return {"epsilon" if f.name == "epsilon0" else f.name: getattr(m, f.name) for f in fields(m)}


def _decode_theil_sen(params: dict) -> DPTheilSen:
    params = dict(params)
    if "epsilon0" in params and "epsilon" not in params:  # written before the rename
        params["epsilon"] = params.pop("epsilon0")
    if "pairing" not in params:  # written before the pairing existed: its behaviour then
        params["pairing"] = "slots" if params.get("max_records") is not None else "maximal"
    return DPTheilSen(**params)


register_mechanism(
    "dp_theil_sen", DPTheilSen, encode=_encode_theil_sen, decode=_decode_theil_sen
)
