"""The certified floor under every RDP conversion of a subsampled-Gaussian schedule
(:mod:`dpacct.accountant.rdp.rdp_floor`), and the work a schedule's ``delta`` skips with
it (issue 37, session 28).  Counts of work, never wall time."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpacct.accountant import routes
from dpacct.accountant.laws import loss_law
from dpacct.accountant.pld import schedule as sched
from dpacct.accountant.rdp import subsampled_rdp
from dpacct.accountant.rdp.conversion import rdp_to_delta, rdp_to_delta_grid
from dpacct.accountant.rdp.rdp_floor import _log_a, rdp_log_delta_floor


def _exact_log_a(sigma: float, q: float, a: int) -> mp.mpf:
    """``log E_Q[(P/Q)^a]`` of one step, the whole binomial sum at 50 digits."""
    with mp.workdps(50):
        s, q = mp.mpf(sigma), mp.mpf(q)
        return mp.log(
            mp.fsum(
                mp.binomial(a, k) * (1 - q) ** (a - k) * q**k * mp.e ** (k * (k - 1) / (2 * s * s))
                for k in range(a + 1)
            )
        )


@pytest.mark.parametrize("sigma, q", [(1.0, 0.01), (0.6, 0.3), (2.5, 1e-4), (5.0, 0.5)])
def test_the_partial_binomial_sums_are_below_the_exact_ones_and_equal_where_complete(sigma, q):
    orders = np.array([2.0, 3, 9, 17, 33, 40, 120])
    got, _ = _log_a(np.array([sigma]), np.array([q]), orders, 16)
    for a, v in zip(orders.astype(int), got[0], strict=True):
        exact = float(_exact_log_a(sigma, q, int(a)))
        assert v <= exact + 1e-12 * (1 + abs(exact))
        if a <= 33:  # every term kept
            assert v == pytest.approx(exact, rel=1e-12, abs=1e-14)


def test_the_floor_is_below_every_conversion_of_random_schedules():
    rng = np.random.default_rng(2028)
    for _ in range(6):
        n = int(rng.integers(1, 5))
        sig = rng.uniform(0.5, 4.0, n)
        qs = np.exp(rng.uniform(math.log(1e-4), math.log(0.5), n))
        cnt = rng.integers(1, 3000, n)

        def curve(a, sig=sig, qs=qs, cnt=cnt):
            return sum(
                c * subsampled_rdp.subsampled_gaussian_rdp(q, s, a)
                for s, q, c in zip(sig, qs, cnt, strict=True)
            )

        eps = np.array([0.1, 1.0, 8.0])
        floor = rdp_log_delta_floor(sig, qs, cnt, eps)
        grid = rdp_to_delta_grid(curve, eps)
        for e, f, g in zip(eps, floor, grid, strict=True):
            assert math.exp(f) <= rdp_to_delta(curve, float(e)) <= g


def test_the_floor_is_below_the_exact_integer_order_bound():
    # independent of the library's RDP code: the conversion's objective at integer orders
    # with the exact (50-digit) divergences of two distinct steps
    steps = [(1.0, 2e-3, 400), (1.6, 5e-4, 900)]
    orders = range(2, 48)  # the optimum lies at 10-30 here
    lam = {a: sum(c * _exact_log_a(s, q, a) for s, q, c in steps) for a in orders}
    for eps in (0.3, 1.0, 3.0):
        best = min(
            lam[a] - (a - 1) * eps + (a - 1) * mp.log1p(-1 / mp.mpf(a)) - mp.log(a)
            for a in orders
        )
        floor = rdp_log_delta_floor(*map(np.array, zip(*steps, strict=True)), [eps])[0]
        assert floor <= float(best)
        assert floor > float(best) - 3.0  # and not far below: a floor that can skip


def _small_q_schedule(n: int, tag: float) -> list[tuple[float, float, int]]:
    # distinct (sigma, q) per step, unused elsewhere (the cells' mechanisms are shared)
    return [(1.0 + tag + 0.01 * t, 1e-4 * (1 + t % 5), 1) for t in range(n)]


def test_a_small_q_schedule_delta_runs_no_rdp_and_discretises_each_law_spread_once(monkeypatch):
    phases = _small_q_schedule(18, 0.000123)
    calls = {"rdp": 0, "spread": 0}
    rdp, spread = subsampled_rdp.subsampled_gaussian_rdp, loss_law.PrivacyLossLaw._spread

    def counted_rdp(*args, **kwargs):
        calls["rdp"] += 1
        return rdp(*args, **kwargs)

    def counted_spread(self):
        calls["spread"] += 1
        return spread(self)

    monkeypatch.setattr(subsampled_rdp, "subsampled_gaussian_rdp", counted_rdp)
    monkeypatch.setattr(loss_law.PrivacyLossLaw, "_spread", counted_spread)
    mech = sched.schedule_mechanism(phases, progress=False)
    first = mech.delta(0.5)
    again = mech.delta(0.5)
    assert calls["rdp"] == 0  # the floor is above the PLD's answer: no conversion
    # two laws (remove, add) a step, each spread computed once over every pass
    # (main: once a pass and direction, 5 a law here), by the batched search
    # (dpacct.accountant.laws.quantile_batch), so never by the law's own
    assert calls["spread"] == 0
    assert all("spread" in law._quantile_memo for m, _ in mech.parts for law in m._loss_laws())
    # the same answer as with the conversion run (a fresh mechanism, floor switched off)
    monkeypatch.setattr(sched.ScheduleMechanism, "_rdp_log_delta_floor", lambda self, e: None)
    fresh = sched.schedule_mechanism(phases, progress=False)
    with_rdp = fresh.delta(0.5)
    assert calls["rdp"] > 0
    assert first == again == with_rdp


def test_the_rdp_pass_runs_where_the_floor_is_below_the_pld_answer():
    mech = sched.schedule_mechanism(_small_q_schedule(20, 0.000321), progress=False)
    eps = np.array([0.5, 0.5])
    floor = mech._rdp_log_delta_floor(eps)
    assert routes.rdp_may_win(mech, eps, np.exp(floor) * np.array([0.5, 2.0])).tolist() == [
        False,
        True,
    ]
    other = sched.schedule_mechanism([(1.0, 0.01, 3), (2.0, 0.02, 1)], progress=False)
    assert other._rdp_log_delta_floor(eps) is not None
    assert sched._subsampled_gaussians([(other, 1)]) is None  # not a subsampled Gaussian


def test_the_floor_reads_the_declared_subsampled_gaussian_and_a_subclass_loses_it():
    """The floor's gate reads :meth:`Mechanism.subsampled_gaussian`: the Poisson
    subsampling of a Gaussian declares ``(q, 1 / sigma)``; a subclass that overrides a
    loss law (of the subsampled mechanism or of its Gaussian base) does not inherit
    the declaration, so its schedule is never floored by the subsampled-Gaussian
    formula (issue 37, session 29)."""
    from dataclasses import dataclass

    from dpacct.accountant.capabilities import Capabilities
    from dpacct.accountant.families.gaussian import GaussianMechanism
    from dpacct.accountant.transformers.subsample import PoissonSubsampledMechanism

    @dataclass(frozen=True, repr=False)
    class LouderSubsampled(PoissonSubsampledMechanism):
        declares = Capabilities(rdp=True, loss_laws=True)

        def _loss_laws(self):  # a different pair: the Gaussian formulas do not hold
            remove, add = super()._loss_laws()
            return add, remove

    @dataclass(frozen=True, repr=False)
    class OtherGaussian(GaussianMechanism):
        declares = GaussianMechanism.declares

        def _loss_laws(self):
            law = loss_law.GaussianLossLaw(mu=2.0 * self.mu)
            return law, law

    step = PoissonSubsampledMechanism(GaussianMechanism(1.3), 0.02)
    assert step.subsampled_gaussian() == (0.02, 1.0 / 1.3)
    sigma, q, count = sched._subsampled_gaussians([(step, 7)])
    # the sigma its Renyi curve is taken at, 1 / mu rounded up (never below 1.3)
    assert sigma.tolist() == [math.nextafter(1.0 / (1.0 / 1.3), math.inf)] and sigma[0] > 1.3
    assert (q.tolist(), count.tolist()) == ([0.02], [7.0])
    for other in (
        LouderSubsampled(GaussianMechanism(1.3), 0.02),
        PoissonSubsampledMechanism(OtherGaussian(1.3), 0.02),
        GaussianMechanism(1.3),  # not subsampled: the floor is for subsampled schedules
    ):
        assert other.subsampled_gaussian() is None
        assert sched._subsampled_gaussians([(step, 1), (other, 1)]) is None
