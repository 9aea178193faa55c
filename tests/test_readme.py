"""The README's examples run as written (a newcomer copies them verbatim).

``.ci/run`` also runs them in an environment made by exactly the README's install
line (``tests/readme_examples.py``); here they run in the test environment, and the
install line itself is checked against the extras that ``pyproject.toml`` declares.
"""

from __future__ import annotations

import os
import re
import shlex
import tomllib
from pathlib import Path

import pytest
from readme_examples import cli_commands, install_command, python_blocks, run_python_block

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = python_blocks()
COMMANDS = cli_commands()


def test_readme_has_python_examples():
    assert len(BLOCKS) >= 3
    assert len(COMMANDS) >= 3


def _expand(extras: set[str], declared: dict[str, list[str]]) -> list[str]:
    """The requirements of ``extras``, following ``dpacct[...]`` self-references."""
    out: list[str] = []
    for extra in extras:
        for req in declared[extra]:
            inner = re.fullmatch(r"dpacct\[([^\]]+)\]", req)
            if inner:
                out += _expand({e.strip() for e in inner.group(1).split(",")}, declared)
            else:
                out.append(req)
    return out


def test_install_line_names_extras_that_exist_and_cover_the_examples():
    line = install_command()
    extras = {e.strip() for part in re.findall(r'"\.\[([^\]]+)\]"', line) for e in part.split(",")}
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert extras and extras <= set(declared), (extras, sorted(declared))
    covered = " ".join(_expand(extras, declared))
    # what the examples import from outside the core must come with those extras
    needs = {
        "matplotlib": "matplotlib",
        "sklearn": "scikit-learn",
        "opacus": "opacus",
        "dp_accounting": "dp-accounting",
        "pandas": "pandas",
    }
    examples = "\n".join(BLOCKS)
    for module, dist in needs.items():
        used = re.search(rf"\b(import|from) {module}\b", examples) or (
            module == "matplotlib"
            and (".plot(" in examples or any("--plot" in c for c in COMMANDS))
        )
        if used:
            assert dist in covered, f"README examples use {module}; the install lacks {dist}"


def test_install_lines_take_torch_from_the_cpu_index():
    # a plain "pip install torch==2.13.0" resolves to the CUDA wheels on Linux; the README
    # gives PyTorch's CPU index (overridable, for CI, by TORCH_INDEX_URL)
    cpu = '--index-url "${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}"'
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if "pip install torch==" in ln]
    assert len(lines) >= 2 and all(cpu in ln for ln in lines), lines
    assert cpu in install_command()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "--install-command" in ci and "TORCH_INDEX_URL" in ci


#: set by ``.ci/run`` once ``tests/readme_examples.py`` has run every block and command of
#: the README (in the environment of the README's own install line, before the test
#: extras; the commands through the installed ``dpacct`` script, each required to exit 0
#: and print something, as below) and passed: the two tests below would run the same code
#: again in the same CI run (about 9 CPU s), so they skip there; anywhere else they run
README_RAN = os.environ.get("DPACCT_README_EXAMPLES_RAN") == "1"
_ran_in_ci = pytest.mark.skipif(
    README_RAN, reason="run and passed in .ci/run's README phase (tests/readme_examples.py)"
)


@_ran_in_ci
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the quickstart saves a ledger file
    monkeypatch.setenv("MPLBACKEND", "Agg")
    run_python_block(BLOCKS[index], index)


@_ran_in_ci
@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs(command, tmp_path, monkeypatch, capsys):
    from dpacct.cli import main

    monkeypatch.chdir(tmp_path)  # compare --plot writes a file
    monkeypatch.setenv("MPLBACKEND", "Agg")
    assert main(shlex.split(command)[1:]) in (0, None)
    assert capsys.readouterr().out.strip()
