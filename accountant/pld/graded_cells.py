"""Connect-the-dots cells whose node spacing grows along the long tail.

A subsampled-Gaussian step's loss runs out to a few loss units on one side (the remove
direction's large ``x``, the add direction's mirror) while almost all of its mass lies
within a few ``q`` of zero: on a fine grid ``h / K`` nearly every bin of a cell holds
tail mass below ``1e-6``, and evaluating the normal CDFs at those nodes is most of what
a cell costs.  Connect-the-dots (Doroshenko et al. 2022, Algorithm 1) dominates for any
set of nodes (the argument of :mod:`~dpacct.accountant.pld.split_cells`), so a *graded*
cell takes fine nodes over its bulk and widens the spacing level by level as the tail
thins out: level ``j >= 1`` spaces its nodes ``2^(j-1) h`` apart and begins where the
mixture's tail mass beyond falls below ``LEVEL_SHARE / (K^2 16^(j-1))``.

Connect-the-dots in a bin of width ``w`` widens the loss by at most ``w^2 / 4`` of
variance per unit of mass in the bin, so level ``j`` adds at most ``LEVEL_SHARE
(h / K)^2 / 4 * 4^-(j-1)``, and all levels together at most ``(4 / 3) LEVEL_SHARE``
times what one unit of mass on the fine grid does -- and a cell of thousands of fine
bins is evaluated on a few hundred nodes.  The PMFs are on the fine grid (zeros between
the tail's nodes), as :func:`~dpacct.accountant.pld.sgm_cells._pessimistic_cells` gives
them at ``h / K``, so they compose and coarsen the same way.
"""

from __future__ import annotations

import numpy as np

from .sgm_cells import _cell_ranges, _loss_of_x
from .split_cells import _by_blocks, _core_x

__all__: list[str] = []


#: the first coarse level begins where the tail mass beyond is at most this share over
#: the refinement squared (:data:`~dpacct.accountant.pld.split_cells.CORE_SHARE`'s
#: rule); each further level at a sixteenth of the previous one's
LEVEL_SHARE = 1e-3
#: coarse levels: spacings ``h, 2h, ..., 2^(LEVELS-1) h`` (the last one, 16 384 steps
#: of ``h``, holds any tail of mass below ``LEVEL_SHARE / 16^(LEVELS-1)``, far below
#: any tail cut)
LEVELS = 15
#: ... but no spacing wider than this (loss units): connect-the-dots sends part of a
#: bin's mass to its right node, and the Chernoff windows weigh mass at loss ``l`` by
#: ``e^{t l}`` up to ``t = 64``; a bin of width ``w`` raises that weight by at most
#: ``e^{64 w}``, at most ``e`` here (wider far-tail bins made the windows, and every FFT
#: on them, up to 1.8 times longer)
MAX_SPACING = 2.0**-6


