"""Base class for algorithms whose privacy is the composition of their primitives.

An algorithm (NoisyGD, SSP, a marginal synthesizer, ...) runs on data, and its
privacy guarantee is exactly that of the primitives it invokes: a list of mechanisms
with repetition counts.  :class:`Algorithm` turns that list into a full
:class:`~dpacct.accountant.Mechanism` by delegating every privacy query to
``compose(primitives, counts)``, so an algorithm composes, subsamples and calibrates
like any other mechanism, and a test can check its privacy against an explicit
composition built by hand.

One source of truth for noise (docs/design.md).  An algorithm states its *plan*: a tuple of
:class:`PlannedRelease` lines, "``count`` releases of this primitive object at this
sensitivity".  Its privacy is the composition of the plan's mechanisms
(:meth:`Algorithm.primitives` is derived from it), and when it runs it draws its noise
only through a :class:`ReleaseSession` of the same plan, which calls those very
objects' ``release`` methods with the planned sensitivity, refuses a release beyond
the planned count (before drawing anything) and, at :meth:`ReleaseSession.finish`,
one short of it.  The claim and the draw therefore cannot drift apart: changing a
primitive, a count or a sensitivity changes both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpacct.accountant.families.gaussian import GaussianMechanism
from dpacct.accountant.mechanism import Mechanism
from dpacct.accountant.transformers.compose import compose
from dpacct.accountant.transformers.subsample import PoissonSubsampledMechanism
from dpacct.accountant.validation import check_count, check_positive, check_rng

__all__ = ["Algorithm", "PlannedRelease", "ReleaseSession"]


@dataclass(frozen=True)
class PlannedRelease:
    """One line of an algorithm's privacy claim: ``count`` releases of ``mechanism``.

    Parameters
    ----------
    label : str
        Name of the release inside the algorithm (e.g. ``"X^T X"``), unique in a plan.
    mechanism : Mechanism
        The primitive, normalised to unit sensitivity, whose ``release`` adds the
        noise; or ``poisson_subsample(primitive, q)``, whose base adds the noise to a
        query over a Poisson sample drawn by :meth:`ReleaseSession.poisson_sample`.
    count : int
        How many times it is released, >= 1.
    sensitivity : float or None
        The query's sensitivity, passed to every release (the mechanism's parameters
        are per unit of it); ``None`` for mechanisms without one (randomized response).

    Examples
    --------
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> PlannedRelease("gradient", GaussianMechanism(sigma=2.0), 10, sensitivity=0.5)
    PlannedRelease(label='gradient', mechanism=GaussianMechanism(sigma=2.0), count=10, \
sensitivity=0.5)
    """

    label: str
    mechanism: Mechanism
    count: int
    sensitivity: float | None = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not self.label:
            raise TypeError(f"label must be a non-empty str, got {self.label!r}")
        if not isinstance(self.mechanism, Mechanism):
            raise TypeError(f"mechanism must be a Mechanism, got {type(self.mechanism).__name__}")
        if not callable(getattr(_noise_source(self.mechanism), "release", None)):
            raise TypeError(
                f"{self.mechanism!r} has no release method: a planned release must be a "
                "primitive that adds its own noise"
            )
        object.__setattr__(self, "count", check_count(self.count, "count"))
        if self.sensitivity is not None:
            object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))

    @property
    def subsampled(self) -> bool:
        """True for ``poisson_subsample(primitive, q)`` lines."""
        return isinstance(self.mechanism, PoissonSubsampledMechanism)


def _noise_source(mechanism: Mechanism) -> Any:
    """The object whose ``release`` draws the noise of a planned mechanism."""
    if isinstance(mechanism, PoissonSubsampledMechanism):
        return mechanism.base
    return mechanism


class ReleaseSession:
    """An algorithm's run: the only way it draws noise, release by planned release.

    Created by :meth:`Algorithm.releases`.  :meth:`release` calls the planned
    mechanism's ``release`` with the planned sensitivity and the run's generator;
    a release beyond the planned count raises before any randomness is drawn, and
    :meth:`finish` raises if fewer were made.  ``made`` holds the counts so far.

    Parameters
    ----------
    plan : tuple of PlannedRelease
        The algorithm's planned releases, with unique labels.
    rng : numpy.random.Generator
        The run's only source of randomness.

    Examples
    --------
    >>> from dpacct.mechanisms import LaplaceMechanism
    >>> plan = (PlannedRelease("count", LaplaceMechanism(b=2.0), 1),)
    >>> session = ReleaseSession(plan, np.random.default_rng(0))
    >>> noisy = session.release("count", 100.0)
    >>> session.release("count", 100.0)
    Traceback (most recent call last):
    ...
    RuntimeError: release 'count' made more often than the 1 time(s) its privacy claim plans
    >>> session.finish()
    """

    def __init__(self, plan: tuple[PlannedRelease, ...], rng: np.random.Generator) -> None:
        self.rng = check_rng(rng)
        self._plan = {p.label: p for p in plan}
        if len(self._plan) != len(plan):
            labels = [p.label for p in plan]
            raise ValueError(f"planned release labels must be unique, got {labels}")
        self.made: dict[str, int] = {label: 0 for label in self._plan}
        self._sampled: dict[str, bool] = {label: False for label in self._plan}

    def _line(self, label: str) -> PlannedRelease:
        try:
            return self._plan[label]
        except KeyError:
            raise KeyError(
                f"no planned release {label!r}; the plan has {list(self._plan)}"
            ) from None

    def poisson_sample(self, label: str, n: int) -> np.ndarray:
        """Boolean mask of a Poisson sample of ``n`` records, for the next release of ``label``.

        Each record is in with probability ``sample_rate`` of the planned
        ``poisson_subsample`` mechanism, independently (the subsampling its privacy
        amplification assumes; Abadi et al. 2016, Section 3.1).  A line that is not
        subsampled (``poisson_subsample`` at rate 1 returns its base) takes every record.
        Call it once before each :meth:`release` of a subsampled line.

        Parameters
        ----------
        label : str
            The planned line whose next release uses the sample.
        n : int
            Number of records, >= 0.
        """
        line = self._line(label)
        n = check_count(n, "n", allow_zero=True)
        if self.made[label] >= line.count:
            raise RuntimeError(self._too_many(line))
        if not line.subsampled:
            return np.ones(n, dtype=bool)
        q = line.mechanism.sample_rate  # type: ignore[attr-defined]
        self._sampled[label] = True
        return self.rng.random(n) < q

    def release(self, label: str, *args: Any, **kwargs: Any) -> Any:
        """One release of the planned line ``label``.

        Calls ``mechanism.release(*args, sensitivity=<planned>, rng=<run's rng>,
        **kwargs)``.

        Parameters
        ----------
        label : str
            The planned line released.
        *args, **kwargs
            Passed on to the mechanism's ``release`` (typically the exact value).

        Returns
        -------
        object
            What the mechanism's ``release`` returns: the noisy value.
        """
        line = self._line(label)
        if self.made[label] >= line.count:
            raise RuntimeError(self._too_many(line))
        if line.subsampled:
            if not self._sampled[label]:
                raise RuntimeError(
                    f"release {label!r} is Poisson-subsampled: draw its sample with "
                    "poisson_sample first"
                )
            self._sampled[label] = False
        if line.sensitivity is not None:
            kwargs["sensitivity"] = line.sensitivity
        out = _noise_source(line.mechanism).release(*args, rng=self.rng, **kwargs)
        self.made[label] += 1
        return out

    def release_many(self, label: str, values: object) -> np.ndarray:
        """``len(values)`` consecutive releases of the planned Gaussian line ``label``.

        ``values[i]`` is the exact value of the ``i``-th release.  The Gaussian
        mechanism adds independent noise to every coordinate, so one call of its
        ``release`` on the stacked values draws, number for number and in the same
        order, what ``len(values)`` calls of :meth:`release` would draw, and adds it the
        same way; the session counts ``len(values)`` releases.  An algorithm whose
        values depend on earlier releases (gradient descent) releases zeros ahead of
        time and adds its values to the noise rows as it goes: the draws are
        independent of the data, so the output and its privacy are the same.

        Parameters
        ----------
        label : str
            A planned line whose mechanism is a :class:`~dpacct.mechanisms.GaussianMechanism`
            (not subsampled).
        values : array_like, shape (k, ...)
            The exact values of ``k >= 1`` releases.

        Returns
        -------
        numpy.ndarray
            The noisy values, shape of ``values``.

        Examples
        --------
        >>> from dpacct.mechanisms import GaussianMechanism
        >>> plan = (PlannedRelease("sum", GaussianMechanism(sigma=1.0), 3, sensitivity=2.0),)
        >>> one = ReleaseSession(plan, np.random.default_rng(0))
        >>> three = [one.release("sum", [0.0, 0.0]) for _ in range(3)]
        >>> batch = ReleaseSession(plan, np.random.default_rng(0))
        >>> bool((batch.release_many("sum", np.zeros((3, 2))) == np.array(three)).all())
        True
        >>> batch.made, batch.finish()
        ({'sum': 3}, None)
        """
        line = self._line(label)
        source = _noise_source(line.mechanism)
        if line.subsampled or not isinstance(source, GaussianMechanism):
            raise TypeError(
                f"release_many needs a planned GaussianMechanism that is not subsampled, "
                f"got {line.mechanism!r} for {label!r}: call release once per release"
            )
        arr = np.asarray(values)
        if arr.ndim < 1 or arr.shape[0] < 1:
            raise ValueError(
                f"values must have a leading axis of length >= 1 (one row per release), "
                f"got shape {arr.shape}"
            )
        k = arr.shape[0]
        if self.made[label] + k > line.count:
            raise RuntimeError(self._too_many(line))
        kwargs = {} if line.sensitivity is None else {"sensitivity": line.sensitivity}
        out = source.release(arr, rng=self.rng, **kwargs)
        self.made[label] += k
        return out

    def finish(self) -> None:
        """Check that every planned release was made exactly its planned number of times."""
        planned = {k: p.count for k, p in self._plan.items()}
        short = {k: (v, planned[k]) for k, v in self.made.items() if v != planned[k]}
        if short:
            detail = ", ".join(f"{k!r}: {m} of {c}" for k, (m, c) in short.items())
            raise RuntimeError(f"releases made differ from the privacy claim ({detail})")

    @staticmethod
    def _too_many(line: PlannedRelease) -> str:
        return (
            f"release {line.label!r} made more often than the {line.count} time(s) its "
            "privacy claim plans"
        )


class Algorithm(Mechanism):
    """A mechanism whose privacy is the composition of the primitives it runs.

    Subclasses implement :meth:`planned_releases`, a tuple of :class:`PlannedRelease`
    lines (each mechanism normalised to unit sensitivity), and run on data through
    ``session = self.releases(rng)``: ``session.release(label, value)`` for every noisy
    quantity, ``session.finish()`` at the end.  :meth:`primitives` -- ``(mechanisms,
    counts)`` -- is derived from the plan, and every privacy query (``epsilon``,
    ``delta``, ``epsilon_bounds``, ``rdp``, ``tradeoff``, ``pld``) is answered by
    :attr:`privacy`, their composition.  The plan is built once per object and
    cached, so the mechanisms that are composed are the very objects that release.

    (A subclass that only describes a privacy claim, without running, may override
    :meth:`primitives` instead; it then has no :meth:`releases`.)

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> @dataclass(frozen=True)
    ... class TwoMeans(Algorithm):
    ...     sigma: float
    ...     def planned_releases(self):
    ...         return (PlannedRelease("sum", GaussianMechanism(sigma=self.sigma), 2),)
    ...     def run(self, a, b, rng):
    ...         session = self.releases(rng)
    ...         out = [session.release("sum", float(np.sum(x))) / len(x) for x in (a, b)]
    ...         session.finish()
    ...         return out
    >>> alg = TwoMeans(sigma=2.0)
    >>> alg.epsilon(1e-5) == compose([GaussianMechanism(sigma=2.0)], counts=[2]).epsilon(1e-5)
    True
    >>> len(alg.run(np.ones(100), np.zeros(100), np.random.default_rng(0)))
    2
    """

    def planned_releases(self) -> tuple[PlannedRelease, ...]:
        """The releases this algorithm makes when it runs (subclasses implement it)."""
        raise NotImplementedError(f"{type(self).__name__} has no planned releases")

    @property
    def plan(self) -> tuple[PlannedRelease, ...]:
        """:meth:`planned_releases`, built once and cached: the objects that release."""
        cache = self._cache()
        if "plan" not in cache:
            plan = tuple(self.planned_releases())
            if not plan or not all(isinstance(p, PlannedRelease) for p in plan):
                raise TypeError(
                    f"{type(self).__name__}.planned_releases must return a non-empty tuple "
                    "of PlannedRelease"
                )
            cache["plan"] = plan
        return cache["plan"]

    def primitives(self) -> tuple[list[Mechanism], list[int]]:
        """The mechanisms this algorithm runs and how many times each (from :attr:`plan`)."""
        plan = self.plan
        return [p.mechanism for p in plan], [p.count for p in plan]

    def releases(self, rng: np.random.Generator) -> ReleaseSession:
        """A :class:`ReleaseSession` of :attr:`plan` drawing from ``rng``: one run.

        Parameters
        ----------
        rng : numpy.random.Generator
            The run's only source of randomness.
        """
        return ReleaseSession(self.plan, rng)

    @property
    def privacy(self) -> Mechanism:
        """The composed mechanism that describes this algorithm's privacy.

        One primitive used once is that primitive itself, so every query (epsilon, the
        bracket, delta, and also ``tradeoff`` and ``rdp``, which a composition of one
        part does not delegate) is answered by its own closed forms, e.g. Laplace's and
        zCDP's exact inversions.
        """
        cache = self._cache()
        if "privacy" not in cache:
            mechanisms, counts = self.primitives()
            if len(mechanisms) == 1 and list(counts) == [1]:
                cache["privacy"] = mechanisms[0]
            else:
                cache["privacy"] = compose(list(mechanisms), counts=list(counts))
        return cache["privacy"]

    # Every privacy query, and every wrapper this algorithm is put in (compose,
    # subsampling, the ledger), reads the curves of :attr:`privacy`: the base class
    # routes through it, so nothing here forwards the engine's private hooks.
    @property
    def neighbouring(self) -> str:  # type: ignore[override]
        """The neighbouring relation of the composed primitives (:attr:`privacy`)."""
        return self.privacy.neighbouring
