"""Review 29 (issue 37): lazy imports lose no public name and never turn a function into
its module.

ws29-cap makes more imports lazy (start-up).  Three public functions share their name
with the submodule that defines them: ``dpacct.mechanisms.audit``,
``dpacct.mechanisms.audit_one_run`` and ``dpacct.calibrators.calibrate``.  Python binds
a package's attribute to a submodule when that submodule is first imported, so a lazy
package that has not yet bound the function answers the *module* to
``dpacct.mechanisms.audit`` after ``import dpacct.mechanisms.audit`` (and ``dp.audit(...)``
then raises "module is not callable").  Main (617417f) imports these three eagerly in
the layers' ``__init__``: in a fresh process, submodule first, each name is the function,
the same object at the top and in its layer.  The second test: in a fresh process
every name of every layer's ``__all__`` (and the top's) is listed by ``dir()``,
reachable, no module except the layers, and ``from dpacct import *`` binds them all.
Power: fails on a main snapshot whose ``mechanisms/__init__.py`` drops the eager
``from .audit import audit`` (the name left to ``_EXPORTS``): ``audit`` is a module.
About 2 CPU s (two fresh interpreters).
"""

from __future__ import annotations

import subprocess
import sys

#: (submodule, name): a public function defined in a submodule of the same name
SHADOWED = [
    ("dpacct.mechanisms", "audit"),
    ("dpacct.mechanisms", "audit_one_run"),
    ("dpacct.calibrators", "calibrate"),
]


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)


def test_a_function_named_like_its_submodule_stays_the_function():
    lines = ["import importlib, types"]
    # every submodule first, in a fresh interpreter, then the names
    lines += [f"import {pkg}.{name}" for pkg, name in SHADOWED]
    lines.append("import dpacct")
    for pkg, name in SHADOWED:
        lines.append(
            f"a = getattr(importlib.import_module({pkg!r}), {name!r}); b = dpacct.{name}\n"
            f"assert callable(a) and not isinstance(a, types.ModuleType), ({pkg!r}, {name!r}, a)\n"
            f"assert a is b, ({name!r}, a, b)"
        )
    out = _run("\n".join(lines))
    assert out.returncode == 0, out.stderr[-2000:]


LAYERS = ("accountant", "mechanisms", "calibrators")


def test_every_exported_name_is_listed_reachable_and_star_imported():
    code = f"""
import importlib, types
ns = {{}}
exec("from dpacct import *", ns)
import dpacct
top = list(dpacct.__all__)
missing_star = [n for n in top if n not in ns]
assert not missing_star, ("star", missing_star)
assert set(top) <= set(dir(dpacct)), ("dir", sorted(set(top) - set(dir(dpacct))))
for layer in {LAYERS!r}:
    m = importlib.import_module("dpacct." + layer)
    names = list(m.__all__)
    assert set(names) <= set(dir(m)), (layer, sorted(set(names) - set(dir(m))))
    lns = {{}}
    exec(f"from dpacct.{{layer}} import *", lns)
    assert not [n for n in names if n not in lns], (layer, "star")
    for n in names:
        v = getattr(m, n)
        assert not isinstance(v, types.ModuleType), (layer, n)
        assert n in top and getattr(dpacct, n) is ns[n], (layer, n)
print(len(top))
"""
    out = _run(code)
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.strip()) >= 160, out.stdout  # main: 164 names