def _graded_nodes(
    sigma: np.ndarray, q: np.ndarray, step: float, factor: int, tau: float, add: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per cell, its first fine node, node count, and the flat fine-grid node indices
    (``(first, count, cell, nodes)``, as :func:`~dpacct.accountant.pld.split_cells.
    _split_nodes` returns them): fine nodes over the bulk, then level ``j`` nodes
    ``factor 2^(j-1)`` fine steps apart, covering at least the fine cell's range
    (:func:`~dpacct.accountant.pld.sgm_cells._cell_ranges`, tails beyond ``tau``)."""
    fine = step / factor
    f_first, f_nb = _cell_ranges(sigma, q, fine, tau, add)
    f_last = f_first + f_nb
    # mirrored for the add direction: the long tail is then on the right too
    lo, hi = (-f_last, -f_first) if add else (f_first, f_last)
    # the levels whose spacing 2^j step is at most MAX_SPACING (at least the first)
    levels = min(LEVELS, max(1, 1 + int(np.floor(np.log2(MAX_SPACING / step)))))
    shares = LEVEL_SHARE / float(factor) ** 2 / 16.0 ** np.arange(levels)
    x = _core_x(sigma[:, None], q[:, None], shares[None, :])
    loss = _loss_of_x(x, sigma[:, None], q[:, None])  # level boundaries, increasing
    spacing = factor * 2 ** np.arange(levels)  # level j + 1's spacing in fine steps
    bound = np.ceil(loss / (step * 2.0 ** np.arange(levels))).astype(np.int64) * spacing
    counts = np.empty((sigma.size, levels + 1), dtype=np.int64)
    end = np.clip(bound[:, 0], lo, hi)
    counts[:, 0] = end - lo  # the fine bulk
    for j in range(levels):  # a handful of levels: vectorised over the cells
        target = hi if j == levels - 1 else np.minimum(bound[:, j + 1], hi)
        n = np.maximum(-((end - target) // spacing[j]), 0)
        counts[:, j + 1] = n
        end = end + n * spacing[j]
    count = counts.sum(axis=1) + 1
    steps = np.concatenate([[1], spacing])  # the fine bulk, then the levels
    cell = np.repeat(np.arange(sigma.size), count)
    inc = np.repeat(np.tile(steps, sigma.size), counts.ravel())
    # per cell: the first node, then its increments
    flat = np.zeros(int(count.sum()), dtype=np.int64)
    starts = np.cumsum(count) - count
    mask = np.ones(flat.size, dtype=bool)
    mask[starts] = False
    flat[mask] = inc
    flat[starts] = lo - np.concatenate([[0], end[:-1]])  # undo the previous cell's end
    # the last level may overshoot the range: its last node comes back to the range's
    # end (a narrower last bin; the node before it lies below the end)
    nodes = np.minimum(np.cumsum(flat), np.repeat(hi, count))  # hi[cell], by repeat
    if add:  # back from the mirror: each cell's nodes reversed and negated
        k = np.arange(nodes.size) - starts[cell]
        nodes = -nodes[starts[cell] + count[cell] - 1 - k]
    return nodes[starts], count, cell, nodes


def graded_cells(
    sigma: np.ndarray, q: np.ndarray, step: float, factor: int, tau: float, add: bool
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """Connect-the-dots PMFs of subsampled-Gaussian cells on the grid ``step / factor``,
    with node spacing growing level by level along the long tail.

    Same output as :func:`~dpacct.accountant.pld.sgm_cells._pessimistic_cells` at
    ``step / factor``: ``(first, pmfs, infs)``, the fine node of each PMF's first
    entry, the PMFs, and the P-mass beyond the last node (it goes to ``+inf``).  Every
    PMF dominates its step (connect-the-dots on any node set keeps both masses and is a
    mean-preserving spread of ``e^{-loss}`` in each bin); the nodes cover the uniform
    fine cell's range, so no more mass is cut.

    Parameters
    ----------
    sigma, q : numpy.ndarray
        The cells' noise multipliers and sampling rates.
    step : float
        The coarse loss step; the PMFs are on ``step / factor``.
    factor : int
        Refinement, a power of two.
    tau : float
        Tail mass cut per step (beyond it, ``+inf``).
    add : bool
        The add direction (else remove).

    Examples
    --------
    Both masses are kept, and the far tail is held by a few nodes:

    >>> first, pmfs, infs = graded_cells(
    ...     np.array([1.0]), np.array([0.01]), 1e-3, 4, 1e-17, False)
    >>> loss = (first[0] + np.arange(pmfs[0].size)) * 1e-3 / 4
    >>> bool(abs(pmfs[0].sum() + infs[0] - 1) < 1e-12)
    True
    >>> bool(np.sum(pmfs[0] * np.exp(-loss)) <= 1 + 1e-12)
    True
    >>> bool(np.count_nonzero(pmfs[0]) < pmfs[0].size // 4)
    True
    """
    if not (isinstance(factor, int | np.integer) and factor >= 1 and factor & (factor - 1) == 0):
        raise ValueError(f"factor must be a power of two >= 1, got {factor!r}")
    sigma = np.atleast_1d(np.asarray(sigma, dtype=float))
    q = np.atleast_1d(np.asarray(q, dtype=float))
    return _by_blocks(sigma, q, step, int(factor), tau, add, _graded_nodes)
