"""Mechanisms declared by what they know: one capability in, every query out.

A new mechanism states *one* of

=================================  ================================================
constructor                        what is declared
=================================  ================================================
:func:`mechanism_from_delta_curve`  its exact privacy curve ``delta(eps)``, ``eps >= 0``
:func:`mechanism_from_rdp`          a Renyi-DP curve ``alpha -> eps_alpha``
:func:`mechanism_from_loss_laws`    privacy-loss laws of dominating pairs
:func:`mechanism_from_pure_epsilon` a pure-DP epsilon
:func:`mechanism_from_epsilon_delta` a fixed ``(epsilon, delta)`` guarantee
=================================  ================================================

and the engine derives the rest -- composition, Poisson subsampling (add/remove
neighbours), subsampling without replacement (replace-one neighbours), the ledger,
calibration, ``epsilon_bounds``, ``rdp`` and ``tradeoff`` -- by building, from the
declaration, the representations the engine's routes consume:

* **exact curve -> loss law.**  The curve is sampled on a grid of epsilons refined until
  its chords are within a relative ``1e-7`` of it, and the connect-the-dots pair of
  Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022 ("Connect the dots: tighter
  discrete approximations of privacy loss distributions", Section 3: a PLD whose
  hockey-stick curve is the chord interpolation, in ``t = e^eps``, of the curve at the
  grid points) is built on it, symmetric in the two directions.  A privacy curve is
  convex in ``e^eps`` (a supremum of the affine functions ``P(S) - e^eps Q(S)``), so the
  chords lie above it: the pair *dominates* (Zhu, Dong, Wang 2022, "Optimal accounting
  of differential privacy via characteristic function", Section 3, for the existence
  of a dominating pair of any privacy profile; the symmetric extension
  ``delta(-eps) = 1 - e^-eps (1 - delta(eps))``).  See :func:`loss_law_from_delta_curve`.
* **loss law -> RDP.**  The Renyi divergence of the dominating pair,
  ``log E_P[e^{(alpha-1) L}] / (alpha - 1)`` (Mironov 2017, Definition 3), exactly for
  atomic and Gaussian laws and otherwise by a certified (chord) quadrature over the
  law's distribution functions; see :func:`loss_law_rdp`.  (The engine's fallback,
  :meth:`dpacct.accountant.pld.GridPLD.rdp` of the *pessimistic PLD*, is ``inf``
  whenever the discretisation has moved tail mass to ``+inf``, i.e. for every law with
  unbounded support.)
* **pure epsilon -> randomized response.**  Every pure ``eps``-DP mechanism is a
  post-processing of binary randomized response with ``p = e^eps / (1 + e^eps)``
  (Kairouz, Oh, Viswanath 2015, Theorem 2.1), whose curve, RDP (Bun & Steinke 2016,
  Proposition 3.3), loss law and trade-off are exact.
* **(eps, delta) -> the four-point pair** of Kairouz, Oh, Viswanath 2015 (Theorem 2.1):
  ``P = (delta, (1-delta) e^eps/(1+e^eps), (1-delta)/(1+e^eps), 0)`` and ``Q`` its
  mirror image, which dominates every ``(eps, delta)``-DP mechanism.
* **RDP curve -> RDP routes only** (composition by addition, Mironov 2017,
  Proposition 1; subsampling by the general bounds of Zhu & Wang 2019 and Wang, Balle,
  Kasiviswanathan 2019; conversion by Canonne, Kamath, Steinke 2020, Proposition 12).
  An RDP curve gives no lower bound: ``epsilon_bounds`` returns ``(0, upper)``.

When a representation cannot be derived soundly the query raises
:class:`MissingCapabilityError`, naming the mechanism and what it lacks (an exact curve
positive at every epsilon has no finite Renyi divergence that finitely many curve
values can certify; an ``(eps, delta)`` guarantee with ``delta > 0`` has none at all).

Examples
--------
>>> import numpy as np
>>> from scipy.stats import norm
>>> from dpacct.accountant import compose, poisson_subsample
>>> def gaussian_curve(eps, mu=1.0):   # Balle & Wang 2018, Theorem 8
...     return norm.cdf(mu / 2 - eps / mu) - np.exp(eps) * norm.cdf(-mu / 2 - eps / mu)
>>> m = mechanism_from_delta_curve(gaussian_curve, name="gaussian mu=1")
>>> m
DeltaCurveMechanism(name='gaussian mu=1')
>>> round(compose([m], counts=[4]).epsilon(1e-5), 3)   # the mu = 2 Gaussian: 9.99726
9.997
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from .gaussian import gaussian_delta, gaussian_tradeoff
from .loss_law import AtomicLossLaw, GaussianLossLaw, PrivacyLossLaw
from .mechanism import Capabilities, Mechanism, MissingCapabilityError
from .numerics import TINY
from .rdp import pure_dp_rdp
from .relations import ADD_REMOVE, REPLACE_ONE
from .validation import check_alpha, check_epsilon, check_positive, check_probability

__all__ = [
    "DeltaCurveMechanism",
    "EpsilonDeltaMechanism",
    "GaussianDPMechanism",
    "LossLawMechanism",
    "MissingCapabilityError",
    "PureEpsilonMechanism",
    "RDPCurveMechanism",
    "loss_law_from_delta_curve",
    "loss_law_rdp",
    "mechanism_from_delta_curve",
    "mechanism_from_epsilon_delta",
    "mechanism_from_gdp",
    "mechanism_from_loss_laws",
    "mechanism_from_pure_epsilon",
    "mechanism_from_rdp",
    "swapped_loss_law",
]


# ----------------------------------------------------------------------------------
# validation helpers
# ----------------------------------------------------------------------------------
def _check_relation(value: object) -> str:
    if value not in (ADD_REMOVE, REPLACE_ONE):
        raise ValueError(
            f"neighbouring must be {ADD_REMOVE!r} (ADD_REMOVE) or {REPLACE_ONE!r} "
            f"(REPLACE_ONE), got {value!r}"
        )
    return str(value)


def _check_name(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError(f"name must be a non-empty string, got {type(value).__name__} {value!r}")
    return value


def _call_vectorised(fn: Callable, x: np.ndarray, what: str, owner: str) -> np.ndarray:
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


# ----------------------------------------------------------------------------------
# exact curve -> dominating loss law (connect the dots)
# ----------------------------------------------------------------------------------
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


def _curve_end(delta_fn: Callable[[np.ndarray], np.ndarray], tail: float) -> float:
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

    Its hockey-stick curve ``d_n + sum_i p_i (1 - t / t_i)_+`` is piecewise linear in
    ``t = e^eps`` with slope ``s_i`` on ``[t_{i-1}, t_i]`` and value ``d_i`` at ``t_i``:
    the chord interpolation of the curve, which lies above it because a privacy curve
    is convex in ``t``; beyond ``e_n`` it is ``d_n >= delta(eps)`` (the curve
    decreases).  For negative epsilons the symmetric pair has
    ``delta(-eps) = 1 - e^-eps (1 - delta(eps))``, the largest value any pair with the
    curve can have there (Zhu, Dong, Wang 2022, Section 3: the symmetrised dominating
    pair of a privacy profile), so the law dominates in the engine's sense (at every
    real epsilon).  The mass at 0 is non-negative exactly when
    ``s_1 >= -(1 - d_0) / 2``, which every max-over-both-directions privacy curve meets
    (its slope at ``t = 1`` is ``-min(Q(L > 0), P(L < 0)) >= -(1 - TV) / 2``).

    The grid: epsilons up to the first one where the curve is at most ``tail`` (or its
    first zero just after it, for a bounded privacy loss: then nothing goes to +inf),
    257 equally spaced points refined at chord midpoints until every chord is within
    ``rtol`` (relative) of the curve, at most ``2**15`` points.

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

    def fn(x: np.ndarray) -> np.ndarray:
        out = _call_vectorised(delta_curve, x, "delta curve", "loss_law_from_delta_curve")
        if np.any(out < -1e-12) or np.any(out > 1.0 + 1e-12):
            bad = float(x[(out < -1e-12) | (out > 1.0 + 1e-12)][0])
            raise ValueError(
                f"the delta curve must take values in [0, 1]; at eps={bad!r} it gives "
                f"{float(out[(out < -1e-12) | (out > 1.0 + 1e-12)][0])!r}"
            )
        return np.clip(out, 0.0, 1.0)

    eps, vals = _curve_grid(fn, tail, rtol, _curve_end(fn, tail) if end is None else end)
    if eps.size == 1:  # delta(0) = 0: the two outputs are identical
        return AtomicLossLaw(losses=np.array([0.0]), p=np.array([1.0]))
    if np.any(np.diff(vals) > 1e-12 * vals[:-1] + TINY):
        i = int(np.argmax(np.diff(vals) > 1e-12 * vals[:-1] + TINY))
        raise ValueError(
            f"the delta curve must be non-increasing in eps; it rises from "
            f"{vals[i]!r} at eps={eps[i]!r} to {vals[i + 1]!r} at eps={eps[i + 1]!r}"
        )
    if np.any(np.diff(eps) <= 0):  # pragma: no cover - the refinement never repeats
        raise RuntimeError("connect-the-dots grid is not strictly increasing")
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
            f"directions: its slope in e^eps at eps=0 is {slopes[0]!r}, below "
            f"-(1 - delta(0)) / 2 = {-(1.0 - d[0]) / 2.0!r}; pass the maximum of the "
            "curves of both neighbouring directions"
        )
    zero = max(zero, 0.0)  # a deficit of round-off size only adds mass (raises delta)
    keep = p > 0
    pos, pm = eps[1:][keep], p[keep]
    losses = np.concatenate([-pos[::-1], [0.0], pos])
    masses = np.concatenate([(pm * np.exp(-pos))[::-1], [zero], pm])
    return AtomicLossLaw(losses=losses, p=masses, inf_mass=inf_mass, q_neg_inf_mass=inf_mass)


# ----------------------------------------------------------------------------------
# loss laws: the other direction, and Renyi divergences
# ----------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class _SwappedLossLaw(PrivacyLossLaw):
    """The law of the swapped pair ``(Q, P)``: loss ``-L``, observed under ``Q``.

    ``P'(L' <= x) = Q(L >= -x)``, ``Q'(L' <= x) = P(L >= -x)`` including ``P(L = +inf)``,
    ``P'(L' = +inf) = Q(L = -inf)``.  Closed-open ends are read one ulp inside (exact
    for atoms at floating-point losses).
    """

    base: PrivacyLossLaw

    def __post_init__(self) -> None:
        object.__setattr__(self, "inf_mass", float(self.base.q_neg_inf_mass))
        object.__setattr__(self, "q_neg_inf_mass", float(self.base.inf_mass))
        object.__setattr__(self, "lattice", self.base.lattice)
        object.__setattr__(self, "anchor", self.base.anchor)
        object.__setattr__(self, "weak_anchor", self.base.weak_anchor)

    @staticmethod
    def _mirror(x: np.ndarray) -> np.ndarray:
        return np.nextafter(-np.asarray(x, dtype=float), -np.inf)

    def cdf_p(self, x):
        return self.base.sf_q(self._mirror(x))

    def sf_p(self, x):
        return np.maximum(self.base.cdf_q(self._mirror(x)) - self.base.q_neg_inf_mass, 0.0)

    def cdf_q(self, x):
        return np.minimum(self.base.inf_mass + self.base.sf_p(self._mirror(x)), 1.0)

    def sf_q(self, x):
        return self.base.cdf_p(self._mirror(x))


def swapped_loss_law(law: PrivacyLossLaw) -> PrivacyLossLaw:
    """The loss law of the swapped pair ``(Q, P)`` (the other neighbouring direction).

    A law that dominates ``(P, Q)`` at every real epsilon gives, swapped, one that
    dominates ``(Q, P)`` at every real epsilon, by
    ``delta_{Q,P}(eps) = 1 - e^eps + e^eps delta_{P,Q}(-eps)``.  Gaussian laws are
    symmetric and returned as they are; atomic laws are mirrored exactly.

    Examples
    --------
    >>> import numpy as np
    >>> law = AtomicLossLaw.from_pair(np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5]))
    >>> swapped_loss_law(law).hockey_stick(np.array([0.0]))   # the same total variation
    array([0.3])
    """
    if not isinstance(law, PrivacyLossLaw):
        raise TypeError(f"law must be a PrivacyLossLaw, got {type(law).__name__} {law!r}")
    if type(law) is GaussianLossLaw:
        return law
    if type(law) is AtomicLossLaw:
        q = law.p * np.exp(-law.losses)
        return AtomicLossLaw(
            losses=-law.losses,
            p=q,
            inf_mass=float(law.q_neg_inf_mass),
            q_neg_inf_mass=float(law.inf_mass),
            lattice=law.lattice,
        )
    if isinstance(law, _SwappedLossLaw):
        return law.base
    return _SwappedLossLaw(law)


#: bins of the quadrature of :func:`loss_law_rdp` for laws without a closed form
RDP_BINS = 1 << 14
#: the quadrature's integrand must have decayed to this fraction of the total over the
#: top sixteenth of the law's reported support, else the order is reported as inf
RDP_DECAY = 1e-12


def _atomic_rdp(law: AtomicLossLaw, a: np.ndarray) -> np.ndarray:
    pos = law.p > 0
    losses, lp = law.losses[pos], np.log(law.p[pos])
    if losses.size == 0:
        return np.zeros(a.shape)
    finite = np.isfinite(a)
    out = np.full(a.shape, float(losses.max()))  # D_inf: the largest loss
    af = a[finite] - 1.0
    vals = np.empty(af.shape)
    for start in range(0, af.size, 256):  # blocks of orders x atoms, log-sum-exp by hand
        block = lp[None, :] + af[start : start + 256, None] * losses
        peak = block.max(axis=1, keepdims=True)
        vals[start : start + 256] = peak[:, 0] + np.log(np.exp(block - peak).sum(axis=1))
    out[finite] = vals / af
    return np.maximum(out, 0.0)


def _quadrature_rdp(law: PrivacyLossLaw, a: np.ndarray) -> np.ndarray:
    """Chord quadrature of ``log E_Q[(dP/dQ)^alpha] / (alpha - 1)`` over the law."""
    try:
        lo, hi = law.quantile_bounds(0.0)
    except RuntimeError:  # a tail that never vanishes: nothing can be certified
        return np.full(a.shape, np.inf)
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return np.full(a.shape, np.inf)
    edges = np.linspace(lo, hi, RDP_BINS + 1)
    m_p, m_q = law.bin_masses(edges)
    below = float(law.cdf_p(np.array([lo]))[0])
    step = edges[1] - edges[0]
    # a support that ends abruptly (mass well above underflow in the last bin) is a
    # true end; a tail that fades into underflow must have an integrand that decays
    abrupt = float(law.sf_p(np.array([hi - step]))[0]) > 1e-250
    # chord bound per bin: Q-mass m_q and P-mass m_p = E_Q[T] with T = e^L in
    # [t_a, t_b]; E_Q[T^alpha] is largest with the mass at both ends (T^alpha convex)
    a_edge, b_edge = edges[:-1], edges[1:]
    with np.errstate(all="ignore"):
        # m_p = w_a t_a + w_b t_b, m_q = w_a + w_b  =>  w_b = (m_p / t_a - m_q) / (e^step - 1)
        w_b = (m_p * np.exp(-a_edge) - m_q) / np.expm1(step)
    w_b = np.clip(w_b, 0.0, m_q)
    w_a = m_q - w_b
    # bins whose Q-mass underflows (huge losses) cannot carry the chord weights: they
    # get the first-order bound E_P[e^{(alpha-1) L}; bin] <= m_p e^{(alpha-1) b}
    crude = (m_p > 0) & ~(m_q > TINY)
    w_a, w_b = np.where(crude, 0.0, w_a), np.where(crude, 0.0, w_b)
    m_crude = np.where(crude, m_p, 0.0)
    top = edges.size - 1 - (RDP_BINS >> 4)
    out = np.empty(a.shape)
    for i, ai in enumerate(a):
        if np.isinf(ai):
            out[i] = hi if abrupt else np.inf
            continue
        with np.errstate(divide="ignore"):
            log_terms = np.concatenate(
                [
                    np.log(w_a) + ai * a_edge,
                    np.log(w_b) + ai * b_edge,
                    np.log(m_crude) + (ai - 1.0) * b_edge,
                    # below lo: E_P[e^{(alpha-1) L}] <= P(L <= lo) e^{(alpha-1) lo}
                    [math.log(below) + (ai - 1.0) * lo if below > 0 else -np.inf],
                ]
            )
        total = float(special.logsumexp(log_terms))
        if not abrupt:
            n = RDP_BINS
            tail_terms = np.concatenate([log_terms[k * n + top : (k + 1) * n] for k in range(3)])
            if float(special.logsumexp(tail_terms)) > total + math.log(RDP_DECAY):
                out[i] = np.inf
                continue
        # 1e-9 relative on the moment covers the round-off of the chord weights
        out[i] = max((total + 1e-9) / (ai - 1.0), 0.0)
    return out


def loss_law_rdp(law: PrivacyLossLaw, alpha) -> np.ndarray:
    """Renyi divergence ``D_alpha(P || Q)`` of the pair a loss law describes.

    ``D_alpha = log E_P[e^{(alpha - 1) L}] / (alpha - 1)`` (Mironov 2017, Definition 3,
    with ``dP/dQ = e^L``); ``inf`` if ``P(L = +inf) > 0``.  Exact for
    :class:`AtomicLossLaw` (a log-sum-exp) and :class:`GaussianLossLaw`
    (``alpha mu^2 / 2``, Mironov 2017, Proposition 7).  Any other law: a quadrature
    over ``2**14`` bins of its reported support (between the points where its
    distribution functions reach 0), each bin bounded by its chord -- the P- and
    Q-masses of a bin fix the mean of ``T = e^L`` under ``Q``, and ``E_Q[T^alpha]`` is
    largest with that mass at the bin's two ends (``T^alpha`` is convex), the
    connect-the-dots argument of Doroshenko et al. 2022 applied to a moment -- plus
    ``P(L <= lo) e^{(alpha - 1) lo}`` below the support.  The quadrature trusts the
    law's distribution functions: mass they report as 0 is 0.  So that a tail that
    fades into floating-point underflow is not cut where it still matters, an order
    whose integrand carries more than ``1e-12`` of the total over the top sixteenth of
    the support is reported as ``inf`` (unless the support ends abruptly, with mass
    above ``1e-250`` in its last bin: a bounded loss).

    Examples
    --------
    >>> import numpy as np
    >>> loss_law_rdp(GaussianLossLaw(mu=1.0), [2.0, 10.0])
    array([1., 5.])
    >>> class Opaque(GaussianLossLaw):   # hides the closed form: quadrature
    ...     pass
    >>> r = loss_law_rdp(Opaque(mu=1.0), [2.0, 10.0])
    >>> bool(np.all(r >= [1.0, 5.0]) and np.all(r < [1.0001, 5.0001]))
    True
    """
    a = check_alpha(alpha)
    flat = a.reshape(-1)
    if law.inf_mass > 0:
        out = np.full(flat.shape, np.inf)
    elif type(law) is GaussianLossLaw:
        out = flat * law.mu**2 / 2.0
    elif type(law) is AtomicLossLaw:
        out = _atomic_rdp(law, flat)
    else:
        out = _quadrature_rdp(law, flat)
    return out.reshape(a.shape)


# ----------------------------------------------------------------------------------
# the mechanisms
# ----------------------------------------------------------------------------------
def _no_rdp(mech: Mechanism, declared: str, why: str) -> MissingCapabilityError:
    return MissingCapabilityError(
        f"{mech!r} has no Renyi-DP curve: it declares {declared}, and {why}. Declare an "
        "RDP curve (mechanism_from_rdp) or a loss law without mass at +inf "
        "(mechanism_from_loss_laws) to get one"
    )


def _memo_rdp(mech: Mechanism, alpha: np.ndarray, compute) -> np.ndarray:
    """``compute(alpha)``, remembered order by order (the subsampling bounds ask for
    every integer order up to thousands, call after call)."""
    a = np.asarray(alpha, dtype=float)
    flat = a.reshape(-1)
    memo = mech._cache().setdefault("custom_rdp", {})
    missing = np.array(sorted({float(x) for x in flat if float(x) not in memo}))
    if missing.size:
        if len(memo) > 1 << 17:
            memo.clear()
        values = np.asarray(compute(missing), dtype=float).reshape(-1)
        memo.update(zip(missing.tolist(), values.tolist(), strict=True))
    return np.array([memo[float(x)] for x in flat], dtype=float).reshape(a.shape)


class _Declared(Mechanism):
    """Shared behaviour: an RDP capability that holds only when the declared
    representation determines a finite Renyi curve, and an :meth:`rdp` that names
    what is missing instead of returning the ``inf`` of a PLD with mass at +inf."""

    def _rdp_missing(self) -> MissingCapabilityError | None:
        return None

    @property
    def capabilities(self) -> Capabilities:
        """The class's declaration, without ``rdp`` when no finite curve follows."""
        declared = type(self).declares
        if declared.rdp and self._rdp_missing() is not None:
            return dataclasses.replace(declared, rdp=False)
        return declared

    def rdp(self, alpha):
        """Renyi-DP epsilon at order(s) ``alpha``; see :meth:`Mechanism.rdp`.

        Parameters
        ----------
        alpha : float or array_like
            Renyi order(s), real and > 1.

        Raises
        ------
        MissingCapabilityError
            The declared capability determines no finite Renyi-DP curve.
        """
        check_alpha(alpha)
        missing = self._rdp_missing()
        if missing is not None:
            raise missing
        return super().rdp(alpha)

    def __repr__(self) -> str:
        args = [f"{k}={v!r}" for k, v in self._repr_fields()]
        if self.neighbouring != ADD_REMOVE:
            args.append(f"neighbouring={self.neighbouring!r}")
        return f"{type(self).__name__}({', '.join(args)})"

    def _repr_fields(self) -> list[tuple[str, object]]:  # pragma: no cover - overridden
        return []


