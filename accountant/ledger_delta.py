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
    "ONLINE_DELTA_TILT_EXPONENT",
    "ONLINE_DELTA_TILT_MOVE",
    "ONLINE_DELTA_TILT_PASSES",
    "ONLINE_DELTA_TILT_SHARE",
    "ONLINE_DELTA_TILT_TARGET",
    "ONLINE_EPSILON_TILT_BELOW",
    "certified_delta",
    "certified_epsilon",
    "online_delta",
    "online_epsilon",
    "remember",
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


#: later passes' targets (:func:`_next_target`): the certificate's measured exponent in
#: the target, and the largest factor one pass moves the target by
ONLINE_DELTA_TILT_EXPONENT = 1.0 / 3.0
ONLINE_DELTA_TILT_MOVE = 1e6


def _next_target(target: float, found) -> float:
    """The tails' target of the next tilted pass, from a pass at ``target`` whose answer
    ``found`` (:class:`~dpacct.accountant.pld.schedule_tilted.TiltedDelta`) is cut mass
    ``c`` (the tails cut to ``+inf``, about proportional to the target) and certificate
    ``r`` (the round-off scaled by the Chernoff factor, which grows as less is cut:
    measured ``~ target^-1/3`` on the 1 500-step small-q ledger at epsilon 1, targets
    1e-19 .. 1e-13).  The sum ``a T + b T^-g`` is smallest where ``c = g r``, at
    ``T = target (g r / c)^(1 / (1 + g))`` (``g`` = :data:`ONLINE_DELTA_TILT_EXPONENT`),
    moved by at most :data:`ONLINE_DELTA_TILT_MOVE` either way.  Tightness only: any
    target is sound."""
    cut, cert = found.cut, found.cert
    move = ONLINE_DELTA_TILT_MOVE
    if cut <= 0.0 or cert <= 0.0:
        factor = move if cut <= 0.0 else 1.0 / move
    else:
        g = ONLINE_DELTA_TILT_EXPONENT
        factor = min(move, max(1.0 / move, (g * cert / cut) ** (1.0 / (1.0 + g))))
    return min(1.0, target * factor)


def _tilted_passes(ledger: RoutedLedger, e: float, floor: float):
    """The tilted composition's answer at ``e`` (the smallest of at most
    :data:`ONLINE_DELTA_TILT_PASSES` passes): tails sized first for
    ``ONLINE_DELTA_TILT_TARGET * floor``, then, while certificate and cut are more than
    :data:`ONLINE_DELTA_TILT_SHARE` of the answer, for the target that balances them
    (:func:`_next_target`).  None when it cannot certify."""
    target = min(1.0, ONLINE_DELTA_TILT_TARGET * floor)
    found = ledger.tilted(e, target)
    for _ in range(ONLINE_DELTA_TILT_PASSES - 1):
        if found is None or found.share <= ONLINE_DELTA_TILT_SHARE or not 0.0 < found.delta < 1:
            break
        target = _next_target(target, found)
        again = ledger.tilted(e, target)
        if again is None or again.delta > found.delta:
            break
        found = again
    return found


def _below_floor(ledger: RoutedLedger, e: float, tol: float | None, floor: float) -> float:
    """The schedule's delta at ``e`` where the composed histories (certificate floor
    ``floor``) cannot read it: the tilted composition of the records' steps
    (:meth:`~dpacct.accountant.ledger.ledger_mechanism.LedgerMechanism.tilted`, in
    passes: :func:`_tilted_passes`) and, when that answer is below
    :data:`ONLINE_DELTA_TILT_ALONE` of ``floor`` with at most
    :data:`ONLINE_DELTA_TILT_SHARE` of certificate, the RDP conversion of the schedule
    rounded up where it may win (:func:`rdp_may_win`); otherwise the schedule rounded up
    by the mechanism rows too.  Every value is sound; the smallest is returned, and
    remembered as a certified pair (:func:`certified_delta`)."""
    found = _tilted_passes(ledger, e, floor)
    best = math.inf if found is None else found.delta
    mech = ledger.accounted(True)
    if found is not None and best < ONLINE_DELTA_TILT_ALONE * floor and (
        found.share <= ONLINE_DELTA_TILT_SHARE and ledger.entry_count > ONLINE_DELTA_TILT_ENGINE
    ):
        flat = np.array([e])
        if mech.has_rdp and rdp_may_win(mech, flat, np.array([best]))[0]:
            best = min(best, rdp_to_delta(mech._rdp_curve, e))
    else:
        best = min(best, float(mech.delta(np.array([e]), tol=tol)[0]))
    best = min(best, certified_delta(ledger, e))
    remember(ledger, e, best)
    return best


def _pairs(ledger: RoutedLedger) -> dict[float, float]:
    """The certified ``epsilon -> delta`` pairs answered so far for the ledger's
    current records (kept on their version)."""
    return ledger.certified_pairs()


