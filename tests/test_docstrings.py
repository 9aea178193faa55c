"""numpydoc's validation over the public API: every parameter documented, every name
explained, every public function and class with a runnable example.

The walk covers every function and class in ``dpacct.__all__``,
``dpacct.accountant.__all__``, ``dpacct.mechanisms.__all__``,
``dpacct.calibrators.__all__`` and the integration modules ``dpacct.opacus`` and
``dpacct.dp_accounting`` (each skipped, with its ``pip install "dpacct[...]"`` hint, when
its extra is not installed).  For a class it also covers the public methods and
properties that dpacct defines on it or on a dpacct base class (each validated once, where
it is defined).  A class is validated against its constructor's signature, so its
docstring's ``Parameters`` section documents the ``__init__`` parameters, as numpydoc
expects.  Module-level constants (``ADD_REMOVE``, ``MECHANISM``, ...) and ``__version__``
are documented by their ``#:`` comments and in the module docstring; they carry no
docstring of their own and are not walked.

Checks enforced (:data:`ENFORCED`):

* GL08 -- no docstring.  An override without a docstring of its own counts as
  documented when a dpacct base class defines the same method with a docstring and the
  same parameters (``help()`` shows the inherited one, and the base is validated);
* GL01, GL02, GL03, SS04 -- whitespace: where the text starts, the closing quotes on
  their own line after a multi-line docstring, no doubled blank lines, no leading
  whitespace in the summary;
* GL05, GL06, GL07, GL09, GL10 -- structure the documentation site renders: no tabs,
  only numpydoc's sections and in numpydoc's order, deprecations first, well-formed
  reST directives;
* SS01 -- no one-line summary;
* PR01, PR02, PR07, PR10 -- a parameter not documented, a documented parameter that
  does not exist, a parameter without a description, ``name: type`` without the space
  before the colon;
* EX01 -- no ``Examples`` section, for public functions and classes.  It is relaxed for
  methods and properties: a class's example shows how its methods are called, most
  methods share the contract documented (with examples) on :class:`~dpacct.Mechanism`,
  and a doctest per accessor would multiply near-identical examples without testing
  more; the everyday queries (``Mechanism.epsilon`` and its siblings,
  ``PrivacyAccountant.epsilon``, ``save``, ...) carry examples anyway.  It is also
  relaxed for exception classes, which the user meets when a function raises them: the
  raising function's docstring shows when.

Checks not enforced (:data:`NOT_ENFORCED`) are listed there with the reason.

The failure message lists every offender (name, check code, message), so one run shows
all.  ``python tests/test_docstrings.py`` prints the offenders grouped by file.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
from collections import defaultdict
from typing import Any

import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")

#: public modules whose ``__all__`` is walked (the core: always importable)
CORE_MODULES = ("dpacct", "dpacct.accountant", "dpacct.mechanisms", "dpacct.calibrators")
#: integration module -> the extra that installs its dependency
INTEGRATIONS = {"dpacct.opacus": "opacus", "dpacct.dp_accounting": "dp_accounting"}

#: numpydoc checks that fail the suite, for every walked object
ENFORCED = frozenset(
    {
        "GL01", "GL02", "GL03", "GL05", "GL06", "GL07", "GL08", "GL09", "GL10",
        "SS01", "SS04", "PR01", "PR02", "PR07", "PR10",
    }
)  # fmt: skip
#: checks enforced for public functions and classes only (see the module docstring)
ENFORCED_TOP_LEVEL = frozenset({"EX01"})

#: every other numpydoc check, with the reason it is not enforced
NOT_ENFORCED = {
    "SS02": "a summary may open with a code literal or a lower-case name "
    "(``f``-DP, ``epsilon(delta)``)",
    "SS03": "punctuation style; every summary passes today, but a summary ending in a "
    "formula or a colon before a list should not fail the suite",
    "SS05": "properties and result classes are summarised by noun phrases and many "
    "accessors by what they return ('Sound upper bound on delta'); the imperative mood "
    "is a style preference",
    "SS06": "a summary may wrap to a second line when a bound's full name needs it",
    "ES01": "a short object needs no extended summary",
    "PR03": "parameters are documented in the order a reader needs them (a result "
    "class's fields grouped by meaning), which is not always the signature's",
    "PR04": "a grouped entry ('coef, intercept, loss: as FittedLinearModel') refers to "
    "the types documented elsewhere; every parameter's type is in its annotation",
    "PR05": "style of the type line",
    "PR06": "style of the type line ('int' versus 'integer')",
    "PR08": "a description may start with a symbol or a code literal",
    "PR09": "a description may end with a formula or a code literal",
    "RT01": "the return value is stated in the summary of most accessors "
    "('Sound upper bound on delta'); a Returns section would repeat it",
    "RT02": "style of the Returns section",
    "RT03": "see RT01: the summary describes the value",
    "RT04": "see PR08",
    "RT05": "see PR09",
    "YD01": "no public function is a generator",
    "SA01": "a See Also section helps but is not needed on every object; the docs "
    "site's API pages cross-link",
    "SA02": "style of the See Also section",
    "SA03": "style of the See Also section",
    "SA04": "a See Also entry may be self-explanatory",
}


def _is_exception(obj: Any) -> bool:
    return inspect.isclass(obj) and issubclass(obj, BaseException)


def _is_dpacct(obj: Any) -> bool:
    return str(getattr(obj, "__module__", "") or "").split(".")[0] == "dpacct"


def _function_of(member: Any) -> Any:
    """The function behind a class member (method, static, class method, property)."""
    if isinstance(member, staticmethod | classmethod):
        return member.__func__
    if isinstance(member, property):
        return member.fget
    if isinstance(member, functools.cached_property):
        return member.func
    return member


def _param_names(func: Any) -> tuple[str, ...] | None:
    try:
        return tuple(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return None


def _documented_by_base(cls: type, name: str, func: Any) -> bool:
    """An override without its own docstring, documented by a dpacct base class's
    method of the same name with the same parameters (``help()`` shows that one)."""
    for base in cls.__mro__[1:]:
        if not _is_dpacct(base) or name not in vars(base):
            continue
        base_func = _function_of(vars(base)[name])
        if getattr(base_func, "__doc__", None):
            return _param_names(base_func) == _param_names(func)
    return False


def _class_members(cls: type) -> list[tuple[str, type, str]]:
    """(path, defining class, member name) of the public methods and properties that
    dpacct defines on ``cls`` or on its dpacct base classes."""
    members = []
    for klass in cls.__mro__:
        if not _is_dpacct(klass):
            continue
        for name, member in vars(klass).items():
            if name.startswith("_"):
                continue
            func = _function_of(member)
            if not (inspect.isfunction(func) or isinstance(member, property)):
                continue
            if func is None:
                continue
            path = f"{klass.__module__}.{klass.__qualname__}.{name}"
            members.append((path, klass, name))
    return members


def public_objects() -> list[tuple[str, Any, str]]:
    """(import path, object, kind) of every walked object, each once.

    ``kind`` is ``"function"``, ``"class"``, ``"exception"`` or ``"member"``; an
    integration module whose extra is missing is left out (see
    :func:`test_integration_extras`).
    """
    modules = list(CORE_MODULES)
    for name in INTEGRATIONS:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        modules.append(name)

    seen: set[int] = set()
    walked: list[tuple[str, Any, str]] = []
    for module_name in modules:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.ismodule(obj) or not (inspect.isclass(obj) or callable(obj)):
                continue  # subpackages, constants, __version__
            if not _is_dpacct(obj) or id(obj) in seen:
                continue  # re-exported from a peer library, or already walked
            seen.add(id(obj))
            path = f"{obj.__module__}.{obj.__qualname__}"
            if not inspect.isclass(obj):
                walked.append((path, obj, "function"))
                continue
            walked.append((path, obj, "exception" if _is_exception(obj) else "class"))
            for member_path, klass, member_name in _class_members(obj):
                member = vars(klass)[member_name]
                func = _function_of(member)
                if id(func) in seen:
                    continue
                seen.add(id(func))
                if (
                    not getattr(func, "__doc__", None)
                    and inspect.isfunction(func)
                    and _documented_by_base(klass, member_name, func)
                ):
                    continue
                walked.append((member_path, member, "member"))
    return walked


def _source_file(obj: Any) -> str:
    try:
        return inspect.getsourcefile(inspect.unwrap(_function_of(obj))) or "?"
    except TypeError:
        return "?"


def offenders() -> list[tuple[str, str, str, str]]:
    """(source file, name, check code, message) of every enforced check that fails."""
    found = []
    for path, obj, kind in public_objects():
        checks = ENFORCED | (ENFORCED_TOP_LEVEL if kind in ("function", "class") else set())
        result = numpydoc_validate.validate(path)
        for code, message in result["errors"]:
            if code in checks:
                found.append((_source_file(obj), path, code, message))
    return found


def test_checks_are_partitioned():
    """Every numpydoc check is either enforced or listed with the reason it is not."""
    enforced = ENFORCED | ENFORCED_TOP_LEVEL
    assert not enforced & set(NOT_ENFORCED)
    assert enforced | set(NOT_ENFORCED) == set(numpydoc_validate.ERROR_MSGS)


def test_walk_reaches_the_api():
    """The walk is not vacuous: it reaches the everyday names and their methods."""
    paths = {path for path, _, _ in public_objects()}
    for expected in (
        "dpacct.accountant.ledger.accountant.PrivacyAccountant",
        "dpacct.accountant.ledger.accountant.PrivacyAccountant.step",
        "dpacct.accountant.mechanism.Mechanism.epsilon",
        "dpacct.accountant.transformers.compose.compose",
        "dpacct.calibrators.dpsgd.noise_multiplier",
        "dpacct.mechanisms.primitives.laplace.LaplaceMechanism",
    ):
        assert expected in paths


def test_validator_catches_a_bad_docstring():
    """The enforced checks fire on a docstring that breaks them (the test can fail)."""

    def bad(alpha, beta):
        """no period and a parameter that does not exist

        Parameters
        ----------
        alpha: float
            Fine.
        gamma : float
            Not a parameter.


        """

    result = numpydoc_validate.validate(numpydoc_validate.get_doc_object(bad))
    codes = {code for code, _ in result["errors"]}
    assert {"PR01", "PR02", "PR10", "GL03", "EX01"} <= codes


@pytest.mark.parametrize("module_name", sorted(INTEGRATIONS))
def test_integration_extras(module_name):
    """An integration whose extra is missing is skipped with the install hint."""
    try:
        importlib.import_module(module_name)
    except ImportError as exc:
        pytest.skip(f'{module_name}: pip install "dpacct[{INTEGRATIONS[module_name]}]" ({exc})')
    paths = {path for path, _, _ in public_objects()}
    assert any(path.startswith(module_name + ".") for path in paths)


def test_public_docstrings_validate():
    """Every walked object passes the enforced numpydoc checks; the message lists all
    offenders at once."""
    found = offenders()
    if found:
        lines = [f"{name}: {code} {message}" for _, name, code, message in found]
        pytest.fail(f"{len(found)} docstring problem(s):\n" + "\n".join(lines))


if __name__ == "__main__":
    by_file: dict[str, list[str]] = defaultdict(list)
    for file, name, code, message in offenders():
        by_file[file].append(f"  {name}: {code} {message}")
    for file in sorted(by_file):
        print(f"{file} ({len(by_file[file])})")
        print("\n".join(by_file[file]))
    print(sum(map(len, by_file.values())), "offenders", file=sys.stderr)
