"""Review 22 (issue 37): the one-shot ``schedule_mechanism`` never looser than main's.

Finding F1 (ws22-sched4 685f5c3, still at c269f77): ``_oneshot_upper`` runs one "finer"
composition alone where main took the smaller of the ledger's composer and the finer
pass.  On 12 random shapes (17-150 phases, deltas 1e-3, 1e-5, 1e-6) 15 of 36 answers
were above main's, none below; the worst, the 20 phases below (sigma 1.20-1.40, q
1.2e-3..2.8e-3, counts 1-40), +1.07e-4 relative at delta 1e-5 (main 0.1079704034, the
branch 0.1079819831).  The bars are main's (a3b9f4e) answers on that shape; the
independent side is dp_accounting 0.6.0's PLD of the same phases at value interval 1e-5
(``from_gaussian_mechanism(sigma, sampling_prob=q)``, composed; pessimistic by
connect-the-dots, optimistic by privacy buckets): its optimistic answer is below the
truth, so a certified upper end below it is unsound.  A branch answer above main's
bar fails (it does on ws22-sched4 c269f77).
"""

from __future__ import annotations

import pytest

from dpacct.accountant.pld.schedule import schedule_mechanism

PHASES = [
    (1.2493778087052396, 0.001541580668040991, 30),
    (1.2295648500817702, 0.002721427595706743, 14),
    (1.3586417017701653, 0.0023480118605628594, 23),
    (1.2914355510315212, 0.0012018394290942568, 21),
    (1.3671787694523099, 0.0022298852639276072, 15),
    (1.315014026753285, 0.0017525977612764618, 18),
    (1.3823804434356446, 0.0017511723194277996, 23),
    (1.3414961726977896, 0.0027701262585949097, 9),
    (1.3153394255982758, 0.002344605036499623, 9),
    (1.4000048762955308, 0.001184412558710005, 39),
    (1.2648664882546292, 0.002231762405608888, 14),
    (1.3740590581208452, 0.0022557436403465914, 1),
    (1.2577954432693585, 0.002263227366148178, 28),
    (1.31560905584628, 0.0023053004995477523, 2),
    (1.3692323959673387, 0.0014673836230204335, 24),
    (1.2805810674200313, 0.0013874944452863577, 21),
    (1.3375981898021543, 0.0015931582562259351, 28),
    (1.3893699420157293, 0.0014926472735311222, 5),
    (1.2031674298315989, 0.0016371884289549722, 15),
    (1.2341683188856538, 0.0011854843956987506, 40),
]

#: delta: main's (a3b9f4e) one-shot epsilon
MAIN = {1e-3: 0.048711136606986574, 1e-5: 0.1079704033613332}
#: delta: dp_accounting 0.6.0 at value interval 1e-5, (optimistic, pessimistic)
DPA = {1e-3: (0.04681192943989702, 0.04870702212052494),
       1e-5: (0.10607095448310931, 0.10796609361170219)}


@pytest.mark.parametrize("delta", [1e-3, 1e-5])
def test_oneshot_epsilon_no_looser_than_mains(delta):
    eps = float(schedule_mechanism(PHASES, progress=False).epsilon(delta))
    assert eps <= MAIN[delta] * (1 + 1e-12), (eps, MAIN[delta])
    assert eps >= DPA[delta][0], (eps, DPA[delta])  # below the optimistic PLD: unsound
