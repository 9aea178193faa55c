"""A direct upper bound for 2-of-T random allocation: the (max, sum) remove direction.

One epoch allocates the record to a uniform 2-subset of ``T`` Gaussian steps (noise
multiplier ``sigma``).  With ``Y_t = exp((x_t - 1/2) / sigma^2)`` i.i.d. log-normal under
``Q = N(0, sigma^2 I_T)`` (``log Y ~ N(-1/(2 sigma^2), 1/sigma^2)``, ``E Y = 1``) the
likelihood ratio of the exact pair is ``Lambda = e_2(Y) / C(T, 2)``
(docs/theory/allocation_k_of_t.md, "The exact pair of one epoch"; Proposition 1' there
shows that this pair dominates the adaptive epoch).  This module certifies an upper
bound on the *remove* direction ``H_gamma(P_2 || Q) = E_Q[(Lambda - gamma)_+]`` at every
``gamma >= 0`` and turns it into a dominating pair of probability measures for the PLD
engine; the add direction is left to the blocks of Proposition 1
(:func:`allocation_k2_pair` composes them).  Every step is proved in
docs/theory/allocation_k_of_t.md, section "The direct k = 2 remove direction":

1. **Pointwise.**  ``M = max_t Y_t``, ``R`` the sum of the others: Cauchy-Schwarz on the
   others' squares gives ``Lambda <= L'(M, R) = (2 M R + R^2 (T-2)/(T-1)) / (T (T-1))``,
   increasing in ``M`` and increasing convex in ``R``.
2. **Conditioning.**  ``A`` = two coordinates above ``b``; ``(Lambda - gamma)_+ <= Lambda``
   on ``A`` and ``E_Q[Lambda; A] = P_2(A)`` (a union bound over pairs, charged).  Given
   ``M`` in the cell ``(m_{j-1}, m_j]`` and off ``A``, the others are i.i.d. and
   stochastically below ``Y | Y <= c`` for any cut ``c >= min(m_j, b)``.  The cell masses
   ``F(m_j)^T - F(m_{j-1})^T`` are computed without cancellation and rounded up.
3. **Lattice.**  ``Y | Y <= c`` is split onto a lattice of step ``h`` with each cell's
   first moment kept (chord of an increasing convex function), from entrywise upper
   bounds of the cell masses and moments; its ``(T-1)``-fold power is the engine's
   rigorous convolution kernel, rounded up; off ``A`` the sum is ``<= (T-1) b``, inside
   the FFT length (no wrap; entries beyond the exact support are 0).
4. **A probability pair.**  The resulting atoms ``(v_i, q_i)`` (values rounded up onto a
   log grid) and the charged mass ``c`` satisfy ``sum q_i v_i + c >= 1`` and
   ``E_Q[(Lambda - gamma)_+] <= sum q_i (v_i - gamma)_+ + c``.  Keeping the highest atoms
   until their P-mass ``sum q_i v_i`` is ``1 - c`` (the last one in part) and sending the
   rest of Q's mass to ``v = 0`` gives a pair of probability measures ``(P', Q')`` whose
   ``H_gamma(P' || Q')`` equals the bound above the cut and is the chord from
   ``(0, 1)`` below it, hence ``>= H_gamma(P_2 || Q)`` at every ``gamma >= 0`` (that curve
   is convex with value 1 at 0): a dominating pair in the remove direction, which the
   engine composes over epochs.

The remove direction's law is built once per ``(sigma, T)`` and kept; a build longer
than :data:`~dpacct.accountant.transformers.random_allocation_pld.PROGRESS_DELAY`
seconds shows a ``tqdm`` bar unless ``progress=False``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..laws.loss_law import AtomicLossLaw
from ..mechanism import Capabilities, Mechanism
from ..numerics import _bar_disabled
from ..validation import check_count, check_positive
from .random_allocation_k2_hull import _cells_lower, _cells_upper, _err, k2_envelope_law
from .random_allocation_pld import PROGRESS_DELAY, AllocationEpochPair
from .random_allocation_sum_lower import _power

__all__: list[str] = []

#: relative margin for the float operations after the special functions (each a few
#: ulps; at most a few hundred of them compound on any entry)
_OPS = 1e-12
#: the union bound on P_2(two coordinates above b) is aimed at this
_CHARGE = 1e-9
#: log-grid step of the atoms' values (rounded up onto it)
_DLOG = 1e-4
#: lattice entries and M cells below this mass are charged in full
_DROP = 1e-25
#: the smallest T and sigma the direct bound is built for (the route of
#: :class:`~dpacct.accountant.RandomAllocationMechanism` needs T > k = 2)
K2_MIN_STEPS = 2
K2_MIN_SIGMA = 0.45
#: the largest T the route of :class:`~dpacct.accountant.RandomAllocationMechanism` tries
K2_MAX_STEPS = 300


def _max_cell_weights(sigma: float, t: int, levels: np.ndarray) -> np.ndarray:
    """Upper bounds on ``Q(M in (e^{l_{j-1}}, e^{l_j}])`` (the first cell: ``M <= e^{l_0}``).

    ``F(m)^T - F(m')^T = F^T (1 - (1 - c / F)^T)`` with ``c = F(m) - F(m')`` the one-term
    cell mass (no cancellation); increasing in ``F`` and in ``c``, so evaluated at upper
    bounds of both and rounded up."""
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    z = (levels - mu0) / s0
    log_f = special.log_ndtr(z) * (1.0 - _err(z))  # log F <= 0, moved towards 0
    f_up = np.exp(log_f)
    c = np.empty(levels.size)
    c[0] = f_up[0]
    c[1:] = _cells_upper(z[:-1], z[1:])
    c = np.minimum(c, f_up)
    with np.errstate(divide="ignore"):
        w = f_up**t * -np.expm1(t * np.log1p(-c / f_up))
    w[0] = f_up[0] ** t
    return w * (1.0 + _OPS)


def _term_law(sigma: float, cut: float, h: float, n: int) -> np.ndarray:
    """Entrywise upper bound of a law on ``{0, h, ..., (n-1) h}`` above ``Y | Y <= cut`` in
    the increasing convex order: each cell ``[a, a + h]``'s mass goes to its two ends
    with the upper node's share ``u = (E[Y; cell] - a P(cell)) / h`` bounded above (the
    chord of an increasing convex function; all its mass at the upper node when the
    bound on ``u`` exceeds the bound on the mass); the last cell ends at ``cut``."""
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    top = min(math.ceil(cut / h), n - 1)
    edges = np.arange(top + 1) * h
    edges[-1] = cut
    with np.errstate(divide="ignore"):
        z = (np.log(edges) - mu0) / s0
    zc = (math.log(cut) - mu0) / s0
    norm_lo = float(special.ndtr(zc)) * (1.0 - float(_err(np.array([zc]))[0]) - 1e-15)
    mass_up = _cells_upper(z[:-1], z[1:]) / norm_lo
    mass_lo = _cells_lower(z[:-1], z[1:]) / (norm_lo * (1.0 + 1e-13))
    # E[Y; Y in cell] = Phi(z_hi - s0) - Phi(z_lo - s0)  (E Y = 1)
    mom_up = _cells_upper(z[:-1] - s0, z[1:] - s0) / norm_lo
    width = np.diff(edges)
    a = edges[:-1]
    u = (mom_up - a * mass_lo) / width
    u = u + 1e-15 * (mom_up + a * mass_lo) / width  # the subtraction's own round-off
    u = np.clip(u, 0.0, mass_up)
    out = np.zeros(n)
    out[:top] += mass_up - u
    out[1 : top + 1] += u
    return out * (1.0 + _OPS)


def _sum_power(law: np.ndarray, m: int) -> np.ndarray:
    """Entrywise upper bound on the ``m``-fold convolution power of ``law`` (the
    engine's rigorous kernel, via the sum statistic's ``_power``); entries beyond the
    exact support ``m (top - 1)`` are 0 and set so (the kernel's absolute error bounds
    there would otherwise be weighted by ``L' ~ r^2``)."""
    top = int(np.flatnonzero(law)[-1]) + 1
    with np.errstate(all="ignore"):
        out = _power(law[:top], m, law.size, True)
    out = np.concatenate((out, np.zeros(law.size - out.size)))
    out[m * (top - 1) + 1 :] = 0.0
    return out


def _pair_charge(sigma: float, t: int, log_b: float) -> float:
    """Upper bound on ``P_2(two coordinates above e^{log_b})``: a union over pairs (both
    in the record's 2-subset, one, none)."""
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    zs = -(log_b - mu0 - 1.0 / sigma**2) / s0
    zu = -(log_b - mu0) / s0
    ps = float(special.ndtr(zs)) * (1.0 + float(_err(np.array([zs]))[0]))
    pu = float(special.ndtr(zu)) * (1.0 + float(_err(np.array([zu]))[0]))
    return (ps * ps + 2 * (t - 2) * ps * pu + (t - 2) * (t - 3) / 2 * pu * pu) * (1 + _OPS)


def _second_cut(sigma: float, t: int, charge: float) -> tuple[float, float]:
    """``(log b, charge)``: the least ``b`` (bisection) whose :func:`_pair_charge` is
    ``<= charge``, and that charge."""
    mu0, s0 = -0.5 / sigma**2, 1.0 / sigma
    lo, hi = mu0, mu0 + 40.0 * s0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _pair_charge(sigma, t, mid) > charge else (lo, mid)
    return hi, _pair_charge(sigma, t, hi)


def _settings(sigma: float, t: int) -> tuple[float, float, float, float, float]:
    """``(dl, coarse, fine, h, charge)``: the M cells' log step, the log step of the cuts
    the others' law is rebuilt at (``fine`` above the median of M), the lattice step and
    the pair charge (measured: docs/theory/allocation_k_of_t.md)."""
    var = math.expm1(1.0 / sigma**2)
    # below 0.65 a coarse lattice and a larger pair charge (sigma 0.6, T 100, delta 1e-6:
    # 5.6961 in 4.9 CPU s against 5.7146 in 39 s with the settings below; the charge
    # 1e-8 leaves delta <= 1e-8 to the blocks); cuts every 0.1 above the median of M
    # (session 20: 5.6854 against 5.6960 at 0.25, +13 % CPU; T 5: 11.3326 against
    # 11.3547; sigma 0.5, T 10: 13.2681 against 13.2918)
    if sigma < 0.65:
        return 2e-3, 0.25, 0.1, 4.0 * max(1.0, var / 58.6), 1e-8
    if t < 50:
        return 1e-3, 0.05, 0.05, 0.15 * max(1.0, var / 2.0), _CHARGE
    # sigma 1, T 100, delta 1e-6: cuts 0.1 above the median of M give 1.53204 (0.97 %
    # above the lower end) in 8.4 CPU s, against 1.53330 (1.05 %) in 4.9 s at 0.25
    # everywhere and 1.53204 in 10.3 s at 0.1 everywhere (issue 39 (b))
    return 1e-3, 0.25, 0.1, 0.15 * max(1.0, var / 2.0), _CHARGE


def k2_remove_atoms(
    sigma: float, steps: int, *, progress: bool = False
) -> tuple[np.ndarray, np.ndarray, float]:
    """``(values, q, charge)``: atoms of an upper bound on the remove direction.

    For every ``gamma >= 0``,
    ``H_gamma(P_2 || Q) <= sum_i q_i (values_i - gamma)_+ + charge`` (module, 1.-3.;
    where :func:`uses_three`, Proposition 6's (max, second, sum) law of
    :mod:`.random_allocation_k2_three`).

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0.
    steps : int
        Steps per epoch ``T``, >= 2 (at ``T = 2`` the bound is the exact pair, a
        Gaussian: no amplification).
    progress : bool, default False
        Show a ``tqdm`` bar after :data:`PROGRESS_DELAY` seconds.

    Returns
    -------
    tuple
        Values (sorted, rounded up onto a log grid), their Q-masses and the charge.

    Examples
    --------
    >>> v, q, c = k2_remove_atoms(1.0, 3)
    >>> bool(float(q @ v) + c >= 1.0)
    True
    """
    sigma = check_positive("sigma", sigma)
    t = check_count(steps, "steps")
    if t < K2_MIN_STEPS:
        raise ValueError(f"steps must be >= {K2_MIN_STEPS} for the direct k = 2 bound, got {t}")
    key = (sigma, t)
    if key not in _ATOMS:
        if uses_three(sigma, t):
            from .random_allocation_k2_three import three_atoms

            _ATOMS[key] = three_atoms(sigma, t, progress=progress)
        else:
            _ATOMS[key] = _build(sigma, t, progress)
    return _ATOMS[key]


def uses_three(sigma: float, t: int) -> bool:
    """Whether :func:`k2_remove_atoms` builds Proposition 6's (max, second, sum) law
    (:mod:`.random_allocation_k2_three`) instead of Proposition 3's: ``T >= 3`` and sigma
    below 0.65, or below 0.8 at ``T < 50``, where Proposition 3's bracket is wide and
    the law cheap enough; the common settings keep Proposition 3's cost (sigma 0.6,
    T 100, delta 1e-6: 5.6154 against 5.6854; docs/theory/allocation_k_of_t.md).

    Examples
    --------
    >>> uses_three(0.6, 100), uses_three(1.0, 100)
    (True, False)
    """
    return t >= 3 and (sigma < 0.65 or (sigma < 0.8 and t < 50))


#: built atoms by (sigma, T)
_ATOMS: dict[tuple[float, int], tuple[np.ndarray, np.ndarray, float]] = {}


def _bin_cells(
    tail: float, hist: np.ndarray, law: np.ndarray, r: np.ndarray, m: np.ndarray,
    w: np.ndarray, sel: np.ndarray, t: int, off: int, *, drop: float = _DROP,
    ops: float = _OPS, dlog: float = _DLOG,
) -> float:
    """The M cells ``sel`` (upper ends ``m``, Q-masses ``w``) against the others' lattice
    law ``law`` on the values ``r``: ``L'(m_j, r)`` binned into ``hist`` (log grid of
    step ``dlog``, index ``off`` at 1, rounded up by ``1 + ops``), and ``tail`` plus the
    charge for the M cells and lattice entries of mass below ``drop`` (module, 2.-3.)."""
    tt = t * (t - 1)
    ratio = (t - 2) / (t - 1)
    nbin = hist.size
    er, er2 = float(law @ r), float(law @ (r * r))
    # M cells of tiny mass: charged E[L'(m_j, R)] in full
    tiny = sel & (w < drop)
    tail += (2 * float(w[tiny] @ m[tiny]) * er + float(w[tiny].sum()) * er2 * ratio) / tt
    sel = sel & ~tiny
    if not sel.any():
        return tail
    keep = law > drop
    rr, pr = r[keep], law[keep]
    pd, rd = law[~keep], r[~keep]
    tail += (
        2 * float(w[sel] @ m[sel]) * float(pd @ rd)
        + float(w[sel].sum()) * float(pd @ (rd * rd)) * ratio
    ) / tt
    idx = np.flatnonzero(sel)
    for ch in np.array_split(idx, max(1, idx.size * rr.size // 4_000_000)):
        mj, wj = m[ch], w[ch]
        lv = (2.0 * mj[:, None] * rr[None, :] + (rr * rr * ratio)[None, :]) / tt
        lv = np.maximum(lv * (1.0 + ops), 1e-300)  # 0 goes up to the grid's least
        ix = np.ceil(np.log(lv) / dlog).astype(np.int64) + off
        ix = np.clip(ix, 0, nbin - 1)
        hist += np.bincount(
            ix.ravel(), weights=(wj[:, None] * pr[None, :]).ravel(), minlength=nbin
        )
    return tail


def _layout(sigma: float, t: int) -> tuple:
    """``(levels, w, m, cuts, lb, tail, n, h)``: the M cells (log upper ends, Q-mass
    bounds, upper ends rounded up), the cuts the others' law is rebuilt at, the second
    cut, the charges so far, the lattice length and step (module, 2.-3.)."""
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    dl, coarse, fine, h, charge = _settings(sigma, t)
    lmax = 0.5 / sigma**2 + 8.0 / sigma  # shifted log Y 8 sd above its mean
    lb, tail = _second_cut(sigma, t, charge)
    n = 1 << math.ceil(math.log2((t - 1) * math.exp(lb) / h + t + 2))
    lmin = mu0 + s0 * float(special.ndtri(1e-18 ** (1.0 / t)))  # Q(M <= e^lmin) ~ 1e-18
    levels = np.arange(lmin, lmax + dl, dl)
    w = _max_cell_weights(sigma, t, levels)
    m = np.exp(levels) * (1.0 + 1e-15)  # each cell's upper end, rounded up
    # P_2(M > e^lmax) <= 2 P(shifted > .) + (T - 2) P(unshifted > .)
    zs = (lmax - (mu0 + 1.0 / sigma**2)) / s0
    zu = (lmax - mu0) / s0
    top_charge = 2.0 * special.ndtr(-zs) * (1 + _err(np.array([zs]))[0])
    top_charge += (t - 2) * special.ndtr(-zu) * (1 + _err(np.array([zu]))[0])
    tail += float(top_charge)
    cuts = np.arange(lmin + coarse, levels[-1] + coarse, coarse)
    if fine < coarse:  # finer above the median of M (Q(M <= e^l) = 1/2)
        cuts = cuts[cuts < mu0 + s0 * float(special.ndtri(0.5 ** (1.0 / t)))]
        cuts = np.concatenate((cuts, np.arange(cuts[-1] + fine, levels[-1] + fine, fine)))
    if cuts[-1] < levels[-1]:  # every M cell must be taken by a cut
        cuts = np.append(cuts, levels[-1])
    return levels, w, m, cuts, lb, tail, n, h


def _cut_cells(levels: np.ndarray, cuts: np.ndarray, lb: float):
    """``(sel, cut)`` per cut: the M cells it takes and the others' cut ``min(c, lb)``."""
    c_lo = -np.inf
    for c in cuts:
        sel = (levels > c_lo) & (levels <= c + 1e-12)
        c_lo = c + 1e-12
        yield sel, min(c, lb)
    if c_lo < levels[-1]:
        raise ArithmeticError("an M cell was left out of the k = 2 law")


def k2_atoms_mass(sigma: float, steps: int, *, stop: float = math.inf) -> float:
    """The P-mass ``sum_i q_i v_i + charge`` that Proposition 3's law would carry,
    predicted without building the law (a fraction of a CPU second; where
    :func:`uses_three`, :func:`k2_remove_atoms` builds Proposition 6's law instead, of
    smaller mass: sigma 0.5, T 10 carries 1.11 against 1.48).

    The exact pair's P-mass is ``E_Q[Lambda] = 1``; the atoms carry ``E[L'(M, R)]`` over
    the same M cells and lattice laws (module, 1.-3.), which needs only each lattice
    law's mean and variance (``E[R] = (T-1) mu``, ``E[R^2] = (T-1) var + (T-1)^2 mu^2``),
    not its convolution power.  Above 1 it is the Cauchy-Schwarz excess
    ``(T-2) E[Var(Y | Y <= M)] / (T (T-1))`` plus the lattice's (below sigma 0.65 mostly
    the lattice's: sigma 0.5, T 5 carries 1.843 since session 20's finer cuts, of which
    Cauchy-Schwarz about 0.07);
    truncating the atoms back to mass 1 (module, 4.) keeps the highest values.  A
    diagnostic, an estimate of the built law's mass (its outward roundings and dropped
    cells left out): a large mass did not make the route lose (docs/theory/
    allocation_k_of_t.md, "Below sigma 0.65 at small T").

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0.
    steps : int
        Steps per epoch ``T``, >= 2.
    stop : float, default inf
        Return as soon as the running sum exceeds this.

    Returns
    -------
    float

    Examples
    --------
    >>> bool(1.0 < k2_atoms_mass(1.0, 100) < 1.1)
    True
    """
    sigma = check_positive("sigma", sigma)
    t = check_count(steps, "steps")
    if t < K2_MIN_STEPS:
        raise ValueError(f"steps must be >= {K2_MIN_STEPS} for the direct k = 2 bound, got {t}")
    levels, w, m, cuts, lb, total, n, h = _layout(sigma, t)
    r = np.arange(n) * h
    moments: dict[float, tuple[float, float]] = {}
    # the top cells carry most of the excess: take them first, so that `stop` cuts early
    for sel, cut in reversed(list(_cut_cells(levels, cuts, lb))):
        if not sel.any():
            continue
        if cut not in moments:
            law = _term_law(sigma, math.exp(cut), h, n)
            mu = float(law @ r)
            var = max(float(law @ (r * r)) - mu * mu, 0.0)
            moments[cut] = ((t - 1) * mu, (t - 1) * var + ((t - 1) * mu) ** 2)
        er, er2 = moments[cut]
        total += float(w[sel] @ (2 * m[sel] * er + er2 * (t - 2) / (t - 1))) / (t * (t - 1))
        if total > stop:
            break
    return total


def _build(sigma: float, t: int, progress: bool) -> tuple[np.ndarray, np.ndarray, float]:
    levels, w, m, cuts, lb, tail, n, h = _layout(sigma, t)
    nbin = math.ceil((math.log(2 * m[-1] * n * h + (n * h) ** 2) + 40.0) / _DLOG) + 2
    off = math.ceil(40.0 / _DLOG)  # log-grid index 0 is e^{-40}; values below go up to it
    hist = np.zeros(nbin)
    r = np.arange(n) * h
    cache: dict[float, np.ndarray] = {}
    from tqdm import tqdm

    with tqdm(
        total=cuts.size,
        desc=f"random-allocation k=2 law (T={t})",
        delay=PROGRESS_DELAY,
        disable=_bar_disabled(progress),
        leave=False,
    ) as bar:
        for sel, cut in _cut_cells(levels, cuts, lb):
            bar.update(1)
            if not sel.any():
                continue
            if cut not in cache:
                cache.clear()
                cache[cut] = _sum_power(_term_law(sigma, math.exp(cut), h, n), t - 1)
            law = cache[cut]
            tail = _bin_cells(tail, hist, law, r, m, w, sel, t, off)
    # bincount's float sums: a few ulps per entry added, relative
    hist *= 1.0 + _OPS
    nz = np.flatnonzero(hist > 0)
    vals = np.exp((nz - off) * _DLOG)
    return vals, hist[nz], float(tail) * (1.0 + _OPS)


def _truncated_remove(vals: np.ndarray, q: np.ndarray, charge: float) -> AtomicLossLaw:
    """The remove law of the probability pair of module 4.: the highest atoms until their
    P-mass is ``1 - charge`` (the last in part, rounded up), the rest of Q's mass at
    loss ``-inf``, the charge at ``+inf``."""
    need = 1.0 - min(charge, 1.0)
    pm = q * vals
    order = np.argsort(vals)[::-1]
    cum = np.cumsum(pm[order])
    if cum[-1] < need * (1.0 + 1e-9):
        raise ArithmeticError("the k = 2 atoms carry less than the exact pair's mass")
    j = int(np.searchsorted(cum, need, side="left"))
    before = float(cum[j - 1]) if j > 0 else 0.0
    frac = min(1.0, (need - before) / float(pm[order[j]]) * (1.0 + 1e-9))
    keep = order[: j + 1]
    p = pm[keep].copy()
    p[-1] *= frac
    qk = float(q[keep[:-1]].sum()) + frac * float(q[keep[-1]])
    return AtomicLossLaw(
        losses=np.log(vals[keep]), p=p, inf_mass=min(charge, 1.0),
        q_neg_inf_mass=max(0.0, 1.0 - qk),
    )


def _identity() -> AtomicLossLaw:
    """The law of a pair of equal measures (no privacy loss)."""
    return AtomicLossLaw(losses=np.zeros(1), p=np.ones(1))


class AllocationK2Remove(Mechanism):
    """The remove direction of one 2-of-T allocation epoch, bounded directly (module).

    Its add direction is the identity; the engine also reads the add direction off the
    swapped remove law (valid: module, 4.), which is loose (the atom at ``v = 0``), so
    :func:`allocation_k2_pair` composes it with the blocks' add laws.

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0.
    steps : int
        Steps per epoch ``T``, >= 2.
    progress : bool, default True
        Progress bar while the law is built.
    envelope : bool, default False
        True: the law is the envelope of these atoms and the blocks (Proposition 5,
        :mod:`.random_allocation_k2_hull`), for several epochs; False: the truncated
        atoms (module, 4.), which one epoch reads identically in the tail.

    Examples
    --------
    >>> bool(AllocationK2Remove(1.0, 3, progress=False).epsilon(1e-3) > 0)
    True
    """

    declares = Capabilities(loss_laws=True)
    brackets_dominating_pair = True

    def __init__(
        self, sigma: float, steps: int, *, progress: bool = True, envelope: bool = False
    ) -> None:
        self.sigma = check_positive("sigma", sigma)
        self.steps = check_count(steps, "steps")
        for name, value in (("progress", progress), ("envelope", envelope)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be True or False, got {value!r}")
        self.progress = progress
        self.envelope = envelope

    def _loss_laws(self):
        cache = self._cache()  # kept: built once, not once per grid the engine tries
        if "laws" not in cache:
            atoms = k2_remove_atoms(self.sigma, self.steps, progress=self.progress)
            # the envelope of these atoms and the blocks (Proposition 5): below both,
            # and below the truncated atoms of module, 4. (equal to them in the tail,
            # which is all one epoch reads; the engine's grid for it differs, by up to
            # 5e-6 relative at sigma 0.6, T 5), so only several epochs use it (sigma 1,
            # T 100, E 5: 2.9024 against 3.0003)
            if self.envelope:
                law = k2_envelope_law(self.sigma, self.steps, atoms, _DLOG, self.progress)
            else:
                law = _truncated_remove(*atoms)
            cache["laws"] = law, _identity()
        return cache["laws"]

    def __repr__(self) -> str:
        extra = ", envelope=True" if self.envelope else ""
        return f"AllocationK2Remove(sigma={self.sigma}, steps={self.steps}{extra})"


class _AddDirectionOnly(Mechanism):
    """``inner``'s add direction with the identity as its remove direction.

    Only a factor of :func:`allocation_k2_pair`, **not a bound on its own**: the engine
    also bounds a mechanism's add direction by its swapped remove law (a loss law must
    dominate at every real epsilon), which for the identity is 0.  In the route the
    composed remove law is :class:`AllocationK2Remove`'s, which does dominate at every
    ``gamma >= 0`` (module, 4.), so both readings of the composition are bounds.
    """

    declares = Capabilities(loss_laws=True)
    brackets_dominating_pair = True

    def __init__(self, inner: Mechanism) -> None:
        self.inner = inner

    def _loss_laws(self):
        return _identity(), self.inner._loss_laws()[1]

    def __repr__(self) -> str:
        return f"_AddDirectionOnly({self.inner!r})"


def allocation_k2_pair(sigma: float, steps: int, epochs: int = 1, *, progress: bool = True):
    """The direct k = 2 route: per epoch, :class:`AllocationK2Remove` (remove direction)
    and the add directions of Proposition 1's two blocks, composed over ``epochs`` by
    the engine.

    Parameters
    ----------
    sigma : float
        Noise multiplier, >= :data:`K2_MIN_SIGMA`.
    steps : int
        Steps per epoch ``T``, >= 3.
    epochs : int, default 1
        Epochs, >= 1.
    progress : bool, default True
        Progress bars while the laws are built.

    Returns
    -------
    Mechanism
        A composition whose ``epsilon`` / ``delta`` are sound upper bounds.

    Examples
    --------
    >>> run = allocation_k2_pair(1.0, 3, progress=False)
    >>> bool(0 < run.epsilon(1e-3) < 10)
    True
    """
    from .compose import compose

    s = check_positive("sigma", sigma)
    t = check_count(steps, "steps")
    e = check_count(epochs, "epochs")
    if t < K2_MIN_STEPS:
        raise ValueError(f"steps must be >= {K2_MIN_STEPS} for the direct k = 2 bound, got {t}")
    half, rest = divmod(t, 2)
    parts = [AllocationK2Remove(s, t, progress=progress, envelope=e > 1)]
    counts = [e]
    blocks = [(half, 2 - rest), (half + 1, rest)]
    for size, count in blocks:
        if count:
            parts.append(_AddDirectionOnly(AllocationEpochPair(s, size, progress=progress)))
            counts.append(count * e)
    return compose(parts, counts=counts)
