"""Composition of any list of mechanisms, with repetition counts.

``compose(mechanisms, counts)`` returns a :class:`ComposedMechanism`, itself a
:class:`~dpacct.accountant.mechanism.Mechanism`, so it can be composed, subsampled and
calibrated again.  The route is chosen per list:

* **closed form** when every part states a Gaussian-DP ``mu``
  (:meth:`~dpacct.accountant.mechanism.Mechanism.gdp_mu`): ``mu^2`` adds up (Dong,
  Roth, Su 2019, Corollary 3.3), so the composition *is* a Gaussian mechanism and its
  curve stays exact;
* **privacy loss distributions** when every part has one: each part's PLD is
  self-composed by repeated squaring (cost grows like ``log count``, so ``10`` and
  ``10**7`` repetitions cost about the same) and the parts are convolved, separately for
  the add and the remove direction, for both the pessimistic and optimistic
  discretisation; if every part also has an RDP curve, the RDP bound is computed too
  and the smaller upper bound wins;
* **RDP addition** otherwise (Mironov 2017, Proposition 1).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from .._rounding import next_up, sum_up
from ..binomial_tails import binom_sf
from ..curve_down import DOWN_FACTOR
from ..families.gaussian import GaussianMechanism, sigma_below
from ..laws.quantile_batch import prefill_quantiles
from ..mechanism import (
    DEFAULT_RESOLUTION,
    LAW_TAIL_FRACTION,
    Capabilities,
    Mechanism,
    PLDSettings,
    grid_step,
)
from ..numerics import SUBNORMAL_FLOOR
from ..pld.grid import GridPLD
from ..pld.twoscale import BULK_TAIL, compose_split, discretize_split, self_compose_split
from ..validation import check_alpha, check_count, iter_pairs, show_value

__all__ = ["ComposedMechanism", "compose"]


@dataclass(frozen=True, repr=False)
class ComposedMechanism(Mechanism):
    """The sequential (adaptive) composition of ``parts``: pairs ``(mechanism, count)``.

    Build it with :func:`compose`.

    Parameters
    ----------
    parts : tuple of (Mechanism, int)
        The mechanisms composed, each with its count (>= 1), under one neighbouring
        relation.

    Examples
    --------
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> run = compose([GaussianMechanism(sigma=10.0)], counts=[100])
    >>> run.route
    'exact'
    >>> round(run.epsilon(1e-5), 6) == round(GaussianMechanism(sigma=1.0).epsilon(1e-5), 6)
    True
    """

    parts: tuple[tuple[Mechanism, int], ...]

    #: the most a composition can know; :attr:`capabilities` says what these parts allow
    declares = Capabilities(
        exact_curve=True, rdp=True, loss_laws=True, own_pld=True, exact_tradeoff=True, gdp=True
    )

    def __post_init__(self) -> None:
        # every part is read through the mechanism that describes it (an algorithm
        # through the composition of its releases): the parts' public ``privacy``
        views = tuple((mech.privacy, count) for mech, count in self.parts)
        object.__setattr__(self, "_views", views)
        gaussian = _gaussian_equivalent(views)
        object.__setattr__(self, "_gaussian", gaussian)
        # one mechanism run once is just that mechanism: keep its exact curves
        single = None
        if gaussian is None and len(views) == 1 and views[0][1] == 1:
            inner = views[0][0]
            if inner.has_exact_curve:
                single = inner
        exact = gaussian if gaussian is not None else single
        # one part used once is that part: its answers are this composition's
        one = views[0][0] if len(views) == 1 and views[0][1] == 1 else None
        object.__setattr__(self, "_one", one)
        if exact is None:
            exact = _binary_rr_equivalent(views)
        object.__setattr__(self, "_exact", exact)

    @property
    def neighbouring(self) -> str:  # type: ignore[override]
        """The parts' common neighbouring relation (``compose`` refuses mixtures)."""
        return self.parts[0][0].neighbouring

    @property
    def capabilities(self) -> Capabilities:
        """What the parts allow: exact curves for closed forms, PLDs or RDP when all have them.

        An exact curve for closed forms (Gaussian, binomial, a single exact part), PLDs
        when every part has them, RDP when every part has it (or in closed form).
        """
        views = self._views
        exact = self._exact
        if self._gaussian is not None:
            # a Gaussian itself: its closed forms, and its loss law for any wrapper
            return dataclasses.replace(self._gaussian.capabilities, own_pld=False)
        return Capabilities(
            exact_curve=exact is not None,
            rdp=all(m.has_rdp for m, _ in views),
            own_pld=all(m.has_pld for m, _ in views),
            exact_tradeoff=exact is not None and exact.capabilities.exact_tradeoff,
        )

    def _gdp_mu(self) -> float:
        """``sqrt(sum count * mu^2)`` when every part declares a Gaussian-DP ``mu``."""
        return self._gaussian.gdp_mu()

    def _loss_laws(self):
        """The closed-form Gaussian's law (declared only when every part is mu-GDP)."""
        return self._gaussian._loss_laws()

    def rdp(self, alpha):
        """Renyi-DP epsilon at ``alpha``: the closed form or the sum over the parts.

        The sum is over the parts' declared curves, else over each part's derived curve
        (its :meth:`~Mechanism.rdp`, from its loss laws or PLD: Renyi DP composes
        additively, Mironov 2017, Proposition 1); a part with none raises
        :class:`~dpacct.accountant.mechanism.MissingCapabilityError` naming it.

        Parameters
        ----------
        alpha : float or array_like
            Renyi order(s), real and > 1.

        Examples
        --------
        >>> from dpacct.accountant import Mechanism, GaussianLossLaw
        >>> run = compose([Mechanism.from_loss_laws(GaussianLossLaw(mu=1.0))], [4])
        >>> float(run.rdp(2.0))                 # 4 * 2 * 1 / 2
        4.0
        """
        if self.has_rdp:
            return super().rdp(alpha)
        a = check_alpha(alpha)
        total = np.zeros(a.shape)
        for mech, count in self._views:
            total = total + count * np.asarray(mech.rdp(a), dtype=float)
        return float(total) if total.ndim == 0 else total

    def _lacking(self, query: str, need: str = "any") -> str:
        """Name the parts that keep the composition from answering ``query``: with
        no closed form, every part needs privacy loss distributions (loss laws) for
        the PLD route, or every part an RDP curve for RDP addition."""
        no_pld = [m for m, _ in self._views if not m.has_pld]
        no_rdp = [m for m, _ in self._views if not m.has_rdp]
        if need == "rdp":
            return (
                f"the composition cannot answer {query}: no Renyi-DP curve for the "
                f"part(s) {', '.join(map(repr, no_rdp))}; each needs a Renyi-DP curve "
                "(Mechanism.from_rdp, or declares rdp=True)"
            )
        return (
            f"the composition cannot answer {query}: it needs loss laws (a PLD) in "
            f"every part or an RDP curve in every part; without a PLD: "
            f"{', '.join(map(repr, no_pld)) or 'none'}; without an RDP curve: "
            f"{', '.join(map(repr, no_rdp)) or 'none'}"
        )

    def _delta_exact(self, epsilon: np.ndarray) -> np.ndarray:
        return self._exact._delta_exact(epsilon)

    def _tradeoff_exact(self, fpr: np.ndarray) -> np.ndarray:
        return self._exact._tradeoff_exact(fpr)

    def _pure_epsilon(self) -> float:
        # pure DP composes additively (Dwork et al. 2006); the sum is exact and rounded
        # up, since a cap is an upper bound
        return sum_up((count, mech._pure_epsilon()) for mech, count in self._views)

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        if self._gaussian is not None:
            return self._gaussian._rdp(alpha)
        total = np.zeros(np.shape(alpha))
        for mech, count in self._views:
            total = total + count * np.asarray(mech._rdp_curve(alpha), dtype=float)
        return total

    def _pld_pair(self, pessimistic: bool, settings: PLDSettings) -> tuple[GridPLD, GridPLD]:
        return (
            self._pld_one(pessimistic, settings, 0),
            self._pld_one(pessimistic, settings, 1),
        )

    def _pld_one(self, pessimistic: bool, settings: PLDSettings, which: int) -> GridPLD:
        """One direction (0 remove, 1 add) of the composed PLD, cached."""
        key = ("pld1", pessimistic, settings.key(), which)
        cache = self._cache()
        if key in cache:
            return cache[key]
        views = self._views
        anchors = _anchors_agree(views, which)
        if which == 1 and self._symmetric():
            out = self._pld_one(pessimistic, settings, 0)
        elif pessimistic and len(views) > 1 and all(_split_ready(m, anchors) for m, _ in views):
            out = _joint_composed(views, settings, which, anchors)
        else:
            total_count = sum(c for _, c in views)
            composed = [
                _self_composed(mech, count, pessimistic, settings, total_count, which, anchors)
                for mech, count in views
            ]
            out = composed[0]
            cut = settings.tail / max(len(composed), 1)
            for other in composed[1:]:
                out = out.convolve(other, cut)
        cache[key] = out
        return out

    def _directions_equal(self) -> bool:
        return self._gaussian is None and self._symmetric()

    def _swap_bounds_add(self) -> bool:
        # every part's remove PLD is a certified discretisation of a loss law (or a
        # composition of such), and so is their composition
        return all(mech._swap_bounds_add() for mech, _ in self._views)

    def _symmetric(self) -> bool:
        """True when every part has one law for both directions."""
        for mech, _ in self._views:
            if not mech.capabilities.loss_laws:
                return False
            laws = mech._loss_laws()
            if laws[0] is not laws[1]:
                return False
        return True

    # One part used once answers with the better of that part's own answer (its
    # overrides: the closed-form inversions of Laplace and zCDP, a subsampler's
    # confirmed epsilon) and the engine's route on the composition, every query alike:
    # both are certified, and delta(epsilon(d)) <= d holds on whichever answered
    # (review 35: the part alone was 3.5e-12 above the route at q 0.3, sigma 1.5).
    def _epsilon_upper(self, delta: float, tol: float | None) -> float:
        own = super()._epsilon_upper(delta, tol)
        if self._one is not None:
            return min(own, self._one._epsilon_upper(delta, tol))
        return own

    def _epsilon_bounds(self, delta: float, tol: float | None) -> tuple[float, float]:
        lo, hi = super()._epsilon_bounds(delta, tol)
        if self._gaussian is not None:
            # the Gaussian equivalent's sigma is rounded down (it dominates: its upper
            # end holds); a lower end needs one that the composition dominates, sigma
            # rounded up: the true sigma is within SIGMA_ROUND_DOWN and a few roundings
            # of the one kept, inside 2^-48 (a fuzz found the lower end 5.5e-15 above
            # the 50-digit truth at two Gaussians, delta 0.515)
            dominated = GaussianMechanism(sigma=self._gaussian.sigma * (1.0 + 2.0**-48))
            lo = min(lo, float(dominated.epsilon_bounds(delta, tol=tol)[0]))
        if self._one is not None:
            part_lo, part_hi = self._one._epsilon_bounds(delta, tol)
            # the larger of two lower ends only when both are certified: the exact
            # route's without a curve rounded down (a Laplace part's) is the bisection's
            # on the float curve, up to an ulp above the truth (lowends_survey)
            lo = max(lo, part_lo) if self._route_lower_certified() else part_lo
            hi = min(hi, part_hi)
        return lo, hi

    def _route_lower_certified(self) -> bool:
        """Whether the router's lower end on this composition is certified: the PLD
        route's is, the exact route's on a Gaussian (certified inversion) or on a curve
        rounded down (:mod:`~dpacct.accountant.curve_down`) is, a bare float curve's not."""
        if not self.has_exact_curve:
            return True
        return self.gdp_mu() is not None or self._delta_exact_down is not None

    def delta(self, epsilon, *, tol: float | None = None):
        """Sound upper bound on delta at ``epsilon``: :meth:`Mechanism.delta`, and for one
        part used once the smaller of it and that part's own answer.

        Parameters
        ----------
        epsilon : float or array_like
            Privacy parameter(s), >= 0.
        tol : float, optional
            Relative accuracy of the PLD route, as in :meth:`Mechanism.delta`.

        Returns
        -------
        float or numpy.ndarray
            delta(epsilon), shaped like ``epsilon``.

        Examples
        --------
        >>> from dpacct.mechanisms import LaplaceMechanism
        >>> lap = LaplaceMechanism(b=1.0)
        >>> bool(compose([lap]).delta(0.5) <= lap.delta(0.5))
        True
        """
        own = super().delta(epsilon, tol=tol)
        if self._one is None:
            return own
        part = np.minimum(own, self._one.delta(epsilon, tol=tol))
        return float(part) if np.ndim(part) == 0 else part

    def _tradeoff_nodes(self) -> np.ndarray | None:
        """The closed form's own trade-off nodes (its loss atoms), when it has them."""
        nodes = getattr(self._exact, "_tradeoff_nodes", None)
        return nodes() if nodes is not None else None

    @property
    def _delta_exact_down(self):
        """The certified lower curve of the closed form, when it has one
        (:mod:`~dpacct.accountant.curve_down`), else ``None``."""
        return getattr(self._exact, "_delta_exact_down", None)

    def __repr__(self) -> str:
        inner = ", ".join(f"({m!r}, {c})" for m, c in self.parts)
        return f"ComposedMechanism([{inner}])"


