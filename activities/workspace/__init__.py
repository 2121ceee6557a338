"""The workspace, the user's side of a run: create and find it, its options and .env files,
status.md, journal.jsonl, analysis.md, and notifications through Apprise."""
