"""Compose on a fine loss grid, then re-discretise once onto a coarse one.

Connect-the-dots (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022) discretisation of
one step's privacy loss at loss step ``h`` widens the loss by up to ``h^2 / 4`` of
variance, and a composition of ``T`` discretised steps carries ``T`` such widenings:
the reason a schedule composed on a 1e-3 grid prints an epsilon a few 1e-4 above an
exact composition.  Composing a *block* of steps on a grid ``K`` times finer and
re-discretising the block's composed loss onto the coarse grid once (:func:`coarsen`)
makes the widening ``T (h / K)^2 / 4 + (T / B) h^2 / 4`` for blocks of ``B`` steps, at
the cost of composing each block on a ``K`` times longer (but short) window.

The re-discretisation keeps the P-mass and the Q-mass of every atom and is a
mean-preserving spread of ``e^{-l}``, in which the hockey-stick integrand is convex, so
the coarse PMF's curve is never below the fine one at any real epsilon (Jensen), and
domination survives composition: a coarsened block can stand in for the block.  The
proof, the floating-point slack and the tests: docs/theory/pld.md, "Coarsening a
composed loss".  Connect-the-dots itself: Doroshenko, Ghazi, Kamath, Kumar, Manurangsi
2022, Algorithm 1.
"""

from __future__ import annotations

import math

import numpy as np

from ..numerics import TINY, nonzero_at
from .pld_fft import _U

__all__ = ["coarsen", "coarsen_weights"]


def coarsen_weights(fine_step: float, factor: int) -> tuple[np.ndarray, np.ndarray]:
    """Connect-the-dots weights of the ``factor`` fine nodes inside one coarse bin.

    A fine node ``r`` steps (``0 <= r < factor``) above the coarse node ``a`` sits at
    ``u = r * fine_step`` into the coarse bin of width ``H = factor * fine_step``; its
    mass goes to ``a`` and ``a + H`` in the shares

    ``w_b(u) = (1 - e^{-u}) / (1 - e^{-H})`` and ``w_a(u) = 1 - w_b(u)
    = e^{-u} (1 - e^{-(H - u)}) / (1 - e^{-H})``,

    which keep its P-mass and its Q-mass (Doroshenko et al. 2022, Algorithm 1, applied
    to an atom).  Both are computed without cancellation (``expm1``) and are within a
    relative ``4 u`` of the exact values (``u = 2^-53``).

    Examples
    --------
    >>> w_a, w_b = coarsen_weights(0.25, 4)
    >>> bool(np.allclose(w_a + w_b, 1.0) and w_b[0] == 0.0)
    True
    >>> u, big_h = 0.5, 1.0  # the Q-mass is kept: w_a + w_b e^{-H} = e^{-u}
    >>> bool(np.isclose(w_a[2] + w_b[2] * math.exp(-big_h), math.exp(-u)))
    True
    """
    if not (isinstance(factor, int | np.integer) and factor >= 1):
        raise ValueError(f"factor must be an integer >= 1, got {factor!r}")
    if not (math.isfinite(fine_step) and fine_step > 0):
        raise ValueError(f"fine_step must be a finite positive float, got {fine_step!r}")
    u = np.arange(factor, dtype=float) * fine_step
    big = factor * fine_step
    den = -math.expm1(-big)
    w_b = -np.expm1(-u) / den
    w_a = np.exp(-u) * -np.expm1(-(big - u)) / den
    return w_a, w_b


