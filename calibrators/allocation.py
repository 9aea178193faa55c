"""The noise multiplier of a random-allocation run (each record in k of T steps per epoch).

:func:`random_allocation_noise_multiplier` searches the noise multiplier at which
:func:`~dpacct.accountant.transformers.random_allocation` (the certified upper end of its
bracket, docs/theory/allocation_k_of_t.md) meets ``(epsilon, delta)``, with the generic
:func:`~dpacct.calibrators.calibrate`; a Poisson central-limit estimate at rate ``k / T``
only steers the search.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.optimize import brentq

from dpacct.accountant import random_allocation
from dpacct.accountant.families.gaussian import GaussianMechanism
from dpacct.accountant.mechanism_cache import instance_cache
from dpacct.accountant.transformers.random_allocation import RandomAllocationMechanism
from dpacct.accountant.transformers.random_allocation_k3 import COARSE4, k3_tried
from dpacct.accountant.transformers.random_allocation_k4 import (
    K4_SQ_SIGMA,
    K4_SQ_STEPS,
    coarse_route,
    four_level,
    k_tried,
)
from dpacct.accountant.transformers.random_allocation_k5 import K5_SQ_SIGMA, K5_SQ_STEPS
from dpacct.accountant.validation import check_count, check_delta, check_positive

from .calibrate import Calibration, calibrate
from .dpsgd import _clt_epsilon

__all__ = ["random_allocation_noise_multiplier"]


def _checked(epsilon, delta, steps, k, epochs, full_output, direct):
    """The calibrator's arguments, validated: ``(epsilon, delta, steps, k, epochs)``."""
    eps = check_positive("epsilon", epsilon)
    d = check_delta(delta)
    t = check_count(steps, "steps")
    kk = check_count(k, "k")
    e = check_count(epochs, "epochs")
    if kk > t:
        raise ValueError(f"k must be <= steps ({t}), got {kk}")
    if not isinstance(full_output, bool):
        raise TypeError(f"full_output must be True or False, got {full_output!r}")
    if not isinstance(direct, bool):
        raise TypeError(f"direct must be True or False, got {direct!r}")
    return eps, d, t, kk, e


# long function: 63 of its lines are the numpydoc docstring (routes, rectangle edges, example)
def random_allocation_noise_multiplier(
    epsilon: float,
    delta: float,
    steps: int,
    *,
    k: int = 1,
    epochs: int = 1,
    rtol: float = 1e-3,
    tol: float | None = None,
    full_output: bool = False,
    direct: bool = True,
) -> float | Calibration:
    """The noise multiplier at which k-of-T random allocation meets ``(epsilon, delta)``.

    Every epoch allocates each record to ``k`` of its ``steps`` Gaussian steps, chosen
    uniformly; ``epochs`` epochs are composed.  The epsilon checked is
    :meth:`RandomAllocationMechanism.epsilon
    <dpacct.accountant.RandomAllocationMechanism.epsilon>`, a sound upper bound, so the
    returned sigma is sufficient; its ``epsilon_bounds`` says how much smaller the
    truth can be.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1).
    steps : int
        Steps per epoch ``T``, >= 1.
    k : int, default 1
        Steps per record per epoch, ``1 <= k <= steps``.
    epochs : int, default 1
        Epochs, >= 1.
    rtol : float, default 1e-3
        The epsilon reached lies in ``[epsilon * (1 - rtol), epsilon]``.
    tol : float, optional
        Accuracy of the engine's epsilon.
    full_output : bool, default False
        Return the :class:`~dpacct.calibrators.Calibration` instead of the number.
    direct : bool, default True
        Passed to :func:`~dpacct.accountant.transformers.random_allocation`: where a
        direct route is tried (``k = 2`` to ``5``) the search first runs on the blocks
        alone, then, where the direct route's epsilon at their sigma is below
        ``epsilon * (1 - rtol)``, again below it with the route (a law of a few CPU
        seconds per sigma tried at k = 2, 5-60 at k = 3-5).  Where the route's law is
        Proposition 10's four-level law, that gain and the search's model of the route
        come from the law on coarse nodes (two laws of about a fifth of the CPU), so that
        one or two of the route's laws are built (eps 3, T 100, k 4: two, against three
        steered by the estimate alone).  Where the route's law is on coarse nodes
        around the estimate's sigma (one epoch) the search runs on the route alone and
        builds the blocks' law only at the answer (eps 8, T 100, k 4: 91 -> 38 CPU s).
        Where the route's law changes at the lower sigma edge of Proposition 15's or
        16's rectangle (k 4 / 5, T 10-20, sigma 1) inside the search's interval, the
        search runs on one side of the edge, and stops on it where epsilon jumps below
        the target there (eps 9.7, T 10, k 5: sigma 1.0 with one law of the rectangle,
        against about ten bisecting the jump: 220 s idle before).

    Returns
    -------
    float or Calibration

    Raises
    ------
    ValueError
        A parameter out of range (named), or ``k > steps``.

    Examples
    --------
    >>> from dpacct.accountant import random_allocation
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> s = random_allocation_noise_multiplier(1.0, 1e-6, 100, k=3, epochs=2)
    >>> run = random_allocation(GaussianMechanism(s), 100, k=3, epochs=2)
    >>> bool(1.0 * (1 - 1e-3) <= run.epsilon(1e-6) <= 1.0)
    True
    """
    eps, d, t, kk, e = _checked(epsilon, delta, steps, k, epochs, full_output, direct)

    def family(sigma: float, use_direct: bool = False):
        return random_allocation(
            GaussianMechanism(sigma=sigma), t, k=kk, epochs=e, direct=use_direct
        )

    # steering only: Poisson at rate k / T over T * epochs steps (Bu et al. 2020's CLT)
    def estimate(sigma: float) -> float:
        return _clt_epsilon(sigma, kk / t, t * e, d)

    if direct:
        first = _route_first(family, eps, d, t, kk, e, rtol, tol, estimate)
        if first is not None:
            return first if full_output else float(first.parameter)
    start = math.sqrt(kk * e) / eps  # about the unamplified Gaussian's scale
    cal = calibrate(
        family,
        eps,
        d,
        interval=(0.55, max(1.0, start)),
        rtol=rtol,
        increasing=False,
        estimate=estimate,
        tol=tol,
        name="noise_multiplier",
    )
    cal = _with_direct(family, cal, eps, d, rtol, tol, estimate, direct)
    return cal if full_output else float(cal.parameter)


