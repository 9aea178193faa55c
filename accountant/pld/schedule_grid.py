"""The rounding grid of DP-SGD schedules: cell values and the rounding of one step.

Cells are the points ``exp(k * log1p(grid))`` (integer ``k``) in both sigma and q;
see :mod:`~dpacct.accountant.pld.schedule` for why rounding to a cell is sound.
"""

from __future__ import annotations

import math
from functools import lru_cache

from ..validation import check_positive, show_value

__all__: list[str] = []


#: default relative width of a rounding cell in sigma and in q (about 0.1 %)
DEFAULT_GRID = 2.0**-10


#: the fast path leaves a schedule of at most this many distinct (sigma, q) pairs
#: unrounded: its cost is per cell, and rounding such a schedule merges little
EXACT_CELLS = 1024


#: ... and a coordinate with at most this many distinct values (a constant q)
EXACT_VALUES = 64


def _check_grid(grid: object) -> float:
    g = check_positive("grid", grid)
    if not g < 0.5:
        raise ValueError(
            f"grid must lie in (0, 0.5) (a relative cell width), got {show_value(grid)}"
        )
    return g


@lru_cache(maxsize=1 << 16)
def _cell_value(index: int, log_width: float) -> float:
    return math.exp(index * log_width)


def _round(sigma: float, q: float, w: float, upper: bool) -> tuple[float, float]:
    return _round_sigma(sigma, w, upper), _round_q(q, w, upper)


def _snapped(k: float) -> float:
    # snap values within rounding error of a node onto it (grid-aligned steps stay put)
    k_r = round(k)
    return k_r if abs(k - k_r) < 1e-9 else k


def _round_sigma(sigma: float, w: float, upper: bool) -> float:
    """:func:`_round`'s sigma: the grid value at or below ``sigma`` (``upper``), else
    at or above; the two coordinates are rounded apart (a caller keeping one exact
    rounds only the other)."""
    ks = _snapped(math.log(sigma) / w)
    if upper:
        i = math.floor(ks)
        # guard the floating-point direction: sigma_cell <= sigma
        while _cell_value(i, w) > sigma:
            i -= 1
    else:
        i = math.ceil(ks)
        while _cell_value(i, w) < sigma:
            i += 1
    s_cell = _cell_value(i, w)
    # exact grid values (a step given on the grid) keep their own value
    return sigma if math.isclose(s_cell, sigma, rel_tol=1e-12, abs_tol=0.0) else s_cell


def _round_q(q: float, w: float, upper: bool) -> float:
    """:func:`_round`'s q: the grid value at or above ``q`` (``upper``, at most 1),
    else at or below."""
    kq = _snapped(math.log(q) / w)
    if upper:
        j = math.ceil(kq)
        # guard the floating-point direction: q_cell >= q
        while _cell_value(j, w) < q:
            j += 1
        q_cell = min(_cell_value(j, w), 1.0)
    else:
        j = math.floor(kq)
        while _cell_value(j, w) > q:
            j -= 1
        q_cell = _cell_value(j, w)
    return q if math.isclose(q_cell, q, rel_tol=1e-12, abs_tol=0.0) else q_cell
