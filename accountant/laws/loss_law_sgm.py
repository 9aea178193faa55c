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
both ``Q(L <= y)`` and a term of ``P(L <= y)``.  The law's own code evaluates it once
for each; :class:`_Columns` evaluates each of the four tails ``Phi(+-(x-+h)/mu)`` once per
edge, only at the edges :func:`~dpacct.accountant.laws.loss_law._differences` asks,
and mixes them with the law's own expressions in the law's own order, so every mass
is bit-for-bit the law's (the operations are element-wise IEEE arithmetic and
``ndtr``; the tests compare them with the law's own code and with 40-digit
``mpmath``).  The end values :func:`~dpacct.accountant.pld.grid._bins_from_law` asks
(``P(L <= a_0)``, ``Q(L <= a_0)``, ``P(a_n < L)``, ``Q(a_n < L)``) are read from the same
columns instead of four scalar evaluations.
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__: list[str] = []

#: the distribution-function methods a law using this path must not override
KEPT = ("bin_masses", "cdf_p", "sf_p", "cdf_q", "sf_q", "_preimage", "_cdf_p_at",
        "_sf_p_at", "_cdf_q_at", "_sf_q_at")


class _Columns:
    """The normal tails of a subsampled Gaussian law at preimages ``x``, evaluated on
    the index ranges asked, a range already evaluated not again (``Fp = Phi((x-h)/mu)``,
    ``Fq = Phi((x+h)/mu)``, ``Sp = Phi(-(x-h)/mu)``, ``Sq = Phi(-(x+h)/mu)``)."""

    def __init__(self, x: np.ndarray, mu: float) -> None:
        self.x, self.mu, self.n = x, mu, x.size
        # GaussianLossLaw._z's shift, ``sign * 0.5 * mu**2``, by the same expression
        self.shift = {"p": 1.0 * 0.5 * mu**2, "q": -1.0 * 0.5 * mu**2}
        self.cols: dict[str, tuple[np.ndarray, list]] = {}
        #: entries evaluated (each an ``ndtr`` point): the work the tests count
        self.evaluated = 0

    def get(self, key: str, s: slice) -> np.ndarray:
        """Column ``key`` (``"Fp"``, ``"Fq"``, ``"Sp"``, ``"Sq"``) on the slice ``s``."""
        if key not in self.cols:
            self.cols[key] = (np.empty(self.n), [])
        vals, spans = self.cols[key]
        a, b, _ = s.indices(self.n)
        if not any(lo <= a and b <= hi for lo, hi in spans):
            # element-wise: an entry's value does not depend on the range it is part of
            z = (self.x[a:b] - self.shift[key[1]]) / self.mu
            if key[0] == "S":
                np.negative(z, out=z)
            vals[a:b] = special.ndtr(z)
            spans.append((a, b))
            self.evaluated += b - a
        return vals[a:b]


class SharedFunctions:
    """The four distribution functions of a Poisson-subsampled Gaussian ``law`` at the
    edges whose preimages are ``(x, below, above)`` (``law._preimage``), as functions of
    an index slice, each the law's ``_cdf_p_at`` ... ``_sf_q_at`` operation for operation
    on shared :class:`_Columns`."""

    def __init__(self, law, x: np.ndarray, below: np.ndarray, above: np.ndarray) -> None:
        self.q = law.sample_rate
        self.remove = law.direction == "remove"
        self.inf_mass = law.inf_mass
        self.q_neg_inf_mass = law.q_neg_inf_mass
        self.base_inf = law.base.inf_mass
        posinf = np.zeros(0, dtype=bool) if self.remove else np.isposinf(x)
        # the masks, and whether any entry is set (else ``np.where`` is the identity)
        self.masks = {"below": (below, bool(below.any())), "above": (above, bool(above.any())),
                      "posinf": (posinf, bool(posinf.any()))}
        self.c = _Columns(x, law.base.mu)

    def _set(self, name: str, s: slice, value: float, val: np.ndarray) -> np.ndarray:
        mask, any_ = self.masks[name]
        return np.where(mask[s], value, val) if any_ else val

    def cdf_p(self, s: slice) -> np.ndarray:
        q, c = self.q, self.c
        if self.remove:
            val = (1 - q) * c.get("Fq", s) + q * c.get("Fp", s)
            val = self._set("below", s, 0.0, val)
            return self._set("above", s, 1.0 - self.inf_mass, val)
        val = self._set("posinf", s, 1.0, c.get("Fp", s))
        val = self._set("above", s, 1.0, val)
        return self._set("below", s, 0.0, val)

    def sf_p(self, s: slice) -> np.ndarray:
        q, c = self.q, self.c
        if self.remove:
            val = (1 - q) * c.get("Sq", s) + q * c.get("Sp", s)
            val = self._set("below", s, 1.0 - self.inf_mass, val)
            return self._set("above", s, 0.0, val)
        val = c.get("Sp", s) + self.base_inf
        val = self._set("posinf", s, 0.0, val)
        val = self._set("above", s, 0.0, val)
        return self._set("below", s, 1.0, val)

    def cdf_q(self, s: slice) -> np.ndarray:
        q, c = self.q, self.c
        if self.remove:
            val = self._set("below", s, 0.0, c.get("Fq", s))
            return self._set("above", s, 1.0, val)
        val = (1 - q) * c.get("Fp", s) + q * c.get("Fq", s)
        val = self._set("posinf", s, 1.0, val)
        val = self._set("above", s, 1.0, val)
        return self._set("below", s, self.q_neg_inf_mass, val)

    def sf_q(self, s: slice) -> np.ndarray:
        q, c = self.q, self.c
        if self.remove:
            val = self._set("below", s, 1.0, c.get("Sq", s))
            return self._set("above", s, 0.0, val)
        val = (1 - q) * (c.get("Sp", s) + self.base_inf) + q * c.get("Sq", s)
        val = self._set("posinf", s, 0.0, val)
        val = self._set("above", s, 0.0, val)
        return self._set("below", s, 1.0 - self.q_neg_inf_mass, val)

    def ends(self) -> tuple[float, float, float, float]:
        """``(P(L <= e_0), Q(L <= e_0), P(e_last < L < inf), Q(e_last < L))``."""
        first, last = slice(0, 1), slice(self.c.n - 1, self.c.n)
        return (
            float(self.cdf_p(first)[0]),
            float(self.cdf_q(first)[0]),
            float(self.sf_p(last)[0]),
            float(self.sf_q(last)[0]),
        )
