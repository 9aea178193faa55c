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
import json
import os
import sys
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


# ----------------------------------------------------------------------------------
# pytest-xdist: one BLAS / OpenMP / torch thread per worker
# ----------------------------------------------------------------------------------
# numpy's OpenBLAS (and OpenMP, MKL, torch) start one thread per core in every process:
# ``-n auto`` on 2 cores ran 2 workers x 2 BLAS threads, which contend for the cores.
# Under xdist every worker is one process per core already, so each is held to one
# thread: the controller sets the variables below before it starts the workers (their
# numpy and torch read them at import, and so do the children they launch: notebook
# kernels, CLI subprocesses), and each worker also limits the pools already loaded
# (threadpoolctl) and torch's, if torch is imported.  A variable the user has set is
# left as it is.  A run without ``-n`` keeps the libraries' defaults.

#: environment variables read by OpenBLAS, OpenMP (and torch), MKL, BLIS, Accelerate
THREAD_VARIABLES = (
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)


def _under_xdist(config) -> bool:
    if hasattr(config, "workerinput"):
        return True
    numprocesses = getattr(config.option, "numprocesses", None)
    return bool(numprocesses) and getattr(config.option, "dist", "no") != "no"


def _one_thread_each() -> None:
    """Set the thread variables (unless set) and limit the pools loaded so far."""
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, "1")
    value = os.environ["OMP_NUM_THREADS"]
    limit = int(value) if value.isdigit() else 1
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # the test extra installs it; the variables above still hold
        pass
    else:
        threadpool_limits(limits=limit)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(limit)


def pytest_configure(config):
    if _under_xdist(config):
        _one_thread_each()


def pytest_collection_finish(session):
    # pools that the test modules loaded at collection (torch's, scikit-learn's OpenMP)
    if hasattr(session.config, "workerinput"):
        _one_thread_each()


# ----------------------------------------------------------------------------------
# pytest-xdist: work stealing, the long tests first
# ----------------------------------------------------------------------------------
# With two workers the run ends when the last long test ends.  ``-n`` alone means
# ``--dist load``, which sends consecutive runs of tests in collection order, so a long
# test collected late (or two long tests sent to one worker) decides the wall time.
# Here ``-n N`` without an explicit ``--dist`` uses ``worksteal``: each worker starts
# with an equal block of the collection, and one that runs dry takes half of another's
# remaining block.  The items are laid out for that: the tests that ``tests/durations.json``
# records as long start the workers' blocks (dealt longest first to the block with the
# least recorded time), the rest follow in collection order, so the long tests run
# first and stealing balances the cheap end.  ``--dist load`` (or any other) on the
# command line is left alone, and so is a run without xdist.

#: recorded seconds of the suite's long tests, ``{node id: seconds}``; refresh with
#: ``python tests/durations.py JUNIT.xml`` after a run with ``--junitxml``
DURATIONS = ROOT / "tests" / "durations.json"
#: tests that build the same costly value, which the library keeps per process: each
#: group is dealt to one worker, its tests one after the other at the head of the block
#: (stealing takes from the tail), so only the first builds it.  The k = 2
#: random-allocation law at sigma 1, T 100 (``random_allocation_k2._ATOMS``, 6-7 s CPU)
#: is built by both of the first; the k = 3 four-level law at sigma 1, T 10
#: (``random_allocation_k_law4._ATOMS4``, which keeps one law: its tests one after the
#: other) by all five of the second (measured in one process, CPU s: 4.5, 2.6, 1.0
#: together; review 26's alone 4.5; session 30: sum_lower's T 10, k 3 bracket 6.36 alone,
#: 2.08 after the first; k_law4's T 10, k 3 case, ``remove_atoms4(1.0, 10, 3)``, 4.84
#: alone, 0.53 after it).  The k = 4 four-level law at sigma 1, T 20 (built by
#: both of the third: the route's law of ``random_allocation(GaussianMechanism(1.0), 20,
#: k=4)``) and at sigma 1, T 10 (``k_atoms(1.0, 10, 4)``, the route's law of
#: ``random_allocation(GaussianMechanism(1.0), 10, k=4)``: the fourth), also kept in
#: ``_ATOMS4`` (one law: each group one test after the other); measured in one process,
#: CPU s, alone -> second in its group: route_tighter 5.97 -> 0.35, the T 10 bracket ends
#: 8.23 -> 2.63.  The fifth: the k = 2 law at sigma 0.7, T 3 (``random_allocation_k2._ATOMS``,
#: Proposition 6's three-block atoms), built by all three: 6.02 -> 1.85; k2_three's T 3
#: Monte Carlo check 3.72 (main, -n 2) -> 0.48 when it followed a build on its worker.
#: The small-sigma sum law at sigma 0.46, T 100 (``random_allocation_pld._LAWS``, 2^19
#: cells), built by both of the sixth: the high-event case 5.52 CPU s alone -> 0.09 after
#: the first (session 35, one process).
TOGETHER = (
    (
        "tests/test_random_allocation_k2.py::test_bracket_width_at_sigma_1_t_100",
        "tests/test_sampler.py::test_random_allocation_row_carries_its_certified_lower_bound",
    ),
    (
        "tests/test_random_allocation_k3.py::test_both_directions_above_monte_carlo[1.0-10-eps0-1]",
        "tests/test_random_allocation_k3.py::test_both_directions_above_monte_carlo[1.0-10-eps2-2]",
        "tests/test_review26_k3_four_level.py"
        "::test_three_of_ten_is_sound_and_no_looser_than_mains_above_the_floor",
        "tests/test_random_allocation_sum_lower.py"
        "::test_bracket_holds_against_monte_carlo_of_both_directions[10-3]",
        "tests/test_random_allocation_k_law4.py"
        "::test_law_above_importance_sampling[1.0-10-3-eps1-1.35]",
    ),
    (
        "tests/test_review23_allocation_k4_mc.py::test_four_of_twenty_is_sound_and_no_looser_than_mains",
        "tests/test_random_allocation_k4.py::test_route_tighter_than_the_blocks",
    ),
    (
        "tests/test_random_allocation_k4.py::test_both_directions_above_monte_carlo[1.0-eps0]",
        "tests/test_random_allocation_k4.py"
        "::test_bracket_ends_against_importance_sampling[4-10-1.0-800000]",
    ),
    (
        "tests/test_random_allocation_k2.py"
        "::test_small_t_route_takes_the_other_add_bounds_and_holds_the_exact_pair",
        "tests/test_random_allocation_k2_three.py::test_holds_the_exact_2_of_3_pair_below_proposition_3",
        "tests/test_random_allocation_k2_three.py::test_both_directions_above_monte_carlo_at_t3",
    ),
    (
        "tests/test_random_allocation_pld.py"
        "::test_small_sigma_answers_between_the_lower_bound_and_the_rdp_route",
        "tests/test_random_allocation_pld.py::test_high_event_never_widens_the_loss_range[0.46-100]",
    ),
)


