"""`python -m steward.cli ...` is `steward ...`: what the watchdog's service unit runs, so it
needs only the interpreter it was installed with, not the `steward` script on a PATH."""

from steward.cli.main import run

run()
