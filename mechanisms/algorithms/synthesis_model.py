"""The fitted marginal synthesizer: model queries and sampling.

Step 3 of :mod:`dpacct.mechanisms.algorithms.synthesis` (whose module docstring describes the whole
recipe): the Chow-Liu forest or IPF joint built from the estimated marginals, exact
marginal and range queries on it, and synthetic rows drawn from it.  Everything here is
post-processing of the noisy measurements.  :class:`FittedSynthesizer` is importable
from :mod:`dpacct.mechanisms.algorithms.synthesis`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from dpacct.accountant.validation import check_count, check_rng

from .synthesis_columns import Column
from .synthesis_estimate import ipf
from .synthesis_table import Table, _check_conditions, _resolve


class SynthesizerLike(Protocol):
    """What a fitted model reads from the synthesizer that measured it
    (:class:`~dpacct.mechanisms.MarginalSynthesizer`, :class:`~dpacct.mechanisms.MST`,
    :class:`~dpacct.mechanisms.AIM`): its columns, their sizes, and its ``cliques`` when
    :meth:`FittedSynthesizer._build` is not given them.  A protocol rather than those
    classes, which import this module: no import circle (issue 36)."""

    @property
    def columns(self) -> tuple[Column, ...]: ...

    @property
    def sizes(self) -> tuple[int, ...]: ...


__all__ = ["FittedSynthesizer", "round_counts"]

_SAMPLE_METHODS = ("round", "iid")


def round_counts(p: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Randomized rounding of the expected counts ``n p`` to integers summing to ``n``.

    Every cell keeps ``floor(n p_i)``; the ``r = n - sum floor(n p_i)`` remaining rows go
    to distinct cells, cell ``i`` chosen with probability exactly its fractional part
    ``f_i = n p_i - floor(n p_i)`` (``sum f_i = r``).  The cells are drawn by systematic
    sampling (Madow 1949) over the fractional parts in a random order of the cells, which
    has exactly these inclusion probabilities; so every count is the floor or the ceiling
    of ``n p_i`` and its expectation is ``n p_i``.  This is the rounding Private-PGM uses
    to generate records from a model (there drawn without replacement with weights
    ``f_i``, whose inclusion probabilities are only close to ``f_i``).

    Parameters
    ----------
    p : array_like
        Non-negative probabilities (normalised here).
    n : int
        Total count, >= 0.
    rng : numpy.random.Generator

    Examples
    --------
    >>> round_counts(np.array([0.5, 0.25, 0.25]), 8, np.random.default_rng(0)).tolist()
    [4, 2, 2]
    >>> c = round_counts(np.array([0.3, 0.3, 0.4]), 5, np.random.default_rng(0))
    >>> int(c.sum()), bool(((c == [1, 1, 2]) | (c == [2, 2, 2])).all())  # 1.5, 1.5, 2
    (5, True)
    """
    p = np.asarray(p, dtype=float).ravel()
    return _round_groups(p[None, :], np.array([n]), rng)[0]


