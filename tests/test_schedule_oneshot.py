"""The one-shot schedule path's choices (:mod:`~dpacct.accountant.pld.schedule_oneshot`,
issue 37): where the ledger's composer's certificate floor is a share of delta, the
engine answers too."""

from __future__ import annotations

import numpy as np
import pytest
from test_review22_oneshot_main_bar import PHASES  # the review's shape r5

from dpacct.accountant.pld.schedule import schedule_mechanism, schedule_reference
from dpacct.accountant.pld.schedule_fast import _lower_step, fast_epsilon_bounds
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


#: the review's shape r5 (session 22, F1): 20 phases, sigma 1.2-1.4, q 1.2e-3-2.8e-3,
#: counts 1-40 (the review's guard holds the list)
R5 = PHASES


@pytest.mark.parametrize(
    ("delta", "main"),
    [(1e-3, 0.048711136606986574), (1e-5, 0.1079704033613332), (1e-6, 0.13342540436102757)],
)
def test_narrow_phases_never_looser_than_mains_one_shot(delta, main):
    """Review 22, F1: the finer composition alone (every distinct step its own cell, no
    composer) answered 0.1079820 at delta 1e-5 on these phases, +1.07e-4 above main's
    one-shot (a3b9f4e, its own numbers below: the composer's), and above main on 8 of
    12 random shapes.  The one-shot path keeps the composer's and the finer pass's
    smaller answer; it is above the fast path's certified lower end of the phases."""
    eps = schedule_mechanism(R5, progress=False).epsilon(delta)
    assert eps <= main * (1 + 1e-12), (eps, main)
    assert eps <= _incremental_epsilon(R5, delta)[0]
    lo = fast_epsilon_bounds(R5, delta, step=_lower_step(R5), upper=False)[0]
    assert lo <= eps


def test_wide_phases_keep_mains_passes():
    """Wide steps (sigma 0.6-3, q 1e-3-0.3: the fast path's fine groups are not
    refined): the fast path alone answered 9.0044236 on 40 random phases x 3, above
    main's (a3b9f4e) 9.004418718291575, the composer's (issue 37, session 22); the
    one-shot path keeps the smaller."""
    rng = np.random.default_rng(3)
    sig, q = rng.uniform(0.6, 3.0, 40), np.exp(rng.uniform(np.log(1e-3), np.log(0.3), 40))
    phases = [(float(s), float(r), 3) for s, r in zip(sig, q, strict=True)]
    eps = schedule_mechanism(phases, progress=False).epsilon(1e-5)
    composer = _incremental_epsilon(phases, 1e-5)[0]
    assert eps <= composer <= 9.004418718291575 * (1 + 1e-12)
    lo = fast_epsilon_bounds(phases, 1e-5, step=_lower_step(phases), upper=False)[0]
    assert lo <= eps
