"""Review 18: the online ledger's history after it falls back to a PLD history.

Session 17 made :meth:`IncrementalEpsilon.epsilon` return ``None`` below its history's
floor (it searched forever before), and :meth:`BudgetHistory.epsilon` then rebuilds the
history as a :class:`~dpacct.accountant.ledger.history._PLDHistory`.  That class sets
``self.delta = delta`` (the float) in ``__init__``, which shadows its own ``delta``
*method*; so every later :meth:`PrivacyAccountant.delta` on that ledger, routed by
:func:`~dpacct.accountant.routes.online_delta` to ``ledger.online(d).delta(flat)``,
raises ``TypeError: 'float' object is not callable``.  Twenty distinct DP-SGD records,
``epsilon(1e-12)`` (3.388) and then ``delta(1.0)``: TypeError, where a fresh ledger
answers 1.1e-3.  Not a wrong number, but the documented question of issue 36 (delta
of a ledger) fails after a legal query; the same history serves a budget's filter.
"""

from __future__ import annotations

import math

import pytest

from dpacct.accountant import PrivacyAccountant


def _ledger() -> PrivacyAccountant:
    acct = PrivacyAccountant(progress=False)
    for i in range(20):  # > EXACT_PHASES distinct records: the online route
        acct.step(noise_multiplier=1.0 + 0.05 * i, sample_rate=0.01, count=100)
    return acct


def test_delta_still_answers_after_epsilon_below_the_history_floor():
    fresh = _ledger().delta(1.0)
    acct = _ledger()
    assert math.isfinite(acct.epsilon(1e-12))
    got = acct.delta(1.0)
    assert 0.0 < got <= 1.0
    assert got == pytest.approx(fresh, rel=0.05)
