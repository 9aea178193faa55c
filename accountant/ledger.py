"""The online privacy accountant: a ledger that a training loop feeds.

:class:`PrivacyAccountant` records what was run -- DP-SGD steps through :meth:`step`,
any mechanism through :meth:`record` -- and answers, at any moment, the epsilon spent
so far.  Identical consecutive entries merge into one entry with a count, so a million
steps at one noise multiplier are a single ``(mechanism, 1_000_000)`` entry, and a query
costs what composing a handful of mechanisms costs, not a loop over steps.

With a declared budget the accountant is a *privacy filter*: a step or record that
would take epsilon (at the budget's delta) above the budget raises
:class:`BudgetExceededError` and leaves the ledger unchanged.  To keep a training loop
fast, an accepted check certifies the budget for a geometrically growing number of
further identical steps ahead (one accountant evaluation covers many steps: adding
mechanisms never lowers epsilon, so if ``ledger + k steps`` fits, every prefix fits).

The ledger saves to and loads from JSON (:meth:`~PrivacyAccountant.save`,
:meth:`~PrivacyAccountant.load`): the write is atomic (temporary file in the same
directory, ``fsync``, ``os.replace``), the file carries a schema version and a SHA-256
checksum of its canonical content, and loading rejects corrupt, truncated or edited
files with a :class:`LedgerFileError`.  Mechanisms are written through the explicit
registry of :mod:`dpacct.accountant.serialization`; nothing is pickled.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._validation import check_count, check_delta, check_epsilon, check_positive, check_sample_rate
from .compose import compose
from .mechanism import Mechanism
from .serialization import from_dict, sha256_of, to_dict
from .subsample import poisson_subsample

__all__ = [
    "FORMAT",
    "SCHEMA_VERSION",
    "BudgetExceededError",
    "LedgerFileError",
    "PrivacyAccountant",
]

#: the ``"format"`` tag of a saved ledger
FORMAT = "dpacct.privacy_ledger"
#: version of the saved layout; bumped on any incompatible change
SCHEMA_VERSION = 1


class BudgetExceededError(RuntimeError):
    """A step or record refused by a privacy filter; the ledger is unchanged.

    Attributes
    ----------
    epsilon : float
        Epsilon (at the budget's delta) the ledger would have reached.
    budget_epsilon, budget_delta : float
        The declared budget.
    """

    def __init__(self, message: str, *, epsilon: float, budget_epsilon: float, budget_delta: float):
        super().__init__(message)
        self.epsilon = epsilon
        self.budget_epsilon = budget_epsilon
        self.budget_delta = budget_delta


class LedgerFileError(ValueError):
    """A saved ledger that cannot be trusted: corrupt, truncated, edited or incompatible."""


@dataclass
class _Credit:
    """Filter certificate: ``remaining`` more records of ``mechanism`` fit the budget.

    ``epsilon`` is the accountant's bound for the ledger with all of them recorded, an
    upper bound (at the budget's delta) for every ledger state up to there.
    """

    mechanism: Mechanism
    remaining: int
    epsilon: float
    version: int


class PrivacyAccountant:
    """A ledger of the mechanisms a training job ran, answering the epsilon spent so far.

    Parameters
    ----------
    budget_epsilon : float, optional
        With ``budget_delta``: a privacy filter that refuses whatever would take
        epsilon at ``budget_delta`` above ``budget_epsilon`` (>= 0).
    budget_delta : float, optional
        The delta of the budget, in (0, 1).
    tol : float, optional
        Accuracy passed to the engine's ``epsilon(delta, tol=)``; default the engine's.

    Examples
    --------
    >>> acct = PrivacyAccountant()
    >>> acct.step(noise_multiplier=1.1, sample_rate=256 / 60_000, count=14_063)
    >>> eps = acct.epsilon(delta=1e-5)
    >>> bool(2.0 < eps < 2.6)
    True
    >>> for _ in range(1000):          # one call per training step: still one entry
    ...     acct.step(noise_multiplier=1.1, sample_rate=256 / 60_000)
    >>> acct.steps, len(acct.entries)
    (15063, 1)

    A privacy filter:

    >>> filt = PrivacyAccountant(budget_epsilon=1.0, budget_delta=1e-5)
    >>> filt.step(noise_multiplier=10.0, count=7)
    >>> filt.step(noise_multiplier=10.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dpacct.accountant.ledger.BudgetExceededError: budget exceeded: ...
    >>> filt.steps
    7
    """

    def __init__(
        self,
        *,
        budget_epsilon: float | None = None,
        budget_delta: float | None = None,
        tol: float | None = None,
    ) -> None:
        if (budget_epsilon is None) != (budget_delta is None):
            raise ValueError(
                "a budget needs both budget_epsilon and budget_delta "
                f"(got budget_epsilon={budget_epsilon!r}, budget_delta={budget_delta!r})"
            )
        self._budget: tuple[float, float] | None = None
        if budget_epsilon is not None:
            self._budget = (
                check_epsilon(budget_epsilon, "budget_epsilon"),
                check_delta(budget_delta, "budget_delta"),
            )
        if tol is not None:
            from ._validation import check_tol

            tol = check_tol(tol)
        self._tol = tol
        self._entries: list[list[Any]] = []  # [mechanism, count]
        self._version = 0
        self._composed: tuple[int, Mechanism | None] = (-1, None)
        self._eps_cache: dict[tuple[int, float], float] = {}
        self._credit: _Credit | None = None
        self._lookahead = 1
        self._last_step: tuple[float, float, Mechanism] | None = None

    # ---------------------------------------------------------------- properties
    @property
    def entries(self) -> tuple[tuple[Mechanism, int], ...]:
        """The ledger: ``(mechanism, count)`` pairs in the order they were recorded."""
        return tuple((m, c) for m, c in self._entries)

    @property
    def steps(self) -> int:
        """Total number of records (the sum of the counts)."""
        return sum(c for _, c in self._entries)

    @property
    def budget(self) -> tuple[float, float] | None:
        """``(budget_epsilon, budget_delta)`` of a privacy filter, else None."""
        return self._budget

    @property
    def tol(self) -> float | None:
        """Accuracy passed to the engine (None: the engine's default)."""
        return self._tol

    def __repr__(self) -> str:
        budget = "" if self._budget is None else f", budget={self._budget}"
        return f"PrivacyAccountant(entries={len(self._entries)}, steps={self.steps}{budget})"

    # ------------------------------------------------------------------ feeding
    def step(self, *, noise_multiplier: float, sample_rate: float = 1.0, count: int = 1) -> None:
        """Record ``count`` DP-SGD steps: Poisson-subsampled Gaussian mechanisms.

        Parameters
        ----------
        noise_multiplier : float
            Noise standard deviation over the clipping norm, > 0.
        sample_rate : float
            Poisson sampling rate of the step, in (0, 1] (batch size over dataset size).
        count : int
            Number of identical steps, >= 1.

        Raises
        ------
        BudgetExceededError
            In filter mode, if the steps would exceed the budget (nothing recorded).
        """
        last = self._last_step
        if (
            last is not None
            and type(noise_multiplier) is float
            and type(sample_rate) is float
            and last[0] == noise_multiplier
            and last[1] == sample_rate
        ):
            mech = last[2]
        else:
            sigma = check_positive("noise_multiplier", noise_multiplier)
            q = check_sample_rate(sample_rate)
            from dpacct.mechanisms.gaussian import GaussianMechanism  # zoo: a layer above

            mech = poisson_subsample(GaussianMechanism(sigma=sigma), q)
            self._last_step = (sigma, q, mech)
        self.record(mech, count)

    def record(self, mechanism: Mechanism, count: int = 1) -> None:
        """Record ``count`` runs of ``mechanism`` (any :class:`Mechanism`).

        Raises
        ------
        TypeError
            ``mechanism`` is not a Mechanism or ``count`` is not an integer.
        ValueError
            ``count`` < 1, or ``mechanism`` uses a different neighbouring relation
            from the records already in the ledger.
        BudgetExceededError
            In filter mode, if the record would exceed the budget (nothing recorded).
        """
        if not isinstance(mechanism, Mechanism):
            raise TypeError(f"mechanism must be a Mechanism, got {type(mechanism).__name__}")
        count = check_count(count, "count")
        if self._entries and mechanism.neighbouring != self._entries[0][0].neighbouring:
            raise ValueError(
                f"mechanism is accounted under the {mechanism.neighbouring!r} neighbouring "
                f"relation but this ledger holds {self._entries[0][0].neighbouring!r} "
                "records; one ledger tracks one relation (nothing was recorded)"
            )
        if self._budget is not None:
            self._admit(mechanism, count)
        self._append(mechanism, count)

    def _append(self, mechanism: Mechanism, count: int) -> None:
        if self._entries and _same(self._entries[-1][0], mechanism):
            self._entries[-1][1] += count
        else:
            self._entries.append([mechanism, count])
        self._version += 1
        if self._credit is not None:
            if _same(self._credit.mechanism, mechanism) and self._credit.remaining >= count:
                self._credit.remaining -= count
                self._credit.version = self._version
            else:
                self._credit = None

    # ------------------------------------------------------------------ filter
    def _bound_with(self, mechanism: Mechanism, count: int) -> float:
        budget_delta = self._budget[1]  # type: ignore[index]
        mechs = [m for m, _ in self._entries] + [mechanism]
        counts = [c for _, c in self._entries] + [count]
        return float(compose(mechs, counts).epsilon(budget_delta, tol=self._tol))

    def _admit(self, mechanism: Mechanism, count: int) -> None:
        """Raise if recording ``count`` x ``mechanism`` would exceed the budget.

        Accepting grants a credit: the accountant checks ``ledger + k`` records with
        ``k >= count`` growing geometrically while checks succeed (and shrinking when
        one fails), so a long run of identical steps costs O(log steps) evaluations.
        """
        budget_eps, budget_delta = self._budget  # type: ignore[misc]
        credit = self._credit
        if (
            credit is not None
            and credit.version == self._version
            and _same(credit.mechanism, mechanism)
            and credit.remaining >= count
        ):
            return
        k = max(count, self._lookahead)
        while True:
            eps = self._bound_with(mechanism, k)
            if eps <= budget_eps:
                self._credit = _Credit(mechanism, k, eps, self._version)
                self._lookahead = min(2 * k, 1 << 40)
                return
            if k == count:
                break
            k = max(count, k // 4)
            self._lookahead = max(1, k)
        self._lookahead = 1
        spent = self.epsilon(budget_delta) if self._entries else 0.0
        raise BudgetExceededError(
            f"budget exceeded: recording {count} x {mechanism!r} would take epsilon to "
            f"{eps:.6g} > budget_epsilon={budget_eps:g} at delta={budget_delta:g} "
            f"(spent so far: {spent:.6g}); the ledger is unchanged",
            epsilon=eps,
            budget_epsilon=budget_eps,
            budget_delta=budget_delta,
        )

    # ------------------------------------------------------------------ queries
    def mechanism(self) -> Mechanism | None:
        """The composition of everything recorded so far (None when empty)."""
        version, mech = self._composed
        if version != self._version:
            mech = None
            if self._entries:
                mech = compose([m for m, _ in self._entries], [c for _, c in self._entries])
            self._composed = (self._version, mech)
        return mech

    def epsilon(self, delta: float) -> float:
        """Epsilon spent so far at ``delta``: a sound upper bound (0 for an empty ledger).

        In filter mode, for ``delta >= budget_delta`` the bound certified by the filter
        is used when smaller, so ``epsilon(budget_delta) <= budget_epsilon`` always.

        Examples
        --------
        >>> acct = PrivacyAccountant()
        >>> acct.epsilon(1e-5)
        0.0
        >>> acct.step(noise_multiplier=1.0, sample_rate=0.01)
        >>> bool(0 < acct.epsilon(1e-5) < 1)
        True
        """
        d = check_delta(delta)
        key = (self._version, d)
        if key in self._eps_cache:
            return self._eps_cache[key]
        mech = self.mechanism()
        eps = 0.0 if mech is None else float(mech.epsilon(d, tol=self._tol))
        credit = self._credit
        if (
            credit is not None
            and credit.version == self._version
            and self._budget is not None
            and d >= self._budget[1]
        ):
            eps = min(eps, credit.epsilon)
        if len(self._eps_cache) > 64:
            self._eps_cache.clear()
        self._eps_cache[key] = eps
        return eps

    def delta(self, epsilon: float) -> float:
        """Delta spent so far at ``epsilon``: a sound upper bound (0 when empty)."""
        e = check_epsilon(epsilon)
        mech = self.mechanism()
        return 0.0 if mech is None else float(mech.delta(e, tol=self._tol))

    def epsilon_bounds(self, delta: float) -> tuple[float, float]:
        """``(lower, upper)`` bracket of the true epsilon spent, as the engine gives it."""
        d = check_delta(delta)
        mech = self.mechanism()
        if mech is None:
            return (0.0, 0.0)
        return mech.epsilon_bounds(d, tol=self._tol)

    # ------------------------------------------------------------ serialisation
    def to_dict(self) -> dict[str, Any]:
        """The ledger as JSON-ready data, with schema version and checksum.

        Raises
        ------
        TypeError
            A recorded mechanism's class is not registered in
            :mod:`dpacct.accountant.serialization`.
        """
        payload: dict[str, Any] = {
            "format": FORMAT,
            "schema_version": SCHEMA_VERSION,
            "budget": None
            if self._budget is None
            else {"epsilon": self._budget[0], "delta": self._budget[1]},
            "tol": self._tol,
            "entries": [{"mechanism": to_dict(m), "count": int(c)} for m, c in self._entries],
        }
        payload["checksum"] = sha256_of(payload)
        return payload

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, source: str = "ledger data"
    ) -> PrivacyAccountant:
        """Rebuild a ledger from :meth:`to_dict` output, verifying everything.

        Raises
        ------
        LedgerFileError
            Wrong format or schema version, checksum mismatch, invalid entries
            (negative or non-integer counts, unknown mechanism types, bad parameters).
        """

        def fail(msg: str) -> LedgerFileError:
            return LedgerFileError(f"{source}: {msg}")

        if not isinstance(data, Mapping):
            raise fail(f"expected a JSON object, got {type(data).__name__}")
        if data.get("format") != FORMAT:
            raise fail(f"not a dpacct privacy ledger (format tag {data.get('format')!r})")
        version = data.get("schema_version")
        if isinstance(version, bool) or not isinstance(version, int):
            raise fail(f"schema_version must be an integer, got {version!r}")
        if version != SCHEMA_VERSION:
            newer = " (written by a newer dpacct?)" if version > SCHEMA_VERSION else ""
            raise fail(
                f"unsupported schema_version {version}{newer}; this version reads {SCHEMA_VERSION}"
            )
        checksum = data.get("checksum")
        if not isinstance(checksum, str):
            raise fail("missing checksum")
        payload = {k: v for k, v in data.items() if k != "checksum"}
        try:
            expected = sha256_of(payload)
        except (TypeError, ValueError) as exc:
            raise fail(f"content cannot be canonicalised: {exc}") from exc
        if checksum != expected:
            raise fail(
                "checksum mismatch: the content was modified after it was saved "
                "(edited by hand or corrupted); refusing to trust the recorded budget"
            )
        expected_keys = {"format", "schema_version", "budget", "tol", "entries"}
        if set(payload) != expected_keys:
            extra = sorted(set(payload) - expected_keys)
            missing = sorted(expected_keys - set(payload))
            raise fail(f"unexpected layout (extra keys {extra}, missing keys {missing})")
        budget = payload["budget"]
        kwargs: dict[str, Any] = {}
        try:
            if budget is not None:
                if not isinstance(budget, Mapping) or set(budget) != {"epsilon", "delta"}:
                    raise ValueError("budget must be null or {'epsilon': e, 'delta': d}")
                kwargs = {"budget_epsilon": budget["epsilon"], "budget_delta": budget["delta"]}
            acct = cls(tol=payload["tol"], **kwargs)
        except (TypeError, ValueError) as exc:
            raise fail(f"invalid budget or tol: {exc}") from exc
        entries = payload["entries"]
        if not isinstance(entries, list):
            raise fail("entries must be a list")
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
            # restored verbatim: the budget was checked when the entries were recorded
            acct._entries.append([mech, count])
        acct._version = 1 if acct._entries else 0
        return acct

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the ledger to ``path`` as JSON, atomically.

        The content goes to a temporary file in the same directory, which is flushed
        and ``fsync``-ed, then renamed over ``path`` with ``os.replace``: a crash at any
        moment leaves either the previous file or the new one, never a mix.

        Examples
        --------
        >>> import os, tempfile
        >>> acct = PrivacyAccountant()
        >>> acct.step(noise_multiplier=1.0, sample_rate=0.01, count=500)
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = os.path.join(tmp, "ledger.json")
        ...     acct.save(path)
        ...     restored = PrivacyAccountant.load(path)
        >>> restored.entries == acct.entries
        True
        """
        target = os.fspath(path)
        text = json.dumps(self.to_dict(), indent=2, sort_keys=True, allow_nan=False) + "\n"
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

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> PrivacyAccountant:
        """Read a ledger written by :meth:`save`.

        Raises
        ------
        FileNotFoundError
            No file at ``path``.
        LedgerFileError
            The file is empty, truncated, not JSON, of another format or schema
            version, fails its checksum, or holds invalid entries.
        """
        source = os.fspath(path)
        with open(source, "rb") as fh:
            raw = fh.read()
        if not raw.strip():
            raise LedgerFileError(f"{source}: the file is empty (an interrupted write?)")
        try:
            text = raw.decode("utf-8")
            data = json.loads(text, parse_constant=_reject_constant)
        except UnicodeDecodeError as exc:
            raise LedgerFileError(f"{source}: not UTF-8 text; the file is corrupt") from exc
        except json.JSONDecodeError as exc:
            raise LedgerFileError(
                f"{source}: not valid JSON ({exc.msg} at line {exc.lineno}, column "
                f"{exc.colno}); the file is corrupt or truncated"
            ) from exc
        except ValueError as exc:
            raise LedgerFileError(f"{source}: {exc}") from exc
        return cls.from_dict(data, source=source)


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name} in the file; the file is corrupt")


def _same(a: Mechanism, b: Mechanism) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:  # pragma: no cover - exotic __eq__
        return False


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
