"""Per-record privacy accounting for Opacus training: individual Renyi filters.

Every record of the training set gets its own privacy account (Feldman & Zrnic 2021,
"Individual privacy accounting via a Renyi filter", NeurIPS), kept by a
:class:`~dpacct.accountant.ledger.per_record.PerRecordFilter`:

* each record ``i`` has a clipping threshold ``C_i = r_i * C`` (``C`` is Opacus'
  ``max_grad_norm``), set from what the filter may use -- the released model and the
  record itself -- by :meth:`PerRecordAccounting.refresh`, which computes every active
  record's per-sample gradient norm at the current (released) parameters through the
  ``GradSampleModule`` Opacus trains with (Opacus' per-sample gradients), or given by
  the user (:meth:`PerRecordAccounting.set_ratios`);
* at each step the record's per-sample gradient is clipped at ``C_i`` (before Opacus'
  own clipping at ``C``, which then changes nothing), so the step is, for record ``i``, a
  Poisson-subsampled Gaussian of noise multiplier ``sigma * C / C_i``: it costs
  according to its own threshold, fixed before the step's randomness, sampled or not;
* :class:`PerRecordPoissonSampler` draws Poisson batches at rate ``q`` among the records
  whose filter still admits the step; a record whose budget is spent is never drawn
  again.  Every record is in a batch with probability ``q`` or 0, independently, so the
  run stays a Poisson-sampled run for dpacct's (worst-case) :class:`OpacusAccountant`,
  which recognises this sampler by its exact class.

Why the observed norms of a sampled batch are *not* used to charge a record (they would
make its cost depend on whether it was sampled, which breaks the filter's theorem), and
the proofs: ``docs/theory/per_record.md``.

Usage::

    acct = PerRecordAccounting(len(train), sample_rate=256 / len(train),
                               budget_epsilon=8.0, budget_delta=1e-5)
    loader = acct.data_loader(train)
    model, optimizer, loader = PrivacyEngine(accountant="dpacct").make_private(
        module=model, optimizer=optimizer, data_loader=loader,
        noise_multiplier=1.0, max_grad_norm=1.0, poisson_sampling=False)
    acct.attach(optimizer)
    for epoch in range(epochs):
        acct.refresh(model, train, loss_fn)      # thresholds from the released model
        for x, y in loader: ...                  # the usual loop
    report = acct.report(delta=1e-5, certified=engine.get_epsilon(1e-5))
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpacct.accountant.extras import import_optional
from dpacct.accountant.ledger.per_record import LEVELS, PerRecordFilter
from dpacct.accountant.validation import check_count, check_delta, check_positive

__all__ = ["PerRecordAccounting", "PerRecordPoissonSampler", "PerRecordReport"]

_FEATURE = "dpacct.opacus per-record accounting"


def _torch() -> Any:
    return import_optional("torch", extra="opacus", feature=_FEATURE)


class PerRecordPoissonSampler:
    """Poisson batches at rate ``q`` over the records a per-record filter admits.

    Before each batch is drawn, the filter charges the step to every admitted record
    (:meth:`~dpacct.accountant.ledger.per_record.PerRecordFilter.begin_step`, with the
    optimiser's current noise multiplier); then each admitted record is included
    independently with probability at most ``q`` (a float64 ``torch.rand`` on
    ``generator``, whose values are the multiples ``k 2^-53`` in [0, 1): the record is
    included iff ``u + 2^-53 <= q``, which ``floor(q 2^53)`` of the ``2^53`` values
    meet, so the rate is ``floor(q 2^53) / 2^53 <= q``, below ``q`` by less than
    ``2^-53``; a float32 draw, as Opacus' ``UniformWithReplacementSampler`` makes, has
    the rate ``ceil(q 2^24) / 2^24``, above ``q``).  Records refused by their filter are never
    included again.  Iterating yields ``steps`` batches (lists of indices).

    Parameters
    ----------
    filter : PerRecordFilter
        The records' filters (one per record of the dataset).
    sample_rate : float
        In (0, 1].
    steps : int, optional
        Batches per pass (default ``round(1 / sample_rate)``).
    generator : torch.Generator, optional
        The random source of the draws (torch's global one if None).

    Examples
    --------
    >>> from dpacct.accountant.ledger.per_record import PerRecordFilter
    >>> sampler = PerRecordPoissonSampler(PerRecordFilter(100), 0.1)
    >>> sampler.noise = lambda: 1.0          # attach() reads the optimiser's
    >>> len(sampler), all(0 <= i < 100 for i in sampler.draw())
    (10, True)
    """

    def __init__(
        self,
        filter: PerRecordFilter,
        sample_rate: float,
        *,
        steps: int | None = None,
        generator: Any = None,
    ) -> None:
        q = float(sample_rate)
        if not 0.0 < q <= 1.0:
            raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate!r}")
        self.filter = filter
        self.sample_rate = q
        self.num_samples = filter.n
        self.steps = max(1, round(1.0 / q)) if steps is None else check_count(steps, "steps")
        self.generator = generator
        self.noise: Callable[[], float] | None = None  # set by PerRecordAccounting.attach
        self.last_batch: np.ndarray | None = None
        #: the drawn records' threshold levels at the draw, the ones they were charged for
        self.last_levels: np.ndarray | None = None
        self.last_sigma: float | None = None
        self.unstepped = 0  # batches drawn since the last optimiser step

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[list[int]]:
        for _ in range(self.steps):
            yield self.draw()

    def draw(self) -> list[int]:
        """Charge one step to the admitted records and draw its batch."""
        if self.noise is None:
            raise RuntimeError(
                "the per-record sampler has no optimiser: call PerRecordAccounting.attach"
                "(optimizer) after make_private, before iterating the loader"
            )
        sigma = float(self.noise())
        mask = self.filter.begin_step(sigma=sigma, sample_rate=self.sample_rate)
        torch = _torch()
        u = torch.rand(self.num_samples, dtype=torch.float64, generator=self.generator)
        # u = k 2^-53 exactly; (k + 1) 2^-53 <= q for floor(q 2^53) values of k: the
        # inclusion probability never exceeds the q the filters charge
        idx = np.flatnonzero((u.numpy() + 2.0**-53 <= self.sample_rate) & mask)
        # the levels the step was charged at: a threshold changed before the optimiser
        # step (set_ratios, refresh) must not reach this batch's clipping
        self.last_levels = self.filter.level[idx].copy()
        self.last_batch, self.last_sigma = idx, sigma
        self.unstepped += 1
        return idx.tolist()


class PerRecordAccounting:
    """Per-record Renyi filters for an Opacus run: thresholds, clipping, the report.

    Parameters
    ----------
    n : int
        Number of training records (``len(dataset)``).
    sample_rate : float
        Poisson sampling rate, in (0, 1].
    budget_epsilon, budget_delta : float, optional
        Each record's budget (both or neither): a record is dropped from later batches
        before the first step that would take it past it.
    order : float, optional
        The filters' Renyi order (default: chosen at the first step from its
        ``(sigma, q)``).
    steps : int, optional
        Batches per epoch (default ``round(1 / sample_rate)``).
    generator : torch.Generator, optional
        The sampler's random source.

    Examples
    --------
    >>> acct = PerRecordAccounting(1000, sample_rate=0.01, budget_epsilon=2.0,
    ...                            budget_delta=1e-5)
    >>> len(acct.sampler), acct.filter.n
    (100, 1000)
    """

    def __init__(
        self,
        n: int,
        *,
        sample_rate: float,
        budget_epsilon: float | None = None,
        budget_delta: float | None = None,
        order: float | None = None,
        steps: int | None = None,
        generator: Any = None,
    ) -> None:
        self.filter = PerRecordFilter(
            n, budget_epsilon=budget_epsilon, budget_delta=budget_delta, order=order
        )
        self.sampler = PerRecordPoissonSampler(
            self.filter, sample_rate, steps=steps, generator=generator
        )
        self.optimizer: Any = None
        self._clip_norm: float | None = None

    def data_loader(self, dataset: Any, **kwargs: Any) -> Any:
        """A ``DataLoader`` over ``dataset`` drawing its batches with :attr:`sampler`.

        Empty batches (possible under Poisson sampling) are collated as Opacus'
        ``DPDataLoader`` does.  Pass it to ``make_private(..., poisson_sampling=False)``.
        Loader workers (``num_workers > 0``) are refused: they draw batches ahead of the
        steps, and each step must clip the records of the batch it trains on.

        Parameters
        ----------
        dataset : torch.utils.data.Dataset
            The training records, ``n`` of them.
        **kwargs
            Further ``DataLoader`` arguments (``collate_fn`` is wrapped for empty
            batches; ``batch_size``, ``shuffle`` and ``sampler`` are not allowed).

        Returns
        -------
        torch.utils.data.DataLoader
        """
        torch = _torch()
        if kwargs.get("num_workers", 0):
            raise ValueError(
                "num_workers must be 0 with per-record accounting (workers draw batches "
                "ahead of the optimiser steps)"
            )
        loader_mod = import_optional("opacus.data_loader", extra="opacus", feature=_FEATURE)
        collate = loader_mod.wrap_collate_with_empty(
            collate_fn=kwargs.pop("collate_fn", torch.utils.data.default_collate)
        )
        return torch.utils.data.DataLoader(
            dataset, batch_sampler=self.sampler, collate_fn=collate, **kwargs
        )

    def attach(self, optimizer: Any) -> None:
        """Clip each sampled record at its own threshold inside ``optimizer``.

        ``optimizer`` is Opacus' ``DPOptimizer`` (exact class, from ``make_private``
        with flat clipping).  During its ``clip_and_accumulate`` the clipping norm is the
        vector of the batch's thresholds ``r_i * max_grad_norm``: Opacus' clipping
        factor ``min(1, max_grad_norm / (norm_i + 1e-6))`` is then record ``i``'s own,
        with no second pass over the per-sample gradients; ``max_grad_norm`` is put back
        before the noise is drawn.  The wrapper also checks that the step's gradients are
        those of the sampler's last batch (so gradient accumulation over several batches
        is refused) and that the noise multiplier and clipping norm are those the filter
        charged; otherwise it raises before noise is added.

        Parameters
        ----------
        optimizer : opacus.optimizers.DPOptimizer
            The optimiser ``make_private`` returned.

        Raises
        ------
        TypeError
            ``optimizer`` is not exactly Opacus' ``DPOptimizer``.
        """
        optimizers = import_optional("opacus.optimizers", extra="opacus", feature=_FEATURE)
        if type(optimizer) is not optimizers.DPOptimizer:
            raise TypeError(
                "optimizer must be Opacus' DPOptimizer (make_private with flat clipping), "
                f"got {type(optimizer).__name__}"
            )
        self._wrap(optimizer)

    def _wrap(self, optimizer: Any) -> None:
        self.optimizer = optimizer
        self._clip_norm = float(optimizer.max_grad_norm)
        self.sampler.noise = lambda: optimizer.noise_multiplier
        original = optimizer.clip_and_accumulate

        def clip_and_accumulate() -> None:
            limits = self._limits(optimizer)
            optimizer.max_grad_norm = limits
            try:
                original()
            finally:
                optimizer.max_grad_norm = self._clip_norm

        optimizer.clip_and_accumulate = clip_and_accumulate

    def _limits(self, optimizer: Any) -> Any:
        """The batch's clipping thresholds ``r_i * C``, after checking the step."""
        torch = _torch()
        idx = self.sampler.last_batch
        grads = optimizer.grad_samples
        if idx is None or grads is None or self.sampler.last_levels is None:
            raise ValueError("a step without a batch drawn by the per-record sampler")
        drawn, self.sampler.unstepped = self.sampler.unstepped, 0
        if drawn != 1:
            raise ValueError(
                f"{drawn} batches were drawn since the last optimiser step: with "
                "per-record accounting each drawn batch is stepped on once, in order (no "
                "prefetching loader workers, no skipped or peeked batches), so that each "
                "record is clipped at its own threshold"
            )
        if float(optimizer.max_grad_norm) != self._clip_norm:
            raise ValueError(
                f"max_grad_norm changed from {self._clip_norm} to {optimizer.max_grad_norm}:"
                " the per-record costs assume the clipping norm of attach()"
            )
        sigma = float(optimizer.noise_multiplier)
        if self.sampler.last_sigma is None or sigma < self.sampler.last_sigma:
            raise ValueError(
                f"noise_multiplier {sigma} is below the {self.sampler.last_sigma} the "
                "records were charged for when the batch was drawn"
            )
        if len(grads[0]) != len(idx):
            raise ValueError(
                f"the step has {len(grads[0])} per-sample gradients for a batch of "
                f"{len(idx)} records: one optimiser step per drawn batch (no gradient "
                "accumulation) with per-record accounting"
            )
        # the thresholds charged when the batch was drawn, not the current ones: a ratio
        # raised in between (set_ratios, refresh) would clip above what was paid for
        limits = LEVELS[self.sampler.last_levels] * self._clip_norm
        return _round_down(torch, limits, grads[0].dtype).to(grads[0].device)

    def set_ratios(self, ratios: object, *, indices: object = None) -> None:
        """Set clipping ratios ``C_i / C`` directly.

        From released outputs and the records only, never from the sampling; see
        :meth:`~dpacct.accountant.ledger.per_record.PerRecordFilter.set_ratios`.

        Parameters
        ----------
        ratios : array_like of float
            In (0, 1]; rounded up to the grid.
        indices : array_like of int, optional
            The records they belong to (default: all, in order).
        """
        self.filter.set_ratios(ratios, indices=indices)

    def refresh(
        self,
        model: Any,
        dataset: Any,
        loss_fn: Callable[[Any, Any], Any],
        *,
        batch_size: int = 1024,
        slack: float = 0.0,
        indices: object = None,
    ) -> np.ndarray:
        """Set every active record's threshold from its gradient norm at the current model.

        The norms are Opacus' per-sample gradients (``model`` is the ``GradSampleModule``
        of ``make_private``) at the current parameters -- released outputs -- for every
        active record, sampled or not, so the thresholds depend only on what the filter
        may use.  ``r_i = min(1, (1 + slack) * norm_i / max_grad_norm)``, rounded up to the
        grid.  Costs one pass of per-sample gradients over the active records (no
        optimiser step, no noise); parameters and optimiser state are unchanged.

        Parameters
        ----------
        model : opacus.GradSampleModule
            The model ``make_private`` returned.
        dataset : torch Dataset
            The training records, indexable by a tensor of indices (a ``TensorDataset``)
            or by an int.
        loss_fn : callable
            ``loss_fn(model, batch) -> loss``, the training loss of a collated batch with
            the reduction Opacus was told (``loss_reduction``).
        batch_size : int, default 1024
            Records per backward pass.
        slack : float, default 0
            Relative headroom over the measured norm (>= 0).
        indices : array_like of int, optional
            Refresh only these records (the active ones among them); the others keep
            their thresholds.  A rotating slice on a fixed schedule spreads the cost
            over several epochs; the choice must not depend on the sampling.

        Returns
        -------
        ndarray
            The measured norms of the refreshed records (NaN for the others).
        """
        torch = _torch()
        if self._clip_norm is None:
            raise RuntimeError("call attach(optimizer) before refresh")
        b = check_count(batch_size, "batch_size")
        s = float(slack)
        if not 0.0 <= s < math.inf:
            raise ValueError(f"slack must be >= 0 and finite, got {slack!r}")
        alive = self.filter.state().active
        if indices is not None:
            pick = np.asarray(indices, dtype=np.int64).reshape(-1)
            if pick.size and (pick.min() < 0 or pick.max() >= self.filter.n):
                raise ValueError(f"indices must lie in [0, {self.filter.n})")
            chosen = np.zeros(self.filter.n, dtype=bool)
            chosen[pick] = True
            alive &= chosen
        active = np.flatnonzero(alive)
        norms = np.full(self.filter.n, np.nan)
        params = [p for p in model.parameters() if p.requires_grad]
        saved = [(p.grad, getattr(p, "grad_sample", None)) for p in params]
        for start in range(0, len(active), b):
            chunk = active[start : start + b]
            batch = _collate(dataset, chunk, torch)
            for p in params:
                p.grad, p.grad_sample = None, None
            loss_fn(model, batch).backward()
            sq = sum(
                p.grad_sample.reshape(len(chunk), -1).pow(2).sum(1) for p in params
            )
            norms[chunk] = torch.sqrt(sq).detach().numpy()
        for p, (g, gs) in zip(params, saved, strict=True):
            p.grad, p.grad_sample = g, gs
        if len(active):
            ratios = np.minimum(1.0, (1.0 + s) * norms[active] / self._clip_norm)
            ratios = np.maximum(ratios, LEVELS[-1])
            self.filter.set_ratios(ratios, indices=active)
        return norms

    def state_dict(self) -> dict[str, Any]:
        """The per-record filters' state, for a checkpoint beside Opacus' own.

        A resumed run must :meth:`load_state_dict` it: a fresh accounting would readmit
        every record with nothing spent.

        Returns
        -------
        dict
        """
        return self.filter.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` output (same number of records and budget).

        Parameters
        ----------
        state : dict
            From :meth:`state_dict`.

        Raises
        ------
        ValueError
            A batch was drawn (and charged) but not yet stepped on: restoring now would
            drop that charge while the batch is still to be trained on.
        """
        if self.sampler.unstepped:
            raise ValueError(
                "load_state_dict between a batch's draw and its optimiser step: the "
                "restored state would not hold the charge of the drawn batch"
            )
        self.filter.load_state_dict(state)

    def report(self, delta: float, *, certified: float | None = None) -> PerRecordReport:
        """Each record's epsilon at ``delta`` (:class:`PerRecordReport`).

        Parameters
        ----------
        delta : float
            In (0, 1).
        certified : float, optional
            The run's certified (worst-case) epsilon at ``delta``, e.g.
            ``engine.get_epsilon(delta)`` of dpacct's Opacus accountant: every record
            also has it, and it caps the report.
        """
        return PerRecordReport.from_filter(self.filter, delta, certified)


def _round_down(torch: Any, values: np.ndarray, dtype: Any) -> Any:
    """``values`` (float64) in ``dtype``, each rounded *down* where the cast rounded up.

    The thresholds clip in the gradients' dtype (float32 in most runs), and a cast to
    nearest rounds 12 of the 49 threshold levels up: the record would be clipped a hair
    above the threshold it is charged for.  One step toward 0 fixes that.
    """
    exact = torch.as_tensor(values, dtype=torch.float64)
    cast = exact.to(dtype)
    up = cast.to(torch.float64) > exact
    return torch.where(up, torch.nextafter(cast, torch.zeros_like(cast)), cast)


def _collate(dataset: Any, idx: np.ndarray, torch: Any) -> Any:
    """The records ``idx`` of ``dataset`` as one batch."""
    tensors = getattr(dataset, "tensors", None)
    if tensors is not None:
        t = torch.as_tensor(idx)
        return tuple(x[t] for x in tensors)
    return torch.utils.data.default_collate([dataset[int(i)] for i in idx])


@dataclass(frozen=True)
class PerRecordReport:
    """Per-record epsilons of a run: the distribution, the top records, a plot.

    Parameters
    ----------
    delta : float
        The delta of every number of the report.
    epsilon : ndarray, shape (n,)
        Each record's epsilon: the smallest of its Renyi odometer (``odometer``), the
        filter's budget (every record's certified guarantee when ``delta`` is at least
        the budget's) and the run's certified epsilon (``certified``), each a sound
        statement about that record.
    odometer : ndarray, shape (n,)
        :meth:`PerRecordFilter.epsilons`: with probability >= 1 - delta the record's
        realised privacy loss never exceeded it.
    certified : float or None
        The run's worst-case epsilon as given.
    budget : (float, float) or None
        The filter's per-record budget.
    steps : ndarray of int, shape (n,)
        Steps charged to each record (sampled or not).
    active : ndarray of bool, shape (n,)
        Records still in the run.
    ratios : ndarray, shape (n,)
        Each record's clipping ratio ``C_i / C``.

    Examples
    --------
    >>> from dpacct.accountant.ledger.per_record import PerRecordFilter
    >>> f = PerRecordFilter(3)
    >>> f.set_ratios([1.0, 0.5, 0.01])
    >>> for _ in range(100):
    ...     _ = f.begin_step(sigma=1.0, sample_rate=0.01)
    >>> rep = PerRecordReport.from_filter(f, 1e-5, certified=1.0)
    >>> rep.top(2)[0][0], bool(rep.epsilon[2] < 0.1)
    (0, True)
    """

    delta: float
    epsilon: np.ndarray
    odometer: np.ndarray
    certified: float | None
    budget: tuple[float, float] | None
    steps: np.ndarray
    active: np.ndarray
    ratios: np.ndarray

    @classmethod
    def from_filter(
        cls, filt: PerRecordFilter, delta: float, certified: float | None = None
    ) -> PerRecordReport:
        """The report of ``filt`` at ``delta``, capped by ``certified`` if given.

        Parameters
        ----------
        filt : PerRecordFilter
            The run's per-record filters.
        delta : float
            In (0, 1).
        certified : float, optional
            The run's certified epsilon at ``delta``.

        Returns
        -------
        PerRecordReport
        """
        d = check_delta(delta)
        odometer = filt.epsilons(d)
        eps = odometer.copy()
        if filt.budget is not None and d >= filt.budget[1]:
            eps = np.minimum(eps, filt.budget[0])
        if certified is not None:
            cert = check_positive("certified", certified, allow_inf=True)
            eps = np.minimum(eps, cert)
        st = filt.state()
        return cls(d, eps, odometer, certified, filt.budget, st.steps, st.active, st.ratios)

    def top(self, k: int = 10) -> list[tuple[int, float]]:
        """The ``k`` records of largest epsilon, as ``(index, epsilon)``, largest first.

        Parameters
        ----------
        k : int, default 10
            How many.

        Returns
        -------
        list of (int, float)
        """
        k = min(check_count(k, "k"), self.epsilon.size)
        part = np.argpartition(-self.epsilon, k - 1)[:k]
        order = part[np.argsort(-self.epsilon[part], kind="stable")]
        return [(int(i), float(self.epsilon[i])) for i in order]

    def quantiles(self, qs: object = (0.0, 0.5, 0.9, 0.99, 1.0)) -> np.ndarray:
        """Quantiles of the per-record epsilons.

        Parameters
        ----------
        qs : array_like of float
            Probabilities in [0, 1].

        Returns
        -------
        ndarray
        """
        return np.quantile(self.epsilon, np.asarray(qs, dtype=float))

    def summary(self, k: int = 5) -> str:
        """A few lines: the distribution, the certified numbers, the top records.

        Parameters
        ----------
        k : int, default 5
            How many top records to name.

        Returns
        -------
        str
        """
        q = self.quantiles()
        lines = [
            f"per-record epsilon at delta = {self.delta:g} over {self.epsilon.size} records: "
            f"min {q[0]:.4g}, median {q[1]:.4g}, 90% {q[2]:.4g}, 99% {q[3]:.4g}, "
            f"max {q[4]:.4g}",
        ]
        if self.certified is not None:
            lines.append(f"run's certified (worst-case) epsilon: {self.certified:.4g}")
        if self.budget is not None:
            dropped = int(self.epsilon.size - self.active.sum())
            lines.append(
                f"per-record budget ({self.budget[0]:g}, {self.budget[1]:g}): "
                f"{dropped} record(s) dropped"
            )
        tops = ", ".join(f"#{i}: {e:.4g}" for i, e in self.top(k))
        lines.append(f"top records: {tops}")
        return "\n".join(lines)

    def plot(self, ax: Any = None, bins: int = 50) -> Any:
        """Histogram of the per-record epsilons, the certified epsilon marked.

        Needs matplotlib (the ``plot`` extra).

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw (a new figure if None).
        bins : int, default 50
            Histogram bins.

        Returns
        -------
        matplotlib.axes.Axes
        """
        plt = import_optional("matplotlib.pyplot", extra="plot", feature="PerRecordReport.plot")
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3.5))
        ax.hist(self.epsilon, bins=bins, color="tab:blue", alpha=0.8)
        if self.certified is not None:
            ax.axvline(self.certified, color="tab:red", ls="--", label="run's certified epsilon")
            ax.legend()
        ax.set_xlabel(f"per-record epsilon (delta = {self.delta:g})")
        ax.set_ylabel("records")
        return ax
