"""Every public function and constructor, fed hostile values one parameter at a time.

The callables are found by walking ``__all__`` of :mod:`dpacct`,
:mod:`dpacct.accountant`, :mod:`dpacct.mechanisms` and :mod:`dpacct.calibrators`
(plus the query methods of a few mechanisms and of the ledger, and
:func:`~dpacct.accountant.pld.schedule.round_schedule`).  Each has a row of valid base
arguments in :data:`BASE`; a public callable without a row, and not on the reviewed
:data:`NOT_FUZZED` list, fails :func:`test_every_public_callable_is_covered`.

For each numeric parameter (its annotation mentions ``float``, ``int`` or
``ndarray``; found by :func:`inspect.signature`) one bad value replaces the base value:
NaN, +-inf, a Python int beyond the float range (``10**400``), a numeric string,
``True``, a complex number, an array of the wrong shape, numpy scalars.  Accepted
outcomes: a ``ValueError`` or ``TypeError`` whose message names the parameter and shows
numbers plainly (no ``np.float64(...)``), or no exception where the value is
legitimately valid -- ``True`` for a ``bool`` parameter, a string for a ``str``
parameter, an array where the parameter is declared as one, and the entries of the
reviewed :data:`ALLOWED` list (each with its reason).

Every (callable, parameter) pair gets every kind of :data:`BAD` value; Hypothesis then
draws further values of those kinds (integers beyond the float range, non-finite
floats, complex numbers, numeric strings) for random pairs, and puts bad values inside
the phases of ``round_schedule`` and the counts of ``compose``, which a top-level
substitution does not reach.
"""

from __future__ import annotations

import inspect
import math
import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpacct
import dpacct.accountant as A
import dpacct.calibrators as C
import dpacct.mechanisms as M
from dpacct.accountant.laws.loss_law import GaussianLossLaw
from dpacct.accountant.pld.schedule import round_schedule, round_step

try:  # the dp_accounting extra: its events and DpEventAccountant are fuzzed when present
    import attr
    import dp_accounting as dpa
    from dp_accounting import dp_event as de

    import dpacct.dp_accounting as DA
    from dpacct.dp_accounting import DpEventAccountant, UnsupportedEventError
except ImportError:  # pragma: no cover - the extra is part of the test environment
    dpa = None

RNG = np.random.default_rng(0)
G = M.GaussianMechanism(sigma=1.0)
LAP = M.LaplaceMechanism(b=1.0)
LAW = GaussianLossLaw(mu=1.0)
COLS = (M.CategoricalColumn("a", (0, 1)), M.BinnedNumericColumn("x", (0.0, 0.5, 1.0)))


def _ledger() -> A.PrivacyAccountant:
    acct = A.PrivacyAccountant()
    acct.step(noise_multiplier=1.0, sample_rate=0.01, count=10)
    return acct


def _family(s):
    return M.LaplaceMechanism(b=s)


