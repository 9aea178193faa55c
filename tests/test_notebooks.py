"""The tutorial notebooks: every ``notebooks/*.ipynb`` is executed and statically checked.

Execution runs a copy of each notebook in memory with nbclient (kernel ``python3``,
working directory ``notebooks/``) and never writes the outputs back.  Each notebook runs
once per session, in one test that checks both that every cell runs and that the stored
outputs are reproduced (two tests sharing a cached run ran it twice when xdist sent them
to different workers).  The kernel imports this checkout's packages: the repository
root is prepended to ``PYTHONPATH`` of the kernel's environment (in CI the project is
also pip-installed), matplotlib uses the non-interactive ``Agg`` backend, and
``TQDM_DISABLE=1`` hides every progress bar (dpacct's bars appear only when a step runs
longer than a delay, i.e. on a loaded machine: a bar in the output would make the
outcome depend on the load).

The executed copy must reproduce the text outputs stored in the file (stdout, stderr and
``text/plain`` results, cell by cell), so that the numbers a reader sees, and that the
markdown quotes, are what the code prints: every random draw is seeded through an explicit
``numpy.random.Generator`` and nothing prints wall-clock times.  Only what legitimately
varies between runs is normalised away (temporary paths, memory addresses, kernel file
names, ANSI colours, progress-bar redraws).  After a change that moves a notebook's
numbers, refresh the stored outputs (plots included) with::

    python tests/test_notebooks.py [NAME.ipynb ...]

and check that the markdown still quotes what the cells print.

The static checks are cheap: a notebook opens with a markdown introduction, is saved
with its outputs, labels the axes of every plot and gives it a legend and a title, and
is listed in ``notebooks/README.md``, and holds no saved progress bar.  All notebooks
together must run in under five minutes (measured by the execution tests of this module).
"""

from __future__ import annotations

import difflib
import math
import os
import re
import sys
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


def _execute(path: Path):
    """Run a copy of the notebook at ``path``; return ``(notebook, error or None)``.

    The kernel inherits ``os.environ`` when it is launched: the repository root goes in
    front of ``PYTHONPATH``, matplotlib uses ``Agg`` and progress bars are off
    (``TQDM_DISABLE``, which tqdm and dpacct's own bars read), all restored afterwards.
    """
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    from nbclient.exceptions import CellExecutionError

    nb = _read(path)  # an in-memory copy: the file on disk is not rewritten here
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "MPLBACKEND", "TQDM_DISABLE")}
    old = saved["PYTHONPATH"]
    os.environ["PYTHONPATH"] = str(REPO_ROOT) if not old else str(REPO_ROOT) + os.pathsep + old
    os.environ["MPLBACKEND"] = "Agg"
    os.environ["TQDM_DISABLE"] = "1"
    client = nbclient.NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        record_timing=False,  # no wall-clock stamps in the cells' metadata
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    try:
        client.execute()
        error = None
    except CellExecutionError as exc:
        error = exc
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return nb, error


#: what legitimately differs between two runs of the same code: (pattern, replacement)
_VOLATILE = [
    (re.compile(r"\x1b\[[0-9;]*[A-Za-z]"), ""),  # ANSI colours and cursor moves
    (re.compile(r"[^\n]*\r(?!\n)"), ""),  # progress bars (tqdm) redraw with a bare \r
    (re.compile(r"\b0x[0-9a-fA-F]{6,}\b"), "0x<address>"),  # object reprs
    (re.compile(r"/tmp/ipykernel_\d+/\d+\.py"), "<cell>"),  # warnings name the cell file
    (re.compile(r"(?:/[\w.-]+)*/tmp[\w.-]*"), "<tmpdir>"),  # tempfile directories
]


def _normalise(text: str) -> str:
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text


#: a float printed at full precision (12 or more significant digits): its last digits
#: move with the CPU's vector kernels (numpy's exp / log on AVX2 or AVX-512: a calibrated
#: sigma 0.9684237346122029 on the machine that stored 01_quickstart, 0.9684237346184204
#: on session 46's Intel Xeon), and so does a checksum of a file that holds one
_LONG_FLOAT = re.compile(r"-?\d+\.\d{11,}(?:e[-+]?\d+)?")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
#: relative tolerance between two such floats (tests/pins.py's bound is 1e-10 for the
#: library's answers; a calibration moves its root by the answer's move over the slope)
FLOAT_REL = 1e-9


def _same_output(old: str, new: str) -> bool:
    """Equal text, or equal once every full-precision float agrees to
    :data:`FLOAT_REL` and checksums (of files holding such floats) are set aside."""
    if old == new:
        return True
    skeleton = [_LONG_FLOAT.sub("<float>", _DIGEST.sub("<digest>", t)) for t in (old, new)]
    if skeleton[0] != skeleton[1]:
        return False
    a, b = (_LONG_FLOAT.findall(_DIGEST.sub("", t)) for t in (old, new))
    return len(a) == len(b) and all(
        math.isclose(float(x), float(y), rel_tol=FLOAT_REL, abs_tol=0.0)
        for x, y in zip(a, b, strict=True)
    )


