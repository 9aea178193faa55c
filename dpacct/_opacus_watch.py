"""Watch what an Opacus run iterates: the batches of the accounted loader, against its scheme.

:class:`~dpacct.opacus.OpacusAccountant` identifies a data path from the loader that
``make_private`` returns (or one attached with ``attach_data_loader``).  Identification
alone is a promise about the *objects* seen at that moment; this module checks the
promise against what the run *draws*.  :func:`watch` replaces the loader's batch sampler
by a :class:`WatchedBatchSampler` that forwards every batch unchanged and tells a
:class:`BatchWatch` about it; the accountant's optimiser hook asks the watch, before a
step is recorded, whether the batches of that step came from the accounted loader and
kept the scheme's promise:

* every index lies in ``[0, len(dataset))``;
* Poisson and fixed-size batches hold no index twice; a fixed-size batch has exactly the
  identified size; a batch that repeats the one at its place in the first or the
  previous pass, where fresh draws would repeat it with probability below 1e-12, shows
  a sampler whose draws are not fresh (a generator reseeded every epoch); the same
  check runs on random-allocation passes, whose batch ``j`` holds each record with
  probability ``k / T`` independently of the others (the Poisson chance of a repeat);
* a shuffled or sequential pass draws each index at most once and at most
  ``len(data_loader)`` batches, and is not left early once a step used it (the
  accounting counts each record once per ``len(data_loader)`` consecutive batches);
* the batch sampler is still the identified one (same classes and sizes) when a pass
  starts;
* the optimiser steps only on batches the accounted loader drew (a loop over another
  loader -- the original one after ``make_private(poisson_sampling=True)``, or one
  swapped in afterwards -- draws nothing from it), and their sizes are those of the
  gradients Opacus holds.

A broken promise is kept (all later steps are refused too) and raised from inside
``optimizer.step()``, before the ledger records the step.  The counting is numpy per
batch (``np.add.at`` on a per-pass count of each index), a few microseconds a batch;
``benchmarks/opacus_watch.py`` measures it against a training step.

The watch follows one pass at a time: a second iterator over the accounted loader
opened while the first is still in use (an evaluation inside a training epoch) starts
a new pass, and the steps after it can be refused (the safe reading).  With
``num_workers > 0`` the loader draws batches ahead of the loop; the watch keeps
them in order (first drawn, first stepped on), so prefetching is accounted, but a pass
left early after its sampler was exhausted by prefetching is not seen as left early.

Across a checkpoint: the fingerprints the repeated-pass check compares with (the first
pass's and the latest batch at each place; one 64-bit :func:`fingerprint` per batch of
a pass, the same in every process) are saved in the accountant's ``state_dict`` as
``pass_prints`` (:meth:`BatchWatch.prints_state`) and restored into the watch
(:func:`check_prints`, :meth:`BatchWatch.seed`), so a job restarted with the seed the
run began with, which draws the first pass again, is refused.  A checkpoint saved
without them cannot show such a repeat of the passes before it.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
from scipy.special import gammaln

from dpacct._opacus_allocation import RANDOM_ALLOCATION
from dpacct._opacus_allocation import see_problem as allocation_see_problem
from dpacct._opacus_data_path import (
    FIXED_SIZE,
    POISSON,
    SEQUENTIAL,
    SHUFFLE,
    DataPath,
    UnaccountedSamplerError,
    batch_sizes,
)

__all__ = ["BatchWatch", "WatchedBatchSampler", "check_batches", "check_prints", "watch"]

_NOTHING = "nothing was recorded; the steps before it stay accounted"
#: a batch that repeats its place in an earlier pass is refused when fresh draws would
#: repeat it with a probability below this (a false refusal errs on the safe side)
_REPEAT_CHANCE = 1e-12


class BatchWatch:
    """Per-pass counts of the batches a watched loader draws, and the check of a step.

    Parameters
    ----------
    path : DataPath
        The identified scheme whose promise the batches must keep.
    dataset_size : int
        ``len(dataset)``: indices must lie in ``[0, dataset_size)``.
    signature : callable
        Maps the batch sampler to a tuple of what identification read (classes, sizes,
        rates); a pass whose sampler gives another tuple breaks the promise.
    replaced : bool, default False
        The loader is the one ``make_private(poisson_sampling=True)`` replaced: the run
        must not step on its batches (Opacus' Poisson loader is the one accounted).

    Examples
    --------
    >>> from dpacct._opacus_data_path import DataPath
    >>> w = BatchWatch(DataPath("shuffle", "RandomSampler", 2, 0.5, 2), 4, lambda s: ())
    >>> w.start(None); w.see([0, 1]); w.see([1, 3])
    >>> print(w.broken)
    index 1 drawn 2 times in one pass of the shuffled fixed-size batches (RandomSampler, \
batch size 2, 2 batches per epoch): each record must be in one batch per epoch
    """

    def __init__(
        self,
        path: DataPath,
        dataset_size: int,
        signature: Callable[[Any], tuple],
        replaced: bool = False,
    ) -> None:
        self.path = path
        self.replaced = replaced
        self.n = int(dataset_size)
        self.signature = signature
        self.expected: tuple | None = None
        self.broken: str | None = None
        self.pending: deque[tuple[int, int]] = deque()  # (pass, size) drawn, not stepped on
        self.passes = 0
        self.drawn = 0  # batches drawn in the current pass
        self.stepped_pass = -1  # the last pass a step used a batch of
        self.step_passes: list[int] = []  # the pass of each batch of the last step
        self.counts = np.zeros(self.n, dtype=np.int64)
        self.once = path.scheme in (SHUFFLE, SEQUENTIAL) and not path.assumed
        # random allocation: each record in at most k batches of a pass, and whole passes
        self.allocated = path.scheme == RANDOM_ALLOCATION
        # independent draws: each batch's fingerprint beside the batch at its place in
        # the first and in the previous pass (a sampler reseeded every epoch repeats them)
        # (random allocation too: batch j of a fresh allocation holds each record with
        # probability k / T independently of the others, so it repeats a given batch of
        # s records with probability (k/T)^s (1 - k/T)^(n - s), as a Poisson batch)
        self.fresh = path.scheme in (POISSON, FIXED_SIZE, RANDOM_ALLOCATION) and not path.assumed
        t = max(int(path.steps_per_epoch), 1) if self.fresh else 0
        self.prints = np.zeros((3, t), dtype=np.int64)  # first, previous, current pass
        self.printed = np.zeros((3, t), dtype=bool)
        self.seeded = False  # the first row came from a checkpoint (:meth:`seed`)

    # ------------------------------------------------------------ draw side
    def start(self, batch_sampler: Any) -> None:
        """A new pass over the loader begins (the batch sampler is iterated anew)."""
        if self.broken is not None:
            return
        sig = self.signature(batch_sampler)
        if self.expected is None:
            self.expected = sig
        elif sig != self.expected:
            self.broken = (
                f"the accounted loader's batch sampler changed after it was identified: "
                f"it was {_show(self.expected)}, it is now {_show(sig)}"
            )
            return
        whole = self.once or self.allocated
        if self.passes and whole and self.stepped_pass == self.passes:
            t = self.path.steps_per_epoch
            if self.drawn < t:
                self.broken = (
                    f"the loader was restarted after {self.drawn} of its {t} batches (an "
                    f"early break from an epoch of {self.path.describe()}): the accounting "
                    f"counts each record once per {t} consecutive batches, and the new pass "
                    "can repeat a record within them; iterate every epoch to its end, or "
                    "use Poisson sampling or FixedSizeBatchSampler, whose steps are "
                    "independent"
                )
                return
        if not self.once or self.stepped_pass != self.passes:
            # batches of the last pass no step will use: independent steps (Poisson,
            # fixed-size) never span two passes, and a pass no step used was a peek or
            # an evaluation; a shuffled pass's last batches can open the next step
            self.pending = deque(e for e in self.pending if e[0] != self.passes)
        if self.fresh and self.passes:
            if self.passes == 1 and not self.seeded:
                self.prints[0], self.printed[0] = self.prints[2], self.printed[2]
            self.prints[1], self.printed[1] = self.prints[2], self.printed[2]
            self.prints[2], self.printed[2] = 0, False
        self.passes += 1
        self.drawn = 0
        self.counts[:] = 0

    def see(self, batch: Any) -> None:
        """One batch drawn in the current pass: count it and check the promise.

        Three array operations on the batch in the common case (a range test, the
        counts before, ``np.add.at``); the counts after are read only to find a
        repeat, which the sums reveal: without one, the counts of the batch's indices
        rise by exactly its size.
        """
        idx = np.asarray(batch)
        size = int(idx.size)
        self.drawn += 1
        self.pending.append((self.passes, size))
        if self.broken is not None or size == 0 or self.replaced:
            return
        if idx.ndim != 1 or idx.dtype.kind not in "iu":
            self.broken = f"a batch of indices of shape {idx.shape} and dtype {idx.dtype}"
            return
        if idx.dtype != np.int64:
            idx = idx.astype(np.int64)
        if int(idx.view(np.uint64).max()) >= self.n:  # negatives wrap to huge values
            low, high = int(idx.min()), int(idx.max())
            self.broken = (
                f"index {low if low < 0 else high} drawn, outside the dataset of {self.n} "
                "records (a sampler over another index range): records are chosen "
                "otherwise than identified"
            )
            return
        before = self.counts[idx]
        np.add.at(self.counts, idx, 1)
        path = self.path
        if self.once:
            if before.any() or int(self.counts[idx].sum()) != size:
                after = self.counts[idx]
                i = int(idx[np.argmax(after)])
                self.broken = (
                    f"index {i} drawn {int(self.counts[i])} times in one pass of the "
                    f"{path.describe()}: each record must be in one batch per epoch"
                )
            elif self.drawn > path.steps_per_epoch:
                self.broken = (
                    f"{self.drawn} batches in one pass, but len(data_loader) was "
                    f"{path.steps_per_epoch} when identified ({path.describe()})"
                )
            elif size > (path.batch_size or size):
                self.broken = (
                    f"a batch of {size} records from {path.describe()}: the batch size "
                    "changed"
                )
            return
        if self.allocated:
            self.broken = allocation_see_problem(path, self.counts, idx, before, self.drawn)
            if self.broken is None and self.fresh and self.drawn <= self.prints.shape[1]:
                self.broken = self._repeat(idx, size)
            return
        if path.assumed:
            return
        if self.fresh and self.drawn <= self.prints.shape[1]:
            self.broken = self._repeat(idx, size)
            if self.broken is not None:
                return
        if path.scheme == FIXED_SIZE and size != path.batch_size:
            self.broken = (
                f"a batch of {size} records from {path.describe()}: a fixed-size "
                "batch of another size"
            )
        elif int((rise := self.counts[idx] - before).max()) > 1:
            i = int(idx[np.argmax(rise)])
            self.broken = f"index {i} drawn twice in one batch of {path.describe()}"

    def _repeat(self, idx: np.ndarray, size: int) -> str | None:
        """The batch repeats the one at its place in the first or the previous pass, and
        fresh draws of the scheme would repeat it with probability below
        :data:`_REPEAT_CHANCE`: the sampler's draws are not fresh (e.g. its generator,
        or torch's global one, reseeded every epoch), and accounting them as fresh
        steps would under-report (repeated draws of one batch are one step at less
        noise)."""
        j = self.drawn - 1
        fp = fingerprint(idx)
        self.prints[2, j], self.printed[2, j] = fp, True
        for row, which in ((0, "first"), (1, "previous")):
            if not (self.printed[row, j] and self.prints[row, j] == fp):
                continue
            path = self.path
            if path.scheme in (POISSON, RANDOM_ALLOCATION):  # independent k/T per record
                q = path.sample_rate
                log_chance = size * np.log(q) + (self.n - size) * np.log1p(-q) if q < 1 else 0.0
            else:  # a fixed-size batch: one of C(n, b) equally likely sets
                log_chance = -(
                    gammaln(self.n + 1) - gammaln(size + 1) - gammaln(self.n - size + 1)
                )
            if log_chance < np.log(_REPEAT_CHANCE):
                return (
                    f"batch {j + 1} of pass {self.passes} holds the same {size} records as "
                    f"batch {j + 1} of the {which} pass, which fresh draws of "
                    f"{path.describe()} repeat with probability {np.exp(log_chance):.1e}: "
                    "the sampler repeats its draws (a generator reseeded every epoch?), "
                    "and repeated batches are not independent steps; seed once, before "
                    "training"
                )
        return None

    # ------------------------------------------------------------ checkpoint side
    def prints_state(self) -> dict[str, list[int | None]] | None:
        """What the repeated-pass check compares against, for a checkpoint (None if
        the scheme has no such check): the fingerprints of the run's first pass and of
        its latest batch at each place (``None`` where no batch was seen), one 64-bit
        integer per batch of a pass."""
        if not self.fresh:
            return None
        first = 0 if self.seeded or self.passes > 1 else 2
        now = self.printed[2]
        latest = np.where(now, self.prints[2], self.prints[1])
        rows = (
            (self.prints[first], self.printed[first]),
            (latest, now | self.printed[1]),
        )
        first_row, latest_row = (
            [int(v) if ok else None for v, ok in zip(p, m, strict=True)] for p, m in rows
        )
        return {"first": first_row, "previous": latest_row}

    def seed(self, saved: Mapping[str, list[int | None]] | None) -> None:
        """Compare the coming passes with a checkpoint's :meth:`prints_state` as with
        the first and the previous pass of this run (validated by :func:`check_prints`):
        a sampler restored with the seed it started from repeats the first pass."""
        t = self.prints.shape[1]
        if saved is None or not self.fresh or len(saved["first"]) != t:
            return
        for row, key in ((0, "first"), (1, "previous")):
            ok = np.array([v is not None for v in saved[key]], dtype=bool)
            self.prints[row] = [0 if v is None else v for v in saved[key]]
            self.printed[row] = ok
        self.seeded = True

    # ------------------------------------------------------------ step side
    def check_step(self, optimizer: Any, k: int) -> None:
        """Refuse the step about to be recorded unless its batches kept the promise.

        Parameters
        ----------
        optimizer : opacus.optimizers.DPOptimizer
            The optimiser whose hook runs (its gradients' batch sizes are read).
        k : int
            Batches accumulated into this step (``optimizer.accumulated_iterations``).

        Raises
        ------
        UnaccountedSamplerError
            The run broke the identified scheme's promise (kept for every later step).
        """
        if self.broken is None:
            self.broken = self._step_problem(optimizer, k)
        if self.broken is not None:
            raise UnaccountedSamplerError(
                f"{self.broken}; the run no longer follows the data path it is accounted "
                f"for, so this step is refused ({_NOTHING})"
            )

    def _step_problem(self, optimizer: Any, k: int) -> str | None:
        if self.replaced:
            return self._replaced_problem(optimizer, k)
        if len(self.pending) < k:
            return (
                f"the optimizer stepped on {k} batch(es), but the accounted loader "
                f"({self.path.describe()}) drew {len(self.pending)} since the last step: "
                "the loop iterates a loader that is not the one accounted (the original "
                "loader after make_private, or one swapped in afterwards); iterate the "
                "loader make_private returned, or attach the new one with "
                "accountant.attach_data_loader"
            )
        drawn = [self.pending.popleft() for _ in range(k)]
        self.stepped_pass = drawn[-1][0]
        self.step_passes = [p for p, _ in drawn]  # the passes the step's batches came from
        sizes = batch_sizes(optimizer)
        if sizes is None or (self.path.scheme == POISSON and self.path.assumed):
            return None
        expect = [size for _, size in drawn]
        # BatchMemoryManager: the logical batch was split and only its last physical
        # part is still in grad_sample (the skipped parts were accumulated before)
        split = bool(getattr(optimizer, "_is_last_step_skipped", False))
        fits = (
            len(sizes) == 1 and sizes[0] <= expect[-1]
            if split
            else sizes == expect or _empty_poisson(sizes, expect)
        )
        if fits:
            return None
        return (
            f"the optimizer stepped on batches of {sizes} records, but the accounted "
            f"loader drew batches of {expect}: the step's batches did not come from "
            f"the loader accounted ({self.path.describe()})"
        )


    def _replaced_problem(self, optimizer: Any, k: int) -> str | None:
        """A step on batches of the loader Opacus replaced (its sizes are the step's)."""
        drawn = [size for _, size in self.pending][-k:]
        self.pending.clear()
        sizes = batch_sizes(optimizer)
        if len(drawn) < k or (sizes is not None and sizes != drawn):
            return None  # the step's batches came from elsewhere (Opacus' loader)
        return (
            f"the optimizer stepped on batches of {drawn} records drawn from the loader "
            "given to make_private(poisson_sampling=True), which Opacus replaced: the "
            f"run is accounted as {self.path.describe()}, but the loop iterates the "
            "original loader; iterate the loader make_private returned"
        )


def check_batches(path: DataPath | None, optimizer: Any, k: int) -> None:
    """Refuse a step whose accumulated batches do not fit the data path.

    Gradient accumulation over ``k > 1`` Poisson batches (a record can be in several)
    or over independently drawn fixed-size batches, and a batch larger than the
    loader's (a fixed-size batch of another size), raise ``ValueError``.

    Parameters
    ----------
    path : DataPath or None
        The identified data path (None: nothing to check).
    optimizer : opacus.optimizers.DPOptimizer
        Its per-sample gradients give the batch sizes.
    k : int
        Batches accumulated into the step.

    Examples
    --------
    >>> check_batches(DataPath("poisson", "UniformWithReplacementSampler", 10, 0.1), None, 1)
    """
    if path is not None and path.scheme == POISSON and not path.assumed and k > 1:
        raise ValueError(
            f"gradient accumulation over {k} Poisson batches: a record can be sampled "
            f"into several of them (up to {k} clipping norms in one step), which "
            "Poisson accounting at one rate does not cover; use Opacus' "
            "BatchMemoryManager, which splits one Poisson batch (nothing was recorded)"
        )
    if path is not None and path.scheme == RANDOM_ALLOCATION and k != 1:
        raise ValueError(
            f"gradient accumulation over {k} batches of a random-allocation sampler: a "
            "record can be in several of them, which the allocation accounting does not "
            "cover; take one batch per optimizer step (nothing was recorded)"
        )
    if path is None or path.scheme == POISSON or path.batch_size is None:
        return
    if path.scheme == FIXED_SIZE and k != 1:
        raise ValueError(
            f"gradient accumulation over {k} fixed-size batches drawn independently: "
            "a record can be in several of them, which the replace-one accounting of "
            "one batch does not cover; take one batch per optimizer step (nothing "
            "was recorded)"
        )
    sizes = batch_sizes(optimizer)
    if sizes is None:
        return
    b = path.batch_size
    bad = [n for n in sizes if (n != b if path.scheme == FIXED_SIZE else n > b)]
    if bad:
        raise ValueError(
            f"the batch size changed during training: a batch of {bad[0]} records, "
            f"but the data path is {path.describe()}, and its accounting holds for "
            "that loader only; keep the batch size, or account the new loader with a "
            "new accountant (nothing was recorded)"
        )


def fingerprint(idx: np.ndarray) -> int:
    """A batch's 64-bit fingerprint: the same set of indices gives the same signed
    integer in every process (a checkpoint holds it; Python's ``hash`` of bytes is
    salted per process).

    Examples
    --------
    >>> fingerprint(np.array([3, 1])) == fingerprint(np.array([1, 3]))
    True
    """
    data = np.sort(np.asarray(idx, dtype="<i8")).tobytes()
    digest = hashlib.blake2b(data, digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def check_prints(saved: object, path: DataPath | None) -> dict[str, list[int | None]] | None:
    """A checkpoint's ``pass_prints`` (:meth:`BatchWatch.prints_state`), validated.

    Parameters
    ----------
    saved : object
        ``state_dict.get("pass_prints")``; None (a checkpoint without it) gives None.
    path : DataPath or None
        The restored data path: its scheme must have the repeated-pass check (Poisson,
        fixed-size, random allocation, not assumed) and ``steps_per_epoch`` entries.

    Raises
    ------
    ValueError
        Not a mapping with exactly ``first`` and ``previous``, each a list of
        ``steps_per_epoch`` entries that are None or integers in the signed 64-bit
        range (a bool, a float or a string is refused); or a data path without
        the check.

    Examples
    --------
    >>> p = DataPath("poisson", "UniformWithReplacementSampler", 2, 0.5)
    >>> check_prints({"first": [7, None], "previous": [None, -3]}, p)
    {'first': [7, None], 'previous': [None, -3]}
    """
    if saved is None:
        return None
    fresh = (POISSON, FIXED_SIZE, RANDOM_ALLOCATION)
    if path is None or path.scheme not in fresh or path.assumed:
        shown = "no data path" if path is None else path.describe()
        raise ValueError(
            f"state_dict['pass_prints'] given for {shown}, which has no repeated-pass "
            "check: it cannot come from this accountant's state_dict"
        )
    t = int(path.steps_per_epoch)
    if not isinstance(saved, Mapping) or set(saved) != {"first", "previous"}:
        raise ValueError(
            "state_dict['pass_prints'] must be a mapping with keys 'first' and "
            f"'previous', got {saved!r:.200}"
        )
    out: dict[str, list[int | None]] = {}
    for key in ("first", "previous"):
        row = saved[key]
        bad = not isinstance(row, (list, tuple)) or len(row) != t or any(
            v is not None
            and (type(v) is bool or not isinstance(v, (int, np.integer))
                 or not -(2**63) <= int(v) < 2**63)
            for v in row
        )
        if bad:
            raise ValueError(
                f"state_dict['pass_prints'][{key!r}] must be a list of {t} entries "
                f"(one per batch of a pass), each None or a signed 64-bit integer, got "
                f"{row!r:.200}"
            )
        out[key] = [None if v is None else int(v) for v in row]
    return out


def _empty_poisson(sizes: list[int], expect: list[int]) -> bool:
    """Opacus fills an empty Poisson batch with one row (``rand_on_empty``)."""
    return len(sizes) == len(expect) and all(
        s == e or (e == 0 and s <= 1) for s, e in zip(sizes, expect, strict=True)
    )


def _show(sig: tuple) -> str:
    return ", ".join(str(part) for part in sig)


class WatchedBatchSampler:
    """A batch sampler that yields its inner sampler's batches and reports each to a watch.

    Attribute reads and writes other than its own go to the inner batch sampler, so
    ``loader.batch_sampler.sample_rate``, ``set_epoch`` and the like work as before.

    Parameters
    ----------
    inner : iterable of index lists
        The batch sampler identification read.
    watch : BatchWatch
        Told of every pass and batch.

    Examples
    --------
    >>> from dpacct._opacus_data_path import DataPath
    >>> w = BatchWatch(DataPath("sequential", "SequentialSampler", 2, 0.5, 2), 4, len)
    >>> s = WatchedBatchSampler([[0, 1], [2, 3]], w)
    >>> list(s), len(s), w.broken is None, len(w.pending)
    ([[0, 1], [2, 3]], 2, True, 2)
    """

    def __init__(self, inner: Any, watch: BatchWatch) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_watch", watch)

    def __iter__(self) -> Iterator[Any]:
        inner, watch = self._inner, self._watch
        watch.start(inner)
        for batch in inner:
            watch.see(batch)
            yield batch

    def __len__(self) -> int:
        return len(self._inner)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(object.__getattribute__(self, "_inner"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("_inner", "_watch"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._inner, name, value)


def watch(
    loader: Any, path: DataPath, signature: Callable[[Any], tuple], *, replaced: bool = False
) -> BatchWatch | None:
    """Watch ``loader``'s batches against ``path``; returns the watch (None if unwatchable).

    The loader's ``batch_sampler`` is replaced in place by a :class:`WatchedBatchSampler`
    (torch forbids the assignment after construction; the watch sets it beneath that
    guard, the loader's behaviour unchanged).  Watching an already watched loader
    replaces the old watch.

    Parameters
    ----------
    loader : torch.utils.data.DataLoader
        The loader the run iterates.
    path : DataPath
        Its identified scheme.
    signature : callable
        As for :class:`BatchWatch`.
    replaced : bool, default False
        As for :class:`BatchWatch`.
    """
    batch_sampler = getattr(loader, "batch_sampler", None)
    dataset = getattr(loader, "dataset", None)
    if batch_sampler is None or dataset is None or not hasattr(dataset, "__len__"):
        return None
    state = BatchWatch(path, len(dataset), signature, replaced)
    state.expected = signature(batch_sampler)  # as identified, before any pass
    if isinstance(batch_sampler, WatchedBatchSampler):
        batch_sampler._watch = state
    else:
        object.__setattr__(loader, "batch_sampler", WatchedBatchSampler(batch_sampler, state))
    return state