@dataclass(frozen=True, repr=False)
class DeltaCurveMechanism(_Declared):
    """A mechanism declared by its exact privacy curve ``delta(eps)``; see
    :func:`mechanism_from_delta_curve`."""

    delta_curve: Callable[[np.ndarray], np.ndarray]
    name: str
    neighbouring: str = ADD_REMOVE

    declares = Capabilities(exact_curve=True, rdp=True, loss_laws=True)

    def __post_init__(self) -> None:
        if not callable(self.delta_curve):
            raise TypeError(
                f"delta_curve must be a callable eps -> delta(eps), got "
                f"{type(self.delta_curve).__name__} {self.delta_curve!r}"
            )
        object.__setattr__(self, "name", _check_name(self.name))
        object.__setattr__(self, "neighbouring", _check_relation(self.neighbouring))

    def _repr_fields(self):
        return [("name", self.name)]

    def _end(self) -> tuple[float, float]:
        """Last epsilon of the connect-the-dots grid and the curve's value there."""
        cache = self._cache()
        if "end" not in cache:
            end = _curve_end(self._delta_exact, CURVE_TAIL)
            cache["end"] = (end, float(self._delta_exact(np.array([end]))[0]))
        return cache["end"]

    def _law(self) -> AtomicLossLaw:
        cache = self._cache()
        if "law" not in cache:
            cache["law"] = loss_law_from_delta_curve(self._delta_exact, end=self._end()[0])
        return cache["law"]

    def _delta_exact(self, epsilon: np.ndarray) -> np.ndarray:
        out = _call_vectorised(self.delta_curve, epsilon, "delta curve", repr(self))
        return np.clip(out, 0.0, 1.0)

    def _loss_laws(self):
        law = self._law()
        return law, law

    def _pure_epsilon(self) -> float:
        # the curve is 0 from its grid's end on: the mechanism is end-DP
        end, value = self._end()
        return end if value == 0.0 else math.inf

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        # from a coarser connect-the-dots law (chords within 1e-5 instead of 1e-7): it
        # dominates too, and the subsampling bounds evaluate tens of thousands of orders
        cache = self._cache()
        if "rdp_law" not in cache:
            cache["rdp_law"] = loss_law_from_delta_curve(
                self._delta_exact, rtol=CURVE_RDP_RTOL, end=self._end()[0]
            )
        return _memo_rdp(self, alpha, lambda a: loss_law_rdp(cache["rdp_law"], a))

    def _rdp_missing(self):
        end, value = self._end()
        if value == 0.0:
            return None
        return _no_rdp(
            self,
            "only an exact delta(eps) curve",
            f"the curve is still positive at eps={end:.6g} (delta={value:.3g}): "
            "finitely many of its values certify no finite Renyi divergence (the "
            "dominating pair built from them has mass at +inf)",
        )


