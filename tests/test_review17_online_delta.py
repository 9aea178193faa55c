"""Review of session 16's ledger delta on the ``"online"`` route (issue 36/37 review).

:func:`dpacct.accountant.routes.online_delta` answers a kept history's own delta ``d``
whenever that history reads ``D <= d (1 + ONLINE_DELTA_SLACK)`` at the epsilon asked
(``ONLINE_DELTA_SLACK = 1e-9``).  At an epsilon just below ``epsilon(d)`` the history's
certified reading is above ``d`` (by 1.8e-10 relative here), and nothing else the
library computed certifies ``d`` there (``epsilon(d)``'s certificate covers only
epsilons at or above its answer): the printed delta is below the library's own
certified upper bound.  The truth is far below both (the certificate's slack is ~1e-5
relative), so the severity is low, but it breaks the contract that a printed upper
bound is never below what the library can prove.
"""

from __future__ import annotations

import numpy as np
from ledgers import ledger

SEVENTEEN = [(1.0 + t / 20, 0.01, 100) for t in range(17)]


def test_online_delta_is_never_below_its_historys_certified_reading():
    acct = ledger(SEVENTEEN)
    assert acct.route == "online"
    d = 1e-5
    e = float(acct.epsilon(d))
    ep = e - 1e-11  # below epsilon(d): its certificate says nothing here
    assert ep < e
    reading, _floor = acct.ledger.online(d).delta(np.array([ep]))
    certified = float(reading[0])
    assert certified > d  # the history's own certified upper bound at ep
    assert float(acct.delta(ep)) >= certified
