"""A residue class dominated by white noise plus a cyclic AR(1) process (Theorem 6 of
docs/theory/dpmf_balls_in_bins.md, session 34): a tighter stand-in than Theorem 4's
two-band one where the class block's couplings decay over several class distances.

The class block ``G_r`` of Theorem 4 (``t`` bins) is dominated (Lemma 2') by
``H = a I + gamma K + beta J``, ``K`` the covariance of a Gaussian process
``W_0 = E_0``, ``W_s = alpha_s W_{s-1} + beta_s W_0 + tau_s E_s`` (``E`` independent
standard normals; the coefficients are the regressions of the cyclic AR(1) process of
correlation ``rho``, but any non-negative coefficients define a process, and ``K`` is
computed from them).  Its pair's likelihood ratio is ``W_B Z'`` with

    ``Z' = (1/t) sum_s exp(A X_s + C W_s - (A^2 + C^2 K_ss) / 2)``,

``A = sqrt(a) / sigma``, ``C = sqrt(gamma) / sigma``, ``X`` independent standard normals.
Given ``W_0``, ``W`` is a Markov chain, so the remove direction's
``E[psi(Z')]`` is bounded by a transfer whose state is (``W_s`` on a grid, the
partial sum on a log grid): the innovations are replaced by hat masses of their
conditional laws on the ``W`` grid (Edmundson-Madansky one coordinate at a time,
``psi(Z')`` being convex in each innovation), the ``X_s`` by their hat masses, and the
partial sums rounded without bias; the innovations' upper tails are charged by a
closed-form bound on ``E[Z'; E_s above the grid]`` per state.  Session 35: the ``X_s``
hats are linear in ``e^{A x}`` (never looser), and states whose whole remaining
contribution to the bound is negligible are dropped and charged to the tail (Lemma 9 of
the same page, :func:`_values`): the same law at a third of the CPU.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from dpacct.accountant.validation import check_count, check_positive
from dpacct.mechanisms.algorithms.bandmf_ar_sweep import apply_term, term_cells
from dpacct.mechanisms.algorithms.bandmf_balls_in_bins_core import (
    _lambda_max_upper,
)
from dpacct.mechanisms.algorithms.bandmf_banded import _class_blocks, _dominated
from dpacct.mechanisms.algorithms.bandmf_two_band import (
    _TERM_SLACK,
    _away,
    _compact,
    _hat_weights,
    _spread,
)

__all__ = ["ar_coefficients", "ar_instances", "ar_remove_law"]

#: relative slack on the float hat masses of the innovations (second differences of
#: ``psi(x) = x Phi(x) + phi(x)`` through ``erfcx``; see :func:`_hats`)
_HAT_REL = 1e-10
#: relative slack on the charged innovation tails (``ndtr`` and ``exp``, a few ulps)
_TAIL_REL = 1e-9


def ar_coefficients(t: int, rho: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The recursion ``W_0 = tau_0 E_0``, ``W_s = alpha_s W_{s-1} + beta_s W_0 + tau_s E_s``
    of the cyclic AR(1) process of ``t`` points and correlation ``rho`` (unit variance,
    covariance ``(rho^d + rho^(t - d)) / (1 + rho^t)`` at cyclic distance ``d``), and the
    covariance ``K`` of the process the returned floats define (which is what a stand-in
    uses: no other property of the coefficients is relied on).

    Given ``W_0``, the cyclic process is a Markov chain along ``1..t-1`` (its precision is
    cyclic tridiagonal), so ``W_s`` given ``W_0..W_{s-1}`` depends on ``W_{s-1}`` and
    ``W_0`` only.  Negative coefficients (round-off) are set to 0.

    Examples
    --------
    >>> al, be, ta, k = ar_coefficients(6, 0.5)
    >>> bool(abs(k[0, 1] - (0.5 + 0.5**5) / (1 + 0.5**6)) < 1e-12), bool(be[1] == 0.0)
    (True, True)
    """
    t = check_count(t, "t")
    if t < 3:
        raise ValueError(f"t must be an integer >= 3, got {t}")
    rho = float(rho)
    if not 0.0 < rho < 1.0:
        raise ValueError(f"rho must be in (0, 1), got {rho}")
    d = np.abs(np.subtract.outer(np.arange(t), np.arange(t)))
    cov = (rho ** d + rho ** (t - d)) / (1 + rho ** t)
    alpha, beta, tau = np.zeros(t), np.zeros(t), np.zeros(t)
    tau[0] = 1.0
    for s in range(1, t):
        reg = [s - 1] if s == 1 else [s - 1, 0]
        c = np.linalg.solve(cov[np.ix_(reg, reg)], cov[reg, s])
        alpha[s] = max(float(c[0]), 0.0)
        beta[s] = max(float(c[1]), 0.0) if s > 1 else 0.0
        tau[s] = math.sqrt(max(1.0 - float(cov[reg, s] @ c), 1e-12))
    lower = np.zeros((t, t))  # W = L E
    lower[0, 0] = tau[0]
    for s in range(1, t):
        lower[s] = alpha[s] * lower[s - 1] + beta[s] * lower[0]
        lower[s, s] = tau[s]
    return alpha, beta, tau, lower @ lower.T