def _fine_over_coarse(t: int, k: int) -> float:
    """The default four-level law's epsilon over the coarse one's (:func:`_coarse_slope`),
    steering only.  Measured (delta 1e-6, the remove law, one epoch): k = 3: sigma 0.87,
    T 100 0.99782; sigma 1.2, T 30 0.99769; k = 4: sigma 1, T 10 0.99852; T 20 0.99833
    (sigma 0.7: 0.99914); sigma 0.78, T 50 0.99849; sigma 0.975, T 100 0.99659; sigma 1,
    T 200 0.99456.  A single 0.998 (session 28's first version) put the first default
    law 0.05-0.15 % off, outside the 0.05 % wide half-window, so a second was built (eps
    6.25, T 50, k 4: 36 CPU s each).  Not measured at k >= 5: 0.998 kept there (eps 9.7,
    T 10, k 5: 0.9985 moved the answer up by 1.6e-6)."""
    if k == 3:
        return 0.9978
    if k >= 5:
        return 0.998
    return float(np.interp(math.log(t), [math.log(50.0), math.log(100.0), math.log(200.0)],
                           [0.9985, 0.9966, 0.9946]))


def _with_direct(family, cal: Calibration, eps: float, d: float, rtol: float, tol, estimate,
                 direct: bool) -> Calibration:
    """The blocks' calibration ``cal``, refined with the direct route where it gains at
    their sigma: below ``eps (1 - rtol)`` there (otherwise the search would build one law
    per sigma tried and return within ``rtol`` of the blocks' answer).

    Where the route's law is Proposition 10's four-level law, the gain and the search's
    model come from the same law on coarse nodes (:func:`_coarse_slope`: two laws of
    about a fifth of the CPU each), so the first law of the route built is near the
    answer, and the search keeps to the upper half of the window (a sigma at or below
    the one the unsteered search lands on, which aims at the middle: eps 3, T 100, k 4
    0.963195 against 0.963306, two laws of the route, against three); elsewhere from the
    route's law at the blocks' sigma, steered by ``estimate`` scaled to it there."""
    s_top = float(cal.parameter)
    top = family(s_top, direct)
    # (not top._direct_route: building the route builds its law, compose's check of
    # the parts)
    if not (top._has_k2_route or top._has_k3_route or top._has_k4_route):
        return cal
    low = eps * (1.0 - rtol)
    coarse = _coarse_slope(top, s_top, eps * (1.0 - 0.5 * rtol), d, tol, estimate)
    if coarse is not None and coarse[0] < low:
        c_top, slope = coarse
        # the upper half of the window (the model is close enough to land there): a
        # sigma below the middle of the window, where the unsteered search aims
        rho = _fine_over_coarse(top.steps, top.k)
        model = lambda s: rho * c_top * (s / s_top) ** slope  # noqa: E731
        return _refine_direct(lambda s: family(s, True), s_top, eps, d, 0.5 * rtol, tol,
                              model, start=None, edge=_sq_edge(top.steps, top.k))
    e_top = float(top.epsilon(d, tol=tol))
    if e_top >= low:
        return cal
    if coarse is not None:
        slope = coarse[1]

        def model(s: float) -> float:
            return e_top * (s / s_top) ** slope
    else:
        # steering only: the estimate scaled to the route's epsilon at s_top
        ratio = e_top / max(estimate(s_top), 1e-300)

        def model(s: float) -> float:
            return ratio * estimate(s)

    def route(s: float):  # the law at s_top is the one just built
        return top if abs(s / s_top - 1.0) < 1e-12 else family(s, True)

    return _refine_direct(route, s_top, eps, d, rtol if coarse is None else 0.5 * rtol, tol,
                          model, start=s_top, edge=_sq_edge(top.steps, top.k))


