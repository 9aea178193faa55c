"""A direct upper bound for 3-of-T random allocation: the (max, second, sum) law at k = 3.

One epoch allocates the record to a uniform 3-subset of ``T`` Gaussian steps (noise
multiplier ``sigma``).  With ``Y_t = exp((x_t - 1/2) / sigma^2)`` i.i.d. log-normal under
``Q = N(0, sigma^2 I_T)`` (``E Y = 1``) the likelihood ratio of the exact pair is
``Lambda_3 = e_3(Y) / C(T, 3)`` (docs/theory/allocation_k_of_t.md, "The exact pair of one
epoch"; Proposition 1' there: the pair dominates the adaptive epoch).  Proposition 7 of
docs/theory/allocation_k_of_t.md ("k = 3, direct") bounds its remove direction
``H_gamma(P_3 || Q)`` at every ``gamma >= 0`` by the machinery of Proposition 6 (the
k = 2 (max, second, sum) law, :mod:`.random_allocation_k2_three`) with k = 3's value
functions and charges.  With ``M_1 >= M_2`` the two largest coordinates, ``R`` the sum of
all but ``M_1`` and ``R'`` of all but both,

* ``M_2 <= theta``: ``e_3 <= M_1 R^2 (T-2) / (2 (T-1)) + C(T-1, 3) (R / (T-1))^3``
  (Cauchy-Schwarz on ``e_2`` of the others, Maclaurin on their ``e_3``);
* ``M_2 > theta``: ``e_3 <= M_1 M_2 R' + (M_1 + M_2) R'^2 (T-3) / (2 (T-2)) + C(T-2, 3)
  (R' / (T-2))^3``;

both increasing in the coordinates and increasing convex in the sum; the charges are
``P_3``'s unions: two coordinates above ``b`` ``3 p_s^2 + 3 (T-3) p_s p_u + C(T-3, 2)
p_u^2``, three above ``b'`` ``p_s^3 + 3 (T-3) p_s^2 p_u + 3 C(T-3, 2) p_s p_u^2 + C(T-3, 3)
p_u^3``, one above the last cell ``3 p_s + (T-3) p_u``.  The cells, their Q-masses
(which do not depend on ``k``), the lattice laws of the others and every outward
rounding are Proposition 6's.  These are Proposition 9's value functions and charges at
``k = 3``: the law is built by the one builder of every ``k >= 3``,
:func:`.random_allocation_k_law.remove_atoms`, with ``k = 3``'s settings.

The atoms go through Lemma 4 (one epoch: a probability pair dominating the remove
direction) or Proposition 5 (several epochs: the lower convex envelope with the three
blocks of Proposition 1, :func:`k3_envelope_law`); the add direction is the blocks'
(:func:`allocation_k3_pair`), as at k = 2.  ``M_2`` is split at 3.4 standard deviations
(:func:`.random_allocation_k_law.settings`; session 22 split at Proposition 6's 4.1, where ``V_1``'s
Cauchy-Schwarz step, which counts ``M_2^2``, held most of the excess: measured by
importance sampling of the pointwise bounds, docs/theory/allocation_k_of_t.md).
Measured (delta 1e-6, one epoch; main is the blocks): sigma 1, T 100: 2.1558 against
2.1958; sigma 0.8, T 100: 3.6552 against 3.8047; sigma 0.8, T 10: 8.3306 against 9.7489;
sigma 1, T 10: 5.9893 against 6.2095.  From T 10 the route's law is Proposition 10's
four-level law (:func:`k3_atoms`), at sigma 1.2-1.5, T 11-30 Proposition 13's (the
others' sum of squares kept in every region, :func:`k3_sq3_routed`; sigma 1.2, T 30:
2.67237 against 2.69074 at one epoch, 6.16864 against Proposition 12's 6.18436 over five;
the mechanism also answers with Propositions 12 and 10's routes, the least of all); it is
tried only where :func:`k3_tried` (docs/theory/allocation_k_of_t.md, "k = 3, direct").
"""

from __future__ import annotations

import numpy as np

from ..validation import check_count, check_positive
from .random_allocation_k2 import AllocationK2Remove, _pair_doc, with_block_adds
from .random_allocation_k_law import envelope_law, remove_atoms
from .random_allocation_k_law4 import remove_atoms4
from .random_allocation_k_law_sq3 import remove_atoms_sq3

__all__: list[str] = []

