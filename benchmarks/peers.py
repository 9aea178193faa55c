"""Run peer differential-privacy accounting libraries on standard workloads.

Every measurement runs in a fresh Python subprocess, one per (runner, workload),
so that imports, caches and memory never leak from one measurement into the next.
Inside the subprocess the runner's modules are imported first (untimed), then the
runner is called up to ``repeats`` times; ``seconds`` is the best of those calls
and the peak memory is taken on the first call.

A *runner* is a plain function ``runner(workload) -> dict`` that returns any of
the keys ``epsilon``, ``lower``, ``upper``, ``sigma`` and ``note``. Runners are
registered with :func:`register` under a name ``"<peer>.<method>"``; the same
harness will later measure this project's own accountants, either by registering
them here or by passing ``"package.module:function"`` as the runner name.

Examples
--------
From the repository root::

    python benchmarks/peers.py --list
    python benchmarks/peers.py --run dp_accounting.rdp --workload dpsgd_q0.01
    python benchmarks/peers.py --table --timeout 120 --json benchmarks/results/peers.json

The file is run by path rather than with ``python -m benchmarks.peers``: opacus
installs a top-level package that is also called ``benchmarks`` and, as long as
this directory has no ``__init__.py``, that package shadows this one.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import importlib
import importlib.metadata
import json
import math
import os
import platform
import subprocess
import sys
import time
import traceback
import tracemalloc
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
"""Repository root; put on ``PYTHONPATH`` of every measurement subprocess."""

Workload = dict[str, Any]
RunnerResult = dict[str, Any]
Runner = Callable[[Workload], RunnerResult]

DEFAULT_TIMEOUT = 120.0
#: calls per measurement (the first includes warm-up); this machine's timings vary by
#: up to 25 % between runs, and the best of five is steadier than the best of three
DEFAULT_REPEATS = 5
DEFAULT_REPEAT_BUDGET = 30.0
DEFAULT_MEM_LIMIT_MB = 8192

WORKLOADS: dict[str, Workload] = {
    "dpsgd_q0.01": {
        "kind": "dpsgd",
        "sample_rate": 0.01,
        "noise_multiplier": 1.0,
        "steps": 10_000,
        "delta": 1e-5,
    },
    "dpsgd_mnist60": {
        "kind": "dpsgd",
        "sample_rate": 256 / 60_000,
        "noise_multiplier": 1.1,
        "steps": 14_063,
        "delta": 1e-5,
    },
    "dpsgd_1e6": {
        "kind": "dpsgd",
        "sample_rate": 0.001,
        "noise_multiplier": 0.8,
        "steps": 1_000_000,
        "delta": 1e-6,
    },
    "laplace100": {"kind": "laplace", "b": 10.0, "count": 100, "delta": 1e-6},
    "ledger_100k": {
        "kind": "ledger",
        # (noise_multiplier, sample_rate, steps): 100 000 steps, three schedule changes
        "schedule": [
            [1.0, 0.01, 25_000],
            [1.2, 0.01, 25_000],
            [1.2, 0.02, 25_000],
            [0.9, 0.02, 25_000],
        ],
        "delta": 1e-5,
    },
    "rr50": {"kind": "rr", "p": 0.75, "k": 2, "count": 50, "delta": 1e-6},
    # schedules that change shape (see schedule_of): random phases, a noise scheduler
    "schedule_phases1000": {
        "kind": "schedule",
        "generator": "random_phases",
        "phases": 1000,
        "steps_per_phase": 10,
        "sigma_range": [0.8, 2.0],
        "q_range": [0.001, 0.02],
        "seed": 0,
        "delta": 1e-5,
    },
    "schedule_decay10k": {
        "kind": "schedule",
        "generator": "exponential_noise",
        # gamma = 0.999 per step would take sigma from 1.5 to 6.8e-5 over 10 000 steps
        # (epsilon ~ 6e10 by RDP): 0.9999 keeps the run meaningful (sigma 1.5 -> 0.55)
        "sigma": 1.5,
        "gamma": 0.9999,
        "sample_rate": 0.01,
        "steps": 10_000,
        "delta": 1e-5,
    },
    **{
        f"calibrate_eps{eps:g}": {
            "kind": "calibrate",
            "target_epsilon": float(eps),
            "delta": 1e-5,
            "sample_rate": 0.01,
            "steps": 10_000,
        }
        for eps in (1, 3, 8)
    },
}
"""Standard workloads, by name.