class _RouteOnly(RandomAllocationMechanism):
    """The run without the blocks' law: the least of the RDP bounds, the unamplified
    Gaussian and the direct route's remove law with the RDP / direct add bounds
    (``_k2_split_epsilon``), each a sound upper bound, so an upper bound on the
    mechanism's epsilon (a minimum over fewer of its routes).  Left out: the blocks'
    PLD (:attr:`~RandomAllocationMechanism.pld_route`) and the route composed with the
    blocks' add laws, both of which build the blocks' one-epoch law (sigma 0.6, T 100,
    k 4: about 12 CPU s, against 7 for the route's coarse law).  The search's family
    where the route's law is on coarse nodes (:func:`_route_first`); :func:`_certified`
    takes the mechanism itself at the answer.  Not elsewhere: where the add direction
    binds its bounds are looser than the blocks' add laws (sigma 2, T 10, k 4: 3.3819
    against the mechanism's 3.1393)."""

    def _epsilon_at(self, delta: float, tol: float | None) -> float:
        if not (self._has_k2_route or self._has_k3_route or self._has_k4_route):
            return min(max(self._epsilon_directions(delta, tol)),
                       float(self.unamplified.epsilon(delta)))
        return min(max(self._epsilon_directions(delta, tol)),
                   float(self.unamplified.epsilon(delta)),
                   self._k2_split_epsilon(delta, tol))


def _certified(family, cal: Calibration, eps: float, d: float, rtol: float,
               tol) -> Calibration | None:
    """``cal`` (a search on :class:`_RouteOnly`) with the mechanism itself at its sigma:
    the least of every route, the blocks' PLD included, so its epsilon is at most
    ``cal.epsilon <= eps``; None where that falls below ``eps (1 - rtol)`` (the blocks
    or the route's add laws won there)."""
    run = family(float(cal.parameter), True)
    # the same base, steps, k and epochs: what the search built at this sigma (the
    # route's law and remove PLD, the RDP bounds) is the mechanism's
    instance_cache(run).update(instance_cache(cal.mechanism))
    e_run = float(run.epsilon(d, tol=tol))
    if e_run < eps * (1.0 - rtol):
        return None
    return dataclasses.replace(cal, mechanism=run, epsilon=e_run)


def _coarse_law(sigma: float, t: int, k: int) -> bool:
    """Whether the direct route is tried at ``sigma`` with its law on
    :data:`~dpacct.accountant.transformers.random_allocation_k3.COARSE4`'s nodes
    (:func:`~dpacct.accountant.transformers.random_allocation_k4.four_level`): there the
    blocks' PLD costs more than the route's law and the route wins by 5-10 %."""
    tried = k3_tried(sigma, t) if k == 3 else k >= 4 and k_tried(sigma, t, k)
    return bool(tried) and four_level(sigma, t, k) == COARSE4


class _OutOfRange(Exception):
    """The route-first search left the range where the route's law is coarse."""


