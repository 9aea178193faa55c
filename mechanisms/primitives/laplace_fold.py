"""The ``k``-fold composition of one Laplace mechanism, in closed form with a certified error.

With ``e = 1/b`` (the pure epsilon) the privacy loss of one Laplace mechanism under
``P`` (see :mod:`~dpacct.mechanisms.primitives.laplace`) has an atom ``1/2`` at ``+e``,
an atom ``e^{-e}/2`` at ``-e`` and the density ``exp((l - e)/2) / 4`` on ``(-e, e)``.
Written as ``dP = e^{l/2} dmu``, the measure ``mu`` is symmetric: atoms ``a = e^{-e/2}/2``
at ``+-e`` and the uniform density ``a / 2`` on ``(-e, e)`` (mass ``u = e a``).  The loss
of ``k`` runs is a sum ``S``; ``dP_S = e^{s/2} dmu^{*k}`` and, the pair being symmetric
(``Q``'s loss law is the mirror of ``P``'s),

    ``delta(eps) = E_P[(1 - e^{eps - S})_+]
    = int_{s > eps} 2 e^{eps/2} sinh((s - eps)/2) dmu^{*k}(s)``.

``mu^{*k}`` is a finite mixture: ``m`` uniform draws and ``k - m`` atoms of which ``n``
are ``+e``, with weight ``w = C(k, m) C(k - m, n) a^{k-m} u^m``, atom sum
``c = e (2n - k + m)`` and ``T``, the sum of ``m`` uniforms on ``(-e, e)``, whose density
is a B-spline ``f_m(t) = (2e)^{-m} sum_r (-1)^r C(m, r) (q_r - t)_+^{m-1} / (m-1)!``,
``q_r = e (m - 2r)`` (Irwin-Hall, mirrored; Feller 1971, vol. II, I.9, Theorem 1a).
Per cell ``(m, n)``:

* ``c - m e >= eps`` (the cell lies above ``eps``): the integrand needs no ``( )_+`` and
  ``E[e^{T/2}] = E[e^{-T/2}] = (sinh(e/2) / (e/2))^m``, so the cell is
  ``w (sinh(e/2)/(e/2))^m e^{c/2} (1 - e^{eps - c})``;
* ``c + m e <= eps``: nothing;
* otherwise (the cell straddles ``eps``; ``a = eps - c``): with the Beta integral
  ``int_0^x (x - v)^j v^{m-1}/(m-1)! dv = x^{j+m} j!/(j+m)!`` on the Taylor series of
  ``sinh``, each B-spline piece integrates to ``e^{eps/2} (2e)^{-m} 2^m Phi_m(y_r)`` with
  the positive series ``Phi_m(y) = 2 sum_i y^{m+1+2i} / (m+1+2i)!`` at
  ``y_r = (m e - |a| - 2 e r) / 2``; for ``a >= 0`` the cell is
  ``w e^{-m} e^{eps/2} sum_{r: y_r > 0} (-1)^r C(m, r) Phi_m(y_r)`` (the pieces right of
  ``eps``), for ``a < 0`` the full cell above plus the same sum (the pieces left of
  ``eps`` integrate ``-2 sinh``, taken from the whole).  Only ``r < m/2`` enter, so the
  alternating sums are short.

Cells with more than ``M`` uniform draws are bounded by their ``P``-mass (the integrand
is at most 1), ``P(m > M)`` a binomial tail with success ``(1 - e^{-e})/2``; ``M`` is the
least whose tail is below ``2^-40 delta``.  Every term's float error is bounded and
added (:func:`laplace_fold_delta_up`): the log-weights' round-off, the series'
truncation, the alternating sums' cancellation (``|term|`` summed beside each sum) and
the offsets ``y`` and ``eps - c``.  ``1/b`` is rounded up first: Laplace noise of a
smaller scale dominates (``Lap(b) = Lap(b') + `` an independent mixture of 0 and
``Lap(b)`` for ``b' < b``: the characteristic functions' ratio
``(1 + b'^2 t^2)/(1 + b^2 t^2)`` is that mixture's), so the curve at the rounded-up
``e`` is above the true one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from dpacct.accountant._rounding import sum_up
from dpacct.accountant.serialization import register_mechanism
from dpacct.accountant.transformers.compose import ComposedMechanism
from dpacct.accountant.validation import check_positive

from .laplace import LaplaceMechanism, laplace_epsilon0_up

__all__ = [
    "LaplaceComposition",
    "laplace_fold_delta_up",
    "laplace_fold_epsilon_up",
]

#: the most uniform draws per cell (``C(50, 25)`` is an exact float) and the most cells
_MAX_DRAWS = 50
_MAX_CELLS = 60_000
#: each term's relative float error beyond the log-weights' (exp, expm1, products, sums)
_TERM_ULPS = 2.0**-45
#: the tail of more than ``M`` draws is kept below this share of the target delta
_TAIL_SHARE = 2.0**-36
#: Newton steps before the search settles for its last certified point
_MAX_STEPS = 40
#: the search stops at a certified point within this share of delta, aiming at this one
_CLOSE = 2.0**-24
_AIM = 2.0**-27
#: straddling cells lighter than this share of delta are bounded by their mass
_FLOOR_SHARE = 2.0**-50


def _tail_draws(e0: float, k: int, share: float) -> tuple[int, float] | None:
    """The least ``M`` whose Chernoff bound on ``P(more than M uniform draws)`` is at most
    ``share``, and that bound; ``None`` past :data:`_MAX_DRAWS`.

    The draws are ``Binomial(k, p)``, ``p = (1 - e^{-e})/2``, and
    ``P(X >= j) <= exp(-k D(j/k || p))`` for ``j >= k p`` (Chernoff 1952; Hoeffding 1963,
    Theorem 1), ``D`` the Bernoulli relative entropy; rounded up by ``2^-40``."""
    pc = -0.5 * math.expm1(-e0)
    log_share = math.log(share)
    for j in range(max(1, math.ceil(k * pc)), min(k, _MAX_DRAWS + 1) + 1):
        log_tail = _log_tail(k, pc, j)
        if log_tail <= log_share:
            return j - 1, math.exp(log_tail) * (1.0 + 2.0**-40)
    if k <= _MAX_DRAWS:
        return k, 0.0
    return None


def _log_tail(k: int, pc: float, j: int) -> float:
    """The log of the Chernoff bound on ``P(X >= j)``, ``X ~ Binomial(k, pc)``,
    ``j >= k pc``, rounded up (see :func:`_tail_draws`)."""
    a = j / k
    rest = (1.0 - a) * math.log((1.0 - a) / (1.0 - pc)) if a < 1.0 else 0.0
    kl = a * math.log(a / pc) + rest
    return -k * kl + 2.0**-40 * (1.0 + k * kl)


def _setups_near(e0: float, k: int, share: float) -> list:
    """The setups ``(e, k, draws, tail)`` of :func:`_tail_draws`'s pick at ``share`` and
    its two neighbours (one draw fewer, one more), the feasible ones: every pick of a
    share within a few ulps of ``share`` is among them."""
    pick = _tail_draws(e0, k, share)
    if pick is None:
        return []
    pc = -0.5 * math.expm1(-e0)
    out = []
    for draws in (pick[0] - 1, pick[0], pick[0] + 1):
        if draws == pick[0]:
            tail = pick[1]
        elif draws >= k:
            tail = 0.0
        elif draws + 1 >= max(1, math.ceil(k * pc)) and draws >= 0:
            tail = math.exp(_log_tail(k, pc, draws + 1)) * (1.0 + 2.0**-40)
        else:
            continue
        if draws < 0 or draws > min(k, _MAX_DRAWS):
            continue
        if draws * e0 > 4.0 or (draws + 1) * (k + 1) > _MAX_CELLS:
            continue
        out.append((e0, k, draws, tail))
    return out


@lru_cache(maxsize=8)
def _log_factorials(k: int) -> np.ndarray:
    return np.array([math.lgamma(j + 1.0) for j in range(k + 1)])


@lru_cache(maxsize=8)
def _cells(e0: float, k: int, draws: int):
    """The cells ``(m, n)`` of ``mu^{*k}`` with ``m <= draws``, grouped by ``m`` (``n``
    ascending): per cell the log of its ``P``-mass (the cell above ``eps`` is that times
    ``1 - e^{eps - c}``), the log prefactor of its straddling sum, the masses' sums over
    ``n' >= n`` in the group (and those of ``mass e^{-c}``), the groups' starts, and a
    bound on the logs' round-off."""
    lfac = _log_factorials(k)
    sizes = k + 1 - np.arange(draws + 1)
    starts = np.concatenate(([0], np.cumsum(sizes)))
    m = np.repeat(np.arange(draws + 1), sizes)
    n = np.arange(starts[-1]) - np.repeat(starts[:-1], sizes)
    la = -0.5 * e0 - math.log(2.0)
    lu = math.log(e0) + la
    lmg = math.log(math.sinh(0.5 * e0) / (0.5 * e0))
    lw = (lfac[k] - lfac[m] - lfac[n] - lfac[k - m - n]) + (k - m) * la + m * lu
    c = e0 * (2 * n - k + m)
    log_mass = lw + m * lmg + 0.5 * c
    log_pref = lw - m * math.log(e0) + math.log(2.0)
    # every log is a sum of at most ten roundings of terms up to `mag` (lgamma within
    # 8 ulps of its value), so its error is below 2^-49 mag
    mag = 8.0 * lfac[k] + k * (abs(la) + abs(lu) + e0) + draws * (abs(math.log(e0)) + lmg) + 4.0
    mass = np.exp(log_mass)
    mass_c = np.exp(log_mass - c)
    # sums over n' >= n within each group (padded rows of k + 2, zeros past the group):
    # positive terms, each sum within (k + 1) 2^-53 of its value
    grid = np.zeros((2, draws + 1, k + 2))  # n reversed: column k + 1 - n
    grid[0, m, k + 1 - n] = mass
    grid[1, m, k + 1 - n] = mass_c
    np.cumsum(grid, axis=2, out=grid)
    tail1 = grid[0, :, ::-1]
    tail2 = grid[1, :, ::-1]
    # terms: the first omitted over the first kept is at most y^(2T) / (2T)! <= 2^-60
    ymax = 0.5 * draws * e0
    terms = 2
    while terms < _TERMS and (2 * terms * math.log(max(ymax, 1e-300))
                              - math.lgamma(2 * terms + 1.0) > -60 * math.log(2.0)):
        terms += 1
    return dict(c=c, log_mass=log_mass, log_pref=log_pref, tail1=tail1, tail2=tail2,
                starts=starts, log_err=2.0**-49 * mag, terms=terms, coef_t=_COEF_T[:terms],
                lead_m=_LEAD_M, cosh_max=math.cosh(ymax + 1e-9), lead=_LEAD, signed=_SIGNED,
                e0=e0, mm=np.arange(draws + 1), intervals={})


