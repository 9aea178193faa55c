"""Primitive mechanisms: one noise addition or selection, exactly accounted."""
