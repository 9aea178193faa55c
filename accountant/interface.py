"""What the router and the declarations read of a mechanism: the contract's inner face.

:class:`~dpacct.accountant.mechanism.Mechanism` is the contract users see; the router
(:mod:`~dpacct.accountant.routes`), the declarations
(:mod:`~dpacct.accountant.declared`, :mod:`~dpacct.accountant.worst_case`), the
pure-epsilon bracket (:mod:`~dpacct.accountant.pure`) and the trade-off queries call
back only the members named here.  They are typed against these protocols, not against
the base class, so the base class imports them and none of them imports it: the
contract's room has no import circle, counting ``TYPE_CHECKING`` imports (issue 36).

* :class:`Routed` -- a mechanism as the router sees it: its declared capabilities,
  its hooks and its engine-facing methods;
* :class:`RoutedLedger` -- a ledger's history as the router sees it
  (:class:`~dpacct.accountant.ledger.ledger_mechanism.LedgerMechanism`): the
  representations that the ledger rows of the decision table name.

Examples
--------
>>> from dpacct.mechanisms import GaussianMechanism
>>> isinstance(GaussianMechanism(sigma=1.0), Routed)
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:  # pragma: no cover - typing only (these modules never import this one)
    from .capabilities import Capabilities
    from .laws.loss_law import PrivacyLossLaw
    from .pld.grid import GridPLD
    from .pld.pld_pair import PLDPair
    from .pld.pld_settings import PLDSettings

__all__ = ["Routed", "RoutedLedger"]


@runtime_checkable
class Routed(Protocol):
    """A mechanism as the router, the declarations and the queries read it."""

    @property
    def capabilities(self) -> Capabilities: ...

    @property
    def privacy(self) -> Any: ...

    @property
    def has_exact_curve(self) -> bool: ...

    @property
    def has_rdp(self) -> bool: ...

    @property
    def has_pld(self) -> bool: ...

    def gdp_mu(self) -> float | None: ...

    def delta(self, epsilon: Any, *, tol: float | None = None) -> Any: ...

    def _cache(self) -> dict: ...

    def _lacking(self, query: str, need: str = "any") -> str: ...

    def _delta_exact(self, epsilon: np.ndarray) -> np.ndarray: ...

    def _rdp(self, alpha: np.ndarray) -> np.ndarray: ...

    def _rdp_curve(self, alpha: np.ndarray) -> np.ndarray: ...

    def _loss_laws(self) -> tuple[PrivacyLossLaw, PrivacyLossLaw]: ...

    def _tradeoff_exact(self, fpr: np.ndarray) -> np.ndarray: ...

    def _pure_epsilon(self) -> float: ...

    def _epsilon_upper(self, delta: float, tol: float | None) -> float: ...

    def _epsilon_bounds(self, delta: float, tol: float | None) -> tuple[float, float]: ...

    def _pld_one(self, pessimistic: bool, settings: PLDSettings, which: int) -> GridPLD: ...

    def _pair(
        self, pessimistic: bool, settings: PLDSettings, coarse: PLDSettings | None = None
    ) -> PLDPair: ...


class RoutedLedger(Protocol):
    """A ledger's history as the router's ledger rows read it."""

    @property
    def route(self) -> str: ...

    @property
    def empty(self) -> bool: ...

    def epsilon(self, delta: Any, *, tol: float | None = None) -> Any: ...

    def composition(self) -> Any: ...

    def composition_below(self) -> Any: ...

    def accounted(self, upper: bool) -> Any: ...

    def online(self, delta: float) -> Any: ...

    def online_deltas(self) -> list[float]: ...

    def fast_lower(
        self, delta: float, upper: float | None = None, width: float | None = None
    ) -> float | None: ...

    def certified(self, delta: float) -> float | None: ...

    def tilted(self, epsilon: float, target: float) -> Any: ...

    def tilted_epsilon(self, delta: float, guess: float) -> float | None: ...

    def certified_pairs(self) -> dict[float, float]: ...

    def cached(self, key: Any, compute: Callable[[], Any]) -> Any: ...

    @property
    def entry_count(self) -> int: ...

