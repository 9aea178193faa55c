"""Review 29 (issue 37): a Gaussian subclass whose loss is another sigma's is accounted by
its behaviour, never by an inherited subsampled-Gaussian declaration.

ws29-cap replaces two exact-type gates (``quantile_batch._batchable`` and
``schedule._subsampled_gaussians``, the RDP floor that lets a schedule's ``delta`` skip
its RDP pass) by a *declared* subsampled-Gaussian capability.  A subclass that changes
the loss but inherits the declaration would be batched or floored with the wrong
sigma: a floor read at a smaller sigma than the mechanism's true one drops the RDP
pass where it wins (the answer rises from 2e-58 to the PLD's 1.7e-17), and tail
quantiles read at a larger sigma cut the loss short.  ``Scaled(sigma, factor)``
below is, in every method the engine asks, ``GaussianMechanism(sigma * factor)``; so
whatever the library does with it must answer what it answers for that Gaussian
(main 617417f: bit-equal on every answer here).
Power: fails when ``_subsampled_gaussians`` accepts subclasses and reads ``1 /
base.sigma`` (a main snapshot so mutated answers 1.66e-17 / 1.83e-17 where the
Gaussian's schedule answers 2.0e-58 and 6.9e-224).  About 1 CPU s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import dpacct as dp
from dpacct.accountant.capabilities import Capabilities
from dpacct.accountant.pld.schedule import schedule_mechanism, schedule_reference


@dataclass(frozen=True, repr=False)
class Scaled(dp.GaussianMechanism):
    """Behaves as ``GaussianMechanism(sigma * factor)`` while its field says ``sigma``."""

    factor: float = 1.0
    declares = Capabilities(
        exact_curve=True, rdp=True, loss_laws=True, exact_tradeoff=True, gdp=True
    )

    @property
    def mu(self) -> float:
        return 1.0 / (self.sigma * self.factor)

    def _rdp(self, alpha):
        return np.asarray(alpha, dtype=float) / (2.0 * (self.sigma * self.factor) ** 2)


def _close(a, b, rel=1e-9):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return bool(np.all(np.abs(a - b) <= rel * np.abs(b)))


@pytest.mark.parametrize("factor", [0.5, 10.0])
def test_composition_of_a_scaled_gaussian_answers_the_gaussians(factor):
    sigma, q, count = 1.0, 0.01, 300
    sub = dp.poisson_subsample(Scaled(sigma=sigma / factor, factor=factor), sample_rate=q)
    ref = dp.poisson_subsample(dp.GaussianMechanism(sigma=sigma), sample_rate=q)
    a = dp.compose([sub], counts=[count])
    b = dp.compose([ref], counts=[count])
    assert _close(a.epsilon(1e-6), b.epsilon(1e-6)), (a.epsilon(1e-6), b.epsilon(1e-6))
    assert _close(a.delta(1.0), b.delta(1.0)), (a.delta(1.0), b.delta(1.0))
    assert _close(a.epsilon_bounds(1e-6), b.epsilon_bounds(1e-6))


#: a small-q schedule whose RDP conversion answers far below its PLD (2e-58 and 6.9e-224
#: against the PLD's ~1.7e-17 floor at eps 1 and 4), with one more subsampled part
EPS = np.array([1.0, 4.0])
PHASES = [(2.9, 1e-4, 3), (3.1, 2e-5, 2)]


@pytest.mark.parametrize("build", [schedule_reference, schedule_mechanism])
@pytest.mark.parametrize("factor", [0.5, 10.0])
def test_schedule_with_a_scaled_gaussian_part_answers_the_gaussians(build, factor):
    sigma, q, count = 3.0, 1e-4, 2
    sub = dp.poisson_subsample(Scaled(sigma=sigma / factor, factor=factor), sample_rate=q)
    ref = dp.poisson_subsample(dp.GaussianMechanism(sigma=sigma), sample_rate=q)
    got = build(PHASES, others=[(sub, count)], progress=False).delta(EPS)
    want = build(PHASES, others=[(ref, count)], progress=False).delta(EPS)
    assert _close(got, want), (factor, got, want)
    assert np.all(want < 1e-50), want  # the RDP conversion's answer (the setting's point)
