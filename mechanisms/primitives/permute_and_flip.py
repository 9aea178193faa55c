"""The permute-and-flip mechanism (McKenna & Sheldon 2020): private selection.

Given utilities ``u_1, ..., u_m`` of sensitivity ``Delta``, permute-and-flip visits the
candidates in a uniformly random order and stops at candidate ``r`` with probability
``exp(epsilon (u_r - u_max) / (2 Delta))`` (McKenna & Sheldon 2020, "Permute-and-flip: a
new mechanism for differentially private selection", Algorithm 1).  It is
``epsilon``-DP (their Theorem 1) and its expected utility is never below the
exponential mechanism's at the same epsilon (their Theorem 2), often well above it: the
exponential mechanism's exponent is the same, but permute-and-flip puts more of the
mass on the best candidates.  It is identical in law to report-noisy-max with
exponential noise, ``argmax_r (epsilon u_r / (2 Delta) + E_r)`` with ``E_r`` i.i.d.
standard exponential (Ding, Kifer, Zhang et al. 2021, "The permute-and-flip mechanism is
identical to report-noisy-max with exponential noise"), which is how it is sampled
here.  OpenDP's ``make_private_quantile`` under ``max_divergence`` draws the same way.

Privacy accounting: the mechanism is accounted as a generic pure ``epsilon``-DP
mechanism (the curves of :class:`~dpacct.mechanisms.PureDPMechanism`, exact for the
worst pure-DP mechanism, sound for this one); no bounded-range claim is made.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpacct.accountant.mechanism import Capabilities, Mechanism
from dpacct.accountant.serialization import register_mechanism
from dpacct.accountant.validation import check_positive

from .exponential import scaled_scores
from .randomized_response import PureDPCurves

__all__ = ["PermuteAndFlip"]


@dataclass(frozen=True, repr=False, init=False)
class PermuteAndFlip(PureDPCurves, Mechanism):
    """Permute-and-flip selection, pure ``epsilon``-DP (McKenna & Sheldon 2020).

    Parameters
    ----------
    epsilon : float
        The pure-DP parameter, > 0 and finite; available afterwards as ``epsilon0``
        (``epsilon`` is the query method ``epsilon(delta)``).

    Examples
    --------
    >>> pf = PermuteAndFlip(epsilon=1.0)
    >>> pf
    PermuteAndFlip(epsilon=1.0)
    >>> pf.pure_epsilon
    1.0
    >>> rng = np.random.default_rng(0)
    >>> picks = [pf.release([0.0, 0.0, 20.0], sensitivity=1.0, rng=rng) for _ in range(100)]
    >>> bool(np.mean(np.array(picks) == 2) > 0.95)
    True
    """

    #: the pure-DP parameter, stored as ``epsilon0`` because ``epsilon`` is the
    #: :meth:`~dpacct.accountant.mechanism.Mechanism.epsilon` query of every mechanism
    epsilon0: float

    declares = Capabilities(exact_curve=True, rdp=True, loss_laws=True, exact_tradeoff=True)

    def __init__(self, epsilon: float) -> None:
        object.__setattr__(self, "epsilon0", check_positive("epsilon", epsilon))

    def __repr__(self) -> str:
        return f"PermuteAndFlip(epsilon={self.epsilon0!r})"

    def release(self, scores: object, *, sensitivity: float, rng: np.random.Generator) -> int:
        """Select an index: ``argmax_i (epsilon scores[i] / (2 Delta) + E_i)``.

        ``E_i`` i.i.d. standard exponential: the law of permute-and-flip (module
        docstring).

        Parameters
        ----------
        scores : array_like, shape (m,)
            Finite utilities (higher is better), m >= 1.
        sensitivity : float
            ``Delta``, the largest change of any utility between neighbours, > 0.
        rng : numpy.random.Generator
            The only source of randomness.

        Returns
        -------
        int
            The index selected.

        Raises
        ------
        ValueError
            Empty, non-finite or non-1-D ``scores``; bad ``sensitivity``.
        TypeError
            ``rng`` not a ``numpy.random.Generator``.
        """
        u, logits, rng = scaled_scores(scores, sensitivity, rng, self.epsilon0)
        return int(np.argmax(logits - logits.max() + rng.exponential(size=u.size)))


def _encode(m: PermuteAndFlip) -> dict[str, object]:
    return {"epsilon": m.epsilon0}


def _decode(params: dict) -> PermuteAndFlip:
    return PermuteAndFlip(epsilon=params["epsilon"])


register_mechanism("permute_and_flip", PermuteAndFlip, encode=_encode, decode=_decode)
