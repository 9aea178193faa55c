"""The installed package: one namespace, ``dpacct``, that imports fast and exports the
everyday API of its three layers."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import dpacct

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("accountant", "mechanisms", "calibrators")


def _run(code: str) -> subprocess.CompletedProcess:
    # from a directory outside the repository: what an installed user sees
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd="/", timeout=120
    )


def test_version_is_the_packaged_one():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "dpacct.__version__"}
    from importlib.metadata import version

    assert version("dpacct") == dpacct.__version__


def test_every_layer_name_is_exported_from_the_top():
    """``dp.X`` works for every public name of the three layers, and is the same object."""
    import importlib

    for layer in LAYERS:
        module = importlib.import_module(f"dpacct.{layer}")
        for name in module.__all__:
            assert name in dpacct.__all__, f"dpacct.{layer}.{name} is not re-exported"
            assert getattr(dpacct, name) is getattr(module, name)
    assert dpacct.accountant is importlib.import_module("dpacct.accountant")


def test_each_layer_keeps_its_own_export_list():
    """Each layer's ``__init__.py`` holds its own ``__all__`` (issue 36: no layer imports
    the top package): every name in it is importable from the layer, and every public
    name the ``__init__.py`` imports (other than a submodule) is listed.  The engine's
    list maps each name to the submodule that defines it (loaded lazily, issue 37)."""
    import ast
    import importlib
    import types

    for layer in LAYERS:
        init = ROOT / layer / "__init__.py"
        assert not any(m == "dpacct" or m.startswith("dpacct._") for m, _ in _imports(init)), (
            f"{layer}/__init__.py imports the top package"
        )
        module = importlib.import_module(f"dpacct.{layer}")
        names = module.__all__
        assert len(set(names)) == len(names), f"a name is listed twice for {layer}"
        missing = [n for n in names if not hasattr(module, n)]
        assert not missing, f"dpacct.{layer} lacks {missing} listed in its __all__"
        imported = {
            alias.asname or alias.name
            for node in ast.parse(init.read_text()).body
            if isinstance(node, ast.ImportFrom) and node.level
            for alias in node.names
        }
        public = {
            n
            for n in imported
            if not n.startswith("_") and not isinstance(getattr(module, n), types.ModuleType)
        }
        unlisted = sorted(public - set(names))
        assert not unlisted, f"dpacct.{layer} imports {unlisted}: add them to its __all__"
    engine = importlib.import_module("dpacct.accountant")
    assert list(engine._EXPORTS) == engine.__all__
    # a lazy package cannot export a name that is also one of its submodules: importing
    # the submodule would bind the name to the module
    here = (ROOT / "accountant").iterdir()
    submodules = {p.stem for p in here if p.suffix == ".py" or p.is_dir()}
    assert not submodules & set(engine.__all__)
    for name, home in engine._EXPORTS.items():
        defining = importlib.import_module(f"dpacct.accountant.{home}")
        assert getattr(engine, name) is getattr(defining, name), name


def test_the_top_level_reexports_the_layers_lists():
    """``dp.X`` is the first layer's ``X`` (the engine before the zoo), every name once."""
    import importlib

    homes = {}
    for layer in LAYERS:
        for n in importlib.import_module(f"dpacct.{layer}").__all__:
            homes.setdefault(n, layer)
    assert dpacct.__all__ == ["__version__", *LAYERS, *sorted(homes)]
    for name, layer in homes.items():
        assert getattr(dpacct, name) is getattr(importlib.import_module(f"dpacct.{layer}"), name)
    engine = importlib.import_module("dpacct.accountant")
    assert dpacct.GaussianMechanism is engine.GaussianMechanism


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        dpacct.no_such_name  # noqa: B018


