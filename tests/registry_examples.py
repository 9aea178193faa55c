"""One small example instance per registered mechanism type (shared by the contract and
the property tests).

``EXAMPLES`` maps every registry name
(:func:`dpacct.accountant.serialization.registered_mechanisms`) to constructors of
example instances.  A registered type without an entry makes the contract test fail,
naming it: nothing is silently dropped.  The module also registers
:class:`LossLawOnly`, a mechanism that states nothing but a privacy-loss law.
"""

from __future__ import annotations

from dataclasses import dataclass

import dpacct.accountant as A
import dpacct.mechanisms as M
from dpacct.accountant import compose, poisson_subsample, subsample_without_replacement
from dpacct.accountant.laws.loss_law import GaussianLossLaw
from dpacct.accountant.mechanism import Capabilities, Mechanism
from dpacct.accountant.serialization import register_mechanism, registered_mechanisms


@register_mechanism("test_loss_law_only", replace=True)
@dataclass(frozen=True)
class LossLawOnly(Mechanism):
    """A mechanism known only by its privacy-loss law (a Gaussian pair with ``mu``)."""

    mu: float

    declares = Capabilities(loss_laws=True)

    def _loss_laws(self):
        law = self._cache().setdefault("law", GaussianLossLaw(mu=self.mu))
        return law, law


def _synth():
    cols = (M.CategoricalColumn("a", [0, 1]), M.CategoricalColumn("b", [0, 1, 2]))
    return M.MarginalSynthesizer(cols, marginals="2-way", noise="laplace", scale=4.0)


#: registry name -> list of zero-argument constructors
EXAMPLES = {
    "gaussian": [lambda: M.GaussianMechanism(sigma=1.3)],
    "replace_one_gaussian": [lambda: M.replace_one(M.GaussianMechanism(sigma=2.6))],
    "replace_one_laplace": [lambda: M.ReplaceOneLaplaceMechanism(b=2.0)],
    "laplace": [lambda: M.LaplaceMechanism(b=2.0)],
    "laplace_composition": [
        lambda: M.LaplaceComposition(parts=((M.LaplaceMechanism(b=2.0), 5),))
    ],
    "randomized_response": [lambda: M.RandomizedResponse(p=0.8)],
    "discrete_gaussian": [lambda: M.DiscreteGaussianMechanism(sigma=2.0)],
    "discrete_laplace": [lambda: M.DiscreteLaplaceMechanism(scale=2.0)],
    "pure_dp": [lambda: M.PureDPMechanism(epsilon=1.0)],
    "zcdp": [lambda: M.ZCDPMechanism(rho=0.1)],
    "exponential": [lambda: M.ExponentialMechanism(epsilon=1.0)],
    "exponential_pure_dp": [lambda: M.ExponentialMechanism(epsilon=1.0, bounded_range=False)],
    "poisson_subsample": [
        lambda: poisson_subsample(M.GaussianMechanism(sigma=1.0), 0.05),
        lambda: poisson_subsample(M.LaplaceMechanism(b=1.0), 0.05),
        lambda: poisson_subsample(M.ExponentialMechanism(epsilon=0.5), 0.05),
    ],
    "subsample_without_replacement": [
        lambda: subsample_without_replacement(M.ReplaceOneGaussianMechanism(sigma=2.0), 0.05),
        lambda: subsample_without_replacement(M.RandomizedResponse(p=0.75), 0.1),
    ],
    "compose": [
        lambda: compose([poisson_subsample(M.GaussianMechanism(sigma=1.0), 0.02)], counts=[300]),
        lambda: compose([M.GaussianMechanism(sigma=3.0)], counts=[10]),
        lambda: compose([M.LaplaceMechanism(b=10.0)], counts=[20]),
        lambda: compose([M.ExponentialMechanism(epsilon=0.1)], counts=[5]),
    ],
    "noisy_gd": [lambda: M.NoisyGD(sigma=20.0, iterations=50, loss="linear", clip=1.0)],
    "dp_sgd": [lambda: M.DPSGD(sigma=1.0, sample_rate=0.05, steps=100, loss="logistic", clip=1.0)],
    "ssp": [lambda: M.SSP(noise_scale=5.0, x_bound=1.0, y_bound=1.0)],
    "adassp": [lambda: M.AdaSSP(noise_scale=5.0, x_bound=1.0, y_bound=1.0)],
    "histogram_quantiles": [lambda: M.HistogramQuantiles(lower=0.0, upper=1.0, bins=16, scale=2.0)],
    "tree_quantiles": [lambda: M.TreeQuantiles(lower=0.0, upper=1.0, bins=16, scale=4.0)],
    "exponential_quantile": [lambda: M.ExponentialQuantile(epsilon0=1.0, lower=-10.0, upper=10.0)],
    "dp_theil_sen": [
        lambda: M.DPTheilSen(
            epsilon=1.0, x_lower=0.0, x_upper=1.0, pred_lower=-1.0, pred_upper=1.0
        ),
        lambda: M.DPTheilSen(
            epsilon=1.0, x_lower=0.0, x_upper=1.0, pred_lower=-1.0, pred_upper=1.0,
            median="grid", grid_size=50,
        ),
    ],
    "permute_and_flip": [lambda: M.PermuteAndFlip(epsilon=0.8)],
    "marginal_synthesizer": [_synth],
    "mst": [lambda: M.MST((M.CategoricalColumn("a", [0, 1]), M.CategoricalColumn("b", [0, 1, 2])),
                          rho=0.5)],
    "aim": [lambda: M.AIM((M.CategoricalColumn("a", [0, 1]), M.CategoricalColumn("b", [0, 1, 2])),
                          rho=0.5)],
    "test_loss_law_only": [lambda: LossLawOnly(mu=0.8)],
    "gaussian_dp": [lambda: Mechanism.from_gdp(0.7)],
    "pure_epsilon": [lambda: Mechanism.from_pure_epsilon(0.8)],
    "epsilon_delta": [lambda: Mechanism.from_epsilon_delta(1.0, 1e-9)],
    "mixture_of_gaussians": [
        lambda: A.MixtureOfGaussiansMechanism(2.0, [0.0, 1.0, 2.0], [0.5, 0.4, 0.1]),
        lambda: A.user_level_dpsgd(noise_multiplier=1.5, sample_rate=0.05, examples_per_user=2),
    ],
    "random_allocation": [
        lambda: A.random_allocation(M.GaussianMechanism(sigma=2.0), 3, k=2),  # direct route
    ],
    "truncated_poisson_gaussian": [
        lambda: A.TruncatedPoissonGaussianMechanism(1.5, 0.05, dataset_size=400, max_batch_size=22)
    ],
}

#: the registry as seen when the test modules are collected (names registered later,
#: by doctests or by tests of the registry itself, are not mechanisms the library ships)
REGISTERED = dict(registered_mechanisms())


def build_all() -> list[tuple[str, Mechanism]]:
    """``(name, instance)`` for every registered type that has examples."""
    out = []
    for name in sorted(REGISTERED):
        for make in EXAMPLES.get(name, []):
            out.append((name, make()))
    return out
