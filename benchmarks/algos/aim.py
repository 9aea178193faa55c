"""AIM against Private-PGM's AIM (``mbi`` 2.0), at equal claimed privacy: utility and time.

The data: the generated adult-like table of :mod:`benchmarks.algos.synthesis` (seven
columns, 9 600 cells in the full domain), 5 000 rows; the workload is all 21 pair
marginals (the paper's 2-way workload, weights 1).  Error: the paper's metric, the
average over the workload of ``0.5 ||M_r(D)/|D| - M_r(model)/total||_1`` (total
variation), on the fitted model.  Time: CPU seconds (``time.process_time``) per run,
on a loaded machine (2 cores shared with other work): read the ratio, not the digits.

* dpacct: :func:`dpacct.calibrators.calibrate_aim` (the largest ``rho`` whose zCDP
  conversion meets ``(epsilon, delta)``) and :class:`dpacct.mechanisms.AIM`.
* Private-PGM: ``mbi`` 2.0 ships no AIM, so the peer is AIM written after the
  authors' reference ``mechanisms/aim.py`` (Private-PGM's repository) with ``mbi`` 2.0's
  estimator (``MirrorDescent``, 1 000 iterations, warm-started from the last model as
  the reference does): the same ``rho`` conversion, ``T = 16 d``, ``alpha = 0.9``, the
  same candidates, weights, quality and annealing.  Its model-size filter (80 MB) never
  binds on this domain and is left out.  The peer takes minutes a run, so it runs on
  fewer seeds (stated in the row) and its numbers are cached in
  ``benchmarks/data/aim_pgm.json`` with the command that made them; ``--peer`` reruns it.

Run: ``python -m benchmarks.algos.aim [--seeds 20] [--peer-seeds 3] [--peer]``.
``--in-loop SEEDS --eps 3 --out FILE`` runs dpacct's AIM with ``mbi``'s estimator as the
model every round reads (:func:`in_loop`; results cached in
``benchmarks/data/aim_inloop.json``): on the seeds run it picks the same marginals as
dpacct's own estimator for the first 13 to all rounds, so the estimator is not where a
gap to the peer would come from.
"""

from __future__ import annotations

import json
import math
import time
from itertools import combinations, pairwise
from pathlib import Path

import numpy as np

from .synthesis import _mbi, _paper_rho, _row, adult_like

N_ROWS = 5_000
DELTA = 1e-6
EPSILONS = (1.0, 3.0)
CACHE = Path(__file__).resolve().parents[1] / "data" / "aim_pgm.json"


def _tables(codes: np.ndarray, sizes, cliques) -> dict:
    out = {}
    for c in cliques:
        shape = tuple(sizes[a] for a in c)
        flat = np.ravel_multi_index(tuple(codes[:, a] for a in c), shape)
        out[c] = np.bincount(flat, minlength=math.prod(shape)).reshape(shape) * 1.0
    return out


def _error(real: dict, model_tables: dict) -> float:
    errs = []
    for c, t in real.items():
        m = np.asarray(model_tables[c], float)
        errs.append(0.5 * np.abs(t / t.sum() - m / m.sum()).sum())
    return float(np.mean(errs))


def ours(epsilon: float, seed: int, cols, data, codes, sizes) -> tuple[float, float]:
    from dpacct.calibrators import calibrate_aim

    start = time.process_time()
    aim = calibrate_aim(epsilon, DELTA, cols)
    fitted = aim.fit(data, rng=np.random.default_rng(seed))
    elapsed = time.process_time() - start
    names = [c.name for c in cols]
    pairs = list(combinations(range(len(cols)), 2))
    model = {(a, b): fitted.probability([names[a], names[b]]) for a, b in pairs}
    return _error(_tables(codes, sizes, pairs), model), elapsed