def ar_instances(strategy: object, iterations: int, cycle_length: int, classes: int,
                 rho: float, gamma: float, beta: float = 0.0) -> tuple:
    """Per class size ``t >= 3`` of ``classes`` residue classes, ``(t, a, gamma, rho, beta)``
    with ``G_r <= a I + gamma K + beta J`` certified for every class block of that size
    (``K`` of :func:`ar_coefficients`; ``a`` a rigorous upper bound on ``lambda_max(G_r -
    gamma K - beta J)`` times ``1 + 1e-8``, at least ``1e-6`` of the diagonal, then the
    domination re-checked with margin ``1e-9 a`` as in Theorem 3).  A class of one or two
    bins is ``None`` (left to Theorem 4's own stand-in).

    Examples
    --------
    >>> inst = ar_instances([1.0, 0.5, 0.25, 0.125], 100, 10, 2, 0.4, 10.0)
    >>> [(t, round(a, 2) > 0) for t, a, *_ in inst]
    [(5, True)]
    """
    n = check_count(iterations, "iterations")
    k = check_count(cycle_length, "cycle_length")
    g = check_count(classes, "classes")
    gamma = check_positive("gamma", gamma)
    beta = float(beta)
    if not (math.isfinite(beta) and beta >= 0):
        raise ValueError(f"beta must be finite and >= 0, got {beta}")
    by_size = _class_blocks(np.asarray(strategy, dtype=float), n, k, g)
    out = []
    for t, blocks in sorted(by_size.items()):
        if t < 3:
            continue
        cov = ar_coefficients(t, rho)[3]
        ref0 = gamma * cov + beta * np.ones((t, t))
        floor = 1e-6 * max(float(np.diag(b).max()) for b in blocks)
        a = max(max(_lambda_max_upper(b - ref0) for b in blocks) * (1 + 1e-8), floor)
        for _ in range(20):
            if all(_dominated(b, ref0 + a * np.eye(t), a) for b in blocks):
                break
            a *= 1 + 1e-6
        else:  # pragma: no cover - the margin is 1e-8 against round-off of 1e-12
            raise RuntimeError("AR(1) domination could not be certified")
        out.append((t, a, gamma, float(rho), beta))
    return tuple(out)


def _psi(x: np.ndarray) -> np.ndarray:
    """``psi(x) = x Phi(x) + phi(x)`` (the second antiderivative of the normal density)
    for ``x <= 1``, as ``phi(x) (1 + x sqrt(pi / 2) erfcx(-x / sqrt 2))``."""
    phi = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return phi * (1.0 + x * math.sqrt(math.pi / 2) * special.erfcx(-x / math.sqrt(2)))


