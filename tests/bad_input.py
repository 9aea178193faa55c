"""The bad-input catalogue's machinery: fixtures, the row type, and the runner.

The catalogue itself is three test modules, by layer: ``test_bad_input_accountant.py``
(transformers, queries, Renyi helpers, the ledger and its files),
``test_bad_input_mechanisms.py`` (the primitives, ``audit``, huge Python integers) and
``test_bad_input_calibrators.py``.  Every row is a real call -- a ``lambda f: ...``
whose ``f`` holds fresh fixtures (:class:`Fixtures`, nothing is shared between rows)
-- the exception type it must raise, and a regex that the message must match: the
parameter's name and, where it applies, the allowed range.  Every row runs with warnings
turned into errors: a bad input must not get by with a ``RuntimeWarning``.  A row's
test id is the source of its call, read back from the module with :mod:`ast`.

A row whose input is accepted silently, returns a NaN or raises an unclear error is a
*library gap*: it states the behaviour we want and is marked ``xfail(strict=True)``
with the reason (``gap=``), so the suite stays green until the gap is fixed and then
tells us to drop the mark.

Print the catalogue as a markdown table (input -> exception type and actual message)::

    python tests/bad_input.py --markdown
"""

from __future__ import annotations

import ast
import atexit
import functools
import importlib
import json
import os
import re
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from dpacct.accountant import (
    Capabilities,
    Mechanism,
    PrivacyAccountant,
    compose,
    poisson_subsample,
)
from dpacct.accountant.serialization import sha256_of
from dpacct.mechanisms import GaussianMechanism, audit


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


@functools.cache
def audited():
    """One audit result, for the rows that query it."""
    return audit(GaussianMechanism(sigma=1.0), np.random.default_rng(0), samples=2000)


class Fixtures:
    """Fresh fixtures for one row (``f`` in ``lambda f: ...``)."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)
        self.G = GaussianMechanism(sigma=1.0)
        self.STEP = poisson_subsample(GaussianMechanism(sigma=1.0), 0.01)
        self.RUN = compose([poisson_subsample(GaussianMechanism(sigma=1.0), 0.01)], counts=[100])
        self.fam = lambda s: GaussianMechanism(sigma=s)
        self.pair = lambda a, b: compose([GaussianMechanism(sigma=a), GaussianMechanism(sigma=b)])
        self.steps_of = lambda n: compose([GaussianMechanism(sigma=5.0)], counts=[n])
        self.audited = audited
        self.acct = good_ledger()
        self.filt = PrivacyAccountant(budget_epsilon=1.0, budget_delta=1e-5)
        self.gauss_outputs = lambda r, n: (r.normal(1.0, 1.0, n), r.normal(0.0, 1.0, n))


# ------------------------------------------------------------------------ the catalogue
@dataclass(frozen=True)
class Row:
    call: Callable[[Fixtures], Any]
    exc: type[BaseException]
    match: str
    gap: str | None = None  # a library gap: the row states the behaviour we want

    @property
    def code(self) -> str:
        """The source of the call (the body of its lambda)."""
        return row_source(self.call)


@functools.cache
def _lambdas(filename: str) -> dict[int, list[str]]:
    """Line -> bodies of the ``lambda f: ...`` starting on that line, in ``filename``."""
    out: dict[int, list[str]] = {}
    with open(filename, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda) and [a.arg for a in node.args.args] == ["f"]:
            out.setdefault(node.lineno, []).append(ast.unparse(node.body))
    return out


def row_source(call: Callable[[Fixtures], Any]) -> str:
    code = call.__code__
    bodies = _lambdas(code.co_filename).get(code.co_firstlineno, [])
    if len(bodies) != 1:
        raise AssertionError(f"{code.co_filename}:{code.co_firstlineno}: one row lambda per line")
    return bodies[0]


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
#: a Python int far beyond the float range (10**400): float() raises OverflowError, which
#: must reach the user as a ValueError naming the parameter
FLOAT_RANGE = "within the float range"


def run_row(row: Row) -> Any:
    """Call a row with fresh fixtures and warnings as errors; return what it returned."""
    fixtures = Fixtures()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return row.call(fixtures)


def params(rows: list[Row]) -> list[Any]:
    """The rows as pytest parameters, each with its source as id."""
    out = []
    for row in rows:
        marks = () if row.gap is None else pytest.mark.xfail(strict=True, reason=row.gap)
        out.append(pytest.param(row, id=row.code, marks=marks))
    return out


def check_well_formed(groups: dict[str, list[Row]], at_least: int) -> None:
    """Unique calls, compilable patterns, a non-empty pattern for every ValueError and
    TypeError row, and at least ``at_least`` rows."""
    rows = [row for rs in groups.values() for row in rs]
    codes = [r.code for r in rows]
    assert len(codes) == len(set(codes)), "duplicate rows"
    for row in rows:
        re.compile(row.match)
        assert callable(row.call)
        if row.exc in (ValueError, TypeError):
            assert row.match, row.code
    assert len(rows) >= at_least


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


#: the catalogue's modules, in the table's order
MODULES = ("test_bad_input_accountant", "test_bad_input_mechanisms", "test_bad_input_calibrators")


def markdown() -> str:
    lines = [
        "| layer | input | expected | actual outcome | status |",
        "| --- | --- | --- | --- | --- |",
    ]
    n_rows = gaps = 0
    for name in MODULES:
        for group, rows in importlib.import_module(name).GROUPS.items():
            for row in rows:
                status, text = outcome(row)
                expected = f"{row.exc.__name__} /{row.match}/"
                if row.gap:
                    status += f": {row.gap}"
                lines.append(
                    f"| {group} | `{_cell(row.code, 120)}` | {_cell(expected, 90)} | "
                    f"{_cell(text)} | {_cell(status, 200)} |"
                )
                n_rows += 1
                gaps += row.gap is not None
    lines.append("")
    lines.append(f"{n_rows} rows, {gaps} library gaps (xfail strict).")
    return "\n".join(lines)


if __name__ == "__main__":
    if "--markdown" not in sys.argv[1:]:
        sys.exit("usage: python tests/bad_input.py --markdown")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    print(markdown())
