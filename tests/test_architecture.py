"""The shape of the library, enforced (issue 22): a one-way, cycle-free import graph
(function-level imports included), no file over 800 lines, no function over 100 lines
without a comment saying why.

Each rule has an explicit allow-list of today's offenders.  The lists only shrink: a test
fails on a new offender, on a listed one that grew, and on a listed one that no longer
offends (remove it from the list).  Everything is read with :mod:`ast`; nothing of the
library is imported, so these tests cost milliseconds.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: repository folder -> installed package
FOLDERS = {
    "dpacct": "dpacct",
    "accountant": "dpacct.accountant",
    "mechanisms": "dpacct.mechanisms",
    "calibrators": "dpacct.calibrators",
}
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 100
#: a function over MAX_FUNCTION_LINES says why in a comment of this form (in its body or
#: on the lines just above its ``def``)
LONG_FUNCTION_COMMENT = re.compile(r"#\s*long function:\s*\S")

#: import cycles of today, each a strongly connected set of modules (issue 22: "No
#: import cycle, not even through function-level imports"); delete an entry when the
#: cycle is gone, never add one
KNOWN_CYCLES: list[frozenset[str]] = []

#: library files over MAX_FILE_LINES today (issue 22), with their line counts: a listed
#: file may shrink, never grow
LONG_FILES: dict[str, int] = {
}

#: functions over MAX_FUNCTION_LINES today without a comment saying why (issue 22), as
#: ``file:qualified name`` with their line counts (``def`` to last line): a listed
#: function may shrink, never grow
LONG_FUNCTIONS: dict[str, int] = {}


def _library_files() -> dict[str, Path]:
    """Installed module name -> source file, for every module of the library."""
    out = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder)
            parts = [package, *rel.parts[:-1]]
            if rel.stem != "__init__":
                parts.append(rel.stem)
            out[".".join(parts)] = path
    return out


MODULES = _library_files()


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _imported_modules(name: str, path: Path, *, typing: bool = False) -> set[str]:
    """Library modules imported anywhere in ``path`` (module level and inside functions;
    with ``typing``, also inside ``if TYPE_CHECKING:`` blocks).

    ``from package import name`` counts as importing the submodule ``package.name`` when
    there is one, else the package itself; a package's implicit import of its parents is
    not an edge.
    """
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # an ``if TYPE_CHECKING:`` block never runs: its imports are for annotations only
    typing_only = set() if typing else {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If)
        and (
            (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
            or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
        )
        for stmt in node.body
        for inner in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                module = alias.name
                while module and module not in MODULES:
                    module = module.rpartition(".")[0]
                if module:
                    out.add(module)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{module}" if module else base
            for alias in node.names:
                if f"{module}.{alias.name}" in MODULES:
                    out.add(f"{module}.{alias.name}")
                elif module in MODULES:
                    out.add(module)
    out.discard(name)
    return out


def _strongly_connected(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected sets of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_the_graph_reader_sees_function_level_and_relative_imports(tmp_path):
    # gaussian.py imports mechanism.py; pld_pair.py imports grid.py (relative)
    graph = {name: _imported_modules(name, path) for name, path in MODULES.items()}
    assert "dpacct.accountant.mechanism" in graph["dpacct.accountant.families.gaussian"]
    assert "dpacct.accountant.pld.grid" in graph["dpacct.accountant.pld.pld_pair"]
    assert _strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        frozenset("abc")
    ]
    assert _strongly_connected({"a": {"b"}, "b": set()}) == []
    # an import under TYPE_CHECKING: no edge at run time, an edge when annotations count
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from dpacct.accountant.mechanism import Mechanism\n"
    )
    assert _imported_modules("dpacct.accountant.probe", probe) == set()
    typed = _imported_modules("dpacct.accountant.probe", probe, typing=True)
    assert typed == {"dpacct.accountant.mechanism"}


def test_the_import_graph_has_no_new_cycle():
    graph = {name: _imported_modules(name, path) for name, path in MODULES.items()}
    cycles = _strongly_connected(graph)
    new = [sorted(c) for c in cycles if c not in KNOWN_CYCLES]
    assert not new, f"new import cycle(s), function-level imports included: {new}"
    gone = [sorted(c) for c in KNOWN_CYCLES if c not in cycles]
    assert not gone, f"cycle(s) no longer there (or changed): update KNOWN_CYCLES: {gone}"


#: import cycles when ``if TYPE_CHECKING:`` imports count too (issue 36: "No import
#: circle, counting TYPE_CHECKING imports"), each a strongly connected set of modules;
#: never add one.  The last (mechanism -> routes -> ... -> mechanism) went when the
#: router and the declarations were typed against :mod:`dpacct.accountant.interface`.
KNOWN_TYPING_CYCLES: list[frozenset[str]] = []


def test_no_new_cycle_counting_type_checking_imports():
    graph = {name: _imported_modules(name, path, typing=True) for name, path in MODULES.items()}
    cycles = _strongly_connected(graph)
    new = [sorted(c) for c in cycles if c not in KNOWN_TYPING_CYCLES]
    assert not new, f"new import cycle(s), TYPE_CHECKING imports included: {new}"
    gone = [sorted(c) for c in KNOWN_TYPING_CYCLES if c not in cycles]
    assert not gone, f"cycle(s) no longer there (or changed): update KNOWN_TYPING_CYCLES: {gone}"


def test_no_library_file_over_800_lines():
    counts = {_rel(p): len(p.read_text(encoding="utf-8").splitlines()) for p in MODULES.values()}
    new = {f: n for f, n in counts.items() if n > MAX_FILE_LINES and f not in LONG_FILES}
    assert not new, f"library file(s) over {MAX_FILE_LINES} lines: {new}"
    grown = {f: (LONG_FILES[f], counts[f]) for f in LONG_FILES if counts.get(f, 0) > LONG_FILES[f]}
    assert not grown, f"listed long file(s) grew (listed, now): {grown}"
    fixed = [f for f in LONG_FILES if counts.get(f, 0) <= MAX_FILE_LINES]
    assert not fixed, (
        f"now within {MAX_FILE_LINES} lines (or gone): remove from LONG_FILES: {fixed}"
    )


def _long_functions() -> dict[str, int]:
    """``file:qualified name`` -> line count, of every function over the limit that has no
    ``# long function: why`` comment."""
    out = {}
    for path in MODULES.values():
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()

        def visit(node: ast.AST, prefix: str, lines=lines, path=path) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                    n = child.end_lineno - child.lineno + 1
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    text = "\n".join(lines[max(first - 4, 0) : child.end_lineno])
                    if n > MAX_FUNCTION_LINES and not LONG_FUNCTION_COMMENT.search(text):
                        out[f"{_rel(path)}:{prefix}{child.name}"] = n
                    visit(child, f"{prefix}{child.name}.<locals>.")
                elif isinstance(child, ast.ClassDef):
                    visit(child, f"{prefix}{child.name}.")
                else:
                    visit(child, prefix)

        visit(ast.parse(source), "")
    return out


