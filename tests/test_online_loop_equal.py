"""The decaying online loop's answers are a function of the steps alone (issue 37).

Any reuse of work between a query and the next one, or between a query and the fold
that commits its pending steps (the lever named for the decaying loop's speed), must
leave every answer bit for bit what a fresh ledger fed the same steps answers: the
blocks are cut by the steps alone, so when and how often the loop asked, and whether
the ledger went through a file, must not move a digit.  The loop is issue 37's
(sigma ``2 * 0.9999^t``, q 0.01, epsilon every 100 steps), 2 000 steps: the first 128
steps are one block of exact cells, then rounded blocks of 256 steps, so the queries
fall mid-block and every fold between two of them commits a block.
"""

from __future__ import annotations

import itertools

from dpacct.accountant import PrivacyAccountant

DELTA = 1e-5
Q = 0.01


def _sigma(t: int) -> float:
    return 2.0 * 0.9999**t


def _fed(steps: range, acct: PrivacyAccountant | None = None) -> PrivacyAccountant:
    acct = PrivacyAccountant(progress=False) if acct is None else acct
    for t in steps:
        acct.step(noise_multiplier=_sigma(t), sample_rate=Q)
    return acct


def test_decaying_loop_answers_equal_a_fresh_ledgers():
    acct = PrivacyAccountant(progress=False)
    answers = {}
    for t in range(2000):
        acct.step(noise_multiplier=_sigma(t), sample_rate=Q)
        if (t + 1) % 100 == 0:
            answers[t + 1] = acct.epsilon(DELTA)
    values = list(answers.values())
    assert all(a < b for a, b in itertools.pairwise(values))
    # 700 = 128 + 2 * 256 + 60: pending steps mid-block; 2000: 6 more blocks later
    for t in (700, 2000):
        assert _fed(range(t)).epsilon(DELTA) == answers[t], t


def test_ledger_saved_mid_block_answers_as_the_one_kept(tmp_path):
    kept = PrivacyAccountant(progress=False)
    for t in range(700):  # queried as a loop does: its caches warm, 60 steps pending
        kept.step(noise_multiplier=_sigma(t), sample_rate=Q)
        if (t + 1) % 100 == 0:
            kept.epsilon(DELTA)
    path = tmp_path / "ledger.json"
    kept.save(path)
    restored = PrivacyAccountant.load(path)
    assert restored.epsilon(DELTA) == kept.epsilon(DELTA)
    # on across the next block's fold (at 896 steps), both asked at the same steps
    for start in (700, 800):
        _fed(range(start, start + 100), kept)
        _fed(range(start, start + 100), restored)
        assert restored.epsilon(DELTA) == kept.epsilon(DELTA), start + 100