#: name -> (a zero-argument factory of the callable, valid keyword arguments).  The
#: factory runs once per example so that a stateful object (the ledger) starts fresh.
BASE: dict[str, tuple[Callable[[], Callable], dict[str, Any]]] = {
    # ----------------------------------------------------------------- primitives
    "GaussianMechanism": (lambda: M.GaussianMechanism, {"sigma": 1.0}),
    "LaplaceMechanism": (lambda: M.LaplaceMechanism, {"b": 1.0}),
    "RandomizedResponse": (lambda: M.RandomizedResponse, {"p": 0.75, "k": 3}),
    "DiscreteGaussianMechanism": (lambda: M.DiscreteGaussianMechanism, {"sigma": 2.0}),
    "DiscreteLaplaceMechanism": (lambda: M.DiscreteLaplaceMechanism, {"scale": 2.0}),
    "ExponentialMechanism": (lambda: M.ExponentialMechanism, {"epsilon": 1.0}),
    "PureDPMechanism": (lambda: M.PureDPMechanism, {"epsilon": 1.0}),
    "ZCDPMechanism": (lambda: M.ZCDPMechanism, {"rho": 0.1}),
    "ReplaceOneGaussianMechanism": (lambda: M.ReplaceOneGaussianMechanism, {"sigma": 2.0}),
    "ReplaceOneLaplaceMechanism": (lambda: M.ReplaceOneLaplaceMechanism, {"b": 2.0}),
    "GaussianDPMechanism": (lambda: A.GaussianDPMechanism, {"mu": 1.0}),
    "GaussianLossLaw": (lambda: A.GaussianLossLaw, {"mu": 1.0}),
    "PoissonSubsampledLossLaw": (
        lambda: A.PoissonSubsampledLossLaw,
        {"base": LAW, "sample_rate": 0.1, "direction": "remove"},
    ),
    "AtomicLossLaw": (
        lambda: A.AtomicLossLaw,
        {"losses": np.array([-1.0, 1.0]), "p": np.array([0.5, 0.5])},
    ),
    "PLDSettings": (lambda: A.PLDSettings, {"tol": 1e-3, "delta": 1e-6}),
    "discretize": (lambda: A.discretize, {"law": LAW, "step": 0.01, "pessimistic": True}),
    # --------------------------------------------------------------- transformers
    "compose": (lambda: A.compose, {"mechanisms": [G, LAP], "counts": [3, 2]}),
    "poisson_subsample": (lambda: A.poisson_subsample, {"mechanism": G, "sample_rate": 0.1}),
    "PoissonSubsampledMechanism": (
        lambda: A.PoissonSubsampledMechanism,
        {"base": G, "sample_rate": 0.1},
    ),
    "subsample_without_replacement": (
        lambda: A.subsample_without_replacement,
        {"mechanism": M.RandomizedResponse(p=0.75), "sample_rate": 0.1},
    ),
    "WithoutReplacementSubsampledMechanism": (
        lambda: A.WithoutReplacementSubsampledMechanism,
        {"base": M.RandomizedResponse(p=0.75), "sample_rate": 0.1},
    ),
    "MixtureOfGaussiansMechanism": (
        lambda: A.MixtureOfGaussiansMechanism,
        {"sigma": 1.0, "sensitivities": [0.0, 1.0], "probabilities": [0.5, 0.5]},
    ),
    "user_level_dpsgd": (
        lambda: A.user_level_dpsgd,
        {"noise_multiplier": 1.0, "sample_rate": 0.1, "examples_per_user": 2},
    ),
    "TruncatedPoissonGaussianMechanism": (
        lambda: A.TruncatedPoissonGaussianMechanism,
        {"noise_multiplier": 1.0, "sample_rate": 0.1, "dataset_size": 100, "max_batch_size": 12},
    ),
    "random_allocation": (
        lambda: A.random_allocation,
        {"mechanism": G, "steps": 10, "k": 1, "epochs": 2},
    ),
    "RandomAllocationMechanism": (
        lambda: A.RandomAllocationMechanism,
        {"base": G, "steps": 10, "k": 1, "epochs": 2},
    ),
    "random_allocation_lower_epsilon": (
        lambda: A.random_allocation_lower_epsilon,
        {"sigma": 1.0, "steps": 10, "delta": 1e-5, "epochs": 1},
    ),
    "random_allocation_delta_mc": (
        lambda: A.random_allocation_delta_mc,
        {
            "sigma": 1.0,
            "steps": 10,
            "epsilon": 1.0,
            "epochs": 1,
            "samples": 1000,
            "rng": RNG,
            "confidence": 0.9,
        },
    ),
    "min_separation_dpsgd": (
        lambda: A.min_separation_dpsgd,
        {"noise_multiplier": 1.0, "sample_rate": 0.1, "steps": 10, "min_sep": 3},
    ),
    "min_separation_subsample": (
        lambda: A.min_separation_subsample,
        {"mechanism": G, "sample_rate": 0.1, "min_sep": 3},
    ),
    "min_separation_delta_mc": (
        lambda: A.min_separation_delta_mc,
        {
            "noise_multiplier": 1.0,
            "sample_rate": 0.2,
            "steps": 4,
            "epsilon": 1.0,
            "min_sep": 2,
            "strategy": (1.0, 0.5),
            "warm_start": True,
            "samples": 1000,
            "rng": RNG,
        },
    ),
    "shuffled_batches": (
        lambda: A.shuffled_batches,
        {"mechanism": G, "steps_per_epoch": 10, "epochs": 2, "delta": 1e-5},
    ),
    "replace_one": (lambda: M.replace_one, {"mechanism": G, "sensitivity_factor": 2.0}),
    "fixed_size_gaussian_step": (
        lambda: M.fixed_size_gaussian_step,
        {"noise_multiplier": 1.0, "sample_rate": 0.1},
    ),
    "mechanism_from_epsilon_delta": (
        lambda: A.mechanism_from_epsilon_delta,
        {"epsilon": 1.0, "delta": 1e-5},
    ),
    "mechanism_from_gdp": (lambda: A.mechanism_from_gdp, {"mu": 1.0}),
    "mechanism_from_pure_epsilon": (lambda: A.mechanism_from_pure_epsilon, {"epsilon": 1.0}),
    "mechanism_from_rdp": (
        lambda: A.mechanism_from_rdp,
        {"rdp_curve": lambda a: a / 2.0, "pure_epsilon": 3.0},
    ),
    # --------------------------------------------------------------- conversions
    "rdp_to_epsilon": (lambda: A.rdp_to_epsilon, {"rdp": lambda a: a / 2.0, "delta": 1e-5}),
    "rdp_to_delta": (lambda: A.rdp_to_delta, {"rdp": lambda a: a / 2.0, "epsilon": 1.0}),
    "pure_dp_rdp": (lambda: A.pure_dp_rdp, {"epsilon": 1.0, "alpha": 2.0}),
    "zcdp_rdp": (lambda: A.zcdp_rdp, {"rho": 0.1, "alpha": 2.0}),
    "zcdp_delta": (lambda: M.zcdp_delta, {"rho": 0.1, "epsilon": 1.0}),
    "zcdp_epsilon": (lambda: M.zcdp_epsilon, {"rho": 0.1, "delta": 1e-5}),
    "gaussian_delta": (lambda: M.gaussian_delta, {"mu": 1.0, "epsilon": 1.0}),
    "gaussian_epsilon": (lambda: C.gaussian_epsilon, {"mu": 1.0, "delta": 1e-5}),
    "discrete_gaussian_delta_bounds": (
        lambda: M.discrete_gaussian_delta_bounds,
        {"sigma": 2.0, "epsilon": 1.0},
    ),
    "advantage": (lambda: A.advantage, {"mechanism": G, "tol": 1e-3}),
    "advantage_bounds": (lambda: A.advantage_bounds, {"mechanism": G, "tol": 1e-3}),
    "tpr_at": (lambda: A.tpr_at, {"mechanism": G, "fpr": 0.1, "tol": 1e-3}),
    "tpr_bounds": (lambda: A.tpr_bounds, {"mechanism": G, "fpr": 0.1, "tol": 1e-3}),
    "tradeoff_bounds": (lambda: A.tradeoff_bounds, {"mechanism": G, "fpr": 0.1, "tol": 1e-3}),
    "round_schedule": (lambda: round_schedule, {"steps": [(1.0, 0.01, 5)], "grid": 0.01}),
    "round_step": (
        lambda: round_step,
        {"noise_multiplier": 1.0, "sample_rate": 0.01, "grid": 0.01},
    ),
    # ------------------------------------------------------------- query methods
    "Gaussian.epsilon": (lambda: G.epsilon, {"delta": 1e-5, "tol": 1e-3}),
    "Gaussian.delta": (lambda: G.delta, {"epsilon": 1.0, "tol": 1e-3}),
    "Gaussian.epsilon_bounds": (lambda: G.epsilon_bounds, {"delta": 1e-5, "tol": 1e-3}),
    "Gaussian.rdp": (lambda: G.rdp, {"alpha": 2.0}),
    "Gaussian.tradeoff": (lambda: G.tradeoff, {"fpr": 0.1}),
    "Laplace.epsilon": (lambda: LAP.epsilon, {"delta": 1e-5}),
    "Laplace.delta": (lambda: LAP.delta, {"epsilon": 0.5}),
    "RandomAllocation.epsilon": (
        lambda: A.random_allocation(G, steps=10).epsilon,
        {"delta": 1e-5, "tol": 1e-3},
    ),
    "RandomAllocation.delta": (
        lambda: A.random_allocation(G, steps=10).delta,
        {"epsilon": 1.0, "tol": 1e-3},
    ),
    "Gaussian.release": (lambda: G.release, {"value": 1.0, "sensitivity": 1.0, "rng": RNG}),
    "Laplace.release": (lambda: LAP.release, {"value": 1.0, "sensitivity": 1.0, "rng": RNG}),
    "PrivacyAccountant": (lambda: A.PrivacyAccountant, {"tol": 1e-3, "grid": 2.0**-10}),
    "PrivacyAccountant.step": (
        lambda: _ledger().step,
        {"noise_multiplier": 1.0, "sample_rate": 0.01, "count": 3},
    ),
    "PrivacyAccountant.record": (lambda: _ledger().record, {"mechanism": LAP, "count": 2}),
    "PrivacyAccountant.epsilon": (lambda: _ledger().epsilon, {"delta": 1e-5}),
    "PrivacyAccountant.delta": (lambda: _ledger().delta, {"epsilon": 1.0}),
    "PrivacyAccountant.epsilon_bounds": (lambda: _ledger().epsilon_bounds, {"delta": 1e-5}),
    # ----------------------------------------------------------------- algorithms
    "NoisyGD": (lambda: M.NoisyGD, {"sigma": 5.0, "iterations": 10, "loss": "linear", "clip": 1.0}),
    "DPSGD": (
        lambda: M.DPSGD,
        {"sigma": 1.0, "sample_rate": 0.05, "steps": 20, "loss": "logistic", "clip": 1.0},
    ),
    "SSP": (lambda: M.SSP, {"noise_scale": 5.0, "x_bound": 1.0, "y_bound": 1.0}),
    "SufficientStatisticsPerturbation": (
        lambda: M.SufficientStatisticsPerturbation,
        {"noise_scale": 5.0, "x_bound": 1.0, "y_bound": 1.0},
    ),
    "AdaSSP": (lambda: M.AdaSSP, {"noise_scale": 5.0, "x_bound": 1.0, "y_bound": 1.0}),
    "HistogramQuantiles": (
        lambda: M.HistogramQuantiles,
        {"lower": 0.0, "upper": 1.0, "bins": 16, "scale": 2.0},
    ),
    "TreeQuantiles": (
        lambda: M.TreeQuantiles,
        {"lower": 0.0, "upper": 1.0, "bins": 16, "scale": 4.0},
    ),
    "ExponentialQuantile": (
        lambda: M.ExponentialQuantile,
        {"epsilon0": 1.0, "lower": -10.0, "upper": 10.0},
    ),
    "DPTheilSen": (
        lambda: M.DPTheilSen,
        {"epsilon": 1.0, "x_lower": 0.0, "x_upper": 1.0, "pred_lower": -1.0, "pred_upper": 1.0},
    ),
    "PermuteAndFlip": (lambda: M.PermuteAndFlip, {"epsilon": 1.0}),
    "Transformation": (
        lambda: M.Transformation,
        {"function": abs, "stability": 1.0, "metric": "l1"},
    ),
    "group_privacy": (lambda: M.group_privacy, {"mechanism": G, "k": 2, "delta": 1e-6}),
    "matching_transformation": (
        lambda: M.matching_transformation,
        {"k": 2, "cut_points": (0.25, 0.75), "max_records": 10},
    ),
    "MarginalSynthesizer": (
        lambda: M.MarginalSynthesizer,
        {"columns": COLS, "scale": 4.0, "count": 100},
    ),
    "MST": (lambda: M.MST, {"columns": COLS, "rho": 0.5}),
    "AIM": (lambda: M.AIM, {"columns": COLS, "rho": 0.5}),
    "BinnedNumericColumn": (lambda: M.BinnedNumericColumn, {"name": "x", "edges": (0.0, 0.5, 1.0)}),
    "choose_branching": (lambda: M.choose_branching, {"bins": 64, "max_branching": 8}),
    "hay_consistency": (
        lambda: M.hay_consistency,
        {"noisy_levels": [np.array([2.0]), np.array([1.0, 1.0])], "branching": 2},
    ),
    "PlannedRelease": (
        lambda: M.PlannedRelease,
        {"label": "x", "mechanism": LAP, "count": 1, "sensitivity": 1.0},
    ),
    "audit": (
        lambda: M.audit,
        {"mechanism": LAP, "rng": RNG, "samples": 2000, "confidence": 0.9},
    ),
    "audit_one_run": (
        lambda: M.audit_one_run,
        {"scores_in": np.array([2.0, 1.5, 0.3]), "scores_out": np.array([0.1, -1.0]),
         "delta": 1e-5, "confidence": 0.9},
    ),
    "repeat_and_select": (
        lambda: A.repeat_and_select,
        {"mechanism": G, "mean": 2.0, "shape": 1.0},
    ),
    "amplified_bandmf": (
        lambda: M.amplified_bandmf,
        {
            "noise_multiplier": 1.0,
            "iterations": 8,
            "num_bands": 2,
            "sample_rate": 0.1,
            "strategy": np.eye(8),
        },
    ),
    "bandmf_sensitivity": (lambda: M.bandmf_sensitivity, {"strategy": np.eye(4), "num_bands": 2}),
    "bandmf_balls_in_bins": (
        lambda: M.bandmf_balls_in_bins,
        {"noise_multiplier": 2.0, "iterations": 4, "cycle_length": 2, "strategy": np.eye(4)},
    ),
    "bandmf_two_band_balls_in_bins": (
        lambda: M.bandmf_two_band_balls_in_bins,
        {
            "noise_multiplier": 2.0,
            "iterations": 4,
            "cycle_length": 2,
            "strategy": [1.0, 0.5],
            "points": 21,
            "rho": 0.02,
        },
    ),
    "bandmf_banded_balls_in_bins": (
        lambda: M.bandmf_banded_balls_in_bins,
        {
            "noise_multiplier": 1.5,
            "iterations": 8,
            "cycle_length": 4,
            "strategy": [1.0, 0.6, 0.3],
            "points": 5,
        },
    ),
    "bandmf_shared_balls_in_bins": (
        lambda: M.bandmf_shared_balls_in_bins,
        {
            "noise_multiplier": 1.5,
            "iterations": 8,
            "cycle_length": 4,
            "strategy": [1.0, 0.6, 0.3],
            "points": 5,
            "budget": 30.0,
            "choice": (2, "thm3", 0.0),
        },
    ),
    "bandmf_lowfreq_balls_in_bins": (
        lambda: M.bandmf_lowfreq_balls_in_bins,
        {
            "noise_multiplier": 1.5,
            "iterations": 12,
            "cycle_length": 4,
            "strategy": [1.0, 0.6, 0.3],
            "factor_points": 9,
            "points": 15,
        },
    ),
    "bandmf_balls_in_bins_delta_mc": (
        lambda: M.bandmf_balls_in_bins_delta_mc,
        {
            "noise_multiplier": 2.0,
            "iterations": 4,
            "epsilon": 1.0,
            "cycle_length": 2,
            "strategy": np.eye(4),
            "samples": 1000,
            "rng": RNG,
        },
    ),
    "bandmf_min_sep": (
        lambda: M.bandmf_min_sep,
        {
            "noise_multiplier": 2.0,
            "iterations": 8,
            "sample_rate": 0.1,
            "min_sep": 2,
            "strategy": [1.0, 0.5],
        },
    ),
    "strategy_norm_squared_upper": (
        lambda: M.strategy_norm_squared_upper,
        {"strategy": np.eye(4), "iterations": 4},
    ),
    # ---------------------------------------------------------------- calibrators
    "bandmf_noise_multiplier": (
        lambda: C.bandmf_noise_multiplier,
        {
            "epsilon": 2.0,
            "delta": 1e-6,
            "iterations": 100,
            "num_bands": 4,
            "sample_rate": 0.05,
            "tol": 1e-3,
        },
    ),
    "bandmf_min_sep_noise_multiplier": (
        lambda: C.bandmf_min_sep_noise_multiplier,
        {
            "epsilon": 3.0,
            "delta": 1e-5,
            "iterations": 8,
            "sample_rate": 0.1,
            "min_sep": 2,
            "strategy": [1.0, 0.5],
            "rtol": 0.05,
        },
    ),
    "calibrate": (lambda: C.calibrate, {"family": _family, "epsilon": 1.0, "delta": 0.0}),
    "random_allocation_noise_multiplier": (
        lambda: C.random_allocation_noise_multiplier,
        {"epsilon": 3.0, "delta": 1e-5, "steps": 10, "k": 2, "epochs": 2, "tol": 1e-3},
    ),
    "noise_multiplier": (
        lambda: C.noise_multiplier,
        {"epsilon": 3.0, "delta": 1e-5, "sample_rate": 0.01, "steps": 100, "tol": 1e-3},
    ),
    "get_noise_multiplier": (
        lambda: C.get_noise_multiplier,
        {"target_epsilon": 3.0, "target_delta": 1e-5, "sample_rate": 0.01, "steps": 100},
    ),
    "max_steps": (
        lambda: C.max_steps,
        {"epsilon": 1.0, "delta": 1e-5, "noise_multiplier": 2.0, "sample_rate": 0.01},
    ),
    "max_sample_rate": (
        lambda: C.max_sample_rate,
        {"epsilon": 1.0, "delta": 1e-5, "noise_multiplier": 1.0, "steps": 100},
    ),
    "sampler_report": (
        lambda: C.sampler_report,
        {
            "noise_multiplier": 2.0,
            "delta": 1e-5,
            "scheme": "shuffle",
            "dataset_size": 100,
            "batch_size": 10,
            "epochs": 2,
            "k": 1,
        },
    ),
    "steps_from_epochs": (lambda: C.steps_from_epochs, {"epochs": 2.0, "sample_rate": 0.1}),
    "dpsgd_mechanism": (
        lambda: C.dpsgd_mechanism,
        {"noise_multiplier": 1.0, "sample_rate": 0.01, "steps": 10},
    ),
    "analytic_gaussian_sigma": (
        lambda: C.analytic_gaussian_sigma,
        {"epsilon": 1.0, "delta": 1e-5, "sensitivity": 1.0},
    ),
    "naive_split_sigma": (
        lambda: C.naive_split_sigma,
        {"epsilon": 1.0, "delta": 1e-5, "iterations": 10},
    ),
    "calibrate_noisy_gd": (
        lambda: C.calibrate_noisy_gd,
        {"epsilon": 1.0, "delta": 1e-5, "iterations": 10, "loss": "linear", "clip": 1.0},
    ),
    "calibrate_dp_sgd": (
        lambda: C.calibrate_dp_sgd,
        {
            "epsilon": 2.0,
            "delta": 1e-5,
            "sample_rate": 0.05,
            "steps": 20,
            "loss": "logistic",
            "clip": 1.0,
        },
    ),
    "calibrate_ssp": (
        lambda: C.calibrate_ssp,
        {"epsilon": 1.0, "delta": 1e-5, "x_bound": 1.0, "y_bound": 1.0},
    ),
    "calibrate_adassp": (
        lambda: C.calibrate_adassp,
        {"epsilon": 1.0, "delta": 1e-5, "x_bound": 1.0, "y_bound": 1.0},
    ),
    "calibrate_synthesizer": (
        lambda: C.calibrate_synthesizer,
        {"epsilon": 1.0, "delta": 0.0, "columns": COLS},
    ),
    "calibrate_mst": (
        lambda: C.calibrate_mst,
        {"epsilon": 1.0, "delta": 1e-6, "columns": COLS},
    ),
    "calibrate_aim": (
        lambda: C.calibrate_aim,
        {"epsilon": 1.0, "delta": 1e-6, "columns": COLS},
    ),
    "calibrate_risk": (
        lambda: C.calibrate_risk,
        {"family": lambda s: M.GaussianMechanism(sigma=s), "advantage": 0.2, "increasing": False},
    ),
    "risk_noise_multiplier": (
        lambda: C.risk_noise_multiplier,
        {"sample_rate": 0.5, "steps": 4, "advantage": 0.2, "tol": 1e-2},
    ),
    "risk_max_steps": (
        lambda: C.risk_max_steps,
        {"noise_multiplier": 2.0, "sample_rate": 0.5, "advantage": 0.2, "tol": 1e-2},
    ),
    "risk_max_sample_rate": (
        lambda: C.risk_max_sample_rate,
        {"noise_multiplier": 2.0, "steps": 4, "advantage": 0.2, "tol": 1e-2},
    ),
}

