"""Every side effect Steward has: capture, spawn, observe, workspace files."""
