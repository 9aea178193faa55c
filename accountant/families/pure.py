"""Moved to :mod:`dpacct.accountant.pure` (the bracket of a pure epsilon).

The contract's room
holds the base class, the capabilities, the declarations and the router together, and
``families/`` only families (issue 36).  This path keeps working (a re-export).
"""

from ..pure import (
    LOWER_DELTA,
    pure_epsilon_bounds,
)

__all__ = [
    "LOWER_DELTA",
    "pure_epsilon_bounds",
]
