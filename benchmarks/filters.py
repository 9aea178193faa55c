"""Steps a privacy filter admits before it refuses: adaptive filters against the ceiling.

    python -m benchmarks.filters                 # both tables
    python -m benchmarks.filters --json out.json

Issue 40's table.  Budgets epsilon 1, 3 and 8 at delta 1e-5.  Each cell feeds
``PrivacyAccountant(budget_epsilon=eps, budget_delta=1e-5, adaptive=...)`` one step at
a time (``acct.step(noise_multiplier=sigma_t, sample_rate=q)``, the call a training
loop makes) until :class:`BudgetExceededError`, and prints the steps admitted:

* ``renyi`` -- today's fully adaptive filter (``adaptive=True``: one Renyi order fixed
  at the first step, Feldman & Zrnic 2021);
* ``renyi_orders`` -- Renyi orders within 13 % of the one-order filter's, a mixture
  with weights fixed at the first step so that it never admits fewer copies of the
  first step than ``renyi`` (``adaptive="renyi_orders"``, docs/theory/renyi_filter.md);
* ``renyi_orders_wide`` -- every order of the grid, a quarter of the weight spread
  (``adaptive="renyi_orders_wide"``: far more steps when the schedule moves, a few per
  cent fewer when it does not);
* ``gdp`` -- Smith & Thakurta 2022's Gaussian-DP filter (``adaptive="gdp"``): full-batch
  steps only, so ``n/a`` at q = 0.01;
* ``pld`` -- the ceiling: the non-adaptive filter (``adaptive=False``), the engine's
  PLD accounting of the same schedule fixed in advance (valid only for a schedule that
  does not depend on the outputs).

Table 1: q = 0.01, sigma 0.8, 1.0, 1.5 held constant, then three schedules that move
after the first step ("1.5 then 0.8": one step at 1.5, then 0.8 until refused).
Table 2: full batch (q = 1), sigma 5, 10, 20 constant, where the GDP filter applies, with
the peer: OpenDP's privacy filter over its fully adaptive composition in zCDP
(``make_privacy_filter(make_fully_adaptive_composition(..., zCDP), 1, rho)``, Gaussian
queries ``make_gaussian(scale=sigma)``), ``rho`` the largest whose OpenDP conversion
``make_zCDP_to_approxDP`` gives at most the budget's epsilon at its delta (bisected).
OpenDP has no subsampled Gaussian, so no peer in table 1.  The CPU seconds
(``time.process_time``) of each row's dpacct runs and of the peer's filter loop are
printed; the machine is shared, so they are indicative only.
"""

from __future__ import annotations

import argparse
import time

BUDGETS = (1.0, 3.0, 8.0)
DELTA = 1e-5
KINDS = (
    ("renyi", True),
    ("renyi_orders", "renyi_orders"),
    ("renyi_orders_wide", "renyi_orders_wide"),
    ("gdp", "gdp"),
    ("pld", False),
)
SUBSAMPLED = [
    ("0.8", lambda t: 0.8),
    ("1.0", lambda t: 1.0),
    ("1.5", lambda t: 1.5),
    ("1.5 then 0.8", lambda t: 1.5 if t == 0 else 0.8),
    ("1.0 then 0.8", lambda t: 1.0 if t == 0 else 0.8),
    ("0.8 then 1.5", lambda t: 0.8 if t == 0 else 1.5),
]
FULL_BATCH = [("5", lambda t: 5.0), ("10", lambda t: 10.0), ("20", lambda t: 20.0)]
LIMIT = 10**6


def admitted(kind, schedule, q: float, eps: float) -> int | None:
    """Steps the filter admits before refusing (None: the filter does not take them)."""
    from dpacct.accountant import PrivacyAccountant
    from dpacct.accountant.ledger import BudgetExceededError

    acct = PrivacyAccountant(budget_epsilon=eps, budget_delta=DELTA, adaptive=kind)
    n = 0
    try:
        while n < LIMIT:
            acct.step(noise_multiplier=schedule(n), sample_rate=q)
            n += 1
    except BudgetExceededError:
        return n
    except ValueError:
        return None  # the GDP filter refuses subsampled steps
    raise RuntimeError(f"{kind} admitted {LIMIT} steps: raise LIMIT")


