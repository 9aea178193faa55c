"""Shuffled fixed-size batches: what is proved, what is not, and the gap to Poisson.

Most DP-SGD code shuffles the data once per epoch and cuts it into
``steps_per_epoch`` batches of fixed size, yet reports the epsilon of Poisson
subsampling at rate ``1 / steps_per_epoch``.  Chua, Ghazi, Kamath, Kumar, Manurangsi,
Sinha, Zhang (ICML 2024, "How private are DP-SGD implementations?") show that this
number can be far below the truth; no amplification-by-shuffling bound is known that
covers adaptive DP-SGD with shuffled batches.  :func:`shuffled_batches` reports:

* **upper** (proved): every record is in exactly one batch per epoch, so an epoch costs
  at most one Gaussian step with the full noise multiplier (sensitivity 1, no
  amplification), and ``epochs`` epochs compose to a Gaussian with
  ``sigma / sqrt(epochs)`` -- exact, closed form (Balle & Wang 2018).  Nothing tighter
  is proved for shuffling with adaptive steps, to our knowledge.
* **lower** (proved, from two attacks): the target's gradient is a unit vector and every
  other record's is zero (Chua et al. 2024, Section 4), so the epoch's output, with its
  coordinates permuted uniformly at random (a post-processing that makes the target's
  batch uniform even when the last batch is shorter), is the ``k = 1``
  random-allocation pair; the adversary's largest-coordinate test
  (:func:`~dpacct.accountant.transformers.random_allocation.random_allocation_lower_epsilon`)
  and sum statistic
  (:func:`~dpacct.accountant.transformers.random_allocation_sum_lower.sum_statistic_lower_epsilon`)
  are post-processings of it, and the larger epsilon is a lower bound on the truth
  (docs/theory/allocation_shuffling.md).
* **poisson** (not a bound for shuffling): the epsilon of Poisson subsampling at rate
  ``1 / steps_per_epoch`` -- what is usually reported -- for comparison.

The truth lies in ``[lower, upper]``; ``poisson`` below ``lower`` means the usual
report is wrong for this run.

**Neighbouring relation: zero-out.**  The upper bound is for *zero-out* neighbours (a
record's gradient replaced by zero, every batch unchanged; Kairouz et al. 2021), under
which a record touches one batch per epoch with sensitivity 1.  It is *not* an
add/remove bound: removing a record from a shuffled sequence of fixed-size batches
shifts every later record across a batch boundary, so many batches change.  The
replace-one relation doubles the sensitivity (``sigma / 2`` per epoch).  The argument in full:
docs/theory/allocation_shuffling.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..mechanism import Mechanism
from ..validation import check_count, check_delta
from .compose import compose
from .random_allocation import _gaussian_sigma
from .random_allocation_lower import gaussian_epsilon_is_zero, random_allocation_lower_epsilon
from .random_allocation_sum_lower import SUM_MIN_SIGMA, sum_statistic_lower_epsilon
from .subsample import poisson_subsample

__all__ = ["ShufflingReport", "shuffled_batches"]


@dataclass(frozen=True)
class ShufflingReport:
    """Epsilon of shuffled fixed-size batches at one delta.

    Built by :func:`shuffled_batches`; each parameter is an attribute of the same name.

    Parameters
    ----------
    upper : float
        Proved upper bound (one unamplified Gaussian per epoch).
    lower : float
        Proved lower bound (the larger of the largest-coordinate and the
        sum-statistic attacks).
    poisson : float
        Poisson subsampling at rate ``1 / steps_per_epoch`` for the same number of
        steps (a sound bound for Poisson batches, not for shuffled ones).
    delta : float
        The delta at which the three epsilons are taken.
    sigma : float
        Noise multiplier of each step.
    steps_per_epoch : int
        Batches per epoch.
    epochs : int
        Epochs composed.

    Examples
    --------
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> r = shuffled_batches(GaussianMechanism(sigma=1.0), 100, epochs=1, delta=1e-5)
    >>> round(r.upper, 4)  # one unamplified Gaussian step at sigma = 1
    4.3772
    >>> bool(r.lower <= r.upper), r.steps_per_epoch
    (True, 100)
    """

    upper: float
    lower: float
    poisson: float
    delta: float
    sigma: float
    steps_per_epoch: int
    epochs: int


def shuffled_batches(
    mechanism: Mechanism, steps_per_epoch: int, epochs: int, delta: float
) -> ShufflingReport:
    """Proved bracket of epsilon for shuffled fixed-size batches, beside the Poisson number.

    Parameters
    ----------
    mechanism : GaussianMechanism
        The step's mechanism (noise multiplier ``sigma``).
    steps_per_epoch : int
        Batches per epoch (dataset size / batch size).
    epochs : int
        Epochs, >= 1.
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    ShufflingReport

    Examples
    --------
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> r = shuffled_batches(GaussianMechanism(sigma=1.0), 100, 100, 1e-5)
    >>> bool(r.lower <= r.poisson <= r.upper), round(r.upper, 2)
    (True, 91.82)
    """
    sigma = _gaussian_sigma(mechanism)
    t = check_count(steps_per_epoch, "steps_per_epoch")
    e = check_count(epochs, "epochs")
    d = check_delta(delta, what="a shuffled Gaussian")
    if gaussian_epsilon_is_zero(math.sqrt(t * e) / sigma, d):
        # all t * e steps unamplified have epsilon 0 here: so do all three numbers
        return ShufflingReport(0.0, 0.0, 0.0, d, sigma, t, e)
    upper = float(compose([mechanism], counts=[e]).epsilon(d))
    lower = random_allocation_lower_epsilon(sigma, t, d, epochs=e)
    if t >= 2 and mechanism.noise_parameter == "sigma" and sigma >= SUM_MIN_SIGMA:
        # the exact sigma only: a lower bound at a smaller one would not be one
        lower = max(lower, sum_statistic_lower_epsilon(sigma, t, d, epochs=e))
    lower = min(lower, upper)
    poisson = float(compose([poisson_subsample(mechanism, 1.0 / t)], counts=[t * e]).epsilon(d))
    return ShufflingReport(upper, lower, poisson, d, sigma, t, e)
