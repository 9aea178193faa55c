"""The router's ``delta`` rows of an ``"online"`` ledger (part of :mod:`~dpacct.accountant.routes`).

A ledger with more distinct records than :data:`~dpacct.accountant.routes.EXACT_PHASES`,
every one with a PLD, reads ``epsilon(d)`` off the composed history at ``d``
(:meth:`~dpacct.accountant.ledger.ledger_mechanism.LedgerMechanism.online`).  Its
``delta(eps)`` is read off the same histories (:func:`online_delta`), so that the two
questions agree; where the histories' certificate floor (their round-off, about
``1e-10`` on a thousand cells) is above the answer, the steps' exponentially tilted
composition (:mod:`~dpacct.accountant.pld.schedule_tilted`) answers instead
(:func:`_below_floor`).  Split out of :mod:`~dpacct.accountant.routes` (which calls
:func:`online_delta` from :func:`~dpacct.accountant.routes.ledger_delta`) when that
module reached its line limit; the decision table there still describes every row.
"""

from __future__ import annotations

import math

import numpy as np

from .interface import RoutedLedger
from .rdp.conversion import rdp_to_delta
from .rdp.rdp_floor import rdp_may_win

__all__ = [
    "ONLINE_DELTA_FLOOR_GAP",
    "ONLINE_DELTA_FLOOR_SHARE",
    "ONLINE_DELTA_ROUNDS",
    "ONLINE_DELTA_SLACK",
    "ONLINE_DELTA_START",
    "ONLINE_DELTA_TIGHTEN",
    "ONLINE_DELTA_TILT_ALONE",
    "ONLINE_DELTA_TILT_ENGINE",
    "ONLINE_DELTA_TILT_PASSES",
    "ONLINE_DELTA_TILT_SHARE",
    "ONLINE_DELTA_TILT_TARGET",
    "online_delta",
]

#: a ledger's delta on the ``"online"`` route (:func:`online_delta`): a kept history
#: at ``d`` reading ``D`` answers ``d`` when ``d`` is at most this much above ``D``
#: (relative); a verified answer is tightened while a reading falls more than this
ONLINE_DELTA_TIGHTEN = 1e-6
#: ... histories composed for one epsilon at most, the first (when none is kept) at
#: this delta
ONLINE_DELTA_ROUNDS = 3
ONLINE_DELTA_START = 1e-5
#: ... a history whose floor (the certificate's mass at +inf) is more than this share
#: of its reading is no tight representation of that delta: the schedule rounded up
#: answers too, the smaller wins (measured: 100 distinct records of 100 steps, floor
#: 6e-9: at delta 1e-6 the history read 1.0000e-6 where the rounded schedule read
#: 1.0108e-6; at 1e-7, 0.9985e-7 against 0.956e-7)
ONLINE_DELTA_FLOOR_SHARE = 1e-2
#: ... and when the rounded schedule's answer is below this share of the kept
#: histories' smallest floor, no history is composed to verify a reading (none can
#: read below its own floor, which moves by less than this factor with the history's
#: delta: 100 and 1 000 distinct records, 8.4e-9 to 1.3e-8 for deltas 5e-10 to 1e-2):
#: its answer is the rounded schedule's, as the verification would have found, without
#: composing up to :data:`ONLINE_DELTA_ROUNDS` histories
ONLINE_DELTA_FLOOR_GAP = 0.5
#: a reading ``D`` counts as at most its history's ``d`` up to this relative slack (the
#: readings' own rounding: a PLD's delta is rounded up by 1e-10 relative, so the
#: history of ``epsilon(d)`` reads ``delta(epsilon(d))`` a few 1e-11 above ``d``)
ONLINE_DELTA_SLACK = 1e-9
#: below the histories' floor the steps' tilted composition answers (:func:`_below_floor`),
#: its tails sized for this share of the floor, in at most this many passes ...
ONLINE_DELTA_TILT_TARGET = 1e-2
ONLINE_DELTA_TILT_PASSES = 3
#: ... alone below this share of the floor, certificate at most this share (``--tilted``)
ONLINE_DELTA_TILT_ALONE = 1e-2
ONLINE_DELTA_TILT_SHARE = 1e-2
#: ... and never alone on ledgers of at most this many records, where the rounded
#: schedule is cheap (0.18 s at 19 records; review 33: 7.1e-17 alone against its 3.7e-17)
ONLINE_DELTA_TILT_ENGINE = 64