def _dp_events_accountant() -> DpEventAccountant:
    step = dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0))
    return DpEventAccountant().compose(step, 100)


# transformations whose stability the library derives (transforms_proved.py)
BASE.update(
    {
        "clamp": (lambda: M.clamp, {"lower": 0.0, "upper": 10.0}),
        "impute_constant": (lambda: M.impute_constant, {"value": 1.0}),
        "resize": (lambda: M.resize, {"size": 100, "fill": 0.0}),
        "bounded_sum": (lambda: M.bounded_sum, {"bounds": (0.0, 10.0), "max_records": 1000}),
        "bounded_mean": (lambda: M.bounded_mean, {"bounds": (0.0, 10.0), "size": 100}),
        "bounded_variance": (
            lambda: M.bounded_variance,
            {"bounds": (0.0, 10.0), "size": 100, "ddof": 1},
        ),
        "pairwise_sum_error": (
            lambda: M.pairwise_sum_error,
            {"max_records": 1000, "magnitude": 10.0},
        ),
    }
)
BASE["Transformation.then_gaussian"] = (
    lambda: M.Transformation(abs, 1.0, "l2").then_gaussian,
    {"scale": 2.0},
)
if dpa is not None:
    BASE.update(
        {
            "DpEventAccountant": (
                lambda: DpEventAccountant,
                {"tol": 1e-3, "replace_one_sensitivity": 2.0},
            ),
            "from_dp_event": (
                lambda: DA.from_dp_event,
                {
                    "event": dpa.GaussianDpEvent(2.0),
                    "neighboring_relation": dpa.NeighboringRelation.REPLACE_ONE,
                    "replace_one_sensitivity": 1.0,
                },
            ),
            "ReplaceOneZCDPMechanism": (
                lambda: DA.ReplaceOneZCDPMechanism,
                {"rho": 0.5, "xi": 0.1},
            ),
            "DpEventAccountant.compose": (
                lambda: _dp_events_accountant().compose,
                {"event": dpa.GaussianDpEvent(2.0), "count": 2},
            ),
            "DpEventAccountant.get_epsilon": (
                lambda: _dp_events_accountant().get_epsilon,
                {"target_delta": 1e-5},
            ),
            "DpEventAccountant.get_delta": (
                lambda: _dp_events_accountant().get_delta,
                {"target_epsilon": 1.0},
            ),
            "DpEventAccountant.summary": (
                lambda: _dp_events_accountant().summary,
                {"target_delta": 1e-5},
            ),
            "DpEventAccountant.epsilon_bounds": (
                lambda: _dp_events_accountant().epsilon_bounds,
                {"target_delta": 1e-5},
            ),
            "DpEventAccountant.get_true_positive_rates": (
                lambda: _dp_events_accountant().get_true_positive_rates,
                {"false_positive_rates": 0.01, "deltas": np.array([1e-6, 1e-5])},
            ),
            "DpEventAccountant.get_gdp_parameter_estimate": (
                lambda: _dp_events_accountant().get_gdp_parameter_estimate,
                {"false_positive_rates": np.array([0.01, 0.1]), "deltas": None},
            ),
        }
    )