def peer(epsilon: float, seed: int, codes, names, sizes, info: dict | None = None
         ) -> tuple[float, float]:
    """AIM after Private-PGM's reference ``mechanisms/aim.py``, on ``mbi`` 2.0.

    ``(error, CPU seconds)``; ``info``, when given, receives the number of adaptive
    rounds and of annealing steps (what the refits' movement decided)."""
    import warnings

    mbi, MirrorDescent, _ = _mbi()
    start = time.process_time()
    rng = np.random.default_rng(seed)
    rho = _paper_rho(epsilon, DELTA)
    d = len(names)
    domain = mbi.Domain.fromdict(dict(zip(names, sizes, strict=True)))
    work = list(combinations(range(d), 2))
    cand = sorted({s for w in work for k in (1, 2) for s in combinations(w, k)},
                  key=lambda c: (len(c), c))
    weight = {r: sum(len(set(r) & set(w)) for w in work) for r in cand}
    answers = _tables(codes, sizes, cand)
    T = 16 * d
    sigma = math.sqrt(T / (2 * 0.9 * rho))
    epsilon_t = math.sqrt(8 * 0.1 * rho / T)
    meas = []
    for a in range(d):
        y = answers[(a,)] + rng.normal(0, sigma, sizes[a])
        meas.append(mbi.LinearMeasurement(y.ravel(), (names[a],), stddev=sigma))
    rho_used = d * 0.5 / sigma**2
    engine = MirrorDescent()

    def fit(warm):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return engine.estimate(domain, list(meas), iters=1000, warm_start=warm)

    def proj(model, c):
        return np.asarray(model.project(tuple(names[a] for a in c)).datavector(flatten=False))

    model = fit(None)
    terminate = False
    rounds = anneals = 0
    while not terminate:
        if rho - rho_used < 2 * (0.5 / sigma**2 + epsilon_t**2 / 8):
            remaining = rho - rho_used
            sigma = math.sqrt(1 / (2 * 0.9 * remaining))
            epsilon_t = math.sqrt(8 * 0.1 * remaining)
            terminate = True
        rho_used += epsilon_t**2 / 8 + 0.5 / sigma**2
        q = np.array([
            weight[r] * (np.abs(answers[r] - proj(model, r)).sum()
                         - math.sqrt(2 / math.pi) * sigma * answers[r].size)
            for r in cand
        ])
        sens = max(weight.values())
        p = np.exp(0.5 * epsilon_t / sens * (q - q.max()))
        r = cand[int(rng.choice(len(cand), p=p / p.sum()))]
        y = answers[r] + rng.normal(0, sigma, answers[r].shape)
        meas.append(mbi.LinearMeasurement(y.ravel(), tuple(names[a] for a in r), stddev=sigma))
        z = proj(model, r)
        model = fit(model)
        w = proj(model, r)
        rounds += 1
        if np.abs(w - z).sum() <= sigma * math.sqrt(2 / math.pi) * answers[r].size:
            sigma /= 2
            epsilon_t *= 2
            anneals += 1
    model = fit(model)
    elapsed = time.process_time() - start
    model_tables = {c: proj(model, c) for c in work}
    if info is not None:
        info.update(rounds=rounds, anneals=anneals)
    return _error({c: answers[c] for c in work}, model_tables), elapsed


def _peer_runs(path: Path, epsilons, start: int, count: int, command: str,
               codes, names, sizes) -> dict:
    """Run the peer on seeds ``start .. start + count - 1`` at each epsilon, merged into the
    cache at ``path``: seeds already cached are kept and skipped, the epsilons take turns
    seed by seed (a stopped run leaves both balanced), and the file is rewritten atomically
    after every run, so an interrupted run keeps every finished seed."""
    from benchmarks.checkouts import write_json

    cache = json.loads(path.read_text()) if path.exists() else {}
    version = _mbi()[2]
    if cache and (cache.get("mbi") != version or cache.get("rows") != N_ROWS
                  or cache.get("delta") != DELTA):
        raise SystemExit(f"{path} was made with mbi {cache.get('mbi')}, {cache.get('rows')} "
                         f"rows, delta {cache.get('delta')}; this run is mbi {version}, "
                         f"{N_ROWS} rows, delta {DELTA}: use another --cache")
    cache.setdefault("commands", []).append(command)
    cache.update({"mbi": version, "rows": N_ROWS, "delta": DELTA})
    cache.setdefault("runs", {})
    for s in range(start, start + count):
        for eps in epsilons:
            runs = cache["runs"].setdefault(str(eps), [])
            if any(r["seed"] == s for r in runs):
                continue
            info: dict = {}
            e, t = peer(eps, s, codes, names, sizes, info)
            runs.append({"seed": s, "error": e, "cpu_seconds": t, **info})
            runs.sort(key=lambda r: r["seed"])
            write_json(str(path), cache)
    return cache


