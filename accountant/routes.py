"""Routing: which representation answers a mechanism's query, and how.

:class:`~dpacct.accountant.mechanism.Mechanism` states the contract (the queries, their
arguments, what they promise); the functions here answer them from the capabilities a
mechanism declares, in order of preference: the exact curve, the privacy loss
distribution (PLD) built from the loss laws (pessimistic and optimistic discretisations
give a certified bracket), the RDP conversion.  When several sound upper bounds exist
the smallest wins; both neighbouring directions are accounted and the worse is
reported.  Each function takes the mechanism and calls back only its hooks and its
engine-facing methods (``_epsilon_upper``, ``_pld_one``, ``_rdp_curve``, ...), so a
subclass that overrides one of those is routed through its override.

The refinement policy (when a small answer has its grids recomputed, how far) is
explained in ``docs/theory/pld.md`` and ``docs/design.md``.
"""

from __future__ import annotations

import math
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from .capabilities import MissingCapabilityError
from .families.gaussian_dp import certified_gaussian_epsilon
from .laws.loss_law_rdp import loss_law_rdp
from .mechanism_cache import PLDUpper, PLDUpperAt, pld_upper_key
from .numerics import TINY, invert_decreasing
from .pld.pld_pair import PLDPair
from .pld.pld_settings import (
    CAP_STEPS,
    DEFAULT_TAIL,
    DEFAULT_TOL,
    MAX_REFINEMENTS,
    MIN_CAP,
    REFINE_STEPS,
    PLDSettings,
)
from .queries.tradeoff import pld_route, pld_tradeoff_lower, tradeoff_from_delta
from .rdp.conversion import rdp_to_delta, rdp_to_delta_grid, rdp_to_epsilon

if TYPE_CHECKING:  # pragma: no cover - typing only (mechanism imports this module)
    from .mechanism import Mechanism
    from .pld.grid import GridPLD

__all__ = [
    "FOLLOW_MAX_POINTS",
    "FOLLOW_ROUNDS",
    "RDP_SKIP_MASS_FRACTION",
    "derived_delta",
    "derived_rdp",
    "epsilon_bracket",
    "epsilon_upper",
    "pld_delta_follow",
    "pld_pair",
    "pld_upper",
    "pld_upper_at",
    "rdp_curve",
    "tradeoff_curve",
]

#: the RDP route is skipped when the PLD's truncated mass is below this share of delta
#: (the PLD bound is then within its bracket of the truth, and RDP is never tighter)
RDP_SKIP_MASS_FRACTION = 1e-3
#: delta() also reads the grids epsilon() would use for the delta it finds (see
#: :func:`pld_delta_follow`) for at most this many epsilons per call (a curve of
#: hundreds of points, as for the trade-off, keeps the default grids), and follows the
#: answer at most this many rounds
FOLLOW_MAX_POINTS = 8
FOLLOW_ROUNDS = 3


def pld_pair(
    mech: Mechanism, pessimistic: bool, settings: PLDSettings, coarse: PLDSettings | None = None
) -> PLDPair:
    """The PLD pair of ``mech`` on ``settings``, its add direction composed on demand (on
    ``coarse`` for the first try of :meth:`PLDPair.epsilon`)."""

    def load(use_coarse: bool) -> GridPLD:
        return mech._pld_one(pessimistic, (coarse or settings) if use_coarse else settings, 1)

    rem = mech._pld_one(pessimistic, settings, 0)
    swap = pessimistic and mech._swap_bounds_add()
    return PLDPair(rem, None, mech._directions_equal(), swap, load)


def derived_delta(mech: Mechanism, flat: np.ndarray, tol: float | None) -> np.ndarray:
    """delta at the epsilons ``flat`` for a mechanism without an exact curve: the
    smaller of the PLD and RDP bounds (1 when neither route exists)."""
    out = np.ones(flat.shape)
    if mech.has_pld:
        out = np.minimum(out, mech._pair(True, PLDSettings(tol)).delta(flat))
        # a tiny answer is dominated by the default tail budget: recompute with a budget
        # scaled to it (both results are sound; the smaller wins)
        small = float(np.min(out))
        if small < 1e4 * DEFAULT_TAIL:
            tight = PLDSettings(tol, max(small, TINY))
            out = np.minimum(out, mech._pair(True, tight).delta(flat))
        if flat.size <= FOLLOW_MAX_POINTS:
            out = pld_delta_follow(mech, flat, out, tol)
    if mech.has_rdp:
        if flat.size == 1:
            rdp_d = np.array([rdp_to_delta(mech._rdp_curve, flat[0])])
        else:  # one RDP evaluation for all epsilons (a curve, e.g. for tradeoff)
            rdp_d = rdp_to_delta_grid(mech._rdp_curve, flat)
        out = np.minimum(out, rdp_d)
    return out


