"""OpenDP's Theil-Sen tutorial, re-expressed with a seeded generator, and its exact laws.

Not a topic of the runner (the underscore): helpers for ``benchmarks/algos/theil_sen.py``,
``tests/test_theil_sen_stability.py`` and notebook 08.

The tutorial (OpenDP 0.16, ``opendp.extras.sklearn.linear_model``, and the plugin page
"Theil-Sen regression") pairs the records, predicts ``y`` at the cut points with every
pair's line, and releases each column's median with ``make_private_quantile`` over 100
candidates.  That median, under ``max_divergence``, is *permute-and-flip* (McKenna &
Sheldon 2020) on the score ``|#{v < c} - #{v > c}|`` with temperature ``2 * scale``:
checked against OpenDP's own samples in the tests.  Permute-and-flip is report-noisy-max
with exponential noise (Ding, Kifer, Zhang et al. 2021), which is how it is sampled
here; :func:`pf_probabilities` gives its exact law (McKenna & Sheldon 2020, the
integral form ``P(r) = p_r int_0^1 prod_{j != r} (1 - t p_j) dt``).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

#: the tutorial's settings: data, bounds, candidates
X_BOUNDS = (-3.0, 3.0)
Y_BOUNDS = (-10.0, 10.0)
CANDIDATES = 100
FRACTIONS = (0.25, 0.75)


def tutorial_data(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The tutorial's synthetic data: ``x ~ N(0, 1)``, ``y = 2 x + 1 + N(0, 0.5^2)``."""
    x = rng.normal(0.0, 1.0, n)
    return x, 2.0 * x + 1.0 + rng.normal(0.0, 0.5, n)


def cut_points(x_bounds: tuple[float, float] = X_BOUNDS) -> np.ndarray:
    """The tutorial's cut points: 25 % and 75 % of the way along the x range."""
    lo, hi = x_bounds
    return lo + (hi - lo) * np.asarray(FRACTIONS)


