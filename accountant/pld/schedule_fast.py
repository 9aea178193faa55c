"""Certified epsilon bracket of DP-SGD phases by one FFT per direction.

The subsampled-Gaussian cells (:mod:`~dpacct.accountant.pld.sgm_cells`) composed by the
engine's FFT kernel (:mod:`~dpacct.accountant.pld.pld_fft`) on one shared loss grid, with
aliasing and round-off inside the certificate (characteristic-function accounting:
Zhu, Dong & Wang 2022, Section 4; Koskela et al. 2020, Section 4).  Many cells are
composed in a tree of groups, each on its own window (:func:`_compose_tree`), the
groups' errors carried into the certificate.  The upper end composes every group of
cells on a loss grid a power of two finer than the composition's and re-discretises the
group's PMF once onto it (:func:`~dpacct.accountant.pld.split_cells.split_fine_group`,
soundness in :mod:`~dpacct.accountant.pld.coarsen`), so a group of ``B`` steps widens
the loss by ``B (h / K)^2 / 4 + h^2 / 4`` instead of ``B h^2 / 4`` (docs/theory/
schedules.md, "Fine groups, one coarse discretisation per group").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..numerics import TINY, roll_left
from .grid import GridPLD
from .groups import _compose_group, _compose_spectrum, _row_lambdas
from .optimistic_groups import optimistic_fine_group
from .pld_fft import _cell_lambdas, _clear_weights, _spectral_error
from .pld_pair import swapped_delta
from .pld_settings import tail_budgets
from .sgm_cells import (
    _cell_ranges,
    _optimistic_cells,
    _pessimistic_cells,
    _pile_nodes,
    _pile_shift,
)
from .split_cells import split_fine_group

__all__ = ["fast_epsilon_bounds", "fast_upper"]


#: grid step of the fast path's loss grid (the engine's grids are chosen per cell)
FAST_STEP = 1e-3


def _compose_cells(
    step: float,
    firsts: np.ndarray,
    pmfs: list[np.ndarray],
    infs: np.ndarray,
    counts: np.ndarray,
    alias_budget: float,
    pessimistic: bool,
    *,
    log_fin: float | None = None,
    carried: float = 0.0,
    lambdas=_cell_lambdas,
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
      ``|a|, |b| <= 1``), or frequency by frequency where that is smaller
      (:func:`~dpacct.accountant.pld.groups._bounded_product`), the a-posteriori
      bound of the summed logarithms, and the inverse FFT; the l1 error of the
      output is at most the l2 error of the full spectrum (Parseval) plus
      ``sqrt(N)`` times the inverse transform's l2 error.

    ``log_fin`` (default: from ``infs``) is the log of the finite mass,
    ``sum_c k_c log(1 - inf_c)``; ``carried`` an error already made upstream (the
    groups of :func:`_compose_tree`), added to ``err``; ``lambdas``: see
    :func:`_compose_spectrum`.  Returns ``None`` when the window would exceed
    :data:`FAST_MAX_N`.
    """
    counts = np.asarray(counts, dtype=float)
    raw = _compose_spectrum(step, firsts, pmfs, counts, alias_budget, lambdas, componentwise=True)
    if raw is None:
        return None
    if log_fin is None:
        with np.errstate(divide="ignore"):
            log_fin = float(counts @ np.log1p(-np.minimum(infs, 1.0)))
    return _finish(step, *raw[:-1], log_fin, pessimistic, carried=carried, fwd=raw[-1])


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
    fwd: float = math.inf,
) -> tuple[GridPLD, float]:
    """The composed PMF from its spectrum by one inverse FFT, with its error bound.

    ``norms = sum_c k_c ||p_c||_2`` bounds the forward round-off, ``mults`` counts the
    complex products that formed ``spec``; ``fwd``, another bound on that forward
    round-off (the componentwise one of :func:`~dpacct.accountant.pld.groups.
    _bounded_product`; the smaller is used); see :func:`_compose_cells`.
    """
    freq_l2, y, inv_l1 = _spectral_error(spec, n, mults, norms, fwd)
    err = alias + freq_l2 + inv_l1 + carried + TINY
    y = roll_left(y, (a_idx - origin) % n)
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


