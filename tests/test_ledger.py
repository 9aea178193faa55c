"""Tests for the online accountant (``dpacct.accountant.ledger``) and
``dpacct.accountant.serialization``.

What must hold: the ledger's epsilon is the engine's epsilon of the composition of what
was recorded; identical consecutive entries merge; a privacy filter refuses exactly the
steps that would exceed its budget and leaves the ledger unchanged; saving is atomic and
loading refuses corrupt, truncated or edited files; mechanisms are serialised through an
explicit registry (never pickled).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path

import pytest

try:  # the public spelling (DESIGN); the package export is added by the lead
    from dpacct.accountant import PrivacyAccountant
except ImportError:  # pragma: no cover - until accountant/__init__ exports it
    from dpacct.accountant.ledger import PrivacyAccountant

from dpacct.accountant import compose, poisson_subsample
from dpacct.accountant.ledger import BudgetExceededError, LedgerFileError
from dpacct.accountant.ledger_file import KEY_ENV, UNSIGNED_SCHEMA_VERSION
from dpacct.accountant.mechanism import Capabilities, Mechanism
from dpacct.accountant.serialization import (
    register_mechanism,
    sha256_of,
)
from dpacct.mechanisms import GaussianMechanism

ROOT = Path(__file__).resolve().parents[1]
DELTA = 1e-5


def dpsgd(sigma: float, q: float, steps: int):
    return compose([poisson_subsample(GaussianMechanism(sigma=sigma), q)], counts=[steps])


@pytest.fixture(autouse=True)
def _no_ledger_key(monkeypatch):
    """These tests are about unkeyed ledgers: a key in the environment would sign them."""
    monkeypatch.delenv(KEY_ENV, raising=False)


def reseal(data: dict) -> dict:
    """Recompute the checksum of edited data (a forger who knows the format)."""
    payload = {k: v for k, v in data.items() if k != "checksum"}
    return {**payload, "checksum": sha256_of(payload)}


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
    assert eps == pytest.approx(dpsgd(1.0, 0.01, 1).epsilon(1e-5), rel=1e-12)


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


def test_record_any_mechanism_and_step_with_full_batches():
    acct = PrivacyAccountant()
    acct.step(noise_multiplier=10.0, count=100)  # sample_rate=1: noisy GD
    acct.record(GaussianMechanism(sigma=10.0), 100)  # the same mechanism: merges
    assert len(acct.entries) == 1 and acct.steps == 200
    want = GaussianMechanism(sigma=10.0 / math.sqrt(200)).epsilon(DELTA)
    assert acct.epsilon(DELTA) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "exc", "name"),
    [
        ({"noise_multiplier": 0.0}, ValueError, "noise_multiplier"),
        ({"noise_multiplier": -1.0}, ValueError, "noise_multiplier"),
        ({"noise_multiplier": math.nan}, ValueError, "noise_multiplier"),
        ({"noise_multiplier": "1.0"}, TypeError, "noise_multiplier"),
        ({"noise_multiplier": 1.0, "sample_rate": 0.0}, ValueError, "sample_rate"),
        ({"noise_multiplier": 1.0, "sample_rate": 1.5}, ValueError, "sample_rate"),
        ({"noise_multiplier": 1.0, "count": 0}, ValueError, "count"),
        ({"noise_multiplier": 1.0, "count": -3}, ValueError, "count"),
        ({"noise_multiplier": 1.0, "count": 2.5}, TypeError, "count"),
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


# ----------------------------------------------------------------------------------
# privacy filter
# ----------------------------------------------------------------------------------


def test_filter_refuses_exactly_the_first_step_over_budget(monkeypatch):
    calls = []
    from dpacct.accountant.ledger import filters as filters_module

    real_compose = filters_module.compose

    def counting_compose(*args, **kwargs):
        calls.append(1)
        return real_compose(*args, **kwargs)

    monkeypatch.setattr(filters_module, "compose", counting_compose)
    acct = PrivacyAccountant(budget_epsilon=1.0, budget_delta=DELTA)
    n = 0
    with pytest.raises(BudgetExceededError) as info:
        while True:
            acct.step(noise_multiplier=2.0, sample_rate=0.02)
            n += 1
    # n steps fit, n + 1 do not (the engine's own verdict)
    assert n > 100
    assert dpsgd(2.0, 0.02, n).epsilon(DELTA) <= 1.0 < dpsgd(2.0, 0.02, n + 1).epsilon(DELTA)
    assert acct.steps == n
    err = info.value
    assert err.epsilon > 1.0 and err.budget_epsilon == 1.0 and err.budget_delta == DELTA
    assert "unchanged" in str(err)
    # one accountant evaluation covers many steps: O(log n), not O(n)
    assert len(calls) < 12 * math.log2(n + 2)
    # the spent epsilon never exceeds the budget in filter mode
    assert acct.epsilon(DELTA) <= 1.0


def test_refused_record_leaves_the_ledger_unchanged():
    acct = PrivacyAccountant(budget_epsilon=2.0, budget_delta=DELTA)
    acct.step(noise_multiplier=1.0, sample_rate=0.05, count=10)
    before_entries, before_eps = acct.entries, acct.epsilon(DELTA)
    with pytest.raises(BudgetExceededError):
        acct.step(noise_multiplier=1.0, sample_rate=0.05, count=100_000)
    with pytest.raises(BudgetExceededError):
        acct.record(GaussianMechanism(sigma=0.5))
    assert acct.entries == before_entries
    assert acct.epsilon(DELTA) == before_eps
    # something small still fits, and a schedule change is checked too
    acct.step(noise_multiplier=4.0, sample_rate=0.05, count=10)
    assert len(acct.entries) == 2
    assert acct.epsilon(DELTA) <= 2.0


def test_filter_survives_save_and_load(tmp_path):
    acct = PrivacyAccountant(budget_epsilon=1.0, budget_delta=DELTA)
    acct.record(GaussianMechanism(sigma=10.0), 7)
    path = tmp_path / "ledger.json"
    acct.save(path)
    restored = PrivacyAccountant.load(path)
    assert restored.budget == (1.0, DELTA)
    with pytest.raises(BudgetExceededError):
        restored.record(GaussianMechanism(sigma=10.0))
    assert restored.steps == 7


# ----------------------------------------------------------------------------------
# save / load
# ----------------------------------------------------------------------------------


def make_ledger() -> PrivacyAccountant:
    acct = PrivacyAccountant(tol=1e-3)
    acct.step(noise_multiplier=1.1, sample_rate=256 / 60_000, count=5_000)
    acct.step(noise_multiplier=0.9, sample_rate=512 / 60_000, count=2_000)
    acct.record(GaussianMechanism(sigma=3.0), 2)
    acct.record(compose([GaussianMechanism(sigma=4.0), GaussianMechanism(sigma=5.0)], [1, 2]))
    return acct


def test_save_load_round_trips_exactly(tmp_path):
    acct = make_ledger()
    path = tmp_path / "ledger.json"
    acct.save(path)
    restored = PrivacyAccountant.load(path)
    assert restored.entries == acct.entries
    assert restored.tol == acct.tol and restored.budget is None
    assert restored.epsilon(DELTA) == acct.epsilon(DELTA)
    # floats survive bit for bit; saving again gives the same bytes
    path2 = tmp_path / "again.json"
    restored.save(path2)
    assert path.read_bytes() == path2.read_bytes()
    data = json.loads(path.read_text())
    assert data["schema_version"] == UNSIGNED_SCHEMA_VERSION  # no key: the layout of old
    assert data["checksum"].startswith("sha256:")
    assert [e["count"] for e in data["entries"]] == [5_000, 2_000, 2, 1]


def test_restarted_job_keeps_its_true_spent_budget(tmp_path):
    path = tmp_path / "ckpt" / "privacy.json"
    path.parent.mkdir()
    first = PrivacyAccountant()
    first.step(noise_multiplier=1.0, sample_rate=0.01, count=3_000)
    first.save(path)
    # ... the job restarts from its checkpoint
    second = PrivacyAccountant.load(path)
    second.step(noise_multiplier=1.0, sample_rate=0.01, count=2_000)
    assert second.entries == ((poisson_subsample(GaussianMechanism(sigma=1.0), 0.01), 5_000),)
    assert second.epsilon(DELTA) == pytest.approx(dpsgd(1.0, 0.01, 5_000).epsilon(DELTA))


def test_interrupted_save_leaves_the_previous_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "ledger.json"
    acct = make_ledger()
    acct.save(path)
    before = path.read_bytes()
    acct.step(noise_multiplier=2.0, sample_rate=0.1, count=10)

    def crash(src, dst):
        raise OSError("simulated crash between write and rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        acct.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert PrivacyAccountant.load(path).entries == make_ledger().entries
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.json"]  # no temp left
    acct.save(path)  # and a later save goes through
    assert PrivacyAccountant.load(path).entries == acct.entries


def test_save_writes_through_a_synced_temporary_file(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(
        os,
        "replace",
        lambda a, b: (events.append(("replace", Path(a).parent)), real_replace(a, b))[1],
    )
    make_ledger().save(tmp_path / "ledger.json")
    assert events[0] == "fsync"
    assert events[1] == ("replace", tmp_path)  # same directory: an atomic rename


@pytest.fixture
def saved(tmp_path) -> Path:
    path = tmp_path / "ledger.json"
    make_ledger().save(path)
    return path


def test_truncated_file_is_refused(saved):
    text = saved.read_text()
    saved.write_text(text[: len(text) // 2])
    with pytest.raises(LedgerFileError, match="truncated"):
        PrivacyAccountant.load(saved)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", "empty"),
        (b"\x00\xff\xfe garbage", "corrupt"),
        (b"[1, 2, 3]", "JSON object"),
        (b'{"format": "something else"}', "not a dpacct privacy ledger"),
        (b'{"a": NaN}', "corrupt"),
    ],
)
def test_corrupt_files_are_refused(saved, content, match):
    saved.write_bytes(content)
    with pytest.raises(LedgerFileError, match=match):
        PrivacyAccountant.load(saved)


def test_hand_edited_numbers_fail_the_checksum(saved):
    data = json.loads(saved.read_text())
    data["entries"][0]["count"] = 50  # "we did fewer steps than that"
    saved.write_text(json.dumps(data))
    with pytest.raises(LedgerFileError, match="checksum mismatch"):
        PrivacyAccountant.load(saved)
    data = json.loads(saved.read_text())
    data["entries"][0]["mechanism"]["params"]["base"]["params"]["sigma"] = 5.0
    saved.write_text(json.dumps(data))
    with pytest.raises(LedgerFileError, match="checksum"):
        PrivacyAccountant.load(saved)


def test_cosmetic_reformatting_is_accepted(saved):
    data = json.loads(saved.read_text())
    saved.write_text(json.dumps(data, indent=8))  # same content, other layout
    assert PrivacyAccountant.load(saved).entries == make_ledger().entries


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda d: d["entries"][0].__setitem__("count", -5), "count must be an integer >= 1"),
        (lambda d: d["entries"][0].__setitem__("count", 0), "count must be an integer >= 1"),
        (lambda d: d["entries"][0].__setitem__("count", 2.5), "count must be an integer"),
        (lambda d: d.__setitem__("schema_version", 99), "unsupported schema_version 99"),
        (lambda d: d["entries"][0]["mechanism"].__setitem__("type", "pickle"), "unknown mechanism"),
        (
            lambda d: d["entries"][0]["mechanism"]["params"]["base"]["params"].__setitem__(
                "sigma", -1.0
            ),
            "sigma must lie in",
        ),
        (lambda d: d.__setitem__("budget", {"epsilon": -1.0, "delta": 0.1}), "budget"),
        (lambda d: d.__setitem__("extra", 1), "unexpected layout"),
    ],
)
def test_invalid_content_is_refused_even_with_a_valid_checksum(saved, edit, match):
    data = json.loads(saved.read_text())
    edit(data)
    saved.write_text(json.dumps(reseal(data)))
    with pytest.raises(LedgerFileError, match=match):
        PrivacyAccountant.load(saved)


def test_missing_file_is_a_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        PrivacyAccountant.load(tmp_path / "nope.json")


# ----------------------------------------------------------------------------------
# serialization registry
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "kwargs"),
    [
        ("LaplaceMechanism", {"b": 2.0}),
        ("RandomizedResponse", {"p": 0.6, "k": 3}),
        ("DiscreteGaussianMechanism", {"sigma": 2.0}),
        ("DiscreteLaplaceMechanism", {"scale": 2.0}),
        ("ZCDPMechanism", {"rho": 0.5}),
        ("PureDPMechanism", {"epsilon": 0.3}),
        ("ExponentialMechanism", {"epsilon": 0.4}),
        ("ExponentialMechanism", {"epsilon": 0.4, "bounded_range": False}),
    ],
)
def test_zoo_mechanisms_round_trip_through_a_ledger(cls, kwargs, tmp_path):
    from dpacct import mechanisms

    if not hasattr(mechanisms, cls):  # pragma: no cover - zoo under construction
        pytest.skip(f"mechanisms.{cls} not available")
    mech = getattr(mechanisms, cls)(**kwargs)
    acct = PrivacyAccountant()
    acct.record(mech, 4)
    if mech.neighbouring == "add/remove":  # one ledger tracks one relation
        acct.step(noise_multiplier=2.0, sample_rate=0.1, count=3)
    acct.save(tmp_path / "ledger.json")
    restored = PrivacyAccountant.load(tmp_path / "ledger.json")
    assert restored.entries == acct.entries
    assert [type(m) for m, _ in restored.entries] == [type(m) for m, _ in acct.entries]
    assert restored.epsilon(DELTA) == acct.epsilon(DELTA)


@dataclasses.dataclass(frozen=True)
class _Unregistered(Mechanism):
    """A test mechanism: pure epsilon-DP with a closed-form RDP curve."""

    eps: float

    declares = Capabilities(rdp=True)

    def _rdp(self, alpha):
        return 0 * alpha + self.eps


def test_unregistered_mechanism_is_a_clear_type_error(tmp_path):
    acct = PrivacyAccountant()
    acct.record(_Unregistered(eps=0.5), 3)
    with pytest.raises(TypeError, match=r"_Unregistered.*not registered.*register_mechanism"):
        acct.save(tmp_path / "ledger.json")
    assert not any(tmp_path.iterdir())  # nothing written
    register_mechanism("test_ledger_unregistered", _Unregistered, replace=True)
    acct.save(tmp_path / "ledger.json")
    restored = PrivacyAccountant.load(tmp_path / "ledger.json")
    assert restored.entries == acct.entries


def test_record_refuses_a_different_neighbouring_relation():
    from dpacct.mechanisms import RandomizedResponse

    acct = PrivacyAccountant()
    acct.step(noise_multiplier=1.0, sample_rate=0.01)
    with pytest.raises(ValueError, match="neighbouring relation"):
        acct.record(RandomizedResponse(p=0.75), 1)
    assert acct.steps == 1  # nothing recorded
