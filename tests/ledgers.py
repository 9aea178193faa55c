"""Ledgers built from phases, shared by the test suite (imported as ``ledgers``).

Many test modules step a :class:`~dpacct.accountant.PrivacyAccountant` through a list of
``(noise_multiplier, sample_rate, count)`` phases and then ask it questions; this is the
one place that does the stepping (it was written again in a dozen modules).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from dpacct.accountant import PrivacyAccountant


def ledger(phases: Iterable[tuple[float, float, int]], **options) -> PrivacyAccountant:
    """A fresh ledger (no progress bar) stepped through ``phases`` in order.

    Parameters
    ----------
    phases : iterable of (float, float, int)
        ``(noise_multiplier, sample_rate, count)`` of each record, passed to
        :meth:`~dpacct.accountant.PrivacyAccountant.step` as they are.
    **options
        More keyword arguments of the ledger (``grid``, ``budget_epsilon``, ...).

    Examples
    --------
    >>> acct = ledger([(1.0, 0.01, 10), (1.2, 0.02, 5)])
    >>> len(acct.entries)
    2
    """
    acct = PrivacyAccountant(progress=False, **options)
    for sigma, q, count in phases:
        acct.step(noise_multiplier=sigma, sample_rate=q, count=count)
    return acct


def random_phases(
    seed: int, n: int, sigmas: tuple[float, float], rates: tuple[float, float], count: int
) -> list[tuple[float, float, int]]:
    """``n`` phases of ``count`` steps, sigma and q drawn uniformly (all sigmas first, then
    all rates, from ``numpy.random.default_rng(seed)``).

    Examples
    --------
    >>> random_phases(37, 2, (1.2, 2.0), (0.002, 0.01), 15)[0][2]
    15
    """
    rng = np.random.default_rng(seed)
    s = rng.uniform(*sigmas, n)
    q = rng.uniform(*rates, n)
    return [(float(a), float(b), count) for a, b in zip(s, q, strict=True)]
