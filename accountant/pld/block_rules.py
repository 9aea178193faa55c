"""The block rules of the online ledger (:mod:`~dpacct.accountant.pld.incremental`).

How folded steps are cut into blocks (:func:`_cut`: by the steps alone), which step a
cell of several steps is composed at (:func:`_composed`), how fine a block's grid is
(:func:`_factor`) and the history's (:func:`_coarse_step`), and how much of a block
PMF's ends goes to ``+inf`` (:func:`_trim`).  Each is a function of the steps alone
(tightness and speed only: any block, factor or step gives a certified bound).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ..numerics import TINY
from .pld_fft import _U
from .schedule_fast import FAST_STEP, _step_variance

__all__: list[str] = []

#: folded steps wait, as hypothetical steps of every query, until a new distinct cell
#: would make this many, or they number :data:`BLOCK_STEPS`; then the block is
#: composed into the kept spectra.  Blocks are cut by the steps alone, so the same
#: steps are composed in the same blocks however they were batched or queried
BLOCK_CELLS = 32
#: ... and a block holds at most this many steps (a one-cell history, a constant-sigma
#: loop, is committed in blocks of this many steps instead of staying pending)
BLOCK_STEPS = 256
#: a block of ``c`` distinct cells is composed on a loss grid ``K`` times finer than the
#: history's, then re-discretised once onto it (:func:`_factor`): ``K`` a power of two
#: in ``[FINE_MIN, FINE_MAX]`` with ``c K <= FINE_BUDGET`` (the cost of a block grows
#: with ``c K``: each cell is discretised and transformed on the fine grid), the
#: smallest at which the fine grid adds at most ``FINE_VARIANCE_SHARE`` to the block's
#: loss variance
FINE_BUDGET = 64
FINE_MIN = 2
FINE_MAX = 64
FINE_VARIANCE_SHARE = 1e-5
#: ... and ``FINE_BUDGET`` is this for a block whose cells each hold steps of one
#: ``(sigma, q)`` (:func:`_budget`): nothing was merged by rounding, so the fine grid's
#: widening is what is left to gain (1 000 random phases x 10: 64 -> 128 moves the
#: answer 5.321342 -> 5.320706, 0.47 -> 0.74 s); a block that merged steps of several
#: values into a cell keeps ``FINE_BUDGET`` (its rounding, up to a cell's width of
#: sigma, outweighs the fine grid's widening: 10 000 decaying sigmas move 12.339087 ->
#: 12.338748 at 1.7x the time).  128 -> 256 once the blocks' round-off bound became
#: componentwise (issue 37, session 18: it no longer dominates the fine grid's widening):
#: 1 000 random phases 5.320563 -> 5.320406 (dp_accounting's default 5.320348) at 1.4-1.6x
#: the time, 100 phases 1.842867 -> 1.842843 (0.09 -> 0.2 s), 10 000 phases 22.446176 ->
#: 22.445496 at 1.7x (CPU, loaded machine)
EXACT_BUDGET = 256
#: ... and at least this factor times its cells for a block of cells of one ``(sigma,
#: q)`` each (:func:`_budget`), so that a block of :data:`EXACT_BLOCK_CELLS` distinct
#: steps (a decaying sigma kept exact, :data:`EXACT_STEPS`) is composed at ``K = 8``,
#: not :data:`FINE_MIN`.  16 would take the first 1 906 steps of sigma 1.5 * 0.9999^t
#: from 1.494943 to 1.494924 (dp_accounting's default 1.494924) and 1 000 phases of
#: log-uniform q from 1.483893 to 1.483790 (1.483801), at twice the exact blocks' cost
#: (the per-step budget-filter tests 1.3x -> 2-4x main's time); CPU, loaded machine
EXACT_FACTOR = 8
#: a folded step's own ``(sigma, q)`` is its cell (no rounding) while fewer than this
#: many distinct pairs were kept so, in the order the steps are folded
#: (:meth:`~dpacct.accountant.pld.incremental.IncrementalEpsilon._cells`): a schedule
#: of a few hundred distinct steps is composed as it is.  Rounding them is what held a
#: decaying sigma above dp_accounting's default PLD (issue 37, session 19: the first
#: 1 906 steps of sigma 1.5 * 0.9999^t, +9.0e-4 relative rounded on the 2^-10 grid,
#: +1.3e-5 at 2048).  Each exact cell is discretised and composed on its own, and an
#: online ledger pays for them at every query: the decaying online loop (sigma 2 *
#: 0.9999^t, epsilon every 100 of 10 000 steps) takes 1.7x main's CPU at 2048, 1.4x at
#: 1024, 1.1-1.2x at 512 and 256, 1.0x at 0, while the 1 906 steps gain only once all
#: are exact (1.496273 at 0, 1.496120 at 256, 1.495960 at 512, 1.494943 at 2048;
#: dp_accounting 1.494924).  256 kept short schedules exact (200 decaying steps within
#: 1e-4 of dp_accounting) at about a tenth of the online cost (session 19, sched2).
#: Session 20 (first round, exact blocks from kept runs): the online loop's median
#: CPU over 5 paired rounds, main 1.377 s, 0: 1.380, 128: 1.362, 256: 1.411 (1.025x;
#: 4 more pairs 1.00-1.12x), 2048: 1.6x; the issue's target is "no slower than main", so
#: 128: 200 decaying steps +4.3e-5 over dp_accounting (256: +2.1e-5; main +5.3e-4), the
#: 1906 steps 1.496208 (256: 1.496121; main 1.496273)
EXACT_STEPS = 128
#: ... and a block whose cells are all exact, so each composed as it is, takes up to
#: this many of them instead of :data:`BLOCK_CELLS`: every block pays one coarsening
#: ``h^2 / 4`` onto the history's grid, which at :data:`BLOCK_CELLS` a block would
#: dominate a decaying schedule's widening (1 906 decaying steps: blocks of 31 steps
#: 1.494988, of 256 steps 1.494940, dp_accounting 1.494924)
EXACT_BLOCK_CELLS = 256
#: below this delta a block at the exact budget (:data:`EXACT_BUDGET`: cells of one
#: ``(sigma, q)`` each) is composed at most :data:`SMALL_DELTA_FACTOR` times finer than
#: the history (:func:`_delta_factor`).  A block's l1 error (its window's round-off and
#: aliasing) is added to delta, and it grows with the fine window's length, so with
#: ``K`` (128 decaying steps, sigma 1.2 * 0.995^t, q 0.02, at delta 5e-8: 2.95e-11 at
#: ``K = 8``, 1.24e-11 at ``K = 2``).  Measured on 6 shapes (25-200 decaying steps, 20
#: and 40 phases) at delta 2e-8 .. 1e-9, every answer at or below main d5508ca's either
#: way; ``K <= 2`` is tighter on all six at 3e-9 and 1e-9 (128 decaying steps at 1e-9:
#: 6.715141 at ``K = 8``, 6.709286 at ``K <= 2``, main 6.720725) but up to 2.6e-5
#: above main at 2e-8 (20 phases x 10), so it applies below 5e-9 (issue 37, session 20)
SMALL_DELTA = 5e-9
SMALL_DELTA_FACTOR = 2
#: the history's loss step (unless given): the coarsest of ``FAST_STEP / 2^i``
#: (``i = 0..COARSE_LEVELS``) at which re-discretising a block onto it adds at
#: most this share to the loss variance of a full block of steps like the first
#: (:func:`_coarse_step`).  Every later block adds at most ``step^2 / 4`` too, so a
#: history of full blocks like its first widens by about this share in all; with
#: :data:`FINE_VARIANCE_SHARE` it keeps a one-phase run calibrated to its budget
#: (the calibrators leave about ``3e-5`` of epsilon unused) inside it: measured on
#: eps 1, 3, 8 at q 0.004-0.02, tests/test_online.py
COARSE_VARIANCE_SHARE = 1e-4
COARSE_LEVELS = 4
#: a history whose first block holds several cells is composed on a finer step than
#: :data:`COARSE_VARIANCE_SHARE` alone picks (:func:`_history_step`) while a full block
#: like its first widens the loss, by its coarsening ``h^2 / 4`` and its steps' fine
#: grid ``n (h / K)^2 / 4`` (``K`` its factor, capped by the block's cost budget), by
#: more than ``n`` connect-the-dots discretisations at this loss interval would (the
#: default ``value_discretization_interval`` of dp_accounting's PLD accountant, the
#: issue-37 comparator) *and* by more than :data:`HISTORY_VARIANCE_SHARE` of the
#: block's loss variance.  A block of many distinct cells has its factor capped (1 000
#: random phases x 10: ``K = 8``), so its steps' fine grid, not the coarsening, was most
#: of the history's widening (issue 37, session 31)
PEER_INTERVAL = 1e-4
HISTORY_VARIANCE_SHARE = 1e-5
#: ... only for a first block whose cells hold at least this many steps each on
#: average (phases): a schedule of per-step values (a decaying sigma) keeps the coarse
#: rule, since past :data:`EXACT_STEPS` distinct steps its cells merge neighbouring
#: values and their rounding, not the grid, is what separates it from dp_accounting
#: (the first 1 906 steps of 1.5 * 0.9999^t: +8.6e-4 over dp_accounting's default at
#: the coarse step, +6.6e-4 at half of it for 1.7x the CPU; 10 000 steps of 2 *
#: 0.9999^t: 5.860267 -> 5.859671 at 1.9x; one unloaded run each, session 31), and a
#: finer step would slow the decaying online loop by as much
HISTORY_MIN_COUNT = 2
#: ... and only at a delta of at least this: the blocks' round-off and aliasing bounds
#: grow with their windows, which a finer step lengthens, and below it they outweigh
#: the widening saved (20 random phases x 10 at delta 1e-7: +4.8e-6, at 1e-9: +1.7e-4
#: against the coarse step; 100 phases x 10 +2.4e-5 and +5.9e-4; at 1e-6 and 1e-5 every
#: shape measured was tighter, session 31), the regime of :data:`SMALL_DELTA`'s rule
HISTORY_MIN_DELTA = 1e-6
#: the blocks' aliasing windows: each gets this fraction of the history's aliasing
#: budget (``1e-12`` at delta ``1e-5``).  A block's aliasing at the window it takes is
#: computed and enters its l1 error, so any share is certified; the share only sizes
#: the window.  It was this fraction over the horizon (``1e-18`` a block at ``2^20``
#: steps), far below the block's own round-off bound (``1e-10``-``3e-10`` a block of
#: 256 steps), so the fine windows were longer than they need be, and the round-off
#: bound grows with their length: 1 000 random phases x 10, ``1e-3 / 2^20 -> 1e-3``
#: moved the answer 5.320813 -> 5.320760 and the time 0.68 -> 0.61 s (1e-4: 5.320780,
#: 1e-2: 5.320768); a thousand blocks spend the history's budget once more
BLOCK_ALIAS_SHARE = 1e-3
#: ... the largest of the aliasing budgets a block's window is sized at: the budgets
#: ``BLOCK_ALIAS_SHARE * 2^(-10 j)``, ``j`` below this, are tried and the window with the
#: smallest aliasing plus round-off bound taken
#: (:func:`~dpacct.accountant.pld.groups._compose_spectrum`); the last is the former
#: budget (that share over a horizon of ``2^20`` steps), so a block of narrow steps,
#: whose round-off bound is small, keeps its former window
BLOCK_ALIAS_TRIES = 3
#: a block PMF's end runs of mass up to this share of the per-step tail cut times its
#: steps go to ``+inf`` (:func:`_trim`): shorter PMFs to keep, a shorter window
TRIM_SHARE = 0.5

Items = dict[tuple[float, float], int]
BlockKey = tuple[tuple[tuple[float, float], int], ...]


def _trim(first: int, pmf: np.ndarray, cut: float) -> tuple[int, np.ndarray, float]:
    """``pmf`` without its end runs of total mass at most ``cut / 2`` each, and an upper
    bound on the mass removed (it goes to ``+inf``, which only raises the hockey-stick
    curve: the integrand ``(1 - e^{eps - L})_+`` is at most its value 1 there).  The
    computed partial sums of non-negative terms are within a relative ``size u`` of the
    exact ones (Higham 2002, Section 3.1), so the bound is the computed sum times
    ``1 + (size + 2) u``.  At least one entry is kept."""
    if pmf.size < 2 or not cut > 0.0:
        return first, pmf, 0.0
    half = 0.5 * cut / (1.0 + (pmf.size + 2) * _U)
    left = np.cumsum(pmf)
    right = np.cumsum(pmf[::-1])
    lo = int(np.searchsorted(left, half, side="right"))
    hi = pmf.size - int(np.searchsorted(right, half, side="right"))
    if hi <= lo:
        return first, pmf, 0.0
    moved = (left[lo - 1] if lo else 0.0) + (right[pmf.size - hi - 1] if hi < pmf.size else 0.0)
    if moved == 0.0:
        return first, pmf, 0.0
    return first + lo, pmf[lo:hi].copy(), float(moved) * (1.0 + (pmf.size + 2) * _U) + TINY


def _variance(items: Items) -> tuple[float, float]:
    """The loss variance of the steps ``items`` (cell -> count), by
    :func:`~dpacct.accountant.pld.schedule_fast._step_variance`, and their number."""
    var, k = _step_variance([(s, q, c) for (s, q), c in items.items()])
    return float(k @ var), float(k.sum())


def _factor(items: Items, step: float, budget: int = 0) -> int:
    """The refinement ``K`` of a block (a power of two): the smallest from
    :data:`FINE_MIN` at which connect-the-dots on the fine grid adds at most
    :data:`FINE_VARIANCE_SHARE` to the block's loss variance (each step at most
    ``(step / K)^2 / 4``; a step's variance is ``q^2 (e^{1/sigma^2} - 1)``), within the
    cost budget ``c K <= budget`` (default :data:`FINE_BUDGET`) for ``c`` distinct cells
    and :data:`FINE_MAX`.
    A function of the block alone (tightness and speed only: any ``K`` is sound)."""
    var, steps = _variance(items)
    need = step * math.sqrt(steps / (4.0 * FINE_VARIANCE_SHARE * var)) if var > 0 else math.inf
    cap = min(FINE_MAX, max((budget or FINE_BUDGET) // len(items), FINE_MIN))
    k = FINE_MIN
    while k < need and 2 * k <= cap:
        k *= 2
    return k


def _delta_factor(factor: int, budget: int, delta: float) -> int:
    """``factor`` (:func:`_factor`) at most :data:`SMALL_DELTA_FACTOR` for a block at the
    exact budget (``budget >= EXACT_BUDGET``) below :data:`SMALL_DELTA`, else itself.
    A function of the block and the ledger's delta (tightness only: any factor is sound).

    Examples
    --------
    >>> _delta_factor(8, 1024, 1e-9), _delta_factor(8, 1024, 1e-5), _delta_factor(8, 64, 1e-9)
    (2, 8, 8)
    """
    if delta < SMALL_DELTA and budget >= EXACT_BUDGET:
        return min(factor, SMALL_DELTA_FACTOR)
    return factor


def _budget(block: Members) -> int:
    """The fine-grid cost budget of a block being cut (cell -> its steps' own values):
    :data:`EXACT_BUDGET`, at least :data:`EXACT_FACTOR` times its cells, when every
    cell holds steps of one ``(sigma, q)``, else :data:`FINE_BUDGET`.  A function of the
    steps alone.

    Examples
    --------
    >>> _budget({(1.0, 0.01): {(1.0, 0.01): 5}, (1.25, 0.01): {(1.25, 0.01): 5}})
    256
    >>> _budget({(0.9 + k / 1e3, 0.01): {(0.9 + k / 1e3, 0.01): 1} for k in range(100)})
    800
    >>> _budget({(1.0, 0.01): {(1.0, 0.01): 5, (1.0005, 0.01): 5}})
    64
    """
    if all(len(m) == 1 for m in block.values()):
        return max(EXACT_BUDGET, EXACT_FACTOR * len(block))
    return FINE_BUDGET


def _coarse_step(items: Items) -> float:
    """The history's loss step chosen from its first block ``items`` (cell -> count):
    the coarsest ``FAST_STEP / 2^i``, ``i <= COARSE_LEVELS``, whose connect-the-dots
    widening ``step^2 / 4`` is at most :data:`COARSE_VARIANCE_SHARE` of the loss
    variance of :data:`BLOCK_STEPS` steps like the block's (their mean variance
    ``q^2 (e^{1/sigma^2} - 1)`` per step; a block cut early by its distinct cells is
    not a measure of the loss scale).  A function of the steps alone (tightness and
    speed only: any step is sound).

    Examples
    --------
    >>> _coarse_step({(2.0, 0.1): 256})  # wide steps: the default grid
    0.001
    >>> _coarse_step({(3.8, 0.01): 256})  # a run calibrated to eps = 1: a finer one
    0.0005
    """
    var, steps = _variance(items)
    var *= BLOCK_STEPS / max(steps, 1.0)
    step = FAST_STEP
    for _ in range(COARSE_LEVELS):
        if step * step / 4.0 <= COARSE_VARIANCE_SHARE * var:
            break
        step /= 2.0
    return step


def _history_step(items: Items, budget: int, delta: float = 1e-5) -> float:
    """The history's loss step chosen from its first block ``items`` (cell -> count,
    composed at the fine-grid cost budget ``budget``, for answers at ``delta``):
    :func:`_coarse_step`, halved (down to ``FAST_STEP / 2^COARSE_LEVELS``) where
    ``delta >= HISTORY_MIN_DELTA`` (:data:`HISTORY_MIN_DELTA`), while the block has
    more than one cell,
    of :data:`HISTORY_MIN_COUNT` steps each on average (phases), and a full block like
    it (:data:`BLOCK_STEPS` steps ``n``, the variance per step of ``items``) widens the
    loss variance, by its coarsening onto the step ``h`` and its steps' fine grid at
    the factor ``K`` of :func:`_factor`,

    .. math:: W(h) = h^2 / 4 + n (h / K)^2 / 4,

    by more than both ``n PEER_INTERVAL^2 / 4`` (:data:`PEER_INTERVAL`) and
    :data:`HISTORY_VARIANCE_SHARE` of its variance.  ``h^2 / 4`` per re-discretisation
    is the widening measure :func:`_coarse_step` and :func:`_factor` use (a heuristic
    of this module's rules, not a bound the certificate relies on: the certificate is
    computed, whatever the step).  A one-cell block (a constant-sigma run) keeps
    :func:`_coarse_step` (its factor grows to its own variance share), and so does a
    block of per-step values.  A function of the steps alone (tightness and speed
    only: any step is sound).

    Examples
    --------
    >>> _history_step({(1.1, 0.01): 256}, 256) == _coarse_step({(1.1, 0.01): 256})
    True
    >>> phases = {(1.0 + k / 50, 0.01): 10 for k in range(25)}  # 25 phases x 10
    >>> _coarse_step(phases), _history_step(phases, 256), _history_step(phases, 256, 1e-9)
    (0.001, 0.0005, 0.001)
    """
    step = _coarse_step(items)
    var, steps = _variance(items)
    if len(items) < 2 or steps < HISTORY_MIN_COUNT * len(items) or delta < HISTORY_MIN_DELTA:
        return step
    var *= BLOCK_STEPS / max(steps, 1.0)
    target = max(BLOCK_STEPS * PEER_INTERVAL**2 / 4.0, HISTORY_VARIANCE_SHARE * var)
    finest = FAST_STEP / 2.0**COARSE_LEVELS
    while step > finest:
        k = _factor(items, step, budget)
        if step * step / 4.0 * (1.0 + BLOCK_STEPS / (k * k)) <= target:
            break
        step /= 2.0
    return step


Cell = tuple[float, float]
#: a block being cut: cell -> {the steps' own (sigma, q) -> count}
Members = dict[Cell, dict[Cell, int]]


def _cut(
    pending: Members, pending_steps: int, steps: Iterable[tuple[Cell, Cell, int]]
) -> tuple[list[Members], Members, int]:
    """The blocks that folding ``steps`` (``(cell, (sigma, q), count)``) after
    ``pending`` commits, and what is left pending: a block is committed before a new
    distinct cell would make it :data:`BLOCK_CELLS` (:data:`EXACT_BLOCK_CELLS` while
    every cell, the new one too, is a step's own ``(sigma, q)``) and as soon as it
    holds :data:`BLOCK_STEPS` steps.  A function of the steps alone (a step of count
    ``k`` is ``k`` steps of count 1).

    Examples
    --------
    >>> steps = [((1 + k / 1e3, 0.01),) * 2 + (1,) for k in range(300)]
    >>> blocks, pending, n = _cut({}, 0, steps)  # exact cells: 256 a block
    >>> [len(b) for b in blocks], len(pending), n
    ([256], 44, 44)
    >>> rounded = [((1.0 + k // 2 / 1e3, 0.01), (1 + k / 2e3, 0.01), 1) for k in range(100)]
    >>> [len(b) for b in _cut({}, 0, rounded)[0]]  # merged cells: 32 a block
    [32]
    """
    pending = {cell: dict(m) for cell, m in pending.items()}
    blocks: list[Members] = []
    # cells holding steps other than their own value (none in an all-exact block)
    mixed = sum(1 for cell, m in pending.items() if set(m) != {cell})
    for cell, own, count in steps:
        while count > 0:
            limit = EXACT_BLOCK_CELLS if mixed == 0 and cell == own else BLOCK_CELLS
            if cell not in pending and len(pending) >= limit:
                blocks.append(pending)
                pending, pending_steps, mixed = {}, 0, 0
            take = min(count, BLOCK_STEPS - pending_steps)
            members = pending.setdefault(cell, {})
            was_exact = set(members) <= {cell}
            members[own] = members.get(own, 0) + take
            mixed += was_exact and own != cell
            pending_steps += take
            count -= take
            if pending_steps == BLOCK_STEPS:
                blocks.append(pending)
                pending, pending_steps, mixed = {}, 0, 0
    return blocks, pending, pending_steps


def _composed(block: Members) -> Items:
    """The cells a block composes: a cell holding steps of one ``(sigma, q)`` composes
    them as they are; a cell holding several, all its steps at its members' smallest
    sigma and largest q (a dominating step of each of them, at most as far from them
    as the cell's grid point, which dominates them too)."""
    out: Items = {}
    for members in block.values():
        if len(members) == 1:
            ((own, count),) = members.items()
        else:
            own = (min(s for s, _ in members), max(q for _, q in members))
            count = sum(members.values())
        out[own] = out.get(own, 0) + count
    return out
