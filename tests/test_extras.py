"""Missing optional extras say which ``pip install "dpacct[...]"`` fixes them."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from dpacct.accountant.extras import EXTRAS, import_optional, missing_extra

ROOT = Path(__file__).resolve().parents[1]


def test_every_named_extra_exists_in_pyproject():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert set(EXTRAS) <= set(declared)
    # and each installs the package the message says it does
    deps = {k: " ".join(v).lower() for k, v in declared.items()}
    assert "matplotlib" in deps["plot"]
    assert "scikit-learn" in deps["examples"] and "pandas" in deps["examples"]
    assert "opacus" in deps["opacus"]
    assert "dp-accounting" in deps["dp_accounting"]


def test_import_optional_returns_the_module_or_names_the_extra(monkeypatch):
    import json

    assert import_optional("json", extra="examples", feature="x") is json
    # as if not installed: the package and any submodule an earlier test imported
    for name in [m for m in sys.modules if m == "sklearn" or m.startswith("sklearn.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "sklearn", None)
    with pytest.raises(ImportError, match=re.escape('pip install "dpacct[examples]"')) as info:
        import_optional("sklearn.datasets", extra="examples", feature="the analyst quickstart")
    assert str(info.value).startswith("the analyst quickstart needs scikit-learn and pandas")
    assert isinstance(info.value.__cause__, ImportError)


def test_unknown_extra_is_a_value_error():
    with pytest.raises(ValueError, match="extra must be one of"):
        missing_extra("x", "plots")
    with pytest.raises(ValueError, match="extra must be one of"):
        import_optional("json", extra="nope", feature="x")


@pytest.mark.parametrize(
    ("module", "blocked", "hint"),
    [
        ("dpacct.opacus", "opacus", 'pip install torch==2.13.0 "dpacct[opacus]"'),
        ("dpacct.dp_accounting", "dp_accounting", 'pip install "dpacct[dp_accounting]"'),
    ],
)
def test_integrations_without_their_extra(module, blocked, hint):
    code = (
        "import sys\n"
        f"sys.modules[{blocked!r}] = None  # as if not installed\n"
        "try:\n"
        f"    import {module}\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.startswith(f"ImportError {module} needs"), out
    assert hint in out


def test_library_imports_optional_packages_only_through_the_helper():
    # every import of an optional package in the library goes through extras.py (or
    # sits in the try block of an integration module that raises missing_extra); the
    # CLI is checked by its own tests
    optional = ("matplotlib", "pandas", "sklearn", "torch", "opacus", "dp_accounting")
    pattern = re.compile(rf"^\s*(?:import|from)\s+({'|'.join(optional)})\b", re.M)
    offenders = []
    for folder in ("accountant", "mechanisms", "calibrators", "dpacct"):
        for path in sorted((ROOT / folder).glob("*.py")):
            if path.name == "cli.py":
                continue
            text = path.read_text()
            for m in pattern.finditer(text):
                line = text[: m.start()].count("\n") + 1
                # the integrations' guarded top-level imports
                if (
                    path.name in ("opacus.py", "dp_accounting.py", "_dp_event_convert.py")
                    and "missing_extra" in text
                ):
                    continue
                offenders.append(f"{path.relative_to(ROOT)}:{line}")
    assert not offenders, offenders


def test_lazy_exports_load_on_first_use_and_refuse_unknown_names():
    import sys

    import pytest

    from dpacct.accountant.extras import lazy_exports

    ns: dict = {}
    get, names = lazy_exports("email", {"Parser": "parser"}, ns)
    assert names() == ["Parser"]
    assert get("Parser") is sys.modules["email.parser"].Parser
    assert "Parser" in ns  # cached: later lookups skip the hook
    assert get("charset") is sys.modules["email.charset"]  # a submodule by attribute
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        get("nope")
    with pytest.raises(AttributeError):
        get("_private")
