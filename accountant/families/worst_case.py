"""Moved to :mod:`dpacct.accountant.worst_case` (the worst-case declarations).

The contract's room
holds the base class, the capabilities, the declarations and the router together, and
``families/`` only families (issue 36).  This path keeps working (a re-export).
"""

from ..worst_case import (
    EpsilonDeltaDeclaration,
    GaussianDPDeclaration,
    PureEpsilonDeclaration,
)

__all__ = [
    "EpsilonDeltaDeclaration",
    "GaussianDPDeclaration",
    "PureEpsilonDeclaration",
]
