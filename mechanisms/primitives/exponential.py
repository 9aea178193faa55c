"""The exponential mechanism (and report-noisy-max with Gumbel noise), via bounded range.

The exponential mechanism of McSherry & Talwar 2007 with utility sensitivity ``Delta``
samples ``y`` with probability proportional to ``exp(epsilon u(x, y) / (2 Delta))``; it
is ``epsilon``-DP.  Durfee & Rogers 2019 ("Practical differentially private top-k
selection with pay-what-you-get composition", Section 3) observe that it is moreover
``epsilon``-*bounded range* (BR): for neighbours ``x, x'`` the privacy loss ``L(y) =
log(P(y|x) / P(y|x'))`` satisfies ``sup_y L - inf_y L <= epsilon``.  (Report-noisy-max
with Gumbel noise of scale ``2 Delta / epsilon`` is the same mechanism.)

Worst case of an ``epsilon``-BR pair.  Let ``t = sup L``.  Since ``E_P[e^{-L}] = 1``,
``0 <= t <= epsilon`` and ``L`` lies in ``[t - epsilon, t]``; the hockey-stick
``E_P[(1 - e^{eps'} e^{-L})_+]`` is convex in ``e^{-L}``, so for a fixed mean it is
largest when ``e^{-L}`` sits on the two end points: every ``epsilon``-BR pair is
dominated by the two-point "generalised randomized response" pair with losses
``t`` (P-mass ``pi_t = (e^epsilon - e^t)/(e^epsilon - 1)``) and ``t - epsilon``
(Dong, Durfee, Rogers 2020, "Optimal differential privacy composition for exponential
mechanisms", Section 4, Lemma 4.1).  Maximising over ``t`` in closed form (the maximiser
is ``t* = (epsilon + eps')/2``):

    delta(eps') = (e^{epsilon/2} - e^{eps'/2})^2 / (e^epsilon - 1),   0 <= eps' <= epsilon,

so ``eps'(delta) = 2 log(e^{epsilon/2} - sqrt(delta (e^epsilon - 1)))`` and
``delta(0) = tanh(epsilon/4)`` (against ``tanh(epsilon/2)`` for pure ``epsilon``-DP).
One pair dominates all the two-point pairs at once: the loss with P-density
``e^{(epsilon + l)/2} / (2 (e^epsilon - 1))`` on ``(-epsilon, epsilon)``
(:class:`BoundedRangeLossLaw`; its curve is the one above, and it is symmetric), whose
trade-off curve is ``beta(a) = (1 - a) / (1 + (e^epsilon - 1) a)`` -- the f-DP curve of
the class.  That pair is not itself ``epsilon``-BR (its losses span ``2 epsilon``), so
it is *not* used for composition (see :class:`ExponentialMechanism`).

RDP.  The worst case over ``t`` of the two-point pair's Renyi divergence is found in
closed form too: with ``a = alpha - 1``, ``log E_P[e^{a L}]`` is concave in ``t`` with
its maximum at ``e^{t*} = a (e^epsilon - e^{-a epsilon}) / (alpha (1 - e^{-a
epsilon}))`` (clipped to ``[0, epsilon]``).  The result is the tight RDP curve of the
class of ``epsilon``-BR mechanisms; it is below the ``epsilon^2/8``-zCDP bound
``alpha epsilon^2 / 8`` of Cesar & Rogers 2021 ("Bounding, concentrating, and
truncating: unifying privacy loss composition for data analytics", Section 3) and
below the pure-DP curve.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass

import numpy as np

from dpacct.accountant.curve_down import exp_down, gap_up
from dpacct.accountant.laws.loss_law import PrivacyLossLaw
from dpacct.accountant.mechanism import Capabilities, Mechanism
from dpacct.accountant.serialization import register_mechanism
from dpacct.accountant.validation import check_positive, show_value

from ._release import check_real_values, check_release_args
from .randomized_response import PureDPCurves

_U = 2.0**-53  # the unit roundoff (the trade-off's error bound)

__all__ = [
    "BoundedRangeLossLaw",
    "ExponentialMechanism",
    "bounded_range_delta",
    "bounded_range_epsilon",
    "bounded_range_rdp",
]


def _expm1_ratio(x: np.ndarray, e: float) -> np.ndarray:
    """``expm1(x) / expm1(e)`` for ``0 <= x <= e`` without overflow (``= e^{x-e} ...``)."""
    x = np.asarray(x, dtype=float)
    with np.errstate(under="ignore"):
        return np.exp(x - e) * np.expm1(-x) / math.expm1(-e)


def bounded_range_delta(epsilon: float, eps: np.ndarray) -> np.ndarray:
    """Tight ``delta(eps')`` over all ``epsilon``-BR mechanisms (module docstring).

    ``(e^{epsilon/2} - e^{eps'/2})^2 / (e^epsilon - 1)``, evaluated as
    ``expm1((eps' - epsilon)/2)^2 / (-expm1(-epsilon))`` (no overflow, no cancellation),
    rounded up by ``2^-48`` (numpy's expm1 within four ulps, squared; the gap's, the
    square's and the quotient's roundings); zero for ``eps' >= epsilon``.  An upper bound
    for any particular BR mechanism.

    Examples
    --------
    >>> round(float(bounded_range_delta(1.0, np.array([0.0]))[0]), 6)   # tanh(1/4)
    0.244919
    """
    e = np.asarray(eps, dtype=float)
    out = _bounded_range_delta_nearest(epsilon, e) * (1.0 + 2.0**-48)
    # a value that underflowed (eps' within ~1e-162 of epsilon) or is subnormal: two
    # subnormal ulps up, where the true delta is positive
    return np.where(e < epsilon, out + 1e-323, out)


def _bounded_range_delta_nearest(epsilon: float, eps: np.ndarray) -> np.ndarray:
    """:func:`bounded_range_delta` as evaluated, not rounded up (the loss law's hockey
    stick, which serves both sides of a discretisation): as ``(expm1(gap / 2) / sqrt(
    -expm1(-epsilon)))^2``, so that at ``epsilon`` below 1e-154 the square does not
    underflow (``sqrt`` is exact to rounding: the same few roundings as the plain form)."""
    gap = np.minimum(eps - epsilon, 0.0)
    return (np.expm1(0.5 * gap) / math.sqrt(-math.expm1(-epsilon))) ** 2


def bounded_range_epsilon(epsilon: float, delta: float) -> float:
    """Inverse of :func:`bounded_range_delta`: ``2 log(e^{eps/2} - sqrt(delta (e^eps - 1)))``.

    Examples
    --------
    >>> d = float(bounded_range_delta(2.0, np.array([0.7]))[0])
    >>> round(bounded_range_epsilon(2.0, d), 12)
    0.7
    """
    # e^{eps'/2} = e^{eps/2} (1 - sqrt(delta (1 - e^{-eps})))
    r = math.sqrt(delta * -math.expm1(-epsilon))
    if r >= 1.0:
        return 0.0
    return max(epsilon + 2.0 * math.log1p(-r), 0.0)


#: round-off allowance of :func:`bounded_range_rdp`, in units of ``epsilon``: every
#: term of the evaluation is at most ``~2 epsilon`` in size and carries a few ulps
_BR_ROUNDOFF = 2.0**-46


def bounded_range_rdp(epsilon: float, alpha: np.ndarray) -> np.ndarray:
    """Tight Renyi-DP curve over all ``epsilon``-BR mechanisms, at real orders.

    ``D_alpha = max_{t in [0, epsilon]} log(pi_t e^{a t} + (1 - pi_t) e^{a (t -
    epsilon)}) / a`` with ``a = alpha - 1`` and ``pi_t = (e^epsilon - e^t)/(e^epsilon -
    1)`` (the two-point reduction of Dong, Durfee, Rogers 2020, Lemma 4.1, for the
    ``epsilon``-BR class of Durfee & Rogers 2019), at the closed-form maximiser of the
    module docstring.  ``D_inf = epsilon``.

    Numerics (the curve must stay an upper bound and non-decreasing up to ``alpha =
    1e22``):

    * the maximiser is carried as its gap ``g = epsilon - t* = log1p(1/a) +
      log(1 - e^{-a epsilon}) - log(1 - e^{-(a+1) epsilon})`` (about ``1/a`` at large
      orders; the last two terms as one ``log1p`` when ``a epsilon > 1``), never as
      ``t*`` itself: ``t*`` rounds to ``epsilon`` once ``1/a`` is
      below an ulp of ``epsilon`` (``alpha > ~1e16/epsilon``), where ``pi_t = 0`` made
      the old evaluation ``log1p(-1) = -inf`` and the curve collapsed to 0;
    * ``log(pi_t + (1 - pi_t) e^{-a epsilon})`` is ``log1p(-(1 - pi_t)(1 - e^{-a
      epsilon}))`` while that product is at most 1/2, else ``logaddexp(log pi_t,
      log(1 - pi_t) - a epsilon)`` with ``log pi_t = log(1 - e^{-g}) - log(1 -
      e^{-epsilon})``;
    * the value is raised by ``2^-46 epsilon`` (well above the round-off of terms of size
      ``<= 2 epsilon``) and capped by Cesar & Rogers 2021's ``alpha epsilon^2 / 8``
      (Lemma 3.2 of "Bounding, concentrating, and truncating": ``epsilon``-BR implies
      ``epsilon^2/8``-zCDP), which is within a relative ``O(epsilon^2)`` of the tight
      value and takes over where the tight form cancels (``a epsilon`` tiny), and by
      ``epsilon`` (pure DP).

    Examples
    --------
    >>> bool(bounded_range_rdp(1.0, np.array([2.0]))[0] <= 2.0 / 8)
    True
    >>> d = bounded_range_rdp(0.1, np.array([1e17, 1e22, np.inf]))
    >>> bool(np.all(d > 0.0999999999) and np.all(d <= 0.1))
    True
    """
    eps = float(epsilon)
    a = np.asarray(alpha, dtype=float) - 1.0
    finite = np.isfinite(a)
    af = np.where(finite, a, 1.0)
    x = af * eps
    with np.errstate(under="ignore", divide="ignore", invalid="ignore"):
        # log((1 - e^{-x}) / (1 - e^{-x-eps})): a difference of logs for small x, a
        # log1p of a small argument (accurate to its last digits) for large x
        far_x = x > 1.0
        ratio_far = np.log1p(
            -np.exp(-np.where(far_x, x, 1.0)) * -math.expm1(-eps) / -np.expm1(-x - eps)
        )
        ratio_near = np.log(-np.expm1(-x)) - np.log(-np.expm1(-x - eps))
        gap = np.log1p(1.0 / af) + np.where(far_x, ratio_far, ratio_near)
        gap = np.clip(gap, 0.0, eps)
        t = eps - gap
        one_minus_pi = _expm1_ratio(t, eps)
        shrink = one_minus_pi * -np.expm1(-x)
        near = shrink <= 0.5
        log_near = np.log1p(-np.where(near, shrink, 0.0))
        log_pi = np.log(-np.expm1(-gap)) - math.log(-math.expm1(-eps))
        log_far = np.logaddexp(log_pi, np.log(one_minus_pi) - x)
        log_mix = np.where(near, log_near, log_far)
    val = t + log_mix / af + _BR_ROUNDOFF * eps
    cap = (af + 1.0) * (eps * eps / 8.0)
    val = np.where(finite, np.minimum(val, cap), eps)
    return np.clip(val, 0.0, eps)


@dataclass(frozen=True)
class BoundedRangeLossLaw(PrivacyLossLaw):
    """A symmetric pair dominating every ``epsilon``-BR pair (module docstring).

    Its curves are the tight single-mechanism curves of the BR class, but its
    compositions are looser than those of the class (it is not ``epsilon``-BR), so
    :class:`ExponentialMechanism` does not hand it to the PLD machinery; it is provided
    for analysis (and as the certificate of the trade-off curve).

    Under ``P`` the loss has density ``e^{(epsilon + l)/2} / (2 (e^epsilon - 1))`` on
    ``(-epsilon, epsilon)``, under ``Q`` the density ``e^{(epsilon - l)/2} / (2
    (e^epsilon - 1))``; no atoms, no lattice.  Its hockey-stick curve is
    :func:`bounded_range_delta` and its trade-off curve ``(1 - a)/(1 + (e^epsilon - 1)
    a)``.

    Examples
    --------
    >>> law = BoundedRangeLossLaw(epsilon=1.0)
    >>> round(float(law.hockey_stick(np.array([0.0]))[0]), 6)
    0.244919
    """

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_positive("epsilon", self.epsilon))

    def _clip(self, x):
        x = np.asarray(x, dtype=float)
        e = self.epsilon
        return x, np.clip(x, -e, e), e, x < -e, x >= e

    def cdf_p(self, x):
        x, xc, e, below, above = self._clip(x)
        mid = _expm1_ratio(0.5 * (e + xc), e)
        return np.where(below, 0.0, np.where(above, 1.0, mid))

    def sf_p(self, x):
        x, xc, e, below, above = self._clip(x)
        mid = np.expm1(0.5 * (xc - e)) / math.expm1(-e)
        return np.where(below, 1.0, np.where(above, 0.0, mid))

    def cdf_q(self, x):
        x, xc, e, below, above = self._clip(x)
        mid = np.expm1(-0.5 * (e + xc)) / math.expm1(-e)
        return np.where(below, 0.0, np.where(above, 1.0, mid))

    def sf_q(self, x):
        x, xc, e, below, above = self._clip(x)
        mid = _expm1_ratio(0.5 * (e - xc), e)
        return np.where(below, 1.0, np.where(above, 0.0, mid))

    def hockey_stick(self, epsilon):
        """Closed form for eps >= 0 (the generic difference loses digits near epsilon)."""
        eps = np.asarray(epsilon, dtype=float)
        out = _bounded_range_delta_nearest(self.epsilon, np.maximum(eps, 0.0))
        neg = eps < 0
        if neg.any():
            out = np.where(neg, super().hockey_stick(np.minimum(eps, 0.0)), out)
        return out



def scaled_scores(
    scores: object, sensitivity: object, rng: object, epsilon: float
) -> tuple[np.ndarray, np.ndarray, np.random.Generator]:
    """Validated ``scores``, their logits ``epsilon u / (2 sensitivity)`` and ``rng``.

    The exponential mechanism and permute-and-flip draw from the same logits
    (McSherry & Talwar 2007; McKenna & Sheldon 2020).

    Examples
    --------
    >>> u, logits, _ = scaled_scores([0.0, 2.0], 1.0, np.random.default_rng(0), 1.0)
    >>> logits.tolist()
    [0.0, 1.0]
    """
    sens, rng = check_release_args(sensitivity, rng)
    u, _ = check_real_values("scores", scores)
    if u.ndim != 1 or u.size == 0:
        raise ValueError(f"scores must be a non-empty 1-D array, got shape {u.shape}")
    with np.errstate(over="ignore"):
        logits = (epsilon / (2.0 * sens)) * u
    if not np.isfinite(logits).all():
        raise ValueError(
            "scores * epsilon / (2 sensitivity) overflows the float range; rescale the utility"
        )
    return u, logits, rng

@dataclass(frozen=True, repr=False, init=False)
class ExponentialMechanism(Mechanism):
    """The exponential mechanism / Gumbel report-noisy-max calibrated to be ``epsilon``-DP.

    Sampling ``y`` with probability ``∝ exp(epsilon u(x, y) / (2 Delta))`` for a utility
    of sensitivity ``Delta`` (McSherry & Talwar 2007).

    With ``bounded_range=True`` (default) the mechanism is accounted as ``epsilon``-BR
    (Durfee & Rogers 2019, Section 3), using the curves of the module docstring:

    * the tight ``delta(eps') = (e^{epsilon/2} - e^{eps'/2})^2 / (e^epsilon - 1)``
      (Dong, Durfee, Rogers 2020, Lemma 4.1 reduction, maximised in closed form);
    * the tight BR RDP curve (:func:`bounded_range_rdp`; below Cesar & Rogers 2021's
      ``alpha epsilon^2 / 8``), through which compositions are accounted;
    * the trade-off curve ``(1 - a)/(1 + (e^epsilon - 1) a)``.

    These are the worst case over all utility functions -- **upper bounds** for any
    particular one.  No privacy loss distribution is attached: the single pair that
    dominates every ``epsilon``-BR pair (:class:`BoundedRangeLossLaw`) is itself not
    ``epsilon``-BR, and composing it is looser than composing the BR RDP curve (its KL
    divergence is ``~epsilon^2/6`` against ``~epsilon^2/8``) while the optimistic side of
    its PLD would not bound the truth from below.  Compositions with this mechanism
    therefore use the RDP route, and :meth:`epsilon_bounds` of a composition reports a
    lower end of 0.

    With ``bounded_range=False`` it is accounted as a generic pure ``epsilon``-DP
    mechanism, exactly like :class:`dpacct.mechanisms.PureDPMechanism` (binary randomized
    response: exact curve, RDP, lattice loss law, trade-off), also upper bounds.

    Parameters
    ----------
    epsilon : float
        The pure-DP parameter the mechanism was calibrated to, > 0 and finite;
        available afterwards as ``epsilon0`` (``epsilon`` is the query method).
    bounded_range : bool, default True
        True: account by the bounded-range analysis above (tighter); False: as a
        generic pure ``epsilon``-DP mechanism.  Either way ``release`` samples the same
        distribution.

    Examples
    --------
    >>> em = ExponentialMechanism(epsilon=1.0)
    >>> em
    ExponentialMechanism(epsilon=1.0, bounded_range=True)
    >>> round(em.delta(0.0), 6)         # tanh(1/4)
    0.244919
    >>> round(em.epsilon(1e-6), 4)
    0.9984
    >>> em.has_pld
    False
    >>> plain = ExponentialMechanism(epsilon=1.0, bounded_range=False)
    >>> round(plain.delta(0.0), 6)      # tanh(1/2)
    0.462117
    >>> bool(em.rdp(2.0) < plain.rdp(2.0))
    True
    """

    #: the pure-DP parameter, stored as ``epsilon0`` because ``epsilon`` is the
    #: :meth:`~dpacct.accountant.mechanism.Mechanism.epsilon` query of every mechanism
    epsilon0: float
    bounded_range: bool = True

    declares = Capabilities(exact_curve=True, rdp=True, exact_tradeoff=True)

    def __new__(cls, *args, **kwargs):
        # the plain (pure-DP) analysis has a privacy loss law, the BR one has not; the
        # engine reads capabilities from the class, so each analysis gets its own class
        if cls is ExponentialMechanism:
            flag = kwargs.get("bounded_range", args[1] if len(args) > 1 else True)
            if isinstance(flag, bool | np.bool_) and not flag:
                cls = _PlainExponentialMechanism
        return super().__new__(cls)

    def __init__(self, epsilon: float, bounded_range: bool = True) -> None:
        eps0 = check_positive("epsilon", epsilon)
        if not isinstance(bounded_range, bool | np.bool_):
            raise TypeError(
                f"bounded_range must be a bool, got {type(bounded_range).__name__} "
                f"{show_value(bounded_range)}"
            )
        object.__setattr__(self, "epsilon0", eps0)
        object.__setattr__(self, "bounded_range", bool(bounded_range))

    # what help() and inspect show: the constructor's parameters, not __new__'s *args
    __signature__ = inspect.Signature(list(inspect.signature(__init__).parameters.values())[1:])

    def __repr__(self) -> str:
        return (
            f"ExponentialMechanism(epsilon={self.epsilon0!r}, bounded_range={self.bounded_range!r})"
        )

    def _pure_epsilon(self) -> float:
        # epsilon-bounded range implies epsilon-DP (Durfee & Rogers 2019)
        return self.epsilon0

    def release(
        self,
        scores,
        *,
        sensitivity: float,
        rng: np.random.Generator,
        edges=None,
    ):
        """Run the exponential mechanism on utility ``scores``: pick an index (or a point).

        Index ``i`` is drawn with probability ``∝ exp(epsilon0 scores[i] / (2 Delta))``
        (McSherry & Talwar 2007, Section 3), ``Delta = sensitivity`` the utility's
        sensitivity -- the exponent whose mechanism is ``epsilon0``-bounded-range
        (Durfee & Rogers 2019, Section 3: the loss ``(epsilon0 / (2 Delta)) (u(x, y) -
        u(x', y)) + const`` ranges over at most ``epsilon0``), which is the claim of this
        object under either analysis (``bounded_range`` changes only the accounting).
        Sampled by the Gumbel-max trick (Yellott 1977; Durfee & Rogers 2019 use the
        same identity to equate the mechanism with Gumbel report-noisy-max):
        ``argmax_i (logit_i + G_i)`` with ``G_i`` i.i.d. standard Gumbel has exactly the
        softmax law of the logits, computed after subtracting the largest logit (no
        overflow, no underflow to all zeros).

        With ``edges`` (``m + 1`` non-decreasing finite points) it is the *continuous*
        exponential mechanism on ``[edges[0], edges[-1]]`` with respect to length
        (Lebesgue base measure, McSherry & Talwar 2007) for a utility equal to
        ``scores[i]`` on ``[edges[i], edges[i+1])`` -- e.g. Smith 2011's quantile: piece
        ``i`` is drawn with probability ``∝ (edges[i+1] - edges[i]) exp(epsilon0
        scores[i] / (2 Delta))`` and the output is uniform inside it, which is exactly
        the continuous density.  Its privacy is that of the discrete case (the same
        range argument over points ``y``).

        Parameters
        ----------
        scores : array_like, shape (m,)
            Finite utilities ``u(x, y_i)``, one per candidate (or per piece), m >= 1.
        sensitivity : float
            Sensitivity ``Delta`` of the utility (largest change of any candidate's
            score between neighbours), > 0 and finite.
        rng : numpy.random.Generator
            The only source of randomness.
        edges : array_like, shape (m + 1,), optional
            Piece boundaries for the continuous mechanism (see above).

        Returns
        -------
        int or float
            The index drawn; with ``edges``, the point drawn.

        Raises
        ------
        ValueError
            Empty, non-finite or non-1-D ``scores``; bad ``sensitivity``; ``edges`` of the
            wrong length, decreasing, non-finite or of zero total length.
        TypeError
            ``rng`` not a ``numpy.random.Generator``.

        Examples
        --------
        >>> em = ExponentialMechanism(epsilon=2.0)
        >>> rng = np.random.default_rng(0)
        >>> picks = [em.release([0.0, 0.0, 5.0], sensitivity=1.0, rng=rng) for _ in range(200)]
        >>> bool(np.mean(np.array(picks) == 2) > 0.95)   # weights 1 : 1 : e^5
        True
        >>> y = em.release([0.0, -1.0], sensitivity=1.0, rng=rng, edges=[0.0, 1.0, 3.0])
        >>> 0.0 <= y <= 3.0
        True
        """
        u, logits, rng = scaled_scores(scores, sensitivity, rng, self.epsilon0)
        lengths = None
        if edges is not None:
            e, _ = check_real_values("edges", edges)
            if e.shape != (u.size + 1,):
                raise ValueError(
                    f"edges must have len(scores) + 1 = {u.size + 1} entries, got shape {e.shape}"
                )
            lengths = np.diff(e)
            if (lengths < 0).any() or not e[-1] > e[0]:
                raise ValueError("edges must be non-decreasing with edges[-1] > edges[0]")
            with np.errstate(divide="ignore"):
                logits = logits + np.log(lengths)  # zero-length pieces: -inf, never drawn
        logits = logits - np.max(logits)
        i = int(np.argmax(logits + rng.gumbel(size=u.size)))
        if lengths is None:
            return i
        return float(min(e[i] + rng.uniform() * lengths[i], e[i + 1]))

    def _delta_exact(self, epsilon: np.ndarray) -> np.ndarray:
        return bounded_range_delta(self.epsilon0, epsilon)

    def _delta_exact_down(self, epsilon: np.ndarray) -> np.ndarray:
        # bounded_range_delta rounded down (accountant/curve_down.py): the gap rounded
        # up, numpy's expm1 within four ulps (squared: 16u), math.expm1 within one (2u)
        # and its sqrt (u), the quotient, the square and the factor's product (u each):
        # 22u, inside 2^-48; as a squared ratio, so that no square underflows at an
        # epsilon below 1e-154
        half = 0.5 * gap_up(epsilon, self.epsilon0)
        ratio = np.expm1(half) / math.sqrt(-math.expm1(-self.epsilon0))
        return ratio**2 * (1.0 - 2.0**-48)

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        return bounded_range_rdp(self.epsilon0, alpha)

    def _tradeoff_exact(self, fpr: np.ndarray) -> np.ndarray:
        # beta = (1 - a) / (1 + (e^eps - 1) a) = (1 - a) / ((1 - a) + e^eps a), rounded
        # down in log space (e^-eps may be subnormal, e^eps overflow):
        # log beta = log1p(-a) - logaddexp(log1p(-a), eps + log a).  Argument errors
        # (numpy's vectorised log / log1p within 4 ulps, 8u): log1p 8u of itself;
        # eps + log a 8u |log a| + u |eps + log a|; logaddexp moves by at most the
        # larger input error (its weights add up to 1) plus 16u (|lse| + 1) of its own
        # (measured: 0.96u (|lse| + 1) on an AVX2 CPU); the difference u |arg|
        a = np.asarray(fpr, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            l1 = np.log1p(-a)
            log_a = np.log(a)
            y = self.epsilon0 + log_a
            lse = np.logaddexp(l1, y)
            arg = l1 - lse
            e1 = 8.0 * _U * np.abs(l1)
            e2 = 8.0 * _U * np.abs(log_a) + _U * np.abs(y)
            err = e1 + np.maximum(e1, e2) + 16.0 * _U * (np.abs(lse) + 1.0) + _U * np.abs(arg)
            out = exp_down(arg, np.where(np.isfinite(err), err, 0.0))
        return np.where(a > 0, np.where(a < 1, out, 0.0), 1.0)


@dataclass(frozen=True, repr=False, init=False)
class _PlainExponentialMechanism(PureDPCurves, ExponentialMechanism):
    """``ExponentialMechanism(epsilon, bounded_range=False)``: the pure-DP analysis."""

    declares = Capabilities(exact_curve=True, rdp=True, loss_laws=True, exact_tradeoff=True)


# ledger files store both analyses under one type name, with the flag
def _encode_exponential(m: ExponentialMechanism) -> dict[str, object]:
    return {"epsilon": m.epsilon0, "bounded_range": m.bounded_range}


def _decode_exponential(params: dict) -> ExponentialMechanism:
    return ExponentialMechanism(epsilon=params["epsilon"], bounded_range=params["bounded_range"])


register_mechanism(
    "exponential", ExponentialMechanism, encode=_encode_exponential, decode=_decode_exponential
)
register_mechanism(
    "exponential_pure_dp",
    _PlainExponentialMechanism,
    encode=_encode_exponential,
    decode=_decode_exponential,
)
