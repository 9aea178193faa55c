"""Two-band DP-MF under balls-in-bins: a certified bound by a transfer operator over the
cycle, tighter than the Gram domination of :mod:`.bandmf_balls_in_bins`.

For a two-band Toeplitz strategy ``C`` (first column ``(c0, c1) >= 0``) and cycle length
``k >= 2`` the balls-in-bins pair of :func:`.bandmf_balls_in_bins` has a likelihood ratio

    ``Z = (1/k) sum_s exp((c0 T_s + c1 T_{s+1 mod k} + [s = 0] c0 B) / sigma - G_ss / (2 sigma^2))``

in ``k + 1`` independent Gaussians: ``B`` (row 0's noise / sigma, the only row without
the second band) and ``T_r`` (the sum over the rows ``i >= 1``, ``i = r (mod k)``, of the
noise / sigma, ``N(0, N_r)``; the partial last cycle is in the counts ``N_r``).  Then
``delta_remove(eps) = E_P[(Z - e^eps)_+]`` and ``delta_add(eps) = E_P[(1 - e^eps Z)_+]``
(docs/theory/dpmf_balls_in_bins.md, "Two bands: a transfer operator", Theorem 2):

* each Gaussian is replaced by a discrete law on a grid that dominates it in convex
  order (its "hat masses": Edmundson-Madansky, one coordinate at a time; both integrands
  are convex in each coordinate, the remove one in ``T_r``, the add one in
  ``exp(T_r max(c) / sigma)``), the tail off the grid bounded separately;
* the sum over the cycle is a chain given ``T_0``: the state is the next ``T`` and the
  partial sum, put on a log grid by an unbiased two-point rounding (a martingale
  difference, so Jensen makes the rounded law an upper bound); the last term is exact;
* round-off is pushed to the safe side at every step.

:func:`bandmf_two_band_balls_in_bins` returns the least of this bound and Theorem 1's.
Its cost grows as ``points^3 * k`` times the occupied partial-sum cells (about 6 s CPU
at ``n = 8, k = 4`` and 11 s at ``n = 100, k = 10`` with the default 51 points and
``rho = 0.05``; :func:`_two_band_cost` estimates it).  The partial-sum spacing costs
little tightness (``rho`` 0.02 -> 0.05: +0.08 % of epsilon at ``n = 8, k = 4``, +0.3 %
at ``n = 100, k = 10``) and the grid points much (41 -> 51: -0.8 %), so the defaults
spend the time on points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpacct.accountant.validation import check_count, check_epsilon, check_positive
from dpacct.mechanisms.algorithms.bandmf_balls_in_bins_core import (
    BandMFBallsInBins,
    balls_in_bins_candidates,
    balls_in_bins_gram,
)

__all__ = ["BandMFTwoBandBallsInBins", "bandmf_two_band_balls_in_bins", "two_band_delta_law"]

_U = 2.0**-53
#: relative enlargement of every term (remove) or reduction (add): covers exp's and the
#: argument's round-off, ``<= 200 u`` for arguments below 50 in magnitude
_TERM_SLACK = 1e-12
#: relative enlargement of the non-negative sums of the transfer (count * u, Higham 2002,
#: eq. (3.5), with counts below 1e7)
_SUM_SLACK = 1e-8
#: log spacing of the stored law of Z (values rounded up for remove, down for add)
_LAW_STEP = 1e-4
#: grid extent (standard deviations) on the side whose tail Theorem 2 moves onto the grid
#: at no charge (remove: below, add: above), in the laws the mechanisms build; the charged
#: side keeps ``width`` (8), so the tails added to delta are unchanged.  At 16 bands,
#: n 2000, k 100, sigma 8 (Theorem 4's stand-in, 41 points) it lowers epsilon(1e-5) from
#: 0.8359 to 0.82 and the CPU by a third (benchmarks/README.md, session 32)
MOVED_WIDTH = 3.0
#: partial-sum log spacing of the remove-direction laws of Theorems 3 and 4 (the stand-ins'
#: longer cycles round more partial sums: at 16 bands, n 2000, k 100, sigma 8 the remove
#: delta at eps 0.8359 falls from 8.35e-6 at 0.05 to 5.94e-6, for 1.8 times the CPU of
#: that law; the add direction keeps 0.05)
BANDED_REMOVE_RHO = 0.03


def _variables(n: int, k: int, c0: float, c1: float) -> tuple[list[int], list[np.ndarray]]:
    """Counts and column coefficients of ``T_0..T_{k-1}, B`` (Gram-checked)."""
    counts = [len(range(r if r >= 1 else k, n, k)) for r in range(k)]
    cols = []
    for r in range(k):
        p = np.zeros(k)
        p[r] += c0
        p[(r - 1) % k] += c1
        cols.append(p)
    pb = np.zeros(k)
    pb[0] = c0
    cols.append(pb)
    counts.append(1)
    gram = sum(m * np.outer(p, p) for m, p in zip(counts, cols, strict=True))
    ref = balls_in_bins_gram([c0, c1], n, k)
    if not np.allclose(gram, ref, rtol=1e-12, atol=0.0):  # pragma: no cover - invariant
        raise RuntimeError("two-band variables do not reproduce the Gram matrix")
    return counts, cols


def _hat_weights(count: int, t: np.ndarray, lam: float | None, low_tail: bool) -> np.ndarray:
    """Hat masses of ``N(0, count)`` on the points ``t`` (mpmath, 40 digits, rounded up).

    ``lam`` None: hats piecewise linear in ``t``; else in ``exp(lam t)``.  ``low_tail``:
    the mass below ``t[0]`` is added to ``t[0]`` (else the mass above ``t[-1]`` to ``t[-1]``).
    """
    import mpmath as mp

    with mp.workdps(40):
        sd = mp.sqrt(count)
        pts = [mp.mpf(float(x)) for x in t]
        cdf = [mp.ncdf(x / sd) for x in pts]
        if lam is None:
            f = pts
            lin = [-sd * mp.npdf(x / sd) for x in pts]  # antiderivative of t dmu
        else:
            lm = mp.mpf(lam)
            f = [mp.exp(lm * x) for x in pts]
            scale = mp.exp(lm * lm * count / 2)
            lin = [scale * mp.ncdf((x - lm * count) / sd) for x in pts]
        w = [mp.mpf(0)] * len(pts)
        for j in range(len(pts) - 1):
            m, l1, d = cdf[j + 1] - cdf[j], lin[j + 1] - lin[j], f[j + 1] - f[j]
            w[j] += (f[j + 1] * m - l1) / d
            w[j + 1] += (l1 - f[j] * m) / d
        if low_tail:
            w[0] += cdf[0]
        else:
            w[-1] += 1 - cdf[-1]
        out = np.array([float(max(x, 0) * (1 + mp.mpf(2) ** -60)) for x in w])
    return np.nextafter(out, np.inf)


def _away(x: np.ndarray, up: bool) -> np.ndarray:
    """``x >= 0`` moved at least one ulp up (``up``) or down: ``fl(x (1 + 2^-52)) + 2^-1074``
    is above ``x`` for every non-negative double (``x 2^-52`` is at least one ulp of a
    normal ``x``, and the added subnormal covers the rest), and symmetrically below;
    an eighth of the cost of ``numpy.nextafter``."""
    if up:
        return x * (1.0 + 2.0**-52) + 5e-324
    return x * (1.0 - 2.0**-52) - 5e-324


def _spread(y: np.ndarray, g: np.ndarray, up: bool) -> tuple[np.ndarray, np.ndarray]:
    """Unbiased two-point rounding of ``y`` onto ``g`` (``g[0] = 0``, ``g[1:]`` the
    geometric grid ``theta e^(rho i)``, ratio < 2): lower index and upper probability,
    moved one ulp to the safe side (the differences are exact by Sterbenz's lemma, the
    quotient is correctly rounded).

    The index is read off ``log(y / theta) / rho`` in single precision (session 38: a
    third of the double logarithm's time; its error, a few single ulps of the logarithm
    and of ``y / theta``, is below 0.01 of a cell on grids of up to 10^5 cells, so the
    read index is off by at most one) and then corrected against the stored grid, so the
    bracket ``g[j] <= y < g[j + 1]`` is exact and ``(j, p)`` are those of the double
    read; values at or above ``g[-1]`` (the add direction's absorbing top, see
    :func:`_transfer`) get ``j = size - 1``, probability 0.
    """
    size = g.size
    theta, ratio = g[1], g[2] / g[1]
    x = np.maximum(y, 0.5 * theta)
    np.minimum(x, g[-1], out=x)  # single precision holds every ratio up to the top
    x *= 1.0 / theta
    if size <= 100_000:
        lg = np.log(x.astype(np.float32))
        lg *= np.float32(1.0 / math.log(ratio))
    else:  # pragma: no cover - finer grids than any default: the double read
        lg = np.log(x) * (1.0 / math.log(ratio))
    # truncation is the floor for lg >= 0; for lg < 0 it is one too high at most, which
    # the correction below (or the clip at 0) undoes
    j = lg.astype(np.int64)
    j += 1
    np.clip(j, 0, size - 2, out=j)
    j -= g[j] > y
    j += g[j + 1] <= y
    jj = np.minimum(j, size - 2)
    lo = g[jj]
    p = y - lo
    p /= g[jj + 1] - lo
    p = _away(p, up)
    np.maximum(p, 0.0, out=p)
    np.minimum(p, 1.0, out=p)
    top = j >= size - 1
    if top.any():
        if up:  # pragma: no cover - the remove grid is sized above the sums
            raise RuntimeError("partial sum above the grid")
        p[top] = 0.0
    return j, p


def _step(d: np.ndarray, g: np.ndarray, y: np.ndarray, wb: np.ndarray, up: bool) -> np.ndarray:
    """One transfer: mass ``d[a, c]`` moves to ``(b, round(y[a, b, c]))`` (``y`` the sums
    ``g[cell] + term[a, b]`` of the occupied cells), weighted by ``wb[b]``; returns the
    new ``(b, cell)`` masses over the whole grid."""
    nb, size = wb.size, g.size
    j, p = _spread(y, g, up)
    wt = d[:, None, :] * wb[None, :, None]
    idx = np.arange(nb)[None, :, None] * (size + 1) + j
    hi = wt * p
    wt -= hi
    out = np.bincount(idx.ravel(), wt.ravel(), minlength=nb * (size + 1))
    out += np.bincount((idx + 1).ravel(), hi.ravel(), minlength=nb * (size + 1))
    return out.reshape(nb, size + 1)[:, :size]


def _checked_grid(width: float, rho: float, theta: float) -> tuple[float, float, float]:
    """The grid half-width (> 0), the partial sums' log spacing (in (0, 0.5]: the ratio of
    two grid values stays below 2, which :func:`_spread` needs) and the least positive
    grid value (> 0), checked."""
    width = check_positive("width", width)
    rho = check_positive("rho", rho)
    if rho > 0.5:
        raise ValueError(f"rho must be in (0, 0.5], got {rho}")
    return width, rho, check_positive("theta", theta)


def two_band_delta_law(
    noise_multiplier: float,
    iterations: int,
    cycle_length: int,
    strategy: object,
    direction: str,
    *,
    points: int = 51,
    width: float = 8.0,
    rho: float = 0.05,
    theta: float = 1e-10,
    moved_width: float | None = None,
    prune: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, float]:
    """A law dominating ``Z = dQ/dP`` under ``P`` for one direction's delta (Theorem 2 of
    docs/theory/dpmf_balls_in_bins.md).

    ``delta_remove(eps) <= sum_i w_i (z_i - e^eps)_+ + tail`` (``direction="remove"``) and
    ``delta_add(eps) <= sum_i w_i (1 - e^eps z_i)_+ + tail`` (``"add"``), up to the
    relative round-off that :class:`BandMFTwoBandBallsInBins` adds when it sums.

    Parameters
    ----------
    noise_multiplier, iterations, cycle_length
        As in :func:`bandmf_two_band_balls_in_bins`.
    strategy : array_like
        The two non-negative entries ``(c0, c1)`` of the first column.
    direction : {"remove", "add"}
        The direction bounded.
    points : int
        Grid points per Gaussian, >= 3 (error falls as ``points^-2``, cost grows as
        ``points^3``).
    width : float
        Grid half-width in standard deviations, > 0, on the side whose tail is charged to
        the bound (remove: above; add: below).
    rho : float
        Log spacing of the partial-sum grid, in (0, 0.5].
    theta : float
        Smallest positive partial-sum grid value, > 0 (sums below it are spread
        between 0 and ``theta``).
    moved_width : float, optional
        Grid extent in standard deviations, > 0, on the other side, whose tail is moved
        onto the grid's end at no charge (Theorem 2, (i)); None (default): ``width``.
        A narrower side spends the points where the direction's integrand bends.
    prune : float
        Add direction only (0 for remove), >= 0: a state (grid point, partial sum) whose
        mass, times its ``T_0`` point's, is at most ``prune`` leaves the chain as an atom
        at ``z = 0`` (the add integrand is non-increasing and at most its value at 0;
        session 35); 0 (default) keeps every state.

    Returns
    -------
    z, w : numpy.ndarray
        Support (increasing) and masses of the dominating law.
    tail : float
        The bound on the mass off the grids (added to delta).

    Examples
    --------
    >>> z, w, tail = two_band_delta_law(2.0, 4, 2, [1.0, 0.5], "remove", points=21)
    >>> bool(tail < 1e-12), bool(abs(w.sum() - 1) < 1e-6)
    (True, True)
    """
    sigma = check_positive("noise_multiplier", noise_multiplier)
    n = check_count(iterations, "iterations")
    k = check_count(cycle_length, "cycle_length")
    if not 2 <= k < n:
        raise ValueError(f"cycle_length must be in [2, iterations - 1 = {n - 1}], got {k}")
    c = np.asarray(strategy, dtype=float)
    if c.shape != (2,) or not np.all(np.isfinite(c)) or np.any(c < 0) or c[0] == 0:
        raise ValueError(f"strategy must be two finite entries c0 > 0, c1 >= 0, got {strategy!r}")
    if direction not in ("remove", "add"):
        raise ValueError(f"direction must be 'remove' or 'add', got {direction!r}")
    points = check_count(points, "points")
    if points < 3:
        raise ValueError(f"points must be an integer >= 3, got {points}")
    width, rho, theta = _checked_grid(width, rho, theta)
    moved = width if moved_width is None else check_positive("moved_width", moved_width)
    prune = float(prune)
    if not (math.isfinite(prune) and prune >= 0) or (prune > 0 and direction == "remove"):
        raise ValueError(f"prune must be finite and >= 0 (0 for remove), got {prune}")
    c0, c1 = float(c[0]), float(c[1])
    grids, half, tail_f = _grids(n, k, c0, c1, sigma, direction == "remove", points, width,
                                 moved)
    z, w = _transfer(grids, half, c0, c1, sigma, direction == "remove", rho, theta, prune)
    return z, w, tail_f


#: CPU seconds per unit of :func:`_two_band_cost`'s work count, on the shared 2-core
#: development machine, loaded (51 points: n 8, k 4 estimated 4.3 s, measured 3.9-5.9 s;
#: n 100, k 10 estimated 19.3 s, measured 11.2 s: the occupied cells are fewer there)
_SECONDS_PER_UNIT = 3e-8


def _two_band_cost(noise_multiplier: float, iterations: int, cycle_length: int,
                  strategy: object, *, points: int = 51, width: float = 8.0,
                  rho: float = 0.05) -> float:
    """Estimated CPU seconds of :func:`bandmf_two_band_balls_in_bins` (both laws).

    The transfer moves ``points^2`` states times the occupied partial-sum cells per
    point of ``T_0`` and per middle term (``k - 2`` of them), so the work count is
    ``points^3 ((k - 2) cells + points)``, ``cells`` the log range of the partial sums
    over ``rho`` (the remove direction's from the smallest to the largest term sum, the
    add direction's up to 1).  An estimate for choosing a route (it is within a factor
    of 2 of the times measured), never part of a bound.

    Parameters
    ----------
    noise_multiplier, iterations, cycle_length, strategy, points
        As in :func:`bandmf_two_band_balls_in_bins` (checked there, not here).
    width, rho
        As in :func:`two_band_delta_law`.

    Returns
    -------
    float
        Estimated CPU seconds.

    Examples
    --------
    >>> _two_band_cost(2.0, 8, 4, [1.0, 0.5], points=21) < _two_band_cost(
    ...     2.0, 8, 4, [1.0, 0.5], points=41)
    True
    """
    c0, c1 = (float(x) for x in np.asarray(strategy, dtype=float))
    k = int(cycle_length)
    sd = math.sqrt(math.ceil(int(iterations) / k))
    reach = width * sd * (c0 + c1) / noise_multiplier  # half the log range of one term
    # partial sums: remove from the least term to k times the largest, add up to 1
    cells = (3 * reach + 2 * math.log(k)) / rho
    return _SECONDS_PER_UNIT * points**3 * (max(k - 2, 0) * cells + points)


def _grids(n: int, k: int, c0: float, c1: float, sigma: float, up: bool, points: int,
           width: float, moved: float | None = None) -> tuple[list, np.ndarray, float]:
    """Per variable (``T_0..T_{k-1}, B``) its grid and hat masses; the halved squared
    mode norms over sigma^2; the tail bound (Theorem 2, (i))."""
    import mpmath as mp

    counts, cols = _variables(n, k, c0, c1)
    norms = [sum(m * p[s] ** 2 for m, p in zip(counts, cols, strict=True)) for s in range(k)]
    half = np.array(norms) / (2 * sigma * sigma)
    lam = None if up else max(c0, c1) / sigma
    grids, tail = [], mp.mpf(0)
    with mp.workdps(40):
        for r, cnt in enumerate(counts):
            sd = math.sqrt(cnt)
            if moved is None or moved == width:
                t = np.linspace(-width * sd, width * sd, points)
            elif up:  # the lower tail is moved onto t[0], the upper one charged
                t = np.linspace(-moved * sd, width * sd, points)
            else:  # the upper tail is moved onto t[-1], the lower one charged
                t = np.linspace(-width * sd, moved * sd, points)
            grids.append((t, _hat_weights(cnt, t, lam, up)))
            if up:  # E_P[Z 1{T_r > t_max}] = Q(T_r > t_max); T_r ~ N(cnt col_r[s] / sigma, cnt)
                tail += sum(
                    mp.ncdf(-(mp.mpf(float(t[-1])) - cnt * mp.mpf(float(cols[r][s])) / sigma)
                            / mp.sqrt(cnt)) for s in range(k)) / k
            else:  # the add integrand is at most 1
                tail += mp.ncdf(mp.mpf(float(t[0])) / mp.sqrt(cnt))
        tail_f = float(np.nextafter(float(tail * (1 + mp.mpf(2) ** -50)), np.inf))
    return grids, half, tail_f


def _transfer(grids: list, half: np.ndarray, c0: float, c1: float, sigma: float, up: bool,
              rho: float, theta: float, prune: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The law of the rounded sum over the cycle (Theorem 2, (iii), and the transfer).

    Only the occupied cells ``[bot, top)`` of the partial-sum grid are moved at each
    step.  The add direction's grid stops at its first value ``>= 1`` and holds there
    every larger partial sum (an absorbing cell): the later terms are non-negative, so
    such a path ends with ``Z >= 1``, where the add integrand ``(1 - e^eps Z)_+`` is 0 for
    every ``eps >= 0``; its mass is stored as one atom at ``z = 1`` (a value at most the
    true one, which the decreasing integrand allows).  With ``prune > 0`` (add only) the
    states of mass at most ``prune`` (times their ``T_0`` point's) leave the chain as an
    atom at ``z = 0``, enlarged by ``1e-9`` relative (what they would have become weighs
    their mass times the later hat masses' sums, each within ``1e-15`` of 1, and the
    integrand is at most its value at 0).
    """
    k = half.size
    fac = 1 + _TERM_SLACK if up else 1 - _TERM_SLACK
    toward = np.inf if up else -np.inf

    def term(s: int, a, b, extra=0.0):
        return np.exp(-half[s] + (c0 * a + c1 * b + extra) / sigma) / k * fac

    if up:
        tops = [t[-1] for t, _ in grids]
        smax = sum(float(term(s, tops[s], tops[(s + 1) % k], c0 * tops[k] if s == 0 else 0.0))
                   for s in range(k))
        cells = math.ceil(math.log(2 * smax / theta) / rho) + 2
    else:
        cells = math.ceil(math.log(1.0 / theta) / rho) + 2
    g = np.concatenate([[0.0], theta * np.exp(rho * np.arange(cells))])
    if not up:  # the absorbing top: the first grid value >= 1
        g = g[: int(np.searchsorted(g, 1.0, side="left")) + 1]
    (t0, w0), (t1, w1), (tb, wb) = grids[0], grids[1], grids[k]
    zs, ws, absorbed, pruned = [], [], 0.0, 0.0
    for x0, wx0 in zip(t0, w0, strict=True):
        # term 0 from (B, T_1) given T_0 = x0: the state is (T_1 point, partial sum)
        y = _away(term(0, x0, t1[None, :], c0 * tb[:, None]), up)[:, :, None]
        if not up:
            y = np.maximum(y, 0.0)
        d = _step(wb[:, None], g, y, w1, up)
        for s in range(1, k - 1):
            ta, _ = grids[s]
            if not up:  # the absorbed mass leaves the chain
                absorbed += float(d[:, -1].sum()) * wx0
                d[:, -1] = 0.0
            live = np.nonzero(d.any(axis=1))[0]
            occ = np.nonzero(d.any(axis=0))[0]
            if occ.size == 0:  # every path absorbed (add direction): nothing left
                d = None
                break
            bot, top = int(occ[0]), int(occ[-1]) + 1
            tt = term(s, ta[live][:, None], grids[s + 1][0][None, :])
            y = g[None, None, bot:top] + tt[:, :, None]
            y = _away(y, up)
            if not up:
                y = np.maximum(y, 0.0)
            d = _step(d[np.ix_(live, np.arange(bot, top))], g, y, grids[s + 1][1], up)
            if prune > 0.0:
                small = (d > 0.0) & (d * wx0 <= prune)
                pruned += float(d[small].sum()) * wx0
                d[small] = 0.0
        if d is None:
            continue
        if not up:
            absorbed += float(d[:, -1].sum()) * wx0
            d[:, -1] = 0.0
        tl = grids[k - 1][0]
        z = np.nextafter(g[None, :] + term(k - 1, tl, x0)[:, None], toward)
        keep = d > 0
        zs.append(np.maximum(z[keep], 0.0))
        ws.append(d[keep] * wx0)
    if absorbed > 0.0:
        zs.append(np.array([1.0]))
        ws.append(np.array([absorbed]))
    if pruned > 0.0:
        zs.append(np.array([0.0]))
        ws.append(np.array([pruned * (1 + 1e-9)]))
    z, w = _compact(np.concatenate(zs), np.concatenate(ws), up)
    return z, w


