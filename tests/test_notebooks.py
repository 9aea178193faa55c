"""The tutorial notebooks: every ``notebooks/*.ipynb`` is executed and statically checked.

Execution runs a copy of each notebook in memory with nbclient (kernel ``python3``,
working directory ``notebooks/``) and never writes the outputs back.  The kernel imports
this checkout's packages: the repository root is prepended to ``PYTHONPATH`` of the
kernel's environment (in CI the project is also pip-installed), and matplotlib uses
the non-interactive ``Agg`` backend.

The static checks are cheap: a notebook opens with a markdown introduction, is saved
with its outputs, labels the axes of every plot and gives it a legend and a title, and
is listed in ``notebooks/README.md``.  All notebooks together must run in under five
minutes (measured by the execution tests of this module).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = REPO_ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
NOTEBOOK_IDS = [p.name for p in NOTEBOOKS]

#: seconds a single cell may run before the execution is declared hung
CELL_TIMEOUT = 300
#: a call that draws on a figure: ``plt.plot(``, ``ax.scatter(``, ``axes[0].hist(``, ...
_PLOT_CALL = re.compile(
    r"\b(?:plt|ax\w*|axs?\w*(?:\[[^\]]*\])+)\."
    r"(?:plot|scatter|bar|barh|hist|step|stairs|fill_between|semilogx|semilogy|loglog|"
    r"errorbar|imshow|boxplot|violinplot|pcolormesh|contourf?|stem)\("
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _read(path: Path):
    nbformat = pytest.importorskip("nbformat")
    return nbformat.read(path, as_version=4)


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


# ----------------------------------------------------------------------------------
# execution
# ----------------------------------------------------------------------------------


def _failing_cell(nb) -> tuple[int, object] | None:
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if any(out.get("output_type") == "error" for out in cell.get("outputs", [])):
            return i, cell
    return None


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NOTEBOOK_IDS)
def test_notebook_executes(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every cell runs without raising, in a kernel that imports this checkout."""
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    from nbclient.exceptions import CellExecutionError

    nb = _read(path)  # an in-memory copy: the file on disk is never rewritten
    # the kernel inherits os.environ when it is launched; monkeypatch restores it
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv(
        "PYTHONPATH", str(REPO_ROOT) if not old else str(REPO_ROOT) + os.pathsep + old
    )
    monkeypatch.setenv("MPLBACKEND", "Agg")
    client = nbclient.NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    try:
        client.execute()
    except CellExecutionError as exc:
        found = _failing_cell(nb)
        where = "a cell"
        source = "<unknown cell>"
        if found is not None:
            index, cell = found
            where = f"cell {index} (execution count {cell.get('execution_count')})"
            source = _source(cell)
        pytest.fail(
            f"{path.name}: {where} raised.\n--- cell source ---\n{source}\n"
            f"--- error ---\n{_ANSI.sub('', str(exc))}",
            pytrace=False,
        )
    assert _failing_cell(nb) is None, f"{path.name}: an error output survived execution"


# ----------------------------------------------------------------------------------
# static checks
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NOTEBOOK_IDS)
def test_notebook_starts_with_markdown(path: Path) -> None:
    nb = _read(path)
    assert nb.cells, f"{path.name} is empty"
    first = nb.cells[0]
    assert first.cell_type == "markdown", (
        f"{path.name} must open with a markdown introduction, not a {first.cell_type} cell"
    )
    assert _source(first).strip(), f"{path.name}: the introduction cell is empty"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NOTEBOOK_IDS)
def test_notebook_saved_with_outputs(path: Path) -> None:
    """Readers see the results without running anything: code cells were executed."""
    nb = _read(path)
    unexecuted = [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        and _source(cell).strip()
        and cell.get("execution_count") is None
    ]
    assert not unexecuted, f"{path.name}: code cells {unexecuted} were saved without running"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NOTEBOOK_IDS)
def test_plots_are_labelled(path: Path) -> None:
    """A cell that draws a plot also labels both axes and sets a legend and a title."""
    nb = _read(path)
    problems = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        src = _source(cell)
        if not _PLOT_CALL.search(src):
            continue
        lacking = [
            what
            for what, present in [
                ("x-axis label (set_xlabel / xlabel)", "xlabel" in src),
                ("y-axis label (set_ylabel / ylabel)", "ylabel" in src),
                ("legend", "legend" in src),
                ("title (set_title / title / suptitle)", "title" in src),
            ]
            if not present
        ]
        if lacking:
            problems.append(f"cell {i} plots without: {', '.join(lacking)}")
    assert not problems, f"{path.name}: " + "; ".join(problems)


def _readme_lines() -> list[str]:
    readme = NOTEBOOK_DIR / "README.md"
    assert readme.is_file(), "notebooks/README.md is missing"
    return readme.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NOTEBOOK_IDS)
def test_notebook_listed_in_readme(path: Path) -> None:
    """Each notebook has its line in notebooks/README.md, found by its number."""
    match = re.match(r"(\d+)_", path.name)
    assert match, f"{path.name}: notebook names start with a number, e.g. 07_topic.ipynb"
    number = match.group(1)
    entry = re.compile(rf"^\s*[-*]\s+(?:\*\*)?{number}\b")
    lines = [line for line in _readme_lines() if entry.match(line) or path.name in line]
    assert lines, f"{path.name} is not listed in notebooks/README.md (no line for {number})"


def test_readme_links_point_to_notebooks() -> None:
    """Every notebook the README links to exists."""
    linked = re.findall(r"\(([^)\s]+\.ipynb)\)", "\n".join(_readme_lines()))
    missing = [name for name in linked if not (NOTEBOOK_DIR / name).is_file()]
    assert not missing, f"notebooks/README.md links to missing notebooks: {missing}"
