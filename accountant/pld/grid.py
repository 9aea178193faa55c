"""Privacy loss distributions on a uniform grid, with certified upper and lower bounds.

A :class:`GridPLD` is a discrete privacy loss random variable: masses ``pmf[i]`` at the
losses ``(offset + i) * step`` plus a mass ``inf_mass`` at ``+inf`` (Koskela et al. 2020;
Doroshenko et al. 2022).  Its hockey-stick curve is

    delta(eps) = inf_mass + sum_{l_i > eps} pmf[i] * (1 - exp(eps - l_i)).

Two discretisations of a continuous (or finer) privacy loss are built, both from the
P- and Q-masses of each grid bin ``(a_j, a_{j+1}]``:

* **pessimistic** (an upper bound on delta under any composition): every bin's mass is
  split between its two end nodes so that both its P-mass and its Q-mass are kept.
  This is the "connect-the-dots" discretisation (Doroshenko, Ghazi, Kamath, Kumar,
  Manurangsi 2022, Algorithm 1): its curve is the chord interpolation, in
  ``t = e^eps``, of the exact curve at the nodes, and since the exact curve is convex
  in ``t`` the chords lie above it, so the discrete pair dominates the true one
  (Blackwell).  Mass below the grid is rounded up to the lowest node and mass above it
  is moved to ``+inf`` (pointwise rounding up, which can only increase delta).
* **optimistic** (a lower bound): each bin is first merged into one atom (a
  post-processing of the true pair), then a convex piecewise-linear curve with kinks
  only at the nodes is fitted *below* the merged pair's curve: node values are lowered
  by the chord gap of the adjacent bins and the lower convex hull is taken.  Bins
  where this would need more room than the curve has are rounded down to their lower
  node (pointwise rounding down, which can only decrease delta).  The result need not
  be a pair of probability distributions (its implied Q-mass can exceed one by a few
  1e-5), so it is not argued by Blackwell's theorem but on the P side alone: with
  ``g_eps(l) = (1 - e^{eps - l})_+`` the curve is ``delta(eps) = E_P[g_eps(L)]``, and
  ``g_eps(l + m) = g_{eps - m}(l)``, so a non-negative loss measure whose curve lies
  below the true one at *every real* eps stays below it after convolving with any
  non-negative loss measure; composing part by part, the composed optimistic curve is
  below the true composed curve.  The construction keeps it below at every real eps
  (negative ones included).

A bin's Q-mass below ``Q_FLOOR`` (2^-970; losses past ~670) is not read from the
law's linear distribution functions, which underflow there: it is taken in log space
where the law can (:meth:`GaussianLossLaw._log_q_bins`), else the bin goes whole onto
its upper node (pessimistic) or its lower node (optimistic), rounding the loss.

Both errors are second order in the grid step for smooth losses, which is why the
bracket stays tight after a million compositions.  Composition is FFT convolution;
``k``-fold self-composition is repeated squaring in which the grid is coarsened as the
distribution widens (always through the same certified re-discretisation), so the cost
grows like ``log k``.  Truncated tail mass is never dropped from an upper bound: it goes
to ``+inf``.

Floating-point round-off of the FFT products (:mod:`~dpacct.accountant.pld.pld_fft`)
is inside the certificate, as everywhere in the engine: every product carries a
rigorous per-entry bound (the transforms' error analysis pass by pass, after Higham
2002, Theorem 24.2, componentwise for the inverse; for the plain and the
exponentially tilted transforms), added to a pessimistic PMF and subtracted from an
optimistic one, so each is entrywise above (below) the exact product
(``pld_fft.CERTIFY_ROUNDOFF``).  Measured on DP-SGD it moves the upper epsilon by 3e-10
(T 1e4) and 4e-8 (T 1e6) relative and takes 1.06-1.3 times as long as leaving it
out (``python -m benchmarks.roundoff``).  The argument and the measurements:
docs/theory/pld.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..laws.loss_law import AtomicLossLaw, PrivacyLossLaw
from ..laws.sgm_split import upper_shares
from ..numerics import EXP_OVERFLOW, SUBNORMAL_FLOOR, TINY
from ..validation import check_positive, check_probability
from .atom_split import _exact_products, atom_upper_pmf
from .optimistic_bins import (  # noqa: F401 (_lower_from_bins: patched by benchmarks)
    _Bins,
    _lower_from_bins,
    _round_down_from_bins,
)
from .pld_fft import _certified_convolve, _tail_cuts
from .pld_hull import _decaying_sum

__all__ = ["GridPLD", "discretize"]

#: longest grid a PLD may use before it is coarsened regardless of accuracy
MAX_GRID = 1 << 21
#: a bin's Q-mass below this (2^-970, ~1e-292) is not read: an error of the order of
#: the smallest normal float (where sf_q underflows) would exceed 2^-52 of it
Q_FLOOR = float(np.finfo(float).tiny / np.finfo(float).eps)
#: the bottom tail of a convolution may be cut with this many times the top budget
#: (see :meth:`GridPLD.convolve`)
BOTTOM_CUT_FACTOR = 100.0


def _bins_from_law(law: PrivacyLossLaw, step: float, lo: float, hi: float) -> _Bins:
    first = math.floor(lo / step)
    last = math.ceil(hi / step)
    if last <= first:
        last = first + 1
    nodes = np.arange(first, last + 1, dtype=float) * step
    m, nq, (m_bot, c_bot, m_top, n_top) = law._bins_and_ends(nodes)
    # scaled Q-mass nq * e^{a_j}, in log space so that losses beyond 709 do not overflow
    with np.errstate(divide="ignore", over="ignore"):
        r = np.where(nq > 0, np.exp(np.log(np.maximum(nq, SUBNORMAL_FLOOR)) + nodes[:-1]), 0.0)
    atoms = None
    if law.anchor is not None:
        # atoms of the law that fall exactly on the right node of a bin
        right = nodes[1:]
        below = np.nextafter(right, -np.inf)
        atoms = np.clip(law.cdf_p(right) - law.cdf_p(below), 0.0, m)
        atoms = np.where(atoms > 1e-15 * np.maximum(m, TINY), atoms, 0.0)
        # The anchor's atom is where the law says it is, up to the rounding of the
        # distribution functions: a subsampled Laplace's cdf jumps 7 ulps below its
        # float anchor (the exact image lies half an ulp above it), so the test one ulp
        # below missed it, the bin was merged whole and then rounded down onto its
        # lower node -- the lower bound lost a whole step (1.6 % on one step of q = 0.1,
        # b = 5).  On the anchor's node the jump is read over 64 ulps instead: the
        # placement error is of the order of the anchor's ulp, below the round-off the
        # certificates already exclude (module docstring).
        if law.anchor is not None:
            hit = np.flatnonzero(right == law.anchor)
            if hit.size:
                j = int(hit[0])
                a = float(right[j])
                near = a - 64.0 * math.ulp(a)
                jump = float(law.cdf_p(np.array([a]))[0] - law.cdf_p(np.array([near]))[0])
                atoms[j] = max(atoms[j], min(max(jump, 0.0), float(m[j])))
    # Q-masses near the float floor (losses beyond ~670 - log(1/m)) are not to be
    # trusted: sf_q underflows to 0 at the bin's right edge (the bin then gets the whole
    # tail: 1.48 times its Q-mass) or is 0 itself (read as loss +inf).  A Gaussian with
    # mu 33.4: upper end 699.92 and lower end 700.90 around the true 700.04.  Such
    # bins are read in log space where the law can (Gaussian), else rounded onto a
    # node (_upper_from_bins, _lower_from_bins).
    q_lost = (nq < Q_FLOOR) & (m > 0)
    if q_lost.any():
        lq = law._log_q_bins(nodes)  # a law that can read them in log space does
        if lq is not None:
            with np.errstate(over="ignore"):
                r_log = np.exp(lq + nodes[:-1])
            known = q_lost & np.isfinite(r_log) & (r_log > 0)
            r = np.where(known, r_log, r)
            q_lost &= ~known
    a0, an = nodes[0], nodes[-1]
    n_bot = c_bot - law.q_neg_inf_mass
    return _Bins(
        upper=atom_upper_pmf(law, first, nodes.size, step),
        step=step,
        first=first,
        m=m,
        r=np.minimum(r, m),
        bottom=(m_bot, min(max(n_bot, 0.0) * _safe_exp(a0), m_bot)),
        top=(m_top, min(max(n_top, 0.0) * _safe_exp(an), m_top)),
        inf_mass=float(law.inf_mass),
        atoms=atoms,
        q_lost=q_lost if q_lost.any() else None,
        split=law._split_numerators(nodes),
    )


def _safe_exp(x: float) -> float:
    return math.exp(min(x, EXP_OVERFLOW))


def _bins_from_grid(pld: GridPLD, step: float) -> _Bins:
    """Bins of a coarser grid (``step`` an integer multiple of ``pld.step``)."""
    ratio = step / pld.step
    f = round(ratio)
    if f < 1 or abs(ratio - f) > 1e-9 * ratio or f > pld.pmf.size:
        # unrelated steps; or a coarse step wider than the whole fine PLD (a Laplace part
        # with b = 1e20 beside a Gaussian: f = 5e19 columns of padding exhausted memory),
        # where summing atom by atom costs O(n log n) instead of O(f)
        return _bins_from_atoms(pld, step)
    # atom at absolute index i lies in coarse bin j = ceil(i/f) - 1, at distance
    # rem = i - f*j in [1, f] fine steps above the bin's left node: padded to whole
    # bins, the pmf reshapes to one row per coarse bin and one column per rem
    first = -((-pld.offset) // f) - 1
    front = pld.offset - f * first - 1
    back = (-(front + pld.pmf.size)) % f
    rows = np.concatenate([np.zeros(front), pld.pmf, np.zeros(back)]).reshape(-1, f)
    m = rows.sum(axis=1) if pld.pessimistic or f > 8 else _row_sums(rows)
    r = rows @ np.exp(-np.arange(1, f + 1) * pld.step)
    atoms = rows[:, -1].copy()
    return _Bins(
        step=step,
        first=first,
        m=m,
        r=np.minimum(r, m),
        bottom=(0.0, 0.0),
        top=(0.0, 0.0),
        inf_mass=pld.inf_mass,
        atoms=atoms,
    )


def _row_sums(rows: np.ndarray) -> np.ndarray:
    """``rows.sum(axis=1)`` for rows of at most 8 entries, the same floats, by column
    adds: numpy sums fewer than 8 entries from left to right and exactly 8 as four
    pairs of pairs (its pairwise sum's unrolled block), and its reduction machinery
    costs 10x these adds on rows this short (issue 37: the optimistic regrids of a
    DP-SGD ``epsilon_bounds``).  ``tests/test_grid.py`` checks the equality on the
    installed numpy."""
    f = rows.shape[1]
    if f == 8:
        c = [rows[:, j] for j in range(8)]
        return ((c[0] + c[1]) + (c[2] + c[3])) + ((c[4] + c[5]) + (c[6] + c[7]))
    m = rows[:, 0].copy()
    for j in range(1, f):
        m += rows[:, j]
    return m


def _bins_from_atoms(pld: GridPLD, step: float) -> _Bins:
    """Bins of an unrelated grid ``step * Z``, summed atom by atom.

    Atom ``l_i`` falls into the bin ``(a_j, a_{j+1}]`` with ``a_{j} < l_i <= a_{j+1}``;
    its P-mass adds to ``m_j`` and its scaled Q-mass ``p_i e^{-(l_i - a_j)}`` to
    ``r_j``.  Sums of non-negative
    terms in one pass (``O(n log n)`` for the bin search): the same bins as the
    atomic law's distribution-function differences (``_bins_from_law`` on
    :meth:`GridPLD.as_law`), which cost 1 s per re-grid of a 2^19-point PLD when a
    long composition met a lattice part (a mixture of 9.6e6 subsampled Gaussian and
    6.6e4 subsampled discrete Gaussian steps took 110 s).
    """
    losses = pld.losses
    pmf = pld.pmf
    lo, hi = float(losses[0]) - step, float(losses[-1]) + step
    first = math.floor(lo / step)
    last = max(math.ceil(hi / step), first + 1)
    nodes = np.arange(first, last + 1, dtype=float) * step
    right = np.searchsorted(nodes, losses, side="left")  # nodes[right-1] < l <= nodes[right]
    j = np.clip(right - 1, 0, nodes.size - 2)
    nbins = nodes.size - 1
    m = np.bincount(j, weights=pmf, minlength=nbins)
    with np.errstate(over="ignore", under="ignore"):
        scaled = pmf * np.exp(np.minimum(nodes[j] - losses, 0.0))
    r = np.bincount(j, weights=scaled, minlength=nbins)
    return _Bins(
        step=step,
        first=first,
        m=m,
        r=np.minimum(r, m),
        bottom=(0.0, 0.0),
        top=(0.0, 0.0),
        inf_mass=pld.inf_mass,
        atoms=None,  # as the atomic law without an anchor: every bin merged whole
    )


def _upper_from_bins(b: _Bins) -> tuple[int, np.ndarray, float]:
    """Connect-the-dots split of every bin (keeps its P- and Q-mass); a bin whose
    Q-mass is unknown (``q_lost``) goes whole onto its upper node (rounding up)."""
    if b.upper is not None:  # a purely atomic law, split atom by atom (no cancellation)
        return b.first, b.upper.pmf(), b.inf_mass + b.upper.beyond
    c = -math.expm1(-b.step)
    if b.split is None:
        r = b.r if b.q_lost is None else np.where(b.q_lost, 0.0, b.r)
        pb = np.clip((b.m - r) / c, 0.0, b.m)
    else:
        pb = _split_up(b, c)
    pmf = np.zeros(b.m.size + 1)
    pmf[1:] += pb
    pmf[:-1] += b.m - pb
    pmf[0] += b.bottom[0]
    return b.first, pmf, b.inf_mass + b.top[0]


def _split_up(b: _Bins, c: float) -> np.ndarray:
    """Each bin's upper-node share from the law's split numerators, rounded up
    (:func:`~dpacct.accountant.laws.sgm_split.upper_shares`); a bin whose Q-mass is
    unknown (``q_lost``) goes whole onto its upper node."""
    assert b.split is not None
    pb = upper_shares(b.split, c, b.m)
    return pb if b.q_lost is None else np.where(b.q_lost, b.m, pb)


def _trim(first: int, pmf: np.ndarray) -> tuple[int, np.ndarray]:
    if pmf.size == 0:
        return first, np.zeros(1)
    pos = pmf > 0  # first and last positive entries by argmax (no index array)
    lo = int(np.argmax(pos))
    if not pos[lo]:
        return first, np.zeros(1)
    return first + lo, pmf[lo : pmf.size - int(np.argmax(pos[::-1]))]


# ---------------------------------------------------------------------------- GridPLD
@dataclass(frozen=True, eq=False)
class GridPLD:
    """A discretised privacy loss distribution with a certificate direction.

    Parameters
    ----------
    step : float
        Grid spacing of the loss values.
    offset : int
        Loss of ``pmf[0]`` is ``offset * step``.
    pmf : numpy.ndarray
        Non-negative masses (they may sum to less than ``1 - inf_mass`` for an
        optimistic PLD, whose dropped mass sits at ``-inf``).
    inf_mass : float
        Mass at ``L = +inf``.
    pessimistic : bool
        True if every delta computed from this PLD is an upper bound on the truth,
        False if it is a lower bound.

    Examples
    --------
    >>> from dpacct.accountant.laws.loss_law import GaussianLossLaw
    >>> law = GaussianLossLaw(mu=1.0)
    >>> up = discretize(law, step=1e-3, pessimistic=True)
    >>> lo = discretize(law, step=1e-3, pessimistic=False)
    >>> exact = float(law.hockey_stick(np.array([1.0]))[0])
    >>> bool(lo.delta(1.0) <= exact <= up.delta(1.0))
    True
    """

    step: float
    offset: int
    pmf: np.ndarray
    inf_mass: float
    pessimistic: bool

    # -- basic views ---------------------------------------------------------------
    @property
    def losses(self) -> np.ndarray:
        """Loss value of every grid point."""
        return (self.offset + np.arange(self.pmf.size)) * self.step

    def as_law(self) -> AtomicLossLaw:
        """This PLD as an :class:`AtomicLossLaw` (Q-masses ``pmf * e^{-loss}``)."""
        return AtomicLossLaw(losses=self.losses, p=self.pmf, inf_mass=self.inf_mass)

    def spread(self) -> float:
        """Interquartile range of the finite losses over 1.349 (a robust scale)."""
        c = np.cumsum(self.pmf)
        tot = c[-1]
        if tot <= 0:
            return 0.0
        i1 = int(np.searchsorted(c, 0.25 * tot))
        i3 = int(np.searchsorted(c, 0.75 * tot))
        return (i3 - i1) * self.step / 1.349

    # -- queries -------------------------------------------------------------------
    def _node_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """delta at every node and ``E_j = sum_{i>=j} p_i e^{l_j - l_i}``."""
        e = _decaying_sum(self.pmf, self.step)
        c = -math.expm1(-self.step)
        tail = np.concatenate([np.cumsum(e[::-1])[::-1][1:], [0.0]])
        return self.inf_mass + c * tail, e

    def delta(self, epsilon: float | np.ndarray) -> float | np.ndarray:
        """Hockey-stick divergence at ``epsilon`` (scalar or array).

        Parameters
        ----------
        epsilon : float or array_like
            Real epsilon(s).
        """
        eps = np.asarray(epsilon, dtype=float)
        d_nodes, e = self._node_tables()
        losses = self.losses
        # j1 = first node strictly above eps; delta(eps) = d[j1] + (1 - e^{eps-l_j1}) E_j1
        # The node losses are the real products (offset + i) * step; their floats may
        # be half an ulp off, so the node's float equal to eps may truly lie above it
        # (ten (7.7, 1e-14) steps: the top atom is 77.0000000000000018, its float
        # 77.0, and delta(77.0) lost the atom's 1.8e-15).  The products are split
        # exactly into float + remainder (_exact_products) and the remainder is kept.
        j1 = np.searchsorted(losses, eps, side="right")
        hi, lo = _exact_products(self.offset + np.maximum(j1 - 1, 0), self.step)
        j1 = np.where((j1 > 0) & (hi == eps) & (lo > 0), j1 - 1, j1)
        inside = j1 < losses.size
        jj = np.minimum(j1, losses.size - 1)
        hi, lo = _exact_products(self.offset + jj, self.step)
        with np.errstate(over="ignore", invalid="ignore"):
            gap = np.where(inside, (eps - hi) - lo, 0.0)
            val = d_nodes[jj] + np.maximum(-np.expm1(gap), 0.0) * e[jj]
        out = np.where(inside, val, self.inf_mass)
        # round in the direction of the certificate (the sums carry ~1e-15 relative error)
        out = out * (1.0 + 1e-10) + TINY if self.pessimistic else out * (1.0 - 1e-10)
        out = np.clip(out, 0.0, 1.0)
        return float(out) if out.ndim == 0 else out

    def epsilon(self, delta: float) -> float:
        """Smallest ``eps >= 0`` with ``delta(eps) <= delta`` (inf if unreachable).

        Parameters
        ----------
        delta : float
            Target delta, in [0, 1].
        """
        if delta < self.inf_mass:
            return math.inf
        d_nodes, e = self._node_tables()
        losses = self.losses
        # first node whose delta is already <= target
        j = int(np.searchsorted(-d_nodes, -delta, side="left"))
        if j >= losses.size:  # pragma: no cover - d_nodes[-1] == inf_mass <= delta
            j = losses.size - 1
        frac = (delta - d_nodes[j]) / e[j] if e[j] > 0 else 1.0
        if frac >= 1.0:
            eps = -math.inf
        else:
            eps = float(losses[j] + math.log1p(-frac))
        if j > 0:
            eps = max(eps, float(losses[j - 1]))
        if eps <= 0.0:
            return 0.0
        # round in the direction of the certificate
        nudge = 1e-12 * abs(eps) + 1e-15
        return eps + nudge if self.pessimistic else max(eps - nudge, 0.0)

    def rdp(self, alpha: np.ndarray) -> np.ndarray:
        """Renyi divergence of the discrete pair, ``log E[e^{(a-1)L}] / (a-1)``.

        Parameters
        ----------
        alpha : array_like
            Renyi orders, > 1 (``inf`` gives the largest loss).
        """
        a = np.asarray(alpha, dtype=float)
        if self.inf_mass > 0:
            return np.full(a.shape, np.inf)
        pos = self.pmf > 0
        lp = np.log(self.pmf[pos])
        losses = self.losses[pos]
        from scipy.special import logsumexp

        flat = a.reshape(-1)
        out = np.empty(flat.shape)
        for i, ai in enumerate(flat):
            if np.isinf(ai):
                out[i] = float(losses.max())
            else:
                out[i] = max(float(logsumexp(lp + (ai - 1.0) * losses)) / (ai - 1.0), 0.0)
        return out.reshape(a.shape)

    # -- transformations -----------------------------------------------------------
    def regrid(self, step: float) -> GridPLD:
        """Re-discretise onto a coarser grid, keeping the certificate direction.

        Parameters
        ----------
        step : float
            The new, coarser grid step (an integer multiple of the current one is fastest).
        """
        if step == self.step:
            return self
        return _from_bins(_bins_from_grid(self, step), self.pessimistic)

    def convolve(self, other: GridPLD, tail: float = 0.0, exact_tilts: bool = False) -> GridPLD:
        """PLD of the composition (independent sum of losses), by FFT convolution.

        Tails whose exact mass (computed from the inputs with non-negative sums, not
        from the FFT output) is small are cut: for a pessimistic PLD the top tail's mass
        goes to ``+inf`` and the bottom tail's onto the first kept node; for an
        optimistic PLD both are dropped.  Cutting by exact masses keeps FFT noise in the
        far tails out of the result.  The top tail may hold at most ``tail``; the bottom
        tail ``BOTTOM_CUT_FACTOR`` times more, because mass moved from the bottom of the
        losses barely moves delta at the epsilons asked for (measured: a hundred times
        the budget there moves the upper bounds of the benchmarks by under 1e-10 and
        the lower bounds by under 2e-8 relative, while the top budget decides the
        bound).  Either way the moved mass bounds the change of delta, so the result
        stays certified.

        Parameters
        ----------
        other : GridPLD
            The PLD composed with this one: same step and certificate direction.
        tail : float, default 0.0
            P-mass the top tail cut may move, >= 0 (0: no cut).
        exact_tilts : bool, default False
            For a pessimistic PLD: the tilted passes weight with exps of exact exponents
            (:func:`~dpacct.accountant.pld.pld_fft._tilted_convolve`; a smaller
            certificate, fewer exps), as the DP-SGD ladder does
            (:mod:`~dpacct.accountant.pld.twoscale`).
        """
        if other.pessimistic != self.pessimistic:
            raise ValueError("cannot compose a pessimistic with an optimistic PLD")
        a, b = _common_grid(self, other)
        pmf = _certified_convolve(a.pmf, a.pmf if b is a else b.pmf, tail, self.pessimistic,
                                  exact_tilts and self.pessimistic)
        # (a_fin + a_inf) x (b_fin + b_inf): every product with an infinite factor is
        # infinite; written for sub-probability measures (parts of a split PLD) too
        fin_a, fin_b = float(a.pmf.sum()), float(b.pmf.sum())
        inf_mass = a.inf_mass * (fin_b + b.inf_mass) + b.inf_mass * fin_a
        # The product's finite mass is exactly fin_a * fin_b; the FFT's (clipped)
        # round-off is not, and a relative mass error compounds under repeated
        # squaring (a k-fold product carries k times it: 5e-5 after 10^6 DP-SGD steps
        # at tol 3e-7, once enough to put the lower bound above the upper).  It is
        # removed in the certificate's direction: a deficit of an upper bound is made
        # up by scaling the masses up (adding mass only raises delta), an excess of a
        # lower bound is scaled away (moving mass to -inf only lowers delta).  The
        # change is of the order of the round-off (1e-16 to 1e-13 relative).
        exact_mass = fin_a * fin_b
        total = float(pmf.sum())
        if total > 0 and (total < exact_mass if self.pessimistic else total > exact_mass):
            pmf *= exact_mass / total  # (pmf is this call's own)
        first = a.offset + b.offset
        if tail > 0 and pmf.size > 2:
            k_lo, m_lo, k_hi, m_hi = _tail_cuts(
                a.pmf, a.pmf if b is a else b.pmf, pmf, tail, BOTTOM_CUT_FACTOR * tail
            )
            if k_hi < pmf.size and k_hi > k_lo + 1:
                pmf[k_hi:] = 0.0
                if self.pessimistic:
                    inf_mass += m_hi
            if k_lo >= 0 and k_lo + 1 < min(k_hi, pmf.size):
                pmf[: k_lo + 1] = 0.0
                if self.pessimistic:
                    pmf[k_lo + 1] += m_lo
        first, pmf = _trim(first, pmf)
        return GridPLD(a.step, first, pmf, min(inf_mass, 1.0), self.pessimistic)

    def self_compose(
        self,
        count: int,
        *,
        tail: float = 1e-14,
        points_per_scale: float = 40.0,
        max_step: float | None = None,
    ) -> GridPLD:
        """``count``-fold composition by repeated squaring with adaptive coarsening.

        After every squaring the grid is coarsened (by powers of two, with the certified
        re-discretisation) while it keeps at least ``points_per_scale`` grid points per
        robust standard deviation of the loss; ``max_step`` caps the coarsening (for
        losses on a lattice, whose grid is then exact).  ``tail`` bounds the total mass
        that tail cuts may move over the whole computation: a cut made on the
        ``2^m``-fold PLD is repeated ``count / 2^m`` times, so it is given
        ``tail * 2^m / (count * levels)``.

        Parameters
        ----------
        count : int
            Number of compositions, >= 1.
        tail : float, default 1e-14
            Total P-mass the tail cuts may move, >= 0.
        points_per_scale : float, default 40.0
            Grid points per robust standard deviation kept when coarsening, > 0.
        max_step : float, optional
            Largest grid step the coarsening may reach (None: no cap).
        """
        if count < 1:
            raise ValueError(f"count must be >= 1, got {count}")
        levels = count.bit_length() + 1
        result: GridPLD | None = None
        base = self
        k = count
        power = 1
        while True:
            if k & 1:
                cut = tail / levels
                result = base if result is None else result.convolve(base, cut)
            k >>= 1
            if k == 0:
                break
            base = base.convolve(base, tail * 2 * power / (count * levels))
            power *= 2
            base = base._coarsened(points_per_scale, max_step)
        assert result is not None
        return result

    def _coarsened(self, points_per_scale: float, max_step: float | None) -> GridPLD:
        s = self.spread()
        target = s / points_per_scale if s > 0 else self.step
        if max_step is not None:
            target = min(target, max_step)
        f = 1
        while self.step * f * 2 <= target:
            f *= 2
        while self.pmf.size / f > MAX_GRID:
            f *= 2
        return self.regrid(self.step * f) if f > 1 else self


def _from_bins(b: _Bins, pessimistic: bool) -> GridPLD:
    if pessimistic:
        first, pmf, inf_mass = _upper_from_bins(b)
    else:
        first, pmf, inf_mass = _lower_from_bins(b)
        # In exact arithmetic the optimistic construction keeps at most the input's
        # P-mass (its hull starts at the total mass and ends at the mass at +inf); its
        # slopes are differences of nearly equal numbers, and the round-off came out
        # as up to 6e-13 of *extra* mass per re-grid.  Extra mass compounds under
        # composition -- the k-fold product carries k times the relative excess
        # (measured: 5e-5 after 10^6 DP-SGD steps at tol 3e-7, enough to put the
        # lower bound above the upper) -- so the output is scaled back to the input's
        # mass: moving mass to -inf only lowers an optimistic curve.
        total_in = b.inf_mass + b.bottom[0] + float(b.m.sum()) + b.top[0]
        total_out = float(pmf.sum())
        if total_out + inf_mass > total_in and total_out > 0:
            pmf = pmf * (max(total_in - inf_mass, 0.0) / total_out)
    first, pmf = _trim(first, pmf)
    return GridPLD(b.step, first, pmf, float(inf_mass), pessimistic)


def _common_grid(a: GridPLD, b: GridPLD) -> tuple[GridPLD, GridPLD]:
    """Bring two PLDs onto one grid.

    Nested grids (steps in an integer ratio) meet on the coarser one, which was
    already fine enough for its own part.  Unrelated steps (a lattice and a binary
    grid) meet on the finer one: re-gridding onto a much coarser, unrelated lattice
    would spread every atom over a whole lattice step -- unless the wider PLD would
    then need more than ``MAX_GRID / 4`` points (a long composition meeting one
    narrow step on its fine grid), when they meet on the coarser one.  Either grid
    is certified.
    """
    if a.step == b.step:
        return a, b
    big, small = max(a.step, b.step), min(a.step, b.step)
    ratio = big / small
    step = big if abs(ratio - round(ratio)) <= 1e-9 * ratio else small
    if step == small:
        widest = max(p.pmf.size * p.step for p in (a, b))
        if widest / small > MAX_GRID / 4:
            step = big
    return a.regrid(step), b.regrid(step)


def discretize(
    law: PrivacyLossLaw,
    step: float,
    *,
    pessimistic: bool,
    tail: float = 1e-18,
) -> GridPLD:
    """Certified discretisation of a privacy-loss law on the grid ``step * Z``.

    The window is chosen so that at most ``tail`` P-mass lies beyond it on each side;
    that mass is rounded in the certified direction (up to ``+inf`` / onto the first
    node for ``pessimistic=True``; down for ``pessimistic=False``).

    Parameters
    ----------
    law : PrivacyLossLaw
        The loss law to discretise.
    step : float
        Grid step, > 0.
    pessimistic : bool
        True for the upper-bound (dominating) PLD, False for the lower-bound one.
    tail : float, default 1e-18
        P-mass allowed beyond the window on each side, in [0, 1).

    Examples
    --------
    >>> from dpacct.accountant.laws.loss_law import GaussianLossLaw
    >>> pld = discretize(GaussianLossLaw(mu=0.5), step=1e-3, pessimistic=True)
    >>> abs(float(pld.pmf.sum()) + pld.inf_mass - 1.0) < 1e-12
    True
    """
    step = check_positive("step", step)
    tail = check_probability("tail", tail)
    lo, hi = law.quantile_bounds(tail)
    # one spare node on each side keeps extreme atoms off the window's edge bins
    lo, hi = lo - step, hi + step
    if hi - lo > MAX_GRID * step:
        raise ValueError(f"grid step {step:g} is too fine for the loss range [{lo:g}, {hi:g}]")
    return _from_bins(_bins_from_law(law, step, lo, hi), pessimistic)
