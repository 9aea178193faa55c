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
from scipy import fft as sp_fft
from scipy import special

from .compose import ComposedMechanism
from .mechanism import Mechanism, PLDSettings
from .numerics import SUBNORMAL_FLOOR, TINY
from .pld import GridPLD, _lower_hull
from .pld_pair import swapped_delta_identity, swapped_epsilon
from .validation import (
    check_count,
    check_positive,
    check_sample_rate,
    is_real_type,
    show_value,
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
]

#: default relative width of a rounding cell in sigma and in q (about 0.1 %)
DEFAULT_GRID = 2.0**-10
#: the fast path leaves a schedule of at most this many distinct (sigma, q) pairs
#: unrounded: its cost is per cell, and rounding such a schedule merges little
EXACT_CELLS = 1024
#: ... and a coordinate with at most this many distinct values (a constant q)
EXACT_VALUES = 64
#: phases composed together before the chunks are combined by a tree of convolutions
CHUNK = 16
#: a progress bar appears only after this many seconds of accounting
PROGRESS_DELAY = 2.0


def _check_grid(grid: object) -> float:
    g = check_positive("grid", grid)
    if not g < 0.5:
        raise ValueError(
            f"grid must lie in (0, 0.5) (a relative cell width), got {show_value(grid)}"
        )
    return g


@lru_cache(maxsize=1 << 16)
def _cell_value(index: int, log_width: float) -> float:
    return math.exp(index * log_width)


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


def _round(sigma: float, q: float, w: float, upper: bool) -> tuple[float, float]:
    ks = math.log(sigma) / w
    kq = math.log(q) / w
    # snap values within rounding error of a node onto it (grid-aligned steps stay put)
    ks_r, kq_r = round(ks), round(kq)
    ks = ks_r if abs(ks - ks_r) < 1e-9 else ks
    kq = kq_r if abs(kq - kq_r) < 1e-9 else kq
    if upper:
        i, j = math.floor(ks), math.ceil(kq)
        # guard the floating-point direction: sigma_cell <= sigma, q_cell >= q
        while _cell_value(i, w) > sigma:
            i -= 1
        while _cell_value(j, w) < q:
            j += 1
        s_cell, q_cell = _cell_value(i, w), min(_cell_value(j, w), 1.0)
    else:
        i, j = math.ceil(ks), math.floor(kq)
        while _cell_value(i, w) < sigma:
            i += 1
        while _cell_value(j, w) > q:
            j -= 1
        s_cell, q_cell = _cell_value(i, w), _cell_value(j, w)
    # exact grid values (a step given on the grid) keep their own value
    if math.isclose(s_cell, sigma, rel_tol=1e-12, abs_tol=0.0):
        s_cell = sigma
    if math.isclose(q_cell, q, rel_tol=1e-12, abs_tol=0.0):
        q_cell = q
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
    at most that many distinct ``(sigma, q)`` pairs is merged but not rounded, and with
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
        s_cell = _round_values(sig, w, down=upper)
        q_cell = _round_values(qs, w, down=not upper)
        if upper:
            q_cell = np.minimum(q_cell, 1.0)
        if np.unique(sig).size <= exact_values:
            s_cell = sig
        if np.unique(qs).size <= exact_values:
            q_cell = qs
        pairs, inverse = np.unique(np.stack([s_cell, q_cell], axis=1), axis=0, return_inverse=True)
    total = np.zeros(pairs.shape[0], dtype=np.int64)
    np.add.at(total, inverse.reshape(-1), counts)
    check_count(int(np.bincount(inverse.reshape(-1), weights=counts).max()), "merged count")
    return [
        (float(s), float(q), int(c))
        for (s, q), c in zip(pairs.tolist(), total.tolist(), strict=True)
    ]


def _schedule_arrays(steps: Iterable[tuple[float, float, int]]):
    """``(sigma, q, count)`` arrays of validated phases (errors name the phase)."""
    if isinstance(steps, str | bytes) or not hasattr(steps, "__iter__"):
        raise TypeError(
            "steps must be an iterable of (noise_multiplier, sample_rate, count) triples, "
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
                    f"steps[{i}] must be a (noise_multiplier, sample_rate, count) triple, "
                    f"got {show_value(item)}"
                ) from None
            check_positive(f"steps[{i}] noise_multiplier", sigma)
            check_sample_rate(q, f"steps[{i}] sample_rate")
            check_count(count, f"steps[{i}] count")
        raise ValueError("steps hold an invalid phase")  # pragma: no cover
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
    from .gaussian import GaussianMechanism
    from .subsample import poisson_subsample

    return poisson_subsample(GaussianMechanism(sigma=sigma), q)


def schedule_mechanism(
    phases: Sequence[tuple[float, float, int]],
    *,
    others: Sequence[tuple[Mechanism, int]] = (),
    progress: bool = True,
) -> ScheduleMechanism:
    """The composition of DP-SGD phases ``(sigma, q, count)`` (and other records).

    The phases are used as given; round them first with :func:`round_schedule` for a
    certified upper (``upper=True``) or lower (``upper=False``) bound of a finer
    schedule.

    Examples
    --------
    >>> up = schedule_mechanism(round_schedule([(1.0, 0.01, 500), (0.9, 0.01, 500)]))
    >>> bool(0.5 < up.epsilon(1e-5) < 3.0)
    True
    """
    parts = [(_cell_mechanism(float(s), float(q)), int(c)) for s, q, c in phases]
    parts.extend((m, int(c)) for m, c in others)
    if not parts:
        raise ValueError("phases must hold at least one (sigma, q, count) phase")
    return ScheduleMechanism(parts=tuple(parts), progress=progress)


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

    Examples
    --------
    >>> phases = [(0.8 + 0.01 * i, 0.01, 10) for i in range(40)]
    >>> run = schedule_mechanism(phases, progress=False)
    >>> lo, hi = run.epsilon_bounds(1e-5)
    >>> bool(0 < lo <= hi < 1.01 * lo)
    True
    """

    progress: bool = field(default=True, compare=False)

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
        from tqdm.auto import tqdm

        label = f"composing {len(parts)} phases ({'upper' if pessimistic else 'lower'} bound)"
        with tqdm(
            total=2 * len(chunks) - 1,
            desc=label,
            delay=PROGRESS_DELAY,
            disable=not self.progress,
            leave=False,
        ) as bar:
            for chunk in chunks:
                share = _scaled_settings(settings, 0.5 * sum(c for _, c in chunk) / total)
                chunk_mech = ComposedMechanism(parts=tuple(chunk))
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


def _scaled_settings(settings: PLDSettings, fraction: float) -> PLDSettings:
    out = PLDSettings.__new__(PLDSettings)
    for name in PLDSettings.__slots__:  # every grid setting, the tail budget scaled
        if hasattr(settings, name):
            setattr(out, name, getattr(settings, name))
    out.tail = settings.tail * fraction
    return out


# ------------------------------------------------------------------------ fast path
#: relative error bound per entry class of one FFT pass (Higham 2002, Theorem 24.2:
#: ``||fl(FFT x) - FFT x||_2 <= log2(N) eta / (1 - log2(N) eta) ||FFT x||_2`` with
#: ``eta = mu + gamma_4 (sqrt 2 + mu)``; ``mu`` the twiddle error, taken as 2 u here)
_U = 2.0**-53
#: grid step of the fast path's loss grid (the engine's grids are chosen per cell)
FAST_STEP = 1e-3
#: longest FFT the fast path uses; beyond, it declines and the engine's route is used
FAST_MAX_N = 1 << 22
#: Chernoff orders for the window (both tails)
_ORDERS = np.array([0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0])


def _fft_rel(n: int) -> float:
    lg = math.ceil(math.log2(max(n, 2)))
    mu = 2 * _U
    eta = mu + (4 * _U / (1 - 4 * _U)) * (math.sqrt(2.0) + mu)
    return lg * eta / (1 - lg * eta)


def _loss_of_x(x: np.ndarray, sigma: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Remove-direction loss ``log(1 - q + q exp((2x - 1) / (2 sigma^2)))``."""
    with np.errstate(divide="ignore"):
        return np.logaddexp(np.log1p(-q), np.log(q) + (2 * x - 1) / (2 * sigma**2))


