"""Bad inputs to the calibrators: each call must fail loudly, naming the parameter.
The catalogue's rules are in ``tests/bad_input.py``."""

from __future__ import annotations

from math import inf, nan

import pytest
from bad_input import (
    DELTA_Q,
    INT,
    NO_PURE,
    NONNEG,
    POS,
    RATE,
    REAL,
    TOL,
    UNIT_OPEN,
    Row,
    check_well_formed,
    params,
    run_row,
)

from dpacct.calibrators import (
    CalibrationError,
    UnreachableTargetError,
    analytic_gaussian_sigma,
    calibrate,
    get_noise_multiplier,
    max_sample_rate,
    max_steps,
    noise_multiplier,
)
from dpacct.mechanisms import PureDPMechanism

GROUPS: dict[str, list[Row]] = {}

GROUPS["calibrators"] = [
    Row(lambda f: calibrate(None, 1.0, 1e-05), TypeError, r"family must be callable"),
    Row(
        lambda f: calibrate(f.fam, 0.0, 1e-05), ValueError, rf"epsilon must lie in {POS}, got 0\.0"
    ),
    Row(lambda f: calibrate(f.fam, nan, 1e-05), ValueError, rf"epsilon must lie in {POS}, got nan"),
    Row(lambda f: calibrate(f.fam, inf, 1e-05), ValueError, rf"epsilon must lie in {POS}, got inf"),
    Row(lambda f: calibrate(f.fam, "1", 1e-05), TypeError, f"epsilon {REAL}, got str"),
    Row(
        lambda f: calibrate(f.fam, 1.0, 0.0),
        ValueError,
        "delta=0 needs a pure-DP family.*pure_epsilon is inf",
    ),
    Row(lambda f: calibrate(f.fam, 1.0, -1e-05), ValueError, "delta must lie in"),
    Row(lambda f: calibrate(f.fam, 1.0, 1.0), ValueError, rf"delta must lie in {DELTA_Q}"),
    Row(lambda f: calibrate(f.fam, 1.0, 1e-05, rtol=0.0), ValueError, rf"rtol must lie in {TOL}"),
    Row(lambda f: calibrate(f.fam, 1.0, 1e-05, rtol=0.5), ValueError, rf"rtol must lie in {TOL}"),
    Row(
        lambda f: calibrate(f.fam, 1.0, 1e-05, rtol=nan), ValueError, "rtol must be a finite number"
    ),
    Row(
        lambda f: calibrate(f.fam, 1.0, 1e-05, interval=(2.0, 1.0)),
        ValueError,
        "interval must satisfy low <= high",
    ),
    Row(
        lambda f: calibrate(f.fam, 1.0, 1e-05, interval=(-1.0, 1.0)),
        ValueError,
        rf"interval\[0\] must lie in {POS}",
    ),
    Row(
        lambda f: calibrate(f.fam, 1.0, 1e-05, interval=(nan, 2.0)),
        ValueError,
        rf"interval\[0\] must lie in {POS}, got nan",
    ),
    Row(
        lambda f: calibrate(f.fam, 1.0, 1e-05, interval=(1.0, 2.0, 3.0)),
        TypeError,
        r"interval must be a pair \(low, high\)",
    ),
    Row(
        lambda f: calibrate(f.fam, 1.0, 1e-05, interval=1.0), TypeError, r"interval must be a pair"
    ),
    Row(
        lambda f: calibrate(f.steps_of, 10.0, 1e-05, integer=True, interval=(0.5, 5)),
        ValueError,
        r"interval must lie in \[1, inf\) for an integer parameter",
    ),
    Row(
        lambda f: calibrate(f.fam, 1.0, 1e-05, domain=(2.0, 1.0)),
        ValueError,
        "domain must satisfy 0 <= low < high",
    ),
    Row(
        lambda f: calibrate(f.fam, 1.0, 1e-05, domain=(-1.0, 1.0)),
        ValueError,
        rf"domain\[0\] must lie in {NONNEG}, got -1\.0",
    ),
    Row(
        lambda f: calibrate(f.fam, 1.0, 1e-05, domain=(10.0, 20.0)),
        ValueError,
        r"interval \(0\.5, 2\.0\) lies outside the domain \(10\.0, 20\.0\)",
    ),
    Row(
        lambda f: calibrate(f.fam, 1.0, 1e-05, domain=(0.1, 20.0), start=50.0),
        ValueError,
        r"start must lie in the domain",
    ),
    Row(lambda f: calibrate(f.fam, 1.0, 1e-05, start=0.0), ValueError, rf"start must lie in {POS}"),
    Row(lambda f: calibrate(f.fam, 1.0, 1e-05, estimate=5), TypeError, "estimate must be callable"),
    Row(
        lambda f: calibrate(f.fam, 1.0, 1e-05, max_evaluations=1),
        ValueError,
        "max_evaluations must be an integer >= 2",
    ),
    Row(
        lambda f: calibrate(f.fam, 1.0, 1e-05, max_evaluations=2.5),
        TypeError,
        "max_evaluations must be an integer",
    ),
    Row(lambda f: calibrate(f.pair, 1.0, 1e-05, ratios=[]), ValueError, "ratios must not be empty"),
    Row(
        lambda f: calibrate(f.pair, 1.0, 1e-05, ratios=[1.0, -1.0]),
        ValueError,
        rf"ratios\[1\] must lie in {POS}",
    ),
    Row(
        lambda f: calibrate(f.pair, 1.0, 1e-05, ratios=[1.0, 2.0], integer=True),
        ValueError,
        "ratios .* require a continuous parameter",
    ),
    Row(
        lambda f: calibrate(lambda s: "x", 1.0, 1e-05), TypeError, "family must return a Mechanism"
    ),
    Row(
        lambda f: calibrate(f.fam, 1.0, 1e-05, domain=(0.01, 0.6)),
        UnreachableTargetError,
        r"target epsilon=1 is out of reach at delta=1e-05: the smallest epsilon the family "
        r"reaches is 8\.0",
    ),
    Row(
        lambda f: calibrate(
            lambda n: PureDPMechanism(epsilon=float(n)), 0.5, 1e-05, integer=True, domain=(1, 100)
        ),
        UnreachableTargetError,
        r"target epsilon=0\.5 is out of reach.*smallest epsilon the family reaches is 0\.99",
    ),
    Row(
        lambda f: calibrate(lambda s: f.G, 1.0, 1e-05),
        CalibrationError,
        "epsilon does not depend on parameter",
    ),
    Row(lambda f: calibrate(f.fam, 1.0, 1e-05, tol=1.0), ValueError, rf"tol must lie in {TOL}"),
    Row(lambda f: calibrate(f.fam, 1.0, 1e-05, integer="no"), TypeError, "integer must be a bool"),
    Row(
        lambda f: calibrate(f.fam, 1.0, 1e-05, increasing="no"),
        TypeError,
        "increasing must be a bool",
    ),
    Row(
        lambda f: noise_multiplier(0.0, 1e-05, 0.01, 100), ValueError, rf"epsilon must lie in {POS}"
    ),
    Row(
        lambda f: noise_multiplier(-1.0, 1e-05, 0.01, 100),
        ValueError,
        rf"epsilon must lie in {POS}",
    ),
    Row(
        lambda f: noise_multiplier(nan, 1e-05, 0.01, 100), ValueError, rf"epsilon must lie in {POS}"
    ),
    Row(lambda f: noise_multiplier(1.0, 0.0, 0.01, 100), ValueError, rf"delta{NO_PURE}"),
    Row(
        lambda f: noise_multiplier(1.0, 1.5, 0.01, 100),
        ValueError,
        rf"delta must lie in {UNIT_OPEN}",
    ),
    Row(
        lambda f: noise_multiplier(1.0, 1e-05, 0.0, 100),
        ValueError,
        rf"sample_rate must lie in {RATE}",
    ),
    Row(
        lambda f: noise_multiplier(1.0, 1e-05, 2.0, 100),
        ValueError,
        rf"sample_rate must lie in {RATE}",
    ),
    Row(
        lambda f: noise_multiplier(1.0, 1e-05, 0.01, 0), ValueError, "steps must be an integer >= 1"
    ),
    Row(
        lambda f: noise_multiplier(1.0, 1e-05, 0.01, -5),
        ValueError,
        "steps must be an integer >= 1",
    ),
    Row(lambda f: noise_multiplier(1.0, 1e-05, 0.01, 2.5), TypeError, f"steps {INT}, got float"),
    Row(
        lambda f: noise_multiplier(1.0, 1e-05, 0.01),
        TypeError,
        "one of steps or epochs is required",
    ),
    Row(
        lambda f: noise_multiplier(1.0, 1e-05, 0.01, 100, epochs=1.0),
        ValueError,
        "give either steps or epochs, not both",
    ),
    Row(
        lambda f: noise_multiplier(1.0, 1e-05, 0.01, epochs=0.0),
        ValueError,
        rf"epochs must lie in {POS}",
    ),
    Row(
        lambda f: noise_multiplier(1.0, 1e-05, 0.01, epochs=0.001),
        ValueError,
        "epochs must give at least one step",
    ),
    Row(
        lambda f: noise_multiplier(1.0, 1e-05, 0.01, 100, rtol=0.0),
        ValueError,
        rf"rtol must lie in {TOL}",
    ),
    Row(
        lambda f: noise_multiplier(1.0, 1e-05, 0.01, 100, tol=1.0),
        ValueError,
        rf"tol must lie in {TOL}",
    ),
    Row(lambda f: max_steps(0.0, 1e-05, 1.0, 0.01), ValueError, rf"epsilon must lie in {POS}"),
    Row(
        lambda f: max_steps(1.0, 1e-05, 0.0, 0.01),
        ValueError,
        rf"noise_multiplier must lie in {POS}",
    ),
    Row(
        lambda f: max_steps(1.0, 1e-05, nan, 0.01),
        ValueError,
        rf"noise_multiplier must lie in {POS}",
    ),
    Row(lambda f: max_steps(1.0, 1e-05, 1.0, 0.0), ValueError, rf"sample_rate must lie in {RATE}"),
    Row(
        lambda f: max_steps(0.01, 1e-05, 0.5, 1.0),
        UnreachableTargetError,
        r"target epsilon=0\.01 is out of reach.*at steps=1",
    ),
    Row(lambda f: max_sample_rate(0.0, 1e-05, 1.0, 100), ValueError, rf"epsilon must lie in {POS}"),
    Row(
        lambda f: max_sample_rate(1.0, 1e-05, -1.0, 100),
        ValueError,
        rf"noise_multiplier must lie in {POS}",
    ),
    Row(lambda f: max_sample_rate(1.0, 1e-05, 1.0, 0), ValueError, "steps must be an integer >= 1"),
    Row(lambda f: max_sample_rate(1.0, 1e-05, 1.0, 1.5), TypeError, f"steps {INT}, got float"),
    Row(lambda f: analytic_gaussian_sigma(0.0, 1e-05), ValueError, rf"epsilon must lie in {POS}"),
    Row(lambda f: analytic_gaussian_sigma(inf, 1e-05), ValueError, rf"epsilon must lie in {POS}"),
    Row(lambda f: analytic_gaussian_sigma("1", 1e-05), TypeError, f"epsilon {REAL}, got str"),
    Row(lambda f: analytic_gaussian_sigma(1.0, 0.0), ValueError, rf"delta{NO_PURE}"),
    Row(lambda f: analytic_gaussian_sigma(1.0, 1.0), ValueError, rf"delta must lie in {UNIT_OPEN}"),
    Row(
        lambda f: analytic_gaussian_sigma(1.0, 1e-05, 0.0),
        ValueError,
        rf"sensitivity must lie in {POS}",
    ),
    Row(
        lambda f: analytic_gaussian_sigma(1.0, 1e-05, nan),
        ValueError,
        rf"sensitivity must lie in {POS}",
    ),
    Row(
        lambda f: get_noise_multiplier(
            target_epsilon=0.0, target_delta=1e-05, sample_rate=0.01, steps=100
        ),
        ValueError,
        rf"target_epsilon must lie in {POS}",
    ),
    Row(
        lambda f: get_noise_multiplier(
            target_epsilon=1.0, target_delta=0.0, sample_rate=0.01, steps=100
        ),
        ValueError,
        rf"target_delta{NO_PURE}",
    ),
    Row(
        lambda f: get_noise_multiplier(
            target_epsilon=1.0, target_delta=1e-05, sample_rate=0.0, steps=100
        ),
        ValueError,
        rf"sample_rate must lie in {RATE}",
    ),
    Row(
        lambda f: get_noise_multiplier(
            target_epsilon=1.0,
            target_delta=1e-05,
            sample_rate=0.01,
            steps=100,
            accountant="moments",
        ),
        ValueError,
        "accountant must be one of 'rdp', 'prv', 'gdp', 'pld' or None, got 'moments'",
    ),
    Row(
        lambda f: get_noise_multiplier(
            target_epsilon=1.0,
            target_delta=1e-05,
            sample_rate=0.01,
            steps=100,
            epsilon_tolerance=0.0,
        ),
        ValueError,
        rf"epsilon_tolerance must lie in {POS}",
    ),
    Row(
        lambda f: get_noise_multiplier(
            target_epsilon=1.0,
            target_delta=1e-05,
            sample_rate=0.01,
            steps=100,
            epsilon_tolerance=nan,
        ),
        ValueError,
        rf"epsilon_tolerance must lie in {POS}",
    ),
    Row(
        lambda f: get_noise_multiplier(target_epsilon=1.0, target_delta=1e-05, sample_rate=0.01),
        TypeError,
        "one of steps or epochs is required",
    ),
    Row(
        lambda f: get_noise_multiplier(
            target_epsilon=1.0, target_delta=1e-05, sample_rate=0.01, steps=10, epochs=1
        ),
        ValueError,
        "give either steps or epochs, not both",
    ),
]

ROWS: list[Row] = [row for rows in GROUPS.values() for row in rows]


@pytest.mark.parametrize("row", params(ROWS))
def test_bad_input_is_rejected_clearly(row: Row):
    with pytest.raises(row.exc, match=row.match):
        run_row(row)


def test_catalogue_is_well_formed():
    check_well_formed(GROUPS, at_least=70)
