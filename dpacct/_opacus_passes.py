"""Where the passes of a whole-pass Opacus run began: the epochs its accounting counts.

Shuffled, sequential and random-allocation batches are accounted per *pass* over the
data: a record is in at most one batch (``k`` for random allocation) of each pass.
Reading the passes off the history alone (every ``T`` consecutive batches one pass,
``T = len(data_loader)``) is wrong for a run resumed from a mid-pass checkpoint: the
restored loader starts a fresh pass, so the run's passes are shorter than ``T`` and
more numerous (preempted after every step, ``T`` steps are ``T`` one-batch passes,
and a record can be in all of them).  :class:`PassLog` records, for the steps the
watched loader fed (:mod:`dpacct._opacus_watch`), the batch offset at which each pass
began, saves it in the accountant's state and restores it; after a restore the next
step always begins a new pass.  :meth:`PassLog.starts` gives the pass starts the
accounting uses: the recorded ones, and wherever a stretch of batches without one is
longer than ``T``, a start every ``T`` batches (a pass holds at most ``T`` batches;
steps recorded without a watch, or a history saved without the log, are read as
consecutive whole passes, the old reading).  A checkpoint without the log whose
history is not a whole number of passes is refused on load: where it was cut cannot
be known.

Soundness: each pass is a fresh draw, independent of the others, and the steps run in
it are a post-processing of the whole pass (its other batches dropped), so counting
every pass begun as a whole epoch bounds the run from above; the passes run to their
end (``T`` batches) are whole epochs of the run, and the run's epsilon is at least
theirs (dropping the others is a post-processing), which gives the lower end.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpacct._opacus_allocation import RANDOM_ALLOCATION
from dpacct._opacus_data_path import SEQUENTIAL, SHUFFLE
from dpacct._opacus_watch import check_prints

__all__ = ["PassLog"]

#: schemes accounted per pass
WHOLE_PASS = frozenset({SHUFFLE, SEQUENTIAL, RANDOM_ALLOCATION})


class PassLog:
    """Batch offsets at which the passes of a whole-pass run began.

    Examples
    --------
    >>> log = PassLog()
    >>> w = object()                      # a watch; passes are told by (watch, pass id)
    >>> log.note(w, [1], 0); log.note(w, [1], 1); log.note(w, [2], 2)
    >>> log.load({"pass_starts": log.state()}, 3, 2)   # a restore: the next step is a new pass
    >>> log.note(w, [2], 3)
    >>> log.starts(4, 2).tolist()
    [0, 2, 3]
    """

    def __init__(self) -> None:
        self.recorded: list[int] = []
        self._last: tuple[int, int] | None = None  # (id of the watch, pass) of the last batch
        self.prints: dict[str, list[int | None]] | None = None  # restored pass_prints

    def note(self, watch: Any, passes: list[int], offset: int) -> None:
        """A step was recorded on batches of ``passes`` (one id per batch, in order),
        the first of them at batch ``offset`` of the history."""
        for i, p in enumerate(passes):
            key = (id(watch), int(p))
            if key != self._last:
                if not self.recorded or self.recorded[-1] < offset + i:
                    self.recorded.append(offset + i)
                self._last = key

    def state(self) -> list[int]:
        """The recorded pass starts (plain ints, for a checkpoint)."""
        return list(self.recorded)

    def load(self, state: Mapping[str, Any], total: int, steps_per_epoch: int | None) -> None:
        """Restore from a checkpoint whose history holds ``total`` batches.

        Raises
        ------
        ValueError
            ``pass_starts`` is not a strictly increasing list of integers in
            ``[0, total)``, or is empty while the history holds batches (the first batch
            begins a pass: a log saved with its history holds it, :meth:`saved`); or it
            is absent, the scheme is accounted per pass and ``total`` is not a whole
            number of passes (nothing is changed).
        """
        saved = state.get("pass_starts")
        if saved is None:
            t = steps_per_epoch
            if t is not None and total % t:
                raise ValueError(
                    f"the checkpoint's history holds {total} batches, not a whole number "
                    f"of passes of {t}, and no pass_starts: a run resumed mid-pass starts "
                    "a fresh pass, and where this one was cut cannot be known; resume from "
                    "a checkpoint saved at the end of an epoch (or saved by this version, "
                    "which records its passes)"
                )
            starts: list[int] = []
        else:
            arr = np.asarray(saved)
            if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
                raise ValueError(
                    f"state_dict['pass_starts'] must be a list of integers, got {saved!r}"
                )
            if arr.size == 0 and total > 0:
                # an empty log reads as consecutive whole passes, as an absent one does,
                # but would skip the whole-number check an absent one gets
                raise ValueError(
                    f"state_dict['pass_starts'] is empty, but the history holds {total} "
                    "batches and its first batch begins a pass: a log saved with a history "
                    "holds at least that start (0); remove the key to load a checkpoint "
                    "without a log (it must then hold a whole number of passes)"
                )
            arr = arr.astype(np.int64)
            if arr.size and (arr[0] < 0 or arr[-1] >= total or np.any(np.diff(arr) <= 0)):
                raise ValueError(
                    "state_dict['pass_starts'] must increase strictly within [0, "
                    f"{total}) (the history's batches), got {saved!r}"
                )
            starts = arr.tolist()
        self.recorded, self._last = starts, None

    def starts(self, total: int, steps_per_epoch: int) -> np.ndarray:
        """Pass starts of ``total`` batches: the recorded ones, and one every
        ``steps_per_epoch`` batches in any longer stretch without one."""
        t = int(steps_per_epoch)
        rec = [s for s in self.recorded if s < total]
        bounds = np.array([*sorted({0, *rec}), total], dtype=np.int64)
        lengths = np.diff(bounds)
        per = np.maximum(1, -(-lengths // t))  # passes in each stretch
        first = np.repeat(bounds[:-1], per)
        within = np.arange(int(per.sum())) - np.repeat(np.cumsum(per) - per, per)
        return first + t * within

    def epochs(self, total: int, steps_per_epoch: int) -> tuple[int, int]:
        """``(begun, whole)``: passes begun, and passes run to their end."""
        if total <= 0:
            return 0, 0
        s = self.starts(total, steps_per_epoch)
        lengths = np.diff(np.append(s, total))
        return int(s.size), int(np.count_nonzero(lengths == steps_per_epoch))

    # ------------------------------------------------ the accountant's three calls
    def note_step(self, watch: Any, path: Any, history: list[tuple[float, float, int]]) -> None:
        """The hook recorded a step (the last of ``history``) that ``watch`` checked."""
        passes = getattr(watch, "step_passes", None)
        if path is None or path.scheme not in WHOLE_PASS or not passes:
            return
        self.note(watch, passes, history_batches(path, history) - len(passes))

    def load_state(self, state: Mapping[str, Any], path: Any,
                   history: list[tuple[float, float, int]], watch: Any = None) -> None:
        """:meth:`load` for the accountant's restored ``history`` under ``path``, and
        the checkpoint's ``pass_prints`` (validated first) handed to ``watch``.

        A checkpoint without ``pass_prints`` (saved before this version) loads, but
        the repeated-pass check then cannot see a restored sampler repeat the passes
        run before the checkpoint (only the passes run after it are compared)."""
        prints = check_prints(state.get("pass_prints"), path)
        whole = path is not None and path.scheme in WHOLE_PASS
        total = history_batches(path, history) if whole else 0
        self.load(state if whole else {}, total, path.steps_per_epoch if whole else None)
        self.prints = prints
        if watch is not None:
            watch.seed(prints)

    def saved(
        self, watch: Any, path: Any = None, history: list[tuple[float, float, int]] | None = None
    ) -> dict[str, Any]:
        """``pass_starts`` and, where the scheme has the repeated-pass check,
        ``pass_prints`` (:meth:`BatchWatch.prints_state`; the restored ones while no
        loader is watched) for the accountant's ``state_dict``.

        A whole-pass ``history`` with batches but no recorded start (its steps recorded
        unwatched, or restored from a checkpoint without a log) saves the start ``[0]``
        its first batch begins, which :meth:`starts` reads as it reads ``[]``.
        """
        prints = self._seen(watch)
        starts = self.state()
        whole = path is not None and path.scheme in WHOLE_PASS and history is not None
        if not starts and whole and history_batches(path, history) > 0:
            starts = [0]
        out: dict[str, Any] = {"pass_starts": starts}
        if prints is not None:
            out["pass_prints"] = prints
        return out

    def rewatch(self, old: Any, new: Any) -> None:
        """A new ``watch`` replaces ``old``: it compares its passes with what ``old``
        (or the restored checkpoint) saw."""
        if new is not None:
            new.seed(self._seen(old))

    def _seen(self, watch: Any) -> dict[str, list[int | None]] | None:
        """``watch``'s fingerprints, or the restored ones if it saw no batch."""
        prints = None if watch is None else watch.prints_state()
        if prints is None or not any(v is not None for row in prints.values() for v in row):
            return self.prints if watch is None or watch.fresh else None
        return prints

    def of_run(self, path: Any, batches: np.ndarray) -> tuple[np.ndarray, int, int]:
        """``(starts, begun, whole)`` for steps of ``batches`` batches each."""
        total, t = int(np.sum(batches)), int(path.steps_per_epoch)
        begun, whole = self.epochs(total, t)
        return self.starts(total, t), begun, whole


def history_batches(path: Any, history: list[tuple[float, float, int]]) -> int:
    """Batches in ``history`` under a whole-pass ``path`` (a step's rate is its batches
    over ``steps_per_epoch``, as the accountant records it)."""
    t = path.steps_per_epoch
    return int(sum(max(1, math.ceil(q * t - 1e-9)) * n for _, q, n in history))
