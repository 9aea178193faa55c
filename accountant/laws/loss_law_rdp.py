"""Two derived views of a privacy-loss law: the other neighbouring direction (the
swapped pair) and the Renyi divergence of the pair it describes.

``D_alpha = log E_P[e^{(alpha - 1) L}] / (alpha - 1)`` (Mironov 2017, Definition 3), in
closed form for atomic and Gaussian laws and otherwise by a certified chord quadrature
(the connect-the-dots argument of Doroshenko et al. 2022 applied to a moment).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..numerics import TINY
from ..numerics import scipy_special as special
from ..validation import check_alpha
from .loss_law import AtomicLossLaw, GaussianLossLaw, PrivacyLossLaw  # noqa: F401 (doctests)

__all__ = ["RDP_BINS", "RDP_DECAY", "loss_law_rdp", "swapped_loss_law"]


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
    if law.closed_form == "gaussian":  # symmetric
        return law
    if law.closed_form == "atomic":
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
    >>> class Opaque(GaussianLossLaw):   # does not inherit the closed form: quadrature
    ...     pass
    >>> r = loss_law_rdp(Opaque(mu=1.0), [2.0, 10.0])
    >>> bool(np.all(r >= [1.0, 5.0]) and np.all(r < [1.0001, 5.0001]))
    True
    """
    a = check_alpha(alpha)
    flat = a.reshape(-1)
    if law.inf_mass > 0:
        out = np.full(flat.shape, np.inf)
    elif law.closed_form == "gaussian":
        out = flat * law.mu**2 / 2.0
    elif law.closed_form == "atomic":
        out = _atomic_rdp(law, flat)
    else:
        out = _quadrature_rdp(law, flat)
    return out.reshape(a.shape)
