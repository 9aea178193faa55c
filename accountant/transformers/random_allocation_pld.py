"""The PLD of one random-allocation epoch (k = 1, Gaussian steps): a discretiser.

One epoch allocates the record to one of ``T`` Gaussian steps chosen uniformly.  The
pair compared is ``P = (1/T) sum_j N(e_j, sigma^2 I_T)`` (record present) against
``Q = N(0, sigma^2 I_T)`` (record absent) -- the pair on which every random-allocation
route of dpacct rests (Feldman & Shenfeld 2025, arXiv 2502.08202, Section 6, state
it; Proposition 1 of docs/theory/allocation_shuffling.md proves the reduction of an
adaptive Gaussian run to this pair).  Its privacy loss is ``L = log(S / T)`` with
``S = sum_j X_j`` and ``X_j = exp((y_j - 1/2) / sigma^2)``, i.i.d. log-normal under ``Q``
(``log X ~ N(-1/(2 sigma^2), 1/sigma^2)``, ``E X = 1``), and ``dP/dQ = S / T``: the
"PLD realization" of random allocation of Feldman & Shenfeld 2026 (arXiv 2602.17284,
ICML 2026, Algorithms 1 and 2 of Appendix C: both directions are read from the law of
one sum of ``T`` i.i.d. terms).  Hence, for every ``gamma >= 0``,

    ``H_gamma(P || Q) = E_Q[(S/T - gamma)_+]``,  ``H_gamma(Q || P) = E_Q[(1 - gamma S/T)_+]``.

What this module certifies (this project's argument, each step checked here):

1. **Convex order.**  Both functions of ``s`` above are convex.  A law ``S'`` that
   dominates ``S`` in the convex order (``E f(S) <= E f(S')`` for convex ``f``; by
   Strassen's theorem, ``S' = S + M`` with ``E[M | S] = 0``) therefore gives the pair
   ``Q' = law(S')``, ``dP' = (s/T) dQ'`` -- a probability pair, since ``E S' = E S = T``
   -- with ``H_gamma(P' || Q') >= H_gamma(P || Q)`` at every ``gamma >= 0``.  For
   probability pairs that is dominance of the whole trade-off curve (both directions),
   so by Blackwell's theorem ``(P', Q')`` is a post-processing-dominating pair and
   composing epochs composes the dominance (the certified PLD composition of
   :mod:`~dpacct.accountant.transformers.compose` does the rest: this is a discretiser, not an
   engine).
2. **Mean-preserving splits.**  ``S'`` is built from the exact law of ``X`` by moving the
   mass of each grid cell ``[a, a+h]`` to its two ends with the cell's exact first
   moment kept (connect-the-dots: a mean-preserving spread), and by repeated pairwise
   sums (independent sums of convex-order-dominating laws dominate) whose values are
   split the same way onto a coarser grid.  Each split only adds spread.
3. **Absorption.**  A partial sum above the window top ``W``, or in one of the two end
   runs of its grid that carry almost nothing (the event ``A``), is not tracked
   further: with ``Z`` the un-absorbed process, ``(Z/T - gamma)_+ <= Z/T`` and
   ``(1 - gamma Z/T)_+ <= 1`` on ``A`` whatever ``Z`` is there, so ``A`` goes to an atom
   of P'-mass ``E[Z/T; A]`` at loss ``+inf`` and Q'-mass ``Q(A)`` at loss ``-inf``; both
   are computed exactly from the first moments carried along (``E[A + B; A or B
   absorbed]`` splits over the independent halves).  The masses of ``P'`` and ``Q'``
   still add up to one (before round-off, below).  The end runs cut are the longest
   whose mass ``q`` at ``s`` costs ``sum q (1 + s/T)`` below a fixed budget (about
   ``1e-15`` per sum, scaled by ``m / T`` for a partial sum of ``m`` terms, which enters
   ``T / m`` times); one term is carried up to where absorbing it in all ``T`` terms
   costs below ``1e-14`` -- unless the cell cap would then coarsen the step past its
   target (sigma below ~0.65: one term's log-normal tail is long), where the cut is
   lowered to balance the absorbed mass against the atom the coarse first cell puts
   at ``s = 0`` (:func:`_coarse_cut`); either is certified exactly.
4. **The high event.**  The part absorbed because it is large -- one term above its
   cut, or a partial sum above the window -- is kept apart: on it the un-absorbed
   process is at least ``L``, the least such threshold less the final step (later
   coarsenings move a value by less than that; the other terms are >= 0).  For a
   convex ``f`` with slope ``f'(inf)`` at infinity, ``f(z) <= f(L) + f'(inf) (z - L)``
   for ``z >= L``, so the event is spread onto ``{L, +inf}`` with its mass and first
   moment kept: Q'-mass ``Q(high)`` at ``s = L`` and P'-mass ``(E[Z; high] - L
   Q(high)) / T`` at loss ``+inf``.  Both divergences are then exact on that event at
   every ``gamma <= L / T`` (remove: ``E[Z/T - gamma; high]``; add: 0) instead of
   paying ``E[Z/T; high]`` and ``Q(high)``.  Below sigma 0.55 this lets the cut stop at
   ``T e^9`` (:func:`_small_cut`) on at most :data:`_SMALL_CELLS` cells: a few seconds
   where the full window took 20.

Construction and speed.  Partial sums are arrays with an offset (their empty or
trimmed ends are not stored), so the FFTs of the doubling (``floor(log2 T)`` squarings
and at most as many further sums, the step doubling whenever the spread of the sum
allows) run on the width the sum actually has, not on ``[0, W]``.  A built law is kept
per ``(sigma, T, resolution)``; a build longer than :data:`PROGRESS_DELAY` seconds
shows a ``tqdm`` bar unless ``progress=False``.

Floating-point round-off is certified by the engine's one composition kernel
(:mod:`~dpacct.accountant.pld.pld_fft`, :func:`_product`): each pairwise sum is its
certified convolution -- an estimate and a rigorous bound on each entry's error, the
far tails recomputed under exponential tilts -- and the law keeps the upper side,
``estimate + bound``, entry by entry.  Every later step (sums, trims, splits, both
divergences) is a positive linear map of the entries plus the atom, so entrywise
upper bounds stay upper bounds; the masses of ``P'`` and ``Q'`` may then exceed one by
the round-off, which only raises both divergences (the engine composes such
measures, :meth:`GridPLD.convolve <dpacct.accountant.pld.grid.GridPLD.convolve>`).
The part of a sum above the window is computed from tail sums of one factor (no FFT)
and joins the absorbed atom.  The law's total mass and mean are checked in the tests
(1 and ``T``, to round-off).

The result feeds the engine as an :class:`~dpacct.accountant.laws.loss_law.AtomicLossLaw`
pair (remove: loss ``log(s/T)`` under ``P'``; add: ``log(T/s)`` under ``Q'``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from ..laws.loss_law import AtomicLossLaw, GaussianLossLaw
from ..mechanism import Capabilities, Mechanism
from ..numerics import LazyBar
from ..pld import pld_fft
from ..validation import check_count, check_positive

__all__: list[str] = []

#: grid step at one summand, in standard deviations of ``X``; a sum of ``m`` terms is
#: kept on a step about ``sqrt(m)`` times larger (its spread grows like ``sqrt(m)``)
_STEP_PER_SD = 0.02
#: the mass the absorbed event may carry is aimed at below this (it is computed and
#: accounted exactly whatever it turns out to be)
_TAIL_AIM = 1e-12
#: most cells of the first grid (one term's window); a wider window takes a coarser
#: step (more spread: looser, never unsound) instead of more memory
_MAX_CELLS = 2**21
#: what trimming the ends of partial sums may move into the absorbed event, per trim of
#: a sum used once (a partial sum of ``m`` terms that ``T / m`` copies of go into the
#: total trims within ``m / T`` of it); at most ``2 log2 T`` trims,
#: so they add at most a few ``1e-14`` in all
_TRIM = 1e-15
#: what absorbing one term above its window may cost (the window of a single term is
#: much narrower than that of the whole sum, whose top is set by ``_TAIL_AIM``)
_BASE_AIM = 1e-14
#: a cut of one term whose two floors (:func:`_coarse_cut`) are below this is kept
_FLOOR_OK = 1e-12
#: below this sigma the law is built on at most :data:`_SMALL_CELLS` cells (:func:`_small_cut`)
_SMALL_SIGMA = 0.55
#: the cell cap below :data:`_SMALL_SIGMA`
_SMALL_CELLS = 2**19
#: below :data:`_SMALL_SIGMA`, the high event starts at ``T e^{_COVER}`` or above: the
#: remove direction's tail is then exact at every ``epsilon <= _COVER`` (module, 4.)
_COVER = 9.0
#: seconds the law build runs before its progress bar appears
PROGRESS_DELAY = 2.0

def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """``sum(a * b)`` of two 1-D arrays, without BLAS.

    ``a @ b`` goes to OpenBLAS's ``ddot``, which above ~10 000 entries wakes its
    worker threads; their spin-wait after each call cost about 40 % of the CPU of a
    first random-allocation call (issue 37: 1.33 -> 0.78 s at sigma 0.8, T 1e4, with
    ``OPENBLAS_NUM_THREADS=1``).  ``einsum``'s own loop is one thread, with the same
    kind of float accumulation.
    """
    return float(np.einsum("i,i->", a, b))


def _nodes(first: int, n: int, step: float) -> np.ndarray:
    """``(first + i) * step`` for ``i = 0 .. n - 1``: the values of ``n`` grid nodes.

    A float ``arange`` of integers below ``2^53`` is exact, so these are the values of
    ``(first + np.arange(n)) * step`` bit for bit, without the integer array and its
    cast (a sixth of the non-FFT work of a first call at sigma 0.8, issue 37).
    """
    return np.arange(first, first + n, dtype=float) * step


def _end_run(prefix, n: int, limit: float) -> int:
    """``searchsorted(cumsum(c), limit, side="right")`` for the non-negative costs ``c``
    of ``n`` entries from one end inward, ``prefix(k)`` giving the first ``k``; only the
    prefix needed is summed.

    ``cumsum`` adds in order, so the sums of a prefix are those of the whole array bit
    for bit, and a prefix whose last sum exceeds ``limit`` holds the answer.
    """
    k = min(n, 1024)
    while True:
        part = np.cumsum(prefix(k))
        if k >= n or part[-1] > limit:
            return int(np.searchsorted(part, limit, side="right"))
        k = min(n, 8 * k)


#: a partial sum: masses ``q`` at ``(offset + i) * step``, the absorbed event's Q-mass
#: and first moment, and those of the high absorbed event (module, 4.)
_Part = tuple[np.ndarray, int, float, float, float, float]


@dataclass(frozen=True)
class SumLaw:
    """A convex-order-dominating law of ``S = sum of T log-normal terms`` (see module).

    ``q[i]`` is the mass at ``S = i * step``; the absorbed event has Q-mass
    ``q_absorbed`` and carries ``E[S; absorbed] = s_absorbed``; the high absorbed
    event, on which ``S >= high_at`` (module, 4.), has Q-mass ``q_high`` and carries
    ``E[S; high] = s_high``.
    """

    steps: int
    step: float
    q: np.ndarray
    q_absorbed: float
    s_absorbed: float
    q_high: float = 0.0
    s_high: float = 0.0
    high_at: float = 0.0

    def _high_split(self) -> tuple[float, float, float]:
        """The high event spread onto ``{high_at, +inf}`` (module, 4.): the Q-mass at
        ``high_at``, the P-mass at infinite loss, ``(E[S; high] - L Q(high)) / T``, and
        the Q-mass left at ``s = 0`` (loss ``-inf``).

        Where ``high_at`` lies below the law's least positive node (a short cut of one
        term, at large sigma) the atom would only widen the engine's loss grid: the
        event is then spread onto ``{0, +inf}`` like the absorbed one (as sound, and
        what it cost before)."""
        pos = np.flatnonzero(self.q > 0)
        least = (pos[pos > 0][0] if np.any(pos > 0) else self.q.size) * self.step
        if self.q_high <= 0.0 or self.high_at <= 0.0 or self.high_at < least:
            return 0.0, self.s_high / self.steps, self.q_high
        split = max(self.s_high - self.high_at * self.q_high, 0.0) / self.steps
        return self.q_high, split, 0.0

    def pair_laws(self) -> tuple[AtomicLossLaw, AtomicLossLaw]:
        """(remove, add) loss laws of the dominating pair ``(P', Q')``."""
        t = self.steps
        idx = np.nonzero(self.q > 0)[0]
        s = idx * self.step
        pos = s > 0
        q = self.q[idx]
        loss = np.log(s[pos] / t)
        p = s[pos] / t * q[pos]
        q_hi, p_hi_inf, q_hi_zero = self._high_split()
        q_zero = float(q[~pos].sum()) + q_hi_zero
        if q_hi > 0.0:  # the high event's atom at s = high_at (module, 4.)
            loss = np.append(loss, math.log(self.high_at / t))
            p = np.append(p, self.high_at / t * q_hi)
            qpos = np.append(q[pos], q_hi)
        else:
            qpos = q[pos]
        p_inf = min(self.s_absorbed / t + p_hi_inf, 1.0)
        remove = AtomicLossLaw(
            losses=loss, p=p, inf_mass=p_inf, q_neg_inf_mass=min(q_zero + self.q_absorbed, 1.0)
        )
        add = AtomicLossLaw(
            losses=-loss,
            p=qpos,
            inf_mass=min(q_zero + self.q_absorbed, 1.0),
            q_neg_inf_mass=p_inf,
        )
        return remove, add

    def hockey_stick(self, gamma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(H_gamma(P'||Q'), H_gamma(Q'||P'))`` read from the law directly."""
        g = np.atleast_1d(np.asarray(gamma, dtype=float))
        s = np.arange(self.q.size) * self.step / self.steps
        q_hi, p_hi_inf, q_hi_zero = self._high_split()
        at = self.high_at / self.steps
        rem = np.maximum(s[None, :] - g[:, None], 0.0) @ self.q + self.s_absorbed / self.steps
        rem = rem + q_hi * np.maximum(at - g, 0.0) + p_hi_inf
        add = np.maximum(1.0 - g[:, None] * s[None, :], 0.0) @ self.q + self.q_absorbed
        add = add + q_hi * np.maximum(1.0 - g * at, 0.0) + q_hi_zero
        return rem, add


