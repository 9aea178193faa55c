"""Your own transformations: a function with a declared stability, then a mechanism.

A *transformation* maps a dataset to something a mechanism can release: a number or a
vector (then its distance is L1 or L2) or another dataset, a multiset of records (then
its distance is the symmetric distance, the number of records added or removed).  Its
*stability* ``c`` is the promise that when one record is added to or removed from the
input, the output moves by at most ``c`` in that metric.  The promise is the user's, and
the privacy of everything that follows rests on it: this module cannot check it (a test
helper, :func:`max_observed_distance`, can only look for violations).  For the everyday
steps (select, cast, impute, clamp, resize, sum, count, mean, variance, histogram)
:mod:`dpacct.mechanisms.algorithms.transforms_proved` derives the stability instead.

Composed with a mechanism, the stability turns into privacy:

* **L1 stability c, then Laplace noise of scale b**: the query has L1 sensitivity ``c``,
  so the release is the Laplace mechanism at ``b / c`` per unit of sensitivity, pure
  ``c / b``-DP (Dwork, McSherry, Nissim, Smith 2006; Dwork & Roth 2014, Theorem 3.6).
* **L2 stability c, then Gaussian noise of standard deviation s**: the Gaussian mechanism
  with noise multiplier ``s / c``, whose exact privacy curve is the analytic Gaussian
  (Balle & Wang 2018, Theorem 8).  An L1 stability also bounds the L2 distance
  (``||v||_2 <= ||v||_1``), so it is accepted here too.
* **Symmetric-distance stability k (an integer), then a mechanism on datasets**: two
  neighbouring inputs give outputs at distance at most ``k``, so the mechanism's
  guarantee is needed for datasets ``k`` records apart: group privacy
  (:func:`group_privacy`).  An ``eps``-DP mechanism is ``k eps``-DP on such pairs; an
  ``(eps, delta)``-DP one is ``(k eps, delta (1 + e^eps + ... + e^{(k-1) eps}))``-DP,
  which is at most ``(k eps, k e^{(k-1) eps} delta)`` (Vadhan 2017, "The complexity of
  differential privacy", Lemma 2.2; Dwork & Roth 2014, Theorem 2.2 for pure DP; by
  induction along the chain ``D = D_0, D_1, ..., D_k = D'`` of neighbours:
  ``P_0 <= e^eps P_1 + delta <= e^{2 eps} P_2 + e^eps delta + delta <= ...``).

A transformation may be *randomised* (the random matching of DP Theil-Sen): its
stability is then the claim that the two output laws on neighbouring inputs can be
*coupled* so that the coupled outputs are within ``c`` almost surely.  Conditionally on
the coupling the argument above applies, and it survives the averaging because
hockey-stick divergences are jointly convex.  Without such a coupling there is no claim:
:mod:`dpacct.mechanisms.algorithms.theil_sen` shows a randomised transformation (a random matching)
for which the natural claim ``c = 1`` is false.

The composed object (:class:`TransformedMechanism`) is a dpacct mechanism like any
other: its ``epsilon(delta)``, ``delta(eps)``, ``rdp`` and ``tradeoff`` are those of the
primitive at the scaled sensitivity (or of the group-privacy mechanism), it composes
and calibrates, and its :meth:`~TransformedMechanism.release` draws the noise only
through the primitive's own ``release``.  It is not serialisable (a Python function has
no JSON form); serialise :attr:`~dpacct.mechanisms.Algorithm.privacy` instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpacct.accountant.mechanism import Mechanism
from dpacct.accountant.relations import ADD_REMOVE
from dpacct.accountant.transformers.compose import compose
from dpacct.accountant.validation import (
    check_count,
    check_delta,
    check_positive,
    check_rng,
    show_value,
)

from ..primitives.exponential import ExponentialMechanism
from ..primitives.gaussian import GaussianMechanism
from ..primitives.generic import PureDPMechanism
from ..primitives.laplace import LaplaceMechanism
from .algorithm import Algorithm, PlannedRelease

__all__ = [
    "METRICS",
    "Transformation",
    "TransformedMechanism",
    "group_privacy",
    "max_observed_distance",
    "symmetric_distance",
]

#: the output metrics a transformation can declare its stability in
METRICS = ("l1", "l2", "symmetric")

#: the noise multipliers ``then_gaussian`` accepts: ``1 / sigma**2`` (what composition adds
#: up, Dong, Roth, Su 2019, Corollary 3.3) must neither overflow nor underflow to 0
_MIN_NOISE_MULTIPLIER, _MAX_NOISE_MULTIPLIER = 1e-150, 1e150


def _check_stability(stability: object, metric: str) -> float:
    try:
        c = check_positive("stability", stability)
    except (ValueError, TypeError) as exc:
        raise type(exc)(
            f"stability must be a finite number > 0 (how far the output moves, in "
            f"{metric}, when one record is added or removed), got {show_value(stability)}"
        ) from None
    if metric == "symmetric" and not float(c).is_integer():
        raise ValueError(
            f"stability must be an integer for the symmetric distance (a number of records "
            f"added or removed), got {show_value(stability)}")
    return c


@dataclass(frozen=True)
class Transformation:
    """A user function from a dataset to a value or a dataset, with a declared stability.

    Parameters
    ----------
    function : callable
        ``function(data)``, or ``function(data, rng)`` when ``randomized``.
    stability : float
        The largest distance, in ``metric``, between the outputs on two datasets that
        differ by one added or removed record; > 0 and finite (an integer for
        ``"symmetric"``).  For a randomised function, the distance under some coupling
        of the two output laws, almost surely (module docstring).
    metric : {'l1', 'l2', 'symmetric'}
        The output metric: L1 or L2 norm of the difference of two arrays, or the
        symmetric distance of two multisets of records (their sizes may differ).
    name : str
        A label for the repr and for the planned release (default ``"transformation"``).
    randomized : bool
        Whether ``function`` takes a ``numpy.random.Generator`` as second argument.

    Raises
    ------
    ValueError
        ``stability`` <= 0, NaN or infinite, or not an integer for ``"symmetric"``;
        ``metric`` not one of :data:`METRICS`.
    TypeError
        ``function`` not callable.

    Examples
    --------
    A clipped sum: one record moves it by at most the clipping bound (L1 stability 2).

    >>> clipped_sum = Transformation(lambda x: float(np.clip(x, -2, 2).sum()), 2.0, "l1")
    >>> clipped_sum([1.0, 5.0, -0.5])
    2.5
    >>> release = clipped_sum.then_laplace(scale=4.0)
    >>> release.pure_epsilon                 # c / b
    0.5
    >>> noisy = release.release([1.0, 5.0, -0.5], rng=np.random.default_rng(0))
    """

    function: Callable[..., Any]
    stability: float
    metric: str
    name: str = "transformation"
    randomized: bool = False

    def __post_init__(self) -> None:
        if not callable(self.function):
            raise TypeError(f"function must be callable, got {type(self.function).__name__}")
        if self.metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {self.metric!r}")
        object.__setattr__(self, "stability", _check_stability(self.stability, self.metric))
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a non-empty str, got {self.name!r}")
        if not isinstance(self.randomized, bool):
            raise TypeError(f"randomized must be a bool, got {self.randomized!r}")

    def __call__(self, data: Any, rng: np.random.Generator | None = None) -> Any:
        """Apply the function (``rng`` is required, and only accepted, when randomised)."""
        if self.randomized:
            return self.function(data, check_rng(rng))
        if rng is not None:
            raise TypeError(f"{self.name} is not randomized: it takes no rng")
        return self.function(data)

    def __rshift__(self, other: Transformation) -> Transformation:
        """Chain: ``self`` must output a dataset (symmetric distance); stabilities multiply.

        If one added record moves ``self``'s output by at most ``k`` records, and each of
        those moves ``other``'s output by at most ``c``, the chain moves it by at most
        ``k c`` (triangle inequality along the ``k`` single-record steps).
        """
        if not isinstance(other, Transformation):
            return NotImplemented
        if self.metric != "symmetric":
            raise ValueError(
                f"only a dataset-valued transformation (metric 'symmetric') can be followed "
                f"by another; {self.name} outputs in {self.metric}")
        first, second = self, other

        def chained(data: Any, rng: np.random.Generator | None = None) -> Any:
            mid = first(data, rng) if first.randomized else first(data)
            return second(mid, rng) if second.randomized else second(mid)

        randomized = first.randomized or second.randomized
        fn = chained if randomized else (lambda data: chained(data))
        return Transformation(fn, first.stability * second.stability, second.metric,
                              name=f"{first.name} >> {second.name}", randomized=randomized)

    # -------------------------------------------------------------- measurements
    def then_laplace(self, scale: float) -> TransformedMechanism:
        """Add ``Lap(0, scale)`` noise to the output: pure ``stability / scale``-DP.

        Parameters
        ----------
        scale : float
            The Laplace noise scale actually added, > 0.

        Examples
        --------
        >>> count = Transformation(lambda x: float(len(x)), 1.0, "l1", name="count")
        >>> count.then_laplace(scale=2.0).pure_epsilon
        0.5
        """
        if self.metric != "l1":
            raise ValueError(f"Laplace noise needs an L1 stability; {self.name} declares "
                             f"{self.metric}")
        b = check_positive("scale", scale)
        return TransformedMechanism(self, LaplaceMechanism(b=b / self.stability))

    def then_gaussian(self, scale: float) -> TransformedMechanism:
        """Add ``N(0, scale^2)`` noise to the output: the Gaussian mechanism at ``scale / c``.

        Parameters
        ----------
        scale : float
            The standard deviation of the noise actually added, > 0, with
            ``scale / stability`` (the noise multiplier) in ``[1e-150, 1e150]``.

        Examples
        --------
        >>> mean = Transformation(lambda x: np.clip(x, 0, 1).sum(0), 1.0, "l2")
        >>> mean.then_gaussian(scale=3.0).primitive     # noise multiplier s / c
        GaussianMechanism(sigma=3.0)
        """
        if self.metric not in ("l1", "l2"):
            raise ValueError(f"Gaussian noise needs an L2 (or L1) stability; {self.name} "
                             f"declares {self.metric}")
        s = check_positive("scale", scale)
        sigma = s / self.stability
        if not _MIN_NOISE_MULTIPLIER <= sigma <= _MAX_NOISE_MULTIPLIER:
            raise ValueError(
                f"scale / stability (the noise multiplier) must lie in [1e-150, 1e150], so "
                f"that its squared inverse, which composition adds up, is a float; got "
                f"scale={s!r} / stability={self.stability!r} = {sigma!r}"
            )
        return TransformedMechanism(self, GaussianMechanism(sigma=sigma))

    def then(self, mechanism: Mechanism, method: str, *, delta: float | None = None,
             **kwargs: Any) -> TransformedMechanism:
        """Run a dataset mechanism on the output: group privacy at distance ``stability``.

        Parameters
        ----------
        mechanism : Mechanism
            A dpacct mechanism on datasets (an algorithm such as
            :class:`~dpacct.mechanisms.ExponentialQuantile`), under add/remove.
        method : str
            Its method that runs on data: called as ``getattr(mechanism, method)(output,
            **kwargs, rng=rng)``.
        delta : float, optional
            For a mechanism without a pure epsilon: the delta at which its
            ``(eps, delta)`` guarantee enters group privacy (:func:`group_privacy`).
        **kwargs
            Passed on to ``method``.

        Examples
        --------
        >>> from dpacct.mechanisms import ExponentialQuantile
        >>> doubled = Transformation(lambda x: np.concatenate([x, x]), 2, "symmetric")
        >>> median = doubled.then(ExponentialQuantile(epsilon0=0.5, lower=0, upper=10),
        ...                       "quantile", q=0.5)
        >>> median.primitive                # bounded range is closed under chaining
        ExponentialMechanism(epsilon=1.0, bounded_range=True)
        >>> 0.0 <= median.release(np.arange(10.0), rng=np.random.default_rng(0)) <= 10.0
        True
        """
        if self.metric != "symmetric":
            raise ValueError(f"a mechanism on datasets needs a symmetric-distance stability; "
                             f"{self.name} declares {self.metric}")
        if not isinstance(method, str) or not callable(getattr(mechanism, method, None)):
            raise ValueError(f"method must name a method of {mechanism!r} that runs on data, "
                             f"got {method!r}")
        group = group_privacy(mechanism, int(self.stability), delta=delta)
        return TransformedMechanism(self, group, inner=mechanism, method=method,
                                    kwargs=tuple(kwargs.items()))


def _chain_sum(epsilon: float, k: int) -> float:
    """``1 + e^eps + ... + e^{(k-1) eps}``, the delta multiplier of k-fold group privacy."""
    if epsilon == 0.0:
        return float(k)
    if k * epsilon > 700.0:
        return math.inf
    return math.expm1(k * epsilon) / math.expm1(epsilon)


def group_privacy(mechanism: Mechanism, k: int, *, delta: float | None = None) -> Mechanism:
    """A mechanism whose guarantee on neighbours is ``mechanism``'s on datasets ``k`` apart.

    The tightest of these sound routes that applies (all under add/remove, chaining the
    guarantee along ``k`` neighbouring steps ``D_0, ..., D_k``):

    * ``k = 1``: the mechanism itself.
    * An algorithm (composition of planned primitives): the composition of each
      primitive's group mechanism, when every primitive has a pure epsilon (each
      primitive is ``k``-group private on the same pair, and composition theorems hold
      for any fixed pair of inputs).
    * An :class:`~dpacct.mechanisms.ExponentialMechanism` with parameter ``eps``
      (``eps``-bounded range, Durfee & Rogers 2019): the privacy loss on ``(D_0, D_k)`` is
      the sum of the ``k`` losses along the chain, whose ranges add, so it is
      ``k eps``-bounded range: ``ExponentialMechanism(k eps)``.
    * A finite pure epsilon: ``PureDPMechanism(k eps)`` (Dwork & Roth 2014, Theorem 2.2).
    * Otherwise ``(eps, delta)`` with ``eps = mechanism.epsilon(delta)``:
      ``(k eps, delta (e^{k eps} - 1) / (e^eps - 1))``, at most ``(k eps, k e^{(k-1) eps}
      delta)`` (Vadhan 2017, Lemma 2.2).  ``delta`` must then be given.

    Parameters
    ----------
    mechanism : Mechanism
        Under the add/remove relation.
    k : int
        The distance, >= 1.
    delta : float, optional
        Only for mechanisms without a pure epsilon, in (0, 1).

    Returns
    -------
    Mechanism

    Examples
    --------
    >>> group_privacy(LaplaceMechanism(b=2.0), 3).pure_epsilon
    1.5
    >>> m = group_privacy(GaussianMechanism(sigma=2.0), 2, delta=1e-6)
    >>> e1 = GaussianMechanism(sigma=2.0).epsilon(1e-6)
    >>> bool(m.epsilon(1e-6 * (1 + np.exp(e1))) <= 2 * e1 + 1e-12)
    True
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a Mechanism, got {type(mechanism).__name__}")
    k = check_count(k, "k")
    if mechanism.neighbouring != ADD_REMOVE:
        raise ValueError(f"group privacy here chains add/remove steps; {mechanism!r} is "
                         f"accounted under {mechanism.neighbouring!r}")
    if k == 1:
        return mechanism
    if isinstance(mechanism, Algorithm):
        mechs, counts = mechanism.primitives()
        if all(math.isfinite(m.pure_epsilon) for m in mechs):
            if len(mechs) == 1 and counts[0] == 1:
                return group_privacy(mechs[0], k)
            return compose([group_privacy(m, k) for m in mechs], counts=list(counts))
    if isinstance(mechanism, ExponentialMechanism) and mechanism.bounded_range:
        return ExponentialMechanism(epsilon=k * mechanism.epsilon0)
    eps_pure = mechanism.pure_epsilon
    if math.isfinite(eps_pure):
        return PureDPMechanism(epsilon=k * eps_pure)
    if delta is None:
        raise ValueError(
            f"delta is required for the group privacy of {mechanism!r}, which has no pure "
            "epsilon: its (epsilon(delta), delta) guarantee is chained k times")
    d = check_delta(delta)
    if not 0.0 < d < 1.0:
        raise ValueError(f"delta must lie in (0, 1), got {show_value(delta)}")
    eps = float(mechanism.epsilon(d))
    d_k = d * _chain_sum(eps, k)
    if not d_k < 1.0:
        raise ValueError(
            f"group privacy at k = {k} from ({eps:.4g}, {d:.3g}) gives delta {d_k:.3g} >= 1: "
            "no guarantee; use a smaller delta")
    return Mechanism.from_epsilon_delta(k * eps, d_k)