def _text_outputs(nb) -> dict[int, str]:
    """Code cell index -> its stdout, stderr and ``text/plain`` results, normalised.

    Consecutive stream chunks are joined (the kernel splits them arbitrarily); images
    and HTML are left out (their bytes depend on the matplotlib build and fonts).
    """
    out: dict[int, str] = {}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        streams: dict[str, str] = {}
        results = []
        for o in cell.get("outputs", []):
            if o.get("output_type") == "stream":
                streams[o.get("name", "stdout")] = streams.get(o.get("name", "stdout"), "") + (
                    o.get("text", "")
                )
            elif o.get("output_type") in ("execute_result", "display_data"):
                text = o.get("data", {}).get("text/plain")
                if text is not None:
                    results.append("".join(text) if isinstance(text, list) else text)
        parts = [f"[{name}]\n{text}" for name, text in sorted(streams.items())]
        parts += [f"[result]\n{text}" for text in results]
        out[i] = _normalise("\n".join(parts))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=NOTEBOOK_IDS)
def test_notebook_runs_and_reproduces_its_stored_outputs(path: Path) -> None:
    """Every cell runs without raising, in a kernel that imports this checkout, and the
    re-run prints exactly what the file shows (seeded, no timings, no progress bars).
    One test, so that the notebook is executed once whatever the test distribution."""
    nb, error = _execute(path)
    if error is not None:
        found = _failing_cell(nb)
        where = "a cell"
        source = "<unknown cell>"
        if found is not None:
            index, cell = found
            where = f"cell {index} (execution count {cell.get('execution_count')})"
            source = _source(cell)
        pytest.fail(
            f"{path.name}: {where} raised.\n--- cell source ---\n{source}\n"
            f"--- error ---\n{_ANSI.sub('', str(error))}",
            pytrace=False,
        )
    assert _failing_cell(nb) is None, f"{path.name}: an error output survived execution"
    stored, fresh = _text_outputs(_read(path)), _text_outputs(nb)
    diffs = []
    for i in sorted(set(stored) | set(fresh)):
        old, new = stored.get(i, ""), fresh.get(i, "")
        if not _same_output(old, new):
            lines = difflib.unified_diff(
                old.splitlines(), new.splitlines(), "stored", "re-run", n=0, lineterm=""
            )
            diffs.append(f"cell {i}:\n" + "\n".join(list(lines)[2:]))
    assert not diffs, (
        f"{path.name}: a re-run does not reproduce the stored outputs.  If the re-run "
        "printed something that depends on the run (a progress bar, a timing, a warning "
        "under load, an unseeded draw), fix its source: that output must not reach the "
        "notebook, and refreshing would save it there.  Only if the numbers moved "
        "because the library's answers changed on purpose, refresh with python "
        f"tests/test_notebooks.py {path.name} and update the markdown that quotes them."
        "\n" + "\n".join(diffs)
    )


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
def test_notebook_saved_without_timestamps(path: Path) -> None:
    """No wall-clock stamps of a past run in the cells' metadata (they would not match
    the outputs of the run that produced them; ``python tests/test_notebooks.py`` drops
    them)."""
    nb = _read(path)
    stamped = [i for i, cell in enumerate(nb.cells) if "execution" in cell.get("metadata", {})]
    assert not stamped, f"{path.name}: cells {stamped} carry execution timestamps"


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


#: a tqdm bar as it is printed: ``name:  40%|####      | 2/5 [00:03<00:04, 1.2s/it]``
_BAR = re.compile(r"\d+%\|.*\|\s*\d+/\d+|\[\d+:\d+<")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NOTEBOOK_IDS)
def test_notebook_saved_without_progress_bars(path: Path) -> None:
    """No progress bar of the run that saved it: bars depend on the machine's load, and
    the execution test runs with them off, so a stored bar could never be reproduced."""
    barred = [
        i
        for i, cell in enumerate(_read(path).cells)
        for o in cell.get("outputs", [])
        if o.get("output_type") == "stream" and _BAR.search("".join(o.get("text", "")))
    ]
    assert not barred, f"{path.name}: cells {barred} hold a saved progress bar"


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


def _refresh(names: list[str]) -> None:
    """Execute the notebooks and save them with their fresh outputs (plots included)."""
    import nbformat

    paths = [NOTEBOOK_DIR / n for n in names] if names else NOTEBOOKS
    for path in paths:
        nb, error = _execute(path)
        if error is not None:
            raise SystemExit(f"{path.name} raised:\n{_ANSI.sub('', str(error))}")
        for cell in nb.cells:  # stale wall-clock stamps of earlier runs
            cell.metadata.pop("execution", None)
        nbformat.write(nb, path)
        print(f"saved {path.relative_to(REPO_ROOT)}")


if __name__ == "__main__":  # python tests/test_notebooks.py [NAME.ipynb ...]
    _refresh(sys.argv[1:])


def test_same_output_tolerates_only_the_last_digits_of_full_precision_floats():
    """The stored-output comparison forgives a full-precision float's last digits (and a
    checksum of a file holding it), nothing else: a short float, a moved digit at
    1e-6, or any other text still differ."""
    old = 'sigma=0.8231601744203725) would take epsilon to 3.00017\n"sha256:' + "7d" * 32 + '"'
    moved = 'sigma=0.8231601744256573) would take epsilon to 3.00017\n"sha256:' + "66" * 32 + '"'
    assert _same_output(old, old) and _same_output(old, moved)
    assert not _same_output(old, moved.replace("3.00017", "3.00018"))
    assert not _same_output(old, moved.replace("0.8231601744256573", "0.8231609744256573"))
    assert not _same_output(old, moved.replace("would take", "took"))
    assert not _same_output("steps 1725", "steps 1726")
