"""Laws of the privacy loss random variable of a dominating pair.

A pair of output distributions ``(P, Q)`` of a mechanism on neighbouring datasets is
summarised, for every accounting purpose in this library, by its *privacy loss*
``L = log(dP/dQ)``, observed under ``P`` and under ``Q``.  The hockey-stick divergence

    delta(eps) = P(L = +inf) + P(L > eps) - e^eps Q(L > eps)

is the tight (eps, delta) curve of the pair (Koskela et al. 2020; Gopi, Lee, Wutschitz
2021, Definition 3.1), and a privacy loss distribution (PLD) for composition is obtained
by discretising ``L`` (see :mod:`dpacct.accountant.pld.grid`).

A :class:`PrivacyLossLaw` exposes the distribution functions of ``L`` under both
measures, vectorised over numpy arrays.  Conventions:

* ``cdf_p(x) = P(L <= x)`` and ``sf_p(x) = P(x < L < inf)``; ``P`` puts no mass on
  ``L = -inf`` and may put ``inf_mass`` on ``L = +inf``.
* ``cdf_q(x) = Q(L <= x)`` *including* the mass ``Q(L = -inf)`` (outputs that ``P``
  never produces) and ``sf_q(x) = Q(L > x)``; ``Q`` puts no mass on ``L = +inf``.

Concrete laws here: the Gaussian loss (normal under both measures), an atomic law
(any finite set of loss values, used by discrete mechanisms and by discretised PLDs),
and the Poisson-subsampled transform of any law (Zhu, Dong, Wang 2022, Theorem 11).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ..capabilities import _DeclaredHere
from ..numerics import TINY, _log_expm1_30
from ..numerics import scipy_special as special
from ..validation import check_positive, check_probability, check_sample_rate, real_array
from .loss_law_sgm import KEPT, SharedFunctions
from .sgm_split import split_numerators

__all__ = [
    "AtomicLossLaw",
    "GaussianLossLaw",
    "PoissonSubsampledLossLaw",
    "PrivacyLossLaw",
]


def _differences(n: int, cdf, sf, total: float) -> np.ndarray:
    """Masses of the ``n - 1`` bins between ``n`` sorted edges: CDF differences where
    ``cdf[j+1] < sf[j]`` (left of the median), survival differences elsewhere.

    ``cdf(s)`` and ``sf(s)`` evaluate the distribution functions at the edges of the
    index slice ``s``; ``total = cdf + sf`` is the finite mass.  Only one of them is
    evaluated at every edge; the other only where the rule could pick it, i.e. from
    (or up to) where the first comes within ``1e-6`` of half the mass -- beyond, the
    rule's choice is certain (``sf = total - cdf`` up to rounding).  The choice is
    verified at the boundary, and everything is evaluated if that check fails.
    """
    half = 0.5 * total - 1e-6
    c = np.empty(n)
    s = np.empty(n)
    mid = n // 2
    if float(cdf(slice(mid, mid + 1))[0]) < 0.5 * total:
        # median in the right half: the CDF everywhere, the survival function from k
        c[:] = cdf(slice(None))
        k = max(int(np.searchsorted(c[1:], half, side="left")) - 1, 0)
        s[k:] = sf(slice(k, None))
        rule = c[k + 1 :] < s[k:-1]  # before k, c[j+1] < half < sf[j]: the CDF
        certain = k == 0 or bool(rule[0])
        if certain:  # only the differences the rule picks (the same values)
            m = np.empty(n - 1)
            np.subtract(c[1 : k + 1], c[:k], out=m[:k])
            m[k:] = np.where(rule, c[k + 1 :] - c[k:-1], s[k:-1] - s[k + 1 :])
            return np.maximum(m, 0.0, out=m)
    else:
        # median in the left half: the survival function everywhere, the CDF up to k
        s[:] = sf(slice(None))
        k = min(int(np.searchsorted(-s, -half, side="right")), n - 1)
        c[: k + 1] = cdf(slice(0, k + 1))
        rule = c[1 : k + 1] < s[:k]  # from k on, sf[j] < half < c[j+1]: the survival
        certain = k >= n - 2
        if not certain:
            certain = not bool(cdf(slice(k + 1, k + 2))[0] < s[k])
        if certain:
            m = np.empty(n - 1)
            m[:k] = np.where(rule, c[1 : k + 1] - c[:k], s[:k] - s[1 : k + 1])
            np.subtract(s[k:-1], s[k + 1 :], out=m[k:])
            return np.maximum(m, 0.0, out=m)
    c, s = cdf(slice(None)), sf(slice(None))
    with np.errstate(invalid="ignore"):
        m = np.where(c[1:] < s[:-1], c[1:] - c[:-1], s[:-1] - s[1:])
    return np.maximum(m, 0.0)


def _split_differences(n: int, cdf_p, sf_p, cdf_q, sf_q, inf_mass: float):
    """P- and Q-masses of the bins between ``n`` edges (see :func:`_differences`)."""
    if n < 2:
        return np.zeros(0), np.zeros(0)
    return (
        _differences(n, cdf_p, sf_p, 1.0 - inf_mass),
        _differences(n, cdf_q, sf_q, 1.0),
    )


class PrivacyLossLaw(ABC):
    """Distribution of the privacy loss ``L = log(dP/dQ)`` under ``P`` and under ``Q``.

    Subclasses implement :meth:`cdf_p`, :meth:`sf_p`, :meth:`cdf_q`, :meth:`sf_q` as
    vectorised functions accepting ``-inf`` and ``+inf``, and set ``inf_mass``
    (``P(L = +inf)``) and ``q_neg_inf_mass`` (``Q(L = -inf)``).  The base class derives
    the exact hockey-stick curve, accurate bin masses and tail quantiles.

    Examples
    --------
    >>> law = GaussianLossLaw(mu=1.0)   # a subclass; N(1/2, 1) under P
    >>> float(law.cdf_p(np.array([0.5]))[0])
    0.5
    >>> lo, hi = law.quantile_bounds(1e-9)
    >>> bool(law.cdf_p(np.array([lo]))[0] <= 1e-9 and law.sf_p(np.array([hi]))[0] <= 1e-9)
    True
    """

    inf_mass: float = 0.0
    q_neg_inf_mass: float = 0.0
    #: if not None, every finite loss value is an integer multiple of this number
    lattice: float | None = None
    #: if not None, the law has atoms at integer multiples of this number (and may be
    #: continuous elsewhere): grids are then chosen as ``anchor / 2**j`` so that the
    #: atoms sit on nodes, where both discretisations are exact
    anchor: float | None = None
    #: a weak anchor has an atom at the anchor itself but others elsewhere (the image
    #: of a base atom under subsampling); it is used only when every part of a
    #: composition shares it, otherwise the law gets a binary grid nested with the
    #: others' (see :func:`dpacct.accountant.transformers.compose._anchors_agree`)
    weak_anchor: bool = False
    #: the closed form the engine may use for this law's swap and Renyi divergence
    #: (``"gaussian"``, ``"atomic"``) or None (generic routes): declared by the family
    #: for itself (:class:`~dpacct.accountant.capabilities._DeclaredHere`), so a
    #: subclass, which may change the law, does not inherit it
    closed_form: str | None = None

    @abstractmethod
    def cdf_p(self, x: np.ndarray) -> np.ndarray:
        """``P(L <= x)``.

        Parameters
        ----------
        x : array_like
            Loss values; ``-inf`` and ``+inf`` allowed.
        """

    @abstractmethod
    def sf_p(self, x: np.ndarray) -> np.ndarray:
        """``P(x < L < inf)`` (the mass at ``+inf`` is excluded).

        Parameters
        ----------
        x : array_like
            Loss values; ``-inf`` and ``+inf`` allowed.
        """

    @abstractmethod
    def cdf_q(self, x: np.ndarray) -> np.ndarray:
        """``Q(L <= x)``, including ``Q(L = -inf)``.

        Parameters
        ----------
        x : array_like
            Loss values; ``-inf`` and ``+inf`` allowed.
        """

    @abstractmethod
    def sf_q(self, x: np.ndarray) -> np.ndarray:
        """``Q(L > x)``.

        Parameters
        ----------
        x : array_like
            Loss values; ``-inf`` and ``+inf`` allowed.
        """

    # ------------------------------------------------------------------ derived
    def hockey_stick(self, epsilon: np.ndarray) -> np.ndarray:
        """Exact ``delta(eps) = sup_S P(S) - e^eps Q(S)`` of the pair, vectorised.

        Parameters
        ----------
        epsilon : array_like
            Real epsilons (negative values allowed).
        """
        eps = np.asarray(epsilon, dtype=float)
        with np.errstate(over="ignore", invalid="ignore"):
            val = self.inf_mass + self.sf_p(eps) - np.exp(eps) * self.sf_q(eps)
        return np.clip(np.where(np.isfinite(val), val, self.inf_mass), 0.0, 1.0)

    def bin_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """P- and Q-masses of the bins ``(edges[j], edges[j+1]]``.

        Differences are taken on the CDF on the left of the median and on the survival
        function on the right, so that tail bins keep full relative precision.

        Parameters
        ----------
        edges : array_like
            Increasing bin edges (``-inf`` and ``+inf`` allowed).
        """
        e = np.asarray(edges, dtype=float)
        return _split_differences(
            e.size,
            lambda s: self.cdf_p(e[s]),
            lambda s: self.sf_p(e[s]),
            lambda s: self.cdf_q(e[s]),
            lambda s: self.sf_q(e[s]),
            self.inf_mass,
        )

    def _log_q_bins(self, edges: np.ndarray) -> np.ndarray | None:
        """log of the Q-masses of the bins between the finite increasing ``edges``, where
        the law can take them in log space (None: it cannot; the grid then rounds the
        bins whose Q-mass leaves the normal floats onto a node)."""
        return None

    def _bins_and_ends(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple]:
        """:meth:`bin_masses` of the increasing ``edges`` and ``(cdf_p(e_0), cdf_q(e_0),
        sf_p(e_last), sf_q(e_last))``: what a grid discretisation
        (:func:`~dpacct.accountant.pld.grid._bins_from_law`) reads of a law."""
        e = np.asarray(edges, dtype=float)
        m, nq = self.bin_masses(e)
        a0, an = e[:1], e[-1:]
        ends = (
            float(self.cdf_p(a0)[0]),
            float(self.cdf_q(a0)[0]),
            float(self.sf_p(an)[0]),
            float(self.sf_q(an)[0]),
        )
        return m, nq, ends

    def _split_numerators(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Every bin's ``m - r`` (the grid's split numerator) and error bounds, where the law
        computes them better than the grid's difference of its masses; None: it does not."""
        return None

    def quantile_bounds(self, tail: float) -> tuple[float, float]:
        """Loss values ``(lo, hi)`` with ``P(L <= lo) <= tail`` and ``P(hi < L < inf) <= tail``.

        Found by bisection on the distribution functions after a geometric bracket
        search, so the returned interval is guaranteed to satisfy both inequalities.

        Parameters
        ----------
        tail : float
            The P-mass allowed beyond each end, in (0, 1).
        """
        # a law is immutable: both ends of a bracket (and every grid) ask the same
        # tails of one law, so the bisection runs once per tail (issue 37)
        memo = self.__dict__.setdefault("_quantile_memo", {})
        if tail not in memo:
            lo = -_boundary(lambda x: self.cdf_p(-x) <= tail)
            hi = _boundary(lambda x: self.sf_p(x) <= tail)
            # lo > hi: the whole finite P-mass is within the tail, any point will do
            memo[tail] = (lo, hi) if lo <= hi else (0.0, 0.0)
        return memo[tail]

    def spread(self) -> float:
        """A robust scale of ``L`` under ``P``: the interquartile range over 1.349.

        When both quartiles sit on one atom the range between the 1% quantiles is used
        instead, and 0 is returned only for a point mass.
        """
        memo = self.__dict__.setdefault("_quantile_memo", {})
        if "spread" not in memo:
            memo["spread"] = self._spread()
        return memo["spread"]

    def _spread(self) -> float:
        for level in (0.25, 0.01, 1e-6):
            lo = -_boundary(lambda x, t=level: self.cdf_p(-x) < t)
            hi = _boundary(lambda x, t=level: self.sf_p(x) < t)
            width = hi - lo
            if width > 1e-9 * max(abs(hi), abs(lo), TINY):
                return width / 1.349 if level == 0.25 else width / 4.0
        return 0.0


