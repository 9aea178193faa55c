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


def test_calibration_at_k4_goes_through_the_direct_route():
    # T 10, k 4, sigma about 2: the four-level law of about 1 CPU s per sigma tried
    # (benchmarks.random_allocation_k's CALIBRATIONS measure T 100)
    s = random_allocation_noise_multiplier(3.2, 1e-6, 10, k=4)
    run = random_allocation(GaussianMechanism(s), 10, k=4)
    assert run._direct_route is run.k4_route
    assert 3.2 * (1 - 1e-3) <= run.epsilon(1e-6) <= 3.2  # sound: certified at the target
    # and the route's sigma is below the blocks' (sigma 2, T 10: 3.1229 against 3.1659)
    blocks = random_allocation_noise_multiplier(3.2, 1e-6, 10, k=4, direct=False)
    assert s < 0.995 * blocks
