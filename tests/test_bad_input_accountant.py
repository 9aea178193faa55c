"""Bad inputs to the engine (transformers, privacy queries, Renyi helpers, the ledger
and its files): each call must fail loudly, naming the parameter.  The catalogue's
rules are in ``tests/bad_input.py``."""

from __future__ import annotations

import os
import tempfile
from math import inf, nan

import numpy as np
import pytest
from bad_input import (
    COUNT_RANGE,
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
    Unregistered,
    _tmp_path,
    check_well_formed,
    drop_key,
    good_ledger,
    ledger_file,
    params,
    run_row,
    saved_ledger,
    set_key,
)

from dpacct.accountant import (
    BudgetExceededError,
    LedgerFileError,
    PrivacyAccountant,
    compose,
    poisson_subsample,
    pure_dp_rdp,
    rdp_to_delta,
    rdp_to_epsilon,
    subsample_without_replacement,
    zcdp_rdp,
)
from dpacct.mechanisms import (
    ExponentialMechanism,
    GaussianMechanism,
    PureDPMechanism,
    RandomizedResponse,
    ZCDPMechanism,
)

GROUPS: dict[str, list[Row]] = {}

GROUPS["accountant: compose / subsample"] = [
    Row(lambda f: compose([]), ValueError, "mechanisms must be a non-empty list"),
    Row(lambda f: compose(f.G), TypeError, "list of mechanisms, got a single mechanism"),
    Row(
        lambda f: compose([f.G, "gauss"]),
        TypeError,
        r"mechanisms\[1\] must be a Mechanism, got str",
    ),
    Row(lambda f: compose([None]), TypeError, r"mechanisms\[0\] must be a Mechanism, got NoneType"),
    Row(lambda f: compose(["ab"]), TypeError, r"mechanisms\[0\] must be a Mechanism, got str"),
    Row(lambda f: compose(5), TypeError, "mechanisms must be a list of mechanisms"),
    Row(
        lambda f: compose([f.G], counts=[1, 2]),
        ValueError,
        "one entry per mechanism: got 2 counts for 1",
    ),
    Row(
        lambda f: compose([f.G], counts=[]),
        ValueError,
        "one entry per mechanism: got 0 counts for 1",
    ),
    Row(
        lambda f: compose([f.G], counts=[0]),
        ValueError,
        r"counts\[0\] must be an integer >= 1, got 0",
    ),
    Row(
        lambda f: compose([f.G], counts=[-1]),
        ValueError,
        r"counts\[0\] must be an integer >= 1, got -1",
    ),
    Row(
        lambda f: compose([f.G], counts=[np.int64(-3)]),
        ValueError,
        r"counts\[0\] must be an integer >= 1",
    ),
    Row(lambda f: compose([f.G], counts=[1.5]), TypeError, rf"counts\[0\] {INT}, got float 1\.5"),
    Row(lambda f: compose([f.G], counts=np.array([2.5])), TypeError, rf"counts\[0\] {INT}"),
    Row(lambda f: compose([f.G], counts=[True]), TypeError, rf"counts\[0\] {INT}, got bool"),
    Row(lambda f: compose([f.G], counts=["3"]), TypeError, rf"counts\[0\] {INT}, got str"),
    Row(lambda f: compose([f.G], counts=[None]), TypeError, rf"counts\[0\] {INT}, got NoneType"),
    Row(lambda f: compose([f.G], counts=[nan]), ValueError, rf"counts\[0\] {COUNT_RANGE}, got nan"),
    Row(lambda f: compose([f.G], counts=[inf]), ValueError, rf"counts\[0\] {COUNT_RANGE}, got inf"),
    Row(lambda f: compose([f.G], counts=5), TypeError, "counts must be a (list|sequence)"),
    Row(
        lambda f: poisson_subsample(f.G, 0.0),
        ValueError,
        rf"sample_rate must lie in {RATE}, got 0\.0",
    ),
    Row(
        lambda f: poisson_subsample(f.G, 1.5),
        ValueError,
        rf"sample_rate must lie in {RATE}, got 1\.5",
    ),
    Row(lambda f: poisson_subsample(f.G, -0.1), ValueError, rf"sample_rate must lie in {RATE}"),
    Row(
        lambda f: poisson_subsample(f.G, nan),
        ValueError,
        rf"sample_rate must lie in {RATE}, got nan",
    ),
    Row(lambda f: poisson_subsample(f.G, None), TypeError, f"sample_rate {REAL}, got NoneType"),
    Row(lambda f: poisson_subsample(f.G, "0.1"), TypeError, f"sample_rate {REAL}, got str"),
    Row(lambda f: poisson_subsample(f.G, True), TypeError, f"sample_rate {REAL}, got bool"),
    Row(
        lambda f: poisson_subsample(None, 0.1),
        TypeError,
        "mechanism must be a Mechanism, got NoneType",
    ),
    Row(
        lambda f: poisson_subsample("gauss", 0.1),
        TypeError,
        "mechanism must be a Mechanism, got str",
    ),
    Row(
        lambda f: subsample_without_replacement(f.G, 0.0),
        ValueError,
        rf"sample_rate must lie in {RATE}",
    ),
    Row(
        lambda f: subsample_without_replacement(f.G, 2.0),
        ValueError,
        rf"sample_rate must lie in {RATE}",
    ),
    Row(
        lambda f: subsample_without_replacement(1, 0.5), TypeError, "mechanism must be a Mechanism"
    ),
]

