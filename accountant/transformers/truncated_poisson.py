"""DP-SGD with truncated Poisson batches: a dominating pair and its certified bracket.

The sampler (dp_accounting's ``TruncatedSubsampledGaussianDpEvent``, as JAX Privacy
trains at scale): every record of the dataset is drawn independently with probability
``q``; when more than ``b`` records are drawn, a uniformly random ``b`` of them are kept.
The clipped gradients (norm <= 1) of the batch are summed and ``N(0, sigma^2)`` noise is
added.  ``dataset_size = n`` is the size of the dataset that holds the differing record
(the other one has ``n - 1`` records), as in dp_accounting.

**The dominating pair (proved here).**  Let ``x`` be the differing record and ``K`` the
number of the other ``n - 1`` records that Poisson sampling draws, ``K ~ Bin(n - 1, q)``;
it has the same law on both datasets.  Condition on ``K = k`` and the draw ``S``:

* ``k <= b - 1``: nothing is cut without ``x``, and with ``x`` (probability ``q``)
  the batch is ``S + x``: the pair is the Poisson-subsampled Gaussian of sensitivity 1,
  ``((1 - q) N(m, .) + q N(m + g_x, .), N(m, .))``.
* ``k >= b``: without ``x`` the batch is a random ``b``-subset of ``S``; write it as a
  random ``(b - 1)``-subset ``T`` plus one more record ``y`` of ``S``.  With ``x`` drawn
  (probability ``q``) and kept (probability ``b / (k + 1)``) the batch is ``T + x``,
  otherwise it has the law of ``T + y``.  Given ``(T, y)`` the pair is
  ``((1 - r_k) N(m + g_y, .) + r_k N(m + g_x, .), N(m + g_y, .))`` with
  ``r_k = q b / (k + 1)`` and ``||g_x - g_y|| <= 2``: a Poisson-subsampled Gaussian of
  sensitivity 2 at rate ``r_k``.

Both sides are mixtures over the same ``(K, S, T, y)`` with the same weights, so the
pair that reveals them dominates the mechanism (joint convexity of the hockey-stick
divergence); it depends on them only through the component, and each component is
dominated by its one-dimensional subsampled-Gaussian pair (Mironov, Talwar, Zhang 2019,
Section 3; Zhu, Dong, Wang 2022, Theorem 11).  A larger rate dominates a smaller one,
so the ``k >= b`` components are grouped into at most ``TRUNCATION_BINS`` bins of ``k``
(each with the rate of its smallest ``k``, the largest in the bin).  The resulting
revealed mixture (the law of
:class:`~dpacct.accountant.laws.mixture_law.MixtureLossLaw`, evaluated for all
components at once as one array law, :class:`TruncatedPoissonLossLaw`) feeds the one
PLD engine; both directions are accounted (the add direction mixes the swapped
components).  Its certified bracket is that of this *dominating pair*: the upper end
bounds the mechanism, the lower end only the pair (``epsilon_bounds(...).bounds ==
"dominating pair"``, :mod:`~dpacct.accountant.bracket`).

dp_accounting's ``from_truncated_subsampled_gaussian_mechanism`` (version 0.6.0) instead
merges the ``k >= b`` components into one at the average rate and bounds it by a
replace-one pair; its answer may therefore differ from this certified one in either
direction (see the tests, where an exact one-step value decides).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..laws.loss_law import (
    GaussianLossLaw,
    PoissonSubsampledLossLaw,
    PrivacyLossLaw,
)
from ..mechanism import Capabilities, Mechanism
from ..numerics import scipy_special as special
from ..rdp.subsampled_rdp import subsampled_gaussian_rdp
from ..validation import check_count, check_positive, check_sample_rate

__all__ = [
    "TruncatedPoissonGaussianMechanism",
    "TruncatedPoissonLossLaw",
    "truncated_poisson_components",
]

#: most bins of the count ``K >= b`` (each at the largest rate it holds)
TRUNCATION_BINS = 256
#: the mass of ``K`` left outside the finely binned range (it joins a bin at a larger rate)
_BIN_TAIL = 1e-17


def truncated_poisson_components(
    sample_rate: float, dataset_size: int, max_batch_size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Components ``(weights, rates, sensitivities)`` of the truncated-Poisson pair.

    Component 0 is the untruncated case (rate ``q``, sensitivity 1, weight
    ``P(K <= b - 1)``); the others are bins of ``K >= b`` (sensitivity 2, the bin's
    largest rate ``q b / (k + 1)``, weight ``P(K in bin)``), ``K ~ Bin(n - 1, q)``.

    Parameters
    ----------
    sample_rate : float
        Poisson sampling probability ``q``, in (0, 1].
    dataset_size : int
        ``n``, records of the dataset that holds the differing record, >= 1.
    max_batch_size : int
        ``b``, the largest batch kept, >= 1.

    Returns
    -------
    tuple of numpy.ndarray
        Weights (summing to 1), rates and sensitivities.

    Examples
    --------
    >>> w, r, c = truncated_poisson_components(0.01, 10_000, 100)
    >>> float(c[0]), float(c[1]), bool(abs(w.sum() - 1) < 1e-12), bool(r[1] <= 0.01 * 100 / 101)
    (1.0, 2.0, True, True)
    """
    from scipy import stats  # here, not at import: scipy.stats costs 0.3 s of start-up

    q = check_sample_rate(sample_rate)
    n = check_count(dataset_size, "dataset_size")
    b = check_count(max_batch_size, "max_batch_size")
    m = n - 1  # the other records
    if b > m or q == 0.0:
        return np.array([1.0]), np.array([q]), np.array([1.0])
    w_cut = float(stats.binom.sf(b - 1, m, q))  # P(K >= b)
    if w_cut == 0.0:
        return np.array([1.0]), np.array([q]), np.array([1.0])
    lo = max(b, int(stats.binom.ppf(_BIN_TAIL, m, q)))
    hi = min(m, int(stats.binom.isf(_BIN_TAIL, m, q)) + 1)
    if hi <= lo:
        hi = lo + 1
    # geometric edges in k + 1 between lo and hi (the rate is q b / (k + 1))
    if hi - lo <= TRUNCATION_BINS:
        inner = np.arange(lo, hi + 1)  # every count: no binning slack
    else:
        inner = np.round(np.geomspace(lo + 1, hi + 1, TRUNCATION_BINS) - 1).astype(int)
    edges = np.unique(np.concatenate([[b], inner[(inner > b) & (inner <= m)], [m + 1]]))
    # P(edges[i] <= K < edges[i+1]) from survival differences (accurate in the tail)
    sf = stats.binom.sf(edges - 1, m, q)
    w_bins = np.maximum(sf[:-1] - sf[1:], 0.0)
    rates = q * b / (edges[:-1] + 1.0)
    w_full = float(stats.binom.cdf(b - 1, m, q))
    weights = np.concatenate([[w_full], w_bins])
    weights = weights / weights.sum()
    keep = weights > 0
    keep[0] = True
    return (
        weights[keep],
        np.concatenate([[q], rates])[keep],
        np.concatenate([[1.0], np.full(rates.size, 2.0)])[keep],
    )