#: terms of the series Phi_m at most; the first omitted over the first kept is at most
#: ``y^(2 T) / (2 T)!``, below 2^-60 for ``y <= 2`` (checked in :func:`_setup`)
_TERMS = 16


def _tables():
    """``Phi_m``'s series coefficients ``(m+1)! / (m+1+2t)!`` (by term, then ``m``),
    ``log (m+1)!``, ``log m!`` and the signed binomials ``(-1)^r C(m, r)``,
    ``r <= m/2 + 1`` (exact: ``C(50, 25) < 2^53``), for ``m <= 50``."""
    js = range(_MAX_DRAWS + 1)
    coef = np.exp(np.array([[math.lgamma(j + 2.0) - math.lgamma(j + 2.0 + 2 * t) for j in js]
                            for t in range(_TERMS)]))
    lead = np.array([math.lgamma(j + 2.0) for j in js])
    lead_m = np.array([math.lgamma(j + 1.0) for j in js])
    width = _MAX_DRAWS // 2 + 2
    signed = np.array([[(-1.0) ** r * math.comb(j, r) if r <= j else 0.0 for r in range(width)]
                       for j in js])
    return coef, lead, lead_m, signed


_COEF_T, _LEAD, _LEAD_M, _SIGNED = _tables()


def _fold_delta(
    e0: float, k: int, draws: int, tail: float, eps: float, floor: float = 0.0
) -> tuple[float, float, float]:
    """``(delta, bound on its error, slope)`` at ``eps`` (see the module docstring); the
    slope ``d delta / d eps`` (not certified) steers the search.  Straddling cells whose
    ``P``-mass is below ``floor`` are bounded by that mass (the integrand is at most 1)."""
    t = _cells(e0, k, draws)
    rel = math.expm1(t["log_err"] + 2.0**-49 * abs(eps)) * 1.01 + _TERM_ULPS
    # offsets eps - c rounded by up to 2^-52 (|eps| + |c| + m e0): they move each
    # 1 - e^{eps - c} and each Phi's argument by at most that
    dy = 2.0**-52 * (abs(eps) + (k + draws) * e0 + 1.0)
    mm = t["mm"]
    x = eps / e0
    # group m's cells above eps: e (2n - k) >= eps; for m >= 1 one more cell is left to the
    # straddling sum (exact for any cell), so that no rounding files a straddling cell
    # above; for m = 0 a misfiled atom moves delta by mass * |eps - c|, within `rel`
    half = 0.5 * (k + x)
    first_above = np.full(draws + 1, math.floor(half) + 2.0)
    first_above[0] = math.ceil(half)
    first_above = np.minimum(np.maximum(first_above, 0), k - mm + 1).astype(np.int64)
    # straddling cells: m >= 1 and eps - m e < c < eps + m e
    lo_n = np.floor(0.5 * (k - 2 * mm + x)) - 1.0  # c + m e > eps from here (one spare)
    lo_n = np.maximum(lo_n, 0).astype(np.int64)
    cell = _interval(t, first_above, lo_n, floor)
    sum1, sum2 = cell["sum1"], math.exp(eps) * cell["sum2"]
    value = sum1 - sum2
    slope_d = -sum2
    err = (rel + (k + 2) * 2.0**-52) * (sum1 + sum2)
    if cell["light"] is not None:
        err += cell["light"] * (1.0 + rel)
    if cell["total"]:
        offs = eps - cell["c"]
        s = cell["me"] - np.abs(offs)
        # the live pieces r < s / (2e) of each row, flat
        nlive = np.where(s > 0.0, np.floor(s / (2.0 * e0)) + 1.0, 0.0).astype(np.int64)
        nlive = np.minimum(nlive, t["signed"].shape[1])
        pieces = _pieces(t, cell, nlive)
        fr, fm1, sg, cf = pieces["fr"], pieces["fm1"], pieces["sg"], pieces["cf"]
        y = 0.5 * (s[fr] - pieces["2e_rr"])
        live = y > 0.0
        yl = np.where(live, y, 1.0)
        # the series by Horner on y^2 (positive terms), its coefficients gathered by m
        y2 = yl * yl
        acc = cf[-1].copy()
        for j in range(cf.shape[0] - 2, -1, -1):
            acc *= y2
            acc += cf[j]
        phi = np.where(live, np.exp(fm1 * np.log(yl) - pieces["lead"]), 0.0) * acc
        # Phi_{m-1} ~ (m + 1) / y Phi_m: the slope steers the search only
        dphi = phi * fm1 / yl
        pref = np.exp(cell["log_pref"] + 0.5 * eps)
        pref_fr = pref[fr]
        pf = pref_fr * phi
        # Phi_m's slope is Phi_{m-1}(y) <= 2 cosh(y) y^m / m!, y <= s/2 in the row
        hs = np.maximum(0.5 * s, 0.0) + dy
        slope = np.exp(cell["ms"] * np.log(hs) - cell["lead_m"]) * t["cosh_max"]
        mag = float(np.dot(pieces["abs_sg"], pf)) + dy * float(np.dot(pref * slope,
                                                                      cell["abs_row"]))
        mass = cell["mass"]
        full = np.where(offs > 0.0, 0.0, mass * -np.expm1(np.minimum(offs, 0.0)))
        full_sum = float(full.sum())
        series = float(np.dot(sg, pf))
        value += series + full_sum
        sgn = np.sign(offs)[fr]
        slope_d += 0.5 * series - 0.5 * float(np.dot(sg * sgn, pref_fr * dphi))
        slope_d -= float(np.dot(mass, np.where(offs > 0.0, 0.0, np.exp(np.minimum(offs, 0.0)))))
        err += rel * (mag + full_sum) + 2.0 * dy * cell["mass_sum"]
    return value, err + tail, slope_d


