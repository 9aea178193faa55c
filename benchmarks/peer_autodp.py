"""Runners of autodp: RDP composition and its calibrator (registered on import; see
``benchmarks/peers.py``)."""

from __future__ import annotations

import warnings

from benchmarks.peer_registry import (
    RunnerResult,
    Unavailable,
    Workload,
    register,
)

# --------------------------------------------------------------------------- autodp

_AUTODP_IMPORTS = ("autodp.mechanism_zoo", "autodp.transformer_zoo", "autodp.calibrator_zoo")


@register(
    "autodp.rdp",
    peer="autodp",
    method="RDP composition (mechanism_zoo)",
    kinds=("dpsgd", "laplace", "rr"),
    imports=_AUTODP_IMPORTS,
)
def autodp_rdp(workload: Workload) -> RunnerResult:
    """autodp RDP accounting and its RDP -> (epsilon, delta) conversion."""
    from autodp import mechanism_zoo, transformer_zoo

    kind = workload["kind"]
    if kind == "dpsgd":
        mech = mechanism_zoo.NoisySGD_Mechanism(
            prob=workload["sample_rate"],
            sigma=workload["noise_multiplier"],
            niter=workload["steps"],
            PoissonSampling=True,
        )
    elif kind == "laplace":
        mech = transformer_zoo.Composition()(
            [mechanism_zoo.LaplaceMechanism(b=workload["b"])], [workload["count"]]
        )
    elif kind == "rr":
        if workload.get("k", 2) != 2:
            raise Unavailable("autodp's RandresponseMechanism is binary")
        mech = transformer_zoo.Composition()(
            [mechanism_zoo.RandresponseMechanism(p=workload["p"])], [workload["count"]]
        )
    else:
        raise Unavailable(f"kind {kind!r}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # scipy optimiser noise
        eps = mech.get_approxDP(workload["delta"])
    return {"epsilon": eps, "upper": eps}


@register(
    "autodp.rdp_calibrate",
    peer="autodp",
    method="generalized_eps_delta_calibrator + SubsampleGaussianMechanism (RDP)",
    kinds=("calibrate",),
    imports=_AUTODP_IMPORTS,
)
def autodp_rdp_calibrate(workload: Workload) -> RunnerResult:
    """autodp noise-multiplier search (bounded minimisation of |eps - target|)."""
    from autodp import calibrator_zoo, mechanism_zoo

    params = {"prob": workload["sample_rate"], "sigma": None, "coeff": workload["steps"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mech = calibrator_zoo.generalized_eps_delta_calibrator()(
            mechanism_zoo.SubsampleGaussianMechanism,
            workload["target_epsilon"],
            workload["delta"],
            [0.3, 20.0],
            params=params,
            para_name="sigma",
            name="SubsampledGaussian",
        )
    return {
        "sigma": mech.params["sigma"],
        "note": "minimize_scalar(|eps - target|) on [0.3, 20]: may land on either side",
    }
