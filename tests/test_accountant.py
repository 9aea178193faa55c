"""Tests for the online accountant (``dpacct.accountant.ledger.accountant``).

What must hold: the ledger's epsilon is the engine's epsilon of the composition of what
was recorded; identical consecutive entries merge; bad input records nothing; one
ledger tracks one neighbouring relation.  Its filters are tested in ``test_filters.py``,
saving and loading in ``test_saving.py``, the record classification in
``test_records.py``, the filter's composed history in ``test_history.py``.
"""

from __future__ import annotations

import math

import pytest

try:  # the public spelling (DESIGN); the package export is added by the lead
    from dpacct.accountant import PrivacyAccountant
except ImportError:  # pragma: no cover - until accountant/__init__ exports it
    from dpacct.accountant.ledger import PrivacyAccountant

from dpacct.accountant import compose, poisson_subsample
from dpacct.mechanisms import GaussianMechanism

DELTA = 1e-5


def dpsgd(sigma: float, q: float, steps: int):
    return compose([poisson_subsample(GaussianMechanism(sigma=sigma), q)], counts=[steps])


# ----------------------------------------------------------------------------------
# recording and querying
# ----------------------------------------------------------------------------------


def test_empty_ledger_spent_nothing():
    acct = PrivacyAccountant()
    assert acct.epsilon(DELTA) == 0.0
    assert acct.delta(1.0) == 0.0
    assert acct.epsilon_bounds(DELTA) == (0.0, 0.0)
    assert acct.entries == () and acct.steps == 0 and acct.mechanism() is None


def test_design_example():
    acct = PrivacyAccountant()
    acct.step(noise_multiplier=1.0, sample_rate=0.01)
    eps = acct.epsilon(delta=1e-5)
    # one DP-SGD phase: the online route, a certified upper bound inside the exact
    # composition's bracket (up to the fast path's loss grid)
    low, high = dpsgd(1.0, 0.01, 1).epsilon_bounds(1e-5)
    assert low <= eps <= high * (1 + 1e-4)


def test_identical_consecutive_steps_merge():
    acct = PrivacyAccountant()
    for _ in range(10_000):
        acct.step(noise_multiplier=1.1, sample_rate=0.004)
    assert len(acct.entries) == 1
    mech, count = acct.entries[0]
    assert count == 10_000
    assert mech == poisson_subsample(GaussianMechanism(sigma=1.1), 0.004)
    acct.step(noise_multiplier=1.1, sample_rate=0.004, count=10**6)
    assert acct.entries[0][1] == 10**6 + 10_000 and len(acct.entries) == 1


def test_non_consecutive_entries_stay_apart_but_compose_correctly():
    a, b = GaussianMechanism(sigma=5.0), GaussianMechanism(sigma=7.0)
    acct = PrivacyAccountant()
    acct.record(a, 3)
    acct.record(b, 2)
    acct.record(a)
    assert [c for _, c in acct.entries] == [3, 2, 1]
    want = compose([a, b], counts=[4, 2]).epsilon(DELTA)
    assert acct.epsilon(DELTA) == pytest.approx(want, rel=1e-12)


def test_schedule_changes_are_run_length_entries():
    """100 000 steps, three schedule changes (sigma and batch size): 4 entries, one query
    equal to composing the four phases directly (the ledger's speed is measured in
    ``benchmarks/``, not asserted here)."""
    schedule = [(1.0, 0.01), (1.2, 0.01), (1.2, 0.02), (0.9, 0.02)]
    acct = PrivacyAccountant()
    for sigma, q in schedule:
        for _ in range(25_000):
            acct.step(noise_multiplier=sigma, sample_rate=q)
    assert len(acct.entries) == 4 and acct.steps == 100_000
    eps = acct.epsilon(DELTA)
    steps = [poisson_subsample(GaussianMechanism(sigma=s), q) for s, q in schedule]
    want = compose(steps, counts=[25_000] * 4).epsilon(DELTA)
    assert eps == pytest.approx(want, rel=1e-12)
    assert acct.epsilon(DELTA) == eps  # a repeated query gives the same answer


