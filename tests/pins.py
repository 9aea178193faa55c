"""Floats pinned by regression tests, compared across CPUs.

numpy dispatches its transcendental kernels (``exp``, ``log``, ...) on the CPU's vector
extensions, and the AVX2 and AVX-512 kernels round differently within their few ulps.
The library's answers therefore move in their last digits from one machine to another:
measured on the same commit (b3012cd), DP-SGD's upper end at q 0.01, sigma 1.1, T 1e4
is 5.192605208042421 on an AMD EPYC (AVX2) and 5.192605208116863 on an Intel Xeon
(AVX-512), 1.4e-11 relative apart; the regression pins of ``test_pld_pair`` and
``test_filters`` moved by 5e-15 to 6e-13.  A pin is held to :data:`PIN_REL`: far above
that spread, far below any change those tests guard against (a re-recording there has
moved answers by 1e-10 or more).  Counts, ``None`` and exact zeros stay exact.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["PIN_REL", "SPLIT_REL", "SPLIT_SMALL_DELTA_REL", "bar_rel", "pinned"]

#: relative tolerance of a pinned float across CPUs (module docstring)
PIN_REL = 1e-10

#: how far a "no looser than main" bar lets a schedule's upper end rise since session
#: 47's certified split (the subsampled Gaussian's and the schedules' cells' split
#: numerators from the base bin, rounded up by their error bounds: a soundness fix,
#: benchmarks/README.md "Session 47").  At delta 1e-5 the bars' answers rose by up to
#: 1.6e-10 relative.
SPLIT_REL = 1e-9
#: the same at delta below 1e-7, where a ledger's epsilon moves by up to 9e-7 either way
#: when the split's error bound is scaled by 0, 0.5, 1 or 2 (measured on review 31's 24 x 9
#: and 25 x 10 schedules at delta 1e-9: not monotone in the bound, the route's own
#: resolution there); the bars guard against moves of 1e-4
SPLIT_SMALL_DELTA_REL = 2e-6


def bar_rel(delta: float) -> float:
    """The relative tolerance of a no-looser-than-main bar at ``delta``: :data:`SPLIT_REL`,
    or :data:`SPLIT_SMALL_DELTA_REL` below ``delta = 1e-7``.

    Examples
    --------
    >>> bar_rel(1e-5), bar_rel(1e-9)
    (1e-09, 2e-06)
    """
    return SPLIT_SMALL_DELTA_REL if delta < 1e-7 else SPLIT_REL


def pinned(got, want, rel: float = PIN_REL) -> bool:
    """Whether ``got`` matches the pin ``want`` up to ``rel`` (elementwise for tuples,
    lists and arrays; integers, ``None`` and zeros exactly).

    Examples
    --------
    >>> pinned((3, 1.0 + 1e-12), (3, 1.0))
    True
    >>> pinned(2, 3) or pinned(0.0, 1e-300) or pinned(1.0, 1.0 + 1e-9)
    False
    """
    if isinstance(want, (str, bytes)) or not isinstance(want, Iterable):
        if want is None or (isinstance(want, (bool, int)) and not isinstance(got, float)):
            return got == want
        if want == 0.0:
            return got == 0.0
        return math.isclose(float(got), float(want), rel_tol=rel, abs_tol=0.0)
    got, want = list(got), list(want)
    return len(got) == len(want) and all(pinned(g, w, rel) for g, w in zip(got, want, strict=True))
