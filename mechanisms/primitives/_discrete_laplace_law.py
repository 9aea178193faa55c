"""The exact privacy-loss law of discrete Laplace noise at an integer sensitivity ``k``.

Noise ``P(X = y) = tanh(a/2) e^{-a|y|}`` (``a = 1/scale``); the pair is
``P = X + k`` and ``Q = X``.  The loss ``L(x) = a(|x| - |x - k|)`` is ``-ak`` for
``x <= 0``, ``+ak`` for ``x >= k`` and ``a(2x - k)`` in between: ``k + 1`` atoms, all
multiples of ``a``, so the law is exact (no truncation) and lies on the lattice ``a``.
Under ``P``: ``P(L = ak) = P(X >= 0) = 1/(1 + e^{-a})``,
``P(L = -ak) = P(X <= -k) = e^{-ak}/(1 + e^{-a})`` and
``P(L = a(2x - k)) = tanh(a/2) e^{-a(k - x)}`` for ``0 < x < k``.  The noise law is
symmetric, so ``x -> k - x`` swaps ``P`` and ``Q``: both directions share this law.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from dpacct.accountant.laws.loss_law import AtomicLossLaw

#: largest sensitivity whose law is enumerated (one atom per integer of the shift)
MAX_SENSITIVITY = 10**6


def discrete_laplace_law(scale: float, sensitivity: int) -> AtomicLossLaw:
    """The exact loss law above (``scale > 0``, ``1 <= sensitivity <= MAX_SENSITIVITY``)."""
    a, k = 1.0 / scale, int(sensitivity)
    x = np.arange(1, k, dtype=float)  # interior outputs 0 < x < k
    losses = np.concatenate(([-a * k], a * (2.0 * x - k), [a * k]))
    top = float(special.expit(a))  # 1 / (1 + e^{-a})
    p = np.concatenate(([top * math.exp(-a * k)], math.tanh(a / 2.0) * np.exp(-a * (k - x)), [top]))
    return AtomicLossLaw(losses=losses, p=p, lattice=a)
