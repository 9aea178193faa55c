"""Review of ``adaptive="renyi_orders"``'s per-first-record weights and their restore.

The weights (centre order and spread share) are fixed at the first record *presented*:
:meth:`RenyiOrdersFilter.admit` calls ``_fix_weights`` before its check, so a first
record the filter refuses fixes them, though it is never recorded.  The file saves the
centre (``adaptive_order``) but not the spread; ``from_dict`` rebuilds the spread from
the first *recorded* entry.  After a refused first record the restored filter runs
under other weights (spread 0.5 live, 0.0173 restored) and admits 1 875 more steps of
sigma 1, q 0.01 where the live run admits 1 862: the mixture weights switch part-way,
which docs/theory/renyi_filter.md (and the ``renyi_weights`` versioning) says voids the
filter's guarantee.  Old main (weights a function of the saved centre only) had no
such switch.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpacct.accountant import PrivacyAccountant
from dpacct.accountant.ledger.filters import BudgetExceededError


def test_renyi_orders_weights_survive_a_restore_after_a_refused_first_record():
    acct = PrivacyAccountant(
        budget_epsilon=3.0, budget_delta=1e-5, adaptive="renyi_orders", progress=False
    )
    with pytest.raises(BudgetExceededError):
        acct.step(noise_multiplier=0.5, sample_rate=1.0, count=1000)
    acct.step(noise_multiplier=1.0, sample_rate=0.01, count=300)
    restored = PrivacyAccountant.from_dict(acct.to_dict())
    live, back = acct._filter, restored._filter
    assert back.order == live.order
    assert np.array_equal(back.log_weights, live.log_weights)