def _self_composed(
    mech: Mechanism,
    count: int,
    pessimistic: bool,
    settings: PLDSettings,
    total_count: int,
    which: int,
    use_anchor: bool = True,
) -> GridPLD:
    """Direction ``which`` (0 remove, 1 add) of ``count`` repetitions of ``mech``.

    Mechanisms with privacy-loss laws are discretised with a fine bulk and a coarse
    tail (see :mod:`dpacct.accountant.pld.twoscale`); others start from their own PLDs.
    ``use_anchor`` as in :func:`~dpacct.accountant.mechanism.grid_step`.
    """
    step_settings = _part_settings(settings, total_count)
    resolution = settings.resolution_for(pessimistic)
    tail = settings.tail * count / total_count
    if _law_based(mech):
        # The one-step discretisation and the powers of the squaring are kept on the
        # part (a mechanism is immutable), keyed by everything they depend on.  The
        # one-step tail is the one of the next power of two at or above total_count
        # (smaller, so it moves less mass: still within the budget), which makes it,
        # like the squarings' budgets (self_compose_split), depend on the count only
        # through its bit length: every count of one bit length shares them, and a
        # ledger asked every 100 steps reuses them.
        step_settings = _part_settings(settings, 1 << total_count.bit_length())
        disc_tail = step_settings.tail * LAW_TAIL_FRACTION
        refine = _refine(settings)
        memo = mech._cache().setdefault("self_compose_split", {})
        # one law object per direction for every grid and both ends of a bracket: a law
        # keeps its quantiles and spread (the grid plan), which the pessimistic and the
        # optimistic discretisation both ask for (issue 37: 4 of the 45 ms of a lower end)
        laws = memo.get(("laws",))
        if laws is None:
            laws = memo[("laws",)] = mech._loss_laws()
        law = laws[which]
        step_key = ("step", which, pessimistic, step_settings.key(), use_anchor)
        step = memo.get(step_key)
        if step is None:
            step = memo[step_key] = grid_step(law, pessimistic, step_settings,
                                              use_anchor=use_anchor)
        base_key = ("base", which, pessimistic, step, disc_tail, refine, settings.coarse_cap)
        kept = memo.pop(base_key, None)
        if kept is None:
            split = discretize_split(
                law,
                step,
                pessimistic=pessimistic,
                tail=disc_tail,
                refine=refine,
                coarse_cap=settings.coarse_cap,
                # the bulk's bins, shared by both ends of a bracket (issue 37)
                fine_memo=memo.setdefault(("fine_bins", which), {}),
            )
            kept = {"split": split, "memo": {}}
        memo[base_key] = kept  # the newest; only the newest few are kept (memory)
        bases = [k for k in list(memo) if k[0] == "base"]
        for k in bases[: max(0, len(bases) - _MEMO_BASES)]:
            memo.pop(k, None)
        split = kept["split"]
        return self_compose_split(
            split,
            count,
            tail=tail,
            points_per_scale=resolution,
            max_step=law.lattice,
            refine=refine,
            coarse_cap=settings.coarse_cap,
            memo=kept["memo"],
            err_tails=settings.err_tails,
        )
    pld = mech._pld_one(pessimistic, step_settings, which)
    lattice = pld.step if _is_lattice(mech) else None
    return pld.self_compose(count, tail=tail, points_per_scale=resolution, max_step=lattice)