@dataclass(frozen=True, repr=False)
class RDPCurveMechanism(_Declared):
    """A mechanism declared by a Renyi-DP curve; see :func:`mechanism_from_rdp`."""

    rdp_curve: Callable[[np.ndarray], np.ndarray]
    name: str
    epsilon_pure: float | None = None
    neighbouring: str = ADD_REMOVE

    declares = Capabilities(rdp=True)

    def __post_init__(self) -> None:
        if not callable(self.rdp_curve):
            raise TypeError(
                f"rdp_curve must be a callable alpha -> RDP epsilon, got "
                f"{type(self.rdp_curve).__name__} {self.rdp_curve!r}"
            )
        object.__setattr__(self, "name", _check_name(self.name))
        if self.epsilon_pure is not None:
            object.__setattr__(
                self, "epsilon_pure", check_positive("pure_epsilon", self.epsilon_pure)
            )
        object.__setattr__(self, "neighbouring", _check_relation(self.neighbouring))

    def _repr_fields(self):
        out: list[tuple[str, object]] = [("name", self.name)]
        if self.epsilon_pure is not None:
            out.append(("pure_epsilon", self.epsilon_pure))
        return out

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        a = np.asarray(alpha, dtype=float)
        out = _call_vectorised(self.rdp_curve, a, "RDP curve", repr(self)).reshape(a.shape)
        if np.any(out < -1e-12):
            bad = float(a.reshape(-1)[(out < -1e-12).reshape(-1)][0])
            raise ValueError(f"{self!r}: the RDP curve is negative at alpha={bad!r}")
        out = np.maximum(out, 0.0)
        if self.epsilon_pure is not None:
            # D_alpha of an eps-DP mechanism is at most that of randomized response
            # (Bun & Steinke 2016, Proposition 3.3), itself at most eps
            out = np.minimum(out, pure_dp_rdp(self.epsilon_pure, a))
        return out

    def _pure_epsilon(self) -> float:
        return math.inf if self.epsilon_pure is None else float(self.epsilon_pure)


