"""Runners of Opacus's accountants (RDP, PRV, GDP) and its noise search (registered on
import; see ``benchmarks/peers.py``)."""

from __future__ import annotations

import warnings

from benchmarks.peer_registry import (
    RunnerResult,
    Workload,
    register,
    schedule_of,
)

# --------------------------------------------------------------------------- opacus


def _opacus_epsilon(workload: Workload, name: str) -> RunnerResult:
    from opacus.accountants import GaussianAccountant, PRVAccountant, RDPAccountant

    cls = {"rdp": RDPAccountant, "prv": PRVAccountant, "gdp": GaussianAccountant}[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # GDP "experimental" warning
        acct = cls()
    if workload["kind"] == "ledger":
        acct.history = [(s, q, n) for s, q, n in workload["schedule"]]
    elif workload["kind"] == "schedule":
        acct.history = schedule_of(workload)
    else:
        acct.history = [(workload["noise_multiplier"], workload["sample_rate"], workload["steps"])]
    eps = acct.get_epsilon(delta=workload["delta"])
    if name == "gdp":
        return {"epsilon": eps, "note": "CLT approximation (Dong et al.); not a bound"}
    if name == "prv":
        note = "upper end of the PRV bracket, eps_error 0.01"
        return {"epsilon": eps, "upper": eps, "note": note}
    return {"epsilon": eps, "upper": eps}


@register(
    "opacus.rdp",
    peer="opacus",
    method="accountants.RDPAccountant",
    kinds=("dpsgd", "ledger", "schedule"),
    imports=("opacus.accountants",),
)
def opacus_rdp(workload: Workload) -> RunnerResult:
    """opacus RDP accountant (default orders)."""
    return _opacus_epsilon(workload, "rdp")


@register(
    "opacus.prv",
    peer="opacus",
    method="accountants.PRVAccountant (eps_error 0.01)",
    kinds=("dpsgd", "ledger"),
    imports=("opacus.accountants",),
)
def opacus_prv(workload: Workload) -> RunnerResult:
    """opacus PRV accountant at its defaults."""
    return _opacus_epsilon(workload, "prv")


@register(
    "opacus.gdp",
    peer="opacus",
    method="accountants.GaussianAccountant (GDP CLT)",
    kinds=("dpsgd",),
    imports=("opacus.accountants",),
)
def opacus_gdp(workload: Workload) -> RunnerResult:
    """opacus Gaussian-DP accountant (central-limit approximation)."""
    return _opacus_epsilon(workload, "gdp")


def _opacus_calibrate(workload: Workload, accountant: str) -> RunnerResult:
    from opacus.accountants.utils import get_noise_multiplier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        sigma = get_noise_multiplier(
            target_epsilon=workload["target_epsilon"],
            target_delta=workload["delta"],
            sample_rate=workload["sample_rate"],
            steps=workload["steps"],
            accountant=accountant,
        )
    return {"sigma": sigma, "note": "bisection, epsilon_tolerance 0.01 (default)"}


@register(
    "opacus.rdp_calibrate",
    peer="opacus",
    method="get_noise_multiplier(accountant='rdp')",
    kinds=("calibrate",),
    imports=("opacus.accountants", "opacus.accountants.utils"),
)
def opacus_rdp_calibrate(workload: Workload) -> RunnerResult:
    """opacus noise-multiplier search with the RDP accountant."""
    return _opacus_calibrate(workload, "rdp")


@register(
    "opacus.prv_calibrate",
    peer="opacus",
    method="get_noise_multiplier(accountant='prv')",
    kinds=("calibrate",),
    imports=("opacus.accountants", "opacus.accountants.utils"),
)
def opacus_prv_calibrate(workload: Workload) -> RunnerResult:
    """opacus noise-multiplier search with the PRV accountant."""
    return _opacus_calibrate(workload, "prv")


@register(
    "opacus.gdp_calibrate",
    peer="opacus",
    method="get_noise_multiplier(accountant='gdp')",
    kinds=("calibrate",),
    imports=("opacus.accountants", "opacus.accountants.utils"),
)
def opacus_gdp_calibrate(workload: Workload) -> RunnerResult:
    """opacus noise-multiplier search with the GDP (CLT) accountant."""
    return _opacus_calibrate(workload, "gdp")