def _compact(z: np.ndarray, w: np.ndarray, up: bool) -> tuple[np.ndarray, np.ndarray]:
    """Round ``z`` onto the grid ``exp(_LAW_STEP i)`` (up for remove, down for add; 0 kept)
    and add the masses of equal values."""
    pos = z > 0
    i = np.full(z.shape, np.iinfo(np.int64).min)
    lz = np.log(z[pos]) / _LAW_STEP
    i[pos] = np.ceil(lz) if up else np.floor(lz)
    grid_val = np.exp(i[pos] * _LAW_STEP)
    # make the rounding direction exact in floating point
    bad = grid_val < z[pos] if up else grid_val > z[pos]
    ii = i[pos]
    ii[bad] += 1 if up else -1
    i[pos] = ii
    uniq, inv = np.unique(i, return_inverse=True)
    mass = np.bincount(inv, w)
    vals = np.where(uniq == np.iinfo(np.int64).min, 0.0, np.exp(uniq * _LAW_STEP))
    if up:
        vals = np.nextafter(vals, np.inf)
        chk = vals[np.searchsorted(uniq, i)] >= z
    else:
        vals = np.where(vals > 0, np.nextafter(vals, -np.inf), 0.0)
        chk = vals[np.searchsorted(uniq, i)] <= z
    if not np.all(chk):  # pragma: no cover - exp is within an ulp
        raise RuntimeError("law rounding went the wrong way")
    return vals, mass


