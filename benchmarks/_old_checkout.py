"""Import dpacct from another checkout, named by ``DPACCT_ROOT`` (for side-by-side rows).

Importing this module maps ``dpacct`` and its three layers (``accountant``,
``mechanisms``, ``calibrators``, which the installed package maps from the repository's
root) to that checkout's directories, before anything else imports them; every later
``import dpacct...`` reads the old code.  Used by benchmarks that compare two checkouts
in one run (:mod:`benchmarks.tradeoff_rounding`).
"""

from __future__ import annotations

import importlib.util
import os
import sys

ROOT = os.environ["DPACCT_ROOT"]


def _load(name: str, path: str, package: bool = True):
    init = os.path.join(path, "__init__.py")
    spec = importlib.util.spec_from_file_location(
        name, init, submodule_search_locations=[path] if package else None
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


if "dpacct" in sys.modules and not sys.modules["dpacct"].__file__.startswith(ROOT):
    raise RuntimeError("dpacct was imported before benchmarks._old_checkout")
_dpacct = _load("dpacct", os.path.join(ROOT, "dpacct"))
for _layer in ("accountant", "mechanisms", "calibrators"):
    setattr(_dpacct, _layer, _load(f"dpacct.{_layer}", os.path.join(ROOT, _layer)))