def _dist_given(config) -> bool:
    args = [*config.invocation_params.args, *os.environ.get("PYTEST_ADDOPTS", "").split()]
    return any(a == "-d" or a == "--dist" or a.startswith("--dist=") for a in args)


def pytest_cmdline_main(config):
    # after xdist's own (tryfirst) hook has turned ``-n N`` into ``--dist load``, before
    # pytest's main loop (a conftest's plain hook runs ahead of the built-in one)
    if getattr(config.option, "dist", "no") == "load" and not _dist_given(config):
        config.option.dist = "worksteal"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """(xdist, controller) Tell each worker how the tests will be distributed."""
    node.workerinput["dpacct_dist"] = node.config.option.dist


def _layout(
    items: list, workers: int, seconds: dict[str, float], together: tuple = ()
) -> list:
    """Reorder ``items`` for ``worksteal`` with ``workers`` workers (see above); the
    collected tests of each group in ``together`` go to one block, one after another."""
    # worksteal's first distribution: worker i gets the next remaining // (workers - i)
    sizes, left = [], len(items)
    for i in range(workers):
        sizes.append(left // (workers - i))
        left -= sizes[-1]
    by_id = {it.nodeid: it for it in items}
    units = [[by_id[n] for n in group if n in by_id] for group in together]
    units = [u for u in units if len(u) > 1]
    grouped = {id(it) for u in units for it in u}
    units += [[it] for it in items if it.nodeid in seconds and id(it) not in grouped]
    cost = {id(u): sum(seconds.get(it.nodeid, 0.0) for it in u) for u in units}
    heads: list[list] = [[] for _ in range(workers)]
    load = [0.0] * workers
    for unit in sorted(units, key=lambda u: -cost[id(u)]):
        # the block with the least recorded time that still has room for it
        free = [i for i in range(workers) if len(heads[i]) + len(unit) <= sizes[i]]
        if not free:
            continue
        i = min(free, key=lambda j: load[j])
        heads[i] += unit
        load[i] += cost[id(unit)]
    long = [it for h in heads for it in h]
    taken = {id(it) for it in long}
    rest = iter([it for it in items if id(it) not in taken])
    out = []
    for i in range(workers):
        out += heads[i]
        out += [next(rest) for _ in range(sizes[i] - len(heads[i]))]
    return out


def pytest_collection_modifyitems(config, items):
    workerinput = getattr(config, "workerinput", None)
    if not workerinput or workerinput.get("dpacct_dist") != "worksteal":
        return
    workers = int(workerinput.get("workercount", 1))
    if workers < 2 or not DURATIONS.is_file():
        return
    seconds = {k: float(v) for k, v in json.loads(DURATIONS.read_text()).items()}
    items[:] = _layout(items, workers, seconds, TOGETHER)
