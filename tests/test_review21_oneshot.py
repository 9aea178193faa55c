"""Review 21 (issue 37): ``schedule_mechanism``'s phase counts are checked, as ``compose``'s are.

ws21-oneshot (29e9194, 7830a06) merges equal ``(sigma, q)`` phases by summing their counts
and hands the raw phases to the ledger's composer beyond 16 distinct phases.  On that
branch a negative count merged with a positive one was accepted (``[(1, 0.01, -5), (1,
0.01, 10)]`` answered 0.3165, five steps), and beyond 16 phases a phase of count 0 or -5
was dropped in silence (the composer skips counts <= 0), where main refuses both with
``ValueError: counts must be >= 1``.

Main (aeb560c) turns a count of 2.7 into 2 steps (``int(c)``) and accepts the string
``"3"``; ``compose`` refuses ``counts=[2.7]`` with a TypeError naming the count.
ws21-oneshot e857076 checks every phase by name (these tests pass there, fail on main).

The bracket against main's (below): ws21-oneshot answers beyond 16 distinct phases with
the ledger's machinery; at a454021 it also asks the engine where the composer's
certificate floor passes 1 % of delta (A at 1e-9: main's 3.3078581 again), but at 1e-5
the ledger's looser answer stays: C 0.2726992 (main 0.2726879), B (200 steps of
1.5 * 0.9999^t at q 0.01) 0.4126553 (main 0.4126511), D (300 steps of 2 * 0.9999^t)
0.3380186 (main 0.3380059); the lower ends fall too (C 0.2725450, main 0.2726778).
At c9fd658 (the engine's optimistic lower end, a finer upper end) C is below main and
the lower ends are main's, but decaying sigmas stay above main's one-shot: 140 steps of
2 * 0.9999^t at q 0.01, delta 1e-6, 0.2705346 against 0.2705310 (1e-5: 0.2267539 against
0.2267501; 300 steps at 1e-5 0.3380090 against 0.3380059).  b1c67f1 is at or below main's
one-shot on all of these (140 steps at 1e-6: 0.2705293) at about main's one-shot cost;
the C bar (1 s CPU there) was dropped to keep the suite's budget, the decaying one kept.
"""

from __future__ import annotations

import pytest

from dpacct.accountant.pld import schedule
from dpacct.accountant.pld.schedule import schedule_mechanism

MANY = [(1.0 + 0.01 * i, 0.01, 10) for i in range(20)]


@pytest.mark.parametrize(
    "phases",
    [
        [(1.0, 0.01, -5), (1.0, 0.01, 10)],
        [(1.0, 0.01, 0), (1.1, 0.01, 3)],
        [*MANY, (3.0, 0.01, -5)],
        [*MANY, (3.0, 0.01, 0)],
    ],
    ids=["negative-merged", "zero", "negative-many", "zero-many"],
)
def test_counts_below_one_are_refused_naming_them(phases):
    with pytest.raises(ValueError, match="count"):
        schedule_mechanism(phases, progress=False).epsilon(1e-5)


@pytest.mark.skipif(
    not hasattr(schedule, "schedule_reference"), reason="fixed on ws21-oneshot (e857076)"
)
@pytest.mark.parametrize("count", [2.7, "3"])
def test_a_count_that_is_not_an_integer_is_refused(count):
    with pytest.raises((TypeError, ValueError), match="count"):
        schedule_mechanism([(1.0, 0.01, count)], progress=False).epsilon(1e-5)


def _shape(name: str) -> list[tuple[float, float, int]]:
    assert name == "decaying"  # 140 steps of 2 * 0.9999^t at q 0.01
    return [(2.0 * 0.9999**t, 0.01, 1) for t in range(140)]


# main (aeb560c): schedule_mechanism(...).epsilon_bounds(delta), lower and upper end
MAIN_BARS = [("decaying", 1e-6, 0.2705264611559262, 0.2705310064999852)]


@pytest.mark.parametrize(("name", "delta", "main_lo", "main_hi"), MAIN_BARS)
def test_the_one_shot_bracket_is_no_wider_than_mains(name, delta, main_lo, main_hi):
    lo, hi = map(float, schedule_mechanism(_shape(name), progress=False).epsilon_bounds(delta))
    assert hi <= main_hi * (1 + 1e-9), (hi, main_hi)
    assert lo >= main_lo * (1 - 1e-9), (lo, main_lo)
