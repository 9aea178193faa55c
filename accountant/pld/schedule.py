"""DP-SGD schedules whose noise multiplier and sample rate change: rounded, merged, bracketed.

A real training loop changes ``(sigma, q)`` all the time: noise schedulers (Opacus'
``ExponentialNoise``, ``StepNoise``), batch-size warm-up, a new sigma every epoch.  A
ledger with a distinct ``(sigma, q)`` at every step would cost one PLD discretisation
and one convolution per step.  Here every step is *rounded to a cell* of a geometric
grid (relative width ``grid`` in both sigma and q) and the steps of one cell merge into
one phase with a count, so the cost follows the number of cells, not of steps.

Why rounding is sound: monotonicity of the subsampled Gaussian's privacy profile
--------------------------------------------------------------------------------
Write ``M(sigma, q)`` for one Poisson-subsampled Gaussian step (sensitivity 1).  Its
privacy is described, for both add/remove directions, by the dominating pair
``P = (1 - q) N(0, sigma^2) + q N(1, sigma^2)``, ``Q = N(0, sigma^2)`` and its swap
(Zhu, Dong & Wang 2022, "Optimal accounting of differential privacy via characteristic
function", Theorem 11; Mironov, Talwar & Zhang 2019, Section 3 for RDP).  For
``sigma' >= sigma`` and ``q' <= q`` the pair of ``M(sigma', q')`` is a *post-processing*
of the pair of ``M(sigma, q)`` by one Markov kernel ``K`` applied to both members:

* larger noise: ``K(y) = y + N(0, sigma'^2 - sigma^2)`` maps ``N(m, sigma^2)`` to
  ``N(m, sigma'^2)`` for every mean ``m``, hence each mixture to the same mixture;
* smaller rate: with ``t = q'/q``, ``K(y) = y`` with probability ``t`` and a fresh
  ``N(0, sigma^2)`` draw otherwise maps ``P_q`` to ``(1 - t) Q + t P_q = P_{q'}`` and
  ``Q`` to ``Q``.

By the data-processing inequality for the hockey-stick divergence (equivalently
Blackwell's theorem: ``T(K P, K Q) >= T(P, Q)``; Dong, Roth & Su 2022, Lemma 2.9), the
privacy profile ``delta(eps)`` of ``M(sigma', q')`` lies below that of ``M(sigma, q)``
at every ``eps``, in both directions, and so does every Renyi divergence.  Composition
preserves the order (Dong, Roth & Su 2022, Lemma 3.3: composing dominated pairs gives
a dominated pair), so

* rounding every step to a cell with **smaller sigma and larger q** gives a schedule
  whose composition dominates the true one: its certified *upper* bound is an upper
  bound for the real schedule;
* rounding **larger sigma, smaller q** gives a dominated schedule: its certified
  *lower* bound is a lower bound for the real schedule.

The two bounds are never clipped to each other; the bracket's width is the price of
the grid (about four times ``grid`` relative for a smoothly decaying sigma, plus the
PLD discretisation's own bracket).  A coarser grid merges more steps (faster, wider);
a finer one fewer.  Steps whose ``(sigma, q)`` sit exactly on the grid (in particular
the few-phase schedules of ordinary training) are not moved at all: the rounding
is the identity for them.

The parts of the schedule's engine live beside this module: the rounding grid
(:mod:`~dpacct.accountant.pld.schedule_grid`), the vectorised subsampled-Gaussian cells,
a discretiser of the PLD engine (:mod:`~dpacct.accountant.pld.sgm_cells`), their one-shot
composition by the engine's FFT kernel (:mod:`~dpacct.accountant.pld.schedule_fast`,
:mod:`~dpacct.accountant.pld.pld_fft`) and the online ledger path
(:mod:`~dpacct.accountant.pld.incremental`).

:class:`ScheduleMechanism` is the composition of the rounded phases.  For many phases
it composes them in chunks and combines the chunks' PLDs by a balanced tree of
FFT convolutions (with the same certified tail cuts and coarsening as the engine), and
shows a ``tqdm`` progress bar when the work takes more than a couple of seconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..laws.quantile_batch import prefill_quantiles
from ..mechanism import Mechanism, PLDSettings
from ..numerics import LazyBar
from ..rdp.rdp_floor import floor_curve, rdp_log_delta_floor
from ..transformers.compose import ComposedMechanism, joint_quantile_requests
from ..validation import (
    check_count,
    check_positive,
    check_sample_rate,
    is_real_type,
    show_value,
)
from .block_rules import EXACT_STEPS
from .grid import GridPLD
from .incremental import IncrementalEpsilon
from .optimistic_rule import lower_fine_rule
from .pld_settings import REFINE_STEPS

# the fast path's names, re-exported where the ledger and the tests read them
from .schedule_fast import FAST_STEP as FAST_STEP
from .schedule_fast import _lower_step as _lower_step
from .schedule_fast import _small_q_step, fast_epsilon_bounds
from .schedule_grid import (
    DEFAULT_GRID,
    EXACT_CELLS,
    EXACT_VALUES,
    _cell_value,
    _check_grid,
    _round,
)
from .schedule_oneshot import (
    _engine_tol,
    _fine_halvings,
    _oneshot_upper,
)

__all__ = [
    "DEFAULT_GRID",
    "EXACT_CELLS",
    "EXACT_VALUES",
    "IncrementalEpsilon",
    "ScheduleMechanism",
    "fast_epsilon_bounds",
    "round_schedule",
    "round_step",
    "schedule_mechanism",
    "schedule_reference",
]
#: phases composed together before the chunks are combined by a tree of convolutions
CHUNK = 16
#: :func:`schedule_mechanism` answers at most this many distinct phases by the engine's
#: composition, more by the ledger's machinery: the ledger's own threshold
#: (:data:`~dpacct.accountant.routes.EXACT_PHASES`, between its ``"exact"`` and
#: ``"online"`` routes; not imported, as the router sits above this module)
ENGINE_PHASES = 16
#: a progress bar appears only after this many seconds of accounting
PROGRESS_DELAY = 2.0


def round_step(
    noise_multiplier: float, sample_rate: float, grid: float = DEFAULT_GRID, *, upper: bool = True
) -> tuple[float, float]:
    """Round one step ``(sigma, q)`` to its cell: dominating (``upper``) or dominated.

    Cells are the points ``exp(k * log1p(grid))`` (integer ``k``) in both sigma and q.
    ``upper=True`` returns the largest cell sigma ``<= sigma`` and the smallest cell q
    ``>= q`` (capped at 1): a step that dominates the given one (see the module
    docstring), so bounds computed from it are upper bounds.  ``upper=False`` rounds
    the other way, for lower bounds.  A value already on the grid stays put.

    Parameters
    ----------
    noise_multiplier : float
        sigma, > 0.
    sample_rate : float
        q, in (0, 1].
    grid : float
        Relative cell width, in (0, 0.5).
    upper : bool
        Direction of the rounding.

    Returns
    -------
    (float, float)
        The cell's ``(sigma, q)``.

    Examples
    --------
    >>> s, q = round_step(1.2345, 0.0123, grid=0.01)
    >>> bool(s <= 1.2345 and q >= 0.0123)
    True
    >>> s2, q2 = round_step(1.2345, 0.0123, grid=0.01, upper=False)
    >>> bool(s2 >= 1.2345 and q2 <= 0.0123)
    True
    """
    sigma = check_positive("noise_multiplier", noise_multiplier)
    q = check_sample_rate(sample_rate)
    g = _check_grid(grid)
    s_cell, q_cell = _round(sigma, q, math.log1p(g), upper)
    return s_cell, q_cell


def round_schedule(
    steps: Iterable[tuple[float, float, int]],
    grid: float = DEFAULT_GRID,
    *,
    upper: bool = True,
    exact_cells: int = 0,
    exact_values: int = 0,
) -> list[tuple[float, float, int]]:
    """Round every ``(sigma, q, count)`` phase to its cell and merge equal cells.

    Rounding only buys speed when it merges steps.  With ``exact_cells`` a schedule of
    at most that many distinct ``(sigma, q)`` pairs is merged but not rounded, a longer
    one is rounded to the finest of ``grid / 4``, ``grid / 2`` (relative cell widths)
    that leaves at most ``exact_cells`` cells, else to ``grid``; with
    ``exact_values`` a coordinate taking at most that many distinct values (the
    constant ``q`` of a noise scheduler, the few sigmas of a batch-size warm-up) keeps
    its values: the identity is a rounding in both directions.

    Parameters
    ----------
    steps : iterable of (float, float, int)
        Phases ``(noise_multiplier, sample_rate, count)``, in any order.
    grid : float
        Relative cell width in (0, 0.5); see :func:`round_step`.
    upper : bool
        ``True``: dominating cells (for upper bounds); ``False``: dominated cells.
    exact_cells, exact_values : int
        Thresholds below which nothing, respectively one coordinate, is rounded
        (0: everything is rounded).

    Returns
    -------
    list of (float, float, int)
        The merged phases ``(sigma_cell, q_cell, total_count)``, sorted by cell.

    Examples
    --------
    >>> sched = [(1.0 * 0.9999**t, 0.01, 1) for t in range(1000)]
    >>> merged = round_schedule(sched, grid=2**-8)
    >>> sum(c for _, _, c in merged), len(merged) < 40
    (1000, True)
    >>> {q for _, q, _ in round_schedule(sched, grid=2**-8, exact_values=16)}
    {0.01}
    >>> len(round_schedule(sched, grid=2**-8, exact_cells=1000))
    1000
    >>> len(round_schedule(sched, grid=2**-8, exact_cells=60))  # grid / 2 fits
    53
    """
    g = _check_grid(grid)
    w = math.log1p(g)
    exact_cells = check_count(exact_cells, "exact_cells", allow_zero=True)
    exact_values = check_count(exact_values, "exact_values", allow_zero=True)
    sig, qs, counts = _schedule_arrays(steps)
    if sig.size == 0:
        return []
    pairs, inverse = np.unique(np.stack([sig, qs], axis=1), axis=0, return_inverse=True)
    if pairs.shape[0] > exact_cells:
        keep_s = np.unique(sig).size <= exact_values
        keep_q = np.unique(qs).size <= exact_values
        # with a cell budget, the finest of grid / 4, grid / 2 whose cells fit in it
        for refine in (4, 2, 1) if exact_cells else (1,):
            w = math.log1p(g / refine)
            s_cell = sig if keep_s else _round_values(sig, w, down=upper)
            q_cell = qs if keep_q else _round_values(qs, w, down=not upper)
            if upper:
                q_cell = np.minimum(q_cell, 1.0)
            stacked = np.stack([s_cell, q_cell], axis=1)
            pairs, inverse = np.unique(stacked, axis=0, return_inverse=True)
            if pairs.shape[0] <= exact_cells:
                break
    total = np.zeros(pairs.shape[0], dtype=np.int64)
    np.add.at(total, inverse.reshape(-1), counts)
    check_count(int(np.bincount(inverse.reshape(-1), weights=counts).max()), "merged count")
    return [
        (float(s), float(q), int(c))
        for (s, q), c in zip(pairs.tolist(), total.tolist(), strict=True)
    ]


#: the bracket width (relative to its upper end) a ledger's ``epsilon_bounds`` is
#: refined to when the caller asks for one without a number (``width=True``); a bracket
#: is refined only when asked (:func:`_first_lower`, :func:`_refined_lower`): each
#: halving of the lower end's loss step costs about twice the last, and a ledger's
#: ``epsilon_bounds`` refined by default took 2-10x main's time (issue 37, session 20)
BRACKET_WIDTH = 1e-4
#: ... from :func:`_lower_step`'s step halved this many times (one more than the fine
#: first lower end, :func:`_first_lower`), whatever the width: each halving narrows a
#: bracket 1.6-3.6 times, less as it narrows (1 000 random phases x 10, steps 5e-4 ..
#: 6.25e-5: widths 3.9e-4, 1.1e-4, 4.2e-5, 2.6e-5).  It jumped to as many halvings as
#: the width asked (2.5 a factor of the width), and a finer window's larger round-off
#: bound made width 1e-6 on 300 decaying steps end lower than 1e-5 after 4x the CPU
#: (issue 37, session 20 review)
LOWER_FIRST_HALVINGS = 2
#: ... on a step no finer than this
LOWER_MIN_STEP = FAST_STEP / 32
#: ... and at most this many attempts (each a halving finer than the last), stopping
#: once an attempt narrows the bracket by less than this share (at a half, 17 phases x
#: 15 stopped at 1.01e-4 wide asked for 1e-4)
LOWER_REFINES = 4
LOWER_MIN_NARROW = 0.25
#: distinct steps a fine first lower end (:func:`_first_lower` with ``fine``) keeps
#: unrounded, or at most the cells of its finer rounding beyond (the default keeps
#: ``EXACT_CELLS``)
LOWER_EXACT_STEPS = 2048


def _first_lower(
    steps: Sequence[tuple[float, float, int]],
    delta: float,
    grid: float = DEFAULT_GRID,
    fine: bool = False,
) -> float | None:
    """The certified lower end of a ledger's DP-SGD schedule ``steps`` (its records
    rounded down, ``(sigma, q, count)``) at ``delta``, by one call of
    :func:`~dpacct.accountant.pld.schedule_fast.fast_epsilon_bounds` (``upper=False``),
    or None when it cannot certify: the steps rounded on ``grid`` beyond ``EXACT_CELLS``
    distinct ones (a coordinate with at most ``EXACT_VALUES`` values keeps them), on
    :func:`_lower_step`'s step.  With ``fine`` (a caller asked for a bracket width): with
    at most ``EXACT_CELLS`` distinct steps, on that step halved once (1 000 random
    phases x 10: width 3.9e-4 -> 1.1e-4 for 1.8x the time); with more, the steps
    unrounded up to :data:`LOWER_EXACT_STEPS` distinct ones, beyond rounded on the
    finest of ``grid / 4``, ``grid / 2`` that leaves at most that many cells
    (:func:`round_schedule`), else None (the default's own cells: 3 000 random single
    steps, 2 996 cells on ``grid``; 10 000 steps of sigma 2 * 0.9999^t, 1 025).  Where
    the steps' loss spreads are a bin or two of that step (small q,
    :func:`~dpacct.accountant.pld.schedule_fast._small_q_step`) also on a finer step,
    the larger lower end kept.  Unrounded phases at ``delta >= 1e-6``: on optimistic fine
    groups (:func:`~dpacct.accountant.pld.optimistic_rule.lower_fine_rule`; 1 000 random
    phases x 10: 3.8e-4 -> 5.5e-5 wide for 1.1x the time).  Speed and tightness only:
    every setting is a certified lower bound.

    Examples
    --------
    >>> steps = [(1.0, 0.01, 20)]
    >>> lo = fast_epsilon_bounds(steps, 1e-5, step=_lower_step(steps), upper=False)[0]
    >>> _first_lower(steps, 1e-5) == lo
    True
    >>> _first_lower(steps, 1e-5, fine=True) >= lo
    True
    """
    distinct = len({(s, q) for s, q, _ in steps})
    # a width asked: more distinct steps kept (main compared with EXACT_STEPS, 128
    # since session 20, below EXACT_CELLS: the branch was dead and a fine first lower
    # end of more than EXACT_CELLS distinct steps was None)
    cells = LOWER_EXACT_STEPS if fine else EXACT_CELLS
    down = round_schedule(steps, grid, upper=False, exact_cells=cells, exact_values=EXACT_VALUES)
    if fine and distinct > EXACT_CELLS and down == round_schedule(
        steps, grid, upper=False, exact_cells=EXACT_CELLS, exact_values=EXACT_VALUES
    ):
        return None  # the default's own cells (and step): nothing finer
    step = _lower_step(down)
    if fine and distinct <= EXACT_CELLS:
        step = max(step / 2, LOWER_MIN_STEP)
    # phases unrounded: the optimistic fine groups (issue 37, session 32)
    rule = None if fine or distinct > EXACT_CELLS else lower_fine_rule(down, delta, FAST_STEP)
    kw = {} if rule is None else {"step": rule[0], "lower_factor": rule[1]}
    lo = fast_epsilon_bounds(down, delta, **({"step": step} | kw), upper=False)
    finer = _small_q_step(down, step)
    if finer < step:
        # small q: the steps' loss spreads are a bin or two of ``step`` (the lower end
        # 35 % below the upper); both ends are certified lower bounds, the larger kept
        other = fast_epsilon_bounds(down, delta, step=finer, upper=False)
        if other is not None:
            lo = other if lo is None else (max(lo[0], other[0]), lo[1])
    return None if lo is None else float(lo[0])


def _refined_lower(
    steps: Sequence[tuple[float, float, int]],
    delta: float,
    lower: float,
    upper: float,
    grid: float = DEFAULT_GRID,
    width: float = BRACKET_WIDTH,
) -> float:
    """The certified lower end of a DP-SGD schedule ``steps`` (its records rounded down,
    ``(sigma, q, count)``) at ``delta``, refined from the bracket ``(lower, upper)``
    (``lower`` :func:`_first_lower`'s with ``fine``) until it is at most ``width`` wide
    (relative to ``upper``) or the step reaches :data:`LOWER_MIN_STEP`: a schedule of
    at most ``EXACT_CELLS`` distinct steps (beyond, the steps' rounding holds the
    bracket: 10 000 decaying steps, 2.5e-3 -> 2.1e-3 wide for 14 s), unrounded, by
    :func:`~dpacct.accountant.pld.schedule_fast.fast_epsilon_bounds` (``upper=False``)
    on :func:`_lower_step`'s step halved :data:`LOWER_FIRST_HALVINGS` times, then once
    more an attempt, at most :data:`LOWER_REFINES` attempts, stopping once an attempt
    narrows the bracket by less than :data:`LOWER_MIN_NARROW`.  The steps do not
    depend on ``width``, so a smaller width only goes on further and never ends lower.
    Every attempt is a certified lower bound, so the largest of them and ``lower`` is
    returned (the lower end only rises).  Speed and tightness only.

    Examples
    --------
    >>> steps = [(1.0, 0.01, 20)]
    >>> lo = fast_epsilon_bounds(steps, 1e-5, upper=False)[0]
    >>> _refined_lower(steps, 1e-5, lo, lo * 1.01) > lo
    True
    """
    distinct = len({(s, q) for s, q, _ in steps})
    if distinct > EXACT_CELLS or upper - lower <= width * upper:
        return lower
    down = round_schedule(
        steps, grid, upper=False, exact_cells=EXACT_CELLS, exact_values=EXACT_VALUES
    )
    # the same steps for every width (a smaller width only goes on further), so a
    # smaller width never ends lower: one halving finer than the fine first lower end,
    # then one more an attempt
    step = max(_lower_step(down) / 2**LOWER_FIRST_HALVINGS, LOWER_MIN_STEP)
    best = lower
    for _ in range(LOWER_REFINES):
        lo = fast_epsilon_bounds(down, delta, step=step, upper=False)
        if lo is None:
            break
        gap = upper - best
        best = max(best, float(lo[0]))
        if upper - best <= width * upper or step <= LOWER_MIN_STEP:
            break
        if upper - best > (1.0 - LOWER_MIN_NARROW) * gap:
            # refining no longer narrows (the upper end's own excess holds the bracket,
            # or a finer window's round-off bound outweighs the finer step): each
            # attempt costs about twice the last
            break
        step = max(step / 2, LOWER_MIN_STEP)
    return best


def _schedule_arrays(steps: Iterable[tuple[float, float, int]], name: str = "steps"):
    """``(sigma, q, count)`` arrays of validated phases (errors name the phase, as
    ``name[i]``)."""
    if isinstance(steps, str | bytes) or not hasattr(steps, "__iter__"):
        raise TypeError(
            f"{name} must be an iterable of (noise_multiplier, sample_rate, count) triples, "
            f"got {type(steps).__name__}"
        )
    items = list(steps)
    try:
        # numpy would read '0.1' and True as numbers: only real, non-bool types pass
        ok = all(is_real_type(kind) for kind in {type(v) for item in items for v in item})
        arr = np.array(items, dtype=float).reshape(len(items), 3)
        sig, qs, cnt = arr[:, 0], arr[:, 1], arr[:, 2]
        counts = np.array([int(c) for _, _, c in items], dtype=np.int64)
        ok = ok and bool(
            np.all(np.isfinite(sig) & (sig > 0))
            and np.all((qs > 0) & (qs <= 1))
            and np.all((counts >= 1) & (counts == cnt))
        )
    except (TypeError, ValueError, OverflowError):  # int(inf), int(1e308) -> int64, ...
        ok = False
    if not ok:  # the first offending phase, by the scalar checks
        for i, item in enumerate(items):
            try:
                sigma, q, count = item
            except (TypeError, ValueError):
                raise TypeError(
                    f"{name}[{i}] must be a (noise_multiplier, sample_rate, count) triple, "
                    f"got {show_value(item)}"
                ) from None
            check_positive(f"{name}[{i}] noise_multiplier", sigma)
            check_sample_rate(q, f"{name}[{i}] sample_rate")
            check_count(count, f"{name}[{i}] count")
        raise ValueError(f"{name} hold an invalid phase")  # pragma: no cover
    return sig, qs, counts


def _round_values(x: np.ndarray, w: float, *, down: bool) -> np.ndarray:
    """:func:`_round` for one coordinate of many steps: the grid node ``exp(k w)`` at or
    below (``down``) or at or above every value, with the same snapping of values
    within rounding error of a node, the same node values (:func:`_cell_value`) and the
    same guard on the floating-point direction."""
    k = np.log(x) / w
    kr = np.rint(k)
    k = np.where(np.abs(k - kr) < 1e-9, kr, k)
    idx = (np.floor(k) if down else np.ceil(k)).astype(np.int64)
    for _ in range(64):
        uniq, inv = np.unique(idx, return_inverse=True)
        vals = np.array([_cell_value(int(i), w) for i in uniq.tolist()])[inv.reshape(-1)]
        wrong = vals > x if down else vals < x
        if not wrong.any():
            break
        idx = idx - wrong if down else idx + wrong
    # exact grid values (a step given on the grid) keep their own value
    close = np.abs(vals - x) <= 1e-12 * np.maximum(np.abs(vals), np.abs(x))
    return np.where(close, x, vals)


@lru_cache(maxsize=1 << 14)
def _cell_mechanism(sigma: float, q: float) -> Mechanism:
    """One shared mechanism object per cell, so its caches serve every query."""
    from ..families.gaussian import GaussianMechanism
    from ..transformers.subsample import poisson_subsample

    return poisson_subsample(GaussianMechanism(sigma=sigma), q)


def _merged(phases: Sequence[tuple[float, float, int]]) -> list[tuple[float, float, int]]:
    """``phases`` with equal ``(sigma, q)`` merged (counts summed), in first-seen order
    (as :func:`~dpacct.accountant.transformers.compose.compose` merges equal parts:
    composition does not depend on the order)."""
    merged: dict[tuple[float, float], int] = {}
    for s, q, c in phases:
        key = (float(s), float(q))
        merged[key] = merged.get(key, 0) + int(c)
    return [(s, q, c) for (s, q), c in merged.items()]


def schedule_mechanism(
    phases: Sequence[tuple[float, float, int]],
    *,
    others: Sequence[tuple[Mechanism, int]] = (),
    progress: bool = True,
) -> ScheduleMechanism:
    """The composition of DP-SGD phases ``(sigma, q, count)`` (and other records).

    The phases are used as given; round them first with :func:`round_schedule` for a
    certified upper (``upper=True``) or lower (``upper=False``) bound of a finer
    schedule.  Equal ``(sigma, q)`` phases are merged.

    Never looser than the engine's composition at either end (issue 37), and faster:
    at most :data:`ENGINE_PHASES` distinct phases (or other records, or phases whose
    composition has a closed form) by the engine's composition, the ledger's
    ``"exact"`` route; more, ``epsilon`` by the ledger's online composer
    (:class:`~dpacct.accountant.pld.incremental.IncrementalEpsilon`) and a finer
    composition of every distinct step (:class:`ScheduleMechanism`), the smaller, and
    the lower end of ``epsilon_bounds`` by the engine's optimistic composition alone.
    ``delta``, ``rdp`` and ``tradeoff`` are the engine's; :func:`schedule_reference`
    is the engine's answer to every query, an independent reference for the ledger's
    machinery.

    Examples
    --------
    >>> up = schedule_mechanism(round_schedule([(1.0, 0.01, 500), (0.9, 0.01, 500)]))
    >>> bool(0.5 < up.epsilon(1e-5) < 3.0)
    True
    >>> many = [(1.0 + 0.01 * i, 0.01, 10) for i in range(40)]
    >>> run = schedule_mechanism(many, progress=False)
    >>> lo, hi = run.epsilon_bounds(1e-5)
    >>> ref_lo, ref_hi = schedule_reference(many, progress=False).epsilon_bounds(1e-5)
    >>> bool(lo <= ref_hi and ref_lo <= hi)  # both certified brackets: they overlap
    True
    """
    phases = _checked(phases)
    merged = _merged(phases)
    parts = [(_cell_mechanism(s, q), c) for s, q, c in merged]
    parts.extend((m, int(c)) for m, c in others)
    if not parts:
        raise ValueError("phases must hold at least one (sigma, q, count) phase")
    steps = None
    if not others and len(merged) > ENGINE_PHASES:
        steps = tuple((float(s), float(q), int(c)) for s, q, c in phases)
    return ScheduleMechanism(parts=tuple(parts), progress=progress, steps=steps)


def schedule_reference(
    phases: Sequence[tuple[float, float, int]],
    *,
    others: Sequence[tuple[Mechanism, int]] = (),
    progress: bool = True,
) -> ScheduleMechanism:
    """The engine's composition of DP-SGD phases ``(sigma, q, count)`` (and other
    records) for every query: the one-shot path before issue 37, kept as the reference
    that does not use the ledger's machinery (each phase discretised by the engine's
    own grid choice, composed in chunks and combined by a tree of convolutions,
    :class:`ScheduleMechanism`).  Certified like :func:`schedule_mechanism`, and
    several times slower on many phases.

    Examples
    --------
    >>> ref = schedule_reference([(1.0, 0.01, 500), (0.9, 0.01, 500)])
    >>> bool(0.5 < ref.epsilon(1e-5) < 3.0)
    True
    """
    parts = [(_cell_mechanism(s, q), c) for s, q, c in _checked(phases)]
    parts.extend((m, int(c)) for m, c in others)
    if not parts:
        raise ValueError("phases must hold at least one (sigma, q, count) phase")
    return ScheduleMechanism(parts=tuple(parts), progress=progress)


def _checked(phases: Iterable[tuple[float, float, int]]) -> list[tuple[float, float, int]]:
    """``phases`` validated by :func:`_schedule_arrays` (a count must be a positive
    integer: main truncated 2.5 to 2 and composed a count of -1), as float, float, int."""
    sig, qs, counts = _schedule_arrays(phases, "phases")
    return list(zip(sig.tolist(), qs.tolist(), counts.tolist(), strict=True))


@dataclass(frozen=True, repr=False)
class ScheduleMechanism(ComposedMechanism):
    """A :class:`ComposedMechanism` of many phases, composed chunk by chunk.

    Up to :data:`CHUNK` parts are composed by the engine as usual.  Beyond, the parts
    are composed in chunks of ``CHUNK`` (each chunk by the engine, with its share of
    the tail budget) and the chunks' PLDs are combined by a balanced tree of FFT
    convolutions, coarsening the grid as the loss widens -- the same certified
    operations (:meth:`GridPLD.convolve`, :meth:`GridPLD.regrid`) as everywhere in the
    engine, so the upper (lower) bound stays an upper (lower) bound.  Half the tail
    budget goes to the chunks (in proportion to their step counts), half to the
    ``n_chunks - 1`` tree convolutions.  A ``tqdm`` bar reports the chunks when the work
    lasts more than :data:`PROGRESS_DELAY` seconds (``progress=False`` hides it).

    With ``steps`` (the DP-SGD phases, as :func:`schedule_mechanism` sets it for more
    than :data:`ENGINE_PHASES` distinct ones and nothing else), ``epsilon`` and the
    upper end of ``epsilon_bounds`` are, on narrow phases whose certificate floor is a
    small share of delta, one fine composition of every distinct step as its own cell
    (:func:`~dpacct.accountant.pld.schedule_oneshot._fine_pass`: at or below
    dp_accounting's default PLD on the benchmark rows), else the smaller of that, the
    ledger's online composer's
    (:class:`~dpacct.accountant.pld.incremental.IncrementalEpsilon`: the steps in
    blocks, each composed on a finer grid and coarsened once, its errors in the
    certificate) and a finer composition: every distinct step its own cell
    (:func:`~dpacct.accountant.pld.schedule_fast.fast_upper`), for single steps also
    the composer on a finer history step, or, where the composer rounds steps together
    (:func:`_ledger_merges`), the composer with more exact cells
    (:func:`~dpacct.accountant.pld.schedule_oneshot._oneshot_upper`).  Where the
    composer's certificate floor is above a share of delta
    (small deltas, wide steps) the engine's composition answers too.  The lower end is
    the engine's optimistic composition (:meth:`_engine_lower`), main's lower end
    without its pessimistic pass.  A ``tol`` below the default asks for more: the
    upper end also with every distinct step its own cell on a finer history step
    (:func:`_fine_halvings`) and the lower end refined as the ledger's
    ``epsilon_bounds(width=tol)`` refines it (:func:`_refined_lower`).  Every answer is
    certified, so the narrowest ends are kept.  Where the composer cannot certify the
    engine's composition answers, and always where the parts have a closed form (all
    full-batch Gaussians).

    Examples
    --------
    >>> phases = [(0.8 + 0.01 * i, 0.01, 10) for i in range(40)]
    >>> run = schedule_mechanism(phases, progress=False)
    >>> lo, hi = run.epsilon_bounds(1e-5)
    >>> bool(0 < lo <= hi < 1.01 * lo)
    True
    """

    progress: bool = field(default=True, compare=False)
    #: the DP-SGD phases ``(sigma, q, count)`` answered by the ledger's machinery
    #: (None: the engine's composition answers)
    steps: tuple[tuple[float, float, int], ...] | None = None

    def _ledger_route(self) -> bool:
        return self.steps is not None and not self.has_exact_curve

    def _ledger_epsilon(
        self, delta: float, tol: float | None = None
    ) -> tuple[float | None, bool] | None:
        """The ledger's machinery's certified epsilon at ``delta`` (None: it cannot
        certify), and whether the engine must answer too (a certificate floor above its
        share of ``delta``); None without steps
        (:func:`~dpacct.accountant.pld.schedule_oneshot._oneshot_upper`)."""
        if not self._ledger_route():
            return None
        key, cache = ("ledger_eps", delta, tol), self._cache()
        if key not in cache:
            cache[key] = _oneshot_upper(self.steps, delta, tol, lambda: _ledger_merges(self.steps))
        return cache[key]

    def _epsilon_upper(self, delta: float, tol: float | None) -> float:
        found, loose = self._ledger_epsilon(delta, tol) or (None, True)
        if found is None:
            return super()._epsilon_upper(delta, tol)
        if loose:  # both certified: the smaller
            return min(found, float(super()._epsilon_upper(delta, tol)))
        return found

    def _epsilon_bounds(self, delta: float, tol: float | None) -> tuple[float, float]:
        upper, loose = self._ledger_epsilon(delta, tol) or (None, True)
        if upper is None:
            return super()._epsilon_bounds(delta, tol)
        if loose:  # both certified: the narrower ends
            lo, hi = super()._epsilon_bounds(delta, tol)
            return float(lo), min(upper, float(hi))
        # the engine's grids at the default tol at most: a finer tol refines below
        lower = self._engine_lower(delta, _engine_tol(tol), upper)
        if lower is None:  # the engine's grids would be refined: its whole bracket
            lo, hi = super()._epsilon_bounds(delta, tol)
            return float(lo), min(upper, float(hi))
        if _fine_halvings(tol):  # the ledger's epsilon_bounds(width=tol)
            fine = _first_lower(self.steps, delta, fine=True)
            lower = lower if fine is None else max(lower, fine)
            lower = _refined_lower(self.steps, delta, lower, upper, width=tol)
        return float(lower), upper

    def _rdp_log_delta_floor(self, epsilon: np.ndarray) -> np.ndarray | None:
        """A certified floor under the log of every RDP conversion of this composition at
        ``epsilon`` when every part is a Poisson-subsampled Gaussian
        (:func:`~dpacct.accountant.rdp.rdp_floor.rdp_log_delta_floor`), else None: where it
        is at or above the PLD's answer the router skips the RDP pass
        (:func:`~dpacct.accountant.rdp.rdp_floor.rdp_may_win`)."""
        cache = self._cache()
        if "rdp_floor" not in cache:  # the epsilon-free part, once per schedule
            steps = _subsampled_gaussians(self.parts)
            cache["rdp_floor"] = None if steps is None else floor_curve(*steps)
        curve = cache["rdp_floor"]
        return None if curve is None else rdp_log_delta_floor((), (), (), epsilon, curve)

    def _engine_lower(self, delta: float, tol: float | None, upper: float) -> float | None:
        """The engine's lower end without its upper end: the optimistic composition of
        the remove direction (the one deciding the engine's upper end on every
        subsampled-Gaussian schedule measured) on the grids the engine's upper end
        first chooses (:class:`PLDSettings` ``(tol, delta)``), as
        :func:`~dpacct.accountant.routes.epsilon_bracket` takes it; None where the
        engine would refine those grids for a small answer (a step within
        ``REFINE_STEPS`` of ``upper``, with a margin of 4): the caller then asks the
        engine's whole bracket.  The ledger's fast lower end
        (:func:`_first_lower`) is 1e-5 to 1e-4 relative below it (its certificate
        subtracts from delta; finer steps do not close it: 20 random phases at 1e-5,
        1.3712697 at the default step, 1.3713252 at a sixteenth, the engine 1.3713497)."""
        opt = self._pld_one(False, PLDSettings(tol, delta), 0)
        if 4.0 * REFINE_STEPS * opt.step > upper:
            return None
        return float(opt.epsilon(delta))

    def _pld_one(self, pessimistic: bool, settings: PLDSettings, which: int) -> GridPLD:
        if len(self.parts) <= CHUNK:
            return super()._pld_one(pessimistic, settings, which)
        key = ("pld1-chunked", pessimistic, settings.key(), which)
        cache = self._cache()
        if key in cache:
            return cache[key]
        if which == 1 and self._symmetric():
            out = self._pld_one(pessimistic, settings, 0)
            cache[key] = out
            return out
        parts = list(self.parts)
        total = sum(c for _, c in parts)
        chunks = [parts[i : i + CHUNK] for i in range(0, len(parts), CHUNK)]
        resolution = settings.resolution_for(pessimistic)
        n_conv = max(len(chunks) - 1, 1)
        plds: list[GridPLD] = []
        label = f"composing {len(parts)} phases ({'upper' if pessimistic else 'lower'} bound)"
        with LazyBar(
            total=2 * len(chunks) - 1,
            desc=label,
            delay=PROGRESS_DELAY,
            progress=self.progress,
        ) as bar:
            shares = [
                _scaled_settings(settings, 0.5 * sum(c for _, c in chunk) / total)
                for chunk in chunks
            ]
            chunk_mechs = [ComposedMechanism(parts=tuple(chunk)) for chunk in chunks]
            if pessimistic:
                # every chunk's laws first ask their tail quantiles and spreads: one
                # batched bisection for all of them (bit-equal to each law's own)
                _prefill_chunks(chunk_mechs, shares, which)
            for chunk_mech, share in zip(chunk_mechs, shares, strict=True):
                plds.append(chunk_mech._pld_one(pessimistic, share, which))
                bar.update(1)
            cut = 0.5 * settings.tail / n_conv
            while len(plds) > 1:
                nxt = []
                for i in range(0, len(plds) - 1, 2):
                    product = plds[i].convolve(plds[i + 1], cut)
                    nxt.append(product._coarsened(resolution, None))
                    bar.update(1)
                if len(plds) % 2:
                    nxt.append(plds[-1])
                plds = nxt
        cache[key] = plds[0]
        return plds[0]


def _prefill_chunks(chunk_mechs, shares, which: int) -> None:
    """Batch the tail-quantile and spread searches the chunks' joint compositions ask
    (:func:`~dpacct.accountant.laws.quantile_batch.prefill_quantiles`; issue 37)."""
    requests: list = []
    laws: list = []
    for mech, share in zip(chunk_mechs, shares, strict=True):
        r, l_ = joint_quantile_requests(mech._views, share, which)
        requests += r
        laws += l_
    prefill_quantiles(requests, laws)


def _subsampled_gaussians(parts) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(sigma, q, count)`` arrays of ``parts`` when each declares itself a
    Poisson-subsampled Gaussian (:meth:`~dpacct.accountant.mechanism.Mechanism.
    subsampled_gaussian`; a sigma at or above the one its Renyi curve is taken at:
    ``1 / mu`` rounded up), else None."""
    rows = []
    for mech, count in parts:
        declared = getattr(mech, "subsampled_gaussian", None)
        params = declared() if declared is not None else None
        if params is None:
            return None
        q, mu = params
        rows.append((math.nextafter(1.0 / float(mu), math.inf), q, count))
    arr = np.array(rows, dtype=float).reshape(-1, 3)
    return arr[:, 0], arr[:, 1], arr[:, 2]


