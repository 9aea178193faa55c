"""The router: one module decides how every privacy question is answered.

:class:`~dpacct.accountant.mechanism.Mechanism` states the contract (the queries, their
arguments, what they promise) and its subclasses declare capabilities; this module
chooses, from those declarations alone, which engine answers each question -- a
mechanism's, a composition's (a composition is a mechanism) and a ledger's (a ledger
is a mechanism over its history,
:class:`~dpacct.accountant.ledger.ledger_mechanism.LedgerMechanism`; every query of a
:class:`~dpacct.accountant.ledger.PrivacyAccountant` is its ledger's, answered by the
ledger rows :func:`ledger_epsilon`, :func:`ledger_delta`, :func:`ledger_bracket`,
:func:`ledger_rdp` and :func:`ledger_tradeoff` from the representation
:func:`ledger_route` names).  Nothing else in the package picks an
engine; the engines (the exact curve's inversion, the PLD pair of
:mod:`~dpacct.accountant.pld`, its DP-SGD schedule wing, the RDP conversion) only
compute.

Decision table (first matching row wins; "smaller wins" means both sound upper bounds
are computed and the smaller is returned):

============================  ==============================  ==================================
question, of                  declared capabilities / state   engine
============================  ==============================  ==================================
epsilon(delta), a mechanism   ``exact_curve``                 the curve inverted
                                                              (:func:`exact_bracket`)
epsilon(delta), a mechanism   ``loss_laws`` or ``own_pld``    the PLD pair (:func:`pld_upper`),
                                                              and RDP when ``rdp`` and the PLD's
                                                              truncated mass is not negligible;
                                                              the smaller wins
epsilon(delta), a mechanism   ``rdp`` only                    the RDP conversion
delta(epsilon), a mechanism   ``exact_curve``                 the curve (Gaussian-DP: 50 digits)
delta(epsilon), a mechanism   PLD and/or RDP                  the PLD pair on epsilon()'s grids
                                                              and RDP; the smaller wins
                                                              (:func:`derived_delta`)
epsilon_bounds(delta)         ``exact_curve`` / PLD / RDP     inversion bracket / optimistic PLD
                                                              below, epsilon() above /
                                                              ``(0, epsilon())``
rdp(alpha)                    ``rdp`` / ``loss_laws`` / PLD   declared curve / the laws'
                                                              divergence / pessimistic PLD
tradeoff(fpr)                 ``exact_tradeoff`` / PLD /      exact / Neyman-Pearson curve of
                              otherwise                       the pessimistic PLDs / dual of
                                                              delta(eps)
any question, a ledger        at most ``EXACT_PHASES``        ``"exact"``: the composition of
                              distinct records (full-batch    the records (two or more
                              Gaussians count as one)         full-batch Gaussians folded into
                                                              one), by the rows above
epsilon(delta), a ledger      more, every record with a PLD   ``"online"``: the composed history
                                                              at that delta (incremental; the
                                                              filter decides on this answer)
delta(epsilon), a ledger      more, every record with a PLD   the composed history at the answer
                                                              (``ledger_delta.online_delta``); near
                                                              its certificate's floor, the smaller
                                                              of it and the rounded schedule
bounds, a ledger              more, every record with a PLD   epsilon()'s answer over the fast
                                                              path's (or the schedule rounded
                                                              down's) lower end
any question, a ledger        more, a record without a PLD    ``"rounded"``: the schedule rounded
                                                              up (down for a lower end), by the
                                                              rows above
============================  ==============================  ==================================

So the same question asked of a mechanism, of its composition and of a ledger that
recorded it prints the same number, and a calibrator (which asks the composition) plans
against the very answer a privacy filter of the same budget decides on.  A ledger of one
repeated DP-SGD step is an ``"exact"`` ledger however long it runs: its answer is the
composition's (issue 36).

Both neighbouring directions are accounted and the worse is reported.  Each mechanism
function takes the mechanism and calls back only its hooks and its engine-facing
methods (``_epsilon_upper``, ``_pld_one``, ``_pair``, ``_rdp_curve``, ...), so a
subclass that overrides one of those is routed through its override.  The refinement
policy (when a small answer has its grids recomputed, how far) is explained in
``docs/theory/pld.md`` and ``docs/design.md``.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from .bracket import Bracket
from .capabilities import MissingCapabilityError
from .curve_down import lower_end
from .families.gaussian_dp import certified_gaussian_epsilon
from .interface import Routed, RoutedLedger
from .laws.loss_law_rdp import loss_law_rdp
from .ledger_delta import online_delta, online_epsilon
from .mechanism_cache import PLDUpper, PLDUpperAt, pld_upper_key
from .numerics import TINY, invert_decreasing
from .pld.pld_settings import (
    CAP_STEPS,
    DEFAULT_TAIL,
    DEFAULT_TOL,
    MAX_REFINEMENTS,
    MIN_CAP,
    REFINE_STEPS,
    SCREEN_ERR_TAILS,
    TOL_CHECK_ABOVE,
    TOL_CHECK_STEPS,
    TOL_MAX_HALVINGS,
    TOL_REFINEMENTS,
    PLDSettings,
)
from .queries.tradeoff import pld_route, pld_tradeoff_lower, tradeoff_from_delta
from .rdp.conversion import rdp_to_delta, rdp_to_delta_grid, rdp_to_epsilon
from .rdp.rdp_floor import rdp_may_win

__all__ = [
    "EXACT_PHASES",
    "FOLLOW_MAX_POINTS",
    "FOLLOW_ROUNDS",
    "LEDGER_ROUTES",
    "RDP_SKIP_MASS_FRACTION",
    "derived_delta",
    "derived_rdp",
    "epsilon_bracket",
    "epsilon_upper",
    "ledger_bracket",
    "ledger_delta",
    "ledger_epsilon",
    "ledger_rdp",
    "ledger_route",
    "ledger_tradeoff",
    "pld_delta_follow",
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
#: a ledger with up to this many distinct records is answered as their composition
#: (``"exact"``); beyond, DP-SGD steps are rounded to the grid and epsilon is read off
#: the composed history
EXACT_PHASES = 16
#: the names :func:`ledger_route` returns
LEDGER_ROUTES = ("exact", "online", "rounded")


def derived_delta(mech: Routed, flat: np.ndarray, tol: float | None) -> np.ndarray:
    """delta at the epsilons ``flat`` for a mechanism without an exact curve: the
    smaller of the PLD and RDP bounds (1 when neither route exists).  The RDP
    conversion is not run where :func:`rdp_may_win` shows from a certified floor that it
    cannot answer below the PLD's (a schedule of subsampled Gaussians: issue 37)."""
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
        need = rdp_may_win(mech, flat, out)
        if need.all() and flat.size == 1:
            rdp_d = np.array([rdp_to_delta(mech._rdp_curve, flat[0])])
        elif need.all():  # one RDP evaluation for all epsilons (a curve, e.g. for tradeoff)
            rdp_d = rdp_to_delta_grid(mech._rdp_curve, flat)
        else:  # the same conversion where it may win (per epsilon the grid's is its own)
            rdp_d = np.ones(flat.shape)
            if need.any():
                rdp_d[need] = rdp_to_delta_grid(mech._rdp_curve, flat[need])
        out = np.minimum(out, rdp_d)
    return out