#: one-step discretisations (with their powers and partial products) a part keeps
_MEMO_BASES = 3


def _split_ready(mech: Mechanism, use_anchor: bool = True) -> bool:
    """True if ``mech`` is discretised from a loss law on a free binary grid.

    Laws on a lattice or anchored to a point keep their own grids (exact atoms), which
    are not nested with the binary grids of the others; weak anchors only when the
    anchors are used.
    """
    if not _law_based(mech):
        return False
    return all(
        law.lattice is None and (law.anchor is None or (law.weak_anchor and not use_anchor))
        for law in mech._loss_laws()
    )


def _law_based(mech: Mechanism) -> bool:
    """True if ``mech``'s PLDs are discretised from its declared loss laws (not built
    by the mechanism itself)."""
    caps = mech.capabilities
    return caps.loss_laws and not caps.own_pld and mech.has_pld


def _anchors_agree(parts, which: int) -> bool:
    """Whether the parts' weak anchors are used for their grids (direction ``which``).

    Anchored grids keep atoms exact, but grids of different anchors are not nested
    with each other or with the binary grids of parts without anchors, and
    re-gridding between unrelated grids costs the optimistic (lower) bound most.  A
    weak anchor (subsampled Laplace or randomized response: the image of the base's
    atom) is therefore used only when every part is law-based and all of them share
    one anchor (or lattice) -- in particular for a single subsampled mechanism
    repeated, where it helps most: q = 0.01, b = 10 Laplace, 10^4 steps has a
    0.65 % bracket instead of 26 %.  Measured against never using weak anchors on 40
    random mixtures of (subsampled) Laplace and Gaussian parts: no bracket widened,
    and the two single-part subsampled-Laplace cases narrowed from 0.6-0.75 % to
    under 0.004 %.  (Using weak anchors in every mixture widened some up to 3x.)
    """
    grids = set()
    for mech, _ in parts:
        if not _law_based(mech):
            return False
        law = mech._loss_laws()[which]
        grids.add(law.lattice if law.lattice is not None else law.anchor)
    return len(grids) == 1 and None not in grids


