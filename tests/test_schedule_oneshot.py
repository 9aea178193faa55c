"""The one-shot schedule path's choices (:mod:`~dpacct.accountant.pld.schedule_oneshot`,
issue 37): where the ledger's composer's certificate floor is a share of delta, the
engine answers too."""

from __future__ import annotations

from dpacct.accountant.pld.schedule import schedule_mechanism, schedule_reference
from dpacct.accountant.pld.schedule_oneshot import ENGINE_FLOOR_SHARE, _incremental_epsilon


def test_oneshot_asks_the_engine_where_the_composers_floor_is_a_share_of_delta():
    """Issue 37, session 21: where the ledger's composer's certificate floor is above
    ``ENGINE_FLOOR_SHARE`` of delta (17 wide phases at delta 1e-9: 1.4 %), the one-shot
    path's answer is the smaller of the composer's (the ledger's: measured 22.034806)
    and the engine's (``schedule_reference``: 22.024339), both certified."""
    phases = [(0.6 + 0.1 * i, 0.2, 5) for i in range(17)]
    # what the ledger composes, and its floor: above the share, so the rule fires
    composer, _, floor = _incremental_epsilon(phases, 1e-9)
    assert composer is not None and floor > ENGINE_FLOOR_SHARE * 1e-9
    engine = schedule_reference(phases, progress=False).epsilon(1e-9)
    assert schedule_mechanism(phases, progress=False).epsilon(1e-9) == engine
    assert engine < composer