#: public names deliberately not fuzzed, with the reason (reviewed)
NOT_FUZZED: dict[str, str] = {
    "LaplaceComposition": "one argument, a tuple of (LaplaceMechanism, count) parts: its parts are "
    "fuzzed as LaplaceMechanism, and test_laplace_fold checks that a malformed tuple is refused",
    "BandMFBallsInBins": "built by bandmf_balls_in_bins (fuzzed), which validates every input",
    "MinSeparationSubsampledMechanism": (
        "built by min_separation_subsample (fuzzed), its checks those of "
        "PoissonSubsampledMechanism and check_count"
    ),

    "BandMFBandedBallsInBins": (
        "built by bandmf_banded_balls_in_bins (fuzzed), which validates every input"
    ),
    "BandMFTwoBandBallsInBins": (
        "built by bandmf_two_band_balls_in_bins (fuzzed), which validates every input"
    ),
    "BandMFSharedBallsInBins": (
        "built by bandmf_shared_balls_in_bins (fuzzed), which validates every input"
    ),
    "BandMFLowFreqBallsInBins": (
        "built by bandmf_lowfreq_balls_in_bins (fuzzed), which validates every input"
    ),
    "bandmf_balls_in_bins_noise_multiplier": (
        "each call is a calibration; its run inputs go through balls_in_bins_candidates "
        "(fuzzed via bandmf_balls_in_bins) and its target through calibrate (fuzzed)"
    ),
    **dict.fromkeys(
        [
            "AuditResult",
            "OneRunAuditResult",
            "Calibration",
            "RiskCalibration",
            "DPSGDFit",
            "FittedLinearModel",
            "FittedSynthesizer",
            "HistogramRelease",
            "TreeRelease",
            "TrainingHistory",
            "ShufflingReport",
            "Bracket",
            "SamplerReport",
            "SchemeEpsilon",
            "TheilSenFit",
            "LinearModel",
            "Table",
            "ReleaseSession",
        ],
        "a result record: built by the library from validated inputs (Table by "
        "Table.from_data, ReleaseSession by Algorithm.session), not a user entry point",
    ),
    **dict.fromkeys(
        [
            "BudgetExceededError",
            "CalibrationError",
            "UnreachableTargetError",
            "LedgerFileError",
            "MissingCapabilityError",
        ],
        "an exception class: its numbers are a report, not an input",
    ),
    "NeighboringRelation": "dp_accounting's enum, re-exported (DpEventAccountant checks it)",
    "pairwise_sum": "sums the data it is given (nan in, nan out, as np.sum); its error "
    "bound pairwise_sum_error is fuzzed",
    "UnsupportedEventError": "an exception class: its numbers are a report, not an input",
    "GridPLD": "the engine's discretised distribution, built in the FFT composition loop "
    "from validated laws; checking every construction would cost that loop (discretize, "
    "which users call, is fuzzed)",
    **dict.fromkeys(
        ["Mechanism", "Algorithm", "PrivacyLossLaw", "Capabilities", "ComposedMechanism"],
        "a base class or a flag record without numeric parameters (compose() is fuzzed)",
    ),
    **dict.fromkeys(
        [
            "register_mechanism",
            "mechanism_from_delta_curve",
            "mechanism_from_loss_laws",
            "CategoricalColumn",
            "TransformedMechanism",
            "select_column",
            "select_columns",
            "cast_float",
            "count",
            "count_by_categories",
            "ProvedTransformation",
        ],
        "no numeric parameter (names, callables, laws, categories)",
    ),
}