def _joint_composed(parts, settings: PLDSettings, which: int, use_anchor: bool) -> GridPLD:
    """Pessimistic PLD of several law-based parts by one joint binary ladder.

    Each part is discretised as in :func:`_self_composed`; the powers are then taken
    together (:func:`~dpacct.accountant.pld.twoscale.compose_split`), which costs about one
    self-composition instead of one per part.  Used for upper bounds only.
    """
    total_count = sum(c for _, c in parts)
    step_settings = _part_settings(settings, total_count)
    refine = _refine(settings)
    prefill_quantiles(*joint_quantile_requests(parts, settings, which))
    bases = []
    for mech, _ in parts:
        law = mech._loss_laws()[which]
        step = grid_step(law, True, step_settings, use_anchor=use_anchor)
        bases.append(
            discretize_split(
                law,
                step,
                pessimistic=True,
                tail=step_settings.tail * LAW_TAIL_FRACTION,
                refine=refine,
                coarse_cap=settings.coarse_cap,
            )
        )
    return compose_split(
        bases,
        [c for _, c in parts],
        tail=settings.tail,
        points_per_scale=settings.resolution_for(True),
        refine=refine,
        coarse_cap=settings.coarse_cap,
    )


def joint_quantile_requests(parts, settings: PLDSettings, which: int) -> tuple[list, list]:
    """The tail quantiles ``(law, tail)`` and the laws whose spread :func:`_joint_composed`
    is about to ask (the discretisation tail, the bulk window's, the grid-safe range's),
    for :func:`~dpacct.accountant.laws.quantile_batch.prefill_quantiles`: a caller composing
    many such groups (a chunked schedule) batches them all at once.  A tail asked that
    is not listed here is only searched by the law itself, as before."""
    from .subsample import _RANGE_TAIL

    step_settings = _part_settings(settings, sum(c for _, c in parts))
    bulk = BULK_TAIL / _refine(settings) ** 2
    tails = (step_settings.tail * LAW_TAIL_FRACTION, bulk, _RANGE_TAIL)
    laws = [mech._loss_laws()[which] for mech, _ in parts if _law_based(mech)]
    return [(law, t) for law in laws for t in tails], laws


