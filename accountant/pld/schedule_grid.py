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
    ks = math.log(sigma) / w
    kq = math.log(q) / w
    # snap values within rounding error of a node onto it (grid-aligned steps stay put)
    ks_r, kq_r = round(ks), round(kq)
    ks = ks_r if abs(ks - ks_r) < 1e-9 else ks
    kq = kq_r if abs(kq - kq_r) < 1e-9 else kq
    if upper:
        i, j = math.floor(ks), math.ceil(kq)
        # guard the floating-point direction: sigma_cell <= sigma, q_cell >= q
        while _cell_value(i, w) > sigma:
            i -= 1
        while _cell_value(j, w) < q:
            j += 1
        s_cell, q_cell = _cell_value(i, w), min(_cell_value(j, w), 1.0)
    else:
        i, j = math.ceil(ks), math.floor(kq)
        while _cell_value(i, w) < sigma:
            i += 1
        while _cell_value(j, w) > q:
            j -= 1
        s_cell, q_cell = _cell_value(i, w), _cell_value(j, w)
    # exact grid values (a step given on the grid) keep their own value
    if math.isclose(s_cell, sigma, rel_tol=1e-12, abs_tol=0.0):
        s_cell = sigma
    if math.isclose(q_cell, q, rel_tol=1e-12, abs_tol=0.0):
        q_cell = q
    return s_cell, q_cell
