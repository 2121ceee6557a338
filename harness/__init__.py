"""What tests and benchmarks share: the real `steward` CLI driven against private services,
workspaces written for it, and small fakes of what cannot run here (Docker, Kubernetes, an
Apprise receiver)."""
