"""Mechanism families declared by one capability (GDP, RDP, a delta curve)."""
