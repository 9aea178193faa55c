"""k-ary randomized response, and the randomized-response curves other mechanisms reuse.

Convention (Warner 1965 for ``k = 2``; Kairouz, Bonawitz, Ramage 2016, "Discrete
distribution estimation under local privacy", the "k-RR" mechanism; Wang, Blocki, Li,
Jha 2017, "Locally differentially private protocols for frequency estimation",
Section 4.1, "direct encoding"): on input ``v`` among ``k`` values the mechanism answers ``v`` with
probability ``p`` and each of the ``k - 1`` *other* values with probability
``q = (1 - p) / (k - 1)``.  With ``p = e^eps0 / (e^eps0 + k - 1)`` it is exactly
``eps0``-DP, ``eps0 = log(p / q)``.

Beware of the other convention found in some libraries (e.g. Google's
``dp_accounting.RandomizedResponseDpEvent``): "with probability ``r`` answer a uniformly
random value among *all* ``k`` values, otherwise the truth".  The two are related by
``p = 1 - r + r / k``, i.e. ``r = k (1 - p) / (k - 1)``.

The neighbouring relation is that of local differential privacy: the input (one
person's value) is replaced by any other value.

Every privacy curve here depends on the mechanism only through three atoms of the
privacy loss ``L = log(P(y) / Q(y))`` (``P``: output law on input ``v``, ``Q``: on
input ``v'``): ``L = +eps0`` with P-mass ``p`` (output ``v``), ``L = -eps0`` with
P-mass ``q`` (output ``v'``) and ``L = 0`` with P-mass ``(k - 2) q`` (any other
output).  Binary randomized response (``k = 2``) with ``p = e^eps0 / (1 + e^eps0)`` is
the extremal ``eps0``-DP pair, reused by :mod:`dpacct.mechanisms.primitives.generic`,
:mod:`dpacct.mechanisms.primitives.discrete` and :mod:`dpacct.mechanisms.primitives.exponential`.
"""

from __future__ import annotations

import decimal
import math
import numbers
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy import special

from dpacct.accountant.curve_down import (
    float_above,
    kov_constants,
    kov_tradeoff_down,
    rr_delta_down,
)
from dpacct.accountant.laws.loss_law import AtomicLossLaw
from dpacct.accountant.mechanism import Capabilities, Mechanism
from dpacct.accountant.rdp.conversion import pure_dp_rdp, randomized_response_rdp
from dpacct.accountant.relations import REPLACE_ONE
from dpacct.accountant.serialization import register_mechanism
from dpacct.accountant.validation import check_count, check_finite, check_rng, show_value

from ._release import bernoulli_rational, check_integer_values

_U = 2.0**-53  # the unit roundoff (the trade-off's error bounds)

__all__ = ["RandomizedResponse"]


# ----------------------------------------------------------------------------------
# curves of the three-atom pair, shared with the other discrete / pure-DP mechanisms
# ----------------------------------------------------------------------------------
#: the float curve's relative round-off allowance (the gap's one rounding, ``expm1``'s
#: ulp, the product's, and ``p``'s own rounding where it is computed: a few ulps)
_UP_FACTOR = 1.0 + 2.0**-49


def _rr_delta(p_true: float, eps0: float, epsilon: np.ndarray) -> np.ndarray:
    """Hockey-stick ``delta(eps) = max(0, p - e^eps q)`` of the k-RR pair, rounded up.

    Only the atom ``L = eps0`` contributes for ``eps >= 0`` (the atom ``L = 0`` has
    ``(1 - e^eps)_+ = 0``), so ``delta = p (1 - e^(eps - eps0))_+``, written with
    ``expm1`` so that deltas close to zero keep their relative precision.  ``eps0``
    must be at or above the true pure epsilon (the curve rises with it); the float
    curve's few ulps of round-off are covered by :data:`_UP_FACTOR` (review 35 F0: the
    plain float curve put an upper end an ulp below the true epsilon).
    """
    eps = np.asarray(epsilon, dtype=float)
    gap = np.minimum(eps - eps0, 0.0)
    return np.minimum(p_true * -np.expm1(gap) * _UP_FACTOR, 1.0)


