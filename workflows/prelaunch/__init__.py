"""The short workflows `steward launch` runs before a run exists: the preflight (capture, the
smoke) and the credentials check."""
