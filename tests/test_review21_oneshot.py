"""Review 21 (issue 37): ``schedule_mechanism``'s phase counts are checked, as ``compose``'s are.

ws21-oneshot (29e9194, 7830a06) merges equal ``(sigma, q)`` phases by summing their counts
and hands the raw phases to the ledger's composer beyond 16 distinct phases.  On that
branch a negative count merged with a positive one was accepted (``[(1, 0.01, -5), (1,
0.01, 10)]`` answered 0.3165, five steps), and beyond 16 phases a phase of count 0 or -5
was dropped in silence (the composer skips counts <= 0), where main refuses both with
``ValueError: counts must be >= 1``.

Main (aeb560c) and the branch both turn a count of 2.7 into 2 steps (``int(c)``) and
accept the string ``"3"``; ``compose`` refuses ``counts=[2.7]`` with a TypeError naming
the count.  That one is pinned as a strict xfail: when it is fixed, drop the marker.
"""

from __future__ import annotations

import pytest

from dpacct.accountant.pld.schedule import schedule_mechanism

MANY = [(1.0 + 0.01 * i, 0.01, 10) for i in range(20)]


@pytest.mark.parametrize(
    "phases",
    [
        [(1.0, 0.01, -5), (1.0, 0.01, 10)],
        [(1.0, 0.01, 0), (1.1, 0.01, 3)],
        MANY + [(3.0, 0.01, -5)],
        MANY + [(3.0, 0.01, 0)],
    ],
    ids=["negative-merged", "zero", "negative-many", "zero-many"],
)
def test_counts_below_one_are_refused_naming_them(phases):
    with pytest.raises(ValueError, match="count"):
        schedule_mechanism(phases, progress=False).epsilon(1e-5)


@pytest.mark.xfail(strict=True, reason="review 21: int(c) truncates a fractional count (main too)")
@pytest.mark.parametrize("count", [2.7, "3"])
def test_a_count_that_is_not_an_integer_is_refused(count):
    with pytest.raises((TypeError, ValueError), match="count"):
        schedule_mechanism([(1.0, 0.01, count)], progress=False).epsilon(1e-5)
