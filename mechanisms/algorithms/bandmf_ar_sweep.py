"""One term of Theorem 6's transfers for every ``W_0`` node at once (session 45).

Theorem 6's laws (:func:`.bandmf_ar_standin.ar_remove_law`, :func:`.bandmf_ar_add.ar_add_law`)
run one transfer per grid node of ``W_0``.  At term ``s`` every transfer adds the same
quantity to its states, ``exp(C w_i - half_s) e^(A x) / t`` for ``W_s`` node ``i`` and
``X_s`` node ``x``, to the same partial-sum grid: where a state sits in cell ``c``, the
rounded sum's lower cell ``j`` and upper probability ``p`` (:func:`.bandmf_two_band._spread`)
depend on ``(s, i, x, c)`` only, not on ``W_0``.  :func:`term_cells` computes them once per
term over the cells that any transfer occupies, with the same floating-point operations
as :func:`.bandmf_ar_standin._add_term` (elementwise, so each ``(j, p)`` is the very pair
that function computes for that state), and :func:`apply_term` moves one transfer's
masses with them, summing each new cell's contributions in the same order as
``_add_term`` (``numpy.bincount`` over ``(i, x, c)`` in C order, the lower parts and the
upper parts in two sums added last): the laws are the same floats, bit for bit, at a
fraction of the cost (the rounding was three quarters of the per-state work).
"""

from __future__ import annotations

import numpy as np

from dpacct.mechanisms.algorithms.bandmf_two_band import _away, _spread

__all__ = ["apply_term", "term_cells"]


def term_cells(g_in: np.ndarray, cells: tuple[int, int], g_out: np.ndarray,
               wg: np.ndarray, ex: np.ndarray, big_c: float, half_s: float, t: int,
               fac: float, up: bool) -> tuple | None:
    """The rounding of one term for every ``W`` node, ``X`` node and input cell of
    ``cells = (bot, top)`` (cells of ``g_in``) onto ``g_out``: ``(idx, p, bot, jlo,
    width)`` with ``p`` the upper probabilities and ``idx = i width + j - jlo`` the lower
    cells ``j`` in a window of ``width = jhi - jlo + 2`` cells per ``W`` row ``i``
    (``[jlo, jhi]`` the range of ``j``), each of shape ``(W nodes, X nodes, top - bot)``;
    None where a remove-direction sum reaches ``g_out[-1]`` (there
    :func:`.bandmf_ar_standin._add_term`, which raises for its own states, decides).

    The term and the sums are formed as in ``_add_term`` (``up``: the remove direction;
    else sums one ulp down and clipped at 0, the top cell absorbing)."""
    bot, top = cells
    term = np.exp(big_c * wg - half_s)[:, None] * ex[None, :] / t * fac
    y = _away(g_in[bot:top][None, None, :] + term[:, :, None], up)
    if not up:
        y = np.maximum(y, 0.0)
    elif float(y.max()) >= float(g_out[-1]):
        return None
    j, p = _spread(y, g_out, up)
    jlo = int(j.min())
    width = int(j.max()) - jlo + 2
    j += (np.arange(wg.size) * width - jlo)[:, None, None]
    return j, p, bot, jlo, width


def apply_term(cells: tuple, d: np.ndarray, cols: tuple[int, int], wx: np.ndarray,
               size: int) -> tuple[np.ndarray, int]:
    """Move the masses ``d`` (``(W nodes, cols[1] - cols[0])``, input cells ``cols``) by the
    rounding ``cells`` of :func:`term_cells`, weighted by the ``X`` hat masses ``wx``:
    the new masses on output cells ``[off, off + width)`` and ``off``.

    Bit for bit :func:`.bandmf_ar_standin._add_term`'s result on those cells (zero
    elsewhere): the live rows' states in the same order, the same products, the same
    two ``bincount`` sums per cell; the output's row stride is the window's instead of
    the grid's, and the upper parts are shifted by one cell after their sum instead of
    before (the same additions)."""
    idx, p, bot, jlo, width = cells
    nrow = d.shape[0]
    live = np.nonzero(d.any(axis=1))[0]
    # the live rows, as a slice where they are contiguous (views, no gathered copies)
    rows = slice(live[0], live[-1] + 1) if live[-1] - live[0] + 1 == live.size else live
    a, b = cols[0] - bot, cols[1] - bot
    mass = d[rows]
    wt = mass[:, None, :] * wx[None, :, None]
    hi = wt * p[rows, :, a:b]
    wt -= hi
    flat = idx[rows, :, a:b].ravel()
    out = np.bincount(flat, wt.ravel(), minlength=nrow * width)
    up = np.bincount(flat, hi.ravel(), minlength=nrow * width)
    out[1:] += up[:-1]
    out = out.reshape(nrow, width)
    if jlo + width > size:  # the add direction's absorbing top: its upper parts (0) dropped
        out = out[:, : size - jlo]
    return out, jlo