def _lognormal_cells(sigma: float, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact masses and first moments of ``X`` on the cells between ``edges``.

    ``F(x) = Phi(sigma (log x + 1/(2 sigma^2)))`` and
    ``E[X; X <= x] = Phi(sigma (log x - 1/(2 sigma^2)))``; differences are taken on the
    side of the median where they do not cancel.
    """
    with np.errstate(divide="ignore"):
        lx = np.log(edges)
    c = 0.5 / (sigma * sigma)

    def cell_diff(z: np.ndarray) -> np.ndarray:
        # z increases with the edges: the cells left of the median come first, and
        # each side is evaluated only where it is used
        # (each edge's ndtr is evaluated once and shared by the two cells it bounds:
        # the same values and differences as evaluating every cell's two ends)
        lo = z[:-1]
        k = int(np.searchsorted(lo, 0.0, side="left"))  # cells with lo < 0
        out = np.empty(lo.size)
        left = special.ndtr(z[: k + 1])  # edges 0..k: cells 0..k-1
        np.subtract(left[1:], left[:-1], out=out[:k])
        right = special.ndtr(-z[k:])  # edges k..n: cells k..n-1
        np.subtract(right[:-1], right[1:], out=out[k:])
        return np.maximum(out, 0.0)

    return cell_diff(sigma * (lx + c)), cell_diff(sigma * (lx - c))


def _tail_moments(sigma: float, x: float) -> tuple[float, float]:
    """``P(X > x)`` and ``E[X; X > x]``."""
    c = 0.5 / (sigma * sigma)
    lx = math.log(x)
    return float(special.ndtr(-sigma * (lx + c))), float(special.ndtr(-sigma * (lx - c)))


def _x_tail(sigma: float, steps: int, aim: float) -> float:
    """A value ``x`` past which absorbing a term in all ``T`` terms costs below ``aim``.

    The cost (module, 3.) is ``E[X; X > x] + T P(X > x)``; each half is kept under
    ``aim / 2``.
    """
    c = 0.5 / (sigma * sigma)
    z_moment = -float(special.ndtri(0.5 * aim))
    z_mass = -float(special.ndtri(0.5 * aim / steps))
    return max(math.exp(c + z_moment / sigma), math.exp(-c + z_mass / sigma))


def _coarse_cut(sigma: float, steps: int, target: float, base_top: float) -> float:
    """Where to cut one term when the cell cap coarsens its step past ``target``.

    With step ``h`` the split of the first cell puts ``P(X <= h) - E[X; X <= h] / h``
    at 0, so the sum has about that to the power ``T`` at ``s = 0``: a floor under the
    add direction's delta (loss ``+inf``).  Cutting one term at ``x = h N`` (``N`` the
    cell cap) puts about ``E[X; X > x] + T P(X > x)`` into the absorbed atom: a floor
    under the remove direction's delta.  Below sigma ~ 0.6 both cannot be small at
    ``x = base_top``; the cut is kept if its floors are below :data:`_FLOOR_OK`, else
    the step ``h`` (down to ``target``, in quarter-octaves) with the least larger
    floor is taken.  Only tightness depends on this choice: whatever the cut, its
    absorbed mass and moment are computed exactly and certified (module, 3.).
    """
    c = 0.5 / (sigma * sigma)
    h_max = base_top / _MAX_CELLS

    def worst(h: np.ndarray) -> np.ndarray:
        lh = np.log(h)
        at_zero = np.maximum(
            special.ndtr(sigma * (lh + c)) - special.ndtr(sigma * (lh - c)) / h, 0.0
        )
        with np.errstate(divide="ignore"):
            add_floor = np.exp(steps * np.log(at_zero))
        lx = np.log(h * _MAX_CELLS)
        rem_floor = special.ndtr(-sigma * (lx - c)) + steps * special.ndtr(-sigma * (lx + c))
        return np.maximum(add_floor, rem_floor)

    if worst(np.array([h_max]))[0] <= _FLOOR_OK:
        return base_top
    # the steps tried stop at the target, or 2^-64 below h_max where the target is
    # smaller or 0 (sigma above ~1e154: 1 / sigma^2 underflows; X is then 1 to every
    # digit and the first cut is kept above)
    low = max(target, h_max * 2.0**-64)
    j = np.arange(int(4.0 * math.log2(h_max / low)) + 1)
    h = np.append(h_max * 2.0 ** (-j / 4.0), low)
    return float(h[int(np.argmin(worst(h)))] * _MAX_CELLS)


def _small_cut(steps: int, target: float, base_top: float) -> float:
    """Where to cut one term below :data:`_SMALL_SIGMA` (at most :data:`_SMALL_CELLS` cells).

    The high event (module, 4.) makes the remove direction's tail exact at every
    ``e^epsilon <= high_at / T``, so the cut need only reach ``T e^{_COVER}``; the step
    is then as fine as the cell cap allows, which keeps the add direction's floor (the
    first cell's atom at ``s = 0``, :func:`_coarse_cut`) small.  Only tightness depends
    on this choice.
    """
    return min(base_top, max(steps * math.exp(_COVER), _SMALL_CELLS * target))


def _base_law(sigma: float, step: float, top: float) -> _Part:
    """``X`` split onto ``0, step, 2 step, ...`` (mean kept per cell), absorbed above."""
    n = math.floor(top / step)
    edges = np.arange(n + 1) * step
    mass, moment = _lognormal_cells(sigma, edges)
    a = edges[:-1]
    right = np.clip((moment - a * mass) / step, 0.0, mass)  # mass sent to a + step
    q = np.zeros(n + 1)
    q[:-1] += mass - right
    q[1:] += right
    q_hi, s_hi = _tail_moments(sigma, float(edges[-1]))  # X > edges[-1]: high (module, 4.)
    return q, 0, 0.0, 0.0, q_hi, s_hi


def _coarsen(part: _Part) -> _Part:
    """Step doubled: even nodes stay, odd ones split half and half (mean kept)."""
    q, off, q_abs, s_abs, q_hi, s_hi = part
    if off % 2:  # start on an even node, so that even nodes are the kept ones
        q, off = np.concatenate(([0.0], q)), off - 1
    n = q.size
    out = np.zeros(n // 2 + 1)
    out[: (n + 1) // 2] += q[0::2]
    half = 0.5 * q[1::2]
    out[: half.size] += half
    out[1 : half.size + 1] += half
    return out, off // 2, q_abs, s_abs, q_hi, s_hi


def _trim(part: _Part, step: float, steps: int, budget: float) -> _Part:
    """Both ends of a partial sum moved into its absorbed event, within ``budget``.

    An entry of mass ``q`` at ``s`` costs at most ``q (1 + s / T)`` of either
    direction's delta once absorbed (module, 3.: the other terms add ``q`` times their
    mean, at most ``q T``); the longest end runs costing at most ``budget / 2`` each go,
    their exact mass and first moment joining the absorbed event.  Sound whatever the
    budget: it only decides how much is carried exactly.
    """
    q, off, q_abs, s_abs, q_hi, s_hi = part
    n = q.size

    def left(k: int) -> np.ndarray:  # the costs of the first k entries
        return q[:k] * (1.0 + _nodes(off, k, step) / steps)

    def right(k: int) -> np.ndarray:  # of the last k, from the top down
        return (q[n - k :] * (1.0 + _nodes(off + n - k, k, step) / steps))[::-1]

    # each end's run from its own short prefix (the same sums as the whole array's)
    lo = _end_run(left, n, 0.5 * budget)
    hi = _end_run(right, n, 0.5 * budget)
    lo = min(lo, n - 1)
    hi = min(hi, n - 1 - lo)
    if lo == 0 and hi == 0:
        return part
    keep = slice(lo, n - hi)
    s_lo, s_top = _nodes(off, lo, step), _nodes(off + n - hi, hi, step)
    dq = float(q[:lo].sum() + q[n - hi :].sum())
    ds = _dot(q[:lo], s_lo) + _dot(q[n - hi :], s_top)
    return q[keep], off + lo, q_abs + dq, s_abs + ds, q_hi, s_hi


def _above(
    qa: np.ndarray, oa: int, qb: np.ndarray, ob: int, step: float, last: int
) -> tuple[float, float]:
    """Mass and first moment of ``A + B`` beyond local index ``last`` of the product.

    ``sum_i a_i sum_{j > last - i} b_j (s_i + s_j)``, from tail sums of ``b`` taken
    from its small end: no FFT round-off.
    """
    na, nb = qa.size, qb.size
    i0 = max(0, last + 2 - nb)  # rows below i0 have every b_j at or below the window
    if i0 >= na:
        return 0.0, 0.0
    # rows i0 .. i1 - 1 take the tail of b from j = last + 1 - i (down to 1); rows from
    # i1 on take the whole of b (j = 0)
    i1 = min(na, last + 2)
    jlo = last + 2 - i1  # smallest j read by a partial row (>= 1 when any)
    sb = _nodes(ob + jlo, nb - jlo, step)
    tail = np.cumsum(qb[jlo:][::-1])[::-1]  # tail[j - jlo] = sum_{j' >= j} b_j'
    tail_s = np.cumsum((qb[jlo:] * sb)[::-1])[::-1]
    mass = moment = 0.0
    if i1 > i0:
        # j = last + 1 - i runs from last + 1 - i0 down to jlo: a reversed slice
        top = last + 1 - i0 - jlo  # >= 0: i1 > i0 puts i0 at or below last + 1
        t = tail[top::-1][: i1 - i0]
        ts = tail_s[top::-1][: i1 - i0]
        q = qa[i0:i1]
        sa = _nodes(oa + i0, i1 - i0, step)
        mass += _dot(q, t)
        moment += _dot(q, sa * t + ts)
    if i1 < na:
        q = qa[i1:]
        total_b = float(qb.sum())
        first_b = _dot(qb, _nodes(ob, nb, step))
        sa = _nodes(oa + i1, na - i1, step)
        mass += float(q.sum()) * total_b
        moment += _dot(q, sa) * total_b + float(q.sum()) * first_b
    return mass, moment


#: an entry of a product is settled once its round-off bound is below this fraction of
#: it: what the unsettled entries still add to either divergence is then at most this
#: fraction of the divergence (every later step is a positive linear map)
_SETTLED = 1e-9


#: a prefix whose top stays unsettled is shortened at least by this factor
_SHRINK = 0.8
#: prefixes shorter than this are not recomputed once their top stays unsettled
_DIRECT = 192


def _product(
    qa: np.ndarray,
    qb: np.ndarray,
    square: bool,
    off: int,
    keep: int,
    step: float,
    steps: int,
    below_top: bool = False,
) -> np.ndarray:
    """Entrywise upper bound on ``(qa * qb)[:keep]``, round-off included.

    Each pass is the engine's certified kernel (:mod:`~dpacct.accountant.pld.pld_fft`:
    an estimate and a rigorous bound on each entry's error): first its product tilted
    towards the right tail (``_tilted_convolve``, which lifts the tail's end to the
    level of the peak; with ``exact=True``, a rate of 21 significant bits whose every
    tilt exponent is exact, so the weights err by exp's rounding alone, ``_TILT_MIS`` ~
    30u instead of up to ~1e4 u, and cost ``n / 64`` exps instead of ``n``).  A
    log-normal sum has a tail too long for one tilt, so the entries left unsettled
    (bound above :data:`_SETTLED` of the entry, and above ``_TRIM / keep`` once weighted
    by ``1 + s / T``, the most an entry can add to either divergence) are recomputed
    from the inputs' prefixes -- entry ``k < K`` of the product reads ``qa[:K]`` and
    ``qb[:K]`` only, and the prefix's tilt aims at ``K`` -- until a prefix settles
    nothing new; what is left then (the short left end, far below every right tilt's
    peak) gets the kernel's full scheme (``_bounded_convolve``) on its prefix.  With
    ``below_top`` (the small-sigma law, whose window cuts a long tail: the product's own
    top stays unsettled), a prefix whose top no pass settles keeps those bounds and the
    passes go on below it (shortened by :data:`_SHRINK` at least) instead of stopping.
    Each entry keeps the least upper bound of the passes that computed it.
    """
    a = qa[:keep]
    b = a if square else qb[:keep]
    # the long right tail first: one pass tilted towards it per prefix (the kernel's
    # tilted product with its certified per-entry bound); the short left end, where
    # every right tilt is far below its peak, last, by the kernel's full scheme
    # only the first ``keep`` entries are un-tilted and bounded (the kernel's ``keep``:
    # the same values and bounds as the whole product's, half the work of a square)
    est, err = pld_fft._tilted_convolve(
        a, b, square, 1, rigorous=True, keep=(0, keep), exact=True
    )
    weight = 1.0 + _nodes(off, keep, step / steps)
    floor = _TRIM / keep
    # a prefix at least as long as both inputs would repeat the first pass
    last, full, ceiling = max(a.size, b.size), False, keep
    # entries at or above the last pass's end were settled (or given up on, below
    # ``ceiling``) when that pass was chosen, and no pass writes there: only the entries
    # below it are scanned again (the same indices as scanning up to ``ceiling``)
    scan = keep
    while True:
        scan = min(scan, ceiling)
        bad = np.flatnonzero((err[:scan] > _SETTLED * est[:scan])
                             & (err[:scan] * weight[:scan] > floor))
        if bad.size == 0:
            break
        end = int(bad[-1]) + 1
        if end >= last:
            if below_top and (full or 4 * end > keep):
                # the top of this prefix stays unsettled (the product's own far end,
                # when the window cuts a long tail; the kernel's full scheme is for the
                # short left end): those bounds are kept (sound) and the tilted passes
                # go on below them
                ceiling = int(_SHRINK * last)
                bad = bad[bad < ceiling]
                if bad.size == 0 or bad[-1] < _DIRECT:
                    break
                end, full = int(bad[-1]) + 1, False
            elif full:  # the kernel's full scheme settled nothing more: keep the bounds
                break
            else:
                full = True  # right tilts make no progress: the left end is what is left
        last = scan = end
        pa = a[:end]
        pb = pa if square else b[:end]
        if full:
            e2, r2 = pld_fft._bounded_convolve(pa, pb)
        else:
            e2, r2 = pld_fft._tilted_convolve(
                pa, pb, square, 1, rigorous=True, keep=(0, end), exact=True
            )
        e2, r2 = e2[:end], r2[:end]
        better = e2 + r2 < est[:end] + err[:end]
        np.copyto(est[:end], e2, where=better)  # in place: no temporaries
        np.copyto(err[:end], r2, where=better)
    if not pld_fft.CERTIFY_ROUNDOFF:  # the tests' switch: the estimate alone
        return est
    return pld_fft._certified_side(est, err, True)


def _add(
    a: _Part, b: _Part, step: float, steps: int, top_index: int, below_top: bool = False
) -> _Part:
    """Law of the sum of two independent absorbed laws on one grid (module, 3.).

    The product is an entrywise upper bound on the exact product of the two arrays,
    floating-point round-off included (:func:`_product`, the engine's certified
    kernel); the part above the window (:func:`_above`, exact tail sums, no FFT) joins
    the absorbed atom.  Every quantity downstream -- both hockey-stick divergences, the
    next sums, trims and splits -- is non-decreasing in each entry and in the atom's
    mass and moment, so an entrywise upper bound stays sound.
    """
    qa, oa, qa_abs, sa_abs, qa_hi, sa_hi = a
    qb, ob, qb_abs, sb_abs, qb_hi, sb_hi = b
    square = b is a
    na = float(qa.sum())
    nb = na if square else float(qb.sum())
    fa = _dot(qa, _nodes(oa, qa.size, step))
    fb = fa if square else _dot(qb, _nodes(ob, qb.size, step))
    off = oa + ob
    keep = max(min(top_index + 1 - off, qa.size + qb.size - 1), 1)
    above_q, above_s = _above(qa, oa, qb, ob, step, keep - 1)
    c = _product(qa, qb, square, off, keep, step, steps, below_top)
    # the high event of A + B: A high or B high, or the tracked sum above the window (on
    # each, A + B is at least the smaller threshold: module, 4.); the absorbed event:
    # the rest of (A or B absorbed).  Mass and E[A + B; event] split over the
    # independent halves (each term >= 0)
    ta, tb = na + qa_abs, nb + qb_abs  # not high
    fta, ftb = fa + sa_abs, fb + sb_abs
    q_hi = qa_hi * (tb + qb_hi) + qb_hi * ta + above_q
    s_hi = sa_hi * (tb + qb_hi) + qa_hi * (ftb + sb_hi) + sb_hi * ta + qb_hi * fta + above_s
    q_abs = qa_abs * nb + qb_abs * na + qa_abs * qb_abs
    s_abs = sa_abs * (nb + qb_abs) + fa * qb_abs + sb_abs * (na + qa_abs) + fb * qa_abs
    return c, off, q_abs, s_abs, q_hi, s_hi


def allocation_sum_law(
    sigma: float, steps: int, resolution: float = 1.0, progress: bool = True
) -> SumLaw:
    """Convex-order-dominating law of the sum behind one allocation epoch (k = 1).

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0.
    steps : int
        Steps per epoch ``T``, >= 1.
    resolution : float, default 1.0
        Grid refinement factor (> 0); the spread added shrinks like its square.
    progress : bool, default True
        Show a ``tqdm`` progress bar (stderr) if the build lasts more than
        :data:`PROGRESS_DELAY` seconds (large ``T``); ``False`` never shows one.

    Returns
    -------
    SumLaw

    Examples
    --------
    The law keeps the mean ``E S = T`` (absorbed part included), its entries being
    upper bounds by at most the certified round-off:

    >>> law = allocation_sum_law(1.0, 10, progress=False)
    >>> s = float(law.q @ (np.arange(law.q.size) * law.step)) + law.s_absorbed
    >>> bool(10 - 1e-12 < s < 10 * (1 + 1e-8))
    True
    """
    s = check_positive("sigma", sigma)
    t = check_count(steps, "steps")
    r = check_positive("resolution", resolution)
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be True or False, got {progress!r}")
    key = (s, t, r)
    if key not in _LAWS:
        _LAWS[key] = _build(s, t, r, progress)
    return _LAWS[key]


#: built laws by (sigma, T, resolution); a law is a few hundred kB at most
_LAWS: dict[tuple[float, int, float], SumLaw] = {}


def _build(s: float, t: int, r: float, progress: bool) -> SumLaw:
    """:func:`allocation_sum_law` without the checks and the cache."""
    sd = math.sqrt(math.expm1(1.0 / (s * s)))  # standard deviation of X
    # window top of every partial sum: T, plus a single term beyond _x_tail(_TAIL_AIM),
    # plus a multiple of the spread
    top = t + _x_tail(s, t, _TAIL_AIM) + 12.0 * sd * math.sqrt(t) + 2.0
    target = _STEP_PER_SD * sd / r
    # one term is carried up to _x_tail(_BASE_AIM) only; the trims keep what counts
    base_top = min(top, _x_tail(s, t, _BASE_AIM) + 12.0 * sd + 2.0)
    small = s < _SMALL_SIGMA and base_top > _SMALL_CELLS * target
    if small:
        base_top = _small_cut(t, target, base_top)
        top = min(top, base_top + t + 12.0 * sd * math.sqrt(t) + 2.0)
        step = max(target, base_top / _SMALL_CELLS)
    elif base_top > _MAX_CELLS * target:
        base_top = _coarse_cut(s, t, target, base_top)
        # partial sums of terms cut at base_top pass base_top + T only when two of them
        # are large: the sum's window need not reach further
        top = min(top, base_top + t + 12.0 * sd * math.sqrt(t) + 2.0)
        step = max(target, base_top / _MAX_CELLS)
    else:
        step = target
    power = _trim(_base_law(s, step, base_top), step, t, _TRIM / t)
    # the least value the high event's sum can take (module, 4.): the base cut, then
    # every window top; later coarsenings move a value by less than the final step
    high = math.floor(base_top / step) * step
    count, acc = 1, None
    remaining = t
    with LazyBar(
        total=t.bit_length() - 1 + bin(t).count("1"),
        desc=f"random-allocation law (T={t})",
        delay=PROGRESS_DELAY,
        progress=progress,
    ) as bar:
        while True:
            if remaining & 1:
                if acc is None:
                    acc = power
                else:
                    acc = _add(acc, power, step, t, int(top / step), small)
                    acc = _trim(acc, step, t, _TRIM)
                    high = min(high, (int(top / step) + 1) * step)
                bar.update(1)
            remaining >>= 1
            if not remaining:
                break
            count *= 2
            power = _add(power, power, step, t, int(top / step), small)
            power = _trim(power, step, t, _TRIM * count / t)
            high = min(high, (int(top / step) + 1) * step)
            bar.update(1)
            # coarsen while the step is below its target for the current number of terms
            while 2.0 * step <= target * math.sqrt(count):
                step *= 2.0
                power = _coarsen(power)
                if acc is not None:
                    acc = _coarsen(acc)
    q, off, q_abs, s_abs, q_hi, s_hi = acc
    high = max(high - 2.0 * step, 0.0)
    return SumLaw(t, step, np.concatenate((np.zeros(off), q)), q_abs, s_abs, q_hi, s_hi, high)


#: the pair laws of the last few (sigma, steps, resolution), shared by instances
_PAIR_LAWS: dict[tuple[float, int, float], tuple] = {}
_PAIR_LAWS_KEPT = 4


class AllocationEpochPair(Mechanism):
    """One random-allocation epoch (k = 1) as a dominating pair of loss laws.

    A discretiser for the PLD engine: :meth:`_loss_laws` gives the (remove, add) laws of
    the pair ``(P', Q')`` of :func:`allocation_sum_law` (module docstring), so
    ``epsilon`` / ``delta`` are sound upper bounds and composition is the engine's.

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0.
    steps : int
        Steps per epoch ``T``, >= 1.
    resolution : float, default 1.0
        Grid refinement of the sum law.
    progress : bool, default True
        Progress bar while the sum law is built, as in :func:`allocation_sum_law`.

    Examples
    --------
    >>> ep = AllocationEpochPair(1.0, 1000, progress=False)
    >>> bool(0.15 < ep.epsilon(1e-6) < 0.2)
    True
    """

    declares = Capabilities(loss_laws=True)
    #: its bracket is of the pair (P', Q'), which dominates the epoch in convex order
    brackets_dominating_pair = True

    def __init__(
        self, sigma: float, steps: int, resolution: float = 1.0, *, progress: bool = True
    ) -> None:
        self.sigma = check_positive("sigma", sigma)
        self.steps = check_count(steps, "steps")
        self.resolution = check_positive("resolution", resolution)
        if not isinstance(progress, bool):
            raise TypeError(f"progress must be True or False, got {progress!r}")
        self.progress = progress

    def _loss_laws(self):
        # kept: the engine asks for the laws once per grid tried, and each
        # AtomicLossLaw's construction costs ~0.2 CPU s at sigma 0.7 (issue 39 (a))
        cache = self._cache()
        if "pair_laws" not in cache and self.steps == 1:
            # one step: the pair is the Gaussian's own, N(1, sigma^2) against N(0, sigma^2)
            # (no allocation left), exact; its sum law had 1.4e6 atoms at sigma 0.7
            # (about 290 MB with the engine's grids) and put 1.8e-4 of its add law at
            # +inf at sigma 1 (issue 39, session 20)
            law = GaussianLossLaw(mu=1.0 / self.sigma)
            cache["pair_laws"] = law, law
        if "pair_laws" not in cache:
            # shared by every instance (the route, its add direction, the envelope and
            # the blocks each hold one): one copy of a law of up to ~1e6 atoms, not four
            key = (self.sigma, self.steps, self.resolution)
            if key not in _PAIR_LAWS:
                law = allocation_sum_law(self.sigma, self.steps, self.resolution, self.progress)
                while len(_PAIR_LAWS) >= _PAIR_LAWS_KEPT:
                    _PAIR_LAWS.pop(next(iter(_PAIR_LAWS)))  # the oldest
                _PAIR_LAWS[key] = law.pair_laws()
            cache["pair_laws"] = _PAIR_LAWS[key]
        return cache["pair_laws"]

    def __repr__(self) -> str:
        return f"AllocationEpochPair(sigma={self.sigma}, steps={self.steps})"