def pld_delta_follow(
    mech: Routed, epsilon: np.ndarray, found: np.ndarray, tol: float | None
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


def exact_bracket(mech: Routed, delta: float) -> tuple[float, float]:
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


def epsilon_upper(mech: Routed, delta: float, tol: float | None) -> float:
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


def pld_upper(mech: Routed, delta: float, tol: float | None) -> PLDUpper:
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
    for _ in range(TOL_REFINEMENTS):
        cap = _tol_cap(mech, delta, tol, e_best, plds, deciding, settings)
        if cap is None:
            break
        settings = settings.capped(cap)
        e_new, plds, deciding = pld_upper_at(mech, delta, tol, settings)
        tried.append(settings)
        e_best = min(e_best, e_new)  # both are certified upper bounds
    out = PLDUpper(e_best, plds, deciding, settings, tried)
    cache[key] = out
    return out


def _tol_cap(mech, delta, tol, upper, plds, deciding, settings) -> float | None:
    """The step cap that should bring a large answer within ``tol``, or None.

    For ``upper >= TOL_CHECK_ABOVE``, a deciding grid step coarser than ``tol *
    upper`` and at most :data:`TOL_CHECK_STEPS` composed steps only (every other
    answer keeps the grids of :func:`pld_upper`'s first rule, bit for bit; there
    ``tol`` is the step rule's, as below 32): the optimistic PLDs of the deciding
    directions on the same settings give a certified lower end (as
    :func:`epsilon_bracket` takes it); when the bracket is wider than ``tol`` (relative)
    the truth may be farther than ``tol`` below ``upper``, and the grids are capped at
    the deciding step over ``2^k``, ``k = ceil(log2(width / tol))`` (at most
    :data:`TOL_MAX_HALVINGS`, above :data:`MIN_CAP`): both ends' discretisation errors
    shrink at least in proportion to the step on the losses measured (bimodal
    subsampled Gaussians, q 0.1 - 0.5, sigma 0.03 - 0.1: benchmarks/README.md session
    33).  Where the refinement does not close the bracket, the next round tries again
    (:data:`TOL_REFINEMENTS` in all)."""
    if not (TOL_CHECK_ABOVE <= upper < math.inf):
        return None
    wanted = tol or DEFAULT_TOL
    step = max(plds[w].step for w in deciding)
    parts = getattr(mech, "parts", ())
    if step <= wanted * upper or sum(c for _, c in parts) > TOL_CHECK_STEPS:
        # a grid step within tol of the answer: the first rule's grids, as below 32
        # (DP-SGD at T 1e6, epsilon 61.8, step 0.002: its upper end within 1.5e-5 of
        # the refined lower end; re-gridding it cost 6.8x the call for the same upper)
        return None
    lower = max(mech._pld_one(False, settings, w).epsilon(delta) for w in deciding)
    width = (upper - lower) / upper
    if not width > wanted:
        return None
    halvings = min(max(math.ceil(math.log2(width / wanted)), 1), TOL_MAX_HALVINGS)
    cap = step / 2.0**halvings
    if cap < MIN_CAP or (settings.coarse_cap is not None and cap >= settings.coarse_cap):
        return None
    return cap


def pld_upper_at(
    mech: Routed, delta: float, tol: float | None, settings: PLDSettings
) -> PLDUpperAt:
    """Upper bound at fixed grid settings: the epsilon, the PLDs, the deciding directions
    (:meth:`PLDPair.epsilon`; its coarse add PLD has tol 0.1, a fraction of the cost)."""
    # the coarse add PLD only screens: its spectral power may carry a larger certificate
    coarse = PLDSettings(max(tol or DEFAULT_TOL, 0.1), delta).screening(SCREEN_ERR_TAILS)
    if settings.coarse_cap is not None:
        coarse = coarse.capped(settings.coarse_cap)
    out = mech._pair(True, settings, coarse).epsilon(delta)
    return PLDUpperAt(out.epsilon, out.plds, out.deciding)


def epsilon_bracket(mech: Routed, delta: float, tol: float | None) -> tuple[float, float]:
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
        lo, hi = exact_bracket(mech, delta)
        down = getattr(mech, "_delta_exact_down", None)
        if down is not None and mech.gdp_mu() is None and lo > 0.0:
            # the bisection's lo only has the float curve above delta; the certified
            # lower end is where the curve rounded down still is (curve_down.py)
            lo = lower_end(down, delta, lo, hi)
        return (lo, hi)
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


def rdp_curve(mech: Routed, alpha: np.ndarray) -> np.ndarray:
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


def derived_rdp(mech: Routed, flat: np.ndarray) -> np.ndarray:
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


def tradeoff_curve(mech: Routed, fpr: np.ndarray, tol: float | None) -> np.ndarray:
    """beta at the false-positive rates ``fpr``: the exact curve, else the Neyman-Pearson
    curve of the pessimistic PLDs, else the dual of the (eps, delta) curve."""
    if mech.capabilities.exact_tradeoff:
        return mech._tradeoff_exact(fpr)
    if pld_route(mech):
        return pld_tradeoff_lower(mech, fpr, PLDSettings(tol))
    # a closed form that knows where its curve's kinks are (the binomial RR's loss atoms)
    own_nodes = getattr(mech, "_tradeoff_nodes", None)
    nodes = own_nodes() if own_nodes is not None else None
    return tradeoff_from_delta(partial(mech.delta, tol=tol), fpr, nodes)


def ledger_route(distinct: int, all_pld: bool) -> str:
    """Which representation answers a ledger's questions (the decision table above).

    Parameters
    ----------
    distinct : int
        Distinct records in the ledger (counting a record a filter is checking); every
        full-batch Gaussian record counts as one, since they compose to one Gaussian
        (:class:`~dpacct.accountant.ledger.records.GaussianFold`).
    all_pld : bool
        Whether every record has a privacy loss distribution (a DP-SGD step always
        has one).

    Returns
    -------
    str
        ``"exact"``: at most :data:`EXACT_PHASES` distinct records, answered as their
        composition, a mechanism like any other (so a ledger of one repeated step
        prints what :func:`~dpacct.accountant.transformers.compose.compose` prints).
        ``"online"``: more, every one with a PLD: ``epsilon`` is read off the composed
        history at that delta (the one the fixed-schedule filter checks) and ``delta``
        off the same histories (:func:`~.ledger_delta.online_delta`), ``rdp`` and ``tradeoff`` off
        the schedule rounded up to the grid.  ``"rounded"``: more, one
        without a PLD: the schedule rounded to the grid (up for upper bounds, down for
        lower ones), composed with the other records.

    Examples
    --------
    >>> ledger_route(1, True), ledger_route(17, True), ledger_route(17, False)
    ('exact', 'online', 'rounded')
    """
    if distinct <= EXACT_PHASES:
        return "exact"
    return "online" if all_pld else "rounded"


# ----------------------------------------------------------------------- a ledger
# A ledger is a mechanism over its history
# (:class:`~dpacct.accountant.ledger.ledger_mechanism.LedgerMechanism`): its queries come
# here, and each takes the row of the decision table :func:`ledger_route` picks.  The
# ledger supplies the representations (``composition()``, ``accounted(upper)``,
# ``online(delta)``, ``fast_lower(delta)``, ``certified(delta)``); this module chooses.


def ledger_epsilon(ledger: RoutedLedger, delta: float, tol: float | None) -> float:
    """epsilon(delta > 0) of a ledger: 0 when empty; ``"online"``: the composed history
    at ``delta`` (the answer the fixed-schedule filter decides on; at tiny deltas the
    tilted composition's too, :func:`~.ledger_delta.online_epsilon`); otherwise the
    composition (``"exact"``) or the schedule rounded up (``"rounded"``), by the
    mechanism rows, and a filter's certified bound when smaller."""
    if ledger.empty:
        return 0.0
    if ledger.route == "online":
        return online_epsilon(ledger, delta)
    eps = float(ledger.accounted(True).epsilon(delta, tol=tol))
    certified = ledger.certified(delta)
    return eps if certified is None else min(eps, certified)


def ledger_delta(ledger: RoutedLedger, flat: np.ndarray, tol: float | None) -> np.ndarray:
    """delta at the epsilons ``flat`` of a ledger: 0 when empty; ``"online"``: the
    composed history, the representation :func:`ledger_epsilon` reads
    (:func:`~.ledger_delta.online_delta`); otherwise the composition (``"exact"``) or the schedule
    rounded up to the grid (``"rounded"``), by the mechanism rows."""
    if ledger.empty:
        return np.zeros(flat.shape)
    if ledger.route == "online":
        return online_delta(ledger, flat, tol)
    out = ledger.accounted(True).delta(flat, tol=tol)
    return np.asarray(out, dtype=float).reshape(flat.shape)


def ledger_bracket(
    ledger: RoutedLedger, delta: float, tol: float | None, width: float | None = None
) -> Bracket:
    """The bracket of a ledger's epsilon at ``delta >= 0``.

    ``(0, 0)`` when empty; ``delta = 0`` or ``"exact"``: the composition's bracket
    (its lower end, when full-batch Gaussians are folded beside other records, that of
    the composition with the folded sigma rounded up).
    ``"online"``: the upper end is :func:`ledger_epsilon`'s answer (the composed
    history) and the lower end the fast path's certified one when every record is a
    DP-SGD step, else the schedule rounded down's; ``"rounded"``: the schedule rounded
    up's epsilon over the schedule rounded down's lower end.  Neither end is clipped
    to the other: a lower end above the upper one (beyond round-off) is a certificate
    contradiction and raises ``RuntimeError``, as a mechanism's bracket does
    (:func:`epsilon_bracket`).  ``width`` (relative, or None): the fast path's lower end
    is refined while the bracket is wider (:meth:`~dpacct.accountant.ledger.
    ledger_mechanism.LedgerMechanism.fast_lower`); only when asked, as it costs a few
    times the bracket.
    """
    if ledger.empty:
        return Bracket(0.0, 0.0)
    route = ledger.route
    if delta == 0 or route == "exact":
        bracket = ledger.composition().epsilon_bounds(delta, tol=tol)
        below = None if delta == 0 else ledger.composition_below()
        if below is None:
            return bracket
        # full-batch Gaussians folded beside other records: the lower end of the
        # composition whose folded sigma is rounded up (dominated by the records)
        lower = below.epsilon_bounds(delta, tol=tol)[0]
        return _checked(ledger, delta, Bracket(float(lower), float(bracket[1]), bracket.bounds))
    if route == "online":
        # the lower end first: its fast path's arrays are freed before the composed
        # history (kept for later queries) is built, as before the router held them
        fast = ledger.fast_lower(delta)
        upper = ledger.epsilon(delta, tol=tol)
        if fast is not None:
            # refined on a finer step when wider than ``width``, if asked (issue 37)
            lower = ledger.fast_lower(delta, upper, width) or fast
            return _checked(ledger, delta, Bracket(lower, upper))
    else:
        upper = float(ledger.accounted(True).epsilon(delta, tol=tol))
    lower = ledger.accounted(False).epsilon_bounds(delta, tol=tol)
    return _checked(ledger, delta, Bracket(float(lower[0]), upper, lower.bounds))


def _checked(ledger: RoutedLedger, delta: float, bracket: Bracket) -> Bracket:
    """``bracket`` itself, unless its lower end is above its upper end beyond round-off
    (both are certified, so one of them is wrong): then ``RuntimeError``, as
    :func:`epsilon_bracket` raises for a mechanism (the session-27 review: a ledger's
    lower end taken at the wrong delta came back above its upper end unnoticed)."""
    lower, upper = float(bracket[0]), float(bracket[1])
    if lower > upper * (1.0 + 1e-12) + TINY:
        raise RuntimeError(
            f"certificate contradiction in a ledger of the {ledger.route!r} route at "
            f"delta={delta!r}: lower bound {lower!r} exceeds upper bound {upper!r}"
        )
    return bracket


def ledger_rdp(ledger: RoutedLedger, flat: np.ndarray) -> np.ndarray:
    """Renyi epsilons of a ledger at the orders ``flat``: 0 when empty, else those of
    the composition (``"exact"``) or of the schedule rounded up (an upper bound: every
    rounded step dominates its record)."""
    if ledger.empty:
        return np.zeros(flat.shape)
    return np.asarray(ledger.accounted(True).rdp(flat), dtype=float).reshape(flat.shape)


def ledger_tradeoff(ledger: RoutedLedger, fpr: np.ndarray, tol: float | None) -> np.ndarray:
    """The safe-side trade-off of a ledger at ``fpr``: ``1 - fpr`` when empty, else
    the composition's (``"exact"``) or the schedule rounded up's (a lower bound: the
    rounded schedule dominates the records)."""
    if ledger.empty:
        return 1.0 - fpr
    out = ledger.accounted(True).tradeoff(fpr, tol=tol)
    return np.asarray(out, dtype=float).reshape(fpr.shape)
