"""`steward --help` as a person reads it: --version is a plain flag, not an option that seems to
take a value."""

from __future__ import annotations

import os
import subprocess
import sys


def test_version_shows_as_a_plain_flag_in_the_help():
    done = subprocess.run(
        [sys.executable, "-m", "steward.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"},
    )
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stdout.splitlines() if "--version" in line]
    assert "Print the version and exit." in line
    assert "<bool>" not in line and "BOOLEAN" not in line, line
