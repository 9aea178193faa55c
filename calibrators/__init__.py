"""Calibrators: search a family of mechanisms for the parameter that meets a target.

The names below are this layer's export list (``__all__``), each with the submodule that
defines it.  They load on first use (PEP 562, as in :mod:`dpacct.accountant`), so that
``dp.noise_multiplier`` or ``dpacct epsilon`` loads the DP-SGD calibrator and not every
calibrator with the whole mechanism zoo (issue 37: start-up).  ``calibrate`` names both a
function and its submodule: it is imported here, so that importing the submodule later
never rebinds the name to the module.  Adding a public name: add it to ``_EXPORTS`` with
its module.
"""

from __future__ import annotations

from dpacct.accountant.extras import lazy_exports as _lazy_exports

from .calibrate import calibrate

#: public name -> the submodule (relative to this package) that defines it
_EXPORTS: dict[str, str] = {
    "Calibration": "calibrate",
    "CalibrationError": "search",
    "RiskCalibration": "risk",
    "SamplerReport": "sampler",
    "SchemeEpsilon": "sampler",
    "UnreachableTargetError": "search",
    "analytic_gaussian_sigma": "dpsgd",
    "bandmf_balls_in_bins_noise_multiplier": "bandmf",
    "bandmf_min_sep_noise_multiplier": "bandmf",
    "bandmf_noise_multiplier": "bandmf",
    "calibrate": "calibrate",
    "calibrate_adassp": "regression",
    "calibrate_aim": "synthesis",
    "calibrate_dp_sgd": "training",
    "calibrate_mst": "synthesis",
    "calibrate_noisy_gd": "training",
    "calibrate_risk": "risk",
    "calibrate_ssp": "regression",
    "calibrate_synthesizer": "synthesis",
    "dpsgd_mechanism": "dpsgd",
    "gaussian_epsilon": "dpsgd",
    "get_noise_multiplier": "dpsgd",
    "max_sample_rate": "dpsgd",
    "max_steps": "dpsgd",
    "naive_split_sigma": "training",
    "noise_multiplier": "dpsgd",
    "random_allocation_noise_multiplier": "allocation",
    "risk_max_sample_rate": "risk",
    "risk_max_steps": "risk",
    "risk_noise_multiplier": "risk",
    "sampler_report": "sampler",
    "steps_from_epochs": "dpsgd",
}

# this layer's export list (dpacct re-exports it; tests/test_package.py checks it)
__all__ = list(_EXPORTS)


__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
