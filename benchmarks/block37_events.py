"""Issue 37, session 38: the two events slower than dp_accounting, their named causes off.

**Unsound experiments** (every variant but ``library`` and the peer): a module global of
the library is patched in a fresh process before the one timed call; the variants are
alternated round by round and each prints its CPU seconds (``time.process_time``) of
``from_dp_event(event).epsilon(delta)`` (the event built before the clock, as in
:mod:`benchmarks.events`) and its answer.

* Laplace x100 (b 20, delta 1e-6; named cause in session 36: the closed form's fixed
  numpy-call cost): ``no evaluation`` sets ``laplace_fold._MAX_STEPS = 0`` (the search
  does no delta evaluation and answers its ceiling ``k/b``: not a search, unsound as a
  timing of the answer) and ``one evaluation`` ``_MAX_STEPS = 1``.
* repeat-and-select Poisson, mean 3, of 1000 Poisson Gaussians (delta 1e-6; named cause
  in the brief: the construction of the deltahat PLD pair): ``deltahat pair prebuilt``
  builds the base's pessimistic PLD pair (``base._pair(True, PLDSettings(None))``, the
  call ``repeat_select._deltahat`` makes, both directions) in a first
  ``from_dp_event`` *before* the clock, and the timed ``from_dp_event(event).epsilon``
  is handed that pair instead of building its own (the same answer, the pair's cost
  moved out of the clock; the first construction may also warm module-level caches);
  ``no deltahat pair`` lets ``_deltahat`` use the RDP
  conversion and the base's own ``delta`` route instead of the pair (the pair's branch
  skipped by making ``has_pld`` false for it: the answer is still an upper bound, but may
  be looser).

Run from the repository root::

    python -m benchmarks.block37_events --rounds 7
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

EVENTS = {
    "laplace x100": ("de.SelfComposedDpEvent(de.LaplaceDpEvent(20.0), 100)", 1e-6),
    "repeat-and-select Poisson": (
        "de.RepeatAndSelectDpEvent(de.SelfComposedDpEvent(de.PoissonSampledDpEvent("
        "0.01, de.GaussianDpEvent(1.0)), 1000), 3.0, float('inf'))", 1e-6),
}

PATCHES = {
    "laplace x100": {
        "library": "",
        "one evaluation (unsound)": (
            "import dpacct.mechanisms.primitives.laplace_fold as _lf\n_lf._MAX_STEPS = 1\n"),
        "no evaluation (unsound)": (
            "import dpacct.mechanisms.primitives.laplace_fold as _lf\n_lf._MAX_STEPS = 0\n"),
    },
    "repeat-and-select Poisson": {
        "library": "",
        "deltahat pair prebuilt (cost moved out of the clock)": "PREBUILD",
        "no deltahat pair (RDP + base delta)": (
            "import dpacct.accountant.transformers.repeat_select as _rs\n"
            "_orig = _rs._deltahat\n"
            "class _NoPLD:\n"
            "    def __init__(self, m): self._m = m\n"
            "    def __getattr__(self, k): return getattr(self._m, k)\n"
            "    @property\n"
            "    def has_pld(self): return False\n"
            "class _Wrap:\n"
            "    def __init__(self, m): self.privacy = _NoPLD(m.privacy)\n"
            "_rs._deltahat = lambda m, a, r: _orig(_Wrap(m), a, r)\n"),
    },
}

_CHILD = """
import sys, time, json
from dp_accounting import dp_event as de
source, delta, side = sys.argv[1], float(sys.argv[2]), sys.argv[3]
patch = sys.argv[4]
event = eval(source)
if side == "peer":
    from dp_accounting.rdp import RdpAccountant
    c0 = time.process_time()
    a = RdpAccountant(); a.compose(event); eps = a.get_epsilon(delta)
    c1 = time.process_time()
else:
    from dpacct.dp_accounting import from_dp_event
    if patch == "PREBUILD":
        import numpy as np
        import dpacct.accountant.transformers.repeat_select as _rs
        PAIRS = []
        _orig = _rs._deltahat
        def _capture(mech, a, r):
            base = mech.privacy
            real = type(base)._pair
            def memo(*args, **kw):
                if not PAIRS:
                    PAIRS.append(real(base, *args, **kw))
                return PAIRS[0]
            object.__setattr__(base, "_pair", memo)
            return _orig(mech, a, r)
        _rs._deltahat = _capture
        from_dp_event(event)  # builds the pair (remove direction) once, before the clock
        PAIRS[0].delta(np.array([0.1, 1.0]))  # and loads its add direction
        _rs._deltahat = lambda mech, a, r: (
            object.__setattr__(mech.privacy, "_pair", lambda *x, **k: PAIRS[0]),
            _orig(mech, a, r))[1]
        c0 = time.process_time()
        eps = from_dp_event(event).epsilon(delta)
        c1 = time.process_time()
    else:
        exec(patch)
        c0 = time.process_time()
        eps = from_dp_event(event).epsilon(delta)
        c1 = time.process_time()
print(json.dumps({"cpu": c1 - c0, "answer": float(eps)}))
"""


def _child(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, *args], cwd=ROOT, capture_output=True,
                         text=True)
    if out.returncode:
        return {"cpu": float("nan"), "answer": float("nan"), "error": out.stderr[-400:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Alternate every variant of each event for ``--rounds``; print medians."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.block37_events")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--only", help="event names containing this")
    a = p.parse_args(argv)
    for name, (src, delta) in EVENTS.items():
        if a.only and a.only not in name:
            continue
        res: dict[str, list[dict]] = {}
        for _ in range(a.rounds):
            for v, patch in PATCHES[name].items():
                res.setdefault(v, []).append(_child([src, repr(delta), "ours", patch]))
            res.setdefault("dp_accounting RDP", []).append(
                _child([src, repr(delta), "peer", ""]))
        print(f"\n{name} (delta {delta})")
        print("| variant | median CPU ms | answer |")
        print("| --- | --- | --- |")
        for v, recs in res.items():
            cpus = [r["cpu"] * 1e3 for r in recs]
            err = recs[-1].get("error", "")
            print(f"| {v} | {statistics.median(cpus):.3f} | {recs[-1]['answer']!r} "
                  f"{err.splitlines()[-1] if err else ''}|")
    return 0


if __name__ == "__main__":
    sys.exit(main())