def pld_delta_follow(
    mech: Mechanism, epsilon: np.ndarray, found: np.ndarray, tol: float | None
) -> np.ndarray:
    """Second pass of :meth:`Mechanism.delta`: the grids :meth:`Mechanism.epsilon` would use.

    epsilon() scales the tail budget to its target delta and refines the grids when its
    answer is small next to the grid step (:func:`pld_upper`).  So delta(eps) is also
    read off every grid that ``epsilon(d)`` evaluates, for the delta ``d`` found so far,
    repeated while the answer moves the settings (tail budget, grid cap); every grid
    gives a certified upper bound and the smallest wins.  Then
    ``delta(epsilon(d)) <= d`` up to the ``1e-10`` relative rounding of
    :meth:`GridPLD.delta`.
    """
    out = np.array(found, dtype=float)
    for i, eps in enumerate(epsilon):
        seen: set = set()
        for _ in range(FOLLOW_ROUNDS):
            d = float(out[i])
            if not (0.0 < d < 1.0) or eps >= mech._pure_epsilon():
                break
            tried = pld_upper(mech, d, tol).tried
            fresh = [s for s in tried if s.key() not in seen]
            if not fresh:
                break
            for s in fresh:
                seen.add(s.key())
                val = float(mech._pair(True, s).delta(np.array([eps]))[0])
                out[i] = min(out[i], val)
            if out[i] >= d:
                break
    return out


def exact_bracket(mech: Mechanism, delta: float) -> tuple[float, float]:
    """The inversion of an exact curve at ``delta`` (cached): the bracket of
    :func:`~dpacct.accountant.numerics.invert_decreasing`, and for a Gaussian-DP
    mechanism the certified inversion of its curve
    (:func:`~dpacct.accountant.families.gaussian_dp.certified_gaussian_epsilon`: float
    bounds with a proved error, 50 digits where they cannot decide)."""
    key = ("exact_bracket", delta)
    cache = mech._cache()
    if key in cache:
        return cache[key]
    mu = mech.gdp_mu()
    if mu is not None:  # the mu-GDP curve's own certified inversion
        lo, hi = certified_gaussian_epsilon(float(mu), delta)
    else:
        lo, hi = invert_decreasing(mech._delta_exact, delta, mech._pure_epsilon())
    cache[key] = (lo, hi)
    return lo, hi


def epsilon_upper(mech: Mechanism, delta: float, tol: float | None) -> float:
    """The smallest certified upper bound on epsilon at ``delta`` (cached): the exact
    curve inverted, else the smaller of the PLD and RDP bounds, capped by the pure
    epsilon."""
    key = ("eps_up", delta, tol)
    cache = mech._cache()
    if key in cache:
        return cache[key]
    if mech.has_exact_curve:
        upper = exact_bracket(mech, delta)[1]
    else:
        upper = math.inf
        need_rdp = True
        if mech.has_pld:
            found = pld_upper(mech, delta, tol)
            upper = found.epsilon
            # Both routes are sound and the smaller wins.  The RDP route is skipped only
            # where it cannot win by more than rounding: a finite PLD bound whose
            # truncated mass is negligible next to delta (the PLD is then within the
            # bracket of the truth, and RDP conversions are never tight).
            inf_mass = max(p.inf_mass for p in found.plds)
            need_rdp = not (math.isfinite(upper) and inf_mass < RDP_SKIP_MASS_FRACTION * delta)
        if mech.has_rdp and need_rdp:
            upper = min(upper, rdp_to_epsilon(mech._rdp_curve, delta))
        if not mech.has_pld and not mech.has_rdp:
            raise MissingCapabilityError(mech._lacking("epsilon()/delta()"))
        upper = min(upper, mech._pure_epsilon())
    cache[key] = upper
    return upper


def pld_upper(mech: Mechanism, delta: float, tol: float | None) -> PLDUpper:
    """PLD upper bound on epsilon and the pessimistic PLDs that decided it (cached).

    The grids are first chosen from the loss's spread (:class:`PLDSettings`).  When the
    answer is then within ``REFINE_STEPS`` grid steps of zero, the PLDs are recomputed
    with every grid step capped at ``answer / CAP_STEPS`` (:meth:`PLDSettings.capped`),
    at most ``MAX_REFINEMENTS`` times.  Every grid gives a certified bound, so the
    smallest upper bound is returned; the lower end of the bracket
    (:func:`epsilon_bracket`) is taken on the finest grids.

    Examples
    --------
    >>> from dpacct.accountant import compose, poisson_subsample
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> run = compose([poisson_subsample(GaussianMechanism(sigma=1.0), 0.01)], counts=[100])
    >>> found = pld_upper(run, 1e-5, None)
    >>> found._fields
    ('epsilon', 'plds', 'deciding', 'settings', 'tried')
    >>> bool(found.epsilon >= run.epsilon(1e-5)), found.settings is found.tried[-1]
    (True, True)
    """
    key = pld_upper_key(delta, tol)
    cache = mech._cache()
    if key in cache:
        return cache[key]
    settings = PLDSettings(tol, delta)
    e_best, plds, deciding = pld_upper_at(mech, delta, tol, settings)
    tried = [settings]
    for _ in range(MAX_REFINEMENTS):
        step = max(plds[w].step for w in deciding)
        if not (0.0 < e_best < math.inf and step * REFINE_STEPS > e_best):
            break
        cap = e_best / CAP_STEPS
        if cap < MIN_CAP or (settings.coarse_cap is not None and cap >= settings.coarse_cap):
            break
        settings = settings.capped(cap)
        e_new, plds, deciding = pld_upper_at(mech, delta, tol, settings)
        tried.append(settings)
        e_best = min(e_best, e_new)  # both are certified upper bounds
    out = PLDUpper(e_best, plds, deciding, settings, tried)
    cache[key] = out
    return out


