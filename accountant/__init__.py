"""dpacct's engine: privacy curves, their conversions, composition and subsampling.

The public entry points are the :class:`Mechanism` contract and the transformers
:func:`compose`, :func:`poisson_subsample` and :func:`subsample_without_replacement`.

The names below are this layer's export list (``__all__``), each with the submodule that
defines it.  They load on first use (PEP 562), so that ``import dpacct.accountant`` and
one Gaussian's epsilon load the modules that answer it and not the whole engine (issue
37: start-up).  Adding a public name: add it here with its module (tests/test_package.py
checks that every name is the module's own).
"""

from __future__ import annotations

from .extras import lazy_exports as _lazy_exports

#: public name -> the submodule (relative to this package) that defines it
_EXPORTS: dict[str, str] = {
    "ADD_REMOVE": "relations",
    "REPLACE_ONE": "relations",
    "AtomicLossLaw": "laws.loss_law",
    "Bracket": "bracket",
    "BudgetExceededError": "ledger",
    "Capabilities": "mechanism",
    "ComposedMechanism": "transformers.compose",
    "GaussianDPMechanism": "families.custom",
    "GaussianLossLaw": "laws.loss_law",
    "GaussianMechanism": "families.gaussian",
    "GridPLD": "pld.grid",
    "LedgerFileError": "ledger",
    "Mechanism": "mechanism",
    "MissingCapabilityError": "families.custom",
    "MixtureOfGaussiansMechanism": "families.mixture_gaussian",
    "PLDSettings": "mechanism",
    "PoissonSubsampledLossLaw": "laws.loss_law",
    "PoissonSubsampledMechanism": "transformers.subsample",
    "PrivacyAccountant": "ledger",
    "PrivacyLossLaw": "laws.loss_law",
    "RandomAllocationMechanism": "transformers.random_allocation",
    "ShufflingReport": "transformers.shuffling",
    "WithoutReplacementSubsampledMechanism": "transformers.subsample",
    "advantage": "queries.attack_risk",
    "advantage_bounds": "queries.attack_risk",
    "compose": "transformers.compose",
    "discretize": "pld.grid",
    "mechanism_from_delta_curve": "families.custom",
    "mechanism_from_epsilon_delta": "families.custom",
    "mechanism_from_gdp": "families.custom",
    "mechanism_from_loss_laws": "families.custom",
    "mechanism_from_pure_epsilon": "families.custom",
    "mechanism_from_rdp": "families.custom",
    "MinSeparationSubsampledMechanism": "transformers.min_separation",
    "min_separation_delta_mc": "transformers.min_separation",
    "min_separation_dpsgd": "transformers.min_separation",
    "min_separation_subsample": "transformers.min_separation",
    "poisson_subsample": "transformers.subsample",
    "pure_dp_rdp": "rdp.conversion",
    "random_allocation": "transformers.random_allocation",
    "random_allocation_delta_mc": "transformers.random_allocation",
    "random_allocation_lower_epsilon": "transformers.random_allocation",
    "repeat_and_select": "transformers.repeat_select",
    "rdp_to_delta": "rdp.conversion",
    "rdp_to_epsilon": "rdp.conversion",
    "register_mechanism": "serialization",
    "shuffled_batches": "transformers.shuffling",
    "subsample_without_replacement": "transformers.subsample",
    "tpr_at": "queries.attack_risk",
    "tpr_bounds": "queries.attack_risk",
    "tradeoff_bounds": "queries.attack_risk",
    "TruncatedPoissonGaussianMechanism": "transformers.truncated_poisson",
    "user_level_dpsgd": "families.mixture_gaussian",
    "zcdp_rdp": "rdp.conversion",
}

__all__ = list(_EXPORTS)


__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
