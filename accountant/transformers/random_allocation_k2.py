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
from ..numerics import LazyBar
from ..validation import check_count, check_positive
from .random_allocation_k2_hull import _err, k2_envelope_law
from .random_allocation_k2_three import (  # noqa: F401  (shared: Proposition 3's pieces)
    _CHARGE,
    _DLOG,
    _DROP,
    _OPS,
    K2_MAX_STEPS,
    K2_MIN_SIGMA,
    K2_MIN_STEPS,
    _bin_cells,
    _cut_cells,
    _max_cell_weights,
    _pair_charge,
    _second_cut,
    _settings,
    _sum_power,
    _term_law,
    three_atoms,
    three_settings,
)
from .random_allocation_pld import PROGRESS_DELAY, AllocationEpochPair

__all__: list[str] = []


def k2_remove_atoms(
    sigma: float, steps: int, *, progress: bool = False, several: bool = False
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
    several : bool, default False
        The law is for several epochs (the envelope): where :func:`uses_three`, the
        split of ``M_2`` at 3.4 standard deviations instead of 4.1 (``three_settings``'s
        ``log_theta_epochs``: less P-mass in the bulk, which several epochs add up).

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
    three = uses_three(sigma, t)
    key = (sigma, t, bool(several) and three)
    if key not in _ATOMS:
        if three:
            theta = three_settings(sigma, t)["log_theta_epochs"] if several else None
            _ATOMS[key] = three_atoms(sigma, t, progress=progress, log_theta=theta)
        else:
            _ATOMS[key] = _build(sigma, t, progress)
    return _ATOMS[key]


def uses_three(sigma: float, t: int) -> bool:
    """Whether :func:`k2_remove_atoms` builds Proposition 6's (max, second, sum) law
    (:mod:`.random_allocation_k2_three`) instead of Proposition 3's: ``T >= 3`` and sigma
    below 0.65, or below 0.8 at ``T < 50``, where Proposition 3's bracket is wide and
    the law cheap enough; the common settings keep Proposition 3's cost (sigma 0.6,
    T 100, delta 1e-6: 5.5963 against 5.6854; docs/theory/allocation_k_of_t.md).

    Examples
    --------
    >>> uses_three(0.6, 100), uses_three(1.0, 100)
    (True, False)
    """
    return t >= 3 and (sigma < 0.65 or (sigma < 0.8 and t < 50))


#: built atoms by (sigma, T, several epochs' split)
_ATOMS: dict[tuple[float, int, bool], tuple[np.ndarray, np.ndarray, float]] = {}


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
    with LazyBar(
        total=cuts.size,
        desc=f"random-allocation k=2 law (T={t})",
        delay=PROGRESS_DELAY,
        progress=progress,
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
            atoms = self._atoms()
            # the envelope of these atoms and the blocks (Proposition 5): below both,
            # and below the truncated atoms of module, 4. (equal to them in the tail,
            # which is all one epoch reads; the engine's grid for it differs, by up to
            # 5e-6 relative at sigma 0.6, T 5), so only several epochs use it (sigma 1,
            # T 100, E 5: 2.9024 against 3.0003)
            if self.envelope:
                law = self._envelope_law(atoms)
            else:
                law = _truncated_remove(*atoms)
            cache["laws"] = law, _identity()
        return cache["laws"]

    def _atoms(self) -> tuple[np.ndarray, np.ndarray, float]:
        """The direct atoms (:func:`k2_remove_atoms`, split for several epochs where
        this pair is one of an envelope; the k = 3 subclass overrides it)."""
        return k2_remove_atoms(self.sigma, self.steps, progress=self.progress,
                               several=self.envelope)

    def _envelope_law(self, atoms) -> AtomicLossLaw:
        """Proposition 5's envelope of ``atoms`` and the blocks (:func:`k2_envelope_law`)."""
        return k2_envelope_law(self.sigma, self.steps, atoms, _DLOG, self.progress)

    def __repr__(self) -> str:
        extra = ", envelope=True" if self.envelope else ""
        return f"{type(self).__name__}(sigma={self.sigma}, steps={self.steps}{extra})"


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


#: the entries of the direct routes' pair functions' docstrings that do not depend on k
#: (``epochs``, ``progress``, the returned composition), filled in by :func:`_pair_doc`
_PAIR_SHARED = """epochs : int, default 1
        Epochs, >= 1.
    progress : bool, default True
        Progress bars while the laws are built.

    Returns
    -------
    Mechanism
        A composition whose ``epsilon`` / ``delta`` are sound upper bounds."""


def _pair_doc(func):
    """``func`` with ``{shared}`` in its docstring replaced by :data:`_PAIR_SHARED` (the
    pair functions at k = 2, 3 and >= 4 document the same ``epochs`` and ``progress``)."""
    if func.__doc__:  # (None under python -OO)
        func.__doc__ = func.__doc__.replace("{shared}", _PAIR_SHARED)
    return func


@_pair_doc
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
    {shared}

    Examples
    --------
    >>> run = allocation_k2_pair(1.0, 3, progress=False)
    >>> bool(0 < run.epsilon(1e-3) < 10)
    True
    """
    s = check_positive("sigma", sigma)
    t = check_count(steps, "steps")
    e = check_count(epochs, "epochs")
    if t < K2_MIN_STEPS:
        raise ValueError(f"steps must be >= {K2_MIN_STEPS} for the direct k = 2 bound, got {t}")
    return with_block_adds(AllocationK2Remove(s, t, progress=progress, envelope=e > 1), s, t,
                           2, e, progress)


def with_block_adds(remove: Mechanism, sigma: float, t: int, k: int, epochs: int,
                    progress: bool) -> Mechanism:
    """``remove`` (one epoch's remove direction, the identity as its add direction)
    composed over ``epochs`` with the add directions of Proposition 1's ``k`` blocks
    (``k - T mod k`` of ``floor(T / k)`` steps, ``T mod k`` of one more): the direct
    routes at k = 2 (:func:`allocation_k2_pair`), 3 and >= 4."""
    from .compose import compose

    q, r = divmod(t, k)
    parts, counts = [remove], [epochs]
    for size, count in ((q, k - r), (q + 1, r)):
        if count:
            parts.append(_AddDirectionOnly(AllocationEpochPair(sigma, size, progress=progress)))
            counts.append(count * epochs)
    return compose(parts, counts=counts)
