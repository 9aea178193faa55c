"""mechanisms/primitives/_discrete_laplace_law.py: the exact loss law of discrete Laplace noise at
an integer sensitivity, against the pair enumerated by brute force in mpmath."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from dpacct.mechanisms.primitives._discrete_laplace_law import discrete_laplace_law


def brute_force_loss_law(scale: float, k: int, width: int = 400) -> dict[float, float]:
    """P-mass of every privacy loss log(P(x) / Q(x)), with P(x) = c e^{-a|x - k|} and
    Q(x) = c e^{-a|x|} (c = tanh(a / 2)), over |x| <= width, in 40 digits."""
    with mpmath.workdps(40):
        a = 1 / mpmath.mpf(scale)
        c = mpmath.tanh(a / 2)
        out: dict[float, mpmath.mpf] = {}
        for x in range(-width, width + k + 1):
            loss = float(a * (abs(x) - abs(x - k)))
            out[loss] = out.get(loss, 0) + c * mpmath.e ** (-a * abs(x - k))
        return {key: float(v) for key, v in out.items()}


@pytest.mark.parametrize(("scale", "k"), [(1.0, 1), (2.0, 3), (0.5, 4), (10.0, 7)])
def test_law_is_the_enumerated_pair(scale, k):
    law = discrete_laplace_law(scale, k)
    expected = brute_force_loss_law(scale, k, width=int(80 * scale) + 10)
    assert law.lattice == pytest.approx(1.0 / scale)
    assert law.losses.size == k + 1 and law.inf_mass == 0.0
    for loss, mass in zip(law.losses, law.p, strict=True):
        key = min(expected, key=lambda v: abs(v - loss))
        assert key == pytest.approx(loss, rel=1e-12, abs=1e-15)
        assert mass == pytest.approx(expected[key], rel=1e-12)
    assert float(np.sum(law.p)) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("eps", [0.0, 0.4, 1.3])
def test_hockey_stick_matches_the_brute_force_sum(eps):
    scale, k = 1.5, 3
    with mpmath.workdps(40):
        a = 1 / mpmath.mpf(scale)
        c = mpmath.tanh(a / 2)
        e = mpmath.e ** mpmath.mpf(eps)
        exact = mpmath.fsum(
            max(c * mpmath.e ** (-a * abs(x - k)) - e * c * mpmath.e ** (-a * abs(x)), 0)
            for x in range(-200, 200)
        )
    got = float(discrete_laplace_law(scale, k).hockey_stick(np.array([eps]))[0])
    assert got == pytest.approx(float(exact), rel=1e-10)
