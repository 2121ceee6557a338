"""The scoring-integrity scan (inspect_scout): planned into parts, each in a process of its
own, following the connections the run gives it, its findings read back."""