def _paired_setup():
    """What the two paired diagnostics share: ``mbi``, its estimator, the data set, its
    codes, sizes and names, the 2-way workload, its real tables and ``mbi``'s domain."""
    from dpacct.mechanisms.algorithms.synthesis import encode

    mbi, MirrorDescent, _ = _mbi()
    cols, data = adult_like(N_ROWS)
    codes = encode(cols, data)
    sizes = tuple(c.size for c in cols)
    names = [c.name for c in cols]
    work = list(combinations(range(len(cols)), 2))
    real = _tables(codes, sizes, work)
    domain = mbi.Domain.fromdict(dict(zip(names, sizes, strict=True)))
    return mbi, MirrorDescent, cols, data, codes, sizes, names, work, real, domain


def estimator_check(epsilon: float, seeds: int, iters=(1000, 10000)) -> list[tuple]:
    """Where a utility gap could come from: the estimate.  For each seed, dpacct's AIM is
    run, and ``mbi`` 2.0's estimator (``MirrorDescent`` from a cold start, ``iters``
    iterations) is fitted to exactly the measurements dpacct's run made (each marginal's
    inverse-variance combination, with its standard deviation).  Returns ``(seed,
    dpacct's error, [mbi's error at each iters])``: equal errors at convergence mean the
    two estimators agree and a gap lies elsewhere (selection, budget, or the seeds)."""
    import warnings

    import dpacct.mechanisms.algorithms.synthesis_aim as sa
    from dpacct.calibrators import calibrate_aim

    mbi, MirrorDescent, cols, data, _, _, names, work, real, domain = _paired_setup()
    last: dict = {}
    fit = sa._Model.fit

    def spy(model):                   # keep the run's final model (its measurements)
        fit(model)
        last["model"] = model

    out = []
    sa._Model.fit = spy
    try:
        for seed in range(seeds):
            calibrate_aim(epsilon, DELTA, cols).fit(data, rng=np.random.default_rng(seed))
            m = last["model"]
            mine = _error(real, {c: m.marginal(c) for c in work})
            meas = [mbi.LinearMeasurement((m.sums[c] / m.precision[c]).ravel(),
                                          tuple(names[a] for a in c),
                                          stddev=1.0 / math.sqrt(m.precision[c]))
                    for c in m.sums]
            theirs = []
            for it in iters:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est = MirrorDescent().estimate(domain, meas, iters=it)
                theirs.append(_error(real, {c: np.asarray(est.project(
                    tuple(names[a] for a in c)).datavector(flatten=False)) for c in work}))
            out.append((seed, mine, theirs))
    finally:
        sa._Model.fit = fit
    return out


def _halvings(sigmas) -> int:
    """Annealing steps in a run's round noise scales (each halves the previous one)."""
    return sum(b == a / 2 for a, b in pairwise(sigmas))


