"""Certified tiny deltas of DP-SGD phases: the fast path's composition, exponentially tilted.

The fast path (:mod:`~dpacct.accountant.pld.schedule_fast`) composes every cell by FFT
and bounds the round-off in l1 over the whole composed PMF: a few ``1e-12`` per FFT, a
few ``1e-10`` over the tree of a thousand cells.  A delta far below that (a small-q
ledger at an epsilon many times its epsilon at ``1e-5``) is then its certificate, not
the loss law's.  Tilting moves the composition to where the answer is:

for ``t >= 0`` and a cell's P-masses ``p_j`` at losses ``l_j``, the tilted PMF
``p~_j = p_j e^{t l_j} / M(t)`` (``M(t) = sum_j p_j e^{t l_j}``) composes like the PMF
itself, since ``e^{t (a + b)} = e^{t a} e^{t b}``: the composed finite PMF is exactly
``f(l) = g~(l) e^{K(t) - t l}`` with ``g~`` the composition of the tilted PMFs and
``K(t) = sum_c k_c log M_c(t)``.  An l1 error ``err`` of ``g~`` (aliasing, round-off
and the groups' errors, certified by :func:`~dpacct.accountant.pld.schedule_fast.
_compose_tree` as for any PMF of mass at most 1) moves the hockey-stick value
``delta(eps) = p_inf + sum_l f(l) (1 - e^{eps - l})_+`` by at most
``err * e^{K(t) - t eps} * max_{x >= 0} e^{-t x} (1 - e^{-x})
= err * e^{K(t) - t eps} (t / (1 + t))^t / (1 + t)``:
the round-off is scaled by the Chernoff bound ``e^{K(t) - t eps}`` of the composed
loss at ``eps`` (exponential tilting, the Cramer / saddle-point change of measure;
for DP accounting, Alghamdi et al. 2023, "The saddle-point method in differential
privacy", Section 3, who use it to approximate; here only the exact identity above is
used, with every rounding bounded).  ``t`` is chosen to minimise ``K(t) - t eps`` (the
tilted law is then centred at ``eps``); any ``t >= 0`` is sound.

Floating point, all inside the certificate: each tilted mass is computed as
``p_j * exp(t l_j - log M_up)`` with relative error at most ``eta_c`` (the exponent's
rounding, ``exp`` to 4 ulps, the product), so the untilted composition is at most
``(1 - eta)^{-N}`` times the exact one over ``N`` composed steps; ``log M_up`` is
``log M`` rounded up so that each tilted PMF has mass at most 1 (as the round-off
bound of the FFT products needs); a tilted mass that would fall below
:data:`TILT_FLOOR` has its P-mass moved to ``+inf`` instead (a pessimistic move:
delta only grows); the final sum is rounded up.  The discrete pair composed is the
fast path's connect-the-dots cells (Doroshenko et al. 2022), tails cut to ``+inf``, so
the answer is a certified upper bound on the delta of the schedule, both
neighbouring directions (the larger is returned).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ..numerics import TINY
from .pld_settings import tail_budgets
from .schedule_fast import ALIAS_SHARE, FAST_STEP, _compose_tree
from .sgm_cells import _pessimistic_cells

__all__ = ["TILT_CAP_SHARE", "TILT_FLOOR", "TiltedDelta", "tilted_delta", "tilted_epsilon"]

#: a tilted mass computed below this is not composed: its P-mass goes to ``+inf``
#: (kept far from the subnormal range, where the relative rounding bound fails)
TILT_FLOOR = 1e-280
#: unit round-off of binary64
_U = 2.0**-53
#: bisection rounds of the choice of ``t`` (tightness only: any ``t >= 0`` is sound)
TILT_SEARCH_ROUNDS = 40
#: ``t`` is capped where more P-mass than this share of the tails' cut would be floored
#: (:func:`_capped_tilt`; tightness only)
TILT_CAP_SHARE = 1e-2
#: bisection rounds of the cap (the largest t' within 6e-8 of t below it)
TILT_CAP_ROUNDS = 24


class _Family(NamedTuple):
    """The cells' P-masses and losses laid end to end (``start`` of each cell, ``cell`` of
    each mass) with the counts: the tilt family ``e^{t l}`` evaluated for all cells at
    once (tightness only: the certificate never reads these values)."""

    p: np.ndarray
    loss: np.ndarray
    start: np.ndarray
    cell: np.ndarray
    counts: np.ndarray

    @classmethod
    def of(cls, pmfs, losses, counts: np.ndarray) -> _Family:
        sizes = [p.size for p in pmfs]
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        cell = np.repeat(np.arange(len(pmfs)), sizes)
        return cls(np.concatenate(pmfs), np.concatenate(losses), starts, cell, counts)

    def _weights(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        a = t * self.loss
        top = np.maximum.reduceat(a, self.start)
        return self.p * np.exp(a - top[self.cell]), top

    def slope(self, t: float, epsilon: float) -> float:
        """``K'(t) - eps``: the composed tilted mean minus ``eps``."""
        w, _ = self._weights(t)
        mean = np.add.reduceat(w * self.loss, self.start) / (
            np.add.reduceat(w, self.start) + TINY
        )
        return float(self.counts @ mean) - epsilon

    def floored(self, t: float) -> float:
        """The P-mass (summed over the composed steps) whose tilted mass falls below
        :data:`TILT_FLOOR` at ``t``, i.e. that :func:`_tilted_composition` moves to
        ``+inf``."""
        w, _ = self._weights(t)
        total = np.add.reduceat(w, self.start)[self.cell]
        with np.errstate(divide="ignore"):
            low = np.log(w) - np.log(total + TINY) < math.log(TILT_FLOOR)
        low &= self.p > 0
        return float(self.counts @ np.add.reduceat(np.where(low, self.p, 0.0), self.start))


