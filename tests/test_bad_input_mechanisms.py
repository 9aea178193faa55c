"""Bad inputs to the zoo (the primitives and ``audit``) and huge Python integers to any
parameter: each call must fail loudly, naming the parameter.  The catalogue's rules
are in ``tests/bad_input.py``."""

from __future__ import annotations

from math import inf, nan

import numpy as np
import pytest
from bad_input import (
    DELTA_Q,
    FLOAT_RANGE,
    INT,
    POS,
    REAL,
    UNIT_OPEN,
    Row,
    check_well_formed,
    params,
    run_row,
)

from dpacct.accountant import compose, poisson_subsample
from dpacct.calibrators import max_steps, noise_multiplier
from dpacct.mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    PureDPMechanism,
    RandomizedResponse,
    ZCDPMechanism,
    audit,
    gaussian_delta,
)

GROUPS: dict[str, list[Row]] = {}

GROUPS["mechanisms: primitives"] = [
    Row(lambda f: GaussianMechanism(sigma=0.0), ValueError, rf"sigma must lie in {POS}, got 0\.0"),
    Row(
        lambda f: GaussianMechanism(sigma=-1.0), ValueError, rf"sigma must lie in {POS}, got -1\.0"
    ),
    Row(lambda f: GaussianMechanism(sigma=nan), ValueError, rf"sigma must lie in {POS}, got nan"),
    Row(lambda f: GaussianMechanism(sigma=inf), ValueError, rf"sigma must lie in {POS}, got inf"),
    Row(lambda f: GaussianMechanism(sigma="1"), TypeError, f"sigma {REAL}, got str"),
    Row(lambda f: GaussianMechanism(sigma=None), TypeError, f"sigma {REAL}, got NoneType"),
    Row(lambda f: GaussianMechanism(sigma=True), TypeError, f"sigma {REAL}, got bool"),
    Row(lambda f: GaussianMechanism(sigma=[1.0]), TypeError, f"sigma {REAL}, got list"),
    Row(lambda f: GaussianMechanism(sigma=1 + 0j), TypeError, f"sigma {REAL}, got complex"),
    Row(lambda f: LaplaceMechanism(b=0.0), ValueError, rf"b must lie in {POS}"),
    Row(lambda f: LaplaceMechanism(b=nan), ValueError, rf"b must lie in {POS}, got nan"),
    Row(lambda f: LaplaceMechanism(b=inf), ValueError, rf"b must lie in {POS}, got inf"),
    Row(lambda f: LaplaceMechanism(b=None), TypeError, f"b {REAL}"),
    Row(lambda f: RandomizedResponse(p=0.5), ValueError, r"p must lie in \(1/k, 1\) = \(0\.5, 1\)"),
    Row(lambda f: RandomizedResponse(p=1.0), ValueError, r"p must lie in \(1/k, 1\)"),
    Row(lambda f: RandomizedResponse(p=0.3), ValueError, r"p must lie in \(1/k, 1\)"),
    Row(lambda f: RandomizedResponse(p=0.2, k=4), ValueError, r"\(1/k, 1\) = \(0\.25, 1\) for k=4"),
    Row(lambda f: RandomizedResponse(p=nan), ValueError, "p must be a finite number, got nan"),
    Row(lambda f: RandomizedResponse(p="0.7"), TypeError, f"p {REAL}, got str"),
    Row(lambda f: RandomizedResponse(p=0.7, k=1), ValueError, "k must be an integer >= 2, got 1"),
    Row(
        lambda f: RandomizedResponse(p=0.7, k=2.5),
        ValueError,
        r"k must be an integer >= 2, got 2\.5",
    ),
    Row(
        lambda f: RandomizedResponse(p=0.7, k=True),
        TypeError,
        "k must be an integer >= 2, got bool",
    ),
    Row(lambda f: RandomizedResponse(p=0.7, k=-3), ValueError, "k must be an integer >= 2, got -3"),
    Row(lambda f: DiscreteLaplaceMechanism(scale=0), ValueError, rf"scale must lie in {POS}"),
    Row(lambda f: DiscreteLaplaceMechanism(scale=nan), ValueError, rf"scale must lie in {POS}"),
    Row(lambda f: DiscreteLaplaceMechanism(scale=inf), ValueError, rf"scale must lie in {POS}"),
    Row(lambda f: DiscreteGaussianMechanism(sigma=-1), ValueError, rf"sigma must lie in {POS}"),
    Row(lambda f: DiscreteGaussianMechanism(sigma=nan), ValueError, rf"sigma must lie in {POS}"),
    Row(lambda f: DiscreteGaussianMechanism(sigma=inf), ValueError, rf"sigma must lie in {POS}"),
    Row(lambda f: DiscreteGaussianMechanism(sigma="2"), TypeError, f"sigma {REAL}, got str"),
    Row(lambda f: ExponentialMechanism(epsilon=0), ValueError, rf"epsilon must lie in {POS}"),
    Row(lambda f: ExponentialMechanism(epsilon=-1), ValueError, rf"epsilon must lie in {POS}"),
    Row(lambda f: ExponentialMechanism(epsilon=nan), ValueError, rf"epsilon must lie in {POS}"),
    Row(lambda f: ExponentialMechanism(epsilon=inf), ValueError, rf"epsilon must lie in {POS}"),
    Row(
        lambda f: ExponentialMechanism(epsilon=1.0, bounded_range="yes"),
        TypeError,
        "bounded_range must be a bool, got str",
    ),
    Row(
        lambda f: ExponentialMechanism(epsilon=1.0, bounded_range=0),
        TypeError,
        "bounded_range must be a bool, got int",
    ),
    Row(
        lambda f: ExponentialMechanism(epsilon=1.0, bounded_range=None),
        TypeError,
        "bounded_range must be a bool",
    ),
    Row(lambda f: PureDPMechanism(epsilon=0.0), ValueError, rf"epsilon must lie in {POS}"),
    Row(lambda f: PureDPMechanism(epsilon=nan), ValueError, rf"epsilon must lie in {POS}, got nan"),
    Row(lambda f: PureDPMechanism(epsilon=inf), ValueError, rf"epsilon must lie in {POS}, got inf"),
    Row(lambda f: PureDPMechanism(epsilon=None), TypeError, f"epsilon {REAL}"),
    Row(lambda f: ZCDPMechanism(rho=0), ValueError, rf"rho must lie in {POS}"),
    Row(lambda f: ZCDPMechanism(rho=-1), ValueError, rf"rho must lie in {POS}"),
    Row(lambda f: ZCDPMechanism(rho=nan), ValueError, rf"rho must lie in {POS}"),
    Row(lambda f: ZCDPMechanism(rho=inf), ValueError, rf"rho must lie in {POS}"),
    Row(lambda f: gaussian_delta(0.0, np.array([1.0])), ValueError, rf"mu must lie in {POS}"),
    Row(lambda f: gaussian_delta(-1.0, np.array([1.0])), ValueError, rf"mu must lie in {POS}"),
    Row(lambda f: gaussian_delta(1.0, np.array([nan])), ValueError, "epsilon must not contain NaN"),
]

