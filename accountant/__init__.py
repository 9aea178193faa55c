"""dpacct's engine: privacy curves, their conversions, composition and subsampling.

The public entry points are the :class:`Mechanism` contract and the transformers
:func:`compose`, :func:`poisson_subsample` and :func:`subsample_without_replacement`.
"""

from dpacct import _exports

from .bracket import Bracket
from .families.custom import (
    GaussianDPMechanism,
    MissingCapabilityError,
    mechanism_from_delta_curve,
    mechanism_from_epsilon_delta,
    mechanism_from_gdp,
    mechanism_from_loss_laws,
    mechanism_from_pure_epsilon,
    mechanism_from_rdp,
)
from .families.gaussian import GaussianMechanism
from .families.mixture_gaussian import MixtureOfGaussiansMechanism, user_level_dpsgd
from .laws.loss_law import AtomicLossLaw, GaussianLossLaw, PoissonSubsampledLossLaw, PrivacyLossLaw
from .ledger import BudgetExceededError, LedgerFileError, PrivacyAccountant
from .mechanism import Capabilities, Mechanism, PLDSettings
from .pld.grid import GridPLD, discretize
from .queries.attack_risk import advantage, advantage_bounds, tpr_at, tpr_bounds, tradeoff_bounds
from .rdp.conversion import pure_dp_rdp, rdp_to_delta, rdp_to_epsilon, zcdp_rdp
from .relations import ADD_REMOVE, REPLACE_ONE
from .serialization import register_mechanism
from .transformers.compose import ComposedMechanism, compose
from .transformers.random_allocation import (
    RandomAllocationMechanism,
    random_allocation,
    random_allocation_delta_mc,
    random_allocation_lower_epsilon,
)
from .transformers.repeat_select import repeat_and_select
from .transformers.shuffling import ShufflingReport, shuffled_batches
from .transformers.subsample import (
    PoissonSubsampledMechanism,
    WithoutReplacementSubsampledMechanism,
    poisson_subsample,
    subsample_without_replacement,
)
from .transformers.truncated_poisson import TruncatedPoissonGaussianMechanism

# the names come from the one export table (dpacct/_exports.py)
__all__ = list(_exports.ACCOUNTANT)
