"""The API reference's sources (docs/api/*.rst) list every public name, each once.

Cheap: the reStructuredText is parsed here, Sphinx is not run (CI builds the site with
``-W -n``, see .ci/run).  The integration modules' ``__all__`` are read from their
source, so this runs without Opacus or dp_accounting installed.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import dpacct

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"
LAYERS = ("accountant", "mechanisms", "calibrators")
INTEGRATIONS = ("dpacct.opacus", "dpacct.dp_accounting", "dpacct.cli")


def _entries() -> list[tuple[str | None, str, bool]]:
    """Every autosummary entry as (current module, name, whether it gets a page)."""
    out = []
    for rst in sorted(API.glob("*.rst")):
        module, block, toctree = None, False, False
        for line in rst.read_text(encoding="utf-8").splitlines():
            if m := re.match(r"\.\. currentmodule:: (\S+)", line):
                module = m.group(1)
            if line.startswith(".. autosummary::"):
                block, toctree = True, False
            elif block and line.strip() and not line.startswith("   "):
                block = False
            elif block and line.strip().startswith(":toctree:"):
                toctree = True
            elif block and line.strip() and not line.strip().startswith(":"):
                out.append((module, line.strip(), toctree))
    return out


def _resolve(dotted: str):
    """The object at ``dpacct.<layer>.<name>``."""
    module, name = dotted.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


def _all_from_source(module: str) -> list[str]:
    path = ROOT / "dpacct" / f"{module.rsplit('.', 1)[1]}.py"
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return list(ast.literal_eval(node.value))
    raise AssertionError(f"{path} has no literal __all__")


ENTRIES = _entries()
PAGES = {f"{mod}.{name}" for mod, name, toctree in ENTRIES if toctree}


def test_the_parser_finds_the_tables():
    assert len(ENTRIES) > 100
    assert "dpacct.accountant.PrivacyAccountant" in PAGES


@pytest.mark.parametrize("layer", LAYERS)
def test_every_name_of_a_layer_has_a_page_or_points_to_one(layer):
    package = importlib.import_module(f"dpacct.{layer}")
    text = (API / f"{layer}.rst").read_text(encoding="utf-8")
    for name in package.__all__:
        if f"dpacct.{layer}.{name}" in PAGES:
            continue
        # a re-export documented once where it is defined, and pointed to from here
        pointer = re.search(rf"``dpacct\.{layer}\.{name}`` is :obj:`(dpacct\.\w+\.\w+)`", text)
        assert pointer, f"dpacct.{layer}.{name} is missing from docs/api/{layer}.rst"
        assert pointer.group(1) in PAGES, f"{pointer.group(1)} has no page"
        assert getattr(package, name) is _resolve(pointer.group(1)), (
            f"dpacct.{layer}.{name} points to a different object"
        )


def test_every_top_level_name_is_listed_once_and_documented():
    text = (API / "dpacct.rst").read_text(encoding="utf-8")
    listed = []
    module = None
    for line in text.splitlines():
        m = re.match(r"\.\. currentmodule:: (\S+)", line)
        if m:
            module = m.group(1)
        elif line.startswith("   ") and not line.strip().startswith(":") and module:
            listed.append(f"{module}.{line.strip()}")
    assert listed
    for name in dpacct.__all__:
        if name in ("__version__", *LAYERS):
            continue
        homes = [full for full in listed if full.rsplit(".", 1)[1] == name]
        assert len(homes) == 1, f"dpacct.{name} is listed {len(homes)} times in dpacct.rst"
        assert getattr(dpacct, name) is _resolve(homes[0])
        # its page: under that name, or under the name of the same object (an alias)
        assert homes[0] in PAGES or any(
            _resolve(page) is getattr(dpacct, name)
            for page in PAGES
            if page.split(".")[1] in LAYERS
        ), f"dpacct.{name} -> {homes[0]} has no page"


@pytest.mark.parametrize("module", sorted(INTEGRATIONS))
def test_every_integration_name_has_a_page(module):
    for name in _all_from_source(module):
        assert f"{module}.{name}" in PAGES, f"{module}.{name} is missing from the API pages"


def test_no_object_has_two_pages():
    documented = [f"{mod}.{name}" for mod, name, toctree in ENTRIES if toctree]
    assert len(documented) == len(set(documented))
    objects = {}
    for full in documented:
        if full.split(".")[1] in LAYERS:
            obj = _resolve(full)
            if isinstance(obj, str):  # constants: equal strings are not the same name
                continue
            assert id(obj) not in objects, f"{full} and {objects[id(obj)]} are one object"
            objects[id(obj)] = full


# ------------------------------------------------------------------ the pages' examples
DOCS = ROOT / "docs"
README_BLOCKS = {
    b.strip()
    for b in re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text("utf-8"), re.S)
}
PAGES_WITH_CODE = sorted(
    p.relative_to(DOCS).as_posix()
    for p in DOCS.rglob("*.md")
    if "_build" not in p.parts
    and "```python" in p.read_text(encoding="utf-8")
    # the design's "API at a glance" is a list of spellings (``release(value, ...)``), not
    # a program
    and p.name != "design.md"
)


def test_the_guide_has_examples():
    assert {"user_guide/ml_engineer.md", "user_guide/researcher.md",
            "user_guide/analyst.md"} <= set(PAGES_WITH_CODE)


def test_the_analyst_guide_runs_a_histogram_a_dataframe_and_mst():
    """The analyst's page has (and test_page_examples_run runs) a private histogram, a
    DataFrame read by column name and an MST synthesis."""
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / "user_guide/analyst.md").read_text(
        encoding="utf-8"), re.S)
    code = "\n".join(blocks)
    assert "LaplaceMechanism" in code and "counts" in code                  # histogram
    assert "pd.DataFrame" in code or "as_frame=True" in code               # DataFrame
    assert "feature_names_in_" in code
    assert "calibrate_mst" in code and ".sample(" in code                  # MST


@pytest.mark.parametrize("page", PAGES_WITH_CODE)
def test_page_examples_run(page, tmp_path, monkeypatch):
    """A page's Python blocks run in order, in one namespace (a later block may use an
    earlier one's names); a block that is also in the README runs in test_readme.py."""
    monkeypatch.chdir(tmp_path)  # the ML engineer's page saves a ledger file
    monkeypatch.setenv("MPLBACKEND", "Agg")
    text = (DOCS / page).read_text(encoding="utf-8")
    namespace: dict = {"__name__": "__docs__"}
    for index, code in enumerate(re.findall(r"```python\n(.*?)```", text, re.S)):
        if code.strip() in README_BLOCKS and "import torch" in code:
            continue  # the Opacus training loop: run by test_readme.py
        for module in ("sklearn", "matplotlib", "dp_accounting"):
            if re.search(rf"\b(import|from) {module}\b", code) or (
                module == "matplotlib" and ".plot()" in code
            ):
                pytest.importorskip(module)
        exec(compile(code, f"docs/{page} python block {index}", "exec"), namespace)
