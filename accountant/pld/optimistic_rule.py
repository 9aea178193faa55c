"""When the schedule's lower end uses the fine groups of :mod:`~dpacct.accountant.pld.
optimistic_groups`, and on which grids: a rule on the phases alone (speed and tightness
only; every choice is certified).

It sits apart from both modules it reads: :mod:`~dpacct.accountant.pld.schedule_fast`
imports :mod:`~dpacct.accountant.pld.optimistic_groups`, and the rule needs the fast
path's group size (:func:`~dpacct.accountant.pld.schedule_fast._fine_group_cells`).
"""

from __future__ import annotations

import math

import numpy as np

from .schedule_fast import _fine_group_cells

__all__ = ["lower_fine_rule"]

#: the lower end's fine groups (:func:`lower_fine_rule`) apply to schedules of phases:
#: at least this many steps a distinct cell on average (as the history's step rule,
#: :data:`~dpacct.accountant.pld.block_rules.HISTORY_MIN_COUNT`) ...
LOWER_FINE_MIN_COUNT = 2
#: ... at a delta of at least this (below it not measured: the old lower end is kept)
LOWER_FINE_MIN_DELTA = 1e-6
#: the fine step's per-step loss (``sum_k k min(var_k, (h / K)^2 / 12)``, as
#: :func:`~dpacct.accountant.pld.schedule_fast._lower_step` measures it) at most this
#: share of the composition's loss variance ...
LOWER_FINE_SHARE = 1.5e-5
#: ... the groups' re-discretisations onto ``h`` (``h^2 / 12`` a group) at most this share
LOWER_REGRID_SHARE = 1e-5
#: the coarse steps tried, ``FAST_STEP / 2^i`` for ``i`` below this, and the refinement cap
LOWER_FINE_LEVELS = 3
LOWER_MAX_FACTOR = 16


def lower_fine_rule(phases, delta: float, base: float) -> tuple[float, int] | None:
    """``(step, factor)`` for the lower end's fine groups of the DP-SGD ``phases``
    (``(sigma, q, count)``, distinct cells) at ``delta``, or None (the plain lower end).

    Only for phases (at least :data:`LOWER_FINE_MIN_COUNT` steps a cell on average, two
    cells or more) at ``delta >= LOWER_FINE_MIN_DELTA``.  ``step`` is the coarsest of
    ``base / 2^i`` (``i < LOWER_FINE_LEVELS``) at which the groups (of
    :func:`~dpacct.accountant.pld.schedule_fast._fine_group_cells` cells), one
    re-discretisation ``step^2 / 12`` each, lose at most
    :data:`LOWER_REGRID_SHARE` of the composition's loss variance; ``factor`` the
    smallest power of two (at most :data:`LOWER_MAX_FACTOR`) at which the steps lose at
    most :data:`LOWER_FINE_SHARE` on the fine grid (``min(var, (step / factor)^2 / 12)``
    a step).  The lower end's epsilon loses about 2.3 times the variance share it
    merges (measured on the phases of ``benchmarks.ev37b_schedules``; docs/theory/
    schedules.md, "The lower end's fine groups").  Speed and tightness only.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> ph = [(float(s), float(q), 10) for s, q in
    ...       zip(rng.uniform(0.8, 2.0, 100), rng.uniform(0.001, 0.02, 100))]
    >>> lower_fine_rule(ph, 1e-5, 1e-3)
    (0.001, 8)
    >>> lower_fine_rule([(1.0, 0.01, 1), (1.1, 0.01, 1)], 1e-5, 1e-3) is None
    True
    """
    cells = len(phases)
    if cells < 2 or delta < LOWER_FINE_MIN_DELTA:
        return None
    var = np.array([q * q * math.expm1(min(1.0 / (s * s), 700.0)) for s, q, _ in phases])
    k = np.array([float(c) for _, _, c in phases])
    total = float(k @ var)
    if float(k.sum()) < LOWER_FINE_MIN_COUNT * cells or not total > 0.0:
        return None
    groups = -(-cells // _fine_group_cells(k))
    step = base / 2 ** (LOWER_FINE_LEVELS - 1)
    for i in range(LOWER_FINE_LEVELS):
        h = base / 2**i
        if groups * h * h / 12.0 <= LOWER_REGRID_SHARE * total:
            step = h
            break
    factor = 1
    while factor < LOWER_MAX_FACTOR:
        h = step / factor
        if float(k @ np.minimum(var, h * h / 12.0)) <= LOWER_FINE_SHARE * total:
            break
        factor *= 2
    return (step, factor) if factor > 1 else None
