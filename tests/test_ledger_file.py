"""Tests for the ledger's file format (``dpacct.accountant.ledger.ledger_file``): keyed ledgers.

What must hold: with a secret key a ledger is signed with HMAC-SHA256 (checked here
against the standard library's ``hmac`` over the canonical JSON, computed independently
of the library); it loads with the right key and is refused with a wrong key, with no
key, and -- when the loader has a key -- when someone without the key edited it and
re-sealed it with the unkeyed sha256 or stripped its signature (the attack of issue 21:
count 502 -> 7, budget 3 -> 100).  Unkeyed ledgers load as before.  The key never
appears in the file, in an error message or in a repr; bad keys are refused naming the
parameter; the environment variable is read at each call and an explicit key wins.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpacct.accountant import LedgerFileError, PrivacyAccountant
from dpacct.accountant.ledger.ledger_file import (
    KEY_ENV,
    MIN_KEY_BYTES,
    SCHEMA_VERSION,
    UNSIGNED_SCHEMA_VERSION,
    resolve_key,
    seal,
    unseal,
)
from dpacct.accountant.serialization import sha256_of
from dpacct.mechanisms import GaussianMechanism

DELTA = 1e-5
KEY = secrets.token_bytes(32)  # random: distinct on every run
OTHER_KEY = secrets.token_bytes(32)
TEXT_KEY = "a ledger passphrase of ample length"
FROM_ENV = r"not signed with {} key \(from the environment variable " + KEY_ENV + r"\)"
FROM_ARG = r"not signed with this key \(from the key= argument\)"


@pytest.fixture(autouse=True)
def _no_ledger_key(monkeypatch):
    """Every test starts without a key in the environment (and sets one if it wants)."""
    monkeypatch.delenv(KEY_ENV, raising=False)


def issue_ledger() -> PrivacyAccountant:
    """The ledger of issue 21: 502 DP-SGD steps under a budget of epsilon 3."""
    acct = PrivacyAccountant(budget_epsilon=3.0, budget_delta=DELTA)
    acct.step(noise_multiplier=1.1, sample_rate=0.01, count=502)
    return acct


def independent_hmac(content: dict, key: bytes) -> str:
    """HMAC-SHA256 over sorted-key, compact, ASCII JSON: the format, by hand."""
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "hmac-sha256:" + hmac.new(key, text.encode("ascii"), hashlib.sha256).hexdigest()


def forge(data: dict, *, count: int = 7, budget: float = 100.0) -> dict:
    """The issue's attack by someone without the key: edit the count and the budget,
    drop the signature and recompute the checksum with the library's own sha256_of."""
    edited = {k: v for k, v in data.items() if k not in ("signature", "checksum")}
    edited["entries"] = [dict(edited["entries"][0], count=count)]
    edited["budget"] = dict(edited["budget"], epsilon=budget)
    edited["schema_version"] = UNSIGNED_SCHEMA_VERSION
    return {**edited, "checksum": sha256_of(edited)}


@pytest.fixture
def signed(tmp_path) -> Path:
    path = tmp_path / "ledger.json"
    issue_ledger().save(path, key=KEY)
    return path


def read(path: Path) -> dict:
    return json.loads(path.read_text())


def write(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2))


# ----------------------------------------------------------------------------------
# the signed format
# ----------------------------------------------------------------------------------


def test_a_keyed_save_carries_an_hmac_over_the_canonical_content(signed):
    data = read(signed)
    assert data["schema_version"] == SCHEMA_VERSION == 2
    assert "checksum" not in data
    content = {k: v for k, v in data.items() if k != "signature"}
    assert data["signature"] == independent_hmac(content, KEY)
    assert data["signature"] != independent_hmac(content, OTHER_KEY)
    assert data["entries"][0]["count"] == 502 and data["budget"]["epsilon"] == 3.0


def test_a_keyed_ledger_loads_with_the_right_key(signed):
    restored = PrivacyAccountant.load(signed, key=KEY)
    original = issue_ledger()
    assert restored.entries == original.entries
    assert restored.budget == (3.0, DELTA) and restored.steps == 502
    assert restored.epsilon(DELTA) == original.epsilon(DELTA)


@pytest.mark.parametrize("key", [TEXT_KEY, TEXT_KEY.encode("utf-8"), bytearray(b"x" * 16)])
def test_str_bytes_and_bytearray_keys_sign_the_same_way(tmp_path, key):
    path = tmp_path / "ledger.json"
    issue_ledger().save(path, key=key)
    raw = key.encode("utf-8") if isinstance(key, str) else bytes(key)
    data = read(path)
    content = {k: v for k, v in data.items() if k != "signature"}
    assert data["signature"] == independent_hmac(content, raw)
    assert PrivacyAccountant.load(path, key=raw).steps == 502  # a str key is its UTF-8