def _refine(settings: PLDSettings) -> int:
    """Refinement of the two-scale split for tolerances below the default.

    The coarse tail grid and the bulk window limit the attainable tightness (about
    2e-6 relative at the default split); both shrink with the resolution: a power of
    two near ``resolution / DEFAULT_RESOLUTION``, 1 at the default tolerance.
    """
    ratio = settings.resolution / DEFAULT_RESOLUTION
    if ratio <= 1.0:
        return 1
    return int(min(2 ** round(math.log2(ratio)), 8))


def _part_settings(settings: PLDSettings, total_count: int) -> PLDSettings:
    # the discretisation tail of one step is repeated total_count times
    out = settings.copy()
    out.tail = settings.tail / max(total_count, 1) / (math.log2(total_count + 1) + 1)
    return out


def _is_lattice(mech: Mechanism) -> bool:
    if not mech.capabilities.loss_laws:
        return False
    return all(law.lattice is not None for law in mech._loss_laws())


def _gaussian_equivalent(parts) -> Mechanism | None:
    """The Gaussian mechanism equal to the composition, when every part states a
    Gaussian-DP ``mu`` (:meth:`Mechanism.gdp_mu`): ``mu^2`` adds up over the parts and
    their counts (Dong, Roth, Su 2019, Corollary 3.3), so the noise multiplier is
    ``1 / sqrt(sum count * mu^2)``."""
    mus, counts = [], []
    for mech, count in parts:
        mu = mech.gdp_mu()
        if mu is None:
            return None
        mus.append(float(mu))
        counts.append(count)
    # scaled by the largest mu, so that mu^2 of a huge sigma (1e300) does not underflow
    # to a zero sum; a ratio squared that underflows is below 1e-308 of the sum, far
    # inside the 2^-50 by which sigma_below rounds down
    top = max(mus)
    scaled = math.fsum(c * (mu / top) ** 2 for mu, c in zip(mus, counts, strict=True))
    # rounded down: a smaller sigma dominates, so the closed form stays an upper bound;
    # a sigma beyond the largest float is replaced by the largest float (also smaller)
    sigma = min(sigma_below(top * math.sqrt(scaled)), sys.float_info.max)
    return GaussianMechanism(sigma=sigma)