def opendp_admitted(sigma: float, eps: float) -> tuple[int, float] | None:
    """Gaussian queries OpenDP's zCDP privacy filter admits, and the loop's CPU seconds
    (None without OpenDP)."""
    try:
        import opendp.prelude as dp
    except ImportError:  # pragma: no cover - the bench extra is not installed
        return None
    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)

    def eps_of(rho: float) -> float:
        gauss = dp.m.make_gaussian(*space, scale=(2.0 * rho) ** -0.5)
        return dp.c.make_zCDP_to_approxDP(gauss).map(1.0).epsilon(DELTA)

    lo, hi = 0.0, 1.0
    while eps_of(hi) <= eps:
        lo, hi = hi, 2.0 * hi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if eps_of(mid) <= eps else (lo, mid)
    odometer = dp.c.make_fully_adaptive_composition(*space, dp.zero_concentrated_divergence())
    queryable = dp.c.make_privacy_filter(odometer, d_in=1.0, d_out=lo)([0.0])
    query = dp.m.make_gaussian(*space, scale=sigma)
    n, t0 = 0, time.process_time()
    while n < LIMIT:
        try:
            queryable(query)
        except dp.OpenDPException:
            break
        n += 1
    return n, time.process_time() - t0


def table(rows, q: float) -> list[dict]:
    out = []
    for name, schedule in rows:
        for eps in BUDGETS:
            row = {"q": q, "sigma": name, "epsilon": eps}
            t0 = time.process_time()
            for label, kind in KINDS:
                row[label] = admitted(kind, schedule, q, eps)
            row["cpu_s"] = time.process_time() - t0
            if q == 1.0:
                peer = opendp_admitted(schedule(0), eps)
                row["opendp_zcdp"], row["opendp_cpu_s"] = peer if peer else (None, None)
            out.append(row)
            _print_row(row)
    return out


def _cell(v) -> str:
    return "n/a" if v is None else str(v)


def _ratio(a, b) -> str:
    return "" if a is None or not b else f"{a / b:.3f}"


def _print_header(q: float) -> None:
    print(f"\nq = {q:g}, delta = {DELTA:g}: steps admitted before refusal")
    print(
        "| sigma | eps | renyi (today) | renyi_orders | orders/today | renyi_orders_wide "
        "| wide/today | gdp | pld ceiling | orders/pld | cpu s | opendp zCDP filter "
        "| gdp/opendp | opendp cpu s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def _print_row(r: dict) -> None:
    peer = r.get("opendp_zcdp")
    peer_cpu = r.get("opendp_cpu_s")
    print(
        f"| {r['sigma']} | {r['epsilon']:g} | {_cell(r['renyi'])} | {_cell(r['renyi_orders'])} "
        f"| {_ratio(r['renyi_orders'], r['renyi'])} | {_cell(r['renyi_orders_wide'])} "
        f"| {_ratio(r['renyi_orders_wide'], r['renyi'])} | {_cell(r['gdp'])} | {_cell(r['pld'])} "
        f"| {_ratio(r['renyi_orders'], r['pld'])} | {r['cpu_s']:.1f} | {_cell(peer)} "
        f"| {_ratio(r['gdp'], peer)} | {'' if peer_cpu is None else f'{peer_cpu:.2f}'} |",
        flush=True,
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    rows = []
    _print_header(0.01)
    rows += table(SUBSAMPLED, 0.01)
    _print_header(1.0)
    rows += table(FULL_BATCH, 1.0)
    if args.json:
        from benchmarks.checkouts import write_json

        write_json(args.json, {"command": "python -m benchmarks.filters", "rows": rows})


if __name__ == "__main__":
    main()