def _x_of_loss(a: np.ndarray, sigma: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Preimage of the remove-direction loss: ``L(x) = a`` (``-inf`` below its range)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        floor = np.log1p(-q)
        inner = a + np.log1p(-np.exp(floor - a))  # log(e^a - (1 - q)), precise at q = 1
        x = sigma**2 * (inner - np.log(q)) + 0.5
    return np.where(a > floor, x, -np.inf)


#: bins evaluated at once by the vectorised discretisation: bounds its temporaries
#: (about 20 float arrays of this length) whatever the number of cells
BIN_BLOCK = 1 << 18


def _cell_ranges(
    sigma: np.ndarray,
    q: np.ndarray,
    step: float,
    tau: float,
    add: bool,
    pile: np.ndarray | None = None,
):
    """First node and bin count of every cell's grid (see :func:`_cell_bins`).

    With ``pile`` (remove direction), a cell with a finite ``pile[i]`` has its grid
    nodes at ``pile[i] + k * step`` instead (see :func:`_pile_nodes`), from ``pile[i]``
    up: its first node is ``floor(pile[i] / step)``, and :func:`_pile_shift` gives the
    offset of its nodes from the shared grid."""
    z = float(special.ndtri(1.0 - tau)) if tau > 0 else 40.0
    lo_x, hi_x = -sigma * z, 1.0 + sigma * z
    with np.errstate(divide="ignore"):
        floor = np.log1p(-q)
    if not add:
        lo_l = np.maximum(_loss_of_x(lo_x, sigma, q), floor)
        hi_l = _loss_of_x(hi_x, sigma, q)
    else:
        lo_l = -_loss_of_x(hi_x, sigma, q)
        hi_l = np.minimum(-_loss_of_x(lo_x, sigma, q), -floor)
    first = np.floor(lo_l / step).astype(np.int64)
    last = np.maximum(np.ceil(hi_l / step).astype(np.int64), first + 1)
    if pile is not None:
        has = np.isfinite(pile)
        p_first = np.floor(np.where(has, pile, 0.0) / step).astype(np.int64)
        shift = _pile_shift(pile, step)
        p_last = np.ceil((hi_l - shift) / step).astype(np.int64)
        first = np.where(has, p_first, first)
        last = np.where(has, np.maximum(p_last, p_first + 1), last)
    return first, last - first


def _pile_shift(pile: np.ndarray, step: float) -> np.ndarray:
    """Offset in ``[0, step)`` of a pile cell's nodes from the shared grid (0 without)."""
    has = np.isfinite(pile)
    p = np.where(has, pile, 0.0)
    return np.where(has, p - np.floor(p / step) * step, 0.0)


#: the pile node of a cell is searched within this many steps above ``log(1 - q)``
PILE_WIDTH = 16


def _pile_nodes(sigma: np.ndarray, q: np.ndarray, step: float) -> np.ndarray:
    """Per cell, a first node ``o`` whose bin holds the pile at ``log(1 - q)`` as one atom
    *on* the node (``nan`` for ``q = 1``: no floor, no pile).

    The remove-direction loss ``L(x) = log(1 - q + q e^{(2x - 1)/(2 s^2)})`` is bounded
    below by ``log(1 - q)`` and its mass piles up just above that floor (about a third of
    it within ``1e-3`` for ``s = 0.55, q = 0.01``).  The optimistic construction merges
    every bin into one atom and then lowers the nodes of the bin by its chord gap; at
    the lowest node, whose curve is pinned at ``t = 0`` by the total P-mass, that gap
    becomes excess mass moved to the bottom, a first-order bias that compounds over the
    composition (2.7 % of epsilon at a loss step of ``1e-3``).  Merging *everything*
    below ``o + step`` into the first bin ``(o, o + step]`` (a post-processing, so still
    dominated) puts the pile's atom at ``c(o + step) = log(P(L <= o + step) / Q(L <= o +
    step))``; choosing ``o`` as the fixed point ``c(o + step) = o`` (by bisection, from
    below: ``c(o + step) >= o``) puts that atom on the node, where it has no chord gap.
    ``o`` is kept within ``PILE_WIDTH`` steps of the floor (when no fixed point lies
    there, the farthest node: its bin's atom still lies inside the bin).
    """
    has = q < 1.0
    out = np.full(sigma.shape, np.nan)
    if not has.any():
        return out
    s, qq = sigma[has], q[has]
    floor = np.log1p(-qq)

    def atom(y):  # merged loss of {L <= y}, through log-CDFs (no cancellation)
        u = _x_of_loss(y, s, qq) / s
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            ratio = np.exp(special.log_ndtr(u - 1.0 / s) - special.log_ndtr(u))
            return np.log1p(qq * (ratio - 1.0))

    lo, hi = floor.copy(), floor + PILE_WIDTH * step
    beyond = atom(hi + step) >= hi
    for _ in range(48):
        mid = 0.5 * (lo + hi)
        up = atom(mid + step) >= mid
        lo = np.where(up, mid, lo)
        hi = np.where(up, hi, mid)
    o = np.where(beyond, floor + PILE_WIDTH * step, lo)
    # a hair lower: the atom stays at or above the node despite the CDFs' round-off
    out[has] = o - 1e-9 * step
    return out


def _blocks(sizes: np.ndarray, limit: int = BIN_BLOCK) -> list[slice]:
    """Consecutive runs of cells whose summed ``sizes`` stay below ``limit`` (one cell
    at least per run)."""
    ends = np.cumsum(sizes)
    out, start, base = [], 0, 0
    while start < sizes.size:
        stop = int(np.searchsorted(ends, base + limit, side="right"))
        stop = max(stop, start + 1)
        out.append(slice(start, stop))
        base, start = int(ends[stop - 1]), stop
    return out


def _table_blocks(widths: np.ndarray, limit: int) -> list[slice]:
    """Runs of cells (``widths`` sorted increasing) whose padded table -- rows times
    the widest row -- stays below ``limit`` entries (one cell at least per run)."""
    out, start, total = [], 0, widths.size
    while start < total:
        cost = (np.arange(1, total - start + 1)) * widths[start:]
        stop = start + max(int(np.searchsorted(cost, limit, side="right")), 1)
        out.append(slice(start, stop))
        start = stop
    return out


def _normal_pair(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ndtr(u), ndtr(-u))`` from one evaluation: the smaller of the two is computed
    directly (full relative precision), the larger as one minus it (to half an ulp of
    its value, which is at least 1/2)."""
    small = special.ndtr(-np.abs(u))
    big = 1.0 - small
    neg = u < 0
    return np.where(neg, small, big), np.where(neg, big, small)


def _cell_bins(
    sigma: np.ndarray,
    q: np.ndarray,
    step: float,
    tau: float,
    add: bool,
    pile: np.ndarray | None = None,
):
    """Bin masses of every cell on the shared grid ``a_j = j * step``, vectorised.

    The Poisson-subsampled Gaussian's dominating pair (remove direction)
    ``P = (1 - q) N(0, s^2) + q N(1, s^2)``, ``Q = N(0, s^2)`` has the increasing loss
    ``L(x) = log(1 - q + q e^{(2x - 1)/(2 s^2)})`` with the closed-form preimage
    ``x(a) = s^2 log((e^a - 1 + q)/q) + 1/2`` (Zhu, Dong & Wang 2022, Section 5;
    Koskela et al. 2020, Section 6), so the P- and Q-masses of every bin are
    differences of normal CDFs at ``x(a_j)``: no root finding.  The add direction is
    the swapped pair (loss ``-L(x)``, ``x ~ N(0, s^2)``).  Each cell's grid runs from
    the loss at ``x = -s z`` to the loss at ``x = 1 + s z`` (``z = isf(tau)``; mass
    beyond: at most ``tau`` on each side), clipped to the loss's own range.

    With ``pile`` (:func:`_pile_nodes`; remove direction only) a cell with a finite
    ``pile[i]`` has its nodes at ``pile[i] + k step`` (node index ``k`` plus its
    :func:`_pile_shift`) and everything below its first node is merged into its first
    bin (its bottom masses are then zero).

    Returns the per-cell first node, bin count, and the flat bin arrays ``m`` (P-mass),
    ``n`` (Q-mass) and nodes, plus bottom/top P- and Q-masses per cell.  The callers
    go through :func:`_blocks` so that the temporaries stay bounded.
    """
    first, nb = _cell_ranges(sigma, q, step, tau, add, pile)
    cell = np.repeat(np.arange(sigma.size), nb + 1)
    starts = np.concatenate([[0], np.cumsum(nb + 1)[:-1]])
    j = np.arange(cell.size) - starts[cell] + first[cell]
    a = j * step
    if pile is not None:
        if add:
            raise ValueError("pile nodes are for the remove direction")
        a = a + _pile_shift(pile, step)[cell]
    s, qq = sigma[cell], q[cell]
    xx = _x_of_loss(-a if add else a, s, qq)
    del j, cell
    f0, s0 = _normal_pair(xx / s)
    f1, s1 = _normal_pair((xx - 1) / s)
    del xx, s
    mix_cdf, mix_sf = (1 - qq) * f0 + qq * f1, (1 - qq) * s0 + qq * s1
    del f1, s1, qq
    if not add:  # L <= a  <=>  x <= x(a)
        cum_p, tail_p, cum_q, tail_q = mix_cdf, mix_sf, f0, s0
    else:  # -L <= a  <=>  x >= x(-a); P' = N(0, s^2), Q' = the mixture
        cum_p, tail_p, cum_q, tail_q = s0, f0, mix_sf, mix_cdf
    keep = np.ones(a.size - 1, dtype=bool)
    keep[starts[1:] - 1] = False  # drop the pseudo-bins between cells
    if pile is not None:  # pile cells: everything below the first node in the first bin
        at = starts[np.isfinite(pile)]
        cum_p, cum_q = cum_p.copy(), cum_q.copy()
        tail_p, tail_q = tail_p.copy(), tail_q.copy()
        cum_p[at] = cum_q[at] = 0.0
        tail_p[at] = tail_q[at] = 1.0

    def masses(cum, tail):
        d_cum = cum[1:] - cum[:-1]
        d_tail = tail[:-1] - tail[1:]
        out = np.where(cum[1:] < 0.5, d_cum, d_tail)
        return np.maximum(out[keep], 0.0)

    m = masses(cum_p, tail_p)
    n = masses(cum_q, tail_q)
    ends = starts + nb
    bottom = (cum_p[starts], cum_q[starts])
    top = (tail_p[ends], tail_q[ends])
    bin_nodes = np.delete(a, ends)  # left node of every bin
    return first, nb, m, n, bin_nodes, bottom, top


def _scaled_q(n: np.ndarray, nodes: np.ndarray, m: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", over="ignore"):
        r = np.where(n > 0, np.exp(np.log(np.maximum(n, SUBNORMAL_FLOOR)) + nodes), 0.0)
    return np.minimum(r, m)


def _pessimistic_cells(sigma, q, step, tau, add):
    """Connect-the-dots PMFs (Doroshenko et al. 2022, Algorithm 1) of every cell.

    Returns ``(first, pmfs, inf_mass)`` with ``pmfs`` a list of arrays (views of one
    flat array).  Cells are discretised in blocks of at most :data:`BIN_BLOCK` bins.
    """
    _, nb_all = _cell_ranges(sigma, q, step, tau, add)
    firsts, flats, infs = [], [], []
    c = -math.expm1(-step)
    for blk in _blocks(nb_all + 1):
        first, nb, m, n, nodes, bottom, top = _cell_bins(sigma[blk], q[blk], step, tau, add)
        r = _scaled_q(n, nodes, m)
        right = np.clip((m - r) / c, 0.0, m)
        left = m - right
        # PMF of cell i: nb_i + 1 nodes, at offset starts_i of the flat output
        starts = np.concatenate([[0], np.cumsum(nb + 1)[:-1]])
        pos = np.arange(m.size) + np.repeat(np.arange(nb.size), nb)  # bin j -> node j
        pmf = np.zeros(int(np.sum(nb + 1)))
        pmf[pos] += left  # distinct nodes: plain fancy-index sums
        pmf[pos + 1] += right
        pmf[starts] += bottom[0]  # mass below the grid rounded up onto the first node
        firsts.append(first)
        flats.append((pmf, starts[1:]))
        infs.append(np.asarray(top[0], dtype=float))
    out = [p for pmf, cuts in flats for p in np.split(pmf, cuts)]
    return np.concatenate(firsts), out, np.concatenate(infs)


def _decaying_rows(x: np.ndarray, rate: float) -> np.ndarray:
    """Row-wise :func:`~dpacct.accountant.pld._decaying_sum`: ``y[:, j] = sum_{i >= j}
    x[:, i] e^{-rate (i - j)}`` for non-negative ``x``, by the same blocks (positive
    terms only, so full relative precision)."""
    rows, n = x.shape
    y = np.empty_like(x)
    block = max(1, min(n, int(min(500.0 / rate, 2.0**62))))
    carry = np.zeros(rows)
    for start in range(((n - 1) // block) * block, -1, -block):
        seg = x[:, start : start + block]
        k = np.arange(seg.shape[1])
        w = np.exp(-rate * k)
        s = np.cumsum((seg * w)[:, ::-1], axis=1)[:, ::-1] / w
        s += carry[:, None] * np.exp(-rate * (seg.shape[1] - k))
        y[:, start : start + seg.shape[1]] = s
        carry = s[:, 0].copy()
    return y


def _optimistic_block(first, nb, m, r, m_top, step):
    """The engine's optimistic grid pair (:func:`~dpacct.accountant.pld._lower_from_bins`
    with no atoms, no mass below the grid and none at +inf) for a block of cells.

    Each cell's bins are a row of a zero-padded table: the padding has no mass, so the
    recurrences (decaying sums, reverse cumulative sums, chord gaps) give every row the
    values of the one-cell computation; the lower convex hulls of all rows are taken at
    once (:func:`~dpacct.accountant.pld._lower_hull` with set numbers) and turned into
    node masses by segment operations.  Returns the flat PMF (``nb_i + 1`` nodes per
    cell, concatenated) before trimming.
    """
    rows = nb.size
    width = int(nb.max())
    col = np.arange(m.size) - np.repeat(np.cumsum(nb) - nb, nb)
    row = np.repeat(np.arange(rows), nb)
    big_m = np.zeros((rows, width))
    big_r = np.zeros((rows, width))
    big_m[row, col] = m
    big_r[row, col] = r
    last = nb - 1
    idx = np.arange(rows)
    # the top tail rounded down onto the last node, the last bin onto its lower node
    big_r[idx, last] = big_m[idx, last]
    e_step = math.exp(step)
    em1 = math.expm1(step)
    c = -math.expm1(-step)

    def deltas(big_r):
        rr = np.zeros((rows, width + 1))
        rr[:, :width] = big_r
        rr[idx, nb] = m_top
        big_f = _decaying_rows(rr, step)
        inc = (big_m - big_r) + c * big_f[:, 1:]
        delta = np.zeros((rows, width + 1))
        delta[:, :width] = np.cumsum(inc[:, ::-1], axis=1)[:, ::-1]
        return delta, big_f

    def gaps(big_r):
        rc = np.clip(big_r, 0.0, big_m)
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = np.where(rc > 0, big_m / rc, e_step)
        rho = np.clip(rho, 1.0, e_step)
        rho = np.where(rho > e_step * (1.0 - 1e-12), e_step, rho)
        return (big_m - rc) * (e_step - rho) / em1

    delta, big_f = deltas(big_r)
    g = gaps(big_r)
    for _ in range(8):
        bad = (g > 0.5 * delta[:, 1:]) & (g > 0)
        if not bad.any():
            break
        big_r = np.where(bad, big_m, big_r)
        delta, big_f = deltas(big_r)
        g = gaps(big_r)
    x = np.zeros((rows, width + 1))
    x[:, :-1] = g
    x[:, 1:] = np.maximum(x[:, 1:], g)
    v = delta - x
    total_p = big_m.sum(axis=1) + m_top
    v[:, 0] = np.minimum(v[:, 0], total_p - big_f[:, 0])
    del big_r, big_f, delta, g, x
    # points of row i: (0, total_p) and (e^{a_j - a_ref}, v_j) for j = 0..nb_i
    npts = nb + 2
    seg = np.repeat(idx, npts)
    pos = np.arange(seg.size) - np.repeat(np.cumsum(npts) - npts, npts)  # 0..nb_i+1
    a_ref = (first + 0.5 * nb) * step
    node = pos - 1
    with np.errstate(over="ignore"):  # only spans beyond 1200 overflow: fallback below
        tx = np.where(pos == 0, 0.0, np.exp((first[seg] + node) * step - a_ref[seg]))
    ty = np.where(pos == 0, total_p[seg], v[seg, np.maximum(node, 0)])
    ty = np.where(np.abs(ty) < 1e-15, 0.0, ty)
    del v
    keep = _lower_hull(tx, ty, seg)
    tk, yk, sk, nk = tx[keep], ty[keep], seg[keep], node[keep]
    # per row: where the hull is cut (first vertex below zero, else its minimum)
    seg_start = np.searchsorted(sk, idx, side="left")
    negs = np.flatnonzero(yk < 0)
    has_neg = np.zeros(rows, dtype=bool)
    cut = np.zeros(rows, dtype=np.int64)
    if negs.size:
        u, at = np.unique(sk[negs], return_index=True)
        has_neg[u] = True
        cut[u] = negs[at] - 1  # last vertex kept: the one before the first negative
    order = np.lexsort((yk, sk))  # per row, the (first) minimum comes first
    kmin = order[seg_start]
    end = np.where(has_neg, cut, kmin)
    # vertices kept: positions seg_start..end of each row
    vpos = np.arange(tk.size)
    kept = vpos <= end[sk]
    # slope from each vertex to the next one of its row (meaningful before `end`)
    dt = np.diff(tk)
    with np.errstate(divide="ignore", invalid="ignore"):
        slopes = np.append(np.diff(yk) / np.where(dt != 0, dt, 1.0), 0.0)
    # the last kept vertex of a row: the slope after it is the cut segment's (has_neg)
    # or zero (the hull is flat after its minimum)
    e = end
    nxt = np.minimum(e + 1, tk.size - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        tc = tk[e] + yk[e] * (tk[nxt] - tk[e]) / (yk[e] - yk[nxt])
        last_slope = np.where(has_neg, slopes[e], 0.0)
    after = np.where(vpos == end[sk], last_slope[sk], slopes)
    before = np.concatenate([[0.0], slopes[:-1]])
    inner = kept & (vpos > seg_start[sk])  # every kept vertex but the point t = 0
    masses = tk * (after - before)
    out_starts = np.concatenate([[0], np.cumsum(nb + 1)[:-1]])
    pmf = np.zeros(int(np.sum(nb + 1)))
    sel = np.flatnonzero(inner)
    pmf[out_starts[sk[sel]] + nk[sel]] += np.maximum(masses[sel], 0.0)  # distinct nodes
    # a hull crossing zero: its kink is an atom off the grid, rounded down to a node
    with np.errstate(divide="ignore", invalid="ignore"):
        extra = tc * (0.0 - last_slope)
        jc = np.floor((np.log(np.where(has_neg, tc, 1.0)) + a_ref) / step + 1e-9) - first
    jc = np.where(np.isfinite(jc), jc, -1).astype(np.int64)
    jc = np.maximum(jc, np.where(nk[e] >= 0, nk[e], -1))
    add = has_neg & (extra > 0) & (jc >= 0) & (jc <= nb)
    pmf[out_starts[add] + jc[add]] += extra[add]
    # no slope at all (the hull is the point t = 0 alone), or a span whose e^(span/2)
    # would overflow: every bin rounded down onto its lower node
    fallback = ((end == seg_start) & ~has_neg) | (nb * step > 1200.0)
    if fallback.any():
        for i in np.flatnonzero(fallback):  # pragma: no cover - degenerate cells
            lo = out_starts[i]
            pmf[lo : lo + nb[i] + 1] = 0.0
            pmf[lo : lo + nb[i]] = m[np.sum(nb[:i]) : np.sum(nb[:i]) + nb[i]]
            pmf[lo + nb[i]] += m_top[i]
    # keep at most the input's P-mass (see pld._from_bins): scale down any excess
    total_out = np.add.reduceat(pmf, out_starts)
    scale = np.where(
        (total_out > total_p) & (total_out > 0),
        total_p / np.where(total_out > 0, total_out, 1.0),
        1.0,
    )
    pmf *= np.repeat(scale, nb + 1)
    return pmf, out_starts


def _optimistic_cells(sigma, q, step, tau, add, pile=None):
    """Dominated grid pairs of every cell: the engine's optimistic construction
    (merged bins, lowered chord gaps, lower convex hull; :mod:`dpacct.accountant.pld`)
    applied to the vectorised bin masses of all cells at once (:func:`_optimistic_block`),
    in blocks of similar length (so little padding) of at most :data:`BIN_BLOCK` bins.

    With ``pile`` (:func:`_pile_nodes`) the cells' grids start at their pile nodes: the
    PMF of cell ``i`` then sits at the losses ``(firsts[i] + k) step + shift[i]``
    (``shift`` from :func:`_pile_shift`), which the caller adds after composing."""
    _, nb_all = _cell_ranges(sigma, q, step, tau, add, pile)
    order = np.argsort(nb_all, kind="stable")
    firsts = np.zeros(sigma.size, dtype=np.int64)
    out: list[np.ndarray | None] = [None] * sigma.size
    for blk in _table_blocks(nb_all[order] + 2, BIN_BLOCK):
        ids = order[blk]
        sub = None if pile is None else pile[ids]
        first, nb, m, n, nodes, _, top = _cell_bins(sigma[ids], q[ids], step, tau, add, sub)
        r = _scaled_q(n, nodes, m)
        pmf, starts = _optimistic_block(first, nb, m, r, np.asarray(top[0], float), step)
        # trim every row to its first and last positive node (segment reductions)
        where = np.arange(pmf.size)
        pos = pmf > 0
        lo = np.minimum.reduceat(np.where(pos, where, pmf.size), starts)
        hi = np.maximum.reduceat(np.where(pos, where, -1), starts)
        empty = hi < 0
        lo = np.where(empty, starts, lo)
        hi = np.where(empty, starts, hi)
        firsts[ids] = first + (lo - starts)
        rows = [pmf[a : b + 1] for a, b in zip(lo.tolist(), hi.tolist(), strict=True)]
        for cid, p in zip(ids.tolist(), rows, strict=True):
            out[cid] = p
    return firsts, out, np.zeros(sigma.size)


def _dense(pmfs: list[np.ndarray], lengths: np.ndarray, width: int) -> np.ndarray:
    """The PMFs as the rows of a zero-padded table of ``width`` columns."""
    out = np.zeros((len(pmfs), width))
    if pmfs:
        row = np.repeat(np.arange(len(pmfs)), lengths)
        col = np.arange(row.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        out[row, col] = np.concatenate(pmfs)
    return out


def _compose_cells(
    step: float,
    firsts: np.ndarray,
    pmfs: list[np.ndarray],
    infs: np.ndarray,
    counts: np.ndarray,
    alias_budget: float,
    pessimistic: bool,
) -> tuple[GridPLD, float] | None:
    """Compose cell PMFs by one FFT: ``prod_c FFT(p_c)^{k_c}``, then one inverse FFT.

    The characteristic-function route (Zhu, Dong & Wang 2022, Section 4; Koskela et
    al. 2020, Section 4): on one shared grid the composed PMF is the circular
    convolution ``IFFT(prod_c FFT(p_c)^{k_c})`` of the cells' PMFs; the powers are
    taken as ``exp(sum_c k_c log FFT(p_c))`` (exact for integer ``k_c``, whatever
    branch of the logarithm).  Returns the composed :class:`GridPLD` and ``err``, an
    upper bound on ``|delta_computed(eps) - delta_discrete(eps)|`` at every eps:

    * aliasing: the circular convolution folds the composed mass outside its window
      ``[A, A + N)`` into it.  Each folded unit moves the hockey-stick value by at most
      its mass, bounded by Chernoff on the composed discrete loss,
      ``P(S >= b) <= exp(Lambda(t) - t b)`` and ``P(S <= a) <= exp(Lambda(-t) + t a)``
      with ``Lambda(t) = sum_c k_c log sum_j p_cj e^{t l_j}`` computed on the very PMFs
      composed; the window is sized so that both are below ``alias_budget``;
    * round-off: forward FFT of each cell with the l2 bound of Higham (2002, Theorem
      24.2), propagated through the ``k_c``-th powers (``|a^k - b^k| <= k |a - b|`` for
      ``|a|, |b| <= 1``), the a-posteriori bound of the summed logarithms, and the
      inverse FFT; the l1 error of the output is at most the l2 error of the full
      spectrum (Parseval) plus ``sqrt(N)`` times the inverse transform's l2 error.

    Returns ``None`` when the window would exceed :data:`FAST_MAX_N`.
    """
    counts = np.asarray(counts, dtype=float)
    lam_c_pos, lam_c_neg = _cell_lambdas(step, firsts, pmfs)
    lam_pos = counts @ lam_c_pos
    lam_neg = counts @ lam_c_neg
    width = max(p.size for p in pmfs)
    a_idx, need = _window(step, lam_pos, lam_neg, alias_budget)
    n = sp_fft.next_fast_len(max(need, width, 2), real=True)
    if n > FAST_MAX_N:
        return None
    alias = _alias(step, lam_pos, lam_neg, a_idx, n)
    spec, mults = _spectrum_product(pmfs, counts.astype(np.int64), n)
    norms = float(counts @ np.array([_l2(p) for p in pmfs]))
    origin = int(np.dot(counts.astype(np.int64), firsts))
    with np.errstate(divide="ignore"):
        log_fin = float(counts @ np.log1p(-np.minimum(infs, 1.0)))
    return _finish(step, spec, n, mults, norms, alias, a_idx, origin, log_fin, pessimistic)


@lru_cache(maxsize=8)
def _chernoff_weights(width: int, step: float) -> tuple[np.ndarray, np.ndarray]:
    j = np.arange(width) * step
    w_pos = np.exp(np.outer(j - j[-1], _ORDERS))  # shifted by the last node: no overflow
    w_neg = np.exp(-np.outer(j, _ORDERS))
    return w_pos, w_neg


def _cell_lambdas(step: float, firsts: np.ndarray, pmfs: list[np.ndarray]):
    """Upper bounds on every cell's log-MGF ``Lambda_c(+-t) = log sum_j p_cj e^{+-t l_j}``
    at the Chernoff orders (rows: cells).

    The sums are of non-negative terms: their computed value is within a relative
    ``(width + 8) u`` of the exact one (Higham 2002, Section 3.1; the exponentials to a
    few ulps), so adding ``2 (width + 8) u`` to the logarithm gives an upper bound.
    Empty rows (all mass at +inf) get 0, an upper bound.
    """
    lengths = np.array([p.size for p in pmfs], dtype=np.int64)
    width = -(-int(lengths.max()) // 1024) * 1024  # padded: the weights are cached
    n_cells = len(pmfs)
    t = _ORDERS
    out_pos = np.zeros((n_cells, t.size))
    out_neg = np.zeros((n_cells, t.size))
    rows = max(1, min(n_cells, (1 << 20) // max(width, 1)))
    j = np.arange(width) * step
    w_pos, w_neg = _chernoff_weights(width, step)
    slack = 2.0 * (width + 8) * _U
    firsts = np.asarray(firsts)
    for s0 in range(0, n_cells, rows):
        block = _dense(pmfs[s0 : s0 + rows], lengths[s0 : s0 + rows], width)
        with np.errstate(divide="ignore"):
            lp = np.log(block @ w_pos) + slack
            ln = np.log(block @ w_neg) + slack
        off = firsts[s0 : s0 + block.shape[0]] * step
        lp = lp + np.outer(off + j[-1], t)
        ln = ln - np.outer(off, t)
        out_pos[s0 : s0 + block.shape[0]] = np.where(np.isfinite(lp), lp, 0.0)
        out_neg[s0 : s0 + block.shape[0]] = np.where(np.isfinite(ln), ln, 0.0)
    return out_pos, out_neg


def _window(step: float, lam_pos: np.ndarray, lam_neg: np.ndarray, alias_budget: float):
    """First node and length of the window outside which each tail is below the budget."""
    t = _ORDERS
    lam_pos = lam_pos + 1e-12 * np.abs(lam_pos)
    lam_neg = lam_neg + 1e-12 * np.abs(lam_neg)
    log_b = math.log(alias_budget)
    top = math.ceil(float(np.min((lam_pos - log_b) / t)) / step)
    bottom = math.floor(float(np.max((log_b - lam_neg) / t)) / step)
    return bottom, top - bottom + 1


def _alias(step: float, lam_pos: np.ndarray, lam_neg: np.ndarray, a_idx: int, n: int) -> float:
    """Chernoff bound on the composed mass outside the window ``[a_idx, a_idx + n)``."""
    t = _ORDERS
    lam_pos = lam_pos + 1e-12 * np.abs(lam_pos)
    lam_neg = lam_neg + 1e-12 * np.abs(lam_neg)
    with np.errstate(over="ignore"):
        above = float(np.min(np.exp(lam_pos - t * (a_idx + n) * step)))
        below = float(np.min(np.exp(lam_neg + t * (a_idx - 1) * step)))
    return above + below


def _power(x: np.ndarray, k: int) -> tuple[np.ndarray, int]:
    """``x ** k`` by repeated squaring, with the number of complex products made."""
    out: np.ndarray | None = None
    mults = 0
    cur = x
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        while k:
            if k & 1:
                if out is None:
                    out = cur.copy()
                else:
                    out *= cur
                    mults += 1
            k >>= 1
            if k:
                cur = cur * cur
                mults += 1
    return (np.ones_like(x) if out is None else out), mults


def _spectrum_product(pmfs: list[np.ndarray], counts: np.ndarray, n: int):
    """``prod_c rfft(p_c, n)^{k_c}`` (cells of equal count multiplied first, the group
    product raised to the count by repeated squaring) and the number of products."""
    n_cells = len(pmfs)
    lengths = np.array([p.size for p in pmfs], dtype=np.int64)
    groups: dict[int, np.ndarray] = {}
    mults = 0
    rows = max(1, min(n_cells, (1 << 21) // n))
    for s0 in range(0, n_cells, rows):
        nr = min(rows, n_cells - s0)
        block = _dense(pmfs[s0 : s0 + nr], lengths[s0 : s0 + nr], n)
        spec = sp_fft.rfft(block, axis=1, workers=-1)
        k = np.asarray(counts[s0 : s0 + nr], dtype=np.int64)
        for kk in np.unique(k):
            sel = spec[k == kk]
            prod = np.prod(sel, axis=0)
            mults += sel.shape[0]
            if int(kk) in groups:
                groups[int(kk)] *= prod
                mults += 1
            else:
                groups[int(kk)] = prod
    spec = np.ones(n // 2 + 1, dtype=complex)
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        for kk, prod in groups.items():
            pw, m = _power(prod, kk)
            spec *= pw
            mults += m + 1
    return spec, mults


def _l2(x: np.ndarray) -> float:
    """Euclidean norm without BLAS (whose threads spin on a busy machine), rounded up."""
    if np.iscomplexobj(x):
        sq = float(np.sum(x.real * x.real + x.imag * x.imag))
    else:
        sq = float(np.sum(x * x))
    return math.sqrt(sq) * (1 + 1e-12 + x.size * _U)


def _spectral_error(spec: np.ndarray, n: int, mults: int, norms: float):
    """Inverse FFT of a product spectrum and its round-off: ``(freq_l2, y, inv_l1)``.

    ``freq_l2`` bounds the l2 error of the spectrum, ``inv_l1`` that of the inverse
    transform in l1; together an l1 bound on ``y`` minus the exact circular PMF.
    """
    rho = _fft_rel(n)
    fwd_l2 = norms * rho * math.sqrt(n)
    spec = np.where(np.isfinite(spec), spec, 0.0)
    # every complex product carries a relative error below sqrt(5) u (Brent, Percival
    # & Zimmermann 2007); M products compound to at most (1 + 3u)^M - 1
    rel = math.expm1(mults * math.log1p(3 * _U))
    sum_l2 = math.sqrt(2.0) * _l2(spec) * rel
    # forward errors through the powers: |a^k - b^k| <= k |a - b| max(|a|, |b|)^(k-1),
    # |FFT p| <= 1 up to its own round-off (the 1e-6 slack covers (1 + e)^k)
    freq_l2 = (fwd_l2 + sum_l2) * (1 + 1e-6)
    y = sp_fft.irfft(spec, n=n, workers=-1)
    inv_l1 = math.sqrt(n) * rho * (1 + freq_l2 / math.sqrt(n)) * (_l2(y) + TINY)
    return freq_l2, y, inv_l1


def _finish(
    step: float,
    spec: np.ndarray,
    n: int,
    mults: int,
    norms: float,
    alias: float,
    a_idx: int,
    origin: int,
    log_fin: float,
    pessimistic: bool,
    *,
    carried: float = 0.0,
) -> tuple[GridPLD, float]:
    """The composed PMF from its spectrum by one inverse FFT, with its error bound.

    ``norms = sum_c k_c ||p_c||_2`` bounds the forward round-off, ``mults`` counts the
    complex products that formed ``spec``; see :func:`_compose_cells`.
    """
    freq_l2, y, inv_l1 = _spectral_error(spec, n, mults, norms)
    err = alias + freq_l2 + inv_l1 + carried + TINY
    y = np.roll(y, -((a_idx - origin) % n))
    y = np.maximum(y, 0.0)
    # +inf: 1 - prod (1 - inf_c)^{k_c}
    inf_mass = -math.expm1(log_fin)
    inf_mass = inf_mass * (1 + 1e-12) if pessimistic else inf_mass * (1 - 1e-12)
    nz = np.flatnonzero(y > 0)
    if nz.size == 0:
        y, first = np.zeros(1), a_idx
    else:
        first, y = a_idx + int(nz[0]), y[nz[0] : nz[-1] + 1]
    if pessimistic:
        return GridPLD(step, first, y, min(inf_mass + err, 1.0), True), err
    return GridPLD(step, first, y, max(inf_mass, 0.0), False), err


#: the lower end's loss step (:func:`_lower_step`) is the coarsest of ``FAST_STEP / 2^i``
#: (``i = 0, 1, 2``) at which the steps narrower than the grid carry at most this share
#: of the composition's loss variance
LOWER_VARIANCE_SHARE = 2.5e-4


def _lower_step(phases: Sequence[tuple[float, float, int]], base: float = FAST_STEP) -> float:
    """Loss step for the lower end of a schedule's bracket (speed only, never soundness).

    With the pile nodes (:func:`_pile_nodes`) the optimistic cells lose little at the
    engine's step, except for cells whose whole loss spread is within a bin or two (a
    small ``q``): their variance is merged away.  The per-step loss variance is about
    ``q^2 (e^{1/sigma^2} - 1)``; a step ``h`` loses at most ``h^2 / 12`` of it per step.
    The coarsest of ``base``, ``base / 2``, ``base / 4`` whose loss, summed over the
    steps, is at most :data:`LOWER_VARIANCE_SHARE` of the total variance is returned.

    Examples
    --------
    >>> _lower_step([(0.8 * 0.9999**t, 0.02, 1) for t in range(100)])
    0.001
    >>> _lower_step([(1.5, 0.001, 100)])
    0.00025
    """
    if not phases:
        return base
    sig = np.array([float(s) for s, _, _ in phases])
    qs = np.array([float(q) for _, q, _ in phases])
    k = np.array([float(c) for _, _, c in phases])
    with np.errstate(over="ignore"):
        var = qs**2 * np.expm1(np.minimum(1.0 / sig**2, 700.0))
    total = float(k @ var)
    for i in range(3):
        h = base / 2**i
        if float(k @ np.minimum(var, h * h / 12)) <= LOWER_VARIANCE_SHARE * total:
            return h
    return base / 4


def fast_epsilon_bounds(
    phases: Sequence[tuple[float, float, int]],
    delta: float,
    *,
    step: float = FAST_STEP,
    upper: bool = True,
    lower: bool = True,
) -> tuple[float, float] | None:
    """Certified ``(lower, upper)`` epsilon of DP-SGD phases by one FFT per direction.

    Every distinct ``(sigma, q)`` cell is discretised at once on one shared loss grid
    (vectorised closed-form bin masses, :func:`_cell_bins`), pessimistically by
    connect-the-dots (Doroshenko et al. 2022) for the upper bound and optimistically
    (the engine's dominated hull construction) for the lower bound; the cells are
    composed by :func:`_compose_cells` (one forward FFT per cell, powers, one inverse
    FFT).  Every approximation is certified: tail mass cut at discretisation goes to
    ``+inf`` (upper) or ``-inf`` (lower), aliasing and floating-point round-off of the
    FFTs are bounded and added to (upper) or subtracted from (lower) delta.  Both
    add/remove directions are composed; epsilon is the larger.  (Ndtr evaluations of
    the bin masses are trusted to their last digits, as everywhere in the engine.)

    Parameters
    ----------
    phases : sequence of (float, float, int)
        ``(sigma, q, count)``; distinct pairs are separate cells (round them first
        with :func:`round_schedule` to merge near-equal steps).
    delta : float
        Target delta in (0, 1).
    step : float
        Loss grid step (second-order discretisation error for smooth losses).
    upper, lower : bool
        Which ends to compute (the other is returned as ``nan``).

    Returns
    -------
    (float, float) or None
        ``(lower, upper)``; ``None`` when the fast path cannot certify (window too
        long), in which case the engine's route should be used.

    Examples
    --------
    >>> _, hi = fast_epsilon_bounds([(1.0, 0.01, 10_000)], 1e-5, lower=False)
    >>> lo, _ = fast_epsilon_bounds([(1.0, 0.01, 10_000)], 1e-5, step=2.5e-4, upper=False)
    >>> bool(0 < lo <= hi < 1.003 * lo)
    True
    """
    if not phases:
        return (0.0, 0.0)
    sig = np.array([float(s) for s, _, _ in phases])
    qs = np.array([float(q) for _, q, _ in phases])
    counts = np.array([int(c) for _, _, c in phases], dtype=np.int64)
    total = float(counts.sum())
    # budgets: cut tails 1e-4 delta in all, aliasing 1e-4 delta per side
    tau = 1e-4 * delta / total
    alias_budget = 1e-4 * delta
    out = [math.nan, math.nan]
    cnt = counts.astype(float)
    if upper:
        firsts, pmfs, infs = _pessimistic_cells(sig, qs, step, tau, False)
        res = _compose_cells(step, firsts, pmfs, infs, cnt, alias_budget, True)
        if res is None:
            return None
        eps = res[0].epsilon(delta)
        if swapped_delta_identity(res[0], eps) > delta:
            # the add direction may be larger: compose it too, first on a coarser loss
            # grid (an upper bound on any grid); only when that is above the remove
            # direction is it composed on the fine grid
            add_eps = math.inf
            for add_step in (ADD_STEP_FACTOR * step, step):
                firsts, pmfs, infs = _pessimistic_cells(sig, qs, add_step, tau, True)
                res = _compose_cells(add_step, firsts, pmfs, infs, cnt, alias_budget, True)
                if res is not None:
                    add_eps = min(add_eps, res[0].epsilon(delta))
                if add_eps <= eps:
                    break
            if not math.isfinite(add_eps):
                return None
            eps = max(eps, add_eps)
        out[1] = eps
    if lower:
        # the remove direction alone: a lower bound on the larger of the two; every
        # cell's grid starts at its pile node, shifted off the shared grid
        pile = _pile_nodes(sig, qs, step)
        firsts, pmfs, infs = _optimistic_cells(sig, qs, step, tau, False, pile)
        res = _compose_cells(step, firsts, pmfs, infs, cnt, alias_budget, False)
        del pmfs
        if res is None:
            return None
        shift = float(np.dot(cnt, _pile_shift(pile, step)))
        out[0] = _shifted_epsilon(res[0], min(delta + res[1], 1.0), shift)
    return (out[0], out[1])


def _shifted_epsilon(pld: GridPLD, delta: float, shift: float) -> float:
    """Lower bound on epsilon at ``delta`` of an optimistic ``pld`` whose losses are all
    ``shift >= 0`` larger than its grid says.

    The curve ``delta(eps) = sum_i p_i (1 - e^{eps - l_i - shift})_+`` is the grid's at
    ``eps - shift``: the integer part of ``shift`` moves the grid by whole nodes, the
    rest ``f in [0, step)`` is added to the grid's epsilon (when that is 0, the true
    one lies in ``[0, f]`` and 0 is returned), lowered by a relative ``1e-12`` for the
    round-off of the sums of losses.
    """
    k = math.floor(shift / pld.step)
    f = shift - k * pld.step
    moved = GridPLD(pld.step, pld.offset + k, pld.pmf, pld.inf_mass, pld.pessimistic)
    eps = moved.epsilon(delta)
    if not eps > 0.0 or not math.isfinite(eps):
        return eps if eps > 0.0 else 0.0
    return max(eps + f - 1e-12 * (abs(eps) + abs(shift) + 1.0), 0.0)


# ------------------------------------------------------------ incremental fast path
class _Direction:
    """One direction's composition of DP-SGD cells, kept as its spectrum on ``n`` points.

    Everything the certificate of :func:`_compose_cells` needs is additive over the
    composed cells and kept as running sums: the log-MGFs (aliasing window), the
    forward round-off (``sum_c k_c ||p_c||``), the number of complex products, the
    origin and the +inf mass.  Adding ``k`` steps of a cell multiplies the spectrum by
    the cell's transform to the ``k``; when the Chernoff window outgrows ``n`` the
    spectrum is recomputed from the cell list on a longer grid (with a margin, so
    re-sizing is rare).  The tails are cut at ``tau = 1e-4 delta / horizon`` per step
    and the cut mass goes to +inf (sound for any number of steps; beyond ``horizon``
    steps every cell is re-discretised with a 16 times longer horizon).
    """

    GROWTH = 2.0

    def __init__(self, delta: float, step: float, add: bool, horizon: int) -> None:
        self.delta = delta
        self.step = step
        self.add = add
        self.horizon = horizon
        self.tau = 1e-4 * delta / horizon
        self.alias_budget = 1e-4 * delta
        self.counts: dict[tuple[float, float], int] = {}
        self.cells: dict[tuple[float, float], tuple] = {}
        self.total = 0
        self.n = 0
        self.spec: np.ndarray | None = None
        self.mults = 0
        t = _ORDERS.size
        self.lam_pos = np.zeros(t)
        self.lam_neg = np.zeros(t)
        self.norms = 0.0
        self.origin = 0
        self.log_fin = 0.0
        self.width = 1
        #: l1 error carried over from earlier grids (see :meth:`_grow`)
        self.carried = 0.0
        #: cost counters: forward transforms of cells and inverse transforms
        self.forward = 0
        self.inverse = 0
        self._recent: dict[tuple[float, float], np.ndarray] = {}

    def _discretise(self, keys: list[tuple[float, float]]) -> None:
        new = [k for k in dict.fromkeys(keys) if k not in self.cells]
        if not new:
            return
        sig = np.array([s for s, _ in new])
        qs = np.array([q for _, q in new])
        firsts, pmfs, infs = _pessimistic_cells(sig, qs, self.step, self.tau, self.add)
        lp, ln = _cell_lambdas(self.step, firsts, pmfs)
        for i, key in enumerate(new):
            pmf = pmfs[i]
            self.cells[key] = (
                int(firsts[i]),
                pmf,
                float(infs[i]),
                lp[i],
                ln[i],
                _l2(pmf),
            )
            self.width = max(self.width, pmf.size)

    def _transform(self, key: tuple[float, float]) -> np.ndarray:
        spec = self._recent.get(key)
        if spec is None:
            spec = sp_fft.rfft(self.cells[key][1], n=self.n, workers=-1)
            self.forward += 1
            if len(self._recent) >= 8:
                self._recent.pop(next(iter(self._recent)))
            self._recent[key] = spec
        return spec

    def _sums(self, items: dict[tuple[float, float], int]):
        lam_pos, lam_neg = self.lam_pos.copy(), self.lam_neg.copy()
        norms, origin, log_fin = self.norms, self.origin, self.log_fin
        for key, k in items.items():
            first, _, inf, lp, ln, nrm = self.cells[key]
            lam_pos += k * lp
            lam_neg += k * ln
            norms += k * nrm
            origin += k * first
            with np.errstate(divide="ignore"):
                log_fin += k * math.log1p(-min(inf, 1.0))
        return lam_pos, lam_neg, norms, origin, log_fin

    def _rebuild_at(self, n: int) -> None:
        """The spectrum of the cell list on ``n`` points, recomputed from the cells."""
        self.n = n
        self._recent.clear()
        self.carried = 0.0
        self.origin = sum(k * self.cells[key][0] for key, k in self.counts.items())
        self.norms = sum(k * self.cells[key][5] for key, k in self.counts.items())
        if self.counts:
            keys = list(self.counts)
            pmfs = [self.cells[k][1] for k in keys]
            counts = np.array([self.counts[k] for k in keys], dtype=np.int64)
            self.spec, self.mults = _spectrum_product(pmfs, counts, n)
            self.forward += len(keys)
        else:
            self.spec, self.mults = np.ones(n // 2 + 1, dtype=complex), 0

    def _grow(self, need: int) -> bool:
        """Move to a longer grid; False when it would exceed :data:`FAST_MAX_N`.

        The composition so far fits its own window, so it is carried over as one PMF
        (one inverse and one forward FFT instead of one per cell): its l1 distance to
        the exact composition of the cells -- twice the aliased mass, plus the
        round-off bound of :func:`_spectral_error` -- is added to ``carried``, and every
        later answer adds ``carried`` to its error (convolving with probability
        measures and folding the window do not increase an l1 distance, and the
        hockey-stick divergence moves by at most the l1 distance of the PMFs).
        """
        n = sp_fft.next_fast_len(max(int(need * self.GROWTH), self.width, 2), real=True)
        if n > FAST_MAX_N:
            return False
        if self.spec is None or self.total == 0:
            self._rebuild_at(n)
            return True
        a_old, need_old = _window(self.step, self.lam_pos, self.lam_neg, self.alias_budget)
        if need_old > self.n:  # pragma: no cover - the window always fits after a fold
            self._rebuild_at(n)
            return True
        alias = _alias(self.step, self.lam_pos, self.lam_neg, a_old, self.n)
        freq_l2, y, inv_l1 = _spectral_error(self.spec, self.n, self.mults, self.norms)
        y = np.maximum(np.roll(y, -((a_old - self.origin) % self.n)), 0.0)
        self.inverse += 1
        self.carried += 2.0 * alias + freq_l2 + inv_l1
        self.n = n
        self._recent.clear()
        self.spec = sp_fft.rfft(y, n=n, workers=-1)
        self.forward += 1
        self.mults = 0
        self.norms = _l2(y)
        self.origin = a_old
        return True

    def _reset_horizon(self, total: int) -> None:
        while self.horizon < total:
            self.horizon *= 16
        counts = self.counts
        self.__init__(self.delta, self.step, self.add, self.horizon)  # type: ignore[misc]
        self.fold(counts)

    def _prepare(self, items: dict[tuple[float, float], int]) -> bool:
        if self.total + sum(items.values()) > self.horizon:
            self._reset_horizon(self.total + sum(items.values()))
        self._discretise(list(items))
        lam_pos, lam_neg, _, _, _ = self._sums(items)
        _, need = _window(self.step, lam_pos, lam_neg, self.alias_budget)
        if self.spec is None or need > self.n or self.width > self.n:
            return self._grow(need)
        return True

    def fold(self, items: dict[tuple[float, float], int]) -> bool:
        """Compose ``k`` more steps of each cell in ``items``; False if it cannot certify."""
        if not self._prepare(items):
            return False
        sums = self._sums(items)
        with np.errstate(under="ignore", over="ignore", invalid="ignore"):
            for key, k in items.items():
                pw, m = _power(self._transform(key), k)
                self.spec *= pw
                self.mults += m + 1
        for key, k in items.items():
            self.counts[key] = self.counts.get(key, 0) + k
        self.total += sum(items.values())
        self.lam_pos, self.lam_neg, self.norms, self.origin, self.log_fin = sums
        return True

    def pld(self, extra: dict[tuple[float, float], int] | None = None):
        """The composed pessimistic :class:`GridPLD` (with ``extra`` steps, not kept)."""
        extra = extra or {}
        if not self._prepare(extra):
            return None
        lam_pos, lam_neg, norms, origin, log_fin = self._sums(extra)
        a_idx, _ = _window(self.step, lam_pos, lam_neg, self.alias_budget)
        spec, mults = self.spec, self.mults
        if extra:
            spec = spec.copy()
            with np.errstate(under="ignore", over="ignore", invalid="ignore"):
                for key, k in extra.items():
                    pw, m = _power(self._transform(key), k)
                    spec *= pw
                    mults += m + 1
        alias = _alias(self.step, lam_pos, lam_neg, a_idx, self.n)
        self.inverse += 1
        out = _finish(
            self.step,
            spec,
            self.n,
            mults,
            norms,
            alias,
            a_idx,
            origin,
            log_fin,
            True,
            carried=self.carried,
        )
        return out[0]


#: the incremental path composes the add direction on a coarser loss grid (any grid
#: gives a certified upper bound): it is needed only when the remove direction's
#: swapped curve, whose error terms are multiplied by ``e^eps``, fails to certify it,
#: and then it is usually far below the remove direction
ADD_STEP_FACTOR = 4


class IncrementalEpsilon:
    """Certified upper bound on epsilon of a growing DP-SGD ledger, step by step.

    The fast path of :func:`fast_epsilon_bounds` kept open: steps are rounded up to
    their dominating cell (:func:`round_step`), each direction's composition is kept
    as its spectrum (:class:`_Direction`), so composing new steps multiplies spectra
    and a query costs one inverse FFT.  The add direction is composed only once the
    remove direction's swapped curve
    (:func:`~dpacct.accountant.pld_pair.swapped_delta_identity`) no longer certifies it,
    on a loss grid :data:`ADD_STEP_FACTOR` times coarser; from then on both are kept.
    ``epsilon`` returns ``None`` when the window would exceed :data:`FAST_MAX_N` (the
    caller then uses the engine's route).

    Examples
    --------
    >>> inc = IncrementalEpsilon(1e-5)
    >>> inc.fold([(1.0 * 0.999**t, 0.01, 1) for t in range(500)])
    >>> a = inc.epsilon()
    >>> b = inc.epsilon([(0.6, 0.01, 100)])  # hypothetical, not kept
    >>> bool(0 < a < b) and inc.epsilon() == a
    True
    """

    def __init__(
        self, delta: float, *, grid: float = DEFAULT_GRID, step: float = FAST_STEP
    ) -> None:
        self.delta = delta
        self.grid = _check_grid(grid)
        self.w = math.log1p(self.grid)
        self.step = step
        self.remove = _Direction(delta, step, False, 1 << 20)
        self.add: _Direction | None = None
        self._eps: float | None = 0.0
        self.ok = True
        #: coordinate values kept exact in the cells (see :meth:`_cells`)
        self._exact_sigma: set[float] = set()
        self._exact_q: set[float] = set()

    @property
    def inverse_transforms(self) -> int:
        return self.remove.inverse + (0 if self.add is None else self.add.inverse)

    def _cells(self, steps) -> dict[tuple[float, float], int]:
        """The dominating cell of every step.  A coordinate value already kept exact,
        or a new one while fewer than :data:`EXACT_VALUES` are kept (a constant q, a
        step schedule's few sigmas), is used as it is; others are rounded up to the
        grid (smaller sigma, larger q).  Both are dominating cells, so the choice
        only trades merging for tightness, never soundness."""
        out: dict[tuple[float, float], int] = {}
        for sigma, q, count in steps:
            sigma, q = float(sigma), float(q)
            cell_sigma, cell_q = _round(sigma, q, self.w, True)
            key = (
                sigma if self._keep(self._exact_sigma, sigma) else cell_sigma,
                q if self._keep(self._exact_q, q) else cell_q,
            )
            out[key] = out.get(key, 0) + int(count)
        return out

    @staticmethod
    def _keep(kept: set[float], value: float) -> bool:
        if value in kept:
            return True
        if len(kept) < EXACT_VALUES:
            kept.add(value)
            return True
        return False

    def fold(self, steps: Iterable[tuple[float, float, int]]) -> None:
        """Compose the steps ``(sigma, q, count)`` into the kept composition."""
        items = self._cells(steps)
        if not items:
            return
        self._eps = None
        self.ok = self.ok and self.remove.fold(items)
        if self.add is not None:
            self.ok = self.ok and self.add.fold(items)

    def epsilon(
        self, extra: Iterable[tuple[float, float, int]] = (), *, cap: float | None = None
    ) -> float | None:
        """Certified epsilon at ``delta`` of the composition (with ``extra``, not kept).

        With ``cap`` (a filter's budget) the answer only has to decide against it: a
        value ``<= cap`` is a certified upper bound (possibly looser than without
        ``cap``: the add direction may be certified by the swapped curve anywhere up to
        ``cap``), a value ``> cap`` means the certified bound exceeds ``cap``.
        """
        items = self._cells(extra)
        if not items and self._eps is not None:
            return self._eps
        if not self.ok:
            return None
        if not items and self.remove.total == 0:
            return 0.0
        rem = self.remove.pld(items)
        if rem is None:
            return None
        eps = float(rem.epsilon(self.delta))
        if swapped_delta_identity(rem, eps) > self.delta:
            # the add direction from the swapped curve first (no second composition)
            found = swapped_epsilon(rem, self.delta, eps)
            if found is None and cap is not None and eps > cap:
                return eps  # the remove direction alone is over the cap
            if found is None and cap is not None and swapped_delta_identity(rem, cap) <= self.delta:
                found = swapped_epsilon(rem, self.delta, eps, cap)
            if found is not None:
                eps = found
            else:
                if self.add is None:
                    self.add = _Direction(
                        self.delta, ADD_STEP_FACTOR * self.step, True, self.remove.horizon
                    )
                    if self.remove.counts and not self.add.fold(dict(self.remove.counts)):
                        return None
                add = self.add.pld(items)
                if add is None:
                    return None
                eps = max(eps, float(add.epsilon(self.delta)))
        if not items and cap is None:
            self._eps = eps
        return eps
