"""Review 23 (issue 37): a mixed online ledger answers the same whenever it was asked.

ws23-online5 reuses work between a query and the next fold, and (ab33b20) composes a
block of one step -- the folded full-batch Gaussian, a lone pending step -- as its fine
cell coarsened, without a transform.  Its own guard is the decaying loop without
full-batch records; this one mixes them in (every 25th record: sigma 5-30, q 1), so the
folded Gaussian and lone pending steps occur, and asks at odd steps (within the first 128 exact
cells, mid-block, the end).  The answers must be those of a
fresh ledger fed the same records and asked once, bit for bit; and no looser than main's
(15cb80c) bracket at delta 1e-5 (an upper end above main's, or a lower end below it,
fails).
"""

from __future__ import annotations

import numpy as np

from dpacct.accountant import PrivacyAccountant

DELTA = 1e-5
#: main's (15cb80c) epsilon_bounds(1e-5) of the 170 records below, asked once
MAIN = (0.8667559615289225, 0.866897257277171)
ASKED = (40, 150, 169)


def _records() -> list[tuple[float, float]]:
    rng = np.random.default_rng(23)
    out = []
    for i in range(170):
        if i % 25 == 0:
            out.append((float(rng.uniform(5, 30)), 1.0))
        else:
            out.append((float(1.6 * 0.999**i), float(rng.choice([0.005, 0.01, 0.02]))))
    return out


def test_mixed_online_ledger_answers_do_not_depend_on_when_it_was_asked():
    recs = _records()
    asked = PrivacyAccountant(progress=False)
    answers = {}
    for i, (s, q) in enumerate(recs):
        asked.step(noise_multiplier=s, sample_rate=q)
        if i in ASKED:
            answers[i] = asked.epsilon(DELTA)
    fresh = PrivacyAccountant(progress=False)
    for s, q in recs:
        fresh.step(noise_multiplier=s, sample_rate=q)
    lo, hi = map(float, fresh.epsilon_bounds(DELTA))
    assert hi == answers[169], (hi, answers[169])
    assert hi <= MAIN[1] and lo >= MAIN[0], (lo, hi, MAIN)
