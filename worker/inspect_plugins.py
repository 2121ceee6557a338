"""Inspect extensions Steward registers in every Inspect process (via the entry point)."""

from steward.worker import approver, offline_model  # noqa: F401  (importing registers them)
