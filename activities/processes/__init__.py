"""Task-worker processes: spawn (from scratch or forked), watch, observe through Inspect's
control socket, stop; the definition runner's launch."""