def _rr_epsilon0(p: float, k: int) -> tuple[float, float, float]:
    """``eps0 = log(p (k - 1) / (1 - p))`` as three floats: rounded to nearest, one ulp
    below and one ulp above, all from one 60-digit value (``p`` is exact, so the only
    error before the rounding is ``1e-59`` relative; one ulp each way is more than half
    an ulp of rounding).  The float ``p k - 1`` cancels near ``p = 1/k`` (review 35 F1:
    epsilon0 off by up to 2.7 %, upper ends below the truth); here nothing cancels.

    The value is Python's :mod:`decimal` logarithm, correctly rounded to 60 digits (it
    replaced a 50-digit ``mpmath`` one, the same floats, tests/test_randomized_response.py:
    importing mpmath was 44 ms of the first ``epsilon`` of an RR composition; issue 37)."""
    # a fresh context: the caller's traps, exponent limits and rounding do not apply
    with decimal.localcontext(decimal.Context(prec=60, rounding=decimal.ROUND_HALF_EVEN)):
        pd = decimal.Decimal(p)  # exact
        exact = (pd * (k - 1) / (1 - pd)).ln()
    nearest = float(exact)  # correctly rounded from the decimal string
    return nearest, math.nextafter(nearest, -math.inf), math.nextafter(nearest, math.inf)


def _rr_rdp(q_other: float, eps0: float, k: int, alpha: np.ndarray) -> np.ndarray:
    """Exact Renyi divergence of the k-RR pair at real orders (both directions agree).

    ``D_alpha = log(p e^{a eps0} + q e^{-a eps0} + (k - 2) q) / a`` with ``a = alpha - 1``
    (Mironov 2017, Definition 3, summed over the three output classes); evaluated by
    :func:`dpacct.accountant.rdp.conversion.randomized_response_rdp` (``p = q e^eps0``, ``k``
    enters only
    through ``q``), which has no cancellation near ``alpha = 1`` and no collapse at
    large orders.  ``D_inf = eps0``.
    """
    return randomized_response_rdp(eps0, math.log(q_other), np.asarray(alpha, dtype=float))


def _rr_tradeoff(p_true: float, k: int, eps0_hi: float, fpr: np.ndarray) -> np.ndarray:
    """Exact f-DP trade-off curve of the k-RR pair, rounded down: piecewise linear, three
    pieces.

    Neyman-Pearson tests reject first the output with likelihood ratio ``e^eps0``
    (type I mass ``q``), then the ``k - 2`` outputs with ratio 1, then the last one
    (ratio ``e^-eps0``), randomising within a class.  The resulting convex curve is the
    maximum of its supporting lines (for ``k = 2`` the middle line only touches it):

        beta(a) = max(0, 1 - e^eps0 a, 1 - p + q - a, e^-eps0 (1 - a)).

    For ``k = 2`` this is ``f_{eps0, 0}`` of Dong, Roth, Su 2019 (Equation 5).  Never
    above the true curve (``Mechanism.tradeoff``'s promise): the outer lines at
    ``eps0_hi >= eps0`` (:func:`~dpacct.accountant.curve_down.kov_tradeoff_down`); the
    middle one as ``((s - a) + t) + q``, where ``1 - p = s + t`` exactly (Fast2Sum) and
    near the line's zero (``a`` near ``1 - p``) ``s - a`` is exact (Sterbenz), with every
    rounding's bound taken off: the difference, the two sums and ``q = (1 - p) / (k - 1)``
    (2u).
    """
    a = np.asarray(fpr, dtype=float)
    omp = 1.0 - p_true
    tail = -p_true - (omp - 1.0)  # 1 - p = omp + tail exactly (Fast2Sum, |1| >= p)
    q = omp / (k - 1)
    diff = omp - a
    d = diff + tail
    mid = d + q
    err = _U * (np.abs(diff) + np.abs(d) + 3.0 * q + np.abs(mid))
    middle = np.maximum((mid - 1.01 * err) * (1.0 - 2.0 * _U), 0.0)
    return np.maximum(kov_tradeoff_down(eps0_hi, a), middle)  # the outer lines: f_{eps0, 0}


