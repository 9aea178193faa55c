"""Issue 37's everyday queries, cold, beside the fastest sound peer in one run.

Each row is one question asked once in a fresh process, after its imports (the
libraries are imported before the clock starts; nothing is warmed up):

* DP-SGD epsilon at constant sigma (q 0.01, sigma 1.1, T 1e4; q 0.004, sigma 0.8,
  T 1e6), ``epsilon`` and ``epsilon_bounds``, beside Opacus' ``RDPAccountant``;
* the noise-multiplier calibration (epsilon 3 and 8, delta 1e-5, q 0.01, T 1e4) beside
  Opacus' ``get_noise_multiplier(accountant="rdp")``;
* a NoisyGD trajectory: 59 ``epsilon(1e-5)`` queries of compositions of ``k`` Gaussians
  of sigma 50, ``k = 100, 200, ..., 5 900`` (the privacy after every 100 iterations),
  beside autodp's exact Gaussian composition (``ComposeGaussian`` of
  ``ExactGaussianMechanism``: the same exact answer) and its RDP composition; and the
  first 59 iterations (``k = 1..59``: small ``mu``, where the float certificate often
  cannot decide and the 50-digit curve answers);
* the online loops: a ``PrivacyAccountant`` stepping 10 000 times at q 0.01 and asked
  ``epsilon(1e-5)`` every 100 steps, at sigma 1.0 and at sigma ``2 * 0.9999^t``, beside
  Opacus' ``RDPAccountant`` on the constant loop (the issue's target for both); and at
  small distinct q (sigma ``1 + 0.001 t``, q ``1e-4 (1 + t mod 5)``, 1 500 steps, every
  150: ``online small q``), whose tail questions (``epsilon_bounds(1e-5)``,
  ``delta(0.5)``: ``tails small q``) are timed apart.

For each: the answer (the sum of the 59 epsilons for the trajectory), CPU seconds
(``time.process_time``) and wall seconds of the call, the peak resident memory the call
added (``VmHWM``, reset before the call), and the ratio ``peer CPU / dpacct CPU`` (above
1: dpacct is faster).  Each side runs ``--rounds`` times, alternated (every row once per
round), and the medians are printed.

``--old PYTHON`` adds, alternated with the new code, the same dpacct rows run by another
interpreter (e.g. the system ``python``, which imports the main checkout), or by this one
importing an old checkout's folder (``--old /tmp/old794``, e.g. from ``git archive``): the
answers of old and new side by side and the CPU ratio ``old / new``.

Run from the repository root::

    python -m benchmarks.everyday                         # 3 rounds
    python -m benchmarks.everyday --old python --rounds 5 # old main alternated with this tree
    python -m benchmarks.everyday --only 'dpsgd*' --json out.json
    python -m benchmarks.everyday --only 'dpsgd*' --split --no-peers  # first use, certificate

``--split`` times each dpacct row twice more, in the same rounds: warm (the question asked
once before in the same process: what of a cold call is first use) and uncertified
(``CERTIFY_ROUNDOFF = False``, an experiment whose answers are not bounds: what the FFT
products' round-off certificate costs), and prints the per-round ratios to the cold row.

Timings depend on the machine and its load: compare the rows of one run.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
#: the subprocesses run here (``python -c`` puts its working directory first on the
#: path; a checkout's root would shadow the installed package)
NEUTRAL_CWD = Path(os.environ.get("TMPDIR", "/tmp"))

#: the subprocess side: imports, then one timed call; prints one JSON line
_HARNESS = r'''
import json, os, resource, sys, time, warnings
warnings.simplefilter("ignore")

def _kb(field):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None

{imports}

def run():
{body}

{warmup}
before = _kb("VmRSS")
try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current RSS
except OSError:
    pass
c0, w0 = time.process_time(), time.perf_counter()
answer, note = run()
values = None
if isinstance(answer, list):
    values, answer = answer, float(sum(answer))
cpu, wall = time.process_time() - c0, time.perf_counter() - w0
peak = _kb("VmHWM")
mb = None if peak is None or before is None else max(0, peak - before) / 1024
print(json.dumps({{"answer": answer, "values": values, "note": note, "cpu": cpu, "wall": wall,
                  "peak_mb": mb}}))
'''

#: the PLD engine and scipy.special, which a first PLD call imports since session 47 (a
#: Gaussian's epsilon needs neither): imported with the imports, as they were before and
#: as the peers' imports bring scipy (the start-up rows are benchmarks.startup's)
_ENGINE_IMPORTS = """
import scipy.special
import dpacct.accountant.pld.grid, dpacct.accountant.pld.pld_pair, dpacct.accountant.pld.twoscale
"""

_DPACCT_IMPORTS = """
from dpacct.accountant import PrivacyAccountant, compose, poisson_subsample
from dpacct.calibrators import noise_multiplier
from dpacct.mechanisms import GaussianMechanism
""" + _ENGINE_IMPORTS

_LIGHT_IMPORTS = """
from dpacct.accountant import compose, poisson_subsample
from dpacct.mechanisms import GaussianMechanism
""" + _ENGINE_IMPORTS

_OPACUS_IMPORTS = """
from opacus.accountants import RDPAccountant
from opacus.accountants.utils import get_noise_multiplier
"""

_AUTODP_IMPORTS = """
from autodp import mechanism_zoo, transformer_zoo
"""

_TRAJECTORY = "range(100, 5901, 100)"

WORKLOADS: dict[str, dict] = {}


def _row(name: str, question: str, dpacct: str, peer_name: str, peer_imports: str,
         peer: str, dpacct_imports: str | None = None) -> None:
    WORKLOADS[name] = {
        "question": question,
        "dpacct": dpacct,
        "peer_name": peer_name,
        "peer_imports": peer_imports,
        "peer": peer,
        "dpacct_imports": dpacct_imports or _DPACCT_IMPORTS,
    }


for _q, _s, _t, _tag in ((0.01, 1.1, 10_000, "1e4"), (0.004, 0.8, 1_000_000, "1e6")):
    _mech = (f"compose([poisson_subsample(GaussianMechanism(sigma={_s}), "
             f"sample_rate={_q})], counts=[{_t}])")
    _opacus = (f"a = RDPAccountant(); a.history = [({_s}, {_q}, {_t})]\n"
               "return a.get_epsilon(1e-5), None")
    _row(f"dpsgd epsilon T {_tag}", f"DP-SGD epsilon(1e-5), q {_q}, sigma {_s}, T {_tag}",
         f"return {_mech}.epsilon(1e-5), None", "opacus RDPAccountant", _OPACUS_IMPORTS,
         _opacus)
    _row(f"dpsgd bounds T {_tag}",
         f"DP-SGD epsilon_bounds(1e-5), q {_q}, sigma {_s}, T {_tag}",
         f"lo, hi = {_mech}.epsilon_bounds(1e-5)\nreturn hi, f'lower {{lo!r}}'",
         "opacus RDPAccountant", _OPACUS_IMPORTS, _opacus)
    # the same question after importing only what it uses (no ledger: before issue 37's
    # numpy.fft kernel the call itself imported scipy.fft, which the ledger imports)
    _row(f"dpsgd epsilon T {_tag} light",
         f"DP-SGD epsilon(1e-5), q {_q}, sigma {_s}, T {_tag}; imports: compose only",
         f"return {_mech}.epsilon(1e-5), None", "opacus RDPAccountant", _OPACUS_IMPORTS,
         _opacus, _LIGHT_IMPORTS)

for _e in (3.0, 8.0):
    _row(f"calibrate eps {_e:g}", f"noise multiplier for eps {_e:g}, delta 1e-5, q 0.01, T 1e4",
         f"return noise_multiplier(epsilon={_e}, delta=1e-5, sample_rate=0.01, "
         "steps=10_000), None",
         "opacus get_noise_multiplier (rdp)", _OPACUS_IMPORTS,
         f"return get_noise_multiplier(target_epsilon={_e}, target_delta=1e-5, "
         "sample_rate=0.01, steps=10_000, accountant='rdp'), None")

_row("trajectory exact", "NoisyGD trajectory: 59 epsilon(1e-5) of k Gaussians, sigma 50",
     f"eps = [compose([GaussianMechanism(sigma=50.0)], counts=[k]).epsilon(1e-5) "
     f"for k in {_TRAJECTORY}]\nreturn [float(e) for e in eps], f'last {{eps[-1]:.12f}}'",
     "autodp ComposeGaussian(ExactGaussianMechanism)", _AUTODP_IMPORTS,
     "eps = [transformer_zoo.ComposeGaussian()([mechanism_zoo.ExactGaussianMechanism("
     f"sigma=50.0)], [k]).get_approxDP(1e-5) for k in {_TRAJECTORY}]\n"
     "return float(sum(eps)), f'last {eps[-1]:.12f}'")
_row("trajectory rdp", "the same trajectory; peer: autodp RDP composition",
     WORKLOADS["trajectory exact"]["dpacct"], "autodp Composition (RDP)", _AUTODP_IMPORTS,
     "eps = [transformer_zoo.Composition()([mechanism_zoo.GaussianMechanism(sigma=50.0)], "
     f"[k]).get_approxDP(1e-5) for k in {_TRAJECTORY}]\n"
     "return float(sum(eps)), f'last {eps[-1]:.12f}'")


_row("trajectory from 1", "59 epsilon(1e-5) of k = 1..59 Gaussians, sigma 50 (mu 0.02-0.15)",
     WORKLOADS["trajectory exact"]["dpacct"].replace(_TRAJECTORY, "range(1, 60)"),
     "autodp ComposeGaussian(ExactGaussianMechanism)", _AUTODP_IMPORTS,
     WORKLOADS["trajectory exact"]["peer"].replace(_TRAJECTORY, "range(1, 60)"))


_LOOP = """acct = {make}
eps = []
for t in range(10_000):
    acct.step({step})
    if (t + 1) % 100 == 0:
        eps.append(float(acct.{ask}(1e-5)))
