"""Every dp_accounting event dpacct accepts, beside dp_accounting's RDP and PLD accountants.

    python -m benchmarks.events                          # every row, ours and both peers
    python -m benchmarks.events --only repeat            # rows whose name contains it
    python -m benchmarks.events --old-python python      # + another install of dpacct
    python -m benchmarks.events --rounds 3 --json out.json

One row per event (a ``dp_accounting.dp_event`` tree, under the relation in the
``rel`` column), each side measured in a *fresh process* (``python -c``), imports
excluded: dpacct is ``from_dp_event(event, ...).epsilon(delta)`` (under ``REPLACE_ONE``
with ``replace_one_sensitivity=1``, dp_accounting's reading of the noise), the peers are
``RdpAccountant`` and ``PLDAccountant`` with their default settings (orders; value
discretisation interval 1e-4), ``compose(event)`` then ``get_epsilon(delta)``.  Columns:
each side's epsilon, CPU seconds (``time.process_time``, medians over ``--rounds``,
the sides alternated within a round), peak MB of the whole process (``ru_maxrss``,
imports included, as a user sees it) and the peak above the post-import resident size
(the call alone, from ``VmHWM`` after resetting it), then ours / the fastest peer whose
epsilon is at or above ours (``fastest-tight``: the speed ratio the issue asks to be
<= 1), and ours / RDP's and ours / PLD's epsilon.  dp_accounting's PLD answer is not
certified (no round-off or truncation bound), dp_accounting's RDP one is; a peer that
refuses the event shows ``-``.

With ``--old-python PY`` each round also runs dpacct's side under the interpreter ``PY``
(e.g. the system python, which imports /work/main), alternating with the new one; the
``old`` columns give its epsilon and CPU seconds, and ``new <= old`` checks that every
answer is equal (to 1e-12 relative) or tighter.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import textwrap

#: (name, relation, delta, event source): the event is ``eval``'d with ``de`` bound to
#: ``dp_accounting.dp_event`` (a string, so that each fresh process builds its own)
ROWS: list[tuple[str, str, float, str]] = [
    ("gaussian", "ADD_OR_REMOVE_ONE", 1e-6, "de.GaussianDpEvent(1.0)"),
    ("gaussian x100 (self-composed)", "ADD_OR_REMOVE_ONE", 1e-6,
     "de.SelfComposedDpEvent(de.GaussianDpEvent(10.0), 100)"),
    ("laplace", "ADD_OR_REMOVE_ONE", 1e-6, "de.LaplaceDpEvent(1.0)"),
    ("laplace x100", "ADD_OR_REMOVE_ONE", 1e-6,
     "de.SelfComposedDpEvent(de.LaplaceDpEvent(20.0), 100)"),
    ("discrete laplace x10", "ADD_OR_REMOVE_ONE", 1e-6,
     "de.SelfComposedDpEvent(de.DiscreteLaplaceDpEvent(0.5, 1), 10)"),
    ("randomized response (k=2) x10", "REPLACE_ONE", 1e-6,
     "de.SelfComposedDpEvent(de.RandomizedResponseDpEvent(0.5, 2), 10)"),
    ("zCDP rho 0.1 x10", "ADD_OR_REMOVE_ONE", 1e-6,
     "de.SelfComposedDpEvent(de.ZCDpEvent(0.1), 10)"),
    ("Poisson Gaussian q 0.01 s 1.0 x1000", "ADD_OR_REMOVE_ONE", 1e-6,
     "de.SelfComposedDpEvent(de.PoissonSampledDpEvent(0.01, de.GaussianDpEvent(1.0)), 1000)"),
    ("Poisson Gaussian q 0.004 s 0.8 x10000", "ADD_OR_REMOVE_ONE", 1e-5,
     "de.SelfComposedDpEvent(de.PoissonSampledDpEvent(0.004, de.GaussianDpEvent(0.8)), 10000)"),
    ("Poisson Laplace q 0.01 x1000", "ADD_OR_REMOVE_ONE", 1e-6,
     "de.SelfComposedDpEvent(de.PoissonSampledDpEvent(0.01, de.LaplaceDpEvent(1.0)), 1000)"),
    ("fixed-size Gaussian 256/60000 x1000", "REPLACE_ONE", 1e-6,
     "de.SelfComposedDpEvent(de.SampledWithoutReplacementDpEvent(60000, 256, "
     "de.GaussianDpEvent(1.0)), 1000)"),
    ("composed: Gaussian + Laplace + Poisson Gaussian x100", "ADD_OR_REMOVE_ONE", 1e-6,
     "de.ComposedDpEvent([de.GaussianDpEvent(5.0), de.LaplaceDpEvent(10.0), "
     "de.SelfComposedDpEvent(de.PoissonSampledDpEvent(0.01, de.GaussianDpEvent(1.0)), 100)])"),
    ("tree aggregation s 2, 1000 steps", "ADD_OR_REMOVE_ONE", 1e-6,
     "de.SingleEpochTreeAggregationDpEvent(2.0, 1000)"),
    ("repeat-and-select geometric, mean 3, of 1000 Poisson Gaussians", "ADD_OR_REMOVE_ONE",
     1e-6, "de.RepeatAndSelectDpEvent(de.SelfComposedDpEvent(de.PoissonSampledDpEvent("
     "0.01, de.GaussianDpEvent(1.0)), 1000), 3.0, 1.0)"),
    ("repeat-and-select logarithmic, mean 3, of 1000 Poisson Gaussians", "ADD_OR_REMOVE_ONE",
     1e-6, "de.RepeatAndSelectDpEvent(de.SelfComposedDpEvent(de.PoissonSampledDpEvent("
     "0.01, de.GaussianDpEvent(1.0)), 1000), 3.0, 0.0)"),
    ("repeat-and-select Poisson, mean 3, of 1000 Poisson Gaussians", "ADD_OR_REMOVE_ONE",
     1e-6, "de.RepeatAndSelectDpEvent(de.SelfComposedDpEvent(de.PoissonSampledDpEvent("
     "0.01, de.GaussianDpEvent(1.0)), 1000), 3.0, float('inf'))"),
    ("repeat-and-select geometric, mean 10, of a Gaussian", "ADD_OR_REMOVE_ONE", 1e-6,
     "de.RepeatAndSelectDpEvent(de.GaussianDpEvent(4.0), 10.0, 1.0)"),
    ("mixture of Gaussians x100", "ADD_OR_REMOVE_ONE", 1e-6,
     "de.SelfComposedDpEvent(de.MixtureOfGaussiansDpEvent(1.0, [0.0, 1.0], [0.99, 0.01]), 100)"),
    ("truncated subsampled Gaussian x1000", "ADD_OR_REMOVE_ONE", 1e-5,
     "de.SelfComposedDpEvent(de.TruncatedSubsampledGaussianDpEvent(60000, 0.004, 300, 1.0), "
     "1000)"),
]

#: the child: builds the event, times one accounting call, prints one JSON line
_CHILD = textwrap.dedent(
    """
    import json, math, resource, sys, time
    side, source, rel, delta = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])

    def status_kb(field):
        with open('/proc/self/status') as fh:
            for line in fh:
                if line.startswith(field + ':'):
                    return int(line.split()[1])

    from dp_accounting import dp_event as de
    from dp_accounting import NeighboringRelation as NR
    relation = getattr(NR, rel)
    if side == 'ours':
        from dpacct.dp_accounting import from_dp_event
    elif side == 'rdp':
        from dp_accounting.rdp import RdpAccountant
    else:
        from dp_accounting.pld import PLDAccountant
    event = eval(source)
    base_kb = status_kb('VmRSS')
    try:
        with open('/proc/self/clear_refs', 'w') as fh:
            fh.write('5')
    except OSError:
        pass
    t0 = time.process_time()
    try:
        if side == 'ours':
            # under REPLACE_ONE, dp_accounting's reading of the noise parameter (against
            # C, no halving), so that both sides answer the same question
            mech = from_dp_event(event, neighboring_relation=relation,
                                 replace_one_sensitivity=1.0)
            eps = float(mech.epsilon(delta))
        else:
            acct = (RdpAccountant if side == 'rdp' else PLDAccountant)(
                neighboring_relation=relation)
            acct.compose(event)
            eps = float(acct.get_epsilon(delta))
        error = None
    except Exception as exc:  # a peer that refuses the event
        eps, error = math.nan, f'{type(exc).__name__}: {exc}'[:200]
    cpu = time.process_time() - t0
    out = {'eps': eps, 'cpu': cpu, 'error': error,
           'peak_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           'call_mb': max(0, status_kb('VmHWM') - base_kb) / 1024}
    print(json.dumps(out))
    """
)


def run_side(python: str, side: str, row: tuple[str, str, float, str]) -> dict:
    """One measurement in a fresh process."""
    _, rel, delta, source = row
    proc = subprocess.run(
        [python, "-c", _CHILD, side, source, rel, repr(delta)],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        return {"eps": math.nan, "cpu": math.nan, "peak_mb": math.nan, "call_mb": math.nan,
                "error": tail[0][:200]}
    return json.loads(lines[-1])


def _median(runs: list[dict], key: str) -> float:
    vals = [r[key] for r in runs if math.isfinite(r[key])]
    return statistics.median(vals) if vals else math.nan


def measure_row(row, rounds: int, old_python: str | None) -> dict:
    sides = ["ours", "rdp", "pld"] + (["old"] if old_python else [])
    runs: dict[str, list[dict]] = {s: [] for s in sides}
    for k in range(rounds):
        order = sides if k % 2 == 0 else sides[::-1]  # alternate who goes first
        for side in order:
            if side == "old":
                runs[side].append(run_side(old_python, "ours", row))
            else:
                runs[side].append(run_side(sys.executable, side, row))
    res: dict = {"row": row[0], "rel": row[1], "delta": row[2]}
    for side in sides:
        res[side] = {
            "eps": runs[side][0]["eps"],
            "cpu": _median(runs[side], "cpu"),
            "peak_mb": _median(runs[side], "peak_mb"),
            "call_mb": _median(runs[side], "call_mb"),
            "error": runs[side][0]["error"],
        }
    ours = res["ours"]
    tight = [res[p] for p in ("rdp", "pld") if res[p]["eps"] >= ours["eps"]]
    res["fastest_tight_cpu"] = min((p["cpu"] for p in tight), default=math.nan)
    return res


def _f(x: float, spec: str) -> str:
    return "-" if not math.isfinite(x) else format(x, spec)


def _mb(side: dict) -> str:
    return f"{_f(side['peak_mb'], '.0f')} / {_f(side['call_mb'], '.0f')}"


def format_row(r: dict) -> str:
    o, rdp, pld = r["ours"], r["rdp"], r["pld"]
    cells = [
        r["row"], r["rel"].split("_")[0].lower(), f"{r['delta']:g}",
        _f(o["eps"], ".6f"), _f(o["cpu"], ".3f"), _mb(o),
        _f(rdp["eps"], ".6f"), _f(rdp["cpu"], ".3f"), _mb(rdp),
        _f(pld["eps"], ".6f"), _f(pld["cpu"], ".3f"), _mb(pld),
        _f(o["cpu"] / r["fastest_tight_cpu"], ".2f"),
        _f(o["eps"] / rdp["eps"], ".5f"), _f(o["eps"] / pld["eps"], ".5f"),
    ]
    if "old" in r:
        old = r["old"]
        tighter = o["eps"] <= old["eps"] * (1 + 1e-12)
        cells += [_f(old["eps"], ".6f"), _f(old["cpu"], ".3f"), "yes" if tighter else "NO"]
    return "| " + " | ".join(cells) + " |"


HEADER = (
    "| event | rel | delta | dpacct eps | CPU s | MB (peak / call) | dp_acc RDP eps | CPU s "
    "| MB | dp_acc PLD eps | CPU s | MB | CPU / fastest-tight | eps / RDP | eps / PLD |"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run the rows whose name contains this")
    parser.add_argument("--rounds", type=int, default=1, help="rounds per row (median)")
    parser.add_argument("--old-python", help="also run dpacct's side under this python")
    parser.add_argument("--json", metavar="PATH", help="write every row to this file")
    args = parser.parse_args(argv)
    rows = [r for r in ROWS if not args.only or args.only in r[0]]
    header = HEADER
    if args.old_python:
        header += " old eps | old CPU s | new <= old |"
    print(header)
    print("|" + " --- |" * (header.count("|") - 1))
    out = []
    for row in rows:
        res = measure_row(row, args.rounds, args.old_python)
        out.append(res)
        print(format_row(res), flush=True)
    errors = [(r["row"], s, r[s]["error"]) for r in out for s in r
              if isinstance(r[s], dict) and r[s].get("error")]
    for name, side, err in errors:
        print(f"  {name}: {side} refused or failed: {err}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