def _own_or_reading(ledger: RoutedLedger, e: float, d: float, got: float) -> float:
    """``d`` where it is certified at ``e`` -- the history at ``d`` reads at most ``d``
    there, or ``e`` is at least that history's ``epsilon(d)`` (the delta curve falls) --
    else the reading ``got`` (within :data:`ONLINE_DELTA_SLACK` above ``d``): the answer
    is never below what the history certifies."""
    if got <= d or e >= float(ledger.online(d).epsilon()):
        return d
    return got


def _verified(ledger: RoutedLedger, e: float, cand: float) -> tuple[float, float] | None:
    """The smallest delta found, starting from the sound reading ``cand``, whose own
    history reads at most it at ``e`` (so :func:`ledger_epsilon` at it is at most
    ``e``), with that history's floor: the history at ``cand`` is composed and read,
    at most :data:`ONLINE_DELTA_ROUNDS` times; a reading above ``cand`` is the next
    candidate, one below it the next try to tighten.  None when a history cannot
    certify or the rounds run out unverified."""
    verified = None
    for _ in range(ONLINE_DELTA_ROUNDS):
        if cand >= 1.0:
            return 1.0, 0.0
        found = ledger.online(cand).delta(np.array([e]))
        if found is None:
            break
        got = float(found[0][0])
        if got <= cand * (1.0 + ONLINE_DELTA_SLACK):
            verified = (_own_or_reading(ledger, e, cand, got), float(found[1]))
            if got >= cand * (1.0 - ONLINE_DELTA_TIGHTEN):
                break
        elif verified is not None:
            break
        cand = got
    return verified


def _below_floor(ledger: RoutedLedger, e: float, tol: float | None, floor: float) -> float:
    """The schedule's delta at ``e`` where the composed histories (certificate floor
    ``floor``) cannot read it: the tilted composition of the records' steps
    (:meth:`~dpacct.accountant.ledger.ledger_mechanism.LedgerMechanism.tilted`, its
    tails sized first for ``ONLINE_DELTA_TILT_TARGET * floor``, then for its own answer
    while their cut is a visible share of it, :data:`ONLINE_DELTA_TILT_PASSES` passes
    at most) and, when that answer is below
    :data:`ONLINE_DELTA_TILT_ALONE` of ``floor`` with at most
    :data:`ONLINE_DELTA_TILT_SHARE` of certificate, the RDP conversion of the schedule
    rounded up where it may win (:func:`rdp_may_win`); otherwise the schedule rounded up
    by the mechanism rows too.  Every value is sound; the smallest is returned."""
    found = ledger.tilted(e, min(1.0, ONLINE_DELTA_TILT_TARGET * floor))
    best = math.inf if found is None else found[0]
    for _ in range(ONLINE_DELTA_TILT_PASSES - 1):
        # the tails cut for the target are a visible share: again, sized for the answer
        if found is None or found[1] <= ONLINE_DELTA_TILT_SHARE or not 0.0 < best < 1.0:
            break
        again = ledger.tilted(e, best)
        if again is None or again[0] > best:
            break
        found, best = again, again[0]
    mech = ledger.accounted(True)
    if found is not None and best < ONLINE_DELTA_TILT_ALONE * floor and (
        found[1] <= ONLINE_DELTA_TILT_SHARE and ledger.entry_count > ONLINE_DELTA_TILT_ENGINE
    ):
        flat = np.array([e])
        if mech.has_rdp and rdp_may_win(mech, flat, np.array([best]))[0]:
            best = min(best, rdp_to_delta(mech._rdp_curve, e))
    else:
        best = min(best, float(mech.delta(np.array([e]), tol=tol)[0]))
    # a certified delta at e' <= e is one at e: the answers given so far keep delta
    # non-increasing in e (review 33: 1.1e-29 at 0.05, then 3.7e-17 at 0.1)
    seen = ledger.cached(("below floor",), dict)
    best = min([best, *(d for e2, d in seen.items() if e2 <= e)])
    seen[e] = best
    return best


