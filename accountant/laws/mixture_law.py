"""Two more loss laws for the one PLD engine: a mixture of Gaussians, and a revealed mixture.

* :class:`GaussianMixtureLossLaw` -- the pair ``(sum_i p_i N(c_i, s^2), N(0, s^2))`` of
  the mixture-of-Gaussians mechanism (Choquette-Choo, Ganesh, Steinke, Thakurta 2023,
  "Privacy amplification for matrix mechanisms", arXiv:2310.15526, Section 3; the
  ``MixtureOfGaussiansDpEvent`` of dp_accounting).  Its privacy loss
  ``l(y) = log sum_i p_i exp((c_i y - c_i^2 / 2) / s^2)`` is a log-sum-exp of increasing
  affine functions of the output ``y`` when every ``c_i >= 0``: convex and increasing,
  so ``P(L <= x) = P(Y <= l^-1(x))`` and the distribution functions are sums of normal
  CDFs at one inverse, found by Newton's method from the right (monotone and
  quadratically convergent on a convex increasing function).
* :class:`MixtureLossLaw` -- the law of a pair whose component is revealed:
  ``(j, P_j)`` against ``(j, Q_j)`` with ``j ~ w``.  Its distribution functions are the
  ``w``-averages of the components'.  A mechanism whose pair is a ``w``-mixture
  ``(sum_j w_j P_j, sum_j w_j Q_j)`` with *the same* weights on both sides is a
  post-processing (forget ``j``) of this pair, so the revealed mixture dominates it
  (joint convexity of the hockey-stick divergence, in its dominating-pair form; Zhu,
  Dong, Wang 2022, Section 3).  Used by the truncated-Poisson step.

Both are plain :class:`~dpacct.accountant.laws.loss_law.PrivacyLossLaw` subclasses: the engine
discretises them like every other law (pessimistic and optimistic grids, one
certificate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..numerics import _log_expm1
from ..numerics import scipy_special as special
from ..validation import check_positive, real_array
from .loss_law import PrivacyLossLaw, _split_differences

__all__ = ["GaussianMixtureLossLaw", "MixtureLossLaw", "finite_law"]

#: Newton iterations for the inverse loss (quadratic convergence needs a handful; the
#: cap only matters for losses within round-off of the infimum ``log p_0``)
_NEWTON_STEPS = 200


def finite_law(
    values: object, probabilities: object, *, values_name: str, probabilities_name: str
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Validate a finite law ``{(c_i, p_i)}``: ``c_i >= 0`` finite, ``p_i >= 0`` summing to 1.

    Equal values are merged and zero-probability values dropped; the result is sorted.

    Parameters
    ----------
    values, probabilities : array_like
        The support and its probabilities (1-D, same length, not empty).
    values_name, probabilities_name : str
        Names of the two parameters, for the messages.

    Returns
    -------
    tuple of tuple of float
        ``(values, probabilities)``.

    Examples
    --------
    >>> finite_law([2, 0, 2], [0.25, 0.5, 0.25], values_name="c", probabilities_name="p")
    ((0.0, 2.0), (0.5, 0.5))
    """
    c = real_array(values_name, values, "an array of real numbers")
    p = real_array(probabilities_name, probabilities, "an array of real numbers")
    if c.ndim != 1 or c.size == 0 or p.shape != c.shape:
        raise ValueError(
            f"{values_name} and {probabilities_name} must be non-empty 1-D arrays of one "
            f"length, got shapes {c.shape} and {p.shape}"
        )
    if not np.all(np.isfinite(c)) or np.any(c < 0):
        raise ValueError(f"{values_name} must be finite and >= 0, got {c.tolist()}")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError(f"{probabilities_name} must be finite and >= 0, got {p.tolist()}")
    total = float(p.sum())
    if abs(total - 1.0) > 1e-9:
        raise ValueError(f"{probabilities_name} must sum to 1 (within 1e-9), got sum {total!r}")
    keep = p > 0
    values_kept, inverse = np.unique(c[keep], return_inverse=True)
    probs = np.bincount(inverse, weights=p[keep] / total, minlength=values_kept.size)
    return tuple(values_kept.tolist()), tuple(probs.tolist())


#: largest sensitivity / sigma a Gaussian mixture law takes: (c / sigma)^2 / 2 stays finite
_MAX_RATIO = 1e150


