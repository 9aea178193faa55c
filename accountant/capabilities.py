"""What a mechanism declares it knows: :class:`Capabilities`, and the error a query
raises when the declaration cannot answer it soundly (:class:`MissingCapabilityError`).

Each flag names one hook of :class:`~dpacct.accountant.mechanism.Mechanism` (the table
in its module docstring); the engine picks every route from these flags.  This module
imports nothing of the engine, so every layer can name a capability.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar

__all__ = [
    "Capabilities",
    "FamilyDeclarations",
    "MissingCapabilityError",
    "check_declaration",
    "lacking_message",
]


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
        The exact f-DP trade-off curve (``_tradeoff_exact``), evaluated so that no value
        is above the true curve (its float error taken off: ``Mechanism.tradeoff``
        returns it as the certified lower curve).
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
    >>> from dpacct.accountant import Mechanism
    >>> m = Mechanism.from_epsilon_delta(1.0, 1e-6)
    >>> try:
    ...     m.rdp(2.0)
    ... except MissingCapabilityError as exc:
    ...     print(str(exc)[:58])
    EpsilonDeltaMechanism(epsilon=1.0, delta=1e-06) has no Ren
    """


#: what would answer a query, by the capability it needs (:func:`lacking_message`)
_WANTED = {
    "rdp": "a Renyi-DP curve (Mechanism.from_rdp, or declares rdp=True)",
    "any": (
        "an exact delta(eps), an RDP curve or loss laws (a bare pure epsilon or "
        "(epsilon, delta) guarantee: Mechanism.from_pure_epsilon / from_epsilon_delta)"
    ),
}


def lacking_message(mechanism: object, query: str, need: str = "any") -> str:
    """The message of a query ``mechanism``'s capabilities cannot answer: it names the
    mechanism, what it declares and what would answer it (``need``: ``"rdp"`` or
    ``"any"``); the text of :class:`MissingCapabilityError` for a mechanism (wrappers
    name their parts instead).

    Examples
    --------
    >>> from dpacct.accountant import Mechanism
    >>> m = Mechanism.from_epsilon_delta(1.0, 1e-6)
    >>> lacking_message(m, "rdp", "rdp")[-21:]
    'or declares rdp=True)'
    """
    return (
        f"{mechanism!r} cannot answer {query}: it declares "
        f"{mechanism.capabilities.describe()}; it needs {_WANTED[need]}"
    )


def _defines(cls: type, hook: str, base: type) -> bool:
    """True if a class below ``base`` in ``cls``'s MRO defines ``hook``."""
    return any(hook in vars(k) for k in cls.__mro__ if k is not base and k is not object)


class _DeclaredHere:
    """A class attribute that its subclasses do not inherit: a capability a family
    declares for itself alone.

    Read on the declaring class or an instance of it, the attribute is ``value``; read
    on a subclass (or an instance of one) it is ``default`` unless the subclass
    declares it again.  A subclass may change the curve the declaration is about (a
    closed form, a noise parameter), so it must say so itself: it loses the
    declaration automatically, and an engine that reads the attribute instead of
    testing for the exact class keeps that subclass-safety without naming the family.

    Examples
    --------
    >>> class Family:
    ...     closed_form = _DeclaredHere("family")
    >>> class Variant(Family):
    ...     pass
    >>> Family().closed_form, Variant().closed_form
    ('family', None)
    """

    def __init__(self, value: object, default: object = None) -> None:
        self.value, self.default = value, default
        self.owner: type | None = None

    def __set_name__(self, owner: type, name: str) -> None:
        self.owner = owner

    def __get__(self, obj: object, objtype: type | None = None) -> object:
        cls = type(obj) if obj is not None else objtype
        return self.value if cls is self.owner else self.default

    def __repr__(self) -> str:
        owner = self.owner.__name__ if self.owner is not None else "?"
        return f"_DeclaredHere({self.value!r}, declared by {owner})"


