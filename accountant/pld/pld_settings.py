"""PLD grid settings: how finely, and with how much tail mass cut, a mechanism's
privacy loss is discretised for a requested tolerance and target delta.

:class:`PLDSettings` holds the policy (resolution from the tolerance, the tail budget
from delta, the step cap of a refinement); :func:`grid_step` and
:func:`discretize_law` apply it to one loss law.  The routes of
:mod:`dpacct.accountant.routes` choose the settings; :class:`GridPLD` and the two-scale
discretisation do the work.  The tuning of each constant is recorded in
``docs/design.md`` (section "PLD grid policy").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..laws.loss_law import PrivacyLossLaw
from ..validation import check_probability, check_tol

if TYPE_CHECKING:  # (the grid modules load where a law is discretised: issue 37)
    from .grid import GridPLD

__all__ = [
    "CAP_STEPS",
    "DEFAULT_RESOLUTION",
    "DEFAULT_TAIL",
    "DEFAULT_TOL",
    "FIRST_LEVEL_FRACTION",
    "LAW_TAIL_FRACTION",
    "MAX_REFINEMENTS",
    "MIN_CAP",
    "MIN_TOL",
    "REFINE_STEPS",
    "SHARED_GRID_SHARE",
    "TOL_CHECK_ABOVE",
    "TOL_CHECK_STEPS",
    "TOL_MAX_HALVINGS",
    "TOL_REFINEMENTS",
    "PLDSettings",
    "TailBudget",
    "discretize_law",
    "grid_step",
    "tail_budget",
    "tail_budgets",
]

#: default grid points per robust standard deviation of the privacy loss (grid steps
#: are powers of two, so this acts through thresholds; tuning: docs/design.md)
DEFAULT_RESOLUTION = 320.0
#: an answer epsilon within this many grid steps of zero has its PLDs recomputed on
#: grids capped at ``epsilon / CAP_STEPS``, at most ``MAX_REFINEMENTS`` times (see
#: :func:`~dpacct.accountant.routes.pld_upper`)
REFINE_STEPS = 32.0
CAP_STEPS = 64.0
MAX_REFINEMENTS = 3
#: an upper end at least this large has its bracket checked against ``tol`` and its
#: grids refined while wider (:func:`~dpacct.accountant.routes.pld_upper`), at most
#: ``TOL_REFINEMENTS`` times, each by at most ``TOL_MAX_HALVINGS`` halvings of the step:
#: a bimodal loss (a subsampled Gaussian at q ~ 0.5 and sigma < 0.1) has a spread of
#: hundreds, and the first grid's step (chosen from it) was up to 14 tolerances of
#: epsilon (issue 37; benchmarks/tol_and_tails.py ``--tol``).  Below it every answer keeps
#: its grids (epsilon <= 32 met ``tol`` on that benchmark's every row)
TOL_CHECK_ABOVE = 32.0
#: ... and only for compositions of at most this many steps: the check's optimistic
#: PLDs cost as much as the answer (the README's 100 000-step ledger, epsilon 46.55:
#: 0.05 -> 0.26 s for a bracket already within tol); compositions of 1 000 steps and
#: DP-SGD met ``tol`` without it on every row measured (session 33)
TOL_CHECK_STEPS = 1000
TOL_REFINEMENTS = 2
TOL_MAX_HALVINGS = 8
#: no grid is refined below this step (``e^step - 1`` keeps about 11 digits; see
#: :class:`dpacct.accountant.transformers.subsample._GridSafeSubsampledLaw`)
MIN_CAP = 2.0**-36
#: default relative tolerance the resolution is tuned for
DEFAULT_TOL = 1e-4
#: smallest tolerance the grids follow (see :class:`PLDSettings`)
MIN_TOL = 3e-7
#: probability mass the PLD tail cuts may move in total, when no target delta is known
DEFAULT_TAIL = 1e-14
#: share of a PLD's tail budget that the discretisation of one law may cut (the rest
#: goes to the compositions that follow it)
LAW_TAIL_FRACTION = 1e-3
#: share of the target delta that the shared-grid DP-SGD paths give to their tail cuts
#: in total, and again to each side of their circular convolution's wrap-around
#: (:func:`tail_budgets`)
SHARED_GRID_SHARE = 1e-4

#: the spectral power's certificate limit, in tail budgets, of a composition that only
#: screens a direction (instead of
#: :data:`~dpacct.accountant.pld.twoscale.SPECTRAL_ERR_TAILS`): the add
#: direction's first try on coarse settings (:meth:`PLDPair.epsilon
#: <dpacct.accountant.pld.pld_pair.PLDPair.epsilon>`), whose epsilon is only compared
#: with the remove direction's (when it is not below, the add direction is composed
#: again on the full settings, with ``SPECTRAL_ERR_TAILS``).  Measured (issue 37,
#: q 0.004, sigma 0.8, T 1e6): that add direction's spectral power takes over at level
#: 8 instead of 13 (its certificate 1.4e-10, 140 budgets of that ladder's 1e-12; the
#: limit 1e-9 is 1e-4 delta, a tenth of what the router's RDP skip allows at +inf), the
#: answer unchanged (61.83812571008151) and a cold epsilon 1.08x faster (old / new CPU,
#: median of 11 alternated rounds, load 14)
SCREEN_ERR_TAILS = 1000.0


class PLDSettings:
    """Grid settings derived from a requested relative tolerance on epsilon.

    The discretisation error of both PLD bounds shrinks like the square of the grid
    step, so the resolution (grid points per standard deviation of the loss) grows
    like ``1/sqrt(tol)``, up to ``MIN_TOL``: below it the grids would outgrow the
    two-scale size guards, which then widen the coarse tail and loosen the bounds, so
    smaller tolerances are answered as ``MIN_TOL``.

    Parameters
    ----------
    tol : float, optional
        Relative accuracy wanted on epsilon, in (0, 0.5); None: ``DEFAULT_TOL``.
    delta : float, optional
        The target delta, which sets the mass the tail cuts may move
        (:func:`tail_budget`); None: ``DEFAULT_TAIL``.

    Examples
    --------
    >>> PLDSettings(tol=1e-3).resolution < PLDSettings(tol=1e-5).resolution
    True
    """

    __slots__ = ("coarse_cap", "err_tails", "first_fraction", "resolution", "tail")

    def __init__(self, tol: float | None = None, delta: float | None = None) -> None:
        tol = check_tol(tol)
        if tol is not None:
            tol = max(tol, MIN_TOL)
        scale = math.sqrt(DEFAULT_TOL / (tol or DEFAULT_TOL))
        self.resolution = max(DEFAULT_RESOLUTION * scale, 16.0)
        # tighter tolerances also cut less mass into delta (the default budget alone
        # moves epsilon by a few 1e-6 relative)
        self.tail = tail_budget(delta) * min(1.0, (tol or DEFAULT_TOL) / DEFAULT_TOL)
        #: largest step any grid may use (``None``: chosen from the loss's spread alone);
        #: set by :meth:`capped` when an answer turns out small next to the grid
        self.coarse_cap: float | None = None
        #: fraction of the resolution the first optimistic discretisation uses
        #: (``None``: ``FIRST_LEVEL_FRACTION``); see
        #: :func:`~dpacct.accountant.routes.epsilon_bracket`
        self.first_fraction: float | None = None
        #: the spectral power's certificate limit in tail budgets (``None``:
        #: :data:`~dpacct.accountant.pld.twoscale.SPECTRAL_ERR_TAILS`); larger for
        #: grids that only screen a direction (:meth:`screening`)
        self.err_tails: float | None = None

    def key(self) -> tuple:
        """A hashable summary of the settings, for caching PLDs built with them."""
        return (
            round(self.resolution, 6), self.tail, self.coarse_cap, self.first_fraction,
            self.err_tails,
        )

    def copy(self) -> PLDSettings:
        """A copy of every field."""
        out = PLDSettings.__new__(PLDSettings)
        for name in PLDSettings.__slots__:
            setattr(out, name, getattr(self, name))
        return out

    def capped(self, cap: float) -> PLDSettings:
        """A copy whose grids never use a step above ``cap`` (rounded down to a power of two).

        Parameters
        ----------
        cap : float
            Largest grid step, > 0.
        """
        out = self.copy()
        out.coarse_cap = 2.0 ** math.floor(math.log2(cap))
        return out

    def screening(self, err_tails: float) -> PLDSettings:
        """A copy for PLDs that only screen a direction (their epsilon is compared with
        another's, never returned): the spectral power's certificate may reach
        ``err_tails`` tail budgets, so the squaring ladder stops sooner (issue 37).

        Parameters
        ----------
        err_tails : float
            Certificate limit in tail budgets, > 0.
        """
        if not err_tails > 0:
            raise ValueError(f"err_tails must be > 0, got {err_tails!r}")
        out = self.copy()
        out.err_tails = float(err_tails)
        return out

    def with_first_fraction(self, fraction: float) -> PLDSettings:
        """A copy whose first optimistic discretisation uses a fraction of the resolution.

        Parameters
        ----------
        fraction : float
            Fraction of the resolution, > 0 (instead of
            ``FIRST_LEVEL_FRACTION``).
        """
        out = self.copy()
        out.first_fraction = fraction
        return out

    def resolution_for(self, pessimistic: bool) -> float:
        """Points per spread for one certificate direction.

        The optimistic construction loses more per coarsening than the pessimistic
        one, so a loose tolerance never takes it below the default resolution: the
        bracket stays narrow while the upper bound (the answer) gets faster.

        Parameters
        ----------
        pessimistic : bool
            True for the upper-bound (pessimistic) discretisation, False for the
            lower-bound one.
        """
        if pessimistic:
            return self.resolution
        return max(self.resolution, DEFAULT_RESOLUTION)


def tail_budget(delta: float | None) -> float:
    """Total mass the PLD tail cuts may move: a millionth of the target delta.

    Rounded down to a power of ten (so that nearby deltas share one cached PLD) and
    kept within [1e-16, 1e-12]; without a target delta it is ``DEFAULT_TAIL``.  This
    budget is for the top cuts, whose mass goes to +inf; bottom cuts get a hundred
    times more (:meth:`GridPLD.convolve`).

    Parameters
    ----------
    delta : float, optional
        The target delta, in (0, 1].

    Examples
    --------
    >>> tail_budget(1e-5), tail_budget(None)
    (1e-12, 1e-14)
    """
    if delta is None:
        return DEFAULT_TAIL
    delta = check_probability("delta", delta, high_open=False)
    exponent = math.floor(math.log10(delta * 1e-6))
    return 10.0 ** min(max(exponent, -16), -12)


@dataclass(frozen=True)
class TailBudget:
    """The probability mass a PLD computation may move into its certificate.

    Every field is a P-mass whose move can only raise an upper bound on delta (a top
    cut goes to ``+inf``) or lower a lower bound, so each is a slack of the
    certificate, never a soundness condition; see :func:`tail_budgets`.

    Attributes
    ----------
    engine : float
        Total mass the general engine's top tail cuts may move
        (:func:`tail_budget`; :class:`PLDSettings` scales it with the tolerance).
    cut : float
        Total mass the shared-grid paths' tail cuts may move, over all pieces.
    piece : float
        Each piece's share of ``cut`` (``cut / pieces``): the tail mass cut when one
        step's loss is discretised.
    alias : float
        Mass, per side, that a circular convolution may fold into its window.
    """

    engine: float
    cut: float
    piece: float
    alias: float


def tail_budgets(delta: float, pieces: int = 1) -> TailBudget:
    """The tail and aliasing budgets of every PLD route, for a target delta.

    One policy for every route that cuts a PLD's tails:

    * the general engine (law discretisation, two-scale grids, repeated squaring)
      moves at most ``engine = tail_budget(delta)``, a millionth of delta rounded
      down to a power of ten within [1e-16, 1e-12] (the rounding lets nearby deltas
      share one cached PLD, the clip keeps the grids within their size guards);
    * the shared-grid DP-SGD paths (:mod:`~dpacct.accountant.pld.schedule_fast`,
      :mod:`~dpacct.accountant.pld.incremental`), which are not cached by delta,
      give ``SHARED_GRID_SHARE = 1e-4`` of delta to their tail cuts in total
      (``piece = cut / pieces`` per composed step, so the cuts stay within it for any
      number of steps up to ``pieces``) and the same again to each side of the
      wrap-around of their one circular convolution.  The Chernoff window grows
      with ``log(1 / alias)`` and the cells with ``log(1 / piece)``, so a smaller
      share is slower; a millionth instead moves their upper bounds by a few 1e-6
      relative (docs/design.md, "PLD grid policy").

    Each budget is added to delta inside the certificate, so any value is sound;
    the values only trade tightness for speed.

    Parameters
    ----------
    delta : float
        The target delta, in (0, 1].
    pieces : int, default 1
        Number of composed steps the shared-grid cut is spread over, >= 1.

    Returns
    -------
    TailBudget

    Examples
    --------
    >>> b = tail_budgets(1e-5, pieces=1000)
    >>> b.engine, b.alias, bool(b.piece * 1000 <= b.cut)
    (1e-12, 1e-09, True)
    """
    engine = tail_budget(delta)
    if isinstance(pieces, bool) or not isinstance(pieces, (int, np.integer)) or pieces < 1:
        raise ValueError(f"pieces must be an integer >= 1, got {pieces!r}")
    cut = SHARED_GRID_SHARE * delta
    return TailBudget(engine=engine, cut=cut, piece=cut / int(pieces), alias=cut)


#: The first discretisation needs fewer points per spread than later coarsenings: its
#: error is diluted as the composition widens.
FIRST_LEVEL_FRACTION = 0.25


def grid_step(
    law: PrivacyLossLaw, pessimistic: bool, settings: PLDSettings, *, use_anchor: bool = True
) -> float:
    """First grid step for ``law``: its lattice, a binary fraction of its anchor, or a
    power of two below spread/resolution.

    ``use_anchor=False`` ignores a weak anchor (a composition that meets binary grids
    of other parts is better served by a nested binary grid than by exact atoms)."""
    if law.lattice is not None:
        return law.lattice
    anchor = law.anchor if use_anchor or not law.weak_anchor else None
    spread = law.spread()
    if spread <= 0:  # a point mass: any grid works
        return 2.0**-10 if anchor is None else anchor
    fraction = FIRST_LEVEL_FRACTION
    if not pessimistic and settings.first_fraction is not None:
        fraction = settings.first_fraction
    resolution = settings.resolution_for(pessimistic) * fraction
    if anchor is not None:
        return anchor / 2.0 ** max(0, math.ceil(math.log2(anchor * resolution / spread)))
    return 2.0 ** math.floor(math.log2(spread / resolution))


def discretize_law(law: PrivacyLossLaw, pessimistic: bool, settings: PLDSettings) -> GridPLD:
    """Discretise a law on a grid chosen from its spread (or its lattice).

    A law whose range would need more than ``MAX_GRID`` points on that grid (a very
    skewed loss: a small sample rate with little noise, whose spread is of the order
    of the sample rate while its range is of order one) is discretised two-scale
    instead -- a fine bulk and a coarse tail
    (:func:`~dpacct.accountant.pld.twoscale.discretize_split`),
    merged onto the finest nested grid of at most ``MAX_GRID / 4`` points.  Every
    grid gives a certified discretisation; :func:`~dpacct.accountant.routes.pld_upper` refines the
    grids when the answer turns out small next to the step.
    """
    from .grid import MAX_GRID, discretize
    from .twoscale import discretize_split

    step = grid_step(law, pessimistic, settings)
    tail = settings.tail * LAW_TAIL_FRACTION
    cap = settings.coarse_cap
    if law.lattice is None:
        while cap is not None and step > cap:
            step /= 2.0  # still a binary fraction of any anchor
        lo, hi = law.quantile_bounds(tail)
        # a law may ask for the split earlier (``split_grid_above``, e.g. one evaluated
        # per point over many components); its tail then gets at least a quarter as many
        # points as that threshold, so the answer stays close to the single-scale one
        early = getattr(law, "split_grid_above", None)
        if (hi - lo) / step + 2 > (early or MAX_GRID):
            if early is not None:
                cap = min(cap if cap is not None else math.inf, 4.0 * (hi - lo) / early)
            split = discretize_split(law, step, pessimistic=pessimistic, tail=tail, coarse_cap=cap)
            return split.merged(MAX_GRID >> 2)
    return discretize(law, step, pessimistic=pessimistic, tail=tail)
