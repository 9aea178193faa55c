"""Tail quantiles and spreads of many subsampled-Gaussian loss laws at once.

A schedule of ``n`` distinct Poisson-subsampled Gaussian steps (a ledger's rounded
schedule, issue 37) discretises ``2 n`` loss laws per PLD pass, and each law first
asks its tail quantiles (:meth:`~dpacct.accountant.laws.loss_law.PrivacyLossLaw.quantile_bounds`)
and its spread.  Each is a bisection of about ten vectorised rounds of 33 points
(:func:`~dpacct.accountant.laws.loss_law._boundary`); over 1 500 steps the Python and
numpy overhead of those ~10^5 small calls was 13 of the first query's 47 CPU seconds.

:func:`prefill_quantiles` runs the same bisections for all laws in lockstep: every
round evaluates the distribution functions of all still-open laws on one
``(laws, 33)`` array.  Each row follows *exactly* the scalar algorithm (the same
bracket ladder, the same 33 points per round, computed with the same floating-point
operations in the same order, the same stopping rule; the distribution functions are
the law's own ``_cdf_p_at`` / ``_sf_p_at`` called on the rows' columns, with the
Gaussian base's tails per row: no copy of the mixtures), so each law's memo receives
the value its own :meth:`quantile_bounds` / :meth:`spread` would compute, bit for bit;
a row that leaves the common path (a bracket the ladder misses, a degenerate spread)
is handed to the law's own scalar method.  Only laws that declare themselves
subsampled Gaussians (:func:`subsampled_gaussian_law`: a :class:`PoissonSubsampledLossLaw`,
or a subclass that keeps its distribution functions, over a base declaring the
Gaussian closed form, with ``q < 1``) are batched; the rest are left for their scalar
methods.

Examples
--------
>>> from dpacct.accountant.laws.loss_law import GaussianLossLaw, PoissonSubsampledLossLaw
>>> laws = [PoissonSubsampledLossLaw(GaussianLossLaw(mu=1 / s), 1e-3, "remove")
...         for s in (0.9, 1.1)]
>>> prefill_quantiles([(law, 1e-12) for law in laws], spread=laws)
8
>>> fresh = PoissonSubsampledLossLaw(GaussianLossLaw(mu=1 / 0.9), 1e-3, "remove")
>>> laws[0].quantile_bounds(1e-12) == fresh.quantile_bounds(1e-12)
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from types import SimpleNamespace

import numpy as np

from ..numerics import TINY, _log_expm1
from ..numerics import scipy_special as special
from .loss_law import PoissonSubsampledLossLaw, PrivacyLossLaw, _keeps_functions

__all__ = ["prefill_quantiles", "subsampled_gaussian_law"]

_LADDER = 1e-3 * 2.0 ** np.arange(48)
_POINTS = np.concatenate([-_LADDER[::-1], [0.0], _LADDER])
_RAMP = np.arange(33, dtype=float)


def subsampled_gaussian_law(law: PrivacyLossLaw) -> tuple[float, float] | None:
    """``(sample_rate, mu)`` of a law that is, by its families' declarations, the
    Poisson-subsampled Gaussian loss law whose searches this module batches, else None.

    The base declares the Gaussian closed form for itself (``closed_form ==
    "gaussian"``, :class:`~dpacct.accountant.capabilities._DeclaredHere`: the loss
    ``N(mu^2 / 2, mu^2)``, not inherited by a subclass); the outer law is a
    :class:`PoissonSubsampledLossLaw` that keeps the distribution functions and the
    memoised searches this module reproduces (none of
    :data:`~dpacct.accountant.laws.loss_law_sgm.KEPT` overridden: the list the shared bin
    masses' gate reads too), at a rate ``q < 1``.  The mechanism-side twin is
    :meth:`~dpacct.accountant.mechanism.Mechanism.subsampled_gaussian`.

    Examples
    --------
    >>> from dpacct.accountant.laws.loss_law import GaussianLossLaw
    >>> subsampled_gaussian_law(PoissonSubsampledLossLaw(GaussianLossLaw(mu=0.5), 0.01, "add"))
    (0.01, 0.5)
    >>> subsampled_gaussian_law(GaussianLossLaw(mu=0.5)) is None
    True
    """
    if not isinstance(law, PoissonSubsampledLossLaw) or law.base.closed_form != "gaussian":
        return None
    if law.sample_rate >= 1.0:
        return None
    if not _keeps_functions(law):
        return None
    return law.sample_rate, law.base.mu


def _batchable(law: PrivacyLossLaw) -> bool:
    return subsampled_gaussian_law(law) is not None


class _Rows:
    """The per-law constants of :meth:`PoissonSubsampledLossLaw._preimage` and of the
    Gaussian base, as columns, computed with the scalar code's expressions; the
    distribution functions of all rows at once (the law's own methods on columns)."""

    def __init__(self, laws: Sequence[PoissonSubsampledLossLaw]) -> None:
        col = lambda v: np.array(v, dtype=float)[:, None]  # noqa: E731
        qs = [law.sample_rate for law in laws]
        mus = [law.base.mu for law in laws]
        self.remove = np.array([law.direction == "remove" for law in laws])[:, None]
        self.q = col(qs)
        self.log1mq = col([math.log1p(-q) for q in qs])
        self.c = col([math.log((1.0 - q) / q) for q in qs])
        self.mu = col(mus)
        self.shift_p = col([1.0 * 0.5 * mu**2 for mu in mus])
        self.shift_q = col([-1.0 * 0.5 * mu**2 for mu in mus])
        # a Gaussian base has no mass at infinity: inf_mass = q * 0 = 0 for both
        self.inf_mass = col([law.inf_mass for law in laws])
        self.base_inf = col([law.base.inf_mass for law in laws])

    def take(self, idx: np.ndarray) -> _Rows:
        out = object.__new__(_Rows)
        out.__dict__ = {k: v[idx] for k, v in self.__dict__.items()}
        return out

    def _preimage(self, y: np.ndarray):
        r = self.remove
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            d = np.where(r, y - self.log1mq, -y - self.log1mq)
            t = self.c + _log_expm1(np.maximum(d, 0.0), 30.0)
            x = np.where(r, np.where(d == 0, -np.inf, t), np.where(d == 0, np.inf, -t))
            below = np.where(r, d < 0, np.isneginf(y))
            above = np.where(r, np.isposinf(y), d < 0)
        return x, below, above

    def _as(self, direction: str) -> SimpleNamespace:
        """The rows as the ``self`` of the law's ``_cdf_p_at`` / ``_sf_p_at`` in one
        direction: the attributes those methods read, as columns."""
        return SimpleNamespace(direction=direction, sample_rate=self.q, inf_mass=self.inf_mass,
                               base=SimpleNamespace(inf_mass=self.base_inf))

    def cdf_p(self, y: np.ndarray) -> np.ndarray:
        x, below, above = self._preimage(y)
        t = _RowTails(self, x)
        # the law's own mixtures (the one copy), both directions, each row taking its own
        rem = PoissonSubsampledLossLaw._cdf_p_at(self._as("remove"), x, below, above, t)
        add = PoissonSubsampledLossLaw._cdf_p_at(self._as("add"), x, below, above, t)
        return np.where(self.remove, rem, add)

    def sf_p(self, y: np.ndarray) -> np.ndarray:
        x, below, above = self._preimage(y)
        t = _RowTails(self, x)
        rem = PoissonSubsampledLossLaw._sf_p_at(self._as("remove"), x, below, above, t)
        add = PoissonSubsampledLossLaw._sf_p_at(self._as("add"), x, below, above, t)
        return np.where(self.remove, rem, add)


class _RowTails:
    """The law's tail provider (:class:`~dpacct.accountant.laws.loss_law._Tails`) for
    rows: each row's Gaussian base functions at its preimages ``x`` (the Gaussian law's
    own expressions, ``ndtr(+-(x - shift) / mu)``), each evaluated once."""

    def __init__(self, rows: _Rows, x: np.ndarray) -> None:
        self.rows, self.x = rows, x
        self.memo: dict[str, np.ndarray] = {}

    def _get(self, name: str) -> np.ndarray:
        if name not in self.memo:
            r = self.rows
            z = (self.x - (r.shift_p if name[-1] == "p" else r.shift_q)) / r.mu
            self.memo[name] = special.ndtr(-z if name[0] == "s" else z)
        return self.memo[name]

    def cdf_p(self) -> np.ndarray:
        return self._get("cdf_p")

    def sf_p(self) -> np.ndarray:
        return self._get("sf_p")

    def cdf_q(self) -> np.ndarray:
        return self._get("cdf_q")

    def sf_q(self) -> np.ndarray:
        return self._get("sf_q")

    def posinf(self) -> np.ndarray:
        return np.isposinf(self.x)


def _boundaries(pred: Callable[[np.ndarray, np.ndarray], np.ndarray], n: int) -> np.ndarray:
    """:func:`~dpacct.accountant.laws.loss_law._boundary` for ``n`` predicates in lockstep.

    ``pred(idx, xs)`` answers rows ``idx`` at the points ``xs`` (one row of points per
    index).  Returns the boundaries, NaN where a row left the common path (the caller
    then runs the scalar search)."""
    out = np.full(n, np.nan)
    idx = np.arange(n)
    with np.errstate(all="ignore"):
        flags = np.asarray(pred(idx, np.tile(_POINTS, (n, 1))), dtype=bool)
    k = np.argmax(flags, axis=1)
    k = np.where(flags.any(axis=1), k, flags.shape[1])
    cols = np.arange(flags.shape[1])
    # the ladder brackets the boundary: false below k, true from k on
    good = (k > 0) & (k < flags.shape[1]) & np.all(flags == (cols[None, :] >= k[:, None]), axis=1)
    idx = idx[good]
    a = _POINTS[k[good] - 1]
    b = _POINTS[k[good]]
    for _ in range(40):
        if idx.size == 0:
            return out
        step = (b - a) / 32  # np.linspace(a, b, 33): arange * step + a, last point b
        xs = _RAMP[None, :] * step[:, None] + a[:, None]
        xs[:, -1] = b
        flags = np.asarray(pred(idx, xs), dtype=bool)
        flags[:, -1] = True
        i = np.argmax(flags, axis=1)
        first = i == 0
        out[idx[first]] = xs[first, 0]
        rows = np.arange(idx.size)
        a_new = xs[rows, np.maximum(i - 1, 0)]
        b_new = xs[rows, i]
        done = ~first & (
            ((a_new == a) & (b_new == b))
            | (b_new - a_new <= 1e-10 * np.maximum(np.abs(a_new), np.abs(b_new)))
        )
        out[idx[done]] = b_new[done]
        keep = ~first & ~done
        idx, a, b = idx[keep], a_new[keep], b_new[keep]
    out[idx] = b
    return out


def _side_pair(rows: _Rows, tail: np.ndarray, strict: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` of :meth:`PrivacyLossLaw.quantile_bounds` at each row's ``tail``
    (``strict``: of the spread's ``<`` searches) for every row."""
    col = np.asarray(tail, dtype=float)[:, None]
    n = col.shape[0]
    if strict:
        lo = -_boundaries(lambda i, x: rows.take(i).cdf_p(-x) < col[i], n)
        hi = _boundaries(lambda i, x: rows.take(i).sf_p(x) < col[i], n)
    else:
        lo = -_boundaries(lambda i, x: rows.take(i).cdf_p(-x) <= col[i], n)
        hi = _boundaries(lambda i, x: rows.take(i).sf_p(x) <= col[i], n)
    return lo, hi


def prefill_quantiles(
    requests: Iterable[tuple[PrivacyLossLaw, float]], spread: Iterable[PrivacyLossLaw] = ()
) -> int:
    """Fill the memos of the laws' :meth:`quantile_bounds` at the requested tails (and of
    the base :meth:`spread` of the laws in ``spread``) by batched bisections, bit-equal
    to the laws' own searches.

    Parameters
    ----------
    requests : iterable of (PrivacyLossLaw, float)
        Laws and the tails in (0, 1) the caller is about to ask them; only
        subsampled-Gaussian laws are batched (see the module), the rest are skipped.
    spread : iterable of PrivacyLossLaw
        Laws whose robust spread (:meth:`PrivacyLossLaw.spread`) to fill as well.

    Returns
    -------
    int
        How many searches were batched (two per tail, two per spread); 0 when every
        memo was already filled.
    """
    todo: dict[tuple[int, float], tuple[PrivacyLossLaw, float]] = {}
    for law, tail in requests:
        memo = law.__dict__.get("_quantile_memo", {})
        if tail not in memo and _batchable(law):
            todo[(id(law), tail)] = (law, float(tail))
    # a strict search at 0.25 for the spread, kept apart by a non-float key
    wide = {id(law): law for law in spread if _batchable(law)}
    wide = {
        k: law for k, law in wide.items() if "spread" not in law.__dict__.get("_quantile_memo", {})
    }
    done = 0
    if todo:
        laws = [law for law, _ in todo.values()]
        tails = np.array([t for _, t in todo.values()])
        lo, hi = _side_pair(_Rows(laws), tails, strict=False)
        for (law, tail), a, b in zip(todo.values(), lo, hi, strict=True):
            if math.isnan(a) or math.isnan(b):
                continue  # off the common path: the law's own search runs when asked
            law.__dict__.setdefault("_quantile_memo", {})[tail] = (float(a), float(b))
        done += 2 * len(todo)
    if wide:
        laws = list(wide.values())
        lo, hi = _side_pair(_Rows(laws), np.full(len(laws), 0.25), strict=True)
        for law, a, b in zip(laws, lo, hi, strict=True):
            if math.isnan(a) or math.isnan(b):
                continue
            width = float(b) - float(a)
            if width > 1e-9 * max(abs(float(b)), abs(float(a)), TINY):
                law.__dict__.setdefault("_quantile_memo", {})["spread"] = width / 1.349
        done += 2 * len(laws)
    return done
