"""Review 21 (issue 37): the ledger's online composer, never looser than main's.

ws21-phases (4753a07..5b6428b) reshapes the blocks' products (bit for bit, it says) and
adds a mid add direction (the coarse grid at the blocks' own budgets) that is taken
only where it certifies below the fine one.  Bars: main's (aeb560c) ledger bracket on
20 random phases x 10 at delta 1e-5 and 1e-9; dp_accounting's pessimistic PLD at
interval 1e-5 (a reference independent of dpacct) gives 1.3713621 and 3.3078310 there,
its optimistic 1.3703621 and 3.3068305, both inside the brackets.

No finding (a guard).  Measured on ws21-phases (3e8a3d4, 5b6428b) against main, one
run each: 20 x 10 and 30 x 10 random phases, 200 and 300 decaying steps, 300 constant
steps, 3 000 distinct single steps and 1 500 x 10 (delta 1e-5 and 1e-9), and three
add-direction-heavy schedules (q up to 1, sigma 0.5-3, 30-60 phases): epsilon and both
ends of epsilon_bounds bit-equal.
"""

from __future__ import annotations

import numpy as np
import pytest
from pins import bar_rel

from dpacct.accountant import PrivacyAccountant

#: delta: main's (lower, upper)
MAIN = {1e-5: (1.3712697115449104, 1.3713654842186223),
        1e-9: (3.3056876746557133, 3.3107502937159383)}
DPA_PESSIMISTIC = {1e-5: 1.3713621346068814, 1e-9: 3.30783104594316}
DPA_OPTIMISTIC = {1e-5: 1.3703621264974124, 1e-9: 3.3068305209678623}


@pytest.mark.parametrize("delta", [1e-5, 1e-9])
def test_twenty_random_phases_no_looser_than_main(delta):
    rng = np.random.default_rng(0)
    acct = PrivacyAccountant(progress=False)
    for s, q in zip(rng.uniform(0.8, 2.0, 20), rng.uniform(0.001, 0.02, 20), strict=True):
        acct.step(noise_multiplier=float(s), sample_rate=float(q), count=10)
    lo, hi = map(float, acct.epsilon_bounds(delta))
    assert hi <= MAIN[delta][1] * (1 + bar_rel(delta)) and lo >= MAIN[delta][0] * (1 - 1e-12)
    assert lo <= DPA_PESSIMISTIC[delta] and hi >= DPA_OPTIMISTIC[delta]