def in_loop(epsilon: float, seeds, iters: int = 1000, warm: bool = True,
            final_iters: int = 1000) -> list[dict]:
    """Which part of the estimate decides the utility: dpacct's AIM with ``mbi`` 2.0's
    estimator *inside* the loop.  Every round of dpacct's run (its filter, sigma, epsilon,
    candidates, scores and annealing rule, unchanged) reads the model of ``mbi``'s
    ``MirrorDescent`` (``iters`` iterations, warm-started from the previous round's model
    when ``warm``, as the reference does) fitted to the same measurements, instead of
    dpacct's projection + IPF.  Per seed (paired: the same ``rng`` seed as dpacct's own
    run) it returns dpacct's own error, and for the in-loop run the error of ``mbi``'s
    last model refitted ``final_iters`` more iterations (as the peer ends) and of
    dpacct's estimator on the same final measurements, with the rounds and annealings."""
    import warnings

    import dpacct.mechanisms.algorithms.synthesis_aim as sa
    from dpacct.calibrators import calibrate_aim

    mbi, MirrorDescent, cols, data, _, _, names, work, real, domain = _paired_setup()
    engine = MirrorDescent()
    last: dict = {}

    def est(meas, n, start):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return engine.estimate(domain, list(meas), iters=n, warm_start=start)

    def proj(model, c):
        return np.asarray(model.project(tuple(names[a] for a in c)).datavector(flatten=False))

    class MbiModel(sa._Model):
        def __init__(self, sizes_):
            super().__init__(sizes_)
            self.meas: list = []
            self.est = None
            last["model"] = self

        def add(self, clique, y, sigma):
            super().add(clique, y, sigma)
            self.meas.append(mbi.LinearMeasurement(
                np.asarray(y, float).ravel(), tuple(names[a] for a in clique), stddev=sigma))

        def fit(self):
            super().fit()          # dpacct's estimate too (the fitted synthesizer's)
            self.est = est(self.meas, iters, self.est if warm else None)

        def marginal(self, clique):
            return proj(self.est, clique)

    out = []
    keep = sa._Model
    try:
        for seed in seeds:
            start = time.process_time()
            plain = calibrate_aim(epsilon, DELTA, cols).fit(data, rng=np.random.default_rng(seed))
            mine = _error(real, {c: plain.probability([names[a] for a in c]) for c in work})
            t_mine = time.process_time() - start
            sa._Model = MbiModel
            start = time.process_time()
            fitted = calibrate_aim(epsilon, DELTA, cols).fit(data,
                                                              rng=np.random.default_rng(seed))
            sa._Model = keep
            m = last["model"]
            final = est(m.meas, final_iters, m.est) if final_iters else m.est
            t_loop = time.process_time() - start
            sigmas = [p for k, p, _ in fitted.privacy_log if k == "gaussian"][len(cols):]
            own = [p for k, p, _ in plain.privacy_log if k == "gaussian"][len(cols):]
            out.append({
                "seed": seed, "dpacct": mine, "dpacct_rounds": len(plain.selected),
                "dpacct_cpu": t_mine,
                "loop_mbi_final": _error(real, {c: proj(final, c) for c in work}),
                "loop_dpacct_final": _error(real, {c: fitted.probability(
                    [names[a] for a in c]) for c in work}),
                "loop_rounds": len(fitted.selected),
                "loop_anneals": _halvings(sigmas), "dpacct_anneals": _halvings(own),
                "loop_cpu": t_loop, "loop_sigmas": sigmas, "dpacct_sigmas": own,
                "dpacct_selected": [list(c) for c in plain.selected],
                "loop_selected": [list(c) for c in fitted.selected],
            })
    finally:
        sa._Model = keep
    return out


def _summary(values) -> str:
    q1, med, q3 = np.quantile(np.asarray(values, float), [0.25, 0.5, 0.75])
    return f"{med:.5f} [{q1:.5f}-{q3:.5f}]"


def rows(seeds: int = 100, quick: bool = False) -> list[dict]:
    """dpacct's AIM on ``seeds`` seeds (3 when quick) beside the cached peer runs."""
    from dpacct.mechanisms.algorithms.synthesis import encode

    cols, data = adult_like(N_ROWS)
    codes = encode(cols, data)
    sizes = tuple(c.size for c in cols)
    cache = json.loads(CACHE.read_text()) if CACHE.exists() else {}
    name = f"Private-PGM AIM (mbi {cache['mbi']}, cached)" if cache else "Private-PGM (no cache)"
    out = []
    for eps in EPSILONS:
        res = [ours(eps, s, cols, data, codes, sizes) for s in range(3 if quick else seeds)]
        runs = cache.get("runs", {}).get(str(eps))
        for k, metric in ((0, "2-way workload TVD of the model"), (1, "CPU seconds per run")):
            mine = [r[k] for r in res]
            theirs = None if not runs else [r["error" if k == 0 else "cpu_seconds"] for r in runs]
            why = ""
            if theirs:
                q1, q3 = np.quantile(theirs, [0.25, 0.75])
                inside = "inside" if q1 <= np.median(mine) <= q3 else "outside"
                why = (f"peer: {len(theirs)} cached seeds (minutes a run); dpacct's median "
                       f"{inside} the peer's IQR")
            out.append(_row(f"AIM eps {eps:g}", metric, mine, name, theirs, why=why))
    return out


