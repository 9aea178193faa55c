"""Issue 37's schedule targets, measured now, and each unmet one's named cause switched off.

The issue asks for schedules at or below dp_accounting's default pessimistic PLD
(``PLDAccountant(value_discretization_interval=1e-4)``) with brackets at most 0.01 %
wide, through the ledger and the one-shot path, and the one-shot path no slower than
the ledger.  Each run here is one schedule (the rows of :mod:`benchmarks.ledger_phases`,
same generators and seeds, plus ``decaying 2.0, 1906 steps``: the issue's "first 1 906
steps of sigma 2 * 0.9999^t") answered by one *variant* in a fresh subprocess of this
checkout, the variants alternated round by round.  A variant is a path with options,
``PATH[:OPT=V,...]``:

* ``ledger``: a ``PrivacyAccountant`` fed one ``step(count=)`` a phase, ``epsilon(1e-5)``;
  ``grid=E`` builds it with ``grid=2**-E`` (a documented option: sound);
* ``oneshot``: ``schedule_mechanism(phases).epsilon(1e-5)``, each of its stages timed
  (:data:`STAGES`: the fine pass, the composer, the composer with more exact cells, the
  fast path at the one-shot step, the composer at a quarter step);

and, flagged ``experiment`` in the output (they patch the library in the child only):

* ``step=D`` (sound experiment): the ledger's history loss step (the one
  ``incremental._history_step``, before session 31 ``_coarse_step``, picks from the
  first block) divided by ``D``;
* ``fine=F`` (sound experiment): the blocks' fine grids up to ``F`` times finer
  (``block_rules.FINE_BUDGET``, ``EXACT_BUDGET``, ``EXACT_FACTOR`` and ``FINE_MAX``
  times ``F``, where :mod:`~dpacct.accountant.pld.incremental` reads them too);
* ``exact=N`` (sound experiment): the first ``N`` distinct steps kept as their own cells
  (``IncrementalEpsilon``'s ``exact_steps``; default 128), i.e. no rounding onto the
  grid for up to ``N`` distinct steps;
* ``roundoff=0`` (**unsound** experiment): every round-off bound of the composer's
  spectra set to 0 (``_spectral_error`` returns the inverse transform with zero error
  terms), what the answer would be without the round-off certificate;
* ``off=STAGE`` (**unsound as a timing of the library**, sound as an answer: the
  smallest of the remaining certified compositions): one stage of the one-shot path
  returns None (not composed).

``--bounds`` also asks ``epsilon_bounds(1e-5)`` (``--width W``: ``width=W``) after the
query: its lower end, the bracket's relative width and CPU.  Every row prints epsilon,
its gap to dp_accounting (:data:`benchmarks.schedule_oneshot.PEER_CACHE` or ``--peer
FILE``, e.g. the output of :mod:`benchmarks.ev37b_peer_decay`), CPU seconds
(``time.process_time``) medians over the rounds, and the peak RSS.

Run from the repository root::

    python -m benchmarks.ev37b_schedules --rows "100 phases x 10" \
        --variants ledger ledger:grid=16 oneshot --bounds --rounds 2
    python -m benchmarks.ev37b_schedules --old /tmp/old_checkout --variants ledger --bounds

``--old DIR`` runs every variant on that checkout's dpacct too, old and new alternated
(old, new per variant; the order reversed every other round).

Timings depend on the machine's load: compare the rows of one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from typing import Any

from benchmarks.checkouts import run_in_checkout, write_json
from benchmarks.ledger_phases import ROWS as LEDGER_ROWS
from benchmarks.schedule_oneshot import PEER_CACHE, SCHEDULE_SRC

__all__ = ["ROWS", "STAGES", "format_table", "main", "parse_variant", "split_label"]

ROWS = {
    name: LEDGER_ROWS[name]
    for name in (
        "100 phases x 10",
        "1000 phases x 10",
        "1000 phases x 10, sigma 1-2, q log-uniform",
        "decaying 1.5, 1906 steps",
        "decaying 2.0, 10000 steps",
    )
}
ROWS["decaying 2.0, 1906 steps"] = ("decay", 2.0, 1906)
#: the one-shot path's stages, as the child times them
STAGES = ("fine", "composer", "composer-exact", "fast", "composer-quarter")
#: options a variant may carry, and whether each is an unsound experiment
OPTIONS = {
    "grid": False, "step": False, "exact": False, "fine": False, "roundoff": True, "off": True,
}

_CHILD = r"""
import json, math, resource, sys, time
import numpy as np
path, opts, kind, s0, n, bounds, width = json.loads(sys.argv[1])
from dpacct.accountant.pld import incremental as _inc
if "step" in opts:
    if hasattr(_inc, "_history_step"):  # session 31 on
        _hist = _inc._history_step
        _inc._history_step = lambda b, k, d=1e-5: _hist(b, k, d) / float(opts["step"])
    else:
        _coarse = _inc._coarse_step
        _inc._coarse_step = lambda block: _coarse(block) / float(opts["step"])