@dataclass(frozen=True, repr=False)
class TransformedMechanism(Algorithm):
    """A transformation followed by a mechanism: the release and its privacy, together.

    Built by :meth:`Transformation.then_laplace`, :meth:`Transformation.then_gaussian` and
    :meth:`Transformation.then`.  For Laplace or Gaussian noise the plan is one release
    of ``primitive`` (noise per unit of sensitivity) at sensitivity ``stability``, so the
    noise drawn is the scale asked for and the privacy is ``primitive``'s.  For a
    mechanism on datasets, ``primitive`` is its group-privacy mechanism
    (:func:`group_privacy`) and the release runs ``inner``'s ``method`` on the
    transformed dataset (which draws through ``inner``'s own planned releases).

    Parameters
    ----------
    transformation : Transformation
        The user function with its declared stability.
    primitive : Mechanism
        The privacy of the whole: the noise primitive, or the group-privacy mechanism.
    inner : Mechanism, optional
        The mechanism on datasets (``then`` only).
    method : str, optional
        ``inner``'s method that runs on data.
    kwargs : tuple of (str, object) pairs
        Extra keyword arguments of ``method``.

    Examples
    --------
    >>> t = Transformation(lambda x: float(np.clip(x, 0, 1).sum()), 1.0, "l1", name="sum")
    >>> m = t.then_laplace(scale=2.0)
    >>> m
    TransformedMechanism(sum, LaplaceMechanism(b=2.0))
    >>> m.epsilon(1e-6) == LaplaceMechanism(b=2.0).epsilon(1e-6)
    True
    """

    transformation: Transformation
    primitive: Mechanism
    inner: Mechanism | None = None
    method: str | None = None
    kwargs: tuple = ()

    def __repr__(self) -> str:
        return f"TransformedMechanism({self.transformation.name}, {self.primitive!r})"

    @property
    def label(self) -> str:
        """The planned release's label: ``"<name>(data)"``."""
        return f"{self.transformation.name}(data)"

    def planned_releases(self) -> tuple[PlannedRelease, ...]:
        """One release of the noise primitive at sensitivity ``stability`` (noise only)."""
        if self.inner is not None:
            raise NotImplementedError("a mechanism on datasets releases through its own plan")
        return (PlannedRelease(self.label, self.primitive, 1,
                               sensitivity=self.transformation.stability),)

    def primitives(self) -> tuple[list[Mechanism], list[int]]:
        """The noise primitive, or the group-privacy mechanism of ``inner``."""
        if self.inner is not None:
            return [self.primitive], [1]
        return super().primitives()

    def release(self, data: Any, *, rng: np.random.Generator) -> Any:
        """Transform ``data`` and release the result through the mechanism.

        Parameters
        ----------
        data : object
            The input dataset, as ``transformation.function`` takes it.
        rng : numpy.random.Generator
            The only source of randomness (the transformation's, if randomised, and the
            noise).

        Returns
        -------
        object
            The noisy value (Laplace, Gaussian) or the mechanism's output.
        """
        rng = check_rng(rng)
        t = self.transformation
        value = t(data, rng) if t.randomized else t(data)
        if self.inner is not None:
            return getattr(self.inner, self.method)(value, **dict(self.kwargs), rng=rng)
        session = self.releases(rng)
        out = session.release(self.label, value)
        session.finish()
        return out


