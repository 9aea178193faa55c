"""An Opacus run under a non-Poisson data path: its mechanism, its bracket, its summary.

Private helpers of :class:`dpacct.opacus.OpacusAccountant`, which keeps the state (the
``history``, the identified :class:`~dpacct._opacus_data_path.DataPath` and the
:class:`~dpacct._opacus_passes.PassLog`) and asks these functions for the numbers:

* :func:`scheme_mechanism`: the run as one dpacct mechanism -- fixed-size batches as a
  composition of the replace-one fixed-size Gaussian steps, random allocation as its
  certified bracket's mechanism (:mod:`dpacct._opacus_allocation`), shuffled or
  sequential batches as the Gaussian of the passes' combined ``mu``
  (:func:`~dpacct._opacus_data_path.shuffled_mu2`, over the passes begun);
* :func:`scheme_bounds`: its ``(lower, upper)`` epsilon, the lower end where a proved
  one exists (docs/theory/fixed_size.md, docs/theory/allocation_k_of_t.md, and
  :func:`~dpacct.accountant.shuffled_batches` over the full passes at the largest noise);
* :func:`epsilon_lines`: the lines of :meth:`~dpacct.opacus.OpacusAccountant.summary`
  that state the bound and what it bounds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpacct._opacus_allocation import RANDOM_ALLOCATION, allocation_bounds
from dpacct._opacus_data_path import FIXED_SIZE, DataPath, shuffled_mu2
from dpacct._opacus_passes import PassLog
from dpacct.accountant.bracket import DOMINATING_PAIR
from dpacct.accountant.bracket import MECHANISM as MECHANISM_BRACKET

__all__ = ["epsilon_lines", "per_step", "scheme_bounds", "scheme_mechanism"]

History = Sequence[tuple[float, float, int]]


def per_step(path: DataPath, history: History) -> tuple[np.ndarray, np.ndarray]:
    """Noise multiplier and accumulated batches of every recorded step."""
    counts = [n for _, _, n in history]
    sigmas = np.repeat(np.array([h[0] for h in history], dtype=float), counts)
    rates = np.repeat(np.array([h[1] for h in history], dtype=float), counts)
    batches = np.maximum(1, np.ceil(rates * path.steps_per_epoch - 1e-9))
    return sigmas, batches.astype(np.int64)


def scheme_mechanism(path: DataPath, history: History, passes: PassLog) -> Any:
    """The run as a dpacct mechanism under its (non-Poisson) data path (None: no step)."""
    from dpacct.accountant.families.gaussian import GaussianMechanism
    from dpacct.accountant.transformers.compose import compose
    from dpacct.mechanisms.primitives.relations import fixed_size_gaussian_step

    if not history:
        return None
    if path.scheme == FIXED_SIZE:
        steps = [fixed_size_gaussian_step(s, path.sample_rate) for s, _, _ in history]
        return compose(steps, counts=[n for _, _, n in history])
    sigmas, batches = per_step(path, history)
    if path.scheme == RANDOM_ALLOCATION:  # dpacct._opacus_allocation
        return allocation_bounds(path, sigmas, batches, 0.5, False, passes)[0]
    starts = passes.of_run(path, batches)[0]  # dpacct._opacus_passes
    mu2 = shuffled_mu2(sigmas, batches, path.steps_per_epoch, starts)
    return GaussianMechanism(sigma=1.0 / math.sqrt(mu2))


def scheme_bounds(
    path: DataPath, history: History, passes: PassLog, delta: float, *, need_lower: bool
) -> tuple[float, float]:
    """``(lower, upper)`` epsilon at ``delta`` of a run of private steps (``history``
    not empty) under its (non-Poisson) data path; the lower end 0 unless ``need_lower``."""
    from dpacct.accountant import GaussianMechanism, shuffled_batches

    mech = scheme_mechanism(path, history, passes)
    upper = float(mech.epsilon(delta))
    lower = 0.0
    if need_lower and path.scheme == FIXED_SIZE:
        lower = float(mech.epsilon_bounds(delta)[0])
    elif need_lower and path.scheme == RANDOM_ALLOCATION:
        lower = allocation_bounds(path, *per_step(path, history), delta, True, passes)[1]
        lower = min(lower, upper)
    elif need_lower and path.every_record:  # a subset per pass: no lower end (0)
        # shuffled_batches' lower end (the larger of two attacks) on the full epochs at
        # the largest noise: more noise and fewer steps are post-processings of the run
        sigmas, batches = per_step(path, history)
        t = path.steps_per_epoch
        full = min(len(sigmas) // t, passes.of_run(path, batches)[2])
        if full >= 1 and bool(np.all(batches == 1)):
            largest = GaussianMechanism(sigma=float(sigmas.max()))
            found = shuffled_batches(largest, t, full, delta).lower
            lower = min(float(found), upper)
    return (lower, upper)


def epsilon_lines(
    path: DataPath | None,
    lower_upper: tuple[float | None, float],
    tail: str,
    normaliser: str | None,
    poisson_epsilon: Callable[[], float],
) -> list[str]:
    """The summary's lines on the epsilon spent: ``lower_upper`` is ``(None, upper)`` for
    a Poisson run, else the run's bracket; ``tail`` says at which delta, after how many
    steps; ``normaliser`` is Opacus' normalisation note (zero-out neighbours) or None."""
    lower, upper = lower_upper

    def poisson() -> str:  # asked only for a run that is not Poisson sampling
        return f"Poisson sampling would give {poisson_epsilon():.4g}: not a guarantee for this run"

    if not lower:  # Poisson (the ledger's bound), or no lower bound computed
        lines = []
        relation = "add/remove" if path is None else path.relation
        if normaliser is not None and relation == "add/remove":
            relation = "zero-out"
            lines.append(normaliser)
        lines.append(f"epsilon <= {upper:.4g} ({relation} neighbours){tail}")
        return lines if lower is None else [*lines, poisson()]
    assert path is not None
    if getattr(lower_upper, "bounds", MECHANISM_BRACKET) == DOMINATING_PAIR:
        return [
            f"epsilon <= {upper:.4g} ({path.relation} neighbours){tail}; "
            f"[{lower:.4g}, {upper:.4g}] brackets a dominating pair of the run, "
            "not the run itself",
            poisson(),
        ]
    return [
        f"epsilon in [{lower:.4g}, {upper:.4g}] (proved bracket, "
        f"{path.relation} neighbours){tail}",
        poisson(),
    ]