@dataclass(frozen=True, eq=False)
class GaussianMixtureLossLaw(PrivacyLossLaw):
    """Privacy loss of ``(sum_i p_i N(c_i, s^2), N(0, s^2))``, the mixture-of-Gaussians pair.

    This is the remove direction of the mixture-of-Gaussians mechanism (Choquette-Choo,
    Ganesh, Steinke, Thakurta 2023, arXiv:2310.15526, Section 3); the add direction is
    the swapped pair (:func:`dpacct.accountant.laws.loss_law_rdp.swapped_loss_law`).  With
    ``t = y / s`` and ``a_i = c_i / s`` the loss is
    ``l(t) = log sum_i p_i exp(a_i t - a_i^2 / 2)``, increasing and convex, with infimum
    ``log p_0`` (``p_0`` the probability of ``c = 0``); it never reaches ``+-inf``.

    Parameters
    ----------
    sigma : float
        Noise standard deviation ``s``, > 0.
    sensitivities : array_like
        The support ``c_i >= 0`` of the sensitivity law (at least one ``c_i > 0``).
    probabilities : array_like
        Their probabilities ``p_i``, summing to 1.

    Examples
    --------
    >>> law = GaussianMixtureLossLaw(1.0, [1.0], [1.0])   # one component: N(1, 1) vs N(0, 1)
    >>> round(float(law.hockey_stick(np.array([1.0]))[0]), 6)
    0.126937
    """

    sigma: float
    sensitivities: tuple
    probabilities: tuple
    _a: np.ndarray = field(init=False, repr=False)
    _logp: np.ndarray = field(init=False, repr=False)
    _p: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        s = check_positive("sigma", self.sigma)
        c, p = finite_law(
            self.sensitivities,
            self.probabilities,
            values_name="sensitivities",
            probabilities_name="probabilities",
        )
        if c[-1] <= 0.0:
            raise ValueError(
                "sensitivities must have a positive value with positive probability "
                f"(a sensitivity that is always 0 leaks nothing), got {list(c)}"
            )
        if c[-1] / s > _MAX_RATIO:
            # the loss (c/sigma)^2 / 2 overflows a float past this: the curve would read
            # nan, and a nan read as 0 claimed epsilon 0 for an essentially noiseless release
            raise ValueError(
                f"sigma must be at least max(sensitivities) / {_MAX_RATIO:g} (got sigma "
                f"{s!r} for a largest sensitivity {c[-1]!r}): the privacy loss "
                "(sensitivity / sigma)^2 / 2 leaves the float range"
            )
        object.__setattr__(self, "sigma", s)
        object.__setattr__(self, "sensitivities", c)
        object.__setattr__(self, "probabilities", p)
        object.__setattr__(self, "_a", np.asarray(c) / s)
        object.__setattr__(self, "_p", np.asarray(p))
        object.__setattr__(self, "_logp", np.log(np.asarray(p)))

    def __repr__(self) -> str:
        return (
            f"GaussianMixtureLossLaw(sigma={self.sigma!r}, "
            f"sensitivities={list(self.sensitivities)!r}, "
            f"probabilities={list(self.probabilities)!r})"
        )

    # ------------------------------------------------------------------ the inverse
    def _loss(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``l(t)`` and ``l'(t)`` (the softmax-weighted mean of ``a_i``)."""
        return _lse_affine(t, self._logp - 0.5 * self._a**2, self._a)

    def _inverse(self, x: np.ndarray) -> np.ndarray:
        """``t`` with ``l(t) = x`` (``-inf`` at or below ``log p_0``, ``+inf`` at ``+inf``).

        ``l`` is a log-sum-exp of affine functions of ``t``.  With a zero sensitivity
        ``a_0 = 0`` it flattens to ``log p_0`` on the left, where Newton's method creeps
        (one ``1 / a_1`` per step); there ``l(t) = log p_0 + log1p(e^{g(t)})`` with
        ``g`` the log-sum-exp of the other components shifted by ``-log p_0``, and
        ``g(t) = log(e^{x - log p_0} - 1)`` is solved instead: ``g`` is convex with
        slopes in ``[a_1, a_max]``, so Newton from the right converges in a few steps.
        """
        x = np.asarray(x, dtype=float)
        flat = x.reshape(-1)
        out = np.full(flat.shape, np.nan)
        floor = self._logp[0] if self._a[0] == 0.0 else -np.inf
        low = flat <= floor
        out[low] = -np.inf
        out[np.isposinf(flat)] = np.inf
        todo = ~low & np.isfinite(flat)
        if np.any(todo):
            offsets = self._logp - 0.5 * self._a**2
            if self._a[0] == 0.0:
                targets = _log_expm1(flat[todo] - floor, 30.0)
                out[todo] = _solve_lse(targets, offsets[1:] - floor, self._a[1:])
            else:
                out[todo] = _solve_lse(flat[todo], offsets, self._a)
        return out.reshape(x.shape)

    # ------------------------------------------------------ distribution functions
    def _p_cdf_at(self, t: np.ndarray) -> np.ndarray:
        return special.ndtr(t[..., None] - self._a) @ self._p

    def _p_sf_at(self, t: np.ndarray) -> np.ndarray:
        return special.ndtr(self._a - t[..., None]) @ self._p

    def cdf_p(self, x):
        return self._p_cdf_at(self._inverse(x))

    def sf_p(self, x):
        return self._p_sf_at(self._inverse(x))

    def cdf_q(self, x):
        return special.ndtr(self._inverse(x))

    def sf_q(self, x):
        return special.ndtr(-self._inverse(x))

    def bin_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`PrivacyLossLaw.bin_masses`, inverting the loss once for all four.

        Parameters
        ----------
        edges : array_like
            Increasing bin edges (``-inf`` and ``+inf`` allowed).
        """
        e = np.asarray(edges, dtype=float)
        t = self._inverse(e)
        return _split_differences(
            e.size,
            lambda s: self._p_cdf_at(t[s]),
            lambda s: self._p_sf_at(t[s]),
            lambda s: special.ndtr(t[s]),
            lambda s: special.ndtr(-t[s]),
            0.0,
        )


@dataclass(frozen=True, eq=False)
class MixtureLossLaw(PrivacyLossLaw):
    """The loss law of a revealed mixture: component ``j`` (law ``laws[j]``) with weight ``w_j``.

    ``P(L <= x) = sum_j w_j P_j(L_j <= x)`` and likewise under ``Q``; masses at
    ``+-inf`` are averaged too.  It dominates every pair ``(sum_j w_j P_j,
    sum_j w_j Q_j)`` whose components ``(P_j, Q_j)`` are dominated by ``laws[j]`` (see
    the module docstring).

    Parameters
    ----------
    laws : sequence of PrivacyLossLaw
        The components' laws.
    weights : array_like
        Their weights, >= 0, summing to 1.

    Examples
    --------
    >>> from dpacct.accountant import GaussianLossLaw
    >>> mix = MixtureLossLaw((GaussianLossLaw(1.0), GaussianLossLaw(2.0)), (0.5, 0.5))
    >>> d = [law.hockey_stick(np.array([1.0]))[0] for law in mix.laws]
    >>> bool(np.isclose(mix.hockey_stick(np.array([1.0]))[0], 0.5 * d[0] + 0.5 * d[1]))
    True
    """

    laws: tuple
    weights: tuple

    def __post_init__(self) -> None:
        laws = tuple(self.laws)
        if not laws or not all(isinstance(law, PrivacyLossLaw) for law in laws):
            raise TypeError("laws must be a non-empty sequence of PrivacyLossLaw")
        w = real_array("weights", self.weights, "an array of real numbers")
        if w.shape != (len(laws),) or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError(f"weights must be {len(laws)} finite numbers >= 0, got {w.tolist()}")
        if abs(float(w.sum()) - 1.0) > 1e-9:
            raise ValueError(f"weights must sum to 1 (within 1e-9), got sum {float(w.sum())!r}")
        object.__setattr__(self, "laws", laws)
        object.__setattr__(self, "weights", tuple(w.tolist()))
        inf_mass = math.fsum(wj * law.inf_mass for wj, law in zip(w, laws, strict=True))
        neg = math.fsum(wj * law.q_neg_inf_mass for wj, law in zip(w, laws, strict=True))
        object.__setattr__(self, "inf_mass", min(inf_mass, 1.0))
        object.__setattr__(self, "q_neg_inf_mass", min(neg, 1.0))

    def _mix(self, what: str, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        out = np.zeros(x.shape)
        for wj, law in zip(self.weights, self.laws, strict=True):
            if wj > 0:
                out = out + wj * getattr(law, what)(x)
        return out

    def cdf_p(self, x):
        return self._mix("cdf_p", x)

    def sf_p(self, x):
        return self._mix("sf_p", x)

    def cdf_q(self, x):
        return self._mix("cdf_q", x)

    def sf_q(self, x):
        return self._mix("sf_q", x)

    def bin_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The ``w``-average of the components' bin masses (each accurate in its tails).

        Parameters
        ----------
        edges : array_like
            Increasing bin edges (``-inf`` and ``+inf`` allowed).
        """
        e = np.asarray(edges, dtype=float)
        m_p = np.zeros(max(e.size - 1, 0))
        m_q = np.zeros(max(e.size - 1, 0))
        for wj, law in zip(self.weights, self.laws, strict=True):
            if wj > 0:
                p, q = law.bin_masses(e)
                m_p += wj * p
                m_q += wj * q
        return m_p, m_q


def _lse_affine(t: np.ndarray, offsets: np.ndarray, slopes: np.ndarray):
    """``log sum_i e^{offsets_i + slopes_i t}`` and its derivative in ``t``."""
    z = offsets[None, :] + t[:, None] * slopes[None, :]
    top = np.max(z, axis=1, keepdims=True)
    e = np.exp(z - top)
    s = e.sum(axis=1)
    return top[:, 0] + np.log(s), (e @ slopes) / s


def _solve_lse(y: np.ndarray, offsets: np.ndarray, slopes: np.ndarray) -> np.ndarray:
    """``t`` with ``log sum_i e^{offsets_i + slopes_i t} = y`` (all slopes > 0).

    The function is convex and increasing.  Each component alone is below it, so the
    smallest of the components' own roots is a start at or right of the root, and
    Newton's steps from there decrease monotonically to it (never past it).
    """
    t = np.min((y[:, None] - offsets[None, :]) / slopes[None, :], axis=1)
    for _ in range(_NEWTON_STEPS):
        value, slope = _lse_affine(t, offsets, slopes)
        step = (value - y) / slope
        step = np.where(np.isfinite(step), np.maximum(step, 0.0), 0.0)
        t_new = t - step
        if np.all(t_new == t):
            break
        t = t_new
    return t