def test_no_function_over_100_lines_without_a_comment_saying_why():
    found = _long_functions()
    new = {f: n for f, n in found.items() if f not in LONG_FUNCTIONS}
    assert not new, (
        f"function(s) over {MAX_FUNCTION_LINES} lines: split them, or say why in a "
        f"'# long function: <why>' comment: {new}"
    )
    grown = {
        f: (LONG_FUNCTIONS[f], found[f])
        for f in LONG_FUNCTIONS
        if found.get(f, 0) > LONG_FUNCTIONS[f]
    }
    assert not grown, f"listed long function(s) grew (listed, now): {grown}"
    fixed = [f for f in LONG_FUNCTIONS if f not in found]
    assert not fixed, (
        f"within {MAX_FUNCTION_LINES} lines, explained or gone: remove from LONG_FUNCTIONS: {fixed}"
    )


#: library modules without a test module of their own (issue 22: tests mirror the source
#: tree), by basename without leading underscores (``_release.py`` is tested in
#: ``tests/test_release.py``): a listed module may gain its ``tests/test_<name>.py`` (then
#: remove it from the list), never the other way round
UNTESTED_MODULES: set[str] = set()
#: modules that are not tested on their own: package markers
NOT_MIRRORED = {"__init__", "__main__"}


def _module_basenames() -> set[str]:
    return {path.stem.lstrip("_") for path in MODULES.values() if path.stem not in NOT_MIRRORED}


def test_every_library_module_has_a_test_module():
    names = _module_basenames()
    tests = {p.stem.removeprefix("test_") for p in (ROOT / "tests").glob("test_*.py")}
    new = sorted(n for n in names - tests if n not in UNTESTED_MODULES)
    assert not new, f"library module(s) without tests/test_<name>.py: {new}"
    fixed = sorted(n for n in UNTESTED_MODULES if n in tests or n not in names)
    assert not fixed, f"now tested (or gone): remove from UNTESTED_MODULES: {fixed}"
