"""Transformers: a mechanism in, a mechanism out (samplers, composition)."""