#: index caches per setup (in its :func:`_cells` entry) at most this many entries
_CACHE_ENTRIES = 64


def _interval(t: dict, first_above: np.ndarray, lo_n: np.ndarray, floor: float) -> dict:
    """What :func:`_fold_delta` reads at one interval of ``eps`` (its cells above and
    the straddling rows depend on ``eps`` only through ``first_above`` and ``lo_n``),
    cached in the setup's entry: the groups' sums above, the straddling rows (those
    lighter than ``floor`` dropped, their mass summed), and the rows' gathered values."""
    key = (first_above.tobytes(), lo_n.tobytes(), floor)
    cache = t["intervals"]
    hit = cache.get(key)
    if hit is not None:
        return hit
    mm = t["mm"]
    out = {"sum1": float(t["tail1"][mm, first_above].sum()),
           "sum2": float(t["tail2"][mm, first_above].sum()), "light": None, "pieces": {}}
    cnt = np.maximum(first_above - lo_n, 0)
    cnt[0] = 0
    total = int(cnt.sum())
    if total:
        ms = np.repeat(mm, cnt)
        rows = np.repeat(t["starts"][:-1] + lo_n, cnt) + (
            np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt))
        if floor > 0.0:
            light = t["log_mass"][rows] < math.log(floor)
            if light.any():
                out["light"] = float(np.exp(t["log_mass"][rows[light]]).sum())
                rows, ms = rows[~light], ms[~light]
                total = rows.size
    out["total"] = total
    if total:
        mass = np.exp(t["log_mass"][rows])
        out.update(
            ms=ms, c=t["c"][rows], me=ms * t["e0"], log_pref=t["log_pref"][rows],
            lead_m=t["lead_m"][ms], abs_row=np.exp2(ms.astype(float)),  # sum_r C(m, r) <= 2^m
            mass=mass, mass_sum=float(mass.sum()))
    if len(cache) >= _CACHE_ENTRIES:
        cache.clear()
    cache[key] = out
    return out