# ---------------------------------------------------------------------- test helpers
def symmetric_distance(a: Iterable[Any], b: Iterable[Any]) -> int:
    """Symmetric distance of two multisets of records (rows compared exactly).

    ``|A \\ B| + |B \\ A|`` counted with multiplicity: the number of records to add or
    remove to turn one into the other.

    Examples
    --------
    >>> symmetric_distance([1, 2, 2, 3], [2, 3, 4])
    3
    """
    from collections import Counter

    def key(r: Any) -> Any:
        return tuple(np.ravel(r).tolist()) if np.ndim(r) else r

    ca, cb = Counter(key(r) for r in a), Counter(key(r) for r in b)
    return sum(((ca - cb) + (cb - ca)).values())


def max_observed_distance(transformation: Transformation, datasets: Iterable[Any],
                          *, rng: np.random.Generator, trials: int = 200) -> float:
    """Largest output distance seen over random neighbours of the given datasets.

    A test helper, not a proof: for each dataset ``D`` (a 1-D or 2-D array of records)
    it draws ``trials`` neighbours (one random record removed, or one record of ``D``
    duplicated then perturbed, added) and measures the distance of the outputs in the
    transformation's metric.  Randomised transformations are not accepted (their
    stability is a statement about a coupling, which sampling cannot check).

    Parameters
    ----------
    transformation : Transformation
        Deterministic.
    datasets : iterable of array_like
        Datasets of at least two records.
    rng : numpy.random.Generator
    trials : int
        Neighbours per dataset, >= 1.

    Examples
    --------
    >>> t = Transformation(lambda x: float(np.clip(x, 0, 1).sum()), 1.0, "l1")
    >>> d = max_observed_distance(t, [np.linspace(0, 2, 9)], rng=np.random.default_rng(0))
    >>> 0.0 < d <= 1.0
    True
    """
    if transformation.randomized:
        raise ValueError("max_observed_distance checks deterministic transformations only")
    rng = check_rng(rng)
    trials = check_count(trials, "trials")
    worst = 0.0
    for data in datasets:
        d = np.asarray(data, dtype=float)
        base = transformation(d)
        for _ in range(trials):
            if rng.random() < 0.5:
                nb = np.delete(d, rng.integers(d.shape[0]), axis=0)
            else:
                extra = d[rng.integers(d.shape[0])] * rng.uniform(-3, 3, size=d.shape[1:])
                nb = np.concatenate([d, np.asarray(extra)[None, ...]], axis=0)
            out = transformation(nb)
            if transformation.metric == "symmetric":
                dist = float(symmetric_distance(base, out))
            else:
                diff = np.ravel(np.asarray(out, dtype=float) - np.asarray(base, dtype=float))
                dist = float(np.abs(diff).sum() if transformation.metric == "l1"
                             else np.sqrt((diff ** 2).sum()))
            worst = max(worst, dist)
    return worst
