"""The long-lived workflows a run talks to: the capacity ledger (one FIFO queue per capacity
domain), the provider ledger (what each endpoint allowed last) and the host registry."""
