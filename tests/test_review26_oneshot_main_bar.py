"""Review 26 (issue 37): the one-shot schedule never looser than main's, on large counts.

ws26-oneshot (6e530bc) lets a fine pass (every distinct step its own cell on half the
composer's loss step) answer alone where its certificate floor is a small share of delta,
where main took the smaller of the ledger's composer and a finer pass.  On 30 random shapes
(PCG64(262626); 17-60 phases) 4 of 150 answers were above main's, all on phases of 20-200
steps each; the shape below (17 phases, sigma 2.97-3.18, q 6.7e-3-1.02e-2, counts 30-198),
at delta 1e-5 main 0.4425048835263657, the branch 0.44250503017442094 (+3.3e-7), at 1e-3
0.26218875771213007 against 0.26218885224831484.  The bars are main's (adc90ec) answers;
the independent side is dp_accounting 0.6.0's optimistic PLD of the same phases at value
interval 1e-5 (``from_gaussian_mechanism(sigma, sampling_prob=q, pessimistic_estimate=
False)``, each phase self-composed, then composed), below the truth: a certified upper end
below it is unsound.  (Its pessimistic answers, 0.4424995 and 0.2621849, lie below both
one-shot answers.)  Fails on ws26-oneshot 6e530bc; passes on main.
"""

from __future__ import annotations

import pytest
from pins import bar_rel

from dpacct.accountant.pld.schedule import schedule_mechanism

PHASES = [
    (2.9735516905367136, 0.008231633170642518, 166),
    (3.0928992280715866, 0.008030110181562565, 33),
    (3.027683620017356, 0.008281319200726438, 139),
    (3.1491853077795375, 0.01020220803201092, 142),
    (3.0688974552359385, 0.006948762579824898, 88),
    (2.995436738053876, 0.008761273594673335, 30),
    (3.1767229764610327, 0.007180034268780352, 97),
    (3.134677301771118, 0.006698881481785556, 187),
    (2.9766111532479287, 0.007813041306620156, 156),
    (3.0607597849547146, 0.010089959701511402, 173),
    (3.1673269526237546, 0.009769432909673019, 44),
    (3.081254209282281, 0.009652737667988565, 109),
    (3.0679653329552488, 0.006695404151219307, 172),
    (2.980533793130998, 0.008550946259795963, 198),
    (3.0609479144324614, 0.009191735320685897, 80),
    (2.9880867025017475, 0.009183230614058065, 35),
    (3.019617726206866, 0.007250219885505777, 154),
]

#: delta: main's (adc90ec) one-shot epsilon
MAIN = {1e-3: 0.26218875771213007, 1e-5: 0.4425048835263657}
#: delta: dp_accounting 0.6.0's optimistic epsilon at value interval 1e-5
DPA_OPTIMISTIC = {1e-3: 0.2521697450175802, 1e-5: 0.4324842123624592}


@pytest.mark.parametrize("delta", [1e-3, 1e-5])
def test_oneshot_epsilon_on_large_counts_no_looser_than_mains(delta):
    eps = float(schedule_mechanism(PHASES, progress=False).epsilon(delta))
    assert eps <= MAIN[delta] * (1 + bar_rel(delta)), (eps, MAIN[delta])
    assert eps >= DPA_OPTIMISTIC[delta], (eps, DPA_OPTIMISTIC[delta])