def _boundary(pred) -> float:
    """Smallest x (to float precision) where the monotone predicate ``pred`` holds.

    ``pred`` must be false for very negative x and true for large x, and accept an
    array.  A geometric search brackets the boundary, then each round evaluates 33
    points of the bracket at once and keeps the cell where ``pred`` flips (a
    32-fold shrink per vectorised call).  The returned point always satisfies
    ``pred``.
    """

    def ok(x: float) -> bool:
        return bool(np.asarray(pred(np.array([x])))[0])

    step = 1e-3
    # the geometric bracket: one vectorised call over +-step * 2^k, k < 48, then the
    # scalar doubling only if the boundary lies beyond
    ladder = step * 2.0 ** np.arange(48)
    with np.errstate(all="ignore"):
        flags = np.asarray(pred(np.concatenate([-ladder[::-1], [0.0], ladder])), dtype=bool)
    k = int(np.argmax(flags)) if flags.any() else flags.size
    if 0 < k < flags.size and not flags[:k].any() and flags[k:].all():
        points = np.concatenate([-ladder[::-1], [0.0], ladder])
        a, b = float(points[k - 1]), float(points[k])
    elif ok(0.0):
        b, a = 0.0, -step
        while ok(a):
            b, a = a, 2.0 * a
            if a < -1e300:  # pragma: no cover - pred true everywhere
                return b
    else:
        a, b = 0.0, step
        while not ok(b):
            a, b = b, 2.0 * b
            if b > 1e300:  # pragma: no cover - tails never vanish
                raise RuntimeError("privacy loss tail does not vanish")
    for _ in range(40):
        xs = np.linspace(a, b, 33)
        flags = np.asarray(pred(xs), dtype=bool)
        flags[-1] = True  # b is known to satisfy pred
        i = int(np.argmax(flags))  # first point where pred holds
        if i == 0:
            return float(xs[0])
        a_new, b_new = float(xs[i - 1]), float(xs[i])
        # 1e-10 relative is ample: callers need windows and scales, and the point
        # returned satisfies pred whatever the precision
        if (a_new, b_new) == (a, b) or b_new - a_new <= 1e-10 * max(abs(a_new), abs(b_new)):
            return b_new
        a, b = a_new, b_new
    return b