Kinds and their keys (all sensitivity-normalised):

- ``dpsgd``: Poisson-subsampled Gaussian, ``sample_rate``, ``noise_multiplier``,
  ``steps``, ``delta``; add/remove-one neighbours.
- ``laplace``: ``count``-fold Laplace mechanism with scale ``b`` per unit of L1
  sensitivity, ``delta``; add/remove-one neighbours.
- ``rr``: ``count``-fold ``k``-ary randomized response answering truthfully with
  probability ``p``, ``delta``; replace-one neighbours.
- ``ledger``: a DP-SGD run whose ``schedule`` changes: a list of
  ``[noise_multiplier, sample_rate, steps]`` segments, ``delta`` (dpacct answers through
  its online accountant, :class:`dpacct.accountant.PrivacyAccountant`).
- ``calibrate``: noise multiplier of the ``dpsgd`` kind that reaches
  ``target_epsilon`` at ``delta`` for ``sample_rate`` and ``steps``.
"""

PEER_DISTRIBUTIONS: dict[str, str] = {
    "dp_accounting": "dp-accounting",
    "prv_accountant": "prv-accountant",
    "opacus": "opacus",
    "autodp": "autodp",
}
"""Peer name -> distribution name, for reporting installed versions."""

RESULT_KEYS = ("epsilon", "lower", "upper", "sigma", "note")


class Unavailable(Exception):
    """Raised by a runner when its peer cannot handle the workload."""


@dataclass(frozen=True)
class RunnerSpec:
    """A registered runner.

    Attributes
    ----------
    name : str
        Registry key, ``"<peer>.<method>"``.
    peer : str
        Library being measured.
    method : str
        Human-readable description of the method and its settings.
    kinds : frozenset of str
        Workload kinds the runner accepts.
    imports : tuple of str
        Modules imported (untimed) before the runner is called.
    func : callable
        ``func(workload) -> dict`` with keys among ``RESULT_KEYS``.
    precise : bool
        True for a peer's non-default, slower high-precision setting: the checks
        compare it with this project's precise answer, not its default one.
    """

    name: str
    peer: str
    method: str
    kinds: frozenset[str]
    imports: tuple[str, ...]
    func: Runner
    precise: bool = False


RUNNERS: dict[str, RunnerSpec] = {}
"""Registry of runners, in registration order (the table's row order)."""


def register(
    name: str,
    *,
    peer: str,
    method: str,
    kinds: Iterable[str],
    imports: Sequence[str] = (),
    precise: bool = False,
) -> Callable[[Runner], Runner]:
    """Return a decorator that adds a runner to :data:`RUNNERS`.

    Parameters
    ----------
    name : str
        Unique registry key, ``"<peer>.<method>"``.
    peer : str
        Library being measured.
    method : str
        Description of the method and its settings, shown in the table.
    kinds : iterable of str
        Workload kinds the runner accepts (see :data:`WORKLOADS`).
    imports : sequence of str, optional
        Modules to import before timing, so import time is excluded.
    precise : bool, optional
        Marks a non-default high-precision setting (see :class:`RunnerSpec`).

    Returns
    -------
    callable
        Decorator returning the runner unchanged.
    """

    def decorator(func: Runner) -> Runner:
        if name in RUNNERS:
            raise ValueError(f"runner {name!r} is already registered")
        RUNNERS[name] = RunnerSpec(
            name=name,
            peer=peer,
            method=method,
            kinds=frozenset(kinds),
            imports=tuple(imports),
            func=func,
            precise=precise,
        )
        return func

    return decorator


# --------------------------------------------------------------------------- helpers


def _rr_noise_parameter(p: float, k: int) -> float:
    """Noise parameter of dp_accounting's randomized response.

    dp_accounting outputs a uniformly random bucket with probability ``noise``
    and the true bucket otherwise, so the truth is reported with probability
    ``1 - noise + noise / k``; solving for ``p`` gives ``noise = (1 - p) k / (k - 1)``.
    """
    return (1.0 - p) * k / (k - 1)


def schedule_of(workload: Workload) -> list[tuple[float, float, int]]:
    """The ``(noise_multiplier, sample_rate, steps)`` phases of a ``schedule`` workload."""
    import numpy as np

    if workload["generator"] == "random_phases":
        rng = np.random.default_rng(workload["seed"])
        n = workload["phases"]
        sig = rng.uniform(*workload["sigma_range"], n)
        q = rng.uniform(*workload["q_range"], n)
        per = workload["steps_per_phase"]
        return [(float(a), float(b), per) for a, b in zip(sig, q, strict=True)]
    if workload["generator"] == "exponential_noise":
        s0, g, q = workload["sigma"], workload["gamma"], workload["sample_rate"]
        return [(s0 * g**t, q, 1) for t in range(workload["steps"])]
    raise ValueError(f"unknown schedule generator {workload['generator']!r}")


def _dpa_event(workload: Workload) -> tuple[Any, int, Any]:
    """Return ``(event, count, neighboring_relation)`` of dp_accounting."""
    import dp_accounting as dpa

    rel = dpa.NeighboringRelation
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
    kinds=("dpsgd", "laplace", "rr", "ledger", "schedule"),
    imports=("dp_accounting",),
)
def dpa_pld(workload: Workload) -> RunnerResult:
    """dp_accounting PLD accountant at its default discretisation."""
    return _dpa_pld_pessimistic(workload, 1e-4)


