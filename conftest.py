"""Collect the library's doctests under their installed names.

The repository's folders ``accountant/``, ``mechanisms/`` and ``calibrators/`` install
as ``dpacct.accountant``, ``dpacct.mechanisms`` and ``dpacct.calibrators``.  pytest's
own ``--doctest-modules`` would import ``accountant/pld/grid.py`` as a top-level module
``accountant.pld`` -- a second copy of the engine beside the installed one -- so the
doctests are collected here instead, each module imported by its ``dpacct`` name, and
the library folders are plain directories to pytest (a ``Package`` collector would
import their ``__init__.py`` under the top-level name too).
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from _pytest.doctest import DoctestModule

ROOT = Path(__file__).resolve().parent
#: repository folder -> installed package
LAYERS = {
    "dpacct": "dpacct",
    "accountant": "dpacct.accountant",
    "mechanisms": "dpacct.mechanisms",
    "calibrators": "dpacct.calibrators",
}


def installed_name(path: Path) -> str | None:
    """``accountant/pld/grid.py`` -> ``dpacct.accountant.pld.grid``; None outside the library."""
    try:
        rel = path.resolve().relative_to(ROOT)
    except ValueError:
        return None
    if len(rel.parts) < 2 or rel.parts[0] not in LAYERS or rel.name == "__main__.py":
        return None
    parts = [LAYERS[rel.parts[0]], *rel.parts[1:-1]]
    if rel.stem != "__init__":
        parts.append(rel.stem)
    return ".".join(parts)


class InstalledDoctestModule(DoctestModule):
    """Doctests of one library module, imported under its installed name."""

    dpacct_name: str = ""

    def _getobj(self):
        try:
            return importlib.import_module(self.dpacct_name)
        except ImportError as exc:
            # an integration module whose optional extra is not installed says which
            # ``pip install "dpacct[...]"`` to run; anything else is a real failure
            if "dpacct[" not in str(exc):
                raise
            pytest.skip(f"{self.dpacct_name}: {exc}")


def _doctests(file_path: Path, parent) -> InstalledDoctestModule | None:
    name = installed_name(file_path)
    if name is None:
        return None
    module = InstalledDoctestModule.from_parent(parent, path=file_path)
    module.dpacct_name = name
    return module


def pytest_collect_file(file_path: Path, parent):
    # __init__.py files reach pytest_pycollect_makemodule below instead
    if file_path.suffix != ".py" or file_path.name == "__init__.py":
        return None
    return _doctests(file_path, parent)


class _NoTests(pytest.File):
    """A library module named on the command line: its doctests come from
    :func:`pytest_collect_file`; it holds no test functions of its own."""

    def collect(self):
        return []


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path: Path, parent):
    """pytest collects every ``__init__.py`` (and any file named on the command line) as
    a test module under its folder's top-level name, a second copy of the library; for
    the library's files, collect their doctests (``__init__.py``) or nothing instead."""
    if installed_name(module_path) is None:
        return None
    if module_path.name == "__init__.py":
        return _doctests(module_path, parent)
    return _NoTests.from_parent(parent, path=module_path)


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Path, parent):
    # the layers and every sub-folder of them (accountant/pld/, mechanisms/primitives/, ...)
    try:
        rel = path.resolve().relative_to(ROOT)
    except ValueError:
        return None
    if rel.parts and rel.parts[0] in LAYERS:
        return pytest.Dir.from_parent(parent, path=path)
    return None