def test_import_dpacct_loads_no_numerical_library():
    """``import dpacct`` is lazy: numpy, scipy and the layers load on first use."""
    out = _run(
        "import sys, dpacct\n"
        "heavy = [m for m in ('numpy', 'scipy', 'dpacct.accountant', 'dpacct.mechanisms')"
        " if m in sys.modules]\n"
        "print(heavy)\n"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_only_dpacct_is_installed_at_the_top_level():
    """Installed folders are mapped into ``dpacct``: nothing else goes into site-packages."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    tool = meta["tool"]["setuptools"]
    assert all(p == "dpacct" or p.startswith("dpacct.") for p in tool["packages"])
    assert tool["package-dir"] == {"dpacct": "dpacct", **{f"dpacct.{x}": x for x in LAYERS}}
    out = _run("import accountant")  # the repository folder is not importable by itself
    assert out.returncode != 0 and "ModuleNotFoundError" in out.stderr


def test_typed_and_licensed():
    assert (ROOT / "dpacct" / "py.typed").exists()
    assert "Apache License" in (ROOT / "LICENSE").read_text()


def test_everyday_example_through_the_namespace():
    """The DESIGN's example through ``import dpacct as dp``, against the closed form: one
    Gaussian with sigma = 2 is 0.5-GDP, whose delta(eps) is
    Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (Dong, Roth, Su 2019, Cor. 2.13)."""

    from oracles import gaussian_delta

    import dpacct as dp

    mu = 0.5
    eps = dp.GaussianMechanism(sigma=2.0).epsilon(1e-5)
    exact_delta = float(gaussian_delta(mu, eps))
    assert exact_delta == pytest.approx(1e-5, rel=1e-6)
    run = dp.compose([dp.GaussianMechanism(sigma=2.0)], counts=[4])  # = sigma 1
    assert run.epsilon(1e-5) == pytest.approx(dp.GaussianMechanism(sigma=1.0).epsilon(1e-5))


def test_command_line_version_and_module_entry_point():
    out = subprocess.run(
        [sys.executable, "-m", "dpacct", "--version"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"dpacct {dpacct.__version__}"


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """``(module, names)`` of every import statement in ``path`` (code, not doctests),
    relative imports resolved to their ``dpacct.<layer>`` module."""
    import ast

    layer = path.parent.name
    package = "dpacct" if layer == "dpacct" else f"dpacct.{layer}"
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{module}" if module else base
            out.append((module, [alias.name for alias in node.names]))
    return out


def _layer_of(module: str) -> str:
    """``accountant``, ``mechanisms``, ``calibrators``, or ``dpacct`` (the top level:
    the command line and the integrations)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "dpacct"


# the layer order: each may import only the layers before it (docs/design.md)
ORDER = ("accountant", "mechanisms", "calibrators", "dpacct")


@pytest.mark.parametrize("layer", ORDER)
def test_layers_import_one_way_and_no_private_name_crosses(layer):
    """The engine never imports the zoo (nor the calibrators), no layer imports one
    above it, and no private name (``_x``) is imported from another layer."""
    here = ORDER.index(layer)
    above = {f"dpacct.{name}" for name in ORDER[here + 1 : -1]}
    if layer != "dpacct":
        above |= {"dpacct.cli", "dpacct.opacus", "dpacct.dp_accounting"}
    folder = ROOT / layer
    for path in sorted(folder.glob("*.py")):
        for module, names in _imports(path):
            assert not any(module == m or module.startswith(m + ".") for m in above), (
                f"{path.relative_to(ROOT)} imports {module}, a layer above {layer}"
            )
            other_layer = module.startswith("dpacct") and _layer_of(module) != layer
            # each layer keeps its own export list: nothing private from the top package
            allowed = {"__version__"}
            private = [n for n in names if n.startswith("_") and n not in allowed]
            assert not (other_layer and private), (
                f"{path.relative_to(ROOT)} imports private {private} from {module}"
            )


def test_every_library_folder_is_a_listed_package():
    # setuptools' explicit package list must name every subpackage, or the wheel (not
    # the editable install) silently lacks it
    import tomllib

    root = Path(__file__).resolve().parents[1]
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = set()
    for folder, package in {
        "dpacct": "dpacct",
        "accountant": "dpacct.accountant",
        "mechanisms": "dpacct.mechanisms",
        "calibrators": "dpacct.calibrators",
    }.items():
        for init in (root / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(root / folder).parts
            found.add(".".join((package, *rel)))
    assert found == listed, (sorted(found - listed), sorted(listed - found))
