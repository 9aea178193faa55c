"""Base class for algorithms whose privacy is the composition of their primitives.

An algorithm (NoisyGD, SSP, a marginal synthesizer, ...) runs on data, and its
privacy guarantee is exactly that of the primitives it invokes: a list of mechanisms
with repetition counts.  :class:`Algorithm` turns that list into a full
:class:`~dpacct.accountant.Mechanism` by delegating every privacy query to
``compose(primitives, counts)``, so an algorithm composes, subsamples and calibrates
like any other mechanism, and a test can check its privacy against an explicit
composition built by hand.
"""

from __future__ import annotations

import numpy as np

from dpacct.accountant.compose import compose
from dpacct.accountant.mechanism import Mechanism, PLDSettings
from dpacct.accountant.pld import GridPLD

__all__ = ["Algorithm"]


class Algorithm(Mechanism):
    """A mechanism whose privacy is the composition of the primitives it runs.

    Subclasses implement :meth:`primitives`, returning ``(mechanisms, counts)`` with
    each mechanism normalised to unit sensitivity.  Every privacy query
    (``epsilon``, ``delta``, ``epsilon_bounds``, ``rdp``, ``tradeoff``, ``pld``) is
    answered by :attr:`privacy`, the composition of those primitives.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> @dataclass(frozen=True)
    ... class TwoReleases(Algorithm):
    ...     sigma: float
    ...     def primitives(self):
    ...         return [GaussianMechanism(sigma=self.sigma)], [2]
    >>> alg = TwoReleases(sigma=2.0)
    >>> alg.epsilon(1e-5) == compose([GaussianMechanism(sigma=2.0)], counts=[2]).epsilon(1e-5)
    True
    """

    def primitives(self) -> tuple[list[Mechanism], list[int]]:
        """The mechanisms this algorithm runs and how many times each."""
        raise NotImplementedError

    @property
    def privacy(self) -> Mechanism:
        """The composed mechanism that describes this algorithm's privacy."""
        cache = self._cache()
        if "privacy" not in cache:
            mechanisms, counts = self.primitives()
            cache["privacy"] = compose(list(mechanisms), counts=list(counts))
        return cache["privacy"]

    # ------------------------------------------------------------ capabilities
    @property
    def neighbouring(self) -> str:  # type: ignore[override]
        return self.privacy.neighbouring

    @property
    def has_exact_curve(self) -> bool:  # type: ignore[override]
        return self.privacy.has_exact_curve

    @property
    def has_pld(self) -> bool:  # type: ignore[override]
        return self.privacy.has_pld

    @property
    def has_rdp(self) -> bool:  # type: ignore[override]
        return self.privacy.has_rdp

    def _overrides(self, name: str) -> bool:
        return self.privacy._overrides(name)

    # ------------------------------------------------------------------- hooks
    def _delta_exact(self, epsilon: np.ndarray) -> np.ndarray:
        return self.privacy._delta_exact(epsilon)

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        return self.privacy._rdp(alpha)

    def _loss_laws(self):
        return self.privacy._loss_laws()

    def _tradeoff_exact(self, fpr: np.ndarray) -> np.ndarray:
        return self.privacy._tradeoff_exact(fpr)

    def _pure_epsilon(self) -> float:
        return self.privacy._pure_epsilon()

    def _pld_pair(self, pessimistic: bool, settings: PLDSettings) -> tuple[GridPLD, GridPLD]:
        return self.privacy._pld_pair(pessimistic, settings)

    def _pld_one(self, pessimistic: bool, settings: PLDSettings, which: int) -> GridPLD:
        return self.privacy._pld_one(pessimistic, settings, which)

    def _directions_equal(self) -> bool:
        return self.privacy._directions_equal()

    def _swap_bounds_add(self) -> bool:
        return self.privacy._swap_bounds_add()

    # ----------------------------------------------------------------- queries
    def delta(self, epsilon, *, tol: float | None = None):
        return self.privacy.delta(epsilon, tol=tol)

    def epsilon(self, delta, *, tol: float | None = None):
        return self.privacy.epsilon(delta, tol=tol)

    def epsilon_bounds(self, delta: float, *, tol: float | None = None) -> tuple[float, float]:
        return self.privacy.epsilon_bounds(delta, tol=tol)

    def rdp(self, alpha):
        return self.privacy.rdp(alpha)

    def tradeoff(self, fpr, *, tol: float | None = None):
        return self.privacy.tradeoff(fpr, tol=tol)

    def pld(self, *, pessimistic: bool = True, tol: float | None = None):
        return self.privacy.pld(pessimistic=pessimistic, tol=tol)
