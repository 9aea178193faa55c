"""Renyi DP: curves, subsampled bounds, conversion to (epsilon, delta)."""