def _best_tilt(fam: _Family, epsilon: float, t_max: float) -> float:
    """``t`` in ``[0, t_max]`` minimising ``K(t) - t eps``: the root of
    ``K'(t) = sum_c k_c E_t[L_c] = eps`` (``E_t``: the mean of the cell tilted by ``t``,
    increasing in ``t`` since ``K`` is convex), by bisection; 0 when ``K'(0) >= eps``
    (no ``t > 0`` lowers the exponent), ``t_max`` when ``K'(t_max) < eps``."""
    if fam.slope(0.0, epsilon) >= 0.0:
        return 0.0
    lo, hi = 0.0, t_max
    if fam.slope(hi, epsilon) < 0.0:
        return hi
    for _ in range(TILT_SEARCH_ROUNDS):
        mid = 0.5 * (lo + hi)
        if fam.slope(mid, epsilon) < 0.0:
            lo = mid
        else:
            hi = mid
    return lo


def _capped_tilt(fam: _Family, t: float, limit: float) -> float | None:
    """The largest ``t' <= t`` (bisection) at which at most ``limit`` of P-mass is
    floored (:meth:`_Family.floored`), or None when ``t`` itself floors at most that
    (no cap needed) or ``t' = 0`` does not either.  Review 33: on 19 small-q records
    at epsilon >= 0.1 the exponent still falls at ``t_max``, where 6 % of P-mass is
    floored to ``+inf`` and becomes the whole answer."""
    if fam.floored(t) <= limit or fam.floored(0.0) > limit:
        return None
    lo, hi = 0.0, t
    for _ in range(TILT_CAP_ROUNDS):
        mid = 0.5 * (lo + hi)
        if fam.floored(mid) <= limit:
            lo = mid
        else:
            hi = mid
    return lo


class _Tilted(NamedTuple):
    """One direction's tilted composition: grid nodes and tilted masses (``pmf``), the
    tilt ``t``, the rounded-up exponent ``k_up``, the tilted l1 error ``err``, the
    relative ``slack`` of the untilting and the mass at ``+inf``."""

    nodes: np.ndarray
    pmf: np.ndarray
    t: float
    k_up: float
    err: float
    slack: float
    inf_mass: float