def _ledger_merges(steps: Sequence[tuple[float, float, int]]) -> bool:
    """Whether the ledger's composer rounds steps together: two of its distinct
    ``(sigma, q)`` beyond the first :data:`~dpacct.accountant.pld.block_rules.
    EXACT_STEPS` share a cell of the default grid (a coordinate with at most
    ``EXACT_VALUES`` values kept).  Decides only which composition is also tried.

    Examples
    --------
    >>> _ledger_merges([(2.0 * 0.9999**t, 0.01, 1) for t in range(300)])
    True
    >>> _ledger_merges([(1.0 + t / 100, 0.01, 10) for t in range(300)])
    False
    """
    rest = list(dict.fromkeys((s, q) for s, q, _ in steps))[EXACT_STEPS:]
    if len(rest) < 2:
        return False
    cells = round_schedule(
        [(s, q, 1) for s, q in rest], DEFAULT_GRID, upper=True, exact_values=EXACT_VALUES
    )
    return len(cells) < len(rest)


def _scaled_settings(settings: PLDSettings, fraction: float) -> PLDSettings:
    out = PLDSettings.__new__(PLDSettings)
    for name in PLDSettings.__slots__:  # every grid setting, the tail budget scaled
        if hasattr(settings, name):
            setattr(out, name, getattr(settings, name))
    out.tail = settings.tail * fraction
    return out
