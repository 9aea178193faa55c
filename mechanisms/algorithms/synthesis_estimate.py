"""Estimation for marginal synthesis: projection onto the local polytope, and IPF.

Post-processing of the noisy marginals (step 2 of :mod:`dpacct.mechanisms.algorithms.synthesis`,
whose module docstring describes the whole recipe): the least-squares projection of the
noisy tables onto consistent probability tables (:func:`project_marginals`) and the
maximum-entropy joint distribution with given marginals (:func:`ipf`).  Every name here
is importable from :mod:`dpacct.mechanisms.algorithms.synthesis`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["ipf", "project_marginals", "project_simplex"]


# ----------------------------------------------------------------------------------
# projections
# ----------------------------------------------------------------------------------


def project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row of ``v`` onto the probability simplex.

    Wang & Carreira-Perpinan 2013, "Projection onto the probability simplex: an efficient
    algorithm with a simple proof, and an application", Algorithm 1 (also Duchi et al.
    2008, Figure 1): sort ``u`` descending, ``rho = max{j : u_j + (1 - sum_{i<=j} u_i)/j > 0}``,
    ``lambda = (1 - sum_{i<=rho} u_i) / rho``, answer ``max(v + lambda, 0)``.  Rows may be
    padded with NaN (ignored and returned as NaN), so tables of different sizes are
    projected in one vectorised call.

    Parameters
    ----------
    v : array_like, shape (k,) or (m, k)

    Examples
    --------
    >>> project_simplex(np.array([0.5, 0.8, -0.3])).tolist()
    [0.35, 0.65, 0.0]
    >>> project_simplex(np.array([[0.2, 0.2], [3.0, np.nan]])).tolist()
    [[0.5, 0.5], [1.0, nan]]
    """
    v = np.asarray(v, dtype=float)
    one_d = v.ndim == 1
    x = np.atleast_2d(v)
    valid = ~np.isnan(x)
    if not valid.any(axis=1).all():
        raise ValueError("project_simplex: every row needs at least one non-NaN entry")
    u = -np.sort(-x, axis=1)  # descending; NaN stays last
    css = np.cumsum(u, axis=1)
    j = np.arange(1, x.shape[1] + 1)
    cond = (u + (1.0 - css) / j) > 0  # False on NaN
    rho = cond.sum(axis=1)
    lam = (1.0 - css[np.arange(x.shape[0]), rho - 1]) / rho
    out = np.maximum(x + lam[:, None], 0.0)
    out[~valid] = np.nan
    return out[0] if one_d else out