def _pieces(t: dict, cell: dict, nlive: np.ndarray) -> dict:
    """The flat pieces ``(row, r)`` of the straddling rows, ``nlive[i]`` for row ``i``,
    and what they gather (the series' coefficients by ``m``, the signed binomials),
    cached per interval."""
    key = nlive.tobytes()
    cache = cell["pieces"]
    hit = cache.get(key)
    if hit is not None:
        return hit
    total = cell["total"]
    flat = int(nlive.sum())
    fr = np.repeat(np.arange(total), nlive)
    rr = np.arange(flat) - np.repeat(np.cumsum(nlive) - nlive, nlive)
    fm = cell["ms"][fr]
    sg = t["signed"][fm, rr]
    out = {"fr": fr, "fm1": fm + 1, "sg": sg, "abs_sg": np.abs(sg), "cf": t["coef_t"][:, fm],
           "lead": t["lead"][fm], "2e_rr": 2.0 * t["e0"] * rr}
    if len(cache) >= _CACHE_ENTRIES:
        cache.clear()
    cache[key] = out
    return out


_STEPS64 = np.arange(64, dtype=np.float64)


def _grid64(lo: float, hi: float) -> np.ndarray:
    """``np.linspace(lo, hi, 64)``, the same floats (``lo + i (hi - lo) / 63``, the last
    point ``hi``) without its generic dispatch."""
    step = (hi - lo) / 63.0
    if not step > 0.0:
        return np.linspace(lo, hi, 64)
    grid = _STEPS64 * step
    grid += lo
    grid[-1] = hi
    return grid


