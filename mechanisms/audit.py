"""Empirical privacy audits: sample a mechanism and test its claimed trade-off curve.

A mechanism in this library *claims* an f-DP trade-off curve ``f = mechanism.tradeoff``:
no test of "the record is absent" (``D'``) against "the record is present" (``D``) can
have type I error ``alpha`` and type II error below ``f(alpha)``, in either order of the
neighbouring pair (Dong, Roth, Su 2019, "Gaussian Differential Privacy", Definitions 2.1
and 2.3).  An audit turns this into a falsifiable statement in the spirit of Jagielski,
Ullman, Oprea 2020 ("Auditing Differentially Private Machine Learning: How Private is
Private SGD?", NeurIPS) and Nasr, Song, Thakurta, Papernot, Carlini 2021 ("Adversary
Instantiation: Lower Bounds for Differentially Private Machine Learning", IEEE S&P):
run the mechanism many times on both inputs, estimate the error rates of a family of
threshold tests with exact confidence intervals, and look for a test that does
provably better than the claim allows.

Statistics.  For a threshold ``t`` let ``alpha(t) = Pr[M(D') > t]`` and
``beta(t) = Pr[M(D) <= t]``.  Both are binomial proportions, bracketed by exact
Clopper-Pearson intervals (Clopper & Pearson 1934, "The use of confidence or fiducial
limits illustrated in the case of the binomial", Biometrika 26(4), 404-413) from the
quantiles of the beta distribution.  With ``m`` thresholds there are ``2 m``
intervals; each is computed at level ``1 - (1 - confidence) / (2 m)`` so that, by
Bonferroni's inequality, all of them cover their true value simultaneously with
probability at least ``confidence``.  Every threshold yields four tests, which share
those intervals (a Clopper-Pearson interval for ``1 - p`` is one minus the interval
for ``p``):

==========  =================  =============  ============
null        reject when        type I error   type II error
==========  =================  =============  ============
``D'``      output ``> t``     ``alpha``      ``beta``
``D``       output ``<= t``    ``beta``       ``alpha``
``D'``      output ``<= t``    ``1 - alpha``  ``1 - beta``
``D``       output ``> t``     ``1 - beta``   ``1 - alpha``
==========  =================  =============  ============

The first two audit the two neighbouring orders with the natural orientation, the last
two cover samplers whose outputs *decrease* with the presence of the record.

A test is a *violation* when its whole confidence box lies below the claimed curve.
Since ``f`` is non-increasing, the highest point of the curve over the box's alpha range
is at its *left* end but the box's corner closest to the curve is its *upper right*
one, ``(alpha_high, beta_high)``: the box lies below the curve exactly when
``beta_high < f(alpha_high)``.  If the intervals cover the true point ``(alpha, beta)``
and the claim holds, then ``beta_high >= beta >= f(alpha) >= f(alpha_high)``, so an
honest claim is flagged with probability at most ``1 - confidence`` (whatever the
number of tests), and a flagged claim is false with confidence ``confidence``.  (The
comparison ``beta_high < f(alpha_low)`` would not be sound: on a steep part of the
curve it flags boxes that straddle it.)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dpacct.accountant.extras import import_optional
from dpacct.accountant.validation import (
    as_float_array,
    check_count,
    check_delta,
    check_probability,
    check_rng,
)

if TYPE_CHECKING:  # imported where used: ``import dpacct.mechanisms`` loads this module
    from dpacct.accountant.transformers.subsample import PoissonSubsampledMechanism

    from .primitives.exponential import ExponentialMechanism
    from .primitives.randomized_response import RandomizedResponse

__all__ = ["AuditResult", "audit"]

#: a sampler: ``sampler(rng, n) -> (outputs on D, outputs on D')``, two arrays of length n
Sampler = Callable[[np.random.Generator, int], tuple[Any, Any]]

#: number of thresholds chosen from the pilot sample when ``thresholds`` is None
DEFAULT_THRESHOLDS = 64
#: points of the grid on which the claimed curve is evaluated (plot, peak advantage)
CURVE_POINTS = 2001


# ----------------------------------------------------------------------------------
# built-in samplers: the mechanisms' own releases on sensitivity-normalised inputs
# ----------------------------------------------------------------------------------
def _shift_sampler(mechanism: Any) -> Sampler:
    """Query value 1 on ``D`` and 0 on ``D'`` (sensitivity 1), through ``release``.

    The outputs are drawn by the very ``release`` method whose privacy the mechanism
    states (Gaussian, Laplace, discrete Laplace and discrete Gaussian).
    """

    def sample(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        on_d = mechanism.release(np.ones(n, dtype=np.int64), sensitivity=1, rng=rng)
        on_d_prime = mechanism.release(np.zeros(n, dtype=np.int64), sensitivity=1, rng=rng)
        return np.asarray(on_d, dtype=float), np.asarray(on_d_prime, dtype=float)

    return sample


def _rr_sampler(mechanism: RandomizedResponse) -> Sampler:
    """k-RR on true value 0 (``D``) and 1 (``D'``), reported as the Neyman-Pearson score.

    The answers are drawn by ``mechanism.release``.  The score is ``+1`` for answer 0
    (likelihood ratio ``p / q``), ``-1`` for answer 1 (ratio ``q / p``) and ``0`` for any
    other answer (ratio 1): a post-processing of the answer that is monotone in the
    likelihood ratio, so threshold tests on it are the likelihood-ratio tests of the
    answer.
    """

    def sample(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        out = []
        for truth in (0, 1):
            y = mechanism.release(np.full(n, truth, dtype=np.int64), rng=rng)
            out.append(np.where(y == 0, 1.0, np.where(y == 1, -1.0, 0.0)))
        return out[0], out[1]

    return sample


def _exponential_sampler(mechanism: ExponentialMechanism) -> Sampler:
    """Two candidates with utilities ``(1, 0)`` on ``D`` and ``(0, 1)`` on ``D'``.

    A sensitivity-1 utility pair (each candidate's score moves by 1), drawn by
    ``mechanism.release``; the output is reported as ``+1`` for candidate 0 and ``-1``
    for candidate 1.  The pair is binary randomized response at ``epsilon0 / 2``, whose
    total variation ``tanh(epsilon0 / 4)`` is the bounded-range claim's ``delta(0)``
    (Dong, Durfee, Rogers 2020, Lemma 4.1 at ``t = epsilon0 / 2``): the audit can reach
    the claimed curve there.
    """

    def sample(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        out = []
        for scores in ((1.0, 0.0), (0.0, 1.0)):
            picks = np.array(
                [mechanism.release(scores, sensitivity=1.0, rng=rng) for _ in range(n)]
            )
            out.append(np.where(picks == 0, 1.0, -1.0))
        return out[0], out[1]

    return sample


def _subsampled_sampler(mechanism: PoissonSubsampledMechanism) -> Sampler:
    """Poisson subsampling: on ``D`` the record is in the sample with probability ``q``.

    The sensitivity-1 query is 1 when the record is sampled and 0 otherwise, released
    by the base mechanism's ``release``; on ``D'`` it is always 0.
    """
    base, q = mechanism.base, mechanism.sample_rate

    def sample(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        used = (rng.random(n) < q).astype(np.int64)
        on_d = base.release(used, sensitivity=1, rng=rng)
        on_d_prime = base.release(np.zeros(n, dtype=np.int64), sensitivity=1, rng=rng)
        return np.asarray(on_d, dtype=float), np.asarray(on_d_prime, dtype=float)

    return sample


def _shift_types() -> tuple[type, ...]:
    """The primitives whose neighbouring pair is a unit shift of the query value
    (imported here, not at import: ``import dpacct.mechanisms`` loads this module)."""
    from .primitives.discrete import DiscreteGaussianMechanism, DiscreteLaplaceMechanism
    from .primitives.gaussian import GaussianMechanism
    from .primitives.laplace import LaplaceMechanism

    return GaussianMechanism, LaplaceMechanism, DiscreteLaplaceMechanism, DiscreteGaussianMechanism


def _builtin_sampler(mechanism: object) -> Sampler:
    from dpacct.accountant.transformers.subsample import PoissonSubsampledMechanism

    from .primitives.exponential import ExponentialMechanism
    from .primitives.randomized_response import RandomizedResponse

    shift = _shift_types()
    if isinstance(mechanism, shift):
        return _shift_sampler(mechanism)
    if isinstance(mechanism, RandomizedResponse):
        return _rr_sampler(mechanism)
    if isinstance(mechanism, ExponentialMechanism):
        return _exponential_sampler(mechanism)
    if isinstance(mechanism, PoissonSubsampledMechanism) and isinstance(mechanism.base, shift):
        return _subsampled_sampler(mechanism)
    raise TypeError(
        "audit has no built-in sampler for "
        f"{type(mechanism).__name__}; built-in samplers exist for GaussianMechanism, "
        "LaplaceMechanism, DiscreteLaplaceMechanism, DiscreteGaussianMechanism, "
        "RandomizedResponse, ExponentialMechanism and poisson_subsample of a Gaussian, "
        "Laplace or discrete one; pass sampler=(rng, n) -> (outputs_on_D, outputs_on_D_prime)"
    )


# ----------------------------------------------------------------------------------
# statistics
# ----------------------------------------------------------------------------------
def clopper_pearson(
    successes: np.ndarray, trials: int, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """Exact two-sided Clopper-Pearson interval for a binomial proportion.

    Clopper & Pearson 1934 (Biometrika 26(4), 404-413): with ``g = 1 - level``, the
    bounds are the ``g/2`` quantile of ``Beta(k, n - k + 1)`` and the ``1 - g/2`` quantile
    of ``Beta(k + 1, n - k)``, with 0 for ``k = 0`` and 1 for ``k = n``.

    Parameters
    ----------
    successes : array_like of int
        Numbers of successes ``k``, in ``[0, trials]``.
    trials : int
        Number of trials ``n`` >= 1.
    level : float
        Confidence level of each interval, in (0, 1).

    Returns
    -------
    (low, high) : tuple of ndarray

    Examples
    --------
    >>> low, high = clopper_pearson(np.array([0, 5, 10]), 10, 0.95)
    >>> np.round(low, 4), np.round(high, 4)
    (array([0.    , 0.1871, 0.6915]), array([0.3085, 0.8129, 1.    ]))
    """
    from scipy import special  # here, not at import (``import dpacct`` stays light)

    k = np.asarray(successes, dtype=float)
    n = float(trials)
    g = 1.0 - level
    with np.errstate(invalid="ignore", divide="ignore"):
        # the beta quantile is the inverse regularised incomplete beta function (the
        # same values as scipy.stats.beta.ppf, without importing scipy.stats)
        low = special.betaincinv(k, n - k + 1.0, g / 2.0)
        high = special.betaincinv(k + 1.0, n - k, 1.0 - g / 2.0)
    low = np.where(k <= 0, 0.0, low)
    high = np.where(k >= n, 1.0, high)
    return np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)


def _draw(sampler: Sampler, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    out = sampler(rng, n)
    if not (isinstance(out, tuple | list) and len(out) == 2):
        raise ValueError(
            "sampler must return a pair (outputs_on_D, outputs_on_D_prime), "
            f"got {type(out).__name__}"
        )
    arrays = []
    for name, arr in zip(("outputs_on_D", "outputs_on_D_prime"), out, strict=True):
        try:
            a = np.asarray(arr, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"sampler returned non-numeric {name}") from exc
        if a.shape != (n,):
            raise ValueError(f"sampler returned {name} of shape {a.shape}, expected ({n},)")
        if not np.isfinite(a).all():
            # an infinite output makes every threshold test degenerate: refuse it
            raise ValueError(f"sampler returned non-finite values (NaN or inf) in {name}")
        arrays.append(a)
    return arrays[0], arrays[1]


def _check_thresholds(thresholds: object) -> np.ndarray:
    t = as_float_array("thresholds", thresholds)
    t = t.reshape(-1) if t.ndim == 0 else t
    if t.ndim != 1 or t.size == 0:
        raise ValueError(f"thresholds must be a non-empty 1-D array, got shape {t.shape}")
    if not np.isfinite(t).all():
        raise ValueError(f"thresholds must be finite numbers, got {float(t[~np.isfinite(t)][0])!r}")
    return np.unique(t)


def _pilot_thresholds(pooled: np.ndarray, count: int) -> np.ndarray:
    """Thresholds from an independent pilot sample of both inputs.

    Few distinct values (discrete outputs): every midpoint between consecutive values,
    i.e. all likelihood-ratio tests when the outputs are ordered by the ratio.  Otherwise
    quantiles of the pooled sample at levels ``expit(linspace(-7, 7, count))``, dense in
    both tails where the curve is steep.
    """
    values = np.unique(pooled)
    if values.size <= count + 1:
        return (values[:-1] + values[1:]) / 2.0 if values.size > 1 else values
    from scipy import special

    levels = special.expit(np.linspace(-7.0, 7.0, count))
    return np.unique(np.quantile(pooled, levels))


def _claimed(mechanism: Any, fpr: np.ndarray) -> np.ndarray:
    out = np.asarray(mechanism.tradeoff(fpr), dtype=float).reshape(fpr.shape)
    if not np.all(np.isfinite(out)) or (out < 0).any() or (out > 1).any():
        raise ValueError(f"{mechanism!r}.tradeoff returned values outside [0, 1]")
    return out


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a)
    a.setflags(write=False)
    return a


# ----------------------------------------------------------------------------------
# result
# ----------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False, repr=False)
class AuditResult:
    """Outcome of :func:`audit`: one row per test, with confidence boxes and the claim.

    Row ``i`` is the test "reject ``null_hypothesis[i]`` when the output is above
    (``reject_above[i]``) or at/below ``thresholds[i]``"; its type I error
    ``alpha_hat[i]`` and type II error ``beta_hat[i]`` are bracketed by the
    simultaneous Clopper-Pearson intervals ``[alpha_low, alpha_high]`` and
    ``[beta_low, beta_high]``.  All arrays are read-only.  Each parameter is an
    attribute of the same name.

    Parameters
    ----------
    thresholds, null_hypothesis, reject_above : ndarray
        The test of each row (``null_hypothesis`` is ``"D'"`` or ``"D"``).
    alpha_hat, beta_hat : ndarray
        Empirical type I and type II errors.
    alpha_low, alpha_high, beta_low, beta_high : ndarray
        Simultaneous (Bonferroni-corrected) Clopper-Pearson bounds.
    claimed_beta : ndarray
        The claimed curve at the estimate, ``f(alpha_hat)``.
    claimed_beta_low : ndarray
        ``f(alpha_high)``, the smallest claimed type II error over the alpha interval:
        the value ``beta_high`` is compared with.
    violations : ndarray of int
        Rows with ``beta_high < claimed_beta_low``: the whole box lies below the curve.
    passed : bool
        True when there is no violation.
    tightness : float
        Largest empirical advantage ``1 - alpha_hat - beta_hat`` over all tests,
        divided by the largest advantage the claim allows, ``claimed_advantage``.
        About 1 when the audit attains the claimed curve (an exact claim, audited with
        enough samples); well below 1 when the claim is loose or the audit weak; above
        1 (beyond sampling noise) when the claim is broken.
    claimed_advantage : float
        ``max_a (1 - a - f(a))``: the total-variation distance the claim allows (the
        ``delta`` at ``epsilon = 0``).
    curve_alpha, curve_beta : ndarray
        The claimed curve on a grid of ``[0, 1]``, for plotting.
    samples : int
        Samples drawn on each input.
    confidence : float
        Family-wise confidence level of the intervals.
    mechanism : object
        The mechanism whose claim was audited.

    Examples
    --------
    >>> import numpy as np
    >>> from dpacct.mechanisms import LaplaceMechanism
    >>> result = audit(LaplaceMechanism(b=1.0), np.random.default_rng(0), samples=5_000)
    >>> result.passed, result.violations.size, result.samples
    (True, 0, 5000)
    >>> round(result.claimed_advantage, 4)   # TV of Laplace(0, 1), Laplace(1, 1): 1 - e^-1/2
    0.3935
    """

    thresholds: np.ndarray
    null_hypothesis: np.ndarray
    reject_above: np.ndarray
    alpha_hat: np.ndarray
    beta_hat: np.ndarray
    alpha_low: np.ndarray
    alpha_high: np.ndarray
    beta_low: np.ndarray
    beta_high: np.ndarray
    claimed_beta: np.ndarray
    claimed_beta_low: np.ndarray
    violations: np.ndarray
    passed: bool
    tightness: float
    claimed_advantage: float
    curve_alpha: np.ndarray
    curve_beta: np.ndarray
    samples: int
    confidence: float
    mechanism: Any

    def __repr__(self) -> str:
        return (
            f"AuditResult(passed={self.passed}, tests={self.alpha_hat.size}, "
            f"violations={self.violations.size}, tightness={self.tightness:.4f}, "
            f"samples={self.samples}, confidence={self.confidence})"
        )

    @property
    def max_gap(self) -> float:
        """Largest ``claimed_beta - beta_hat``: how far an estimate dips below the claim.

        Positive values within the sampling noise are expected for an exact claim; the
        violation test (which accounts for the noise) decides.
        """
        return float(np.max(self.claimed_beta - self.beta_hat))

    def epsilon_lower_bound(self, delta: float = 0.0) -> float:
        """Lower confidence bound on the epsilon of any ``(epsilon, delta)`` guarantee.

        An ``(eps, delta)``-DP mechanism has ``alpha e^eps + beta >= 1 - delta`` for every
        test, so ``eps >= log((1 - delta - beta_high) / alpha_high)`` for every row, with
        confidence ``confidence`` simultaneously (Jagielski, Ullman, Oprea 2020,
        Section 3).  Compare with ``mechanism.epsilon(delta)``, an upper bound.

        Parameters
        ----------
        delta : float, optional
            In ``[0, 1)`` (default 0: pure DP).

        Returns
        -------
        float
            The largest bound over all tests, 0 if no test is informative.
        """
        delta = check_delta(delta, allow_zero=True)
        num = 1.0 - delta - self.beta_high
        ok = (num > 0) & (self.alpha_high > 0)
        if not ok.any():
            return 0.0
        return max(0.0, float(np.max(np.log(num[ok] / self.alpha_high[ok]))))

    def plot(self, ax: Any = None) -> Any:
        """Plot the claimed trade-off curve and the audited points with their boxes.

        Only informative tests (``alpha_hat + beta_hat <= 1``) are drawn; the others lie
        above the diagonal, where no trade-off curve can pass.  Violations are drawn in
        red.  Needs matplotlib (the ``plot`` extra, ``pip install "dpacct[plot]"``),
        imported here, not at module import.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Axes to draw on; a new figure is created when omitted.

        Returns
        -------
        matplotlib.axes.Axes

        Raises
        ------
        ImportError
            matplotlib is not installed (the message says which extra to install).
        """
        if ax is None:
            plt = import_optional("matplotlib.pyplot", extra="plot", feature="AuditResult.plot()")
            _, ax = plt.subplots(figsize=(5, 5))
        ax.plot(self.curve_alpha, self.curve_beta, color="C0", label="claimed trade-off f")
        ax.plot([0, 1], [1, 0], color="0.7", linestyle=":", linewidth=0.8)
        show = self.alpha_hat + self.beta_hat <= 1.0
        bad = np.zeros(show.shape, dtype=bool)
        bad[self.violations] = True
        level = f"{100 * self.confidence:g}%"
        for mask, color, label in (
            (show & ~bad, "C1", f"audited tests ({level} simultaneous CI)"),
            (bad, "C3", "violations (box below f)"),
        ):
            if not mask.any():
                continue
            x, y = self.alpha_hat[mask], self.beta_hat[mask]
            xerr = np.vstack([x - self.alpha_low[mask], self.alpha_high[mask] - x])
            yerr = np.vstack([y - self.beta_low[mask], self.beta_high[mask] - y])
            ax.errorbar(
                x, y, xerr=xerr, yerr=yerr, fmt="o", ms=3, color=color, elinewidth=0.8, label=label
            )
        ax.set_xlim(0.0, 1.0)
        ax.set_ylim(0.0, 1.0)
        ax.set_xlabel("type I error α (false-positive rate)")
        ax.set_ylabel("type II error β (false-negative rate)")
        ax.set_title(f"audit of {self.mechanism!r}", fontsize="small")
        ax.legend(loc="upper right", fontsize="small")
        return ax


# ----------------------------------------------------------------------------------
# the audit
# ----------------------------------------------------------------------------------
# long function: 76 lines are the docstring; the body is the audit's sequence (validate,
# sample, count, test, report)
def audit(
    mechanism: Any,
    rng: np.random.Generator,
    *,
    samples: int = 100_000,
    confidence: float = 0.95,
    thresholds: Any = None,
    sampler: Sampler | None = None,
) -> AuditResult:
    """Empirically audit a mechanism's claimed f-DP trade-off curve.

    Draws ``samples`` outputs of the mechanism on each of two neighbouring inputs, ``D``
    (with the record) and ``D'`` (without), estimates the type I / type II errors of
    threshold tests with simultaneous Clopper-Pearson intervals, and flags every test
    whose confidence box lies entirely below the claimed curve ``mechanism.tradeoff``
    (Dong, Roth, Su 2019).  This is the empirical-audit methodology of Jagielski,
    Ullman, Oprea 2020 and Nasr et al. 2021, with exact binomial intervals (Clopper &
    Pearson 1934) and a Bonferroni correction over the tests; see the module docstring.

    Built-in samplers (chosen from the mechanism's type) draw every output through the
    mechanism's own ``release`` -- the same code that algorithms run -- so an audit
    tests the noise actually added, not a copy of it.
    Gaussian, Laplace, discrete Laplace, discrete Gaussian, randomized response, the
    exponential mechanism, and ``poisson_subsample`` of a shift mechanism have one; the
    neighbouring inputs each uses and how outputs are scored: docs/theory/algorithms.md,
    section 'Empirical audit'.

    Parameters
    ----------
    mechanism : Mechanism
        Any object with a ``tradeoff(fpr)`` method: the claim under audit.
    rng : numpy.random.Generator
        The only source of randomness.
    samples : int, optional
        Outputs drawn on each input (default 100 000).
    confidence : float, optional
        Family-wise confidence level in (0, 1) (default 0.95): an honest claim is
        flagged with probability at most ``1 - confidence``.
    thresholds : array_like of float, optional
        Test thresholds.  By default up to 64 are chosen from an independent pilot
        sample (``min(samples, max(1000, samples // 10))`` outputs per input, drawn
        first), so that the thresholds do not depend on the audited sample.
    sampler : callable, optional
        ``sampler(rng, n) -> (outputs_on_D, outputs_on_D_prime)``, two real arrays of
        length ``n``, for mechanisms without a built-in sampler (or to audit one
        mechanism's outputs against another's claim).

    Returns
    -------
    AuditResult

    Raises
    ------
    TypeError
        ``rng`` not a ``numpy.random.Generator``; ``mechanism`` without ``tradeoff``;
        no ``sampler`` for an unsupported mechanism; non-integer ``samples``.
    ValueError
        ``samples < 1``; ``confidence`` outside (0, 1); bad ``thresholds``; a sampler
        output of the wrong shape or with NaN.

    Examples
    --------
    >>> import numpy as np
    >>> from dpacct.mechanisms import GaussianMechanism, audit
    >>> result = audit(GaussianMechanism(sigma=1.0), np.random.default_rng(0), samples=20_000)
    >>> result.passed, bool(0.9 < result.tightness < 1.1)
    (True, True)

    Claiming more privacy than the outputs have is caught:

    >>> def sigma_one(rng, n):
    ...     return rng.normal(1.0, 1.0, n), rng.normal(0.0, 1.0, n)
    >>> audit(GaussianMechanism(sigma=3.0), np.random.default_rng(0), samples=20_000,
    ...       sampler=sigma_one).passed
    False
    """
    rng = check_rng(rng)
    n = check_count(samples, "samples")
    confidence = check_probability("confidence", confidence)
    if not callable(getattr(mechanism, "tradeoff", None)):
        raise TypeError(
            f"mechanism must have a tradeoff(fpr) method, got {type(mechanism).__name__}"
        )
    if sampler is None:
        sampler = _builtin_sampler(mechanism)
    elif not callable(sampler):
        raise TypeError(f"sampler must be callable, got {type(sampler).__name__}")

    if thresholds is None:
        pilot_n = min(n, max(1000, n // 10))
        on_d, on_d_prime = _draw(sampler, rng, pilot_n)
        t = _pilot_thresholds(np.concatenate([on_d, on_d_prime]), DEFAULT_THRESHOLDS)
    else:
        t = _check_thresholds(thresholds)

    on_d, on_d_prime = _draw(sampler, rng, n)
    on_d, on_d_prime = np.sort(on_d), np.sort(on_d_prime)  # copies: never mutate user data
    k_alpha = n - np.searchsorted(on_d_prime, t, side="right")  # D' outputs above t
    k_beta = np.searchsorted(on_d, t, side="right")  # D outputs at or below t

    level = 1.0 - (1.0 - confidence) / (2 * t.size)  # Bonferroni over 2 m intervals
    a_lo, a_hi = clopper_pearson(k_alpha, n, level)
    b_lo, b_hi = clopper_pearson(k_beta, n, level)
    a_hat, b_hat = k_alpha / n, k_beta / n

    # the four tests of each threshold (module docstring table)
    cat = np.concatenate
    alpha_hat = cat([a_hat, b_hat, 1 - a_hat, 1 - b_hat])
    beta_hat = cat([b_hat, a_hat, 1 - b_hat, 1 - a_hat])
    alpha_low = cat([a_lo, b_lo, 1 - a_hi, 1 - b_hi])
    alpha_high = cat([a_hi, b_hi, 1 - a_lo, 1 - b_lo])
    beta_low = cat([b_lo, a_lo, 1 - b_hi, 1 - a_hi])
    beta_high = cat([b_hi, a_hi, 1 - b_lo, 1 - a_lo])
    m = t.size
    rows_t = np.tile(t, 4)
    null = np.repeat(np.array(["D'", "D", "D'", "D"]), m)
    above = np.repeat(np.array([True, False, False, True]), m)

    grid = np.linspace(0.0, 1.0, CURVE_POINTS)
    claimed = _claimed(mechanism, np.concatenate([alpha_hat, alpha_high, grid]))
    claimed_beta, claimed_low, curve = claimed[: 4 * m], claimed[4 * m : 8 * m], claimed[8 * m :]
    violations = np.flatnonzero(beta_high < claimed_low)  # the box's upper-right corner

    claimed_adv = float(np.max(1.0 - grid - curve))
    best_adv = float(np.max(1.0 - alpha_hat - beta_hat))
    if claimed_adv > 0:
        tightness = best_adv / claimed_adv
    else:  # the claim is perfect privacy: any positive advantage is infinitely beyond it
        tightness = math.inf if best_adv > 0 else 0.0

    return AuditResult(
        thresholds=_readonly(rows_t),
        null_hypothesis=_readonly(null),
        reject_above=_readonly(above),
        alpha_hat=_readonly(alpha_hat),
        beta_hat=_readonly(beta_hat),
        alpha_low=_readonly(alpha_low),
        alpha_high=_readonly(alpha_high),
        beta_low=_readonly(beta_low),
        beta_high=_readonly(beta_high),
        claimed_beta=_readonly(claimed_beta),
        claimed_beta_low=_readonly(claimed_low),
        violations=_readonly(violations),
        passed=violations.size == 0,
        tightness=tightness,
        claimed_advantage=claimed_adv,
        curve_alpha=_readonly(grid),
        curve_beta=_readonly(curve),
        samples=n,
        confidence=confidence,
        mechanism=mechanism,
    )
