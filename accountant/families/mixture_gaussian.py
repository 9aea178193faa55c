"""The mixture-of-Gaussians mechanism, and user-level DP-SGD built on it.

The mechanism adds ``N(0, s^2)`` noise to a query whose sensitivity is itself random,
drawn from a finite law ``{(c_i, p_i)}``: on the dataset with the record the output is
``sum_i p_i N(c_i, s^2)``, on the dataset without it ``N(0, s^2)`` (Choquette-Choo,
Ganesh, Steinke, Thakurta 2023, "Privacy amplification for matrix mechanisms",
arXiv:2310.15526, Section 3, where it is called the MoG mechanism; it is dp_accounting's
``MixtureOfGaussiansDpEvent``).  Both neighbouring directions are accounted: the remove
direction is that pair (:class:`~dpacct.accountant.laws.mixture_law.GaussianMixtureLossLaw`),
the add direction the swapped pair.  Every query is answered by the one PLD engine from
these laws (a certified bracket), the Renyi-DP curve by the certified quadrature of
:func:`~dpacct.accountant.laws.loss_law_rdp.loss_law_rdp` over both laws, the trade-off curve from
the PLD.

**User-level DP-SGD** (:func:`user_level_dpsgd`): every user holds up to ``k`` examples,
each example is included in a step independently with probability ``q`` (Poisson
sampling of examples), and the clipped gradients (norm <= 1 per example) are summed and
noised with ``N(0, sigma^2)``.  Adding or removing one user moves the sum by the sum of
that user's sampled gradients; Ganesh 2024 ("Tight group-level DP guarantees for DP-SGD
with sampling via mixture of Gaussians mechanisms", arXiv:2401.10294, the Poisson
sampling result) shows that one step is dominated by the mixture of Gaussians with
sensitivity ``Binomial(k, q)`` -- the worst case is every gradient of the user pointing
the same way -- and that this is tight.  ``k = 1`` is one step of example-level DP-SGD.

Not covered here: a fixed batch size (the hypergeometric law of Ganesh 2024 holds under
a replace-one relation with its own pair, which this module does not build), and users
sampled as whole units (that is ordinary DP-SGD with sensitivity ``k``:
``poisson_subsample(GaussianMechanism(sigma / k), q)``).

Matrix mechanisms (MMCC).  The MoG mechanism is the building block of the amplification
analysis of Choquette-Choo, Ganesh, Steinke, Thakurta 2023 for matrix mechanisms with
Poisson sampling, whose conditional-composition argument bounds each row of the
strategy's inverse by a mixture of Gaussians.  dpacct does **not** implement that
analysis: it accounts a single MoG step and its compositions only, which covers
exactly the strategies whose noise is independent across steps (the identity strategy,
i.e. DP-SGD with Poisson sampling, user-level or not).  For banded strategies under
cyclic Poisson sampling use the banded reduction (Choquette-Choo et al. 2023,
"Amplified banded matrix factorization"), which the dp_accounting integration maps to
ordinary DP-SGD events; general lower-triangular strategies with Poisson sampling are
not accounted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..laws.loss_law_rdp import loss_law_rdp, swapped_loss_law
from ..laws.mixture_law import GaussianMixtureLossLaw
from ..mechanism import Capabilities, Mechanism
from ..validation import check_count, check_positive, check_sample_rate

__all__ = ["MixtureOfGaussiansMechanism", "user_level_dpsgd"]


@dataclass(frozen=True)
class MixtureOfGaussiansMechanism(Mechanism):
    """Gaussian noise ``N(0, sigma^2)`` on a sensitivity drawn from ``{(c_i, p_i)}``.

    The pair is ``(sum_i p_i N(c_i, sigma^2), N(0, sigma^2))`` for removing a record and
    its swap for adding one (Choquette-Choo, Ganesh, Steinke, Thakurta 2023,
    arXiv:2310.15526, Section 3; dp_accounting's ``MixtureOfGaussiansDpEvent``).  Its
    privacy loss is a convex increasing function of the one-dimensional output, so the
    loss law is exact (:class:`~dpacct.accountant.laws.mixture_law.GaussianMixtureLossLaw`)
    and the PLD engine gives a certified bracket; the Renyi-DP curve is the certified
    quadrature of both laws (:func:`~dpacct.accountant.laws.loss_law_rdp.loss_law_rdp`), capped
    by the Gaussian of the largest sensitivity (joint quasi-convexity of the Renyi
    divergence, van Erven & Harremoes 2014, Theorem 13): an upper bound.  One component
    ``(c, 1)`` is the Gaussian mechanism with noise multiplier ``sigma / c``.

    Parameters
    ----------
    sigma : float
        Noise standard deviation, > 0 (in units of the sensitivities).
    sensitivities : array_like
        The values ``c_i >= 0`` the sensitivity takes (at least one positive with
        positive probability).  Equal values are merged.
    probabilities : array_like
        Their probabilities ``p_i >= 0``, summing to 1.

    Examples
    --------
    >>> m = MixtureOfGaussiansMechanism(1.0, sensitivities=[0, 1], probabilities=[0.9, 0.1])
    >>> m
    MixtureOfGaussiansMechanism(sigma=1.0, sensitivities=(0.0, 1.0), probabilities=(0.9, 0.1))
    >>> lo, hi = m.epsilon_bounds(1e-5)       # one Poisson-subsampled Gaussian step
    >>> bool(lo <= hi < lo + 1e-3)
    True
    """

    sigma: float
    sensitivities: tuple[float, ...]
    probabilities: tuple[float, ...]

    declares = Capabilities(rdp=True, loss_laws=True)

    def __post_init__(self) -> None:
        # the law validates every parameter (by name) and holds the normalised values
        law = GaussianMixtureLossLaw(self.sigma, self.sensitivities, self.probabilities)
        object.__setattr__(self, "sigma", law.sigma)
        object.__setattr__(self, "sensitivities", law.sensitivities)
        object.__setattr__(self, "probabilities", law.probabilities)
        self._cache()["laws"] = (law, swapped_loss_law(law))

    def _loss_laws(self):
        return self._cache()["laws"]

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        remove, add = self._loss_laws()
        a = np.asarray(alpha, dtype=float)
        quad = np.maximum(loss_law_rdp(remove, a), loss_law_rdp(add, a))
        # Renyi divergence is jointly quasi-convex (van Erven & Harremoes 2014,
        # Theorem 13): revealing the component bounds both directions by the largest
        # component's Gaussian, alpha c_max^2 / (2 sigma^2), finite where the
        # quadrature's tail check gives up
        cap = a * (self.sensitivities[-1] / self.sigma) ** 2 / 2.0
        out = np.minimum(quad, cap).reshape(-1)
        # D_alpha is non-decreasing in alpha, so the bound at a larger order bounds a
        # smaller one too: the running minimum from the right (the quadrature's round-off
        # slack, divided by alpha - 1, is largest near alpha = 1)
        order = np.argsort(a.reshape(-1), kind="stable")
        out[order] = np.minimum.accumulate(out[order][::-1])[::-1]
        return out.reshape(a.shape)


def user_level_dpsgd(
    noise_multiplier: float, sample_rate: float, examples_per_user: int
) -> MixtureOfGaussiansMechanism:
    """One step of DP-SGD with Poisson sampling of examples, at the level of users.

    Each user holds at most ``k = examples_per_user`` examples, each example is sampled
    independently with probability ``q``, per-example gradients are clipped to norm 1
    and their sum gets ``N(0, noise_multiplier^2)`` noise.  One user's contribution is
    the sum of a ``Binomial(k, q)`` number of clipped gradients, and the step is
    dominated by the mixture of Gaussians with that sensitivity law (Ganesh 2024,
    "Tight group-level DP guarantees for DP-SGD with sampling via mixture of Gaussians
    mechanisms", arXiv:2401.10294, the Poisson-sampling result: the worst case aligns
    the user's gradients, and is attained).  ``k = 1`` is the example-level step
    ``poisson_subsample(GaussianMechanism(noise_multiplier), q)``.  Compose the step with
    :func:`~dpacct.accountant.compose`; calibrate the noise multiplier with
    :func:`dpacct.calibrators.calibrate` on the family
    ``lambda s: compose([user_level_dpsgd(s, q, k)], counts=[steps])``.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation per unit of clipping norm, > 0.
    sample_rate : float
        Poisson sampling probability of each example, in (0, 1].
    examples_per_user : int
        The most examples one user holds, >= 1.

    Returns
    -------
    MixtureOfGaussiansMechanism
        Sensitivities ``0..k`` with ``Binomial(k, q)`` probabilities.

    Examples
    --------
    >>> from dpacct.accountant import compose
    >>> step = user_level_dpsgd(noise_multiplier=1.0, sample_rate=0.01, examples_per_user=4)
    >>> step.sensitivities
    (0.0, 1.0, 2.0, 3.0, 4.0)
    >>> one = compose([user_level_dpsgd(1.0, 0.01, 1)], counts=[1000])
    >>> bool(compose([step], counts=[1000]).epsilon(1e-5) > one.epsilon(1e-5))
    True
    """
    s = check_positive("noise_multiplier", noise_multiplier)
    q = check_sample_rate(sample_rate)
    k = check_count(examples_per_user, "examples_per_user")
    if k > 10_000:
        raise ValueError(f"examples_per_user must be an integer in [1, 10000], got {k}")
    j = np.arange(k + 1)
    from scipy import stats  # here, not at import: scipy.stats alone costs ~0.5 s

    pmf = stats.binom.pmf(j, k, q)
    pmf = pmf / pmf.sum()
    return MixtureOfGaussiansMechanism(s, j.astype(float), pmf)