def _law_delta(z: np.ndarray, w: np.ndarray, tail: float, up: bool, eps: np.ndarray) -> np.ndarray:
    """``sum w (z - e^eps)_+`` (remove) or ``sum w (1 - e^eps z)_+`` (add), with round-off."""
    gam = np.exp(eps)
    gam = np.nextafter(np.nextafter(gam, -np.inf if up else np.inf), -np.inf if up else np.inf)
    cw, cwz = np.cumsum(w), np.cumsum(w * z)
    if up:
        # suffix sums (from the top), so that each tail's round-off is relative to the
        # tail itself: a difference of prefix sums would carry gamma times the whole
        # sum's round-off, which swamps the bound at large epsilon (e^50 * 1e-13)
        rw = np.concatenate((np.cumsum(w[::-1])[::-1], [0.0]))
        rwz = np.concatenate((np.cumsum((w * z)[::-1])[::-1], [0.0]))
        i = np.searchsorted(z, gam, side="right")
        val = rwz[i] - gam * rw[i]
        err = 4 * z.size * _U * (rwz[i] + gam * rw[i])
    else:
        i = np.searchsorted(z, 1.0 / gam, side="left")
        sw = np.where(i > 0, cw[np.maximum(i - 1, 0)], 0.0)
        swz = np.where(i > 0, cwz[np.maximum(i - 1, 0)], 0.0)
        val = sw - gam * swz
        err = 4 * z.size * _U * (sw + gam * swz) + 4 * _U * cw[-1]
    return np.minimum(np.maximum(val, 0.0) * (1 + _SUM_SLACK) + err + tail, 1.0)


