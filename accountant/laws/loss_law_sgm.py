"""Bin masses of a Poisson-subsampled Gaussian loss, its four distribution functions
sharing one evaluation of each normal tail (issue 37).

:meth:`PoissonSubsampledLossLaw.bin_masses
<dpacct.accountant.laws.loss_law.PoissonSubsampledLossLaw.bin_masses>` of a Gaussian
base reads, at the preimage ``x`` of every edge (``h = mu^2 / 2``; Mironov, Talwar &
Zhang 2019, Sec. 3; Zhu, Dong & Wang 2022, Theorem 11),

* remove: ``P(L <= y) = (1-q) Phi((x+h)/mu) + q Phi((x-h)/mu)`` and
  ``Q(L <= y) = Phi((x+h)/mu)``, the survival functions with ``Phi(-z)``;
* add: ``P(L <= y) = Phi((x-h)/mu)`` and ``Q(L <= y) = (1-q) Phi((x-h)/mu) + q
  Phi((x+h)/mu)``, likewise.

So the P- and Q-functions share their normal tails: ``Phi((x+h)/mu)`` of a remove law is
both ``Q(L <= y)`` and a term of ``P(L <= y)``.  Evaluated one function at a time, the
law's base is asked for it once by each.  This module holds no copy of those mixtures:
:class:`SharedFunctions` calls the law's own ``_cdf_p_at`` ... ``_sf_q_at`` (the only
copy), handing them a provider of the base's tails (:class:`_Columns`, which evaluates
each of the four tails ``Phi(+-(x-+h)/mu)`` once per edge, only at the edges
:func:`~dpacct.accountant.laws.loss_law._differences` asks, with the Gaussian law's own
expression) in place of the base law's functions, and the masks of the preimage as None
where no entry is set.  So every mass is bit-for-bit the law's (the operations are
element-wise IEEE arithmetic and ``ndtr``; the tests compare them with the law's own
evaluation and with 40-digit ``mpmath``).  The end values
:func:`~dpacct.accountant.pld.grid._bins_from_law` asks (``P(L <= a_0)``,
``Q(L <= a_0)``, ``P(a_n < L)``, ``Q(a_n < L)``) are kept from the slices ``_differences``
already evaluated (it always asks the CDFs from the first edge on and the survival
functions up to the last) instead of four more evaluations.

:data:`KEPT` lists the methods a subclass of the law must keep (not override) for this
path and for the batched quantile searches
(:func:`~dpacct.accountant.laws.quantile_batch.subsampled_gaussian_law`): one list, read
by both gates.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from ..numerics import scipy_special as special

__all__: list[str] = []

#: the methods of :class:`~dpacct.accountant.laws.loss_law.PoissonSubsampledLossLaw` a
#: subclass must keep for the shared bin masses (its distribution functions) and for the
#: batched searches (those and the memoised searches): a subclass that overrides one is
#: left to its own methods by both gates
KEPT = ("bin_masses", "cdf_p", "sf_p", "cdf_q", "sf_q", "_preimage", "_cdf_p_at",
        "_sf_p_at", "_cdf_q_at", "_sf_q_at", "quantile_bounds", "_spread")


class _Columns:
    """The normal tails of a subsampled Gaussian law at preimages ``x``, evaluated on
    the index ranges asked, a range already evaluated not again (``cdf_p = Phi((x-h)/mu)``,
    ``cdf_q = Phi((x+h)/mu)``, ``sf_p = Phi(-(x-h)/mu)``, ``sf_q = Phi(-(x+h)/mu)``: the
    Gaussian base law's functions)."""

    def __init__(self, x: np.ndarray, mu: float) -> None:
        self.x, self.mu, self.n = x, mu, x.size
        # GaussianLossLaw._z's shift, ``sign * 0.5 * mu**2``, by the same expression
        self.shift = {"p": 1.0 * 0.5 * mu**2, "q": -1.0 * 0.5 * mu**2}
        self.cols: dict[str, tuple[np.ndarray, list]] = {}
        #: entries evaluated (each an ``ndtr`` point): the work the tests count
        self.evaluated = 0

    def get(self, key: str, s: slice) -> np.ndarray:
        """Column ``key`` (``"cdf_p"``, ``"cdf_q"``, ``"sf_p"``, ``"sf_q"``) on the slice ``s``."""
        if key not in self.cols:
            self.cols[key] = (np.empty(self.n), [])
        vals, spans = self.cols[key]
        a, b, _ = s.indices(self.n)
        if not any(lo <= a and b <= hi for lo, hi in spans):
            # element-wise: an entry's value does not depend on the range it is part of
            z = (self.x[a:b] - self.shift[key[-1]]) / self.mu
            if key[0] == "s":
                np.negative(z, out=z)
            vals[a:b] = special.ndtr(z)
            spans.append((a, b))
            self.evaluated += b - a
        return vals[a:b]


class _SliceTails:
    """The law's tail provider (:class:`~dpacct.accountant.laws.loss_law._Tails`) on the
    slice ``s`` of shared :class:`_Columns` (one provider per grid, its slice set before
    each call)."""

    __slots__ = ("c", "inf", "s")

    def __init__(self, c: _Columns, inf: np.ndarray | None) -> None:
        self.c, self.inf, self.s = c, inf, slice(None)

    def cdf_p(self) -> np.ndarray:
        return self.c.get("cdf_p", self.s)

    def sf_p(self) -> np.ndarray:
        return self.c.get("sf_p", self.s)

    def cdf_q(self) -> np.ndarray:
        return self.c.get("cdf_q", self.s)

    def sf_q(self) -> np.ndarray:
        return self.c.get("sf_q", self.s)

    def posinf(self) -> np.ndarray | None:
        return None if self.inf is None else self.inf[self.s]


class _SubsampledLaw(Protocol):
    """What :class:`SharedFunctions` reads of a
    :class:`~dpacct.accountant.laws.loss_law.PoissonSubsampledLossLaw` (typed here
    without importing it: ``loss_law`` imports this module)."""

    direction: str
    base: Any

    def _cdf_p_at(self, x, below, above, tails=None) -> np.ndarray: ...
    def _sf_p_at(self, x, below, above, tails=None) -> np.ndarray: ...
    def _cdf_q_at(self, x, below, above, tails=None) -> np.ndarray: ...
    def _sf_q_at(self, x, below, above, tails=None) -> np.ndarray: ...


def _any_or_none(mask: np.ndarray) -> np.ndarray | None:
    return mask if mask.any() else None


class SharedFunctions:
    """The four distribution functions of a Poisson-subsampled Gaussian ``law`` at the
    edges whose preimages are ``(x, below, above)`` (``law._preimage``), as functions of
    an index slice: the law's own ``_cdf_p_at`` ... ``_sf_q_at`` reading the base's tails
    from shared :class:`_Columns`.

    Parameters
    ----------
    law : PoissonSubsampledLossLaw
        A law over a base declaring the Gaussian closed form, ``q < 1`` (the caller's gate,
        :meth:`~dpacct.accountant.laws.loss_law.PoissonSubsampledLossLaw._shared_gaussian`).
    x, below, above : numpy.ndarray
        ``law._preimage(edges)``.

    Examples
    --------
    >>> from dpacct.accountant.laws.loss_law import GaussianLossLaw, PoissonSubsampledLossLaw
    >>> law = PoissonSubsampledLossLaw(GaussianLossLaw(mu=1.0), 0.01, "remove")
    >>> e = np.linspace(-0.01, 0.05, 7)
    >>> f = SharedFunctions(law, *law._preimage(e))
    >>> f.cdf_p(slice(None)).tobytes() == law.cdf_p(e).tobytes()
    True
    """

    def __init__(self, law: _SubsampledLaw, x: np.ndarray, below: np.ndarray,
                 above: np.ndarray) -> None:
        self.n = x.size
        # a mask with no entry set is None: the law's methods skip its ``np.where``
        self.below, self.above = _any_or_none(below), _any_or_none(above)
        posinf = None if law.direction == "remove" else _any_or_none(np.isposinf(x))
        self.c = _Columns(x, law.base.mu)
        self.t = _SliceTails(self.c, posinf)
        self.at = {"cdf_p": law._cdf_p_at, "sf_p": law._sf_p_at, "cdf_q": law._cdf_q_at,
                   "sf_q": law._sf_q_at}
        #: the values at the first edge (cdf_p, cdf_q) and the last (sf_p, sf_q), kept from
        #: the slices asked: ``_differences`` always evaluates the CDFs from the first edge
        #: on and the survival functions up to the last (an entry's value does not depend
        #: on the slice around it, so they are what :meth:`ends` would compute)
        self.kept: dict[str, float] = {}

    def _call(self, name: str, s: slice) -> np.ndarray:
        """``law._<name>_at`` on the slice ``s`` (the preimages themselves are read only
        through the columns, so ``x`` is not passed)."""
        self.t.s = s
        below = None if self.below is None else self.below[s]
        above = None if self.above is None else self.above[s]
        val = self.at[name](None, below, above, self.t)
        a, b, _ = s.indices(self.n)
        if b > a and (a == 0 if name[0] == "c" else b == self.n):
            self.kept[name] = float(val[0] if name[0] == "c" else val[-1])
        return val

    def cdf_p(self, s: slice) -> np.ndarray:
        """``P(L <= e)`` at the edges of the slice ``s``."""
        return self._call("cdf_p", s)

    def sf_p(self, s: slice) -> np.ndarray:
        """``P(e < L < inf)`` at the edges of the slice ``s``."""
        return self._call("sf_p", s)

    def cdf_q(self, s: slice) -> np.ndarray:
        """``Q(L <= e)`` at the edges of the slice ``s``."""
        return self._call("cdf_q", s)

    def sf_q(self, s: slice) -> np.ndarray:
        """``Q(L > e)`` at the edges of the slice ``s``."""
        return self._call("sf_q", s)

    def ends(self) -> tuple[float, float, float, float]:
        """``(P(L <= e_0), Q(L <= e_0), P(e_last < L < inf), Q(e_last < L))``: kept from the
        slices asked so far, else evaluated."""
        first, last = slice(0, 1), slice(self.n - 1, self.n)
        for name, s in (("cdf_p", first), ("cdf_q", first), ("sf_p", last), ("sf_q", last)):
            if name not in self.kept:
                self._call(name, s)
        return self.kept["cdf_p"], self.kept["cdf_q"], self.kept["sf_p"], self.kept["sf_q"]
