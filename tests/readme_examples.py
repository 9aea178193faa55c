"""Run every example of the README in the environment its install line made.

The README's quickstart section names one install command (the fenced ``bash`` block
after the ``<!-- readme-examples-install -->`` marker).  ``.ci/run`` runs that command,
exactly as written, in a fresh virtual environment and then this script, before the test
extras are installed, so an example that needs a package the README's install does not
bring fails here instead of passing in the test environment, which has everything.

This file uses the standard library only: it must run where pytest is not installed.
``tests/test_readme.py`` reuses its parsers.

Usage::

    python tests/readme_examples.py --install-command   # prints the install line
    python tests/readme_examples.py                      # runs every example
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
MARKER = "<!-- readme-examples-install -->"


def _text(readme: Path = README) -> str:
    return readme.read_text(encoding="utf-8")


def install_command(readme: Path = README) -> str:
    """The install line of the quickstarts: the ``bash`` block right after the marker."""
    text = _text(readme)
    match = re.search(re.escape(MARKER) + r"\s*```bash\n(.*?)```", text, re.S)
    if match is None:
        raise SystemExit(f"{readme}: no ```bash block after {MARKER}")
    lines = [ln.strip() for ln in match.group(1).splitlines() if ln.strip()]
    if len(lines) != 1:
        raise SystemExit(f"{readme}: the install block must hold one line, not {lines}")
    return lines[0]


def python_blocks(readme: Path = README) -> list[str]:
    """Every fenced ``python`` block, in order."""
    return re.findall(r"```python\n(.*?)```", _text(readme), re.S)


def cli_commands(readme: Path = README) -> list[str]:
    """Every ``dpacct ...`` command of the ``bash`` blocks (continuation lines joined)."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", _text(readme), re.S):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.strip()
            if line.startswith("dpacct ") and line != "dpacct demo":
                commands.append(" ".join(line.split()))
    return commands


def run_python_block(code: str, index: int) -> None:
    """Execute one block in a fresh namespace (the caller sets the working directory)."""
    exec(compile(code, f"README.md python block {index}", "exec"), {"__name__": "__readme__"})


def _run_commands(commands: list[str], cwd: str, results: list) -> None:
    """Run the README's ``dpacct`` commands one after another: ``results`` gets
    ``(command, None)`` for each that exits 0, else ``(command, what went wrong)``,
    an exception on the way (a missing console script, a bad line) included."""
    exe = Path(sys.executable).with_name("dpacct")
    for command in commands:
        try:
            argv = [str(exe), *shlex.split(command)[1:]]
            done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd)
        except BaseException:  # reported as this command's failure
            results.append((command, traceback.format_exc()))
            continue
        failed = f"(exit {done.returncode})\n{done.stderr}" if done.returncode != 0 else None
        if failed is None and not done.stdout.strip():  # as tests/test_readme.py checks
            failed = "(exit 0, but printed nothing)"
        results.append((command, failed))


def main() -> int:
    failures = []
    os.environ.setdefault("MPLBACKEND", "Agg")
    with tempfile.TemporaryDirectory() as work:
        os.chdir(work)  # the quickstarts write a ledger and a plot
        # the commands (each its own interpreter; none reads what a python block writes)
        # run beside the python blocks, on another core: the phase takes the longer of
        # the two (12 and 9 CPU s) instead of their sum
        results: list = []
        beside = threading.Thread(target=_run_commands, args=(cli_commands(), work, results))
        beside.start()
        try:
            for index, code in enumerate(python_blocks()):
                try:
                    run_python_block(code, index)
                except BaseException:  # report every failing block, not only the first
                    failures.append(f"python block {index}:\n{traceback.format_exc()}")
                else:
                    print(f"README python block {index}: ok")
        finally:
            beside.join()
        commands = cli_commands()
        for command, failed in results:
            if failed is not None:
                failures.append(f"{command}\n{failed}")
            else:
                print(f"README command ok: {command}")
        # a command the thread never reported (it died) counts as failed too
        for command in commands[len(results):]:
            failures.append(f"{command}\n(not run: the commands' thread stopped early)")
    for failure in failures:
        print("FAILED " + failure, file=sys.stderr)
    total = len(python_blocks()) + len(cli_commands())
    print(f"README: {total - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--install-command"]:
        print(install_command())
        sys.exit(0)
    sys.exit(main())
