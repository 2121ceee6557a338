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


def _commands(command, path=()):
    """Every command and group of the CLI, with the words that reach it."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():  # a group (Typer's own click)
        yield from _commands(sub, (*path, name))


def test_no_help_shows_a_type_beside_a_flag_and_every_summary_is_one_line():
    import typer.main
    from click.testing import CliRunner

    from steward.cli.main import app

    root = typer.main.get_command(app)
    runner = CliRunner()
    seen = 0
    for path, command in _commands(root):
        result = runner.invoke(
            root, [*path, "--help"], env={"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
        )
        assert result.exit_code == 0, (path, result.output)
        assert "<bool>" not in result.output, (path, result.output)
        assert "--help" in result.output
        # The command list shows a summary's first paragraph as written: one line, no break.
        summary = (command.help or "").strip().split("\n\n")[0]
        assert "\n" not in summary, (path, summary)
        seen += 1
    assert seen > 30  # every command was looked at, not only the top level
