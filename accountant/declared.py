"""Declarations a mechanism can be built from: what each states and how it derives the
rest (the shared part, and the mechanisms known by one curve or law).

Each declaration is a frozen dataclass holding what the user stated, with the hooks of
:class:`~dpacct.accountant.mechanism.Mechanism` that follow from it; it is not a
mechanism itself.  :mod:`dpacct.accountant.mechanism` joins each one to the contract
(``class DeltaCurveMechanism(DeltaCurveDeclaration, Mechanism)``), so that the
contract's factories (``Mechanism.from_delta_curve``, ...) can build them while this
module imports nothing above the loss laws: the dependency runs one way.

* :class:`DeltaCurveDeclaration`: an exact privacy curve ``delta(eps)``; composition
  and subsampling use the connect-the-dots law that dominates it
  (:func:`~dpacct.accountant.laws.delta_curve_law.loss_law_from_delta_curve`).
* :class:`RDPCurveDeclaration`: a Renyi-DP curve, answered by the RDP routes only.
* :class:`LossLawDeclaration`: privacy-loss laws of dominating pairs; the Renyi curve is
  theirs (:func:`~dpacct.accountant.laws.loss_law_rdp.loss_law_rdp`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .capabilities import Capabilities, MissingCapabilityError
from .interface import Routed
from .laws.delta_curve_law import (
    CURVE_RDP_RTOL,
    CURVE_TAIL,
    call_vectorised,
    curve_end,
    loss_law_from_delta_curve,
)
from .laws.loss_law import AtomicLossLaw, PrivacyLossLaw
from .laws.loss_law_rdp import loss_law_rdp
from .rdp.conversion import pure_dp_rdp
from .relations import ADD_REMOVE, REPLACE_ONE
from .validation import check_alpha, check_positive

__all__ = [
    "Declaration",
    "DeltaCurveDeclaration",
    "LossLawDeclaration",
    "RDPCurveDeclaration",
    "check_name",
    "check_relation",
    "memo_rdp",
    "no_rdp",
]


def check_relation(value: object) -> str:
    """``value`` if it names a neighbouring relation, else a ``ValueError``."""
    if value not in (ADD_REMOVE, REPLACE_ONE):
        raise ValueError(
            f"neighbouring must be {ADD_REMOVE!r} (ADD_REMOVE) or {REPLACE_ONE!r} "
            f"(REPLACE_ONE), got {value!r}"
        )
    return str(value)


def check_name(value: object) -> str:
    """``value`` if it is a non-empty string, else a ``TypeError``."""
    if not isinstance(value, str) or not value:
        raise TypeError(f"name must be a non-empty string, got {type(value).__name__} {value!r}")
    return value


def no_rdp(mech: Routed, declared: str, why: str) -> MissingCapabilityError:
    """The error of a declaration that determines no finite Renyi curve."""
    return MissingCapabilityError(
        f"{mech!r} has no Renyi-DP curve: it declares {declared}, and {why}. Declare an "
        "RDP curve (mechanism_from_rdp) or a loss law without mass at +inf "
        "(mechanism_from_loss_laws) to get one"
    )


def memo_rdp(mech: Routed, alpha: np.ndarray, compute) -> np.ndarray:
    """``compute(alpha)``, remembered order by order (the subsampling bounds ask for
    every integer order up to thousands, call after call)."""
    a = np.asarray(alpha, dtype=float)
    flat = a.reshape(-1)
    memo = mech._cache().setdefault("custom_rdp", {})
    missing = np.array(sorted({float(x) for x in flat if float(x) not in memo}))
    if missing.size:
        if len(memo) > 1 << 17:
            memo.clear()
        values = np.asarray(compute(missing), dtype=float).reshape(-1)
        memo.update(zip(missing.tolist(), values.tolist(), strict=True))
    return np.array([memo[float(x)] for x in flat], dtype=float).reshape(a.shape)


class Declaration:
    """Shared behaviour of the declarations (placed before
    :class:`~dpacct.accountant.mechanism.Mechanism` among a mechanism's bases): an RDP
    capability that holds only when the declared representation determines a finite
    Renyi curve, an :meth:`rdp` that names what is missing instead of returning the
    ``inf`` of a PLD with mass at +inf, and a repr of what was declared."""

    def _rdp_missing(self) -> MissingCapabilityError | None:
        return None

    @property
    def capabilities(self) -> Capabilities:
        """The class's declaration, without ``rdp`` when no finite curve follows."""
        declared = type(self).declares
        if declared.rdp and self._rdp_missing() is not None:
            return dataclasses.replace(declared, rdp=False)
        return declared

    def rdp(self, alpha):
        """Renyi-DP epsilon at order(s) ``alpha``; see :meth:`Mechanism.rdp`.

        Parameters
        ----------
        alpha : float or array_like
            Renyi order(s), real and > 1.

        Raises
        ------
        MissingCapabilityError
            The declared capability determines no finite Renyi-DP curve.
        """
        check_alpha(alpha)
        missing = self._rdp_missing()
        if missing is not None:
            raise missing
        return super().rdp(alpha)

    def __repr__(self) -> str:
        args = [f"{k}={v!r}" for k, v in self._repr_fields()]
        if self.neighbouring != ADD_REMOVE:
            args.append(f"neighbouring={self.neighbouring!r}")
        return f"{type(self).__name__}({', '.join(args)})"

    def _repr_fields(self) -> list[tuple[str, object]]:  # pragma: no cover - overridden
        return []


@dataclass(frozen=True, repr=False)
class DeltaCurveDeclaration(Declaration):
    """What :class:`~dpacct.accountant.families.custom.DeltaCurveMechanism` states: its exact
    privacy curve ``delta(eps)``, and optionally ``delta_down``, a curve never above the
    true one; see :meth:`~dpacct.accountant.mechanism.Mechanism.from_delta_curve`.

    ``delta_curve`` answers every upper bound.  The lower end of ``epsilon_bounds`` (and
    of the pure epsilon's bracket) is the largest float where ``delta_down`` is still
    above ``delta`` (:func:`~dpacct.accountant.curve_down.lower_end`): certified when
    ``delta_down`` is.  Without it the lower end is the bisection's on ``delta_curve``
    as evaluated in floats, within ``1e-13`` of where that float curve crosses ``delta``:
    it brackets the true epsilon only as far as the float curve is exact (an RR curve
    declared this way has 143 of 398 lower ends above the 60-digit truth near
    ``p = 1 / k``, session 35).
    """

    delta_curve: Callable[[np.ndarray], np.ndarray]
    name: str
    neighbouring: str = ADD_REMOVE
    delta_down: Callable[[np.ndarray], np.ndarray] | None = None

    declares = Capabilities(exact_curve=True, rdp=True, loss_laws=True)

    def __post_init__(self) -> None:
        if not callable(self.delta_curve):
            raise TypeError(
                f"delta_curve must be a callable eps -> delta(eps), got "
                f"{type(self.delta_curve).__name__} {self.delta_curve!r}"
            )
        if self.delta_down is not None and not callable(self.delta_down):
            raise TypeError(
                f"delta_down must be None or a callable eps -> a lower bound on delta(eps), "
                f"got {type(self.delta_down).__name__} {self.delta_down!r}"
            )
        object.__setattr__(self, "name", check_name(self.name))
        object.__setattr__(self, "neighbouring", check_relation(self.neighbouring))

    def _repr_fields(self):
        return [("name", self.name)]

    @property
    def _delta_exact_down(self):
        """The declared lower curve (read by the router's lower ends), or ``None``."""
        return None if self.delta_down is None else self._declared_down

    def _declared_down(self, epsilon: np.ndarray) -> np.ndarray:
        """``delta_down`` at ``epsilon``, refused (``ValueError``) where it is above
        ``delta_curve``: one of the two declarations is then wrong, and which one the
        engine cannot tell.  Negative values are kept (a lower bound may be below 0)."""
        eps = np.asarray(epsilon, dtype=float).reshape(-1)
        down = call_vectorised(self.delta_down, eps, "delta_down curve", repr(self))
        up = self._delta_exact(eps)
        above = down > up
        if above.any():
            i = int(np.argmax(above))
            raise ValueError(
                f"{self!r}: delta_down({eps[i]!r}) = {down[i]!r} is above the declared "
                f"delta_curve's {up[i]!r}; delta_down must be at or below the true "
                "delta(eps), which the declared curve bounds from above"
            )
        return down

    def _end(self) -> tuple[float, float]:
        """Last epsilon of the connect-the-dots grid and the curve's value there."""
        cache = self._cache()
        if "end" not in cache:
            end = curve_end(self._delta_exact, CURVE_TAIL)
            cache["end"] = (end, float(self._delta_exact(np.array([end]))[0]))
        return cache["end"]

    def _law(self) -> AtomicLossLaw:
        cache = self._cache()
        if "law" not in cache:
            cache["law"] = loss_law_from_delta_curve(self._delta_exact, end=self._end()[0])
        return cache["law"]

    def _delta_exact(self, epsilon: np.ndarray) -> np.ndarray:
        out = call_vectorised(self.delta_curve, epsilon, "delta curve", repr(self))
        return np.clip(out, 0.0, 1.0)

    def _loss_laws(self):
        law = self._law()
        return law, law

    def _pure_epsilon(self) -> float:
        # the curve is 0 from its grid's end on: the mechanism is end-DP
        end, value = self._end()
        return end if value == 0.0 else math.inf

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        # from a coarser connect-the-dots law (chords within 1e-5 instead of 1e-7): it
        # dominates too, and the subsampling bounds evaluate tens of thousands of orders
        cache = self._cache()
        if "rdp_law" not in cache:
            cache["rdp_law"] = loss_law_from_delta_curve(
                self._delta_exact, rtol=CURVE_RDP_RTOL, end=self._end()[0]
            )
        return memo_rdp(self, alpha, lambda a: loss_law_rdp(cache["rdp_law"], a))

    def _rdp_missing(self):
        end, value = self._end()
        if value == 0.0:
            return None
        return no_rdp(
            self,
            "only an exact delta(eps) curve",
            f"the curve is still positive at eps={end:.6g} (delta={value:.3g}): "
            "finitely many of its values certify no finite Renyi divergence (the "
            "dominating pair built from them has mass at +inf)",
        )


@dataclass(frozen=True, repr=False)
class RDPCurveDeclaration(Declaration):
    """What :class:`~dpacct.accountant.families.custom.RDPCurveMechanism` states: a Renyi-DP
    curve; see :func:`~dpacct.accountant.families.custom.mechanism_from_rdp`."""

    rdp_curve: Callable[[np.ndarray], np.ndarray]
    name: str
    epsilon_pure: float | None = None
    neighbouring: str = ADD_REMOVE

    declares = Capabilities(rdp=True)

    def __post_init__(self) -> None:
        if not callable(self.rdp_curve):
            raise TypeError(
                f"rdp_curve must be a callable alpha -> RDP epsilon, got "
                f"{type(self.rdp_curve).__name__} {self.rdp_curve!r}"
            )
        object.__setattr__(self, "name", check_name(self.name))
        if self.epsilon_pure is not None:
            object.__setattr__(
                self, "epsilon_pure", check_positive("pure_epsilon", self.epsilon_pure)
            )
        object.__setattr__(self, "neighbouring", check_relation(self.neighbouring))

    def _repr_fields(self):
        out: list[tuple[str, object]] = [("name", self.name)]
        if self.epsilon_pure is not None:
            out.append(("pure_epsilon", self.epsilon_pure))
        return out

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        a = np.asarray(alpha, dtype=float)
        out = call_vectorised(self.rdp_curve, a, "RDP curve", repr(self)).reshape(a.shape)
        if np.any(out < -1e-12):
            bad = float(a.reshape(-1)[(out < -1e-12).reshape(-1)][0])
            raise ValueError(f"{self!r}: the RDP curve is negative at alpha={bad!r}")
        out = np.maximum(out, 0.0)
        if self.epsilon_pure is not None:
            # D_alpha of an eps-DP mechanism is at most that of randomized response
            # (Bun & Steinke 2016, Proposition 3.3), itself at most eps
            out = np.minimum(out, pure_dp_rdp(self.epsilon_pure, a))
        return out

    def _pure_epsilon(self) -> float:
        return math.inf if self.epsilon_pure is None else float(self.epsilon_pure)


@dataclass(frozen=True, repr=False)
class LossLawDeclaration(Declaration):
    """What :class:`~dpacct.accountant.families.custom.LossLawMechanism` states: privacy-loss
    laws; see :func:`~dpacct.accountant.families.custom.mechanism_from_loss_laws`."""

    remove: PrivacyLossLaw
    add: PrivacyLossLaw
    name: str | None = None
    neighbouring: str = ADD_REMOVE

    declares = Capabilities(rdp=True, loss_laws=True)

    def __post_init__(self) -> None:
        for which in ("remove", "add"):
            law = getattr(self, which)
            if not isinstance(law, PrivacyLossLaw):
                raise TypeError(
                    f"{which} must be a PrivacyLossLaw, got {type(law).__name__} {law!r}"
                )
        if self.name is not None:
            object.__setattr__(self, "name", check_name(self.name))
        object.__setattr__(self, "neighbouring", check_relation(self.neighbouring))

    def _repr_fields(self):
        if self.name is not None:
            return [("name", self.name)]
        if self.add is self.remove:
            return [("law", self.remove)]
        return [("remove", self.remove), ("add", self.add)]

    def _loss_laws(self):
        return self.remove, self.add

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        def both(a: np.ndarray) -> np.ndarray:
            out = loss_law_rdp(self.remove, a)
            if self.add is not self.remove:
                out = np.maximum(out, loss_law_rdp(self.add, a))
            return out

        return memo_rdp(self, alpha, both)

    def _rdp_missing(self):
        heavy = [w for w in ("remove", "add") if getattr(self, w).inf_mass > 0]
        if not heavy:
            return None
        return no_rdp(
            self,
            "privacy-loss laws only",
            f"the {' and '.join(heavy)} law puts mass on an infinite privacy loss "
            "(P(L = +inf) > 0), so every Renyi divergence is infinite",
        )