return eps, f'last {{eps[-1]:.9f}}'"""
_OPACUS_CONSTANT_LOOP = _LOOP.format(make="RDPAccountant()", ask="get_epsilon",
                                     step="noise_multiplier=1.0, sample_rate=0.01")
_row("online constant", "PrivacyAccountant, sigma 1.0, q 0.01: epsilon every 100 of 1e4 steps",
     _LOOP.format(make="PrivacyAccountant(progress=False)", ask="epsilon",
                  step="noise_multiplier=1.0, sample_rate=0.01"),
     "opacus RDPAccountant, the same loop", _OPACUS_IMPORTS, _OPACUS_CONSTANT_LOOP)
_row("online decaying", "the same loop with sigma 2 * 0.9999^t (peer: Opacus' constant loop)",
     _LOOP.format(make="PrivacyAccountant(progress=False)", ask="epsilon",
                  step="noise_multiplier=2.0 * 0.9999**t, sample_rate=0.01"),
     "opacus RDPAccountant, constant loop", _OPACUS_IMPORTS, _OPACUS_CONSTANT_LOOP)


# issue 37, session 27: small distinct q (sigma 1 + 0.001 t, q 1e-4 (1 + t mod 5)): every
# step its own cell; the epsilon loop (1 500 steps, epsilon every 150), and the same loop's
# tail questions (the bracket and delta at an epsilon far above the spent one, where the
# reading is ~1e-13: the session-26 reviewer's 167.6 s loop was 97 % delta queries)
_SMALL_Q = "noise_multiplier=1.0 + 0.001 * t, sample_rate=1e-4 * (1 + t % 5)"
_SMALL_Q_LOOP = _LOOP.replace("10_000", "1_500").replace("% 100", "% 150")
_row("online small q", "PrivacyAccountant, sigma 1 + 0.001 t, q 1e-4 (1 + t mod 5): epsilon "
     "every 150 of 1 500 steps",
     _SMALL_Q_LOOP.format(make="PrivacyAccountant(progress=False)", ask="epsilon", step=_SMALL_Q),
     "opacus RDPAccountant, the same loop", _OPACUS_IMPORTS,
     _SMALL_Q_LOOP.format(make="RDPAccountant()", ask="get_epsilon", step=_SMALL_Q))
_row("tails small q", "the small-q loop's steps, then epsilon_bounds(1e-5) and delta(0.5)",
     "acct = PrivacyAccountant(progress=False)\n"
     "for t in range(1_500):\n"
     f"    acct.step({_SMALL_Q})\n"
     "lo, hi = acct.epsilon_bounds(1e-5)\n"
     "d = acct.delta(0.5)\n"
     "return [float(lo), float(hi), float(d)], f'bounds {lo!r} {hi!r} delta(0.5) {d!r}'",
     "opacus RDPAccountant, the same steps, epsilon(1e-5)", _OPACUS_IMPORTS,
     "acct = RDPAccountant()\n"
     "for t in range(1_500):\n"
     f"    acct.step({_SMALL_Q})\n"
     "return float(acct.get_epsilon(1e-5)), None")


def _script(imports: str, body: str, warm: bool = False) -> str:
    return _HARNESS.format(imports=imports, body=textwrap.indent(body, "    "),
                           warmup="run()  # warm: the question asked once before" if warm else "")


#: ``--split``'s variants of the new side: the same call after the same question was asked
#: once in the process (module-level caches, FFT plans and lazy imports warm; the
#: mechanism objects are new), and the same cold call with the FFT products' round-off
#: left out of the certificate (an experiment: ``CERTIFY_ROUNDOFF = False``; the spectral
#: power's certificate stays)
SPLIT_SIDES = {
    "warm": ("", True),
    "uncertified": ("import dpacct.accountant.pld.pld_fft as _f; _f.CERTIFY_ROUNDOFF = False\n",
                    False),
}


def measure(python: str, imports: str, body: str, cwd: Path = NEUTRAL_CWD,
            timeout: float = 600.0, warm: bool = False) -> dict:
    """One cold call in a fresh ``python`` process (run in ``cwd``); ``python`` may be a
    checkout's root folder instead, imported by this interpreter
    (:func:`benchmarks.checkouts.checkout_env`).  ``warm``: the call is made once
    before the timed one, in the same process."""
    # the inherited PYTHONPATH is kept: under benchmarks.alternate it holds the import
    # hook that maps dpacct to the checkout being measured (popping it measured the
    # installed dpacct on both sides)
    env = dict(os.environ)
    if Path(python).is_dir():
        from benchmarks.checkouts import checkout_env

        env, python = checkout_env(python), sys.executable
    proc = subprocess.run([python, "-c", _script(imports, body, warm)], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=timeout, check=False)
    for line in reversed(proc.stdout.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
    return {"answer": None, "note": f"error: {tail}", "cpu": None, "wall": None,
            "peak_mb": None}


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def run(only: str = "*", rounds: int = 3, old: str | None = None,
        old_cwd: Path | None = None, peers: bool = True, split: bool = False) -> list[dict]:
    rows = []
    chosen = {name: w for name, w in WORKLOADS.items() if fnmatch.fnmatch(name, only)}
    measured: dict[str, dict[str, list[dict]]] = {
        name: {"new": [], "peer": [], "old": [], **{k: [] for k in SPLIT_SIDES}}
        for name in chosen
    }
    # the rounds are the outer loop: every workload (and side) once per round, so a
    # change of the machine's load spreads over all rows instead of biasing one (the
    # bounds / epsilon ratio compares two rows)
    for _ in range(rounds):
        for name, w in chosen.items():
            sides = measured[name]
            sides["new"].append(measure(sys.executable, w["dpacct_imports"], w["dpacct"]))
            if peers:
                sides["peer"].append(measure(sys.executable, w["peer_imports"], w["peer"]))
            if old:
                sides["old"].append(measure(old, w["dpacct_imports"], w["dpacct"],
                                            cwd=old_cwd or NEUTRAL_CWD))
            if split:
                for side, (extra, warm) in SPLIT_SIDES.items():
                    sides[side].append(measure(sys.executable, w["dpacct_imports"] + extra,
                                               w["dpacct"], warm=warm))
    for name, w in chosen.items():
        sides = measured[name]
        row = {"workload": name, "question": w["question"], "peer_name": w["peer_name"]}
        for side, runs in sides.items():
            if not runs:
                continue
            row[side] = {
                "answer": runs[0]["answer"],
                "values": runs[0].get("values"),
                "note": runs[0]["note"],
                "answers_equal_across_rounds": len({r["answer"] for r in runs}) == 1,
                "cpu": _median([r["cpu"] for r in runs]),
                "wall": _median([r["wall"] for r in runs]),
                "peak_mb": _median([r["peak_mb"] for r in runs]),
                "cpu_all": [r["cpu"] for r in runs],
            }
        row.update(_flat(name, row["new"]))
        new_cpu = row["new"]["cpu"]
        peer_cpu = row["peer"]["cpu"] if peers else None
        row["peer_over_new_cpu"] = peer_cpu / new_cpu if new_cpu and peer_cpu else None
        if old:
            old_cpu = row["old"]["cpu"]
            row["old_over_new_cpu"] = old_cpu / new_cpu if old_cpu and new_cpu else None
        rows.append(row)
        print(_format_row(row), flush=True)
    return rows


def _flat(name: str, new: dict) -> dict:
    """The new side's answer and timings as top-level fields, named as
    :mod:`benchmarks.alternate` reads them (``epsilon``/``upper``/``lower``/``sigma`` are
    answers, ``seconds`` and ``peak_mb`` timings)."""
    out: dict = {"seconds": new["cpu"], "wall_s": new["wall"], "peak_mb": new["peak_mb"]}
    answer = new["answer"]
    if name.startswith("calibrate"):
        out["sigma"] = answer
    elif name.startswith("dpsgd bounds"):
        out["upper"] = answer
        note = new.get("note") or ""
        if note.startswith("lower "):
            out["lower"] = float(note.split()[1])
    else:
        out["epsilon"] = answer  # the trajectory's: the sum of its 59 upper bounds
    return out


def bounds_over_epsilon(rows: list[dict]) -> list[str]:
    """Issue 37's ``epsilon_bounds`` target (at most 2x ``epsilon``): the CPU ratio of
    the bounds row to the epsilon row of each T measured in this run (and old's)."""
    by_name = {r["workload"]: r for r in rows}
    out = []
    for name, row in by_name.items():
        if not name.startswith("dpsgd bounds"):
            continue
        eps = by_name.get(name.replace("bounds", "epsilon"))
        if eps is None:
            continue
        text = f"{name}: epsilon_bounds / epsilon CPU"
        for side in ("new", "old"):
            a, b = (row.get(side) or {}).get("cpu"), (eps.get(side) or {}).get("cpu")
            if a and b:
                text += f" {side} {a / b:.2f}x"
                # the same rounds ran both rows: the median of the per-round ratios too
                pairs = zip((row.get(side) or {}).get("cpu_all", []),
                            (eps.get(side) or {}).get("cpu_all", []), strict=False)
                ratios = [x / y for x, y in pairs if x and y]
                if ratios:
                    text += f" (per round {statistics.median(ratios):.2f}x)"
        out.append(text)
    return out


def split_lines(rows: list[dict]) -> list[str]:
    """``--split``: each row's cold CPU against its warm and its uncertified CPU (medians
    of the per-round ratios: the sides ran in the same rounds), and whether the
    uncertified answer differs (it may be lower: it is not a bound)."""
    out = []
    for row in rows:
        new = row.get("new") or {}
        parts = []
        for side in SPLIT_SIDES:
            other = row.get(side)
            if not other or not other.get("cpu"):
                continue
            pairs = zip(new.get("cpu_all", []), other.get("cpu_all", []), strict=False)
            ratios = [a / b for a, b in pairs if a and b]
            text = f"{side} {other['cpu']:.4f} s"
            if ratios:
                text += f" (cold / {side} per round {statistics.median(ratios):.2f}x)"
            if other.get("answer") != new.get("answer"):
                text += f", answer {_f(other.get('answer'), '.12g')}"
            parts.append(text)
        if parts:
            cold = _f(new.get("cpu"), ".4f")
            out.append(f"{row['workload']}: cold {cold} s; " + "; ".join(parts))
    return out


def _f(x, spec):
    return "-" if x is None else format(x, spec)


def _format_row(row: dict) -> str:
    new = row["new"]
    peer = row.get("peer") or {"answer": None, "cpu": None, "wall": None, "peak_mb": None}
    text = (
        f"| {row['workload']} | {_f(new['answer'], '.9f')} | {_f(new['cpu'], '.4f')} | "
        f"{_f(new['wall'], '.4f')} | {_f(new['peak_mb'], '.1f')} | {row['peer_name']} | "
        f"{_f(peer['answer'], '.9f')} | {_f(peer['cpu'], '.4f')} | {_f(peer['wall'], '.4f')} | "
        f"{_f(peer['peak_mb'], '.1f')} | {_f(row['peer_over_new_cpu'], '.2f')} |"
    )
    if "old" in row:
        old = row["old"]
        same = _compare(old, new)
        text += (f" {_f(old['answer'], '.12g')} | {_f(new['answer'], '.12g')} | {same} | "
                 f"{_f(old['cpu'], '.4f')} | {_f(row['old_over_new_cpu'], '.2f')} |")
    return text


def _compare(old: dict, new: dict) -> str:
    """Equal, tighter, or the largest relative excess of new over old (per query for
    the trajectory's 59 answers)."""
    a = old.get("values") or [old["answer"]]
    b = new.get("values") or [new["answer"]]
    if None in a or None in b or len(a) != len(b):
        return "?"
    if a == b:
        return "equal"
    worse = [(y - x) / x for x, y in zip(a, b, strict=True) if y > x]
    tighter = sum(y < x for x, y in zip(a, b, strict=True))
    if not worse:
        return f"tighter ({tighter}/{len(a)})"
    return f"{tighter}/{len(a)} tighter, {len(worse)} looser by <= {max(worse):.1e} rel"


HEADER = (
    "| workload | dpacct | CPU s | wall s | MB | peer | peer answer | CPU s | wall s | MB | "
    "peer CPU / dpacct CPU |"
)
HEADER_OLD = " old answer | new answer | new vs old | old CPU s | old CPU / new CPU |"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="*", help="fnmatch pattern on the workload names")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--old", default=None,
                        help="an interpreter that imports the old dpacct (e.g. python), "
                             "or an old checkout's root folder")
    parser.add_argument("--old-cwd", default=None,
                        help="working directory for --old (default: $TMPDIR or /tmp)")
    parser.add_argument("--split", action="store_true",
                        help="also time each new row warm (asked once before, in the same "
                             "process) and uncertified (CERTIFY_ROUNDOFF = False), alternated")
    parser.add_argument("--json", default=None)
    parser.add_argument("--no-peers", action="store_true",
                        help="dpacct only (e.g. under benchmarks.alternate)")
    args = parser.parse_args(argv)
    print(HEADER + (HEADER_OLD if args.old else ""))
    print("|" + " --- |" * (HEADER.count("|") - 1 + (HEADER_OLD.count("|") if args.old else 0)))
    rows = run(args.only, args.rounds, args.old,
               Path(args.old_cwd) if args.old_cwd else None, not args.no_peers, args.split)
    for line in bounds_over_epsilon(rows):
        print(line)
    for line in split_lines(rows):
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
