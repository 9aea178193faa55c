"""Private quantiles by the exponential mechanism (Smith 2011): :class:`ExponentialQuantile`.

Part of :mod:`dpacct.mechanisms.algorithms.quantiles`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpacct.accountant.serialization import register_mechanism
from dpacct.accountant.validation import check_count, check_positive, check_rng, show_value

from ..primitives.exponential import ExponentialMechanism
from ..primitives.permute_and_flip import PermuteAndFlip
from .algorithm import Algorithm, PlannedRelease
from .quantile_readout import check_data, check_out_of_range, check_quantile, check_range

__all__ = ["ExponentialQuantile", "quantile_sensitivity", "smith_pieces", "smith_quantile"]


def quantile_sensitivity(q: float) -> float:
    """Add/remove sensitivity ``max(q, 1 - q)`` of Smith's ``q``-quantile utility.

    The utility of an output ``y`` is ``u(x, y) = -|r_x(y) - q n|`` with ``r_x(y) =
    #{x_i < y}`` and ``n = |x|``.  Adding a record ``z`` turns ``r(y) - q n`` into ``r(y) -
    q n + t(y)`` with ``t(y) = 1 - q`` if ``z < y`` and ``t(y) = -q`` otherwise, so by the
    triangle inequality ``|u(x + z, y) - u(x, y)| <= |t(y)| <= max(q, 1 - q)`` for every
    ``y``; removing a record is the same step read backwards.  The bound is attained
    (``y`` above every point and ``z``: the change is ``1 - q``; ``y`` at or below every
    point and ``z``: ``q``).  It is 1/2 at the median, 3/4 at the
    quartiles, 1 only at ``q`` in ``{0, 1}``.

    Examples
    --------
    >>> quantile_sensitivity(0.5), quantile_sensitivity(0.25), quantile_sensitivity(0.9)
    (0.5, 0.75, 0.9)
    """
    return max(float(q), 1.0 - float(q))


def smith_pieces(values: np.ndarray, q: float, lower: float, upper: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Scores and piece boundaries of Smith's quantile utility on ``[lower, upper]``.

    Smith 2011, Section 3: the utility of an output ``y`` is ``u(y) = -|#{v < y} - q m|``
    (``m = len(values)``), constant between consecutive order statistics.  With ``z_0 =
    lower <= z_1 <= ... <= z_m <= z_{m+1} = upper`` (the values placed on the output
    range: a value below ``lower`` is below every output, so it counts in every rank,
    exactly like a value at ``lower``) piece ``[z_i, z_{i+1}]`` has score ``-|i - q m|``.

    Returns
    -------
    (scores, edges) : tuple of numpy.ndarray
        ``m + 1`` scores and ``m + 2`` edges, for ``ExponentialMechanism.release(scores,
        edges=edges, ...)``.

    Examples
    --------
    >>> scores, edges = smith_pieces(np.array([2.0, 1.0]), 0.5, 0.0, 4.0)
    >>> scores.tolist(), edges.tolist()
    ([-1.0, 0.0, -1.0], [0.0, 1.0, 2.0, 4.0])
    """
    m = values.size
    z = np.concatenate([[lower], np.sort(np.clip(values, lower, upper)), [upper]])
    return -np.abs(np.arange(m + 1, dtype=float) - q * m), z


def smith_quantile(values: np.ndarray, q: float, mechanism: ExponentialMechanism,
                   sensitivity: float, lower: float, upper: float,
                   rng: np.random.Generator) -> float:
    """One draw of Smith's exponential-mechanism quantile on ``[lower, upper]``.

    The output density on ``[lower, upper]`` is ``∝ exp(epsilon0 u(y) / (2 Delta))``
    for Smith's utility (:func:`smith_pieces`), ``epsilon0 = mechanism.epsilon0`` and
    ``Delta = sensitivity``: the continuous exponential mechanism over the pieces,
    drawn by ``mechanism.release(scores, edges=edges, ...)`` (piece ``i`` with
    probability ``∝ (z_{i+1} - z_i) exp(epsilon0 score_i / (2 Delta))`` by the
    Gumbel-max trick, then a uniform point inside it).

    Examples
    --------
    >>> v = np.arange(1.0, 100.0)
    >>> em = ExponentialMechanism(epsilon=100.0)
    >>> y = smith_quantile(v, 0.5, em, 1.0, 0.0, 100.0, np.random.default_rng(0))
    >>> 49.0 <= y <= 51.0
    True
    """
    scores, edges = smith_pieces(values, q, lower, upper)
    return mechanism.release(scores, sensitivity=sensitivity, rng=rng, edges=edges)