def _tilted_composition(
    arrays: tuple[np.ndarray, np.ndarray, np.ndarray],
    epsilon: float,
    step: float,
    budgets: tuple[float, float],
    add: bool,
    only_at: bool = False,
    enough: float = 0.0,
) -> _Tilted | None:
    """One direction's cells tilted by the ``t`` chosen at ``epsilon`` and composed
    (the module docstring's bounds); None when the composition cannot certify.

    ``only_at``: the composition is read at ``epsilon`` only.  Where ``epsilon`` is at
    least a grid step above the largest finite loss of the composition (the sum of the
    cells' largest losses times their counts: the add direction of small-q steps), no
    finite loss exceeds it and delta there is the mass at ``+inf`` alone: nothing is
    composed (an empty composition whose only mass is the tails' cut); and where the
    composition at the best ``t`` reads at most ``enough`` there (the other direction's
    answer, the larger of the two is returned) it is not capped.

    ``t`` minimises the Chernoff exponent (:func:`_best_tilt`); where that ``t`` would
    floor more than :data:`TILT_CAP_SHARE` of the tails' mass at ``+inf`` (a P-mass
    moved to ``+inf``, counted whole in delta), the composition at the largest ``t``
    that does not (:func:`_capped_tilt`) is made too and the one reading the smaller
    delta at ``epsilon`` is returned (both are sound)."""
    sig, qs, cnt = arrays
    firsts, pmfs, infs = _pessimistic_cells(sig, qs, step, budgets[0], add)
    infs = np.array(infs, dtype=float)
    losses = [(int(f) + np.arange(p.size)) * step for f, p in zip(firsts, pmfs, strict=True)]
    with np.errstate(divide="ignore"):
        tails = -math.expm1(float(cnt @ np.log1p(-np.minimum(infs, 1.0))))
    if only_at and epsilon >= float(cnt @ [lo[-1] for lo in losses]) + step:
        return _Tilted(np.empty(0), np.empty(0), 0.0, 0.0, 0.0, 0.0, tails * (1.0 + 1e-12))
    span = max(float(np.max(np.abs(lo))) for lo in losses)
    fam = _Family.of(pmfs, losses, cnt)
    # exponents t l stay within +-600 of the mass's scale: no overflow anywhere
    t = _best_tilt(fam, epsilon, 600.0 / max(span, step))
    cells = (firsts, pmfs, losses, infs, cnt)
    comp = _compose_at(cells, t, step, budgets[1])
    limit = TILT_CAP_SHARE * tails
    # the mass the tilting floored (its +inf mass beyond the tails' cut) within the cap
    if comp is None or comp.inf_mass <= tails * (1.0 + 1e-12) + limit:
        return comp
    if only_at and comp is not None and _read(comp, epsilon).delta <= enough:
        return comp
    capped = _capped_tilt(fam, t, limit)
    if capped is None:
        return comp
    other = _compose_at(cells, capped, step, budgets[1])
    if comp is None or (other is not None and _read(other, epsilon)[0] < _read(comp, epsilon)[0]):
        return other
    return comp


def _compose_at(cells, t: float, step: float, alias: float) -> _Tilted | None:
    """The cells ``(firsts, pmfs, losses, infs, counts)`` tilted by ``t`` and composed
    by the fast path's FFT tree (aliasing budget ``alias``), with the bounds of the
    module docstring; None when the composition cannot certify."""
    firsts, pmfs, losses, infs, cnt = cells
    infs = infs.copy()
    tilted, log_m, etas = [], np.empty(len(pmfs)), np.empty(len(pmfs))
    for i, (p, lo) in enumerate(zip(pmfs, losses, strict=True)):
        a = t * lo
        top = float(np.max(a))
        s = float(np.dot(p, np.exp(a - top)))
        # the exponent's rounding (t l, the subtraction) and exp (4 ulps), the product
        eta = 8.0 * _U + 4.0 * _U * (float(np.max(np.abs(a))) + abs(top) + 1.0)
        # log M rounded up: the computed sum's error (p.size terms) and the tilted
        # masses' own eta, so that every tilted PMF has mass at most 1
        lm = top + math.log(s + TINY) + 2.0 * eta + (p.size + 4.0) * _U * 2.0
        lm += 4.0 * _U * abs(lm)
        pt = p * np.exp(a - lm)
        low = (pt < TILT_FLOOR) & (p > 0)
        if low.any():  # P-mass moved to +inf (pessimistic), not composed
            infs[i] = min(1.0, infs[i] + float(np.sum(p[low])) * (1.0 + 1e-12))
            pt = np.where(low, 0.0, pt)
        tilted.append(pt)
        log_m[i], etas[i] = lm, eta
    res = _compose_tree(
        step,
        lambda ids: (firsts[ids], [tilted[i] for i in ids], np.zeros(len(ids))),
        np.array([p.size for p in pmfs]),
        cnt,
        alias,
        True,
    )
    if res is None:
        return None
    g, err = res
    k_up = float(cnt @ log_m)
    k_up += 2.0 * _U * (len(pmfs) + 2.0) * float(cnt @ np.abs(log_m)) + 1e-300
    # (1 - eta)^-N: the tilted masses' rounding, untilted
    slack = math.expm1(-float(cnt @ np.log1p(-etas))) + 1e-12
    with np.errstate(divide="ignore"):
        log_fin = float(cnt @ np.log1p(-np.minimum(infs, 1.0)))
    nodes = (g.offset + np.arange(g.pmf.size)) * g.step
    keep = g.pmf > 0
    return _Tilted(
        nodes[keep], g.pmf[keep], t, k_up, err, slack, -math.expm1(log_fin) * (1.0 + 1e-12)
    )