def test_a_wrong_key_is_refused(signed):
    with pytest.raises(LedgerFileError, match="not signed with this key"):
        PrivacyAccountant.load(signed, key=OTHER_KEY)


def test_a_keyed_ledger_without_a_key_is_refused_not_loaded_unverified(signed):
    with pytest.raises(LedgerFileError, match=r"is signed .* a key is needed") as info:
        PrivacyAccountant.load(signed)
    assert KEY_ENV in str(info.value) and "key=" in str(info.value)
    with pytest.raises(LedgerFileError, match="a key is needed"):  # allow_unsigned: no
        PrivacyAccountant.load(signed, allow_unsigned=True)


def test_an_edit_that_keeps_the_old_signature_is_refused(signed):
    data = read(signed)
    data["entries"][0]["count"] = 7
    write(signed, data)
    with pytest.raises(LedgerFileError, match="signature mismatch"):
        PrivacyAccountant.load(signed, key=KEY)
    data["entries"][0]["count"] = 502  # the schema version is signed too
    data["schema_version"] = 1
    write(signed, data)
    with pytest.raises(LedgerFileError, match="signature mismatch"):
        PrivacyAccountant.load(signed, key=KEY)


def test_re_signing_with_another_key_is_refused(signed):
    data = read(signed)
    data["entries"][0]["count"] = 7
    content = {k: v for k, v in data.items() if k != "signature"}
    write(signed, {**content, "signature": independent_hmac(content, OTHER_KEY)})
    with pytest.raises(LedgerFileError, match="not signed with this key"):
        PrivacyAccountant.load(signed, key=KEY)


# ----------------------------------------------------------------------------------
# the issue's attack: re-sealing without the key
# ----------------------------------------------------------------------------------


def test_issue_attack_on_a_keyed_ledger_is_refused(signed):
    write(signed, forge(read(signed)))
    with pytest.raises(LedgerFileError, match="not signed with the key") as info:
        PrivacyAccountant.load(signed, key=KEY)
    assert "unkeyed sha256 checksum" in str(info.value)
    assert "allow_unsigned=True" in str(info.value)


def test_issue_attack_keeping_schema_2_is_refused(signed):
    forged = forge(read(signed))
    forged["schema_version"] = 2
    forged["checksum"] = sha256_of({k: v for k, v in forged.items() if k != "checksum"})
    write(signed, forged)
    with pytest.raises(LedgerFileError, match="not signed with the key"):
        PrivacyAccountant.load(signed, key=KEY)
    with pytest.raises(LedgerFileError, match="signed, but this one carries only a checksum"):
        PrivacyAccountant.load(signed)


def test_stripping_the_seal_is_refused_with_a_key(signed):
    data = read(signed)
    del data["signature"]
    write(signed, data)
    with pytest.raises(LedgerFileError, match=r"not signed with the key.*no seal at all"):
        PrivacyAccountant.load(signed, key=KEY)
    with pytest.raises(LedgerFileError, match="missing checksum"):
        PrivacyAccountant.load(signed)


def test_issue_attack_on_an_unkeyed_ledger_is_what_a_key_prevents(tmp_path):
    """Without a key the checksum is recomputable: the forged file loads (the issue's
    finding, the documented limit of unkeyed ledgers); a loader with a key refuses it."""
    path = tmp_path / "ledger.json"
    issue_ledger().save(path)
    data = read(path)
    assert data["schema_version"] == UNSIGNED_SCHEMA_VERSION and "signature" not in data
    write(path, forge(data))
    forged = PrivacyAccountant.load(path)
    assert forged.steps == 7 and forged.budget == (100.0, DELTA)
    with pytest.raises(LedgerFileError, match="not signed with the key"):
        PrivacyAccountant.load(path, key=KEY)


@settings(max_examples=25, deadline=None)
@given(
    count=st.integers(min_value=1, max_value=10**6).filter(lambda c: c != 502),
    budget=st.floats(min_value=0.1, max_value=1e3).filter(lambda b: b != 3.0),
    keep_signature=st.booleans(),
)
def test_any_forged_count_or_budget_is_refused_with_the_key(count, budget, keep_signature):
    data = issue_ledger().to_dict(key=KEY)
    forged = forge(data, count=count, budget=budget)
    if keep_signature:  # the edit, with the original signature left in place
        forged = {k: v for k, v in forged.items() if k != "checksum"}
        forged["schema_version"] = SCHEMA_VERSION
        forged["signature"] = data["signature"]
    with pytest.raises(LedgerFileError, match="not signed with th"):
        PrivacyAccountant.from_dict(forged, key=KEY)