#: the binomial closed form is used up to this many composed copies (counts are exact
#: in a double below 2**53; scipy's binomial tails were checked to 4.4e-10 relative at
#: 10**12 against a 40-digit quadrature, tests/test_binomial_rr.py)
BINOMIAL_MAX_COUNT = 10**13


#: relative error allowed for each binomial tail from scipy.stats.binom.sf:
#: ``1e-13 + 1e-14 sqrt(n)``, 20 to 100 times the errors measured against mpmath
#: (9e-14 at 10**5 copies, 3e-13 at 10**6, 1e-12 at 10**7, 4.4e-10 at 10**12).  The
#: two tails cancel in delta (by a factor ~230 at n = 2000, p = 0.5001, delta 1e-6),
#: so the slack is kept as small as the measurements allow
def _binomial_tail_slack(n: int) -> float:
    return 1e-13 + 1e-14 * math.sqrt(n)


#: the trade-off curve is read at every loss atom up to this many composed copies (the
#: envelope costs ``fpr.size x n / 2`` terms); beyond, at the fixed nodes alone
TRADEOFF_ATOMS_MAX = 4096


class _BinaryRRComposition(Mechanism):
    """``n``-fold composition of binary randomized response, in closed form.

    The pair is ``P = (p, 1 - p)``, ``Q = (1 - p, p)`` per copy, with loss
    ``+-e``, ``e = log(p / (1 - p))``; ``n`` copies have loss ``e (2j - n)`` with
    ``j ~ Binomial(n, p)`` under P and ``Binomial(n, 1 - p)`` under Q, so

        ``delta(eps) = P[j > J] - e^eps Q[j > J]``,  ``J = floor((n + eps/e) / 2)``

    (Kairouz, Oh, Viswanath 2015, Theorem 3.4, in hockey-stick form).  The tails come
    from ``scipy.stats.binom.sf``'s own ufunc (:func:`~dpacct.accountant.binomial_tails.binom_sf`,
    the same values); each is taken :func:`_binomial_tail_slack` relative
    towards the larger delta.  The hockey-stick divergence is the largest
    ``P(S) - e^eps Q(S)`` over events ``S``, so the thresholds ``J - 1, J, J + 1``
    are all evaluated and the largest kept: a rounding of ``eps / e`` cannot pick a
    smaller value than the true one.  Replaces a lattice PLD whose grid could not
    coarsen: ``10**12`` copies of RR(0.5000001) took 11 s (29 s with the bracket).
    """

    declares = Capabilities(exact_curve=True)

    def __init__(self, p: float, count: int) -> None:
        self.p = p
        self.count = count
        self.eps0 = math.log(p / (1.0 - p))

    def _pure_epsilon(self) -> float:
        return sum_up([(self.count, next_up(self.eps0, 4))])

    def _tradeoff_nodes(self) -> np.ndarray | None:
        """The non-negative loss atoms ``e m`` (``m = n, n - 2, ..., n mod 2``), where the
        trade-off curve has its vertices; ``None`` above :data:`TRADEOFF_ATOMS_MAX` copies."""
        n = self.count
        if n > TRADEOFF_ATOMS_MAX:
            return None
        return self.eps0 * np.arange(n % 2, n + 1, 2, dtype=float)

    def _delta_exact(self, epsilon: np.ndarray) -> np.ndarray:
        eps = np.asarray(epsilon, dtype=float)
        n, p = self.count, self.p
        j0 = np.floor((n + eps / self.eps0) / 2.0)
        slack = _binomial_tail_slack(n)
        best = np.zeros(eps.shape)
        for shift in (-1.0, 0.0, 1.0):
            j = np.clip(j0 + shift, -1.0, float(n))
            up = binom_sf(j, n, p) * (1.0 + slack)
            sf_q = binom_sf(j, n, 1.0 - p) * (1.0 - slack)
            with np.errstate(over="ignore", divide="ignore"):
                # e^eps * sf_q in log space: 0 when sf_q is, inf (no delta) on overflow;
                # the exponent lowered by its error (numpy's log within four ulps, 8u
                # |log sf|, two sums, exp's 8u): inside 2^-49 (16u), as the lower curve
                log_sf = np.log(np.maximum(sf_q, SUBNORMAL_FLOOR))
                low = eps + log_sf - 2.0**-49 * (np.abs(eps) + np.abs(log_sf) + 1.0)
                down = np.where(sf_q > 0, np.exp(low), 0.0)
            best = np.maximum(best, up - down)
        return np.clip(best, 0.0, 1.0)

    def _delta_exact_down(self, epsilon: np.ndarray) -> np.ndarray:
        """The curve rounded down (:mod:`~dpacct.accountant.curve_down`).

        ``p`` was moved two ulps up from the parts' float P-mass, which
        :func:`_binary_rr_equivalent` takes to be within two ulps of the true one;
        ``p_lo`` is four ulps below ``p``, so RR(``p_lo``) is a post-processing of every
        part and its ``n``-fold curve is below the true one.  Any threshold ``J`` is an
        event, so ``P[j > J] - e^eps Q[j > J]`` with the tails' slack taken the other way
        is a lower bound on the hockey stick; the ``e^eps`` term is computed in log
        space with its exponent raised by the log's, the sums' and exp's round-off (numpy's
        vectorised log and exp within four ulps), ``2^-49 (|eps| + |log Q[j > J]| + 1)``.
        """
        eps = np.asarray(epsilon, dtype=float)
        n = self.count
        p_lo = self.p
        for _ in range(4):
            p_lo = math.nextafter(p_lo, 0.0)
        eps0 = math.log(p_lo / (1.0 - p_lo))
        j0 = np.floor((n + eps / eps0) / 2.0)
        slack = _binomial_tail_slack(n)
        best = np.zeros(eps.shape)
        for shift in (-1.0, 0.0, 1.0):
            j = np.clip(j0 + shift, -1.0, float(n))
            sf_p = binom_sf(j, n, p_lo) * (1.0 - slack)
            sf_q = binom_sf(j, n, 1.0 - p_lo) * (1.0 + slack)
            with np.errstate(over="ignore", divide="ignore"):
                # a tail that underflowed to 0 is below the least subnormal, not 0
                log_q = np.log(np.maximum(sf_q, SUBNORMAL_FLOOR))
                # the exponent's error: numpy's log within four ulps (8u |log q|), two
                # sums (u each of the magnitudes), and exp's own 8u: inside 2^-49 (16u)
                paid = np.exp(eps + log_q + 2.0**-49 * (np.abs(eps) + np.abs(log_q) + 1.0))
            best = np.maximum(best, sf_p - paid)
        return np.clip(best * DOWN_FACTOR, 0.0, 1.0)