def _guess(setup, delta: float, ceiling: float) -> float:
    """A first epsilon: the root of the curve with each cell's uniform sum put at its
    centre (every cell an atom at ``c``), from its group sums on two grids of 64 points.
    Only a start for the search: nothing is certified here."""
    e0, k, draws, _ = setup
    t = _cells(e0, k, draws)
    mm = t["mm"][None, :]
    lo, hi = 0.0, ceiling
    for _ in range(2):
        grid = _grid64(lo, hi)
        col = np.ceil(0.5 * (k - mm + grid[:, None] / e0))
        col = np.minimum(np.maximum(col, 0), k + 1).astype(np.int64)
        curve = (t["tail1"][mm, col].sum(axis=1)
                 - np.exp(grid) * t["tail2"][mm, col].sum(axis=1))
        over = np.nonzero(curve > delta)[0]
        if over.size == 0:
            return 0.5 * (lo + hi)
        j = int(over[-1])
        if j + 1 >= grid.size:
            return hi
        lo, hi = float(grid[j]), float(grid[j + 1])
        d_lo, d_hi = float(curve[j]), float(curve[j + 1])
    if d_hi <= 0.0:
        return 0.5 * (lo + hi)
    w = (math.log(d_lo) - math.log(delta)) / (math.log(d_lo) - math.log(d_hi))
    return lo + w * (hi - lo)


