"""The Laplace mechanism with its exact privacy curve, RDP curve and privacy loss law.

Sensitivity is normalised to one: the mechanism adds ``Lap(0, b)`` noise (density
``exp(-|x|/b) / (2b)``) to a query of L1 sensitivity 1, so a neighbouring pair is
``P = Lap(1, b)`` (the output *with* the extra record, shifted by the sensitivity) and
``Q = Lap(0, b)``.  The map ``x -> 1 - x`` swaps ``P`` and ``Q``, so the add and the
remove direction have the same privacy loss law.

Privacy loss.  With ``m = 1/b``, ``L(x) = log(dP/dQ)(x) = (|x| - |x - 1|) / b`` is
``-m`` on ``x <= 0``, ``+m`` on ``x >= 1`` and ``(2x - 1) m`` in between.  Under ``P``:

* an atom ``P(L = m) = P(X >= 1) = 1/2``;
* an atom ``P(L = -m) = P(X <= 0) = e^{-m} / 2``;
* on ``(-m, m)`` the distribution function ``P(L <= l) = exp(l/2 - m/2) / 2`` (the
  Laplace CDF below its centre, at ``x = (l/m + 1)/2``).

Under ``Q`` (``dQ = e^{-L} dP``): ``Q(L > l) = exp(-l/2 - m/2) / 2`` on ``[-m, m)``,
with atoms ``Q(L = m) = e^{-m}/2`` and ``Q(L = -m) = 1/2``.

Exact curve (for ``0 <= eps < m``):
``delta(eps) = P(L > eps) - e^eps Q(L > eps)
= 1 - e^{(eps-m)/2}/2 - e^eps e^{-(eps+m)/2}/2 = 1 - exp((eps - m)/2)``, and ``0`` for
``eps >= m``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpacct.accountant._rounding import quotient_down, quotient_up
from dpacct.accountant.capabilities import _DeclaredHere
from dpacct.accountant.curve_down import exp_down, line_down, scaled_down
from dpacct.accountant.laws.loss_law import PrivacyLossLaw
from dpacct.accountant.mechanism import Capabilities, Mechanism
from dpacct.accountant.numerics import SUBNORMAL_FLOOR, float_crossing, invert_decreasing
from dpacct.accountant.relations import REPLACE_ONE
from dpacct.accountant.serialization import register_mechanism
from dpacct.accountant.validation import check_positive

from ._release import check_real_values, check_release_args

_U = 2.0**-53  # the unit roundoff (the trade-off's error bounds)

__all__ = [
    "LaplaceLossLaw",
    "LaplaceMechanism",
    "ReplaceOneLaplaceMechanism",
    "laplace_delta",
    "laplace_delta_up",
    "laplace_epsilon0_up",
    "laplace_epsilon_bracket",
    "laplace_rdp",
]


def laplace_delta(b: float, epsilon: np.ndarray) -> np.ndarray:
    """Exact ``delta(eps) = max(0, 1 - exp((eps - 1/b)/2))`` of the Laplace mechanism.

    Derived in the module docstring from the privacy loss law (see also Koskela et al.
    2020, Section 6, and Dong, Roth, Su 2019, Appendix, for the same pair); evaluated as
    ``-expm1(min(eps - 1/b, 0) / 2)`` so that small deltas keep full relative precision.

    Parameters
    ----------
    b : float
        Noise scale per unit of L1 sensitivity.
    epsilon : array_like
        Non-negative epsilons.

    Examples
    --------
    >>> round(float(laplace_delta(1.0, np.array([0.0]))[0]), 6)   # 1 - e^{-1/2}
    0.393469
    >>> float(laplace_delta(1.0, np.array([1.0]))[0])
    0.0
    """
    eps = np.asarray(epsilon, dtype=float)
    return -np.expm1(0.5 * np.minimum(eps - 1.0 / b, 0.0))


def laplace_epsilon0_up(b: float) -> float:
    """``1 / b`` rounded up: the float quotient rounds to nearest, possibly below the
    real ``1 / b`` that is the Laplace mechanism's pure epsilon.

    Examples
    --------
    >>> laplace_epsilon0_up(2.0), laplace_epsilon0_up(3.0) > 1 / 3
    (0.5, True)
    """
    return quotient_up(1.0, b)


def laplace_delta_up(b: float, epsilon: np.ndarray) -> np.ndarray:
    """:func:`laplace_delta` rounded up: the curve at ``1 / b`` rounded up
    (:func:`laplace_epsilon0_up`), ``eps - 1/b`` rounded down and ``-expm1`` (numpy's,
    within four ulps) moved up by ``2^-49`` relative and one ulp.  Near ``eps = 1 / b``
    the plain evaluation loses the difference to rounding (a relative error of 33 % at
    delta ~ 1e-17 against 60 digits); this is what the mechanism's ``delta`` answers.

    Examples
    --------
    >>> b, eps = 10.430283719902233, np.array([0.09587466907461777])
    >>> bool(laplace_delta_up(b, eps)[0] >= 1.0372296630587442e-17)  # 60 digits
    True
    """
    return _delta_up_from(laplace_epsilon0_up(b), epsilon)


def _delta_up_from(epsilon0_up: float, epsilon: np.ndarray) -> np.ndarray:
    """:func:`laplace_delta_up` with ``1 / b`` rounded up given (computed once)."""
    eps = np.asarray(epsilon, dtype=float)
    x = np.nextafter(eps - epsilon0_up, -np.inf)
    d = -np.expm1(0.5 * np.minimum(x, 0.0))
    # numpy's vectorised expm1 within four ulps (AVX-512 SIMD code; glibc's within
    # one): up by 2^-49 relative (at least eight ulps) and one more ulp
    d = np.nextafter(d * (1.0 + 2.0**-49), np.inf)
    return np.where(x >= 0.0, 0.0, np.minimum(d, 1.0))


def _laplace_delta_down(epsilon0_down: float, epsilon: float) -> float:
    """:func:`laplace_delta` rounded *down* at one epsilon: ``1 / b`` rounded down (given),
    ``eps - 1/b`` rounded up, ``-expm1`` (within an ulp) moved down by two ulps."""
    x = math.nextafter(epsilon - epsilon0_down, math.inf)
    if x >= 0.0:
        return 0.0
    d = -math.expm1(0.5 * x)  # glibc's scalar expm1: within one ulp
    return max(math.nextafter(math.nextafter(d, -math.inf), -math.inf), 0.0)


def laplace_epsilon_bracket(b: float, delta: float) -> tuple[float, float]:
    """The certified bracket of the Laplace mechanism's epsilon at ``delta``, from the
    closed form.

    ``delta(eps) = 1 - exp((eps - 1/b)/2)`` inverts to ``eps = 1/b + 2 log(1 - delta)``
    (module docstring).  That value, evaluated in floats, starts two galloping searches
    (steps of 1, 2, 4, ... ulps) and float bisections:

    * the upper end is the *smallest* float ``hi`` with ``laplace_delta_up(b, hi) <=
      delta`` (capped at :func:`laplace_epsilon0_up`, the pure epsilon, which needs no
      delta): the curve the mechanism's ``delta`` answers, so ``delta(epsilon(d)) <= d``;
    * the lower end is the largest float ``lo`` whose delta *rounded down* (``1 / b``
      rounded down, ``eps - 1/b`` up, ``-expm1`` two ulps down) is still above
      ``delta``: the true epsilon exceeds it.

    So ``hi`` is never above the bisection's upper end
    (:func:`~dpacct.accountant.numerics.invert_decreasing`, which stops within ``1e-13``
    relative of the crossing), found with a few evaluations instead of about forty-five,
    and ``lo`` is a lower bound in its own right (the bisection's lower end only had
    ``laplace_delta_up(lo) > delta``, which a rounded-up curve does not certify).

    Parameters
    ----------
    b : float
        Noise scale per unit of L1 sensitivity, > 0.
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    tuple of float
        ``(lo, hi)``, ``0 <= lo <= hi``; ``(0, 0)`` when ``delta`` is at or above the
        curve at 0.

    Examples
    --------
    >>> lo, hi = laplace_epsilon_bracket(1.0, 1e-6)
    >>> hi, bool(0 < hi - lo < 1e-15)
    (0.9999979999990001, True)
    """
    ceiling = laplace_epsilon0_up(b)

    def met_up(x: float) -> bool:  # the pure epsilon needs no delta (the router's ceiling)
        return x >= ceiling or float(_delta_up_from(ceiling, x)) <= delta

    if met_up(0.0):
        return (0.0, 0.0)
    if not math.isfinite(ceiling):  # b below 1 / DBL_MAX: the router's bisection
        return invert_decreasing(lambda e: laplace_delta_up(b, e), delta, ceiling)
    start = ceiling + 2.0 * math.log1p(-delta)
    hi = float_crossing(met_up, start, ceiling)[1]
    floor = quotient_down(1.0, b)
    if _laplace_delta_down(floor, 0.0) <= delta:
        return (0.0, hi)
    lo = float_crossing(lambda x: _laplace_delta_down(floor, x) <= delta, start, hi)[0]
    return (lo, hi)


@dataclass(frozen=True)
class LaplaceLossLaw(PrivacyLossLaw):
    """Privacy loss of the pair ``(Lap(1, b), Lap(0, b))``: two atoms and a continuous part.

    With ``m = 1/b``: atoms at ``+m`` (P-mass ``1/2``) and ``-m`` (P-mass ``e^{-m}/2``),
    and on ``(-m, m)`` the P-density ``exp(l/2 - m/2) / 4`` (module docstring).  The
    Q-law follows from ``dQ = e^{-L} dP``.  The losses are not on a lattice.

    Parameters
    ----------
    b : float
        Laplace scale per unit of sensitivity, > 0.

    Examples
    --------
    >>> law = LaplaceLossLaw(b=1.0)
    >>> float(law.sf_p(np.array([0.99]))[0] - law.sf_p(np.array([1.0]))[0]) > 0.5
    True
    >>> round(float(law.hockey_stick(np.array([0.0]))[0]), 6)
    0.393469
    """

    b: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "b", check_positive("b", self.b))
        # the atoms at +-1/b sit on grid nodes when grids are binary fractions of 1/b.
        # 1/b is rounded up: the law is Laplace's at the scale 1/m <= b, which dominates
        # (a larger shift of a log-concave location family), so a PLD of it is an
        # upper bound even at epsilons within an ulp below n/b (two b = 0.7 steps:
        # the float 2/b is 1.3e-16 below the top atom, and delta there read 1e-300
        # against 2.9e-17).  Lower bounds from it may sit up to m's ulp too high in
        # epsilon there, inside the 1e-10 relative rounding of GridPLD.delta elsewhere.
        object.__setattr__(self, "anchor", quotient_up(1.0, self.b))

    def _parts(self, x):
        x = np.asarray(x, dtype=float)
        m = self.anchor
        xc = np.clip(x, -m, m)
        below = x < -m
        above = x >= m
        return x, xc, m, below, above

    def cdf_p(self, x):
        x, xc, m, below, above = self._parts(x)
        mid = 0.5 * np.exp(0.5 * (xc - m))
        return np.where(below, 0.0, np.where(above, 1.0, mid))

    def sf_p(self, x):
        x, xc, m, below, above = self._parts(x)
        mid = 1.0 - 0.5 * np.exp(0.5 * (xc - m))
        return np.where(below, 1.0, np.where(above, 0.0, mid))

    def cdf_q(self, x):
        x, xc, m, below, above = self._parts(x)
        mid = 1.0 - 0.5 * np.exp(-0.5 * (xc + m))
        return np.where(below, 0.0, np.where(above, 1.0, mid))

    def sf_q(self, x):
        x, xc, m, below, above = self._parts(x)
        mid = 0.5 * np.exp(-0.5 * (xc + m))
        return np.where(below, 1.0, np.where(above, 0.0, mid))

    def hockey_stick(self, epsilon):
        """Exact curve in closed form (more accurate than the generic difference)."""
        eps = np.asarray(epsilon, dtype=float)
        out = np.where(eps >= 0, laplace_delta(self.b, np.maximum(eps, 0.0)), 0.0)
        # negative eps (used by trade-off duality): the generic formula is exact there
        neg = eps < 0
        if neg.any():
            out = np.where(neg, super().hockey_stick(np.minimum(eps, 0.0)), out)
        return out


def _expm1_minus_x(x: np.ndarray) -> np.ndarray:
    """``e^x - 1 - x`` (>= 0) without cancellation: its Taylor series for ``|x| <= 1/2``."""
    x = np.asarray(x, dtype=float)
    small = np.abs(x) <= 0.5
    xs = np.where(small, x, 0.0)
    # sum_{n >= 2} x^n / n!, 22 terms: truncation below 0.5^24 / 24! ~ 1e-31 relative
    term = 0.5 * xs * xs
    total = term.copy()
    for n in range(3, 25):
        term = term * xs / n
        total = total + term
    with np.errstate(over="ignore"):
        direct = np.expm1(np.where(small, 0.0, x)) - x
    return np.where(small, total, direct)


def laplace_rdp(m: float, alpha: np.ndarray) -> np.ndarray:
    """Renyi divergence of ``Lap(m, 1)`` from ``Lap(0, 1)`` at real orders (scale 1/m).

    Mironov 2017, Proposition 6, rounded up (an upper bound at the float ``m``): with
    ``a = alpha - 1``,
    ``a D = log((alpha/(2 alpha - 1)) e^{a m} + (a/(2 alpha - 1)) e^{-alpha m})``.

    * For ``a m <= 1`` the argument is written as ``1 + E / (2a + 1)`` with
      ``E = alpha phi(a m) + a phi(-alpha m)``, ``phi(x) = e^x - 1 - x >= 0`` (an exact
      rewrite: the first-order terms ``alpha a m - a alpha m`` cancel identically), so
      ``D = log1p(E / (2a + 1)) / a`` has only positive terms -- no cancellation near
      ``alpha = 1`` for any scale (the plain form lost every digit at ``b = 1e8``).
    * For ``a m > 1``, ``e^{a m}`` is factored out:
      ``D = m + [log(alpha/(2 alpha-1)) + log1p((a/alpha) e^{-(2 alpha-1) m})] / a``,
      all exponents non-positive (no overflow up to ``alpha = inf``, ``D_inf = m``).

    Examples
    --------
    >>> round(float(laplace_rdp(1.0, np.array([2.0]))[0]), 6)   # log((2e + e^-2) / 3)
    0.619124
    >>> bool(laplace_rdp(1e-8, np.array([1.5]))[0] > 0)
    True
    """
    a = np.asarray(alpha, dtype=float) - 1.0
    finite = np.isfinite(a)
    af = np.where(finite, a, 1.0)
    near = af * m <= 1.0
    an = np.where(near, af, 1.0)
    with np.errstate(under="ignore"):
        e = (an + 1.0) * _expm1_minus_x(an * m) + an * _expm1_minus_x(-(an + 1.0) * m)
        low = np.log1p(e / (2.0 * an + 1.0)) / an
        inner = np.log1p(-af / (1.0 + 2.0 * af)) + np.log1p(
            af / (1.0 + af) * np.exp(-(1.0 + 2.0 * af) * m)
        )
    high = m + inner / af
    val = np.where(finite, np.where(near, low, high), m)
    # rounded up: 64 units of round-off and one ulp, about ten times the largest error
    # measured against 60-digit values (review 36: 3.4 ulps; a measured margin, not a
    # proof); D never exceeds m (its limit at alpha = inf)
    return np.clip(np.nextafter(val * (1.0 + 2.0**-47), np.inf), 0.0, m)


@register_mechanism("laplace")
@dataclass(frozen=True, repr=False)
class LaplaceMechanism(Mechanism):
    """Add ``Lap(0, b * sensitivity)`` noise: ``b`` is the scale per unit of L1 sensitivity.

    Pure ``1/b``-DP.  Known in closed form (``m = 1/b``):

    * exact privacy curve ``delta(eps) = max(0, 1 - exp((eps - m)/2))`` (module
      docstring; both directions coincide);
    * RDP (Mironov 2017, Proposition 6 / Table II):
      ``D_alpha = log(alpha/(2 alpha - 1) e^{(alpha-1) m}
      + (alpha-1)/(2 alpha - 1) e^{-alpha m}) / (alpha - 1)``;
    * the privacy loss law :class:`LaplaceLossLaw` (atoms at ``+-m`` and a continuous
      part), for PLD composition;
    * the exact trade-off curve (Neyman-Pearson threshold tests; Dong, Roth, Su 2019,
      Appendix, Laplace mechanism).

    Parameters
    ----------
    b : float
        Noise scale per unit of L1 sensitivity, > 0 (finite).

    Raises
    ------
    ValueError
        ``b`` not in ``(0, inf)`` (including NaN).
    TypeError
        ``b`` not a real number (strings, booleans).

    Examples
    --------
    >>> m = LaplaceMechanism(b=1.0)
    >>> round(m.delta(0.5), 6)        # 1 - exp(-1/4)
    0.221199
    >>> round(m.epsilon(1e-3), 6)
    0.997999
    >>> round(float(m.rdp(2.0)), 6)
    0.619124
    >>> float(m.rdp(np.inf))
    1.0
    >>> m
    LaplaceMechanism(b=1.0)
    """

    b: float

    #: the curve is a function of ``b`` alone (read by ``replace_one``; not inherited
    #: by subclasses)
    noise_parameter = _DeclaredHere("b")

    declares = Capabilities(exact_curve=True, rdp=True, loss_laws=True, exact_tradeoff=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "b", check_positive("b", self.b))

    @property
    def epsilon0(self) -> float:
        """The pure-DP parameter ``1/b``."""
        return 1.0 / self.b

    def _pure_epsilon(self) -> float:
        return laplace_epsilon0_up(self.b)

    def _delta_exact(self, epsilon: np.ndarray) -> np.ndarray:
        return laplace_delta_up(self.b, epsilon)

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        # D grows with m = 1/b: read it at 1/b rounded up
        return laplace_rdp(float(np.nextafter(1.0 / self.b, np.inf)), alpha)

    def _epsilon_upper(self, delta: float, tol: float | None) -> float:
        # the exact curve inverted in closed form (the router would bisect it)
        return laplace_epsilon_bracket(self.b, delta)[1]

    def _epsilon_bounds(self, delta: float, tol: float | None) -> tuple[float, float]:
        return laplace_epsilon_bracket(self.b, delta)

    def _loss_laws(self):
        cache = self._cache()
        if "law" not in cache:
            cache["law"] = LaplaceLossLaw(b=self.b)
        law = cache["law"]
        return law, law

    def release(self, value, *, sensitivity: float = 1.0, rng: np.random.Generator):
        """Add ``Lap(0, b * sensitivity)`` noise to ``value`` (L1 sensitivity ``sensitivity``).

        The Laplace mechanism of Dwork, McSherry, Nissim, Smith 2006 (Dwork & Roth 2014,
        Definition 3.3): independent noise of density ``exp(-|z|/s) / (2 s)``,
        ``s = b * sensitivity``, on every coordinate.  Rescaled by the sensitivity, a
        neighbouring pair is ``(Lap(1, b), Lap(0, b))``, the pair whose curves this object
        states (module docstring).  For a vector query ``sensitivity`` is the L1 norm of
        the largest change.

        Parameters
        ----------
        value : float or array_like
            The query answer(s), finite.
        sensitivity : float
            L1 sensitivity of the query, > 0 and finite (default 1).
        rng : numpy.random.Generator
            The only source of randomness.

        Returns
        -------
        float or numpy.ndarray
            ``value`` plus the noise, same shape (a float for a scalar ``value``).

        Raises
        ------
        ValueError
            ``sensitivity`` not in ``(0, inf)``; ``value`` with NaN or inf.
        TypeError
            ``rng`` not a ``numpy.random.Generator``; ``value`` not numeric.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> noisy = LaplaceMechanism(b=2.0).release(np.zeros(100_000), sensitivity=0.5, rng=rng)
        >>> bool(abs(np.abs(noisy).mean() - 1.0) < 0.01)      # E|Lap(0, s)| = s
        True
        """
        sens, rng = check_release_args(sensitivity, rng)
        x, scalar = check_real_values("value", value)
        noisy = x + rng.laplace(0.0, self.b * sens, size=x.shape)
        return float(noisy) if scalar else noisy

    def _tradeoff_exact(self, fpr: np.ndarray) -> np.ndarray:
        # Test Q = Lap(0,b) against P = Lap(1,b), rejecting Q when x > t.  With m = 1/b:
        #   t >= 1:     a = e^{-t m}/2 <= e^{-m}/2,        beta = 1 - e^m a
        #   0 <= t <= 1: e^{-m}/2 <= a <= 1/2,             beta = e^{-m} / (4 a)
        #   t <= 0:     a >= 1/2,                          beta = e^{-m} (1 - a)
        # Rounded down (Mechanism.tradeoff's promise), at m one ulp above 1 / b (a
        # larger m, a lower curve).  The outer pieces are the curve's tangents at
        # a = e^{-m} / 2 and a = 1/2 (the convex curve is above them everywhere), so
        # the curve is the largest of the two lines and of the middle piece on its
        # domain, taken from an end a0_up >= e^{-m} / 2 (between, the lines decide)
        m_hi = quotient_up(1.0, self.b)
        m_lo = quotient_down(1.0, self.b)
        a = np.asarray(fpr, dtype=float)
        # (exp within 2u, or one subnormal ulp where e^-m is subnormal)
        a0_up = 0.5 * (math.exp(-m_lo) * (1.0 + 2.0**-49) + 1e-323)
        # the middle piece in log space, exp(-m - log 4a) (e^-m may be subnormal; 4a is
        # exact): the argument within 8u |log 4a| + u |arg| (numpy's log: 4 ulps)
        log_4a = np.log(4.0 * np.maximum(a, SUBNORMAL_FLOOR))
        arg = -m_hi - log_4a
        middle = exp_down(arg, 8.0 * _U * np.abs(log_4a) + _U * np.abs(arg))
        middle = np.where((a >= a0_up) & (a <= 0.5), middle, 0.0)
        out = np.maximum.reduce([line_down(1.0, m_hi, a), middle, scaled_down(m_hi, a)])
        return np.where(a == 0.0, 1.0, np.clip(out, 0.0, 1.0))


@register_mechanism("replace_one_laplace")
@dataclass(frozen=True, repr=False)
class ReplaceOneLaplaceMechanism(LaplaceMechanism):
    """The Laplace mechanism accounted under the replace-one relation.

    ``b`` is the scale per unit of *replace-one* L1 sensitivity; the curves are those of
    :class:`LaplaceMechanism`.  Scale ``b`` per unit of add/remove sensitivity is
    ``ReplaceOneLaplaceMechanism(b=b / 2)`` (replacing a record moves the query by at
    most twice its add/remove sensitivity): see :func:`~dpacct.mechanisms.replace_one`.

    Parameters
    ----------
    b : float
        Noise scale per unit of replace-one L1 sensitivity, > 0; pure epsilon ``1 / b``.

    Examples
    --------
    >>> ReplaceOneLaplaceMechanism(b=2.0).pure_epsilon
    0.5
    >>> ReplaceOneLaplaceMechanism(b=2.0).neighbouring
    'replace-one'
    """

    neighbouring = REPLACE_ONE