def coarsen(
    first: int, pmf: np.ndarray, factor: int, fine_step: float, err: float = 0.0
) -> tuple[int, np.ndarray, float]:
    """Connect-the-dots re-discretisation of a fine-grid PMF onto a ``factor`` times
    coarser grid, rounded up: a pessimistic (dominating) PMF for any composition.

    The fine PMF has masses ``pmf[i]`` at losses ``(first + i) * fine_step``; the
    coarse one has masses ``out[j]`` at ``(cfirst + j) * factor * fine_step``.  Every
    fine atom between two coarse nodes is split between them as
    :func:`coarsen_weights` says (an atom on a coarse node stays), so the P-mass and
    the Q-mass are kept and the hockey-stick curve can only rise at every real
    epsilon (docs/theory/pld.md, "Coarsening a composed loss").  Masses are then
    rounded up by a relative ``(4 factor + 16) u``, which covers the weights' and the
    sums' round-off; if the coarse mass may exceed ``1`` it is divided by an upper
    bound ``s`` on its sum and ``s - 1 + 4u`` is added to the returned error (the
    removed part is non-negative with mass at most ``s - 1``).

    Parameters
    ----------
    first : int
        Fine grid node of ``pmf[0]``.
    pmf : numpy.ndarray
        Non-negative fine masses (finite part; the ``+inf`` mass is not touched).
    factor : int
        Coarse step over fine step, ``>= 1``.
    fine_step : float
        The fine loss step.
    err : float
        An l1 bound on the error measure the fine PMF already carries; it is carried
        through (times the slack).

    Returns
    -------
    (int, numpy.ndarray, float)
        ``(cfirst, out, err)``: the coarse PMF from coarse node ``cfirst`` on, and the
        carried error bound, to be added to delta at every epsilon (an upper bound on
        the hockey-stick change, as for
        :func:`~dpacct.accountant.pld.groups._compose_group`).

    Examples
    --------
    Two steps of a loss that is ``+0.3`` or ``-0.3`` with P-masses that make it a pair,
    coarsened from a 0.1 grid to a 0.4 grid: the curve never falls.

    >>> p = np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, math.exp(-0.3)])
    >>> p = p / p.sum()
    >>> cfirst, out, e = coarsen(-3, p, 4, 0.1)
    >>> def curve(first, pmf, step, eps):
    ...     l = (first + np.arange(pmf.size)) * step
    ...     return float(np.sum(pmf * np.maximum(1 - np.exp(eps - l), 0)))
    >>> all(curve(cfirst, out, 0.4, t) + e >= curve(-3, p, 0.1, t) for t in (-1, 0, 0.1, 0.2))
    True
    """
    if not (isinstance(first, int | np.integer)):
        raise TypeError(f"first must be an int, got {type(first).__name__}")
    pmf = np.asarray(pmf, dtype=float)
    if pmf.ndim != 1 or pmf.size == 0:
        raise ValueError("pmf must be a non-empty 1-D array")
    if not (math.isfinite(err) and err >= 0):
        raise ValueError(f"err must be a finite non-negative float, got {err!r}")
    w_a, w_b = coarsen_weights(fine_step, factor)
    if factor == 1:
        return int(first), pmf.copy(), float(err)
    # pad so that the fine nodes fill whole coarse bins: row j holds the nodes
    # (cfirst + j) * factor + r, r = 0..factor-1
    cfirst = math.floor(first / factor)
    lead = int(first - cfirst * factor)
    rows = -(-(lead + pmf.size) // factor)
    grid = np.zeros(rows * factor)
    grid[lead : lead + pmf.size] = pmf
    grid = grid.reshape(rows, factor)
    out = np.zeros(rows + 1)
    out[:-1] = grid @ w_a
    out[1:] += grid @ w_b
    slack = 1.0 + (4 * factor + 16) * _U
    out *= slack
    mass = float(np.sum(out)) * (1.0 + (out.size + 2) * _U) + TINY  # above the exact sum
    err = float(err) * slack
    if mass > 1.0:
        out /= mass  # each quotient within a relative u of the exact one: 4u more
        err += mass - 1.0 + 4 * _U
    nz = nonzero_at(out)
    if nz.size == 0:
        return int(cfirst), np.zeros(1), err
    return int(cfirst + nz[0]), out[nz[0] : nz[-1] + 1].copy(), err
