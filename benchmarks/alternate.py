"""Old checkout against new, alternately: every answer of a benchmark, side by side.

    python -m benchmarks.alternate --old /work/main --new .    # benchmarks.run --no-peers
    python -m benchmarks.alternate --old A --new B --rounds 2 -- benchmarks.run --no-peers --quick
    python -m benchmarks.alternate --old A --new B -- benchmarks.truncated_poisson --no-peer

Runs the benchmark module (default ``benchmarks.run --no-peers``; ``--json PATH`` is
appended) in fresh subprocesses, old, new, old, new, ... for ``--rounds`` rounds, each
importing dpacct from its checkout (:mod:`benchmarks.checkouts`: one interpreter, the
same numpy, scipy and peers for both; the benchmark code is the ``--bench`` checkout's,
by default the new one, so both sides answer the same rows).  It then prints one line per
answer: the row (its string fields, e.g. runner and workload), the field, old and new,
and a flag:

* ``changed``: old and new differ when printed to ``--decimals`` decimals (the
  benchmark tables' ``.6f``);
* ``LOOSER``: an upper bound (``epsilon``, ``upper``, a calibrated ``sigma``) went up or a
  lower bound (``lower``) went down, beyond the printed digits;
* ``WIDER``: a bracket ``[lower, upper]`` that is not inside the old one;
* ``unsteady``: one side printed different answers in different rounds;
* ``old only`` / ``new only``: a row or field one side lacks (an error, a new row).

Timing columns (any field named like ``seconds``, ``cpu``, ``wall``, ``_s``, ``mb``) are not
answers: their medians over the rounds are printed per row, with new / old.  Exit status
1 when any answer is LOOSER or WIDER.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.checkouts import checkout_env

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_COMMAND = ["benchmarks.run", "--no-peers"]
#: upper bounds: a larger new value is looser; lower bounds: a smaller one
UPPER = {"epsilon", "upper", "sigma", "ours", "delta"}
LOWER = {"lower"}
TIMING_MARKS = ("seconds", "cpu", "wall", "_s", "mb", "time", "peak")


def _is_timing(field: str) -> bool:
    f = field.lower()
    return any(m in f for m in TIMING_MARKS)


def _rows(data: Any) -> list[dict]:
    """The records of a benchmark's JSON: its ``results`` (or ``rows``) list, or the list."""
    if isinstance(data, dict):
        for key in ("results", "rows"):
            if isinstance(data.get(key), list):
                return [r for r in data[key] if isinstance(r, dict)]
        return [data]
    if isinstance(data, list):
        return [r for r in data if isinstance(r, dict)]
    return []


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        if isinstance(v, str) and v in ("inf", "-inf", "nan"):
            return float(v)
        return None
    return float(v)


def _label(key: tuple) -> str:
    """A row's name: its runner and workload when it has them, else all its strings."""
    fields = dict(key)
    if "runner" in fields and "workload" in fields:
        return f"{fields['runner'].rpartition(':')[2]} @ {fields['workload']}"
    return " ".join(v for _, v in key) or "(row)"


def split(records: list[dict]) -> tuple[dict, dict]:
    """``(answers, timings)``: row key -> {field: number}, the row key being the record's
    string fields other than notes and errors."""
    answers: dict[tuple, dict[str, float]] = {}
    timings: dict[tuple, dict[str, float]] = {}
    for rec in records:
        ident = tuple(
            (k, v)
            for k, v in sorted(rec.items())
            if isinstance(v, str) and k not in ("note", "error", "status", "peak_method")
        )
        for k, v in rec.items():
            x = _number(v)
            if x is None:
                continue
            (timings if _is_timing(k) else answers).setdefault(ident, {})[k] = x
    return answers, timings