def _rr_law(p_true: float, q_other: float, k: int, eps0: float) -> AtomicLossLaw:
    """Atomic privacy-loss law of the k-RR pair; losses on the lattice ``eps0 * Z``.

    For ``eps0`` beyond the double range (``q < 1e-308``) the atom ``L = -eps0`` has a
    P-mass that rounds to zero; its Q-mass ``p`` is then put on ``L = -inf``.
    """
    losses = [-eps0, eps0]
    masses = [q_other, p_true]
    q_neg = 0.0
    if k > 2:
        losses.insert(1, 0.0)
        masses.insert(1, (k - 2) * q_other)
    if q_other == 0.0:
        losses, masses, q_neg = losses[1:], masses[1:], p_true
    return AtomicLossLaw(
        losses=np.array(losses), p=np.array(masses), q_neg_inf_mass=q_neg, lattice=eps0
    )


def _binary_rr(eps0: float) -> tuple[float, float]:
    """``(p, q) = (e^eps0, 1) / (1 + e^eps0)`` of binary randomized response, accurately."""
    return float(special.expit(eps0)), float(special.expit(-eps0))


# ----------------------------------------------------------------------------------
def _check_k(value: object) -> int:
    """``k``: an integer >= 2 (a float with an integral value is accepted)."""
    if isinstance(value, bool) or isinstance(value, str | bytes):
        shown = f"{type(value).__name__} {show_value(value)}"
        raise TypeError(f"k must be an integer >= 2, got {shown}")
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        x = float(value)
        if not (math.isfinite(x) and x.is_integer()):
            raise ValueError(f"k must be an integer >= 2, got {show_value(value)}")
    try:
        k = check_count(value, "k")
    except ValueError as exc:
        if "<=" in str(exc):  # beyond the int64 range: keep the message naming the limit
            raise
        raise ValueError(f"k must be an integer >= 2, got {show_value(value)}") from None
    if k < 2:
        raise ValueError(f"k must be an integer >= 2, got {k}")
    return k


