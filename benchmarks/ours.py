"""dpacct's own runners for the benchmark harness (see :mod:`benchmarks.peers`).

Each runner builds the workload's mechanism with the public API and returns the
sound upper bound as ``epsilon`` and ``upper``, and the certified lower end of the
bracket as ``lower``.  They are measured like the peers, one subprocess each, by
their ``"benchmarks.ours:<function>"`` names.
"""

from __future__ import annotations

from typing import Any

Workload = dict[str, Any]


def _mechanism(workload: Workload):
    from dpacct.accountant import compose, poisson_subsample
    from dpacct.mechanisms import GaussianMechanism, LaplaceMechanism, RandomizedResponse

    kind = workload["kind"]
    if kind == "ledger":
        # what a training loop does: feed the online accountant, then ask it
        from dpacct.accountant import PrivacyAccountant

        acct = PrivacyAccountant()
        for sigma, q, steps in workload["schedule"]:
            acct.step(noise_multiplier=sigma, sample_rate=q, count=steps)
        return acct.mechanism()
    if kind == "dpsgd":
        step = poisson_subsample(
            GaussianMechanism(sigma=workload["noise_multiplier"]), workload["sample_rate"]
        )
        return compose([step], counts=[workload["steps"]])
    if kind == "bandmf":
        from dpacct.mechanisms import amplified_bandmf

        return amplified_bandmf(
            workload["noise_multiplier"],
            workload["iterations"],
            num_bands=workload["num_bands"],
            sample_rate=workload["sample_rate"],
        )
    if kind == "laplace":
        return compose([LaplaceMechanism(b=workload["b"])], counts=[workload["count"]])
    if kind == "rr":
        rr = RandomizedResponse(p=workload["p"], k=workload.get("k", 2))
        return compose([rr], counts=[workload["count"]])
    raise ValueError(f"unknown workload kind {kind!r}")


def _schedule_ledger(workload: Workload, tol: float | None):
    """A training loop's ledger: one ``step`` call per phase of the schedule."""
    from benchmarks.peers import schedule_of
    from dpacct.accountant import PrivacyAccountant

    acct = PrivacyAccountant(tol=tol, progress=False)
    for sigma, q, steps in schedule_of(workload):
        acct.step(noise_multiplier=sigma, sample_rate=q, count=steps)
    return acct


def _bracket(workload: Workload, tol: float | None) -> dict[str, Any]:
    if workload["kind"] == "schedule":
        lower, upper = _schedule_ledger(workload, tol).epsilon_bounds(workload["delta"])
        return {"epsilon": upper, "lower": lower, "upper": upper}
    mech = _mechanism(workload)
    lower, upper = mech.epsilon_bounds(workload["delta"], tol=tol)
    return {"epsilon": upper, "lower": lower, "upper": upper}


def _epsilon(workload: Workload, tol: float | None) -> dict[str, Any]:
    if workload["kind"] == "schedule":
        eps = _schedule_ledger(workload, tol).epsilon(workload["delta"])
        return {"epsilon": eps, "upper": eps}
    mech = _mechanism(workload)
    eps = mech.epsilon(workload["delta"], tol=tol)
    return {"epsilon": eps, "upper": eps}


def epsilon_default(workload: Workload) -> dict[str, Any]:
    """The answer a user gets: ``epsilon(delta)`` at the default accuracy."""
    return _epsilon(workload, None)


def bracket_default(workload: Workload) -> dict[str, Any]:
    """``epsilon_bounds(delta)`` at the default accuracy (upper and lower PLDs)."""
    return _bracket(workload, None)


def epsilon_tol_1e3(workload: Workload) -> dict[str, Any]:
    """``epsilon(delta, tol=1e-3)``: the fast setting."""
    return _epsilon(workload, 1e-3)


def bracket_tol_1e3(workload: Workload) -> dict[str, Any]:
    """``epsilon_bounds(delta, tol=1e-3)``."""
    return _bracket(workload, 1e-3)


def bracket_tol_1e5(workload: Workload) -> dict[str, Any]:
    """``epsilon_bounds(delta, tol=1e-5)``: the precise setting."""
    return _bracket(workload, 1e-5)


def epsilon_tol_min(workload: Workload) -> dict[str, Any]:
    """``epsilon(delta, tol=3e-7)``: the most precise answer (``MIN_TOL``)."""
    return _epsilon(workload, 3e-7)


def calibrate(workload: Workload) -> dict[str, Any]:
    """``noise_multiplier`` for the target (epsilon, delta), sample rate and steps."""
    from dpacct.calibrators import noise_multiplier

    sigma = noise_multiplier(
        epsilon=workload["target_epsilon"],
        delta=workload["delta"],
        sample_rate=workload["sample_rate"],
        steps=workload["steps"],
    )
    return {"sigma": sigma}


RUNNERS = {
    "dpacct.epsilon": ("epsilon(delta), default accuracy", epsilon_default),
    "dpacct.bracket": ("epsilon_bounds(delta), default accuracy", bracket_default),
    "dpacct.epsilon_tol1e-3": ("epsilon(delta, tol=1e-3)", epsilon_tol_1e3),
    "dpacct.bracket_tol1e-3": ("epsilon_bounds(delta, tol=1e-3)", bracket_tol_1e3),
    "dpacct.bracket_tol1e-5": ("epsilon_bounds(delta, tol=1e-5)", bracket_tol_1e5),
    "dpacct.epsilon_tol3e-7": ("epsilon(delta, tol=3e-7), the most precise", epsilon_tol_min),
}
"""Runner name -> (description, function) for the epsilon workloads."""


def filter_loop(
    steps: int = 10_000,
    every: int = 100,
    *,
    budget_epsilon: float = 8.0,
    budget_delta: float = 1e-5,
    sigma: float = 1.5,
    gamma: float = 0.9999,
    sample_rate: float = 0.01,
) -> dict[str, Any]:
    """A filtered training loop: one ``step`` per iteration with a decaying sigma
    (``sigma * gamma^t``), ``epsilon(budget_delta)`` every ``every`` steps, stopping at
    the first refusal.  Returns the accounting time (one-time imports excluded), the
    steps accepted, the epsilon the refused step would have reached and the last
    epsilon answered."""
    import time

    import dpacct.mechanisms.primitives.gaussian  # noqa: F401  (one-time imports, outside the timer)
    from dpacct.accountant import BudgetExceededError, PrivacyAccountant

    acct = PrivacyAccountant(
        budget_epsilon=budget_epsilon, budget_delta=budget_delta, progress=False
    )
    refused = None
    answers = []
    start = time.perf_counter()
    for t in range(steps):
        try:
            acct.step(noise_multiplier=sigma * gamma**t, sample_rate=sample_rate)
        except BudgetExceededError as exc:
            refused = exc.epsilon
            break
        if (t + 1) % every == 0:
            answers.append(acct.epsilon(budget_delta))
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "accepted": acct.steps,
        "refused_epsilon": refused,
        "last_epsilon": acct.epsilon(budget_delta),
        "queries": len(answers),
    }


if __name__ == "__main__":  # python -m benchmarks.ours: the filtered loop
    print(filter_loop())