#: (callable, parameter, kind of bad value) -> why the value is legitimately accepted
_ALPHA_INF = "alpha = inf is the max-divergence order (check_alpha allows it by design)"
_EXTENDED = "the hockey-stick curve is defined on the extended reals: delta(-inf)=1, delta(inf)=0"
ALLOWED: dict[tuple[str, str, str], str] = {
    **{
        ("clamp", side, k): "an infinite bound leaves that side of the clamp open"
        for side, kinds in (("lower", ("-inf",)), ("upper", ("inf", "np_inf")))
        for k in kinds
    },
    **{
        (f, "alpha", k): _ALPHA_INF
        for f in ("Gaussian.rdp", "pure_dp_rdp", "zcdp_rdp")
        for k in ("inf", "np_inf")
    },
    **{("gaussian_delta", "epsilon", k): _EXTENDED for k in ("inf", "-inf", "np_inf")},
    **{
        ("repeat_and_select", "shape", k): "shape = inf is the Poisson law of the number of "
        "runs (Papernot & Steinke 2022, Theorem 6)"
        for k in ("inf", "np_inf")
    },
}

#: parameters that take arrays (vectorised queries), beyond those annotated ndarray
ARRAY_PARAMS: dict[str, set[str]] = {
    "clamp": {"lower", "upper"},  # bounds per column
    "resize": {"fill"},  # a padding record of several columns
    "Gaussian.epsilon": {"delta"},
    "Gaussian.delta": {"epsilon"},
    "Gaussian.rdp": {"alpha"},
    "Gaussian.tradeoff": {"fpr"},
    "Laplace.epsilon": {"delta"},
    "Laplace.delta": {"epsilon"},
    "RandomAllocation.epsilon": {"delta"},
    "RandomAllocation.delta": {"epsilon"},
    "Gaussian.release": {"value"},
    "Laplace.release": {"value"},
    "tpr_at": {"fpr"},
    "tpr_bounds": {"fpr"},
    "tradeoff_bounds": {"fpr"},
    "gaussian_delta": {"epsilon"},
    "discrete_gaussian_delta_bounds": {"epsilon"},
    "pure_dp_rdp": {"alpha"},
    "zcdp_rdp": {"alpha"},
    "DpEventAccountant.get_true_positive_rates": {"false_positive_rates", "deltas"},
    "DpEventAccountant.get_gdp_parameter_estimate": {"false_positive_rates", "deltas"},
}


def _public_callables() -> dict[str, object]:
    found = {}
    for mod in (dpacct, A, M, C) + (() if dpa is None else (DA,)):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if callable(obj) and not inspect.ismodule(obj):
                found[name] = obj
    return found


def _parameters(fn: Callable) -> dict[str, inspect.Parameter]:
    """The signature's parameters (a class's from ``__init__``, so that a constructor
    declared with ``*args, **kwargs`` shows its real parameters)."""
    target = fn.__init__ if inspect.isclass(fn) else fn
    return dict(inspect.signature(target).parameters)


def _annotation(fn: Callable, param: str) -> str:
    ann = _parameters(fn)[param].annotation
    return "" if ann is inspect.Parameter.empty else str(ann)


def _numeric_params(name: str) -> list[str]:
    """The parameters of ``name`` that take numbers, by annotation or base value."""
    factory, base = BASE[name]
    fn = factory()
    out = []
    for p, spec in _parameters(fn).items():
        if p in ("self", "args", "kwargs", "fields") or spec.kind is spec.VAR_KEYWORD:
            continue
        ann = _annotation(fn, p)
        if ann.startswith("Callable"):
            continue
        value = base.get(p, spec.default)
        numeric_ann = re.search(r"\b(float|int|ndarray)\b", ann) is not None
        numeric_val = isinstance(value, int | float | np.ndarray) and not isinstance(value, bool)
        if p in ("rng", "mechanism", "base", "family", "rdp", "rdp_curve", "law"):
            continue
        if numeric_ann or numeric_val:
            out.append(p)
    return out


def _wrong_shape(value: object) -> np.ndarray:
    if isinstance(value, np.ndarray) and value.ndim >= 1:
        return np.stack([value, value, value])
    x = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.5
    return np.full((2, 3), x)


#: kind -> builder of the bad value from the parameter's valid base value
BAD: dict[str, Callable[[object], object]] = {
    "nan": lambda v: math.nan,
    "inf": lambda v: math.inf,
    "-inf": lambda v: -math.inf,
    "huge_int": lambda v: 10**400,
    "string": lambda v: "0.1",
    "bool": lambda v: True,
    "complex": lambda v: 1 + 1j,
    "wrong_shape": _wrong_shape,
    "np_nan": lambda v: np.float64(math.nan),
    "np_negative": lambda v: np.float64(-0.5),
    "np_inf": lambda v: np.float64(math.inf),
}

#: kinds for which raising nothing may be legitimate without review (the value can
#: lie in the parameter's range)
MAYBE_VALID = {"np_negative"}

NAMED = r"(?<![A-Za-z0-9_]){}(?![A-Za-z0-9_])"
CASES = [(name, p) for name in BASE for p in _numeric_params(name)]


def _legit(name: str, param: str, kind: str) -> bool:
    if (name, param, kind) in ALLOWED or kind in MAYBE_VALID:
        return True
    factory, _ = BASE[name]
    ann = _annotation(factory(), param)
    if kind == "bool" and re.search(r"\bbool\b", ann):
        return True
    if kind == "string" and re.search(r"\bstr\b", ann):
        return True
    return kind == "wrong_shape" and ("ndarray" in ann or param in ARRAY_PARAMS.get(name, set()))


def check_one(name: str, param: str, kind: str, value: object = None) -> None:
    """Call ``name`` with ``param`` replaced by a bad value of ``kind`` (``value``, or
    the one :data:`BAD` builds); assert the rules of the module docstring."""
    factory, base = BASE[name]
    fn = factory()
    kwargs = dict(base)
    kwargs[param] = BAD[kind](kwargs.get(param)) if value is None else value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(**kwargs)
        except (ValueError, TypeError) as exc:
            msg = str(exc)
            assert re.search(NAMED.format(re.escape(param)), msg), (
                f"{name}({param}={kind}): {type(exc).__name__} does not name {param!r}: {msg}"
            )
            assert "np.float" not in msg and "np.int" not in msg, (
                f"{name}({param}={kind}): numpy repr in the message: {msg}"
            )
            return
        except Exception as exc:  # any other exception is the finding
            pytest.fail(f"{name}({param}={kind}) raised {type(exc).__name__}: {exc}")
    assert _legit(name, param, kind), f"{name}({param}={kind}) was accepted silently"


def test_every_public_callable_is_covered():
    missing = sorted(set(_public_callables()) - set(BASE) - set(NOT_FUZZED))
    assert not missing, f"public callables with no fuzz row and no reason: {missing}"
    assert all(reason for reason in NOT_FUZZED.values())
    assert all(reason for reason in ALLOWED.values())


@pytest.mark.parametrize("name", sorted(BASE))
def test_base_arguments_are_valid(name):
    factory, base = BASE[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        factory()(**base)


@pytest.mark.parametrize(("name", "param"), CASES, ids=[f"{n}-{p}" for n, p in CASES])
def test_bad_value_is_refused_clearly(name, param):
    """Every kind of :data:`BAD` value, one after the other (all failures reported)."""
    failures = []
    for kind in sorted(BAD):
        try:
            check_one(name, param, kind)
        except (AssertionError, pytest.fail.Exception) as exc:
            failures.append(str(exc).splitlines()[0])
    assert not failures, "\n".join(failures)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    case=st.sampled_from(CASES),
    value=st.one_of(
        st.integers(min_value=2**1024, max_value=10**500),
        st.floats(allow_nan=True, allow_infinity=True).filter(
            lambda x: math.isnan(x) or math.isinf(x)
        ),
        st.complex_numbers(allow_nan=False, allow_infinity=False, min_magnitude=1e-3).filter(
            lambda z: z.imag != 0
        ),
        st.from_regex(r"\A[0-9]\.[0-9]{1,3}\Z"),
    ),
)
def test_generated_bad_values_are_refused_clearly(case, value):
    """Hypothesis draws further values of the same kinds for any (callable, parameter)."""
    name, param = case
    kind = (
        "huge_int"
        if isinstance(value, int)
        else "string"
        if isinstance(value, str)
        else "complex"
        if isinstance(value, complex)
        else "nan"
        if math.isnan(value)
        else "inf"
    )
    check_one(name, param, kind, value)