#: beyond this many cells a composition goes through :func:`_compose_tree` (at most
#: this many, the flat product of :func:`_compose_cells`).  The flat product
#: transforms every cell on the whole composition's window, whose length grows with
#: the composition, so its cost grows faster than the number of cells; the tree is
#: also tighter (its last product has fewer factors, so a smaller round-off bound):
#: measured on 1 000 random phases, the upper end 5.321375 -> 5.321300, the lower end
#: 5.318162 -> 5.318246, the upper end's time 1.7-2.2 s -> 0.7-1.0 s (loaded machine)
TREE_CELLS = 128
#: cells (or group PMFs, higher up) composed together into one group PMF of the tree
TREE_FANIN = 64
#: cells of one fine group (:func:`_pessimistic_tree` with ``factor > 1``), whose PMFs
#: are held at once on the fine grid: fewer than :data:`TREE_FANIN` keep the memory
#: down (measured on 1 000 random phases at factor 8, 64 -> 16 cells a group: the same
#: time, the upper end 5.320461 -> 5.320469); the group PMFs are then composed
#: :data:`TREE_FANIN` at a time on the coarse grid
FINE_GROUP_CELLS = 16
#: ... at least: a group holds about this many steps (:func:`_fine_group_cells`), each
#: group paying one coarse discretisation ``h^2 / 4``, so cells of few steps each are
#: grouped more of them at a time ...
FINE_GROUP_STEPS = 160
#: ... up to this many cells (the fine PMFs held at once: measured on 1 000 decaying
#: one-step cells, traced peak 10 / 30 / 43 MB at 16 / 64 / 128 cells a group; the upper
#: end 0.989605 / 0.989548 / 0.989539 and 0.71 / 0.62 / 0.57 s, fewer groups being
#: fewer transforms a level up)
FINE_GROUP_MAX_CELLS = 64
#: the groups' aliasing windows share this fraction of the composition's aliasing budget
TREE_ALIAS_SHARE = 1e-3