@register_mechanism("randomized_response")
@dataclass(frozen=True, repr=False)
class RandomizedResponse(Mechanism):
    """k-ary randomized response: the truth with probability ``p``, else another value.

    On input ``v`` among ``k`` values, answer ``v`` with probability ``p`` and each of
    the other ``k - 1`` values with probability ``(1 - p) / (k - 1)`` (the k-RR
    convention of Kairouz, Bonawitz, Ramage 2016 and Wang et al. 2017; see the module
    docstring for the relation to the "uniform over all k values" convention).  It is
    pure ``eps0``-DP with ``eps0 = log(p (k - 1) / (1 - p))`` under the local
    (replace-one-value) neighbouring relation.

    Known exactly: the privacy curve ``delta(eps) = max(0, p - e^eps (1 - p)/(k - 1))``,
    the RDP curve (a finite sum), the three-atom privacy loss (lattice ``eps0``, so PLD
    composition is exact up to tail cuts) and the piecewise-linear trade-off curve.

    Parameters
    ----------
    p : float
        Probability of answering truthfully, in the open interval ``(1/k, 1)``.
        ``p = 1/k`` would make the output independent of the input, ``p = 1`` is not
        private, and ``p < 1/k`` (lying more often than any particular lie) is refused
        rather than reinterpreted.
    k : int, optional
        Number of possible values, an integer >= 2 (default 2, binary).

    Raises
    ------
    ValueError
        ``p`` outside ``(1/k, 1)``, NaN or infinite; ``k`` < 2 or not integral.
    TypeError
        ``p`` or ``k`` not a number (strings, booleans).

    Examples
    --------
    >>> rr = RandomizedResponse(p=0.75)
    >>> round(rr.epsilon0, 6)          # log 3
    1.098612
    >>> float(rr.delta(0.0))           # 0.75 - 0.25
    0.5
    >>> round(rr.epsilon(1e-6), 6)     # log 3 - 1e-6 / 0.75
    1.098611
    >>> RandomizedResponse(p=0.5, k=4)
    RandomizedResponse(p=0.5, k=4)
    >>> round(float(RandomizedResponse(p=0.5, k=4).tradeoff(0.5)), 6)   # q = 1/6
    0.166667
    """

    p: float
    k: int = 2

    #: local differential privacy: one person's value is replaced by any other value
    #: local DP: any two input values of one person, i.e. replace-one on a dataset of
    #: one record (and on a dataset of records, when each record's value is randomised)
    neighbouring = REPLACE_ONE

    declares = Capabilities(exact_curve=True, rdp=True, loss_laws=True, exact_tradeoff=True)

    def __post_init__(self) -> None:
        k = _check_k(self.k)
        p = check_finite("p", self.p)
        if not 1.0 / k < p < 1.0:
            raise ValueError(
                f"p must lie in (1/k, 1) = ({1.0 / k:.6g}, 1) for k={k}, got {show_value(p)}"
            )
        if not Fraction(p) * k > 1:  # p above 1/k in floats, not exactly: epsilon0 <= 0
            raise ValueError(
                f"p={show_value(p)} is too close to 1/k={1.0 / k:.17g} (epsilon0 rounds to 0)"
            )
        object.__setattr__(self, "k", k)
        object.__setattr__(self, "p", p)

    @property
    def q(self) -> float:
        """Probability of each particular untruthful answer, ``(1 - p) / (k - 1)``."""
        return (1.0 - self.p) / (self.k - 1)

    @property
    def epsilon0(self) -> float:
        """Pure-DP parameter ``log(p / q) = log(p (k - 1) / (1 - p))``, correctly rounded.

        From 60 digits (in floats ``p k - 1`` cancels near ``p = 1/k``), computed once per
        mechanism with the two bounds the curves read (:func:`_rr_epsilon0`).
        """
        return self._eps0()[0]

    def _eps0(self) -> tuple[float, float, float]:
        cache = self._cache()
        if "eps0" not in cache:
            cache["eps0"] = _rr_epsilon0(self.p, self.k)
        return cache["eps0"]

    def _pure_epsilon(self) -> float:
        # one ulp above the 60-digit epsilon0 is above the true one (a cap), and every
        # upper curve below is read at it
        return self._eps0()[2]

    def _delta_exact(self, epsilon: np.ndarray) -> np.ndarray:
        return _rr_delta(self.p, self._pure_epsilon(), epsilon)

    def _delta_exact_down(self, epsilon: np.ndarray) -> np.ndarray:
        # the certified lower curve (accountant/curve_down.py): p is exact, epsilon0 one
        # ulp below its 60-digit value (the same value the upper curves read one ulp up)
        return rr_delta_down(self.p, self._eps0()[1], epsilon)

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        return _rr_rdp(self.q, self._pure_epsilon(), self.k, alpha)

    def _loss_laws(self):
        cache = self._cache()
        if "law" not in cache:
            cache["law"] = _rr_law(self.p, self.q, self.k, self._pure_epsilon())
        law = cache["law"]
        return law, law  # swapping v and v' maps the pair onto itself

    def _tradeoff_exact(self, fpr: np.ndarray) -> np.ndarray:
        # epsilon0 one ulp above its 60-digit value: the curve read no higher
        return _rr_tradeoff(self.p, self.k, self._pure_epsilon(), fpr)

    def release(self, true_category, *, rng: np.random.Generator):
        """Answer each true value in ``{0, ..., k-1}`` by k-ary randomized response.

        Each answer is the true value with probability ``p`` and otherwise uniformly one
        of the ``k - 1`` other values (probability ``q = (1 - p)/(k - 1)`` each): the
        k-RR mechanism of the class docstring (Warner 1965 for ``k = 2``; Kairouz,
        Bonawitz, Ramage 2016), answers independent across entries.  The truthful coin
        has probability exactly ``p`` (the binary fraction ``p`` stores, drawn as
        ``U < numerator`` with ``U`` uniform on ``{0, ..., denominator - 1}``), so the
        answers have exactly the law whose curves this object states.  There is no
        sensitivity: the neighbouring relation is local (any two input values).

        Parameters
        ----------
        true_category : int or array_like of int
            True value(s) in ``{0, ..., k - 1}``.
        rng : numpy.random.Generator
            The only source of randomness.

        Returns
        -------
        int or numpy.ndarray of int64
            The answers, same shape (an int for a scalar input).

        Raises
        ------
        ValueError
            A value that is not an integer in ``{0, ..., k - 1}``.
        TypeError
            ``rng`` not a ``numpy.random.Generator``; non-numeric values.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> answers = RandomizedResponse(p=0.75).release(np.zeros(100_000, int), rng=rng)
        >>> bool(abs((answers == 0).mean() - 0.75) < 0.01)
        True
        >>> out = RandomizedResponse(p=0.5, k=4).release([3, 3, 3], rng=rng)
        >>> out.shape, bool(((0 <= out) & (out < 4)).all())
        ((3,), True)
        """
        rng = check_rng(rng)
        v, scalar = check_integer_values("true_category", true_category)
        if ((v < 0) | (v >= self.k)).any():
            bad = v[(v < 0) | (v >= self.k)].ravel()[0]
            raise ValueError(
                f"true_category must contain integers in {{0, ..., {self.k - 1}}} (k={self.k}), "
                f"got {int(bad)}"
            )
        keep = bernoulli_rational(rng, self.p, v.shape)
        other = rng.integers(0, self.k - 1, size=v.shape, dtype=np.int64)
        other = other + (other >= v)  # uniform over the k - 1 values other than the truth
        out = np.where(keep, v, other)
        return int(out) if scalar else out


