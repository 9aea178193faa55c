"""Runners of Google's dp_accounting: PLD (pessimistic, optimistic, fine), RDP and
calibration (registered on import; see ``benchmarks/peers.py``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from benchmarks.peer_registry import (
    RunnerResult,
    Unavailable,
    Workload,
    _rr_noise_parameter,
    bandmf_as_dpsgd,
    register,
    schedule_of,
)


def _dpa_event(workload: Workload) -> tuple[Any, int, Any]:
    """Return ``(event, count, neighboring_relation)`` of dp_accounting."""
    import dp_accounting as dpa

    rel = dpa.NeighboringRelation
    if workload["kind"] == "bandmf":
        workload = bandmf_as_dpsgd(workload)
    kind = workload["kind"]
    if kind == "dpsgd":
        event = dpa.PoissonSampledDpEvent(
            workload["sample_rate"], dpa.GaussianDpEvent(workload["noise_multiplier"])
        )
        return event, workload["steps"], rel.ADD_OR_REMOVE_ONE
    if kind in ("ledger", "schedule"):
        phases = workload["schedule"] if kind == "ledger" else schedule_of(workload)
        parts = [
            dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(s)), n)
            for s, q, n in phases
        ]
        return dpa.ComposedDpEvent(parts), 1, rel.ADD_OR_REMOVE_ONE
    if kind == "laplace":
        return dpa.LaplaceDpEvent(workload["b"]), workload["count"], rel.ADD_OR_REMOVE_ONE
    if kind == "rr":
        k = workload.get("k", 2)
        event = dpa.RandomizedResponseDpEvent(
            noise_parameter=_rr_noise_parameter(workload["p"], k), num_buckets=k
        )
        return event, workload["count"], rel.REPLACE_ONE
    raise Unavailable(f"no dp_accounting event for kind {kind!r}")


def _dpsgd_event_factory(workload: Workload) -> Callable[[float], Any]:
    """Noise multiplier -> dp_accounting event of the whole DP-SGD run."""
    import dp_accounting as dpa

    q, steps = workload["sample_rate"], workload["steps"]

    def make_event(sigma: float) -> Any:
        return dpa.SelfComposedDpEvent(
            dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), steps
        )

    return make_event


# --------------------------------------------------------------------------- dp_accounting


def _dpa_pld_pessimistic(workload: Workload, interval: float) -> RunnerResult:
    from dp_accounting.pld import PLDAccountant

    event, count, rel = _dpa_event(workload)
    note = ""
    if workload["kind"] == "rr":
        # PLDAccountant composes a RandomizedResponseDpEvent once whatever the
        # count (see runner dp_accounting.pld_count); list the copies instead.
        import dp_accounting as dpa

        event, count = dpa.ComposedDpEvent([event] * count), 1
        note = (
            "RR passed as ComposedDpEvent([rr] * count), since PLDAccountant ignores the "
            "count of an RR event (see dp_accounting.pld_count)"
        )
    acct = PLDAccountant(neighboring_relation=rel, value_discretization_interval=interval)
    acct.compose(event, count)
    eps = acct.get_epsilon(workload["delta"])
    return {"epsilon": eps, "upper": eps, "note": note}


def _dpa_pld_optimistic(workload: Workload, interval: float) -> RunnerResult:
    from dp_accounting import NeighboringRelation as Rel
    from dp_accounting.pld import privacy_loss_distribution as pld

    if workload["kind"] == "bandmf":
        workload = bandmf_as_dpsgd(workload)
    kind = workload["kind"]
    if kind == "dpsgd":
        single = pld.from_gaussian_mechanism(
            standard_deviation=workload["noise_multiplier"],
            sampling_prob=workload["sample_rate"],
            pessimistic_estimate=False,
            value_discretization_interval=interval,
            use_connect_dots=False,
            neighboring_relation=Rel.ADD_OR_REMOVE_ONE,
        )
        count = workload["steps"]
    elif kind == "laplace":
        single = pld.from_laplace_mechanism(
            parameter=workload["b"],
            pessimistic_estimate=False,
            value_discretization_interval=interval,
            use_connect_dots=False,
        )
        count = workload["count"]
    elif kind == "rr":
        k = workload.get("k", 2)
        single = pld.from_randomized_response(
            noise_parameter=_rr_noise_parameter(workload["p"], k),
            num_buckets=k,
            pessimistic_estimate=False,
            value_discretization_interval=interval,
            neighboring_relation=Rel.REPLACE_ONE,
        )
        count = workload["count"]
    else:
        raise Unavailable(f"kind {kind!r}")
    eps = single.self_compose(count).get_epsilon_for_delta(workload["delta"])
    return {
        "epsilon": eps,
        "lower": eps,
        "note": "optimistic rounding (privacy buckets; connect-the-dots has no optimistic "
        "mode): a lower estimate, loosened by up to count x interval",
    }


@register(
    "dp_accounting.pld",
    peer="dp_accounting",
    method="PLDAccountant, pessimistic, interval 1e-4 (default)",
    kinds=("dpsgd", "laplace", "rr", "ledger", "schedule", "bandmf"),
    imports=("dp_accounting",),
)
def dpa_pld(workload: Workload) -> RunnerResult:
    """dp_accounting PLD accountant at its default discretisation."""
    return _dpa_pld_pessimistic(workload, 1e-4)


@register(
    "dp_accounting.pld_optimistic",
    peer="dp_accounting",
    method="PLD optimistic, interval 1e-4",
    kinds=("dpsgd", "laplace", "rr", "bandmf"),
    imports=("dp_accounting",),
)
def dpa_pld_optimistic(workload: Workload) -> RunnerResult:
    """dp_accounting PLD with optimistic rounding (lower estimate), interval 1e-4."""
    return _dpa_pld_optimistic(workload, 1e-4)


@register(
    "dp_accounting.pld_fine",
    peer="dp_accounting",
    method="PLDAccountant, pessimistic, interval 1e-5",
    kinds=("dpsgd", "laplace", "rr", "bandmf"),
    imports=("dp_accounting",),
    precise=True,
)
def dpa_pld_fine(workload: Workload) -> RunnerResult:
    """dp_accounting PLD accountant at a ten times finer discretisation."""
    return _dpa_pld_pessimistic(workload, 1e-5)


@register(
    "dp_accounting.pld_fine_optimistic",
    peer="dp_accounting",
    method="PLD optimistic, interval 1e-5",
    kinds=("dpsgd", "laplace", "rr", "bandmf"),
    imports=("dp_accounting",),
    precise=True,
)
def dpa_pld_fine_optimistic(workload: Workload) -> RunnerResult:
    """dp_accounting PLD with optimistic rounding (lower estimate), interval 1e-5."""
    return _dpa_pld_optimistic(workload, 1e-5)


@register(
    "dp_accounting.pld_count",
    peer="dp_accounting",
    method="PLDAccountant.compose(rr, count) as documented",
    kinds=("rr",),
    imports=("dp_accounting",),
)
def dpa_pld_count(workload: Workload) -> RunnerResult:
    """dp_accounting PLD accountant given the repetition count directly.

    Shows whether ``PLDAccountant`` honours the count of a randomized-response
    event (``compose(event, count)``, equivalently ``SelfComposedDpEvent``).
    """
    from dp_accounting.pld import PLDAccountant

    event, count, rel = _dpa_event(workload)
    acct = PLDAccountant(neighboring_relation=rel)
    acct.compose(event, count)
    eps = acct.get_epsilon(workload["delta"])
    single = PLDAccountant(neighboring_relation=rel)
    single.compose(event)
    eps_single = single.get_epsilon(workload["delta"])
    verdict = "IGNORES the count" if math.isclose(eps, eps_single, rel_tol=1e-9) else "uses it"
    return {
        "epsilon": eps,
        "upper": eps,
        "note": f"compose(rr, {count}) gives {eps:.6g}; one RR alone gives {eps_single:.6g}: "
        f"PLDAccountant {verdict} (NOT a valid bound)",
    }


@register(
    "dp_accounting.rdp",
    peer="dp_accounting",
    method="RdpAccountant, default orders",
    kinds=("dpsgd", "laplace", "rr", "ledger", "schedule", "bandmf"),
    imports=("dp_accounting",),
)
def dpa_rdp(workload: Workload) -> RunnerResult:
    """dp_accounting RDP accountant with its default orders."""
    from dp_accounting.rdp import RdpAccountant

    event, count, rel = _dpa_event(workload)
    acct = RdpAccountant(neighboring_relation=rel)
    acct.compose(event, count)
    eps, order = acct.get_epsilon_and_optimal_order(workload["delta"])
    return {"epsilon": eps, "upper": eps, "note": f"optimal order {order:g}"}


def _dpa_calibrate(workload: Workload, make_accountant: Callable[[], Any]) -> RunnerResult:
    import dp_accounting as dpa

    sigma = dpa.calibrate_dp_mechanism(
        make_accountant,
        _dpsgd_event_factory(workload),
        workload["target_epsilon"],
        workload["delta"],
        bracket_interval=dpa.LowerEndpointAndGuess(0.5, 1.0),
    )
    return {"sigma": sigma, "note": "calibrate_dp_mechanism, tol 1e-6, bracket from [0.5, 1]"}


@register(
    "dp_accounting.pld_calibrate",
    peer="dp_accounting",
    method="calibrate_dp_mechanism + PLDAccountant (1e-4)",
    kinds=("calibrate",),
    imports=("dp_accounting",),
)
def dpa_pld_calibrate(workload: Workload) -> RunnerResult:
    """Noise multiplier from dp_accounting's calibrator with the PLD accountant."""
    from dp_accounting.pld import PLDAccountant

    return _dpa_calibrate(workload, PLDAccountant)


@register(
    "dp_accounting.rdp_calibrate",
    peer="dp_accounting",
    method="calibrate_dp_mechanism + RdpAccountant",
    kinds=("calibrate",),
    imports=("dp_accounting",),
)
def dpa_rdp_calibrate(workload: Workload) -> RunnerResult:
    """Noise multiplier from dp_accounting's calibrator with the RDP accountant."""
    from dp_accounting.rdp import RdpAccountant

    return _dpa_calibrate(workload, RdpAccountant)
