"""The `steward` command line: parse, call Temporal, render."""