@dataclass(frozen=True, repr=False, eq=False)
class BandMFTwoBandBallsInBins(BandMFBallsInBins):
    """The least of Theorem 1's bound and the two-band transfer bound (Theorem 2 of
    docs/theory/dpmf_balls_in_bins.md); build it with :func:`bandmf_two_band_balls_in_bins`.

    ``laws`` holds, for remove and add, the dominating law ``(z, w, tail)`` of
    :func:`two_band_delta_law`.  ``delta`` and ``epsilon`` are upper bounds (the least
    of two); ``rdp`` is Theorem 1's; ``epsilon_bounds`` has lower end 0.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation per unit of clipping norm, > 0.
    candidates : tuple
        Theorem 1's candidates (:func:`.balls_in_bins_candidates`).
    laws : tuple
        ``((z, w, tail) remove, (z, w, tail) add)``.

    Examples
    --------
    >>> run = bandmf_two_band_balls_in_bins(2.0, 4, cycle_length=2, strategy=[1.0, 0.5],
    ...                                     points=21)
    >>> bool(run.delta(1.0) >= 0.0381)      # the exact value is 0.038172 (quadrature)
    True
    """

    laws: tuple = field(default=())

    def _transfer_delta(self, eps: np.ndarray) -> np.ndarray:
        if not self.laws:  # Theorem 2 not built (noise too large): the trivial bound 1
            return np.ones(np.shape(eps))
        (zr, wr, tr), (za, wa, ta) = self.laws
        return np.maximum(_law_delta(zr, wr, tr, True, eps), _law_delta(za, wa, ta, False, eps))

    def _epsilon_one(self, delta: float, tol: float | None) -> float:
        key = ("eps2", delta, tol)
        cache = self._cache()
        if key not in cache:
            hi = super()._epsilon_one(delta, tol)
            best = hi
            top = hi if math.isfinite(hi) else 50.0
            if self._transfer_delta(np.array([top]))[0] <= delta:
                lo = 0.0
                if self._transfer_delta(np.array([0.0]))[0] <= delta:
                    top = 0.0
                for _ in range(60):
                    if top - lo <= 1e-7 * max(top, 1e-3):
                        break
                    mid = 0.5 * (lo + top)
                    if self._transfer_delta(np.array([mid]))[0] <= delta:
                        top = mid
                    else:
                        lo = mid
                best = min(best, top)
            cache[key] = best
        return cache[key]

    def delta(self, epsilon, *, tol: float | None = None):
        """Sound upper bound on delta at ``epsilon``: the least of the two theorems'.

        Parameters
        ----------
        epsilon : float or array_like
            Epsilon(s), >= 0.
        tol : float, optional
            Relative accuracy of Theorem 1's PLD routes.

        Returns
        -------
        float or numpy.ndarray
            The bound at each epsilon.
        """
        e = np.asarray(epsilon, dtype=float)
        flat = np.array([check_epsilon(float(x)) for x in e.reshape(-1)])
        out = np.minimum(np.asarray(super().delta(flat, tol=tol)).reshape(-1),
                         self._transfer_delta(flat))
        return float(out[0]) if e.ndim == 0 else out.reshape(e.shape)

    def __repr__(self) -> str:
        return (f"BandMFTwoBandBallsInBins(noise_multiplier={self.noise_multiplier!r}, "
                f"candidates=..., laws=<{sum(z.size for z, _, _ in self.laws)} atoms>)")


