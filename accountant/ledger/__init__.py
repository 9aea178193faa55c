"""The online privacy accountant: a ledger that a training loop feeds.

:class:`PrivacyAccountant` records what was run -- DP-SGD steps through
:meth:`~PrivacyAccountant.step`, any mechanism through
:meth:`~PrivacyAccountant.record` -- and answers, at any moment, the epsilon spent so
far.  With a declared budget it is a privacy filter that refuses, with a
:class:`BudgetExceededError`, what would exceed the budget.

The parts, one concept a module:

* :mod:`~dpacct.accountant.ledger.records` -- the entries, each classified once when
  recorded (a DP-SGD step, by its Gaussian-DP capability, or another mechanism);
* :mod:`~dpacct.accountant.ledger.accountant` -- :class:`PrivacyAccountant`: the state
  (feeding, the filter), the budget, saving and loading;
* :mod:`~dpacct.accountant.ledger.ledger_mechanism` -- the records as a mechanism
  (``PrivacyAccountant.ledger``): every query (``epsilon``, ``delta``,
  ``epsilon_bounds``, ``rdp``, ``tradeoff``) answered by the router's ledger rows;
* :mod:`~dpacct.accountant.ledger.filters` -- the filter strategies: the
  fixed-schedule PLD filter and the Renyi filter of Feldman & Zrnic 2021;
* :mod:`~dpacct.accountant.ledger.adaptive_filters` -- the fully adaptive filters
  over every Renyi order (a mixture) and for Gaussian DP (Smith & Thakurta 2022);
* :mod:`~dpacct.accountant.ledger.history` -- the filter's composed history;
* :mod:`dpacct.accountant.ledger.ledger_file` -- the file format (schema, seal, atomic write,
  validated read).
"""

from .accountant import PrivacyAccountant
from .filters import ADAPTIVE_ORDERS, LOOKAHEAD_SLACK, BudgetExceededError
from .history import _FastHistory, _PLDHistory
from .ledger_file import FORMAT, SCHEMA_VERSION, LedgerFileError
from .records import EXACT_PHASES

__all__ = [
    "FORMAT",
    "SCHEMA_VERSION",
    "BudgetExceededError",
    "LedgerFileError",
    "PrivacyAccountant",
]

# private names kept importable from here for the tests and callers that used them
_PRIVATE = (ADAPTIVE_ORDERS, LOOKAHEAD_SLACK, EXACT_PHASES, _FastHistory, _PLDHistory)
