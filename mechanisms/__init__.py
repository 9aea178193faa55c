"""The mechanism zoo: concrete mechanisms and the algorithms built on them."""

from .gaussian import GaussianMechanism, gaussian_delta

__all__ = ["GaussianMechanism", "gaussian_delta"]