GROUPS["mechanisms: audit"] = [
    Row(
        lambda f: audit(f.G, None),
        TypeError,
        r"rng must be a numpy\.random\.Generator.*got NoneType",
    ),
    Row(lambda f: audit(f.G, 0), TypeError, r"rng must be a numpy\.random\.Generator.*got int"),
    Row(
        lambda f: audit(f.G, np.random.RandomState(0)),
        TypeError,
        r"rng must be a numpy\.random\.Generator.*got RandomState",
    ),
    Row(
        lambda f: audit(f.G, f.rng, samples=0), ValueError, "samples must be an integer >= 1, got 0"
    ),
    Row(
        lambda f: audit(f.G, f.rng, samples=-1),
        ValueError,
        "samples must be an integer >= 1, got -1",
    ),
    Row(lambda f: audit(f.G, f.rng, samples=1.5), TypeError, f"samples {INT}, got float"),
    Row(
        lambda f: audit(f.G, f.rng, confidence=0.0),
        ValueError,
        rf"confidence must lie in {UNIT_OPEN}",
    ),
    Row(
        lambda f: audit(f.G, f.rng, confidence=1.0),
        ValueError,
        rf"confidence must lie in {UNIT_OPEN}",
    ),
    Row(
        lambda f: audit(f.G, f.rng, confidence=nan),
        ValueError,
        rf"confidence must lie in {UNIT_OPEN}",
    ),
    Row(
        lambda f: audit("gauss", f.rng), TypeError, r"mechanism must have a tradeoff\(fpr\) method"
    ),
    Row(
        lambda f: audit(ZCDPMechanism(rho=1.0), f.rng),
        TypeError,
        "no built-in sampler for ZCDPMechanism",
    ),
    Row(lambda f: audit(f.G, f.rng, sampler=5), TypeError, "sampler must be callable, got int"),
    Row(
        lambda f: audit(f.G, f.rng, thresholds=[]),
        ValueError,
        r"thresholds must be a non-empty 1-D array",
    ),
    Row(
        lambda f: audit(f.G, f.rng, thresholds=[[0.0]]),
        ValueError,
        r"non-empty 1-D array, got shape \(1, 1\)",
    ),
    Row(
        lambda f: audit(f.G, f.rng, thresholds=[0.0, nan]),
        ValueError,
        "thresholds must not contain NaN",
    ),
    Row(
        lambda f: audit(f.G, f.rng, thresholds="a"),
        TypeError,
        "thresholds must be a number or an array",
    ),
    Row(
        lambda f: audit(
            f.G, f.rng, samples=1000, sampler=lambda r, n: (np.zeros(n), np.zeros(n + 1))
        ),
        ValueError,
        r"sampler returned outputs_on_D_prime of shape \(1001,\), expected \(1000,\)",
    ),
    Row(
        lambda f: audit(
            f.G, f.rng, samples=1000, sampler=lambda r, n: (np.full(n, nan), np.zeros(n))
        ),
        ValueError,
        r"sampler returned non-finite values \(NaN or inf\) in outputs_on_D",
    ),
    Row(
        lambda f: audit(f.G, f.rng, samples=1000, sampler=lambda r, n: (["a"] * n, np.zeros(n))),
        ValueError,
        "sampler returned non-numeric outputs_on_D",
    ),
    Row(
        lambda f: audit(f.G, f.rng, samples=1000, sampler=lambda r, n: np.zeros(n)),
        ValueError,
        r"sampler must return a pair \(outputs_on_D, outputs_on_D_prime\)",
    ),
    Row(
        lambda f: f.audited().epsilon_lower_bound(-1.0), ValueError, rf"delta must lie in {DELTA_Q}"
    ),
    Row(
        lambda f: f.audited().epsilon_lower_bound(1.0), ValueError, rf"delta must lie in {DELTA_Q}"
    ),
    Row(
        lambda f: f.audited().epsilon_lower_bound(nan), ValueError, rf"delta must lie in {DELTA_Q}"
    ),
    Row(
        lambda f: audit(f.G, f.rng, samples=1000, thresholds=[inf]),
        ValueError,
        "thresholds must be finite",
    ),
    Row(
        lambda f: audit(
            f.G, f.rng, samples=1000, sampler=lambda r, n: (np.full(n, inf), np.zeros(n))
        ),
        ValueError,
        "sampler returned (inf|non-finite)",
    ),
]