def _setup(b: float, count: int, share: float):
    """``(e, draws, tail)`` for a delta target ``share / 2^-40``, or ``None`` where the
    method does not apply (too many draws or cells, or the series' argument past 2)."""
    e0 = laplace_epsilon0_up(b)
    pick = _tail_draws(e0, count, share)
    if pick is None:
        return None
    draws, tail = pick
    if draws * e0 > 4.0 or (draws + 1) * (count + 1) > _MAX_CELLS:
        return None
    return e0, count, draws, tail


def laplace_fold_delta_up(b: float, count: int, epsilon: float) -> float:
    """Sound upper bound on the ``count``-fold Laplace mechanism's delta at ``epsilon``.

    Parameters
    ----------
    b : float
        Noise scale per unit of L1 sensitivity, > 0 (pure epsilon ``1/b`` per run).
    count : int
        Runs, >= 1.
    epsilon : float
        >= 0.

    Returns
    -------
    float
        ``delta(epsilon)`` plus its certified float, truncation and tail error; ``nan``
        where the method does not apply (more than 50 uniform draws needed, a series
        argument past 2, or too many cells), which :class:`LaplaceComposition` answers
        by its PLD route.

    Notes
    -----
    Formula and argument in the module docstring: the loss law of one run (Koskela et
    al. 2020, Section 6) written as ``e^{l/2}`` times a symmetric measure, its ``k``-fold
    convolution a binomial mixture of lattice atoms and Irwin-Hall sums (Feller 1971,
    vol. II, I.9), integrated against ``2 sinh`` term by term.

    Examples
    --------
    >>> d = laplace_fold_delta_up(20.0, 100, 2.1932823)
    >>> bool(9.9998e-07 < d < 1e-06)
    True
    """
    check_positive("b", b)
    eps = float(epsilon)
    if not eps >= 0.0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    if eps >= sum_up([(count, laplace_epsilon0_up(b))]):
        return 0.0  # at or past the pure epsilon k / b (rounded up): no delta
    e0 = laplace_epsilon0_up(b)
    setup = _setup(b, count, 2.0**-40 * 1e-300)
    if setup is None:
        setup = _setup(b, count, 2.0**-40 * 1e-30)
    if setup is None:
        # the most draws that apply, their Chernoff tail the coarse part
        most = min(count, _MAX_DRAWS, math.floor(4.0 / e0), _MAX_CELLS // (count + 1) - 1)
        pc = -0.5 * math.expm1(-e0)
        if most < max(0, math.ceil(count * pc) - 1):
            return math.nan
        tail = 0.0 if most >= count else math.exp(_log_tail(count, pc, most + 1)) * (
            1.0 + 2.0**-40)
        setup = (e0, count, most, tail)
    best = math.inf
    value, err, _ = _fold_delta(*setup, eps)
    best = value + err
    # the setups the epsilon search picks at a delta near this bound (its tail at most
    # 2^-36 delta): delta(epsilon(d)) <= d holds where the search certified its point
    if math.isfinite(best) and best > 0.0:
        for near in _setups_near(e0, count, _TAIL_SHARE * best):
            if near[2] != setup[2]:
                value, err, _ = _fold_delta(*near, eps)
                best = min(best, value + err)
    if not math.isfinite(best):
        return math.nan
    return min(best, 1.0)


def laplace_fold_epsilon_up(b: float, count: int, delta: float) -> float:
    """Sound upper bound on the ``count``-fold Laplace mechanism's epsilon at ``delta``.

    The smallest epsilon found whose :func:`laplace_fold_delta_up`-style bound is at most
    ``delta``: a secant search on ``log delta`` bracketed by a bisection, each point's
    delta with its certified error, the tail of many uniform draws at most ``2^-40 delta``.

    Parameters
    ----------
    b : float
        Noise scale, > 0.
    count : int
        Runs, >= 1.
    delta : float
        In (0, 1).

    Returns
    -------
    float
        The epsilon, or ``nan`` where the method does not apply.

    Examples
    --------
    >>> eps = laplace_fold_epsilon_up(20.0, 100, 1e-6)
    >>> bool(2.1932808 < eps < 2.1932810)  # the PLD route's bracket is [2.1932658, 2.1932823]
    True
    """
    check_positive("b", b)
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    setup = _setup(b, count, _TAIL_SHARE * delta)
    if setup is None:
        return math.nan
    e0 = setup[0]
    ceiling = count * e0 * (1.0 + 2.0**-40)  # delta(k e) = 0: the tail and errors only
    x = _guess(setup, delta, ceiling)
    lo, hi = 0.0, ceiling
    zero_checked = False
    floor = _FLOOR_SHARE * delta
    bump = 1.0
    for _ in range(_MAX_STEPS):
        value, err, slope = _fold_delta(*setup, x, floor)
        if value + err <= delta:
            hi = x
            if value + err >= delta * (1.0 - _CLOSE):
                return x  # certified, and within 2^-24 of delta: far inside any grid's slack
        else:
            lo = x
        if value + err > delta and abs(value - delta) <= 2.0**-26 * delta:
            bump *= 4.0  # near but not yet certified: aim lower
        slack = bump * max(2.0 * err, _AIM * delta)
        if value > 0.0 and slope < 0.0 and slack < delta:
            # Newton on log delta, aimed at delta less twice the certified error (at tiny
            # delta that error can exceed delta: no aim then, the bisection steps)
            step = x - (math.log(value) - math.log(delta - slack)) * value / slope
        else:
            step = math.nan
        if step <= 0.0 and lo == 0.0 and not zero_checked:
            zero_checked = True
            v0, e0_err, _ = _fold_delta(*setup, 0.0)
            if v0 + e0_err <= delta:
                return 0.0
        x = step if lo < step < hi else 0.5 * (lo + hi)
    return hi


def _encode(run: LaplaceComposition) -> dict:
    mech, count = run.parts[0]
    return {"mechanism": mech, "count": int(count)}


def _decode(params: dict) -> LaplaceComposition:
    """``{"mechanism": <a laplace or replace_one_laplace>, "count": n >= 1}``, checked."""
    if set(params) != {"mechanism", "count"}:
        raise ValueError(
            "laplace_composition needs params {'mechanism': <laplace>, 'count': n}, got "
            f"keys {sorted(params)}"
        )
    mech, count = params["mechanism"], params["count"]
    if not isinstance(mech, LaplaceMechanism):
        raise ValueError(
            f"laplace_composition's mechanism must be a Laplace mechanism, got {mech!r}")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"laplace_composition's count must be an integer >= 1, got {count!r}")
    return LaplaceComposition(parts=((mech, count),))


