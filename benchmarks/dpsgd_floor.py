"""Issue 37: the FFT floor of a cold DP-SGD ``epsilon``, beside the call and Opacus' RDP.

A cold ``epsilon`` (constant sigma, a fresh process, CPU of the one call after the
imports) is a squaring ladder of FFT convolutions and one spectral power.  How much of
it is the transforms themselves, and how much the Python and numpy work around them
(temporaries, tilts, round-off bounds, tail cuts, re-grids, the discretisation)?  This
script

1. records every real transform a cold call makes (``numpy.fft.rfft`` and
   ``numpy.fft.irfft``, which :mod:`~dpacct.accountant.pld.pld_fft` calls: length and
   input shape), for ``epsilon`` and for ``epsilon_bounds``, in this process;
2. replays them in a fresh process on random inputs of the same shapes (an explicit
   ``numpy.random.Generator``), each forward transform followed by one pointwise
   spectrum product, as a convolution does: the *floor*, what the transforms alone
   cost, cold (the first pass: pocketfft builds each length's plan, the call's first
   use) and warm (the same pass again in that process);
3. times the call itself and Opacus' ``RDPAccountant`` on the same question, cold, each
   in a fresh process (the rows of :mod:`benchmarks.everyday`), the sides alternated
   round by round; CPU medians.

Run from the repository root::

    python -m benchmarks.dpsgd_floor                 # both rows, 3 rounds
    python -m benchmarks.dpsgd_floor --rows 1e4 --rounds 5 --no-peer
    python -m benchmarks.dpsgd_floor --callgrind python,.venv/bin/python --sides epsilon,bounds

Measured (session 24, ``--rounds 3``, load 14-16 on 2 cores; CPU ms, medians):

| row | side | transforms (lengths) | points | floor cold | floor warm | ours | Opacus |
| --- | --- | --- | --- | --- | --- | --- | --- |
| T 1e4 | epsilon | 91 (25) | 689 130 | 15.5 | 7.9 | 40.1 | 19.0 |
| T 1e4 | bounds | 246 (55) | 1 798 327 | 27.0 | 26.2 | 116.3 | 19.0 |
| T 1e6 | epsilon | 232 (56) | 1 852 171 | 25.7 | 24.1 | 119.4 | 23.0 |
| T 1e6 | bounds | 501 (93) | 4 175 435 | 66.0 | 74.5 | 268.5 | 23.0 |

``--callgrind`` (instructions of the one call, load-free): T 1e4 ``epsilon`` 196.1 M, of
which pocketfft 63.6 M (its plans 10.7 M), numpy 54.9 M, libm 26.6 M (``exp``: the
tilts), the interpreter 25.6 M; Opacus' call 115.1 M (60 % interpreter).  T 1e6
``epsilon`` 507.5 M, pocketfft 174.4 M: the transforms alone exceed Opacus' whole call
(141.5 M).  (Under valgrind the answers differ from the native ones in the 11th digit:
glibc and numpy dispatch on the CPU features valgrind reports.)

Session 25 (``--callgrind``; the pessimistic ladder's tilts with exps of exact exponents,
:func:`~dpacct.accountant.pld.pld_fft._tilted_convolve`): T 1e4 ``epsilon`` 196.2 ->
185.5 M (libm 26.6 -> 17.2 M), ``epsilon_bounds`` 504.7 M (the lower end's arithmetic
unchanged: 2.72x ``epsilon``); T 1e6 ``epsilon`` 508.0 -> 466.6 M (libm 76.5 -> 40.7 M)
against Opacus' 115.1 M (T 1e4) and 141.5 M (T 1e6).  Where the rest goes, and what
the plan's other levers measured: :mod:`benchmarks.dpsgd_plan`.

Session 27 (``--sides epsilon,bounds``, main 26d1223): ``epsilon_bounds`` T 1e4 504.6 M
(2.72x ``epsilon``'s 185.5 M), T 1e6 1147.8 M (2.46x 466.6 M; the lower end 61.822866 is
2.5e-4 below the upper).  The least work a bare FFT does for the same answer:
:mod:`benchmarks.dpsgd_floor_min`.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

ROWS = {"1e4": (0.01, 1.1, 10_000), "1e6": (0.004, 0.8, 1_000_000)}
DELTA = 1e-5

__all__ = ["ROWS", "callgrind", "categories", "main", "parse_rows", "record", "replay_script"]


@contextmanager
def _recording(calls: list, on_call=None):
    """``numpy.fft.rfft`` / ``irfft`` as the engine calls them, each call appended to
    ``calls`` as ``(kind, n, shape)`` (or, with ``on_call``, passed to it as those three
    arguments from inside the call); restored afterwards."""
    import numpy as np

    import dpacct.accountant.pld.pld_fft as pf

    rfft, irfft, bound = np.fft.rfft, np.fft.irfft, pf._irfft
    note = on_call or (lambda kind, n, shape: calls.append((kind, n, shape)))

    def rec_rfft(x, n=None, *args, **kwargs):
        note("r", int(np.shape(x)[-1] if n is None else n), list(np.shape(x)))
        return rfft(x, n, *args, **kwargs)

    def rec_irfft(x, n=None, *args, **kwargs):
        note("i", int(2 * (np.shape(x)[-1] - 1) if n is None else n), list(np.shape(x)))
        return irfft(x, n, *args, **kwargs)

    np.fft.rfft, np.fft.irfft, pf._irfft = rec_rfft, rec_irfft, rec_irfft
    try:
        yield calls
    finally:
        np.fft.rfft, np.fft.irfft, pf._irfft = rfft, irfft, bound


def record(q: float, sigma: float, steps: int, bounds: bool = False) -> dict:
    """The transforms of ``epsilon(1e-5)`` (``bounds``: ``epsilon_bounds``) on a fresh
    DP-SGD mechanism, and the answer: ``{"calls", "answer", "points", "lengths"}``."""
    from dpacct.accountant import compose, poisson_subsample
    from dpacct.mechanisms import GaussianMechanism

    mech = compose([poisson_subsample(GaussianMechanism(sigma=sigma), sample_rate=q)],
                   counts=[steps])
    with _recording([]) as calls:
        answer = mech.epsilon_bounds(DELTA) if bounds else mech.epsilon(DELTA)
    return {"calls": calls, "answer": answer,
            "points": sum(int(n) * (s[0] if len(s) > 1 else 1) for _, n, s in calls),
            "lengths": len({n for _, n, _ in calls})}


def replay_script(path: str) -> tuple[str, str]:
    """``(imports, body)`` for :func:`benchmarks.everyday.measure`: the transforms
    recorded in the JSON file ``path`` on random inputs, one pass, CPU of that pass."""
    imports = (
        "import json\nimport numpy as np\n"
        f"_calls = json.load(open({path!r}))\n"
        "_g = np.random.default_rng(20241129)\n"
        "_data = [(k, n, _g.random(s) if k == 'r' else _g.random(s) + 1j * _g.random(s))\n"
        "         for k, n, s in _calls]\n"
    )
    body = (
        "for k, n, x in _data:\n"
        "    if k == 'r':\n"
        "        y = np.fft.rfft(x, n)\n"
        "        y = y * y  # the spectrum product of a convolution\n"
        "    else:\n"
        "        np.fft.irfft(x, n)\n"
        "return len(_data), None"
    )
    return imports, body


#: ``--callgrind``: one cold call in a fresh process, between its two ``process_time``
#: calls (callgrind dumps its counters before each: part 2 is the call alone)
_CALLGRIND_CHILD = """
import sys, time
from dpacct.accountant import compose, poisson_subsample
from dpacct.mechanisms import GaussianMechanism
# the PLD engine and scipy.special load at a first PLD call since session 47: imported
# here, as before and as Opacus' import brings scipy.special (benchmarks.everyday)
import scipy.special
import dpacct.accountant.pld.grid, dpacct.accountant.pld.pld_pair, dpacct.accountant.pld.twoscale
q, s, t, bounds = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
m = compose([poisson_subsample(GaussianMechanism(sigma=s), sample_rate=q)], counts=[t])
time.process_time()
r = m.epsilon_bounds(1e-5) if bounds else m.epsilon(1e-5)
time.process_time()
print(repr(r))
"""

_OPACUS_CHILD = """
import sys, time
from opacus.accountants import RDPAccountant
q, s, t = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
time.process_time()
a = RDPAccountant(); a.history = [(s, q, t)]; r = a.get_epsilon(1e-5)
time.process_time()
print(repr(r))
"""

#: function-name patterns of the instruction categories, the first match wins
_CATEGORIES = (
    ("pocketfft (transforms, plans)", r"pocketfft|rfft|comp_twiddle|sincos"),
    ("libm (exp, log, pow)", r"__ieee754|^(exp|log|pow|expm1|log1p)@|^__(exp|log|pow)"),
    ("scipy.special", r"xsf::|cephes"),
    ("libc (memcpy, memset, malloc)",
     r"memcpy|memset|memmove|malloc|_int_free|^free|cfree|mmap|munmap|brk"),
    ("numpy (loops, dispatch, arrays)",
     r"^(PyArray|PyUFunc|ufunc|npyiter|NpyIter|array_|_npy|npy_|generic_wrapped|reduce_loop|"
     r"raw_array|PyDataMem|default_(malloc|free)|[A-Z]+_[a-z_]+_X86|[A-Z]+_pairwise|"
     r"[A-Z]+_(fill|clip|argmax|argmin)|_aligned|_contig|_strided|_cast|wrap_legacy|"
     r"resolve_descriptors|promote_and|dgemm|dgemv|ddot)"),
    ("Python interpreter",
     r"^(_Py|Py|tuple|list|dict|unicode|initialize_locals|frame_|long_|float_|object_|"
     r"type_|slot_|method_|func|cfunction|vectorcall|insertdict|lookdict|siphash|builtin_|"
     r"call_|gen_|meth_|subtype_|update_|find_name|set_|code_|cell_|new_keys|free_keys)"),
)


def categories(costs: Counter) -> dict:
    """Instructions by category (:data:`_CATEGORIES`; the rest ``other``)."""
    out: Counter = Counter()
    for name, ir in costs.items():
        cat = next((c for c, pat in _CATEGORIES if re.search(pat, name)), "other")
        out[cat] += ir
    return dict(out.most_common())


def _self_costs(path: str) -> Counter:
    """Self instructions per function of a callgrind output file (calls' inclusive
    costs skipped)."""
    costs: Counter = Counter()
    names: dict = {}
    fn, after_call = None, False
    with open(path) as f:
        for line in f:
            if line.startswith(("fn=", "cfn=")):
                m = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line.strip())
                if m and m.group(2):
                    names[m.group(1)] = m.group(2)
                if line.startswith("fn=") and m:
                    fn, after_call = names.get(m.group(1), m.group(1)), False
            elif line.startswith("calls="):
                after_call = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                parts = line.split()
                if len(parts) >= 2:
                    if after_call:
                        after_call = False
                        continue
                    costs[fn] += int(parts[1])
    return costs


def callgrind_script(python: str, script: str, args: list[str], *, prefix: str = "cg_",
                     cwd: str | None = None) -> dict:
    """Instructions of ``python -c script *args`` under callgrind, counted from the
    child's first ``time.process_time`` call on (the imports excluded), by category.

    Returns ``{"answer": the child's last printed line, "total": instructions,
    "categories": categories(...)}``; the child runs in a temporary directory (or
    ``cwd``).  Shared by this module's :func:`callgrind` and the experiments of
    ``dpsgd_floor_min``, ``ev37_dpsgd_parts`` and ``ev37b_bounds``."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        out = str(Path(tmp) / "cg.out")
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", "--dump-before=time_process_time",
             f"--callgrind-out-file={out}", python, "-c", script, *args],
            capture_output=True, text=True, cwd=cwd or tmp, check=False,
        )
        if proc.returncode or not Path(out + ".2").exists():
            raise RuntimeError(proc.stderr[-2000:])
        costs = _self_costs(out + ".2")
    return {"answer": proc.stdout.strip().splitlines()[-1], "total": sum(costs.values()),
            "categories": categories(costs)}


