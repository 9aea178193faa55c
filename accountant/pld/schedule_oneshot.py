"""The one-shot schedule path's settings and helpers (issue 37), beside
:mod:`~dpacct.accountant.pld.schedule`: which compositions
:class:`~dpacct.accountant.pld.schedule.ScheduleMechanism` also tries, and the ledger's
online composer folded at once (:func:`_incremental_epsilon`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from .block_rules import BLOCK_STEPS, _coarse_step
from .incremental import IncrementalEpsilon
from .pld_settings import DEFAULT_TOL
from .schedule_fast import FAST_STEP, UPPER_MAX_FACTOR, _upper_factor, fast_upper

__all__: list[str] = []

#: the one-shot path also asks the engine's composition, and keeps the smaller answer,
#: when the ledger's composer's certificate floor (its mass at ``+inf``: round-off,
#: aliasing, tails) is above this share of delta.  Measured at delta 1e-9: 20 random
#: phases (sigma 0.6-3, q 1e-3-0.3) floor 1.9 % of delta, epsilon 18.2589 against the
#: engine's 18.2395; 17 phases (sigma 0.9-1.7, q 0.02) x 3, floor 0.55 %, 2.667900
#: against 2.666959; at delta 1e-7, 30 random phases x 10 2.3992786 against 2.3992101
#: and 150 steps of 1.2 * 0.995^t, q 0.02, 6.7237863 against 6.7236761.  The rows of
#: benchmarks/schedule_oneshot.py at delta 1e-5: floors 2e-6 .. 8e-5 of it (no engine)
ENGINE_FLOOR_SHARE = 1e-4
#: the one-shot path's fine pass (:func:`_fine_pass`) answers alone only where its own
#: floor is within this share of delta: where the composer's floor is above
#: ``ENGINE_FLOOR_SHARE`` main's one-shot also asked the engine, and the composer's
#: floor was 1.05-1.42 times the fine pass's (86 phases of sigma 1.75-1.82 at delta
#: 1e-6: 1.1e-4 and 8.3e-5 of delta, the fine pass 0.5474648 above the engine's
#: 0.5474643; 1 000 random phases x 10 at 1e-5: 7.8e-5 and 5.5e-5); beyond, main's
#: passes answer too, the smallest kept
FINE_ALONE_SHARE = ENGINE_FLOOR_SHARE / 1.5
#: ... and only on phases of at most this many steps on average: with long phases the
#: composer's blocks hold one or two cells on grids up to 64x finer, and won (review 26:
#: 17 phases of sigma 3.0-3.2, q 0.007-0.01, 30-198 steps each, at 1e-5 the fine pass
#: 0.44250503 against main's 0.44250488; two more shapes of 106 and 116 steps a phase
#: at 1e-3); benchmarks/oneshot_sweep.py's phases hold 1-40 (main's answers at most)
FINE_ALONE_COUNT = 32
#: distinct steps the one-shot path keeps as their own cells where the ledger's
#: composer would round steps together
#: (:func:`~dpacct.accountant.pld.schedule._ledger_merges`; the ledger keeps
#: :data:`~dpacct.accountant.pld.block_rules.EXACT_STEPS`, a cost it pays at every
#: query of an online loop).  Measured (CPU, loaded machine): 1 906 steps of sigma
#: 1.5 * 0.9999^t 1.496208 -> 1.494942 (dp_accounting's default 1.494924; main's
#: one-shot 1.494985 in 11 s) for 0.2 -> 1.1 s; 10 000 steps of 2 * 0.9999^t 5.860268
#: -> 5.859995 for 0.47 -> 1.24 s (4 096: 5.859574, 2.8 s)
ONESHOT_EXACT_STEPS = 2048


#: the one-shot path's default query also composes every distinct step as its own
#: cell by :func:`~dpacct.accountant.pld.schedule_fast.fast_epsilon_bounds` on this
#: step (where the ledger's composer does not round steps together) and keeps the
#: smaller certified answer: the composer alone was above main's one-shot on 1 000
#: phases with q log-uniform (1.4838928 against 1.4838482, this 1.4837720 for 0.8 s),
#: on 30 random phases (0.2726992 against 0.2726879, this 0.2726863) and on 200
#: decaying steps (0.4126648 against 0.4126511, this 0.4126475)
ONESHOT_FAST_STEP = FAST_STEP / 2
#: ... for at most this many distinct steps; beyond, where the composer rounds steps
#: together, the composer with :data:`ONESHOT_EXACT_STEPS` exact cells instead (1 906
#: decaying steps: 1.4949417, main's one-shot 1.4949849, for 1.1 s; the finer grid
#: 1.4949237 for 2.4 s)
ONESHOT_FAST_CELLS = 1024
#: ... and for at most this many also the composer with every step its own cell on a
#: history step a quarter as fine: on 300 steps of 2 * 0.9999^t (q 0.01) the grid
#: above gave 0.3380090, main's one-shot 0.3380059, this 0.3380025 (0.27 s)
ONESHOT_COMPOSER_CELLS = 512
#: ... where the distinct steps run at most this many times each on average (single
#: steps, a decaying sigma; on random phases x 10 the grid above is below main's and
#: the composer's pass cost more than main's one-shot: 100 x 10, 0.90 s against 0.76 s)
ONESHOT_COMPOSER_COUNT = 2


#: the one-shot path's fine pass (:func:`_fine_pass`): every distinct step its own cell
#: (:func:`~dpacct.accountant.pld.schedule_fast.fast_upper`) on a loss step half the
#: composer's (:func:`_fine_step`), its groups ``UPPER_MAX_FACTOR`` times finer, where
#: :func:`~dpacct.accountant.pld.schedule_fast._upper_factor` asks at least this factor
#: (narrow steps; wide ones are cheaper and as tight by the composer's graded cells: 40
#: random phases x 3 of sigma 0.6-3, q 1e-3-0.3, the composer 9.0044187 in 0.06 s, the
#: fine pass at factor 2 / 8 9.0044193 / 9.0044177 in 0.2 / 0.9 s) ...
FINE_MIN_FACTOR = 4
#: ... and of about this many steps (each group pays one coarsening and carries its own
#: round-off into the certificate: fewer, larger groups are tighter), within
#: ``FINE_GROUP_MIN .. FINE_GROUP_MAX`` cells.  Measured (CPU s, idle machine, at
#: delta 1e-5, dp_accounting's default PLD beside): 1 000 random phases x 10 at 16 / 64
#: cells a group 5.3203994 / 5.3203474 (dp_accounting 5.320348) for 1.9 / 2.6 s; the
#: first 1 906 steps of sigma 1.5 * 0.9999^t at 64 / 128 cells 1.4949237 / 1.4949196
#: (1.4949237) for 3.4 / 3.2 s
FINE_GROUP_STEPS = 640
FINE_GROUP_MIN = 64
FINE_GROUP_MAX = 128


#: an explicit ``tol`` below the default halves the one-shot path's history step
#: ``ceil(log2(DEFAULT_TOL / tol))`` times, at most this many
#: (:meth:`ScheduleMechanism._ledger_epsilon`)
FINE_HALVINGS = 2


def _engine_tol(tol: float | None) -> float | None:
    """The tol of the one-shot path's engine lower end
    (:meth:`~dpacct.accountant.pld.schedule.ScheduleMechanism._engine_lower`): ``tol``
    where it is coarser than the default, else the default (None): the engine's
    optimistic composition on a finer grid costs minutes on 1 000 phases, and the
    ledger's refinement (``_refined_lower``) refines the lower end instead.

    Examples
    --------
    >>> _engine_tol(1e-5) is None, _engine_tol(1e-2)
    (True, 0.01)
    """
    return tol if tol is not None and tol > DEFAULT_TOL else None


def _fine_halvings(tol: float | None) -> int:
    """Halvings of the one-shot path's history step for ``tol`` (0: the ledger's).

    Examples
    --------
    >>> [_fine_halvings(t) for t in (None, 1e-4, 5e-5, 1e-5)]
    [0, 0, 1, 2]
    """
    if tol is None or tol >= DEFAULT_TOL:
        return 0
    return min(FINE_HALVINGS, math.ceil(math.log2(DEFAULT_TOL / tol) - 1e-9))


def _fine_step(steps: Sequence[tuple[float, float, int]]) -> float:
    """The loss step of the one-shot path's fine pass: half the finer of the steps the
    ledger's composer would choose (:func:`~dpacct.accountant.pld.block_rules.
    _coarse_step`) from the first :data:`~dpacct.accountant.pld.block_rules.
    BLOCK_STEPS` steps and from all of them.  Speed and tightness only.

    Examples
    --------
    >>> _fine_step([(1.5, 0.01, 1000)]), _fine_step([(1.3, 0.002, 20)])
    (0.0005, 0.00025)
    """
    first: dict[tuple[float, float], int] = {}
    every: dict[tuple[float, float], int] = {}
    left = BLOCK_STEPS
    for s, q, c in steps:
        every[(s, q)] = every.get((s, q), 0) + c
        if left > 0:
            first[(s, q)] = first.get((s, q), 0) + min(c, left)
            left -= c
    return min(_coarse_step(first), _coarse_step(every)) / 2


def _fine_pass(
    steps: Sequence[tuple[float, float, int]], delta: float
) -> tuple[float, float] | None:
    """The one-shot path's fine pass: :func:`~dpacct.accountant.pld.schedule_fast.
    fast_upper` of ``steps`` at ``delta`` on :func:`_fine_step`, its groups
    ``UPPER_MAX_FACTOR`` times finer and of about :data:`FINE_GROUP_STEPS` steps: its
    certified epsilon and floor; None where it cannot certify or is not tried (steps
    for which :func:`~dpacct.accountant.pld.schedule_fast._upper_factor` asks less than
    :data:`FINE_MIN_FACTOR`).

    Examples
    --------
    >>> eps, floor = _fine_pass([(1.0, 0.01, 1000)], 1e-5)
    >>> bool(eps <= fast_upper([(1.0, 0.01, 1000)], 1e-5)[0] and floor < 1e-9)
    True
    """
    step = _fine_step(steps)
    if _upper_factor(steps, step) < FINE_MIN_FACTOR:
        return None
    mean = sum(c for _, _, c in steps) / max(len({(s, q) for s, q, _ in steps}), 1)
    cells = min(FINE_GROUP_MAX, max(FINE_GROUP_MIN, int(FINE_GROUP_STEPS // max(mean, 1.0))))
    return fast_upper(steps, delta, step, factor=UPPER_MAX_FACTOR, group_cells=cells)


def _incremental_epsilon(
    steps: Sequence[tuple[float, float, int]], delta: float, **options
) -> tuple[float | None, float, float]:
    """:class:`~dpacct.accountant.pld.incremental.IncrementalEpsilon` ``(delta,
    **options)`` of ``steps`` folded at once: its certified epsilon (None where it
    cannot certify), the history step it used and its certificate's floor (the remove
    direction's mass at ``+inf``: its round-off, aliasing and tails; 1 when None)."""
    inc = IncrementalEpsilon(delta, **options)
    inc.fold(steps)
    try:
        found = inc.epsilon() if inc.ok else None
        read = None if found is None else inc.delta_at(np.array([found]))
    except OverflowError:  # an epsilon beyond exp's range: the engine's route
        found = read = None
    if found is None or read is None or not math.isfinite(found):
        return None, inc.step, 1.0
    return float(found), inc.step, float(read[1])


def _oneshot_upper(
    steps: Sequence[tuple[float, float, int]],
    delta: float,
    tol: float | None,
    merges: Callable[[], bool],
) -> tuple[float | None, bool]:
    """The one-shot path's certified epsilon of the DP-SGD ``steps`` at ``delta`` (None:
    it cannot certify) and whether the engine's composition must answer too (a
    certificate floor above :data:`ENGINE_FLOOR_SHARE` of delta).

    Phases (more than :data:`ONESHOT_COMPOSER_COUNT` steps a distinct step on average,
    or more than :data:`ONESHOT_COMPOSER_CELLS` distinct steps) at the default ``tol``:
    the fine pass alone (:func:`_fine_pass`: every distinct step its own cell on half
    the composer's loss step), where it certifies with its floor within
    :data:`FINE_ALONE_SHARE` of delta and the phases hold at most
    :data:`FINE_ALONE_COUNT` steps on average.
    Otherwise (single steps, a ``tol`` below the default, or a fine pass that cannot
    certify within the share) main's passes, and the fine pass's answer where it was
    made: the ledger's composer first; where its floor is within the share, also a
    finer composition, the smaller kept: more than :data:`ONESHOT_FAST_CELLS` distinct
    steps that the composer rounds together (``merges()``), the composer with
    :data:`ONESHOT_EXACT_STEPS` exact cells; otherwise every distinct step its own cell
    on :data:`ONESHOT_FAST_STEP` (:func:`~dpacct.accountant.pld.schedule_fast.
    fast_upper`), and for single steps also the composer with every step its own cell
    on a quarter of its history step.  A ``tol`` below the default also composes every
    step its own cell on a history step :func:`_fine_halvings` times halved.  Every
    composition is certified: the smallest is a certified answer.  (Session 22 ran
    ``fast_upper`` on :data:`ONESHOT_FAST_STEP` alone on narrow steps, and the review
    found it above the composer on 8 of 12 random shapes: 20 phases of sigma 1.2-1.4,
    q 1.2e-3-2.8e-3, counts 1-40, +1.1e-4 relative at delta 1e-5; the fine pass's step
    follows the composer's, its groups are finer and larger: ``python -m
    benchmarks.oneshot_sweep`` compares it with main's one-shot on random shapes.)
    """
    cells = len({(s, q) for s, q, _ in steps})
    run = sum(c for _, _, c in steps)
    single = run <= ONESHOT_COMPOSER_COUNT * cells and cells <= ONESHOT_COMPOSER_CELLS
    halvings = _fine_halvings(tol)
    fine = None
    if not single and not halvings:
        fine = _fine_pass(steps, delta)
        alone = run <= FINE_ALONE_COUNT * cells
        if fine is not None and alone and fine[1] <= FINE_ALONE_SHARE * delta:
            return fine[0], False
    found, step, floor = _incremental_epsilon(steps, delta)
    loose = floor > ENGINE_FLOOR_SHARE * delta
    found = _smaller(found, None if fine is None else fine[0])
    if found is not None and not loose:
        if cells > ONESHOT_FAST_CELLS and merges():
            found = _smaller(
                found, _incremental_epsilon(steps, delta, exact_steps=ONESHOT_EXACT_STEPS)[0]
            )
        else:
            fast = fast_upper(steps, delta, ONESHOT_FAST_STEP)
            found = _smaller(found, None if fast is None else fast[0])
            if single:
                fine4 = _incremental_epsilon(steps, delta, step=step / 4, exact_steps=cells)[0]
                found = _smaller(found, fine4)
    if found is not None and halvings:
        fine2, _, _ = _incremental_epsilon(steps, delta, step=step / 2**halvings, exact_steps=cells)
        found = _smaller(found, fine2)
    return found, loose


def _smaller(a: float | None, b: float | None) -> float | None:
    """The smaller of two certified answers, either None where it could not certify.

    Examples
    --------
    >>> _smaller(None, 2.0), _smaller(1.0, None), _smaller(3.0, 0.0)
    (2.0, 1.0, 0.0)
    """
    if a is None or b is None:
        return b if a is None else a
    return min(a, b)
