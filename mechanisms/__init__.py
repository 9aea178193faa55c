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

The names below load on first use (PEP 562, as in :mod:`dpacct.accountant`):
``dp.LaplaceMechanism`` loads the Laplace primitive, not the whole zoo (issue 37:
start-up).  ``audit`` and ``audit_one_run`` name both a function and its submodule:
they are imported here, so that importing the submodule later never rebinds the name to
the module.  Adding a public name: add it to ``_EXPORTS`` with its module.
"""

from __future__ import annotations

from dpacct.accountant.extras import lazy_exports as _lazy_exports

from .audit import audit
from .audit_one_run import audit_one_run

#: public name -> the submodule (relative to this package) that defines it
_EXPORTS: dict[str, str] = {
    "AIM": "algorithms.synthesis_aim",
    "DPSGD": "algorithms.dp_sgd",
    "MST": "algorithms.synthesis_mst",
    "SSP": "algorithms.ssp",
    "AdaSSP": "algorithms.ssp",
    "Algorithm": "algorithms.algorithm",
    "AuditResult": "audit",
    "BandMFBallsInBins": "algorithms.bandmf_balls_in_bins",
    "BandMFBandedBallsInBins": "algorithms.bandmf_banded",
    "BandMFLowFreqBallsInBins": "algorithms.bandmf_lowfreq",
    "BandMFSharedBallsInBins": "algorithms.bandmf_banded_shared",
    "BandMFTwoBandBallsInBins": "algorithms.bandmf_two_band",
    "BinnedNumericColumn": "algorithms.synthesis",
    "CategoricalColumn": "algorithms.synthesis",
    "DPSGDFit": "algorithms.dp_sgd",
    "DPTheilSen": "algorithms.theil_sen",
    "DiscreteGaussianMechanism": "primitives.discrete",
    "DiscreteLaplaceMechanism": "primitives.discrete",
    "ExponentialMechanism": "primitives.exponential",
    "ExponentialQuantile": "algorithms.quantiles",
    "FittedLinearModel": "algorithms.noisy_gd",
    "FittedSynthesizer": "algorithms.synthesis",
    "GaussianMechanism": "primitives.gaussian",
    "HistogramQuantiles": "algorithms.quantiles",
    "HistogramRelease": "algorithms.quantiles",
    "LaplaceComposition": "primitives.laplace_fold",
    "LaplaceMechanism": "primitives.laplace",
    "LinearModel": "algorithms.ssp",
    "MarginalSynthesizer": "algorithms.synthesis",
    "NoisyGD": "algorithms.noisy_gd",
    "OneRunAuditResult": "audit_one_run",
    "PermuteAndFlip": "primitives.permute_and_flip",
    "PlannedRelease": "algorithms.algorithm",
    "ProvedTransformation": "algorithms.transforms_proved",
    "PureDPMechanism": "primitives.generic",
    "RandomizedResponse": "primitives.randomized_response",
    "ReleaseSession": "algorithms.algorithm",
    "ReplaceOneGaussianMechanism": "primitives.gaussian",
    "ReplaceOneLaplaceMechanism": "primitives.laplace",
    "SufficientStatisticsPerturbation": "algorithms.ssp",
    "Table": "algorithms.synthesis",
    "TheilSenFit": "algorithms.theil_sen",
    "TrainingHistory": "algorithms.noisy_gd",
    "Transformation": "algorithms.transformations",
    "TransformedMechanism": "algorithms.transformations",
    "TreeQuantiles": "algorithms.quantiles",
    "TreeRelease": "algorithms.quantiles",
    "ZCDPMechanism": "primitives.generic",
    "amplified_bandmf": "algorithms.bandmf",
    "audit": "audit",
    "audit_one_run": "audit_one_run",
    "bandmf_balls_in_bins": "algorithms.bandmf_balls_in_bins",
    "bandmf_balls_in_bins_delta_mc": "algorithms.bandmf_balls_in_bins",
    "bandmf_banded_balls_in_bins": "algorithms.bandmf_banded",
    "bandmf_lowfreq_balls_in_bins": "algorithms.bandmf_lowfreq",
    "bandmf_min_sep": "algorithms.bandmf_min_sep",
    "bandmf_shared_balls_in_bins": "algorithms.bandmf_banded_shared",
    "bandmf_sensitivity": "algorithms.bandmf",
    "bandmf_two_band_balls_in_bins": "algorithms.bandmf_two_band",
    "bounded_mean": "algorithms.transforms_proved",
    "bounded_sum": "algorithms.transforms_proved",
    "bounded_variance": "algorithms.transforms_proved",
    "cast_float": "algorithms.transforms_proved",
    "choose_branching": "algorithms.quantiles",
    "clamp": "algorithms.transforms_proved",
    "count": "algorithms.transforms_proved",
    "count_by_categories": "algorithms.transforms_proved",
    "discrete_gaussian_delta_bounds": "primitives.discrete",
    "fixed_size_gaussian_step": "primitives.relations",
    "gaussian_delta": "primitives.gaussian",
    "group_privacy": "algorithms.transformations",
    "hay_consistency": "algorithms.quantiles",
    "impute_constant": "algorithms.transforms_proved",
    "matching_transformation": "algorithms.theil_sen",
    "pairwise_sum": "algorithms.transforms_proved",
    "pairwise_sum_error": "algorithms.transforms_proved",
    "replace_one": "primitives.relations",
    "resize": "algorithms.transforms_proved",
    "select_column": "algorithms.transforms_proved",
    "strategy_norm_squared_upper": "algorithms.bandmf_min_sep",
    "select_columns": "algorithms.transforms_proved",
    "zcdp_delta": "primitives.generic",
    "zcdp_epsilon": "primitives.generic",
}

# this layer's export list (dpacct re-exports it; tests/test_package.py checks it)
__all__ = list(_EXPORTS)


__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
