"""The peer benchmark's harness: one subprocess per measurement, tables, command line.

The child side runs one registered runner (:func:`run_in_process`); the parent side
launches ``benchmarks/peers.py --run`` in a fresh subprocess per (runner, workload)
(:func:`measure`), plans and runs a table, and formats it.  See ``benchmarks/peers.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import importlib
import importlib.metadata
import json
import math
import os
import platform
import subprocess
import sys
import time
import traceback
import tracemalloc
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.peer_registry import (
    DEFAULT_MEM_LIMIT_MB,
    DEFAULT_REPEAT_BUDGET,
    DEFAULT_REPEATS,
    DEFAULT_TIMEOUT,
    PEER_DISTRIBUTIONS,
    REPO_ROOT,
    RESULT_KEYS,
    RUNNERS,
    WORKLOADS,
    RunnerResult,
    RunnerSpec,
    Unavailable,
    Workload,
)

#: the script every measurement subprocess runs (it registers all the peers' runners)
PEERS_SCRIPT = Path(__file__).resolve().with_name("peers.py")

# --------------------------------------------------------------------------- child side


def _proc_status_kb(field: str) -> int | None:
    """Read a ``kB`` field of ``/proc/self/status`` (Linux), or None."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak_rss() -> bool:
    """Reset the kernel's resident-set high-water mark (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return False
    return _proc_status_kb("VmHWM") is not None


def _resolve_runner(name: str) -> RunnerSpec:
    """Find a runner by registry name or ``"package.module:function"``."""
    if name in RUNNERS:
        return RUNNERS[name]
    if ":" not in name:
        raise KeyError(f"unknown runner {name!r}; known: {', '.join(RUNNERS)}")
    module_name, attr = name.split(":", 1)
    module = importlib.import_module(module_name)  # may register runners itself
    if name in RUNNERS:
        return RUNNERS[name]
    if attr in RUNNERS:
        return RUNNERS[attr]
    func = getattr(module, attr)
    return RunnerSpec(
        name=name,
        peer=module_name,
        method=attr,
        kinds=frozenset(),
        imports=(module_name,),
        func=func,
    )


def _clean(value: Any) -> Any:
    """Convert numpy scalars to Python numbers for JSON."""
    if value is None or isinstance(value, str | bool | int):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def _warning_messages(caught: Iterable[warnings.WarningMessage]) -> list[str]:
    skip = (DeprecationWarning, PendingDeprecationWarning)
    seen: list[str] = []
    for w in caught:
        if issubclass(w.category, skip):
            continue
        text = f"{w.category.__name__}: {str(w.message)[:200]}"
        if text not in seen:
            seen.append(text)
    return seen[:5]


def run_in_process(
    runner_name: str,
    workload: Workload,
    repeats: int = DEFAULT_REPEATS,
    *,
    repeat_budget: float = DEFAULT_REPEAT_BUDGET,
    memory: str = "rss",
    mem_limit_mb: float | None = DEFAULT_MEM_LIMIT_MB,
) -> dict[str, Any]:
    """Run one measurement in the current process (the subprocess side).

    Parameters
    ----------
    runner_name : str
        Registry name or ``"package.module:function"``.
    workload : dict
        Workload parameters, including ``"kind"``.
    repeats : int, optional
        Maximum number of timed calls.
    repeat_budget : float, optional
        A further call is started only while the calls so far plus the fastest
        call fit within this many seconds.
    memory : {"rss", "tracemalloc"}, optional
        ``"rss"``: increase of the resident-set high-water mark during the first
        call. ``"tracemalloc"``: peak of traced allocations in one extra,
        untimed call.
    mem_limit_mb : float or None, optional
        Address-space limit for this process, so a runaway grid fails with
        ``MemoryError`` instead of invoking the system's OOM killer.

    Returns
    -------
    dict
        Measurement record (see :func:`measure`).
    """
    record: dict[str, Any] = {
        "runner": runner_name,
        "workload": workload.get("name"),
        "status": "ok",
        **dict.fromkeys(RESULT_KEYS),
        "seconds": None,
        "seconds_all": [],
        "import_seconds": None,
        "peak_mb": None,
        "peak_method": None,
        "warnings": [],
    }
    if mem_limit_mb:
        with contextlib.suppress(ImportError, ValueError, OSError):
            import resource

            limit = int(mem_limit_mb * 2**20)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        spec = _resolve_runner(runner_name)
    except (ImportError, AttributeError, KeyError) as exc:
        record.update(status="unavailable", error=f"{type(exc).__name__}: {exc}")
        return record
    record.update(peer=spec.peer, method=spec.method)
    if spec.kinds and workload.get("kind") not in spec.kinds:
        record.update(status="unavailable", error=f"kind {workload.get('kind')!r} unsupported")
        return record

    start = time.perf_counter()
    try:
        for module in spec.imports:
            importlib.import_module(module)
    except ImportError as exc:
        record.update(status="unavailable", error=f"{type(exc).__name__}: {exc}")
        return record
    record["import_seconds"] = time.perf_counter() - start

    times: list[float] = []
    result: RunnerResult | None = None
    rss_before: int | None = None
    reset = False
    try:
        with contextlib.redirect_stdout(sys.stderr), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            while len(times) < max(1, repeats):
                if times and sum(times) + min(times) > repeat_budget:
                    break
                first = not times
                if first and memory == "rss":
                    rss_before = _proc_status_kb("VmRSS")
                    reset = _reset_peak_rss()
                t0 = time.perf_counter()
                out = spec.func(dict(workload))
                times.append(time.perf_counter() - t0)
                if first:
                    result = out
                    if memory == "rss" and rss_before is not None:
                        if reset:
                            peak_kb = _proc_status_kb("VmHWM") or rss_before
                            record["peak_method"] = "rss: VmHWM reset before the first call"
                        else:
                            import resource

                            peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                            record["peak_method"] = "rss: ru_maxrss (import peak may hide it)"
                        record["peak_mb"] = max(0, peak_kb - rss_before) / 1024
            if memory == "tracemalloc":
                tracemalloc.start()
                tracemalloc.reset_peak()
                spec.func(dict(workload))
                record["peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
                tracemalloc.stop()
                record["peak_method"] = "tracemalloc: extra untimed call"
            record["warnings"] = _warning_messages(caught)
    except Unavailable as exc:
        record.update(status="unavailable", error=str(exc))
        return record
    except MemoryError as exc:
        record.update(status="error", error=f"MemoryError (limit {mem_limit_mb} MiB): {exc}")
        return record
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        record.update(status="error", error=f"{type(exc).__name__}: {exc}")
        return record

    assert result is not None
    unknown = set(result) - set(RESULT_KEYS)
    if unknown:
        record["error"] = f"runner returned unknown keys {sorted(unknown)}"
    record.update({key: _clean(result.get(key)) for key in RESULT_KEYS})
    record["note"] = result.get("note") or None
    record["seconds"] = min(times)
    record["seconds_all"] = times
    return record


# --------------------------------------------------------------------------- parent side


def _workload_from(spec: str | Workload) -> Workload:
    """Resolve a workload name or dict; the result carries a ``"name"`` key."""
    if isinstance(spec, str):
        if spec in WORKLOADS:
            return {"name": spec, **WORKLOADS[spec]}
        spec = json.loads(spec)
    if not isinstance(spec, dict) or "kind" not in spec:
        raise ValueError(f"a workload is a dict with a 'kind' key, got {spec!r}")
    return {"name": spec.get("name", spec["kind"]), **spec}


def _last_json_line(text: str) -> dict[str, Any] | None:
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                return json.loads(line)
    return None


def measure(
    runner_name: str,
    workload: str | Workload,
    repeats: int = DEFAULT_REPEATS,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    repeat_budget: float = DEFAULT_REPEAT_BUDGET,
    memory: str = "rss",
    mem_limit_mb: float | None = DEFAULT_MEM_LIMIT_MB,
    python: str = sys.executable,
) -> dict[str, Any]:
    """Measure one runner on one workload in a fresh subprocess.

    Parameters
    ----------
    runner_name : str
        A key of :data:`RUNNERS`, or ``"package.module:function"`` importable from
        the repository root.
    workload : str or dict
        A key of :data:`WORKLOADS`, a JSON string, or a workload dict.
    repeats : int, optional
        Maximum number of timed calls; ``seconds`` is the fastest.
    timeout : float, optional
        Wall-clock limit for the whole subprocess, imports included.
    repeat_budget : float, optional
        Seconds of timed calls after which no further repeat is started.
    memory : {"rss", "tracemalloc"}, optional
        How ``peak_mb`` is measured; see :func:`run_in_process`.
    mem_limit_mb : float or None, optional
        Address-space limit of the subprocess.
    python : str, optional
        Interpreter that runs the subprocess.

    Returns
    -------
    dict
        ``runner``, ``peer``, ``method``, ``workload``, ``status`` (``"ok"``,
        ``"error"``, ``"unavailable"`` or ``"timeout"``), ``epsilon``, ``lower``,
        ``upper``, ``sigma``, ``note``, ``seconds`` (best call, imports
        excluded), ``seconds_all``, ``import_seconds``, ``peak_mb``,
        ``peak_method``, ``warnings``, ``wall_seconds`` (whole subprocess) and
        ``error`` when the status is not ``"ok"``. Never raises for a failing
        peer.
    """
    wl = _workload_from(workload)
    spec = RUNNERS.get(runner_name)
    base: dict[str, Any] = {
        "runner": runner_name,
        "peer": spec.peer if spec else runner_name.split(":")[0].split(".")[0],
        "method": spec.method if spec else runner_name,
        "workload": wl["name"],
        **dict.fromkeys(RESULT_KEYS),
        "seconds": None,
        "peak_mb": None,
    }
    cmd = [
        python,
        str(PEERS_SCRIPT),
        "--run",
        runner_name,
        "--workload",
        json.dumps(wl),
        "--repeats",
        str(repeats),
        "--repeat-budget",
        str(repeat_budget),
        "--memory",
        memory,
        "--mem-limit-mb",
        str(mem_limit_mb or 0),
    ]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=REPO_ROOT,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {
            **base,
            "status": "timeout",
            "error": f"no result within {timeout:g} s",
            "wall_seconds": time.perf_counter() - start,
        }
    wall = time.perf_counter() - start
    record = _last_json_line(proc.stdout)
    if record is None:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        how = (
            f"killed by signal {-proc.returncode}"
            if proc.returncode < 0
            else (f"exit status {proc.returncode}")
        )
        return {
            **base,
            "status": "error",
            "error": f"no result ({how}): {tail}",
            "wall_seconds": wall,
        }
    return {**base, **record, "wall_seconds": wall}


def plan(
    runner_patterns: Sequence[str] = ("*",), workload_patterns: Sequence[str] = ("*",)
) -> list[tuple[str, str]]:
    """List the (runner, workload) pairs of the table, filtered by glob patterns.

    Parameters
    ----------
    runner_patterns, workload_patterns : sequence of str, optional
        ``fnmatch`` patterns; a pair is kept when both names match one of them.

    Returns
    -------
    list of (str, str)
        Pairs in table order: by workload, then by registration order.
    """
    pairs = []
    for wname, wl in WORKLOADS.items():
        if not any(fnmatch.fnmatch(wname, pat) for pat in workload_patterns):
            continue
        for rname, spec in RUNNERS.items():
            if wl["kind"] in spec.kinds and any(
                fnmatch.fnmatch(rname, pat) for pat in runner_patterns
            ):
                pairs.append((rname, wname))
    return pairs


def run_table(
    pairs: Sequence[tuple[str, str]] | None = None,
    *,
    progress: bool = True,
    **measure_kwargs: Any,
) -> list[dict[str, Any]]:
    """Measure every (runner, workload) pair, one subprocess each.

    Parameters
    ----------
    pairs : sequence of (str, str), optional
        Pairs to measure; all of :func:`plan` by default.
    progress : bool, optional
        Show a tqdm progress bar on stderr when tqdm is installed.
    **measure_kwargs
        Passed to :func:`measure` (``repeats``, ``timeout``, ``memory``, ...).

    Returns
    -------
    list of dict
        One :func:`measure` record per pair.
    """
    pairs = plan() if pairs is None else list(pairs)
    iterator: Iterable[tuple[str, str]] = pairs
    bar = None
    if progress:
        try:
            from tqdm import tqdm
        except ImportError:
            tqdm = None
        if tqdm is not None:
            bar = tqdm(pairs, desc="peers", unit="run", file=sys.stderr)
            iterator = bar
    results = []
    for rname, wname in iterator:
        if bar is not None:
            bar.set_postfix_str(f"{wname} {rname}")
        results.append(measure(rname, wname, **measure_kwargs))
    return results


def environment() -> dict[str, Any]:
    """Interpreter, platform and installed versions of the peers."""
    versions = {}
    for dist in (*PEER_DISTRIBUTIONS.values(), "torch", "numpy", "scipy"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "versions": versions,
    }


def _fmt(value: Any, spec: str) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return format(value, spec)


def format_table(results: Sequence[dict[str, Any]]) -> str:
    """Render measurement records as a fixed-width text table with notes.

    Parameters
    ----------
    results : sequence of dict
        Records from :func:`measure`.

    Returns
    -------
    str
        The table, followed by numbered notes and errors.
    """
    headers = (
        "workload",
        "peer.method",
        "epsilon",
        "lower",
        "upper",
        "sigma",
        "seconds",
        "peak MB",
        "status",
    )
    rows: list[tuple[str, ...]] = []
    notes: dict[str, int] = {}  # identical remarks share one footnote
    for r in results:
        remarks = [r.get("note"), r.get("error"), *(r.get("warnings") or [])]
        text = "; ".join(m for m in remarks if m)
        status = r.get("status", "?")
        if text:
            number = notes.setdefault(text, len(notes) + 1)
            status += f" [{number}]"
        rows.append(
            (
                r["workload"],
                r["runner"],
                _fmt(r.get("epsilon"), ".6f"),
                _fmt(r.get("lower"), ".6f"),
                _fmt(r.get("upper"), ".6f"),
                _fmt(r.get("sigma"), ".6f"),
                _fmt(r.get("seconds"), ".4f"),
                _fmt(r.get("peak_mb"), ".1f"),
                status,
            )
        )
    widths = [
        max(len(h), *(len(row[i]) for row in rows)) if rows else len(h)
        for i, h in enumerate(headers)
    ]
    numeric = {2, 3, 4, 5, 6, 7}

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in numeric else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    previous = None
    for row in rows:
        if previous is not None and row[0] != previous:
            out.append("")
        out.append(line(row))
        previous = row[0]
    methods = {r["runner"]: r.get("method") for r in results}
    out += ["", "methods:"] + [f"  {name}: {m}" for name, m in methods.items()]
    if notes:
        out += ["", "notes:"] + [f"  [{n}] {text}" for text, n in notes.items()]
    return "\n".join(out)


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Benchmark peer DP accounting libraries, one subprocess per measurement."
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--run", metavar="NAME", help="measure one runner in this process")
    mode.add_argument("--table", action="store_true", help="measure every runner on every workload")
    mode.add_argument("--list", action="store_true", help="list runners and workloads")
    mode.add_argument("--render", metavar="PATH", help="print the table of a saved --json file")
    parser.add_argument("--workload", help="workload name or JSON dict (with --run)")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    parser.add_argument(
        "--repeat-budget",
        type=float,
        default=DEFAULT_REPEAT_BUDGET,
        help="no new repeat once timed calls exceed this many seconds",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help="seconds per measurement subprocess (with --table)",
    )
    parser.add_argument("--memory", choices=("rss", "tracemalloc"), default="rss")
    parser.add_argument(
        "--mem-limit-mb",
        type=float,
        default=DEFAULT_MEM_LIMIT_MB,
        help="address-space limit per subprocess; 0 for none",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        default=["*"],
        metavar="GLOB",
        help="runner name patterns (with --table)",
    )
    parser.add_argument(
        "--workloads",
        nargs="+",
        default=["*"],
        metavar="GLOB",
        help="workload name patterns (with --table)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    if args.run and not args.workload:
        parser.error("--run needs --workload")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; see the module docstring."""
    args = _parse_args(argv)
    if args.list:
        for name, spec in RUNNERS.items():
            sys.stdout.write(f"{name:36s} {sorted(spec.kinds)}  {spec.method}\n")
        for name, wl in WORKLOADS.items():
            sys.stdout.write(f"{name:36s} {json.dumps(wl)}\n")
        return 0
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        sys.stdout.write(format_table(saved["results"]) + "\n")
        return 0
    if args.run:
        record = run_in_process(
            args.run,
            _workload_from(args.workload),
            args.repeats,
            repeat_budget=args.repeat_budget,
            memory=args.memory,
            mem_limit_mb=args.mem_limit_mb or None,
        )
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()
        return 0
    env = environment()
    results = run_table(
        plan(args.only, args.workloads),
        progress=not args.no_progress,
        repeats=args.repeats,
        timeout=args.timeout,
        repeat_budget=args.repeat_budget,
        memory=args.memory,
        mem_limit_mb=args.mem_limit_mb or None,
    )
    header = (
        f"python {env['python']} on {env['platform']}, {env['cpu_count']} CPUs; "
        + ", ".join(f"{k} {v}" for k, v in env["versions"].items())
        + f"\nseconds: best of up to {args.repeats} calls (imports excluded); "
        f"peak MB: {args.memory}; timeout {args.timeout:g} s per measurement\n"
    )
    sys.stdout.write(header + "\n" + format_table(results) + "\n")
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        settings = {
            k: getattr(args, k)
            for k in ("repeats", "repeat_budget", "timeout", "memory", "mem_limit_mb")
        }
        path.write_text(
            json.dumps({"environment": env, "settings": settings, "results": results}, indent=1)
            + "\n"
        )
    return 0