class FamilyDeclarations:
    """What a mechanism family declares about its pair beyond its capabilities: the
    facts an engine may use formulas proved for that family alone on (a base of
    :class:`~dpacct.accountant.mechanism.Mechanism`; each is declared by a family for
    itself with :class:`_DeclaredHere`, so that a subclass does not inherit it)."""

    #: True for a family whose pair is exactly the Gaussian pair ``N(0, 1)``,
    #: ``N(mu, 1)`` with ``mu = gdp_mu()`` and whose every curve hook states that pair's
    #: closed form; declared for itself (capabilities._DeclaredHere), so a subclass,
    #: which may override a curve, is not a Gaussian base until it says so
    gaussian_pair: ClassVar[object] = False
    #: ``mechanism -> (sample_rate, mu)`` or None: how a family that is a
    #: Poisson-subsampled Gaussian states its parameters, declared for itself (read
    #: through :meth:`subsampled_gaussian`)
    _subsampled_gaussian: ClassVar[object] = None

    def subsampled_gaussian(self) -> tuple[float, float] | None:
        """``(sample_rate, mu)`` if this mechanism declares itself a Poisson-subsampled
        Gaussian, else None.

        The declaration says that the mechanism's pair is exactly the Poisson
        subsampling at rate ``q = sample_rate`` of the Gaussian pair ``N(0, 1)``,
        ``N(mu, 1)`` (noise multiplier ``1 / mu``), with the remove / add loss laws of
        Zhu, Dong & Wang 2022 (Theorem 11) and the subsampled-Gaussian Renyi curve of
        Mironov, Talwar & Zhang 2019, so that an engine may use formulas proved for
        that family alone (the ledger's RDP floor, the batched tail searches of
        :mod:`~dpacct.accountant.laws.quantile_batch`).  A family declares it for
        itself (:class:`~dpacct.accountant.capabilities._DeclaredHere`): a subclass,
        which may override a curve or a loss law, does not inherit it.

        Returns
        -------
        tuple of float or None
            ``(sample_rate, mu)``, or None when nothing is declared.

        Examples
        --------
        >>> from dpacct.mechanisms import GaussianMechanism, LaplaceMechanism
        >>> from dpacct.accountant import poisson_subsample
        >>> poisson_subsample(GaussianMechanism(sigma=2.0), 0.01).subsampled_gaussian()
        (0.01, 0.5)
        >>> poisson_subsample(LaplaceMechanism(b=1.0), 0.01).subsampled_gaussian() is None
        True
        >>> GaussianMechanism(sigma=2.0).subsampled_gaussian() is None
        True
        """
        declared = type(self)._subsampled_gaussian
        return None if declared is None else declared(self)


def _implements(cls: type, hook: str, base: type) -> bool:
    """True if ``cls`` itself, or a mixin it adds (a base that is not a subclass of
    ``base``), defines ``hook``."""
    return hook in vars(cls) or any(
        hook in vars(k)
        for k in cls.__mro__[1:]
        if k is not object and not (isinstance(k, type) and issubclass(k, base))
    )


def check_declaration(cls: type, base: type) -> None:
    """Check, when a subclass of ``base`` is defined, that it declares what it implements.

    A declaration without its hook, a hook (of the class or of a mixin it adds) without
    its declaration, and a class that implements a hook under a declaration it inherits
    are each a ``TypeError`` naming the class, the flag and the hook.

    Parameters
    ----------
    cls : type
        The class being defined.
    base : type
        The contract class whose hooks are checked (``Mechanism``).

    Examples
    --------
    >>> class Base:
    ...     declares = Capabilities()
    >>> class Rdp(Base):
    ...     declares = Capabilities(rdp=True)
    >>> try:
    ...     check_declaration(Rdp, Base)
    ... except TypeError as exc:
    ...     print(exc)
    Rdp declares rdp=True but defines no _rdp(); implement it or drop the declaration
    """
    declared = cls.declares
    if not isinstance(declared, Capabilities):
        raise TypeError(f"{cls.__name__}.declares must be a Capabilities(...), got {declared!r}")
    own = [hook for hook in Capabilities.HOOKS.values() if hook in vars(cls)]
    if own and "declares" not in vars(cls) and declared != Capabilities():
        raise TypeError(
            f"{cls.__name__} implements {', '.join(h + '()' for h in own)} but inherits "
            f"its declaration ({declared.describe()}) from a parent: state what this "
            "class knows with its own `declares = Capabilities(...)`"
        )
    for flag, hook in Capabilities.HOOKS.items():
        has_hook = _defines(cls, hook, base)
        if getattr(declared, flag) and not has_hook:
            raise TypeError(
                f"{cls.__name__} declares {flag}=True but defines no {hook}(); "
                "implement it or drop the declaration"
            )
        if _implements(cls, hook, base) and not getattr(declared, flag):
            # (a hook inherited from a parent mechanism and not declared here is
            # simply unused: the subclass states what it knows)
            raise TypeError(
                f"{cls.__name__} defines {hook}() but does not declare it: add "
                f"`declares = Capabilities({flag}=True, ...)` to the class (its "
                f"current declaration: {declared.describe()})"
            )