@pytest.mark.parametrize(
    ("call", "param"),
    [
        (lambda: M.LaplaceMechanism(b=np.float64(-0.5)), "b"),
        (lambda: M.GaussianMechanism(sigma=1.0).rdp(np.float64(0.5)), "alpha"),
        (lambda: M.GaussianMechanism(sigma=1.0).tradeoff([np.float64(1.5)]), "fpr"),
        (lambda: M.GaussianMechanism(sigma=1.0).epsilon(np.float64(2.0)), "delta"),
        (lambda: A.compose([G], counts=[np.float64(2.5)]), "counts"),
        (lambda: round_schedule([(np.float64(-1.0), 0.01, 3)]), "noise_multiplier"),
        (
            lambda: A.PrivacyAccountant(budget_epsilon=np.float64(-1.0), budget_delta=1e-5),
            "budget_epsilon",
        ),
        (lambda: round_schedule([(1.0, 0.01, 3)], grid=np.float64(0.7)), "grid"),
        (lambda: M.RandomizedResponse(p=np.float64(0.2), k=3), "p"),
        (lambda: M.DiscreteLaplaceMechanism(scale=np.float64(-1.0)), "scale"),
        (lambda: A.PrivacyAccountant(adaptive=np.float64(1.0)), "adaptive"),
        (lambda: M.replace_one(G, sensitivity_factor=np.float64(0.5)), "sensitivity_factor"),
        (lambda: M.audit(LAP, RNG, thresholds=[0.0, np.float64(np.inf)]), "thresholds"),
        (lambda: C.calibrate(_family, 1.0, 0.0, domain=(np.float64(-1.0), 2.0)), "domain"),
        (lambda: M.TreeQuantiles(0.0, 1.0, 16, 4.0).epsilon(np.float64(2.0)), "delta"),
    ],
)
def test_numpy_scalars_print_as_plain_numbers(call, param):
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    msg = str(info.value)
    assert param in msg
    assert "np.float64" not in msg and "np.int64" not in msg, msg


PHASE_FIELDS = ("noise_multiplier", "sample_rate", "count")


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    index=st.integers(0, 2),
    field=st.integers(0, 2),
    kind=st.sampled_from(sorted(set(BAD) - MAYBE_VALID)),
)
def test_round_schedule_refuses_bad_phase_values(index, field, kind):
    """Values inside the ``(noise_multiplier, sample_rate, count)`` triples: numpy would
    read ``'0.1'`` and ``True`` as numbers, and ``int(inf)`` overflows."""
    steps = [(1.0, 0.01, 5), (0.9, 0.02, 3), (1.1, 0.01, 2)]
    phase = list(steps[index])
    phase[field] = BAD[kind](phase[field])
    steps[index] = tuple(phase)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises((ValueError, TypeError)) as info:
            round_schedule(steps)
    msg = str(info.value)
    assert f"steps[{index}] {PHASE_FIELDS[field]}" in msg, msg
    assert "np.float" not in msg, msg


@settings(max_examples=30, deadline=None, derandomize=True)
@given(kind=st.sampled_from(sorted(set(BAD) - MAYBE_VALID)))
def test_compose_refuses_bad_counts(kind):
    with pytest.raises((ValueError, TypeError)) as info:
        A.compose([G, LAP], counts=[2, BAD[kind](2)])
    assert "counts[1]" in str(info.value) and "np.float" not in str(info.value)


def test_round_schedule_refuses_a_merged_count_beyond_int64():
    # two phases in one cell whose counts sum past 2**63 - 1 (int64 would wrap silently)
    with pytest.raises(ValueError, match=r"merged count must be an integer <= 2\*\*63 - 1"):
        round_schedule([(1.0, 0.01, 2**62), (1.0, 0.01, 2**62)])


# -------------------------------------------------------- the largest float, 1e308
#: (callable, parameter) pairs where 1e308 still fails, reviewed: each belongs to
#: another part of the work on issue 35 or is reported to the lead (xfail, not strict)
HUGE_FLOAT_OPEN: dict[tuple[str, str], str] = {}  # every case found by this probe is fixed
HUGE_CASES = [
    pytest.param(
        name,
        param,
        marks=pytest.mark.xfail(strict=False, reason=HUGE_FLOAT_OPEN[(name, param)])
        if (name, param) in HUGE_FLOAT_OPEN
        else (),
        id=f"{name}-{param}",
    )
    for name, param in CASES
]


@pytest.mark.parametrize(("name", "param"), HUGE_CASES)
def test_the_largest_float_is_answered_or_refused_clearly(name, param):
    """1e308 is a legal float: a callable may accept it (a huge noise multiplier is
    legitimate) or refuse it naming the parameter, but never raise OverflowError or
    ZeroDivisionError on the way (``then_gaussian(1e308)``, ``MST(rho=1e308)``)."""
    for value in (1e308, np.float64(1e308)):
        factory, base = BASE[name]
        kwargs = {**base, param: value}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                factory()(**kwargs)
            except (ValueError, TypeError) as exc:
                assert re.search(NAMED.format(re.escape(param)), str(exc)), (
                    f"{name}({param}=1e308): {type(exc).__name__} does not name {param!r}: {exc}"
                )


# --------------------------------------------------- every field of every DpEvent
needs_dp_accounting = pytest.mark.skipif(dpa is None, reason="dp_accounting is not installed")

if dpa is not None:

    def _newer(name: str, **fields: Any) -> Any:
        """An event of dp_accounting's repository after 0.6.0: the installed class, or
        a stand-in with the same fields (dpacct recognises them by class name)."""
        cls = getattr(de, name, None)
        if cls is None:
            cls = attr.make_class(name, list(fields), bases=(de.DpEvent,), frozen=True)
        return cls(**fields)

    G2 = de.GaussianDpEvent(2.0)
    #: one valid instance of every event with fields, and the relation it is read under
    EVENTS: dict[str, tuple[Any, Any]] = {
        "GaussianDpEvent": (G2, dpa.NeighboringRelation.ADD_OR_REMOVE_ONE),
        "LaplaceDpEvent": (de.LaplaceDpEvent(2.0), dpa.NeighboringRelation.ADD_OR_REMOVE_ONE),
        "DiscreteLaplaceDpEvent": (
            de.DiscreteLaplaceDpEvent(0.5, 3),
            dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
        ),
        "RandomizedResponseDpEvent": (
            de.RandomizedResponseDpEvent(0.5, 4),
            dpa.NeighboringRelation.REPLACE_ONE,
        ),
        "ZCDpEvent": (de.ZCDpEvent(0.1, 0.05), dpa.NeighboringRelation.ADD_OR_REMOVE_ONE),
        "SelfComposedDpEvent": (
            de.SelfComposedDpEvent(G2, 3),
            dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
        ),
        "PoissonSampledDpEvent": (
            de.PoissonSampledDpEvent(0.1, G2),
            dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
        ),
        "SampledWithoutReplacementDpEvent": (
            de.SampledWithoutReplacementDpEvent(100, 10, G2),
            dpa.NeighboringRelation.REPLACE_ONE,
        ),
        "SampledWithReplacementDpEvent": (
            de.SampledWithReplacementDpEvent(100, 10, G2),
            dpa.NeighboringRelation.REPLACE_ONE,
        ),
        "SingleEpochTreeAggregationDpEvent": (
            de.SingleEpochTreeAggregationDpEvent(2.0, 8),
            dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
        ),
        "RepeatAndSelectDpEvent": (
            de.RepeatAndSelectDpEvent(G2, 3.0, 1.0),
            dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
        ),
        "MixtureOfGaussiansDpEvent": (
            de.MixtureOfGaussiansDpEvent(2.0, [0.0, 1.0], [0.5, 0.5]),
            dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
        ),
        "TruncatedSubsampledGaussianDpEvent": (
            de.TruncatedSubsampledGaussianDpEvent(20, 0.1, 3, 1.0),
            dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
        ),
        "EpsilonDeltaDpEvent": (
            _newer("EpsilonDeltaDpEvent", epsilon=1.0, delta=1e-7),
            dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
        ),
        "DiscreteGaussianDpEvent": (
            _newer("DiscreteGaussianDpEvent", sigma=3.0, sensitivity=1.0, dimension=1),
            dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
        ),
        "ExponentialMechanismDpEvent": (
            _newer("ExponentialMechanismDpEvent", epsilon=1.0),
            dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
        ),
        "PermuteAndFlipDpEvent": (
            _newer("PermuteAndFlipDpEvent", epsilon=1.0),
            dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
        ),
    }
    #: the fields dpacct reads (an inner ``event`` / ``events`` is walked, not fuzzed)
    EVENT_FIELDS = [
        (name, f.name)
        for name, (event, _) in EVENTS.items()
        for f in attr.fields(type(event))
        if f.name not in ("event", "events")
    ]
