"""Issue 25's benchmark table (``benchmarks/shapes.py``): the rows, the runners, the table.

The runners are called in-process at tiny sizes (the benchmark itself runs them in
subprocesses): dpacct's NoisyGD against the numpy loop on the sufficient statistics
(the same numbers for the same seed), the online loops against a ledger asked once and
against Opacus' RDP accountant (dpacct's PLD answer lies below RDP's), and the table's
ratios on hand-made records.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import pytest

shapes = pytest.importorskip("benchmarks.shapes")


@pytest.mark.parametrize("quick", [False, True])
def test_every_workload_of_the_issue_has_a_row(quick):
    names = [r["name"] for r in shapes.rows(quick)]
    assert len(names) == len(set(names))
    wanted = [
        "schedule 1000 phases" if not quick else "schedule 200 phases",
        "schedule 100 phases" if not quick else "schedule 20 phases",
        "per-step decaying sigma, first",
        "online constant sigma",
        "no budget",
        *(f"budget {b}" for b in (50, 20, 12, 8)),
        "distinct phases",
        *(f"calibrated sigma, eps {e}," for e in (1, 3, 8)),
        "NoisyGD linear",
    ]
    for part in wanted:
        assert any(part in n for n in names), part
    for row in shapes.rows(quick):
        # a peer beside every row but the growth row, which has its base size instead
        assert (row["peer"] is None) == ("base" in row), row["name"]
    budgets = [r for r in shapes.rows(quick) if "0.9999^t" in r["name"]]
    assert len(budgets) == 5 and len({str(r["peer"]) for r in budgets}) == 1


def test_noisy_gd_runners_give_the_same_model():
    wl = {"n": 300, "d": 5, "iterations": 1_500, "sigma": 5.0, "theta_bound": 2.0, "seed": 3}
    ours, numpy_loop = shapes.dpacct_noisy_gd(wl), shapes.numpy_noisy_gd(wl)
    assert ours["epsilon"] == pytest.approx(numpy_loop["epsilon"], rel=1e-12)
    assert ours["note"] == numpy_loop["note"]  # theta[0] to the last digit
    assert 0.0 < ours["epsilon"] <= 2.0  # the mean of iterates projected to radius 2


def test_online_loop_answers_like_the_ledger_asked_once():
    from dpacct.accountant import PrivacyAccountant

    wl = {
        "steps": 200,
        "every": 100,
        "sigma": 1.0,
        "gamma": 0.999,
        "sample_rate": 0.02,
        "delta": 1e-5,
        "budget": None,
    }
    out = shapes.dpacct_online(wl)
    assert out["note"] == "200 steps, 2 queries"
    once = PrivacyAccountant(progress=False)
    for t in range(200):
        once.step(noise_multiplier=1.0 * 0.999**t, sample_rate=0.02)
    assert out["epsilon"] == pytest.approx(once.epsilon(1e-5), rel=1e-9)


@pytest.mark.slow
def test_online_loop_of_opacus_is_its_accountant_and_answers_above_dpacct():
    """The peer's per-step sum is what Opacus' RDPAccountant answers (to rounding), and
    lies above dpacct's PLD answer.  Opacus imports torch: marked slow.  30 distinct sigmas,
    asked twice (the peer's per-step RDP over its default orders is what costs: one
    evaluation a step in each loop, the whole history at each of Opacus' queries)."""
    pytest.importorskip("opacus")
    from opacus.accountants import RDPAccountant

    wl = {
        "steps": 30,
        "every": 15,
        "sigma": 1.0,
        "gamma": 0.999,
        "sample_rate": 0.02,
        "delta": 1e-5,
        "budget": None,
    }
    out, rdp = shapes.dpacct_online(wl), shapes.opacus_online(wl)
    acct = RDPAccountant()
    for t in range(30):
        acct.step(noise_multiplier=1.0 * 0.999**t, sample_rate=0.02)
    assert rdp["epsilon"] == pytest.approx(acct.get_epsilon(1e-5), rel=1e-9)
    own = shapes.opacus_accountant_online(wl)
    assert own["epsilon"] == pytest.approx(rdp["epsilon"], rel=1e-9)
    assert rdp["note"] == "30 steps, 2 queries"
    assert out["epsilon"] < rdp["epsilon"]  # PLD is tighter than the RDP conversion


def test_online_loop_with_a_budget_stops_at_the_refusal():
    wl = {
        "steps": 300,
        "every": 100,
        "sigma": 1.0,
        "gamma": 1.0,
        "sample_rate": 0.05,
        "delta": 1e-5,
        "budget": None,
    }
    free = shapes.dpacct_online(wl)  # 300 steps: the budget below lies between queries
    budget = 0.5 * (free["epsilon"] + shapes.dpacct_online({**wl, "steps": 200})["epsilon"])
    out = shapes.dpacct_online({**wl, "budget": budget})
    steps, queries = int(out["note"].split()[0]), int(out["note"].split()[2])
    assert 200 <= steps < 300 and queries == 3  # two on the way, one at the refusal
    assert out["epsilon"] <= budget


def _rec(answer, seconds, key="epsilon"):
    return {"status": "ok", key: answer, "seconds": seconds, "peak_mb": 10.0, "method": "peer"}


def test_table_ratios_on_hand_made_records():
    results = [
        {"name": "a", "ours": _rec(1.01, 0.5), "peer": _rec(1.0, 2.0)},
        {"name": "growth", "ours": _rec(3.0, 4.0), "base": _rec(2.0, 0.5)},
        {
            "name": "cal",
            "ours": _rec(3.8, 0.1, "sigma"),
            "peer": _rec(4.0, 1.0, "sigma"),
            "budget_used": {"ours": 0.99995, "peer": 0.9999},
        },
        {"name": "failed", "ours": {"status": "timeout"}, "peer": None},
    ]
    table = shapes.format_rows(results).splitlines()
    assert len(table) == 2 + len(results)
    cells = [c.strip() for c in table[2].split("|")[1:-1]]
    assert cells[-2] == "4.00" and cells[-1] == f"{1.01:.6f}"
    assert "8.0x the time of 0.5 s" in table[3]
    assert "(uses 99.995 %)" in table[4] and "(uses 99.990 %)" in table[4]
    assert "| failed | timeout |" in table[5]


def test_budget_used_is_the_precise_upper_bound_over_the_target():
    wl = {
        "kind": "calibrate",
        "target_epsilon": 3.0,
        "delta": 1e-5,
        "sample_rate": 0.05,
        "steps": 200,
    }
    from dpacct.calibrators import noise_multiplier

    sigma = noise_multiplier(3.0, 1e-5, 0.05, 200)
    used = shapes._budget_used(sigma, wl)
    assert 1.0 - 1e-4 <= used <= 1.0
    assert shapes._budget_used(None, wl) is None
    assert math.isnan(float("nan")) and shapes._answer({"status": "error"}) is None


def test_row_selection_without_peers(monkeypatch):
    seen = []
    monkeypatch.setattr(
        shapes,
        "_measure",
        lambda spec, name, args: (
            seen.append(name) or {"status": "ok", "epsilon": 1.0, "seconds": 1.0}
        ),
    )
    args = argparse.Namespace(quick=True, only=["online constant*"], no_peers=True)
    out = shapes.measure_rows(args)
    assert [r["name"] for r in out] == seen and len(seen) == 1 and "peer" not in out[0]
    assert np.isfinite(out[0]["ours"]["epsilon"])
    # the budget rows share one peer measurement (Opacus has no filter)
    seen.clear()
    args = argparse.Namespace(quick=True, only=["online 2.0*"], no_peers=False)
    out = shapes.measure_rows(args)
    assert len(out) == 5 and len(seen) == 5 + 1
    assert all(r["peer"] is out[0]["peer"] for r in out)
