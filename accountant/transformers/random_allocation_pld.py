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
3. **Absorption.**  A partial sum above the window top ``W`` (the event ``A``) is not
   tracked further: with ``Z`` the un-absorbed process, ``(Z/T - gamma)_+ <= Z/T`` on
   ``A``, so ``A`` goes to an atom of P'-mass ``E[Z/T; A]`` at loss ``+inf`` and
   Q'-mass ``Q(A)`` at loss ``-inf``; both are computed exactly from the first moments
   carried along (``E[A + B; A or B absorbed]`` splits over the independent halves).
   The masses of ``P'`` and ``Q'`` still add up to one.

Floating-point round-off is handled as in the engine (:mod:`~dpacct.accountant.pld.grid`):
each pairwise sum is an FFT convolution recomputed under a few exponential tilts, so
that small entries keep their relative precision; entries no tilt resolves are
dropped, and the exact mass and first moment they (and the part above the window)
carried join the absorbed atom (3.), so dropping is sound; the round-off of the kept
entries (about ``1e-16`` of their size) is not in the certificate.  The law's total mass and
mean are checked in the tests (exact: 1 and ``T``).

The result feeds the engine as an :class:`~dpacct.accountant.laws.loss_law.AtomicLossLaw`
pair (remove: loss ``log(s/T)`` under ``P'``; add: ``log(T/s)`` under ``Q'``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy import fft as sp_fft
from scipy import special

from ..laws.loss_law import AtomicLossLaw
from ..mechanism import Capabilities, Mechanism
from ..validation import check_count, check_positive

__all__: list[str] = []

#: grid step at one summand, in standard deviations of ``X``; a sum of ``m`` terms is
#: kept on a step about ``sqrt(m)`` times larger (its spread grows like ``sqrt(m)``)
_STEP_PER_SD = 0.02
#: the mass the absorbed event may carry is aimed at below this (it is computed and
#: accounted exactly whatever it turns out to be)
_TAIL_AIM = 1e-12
#: most cells of the first grid; a wider window takes a coarser step (more spread:
#: looser, never unsound) instead of more memory
_MAX_CELLS = 2**21


@dataclass(frozen=True)
class SumLaw:
    """A convex-order-dominating law of ``S = sum of T log-normal terms`` (see module).

    ``q[i]`` is the mass at ``S = i * step``; the absorbed event has Q-mass
    ``q_absorbed`` and carries ``E[S; absorbed] = s_absorbed``.
    """

    steps: int
    step: float
    q: np.ndarray
    q_absorbed: float
    s_absorbed: float

    def pair_laws(self) -> tuple[AtomicLossLaw, AtomicLossLaw]:
        """(remove, add) loss laws of the dominating pair ``(P', Q')``."""
        t = self.steps
        idx = np.nonzero(self.q > 0)[0]
        s = idx * self.step
        pos = s > 0
        q = self.q[idx]
        loss = np.log(s[pos] / t)
        p = s[pos] / t * q[pos]
        q_zero = float(q[~pos].sum())
        p_inf = min(self.s_absorbed / t, 1.0)
        remove = AtomicLossLaw(
            losses=loss, p=p, inf_mass=p_inf, q_neg_inf_mass=min(q_zero + self.q_absorbed, 1.0)
        )
        add = AtomicLossLaw(
            losses=-loss,
            p=q[pos],
            inf_mass=min(q_zero + self.q_absorbed, 1.0),
            q_neg_inf_mass=p_inf,
        )
        return remove, add

    def hockey_stick(self, gamma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(H_gamma(P'||Q'), H_gamma(Q'||P'))`` read from the law directly."""
        g = np.atleast_1d(np.asarray(gamma, dtype=float))
        s = np.arange(self.q.size) * self.step / self.steps
        rem = np.maximum(s[None, :] - g[:, None], 0.0) @ self.q + self.s_absorbed / self.steps
        add = np.maximum(1.0 - g[:, None] * s[None, :], 0.0) @ self.q + self.q_absorbed
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
        lo, hi = z[:-1], z[1:]
        left = special.ndtr(hi) - special.ndtr(lo)
        right = special.ndtr(-lo) - special.ndtr(-hi)
        return np.maximum(np.where(lo < 0, left, right), 0.0)

    return cell_diff(sigma * (lx + c)), cell_diff(sigma * (lx - c))


def _tail_moments(sigma: float, x: float) -> tuple[float, float]:
    """``P(X > x)`` and ``E[X; X > x]``."""
    c = 0.5 / (sigma * sigma)
    lx = math.log(x)
    return float(special.ndtr(-sigma * (lx + c))), float(special.ndtr(-sigma * (lx - c)))


def _base_law(sigma: float, step: float, top: float):
    """``X`` split onto ``0, step, 2 step, ...`` (mean kept per cell), absorbed above."""
    n = math.floor(top / step)
    edges = np.arange(n + 1) * step
    mass, moment = _lognormal_cells(sigma, edges)
    a = edges[:-1]
    right = np.clip((moment - a * mass) / step, 0.0, mass)  # mass sent to a + step
    q = np.zeros(n + 1)
    q[:-1] += mass - right
    q[1:] += right
    q_abs, s_abs = _tail_moments(sigma, float(edges[-1]))
    return q, q_abs, s_abs


def _coarsen(q: np.ndarray) -> np.ndarray:
    """Step doubled: even nodes stay, odd ones split half and half (mean kept)."""
    n = q.size
    out = np.zeros(n // 2 + 1)
    out[: (n + 1) // 2] += q[0::2]
    half = 0.5 * q[1::2]
    out[: half.size] += half
    out[1 : half.size + 1] += half
    return out


#: round-off of an FFT convolution per unit of its largest entry (the engine's
#: figure, :mod:`~dpacct.accountant.pld.grid`, doubled)
_FFT_NOISE = 8e-16
#: exponential tilts (per grid index) under which each convolution is recomputed: the
#: log-normal tail decays by about 1e-5 per index, the left end of a sum much faster
_TILTS = (0.0, 3e-6, 1e-5, 3e-5, 1e-4, 1e-3, 1e-2, -1e-3, -1e-2, -1e-1)


def _fft_convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a * b`` for non-negative arrays, small entries kept to relative precision.

    Tilting commutes with convolution, ``(a_i e^{th i}) * (b_j e^{th j}) = c_k e^{th k}``;
    under each tilt of :data:`_TILTS` an entry above the round-off level of that
    product (``_FFT_NOISE`` times its peak) is resolved, and each entry takes the
    estimate with the smallest round-off.  Entries no tilt resolves are set to zero
    (their mass goes to the absorbed atom, :func:`_add`).
    """
    size = a.size + b.size - 1
    nfft = sp_fft.next_fast_len(size, real=True)
    with np.errstate(divide="ignore"):
        la, lb = np.log(a), np.log(b)
    ia, ib, k = np.arange(a.size), np.arange(b.size), np.arange(size)
    best = np.zeros(size)
    err = np.full(size, np.inf)
    for th in _TILTS:
        ta = la + th * ia
        ma = float(ta.max())
        fa = sp_fft.rfft(np.exp(ta - ma), nfft)
        if b is a:
            mb, fb = ma, fa
        else:
            tb = lb + th * ib
            mb = float(tb.max())
            fb = sp_fft.rfft(np.exp(tb - mb), nfft)
        c = sp_fft.irfft(fa * fb, nfft)[:size]
        noise = _FFT_NOISE * float(np.abs(c).max())
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            log_scale = ma + mb - th * k
            e = noise * np.exp(log_scale)
            ok = (c > noise) & (e < err)
            best = np.where(ok, c * np.exp(log_scale), best)
        err = np.where(ok, e, err)
    return np.where(np.isfinite(best), best, 0.0)


def _add(a, b, step: float, top_index: int):
    """Law of the sum of two independent absorbed laws on one grid (module, 3.).

    The finite x finite product's exact mass and first moment are known
    (``m_a m_b`` and ``f_a m_b + f_b m_a``); whatever of them the kept entries do not
    carry -- the part above the window and the entries dropped at the round-off level
    -- joins the absorbed atom, which only raises every hockey-stick divergence.
    """
    qa, qa_abs, sa_abs = a
    qb, qb_abs, sb_abs = b
    na, nb = float(qa.sum()), float(qb.sum())
    ma, mb = na + qa_abs, nb + qb_abs
    fa = float(qa @ (np.arange(qa.size) * step))
    fb = float(qb @ (np.arange(qb.size) * step))
    c = _fft_convolve(qa, qa if qb is qa else qb)
    keep = min(top_index + 1, c.size)
    c = c[:keep]
    miss_q = max(na * nb - float(c.sum()), 0.0)
    miss_s = max(fa * nb + fb * na - float(c @ (np.arange(keep) * step)), 0.0)
    # E[A + B; A or B absorbed], split over the independent halves
    q_abs = qa_abs * mb + qb_abs * ma - qa_abs * qb_abs + miss_q
    s_abs = sa_abs * mb + fa * qb_abs + sb_abs * ma + fb * qa_abs + miss_s
    return c, q_abs, s_abs


@cache
def allocation_sum_law(sigma: float, steps: int, resolution: float = 1.0) -> SumLaw:
    """Convex-order-dominating law of the sum behind one allocation epoch (k = 1).

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0.
    steps : int
        Steps per epoch ``T``, >= 1.
    resolution : float, default 1.0
        Grid refinement factor (> 0); the spread added shrinks like its square.

    Returns
    -------
    SumLaw

    Examples
    --------
    The law keeps the mean ``E S = T`` (absorbed part included):

    >>> law = allocation_sum_law(1.0, 10)
    >>> s = float(law.q @ (np.arange(law.q.size) * law.step)) + law.s_absorbed
    >>> abs(s - 10) < 1e-9
    True
    """
    s = check_positive("sigma", sigma)
    t = check_count(steps, "steps")
    r = check_positive("resolution", resolution)
    sd = math.sqrt(math.expm1(1.0 / (s * s)))  # standard deviation of X
    # window top: T, plus a single term x beyond which E[X; X > x] + T P(X > x) (what
    # absorbing it costs, module 3.) is below _TAIL_AIM, plus a multiple of the spread
    z_moment = -float(special.ndtri(0.5 * _TAIL_AIM))
    z_mass = -float(special.ndtri(0.5 * _TAIL_AIM / t))
    x_tail = max(math.exp(0.5 / (s * s) + z_moment / s), math.exp(-0.5 / (s * s) + z_mass / s))
    top = t + x_tail + 12.0 * sd * math.sqrt(t) + 2.0
    target = _STEP_PER_SD * sd / r
    step = max(target, top / _MAX_CELLS)
    base = _base_law(s, step, top)
    power, count, acc, acc_count = base, 1, None, 0
    remaining = t
    while True:
        if remaining & 1:
            if acc is None:
                acc, acc_count = power, count
            else:
                acc = _add(acc, power, step, int(top / step))
                acc_count += count
        remaining >>= 1
        if not remaining:
            break
        power = _add(power, power, step, int(top / step))
        count *= 2
        # coarsen while the step is below its target for the current number of terms
        while 2.0 * step <= target * math.sqrt(count):
            step *= 2.0
            power = (_coarsen(power[0]), power[1], power[2])
            if acc is not None:
                acc = (_coarsen(acc[0]), acc[1], acc[2])
    q, q_abs, s_abs = acc
    return SumLaw(t, step, q, q_abs, s_abs)


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

    Examples
    --------
    >>> ep = AllocationEpochPair(1.0, 1000)
    >>> bool(0.15 < ep.epsilon(1e-6) < 0.2)
    True
    """

    declares = Capabilities(loss_laws=True)

    def __init__(self, sigma: float, steps: int, resolution: float = 1.0) -> None:
        self.sigma = check_positive("sigma", sigma)
        self.steps = check_count(steps, "steps")
        self.resolution = check_positive("resolution", resolution)

    def _loss_laws(self):
        return allocation_sum_law(self.sigma, self.steps, self.resolution).pair_laws()

    def __repr__(self) -> str:
        return f"AllocationEpochPair(sigma={self.sigma}, steps={self.steps})"
