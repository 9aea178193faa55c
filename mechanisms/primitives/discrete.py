"""Discrete Laplace and discrete Gaussian noise on the integers (integer-valued queries).

Both mechanisms add integer noise to an integer-valued query of sensitivity 1, so a
neighbouring pair is ``P = noise + 1`` (the output *with* the extra record) and
``Q = noise``.  Both noise laws are symmetric, so ``x -> 1 - x`` swaps ``P`` and ``Q``:
the add and the remove direction have the same privacy loss law.

Discrete Laplace (the two-sided geometric law of the geometric mechanism, Ghosh,
Roughgarden, Sundararajan 2009; "discrete Laplace" in Canonne, Kamath, Steinke 2020):
``P(X = x) = tanh(1/(2t)) e^{-|x|/t}`` for integers ``x``, ``t = scale``.  Its privacy
loss ``L(x) = (|x| - |x - 1|)/t`` takes only the two values ``+-1/t`` (``x >= 1`` resp.
``x <= 0``), with ``P(L = 1/t) = P(noise >= 0) = 1/(1 + e^{-1/t})``.  So the pair *is*
binary randomized response with ``p = e^{1/t} / (1 + e^{1/t})``: the discrete Laplace
mechanism has exactly the privacy of ``PureDPMechanism(1/scale)`` -- every curve is the
extremal pure-DP curve.

Discrete Gaussian (Canonne, Kamath, Steinke 2020, "The Discrete Gaussian for
Differential Privacy", Definition 1): ``P(X = x) = exp(-x^2/(2 sigma^2)) / Z`` with
``Z = sum_x exp(-x^2/(2 sigma^2))``.  The privacy loss ``L(x) = (2x - 1)/(2 sigma^2)``
is unbounded; its values are the odd multiples of ``1/(2 sigma^2)``, so the PLD lattice
is ``1/(2 sigma^2)`` (consecutive values are ``1/sigma^2`` apart but offset from 0 by
half a step, and the engine's lattice must contain 0).
"""

from __future__ import annotations

import dataclasses
import decimal
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy import special

from dpacct.accountant.laws.loss_law import AtomicLossLaw
from dpacct.accountant.mechanism import Capabilities, Mechanism, PLDSettings, discretize_law
from dpacct.accountant.numerics import invert_decreasing
from dpacct.accountant.pld.grid import GridPLD
from dpacct.accountant.serialization import register_mechanism
from dpacct.accountant.validation import (
    check_positive,
    check_real_values,
    check_rng,
    is_real_type,
    show_value,
)

from ._discrete_gaussian_down import (
    _SUM_ROUNDOFF,
    discrete_gaussian_delta_down,
    discrete_gaussian_terms,
    log_z_down,
)
from ._discrete_laplace_law import MAX_SENSITIVITY, discrete_laplace_law
from ._discrete_sampling import (
    _ARRAY_MIN,
    _ARRAY_T,
    _bernoulli_exp,  # noqa: F401  (tests draw its coins)
    _discrete_gaussian_one,
    _discrete_laplace_array,
    _discrete_laplace_one,
)
from ._release import check_integer_values, is_integral
from .randomized_response import PureDPCurves

__all__ = [
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "discrete_gaussian_delta",
    "discrete_gaussian_delta_bounds",
    "discrete_gaussian_rdp",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
]


def _check_size(size: object) -> tuple[int, ...]:
    shape = (size,) if isinstance(size, int | np.integer) else tuple(size)  # type: ignore[arg-type]
    if any(int(n) < 0 for n in shape):
        raise ValueError(f"size must not contain negative entries, got {show_value(size)}")
    return tuple(int(n) for n in shape)


