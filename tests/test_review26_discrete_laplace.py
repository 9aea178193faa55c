"""Review 26 (CI time): the exact discrete-Laplace sampler's law, whatever draws it.

ws26-ci replaces the per-draw pure-Python sampler of ``sample_discrete_laplace`` (Canonne,
Kamath, Steinke 2020, Algorithm 2) by one on numpy arrays.  The random stream changes, so
no stored draw can check it; the law must not.  The independent side is the exact law
``P(X = x) = (1 - a) / (1 + a) a^|x|``, ``a = e^{-1/scale}``, whose CDF has the closed
form ``F(k) = a^-k / (1 + a)`` for ``k < 0`` and ``1 - a^(k+1) / (1 + a)`` for ``k >= 0``:
draws are counted in bins at the law's own 1/20-quantiles (fixed, not read from the
draws) and a chi-square test of the counts must not reject at 1e-4.  Scales: an integer
above 1 (``s = 1``; the ``exp(-U/t)`` coin matters only for ``t > 1``), a rational with
``s > 1`` (``Y = floor(X / s)``), a float whose exact ratio has a 53-bit numerator and
denominator (``0.3``), and a large one.  Shown to fail on ws26-ci 4385b0e's array sampler
with the ``-0`` rejection dropped, ``V`` stepping by 2, ``Y = X`` (``s`` ignored), and the
coin ``exp(-U/(t+1))`` (this one at scale 2 only).  The second test: neighbouring draws
are independent (a batch sampler that sorts a batch, pairs one trial's sign with
another's magnitude, or refills rejected slots from a shifted batch keeps the marginal
law, not this; each batch sorted fails it).  The third: a tiny scale, whose exact ratio's
denominator is beyond 2^63 (1e-4 = t / 2^66), draws zeros as main does (4385b0e raised
OverflowError there).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpacct.mechanisms.primitives.discrete import sample_discrete_laplace

LEVEL = 1e-4


def _cdf(scale: float, k: np.ndarray) -> np.ndarray:
    t = float(scale)
    log1a = math.log1p(math.exp(-1.0 / t))
    k = np.asarray(k, dtype=float)
    return np.where(k >= 0, -np.expm1(-(k + 1) / t - log1a), np.exp(k / t - log1a))


def _quantile_edges(scale: float, bins: int) -> np.ndarray:
    """Integer edges ``e_j`` (bin ``j`` is ``(e_{j-1}, e_j]``) at the law's quantiles."""
    t = float(scale)
    log1a = math.log1p(math.exp(-1.0 / t))
    edges = []
    for p in np.arange(1, bins) / bins:
        if p < math.exp(-log1a):  # F(k) = exp(k/t - log1a) for k < 0
            k = math.floor(t * (math.log(p) + log1a))
        else:  # 1 - F(k) = exp(-(k+1)/t - log1a)
            k = math.floor(-t * (math.log1p(-p) + log1a) - 1)
        edges.append(k)
    return np.unique(np.array(edges, dtype=np.int64))


@pytest.mark.parametrize("scale", [2.0, Fraction(7, 3), 0.3, 1000.0])
def test_discrete_laplace_draws_follow_the_exact_law(scale):
    n = 12_000
    x = sample_discrete_laplace(scale, n, np.random.Generator(np.random.PCG64(2626)))
    assert x.shape == (n,) and x.dtype == np.int64
    edges = _quantile_edges(scale, 20)
    cdf = np.concatenate([[0.0], _cdf(scale, edges), [1.0]])
    expected = np.diff(cdf) * n
    observed = np.bincount(np.searchsorted(edges, x, side="left"), minlength=edges.size + 1)
    keep = expected > 0
    assert observed[~keep].sum() == 0
    p = stats.chisquare(observed[keep], expected[keep] * observed.sum() / expected[keep].sum())
    assert p.pvalue > LEVEL, (scale, observed, expected)


def test_discrete_laplace_neighbouring_draws_are_independent():
    # signs of consecutive draws: a 3 x 3 table (negative, zero, positive) of pairs
    x = sample_discrete_laplace(1.5, (60, 200), np.random.Generator(np.random.PCG64(26)))
    s = np.sign(x).ravel() + 1
    pairs = np.zeros((3, 3))
    np.add.at(pairs, (s[:-1:2], s[1::2]), 1)
    assert stats.chi2_contingency(pairs).pvalue > LEVEL
    assert x.shape == (60, 200)


@pytest.mark.parametrize("scale", [1e-4, Fraction(1, 2**64)])
def test_discrete_laplace_tiny_scale_draws_zeros(scale):
    # P(X != 0) = 2 a / (1 + a), a = e^{-1/scale} = e^{-10 000} or less: no draw is not 0
    # 300 draws: ws26-ci e58f934 draws on arrays from 128 draws on, one by one below
    x = sample_discrete_laplace(scale, 300, np.random.Generator(np.random.PCG64(7)))
    assert x.shape == (300,) and not x.any()
