"""Review of issue 40's filters (session 16): saved-state restore of per-record filters.

Each test is a strict xfail: it fails because of the finding and passes once fixed.
"""

from __future__ import annotations

import numpy as np

from dpacct.accountant.ledger.per_record import PerRecordFilter


def _spent_filter() -> PerRecordFilter:
    f = PerRecordFilter(2, budget_epsilon=2.0, budget_delta=1e-5)
    for _ in range(800):  # both records spend their budget (700 steps fit) and drop
        f.begin_step(sigma=3.0, sample_rate=0.05)
    return f


def test_per_record_state_with_negative_steps_is_refused():
    st = _spent_filter().state_dict()
    assert not st["active"].any()
    forged = dict(st, steps=np.array([-(2**60), st["steps"][1]]),
                  active=np.array([True, False]))
    g = PerRecordFilter(2, budget_epsilon=2.0, budget_delta=1e-5)
    try:
        g.load_state_dict(forged)
    except ValueError:
        return  # refused: fixed
    # accepted: record 0, already at its budget, is admitted again and again
    admitted = sum(bool(g.begin_step(sigma=3.0, sample_rate=0.05)[0]) for _ in range(50))
    eps0 = float(g.epsilons(1e-5)[0])
    # on 07eb4cb: admitted 50 of 50 further steps, epsilon reported -6.5e8
    assert admitted == 0 and eps0 >= 2.0
