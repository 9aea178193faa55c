"""Import circles of the library, with and without ``TYPE_CHECKING`` imports (issue 36).

    python -m benchmarks.import_graph             # this checkout
    python -m benchmarks.import_graph /work/main  # another checkout (its own reader)

Reads every module with :mod:`ast` (nothing of the library is imported), with this
checkout's graph reader and Tarjan's strongly connected components
(``tests/test_architecture.py``) applied to the module list of the checkout read, so old
and new are counted by the same rules.  Prints the number of circles and of modules in
them, then each circle's edges, marking those that exist only under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"_arch_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]).resolve() if args else ROOT
    arch = _load(root / "tests" / "test_architecture.py")
    here = _load(ROOT / "tests" / "test_architecture.py")
    here.ROOT = root
    here.MODULES = arch.MODULES  # the read checkout's modules, this checkout's reader
    runtime = {n: here._imported_modules(n, p) for n, p in arch.MODULES.items()}
    typed = {n: here._imported_modules(n, p, typing=True) for n, p in arch.MODULES.items()}
    print(f"{root}: {len(arch.MODULES)} modules")
    for label, graph in (
        ("run time (function-level imports included)", runtime),
        ("counting TYPE_CHECKING imports", typed),
    ):
        cycles = here._strongly_connected(graph)
        print(f"{label}: {len(cycles)} circle(s), {sum(map(len, cycles))} modules")
    for cycle in here._strongly_connected(typed):
        print(" circle:")
        for a in sorted(cycle):
            for b in sorted(typed[a] & cycle):
                mark = "" if b in runtime[a] else "  (TYPE_CHECKING only)"
                print(f"   {a} -> {b}{mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
