"""Saving and loading a :class:`~dpacct.accountant.ledger.PrivacyAccountant`.

The methods :meth:`to_dict`, :meth:`from_dict`, :meth:`save` and :meth:`load` that
:class:`~dpacct.accountant.ledger.PrivacyAccountant` inherits: they turn the ledger's
records and filter settings into the payload of :mod:`dpacct.accountant.ledger.ledger_file`
(schema, seal, atomic write, validated read) and back.  Mechanisms are written through
the explicit registry of :mod:`dpacct.accountant.serialization`; nothing is pickled.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Self

from ..pld.schedule import DEFAULT_GRID
from ..serialization import to_dict
from .adaptive_filters import RenyiOrdersFilter
from .filters import RenyiFilter
from .ledger_file import (
    FORMAT,
    LedgerFileError,
    parse_content,
    read_json,
    seal,
    unseal,
    write_atomic,
)
from .records import Entry

__all__ = ["LedgerFileMethods"]


class LedgerFileMethods:
    """Saving and loading, for :class:`~dpacct.accountant.ledger.PrivacyAccountant`."""

    def to_dict(self, *, key: bytes | str | None = None) -> dict[str, Any]:
        """The ledger as JSON-ready data, with schema version and seal.

        Parameters
        ----------
        key : bytes, str or None
            A secret of at least 16 bytes: the data is signed with HMAC-SHA256
            (``"signature"``, schema 2).  None reads the environment variable
            ``DPACCT_LEDGER_KEY``; without either, an unkeyed ``"checksum"`` (schema 1).
            See :mod:`dpacct.accountant.ledger.ledger_file` for the format and threat model.

        Returns
        -------
        dict
            The ledger's fields and its seal (``"checksum"`` or ``"signature"``).

        Raises
        ------
        TypeError
            A recorded mechanism's class is not registered in
            :mod:`dpacct.accountant.serialization`, or ``key`` is not bytes or str.
        ValueError
            ``key`` is shorter than 16 bytes.
        """
        payload: dict[str, Any] = {
            "format": FORMAT,
            "budget": None
            if self._budget is None
            else {"epsilon": self._budget[0], "delta": self._budget[1]},
            "tol": self._tol,
            "entries": [
                {"mechanism": to_dict(e.mechanism), "count": int(e.count)}
                for e in self._records.entries
            ],
        }
        options = self._options()
        if options:
            payload["options"] = options
        return seal(payload, key=key)

    def _options(self) -> dict[str, Any]:
        """Non-default settings that change what the ledger certifies (saved with it)."""
        options: dict[str, Any] = {}
        if self._grid != DEFAULT_GRID:
            options["grid"] = self._grid
        if self._filter is not None:
            options.update(self._filter.options())
        return options

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        *,
        source: str = "ledger data",
        key: bytes | str | None = None,
        allow_unsigned: bool = False,
    ) -> Self:
        """Rebuild a ledger from :meth:`to_dict` output, verifying everything.

        Parameters
        ----------
        data : mapping
            The output of :meth:`to_dict` (or the parsed JSON of a saved file).
        source : str
            Where the data came from, for messages.
        key : bytes, str or None
            The key the ledger was signed with; None reads ``DPACCT_LEDGER_KEY``.
        allow_unsigned : bool
            With a key, also accept a ledger sealed only by an unkeyed checksum.
            See :meth:`load` for the rules.

        Returns
        -------
        PrivacyAccountant
            The restored ledger (its filter state rebuilt from the entries).

        Raises
        ------
        LedgerFileError
            Wrong format or schema version, checksum or signature mismatch, a signed
            ledger without a key, an unsigned one with a key, invalid entries
            (negative or non-integer counts, unknown mechanism types, bad parameters).
        """
        payload = unseal(data, key=key, allow_unsigned=allow_unsigned, source=source)
        content = parse_content(payload, source=source)
        try:
            acct = cls(**content.kwargs)
        except (TypeError, ValueError) as exc:
            raise LedgerFileError(f"{source}: invalid budget or tol: {exc}") from exc
        filt = acct._filter
        if (
            isinstance(filt, RenyiFilter | RenyiOrdersFilter)
            and filt.order is None
            and content.entries
        ):
            raise LedgerFileError(
                f"{source}: an adaptive filter with records must state its adaptive_order"
            )
        for i, (mech, count) in enumerate(content.entries):
            # restored verbatim: the budget was checked when the entries were recorded
            entry = Entry.of(mech, count)
            acct._records.restore(entry)
            if filt is not None:
                acct._history.restore(entry)  # type: ignore[union-attr]
                try:
                    filt.restore(entry)
                except ValueError as exc:
                    raise LedgerFileError(f"{source}: entries[{i}].mechanism: {exc}") from exc
        return acct

    def save(self, path: str | os.PathLike[str], *, key: bytes | str | None = None) -> None:
        """Write the ledger to ``path`` as JSON, atomically, checksummed or signed.

        The content goes to a temporary file in the same directory, which is flushed
        and ``fsync``-ed, then renamed over ``path`` with ``os.replace``: a crash at any
        moment leaves either the previous file or the new one, never a mix.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write; an existing file is replaced (keeping its permissions).
        key : bytes, str or None
            A secret of at least 16 bytes (e.g. ``secrets.token_bytes(32)``): the file
            is signed with HMAC-SHA256.  None reads the environment variable
            ``DPACCT_LEDGER_KEY`` now; without either, the file carries an unkeyed
            SHA-256 checksum.  The key is never written to the file.

        Raises
        ------
        TypeError
            An unregistered mechanism in the ledger, or ``key`` not bytes or str.
        ValueError
            ``key`` (or ``DPACCT_LEDGER_KEY``) shorter than 16 bytes.

        Notes
        -----
        Threat model.  Unkeyed, the checksum detects corruption, truncation and careless
        edits, but anyone can edit the file and recompute it.  Keyed, nobody without the
        key can change the file so that it verifies.  Neither protects against someone
        who holds the key, deleting the file, or replacing it with an older file signed
        with the same key (a rollback: the file carries no counter or timestamp).  See
        the user guide page "Ledger files".

        Examples
        --------
        >>> import os, secrets, tempfile
        >>> from dpacct.accountant import PrivacyAccountant
        >>> acct = PrivacyAccountant()
        >>> acct.step(noise_multiplier=1.0, sample_rate=0.01, count=500)
        >>> key = secrets.token_bytes(32)
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = os.path.join(tmp, "ledger.json")
        ...     acct.save(path, key=key)
        ...     restored = PrivacyAccountant.load(path, key=key)
        >>> restored.entries == acct.entries
        True
        """
        write_atomic(path, self.to_dict(key=key))

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        key: bytes | str | None = None,
        allow_unsigned: bool = False,
    ) -> Self:
        """Read a ledger written by :meth:`save`, verifying its checksum or signature.

        Parameters
        ----------
        path : str or os.PathLike
            The file to read.
        key : bytes, str or None
            The key the ledger was signed with.  None reads the environment variable
            ``DPACCT_LEDGER_KEY`` now; an explicit key wins over it.
        allow_unsigned : bool
            With a key, also accept a file that carries only an unkeyed checksum (still
            verified).  Default False.

        Returns
        -------
        PrivacyAccountant
            The ledger with its entries, budget and options (the filter's certificate
            is not saved: the next check recomputes it).

        Raises
        ------
        FileNotFoundError
            No file at ``path``.
        LedgerFileError
            The file is empty, truncated, not JSON, of another format or schema
            version, fails its checksum or signature, is signed but no key was given,
            is unsigned but a key was given, or holds invalid entries.
        TypeError, ValueError
            A bad ``key`` (wrong type, shorter than 16 bytes) or ``allow_unsigned``.

        Notes
        -----
        The rules: a signed file loads only with the key that signed it; without any
        key it is refused (never loaded unverified).  With a key, an unsigned file is
        refused unless ``allow_unsigned=True``: someone without the key who edits a
        signed ledger can only re-seal it with an unkeyed checksum or strip the seal,
        and must not thereby downgrade it.  Without a key, an unsigned file loads once
        its checksum verifies (corruption detection only: anyone can recompute a
        checksum).  The threat model is in :meth:`save`.

        Examples
        --------
        >>> import os, secrets, tempfile
        >>> from dpacct.accountant import PrivacyAccountant
        >>> acct = PrivacyAccountant()
        >>> acct.step(noise_multiplier=1.0, sample_rate=1.0, count=3)
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = os.path.join(tmp, "ledger.json")
        ...     acct.save(path, key=secrets.token_bytes(32))
        ...     PrivacyAccountant.load(path, key=secrets.token_bytes(32))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        dpacct.accountant.ledger.ledger_file.LedgerFileError: ...: signature mismatch: ...
        """
        source = os.fspath(path)
        return cls.from_dict(
            read_json(source), source=source, key=key, allow_unsigned=allow_unsigned
        )