#: the range where the route of :class:`~dpacct.accountant.RandomAllocationMechanism` is
#: tried at k = 3 (:func:`k3_tried`; measured: docs/theory/allocation_k_of_t.md, "k = 3,
#: direct"): the least and most steps and noise multipliers of any part of it
K3_MIN_STEPS = 10
K3_MAX_STEPS = 200
K3_MIN_SIGMA = 0.6
K3_MAX_SIGMA = 2.0
#: from this many steps the route's law is Proposition 10's four-level law
K3_FOUR_MIN_STEPS = 10
#: below this noise multiplier and above :data:`K3_COARSE_STEPS` steps the route's law is
#: on :data:`COARSE4`'s nodes (sigma 0.6, T 100: 7.0861 against the blocks' 7.6360 in
#: 6 CPU s, loaded; the default nodes' CPU grows past the issue's 60 s there)
K3_COARSE_SIGMA = 0.65
K3_COARSE_STEPS = 30
#: the four-level law's coarse nodes and lattice (``remove_atoms4``'s ``dl3``, ``eta``,
#: ``step``, ``sd_frac``): the route's law where the default nodes cost too much
#: (:func:`k3_atoms`, :func:`.random_allocation_k4.four_level`), and the calibrator's
#: model of the route elsewhere (:func:`.random_allocation_k4.coarse_route`): sigma
#: 0.975, T 100, k 4, delta 1e-6: 2.93071 against the default law's 2.92071, in 2.5 CPU
#: s against 15; its log-log slope in sigma from 0.961 -2.124 against -2.133
COARSE4 = {"dl3": 0.1, "eta": 8e-3, "step": 1.0, "sd_frac": 0.25}
#: where the route's law is Proposition 12's (the others' sum of squares,
#: :func:`.random_allocation_k_law_sq3.remove_atoms_sq3`; session 30) instead of Proposition
#: 10's: these steps and noise multipliers (inclusive), on :data:`SQ3_SETTINGS`
#: (measured, delta 1e-6, one epoch, the remove law against Proposition 10's on its
#: default nodes, loaded CPU s: sigma 1.2, T 30: 2.67237 / 2.69073 (34-38 s, 450 MB
#: resident); 1.5, T 30: 1.88391 / 1.89523 (19 s); 1.5, T 20: 2.31791 / 2.33229 (9 s);
#: 1.2, T 11: 4.21467 / 4.23744 (7 s); docs/theory/allocation_k_of_t.md, "Proposition
#: 12's binning, its nodes and its route"); below sigma 1.2 or above T 30 its CPU passes
#: the issue's 60 s a law (sigma 1, T 100: over 90 s); not at T 10, where the route's
#: tests run
K3_SQ3_MIN_STEPS = 11
K3_SQ3_MAX_STEPS = 30
K3_SQ3_MIN_SIGMA = 1.2
K3_SQ3_MAX_SIGMA = 1.5
#: Proposition 12's settings there: :data:`COARSE4`'s nodes, no cut raised (a lattice per
#: cut: the raised cuts were half of its loss, session 29)
SQ3_SETTINGS = {"dl3": 0.1, "eta": 8e-3, "cut_step": 1e-4}
#: Proposition 12's finer nodes (cells of regions 2-3 at most 0.05 wide in log instead of
#: 0.1), where their CPU stays within about 40 s a law (session 31, :func:`sq3_settings`):
#: sigma 1.5, T 20, delta 1e-6: 2.31791 -> 2.31289 (5.5 -> 11.5 CPU s)
SQ3_FINE = {"dl3": 0.05, "eta": 8e-3, "cut_step": 1e-4}
#: the finer nodes from this noise multiplier at every routed T, and at every routed sigma
#: up to :data:`K3_SQ3_FINE_STEPS` steps
K3_SQ3_FINE_SIGMA = 1.45
K3_SQ3_FINE_STEPS = 20


