"""Capacity: probes of Docker and Kubernetes, Docker's address pools, the ledger's admission
answer, the provider budgets exchange and the hosts a run may place workers on."""