def remember(ledger: RoutedLedger, epsilon: float, delta: float) -> None:
    """Keep ``(epsilon, delta)``, a certified pair of the current records (``delta`` a
    sound upper bound at ``epsilon``), for :func:`certified_delta` and
    :func:`certified_epsilon`."""
    pairs = _pairs(ledger)
    pairs[epsilon] = min(delta, pairs.get(epsilon, math.inf))


def certified_delta(ledger: RoutedLedger, epsilon: float) -> float:
    """The smallest delta of a remembered pair at an epsilon at most ``epsilon`` (inf
    when none): sound, since the true ``delta(eps)`` does not increase with ``eps``.
    So ``delta`` is non-increasing in epsilon over the answers given below the floor
    (review 33: 1.1e-29 at 0.05, then 3.7e-17 at 0.1), and ``delta(epsilon(d)) <= d``
    where ``epsilon(d)`` came from the tilted composition."""
    return min([math.inf, *(d for e2, d in _pairs(ledger).items() if e2 <= epsilon)])


def certified_epsilon(ledger: RoutedLedger, delta: float) -> float:
    """The smallest epsilon of a remembered pair whose delta is at most ``delta`` (inf
    when none): an upper bound on epsilon at ``delta``, so ``epsilon(delta(e)) <= e``
    where ``delta(e)`` came from below the floor.

    Examples
    --------
    >>> from dpacct.accountant import PrivacyAccountant
    >>> ledger = PrivacyAccountant().ledger
    >>> remember(ledger, 2.0, 1e-20)
    >>> certified_epsilon(ledger, 1e-19), certified_delta(ledger, 3.0)
    (2.0, 1e-20)
    """
    return min([math.inf, *(e2 for e2, d in _pairs(ledger).items() if d <= delta)])


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
       (no history composed to verify: none reads below its own floor); that
       schedule's answer is then the tilted composition's where it is below the
       floor (:func:`_below_floor`).

    Every answer is kept as a certified pair (:func:`remember`) and none is above a
    pair kept before at an epsilon at most its own (:func:`certified_delta`; where
    such a pair is below every reading and the floor does not call the tilted
    composition, no history is composed to verify a reading).  So
    ``epsilon(delta(e)) <= e`` (:func:`certified_epsilon`) and ``delta(epsilon(d)) <=
    d`` hold on this route whichever representation answered.
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
        pair = certified_delta(ledger, e)
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
        elif pair < out[i]:
            # a certified pair (the tilted epsilon, or an answer below the floor)
            # under every reading: no history is composed to verify one
            out[i] = pair
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
    out = np.minimum(out, [certified_delta(ledger, e) for e in flat.tolist()])
    for e, d in zip(flat.tolist(), out.tolist(), strict=True):
        remember(ledger, e, d)  # so epsilon(delta(e)) <= e (certified_epsilon)
    return out


#: a ledger's epsilon at a delta below this is asked of the tilted composition too
#: (:func:`online_epsilon`): the fast histories cannot certify there (their floor, 1e-10
#: to 1e-8 measured) and the engine's composed history is loose from its rounded blocks
#: (1 500 small-q steps at 1e-13: 0.9066 against the tilted 0.339)
ONLINE_EPSILON_TILT_BELOW = 1e-9


def online_epsilon(ledger: RoutedLedger, delta: float) -> float:
    """epsilon at ``delta`` of an ``"online"`` ledger: the composed history at ``delta``
    (the answer the fixed-schedule filter decides on) and, below
    :data:`ONLINE_EPSILON_TILT_BELOW`, where the histories are composed through the
    engine's rounded blocks and their certificates, the tilted composition's epsilon
    (:meth:`~dpacct.accountant.ledger.ledger_mechanism.LedgerMechanism.tilted_epsilon`)
    when smaller, remembered as a certified pair so that ``delta`` reads it back
    (``delta(epsilon(d)) <= d``, :func:`certified_delta`); never above a remembered
    pair's epsilon at a delta at most ``delta`` (:func:`certified_epsilon`).  Every value
    is a certified upper bound; the smallest is returned.

    Examples
    --------
    >>> from dpacct.accountant import PrivacyAccountant
    >>> acct = PrivacyAccountant(progress=False)
    >>> for t in range(20):
    ...     acct.step(noise_multiplier=1.0 + 0.01 * t, sample_rate=0.001)
    >>> eps = online_epsilon(acct.ledger, 1e-14)
    >>> bool(acct.ledger.delta(eps) <= 1e-14)
    True
    """
    eps = float(ledger.online(delta).epsilon())
    if delta < ONLINE_EPSILON_TILT_BELOW:
        # tilted first where the history's answer is (1 where it has none: inf or 0)
        tilted = ledger.tilted_epsilon(delta, eps if 0.0 < eps < math.inf else 1.0)
        if tilted is not None and tilted < eps:
            eps = tilted
    eps = min(eps, certified_epsilon(ledger, delta))
    if eps < math.inf:
        remember(ledger, eps, delta)  # so delta(epsilon(d)) <= d (certified_delta)
    return eps
