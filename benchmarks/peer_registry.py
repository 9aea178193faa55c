"""The peer benchmark's workloads and runner registry (see ``benchmarks/peers.py``).

:data:`WORKLOADS` names the standard workloads; :func:`register` adds a runner
``runner(workload) -> dict`` to :data:`RUNNERS` under ``"<peer>.<method>"``; the
``peer_*.py`` modules register one peer library's runners each, and
``peer_harness.py`` measures them in subprocesses.
"""

from __future__ import annotations

import math
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
    # DP-MF: BandMF with 4 bands under cyclic Poisson sampling (JAX Privacy's
    # amplified_bandmf_event: ceil(2000 / 4) = 500 Poisson-sampled Gaussian rounds)
    "bandmf_2000x4": {
        "kind": "bandmf",
        "noise_multiplier": 1.0,
        "iterations": 2_000,
        "num_bands": 4,
        "sample_rate": 0.004,
        "delta": 1e-6,
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
- ``bandmf``: a BandMF training run under cyclic Poisson sampling, ``noise_multiplier``,
  ``iterations``, ``num_bands``, ``sample_rate``, ``delta`` (a strategy of column norm
  one); the peers account the event JAX Privacy builds for it (:func:`bandmf_as_dpsgd`).
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


def bandmf_as_dpsgd(workload: Workload) -> Workload:
    """The ``dpsgd`` workload of a ``bandmf`` one: ``ceil(iterations / num_bands)``
    Poisson-sampled Gaussian steps, the event ``jax_privacy.accounting.amplified_bandmf_event``
    builds (Choquette-Choo et al. 2023, cyclic Poisson sampling of a banded strategy)."""
    return {
        "kind": "dpsgd",
        "noise_multiplier": workload["noise_multiplier"],
        "sample_rate": workload["sample_rate"],
        "steps": math.ceil(workload["iterations"] / workload["num_bands"]),
        "delta": workload["delta"],
    }


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
