"""Start-up (issue 37): what a fresh process imports for ``dpacct --help`` and for the
everyday first question, one Gaussian's epsilon.

The checks are on ``sys.modules`` in a fresh interpreter, not on the clock, so they hold
on a loaded machine; ``benchmarks/startup.py`` measures the seconds.  A heavy module
named here may be imported where it is *used* (inside the function that needs it), never
at a module's import.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: never needed to import the package or to answer a Gaussian's epsilon
HEAVY = (
    "scipy.stats",
    "scipy.optimize",
    "scipy.integrate",
    "scipy.interpolate",
    "scipy.linalg",
    "tqdm",
    "matplotlib",
    "pandas",
    "torch",
)


def _modules_after(code: str) -> list[str]:
    """``sys.modules`` of a fresh interpreter (run outside the repository) after ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd="/", timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [n for n in names if any(m == n or m.startswith(n + ".") for m in modules)]


def test_one_gaussian_epsilon_loads_no_heavy_module():
    modules = _modules_after(
        "import math, dpacct as dp\n"
        "eps = dp.GaussianMechanism(1.0).epsilon(1e-5)\n"
        "assert math.isfinite(eps) and 4.0 < eps < 5.0, eps\n"
    )
    assert _loaded(modules, HEAVY) == []


def test_one_gaussian_epsilon_needs_no_fft_and_no_mpmath():
    """A Gaussian's epsilon is its certified closed form: ``scipy.fft`` and ``mpmath``
    (the 50-digit fallback) load where they are used.  A DP-SGD composition needs
    neither: the PLD kernel transforms with ``numpy.fft`` (the same pocketfft), and
    importing ``scipy.fft`` was most of a cold DP-SGD epsilon (issue 37)."""
    modules = _modules_after("import dpacct as dp\ndp.GaussianMechanism(1.0).epsilon(1e-5)\n")
    assert _loaded(modules, ("scipy.fft", "mpmath")) == []
    modules = _modules_after(
        "import dpacct as dp\n"
        "run = dp.compose([dp.poisson_subsample(dp.GaussianMechanism(1.1), 0.01)], [10_000])\n"
        "assert 5.0 < run.epsilon(1e-5) < 5.3\n"
        "lo, hi = run.epsilon_bounds(1e-5)\n"
        "assert 5.0 < lo <= hi < 5.3\n"
    )
    assert _loaded(modules, ("scipy.fft", "mpmath")) == []


def test_one_gaussian_epsilon_and_delta_import_no_scipy():
    """The certified Gaussian curve's scalars (``erfcx``, ``log Phi``, the float root's
    ``Phi^-1``) are :mod:`dpacct.accountant.families.normal_tails`' on the C library's
    ``erfc``: a first epsilon or delta imports no ``scipy`` at all (``scipy.special``
    alone was half of that call's 0.6 s, issue 37).  The engine's modules that use
    ``scipy.special`` elsewhere import it on first use (``numerics.scipy_special``)."""
    for query in ("epsilon(1e-5)", "delta(1.0)", "epsilon_bounds(1e-5)"):
        modules = _modules_after(
            "import math, dpacct as dp\n"
            f"v = dp.GaussianMechanism(1.0).{query}\n"
            "assert all(math.isfinite(x) and x > 0 for x in (v if isinstance(v, tuple) else [v]))\n"
        )
        assert _loaded(modules, ("scipy",)) == [], query
        assert "dpacct.accountant.families.gaussian_certified" in modules  # (the route ran)
    # through the zoo's name too (its primitive loads the serialization registry, whose
    # modules name scipy.special lazily and compute nothing with it at import)
    modules = _modules_after(
        "from dpacct.mechanisms import GaussianMechanism\n"
        "assert 4.0 < GaussianMechanism(1.0).epsilon(1e-5) < 5.0\n"
    )
    assert _loaded(modules, ("scipy",)) == []
    # a route that needs scipy.special (the trade-off's array ndtri / ndtr) still finds
    # it, on first use
    modules = _modules_after(
        "import dpacct as dp\n"
        "beta = dp.GaussianMechanism(1.0).tradeoff([0.05])\n"
        "assert abs(float(beta[0]) - 0.740489) < 1e-6\n"
    )
    assert "scipy.special" in modules


@pytest.mark.parametrize("layer", ["accountant", "mechanisms", "calibrators"])
def test_importing_a_layer_loads_no_heavy_module(layer):
    assert _loaded(_modules_after(f"import dpacct.{layer}"), HEAVY) == []


