"""The data path of an Opacus run: which sampler forms the batches, and what it costs.

:class:`~dpacct.opacus.OpacusAccountant` reads the data loader that
``PrivacyEngine.make_private`` (or ``make_private_with_epsilon``) was given, or one the
user attaches later, and accounts the scheme it implements:

* Opacus' Poisson samplers (``UniformWithReplacementSampler``, the distributed one; what
  ``poisson_sampling=True`` installs) -- Poisson subsampling;
* a ``BatchSampler`` over a ``RandomSampler`` without replacement (``shuffle=True``) or a
  ``SequentialSampler`` (``shuffle=False``), with ``poisson_sampling=False`` -- every
  record in exactly one batch per pass: the proved bracket of
  :func:`~dpacct.accountant.shuffled_batches` (one unamplified Gaussian per epoch above;
  the larger of two attacks below), for zero-out neighbours (a record's gradient
  replaced by zero, the batches unchanged: removing a record from fixed-size batches
  would move every later record);
* :class:`FixedSizeBatchSampler` -- a fresh batch of fixed size drawn without
  replacement at every step: replace-one accounting
  (:func:`~dpacct.mechanisms.fixed_size_gaussian_step`);
* :class:`~dpacct._opacus_allocation.RandomAllocationBatchSampler` -- each record in
  ``k`` uniformly chosen batches of every pass: random allocation
  (:mod:`dpacct._opacus_allocation`, docs/theory/allocation_k_of_t.md);
* anything else (``WeightedRandomSampler``, ``SubsetRandomSampler``, sampling with
  replacement, a user-defined sampler): no guarantee follows, and the run is refused
  with :class:`UnaccountedSamplerError` unless the accountant was built with the
  explicit override ``assume_poisson=True``.

Samplers are recognised by their exact class, never by inheritance (a subclass can
draw its batches any way it likes).  Epochs are counted as consecutive runs of
``len(data_loader)`` batches, so a shuffled or sequential loader must be iterated to its
end every epoch: the watch on the iterated loader (:mod:`dpacct._opacus_watch`) refuses
the step after a pass left early, as it refuses every other break of the identified
scheme's promise.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from functools import cache
from types import SimpleNamespace
from typing import Any

import numpy as np

from dpacct._opacus_allocation import RANDOM_ALLOCATION, RandomAllocationBatchSampler
from dpacct.accountant.extras import import_optional

_FEATURE = "dpacct.opacus"


@cache
def _lib() -> SimpleNamespace:
    """torch's and Opacus' classes, imported on first use.

    Not at import time: the documentation build mocks torch and Opacus, and a mocked
    ``torch`` left in ``sys.modules`` would break scipy's array-API checks for every
    module imported after it.
    """
    data = import_optional("torch.utils.data", extra="opacus", feature=_FEATURE)
    opacus = import_optional("opacus", extra="opacus", feature=_FEATURE)
    memory = import_optional("opacus.utils.batch_memory_manager", extra="opacus", feature=_FEATURE)
    uniform = import_optional("opacus.utils.uniform_sampler", extra="opacus", feature=_FEATURE)
    # per-record accounting's sampler: Poisson at its rate among the records whose
    # filters admit the step (rate q or 0 for each record, independently)
    from dpacct._opacus_per_record import PerRecordPoissonSampler
    return SimpleNamespace(
        torch=import_optional("torch", extra="opacus", feature=_FEATURE),
        PrivacyEngine=opacus.PrivacyEngine,
        BatchSplittingSampler=memory.BatchSplittingSampler,
        poisson=frozenset(
            {
                uniform.UniformWithReplacementSampler,
                uniform.DistributedUniformWithReplacementSampler,
                PerRecordPoissonSampler,
            }
        ),
        BatchSampler=data.BatchSampler,
        RandomSampler=data.RandomSampler,
        SequentialSampler=data.SequentialSampler,
    )


__all__ = [
    "DataPath",
    "FixedSizeBatchSampler",
    "RandomAllocationBatchSampler",
    "UnaccountedSamplerError",
    "accounted_alike",
    "batch_sizes",
    "data_path_from_state",
    "draws_poisson",
    "identify",
    "opacus_call",
    "replaced_sampler",
    "replaced_text",
    "shuffled_mu2",
    "signature",
]

POISSON = "poisson"
SHUFFLE = "shuffle"
SEQUENTIAL = "sequential"
FIXED_SIZE = "fixed-size"

#: how far up the stack the accountant looks for Opacus' make_private frames
_MAX_DEPTH = 8


class UnaccountedSamplerError(ValueError):
    """The data loader samples in a way no (epsilon, delta) guarantee is proved for."""


@dataclass(frozen=True)
class DataPath:
    """How an Opacus run forms its batches, as the accountant identified it.

    Parameters
    ----------
    scheme : str
        ``"poisson"``, ``"shuffle"``, ``"sequential"`` or ``"fixed-size"``.
    sampler : str
        The sampler class found (``"RandomSampler"``, ...); with the override
        ``assume_poisson``, the refused sampler's class.
    steps_per_epoch : int
        Batches per pass over the data (``len(data_loader)``).
    sample_rate : float
        Poisson rate (Poisson), or batch size over dataset size (the others).
    batch_size : int or None
        Fixed batch size (None for Poisson batches).
    assumed : bool
        True when the scheme was not verified but assumed by the override.
    every_record : bool
        True when every record is in one batch of every pass (shuffling a
        ``RandomSampler`` over all ``n`` records, keeping the last batch). A subset
        sampler (``num_samples < n``) or ``drop_last`` with ``n % batch_size != 0`` puts a
        record in a pass only with probability ``< 1``: the upper end stays sound (a
        mixture with the record absent is a post-processing), but the shuffled attacks'
        lower end does not apply, so it is 0. A checkpoint saved without this field
        loads as False.

    Examples
    --------
    >>> DataPath("shuffle", "RandomSampler", 10, 0.1, 32).describe()
    'shuffled fixed-size batches (RandomSampler, batch size 32, 10 batches per epoch)'
    """

    scheme: str
    sampler: str
    steps_per_epoch: int
    sample_rate: float
    batch_size: int | None = None
    assumed: bool = False
    every_record: bool = True

    def describe(self) -> str:
        """One line saying what the run does."""
        if self.assumed:
            return (
                f"{self.sampler}, accounted as Poisson sampling at rate {self.sample_rate:.6g} "
                "by the override assume_poisson=True (not verified)"
            )
        what = {
            POISSON: "Poisson sampling",
            SHUFFLE: "shuffled fixed-size batches",
            SEQUENTIAL: "fixed-size batches in a fixed order",
            FIXED_SIZE: "fixed-size batches drawn without replacement at every step",
            RANDOM_ALLOCATION: "random allocation of each record to "
            f"{max(1, round(self.sample_rate * self.steps_per_epoch))} batch(es) per pass",
        }[self.scheme]
        size = (
            f"rate {self.sample_rate:.6g}"
            if self.batch_size is None
            else f"batch size {self.batch_size}"
        )
        return f"{what} ({self.sampler}, {size}, {self.steps_per_epoch} batches per epoch)"

    @property
    def relation(self) -> str:
        """The neighbouring relation of the scheme's guarantee.

        ``"add/remove"`` for Poisson sampling, ``"zero-out"`` for shuffled or sequential
        fixed-size batches (a record's gradient replaced by zero, the batches
        unchanged), ``"replace-one"`` for fixed-size batches without replacement.
        """
        return {POISSON: "add/remove", FIXED_SIZE: "replace-one"}.get(self.scheme, "zero-out")

    def as_dict(self) -> dict[str, Any]:
        """Plain values (the accountant's checkpoint stores them)."""
        return asdict(self)


class FixedSizeBatchSampler:
    """Batches of ``batch_size`` indices drawn uniformly without replacement, fresh each step.

    A batch sampler (an iterable of index lists with a length, as torch's
    ``DataLoader`` takes one).  Give it to a ``DataLoader`` as ``batch_sampler`` with
    ``poisson_sampling=False``:
    the dpacct accountant recognises it and accounts each step as a fixed-size batch
    drawn without replacement (replace-one relation; a PLD bracket of one symmetric
    dominating pair per step, docs/theory/fixed_size.md, and the RDP bound of Wang,
    Balle, Kasiviswanathan 2019, Theorem 9; the smaller wins).

    Parameters
    ----------
    num_samples : int
        Dataset size ``n``.
    batch_size : int
        Records per batch, ``1 <= batch_size <= num_samples``.
    steps : int, optional
        Batches per pass of the loader (default ``ceil(n / batch_size)``).
    generator : torch.Generator, optional
        Source of randomness.

    Examples
    --------
    >>> import torch
    >>> s = FixedSizeBatchSampler(10, 3, generator=torch.Generator().manual_seed(0))
    >>> len(s), [len(b) for b in s]
    (4, [3, 3, 3, 3])
    """

    def __init__(
        self, num_samples: int, batch_size: int, *, steps: int | None = None, generator=None
    ) -> None:
        from dpacct.accountant.validation import check_count

        self.num_samples = check_count(num_samples, "num_samples")
        self.batch_size = check_count(batch_size, "batch_size")
        if self.batch_size > self.num_samples:
            raise ValueError(
                f"batch_size must be <= num_samples ({self.num_samples}), got {self.batch_size}"
            )
        default = -(-self.num_samples // self.batch_size)
        self.steps = default if steps is None else check_count(steps, "steps")
        self.generator = generator

    def __len__(self) -> int:
        return self.steps

    def __iter__(self):
        for _ in range(self.steps):
            perm = _lib().torch.randperm(self.num_samples, generator=self.generator)
            yield perm[: self.batch_size].tolist()


def _name(obj: object) -> str:
    return type(obj).__name__


def _unwatched(batch_sampler: Any) -> Any:
    """The batch sampler beneath dpacct's own watch (:mod:`dpacct._opacus_watch`), if any."""
    cls = type(batch_sampler)
    if cls.__name__ == "WatchedBatchSampler" and cls.__module__ == "dpacct._opacus_watch":
        return object.__getattribute__(batch_sampler, "_inner")
    return batch_sampler


def _source_size(sampler: Any) -> int | None:
    """``len(sampler.data_source)``: the index range a torch sampler draws from."""
    try:
        return len(sampler.data_source)
    except (AttributeError, TypeError):
        return None


def identify(loader: Any, *, poisson_sampling: bool = False, replaced: bool = False) -> DataPath:
    """The :class:`DataPath` of ``loader``, or :class:`UnaccountedSamplerError`.

    Samplers are recognised by their exact class (``type(x) is ...``), never by
    inheritance: a subclass can draw its batches any way it likes, so it is refused like
    any other sampler dpacct has no proof for.

    Parameters
    ----------
    loader : torch.utils.data.DataLoader
        The loader the run iterates (or the one given to ``make_private_with_epsilon``
        with ``poisson_sampling=True``, which Opacus replaces by Poisson sampling).
    poisson_sampling : bool
        Opacus' flag: True means Opacus replaces the loader's sampler by its Poisson
        sampler at rate ``1 / len(loader)``.
    replaced : bool, default False
        With ``poisson_sampling``: ``loader`` is the one Opacus *will* replace (as
        ``make_private_with_epsilon`` holds it), so its own sampler does not run, even
        when it is a Poisson sampler of another rate.

    Examples
    --------
    >>> import torch
    >>> data = torch.utils.data.TensorDataset(torch.zeros(10, 1))
    >>> identify(torch.utils.data.DataLoader(data, batch_size=5, shuffle=True)).scheme
    'shuffle'
    """
    try:
        steps = len(loader)
    except TypeError:
        steps = 0
    lib = _lib()
    batch_sampler = _unwatched(getattr(loader, "batch_sampler", None))
    if type(batch_sampler) is lib.BatchSplittingSampler:  # BatchMemoryManager's wrapper
        batch_sampler = _unwatched(batch_sampler.sampler)
    dataset = getattr(loader, "dataset", None)
    n = len(dataset) if dataset is not None and hasattr(dataset, "__len__") else 0
    if poisson_sampling and replaced and steps > 0:
        return DataPath(POISSON, "UniformWithReplacementSampler", steps, 1.0 / steps)
    if type(batch_sampler) in lib.poisson:
        q = float(batch_sampler.sample_rate)
        if getattr(batch_sampler, "total_size", batch_sampler.num_samples) != n:
            raise UnaccountedSamplerError(_refusal(loader, batch_sampler, n))
        return DataPath(POISSON, _name(batch_sampler), len(batch_sampler), q)
    if poisson_sampling and steps > 0:
        return DataPath(POISSON, "UniformWithReplacementSampler", steps, 1.0 / steps)
    if type(batch_sampler) is FixedSizeBatchSampler and batch_sampler.num_samples == n:
        b = batch_sampler.batch_size
        return DataPath(FIXED_SIZE, _name(batch_sampler), len(batch_sampler), b / n, b)
    if type(batch_sampler) is RandomAllocationBatchSampler and batch_sampler.num_samples == n:
        t = len(batch_sampler)
        return DataPath(RANDOM_ALLOCATION, _name(batch_sampler), t, batch_sampler.k / t)
    if type(batch_sampler) is lib.BatchSampler and n > 0 and steps > 0:
        inner, b = batch_sampler.sampler, batch_sampler.batch_size
        if type(inner) is lib.SequentialSampler and _source_size(inner) == n:
            return DataPath(SEQUENTIAL, "SequentialSampler", steps, b / n, b)
        if (
            type(inner) is lib.RandomSampler
            and not inner.replacement
            and _source_size(inner) == n
            and (inner._num_samples is None or inner._num_samples <= n)
        ):
            every = inner._num_samples in (None, n) and not (batch_sampler.drop_last and n % b)
            return DataPath(SHUFFLE, "RandomSampler", steps, b / n, b, every_record=every)
    raise UnaccountedSamplerError(_refusal(loader, batch_sampler, n))


def draws_poisson(loader: Any) -> bool:
    """Whether ``loader`` itself draws with one of Opacus' Poisson samplers (exact class)."""
    batch_sampler = _unwatched(getattr(loader, "batch_sampler", None))
    if type(batch_sampler) is _lib().BatchSplittingSampler:
        batch_sampler = _unwatched(batch_sampler.sampler)
    return type(batch_sampler) in _lib().poisson


def signature(batch_sampler: Any) -> tuple:
    """What identification read from a batch sampler: classes, sizes, rates.

    The watch (:mod:`dpacct._opacus_watch`) compares it at every pass with the value
    at identification, so a sampler changed in place after ``make_private`` is seen.

    Examples
    --------
    >>> signature(FixedSizeBatchSampler(10, 3))
    ('FixedSizeBatchSampler', 10, 3)
    """
    bs = _unwatched(batch_sampler)
    if type(bs) is _lib().BatchSplittingSampler:
        bs = _unwatched(bs.sampler)
    inner = getattr(bs, "sampler", None)
    parts: list[Any] = [_name(bs)]
    if inner is not None:
        parts += [_name(inner), _source_size(inner), getattr(inner, "replacement", None)]
        parts.append(getattr(inner, "_num_samples", None))
    for attr in ("num_samples", "total_size", "sample_rate", "batch_size", "drop_last"):
        if hasattr(bs, attr):
            parts.append(getattr(bs, attr))
    if type(bs) is RandomAllocationBatchSampler:  # its batches per pass and per record
        parts += [bs.steps, bs.k]
    return tuple(parts)


def _refusal(loader: Any, batch_sampler: Any, n: int = 0) -> str:
    lib = _lib()
    known = (*lib.poisson, FixedSizeBatchSampler, RandomAllocationBatchSampler, lib.BatchSampler)
    if batch_sampler is None:
        found = f"a {_name(loader)} without a batch sampler (batch_size=None)"
    elif type(batch_sampler) is lib.BatchSampler:
        inner = batch_sampler.sampler
        extra = " with replacement" if getattr(inner, "replacement", False) else ""
        size = batch_sampler.batch_size
        found = f"{_name(inner)}{extra} inside a BatchSampler of batch size {size}"
        source = _source_size(inner)
        if source is not None and source != n:
            found += f", drawing from {source} indices for a dataset of {n} records"
        parent = next((c for c in (lib.RandomSampler, lib.SequentialSampler)
                       if isinstance(inner, c) and type(inner) is not c), None)  # fmt: skip
        if parent is not None:
            found += f" (a subclass of {parent.__name__}; samplers are recognised by exact class)"
    else:
        found = f"the batch sampler {_name(batch_sampler)}"
        parent = next((c for c in known if isinstance(batch_sampler, c)), None)
        if parent is not None and type(batch_sampler) is not parent:
            found += (
                f" (a subclass of {parent.__name__}; samplers are recognised by exact "
                "class, as a subclass can draw its batches any way it likes)"
            )
        size = getattr(batch_sampler, "total_size", getattr(batch_sampler, "num_samples", n))
        if type(batch_sampler) in lib.poisson and size != n:
            found += f" over {size} indices for a dataset of {n} records"
    return (
        f"the data loader samples with {found}: dpacct cannot account this data path. "
        "Amplification by sampling is proved for Poisson sampling, for shuffled or "
        "sequential fixed-size batches (each record once per epoch) and for fixed-size "
        "batches drawn without replacement (and for RandomAllocationBatchSampler's "
        "allocation of each record to k batches); a weighted or user-defined sampler gives "
        "records unequal (possibly data-dependent) chances or repeats them, and "
        "Opacus' sample rate 1/len(data_loader) does not describe it, so no "
        "(epsilon, delta) guarantee follows for this run. Switch to Poisson sampling: "
        "make_private(..., poisson_sampling=True) (Opacus' default) with a plain "
        "DataLoader(dataset, batch_size=B); or, taking responsibility for the claim, "
        "use OpacusAccountant(assume_poisson=True) to account the run as Poisson "
        "sampling at rate 1/len(data_loader)"
    )


def opacus_call() -> tuple[str, dict[str, Any]] | None:
    """``(name, locals)`` of the nearest ``PrivacyEngine.make_private*`` frame, if any.

    The accountant is created and hooked by Opacus from inside these methods; their
    ``data_loader`` and ``poisson_sampling`` arguments are the run's data path.
    """
    engine = _lib().PrivacyEngine
    codes = {
        engine.make_private.__code__: "make_private",
        engine.make_private_with_epsilon.__code__: "make_private_with_epsilon",
    }
    frame = sys._getframe(1)
    for _ in range(_MAX_DEPTH):
        if frame is None:
            return None
        name = codes.get(frame.f_code)
        if name is not None:
            return name, dict(frame.f_locals)
        frame = frame.f_back
    return None


def replaced_sampler(prepared: Any) -> str | None:
    """The sampler ``make_private(poisson_sampling=True)`` replaced, if it was not plain.

    Opacus builds a new ``DPDataLoader`` with its uniform Poisson sampler and drops the
    loader it was given; when that loader used a sampler of its own (weighted,
    distributed, a user's), its sampling is silently gone.  The loader given is read
    from the caller of ``make_private`` (``make_private_with_epsilon``'s argument, or the
    one loader over the same dataset among the caller's local variables); None when it
    cannot be found or was a plain shuffled or sequential loader.

    Parameters
    ----------
    prepared : torch.utils.data.DataLoader
        The loader ``make_private`` returns.
    """
    lib = _lib()
    codes = (lib.PrivacyEngine.make_private.__code__,
             lib.PrivacyEngine.make_private_with_epsilon.__code__)  # fmt: skip
    frame = sys._getframe(1)
    for _ in range(_MAX_DEPTH):
        if frame is None:
            return None
        if frame.f_code is codes[0]:
            break
        frame = frame.f_back
    else:
        return None
    outer = frame.f_back
    if outer is None:
        return None
    dataset = getattr(prepared, "dataset", None)
    if outer.f_code is codes[1]:
        found = [outer.f_locals.get("data_loader")]
    else:
        found = list({id(v): v for v in outer.f_locals.values()
                      if v is not prepared and hasattr(v, "batch_sampler")
                      and getattr(v, "dataset", None) is dataset}.values())  # fmt: skip
    if len(found) != 1 or found[0] is None:
        return None
    batch_sampler = _unwatched(found[0].batch_sampler)
    if batch_sampler is None:
        return None
    if type(batch_sampler) is lib.BatchSampler:
        inner = batch_sampler.sampler
        if type(inner) in (lib.RandomSampler, lib.SequentialSampler):
            return None
        return _name(inner)
    return _name(batch_sampler)


def replaced_text(name: str, path: DataPath | None) -> str:
    """What ``make_private(poisson_sampling=True)`` did to the sampler ``name``.

    Examples
    --------
    >>> replaced_text("WeightedRandomSampler", None).split(":")[0]
    "Opacus replaced the data loader's WeightedRandomSampler by its uniform Poisson sampler \
(make_private(poisson_sampling=True))"
    """
    rate = "" if path is None else f" at rate {path.sample_rate:.6g}"
    return (
        f"Opacus replaced the data loader's {name} by its uniform Poisson sampler{rate} "
        "(make_private(poisson_sampling=True)): every record is drawn with the same "
        f"probability, and the sampling of {name} (a WeightedRandomSampler's "
        "weighting, a DistributedSampler's shard) is not applied; dpacct accounts the "
        "Poisson sampling that runs. Pass poisson_sampling=False to keep your sampler "
        "(dpacct refuses it unless it can account it)"
    )


def shuffled_mu2(
    sigmas: np.ndarray,
    batches: np.ndarray,
    steps_per_epoch: int,
    starts: np.ndarray | None = None,
) -> float:
    """Gaussian-DP ``mu^2`` bounding steps where each record is in one batch per epoch.

    Step ``j`` adds noise ``sigmas[j]`` to the sum of ``batches[j]`` consecutive
    batches; an epoch is ``steps_per_epoch`` consecutive batches, and every record lies
    in exactly one batch of each epoch.  Given the batches (a post-processing of
    knowing them), a record in ``n_j`` batches of step ``j`` makes the run a Gaussian
    mechanism with ``mu^2 = sum_j (n_j / sigma_j)^2``.  A step spans at most two epochs
    (``batches[j] <= steps_per_epoch``), so ``n_j <= 2``; with ``w_e`` the largest
    ``1 / sigma_j^2`` over the steps meeting epoch ``e``, a step met by one epoch costs at
    most ``w_e``, and one met by epochs ``e, e + 1`` at most
    ``4 / sigma_j^2 <= 2 w_e + 2 w_{e + 1}``; doubling ``w_e`` for every epoch that
    shares a step with a neighbour therefore bounds every placement of the record.
    ``starts`` (increasing batch offsets, the first 0): where the passes began, when a
    run resumed from a mid-pass checkpoint made them shorter than ``steps_per_epoch``
    (:mod:`dpacct._opacus_passes`); an epoch is then a pass.

    Examples
    --------
    >>> shuffled_mu2(np.array([1.0, 2.0, 2.0, 2.0]), np.array([1, 1, 1, 1]), 2)
    1.25
    """
    inv2 = np.where(sigmas > 0, 1.0 / np.square(np.where(sigmas > 0, sigmas, 1.0)), np.inf)
    if np.any(batches > steps_per_epoch):
        raise ValueError(
            "a step accumulates more batches than an epoch holds "
            f"({int(batches.max())} > {steps_per_epoch}): a record could be in it twice "
            "or more; not accounted"
        )
    end = np.cumsum(batches)
    if starts is None:
        first = (end - batches) // steps_per_epoch
        last = (end - 1) // steps_per_epoch
    else:
        first = np.searchsorted(starts, end - batches, side="right") - 1
        last = np.searchsorted(starts, end - 1, side="right") - 1
        if np.any(last - first > 1):
            raise ValueError(
                "a step accumulates batches of three or more passes: a record could be "
                "in it three times or more; not accounted"
            )
    w = np.zeros(int(last[-1]) + 1)
    np.maximum.at(w, first, inv2)
    np.maximum.at(w, last, inv2)
    doubled = np.zeros(w.shape, dtype=bool)
    span = first != last
    doubled[first[span]] = True
    doubled[last[span]] = True
    total = float(np.sum(np.where(doubled, 2.0 * w, w)))
    return math.inf if not math.isfinite(total) else total


def accounted_alike(a: DataPath, b: DataPath) -> bool:
    """Whether steps recorded under data path ``a`` may be accounted under ``b``.

    The scheme, batches per epoch, batch size *and sample rate* must agree: a Poisson
    sampler's rate, or a fixed-size batch's ``b / n``, is what each step is priced at,
    so a loader of the same shape over another dataset size (or a checkpoint of such a
    run) would re-price the recorded steps, or price the new ones, at the wrong rate.

    Examples
    --------
    >>> a = DataPath("fixed-size", "FixedSizeBatchSampler", 10, 0.1, 24)
    >>> accounted_alike(a, DataPath("fixed-size", "FixedSizeBatchSampler", 10, 0.01, 24))
    False
    >>> accounted_alike(a, a)
    True
    """
    return (a.scheme, a.steps_per_epoch, a.batch_size) == (
        b.scheme,
        b.steps_per_epoch,
        b.batch_size,
    ) and math.isclose(a.sample_rate, b.sample_rate, rel_tol=1e-12, abs_tol=0.0)


def carried(old: DataPath | None, new: DataPath) -> DataPath:
    """``new`` as the path of a run whose earlier steps ran under ``old``.

    The shuffled attacks' lower end holds only if every record was in every pass of
    the *whole* run, so ``every_record`` is kept only where both paths have it
    (:func:`accounted_alike` does not compare it: the upper end prices the two alike).
    Without ``old`` (no steps recorded under another path) ``new`` is returned as is.

    Examples
    --------
    >>> full = DataPath("shuffle", "RandomSampler", 2, 0.5, 500, every_record=True)
    >>> part = DataPath("shuffle", "RandomSampler", 2, 0.5, 500, every_record=False)
    >>> carried(part, full).every_record
    False
    >>> carried(None, full).every_record
    True
    """
    if old is None or old.every_record or not new.every_record:
        return new
    return replace(new, every_record=False)


def data_path_from_state(saved: object, current: DataPath | None) -> DataPath | None:
    """The checkpoint's ``data_path`` as a :class:`DataPath` (None if it has none)."""
    if saved is None:
        return None
    fields = set(DataPath.__dataclass_fields__)
    if isinstance(saved, Mapping) and set(saved) == fields - {"every_record"}:
        saved = {**saved, "every_record": False}  # saved before the field: no lower end
    if not isinstance(saved, Mapping) or set(saved) != fields:
        raise ValueError(
            f"state_dict['data_path'] must be a mapping with the keys {sorted(fields)}, "
            f"got {saved!r}"
        )
    if saved["scheme"] not in {POISSON, FIXED_SIZE, "shuffle", "sequential", RANDOM_ALLOCATION}:
        raise ValueError(f"state_dict['data_path'] has an unknown scheme {saved['scheme']!r}")
    if not isinstance(saved["every_record"], bool):
        raise ValueError("state_dict['data_path']['every_record'] must be a bool")
    path = DataPath(**saved)
    if current is not None and not accounted_alike(current, path):
        raise ValueError(
            f"the checkpoint's data path ({path.describe()}) differs from this run's "
            f"({current.describe()}); not loaded"
        )
    return path


def batch_sizes(optimizer: Any) -> list[int] | None:
    """Sizes of the micro-batches of the current step (None if Opacus keeps none)."""
    params = getattr(optimizer, "params", None)
    if not params:
        return None
    grad_sample = getattr(params[0], "grad_sample", None)
    if grad_sample is None:
        return None
    tensors = grad_sample if isinstance(grad_sample, list) else [grad_sample]
    return [int(t.shape[0]) for t in tensors]