def online_delta(ledger: RoutedLedger, flat: np.ndarray, tol: float | None) -> np.ndarray:
    """delta at the epsilons ``flat`` of an ``"online"`` ledger, read off its composed
    histories: the representation (and certificate) :func:`ledger_epsilon` reads.

    A history's tails are cut at a share of its own delta ``d``
    (:func:`~dpacct.accountant.pld.pld_settings.tail_budgets`), so its
    ``delta(eps)`` (:meth:`~dpacct.accountant.pld.incremental.IncrementalEpsilon.delta_at`)
    is sound at every epsilon, and the answer ``D`` is consistent with
    :func:`ledger_epsilon` -- ``epsilon(D) <= e`` -- when the history at ``D`` itself
    reads at most ``D``.  So, for each epsilon ``e``:

    1. every kept history is read (no composition); one at ``d`` reading
       ``D <= d <= (1 + ONLINE_DELTA_TIGHTEN) D`` (up to :data:`ONLINE_DELTA_SLACK`)
       answers ``d`` (so ``delta(epsilon(d))`` answers ``d``);
    2. else the smallest reading is verified by :func:`_verified` (the history at it
       composed and read; when none is kept, the first at
       :data:`ONLINE_DELTA_START`);
    3. where the verified history's floor (its certificate's mass at ``+inf``, below
       which it reads nothing) is more than :data:`ONLINE_DELTA_FLOOR_SHARE` of the
       answer, or nothing verifies, the history is no tight representation of that
       delta (the ledger's epsilon there is as loose): the smaller of the answer (or
       the smallest reading) and the schedule rounded up to the grid (the mechanism
       rows) is returned.  Both are sound.  When the kept histories' floor is already
       above that share of the smallest reading and the rounded schedule's answer is
       below :data:`ONLINE_DELTA_FLOOR_GAP` of it, that answer is taken before step 2
       (no history composed to verify: none reads below its own floor).
    """
    out = np.full(flat.shape, np.inf)
    kept = [float(d) for d in ledger.online_deltas()] or [ONLINE_DELTA_START]
    readings = []
    floors = []
    for d in kept:
        found = ledger.online(d).delta(flat)
        if found is not None:
            readings.append((d, np.asarray(found[0], dtype=float).reshape(flat.shape)))
            floors.append(float(found[1]))
    rounded: list[int] = []
    asked: dict[int, float] = {}  # the rounded schedule's answer, where already read
    for i, e in enumerate(flat.tolist()):
        own = [
            _own_or_reading(ledger, e, d, float(got[i]))
            for d, got in readings
            if got[i] <= d * (1.0 + ONLINE_DELTA_SLACK)
            and d <= got[i] * (1.0 + ONLINE_DELTA_TIGHTEN)
        ]
        if own:
            out[i] = min(own)
            continue
        if not readings:
            rounded.append(i)
            continue
        out[i] = min(float(got[i]) for _, got in readings)
        if min(floors) > ONLINE_DELTA_FLOOR_SHARE * out[i]:
            # the kept histories' floor (their round-off, nearly the same at every
            # delta) is above the share: the rounded schedule answers too; when it is
            # below ONLINE_DELTA_FLOOR_GAP of that floor no history can read as low
            # (a reading is at least its floor), so none is composed to verify
            other = _below_floor(ledger, e, tol, min(floors))
            asked[i] = other
            if other < ONLINE_DELTA_FLOOR_GAP * min(floors):
                out[i] = min(out[i], other)
                continue
        found = _verified(ledger, e, out[i])
        if found is not None:
            out[i] = found[0]
        if found is None or found[1] > ONLINE_DELTA_FLOOR_SHARE * found[0]:
            rounded.append(i)
    if len(rounded) == 1 and rounded == list(asked):  # read above: not asked twice
        out[rounded[0]] = min(out[rounded[0]], asked[rounded[0]])
    elif rounded:
        idx = np.array(rounded)
        other = np.asarray(ledger.accounted(True).delta(flat[idx], tol=tol), dtype=float)
        out[idx] = np.minimum(out[idx], other)  # both sound: the smaller
    return out
