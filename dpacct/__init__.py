"""dpacct: differential-privacy accounting and calibration, sound, tight and fast.

The everyday names live here, so ``import dpacct as dp`` is all most code needs::

    >>> import dpacct as dp
    >>> step = dp.poisson_subsample(dp.GaussianMechanism(sigma=1.1), sample_rate=256 / 60_000)
    >>> run = dp.compose([step], counts=[14_063])
    >>> round(run.epsilon(delta=1e-5), 3)
    2.382
    >>> sigma = dp.noise_multiplier(epsilon=3.0, delta=1e-5, sample_rate=0.01, steps=10_000)
    >>> bool(1.5 < sigma < 1.6)
    True

The three layers are subpackages, imported on first use (``import dpacct`` itself
loads no numerical library, so ``dpacct --version`` answers at once):

* :mod:`dpacct.accountant` -- the engine: privacy curves, composition, subsampling,
  the online :class:`~dpacct.accountant.PrivacyAccountant`;
* :mod:`dpacct.mechanisms` -- the zoo: Gaussian, Laplace, randomized response, ... and
  the algorithms built on them;
* :mod:`dpacct.calibrators` -- searches for the parameter that meets a target.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.2.0"

#: public name -> the subpackage that defines it (loaded lazily by ``__getattr__``)
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        [
            "RandomAllocationMechanism",
            "random_allocation",
            "random_allocation_delta_mc",
            "random_allocation_lower_epsilon",
            "ShufflingReport",
            "shuffled_batches",
            "ADD_REMOVE",
            "REPLACE_ONE",
            "AtomicLossLaw",
            "BudgetExceededError",
            "Capabilities",
            "GaussianMechanism",
            "GaussianDPMechanism",
            "ComposedMechanism",
            "GaussianLossLaw",
            "GridPLD",
            "LedgerFileError",
            "Mechanism",
            "MissingCapabilityError",
            "PLDSettings",
            "PoissonSubsampledLossLaw",
            "PoissonSubsampledMechanism",
            "PrivacyAccountant",
            "PrivacyLossLaw",
            "WithoutReplacementSubsampledMechanism",
            "advantage",
            "advantage_bounds",
            "compose",
            "discretize",
            "mechanism_from_delta_curve",
            "mechanism_from_epsilon_delta",
            "mechanism_from_gdp",
            "register_mechanism",
            "mechanism_from_loss_laws",
            "mechanism_from_pure_epsilon",
            "mechanism_from_rdp",
            "poisson_subsample",
            "pure_dp_rdp",
            "rdp_to_delta",
            "rdp_to_epsilon",
            "subsample_without_replacement",
            "tpr_at",
            "tpr_bounds",
            "tradeoff_bounds",
            "zcdp_rdp",
        ],
        "accountant",
    ),
    **dict.fromkeys(
        [
            "DPSGD",
            "SSP",
            "AdaSSP",
            "Algorithm",
            "AuditResult",
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
            "HistogramQuantiles",
            "HistogramRelease",
            "LaplaceMechanism",
            "LinearModel",
            "MST",
            "MarginalSynthesizer",
            "NoisyGD",
            "PermuteAndFlip",
            "PlannedRelease",
            "PureDPMechanism",
            "RandomizedResponse",
            "ReplaceOneGaussianMechanism",
            "ReplaceOneLaplaceMechanism",
            "ReleaseSession",
            "SufficientStatisticsPerturbation",
            "Table",
            "TheilSenFit",
            "TrainingHistory",
            "Transformation",
            "TransformedMechanism",
            "TreeQuantiles",
            "TreeRelease",
            "ZCDPMechanism",
            "audit",
            "choose_branching",
            "discrete_gaussian_delta_bounds",
            "fixed_size_gaussian_step",
            "gaussian_delta",
            "group_privacy",
            "hay_consistency",
            "matching_transformation",
            "replace_one",
            "zcdp_delta",
            "zcdp_epsilon",
        ],
        "mechanisms",
    ),
    **dict.fromkeys(
        [
            "Calibration",
            "CalibrationError",
            "RiskCalibration",
            "UnreachableTargetError",
            "analytic_gaussian_sigma",
            "calibrate",
            "calibrate_adassp",
            "calibrate_dp_sgd",
            "calibrate_mst",
            "calibrate_noisy_gd",
            "calibrate_risk",
            "calibrate_ssp",
            "calibrate_synthesizer",
            "dpsgd_mechanism",
            "gaussian_epsilon",
            "get_noise_multiplier",
            "max_sample_rate",
            "max_steps",
            "naive_split_sigma",
            "noise_multiplier",
            "risk_max_sample_rate",
            "risk_max_steps",
            "risk_noise_multiplier",
            "steps_from_epochs",
        ],
        "calibrators",
    ),
}

_SUBPACKAGES = ("accountant", "mechanisms", "calibrators")

__all__ = ["__version__", *_SUBPACKAGES, *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    home = _EXPORTS.get(name)
    if home is None:
        raise AttributeError(f"module 'dpacct' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
