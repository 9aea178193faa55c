"""The public names of dpacct's three layers: the one table the exports follow.

Each layer's ``__all__`` is this table's tuple (``accountant/__init__.py``:
``__all__ = list(ACCOUNTANT)``, and so on), and :mod:`dpacct` re-exports every name
lazily from the first layer that lists it (``GaussianMechanism`` is listed by the
engine and re-exported by the zoo: ``dp.GaussianMechanism`` is the engine's).  This
module imports nothing, so ``import dpacct`` stays free of numerical libraries.  Adding
a public name: import it in the layer's ``__init__.py`` and add it here (the package
tests check that the table and the layers' contents agree).
"""

from __future__ import annotations

#: :mod:`dpacct.accountant`
ACCOUNTANT: tuple[str, ...] = (
    "ADD_REMOVE",
    "REPLACE_ONE",
    "AtomicLossLaw",
    "BudgetExceededError",
    "Capabilities",
    "ComposedMechanism",
    "GaussianDPMechanism",
    "GaussianLossLaw",
    "GaussianMechanism",
    "GridPLD",
    "LedgerFileError",
    "Mechanism",
    "MissingCapabilityError",
    "PLDSettings",
    "PoissonSubsampledLossLaw",
    "PoissonSubsampledMechanism",
    "PrivacyAccountant",
    "PrivacyLossLaw",
    "RandomAllocationMechanism",
    "ShufflingReport",
    "WithoutReplacementSubsampledMechanism",
    "advantage",
    "advantage_bounds",
    "compose",
    "discretize",
    "mechanism_from_delta_curve",
    "mechanism_from_epsilon_delta",
    "mechanism_from_gdp",
    "mechanism_from_loss_laws",
    "mechanism_from_pure_epsilon",
    "mechanism_from_rdp",
    "poisson_subsample",
    "pure_dp_rdp",
    "random_allocation",
    "random_allocation_delta_mc",
    "random_allocation_lower_epsilon",
    "rdp_to_delta",
    "rdp_to_epsilon",
    "register_mechanism",
    "shuffled_batches",
    "subsample_without_replacement",
    "tpr_at",
    "tpr_bounds",
    "tradeoff_bounds",
    "zcdp_rdp",
)

#: :mod:`dpacct.mechanisms`
MECHANISMS: tuple[str, ...] = (
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
    "GaussianMechanism",
    "HistogramQuantiles",
    "HistogramRelease",
    "LaplaceMechanism",
    "LinearModel",
    "MarginalSynthesizer",
    "NoisyGD",
    "PlannedRelease",
    "PureDPMechanism",
    "RandomizedResponse",
    "ReleaseSession",
    "ReplaceOneGaussianMechanism",
    "ReplaceOneLaplaceMechanism",
    "SufficientStatisticsPerturbation",
    "Table",
    "TheilSenFit",
    "TrainingHistory",
    "TreeQuantiles",
    "TreeRelease",
    "ZCDPMechanism",
    "audit",
    "choose_branching",
    "discrete_gaussian_delta_bounds",
    "fixed_size_gaussian_step",
    "gaussian_delta",
    "hay_consistency",
    "replace_one",
    "zcdp_delta",
    "zcdp_epsilon",
)

#: :mod:`dpacct.calibrators`
CALIBRATORS: tuple[str, ...] = (
    "Calibration",
    "CalibrationError",
    "RiskCalibration",
    "UnreachableTargetError",
    "analytic_gaussian_sigma",
    "calibrate",
    "calibrate_adassp",
    "calibrate_dp_sgd",
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
)

#: layer -> its public names, in the order the top-level lookup tries them
LAYERS: dict[str, tuple[str, ...]] = {
    "accountant": ACCOUNTANT,
    "mechanisms": MECHANISMS,
    "calibrators": CALIBRATORS,
}