class TiltedDelta(NamedTuple):
    """A tilted composition's certified delta, the share of it that is certificate
    (round-off and aliasing, scaled by the Chernoff factor) and mass at ``+inf``
    (``share``), the share that is mass at ``+inf`` alone (``cut``: the tails cut and
    the floored tilted masses) and the share that is the scaled certificate alone
    (``cert``, computed apart: ``share - cut`` loses it when both are near 1)."""

    delta: float
    share: float
    cut: float
    cert: float = 0.0


def _read(comp: _Tilted, epsilon: float) -> TiltedDelta:
    """The certified delta at ``epsilon`` of a tilted composition (any ``epsilon``: the
    certificate term is valid at every one, smallest near the ``epsilon`` its ``t`` was
    chosen at) with its shares (:class:`TiltedDelta`)."""
    t = comp.t
    above = comp.nodes > epsilon
    at = comp.nodes[above]
    logs = np.log(comp.pmf[above]) + comp.k_up - t * at + np.log(-np.expm1(epsilon - at))
    # each term's exponent carries a few roundings of magnitudes up to ~1 500 (|log pmf|,
    # k_up, t l), exp 4 ulps: below 1e-12 relative; fsum adds them exactly
    with np.errstate(over="ignore"):  # far from the tilt's epsilon: inf, the total 1
        body = math.fsum(np.exp(logs).tolist()) * (1.0 + 1e-11) * (1.0 + comp.slack)
    factor = 1.0 if t == 0.0 else (t / (1.0 + t)) ** t / (1.0 + t)
    # (capped at e^700: err >= 1e-300, so the total is 1 there anyway)
    cert = comp.err * math.exp(min(comp.k_up - t * epsilon, 700.0)) * factor
    cert *= (1.0 + 1e-11) * (1.0 + comp.slack)
    total = min(1.0, (body + cert + comp.inf_mass) * (1.0 + 1e-12) + TINY)
    return TiltedDelta(
        total, (cert + comp.inf_mass) / total, comp.inf_mass / total, cert / total
    )


def _arrays(phases, target: float):
    """``(sigma, q, count)`` arrays of ``phases`` and the tail budgets ``(piece,
    alias)`` for ``target`` (the upper end's share of the aliasing budget)."""
    sig = np.array([float(s) for s, _, _ in phases])
    qs = np.array([float(q) for _, q, _ in phases])
    cnt = np.array([int(c) for _, _, c in phases], dtype=np.int64).astype(float)
    budget = tail_budgets(target, max(int(cnt.sum()), 1))
    return (sig, qs, cnt), (budget.piece, budget.alias * ALIAS_SHARE)


def tilted_delta(
    phases: Sequence[tuple[float, float, int]],
    epsilon: float,
    target: float,
    *,
    step: float | None = None,
) -> TiltedDelta | None:
    """Certified upper bound on the delta at ``epsilon`` of DP-SGD phases, tilted.

    Both neighbouring directions' connect-the-dots cells (those of
    :func:`~dpacct.accountant.pld.schedule_fast.fast_epsilon_bounds`' upper end, every
    distinct ``(sigma, q)`` a cell, no fine groups) are tilted by the ``t`` minimising
    their composed Chernoff exponent at ``epsilon`` and composed by
    :func:`~dpacct.accountant.pld.schedule_fast._compose_tree`; the delta is read off
    the untilted composition with every error term scaled as the module docstring
    derives.  Fast (one FFT tree per direction) and, at deltas far below the untilted
    round-off (about ``1e-10`` on a thousand cells), far tighter than the untilted
    paths; at moderate deltas no tighter than them (the connect-the-dots widening of
    one grid step, without the fine groups of the upper end).

    Parameters
    ----------
    phases : sequence of (float, float, int)
        ``(sigma, q, count)`` of every phase (each distinct pair a cell).
    epsilon : float
        The epsilon asked, >= 0.
    target : float
        The delta the tail cuts are sized for (any value in (0, 1] is sound: they cut
        ``1e-4 target`` of P-mass in all, to ``+inf``): about the answer expected.
    step : float, optional
        Loss grid step; None: :data:`~dpacct.accountant.pld.schedule_fast.FAST_STEP`.

    Returns
    -------
    TiltedDelta or None
        The delta bound, the share of it that is certificate (round-off, tails and the
        mass at ``+inf``) and the share that is mass at ``+inf``, or None when a
        composition cannot certify.

    Examples
    --------
    >>> from dpacct.accountant.pld.schedule_fast import fast_upper
    >>> phases = [(1.0 + 0.01 * i, 1e-3, 20) for i in range(30)]
    >>> d, share, cut, cert = tilted_delta(phases, 1.0, 1e-15)
    >>> floor = fast_upper(phases, 1e-9)[1]  # the untilted certificate's floor
    >>> bool(0 < d < 1e-13), bool(floor > 1e3 * d)
    (True, True)
    """
    if not phases:
        return TiltedDelta(0.0, 0.0, 0.0)
    if not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    if not (isinstance(target, (int, float)) and 0.0 < target <= 1.0):
        raise ValueError(f"target must be in (0, 1], got {target!r}")
    (sig, qs, cnt), budgets = _arrays(phases, target)
    step = FAST_STEP if step is None else step
    out = TiltedDelta(0.0, 0.0, 0.0)
    for add in (False, True):
        arrays = (sig, qs, cnt)
        comp = _tilted_composition(arrays, float(epsilon), step, budgets, add, True, out.delta)
        if comp is None:
            return None
        got = _read(comp, float(epsilon))
        if got.delta > out.delta:
            out = got
    return out