def _route_first(family, eps: float, d: float, t: int, k: int, e: int, rtol: float, tol,
                 estimate) -> Calibration | None:
    """The search on the route alone (:class:`_RouteOnly`), without the blocks' search,
    where the route's law is on coarse nodes at the estimate's root ``s0`` and at
    ``1.1 s0`` (the blocks' sigma was 3-13 % above it, eps 3-9.7, T 10-100): eps 8,
    T 100, k 4 builds the blocks' PLD once, at the answer, instead of at every sigma
    tried (four of the blocks' search, three of the route's, 9-12 CPU s each).  The
    window is the upper half of ``rtol``'s, as where the route is steered by the coarse
    law (:func:`_with_direct`).  None where not tried, or where the mechanism's epsilon
    at the answer falls below that window (then the blocks' search runs as before)."""
    if e != 1:
        return None
    f = lambda s: estimate(s) - eps  # noqa: E731
    try:
        s0 = brentq(f, 0.05, 50.0, xtol=1e-6)
    except ValueError:
        return None
    if not (_coarse_law(s0, t, k) and _coarse_law(1.1 * s0, t, k)):
        return None
    def ro(s: float) -> _RouteOnly:
        if not _coarse_law(s, t, k):  # (a default law there costs 15-60 CPU s)
            raise _OutOfRange
        return _RouteOnly(GaussianMechanism(sigma=s), t, k=k, epochs=e)

    try:
        cal = calibrate(ro, eps, d, interval=(s0, 1.1 * s0), rtol=0.5 * rtol,
                        increasing=False, estimate=estimate, tol=tol, name="noise_multiplier")
    except _OutOfRange:
        # the answer is outside the coarse range (eps 11.32, T 40, k 4: below sigma 0.6,
        # after three coarse laws of 3-4 CPU s): the blocks' search
        return None
    # None where the mechanism's epsilon there is below the (upper half-) window
    return _certified(family, cal, eps, d, 0.5 * rtol, tol)


def _coarse_slope(top, s_top: float, aim: float, d: float, tol, estimate):
    """``(epsilon, slope)`` of the direct route on coarse nodes
    (:func:`~dpacct.accountant.transformers.random_allocation_k4.coarse_route`): its
    epsilon at ``s_top`` and the slope of ``log epsilon`` against ``log sigma`` from
    there to where ``estimate``, scaled to it at ``s_top``, meets ``aim``; None where the
    route's law is not the four-level one.  Steering only: measured at sigma 0.975 ->
    0.961, T 100, k 4: -2.124 against the default law's -2.133."""
    s_top, t, k, e = float(s_top), top.steps, top.k, top.epochs
    run = coarse_route(s_top, t, k, e) if k >= 3 else None
    if run is None:
        return None
    c_top = float(run.epsilon(d, tol=tol))
    ratio = c_top / max(estimate(s_top), 1e-300)
    lo = 0.8 * s_top
    f = lambda s: math.log(ratio * estimate(s) / aim)  # noqa: E731
    if not (f(lo) > 0 > f(s_top) or f(lo) < 0 < f(s_top)):
        s_g = 0.985 * s_top
    else:
        s_g = brentq(f, lo, s_top, xtol=1e-6 * s_top)
    s_g = min(max(s_g, 0.9 * s_top), (1.0 - 1e-3) * s_top)
    run_g = coarse_route(s_g, t, k, e)
    if run_g is None:
        return None
    return c_top, math.log(float(run_g.epsilon(d, tol=tol)) / c_top) / math.log(s_g / s_top)


def _refine_direct(family, top: float, eps: float, d: float, rtol: float, tol,
                   estimate=None, start: float | None = None,
                   edge: float | None = None) -> Calibration:
    """The calibration again with the direct route (k = 2 to 5), below the blocks' sigma
    ``top``, steered by ``estimate`` (a model of the route's epsilon; only where the
    search goes, never the answer, which is always an evaluated sigma).

    The route takes the smaller of itself and the blocks, so the sigma it needs is at
    most ``top``, and at least 0.95 of it wherever measured (docs/theory/
    allocation_k_of_t.md); :func:`calibrate` widens the interval if not.  Where the
    route's law changes at ``edge`` (:func:`_sq_edge`) inside that interval, the search
    runs on one side of it (:func:`_across_edge`).
    """
    if edge is not None and 0.8 * top <= edge < top and _near(estimate, eps, top, edge):
        return _across_edge(family, top, edge, eps, d, rtol, tol, estimate, start)
    return calibrate(
        family,
        eps,
        d,
        interval=(0.95 * top, top),
        rtol=rtol,
        increasing=False,
        estimate=estimate,
        start=start,
        tol=tol,
        name="noise_multiplier",
    )


