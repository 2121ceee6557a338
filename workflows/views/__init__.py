"""What a run shows, pure: status.md and table rows, analysis.md's facts, the Temporal web UI's
page, and what `steward collect` hands an agent."""
