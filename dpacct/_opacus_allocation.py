"""Random allocation in an Opacus run: a batch sampler that puts each record in k batches.

:class:`RandomAllocationBatchSampler` allocates, at every pass over the data, each
record to ``k`` distinct batches of the pass's ``steps``, chosen uniformly and
independently of the other records ("balls and bins" for ``k = 1``; Feldman & Shenfeld
2025 for ``k > 1``).  The dpacct Opacus accountant recognises it by its exact class
(:func:`dpacct._opacus_data_path.identify`), watches every pass (each record at most
``k`` times, at most once per batch: :mod:`dpacct._opacus_watch`) and accounts the run
as :func:`~dpacct.accountant.transformers.random_allocation` of Gaussian steps
(:func:`allocation_bounds`): its certified bracket, docs/theory/allocation_k_of_t.md.

Accounting, step by step: every recorded step is one batch (gradient accumulation over
several batches is refused: a record could be in two of them); a started pass counts as
a whole epoch (the steps run are a prefix of the epoch's, a post-processing of its
output), and a run resumed from a mid-pass checkpoint begins a fresh pass, so its
passes are counted as begun, not as ``ceil(steps / T)`` (:mod:`dpacct._opacus_passes`;
the lower end counts only the passes run to their end); the upper end is taken at the
smallest noise multiplier recorded (a step with more noise is a post-processing of one
with less: add independent noise), the lower end over the full passes at the largest
one.  The relation is the integration's
zero-out (a record's gradient replaced by zero; Opacus divides by a batch size that
depends on the dataset size, docs/theory/opacus_normalisation.md); the k-of-T pair
bounds it as it bounds add/remove (docs/theory/allocation_shuffling.md, Proposition 1).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpacct.accountant.extras import import_optional

__all__ = ["RANDOM_ALLOCATION", "RandomAllocationBatchSampler", "allocation_bounds"]

#: the data path's scheme name
RANDOM_ALLOCATION = "random-allocation"


class RandomAllocationBatchSampler:
    """Each record in ``k`` uniformly chosen batches of every pass of ``steps`` batches.

    A batch sampler (an iterable of index lists with a length, as torch's
    ``DataLoader`` takes one); give it to a ``DataLoader`` as ``batch_sampler`` with
    ``poisson_sampling=False``.  Batch sizes vary (expected ``k n / steps``); a batch
    can be empty.

    Parameters
    ----------
    num_samples : int
        Dataset size ``n``.
    steps : int
        Batches per pass ``T``, >= 1.
    k : int, default 1
        Batches per record per pass, ``1 <= k <= steps``.
    generator : torch.Generator, optional
        Source of randomness (seed it once, before training).

    Examples
    --------
    >>> import torch
    >>> s = RandomAllocationBatchSampler(6, 4, k=2, generator=torch.Generator().manual_seed(0))
    >>> batches = list(s)
    >>> len(s), len(batches), sorted(i for b in batches for i in b) == sorted(2 * list(range(6)))
    (4, 4, True)
    """

    def __init__(self, num_samples: int, steps: int, *, k: int = 1, generator=None) -> None:
        from dpacct.accountant.validation import check_count

        self.num_samples = check_count(num_samples, "num_samples")
        self.steps = check_count(steps, "steps")
        self.k = check_count(k, "k")
        if self.k > self.steps:
            raise ValueError(f"k must be <= steps ({self.steps}), got {self.k}")
        self.generator = generator

    def __len__(self) -> int:
        return self.steps

    def __iter__(self):
        torch = import_optional(
            "torch", extra="opacus", feature="RandomAllocationBatchSampler"
        )

        n, t, k = self.num_samples, self.steps, self.k
        # a uniform k-subset per record, drawn without replacement one element at a
        # time: each next step uniform among those not yet taken (a draw that repeats
        # one is redrawn, which makes it uniform on the rest); memory n k, not n T
        picks = torch.empty(n, k, dtype=torch.long)
        for j in range(k):
            col = torch.randint(t, (n,), generator=self.generator)
            bad = (picks[:, :j] == col[:, None]).any(dim=1)
            while bool(bad.any()):
                col[bad] = torch.randint(t, (int(bad.sum()),), generator=self.generator)
                bad = (picks[:, :j] == col[:, None]).any(dim=1)
            picks[:, j] = col
        chosen = picks.reshape(-1)
        records = torch.arange(n).repeat_interleave(k)
        order = torch.argsort(chosen, stable=True)
        counts = torch.bincount(chosen, minlength=t).tolist()
        ids = records[order].tolist()
        start = 0
        for c in counts:
            yield ids[start : start + c]
            start += c


def allocation_k(path: Any) -> int:
    """``k`` of an allocation data path (its rate is ``k / steps_per_epoch``)."""
    return max(1, round(path.sample_rate * path.steps_per_epoch))


def see_problem(path: Any, counts: np.ndarray, idx: np.ndarray, before: np.ndarray,
                drawn: int) -> str | None:
    """What a batch of an allocation pass breaks, or None (the watch's rule).

    Each record at most ``k`` times per pass, at most once per batch, and at most
    ``steps_per_epoch`` batches per pass.
    """
    k = allocation_k(path)
    rise = counts[idx] - before
    if int(rise.max()) > 1:
        i = int(idx[np.argmax(rise)])
        return f"index {i} drawn twice in one batch of {path.describe()}"
    if int(counts[idx].max()) > k:
        i = int(idx[np.argmax(counts[idx])])
        return (
            f"index {i} drawn {int(counts[i])} times in one pass of {path.describe()}: "
            f"each record must be in at most {k} batches per pass"
        )
    if drawn > path.steps_per_epoch:
        return (
            f"{drawn} batches in one pass, but len(data_loader) was "
            f"{path.steps_per_epoch} when identified ({path.describe()})"
        )
    return None


def allocation_bounds(
    path: Any,
    sigmas: np.ndarray,
    batches: np.ndarray,
    delta: float,
    need_lower: bool,
    passes: Any = None,
) -> tuple[Any, float]:
    """``(mechanism, lower)``: the run as random allocation, and its certified lower end.

    See the module docstring.  ``sigmas`` and ``batches`` are per recorded step;
    ``passes`` is the run's :class:`dpacct._opacus_passes.PassLog`: every pass begun
    is a whole epoch of the upper end (a run resumed from a mid-pass checkpoint begins
    a fresh allocation), the passes run to their end are the lower end's epochs; None:
    consecutive passes of ``steps_per_epoch`` steps.

    Raises
    ------
    ValueError
        A step accumulated several batches.
    """
    from dpacct.accountant.families.gaussian import GaussianMechanism
    from dpacct.accountant.transformers.random_allocation import random_allocation

    if np.any(batches != 1):
        raise ValueError(
            "gradient accumulation over several batches of a random-allocation sampler: "
            "a record can be in two of them, which the allocation accounting does not "
            "cover; take one batch per optimizer step"
        )
    t, k = path.steps_per_epoch, allocation_k(path)
    if passes is None:
        begun, full = -(-len(sigmas) // t), len(sigmas) // t
    else:
        begun, full = passes.of_run(path, batches)[1:]
    epochs = max(1, math.ceil(len(sigmas) / t), begun)
    mech = random_allocation(GaussianMechanism(float(sigmas.min())), t, k=k, epochs=epochs)
    lower = 0.0
    full = min(full, len(sigmas) // t)
    if need_lower and full >= 1:
        ref = random_allocation(GaussianMechanism(float(sigmas.max())), t, k=k, epochs=full)
        lower = float(ref.epsilon_bounds(delta)[0])
    return mech, lower