class PureDPCurves:
    """The curves of any mechanism known only by a pure-DP parameter ``epsilon0``.

    A pure ``epsilon0``-DP mechanism is dominated by binary randomized response with
    truth probability ``e^eps0 / (1 + e^eps0)`` (Kairouz, Oh, Viswanath 2015), whose
    curve, RDP (Bun & Steinke 2016, Prop. 3.3), loss law and trade-off are exact.
    Mix in before :class:`~dpacct.accountant.mechanism.Mechanism`; the class must define
    ``epsilon0``.
    """

    epsilon0: float

    def _pure_epsilon(self) -> float:
        return self.epsilon0

    def _delta_exact(self, epsilon: np.ndarray) -> np.ndarray:
        p, _ = _binary_rr(self.epsilon0)
        return _rr_delta(p, self.epsilon0, epsilon)

    def _epsilon0_exact(self):
        """The pure-DP parameter as the exact number it stands for (a float here; a
        class whose ``epsilon0`` is computed, such as ``1 / scale``, gives it at 50
        digits), for the certified lower curve."""
        return self.epsilon0

    def _delta_exact_down(self, epsilon: np.ndarray) -> np.ndarray:
        # the certified lower curve (accountant/curve_down.py)
        p_lo, eps0_lo = kov_constants(self._epsilon0_exact(), cache=self._cache())
        return rr_delta_down(p_lo, eps0_lo, epsilon)

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        return pure_dp_rdp(self.epsilon0, alpha)

    def _loss_laws(self):
        cache = self._cache()
        if "law" not in cache:
            p, q = _binary_rr(self.epsilon0)
            cache["law"] = _rr_law(p, q, 2, self.epsilon0)
        law = cache["law"]
        return law, law

    def _tradeoff_exact(self, fpr: np.ndarray) -> np.ndarray:
        # f_{eps0, 0} (binary RR's curve; its middle line only touches it), rounded down
        # at the exact epsilon0 read one ulp up when it is not a float (e.g. 1 / scale)
        eps0 = self._epsilon0_exact()
        eps_hi = eps0 if isinstance(eps0, float) else float_above(eps0)
        return kov_tradeoff_down(eps_hi, np.asarray(fpr, dtype=float))
