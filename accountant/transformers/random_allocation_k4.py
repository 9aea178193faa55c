"""A direct upper bound for k-of-T random allocation at any k: the (max, second, sum) law.

One epoch allocates the record to a uniform ``k``-subset of ``T`` Gaussian steps (noise
multiplier ``sigma``).  With ``Y_t = exp((x_t - 1/2) / sigma^2)`` i.i.d. log-normal under
``Q = N(0, sigma^2 I_T)`` (``E Y = 1``) the likelihood ratio of the exact pair is
``Lambda_k = e_k(Y) / C(T, k)`` (docs/theory/allocation_k_of_t.md, "The exact pair of one
epoch"; Proposition 1' there).  Proposition 9 of docs/theory/allocation_k_of_t.md ("k >= 4,
direct") is Proposition 7 (:mod:`.random_allocation_k3`) with ``k``'s value functions and
charges.  With ``M_1 >= M_2`` the two largest coordinates, ``R`` the sum of all but
``M_1``, ``R'`` of all but both, ``n = T - 1``, ``n' = T - 2`` and Maclaurin's inequality
``e_j(o) <= C(m, j) (s / m)^j`` for ``m`` non-negative reals of sum ``s``:

* ``M_2 <= theta``: ``e_k <= M_1 C(n, k-1) (R / n)^(k-1) + C(n, k) (R / n)^k``;
* ``M_2 > theta``: ``e_k <= M_1 M_2 C(n', k-2) (R' / n')^(k-2) + (M_1 + M_2) C(n', k-1)
  (R' / n')^(k-1) + C(n', k) (R' / n')^k``;

both increasing in the coordinates and increasing convex in the sum; the charges are
``P_k``'s unions over ``j``-sets of coordinates above a cut, ``sum_i C(k, i) C(T-k, j-i)
p_s^i p_u^(j-i)`` (``j = 2``: ``M_2`` above ``b``; ``3``: three above ``b'``; ``1``:
``M_1`` above the last cell).  At ``k = 3`` these are Proposition 7's.  The cells, their
Q-masses, the lattice laws of the others and every outward rounding are Proposition 6's
(:mod:`.random_allocation_k2_three`), on a coarser grid of M cells (:data:`_DL`: sigma 0.8,
T 50, k 4, delta 1e-6: 6.1817 in 6.6 CPU s against 6.1781 in 87.5 s at Proposition 6's).

The split ``theta`` is lower than at k = 3 (3 standard deviations of an unshifted
``log Y`` above its mean, not 4.1): at k >= 4 the first region's ``V_1`` lumps ``k - 1``
of the record's coordinates into ``R`` and loses to the blocks (importance sampling,
sigma 0.8, T 50, k 4, delta 1e-6: the pointwise bound crosses at 6.18 with 3.5 standard
deviations, 6.14 with 3, the blocks 6.30, the truth 5.80; docs/theory/allocation_k_of_t.md,
"k >= 4, direct").  Even so the law is several per cent above the truth: the
(max, second, sum) statistic cannot see the record's third and fourth coordinates.

The atoms go through Lemma 4 (one epoch) or Proposition 5 (several epochs: the envelope
with Proposition 1's ``k`` blocks); the add direction is the blocks'
(:func:`allocation_k_pair`).  Routed where :func:`k_tried`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..mechanism import Mechanism
from ..numerics import _bar_disabled
from ..validation import check_count, check_positive
from .random_allocation_k2 import _AddDirectionOnly
from .random_allocation_k2_hull import blocks_remove_atoms, envelope_remove_law
from .random_allocation_k2_three import (
    _DLOG,
    _OPS,
    _coarsen,
    _cut_cells,
    _joint_weights,
    _settings,
    _sum_power,
    _term_law,
)
from .random_allocation_k3 import AllocationK3Remove, _bin, _tails
from .random_allocation_pld import PROGRESS_DELAY, AllocationEpochPair

__all__: list[str] = []

#: the aims of the unions on two and three coordinates above the cuts b, b'
_CHARGE2 = 1e-9
_CHARGE3 = 1e-10
#: the split of M_2, in standard deviations of an unshifted log Y above its mean
THETA_SDS = 3.0
#: the log step of the M cells (Proposition 6's is 1e-3): each value is rounded up by at
#: most a factor (1 + dl)^2 through its cells' upper ends, i.e. epsilon by at most 2 dl, and
#: region 2 costs about 1 / dl^2
_DL = 4e-3
#: the least step of the second region's coarse lattice (a quarter of its standard
#: deviation where larger; sigma 2, T = k = 4, delta 1e-6: 6.518 at k = 3's 8, 5.078 at 1,
#: 5.029 at 0.1, the pointwise bound 5.00, the truth 4.880)
_STEP = 1.0


def union_charge(sigma: float, t: int, k: int, j: int, log_b: float) -> float:
    """Upper bound on ``P_k(j coordinates above e^{log_b})``: a union over ``j``-sets of
    coordinates, ``i`` of them among the record's ``k`` steps (``C(k, i) C(T-k, j-i)``
    sets, each of probability ``p_s^i p_u^(j-i)`` under every ``N(1_S, sigma^2 I)``).

    Examples
    --------
    >>> bool(union_charge(1.0, 10, 4, 2, 3.0) < union_charge(1.0, 10, 4, 2, 2.0))
    True
    """
    ps, pu = _tails(sigma, log_b)
    total = sum(math.comb(k, i) * math.comb(t - k, j - i) * ps**i * pu ** (j - i)
                for i in range(min(j, k) + 1))
    return total * (1.0 + _OPS)


def _least(sigma: float, t: int, k: int, j: int, charge: float) -> tuple[float, float]:
    """``(log b, charge)``: the least ``b`` (bisection) whose :func:`union_charge` on
    ``j``-sets is ``<= charge``, and that charge."""
    mu0, s0 = -0.5 / sigma**2, 1.0 / sigma
    lo, hi = mu0, mu0 + 40.0 * s0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if union_charge(sigma, t, k, j, mid) > charge else (lo, mid)
    return hi, union_charge(sigma, t, k, j, hi)


def value_coefficients(t: int, k: int, levels: int) -> list[float]:
    """``[c_0, ..., c_levels]``: Maclaurin's coefficients ``C(n, k-i) / n^(k-i) / C(T, k)``
    (``n = T - levels``) of the value function that keeps ``levels`` (1 or 2) coordinates:
    ``V = sum_i e_i(kept) c_i r^(k-i)``.

    Examples
    --------
    >>> value_coefficients(4, 4, 2)  # T = k: e_4 = M_1 M_2 y_3 y_4 <= M_1 M_2 R'^2 / 4
    [0.0, 0.0, 0.25]
    """
    n, ck = t - levels, math.comb(t, k)  # n >= k - 2 >= 1
    return [math.comb(n, k - i) / float(n) ** (k - i) / ck for i in range(levels + 1)]


def _first_region(tail, hist, law, r, m, w, sel, k, c, off, drop_w, drop_r) -> float:
    """M_2 <= theta: the M_1 cells ``sel`` (upper ends ``m``, Q-masses ``w``) against the
    others' ``(T-1)``-fold law ``law`` on ``r``: ``V_1 = c_1 m r^(k-1) + c_0 r^k`` binned;
    cells and entries of mass below ``drop_w`` / ``drop_r`` charged ``E[V_1]`` in full."""
    p1, p0 = r ** (k - 1), r**k
    idx = np.flatnonzero(sel)
    tiny = idx[w[idx] < drop_w]
    tail += float(w[tiny] @ (c[1] * m[tiny] * float(law @ p1) + c[0] * float(law @ p0)))
    idx = idx[w[idx] >= drop_w]
    keep = law > drop_r
    tail += float(w[idx] @ (c[1] * m[idx] * float(law[~keep] @ p1[~keep])
                            + c[0] * float(law[~keep] @ p0[~keep])))
    q1, q0, pr = c[1] * p1[keep], c[0] * p0[keep], law[keep]
    for ch in np.array_split(idx, max(1, idx.size * pr.size // 4_000_000)):
        _bin(hist, m[ch][:, None] * q1[None, :] + q0[None, :], w[ch][:, None] * pr[None, :],
             off)
    return tail


def _second_pairs(tail, hist, law, rv, m, w1, j, wj, dj, t, k, c, off, drop_w,
                  drop_r) -> float:
    """M_2 in cell ``j`` against every M_1 cell above it (and the diagonal):
    ``V_2 = c_2 b a r^(k-2) + c_1 (b + a) r^(k-1) + c_0 r^k`` at the cells' upper ends
    ``b >= a`` over the others' ``(T-2)``-fold law ``law`` on ``rv``; Q-masses ``T wj dF_i``
    and ``dj`` (Proposition 6, (4)); pairs and entries below ``drop_w`` / ``drop_r``
    charged ``E[V_2]`` in full."""
    a = float(m[j])
    b = np.append(m[j + 1 :], a)  # the diagonal last: both at most a_j
    wt = np.append(t * wj * w1[j + 1 :], dj) * (1.0 + _OPS)
    p2, p1, p0 = rv ** (k - 2), rv ** (k - 1), rv**k

    def mean(mass, sel=slice(None)):
        return (c[2] * a * float(mass @ p2[sel]), c[1] * float(mass @ p1[sel]),
                c[1] * a * float(mass @ p1[sel]) + c[0] * float(mass @ p0[sel]))

    tiny = wt < drop_w
    e2, e1, e0 = mean(law)
    tail += float(wt[tiny] @ (b[tiny] * (e2 + e1) + e0))
    b, wt = b[~tiny], wt[~tiny]
    if not b.size:
        return tail
    keep = law > drop_r
    e2, e1, e0 = mean(law[~keep], ~keep)
    tail += float(wt @ (b * (e2 + e1) + e0))
    q2 = (c[2] * a * p2 + c[1] * p1)[keep][None, :]
    q0 = (c[1] * a * p1 + c[0] * p0)[keep][None, :]
    pr = law[keep]
    for ch in np.array_split(np.arange(b.size), max(1, b.size * pr.size // 4_000_000)):
        _bin(hist, b[ch][:, None] * q2 + q0, wt[ch][:, None] * pr[None, :], off)
    return tail


def k_remove_atoms(
    sigma: float, steps: int, k: int, *, progress: bool = False, drop_w: float = 1e-22,
    drop_r: float = 1e-16, step: float = _STEP, log_theta: float | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """``(values, q, charge)``: for every ``gamma >= 0``, ``H_gamma(P_k || Q) <= sum_i q_i
    (values_i - gamma)_+ + charge`` (Proposition 9 of docs/theory/allocation_k_of_t.md;
    module docstring).

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0.
    steps : int
        Steps per epoch ``T``, >= ``k`` (at ``T = k`` the exact pair is a Gaussian).
    k : int
        Steps per record per epoch, >= 3 (at 3 the values are Proposition 7's).
    progress : bool, default False
        Show a ``tqdm`` bar after :data:`PROGRESS_DELAY` seconds.
    drop_w, drop_r, step : float, optional
        Cell pairs and lattice entries below these masses are charged ``E[value]`` in
        full; the least step of the second region's coarse lattice.
    log_theta : float, optional
        ``log`` of the split of ``M_2`` (default :data:`THETA_SDS` standard deviations
        above the mean of an unshifted ``log Y``).

    Returns
    -------
    tuple
        Values (sorted, rounded up onto a log grid), their Q-masses and the charge.

    Examples
    --------
    >>> v, q, c = k_remove_atoms(2.0, 4, 4)
    >>> bool(float(q @ v) + c >= 1.0)
    True
    """
    sigma = check_positive("sigma", sigma)
    t = check_count(steps, "steps")
    k = check_count(k, "k")
    if k < 3 or t < k:
        raise ValueError(f"k must be >= 3 and steps >= k for the direct bound, got k={k}, "
                         f"steps={t}")
    if log_theta is None:
        log_theta = -0.5 / sigma**2 + THETA_SDS / sigma
    key = (sigma, t, k, drop_w, drop_r, step, log_theta, _DL)
    if key not in _ATOMS:
        _ATOMS.clear()  # one law kept
        _ATOMS[key] = _build(sigma, t, k, progress, drop_w, drop_r, step, log_theta)
    return _ATOMS[key]


#: the last atoms built, by (sigma, T, k, settings)
_ATOMS: dict[tuple, tuple[np.ndarray, np.ndarray, float]] = {}


def _levels_and_cuts(sigma, t, k, lmax) -> tuple[np.ndarray, np.ndarray, float]:
    """Proposition 6's M cells (log upper ends), the cuts the others' law is rebuilt at,
    and its cell step."""
    s0, mu0 = 1.0 / sigma, -0.5 / sigma**2
    _, coarse, fine, _, _ = _settings(sigma, t)
    dl = _DL
    lmin = mu0 + s0 * float(special.ndtri(1e-18 ** (1.0 / t)))
    levels = np.arange(lmin, lmax + dl, dl)
    cuts = np.arange(lmin + coarse, levels[-1] + coarse, coarse)
    if fine < coarse:  # finer above the median of M
        cuts = cuts[cuts < mu0 + s0 * float(special.ndtri(0.5 ** (1.0 / t)))]
        cuts = np.concatenate((cuts, np.arange(cuts[-1] + fine, levels[-1] + fine, fine)))
    if cuts[-1] < levels[-1]:
        cuts = np.append(cuts, levels[-1])
    return levels, cuts, dl


def _build(sigma, t, k, progress, drop_w, drop_r, step, log_theta):
    h = _settings(sigma, t)[3]
    lb2, tail = _least(sigma, t, k, 2, _CHARGE2)  # M_2 above b
    lb3, ch3 = _least(sigma, t, k, 3, _CHARGE3)  # A_3
    tail += ch3
    levels, cuts, _ = _levels_and_cuts(sigma, t, k, 0.5 / sigma**2 + 8.0 / sigma)
    tail += union_charge(sigma, t, k, 1, float(levels[-1]))  # M_1 above the last cell
    jt = min(max(int(np.searchsorted(levels, log_theta)), 1), levels.size - 2)
    theta = float(levels[jt])
    jb = min(int(np.searchsorted(levels, lb2)), levels.size - 1)
    m = np.exp(levels) * (1.0 + 1e-15)
    w, w1, wg, diag = _joint_weights(sigma, t, levels, jt)
    n1 = 1 << math.ceil(math.log2((t - 1) * math.exp(theta) / h + t + 2))
    nb3 = 1 << math.ceil(math.log2((t - 2) * math.exp(lb3) / h + t + 2))
    # m_1 + m_2 + r <= big (r on the coarse lattice: at most one step above the sum),
    # so every value is <= e_k(.) / C(T, k) <= big^k / (k! C(T, k)) <= big^k: none clipped
    big = 2.0 * (max(n1 * h, nb3 * h) + max(step, 0.25 * nb3 * h) + m[-1])
    off = math.ceil(40.0 / _DLOG)
    hist = np.zeros(math.ceil((k * math.log(big) + 41.0) / _DLOG))
    r1 = np.arange(n1) * h
    c1, c2 = value_coefficients(t, k, 1), value_coefficients(t, k, 2)
    cut_list = list(_cut_cells(levels, cuts, theta))
    js = np.arange(jt + 1, jb + 1)
    from tqdm import tqdm

    with tqdm(
        total=len(cut_list) + js.size, desc=f"random-allocation k={k} law (T={t})",
        delay=PROGRESS_DELAY, disable=_bar_disabled(progress), leave=False,
    ) as bar:
        law, last = None, None
        for sel, cut in cut_list:  # region 1: M_2 <= theta
            bar.update(1)
            if not sel.any():
                continue
            if cut != last:
                law, last = _sum_power(_term_law(sigma, math.exp(cut), h, n1), t - 1), cut
            tail = _first_region(tail, hist, law, r1, m, w, sel, k, c1, off, drop_w, drop_r)
        cache: dict[float, tuple[np.ndarray, np.ndarray]] = {}
        ci = np.searchsorted(cuts, levels[js])  # region 2: theta < M_2 <= a_jb
        for j, cc in zip(js, ci, strict=True):
            bar.update(1)
            cut = min(float(cuts[min(cc, cuts.size - 1)]), lb3)
            if cut not in cache:
                cache.clear()
                lw = _sum_power(_term_law(sigma, math.exp(cut), h, nb3), t - 2)
                rv = np.arange(nb3) * h
                sd = math.sqrt(max(float(lw @ rv**2) - float(lw @ rv) ** 2, 0.0))
                cache[cut] = _coarsen(lw, h, max(step, h, 0.25 * sd))
            rv, lw = cache[cut]
            tail = _second_pairs(tail, hist, lw, rv, m, w1, int(j), float(wg[j]),
                                 float(diag[j]), t, k, c2, off, drop_w, drop_r)
    hist *= 1.0 + _OPS
    nz = np.flatnonzero(hist > 0)
    return np.exp((nz - off) * _DLOG), hist[nz], float(tail) * (1.0 + _OPS)


def k_tried(sigma: float, t: int, k: int) -> bool:
    """Whether the route is tried: ``k = 4`` where its law was measured below the blocks
    (delta 1e-6, one epoch, the remove law's epsilon against the blocks';
    docs/theory/allocation_k_of_t.md, "k >= 4, direct"): ``30 <= T <= 100`` at sigma
    0.75-1.05 (sigma 0.8, T 50: 6.1817 against 6.3049, T 100: 4.6232 against 4.7355;
    sigma 1: T 50 3.9425 against 4.0020, T 100 2.8147 against 2.8351), ``20 <= T < 30``
    at sigma 0.65-1.25 except 0.75-0.85 (sigma 1: 5.9725 against 6.0498; sigma 0.8:
    8.9596 against 8.8738, not tried; sigma 0.7: 11.7655 against 12.1723; 1.2: 4.4527
    against 4.4822) and at sigma
    0.65-0.75 from T 90 (sigma 0.7, T 100: 6.3505 against 6.4814).  Not tried where the
    blocks were tighter (sigma 0.7, T 50: 8.3382 against 8.3241; sigma 1.2, T 50: 2.8347
    against 2.8294; sigma 1, T 200: 1.9604 against 1.9569), nor at k >= 5, where the
    (max, second, sum) bound's own curve is above the blocks nearly everywhere (importance
    sampling) and its law was level with them where it was not (sigma 0.8, T 200, k 5:
    4.1705 against 4.1718, 42 CPU s).

    Examples
    --------
    >>> k_tried(0.7, 20, 4), k_tried(0.7, 50, 4), k_tried(1.0, 100, 5)
    (True, False, False)
    """
    if k != 4 or not (20 <= t <= 100 and 0.65 <= sigma <= 1.25):
        return False
    if t < 30:
        return not 0.75 <= sigma <= 0.85
    return 0.75 <= sigma <= 1.05 or (sigma < 0.75 and t >= 90)


def block_sizes(t: int, k: int) -> list[int]:
    """Proposition 1's ``k`` blocks of a ``k``-of-``t`` epoch."""
    q, r = divmod(t, k)
    return [q] * (k - r) + [q + 1] * r