GROUPS["accountant: privacy queries (any mechanism)"] = [
    Row(lambda f: f.G.epsilon(0.0), ValueError, rf"delta{NO_PURE}; use delta in {UNIT_OPEN}"),
    Row(lambda f: f.G.epsilon(1.0), ValueError, rf"delta must lie in {DELTA_Q}, got 1\.0"),
    Row(lambda f: f.G.epsilon(-1e-05), ValueError, rf"delta must lie in {DELTA_Q}"),
    Row(lambda f: f.G.epsilon(nan), ValueError, rf"delta must lie in {DELTA_Q}, got nan"),
    Row(lambda f: f.G.epsilon([1e-05, 2.0]), ValueError, rf"delta must lie in {DELTA_Q}, got 2\.0"),
    Row(lambda f: f.G.epsilon(np.array([1e-05, nan])), ValueError, rf"delta must lie in {DELTA_Q}"),
    Row(lambda f: f.RUN.epsilon(0.0), ValueError, rf"delta{NO_PURE}"),
    Row(lambda f: f.G.epsilon("1e-5"), TypeError, f"delta {REAL}"),
    Row(lambda f: f.STEP.epsilon("0.1"), TypeError, f"delta {REAL}"),
    Row(lambda f: f.G.epsilon(None), TypeError, f"delta {REAL}.*None"),
    Row(lambda f: f.G.epsilon(True), TypeError, f"delta {REAL}.*bool"),
    Row(lambda f: f.G.epsilon(1e-05, tol=0.0), ValueError, rf"tol must lie in {TOL}"),
    Row(lambda f: f.RUN.epsilon(1e-05, tol=0.0), ValueError, rf"tol must lie in {TOL}, got 0\.0"),
    Row(lambda f: f.RUN.epsilon(1e-05, tol=0.7), ValueError, rf"tol must lie in {TOL}, got 0\.7"),
    Row(lambda f: f.STEP.epsilon(1e-05, tol=nan), ValueError, rf"tol must lie in {TOL}, got nan"),
    Row(lambda f: f.RUN.epsilon(1e-05, tol="a"), TypeError, f"tol {REAL}, got str"),
    Row(lambda f: f.G.epsilon_bounds(0.0), ValueError, rf"delta{NO_PURE}"),
    Row(lambda f: f.G.epsilon_bounds([1e-05]), TypeError, f"delta {REAL}, got list"),
    Row(lambda f: f.RUN.epsilon_bounds(1e-05, tol=-1.0), ValueError, rf"tol must lie in {TOL}"),
    Row(lambda f: f.G.epsilon_bounds(1e-05, tol=1.0), ValueError, rf"tol must lie in {TOL}"),
    Row(lambda f: f.G.delta(-1.0), ValueError, rf"epsilon must lie in {NONNEG}, got -1\.0"),
    Row(lambda f: f.G.delta(nan), ValueError, rf"epsilon must lie in {NONNEG}, got nan"),
    Row(lambda f: f.G.delta(inf), ValueError, rf"epsilon must lie in {NONNEG}, got inf"),
    Row(lambda f: f.G.delta([1.0, -1.0]), ValueError, rf"epsilon must lie in {NONNEG}, got -1\.0"),
    Row(lambda f: f.G.delta([1.0, nan]), ValueError, rf"epsilon must lie in {NONNEG}, got nan"),
    Row(lambda f: f.RUN.delta(1.0, tol=1.0), ValueError, rf"tol must lie in {TOL}, got 1\.0"),
    Row(lambda f: f.G.delta("1"), TypeError, f"epsilon {REAL}"),
    Row(lambda f: f.G.delta(None), TypeError, f"epsilon {REAL}.*None"),
    Row(lambda f: f.G.delta(True), TypeError, f"epsilon {REAL}.*bool"),
    Row(lambda f: f.G.delta(1.0, tol="a"), TypeError, f"tol {REAL}"),
    Row(lambda f: f.G.rdp(1.0), ValueError, r"alpha must be > 1 \(real Renyi orders\), got .*1\.0"),
    Row(lambda f: f.G.rdp(0.5), ValueError, r"alpha must be > 1 \(real Renyi orders\)"),
    Row(lambda f: f.G.rdp(-inf), ValueError, r"alpha must be > 1"),
    Row(lambda f: f.G.rdp([2.0, 1.0]), ValueError, r"alpha must be > 1 .*got .*1\.0"),
    Row(lambda f: f.G.rdp(nan), ValueError, "alpha must not contain NaN"),
    Row(
        lambda f: f.G.rdp("2"),
        TypeError,
        "alpha must be a number or an array of numbers, got str '2'",
    ),
    Row(
        lambda f: f.G.rdp(True),
        TypeError,
        r"alpha must be a number or an array of numbers, got bool",
    ),
    Row(lambda f: f.STEP.rdp(1.0), ValueError, r"alpha must be > 1"),
    Row(lambda f: RandomizedResponse(p=0.7).rdp(1.0), ValueError, r"alpha must be > 1"),
    Row(lambda f: f.G.rdp(None), TypeError, "alpha must be a number or an array of numbers"),
    Row(lambda f: f.G.tradeoff(-0.1), ValueError, r"fpr must lie in \[0, 1\], got .*-0\.1"),
    Row(lambda f: f.G.tradeoff(1.1), ValueError, r"fpr must lie in \[0, 1\], got .*1\.1"),
    Row(lambda f: f.G.tradeoff(inf), ValueError, r"fpr must lie in \[0, 1\]"),
    Row(lambda f: f.G.tradeoff(nan), ValueError, "fpr must not contain NaN"),
    Row(lambda f: f.G.tradeoff("a"), TypeError, "fpr must be a number or an array of numbers"),
    Row(
        lambda f: PureDPMechanism(epsilon=1.0).tradeoff(2.0),
        ValueError,
        r"fpr must lie in \[0, 1\]",
    ),
    Row(lambda f: f.RUN.tradeoff(0.1, tol=1.0), ValueError, rf"tol must lie in {TOL}"),
    Row(lambda f: f.G.tradeoff(None), TypeError, "fpr must be a number or an array of numbers"),
    Row(lambda f: f.G.tradeoff(True), TypeError, "fpr must be a number"),
    Row(lambda f: f.G.tradeoff(0.1, tol=nan), ValueError, rf"tol must lie in {TOL}"),
    Row(lambda f: f.G.pld(tol=0.0), ValueError, rf"tol must lie in {TOL}, got 0\.0"),
    Row(lambda f: f.G.pld(pessimistic="no"), TypeError, "pessimistic must be a bool"),
    Row(lambda f: ExponentialMechanism(epsilon=1.0).epsilon(1.0), ValueError, "delta must lie in"),
    Row(lambda f: ZCDPMechanism(rho=1.0).delta(-1.0), ValueError, rf"epsilon must lie in {NONNEG}"),
]