#: up to this many steps Proposition 13's first region takes the per-coordinate lattice
#: step :data:`SQ3_FIRST_H` instead of Proposition 10's (0.15 at sigma 1.2-1.5): sigma 1.5,
#: T 11, three epochs, delta 1e-6: 5.70387 -> 5.68424 for about 1.3 CPU s more (session
#: 32); at T 20 (sigma 1.2, five epochs) 0.075 gives 7.63342 -> 7.62186 for 3.8 s more,
#: past the bracket's 40 s, so not taken there
K3_SQ3_FIRST_FINE_STEPS = 15
SQ3_FIRST_H = 0.05
#: region 2's own lattice (``remove_atoms_sq3``'s ``h2``, ``coarse2``) wherever Proposition
#: 13 is routed: its one lattice (``M_3 <= theta_3``) holds most of the mass and most of
#: the discretisation's loss (session 33; sigma 1.5, T 11, delta 1e-6, 3 / 5 epochs:
#: 5.68441 / 7.62636 -> 5.66222 / 7.59581 for about 1 CPU s; ``h = 0.05`` in regions 2
#: and 3 alike: 5.66403 / 7.60159 for 8 s)
SQ3_REGION2 = {"h2": 0.025, "coarse2": (0.125, 0.03125)}
#: below :data:`K3_SQ3_FINE_SIGMA` above :data:`K3_SQ3_FIRST_FINE_STEPS` steps (sigma 1.2,
#: T 20-30, where the bracket's CPU is at its budget) region 2 on half as many entries:
#: sigma 1.2, T 20, region 2's lattice alone 0.57 against 1.33 CPU s and 20 315 against
#: 40 814 entries, peak RSS 207 against 366 MB (sigma 1.5, T 11, three epochs: 5.66482
#: against 5.66222)
SQ3_REGION2_LIGHT = {"h2": 0.05, "coarse2": (0.25, 0.0625)}
#: up to this many steps, and from :data:`K3_SQ3_FINE_SIGMA` up to
#: :data:`K3_SQ3_FINE_STEPS`, regions 3's lattices are finer too (``h``, ``coarse``;
#: session 32's measured cause: sigma 1.5, T 11, 3 epochs 5.66403 -> 5.64538 with both;
#: regions 3 alone 5.68441 -> 5.66544 at about twice the law's CPU, session 33)
K3_SQ3_R3_FINE_STEPS = 15
SQ3_REGION3 = {"h": 0.05, "coarse": (0.25, 0.0625)}


def sq3_settings(sigma: float, steps: int) -> dict:
    """Proposition 12's settings in the route (:func:`k3_atoms`): :data:`SQ3_FINE` where
    ``sigma >= K3_SQ3_FINE_SIGMA`` or ``steps <= K3_SQ3_FINE_STEPS`` (the law's CPU about
    doubles: sigma 1.5, T 30: 14.9 -> 32.2 CPU s, 1.88391 -> 1.87883 at delta 1e-6), else
    :data:`SQ3_SETTINGS` (sigma 1.2, T 30: 34-38 CPU s on these nodes; on the finer,
    estimated from that factor, not measured: about 70); up to
    :data:`K3_SQ3_FIRST_FINE_STEPS` steps Proposition 13's first region on the step
    :data:`SQ3_FIRST_H` (``first_h``); region 2's own lattice :data:`SQ3_REGION2`
    (:data:`SQ3_REGION2_LIGHT` below sigma :data:`K3_SQ3_FINE_SIGMA` above
    :data:`K3_SQ3_FIRST_FINE_STEPS` steps), and regions 3's :data:`SQ3_REGION3` up to
    :data:`K3_SQ3_R3_FINE_STEPS` steps and from sigma :data:`K3_SQ3_FINE_SIGMA` up to
    :data:`K3_SQ3_FINE_STEPS` (session 33).

    Examples
    --------
    >>> sq3_settings(1.5, 30)["dl3"], sq3_settings(1.2, 20)["dl3"], sq3_settings(1.2, 30)["dl3"]
    (0.05, 0.05, 0.1)
    >>> sq3_settings(1.2, 11)["first_h"], "first_h" in sq3_settings(1.2, 20)
    (0.05, False)
    >>> sq3_settings(1.2, 30)["h2"], sq3_settings(1.5, 30)["h2"], sq3_settings(1.2, 11)["h2"]
    (0.05, 0.025, 0.025)
    >>> "h" in sq3_settings(1.2, 20), sq3_settings(1.5, 20)["h"]
    (False, 0.05)
    """
    fine = sigma >= K3_SQ3_FINE_SIGMA or steps <= K3_SQ3_FINE_STEPS
    out = dict(SQ3_FINE if fine else SQ3_SETTINGS)
    if steps <= K3_SQ3_FIRST_FINE_STEPS:
        out["first_h"] = SQ3_FIRST_H
    light = sigma < K3_SQ3_FINE_SIGMA and steps > K3_SQ3_FIRST_FINE_STEPS
    out.update(SQ3_REGION2_LIGHT if light else SQ3_REGION2)
    if steps <= K3_SQ3_R3_FINE_STEPS or (sigma >= K3_SQ3_FINE_SIGMA
                                          and steps <= K3_SQ3_FINE_STEPS):
        out.update(SQ3_REGION3)
    return out