def run_side(command: Sequence[str], root: Path, bench: Path, timeout: float) -> list[dict]:
    """One run of ``python -m command... --json tmp`` against checkout ``root``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        env = checkout_env(root, extra_path=[str(bench)])
        proc = subprocess.run(
            [sys.executable, "-m", *command, "--json", str(out)],
            env=env,
            cwd=bench,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(
                f"{' '.join(command)} failed on {root} (status {proc.returncode}):\n"
                + proc.stderr[-3000:]
            )
        return _rows(json.loads(out.read_text()))


def _fmt(x: float | None, decimals: int) -> str:
    if x is None:
        return "-"
    if not math.isfinite(x):
        return str(x)
    if x != 0 and abs(x) < 10.0 ** (-decimals + 2):
        return f"{x:.{decimals}e}"
    return f"{x:.{decimals}f}"


def compare(
    old_runs: list[dict], new_runs: list[dict], decimals: int
) -> tuple[list[tuple[str, str, str, str, str]], int]:
    """Table lines ``(row, field, old, new, flag)`` and the number of LOOSER/WIDER flags.

    ``old_runs`` / ``new_runs``: the answers (row -> field -> value) of each round."""
    bad = 0
    lines = []
    keys = list(dict.fromkeys([*old_runs[0], *new_runs[0]]))
    for key in keys:
        label = _label(key)
        o_rounds = [r.get(key) for r in old_runs]
        n_rounds = [r.get(key) for r in new_runs]
        o, n = o_rounds[0], n_rounds[0]
        if o is None or n is None:
            lines.append(
                (
                    label,
                    "*",
                    "-" if o is None else "row",
                    "-" if n is None else "row",
                    "new only" if o is None else "old only",
                )
            )
            continue
        for field in dict.fromkeys([*o, *n]):
            ov, nv = o.get(field), n.get(field)
            flags = []
            if ov is None or nv is None:
                flags.append("new only" if ov is None else "old only")
            else:
                so, sn = _fmt(ov, decimals), _fmt(nv, decimals)
                if so != sn:
                    looser = (field in UPPER and nv > ov) or (field in LOWER and nv < ov)
                    flags.append("LOOSER" if looser else "changed")
                    bad += looser
            for side, rounds in (("old", o_rounds), ("new", n_rounds)):
                values = {_fmt((r or {}).get(field), decimals) for r in rounds}
                if len(values) > 1:
                    flags.append(f"unsteady ({side})")
            lines.append((label, field, _fmt(ov, decimals), _fmt(nv, decimals), ", ".join(flags)))
        if {"lower", "upper"} <= set(o) and {"lower", "upper"} <= set(n):
            inside = n["lower"] >= o["lower"] and n["upper"] <= o["upper"]
            printed_same = all(
                _fmt(n[f], decimals) == _fmt(o[f], decimals) for f in ("lower", "upper")
            )
            if not inside and not printed_same:
                lines.append(
                    (
                        label,
                        "bracket",
                        f"[{_fmt(o['lower'], decimals)}, {_fmt(o['upper'], decimals)}]",
                        f"[{_fmt(n['lower'], decimals)}, {_fmt(n['upper'], decimals)}]",
                        "WIDER",
                    )
                )
                bad += 1
    return lines, bad


def timing_lines(old_t: list[dict], new_t: list[dict], every: bool = False) -> list[str]:
    """Median old and new of each row's timing fields (``seconds`` and ``peak_mb``, or
    all of them with ``every``), and new / old."""
    out = []
    for key in dict.fromkeys([*old_t[0], *new_t[0]]):
        label = _label(key)
        fields = dict.fromkeys([*(old_t[0].get(key) or {}), *(new_t[0].get(key) or {})])
        for field in fields:
            if field.endswith("_all") or not (every or field in ("seconds", "peak_mb")):
                continue
            o = [r[key][field] for r in old_t if field in (r.get(key) or {})]
            n = [r[key][field] for r in new_t if field in (r.get(key) or {})]
            if not o or not n:
                continue
            mo, mn = statistics.median(o), statistics.median(n)
            ratio = f"{mn / mo:.2f}" if mo > 0 else "-"
            out.append(f"{label:<50} {field:<14} {mo:10.4f} {mn:10.4f} {ratio:>7}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        usage="python -m benchmarks.alternate [options] [-- module args...]",
    )
    parser.add_argument("--old", type=Path, default=Path("/work/main"), help="old checkout")
    parser.add_argument("--new", type=Path, default=ROOT, help="new checkout")
    parser.add_argument("--bench", type=Path, help="checkout whose benchmarks run (default: new)")
    parser.add_argument("--rounds", type=int, default=1, help="old, new pairs (default 1)")
    parser.add_argument("--decimals", type=int, default=6, help="printed decimals (default 6)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    parser.add_argument("--json", type=Path, help="write every run's records here")
    parser.add_argument("--all", action="store_true", help="print unchanged answers too")
    parser.add_argument("--timings", action="store_true", help="every timing field")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="benchmark module and args")
    args = parser.parse_args(argv)
    command = [c for c in args.command if c != "--"] or DEFAULT_COMMAND
    bench = (args.bench or args.new).resolve()
    raw: dict[str, list[list[dict]]] = {"old": [], "new": []}
    for i in range(args.rounds):
        for side in ("old", "new") if i % 2 == 0 else ("new", "old"):
            root = args.old if side == "old" else args.new
            print(f"round {i + 1}: {side} ({root}) ...", file=sys.stderr, flush=True)
            raw[side].append(run_side(command, root, bench, args.timeout))
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1))
    old_a, old_t = zip(*(split(r) for r in raw["old"]), strict=True)
    new_a, new_t = zip(*(split(r) for r in raw["new"]), strict=True)
    lines, bad = compare(list(old_a), list(new_a), args.decimals)
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(
        f"{' '.join(command)}: old {args.old} vs new {args.new}, {args.rounds} round(s)"
        f" alternated, benchmarks from {bench}; load average {load}"
    )
    width = max([len(r[0]) for r in lines] + [10])
    print(f"{'row':<{width}} {'field':<10} {'old':>16} {'new':>16}  flag")
    for row, field, o, n, flag in lines:
        if flag or args.all:
            print(f"{row:<{width}} {field:<10} {o:>16} {n:>16}  {flag}")
    same = sum(1 for r in lines if not r[4])
    print(
        f"{len(lines)} answers: {same} equal to the last printed digit,"
        f" {len(lines) - same} flagged ({bad} LOOSER or WIDER)"
    )
    print(f"\n{'row':<50} {'timing':<14} {'old':>10} {'new':>10} {'new/old':>7}")
    print("\n".join(timing_lines(list(old_t), list(new_t), args.timings)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
