"""The largest ``e_j`` of ``n`` non-negative numbers given their sum and sum of squares.

Lemma 11 of docs/theory/allocation_k_of_t.md ("A law that keeps the others' sum of
squares", issue 39, session 28).  The k-of-T laws (Propositions 7, 9 and 10) keep the
largest one, two or three coordinates of an epoch and bound the elementary symmetric
polynomials ``e_j`` of the ``n`` others from their sum ``r`` alone, by Maclaurin's
inequality ``e_j <= C(n, j) (r / n)^j`` (the value at ``n`` equal numbers).  Keeping the
others' sum of squares ``s`` too makes ``e_2 = (r^2 - s) / 2`` exact, and the largest
``e_j`` for ``j >= 3`` is attained at ``n - 1`` equal numbers below one larger:

``a = m - d`` (``n - 1`` times), ``b = m + (n - 1) d``, ``m = r / n``,
``d = sqrt((s / n - m^2) / (n - 1))``,
``e_j <= C(n - 1, j) a^j + C(n - 1, j - 1) b a^(j - 1)``.

The proof (three coordinates at a time, Cirtoaje's equal-variable theorem at ``n = 3``)
is in the doc.  Importance sampling of the exact k-of-T pair (the benchmark
``benchmarks.random_allocation_k_truth``, levels ``q123`` / ``q12`` / ``q1``) puts the
(max, second, third, sum, sum of squares) pointwise bound 0.00-0.06 % above the truth at
k = 3 and 0.04-0.19 % at k = 4, where Proposition 10's (Maclaurin on the others) is up to
1.4 % and 1.7-2.4 % above it (docs, "Measured: the pointwise bound with the sum of
squares").  This module holds the bound itself; the law that integrates it over a lattice
of the others' (sum, sum of squares) at k = 3 is :mod:`.random_allocation_k_law_sq3`
(Proposition 12; certified, routed at sigma 1.2-1.5, T 11-30).
"""

from __future__ import annotations

import math

import numpy as np

from ..validation import check_count

__all__ = ["max_elementary_given_sums"]

_U = 2.0**-53  # unit round-off of float64


def max_elementary_given_sums(
    total: float | np.ndarray,
    squares: float | np.ndarray,
    n: int,
    j: int,
    *,
    upper: bool = False,
) -> np.ndarray:
    """The largest ``e_j(x)`` over ``x`` in ``[0, inf)^n`` with ``sum x = total`` and
    ``sum x^2 >= squares`` (Lemma 11 of docs/theory/allocation_k_of_t.md).

    For ``total^2 / n <= squares <= total^2`` the maximum over ``sum x^2 = squares`` is
    attained at ``n - 1`` copies of ``a = m - d`` and one ``b = m + (n - 1) d`` (``m =
    total / n``, ``d = sqrt((squares / n - m^2) / (n - 1))``), and it decreases in
    ``squares``, so ``squares`` below ``total^2 / n`` (no such ``x``; "at least" is then
    no constraint) gives Maclaurin's ``C(n, j) (total / n)^j`` and ``squares`` above
    ``total^2`` is taken as ``total^2`` (``a = 0``).  The value increases in ``total`` and
    decreases in ``squares`` (Lemma 11 (iii)): a lattice cell of ``(total, squares)`` is
    bounded at its largest total and least sum of squares.

    Parameters
    ----------
    total, squares : float or array_like
        The numbers' sum and (a lower bound on) their sum of squares, ``>= 0``
        (broadcast together).
    n : int
        How many numbers, ``>= 1``.
    j : int
        The degree, ``>= 0`` (``e_0 = 1``; ``j > n`` gives 0).
    upper : bool
        If True, round outward so that the float returned is at least the exact value of
        the formula at the given floats (every operation's round-off bounded; the
        certificate of a law).  If False, plain float evaluation (a measurement).

    Returns
    -------
    numpy.ndarray
        The bound, shape of ``total`` and ``squares`` broadcast.

    Raises
    ------
    ValueError
        If ``n < 1``, ``j < 0``, or a total or sum of squares is negative or not finite.

    Examples
    --------
    >>> float(max_elementary_given_sums(3.0, 3.0, 3, 3))  # equal numbers: Maclaurin
    1.0
    >>> float(max_elementary_given_sums(3.0, 5.0, 3, 2))  # e_2 = (9 - 5) / 2, exact
    2.0
    """
    n = check_count(n, "n")
    j = check_count(j, "j", allow_zero=True)
    r = np.asarray(total, dtype=float)
    s = np.asarray(squares, dtype=float)
    for name, arr in (("total", r), ("squares", s)):
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise ValueError(f"{name} must lie in [0, inf), got a value outside it")
    r, s = np.broadcast_arrays(r, s)
    if j == 0:
        return np.ones(r.shape)
    if j > n:
        return np.zeros(r.shape)
    if n == 1:
        return r * (1.0 + 2.0 * _U) if upper else r.copy()
    m = r / n
    if not upper:
        v = np.clip(s / n - m * m, 0.0, (n - 1) * m * m)
        d = np.sqrt(v / (n - 1))
        a, b = m - d, m + (n - 1) * d
        a = np.maximum(a, 0.0)
    else:
        # Each bound below holds for the exact value of the formula at the given floats.
        m_hi, m_lo = m * (1 + 2 * _U), m * (1 - 2 * _U)
        sn = s / n
        w_lo = sn * (1 - 2 * _U) - (m_hi * m_hi) * (1 + 2 * _U)
        w_hi = sn * (1 + 2 * _U) - (m_lo * m_lo) * (1 - 2 * _U)
        v_lo = np.maximum(w_lo - 2 * _U * np.abs(w_lo), 0.0)
        v_hi = np.maximum(w_hi + 2 * _U * np.abs(w_hi), 0.0)
        d_lo = np.sqrt(v_lo / (n - 1) * (1 - 4 * _U)) * (1 - 4 * _U)
        d_hi = np.minimum(np.sqrt(v_hi / (n - 1) * (1 + 4 * _U)) * (1 + 4 * _U), m_hi)
        a = np.maximum(m_hi - d_lo, 0.0) * (1 + 2 * _U)
        b = (m_hi + (n - 1) * d_hi * (1 + 2 * _U)) * (1 + 4 * _U)
    out = math.comb(n - 1, j) * a**j + math.comb(n - 1, j - 1) * b * a ** (j - 1)
    if upper:
        # C(n-1, .) exact below 2**53; j + 1 products and powers, one sum: each a
        # relative error of at most a few units, so 4 (j + 4) units bound them all.
        out = out * (1 + 4 * (j + 4) * _U)
    return out
