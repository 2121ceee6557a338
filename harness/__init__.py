"""What tests and benchmarks share: the real `steward` CLI driven against private services,
workspaces written for it (helpers), small fakes of what cannot run here (Docker, Kubernetes, an
Apprise receiver), and the files a few tiers share: approval requests and answers (approvals),
compose files (sandboxes), a real scan log and scanners (scanning)."""
