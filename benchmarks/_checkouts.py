"""Run one benchmark function in a child process, for this checkout or another one.

The child imports dpacct from ``root`` (through :mod:`benchmarks._old_checkout`) when a
root is given, else from this checkout, calls ``module.function()`` and prints its JSON;
the parent reads it back.  Used by the benchmarks that put two checkouts side by side
(:mod:`benchmarks.tradeoff_rounding`, :mod:`benchmarks.answers_side_by_side`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

_CHILD = r"""
import importlib, json, os, sys
if os.environ.get("DPACCT_ROOT"):
    from benchmarks import _old_checkout  # noqa: F401  (dpacct's layers from that root)
module = importlib.import_module(sys.argv[1])
print(json.dumps(getattr(module, sys.argv[2])()))
"""


def run_in_checkout(module: str, function: str, root: str | None = None) -> Any:
    """``module.function()`` evaluated in a fresh interpreter (this checkout's library, or
    ``root``'s), its JSON result decoded."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # this checkout's library is named too: the installed package may map dpacct's layers
    # to another checkout (an editable install of main, run from a worktree)
    env = dict(os.environ, PYTHONPATH=here, DPACCT_ROOT=root or here)
    res = subprocess.run([sys.executable, "-c", _CHILD, module, function], env=env,
                         capture_output=True, text=True, check=True, cwd=here)
    return json.loads(res.stdout.strip().splitlines()[-1])
