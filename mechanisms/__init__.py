"""The mechanism zoo: concrete mechanisms and the algorithms built on them.

Primitives: Gaussian, Laplace, randomized response, discrete Laplace and Gaussian,
exponential, generic pure-DP and zCDP.  Algorithms (each an :class:`Algorithm`, whose
privacy is the composition of the primitives it runs): NoisyGD, DP-SGD, SSP and
AdaSSP regression, marginal-based synthetic data (fixed marginals, MST's selection,
AIM's adaptive rounds), histogram and tree quantiles, the exponential-mechanism
quantile, DP Theil-Sen.  Your own transformations: a function with a declared
stability, followed by a primitive (:class:`Transformation`); and transformations whose
stability the library derives, float round-off included (:func:`bounded_sum`,
:func:`bounded_mean`, :func:`clamp`, ...).

Every primitive adds its own noise (``release``), and every algorithm draws its noise
only through the releases of the primitives its privacy is composed of
(:class:`PlannedRelease`, :class:`ReleaseSession`).
"""

from .algorithms.algorithm import Algorithm, PlannedRelease, ReleaseSession
from .algorithms.bandmf import amplified_bandmf, bandmf_sensitivity
from .algorithms.bandmf_balls_in_bins import (
    BandMFBallsInBins,
    bandmf_balls_in_bins,
    bandmf_balls_in_bins_delta_mc,
)
from .algorithms.dp_sgd import DPSGD, DPSGDFit
from .algorithms.noisy_gd import FittedLinearModel, NoisyGD, TrainingHistory
from .algorithms.quantiles import (
    ExponentialQuantile,
    HistogramQuantiles,
    HistogramRelease,
    TreeQuantiles,
    TreeRelease,
    choose_branching,
    hay_consistency,
)
from .algorithms.ssp import SSP, AdaSSP, LinearModel, SufficientStatisticsPerturbation
from .algorithms.synthesis import (
    BinnedNumericColumn,
    CategoricalColumn,
    FittedSynthesizer,
    MarginalSynthesizer,
    Table,
)
from .algorithms.synthesis_aim import AIM
from .algorithms.synthesis_mst import MST
from .algorithms.theil_sen import DPTheilSen, TheilSenFit, matching_transformation
from .algorithms.transformations import Transformation, TransformedMechanism, group_privacy
from .algorithms.transforms_proved import (
    ProvedTransformation,
    bounded_mean,
    bounded_sum,
    bounded_variance,
    cast_float,
    clamp,
    count,
    count_by_categories,
    impute_constant,
    pairwise_sum,
    pairwise_sum_error,
    resize,
    select_column,
    select_columns,
)
from .audit import AuditResult, audit
from .audit_one_run import OneRunAuditResult, audit_one_run
from .primitives.discrete import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    discrete_gaussian_delta_bounds,
)
from .primitives.exponential import ExponentialMechanism
from .primitives.gaussian import GaussianMechanism, ReplaceOneGaussianMechanism, gaussian_delta
from .primitives.generic import PureDPMechanism, ZCDPMechanism, zcdp_delta, zcdp_epsilon
from .primitives.laplace import LaplaceMechanism, ReplaceOneLaplaceMechanism
from .primitives.permute_and_flip import PermuteAndFlip
from .primitives.randomized_response import RandomizedResponse
from .primitives.relations import fixed_size_gaussian_step, replace_one

# this layer's export list (dpacct re-exports it; tests/test_package.py checks it
# against the names imported above)
__all__ = [
    "AIM",
    "DPSGD",
    "MST",
    "SSP",
    "AdaSSP",
    "Algorithm",
    "AuditResult",
    "BandMFBallsInBins",
    "BinnedNumericColumn",
    "CategoricalColumn",
    "DPSGDFit",
    "DPTheilSen",
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "ExponentialMechanism",
    "ExponentialQuantile",
    "FittedLinearModel",
    "FittedSynthesizer",
    "GaussianMechanism",
    "HistogramQuantiles",
    "HistogramRelease",
    "LaplaceMechanism",
    "LinearModel",
    "MarginalSynthesizer",
    "NoisyGD",
    "OneRunAuditResult",
    "PermuteAndFlip",
    "PlannedRelease",
    "ProvedTransformation",
    "PureDPMechanism",
    "RandomizedResponse",
    "ReleaseSession",
    "ReplaceOneGaussianMechanism",
    "ReplaceOneLaplaceMechanism",
    "SufficientStatisticsPerturbation",
    "Table",
    "TheilSenFit",
    "TrainingHistory",
    "Transformation",
    "TransformedMechanism",
    "TreeQuantiles",
    "TreeRelease",
    "ZCDPMechanism",
    "amplified_bandmf",
    "audit",
    "audit_one_run",
    "bandmf_balls_in_bins",
    "bandmf_balls_in_bins_delta_mc",
    "bandmf_sensitivity",
    "bounded_mean",
    "bounded_sum",
    "bounded_variance",
    "cast_float",
    "choose_branching",
    "clamp",
    "count",
    "count_by_categories",
    "discrete_gaussian_delta_bounds",
    "fixed_size_gaussian_step",
    "gaussian_delta",
    "group_privacy",
    "hay_consistency",
    "impute_constant",
    "matching_transformation",
    "pairwise_sum",
    "pairwise_sum_error",
    "replace_one",
    "resize",
    "select_column",
    "select_columns",
    "zcdp_delta",
    "zcdp_epsilon",
]