def _round_groups(
    probs: np.ndarray, totals: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """:func:`round_counts` for every row of ``probs`` (``G x K``) at once, with totals
    ``totals`` (``G``); rows whose probabilities are all zero get ``totals / K`` each
    in expectation (uniform).

    Systematic sampling in closed form: with ``C`` the cumulative fractional parts of a
    row (cells in a random order, ``C_K = r``) and one uniform ``U`` per row, the points
    ``U + k`` (``k = 0 .. r-1``) that fall in cell ``i`` number
    ``floor(C_i - U) - floor(C_{i-1} - U)``, which is 0 or 1 because ``f_i < 1``.
    """
    p = np.maximum(probs, 0.0)
    rows = p.sum(axis=1, keepdims=True)
    p = np.where(rows > 0, p / np.where(rows > 0, rows, 1.0), 1.0 / p.shape[1])
    expected = totals[:, None] * p
    base = np.floor(expected)
    frac = expected - base
    counts = base.astype(np.int64)
    r = totals - counts.sum(axis=1)
    if not (r > 0).any():
        return counts
    perm = np.argsort(rng.random(frac.shape), axis=1)  # a random cell order per row
    cum = np.cumsum(np.take_along_axis(frac, perm, axis=1), axis=1)
    scale = np.where(cum[:, -1] > 0, r / np.where(cum[:, -1] > 0, cum[:, -1], 1.0), 0.0)
    cum *= scale[:, None]  # guard the round-off of sum(f) == r
    u = rng.random(len(totals))[:, None]
    hits = np.diff(np.floor(cum - u), axis=1, prepend=np.floor(-u)).astype(np.int64)
    np.put_along_axis(counts, perm, np.take_along_axis(counts, perm, axis=1) + hits, axis=1)
    return counts


def _fill_groups(
    groups: np.ndarray, counts: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Values for rows whose group is ``groups``: group ``g``'s rows receive value ``v``
    ``counts[g, v]`` times (``counts[g].sum()`` must equal the group's size), in random
    order within the group."""
    n_groups, k = counts.shape
    values = np.repeat(np.tile(np.arange(k), n_groups), counts.ravel())  # grouped by g
    owner = np.repeat(np.arange(n_groups), counts.sum(axis=1))
    shuffled = values[np.lexsort((rng.random(values.size), owner))]
    out = np.empty(groups.size, dtype=np.int64)
    out[np.argsort(groups, kind="stable")] = shuffled
    return out


def _mutual_information(p: np.ndarray) -> float:
    pa = p.sum(axis=1, keepdims=True)
    pb = p.sum(axis=0, keepdims=True)
    prod = pa * pb
    mask = (p > 0) & (prod > 0)
    return float(np.sum(p[mask] * np.log(p[mask] / prod[mask])))


@dataclass(frozen=True, eq=False)
class FittedSynthesizer:
    """A fitted marginal synthesizer: the estimated marginals and the sampling model.

    Everything here is post-processing of the noisy measurements.  The sampled
    distribution is the IPF joint (``generator='ipf'``) or
    ``P(root) * prod_child P(child | parent)`` over the Chow-Liu forest of the measured
    pairs (``generator='tree'``); see the module docstring.  Build it with
    :meth:`MarginalSynthesizer.fit`.  Each parameter is an attribute of the same name.

    Parameters
    ----------
    synthesizer : MarginalSynthesizer, MST or AIM
        The synthesizer that was fitted.
    tables : dict
        Estimated probability table of every measured marginal (keyed by column names).
    one_way : dict
        Estimated 1-way distribution of every column.
    parents : dict
        Parent column of every column in the sampling forest (``None`` for roots).
    order : tuple of int
        Column indices in sampling order (every parent before its children).
    conditionals : dict
        Column index -> table of ``P(child | parent)`` (rows: the parent's values), for
        every column with a parent.
    noisy_count : float or None
        The noisy row count as released (None when the count was not measured).
    selected : tuple of tuple of str
        The pairs chosen by a selection step (:class:`MST`), in the order chosen;
        empty for :class:`MarginalSynthesizer`, whose marginals are fixed in advance.
    noisy_tables : dict
        The raw noisy histograms as released (counts, possibly negative), keyed by the
        column names of each measured marginal: the released statistics themselves,
        before any post-processing.
    row_estimate : float
        Inverse-variance weighted combination of the noisy count and the noisy table
        totals (a better estimate of the row count, by post-processing).
    iterations : int
        Dykstra iterations used by the projection.
    generator : str
        ``'ipf'`` or ``'tree'``.
    joint : ndarray or None
        The IPF joint distribution over all columns (``generator='ipf'`` only).
    data_columns : tuple of column specifications or None
        The synthesizer's columns with the fitted data's column types resolved (an
        integer dtype makes ``BinnedNumericColumn(integer=None)`` an integer column,
        sampled as integers); None: the synthesizer's columns as declared.
    spent_rho : float or None
        :class:`~dpacct.mechanisms.AIM` only: the zCDP its privacy filter summed over
        the releases actually made (at most its ``rho``); None otherwise.
    privacy_log : tuple
        :class:`~dpacct.mechanisms.AIM` only: every release ``(kind, parameter, zCDP
        cost rounded up)`` in order.

    Examples
    --------
    >>> from dpacct.mechanisms import CategoricalColumn, MarginalSynthesizer
    >>> cols = [CategoricalColumn("a", [0, 1]), CategoricalColumn("b", [0, 1])]
    >>> fitted = MarginalSynthesizer(cols, scale=0.01).fit_counts(
    ...     [[30, 10], [10, 50]], rng=np.random.default_rng(0))
    >>> fitted.parents, fitted.n_rows              # 100 rows, 40 of them with a = 0
    ({'a': None, 'b': 'a'}, 100)
    >>> np.round(fitted.one_way["a"], 2).tolist()
    [0.4, 0.6]
    """

    synthesizer: SynthesizerLike
    tables: Mapping[tuple[str, ...], np.ndarray]
    one_way: Mapping[str, np.ndarray]
    parents: Mapping[str, str | None]
    order: tuple[int, ...]
    conditionals: Mapping[int, np.ndarray] = field(repr=False)
    noisy_count: float | None = 0.0
    row_estimate: float = 0.0
    iterations: int = 0
    generator: str = "tree"
    joint: np.ndarray | None = field(default=None, repr=False)
    noisy_tables: Mapping[tuple[str, ...], np.ndarray] = field(default_factory=dict, repr=False)
    selected: tuple[tuple[str, ...], ...] = ()
    data_columns: tuple[Column, ...] | None = field(default=None, repr=False)
    spent_rho: float | None = None
    privacy_log: tuple[tuple[str, float, float], ...] = field(default=(), repr=False)

    @classmethod
    def _build(
        cls,
        syn: SynthesizerLike,
        probs: list[np.ndarray],
        noisy_count: float | None,
        row_estimate: float,
        iterations: int,
        generator: str = "tree",
        cliques: tuple[tuple[int, ...], ...] | None = None,
    ) -> FittedSynthesizer:
        cols, d = syn.columns, len(syn.columns)
        cliques = syn.cliques if cliques is None else cliques
        # 1-way distributions: weighted average of every table's projection (they agree
        # to the projection tolerance); weights 1/k_C as in the projection
        one_way = []
        for a in range(d):
            acc, wsum = np.zeros(cols[a].size), 0.0
            for c, p in zip(cliques, probs, strict=True):
                if a in c:
                    other = tuple(i for i, b in enumerate(c) if b != a)
                    k = p.size / cols[a].size
                    acc += p.sum(axis=other) / k
                    wsum += 1.0 / k
            v = np.maximum(acc / wsum, 0.0)
            one_way.append(v / v.sum())
        # Chow-Liu maximum spanning forest over the measured pairs (Kruskal)
        pairs = [(c, p) for c, p in zip(cliques, probs, strict=True) if len(c) == 2]
        weighted = sorted(
            ((_mutual_information(p), c, p) for c, p in pairs), key=lambda t: -t[0]
        )
        root = list(range(d))

        def find(i: int) -> int:
            while root[i] != i:
                root[i] = root[root[i]]
                i = root[i]
            return i

        adj: dict[int, list[tuple[int, np.ndarray]]] = {a: [] for a in range(d)}
        for _, (u, v), p in weighted:
            ru, rv = find(u), find(v)
            if ru != rv:
                root[ru] = rv
                adj[u].append((v, p))  # p indexed (u, v)
                adj[v].append((u, p.T))
        # orient from the smallest column of each component (breadth first)
        parent: dict[int, int | None] = {}
        conditionals: dict[int, np.ndarray] = {}
        order: list[int] = []
        for r in range(d):
            if r in parent:
                continue
            parent[r] = None
            queue = [r]
            while queue:
                u = queue.pop(0)
                order.append(u)
                for v, p_uv in adj[u]:
                    if v in parent:
                        continue
                    parent[v] = u
                    rows = p_uv.sum(axis=1, keepdims=True)
                    cond = np.where(rows > 0, p_uv / np.where(rows > 0, rows, 1.0), one_way[v])
                    conditionals[v] = cond
                    queue.append(v)
        joint = None
        if generator == "ipf":
            joint, _ = ipf(probs, cliques, syn.sizes)
        return cls(
            synthesizer=syn,
            tables={tuple(cols[a].name for a in c): p for c, p in zip(cliques, probs, strict=True)},
            one_way={cols[a].name: one_way[a] for a in range(d)},
            parents={
                cols[a].name: (None if parent[a] is None else cols[parent[a]].name)  # type: ignore[index]
                for a in range(d)
            },
            order=tuple(order),
            conditionals=conditionals,
            noisy_count=noisy_count,
            row_estimate=row_estimate,
            iterations=iterations,
            generator=generator,
            joint=joint,
        )

    @property
    def columns(self) -> tuple[Column, ...]:
        """The synthesizer's column specifications, typed by the fitted data.

        ``BinnedNumericColumn(integer=None)`` resolved by
        :func:`~dpacct.mechanisms.algorithms.synthesis_columns.with_data_types`.
        """
        return self.data_columns or self.synthesizer.columns

    @property
    def n_rows(self) -> int:
        """Default synthetic table size: the estimated row count, rounded, at least 0."""
        return max(0, round(self.row_estimate))

    def _check_n(self, n: object) -> int:
        if n is None:
            return self.n_rows
        return check_count(n, "n", allow_zero=True)

    # ------------------------------------------------------------ model queries
    def _contract(self, out: tuple[int, ...], weights: Mapping[int, np.ndarray]) -> np.ndarray:
        """``sum_x P(x) prod_a w_a(x_a)`` keeping the columns ``out``."""
        operands: list[Any] = []
        if self.joint is not None:
            operands += [self.joint, list(range(len(self.columns)))]
            for a, w in weights.items():
                operands += [w, [a]]
            return np.einsum(*operands, list(out), optimize="greedy")
        names = [c.name for c in self.columns]
        for a in self.order:
            par = self.parents[names[a]]
            if par is None:
                operands += [self.one_way[names[a]], [a]]
            else:
                operands += [self.conditionals[a], [names.index(par), a]]
        for a, w in weights.items():
            operands += [w, [a]]
        return np.einsum(*operands, list(out), optimize="greedy")

    def probability(self, columns: object) -> np.ndarray:
        """The model's distribution of ``columns`` (sums to one).

        Parameters
        ----------
        columns : str or sequence of str
            Column name(s), in the order of the output's axes.

        Examples
        --------
        >>> from dpacct.mechanisms import CategoricalColumn, MarginalSynthesizer
        >>> cols = [CategoricalColumn("a", [0, 1]), CategoricalColumn("b", [0, 1])]
        >>> m = MarginalSynthesizer(cols, scale=0.01).fit_counts(
        ...     [[30, 10], [10, 50]], rng=np.random.default_rng(0))
        >>> np.round(m.probability(["b", "a"]), 2).tolist()
        [[0.3, 0.1], [0.1, 0.5]]
        """
        idx = _resolve(self.columns, columns)
        return self._contract(idx, {})

    def marginal(self, columns: object) -> np.ndarray:
        """Expected counts of the marginal over ``columns`` in a table of :attr:`n_rows` rows.

        Parameters
        ----------
        columns : str or sequence of str
            Column name(s), in the order of the output's axes.
        """
        return self.n_rows * self.probability(columns)

    def range_query(self, conditions: Mapping[str, object], *, n: int | None = None) -> float:
        """Expected number of rows of an ``n``-row synthetic table meeting ``conditions``.

        ``conditions`` maps column names to allowed categories (categorical columns) or
        an interval ``(low, high)`` meaning ``[low, high)`` (binned numeric; closed at the
        top edge of the domain; values are uniform in a bin,
        so a partly covered bin counts by its covered fraction).

        Parameters
        ----------
        conditions : Mapping
            Column name -> condition, as above.
        n : int, optional
            Rows of the synthetic table, >= 0; None: :attr:`n_rows`.

        Examples
        --------
        >>> from dpacct.mechanisms.algorithms.synthesis import (
        ...     BinnedNumericColumn, CategoricalColumn, MarginalSynthesizer)
        >>> cols = [CategoricalColumn("a", ["x", "y"]), BinnedNumericColumn("v", [0, 1, 2])]
        >>> m = MarginalSynthesizer(cols, scale=0.01).fit_counts(
        ...     [[40, 0], [0, 60]], rng=np.random.default_rng(0))
        >>> round(m.range_query({"a": ["y"], "v": (1.5, 2.0)}))
        30
        """
        conds = _check_conditions(conditions)
        weights = {}
        for name, cond in conds.items():
            (j,) = _resolve(self.columns, [name], "conditions")
            weights[j] = self.columns[j].weights(cond)
        return float(self._check_n(n) * self._contract((), weights))

    # ----------------------------------------------------------------- sampling
    def sample(
        self, n: int | None = None, *, rng: np.random.Generator, method: str = "round"
    ) -> Table:
        """Draw a synthetic table of ``n`` rows (default :attr:`n_rows`).

        Parameters
        ----------
        n : int, optional
            Number of rows, >= 0.
        rng : numpy.random.Generator
            The source of the draws (sampling is post-processing: no privacy cost).
        method : {'round', 'iid'}
            ``'round'`` (default): randomized rounding, the way Private-PGM generates
            (McKenna, Sheldon, Miklau 2019, and its ``synthetic_data``), column by
            column.  The expected counts ``n P(value)`` of the first column are rounded
            by keeping their integer parts and giving the remaining rows to values at
            random with probability equal to their fractional parts
            (:func:`round_counts`), so every count is the floor or the ceiling of its
            expectation and equals it on average; then the rows that share the
            earlier columns (``generator='ipf'``: the chain rule of the joint, columns
            with the fewest values first) or the parent's value (``'tree'``) are split
            among the next column's values the same way.  Rows come out shuffled.
            ``'iid'``: ``n`` independent draws from the model (inverse-CDF sampling of
            the joint, ancestral sampling of the tree), whose cell counts are
            multinomial: their sampling error adds to the noise (compared in
            ``benchmarks/algos/synthesis.py``).

        Examples
        --------
        >>> from dpacct.mechanisms import CategoricalColumn, MarginalSynthesizer
        >>> cols = [CategoricalColumn("a", [0, 1]), CategoricalColumn("b", [0, 1])]
        >>> m = MarginalSynthesizer(cols, scale=0.01).fit_counts(
        ...     [[300, 100], [100, 500]], rng=np.random.default_rng(0))
        >>> t = m.sample(rng=np.random.default_rng(1))
        >>> t.marginal(["a", "b"]).tolist()    # n P(cell) rounded: within 1 of 300 100 100 500
        [[300.0, 100.0], [100.0, 500.0]]
        """
        check_rng(rng)
        if method not in _SAMPLE_METHODS:
            raise ValueError(f"method must be one of {_SAMPLE_METHODS!r}, got {method!r}")
        n = self._check_n(n)
        if method == "round":
            codes = self._rounded_codes(n, rng)
        else:
            codes = self._iid_codes(n, rng)
        values = {col.name: col.decode(codes[:, j], rng) for j, col in enumerate(self.columns)}
        return Table(self.columns, codes, values)

    def _rounded_codes(self, n: int, rng: np.random.Generator) -> np.ndarray:
        d = len(self.columns)
        codes = np.zeros((n, d), dtype=np.int64)
        names = [c.name for c in self.columns]
        if self.joint is not None:
            # chain rule: each column given all the columns before it, rows grouped by
            # their prefix (Private-PGM's generation over one clique holding them all).
            # Smallest domains first: the prefix groups then stay large for longest,
            # where rounding helps most (measured in benchmarks/algos/synthesis.py:
            # range-query error 0.00134 against 0.00140 for the declared order)
            order = np.argsort(self.joint.shape, kind="stable")
            joint = np.transpose(self.joint, order)
            sizes = joint.shape
            prefix = np.zeros(n, dtype=np.int64)
            for j in range(d):
                marg = joint.sum(axis=tuple(range(j + 1, d))).reshape(-1, sizes[j])
                totals = np.bincount(prefix, minlength=math.prod(sizes[:j]))
                column = _fill_groups(prefix, _round_groups(marg, totals, rng), rng)
                codes[:, order[j]] = column
                prefix = prefix * sizes[j] + column
            return codes
        for a in self.order:
            par = self.parents[names[a]]
            if par is None:
                counts = round_counts(self.one_way[names[a]], n, rng)
                codes[:, a] = rng.permutation(np.repeat(np.arange(counts.size), counts))
                continue
            parent_codes = codes[:, names.index(par)]
            cond = self.conditionals[a]
            totals = np.bincount(parent_codes, minlength=cond.shape[0])
            codes[:, a] = _fill_groups(parent_codes, _round_groups(cond, totals, rng), rng)
        return codes

    def _iid_codes(self, n: int, rng: np.random.Generator) -> np.ndarray:
        d = len(self.columns)
        names = [c.name for c in self.columns]
        codes = np.zeros((n, d), dtype=np.int64)
        if self.joint is not None:
            cdf = np.cumsum(self.joint.ravel())
            flat = np.searchsorted(cdf, rng.random(n) * cdf[-1], side="right")
            flat = np.minimum(flat, cdf.size - 1)
            codes = np.stack(np.unravel_index(flat, self.joint.shape), axis=1).astype(np.int64)
        for a in self.order if self.joint is None else ():
            par = self.parents[names[a]]
            u = rng.random(n)
            if par is None:
                cdf = np.cumsum(self.one_way[names[a]])
                c = np.searchsorted(cdf, u * cdf[-1], side="right")
            else:
                cdf = np.cumsum(self.conditionals[a], axis=1)
                rows = cdf[codes[:, names.index(par)]]
                c = (u[:, None] * rows[:, -1:] >= rows).sum(axis=1)
            codes[:, a] = np.minimum(c, self.columns[a].size - 1)
        return codes
