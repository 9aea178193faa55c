"""A catalogue of bad inputs over the public API: each must fail loudly and clearly.

Every row is a line of code (evaluated in a small namespace of fixtures, so the text in
the catalogue is exactly what runs), the exception type it must raise, and a regex that
the message must match: the parameter's name and, where it applies, the allowed range.
Rows are grouped by layer: ``accountant`` (transformers, queries, Renyi helpers, the
ledger and its files), ``mechanisms`` (the primitives and ``audit``) and
``calibrators``.  Every row also runs with warnings turned into errors: a bad input
must not get by with a ``RuntimeWarning``.

A row whose input is accepted silently, returns a NaN or raises an unclear error is a
*library gap*: it states the behaviour we want and is marked ``xfail(strict=True)``
with the reason, so the suite stays green until the gap is fixed and then tells us to
drop the mark.

Print the catalogue as a markdown table (input -> exception type and actual message)::

    python tests/test_bad_input.py --markdown
"""

from __future__ import annotations

import atexit
import functools
import json
import math
import os
import re
import shutil
import sys
import tempfile
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from dpacct.accountant import (
    BudgetExceededError,
    Capabilities,
    LedgerFileError,
    Mechanism,
    PrivacyAccountant,
    compose,
    poisson_subsample,
    pure_dp_rdp,
    rdp_to_delta,
    rdp_to_epsilon,
    subsample_without_replacement,
    zcdp_rdp,
)
from dpacct.accountant.serialization import sha256_of
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


# ------------------------------------------------------------------------ fixtures
@dataclass(frozen=True)
class Unregistered(Mechanism):
    """A valid mechanism whose class the ledger's file format does not know."""

    eps0: float = 1.0

    declares = Capabilities(exact_curve=True)

    def _delta_exact(self, epsilon):
        return np.maximum(0.0, -np.expm1(np.asarray(epsilon) - self.eps0))


_TMP_DIRS: list[str] = []


@atexit.register
def _remove_tmp_dirs() -> None:
    for d in _TMP_DIRS:
        shutil.rmtree(d, ignore_errors=True)


def _tmp_path(name: str) -> str:
    d = tempfile.mkdtemp(prefix="dpacct-bad-input-")
    _TMP_DIRS.append(d)
    return os.path.join(d, name)


