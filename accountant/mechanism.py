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
``_tradeoff_exact(fpr)``      the exact f-DP trade-off curve   ``exact_tradeoff=True``
``_gdp_mu()``                 a Gaussian-DP ``mu``: the curves ``gdp=True``
                              are the Gaussian pair's
============================  ===============================  ====================

A subclass *declares* what it knows in a class attribute, ``declares =
Capabilities(rdp=True, ...)``, and implements the matching hooks; a declaration
without its hook, or a hook without its declaration, is a ``TypeError`` when the
class is defined, and so is a class that implements a hook under a declaration it
inherits (a subclass that changes the curves states them anew).  The engine decides
every route from :attr:`Mechanism.capabilities` (the declaration, unless a wrapper
describes itself from its children), never from which methods a class happens to
override.  A Gaussian-DP ``mu`` (:meth:`Mechanism.gdp_mu`: the curves are exactly the
Gaussian mechanism's with noise multiplier ``1 / mu``) lets compositions answer in
closed form.  A pure epsilon (``_pure_epsilon``, ``inf`` when none is known) caps
every answer; a mechanism known by nothing else is
:meth:`Mechanism.from_pure_epsilon`.  For the common cases no subclass is needed:
``Mechanism.from_delta_curve``, ``from_rdp``, ``from_loss_laws``,
``from_pure_epsilon``, ``from_epsilon_delta`` and ``from_gdp`` build a mechanism from
what is known.

A loss law must describe a dominating pair in the trade-off sense: its hockey-stick
curve bounds the mechanism's at every *real* epsilon, negative ones included (the
mechanism's pair is a post-processing of it).  The exact pair of a mechanism always
is; the engine relies on it when it reads the add direction off the swapped remove
PLD (:meth:`dpacct.accountant.pld.GridPLD.swapped_delta_bound`).

Routes, in order of preference: the exact curve; the privacy loss distribution (PLD)
built from the loss laws (pessimistic and optimistic discretisations give a certified
bracket); the RDP conversion.  When several sound upper bounds exist the smallest wins.
Both neighbouring directions (add and remove) are accounted and the worse is reported.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from functools import partial
from types import MappingProxyType
from typing import ClassVar

import numpy as np

from .loss_law import PrivacyLossLaw
from .numerics import TINY, invert_decreasing
from .pld import MAX_GRID, GridPLD, discretize
from .pld_pair import PLDPair
from .rdp import rdp_to_delta, rdp_to_delta_grid, rdp_to_epsilon
from .tradeoff import pld_route, pld_tradeoff_lower, tradeoff_from_delta
from .twoscale import discretize_split
from .validation import (
    as_real_array,
    check_alpha,
    check_delta,
    check_epsilon,
    check_flag,
    check_fpr,
    check_probability,
    check_tol,
    pure_epsilon_at_zero_delta,
    show_value,
)

__all__ = ["Capabilities", "Mechanism", "MissingCapabilityError", "PLDSettings"]

#: default grid points per robust standard deviation of the privacy loss.  Grid steps
#: are powers of two, so this acts through thresholds: 320 is the smallest value at
#: which the default upper bounds of the DP-SGD benchmarks are at least as tight as
#: dp_accounting's default PLD accountant (256 left q = 0.01 1.5e-6 relative above
#: it), at under 0.05 s each (``python -m benchmarks.run``)
DEFAULT_RESOLUTION = 320.0
#: an answer epsilon within this many grid steps of zero has its PLDs recomputed on
#: grids capped at ``epsilon / CAP_STEPS`` (see :meth:`Mechanism._pld_upper`), at most
#: ``MAX_REFINEMENTS`` times
REFINE_STEPS = 32.0
CAP_STEPS = 64.0
MAX_REFINEMENTS = 3
#: no grid is refined below this step (``e^step - 1`` keeps about 11 digits; see
#: :class:`dpacct.accountant.subsample._GridSafeSubsampledLaw`)
MIN_CAP = 2.0**-36
#: default relative tolerance the resolution is tuned for (measured brackets on the
#: DP-SGD benchmarks are 1e-5 to 3e-5 relative at this resolution)
DEFAULT_TOL = 1e-4
#: smallest tolerance the grids follow (see :class:`PLDSettings`)
MIN_TOL = 3e-7
#: probability mass the PLD tail cuts may move in total, when no target delta is known
DEFAULT_TAIL = 1e-14
#: share of a PLD's tail budget that the discretisation of one law may cut (the rest
#: goes to the compositions that follow it)
LAW_TAIL_FRACTION = 1e-3
#: the RDP route is skipped when the PLD's truncated mass is below this share of delta
#: (the PLD bound is then within its bracket of the truth, and RDP is never tighter)
RDP_SKIP_MASS_FRACTION = 1e-3
#: delta() also reads the grids epsilon() would use for the delta it finds (see
#: :meth:`Mechanism._pld_delta_follow`) for at most this many epsilons per call (a
#: curve of hundreds of points, as for the trade-off, keeps the default grids), and
#: follows the answer at most this many rounds
FOLLOW_MAX_POINTS = 8
FOLLOW_ROUNDS = 3


class PLDSettings:
    """Grid settings derived from a requested relative tolerance on epsilon.

    The discretisation error of both PLD bounds shrinks like the square of the grid
    step, so the resolution (grid points per standard deviation of the loss) grows
    like ``1/sqrt(tol)``, up to ``MIN_TOL``: below it the grids would outgrow the
    two-scale size guards, which then widen the coarse tail and loosen the bounds
    (measured: q = 0.01 DP-SGD at tol 3e-8 gave a bracket 4x wider than at 3e-7), so
    smaller tolerances are answered as ``MIN_TOL``.

    Parameters
    ----------
    tol : float, optional
        Relative accuracy wanted on epsilon, in (0, 0.5); None: ``DEFAULT_TOL``.
    delta : float, optional
        The target delta, which sets the mass the tail cuts may move
        (:func:`tail_budget`); None: ``DEFAULT_TAIL``.

    Examples
    --------
    >>> PLDSettings(tol=1e-3).resolution < PLDSettings(tol=1e-5).resolution
    True
    """

    __slots__ = ("coarse_cap", "first_fraction", "resolution", "tail")

    def __init__(self, tol: float | None = None, delta: float | None = None) -> None:
        tol = check_tol(tol)
        if tol is not None:
            tol = max(tol, MIN_TOL)
        scale = math.sqrt(DEFAULT_TOL / (tol or DEFAULT_TOL))
        self.resolution = max(DEFAULT_RESOLUTION * scale, 16.0)
        # tighter tolerances also cut less mass into delta (the default budget alone
        # moves epsilon by a few 1e-6 relative)
        self.tail = tail_budget(delta) * min(1.0, (tol or DEFAULT_TOL) / DEFAULT_TOL)
        #: largest step any grid may use (``None``: chosen from the loss's spread alone);
        #: set by :meth:`capped` when an answer turns out small next to the grid
        self.coarse_cap: float | None = None
        #: fraction of the resolution the first optimistic discretisation uses
        #: (``None``: ``FIRST_LEVEL_FRACTION``); see :meth:`Mechanism._epsilon_bounds`
        self.first_fraction: float | None = None

    def key(self) -> tuple[float, float, float | None, float | None]:
        """A hashable summary of the settings, for caching PLDs built with them."""
        return (round(self.resolution, 6), self.tail, self.coarse_cap, self.first_fraction)

    def copy(self) -> PLDSettings:
        """A copy of every field."""
        out = PLDSettings.__new__(PLDSettings)
        for name in PLDSettings.__slots__:
            setattr(out, name, getattr(self, name))
        return out

    def capped(self, cap: float) -> PLDSettings:
        """A copy whose grids never use a step above ``cap`` (rounded down to a power of two).

        Parameters
        ----------
        cap : float
            Largest grid step, > 0.
        """
        out = self.copy()
        out.coarse_cap = 2.0 ** math.floor(math.log2(cap))
        return out

    def with_first_fraction(self, fraction: float) -> PLDSettings:
        """A copy whose first optimistic discretisation uses a fraction of the resolution.

        Parameters
        ----------
        fraction : float
            Fraction of the resolution, > 0 (instead of
            ``FIRST_LEVEL_FRACTION``).
        """
        out = self.copy()
        out.first_fraction = fraction
        return out

    def resolution_for(self, pessimistic: bool) -> float:
        """Points per spread for one certificate direction.

        The optimistic construction loses more per coarsening than the pessimistic
        one, so a loose tolerance never takes it below the default resolution: the
        bracket stays narrow while the upper bound (the answer) gets faster.

        Parameters
        ----------
        pessimistic : bool
            True for the upper-bound (pessimistic) discretisation, False for the
            lower-bound one.
        """
        if pessimistic:
            return self.resolution
        return max(self.resolution, DEFAULT_RESOLUTION)


def tail_budget(delta: float | None) -> float:
    """Total mass the PLD tail cuts may move: a millionth of the target delta.

    Rounded down to a power of ten (so that nearby deltas share one cached PLD) and
    kept within [1e-16, 1e-12]; without a target delta it is ``DEFAULT_TAIL``.  (A
    ten-thousandth moved the 10^6-step DP-SGD bound by 4e-6 relative.  This budget
    is for the top cuts, whose mass goes to +inf; bottom cuts get a hundred times
    more, see :meth:`GridPLD.convolve`, which keeps the cost about unchanged.)
    """
    if delta is None:
        return DEFAULT_TAIL
    delta = check_probability("delta", delta, high_open=False)
    exponent = math.floor(math.log10(delta * 1e-6))
    return 10.0 ** min(max(exponent, -16), -12)


def _scalar_or_array(values: np.ndarray, like: np.ndarray):
    return float(values) if np.ndim(like) == 0 else values


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """What a mechanism knows in closed form: one flag per hook (module docstring).

    Parameters
    ----------
    exact_curve : bool, default False
        The exact privacy curve ``delta(eps)`` (hook ``_delta_exact``).
    rdp : bool, default False
        A Renyi-DP curve (``_rdp``).
    loss_laws : bool, default False
        Privacy-loss laws of dominating pairs (``_loss_laws``).
    own_pld : bool, default False
        Its own discretised PLD pair (``_pld_pair``).
    exact_tradeoff : bool, default False
        The exact f-DP trade-off curve (``_tradeoff_exact``).
    gdp : bool, default False
        A Gaussian-DP ``mu`` (``_gdp_mu``).

    Examples
    --------
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> GaussianMechanism(sigma=1.0).capabilities.exact_curve
    True
    >>> Capabilities(rdp=True).describe()
    'rdp'
    """

    exact_curve: bool = False
    rdp: bool = False
    loss_laws: bool = False
    own_pld: bool = False
    exact_tradeoff: bool = False
    gdp: bool = False

    #: flag -> the hook that implements it (read-only)
    HOOKS: ClassVar[Mapping[str, str]] = MappingProxyType(
        {
            "exact_curve": "_delta_exact",
            "rdp": "_rdp",
            "loss_laws": "_loss_laws",
            "own_pld": "_pld_pair",
            "exact_tradeoff": "_tradeoff_exact",
            "gdp": "_gdp_mu",
        }
    )

    def describe(self) -> str:
        """The declared flags, comma-separated (``'none'`` if there are none)."""
        names = [f.name for f in dataclasses.fields(self) if getattr(self, f.name)]
        return ", ".join(names) or "none"


class MissingCapabilityError(NotImplementedError):
    """A query that a mechanism's declared capabilities cannot answer soundly.

    The message names the mechanism (or, for a wrapper, the part), the query, what it
    declared and what it would need to declare.

    Examples
    --------
    >>> m = Mechanism.from_epsilon_delta(1.0, 1e-6)
    >>> try:
    ...     m.rdp(2.0)
    ... except MissingCapabilityError as exc:
    ...     print(str(exc)[:58])
    EpsilonDeltaMechanism(epsilon=1.0, delta=1e-06) has no Ren
    """


def _defines(cls: type, hook: str) -> bool:
    """True if a class below :class:`Mechanism` in ``cls``'s MRO defines ``hook``."""
    return any(hook in vars(k) for k in cls.__mro__ if k is not Mechanism and k is not object)


def _implements(cls: type, hook: str) -> bool:
    """True if ``cls`` itself, or a mixin it adds (a base that is not a mechanism),
    defines ``hook``."""
    return hook in vars(cls) or any(
        hook in vars(k)
        for k in cls.__mro__[1:]
        if k is not object and not (isinstance(k, type) and issubclass(k, Mechanism))
    )


class Mechanism:
    """A differentially private mechanism described by its privacy curves.

    Sensitivity is normalised to one: each mechanism's parameters are per unit of
    sensitivity (e.g. a Gaussian's ``sigma`` is a noise multiplier).  The neighbouring
    relation is add/remove one record unless a subclass says otherwise.

    Public queries: :meth:`epsilon`, :meth:`delta`, :meth:`epsilon_bounds`,
    :meth:`rdp`, :meth:`tradeoff`, :meth:`pld`.  Subclasses implement any of the
    hooks listed in the module docstring and declare them in ``declares``.

    Examples
    --------
    >>> from dpacct.accountant.gaussian import gaussian_delta
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
        declared = cls.declares
        if not isinstance(declared, Capabilities):
            raise TypeError(
                f"{cls.__name__}.declares must be a Capabilities(...), got {declared!r}"
            )
        own = [hook for hook in Capabilities.HOOKS.values() if hook in vars(cls)]
        if own and "declares" not in vars(cls) and declared != Capabilities():
            raise TypeError(
                f"{cls.__name__} implements {', '.join(h + '()' for h in own)} but inherits "
                f"its declaration ({declared.describe()}) from a parent: state what this "
                "class knows with its own `declares = Capabilities(...)`"
            )
        for flag, hook in Capabilities.HOOKS.items():
            has_hook = _defines(cls, hook)
            if getattr(declared, flag) and not has_hook:
                raise TypeError(
                    f"{cls.__name__} declares {flag}=True but defines no {hook}(); "
                    "implement it or drop the declaration"
                )
            if _implements(cls, hook) and not getattr(declared, flag):
                # (a hook inherited from a parent mechanism and not declared here is
                # simply unused: the subclass states what it knows)
                raise TypeError(
                    f"{cls.__name__} defines {hook}() but does not declare it: add "
                    f"`declares = Capabilities({flag}=True, ...)` to the class (its "
                    f"current declaration: {declared.describe()})"
                )

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

    @property
    def privacy(self) -> Mechanism:
        """The mechanism whose curves describe this one: itself, unless it is
        described by others (an :class:`~dpacct.mechanisms.algorithm.Algorithm` is
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
        """Message for a query the capabilities cannot answer: names the mechanism,
        what it declares and what would answer it (wrappers name their parts)."""
        wanted = {
            "rdp": "a Renyi-DP curve (Mechanism.from_rdp, or declares rdp=True)",
            "any": (
                "an exact delta(eps), an RDP curve or loss laws (a bare pure epsilon or "
                "(epsilon, delta) guarantee: Mechanism.from_pure_epsilon / from_epsilon_delta)"
            ),
        }[need]
        return (
            f"{self!r} cannot answer {query}: it declares {self.capabilities.describe()}; "
            f"it needs {wanted}"
        )

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
        # frozen dataclasses still have a __dict__; this bypasses __setattr__
        return self.__dict__.setdefault("_dpacct_cache", {})

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
        certified discretisations (:meth:`GridPLD.swapped_delta_bound`).  Mechanisms
        that build their own PLDs do not claim it.
        """
        caps = self.capabilities
        return caps.loss_laws and not caps.own_pld

    def _pld_one(self, pessimistic: bool, settings: PLDSettings, which: int) -> GridPLD:
        """One direction of the PLD pair (0 remove, 1 add)."""
        return self._pld_cached(pessimistic, settings)[which]

    def _pair(
        self, pessimistic: bool, settings: PLDSettings, coarse: PLDSettings | None = None
    ) -> PLDPair:
        """The PLD pair on ``settings``, its add direction composed on demand (on
        ``coarse`` for the first try of :meth:`PLDPair.epsilon`)."""

        def load(use_coarse: bool) -> GridPLD:
            return self._pld_one(pessimistic, (coarse or settings) if use_coarse else settings, 1)

        rem = self._pld_one(pessimistic, settings, 0)
        swap = pessimistic and self._swap_bounds_add()
        return PLDPair(rem, None, self._directions_equal(), swap, load)

    def _pld_cached(self, pessimistic: bool, settings: PLDSettings) -> tuple[GridPLD, GridPLD]:
        key = ("pld", pessimistic, settings.key())
        cache = self._cache()
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
        if self.has_exact_curve:
            out = np.clip(self._delta_exact(flat), 0.0, 1.0)
        else:
            out = np.ones(flat.shape)
            if self.has_pld:
                out = np.minimum(out, self._pld_delta(flat, PLDSettings(tol)))
                # a tiny answer is dominated by the default tail budget: recompute with
                # a budget scaled to it (both results are sound; the smaller wins)
                small = float(np.min(out))
                if small < 1e4 * DEFAULT_TAIL:
                    tight = PLDSettings(tol, max(small, TINY))
                    out = np.minimum(out, self._pld_delta(flat, tight))
                if flat.size <= FOLLOW_MAX_POINTS:
                    out = self._pld_delta_follow(flat, out, tol)
            if self.has_rdp:
                if flat.size == 1:
                    rdp_d = np.array([rdp_to_delta(self._rdp_curve, flat[0])])
                else:  # one RDP evaluation for all epsilons (a curve, e.g. for tradeoff)
                    rdp_d = rdp_to_delta_grid(self._rdp_curve, flat)
                out = np.minimum(out, rdp_d)
        # pure DP: no delta is needed at or beyond the pure epsilon
        out = np.where(flat >= self._pure_epsilon(), 0.0, out)
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
            (0, 0.5); default 1e-4 (measured brackets 2e-5 to 5e-4 on DP-SGD).
            ``tol=1e-3`` is about twice as fast; ``tol=1e-5`` tighter.  Tolerances
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
        key = ("eps_up", delta, tol)
        cache = self._cache()
        if key in cache:
            return cache[key]
        if self.has_exact_curve:
            upper = invert_decreasing(self._delta_exact, delta, self._pure_epsilon())[1]
        else:
            upper = math.inf
            need_rdp = True
            if self.has_pld:
                upper, plds = self._pld_upper(delta, tol)
                # Both routes are sound and the smaller wins.  The RDP route is skipped
                # only where it cannot win by more than rounding: a finite PLD bound
                # whose truncated mass is negligible next to delta (the PLD is then
                # within the bracket of the truth, and RDP conversions are never tight).
                inf_mass = max(p.inf_mass for p in plds)
                need_rdp = not (math.isfinite(upper) and inf_mass < RDP_SKIP_MASS_FRACTION * delta)
            if self.has_rdp and need_rdp:
                upper = min(upper, rdp_to_epsilon(self._rdp_curve, delta))
            if not self.has_pld and not self.has_rdp:
                raise MissingCapabilityError(self._lacking("epsilon()/delta()"))
            upper = min(upper, self._pure_epsilon())
        cache[key] = upper
        return upper

    def epsilon_bounds(self, delta: float, *, tol: float | None = None) -> tuple[float, float]:
        """A certified bracket ``(lower, upper)`` of the true epsilon at ``delta``.

        For exact curves the bracket is the numerical inversion interval; for PLDs it
        comes from the optimistic and pessimistic discretisations; with only an RDP
        curve the lower end is 0 (RDP gives no lower bound).  ``delta = 0`` brackets the
        pure epsilon (:func:`~dpacct.accountant.pure.pure_epsilon_bounds`).

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
        if d == 0:  # pure DP
            from .pure import pure_epsilon_bounds

            return pure_epsilon_bounds(self, tol)
        return self._epsilon_bounds(d, tol)

    def _pld_delta(self, epsilon: np.ndarray, settings: PLDSettings) -> np.ndarray:
        """Pessimistic-PLD delta at ``epsilon``, both directions (:meth:`PLDPair.delta`)."""
        return self._pair(True, settings).delta(epsilon)

    def _pld_delta_follow(
        self, epsilon: np.ndarray, found: np.ndarray, tol: float | None
    ) -> np.ndarray:
        """Second pass of :meth:`delta`: the grids :meth:`epsilon` would use.

        :meth:`epsilon` scales the tail budget to its target delta and refines the
        grids when its answer is small next to the grid step (:meth:`_pld_upper`);
        evaluated on the default grids instead, delta came out above the target at the
        epsilon it returned (1.3e-4 relative for one DP-SGD step, sigma 1, q 1/64, at
        delta 1e-3; 5x at q 2e-6, sigma 0.5, 300 steps, where the answer is refined).
        So delta(eps) is also read off every grid that ``epsilon(d)`` evaluates, for
        the delta ``d`` found so far, repeated while the answer moves the settings
        (tail budget, grid cap); every grid gives a certified upper bound and the
        smallest wins.  Then ``delta(epsilon(d)) <= d`` up to the ``1e-10`` relative
        rounding of :meth:`GridPLD.delta`.
        """
        out = np.array(found, dtype=float)
        for i, eps in enumerate(epsilon):
            seen: set = set()
            for _ in range(FOLLOW_ROUNDS):
                d = float(out[i])
                if not (0.0 < d < 1.0) or eps >= self._pure_epsilon():
                    break
                self._pld_upper(d, tol)
                tried = self._cache()[("pld_upper", d, tol)][4]
                fresh = [s for s in tried if s.key() not in seen]
                if not fresh:
                    break
                for s in fresh:
                    seen.add(s.key())
                    val = float(self._pld_delta(np.array([eps]), s)[0])
                    out[i] = min(out[i], val)
                if out[i] >= d:
                    break
        return out

    def _pld_upper(self, delta: float, tol: float | None) -> tuple[float, list[GridPLD]]:
        """PLD upper bound on epsilon and the pessimistic PLDs that decided it.

        The grids are first chosen from the loss's spread (:class:`PLDSettings`).  When
        the answer is then within ``REFINE_STEPS`` grid steps of zero -- an epsilon
        small next to the loss's range, e.g. a tiny sample rate, where the tail grid's
        step is of the order of the answer and the bound moves by up to a step -- the
        PLDs are recomputed with every grid step capped at ``answer / CAP_STEPS``
        (:meth:`PLDSettings.capped`), at most ``MAX_REFINEMENTS`` times.  Every grid
        gives a certified bound, so the smallest upper bound is returned; the lower end
        of the bracket (:meth:`epsilon_bounds`) is taken on the finest grids.
        """
        key = ("pld_upper", delta, tol)
        cache = self._cache()
        if key in cache:
            return cache[key][0], cache[key][1]
        settings = PLDSettings(tol, delta)
        e_best, plds, deciding = self._pld_upper_at(delta, tol, settings)
        tried = [settings]
        for _ in range(MAX_REFINEMENTS):
            step = max(plds[w].step for w in deciding)
            if not (0.0 < e_best < math.inf and step * REFINE_STEPS > e_best):
                break
            cap = e_best / CAP_STEPS
            if cap < MIN_CAP or (settings.coarse_cap is not None and cap >= settings.coarse_cap):
                break
            settings = settings.capped(cap)
            e_new, plds, deciding = self._pld_upper_at(delta, tol, settings)
            tried.append(settings)
            e_best = min(e_best, e_new)  # both are certified upper bounds
        cache[key] = (e_best, plds, deciding, settings, tried)
        return e_best, plds

    def _pld_upper_at(
        self, delta: float, tol: float | None, settings: PLDSettings
    ) -> tuple[float, list[GridPLD], list[int]]:
        """Upper bound at fixed grid settings: the epsilon, the PLDs, the deciding ones
        (:meth:`PLDPair.epsilon`; its coarse add PLD has tol 0.1, a fraction of the cost)."""
        coarse = PLDSettings(max(tol or DEFAULT_TOL, 0.1), delta)
        if settings.coarse_cap is not None:
            coarse = coarse.capped(settings.coarse_cap)
        out = self._pair(True, settings, coarse).epsilon(delta)
        return out.epsilon, out.plds, out.deciding

    def _epsilon_bounds(self, delta: float, tol: float | None) -> tuple[float, float]:
        """Certified bracket: the upper bound and the optimistic PLDs' lower bound.

        epsilon is the maximum over directions, so the lower bound of any one direction
        is a lower bound; the direction(s) that decided the upper bound give the
        tightest one, on the grids that decided it.  On grids refined for a small
        answer (:meth:`_pld_upper`) a bracket wider than the tolerance has its
        optimistic first discretisation made again at the full resolution (instead of
        a quarter), and the larger lower bound is kept
        (both are certified; which is tighter depends on where the loss's floor
        ``log(1 - q)`` falls in its grid bin -- measured at q ~ 4.1e-6, sigma = 0.5,
        100 steps: brackets 1.3e-3 / 9.5e-4 with the first alone, 8.7e-4 / 4.0e-4
        with both).

        The two ends are never clipped to each other: a lower bound above the upper
        bound (beyond ``1e-12`` relative, the rounding the certificates already
        absorb) is a contradiction between two certificates and raises
        :class:`RuntimeError` naming the mechanism and both values.
        """
        if self.has_exact_curve:
            return invert_decreasing(self._delta_exact, delta, self._pure_epsilon())
        upper = self._epsilon_upper(delta, tol)
        lower = 0.0
        if self.has_pld and math.isfinite(upper):
            self._pld_upper(delta, tol)
            _, _, deciding, settings, _ = self._cache()[("pld_upper", delta, tol)]
            lower = max(self._pld_one(False, settings, w).epsilon(delta) for w in deciding)
            wanted = tol or DEFAULT_TOL
            if settings.coarse_cap is not None and upper - lower > wanted * upper:
                full = settings.with_first_fraction(1.0)
                lower = max(
                    lower, *(self._pld_one(False, full, w).epsilon(delta) for w in deciding)
                )
            if lower > upper * (1.0 + 1e-12) + TINY:
                raise RuntimeError(
                    f"certificate contradiction in {self!r} at delta={delta!r}, tol={tol!r}: "
                    f"PLD lower bound {lower!r} exceeds upper bound {upper!r}"
                )
        return (lower, upper)

    def _rdp_curve(self, alpha: np.ndarray) -> np.ndarray:
        """The declared Renyi curve, else the one derived from the declared loss laws
        (:func:`~dpacct.accountant.custom.loss_law_rdp`: exact for Gaussian and atomic
        laws, a chord-bounded quadrature otherwise, ``inf`` at orders it cannot bound)."""
        a = np.asarray(alpha, dtype=float)
        if self.capabilities.rdp:
            return self._rdp(a)
        from .custom import loss_law_rdp

        remove, add = self._loss_laws()
        out = loss_law_rdp(remove, a)
        return out if add is remove else np.maximum(out, loss_law_rdp(add, a))

    def rdp(self, alpha):
        """Renyi-DP epsilon at order(s) ``alpha`` (real, > 1), vectorised.

        Without a declared curve it is derived: from the declared loss laws
        (:func:`~dpacct.accountant.custom.loss_law_rdp`), else from the pessimistic
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
        if self.has_rdp:
            out = self._rdp_curve(a.reshape(-1))
        elif self.has_pld:
            out = self._pair(True, PLDSettings(None)).rdp(a.reshape(-1))
            if not np.all(np.isfinite(out)):
                # the PLD puts mass at +inf (e.g. a part known only by its delta(eps)
                # curve): its Renyi divergence is infinite, which says nothing useful
                raise MissingCapabilityError(
                    self._lacking("rdp() (the PLD it falls back on has mass at +inf)", "rdp")
                )
        else:
            raise MissingCapabilityError(self._lacking("rdp()", "rdp"))
        out = np.asarray(out, dtype=float).reshape(a.shape)
        return _scalar_or_array(out, a)

    def tradeoff(self, fpr, *, tol: float | None = None):
        """f-DP trade-off curve: a lower bound on the type II error at type I ``fpr``.

        Uses the exact curve when known.  A mechanism accounted by its PLDs gets the
        Neyman-Pearson curve of the pessimistic PLDs' dominating pair, which is the
        lower end of :func:`~dpacct.accountant.attack_risk.tradeoff_bounds` at the
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
        if self.capabilities.exact_tradeoff:
            out = self._tradeoff_exact(a.reshape(-1))
        elif pld_route(self):
            out = pld_tradeoff_lower(self, a.reshape(-1), PLDSettings(tol))
        else:
            out = tradeoff_from_delta(partial(self.delta, tol=tol), a.reshape(-1))
        return _scalar_or_array(np.clip(out, 0.0, 1.0).reshape(a.shape), a)

    # ------------------------------------------------------- declared capabilities
    # A new mechanism states one thing it knows; the engine derives the rest (see
    # :mod:`dpacct.accountant.custom` for what each route supports and proves).

    @staticmethod
    def from_delta_curve(delta_curve, *, name: str, neighbouring: str = "add/remove"):
        """A mechanism known by its exact privacy curve ``delta(eps)``
        (:func:`~dpacct.accountant.custom.mechanism_from_delta_curve`).

        Parameters
        ----------
        delta_curve : callable
            ``eps -> delta(eps)`` for ``eps >= 0``: exact, or a privacy curve above it.
        name : str
            A label for messages and the repr.
        neighbouring : str, default "add/remove"
            ``ADD_REMOVE`` or ``REPLACE_ONE``.

        Examples
        --------
        >>> import numpy as np
        >>> m = Mechanism.from_delta_curve(lambda e: np.maximum(0.0, 1 - np.exp((e - 1) / 2)),
        ...                                name="laplace b=1")
        >>> round(m.epsilon(1e-3), 6)        # Laplace(b=1): 1 + 2 log(1 - delta)
        0.997999
        """
        from .custom import mechanism_from_delta_curve

        return mechanism_from_delta_curve(delta_curve, name=name, neighbouring=neighbouring)

    @staticmethod
    def from_rdp(rdp, *, name: str = "rdp", pure_epsilon=None, neighbouring: str = "add/remove"):
        """A mechanism known by a Renyi-DP curve
        (:func:`~dpacct.accountant.custom.mechanism_from_rdp`).

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
        from .custom import mechanism_from_rdp

        return mechanism_from_rdp(
            rdp, name=name, pure_epsilon=pure_epsilon, neighbouring=neighbouring
        )

    @staticmethod
    def from_loss_laws(remove, add=None, *, name=None, neighbouring: str = "add/remove"):
        """A mechanism known by the privacy-loss laws of its dominating pairs
        (:func:`~dpacct.accountant.custom.mechanism_from_loss_laws`).

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
        >>> from dpacct.accountant.loss_law import GaussianLossLaw
        >>> m = Mechanism.from_loss_laws(GaussianLossLaw(mu=1.0))
        >>> round(m.epsilon(1e-5), 3)        # 1-GDP
        4.377
        """
        from .custom import mechanism_from_loss_laws

        return mechanism_from_loss_laws(remove, add, name=name, neighbouring=neighbouring)

    @staticmethod
    def from_pure_epsilon(epsilon: float, *, neighbouring: str = "add/remove"):
        """A pure ``epsilon``-DP mechanism
        (:func:`~dpacct.accountant.custom.mechanism_from_pure_epsilon`).

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
        from .custom import mechanism_from_pure_epsilon

        return mechanism_from_pure_epsilon(epsilon, neighbouring=neighbouring)

    @staticmethod
    def from_gdp(mu: float, *, neighbouring: str = "add/remove"):
        """A mechanism known to be ``mu``-GDP
        (:func:`~dpacct.accountant.custom.mechanism_from_gdp`).

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
        from .custom import mechanism_from_gdp

        return mechanism_from_gdp(mu, neighbouring=neighbouring)

    @staticmethod
    def from_epsilon_delta(epsilon: float, delta: float, *, neighbouring: str = "add/remove"):
        """A mechanism known only to be ``(epsilon, delta)``-DP
        (:func:`~dpacct.accountant.custom.mechanism_from_epsilon_delta`).

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
        from .custom import mechanism_from_epsilon_delta

        return mechanism_from_epsilon_delta(epsilon, delta, neighbouring=neighbouring)

    # ------------------------------------------------------------------ misc
    def __repr__(self) -> str:
        fields = getattr(self, "__dataclass_fields__", {})
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in fields if not k.startswith("_"))
        return f"{type(self).__name__}({args})"


#: The first discretisation needs fewer points per spread than later coarsenings: its
#: error is diluted as the composition widens (measured on the DP-SGD benchmarks: a
#: quarter of the resolution changes epsilon by under 1e-5 relative).
FIRST_LEVEL_FRACTION = 0.25


def grid_step(
    law: PrivacyLossLaw, pessimistic: bool, settings: PLDSettings, *, use_anchor: bool = True
) -> float:
    """First grid step for ``law``: its lattice, a binary fraction of its anchor, or a
    power of two below spread/resolution.

    ``use_anchor=False`` ignores a weak anchor (a composition that meets binary grids
    of other parts is better served by a nested binary grid than by exact atoms)."""
    if law.lattice is not None:
        return law.lattice
    anchor = law.anchor if use_anchor or not law.weak_anchor else None
    spread = law.spread()
    if spread <= 0:  # a point mass: any grid works
        return 2.0**-10 if anchor is None else anchor
    fraction = FIRST_LEVEL_FRACTION
    if not pessimistic and settings.first_fraction is not None:
        fraction = settings.first_fraction
    resolution = settings.resolution_for(pessimistic) * fraction
    if anchor is not None:
        return anchor / 2.0 ** max(0, math.ceil(math.log2(anchor * resolution / spread)))
    return 2.0 ** math.floor(math.log2(spread / resolution))


def discretize_law(law: PrivacyLossLaw, pessimistic: bool, settings: PLDSettings) -> GridPLD:
    """Discretise a law on a grid chosen from its spread (or its lattice).

    A law whose range would need more than ``MAX_GRID`` points on that grid (a very
    skewed loss: a small sample rate with little noise, whose spread is of the order
    of the sample rate while its range is of order one) is discretised two-scale
    instead -- a fine bulk and a coarse tail (:func:`~dpacct.accountant.twoscale.discretize_split`),
    merged onto the finest nested grid of at most ``MAX_GRID / 4`` points.  Every
    grid gives a certified discretisation; :meth:`Mechanism._pld_upper` refines the
    grids when the answer turns out small next to the step.
    """
    step = grid_step(law, pessimistic, settings)
    tail = settings.tail * LAW_TAIL_FRACTION
    cap = settings.coarse_cap
    if law.lattice is None:
        while cap is not None and step > cap:
            step /= 2.0  # still a binary fraction of any anchor
        lo, hi = law.quantile_bounds(tail)
        if (hi - lo) / step + 2 > MAX_GRID:
            split = discretize_split(law, step, pessimistic=pessimistic, tail=tail, coarse_cap=cap)
            return split.merged(MAX_GRID >> 2)
    return discretize(law, step, pessimistic=pessimistic, tail=tail)
