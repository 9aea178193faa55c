"""Start-up (issue 37): ``dpacct --help`` and ``import dpacct`` + one Gaussian epsilon,
beside Opacus' RDP accountant, old checkout against new, in one run.

    python -m benchmarks.startup                          # /work/main against this checkout
    python -m benchmarks.startup --old /path/a --new /path/b --rounds 5 --json out.json

Every measurement is a fresh interpreter (the same one for every row, so numpy, scipy
and Opacus are the same), importing dpacct from the checkout under test through
:mod:`benchmarks.checkouts`, with byte-code cached as an installed package has it.  The
rows run alternately (old, new, Opacus; old, new, Opacus; ...) so that a change of the
machine's load falls on all of them.  Columns: the medians over the rounds of the whole
subprocess's CPU seconds (user + system, from ``resource.getrusage(RUSAGE_CHILDREN)``,
interpreter start-up included, as a user pays it) and wall seconds, and the answer the
row printed (so old and new can be seen to agree).  Ratios: new / old, and new / Opacus
for the epsilon row.

Rows:

* ``help``: ``dpacct --help`` (the console script's ``dpacct.cli:main``);
* ``gaussian``: ``import dpacct as dp; dp.GaussianMechanism(1.0).epsilon(1e-5)``;
* ``zoo``: the same through the zoo's name, ``from dpacct.mechanisms import
  GaussianMechanism`` (which imports the zoo's ``__init__``, and its ``audit`` modules);
* ``delta``: ``import dpacct as dp; dp.GaussianMechanism(1.0).delta(1.0)``;
* ``in-process``: the issue's own command, ``time.process_time()`` from before ``import
  dpacct`` to after one Gaussian epsilon, as the child prints it (no interpreter
  start-up);
* ``scipy.special``: ``import numpy, scipy.special`` alone, the floor under ``gaussian``
  before session 47 (scipy 1.17's array-API layer, imported by ``scipy.special``, clones
  the numpy namespace and so imports ``numpy.f2py``, ``numpy.ma`` and ``numpy.testing``:
  most of that floor); since session 47 a Gaussian's epsilon and delta import no scipy
  (their scalars are ``dpacct.accountant.families.normal_tails``');
* ``numpy``: ``import numpy`` alone, the floor under ``gaussian`` since session 47;
* ``opacus``: ``from opacus.accountants import RDPAccountant``, one step of sigma 1 at
  sample rate 1 (a plain Gaussian), ``get_epsilon(1e-5)`` (Opacus' RDP bound, looser).

With ``--more``, two more rows: ``cli-epsilon`` (``dpacct epsilon --noise-multiplier 1.1
--sample-rate 0.0043 --steps 14063 --delta 1e-5``) and ``calibrate``
(``dp.noise_multiplier(epsilon=3.0, delta=1e-5, sample_rate=0.01, steps=10_000)``).

Goals (issue 37, on an idle machine): ``help`` under 0.3 s, ``gaussian`` under 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.checkouts import checkout_env

ROOT = Path(__file__).resolve().parents[1]

HELP = (
    "import contextlib, io, sys\n"
    "from dpacct.cli import main\n"
    "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
    "    try:\n"
    "        main(['--help'])\n"
    "    except SystemExit:\n"
    "        pass\n"
    "print(len(out.getvalue().splitlines()), 'lines of help')\n"
)
GAUSSIAN = "import dpacct as dp\nprint(repr(dp.GaussianMechanism(1.0).epsilon(1e-5)))\n"
ZOO = (
    "import dpacct\n"
    "from dpacct.mechanisms import GaussianMechanism\n"
    "print(repr(GaussianMechanism(1.0).epsilon(1e-5)))\n"
)
DELTA = "import dpacct as dp\nprint(repr(dp.GaussianMechanism(1.0).delta(1.0)))\n"
#: the issue's measurement: CPU from before ``import dpacct`` (no interpreter start-up)
INPROC = (
    "import time\n"
    "t = time.process_time()\n"
    "import dpacct\n"
    "from dpacct import GaussianMechanism\n"
    "e = GaussianMechanism(1.0).epsilon(1e-5)\n"
    "print(f'inproc={time.process_time() - t!r} {e!r}')\n"
)
SPECIAL = "import numpy, scipy.special\nprint(scipy.special.ndtr(0.0))\n"
NUMPY = "import numpy\nprint(numpy.float64(0.0))\n"
#: whether the ``gaussian`` row imports ``scipy.special`` (one probe per side)
PROBE = (
    "import sys\nimport dpacct as dp\ndp.GaussianMechanism(1.0).epsilon(1e-5)\n"
    "print('scipy.special' in sys.modules)\n"
)
OPACUS = (
    "from opacus.accountants import RDPAccountant\n"
    "acct = RDPAccountant()\n"
    "acct.step(noise_multiplier=1.0, sample_rate=1.0)\n"
    "print(repr(acct.get_epsilon(1e-5)))\n"
)
#: with ``--more``: the command line's everyday subcommand and the README's calibration
CLI_EPSILON = (
    "from dpacct.cli import main\n"
    "main(['epsilon', '--noise-multiplier', '1.1', '--sample-rate', '0.0043',"
    " '--steps', '14063', '--delta', '1e-5'])\n"
)
CALIBRATE = (
    "import dpacct as dp\n"
    "print(repr(dp.noise_multiplier(epsilon=3.0, delta=1e-5, sample_rate=0.01, steps=10_000)))\n"
)
GOALS = {"help": 0.3, "gaussian": 0.5, "zoo": 0.5, "in-process": 0.5}


def run_once(code: str, env: dict[str, str]) -> dict:
    """CPU and wall seconds of one fresh interpreter running ``code``, and its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd="/"
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if out.returncode != 0:
        raise RuntimeError(f"the row failed:\n{code}\n{out.stderr}")
    answer = out.stdout.strip().splitlines()[-1]
    if answer.startswith("inproc="):  # the child's own CPU seconds, then its answer
        own, answer = answer[len("inproc="):].split(" ", 1)
        cpu = float(own)
    return {"cpu": cpu, "wall": wall, "answer": answer}


