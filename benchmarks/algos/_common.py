"""Helpers shared by the topic modules of ``benchmarks/algos`` (not a topic: the runner
skips modules whose name starts with an underscore).

A topic module exposes ``rows(seeds: int = 100, quick: bool = False) -> list[dict]``;
each dict has the keys of :data:`ROW_KEYS` (see ``benchmarks/algorithms.py``).
"""

from __future__ import annotations

import importlib.metadata
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")

#: the keys every row carries, in the order of the printed table
ROW_KEYS = (
    "workflow",
    "metric",
    "dpacct",
    "dpacct_spread",
    "peer",
    "peer_value",
    "peer_spread",
    "seeds",
    "verdict",
    "why",
)
VERDICTS = ("better", "parity", "worse")
#: the verdict of a row whose peer is not installed (``peer`` then says so)
NO_PEER = "n/a"

#: seconds a loop runs before its progress bar appears
PROGRESS_DELAY = 3.0


def progress(iterable: Iterable[T], desc: str, total: int | None = None) -> Iterator[T]:
    """``tqdm`` over ``iterable`` on stderr, shown only once it has run a few seconds."""
    from tqdm.auto import tqdm

    yield from tqdm(iterable, desc=desc, total=total, delay=PROGRESS_DELAY, leave=False,
                    file=sys.stderr, dynamic_ncols=True)


def median_iqr(values: Sequence[float] | np.ndarray, fmt: str = ".4g") -> tuple[float, str]:
    """The median of ``values`` and their interquartile range as ``"IQR a-b"``."""
    v = np.asarray(values, dtype=float)
    q1, med, q3 = np.quantile(v, [0.25, 0.5, 0.75])
    return float(med), f"IQR {q1:{fmt}}-{q3:{fmt}}"


def peer_version(dist: str) -> str | None:
    """The installed version of distribution ``dist``, or None when it is not installed."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def median_se(values: Sequence[float] | np.ndarray) -> float:
    """Standard error of the median, from the IQR (normal approximation:
    ``1.2533 sigma / sqrt(n)`` with ``sigma = IQR / 1.349``)."""
    v = np.asarray(values, dtype=float)
    q1, q3 = np.quantile(v, [0.25, 0.75])
    return float(1.2533 * (q3 - q1) / 1.349 / np.sqrt(len(v)))


def verdict(ours: float, peer: float | None, *, lower_is_better: bool = True,
            rtol: float = 0.02, band: float = 0.0) -> str:
    """``"parity"`` when the medians differ by at most ``rtol`` (relative) or ``band``
    (absolute: e.g. two standard errors of the difference), else better / worse;
    :data:`NO_PEER` without a peer value."""
    if peer is None:
        return NO_PEER
    if abs(ours - peer) <= max(rtol * max(abs(peer), abs(ours)), band):
        return "parity"
    ours_wins = ours < peer if lower_is_better else ours > peer
    return "better" if ours_wins else "worse"


def row(workflow: str, metric: str, ours: Sequence[float] | np.ndarray, peer: str,
        peer_values: Sequence[float] | np.ndarray | None, *, lower_is_better: bool = True,
        rtol: float = 0.02, why: str = "", fmt: str = ".4g") -> dict:
    """One table row from the per-seed values of dpacct and of the peer.

    The verdict is parity when the medians differ by at most ``rtol`` (relative) or by
    two standard errors of their difference (:func:`median_se`), so that seed noise is
    not read as a difference."""
    ours_med, ours_spread = median_iqr(ours, fmt)
    band = 0.0
    if peer_values is None:
        peer_med, peer_spread = None, ""
    else:
        peer_med, peer_spread = median_iqr(peer_values, fmt)
        band = 2.0 * float(np.hypot(median_se(ours), median_se(peer_values)))
    return {
        "workflow": workflow,
        "metric": metric,
        "dpacct": ours_med,
        "dpacct_spread": ours_spread,
        "peer": peer,
        "peer_value": peer_med,
        "peer_spread": peer_spread,
        "seeds": len(ours),
        "verdict": verdict(ours_med, peer_med, lower_is_better=lower_is_better, rtol=rtol,
                           band=band),
        "why": why,
    }
