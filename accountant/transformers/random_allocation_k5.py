"""The k = 5 direct route's law where it keeps the others' sum of squares (Proposition 16).

Proposition 16 of docs/theory/allocation_k_of_t.md is Propositions 12-14 at ``k = 5``:
Proposition 10's four-level law (:mod:`.random_allocation_k_law4`) whose second and third
regions (and, over several epochs, its first) bound the ``n`` coordinates not kept through
their sum and sum of squares with Lemma 11's ``hat G_j``, ``j <= 5`` (Lemma 11 (v) gives
``hat G_5``), built by :func:`.random_allocation_k_law_sq3.remove_atoms_sq3` at ``k=5``.
Lattices of 5-8 others credit each cell's upper atom the lower end's square only (Lemma 11
(v) proves the tangent's property for ``hat G_5`` from ``n = 9``;
:func:`.random_allocation_k_law_sq3.needs_lower_end`).

Where :func:`k5_sq_routed` the k = 5 route's law
(:func:`.random_allocation_k4.k_atoms`) is this one on :data:`K5_SQ_SETTINGS`; the
mechanism also answers with the route on Proposition 10's law and takes the least of both
(:func:`.random_allocation_k4.sq_routed`), so no answer is above main's.  Measured (delta
1e-6, the remove law alone, loaded CPU s; session 36, benchmarks/README.md): sigma 1.2, T
20: 5.29842 in 12.7 s (Proposition 10's route 5.48290 in 1.7 s; on ``dl3`` 0.2, ``eta``
0.016, cap 100: 5.34121 in 6.4 s); sigma 1, T 10: 9.25469 in 15.1 s (9.72709 in 2.1 s;
9.38950 in 5.4 s); importance-sampled truths 5.2488 and 9.1479.  The brackets at delta 1e-6
are 0.94-1.49 % wide at one epoch and 1.75-3.07 % at three on the four corners (4.56-6.41 %
and 4.58-6.41 % before), at 4.6-8.4 times the CPU.
"""

from __future__ import annotations

import functools

import numpy as np

from .random_allocation_k_law_sq3 import remove_atoms_sq3

__all__ = ["K5_SQ_SETTINGS", "k5_sq_atoms", "k5_sq_routed"]

#: Proposition 16's nodes where :func:`k5_sq_routed` (Proposition 10's ``dl3`` and ``eta``
#: of the default nodes; no cut raised; the first region's low cells' cuts on a 0.25 grid;
#: each other's square capped at 400, not 100: sigma 1, T 10, delta 1e-6, the law alone
#: 9.37310 -> 9.25469 for 10.7 -> 15.1 CPU s; sigma 1.2, T 20 5.29922 -> 5.29842)
K5_SQ_SETTINGS = {"dl3": 0.1, "eta": 8e-3, "cut_step": 1e-4, "first_low": 1.0,
                  "first_low_step": 0.25, "cap": 400.0}
#: the rectangle of (sigma, T) where :func:`k5_sq_routed` (measured at its corners)
K5_SQ_SIGMA = (1.0, 1.2)
K5_SQ_STEPS = (10, 20)


def k5_sq_routed(sigma: float, steps: int, k: int) -> bool:
    """Whether the k = 5 route's law is Proposition 16's: at ``k = 5``, sigma in
    :data:`K5_SQ_SIGMA` and ``T`` in :data:`K5_SQ_STEPS` (both inclusive), where it was
    measured below Proposition 10's (session 36).

    Examples
    --------
    >>> [k5_sq_routed(*row) for row in ((1.2, 20, 5), (1.0, 10, 5), (1.2, 20, 4),
    ...                                  (1.5, 20, 5), (1.0, 30, 5))]
    [True, True, False, False, False]
    """
    lo_s, hi_s = K5_SQ_SIGMA
    lo_t, hi_t = K5_SQ_STEPS
    return k == 5 and lo_s <= sigma <= hi_s and lo_t <= steps <= hi_t


def k5_sq_atoms(sigma: float, steps: int, *, progress: bool = False, epochs: int = 1
                ) -> tuple[np.ndarray, np.ndarray, float]:
    """``(values, q, charge)`` of Proposition 16's law on :data:`K5_SQ_SETTINGS`: for every
    ``gamma >= 0``, ``H_gamma(P_5 || Q) <= sum_i q_i (values_i - gamma)_+ + charge`` (one
    5-of-T epoch's remove direction); its first region keeps the others' sum of squares
    only where ``epochs > 1`` (one epoch at delta 1e-6 does not read it: sigma 1.2, T 20,
    ``dl3`` 0.2: 5.34121 without, 5.34252 with).  The last law built is kept.

    Parameters
    ----------
    sigma, steps : float, int
        The noise multiplier (> 0) and the steps of an epoch (``T >= 6``).
    progress : bool, default False
        Whether a ``tqdm`` bar is shown while the law is built.
    epochs : int, default 1
        How many epochs the law will be composed over (> 1: the first region's squares).

    Returns
    -------
    tuple
        ``(values, q, charge)``.

    Raises
    ------
    ValueError
        From :func:`.random_allocation_k_law_sq3.remove_atoms_sq3`, where ``sigma <= 0``
        or ``steps < 6``.

    Examples
    --------
    >>> v, q, c = k5_sq_atoms(4.0, 6)
    >>> bool(float(q @ v) + c >= 1.0)
    True
    """
    return _last_law(float(sigma), int(steps), epochs > 1, progress)


@functools.lru_cache(maxsize=1)  # the last law: a bracket asks for it twice
def _last_law(sigma: float, steps: int, several: bool, progress: bool) -> tuple:
    first = "squares" if several else "maclaurin"
    return remove_atoms_sq3(sigma, steps, k=5, progress=progress, first=first,
                            **K5_SQ_SETTINGS)