if "fine" in opts:
    from dpacct.accountant.pld import block_rules as _br
    for _m in (_br, _inc):
        for _name in ("FINE_BUDGET", "EXACT_BUDGET", "EXACT_FACTOR", "FINE_MAX"):
            if hasattr(_m, _name):
                setattr(_m, _name, getattr(_m, _name) * int(opts["fine"]))
if "exact" in opts:
    _inc.IncrementalEpsilon.__init__.__kwdefaults__["exact_steps"] = int(opts["exact"])
if opts.get("roundoff") == "0":
    from dpacct.accountant.pld import groups as _g, online_direction as _od, pld_fft as _pf
    _orig = _pf._spectral_error
    def _no_roundoff(spec, n_, mults, norms, fwd=math.inf):
        return 0.0, _orig(spec, n_, 0, 0.0, 0.0)[1], 0.0
    for _m in (_g, _od, _pf):
        if hasattr(_m, "_spectral_error"):
            _m._spectral_error = _no_roundoff
from dpacct.accountant import PrivacyAccountant
from dpacct.accountant.pld import schedule_oneshot as _so
from dpacct.accountant.pld.schedule import schedule_mechanism
STAGE_CPU = {}
DEPTH = [0]
def _timed(name, fn, pick=None):
    def run(*a, **k):
        if DEPTH[0]:  # a stage inside a stage (the fine pass's fast_upper): the outer's
            return fn(*a, **k)
        stage = name if pick is None else pick(a, k)
        t = time.process_time()
        if opts.get("off") == stage:
            out = None if stage != "composer" else (None, 1e-3, 1.0)
        else:
            DEPTH[0] += 1
            try:
                out = fn(*a, **k)
            finally:
                DEPTH[0] -= 1
        STAGE_CPU[stage] = STAGE_CPU.get(stage, 0.0) + time.process_time() - t
        return out
    return run
def _which(a, k):
    if "exact_steps" in k and "step" in k:
        return "composer-quarter"
    return "composer-exact" if "exact_steps" in k else "composer"
if path == "oneshot":
    _so._fine_pass = _timed("fine", _so._fine_pass)
    _so._incremental_epsilon = _timed("composer", _so._incremental_epsilon, _which)
    _so.fast_upper = _timed("fast", _so.fast_upper)
""" + SCHEDULE_SRC + r"""t0 = time.process_time()
if path == "ledger":
    kw = {"grid": 2.0 ** -float(opts["grid"])} if "grid" in opts else {}
    ask = PrivacyAccountant(progress=False, **kw)
    for s, qq, k in sched:
        ask.step(noise_multiplier=s, sample_rate=qq, count=k)
else:
    ask = schedule_mechanism(sched, progress=False)
eps = float(ask.epsilon(1e-5))
out = {"epsilon": eps, "cpu": time.process_time() - t0, "stages": STAGE_CPU}
if bounds:
    t0 = time.process_time()
    kw = {} if width is None else {"width": width}
    out["lower"] = float(ask.epsilon_bounds(1e-5, **kw)[0])
    out["bounds_cpu"] = time.process_time() - t0
out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    """``"PATH[:OPT=V,...]"`` -> ``(path, {opt: value})``.

    Examples
    --------
    >>> parse_variant("ledger:grid=16,roundoff=0")
    ('ledger', {'grid': '16', 'roundoff': '0'})
    >>> parse_variant("oneshot")
    ('oneshot', {})
    """
    path, _, rest = text.partition(":")
    if path not in ("ledger", "oneshot"):
        raise ValueError(f"variant path must be 'ledger' or 'oneshot', got {path!r}")
    opts: dict[str, str] = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq or key not in OPTIONS or not value:
            raise ValueError(
                f"variant option must be one of {sorted(OPTIONS)} as OPT=V, got {item!r}"
            )
        opts[key] = value
    if "off" in opts and opts["off"] not in STAGES:
        raise ValueError(f"off must be one of {STAGES}, got {opts['off']!r}")
    if path == "ledger" and "off" in opts:
        raise ValueError("off applies to the oneshot path only")
    return path, opts


def experiment_flag(opts: dict[str, str]) -> str:
    """``""`` for the library as it is (a documented option included), else
    ``"experiment"`` or ``"UNSOUND experiment"`` (any option that is unsound).

    Examples
    --------
    >>> experiment_flag({"grid": "16"}), experiment_flag({"step": "4"})
    ('', 'experiment')
    >>> experiment_flag({"grid": "16", "roundoff": "0"})
    'UNSOUND experiment'
    """
    patched = [k for k in opts if k != "grid"]
    if not patched:
        return ""
    return "UNSOUND experiment" if any(OPTIONS[k] for k in patched) else "experiment"


def _run(
    row: tuple, variant: str, bounds: bool, width: float | None, timeout: float, root: str = "."
):
    path, opts = parse_variant(variant)
    arg = json.dumps([path, opts, *row, bounds, width])
    return run_in_checkout(root, sys.executable, [_CHILD, arg], timeout)


