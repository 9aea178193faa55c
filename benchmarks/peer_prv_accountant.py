"""Runners of Microsoft's prv_accountant (registered on import; see
``benchmarks/peers.py``)."""

from __future__ import annotations

import math
import warnings
from typing import Any

from benchmarks.peer_registry import (
    RunnerResult,
    Unavailable,
    Workload,
    register,
)

# --------------------------------------------------------------------------- prv_accountant

_PRV_MAX_GRID_POINTS = 3e7


def _prv_mechanism(workload: Workload) -> tuple[Any, int]:
    """Return ``(privacy random variable, count)`` of prv_accountant."""
    import prv_accountant as pa

    kind = workload["kind"]
    if kind == "dpsgd":
        prv = pa.PoissonSubsampledGaussianMechanism(
            sampling_probability=workload["sample_rate"],
            noise_multiplier=workload["noise_multiplier"],
        )
        return prv, workload["steps"]
    if kind == "laplace":
        # Privacy loss of Laplace(b) at sensitivity 1 lives on [-1/b, 1/b].
        return pa.LaplaceMechanism(mu=1.0 / workload["b"]), workload["count"]
    if kind == "rr":
        if workload.get("k", 2) != 2:
            raise Unavailable("prv_accountant has no k-ary randomized response")
        # Binary RR is the extremal eps0-DP mechanism: its privacy loss is +-eps0
        # with probabilities p and 1 - p, exactly prv_accountant's PureDPMechanism.
        p = workload["p"]
        return pa.PureDPMechanism(eps=math.log(p / (1.0 - p))), workload["count"]
    raise Unavailable(f"kind {kind!r}")


def _prv_epsilon(
    workload: Workload, eps_error: float, eps_max: float | None = None
) -> RunnerResult:
    import numpy as np
    import prv_accountant as pa
    from prv_accountant.accountant import compute_safe_domain_size

    prv, count = _prv_mechanism(workload)
    delta = workload["delta"]
    delta_error = delta / 1000
    # Refuse grids that would not fit in memory (the accountant's own mesh rule,
    # Gopi et al. 2021, Theorem 5.5) instead of being killed part-way.
    half_width = eps_max or compute_safe_domain_size([prv], [count], eps_error, delta_error)
    mesh = eps_error / np.sqrt(count / 2 * np.log(12 / delta_error))
    points = 2 * half_width / mesh
    if points > _PRV_MAX_GRID_POINTS:
        raise Unavailable(
            f"grid of {points:.2g} points (> {_PRV_MAX_GRID_POINTS:.0g}) not attempted: "
            "it would need tens of GiB"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # eps_max assumption warning
        acct = pa.PRVAccountant(
            prvs=prv,
            max_self_compositions=count,
            eps_error=eps_error,
            delta_error=delta_error,
            eps_max=eps_max,
        )
    lower, estimate, upper = acct.compute_epsilon(delta=delta, num_self_compositions=count)
    note = f"delta_error {delta_error:g}, domain [-{half_width:.4g}, {half_width:.4g}]"
    if workload["kind"] == "rr":
        max_loss = count * math.log(workload["p"] / (1.0 - workload["p"]))
        if max_loss > half_width:
            note += (
                f"; domain cuts off losses up to {max_loss:.4g} (PureDPMechanism.rdp "
                "underestimates RDP): bounds NOT valid"
            )
    return {"epsilon": estimate, "lower": lower, "upper": upper, "note": note}


@register(
    "prv_accountant.prv_0.01",
    peer="prv_accountant",
    method="PRVAccountant, eps_error 0.01",
    kinds=("dpsgd", "laplace", "rr"),
    imports=("prv_accountant", "numpy"),
)
def prv_coarse(workload: Workload) -> RunnerResult:
    """prv_accountant at eps_error 0.01, delta_error delta/1000."""
    return _prv_epsilon(workload, 0.01)


@register(
    "prv_accountant.prv_0.001",
    peer="prv_accountant",
    method="PRVAccountant, eps_error 0.001",
    kinds=("dpsgd", "laplace", "rr"),
    imports=("prv_accountant", "numpy"),
    precise=True,
)
def prv_fine(workload: Workload) -> RunnerResult:
    """prv_accountant at eps_error 0.001, delta_error delta/1000."""
    return _prv_epsilon(workload, 0.001)


@register(
    "prv_accountant.prv_0.01_epsmax",
    peer="prv_accountant",
    method="PRVAccountant, eps_error 0.01, eps_max = count*eps0 + 3",
    kinds=("rr",),
    imports=("prv_accountant", "numpy"),
)
def prv_coarse_epsmax(workload: Workload) -> RunnerResult:
    """prv_accountant on RR with a domain wide enough for the pure-DP worst case."""
    p = workload["p"]
    return _prv_epsilon(workload, 0.01, eps_max=workload["count"] * math.log(p / (1 - p)) + 3)