@dataclass(frozen=True, repr=False)
class LossLawMechanism(_Declared):
    """A mechanism declared by privacy-loss laws; see :func:`mechanism_from_loss_laws`."""

    remove: PrivacyLossLaw
    add: PrivacyLossLaw
    name: str | None = None
    neighbouring: str = ADD_REMOVE

    declares = Capabilities(rdp=True, loss_laws=True)

    def __post_init__(self) -> None:
        for which in ("remove", "add"):
            law = getattr(self, which)
            if not isinstance(law, PrivacyLossLaw):
                raise TypeError(
                    f"{which} must be a PrivacyLossLaw, got {type(law).__name__} {law!r}"
                )
        if self.name is not None:
            object.__setattr__(self, "name", _check_name(self.name))
        object.__setattr__(self, "neighbouring", _check_relation(self.neighbouring))

    def _repr_fields(self):
        if self.name is not None:
            return [("name", self.name)]
        if self.add is self.remove:
            return [("law", self.remove)]
        return [("remove", self.remove), ("add", self.add)]

    def _loss_laws(self):
        return self.remove, self.add

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        def both(a: np.ndarray) -> np.ndarray:
            out = loss_law_rdp(self.remove, a)
            if self.add is not self.remove:
                out = np.maximum(out, loss_law_rdp(self.add, a))
            return out

        return _memo_rdp(self, alpha, both)

    def _rdp_missing(self):
        heavy = [w for w in ("remove", "add") if getattr(self, w).inf_mass > 0]
        if not heavy:
            return None
        return _no_rdp(
            self,
            "privacy-loss laws only",
            f"the {' and '.join(heavy)} law puts mass on an infinite privacy loss "
            "(P(L = +inf) > 0), so every Renyi divergence is infinite",
        )


