"""Private quantiles: a noisy histogram, a b-ary tree of counts, the exponential mechanism.

Three algorithms release quantiles of one-dimensional data lying in a declared range
``[lower, upper]``.  Values outside it raise by default (nothing is clipped silently);
``out_of_range="clip"`` clips them to the range instead.  Clipping to a *public* range
is a per-record transformation applied before the counts are taken, so a neighbouring
dataset is still a neighbouring dataset after it and every sensitivity (and hence the
privacy claim) is unchanged.  Each is an
:class:`~dpacct.mechanisms.algorithms.algorithm.Algorithm`, so its privacy is the composition of the
primitives it runs and it can be composed, subsampled and calibrated like any other
mechanism.  The neighbouring relation is add/remove one record.

* :class:`HistogramQuantiles` -- one Laplace or Gaussian histogram release over ``bins``
  equal-width bins (one record changes one count by one: L1 = L2 sensitivity 1), counts
  read out through an isotonic (pool-adjacent-violators) fit of their noisy
  cumulative sums, quantiles read off that monotone cumulative distribution with
  linear interpolation inside a bin.
* :class:`TreeQuantiles` -- the hierarchical method of Hay, Rastogi, Miklau, Suciu 2010
  ("Boosting the accuracy of differentially private histograms through consistency"):
  noisy counts of a ``b``-ary tree over the same bins, one histogram release per level
  (only the nodes covering real bins; the padding up to ``b^h`` leaves is known empty),
  made consistent by weighted least squares with the padding fixed at zero
  (:func:`~dpacct.mechanisms.algorithms.quantile_tree_fit.tree_least_squares`, their two-pass
  estimator of Theorem 3 when ``bins`` is a power of ``b``), from which range counts
  are read; quantiles come from the isotonic fit of the consistent cumulative counts.
  The branching factor defaults to :func:`choose_branching` (after Qardaji, Yang, Li
  2013); the levels share the budget equally or, with ``level_budget="prefix"``, as
  prefix counts need (:func:`~dpacct.mechanisms.algorithms.quantile_tree_fit.level_shares`).
* :class:`ExponentialQuantile` -- the exponential mechanism over the intervals between
  sorted data points (Smith 2011, "Privacy-preserving statistical estimation with
  optimal convergence rates", Section 3), or over a grid, sampled in log space with the
  Gumbel-max trick; accounted by the bounded-range analysis of
  :class:`~dpacct.mechanisms.primitives.exponential.ExponentialMechanism`.

Read-out (both binned methods).  The noisy counts ``c~_j`` are not read bin by bin:
clipping each at zero puts phantom mass into every empty bin (``E max(Lap(b), 0) =
b / 2`` per bin, so ``bins * b / 2`` in total), which drags the quantiles towards the
empty part of the range as the number of bins grows.  Instead the noisy cumulative
sums ``C~_j = sum_{i <= j} c~_i`` are replaced by their least-squares non-decreasing
fit (isotonic regression by pool-adjacent-violators; Barlow et al. 1972, the
monotone post-processing of a noisy CDF that Hay et al. 2010, Section 5, also use
for sorted queries), floored at zero; its increments are the non-negative counts the
quantiles are read from (:func:`isotonic_counts`).  This is post-processing of the
released counts and costs no privacy.  The error of a quantile then grows only with
the noise of a cumulative sum near the quantile, not with the number of empty bins.

Quantile convention (both binned methods).  Given non-negative bin counts ``c_j`` with
cumulative sums ``C_j`` and total ``T``, the ``q``-quantile is the point where the
piecewise-linear CDF (mass spread uniformly inside each bin) reaches ``q T``: with ``j``
the first bin whose cumulative count reaches ``q T`` (for ``q = 0``: the first non-empty
bin), it is ``lower + (j + (q T - C_{j-1}) / c_j) * width``.  If every count is zero
(possible after noise), the answer is the quantile of the uniform distribution on the
range, ``lower + q (upper - lower)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpacct.accountant.serialization import register_mechanism
from dpacct.accountant.validation import check_count, check_positive

from .algorithm import Algorithm, PlannedRelease
from .quantile_exponential import ExponentialQuantile, smith_pieces, smith_quantile
from .quantile_readout import (
    _check_noise,
    _unit_mechanism,
    bin_counts,
    check_out_of_range,
    check_quantile,
    check_range,
    isotonic_counts,
    quantiles_from_counts,
)

# re-exported (mechanisms.theil_sen imports these two from here)
from .quantile_readout import check_data as check_data
from .quantile_readout import check_rng as check_rng
from .quantile_tree import TreeQuantiles, TreeRelease, choose_branching, hay_consistency

__all__ = [
    "ExponentialQuantile",
    "HistogramQuantiles",
    "HistogramRelease",
    "TreeQuantiles",
    "TreeRelease",
    "bin_counts",
    "choose_branching",
    "hay_consistency",
    "isotonic_counts",
    "quantiles_from_counts",
    "smith_pieces",
    "smith_quantile",
]


# ---------------------------------------------------------------------------------
# histogram
# ---------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class HistogramRelease:
    """The output of :class:`HistogramQuantiles`: noisy and post-processed bin counts.

    Each parameter is an attribute of the same name.

    Parameters
    ----------
    lower, upper : float
        The declared range.
    noisy_counts : numpy.ndarray
        The raw noisy counts (the released statistic).
    counts : numpy.ndarray
        ``isotonic_counts(noisy_counts)``, the non-negative post-processing the
        quantiles use (module docstring, "Read-out").

    Examples
    --------
    >>> rel = HistogramRelease(0.0, 2.0, np.array([1.5, -0.5]), np.array([1.0, 0.0]))
    >>> rel.quantiles(0.5).round(3).tolist()
    0.5
    """

    lower: float
    upper: float
    noisy_counts: np.ndarray
    counts: np.ndarray

    @property
    def edges(self) -> np.ndarray:
        """The ``bins + 1`` bin edges."""
        return np.linspace(self.lower, self.upper, self.counts.size + 1)

    def quantiles(self, q: object) -> np.ndarray:
        """Quantiles read off the non-negative counts (:func:`quantiles_from_counts`).

        Parameters
        ----------
        q : float or array_like
            Quantile level(s), in [0, 1].

        Examples
        --------
        >>> rel = HistogramRelease(0.0, 1.0, np.array([2.0, 2.0]), np.array([2.0, 2.0]))
        >>> rel.quantiles([0.25, 0.5]).tolist()
        [0.25, 0.5]
        """
        return quantiles_from_counts(self.counts, q, self.lower, self.upper)


@register_mechanism("histogram_quantiles")
@dataclass(frozen=True, repr=False)
class HistogramQuantiles(Algorithm):
    """Quantiles from one noisy histogram over equal-width bins.

    Counts of the data in ``bins`` equal-width bins on ``[lower, upper]`` receive
    independent Laplace (scale ``scale``) or Gaussian (standard deviation ``scale``)
    noise.  Under add/remove one record changes exactly one count by one, so the L1 and
    L2 sensitivities are 1 and the privacy is that of a single
    ``LaplaceMechanism(b=scale)`` or ``GaussianMechanism(sigma=scale)``.  The noisy
    cumulative counts are post-processed by isotonic regression
    (:func:`isotonic_counts`) and quantiles are read off that monotone CDF with linear
    interpolation inside a bin (module docstring).  Post-processing costs nothing, and
    the error does not grow with the number of empty bins (clipping each count at zero
    does: at epsilon = 1 on 1 000 draws it multiplies the median quartile error by
    about 10 at 1 000 bins; ``python -m benchmarks.algos.quantiles``).

    Parameters
    ----------
    lower, upper : float
        Declared data range, finite, ``lower < upper``; data outside raise.
    bins : int
        Number of equal-width bins, >= 1.
    scale : float
        Noise scale per unit of sensitivity (Laplace ``b`` or Gaussian ``sigma``), > 0.
    noise : {'laplace', 'gaussian', 'discrete_laplace'}
        The noise distribution (default Laplace).  ``"discrete_laplace"`` adds integer
        noise ``P(k) ∝ exp(-|k| / scale)`` to the integer counts (what OpenDP's
        ``then_laplace`` does to integer counts): the same pure ``1/scale``-DP, variance
        ``2 e^{-1/scale} / (1 - e^{-1/scale})^2`` instead of ``2 scale^2`` (8 % less at
        ``scale = 1``).
    out_of_range : {'raise', 'clip'}
        Data outside ``[lower, upper]``: raise ``ValueError`` (default) or clip to the
        range (a per-record map to a public range: the sensitivity stays 1).

    Examples
    --------
    >>> alg = HistogramQuantiles(lower=0.0, upper=1.0, bins=16, scale=1.0)
    >>> alg.epsilon(1e-9) <= 1.0          # Laplace(b=1) on a sensitivity-1 histogram
    True
    >>> x = np.random.default_rng(0).uniform(0.2, 0.8, size=2000)
    >>> med = alg.quantiles(x, 0.5, rng=np.random.default_rng(1))
    >>> bool(abs(med - np.median(x)) < 0.02)
    True
    """

    lower: float
    upper: float
    bins: int
    scale: float
    noise: str = "laplace"
    out_of_range: str = "raise"

    def __post_init__(self) -> None:
        lo, hi = check_range(self.lower, self.upper)
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        object.__setattr__(self, "bins", check_count(self.bins, "bins"))
        object.__setattr__(self, "scale", check_positive("scale", self.scale))
        object.__setattr__(self, "noise", _check_noise(self.noise))
        object.__setattr__(self, "out_of_range", check_out_of_range(self.out_of_range))

    def planned_releases(self) -> tuple[PlannedRelease, ...]:
        """One Laplace / Gaussian release of a sensitivity-1 histogram."""
        return (PlannedRelease("histogram", _unit_mechanism(self.noise, self.scale), 1),)

    def release(self, data: object, *, rng: np.random.Generator) -> HistogramRelease:
        """Run the mechanism: noisy counts and their non-negative post-processing.

        Parameters
        ----------
        data : array_like
            One-dimensional finite values in ``[lower, upper]`` (``out_of_range``
            decides what happens to others).
        rng : numpy.random.Generator
            The source of the noise.

        Examples
        --------
        >>> alg = HistogramQuantiles(lower=0.0, upper=1.0, bins=4, scale=0.5)
        >>> rel = alg.release([0.1, 0.2, 0.9], rng=np.random.default_rng(0))
        >>> bool((rel.counts >= 0).all()), rel.noisy_counts.shape
        (True, (4,))
        """
        true = bin_counts(data, self.lower, self.upper, self.bins,
                          out_of_range=self.out_of_range)
        if self.noise != "discrete_laplace":
            true = true.astype(float)
        session = self.releases(rng)
        noisy = session.release("histogram", true)
        session.finish()
        return HistogramRelease(self.lower, self.upper, noisy, isotonic_counts(noisy))

    def quantiles(self, data: object, q: object, *, rng: np.random.Generator) -> np.ndarray:
        """Release the histogram and read the quantiles ``q`` off it (one release).

        Parameters
        ----------
        data : array_like
            One-dimensional finite values in ``[lower, upper]`` (``out_of_range``
            decides what happens to others).
        q : float or array_like
            Quantile level(s), in [0, 1].
        rng : numpy.random.Generator
            The source of the noise.

        Examples
        --------
        >>> alg = HistogramQuantiles(lower=0.0, upper=10.0, bins=10, scale=0.1)
        >>> x = np.repeat([1.5, 5.5, 8.5], 100)
        >>> alg.quantiles(x, [0.5], rng=np.random.default_rng(0)).round(1).tolist()
        [5.5]
        """
        qs = check_quantile(q)
        return self.release(data, rng=rng).quantiles(qs)
