"""Review 31 (issue 37): DP-SGD brackets at few steps inside dp_accounting's fine-interval PLDs.

ws31-bounds (41136fd) forms the optimistic tail products ``c (2 f + c)`` of
``epsilon_bounds``' lower end by one plain transform rounded down by its bound.  A lower end
above the truth is the risk.  The independent values are dp_accounting 0.6.0's PLDs at
interval 2e-5 (``tests/sgm_oracles.dp_accounting_epsilon(phases, delta, 2e-5, pessimistic)``,
12 CPU s each, pinned): the pessimistic connect-the-dots value is above the true epsilon,
so the lower end must be below it; the optimistic one is below the truth, so the upper
end must be above it.  The rows are few steps at large q and tiny delta, unlike the
branch's own oracle rows (T 1e4 / 1e6 at 1e-5), where the bracket is 6e-6 relative wide.

Checked: main dfb0eda and ws31-bounds 572e8af pass (lower ends 10.8375368 and 8.6212894, the
peer's pessimistic 10.8375759 and 8.6213253).  Power: with every ``others`` tail product
of ``optimistic_tail._optimistic_tail_product`` placed one coarse step higher (the
reviewer's mutation of 572e8af), the 50-step row raises (the engine's own certificate
check: lower 8.63058 above the upper end 8.62134), so the test fails.  About 1 CPU s.
"""

from __future__ import annotations

import pytest

from dpacct.accountant import compose, poisson_subsample
from dpacct.mechanisms import GaussianMechanism

#: (q, sigma, T, delta) -> dp_accounting 0.6.0 at interval 2e-5: (pessimistic, optimistic)
PEER = {
    (0.3, 1.0, 20, 1e-6): (10.837575914387124, 10.837375912274629),
    (0.05, 0.8, 50, 1e-10): (8.621325339853952, 8.620820258341194),
}


@pytest.mark.parametrize("row", sorted(PEER))
def test_bracket_inside_dp_accountings_fine_pld(row):
    q, sigma, steps, delta = row
    pessimistic, optimistic = PEER[row]
    run = compose([poisson_subsample(GaussianMechanism(sigma=sigma), q)], counts=[steps])
    lower, upper = (float(x) for x in run.epsilon_bounds(delta))
    assert lower <= pessimistic, (row, lower, pessimistic)
    assert upper >= optimistic, (row, upper, optimistic)
    assert (upper - lower) <= 1e-5 * upper, (row, lower, upper)