# ----------------------------------------------------------------------------------
# unkeyed ledgers and allow_unsigned
# ----------------------------------------------------------------------------------


def test_an_unkeyed_ledger_loads_without_a_key_as_before(tmp_path):
    path = tmp_path / "ledger.json"
    issue_ledger().save(path)
    data = read(path)
    content = {k: v for k, v in data.items() if k != "checksum"}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert data["checksum"] == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    assert PrivacyAccountant.load(path).steps == 502
    data["entries"][0]["count"] = 7  # a careless edit is still caught
    write(path, data)
    with pytest.raises(LedgerFileError, match="checksum mismatch"):
        PrivacyAccountant.load(path)


def test_allow_unsigned_loads_an_unkeyed_ledger_deliberately_still_checksummed(tmp_path):
    path = tmp_path / "ledger.json"
    issue_ledger().save(path)
    assert PrivacyAccountant.load(path, key=KEY, allow_unsigned=True).steps == 502
    data = read(path)
    data["entries"][0]["count"] = 7
    write(path, data)
    with pytest.raises(LedgerFileError, match="checksum mismatch"):
        PrivacyAccountant.load(path, key=KEY, allow_unsigned=True)


def test_allow_unsigned_does_not_weaken_a_signed_ledger(signed):
    assert PrivacyAccountant.load(signed, key=KEY, allow_unsigned=True).steps == 502
    with pytest.raises(LedgerFileError, match="not signed with this key"):
        PrivacyAccountant.load(signed, key=OTHER_KEY, allow_unsigned=True)


def test_allow_unsigned_must_be_a_bool(signed):
    with pytest.raises(TypeError, match="allow_unsigned"):
        PrivacyAccountant.load(signed, key=KEY, allow_unsigned="yes")


# ----------------------------------------------------------------------------------
# malformed seals
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("signature", "match"),
    [
        ("ed25519:abcd", "unsupported signature kind 'ed25519'"),
        (12345, "unsupported signature kind 12345"),
        ("hmac-sha256:" + "é" * 64, "signature mismatch"),  # non-ASCII: no crash
        ("hmac-sha256:", "signature mismatch"),
    ],
)
def test_malformed_signatures_are_refused(signed, signature, match):
    data = read(signed)
    data["signature"] = signature
    write(signed, data)
    with pytest.raises(LedgerFileError, match=match):
        PrivacyAccountant.load(signed, key=KEY)


def test_a_checksum_and_a_signature_together_are_refused(signed):
    data = read(signed)
    data["checksum"] = sha256_of({k: v for k, v in data.items() if k != "signature"})
    write(signed, data)
    with pytest.raises(LedgerFileError, match="both a checksum and a signature"):
        PrivacyAccountant.load(signed, key=KEY)


