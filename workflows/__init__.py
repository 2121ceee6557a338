"""Deterministic workflow definitions, their contracts and the pure policy they decide with."""