class AllocationKRemove(AllocationK3Remove):
    """The remove direction of one k-of-T allocation epoch, bounded directly (module):
    :class:`.random_allocation_k3.AllocationK3Remove` with Proposition 9's atoms and the
    envelope with ``k`` blocks.  Its add direction is the identity; :func:`allocation_k_pair`
    composes it with the blocks' add laws.

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0.
    steps : int
        Steps per epoch ``T``, >= ``k``.
    k : int
        Steps per record per epoch, >= 3.
    progress : bool, default True
        Progress bar while the law is built.
    envelope : bool, default False
        True: the envelope with the ``k`` blocks (Proposition 5), for several epochs;
        False: the truncated atoms (Lemma 4).

    Examples
    --------
    >>> bool(AllocationKRemove(2.0, 4, 4, progress=False).epsilon(1e-3) > 0)
    True
    """

    def __init__(
        self, sigma: float, steps: int, k: int, *, progress: bool = True,
        envelope: bool = False,
    ) -> None:
        super().__init__(sigma, steps, progress=progress, envelope=envelope)
        self.k = check_count(k, "k")
        if self.k < 3 or self.steps < self.k:
            raise ValueError(f"k must be >= 3 and steps >= k for the direct bound, got "
                             f"k={k}, steps={steps}")

    def _atoms(self) -> tuple[np.ndarray, np.ndarray, float]:
        return k_remove_atoms(self.sigma, self.steps, self.k, progress=self.progress)

    def _envelope_law(self, atoms):
        laws = [AllocationEpochPair(self.sigma, s, progress=self.progress)._loss_laws()[0]
                for s in block_sizes(self.steps, self.k)]
        return envelope_remove_law(atoms, blocks_remove_atoms(laws, _DLOG))

    def __repr__(self) -> str:
        extra = ", envelope=True" if self.envelope else ""
        return f"AllocationKRemove(sigma={self.sigma}, steps={self.steps}, k={self.k}{extra})"


def allocation_k_pair(
    sigma: float, steps: int, k: int, epochs: int = 1, *, progress: bool = True
) -> Mechanism:
    """The direct route at ``k``: per epoch, :class:`AllocationKRemove` (remove direction)
    and the add directions of Proposition 1's ``k`` blocks, composed over ``epochs``.

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0.
    steps : int
        Steps per epoch ``T``, >= ``k``.
    k : int
        Steps per record per epoch, >= 3.
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
    >>> run = allocation_k_pair(2.0, 4, 4, progress=False)
    >>> bool(0 < run.epsilon(1e-3) < 10)
    True
    """
    from .compose import compose

    e = check_count(epochs, "epochs")
    remove = AllocationKRemove(sigma, steps, k, progress=progress, envelope=e > 1)
    parts: list[Mechanism] = [remove]
    counts = [e]
    sizes = block_sizes(remove.steps, remove.k)
    for size in sorted(set(sizes)):
        parts.append(_AddDirectionOnly(AllocationEpochPair(remove.sigma, size,
                                                           progress=progress)))
        counts.append(sizes.count(size) * e)
    return compose(parts, counts=counts)