#: the point just below a routed rectangle's lower edge that :func:`_across_edge` tries
#: (relative; the search's own resolution is 1e-12 in log sigma)
_BELOW_EDGE = 1e-9


def _near(estimate, eps: float, top: float, edge: float) -> bool:
    """Whether the search may reach ``edge``: where ``estimate`` (the model of the route's
    epsilon below the rectangle) meets ``eps`` at most 10 % above it (the rectangle's
    law is 3-6 % lower in epsilon, about 2-3 % in sigma), or without a model.  Steering
    only: elsewhere the search runs as before (eps 6, T 10, k 4: the model's sigma 1.17,
    two laws of the rectangle and no edge; trying the edge first cost two laws more)."""
    if estimate is None:
        return True
    hi = 1.1 * edge
    # the model decreases in sigma: its root is at most 1.1 edge where it meets eps there
    return hi >= top or float(estimate(hi)) <= eps


def _sq_edge(t: int, k: int) -> float | None:
    """The lower sigma edge of the rectangle where the route's law keeps the others' sum
    of squares at ``(T, k)`` (Propositions 15 and 16:
    :func:`~dpacct.accountant.transformers.random_allocation_k4.k4_sq_routed`,
    :func:`~dpacct.accountant.transformers.random_allocation_k5.k5_sq_routed`), else
    None.  Each sigma at or above it builds that law (k 5: about 17 CPU s idle, against 2-4
    below), and epsilon(sigma) jumps down there (sigma 1, T 10, k 5: 9.7271 -> 9.2547)."""
    for kk, sig, steps in ((4, K4_SQ_SIGMA, K4_SQ_STEPS), (5, K5_SQ_SIGMA, K5_SQ_STEPS)):
        if k == kk and steps[0] <= t <= steps[1]:
            return float(sig[0])
    return None


def _across_edge(family, top: float, edge: float, eps: float, d: float, rtol: float, tol,
                 estimate, start: float | None) -> Calibration:
    """:func:`_refine_direct`'s search where the route's law changes at ``edge``, with
    ``0.8 top <= edge < top``: first the route just below the edge (``below``, the cheap
    law); where it meets ``eps`` the search runs below it (domain capped there); else the
    route at the edge (one law of the rectangle), which is the answer where it meets
    ``eps``, even below the window (epsilon jumps down at the edge: no sigma between
    ``below`` and ``edge`` is searched); else the search runs at and above the edge.
    From ``0.8 top``, not ``0.95 top`` (the interval's lower end): eps 7.5, T 10, k 4
    has the blocks' sigma 1.0528, and the search widened below ``0.95 top = 1.0002``
    across the edge at 1.0.

    Every answer is an evaluated sigma whose epsilon is at most ``eps`` (sound whatever
    the shape of epsilon(sigma)).  That it is no larger than a search across the edge
    (bisecting the jump: sigma 1.00000000006, T 10, k 5, eps 9.7, after about ten laws
    of the rectangle) reads that the cheap law's epsilon does not increase in sigma below
    ``below``: the true epsilon does not (more noise is a post-processing), and the
    certified one was checked on the cases of benchmarks/README.md, session 38."""
    memo: dict[float, object] = {}

    def fam(s: float):  # each sigma built once (the search re-reads its answer)
        if s not in memo:
            memo[s] = family(s)
        return memo[s]

    below = edge * (1.0 - _BELOW_EDGE)
    run_below = fam(below)
    e_below = float(run_below.epsilon(d, tol=tol))
    if e_below <= eps:
        return calibrate(fam, eps, d, interval=(min(0.95 * top, 0.95 * below), below),
                         domain=(0.0, below),
                         rtol=rtol, increasing=False, estimate=estimate,
                         start=None if start is None else min(start, below), tol=tol,
                         name="noise_multiplier")
    run_edge = fam(edge)
    e_edge = float(run_edge.epsilon(d, tol=tol))
    if e_edge <= eps:
        return Calibration(parameter=edge, mechanism=run_edge, epsilon=e_edge,
                           target_epsilon=eps, delta=d, evaluations=2)
    # from the edge up: the search widens down to the edge at most (built: no law again)
    return calibrate(fam, eps, d, interval=(max(edge, 0.95 * top), top),
                     domain=(edge, math.inf), rtol=rtol, increasing=False,
                     estimate=estimate, start=start, tol=tol, name="noise_multiplier")
