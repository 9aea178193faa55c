"""Random allocation checked from below: a certified lower bound and a Monte Carlo estimate.

* :func:`random_allocation_lower_epsilon` -- the epsilon of one attack (the target's
  gradient a unit vector, everyone else's zero, the adversary reading the largest noisy
  coordinate of the epoch, binned): a post-processing of the mechanism's pair, so a
  certified lower bound;
* :func:`random_allocation_delta_mc` -- a Monte Carlo estimate of the exact ``k = 1``
  curve, with a confidence interval and no guarantee.

Both are re-exported by :mod:`~dpacct.accountant.transformers.random_allocation`, whose docstring
states the mechanism and its upper bounds (docs/theory/allocation_shuffling.md).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..laws.loss_law import AtomicLossLaw
from ..mechanism import Capabilities, Mechanism
from ..validation import check_count, check_delta, check_epsilon, check_positive, check_probability
from .compose import compose

__all__ = ["random_allocation_delta_mc", "random_allocation_lower_epsilon"]


class _MaxTestPair(Mechanism):
    """The binned largest-coordinate statistic of one allocation epoch (k = 1)."""

    declares = Capabilities(loss_laws=True)

    def __init__(self, sigma: float, steps: int, bins: int = 4000) -> None:
        lo = -1.0 * sigma
        hi = 1.0 + 9.0 * sigma
        edges = np.linspace(lo, hi, bins + 1)
        log_phi = special.log_ndtr(edges / sigma)
        log_phi1 = special.log_ndtr((edges - 1.0) / sigma)
        # CDFs of the maximum: Q (record absent) and P (record in one uniform step)
        log_fq = steps * log_phi
        log_fp = log_phi1 + (steps - 1) * log_phi
        fq = np.exp(log_fq)
        fp = np.exp(log_fp)
        q = np.concatenate([[fq[0]], np.diff(fq), [-math.expm1(log_fq[-1])]])
        p = np.concatenate([[fp[0]], np.diff(fp), [-math.expm1(log_fp[-1])]])
        q, p = np.maximum(q, 0.0), np.maximum(p, 0.0)
        self._laws = (AtomicLossLaw.from_pair(p, q), AtomicLossLaw.from_pair(q, p))

    def _loss_laws(self):
        return self._laws


def random_allocation_lower_epsilon(
    sigma: float, steps: int, delta: float, *, epochs: int = 1
) -> float:
    """Certified lower bound on epsilon of random allocation (k = 1), from one attack.

    The attack (Chua et al. 2024, "How private are DP-SGD implementations?", Section 4:
    a unit gradient for the target, zero for everyone else) observes, per epoch, the
    largest of the ``T`` noisy coordinates, binned.  Its pair is a post-processing of
    the mechanism's, so its epsilon -- taken at the lower end of the engine's certified
    bracket after composing the epochs -- is below the mechanism's.

    Parameters
    ----------
    sigma : float
        Noise multiplier of each step, > 0.
    steps : int
        Steps per epoch ``T``, >= 1.
    delta : float
        Target delta, in (0, 1).
    epochs : int, default 1
        Epochs composed, >= 1.

    Examples
    --------
    >>> lo = random_allocation_lower_epsilon(1.0, 100, 1e-6)
    >>> bool(0.5 < lo < 2.5)
    True
    """
    s = check_positive("sigma", sigma)
    t = check_count(steps, "steps")
    e = check_count(epochs, "epochs")
    d = check_delta(delta)
    pair = _MaxTestPair(s, t)
    run = compose([pair], counts=[e]) if e > 1 else pair
    return float(run.epsilon_bounds(d)[0])


def random_allocation_delta_mc(
    sigma: float,
    steps: int,
    epsilon: float,
    *,
    epochs: int = 1,
    samples: int = 200_000,
    rng: np.random.Generator,
    confidence: float = 0.99,
    direction: str = "remove",
) -> tuple[float, float, float]:
    """Monte Carlo *estimate* of delta(epsilon) of one direction (k = 1); no guarantee.

    ``direction="remove"`` samples the exact privacy loss
    ``L = sum_epochs log((1/T) sum_j e^{(x_j - 1/2)/sigma^2})`` under ``P`` (record in a
    uniform step; Chua et al. 2025, Section 4); ``direction="add"`` samples
    ``L = -sum_epochs log((1/T) sum_j e^{(x_j - 1/2)/sigma^2})`` under ``Q`` (record
    absent).  Either way the estimate averages ``(1 - e^{epsilon - L})_+``.  Returns
    ``(estimate, low, high)``, the interval from the normal approximation at
    ``confidence``.

    Parameters
    ----------
    sigma : float
        Noise multiplier of each step, > 0.
    steps : int
        Steps per epoch ``T``, >= 1.
    epsilon : float
        The epsilon at which delta is estimated, >= 0.
    epochs : int, default 1
        Epochs composed, >= 1.
    samples : int, default 200_000
        Monte Carlo samples, >= 1; the interval narrows like ``1/sqrt(samples)``.
    rng : numpy.random.Generator
        The source of randomness (required: the estimate is reproducible only from a
        seeded generator).
    confidence : float, default 0.99
        Coverage of the normal-approximation interval, in (0, 1).
    direction : {"remove", "add"}
        The neighbouring direction sampled.

    Examples
    --------
    >>> import numpy as np
    >>> est, lo, hi = random_allocation_delta_mc(1.0, 100, 1.0, samples=20_000,
    ...                                          rng=np.random.default_rng(0))
    >>> bool(0 <= lo <= est <= hi)
    True
    """
    s = check_positive("sigma", sigma)
    t = check_count(steps, "steps")
    e = check_count(epochs, "epochs")
    eps = check_epsilon(epsilon)
    n = check_count(samples, "samples")
    confidence = check_probability("confidence", confidence)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {rng!r}")
    if direction not in ("remove", "add"):
        raise ValueError(f"direction must be 'remove' or 'add', got {direction!r}")
    shift, sign = (1.0, 1.0) if direction == "remove" else (0.0, -1.0)
    total = np.zeros(n)
    chunk = max(1, 2_000_000 // t)
    for _ in range(e):
        for start in range(0, n, chunk):
            m = min(chunk, n - start)
            x = rng.normal(0.0, s, size=(m, t))
            x[:, 0] += shift  # by symmetry the record's step can be the first
            y = (x - 0.5) / (s * s)
            total[start : start + m] += sign * (special.logsumexp(y, axis=1) - math.log(t))
    vals = -np.expm1(np.minimum(eps - total, 0.0))
    est = float(vals.mean())
    se = float(vals.std(ddof=1)) / math.sqrt(n)
    z = float(special.ndtri(0.5 + 0.5 * confidence))
    return est, max(est - z * se, 0.0), est + z * se
