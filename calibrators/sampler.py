"""The sampler check: epsilon of every batching scheme side by side, before training.

DP-SGD's epsilon depends on how batches are formed, and the number usually reported is
Poisson subsampling's whatever the data loader did.  :func:`sampler_report` takes the
run as the user describes it (a Poisson rate, or a dataset size and a batch size; the
epochs; the noise multiplier) and gives the epsilon of each scheme for the same steps,
the same noise and the same expected batch size, and which one matches the
description:

* ``"poisson"``: each record joins each step independently with probability ``q``
  (Opacus' ``poisson_sampling=True``); PLD of the Poisson-subsampled Gaussian.
* ``"shuffle"``: the data is shuffled once per epoch and cut into fixed-size batches
  (``DataLoader(shuffle=True)``); the proved bracket of
  :func:`~dpacct.accountant.shuffled_batches` (one unamplified Gaussian per epoch
  above; Chua et al. 2024's attack below, read by the largest coordinate and by the
  sum statistic).  Its relation is **zero-out** (a record's
  gradient replaced by zero, the batches unchanged; Kairouz et al. 2021): removing a
  record from a dataset cut into fixed-size batches moves every later record to
  another position, and one Gaussian per epoch is not an upper bound for that pair.
* ``"balls-in-bins"``: each record goes into one uniformly chosen batch of *every* epoch,
  drawn afresh each epoch (Chua et al. 2024, "Scalable DP-SGD: shuffling vs. Poisson
  subsampling"): random allocation with ``k = 1`` per epoch
  (:func:`~dpacct.accountant.transformers.random_allocation`), with its certified lower
  bound (the larger of two attacks: the largest coordinate and the sum statistic).
  JAX Privacy's ``BallsInBinsSampling`` is this only for one cycle: over several
  cycles it *keeps* each record's bin, a different and much costlier mechanism (at
  sigma 1 over 10 cycles its certified lower bound is 13.25 against this row's 1.70),
  which this row does **not** bound: see docs/user_guide/batch_samplers.md.
* ``"random-allocation"``: each record goes into ``k`` uniformly chosen steps of a block
  of ``k`` epochs (Feldman & Shenfeld 2025; ``k = epochs``: one allocation for the whole
  run); the same number of steps and participations as the other rows; with its
  certified lower bound at every ``k`` (docs/theory/allocation_k_of_t.md).  At
  ``k = 2`` and ``k * T <= 300`` its upper end also tries the direct (max, sum) route
  (Proposition 3 there; a law of a few CPU seconds at sigma 1).
* ``"fixed-size"``: every step draws a fresh batch of fixed size without replacement;
  accounted under the **replace-one** relation
  (:func:`~dpacct.mechanisms.fixed_size_gaussian_step`), so its epsilon is about a
  different neighbouring pair than the add/remove rows.

Only the row that matches the sampler is a guarantee for the run; every other row is
what the run would cost had it sampled that way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dpacct.accountant import (
    compose,
    random_allocation,
    shuffled_batches,
)
from dpacct.accountant.extras import import_optional
from dpacct.accountant.families.gaussian import GaussianMechanism
from dpacct.accountant.transformers.random_allocation_lower import gaussian_epsilon_is_zero
from dpacct.accountant.transformers.random_allocation_sum_lower import shared_lower_bounds
from dpacct.accountant.validation import (
    check_count,
    check_delta,
    check_positive,
    check_sample_rate,
)
from dpacct.mechanisms.primitives.relations import fixed_size_gaussian_step

from .dpsgd import dpsgd_mechanism

__all__ = ["SCHEMES", "SamplerReport", "SchemeEpsilon", "sampler_report"]

#: the batching schemes :func:`sampler_report` accounts, in the order of its table
SCHEMES: tuple[str, ...] = (
    "poisson",
    "shuffle",
    "balls-in-bins",
    "random-allocation",
    "fixed-size",
)

_WHAT = {
    "poisson": "Poisson subsampling at rate q (PLD)",
    "shuffle": "shuffle each epoch, cut fixed-size batches (proved bracket)",
    "balls-in-bins": "each record in 1 random batch per epoch (random allocation, k = 1)",
    "random-allocation": "each record in k random steps of k epochs (random allocation)",
    "fixed-size": "fresh fixed-size batch each step, without replacement (replace-one)",
}

#: each row's neighbouring relation (as in the rows :func:`sampler_report` computes)
_RELATION = {
    "poisson": "add/remove",
    "shuffle": "zero-out",
    "balls-in-bins": "add/remove",
    "random-allocation": "add/remove",
    "fixed-size": "replace-one",
}
#: the rows that carry a certified lower bound
_HAS_LOWER = ("shuffle", "balls-in-bins", "random-allocation")


@dataclass(frozen=True)
class SchemeEpsilon:
    """One row of a :class:`SamplerReport`: a scheme's epsilon for the described run.

    Parameters
    ----------
    scheme : str
        One of :data:`SCHEMES`.
    epsilon : float
        Sound upper bound on epsilon for a run that samples this way.
    lower : float or None
        Certified lower bound on the true epsilon, where one is computed.
    relation : str
        Neighbouring relation of the guarantee (``"add/remove"``, ``"zero-out"`` or
        ``"replace-one"``).
    description : str
        What the scheme does, in a few words.

    Examples
    --------
    >>> row = SchemeEpsilon("poisson", 1.5, None, "add/remove", "Poisson")
    >>> row.scheme, row.epsilon
    ('poisson', 1.5)
    """

    scheme: str
    epsilon: float
    lower: float | None
    relation: str
    description: str


@dataclass(frozen=True, repr=False)
class SamplerReport:
    """Epsilon of each batching scheme for one described run, and which one is yours.

    Built by :func:`sampler_report`; ``repr`` prints the table.

    Parameters
    ----------
    rows : tuple of SchemeEpsilon
        One row per scheme, in the order of :data:`SCHEMES`.
    scheme : str
        The scheme the description matches (its row is the guarantee for the run).
    noise_multiplier : float
        Noise standard deviation over the clipping norm.
    delta : float
        The delta of every epsilon.
    steps_per_epoch : int
        Batches per epoch ``T``.
    epochs : int
        Passes over the data.
    sample_rate : float
        Expected batch size over dataset size (the Poisson rate).
    k : int
        Steps per record of the random-allocation row's block of ``k`` epochs.

    Examples
    --------
    >>> r = sampler_report(1.0, 1e-5, scheme="shuffle", dataset_size=10_000,
    ...                    batch_size=100, epochs=1)
    >>> r.matched.scheme, round(r.epsilon, 4)     # one unamplified Gaussian at sigma = 1
    ('shuffle', 4.3772)
    >>> round(r["poisson"].epsilon, 4)           # what is usually reported: not for this run
    0.718
    """

    rows: tuple[SchemeEpsilon, ...]
    scheme: str
    noise_multiplier: float
    delta: float
    steps_per_epoch: int
    epochs: int
    sample_rate: float
    k: int

    def __getitem__(self, scheme: str) -> SchemeEpsilon:
        for row in self.rows:
            if row.scheme == scheme:
                return row
        raise KeyError(f"no scheme {scheme!r} in the report (schemes: {list(SCHEMES)})")

    @property
    def matched(self) -> SchemeEpsilon:
        """The row of the described scheme: the guarantee for the run."""
        return self[self.scheme]

    @property
    def epsilon(self) -> float:
        """Epsilon of the described scheme (a sound upper bound for the run)."""
        return self.matched.epsilon

    def as_dict(self) -> dict[str, Any]:
        """The report as plain Python values (what ``dpacct sampler --json`` prints).

        Examples
        --------
        >>> d = sampler_report(2.0, 1e-5, scheme="poisson", sample_rate=0.1).as_dict()
        >>> d["scheme"], [r["scheme"] for r in d["rows"]][:2]
        ('poisson', ['poisson', 'shuffle'])
        """
        return {
            "scheme": self.scheme,
            "noise_multiplier": self.noise_multiplier,
            "delta": self.delta,
            "steps_per_epoch": self.steps_per_epoch,
            "epochs": self.epochs,
            "steps": self.steps_per_epoch * self.epochs,
            "sample_rate": self.sample_rate,
            "k": self.k,
            "rows": [
                {
                    "scheme": r.scheme,
                    "epsilon": r.epsilon,
                    "lower": r.lower,
                    "relation": r.relation,
                    "description": r.description,
                    "matches": r.scheme == self.scheme,
                }
                for r in self.rows
            ],
        }

    def __repr__(self) -> str:
        head = (
            f"SamplerReport: noise multiplier {self.noise_multiplier:g}, delta "
            f"{self.delta:g}, {self.steps_per_epoch} steps per epoch, {self.epochs} "
            f"epoch(s), sample rate {self.sample_rate:.6g}; your sampler: {self.scheme}"
        )
        cells = [["scheme", "epsilon", "lower", "relation", "for your run"]]
        for r in self.rows:
            mine = r.scheme == self.scheme
            cells.append(
                [
                    r.scheme,
                    f"{r.epsilon:.5g}",
                    "-" if r.lower is None else f"{r.lower:.5g}",
                    r.relation,
                    "guarantee (your sampler)" if mine else "not a guarantee for this run",
                ]
            )
        widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
        lines = [head]
        for row in cells:
            lines.append(
                "  ".join(
                    c.ljust(w) if i in (0, 3, 4) else c.rjust(w)
                    for i, (c, w) in enumerate(zip(row, widths, strict=True))
                ).rstrip()
            )
        return "\n".join(lines)

    def plot(self, ax: Any = None) -> Any:
        """Bar chart of the schemes' epsilons; yours highlighted, lower bounds marked.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Where to draw (a new figure if None).

        Returns
        -------
        matplotlib Axes

        Raises
        ------
        ImportError
            matplotlib is not installed (the message says which extra to install).
        """
        if ax is None:
            plt = import_optional("matplotlib.pyplot", extra="plot", feature="SamplerReport.plot()")
            _, ax = plt.subplots(figsize=(9, 3.5), layout="constrained")
        names = [r.scheme for r in self.rows]
        ys = list(range(len(names)))[::-1]
        colors = ["C3" if r.scheme == self.scheme else "0.65" for r in self.rows]
        ax.barh(ys, [r.epsilon for r in self.rows], color=colors, label="upper bound (sound)")
        low = [(y, r.lower) for y, r in zip(ys, self.rows, strict=True) if r.lower is not None]
        if low:
            ax.plot(
                [v for _, v in low],
                [y for y, _ in low],
                "k|",
                markersize=14,
                label="certified lower bound",
            )
        ax.set_yticks(ys)
        labels = [
            f"{r.scheme}{' (yours)' if r.scheme == self.scheme else ''}\n{r.relation}"
            for r in self.rows
        ]
        ax.set_yticklabels(labels, fontsize="small")
        ax.set_xlabel(f"epsilon at delta = {self.delta:g}")
        ax.set_title(
            f"noise multiplier {self.noise_multiplier:g}, {self.steps_per_epoch} steps/epoch, "
            f"{self.epochs} epoch(s)",
            fontsize="medium",
        )
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
        return ax


def _steps_per_epoch(
    sample_rate: object, dataset_size: object, batch_size: object
) -> tuple[float, int]:
    """``(q, T)``: the Poisson rate and the batches of one pass, from either description."""
    if sample_rate is not None:
        if dataset_size is not None or batch_size is not None:
            raise ValueError("give either sample_rate or dataset_size with batch_size, not both")
        q = check_sample_rate(sample_rate)
        inv = 1.0 / q
        near = round(inv)
        # a rate written as 1/T (Opacus' 1 / len(loader)) has T batches per pass
        t = near if abs(inv - near) <= 1e-9 * inv else math.ceil(inv)
        return q, t
    if dataset_size is None or batch_size is None:
        raise ValueError(
            "describe the sampler: give sample_rate (Poisson), or dataset_size and "
            "batch_size (fixed-size batches)"
        )
    n = check_count(dataset_size, "dataset_size")
    b = check_count(batch_size, "batch_size")
    if b > n:
        raise ValueError(f"batch_size must be <= dataset_size ({n}), got {b}")
    return b / n, -(-n // b)


def sampler_report(
    noise_multiplier: float,
    delta: float,
    *,
    scheme: str,
    sample_rate: float | None = None,
    dataset_size: int | None = None,
    batch_size: int | None = None,
    epochs: int = 1,
    k: int | None = None,
) -> SamplerReport:
    """Epsilon of every batching scheme for the described run, and which one is yours.

    Call it before training: the row of ``scheme`` is the guarantee for the run, every
    other row what the same steps would cost under another sampler.  All rows share the
    noise multiplier, the steps (``steps_per_epoch * epochs``), and the expected batch
    size; see the module docstring for how each is accounted.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation over the clipping norm, > 0.
    delta : float
        Target delta, in (0, 1).
    scheme : str
        How your data loader forms batches: one of :data:`SCHEMES` (``"poisson"``:
        Opacus' default; ``"shuffle"``: ``DataLoader(shuffle=True)``; ``"fixed-size"``:
        a fresh batch without replacement each step; ``"balls-in-bins"``,
        ``"random-allocation"``).
    sample_rate : float, optional
        Expected batch size over dataset size, in (0, 1]; a pass has ``1 / sample_rate``
        batches (rounded up).  Give this, or ``dataset_size`` and ``batch_size``.
    dataset_size, batch_size : int, optional
        Records and batch size (``1 <= batch_size <= dataset_size``); a pass has
        ``ceil(dataset_size / batch_size)`` batches and the Poisson rate is
        ``batch_size / dataset_size``.
    epochs : int, default 1
        Passes over the data, >= 1.
    k : int, optional
        Random-allocation row: each record in ``k`` of the steps of ``k`` epochs;
        ``k`` must divide ``epochs``.  Default: ``epochs`` (one allocation for the run).

    Returns
    -------
    SamplerReport

    Raises
    ------
    ValueError, TypeError
        A parameter out of range or not a number, an unknown scheme, or a sampler
        described both ways (or neither).

    Examples
    --------
    >>> import dpacct as dp
    >>> r = dp.sampler_report(1.0, 1e-5, scheme="shuffle", dataset_size=60_000,
    ...                       batch_size=600, epochs=10)
    >>> r.scheme, r.steps_per_epoch, round(r.epsilon, 2)
    ('shuffle', 100, 17.86)
    >>> round(r["poisson"].epsilon, 2)     # what is usually reported: not for this run
    1.83
    """
    sigma = check_positive("noise_multiplier", noise_multiplier)
    d = check_delta(delta)
    if not isinstance(scheme, str) or scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {list(SCHEMES)}, got {scheme!r}")
    e = check_count(epochs, "epochs")
    kk = e if k is None else check_count(k, "k")
    if e % kk:
        raise ValueError(f"k must divide epochs ({e}), got {kk}")
    q, t = _steps_per_epoch(sample_rate, dataset_size, batch_size)
    steps = t * e
    if gaussian_epsilon_is_zero(2.0 * math.sqrt(steps) / sigma, d):
        # every row is at most all steps unamplified at sensitivity 2 (replace-one):
        # epsilon 0 there, so 0 in every row (at once, also where sigma = 1e308 overflows)
        rows = tuple(
            SchemeEpsilon(
                name, 0.0, 0.0 if name in _HAS_LOWER else None, _RELATION[name], _WHAT[name]
            )
            for name in SCHEMES
        )
        return SamplerReport(rows, scheme, sigma, d, t, e, q, kk)
    gauss = GaussianMechanism(sigma=sigma)
    with shared_lower_bounds():  # lower ends (two attacks): the k = 1 one computed once
        shuffled = shuffled_batches(gauss, t, e, d)
        bib_low, bib = random_allocation(gauss, t, k=1, epochs=e).epsilon_bounds(d)
        ra_low, ra = random_allocation(gauss, kk * t, k=kk, epochs=e // kk).epsilon_bounds(d)
    fixed = compose([fixed_size_gaussian_step(sigma, q)], counts=[steps]).epsilon(d)
    values = {
        "poisson": (float(dpsgd_mechanism(sigma, q, steps).epsilon(d)), None, "add/remove"),
        "shuffle": (float(shuffled.upper), float(shuffled.lower), "zero-out"),
        "balls-in-bins": (float(bib), float(bib_low), "add/remove"),
        "random-allocation": (float(ra), float(ra_low), "add/remove"),
        "fixed-size": (float(fixed), None, "replace-one"),
    }
    rows = tuple(
        SchemeEpsilon(name, values[name][0], values[name][1], values[name][2], _WHAT[name])
        for name in SCHEMES
    )
    return SamplerReport(rows, scheme, sigma, d, t, e, q, kk)
