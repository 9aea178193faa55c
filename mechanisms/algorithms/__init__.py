"""Algorithms built from the primitives; their privacy is a composition."""
