"""Calibrators: search a family of mechanisms for the parameter that meets a target."""

from dpacct import _exports

from .bandmf import bandmf_noise_multiplier
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

# the names come from the one export table (dpacct/_exports.py)
__all__ = list(_exports.CALIBRATORS)