def split_label(label: str) -> tuple[str, str]:
    """A table label ``"[old |new ]VARIANT"`` -> ``(side, variant)`` (side ``""`` when
    no ``--old`` checkout is run).

    Examples
    --------
    >>> split_label("old ledger:grid=16"), split_label("oneshot")
    (('old', 'ledger:grid=16'), ('', 'oneshot'))
    """
    side, _, rest = label.partition(" ")
    return (side, rest) if side in ("old", "new") and rest else ("", label)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def format_table(results: dict[str, Any], peer: dict[str, Any]) -> str:
    """One line per row and variant: epsilon, its gap to dp_accounting, the lower end
    and relative width (with ``--bounds``), epsilon's CPU median and its ratio to the
    row's ``ledger`` variant, the bracket's CPU, the peak MB and the one-shot's stage
    CPU medians; an experiment's variant is flagged."""
    head = (
        "| schedule | variant | epsilon | gap to dp_accounting | lower | width | epsilon CPU s "
        "| x ledger | bounds CPU s | peak MB | stages CPU s |"
    )
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    for name, recs in results.items():
        ref = (peer.get(name) or {}).get("epsilon")
        ok_of = {v: [r for r in rs if r.get("status") == "ok"] for v, rs in recs.items()}
        base_key = "old ledger" if "old ledger" in ok_of else "ledger"
        base = _median([r["cpu"] for r in ok_of.get(base_key, [])])
        for variant, ok in ok_of.items():
            flag = experiment_flag(parse_variant(split_label(variant)[1])[1])
            label = f"{variant} ({flag})" if flag else variant
            if not ok:
                status = recs[variant][0].get("status") if recs[variant] else "not run"
                lines.append(f"| {name} | {label} | {status} |" + " |" * 8)
                continue
            eps = ok[0]["epsilon"]
            gap = f"{(eps - ref) / ref:+.2e}" if ref else "(no peer)"
            lo = ok[0].get("lower")
            lower = f"{lo:.9f}" if lo is not None else ""
            wid = f"{(eps - lo) / eps:.2e}" if lo is not None else ""
            cpu = _median([r["cpu"] for r in ok])
            ratio = f"{cpu / base:.2f}" if base else ""
            bcpu = _median([r["bounds_cpu"] for r in ok if "bounds_cpu" in r])
            stages = {}
            for r in ok:
                for k, v in r.get("stages", {}).items():
                    stages.setdefault(k, []).append(v)
            st = ", ".join(f"{k} {_median(v):.3g}" for k, v in stages.items())
            lines.append(
                f"| {name} | {label} | {eps:.9f} | {gap} | {lower} | {wid} | {cpu:.3g} | {ratio} "
                f"| {'' if bcpu is None else f'{bcpu:.3g}'} "
                f"| {max(r['peak_mb'] for r in ok):.0f} | {st} |"
            )
    return "\n".join(lines)


def load_peer(paths: Sequence[str]) -> dict[str, Any]:
    """dp_accounting's answers: :data:`PEER_CACHE` then each ``--peer`` file (later
    files win)."""
    out: dict[str, Any] = {}
    for p in (PEER_CACHE, *paths):
        try:
            with open(p) as fh:
                out.update(json.load(fh))
        except FileNotFoundError:
            if p != PEER_CACHE:
                raise
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ev37b_schedules")
    p.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    p.add_argument("--variants", nargs="+", default=["ledger", "ledger:grid=16", "oneshot"])
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--bounds", action="store_true", help="also epsilon_bounds(1e-5)")
    p.add_argument("--width", type=float, help="epsilon_bounds(width=W)")
    p.add_argument("--timeout", type=float, default=900.0)
    p.add_argument("--peer", nargs="*", default=[], help="more dp_accounting answer files")
    p.add_argument("--json", help="write the records to this file")
    p.add_argument(
        "--old", help="also run every variant on this checkout (its dpacct), alternated "
        "with this one: the labels 'old VARIANT' and 'new VARIANT', the CPU ratio against "
        "'old ledger'"
    )
    args = p.parse_args(argv)
    for v in args.variants:
        parse_variant(v)
    runs = [(v, v, ".") for v in args.variants]
    if args.old:
        runs = [
            (f"{side} {v}", v, root)
            for v in args.variants
            for side, root in (("old", args.old), ("new", "."))
        ]
    results: dict[str, Any] = {n: {lab: [] for lab, _, _ in runs} for n in args.rows}
    for r in range(args.rounds):
        for name in args.rows:
            order = runs if r % 2 == 0 else runs[::-1]
            for lab, v, root in order:
                rec = _run(ROWS[name], v, args.bounds, args.width, args.timeout, root)
                results[name][lab].append(rec)
                print(name, lab, json.dumps(rec), file=sys.stderr, flush=True)
    if args.json:
        write_json(args.json, results)
    print(format_table(results, load_peer(args.peer)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