def tilted_epsilon(
    phases: Sequence[tuple[float, float, int]],
    delta: float,
    guess: float,
    *,
    step: float | None = None,
) -> float | None:
    """Certified upper bound on the epsilon at ``delta`` of DP-SGD phases, tilted.

    Both directions are composed as in :func:`tilted_delta` with ``t`` chosen at
    ``guess`` (tails sized for ``delta``), and the smallest multiple of the grid step
    at which the larger certified delta (:func:`_read`, valid at every epsilon) is at
    most ``delta`` is found by bisection over the multiples; once more with ``t``
    chosen at that answer when it is more than a step from ``guess``.  Every candidate
    returned has its certified delta at most ``delta``, so it is an upper bound
    (within one grid step of the composition's own epsilon).  Not yet read by the
    router: a ledger's ``delta`` would then have to read the same composition to keep
    ``delta(epsilon(d)) <= d`` (measured on the 1 500-step small-q ledger at delta
    1e-13: 0.339 here against the composed history's 0.9066; benchmarks/README.md,
    session 33).

    Parameters
    ----------
    phases : sequence of (float, float, int)
        ``(sigma, q, count)`` of every phase.
    delta : float
        Target delta, in (0, 1).
    guess : float
        Where to tilt first (> 0): an upper bound already known, e.g. the ledger's.
    step : float, optional
        Loss grid step; None: :data:`~dpacct.accountant.pld.schedule_fast.FAST_STEP`.

    Returns
    -------
    float or None
        The epsilon, or None when a composition cannot certify or no multiple up to
        the compositions' largest loss reaches ``delta``.

    Examples
    --------
    >>> phases = [(1.0 + 0.01 * i, 1e-3, 20) for i in range(30)]
    >>> eps = tilted_epsilon(phases, 1e-15, 1.0)
    >>> below = tilted_delta(phases, eps - 0.01, 1e-15)[0]
    >>> bool(tilted_delta(phases, eps, 1e-15)[0] <= 1e-15 < below)
    True
    """
    if not (isinstance(delta, (int, float)) and 0.0 < delta < 1.0):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    if not (isinstance(guess, (int, float)) and math.isfinite(guess) and guess > 0):
        raise ValueError(f"guess must be a finite number > 0, got {guess!r}")
    if not phases:
        return 0.0
    (sig, qs, cnt), budgets = _arrays(phases, delta)
    step = FAST_STEP if step is None else step
    best, at = math.inf, float(guess)
    for _ in range(2):
        comps = [
            _tilted_composition((sig, qs, cnt), at, step, budgets, add) for add in (False, True)
        ]
        if any(c is None for c in comps):
            break
        found = _lattice_epsilon(comps, delta, step, at)
        if found is None:
            break
        best = min(best, found)
        if abs(found - at) <= step:
            break
        at = max(found, step)
    return best if math.isfinite(best) else None


def _lattice_epsilon(comps: list[_Tilted], delta: float, step: float, at: float):
    """The smallest ``k * step`` (``k >= 0``) at which every composition's certified
    delta is at most ``delta``, by bisection from ``ceil(at / step)`` (doubled until it
    holds, up to the largest node); None when none does."""

    def ok(k: int) -> bool:
        return all(_read(c, k * step).delta <= delta for c in comps)

    top = max(float(c.nodes[-1]) if c.nodes.size else 0.0 for c in comps)
    last = max(math.ceil(top / step) + 1, 1)
    hi = min(max(math.ceil(at / step), 1), last)
    while not ok(hi):
        if hi >= last:
            return None
        hi = min(2 * hi, last)
    if ok(0):
        return 0.0
    lo = 0  # not ok
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi * step