def test_the_engine_loads_only_what_the_question_needs():
    """The engine's names load on first use: a Gaussian's epsilon needs neither the
    ledger nor the samplers, nor the PLD engine (its grid, pair and two-scale modules
    load where a law is discretised or a pair built: 18 ms of a 0.2 s first call)."""
    modules = _modules_after("import dpacct as dp\ndp.GaussianMechanism(1.0).epsilon(1e-5)\n")
    unused = (
        "dpacct.accountant.pld.grid",
        "dpacct.accountant.pld.pld_pair",
        "dpacct.accountant.pld.twoscale",
        "dpacct.accountant.pld.pld_fft",
        "dpacct.accountant.ledger",
        "dpacct.accountant.transformers.random_allocation",
        "dpacct.accountant.transformers.repeat_select",
        "dpacct.accountant.pld.schedule",
        "dpacct.mechanisms",
        "dpacct.calibrators",
    )
    assert _loaded(modules, unused) == []


def test_the_zoos_gaussian_loads_no_other_primitive():
    """``from dpacct.mechanisms import GaussianMechanism`` imports the zoo's ``__init__``,
    which imports its ``audit`` modules (names that are also submodules): those load the
    samplers' primitives and scipy.special where an audit runs, not at import (issue 37:
    this path loaded the discrete, exponential, Laplace and randomized-response modules)."""
    modules = _modules_after(
        "import math\n"
        "from dpacct.mechanisms import GaussianMechanism\n"
        "assert 4.0 < GaussianMechanism(1.0).epsilon(1e-5) < 5.0\n"
    )
    primitives = ("discrete", "exponential", "laplace", "randomized_response", "generic")
    unused = (
        *(f"dpacct.mechanisms.primitives.{name}" for name in primitives),
        "dpacct.mechanisms.algorithms",
        "dpacct.calibrators",
    )
    assert _loaded(modules, unused + HEAVY) == []
    assert "dpacct.mechanisms.audit" in modules  # the probe does reach the zoo's __init__


def test_the_zoo_and_the_calibrators_load_by_name():
    """``dp.noise_multiplier`` loads the DP-SGD calibrator, not every calibrator and the
    whole zoo behind them; ``dp.LaplaceMechanism`` loads its primitive, not the
    algorithms (the layers' names load on first use, as the engine's do)."""
    modules = _modules_after(
        "import dpacct as dp\n"
        "assert 0.3 < dp.noise_multiplier(epsilon=3.0, delta=1e-5, sample_rate=0.01,"
        " steps=1_000) < 5.0\n"
    )
    unused = (
        "dpacct.mechanisms.algorithms",
        "dpacct.calibrators.bandmf",
        "dpacct.calibrators.synthesis",
        "dpacct.calibrators.sampler",
        "dpacct.accountant.ledger",
    )
    assert _loaded(modules, unused) == []
    modules = _modules_after(
        "import dpacct as dp\n"
        "assert 4.0 < dp.compose([dp.LaplaceMechanism(10.0)], counts=[100]).epsilon(1e-6) < 5.0\n"
    )
    assert _loaded(modules, ("dpacct.mechanisms.algorithms", "dpacct.calibrators")) == []


@pytest.mark.parametrize("layer", ["mechanisms", "calibrators"])
def test_a_lazy_layer_binds_its_submodule_named_exports_at_import(layer):
    """A name that is both an export and a submodule (``audit``, ``calibrate``) must be
    imported by the layer's ``__init__``: loaded lazily, importing the submodule first
    would bind the name to the module.  Every other export is in the layer's map."""
    import importlib
    import types
    from pathlib import Path

    module = importlib.import_module(f"dpacct.{layer}")
    folder = Path(module.__file__).parent
    submodules = {p.stem for p in folder.iterdir() if p.suffix == ".py" or p.is_dir()}
    for name in sorted(submodules & set(module.__all__)):
        assert name in vars(module), f"dpacct.{layer}.{name}: import it in __init__"
        assert not isinstance(getattr(module, name), types.ModuleType), name
    assert set(module._EXPORTS) == set(module.__all__)
    for name, home in module._EXPORTS.items():
        defining = importlib.import_module(f"dpacct.{layer}.{home}")
        assert getattr(module, name) is getattr(defining, name), name


def test_a_fresh_process_reads_back_every_zoo_type():
    """With the zoo loading by name, reading a saved algorithm in a fresh process still
    finds its type: the registry's plugin load resolves the zoo's whole export list."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from dpacct.accountant.serialization import registered_mechanisms\n"
            "print(sorted(registered_mechanisms()))\n",
        ],
        capture_output=True,
        text=True,
        cwd="/",
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    names = set(json.loads(out.stdout.strip().splitlines()[-1].replace("'", '"')))
    assert {"noisy_gd", "dp_sgd", "ssp", "adassp", "aim", "mst", "tree_quantiles"} <= names
    assert "random_allocation" in names  # an engine type loaded on first read (issue 39)


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["epsilon", "--help"]])
def test_the_command_lines_help_loads_no_numerical_library(argv):
    """``dpacct --help`` parses arguments only: no numpy, no scipy, no layer."""
    code = (
        "import contextlib, io\n"
        "from dpacct.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        main({argv!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
    )
    names = ("numpy", "scipy", "mpmath", "dpacct.accountant", "dpacct.mechanisms")
    assert _loaded(_modules_after(code), names + HEAVY) == []
