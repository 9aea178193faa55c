"""Review 22 (issue 37): a mixed online ledger is no looser than main's.

Finding F3 (ws22-ledger4 6c3556b..35ae25a): the online route now composes the
full-batch records as one folded Gaussian block at every query.  On the ledger below
(60 random records: half full-batch, sigma 5-40, counts 1-3; half subsampled, sigma
0.8-2, q 0.002-0.03, counts 1-19; no budget) the upper end at delta 1e-5 went from
main's (a3b9f4e) 2.8375038107130455 to 2.8375038915826893 (+2.9e-8 relative; 1.8e-7 and
2.0e-7 on two budgeted ledgers of the same kind, tighter on two others).  The bars are
main's bracket; a lower end above main's certified upper end, or an upper end below
main's certified lower end, would be unsound.  Fails on ledger4 at 35ae25a.

Accepted at the merge (session 22), with this bar: the online route picks its loss grid
from the history's first block (``IncrementalEpsilon._use_step``), which no longer holds
the full-batch records, so the grid moves and answers move by a few 1e-7 relative in
either direction (tighter on two of the six ledgers tried; on the benchmark's mixed rows
2e-6 tighter at delta 1e-5 and 0.8 % at 1e-10, at a quarter of the CPU).  The guard keeps
that excess below 1e-6 relative of main's upper end and the bracket inside main's, so a
larger regression still fails.
"""

from __future__ import annotations

import numpy as np

from dpacct.accountant import PrivacyAccountant

#: main's (a3b9f4e) epsilon_bounds(1e-5) of the ledger below
MAIN = (2.83706220289883, 2.8375038107130455)
#: the relative excess over main's upper end accepted (measured 2.9e-8 on this ledger)
GRID_MOVE = 1e-6


def _ledger() -> PrivacyAccountant:
    rng = np.random.default_rng(5)
    acct = PrivacyAccountant(progress=False)
    for _ in range(60):
        if rng.random() < 0.5:
            sigma, q, count = float(rng.uniform(5, 40)), 1.0, int(rng.integers(1, 4))
        else:
            sigma, q = float(rng.uniform(0.8, 2.0)), float(rng.uniform(0.002, 0.03))
            count = int(rng.integers(1, 20))
        acct.step(noise_multiplier=sigma, sample_rate=q, count=count)
    return acct


def test_mixed_online_ledger_no_looser_than_mains():
    lo, hi = map(float, _ledger().epsilon_bounds(1e-5))
    assert hi <= MAIN[1] * (1 + GRID_MOVE), (hi, MAIN)
    assert lo >= MAIN[0] * (1 - 1e-12), (lo, MAIN)
    assert lo <= MAIN[1] and hi >= MAIN[0], (lo, hi, MAIN)
