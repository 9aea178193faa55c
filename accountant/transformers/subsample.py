"""Privacy amplification by subsampling, as transformers producing a Mechanism.

* :func:`poisson_subsample` -- every record joins the batch independently with
  probability ``sample_rate`` (add/remove neighbours).  Privacy loss distributions use
  the mixture dominating pairs of Zhu, Dong & Wang 2022 (Theorem 11) for both
  directions; RDP uses the exact/real-order subsampled-Gaussian formula of Mironov,
  Talwar & Zhang 2019 for a Gaussian base and Zhu & Wang 2019 otherwise.
* :func:`subsample_without_replacement` -- a batch of fixed size ``m`` out of ``n``
  records (replace-one neighbours, the relation under which a fixed batch size is well
  defined).  For a Gaussian base the privacy loss distribution of the symmetrised
  pair of Dong, Roth & Su 2019 (Theorem 4.2) with the one-step curve of Balle, Barthe
  & Gaboardi 2018 (Table 1, without replacement) feeds the PLD engine
  (:class:`~dpacct.accountant.laws.symmetrised_law.SymmetrisedLossLaw`,
  ``docs/theory/fixed_size.md``); every base also has the RDP bound of Wang, Balle &
  Kasiviswanathan 2019 (Theorem 9), and the smaller answer wins.  The base mechanism
  must be described for the replace-one relation.

Each transformer checks the relation its theorem is proved for and refuses any other
(:mod:`dpacct.accountant.relations`): a change of relation is an explicit conversion
(:func:`dpacct.mechanisms.replace_one`), never a relabel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._rounding import amplified_pure_up, quotient_down
from ..capabilities import _DeclaredHere
from ..families.gaussian import sigma_below
from ..laws.loss_law import GaussianLossLaw, PoissonSubsampledLossLaw
from ..laws.symmetrised_law import SymmetrisedLossLaw
from ..mechanism import Capabilities, Mechanism
from ..numerics import float_crossing
from ..relations import ADD_REMOVE, REPLACE_ONE, require_relation
from ..validation import check_sample_rate

__all__ = [
    "PoissonSubsampledMechanism",
    "WithoutReplacementSubsampledMechanism",
    "poisson_subsample",
    "subsample_without_replacement",
]


def _subsampled_gaussian_of(mech: PoissonSubsampledMechanism) -> tuple[float, float] | None:
    """``(sample_rate, mu)`` of a Poisson subsampling whose base declares the Gaussian
    pair (:attr:`~dpacct.accountant.mechanism.Mechanism.gaussian_pair`), else None."""
    base = mech.base
    if not type(base).gaussian_pair:
        return None
    mu = base.gdp_mu()
    if mu is None:  # pragma: no cover - a Gaussian pair states its mu
        return None
    return mech.sample_rate, mu


@dataclass(frozen=True, repr=False)
class PoissonSubsampledMechanism(Mechanism):
    """``base`` run on a Poisson subsample with inclusion probability ``sample_rate``.

    Built by :func:`poisson_subsample`; add/remove neighbours.

    Parameters
    ----------
    base : Mechanism
        The mechanism run on the subsample (add/remove neighbouring relation).
    sample_rate : float
        Probability that each record is included, in (0, 1].

    Examples
    --------
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> step = poisson_subsample(GaussianMechanism(sigma=1.0), sample_rate=0.01)
    >>> step
    PoissonSubsampledMechanism(base=GaussianMechanism(sigma=1.0), sample_rate=0.01)
    >>> bool(step.epsilon(1e-5) < GaussianMechanism(sigma=1.0).epsilon(1e-5))
    True
    """

    base: Mechanism
    sample_rate: float

    #: the most a subsampled mechanism can know; :attr:`capabilities` says what the
    #: base allows
    declares = Capabilities(rdp=True, loss_laws=True)
    #: a Poisson subsampling of a base declaring the Gaussian pair is a subsampled
    #: Gaussian (declared by this class alone: a subclass may change the laws)
    _subsampled_gaussian = _DeclaredHere(_subsampled_gaussian_of)

    def __post_init__(self) -> None:
        if not isinstance(self.base, Mechanism):
            raise TypeError(f"base must be a Mechanism, got {type(self.base).__name__}")
        require_relation(self.base, ADD_REMOVE, where="poisson_subsample", why=_POISSON_WHY)
        object.__setattr__(self, "sample_rate", check_sample_rate(self.sample_rate))
        # the base is read through the mechanism that describes it (its ``privacy``)
        object.__setattr__(self, "_view", self.base.privacy)

    @property
    def capabilities(self) -> Capabilities:
        """An RDP curve if the base has one; loss laws if the base's come from loss laws.

        The loss laws are those of the mixture dominating pairs.
        """
        return Capabilities(rdp=self._view.has_rdp, loss_laws=_has_laws(self._view))

    def _pure_epsilon(self) -> float:
        # amplification of pure DP by Poisson subsampling (Balle, Barthe, Gaboardi
        # 2018, Theorem 8): log(1 + q (e^eps - 1))
        eps = self._view._pure_epsilon()
        if not math.isfinite(eps):
            return math.inf
        return amplified_pure_up(self.sample_rate, eps)  # rounded up: it is a cap

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        from ..rdp.subsampled_rdp import poisson_subsampled_rdp, subsampled_gaussian_rdp

        a = np.asarray(alpha, dtype=float)
        base = self._view
        mu = base.gdp_mu()
        if mu is not None:
            # a base declaring Gaussian-DP mu has the Gaussian pair with sigma = 1/mu,
            # taken just below it (a smaller sigma only raises the bound)
            return subsampled_gaussian_rdp(self.sample_rate, sigma_below(mu), a)
        # The general bound sums over every integer order up to alpha, each needing the
        # base curve; above _GENERAL_MAX_ORDER the base curve itself is used instead
        # (subsampling never hurts, so it is a valid, if unamplified, bound).
        out = np.asarray(base._rdp_curve(a), dtype=float).copy()
        low = a <= _GENERAL_MAX_ORDER
        if low.any():
            amplified = poisson_subsampled_rdp(self.sample_rate, base._rdp_curve, a[low])
            out[low] = np.minimum(out[low], amplified)
        # every order is bounded by D_inf, the amplified pure-DP epsilon (if any)
        return np.minimum(out, self._pure_epsilon())

    def _epsilon_upper(self, delta: float, tol: float | None) -> float:
        upper = super()._epsilon_upper(delta, tol)
        if self.has_pld:
            return upper
        # Without a PLD the RDP conversion can be far looser than the base's own curve
        # (e.g. a base known exactly whose optimal Renyi order is beyond the conversion's
        # grid): the amplification of the base's (eps, delta) curve may win.
        return min(upper, _amplified_epsilon(self.base, self.sample_rate, delta, tol))

    def delta(self, epsilon, *, tol: float | None = None):
        """Sound upper bound on delta; see :meth:`Mechanism.delta`.

        Without a PLD, also the amplification route that :meth:`epsilon` uses (Balle,
        Barthe, Gaboardi 2018, Theorem 8): the base at ``eps_b = log(1 + (e^eps - 1)/q)``
        gives ``delta = q delta_base(eps_b)``, so that ``delta(epsilon(d)) <= d``.

        Parameters
        ----------
        epsilon : float or array_like
            Epsilon(s), >= 0.
        tol : float, optional
            Relative accuracy of the PLD route, as in :meth:`Mechanism.epsilon`.

        Examples
        --------
        >>> from dpacct.mechanisms import ExponentialMechanism
        >>> step = poisson_subsample(ExponentialMechanism(epsilon=0.5), 0.05)
        >>> bool(step.delta(step.epsilon(1e-5)) <= 1e-5 * (1 + 1e-9))
        True
        """
        out = super().delta(epsilon, tol=tol)
        if self.has_pld:
            return out
        return _amplified_delta(self.base, self.sample_rate, epsilon, out, tol)

    def _loss_laws(self):
        # kept on the instance: a law is immutable and memoises its spread and tail
        # quantiles (:meth:`PrivacyLossLaw.quantile_bounds`), which every discretisation
        # of this step asks again (a schedule's default, tight and follow passes, each
        # delta query of a ledger: issue 37, session 28)
        cache = self._cache()
        if "sub_laws" not in cache:
            remove, add = self._view._loss_laws()
            q = self.sample_rate
            cache["sub_laws"] = (
                _GridSafeSubsampledLaw(remove, q, "remove"),
                _GridSafeSubsampledLaw(add, q, "add"),
            )
        return cache["sub_laws"]


@dataclass(frozen=True, repr=False)
class WithoutReplacementSubsampledMechanism(Mechanism):
    """``base`` run on a uniformly random batch of ``sample_rate * n`` records.

    The neighbouring relation is replace-one.  Accounted by RDP (Wang, Balle,
    Kasiviswanathan 2019, Theorem 9) for every base, and for a base with the Gaussian
    pair (a Gaussian-DP ``mu``, e.g. :class:`~dpacct.mechanisms.ReplaceOneGaussianMechanism`)
    also by the PLD engine on one symmetric dominating pair per step: the mixture
    ``((1 - q) N(0, 1) + q N(mu, 1), N(0, 1))`` for ``eps >= 0``, mirrored for
    ``eps < 0`` (Balle, Barthe, Gaboardi 2018, Table 1; Dong, Roth, Su 2019,
    Theorem 4.2; :class:`~dpacct.accountant.laws.symmetrised_law.SymmetrisedLossLaw`).
    The composition of that pair is a certified bracket of a pair that *dominates*
    the run; the true epsilon of the run lies between the composed one-directional
    mixture (which a dataset attains) and the upper end.  The smaller of the PLD and
    RDP upper bounds wins.  Built by :func:`subsample_without_replacement`.

    Parameters
    ----------
    base : Mechanism
        The mechanism run on the batch (replace-one neighbouring relation).
    sample_rate : float
        Batch size over dataset size, in (0, 1].

    Examples
    --------
    >>> from dpacct.mechanisms import ReplaceOneGaussianMechanism
    >>> base = ReplaceOneGaussianMechanism(sigma=1.0)
    >>> step = subsample_without_replacement(base, sample_rate=0.01)
    >>> bool(step.epsilon(1e-5) < base.epsilon(1e-5))
    True
    >>> step.route                  # a Gaussian base: the PLD bracket
    'pld'
    >>> lo, hi = step.epsilon_bounds(1e-5)
    >>> bool(lo <= hi == step.epsilon(1e-5))
    True
    """

    base: Mechanism
    sample_rate: float
    neighbouring = REPLACE_ONE

    #: the most it can know; :attr:`capabilities` says what the base allows
    declares = Capabilities(rdp=True, loss_laws=True)

    def __post_init__(self) -> None:
        if not isinstance(self.base, Mechanism):
            raise TypeError(f"base must be a Mechanism, got {type(self.base).__name__}")
        require_relation(
            self.base, REPLACE_ONE, where="subsample_without_replacement", why=_WOR_WHY
        )
        object.__setattr__(self, "sample_rate", check_sample_rate(self.sample_rate))
        object.__setattr__(self, "_view", self.base.privacy)

    @property
    def capabilities(self) -> Capabilities:
        """An RDP curve if the base has one; loss laws if the base has the Gaussian pair.

        Whatever the base declares, epsilon and delta also come from the amplification
        of its (eps, delta) curve.
        """
        return Capabilities(rdp=self._view.has_rdp, loss_laws=self._view.gdp_mu() is not None)

    @property
    def brackets_dominating_pair(self) -> bool:  # type: ignore[override]
        """True with a Gaussian base: the PLD is that of the symmetric pair.

        That pair dominates every step in both orders, and its T-fold composition may
        lie above what any pair of datasets reaches (``docs/theory/fixed_size.md``).
        """
        return self._view.gdp_mu() is not None

    def _loss_laws(self):
        """One symmetric law for both orders (replace-one is symmetric): see
        :class:`~dpacct.accountant.laws.symmetrised_law.SymmetrisedLossLaw` and
        ``docs/theory/fixed_size.md``.

        The base's pair is ``(N(mu, 1), N(0, 1))`` with ``mu`` its Gaussian-DP
        parameter per unit of replace-one sensitivity; sampling a fixed batch of
        rate ``q`` makes the one-step curve at ``eps >= 0`` that of
        ``((1 - q) N(0, 1) + q N(mu, 1), N(0, 1))`` (Balle, Barthe, Gaboardi 2018,
        Table 1: ``delta' = q delta(eps)`` at ``eps' = log(1 + q (e^eps - 1))``).
        """
        cache = self._cache()
        if "wor_law" not in cache:
            mu = self._view.gdp_mu()
            if mu is None:  # pragma: no cover - capabilities exclude it
                raise NotImplementedError(f"{self!r} has no loss law (its base is no Gaussian)")
            half = _GridSafeSubsampledLaw(GaussianLossLaw(mu=mu), self.sample_rate, "remove")
            cache["wor_law"] = SymmetrisedLossLaw(half)
        law = cache["wor_law"]
        return law, law

    def _pure_epsilon(self) -> float:
        # sampling without replacement under substitution (Balle, Barthe, Gaboardi
        # 2018, Table 1): log(1 + q (e^eps - 1)), rounded up (it is a cap)
        eps = self._view._pure_epsilon()
        return amplified_pure_up(self.sample_rate, eps) if math.isfinite(eps) else math.inf

    def _epsilon_upper(self, delta: float, tol: float | None) -> float:
        """The PLD bound (Gaussian base), the RDP bound (Wang, Balle, Kasiviswanathan
        2019) when the base has an RDP curve, and the amplification of the base's own
        curve (Balle, Barthe, Gaboardi 2018, Table 1: without replacement,
        substitution relation: the base's ``(eps, delta')`` gives
        ``(log(1 + q (e^eps - 1)), q delta')``); the smallest wins.  So a base known
        only by its ``delta(eps)``, its pure epsilon or an ``(epsilon, delta)`` pair is
        subsampled too."""
        known = self.has_rdp or self.has_pld
        upper = super()._epsilon_upper(delta, tol) if known else math.inf
        return min(upper, _amplified_epsilon(self.base, self.sample_rate, delta, tol))

    def delta(self, epsilon, *, tol: float | None = None):
        """Sound upper bound on delta: the RDP conversion or the amplification route.

        The amplification of the base's curve is the route :meth:`epsilon` uses; the
        smaller of the two wins.

        Parameters
        ----------
        epsilon : float or array_like
            Epsilon(s), >= 0.
        tol : float, optional
            Relative accuracy of the PLD route, as in :meth:`Mechanism.epsilon`.

        Examples
        --------
        >>> from dpacct.accountant import Mechanism
        >>> local = Mechanism.from_epsilon_delta(1.0, 1e-6, neighbouring="replace-one")
        >>> step = subsample_without_replacement(local, 0.01)
        >>> bool(step.delta(step.epsilon(1e-7)) <= 1e-7 * (1 + 1e-9))
        True
        """
        out = super().delta(epsilon, tol=tol)
        return _amplified_delta(self.base, self.sample_rate, epsilon, out, tol)

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        from ..rdp.subsampled_rdp import subsampled_without_replacement_rdp

        return subsampled_without_replacement_rdp(
            self.sample_rate, self._view._rdp_curve, np.asarray(alpha, dtype=float)
        )


_POISSON_WHY = (
    "amplification by Poisson subsampling is proved for add/remove neighbours with an "
    "add/remove base (Zhu, Dong, Wang 2022, Theorem 11); a local (replace-one) "
    "mechanism such as randomized response has no add/remove guarantee to amplify"
)
_WOR_WHY = (
    "amplification by sampling a fixed-size batch is proved for replace-one neighbours "
    "(Wang, Balle, Kasiviswanathan 2019, Theorem 9); convert the base explicitly, e.g. "
    "dpacct.mechanisms.replace_one(GaussianMechanism(sigma=s)), which is "
    "ReplaceOneGaussianMechanism(sigma=s / 2): replacing a record moves the query by up "
    "to twice its add/remove sensitivity"
)

#: the grid scale of a subsampled law is at least this fraction of its loss range ...
_MIN_SPREAD_FRACTION = 2.0**-20
#: ... measured between these tail quantiles (below every tail budget the engine uses)
_RANGE_TAIL = 1e-20
#: ... and at least this absolute value (see :class:`_GridSafeSubsampledLaw`)
_MIN_SPREAD = 2.0**-30


@dataclass(frozen=True, eq=False)
class _GridSafeSubsampledLaw(PoissonSubsampledLossLaw):
    """A subsampled loss law whose grid scale keeps PLD grids finite and representable.

    The engine picks the first PLD grid step from :meth:`spread` (a power of two below
    ``spread / resolution``, :func:`dpacct.accountant.mechanism.grid_step`).  For a small sample
    rate ``q`` the robust spread of the subsampled loss ``log(1 - q + q e^L)`` is of
    order ``q`` while its range (set by the rare sampled outcomes) stays of order one,
    so the plain spread gives

    * ``q <= 1e-14``: a step below ``2^-53``, for which ``exp(-step)`` rounds to exactly
      ``1.0`` -- the PLD recurrences then divide by ``log(decay) = 0`` or by
      ``e^step - 1 = 0`` (ZeroDivisionError, NaN);
    * ``q = 1e-9`` with ``sigma = 0.3``: ``2e13`` grid points over the range (a 256 GiB
      allocation in the two-scale discretisation of a composition).

    Every grid step gives a *certified* discretisation (pessimistic and optimistic
    alike, see :mod:`dpacct.accountant.pld.grid`): the step only trades tightness for cost.  So the
    scale used here is ``max(spread, range * 2^-20, 2^-30)``: at the default resolution
    the whole range needs at most about ``2^26`` points (the two-scale split then keeps
    its fine window near ``2^16`` points) and the step stays above ``2^-36``, where
    ``e^step - 1`` keeps about 11 significant digits.  Laws with a spread above these
    floors -- every sample rate and noise level of ordinary DP-SGD -- are unchanged.
    """

    def spread(self) -> float:
        base = super().spread()
        lo, hi = self.quantile_bounds(_RANGE_TAIL)
        width = hi - lo if math.isfinite(hi - lo) else 0.0
        return max(base, width * _MIN_SPREAD_FRACTION, _MIN_SPREAD)


#: largest order at which the general (Zhu & Wang) amplification bound is evaluated
_GENERAL_MAX_ORDER = 256.0


def _amplified_epsilon(base: Mechanism, q: float, delta: float, tol: float | None) -> float:
    """``log(1 + q (e^eps_b - 1))`` with ``eps_b`` the base's epsilon at ``delta / q``
    (rounded down, so that ``q`` times it is at most ``delta``): amplification of the
    base's ``(eps, delta)`` curve by Poisson subsampling (add/remove; Balle, Barthe,
    Gaboardi 2018, Theorem 8) and by sampling without replacement (substitution; ibid.,
    Table 1), the same expression.

    At ``delta >= q`` the answer is 0 whatever the base: the two neighbouring inputs
    give the same output unless the differing record is sampled, an event of
    probability at most ``q``, so the pair is ``(0, q)``-DP.

    Examples
    --------
    >>> from dpacct.mechanisms import ZCDPMechanism
    >>> base = ZCDPMechanism(rho=0.5)
    >>> at_q = _amplified_epsilon(base, 1e-3, 1e-3, None)
    >>> below = _amplified_epsilon(base, 1e-3, 1e-4, None)
    >>> at_q, bool(below > 0)
    (0.0, True)
    """
    if delta >= q:
        return 0.0
    eps_base = float(base.epsilon(quotient_down(delta, q), tol=tol))
    if not math.isfinite(eps_base):
        return math.inf
    eps = amplified_pure_up(q, eps_base)
    if base.has_exact_curve and base.gdp_mu() is None:
        # delta() reads the base at this epsilon mapped back and lowered by
        # _BASE_EPS_DOWN (_amplified_delta); a base epsilon exact to the ulp (the Laplace
        # mechanism's closed-form inversion) is then read a few ulps below its crossing,
        # where its delta is above delta / q.  Raised to the smallest float that delta()
        # confirms (a larger epsilon is still a bound), so delta(epsilon(d)) <= d.
        def met(x: float) -> bool:
            return float(_amplified_delta(base, q, x, 1.0, tol)) <= delta

        if not met(eps):
            eps = float_crossing(met, eps)[1]
    return eps


#: relative amount by which the base epsilon ``log(1 + (e^eps - 1) / q)`` is lowered:
#: ``expm1`` and ``log1p`` (numpy's, within four ulps each on AVX-512 CPUs), the
#: division and the product err by at most 18u in all (u = 2^-53), inside 2^-48 (32u),
#: and a larger base epsilon would read a smaller base delta (across a step of the base's
#: curve, 0)
_BASE_EPS_DOWN = 2.0**-48


def _amplified_delta(base: Mechanism, q: float, epsilon, found, tol: float | None):
    """``min(found, q, q delta_base(eps_b))`` with ``eps_b = log(1 + (e^eps - 1) / q)``
    rounded down: the delta that :func:`_amplified_epsilon` inverts, so
    ``delta(epsilon(d)) <= d``, and the ``(0, q)`` guarantee of the sampling itself."""
    eps = np.asarray(epsilon, dtype=float)
    with np.errstate(over="ignore"):
        eps_base = np.log1p(np.expm1(eps) / q) * (1.0 - _BASE_EPS_DOWN)
    eps_base = np.where(np.isfinite(eps_base), eps_base, np.finfo(float).max)
    base_delta = np.asarray(base.delta(eps_base, tol=tol))
    amplified = np.minimum(q, q * base_delta * (1 + 1e-12))
    best = np.minimum(found, amplified)
    return float(best) if np.ndim(found) == 0 else best


def _has_laws(mech: Mechanism) -> bool:
    # a mechanism may declare laws yet decline them (e.g. a discrete Gaussian too wide
    # to enumerate): then its subsampled version has no PLD either
    return mech.capabilities.loss_laws and mech.has_pld


def poisson_subsample(mechanism: Mechanism, sample_rate: float) -> Mechanism:
    """Poisson-subsample ``mechanism``: each record is used with probability ``sample_rate``.

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism run on the sampled batch (e.g. one noisy gradient step).
    sample_rate : float
        Inclusion probability, in (0, 1].  ``1`` returns ``mechanism`` unchanged.

    Returns
    -------
    Mechanism
        The subsampled mechanism (one DP-SGD step for a Gaussian base).

    Examples
    --------
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> from dpacct.accountant import compose
    >>> step = poisson_subsample(GaussianMechanism(sigma=1.1), sample_rate=256 / 60_000)
    >>> run = compose([step], counts=[14_063])
    >>> 2.0 < run.epsilon(delta=1e-5) < 2.6
    True
    """
    q = check_sample_rate(sample_rate)
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a Mechanism, got {type(mechanism).__name__}")
    if q == 1.0:
        return mechanism
    return PoissonSubsampledMechanism(base=mechanism, sample_rate=q)


def subsample_without_replacement(mechanism: Mechanism, sample_rate: float) -> Mechanism:
    """Run ``mechanism`` on a fixed-size batch drawn without replacement.

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism on the batch, described for the replace-one relation.
    sample_rate : float
        Batch size over dataset size, in (0, 1].

    Examples
    --------
    >>> from dpacct.mechanisms import GaussianMechanism, replace_one
    >>> step = subsample_without_replacement(replace_one(GaussianMechanism(sigma=2.0)), 0.1)
    >>> step.base                    # the replace-one sensitivity is twice the add/remove one
    ReplaceOneGaussianMechanism(sigma=1.0)
    >>> step.neighbouring
    'replace-one'
    >>> subsample_without_replacement(GaussianMechanism(sigma=2.0), 0.1)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: subsample_without_replacement needs a mechanism accounted under the ...
    """
    q = check_sample_rate(sample_rate)
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a Mechanism, got {type(mechanism).__name__}")
    return WithoutReplacementSubsampledMechanism(base=mechanism, sample_rate=q)