def pld_upper_at(
    mech: Mechanism, delta: float, tol: float | None, settings: PLDSettings
) -> PLDUpperAt:
    """Upper bound at fixed grid settings: the epsilon, the PLDs, the deciding directions
    (:meth:`PLDPair.epsilon`; its coarse add PLD has tol 0.1, a fraction of the cost)."""
    coarse = PLDSettings(max(tol or DEFAULT_TOL, 0.1), delta)
    if settings.coarse_cap is not None:
        coarse = coarse.capped(settings.coarse_cap)
    out = mech._pair(True, settings, coarse).epsilon(delta)
    return PLDUpperAt(out.epsilon, out.plds, out.deciding)


def epsilon_bracket(mech: Mechanism, delta: float, tol: float | None) -> tuple[float, float]:
    """Certified bracket: the upper bound and the optimistic PLDs' lower bound.

    epsilon is the maximum over directions, so the lower bound of any one direction is
    a lower bound; the direction(s) that decided the upper bound give the tightest one,
    on the grids that decided it.  On grids refined for a small answer
    (:func:`pld_upper`) a bracket wider than the tolerance has its optimistic first
    discretisation made again at the full resolution, and the larger lower bound is
    kept (both are certified).

    The two ends are never clipped to each other: a lower bound above the upper bound
    (beyond ``1e-12`` relative, the rounding the certificates already absorb) is a
    contradiction between two certificates and raises :class:`RuntimeError` naming the
    mechanism and both values.
    """
    if mech.has_exact_curve:
        return exact_bracket(mech, delta)
    upper = mech._epsilon_upper(delta, tol)
    lower = 0.0
    if mech.has_pld and math.isfinite(upper):
        found = pld_upper(mech, delta, tol)
        deciding, settings = found.deciding, found.settings
        lower = max(mech._pld_one(False, settings, w).epsilon(delta) for w in deciding)
        wanted = tol or DEFAULT_TOL
        if settings.coarse_cap is not None and upper - lower > wanted * upper:
            full = settings.with_first_fraction(1.0)
            lower = max(lower, *(mech._pld_one(False, full, w).epsilon(delta) for w in deciding))
        if lower > upper * (1.0 + 1e-12) + TINY:
            raise RuntimeError(
                f"certificate contradiction in {mech!r} at delta={delta!r}, tol={tol!r}: "
                f"PLD lower bound {lower!r} exceeds upper bound {upper!r}"
            )
    return (lower, upper)


def rdp_curve(mech: Mechanism, alpha: np.ndarray) -> np.ndarray:
    """The declared Renyi curve, else the one derived from the declared loss laws
    (:func:`~dpacct.accountant.laws.loss_law_rdp.loss_law_rdp`: exact for Gaussian and
    atomic laws, a chord-bounded quadrature otherwise, ``inf`` at orders it cannot
    bound)."""
    a = np.asarray(alpha, dtype=float)
    if mech.capabilities.rdp:
        return mech._rdp(a)
    remove, add = mech._loss_laws()
    out = loss_law_rdp(remove, a)
    return out if add is remove else np.maximum(out, loss_law_rdp(add, a))


def derived_rdp(mech: Mechanism, flat: np.ndarray) -> np.ndarray:
    """Renyi epsilons at the orders ``flat``: the Renyi curve (declared or from the loss
    laws), else the pessimistic PLD's (an upper bound by the data-processing
    inequality); :class:`MissingCapabilityError` when only ``inf`` could be given."""
    if mech.has_rdp:
        return mech._rdp_curve(flat)
    if mech.has_pld:
        out = mech._pair(True, PLDSettings(None)).rdp(flat)
        if not np.all(np.isfinite(out)):
            # the PLD puts mass at +inf (e.g. a part known only by its delta(eps) curve):
            # its Renyi divergence is infinite, which says nothing useful
            raise MissingCapabilityError(
                mech._lacking("rdp() (the PLD it falls back on has mass at +inf)", "rdp")
            )
        return out
    raise MissingCapabilityError(mech._lacking("rdp()", "rdp"))


def tradeoff_curve(mech: Mechanism, fpr: np.ndarray, tol: float | None) -> np.ndarray:
    """beta at the false-positive rates ``fpr``: the exact curve, else the Neyman-Pearson
    curve of the pessimistic PLDs, else the dual of the (eps, delta) curve."""
    if mech.capabilities.exact_tradeoff:
        return mech._tradeoff_exact(fpr)
    if pld_route(mech):
        return pld_tradeoff_lower(mech, fpr, PLDSettings(tol))
    return tradeoff_from_delta(partial(mech.delta, tol=tol), fpr)
