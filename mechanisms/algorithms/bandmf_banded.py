"""More than two bands: residue classes reduce a b-band strategy to two-band transfers
(Theorem 3 of docs/theory/dpmf_balls_in_bins.md).

For a ``b``-banded non-negative strategy under balls-in-bins with cycle length ``k``,
split the bins into ``g`` residue classes (Lemma 3 there: each hockey-stick divergence of
the pair is at most the largest over the classes).  Two bins of one class are ``g``
apart; with ``2 g >= b`` only neighbouring bins of a class (cyclically) share rows of
``C``, so the class's Gram block ``G_r`` is cyclic tridiagonal when ``g`` divides ``k``.
Lemma 2's projection argument holds for any Gram ``G' >= G_r`` (positive semi-definite
difference), and the Gram matrix of a two-band strategy ``(c0', c1')`` with ``n' = t m +
1`` steps and cycle ``t`` (the class size) is ``m ((c0'^2 + c1'^2) I + c0' c1' (S + S^T))
+ c0'^2 e_0 e_0^T`` (``S`` the cyclic shift), so choosing ``m (c0'^2 + c1'^2) = a``,
``m c0' c1' = p`` with ``a I + p (S + S^T) >= G_r`` makes Theorem 2's transfer bound the
class.  ``a`` is a rigorous upper bound on ``lambda_max(G_r - p (S + S^T))`` (Lemma 4's
eigen-residual bound), and the domination is re-checked on the floating-point Gram
matrices with a margin.  The answer is the least of this and Theorem 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpacct.accountant.validation import check_count, check_positive
from dpacct.mechanisms.algorithms.bandmf_balls_in_bins_core import (
    MAX_CLASSES,
    _lambda_max_upper,
    balls_in_bins_candidates,
    balls_in_bins_gram,
)
from dpacct.mechanisms.algorithms.bandmf_two_band import (
    BANDED_REMOVE_RHO,
    MOVED_WIDTH,
    BandMFTwoBandBallsInBins,
    _law_delta,
    _two_band_cost,
    two_band_delta_law,
)

__all__ = ["BandMFBandedBallsInBins", "bandmf_banded_balls_in_bins", "class_two_band_instances"]

#: rows per bin of the two-band stand-in (row 0's extra ``c0'^2`` on bin 0 is ``a / m``
#: at most: 0.4 %), fewer when the stand-in would pass :data:`MAX_STEPS` steps
ROWS_PER_BIN = 256
#: Theorem 3 is used only where Theorem 2's exponents (the squared mode norm over
#: 2 sigma^2 plus the grid's reach, 8 standard deviations) stay below this: their
#: round-off, at most |argument| * 4u = 1e-12 relative there, is what Theorem 2's term
#: slack of 1e-12 covers
_MAX_EXPONENT = 1000.0
#: the stand-in's steps are at most this (its Gram matrix is built, and checked, from
#: the ``n' x n'`` strategy: 2048 steps are 32 MB)
MAX_STEPS = 2049


def _shift_sum(t: int) -> np.ndarray:
    """``S + S^T`` for the cyclic shift ``S`` of ``t`` bins (``2 x`` swap when ``t = 2``)."""
    s = np.roll(np.eye(t), 1, axis=1)
    return s + s.T


def _dominated(block: np.ndarray, ref: np.ndarray, scale: float) -> bool:
    """Whether ``ref - block`` is certified positive semi-definite with margin
    ``1e-9 scale``: ``lambda_max(X) = lambda_max(X + s I) - s`` for ``X = block - ref``,
    with ``s = scale`` so that Lemma 4's bound (which clips at 0) applies, the shift's
    and the subtraction's round-off (``<= u`` of each entry's magnitude) added."""
    k = block.shape[0]
    x = block - ref + scale * np.eye(k)
    slack = 4 * 2.0**-53 * (float(np.abs(block).max()) + float(np.abs(ref).max()) + scale) * k
    return _lambda_max_upper(x) + slack - scale <= -1e-9 * scale


def class_two_band_instances(strategy: object, iterations: int, cycle_length: int,
                             classes: int) -> tuple:
    """Per class size ``t >= 2`` of ``classes`` residue classes, a two-band instance
    ``(t, n', (c0', c1'))`` whose Gram matrix dominates every class block of that size
    (Theorem 3 of docs/theory/dpmf_balls_in_bins.md); classes of one bin are Gaussians,
    returned as ``(1, 0, (sqrt(G_rr), 0.0))``.

    Examples
    --------
    >>> inst = class_two_band_instances([1.0, 0.5, 0.25], 40, 8, 2)
    >>> [(t, n) for t, n, _ in inst]
    [(4, 1025)]
    """
    n = check_count(iterations, "iterations")
    k = check_count(cycle_length, "cycle_length")
    g = check_count(classes, "classes")
    col = np.asarray(strategy, dtype=float)
    key = (col.tobytes(), col.shape, n, k, g)
    if key not in _INSTANCES:
        _INSTANCES[key] = _instances(col, n, k, g)
    return _INSTANCES[key]


#: built instances by (strategy, n, k, g): they do not depend on the noise
_INSTANCES: dict = {}


def _class_blocks(strategy: object, n: int, k: int, g: int) -> dict[int, list[np.ndarray]]:
    """Class size -> the Gram blocks of the classes of that size (Lemma 3's ``G_r``, bins
    ``r, r + g, ...``), ``g`` residue classes of ``k`` bins."""
    gram = balls_in_bins_gram(strategy, n, k)
    by_size: dict[int, list[np.ndarray]] = {}
    for r in range(min(g, k)):
        idx = np.arange(r, k, g)
        by_size.setdefault(idx.size, []).append(gram[np.ix_(idx, idx)])
    return by_size


def _instances(strategy: np.ndarray, n: int, k: int, g: int) -> tuple:
    """:func:`class_two_band_instances` without the checks and the cache."""
    by_size = _class_blocks(strategy, n, k, g)
    out = []
    for t, blocks in sorted(by_size.items()):
        m = max(2, min(ROWS_PER_BIN, (MAX_STEPS - 1) // t))
        if t == 1:
            out.append((1, 0, (math.sqrt(max(float(b[0, 0]) for b in blocks)), 0.0)))
            continue
        adj = _shift_sum(t)
        mask = adj > 0
        pairs = np.concatenate([b[mask] / adj[mask] for b in blocks])

        def need(q: float, adj=adj, blocks=blocks) -> float:  # least a at p = q (convex)
            return max(max(float(np.linalg.eigvalsh(b - q * adj)[-1]) for b in blocks), 2 * q)

        lo, hi = float(pairs.min()), float(pairs.max())
        for _ in range(40):  # golden section on a convex function: only tightness
            if hi - lo <= 1e-7 * max(hi, 1e-300):
                break
            m1, m2 = lo + 0.382 * (hi - lo), hi - 0.382 * (hi - lo)
            if need(m1) <= need(m2):
                hi = m2
            else:
                lo = m1
        p = 0.5 * (lo + hi)
        a = max(_lambda_max_upper(b - p * adj) for b in blocks) * (1 + 1e-8)
        a = max(a, 2.0 * p)
        for _ in range(20):
            c0 = (math.sqrt(a + 2 * p) + math.sqrt(a - 2 * p)) / (2 * math.sqrt(m))
            c1 = max((math.sqrt(a + 2 * p) - math.sqrt(a - 2 * p)) / (2 * math.sqrt(m)), 0.0)
            ref = balls_in_bins_gram([c0, c1], t * m + 1, t)
            # certified: lambda_max(G_r - G') <= -1e-9 a, far beyond the entries' round-off
            if all(_dominated(b, ref, a) for b in blocks):
                break
            a *= 1 + 1e-6
        else:  # pragma: no cover - the margin is 1e-8 against round-off of 1e-13
            raise RuntimeError("two-band domination could not be certified")
        out.append((t, t * m + 1, (c0, c1)))
    return tuple(out)


@dataclass(frozen=True, repr=False, eq=False)
class BandMFBandedBallsInBins(BandMFTwoBandBallsInBins):
    """The least of Theorem 1 and Theorem 3 (residue classes, each dominated by a
    two-band transfer) of docs/theory/dpmf_balls_in_bins.md; build it with
    :func:`bandmf_banded_balls_in_bins`.  ``laws`` holds, per class size, the remove and
    add laws of Theorem 2 (or a Gaussian's ``(norm, None)``); the transfer part's delta
    is the largest over the class sizes.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation per unit of clipping norm, > 0.
    candidates : tuple
        Theorem 1's candidates.
    laws : tuple
        Per class size: ``((z, w, tail) remove, (z, w, tail) add)`` or ``(norm, None)``.

    Examples
    --------
    >>> run = bandmf_banded_balls_in_bins(1.5, 8, cycle_length=4, strategy=[1.0, 0.6, 0.3],
    ...                                   points=5)       # coarse: looser, still a bound
    >>> type(run).__name__, len(run.laws)                  # one class size (2 bins)
    ('BandMFBandedBallsInBins', 1)
    """

    def _transfer_delta(self, eps: np.ndarray) -> np.ndarray:
        from dpacct.accountant import GaussianMechanism

        if not self.laws:
            return np.ones(np.shape(eps))
        out = np.zeros(np.shape(eps))
        for law in self.laws:
            if law[1] is None:  # one bin: the Gaussian of that norm
                d = np.asarray(GaussianMechanism(self.noise_multiplier / law[0]).delta(eps))
            else:
                (zr, wr, tr), (za, wa, ta) = law
                d = np.maximum(_law_delta(zr, wr, tr, True, eps),
                               _law_delta(za, wa, ta, False, eps))
            out = np.maximum(out, d)
        return out

    def __repr__(self) -> str:
        return (f"BandMFBandedBallsInBins(noise_multiplier={self.noise_multiplier!r}, "
                f"candidates=..., laws=<{len(self.laws)} class sizes>)")



def _checked_run(noise_multiplier, iterations, cycle_length, strategy, points, candidates,
                 *, min_bands: int) -> tuple[float, np.ndarray, tuple]:
    """The inputs of a banded balls-in-bins bound (Theorems 3 and 4), checked by name:
    ``(sigma, strategy column, Theorem 1's candidates)`` (the candidates are built
    anyway: building them checks every run input by name)."""
    sigma = check_positive("noise_multiplier", noise_multiplier)
    try:
        col = np.asarray(strategy, dtype=float)
    except (TypeError, ValueError, OverflowError) as exc:
        raise TypeError(f"strategy must be a real array, got {strategy!r}") from exc
    if col.ndim != 1 or col.size < min_bands:
        raise ValueError("strategy must be the first column of a banded Toeplitz strategy "
                         f"(one dimension, {min_bands} entries or more), got shape "
                         f"{col.shape}")
    if check_count(points, "points") < 3:
        raise ValueError(f"points must be an integer >= 3, got {points}")
    full = balls_in_bins_candidates(iterations, cycle_length, list(col), MAX_CLASSES)
    if not 2 <= check_count(cycle_length, "cycle_length") < check_count(iterations,
                                                                        "iterations"):
        raise ValueError(f"cycle_length must be in [2, iterations - 1], got {cycle_length}")
    return sigma, col, full if candidates is None else candidates

def bandmf_banded_balls_in_bins(
    noise_multiplier: float,
    iterations: int,
    *,
    cycle_length: int,
    strategy: object,
    classes: int | None = None,
    points: int = 41,
    candidates: tuple | None = None,
) -> BandMFBandedBallsInBins:
    """Certified privacy of b-band DP-MF under balls-in-bins by Theorem 3 (residue
    classes dominated by two-band transfers), at most Theorem 1's bound.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation per unit of clipping norm, > 0.
    iterations : int
        Steps ``n``, >= 3.
    cycle_length : int
        Bins ``k``, ``2 <= k < n``.
    strategy : array_like
        The first column of a banded Toeplitz strategy (``b`` entries), non-negative.
    classes : int, optional
        Residue classes ``g``; default ``ceil(b / 2)`` (the least making each class
        block cyclic tridiagonal), in ``[1, cycle_length]`` so that every class holds
        at least one bin.
    points : int
        Grid points of Theorem 2, >= 3.
    candidates : tuple, optional
        Theorem 1's candidates, when built.

    Returns
    -------
    BandMFBandedBallsInBins

    Examples
    --------
    >>> c = [1.0, 0.6, 0.3]                               # three bands, 2 classes of 2 bins
    >>> run = bandmf_banded_balls_in_bins(1.5, 8, cycle_length=4, strategy=c, points=11)
    >>> from dpacct.mechanisms.algorithms.bandmf_balls_in_bins import bandmf_balls_in_bins
    >>> one = bandmf_balls_in_bins(1.5, 8, cycle_length=4, strategy=c, two_band=False)
    >>> bool(run.epsilon(1e-3) <= one.epsilon(1e-3))      # the least of Theorems 1 and 3
    True
    """
    sigma, col, candidates = _checked_run(noise_multiplier, iterations, cycle_length,
                                          strategy, points, candidates, min_bands=1)
    b = col.size
    g = max(1, math.ceil(b / 2)) if classes is None else check_count(classes, "classes")
    if g > cycle_length:
        raise ValueError(f"classes must be in [1, cycle_length = {cycle_length}] (each "
                         f"class holds at least one bin), got {classes}")
    laws = []
    try:
        for t, n2, (c0, c1) in class_two_band_instances(list(col), iterations,
                                                         cycle_length, g):
            if t == 1:
                laws.append((c0, None))
                continue
            m = (n2 - 1) // t
            reach = ((m * (c0 * c0 + c1 * c1) + c0 * c0) / (2 * sigma * sigma)
                     + 8.0 * ((c0 + c1) * math.sqrt(m) + c0) / sigma)
            if reach > _MAX_EXPONENT:
                raise OverflowError  # Theorem 2's term round-off is proved below this
            laws.append(tuple(
                two_band_delta_law(sigma, n2, t, [c0, c1], d, points=points,
                                   moved_width=MOVED_WIDTH,
                                   rho=BANDED_REMOVE_RHO if d == "remove" else 0.05)
                for d in ("remove", "add")))
    except (ZeroDivisionError, IndexError, OverflowError, FloatingPointError):
        # noise too large for the add grid (see Theorem 2), or so small that a term's
        # exponent leaves the partial-sum grid (sigma 0.05): Theorem 1 alone
        laws = []
    return BandMFBandedBallsInBins(sigma, candidates, tuple(laws))


def banded_classes(strategy: object, iterations: int, cycle_length: int) -> int | None:
    """Residue classes of Theorem 3 by default: ``ceil(b / 2)`` for a first column of
    ``b >= 3`` non-negative entries whose classes hold two bins or more (``k >= g + 1``,
    ``k < n``); None where Theorem 3 does not apply (inputs are checked by the caller).

    Examples
    --------
    >>> banded_classes([1.0, 0.5, 0.25, 0.125], 100, 10), banded_classes([1.0, 0.5], 8, 4)
    (2, None)
    """
    c = np.asarray(strategy, dtype=float)
    if c.ndim != 1 or c.size < 3 or not np.all(np.isfinite(c)) or np.any(c < 0) or c[0] <= 0:
        return None
    g = math.ceil(c.size / 2)
    return g if g + 1 <= cycle_length < iterations else None


def banded_cost(noise_multiplier: float, iterations: int, cycle_length: int,
                strategy: object, classes: int, points: int) -> float:
    """Estimated CPU seconds of Theorem 3: Theorem 2's estimate per class size."""
    return sum(_two_band_cost(noise_multiplier, n2, t, c, points=points)
               for t, n2, c in class_two_band_instances(strategy, iterations, cycle_length,
                                                        classes) if t > 1)
