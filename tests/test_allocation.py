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
