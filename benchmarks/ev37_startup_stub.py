"""Issue 37, session 30: ``import dpacct`` + one Gaussian epsilon with scipy switched off.

**An unsound experiment** (the ``stub`` rows): the goal is ``import dpacct`` + one
Gaussian epsilon under 0.5 s CPU, and the cause named for missing it is ``import numpy,
scipy.special`` alone (0.47-0.66 s CPU in session 29).  To show the gap moves with that
cause, the ``stub`` rows put a module of their own into ``sys.modules["scipy.special"]``
before ``import dpacct``: its ``ndtr``, ``log_ndtr``, ``ndtri`` and ``erfcx`` (the four
names the Gaussian's epsilon calls) are ``math.erfc`` / ``math.exp`` /
``statistics.NormalDist`` under ``numpy.vectorize``, so answers may move at the ulp and
every certified error term that assumes scipy's accuracy is void: fine for timing, not for
answers.  ``stub scipy`` replaces the ``scipy`` package too (``import scipy`` is then
free); any other scipy.special name raises if called.

Rows, every one a fresh interpreter importing dpacct from this checkout with byte code
cached (:func:`benchmarks.checkouts.checkout_env`, which unsets
``PYTHONDONTWRITEBYTECODE``), whole-process CPU (user + system of the child, interpreter
start-up included, as :mod:`benchmarks.startup` counts it), alternated round by round,
medians:

* ``python``: an empty interpreter (``print(0)``);
* ``numpy``: ``import numpy``;
* ``numpy + scipy.special``: the named cause;
* ``gaussian``: ``import dpacct as dp; dp.GaussianMechanism(1.0).epsilon(1e-5)`` (the
  issue's row, as :mod:`benchmarks.startup`);
* ``gaussian, stub scipy.special`` and ``gaussian, stub scipy`` (unsound, above).

``--importtime`` prints, for the ``stub scipy`` row, the top-level imports by cumulative
microseconds (``-X importtime``, one run): what is left once scipy is gone.

    python -m benchmarks.ev37_startup_stub --rounds 9
    python -m benchmarks.ev37_startup_stub --rounds 5 --importtime

Measured: benchmarks/README.md, "Issue 37's speed targets, session 30".
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks.checkouts import checkout_env
from benchmarks.startup import GAUSSIAN, run_once

__all__ = ["ROWS", "STUB_SCIPY", "STUB_SPECIAL", "importtime_top", "main", "measure",
           "parse_importtime"]

ROOT = Path(__file__).resolve().parents[1]

#: the stand-in for ``scipy.special`` (unsound: see the module docstring)
STUB_SPECIAL = r'''
import math as _m, sys as _s, types as _t
from statistics import NormalDist as _ND
import numpy as _np
_sp = _t.ModuleType("scipy.special")
_S2 = _m.sqrt(2.0)
def _ndtr1(x):
    return 0.5 * _m.erfc(-x / _S2)
def _lndtr1(x):
    if x > 0.0:
        return _m.log1p(-0.5 * _m.erfc(x / _S2))
    if x > -30.0:
        return _m.log(0.5 * _m.erfc(-x / _S2))
    return _m.log(0.5 * _erfcx1(-x / _S2)) - 0.5 * x * x
def _erfcx1(x):
    if x < 25.0:
        return _m.exp(x * x) * _m.erfc(x)
    y = 1.0 / (2.0 * x * x)  # the asymptotic series, to 7 terms
    s = 1.0 - y * (1 - 3 * y * (1 - 5 * y * (1 - 7 * y * (1 - 9 * y * (1 - 11 * y)))))
    return s / (x * _m.sqrt(_m.pi))
def _wrap(f):
    v = _np.vectorize(f, otypes=[float])
    def g(x):
        r = v(x)
        return float(r) if _np.ndim(r) == 0 else r
    return g
_sp.ndtr, _sp.log_ndtr = _wrap(_ndtr1), _wrap(_lndtr1)
_sp.ndtri, _sp.erfcx = _wrap(_ND().inv_cdf), _wrap(_erfcx1)
def _missing(name):
    def f(*a, **k):
        raise RuntimeError("stub scipy.special." + name + " called")
    return f
_sp.__getattr__ = _missing
_s.modules["scipy.special"] = _sp
'''

#: ... and ``scipy`` itself (a bare package holding the stub)
STUB_SCIPY = STUB_SPECIAL + r'''
_sc = _t.ModuleType("scipy")
_sc.__path__ = []
_sc.special = _sp
_s.modules["scipy"] = _sc
'''

#: row name -> code (a fresh interpreter each)
ROWS: dict[str, str] = {
    "python": "print(0)\n",
    "numpy": "import numpy\nprint(numpy.__version__)\n",
    "numpy + scipy.special": "import numpy, scipy.special\nprint(scipy.special.ndtr(0.0))\n",
    "gaussian": GAUSSIAN,
    "gaussian, stub scipy.special (unsound)": STUB_SPECIAL + GAUSSIAN,
    "gaussian, stub scipy (unsound)": STUB_SCIPY + GAUSSIAN,
}


def measure(rounds: int, rows: dict[str, str] | None = None) -> dict[str, dict[str, list]]:
    """Every row once per round, alternated, after one warm-up each (byte code, file
    cache): ``{row: {"cpu": [...], "wall": [...], "answer": [...]}}``."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    rows = ROWS if rows is None else rows
    env = checkout_env(ROOT)
    for code in rows.values():
        run_once(code, env)
    out: dict[str, dict[str, list]] = {k: {"cpu": [], "wall": [], "answer": []} for k in rows}
    for _ in range(rounds):
        for name, code in rows.items():
            one = run_once(code, env)
            for key in ("cpu", "wall", "answer"):
                out[name][key].append(one[key])
    return out


def parse_importtime(text: str) -> list[tuple[int, int, str]]:
    """``-X importtime``'s stderr -> ``[(self us, cumulative us, module)]`` for the
    top-level imports (one space of indentation in the module column), largest
    cumulative first."""
    out = []
    for line in text.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = line[len("import time:"):].split("|")
        if len(parts) != 3 or not parts[0].strip().isdigit():
            continue  # the header
        name = parts[2].rstrip()
        if name.startswith(" ") and not name.startswith("  "):
            out.append((int(parts[0]), int(parts[1]), name.strip()))
    return sorted(out, key=lambda r: -r[1])


def importtime_top(code: str, top: int = 12) -> list[tuple[int, int, str]]:
    """The ``top`` largest top-level imports of one fresh run of ``code``."""
    env = checkout_env(ROOT)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], env=env,
                          capture_output=True, text=True, cwd="/", check=True)
    return parse_importtime(proc.stderr)[:top]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--importtime", action="store_true")
    args = ap.parse_args(argv)
    got = measure(args.rounds)
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"{args.rounds} rounds alternated, medians of whole-process CPU / wall s; "
          f"load average {load}")
    print("| row | CPU s | wall s | answer |")
    print("| --- | --- | --- | --- |")
    for name, r in got.items():
        answers = " / ".join(sorted(set(r["answer"]))) or "-"
        print(f"| {name} | {statistics.median(r['cpu']):.3f} | "
              f"{statistics.median(r['wall']):.3f} | {answers} |")
    if args.importtime:
        print("\n`-X importtime`, gaussian with scipy stubbed, top-level imports "
              "(cumulative us, self us):")
        for self_us, cum, name in importtime_top(ROWS["gaussian, stub scipy (unsound)"]):
            print(f"- {name}: {cum} ({self_us})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
