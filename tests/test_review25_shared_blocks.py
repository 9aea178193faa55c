"""Review 25 guard (issue 37, ws25-lib 3a51d67: composed online blocks shared by every
ledger of the process).

A block may be shared only between directions that would compose it identically: the
same cells and budget AND the same delta, grid step, side, tail cut and aliasing
budgets.  Two ledgers of one 36-phase decaying loop (past the router's 16 exact phases:
the online route) asked at two deltas, in both orders, must give, bit for bit, what each
question gives with nothing shared (the cache emptied before each).  A key without the
direction's delta (or tail cut) hands the 1e-9 direction's blocks to the 1e-5 one
(0.9836237874704663 -> 0.9836310709764826 on ws25-lib with that mutation).  On a tree
without the shared cache the two sides are the same computation.
"""

from __future__ import annotations

import numpy as np

import dpacct.accountant.pld.online_direction as od
from dpacct.accountant import PrivacyAccountant

SIGMAS = (1.3 * 0.99 ** np.arange(36)).tolist()


def _ledger(deltas, grid=None) -> list[float]:
    kw = {} if grid is None else {"grid": grid}
    acct = PrivacyAccountant(progress=False, **kw)
    for sigma in SIGMAS:
        acct.step(noise_multiplier=sigma, sample_rate=0.02)
    return [acct.epsilon(d) for d in deltas]


def _cold(delta, grid=None) -> float:
    shared = getattr(od, "_SHARED", None)
    if shared is not None:
        shared.clear()
        shared.nbytes = 0
    return _ledger([delta], grid)[0]


def test_shared_blocks_answer_as_a_cold_ledger_at_every_delta_and_order():
    warm = _ledger([1e-5, 1e-9]) + _ledger([1e-9, 1e-5], grid=2e-4)
    cold = [_cold(1e-5), _cold(1e-9), _cold(1e-9, 2e-4), _cold(1e-5, 2e-4)]
    assert warm == cold
    assert warm[0] < warm[1]
