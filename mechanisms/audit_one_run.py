"""One-run privacy audits: from canary scores to an empirical lower bound on epsilon.

The auditor of Steinke, Nasr & Jagielski 2023 ("Privacy auditing with one (1) training
run", NeurIPS) plants ``m`` canaries in one training run, each *inserted* or *held out*
by an independent fair coin, lets the attack score every canary (a white-box score such
as the alignment of a Dirac gradient canary with the model update, or a black-box score
such as minus the canary's loss) and guesses "inserted" for the canaries whose score is
at least a threshold, abstaining on the rest.  If the run is private, the guesses cannot
be right much more often than a coin biased by the privacy parameter: the number of
correct guesses is a test statistic, and every privacy level whose null hypothesis the
observed count rejects at level ``1 - confidence`` is below the truth.

Two estimators of that statistic are implemented in full:

``"steinke"``
    The (epsilon, delta) bound of Steinke, Nasr & Jagielski 2023, main theorem (their
    Theorem 3.1, with its delta term): with ``r``
    guesses of which ``v`` are correct and ``W' ~ Binomial(r, e^eps / (1 + e^eps))``,
    an (eps, delta)-DP run gives
    ``P[W >= v] <= P[W' >= v] + 2 m delta max_{1 <= i <= v} P[v - i <= W' < v] / i``.
    Evaluated with the exact binomial tail (scipy's regularised incomplete beta) and the
    exact partial sums of the binomial mass -- no normal approximation.
``"fdp"``
    The f-DP bound of Mahloujifar, Melis & Chaudhuri 2024 ("Auditing f-Differential
    Privacy in One Run", arXiv 2410.22235): for a run that is ``f``-DP, their recursion
    over the number of correct guesses (``r_c = tau c / m``, ``h_c = tau (k - c) / m``;
    ``h_{i} = max(h_{i+1}, g^{-1}(r_{i+1}))``,
    ``r_i = min(1, r_{i+1} + i / (k - i) (h_i - h_{i+1}))`` with ``g = 1 - f``) shows
    ``P[>= c correct of k guesses] <= tau`` whenever ``r_0 + h_0 > k / m``.  Two
    families of ``f`` are audited: the (eps, delta) curve itself (``family="eps_delta"``,
    the default: a lower bound on epsilon at ``delta`` for any mechanism, with no
    Gaussian assumption) and Gaussian DP (``family="gaussian"``: the report is the
    largest rejected ``mu`` and the epsilon of ``mu``-GDP at ``delta``, a lower bound on
    the run's epsilon *only if its trade-off curve is Gaussian*, the assumption under
    which JAX Privacy reports the same number; the result is marked
    ``assumes_gaussian=True``.  For a non-Gaussian run it can exceed the truth: on
    randomized response at epsilon 2 it reports 2.21).

The third estimator the issue names, the Gaussian estimator of Agrawal, Wei, Singh,
Magdon-Ismail & Zikas 2026 ("Let's Ask Gauss: Improved One-Run Privacy Auditing", arXiv
2606.12733), is not implemented: only its abstract and third-party summaries were
readable here, not its theorem and confidence construction.

Soundness.  Every reported bound is a point at which the test was *evaluated* and
rejected (with a relative margin of 1e-9 on the p-value for the round-off of the
binomial tail): since an (eps, delta)-DP run is also (eps', delta)-DP for every
``eps' >= eps`` (and a ``mu``-GDP run is ``mu'``-GDP for ``mu' >= mu``), any rejected
level is a valid lower bound, so the bisection's tolerance only costs tightness.  The
choice of the threshold looks at the labels, so it is paid for by a union bound over
a family of guess sets fixed in advance: "the canaries scoring at least the k-th highest
score" for each ``k`` in a list of guess counts (by default the halving grid
``ceil(m/2), ceil(m/4), ..., 1``; each set is a function of the scores alone), every
one tested at level ``(1 - confidence) / len(list)``.  A threshold fixed before the
scores were seen (``threshold=t``) is tested at the full level.  (JAX Privacy's
``Bonferroni`` strategy divides instead by the number of thresholds on the ROC curve's
hull, a count that depends on the labels; no union bound covers that, and in null games
(true epsilon 0) it reports epsilon > 0 in 8.2 % of games at m = 10 000 at nominal 5 %;
see docs/theory/one_run_audit.md.)

Validity needs the game's randomisation: each canary's inclusion decided by its own fair
coin, independently of everything else, and the scores computed without the coins.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpacct.accountant.binomial_tails import binom_pmf, binom_sf
from dpacct.accountant.families.gaussian_dp import (
    gaussian_delta_at_most_exact,
    gaussian_epsilon,
)
from dpacct.accountant.validation import (
    as_float_array,
    check_delta,
    check_finite,
    check_probability,
)

__all__ = ["OneRunAuditResult", "audit_one_run"]

#: relative margin on a p-value (or on the f-DP recursion's comparison) before a test
#: counts as rejected: scipy's binomial tail is accurate to a few ulps
P_MARGIN = 1e-9
#: absolute tolerance of the bisections on epsilon and mu (tightness only)
SEARCH_TOL = 1e-9
#: the searches stop doubling here: expit(eps) is 1.0 in floats beyond about 37
SEARCH_CAP = 1e3

ESTIMATORS = ("steinke", "fdp")
FAMILIES = ("gaussian", "eps_delta")


# ----------------------------------------------------------------------------------
# Steinke, Nasr & Jagielski 2023: the binomial bound with its delta term
# ----------------------------------------------------------------------------------
def steinke_p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """Upper bound on ``P[at least v of r guesses correct]`` for an (eps, delta)-DP run.

    Steinke, Nasr & Jagielski 2023 ("Privacy auditing with one (1) training run",
    NeurIPS), main theorem (Theorem 3.1): with ``W' ~ Binomial(r, q)``,
    ``q = e^eps / (1 + e^eps)``,
    ``P[W >= v] <= P[W' >= v] + 2 m delta max_{i=1..v} P[v - i <= W' < v] / i``
    (capped at 1).  The tail is scipy's exact binomial survival function, the partial
    sums are cumulative sums of the exact binomial mass (no cancellation).

    Parameters
    ----------
    m : int
        Number of canaries (inserted and held out), >= 1.
    r : int
        Number of guesses (canaries not abstained on), ``0 <= r <= m``.
    v : int
        Number of correct guesses, ``0 <= v <= r``.
    epsilon : float
        Epsilon of the null hypothesis, >= 0.
    delta : float
        Delta of the null hypothesis, in [0, 1].

    Returns
    -------
    float
        The p-value bound, in [0, 1].

    Examples
    --------
    >>> round(steinke_p_value(100, 10, 10, 0.0, 0.0), 12)  # ten fair coins all right
    0.000976562
    """
    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= v <= r <= m, got m={m}, r={r}, v={v}")
    if v == 0:
        return 1.0
    from scipy import special  # here, not at import (``import dpacct`` stays light)

    q = float(special.expit(epsilon))
    tail = float(binom_sf(float(v - 1), float(r), q))
    if delta == 0.0:
        return min(tail, 1.0)
    # P[v - i <= W' < v] = sum_{j=1..i} pmf(v - j), for i = 1..v
    pmf = binom_pmf(np.arange(v - 1, -1, -1, dtype=float), float(r), q)
    partial = np.cumsum(pmf)
    spread = float(np.max(partial / np.arange(1, v + 1)))
    return min(tail + 2.0 * m * delta * spread, 1.0)


def _steinke_rejects(m: int, r: int, v: int, eps: float, delta: float, level: float) -> bool:
    return steinke_p_value(m, r, v, eps, delta) * (1.0 + P_MARGIN) <= level


# ----------------------------------------------------------------------------------
# Mahloujifar, Melis & Chaudhuri 2024: the f-DP recursion
# ----------------------------------------------------------------------------------
def _gaussian_blowup_inverse(mu: float) -> Callable[[float], float]:
    """Inverse of ``g = 1 - f_mu`` for ``f_mu(x) = Phi(Phi^{-1}(1 - x) - mu)`` (Dong, Roth
    & Su 2019, Definition 2.7): ``g^{-1}(y) = Phi(Phi^{-1}(y) - mu)``."""
    from scipy import special

    def inverse(y: float) -> float:
        return float(special.ndtr(special.ndtri(min(max(y, 0.0), 1.0)) - mu))

    return inverse


def _eps_delta_blowup_inverse(eps: float, delta: float) -> Callable[[float], float]:
    """Inverse of ``g = 1 - f`` for the (eps, delta) trade-off curve
    ``f(x) = max(0, 1 - delta - e^eps x, e^-eps (1 - delta - x))`` (Dong, Roth & Su 2019,
    Proposition 2.5 / Kairouz et al. 2015): ``g(x) = min(1, delta + e^eps x,
    1 - e^-eps (1 - delta - x))`` is the minimum of two increasing lines, so its inverse
    is the maximum of theirs, clipped to [0, 1]."""
    e_pos, e_neg = math.exp(min(eps, 700.0)), math.exp(-eps)

    def inverse(y: float) -> float:
        a = (y - delta) * e_neg
        b = 1.0 - delta - (1.0 - y) * e_pos
        return min(max(a, b, 0.0), 1.0)

    return inverse


def fdp_rejects(
    m: int, k: int, c: int, level: float, blowup_inverse: Callable[[float], float]
) -> bool:
    """True if ``c`` correct of ``k`` guesses among ``m`` canaries reject ``f``-DP at ``level``.

    Mahloujifar, Melis & Chaudhuri 2024 ("Auditing f-Differential Privacy in One Run",
    arXiv 2410.22235), the bound on the guessing game with abstention: starting from
    ``r = level c / m`` and ``h = level (k - c) / m``, for ``i = c - 1, ..., 0`` set
    ``h' = max(h, g^{-1}(r))`` and ``r' = min(1, r + i / (k - i) (h' - h))``; an ``f``-DP
    run makes at least ``c`` correct guesses with probability at most ``level`` when the
    final ``r + h`` exceeds ``k / m``.  Once ``h`` stops growing it never grows again,
    and the loop stops there.  The comparison carries a relative margin of 1e-9.

    Parameters
    ----------
    m, k, c : int
        Canaries, guesses and correct guesses, ``0 <= c <= k <= m``.
    level : float
        The test's level (one minus confidence, after any union bound), in (0, 1).
    blowup_inverse : callable
        ``y -> g^{-1}(y)`` for ``g = 1 - f``.

    Returns
    -------
    bool

    Examples
    --------
    >>> fdp_rejects(1000, 100, 100, 0.05, _gaussian_blowup_inverse(1.0))
    True
    >>> fdp_rejects(1000, 100, 60, 0.05, _gaussian_blowup_inverse(1.0))
    False
    """
    if not 0 <= c <= k <= m:
        raise ValueError(f"need 0 <= c <= k <= m, got m={m}, k={k}, c={c}")
    if c == 0:
        return False
    r = level * c / m
    h = level * (k - c) / m
    for i in range(c - 1, -1, -1):
        h_new = max(h, blowup_inverse(r))
        if h_new == h:
            break
        r = min(r + (i / (k - i)) * (h_new - h), 1.0)
        h = h_new
    return (r + h) > (k / m) * (1.0 + P_MARGIN)


# ----------------------------------------------------------------------------------
# the searches: the largest privacy level the counts reject, certified by evaluation
# ----------------------------------------------------------------------------------
def _largest_rejected(rejects: Callable[[float], bool], start: float) -> float:
    """The largest ``x >= start`` found with ``rejects(x)`` (bisection; ``start`` if
    ``rejects(start)`` is false).  Every returned value was evaluated and rejected."""
    if not rejects(start):
        return start
    lo, hi = start, max(1.0, 2.0 * start)
    while rejects(hi):
        lo, hi = hi, 2.0 * hi
        if hi > SEARCH_CAP:
            return lo
    while hi - lo > SEARCH_TOL * max(1.0, lo):
        mid = 0.5 * (lo + hi)
        if rejects(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _gaussian_epsilon_below(mu: float, delta: float) -> float:
    """Epsilon at ``delta`` of ``mu``-GDP rounded *down*: a float at which the exact
    curve's delta still exceeds ``delta`` (Balle & Wang 2018, Theorem 8)."""
    if mu <= 0.0:
        return 0.0
    eps = gaussian_epsilon(mu, delta)
    while eps > 0.0 and gaussian_delta_at_most_exact(mu, eps, delta):
        eps = max(0.0, eps - 1e-12 * max(1.0, eps))
    return eps


# ----------------------------------------------------------------------------------
# the guess sets and the result
# ----------------------------------------------------------------------------------
def _counts_at(
    scores_in: np.ndarray, scores_out: np.ndarray, thresholds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """At each threshold ``t``: the guesses ``#{score >= t}`` and the correct ones
    ``#{inserted, score >= t}``."""
    s_in, s_out = np.sort(scores_in), np.sort(scores_out)
    tp = s_in.size - np.searchsorted(s_in, thresholds, side="left")
    fp = s_out.size - np.searchsorted(s_out, thresholds, side="left")
    return tp + fp, tp


def _guess_counts(guesses: Any, m: int) -> np.ndarray:
    """The numbers of guesses tried: ``"all"`` is 1..m; None the halving grid
    ``ceil(m / 2), ceil(m / 4), ..., 1`` (about log2 m counts); else the given counts."""
    if guesses is None:
        counts = {-(-m // 2**j) for j in range(1, max(1, math.ceil(math.log2(m))) + 1)}
        return np.array(sorted(counts), dtype=np.int64)
    if isinstance(guesses, str):
        if guesses != "all":
            raise ValueError(f"guesses must be 'all', None or counts in [1, m], got {guesses!r}")
        return np.arange(1, m + 1, dtype=np.int64)
    arr = np.unique(np.atleast_1d(np.asarray(guesses)))
    if arr.size == 0 or arr.dtype.kind not in "iu" or arr[0] < 1 or arr[-1] > m:
        raise ValueError(f"guesses must be counts in [1, m={m}], got {guesses!r}")
    return arr.astype(np.int64)


@dataclass(frozen=True)
class OneRunAuditResult:
    """A one-run audit: the lower bound, how it was obtained, and the certified upper one.

    Each parameter is an attribute of the same name.

    Parameters
    ----------
    epsilon_lower : float
        Lower bound on the run's epsilon at ``delta``, holding with probability at least
        ``confidence`` over the canaries' coins and the run (0 when nothing is rejected).
        For ``estimator="fdp"`` with ``family="gaussian"``, only under the hypothesis
        that the run's trade-off curve is Gaussian (``assumes_gaussian``): not a
        certified lower bound for other mechanisms.
    confidence : float
        The stated confidence.
    delta : float
        The delta at which epsilon is bounded.
    estimator, family : str
        Which bound (``"steinke"`` or ``"fdp"``) and, for ``"fdp"``, which trade-off family.
    mu_lower : float or None
        For ``family="gaussian"``: the largest rejected Gaussian-DP ``mu``.
    canaries : int
        ``m``, inserted plus held-out canaries.
    guesses, correct : int
        The guesses and correct guesses at the threshold that gave the bound.
    threshold : float
        That threshold (``inf`` when no guess set rejected anything).
    level : float
        The level each test was run at (``1 - confidence``, divided by the number of
        guess counts tried when the threshold was chosen from the scores).
    epsilon_upper : float or None
        The run's certified epsilon at ``delta``, when given.
    assumes_gaussian : bool
        True for ``estimator="fdp"`` with ``family="gaussian"``: ``epsilon_lower`` and
        ``ratio`` then hold only if the run's trade-off curve is Gaussian (said in
        ``str``).

    Examples
    --------
    >>> res = audit_one_run(np.ones(20), np.zeros(20), delta=0.0, threshold=0.5, upper=8.0)
    >>> round(res.epsilon_lower, 4), res.guesses, res.correct, round(res.ratio, 4)
    (1.8227, 20, 20, 0.2278)
    """

    epsilon_lower: float
    confidence: float
    delta: float
    estimator: str
    family: str | None
    mu_lower: float | None
    canaries: int
    guesses: int
    correct: int
    threshold: float
    level: float
    epsilon_upper: float | None = None
    assumes_gaussian: bool = False

    @property
    def ratio(self) -> float | None:
        """``epsilon_lower / epsilon_upper`` (None without an upper bound).

        The share of the certified epsilon that the audit demonstrates; 1 would be a
        tight analysis.  With ``assumes_gaussian`` it is the share under the Gaussian
        hypothesis only (it can exceed 1 for a non-Gaussian run).
        """
        if self.epsilon_upper is None:
            return None
        if self.epsilon_upper == 0.0:
            return 0.0 if self.epsilon_lower == 0.0 else math.inf
        return self.epsilon_lower / self.epsilon_upper

    def __str__(self) -> str:
        what = self.estimator + (f"/{self.family}" if self.family else "")
        text = (
            f"one-run audit ({what}): epsilon >= {self.epsilon_lower:.4f} at delta="
            f"{self.delta:g} with confidence {self.confidence:g} ({self.correct} of "
            f"{self.guesses} guesses correct, {self.canaries} canaries)"
        )
        if self.assumes_gaussian:
            text += (
                " ASSUMING a Gaussian trade-off curve (not a certified lower bound for "
                "other mechanisms)"
            )
        if self.epsilon_upper is not None:
            text += f"; certified epsilon <= {self.epsilon_upper:.4f}, ratio {self.ratio:.3f}"
            if self.assumes_gaussian:
                text += " (under the Gaussian assumption)"
        return text


def _upper_epsilon(upper: Any, delta: float) -> float | None:
    if upper is None:
        return None
    if hasattr(upper, "epsilon"):
        return float(upper.epsilon(delta))
    value = float(upper)
    if not value >= 0.0:
        raise ValueError(f"upper must be a mechanism or an epsilon >= 0, got {upper!r}")
    return value


def _search(
    m: int,
    n_guess: np.ndarray,
    n_correct: np.ndarray,
    level: float,
    delta: float,
    estimator: str,
    family: str,
) -> tuple[float, int]:
    """The largest level (epsilon, or mu for Gaussian f-DP) that any guess set rejects,
    and that set's index (-1 if none rejects anything)."""

    # the statistic each guess set is tested with, as a function of the privacy level
    def tester(k: int, c: int) -> Callable[[float], bool]:
        if estimator == "steinke":
            return lambda eps: _steinke_rejects(m, k, c, eps, delta, level)
        if family == "gaussian":
            return lambda mu: fdp_rejects(m, k, c, level, _gaussian_blowup_inverse(mu))
        return lambda eps: fdp_rejects(m, k, c, level, _eps_delta_blowup_inverse(eps, delta))

    best, best_j = 0.0, -1
    # most precise guess sets first, so that later ones are mostly settled by one test
    order = np.lexsort((-n_correct, -(n_correct / np.maximum(n_guess, 1))))
    for j in order.tolist():
        k, c = int(n_guess[j]), int(n_correct[j])
        if c == 0:
            continue
        rejects = tester(k, c)
        if best_j >= 0 and not rejects(best):
            continue  # not searched further (only rejected levels are ever reported)
        found = _largest_rejected(rejects, best)
        if found > best or (best_j < 0 and rejects(found)):
            best, best_j = found, j
    return best, best_j


def _check_inputs(
    scores_in: Any, scores_out: Any, delta: Any, confidence: Any, estimator: str, family: str
) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Validated scores (flat float arrays), delta and confidence."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
    if estimator == "fdp" and family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    confidence = check_probability("confidence", confidence)
    if estimator == "steinke" or family == "eps_delta":
        delta = check_delta(delta, allow_zero=True)
    else:
        delta = check_delta(delta, what="Gaussian DP (family='gaussian' of the f-DP audit)")
    s_in = as_float_array("scores_in", scores_in)
    s_out = as_float_array("scores_out", scores_out)
    for name, arr in (("scores_in", s_in), ("scores_out", s_out)):
        if arr.ndim != 1:
            raise ValueError(f"{name} must be a 1-d array of scores, got shape {arr.shape}")
    if s_in.size + s_out.size == 0:
        raise ValueError("scores_in and scores_out are both empty: no canaries to audit")
    if not (np.all(np.isfinite(s_in)) and np.all(np.isfinite(s_out))):
        raise ValueError("scores_in and scores_out must be finite")
    return s_in, s_out, delta, confidence


def _guess_thresholds(
    s_in: np.ndarray, s_out: np.ndarray, guesses: Any, threshold: Any, significance: float
) -> tuple[np.ndarray, float]:
    """The thresholds of the guess sets tried, and the level each is tested at."""
    m = s_in.size + s_out.size
    if threshold is not None and guesses is not None:
        raise ValueError("give threshold or guesses, not both")
    if threshold is not None:
        t = check_finite("threshold", threshold)
        values = np.array([t])
        level = significance
    else:
        counts = _guess_counts(guesses, m)
        # the threshold of "the top k": the k-th highest score (ties at it included)
        values = np.sort(np.concatenate([s_in, s_out]))[::-1][counts - 1]
        level = significance / counts.size
    return values, level


def audit_one_run(
    scores_in: Any,
    scores_out: Any,
    *,
    delta: float,
    confidence: float = 0.95,
    estimator: str = "steinke",
    family: str = "eps_delta",
    guesses: Any = None,
    threshold: float | None = None,
    upper: Any = None,
) -> OneRunAuditResult:
    """Lower-bound a run's epsilon from the scores of its inserted and held-out canaries.

    The guessing game of Steinke, Nasr & Jagielski 2023 ("Privacy auditing with one (1)
    training run", NeurIPS): the canaries scoring at least a threshold are guessed
    "inserted", the rest abstained on, and the count of correct guesses is tested against
    every privacy level by the ``estimator``'s bound (see the module docstring):
    ``"steinke"`` (their main theorem, exact binomial tail with the delta term) or
    ``"fdp"`` (Mahloujifar, Melis & Chaudhuri 2024's f-DP recursion, for the (eps, delta)
    curve or, assuming a Gaussian trade-off curve, Gaussian DP).  The report is the
    largest rejected level; it is below the truth with probability at least
    ``confidence`` (for ``family="gaussian"``, if the run's trade-off curve is Gaussian).

    Parameters
    ----------
    scores_in, scores_out : array_like
        Scores of the inserted and the held-out canaries (higher = "looks inserted":
        e.g. minus the loss, or the alignment of a gradient canary with the update).
        Which canary is inserted must have been decided by independent fair coins.
    delta : float
        The run's delta, in [0, 1) (0 not for ``family="gaussian"``, whose epsilon at
        delta 0 is infinite).
    confidence : float
        Probability with which the bound holds, in (0, 1).
    estimator : {"steinke", "fdp"}
        The bound on the number of correct guesses.
    family : {"eps_delta", "gaussian"}
        For ``estimator="fdp"``: the trade-off family audited.  ``"eps_delta"``
        (default) holds for any mechanism; ``"gaussian"`` only if the run's trade-off
        curve is Gaussian (the result is marked ``assumes_gaussian=True``).
    guesses : int, sequence of int or "all", optional
        The numbers ``k`` of guesses tried, fixed before the scores were seen: the
        canaries scoring at least the ``k``-th highest score are guessed "inserted".
        Each is tested at level ``(1 - confidence) / len(guesses)`` (a union bound).
        Default: the halving grid ``ceil(m / 2), ceil(m / 4), ..., 1`` (about
        ``log2 m`` tests); ``"all"`` tries every ``k`` in 1..m.
    threshold : float, optional
        Instead of ``guesses``: one score threshold fixed before the scores were seen,
        tested at the full level ``1 - confidence``.
    upper : Mechanism or float, optional
        The run's certified privacy (a mechanism, asked for ``epsilon(delta)``, or an
        epsilon): reported beside the audit, with their ratio.

    Returns
    -------
    OneRunAuditResult

    Raises
    ------
    ValueError
        For empty or non-finite scores, a confidence outside (0, 1), a delta outside its
        range, or an unknown estimator or family.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> inserted = rng.random(1000) < 0.5
    >>> scores = rng.normal(4.0 * inserted, 1.0)  # a 4-GDP release of every canary
    >>> res = audit_one_run(scores[inserted], scores[~inserted], delta=1e-5)
    >>> 0.5 < res.epsilon_lower < 20.0  # 4-GDP has epsilon 20.2 at delta 1e-5
    True
    """
    s_in, s_out, delta, confidence = _check_inputs(
        scores_in, scores_out, delta, confidence, estimator, family
    )
    m = s_in.size + s_out.size
    values, level = _guess_thresholds(s_in, s_out, guesses, threshold, 1.0 - confidence)
    n_guess, n_correct = _counts_at(s_in, s_out, values)
    best, j = _search(m, n_guess, n_correct, level, delta, estimator, family)
    gaussian = estimator == "fdp" and family == "gaussian"
    if j < 0:  # nothing rejected: no evidence
        best, k, c, t = 0.0, 0, 0, math.inf
    else:
        k, c, t = int(n_guess[j]), int(n_correct[j]), float(values[j])
    return OneRunAuditResult(
        epsilon_lower=float(_gaussian_epsilon_below(best, delta) if gaussian else best),
        confidence=confidence,
        delta=delta,
        estimator=estimator,
        family=family if estimator == "fdp" else None,
        mu_lower=float(best) if gaussian else None,
        canaries=m,
        guesses=k,
        correct=c,
        threshold=t,
        level=level,
        epsilon_upper=_upper_epsilon(upper, delta),
        assumes_gaussian=gaussian,
    )