def main() -> None:
    import argparse
    import sys

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--peer-seeds", type=int, default=3)
    parser.add_argument("--peer", action="store_true", help="rerun the peer and cache it")
    parser.add_argument("--peer-seed-start", type=int, default=1000)
    parser.add_argument("--eps", type=float, nargs="*", default=list(EPSILONS))
    parser.add_argument("--cache", type=Path, default=CACHE, help="the peer's cache file")
    parser.add_argument("--estimator-check", type=int, default=0, metavar="SEEDS",
                        help="fit mbi's estimator to dpacct's measurements on SEEDS seeds")
    parser.add_argument("--in-loop", type=int, default=0, metavar="SEEDS",
                        help="dpacct's AIM with mbi's estimator in the loop on SEEDS seeds")
    parser.add_argument("--seed-start", type=int, default=0)
    parser.add_argument("--iters", type=int, default=1000)
    parser.add_argument("--cold", action="store_true", help="in-loop fits without warm start")
    parser.add_argument("--out", type=Path, help="merge the --in-loop results into this JSON")
    args = parser.parse_args()
    if args.in_loop:
        from benchmarks.checkouts import write_json

        for eps in args.eps:
            for seed in range(args.seed_start, args.seed_start + args.in_loop):
                res = in_loop(eps, [seed], iters=args.iters, warm=not args.cold)
                r = res[0]
                print(f"eps {eps:g} seed {r['seed']:3d} dpacct {r['dpacct']:.5f} "
                      f"({r['dpacct_rounds']} rounds, {r['dpacct_anneals']} anneals)  "
                      f"in-loop mbi: {r['loop_mbi_final']:.5f}"
                      f" / dpacct's estimate {r['loop_dpacct_final']:.5f} "
                      f"({r['loop_rounds']} rounds, {r['loop_anneals']} anneals, "
                      f"{r['loop_cpu']:.0f} s)", flush=True)
                if args.out:           # merged after every seed (an interrupted run keeps it)
                    old = json.loads(args.out.read_text()) if args.out.exists() else {}
                    key = f"eps {eps:g} iters {args.iters} {'cold' if args.cold else 'warm'}"
                    done = {x["seed"]: x for x in old.get(key, [])}
                    done[r["seed"]] = r
                    old[key] = [done[k] for k in sorted(done)]
                    write_json(str(args.out), old)
        return
    if args.estimator_check:
        for eps in args.eps:
            rows_ = estimator_check(eps, args.estimator_check)
            print(f"eps {eps:g}: seed, dpacct error, mbi MirrorDescent (cold) at 1000 / 10000 "
                  "iterations on the same measurements")
            for seed, mine, theirs in rows_:
                print(f"  {seed:3d} {mine:.5f}  " + " / ".join(f"{t:.5f}" for t in theirs))
            rel = np.array([[t / r[1] - 1 for t in r[2]] for r in rows_])
            print("  median relative difference mbi / dpacct - 1: "
                  + " / ".join(f"{v:+.2%}" for v in np.median(rel, axis=0)))
        return
    cols, data = adult_like(N_ROWS)
    names = [c.name for c in cols]
    from dpacct.mechanisms.algorithms.synthesis import encode

    codes = encode(cols, data)
    sizes = tuple(c.size for c in cols)
    cache = json.loads(args.cache.read_text()) if args.cache.exists() else {}
    if args.peer:
        if _mbi() is None:
            raise SystemExit("mbi is not installed (pip install mbi==2.0.0)")
        cache = _peer_runs(args.cache, args.eps, args.peer_seed_start, args.peer_seeds,
                           "python -m benchmarks.algos.aim " + " ".join(sys.argv[1:]),
                           codes, names, sizes)
    if args.seeds < 1:
        return
    print(f"{'eps':>4} {'dpacct error':>28} {'dpacct CPU s':>24} | "
          f"{'Private-PGM AIM error':>28} {'CPU s':>24}")
    for eps in args.eps:
        res = [ours(eps, s, cols, data, codes, sizes) for s in range(args.seeds)]
        mine = f"{_summary([e for e, _ in res])} {_summary([t for _, t in res])}"
        runs = cache.get("runs", {}).get(str(eps))
        theirs = ("(not run)" if not runs else
                  f"{_summary([r['error'] for r in runs])} "
                  f"{_summary([r['cpu_seconds'] for r in runs])} ({len(runs)} seeds)")
        gap = ""
        if runs:
            err_ratio = (np.median([e for e, _ in res])
                         / np.median([r["error"] for r in runs]))
            cpu_ratio = (np.median([r["cpu_seconds"] for r in runs])
                         / np.median([t for _, t in res]))
            gap = (f"   dpacct median / peer median - 1 = {err_ratio - 1:+.1%}, "
                   f"peer CPU / dpacct CPU = {cpu_ratio:.0f}x")
        print(f"{eps:>4} {mine} | {theirs}   dpacct {args.seeds} seeds{gap}")


if __name__ == "__main__":  # pragma: no cover - a manual run
    main()