def test_a_truncated_signed_file_is_refused(signed):
    text = signed.read_text()
    signed.write_text(text[: len(text) // 2])
    with pytest.raises(LedgerFileError, match="truncated"):
        PrivacyAccountant.load(signed, key=KEY)


# ----------------------------------------------------------------------------------
# key hygiene
# ----------------------------------------------------------------------------------


def test_the_key_is_never_written_to_the_file_messages_or_repr(tmp_path):
    key = "hunter2-" + secrets.token_hex(16)
    path = tmp_path / "ledger.json"
    acct = issue_ledger()
    acct.save(path, key=key)
    raw = path.read_bytes()
    assert key.encode() not in raw and key.encode().hex().encode() not in raw
    restored = PrivacyAccountant.load(path, key=key)
    assert key not in repr(restored) and key not in repr(restored.to_dict(key=key))
    messages = []
    for attempt in (
        lambda: PrivacyAccountant.load(path, key=key + "x"),
        lambda: PrivacyAccountant.load(path),
        lambda: PrivacyAccountant.load(path, key=key[:10]),
        lambda: PrivacyAccountant.from_dict(forge(read(path)), key=key),
    ):
        with pytest.raises(ValueError) as info:
            attempt()
        messages.append(str(info.value) + repr(info.value) + str(info.value.__cause__))
    for text in messages:
        assert key not in text and key[:10] not in text


@pytest.mark.parametrize("key", [b"", b"x" * (MIN_KEY_BYTES - 1), "short", "é" * 7])
def test_a_short_key_is_a_value_error_naming_key(signed, tmp_path, key):
    for call in (
        lambda: issue_ledger().save(tmp_path / "other.json", key=key),
        lambda: PrivacyAccountant.load(signed, key=key),
        lambda: issue_ledger().to_dict(key=key),
    ):
        with pytest.raises(ValueError, match=r"^key must be at least 16 bytes"):
            call()
    assert not (tmp_path / "other.json").exists()


def test_a_key_of_exactly_sixteen_bytes_is_accepted():
    assert resolve_key(b"x" * MIN_KEY_BYTES) == b"x" * 16
    assert resolve_key("é" * 8) == "é".encode() * 8  # 16 bytes of UTF-8


@pytest.mark.parametrize("key", [12345, True, 3.5, ["k" * 16], memoryview(b"k" * 16)])
def test_a_key_of_the_wrong_type_is_a_type_error_naming_key(signed, key):
    with pytest.raises(TypeError, match=r"^key must be bytes or str"):
        PrivacyAccountant.load(signed, key=key)
    with pytest.raises(TypeError, match=r"^key must be bytes or str"):
        issue_ledger().to_dict(key=key)


def test_a_str_key_that_is_not_utf8_is_a_value_error():
    with pytest.raises(ValueError, match="key must be a str that can be UTF-8 encoded") as info:
        resolve_key("\udc80" * 20)
    assert info.value.__cause__ is None and info.value.__suppress_context__


# ----------------------------------------------------------------------------------
# the environment variable
# ----------------------------------------------------------------------------------


def test_the_environment_key_signs_and_verifies(tmp_path, monkeypatch):
    path = tmp_path / "ledger.json"
    monkeypatch.setenv(KEY_ENV, TEXT_KEY)  # set after import: read at each call
    issue_ledger().save(path)
    data = read(path)
    content = {k: v for k, v in data.items() if k != "signature"}
    assert data["signature"] == independent_hmac(content, TEXT_KEY.encode())
    assert PrivacyAccountant.load(path).steps == 502
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(LedgerFileError, match="a key is needed"):
        PrivacyAccountant.load(path)
    assert PrivacyAccountant.load(path, key=TEXT_KEY).steps == 502


def test_an_explicit_key_wins_over_the_environment(signed, monkeypatch, tmp_path):
    monkeypatch.setenv(KEY_ENV, "a different key, also long enough")
    assert PrivacyAccountant.load(signed, key=KEY).steps == 502
    with pytest.raises(LedgerFileError, match=FROM_ENV.format("this")):
        PrivacyAccountant.load(signed)
    monkeypatch.setenv(KEY_ENV, KEY.hex())
    with pytest.raises(LedgerFileError, match=FROM_ARG):
        PrivacyAccountant.load(signed, key=OTHER_KEY)
    path = tmp_path / "explicit.json"
    issue_ledger().save(path, key=OTHER_KEY)
    assert PrivacyAccountant.load(path, key=OTHER_KEY).steps == 502


def test_the_environment_key_refuses_a_forged_unkeyed_ledger(signed, monkeypatch):
    write(signed, forge(read(signed)))
    monkeypatch.setenv(KEY_ENV, TEXT_KEY)
    with pytest.raises(LedgerFileError, match=FROM_ENV.format("the")):
        PrivacyAccountant.load(signed)


@pytest.mark.parametrize(
    ("value", "match"), [("", "is set but empty"), ("tooshort", "at least 16 bytes")]
)
def test_a_bad_environment_key_is_a_value_error_naming_the_variable(
    signed, monkeypatch, value, match
):
    monkeypatch.setenv(KEY_ENV, value)
    for call in (lambda: PrivacyAccountant.load(signed), lambda: issue_ledger().to_dict()):
        with pytest.raises(ValueError, match=rf"^the environment variable {KEY_ENV} .*{match}"):
            call()


def test_the_cli_honours_the_environment_key(signed, monkeypatch, capsys):
    from dpacct.cli import main

    assert main(["ledger", str(signed)]) == 1
    assert "a key is needed" in capsys.readouterr().err
    monkeypatch.setenv(KEY_ENV, "not the key that signed this ledger")
    assert main(["ledger", str(signed)]) == 1
    assert "not signed with this key" in capsys.readouterr().err
    monkeypatch.setenv(KEY_ENV, TEXT_KEY)
    other = signed.with_name("text.json")
    issue_ledger().save(other)
    assert main(["ledger", str(other), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["steps"] == 502


# ----------------------------------------------------------------------------------
# to_dict / from_dict, atomic writes, options
# ----------------------------------------------------------------------------------


def test_to_dict_and_from_dict_take_the_key():
    data = issue_ledger().to_dict(key=KEY)
    assert PrivacyAccountant.from_dict(data, key=KEY).steps == 502
    with pytest.raises(LedgerFileError, match="a key is needed"):
        PrivacyAccountant.from_dict(data)
    assert PrivacyAccountant.from_dict(issue_ledger().to_dict()).steps == 502


def test_seal_and_unseal_are_inverse_and_strip_an_old_seal():
    content = {"format": "dpacct.privacy_ledger", "budget": None, "tol": None, "entries": []}
    unsigned = seal(content)
    signed = seal(unsigned, key=KEY)  # re-sealing replaces the checksum
    assert "checksum" not in signed and unseal(signed, key=KEY) == {**content, "schema_version": 2}
    assert unseal(unsigned) == {**content, "schema_version": 1}


def test_an_interrupted_keyed_save_leaves_the_previous_file_intact(signed, monkeypatch):
    before = signed.read_bytes()
    acct = issue_ledger()
    acct.step(noise_multiplier=1.1, sample_rate=0.01, count=10)

    def crash(src, dst):
        raise OSError("simulated crash between write and rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        acct.save(signed, key=KEY)
    monkeypatch.undo()
    assert signed.read_bytes() == before
    assert sorted(p.name for p in signed.parent.iterdir()) == ["ledger.json"]
    assert PrivacyAccountant.load(signed, key=KEY).steps == 502


def test_a_signed_adaptive_filter_round_trips_its_options(tmp_path):
    acct = PrivacyAccountant(budget_epsilon=8.0, budget_delta=DELTA, adaptive=True)
    acct.step(noise_multiplier=1.1, sample_rate=0.01, count=100)
    acct.record(GaussianMechanism(sigma=20.0))
    path = tmp_path / "ledger.json"
    acct.save(path, key=KEY)
    restored = PrivacyAccountant.load(path, key=KEY)
    assert restored.adaptive and restored.adaptive_order == acct.adaptive_order
    assert restored.entries == acct.entries
    data = read(path)
    data["options"]["adaptive_order"] = 2.0  # a cheaper order: forged without the key
    write(path, data)
    with pytest.raises(LedgerFileError, match="signature mismatch"):
        PrivacyAccountant.load(path, key=KEY)


def test_the_opacus_accountants_ledger_can_be_saved_signed(tmp_path):
    pytest.importorskip("opacus")
    from dpacct.opacus import OpacusAccountant

    acct = OpacusAccountant()
    for _ in range(20):
        acct.step(noise_multiplier=1.1, sample_rate=0.01)
    path = tmp_path / "run.json"
    acct.ledger.save(path, key=KEY)
    restored = PrivacyAccountant.load(path, key=KEY)
    assert restored.steps == 20
    assert restored.epsilon(DELTA) == pytest.approx(acct.get_epsilon(DELTA), rel=1e-12)


#: a ledger written by dpacct before keyed ledgers existed (commit 5195345), verbatim
OLD_UNKEYED_LEDGER = """{
  "budget": {"delta": 1e-05, "epsilon": 3.0},
  "checksum": "sha256:23d8e888a0c0b53232bcd30142cf306648ce85f994d25eebe4a3a2bfb8697fca",
  "entries": [
    {"count": 502, "mechanism": {"params": {"base": {"params": {"sigma": 1.1},
      "type": "gaussian"}, "sample_rate": 0.01}, "type": "poisson_subsample"}},
    {"count": 2, "mechanism": {"params": {"sigma": 20.0}, "type": "gaussian"}}
  ],
  "format": "dpacct.privacy_ledger",
  "schema_version": 1,
  "tol": null
}
"""


def test_a_ledger_written_before_keys_existed_still_loads_and_is_rewritten_identically(
    tmp_path,
):
    path = tmp_path / "old.json"
    path.write_text(OLD_UNKEYED_LEDGER)
    acct = PrivacyAccountant.load(path)
    assert acct.steps == 504 and acct.budget == (3.0, DELTA)
    assert acct.to_dict() == json.loads(OLD_UNKEYED_LEDGER)  # unkeyed: the same layout
    with pytest.raises(LedgerFileError, match="not signed with the key"):
        PrivacyAccountant.load(path, key=KEY)
    adopted = PrivacyAccountant.load(path, key=KEY, allow_unsigned=True)
    adopted.save(path, key=KEY)  # adopting it: from now on it is signed
    assert read(path)["schema_version"] == 2
    assert PrivacyAccountant.load(path, key=KEY).entries == acct.entries
