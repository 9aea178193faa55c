"""Calibrators: search a family of mechanisms for the parameter that meets a target."""

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

__all__ = [
    "Calibration",
    "CalibrationError",
    "UnreachableTargetError",
    "analytic_gaussian_sigma",
    "calibrate",
    "dpsgd_mechanism",
    "gaussian_epsilon",
    "get_noise_multiplier",
    "max_sample_rate",
    "max_steps",
    "noise_multiplier",
    "steps_from_epochs",
]