else:  # pragma: no cover
    EVENTS, EVENT_FIELDS = {}, []

#: the values every field gets
EVENT_VALUES: dict[str, Callable[[], object]] = {
    "nan": lambda: math.nan,
    "inf": lambda: math.inf,
    "-inf": lambda: -math.inf,
    "1e308": lambda: 1e308,
    "10**400": lambda: 10**400,
    "-1": lambda: -1,
    "0": lambda: 0,
    "True": lambda: True,
    "1+0j": lambda: 1 + 0j,
    "array": lambda: np.array([1.0, 2.0]),
    "None": lambda: None,
    "'1'": lambda: "1",
    "np.nan": lambda: np.float64(math.nan),
    "2.0": lambda: 2.0,
    "5e-324": lambda: 5e-324,
    "1e-300": lambda: 1e-300,
}
#: values a field may accept: 1e308, 0 and the tiny positive floats are in range for
#: many fields; 2.0 is a count (check_count's convention) or a real in range
MAY_ACCEPT = {"1e308", "0", "2.0", "5e-324", "1e-300"}
#: field -> further kinds it may accept, with the reason
FIELD_ACCEPTS: dict[tuple[str, str], set[str]] = {
    ("ZCDpEvent", "rho"): {"inf"},  # JAX Privacy's zCDP event at sigma = 0: epsilon inf
    ("EpsilonDeltaDpEvent", "epsilon"): {"inf"},  # no guarantee: epsilon inf
    ("RepeatAndSelectDpEvent", "shape"): {"inf"},  # the Poisson law of the number of runs
    ("MixtureOfGaussiansDpEvent", "sensitivities"): {"array"},  # a 1-d array of reals
    ("SingleEpochTreeAggregationDpEvent", "step_counts"): {"array"},  # counts 1.0, 2.0
    ("DiscreteGaussianDpEvent", "dimension"): {"None"},  # its default: any dimension
}
#: (event, field) whose 0 makes the event non-private (epsilon inf) or free (epsilon 0)
AT_ZERO: dict[tuple[str, str], float] = {
    ("GaussianDpEvent", "noise_multiplier"): math.inf,
    ("LaplaceDpEvent", "noise_multiplier"): math.inf,
    ("DiscreteLaplaceDpEvent", "noise_parameter"): math.inf,
    ("DiscreteLaplaceDpEvent", "sensitivity"): 0.0,
    ("RandomizedResponseDpEvent", "noise_parameter"): math.inf,
    ("SelfComposedDpEvent", "count"): 0.0,
    ("PoissonSampledDpEvent", "sampling_probability"): 0.0,
    ("SampledWithoutReplacementDpEvent", "sample_size"): 0.0,
    ("SingleEpochTreeAggregationDpEvent", "noise_multiplier"): math.inf,
    ("SingleEpochTreeAggregationDpEvent", "step_counts"): 0.0,
    ("MixtureOfGaussiansDpEvent", "standard_deviation"): math.inf,
    ("TruncatedSubsampledGaussianDpEvent", "dataset_size"): 0.0,
    ("TruncatedSubsampledGaussianDpEvent", "sampling_probability"): 0.0,
    ("TruncatedSubsampledGaussianDpEvent", "truncated_batch_size"): 0.0,
    ("TruncatedSubsampledGaussianDpEvent", "noise_multiplier"): math.inf,
    ("DiscreteGaussianDpEvent", "sigma"): math.inf,
    ("DiscreteGaussianDpEvent", "sensitivity"): 0.0,
    ("ExponentialMechanismDpEvent", "epsilon"): 0.0,
    ("PermuteAndFlipDpEvent", "epsilon"): 0.0,
}


def check_event_field(name: str, field: str, kind: str) -> None:
    """Put the value of ``kind`` in ``field`` of the event ``name``; compose it and ask
    for epsilon.  A refusal must be a ValueError / TypeError naming ``event.<field>``;
    an answer must be a float in [0, inf], and the one AT_ZERO states where it is known."""
    event, relation = EVENTS[name]
    bad = attr.evolve(event, **{field: EVENT_VALUES[kind]()})
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            eps = DpEventAccountant(relation).compose(bad).get_epsilon(1e-6)
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        if isinstance(exc, UnsupportedEventError) and name == "SampledWithReplacementDpEvent":
            return  # refused whatever its fields hold (no bound dpacct can certify)
        assert f"event.{field}" in msg, f"{name}.{field}={kind}: does not name the field: {msg}"
        assert "np.float" not in msg and "np.int" not in msg, msg
        return
    except Exception as exc:  # OverflowError, ZeroDivisionError, IndexError, ...
        pytest.fail(f"{name}.{field}={kind} raised {type(exc).__name__}: {exc}")
    assert kind in MAY_ACCEPT | FIELD_ACCEPTS.get((name, field), set()), (
        f"{name}.{field}={kind} was accepted (epsilon {eps!r})"
    )
    assert isinstance(eps, float) and eps >= 0.0, f"{name}.{field}={kind}: epsilon {eps!r}"
    if kind == "0" and (name, field) in AT_ZERO:
        assert eps == AT_ZERO[(name, field)], f"{name}.{field}=0: epsilon {eps!r}"
    if kind == "inf" and field in ("rho", "epsilon"):
        assert eps == math.inf, f"{name}.{field}=inf: epsilon {eps!r}"
    if kind in ("5e-324", "1e-300") and AT_ZERO.get((name, field)) == math.inf:
        # (almost) no noise: never a small epsilon (a mixture at sigma 1e-200 gave 0)
        assert eps > 1e6, f"{name}.{field}={kind}: epsilon {eps!r}"


@needs_dp_accounting
def test_every_event_field_is_fuzzed():
    """Every field of every event class of the installed dp_accounting is in EVENTS."""
    classes = {
        c.__name__: c
        for c in vars(de).values()
        if isinstance(c, type) and issubclass(c, de.DpEvent) and attr.has(c)
    }
    fielded = {n for n, c in classes.items() if any(
        f.name not in ("event", "events") for f in attr.fields(c)
    )}
    assert fielded <= set(EVENTS), sorted(fielded - set(EVENTS))
    assert len(EVENT_FIELDS) >= 30