@register(
    "dp_accounting.pld_optimistic",
    peer="dp_accounting",
    method="PLD optimistic, interval 1e-4",
    kinds=("dpsgd", "laplace", "rr"),
    imports=("dp_accounting",),
)
def dpa_pld_optimistic(workload: Workload) -> RunnerResult:
    """dp_accounting PLD with optimistic rounding (lower estimate), interval 1e-4."""
    return _dpa_pld_optimistic(workload, 1e-4)


@register(
    "dp_accounting.pld_fine",
    peer="dp_accounting",
    method="PLDAccountant, pessimistic, interval 1e-5",
    kinds=("dpsgd", "laplace", "rr"),
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
    kinds=("dpsgd", "laplace", "rr"),
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
    kinds=("dpsgd", "laplace", "rr", "ledger", "schedule"),
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
        acct.history = [
            (workload["noise_multiplier"], workload["sample_rate"], workload["steps"])
        ]
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


# --------------------------------------------------------------------------- child side


def _proc_status_kb(field: str) -> int | None:
    """Read a ``kB`` field of ``/proc/self/status`` (Linux), or None."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak_rss() -> bool:
    """Reset the kernel's resident-set high-water mark (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return False
    return _proc_status_kb("VmHWM") is not None


def _resolve_runner(name: str) -> RunnerSpec:
    """Find a runner by registry name or ``"package.module:function"``."""
    if name in RUNNERS:
        return RUNNERS[name]
    if ":" not in name:
        raise KeyError(f"unknown runner {name!r}; known: {', '.join(RUNNERS)}")
    module_name, attr = name.split(":", 1)
    module = importlib.import_module(module_name)  # may register runners itself
    if name in RUNNERS:
        return RUNNERS[name]
    if attr in RUNNERS:
        return RUNNERS[attr]
    func = getattr(module, attr)
    return RunnerSpec(
        name=name,
        peer=module_name,
        method=attr,
        kinds=frozenset(),
        imports=(module_name,),
        func=func,
    )


def _clean(value: Any) -> Any:
    """Convert numpy scalars to Python numbers for JSON."""
    if value is None or isinstance(value, str | bool | int):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def _warning_messages(caught: Iterable[warnings.WarningMessage]) -> list[str]:
    skip = (DeprecationWarning, PendingDeprecationWarning)
    seen: list[str] = []
    for w in caught:
        if issubclass(w.category, skip):
            continue
        text = f"{w.category.__name__}: {str(w.message)[:200]}"
        if text not in seen:
            seen.append(text)
    return seen[:5]


def run_in_process(
    runner_name: str,
    workload: Workload,
    repeats: int = DEFAULT_REPEATS,
    *,
    repeat_budget: float = DEFAULT_REPEAT_BUDGET,
    memory: str = "rss",
    mem_limit_mb: float | None = DEFAULT_MEM_LIMIT_MB,
) -> dict[str, Any]:
    """Run one measurement in the current process (the subprocess side).

    Parameters
    ----------
    runner_name : str
        Registry name or ``"package.module:function"``.
    workload : dict
        Workload parameters, including ``"kind"``.
    repeats : int, optional
        Maximum number of timed calls.
    repeat_budget : float, optional
        A further call is started only while the calls so far plus the fastest
        call fit within this many seconds.
    memory : {"rss", "tracemalloc"}, optional
        ``"rss"``: increase of the resident-set high-water mark during the first
        call. ``"tracemalloc"``: peak of traced allocations in one extra,
        untimed call.
    mem_limit_mb : float or None, optional
        Address-space limit for this process, so a runaway grid fails with
        ``MemoryError`` instead of invoking the system's OOM killer.

    Returns
    -------
    dict
        Measurement record (see :func:`measure`).
    """
    record: dict[str, Any] = {
        "runner": runner_name,
        "workload": workload.get("name"),
        "status": "ok",
        **dict.fromkeys(RESULT_KEYS),
        "seconds": None,
        "seconds_all": [],
        "import_seconds": None,
        "peak_mb": None,
        "peak_method": None,
        "warnings": [],
    }
    if mem_limit_mb:
        with contextlib.suppress(ImportError, ValueError, OSError):
            import resource

            limit = int(mem_limit_mb * 2**20)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        spec = _resolve_runner(runner_name)
    except (ImportError, AttributeError, KeyError) as exc:
        record.update(status="unavailable", error=f"{type(exc).__name__}: {exc}")
        return record
    record.update(peer=spec.peer, method=spec.method)
    if spec.kinds and workload.get("kind") not in spec.kinds:
        record.update(status="unavailable", error=f"kind {workload.get('kind')!r} unsupported")
        return record

    start = time.perf_counter()
    try:
        for module in spec.imports:
            importlib.import_module(module)
    except ImportError as exc:
        record.update(status="unavailable", error=f"{type(exc).__name__}: {exc}")
        return record
    record["import_seconds"] = time.perf_counter() - start

    times: list[float] = []
    result: RunnerResult | None = None
    rss_before: int | None = None
    reset = False
    try:
        with contextlib.redirect_stdout(sys.stderr), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            while len(times) < max(1, repeats):
                if times and sum(times) + min(times) > repeat_budget:
                    break
                first = not times
                if first and memory == "rss":
                    rss_before = _proc_status_kb("VmRSS")
                    reset = _reset_peak_rss()
                t0 = time.perf_counter()
                out = spec.func(dict(workload))
                times.append(time.perf_counter() - t0)
                if first:
                    result = out
                    if memory == "rss" and rss_before is not None:
                        if reset:
                            peak_kb = _proc_status_kb("VmHWM") or rss_before
                            record["peak_method"] = "rss: VmHWM reset before the first call"
                        else:
                            import resource

                            peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                            record["peak_method"] = "rss: ru_maxrss (import peak may hide it)"
                        record["peak_mb"] = max(0, peak_kb - rss_before) / 1024
            if memory == "tracemalloc":
                tracemalloc.start()
                tracemalloc.reset_peak()
                spec.func(dict(workload))
                record["peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
                tracemalloc.stop()
                record["peak_method"] = "tracemalloc: extra untimed call"
            record["warnings"] = _warning_messages(caught)
    except Unavailable as exc:
        record.update(status="unavailable", error=str(exc))
        return record
    except MemoryError as exc:
        record.update(status="error", error=f"MemoryError (limit {mem_limit_mb} MiB): {exc}")
        return record
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        record.update(status="error", error=f"{type(exc).__name__}: {exc}")
        return record

    assert result is not None
    unknown = set(result) - set(RESULT_KEYS)
    if unknown:
        record["error"] = f"runner returned unknown keys {sorted(unknown)}"
    record.update({key: _clean(result.get(key)) for key in RESULT_KEYS})
    record["note"] = result.get("note") or None
    record["seconds"] = min(times)
    record["seconds_all"] = times
    return record


# --------------------------------------------------------------------------- parent side


def _workload_from(spec: str | Workload) -> Workload:
    """Resolve a workload name or dict; the result carries a ``"name"`` key."""
    if isinstance(spec, str):
        if spec in WORKLOADS:
            return {"name": spec, **WORKLOADS[spec]}
        spec = json.loads(spec)
    if not isinstance(spec, dict) or "kind" not in spec:
        raise ValueError(f"a workload is a dict with a 'kind' key, got {spec!r}")
    return {"name": spec.get("name", spec["kind"]), **spec}


def _last_json_line(text: str) -> dict[str, Any] | None:
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                return json.loads(line)
    return None


def measure(
    runner_name: str,
    workload: str | Workload,
    repeats: int = DEFAULT_REPEATS,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    repeat_budget: float = DEFAULT_REPEAT_BUDGET,
    memory: str = "rss",
    mem_limit_mb: float | None = DEFAULT_MEM_LIMIT_MB,
    python: str = sys.executable,
) -> dict[str, Any]:
    """Measure one runner on one workload in a fresh subprocess.

    Parameters
    ----------
    runner_name : str
        A key of :data:`RUNNERS`, or ``"package.module:function"`` importable from
        the repository root.
    workload : str or dict
        A key of :data:`WORKLOADS`, a JSON string, or a workload dict.
    repeats : int, optional
        Maximum number of timed calls; ``seconds`` is the fastest.
    timeout : float, optional
        Wall-clock limit for the whole subprocess, imports included.
    repeat_budget : float, optional
        Seconds of timed calls after which no further repeat is started.
    memory : {"rss", "tracemalloc"}, optional
        How ``peak_mb`` is measured; see :func:`run_in_process`.
    mem_limit_mb : float or None, optional
        Address-space limit of the subprocess.
    python : str, optional
        Interpreter that runs the subprocess.

    Returns
    -------
    dict
        ``runner``, ``peer``, ``method``, ``workload``, ``status`` (``"ok"``,
        ``"error"``, ``"unavailable"`` or ``"timeout"``), ``epsilon``, ``lower``,
        ``upper``, ``sigma``, ``note``, ``seconds`` (best call, imports
        excluded), ``seconds_all``, ``import_seconds``, ``peak_mb``,
        ``peak_method``, ``warnings``, ``wall_seconds`` (whole subprocess) and
        ``error`` when the status is not ``"ok"``. Never raises for a failing
        peer.
    """
    wl = _workload_from(workload)
    spec = RUNNERS.get(runner_name)
    base: dict[str, Any] = {
        "runner": runner_name,
        "peer": spec.peer if spec else runner_name.split(":")[0].split(".")[0],
        "method": spec.method if spec else runner_name,
        "workload": wl["name"],
        **dict.fromkeys(RESULT_KEYS),
        "seconds": None,
        "peak_mb": None,
    }
    cmd = [
        python,
        str(Path(__file__).resolve()),
        "--run",
        runner_name,
        "--workload",
        json.dumps(wl),
        "--repeats",
        str(repeats),
        "--repeat-budget",
        str(repeat_budget),
        "--memory",
        memory,
        "--mem-limit-mb",
        str(mem_limit_mb or 0),
    ]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=REPO_ROOT,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {
            **base,
            "status": "timeout",
            "error": f"no result within {timeout:g} s",
            "wall_seconds": time.perf_counter() - start,
        }
    wall = time.perf_counter() - start
    record = _last_json_line(proc.stdout)
    if record is None:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        how = (
            f"killed by signal {-proc.returncode}"
            if proc.returncode < 0
            else (f"exit status {proc.returncode}")
        )
        return {
            **base,
            "status": "error",
            "error": f"no result ({how}): {tail}",
            "wall_seconds": wall,
        }
    return {**base, **record, "wall_seconds": wall}


def plan(
    runner_patterns: Sequence[str] = ("*",), workload_patterns: Sequence[str] = ("*",)
) -> list[tuple[str, str]]:
    """List the (runner, workload) pairs of the table, filtered by glob patterns.

    Parameters
    ----------
    runner_patterns, workload_patterns : sequence of str, optional
        ``fnmatch`` patterns; a pair is kept when both names match one of them.

    Returns
    -------
    list of (str, str)
        Pairs in table order: by workload, then by registration order.
    """
    pairs = []
    for wname, wl in WORKLOADS.items():
        if not any(fnmatch.fnmatch(wname, pat) for pat in workload_patterns):
            continue
        for rname, spec in RUNNERS.items():
            if wl["kind"] in spec.kinds and any(
                fnmatch.fnmatch(rname, pat) for pat in runner_patterns
            ):
                pairs.append((rname, wname))
    return pairs


def run_table(
    pairs: Sequence[tuple[str, str]] | None = None,
    *,
    progress: bool = True,
    **measure_kwargs: Any,
) -> list[dict[str, Any]]:
    """Measure every (runner, workload) pair, one subprocess each.

    Parameters
    ----------
    pairs : sequence of (str, str), optional
        Pairs to measure; all of :func:`plan` by default.
    progress : bool, optional
        Show a tqdm progress bar on stderr when tqdm is installed.
    **measure_kwargs
        Passed to :func:`measure` (``repeats``, ``timeout``, ``memory``, ...).

    Returns
    -------
    list of dict
        One :func:`measure` record per pair.
    """
    pairs = plan() if pairs is None else list(pairs)
    iterator: Iterable[tuple[str, str]] = pairs
    bar = None
    if progress:
        try:
            from tqdm import tqdm
        except ImportError:
            tqdm = None
        if tqdm is not None:
            bar = tqdm(pairs, desc="peers", unit="run", file=sys.stderr)
            iterator = bar
    results = []
    for rname, wname in iterator:
        if bar is not None:
            bar.set_postfix_str(f"{wname} {rname}")
        results.append(measure(rname, wname, **measure_kwargs))
    return results


def environment() -> dict[str, Any]:
    """Interpreter, platform and installed versions of the peers."""
    versions = {}
    for dist in (*PEER_DISTRIBUTIONS.values(), "torch", "numpy", "scipy"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "versions": versions,
    }


def _fmt(value: Any, spec: str) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return format(value, spec)


def format_table(results: Sequence[dict[str, Any]]) -> str:
    """Render measurement records as a fixed-width text table with notes.

    Parameters
    ----------
    results : sequence of dict
        Records from :func:`measure`.

    Returns
    -------
    str
        The table, followed by numbered notes and errors.
    """
    headers = (
        "workload",
        "peer.method",
        "epsilon",
        "lower",
        "upper",
        "sigma",
        "seconds",
        "peak MB",
        "status",
    )
    rows: list[tuple[str, ...]] = []
    notes: dict[str, int] = {}  # identical remarks share one footnote
    for r in results:
        remarks = [r.get("note"), r.get("error"), *(r.get("warnings") or [])]
        text = "; ".join(m for m in remarks if m)
        status = r.get("status", "?")
        if text:
            number = notes.setdefault(text, len(notes) + 1)
            status += f" [{number}]"
        rows.append(
            (
                r["workload"],
                r["runner"],
                _fmt(r.get("epsilon"), ".6f"),
                _fmt(r.get("lower"), ".6f"),
                _fmt(r.get("upper"), ".6f"),
                _fmt(r.get("sigma"), ".6f"),
                _fmt(r.get("seconds"), ".4f"),
                _fmt(r.get("peak_mb"), ".1f"),
                status,
            )
        )
    widths = [
        max(len(h), *(len(row[i]) for row in rows)) if rows else len(h)
        for i, h in enumerate(headers)
    ]
    numeric = {2, 3, 4, 5, 6, 7}

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in numeric else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    previous = None
    for row in rows:
        if previous is not None and row[0] != previous:
            out.append("")
        out.append(line(row))
        previous = row[0]
    methods = {r["runner"]: r.get("method") for r in results}
    out += ["", "methods:"] + [f"  {name}: {m}" for name, m in methods.items()]
    if notes:
        out += ["", "notes:"] + [f"  [{n}] {text}" for text, n in notes.items()]
    return "\n".join(out)


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Benchmark peer DP accounting libraries, one subprocess per measurement."
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--run", metavar="NAME", help="measure one runner in this process")
    mode.add_argument("--table", action="store_true", help="measure every runner on every workload")
    mode.add_argument("--list", action="store_true", help="list runners and workloads")
    mode.add_argument("--render", metavar="PATH", help="print the table of a saved --json file")
    parser.add_argument("--workload", help="workload name or JSON dict (with --run)")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    parser.add_argument(
        "--repeat-budget",
        type=float,
        default=DEFAULT_REPEAT_BUDGET,
        help="no new repeat once timed calls exceed this many seconds",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help="seconds per measurement subprocess (with --table)",
    )
    parser.add_argument("--memory", choices=("rss", "tracemalloc"), default="rss")
    parser.add_argument(
        "--mem-limit-mb",
        type=float,
        default=DEFAULT_MEM_LIMIT_MB,
        help="address-space limit per subprocess; 0 for none",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        default=["*"],
        metavar="GLOB",
        help="runner name patterns (with --table)",
    )
    parser.add_argument(
        "--workloads",
        nargs="+",
        default=["*"],
        metavar="GLOB",
        help="workload name patterns (with --table)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    if args.run and not args.workload:
        parser.error("--run needs --workload")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; see the module docstring."""
    args = _parse_args(argv)
    if args.list:
        for name, spec in RUNNERS.items():
            sys.stdout.write(f"{name:36s} {sorted(spec.kinds)}  {spec.method}\n")
        for name, wl in WORKLOADS.items():
            sys.stdout.write(f"{name:36s} {json.dumps(wl)}\n")
        return 0
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        sys.stdout.write(format_table(saved["results"]) + "\n")
        return 0
    if args.run:
        record = run_in_process(
            args.run,
            _workload_from(args.workload),
            args.repeats,
            repeat_budget=args.repeat_budget,
            memory=args.memory,
            mem_limit_mb=args.mem_limit_mb or None,
        )
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()
        return 0
    env = environment()
    results = run_table(
        plan(args.only, args.workloads),
        progress=not args.no_progress,
        repeats=args.repeats,
        timeout=args.timeout,
        repeat_budget=args.repeat_budget,
        memory=args.memory,
        mem_limit_mb=args.mem_limit_mb or None,
    )
    header = (
        f"python {env['python']} on {env['platform']}, {env['cpu_count']} CPUs; "
        + ", ".join(f"{k} {v}" for k, v in env["versions"].items())
        + f"\nseconds: best of up to {args.repeats} calls (imports excluded); "
        f"peak MB: {args.memory}; timeout {args.timeout:g} s per measurement\n"
    )
    sys.stdout.write(header + "\n" + format_table(results) + "\n")
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        settings = {
            k: getattr(args, k)
            for k in ("repeats", "repeat_budget", "timeout", "memory", "mem_limit_mb")
        }
        path.write_text(
            json.dumps({"environment": env, "settings": settings, "results": results}, indent=1)
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
