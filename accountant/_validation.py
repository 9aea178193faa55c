"""Old private name of :mod:`dpacct.accountant.validation`, kept as a thin re-export.

The engine modules (``mechanism``, ``compose``, ``subsample``, ``ledger``, ``schedule``,
``custom``) still import ``from ._validation import ...``; their owners switch them to
``from .validation import ...`` and then this module goes.  New code imports
:mod:`dpacct.accountant.validation`.
"""

from __future__ import annotations

from .validation import *  # noqa: F403
from .validation import __all__, _as_real, _short_int  # noqa: F401
from .validation import real_array as _real_array  # noqa: F401