def ledger_file(content: str | bytes) -> str:
    """A file holding ``content`` verbatim."""
    path = _tmp_path("ledger.json")
    with open(path, "wb") as fh:
        fh.write(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def good_ledger() -> PrivacyAccountant:
    acct = PrivacyAccountant()
    acct.step(noise_multiplier=1.0, sample_rate=0.01, count=10)
    return acct


def saved_ledger(edit=None, *, resign: bool = False, truncate: int | None = None) -> str:
    """A ledger saved by ``save``, then edited (optionally re-signed) or truncated."""
    path = _tmp_path("ledger.json")
    good_ledger().save(path)
    if edit is None and truncate is None:
        return path
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    if truncate is not None:
        return ledger_file(text[:truncate])
    data = json.loads(text)
    edit(data)
    if resign:  # a consistent checksum: only the content validation can catch it
        data.pop("checksum", None)
        data["checksum"] = sha256_of(data)
    return ledger_file(json.dumps(data))


def set_key(*path_and_value):
    """``edit`` for :func:`saved_ledger`: ``set_key("entries", 0, "count", -1)``."""
    *path, key, value = path_and_value

    def edit(data):
        for p in path:
            data = data[p]
        data[key] = value

    return edit


def drop_key(key):
    def edit(data):
        data.pop(key)

    return edit


#: the public names the rows may call (and the helpers above)
API: dict[str, Any] = {
    f.__name__: f
    for f in (
        # accountant
        PrivacyAccountant,
        compose,
        poisson_subsample,
        pure_dp_rdp,
        rdp_to_delta,
        rdp_to_epsilon,
        subsample_without_replacement,
        zcdp_rdp,
        # mechanisms
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
        # calibrators
        analytic_gaussian_sigma,
        calibrate,
        get_noise_multiplier,
        max_sample_rate,
        max_steps,
        noise_multiplier,
        # helpers
        Unregistered,
        drop_key,
        ledger_file,
        saved_ledger,
        set_key,
        _tmp_path,
    )
}
API.update(os=os, tempfile=tempfile)


@functools.cache
def audited():
    """One audit result, for the rows that query it."""
    return audit(GaussianMechanism(sigma=1.0), np.random.default_rng(0), samples=2000)


def namespace() -> dict[str, Any]:
    """Fresh fixtures for each row (nothing is shared between rows)."""
    return {
        **API,
        "nan": math.nan,
        "inf": math.inf,
        "np": np,
        "rng": np.random.default_rng(0),
        "G": GaussianMechanism(sigma=1.0),
        "STEP": poisson_subsample(GaussianMechanism(sigma=1.0), 0.01),
        "RUN": compose([poisson_subsample(GaussianMechanism(sigma=1.0), 0.01)], counts=[100]),
        "fam": lambda s: GaussianMechanism(sigma=s),
        "pair": lambda a, b: compose([GaussianMechanism(sigma=a), GaussianMechanism(sigma=b)]),
        "steps_of": lambda n: compose([GaussianMechanism(sigma=5.0)], counts=[n]),
        "audited": audited,
        "acct": good_ledger(),
        "filt": PrivacyAccountant(budget_epsilon=1.0, budget_delta=1e-5),
        "gauss_outputs": lambda r, n: (r.normal(1.0, 1.0, n), r.normal(0.0, 1.0, n)),
    }


# ------------------------------------------------------------------------ the catalogue
@dataclass(frozen=True)
class Row:
    code: str
    exc: type[BaseException]
    match: str
    gap: str | None = None  # a library gap: the row states the behaviour we want

    @property
    def group(self) -> str:
        return GROUP_OF.get(self.code, "")


# regex fragments for the allowed ranges in the messages
POS = r"\(0, inf\)"
UNIT_OPEN = r"\(0, 1\)"
#: a delta query: 0 is pure DP (answered from pure_epsilon), 1 and beyond are refused
DELTA_Q = r"\[0, 1\)"
#: delta = 0 where there is no pure epsilon
NO_PURE = r"=0 asks for pure DP, but .* has no pure epsilon \(pure_epsilon is not declared\)"
RATE = r"\(0, 1\]"
NONNEG = r"\[0, inf\)"
TOL = r"\(0, 0\.5\)"
REAL = "must be a real number"
INT = "must be an integer"
COUNT_RANGE = r"must be an integer in \[1, 2\*\*63 - 1\]"

GROUPS: dict[str, list[Row]] = {}

GROUPS["accountant: compose / subsample"] = [
    Row("compose([])", ValueError, "mechanisms must be a non-empty list"),
    Row("compose(G)", TypeError, "list of mechanisms, got a single mechanism"),
    Row("compose([G, 'gauss'])", TypeError, r"mechanisms\[1\] must be a Mechanism, got str"),
    Row("compose([None])", TypeError, r"mechanisms\[0\] must be a Mechanism, got NoneType"),
    Row("compose(['ab'])", TypeError, r"mechanisms\[0\] must be a Mechanism, got str"),
    Row(
        "compose(5)",
        TypeError,
        "mechanisms must be a list of mechanisms",
    ),
    Row("compose([G], counts=[1, 2])", ValueError, "one entry per mechanism: got 2 counts for 1"),
    Row("compose([G], counts=[])", ValueError, "one entry per mechanism: got 0 counts for 1"),
    Row("compose([G], counts=[0])", ValueError, r"counts\[0\] must be an integer >= 1, got 0"),
    Row("compose([G], counts=[-1])", ValueError, r"counts\[0\] must be an integer >= 1, got -1"),
    Row("compose([G], counts=[np.int64(-3)])", ValueError, r"counts\[0\] must be an integer >= 1"),
    Row("compose([G], counts=[1.5])", TypeError, rf"counts\[0\] {INT}, got float 1\.5"),
    Row("compose([G], counts=np.array([2.5]))", TypeError, rf"counts\[0\] {INT}"),
    Row("compose([G], counts=[True])", TypeError, rf"counts\[0\] {INT}, got bool"),
    Row("compose([G], counts=['3'])", TypeError, rf"counts\[0\] {INT}, got str"),
    Row("compose([G], counts=[None])", TypeError, rf"counts\[0\] {INT}, got NoneType"),
    Row("compose([G], counts=[nan])", ValueError, rf"counts\[0\] {COUNT_RANGE}, got nan"),
    Row("compose([G], counts=[inf])", ValueError, rf"counts\[0\] {COUNT_RANGE}, got inf"),
    Row(
        "compose([G], counts=5)",
        TypeError,
        "counts must be a (list|sequence)",
    ),
    Row("poisson_subsample(G, 0.0)", ValueError, rf"sample_rate must lie in {RATE}, got 0\.0"),
    Row("poisson_subsample(G, 1.5)", ValueError, rf"sample_rate must lie in {RATE}, got 1\.5"),
    Row("poisson_subsample(G, -0.1)", ValueError, rf"sample_rate must lie in {RATE}"),
    Row("poisson_subsample(G, nan)", ValueError, rf"sample_rate must lie in {RATE}, got nan"),
    Row("poisson_subsample(G, None)", TypeError, f"sample_rate {REAL}, got NoneType"),
    Row("poisson_subsample(G, '0.1')", TypeError, f"sample_rate {REAL}, got str"),
    Row("poisson_subsample(G, True)", TypeError, f"sample_rate {REAL}, got bool"),
    Row("poisson_subsample(None, 0.1)", TypeError, "mechanism must be a Mechanism, got NoneType"),
    Row("poisson_subsample('gauss', 0.1)", TypeError, "mechanism must be a Mechanism, got str"),
    Row("subsample_without_replacement(G, 0.0)", ValueError, rf"sample_rate must lie in {RATE}"),
    Row("subsample_without_replacement(G, 2.0)", ValueError, rf"sample_rate must lie in {RATE}"),
    Row("subsample_without_replacement(1, 0.5)", TypeError, "mechanism must be a Mechanism"),
]

GROUPS["accountant: privacy queries (any mechanism)"] = [
    Row("G.epsilon(0.0)", ValueError, rf"delta{NO_PURE}; use delta in {UNIT_OPEN}"),
    Row("G.epsilon(1.0)", ValueError, rf"delta must lie in {DELTA_Q}, got 1\.0"),
    Row("G.epsilon(-1e-5)", ValueError, rf"delta must lie in {DELTA_Q}"),
    Row("G.epsilon(nan)", ValueError, rf"delta must lie in {DELTA_Q}, got nan"),
    Row("G.epsilon([1e-5, 2.0])", ValueError, rf"delta must lie in {DELTA_Q}, got 2\.0"),
    Row("G.epsilon(np.array([1e-5, nan]))", ValueError, rf"delta must lie in {DELTA_Q}"),
    Row("RUN.epsilon(0.0)", ValueError, rf"delta{NO_PURE}"),
    Row("G.epsilon('1e-5')", TypeError, f"delta {REAL}"),
    Row("STEP.epsilon('0.1')", TypeError, f"delta {REAL}"),
    Row("G.epsilon(None)", TypeError, f"delta {REAL}.*None"),
    Row("G.epsilon(True)", TypeError, f"delta {REAL}.*bool"),
    Row("G.epsilon(1e-5, tol=0.0)", ValueError, rf"tol must lie in {TOL}"),
    Row("RUN.epsilon(1e-5, tol=0.0)", ValueError, rf"tol must lie in {TOL}, got 0\.0"),
    Row("RUN.epsilon(1e-5, tol=0.7)", ValueError, rf"tol must lie in {TOL}, got 0\.7"),
    Row("STEP.epsilon(1e-5, tol=nan)", ValueError, rf"tol must lie in {TOL}, got nan"),
    Row("RUN.epsilon(1e-5, tol='a')", TypeError, f"tol {REAL}, got str"),
    Row("G.epsilon_bounds(0.0)", ValueError, rf"delta{NO_PURE}"),
    Row("G.epsilon_bounds([1e-5])", TypeError, f"delta {REAL}, got list"),
    Row("RUN.epsilon_bounds(1e-5, tol=-1.0)", ValueError, rf"tol must lie in {TOL}"),
    Row("G.epsilon_bounds(1e-5, tol=1.0)", ValueError, rf"tol must lie in {TOL}"),
    Row("G.delta(-1.0)", ValueError, rf"epsilon must lie in {NONNEG}, got -1\.0"),
    Row("G.delta(nan)", ValueError, rf"epsilon must lie in {NONNEG}, got nan"),
    Row("G.delta(inf)", ValueError, rf"epsilon must lie in {NONNEG}, got inf"),
    Row("G.delta([1.0, -1.0])", ValueError, rf"epsilon must lie in {NONNEG}, got -1\.0"),
    Row("G.delta([1.0, nan])", ValueError, rf"epsilon must lie in {NONNEG}, got nan"),
    Row("RUN.delta(1.0, tol=1.0)", ValueError, rf"tol must lie in {TOL}, got 1\.0"),
    Row("G.delta('1')", TypeError, f"epsilon {REAL}"),
    Row(
        "G.delta(None)",
        TypeError,
        f"epsilon {REAL}.*None",
    ),
    Row("G.delta(True)", TypeError, f"epsilon {REAL}.*bool"),
    Row("G.delta(1.0, tol='a')", TypeError, f"tol {REAL}"),
    Row("G.rdp(1.0)", ValueError, r"alpha must be > 1 \(real Renyi orders\), got .*1\.0"),
    Row("G.rdp(0.5)", ValueError, r"alpha must be > 1 \(real Renyi orders\)"),
    Row("G.rdp(-inf)", ValueError, r"alpha must be > 1"),
    Row("G.rdp([2.0, 1.0])", ValueError, r"alpha must be > 1 .*got .*1\.0"),
    Row("G.rdp(nan)", ValueError, "alpha must not contain NaN"),
    Row("G.rdp('2')", TypeError, "alpha must be a number or an array of numbers, got str '2'"),
    Row("G.rdp(True)", TypeError, r"alpha must be a number or an array of numbers, got bool"),
    Row("STEP.rdp(1.0)", ValueError, r"alpha must be > 1"),
    Row("RandomizedResponse(p=0.7).rdp(1.0)", ValueError, r"alpha must be > 1"),
    Row("G.rdp(None)", TypeError, "alpha must be a number or an array of numbers"),
    Row("G.tradeoff(-0.1)", ValueError, r"fpr must lie in \[0, 1\], got .*-0\.1"),
    Row("G.tradeoff(1.1)", ValueError, r"fpr must lie in \[0, 1\], got .*1\.1"),
    Row("G.tradeoff(inf)", ValueError, r"fpr must lie in \[0, 1\]"),
    Row("G.tradeoff(nan)", ValueError, "fpr must not contain NaN"),
    Row("G.tradeoff('a')", TypeError, "fpr must be a number or an array of numbers"),
    Row("PureDPMechanism(epsilon=1.0).tradeoff(2.0)", ValueError, r"fpr must lie in \[0, 1\]"),
    Row("RUN.tradeoff(0.1, tol=1.0)", ValueError, rf"tol must lie in {TOL}"),
    Row("G.tradeoff(None)", TypeError, "fpr must be a number or an array of numbers"),
    Row("G.tradeoff(True)", TypeError, "fpr must be a number"),
    Row("G.tradeoff(0.1, tol=nan)", ValueError, rf"tol must lie in {TOL}"),
    Row("G.pld(tol=0.0)", ValueError, rf"tol must lie in {TOL}, got 0\.0"),
    Row("G.pld(pessimistic='no')", TypeError, "pessimistic must be a bool"),
    Row("ExponentialMechanism(epsilon=1.0).epsilon(1.0)", ValueError, "delta must lie in"),
    Row("ZCDPMechanism(rho=1.0).delta(-1.0)", ValueError, rf"epsilon must lie in {NONNEG}"),
]

GROUPS["accountant: Renyi helpers"] = [
    Row("pure_dp_rdp(-1.0, np.array([2.0]))", ValueError, rf"epsilon must lie in {NONNEG}"),
    Row("zcdp_rdp(-1.0, np.array([2.0]))", ValueError, rf"rho must lie in {POS}"),
    Row("rdp_to_epsilon(lambda a: a / 2, 0.0)", ValueError, rf"delta must lie in {UNIT_OPEN}"),
    Row("rdp_to_epsilon(lambda a: a / 2, 2.0)", ValueError, rf"delta must lie in {UNIT_OPEN}"),
    Row("rdp_to_delta(lambda a: a / 2, -1.0)", ValueError, rf"epsilon must lie in {NONNEG}"),
    Row("pure_dp_rdp(1.0, np.array([0.5]))", ValueError, "alpha must be > 1"),
    Row(
        "rdp_to_epsilon(None, 1e-5)",
        TypeError,
        "rdp must be (callable|a callable)",
    ),
    Row("rdp_to_epsilon(lambda a: a * nan, 1e-5)", ValueError, "NaN"),
]

GROUPS["accountant: PrivacyAccountant (ledger)"] = [
    Row("PrivacyAccountant(budget_epsilon=1.0)", ValueError, "needs both budget_epsilon and"),
    Row("PrivacyAccountant(budget_delta=1e-5)", ValueError, "needs both budget_epsilon and"),
    Row(
        "PrivacyAccountant(budget_epsilon=-1.0, budget_delta=1e-5)",
        ValueError,
        rf"budget_epsilon must lie in {NONNEG}, got -1\.0",
    ),
    Row(
        "PrivacyAccountant(budget_epsilon=nan, budget_delta=1e-5)",
        ValueError,
        rf"budget_epsilon must lie in {NONNEG}, got nan",
    ),
    Row(
        "PrivacyAccountant(budget_epsilon=inf, budget_delta=1e-5)",
        ValueError,
        rf"budget_epsilon must lie in {NONNEG}, got inf",
    ),
    Row(
        "PrivacyAccountant(budget_epsilon='1', budget_delta=1e-5)",
        TypeError,
        f"budget_epsilon {REAL}, got str",
    ),
    Row(
        "PrivacyAccountant(budget_epsilon=1.0, budget_delta=0.0)",
        ValueError,
        rf"budget_delta must lie in {UNIT_OPEN}",
    ),
    Row(
        "PrivacyAccountant(budget_epsilon=1.0, budget_delta=1.0)",
        ValueError,
        rf"budget_delta must lie in {UNIT_OPEN}",
    ),
    Row("PrivacyAccountant(tol=0.0)", ValueError, rf"tol must lie in {TOL}"),
    Row("PrivacyAccountant(tol=nan)", ValueError, rf"tol must lie in {TOL}, got nan"),
    Row("PrivacyAccountant(1.0, 1e-5)", TypeError, "positional argument"),
    Row(
        "acct.step(noise_multiplier=0.0, sample_rate=0.1)",
        ValueError,
        rf"noise_multiplier must lie in {POS}, got 0\.0",
    ),
    Row(
        "acct.step(noise_multiplier=nan, sample_rate=0.1)",
        ValueError,
        rf"noise_multiplier must lie in {POS}, got nan",
    ),
    Row(
        "acct.step(noise_multiplier=inf, sample_rate=0.1)",
        ValueError,
        rf"noise_multiplier must lie in {POS}, got inf",
    ),
    Row(
        "acct.step(noise_multiplier=None, sample_rate=0.1)",
        TypeError,
        f"noise_multiplier {REAL}, got NoneType",
    ),
    Row(
        "acct.step(noise_multiplier='1', sample_rate=0.1)",
        TypeError,
        f"noise_multiplier {REAL}, got str",
    ),
    Row(
        "acct.step(noise_multiplier=1.0, sample_rate=0.0)",
        ValueError,
        rf"sample_rate must lie in {RATE}",
    ),
    Row(
        "acct.step(noise_multiplier=1.0, sample_rate=1.5)",
        ValueError,
        rf"sample_rate must lie in {RATE}",
    ),
    Row(
        "acct.step(noise_multiplier=1.0, sample_rate=nan)",
        ValueError,
        rf"sample_rate must lie in {RATE}, got nan",
    ),
    Row(
        "acct.step(noise_multiplier=1.0, sample_rate=0.1, count=0)",
        ValueError,
        "count must be an integer >= 1, got 0",
    ),
    Row(
        "acct.step(noise_multiplier=1.0, sample_rate=0.1, count=-2)",
        ValueError,
        "count must be an integer >= 1, got -2",
    ),
    Row(
        "acct.step(noise_multiplier=1.0, sample_rate=0.1, count=1.5)",
        TypeError,
        f"count {INT}, got float",
    ),
    Row(
        "acct.step(noise_multiplier=1.0, sample_rate=0.1, count=True)",
        TypeError,
        f"count {INT}, got bool",
    ),
    Row(
        "acct.step(noise_multiplier=1.0, sample_rate=0.1, count=None)",
        TypeError,
        f"count {INT}, got NoneType",
    ),
    Row("acct.step(1.0, 0.1)", TypeError, "positional argument"),
    Row("acct.step(sample_rate=0.1)", TypeError, "noise_multiplier"),
    Row("acct.record(None)", TypeError, "mechanism must be a Mechanism, got NoneType"),
    Row("acct.record('gauss')", TypeError, "mechanism must be a Mechanism, got str"),
    Row("acct.record(GaussianMechanism)", TypeError, "mechanism must be a Mechanism, got type"),
    Row("acct.record(G, 0)", ValueError, "count must be an integer >= 1, got 0"),
    Row("acct.record(G, -1)", ValueError, "count must be an integer >= 1, got -1"),
    Row("acct.record(G, 2.5)", TypeError, f"count {INT}, got float"),
    Row("acct.record(G, '2')", TypeError, f"count {INT}, got str"),
    Row("acct.epsilon(0.0)", ValueError, rf"delta{NO_PURE}"),
    Row("acct.epsilon(nan)", ValueError, rf"delta must lie in {DELTA_Q}, got nan"),
    Row("acct.epsilon(None)", TypeError, f"delta {REAL}, got NoneType"),
    Row("acct.epsilon('1e-5')", TypeError, f"delta {REAL}, got str"),
    Row("acct.epsilon([1e-5])", TypeError, f"delta {REAL}, got list"),
    Row("PrivacyAccountant().epsilon(1.0)", ValueError, rf"delta must lie in {DELTA_Q}"),
    Row("acct.delta(-1.0)", ValueError, rf"epsilon must lie in {NONNEG}"),
    Row("acct.epsilon_bounds(1.0)", ValueError, rf"delta must lie in {DELTA_Q}"),
    Row(
        "filt.step(noise_multiplier=0.5, sample_rate=1.0, count=100)",
        BudgetExceededError,
        r"budget exceeded: .*budget_epsilon=1 at delta=1e-05.*ledger is unchanged",
    ),
    Row(
        "(acct.record(Unregistered()), acct.save(_tmp_path('x.json')))",
        TypeError,
        "cannot serialise Unregistered: the class is not registered",
    ),
    Row("acct.save(None)", TypeError, "expected str, bytes or os.PathLike"),
    Row(
        "acct.save(os.path.join(_tmp_path('d'), 'missing', 'x.json'))",
        FileNotFoundError,
        "No such file or directory",
    ),
    Row("PrivacyAccountant.load(_tmp_path('absent.json'))", FileNotFoundError, "absent.json"),
    Row("PrivacyAccountant.load(tempfile.gettempdir())", IsADirectoryError, "Is a directory"),
    Row("PrivacyAccountant.load(ledger_file(''))", LedgerFileError, "the file is empty"),
    Row("PrivacyAccountant.load(ledger_file(' \\n'))", LedgerFileError, "the file is empty"),
    Row(
        "PrivacyAccountant.load(saved_ledger(truncate=50))",
        LedgerFileError,
        "not valid JSON .*corrupt or truncated",
    ),
    Row("PrivacyAccountant.load(ledger_file('hello'))", LedgerFileError, "not valid JSON"),
    Row(
        "PrivacyAccountant.load(ledger_file(b'\\xff\\xfe\\x00\\x01'))",
        LedgerFileError,
        "not UTF-8 text",
    ),
    Row(
        "PrivacyAccountant.load(ledger_file('{\"a\": NaN}'))",
        LedgerFileError,
        "non-finite number NaN",
    ),
    Row("PrivacyAccountant.load(ledger_file('[1, 2]'))", LedgerFileError, "expected a JSON object"),
    Row(
        'PrivacyAccountant.load(ledger_file(\'{"format": "x"}\'))',
        LedgerFileError,
        "not a dpacct privacy ledger",
    ),
    Row(
        "PrivacyAccountant.load(saved_ledger(set_key('schema_version', 99)))",
        LedgerFileError,
        "unsupported schema_version 99",
    ),
    Row(
        "PrivacyAccountant.load(saved_ledger(set_key('schema_version', '1')))",
        LedgerFileError,
        "schema_version must be an integer",
    ),
    Row(
        "PrivacyAccountant.load(saved_ledger(set_key('entries', 0, 'count', 1)))",
        LedgerFileError,
        "checksum mismatch",
    ),
    Row(
        "PrivacyAccountant.load(saved_ledger(drop_key('checksum')))",
        LedgerFileError,
        "missing checksum",
    ),
    Row(
        "PrivacyAccountant.load(saved_ledger(set_key('entries', 0, 'count', -1), resign=True))",
        LedgerFileError,
        r"entries\[0\]\.count must be an integer >= 1, got -1",
    ),
    Row(
        "PrivacyAccountant.load(saved_ledger(set_key('entries', 0, 'count', 1.5), resign=True))",
        LedgerFileError,
        r"entries\[0\]\.count must be an integer >= 1, got 1\.5",
    ),
    Row(
        "PrivacyAccountant.load(saved_ledger(set_key('entries', 0, 'count', True), resign=True))",
        LedgerFileError,
        r"entries\[0\]\.count must be an integer >= 1, got True",
    ),
    Row(
        "PrivacyAccountant.load(saved_ledger(set_key('extra', 1), resign=True))",
        LedgerFileError,
        r"unexpected layout \(extra keys \['extra'\]",
    ),
    Row(
        "PrivacyAccountant.load(saved_ledger(set_key('entries', {}), resign=True))",
        LedgerFileError,
        "entries must be a list",
    ),
    Row(
        "PrivacyAccountant.load(saved_ledger("
        "set_key('entries', 0, 'mechanism', 'type', 'nope'), resign=True))",
        LedgerFileError,
        r"entries\[0\]\.mechanism: unknown mechanism type 'nope'",
    ),
    Row(
        "PrivacyAccountant.load(saved_ledger("
        "set_key('entries', 0, 'mechanism', 'params', 'sample_rate', 2.0), resign=True))",
        LedgerFileError,
        r"entries\[0\]\.mechanism: .*sample_rate must lie in \(0, 1\]",
    ),
    Row(
        "PrivacyAccountant.load(saved_ledger("
        "set_key('budget', {'epsilon': -1.0, 'delta': 1e-5}), resign=True))",
        LedgerFileError,
        rf"invalid budget or tol: budget_epsilon must lie in {NONNEG}",
    ),
    Row(
        "PrivacyAccountant.load(saved_ledger(set_key('tol', 5.0), resign=True))",
        LedgerFileError,
        rf"invalid budget or tol: tol must lie in {TOL}",
    ),
    Row("PrivacyAccountant.from_dict([1])", LedgerFileError, "expected a JSON object, got list"),
]

GROUPS["mechanisms: primitives"] = [
    Row("GaussianMechanism(sigma=0.0)", ValueError, rf"sigma must lie in {POS}, got 0\.0"),
    Row("GaussianMechanism(sigma=-1.0)", ValueError, rf"sigma must lie in {POS}, got -1\.0"),
    Row("GaussianMechanism(sigma=nan)", ValueError, rf"sigma must lie in {POS}, got nan"),
    Row("GaussianMechanism(sigma=inf)", ValueError, rf"sigma must lie in {POS}, got inf"),
    Row("GaussianMechanism(sigma='1')", TypeError, f"sigma {REAL}, got str"),
    Row("GaussianMechanism(sigma=None)", TypeError, f"sigma {REAL}, got NoneType"),
    Row("GaussianMechanism(sigma=True)", TypeError, f"sigma {REAL}, got bool"),
    Row("GaussianMechanism(sigma=[1.0])", TypeError, f"sigma {REAL}, got list"),
    Row("GaussianMechanism(sigma=1 + 0j)", TypeError, f"sigma {REAL}, got complex"),
    Row("LaplaceMechanism(b=0.0)", ValueError, rf"b must lie in {POS}"),
    Row("LaplaceMechanism(b=nan)", ValueError, rf"b must lie in {POS}, got nan"),
    Row("LaplaceMechanism(b=inf)", ValueError, rf"b must lie in {POS}, got inf"),
    Row("LaplaceMechanism(b=None)", TypeError, f"b {REAL}"),
    Row("RandomizedResponse(p=0.5)", ValueError, r"p must lie in \(1/k, 1\) = \(0\.5, 1\)"),
    Row("RandomizedResponse(p=1.0)", ValueError, r"p must lie in \(1/k, 1\)"),
    Row("RandomizedResponse(p=0.3)", ValueError, r"p must lie in \(1/k, 1\)"),
    Row("RandomizedResponse(p=0.2, k=4)", ValueError, r"\(1/k, 1\) = \(0\.25, 1\) for k=4"),
    Row("RandomizedResponse(p=nan)", ValueError, "p must be a finite number, got nan"),
    Row("RandomizedResponse(p='0.7')", TypeError, f"p {REAL}, got str"),
    Row("RandomizedResponse(p=0.7, k=1)", ValueError, "k must be an integer >= 2, got 1"),
    Row("RandomizedResponse(p=0.7, k=2.5)", ValueError, r"k must be an integer >= 2, got 2\.5"),
    Row("RandomizedResponse(p=0.7, k=True)", TypeError, "k must be an integer >= 2, got bool"),
    Row("RandomizedResponse(p=0.7, k=-3)", ValueError, "k must be an integer >= 2, got -3"),
    Row("DiscreteLaplaceMechanism(scale=0)", ValueError, rf"scale must lie in {POS}"),
    Row("DiscreteLaplaceMechanism(scale=nan)", ValueError, rf"scale must lie in {POS}"),
    Row("DiscreteLaplaceMechanism(scale=inf)", ValueError, rf"scale must lie in {POS}"),
    Row("DiscreteGaussianMechanism(sigma=-1)", ValueError, rf"sigma must lie in {POS}"),
    Row("DiscreteGaussianMechanism(sigma=nan)", ValueError, rf"sigma must lie in {POS}"),
    Row("DiscreteGaussianMechanism(sigma=inf)", ValueError, rf"sigma must lie in {POS}"),
    Row("DiscreteGaussianMechanism(sigma='2')", TypeError, f"sigma {REAL}, got str"),
    Row("ExponentialMechanism(epsilon=0)", ValueError, rf"epsilon must lie in {POS}"),
    Row("ExponentialMechanism(epsilon=-1)", ValueError, rf"epsilon must lie in {POS}"),
    Row("ExponentialMechanism(epsilon=nan)", ValueError, rf"epsilon must lie in {POS}"),
    Row("ExponentialMechanism(epsilon=inf)", ValueError, rf"epsilon must lie in {POS}"),
    Row(
        "ExponentialMechanism(epsilon=1.0, bounded_range='yes')",
        TypeError,
        "bounded_range must be a bool, got str",
    ),
    Row(
        "ExponentialMechanism(epsilon=1.0, bounded_range=0)",
        TypeError,
        "bounded_range must be a bool, got int",
    ),
    Row(
        "ExponentialMechanism(epsilon=1.0, bounded_range=None)",
        TypeError,
        "bounded_range must be a bool",
    ),
    Row("PureDPMechanism(epsilon=0.0)", ValueError, rf"epsilon must lie in {POS}"),
    Row("PureDPMechanism(epsilon=nan)", ValueError, rf"epsilon must lie in {POS}, got nan"),
    Row("PureDPMechanism(epsilon=inf)", ValueError, rf"epsilon must lie in {POS}, got inf"),
    Row("PureDPMechanism(epsilon=None)", TypeError, f"epsilon {REAL}"),
    Row("ZCDPMechanism(rho=0)", ValueError, rf"rho must lie in {POS}"),
    Row("ZCDPMechanism(rho=-1)", ValueError, rf"rho must lie in {POS}"),
    Row("ZCDPMechanism(rho=nan)", ValueError, rf"rho must lie in {POS}"),
    Row("ZCDPMechanism(rho=inf)", ValueError, rf"rho must lie in {POS}"),
    Row("gaussian_delta(0.0, np.array([1.0]))", ValueError, rf"mu must lie in {POS}"),
    Row("gaussian_delta(-1.0, np.array([1.0]))", ValueError, rf"mu must lie in {POS}"),
    Row("gaussian_delta(1.0, np.array([nan]))", ValueError, "epsilon must not contain NaN"),
]

GROUPS["mechanisms: audit"] = [
    Row("audit(G, None)", TypeError, r"rng must be a numpy\.random\.Generator.*got NoneType"),
    Row("audit(G, 0)", TypeError, r"rng must be a numpy\.random\.Generator.*got int"),
    Row(
        "audit(G, np.random.RandomState(0))",
        TypeError,
        r"rng must be a numpy\.random\.Generator.*got RandomState",
    ),
    Row("audit(G, rng, samples=0)", ValueError, "samples must be an integer >= 1, got 0"),
    Row("audit(G, rng, samples=-1)", ValueError, "samples must be an integer >= 1, got -1"),
    Row("audit(G, rng, samples=1.5)", TypeError, f"samples {INT}, got float"),
    Row("audit(G, rng, confidence=0.0)", ValueError, rf"confidence must lie in {UNIT_OPEN}"),
    Row("audit(G, rng, confidence=1.0)", ValueError, rf"confidence must lie in {UNIT_OPEN}"),
    Row("audit(G, rng, confidence=nan)", ValueError, rf"confidence must lie in {UNIT_OPEN}"),
    Row("audit('gauss', rng)", TypeError, r"mechanism must have a tradeoff\(fpr\) method"),
    Row("audit(ZCDPMechanism(rho=1.0), rng)", TypeError, "no built-in sampler for ZCDPMechanism"),
    Row("audit(G, rng, sampler=5)", TypeError, "sampler must be callable, got int"),
    Row("audit(G, rng, thresholds=[])", ValueError, r"thresholds must be a non-empty 1-D array"),
    Row(
        "audit(G, rng, thresholds=[[0.0]])", ValueError, r"non-empty 1-D array, got shape \(1, 1\)"
    ),
    Row("audit(G, rng, thresholds=[0.0, nan])", ValueError, "thresholds must not contain NaN"),
    Row("audit(G, rng, thresholds='a')", TypeError, "thresholds must be a number or an array"),
    Row(
        "audit(G, rng, samples=1000, sampler=lambda r, n: (np.zeros(n), np.zeros(n + 1)))",
        ValueError,
        r"sampler returned outputs_on_D_prime of shape \(1001,\), expected \(1000,\)",
    ),
    Row(
        "audit(G, rng, samples=1000, sampler=lambda r, n: (np.full(n, nan), np.zeros(n)))",
        ValueError,
        r"sampler returned non-finite values \(NaN or inf\) in outputs_on_D",
    ),
    Row(
        "audit(G, rng, samples=1000, sampler=lambda r, n: (['a'] * n, np.zeros(n)))",
        ValueError,
        "sampler returned non-numeric outputs_on_D",
    ),
    Row(
        "audit(G, rng, samples=1000, sampler=lambda r, n: np.zeros(n))",
        ValueError,
        r"sampler must return a pair \(outputs_on_D, outputs_on_D_prime\)",
    ),
    Row("audited().epsilon_lower_bound(-1.0)", ValueError, rf"delta must lie in {DELTA_Q}"),
    Row("audited().epsilon_lower_bound(1.0)", ValueError, rf"delta must lie in {DELTA_Q}"),
    Row("audited().epsilon_lower_bound(nan)", ValueError, rf"delta must lie in {DELTA_Q}"),
    Row("audit(G, rng, samples=1000, thresholds=[inf])", ValueError, "thresholds must be finite"),
    Row(
        "audit(G, rng, samples=1000, sampler=lambda r, n: (np.full(n, inf), np.zeros(n)))",
        ValueError,
        "sampler returned (inf|non-finite)",
    ),
]

GROUPS["calibrators"] = [
    Row("calibrate(None, 1.0, 1e-5)", TypeError, r"family must be callable"),
    Row("calibrate(fam, 0.0, 1e-5)", ValueError, rf"epsilon must lie in {POS}, got 0\.0"),
    Row("calibrate(fam, nan, 1e-5)", ValueError, rf"epsilon must lie in {POS}, got nan"),
    Row("calibrate(fam, inf, 1e-5)", ValueError, rf"epsilon must lie in {POS}, got inf"),
    Row("calibrate(fam, '1', 1e-5)", TypeError, f"epsilon {REAL}, got str"),
    Row(
        "calibrate(fam, 1.0, 0.0)",
        ValueError,
        "delta=0 needs a pure-DP family.*pure_epsilon is inf",
    ),
    Row("calibrate(fam, 1.0, -1e-5)", ValueError, "delta must lie in"),
    Row("calibrate(fam, 1.0, 1.0)", ValueError, rf"delta must lie in {DELTA_Q}"),
    Row("calibrate(fam, 1.0, 1e-5, rtol=0.0)", ValueError, rf"rtol must lie in {TOL}"),
    Row("calibrate(fam, 1.0, 1e-5, rtol=0.5)", ValueError, rf"rtol must lie in {TOL}"),
    Row("calibrate(fam, 1.0, 1e-5, rtol=nan)", ValueError, "rtol must be a finite number"),
    Row(
        "calibrate(fam, 1.0, 1e-5, interval=(2.0, 1.0))",
        ValueError,
        "interval must satisfy low <= high",
    ),
    Row(
        "calibrate(fam, 1.0, 1e-5, interval=(-1.0, 1.0))",
        ValueError,
        rf"interval\[0\] must lie in {POS}",
    ),
    Row(
        "calibrate(fam, 1.0, 1e-5, interval=(nan, 2.0))",
        ValueError,
        rf"interval\[0\] must lie in {POS}, got nan",
    ),
    Row(
        "calibrate(fam, 1.0, 1e-5, interval=(1.0, 2.0, 3.0))",
        TypeError,
        r"interval must be a pair \(low, high\)",
    ),
    Row("calibrate(fam, 1.0, 1e-5, interval=1.0)", TypeError, r"interval must be a pair"),
    Row(
        "calibrate(steps_of, 10.0, 1e-5, integer=True, interval=(0.5, 5))",
        ValueError,
        r"interval must lie in \[1, inf\) for an integer parameter",
    ),
    Row(
        "calibrate(fam, 1.0, 1e-5, domain=(2.0, 1.0))",
        ValueError,
        "domain must satisfy 0 <= low < high",
    ),
    Row(
        "calibrate(fam, 1.0, 1e-5, domain=(-1.0, 1.0))",
        ValueError,
        rf"domain\[0\] must lie in {NONNEG}, got -1\.0",
    ),
    Row(
        "calibrate(fam, 1.0, 1e-5, domain=(10.0, 20.0))",
        ValueError,
        r"interval \(0\.5, 2\.0\) lies outside the domain \(10\.0, 20\.0\)",
    ),
    Row(
        "calibrate(fam, 1.0, 1e-5, domain=(0.1, 20.0), start=50.0)",
        ValueError,
        r"start must lie in the domain",
    ),
    Row("calibrate(fam, 1.0, 1e-5, start=0.0)", ValueError, rf"start must lie in {POS}"),
    Row("calibrate(fam, 1.0, 1e-5, estimate=5)", TypeError, "estimate must be callable"),
    Row(
        "calibrate(fam, 1.0, 1e-5, max_evaluations=1)",
        ValueError,
        "max_evaluations must be an integer >= 2",
    ),
    Row(
        "calibrate(fam, 1.0, 1e-5, max_evaluations=2.5)",
        TypeError,
        "max_evaluations must be an integer",
    ),
    Row("calibrate(pair, 1.0, 1e-5, ratios=[])", ValueError, "ratios must not be empty"),
    Row(
        "calibrate(pair, 1.0, 1e-5, ratios=[1.0, -1.0])",
        ValueError,
        rf"ratios\[1\] must lie in {POS}",
    ),
    Row(
        "calibrate(pair, 1.0, 1e-5, ratios=[1.0, 2.0], integer=True)",
        ValueError,
        "ratios .* require a continuous parameter",
    ),
    Row("calibrate(lambda s: 'x', 1.0, 1e-5)", TypeError, "family must return a Mechanism"),
    Row(
        "calibrate(fam, 1.0, 1e-5, domain=(0.01, 0.6))",
        UnreachableTargetError,
        r"target epsilon=1 is out of reach at delta=1e-05: the smallest epsilon the family "
        r"reaches is 8\.0",
    ),
    Row(
        "calibrate(lambda n: PureDPMechanism(epsilon=float(n)), 0.5, 1e-5, integer=True, "
        "domain=(1, 100))",
        UnreachableTargetError,
        r"target epsilon=0\.5 is out of reach.*smallest epsilon the family reaches is 0\.99",
    ),
    Row(
        "calibrate(lambda s: G, 1.0, 1e-5)",
        CalibrationError,
        "epsilon does not depend on parameter",
    ),
    Row("calibrate(fam, 1.0, 1e-5, tol=1.0)", ValueError, rf"tol must lie in {TOL}"),
    Row("calibrate(fam, 1.0, 1e-5, integer='no')", TypeError, "integer must be a bool"),
    Row("calibrate(fam, 1.0, 1e-5, increasing='no')", TypeError, "increasing must be a bool"),
    Row("noise_multiplier(0.0, 1e-5, 0.01, 100)", ValueError, rf"epsilon must lie in {POS}"),
    Row("noise_multiplier(-1.0, 1e-5, 0.01, 100)", ValueError, rf"epsilon must lie in {POS}"),
    Row("noise_multiplier(nan, 1e-5, 0.01, 100)", ValueError, rf"epsilon must lie in {POS}"),
    Row("noise_multiplier(1.0, 0.0, 0.01, 100)", ValueError, rf"delta{NO_PURE}"),
    Row("noise_multiplier(1.0, 1.5, 0.01, 100)", ValueError, rf"delta must lie in {UNIT_OPEN}"),
    Row("noise_multiplier(1.0, 1e-5, 0.0, 100)", ValueError, rf"sample_rate must lie in {RATE}"),
    Row("noise_multiplier(1.0, 1e-5, 2.0, 100)", ValueError, rf"sample_rate must lie in {RATE}"),
    Row("noise_multiplier(1.0, 1e-5, 0.01, 0)", ValueError, "steps must be an integer >= 1"),
    Row("noise_multiplier(1.0, 1e-5, 0.01, -5)", ValueError, "steps must be an integer >= 1"),
    Row("noise_multiplier(1.0, 1e-5, 0.01, 2.5)", TypeError, f"steps {INT}, got float"),
    Row("noise_multiplier(1.0, 1e-5, 0.01)", TypeError, "one of steps or epochs is required"),
    Row(
        "noise_multiplier(1.0, 1e-5, 0.01, 100, epochs=1.0)",
        ValueError,
        "give either steps or epochs, not both",
    ),
    Row(
        "noise_multiplier(1.0, 1e-5, 0.01, epochs=0.0)",
        ValueError,
        rf"epochs must lie in {POS}",
    ),
    Row(
        "noise_multiplier(1.0, 1e-5, 0.01, epochs=0.001)",
        ValueError,
        "epochs must give at least one step",
    ),
    Row("noise_multiplier(1.0, 1e-5, 0.01, 100, rtol=0.0)", ValueError, rf"rtol must lie in {TOL}"),
    Row("noise_multiplier(1.0, 1e-5, 0.01, 100, tol=1.0)", ValueError, rf"tol must lie in {TOL}"),
    Row("max_steps(0.0, 1e-5, 1.0, 0.01)", ValueError, rf"epsilon must lie in {POS}"),
    Row("max_steps(1.0, 1e-5, 0.0, 0.01)", ValueError, rf"noise_multiplier must lie in {POS}"),
    Row("max_steps(1.0, 1e-5, nan, 0.01)", ValueError, rf"noise_multiplier must lie in {POS}"),
    Row("max_steps(1.0, 1e-5, 1.0, 0.0)", ValueError, rf"sample_rate must lie in {RATE}"),
    Row(
        "max_steps(0.01, 1e-5, 0.5, 1.0)",
        UnreachableTargetError,
        r"target epsilon=0\.01 is out of reach.*at steps=1",
    ),
    Row("max_sample_rate(0.0, 1e-5, 1.0, 100)", ValueError, rf"epsilon must lie in {POS}"),
    Row(
        "max_sample_rate(1.0, 1e-5, -1.0, 100)",
        ValueError,
        rf"noise_multiplier must lie in {POS}",
    ),
    Row("max_sample_rate(1.0, 1e-5, 1.0, 0)", ValueError, "steps must be an integer >= 1"),
    Row("max_sample_rate(1.0, 1e-5, 1.0, 1.5)", TypeError, f"steps {INT}, got float"),
    Row("analytic_gaussian_sigma(0.0, 1e-5)", ValueError, rf"epsilon must lie in {POS}"),
    Row("analytic_gaussian_sigma(inf, 1e-5)", ValueError, rf"epsilon must lie in {POS}"),
    Row("analytic_gaussian_sigma('1', 1e-5)", TypeError, f"epsilon {REAL}, got str"),
    Row("analytic_gaussian_sigma(1.0, 0.0)", ValueError, rf"delta{NO_PURE}"),
    Row("analytic_gaussian_sigma(1.0, 1.0)", ValueError, rf"delta must lie in {UNIT_OPEN}"),
    Row("analytic_gaussian_sigma(1.0, 1e-5, 0.0)", ValueError, rf"sensitivity must lie in {POS}"),
    Row("analytic_gaussian_sigma(1.0, 1e-5, nan)", ValueError, rf"sensitivity must lie in {POS}"),
    Row(
        "get_noise_multiplier(target_epsilon=0.0, target_delta=1e-5, sample_rate=0.01, steps=100)",
        ValueError,
        rf"target_epsilon must lie in {POS}",
    ),
    Row(
        "get_noise_multiplier(target_epsilon=1.0, target_delta=0.0, sample_rate=0.01, steps=100)",
        ValueError,
        rf"target_delta{NO_PURE}",
    ),
    Row(
        "get_noise_multiplier(target_epsilon=1.0, target_delta=1e-5, sample_rate=0.0, steps=100)",
        ValueError,
        rf"sample_rate must lie in {RATE}",
    ),
    Row(
        "get_noise_multiplier(target_epsilon=1.0, target_delta=1e-5, sample_rate=0.01, "
        "steps=100, accountant='moments')",
        ValueError,
        "accountant must be one of 'rdp', 'prv', 'gdp', 'pld' or None, got 'moments'",
    ),
    Row(
        "get_noise_multiplier(target_epsilon=1.0, target_delta=1e-5, sample_rate=0.01, "
        "steps=100, epsilon_tolerance=0.0)",
        ValueError,
        rf"epsilon_tolerance must lie in {POS}",
    ),
    Row(
        "get_noise_multiplier(target_epsilon=1.0, target_delta=1e-5, sample_rate=0.01, "
        "steps=100, epsilon_tolerance=nan)",
        ValueError,
        rf"epsilon_tolerance must lie in {POS}",
    ),
    Row(
        "get_noise_multiplier(target_epsilon=1.0, target_delta=1e-5, sample_rate=0.01)",
        TypeError,
        "one of steps or epochs is required",
    ),
    Row(
        "get_noise_multiplier(target_epsilon=1.0, target_delta=1e-5, sample_rate=0.01, "
        "steps=10, epochs=1)",
        ValueError,
        "give either steps or epochs, not both",
    ),
]

#: a Python int far beyond the float range: float(HUGE) raises OverflowError, which
#: must reach the user as a ValueError naming the parameter
HUGE_INT = "10**400"
FLOAT_RANGE = "within the float range"

GROUPS["huge Python integers (any parameter)"] = [
    Row(f"GaussianMechanism(sigma={HUGE_INT})", ValueError, f"sigma .*{FLOAT_RANGE}"),
    Row(f"LaplaceMechanism(b={HUGE_INT})", ValueError, f"b .*{FLOAT_RANGE}"),
    Row(f"RandomizedResponse(p={HUGE_INT})", ValueError, f"p .*{FLOAT_RANGE}"),
    Row(f"RandomizedResponse(p=0.9, k={HUGE_INT})", ValueError, r"k must be an integer <= 2\*\*63"),
    Row(f"poisson_subsample(G, {HUGE_INT})", ValueError, f"sample_rate .*{FLOAT_RANGE}"),
    Row(f"compose([G], counts=[{HUGE_INT}])", ValueError, r"counts\[0\] must be an integer <= 2"),
    Row(f"G.epsilon({HUGE_INT})", ValueError, f"delta .*{FLOAT_RANGE}"),
    Row(f"G.epsilon([1e-5, {HUGE_INT}])", ValueError, f"delta .*{FLOAT_RANGE}"),
    Row(f"G.delta({HUGE_INT})", ValueError, f"epsilon .*{FLOAT_RANGE}"),
    Row(f"G.rdp({HUGE_INT})", ValueError, f"alpha .*{FLOAT_RANGE}"),
    Row(f"noise_multiplier({HUGE_INT}, 1e-5, 0.01, 100)", ValueError, f"epsilon .*{FLOAT_RANGE}"),
    Row(f"max_steps(1.0, 1e-5, {HUGE_INT}, 0.01)", ValueError, f"{FLOAT_RANGE}"),
]

ROWS: list[Row] = [row for rows in GROUPS.values() for row in rows]
GROUP_OF = {row.code: group for group, rows in GROUPS.items() for row in rows}


def run_row(row: Row) -> Any:
    """Evaluate a row with warnings as errors; return what it returned (if anything)."""
    ns = namespace()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return eval(row.code, ns)


# ------------------------------------------------------------------------ tests
def _param(row: Row):
    marks = () if row.gap is None else pytest.mark.xfail(strict=True, reason=row.gap)
    return pytest.param(row, id=row.code, marks=marks)


@pytest.mark.parametrize("row", [_param(r) for r in ROWS])
def test_bad_input_is_rejected_clearly(row: Row):
    with pytest.raises(row.exc, match=row.match):
        run_row(row)


def test_catalogue_is_well_formed():
    codes = [r.code for r in ROWS]
    assert len(codes) == len(set(codes)), "duplicate rows"
    for row in ROWS:
        re.compile(row.match)
        compile(row.code, "<row>", "eval")
        # ValueError/TypeError rows must name something: a non-empty pattern
        if row.exc in (ValueError, TypeError):
            assert row.match, row.code
    assert len(ROWS) >= 250


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


# ------------------------------------------------------------------------ markdown
def outcome(row: Row) -> tuple[str, str]:
    """``(status, what happened)`` of one row, for the catalogue."""
    try:
        value = run_row(row)
    except BaseException as exc:  # report whatever it raised
        text = f"{type(exc).__name__}: {exc}"
        ok = isinstance(exc, row.exc) and re.search(row.match, str(exc)) is not None
    else:
        text = f"returned {value!r}"
        ok = False
    if row.gap is not None:
        status = "FIXED? (gap row passes)" if ok else "gap (xfail)"
    else:
        status = "ok" if ok else "FAILS"
    return status, text


def _cell(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text.replace("|", "\\|")


def markdown() -> str:
    lines = [
        "| layer | input | expected | actual outcome | status |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in ROWS:
        status, text = outcome(row)
        expected = f"{row.exc.__name__} /{row.match}/"
        if row.gap:
            status += f": {row.gap}"
        lines.append(
            f"| {row.group} | `{_cell(row.code, 120)}` | {_cell(expected, 90)} | "
            f"{_cell(text)} | {_cell(status, 200)} |"
        )
    gaps = sum(r.gap is not None for r in ROWS)
    lines.append("")
    lines.append(f"{len(ROWS)} rows, {gaps} library gaps (xfail strict).")
    return "\n".join(lines)


if __name__ == "__main__":
    if "--markdown" not in sys.argv[1:]:
        sys.exit("usage: python tests/test_bad_input.py --markdown")
    print(markdown())