def _exact_positive(name: str, value: object) -> Fraction:
    """``value`` as the exact rational it is, checked to be a finite positive number.

    A real number (``int``, ``float``, ``Fraction``, numpy's scalars, ``Decimal``) is
    taken exactly; anything else is a ``TypeError`` and NaN, an infinity or a value
    ``<= 0`` a ``ValueError`` naming ``name`` (``Fraction`` alone would take the string
    ``"2"``, and raise for NaN or an infinity without naming the parameter).
    """
    if not (is_real_type(type(value)) or isinstance(value, decimal.Decimal)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if isinstance(value, np.floating) and np.finfo(value.dtype).bits <= 64:
        value = float(value)  # exact: float16 / float32 / float64 into a double
    try:
        frac = Fraction(value)
    except (ValueError, OverflowError):  # NaN, an infinity
        raise ValueError(f"{name} must lie in (0, inf), got {show_value(value)}") from None
    if frac <= 0:
        raise ValueError(f"{name} must lie in (0, inf), got {show_value(value)}")
    return frac


def sample_discrete_laplace(scale: float | Fraction, size, rng: np.random.Generator) -> np.ndarray:
    """Exact samples of ``P(X = x) ∝ exp(-|x| / scale)`` on the integers (CKS 2020, Alg. 2).

    ``scale`` is taken as the exact rational it is (a float is the binary fraction it
    stores); every coin has a rational probability drawn from exact uniform integers,
    so the samples have exactly this law.  Expected cost O(1) coins per sample,
    independent of ``scale``.  From 128 draws on they run on numpy arrays (a batch of
    Algorithm 2's trials at a time) when the scale's numerator ``t`` is below 2^63 --
    every float scale below 2^63 -- and otherwise one Python call chain per draw.

    Examples
    --------
    >>> x = sample_discrete_laplace(2.0, 20_000, np.random.default_rng(0))
    >>> p0 = math.tanh(1 / 4)                       # P(X = 0) = tanh(1/(2 scale))
    >>> bool(abs((x == 0).mean() - p0) < 0.01)
    True
    """
    rng = check_rng(rng)
    frac = _exact_positive("scale", scale)
    shape = _check_size(size)
    n = math.prod(shape)
    t, s = frac.numerator, frac.denominator
    if t <= _ARRAY_T and n >= _ARRAY_MIN:
        return _discrete_laplace_array(rng, t, s, n).reshape(shape)
    return np.array([_discrete_laplace_one(rng, t, s) for _ in range(n)], dtype=np.int64).reshape(
        shape
    )


def sample_discrete_gaussian(sigma: float | Fraction, size, rng: np.random.Generator) -> np.ndarray:
    """Exact samples of the discrete Gaussian ``N_Z(0, sigma^2)`` (CKS 2020, Algorithm 3).

    ``P(X = x) = exp(-x^2 / (2 sigma^2)) / Z`` on the integers; ``sigma`` is taken as the
    exact rational it is, so ``sigma^2`` is rational and every coin is exact.  Expected
    O(1) proposals per sample (CKS 2020, Section 5); pure Python.

    Examples
    --------
    >>> x = sample_discrete_gaussian(3.0, 20_000, np.random.default_rng(0))
    >>> bool(abs(x.mean()) < 0.1 and abs(x.std() - 3.0) < 0.1)
    True
    """
    rng = check_rng(rng)
    frac = _exact_positive("sigma", sigma)
    var = frac * frac
    shape = _check_size(size)
    n = math.prod(shape)
    a, b = var.numerator, var.denominator
    return np.array([_discrete_gaussian_one(rng, a, b) for _ in range(n)], dtype=np.int64).reshape(
        shape
    )


def _integer_release(value: object, noise) -> object:
    x, scalar = check_integer_values("value", value)
    out = x + noise(x.shape)
    return int(out) if scalar else out


def _check_integer_sensitivity(sensitivity: object) -> int:
    if not is_integral(sensitivity) or float(sensitivity) < 1:  # type: ignore[arg-type]
        raise ValueError(
            "sensitivity must be a positive integer (integer-valued query), got "
            f"{show_value(sensitivity)}"
        )
    return int(sensitivity)  # type: ignore[call-overload]


# ----------------------------------------------------------------------- discrete Laplace
@register_mechanism("discrete_laplace")
@dataclass(frozen=True, repr=False)
class DiscreteLaplaceMechanism(PureDPCurves, Mechanism):
    """Add discrete Laplace noise ``P(X = x) ∝ exp(-|x|/scale)`` to an integer query.

    The privacy loss takes only the values ``+-1/scale`` (module docstring), so the
    mechanism has *exactly* the privacy of binary randomized response with
    ``epsilon0 = 1/scale`` (equivalently of :class:`dpacct.mechanisms.PureDPMechanism` with
    ``epsilon = 1/scale``):

    * ``delta(eps) = (1 - e^{eps - 1/scale}) / (1 + e^{-1/scale})`` for ``eps < 1/scale``;
    * RDP: the pure-DP curve of Bun & Steinke 2016, Proposition 3.3, attained here;
    * a two-atom privacy loss on the lattice ``1/scale`` (exact PLD composition);
    * trade-off ``max(0, 1 - e^{1/scale} a, e^{-1/scale} (1 - a))``.

    Parameters
    ----------
    scale : float
        Noise scale ``t`` per unit of (integer) sensitivity, > 0.

    Examples
    --------
    >>> m = DiscreteLaplaceMechanism(scale=1.0)
    >>> round(m.delta(0.0), 6)          # tanh(1/2)
    0.462117
    >>> round(m.epsilon(1e-9), 6)
    1.0
    >>> from dpacct.mechanisms import PureDPMechanism
    >>> bool(np.isclose(m.delta(0.3), PureDPMechanism(1.0).delta(0.3), rtol=1e-14))
    True
    """

    scale: float

    declares = Capabilities(exact_curve=True, rdp=True, loss_laws=True, exact_tradeoff=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_positive("scale", self.scale))

    @property
    def epsilon0(self) -> float:
        """Pure-DP parameter ``1/scale`` (the largest privacy loss)."""
        return 1.0 / self.scale

    def _epsilon0_exact(self):
        import mpmath

        with mpmath.workdps(50):
            return 1 / mpmath.mpf(self.scale)

    @staticmethod
    def of_sensitivity(scale: float, sensitivity: int) -> Mechanism:
        """The same noise on a query of integer sensitivity ``k``: pair ``(X + k, X)``.

        Not a rescaled unit shift (the lattice does not rescale): the privacy loss has
        ``k + 1`` atoms ``-k/t, (2 - k)/t, ..., k/t`` (module
        ``mechanisms/primitives/_discrete_laplace_law.py``), enumerated exactly.  ``k = 1`` is this
        class; ``dp_accounting``'s ``DiscreteLaplaceDpEvent(a, k)`` is ``scale = 1/a``.

        Parameters
        ----------
        scale : float
            Noise scale ``t``, > 0 (pmf proportional to ``exp(-|x|/t)``).
        sensitivity : int
            Integer sensitivity ``k``, in [1, 10**6].

        Examples
        --------
        >>> m = DiscreteLaplaceMechanism.of_sensitivity(2.0, 3)
        >>> round(float(m.delta(0.3)), 6)     # brute-force sum: 0.461906
        0.461906
        """
        k = _check_integer_sensitivity(sensitivity)
        if k > MAX_SENSITIVITY:
            raise ValueError(f"sensitivity must be in [1, {MAX_SENSITIVITY}], got {k}")
        if k == 1:
            return DiscreteLaplaceMechanism(scale=scale)
        t = check_positive("scale", scale)
        return Mechanism.from_loss_laws(
            discrete_laplace_law(t, k), name=f"discrete Laplace scale={t!r} sensitivity={k}"
        )

    def release(self, value, *, sensitivity: int = 1, rng: np.random.Generator):
        """Add exact discrete Laplace noise of scale ``scale * sensitivity`` to integers.

        The noise is drawn by :func:`sample_discrete_laplace` (Canonne, Kamath, Steinke
        2020, Algorithm 2, exact).  With ``sensitivity = 1`` the neighbouring pair is
        exactly the one whose curves this object states.  For an integer sensitivity
        ``Delta > 1`` the loss ``(|x| - |x - Delta|) / (scale Delta)`` still lies in
        ``[-1/scale, 1/scale]``, so the release is pure ``1/scale``-DP, and every pure
        ``1/scale``-DP pair is dominated by binary randomized response (Kairouz, Oh,
        Viswanath 2015), whose curves are the ones stated: the claim stays sound.

        Parameters
        ----------
        value : int or array_like of int
            Integer query answer(s).
        sensitivity : int
            The query's sensitivity, a positive integer (default 1).
        rng : numpy.random.Generator
            The only source of randomness.

        Returns
        -------
        int or numpy.ndarray of int64
            ``value`` plus the noise, same shape.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> noisy = DiscreteLaplaceMechanism(scale=1.0).release([10, 20], rng=rng)
        >>> noisy.dtype, noisy.shape
        (dtype('int64'), (2,))
        """
        rng = check_rng(rng)
        delta = _check_integer_sensitivity(sensitivity)
        scale = Fraction(self.scale) * delta
        return _integer_release(value, lambda shape: sample_discrete_laplace(scale, shape, rng))


# ----------------------------------------------------------------------- discrete Gaussian
#: half-width, in standard deviations, of the integer window kept by the loss law: beyond
#: it every P(x) underflows in double precision, and the (accounted) bound on the
#: truncated mass is below 1e-300
_LAW_WIDTH = 37.5
#: the same for sigma > _LATTICE_MAX_SIGMA, to bound memory: truncated mass below 1e-30
_LAW_WIDTH_LARGE = 12.0
#: half-width, in standard deviations, of the summation window of the exact curve; the
#: proven tail bound beyond it is below 1e-300 (and is added anyway)
_SUM_WIDTH = 38.0
#: the loss law is given a lattice (exact PLD grid) only up to this sigma; beyond, the
#: lattice 1/(2 sigma^2) would be far finer than any useful grid
_LATTICE_MAX_SIGMA = 1e4
#: the exact curve is summed term by term (O(sigma) work and memory per epsilon) up to
#: this sigma; beyond it the continuous-comparison bracket
#: (:func:`discrete_gaussian_delta_bounds`) is used: its relative width in delta is
#: about ``t^4 / sigma^2`` at ``eps = t / sigma`` (measured: 3.6e-7 relative in
#: epsilon at ``sigma = 2001``, 1e-8 at ``sigma = 1e4``, ``delta = 1e-5``)
_EXACT_MAX_SIGMA = 2000.0
#: the privacy loss law enumerates 24 sigma integers; beyond this sigma (2.4 million
#: atoms) the mechanism offers no PLD and compositions use its RDP curve instead
_PLD_MAX_SIGMA = 1e5
#: round-off allowance per unit of log-magnitude (4 ulps of 1.0)
_ULP4 = 2.0**-50


def _log_theta(c: np.ndarray, sigma: float) -> np.ndarray:
    """``log sum_{x in Z} exp(-(x - c)^2 / (2 sigma^2))`` for real shifts ``c``.

    For ``sigma >= 2`` by Poisson summation (an exact identity):
    ``sqrt(2 pi) sigma (1 + 2 sum_{j>=1} e^{-2 pi^2 sigma^2 j^2} cos(2 pi j c))``, with
    the series cut after ``j = 3`` (the next term is below ``e^{-315}``); otherwise by
    direct summation over ``|x - c| <= 40 sigma + 2`` (the rest is below ``e^{-800}``).
    """
    c = np.asarray(c, dtype=float)
    s2 = sigma * sigma
    if sigma >= 2.0:
        series = np.zeros(c.shape)
        for j in (1, 2, 3):
            series = series + math.exp(-2.0 * math.pi**2 * s2 * j * j) * np.cos(
                2.0 * math.pi * j * c
            )
        return math.log(math.sqrt(2.0 * math.pi) * sigma) + np.log1p(2.0 * series)
    half = math.ceil(40.0 * sigma) + 2
    flat = c.reshape(-1)
    out = np.empty(flat.shape)
    for i, ci in enumerate(flat):
        x = np.arange(math.floor(ci) - half, math.floor(ci) + half + 2, dtype=float)
        out[i] = special.logsumexp(-((x - ci) ** 2) / (2.0 * s2))
    return out.reshape(c.shape)


def _log_theta_ratio(c: np.ndarray, sigma: float) -> np.ndarray:
    """``log(theta(c) / theta(0))``, computed without cancellation for large sigma."""
    c = np.asarray(c, dtype=float)
    if sigma >= 2.0:
        s2 = sigma * sigma
        num = np.zeros(c.shape)
        den = 0.0
        for j in (1, 2, 3):
            w = math.exp(-2.0 * math.pi**2 * s2 * j * j)
            num = num + w * np.cos(2.0 * math.pi * j * c)
            den += w
        return np.log1p(2.0 * num) - math.log1p(2.0 * den)
    return _log_theta(c, sigma) - float(_log_theta(np.zeros(1), sigma)[0])


def _log_normaliser(sigma: float) -> float:
    """``log Z`` of the discrete Gaussian, ``Z = theta(0)``."""
    return float(_log_theta(np.zeros(1), sigma)[0])


def _log_tail_bound(d: float, sigma: float, log_z: float) -> float:
    """Log of a proven upper bound on ``sum_{y >= d} exp(-y^2/(2 sigma^2)) / Z`` (d >= 0).

    The summand is decreasing on ``[d, inf)``, so the sum is at most its first term plus
    the integral: ``e^{-d^2/(2 sigma^2)} + sigma sqrt(2 pi) Phi(-d/sigma)``.
    """
    first = -(d * d) / (2.0 * sigma * sigma)
    integral = math.log(sigma * math.sqrt(2.0 * math.pi)) + float(special.log_ndtr(-d / sigma))
    return float(np.logaddexp(first, integral)) - log_z


def _variation_to_inf(f, a: np.ndarray, breaks: tuple[float, ...]) -> np.ndarray:
    """Total variation on ``[a, inf)`` of a function tending to 0 at ``+inf``, monotone
    between the sorted ``breaks``: the sum of its jumps between consecutive breaks."""
    prev = f(a)
    tv = np.zeros(a.shape)
    for b in breaks:
        inside = b > a
        fb = f(np.full(a.shape, b))
        tv = tv + np.where(inside, np.abs(fb - prev), 0.0)
        prev = np.where(inside, fb, prev)
    return tv + np.abs(prev)


#: the largest scale the bounds below evaluate (``sigma^3`` and ``(sigma^2 eps)^2`` stay
#: finite); a discrete Gaussian above it is refused naming ``sigma``
DISCRETE_GAUSSIAN_MAX_SIGMA = 1e50


def _check_dg_sigma(sigma: object) -> float:
    """``sigma`` in ``(0, DISCRETE_GAUSSIAN_MAX_SIGMA]``, or a ValueError naming it."""
    x = check_positive("sigma", sigma)
    if x > DISCRETE_GAUSSIAN_MAX_SIGMA:
        raise ValueError(f"sigma must lie in (0, 1e50] for a discrete Gaussian, got {x!r}")
    return x


def discrete_gaussian_delta_bounds(
    sigma: float, epsilon: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Proven ``(lower, upper)`` bounds on ``delta(eps)`` of the discrete Gaussian, O(1) cost.

    By Canonne, Kamath, Steinke 2020, Theorem 7, ``delta(eps) = sum_{k >= k0} h(k)``
    with ``h(x) = (g(x - 1) - e^eps g(x)) / Z``, ``g(x) = e^{-x^2/(2 sigma^2)}``,
    ``Z = sum_k g(k)`` and ``k0`` the first integer above ``x* = sigma^2 eps + 1/2``
    (where the loss ``(2x - 1)/(2 sigma^2)`` equals eps).  The sum is compared with an
    integral of the same smooth function (no support is enumerated):

    * midpoint rule (Peano kernel at most 1/8): ``|sum_{k >= k0} h(k) - int_a^inf h|
      <= (1/8) int_a^inf |h2|`` with ``a = k0 - 1/2`` and ``h2`` the second derivative;
    * ``int_a^inf h = (sigma sqrt(2 pi) / Z) (Phi((1 - a)/sigma) - e^eps Phi(-a/sigma))``,
      continuous Gaussian tails (as in Balle & Wang 2018, Theorem 8), evaluated in log
      space with a round-off allowance;
    * ``Z h2(x) = g2(x - 1) - g2(x) + (1 - e^eps) g2(x)`` (``g1, g2, g3`` the derivatives
      of ``g``) and ``g2(x - 1) - g2(x) = -int_{x-1}^x g3``, so ``Z int_a^inf |h2| <=
      TV(g2 on [a - 1, inf)) + (e^eps - 1) TV(g1 on [a, inf))``: total variations of
      explicit functions with known monotone pieces (``g3`` vanishes at ``0`` and
      ``+-sqrt(3) sigma``, ``g2`` at ``+-sigma``);
    * ``Z = sigma sqrt(2 pi) (1 + 2 sum_{j>=1} e^{-2 pi^2 sigma^2 j^2})`` (Poisson
      summation, see :func:`_log_theta`), so ``sigma sqrt(2 pi) / Z`` lies in
      ``[1/(1 + 3 e^{-2 pi^2 sigma^2}), 1]`` (for ``sigma >= 1``).

    The slack is of order ``delta * t^4 / sigma^2`` at ``eps = t / sigma``: a discrete
    Gaussian with a large ``sigma`` is as private as the continuous one up to that (CKS
    2020 observe the closeness numerically; this makes it a proven bracket).  A second,
    cruder bracket is used where tighter: ``h`` is log-concave on ``(x*, inf)``, hence
    unimodal, so sum and integral over ``(x*, inf)`` differ by at most ``max h <=
    max_x P(x) (L(x) - eps)`` (closed form).  Meant for ``sigma >= 1``.  For very large
    ``sigma`` the two continuous tails nearly cancel and the floating-point allowance
    dominates the width (3e-5 relative at ``sigma = 1e8``, tens of percent at
    ``sigma = 1e12``): still a proven bracket, only a wider one.

    Parameters
    ----------
    sigma : float
        The discrete Gaussian's scale parameter, in [1, 1e50] (see above).
    epsilon : numpy.ndarray
        Epsilons, >= 0.

    Examples
    --------
    >>> lo, hi = discrete_gaussian_delta_bounds(1e4, np.array([0.0, 4e-4]))
    >>> bool(np.all(0 < lo) and np.all(lo <= hi) and np.all(hi <= lo * (1 + 1e-5)))
    True
    """
    sigma = _check_dg_sigma(sigma)
    eps_given = check_real_values("epsilon", epsilon)[0]  # finite reals (no strings, no bools)
    # delta decreases in eps: past 40/sigma + 1 (< Phi(-40)) the bounds there and 0 hold
    eps = np.minimum(eps_given, 40.0 / sigma + 1.0)
    beyond = eps < eps_given
    s2 = sigma * sigma
    root2pi = math.sqrt(2.0 * math.pi)
    factor_lo = 1.0 / (1.0 + 3.0 * math.exp(-2.0 * math.pi**2 * min(sigma, 10.0) ** 2))
    x_star = s2 * eps + 0.5
    with np.errstate(over="ignore", invalid="ignore", under="ignore", divide="ignore"):
        # --- midpoint-rule bracket ----------------------------------------------------
        a = np.floor(x_star) + 0.5  # k0 - 1/2
        log_t1 = special.log_ndtr(-(a - 1.0) / sigma)
        log_t0 = special.log_ndtr(-a / sigma)
        z = eps + log_t0 - log_t1
        t1 = np.exp(log_t1)
        integral = t1 * -np.expm1(z)  # (Z / (sigma sqrt(2 pi))) * int_a^inf h
        round_off = t1 * _ULP4 * (16.0 + np.abs(eps) + np.abs(log_t1) + np.abs(log_t0))
        round_off = round_off * (1.0 + np.exp(np.maximum(z, 0.0)))

        def g1(x):
            return -(x / s2) * np.exp(-(x * x) / (2.0 * s2))

        def g2(x):
            return (x * x / (s2 * s2) - 1.0 / s2) * np.exp(-(x * x) / (2.0 * s2))

        r3 = math.sqrt(3.0) * sigma
        tv2 = _variation_to_inf(g2, a - 1.0, (-r3, 0.0, r3))
        tv1 = _variation_to_inf(g1, a, (-sigma, sigma))
        # k0 from a rounded x*: a term next to x* may be misplaced; |h| there is at most
        # (|x*| ulps) * max|h'| <= |x*| 2^-50 * 2 e^eps max|g1| / Z
        misplaced = (np.abs(x_star) * _ULP4) * 2.0 * np.exp(eps) / (sigma * math.sqrt(math.e))
        slack = (0.125 * (tv2 + np.expm1(eps) * tv1) + misplaced) / (sigma * root2pi)
        slack = slack * (1.0 + 1e-12) + round_off
        up_mid = np.where(integral >= 0, integral, integral * factor_lo) + slack
        lo_mid = np.where(integral >= 0, integral * factor_lo, integral) - slack
        # --- unimodal bracket over (x*, inf) --------------------------------------------
        mu = 1.0 / sigma
        la = special.log_ndtr(mu / 2.0 - eps / mu)
        lb = special.log_ndtr(-mu / 2.0 - eps / mu)
        pa = np.exp(la)
        d_g = pa * -np.expm1(np.minimum(eps + lb - la, 0.0))
        err_g = pa * _ULP4 * (16.0 + np.abs(eps) + np.abs(la) + np.abs(lb)) + _ULP4 * d_g
        c = x_star - 1.0
        y = 0.5 * (c + np.sqrt(c * c + 4.0 * s2))
        m_bound = (y - c) * np.exp(-(y * y) / (2.0 * s2)) / (sigma**3 * root2pi)
        up_uni = d_g + err_g + m_bound * (1.0 + 1e-12)
        lo_uni = d_g * factor_lo - err_g - m_bound * (1.0 + 1e-12)
    upper = np.minimum(np.minimum(np.where(np.isnan(up_mid), 1.0, up_mid), up_uni), 1.0)
    lower = np.maximum(np.maximum(np.where(np.isnan(lo_mid), 0.0, lo_mid), lo_uni), 0.0)
    lower = np.where(beyond, 0.0, lower)
    return lower.reshape(eps.shape), upper.reshape(eps.shape)


def discrete_gaussian_delta(sigma: float, epsilon: np.ndarray) -> np.ndarray:
    """Sound, essentially exact ``delta(eps)`` of the discrete Gaussian mechanism.

    Canonne, Kamath, Steinke 2020, Theorem 7: with ``P = N_Z(1, sigma^2)``,
    ``Q = N_Z(0, sigma^2)`` and ``L(x) = (2x - 1)/(2 sigma^2)``,

        delta(eps) = sum_{x : L(x) > eps} P(x) (1 - e^{eps - L(x)}),

    summed here term by term (non-negative terms, no cancellation) over the integers
    ``x0 <= x <= x0 + 38 sigma + 2`` where ``x0 = floor(sigma^2 eps + 1/2) + 1`` is the
    first integer with ``L(x) > eps``.  The remaining terms are each at most ``P(x)``,
    and ``sum_{x > x_max} P(x)`` is bounded by the first excluded term plus the Gaussian
    integral (:func:`_log_tail_bound`); that bound is *added*, so the result is an
    upper bound on the true delta (the bound is below 1e-300, so it is also exact to
    floating-point precision).  Cost: ``O(sigma)`` per epsilon, so for
    ``sigma > 2000`` the upper end of :func:`discrete_gaussian_delta_bounds` is returned
    instead (O(1); relative excess about ``t^4 / sigma^2`` at ``eps = t / sigma``).

    Examples
    --------
    >>> round(float(discrete_gaussian_delta(1.0, np.array([1.0]))[0]), 6)
    0.141351
    """
    sigma = float(sigma)
    if sigma > _EXACT_MAX_SIGMA:
        return discrete_gaussian_delta_bounds(sigma, epsilon)[1]
    eps = np.asarray(epsilon, dtype=float)
    flat = eps.reshape(-1)
    log_z = log_z_down(sigma)  # rounded down, as the upper terms require (50 digits, cached)
    width = math.ceil(_SUM_WIDTH * sigma) + 2
    out = np.empty(flat.shape)
    for i, e in enumerate(flat):
        # each term rounded up (unrounded, where L(x) is within ulps of eps the gap
        # cancelled: 1 of 200 random upper ends was below the 60-digit truth, session 35)
        x, terms = discrete_gaussian_terms(sigma, float(e), log_z, width, up=True)
        # (+ two subnormal ulps a term: a subnormal term's error is absolute)
        terms = terms * (1.0 + _SUM_ROUNDOFF) + 1e-323
        # the tail beyond x_max = x[-1]: y = x - 1 >= x[-1] (distance from P's centre)
        tail = math.exp(_log_tail_bound(float(x[-1]), sigma, log_z))
        out[i] = math.fsum(terms) + tail
    return np.minimum(out, 1.0).reshape(eps.shape)


def discrete_gaussian_rdp(sigma: float, alpha: np.ndarray) -> np.ndarray:
    """Exact Renyi divergence of the discrete Gaussian pair at real orders.

    Completing the square as in the proof of Canonne, Kamath, Steinke 2020,
    Proposition 5 (the discrete Gaussian is ``1/(2 sigma^2)``-zCDP):
    ``P(x)^alpha Q(x)^{1-alpha} = e^{alpha (alpha-1)/(2 sigma^2)} e^{-(x - alpha)^2/(2
    sigma^2)} / Z``, hence

        D_alpha = alpha / (2 sigma^2) + log(theta(alpha) / theta(0)) / (alpha - 1),

    with ``theta(c) = sum_x exp(-(x - c)^2/(2 sigma^2))``, 1-periodic and maximal at
    integers (Poisson summation), so ``D_alpha <= alpha/(2 sigma^2)`` with equality at
    integer orders.  The other direction gives ``theta(1 - alpha) = theta(alpha)``, the
    same value.  ``D_inf = inf`` (the loss is unbounded).

    Examples
    --------
    >>> float(discrete_gaussian_rdp(1.0, np.array([2.0]))[0])
    1.0
    >>> bool(discrete_gaussian_rdp(0.5, np.array([1.5]))[0] < 1.5 / (2 * 0.25))
    True
    """
    a = np.asarray(alpha, dtype=float)
    finite = np.isfinite(a)
    af = np.where(finite, a, 2.0)
    frac = af - np.floor(af)
    # rounded up (an RDP curve is an upper bound): the CKS bound alpha / (2 sigma^2) up by
    # 2^-50 (two roundings); the log-ratio (<= 0) raised by its absolute error, at most
    # _LOG_RATIO_ERR, before the division (whose rounding and alpha - 1's 2^-51 of the
    # quotient cover).  Near alpha = 1 that error over alpha - 1 is large and the CKS
    # bound decides (at alpha = 1 + 1e-15 the plain quotient read 0.4 against the true
    # 0.5 at sigma 1: the log-ratio's round-off over alpha - 1)
    bound = af / (2.0 * sigma * sigma) * (1.0 + 2.0**-50)
    with np.errstate(divide="ignore", invalid="ignore"):
        quot = (_log_theta_ratio(frac, sigma) + _LOG_RATIO_ERR) / (af - 1.0)
        val = (bound + (quot + 2.0**-51 * np.abs(quot))) * (1.0 + 2.0**-52)
    val = np.where(np.isnan(val), bound, np.minimum(val, bound))
    return np.where(finite, np.maximum(val, 0.0), np.inf)


#: a bound on the absolute round-off of :func:`_log_theta_ratio` (two log-sum-exps of at
#: most ~170 terms, or two log1p of tiny series: a few hundred u at most, 2e-14)
_LOG_RATIO_ERR = 1e-13


@register_mechanism("discrete_gaussian")
@dataclass(frozen=True, repr=False)
class DiscreteGaussianMechanism(Mechanism):
    """Add discrete Gaussian noise ``N_Z(0, sigma^2)`` to an integer query of sensitivity 1.

    Canonne, Kamath, Steinke 2020.  Known here:

    * the exact privacy curve (CKS 2020, Theorem 7), by summation with a proven tail
      bound added (:func:`discrete_gaussian_delta`), hence a sound upper bound that is
      exact to floating-point precision; for ``sigma > 2000`` (where the sum would cost
      O(sigma) per evaluation) a proven bracket from the continuous Gaussian
      (:func:`discrete_gaussian_delta_bounds`) instead -- ``epsilon`` inverts its upper
      end and ``epsilon_bounds`` both ends;
    * the exact RDP curve at real orders (:func:`discrete_gaussian_rdp`), never above
      the ``1/(2 sigma^2)``-zCDP bound ``alpha/(2 sigma^2)`` of CKS 2020, Proposition 5,
      and equal to it at integer orders;
    * the privacy loss as an :class:`~dpacct.accountant.laws.loss_law.AtomicLossLaw` on the integers
      within ``37.5 sigma`` of the centres (``12 sigma`` when ``sigma > 1e4``), on the
      lattice ``1/(2 sigma^2)`` (for ``sigma <= 1e4``); none above ``sigma = 1e5``
      (``has_pld`` is False, so compositions and subsampling use the RDP curve).

    Truncation of the infinite support (PLD route).  The law returned by
    :meth:`_loss_laws` -- used by the pessimistic PLD and by transformers such as
    composition and Poisson subsampling -- is a *dominating* pair: a proven upper bound
    on the P-mass of the discarded integers (below 1e-300, and 0.0 when it underflows,
    i.e. is below 1e-308; below 1e-30 when ``sigma > 1e4``) is put on ``L = +inf``
    (``inf_mass``) and the same bound on their Q-mass on ``L = -inf``
    (``q_neg_inf_mass``), which can only increase ``sup_S P(S) - e^eps Q(S)`` for every
    real eps.  The *optimistic* PLD of :meth:`pld` is built from a different law (see
    :meth:`_pld_pair`): the discarded P-mass is moved to ``L = -inf`` (dropped).  That
    lowers the loss pointwise, and ``delta(eps) = E_P[(1 - e^{eps - L})_+]`` is
    increasing in ``L`` and stays so under composition (losses add), so every delta
    computed from it is a lower bound.  (Transformers that discretise :meth:`_loss_laws`
    themselves for their optimistic side -- the engine's composition does -- see the
    dominating law instead; their lower bounds can then be high by at most the truncated
    mass per repetition, far below floating-point round-off.)

    Parameters
    ----------
    sigma : float
        Scale parameter of the discrete Gaussian per unit of sensitivity, > 0.

    Examples
    --------
    >>> m = DiscreteGaussianMechanism(sigma=1.0)
    >>> round(m.delta(1.0), 6)
    0.141351
    >>> float(m.rdp(2.0))
    1.0
    >>> lo, hi = m.epsilon_bounds(1e-5)
    >>> bool(0 < hi - lo < 1e-9)
    True
    """

    sigma: float

    declares = Capabilities(exact_curve=True, rdp=True, loss_laws=True, own_pld=True)

    def __post_init__(self) -> None:
        sigma = _check_dg_sigma(self.sigma)
        object.__setattr__(self, "sigma", sigma)

    def _delta_exact(self, epsilon: np.ndarray) -> np.ndarray:
        return discrete_gaussian_delta(self.sigma, epsilon)

    def _delta_exact_down(self, epsilon: np.ndarray) -> np.ndarray:
        # the certified lower curve (accountant/curve_down.py); above sigma = 2000 the
        # bracket inverts discrete_gaussian_delta_bounds' lower end instead
        return discrete_gaussian_delta_down(self.sigma, epsilon, _SUM_WIDTH)

    def release(self, value, *, sensitivity: int = 1, rng: np.random.Generator):
        """Add exact discrete Gaussian noise ``N_Z(0, sigma^2)`` to integer values.

        The noise is drawn by :func:`sample_discrete_gaussian` (Canonne, Kamath, Steinke
        2020, Algorithm 3, exact), so a neighbouring pair is ``(N_Z(1, sigma^2),
        N_Z(0, sigma^2))``, exactly the pair whose curves this object states.  Only
        ``sensitivity = 1`` is accepted: the curves here are those of a unit shift on
        the integer lattice, and unlike the continuous Gaussian the discrete one does not
        rescale (``N_Z(0, (sigma Delta)^2)`` against a shift by ``Delta`` is a different
        pair, CKS 2020, Theorem 7 with general ``Delta``), so a claim for ``Delta > 1``
        would not be the one this object states.

        Parameters
        ----------
        value : int or array_like of int
            Integer query answer(s) of sensitivity 1.
        sensitivity : int
            Must be 1 (the default).
        rng : numpy.random.Generator
            The only source of randomness.

        Returns
        -------
        int or numpy.ndarray of int64
            ``value`` plus the noise, same shape.

        Examples
        --------
        >>> noisy = DiscreteGaussianMechanism(sigma=2.0).release(7, rng=np.random.default_rng(0))
        >>> isinstance(noisy, int)
        True
        """
        rng = check_rng(rng)
        if _check_integer_sensitivity(sensitivity) != 1:
            raise ValueError(
                f"sensitivity must be 1 for the discrete Gaussian (its curves are those of a "
                f"unit shift on the integers and do not rescale), got {show_value(sensitivity)}"
            )
        sigma = self.sigma
        return _integer_release(value, lambda shape: sample_discrete_gaussian(sigma, shape, rng))

    def _epsilon_bounds(self, delta: float, tol: float | None) -> tuple[float, float]:
        if self.sigma <= _EXACT_MAX_SIGMA:
            return super()._epsilon_bounds(delta, tol)
        # the curve is bracketed, not exact: invert its lower and its upper bound
        lower = invert_decreasing(lambda e: discrete_gaussian_delta_bounds(self.sigma, e)[0], delta)
        return (lower[0], self._epsilon_upper(delta, tol))

    @property
    def capabilities(self) -> Capabilities:
        """The declaration, without PLDs above ``sigma = 1e5``.

        Beyond, the loss law would need millions of atoms.
        """
        if self.sigma <= _PLD_MAX_SIGMA:
            return self.declares
        return dataclasses.replace(self.declares, loss_laws=False, own_pld=False)

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        return discrete_gaussian_rdp(self.sigma, alpha)

    # ------------------------------------------------------------------ loss laws
    def _law(self, pessimistic: bool) -> AtomicLossLaw:
        key = ("law", pessimistic)
        cache = self._cache()
        if key in cache:
            return cache[key]
        sigma = self.sigma
        if sigma > _PLD_MAX_SIGMA:
            raise ValueError(
                f"sigma={sigma!r} is above {_PLD_MAX_SIGMA:g}: the privacy loss law of the "
                "discrete Gaussian would enumerate 24 sigma integers; this mechanism offers "
                "its exact-curve bracket and its RDP curve instead (has_pld is False)"
            )
        s2 = sigma * sigma
        log_z = _log_normaliser(sigma)
        width = _LAW_WIDTH if sigma <= _LATTICE_MAX_SIGMA else _LAW_WIDTH_LARGE
        w = math.ceil(width * sigma) + 1
        # integers 1 - w .. w: symmetric about 1/2, so x -> 1 - x keeps the window
        x = np.arange(1 - w, w + 1, dtype=float)
        with np.errstate(under="ignore"):
            p = np.exp(-((x - 1.0) ** 2) / (2.0 * s2) - log_z)
            q = np.exp(-(x**2) / (2.0 * s2) - log_z)
        losses = (2.0 * x - 1.0) / (2.0 * s2)
        lattice = 1.0 / (2.0 * s2) if sigma <= _LATTICE_MAX_SIGMA else None
        # integers whose P-mass underflows (below 1e-308; only for tiny sigma) are outputs
        # that only Q produces, as far as double precision can tell
        q_only = float(q[p == 0.0].sum())
        keep = p > 0.0
        losses, p = losses[keep], p[keep]
        if pessimistic:
            # discarded under P = N_Z(1): x >= w + 1 (distance >= w from 1) and
            # x <= -w (distance >= w + 1); under Q = N_Z(0) the mirror image
            tail = math.exp(_log_tail_bound(float(w), sigma, log_z)) + math.exp(
                _log_tail_bound(float(w + 1), sigma, log_z)
            )
            law = AtomicLossLaw(
                losses=losses,
                p=p,
                inf_mass=tail,
                q_neg_inf_mass=tail + q_only,
                lattice=lattice,
            )
        else:
            law = AtomicLossLaw(losses=losses, p=p, q_neg_inf_mass=q_only, lattice=lattice)
        cache[key] = law
        return law

    def _loss_laws(self):
        law = self._law(True)
        return law, law

    def _pld_pair(self, pessimistic: bool, settings: PLDSettings) -> tuple[GridPLD, GridPLD]:
        """Both directions share one PLD; the optimistic one drops the truncated mass."""
        pld = discretize_law(self._law(pessimistic), pessimistic, settings)
        return pld, pld
