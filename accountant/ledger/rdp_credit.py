"""A Renyi-DP running bound that lets the fixed-schedule filter skip its PLD checks.

:class:`~dpacct.accountant.ledger.filters.PLDFilter` admits a record when the PLD
answer with it recorded stays within the budget.  Far from the budget that check is
wasted work: composing a look-ahead costs as much as a query, and a decaying schedule
needs one every few hundred steps.  :class:`RdpCredit` keeps, next to the PLD history,
an upper bound on the recorded records' Renyi DP at the integer orders ``2..64``
(:data:`ORDERS`), summed record by record (RDP composes by addition, Mironov 2017,
Proposition 1).  A record is admitted at once when that sum plus ``k`` copies of a
dominating candidate converts (Canonne, Kamath & Steinke 2020, Proposition 12) to an
epsilon within the budget: the true epsilon of every ledger state up to there is then
within the budget too, so the filter's guarantee holds without a PLD composition.

Only admission uses it.  Every answer the ledger prints is the PLD one (the same route
with or without a budget), and every refusal is decided on the PLD answer as before.
Admission by RDP therefore keeps refusals at the PLD's step only while the PLD answer
is at most the RDP one; that is what the PLD's tightness means in practice (the RDP
conversion is looser by a few percent at least on every workload we measured, and the
check asks for the filter's margin on top), not a theorem: see
``docs/theory/schedules.md``, "Skipping the look-ahead by Renyi DP".

Only DP-SGD steps are charged (``Entry.step``, a Poisson-subsampled Gaussian of
noise multiplier ``sigma`` and rate ``q``); any other record switches the credit off
for the rest of the ledger, and the PLD checks run alone.  That is where the PLD
answer is the tighter one: for other records the ledger's composed history can be
looser than their RDP conversion (twenty randomized-response records at epsilon about
7 each printed 158 against an RDP conversion below the budget of 150), and admitting
by RDP would let the printed answer pass the budget.  A step is charged as the step of
its cell: sigma rounded down and ``q`` up onto the geometric grid of ratio ``1 +
2^-7`` (:data:`CELL_GRID`), so a decaying schedule costs one RDP evaluation per cell,
not per step.  The RDP of the Poisson-subsampled Gaussian is non-increasing in sigma
(a larger sigma is a post-processing of the smaller one's pair, and Renyi divergence
obeys data processing) and non-decreasing in ``q`` (the pair at a rate ``q' < q`` is
the pair at ``q`` passed through one channel: keep the output with probability
``q' / q``, else replace it by a draw from the pair's second distribution), so the sum
stays an upper bound.
"""

from __future__ import annotations

import math

import numpy as np

from ..rdp.conversion import _eps_from
from ..rdp.subsampled_rdp import subsampled_gaussian_rdp
from .records import Entry

__all__ = ["CELL_GRID", "ORDERS", "RdpCredit"]

#: the Renyi orders of the running sum: integers, whose subsampled-Gaussian RDP is a
#: finite sum (0.4 ms a step); a ledger whose best order lies above 64 (epsilon below
#: about 0.4 at delta 1e-5) is checked by the PLD alone
ORDERS = np.arange(2.0, 65.0)
#: relative width of the cells a DP-SGD step is charged at (sigma down, q up)
CELL_GRID = 2.0**-7
#: the largest number of future records one credit may cover (2^40)
MAX_COVER = 1 << 40
#: RDP values kept per ledger (cells and other records); beyond, the cache restarts
_CACHE_SIZE = 4096


def _cell(sigma: float, q: float) -> tuple[float, float]:
    """The step that dominates ``(sigma, q)`` on the grid of ratio ``1 + CELL_GRID``:
    sigma rounded down, ``q`` rounded up (at most 1), both grid points or unchanged.

    Examples
    --------
    >>> s, q = _cell(1.3, 0.01)
    >>> bool(s <= 1.3 and q >= 0.01 and 1.3 / s < 1 + 2**-7 and q / 0.01 < 1 + 2**-7)
    True
    """
    w = math.log1p(CELL_GRID)
    k = math.floor(math.log(sigma) / w)
    s = math.exp(k * w)
    if s > sigma:  # the logarithm's round-off
        s = math.exp((k - 1) * w)
    j = math.ceil(math.log(q) / w)
    r = math.exp(j * w)
    if r < q:
        r = math.exp((j + 1) * w)
    return s, min(r, 1.0)