GROUPS["accountant: Renyi helpers"] = [
    Row(lambda f: pure_dp_rdp(-1.0, np.array([2.0])), ValueError, rf"epsilon must lie in {NONNEG}"),
    Row(lambda f: zcdp_rdp(-1.0, np.array([2.0])), ValueError, rf"rho must lie in {POS}"),
    Row(
        lambda f: rdp_to_epsilon(lambda a: a / 2, 0.0),
        ValueError,
        rf"delta must lie in {UNIT_OPEN}",
    ),
    Row(
        lambda f: rdp_to_epsilon(lambda a: a / 2, 2.0),
        ValueError,
        rf"delta must lie in {UNIT_OPEN}",
    ),
    Row(
        lambda f: rdp_to_delta(lambda a: a / 2, -1.0), ValueError, rf"epsilon must lie in {NONNEG}"
    ),
    Row(lambda f: pure_dp_rdp(1.0, np.array([0.5])), ValueError, "alpha must be > 1"),
    Row(lambda f: rdp_to_epsilon(None, 1e-05), TypeError, "rdp must be (callable|a callable)"),
    Row(lambda f: rdp_to_epsilon(lambda a: a * nan, 1e-05), ValueError, "NaN"),
]

GROUPS["accountant: PrivacyAccountant (ledger)"] = [
    Row(
        lambda f: PrivacyAccountant(budget_epsilon=1.0), ValueError, "needs both budget_epsilon and"
    ),
    Row(
        lambda f: PrivacyAccountant(budget_delta=1e-05), ValueError, "needs both budget_epsilon and"
    ),
    Row(
        lambda f: PrivacyAccountant(budget_epsilon=-1.0, budget_delta=1e-05),
        ValueError,
        rf"budget_epsilon must lie in {NONNEG}, got -1\.0",
    ),
    Row(
        lambda f: PrivacyAccountant(budget_epsilon=nan, budget_delta=1e-05),
        ValueError,
        rf"budget_epsilon must lie in {NONNEG}, got nan",
    ),
    Row(
        lambda f: PrivacyAccountant(budget_epsilon=inf, budget_delta=1e-05),
        ValueError,
        rf"budget_epsilon must lie in {NONNEG}, got inf",
    ),
    Row(
        lambda f: PrivacyAccountant(budget_epsilon="1", budget_delta=1e-05),
        TypeError,
        f"budget_epsilon {REAL}, got str",
    ),
    Row(
        lambda f: PrivacyAccountant(budget_epsilon=1.0, budget_delta=0.0),
        ValueError,
        rf"budget_delta must lie in {UNIT_OPEN}",
    ),
    Row(
        lambda f: PrivacyAccountant(budget_epsilon=1.0, budget_delta=1.0),
        ValueError,
        rf"budget_delta must lie in {UNIT_OPEN}",
    ),
    Row(lambda f: PrivacyAccountant(tol=0.0), ValueError, rf"tol must lie in {TOL}"),
    Row(lambda f: PrivacyAccountant(tol=nan), ValueError, rf"tol must lie in {TOL}, got nan"),
    Row(lambda f: PrivacyAccountant(1.0, 1e-05), TypeError, "positional argument"),
    Row(
        lambda f: f.acct.step(noise_multiplier=0.0, sample_rate=0.1),
        ValueError,
        rf"noise_multiplier must lie in {POS}, got 0\.0",
    ),
    Row(
        lambda f: f.acct.step(noise_multiplier=nan, sample_rate=0.1),
        ValueError,
        rf"noise_multiplier must lie in {POS}, got nan",
    ),
    Row(
        lambda f: f.acct.step(noise_multiplier=inf, sample_rate=0.1),
        ValueError,
        rf"noise_multiplier must lie in {POS}, got inf",
    ),
    Row(
        lambda f: f.acct.step(noise_multiplier=None, sample_rate=0.1),
        TypeError,
        f"noise_multiplier {REAL}, got NoneType",
    ),
    Row(
        lambda f: f.acct.step(noise_multiplier="1", sample_rate=0.1),
        TypeError,
        f"noise_multiplier {REAL}, got str",
    ),
    Row(
        lambda f: f.acct.step(noise_multiplier=1.0, sample_rate=0.0),
        ValueError,
        rf"sample_rate must lie in {RATE}",
    ),
    Row(
        lambda f: f.acct.step(noise_multiplier=1.0, sample_rate=1.5),
        ValueError,
        rf"sample_rate must lie in {RATE}",
    ),
    Row(
        lambda f: f.acct.step(noise_multiplier=1.0, sample_rate=nan),
        ValueError,
        rf"sample_rate must lie in {RATE}, got nan",
    ),
    Row(
        lambda f: f.acct.step(noise_multiplier=1.0, sample_rate=0.1, count=0),
        ValueError,
        "count must be an integer >= 1, got 0",
    ),
    Row(
        lambda f: f.acct.step(noise_multiplier=1.0, sample_rate=0.1, count=-2),
        ValueError,
        "count must be an integer >= 1, got -2",
    ),
    Row(
        lambda f: f.acct.step(noise_multiplier=1.0, sample_rate=0.1, count=1.5),
        TypeError,
        f"count {INT}, got float",
    ),
    Row(
        lambda f: f.acct.step(noise_multiplier=1.0, sample_rate=0.1, count=True),
        TypeError,
        f"count {INT}, got bool",
    ),
    Row(
        lambda f: f.acct.step(noise_multiplier=1.0, sample_rate=0.1, count=None),
        TypeError,
        f"count {INT}, got NoneType",
    ),
    Row(lambda f: f.acct.step(1.0, 0.1), TypeError, "positional argument"),
    Row(lambda f: f.acct.step(sample_rate=0.1), TypeError, "noise_multiplier"),
    Row(lambda f: f.acct.record(None), TypeError, "mechanism must be a Mechanism, got NoneType"),
    Row(lambda f: f.acct.record("gauss"), TypeError, "mechanism must be a Mechanism, got str"),
    Row(
        lambda f: f.acct.record(GaussianMechanism),
        TypeError,
        "mechanism must be a Mechanism, got type",
    ),
    Row(lambda f: f.acct.record(f.G, 0), ValueError, "count must be an integer >= 1, got 0"),
    Row(lambda f: f.acct.record(f.G, -1), ValueError, "count must be an integer >= 1, got -1"),
    Row(lambda f: f.acct.record(f.G, 2.5), TypeError, f"count {INT}, got float"),
    Row(lambda f: f.acct.record(f.G, "2"), TypeError, f"count {INT}, got str"),
    Row(lambda f: f.acct.epsilon(0.0), ValueError, rf"delta{NO_PURE}"),
    Row(lambda f: f.acct.epsilon(nan), ValueError, rf"delta must lie in {DELTA_Q}, got nan"),
    Row(lambda f: f.acct.epsilon(None), TypeError, f"delta {REAL}, got NoneType"),
    Row(lambda f: f.acct.epsilon("1e-5"), TypeError, f"delta {REAL}, got str"),
    Row(lambda f: f.acct.epsilon([1e-05]), TypeError, f"delta {REAL}, got list"),
    Row(lambda f: PrivacyAccountant().epsilon(1.0), ValueError, rf"delta must lie in {DELTA_Q}"),
    Row(lambda f: f.acct.delta(-1.0), ValueError, rf"epsilon must lie in {NONNEG}"),
    Row(lambda f: f.acct.epsilon_bounds(1.0), ValueError, rf"delta must lie in {DELTA_Q}"),
    Row(
        lambda f: f.filt.step(noise_multiplier=0.5, sample_rate=1.0, count=100),
        BudgetExceededError,
        r"budget exceeded: .*budget_epsilon=1 at delta=1e-05.*ledger is unchanged",
    ),
    Row(
        lambda f: (f.acct.record(Unregistered()), f.acct.save(_tmp_path("x.json"))),
        TypeError,
        "cannot serialise Unregistered: the class is not registered",
    ),
    Row(lambda f: f.acct.save(None), TypeError, "expected str, bytes or os.PathLike"),
    Row(
        lambda f: f.acct.save(os.path.join(_tmp_path("d"), "missing", "x.json")),
        FileNotFoundError,
        "No such file or directory",
    ),
    Row(
        lambda f: PrivacyAccountant.load(_tmp_path("absent.json")), FileNotFoundError, "absent.json"
    ),
    Row(
        lambda f: PrivacyAccountant.load(tempfile.gettempdir()), IsADirectoryError, "Is a directory"
    ),
    Row(lambda f: PrivacyAccountant.load(ledger_file("")), LedgerFileError, "the file is empty"),
    Row(lambda f: PrivacyAccountant.load(ledger_file(" \n")), LedgerFileError, "the file is empty"),
    Row(
        lambda f: PrivacyAccountant.load(saved_ledger(truncate=50)),
        LedgerFileError,
        "not valid JSON .*corrupt or truncated",
    ),
    Row(lambda f: PrivacyAccountant.load(ledger_file("hello")), LedgerFileError, "not valid JSON"),
    Row(
        lambda f: PrivacyAccountant.load(ledger_file(b"\xff\xfe\x00\x01")),
        LedgerFileError,
        "not UTF-8 text",
    ),
    Row(
        lambda f: PrivacyAccountant.load(ledger_file('{"a": NaN}')),
        LedgerFileError,
        "non-finite number NaN",
    ),
    Row(
        lambda f: PrivacyAccountant.load(ledger_file("[1, 2]")),
        LedgerFileError,
        "expected a JSON object",
    ),
    Row(
        lambda f: PrivacyAccountant.load(ledger_file('{"format": "x"}')),
        LedgerFileError,
        "not a dpacct privacy ledger",
    ),
    Row(
        lambda f: PrivacyAccountant.load(saved_ledger(set_key("schema_version", 99))),
        LedgerFileError,
        "unsupported schema_version 99",
    ),
    Row(
        lambda f: PrivacyAccountant.load(saved_ledger(set_key("schema_version", "1"))),
        LedgerFileError,
        "schema_version must be an integer",
    ),
    Row(
        lambda f: PrivacyAccountant.load(saved_ledger(set_key("entries", 0, "count", 1))),
        LedgerFileError,
        "checksum mismatch",
    ),
    Row(
        lambda f: PrivacyAccountant.load(saved_ledger(drop_key("checksum"))),
        LedgerFileError,
        "missing checksum",
    ),
    Row(
        lambda f: PrivacyAccountant.load(
            saved_ledger(set_key("entries", 0, "count", -1), resign=True)
        ),
        LedgerFileError,
        r"entries\[0\]\.count must be an integer >= 1, got -1",
    ),
    Row(
        lambda f: PrivacyAccountant.load(
            saved_ledger(set_key("entries", 0, "count", 1.5), resign=True)
        ),
        LedgerFileError,
        r"entries\[0\]\.count must be an integer >= 1, got 1\.5",
    ),
    Row(
        lambda f: PrivacyAccountant.load(
            saved_ledger(set_key("entries", 0, "count", True), resign=True)
        ),
        LedgerFileError,
        r"entries\[0\]\.count must be an integer >= 1, got True",
    ),
    Row(
        lambda f: PrivacyAccountant.load(saved_ledger(set_key("extra", 1), resign=True)),
        LedgerFileError,
        r"unexpected layout \(extra keys \['extra'\]",
    ),
    Row(
        lambda f: PrivacyAccountant.load(saved_ledger(set_key("entries", {}), resign=True)),
        LedgerFileError,
        "entries must be a list",
    ),
    Row(
        lambda f: PrivacyAccountant.load(
            saved_ledger(set_key("entries", 0, "mechanism", "type", "nope"), resign=True)
        ),
        LedgerFileError,
        r"entries\[0\]\.mechanism: unknown mechanism type 'nope'",
    ),
    Row(
        lambda f: PrivacyAccountant.load(
            saved_ledger(
                set_key("entries", 0, "mechanism", "params", "sample_rate", 2.0), resign=True
            )
        ),
        LedgerFileError,
        r"entries\[0\]\.mechanism: .*sample_rate must lie in \(0, 1\]",
    ),
    Row(
        lambda f: PrivacyAccountant.load(
            saved_ledger(set_key("budget", {"epsilon": -1.0, "delta": 1e-05}), resign=True)
        ),
        LedgerFileError,
        rf"invalid budget or tol: budget_epsilon must lie in {NONNEG}",
    ),
    Row(
        lambda f: PrivacyAccountant.load(saved_ledger(set_key("tol", 5.0), resign=True)),
        LedgerFileError,
        rf"invalid budget or tol: tol must lie in {TOL}",
    ),
    Row(
        lambda f: PrivacyAccountant.from_dict([1]),
        LedgerFileError,
        "expected a JSON object, got list",
    ),
]

ROWS: list[Row] = [row for rows in GROUPS.values() for row in rows]


@pytest.mark.parametrize("row", params(ROWS))
def test_bad_input_is_rejected_clearly(row: Row):
    with pytest.raises(row.exc, match=row.match):
        run_row(row)


def test_catalogue_is_well_formed():
    check_well_formed(GROUPS, at_least=150)


def test_rejection_leaves_the_ledger_unchanged():
    """Bad input to a ledger is refused before anything is recorded."""
    acct = good_ledger()
    before = (acct.entries, acct.steps, acct.epsilon(1e-5))
    for kwargs in (
        {"noise_multiplier": 0.0, "sample_rate": 0.1},
        {"noise_multiplier": 1.0, "sample_rate": 2.0},
        {"noise_multiplier": 1.0, "sample_rate": 0.01, "count": 0},
    ):
        with pytest.raises(ValueError):
            acct.step(**kwargs)
    with pytest.raises(TypeError):
        acct.record("gauss")
    assert (acct.entries, acct.steps, acct.epsilon(1e-5)) == before