#: rows of edges evaluated at once by :class:`TruncatedPoissonLossLaw` (memory: rows x components)
_CHUNK = 2048


@dataclass(frozen=True, eq=False)
class TruncatedPoissonLossLaw(PrivacyLossLaw):
    """The revealed mixture of Poisson-subsampled Gaussians, evaluated as one array law.

    Component ``j`` (weight ``w_j``) is the Poisson-subsampled Gaussian pair of
    Gaussian-DP parameter ``mu_j = c_j / sigma`` at rate ``r_j`` in ``direction``
    (:class:`~dpacct.accountant.laws.loss_law.PoissonSubsampledLossLaw`: the loss
    ``log(1 - r + r e^L)`` of the Gaussian loss ``L``, Zhu, Dong, Wang 2022, Theorem 11),
    and the distribution functions are the ``w``-averages of the components'
    (:class:`~dpacct.accountant.laws.mixture_law.MixtureLossLaw`, same law).  Here
    every component is evaluated at once on an ``(edges, components)`` array instead of
    one law object per component; bin masses take, per component and bin, the CDF
    difference left of the component's median and the survival difference right of
    it, as each component's own law does, before averaging.

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0.
    weights, rates, sensitivities : numpy.ndarray
        The components (:func:`truncated_poisson_components`).
    direction : {"remove", "add"}
        The neighbouring direction.

    Examples
    --------
    >>> w, r, c = truncated_poisson_components(0.01, 10_000, 100)
    >>> law = TruncatedPoissonLossLaw(1.0, w, r, c, "remove")
    >>> bool(0 < law.hockey_stick(np.array([0.1]))[0] < 1)
    True
    """

    sigma: float
    weights: np.ndarray
    rates: np.ndarray
    sensitivities: np.ndarray
    direction: str

    #: discretised two-scale above this many grid points (``pld_settings.discretize_law``):
    #: each point costs one Gaussian evaluation per component, and a small cut ``b``
    #: gives a skewed loss (a bulk within ``q`` of 0 sets the step, a tail to ~12 the
    #: range), whose single-scale grid of up to ``MAX_GRID`` points took minutes
    split_grid_above: ClassVar[int] = 1 << 16

    def __post_init__(self) -> None:
        if self.direction not in ("remove", "add"):
            raise ValueError(f"direction must be 'remove' or 'add', got {self.direction!r}")
        w = np.asarray(self.weights, dtype=float)
        keep = w > 0
        mu = np.asarray(self.sensitivities, dtype=float)[keep] / self.sigma
        r = np.asarray(self.rates, dtype=float)[keep]
        object.__setattr__(self, "weights", w[keep])
        object.__setattr__(self, "rates", r)
        object.__setattr__(self, "sensitivities", np.asarray(self.sensitivities)[keep])
        object.__setattr__(self, "_mu", mu)
        full = r >= 1.0
        rr = np.where(full, 0.5, r)  # placeholders where r = 1 (the identity map)
        object.__setattr__(self, "_full", full)
        object.__setattr__(self, "_log1mr", np.where(full, -np.inf, np.log1p(-rr)))
        object.__setattr__(self, "_c", np.log1p(-rr) - np.log(rr))

    def _preimage(self, y: np.ndarray) -> np.ndarray:
        """Gaussian losses ``x`` (edges x components) that component ``j`` maps to ``y``.

        ``remove``: ``y = log(1 - r + r e^x)``, so with ``d = y - log(1 - r) > 0``,
        ``x = log((1 - r) / r) + d + log(1 - e^{-d})``; ``add``: ``y = -log(1 - r + r e^{-x})``
        and ``x = -(log((1 - r) / r) + d + log(1 - e^{-d}))`` with ``d = -y - log(1 - r)``.
        Below (above) the range of the map ``x = -inf`` (``+inf``): the distribution
        functions are then 0 and 1 as they must be.  ``r = 1`` maps ``x`` to itself.
        """
        y = np.asarray(y, dtype=float)[:, None]
        sign = 1.0 if self.direction == "remove" else -1.0
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            d = sign * y - self._log1mr
            x = self._c + d + np.log(-np.expm1(-d))
            x = sign * np.where(d > 0, x, -np.inf)
            return np.where(self._full, y, x)

    def _tails(self, y: np.ndarray):
        """Standardised Gaussian losses under the base P and Q, and their tails ``Phi(-|z|)``."""
        x = self._preimage(y)
        mu = self._mu
        with np.errstate(invalid="ignore"):
            zp = x / mu - 0.5 * mu
            zq = x / mu + 0.5 * mu
        return zp, zq, special.ndtr(-np.abs(zp)), special.ndtr(-np.abs(zq))

    def _mix(self, base_p: np.ndarray, base_q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The component's (P, Q) from the Gaussian's: remove ``((1-r) Q + r P, Q)``, add
        ``(P, (1-r) P + r Q)`` (the Gaussian pair is symmetric, so its swap is itself)."""
        r = self.rates
        if self.direction == "remove":
            return (1.0 - r) * base_q + r * base_p, base_q
        return base_p, (1.0 - r) * base_p + r * base_q

    def _mixed(self, which: int, y) -> np.ndarray:
        """``which`` = 0..3: ``cdf_p``, ``sf_p``, ``cdf_q``, ``sf_q`` at ``y``."""
        y = np.asarray(y, dtype=float)
        flat = y.reshape(-1)
        out = np.zeros(flat.size)
        upper = which in (1, 3)
        for i in range(0, flat.size, _CHUNK):
            zp, zq, tp, tq = self._tails(flat[i : i + _CHUNK])
            # Phi(z) = T where z <= 0 else 1 - T; the survival function the other way
            fp = np.where((zp > 0) == upper, tp, 1.0 - tp)
            fq = np.where((zq > 0) == upper, tq, 1.0 - tq)
            out[i : i + _CHUNK] = self._mix(fp, fq)[which >= 2] @ self.weights
        return out.reshape(y.shape)

    def cdf_p(self, x):
        return self._mixed(0, x)

    def sf_p(self, x):
        return self._mixed(1, x)

    def cdf_q(self, x):
        return self._mixed(2, x)

    def sf_q(self, x):
        return self._mixed(3, x)

    def bin_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """P- and Q-masses of the bins ``(edges[j], edges[j+1]]``, all components at once.

        Each component's Gaussian masses are differences of tails ``Phi(-|z|)``: of the
        CDF left of the Gaussian's median, of the survival function right of it, and
        ``1 - T(a) - T(b)`` for a bin across it -- never a difference of two numbers
        near 1 -- then mixed (:meth:`_mix`) and averaged with the weights.

        Parameters
        ----------
        edges : array_like
            Increasing bin edges (``-inf`` and ``+inf`` allowed).
        """
        e = np.asarray(edges, dtype=float)
        n = max(e.size - 1, 0)
        m_p, m_q = np.zeros(n), np.zeros(n)
        for i in range(0, n, _CHUNK):
            zp, zq, tp, tq = self._tails(e[i : i + _CHUNK + 1])
            masses = []
            for z, t in ((zp, tp), (zq, tq)):
                za, zb, ta, tb = z[:-1], z[1:], t[:-1], t[1:]
                with np.errstate(invalid="ignore"):
                    m = np.where(zb <= 0, tb - ta, np.where(za > 0, ta - tb, 1.0 - ta - tb))
                masses.append(np.maximum(np.nan_to_num(m), 0.0))
            mp_, mq_ = self._mix(*masses)
            m_p[i : i + zp.shape[0] - 1] = mp_ @ self.weights
            m_q[i : i + zp.shape[0] - 1] = mq_ @ self.weights
        return m_p, m_q


@dataclass(frozen=True)
class TruncatedPoissonGaussianMechanism(Mechanism):
    """One DP-SGD step on a Poisson batch cut at ``max_batch_size`` records.

    Each of the ``dataset_size`` records is drawn with probability ``sample_rate``; a
    batch larger than ``b = max_batch_size`` is cut to a uniformly random ``b`` of its
    records; the summed clipped gradients get ``N(0, noise_multiplier^2)`` noise
    (dp_accounting's ``TruncatedSubsampledGaussianDpEvent``; JAX Privacy's
    ``truncated_dpsgd_event``).  The dominating pair is proved in
    :mod:`dpacct.accountant.transformers.truncated_poisson`: with ``K ~ Bin(n - 1, q)`` other
    records drawn, the step is the Poisson-subsampled Gaussian of sensitivity 1 when
    ``K < b`` and of sensitivity 2 at rate ``q b / (K + 1)`` when ``K >= b``, revealed
    (Mironov, Talwar, Zhang 2019, Section 3; Zhu, Dong, Wang 2022, Theorem 11).  Both
    directions, a certified PLD bracket of that dominating pair (its ``bounds`` says
    ``"dominating pair"``: the lower end need not bound the step), RDP (the weighted
    moments of the components' subsampled-Gaussian RDP, every cut one at the largest
    cut rate: an upper bound) and the trade-off curve.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation per unit of clipping norm, > 0.
    sample_rate : float
        Poisson sampling probability, in (0, 1].
    dataset_size : int
        Records of the dataset that holds the differing record, >= 1.
    max_batch_size : int
        The largest batch kept, >= 1.

    Examples
    --------
    >>> from dpacct.accountant import GaussianMechanism, poisson_subsample
    >>> step = TruncatedPoissonGaussianMechanism(1.0, 0.01, dataset_size=10_000, max_batch_size=100)
    >>> plain = poisson_subsample(GaussianMechanism(sigma=1.0), 0.01)
    >>> bool(step.epsilon(1e-5) >= plain.epsilon(1e-5))   # a cut batch can only cost more
    True
    """

    noise_multiplier: float
    sample_rate: float
    dataset_size: int
    max_batch_size: int

    declares = Capabilities(rdp=True, loss_laws=True)
    #: its PLDs are those of the revealed mixture, which only dominates the step
    brackets_dominating_pair = True

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "noise_multiplier", check_positive("noise_multiplier", self.noise_multiplier)
        )
        object.__setattr__(self, "sample_rate", check_sample_rate(self.sample_rate))
        object.__setattr__(self, "dataset_size", check_count(self.dataset_size, "dataset_size"))
        object.__setattr__(
            self, "max_batch_size", check_count(self.max_batch_size, "max_batch_size")
        )
        self._cache()["components"] = truncated_poisson_components(
            self.sample_rate, self.dataset_size, self.max_batch_size
        )

    def _loss_laws(self):
        cache = self._cache()
        if "laws" not in cache:
            w, r, c = cache["components"]
            s = self.noise_multiplier
            if len(w) == 1:  # no cut: the plain subsampled Gaussian
                base = GaussianLossLaw(mu=float(c[0]) / s)
                laws = [PoissonSubsampledLossLaw(base, float(r[0]), d) for d in ("remove", "add")]
            else:  # one array law over every component (not one object per component)
                laws = [TruncatedPoissonLossLaw(s, w, r, c, d) for d in ("remove", "add")]
            cache["laws"] = tuple(laws)
        return cache["laws"]

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        # the revealed mixture's moment E[e^{(alpha-1) L}] is the weighted sum of the
        # components' moments; each is bounded by the tight subsampled-Gaussian RDP (the
        # larger of its two directions), which increases with the rate, so every cut
        # component is bounded at the largest cut rate (two series evaluations, not one
        # per count)
        a = np.asarray(alpha, dtype=float)
        w, r, c = self._cache()["components"]
        s = self.noise_multiplier
        parts = [(w[0], r[0], c[0])]
        if len(w) > 1:
            parts.append((float(np.sum(w[1:])), float(np.max(r[1:])), 2.0))
        logs = np.stack(
            [
                math.log(wj) + (a - 1.0) * subsampled_gaussian_rdp(rj, s / cj, a)
                for wj, rj, cj in parts
                if wj > 0
            ]
        )
        return np.maximum(special.logsumexp(logs, axis=0) / (a - 1.0), 0.0)
