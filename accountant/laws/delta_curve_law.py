"""From an exact privacy curve ``delta(eps)`` to a loss law that dominates it.

Connect-the-dots (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022, "Connect the dots:
tighter discrete approximations of privacy loss distributions", Section 3): the curve is
sampled on a grid of epsilons refined until its chords are within a relative ``1e-7``
of it, and the atomic pair whose hockey-stick curve is the chord interpolation (in
``t = e^eps``) is built on it, symmetric in the two directions.  A privacy curve is
convex in ``e^eps``, so the chords lie above it and the pair dominates (Zhu, Dong, Wang
2022, "Optimal accounting of differential privacy via characteristic function",
Section 3).  The argument in full: ``docs/theory/pld.md``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..numerics import TINY
from ..validation import check_positive, check_probability
from .loss_law import AtomicLossLaw

__all__ = [
    "CURVE_MAX_EPSILON",
    "CURVE_MAX_POINTS",
    "CURVE_RDP_RTOL",
    "CURVE_ROUND_UP",
    "CURVE_RTOL",
    "CURVE_TAIL",
    "call_vectorised",
    "curve_end",
    "loss_law_from_delta_curve",
]


def call_vectorised(fn: Callable, x: np.ndarray, what: str, owner: str) -> np.ndarray:
    """``fn`` on the 1-d array ``x``; a scalar-only function is called point by point.

    Raises ``ValueError`` naming ``owner`` when the result has NaNs or the wrong size.
    """
    x = np.asarray(x, dtype=float).reshape(-1)
    try:
        with np.errstate(all="ignore"):
            out = np.asarray(fn(x), dtype=float)
        if out.shape != x.shape:
            out = np.broadcast_to(out, x.shape).astype(float) if out.size == 1 else None
    except (TypeError, ValueError):  # a function of one float only
        out = None
    if out is None:
        with np.errstate(all="ignore"):
            out = np.array([float(fn(float(v))) for v in x], dtype=float)
    if np.isnan(out).any():
        bad = float(x[np.isnan(out)][0])
        raise ValueError(f"{owner}: the {what} returned NaN at {bad!r}")
    return out


#: the curve is sampled up to the first epsilon where it is at most this; the rest of
#: the mass goes to +inf (a composition of k copies carries about k times it there)
CURVE_TAIL = 1e-20
#: grid refinement stops when every chord is within this relative gap of the curve
CURVE_RTOL = 1e-7
#: most grid points the refinement may use (beyond, the chords still dominate)
CURVE_MAX_POINTS = 1 << 15
#: chord tolerance of the (smaller) law an exact curve's RDP is computed from
CURVE_RDP_RTOL = 1e-5
#: largest epsilon the grid reaches; a curve still above ``CURVE_TAIL`` there keeps
#: its value as mass at +inf
CURVE_MAX_EPSILON = 256.0
#: relative amount every curve value is raised by before the chords are drawn (round-off
#: of the user's function and of the slopes below)
CURVE_ROUND_UP = 1e-12


def curve_end(delta_fn: Callable[[np.ndarray], np.ndarray], tail: float) -> float:
    """Where the grid of :func:`_curve_grid` ends (0 when ``delta(0) = 0``).

    The smallest epsilon (to 1e-12 relative) with ``delta <= tail``; then the first
    zero of the curve if it has one within twice that (a bounded privacy loss: nothing
    goes to +inf); at most ``CURVE_MAX_EPSILON``.
    """
    if float(delta_fn(np.array([0.0]))[0]) <= 0.0:
        return 0.0
    hi = 1.0
    while float(delta_fn(np.array([hi]))[0]) > tail and hi < CURVE_MAX_EPSILON:
        hi *= 2.0
    if float(delta_fn(np.array([hi]))[0]) > tail:
        return hi
    lo = 0.0 if hi <= 1.0 else hi / 2.0
    for _ in range(60):
        xs = np.linspace(lo, hi, 17)
        ok = delta_fn(xs) <= tail
        ok[-1] = True
        i = int(np.argmax(ok))
        if i == 0:
            hi = float(xs[0])
            break
        lo, hi = float(xs[i - 1]), float(xs[i])
        if hi - lo <= 1e-12 * hi:
            break
    end = hi
    if float(delta_fn(np.array([end]))[0]) > 0.0 and float(delta_fn(np.array([2 * end]))[0]) == 0:
        lo, hi = end, 2.0 * end
        for _ in range(60):
            xs = np.linspace(lo, hi, 17)
            zero = delta_fn(xs) == 0.0
            zero[-1] = True
            i = int(np.argmax(zero))
            lo, hi = float(xs[max(i - 1, 0)]), float(xs[i])
            if i == 0 or hi - lo <= 1e-13 * hi:
                break
        end = hi
    return end


def _curve_grid(delta_fn: Callable[[np.ndarray], np.ndarray], tail: float, rtol: float, end: float):
    """Epsilons ``0 = e_0 < ... < e_n = end`` and curve values on them (see the caller)."""
    if end <= 0.0:
        return np.array([0.0]), np.array([0.0])
    eps = np.linspace(0.0, end, 257)
    vals = delta_fn(eps)
    while eps.size < CURVE_MAX_POINTS:
        mid = 0.5 * (eps[1:] + eps[:-1])
        dm = delta_fn(mid)
        # position of e^mid between e^eps[i] and e^eps[i+1], without overflow
        w = np.expm1(mid - eps[:-1]) / np.expm1(eps[1:] - eps[:-1])
        chord = vals[:-1] + w * (vals[1:] - vals[:-1])
        flag = chord - dm > rtol * dm + 1e-3 * tail
        # no interval below 1e-10 (relative) is split: round-off of the curve, not its
        # shape, decides there (and a split would repeat a grid point)
        flag &= np.diff(eps) > 1e-10 * np.maximum(eps[1:], 1e-3)
        if not flag.any():
            break
        room = CURVE_MAX_POINTS - eps.size
        idx = np.flatnonzero(flag)[:room]
        eps = np.insert(eps, idx + 1, mid[idx])
        vals = np.insert(vals, idx + 1, dm[idx])
    return eps, vals


def _convex_majorant_at_nodes(t: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Values ``g >= d`` at the nodes whose chords have non-decreasing slopes.

    Equal to ``d`` for a convex curve (the slopes of a privacy curve in ``t = e^eps``
    never decrease); a curve that is not convex (round-off) is raised from the right:
    each slope is capped by the next one, which keeps ``g >= d`` at every node.
    """
    dt = np.diff(t)
    slopes = np.diff(d) / dt
    if slopes.size == 0 or np.all(np.diff(slopes) >= 0):
        return d
    g = d.copy()
    nxt = 0.0
    for i in range(slopes.size - 1, -1, -1):
        s = min((g[i + 1] - d[i]) / dt[i], nxt)
        g[i] = g[i + 1] - s * dt[i]
        nxt = s
    return g