@dataclass(frozen=True, repr=False)
class PureEpsilonMechanism(_Declared):
    """Any pure ``epsilon``-DP mechanism; see :func:`mechanism_from_pure_epsilon`."""

    epsilon0: float
    neighbouring: str = ADD_REMOVE

    declares = Capabilities(exact_curve=True, rdp=True, loss_laws=True, exact_tradeoff=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon0", check_positive("epsilon", self.epsilon0))
        object.__setattr__(self, "neighbouring", _check_relation(self.neighbouring))

    def _repr_fields(self):
        return [("epsilon", self.epsilon0)]

    def _pure_epsilon(self) -> float:
        return self.epsilon0

    def _delta_exact(self, epsilon: np.ndarray) -> np.ndarray:
        # binary randomized response: delta = p (1 - e^{eps - eps0})_+ (Kairouz, Oh,
        # Viswanath 2015, Theorem 2.1), with expm1 for relative precision near eps0
        p = float(special.expit(self.epsilon0))
        return p * -np.expm1(np.minimum(np.asarray(epsilon, dtype=float) - self.epsilon0, 0.0))

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        return pure_dp_rdp(self.epsilon0, alpha)

    def _loss_laws(self):
        cache = self._cache()
        if "law" not in cache:
            e = self.epsilon0
            p, q = float(special.expit(e)), float(special.expit(-e))
            if q == 0.0:  # beyond the double range: the -eps atom's Q-mass is p
                cache["law"] = AtomicLossLaw(
                    losses=np.array([e]), p=np.array([p]), q_neg_inf_mass=p, lattice=e
                )
            else:
                cache["law"] = AtomicLossLaw(
                    losses=np.array([-e, e]), p=np.array([q, p]), lattice=e
                )
        law = cache["law"]
        return law, law

    def _tradeoff_exact(self, fpr: np.ndarray) -> np.ndarray:
        # f_{eps,0}(a) = max(0, 1 - e^eps a, e^-eps (1 - a)) (Dong, Roth, Su 2019, Eq. 5)
        a = np.asarray(fpr, dtype=float)
        with np.errstate(over="ignore", divide="ignore"):
            first = 1.0 - np.exp(self.epsilon0 + np.log(a))
        return np.maximum.reduce([np.zeros_like(a), first, math.exp(-self.epsilon0) * (1 - a)])


@dataclass(frozen=True, repr=False)
class GaussianDPMechanism(_Declared):
    """Any ``mu``-GDP mechanism; see :func:`mechanism_from_gdp`.

    Parameters
    ----------
    mu : float
        The Gaussian-DP parameter, > 0.
    neighbouring : str
        ``ADD_REMOVE`` (default) or ``REPLACE_ONE``.

    Examples
    --------
    >>> m = GaussianDPMechanism(mu=1.0)
    >>> m.gdp_mu(), round(m.epsilon(1e-5), 4)
    (1.0, 4.3772)
    """

    mu: float
    neighbouring: str = ADD_REMOVE

    declares = Capabilities(
        exact_curve=True, rdp=True, loss_laws=True, exact_tradeoff=True, gdp=True
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "mu", check_positive("mu", self.mu))
        object.__setattr__(self, "neighbouring", _check_relation(self.neighbouring))

    def _repr_fields(self):
        return [("mu", self.mu)]

    def _gdp_mu(self) -> float:
        return self.mu

    def _delta_exact(self, epsilon: np.ndarray) -> np.ndarray:
        return gaussian_delta(self.mu, epsilon)

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        # D_alpha(N(mu, 1) || N(0, 1)) = alpha mu^2 / 2 (Mironov 2017, Proposition 7)
        return np.asarray(alpha, dtype=float) * (self.mu * self.mu / 2.0)

    def _loss_laws(self):
        law = GaussianLossLaw(mu=self.mu)
        return law, law

    def _tradeoff_exact(self, fpr: np.ndarray) -> np.ndarray:
        return gaussian_tradeoff(self.mu, fpr)


@dataclass(frozen=True, repr=False)
class EpsilonDeltaMechanism(_Declared):
    """Any ``(epsilon, delta)``-DP mechanism; see :func:`mechanism_from_epsilon_delta`."""

    epsilon0: float
    delta0: float
    neighbouring: str = ADD_REMOVE
    _p: float = field(init=False, repr=False, compare=False, default=0.0)

    declares = Capabilities(exact_curve=True, rdp=True, loss_laws=True, exact_tradeoff=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon0", check_epsilon(self.epsilon0))
        object.__setattr__(self, "delta0", check_probability("delta", self.delta0, low_open=False))
        object.__setattr__(self, "neighbouring", _check_relation(self.neighbouring))
        # P-mass of the informative atom at +eps: (1 - delta) e^eps / (1 + e^eps)
        object.__setattr__(self, "_p", (1.0 - self.delta0) * float(special.expit(self.epsilon0)))

    def _repr_fields(self):
        return [("epsilon", self.epsilon0), ("delta", self.delta0)]

    def _pure_epsilon(self) -> float:
        return self.epsilon0 if self.delta0 == 0.0 else math.inf

    def _delta_exact(self, epsilon: np.ndarray) -> np.ndarray:
        # hockey stick of the Kairouz-Oh-Viswanath pair: delta + p (1 - e^{eps' - eps})_+
        gap = np.minimum(np.asarray(epsilon, dtype=float) - self.epsilon0, 0.0)
        return np.minimum(self.delta0 + self._p * -np.expm1(gap), 1.0)

    def _loss_laws(self):
        cache = self._cache()
        if "law" not in cache:
            e, d, p = self.epsilon0, self.delta0, self._p
            q = (1.0 - d) * float(special.expit(-e))
            if e == 0.0:
                losses, masses, lattice = np.array([0.0]), np.array([1.0 - d]), None
            elif q == 0.0:
                losses, masses, lattice = np.array([e]), np.array([p]), e
            else:
                losses, masses, lattice = np.array([-e, e]), np.array([q, p]), e
            q_neg = d + (p if (e > 0 and q == 0.0) else 0.0)
            cache["law"] = AtomicLossLaw(
                losses=losses, p=masses, inf_mass=d, q_neg_inf_mass=q_neg, lattice=lattice
            )
        law = cache["law"]
        return law, law

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        return pure_dp_rdp(self.epsilon0, alpha)

    def _rdp_missing(self):
        if self.delta0 == 0.0:
            return None
        return _no_rdp(
            self,
            f"only an (epsilon, delta) guarantee with delta={self.delta0!r} > 0",
            "the worst mechanism with that guarantee reveals the record outright with "
            "probability delta (an infinite privacy loss), so every Renyi divergence "
            "is infinite",
        )

    def _tradeoff_exact(self, fpr: np.ndarray) -> np.ndarray:
        # f_{eps,delta}(a) = max(0, 1 - delta - e^eps a, e^-eps (1 - delta - a))
        # (Dong, Roth, Su 2019, Equation 5; Kairouz, Oh, Viswanath 2015)
        a = np.asarray(fpr, dtype=float)
        d = self.delta0
        with np.errstate(over="ignore", divide="ignore"):
            first = 1.0 - d - np.exp(self.epsilon0 + np.log(a))
        last = math.exp(-self.epsilon0) * (1.0 - d - a)
        return np.maximum.reduce([np.zeros_like(a), first, last])


# ----------------------------------------------------------------------------------
# the constructors
# ----------------------------------------------------------------------------------
def mechanism_from_delta_curve(
    delta_curve: Callable[[np.ndarray], np.ndarray],
    *,
    name: str,
    neighbouring: str = ADD_REMOVE,
) -> DeltaCurveMechanism:
    """A mechanism declared by its exact privacy curve ``delta(eps)``.

    The curve answers ``delta``/``epsilon``/``epsilon_bounds`` of the mechanism itself
    exactly (bisection).  Composition, Poisson subsampling, the ledger and calibration
    use a symmetric connect-the-dots loss law that dominates the curve
    (:func:`loss_law_from_delta_curve`, built on first use).  A curve that reaches 0 at
    some epsilon (a bounded privacy loss) also gives a pure epsilon and an RDP curve;
    one positive everywhere does not (:class:`MissingCapabilityError` from
    :meth:`rdp`, and subsampling without replacement, which needs RDP, answers
    nothing).

    Parameters
    ----------
    delta_curve : callable
        ``eps -> delta(eps)`` for ``eps >= 0``, vectorised over numpy arrays (a scalar
        function is called point by point); the maximum over both neighbouring
        directions.  It must be *exact* or an upper bound that is itself a privacy
        curve (convex in ``e^eps``): every answer is only as sound as the curve.
    name : str
        A label for messages and the repr.
    neighbouring : str
        ``ADD_REMOVE`` (default) or ``REPLACE_ONE``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.stats import norm
    >>> from dpacct.accountant import compose
    >>> curve = lambda e: norm.cdf(0.5 - e) - np.exp(e) * norm.cdf(-0.5 - e)  # mu = 1
    >>> m = mechanism_from_delta_curve(curve, name="gaussian")
    >>> round(m.epsilon(1e-5), 4)          # the exact curve, inverted
    4.3772
    >>> run = compose([m], counts=[10])    # through the connect-the-dots law
    >>> 17.8565 < run.epsilon(1e-5) < 17.8569  # exact: the mu = sqrt(10) Gaussian, 17.85659
    True
    """
    return DeltaCurveMechanism(delta_curve=delta_curve, name=name, neighbouring=neighbouring)


def mechanism_from_rdp(
    rdp_curve: Callable[[np.ndarray], np.ndarray],
    *,
    name: str = "rdp",
    pure_epsilon: float | None = None,
    neighbouring: str = ADD_REMOVE,
) -> RDPCurveMechanism:
    """A mechanism declared by a Renyi-DP curve (and optionally a pure epsilon).

    Composition adds the curves (Mironov 2017, Proposition 1); Poisson subsampling uses
    the general bound of Zhu & Wang 2019 (orders up to 256), sampling without
    replacement that of Wang, Balle, Kasiviswanathan 2019 (Theorem 9); epsilon comes
    from the conversion of Canonne, Kamath, Steinke 2020 (Proposition 12).  An RDP
    curve gives no lower bound on epsilon, so ``epsilon_bounds`` returns
    ``(0, upper)``.

    Parameters
    ----------
    rdp_curve : callable
        ``alpha -> eps_alpha`` for real ``alpha > 1``, vectorised (a scalar function is
        called point by point); ``inf`` is allowed, NaN and negative values are errors.
    name : str
        A label for messages and the repr.
    pure_epsilon : float, optional
        A pure-DP epsilon the mechanism also satisfies: caps every epsilon and the RDP
        curve (by the randomized-response curve, Bun & Steinke 2016, Proposition 3.3).
    neighbouring : str
        ``ADD_REMOVE`` (default) or ``REPLACE_ONE``.

    Examples
    --------
    >>> m = mechanism_from_rdp(lambda a: a / 2.0, name="gaussian sigma=1")
    >>> m
    RDPCurveMechanism(name='gaussian sigma=1')
    >>> round(m.epsilon(1e-5), 4)
    4.7284
    >>> m.epsilon_bounds(1e-5)[0]
    0.0
    """
    return RDPCurveMechanism(
        rdp_curve=rdp_curve, name=name, epsilon_pure=pure_epsilon, neighbouring=neighbouring
    )


def mechanism_from_loss_laws(
    remove: PrivacyLossLaw,
    add: PrivacyLossLaw | None = None,
    *,
    name: str | None = None,
    neighbouring: str = ADD_REMOVE,
) -> LossLawMechanism:
    """A mechanism declared by the privacy-loss laws of dominating pairs.

    Parameters
    ----------
    remove : PrivacyLossLaw
        Law of ``L = log(dP/dQ)`` for a pair ``(P, Q)`` dominating the mechanism's pair
        (output with the record, output without it) at every real epsilon.
    add : PrivacyLossLaw, optional
        The same for the other direction.  Default: the swapped ``remove`` pair
        (:func:`swapped_loss_law`), which always dominates it; pass ``add=remove`` for a
        law that is its own mirror image (a Gaussian's is) to skip the second
        direction's work.
    name : str, optional
        A label for messages and the repr (default: the laws' own reprs).
    neighbouring : str
        ``ADD_REMOVE`` (default) or ``REPLACE_ONE``.

    Notes
    -----
    The Renyi-DP curve is the larger Renyi divergence of the two laws
    (:func:`loss_law_rdp`), finite unless a law puts mass at ``+inf``.

    Examples
    --------
    >>> m = mechanism_from_loss_laws(GaussianLossLaw(mu=1.0))
    >>> m
    LossLawMechanism(law=GaussianLossLaw(mu=1.0))
    >>> m.rdp([2.0, 4.0])
    array([1., 2.])
    >>> round(m.epsilon(1e-5), 3)
    4.377
    """
    if add is None:
        add = swapped_loss_law(remove) if isinstance(remove, PrivacyLossLaw) else remove
    return LossLawMechanism(remove=remove, add=add, name=name, neighbouring=neighbouring)


def mechanism_from_pure_epsilon(
    epsilon: float, *, neighbouring: str = ADD_REMOVE
) -> PureEpsilonMechanism:
    """Any pure ``epsilon``-DP mechanism, accounted by its worst case.

    Binary randomized response with ``p = e^eps / (1 + e^eps)`` dominates every
    ``eps``-DP mechanism (Kairouz, Oh, Viswanath 2015, Theorem 2.1); its curve
    ``p (1 - e^{eps' - eps})_+``, RDP (Bun & Steinke 2016, Proposition 3.3), loss law
    (atoms ``+-eps`` on the lattice ``eps``, so compositions are exact) and trade-off
    ``max(0, 1 - e^eps a, e^-eps (1 - a))`` are all stated.  Brackets enclose that
    worst case's epsilon: an upper bound for any such mechanism, not a lower bound.

    Parameters
    ----------
    epsilon : float
        The pure-DP epsilon, >= 0.
    neighbouring : str
        ``ADD_REMOVE`` (default) or ``REPLACE_ONE``.

    Examples
    --------
    >>> m = mechanism_from_pure_epsilon(1.0)
    >>> m
    PureEpsilonMechanism(epsilon=1.0)
    >>> round(m.delta(0.0), 6)       # tanh(1/2)
    0.462117
    >>> round(float(m.rdp(2.0)), 6)  # log((e^2 + e^-1) / (1 + e))
    0.735326
    """
    return PureEpsilonMechanism(epsilon0=epsilon, neighbouring=neighbouring)


def mechanism_from_gdp(mu: float, *, neighbouring: str = ADD_REMOVE) -> GaussianDPMechanism:
    """Any ``mu``-GDP mechanism (Gaussian differential privacy, Dong, Roth, Su 2019).

    ``mu``-GDP means the trade-off curve is at least ``Phi(Phi^-1(1 - a) - mu)``, which
    is the pair ``N(0, 1)``, ``N(mu, 1)``: the Gaussian mechanism with noise multiplier
    ``1 / mu`` dominates every ``mu``-GDP mechanism, so its exact curve (Balle & Wang
    2018, Theorem 8), RDP ``alpha mu^2 / 2``, loss law ``N(mu^2/2, mu^2)`` and
    trade-off are stated.  The mechanism also states :meth:`~Mechanism.gdp_mu`, so a
    composition of such parts is answered in closed form (``mu^2`` adds up, ibid.
    Corollary 3.3) and its Poisson subsampling uses the tight subsampled-Gaussian RDP.
    Every answer, brackets included, is about that worst case: the bracket of
    ``epsilon_bounds`` encloses the dominating Gaussian's epsilon, an upper bound for
    the mechanism declared, not a lower bound on it.

    Parameters
    ----------
    mu : float
        The Gaussian-DP parameter, > 0.
    neighbouring : str
        ``ADD_REMOVE`` (default) or ``REPLACE_ONE``.

    Examples
    --------
    >>> from dpacct.accountant import compose
    >>> m = mechanism_from_gdp(0.5)
    >>> run = compose([m], counts=[4])           # sqrt(4 * 0.25) = 1
    >>> run.route, run.gdp_mu()
    ('exact', 1.0)
    >>> round(run.epsilon(1e-5), 4)
    4.3772
    """
    return GaussianDPMechanism(mu=mu, neighbouring=neighbouring)


def mechanism_from_epsilon_delta(
    epsilon: float, delta: float, *, neighbouring: str = ADD_REMOVE
) -> EpsilonDeltaMechanism:
    """Any ``(epsilon, delta)``-DP mechanism, accounted by its worst case.

    The pair ``P = (delta, (1-delta) e^eps/(1+e^eps), (1-delta)/(1+e^eps), 0)`` and
    ``Q`` its mirror image dominates every ``(eps, delta)``-DP mechanism in both
    directions (Kairouz, Oh, Viswanath 2015, Theorem 2.1).  Its curve is
    ``delta(eps') = delta + (1 - delta) e^eps/(1 + e^eps) (1 - e^{eps' - eps})_+``, its
    trade-off ``f_{eps,delta}`` (Dong, Roth, Su 2019, Equation 5), its loss law atoms
    ``+-eps`` plus ``delta`` at ``+inf`` (compositions are exact on the lattice); with
    ``delta > 0`` it has no finite Renyi divergence.  Brackets enclose that worst
    case's epsilon: an upper bound for any such mechanism, not a lower bound.

    Parameters
    ----------
    epsilon : float
        >= 0.
    delta : float
        In [0, 1); ``delta = 0`` is pure DP.
    neighbouring : str
        ``ADD_REMOVE`` (default) or ``REPLACE_ONE``.

    Examples
    --------
    >>> m = mechanism_from_epsilon_delta(1.0, 1e-6)
    >>> m
    EpsilonDeltaMechanism(epsilon=1.0, delta=1e-06)
    >>> m.epsilon(1e-6)
    1.0
    >>> m.rdp(2.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dpacct.accountant.mechanism.MissingCapabilityError: EpsilonDeltaMechanism(epsilon=1.0, ...
    """
    return EpsilonDeltaMechanism(epsilon0=epsilon, delta0=delta, neighbouring=neighbouring)
