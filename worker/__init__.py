"""Process entry points: the Temporal worker, the per-task eval worker, embedded services."""