def _hats(mu: np.ndarray, sd: float, grid: np.ndarray) -> np.ndarray:
    """Upper bounds on the hat masses of ``N(mu_i, sd^2)`` on the uniform ``grid``, the
    mass below ``grid[0]`` moved onto it (rows ``i``).

    With ``h = step / sd`` and ``c`` a node in standard units, a full hat's mass is
    ``(psi(c + h) - 2 psi(c) + psi(c - h)) / h`` (even in ``c``: evaluated at ``-|c|``,
    where every argument is at most ``h <= 1``), and the first node's, with the moved
    tail, ``(psi(c + h) - psi(c)) / h`` (its ``c <= 0`` is checked).  The last node takes
    a full hat (more mass than its half hat: an upper bound for a non-negative
    integrand).  Each is enlarged by :data:`_HAT_REL` times the sum of the ``psi`` terms
    over ``h`` (their round-off: a few ulps of each ``psi``, ``x^2`` ulps for the
    ``erfcx`` cancellation at ``|x| <= 40``), nodes past 38 standard units get ``1e-300``
    (``Phi(-37) < 1e-300``)."""
    step = float(grid[1] - grid[0])
    h = step / sd
    if h > 1.0:
        raise ValueError(f"grid step must be at most the innovation's sd, got {step} > {sd}")
    c = (grid[None, :] - mu[:, None]) / sd
    if np.any(c[:, 0] > 0):
        raise ValueError("conditional mean below the grid's first node")
    ca = -np.abs(c)
    far = ca < -38.0
    ca = np.maximum(ca, -38.0)
    p0, pp, pm = _psi(ca), _psi(ca + h), _psi(ca - h)
    full = (pp - 2.0 * p0 + pm) / h
    err = _HAT_REL * (pp + 2.0 * p0 + pm) / h
    out = np.maximum(full, 0.0) + err
    c0 = c[:, 0]
    q0, q1 = _psi(c0), _psi(c0 + h)
    out[:, 0] = np.maximum(q1 - q0, 0.0) / h + _HAT_REL * (q1 + q0) / h
    out[far] = 1e-300
    return out


def _future(alpha: np.ndarray, beta: np.ndarray, tau: np.ndarray, s: int) -> tuple:
    """For ``j >= s``: ``W_j = pi_j W_s + kappa_j W_0 + noise`` of variance ``nu_j``
    (at ``s = 0`` the two coefficients are added: ``W_0`` is both)."""
    t = alpha.size
    pi, kap, nu = np.zeros(t - s), np.zeros(t - s), np.zeros(t - s)
    pi[0] = 1.0
    for j in range(s + 1, t):
        i = j - s
        pi[i] = alpha[j] * pi[i - 1]
        kap[i] = alpha[j] * kap[i - 1] + beta[j]
        nu[i] = alpha[j] ** 2 * nu[i - 1] + tau[j] ** 2
    if s == 0:
        pi, kap = pi + kap, np.zeros_like(kap)
    return pi, kap, nu