GROUPS["huge Python integers (any parameter)"] = [
    Row(lambda f: GaussianMechanism(sigma=10**400), ValueError, f"sigma .*{FLOAT_RANGE}"),
    Row(lambda f: LaplaceMechanism(b=10**400), ValueError, f"b .*{FLOAT_RANGE}"),
    Row(lambda f: RandomizedResponse(p=10**400), ValueError, f"p .*{FLOAT_RANGE}"),
    Row(
        lambda f: RandomizedResponse(p=0.9, k=10**400),
        ValueError,
        r"k must be an integer <= 2\*\*63",
    ),
    Row(lambda f: poisson_subsample(f.G, 10**400), ValueError, f"sample_rate .*{FLOAT_RANGE}"),
    Row(
        lambda f: compose([f.G], counts=[10**400]),
        ValueError,
        r"counts\[0\] must be an integer <= 2",
    ),
    Row(lambda f: f.G.epsilon(10**400), ValueError, f"delta .*{FLOAT_RANGE}"),
    Row(lambda f: f.G.epsilon([1e-05, 10**400]), ValueError, f"delta .*{FLOAT_RANGE}"),
    Row(lambda f: f.G.delta(10**400), ValueError, f"epsilon .*{FLOAT_RANGE}"),
    Row(lambda f: f.G.rdp(10**400), ValueError, f"alpha .*{FLOAT_RANGE}"),
    Row(
        lambda f: noise_multiplier(10**400, 1e-05, 0.01, 100),
        ValueError,
        f"epsilon .*{FLOAT_RANGE}",
    ),
    Row(lambda f: max_steps(1.0, 1e-05, 10**400, 0.01), ValueError, f"{FLOAT_RANGE}"),
]

ROWS: list[Row] = [row for rows in GROUPS.values() for row in rows]


@pytest.mark.parametrize("row", params(ROWS))
def test_bad_input_is_rejected_clearly(row: Row):
    with pytest.raises(row.exc, match=row.match):
        run_row(row)


def test_catalogue_is_well_formed():
    check_well_formed(GROUPS, at_least=80)
