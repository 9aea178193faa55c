"""The Theorem 1 machinery of DP-MF under balls-in-bins (docs/theory/dpmf_balls_in_bins.md):
the Gram matrix of the modes, the certified eigenvalue bounds, the residue-class
candidates and :class:`BandMFBallsInBins`, and the Monte Carlo estimate of the pair.

:mod:`.bandmf_balls_in_bins` (which re-exports these names and holds the default
:func:`~.bandmf_balls_in_bins.bandmf_balls_in_bins`) describes the bound; this module
is separate so that :mod:`.bandmf_two_band` (Theorem 2) can build on it and the default
can use both without an import cycle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpacct.accountant import GaussianMechanism, Mechanism, compose
from dpacct.accountant.capabilities import Capabilities
from dpacct.accountant.transformers.random_allocation import random_allocation
from dpacct.accountant.transformers.random_allocation_lower import random_allocation_lower_epsilon
from dpacct.accountant.transformers.random_allocation_pld import AllocationEpochPair
from dpacct.accountant.validation import (
    check_count,
    check_delta,
    check_epsilon,
    check_positive,
    check_probability,
)

__all__ = [
    "BandMFBallsInBins",
    "balls_in_bins_candidates",
    "balls_in_bins_gram",
    "bandmf_balls_in_bins_delta_mc",
]

_U = 2.0**-53
#: class counts tried beyond 1 are at most this (and the cycle length k, always)
MAX_CLASSES = 16


def _strategy_matrix(strategy: object, n: int) -> np.ndarray:
    """The ``n x n`` strategy from a matrix or a banded Toeplitz first column (checked)."""
    try:
        c = np.asarray(strategy, dtype=float)
    except (TypeError, ValueError, OverflowError) as exc:
        raise TypeError(f"strategy must be a real array, got {strategy!r}") from exc
    if not np.all(np.isfinite(c)):
        raise ValueError("strategy must contain only finite numbers")
    if np.any(c < 0):
        raise ValueError(
            "strategy must be non-negative (the balls-in-bins dominating pair of "
            "arXiv:2410.06266, Lemma 3.2, needs C >= 0 entrywise)"
        )
    if not np.any(c > 0):
        raise ValueError("strategy must have a positive entry (C = 0 releases only noise)")
    if c.ndim == 1:  # the non-zero entries of the first column of a Toeplitz strategy
        if c.size == 0 or c.size > n:
            raise ValueError(
                f"strategy as a first column must have 1..iterations = {n} entries, "
                f"got {c.size}"
            )
        full = np.zeros((n, n))
        rows = np.arange(n)
        for lag, value in enumerate(c):  # disjoint diagonals: the same values as a sum
            full[rows[lag:], rows[: n - lag]] = value
        return full
    if c.shape != (n, n):
        raise ValueError(
            f"strategy must be a first column or iterations x iterations = {n} x {n}, "
            f"got shape {c.shape}"
        )
    upper = np.triu(c, k=1)
    if np.any(upper != 0.0):
        r, s = (int(v[0]) for v in np.nonzero(upper))
        raise ValueError(f"strategy must be lower triangular; C[{r}, {s}] = {c[r, s]!r}")
    if not np.any(c):
        raise ValueError("strategy must not be all zero")
    return c


def balls_in_bins_gram(strategy: object, iterations: int, cycle_length: int) -> np.ndarray:
    """Gram matrix ``G[s, t] = <C x_s, C x_t>`` of the balls-in-bins modes.

    ``x_s`` is the indicator of the steps ``s, s + k, ...`` (``k = cycle_length``) of a
    record in bin ``s``; ``C x_s`` is the record's contribution to the release (module
    docstring).  Only ``G`` enters the privacy of the pair (Lemma 1 of
    docs/theory/dpmf_balls_in_bins.md).

    Parameters
    ----------
    strategy : array_like
        ``iterations x iterations`` non-negative lower-triangular ``C``, or the non-zero
        entries of the first column of a banded Toeplitz ``C`` (JAX Privacy's ``c_col``).
    iterations : int
        Steps ``n``, >= 1.
    cycle_length : int
        Bins ``k`` (steps between two participations of a record), ``1 <= k <= n``.

    Returns
    -------
    numpy.ndarray
        The ``k x k`` Gram matrix (non-negative, symmetric).

    Examples
    --------
    >>> g = balls_in_bins_gram([1.0, 0.5], iterations=4, cycle_length=2)
    >>> g.tolist()      # bin 0: steps 0, 2; bin 1: steps 1, 3 (the last column is cut)
    [[2.5, 1.5], [1.5, 2.25]]
    """
    n = check_count(iterations, "iterations")
    k = check_count(cycle_length, "cycle_length")
    if k > n:
        raise ValueError(f"cycle_length must be in [1, iterations = {n}], got {k}")
    key = _gram_key(strategy, n, k)
    if key is not None and key in _GRAMS:
        return _GRAMS[key].copy()
    c = _strategy_matrix(strategy, n)
    epochs = -(-n // k)
    padded = np.zeros((n, epochs * k))
    padded[:, :n] = c
    modes = padded.reshape(n, epochs, k).sum(axis=1)  # column s: C x_s
    gram = modes.T @ modes
    if key is not None:
        if len(_GRAMS) >= _CACHE_SIZE:
            _GRAMS.pop(next(iter(_GRAMS)))
        _GRAMS[key] = gram.copy()
    return gram


#: Gram matrices (and :func:`balls_in_bins_candidates`) of first-column strategies by
#: ``(column bytes, n, k)``: a default bound asks for the same ``n x n`` product dozens of
#: times (every class count, split and stand-in check); at most :data:`_CACHE_SIZE` kept
_GRAMS: dict = {}
_CANDIDATES: dict = {}
_CACHE_SIZE = 64


def _gram_key(strategy: object, n: int, k: int) -> tuple | None:
    """Cache key of a valid-looking first column (None for a matrix or anything that
    does not convert: those are built, and checked, every time)."""
    try:
        c = np.asarray(strategy, dtype=float)
    except (TypeError, ValueError, OverflowError):
        return None
    if c.ndim != 1:
        return None
    return (c.tobytes(), c.size, n, k)


def _perron_upper(block: np.ndarray, terms: int) -> float:
    """A rigorous upper bound on the largest eigenvalue of a non-negative symmetric block.

    Collatz-Wielandt: for ``A >= 0`` and ``v > 0``, ``rho(A) <= max_i (A v)_i / v_i``
    (Horn & Johnson, Matrix Analysis, 2nd ed., Corollary 8.1.29), with ``v`` from a
    power iteration (any positive ``v`` is valid; a good one is tight).  The ratio is
    inflated by the round-off of the products (non-negative sums of ``<= terms``
    products: relative error ``<= terms * u`` each, Higham 2002, eq. (3.5)) and of the
    Gram entries themselves (``terms`` covers both).
    """
    if block.shape[0] == 1:
        return float(block[0, 0]) * (1.0 + 4.0 * terms * _U)
    v = np.ones(block.shape[0])
    for _ in range(200):
        w = block @ v
        top = float(w.max())
        if top == 0.0:
            return 0.0
        w = w / top + 1e-12  # stays positive
        if np.allclose(w, v, rtol=1e-12, atol=0.0):
            v = w
            break
        v = w
    ratio = float(np.max((block @ v) / v))
    return ratio * (1.0 + 4.0 * (terms + block.shape[0]) * _U)


def _lambda_max_upper(a: np.ndarray) -> float:
    """A rigorous upper bound on the largest eigenvalue of a symmetric matrix ``a``.

    With ``a ~ V diag(w) V^T`` from ``numpy.linalg.eigh``: ``V diag(w) V^T <=
    max(w, 0) V V^T`` and ``||V V^T||_2 <= 1 + ||V^T V - I||_F``, so by Weyl's inequality
    (Horn & Johnson, Matrix Analysis, 2nd ed., Theorem 4.3.1)
    ``lambda_max(a) <= max(w, 0) (1 + ||V^T V - I||_F) + ||a - V diag(w) V^T||_F``.  Both
    norms are evaluated in floating point and enlarged by the round-off of the products
    (``|fl(XY) - XY| <= gamma_k |X||Y|`` entrywise, Higham 2002, eq. (3.13)).
    """
    k = a.shape[0]
    w, v = np.linalg.eigh(a)
    gam = (k + 4) * _U / (1.0 - (k + 4) * _U)
    recon = (v * w) @ v.T
    resid = float(np.linalg.norm(recon - a)) * (1.0 + 4.0 * _U)
    resid += gam * float(np.linalg.norm((np.abs(v) * np.abs(w)) @ np.abs(v).T))
    orth = float(np.linalg.norm(v.T @ v - np.eye(k))) * (1.0 + 4.0 * _U)
    orth += gam * float(np.linalg.norm(np.abs(v).T @ np.abs(v)))
    top = max(float(w[-1]), 0.0)
    return (top * (1.0 + orth) + resid) * (1.0 + 4.0 * k * _U)


#: fractions of ``(lambda_1 - lambda_2) / size`` tried as the shared component ``beta``
BETA_FRACTIONS = (0.0, 0.5, 1.0, 1.5)


def _class_pairs(gram: np.ndarray, classes: int, terms: int) -> tuple:
    """For ``classes`` residue classes of the bins: per class size, the ``(beta, alpha)``
    splits ``G_r <= alpha I + beta J`` valid for every class of that size (Lemma 2 of
    docs/theory/dpmf_balls_in_bins.md with a shared component): ``beta = 0`` with
    ``alpha`` the Collatz-Wielandt bound, and ``beta > 0`` on a grid below the gap of
    the two top eigenvalues with ``alpha >= lambda_max(G_r - beta J)``."""
    k = gram.shape[0]
    by_size: dict[int, list[np.ndarray]] = {}
    for r in range(classes):
        idx = np.arange(r, k, classes)
        by_size.setdefault(idx.size, []).append(gram[np.ix_(idx, idx)])
    out = []
    for size, blocks in sorted(by_size.items()):
        splits = [(0.0, max(_perron_upper(b, terms) for b in blocks))]
        if size > 1:
            gap = min(float(np.diff(np.linalg.eigvalsh(b)[-2:])[0]) for b in blocks)
            for frac in BETA_FRACTIONS[1:]:
                beta = frac * gap / size
                if beta > 0.0:
                    alpha = max(_lambda_max_upper(b - beta) for b in blocks)
                    splits.append((beta, alpha))
        out.append((size, tuple(splits)))
    return tuple(out)


def _option(sigma: float, size: int, beta: float, alpha: float) -> Mechanism | None:
    """The dominating mechanism of one split: random allocation of one of ``size`` steps
    of noise multiplier ``sigma / sqrt(alpha)``, composed with a Gaussian of noise
    multiplier ``sigma / sqrt(beta)`` for the shared component (None when that PLD
    route is out of the random-allocation law's range, ``sigma / sqrt(alpha) < 0.55``)."""
    step = GaussianMechanism(sigma / math.sqrt(alpha))
    if beta == 0.0:
        return step if size == 1 else random_allocation(step, size)
    if sigma / math.sqrt(alpha) < 0.55:
        return None
    return compose([AllocationEpochPair(sigma / math.sqrt(alpha), size, progress=False),
                    GaussianMechanism(sigma / math.sqrt(beta))])


@dataclass(frozen=True, repr=False)
class BandMFBallsInBins(Mechanism):
    """The certified upper bound of :func:`bandmf_balls_in_bins` (build it there).

    ``candidates`` holds, per residue-class count ``g`` tried, per class size, the
    splits ``(beta, alpha)`` with ``G_r <= alpha I + beta J`` for every class of that
    size; each split's dominating pair is a random allocation of one of ``size``
    Gaussian steps of noise multiplier ``noise_multiplier / sqrt(alpha)`` composed with
    a Gaussian of noise multiplier ``noise_multiplier / sqrt(beta)``.  Every query
    answers the least over ``g`` of the largest over the sizes of the least over the
    splits (docs/theory/dpmf_balls_in_bins.md, Theorem 1).  ``rdp``, ``epsilon`` and
    ``delta`` are upper bounds; ``epsilon_bounds`` has lower end 0 (no lower bound of
    the balls-in-bins pair is certified here).

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation per unit of clipping norm, > 0.
    candidates : tuple
        ``((g, ((size, ((beta, alpha), ...)), ...)), ...)`` from
        :func:`balls_in_bins_candidates`.

    Examples
    --------
    >>> from dpacct.mechanisms.algorithms.bandmf_balls_in_bins import bandmf_balls_in_bins
    >>> m = bandmf_balls_in_bins(2.0, 8, cycle_length=4, strategy=[1.0, 0.5], two_band=False)
    >>> g, per_size = m.candidates[0]
    >>> g, per_size[0][0], round(per_size[0][1][0][1], 6)   # 4 bins, alpha = rho(G)
    (1, 4, 4.237942)
    """

    noise_multiplier: float
    candidates: tuple

    declares = Capabilities(rdp=True)

    def _options(self) -> list[list[list[Mechanism]]]:
        """Per candidate ``g``, per size, the dominating mechanisms of the splits (every
        split whose route exists; used by ``rdp`` and ``delta``)."""
        cache = self._cache()
        if "options" not in cache:
            sigma = self.noise_multiplier
            cache["options"] = [
                [
                    [m for b, a in splits if (m := _option(sigma, size, b, a)) is not None]
                    for size, splits in per_size
                ]
                for _g, per_size in self.candidates
            ]
        return cache["options"]

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        # the beta = 0 splits only (each a random allocation with an RDP curve): the
        # least over fewer upper bounds is still an upper bound
        per_g = [
            np.max([np.asarray(opts[0].rdp(alpha)) for opts in sizes], axis=0)
            for sizes in self._options()
        ]
        return np.min(per_g, axis=0)

    def _split_lower(self, delta: float, size: int, alpha: float) -> float:
        """A lower bound on every split's certified epsilon with this ``size`` and
        ``alpha``: the certified lower bound of random allocation of one of ``size``
        Gaussian steps of noise multiplier ``sigma / sqrt(alpha)``
        (:func:`~dpacct.accountant.transformers.random_allocation_lower.random_allocation_lower_epsilon`;
        the exact Gaussian for ``size = 1``).  A split's pair composes that random
        allocation with a Gaussian (or nothing), and composing only raises the true
        curve, which the certified bound is above."""
        key = ("lower", delta, size, alpha)
        cache = self._cache()
        if key not in cache:
            s = self.noise_multiplier / math.sqrt(alpha)
            try:
                if size == 1:
                    low = float(GaussianMechanism(s).epsilon_bounds(delta)[0])
                else:
                    low = float(random_allocation_lower_epsilon(s, size, delta))
            except (ValueError, OverflowError, ZeroDivisionError, FloatingPointError):
                low = 0.0  # out of the lower bound's range: 0 is one (prunes nothing)
            cache[key] = low if math.isfinite(low) or low == math.inf else 0.0
        return cache[key]

    def floor(self, delta: float) -> float:
        """The same least-largest-least with each split's certified *lower* bound
        (:meth:`_split_lower`): at most :meth:`epsilon` (each term is), microseconds to
        compute; the calibration steers its search with it.  Not a lower bound on the
        pair itself (the splits dominate it).

        Parameters
        ----------
        delta : float
            Target delta, in (0, 1).

        Returns
        -------
        float
            At most :meth:`epsilon` at ``delta``.

        Examples
        --------
        >>> run = BandMFBallsInBins(2.0, balls_in_bins_candidates(8, 4, [1.0, 0.5]))
        >>> bool(0 < run.floor(1e-5) <= run.epsilon(1e-5))
        True
        """
        d = check_delta(float(delta))
        return min(
            max(min(self._split_lower(d, size, a) for _, a in splits) for size, splits in per_size)
            for _, per_size in self.candidates
        )

    def _split_epsilon(self, delta: float, tol: float | None, size: int, beta: float,
                       alpha: float) -> float:
        key = ("split", delta, tol, size, beta, alpha)
        cache = self._cache()
        if key not in cache:
            m = _option(self.noise_multiplier, size, beta, alpha)
            cache[key] = math.inf if m is None else float(m.epsilon(delta, tol=tol))
        return cache[key]

    def _epsilon_one(self, delta: float, tol: float | None) -> float:
        """The least over ``g`` of the largest over the sizes of the least over the
        splits, pruned without changing it: candidates are visited by increasing
        certified *lower* bound (of their splits' random allocations, cheap), and a
        candidate, size or split whose lower bound is already at or above the running
        least is not evaluated (its certified epsilon, at or above the lower bound,
        cannot lower the least)."""
        key = ("eps", delta, tol)
        cache = self._cache()
        if key not in cache:
            plans = []
            for _g, per_size in self.candidates:
                sizes = []
                for size, splits in per_size:
                    ranked = sorted((self._split_lower(delta, size, a), b, a) for b, a in splits)
                    sizes.append((ranked[0][0], size, ranked))
                sizes.sort(key=lambda x: -x[0])
                plans.append((max(lo for lo, _, _ in sizes), sizes))
            plans.sort(key=lambda p: p[0])
            best = math.inf
            for lower, sizes in plans:
                if lower >= best:
                    break
                worst = 0.0
                for _, size, ranked in sizes:
                    least = math.inf
                    for lo, b, a in ranked:
                        if lo >= min(least, best):
                            break
                        least = min(least, self._split_epsilon(delta, tol, size, b, a))
                    worst = max(worst, least)
                    if worst >= best:
                        break
                best = min(best, worst)
            cache[key] = best
        return cache[key]

    def _epsilon_upper(self, delta: float, tol: float | None) -> float:
        """Theorem 1 at one delta > 0 (the theory page): the least over the class counts
        of the largest over the sizes of the least over the splits.  :meth:`epsilon`
        (the base class's) checks ``delta`` and ``tol`` and shapes the answer."""
        return self._epsilon_one(delta, tol)

    def _epsilon_bounds(self, delta: float, tol: float | None) -> tuple[float, float]:
        return 0.0, self._epsilon_one(delta, tol)

    def delta(self, epsilon, *, tol: float | None = None):
        """Sound upper bound on delta at ``epsilon`` (Theorem 1 of the theory page).

        Parameters
        ----------
        epsilon : float or array_like
            Epsilon(s), >= 0.
        tol : float, optional
            Relative accuracy of the PLD routes, as in :meth:`Mechanism.epsilon`.

        Returns
        -------
        float or numpy.ndarray
            The least over the class counts of the largest over the sizes of the least
            over the splits, at each epsilon.
        """
        e = np.asarray(epsilon, dtype=float)
        flat = np.array([check_epsilon(float(x)) for x in e.reshape(-1)])
        out = self._delta_pruned(flat, tol)
        return float(out[0]) if e.ndim == 0 else out.reshape(e.shape)

    def _split_delta_lower(self, eps: np.ndarray, size: int, alpha: float) -> np.ndarray:
        """A certified lower bound on every split's delta at ``eps`` with this ``size``
        and ``alpha``: the binned largest-coordinate attack on the random allocation of
        one of ``size`` steps of noise multiplier ``sigma / sqrt(alpha)`` (its atoms'
        masses rounded for a lower bound,
        :func:`~dpacct.accountant.transformers.random_allocation_lower._max_test_laws`),
        the exact Gaussian for ``size = 1``, each sum rounded down.  Composing with the
        shared Gaussian only raises the curve, and the certified delta is above it."""
        from scipy import special

        s = self.noise_multiplier / math.sqrt(alpha)
        try:
            if size == 1:
                mu = 1.0 / s
                t1 = special.ndtr(mu / 2 - eps / mu)
                t2 = np.exp(eps) * special.ndtr(-mu / 2 - eps / mu)
                # the difference's cancellation: each term is within 1e-12 relative
                return np.maximum(t1 - t2 - 1e-12 * (t1 + t2) - 1e-300, 0.0)
            key = ("lowlaws", size, alpha)
            cache = self._cache()
            if key not in cache:
                from dpacct.accountant.transformers.random_allocation_lower import (
                    _max_test_laws,
                )
                cache[key] = _max_test_laws(s, size)
            out = np.zeros(eps.shape)
            for law in cache[key]:
                loss, p = np.asarray(law.losses), np.asarray(law.p)
                d = np.array([float(np.sum(p * -np.expm1(np.minimum(x - loss, 0.0))))
                              for x in eps])
                out = np.maximum(out, d * (1 - 1e-9))
            return out
        except (ValueError, OverflowError, ZeroDivisionError, FloatingPointError):
            return np.zeros(eps.shape)  # 0 is a lower bound: prunes nothing

    def _delta_pruned(self, flat: np.ndarray, tol: float | None) -> np.ndarray:
        """Theorem 1's delta, pruned as :meth:`_epsilon_one` prunes: class counts by
        their splits' certified delta lower bounds (:meth:`_split_delta_lower`), and a
        count, size or split whose lower bound is at or above the running least at
        every epsilon is not built (its delta is above it, so the least is unchanged)."""
        sigma = self.noise_multiplier
        plans = []
        for _g, per_size in self.candidates:
            sizes = []
            for size, splits in per_size:
                ranked = sorted(((self._split_delta_lower(flat, size, a), b, a)
                                 for b, a in splits), key=lambda x: float(x[0].max()))
                low = np.min([r[0] for r in ranked], axis=0)
                sizes.append((low, size, ranked))
            sizes.sort(key=lambda x: -float(x[0].max()))
            plans.append((np.max([x[0] for x in sizes], axis=0), sizes))
        plans.sort(key=lambda p: float(p[0].max()))
        best = np.full(flat.shape, np.inf)
        for lower, sizes in plans:
            if np.all(lower >= best):
                continue
            worst = np.zeros(flat.shape)
            for _, size, ranked in sizes:
                least = np.full(flat.shape, np.inf)
                for lo, b, a in ranked:
                    if np.all(lo >= np.minimum(least, best)):
                        continue
                    m = _option(sigma, size, b, a)
                    if m is None:
                        continue
                    least = np.minimum(least, np.asarray(m.delta(flat, tol=tol), dtype=float))
                worst = np.maximum(worst, least)
                if np.all(worst >= best):
                    break
            best = np.minimum(best, worst)
        return np.minimum(best, 1.0)

    def __repr__(self) -> str:
        return (
            f"BandMFBallsInBins(noise_multiplier={self.noise_multiplier!r}, "
            f"candidates={self.candidates!r})"
        )


def balls_in_bins_candidates(
    iterations: int, cycle_length: int, strategy: object, max_classes: int = MAX_CLASSES
) -> tuple:
    """The :attr:`BandMFBallsInBins.candidates` of a run (they do not depend on the noise).

    Parameters and checks as in :func:`bandmf_balls_in_bins`; a calibration builds
    them once and varies only the noise multiplier.

    Examples
    --------
    >>> [g for g, _ in balls_in_bins_candidates(8, 4, [1.0, 0.5], max_classes=2)]
    [1, 2, 4]
    """
    g_max = check_count(max_classes, "max_classes")
    n = check_count(iterations, "iterations")
    gram = balls_in_bins_gram(strategy, n, cycle_length)  # checks every input by name
    k = gram.shape[0]
    key = _gram_key(strategy, n, k)
    if key is not None and (key, g_max) in _CANDIDATES:
        return _CANDIDATES[key, g_max]
    terms = n + k
    counts = sorted({*range(1, min(g_max, k) + 1), k})
    out = tuple((g, _class_pairs(gram, g, terms)) for g in counts)
    if key is not None:
        if len(_CANDIDATES) >= _CACHE_SIZE:
            _CANDIDATES.pop(next(iter(_CANDIDATES)))
        _CANDIDATES[key, g_max] = out
    return out


def bandmf_balls_in_bins_delta_mc(
    noise_multiplier: float,
    iterations: int,
    epsilon: float,
    *,
    cycle_length: int,
    strategy: object,
    samples: int = 200_000,
    rng: np.random.Generator,
    confidence: float = 0.99,
    direction: str = "remove",
) -> tuple[float, float, float]:
    """Monte Carlo *estimate* of one direction's delta(epsilon) of the pair; no guarantee.

    The pair of :func:`bandmf_balls_in_bins` (module docstring) in the coordinates
    ``v_s = <m_s, y> / sigma^2``: under ``P`` (record absent) ``v ~ N(0, G / sigma^2)``,
    under ``Q`` with bin ``s`` also shifted by ``G[:, s] / sigma^2``; the privacy loss
    is ``L = log((1/k) sum_s exp(v_s - G[s, s] / (2 sigma^2)))`` (the log-likelihood
    ratio of the mixture, Lemma 1 of docs/theory/dpmf_balls_in_bins.md).
    ``direction="remove"`` averages ``(1 - e^{epsilon - L})_+`` under ``Q``, ``"add"``
    averages ``(1 - e^{epsilon + L})_+`` under ``P``: JAX Privacy's
    ``get_privacy_loss_sample`` with ``positive_sample`` True and False, sampled in
    ``k`` dimensions instead of ``n``.  Returns ``(estimate, low, high)``, the normal
    interval at ``confidence``.

    Parameters
    ----------
    noise_multiplier, iterations, cycle_length, strategy
        As in :func:`bandmf_balls_in_bins`.
    epsilon : float
        The epsilon at which delta is estimated.
    samples : int
        Monte Carlo samples, >= 2.
    rng : numpy.random.Generator
        The source of randomness (required).
    confidence : float
        Coverage of the normal interval, in (0, 1).
    direction : {"remove", "add"}
        The direction sampled.

    Examples
    --------
    >>> est, lo, hi = bandmf_balls_in_bins_delta_mc(
    ...     2.0, 8, 1.0, cycle_length=4, strategy=[1.0, 0.5], samples=20_000,
    ...     rng=np.random.default_rng(0))
    >>> bool(0 <= lo <= est <= hi)
    True
    """
    from scipy import special

    sigma = check_positive("noise_multiplier", noise_multiplier)
    eps = check_epsilon(epsilon)
    n_samples = check_count(samples, "samples")
    if n_samples < 2:
        raise ValueError(f"samples must be an integer >= 2, got {n_samples}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {rng!r}")
    if direction not in ("remove", "add"):
        raise ValueError(f"direction must be 'remove' or 'add', got {direction!r}")
    confidence = check_probability("confidence", confidence)
    gram = balls_in_bins_gram(strategy, iterations, cycle_length)
    k = gram.shape[0]
    vals_eig, vecs = np.linalg.eigh(gram)
    root = vecs * np.sqrt(np.clip(vals_eig, 0.0, None))  # root @ root.T = G
    half = np.diag(gram) / (2.0 * sigma * sigma)
    out = np.empty(n_samples)
    chunk = max(1, 2_000_000 // k)
    for start in range(0, n_samples, chunk):
        m = min(chunk, n_samples - start)
        v = rng.standard_normal((m, k)) @ root.T / sigma
        if direction == "remove":
            v += gram[:, rng.integers(k, size=m)].T / (sigma * sigma)
        loss = special.logsumexp(v - half, axis=1) - math.log(k)
        out[start : start + m] = loss if direction == "remove" else -loss
    vals = -np.expm1(np.minimum(eps - out, 0.0))
    est = float(vals.mean())
    se = float(vals.std(ddof=1)) / math.sqrt(n_samples)
    z = float(special.ndtri(0.5 + 0.5 * confidence))
    return est, max(est - z * se, 0.0), est + z * se