# ---------------------------------------------------------------------- Gaussian
@dataclass(frozen=True)
class GaussianLossLaw(PrivacyLossLaw):
    """Privacy loss of the pair ``(N(mu, 1), N(0, 1))``: ``L ~ N(+-mu^2/2, mu^2)``.

    Under ``P`` the loss is normal with mean ``mu^2/2`` and variance ``mu^2``, under
    ``Q`` with mean ``-mu^2/2`` (Balle & Wang 2018, Lemma 3; Dong, Roth, Su 2019,
    Section 2.2).  ``mu = sensitivity / sigma`` is the Gaussian-DP parameter.

    Parameters
    ----------
    mu : float
        The Gaussian-DP parameter, > 0.

    Examples
    --------
    >>> law = GaussianLossLaw(mu=1.0)
    >>> round(float(law.hockey_stick(np.array([1.0]))[0]), 6)
    0.126937
    """

    closed_form = _DeclaredHere("gaussian")

    mu: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "mu", check_positive("mu", self.mu))

    def _z(self, x: np.ndarray, sign: float) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        return (x - sign * 0.5 * self.mu**2) / self.mu

    def cdf_p(self, x):
        return special.ndtr(self._z(x, 1.0))

    def sf_p(self, x):
        return special.ndtr(-self._z(x, 1.0))

    def cdf_q(self, x):
        return special.ndtr(self._z(x, -1.0))

    def sf_q(self, x):
        return special.ndtr(-self._z(x, -1.0))

    def _log_q_bins(self, edges: np.ndarray) -> np.ndarray:
        # log(sf_q(a) - sf_q(b)) from scipy's log_ndtr (its asymptotic series far out,
        # where ndtr underflows past loss ~701 at mu 33.4)
        lz = special.log_ndtr(-self._z(edges, -1.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            return lz[:-1] + np.log(-np.expm1(lz[1:] - lz[:-1]))


# ---------------------------------------------------------------------- atomic
@dataclass(frozen=True, eq=False)
class AtomicLossLaw(PrivacyLossLaw):
    """A privacy loss with finitely many values ``losses`` carrying P-masses ``p``.

    The Q-mass of each atom is ``p * exp(-loss)``; ``inf_mass`` is ``P(L = +inf)`` and
    ``q_neg_inf_mass`` is ``Q(L = -inf)``.  Used for discrete mechanisms (randomized
    response, discrete Laplace) and to re-bin a discretised PLD onto a coarser grid.

    Parameters
    ----------
    losses : numpy.ndarray
        The finite loss values (any order; they are sorted).
    p : numpy.ndarray
        Their P-masses, >= 0.
    inf_mass : float, default 0.0
        ``P(L = +inf)``.
    q_neg_inf_mass : float, default 0.0
        ``Q(L = -inf)``.
    lattice : float, optional
        If given, every loss is a multiple of it (values are snapped to the multiples).

    Examples
    --------
    >>> p = 0.75  # randomized response, truthful with probability 3/4
    >>> law = AtomicLossLaw.from_pair(np.array([p, 1 - p]), np.array([1 - p, p]))
    >>> float(law.hockey_stick(np.array([0.0]))[0])
    0.5
    """

    closed_form = _DeclaredHere("atomic")

    losses: np.ndarray
    p: np.ndarray
    inf_mass: float = 0.0
    q_neg_inf_mass: float = 0.0
    lattice: float | None = None
    _q: np.ndarray = field(init=False, repr=False)
    _cp: np.ndarray = field(init=False, repr=False)
    _sp: np.ndarray = field(init=False, repr=False)
    _cq: np.ndarray = field(init=False, repr=False)
    _sq: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        raw = real_array("losses", self.losses, "an array of real numbers")
        mass = real_array("p", self.p, "an array of real numbers")
        if raw.ndim != 1 or mass.shape != raw.shape:
            raise ValueError(
                f"losses and p must be 1-D arrays of one shape, got {raw.shape} and {mass.shape}"
            )
        for name in ("inf_mass", "q_neg_inf_mass"):
            value = check_probability(name, getattr(self, name), low_open=False, high_open=False)
            object.__setattr__(self, name, value)
        if self.lattice is not None:
            object.__setattr__(self, "lattice", check_positive("lattice", self.lattice))
        order = np.argsort(raw, kind="stable")
        losses = raw[order]
        if self.lattice is not None:
            # snap to exact multiples so that grid nodes k * lattice coincide bitwise
            losses = np.round(losses / self.lattice) * self.lattice
        p = mass[order]
        if losses.size and not np.all(np.isfinite(losses)):
            raise ValueError("losses must be finite; put infinite losses in inf_mass")
        if not (p >= 0).all():  # NaN too
            raise ValueError("atom masses p must be non-negative")
        with np.errstate(over="ignore", invalid="ignore"):
            q = np.where(p > 0, p * np.exp(-losses), 0.0)
        object.__setattr__(self, "losses", losses)
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "_q", q)
        zero = np.zeros(1)
        object.__setattr__(self, "_cp", np.concatenate([zero, np.cumsum(p)]))
        object.__setattr__(self, "_sp", np.concatenate([np.cumsum(p[::-1])[::-1], zero]))
        object.__setattr__(self, "_cq", np.concatenate([zero, np.cumsum(q)]))
        object.__setattr__(self, "_sq", np.concatenate([np.cumsum(q[::-1])[::-1], zero]))

    @classmethod
    def from_pair(cls, p: np.ndarray, q: np.ndarray, lattice: float | None = None):
        """Build the law of ``log(p_i / q_i)`` from two probability vectors.

        Parameters
        ----------
        p, q : array_like
            Probabilities of the same outcomes under P and under Q; an outcome with
            ``q_i = 0`` adds to ``inf_mass``, one with ``p_i = 0`` to ``q_neg_inf_mass``.
        lattice : float, optional
            As in the class: a spacing of which every loss is a multiple.
        """
        p = np.asarray(p, dtype=float)
        q = np.asarray(q, dtype=float)
        both = (p > 0) & (q > 0)
        inf_mass = float(p[(p > 0) & (q == 0)].sum())
        q_neg = float(q[(q > 0) & (p == 0)].sum())
        return cls(
            losses=np.log(p[both]) - np.log(q[both]),
            p=p[both],
            inf_mass=inf_mass,
            q_neg_inf_mass=q_neg,
            lattice=lattice,
        )

    def _idx(self, x: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.losses, np.asarray(x, dtype=float), side="right")

    def cdf_p(self, x):
        return self._cp[self._idx(x)]

    def sf_p(self, x):
        return self._sp[self._idx(x)]

    def cdf_q(self, x):
        return self.q_neg_inf_mass + self._cq[self._idx(x)]

    def sf_q(self, x):
        return self._sq[self._idx(x)]


# ---------------------------------------------------------------------- subsampling
class _Tails(Protocol):
    """What :class:`PoissonSubsampledLossLaw`'s ``_*_at`` methods read of the base law at
    the preimages ``x``: its four distribution functions and the mask of ``x = +inf``
    (None: no entry set)."""

    def cdf_p(self) -> np.ndarray: ...
    def sf_p(self) -> np.ndarray: ...
    def cdf_q(self) -> np.ndarray: ...
    def sf_q(self) -> np.ndarray: ...
    def posinf(self) -> np.ndarray | None: ...


class _BaseTails:
    """The default :class:`_Tails`: the base law's own distribution functions on ``x``."""

    __slots__ = ("base", "x")

    def __init__(self, base: PrivacyLossLaw, x: np.ndarray) -> None:
        self.base, self.x = base, x

    def cdf_p(self) -> np.ndarray:
        return self.base.cdf_p(self.x)

    def sf_p(self) -> np.ndarray:
        return self.base.sf_p(self.x)

    def cdf_q(self) -> np.ndarray:
        return self.base.cdf_q(self.x)

    def sf_q(self) -> np.ndarray:
        return self.base.sf_q(self.x)

    def posinf(self) -> np.ndarray:
        return np.isposinf(self.x)


def _where(mask: np.ndarray | None, value: float, val: np.ndarray) -> np.ndarray:
    """``np.where(mask, value, val)``; ``val`` itself when ``mask`` is None (no entry set)."""
    return val if mask is None else np.where(mask, value, val)


@dataclass(frozen=True, eq=False)
class PoissonSubsampledLossLaw(PrivacyLossLaw):
    """Privacy loss of a Poisson-subsampled mechanism, in one neighbouring direction.

    Let ``(P, Q)`` be a dominating pair of the base mechanism (``P`` the output on the
    dataset *with* the differing record).  With sampling probability ``q`` the
    subsampled mechanism is dominated by (Zhu, Dong, Wang 2022, Theorem 11;
    Mironov, Talwar, Zhang 2019, Section 3 for the Gaussian):

    * ``direction="remove"``: ``((1-q) Q + q P,  Q)`` whose loss is
      ``h(L) = log(1 - q + q e^L)``;
    * ``direction="add"``: ``(Q,  (1-q) Q + q P)`` whose loss is
      ``g(L) = -log(1 - q + q e^L)`` observed under ``Q``.

    For the add direction the base pair must be given as ``(P_a, Q_a) = (Q, P)``, i.e.
    ``base`` is the law of ``log(dQ/dP)``; then ``g`` reads ``-log(1 - q + q e^{-L_a})``.
    Both transforms are increasing, so the distribution functions are those of the base
    law at the inverse image, mixed as above.

    Parameters
    ----------
    base : PrivacyLossLaw
        The base mechanism's loss law (for ``"add"``, of ``log(dQ/dP)``, see above).
    sample_rate : float
        Poisson sampling probability ``q``, in (0, 1].
    direction : {"remove", "add"}
        The neighbouring direction.

    Examples
    --------
    >>> base = GaussianLossLaw(mu=1.0)
    >>> sub = PoissonSubsampledLossLaw(base, 0.01, "remove")
    >>> bool(sub.hockey_stick(np.array([0.5]))[0] < base.hockey_stick(np.array([0.5]))[0])
    True
    """

    base: PrivacyLossLaw
    sample_rate: float
    direction: str

    def __post_init__(self) -> None:
        if self.direction not in ("remove", "add"):
            raise ValueError(f"direction must be 'remove' or 'add', got {self.direction!r}")
        q = check_sample_rate(self.sample_rate)
        object.__setattr__(self, "sample_rate", q)
        if self.direction == "remove":
            object.__setattr__(self, "inf_mass", q * self.base.inf_mass)
            object.__setattr__(self, "q_neg_inf_mass", 0.0)
        else:
            object.__setattr__(self, "inf_mass", 0.0)
            object.__setattr__(self, "q_neg_inf_mass", q * self.base.q_neg_inf_mass)
        object.__setattr__(self, "lattice", None)
        # An atom of the base at its anchor a > 0 (Laplace: the loss ceiling) becomes an
        # atom at the image of a, the largest finite loss.  Grids anchored there keep it
        # on a node, where both discretisations are exact; the other atoms land off the
        # grid but sit at lower losses, where rounding them moves delta much less.
        base_anchor = self.base.anchor if self.base.lattice is None else self.base.lattice
        image = None
        if base_anchor is not None and base_anchor > 0 and q < 1.0:
            sign = 1.0 if self.direction == "remove" else -1.0
            x = sign * base_anchor
            if x > 700.0:  # x + log q + log1p((1 - q)/q e^-x): expm1(x) would overflow
                image = x + math.log(q) + math.log1p(math.exp(math.log1p(-q) - math.log(q) - x))
            else:
                image = sign * math.log1p(q * math.expm1(x))
            image = image if image > 0 and math.isfinite(image) else None
        object.__setattr__(self, "anchor", image)
        object.__setattr__(self, "weak_anchor", image is not None)

    # The transformed loss y relates to the base loss x through
    #   remove: y = log(1-q + q e^x)        x = log((1-q)/q) + log(expm1(y - log(1-q)))
    #   add:    y = -log(1-q + q e^{-x})    x = -log((1-q)/q) - log(expm1(-y - log(1-q)))
    # The offset d = y - log(1-q) (resp. -y - log(1-q)) keeps full precision near the
    # bulk of the distribution, where y is within a few sample rates of log(1-q).
    def _preimage(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Base-loss preimage x of y, and masks ``below`` / ``above`` the range of h."""
        q = self.sample_rate
        y = np.asarray(y, dtype=float)
        if q == 1.0:
            x = y
            false = np.zeros(y.shape, dtype=bool)
            return x, false, false
        log1mq = math.log1p(-q)
        c = math.log((1.0 - q) / q)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if self.direction == "remove":
                d = y - log1mq
                x = c + _log_expm1_30(np.maximum(d, 0.0))
                below = d < 0  # y below the minimum log(1-q): no base loss maps there
                at_floor = d == 0
                x = np.where(at_floor, -np.inf, x)
                above = np.isposinf(y)
            else:
                d = -y - log1mq
                x = -(c + _log_expm1_30(np.maximum(d, 0.0)))
                above = d < 0  # y above the maximum -log(1-q)
                at_ceiling = d == 0
                x = np.where(at_ceiling, np.inf, x)
                below = np.isneginf(y)
        return x, below, above

    def bin_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`PrivacyLossLaw.bin_masses`, inverting the loss once for all four.

        Parameters
        ----------
        edges : array_like
            Increasing bin edges (``-inf`` and ``+inf`` allowed).
        """
        e = np.asarray(edges, dtype=float)
        if e.size >= 2 and self._shared_gaussian():
            return self._bins_and_ends(e)[:2]
        x, below, above = self._preimage(e)
        return _split_differences(
            e.size,
            lambda s: self._cdf_p_at(x[s], below[s], above[s]),
            lambda s: self._sf_p_at(x[s], below[s], above[s]),
            lambda s: self._cdf_q_at(x[s], below[s], above[s]),
            lambda s: self._sf_q_at(x[s], below[s], above[s]),
            self.inf_mass,
        )

    def _shared_gaussian(self) -> bool:
        """Whether :class:`~dpacct.accountant.laws.loss_law_sgm.SharedFunctions` computes
        this law's bin masses: a base declaring the Gaussian closed form for itself
        (``closed_form``, not inherited by a subclass: the same declaration
        :func:`~dpacct.accountant.laws.quantile_batch.subsampled_gaussian_law` reads),
        ``q < 1``, none of :data:`~dpacct.accountant.laws.loss_law_sgm.KEPT` overridden
        (bit-equal to :meth:`bin_masses`' own evaluation: the same ``_*_at`` methods, the
        base's tails read from shared columns)."""
        return (
            self.base.closed_form == "gaussian"
            and self.sample_rate < 1.0
            and _keeps_functions(self)
        )

    def _bins_and_ends(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple]:
        """As :meth:`PrivacyLossLaw._bins_and_ends`; for a Gaussian base, the four
        distribution functions and the end values share their normal tails
        (:mod:`~dpacct.accountant.laws.loss_law_sgm`: the same values, fewer ``ndtr``)."""
        e = np.asarray(edges, dtype=float)
        if not self._shared_gaussian() or e.size < 2:
            return super()._bins_and_ends(e)
        f = SharedFunctions(self, *self._preimage(e))
        m, nq = _split_differences(e.size, f.cdf_p, f.sf_p, f.cdf_q, f.sf_q, self.inf_mass)
        return m, nq, f.ends()

    def _split_numerators(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """A Gaussian base's from the base bin (:mod:`~dpacct.accountant.laws.sgm_split`)."""
        return split_numerators(self, edges) if self._shared_gaussian() else None

    def cdf_p(self, y):
        """``P(L <= y)``; see :meth:`PrivacyLossLaw.cdf_p`.

        Parameters
        ----------
        y : array_like
            Loss values of the subsampled pair; ``-inf`` and ``+inf`` allowed.
        """
        return self._cdf_p_at(*self._preimage(y))

    # The four ``_*_at`` methods are the only copy of the mixtures: they read the base
    # law's tails at the preimages ``x`` through ``tails`` (a :class:`_BaseTails`, the
    # base law's own functions on ``x``, unless a caller passes another provider of the
    # same values, when ``x`` is not read: :class:`~dpacct.accountant.laws.loss_law_sgm.
    # SharedFunctions`, the batched searches), and a mask given as None has no entry set
    # (its ``np.where`` would be the identity).
    def _cdf_p_at(self, x, below, above, tails: _Tails | None = None):
        q, t = self.sample_rate, _BaseTails(self.base, x) if tails is None else tails
        if self.direction == "remove":
            val = (1 - q) * t.cdf_q() + q * t.cdf_p()
            val = _where(below, 0.0, val)
            return _where(above, 1.0 - self.inf_mass, val)
        # add: P'' = base P_a, loss g(x) with g(+inf) = -log(1-q) finite
        val = t.cdf_p()
        val = _where(t.posinf(), 1.0, val)
        val = _where(above, 1.0, val)
        return _where(below, 0.0, val)

    def sf_p(self, y):
        """``P(y < L < inf)``; see :meth:`PrivacyLossLaw.sf_p`.

        Parameters
        ----------
        y : array_like
            Loss values of the subsampled pair; ``-inf`` and ``+inf`` allowed.
        """
        return self._sf_p_at(*self._preimage(y))

    def _sf_p_at(self, x, below, above, tails: _Tails | None = None):
        q, t = self.sample_rate, _BaseTails(self.base, x) if tails is None else tails
        if self.direction == "remove":
            val = (1 - q) * t.sf_q() + q * t.sf_p()
            # Q-only outcomes of the base (x = -inf) sit exactly at y = log(1-q)
            val = _where(below, 1.0 - self.inf_mass, val)
            return _where(above, 0.0, val)
        val = t.sf_p() + self.base.inf_mass
        val = _where(t.posinf(), 0.0, val)
        val = _where(above, 0.0, val)
        return _where(below, 1.0, val)

    def cdf_q(self, y):
        """``Q(L <= y)``; see :meth:`PrivacyLossLaw.cdf_q`.

        Parameters
        ----------
        y : array_like
            Loss values of the subsampled pair; ``-inf`` and ``+inf`` allowed.
        """
        return self._cdf_q_at(*self._preimage(y))

    def _cdf_q_at(self, x, below, above, tails: _Tails | None = None):
        q, t = self.sample_rate, _BaseTails(self.base, x) if tails is None else tails
        if self.direction == "remove":
            val = t.cdf_q()
            val = _where(below, 0.0, val)
            return _where(above, 1.0, val)
        val = (1 - q) * t.cdf_p() + q * t.cdf_q()
        val = _where(t.posinf(), 1.0, val)
        val = _where(above, 1.0, val)
        return _where(below, self.q_neg_inf_mass, val)

    def sf_q(self, y):
        """``Q(L > y)``; see :meth:`PrivacyLossLaw.sf_q`.

        Parameters
        ----------
        y : array_like
            Loss values of the subsampled pair; ``-inf`` and ``+inf`` allowed.
        """
        return self._sf_q_at(*self._preimage(y))

    def _sf_q_at(self, x, below, above, tails: _Tails | None = None):
        q, t = self.sample_rate, _BaseTails(self.base, x) if tails is None else tails
        if self.direction == "remove":
            val = t.sf_q()
            val = _where(below, 1.0, val)
            return _where(above, 0.0, val)
        val = (1 - q) * (t.sf_p() + self.base.inf_mass) + q * t.sf_q()
        val = _where(t.posinf(), 0.0, val)
        val = _where(above, 0.0, val)
        return _where(below, 1.0 - self.q_neg_inf_mass, val)


def _keeps_functions(law: PoissonSubsampledLossLaw) -> bool:
    """Whether ``law``'s class keeps every method of
    :data:`~dpacct.accountant.laws.loss_law_sgm.KEPT` as :class:`PoissonSubsampledLossLaw`
    defines it: the one list both gates of the subsampled Gaussian's own paths read
    (:meth:`PoissonSubsampledLossLaw._shared_gaussian`,
    :func:`~dpacct.accountant.laws.quantile_batch.subsampled_gaussian_law`)."""
    cls = type(law)
    return all(getattr(cls, m) is getattr(PoissonSubsampledLossLaw, m) for m in KEPT)