def _tail_charge(mu: np.ndarray, sd: float, top: float, fut: tuple, w0: float, big_c: float,
                 half: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
    """Per state ``i`` (conditional mean ``mu_i`` of ``W_s``), the coefficients ``(q_i, r_i)``
    of the charged upper tail ``E[Z'; W_s > top] <= S q_i + r_i`` (``S`` the partial sum
    before term ``s``): ``q = P(W_s > top)`` and ``r = (1/t) sum_{j >= s} E[exp(C W_j -
    half_j); W_s > top]`` with ``half_j = C^2 K_jj / 2`` (the caller passes the ``W`` part
    of the exponent only: each ``X`` factor ``e^{A X_j - A^2 / 2}`` has mean 1, so its
    ``A^2 / 2`` is not subtracted here), in closed form:
    ``E[e^{b W_s}; W_s > top] = e^{b mu + b^2 sd^2 / 2} Phi((mu + b sd^2 - top) / sd)``."""
    pi, kap, nu = fut
    z = (top - mu) / sd
    q = special.ndtr(-z)
    b = big_c * pi[None, :]
    lead = (big_c * kap * w0 + 0.5 * big_c * big_c * nu - half[-pi.size:])[None, :]
    expo = lead + b * mu[:, None] + 0.5 * (b * sd) ** 2
    r = np.sum(np.exp(expo) * special.ndtr(b * sd - z[:, None]), axis=1) / t
    return q * (1 + _TAIL_REL) + 1e-300, r * (1 + _TAIL_REL) + 1e-300


def ar_remove_law(noise_multiplier: float, instance: tuple, *, points: int = 41,
                  x_points: int = 41, width: float = 8.0, moved_width: float = 3.0,
                  rho: float = 0.03, theta: float = 1e-10,
                  prune: float = 1e-17, late_rho: float | None = None,
                  late_from: int = 0) -> tuple[np.ndarray, np.ndarray, float]:
    """A law ``(z, w)`` and tail with ``E_P[psi(Z')] <= sum_i w_i psi(z_i) + tail`` for every
    convex non-decreasing ``psi`` with ``0 <= psi(z) <= z`` (remove direction; Theorem 6 of
    docs/theory/dpmf_balls_in_bins.md), for the stand-in ``(t, a, gamma, rho_ar, beta)``
    of :func:`ar_instances` (``beta`` is composed afterwards by Lemma 6).

    Parameters
    ----------
    noise_multiplier : float
        ``sigma``, > 0.
    instance : tuple
        ``(t, a, gamma, rho_ar, beta)``.
    points, x_points : int
        Grid points of ``W_s`` and of each ``X_s``, >= 3.
    width, moved_width : float
        Grid extent in standard deviations above (charged tail) and below (moved at no
        charge), > 0.
    rho : float
        Log spacing of the partial-sum grid, in (0, 0.5].
    theta : float
        Smallest positive partial-sum grid value, > 0.
    prune : float
        A state (``W_s`` node, partial sum) whose contribution to the bound, times its
        ``W_0`` node's mass, is at most ``prune`` (>= 0; by :func:`_values`, which uses
        ``psi(z) <= z``) is dropped and that contribution added to ``tail`` instead
        (session 35: at 16 bands a third of the CPU, the tail below 1e-11); 0 keeps every
        state.
    late_rho : float, optional
        Log spacing, in (0, 0.5], of the partial-sum grid from term ``late_from`` on
        (session 38; None: ``rho`` throughout).  Each term's rounding is a
        mean-preserving two-point spread onto whichever grid that term uses, so the bound
        holds with a grid per term; the late terms' roundings are the larger part of the
        grid's excess.
    late_from : int
        The first term (``>= 0``; ``t`` or more: none) rounded onto ``late_rho``'s grid.

    Returns
    -------
    z, w : numpy.ndarray
        Support (increasing) and masses.
    tail : float
        The charged tails (added to delta).

    Examples
    --------
    >>> z, w, tail = ar_remove_law(2.0, (4, 1.0, 1.0, 0.5, 0.0), points=17, x_points=9)
    >>> mean = float(np.sum(w * z))    # E[Z'] = 1; the hat laws spread it (convex order)
    >>> bool(1.0 <= mean < 1.1), bool(tail < 1e-6)
    (True, True)
    """
    grids, coef = _law_setup(noise_multiplier, instance,
                             (points, x_points, width, moved_width, rho, theta, prune))
    _, t, points, x_points, width, moved, rho, theta, prune = grids
    alpha, beta, tau, cov, big_a, big_c, half = coef
    wsd = math.sqrt(float(np.diag(cov).max()))
    wg = np.linspace(-moved * wsd, width * wsd, points)
    if wg[1] - wg[0] > float(tau.min()):
        need = math.ceil((width + moved) * wsd / float(tau.min())) + 1
        raise ValueError(f"points must be at least {need} here (the grid step at most the "
                         f"least innovation sd {float(tau.min()):.3g}), got {points}")
    xg = np.linspace(-moved, width, x_points)
    # hats piecewise linear in u = e^{A x} (Z' is affine in it): never above the hats
    # linear in x for a convex non-decreasing integrand (session 35)
    wx = _hat_weights(1, xg, big_a, True)
    ex = np.exp(big_a * xg)
    tail = float(special.ndtr(big_a - width) + (t - 1) * special.ndtr(-width)) * (1 + 1e-9)
    fac = 1 + _TERM_SLACK
    smax = float(np.sum(np.exp(big_a * width + big_c * wg[-1] - half))) / t * fac
    gs = _sum_grids(smax, theta, rho, late_rho, late_from, t)
    g = gs[-1]
    futs = [_future(alpha, beta, tau, s) for s in range(t)]
    w0 = _hats(np.zeros(1), tau[0], wg)[0]
    # the charged tails integrate the X factors out (mean 1): only C^2 K_jj / 2 is
    # subtracted there (review 34, F2: subtracting half_j made every r_s low by e^{-A^2/2})
    half_w = 0.5 * big_c ** 2 * np.diag(cov)
    r0 = _tail_charge(np.zeros(1), tau[0], float(wg[-1]), futs[0], 0.0, big_c, half_w, t)[1]
    tail += float(r0[0])
    # the mean of term s at each W node (the X hat law's mean of e^{A x} folded in)
    tmean = np.exp(big_c * wg[None, :] - half[:, None]) * float(wx @ ex) / t * fac
    mass = np.zeros(g.size)
    ctx = (alpha, beta, tau, wg, futs, big_c, half_w, t)
    terms = (gs, ex, wx, big_c, half, t, fac, tmean)
    for law, charged in _sweep(ctx, terms, w0, prune):
        tail += charged
        if law is not None:
            mass += law
    keep = mass > 0
    z, w = _compact(g[keep], mass[keep], True)
    return z, w, float(np.nextafter(tail, np.inf))


def _sum_grids(smax: float, theta: float, rho: float, late_rho: float | None,
               late_from: int, t: int) -> list:
    """Per term ``s``, the partial-sum grid after adding it: ``0`` and ``theta e^(r i)``
    up to ``2 smax`` at least, ``r = rho`` before ``late_from`` and ``late_rho`` from it
    on (equal arrays for equal spacings); ``late_rho`` and ``late_from``
    checked."""
    if late_rho is not None:
        late_rho = check_positive("late_rho", late_rho)
        if late_rho > 0.5:
            raise ValueError(f"late_rho must be in (0, 0.5], got {late_rho}")
    if isinstance(late_from, bool) or not isinstance(late_from, (int, np.integer)) \
            or late_from < 0:
        raise ValueError(f"late_from must be an integer >= 0, got {late_from!r}")

    def grid(r: float) -> np.ndarray:
        return np.concatenate([[0.0], theta * np.exp(r * np.arange(
            math.ceil(math.log(2 * smax / theta) / r) + 2))])

    early = grid(rho)
    if late_rho is None or late_from >= t:
        return [early] * t
    late = grid(late_rho)
    return [early if s < late_from else late for s in range(t)]


def _law_setup(noise_multiplier: float, instance: tuple, grids: tuple) -> tuple[tuple, tuple]:
    """The checked arguments of a Theorem 6 or 6' law, ``(sigma, t, points, x_points,
    width, moved_width, rho, theta, prune)``, and the stand-in's ``(alpha, beta, tau, K,
    A, C, half)`` (``half_s = (A^2 + C^2 K_ss) / 2``); OverflowError where the exponents
    pass the proved range (50)."""
    sigma = check_positive("noise_multiplier", noise_multiplier)
    t, a, gamma, rho_ar, _ = instance
    points, x_points, width, moved_width, rho, theta, prune = grids
    points, x_points = check_count(points, "points"), check_count(x_points, "x_points")
    if min(points, x_points) < 3:
        raise ValueError(f"points and x_points must be >= 3, got {points}, {x_points}")
    width, moved = check_positive("width", width), check_positive("moved_width", moved_width)
    rho, theta = check_positive("rho", rho), check_positive("theta", theta)
    prune = float(prune)
    if not (math.isfinite(prune) and prune >= 0):
        raise ValueError(f"prune must be finite and >= 0, got {prune}")
    if rho > 0.5:
        raise ValueError(f"rho must be in (0, 0.5], got {rho}")
    alpha, beta, tau, cov = ar_coefficients(t, rho_ar)
    big_a, big_c = math.sqrt(a) / sigma, math.sqrt(gamma) / sigma
    half = 0.5 * (big_a ** 2 + big_c ** 2 * np.diag(cov))
    if (big_a + big_c) * (width + 1) + float(half.max()) > 50.0:
        raise OverflowError("exponents beyond the proved range")
    return ((sigma, t, points, x_points, width, moved, rho, theta, prune),
            (alpha, beta, tau, cov, big_a, big_c, half))


def _node_transfer(ctx: tuple, terms: tuple, i0: int, x0: float, m0: float,
                   prune: float) -> tuple[np.ndarray | None, float]:
    """The transfer given ``W_0`` at node ``i0`` (value ``x0``, hat mass ``m0``): the final
    partial-sum masses times ``m0`` (None if every state was pruned) and what it adds to
    the tail (the charged innovation tails and the pruned states' values, times ``m0``)."""
    wg = ctx[3]
    gs, ex, wx, big_c, half, t, fac, tmean = terms
    steps, value, d, node = _first_term(ctx, terms, i0, x0)
    if m0 * node * _PRUNE_SLACK <= prune:  # the whole W_0 node, charged
        return None, m0 * node * _PRUNE_SLACK
    tail = 0.0
    for s in range(1, t):
        g = gs[s - 1]  # the grid of the partial sums before term s
        occ = np.nonzero(d.any(axis=0))[0]
        bot, top = int(occ[0]), int(occ[-1]) + 1
        charged, cut, sums = _carry(d[:, bot:top], g[bot:top], steps[s - 1], value, s,
                                    tmean, m0, prune)
        tail += charged
        tail += cut
        occ = np.nonzero(sums.any(axis=0))[0]
        if occ.size == 0:
            return None, tail
        lo, hi = int(occ[0]), int(occ[-1]) + 1
        d = _add_term(sums[:, lo:hi], g, (bot + lo, bot + hi), None, wg, ex, wx, big_c,
                      half[s], t, fac, g_out=gs[s])
    return m0 * d.sum(axis=0), tail


def _first_term(ctx: tuple, terms: tuple, i0: int, x0: float) -> tuple:
    """A node's start (``W_0`` at node ``i0``, value ``x0``): its kernels and values, the
    states after the first term, and the node's value (what pruning it whole costs, per
    unit of its mass)."""
    wg = ctx[3]
    gs, ex, wx, big_c, half, t, fac, tmean = terms
    steps = _steps(ctx, x0)
    value = _values(steps, tmean)
    d = _add_term(np.zeros((wg.size, gs[0].size)), gs[0], None, i0, x0, ex, wx, big_c,
                  half[0], t, fac)
    node = float(np.sum(d @ gs[0] * value[0][0] + d.sum(axis=1) * value[1][0]))
    return steps, value, d, node


def _carry(sums: np.ndarray, g: np.ndarray, step: tuple, value: tuple, s: int,
           tmean: np.ndarray, m0: float, prune: float) -> tuple[float, float, np.ndarray]:
    """Term ``s``'s kernel on one node's states (``sums`` on the cells of values ``g``):
    the charged innovation tail and the pruned states' charge (each times ``m0``, added
    by the caller in that order) and the states moved to ``W_s``."""
    kern, q, r = step
    charged = m0 * float(np.sum(sums @ g * q + sums.sum(axis=1) * r)) * (1 + 1e-9)
    sums = kern.T @ sums
    cut, sums = _prune(sums, g, value[0][s], value[1][s] + value[0][s] * tmean[s], prune / m0)
    return charged, m0 * cut * _PRUNE_SLACK, sums


def _sweep(ctx: tuple, terms: tuple, w0: np.ndarray, prune: float) -> list:
    """Every ``W_0`` node's transfer, as :func:`_node_transfer` returns it (a list in node
    order), run one term at a time over all nodes (session 45): each term's rounding is
    computed once for every node (:func:`.bandmf_ar_sweep.term_cells`) and applied to each
    (:func:`.bandmf_ar_sweep.apply_term`), bit for bit ``_node_transfer``'s floats (the
    same operations per node in the same order; a state's masses are kept on the window
    of cells that holds them instead of the whole grid).  The nodes' kernels are held
    until their term has run."""
    wg = ctx[3]
    gs, ex, wx, big_c, half, t, fac, tmean = terms
    out: list = [None] * wg.size
    live = []  # [i0, m0, steps, value, masses, offset, tail]
    for i0, (x0, m0) in enumerate(zip(wg, w0, strict=True)):
        x0, m0 = float(x0), float(m0)
        steps, value, d, node = _first_term(ctx, terms, i0, x0)
        if m0 * node * _PRUNE_SLACK <= prune:  # the whole W_0 node, charged
            out[i0] = (None, m0 * node * _PRUNE_SLACK)
            continue
        live.append([i0, m0, steps, value, d, 0, 0.0])
    for s in range(1, t):
        g = gs[s - 1]  # the grid of the partial sums before term s
        moves = []
        for node in live:
            i0, m0, steps, value, d, off, tail = node
            occ = np.nonzero(d.any(axis=0))[0]
            bot, top = off + int(occ[0]), off + int(occ[-1]) + 1
            charged, cut, sums = _carry(d[:, bot - off:top - off], g[bot:top], steps[s - 1],
                                        value, s, tmean, m0, prune)
            steps[s - 1] = None
            tail += charged
            tail += cut
            node[6] = tail
            occ = np.nonzero(sums.any(axis=0))[0]
            if occ.size == 0:
                out[i0] = (None, tail)
                continue
            lo, hi = int(occ[0]), int(occ[-1]) + 1
            moves.append((node, sums[:, lo:hi], (bot + lo, bot + hi)))
        live = [m[0] for m in moves]
        if not moves:
            break
        span = (min(m[2][0] for m in moves), max(m[2][1] for m in moves))
        cells = term_cells(g, span, gs[s], wg, ex, big_c, half[s], t, fac, True)
        for node, sums, cols in moves:
            if cells is None:  # pragma: no cover - the grid reaches twice the largest sum
                node[4] = _add_term(sums, g, cols, None, wg, ex, wx, big_c, half[s], t, fac,
                                    g_out=gs[s])
                node[5] = 0
            else:
                node[4], node[5] = apply_term(cells, sums, cols, wx, gs[s].size)
    for i0, m0, _, _, d, off, tail in live:
        law = np.zeros(gs[-1].size)
        law[off:off + d.shape[1]] = m0 * d.sum(axis=0)
        out[i0] = (law, tail)
    return out


#: enlargement of a pruned state's charge: the law's final rounding of each atom up onto
#: ``exp(1e-4 i)`` (``psi(z) <= z`` is applied to the unrounded sum), the rounding's one-ulp
#: upward bias per step and the value recursion's float sums (relative ``t N u``)
_PRUNE_SLACK = 1 + 2e-4


def _steps(ctx: tuple, x0: float) -> list:
    """Per step ``s = 1..t-1`` given ``W_0 = x0``: the hat kernel ``(N, N)`` of ``W_s`` given
    the node of ``W_{s-1}`` and the charged-tail coefficients ``(q, r)`` per node."""
    alpha, beta, tau, wg, futs, big_c, half_w, t = ctx
    out = []
    for s in range(1, t):
        mu = alpha[s] * wg + beta[s] * x0
        q, r = _tail_charge(mu, tau[s], float(wg[-1]), futs[s], x0, big_c, half_w, t)
        out.append((_hats(mu, tau[s], wg), q, r))
    return out


def _values(steps: list, tmean: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(a, b)``, each ``(t, N)``: what a unit of mass at ``W_s`` node ``i`` with partial sum
    ``S`` (term ``s`` included) adds to the computed bound, at most ``a[s, i] S + b[s, i]``.

    The transfer is linear in its state, and ``psi(z) <= z``; so the final atoms weigh
    at most their means and each later step adds its charged tail ``q S + r``, its term's
    mean (``tmean``) and the kernel's move: ``a[t-1] = 1``, ``b[t-1] = 0``, and
    ``a[s-1] = q_s + K_s a[s]``, ``b[s-1] = r_s + K_s (a[s] tmean[s] + b[s])``."""
    t = tmean.shape[0]
    n = tmean.shape[1]
    a, b = np.ones((t, n)), np.zeros((t, n))
    for s in range(t - 1, 0, -1):
        kern, q, r = steps[s - 1]
        a[s - 1] = q + kern @ a[s]
        b[s - 1] = r + kern @ (a[s] * tmean[s] + b[s])
    return a, b


def _prune(sums: np.ndarray, cells: np.ndarray, a: np.ndarray, b: np.ndarray,
           limit: float) -> tuple[float, np.ndarray]:
    """Drop the states (``W`` node ``i``, partial sum ``cells[c]`` before the next term)
    whose charge ``sums[i, c] (a_i cells[c] + b_i)`` (``b`` including the next term's mean)
    is at most ``limit``; return the charges' total and the pruned state."""
    charge = sums * (a[:, None] * cells[None, :] + b[:, None])
    cut = (charge <= limit) & (sums > 0)
    total = float(charge[cut].sum())
    return total, np.where(cut, 0.0, sums)


def _add_term(d: np.ndarray, g: np.ndarray, cells: tuple | None, i0: int | None, wval,
              ex: np.ndarray, wx: np.ndarray, big_c: float, half_s: float, t: int,
              fac: float, up: bool = True, g_out: np.ndarray | None = None) -> np.ndarray:
    """Add term ``s`` (``exp(A x + C w - half_s) / t`` over the ``X`` hat law) to every
    state: ``d[i, c]`` (``W`` node ``i``, partial-sum cell ``bot + c``) moves to
    ``(i, round(g[cell] + term))``.  The first term (``i0`` given) starts from 0 at the
    node ``i0`` of ``W_0 = wval``.  ``up`` False (the add direction, Theorem 6'): sums
    moved one ulp down and rounded with mean at most the sum; sums at or above ``g[-1]``
    stay in that (absorbing) cell.  ``g_out``: the grid the new sums are rounded onto
    (None: ``g``, the grid of the cells)."""
    g_out = g if g_out is None else g_out
    size = g_out.size
    if i0 is not None:
        wv = np.array([wval])
        base = np.zeros((1, 1))
        rows = np.array([i0])
        mass = np.ones((1, 1))
    else:
        wv = wval
        bot, top = cells
        live = np.nonzero(d.any(axis=1))[0]
        rows, wv, mass = live, wv[live], d[live]
        base = g[bot:top][None, :]
    term = np.exp(big_c * wv - half_s)[:, None] * ex[None, :] / t * fac  # (rows, x)
    y = _away(base[:, None, :] + term[:, :, None], up)
    if not up:
        y = np.maximum(y, 0.0)
    j, p = _spread(y, g_out, up)
    wt = mass[:, None, :] * wx[None, :, None]
    hi = wt * p
    wt -= hi
    idx = rows[:, None, None] * (size + 1) + j
    nrow = d.shape[0]
    out = np.bincount(idx.ravel(), wt.ravel(), minlength=nrow * (size + 1))
    out += np.bincount((idx + 1).ravel(), hi.ravel(), minlength=nrow * (size + 1))
    return out.reshape(nrow, size + 1)[:, :size]
