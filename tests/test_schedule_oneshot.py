"""The one-shot schedule path's choices (:mod:`~dpacct.accountant.pld.schedule_oneshot`,
issue 37): where the ledger's composer's certificate floor is a share of delta, the
engine answers too."""

from __future__ import annotations

import numpy as np

from dpacct.accountant.pld import schedule_oneshot
from dpacct.accountant.pld.schedule import schedule_mechanism, schedule_reference
from dpacct.accountant.pld.schedule_fast import _lower_step, _upper_factor, fast_epsilon_bounds
from dpacct.accountant.pld.schedule_oneshot import (
    ENGINE_FLOOR_SHARE,
    ONESHOT_FAST_STEP,
    _incremental_epsilon,
)


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


def _narrow() -> list[tuple[float, float, int]]:
    rng = np.random.default_rng(22)
    sig, q = rng.uniform(1.0, 2.0, 40), rng.uniform(0.002, 0.01, 40)
    return [(float(s), float(r), 10) for s, r in zip(sig, q, strict=True)]


def test_narrow_phases_are_composed_once_never_looser_than_main(monkeypatch):
    """Issue 37, session 22: main's one-shot path composed 40 narrow random phases x 10
    twice, by the ledger's composer and by the fast path with every distinct step its
    own cell on a finer loss step, and kept the smaller (the fast path's); it now
    composes the fast path alone (measured 0.30 -> 0.16 s CPU), no looser than main
    (a3b9f4e: 0.49976448268554247, its own number) and above the fast path's certified
    lower end of the same phases."""
    calls: list[int] = []
    real = schedule_oneshot._incremental_epsilon

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(schedule_oneshot, "_incremental_epsilon", counted)
    phases = _narrow()
    eps = schedule_mechanism(phases, progress=False).epsilon(1e-5)
    assert calls == []  # no composer pass: the fast path certified within the share
    lo = fast_epsilon_bounds(phases, 1e-5, step=_lower_step(phases), upper=False)[0]
    assert lo <= eps <= 0.49976448268554247 * (1 + 1e-12), (lo, eps)


def test_wide_phases_keep_mains_passes():
    """Wide steps (sigma 0.6-3, q 1e-3-0.3: the fast path's fine groups are not
    refined) are composed as main composed them, the composer and the finer pass, the
    smaller kept: the fast path alone answered 9.0044236 on 40 random phases x 3,
    above main's (a3b9f4e) 9.004418718291575, the composer's (issue 37, session 22)."""
    rng = np.random.default_rng(3)
    sig, q = rng.uniform(0.6, 3.0, 40), np.exp(rng.uniform(np.log(1e-3), np.log(0.3), 40))
    phases = [(float(s), float(r), 3) for s, r in zip(sig, q, strict=True)]
    assert _upper_factor(phases, ONESHOT_FAST_STEP) == 1
    eps = schedule_mechanism(phases, progress=False).epsilon(1e-5)
    composer = _incremental_epsilon(phases, 1e-5)[0]
    assert eps <= composer <= 9.004418718291575 * (1 + 1e-12)
    lo = fast_epsilon_bounds(phases, 1e-5, step=_lower_step(phases), upper=False)[0]
    assert lo <= eps
