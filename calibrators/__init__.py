"""Calibrators: search a family of mechanisms for the parameter that meets a target."""

from .allocation import random_allocation_noise_multiplier
from .bandmf import bandmf_balls_in_bins_noise_multiplier, bandmf_noise_multiplier
from .calibrate import Calibration, CalibrationError, UnreachableTargetError, calibrate
from .dpsgd import (
    analytic_gaussian_sigma,
    dpsgd_mechanism,
    gaussian_epsilon,
    get_noise_multiplier,
    max_sample_rate,
    max_steps,
    noise_multiplier,
    steps_from_epochs,
)
from .regression import calibrate_adassp, calibrate_ssp
from .risk import (
    RiskCalibration,
    calibrate_risk,
    risk_max_sample_rate,
    risk_max_steps,
    risk_noise_multiplier,
)
from .sampler import SamplerReport, SchemeEpsilon, sampler_report
from .synthesis import calibrate_aim, calibrate_mst, calibrate_synthesizer
from .training import calibrate_dp_sgd, calibrate_noisy_gd, naive_split_sigma

# this layer's export list (dpacct re-exports it; tests/test_package.py checks it
# against the names imported above)
__all__ = [
    "Calibration",
    "CalibrationError",
    "RiskCalibration",
    "SamplerReport",
    "SchemeEpsilon",
    "UnreachableTargetError",
    "analytic_gaussian_sigma",
    "bandmf_balls_in_bins_noise_multiplier",
    "bandmf_noise_multiplier",
    "calibrate",
    "calibrate_adassp",
    "calibrate_aim",
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
    "random_allocation_noise_multiplier",
    "risk_max_sample_rate",
    "risk_max_steps",
    "risk_noise_multiplier",
    "sampler_report",
    "steps_from_epochs",
]