def _binary_rr_equivalent(parts) -> Mechanism | None:
    """The binomial closed form when every part is binary randomized response with one
    parameter (two atoms ``+-e`` on the lattice ``e``, P-masses ``p`` and ``1 - p``).

    ``p`` is moved two ulps up (a larger ``p`` dominates: RR(p) is a post-processing
    of RR(p') for p' > p), which absorbs the rounding of a ``p`` computed from an
    epsilon (``PureDPMechanism``)."""
    from ..laws.loss_law import AtomicLossLaw

    total, ps = 0, set()
    for mech, count in parts:
        if not _law_based(mech):
            return None
        remove, add = mech._loss_laws()
        if remove is not add or not isinstance(remove, AtomicLossLaw):
            return None
        law = remove
        if law.lattice is None or law.losses.size != 2 or law.inf_mass or law.q_neg_inf_mass:
            return None
        if not (law.losses[0] == -law.losses[1] == -law.lattice):
            return None
        low, high = float(law.p[0]), float(law.p[1])
        if not (0.5 < high < 1.0 and abs(high + low - 1.0) <= 4e-16):
            return None
        ps.add(high)
        total += count
    if len(ps) != 1 or total > BINOMIAL_MAX_COUNT:
        return None
    p = next_up(ps.pop(), 2)
    return _BinaryRRComposition(p, total) if p < 1.0 else None


