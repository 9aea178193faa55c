"""DP-MF under balls-in-bins, the whole pair without residue classes: the Gram matrix
dominated by ``alpha I + beta J + gamma (c c^T + s s^T)`` (the lowest non-zero frequency
``c_s = cos(2 pi s / k)``, ``s_s = sin(2 pi s / k)``), whose pair is computed by
conditioning on the two frequency coordinates (Theorem 5 of
docs/theory/dpmf_balls_in_bins.md).

For a banded Toeplitz strategy the Gram matrix of the ``k`` modes is nearly circulant and
its spectrum sits in the lowest frequencies.  Theorems 3 and 4 split the bins into
residue classes (Lemma 3), which costs amplification (at JAX Privacy's four-band example
a class pair's Monte Carlo epsilon is 12 % above the whole pair's).  Here no bin is
revealed: the frequencies ``0`` and ``+-1`` are kept as they are (a shared Gaussian and
two *factor* coordinates ``U, V``) and only the rest is raised to ``alpha I``.  Given
``(U, V)`` the ``k`` terms of the likelihood ratio are independent, so their sum's law is
a chain of ``k`` convolutions on a log grid (no transfer state), over a grid of
``(U, V)``:

* remove: Edmundson-Madansky hat masses in ``U``, ``V`` and each own coordinate
  (``psi(Z)`` is convex in each, ``psi`` Lemma 6's convex non-decreasing function);
* add: ``chi(Z)`` is not convex in ``U`` (the loadings ``cos``, ``sin`` change sign), so
  on each ``(U, V)`` cell every term's factor ``exp(c L_s)`` is replaced by its tangent at
  the cell's centre (a minorant, affine in ``(U, V)``; ``chi`` is non-increasing), and the
  cell's mass is split onto its four corners by the per-cell hat masses;
* the shared Gaussian ``beta J`` is integrated in closed form (Lemma 6).

:func:`bandmf_lowfreq_balls_in_bins` returns the least of this bound and Theorem 1's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpacct.accountant.validation import check_count, check_positive
from dpacct.mechanisms.algorithms.bandmf_balls_in_bins_core import (
    balls_in_bins_candidates,
    balls_in_bins_gram,
)
from dpacct.mechanisms.algorithms.bandmf_banded import _dominated
from dpacct.mechanisms.algorithms.bandmf_banded_shared import (
    BandMFSharedBallsInBins,
    shared_law_delta,
)
from dpacct.mechanisms.algorithms.bandmf_two_band import (
    _TERM_SLACK,
    MOVED_WIDTH,
    _away,
    _checked_grid,
    _hat_weights,
    _spread,
)

__all__ = ["BandMFLowFreqBallsInBins", "bandmf_lowfreq_balls_in_bins", "lowfreq_cost",
           "lowfreq_delta_law", "lowfreq_instance", "lowfreq_points"]

#: largest cycle length: the transfer's mass sums stay below 1e7 terms per cell
#: (:data:`~dpacct.mechanisms.algorithms.bandmf_two_band._SUM_SLACK`)
MAX_CYCLE = 64
#: the least tangent coefficient ``1 + c (L - L0)`` allowed at a cell corner (add
#: direction); a coarser factor grid is refused
_MIN_COEF = 0.5
#: the largest exponent magnitude for which the terms' relative slack ``1e-12`` covers
#: their round-off (``<= 4 u`` times the magnitude, as in Theorem 3)
_MAX_EXPONENT = 1000.0
#: the least ``sqrt(alpha) / sigma`` Theorem 5's grids take: below it the hat weights'
#: exponentials are 1 to working precision (at huge noise, where Theorem 1 is as tight)
_MIN_SCALE = 1e-8
#: ``alpha`` over the largest eigenvalue of ``G`` off the frequencies ``0, +-1``
ALPHA_FACTOR = 1.02
#: the largest ``alpha_factor`` taken (beyond it the eigen-solver sees overflowing entries)
MAX_ALPHA_FACTOR = 1e6
#: grid half-width (standard deviations) and partial-sum log spacing of the remove
#: direction (the one that binds on the measured rows), and of the add direction
REMOVE_GRID = (6.5, 0.05)
ADD_GRID = (6.0, 0.1)
#: ``(factor_points, points)`` of the remove direction tried by default, most first, and
#: the add direction's (coarser: at four bands, n 100, k 10, sigma 4 its epsilon is
#: 1.73 at (11, 31) against the remove direction's 1.92)
REMOVE_POINTS = ((31, 61), (25, 51), (21, 41), (15, 31))
ADD_POINTS = (15, 41)
#: CPU seconds per unit of :func:`lowfreq_cost`'s count (shared 2-core machine, loaded:
#: four bands, n 100, k 10, sigma 4, remove at (31, 61): estimated 2.2e8 units, 23.6 s)
_SECONDS_PER_UNIT = 1.1e-7
#: estimated CPU seconds up to which the default adds Theorem 5
LOWFREQ_BUDGET = 40.0


def lowfreq_instance(strategy: object, iterations: int, cycle_length: int,
                     alpha_factor: float = ALPHA_FACTOR) -> tuple[float, float, float]:
    """``(alpha, beta, gamma)`` with ``G <= alpha I + beta J + gamma (c c^T + s s^T)``
    certified (Theorem 5): ``c``, ``s`` the floating-point ``cos``, ``sin`` of
    ``2 pi j / k``.

    ``alpha`` is ``alpha_factor`` times the largest eigenvalue of ``G`` on the complement
    of the frequencies ``0, +-1``; ``beta`` and ``gamma`` are read off the Schur
    complement that makes the frequency block dominate, then raised until
    :func:`~dpacct.mechanisms.algorithms.bandmf_banded._dominated` certifies the
    domination (Lemma 4's eigen-residual bound with margin).

    Examples
    --------
    >>> a, b, g = lowfreq_instance([1.0, 0.5, 0.25, 0.125], 100, 10)
    >>> bool(a > 0 and b > 0 and g > 0)
    True
    """
    n = check_count(iterations, "iterations")
    k = check_count(cycle_length, "cycle_length")
    if not 4 <= k <= min(n, MAX_CYCLE):
        raise ValueError(f"cycle_length must be in [4, min(iterations, {MAX_CYCLE})] (k = 3 "
                         f"has no frequency besides 0, +-1), got {k}")
    fac = check_positive("alpha_factor", alpha_factor)
    if not 1.0 < fac <= MAX_ALPHA_FACTOR:
        raise ValueError(f"alpha_factor must be in (1, {MAX_ALPHA_FACTOR:g}] (a larger factor "
                         f"only loosens the bound), got {alpha_factor}")
    gram = balls_in_bins_gram(strategy, n, k)
    cs, sn = _loadings(k)
    u = np.stack([np.ones(k) / math.sqrt(k), cs / np.linalg.norm(cs), sn / np.linalg.norm(sn)],
                 axis=1)
    full, _ = np.linalg.qr(np.hstack([u, np.eye(k)]))
    rest = full[:, 3:]
    top = float(np.linalg.eigvalsh(rest.T @ gram @ rest)[-1])
    alpha = fac * max(top, 1e-12 * float(np.trace(gram)) / k)
    ga = gram - alpha * np.eye(k)
    a_blk, b_blk, d_blk = u.T @ ga @ u, u.T @ ga @ rest, rest.T @ ga @ rest
    w = a_blk + b_blk @ np.linalg.solve(-d_blk, b_blk.T)
    beta0 = max(float(w[0, 0]), 0.0) / k
    gam0 = max(float(np.linalg.eigvalsh(0.5 * (w[1:, 1:] + w[1:, 1:].T))[-1]), 0.0) * 2.0 / k
    scale = float(np.max(np.diag(gram)))
    ones = np.ones((k, k))
    freq = np.outer(cs, cs) + np.outer(sn, sn)
    # the frequency block's cross terms (G is only nearly circulant) are absorbed by
    # raising beta and gamma first, alpha only if that does not suffice
    for ta in (1e-6, 1e-2, 0.1, 0.3):
        for t in (1e-6, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0):
            a = alpha * (1 + ta)
            b, g = beta0 * (1 + t) + t * scale / k, gam0 * (1 + t) + t * scale / k
            if _dominated(gram, a * np.eye(k) + b * ones + g * freq, a):
                return a, b, g
    raise RuntimeError("low-frequency domination could not be certified")  # pragma: no cover


def _reach(a: float, c: float, width: float) -> float:
    """The largest magnitude of a term's exponent ``a x + c L - half`` on the grids."""
    return 0.5 * (a * a + c * c) + width * (a + c * math.sqrt(2.0))


def _add_factor_points(c: float, factor_points: int) -> int:
    """The add direction's factor points: :data:`ADD_POINTS`' (at most ``factor_points``)
    or more, so that ``c h / sqrt(2) <= 0.5`` and the tangent coefficients stay
    ``>= 1 - 0.5 >= _MIN_COEF``."""
    return max(min(ADD_POINTS[0], factor_points), math.ceil(2 * ADD_GRID[0] * c / 0.7) + 2)


def _loadings(k: int) -> tuple[np.ndarray, np.ndarray]:
    ang = 2.0 * math.pi * np.arange(k) / k
    return np.cos(ang), np.sin(ang)


def _factor_cells(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per cell ``[t_j, t_{j+1}]`` the masses of ``N(0, 1)`` times the two hats
    restricted to it (left, right): mpmath at 40 digits, rounded up."""
    import mpmath as mp

    with mp.workdps(40):
        pts = [mp.mpf(float(x)) for x in t]
        cdf = [mp.ncdf(x) for x in pts]
        pdf = [mp.npdf(x) for x in pts]
        left, right = [], []
        for j in range(len(pts) - 1):
            h = pts[j + 1] - pts[j]
            m = cdf[j + 1] - cdf[j]
            lin = pdf[j] - pdf[j + 1]  # integral of t dmu over the cell
            left.append((pts[j + 1] * m - lin) / h)
            right.append((lin - pts[j] * m) / h)
        up = 1 + mp.mpf(2) ** -60
        out = [np.array([float(max(x, 0) * up) for x in side]) for side in (left, right)]
    return np.nextafter(out[0], np.inf), np.nextafter(out[1], np.inf)


def _node_hats(t: np.ndarray) -> np.ndarray:
    """Hat masses of ``N(0, 1)`` on ``t`` with *neither* tail (both bounded apart)."""
    left, right = _factor_cells(t)
    w = np.zeros(t.size)
    w[:-1] += left
    w[1:] += right
    return np.nextafter(w * (1 + 4 * t.size * 2.0**-53), np.inf)


def _convolve(fac: np.ndarray, cw: np.ndarray, ex: np.ndarray, wx: np.ndarray, up: bool,
              rho: float, theta: float, smax: float) -> tuple[np.ndarray, np.ndarray]:
    """Law of the rounded sum ``sum_s fac[cond, s] ex[i_s]`` (``i_s`` independent with
    masses ``wx``) per condition, summed over conditions with weights ``cw``: the partial
    sums are put on ``{0} u theta e^(rho i)`` by the directed unbiased two-point rounding
    of :func:`~dpacct.mechanisms.algorithms.bandmf_two_band._spread` (the last one too).
    Returns the grid and the masses on it."""
    ncond, k = fac.shape
    if up:
        cells = math.ceil(math.log(2.0 * smax / theta) / rho) + 2
    else:
        cells = math.ceil(math.log(1.0 / theta) / rho) + 2
    g = np.concatenate([[0.0], theta * np.exp(rho * np.arange(cells))])
    if not up:  # the absorbing top: the first grid value >= 1 holds every larger sum
        g = g[: int(np.searchsorted(g, 1.0, side="left")) + 1]
    size = g.size
    d = np.zeros((ncond, size))
    d[:, 0] = cw
    nx = ex.size
    for s in range(k):
        occ = np.nonzero(d.any(axis=0))[0]
        bot, top = int(occ[0]), int(occ[-1]) + 1
        live = np.nonzero(d[:, bot:top].any(axis=1))[0]
        term = fac[live, s][:, None] * ex[None, :]  # (cond, i)
        y = _away(g[None, None, bot:top] + term[:, :, None], up)
        if not up:
            y = np.maximum(y, 0.0)
        j, p = _spread(y, g, up)
        wt = d[live][:, None, bot:top] * wx[None, :, None]
        idx = np.arange(live.size)[:, None, None] * (size + 1) + j
        hi = wt * p
        wt -= hi
        new = np.bincount(idx.ravel(), wt.ravel(), minlength=live.size * (size + 1))
        new += np.bincount((idx + 1).ravel(), hi.ravel(), minlength=live.size * (size + 1))
        d = np.zeros((ncond, size))
        d[live] = new.reshape(live.size, size + 1)[:, :size]
        if nx == 0:  # pragma: no cover
            break
    return g, d.sum(axis=0)


def lowfreq_delta_law(noise_multiplier: float, instance: tuple, cycle_length: int,
                      direction: str, *, factor_points: int = 31, points: int = 61,
                      width: float = 8.0, rho: float = 0.05,
                      theta: float = 1e-10,
                      moved_width: float | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """A law dominating ``Z' = Z / W_B`` (the likelihood ratio without its shared
    Gaussian factor) for one direction of the pair of ``alpha I + beta J + gamma
    (c c^T + s s^T)`` (Theorem 5 of docs/theory/dpmf_balls_in_bins.md):
    ``delta_remove(eps) <= sum_i w_i psi(z_i) + tail`` and ``delta_add(eps) <= sum_i w_i
    chi(z_i) + tail`` with Lemma 6's ``psi``, ``chi`` of shift ``sqrt(beta) / sigma``
    (:func:`~dpacct.mechanisms.algorithms.bandmf_banded_shared.shared_law_delta`).

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation per unit of clipping norm, > 0.
    instance : tuple
        ``(alpha, beta, gamma)`` of :func:`lowfreq_instance`.
    cycle_length : int
        Bins ``k``, in ``[4, 64]``.
    direction : {"remove", "add"}
        The direction bounded.
    factor_points : int
        Grid points of each frequency coordinate ``U``, ``V``, >= 3 (cost grows as their
        square).
    points : int
        Grid points of each bin's own coordinate, >= 3 (cost linear).
    width : float
        Grid half-width in standard deviations, > 0.
    rho : float
        Log spacing of the partial-sum grid, in (0, 0.5].
    theta : float
        Smallest positive partial-sum grid value, > 0.
    moved_width : float, optional
        Extent in standard deviations, > 0, of each own coordinate's grid on the side
        whose tail is moved onto the grid at no charge (remove: below; add: above);
        None (default): ``width``.

    Returns
    -------
    z, w : numpy.ndarray
        Support (increasing) and masses.
    tail : float
        The bound on the mass off the grids.

    Examples
    --------
    >>> inst = lowfreq_instance([1.0, 0.5, 0.25], 12, 4)
    >>> z, w, tail = lowfreq_delta_law(3.0, inst, 4, "remove", factor_points=9, points=15)
    >>> bool(tail < 1e-12), bool(abs(float(w.sum()) - 1) < 1e-6)
    (True, True)
    """

    sigma = check_positive("noise_multiplier", noise_multiplier)
    k = check_count(cycle_length, "cycle_length")
    if not 4 <= k <= MAX_CYCLE:
        raise ValueError(f"cycle_length must be in [4, {MAX_CYCLE}], got {k}")
    if direction not in ("remove", "add"):
        raise ValueError(f"direction must be 'remove' or 'add', got {direction!r}")
    nf = check_count(factor_points, "factor_points")
    ny = check_count(points, "points")
    if nf < 3 or ny < 3:
        raise ValueError(f"factor_points and points must be >= 3, got {nf}, {ny}")
    width, rho, theta = _checked_grid(width, rho, theta)
    moved = width if moved_width is None else check_positive("moved_width", moved_width)
    alpha, _beta, gamma = (float(x) for x in instance)
    a, c = math.sqrt(alpha) / sigma, math.sqrt(gamma) / sigma
    if a < _MIN_SCALE:
        raise ValueError(
            f"noise_multiplier = {sigma} is too large for Theorem 5's grids: sqrt(alpha) / "
            f"sigma = {a:.3g} < {_MIN_SCALE} (Theorem 1, bandmf_balls_in_bins, answers there)")
    if _reach(a, c, max(width, moved)) > _MAX_EXPONENT:
        raise ValueError(
            f"noise_multiplier = {sigma} is too small for Theorem 5: the terms' exponents "
            f"reach {_reach(a, c, max(width, moved)):.3g} > {_MAX_EXPONENT} (the round-off "
            "slack's range)")
    cs, sn = _loadings(k)
    half = 0.5 * (a * a + c * c * (cs * cs + sn * sn))
    up = direction == "remove"
    slack = 1 + _TERM_SLACK if up else 1 - _TERM_SLACK
    tf = np.linspace(-width, width, nf)
    # own coordinates: the tail on the moved side is put onto the grid's end (Theorem 5, (i))
    ty = np.linspace(-moved, width, ny) if up else np.linspace(-width, moved, ny)
    tail_f = _tail(a, c, cs, sn, width, up)
    wy = _hat_weights(1, ty, None if up else a, up)
    ex = np.exp(a * ty) * slack
    if up:
        wf = _node_hats(tf)
        uu, vv = np.meshgrid(tf, tf, indexing="ij")
        lin = uu.ravel()[:, None] * cs[None, :] + vv.ravel()[:, None] * sn[None, :]
        fac = np.exp(c * lin - half[None, :]) / k * slack
        cw = np.outer(wf, wf).ravel()
    else:
        fac, cw = _add_conditions(tf, cs, sn, c, half, slack)
    smax = float(fac.max(axis=0).sum()) * float(ex.max())
    g, mass = _convolve(fac, cw, ex, wy, up, rho, theta, smax)
    keep = mass > 0
    return g[keep], mass[keep], tail_f


def _tail(a: float, c: float, cs: np.ndarray, sn: np.ndarray, width: float, up: bool) -> float:
    """Theorem 5's bound on the mass off the grids (mpmath, rounded up)."""
    import mpmath as mp

    k = cs.size
    with mp.workdps(40):
        w_m = mp.mpf(width)
        if up:
            # factors: (Z - gamma)_+ <= Z, so E_P[.; U off] <= Q(U off), U ~ N(c cs_s, 1)
            # under Q_s; own: the upper tail Q(X_s > w) (the lower one moves to ty[0])
            tail = sum(mp.ncdf(-w_m - c * mp.mpf(float(x)))
                       + mp.ncdf(-w_m + c * mp.mpf(float(x)))
                       for x in np.concatenate([cs, sn])) / k
            tail += mp.ncdf(mp.mpf(a) - w_m) + (k - 1) * mp.ncdf(-w_m)
        else:  # the add integrand is at most 1: P(U off) + P(V off) + sum_s P(X_s < -w)
            tail = 4 * mp.ncdf(-w_m) + k * mp.ncdf(-w_m)
        return float(np.nextafter(float(tail * (1 + mp.mpf(2) ** -50)), np.inf))


def _add_conditions(tf: np.ndarray, cs: np.ndarray, sn: np.ndarray, c: float,
                    half: np.ndarray, slack: float) -> tuple[np.ndarray, np.ndarray]:
    """The add direction's conditions: per ``(U, V)`` cell and corner, the terms'
    factors (tangents at the cell's centre, evaluated at the corner) and the corner's
    per-cell hat mass."""
    nf, k = tf.size, cs.size
    left, right = _factor_cells(tf)
    mid = 0.5 * (tf[:-1] + tf[1:])
    facs, cws = [], []
    for cu, wu in ((tf[:-1], left), (tf[1:], right)):
        for cv, wv in ((tf[:-1], left), (tf[1:], right)):
            uc, vc = np.meshgrid(cu, cv, indexing="ij")
            um, vm = np.meshgrid(mid, mid, indexing="ij")
            l0 = um.ravel()[:, None] * cs[None, :] + vm.ravel()[:, None] * sn[None, :]
            lc = uc.ravel()[:, None] * cs[None, :] + vc.ravel()[:, None] * sn[None, :]
            coef = 1.0 + c * (lc - l0)
            if float(coef.min()) < _MIN_COEF:
                raise ValueError(
                    f"factor_points = {nf} is too coarse for the add direction: a "
                    f"tangent coefficient is {float(coef.min()):.3g} < {_MIN_COEF}")
            facs.append(np.exp(c * l0 - half[None, :]) * coef / k * slack)
            cws.append(np.outer(wu, wv).ravel())
    return np.concatenate(facs), np.concatenate(cws)


def bandmf_lowfreq_balls_in_bins(noise_multiplier: float, iterations: int, *,
                                 cycle_length: int, strategy: object,
                                 factor_points: int = 31, points: int = 61,
                                 alpha_factor: float = ALPHA_FACTOR,
                                 candidates: tuple | None = None,
                                 base: BandMFSharedBallsInBins | None = None,
                                 ) -> BandMFLowFreqBallsInBins:
    """Certified privacy of DP-MF under balls-in-bins by Theorem 5 (the whole pair, its
    Gram matrix dominated by ``alpha I`` plus the frequencies ``0, +-1``), at most
    Theorem 1's bound.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation per unit of clipping norm, > 0.
    iterations : int
        Steps ``n``, >= 3.
    cycle_length : int
        Bins ``k``, in ``[4, min(n, 64)]``.
    strategy : array_like
        As in :func:`~dpacct.mechanisms.algorithms.bandmf_balls_in_bins.bandmf_balls_in_bins`.
    factor_points, points : int
        Grid points of the frequency coordinates and of the bins' own, >= 3.
    alpha_factor : float
        ``alpha`` over the largest eigenvalue off the kept frequencies, > 1.
    candidates : tuple, optional
        Theorem 1's candidates, when built.
    base : BandMFSharedBallsInBins, optional
        Theorem 4's bound, when built: its laws are kept and the least taken.

    Returns
    -------
    BandMFLowFreqBallsInBins
        The least of Theorems 1, 4 (from ``base``) and 5.

    Examples
    --------
    >>> from dpacct.mechanisms.algorithms.bandmf_balls_in_bins import bandmf_balls_in_bins
    >>> c = [1.0, 0.6, 0.3]
    >>> run = bandmf_lowfreq_balls_in_bins(3.0, 12, cycle_length=4, strategy=c,
    ...                                    factor_points=9, points=15)
    >>> one = bandmf_balls_in_bins(3.0, 12, cycle_length=4, strategy=c, two_band=False)
    >>> bool(run.epsilon(1e-3) <= one.epsilon(1e-3))
    True
    """
    sigma = check_positive("noise_multiplier", noise_multiplier)
    n = check_count(iterations, "iterations")
    k = check_count(cycle_length, "cycle_length")
    factor_points = check_count(factor_points, "factor_points")
    points = check_count(points, "points")
    if base is not None and not isinstance(base, BandMFSharedBallsInBins):
        raise TypeError(f"base must be a BandMFSharedBallsInBins or None, got {base!r}")
    if candidates is None:
        candidates = (base.candidates if base is not None
                      else balls_in_bins_candidates(n, k, strategy, 16))
    inst = lowfreq_instance(strategy, n, k, alpha_factor)
    (wr, rr), (wa, ra) = REMOVE_GRID, ADD_GRID
    nfa = _add_factor_points(math.sqrt(inst[2]) / sigma, factor_points)
    nya = min(ADD_POINTS[1], points)
    rem = lowfreq_delta_law(sigma, inst, k, "remove", factor_points=factor_points,
                            points=points, width=wr, rho=rr, moved_width=MOVED_WIDTH)
    add = lowfreq_delta_law(sigma, inst, k, "add", factor_points=nfa, points=nya,
                            width=wa, rho=ra, moved_width=MOVED_WIDTH)
    mu = math.sqrt(inst[1]) / sigma
    laws, choice = (base.laws, base.choice) if base is not None else ((), ())
    return BandMFLowFreqBallsInBins(sigma, candidates, laws, choice, (rem, add, mu))


@dataclass(frozen=True, repr=False, eq=False)
class BandMFLowFreqBallsInBins(BandMFSharedBallsInBins):
    """The least of Theorem 1, Theorem 4 (``laws``, ``choice``; empty: not built) and
    Theorem 5 (``lowfreq``: ``(law_remove, law_add, mu)``) of
    docs/theory/dpmf_balls_in_bins.md; build it with :func:`bandmf_lowfreq_balls_in_bins`.
    Each is an upper bound on the same curves, so their least at every epsilon is.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation per unit of clipping norm, > 0.
    candidates : tuple
        Theorem 1's candidates.
    laws : tuple
        Theorem 4's laws per class size (empty: not built).
    choice : tuple
        Theorem 4's ``(classes, p_factor, beta_factor)`` (empty: not built).
    lowfreq : tuple
        Theorem 5's ``((z, w, tail) remove, (z, w, tail) add, mu)``, ``mu`` the shared
        Gaussian's shift (empty: not built).

    Examples
    --------
    >>> run = bandmf_lowfreq_balls_in_bins(3.0, 12, cycle_length=4, strategy=[1.0, 0.6, 0.3],
    ...                                    factor_points=9, points=15, candidates=())
    >>> type(run).__name__, len(run.lowfreq)
    ('BandMFLowFreqBallsInBins', 3)
    """

    lowfreq: tuple = ()

    def _transfer_delta(self, eps: np.ndarray) -> np.ndarray:
        base = super()._transfer_delta(eps)
        if not self.lowfreq:
            return base
        (zr, wr, tr), (za, wa, ta), mu = self.lowfreq
        mine = np.maximum(shared_law_delta(zr, wr, tr, True, eps, mu),
                          shared_law_delta(za, wa, ta, False, eps, mu))
        return np.minimum(base, mine)

    def __repr__(self) -> str:
        return (f"BandMFLowFreqBallsInBins(noise_multiplier={self.noise_multiplier!r}, "
                f"candidates=..., laws=<{len(self.laws)} class sizes>, choice={self.choice!r}, "
                f"lowfreq=<{'built' if self.lowfreq else 'not built'}>)")


def lowfreq_cost(noise_multiplier: float, instance: tuple, cycle_length: int,
                 factor_points: int, points: int) -> float:
    """Estimated CPU seconds of Theorem 5's two laws: conditions times own points times
    ``k`` times the partial-sum cells of each direction, at :data:`_SECONDS_PER_UNIT`.

    Examples
    --------
    >>> inst = lowfreq_instance([1.0, 0.5, 0.25, 0.125], 100, 10)
    >>> 10 < lowfreq_cost(4.0, inst, 10, 31, 61) < 60
    True
    """
    alpha, _, gamma = (float(x) for x in instance)
    a = math.sqrt(alpha) / noise_multiplier
    c = math.sqrt(gamma) / noise_multiplier
    k = int(cycle_length)
    (wr, rr), (wa, ra) = REMOVE_GRID, ADD_GRID
    rem = factor_points**2 * points * k * (2 * wr * (a + c * math.sqrt(2)) + math.log(k)) / rr
    nfa, nya = _add_factor_points(c, factor_points), min(ADD_POINTS[1], points)
    add = 4 * (nfa - 1) ** 2 * nya * k * min(2 * wa * (a + c * math.sqrt(2)), 23.0) / ra
    return _SECONDS_PER_UNIT * (rem + add)


def lowfreq_points(noise_multiplier: float, iterations: int, cycle_length: int,
                   strategy: object, budget: float = LOWFREQ_BUDGET) -> tuple | None:
    """``(instance, (factor_points, points))`` of Theorem 5 by default: the most of
    :data:`REMOVE_POINTS` within ``budget`` estimated seconds; None where Theorem 5 does
    not apply (``k`` outside ``[4, 64]``, the domination not certified, or exponents past
    the round-off slack's range at tiny noise) or none fits.

    Examples
    --------
    >>> lowfreq_points(4.0, 100, 10, [1.0, 0.5, 0.25, 0.125])[1]
    (31, 61)
    >>> lowfreq_points(8.0, 2000, 100, [1.0, 0.5, 0.25]) is None      # k > 64
    True
    """
    k = int(cycle_length)
    if not 4 <= k <= min(int(iterations), MAX_CYCLE):
        return None
    try:
        inst = lowfreq_instance(strategy, iterations, k)
    except RuntimeError:  # pragma: no cover - not certified: not a candidate
        return None
    a, c = math.sqrt(inst[0]) / noise_multiplier, math.sqrt(inst[2]) / noise_multiplier
    if a < _MIN_SCALE or _reach(a, c, max(REMOVE_GRID[0], ADD_GRID[0])) > _MAX_EXPONENT:
        return None
    for pts in REMOVE_POINTS:
        if lowfreq_cost(noise_multiplier, inst, k, *pts) <= budget:
            return inst, pts
    return None
