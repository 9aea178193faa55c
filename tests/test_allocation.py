"""random_allocation_noise_multiplier: the k-of-T calibration (calibrators/allocation.py)."""

from __future__ import annotations

import pytest

from dpacct.accountant import random_allocation
from dpacct.calibrators import random_allocation_noise_multiplier
from dpacct.mechanisms import GaussianMechanism


def test_noise_multiplier_calibration_meets_the_target_from_below():
    # the blocks alone (direct=False): the direct k = 2 route costs a law of a few CPU s
    # per sigma tried; its calibration is measured by benchmarks.samplers_dong_ozgur
    s = random_allocation_noise_multiplier(1.0, 1e-6, 100, k=2, epochs=2, direct=False)
    run = random_allocation(GaussianMechanism(s), 100, k=2, epochs=2, direct=False)
    assert 1.0 * (1 - 1e-3) <= run.epsilon(1e-6) <= 1.0
    # monotone: more noise for a smaller target, and k = 2 needs more than k = 1
    assert random_allocation_noise_multiplier(0.8, 1e-6, 100, k=2, epochs=2, direct=False) > s
    assert random_allocation_noise_multiplier(1.0, 1e-6, 100, k=1, epochs=2) < s
    with pytest.raises(ValueError, match="k must be <= steps"):
        random_allocation_noise_multiplier(1.0, 1e-6, 3, k=4)


@pytest.mark.parametrize(("k", "eps"), [
    (4, 3.2), pytest.param(5, 9.7, marks=pytest.mark.slow)])
def test_calibration_at_k4_goes_through_the_direct_route(k, eps):
    # T 10, k 4, sigma about 2: the four-level law of about 1 CPU s per sigma tried
    # (benchmarks.random_allocation_k's CALIBRATIONS measure T 50, 100); k 5, sigma
    # about 1: 4-5 s (two laws of the route and two on coarse nodes, 14.5 CPU s loaded)
    s = random_allocation_noise_multiplier(eps, 1e-6, 10, k=k)
    run = random_allocation(GaussianMechanism(s), 10, k=k)
    assert run._direct_route is run.k4_route
    assert eps * (1 - 1e-3) <= run.epsilon(1e-6) <= eps  # sound: certified at the target
    # and the route's sigma is below the blocks' (sigma 2, T 10, k 4: 3.1229 against
    # 3.1659; k 5: sigma 1.00251 against 1.01007)
    blocks = random_allocation_noise_multiplier(eps, 1e-6, 10, k=k, direct=False)
    assert s < 0.995 * blocks
