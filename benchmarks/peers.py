"""Run peer differential-privacy accounting libraries on standard workloads.

Every measurement runs in a fresh Python subprocess, one per (runner, workload),
so that imports, caches and memory never leak from one measurement into the next.
Inside the subprocess the runner's modules are imported first (untimed), then the
runner is called up to ``repeats`` times; ``seconds`` is the best of those calls
and the peak memory is taken on the first call.

A *runner* is a plain function ``runner(workload) -> dict`` that returns any of
the keys ``epsilon``, ``lower``, ``upper``, ``sigma`` and ``note``. Runners are
registered with :func:`register` under a name ``"<peer>.<method>"``; the same
harness will later measure this project's own accountants, either by registering
them here or by passing ``"package.module:function"`` as the runner name.

Examples
--------
From the repository root::

    python benchmarks/peers.py --list
    python benchmarks/peers.py --run dp_accounting.rdp --workload dpsgd_q0.01
    python benchmarks/peers.py --table --timeout 120 --json benchmarks/results/peers.json

The file is run by path (every measurement subprocess runs it that way): opacus
installs a top-level package that is also called ``benchmarks``, so run by path this
module first puts the repository root on ``sys.path``, and ``benchmarks`` is then this
repository's package.

Layout: ``peer_registry.py`` (workloads, the runner registry), one module per peer
library (``peer_dp_accounting.py``, ``peer_prv_accountant.py``, ``peer_opacus.py``,
``peer_autodp.py``: importing one registers its runners), ``peer_harness.py`` (the
subprocess measurements, tables and this command line).  This module imports them all
and re-exports their public names, so ``benchmarks.peers`` stays the one entry point.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

if __package__ in (None, ""):
    # run by path (python benchmarks/peers.py): the repository root goes first on the
    # path, so that ``benchmarks`` is this repository's package and not opacus's
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.peer_harness import (
    PEERS_SCRIPT,
    environment,
    format_table,
    main,
    measure,
    plan,
    run_in_process,
    run_table,
)
from benchmarks.peer_registry import (
    DEFAULT_MEM_LIMIT_MB,
    DEFAULT_REPEAT_BUDGET,
    DEFAULT_REPEATS,
    DEFAULT_TIMEOUT,
    PEER_DISTRIBUTIONS,
    REPO_ROOT,
    RESULT_KEYS,
    RUNNERS,
    WORKLOADS,
    Runner,
    RunnerResult,
    RunnerSpec,
    Unavailable,
    Workload,
    register,
    schedule_of,
)

#: the peers' runner modules, imported (so registered) in the table's row order
PEER_MODULES = ("peer_dp_accounting", "peer_prv_accountant", "peer_opacus", "peer_autodp")
for _module in PEER_MODULES:
    importlib.import_module(f"benchmarks.{_module}")

__all__ = [
    "DEFAULT_MEM_LIMIT_MB",
    "DEFAULT_REPEATS",
    "DEFAULT_REPEAT_BUDGET",
    "DEFAULT_TIMEOUT",
    "PEERS_SCRIPT",
    "PEER_DISTRIBUTIONS",
    "PEER_MODULES",
    "REPO_ROOT",
    "RESULT_KEYS",
    "RUNNERS",
    "WORKLOADS",
    "Runner",
    "RunnerResult",
    "RunnerSpec",
    "Unavailable",
    "Workload",
    "environment",
    "format_table",
    "main",
    "measure",
    "plan",
    "register",
    "run_in_process",
    "run_table",
    "schedule_of",
]

if __name__ == "__main__":
    sys.exit(main())
