"""One contract, run over every mechanism the library ships.

Every mechanism (primitive, composed or subsampled) must honour the contract of
DESIGN.md: sound, monotone curves; a bracket with lower <= upper; vectorised RDP at
real orders; a trade-off curve inside [0, 1 - fpr]; clear errors for bad queries; a
repr that shows its parameters.
"""

import math
import warnings

import numpy as np
import pytest

from dpacct import mechanisms
from dpacct.accountant import Mechanism, compose, poisson_subsample


def _examples() -> list[Mechanism]:
    made = [
        mechanisms.GaussianMechanism(sigma=1.3),
        poisson_subsample(mechanisms.GaussianMechanism(sigma=1.0), 0.05),
        compose([poisson_subsample(mechanisms.GaussianMechanism(sigma=1.0), 0.02)], counts=[300]),
        compose([mechanisms.GaussianMechanism(sigma=3.0)], counts=[10]),
    ]
    optional = {
        "LaplaceMechanism": {"b": 2.0},
        "RandomizedResponse": {"p": 0.8},
        "DiscreteLaplaceMechanism": {"scale": 2.0},
        "DiscreteGaussianMechanism": {"sigma": 2.0},
        "PureDPMechanism": {"epsilon": 1.0},
        "ZCDPMechanism": {"rho": 0.1},
        "ExponentialMechanism": {"epsilon": 1.0},
    }
    for name, kwargs in optional.items():
        cls = getattr(mechanisms, name, None)
        if cls is not None:
            made.append(cls(**kwargs))
    if hasattr(mechanisms, "LaplaceMechanism"):
        made.append(compose([mechanisms.LaplaceMechanism(b=10.0)], counts=[20]))
    return made


EXAMPLES = _examples()
IDS = [type(m).__name__ + str(i) for i, m in enumerate(EXAMPLES)]


@pytest.fixture(params=EXAMPLES, ids=IDS)
def mech(request) -> Mechanism:
    return request.param


def test_epsilon_is_finite_nonnegative_and_monotone(mech):
    deltas = [1e-2, 1e-5, 1e-8]
    eps = [mech.epsilon(d) for d in deltas]
    assert all(e >= 0 and math.isfinite(e) for e in eps)
    assert eps[0] <= eps[1] <= eps[2]


def test_delta_is_a_probability_and_monotone(mech):
    d = [mech.delta(e) for e in (0.0, 0.5, 2.0)]
    assert all(0.0 <= x <= 1.0 for x in d)
    assert d[0] >= d[1] >= d[2]


def test_epsilon_and_delta_are_consistent(mech):
    eps = mech.epsilon(1e-5)
    assert mech.delta(eps) <= 1e-5 * (1 + 1e-6) + 1e-15


def test_bracket(mech):
    lo, hi = mech.epsilon_bounds(1e-5)
    assert 0.0 <= lo <= hi
    assert hi == pytest.approx(mech.epsilon(1e-5), rel=1e-12)


def test_rdp_vectorised_real_orders(mech):
    if not (mech.has_rdp or mech.has_pld):
        pytest.skip("no Renyi curve")
    alphas = np.array([1.5, 2.0, 3.25, 16.0])
    out = mech.rdp(alphas)
    assert out.shape == alphas.shape
    assert np.all(out >= 0)
    assert np.all(np.diff(out) >= -1e-12)  # Renyi divergence is non-decreasing in alpha
    assert mech.rdp(2.0) == pytest.approx(out[1], rel=1e-12)


def test_tradeoff_curve(mech):
    fpr = np.linspace(0, 1, 11)
    beta = mech.tradeoff(fpr)
    assert beta.shape == fpr.shape
    assert np.all(beta >= 0) and np.all(beta <= 1 - fpr + 1e-12)
    assert np.all(np.diff(beta) <= 1e-12)


def test_no_warnings(mech):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mech.epsilon(1e-9)
        mech.delta(1.0)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.5, math.nan, 3])
def test_bad_delta_is_rejected(mech, bad):
    with pytest.raises(ValueError, match="delta"):
        mech.epsilon(bad)


def test_bad_epsilon_is_rejected(mech):
    with pytest.raises(ValueError, match="epsilon"):
        mech.delta(-1.0)


def test_repr_names_the_class(mech):
    assert type(mech).__name__ in repr(mech)