def compose(
    mechanisms: Iterable[Mechanism], counts: Sequence[int] | None = None
) -> ComposedMechanism:
    """Compose mechanisms (adaptively), each repeated ``counts[i]`` times.

    Parameters
    ----------
    mechanisms : iterable of Mechanism
        The mechanisms, in any order (composition is commutative).
    counts : sequence of int, optional
        Repetitions of each mechanism (integers >= 1); default one each.

    Returns
    -------
    ComposedMechanism
        A mechanism whose curves are those of the composition.

    Raises
    ------
    ValueError
        Empty list, counts of the wrong length, non-positive counts, or parts accounted
        under different neighbouring relations (add/remove vs replace-one).
    TypeError
        An element that is not a :class:`Mechanism` or a non-integer count.

    Examples
    --------
    >>> from dpacct.mechanisms import GaussianMechanism, LaplaceMechanism
    >>> run = compose([GaussianMechanism(sigma=50.0), LaplaceMechanism(b=100.0)],
    ...               counts=[100, 50])
    >>> run.route
    'pld'
    >>> lo, hi = run.epsilon_bounds(1e-6)
    >>> bool(lo <= hi)
    True
    """
    if isinstance(mechanisms, Mechanism):
        raise TypeError("compose expects a list of mechanisms, got a single mechanism")
    mechs = iter_pairs("mechanisms", mechanisms)
    if not mechs:
        raise ValueError("mechanisms must be a non-empty list of Mechanism objects")
    for i, m in enumerate(mechs):
        if not isinstance(m, Mechanism):
            raise TypeError(f"mechanisms[{i}] must be a Mechanism, got {type(m).__name__}")
    if counts is None:
        counts = [1] * len(mechs)
    if isinstance(counts, str | bytes) or not isinstance(counts, Iterable):
        raise TypeError(
            f"counts must be a list (sequence) of integers, one per mechanism, got "
            f"{type(counts).__name__} {show_value(counts)}"
        )
    counts = list(counts)
    if len(counts) != len(mechs):
        raise ValueError(
            f"counts must have one entry per mechanism: got {len(counts)} counts "
            f"for {len(mechs)} mechanisms"
        )
    counts = [check_count(c, f"counts[{i}]") for i, c in enumerate(counts)]
    relations = sorted({m.neighbouring for m in mechs})
    if len(relations) > 1:
        raise ValueError(
            "cannot compose mechanisms accounted under different neighbouring relations "
            f"({', '.join(repr(r) for r in relations)}): their guarantees are about different "
            "pairs of datasets. Express every part under one relation first (e.g. by group "
            "privacy, a replace-one pair is two add/remove steps)."
        )
    # identical mechanisms merge (frozen dataclasses compare by value)
    merged: dict = {}
    order: list = []
    for m, c in zip(mechs, counts, strict=True):
        try:
            key = (type(m), m)
            hash(key)
        except TypeError:
            key = (type(m), id(m))
        if key in merged:
            merged[key] = (m, merged[key][1] + c)
        else:
            merged[key] = (m, c)
            order.append(key)
    return ComposedMechanism(parts=tuple(merged[k] for k in order))
