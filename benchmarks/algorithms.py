"""dpacct's algorithms side by side with the peers they came from, in one table.

    python -m benchmarks.algorithms                    # every topic, 100 seeds
    python -m benchmarks.algorithms --quick            # few seeds, short runs
    python -m benchmarks.algorithms --only regression  # one topic module
    python -m benchmarks.algorithms --json benchmarks/results/algorithms.json

Every module in ``benchmarks/algos/`` (found with :mod:`pkgutil`; names starting with an
underscore are helpers, not topics) is a *topic*: it exposes
``rows(seeds: int = 100, quick: bool = False) -> list[dict]`` and returns one dict per
comparison, with the keys

=================  ================================================================
``workflow``       what is compared (str)
``metric``         the error or score measured, and whether lower is better (str)
``dpacct``         dpacct's median over the seeds (float)
``dpacct_spread``  its spread, e.g. ``"IQR 0.12-0.15"`` (str)
``peer``           the peer: library and version, or "... not installed" (str)
``peer_value``     the peer's median (float; None when the peer is not installed)
``peer_spread``    its spread (str)
``seeds``          number of seeds / repetitions behind each median (int)
``verdict``        ``"better"``, ``"parity"`` or ``"worse"`` for dpacct (``"n/a"``
                   when the peer is not installed)
``why``            the reason, required when the verdict is ``"worse"`` (str)
=================  ================================================================

The runner calls every topic, prints one Markdown table (median [spread] for dpacct and
for the peer side by side) and, with ``--json PATH`` (``-`` for stdout), writes the rows.
A topic that raises, or returns a malformed row, becomes an ``error`` row and the exit
status is 1; the other topics still run.  Long loops show a ``tqdm`` progress bar on
stderr once they have run a few seconds.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import pkgutil
import sys
import time
import traceback
from collections.abc import Callable, Sequence

from benchmarks.algos._common import NO_PEER, ROW_KEYS, VERDICTS, progress

PACKAGE = "benchmarks.algos"
ERROR = "error"

COLUMNS = ("workflow", "metric", "dpacct median [spread]", "peer median [spread]", "peer",
           "seeds", "verdict", "why")


def discover(package: str = PACKAGE) -> list[str]:
    """Names of the topic modules of ``package`` (sorted; ``_helpers`` skipped)."""
    pkg = importlib.import_module(package)
    return sorted(
        info.name
        for info in pkgutil.iter_modules(pkg.__path__)
        if not info.name.startswith("_") and not info.ispkg
    )


def check_row(r: object, topic: str) -> dict:
    """``r`` with its keys checked; ``ValueError`` naming the topic and the defect."""
    if not isinstance(r, dict):
        raise ValueError(f"{topic}: a row must be a dict, got {type(r).__name__}")
    missing = [k for k in ROW_KEYS if k not in r]
    if missing:
        raise ValueError(f"{topic}: row {r.get('workflow', '?')!r} lacks {missing}")
    if r["verdict"] not in (*VERDICTS, NO_PEER):
        raise ValueError(f"{topic}: verdict must be one of {(*VERDICTS, NO_PEER)}, got "
                         f"{r['verdict']!r}")
    if r["verdict"] == "worse" and not str(r["why"]).strip():
        raise ValueError(f"{topic}: row {r['workflow']!r} is worse and says not why")
    if not isinstance(r["seeds"], int) or r["seeds"] < 1:
        raise ValueError(f"{topic}: seeds must be a positive int, got {r['seeds']!r}")
    return {**r, "topic": topic}


def _error_row(topic: str, exc: BaseException) -> dict:
    return {"topic": topic, "workflow": f"{topic} (failed)", "metric": "", "dpacct": None,
            "dpacct_spread": "", "peer": "", "peer_value": None, "peer_spread": "",
            "seeds": 0, "verdict": ERROR, "why": f"{type(exc).__name__}: {exc}"}


def collect(topics: Sequence[str], seeds: int, quick: bool, package: str = PACKAGE,
            log: Callable[[str], None] | None = None) -> list[dict]:
    """Run every topic's ``rows(seeds, quick)``; failures become error rows."""
    out: list[dict] = []
    for topic in progress(topics, desc="topics", total=len(topics)):
        t0 = time.perf_counter()
        try:
            module = importlib.import_module(f"{package}.{topic}")
            rows = module.rows(seeds=seeds, quick=quick)
            out.extend(check_row(r, topic) for r in rows)
        except Exception as exc:  # a failing topic never stops the table
            if log is not None:
                log(traceback.format_exc())
            out.append(_error_row(topic, exc))
        if log is not None:
            log(f"{topic}: {time.perf_counter() - t0:.1f} s")
    return out


def _num(v: object) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, int | float):
        return f"{v:.4g}"
    return str(v)


def _cell(value: object, spread: object) -> str:
    s = _num(value)
    return f"{s} [{spread}]" if spread and s != "-" else s


def _escape(s: object) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def format_table(rows: Sequence[dict]) -> str:
    """The rows as one Markdown table (columns :data:`COLUMNS`)."""
    lines = ["| " + " | ".join(COLUMNS) + " |",
             "| --- | --- | ---: | ---: | --- | ---: | --- | --- |"]
    for r in rows:
        cells = (r["workflow"], r["metric"], _cell(r["dpacct"], r["dpacct_spread"]),
                 _cell(r["peer_value"], r["peer_spread"]), r["peer"], r["seeds"],
                 r["verdict"], r["why"])
        lines.append("| " + " | ".join(_escape(c) for c in cells) + " |")
    return "\n".join(lines)


def _jsonable(rows: Sequence[dict]) -> list[dict]:
    def fix(v: object) -> object:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if hasattr(v, "item"):  # numpy scalars
            return fix(v.item())
        return v

    return [{k: fix(v) for k, v in r.items()} for r in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=None,
                        help="seeds per comparison (default 100; 5 with --quick)")
    parser.add_argument("--quick", action="store_true", help="few seeds, short runs")
    parser.add_argument("--only", nargs="+", metavar="TOPIC",
                        help="run only these topic modules (names in benchmarks/algos)")
    parser.add_argument("--json", metavar="PATH", help="write the rows as JSON ('-': stdout)")
    parser.add_argument("--verbose", action="store_true",
                        help="print each topic's time and any traceback to stderr")
    args = parser.parse_args(argv)
    seeds = args.seeds if args.seeds is not None else (5 if args.quick else 100)
    if seeds < 1:
        parser.error(f"--seeds must be >= 1, got {seeds}")
    topics = discover(PACKAGE)
    if args.only:
        unknown = sorted(set(args.only) - set(topics))
        if unknown:
            parser.error(f"unknown topic(s) {unknown}; the topics are {topics}")
        topics = [t for t in topics if t in args.only]
    log = (lambda s: print(s, file=sys.stderr)) if args.verbose else None
    rows = collect(topics, seeds, args.quick, package=PACKAGE, log=log)
    print(f"# dpacct against the peers ({seeds} seeds{', quick' if args.quick else ''})\n")
    print(format_table(rows))
    if args.json:
        text = json.dumps({"seeds": seeds, "quick": args.quick, "rows": _jsonable(rows)},
                          indent=1)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w") as fh:
                fh.write(text + "\n")
    return 1 if any(r["verdict"] == ERROR for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
