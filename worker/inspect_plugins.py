"""Inspect extensions Steward registers in every Inspect process (via the entry point)."""

from steward.activities.capacity import rate_pacing
from steward.worker import approver, offline_model  # noqa: F401  (importing registers them)

# Model requests paced inside the providers' rate limits, in the processes Steward starts
# (only where STEWARD_RATE_LIMITS is set: a user's own eval_set() is left as it is).
rate_pacing.install()
