"""Per-instance caches of a :class:`~dpacct.accountant.mechanism.Mechanism`, and the
named results they hold.

A mechanism is immutable (a frozen dataclass, as a rule), so whatever it derives --
PLDs on a grid, an upper bound at a delta, the grids a refinement tried -- is kept on
the instance, under a key that names the query and its arguments.  The results the
routes read back are named tuples, never positions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .pld.grid import GridPLD
    from .pld.pld_settings import PLDSettings

__all__ = ["PLDUpper", "PLDUpperAt", "instance_cache", "pld_key", "pld_upper_key"]


def instance_cache(obj: object) -> dict:
    """The cache dict of ``obj``, created on first use.

    Frozen dataclasses still have a ``__dict__``; this bypasses their ``__setattr__``.

    Examples
    --------
    >>> class Thing:
    ...     pass
    >>> t = Thing()
    >>> instance_cache(t) is instance_cache(t)
    True
    """
    return obj.__dict__.setdefault("_dpacct_cache", {})


def pld_key(pessimistic: bool, settings: PLDSettings) -> tuple:
    """Cache key of the (remove, add) PLD pair discretised on ``settings``."""
    return ("pld", pessimistic, settings.key())


def pld_upper_key(delta: float, tol: float | None) -> tuple:
    """Cache key of the PLD upper bound on epsilon at ``delta`` and ``tol``."""
    return ("pld_upper", delta, tol)


class PLDUpperAt(NamedTuple):
    """The PLD upper bound on epsilon at fixed grid settings."""

    #: the certified upper bound
    epsilon: float
    #: the pessimistic PLDs, index 0 remove and 1 add (the add one may be coarse)
    plds: list[GridPLD]
    #: the directions (0 remove, 1 add) whose bound is the answer
    deciding: list[int]


class PLDUpper(NamedTuple):
    """The PLD upper bound on epsilon after the grid refinements, and how it was found."""

    #: the smallest certified upper bound over every grid tried
    epsilon: float
    #: the pessimistic PLDs of the last grid tried
    plds: list[GridPLD]
    #: the directions that decided the bound on the last grid
    deciding: list[int]
    #: the last (finest) grid settings
    settings: PLDSettings
    #: every grid setting tried, in order
    tried: list[PLDSettings]
