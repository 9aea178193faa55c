"""Review 32 (issue 37): the online ledger's readings on a decaying, large-epsilon history are
not above main's.

ws32-online composes blocks of merged cells as open blocks. From 8e56fe7, every open block after
a history's first is composed on a window sized for a full block of 256 steps. That longer window
has larger round-off and aliasing bounds.

The history here: sigma ``1.2454650 * 0.99934499^t``, q 0.0441273 until step 1323, then doubled,
1 500 steps. On it the committed open blocks made epsilon(1e-5) looser than main's: at 3de6442,
step 1300 read 23.770897851849497 against main's 23.77089284787717 (+2.1e-7), and step 1500 read
48.95457310621905 against main's 48.95453577687622 (+7.6e-7).

The brief of ws32-online asks for every printed epsilon to be bit-equal to main's or lower. The
bars are main's (cdeb09f) readings, pinned. The first test fails on 3de6442. It passes on main,
and passes on 3de6442 with every open block on its own window (``full=False``, the cause switched
off: 23.770883859 and 48.954531270).

From e889ea4 the open blocks are off by default (``history.OPEN_BLOCKS = False``), so the first
test passes there. The second test turns them on and is a strict xfail: it records that with them
on, the readings are still above main's (as at f60fc26). If it XPASSes, D1 is fixed and it should
become a plain test.
"""

from __future__ import annotations

import pytest
from pins import bar_rel

from dpacct.accountant import PrivacyAccountant
from dpacct.accountant.ledger import history

S0, RATE, Q, JUMP = 1.2454650066674193, 0.9993449887799942, 0.04412734688817768, 1323
#: main's (cdeb09f) epsilon(1e-5) after 1 300 and 1 500 steps
MAIN = {1300: 23.77089284787717, 1500: 48.95453577687622}


def _readings():
    acct = PrivacyAccountant(progress=False)
    got = {}
    for t in range(1500):
        acct.step(noise_multiplier=S0 * RATE**t, sample_rate=Q * (2.0 if t >= JUMP else 1.0))
        if t + 1 in MAIN:
            got[t + 1] = float(acct.epsilon(1e-5))
    return got


def _check(got):
    for step, bar in MAIN.items():
        # bar_rel: a last-ulp difference of another machine's libm is not a defect, nor
        # session 47's certified split (+2.2e-11 here); D1 was +2.1e-7 and +7.6e-7
        assert got[step] <= bar * (1 + bar_rel(1e-5)), (step, got[step], bar)
        # not vacuous: the readings move by less than 1e-3 relative between versions
        assert got[step] >= bar * (1 - 1e-3), (step, got[step], bar)


def test_decaying_history_readings_not_above_mains():
    _check(_readings())


@pytest.mark.skipif(not hasattr(history, "OPEN_BLOCKS"), reason="ws32-online is not merged")
@pytest.mark.xfail(
    strict=True,
    reason="D1 (review 32): open blocks after the first on a full "
    "block's window read above main's on this history",
)
def test_decaying_history_with_open_blocks_not_above_mains(monkeypatch):
    monkeypatch.setattr(history, "OPEN_BLOCKS", True)
    _check(_readings())