def _fine_group_cells(counts: np.ndarray) -> int:
    """Cells of one fine group: :data:`FINE_GROUP_STEPS` over the mean count of steps a
    cell, within ``[FINE_GROUP_CELLS, FINE_GROUP_MAX_CELLS]`` (tightness, time and
    memory only: any grouping is certified).

    Examples
    --------
    >>> _fine_group_cells(np.full(1000, 10.0))  # 1 000 phases of 10 steps
    16
    >>> _fine_group_cells(np.full(781, 1906 / 781))  # the 1 906 decaying steps' cells
    64
    """
    mean = float(np.mean(counts)) if counts.size else 1.0
    cells = int(FINE_GROUP_STEPS // max(mean, 1.0))
    return min(FINE_GROUP_MAX_CELLS, max(FINE_GROUP_CELLS, cells))


# long function: one pass over the groups with the per-level buffers of the tree and
# the error, finite-mass and budget bookkeeping they share
def _compose_tree(
    step: float,
    cells,
    widths: np.ndarray,
    counts: np.ndarray,
    alias_budget: float,
    pessimistic: bool,
    *,
    group=None,
    group_cells: int | None = None,
) -> tuple[GridPLD, float] | None:
    """:func:`_compose_cells` of many cells, in a tree of groups, cells discretised as
    they are needed.

    ``cells(ids)`` discretises the cells ``ids`` (``(firsts, pmfs, infs)``), ``widths``
    are their bin counts (cells of similar width are grouped, so a group's window is
    not set by one wide cell).  With ``group``, ``group(ids, budget)`` makes a whole
    group PMF of the cells ``ids`` at once (a :class:`~dpacct.accountant.pld.groups.
    Segment` on the ``step`` grid, as :func:`~dpacct.accountant.pld.groups.
    compose_fine_group` returns it, aliasing budget ``budget``; ``None``: cannot
    certify) in place of ``cells`` and
    :func:`_compose_group`, whatever the number of cells, :func:`_fine_group_cells` cells
    at a time.  Up to :data:`TREE_CELLS` cells
    (without ``group``) this is
    :func:`_compose_cells`.  Beyond, :data:`TREE_FANIN` cells at a time are discretised,
    composed on their own (shorter) window by :func:`_compose_group` and freed; the
    group PMFs, :data:`TREE_FANIN` at a time, are composed the same way one level up,
    and the PMFs left at every level are composed by :func:`_compose_cells` at the end
    (each with count 1), so a cell is transformed on its group's window, not on the
    whole composition's, and at most ``TREE_FANIN`` PMFs per level are held.
    ``group_cells``: the cells of one ``group`` (default :func:`_fine_group_cells`).

    Certificate: the composed PMF differs from the exact discrete composition by a
    signed measure; writing each group PMF as ``y_g = x_g + E_g`` (``x_g`` exact) and
    expanding the convolution telescopically, every term is one ``E_g`` convolved with
    non-negative measures of mass at most ``1 + err``, so the hockey-stick value at
    every eps moves by at most ``sum_g err_g`` (times that mass), carried into the last
    composition's ``err``.  The last composition's aliasing and round-off are computed
    on the very group PMFs it composes, as in :func:`_compose_cells` (whose round-off
    bound takes every factor's transform as at most 1 in modulus: each group PMF has
    mass at most 1, see :func:`_compose_group`).  The groups' own aliasing budgets
    share :data:`TREE_ALIAS_SHARE` of ``alias_budget``.
    """
    counts = np.asarray(counts, dtype=float)
    n_cells = counts.size
    if n_cells <= TREE_CELLS and group is None:
        firsts, pmfs, infs = cells(np.arange(n_cells))
        return _compose_cells(step, firsts, pmfs, infs, counts, alias_budget, pessimistic)
    # every group of every level gets the same share of the groups' budget; there are
    # at most n / F + n / F^2 + ... + (one partial group per level) of them
    fanin0 = TREE_FANIN if group is None else group_cells or _fine_group_cells(counts)
    g0 = math.ceil(n_cells / fanin0)  # level-0 groups; each level up, 1 / TREE_FANIN
    levels = math.ceil(math.log(max(g0, 2)) / math.log(TREE_FANIN)) + 1
    n_groups = g0 + math.ceil(g0 / (TREE_FANIN - 1)) + levels
    group_budget = TREE_ALIAS_SHARE * alias_budget / n_groups
    order = np.argsort(widths, kind="stable")
    buffers: list[list[tuple[int, np.ndarray]]] = [[]]
    carried, log_fin = 0.0, 0.0

    def push(level: int, item: tuple[int, np.ndarray]) -> bool:
        nonlocal carried
        if len(buffers) == level:
            buffers.append([])
        buffers[level].append(item)
        if len(buffers[level]) < TREE_FANIN:
            return True
        items, buffers[level] = buffers[level], []
        firsts = np.array([f for f, _ in items], dtype=np.int64)
        out = _compose_group(step, firsts, [p for _, p in items], np.ones(len(items)), group_budget)
        if out is None:
            return False
        carried += out.err
        return push(level + 1, (out.first, out.pmf))

    for s0 in range(0, n_cells, fanin0):
        ids = order[s0 : s0 + fanin0]
        if group is not None:
            out = group(ids, group_budget)
            if out is None:
                return None
            log_fin += out.log_fin
        else:
            firsts, pmfs, infs = cells(ids)
            with np.errstate(divide="ignore"):
                log_fin += float(counts[ids] @ np.log1p(-np.minimum(infs, 1.0)))
            out = _compose_group(step, firsts, pmfs, counts[ids], group_budget)
            del pmfs
            if out is None:
                return None
        carried += out.err
        if not push(1, (out.first, out.pmf)):
            return None
    left = [item for level in buffers for item in level]
    firsts = np.array([f for f, _ in left], dtype=np.int64)
    ones = np.ones(len(left))
    return _compose_cells(
        step,
        firsts,
        [p for _, p in left],
        np.zeros(len(left)),
        ones,
        alias_budget,
        pessimistic,
        log_fin=log_fin,
        carried=carried,
        lambdas=_row_lambdas,
    )


#: the lower end's loss step (:func:`_lower_step`) is the coarsest of ``FAST_STEP / 2^i``
#: (``i = 0, 1, 2``) at which the steps narrower than the grid carry at most this share
#: of the composition's loss variance
LOWER_VARIANCE_SHARE = 2.5e-4


#: the upper end's groups are composed ``factor`` times finer than the loss step
#: (:func:`_upper_factor`) while connect-the-dots would add more than this share to the
#: composition's loss variance ...
UPPER_VARIANCE_SHARE = 3e-5
#: ... up to this factor (the groups' cost grows with it: their windows are ``factor``
#: times longer; measured on 1 000 random phases with groups of 64 cells, 4 -> 8 -> 16:
#: 0.6 -> 0.9 -> 1.6 s, the upper end 5.320612 -> 5.320455 -> 5.320423)
UPPER_MAX_FACTOR = 8
#: share of the tail budgets' aliasing budget the upper end spends (the windows grow
#: only with its logarithm; a hundredth of it moves the upper end of 100 random phases
#: by -1e-5 relative at no measured cost)
ALIAS_SHARE = 1e-2


def _step_variance(phases: Sequence[tuple[float, float, int]]):
    """Per-step loss variance ``q^2 (e^{1/sigma^2} - 1)`` and the counts, as arrays."""
    sig = np.array([float(s) for s, _, _ in phases])
    qs = np.array([float(q) for _, q, _ in phases])
    k = np.array([float(c) for _, _, c in phases])
    with np.errstate(over="ignore"):
        var = qs**2 * np.expm1(np.minimum(1.0 / sig**2, 700.0))
    return var, k


def _upper_factor(phases: Sequence[tuple[float, float, int]], step: float = FAST_STEP) -> int:
    """Refinement of the upper end's fine groups (tightness and speed only).

    Connect-the-dots (Doroshenko et al. 2022) moves each loss to the two grid nodes
    around it, which adds up to ``h^2 / 4`` (``h^2 / 6`` on average) to every step's
    loss variance; for steps whose whole loss spread is a few bins (a small ``q``)
    that is a visible share of the composition's variance, and the upper bound is that
    much loose.  The groups of the upper end are composed at ``step / factor`` and
    re-discretised onto ``step`` once (:func:`~dpacct.accountant.pld.split_cells.
    split_fine_group`), so each step adds ``(step / factor)^2 / 6``: the smallest power
    of two ``factor <= UPPER_MAX_FACTOR`` whose added variance ``sum_k k (step /
    factor)^2 / 6`` is at most :data:`UPPER_VARIANCE_SHARE` of the total is returned.
    Any factor gives a certified upper bound; this one only decides how tight and how
    fast.

    Examples
    --------
    >>> _upper_factor([(1.5, 0.01, 100)])  # variance 5.6e-5 a step
    8
    >>> _upper_factor([(1.0, 0.2, 100)])  # 0.07 a step: the coarse grid suffices
    1
    >>> _upper_factor([])
    1
    """
    if not phases:
        return 1
    var, k = _step_variance(phases)
    total = float(k @ var)
    added = float(k.sum()) * step * step / 6
    factor = 1
    while factor < UPPER_MAX_FACTOR and added / factor**2 > UPPER_VARIANCE_SHARE * total:
        factor *= 2
    return factor


#: a schedule rounded onto a grid of cells at most this wide (relative; see
#: :func:`_rounding_width`) has a bracket of a few hundredths of a percent from the
#: rounding of its two ends, and its lower end is refined further
#: (:data:`ROUNDED_VARIANCE_SHARE`); on a coarser grid the rounding's own share of the
#: bracket is tenths of a percent and a finer lower step buys little (the 10 000
#: decaying steps of sigma 1.5 * 0.9999^t on 1 026 cells at 2^-10: 0.33 %)
ROUNDED_MAX_GRID = 2.0**-11
#: ... for such a schedule the lower end's step is the coarsest of ``FAST_STEP / 2^i``
#: (``i = 0 .. 3``) whose steps narrower than the grid carry at most this share of the
#: loss variance.  Measured on the first 1 906 steps of sigma 1.5 * 0.9999^t, q 0.01
#: (781 cells at 2^-12): the lower end 1.494394 at 2.5e-4 (share 7.2e-5), 1.494559 at
#: 1.25e-4 (share 1.8e-5, twice the time), the bracket 0.058 % -> 0.047 %; the lower
#: end's epsilon loses about 2.2 times the variance share (relative), here and on
#: 1 000 random phases
ROUNDED_VARIANCE_SHARE = 5e-5
#: distinct sigmas a schedule needs before :func:`_rounding_width` calls it rounded
ROUNDED_MIN_VALUES = 16


def _rounding_width(phases: Sequence[tuple[float, float, int]]) -> float:
    """Relative width ``e^w - 1`` of the geometric grid ``e^{k w}`` (integer ``k``) all
    the phases' distinct sigmas lie on, ``w`` their smallest log-gap -- the cells of
    :func:`~dpacct.accountant.pld.schedule.round_schedule` -- or 0 when they do not (or
    are fewer than :data:`ROUNDED_MIN_VALUES`).  Speed only: it decides how fine the
    lower end's step is.

    Examples
    --------
    >>> w = math.log1p(2.0**-12)
    >>> cells = [(math.exp(k * w), 0.01, 2) for k in range(1600, 1640)]
    >>> round(_rounding_width(cells) * 2**12, 9)
    1.0
    >>> _rounding_width([(1.5 * 0.9999**t, 0.01, 1) for t in range(100)])
    0.0
    """
    sig = np.unique(np.array([float(s) for s, _, _ in phases], dtype=float))
    if sig.size < ROUNDED_MIN_VALUES or not np.all(sig > 0):
        return 0.0
    logs = np.log(sig)
    w = float(np.min(np.diff(logs)))
    k = logs / w
    if not np.all(np.abs(k - np.round(k)) <= 1e-6 * np.maximum(np.abs(k), 1.0)):
        return 0.0
    return math.expm1(w)


def _lower_step(phases: Sequence[tuple[float, float, int]], base: float = FAST_STEP) -> float:
    """Loss step for the lower end of a schedule's bracket (speed only, never soundness).

    With the pile nodes (:func:`_pile_nodes`) the optimistic cells lose little at the
    engine's step, except for cells whose whole loss spread is within a bin or two (a
    small ``q``): their variance is merged away.  The per-step loss variance is about
    ``q^2 (e^{1/sigma^2} - 1)``; a step ``h`` loses at most ``h^2 / 12`` of it per step.
    The coarsest of ``base``, ``base / 2``, ``base / 4`` whose loss, summed over the
    steps, is at most :data:`LOWER_VARIANCE_SHARE` of the total variance is returned.
    A schedule rounded onto a grid of cells at most :data:`ROUNDED_MAX_GRID` wide
    (:func:`_rounding_width`), whose bracket already holds both ends' rounding, gets
    the coarsest of ``base`` .. ``base / 8`` within :data:`ROUNDED_VARIANCE_SHARE`.

    Examples
    --------
    >>> _lower_step([(0.8 * 0.9999**t, 0.02, 1) for t in range(100)])
    0.001
    >>> _lower_step([(1.5, 0.001, 100)])
    0.00025
    >>> w = math.log1p(2.0**-12)  # 40 cells of a rounded decaying schedule
    >>> _lower_step([(math.exp((1660 - k) * w), 0.01, 2) for k in range(40)])
    0.000125
    """
    if not phases:
        return base
    var, k = _step_variance(phases)
    total = float(k @ var)
    levels, share = 3, LOWER_VARIANCE_SHARE
    if 0.0 < _rounding_width(phases) <= ROUNDED_MAX_GRID * (1 + 1e-9):
        levels, share = 4, ROUNDED_VARIANCE_SHARE
    for i in range(levels):
        h = base / 2**i
        if float(k @ np.minimum(var, h * h / 12)) <= share * total:
            return h
    return base / 2 ** (levels - 1)


#: a schedule whose finest :func:`_lower_step` still merges more than this share of its
#: loss variance into bins (steps whose whole loss spread is a bin or two: small ``q``)
#: also gets a lower end on a finer step (:func:`_small_q_step`), the larger kept.  The
#: session-26 review's 20 phases of q 1e-5 .. 2e-4 x 50 had a 36 % bracket at 1e-5, and
#: 1 500 steps of sigma 1 + 0.001 t, q 1e-4 (1 + t mod 5) (share 8.5e-2 at 2.5e-4) a 35 %
#: one: the lower end 0.017996 at 2.5e-4, 0.024503 at 1.25e-4, 0.026660 at 6.25e-5,
#: 0.027376 at 3.1e-5, 0.027440 at 1.56e-5 (share 3.5e-4, 5.0 s against 0.44 s), the
#: upper end 0.027492 (issue 37, session 27).  20 phases of one q (x 1.01^i sigma): at
#: sigma 1.5, q 1e-3 (share 9.3e-3) 3.0 % -> 0.040 %; sigma 1, q 1e-3 (3.0e-3) 0.84 % ->
#: 0.053 %, each at about the same CPU; at 5e-4 sigma 1, q 2e-3 (7.6e-4) would also go
#: 0.19 % -> 0.047 %, left for a measurement of the suite's cost
SMALL_Q_SHARE = 2.5e-3
#: ... halving the step until the share is at most :data:`LOWER_VARIANCE_SHARE`, or down
#: to this step (each halving about doubles the lower end's cost)
SMALL_Q_MIN_STEP = FAST_STEP / 64


def _small_q_step(phases: Sequence[tuple[float, float, int]], step: float) -> float:
    """A finer loss step for the lower end of a schedule whose steps' loss spreads are
    narrower than ``step`` (speed and tightness only, never soundness): ``step`` itself
    unless the steps narrower than it carry more than :data:`SMALL_Q_SHARE` of the
    loss variance (as :func:`_lower_step` measures it: ``h^2 / 12`` per step at most);
    then ``step`` halved until that share is at most :data:`LOWER_VARIANCE_SHARE`, and
    at most down to :data:`SMALL_Q_MIN_STEP`.

    Examples
    --------
    >>> _small_q_step([(1.0, 0.01, 100)], 2.5e-4)  # wide steps: unchanged
    0.00025
    >>> _small_q_step([(1.0, 1e-4, 100)], 2.5e-4)  # a small q: finer
    1.5625e-05
    """
    if not phases:
        return step
    var, k = _step_variance(phases)
    total = float(k @ var)
    if not total > 0.0:
        return step

    def share(h: float) -> float:
        return float(k @ np.minimum(var, h * h / 12)) / total

    if share(step) <= SMALL_Q_SHARE:
        return step
    h = step
    while h / 2 >= SMALL_Q_MIN_STEP * (1 - 1e-12) and share(h) > LOWER_VARIANCE_SHARE:
        h /= 2
    return h


# long function: its docstring (56 lines) states the contract of both ends and every
# option; the body is about 50 lines
def fast_epsilon_bounds(
    phases: Sequence[tuple[float, float, int]],
    delta: float,
    *,
    step: float | None = None,
    upper: bool = True,
    lower: bool = True,
    factor: int | None = None,
    lower_factor: int = 1,
    lower_group_cells: int | None = None,
) -> tuple[float, float] | None:
    """Certified ``(lower, upper)`` epsilon of DP-SGD phases by one FFT per direction.

    Every distinct ``(sigma, q)`` cell is discretised at once on one shared loss grid
    (vectorised closed-form bin masses, :func:`_cell_bins`), pessimistically by
    connect-the-dots (Doroshenko et al. 2022) for the upper bound and optimistically
    (the engine's dominated hull construction) for the lower bound; the cells are
    composed by :func:`_compose_cells` (one forward FFT per cell, powers, one inverse
    FFT; beyond :data:`TREE_CELLS` cells in a tree of groups, :func:`_compose_tree`,
    whose cost and memory grow linearly with the cells).  The upper end's groups (of
    :func:`_fine_group_cells` cells, however few the cells) are discretised and composed on a
    finer grid and re-discretised once by connect-the-dots (:func:`_pessimistic_tree`),
    which keeps the bound certified and removes most of the per-step discretisation
    widening.  Every approximation is
    certified: tail mass cut at discretisation goes to ``+inf`` (upper) or ``-inf``
    (lower), aliasing and floating-point round-off of the
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
    step : float, optional
        Loss grid step (second-order discretisation error for smooth losses); None
        (default): :data:`FAST_STEP`.  The upper end composes its groups of cells
        :func:`_upper_factor` times finer and re-discretises each group once onto
        ``step``; the lower end composes on ``step`` itself.
    upper, lower : bool
        Which ends to compute (the other is returned as ``nan``).
    factor : int, optional
        Refinement of the upper end's groups, a power of two; None (default):
        :func:`_upper_factor` of the phases; 1: every cell discretised on ``step``.
    lower_factor : int, default 1
        Refinement of the lower end, a power of two: 1, every cell discretised on
        ``step``; above, groups of cells (``lower_group_cells`` each, default
        :func:`_fine_group_cells`) discretised on ``step / lower_factor`` over their
        bulk and composed there, then re-discretised once onto ``step``
        (:func:`~dpacct.accountant.pld.optimistic_groups.optimistic_fine_group`).

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
    budget = tail_budgets(delta, max(int(counts.sum()), 1))
    tau, alias_budget = budget.piece, budget.alias
    out = [math.nan, math.nan]
    cnt = counts.astype(float)
    if upper:
        if factor is not None and not (
            isinstance(factor, int) and factor >= 1 and not factor & (factor - 1)
        ):
            raise ValueError(f"factor must be a power of two >= 1, got {factor!r}")
        out[1] = _upper_of(phases, (sig, qs, cnt), delta, step, factor, (tau, alias_budget))[0]
        if math.isnan(out[1]):
            return None
    if lower:
        step = FAST_STEP if step is None else step
        if lower_factor != 1:
            return _with_fine_lower(
                out, (sig, qs, cnt), delta, step, (tau, alias_budget), lower_factor,
                lower_group_cells,
            )
        # the remove direction alone: a lower bound on the larger of the two; every
        # cell's grid starts at its pile node, shifted off the shared grid
        pile = _pile_nodes(sig, qs, step)
        res = _compose_tree(
            step,
            lambda ids: _optimistic_cells(sig[ids], qs[ids], step, tau, False, pile[ids]),
            _cell_ranges(sig, qs, step, tau, False, pile)[1],
            cnt,
            alias_budget,
            False,
        )
        if res is None:
            return None
        shift = float(np.dot(cnt, _pile_shift(pile, step)))
        out[0] = _shifted_epsilon(res[0], min(delta + res[1], 1.0), shift)
    return (out[0], out[1])


def _with_fine_lower(out, arrays, delta, step, budgets, factor, group_cells):
    """``out`` (``[lower, upper]``) with the lower end of :func:`fast_epsilon_bounds`
    on optimistic fine groups (``lower_factor`` ``factor``), or None."""
    if not (isinstance(factor, int) and factor >= 1 and not factor & (factor - 1)):
        raise ValueError(f"lower_factor must be a power of two >= 1, got {factor!r}")
    sig, qs, cnt = arrays
    tau, alias_budget = budgets
    fine = step / factor
    pile = _pile_nodes(sig, qs, fine)
    shifts: list[float] = []

    def group(ids: np.ndarray, budget: float):
        res = optimistic_fine_group(
            sig[ids], qs[ids], cnt[ids], step, factor, tau, pile[ids], budget
        )
        if res is None:
            return None
        shifts.append(res[1])
        return res[0]

    res = _compose_tree(
        step, None, _cell_ranges(sig, qs, step, tau, False)[1], cnt, alias_budget, False,
        group=group, group_cells=group_cells,
    )
    if res is None:
        return None
    out[0] = _shifted_epsilon(res[0], min(delta + res[1], 1.0), math.fsum(shifts))
    return (out[0], out[1])


def fast_upper(
    phases: Sequence[tuple[float, float, int]],
    delta: float,
    step: float | None = None,
    *,
    factor: int | None = None,
    group_cells: int | None = None,
) -> tuple[float, float] | None:
    """The upper end of :func:`fast_epsilon_bounds` ``(phases, delta, step=step,
    lower=False)`` and its certificate's floor (the remove direction's mass at ``+inf``:
    its tails, aliasing and round-off; the one-shot path compares it with delta,
    :mod:`~dpacct.accountant.pld.schedule_oneshot`), or None where it cannot certify.
    ``factor`` (default :func:`_upper_factor`) and ``group_cells`` (default
    :func:`_fine_group_cells`): the refinement and the cells of its fine groups
    (:func:`_pessimistic_tree`; tightness and speed only, any value is certified).

    Examples
    --------
    >>> eps, floor = fast_upper([(1.0, 0.01, 1000)], 1e-5)
    >>> eps == fast_epsilon_bounds([(1.0, 0.01, 1000)], 1e-5, lower=False)[1], floor < 1e-8
    (True, True)
    """
    if not phases:
        return 0.0, 0.0
    sig = np.array([float(s) for s, _, _ in phases])
    qs = np.array([float(q) for _, q, _ in phases])
    cnt = np.array([int(c) for _, _, c in phases], dtype=np.int64).astype(float)
    budget = tail_budgets(delta, max(int(cnt.sum()), 1))
    budgets = (budget.piece, budget.alias)
    eps, floor = _upper_of(phases, (sig, qs, cnt), delta, step, factor, budgets, group_cells)
    return None if math.isnan(eps) else (eps, floor)


def _upper_of(
    phases, arrays, delta, step, factor, budgets, group_cells=None
) -> tuple[float, float]:
    """:func:`_upper_end` of ``arrays`` (``sig, qs, cnt``) at ``step`` (None:
    :data:`FAST_STEP`) and ``factor`` (None: :func:`_upper_factor`), with the tail
    ``budgets`` ``(tau, alias)`` and ``group_cells`` (None: :func:`_fine_group_cells`):
    its epsilon (``nan``: cannot certify) and floor."""
    up_step = FAST_STEP if step is None else step
    if factor is None:
        factor = _upper_factor(phases, up_step)
    floor: list[float] = []
    alias = budgets[1] * ALIAS_SHARE
    eps = _upper_end(*arrays, delta, up_step, budgets[0], alias, factor, floor, group_cells)
    if factor > 1:
        # the cached Chernoff weights of the fine steps, which nothing else uses: not
        # held through the lower end (1 000 phases: both ends' peak 108 -> 76 MB)
        _clear_weights()
    return eps, (floor[0] if floor else 1.0)


def _upper_end(
    sig: np.ndarray,
    qs: np.ndarray,
    cnt: np.ndarray,
    delta: float,
    step: float,
    tau: float,
    alias_budget: float,
    factor: int = 1,
    floor: list[float] | None = None,
    group_cells: int | None = None,
) -> float:
    """Certified upper epsilon of the cells at loss step ``step``; ``nan`` if the fast
    path cannot certify (window too long).  ``floor``, a list: the remove direction's
    mass at ``+inf`` is appended to it; ``group_cells``: see :func:`_pessimistic_tree`."""
    res = _pessimistic_tree(sig, qs, cnt, step, tau, alias_budget, False, factor, group_cells)
    if res is None:
        return math.nan
    if floor is not None:
        floor.append(float(res[0].inf_mass))
    eps = res[0].epsilon(delta)
    if swapped_delta(res[0], eps) > delta:
        # the add direction may be larger: compose it too, first on a coarser loss
        # grid, cells on it (an upper bound on any grid); only when that is above the
        # remove direction is it composed as the remove direction was
        add_eps = math.inf
        for add_step, add_factor in ((ADD_STEP_FACTOR * step, 1), (step, factor)):
            res = _pessimistic_tree(
                sig, qs, cnt, add_step, tau, alias_budget, True, add_factor, group_cells
            )
            if res is not None:
                add_eps = min(add_eps, res[0].epsilon(delta))
            if add_eps <= eps:
                break
        if not math.isfinite(add_eps):
            return math.nan
        eps = max(eps, add_eps)
    return eps


def _pessimistic_tree(
    sig: np.ndarray,
    qs: np.ndarray,
    cnt: np.ndarray,
    step: float,
    tau: float,
    alias_budget: float,
    add: bool,
    factor: int = 1,
    group_cells: int | None = None,
) -> tuple[GridPLD, float] | None:
    """Connect-the-dots cells of one direction composed by :func:`_compose_tree`.

    ``factor > 1``: every group of :func:`_fine_group_cells` cells is discretised and composed
    on the grid ``step / factor`` and re-discretised once onto ``step``
    (:func:`~dpacct.accountant.pld.split_cells.split_fine_group`; a group whose fine
    window would be too long is tried at half the factor, down to 1, the cells composed
    on ``step`` itself); ``factor == 1``: the cells are discretised on ``step``.
    ``group_cells``: the cells of a fine group (default :func:`_fine_group_cells`).
    """

    def group(ids: np.ndarray, budget: float):
        k = factor
        while k >= 1:
            out = split_fine_group(sig[ids], qs[ids], cnt[ids], step, k, tau, add, budget)
            if out is not None:
                return out
            k //= 2
        return None

    return _compose_tree(
        step,
        lambda ids: _pessimistic_cells(sig[ids], qs[ids], step, tau, add),
        _cell_ranges(sig, qs, step, tau, add)[1],
        cnt,
        alias_budget,
        True,
        group=group if factor > 1 else None,
        group_cells=group_cells,
    )


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


#: the incremental path composes the add direction on a coarser loss grid (any grid
#: gives a certified upper bound): it is needed only when the remove direction's
#: swapped curve, whose error terms are multiplied by ``e^eps``, fails to certify it,
#: and then it is usually far below the remove direction
ADD_STEP_FACTOR = 4