@register_mechanism("exponential_quantile")
@dataclass(frozen=True, repr=False)
class ExponentialQuantile(Algorithm):
    """A private quantile by the exponential mechanism (Smith 2011).

    Utility ``u(x, y) = -|#{x_i < y} - q n|`` for outputs ``y``: under add/remove the
    rank changes by at most 1 and ``q n`` by ``q``, in opposite directions for ``y``
    above the record and in the same one below it, so ``u`` changes by at most
    ``Delta_q = max(q, 1 - q)`` (:func:`quantile_sensitivity`; 1/2 at the median).  The
    mechanism scores with the normalised utility ``u / Delta_q``, of sensitivity 1:

    * ``candidates="intervals"`` (default, Smith 2011, Section 3): the output density
      on ``[lower, upper]`` is ``∝ exp(epsilon0 u / (2 Delta_q))`` with respect to
      length: an interval between consecutive sorted points (and the range ends) is
      drawn with probability ``∝ length * exp(-epsilon0 |rank - q n| / (2 Delta_q))``,
      then a uniform point inside it (:func:`smith_quantile`).
    * ``candidates="grid"``: the exponential mechanism over ``grid_size`` equally
      spaced points of the range, with the same utility; or, with
      ``selection="permute_and_flip"``, permute-and-flip over them (McKenna & Sheldon
      2020, Theorem 1: ``epsilon0``-DP with the same exponent ``epsilon0 u / (2
      Delta_q)``, and never less accurate in expected utility; what OpenDP's
      ``make_private_quantile`` draws).  It is accounted as pure ``epsilon0``-DP
      (:class:`~dpacct.mechanisms.PermuteAndFlip`), not by the tighter bounded-range
      curves: pick it for one release at pure DP, the exponential mechanism for
      releases composed under ``(epsilon, delta)``.

    Privacy.  Both are instances of the exponential mechanism (McSherry & Talwar 2007,
    Theorem 6) with a utility of sensitivity ``Delta_q`` and exponent ``epsilon0 u / (2
    Delta_q)``; the privacy loss ``L(y) = (epsilon0 / (2 Delta_q)) (u(x, y) - u(x', y))
    + log(Z(x') / Z(x))`` has range at most ``epsilon0`` (the utility difference lies in
    ``[-Delta_q, Delta_q]``), so the mechanism is ``epsilon0``-bounded-range (Durfee &
    Rogers 2019), hence ``epsilon0``-DP.  The factor 2 stays: the utility is not
    monotone in the dataset (adding a record raises the utility of some outputs and
    lowers that of others), so the one-sided ``epsilon0 u / Delta`` exponent does not
    apply.  The exact privacy loss on small neighbouring datasets is computed in
    ``tests/test_quantile_exponential.py``: at ``epsilon0 = 1``, on datasets of up to 3
    records, the loss range ``max L - min L`` equals ``epsilon0`` at ``q = 1/2`` and
    ``1/4`` and ``max |L|`` reaches 0.82 to 0.95 (docs/theory/algorithms.md, section
    'Exponential quantile').
    :class:`~dpacct.mechanisms.ExponentialMechanism` accounts the release by the
    tight curves of the bounded-range class.  That is never looser than
    :class:`~dpacct.mechanisms.primitives.generic.PureDPMechanism` (also sound, as the mechanism is
    ``epsilon0``-DP) and strictly tighter: for the mechanism alone ``delta(0) =
    tanh(epsilon0/4)`` instead of ``tanh(epsilon0/2)``, and its RDP curve is smaller, so
    compositions are tighter too (one release keeps the exact bounded-range curve;
    several compose through its RDP curve).  Each call of :meth:`quantile` is one such
    release, whatever ``q`` (the planned release is the normalised utility at
    sensitivity 1).

    Parameters
    ----------
    epsilon0 : float
        The pure-DP parameter of the exponential mechanism, > 0 (named as
        ``ExponentialMechanism.epsilon0``: ``epsilon`` is the privacy query method).
    lower, upper : float
        Declared data range, finite, ``lower < upper``; the output lies in it.
    candidates : {'intervals', 'grid'}
    grid_size : int
        Number of grid points for ``candidates="grid"``, >= 2.
    selection : {'exponential', 'permute_and_flip'}
        How a grid point is selected (default the exponential mechanism);
        ``"permute_and_flip"`` needs ``candidates="grid"``.
    out_of_range : {'raise', 'clip'}
        Data outside ``[lower, upper]``: raise (default) or clip to the range (a
        per-record map: the utility's sensitivity stays ``max(q, 1 - q)``).

    Examples
    --------
    >>> from dpacct.accountant import compose
    >>> from dpacct.mechanisms.primitives.generic import PureDPMechanism
    >>> alg = ExponentialQuantile(epsilon0=1.0, lower=-10.0, upper=10.0)
    >>> bool(alg.delta(0.0) < compose([PureDPMechanism(epsilon=1.0)]).delta(0.0))
    True
    >>> x = np.random.default_rng(0).normal(size=1001)
    >>> med = alg.quantile(x, 0.5, rng=np.random.default_rng(1))
    >>> bool(abs(med - np.median(x)) < 0.05)
    True
    """

    epsilon0: float
    lower: float
    upper: float
    candidates: str = "intervals"
    grid_size: int = 1024
    out_of_range: str = "raise"
    selection: str = "exponential"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon0", check_positive("epsilon0", self.epsilon0))
        lo, hi = check_range(self.lower, self.upper)
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        if self.candidates not in ("intervals", "grid"):
            raise ValueError(f"candidates must be 'intervals' or 'grid', got "
                             f"{self.candidates!r}")
        g = check_count(self.grid_size, "grid_size")
        if g < 2:
            raise ValueError(f"grid_size must be an integer >= 2, got {g}")
        object.__setattr__(self, "grid_size", g)
        object.__setattr__(self, "out_of_range", check_out_of_range(self.out_of_range))
        if self.selection not in ("exponential", "permute_and_flip"):
            raise ValueError(f"selection must be 'exponential' or 'permute_and_flip', got "
                             f"{self.selection!r}")
        if self.selection == "permute_and_flip" and self.candidates != "grid":
            raise ValueError("selection='permute_and_flip' needs candidates='grid' (it "
                             "selects among finitely many candidates)")

    def planned_releases(self) -> tuple[PlannedRelease, ...]:
        """One ``epsilon0``-bounded-range exponential mechanism or ``epsilon0``-DP
        permute-and-flip.

        Its utility is Smith's divided by its sensitivity ``max(q, 1 - q)``, so the
        planned sensitivity is 1.
        """
        select = (PermuteAndFlip if self.selection == "permute_and_flip"
                  else ExponentialMechanism)
        return (PlannedRelease("quantile", select(epsilon=self.epsilon0), 1),)

    def quantile(self, data: object, q: float, *, rng: np.random.Generator) -> float:
        """Release one private ``q``-quantile of ``data`` (one exponential mechanism).

        Parameters
        ----------
        data : array_like
            One-dimensional finite values in ``[lower, upper]`` (``out_of_range``
            decides what happens to others).
        q : float
            Quantile level, in [0, 1].
        rng : numpy.random.Generator
            The source of the noise.

        Examples
        --------
        >>> alg = ExponentialQuantile(epsilon0=2.0, lower=0.0, upper=100.0,
        ...                           candidates="grid", grid_size=101)
        >>> alg.quantile(np.arange(100.0), 0.25, rng=np.random.default_rng(0)) in range(20, 31)
        True
        """
        check_rng(rng)
        qv = check_quantile(q)
        if qv.ndim != 0:
            shown = show_value(q)
            raise ValueError(f"q must be a scalar in [0, 1] (one release per call), got {shown}")
        qf = float(qv)
        x = check_data("data", data, self.lower, self.upper, out_of_range=self.out_of_range)
        session = self.releases(rng)
        # the utility divided by its sensitivity max(q, 1 - q): the planned sensitivity 1
        norm = quantile_sensitivity(qf)
        if self.candidates == "intervals":
            scores, edges = smith_pieces(x, qf, self.lower, self.upper)
            out = session.release("quantile", scores / norm, edges=edges)
        else:
            grid = np.linspace(self.lower, self.upper, self.grid_size)
            ranks = np.searchsorted(np.sort(x), grid, side="left")
            out = float(grid[session.release("quantile",
                                             -np.abs(ranks - qf * x.size) / norm)])
        session.finish()
        return out
