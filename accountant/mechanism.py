"""The :class:`Mechanism` base class: one contract, many representations.

Like a ``scipy.stats`` distribution, a mechanism subclass supplies the few primitives
it knows in closed form and the base class derives every public query from them,
choosing the tightest sound route:

============================  ===============================  ====================
hook                          meaning                          declared as
============================  ===============================  ====================
``_delta_exact(eps)``         the exact privacy curve          ``exact_curve=True``
                              delta(eps), vectorised
``_rdp(alpha)``               a Renyi-DP curve (upper bound),  ``rdp=True``
                              vectorised, real alpha
``_loss_laws()``              ``(remove, add)`` privacy-loss   ``loss_laws=True``
                              laws of dominating pairs
``_pld_pair(pess, settings)`` its own (remove, add) PLDs       ``own_pld=True``
``_tradeoff_exact(fpr)``      the exact f-DP trade-off curve,  ``exact_tradeoff=True``
                              rounded down (never above it)
``_gdp_mu()``                 a Gaussian-DP ``mu``: the curves ``gdp=True``
                              are the Gaussian pair's
============================  ===============================  ====================

A subclass *declares* what it knows in a class attribute, ``declares =
Capabilities(rdp=True, ...)``, and implements the matching hooks; a declaration without
its hook, or a hook without its declaration, is a ``TypeError`` when the class is defined,
and so is a class that implements a hook under a declaration it inherits (a subclass that
changes the curves states them anew).  The engine decides every route from
:attr:`Mechanism.capabilities` (the declaration, unless a wrapper describes itself from
its children), never from which methods a class happens to override.  A Gaussian-DP ``mu``
(:meth:`Mechanism.gdp_mu`: the curves are exactly the Gaussian mechanism's with noise
multiplier ``1 / mu``) lets compositions answer in closed form.  A pure epsilon
(``_pure_epsilon``, ``inf`` when none is known) caps every answer; a mechanism known by
nothing else is :meth:`Mechanism.from_pure_epsilon`.  For the common cases no subclass is
needed: ``Mechanism.from_delta_curve``, ``from_rdp``, ``from_loss_laws``,
``from_pure_epsilon``, ``from_epsilon_delta`` and ``from_gdp`` build a mechanism from what
is known.

A loss law must describe a dominating pair in the trade-off sense: its hockey-stick
curve bounds the mechanism's at every *real* epsilon, negative ones included (the
mechanism's pair is a post-processing of it).  The exact pair of a mechanism always
is; the engine relies on it when it reads the add direction off the swapped remove
PLD (:func:`dpacct.accountant.pld.pld_pair.swapped_delta`).

Beside the contract: the router, :mod:`~dpacct.accountant.routes`, answers each query
from the declared capabilities (exact curve, then PLD bracket, then RDP conversion; the
smallest sound bound wins, both neighbouring directions accounted; its docstring holds
the decision table for mechanisms, compositions and ledgers),
:mod:`~dpacct.accountant.pld.pld_settings` holds the grid policy and
:mod:`~dpacct.accountant.mechanism_cache` the per-instance caches and their named
results.  The mechanisms the factories build join a declaration
(:mod:`~dpacct.accountant.declared`, :mod:`~dpacct.accountant.worst_case`) to the
contract at the end of this module.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from . import capabilities, routes
from .bracket import Bracket, bracket_subject
from .capabilities import Capabilities, MissingCapabilityError, check_declaration
from .declared import DeltaCurveDeclaration, LossLawDeclaration, RDPCurveDeclaration
from .families.gaussian_dp import certified_gaussian_delta
from .laws.loss_law import PrivacyLossLaw
from .laws.loss_law_rdp import swapped_loss_law
from .mechanism_cache import instance_cache, pld_key

# the grid policy lives in pld_settings; re-exported for the modules and users of these
from .pld.pld_settings import (  # noqa: F401
    DEFAULT_RESOLUTION,
    DEFAULT_TAIL,
    DEFAULT_TOL,
    FIRST_LEVEL_FRACTION,
    LAW_TAIL_FRACTION,
    MIN_TOL,
    PLDSettings,
    discretize_law,
    grid_step,
    tail_budget,
)
from .pure import pure_epsilon_bounds
from .validation import (
    as_real_array,
    check_alpha,
    check_delta,
    check_epsilon,
    check_flag,
    check_fpr,
    check_tol,
    pure_epsilon_at_zero_delta,
    show_value,
)
from .worst_case import EpsilonDeltaDeclaration, GaussianDPDeclaration, PureEpsilonDeclaration

if TYPE_CHECKING:
    from .pld.grid import GridPLD
    from .pld.pld_pair import PLDPair

__all__ = [
    "Capabilities",
    "DeltaCurveMechanism",
    "EpsilonDeltaMechanism",
    "GaussianDPMechanism",
    "LossLawMechanism",
    "Mechanism",
    "MissingCapabilityError",
    "PLDSettings",
    "PureEpsilonMechanism",
    "RDPCurveMechanism",
]


def _scalar_or_array(values: np.ndarray, like: np.ndarray):
    return float(values) if np.ndim(like) == 0 else values


class Mechanism(capabilities.FamilyDeclarations):
    """A differentially private mechanism described by its privacy curves.

    Sensitivity is normalised to one: each mechanism's parameters are per unit of
    sensitivity (e.g. a Gaussian's ``sigma`` is a noise multiplier).  The neighbouring
    relation is add/remove one record unless a subclass says otherwise.

    Public queries: :meth:`epsilon`, :meth:`delta`, :meth:`epsilon_bounds`,
    :meth:`rdp`, :meth:`tradeoff`, :meth:`pld`.  Subclasses implement any of the
    hooks listed in the module docstring and declare them in ``declares``.

    Examples
    --------
    >>> from dpacct.accountant.families.gaussian import gaussian_delta
    >>> class Curve(Mechanism):
    ...     declares = Capabilities(exact_curve=True)
    ...     def _delta_exact(self, epsilon):
    ...         return gaussian_delta(1.0, epsilon)
    >>> round(Curve().epsilon(1e-5), 4), Curve().route
    (4.3772, 'exact')
    """

    #: human-readable name of the neighbouring relation
    neighbouring = "add/remove"

    #: what this class knows (its hooks); subclasses declare it, see the module docstring
    declares: ClassVar[Capabilities] = Capabilities()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        check_declaration(cls, Mechanism)

    # ------------------------------------------------------------------ hooks
    def _delta_exact(self, epsilon: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _loss_laws(self) -> tuple[PrivacyLossLaw, PrivacyLossLaw]:
        raise NotImplementedError

    def _tradeoff_exact(self, fpr: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _gdp_mu(self) -> float:
        raise NotImplementedError

    def _pure_epsilon(self) -> float:
        """A pure-DP parameter the mechanism satisfies (``inf`` if none is known)."""
        return math.inf

    def _pld_pair(self, pessimistic: bool, settings: PLDSettings) -> tuple[GridPLD, GridPLD]:
        """(remove, add) PLDs discretised from :meth:`_loss_laws` (a class declaring
        ``own_pld`` builds them itself)."""
        remove, add = self._loss_laws()
        out = []
        cache: dict[int, GridPLD] = {}
        for law in (remove, add):
            if id(law) not in cache:
                cache[id(law)] = discretize_law(law, pessimistic, settings)
            out.append(cache[id(law)])
        return out[0], out[1]

    # ------------------------------------------------------------- capabilities
    @property
    def capabilities(self) -> Capabilities:
        """What this mechanism knows: its class's declaration, or for wrappers
        (compositions, subsamplers, algorithms) what their children's allow.

        Examples
        --------
        >>> from dpacct.mechanisms import LaplaceMechanism
        >>> LaplaceMechanism(b=1.0).capabilities.describe()
        'exact_curve, rdp, loss_laws, exact_tradeoff'
        """
        privacy = self.privacy
        return type(self).declares if privacy is self else privacy.capabilities

    #: True for a class whose PLDs are of a pair that only dominates it
    brackets_dominating_pair: ClassVar[bool] = False
    #: the noise attribute a family's curve is a function of (``"sigma"``, ``"b"``),
    #: declared for itself: subclasses do not inherit it (capabilities._DeclaredHere)
    noise_parameter: ClassVar[str | None] = None

    @property
    def bracket_bounds(self) -> str:
        """What :meth:`epsilon_bounds` brackets: ``"mechanism"`` or ``"dominating pair"``.

        See :func:`~dpacct.accountant.bracket.bracket_subject`.
        """
        return bracket_subject(self)

    @property
    def privacy(self) -> Mechanism:
        """The mechanism whose curves describe this one: itself, unless it is
        described by others (an :class:`~dpacct.mechanisms.algorithms.algorithm.Algorithm` is
        described by the composition of the releases it makes).  Every query and
        every wrapper reads the curves of ``privacy``.

        Examples
        --------
        >>> from dpacct.mechanisms import GaussianMechanism, SSP
        >>> g = GaussianMechanism(sigma=1.0)
        >>> g.privacy is g
        True
        >>> SSP(noise_scale=5.0, x_bound=1.0, y_bound=1.0).privacy.route   # 2 Gaussians
        'exact'
        """
        return self

    def gdp_mu(self) -> float | None:
        """The Gaussian-DP ``mu`` this mechanism declares (``gdp=True``), or ``None``.

        A mechanism declaring ``mu`` has exactly the privacy curves of the Gaussian
        mechanism with noise multiplier ``1 / mu`` (Dong, Roth, Su 2019, Definition
        2.7); compositions of such parts are answered in closed form, and their
        Poisson subsampling by the tight subsampled-Gaussian RDP.  Its curve hooks
        must state that pair too (a subclass that changes them must declare anew).

        Examples
        --------
        >>> from dpacct.mechanisms import GaussianMechanism, LaplaceMechanism
        >>> GaussianMechanism(sigma=2.0).gdp_mu(), LaplaceMechanism(b=1.0).gdp_mu()
        (0.5, None)
        """
        privacy = self.privacy
        if privacy is not self:
            return privacy.gdp_mu()
        return float(self._gdp_mu()) if self.capabilities.gdp else None

    @property
    def has_exact_curve(self) -> bool:
        """True if the exact privacy curve is known (no discretisation, no conversion)."""
        return self.capabilities.exact_curve

    @property
    def has_rdp(self) -> bool:
        """True if the mechanism has an RDP curve.

        Declared, or derived from declared loss laws that put no mass at ``+inf``
        (:meth:`_rdp_curve`).
        """
        return self.capabilities.rdp or self._rdp_from_laws()

    def _rdp_from_laws(self) -> bool:
        """True when the Renyi curve is derived from the declared loss laws."""
        caps = self.capabilities
        if caps.rdp or not caps.loss_laws or caps.own_pld:
            return False
        return all(law.inf_mass == 0 for law in self._loss_laws())

    @property
    def has_pld(self) -> bool:
        """True if the mechanism has privacy loss distributions (hence a bracket)."""
        caps = self.capabilities
        return caps.loss_laws or caps.own_pld

    @property
    def route(self) -> str:
        """Which representation answers epsilon/delta queries: exact, pld or rdp."""
        if self.has_exact_curve:
            return "exact"
        if self.has_pld:
            return "pld"
        if self.has_rdp:
            return "rdp"
        return "none"

    def _lacking(self, query: str, need: str = "any") -> str:
        """Message for a query the capabilities cannot answer
        (:func:`~dpacct.accountant.capabilities.lacking_message`; wrappers name their parts)."""
        return capabilities.lacking_message(self, query, need)

    @property
    def pure_epsilon(self) -> float:
        """The pure (delta = 0) epsilon this mechanism is known to satisfy, else ``inf``.

        Every ``epsilon(delta)`` answer is capped by it and ``delta(epsilon) = 0`` from
        it on: a discretised or converted curve can never report more than the
        pure-DP guarantee (for compositions, the sum of the parts').

        Examples
        --------
        >>> from dpacct.mechanisms import GaussianMechanism, LaplaceMechanism
        >>> from dpacct.accountant import compose
        >>> compose([LaplaceMechanism(b=4.0)], counts=[3]).pure_epsilon
        0.75
        >>> GaussianMechanism(sigma=1.0).pure_epsilon
        inf
        """
        if self.privacy is not self:
            return self.privacy.pure_epsilon
        return float(self._pure_epsilon())

    # ------------------------------------------------------------------ caches
    def _cache(self) -> dict:
        """This instance's cache (:func:`~dpacct.accountant.mechanism_cache.instance_cache`)."""
        return instance_cache(self)

    def pld(self, *, pessimistic: bool = True, tol: float | None = None) -> tuple[GridPLD, GridPLD]:
        """The (remove, add) privacy loss distributions on a grid.

        Parameters
        ----------
        pessimistic : bool
            True for the upper-bound discretisation, False for the lower bound.
        tol : float, optional
            Relative accuracy wanted on epsilon (default 1e-4).

        Examples
        --------
        >>> from dpacct.mechanisms import GaussianMechanism
        >>> remove, add = GaussianMechanism(sigma=2.0).pld()
        >>> bool(remove.delta(0.5) >= GaussianMechanism(sigma=2.0).delta(0.5))
        True
        """
        if self.privacy is not self:
            return self.privacy.pld(pessimistic=pessimistic, tol=tol)
        if not self.has_pld:
            raise NotImplementedError(f"{self!r} has no privacy loss distribution")
        pessimistic = check_flag("pessimistic", pessimistic)
        settings = PLDSettings(tol)
        return self._pld_cached(bool(pessimistic), settings)

    def _directions_equal(self) -> bool:
        """True when both neighbouring directions have one and the same loss law."""
        caps = self.capabilities
        if not caps.loss_laws or caps.own_pld:
            return False
        remove, add = self._loss_laws()
        return remove is add

    def _swap_bounds_add(self) -> bool:
        """True when the swapped pessimistic remove PLD bounds the add direction.

        That holds when the remove PLD is a certified (connect-the-dots)
        discretisation of a loss law, or a composition of such: a loss law dominates
        at every real epsilon (the contract in the module docstring) and so do its
        certified discretisations
        (:func:`~dpacct.accountant.pld.pld_pair.swapped_delta`).  Mechanisms that
        build their own PLDs do not claim it.
        """
        caps = self.capabilities
        return caps.loss_laws and not caps.own_pld

    def _pld_one(self, pessimistic: bool, settings: PLDSettings, which: int) -> GridPLD:
        """One direction of the PLD pair (0 remove, 1 add)."""
        return self._pld_cached(pessimistic, settings)[which]

    def _pair(
        self, pessimistic: bool, settings: PLDSettings, coarse: PLDSettings | None = None
    ) -> PLDPair:
        """The PLD pair on ``settings`` (a representation; the router reads it), its add
        direction composed on demand (on ``coarse`` for :meth:`PLDPair.epsilon`'s first try)."""

        def load(use_coarse: bool) -> GridPLD:
            return self._pld_one(pessimistic, (coarse or settings) if use_coarse else settings, 1)

        from .pld.pld_pair import PLDPair  # (the PLD engine loads on a PLD route: issue 37)

        remove = self._pld_one(pessimistic, settings, 0)
        swap = pessimistic and self._swap_bounds_add()
        return PLDPair(remove, None, self._directions_equal(), swap, load)

    def _pld_cached(self, pessimistic: bool, settings: PLDSettings) -> tuple[GridPLD, GridPLD]:
        key, cache = pld_key(pessimistic, settings), self._cache()
        if key not in cache:
            cache[key] = self._pld_pair(pessimistic, settings)
        return cache[key]

    # ------------------------------------------------------------------ queries
    def delta(self, epsilon, *, tol: float | None = None):
        """Sound upper bound on delta at ``epsilon`` (scalar or array).

        Parameters
        ----------
        epsilon : float or array_like
            Privacy parameter(s), >= 0.
        tol : float, optional
            Relative accuracy wanted from the privacy-loss-distribution route, in
            (0, 0.5); default 1e-4.  Smaller is tighter and slower.  Exact curves
            ignore it.

        Returns
        -------
        float or numpy.ndarray
            delta(epsilon), shaped like ``epsilon``.

        Raises
        ------
        ValueError
            ``epsilon`` negative, NaN or infinite.

        Examples
        --------
        >>> from dpacct.mechanisms import GaussianMechanism
        >>> round(GaussianMechanism(sigma=1.0).delta(1.0), 6)
        0.126937
        """
        if self.privacy is not self:
            return self.privacy.delta(epsilon, tol=tol)
        check_tol(tol)
        eps_arr = as_real_array("epsilon", epsilon)
        if eps_arr.size > 1:
            check_epsilon(float(np.min(eps_arr)))  # NaN and negatives in one check
            if np.isnan(eps_arr).any() or np.isinf(eps_arr).any():
                raise ValueError(f"epsilon must lie in [0, inf), got {show_value(epsilon)}")
            flat = eps_arr.reshape(-1).astype(float)
        else:
            flat = np.array([check_epsilon(e) for e in eps_arr.reshape(-1)])
        if flat.size == 0:  # nothing asked: an empty answer of the same shape (review 44)
            return np.zeros(eps_arr.shape)
        if self.has_exact_curve:
            mu = self.gdp_mu()
            if mu is None:
                out = np.clip(self._delta_exact(flat), 0.0, 1.0)
            else:  # the float Gaussian curve cancels at small mu: at 50 digits
                out = certified_gaussian_delta(float(mu), flat)
        else:
            out = routes.derived_delta(self, flat, tol)
        # pure DP: no delta at or beyond the pure epsilon; below it an underflow to 0
        # reads 5e-324, the float above any positive truth (review 41's fuzz: from_rdp)
        out = np.where(flat >= self._pure_epsilon(), 0.0, np.maximum(out, 5e-324))
        return _scalar_or_array(out.reshape(eps_arr.shape), eps_arr)

    def epsilon(self, delta, *, tol: float | None = None):
        """Smallest epsilon this library can prove at ``delta``: a sound upper bound.

        The route is the tightest available: the exact curve, else the pessimistic
        privacy loss distribution, else the RDP conversion; when both of the latter
        exist the smaller bound wins.

        Parameters
        ----------
        delta : float or array_like
            Target delta(s) in [0, 1).  ``delta = 0`` asks for pure DP: the answer is
            :attr:`pure_epsilon`, and a mechanism without one raises.
        tol : float, optional
            Relative accuracy wanted from the privacy-loss-distribution route, in
            (0, 0.5); default 1e-4.  Larger is faster, smaller tighter.  Tolerances
            below 3e-7 are answered as 3e-7 (the float64 grids' limit).

        Returns
        -------
        float or numpy.ndarray
            epsilon(delta), shaped like ``delta``; ``inf`` if no finite epsilon can be
            certified at this delta.

        Raises
        ------
        ValueError
            ``delta`` outside [0, 1) or NaN; ``delta = 0`` for a mechanism without a
            :attr:`pure_epsilon`; ``tol`` outside (0, 0.5).

        Examples
        --------
        >>> from dpacct.mechanisms import GaussianMechanism
        >>> round(GaussianMechanism(sigma=1.0).epsilon(1e-5), 4)
        4.3772
        """
        if self.privacy is not self:
            return self.privacy.epsilon(delta, tol=tol)
        check_tol(tol)
        d_arr = as_real_array("delta", delta)
        flat = [check_delta(d, allow_zero=True) for d in d_arr.reshape(-1)]
        out = np.array(
            [self._epsilon_upper(d, tol) if d else pure_epsilon_at_zero_delta(self) for d in flat]
        )
        return _scalar_or_array(out.reshape(d_arr.shape), d_arr)

    def _epsilon_upper(self, delta: float, tol: float | None) -> float:
        """The certified upper bound at one delta > 0 (the router's)."""
        return routes.epsilon_upper(self, delta, tol)

    def epsilon_bounds(self, delta: float, *, tol: float | None = None) -> Bracket:
        """A certified bracket ``(lower, upper)`` of epsilon at ``delta``.

        For exact curves the bracket is the numerical inversion interval; for PLDs it comes
        from the optimistic and pessimistic discretisations; with only an RDP curve the lower
        end is 0 (RDP gives no lower bound).  ``delta = 0`` brackets the pure epsilon
        (:func:`~dpacct.accountant.pure.pure_epsilon_bounds`).  The result is an immutable
        :class:`~dpacct.accountant.bracket.Bracket` (a 2-tuple, kept like :meth:`epsilon`'s)
        whose ``bounds`` says what it brackets: ``"mechanism"`` -- the true epsilon is inside
        -- or ``"dominating pair"`` (:attr:`bracket_bounds`, e.g. truncated Poisson): then
        only ``upper`` bounds the mechanism, ``lower`` bounds the pair's epsilon.

        Parameters
        ----------
        delta : float
            Target delta, in (0, 1).
        tol : float, optional
            Relative accuracy of the PLD route, as in :meth:`epsilon`.

        Examples
        --------
        >>> from dpacct.mechanisms import LaplaceMechanism
        >>> from dpacct.accountant import compose
        >>> lo, hi = compose([LaplaceMechanism(b=10.0)], counts=[100]).epsilon_bounds(1e-6)
        >>> bool(0 < lo <= hi < 1.003 * lo)
        True
        >>> LaplaceMechanism(b=4.0).epsilon_bounds(0)[1]
        0.25
        """
        if self.privacy is not self:
            return self.privacy.epsilon_bounds(delta, tol=tol)
        d, tol = check_delta(delta, allow_zero=True), check_tol(tol)
        key, cache = ("eps_bounds", d, tol), self._cache()  # keyed as epsilon's ("eps_up")
        if key not in cache:
            lo, hi = pure_epsilon_bounds(self, tol) if d == 0 else self._epsilon_bounds(d, tol)
            cache[key] = Bracket(lo, hi, self.bracket_bounds)
        return cache[key]

    def _epsilon_bounds(self, delta: float, tol: float | None) -> tuple[float, float]:
        """The certified bracket at one delta > 0 (the router's)."""
        return routes.epsilon_bracket(self, delta, tol)

    def _rdp_curve(self, alpha: np.ndarray) -> np.ndarray:
        """The declared Renyi curve, else the loss laws' (the router's)."""
        return routes.rdp_curve(self, alpha)

    def rdp(self, alpha):
        """Renyi-DP epsilon at order(s) ``alpha`` (real, > 1), vectorised.

        Without a declared curve it is derived: from the declared loss laws
        (:func:`~dpacct.accountant.laws.loss_law_rdp.loss_law_rdp`), else from the pessimistic
        PLD (an upper bound by the data-processing inequality); a derivation that
        can only give ``inf`` raises :class:`MissingCapabilityError` instead.

        Parameters
        ----------
        alpha : float or array_like
            Renyi order(s), real and > 1.

        Examples
        --------
        >>> from dpacct.mechanisms import GaussianMechanism
        >>> GaussianMechanism(sigma=2.0).rdp([2, 4.5])
        array([0.25  , 0.5625])
        """
        if self.privacy is not self:
            return self.privacy.rdp(alpha)
        a = check_alpha(alpha)
        out = routes.derived_rdp(self, a.reshape(-1))
        out = np.asarray(out, dtype=float).reshape(a.shape)
        return _scalar_or_array(out, a)

    def tradeoff(self, fpr, *, tol: float | None = None):
        """f-DP trade-off curve: a lower bound on the type II error at type I ``fpr``.

        Uses the exact curve when known, rounded down by its float error (so never above
        the true curve; docs/theory/fdp.md, "Closed-form trade-off curves, rounded
        down").  A mechanism accounted by its PLDs gets the
        Neyman-Pearson curve of the pessimistic PLDs' dominating pair, which is the
        lower end of :func:`~dpacct.accountant.queries.attack_risk.tradeoff_bounds` at the
        same ``tol``.  Otherwise the dual of the (eps, delta) curve (Dong, Roth, Su
        2022, Proposition 2.12):
        ``beta(a) >= max_eps max(0, 1 - delta(eps) - e^eps a, e^-eps (1 - delta(eps) - a))``
        over a grid of epsilons, which is a valid (conservative) lower bound.

        Parameters
        ----------
        fpr : float or array_like
            False-positive rate(s) ``alpha`` in [0, 1].
        tol : float, optional
            Relative accuracy of the privacy-loss-distribution route, in (0, 0.5);
            default 1e-4.  Closed forms ignore it.

        Returns
        -------
        float or numpy.ndarray
            The safe-side ``beta(fpr)`` (never above the true curve), shaped like ``fpr``.

        Examples
        --------
        >>> from dpacct.mechanisms import GaussianMechanism
        >>> round(float(GaussianMechanism(sigma=1.0).tradeoff(0.05)), 4)
        0.7405
        """
        if self.privacy is not self:
            return self.privacy.tradeoff(fpr, tol=tol)
        a = check_fpr(fpr)
        check_tol(tol)
        out = routes.tradeoff_curve(self, a.reshape(-1), tol)
        return _scalar_or_array(np.clip(out, 0.0, 1.0).reshape(a.shape), a)

    # ------------------------------------------------------- declared capabilities
    # A new mechanism states one thing it knows; the engine derives the rest (see
    # :mod:`dpacct.accountant.families.custom` for what each route supports and proves).

    @staticmethod
    def from_delta_curve(delta_curve, *, name: str, neighbouring: str = "add/remove",
                         delta_down=None):
        """A mechanism known by its exact privacy curve ``delta(eps)``
        (:func:`~dpacct.accountant.families.custom.mechanism_from_delta_curve`).

        Parameters
        ----------
        delta_curve : callable
            ``eps -> delta(eps)`` for ``eps >= 0``: exact, or a privacy curve above it.
        name : str
            A label for messages and the repr.
        neighbouring : str, default "add/remove"
            ``ADD_REMOVE`` or ``REPLACE_ONE``.
        delta_down : callable, optional
            ``eps -> `` a value never above the true ``delta(eps)`` (the curve rounded
            down): ``epsilon_bounds``' lower end is then certified.  Without it that end
            is where ``delta_curve`` as computed crosses (DeltaCurveDeclaration).

        Examples
        --------
        >>> import numpy as np
        >>> m = Mechanism.from_delta_curve(lambda e: np.maximum(0.0, 1 - np.exp((e - 1) / 2)),
        ...                                name="laplace b=1")
        >>> round(m.epsilon(1e-3), 6)        # Laplace(b=1): 1 + 2 log(1 - delta)
        0.997999
        """
        return DeltaCurveMechanism(delta_curve=delta_curve, name=name, neighbouring=neighbouring,
                                   delta_down=delta_down)

    @staticmethod
    def from_rdp(rdp, *, name: str = "rdp", pure_epsilon=None, neighbouring: str = "add/remove"):
        """A mechanism known by a Renyi-DP curve
        (:func:`~dpacct.accountant.families.custom.mechanism_from_rdp`).

        Parameters
        ----------
        rdp : callable
            ``alpha -> eps_alpha`` for real ``alpha > 1``.
        name : str, default "rdp"
            A label for messages and the repr.
        pure_epsilon : float, optional
            A pure-DP epsilon the mechanism also satisfies (caps every answer).
        neighbouring : str, default "add/remove"
            ``ADD_REMOVE`` or ``REPLACE_ONE``.

        Examples
        --------
        >>> m = Mechanism.from_rdp(lambda a: a / 2.0, name="gaussian sigma=1")
        >>> round(m.epsilon(1e-5), 4)        # the RDP conversion of alpha / 2
        4.7284
        """
        return RDPCurveMechanism(
            rdp_curve=rdp, name=name, epsilon_pure=pure_epsilon, neighbouring=neighbouring
        )

    @staticmethod
    def from_loss_laws(remove, add=None, *, name=None, neighbouring: str = "add/remove"):
        """A mechanism known by the privacy-loss laws of its dominating pairs
        (:func:`~dpacct.accountant.families.custom.mechanism_from_loss_laws`).

        Parameters
        ----------
        remove, add : PrivacyLossLaw
            Laws of the dominating pairs' privacy loss, one per direction; ``add``
            defaults to the swapped ``remove`` pair.
        name : str, optional
            A label for messages and the repr.
        neighbouring : str, default "add/remove"
            ``ADD_REMOVE`` or ``REPLACE_ONE``.

        Examples
        --------
        >>> from dpacct.accountant.laws.loss_law import GaussianLossLaw
        >>> m = Mechanism.from_loss_laws(GaussianLossLaw(mu=1.0))
        >>> round(m.epsilon(1e-5), 3)        # 1-GDP
        4.377
        """
        if add is None:
            add = swapped_loss_law(remove) if isinstance(remove, PrivacyLossLaw) else remove
        return LossLawMechanism(remove=remove, add=add, name=name, neighbouring=neighbouring)

    @staticmethod
    def from_pure_epsilon(epsilon: float, *, neighbouring: str = "add/remove"):
        """A pure ``epsilon``-DP mechanism
        (:func:`~dpacct.accountant.families.custom.mechanism_from_pure_epsilon`).

        Parameters
        ----------
        epsilon : float
            The pure-DP epsilon, >= 0.
        neighbouring : str, default "add/remove"
            ``ADD_REMOVE`` or ``REPLACE_ONE``.

        Examples
        --------
        >>> Mechanism.from_pure_epsilon(0.5).pure_epsilon
        0.5
        """
        return PureEpsilonMechanism(epsilon0=epsilon, neighbouring=neighbouring)

    @staticmethod
    def from_gdp(mu: float, *, neighbouring: str = "add/remove"):
        """A mechanism known to be ``mu``-GDP
        (:func:`~dpacct.accountant.families.custom.mechanism_from_gdp`).

        Parameters
        ----------
        mu : float
            The Gaussian-DP parameter, > 0.
        neighbouring : str, default "add/remove"
            ``ADD_REMOVE`` or ``REPLACE_ONE``.

        Examples
        --------
        >>> round(Mechanism.from_gdp(1.0).epsilon(1e-5), 4)
        4.3772
        """
        return GaussianDPMechanism(mu=mu, neighbouring=neighbouring)

    @staticmethod
    def from_epsilon_delta(epsilon: float, delta: float, *, neighbouring: str = "add/remove"):
        """A mechanism known only to be ``(epsilon, delta)``-DP
        (:func:`~dpacct.accountant.families.custom.mechanism_from_epsilon_delta`).

        Parameters
        ----------
        epsilon : float
            >= 0.
        delta : float
            In [0, 1); 0 is pure DP.
        neighbouring : str, default "add/remove"
            ``ADD_REMOVE`` or ``REPLACE_ONE``.

        Examples
        --------
        >>> m = Mechanism.from_epsilon_delta(1.0, 1e-6)
        >>> float(m.delta(1.0))
        1e-06
        """
        return EpsilonDeltaMechanism(epsilon0=epsilon, delta0=delta, neighbouring=neighbouring)

    # ------------------------------------------------------------------ misc
    def __repr__(self) -> str:
        fields = getattr(self, "__dataclass_fields__", {})
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in fields if not k.startswith("_"))
        return f"{type(self).__name__}({args})"


# ----------------------------------------------------------------------------------
# the mechanisms the factories build: each joins a declaration (what was stated, and
# the hooks that follow from it; dpacct.accountant.declared / worst_case) to the
# contract.  They are defined here so that the dependency runs one way: the
# declarations import no mechanism, and the contract's factories need no later module.
# ----------------------------------------------------------------------------------
class DeltaCurveMechanism(DeltaCurveDeclaration, Mechanism):
    """A mechanism declared by its exact ``delta(eps)`` (:meth:`Mechanism.from_delta_curve`)."""


class RDPCurveMechanism(RDPCurveDeclaration, Mechanism):
    """A mechanism declared by a Renyi-DP curve (:meth:`Mechanism.from_rdp`)."""


class LossLawMechanism(LossLawDeclaration, Mechanism):
    """A mechanism declared by privacy-loss laws (:meth:`Mechanism.from_loss_laws`)."""


class PureEpsilonMechanism(PureEpsilonDeclaration, Mechanism):
    """Any pure ``epsilon``-DP mechanism (:meth:`Mechanism.from_pure_epsilon`)."""


class GaussianDPMechanism(GaussianDPDeclaration, Mechanism):
    """Any ``mu``-GDP mechanism (:meth:`Mechanism.from_gdp`).

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


class EpsilonDeltaMechanism(EpsilonDeltaDeclaration, Mechanism):
    """Any ``(epsilon, delta)``-DP mechanism (:meth:`Mechanism.from_epsilon_delta`)."""
