"""How every command speaks: Rich for people, one JSON document with --json, exit codes
0 ok / 1 failed / 2 bad input, and never a traceback for a user's mistake."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

from rich.console import Console

OK, FAILED, BAD_INPUT = 0, 1, 2
console = Console()
errors = Console(stderr=True)


class CommandError(Exception):
    def __init__(self, message: str, code: int = FAILED) -> None:
        super().__init__(message)
        self.code = code


def bad_input(message: str) -> CommandError:
    return CommandError(message, BAD_INPUT)


def emit(as_json: bool, data: Any, render: Callable[[], None]) -> None:
    if as_json:
        sys.stdout.write(json.dumps(data, indent=1, default=str) + "\n")
    else:
        render()


def finish(code: int) -> None:
    """Leave without running interpreter teardown: the Temporal client's runtime can abort
    a short-lived process at exit (sdk-python#300)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def fail(error: CommandError, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(
            json.dumps({"ok": False, "error": str(error), "exit_code": error.code}) + "\n"
        )
    else:
        errors.print(f"[bold red]error:[/] {error}", highlight=False, soft_wrap=True)
    finish(error.code)
