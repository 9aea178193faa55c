"""The file format of a saved privacy ledger: layout, seal, atomic write, validated read.

A saved :class:`~dpacct.accountant.ledger.PrivacyAccountant` is one JSON object::

    {"format": "dpacct.privacy_ledger", "schema_version": 1 or 2,
     "budget": null or {"epsilon": e, "delta": d}, "tol": null or t,
     "entries": [{"mechanism": {"type": ..., "params": {...}}, "count": n}, ...],
     "options": {...}                      (only with non-default grid / adaptive)
     "checksum": "sha256:<hex>"            (schema 1: unkeyed)
     "signature": "hmac-sha256:<hex>"}     (schema 2: keyed)

The seal covers the :func:`~dpacct.accountant.serialization.canonical_json` text of
every other field (schema version included), so a cosmetic reformatting keeps it valid
and any change of content breaks it.

Two kinds of seal, two threat models:

* **unkeyed** (schema 1, ``"checksum": "sha256:..."``; the layout dpacct has always
  written, still written when no key is given and read by older dpacct): detects
  corruption, truncation and careless edits.  Anyone can recompute it, so it does not
  detect a deliberate edit.
* **keyed** (schema 2, ``"signature": "hmac-sha256:..."``): HMAC-SHA256 (RFC 2104)
  under a secret key of at least :data:`MIN_KEY_BYTES` bytes.  Nobody without the key
  can edit the ledger and produce a signature that verifies.

Reading rules.  A signed ledger is never loaded unverified: without a key it is refused
with a message saying that it is signed and a key is needed.  A reader that has a key
refuses an *unsigned* ledger (a checksum, or no seal at all), because removing the
signature and writing a fresh checksum is exactly what someone without the key would
do; ``allow_unsigned=True`` loads such a file deliberately (its checksum is still
verified).  Without a key, an unsigned ledger loads after its checksum verifies, as
before.

The key is a ``bytes`` or ``str`` (UTF-8 encoded) argument, or else the environment
variable :data:`KEY_ENV` (``DPACCT_LEDGER_KEY``), read at each call; an explicit
argument wins.  The key is never written to the file, to an error message or to a repr.

Not protected against, even with a key: anyone who holds the key (they can sign any
content); deletion of the whole file; replacing the file with an older file signed with
the same key (a rollback -- the ledger carries no monotone counter or timestamp, so
keep the latest signature elsewhere if rollback matters); and anything done to the
training job before it saves.

Examples
--------
>>> payload = {"format": FORMAT, "budget": None, "tol": None, "entries": []}
>>> key = b"0123456789abcdef0123456789abcdef"  # use secrets.token_bytes(32)
>>> signed = seal(payload, key=key)
>>> signed["schema_version"], signed["signature"][:12]
(2, 'hmac-sha256:')
>>> unseal(signed, key=key) == {**payload, "schema_version": 2}
True
>>> unseal(signed, key=None)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
dpacct.accountant.ledger.ledger_file.LedgerFileError: ledger data: the ledger is signed ...
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..mechanism import Mechanism
from ..serialization import canonical_json, from_dict, sha256_of

__all__ = [
    "FORMAT",
    "KEY_ENV",
    "MIN_KEY_BYTES",
    "SCHEMA_VERSION",
    "UNSIGNED_SCHEMA_VERSION",
    "LedgerContent",
    "LedgerFileError",
    "parse_content",
    "read_json",
    "resolve_key",
    "seal",
    "unseal",
    "write_atomic",
]

#: the ``"format"`` tag of a saved ledger
FORMAT = "dpacct.privacy_ledger"
#: the newest layout: schema 2 carries an HMAC-SHA256 ``"signature"`` (a keyed save).
#: Ledgers with non-default options (``grid``, ``adaptive``) carry an ``"options"``
#: object, which readers that predate it refuse (rather than silently dropping an
#: adaptive filter).
SCHEMA_VERSION = 2
#: the layout of an unkeyed save: an unkeyed ``"checksum"``, as dpacct always wrote
UNSIGNED_SCHEMA_VERSION = 1
#: the environment variable that holds the ledger key when no ``key=`` is given
KEY_ENV = "DPACCT_LEDGER_KEY"
#: the shortest key accepted, in bytes (128 bits)
MIN_KEY_BYTES = 16

_HMAC = "hmac-sha256:"
_CONTENT_KEYS = frozenset({"format", "schema_version", "budget", "tol", "entries"})
_OPTION_KEYS = frozenset({"grid", "adaptive", "adaptive_order", "renyi_weights"})
#: the adaptive filters a saved ledger may name (``True`` is ``"renyi"``)
_ADAPTIVE_NAMES = ("renyi", "renyi_orders", "renyi_orders_wide", "gdp")


class LedgerFileError(ValueError):
    """A saved ledger that cannot be trusted: corrupt, edited, wrongly sealed or incompatible.

    Raised for a truncated or corrupt file, a checksum or signature that does not
    verify, a signed ledger read without a key, an unsigned one read with a key (unless
    allowed), an unsupported schema, or invalid content.
    """


# ----------------------------------------------------------------------------------
# the key
# ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Key:
    """A resolved key; ``origin`` names where it came from for messages (never the key)."""

    secret: bytes = field(repr=False)
    origin: str


def resolve_key(key: bytes | str | None) -> bytes | None:
    """The key bytes of ``key``, else of ``DPACCT_LEDGER_KEY``, else None (unkeyed).

    Parameters
    ----------
    key : bytes, bytearray, str or None
        The secret key (a ``str`` is UTF-8 encoded); None reads the environment
        variable :data:`KEY_ENV` now, and means "no key" when it is unset.

    Returns
    -------
    bytes or None
        The key, at least :data:`MIN_KEY_BYTES` bytes long, or None.

    Raises
    ------
    TypeError
        ``key`` is not bytes, bytearray, str or None.
    ValueError
        The key (or the environment variable) is shorter than 16 bytes, empty, or a
        ``str`` that cannot be UTF-8 encoded.  Messages never contain the key.

    Examples
    --------
    >>> len(resolve_key("correct horse battery staple"))
    28
    >>> resolve_key(b"short")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: key must be at least 16 bytes long (got 5 bytes); ...
    """
    found = _resolve(key)
    return None if found is None else found.secret


def _resolve(key: Any) -> _Key | None:
    if key is None:
        value = os.environ.get(KEY_ENV)
        if value is None:
            return None
        name = f"the environment variable {KEY_ENV}"
        if not value:
            raise ValueError(
                f"{name} is set but empty: set it to a key of at least {MIN_KEY_BYTES} "
                "bytes, or unset it to save and load unsigned ledgers"
            )
        key = value
    else:
        name = "key"
    if isinstance(key, str):
        try:
            secret = key.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{name} must be a str that can be UTF-8 encoded") from None
    elif isinstance(key, bytes | bytearray):
        secret = bytes(key)
    else:
        raise TypeError(f"key must be bytes or str (or None), got {type(key).__name__}")
    if len(secret) < MIN_KEY_BYTES:
        raise ValueError(
            f"{name} must be at least {MIN_KEY_BYTES} bytes long (got {len(secret)} "
            "bytes); use a random key, e.g. secrets.token_hex(32)"
        )
    return _Key(secret, "the key= argument" if name == "key" else name)


def _hmac_of(payload: Mapping[str, Any], secret: bytes) -> str:
    text = canonical_json(payload).encode("ascii")
    return _HMAC + hmac.new(secret, text, hashlib.sha256).hexdigest()


# ----------------------------------------------------------------------------------
# seal and unseal
# ----------------------------------------------------------------------------------


def seal(payload: Mapping[str, Any], *, key: bytes | str | None = None) -> dict[str, Any]:
    """``payload`` with its schema version and seal: a signature with a key, else a checksum.

    Parameters
    ----------
    payload : mapping
        The ledger's content fields (``format``, ``budget``, ``tol``, ``entries`` and
        optionally ``options``), JSON-ready; a ``schema_version`` in it is replaced.
    key : bytes, str or None
        The signing key; None reads :data:`KEY_ENV`, and without it the result carries
        an unkeyed ``"checksum"`` (schema 1).

    Returns
    -------
    dict
        Schema 2 with ``"signature": "hmac-sha256:<hex>"`` when keyed; schema 1 with
        ``"checksum": "sha256:<hex>"`` otherwise.

    Examples
    --------
    >>> seal({"format": FORMAT, "budget": None, "tol": None, "entries": []})["checksum"][:7]
    'sha256:'
    """
    found = _resolve(key)
    out = {k: v for k, v in payload.items() if k not in ("checksum", "signature")}
    if found is None:
        out["schema_version"] = UNSIGNED_SCHEMA_VERSION
        out["checksum"] = sha256_of(out)
    else:
        out["schema_version"] = SCHEMA_VERSION
        out["signature"] = _hmac_of(out, found.secret)
    return out


# long function: 34 lines are the docstring; the body checks each field of the file in the
# order it is read, one named error per field
def unseal(
    data: Any,
    *,
    key: bytes | str | None = None,
    allow_unsigned: bool = False,
    source: str = "ledger data",
) -> dict[str, Any]:
    """Verify a saved ledger's format, schema and seal; return its content fields.

    Parameters
    ----------
    data : Any
        The parsed JSON of a saved ledger.
    key : bytes, str or None
        The verification key; None reads :data:`KEY_ENV` (no key when unset).
    allow_unsigned : bool
        With a key, also accept a ledger that carries only an unkeyed checksum (which is
        still verified).  Default False: with a key, an unsigned ledger is refused.
    source : str
        Where the data came from, for messages.

    Returns
    -------
    dict
        The content fields (everything but the seal), checked for layout.

    Raises
    ------
    LedgerFileError
        Not a ledger, an unsupported schema, a broken checksum or signature, a signed
        ledger without a key, an unsigned ledger with a key (unless allowed), or an
        unexpected layout.
    TypeError, ValueError
        A bad ``key`` or ``allow_unsigned`` (see :func:`resolve_key`).

    Examples
    --------
    >>> sealed = seal({"format": FORMAT, "budget": None, "tol": None, "entries": []})
    >>> unseal(sealed)["schema_version"]
    1
    """
    if not isinstance(allow_unsigned, bool):
        raise TypeError(
            f"allow_unsigned must be True or False, got {type(allow_unsigned).__name__}"
        )
    found = _resolve(key)

    def fail(msg: str) -> LedgerFileError:
        return LedgerFileError(f"{source}: {msg}")

    if not isinstance(data, Mapping):
        raise fail(f"expected a JSON object, got {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise fail(f"not a dpacct privacy ledger (format tag {data.get('format')!r})")
    version = data.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise fail(f"schema_version must be an integer, got {version!r}")
    if version not in (UNSIGNED_SCHEMA_VERSION, SCHEMA_VERSION):
        newer = " (written by a newer dpacct?)" if version > SCHEMA_VERSION else ""
        raise fail(
            f"unsupported schema_version {version}{newer}; this version reads "
            f"{UNSIGNED_SCHEMA_VERSION} (unkeyed) and {SCHEMA_VERSION} (signed)"
        )
    if "signature" in data and "checksum" in data:
        raise fail("unexpected layout: both a checksum and a signature")
    payload = {k: v for k, v in data.items() if k not in ("checksum", "signature")}
    try:
        canonical_json(payload)
    except (TypeError, ValueError) as exc:
        raise fail(f"content cannot be canonicalised: {exc}") from exc

    if "signature" in data:
        signature = data["signature"]
        if not isinstance(signature, str) or not signature.startswith(_HMAC):
            kind = signature.split(":")[0] if isinstance(signature, str) else signature
            raise fail(f"unsupported signature kind {kind!r}; this version reads 'hmac-sha256'")
        if found is None:
            raise fail(
                "the ledger is signed (hmac-sha256) and a key is needed to verify it: "
                f"pass key= or set the environment variable {KEY_ENV}; refusing to load "
                "it unverified"
            )
        expected = _hmac_of(payload, found.secret)
        if not hmac.compare_digest(signature.encode("utf-8"), expected.encode("ascii")):
            raise fail(
                f"signature mismatch: the ledger was not signed with this key (from "
                f"{found.origin}), or it was modified after it was signed; refusing to "
                "trust the recorded budget"
            )
        if version != SCHEMA_VERSION:
            raise fail(f"a signed ledger must have schema_version {SCHEMA_VERSION}")
    else:
        if found is not None and not allow_unsigned:
            carries = (
                "only an unkeyed sha256 checksum, which anyone can recompute without the "
                "key (an edited ledger re-sealed that way would pass)"
                if "checksum" in data
                else "no seal at all (a signature may have been stripped)"
            )
            raise fail(
                f"the ledger is not signed with the key (from {found.origin}): it carries "
                f"{carries}; refusing it (pass allow_unsigned=True to load an unsigned "
                "ledger on purpose)"
            )
        checksum = data.get("checksum")
        if not isinstance(checksum, str):
            raise fail("missing checksum")
        if not hmac.compare_digest(checksum.encode("utf-8"), sha256_of(payload).encode()):
            raise fail(
                "checksum mismatch: the content was modified after it was saved "
                "(edited by hand or corrupted); refusing to trust the recorded budget"
            )
        if version != UNSIGNED_SCHEMA_VERSION:
            raise fail(
                f"schema_version {version} ledgers are signed, but this one carries only a checksum"
            )
    expected_keys = set(_CONTENT_KEYS) | ({"options"} if "options" in payload else set())
    if set(payload) != expected_keys:
        extra = sorted(set(payload) - expected_keys)
        missing = sorted(expected_keys - set(payload))
        raise fail(f"unexpected layout (extra keys {extra}, missing keys {missing})")
    return payload


# ----------------------------------------------------------------------------------
# content
# ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LedgerContent:
    """The validated content of a ledger: constructor arguments and entries.

    Parameters
    ----------
    kwargs : dict
        ``budget_epsilon``, ``budget_delta``, ``tol`` and the saved options, for the
        :class:`~dpacct.accountant.ledger.PrivacyAccountant` constructor (which
        validates their values).
    entries : list of (Mechanism, int)
        The recorded mechanisms with their counts (>= 1), decoded.
    """

    kwargs: dict[str, Any]
    entries: list[tuple[Mechanism, int]]


def parse_content(payload: Mapping[str, Any], *, source: str = "ledger data") -> LedgerContent:
    """Check the types of an unsealed ledger's fields and decode its mechanisms.

    Parameters
    ----------
    payload : mapping
        The output of :func:`unseal`.
    source : str
        Where the data came from, for messages.

    Returns
    -------
    LedgerContent
        The constructor arguments and the decoded entries.

    Raises
    ------
    LedgerFileError
        A malformed budget or options, or invalid entries (negative or non-integer
        counts, unknown mechanism types, bad parameters).

    Examples
    --------
    >>> content = parse_content({"budget": {"epsilon": 1.0, "delta": 1e-5}, "tol": None,
    ...     "entries": [{"mechanism": {"type": "gaussian", "params": {"sigma": 2.0}},
    ...                  "count": 3}]})
    >>> content.entries
    [(GaussianMechanism(sigma=2.0), 3)]
    """

    def fail(msg: str) -> LedgerFileError:
        return LedgerFileError(f"{source}: {msg}")

    kwargs: dict[str, Any] = {"tol": payload["tol"]}
    budget = payload["budget"]
    if budget is not None:
        if not isinstance(budget, Mapping) or set(budget) != {"epsilon", "delta"}:
            raise fail("invalid budget or tol: budget must be null or {'epsilon': e, 'delta': d}")
        kwargs.update(budget_epsilon=budget["epsilon"], budget_delta=budget["delta"])
    if "options" in payload:
        options = payload["options"]
        if not isinstance(options, Mapping) or not options or not set(options) <= _OPTION_KEYS:
            raise fail(
                "invalid budget or tol: options must be a non-empty object with keys among "
                f"{sorted(_OPTION_KEYS)}"
            )
        if "adaptive" in options and not (
            options["adaptive"] is True or options["adaptive"] in _ADAPTIVE_NAMES
        ):
            raise fail(
                "invalid budget or tol: options.adaptive must be true or one of "
                f"{sorted(_ADAPTIVE_NAMES)} when present"
            )
        options = dict(options)
        weights = options.pop("renyi_weights", None)
        if weights is not None and (options.get("adaptive") != "renyi_orders" or weights != 2):
            raise fail(
                "invalid budget or tol: options.renyi_weights must be 2, and only with "
                "adaptive 'renyi_orders'"
            )
        if options.get("adaptive") == "renyi_orders" and weights is None:
            # saved before renyi_orders' weights were chosen per first record: those
            # weights are renyi_orders_wide's, and a run keeps its weights throughout
            options["adaptive"] = "renyi_orders_wide"
        for name in ("grid", "adaptive_order"):
            value = options.get(name, 0.0)
            if name == "adaptive_order" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise fail(f"invalid budget or tol: options.{name} must be a number")
        kwargs.update(options)
    entries = payload["entries"]
    if not isinstance(entries, list):
        raise fail("entries must be a list")
    out: list[tuple[Mechanism, int]] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping) or set(entry) != {"mechanism", "count"}:
            raise fail(f"entries[{i}] must be an object with keys 'mechanism' and 'count'")
        count = entry["count"]
        if isinstance(count, bool) or not isinstance(count, int):
            raise fail(f"entries[{i}].count must be an integer >= 1, got {count!r}")
        if count < 1:
            raise fail(f"entries[{i}].count must be an integer >= 1, got {count}")
        try:
            mech = from_dict(entry["mechanism"])
        except (TypeError, ValueError) as exc:
            raise fail(f"entries[{i}].mechanism: {exc}") from exc
        out.append((mech, count))
    return LedgerContent(kwargs, out)


# ----------------------------------------------------------------------------------
# files
# ----------------------------------------------------------------------------------


def write_atomic(path: str | os.PathLike[str], data: Any) -> None:
    """Write ``data`` as indented JSON to ``path``, atomically.

    The text goes to a temporary file in the same directory, which is flushed and
    ``fsync``-ed, then renamed over ``path`` with ``os.replace`` (and the directory
    ``fsync``-ed): a crash at any moment leaves either the previous file or the new one,
    never a mix.  The permissions of a replaced file are kept.

    Parameters
    ----------
    path : str or os.PathLike
        The target file.
    data : Any
        JSON-ready data (NaN and infinity refused).

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     write_atomic(os.path.join(tmp, "x.json"), {"a": 1})
    ...     read_json(os.path.join(tmp, "x.json"))
    {'a': 1}
    """
    target = os.fspath(path)
    text = json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"
    directory = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(
        prefix="." + os.path.basename(target) + ".", suffix=".tmp", dir=directory
    )
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        with contextlib.suppress(OSError):  # keep the permissions of the file replaced
            os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_directory(directory)


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read and parse the JSON at ``path``, refusing what is not a complete JSON text.

    Empty, non-UTF-8, truncated and non-finite content raise a :class:`LedgerFileError`.

    Parameters
    ----------
    path : str or os.PathLike
        The file to read.

    Returns
    -------
    Any
        The parsed JSON.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    LedgerFileError
        The file is empty, not UTF-8, not valid JSON, or holds NaN or infinity.

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     with open(os.path.join(tmp, "x.json"), "w") as fh:
    ...         _ = fh.write('{"a": ')
    ...     read_json(os.path.join(tmp, "x.json"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dpacct.accountant.ledger.ledger_file.LedgerFileError: ...: not valid JSON ...
    """
    source = os.fspath(path)
    with open(source, "rb") as fh:
        raw = fh.read()
    if not raw.strip():
        raise LedgerFileError(f"{source}: the file is empty (an interrupted write?)")
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError as exc:
        raise LedgerFileError(f"{source}: not UTF-8 text; the file is corrupt") from exc
    except json.JSONDecodeError as exc:
        raise LedgerFileError(
            f"{source}: not valid JSON ({exc.msg} at line {exc.lineno}, column "
            f"{exc.colno}); the file is corrupt or truncated"
        ) from exc
    except ValueError as exc:
        raise LedgerFileError(f"{source}: {exc}") from exc


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name} in the file; the file is corrupt")


def _fsync_directory(directory: str) -> None:
    """Persist the rename itself (POSIX); a no-op where directories cannot be opened."""
    flags = getattr(os, "O_DIRECTORY", None)
    if flags is None:  # pragma: no cover - Windows
        return
    try:
        fd = os.open(directory, os.O_RDONLY | flags)
    except OSError:  # pragma: no cover
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)
