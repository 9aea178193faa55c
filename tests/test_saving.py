"""Saving and loading a ledger (``dpacct.accountant.ledger.saving``): round trips bit for
bit, atomic writes, and refusal of truncated, corrupt, edited or invalid files; every
mechanism type a ledger may hold round-trips, and an unregistered one is a clear error.
(The file format itself -- schema, seal, signature -- is tested in ``test_ledger_file.py``.)
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from dpacct.accountant import PrivacyAccountant, compose, poisson_subsample
from dpacct.accountant.ledger import LedgerFileError
from dpacct.accountant.ledger.ledger_file import KEY_ENV, UNSIGNED_SCHEMA_VERSION
from dpacct.accountant.mechanism import Capabilities, Mechanism
from dpacct.accountant.serialization import register_mechanism, sha256_of
from dpacct.mechanisms import GaussianMechanism

DELTA = 1e-5


@pytest.fixture(autouse=True)
def _no_ledger_key(monkeypatch):
    """These tests are about unkeyed ledgers: a key in the environment would sign them."""
    monkeypatch.delenv(KEY_ENV, raising=False)


def dpsgd(sigma: float, q: float, steps: int):
    return compose([poisson_subsample(GaussianMechanism(sigma=sigma), q)], counts=[steps])


def reseal(data: dict) -> dict:
    """Recompute the checksum of edited data (a forger who knows the format)."""
    payload = {k: v for k, v in data.items() if k != "checksum"}
    return {**payload, "checksum": sha256_of(payload)}


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
    # one long DP-SGD phase: the online route, inside the exact composition's bracket
    low, high = dpsgd(1.0, 0.01, 5_000).epsilon_bounds(DELTA)
    assert low <= second.epsilon(DELTA) <= high * (1 + 1e-3)


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
