"""The user's definition before it runs: capture its tasks, smoke them, size their sandboxes,
check the credentials its models need."""