def _chord_law(eps: np.ndarray, vals: np.ndarray) -> AtomicLossLaw:
    """The symmetric atomic law whose hockey-stick curve is the chord interpolation, in
    ``e^eps``, of the curve values ``vals`` (rounded up) at the grid ``eps``."""
    d = np.minimum(vals * (1.0 + CURVE_ROUND_UP) + TINY * (vals > 0), 1.0)
    t = np.exp(eps)
    d = _convex_majorant_at_nodes(t, d)
    slopes = np.diff(d) / np.diff(t)  # s_1 .. s_n
    slopes = np.minimum(slopes, 0.0)
    nxt = np.append(slopes[1:], 0.0)  # s_2 .. s_{n+1}
    p = np.maximum(t[1:] * (nxt - slopes), 0.0)
    if not (np.all(np.isfinite(p)) and np.all(np.isfinite(d))):  # pragma: no cover
        raise RuntimeError("connect-the-dots masses are not finite; no atom may be dropped")
    inf_mass = float(d[-1])
    zero = 1.0 - d[0] + 2.0 * slopes[0]
    if zero < -1e-9:
        raise ValueError(
            "the delta curve is not the privacy curve of any pair symmetric in its two "
            f"directions: its slope in e^eps at eps=0 is {float(slopes[0])!r}, below "
            f"-(1 - delta(0)) / 2 = {float(-(1.0 - d[0]) / 2.0)!r}; pass the maximum of the "
            "curves of both neighbouring directions"
        )
    zero = max(zero, 0.0)  # a deficit of round-off size only adds mass (raises delta)
    keep = p > 0
    pos, pm = eps[1:][keep], p[keep]
    losses = np.concatenate([-pos[::-1], [0.0], pos])
    masses = np.concatenate([(pm * np.exp(-pos))[::-1], [zero], pm])
    return AtomicLossLaw(losses=losses, p=masses, inf_mass=inf_mass, q_neg_inf_mass=inf_mass)


def _checked_curve(delta_curve: Callable) -> Callable[[np.ndarray], np.ndarray]:
    """``delta_curve`` vectorised, with values outside [0, 1] a ``ValueError``."""

    def fn(x: np.ndarray) -> np.ndarray:
        out = call_vectorised(delta_curve, x, "delta curve", "loss_law_from_delta_curve")
        if np.any(out < -1e-12) or np.any(out > 1.0 + 1e-12):
            bad = float(x[(out < -1e-12) | (out > 1.0 + 1e-12)][0])
            raise ValueError(
                f"the delta curve must take values in [0, 1]; at eps={bad!r} it gives "
                f"{float(out[(out < -1e-12) | (out > 1.0 + 1e-12)][0])!r}"
            )
        return np.clip(out, 0.0, 1.0)

    return fn