class _Layout:
    """Flat layout of a list of tables (cliques of 1 or 2 columns) for the projections."""

    def __init__(self, cliques: Sequence[tuple[int, ...]], sizes: Sequence[int]) -> None:
        self.cliques = [tuple(c) for c in cliques]
        self.shapes = [tuple(sizes[a] for a in c) for c in self.cliques]
        self.ncells = np.array([int(np.prod(s)) for s in self.shapes])
        self.offsets = np.concatenate([[0], np.cumsum(self.ncells)])
        self.total = int(self.offsets[-1])
        self.table_of_cell = np.repeat(np.arange(len(self.cliques)), self.ncells)
        width = int(self.ncells.max())
        self.pad = np.full((len(self.cliques), width), -1, dtype=np.int64)
        for t, (o, k) in enumerate(zip(self.offsets[:-1], self.ncells, strict=True)):
            self.pad[t, :k] = np.arange(o, o + k)
        self.pad_valid = self.pad >= 0
        # per attribute shared by >= 2 tables: the cells, their group (table, value)
        # and the number of cells per value in their table
        self.groups: list[tuple[np.ndarray, np.ndarray, np.ndarray, int, int]] = []
        for a in sorted({a for c in self.cliques for a in c}):
            tabs = [t for t, c in enumerate(self.cliques) if a in c]
            if len(tabs) < 2:
                continue
            cells, grp, per = [], [], []
            for local, t in enumerate(tabs):
                pos = self.cliques[t].index(a)
                idx = np.indices(self.shapes[t])[pos].ravel()
                cells.append(np.arange(self.offsets[t], self.offsets[t + 1]))
                grp.append(local * sizes[a] + idx)
                per.append(self.ncells[t] // sizes[a])
            self.groups.append(
                (np.concatenate(cells), np.concatenate(grp), np.array(per, float), len(tabs),
                 sizes[a], np.array(tabs))
            )

    def split(self, x: np.ndarray) -> list[np.ndarray]:
        return [
            x[o:o + k].reshape(s)
            for o, k, s in zip(self.offsets[:-1], self.ncells, self.shapes, strict=True)
        ]


def _project_consistent(
    x: np.ndarray, lay: _Layout, weights: np.ndarray | None = None
) -> np.ndarray:
    """Euclidean projection onto {every table sums to 1, shared columns agree}.

    For column ``a`` shared by tables ``C`` with ``k_C`` cells per value of ``a``, the
    closest consistent tables move table ``C`` by ``(mu - m_C) / k_C`` on every cell of
    value row ``i``, with ``mu = sum_C (m_C / k_C) / sum_C (1 / k_C)``: the
    inverse-variance weighted average of the tables' ``a``-marginals ``m_C`` (Hay et al.
    2010; Qardaji, Yang, Li 2014, Section 4.3).  Once all totals agree, the correction
    directions of different columns are mutually orthogonal (zero-sum row-constant
    against zero-sum column-constant), so one pass over the columns is the exact
    projection onto the intersection.

    With ``weights`` ``w_C`` (the norm ``sum_C w_C ||x_C||^2``) the same argument holds
    table by table (a weight scales a table's inner product, so the orthogonality is
    kept) and the common marginal is ``mu = sum_C (w_C m_C / k_C) / sum_C (w_C / k_C)``,
    the minimiser of ``sum_C w_C (mu - m_C)^2 / k_C``.
    """
    sums = np.bincount(lay.table_of_cell, weights=x, minlength=len(lay.cliques))
    x = x + ((1.0 - sums) / lay.ncells)[lay.table_of_cell]
    for cells, grp, per, ntab, size, tabs in lay.groups:
        m = np.bincount(grp, weights=x[cells], minlength=ntab * size).reshape(ntab, size)
        if weights is None:  # the unweighted expression, kept as it was: same digits
            mu = (m / per[:, None]).sum(axis=0) / (1.0 / per).sum()
        else:
            w = weights[tabs] / per
            mu = (w[:, None] * m).sum(axis=0) / w.sum()
        x[cells] += ((mu[None, :] - m) / per[:, None]).ravel()[grp]
    return x


def _project_simplices(x: np.ndarray, lay: _Layout) -> np.ndarray:
    padded = np.where(lay.pad_valid, x[np.maximum(lay.pad, 0)], np.nan)
    proj = project_simplex(padded)
    return proj[lay.pad_valid]


def project_marginals(
    tables: Sequence[np.ndarray],
    cliques: Sequence[tuple[int, ...]],
    sizes: Sequence[int],
    *,
    max_iter: int = 2000,
    tol: float = 1e-9,
    weights: Sequence[float] | None = None,
) -> tuple[list[np.ndarray], int]:
    """Least-squares projection of noisy proportion tables onto the local polytope.

    Solves ``min sum_C ||P_C - Z_C||^2`` over tables ``P_C >= 0`` that sum to one and
    agree on every column they share (McKenna, Mullins, Sheldon, Miklau 2021,
    Section 3), by Dykstra's algorithm (Boyle & Dykstra 1986) alternating the exact
    projection onto the consistent tables (:func:`_project_consistent`) and onto the
    simplices (:func:`project_simplex`).  Dykstra's iterates converge to the projection
    onto the intersection (not merely a point of it).

    Parameters
    ----------
    tables : sequence of ndarray
        Noisy tables (proportions: counts divided by an estimate of the row count), one
        per clique, of shape ``(sizes[a], ...)`` for the clique's columns ``a``.
    cliques : sequence of tuple of int
        The columns (indices) of each table: one or two columns each.
    sizes : sequence of int
        Domain size of every column.
    max_iter : int
        Maximum number of Dykstra iterations.
    tol : float
        Stop when the simplex iterate is within ``tol`` (max-norm) of the consistent one.
    weights : sequence of float, optional
        Positive weight ``w_C`` of every table in the objective ``sum_C w_C ||P_C -
        Z_C||^2`` (the inverse noise variance: the weighted least-squares estimate);
        ``None``: equal weights.

    Returns
    -------
    (list of ndarray, int)
        The projected tables (non-negative, each summing to one; consistent to ``tol``)
        and the number of iterations used.

    Examples
    --------
    >>> p, _ = project_marginals([np.array([0.7, 0.4]), np.array([[0.5, 0.0], [0.1, 0.3]])],
    ...                          [(0,), (0, 1)], [2, 2])
    >>> np.round(p[0], 4).tolist(), np.round(p[1].sum(axis=1), 4).tolist()
    ([0.6167, 0.3833], [0.6167, 0.3833])
    """
    if len(tables) != len(cliques) or not tables:
        raise ValueError("tables and cliques must be non-empty and of equal length")
    lay = _Layout(cliques, sizes)
    for t, (tab, shape) in enumerate(zip(tables, lay.shapes, strict=True)):
        if np.shape(tab) != shape:
            raise ValueError(f"tables[{t}] must have shape {shape}, got {np.shape(tab)}")
    z = np.concatenate([np.asarray(t, dtype=float).ravel() for t in tables])
    if not np.isfinite(z).all():
        raise ValueError("tables must be finite")
    w = None
    if weights is not None:
        w = np.asarray(weights, dtype=float)
        if w.shape != (len(tables),) or not (np.isfinite(w).all() and (w > 0).all()):
            raise ValueError("weights must be one finite positive number per table")
    x = z.copy()
    p = np.zeros_like(z)
    q = np.zeros_like(z)
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007
        y = _project_consistent(x + p, lay, w)
        p = x + p - y
        x_new = _project_simplices(y + q, lay)
        q = y + q - x_new
        gap = float(np.max(np.abs(x_new - y)))
        step = float(np.max(np.abs(x_new - x)))
        x = x_new
        if gap < tol and step < tol:
            break
    return lay.split(x), it



def ipf(
    targets: Sequence[np.ndarray],
    cliques: Sequence[tuple[int, ...]],
    sizes: Sequence[int],
    *,
    max_iter: int = 100,
    tol: float = 1e-6,
    smoothing: float = 1e-6,
) -> tuple[np.ndarray, int]:
    """Iterative proportional fitting of a joint distribution to marginal targets.

    Deming & Stephan 1940 (also Bishop, Fienberg, Holland 1975, Section 3.5): start
    from the uniform distribution and cycle over the targets, rescaling the joint so
    that its marginal on clique ``C`` equals ``targets[C]``.  With consistent targets
    that some positive distribution matches, the iterates converge to the
    maximum-entropy distribution with those marginals (Csiszar 1975, Theorem 3.2), the
    maximum-likelihood fit of the log-linear model with one interaction per clique.
    Targets that are consistent but not jointly realisable (possible for cyclic sets of
    pairs) are matched approximately; the fit stops after ``max_iter`` cycles.  Each
    target is mixed with a ``smoothing`` share of the uniform table so that conflicting
    zero cells cannot annihilate the whole joint (the fitted marginals move by at most
    ``smoothing`` in total variation).

    Parameters
    ----------
    targets : sequence of ndarray
        Probability tables (non-negative, summing to one), one per clique.
    cliques : sequence of tuple of int
        The columns of each target.
    sizes : sequence of int
        Domain size of every column.
    max_iter : int
        Maximum number of cycles over the targets.
    tol : float
        Stop when every marginal is within ``tol`` (max-norm) of its target.
    smoothing : float
        Share of the uniform table mixed into each target, in ``[0, 1)``.

    Returns
    -------
    (ndarray, int)
        The joint distribution (shape ``sizes``) and the number of cycles used.

    Examples
    --------
    >>> p, _ = ipf([np.array([[0.4, 0.1], [0.1, 0.4]]), np.array([[0.3, 0.2], [0.2, 0.3]])],
    ...            [(0, 1), (1, 2)], [2, 2, 2])
    >>> np.round(p.sum(axis=2), 3).tolist(), round(float(p[0, 0, 0]), 3)   # 0.4 * 0.3 / 0.5
    ([[0.4, 0.1], [0.1, 0.4]], 0.24)
    """
    d = len(sizes)
    joint = np.full(tuple(sizes), 1.0 / math.prod(sizes))
    plan = []
    for t, c in zip(targets, cliques, strict=True):
        other = tuple(a for a in range(d) if a not in c)
        # target laid out on the clique's columns in increasing order, broadcastable
        tt = np.transpose(np.asarray(t, dtype=float), np.argsort(c))
        tt = (1.0 - smoothing) * tt / tt.sum() + smoothing / tt.size
        plan.append((other, np.expand_dims(tt, other)))
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007
        for other, target in plan:
            m = joint.sum(axis=other, keepdims=True)
            joint *= np.where(m > 0, target / np.where(m > 0, m, 1.0), 0.0)
        gap = max(
            float(np.max(np.abs(joint.sum(axis=other, keepdims=True) - target)))
            for other, target in plan
        )
        if gap < tol:
            break
    return joint / joint.sum(), it


