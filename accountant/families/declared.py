"""Moved to :mod:`dpacct.accountant.declared` (the declarations a mechanism is built from).

The contract's room
holds the base class, the capabilities, the declarations and the router together, and
``families/`` only families (issue 36).  This path keeps working (a re-export).
"""

from ..declared import (
    Declaration,
    DeltaCurveDeclaration,
    LossLawDeclaration,
    RDPCurveDeclaration,
    check_name,
    check_relation,
    memo_rdp,
    no_rdp,
)

__all__ = [
    "Declaration",
    "DeltaCurveDeclaration",
    "LossLawDeclaration",
    "RDPCurveDeclaration",
    "check_name",
    "check_relation",
    "memo_rdp",
    "no_rdp",
]