def pair_predictions(data: np.ndarray, cuts: np.ndarray, rng: np.random.Generator, *,
                     positional: bool = True) -> np.ndarray:
    """The tutorial's ``pairwise_predict``: rows ``(prediction at cut 1, at cut 2)``.

    ``positional=True`` is the tutorial: drop the *last* record when the count is odd,
    then shuffle and pair the first half with the second.  ``positional=False`` shuffles
    first (a uniformly random maximal matching, as dpacct's ``pair_predictions``).
    """
    data = np.asarray(data, dtype=float)
    if positional:
        data = data[: len(data) // 2 * 2]
        data = data[rng.permutation(len(data))]
    else:
        data = data[rng.permutation(len(data))][: len(data) // 2 * 2]
    p1, p2 = np.array_split(data, 2)
    dx, dy = (p2 - p1).T
    x_bar, y_bar = (p1 + p2).T / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        points = dy / dx * (cuts[None].T - x_bar) + y_bar
    return points.T[dx != 0]


def quantile_scores(values: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """OpenDP's median score of every candidate: ``|#{v < c} - #{v > c}|``."""
    v = np.sort(np.asarray(values, dtype=float))
    less = np.searchsorted(v, candidates, side="left")
    greater = v.size - np.searchsorted(v, candidates, side="right")
    return np.abs(less - greater).astype(float)


def pf_sample(scores: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    """Permute-and-flip with loss ``scores``: argmax of ``-score + Exp(temperature)``."""
    return int(np.argmax(-scores + rng.exponential(temperature, size=scores.size)))


def pf_probabilities(scores: np.ndarray, temperature: float) -> np.ndarray:
    """Exact output law of permute-and-flip with loss ``scores`` at ``temperature``."""
    s = np.asarray(scores, dtype=float)
    p = np.exp(-(s - s.min()) / temperature)
    t, w = _gauss_legendre(max(32, s.size))     # exact for the degree s.size - 1 polynomial
    logs = np.log1p(-np.outer(t, p))                      # (nodes, candidates)
    total = logs.sum(axis=1, keepdims=True)
    return p * (w @ np.exp(total - logs))


@lru_cache(maxsize=8)
def _gauss_legendre(points: int) -> tuple[np.ndarray, np.ndarray]:
    nodes, weights = np.polynomial.legendre.leggauss(points)
    return (nodes + 1.0) / 2.0, weights / 2.0


def tutorial_fit(x: np.ndarray, y: np.ndarray, scale: float, rng: np.random.Generator, *,
                 runs: int = 1, positional: bool = True,
                 x_bounds: tuple[float, float] = X_BOUNDS,
                 y_bounds: tuple[float, float] = Y_BOUNDS) -> tuple[float, float]:
    """The tutorial's pipeline with a seeded generator: ``(slope, intercept)``."""
    cuts = cut_points(x_bounds)
    data = np.column_stack([x, y])
    preds = np.vstack([pair_predictions(data, cuts, rng, positional=positional)
                       for _ in range(runs)])
    candidates = np.linspace(*y_bounds, CANDIDATES)
    medians = [candidates[pf_sample(quantile_scores(preds[:, j], candidates), 2.0 * scale,
                                    rng)] for j in range(2)]
    slope = (medians[1] - medians[0]) / (cuts[1] - cuts[0])
    return float(slope), float(medians[0] - slope * cuts[0])


# ------------------------------------------------------------------- counterexample
def line_counterexample(n: int = 20, scale: float = 1.0, *, positional: bool = False) -> dict:
    """Exact output laws of the tutorial's medians on a line, and after adding one point.

    ``D``: ``n`` (even) points on the horizontal line ``y = 0`` at distinct ``x`` in
    ``[-3, -2]``; ``D' = D + r`` with ``r = (3, 12)``; candidates ``0, 1, ..., 99`` (so
    that ``0`` is one of them).  Every pair of ``D``
    predicts ``0`` at both cuts ``(-1.5, 1.5)``; a pair of ``r`` with ``(x_a, 0)``
    predicts ``12 (c - x_a) / (3 - x_a)``, in ``(1, 12)`` at both cuts.  With a
    uniformly random maximal matching (``positional=False``, dpacct's matching) ``r``
    is unmatched with probability ``1/(n+1)`` and otherwise paired with a uniform
    ``a``.  With the tutorial's positional truncation (``positional=True``) ``r`` is
    placed first in ``D'``, the last record of ``D`` is dropped, and ``r`` is always
    paired, with a uniform one of the other ``n - 1``.  The laws of the two medians
    are mixtures over ``a`` of products of permute-and-flip laws, computed exactly.

    Returns
    -------
    dict
        ``claimed``: the epsilon OpenDP's maps claim for the pair of medians
        (``2 / scale``, stability 1); ``joint``: the largest ``|log P_D(o) - log
        P_D'(o)|`` over the 100 x 100 outputs; ``marginal``: the same for the first
        median alone (claimed ``1 / scale``); ``where``: the output attaining ``joint``.
    """
    if n % 2:
        raise ValueError("n must be even (the case where the stability is 2)")
    candidates = np.linspace(0.0, 99.0, CANDIDATES)
    cuts = np.array([-1.5, 1.5])
    xs = np.linspace(-3.0, -2.0, n)
    xr, yr = 3.0, 12.0
    temp = 2.0 * scale
    m = n // 2
    base = pf_probabilities(quantile_scores(np.zeros(m), candidates), temp)
    law_d = np.outer(base, base)
    partners = xs[:-1] if positional else xs
    weight = 1.0 / partners.size if positional else 1.0 / (n + 1)
    law_d2 = np.zeros_like(law_d) if positional else law_d / (n + 1)   # r unmatched
    for xa in partners:                             # r paired with (xa, 0)
        cols = []
        for c in cuts:
            v = yr * (c - xa) / (xr - xa)
            preds = np.concatenate([np.zeros(m - 1), [v]])
            cols.append(pf_probabilities(quantile_scores(preds, candidates), temp))
        law_d2 = law_d2 + np.outer(*cols) * weight
    ratio = np.abs(np.log(law_d) - np.log(law_d2))
    where = np.unravel_index(np.argmax(ratio), ratio.shape)
    marg = np.abs(np.log(law_d.sum(1)) - np.log(law_d2.sum(1)))
    return {"claimed": 2.0 / scale, "joint": float(ratio.max()),
            "marginal": float(marg.max()), "marginal_claimed": 1.0 / scale,
            "where": (float(candidates[where[0]]), float(candidates[where[1]])),
            "p_d": float(law_d[where]), "p_d_prime": float(law_d2[where])}