@register_mechanism("laplace_composition", encode=_encode, decode=_decode)
@dataclass(frozen=True, repr=False)
class LaplaceComposition(ComposedMechanism):
    """``count`` runs of one Laplace mechanism, answered by the closed form.

    A :class:`~dpacct.accountant.ComposedMechanism` of the single part
    ``(mechanism, count)``: its ``epsilon`` and ``delta`` come from
    :func:`laplace_fold_epsilon_up` / :func:`laplace_fold_delta_up` (exact up to a
    certified error of about 1e-11 relative in delta), and from the composition's PLD
    route where the closed form does not apply (more than 50 uniform draws in play,
    e.g. ``1/b`` large with many runs).  Other queries are the composition's.

    Parameters
    ----------
    parts : tuple of (LaplaceMechanism, int)
        One pair: the Laplace mechanism (add/remove or replace-one, the same curves)
        and its count >= 1.

    Examples
    --------
    >>> from dpacct.mechanisms import LaplaceMechanism
    >>> run = LaplaceComposition(parts=((LaplaceMechanism(b=20.0), 100),))
    >>> bool(2.1932808 < run.epsilon(1e-6) < 2.1932810)
    True
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.parts) != 1 or not isinstance(self.parts[0][0], LaplaceMechanism):
            raise TypeError("LaplaceComposition takes one part: (LaplaceMechanism, count)")

    @property
    def _fold(self) -> tuple[float, int]:
        mech, count = self.parts[0]
        return mech.b, count

    def _fold_epsilon(self, delta: float) -> float:
        # the search's last resort is its ceiling k e (1 + 2^-40), above the pure epsilon
        # (where delta is 0): at tiny delta, where the certified error is as large as
        # delta, the pure epsilon is the better sound answer
        b, count = self._fold
        eps = laplace_fold_epsilon_up(b, count, delta)
        # below k e (1 - 2^-30) the fold is below the pure epsilon (k e rounded up): the
        # exact sum is computed only near it
        if math.isfinite(eps) and eps >= count * laplace_epsilon0_up(b) * (1.0 - 2.0**-30):
            eps = min(eps, self._pure_epsilon())
        return eps

    @property
    def _single(self) -> LaplaceMechanism | None:
        # one run: the mechanism's own closed form (exact, no certified fold error)
        mech, count = self.parts[0]
        return mech if count == 1 else None

    def _epsilon_upper(self, delta: float, tol: float | None) -> float:
        if self._single is not None:
            return float(self._single.epsilon(delta, tol=tol))
        eps = self._fold_epsilon(delta)
        return eps if math.isfinite(eps) else super()._epsilon_upper(delta, tol)

    def _epsilon_bounds(self, delta: float, tol: float | None) -> tuple[float, float]:
        if self._single is not None:
            lo, hi = self._single.epsilon_bounds(delta, tol=tol)
            return lo, hi
        # the PLD route's bracket, its upper end lowered to the closed form's
        lo, hi = super()._epsilon_bounds(delta, tol)
        eps = self._fold_epsilon(delta)
        return (lo, min(hi, eps)) if math.isfinite(eps) else (lo, hi)

    def delta(self, epsilon, *, tol: float | None = None):
        """Sound upper bound on delta at ``epsilon``: the smaller of the closed form with
        its certified error (:func:`laplace_fold_delta_up`) and the PLD route's bound.

        Parameters
        ----------
        epsilon : float or array_like
            >= 0.
        tol : float, optional
            Relative accuracy of the PLD route, where it answers.

        Returns
        -------
        float or numpy.ndarray
            A float for a scalar ``epsilon``, else an array of its shape.

        Examples
        --------
        >>> run = LaplaceComposition(parts=((LaplaceMechanism(b=20.0), 100),))
        >>> bool(run.delta(run.epsilon(1e-6)) <= 1e-6)
        True
        """
        if self._single is not None:
            return self._single.delta(epsilon, tol=tol)
        b, count = self._fold
        arr = np.asarray(epsilon, dtype=float)
        flat = arr.reshape(-1)
        if flat.size == 0 or not np.all(np.isfinite(flat)) or np.any(flat < 0.0):
            return super().delta(epsilon, tol=tol)
        fold = np.array([laplace_fold_delta_up(b, count, float(e)) for e in flat])
        # the smaller of two sound bounds: the PLD route's (a grid's certificate) and the
        # closed form's (nan where it does not apply)
        route = np.asarray(super().delta(epsilon, tol=tol), dtype=float).reshape(-1)
        out = np.fmin(fold, route)
        # pure DP: no delta at or past the pure epsilon (as Mechanism.delta)
        out = np.where(flat >= self._pure_epsilon(), 0.0, out).reshape(arr.shape)
        return float(out) if out.ndim == 0 else out
