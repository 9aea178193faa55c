"""The one-shot schedule path's choices (:mod:`~dpacct.accountant.pld.schedule_oneshot`,
issue 37): where the ledger's composer's certificate floor is a share of delta, the
engine answers too."""

from __future__ import annotations

import numpy as np
import pytest
from pins import bar_rel
from test_review22_oneshot_main_bar import PHASES  # the review's shape r5

from dpacct.accountant.pld.schedule import schedule_mechanism, schedule_reference
from dpacct.accountant.pld.schedule_fast import _lower_step, fast_epsilon_bounds
from dpacct.accountant.pld.schedule_oneshot import (
    ENGINE_FLOOR_SHARE,
    FINE_ALONE_SHARE,
    _fine_pass,
    _incremental_epsilon,
    _oneshot_upper,
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
    assert eps <= composer <= 9.004418718291575 * (1 + bar_rel(1e-5))
    lo = fast_epsilon_bounds(phases, 1e-5, step=_lower_step(phases), upper=False)[0]
    assert lo <= eps


def test_fine_pass_at_or_below_dp_accountings_default_on_100_phases():
    """Issue 37, session 26: 100 random phases x 10 (benchmarks/schedule_oneshot.py's
    row) answered by the fine pass alone (every distinct step its own cell on half the
    composer's step, groups 8x finer and of ~640 steps): at or below dp_accounting
    0.6.0's default pessimistic PLD (``PLDAccountant(value_discretization_interval=
    1e-4)``, 1.8428356415, benchmarks/data/schedule_oneshot_dp_accounting.json) and
    main's one-shot (adc90ec: 1.8428424559, the composer and ``fast_upper`` at 5e-4, the
    smaller), and above the fast path's certified lower end.  Measured 1.8428349169."""
    rng = np.random.default_rng(0)
    sig, q = rng.uniform(0.8, 2.0, 100), rng.uniform(0.001, 0.02, 100)
    phases = [(float(a), float(b), 10) for a, b in zip(sig, q, strict=True)]
    eps = schedule_mechanism(phases, progress=False).epsilon(1e-5)
    assert eps <= 1.8428356415308176
    assert eps <= 1.8428424559217433
    lo = fast_epsilon_bounds(phases, 1e-5, step=_lower_step(phases), upper=False)[0]
    assert lo <= eps


#: 86 phases of sigma 1.75-1.82, q 1.8e-3-1.1e-2, counts 1-40 (benchmarks/oneshot_sweep.py's
#: shape p5, seed 0, rounded to 4 and 6 decimals)
P5 = [
    (1.7913, 0.003721, 15),
    (1.7565, 0.00331, 31),
    (1.793, 0.001886, 2),
    (1.8065, 0.010348, 9),
    (1.77, 0.002008, 26),
    (1.7855, 0.001835, 27),
    (1.8108, 0.002586, 23),
    (1.7974, 0.002241, 2),
    (1.7647, 0.007361, 16),
    (1.8148, 0.002305, 31),
    (1.7737, 0.003239, 30),
    (1.8054, 0.001795, 4),
    (1.7809, 0.00943, 38),
    (1.8031, 0.00313, 26),
    (1.8118, 0.008034, 16),
    (1.8106, 0.009962, 38),
    (1.8041, 0.006522, 16),
    (1.7724, 0.002807, 14),
    (1.8112, 0.004264, 21),
    (1.7612, 0.007206, 1),
    (1.7683, 0.006191, 10),
    (1.7937, 0.007815, 17),
    (1.8004, 0.004687, 7),
    (1.7544, 0.005748, 32),
    (1.7688, 0.003378, 16),
    (1.7754, 0.002477, 22),
    (1.8069, 0.006176, 28),
    (1.7513, 0.001762, 4),
    (1.8097, 0.007222, 1),
    (1.7732, 0.001776, 28),
    (1.7917, 0.00534, 6),
    (1.8127, 0.005131, 37),
    (1.7552, 0.002121, 33),
    (1.787, 0.005108, 5),
    (1.7658, 0.00689, 14),
    (1.7974, 0.004615, 39),
    (1.805, 0.005909, 23),
    (1.7673, 0.006305, 10),
    (1.8077, 0.002542, 3),
    (1.7628, 0.009346, 4),
    (1.7827, 0.003167, 23),
    (1.7598, 0.005031, 34),
    (1.7714, 0.002112, 2),
    (1.7758, 0.010602, 14),
    (1.7969, 0.005713, 9),
    (1.772, 0.004036, 29),
    (1.786, 0.004873, 18),
    (1.794, 0.001841, 8),
    (1.8029, 0.002704, 21),
    (1.7705, 0.010194, 33),
    (1.7548, 0.002029, 6),
    (1.7667, 0.002264, 5),
    (1.7871, 0.004935, 19),
    (1.8089, 0.007094, 6),
    (1.7944, 0.008181, 32),
    (1.7911, 0.008305, 26),
    (1.7532, 0.00692, 29),
    (1.7839, 0.003284, 18),
    (1.7729, 0.005011, 15),
    (1.774, 0.007614, 10),
    (1.8143, 0.002252, 20),
    (1.7619, 0.00203, 24),
    (1.7569, 0.004013, 32),
    (1.7712, 0.00307, 35),
    (1.7934, 0.001764, 11),
    (1.7689, 0.004458, 36),
    (1.7976, 0.003438, 6),
    (1.7969, 0.00864, 24),
    (1.78, 0.003205, 39),
    (1.8061, 0.005802, 24),
    (1.7724, 0.004891, 35),
    (1.7922, 0.003011, 17),
    (1.7867, 0.004079, 35),
    (1.7559, 0.003405, 27),
    (1.774, 0.002692, 20),
    (1.7882, 0.002055, 25),
    (1.8154, 0.001926, 2),
    (1.8027, 0.002621, 7),
    (1.7828, 0.002037, 30),
    (1.7641, 0.002301, 35),
    (1.7689, 0.002196, 32),
    (1.7539, 0.00344, 19),
    (1.7894, 0.002695, 39),
    (1.7791, 0.001767, 12),
    (1.7945, 0.00186, 2),
    (1.7861, 0.010481, 8),
]


def test_fine_pass_not_alone_where_its_floor_is_a_share_of_delta():
    """Issue 37, session 26 (found by ``python -m benchmarks.oneshot_sweep``): at delta
    1e-6 the fine pass's floor is 8e-5 of delta and the composer's above
    ``ENGINE_FLOOR_SHARE``, so main's one-shot also asked the engine (adc90ec:
    0.5474643224807259, the engine's); the fine pass alone (0.547464765 with
    ``FINE_ALONE_SHARE = ENGINE_FLOOR_SHARE``) was above it.  The one-shot path now
    takes main's passes too: the composer's floor sends the query to the engine
    (``loose``; the engine's answer costs seconds, so it is not asked here) and the
    composer's answer is kept only where below the fine pass's."""
    fine, floor = _fine_pass(P5, 1e-6)
    assert floor > FINE_ALONE_SHARE * 1e-6  # the fine pass is not alone here
    found, loose = _oneshot_upper(P5, 1e-6, None, lambda: False)
    assert loose and found <= fine
    assert found > 0.5474643224807259  # the engine's answer is below both passes


#: review 26's shape s11 (rounded to 7 digits): 17 phases of sigma 3.0-3.2, q 0.007-0.01,
#: 30-198 steps each
S11 = [
    (2.973552, 0.0082316, 166),
    (3.092899, 0.0080301, 33),
    (3.027684, 0.0082813, 139),
    (3.149185, 0.0102022, 142),
    (3.068897, 0.0069488, 88),
    (2.995437, 0.0087613, 30),
    (3.176723, 0.00718, 97),
    (3.134677, 0.0066989, 187),
    (2.976611, 0.007813, 156),
    (3.06076, 0.01009, 173),
    (3.167327, 0.0097694, 44),
    (3.081254, 0.0096527, 109),
    (3.067965, 0.0066954, 172),
    (2.980534, 0.0085509, 198),
    (3.060948, 0.0091917, 80),
    (2.988087, 0.0091832, 35),
    (3.019618, 0.0072502, 154),
]


def test_long_phases_keep_mains_passes():
    """Review 26: on long phases (over ``FINE_ALONE_COUNT`` steps each on average) the
    composer's blocks sit on grids up to 64x finer and beat the fine pass: alone it
    answered 0.4425042062 here at 1e-5, above main's one-shot (adc90ec:
    0.4425040562328568, the composer's).  The one-shot path keeps main's passes there."""
    eps = schedule_mechanism(S11, progress=False).epsilon(1e-5)
    assert eps <= 0.4425040562328568 * (1 + 1e-12)
    lo = fast_epsilon_bounds(S11, 1e-5, step=_lower_step(S11), upper=False)[0]
    assert lo <= eps