def loss_law_from_delta_curve(
    delta_curve: Callable[[np.ndarray], np.ndarray],
    *,
    tail: float = CURVE_TAIL,
    rtol: float = CURVE_RTOL,
    end: float | None = None,
) -> AtomicLossLaw:
    """A symmetric atomic loss law whose hockey-stick curve dominates ``delta_curve``.

    Connect-the-dots from a privacy curve (Doroshenko, Ghazi, Kamath, Kumar,
    Manurangsi 2022, Section 3): on a grid ``0 = e_0 < e_1 < ... < e_n`` of epsilons,
    with ``t_i = e^{e_i}``, values ``d_i`` (the curve rounded up) and chord slopes
    ``s_i = (d_i - d_{i-1}) / (t_i - t_{i-1})`` (``s_{n+1} = 0``), the law has

    * an atom at loss ``e_i`` (``i >= 1``) with P-mass ``p_i = t_i (s_{i+1} - s_i)``,
    * its mirror at ``-e_i`` with P-mass ``p_i e^{-e_i}`` (so the pair is symmetric:
      the law of ``L`` under ``P`` is that of ``-L`` under ``Q``),
    * P-mass ``d_n`` at ``+inf`` (and Q-mass ``d_n`` at ``-inf``), and
    * the rest, ``1 - d_0 + 2 s_1``, at loss 0.

    Its hockey-stick curve is the chord interpolation of the curve in ``t = e^eps``,
    above it because a privacy curve is convex in ``t``; for negative epsilons it is
    the symmetrised dominating pair's (Zhu, Dong, Wang 2022, Section 3), so it
    dominates at every real epsilon.  The proof and the grid rule (where the grid ends,
    how it is refined): ``docs/theory/pld.md``, section "From a privacy curve to a loss
    law".

    Parameters
    ----------
    delta_curve : callable
        ``eps -> delta(eps)`` for ``eps >= 0`` (vectorised or scalar), the mechanism's
        privacy curve, the maximum over both neighbouring directions.
    tail : float
        Curve value below which the remaining mass is put at ``+inf``.
    rtol : float
        Relative chord tolerance of the grid refinement.
    end : float, optional
        Last grid epsilon, if already known (as found by the rule above).

    Returns
    -------
    AtomicLossLaw
        The same law serves both directions (it is symmetric).

    Raises
    ------
    ValueError
        The curve leaves [0, 1], increases, or is not the curve of a symmetric pair at
        0 (its chord slope at ``eps = 0`` is below ``-(1 - delta(0)) / 2``).

    Examples
    --------
    >>> import numpy as np
    >>> pure = lambda e: np.maximum(0.0, (np.e - np.exp(e)) / (1 + np.e))  # 1-DP RR
    >>> law = loss_law_from_delta_curve(pure)
    >>> law.inf_mass
    0.0
    >>> eps = np.array([0.0, 0.3, 0.7, 1.0])
    >>> bool(np.all(law.hockey_stick(eps) >= pure(eps)))
    True
    >>> float(np.max(law.hockey_stick(eps) - pure(eps))) < 1e-6
    True
    """
    if not callable(delta_curve):
        raise TypeError(
            f"delta_curve must be a callable eps -> delta(eps), got "
            f"{type(delta_curve).__name__} {delta_curve!r}"
        )
    tail = check_probability("tail", tail)
    rtol = check_positive("rtol", rtol)

    fn = _checked_curve(delta_curve)
    eps, vals = _curve_grid(fn, tail, rtol, curve_end(fn, tail) if end is None else end)
    if eps.size == 1:  # delta(0) = 0: the two outputs are identical
        return AtomicLossLaw(losses=np.array([0.0]), p=np.array([1.0]))
    if np.any(np.diff(vals) > 1e-12 * vals[:-1] + TINY):
        i = int(np.argmax(np.diff(vals) > 1e-12 * vals[:-1] + TINY))
        raise ValueError(
            f"the delta curve must be non-increasing in eps; it rises from "
            f"{float(vals[i])!r} at eps={float(eps[i])!r} to {float(vals[i + 1])!r} at "
            f"eps={float(eps[i + 1])!r}"
        )
    if np.any(np.diff(eps) <= 0):  # pragma: no cover - the refinement never repeats
        raise RuntimeError("connect-the-dots grid is not strictly increasing")
    return _chord_law(eps, vals)