class RdpCredit:
    """Upper bound on the recorded records' Renyi DP at :data:`ORDERS`, and the check
    that certifies future records by it.

    Parameters
    ----------
    delta : float
        The budget's delta, in (0, 1).

    Examples
    --------
    >>> from dpacct.accountant import poisson_subsample
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> credit = RdpCredit(1e-5)
    >>> step = Entry.of(poisson_subsample(GaussianMechanism(sigma=1.0), 0.01), 1)
    >>> k, eps = credit.fits(step, 8.0)  # how many such steps fit an epsilon of 8
    >>> bool(k > 1000 and eps <= 8.0)
    True
    >>> credit.charge(step)
    >>> bool(credit.total[0] > 0)
    True
    """

    def __init__(self, delta: float) -> None:
        self.log_delta = math.log(delta)
        self.delta = delta
        #: the running sum at :data:`ORDERS` (None: a record other than a DP-SGD step
        #: was charged)
        self.total: np.ndarray | None = np.zeros(len(ORDERS))
        self._cache: dict[tuple[float, float], np.ndarray] = {}

    def rdp(self, entry: Entry, *, own: bool = False) -> np.ndarray | None:
        """An upper bound on one copy of ``entry``'s RDP at :data:`ORDERS`: a DP-SGD
        step at its cell (:func:`_cell`), or at its own ``(sigma, q)`` with ``own``;
        None for any other record.  Cached by the cell's two floats."""
        step = entry.step
        if step is None:
            return None
        cell = (step.sigma_upper, step.q) if own else _cell(step.sigma_upper, step.q)
        value = self._cache.get(cell)
        if value is None:
            value = subsampled_gaussian_rdp(cell[1], cell[0], ORDERS)
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            self._cache[cell] = value
        return value

    def charge(self, entry: Entry) -> None:
        """Add ``entry`` (``count`` copies, at its cell) to the running sum."""
        if self.total is None:
            return
        value = self.rdp(entry)
        if value is None:
            self.total = None
            return
        self.total = self.total + entry.count * value

    def fits(self, candidate: Entry, limit: float) -> tuple[int, float]:
        """The largest ``k`` (``count * 2^j``, at most :data:`MAX_COVER`) such that the
        records so far plus ``k`` copies of ``candidate`` convert to an epsilon at
        most ``limit`` at the budget's delta, and that epsilon; ``(0, inf)`` when not
        even ``count`` copies fit (or the ledger has no RDP bound).

        One vectorised evaluation over all ``k`` and orders; the conversion is
        Canonne, Kamath & Steinke 2020, Proposition 12 at each order, its minimum
        taken over :data:`ORDERS` (any order gives a valid bound).
        """
        if self.total is None:
            return 0, math.inf
        value = self.rdp(candidate, own=True)
        if value is None:
            return 0, math.inf
        count = candidate.count
        ks = count * 2.0 ** np.arange(0, 64)
        ks = ks[ks <= MAX_COVER]
        if ks.size == 0:
            return 0, math.inf
        totals = self.total[None, :] + ks[:, None] * value[None, :]
        eps = np.maximum(_eps_from(totals, ORDERS[None, :], self.log_delta).min(axis=1), 0.0)
        eps = eps * (1.0 + 1e-12) + 1e-15  # the conversion's float round-off, upward
        ok = np.flatnonzero(eps <= limit)
        if ok.size == 0 or ok[0] != 0:
            return 0, math.inf
        # eps grows with k (every term of the sum is non-negative), so the passing k
        # form a prefix
        last = int(ok[-1])
        return int(ks[last]), float(eps[last])