def test_epsilon_grows_as_training_goes_on():
    acct = PrivacyAccountant()
    previous = 0.0
    for _ in range(3):
        acct.step(noise_multiplier=1.0, sample_rate=0.05, count=200)
        eps = acct.epsilon(DELTA)
        assert eps > previous
        previous = eps
    lo, hi = acct.epsilon_bounds(DELTA)
    assert lo <= previous == hi


def test_step_without_sample_rate_is_refused_not_read_as_full_batch():
    # a forgotten rate used to be recorded as a full batch (q = 1) in silence
    acct = PrivacyAccountant()
    with pytest.raises(TypeError, match=r"needs sample_rate.*sample_rate=1\.0"):
        acct.step(noise_multiplier=1.0)
    assert acct.steps == 0 and acct.epsilon(DELTA) == 0.0


def test_record_any_mechanism_and_step_with_full_batches():
    acct = PrivacyAccountant()
    acct.step(noise_multiplier=10.0, sample_rate=1.0, count=100)  # noisy GD
    acct.record(GaussianMechanism(sigma=10.0), 100)  # the same mechanism: merges
    assert len(acct.entries) == 1 and acct.steps == 200
    want = GaussianMechanism(sigma=10.0 / math.sqrt(200)).epsilon(DELTA)
    assert acct.epsilon(DELTA) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "exc", "name"),
    [
        ({"noise_multiplier": 0.0, "sample_rate": 0.01}, ValueError, "noise_multiplier"),
        ({"noise_multiplier": -1.0, "sample_rate": 0.01}, ValueError, "noise_multiplier"),
        ({"noise_multiplier": math.nan, "sample_rate": 0.01}, ValueError, "noise_multiplier"),
        ({"noise_multiplier": "1.0", "sample_rate": 0.01}, TypeError, "noise_multiplier"),
        ({"noise_multiplier": 1.0, "sample_rate": 0.0}, ValueError, "sample_rate"),
        ({"noise_multiplier": 1.0, "sample_rate": 1.5}, ValueError, "sample_rate"),
        ({"noise_multiplier": 1.0, "sample_rate": 0.01, "count": 0}, ValueError, "count"),
        ({"noise_multiplier": 1.0, "sample_rate": 0.01, "count": -3}, ValueError, "count"),
        ({"noise_multiplier": 1.0, "sample_rate": 0.01, "count": 2.5}, TypeError, "count"),
    ],
)
def test_step_rejects_bad_input_and_records_nothing(kwargs, exc, name):
    acct = PrivacyAccountant()
    acct.step(noise_multiplier=1.0, sample_rate=0.01)
    with pytest.raises(exc, match=name):
        acct.step(**kwargs)
    assert acct.steps == 1


def test_record_and_constructor_reject_bad_input():
    acct = PrivacyAccountant()
    with pytest.raises(TypeError, match="mechanism must be a Mechanism"):
        acct.record("gaussian", 1)
    with pytest.raises(ValueError, match="count"):
        acct.record(GaussianMechanism(sigma=1.0), -1)
    with pytest.raises(ValueError, match="delta"):
        acct.epsilon(1.5)
    with pytest.raises(ValueError, match="budget"):
        PrivacyAccountant(budget_epsilon=1.0)
    with pytest.raises(ValueError, match="budget_delta"):
        PrivacyAccountant(budget_epsilon=1.0, budget_delta=2.0)
    with pytest.raises(ValueError, match="budget_epsilon"):
        PrivacyAccountant(budget_epsilon=-1.0, budget_delta=DELTA)


def test_record_refuses_a_different_neighbouring_relation():
    from dpacct.mechanisms import RandomizedResponse

    acct = PrivacyAccountant()
    acct.step(noise_multiplier=1.0, sample_rate=0.01)
    with pytest.raises(ValueError, match="neighbouring relation"):
        acct.record(RandomizedResponse(p=0.75), 1)
    assert acct.steps == 1  # nothing recorded