def measure(old: Path, new: Path, rounds: int, more: bool = False) -> dict[str, dict[str, list]]:
    """Every row on every side, alternately, ``rounds`` times (after one warm-up each)."""
    sides = {"old": checkout_env(old), "new": checkout_env(new)}
    rows = [("help", HELP), ("gaussian", GAUSSIAN), ("zoo", ZOO), ("delta", DELTA),
            ("in-process", INPROC)]
    if more:
        rows += [("cli-epsilon", CLI_EPSILON), ("calibrate", CALIBRATE)]
    jobs = [(f"{row} {side}", code, sides[side]) for row, code in rows for side in ("old", "new")]
    jobs.append(("scipy.special", SPECIAL, sides["new"]))
    jobs.append(("numpy", NUMPY, sides["new"]))
    jobs.append(("opacus", OPACUS, sides["new"]))
    for _, code, env in jobs:  # warm-up: byte-code caches, the file system's cache
        run_once(code, env)
    results: dict[str, dict[str, list]] = {
        label: {"cpu": [], "wall": [], "answer": []} for label, _, _ in jobs
    }
    for _ in range(rounds):
        for label, code, env in jobs:
            one = run_once(code, env)
            for key in ("cpu", "wall", "answer"):
                results[label][key].append(one[key])
    return results


def table(results: dict[str, dict[str, list]]) -> str:
    med = {
        k: (statistics.median(v["cpu"]), statistics.median(v["wall"])) for k, v in results.items()
    }
    lines = [f"{'row':<16} {'CPU s':>7} {'wall s':>7}  answer(s)"]
    for label, v in results.items():
        answers = sorted(set(v["answer"]))
        lines.append(
            f"{label:<16} {med[label][0]:7.3f} {med[label][1]:7.3f}  {' | '.join(answers)}"
        )
    lines.append("")
    peers = ("opacus", "scipy.special", "numpy")
    for row in dict.fromkeys(k.rsplit(" ", 1)[0] for k in results if k not in peers):
        new, old = med[f"{row} new"][0], med[f"{row} old"][0]
        goal = GOALS.get(row)
        verdict = ""
        if goal is not None:
            met = "met" if new < goal else "NOT met"
            verdict = f"; goal < {goal} s idle: {met} at this load"
        lines.append(f"{row}: new / old CPU = {new / old:.2f}  (new {new:.3f} s{verdict})")
    opa = med["opacus"][0]
    lines.append(
        f"gaussian: new / Opacus CPU = {med['gaussian new'][0] / opa:.2f}"
        f"  (old / Opacus {med['gaussian old'][0] / opa:.2f})"
    )
    special, floor = med["scipy.special"][0], med["numpy"][0]
    lines.append(
        f"gaussian: old - (numpy + scipy.special) = {med['gaussian old'][0] - special:.3f} s"
        f" (dpacct's own share when it imports scipy.special); new - numpy ="
        f" {med['gaussian new'][0] - floor:.3f} s"
        f" (old - numpy {med['gaussian old'][0] - floor:.3f} s)"
    )
    for row in ("gaussian", "delta"):
        same = set(results[f"{row} old"]["answer"]) == set(results[f"{row} new"]["answer"])
        lines.append(f"{row} old == new: {same}")
    return "\n".join(lines)


def scipy_probe(old: Path, new: Path) -> str:
    """Whether the ``gaussian`` row imports ``scipy.special``, on each side."""
    seen = {side: run_once(PROBE, checkout_env(root))["answer"]
            for side, root in (("old", old), ("new", new))}
    return f"scipy.special imported by the gaussian row: old {seen['old']}, new {seen['new']}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, default=Path("/work/main"), help="old checkout")
    parser.add_argument("--new", type=Path, default=ROOT, help="new checkout (default: this one)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the raw measurements here")
    parser.add_argument(
        "--more", action="store_true", help="also `dpacct epsilon ...` and dp.noise_multiplier"
    )
    args = parser.parse_args(argv)
    results = measure(args.old, args.new, args.rounds, args.more)
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"start-up, {args.rounds} rounds alternated, medians; load average {' '.join(load)}")
    print(f"old = {args.old}, new = {args.new}, python = {sys.executable}")
    print(table(results))
    print(scipy_probe(args.old, args.new))
    if args.json:
        args.json.write_text(json.dumps({"load": load, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