@needs_dp_accounting
@pytest.mark.parametrize(("name", "field"), EVENT_FIELDS, ids=[f"{n}-{f}" for n, f in EVENT_FIELDS])
def test_bad_event_field_is_refused_clearly(name, field):
    failures = []
    for kind in EVENT_VALUES:
        try:
            check_event_field(name, field, kind)
        except (AssertionError, pytest.fail.Exception) as exc:
            failures.append(str(exc).splitlines()[0])
    assert not failures, "\n".join(failures)


@needs_dp_accounting
@pytest.mark.parametrize(
    ("call", "param"),
    [
        (lambda: de.ZCDpEvent(np.array([0.5, 0.6]), 0), "event.rho"),
        (lambda: de.MixtureOfGaussiansDpEvent(1, None, None), "event.sensitivities"),
        (lambda: de.MixtureOfGaussiansDpEvent(1, [0, 1], None), "event.sampling_probs"),
        (lambda: de.MixtureOfGaussiansDpEvent(1, [0, 1], [0.5, 0.6]), "event.sampling_probs"),
        (lambda: de.MixtureOfGaussiansDpEvent(1, [0, 10**400], [0.5, 0.5]), "sensitivities[1]"),
        (lambda: dpa.GaussianDpEvent(10**400), "event.noise_multiplier"),
        (
            lambda: de.SingleEpochTreeAggregationDpEvent(1.0, np.ones((2, 2))),
            "event.step_counts",
        ),
    ],
    ids=["zcdp-array", "mixture-none", "mixture-probs-none", "mixture-sum", "mixture-huge",
         "gaussian-huge", "tree-2d"],
)
def test_reported_event_messages_name_the_field(call, param):
    with pytest.raises((ValueError, TypeError)) as info:
        DpEventAccountant().compose(call())
    assert param in str(info.value), str(info.value)


@needs_dp_accounting
def test_event_counts_accept_integral_floats_as_every_count_does():
    """check_count's convention (2.0 is the count 2) holds for every count field of an
    event, and dp_accounting's own ledger (which wants an int) is fed the count read."""
    inner = dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0))
    want = DpEventAccountant().compose(dpa.SelfComposedDpEvent(inner, 2)).get_epsilon(1e-5)
    acct = DpEventAccountant().compose(dpa.SelfComposedDpEvent(inner, 2.0))
    assert acct.get_epsilon(1e-5) == want
    assert acct.ledger == dpa.SelfComposedDpEvent(inner, 2)
    assert DpEventAccountant().compose(inner, 2.0).get_epsilon(1e-5) == want
    tree = [dpa.SingleEpochTreeAggregationDpEvent(1.0, c) for c in (8, 8.0, [8.0], np.array([8]))]
    eps = {DpEventAccountant().compose(t).get_epsilon(1e-5) for t in tree}
    assert len(eps) == 1
    wor = [dpa.SampledWithoutReplacementDpEvent(n, m, dpa.GaussianDpEvent(2.0))
           for n, m in ((100, 10), (100.0, 10.0))]
    rel = dpa.NeighboringRelation.REPLACE_ONE
    assert len({DpEventAccountant(rel).compose(w).get_epsilon(1e-5) for w in wor}) == 1
    # a count of 0 records nothing (dp_accounting's builder refuses 0; dpacct documents it)
    empty = DpEventAccountant().compose(inner, 0).compose(dpa.SelfComposedDpEvent(inner, 0))
    assert empty.get_epsilon(1e-5) == 0.0 and empty.ledger == dpa.NoOpDpEvent()


@needs_dp_accounting
def test_get_delta_at_the_largest_float():
    """``get_delta(1e308)`` raised OverflowError in mpmath's erfc; the answer is the least
    positive float (an upper bound: delta <= Phi(-40) < 1e-349 there) and 0 never."""
    acct = DpEventAccountant().compose(dpa.GaussianDpEvent(1.0), 3)
    for eps in (1e308, 1e200, 1e20):
        assert acct.get_delta(eps) == math.nextafter(0.0, 1.0)
    assert math.isinf(DpEventAccountant().compose(dpa.GaussianDpEvent(1.0)).get_epsilon(0))


# ------------------------------------ counts of the random-allocation family (ws-lower)
def test_random_allocation_counts_read_integral_floats_as_counts():
    """``random_allocation(G, 2.0)`` keeps the count 2 as an int, as check_count does;
    ``samples=2.0`` is 2 samples, and an upper confidence end from 2 samples is not 0."""
    assert type(A.random_allocation(G, 2.0).steps) is int
    got = A.random_allocation_delta_mc(1.0, 10, 1.0, samples=2.0, rng=np.random.default_rng(0))
    want = A.random_allocation_delta_mc(1.0, 10, 1.0, samples=2, rng=np.random.default_rng(0))
    assert got == want and got[2] > 0.0


@pytest.mark.parametrize(
    ("call", "param"),
    [
        (lambda: M.Transformation(abs, 1.0, "l2").then_gaussian(1e308).epsilon(1e-5), "scale"),
        (lambda: M.Transformation(abs, 1.0, "l2").then_gaussian(5e-324).epsilon(1e-5), "scale"),
        (lambda: M.MST(COLS, rho=1e308).epsilon(1e-6), "rho"),
        (lambda: M.MST(COLS, rho=5e-324).epsilon(1e-6), "rho"),
    ],
    ids=["then_gaussian-1e308", "then_gaussian-tiny", "MST-1e308", "MST-tiny"],
)
def test_extreme_noise_scales_are_refused_before_a_query_divides_by_zero(call, param):
    """``then_gaussian(1e308)`` and ``MST(rho=1e308)`` were built, and their epsilon then
    raised ZeroDivisionError (the inverse square of the noise underflowed to 0); the
    tiny ends raised a ValueError naming ``sigma``, which the caller never passed."""
    with pytest.raises(ValueError, match=NAMED.format(param)):
        call()


def test_extreme_but_legal_noise_scales_still_answer():
    assert M.Transformation(abs, 1.0, "l2").then_gaussian(1e150).epsilon(1e-5) == 0.0
    assert 0.0 < M.MST(COLS, rho=1e-300).epsilon(1e-6) < 1e-10


@needs_dp_accounting
def test_runs_beyond_int64_are_refused_when_composed():
    """2**40 x 2**40 runs were recorded, and the next get_epsilon named a ``counts[0]``
    the user never passed; now the compose refuses, naming the count, and records nothing."""
    g = dpa.GaussianDpEvent(1.0)
    nested = dpa.SelfComposedDpEvent(dpa.SelfComposedDpEvent(g, 2**40), 2**40)
    acct = DpEventAccountant()
    with pytest.raises(ValueError, match=r"event\.count=1099511627776 makes"):
        acct.compose(nested)
    with pytest.raises(ValueError, match=r"^count=1099511627776 makes"):
        acct.compose(dpa.SelfComposedDpEvent(g, 2**40), 2**40)
    acct.compose(g, 2**62)
    with pytest.raises(ValueError, match=r"^count=4611686018427387904 makes 9223372036854775808"):
        acct.compose(g, 2**62)
    assert acct.ledger == dpa.SelfComposedDpEvent(g, 2**62) and not acct.supports(nested)


def test_a_mixture_with_almost_no_noise_is_not_private():
    """With probability 1/2 the record shifts the output by 1 under noise sigma: delta(eps)
    >= 1/2 at every finite eps once sigma is tiny, so epsilon at delta = 1e-6 is enormous;
    where (1/sigma)^2 leaves the float range the mechanism is refused, naming sigma (it
    answered epsilon 0 at sigma 1e-200)."""
    assert A.MixtureOfGaussiansMechanism(1e-150, [0.0, 1.0], [0.5, 0.5]).epsilon(1e-6) > 1e6
    with pytest.raises(ValueError, match="sigma"):
        A.MixtureOfGaussiansMechanism(1e-200, [0.0, 1.0], [0.5, 0.5])