def bandmf_two_band_balls_in_bins(
    noise_multiplier: float,
    iterations: int,
    *,
    cycle_length: int,
    strategy: object,
    points: int = 51,
    rho: float = 0.05,
    candidates: tuple | None = None,
) -> BandMFTwoBandBallsInBins:
    """Certified privacy of two-band DP-MF (BandMF) under balls-in-bins, by a transfer
    operator over the cycle, at most :func:`.bandmf_balls_in_bins`'s bound.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation per unit of clipping norm, > 0 (JAX Privacy's).
    iterations : int
        Steps ``n``, >= 3.
    cycle_length : int
        Bins ``k``, ``2 <= k < n``.
    strategy : array_like
        The first column ``(c0, c1)`` of the two-band Toeplitz strategy, ``c0 > 0``,
        ``c1 >= 0`` (JAX Privacy's ``c_col``).
    points : int
        Grid points per Gaussian, >= 3 (default 51: within 1 % of the Monte Carlo
        epsilon at ``n = 8``).
    rho : float
        Log spacing of the partial-sum grid, in (0, 0.5].
    candidates : tuple, optional
        Theorem 1's :func:`.balls_in_bins_candidates` of the run, when already built
        (they do not depend on the noise).

    Returns
    -------
    BandMFTwoBandBallsInBins
        Query ``epsilon``, ``delta`` (upper bounds), ``epsilon_bounds`` (lower end 0).

    Examples
    --------
    >>> from dpacct.mechanisms.algorithms.bandmf_balls_in_bins import bandmf_balls_in_bins
    >>> c = [1.0, 0.5]
    >>> new = bandmf_two_band_balls_in_bins(2.0, 4, cycle_length=2, strategy=c, points=21)
    >>> old = bandmf_balls_in_bins(2.0, 4, cycle_length=2, strategy=c, two_band=False)
    >>> bool(new.epsilon(1e-5) <= old.epsilon(1e-5))
    True
    """
    sigma = check_positive("noise_multiplier", noise_multiplier)
    try:
        laws = tuple(
            two_band_delta_law(sigma, iterations, cycle_length, strategy, d, points=points,
                               rho=rho, moved_width=MOVED_WIDTH)
            for d in ("remove", "add")
        )
    except ZeroDivisionError:
        # noise so large (max c / sigma below about 1e-35) that the add direction's grid
        # in exp(max c T / sigma) is one point at 40 digits: Theorem 1 alone, which is
        # then about 0 anyway
        laws = ()
    if candidates is None:
        candidates = balls_in_bins_candidates(iterations, cycle_length,
                                              list(np.asarray(strategy)))
    return BandMFTwoBandBallsInBins(sigma, candidates, laws)