def k3_remove_atoms(
    sigma: float, steps: int, *, progress: bool = False, drop_w: float = 1e-22,
    drop_r: float = 1e-16, step: float | None = None, log_theta: float | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """``(values, q, charge)``: for every ``gamma >= 0``, ``H_gamma(P_3 || Q) <= sum_i q_i
    (values_i - gamma)_+ + charge`` (Proposition 7 of docs/theory/allocation_k_of_t.md;
    module docstring).

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0.
    steps : int
        Steps per epoch ``T``, >= 3 (at ``T = 3`` the bound is of the exact pair, a
        Gaussian: no amplification).
    progress : bool, default False
        Show a ``tqdm`` bar after :data:`PROGRESS_DELAY` seconds.
    drop_w, drop_r, step : float, optional
        Cell pairs and lattice entries below these masses are charged ``E[value]`` in
        full; the least step of the second region's coarse lattice (default
        :func:`.random_allocation_k_law.settings`'s).
    log_theta : float, optional
        ``log`` of the split of ``M_2`` (default: 3.4 standard deviations above the mean
        of an unshifted ``log Y``, :func:`.random_allocation_k_law.settings`).

    Returns
    -------
    tuple
        Values (sorted, rounded up onto a log grid), their Q-masses and the charge.

    Raises
    ------
    ValueError
        If ``sigma <= 0`` or ``steps < 3`` (checked by
        :func:`.random_allocation_k_law.remove_atoms`).

    Examples
    --------
    >>> v, q, c = k3_remove_atoms(5.0, 3)  # T = 3: the exact pair is a Gaussian
    >>> bool(float(q @ v) + c >= 1.0)
    True
    """
    return remove_atoms(sigma, steps, 3, progress=progress, drop_w=drop_w, drop_r=drop_r,
                        step=step, log_theta=log_theta)


def k3_atoms(sigma: float, steps: int, *, progress: bool = False, four: bool = False,
             maclaurin_first: bool = False) -> tuple[np.ndarray, np.ndarray, float]:
    """The route's atoms: Proposition 10's four-level law
    (:func:`.random_allocation_k_law4.remove_atoms4`) from :data:`K3_FOUR_MIN_STEPS`
    steps (on :data:`COARSE4`'s nodes below sigma :data:`K3_COARSE_SIGMA` above
    :data:`K3_COARSE_STEPS` steps), Proposition 12's
    (:func:`.random_allocation_k_law_sq3.remove_atoms_sq3` on :func:`sq3_settings`'s
    nodes) with Proposition 13's first region (the others' sum of squares kept there
    too, ``first="squares"``) where :func:`k3_sq3_routed`, else Proposition 7's
    (:func:`k3_remove_atoms`).
    Measured
    (delta 1e-6, one epoch, the remove law; docs/theory/allocation_k_of_t.md, "four
    levels"): sigma 1, T 100: 2.1370 against 2.1558.  The last Proposition 12 law built
    is kept (a bracket asks for it twice).  ``four``: Proposition 10's law also where
    :func:`k3_sq3_routed` (the route's second law there: the mechanism answers with the
    least of both routes, :func:`allocation_k3_pair`'s ``four``); ``maclaurin_first``:
    there Proposition 12's law as before (Maclaurin's first region), built in the same
    pass as Proposition 13's (``remove_atoms_sq3(..., first="both")``, bit-equal to it
    built alone), the mechanism's third route there.

    Examples
    --------
    >>> v, q, c = k3_atoms(5.0, 3)  # below 10 steps: Proposition 7's law
    >>> bool(float(q @ v) + c >= 1.0)
    True
    """
    if k3_sq3_routed(sigma, steps) and not four:
        key = (float(sigma), int(steps))
        if key not in _ATOMS_SQ3:
            _ATOMS_SQ3.clear()
            _ATOMS_SQ3[key] = remove_atoms_sq3(sigma, steps, progress=progress, first="both",
                                               **sq3_settings(sigma, steps))
        return _ATOMS_SQ3[key][1 if maclaurin_first else 0]
    if steps >= K3_FOUR_MIN_STEPS:
        coarse = sigma < K3_COARSE_SIGMA and steps > K3_COARSE_STEPS
        return remove_atoms4(sigma, steps, 3, progress=progress, **(COARSE4 if coarse else {}))
    return k3_remove_atoms(sigma, steps, progress=progress)


#: the last Proposition 13 and 12 laws :func:`k3_atoms` built, by ``(sigma, steps)``
_ATOMS_SQ3: dict[tuple, tuple[np.ndarray, np.ndarray, float]] = {}


def k3_sq3_routed(sigma: float, steps: int) -> bool:
    """Whether :func:`k3_atoms` is Proposition 12's law (:data:`K3_SQ3_MIN_STEPS` to
    :data:`K3_SQ3_MAX_STEPS` steps, sigma :data:`K3_SQ3_MIN_SIGMA` to
    :data:`K3_SQ3_MAX_SIGMA`): there it was measured below Proposition 10's at delta
    1e-6 and, wherever its curve is above Proposition 10's (the far tail, from delta
    about 1.07e-9 down to the charge), the blocks' curve was below both (sigma 1.2 and
    1.5, T 11, 20 and 30, on every value of the three laws), so that the least of the
    route and the blocks is not above main's there (docs/theory/allocation_k_of_t.md,
    "Proposition 12's binning, its nodes and its route").

    Examples
    --------
    >>> k3_sq3_routed(1.2, 30), k3_sq3_routed(1.0, 30), k3_sq3_routed(1.2, 10)
    (True, False, False)
    """
    return (K3_SQ3_MIN_STEPS <= steps <= K3_SQ3_MAX_STEPS
            and K3_SQ3_MIN_SIGMA <= sigma <= K3_SQ3_MAX_SIGMA)


def k3_tried(sigma: float, t: int) -> bool:
    """Whether the route is tried at k = 3: where its law (Proposition 10's four levels
    from T 10) was measured below the blocks at delta 1e-6, one epoch (the remove law's
    epsilon against the blocks'; session 27, loaded CPU seconds of the law in brackets;
    docs/theory/allocation_k_of_t.md, "k = 3, direct"):

    ========  ==========  ===================================================
    T         sigma       measured (four-level law against the blocks)
    ========  ==========  ===================================================
    10        0.6 - 2.0   0.6: 12.7568 / 14.9107 (14 s); 1.5: 3.2672 / 3.4013;
                          2.0: 2.2891 / 2.3148
    11 - 30   0.6 - 1.5   0.6, T 30: 9.7497 / 10.6671 (32 s); 1.5, T 30:
                          1.8953 / 1.9103
    31 - 100  0.65 - 1.25 1.2, T 100: 1.4416 / 1.4501 (7 s); sigma 1, T 100:
                          2.1370 / 2.1958
    31 - 100  0.6 - 0.65  coarse nodes (:data:`COARSE4`; session 28): 0.6,
                          T 100: 7.0861 / 7.6360 (lower end 7.0019; 6 s)
    101 - 200 0.95 - 1.05 sigma 1, T 200: 1.4827 / 1.5009 (35 s)
    ========  ==========  ===================================================

    Not tried where the blocks were tighter: sigma 2, T 30 (1.2892 against 1.2734);
    sigma 1.5, T 100 (0.9893 against 0.9799); sigma 1.2, T 200 (0.9739 against 0.9687);
    nor below sigma 0.6 above T 30 or below 0.95 above T 100, where the law's CPU
    grows past the issue's 60 s (sigma 0.8, T 100: 42 s).

    Examples
    --------
    >>> k3_tried(1.0, 100), k3_tried(1.2, 100), k3_tried(1.5, 100), k3_tried(2.0, 10)
    (True, True, False, True)
    >>> k3_tried(0.6, 100), k3_tried(0.55, 100)
    (True, False)
    """
    if not (K3_MIN_STEPS <= t <= K3_MAX_STEPS and K3_MIN_SIGMA <= sigma <= K3_MAX_SIGMA):
        return False
    if t <= 10:
        return True
    if t <= 30:
        return sigma <= 1.5
    if t <= 100:
        return sigma <= 1.25
    return 0.95 <= sigma <= 1.05


def k3_envelope_law(sigma: float, t: int, direct, progress: bool = False):
    """The remove law whose curve is the lower convex envelope of the atoms ``direct`` and
    of Proposition 1's three blocks (Proposition 5, which needs of the epoch only that its
    curve is convex with value 1 at 0: true at every k)."""
    return envelope_law(sigma, t, 3, direct, progress)


class AllocationK3Remove(AllocationK2Remove):
    """The remove direction of one 3-of-T allocation epoch, bounded directly (module):
    :class:`.random_allocation_k2.AllocationK2Remove` with Proposition 7's atoms and the
    envelope with three blocks.

    Its add direction is the identity (see :class:`.random_allocation_k2.AllocationK2Remove`
    for why the engine's swapped reading stays sound): :func:`allocation_k3_pair`
    composes it with the blocks' add laws.

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0.
    steps : int
        Steps per epoch ``T``, >= 3.
    progress : bool, default True
        Progress bar while the law is built.
    envelope : bool, default False
        True: the envelope with the three blocks (Proposition 5), for several epochs;
        False: the truncated atoms (Lemma 4).
    four : bool, default False
        True: Proposition 10's law also where :func:`k3_sq3_routed` (:func:`k3_atoms`).
    maclaurin_first : bool, default False
        True: Proposition 12's law (Maclaurin's first region) where :func:`k3_sq3_routed`.

    Examples
    --------
    >>> round(float(AllocationK3Remove(5.0, 3, progress=False).epsilon(1e-3)), 2)
    0.93
    >>> from dpacct.mechanisms import GaussianMechanism  # the exact pair at T = 3
    >>> round(float(GaussianMechanism(5.0 / 3**0.5).epsilon(1e-3)), 2)
    0.87
    """

    def __init__(
        self, sigma: float, steps: int, *, progress: bool = True, envelope: bool = False,
        four: bool = False, maclaurin_first: bool = False,
    ) -> None:
        super().__init__(sigma, steps, progress=progress, envelope=envelope)
        if self.steps < 3:
            raise ValueError(f"steps must be >= 3 for the direct k = 3 bound, got {steps}")
        for name, flag in (("four", four), ("maclaurin_first", maclaurin_first)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be True or False, got {flag!r}")
        self.four, self.maclaurin_first = four, maclaurin_first

    def _atoms(self) -> tuple[np.ndarray, np.ndarray, float]:
        return k3_atoms(self.sigma, self.steps, progress=self.progress, four=self.four,
                        maclaurin_first=self.maclaurin_first)

    def _envelope_law(self, atoms):
        return k3_envelope_law(self.sigma, self.steps, atoms, self.progress)


@_pair_doc
def allocation_k3_pair(sigma: float, steps: int, epochs: int = 1, *, progress: bool = True,
                       four: bool = False, maclaurin_first: bool = False):
    """The direct k = 3 route: per epoch, :class:`AllocationK3Remove` (remove direction)
    and the add directions of Proposition 1's three blocks, composed over ``epochs``.

    Where :func:`k3_sq3_routed` (the route's law: Proposition 13's) the mechanism also
    builds this pair with ``maclaurin_first=True`` (Proposition 12's law, the route
    before session 32) and with ``four=True`` (Proposition 10's law) and answers with the
    least of the three (each a certified upper bound, so their least is one):
    Proposition 12's law is above Proposition 10's in the far tail (delta about 1e-9,
    docs/theory/allocation_k_of_t.md, "Proposition 12's binning, its nodes and its
    route"), and the least is never above any of the routes.

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0.
    steps : int
        Steps per epoch ``T``, >= 3 (at ``T = 3`` the bound is of the exact pair, a
        Gaussian: no amplification).
    four, maclaurin_first : bool, default False
        True: Proposition 10's (Proposition 12's) law where :func:`k3_sq3_routed`
        (:func:`k3_atoms`).
    {shared}

    Examples
    --------
    >>> run = allocation_k3_pair(5.0, 3, progress=False)
    >>> round(float(run.epsilon(1e-3)), 2)
    0.93
    """
    s = check_positive("sigma", sigma)
    t = check_count(steps, "steps")
    e = check_count(epochs, "epochs")
    return with_block_adds(AllocationK3Remove(s, t, progress=progress, envelope=e > 1,
                                              four=four, maclaurin_first=maclaurin_first),
                           s, t, 3, e, progress)
