"""Queries on a privacy curve: trade-off curves and attack risk."""