def callgrind(python: str, tag: str, side: str) -> dict:
    """Instructions of one cold call (``side``: ``epsilon``, ``bounds`` or ``opacus``)
    under valgrind's callgrind in a fresh ``python`` process (a real interpreter, not a
    shim): deterministic, whatever the machine's load.  ``{"answer", "total",
    "categories"}``."""
    q, sigma, steps = ROWS[tag]
    child = _OPACUS_CHILD if side == "opacus" else _CALLGRIND_CHILD
    args = [str(q), str(sigma), str(steps)] + ([] if side == "opacus" else
                                               ["1" if side == "bounds" else "0"])
    return callgrind_script(python, child, args, prefix="dpsgd_floor_cg_")


def parse_rows(text: str) -> list[str]:
    """The comma-separated row tags of ``--rows``, each checked against :data:`ROWS`."""
    rows = [r.strip() for r in text.split(",") if r.strip()]
    for r in rows:
        if r not in ROWS:
            raise ValueError(f"rows must be among {sorted(ROWS)}, got {r!r}")
    return rows


def _median_ms(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return 1e3 * statistics.median(values) if values else None


def run(rows: list[str], rounds: int, peer: bool) -> list[dict]:
    """Every row's floor (cold, warm), the call (``epsilon``, ``epsilon_bounds``) and
    Opacus, alternated round by round; CPU medians in ms."""
    from benchmarks.everyday import WORKLOADS, measure

    out, tmp = [], Path(tempfile.mkdtemp(prefix="dpsgd_floor_"))
    for tag in rows:
        q, sigma, steps = ROWS[tag]
        row: dict = {"row": tag}
        for side, bounds in (("epsilon", False), ("bounds", True)):
            rec = record(q, sigma, steps, bounds)
            path = tmp / f"{tag}_{side}.json"
            path.write_text(json.dumps(rec["calls"]))
            row[side] = {"transforms": len(rec["calls"]), "points": rec["points"],
                         "lengths": rec["lengths"], "path": str(path)}
        out.append(row)
    times: dict = {}
    for _ in range(rounds):
        for row in out:
            tag = row["row"]
            for side in ("epsilon", "bounds"):
                work = WORKLOADS[f"dpsgd {side} T {tag}"]
                imports, body = replay_script(row[side]["path"])
                for key, args in (
                    (f"floor {side} cold", (imports, body, False)),
                    (f"floor {side} warm", (imports, body, True)),
                    (f"ours {side}", (work["dpacct_imports"], work["dpacct"], False)),
                ):
                    got = measure(sys.executable, args[0], args[1], warm=args[2])
                    times.setdefault((tag, key), []).append(got["cpu"])
            if peer:
                work = WORKLOADS[f"dpsgd epsilon T {tag}"]
                got = measure(sys.executable, work["peer_imports"], work["peer"])
                times.setdefault((tag, "opacus"), []).append(got["cpu"])
    for row in out:
        row["ms"] = {key: _median_ms(v) for (tag, key), v in times.items() if tag == row["row"]}
    return out


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def _print_callgrind(rows: list[str], pythons: list[str], peer: bool,
                     calls: tuple[str, ...] = ("epsilon",)) -> int:
    print("| row | side | interpreter | answer | instructions (M) | by category (M) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for tag in rows:
        sides = [(side, py) for py in pythons for side in calls]
        if peer:
            sides.append(("opacus", pythons[0]))
        for side, py in sides:
            got = callgrind(py, tag, side)
            cats = ", ".join(f"{k} {v / 1e6:.1f}" for k, v in got["categories"].items())
            who = "-" if side == "opacus" else py
            print(f"| T {tag} | {side} | {who} | {got['answer']} | {got['total'] / 1e6:.1f} | "
                  f"{cats} |", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1e4,1e6", help="comma-separated: 1e4, 1e6")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-peer", action="store_true", help="skip Opacus")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--callgrind", metavar="PYTHON[,PYTHON]",
                    help="instead: instructions of one cold call (and of Opacus') under "
                         "callgrind, per interpreter (e.g. this venv's and main's)")
    ap.add_argument("--sides", default="epsilon",
                    help="with --callgrind, comma-separated: epsilon, bounds")
    args = ap.parse_args(argv)
    rows = parse_rows(args.rows)
    if args.rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {args.rounds}")
    calls = tuple(c.strip() for c in args.sides.split(",") if c.strip())
    if not calls or any(c not in ("epsilon", "bounds") for c in calls):
        raise ValueError(f"sides must be among ['bounds', 'epsilon'], got {args.sides!r}")
    if args.callgrind:
        return _print_callgrind(rows, args.callgrind.split(","), not args.no_peer, calls)
    out = run(rows, args.rounds, not args.no_peer)
    print("| row | side | transforms (lengths) | points | floor cold | floor warm | ours | "
          "Opacus | ours / floor cold |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in out:
        ms = row["ms"]
        for side in ("epsilon", "bounds"):
            w = row[side]
            cold, ours = ms.get(f"floor {side} cold"), ms.get(f"ours {side}")
            ratio = "-" if not cold or ours is None else f"{ours / cold:.2f}x"
            print(f"| T {row['row']} | {side} | {w['transforms']} ({w['lengths']}) | "
                  f"{w['points']} | {_fmt(cold)} | {_fmt(ms.get(f'floor {side} warm'))} | "
                  f"{_fmt(ours)} | {_fmt(ms.get('opacus'))} | {ratio} |")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
