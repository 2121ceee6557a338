"""Inspect logs and the log store: listing, curation, ownership, the store and mirrors, the
anomalies and usage read out of logs, rulings carried out on them."""
