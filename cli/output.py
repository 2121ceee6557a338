"""How every command speaks: Rich for people, one JSON document with --json, one exit code per
kind of outcome, and never a traceback for a user's mistake.

Exit codes:
  0 OK         the command did what it said.
  1 FAILED     it could not: Temporal or the worker unreachable, a smoke run that failed, an
               update that failed while it ran (an activity), a service that is not running.
  2 BAD_INPUT  it was refused and changed nothing, with one sentence saying how to fix it: bad
               arguments or workspace, no run launched, or the run refused the command in its
               state — an update's validator said no, or the run has already ended. The same
               refusal is the same code whichever command meets it.
  3 TIMED_OUT  `steward wait` saw nothing it wakes for within its --timeout.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import typer
from rich.console import Console

OK, FAILED, BAD_INPUT, TIMED_OUT = 0, 1, 2, 3
console = Console()
errors = Console(stderr=True)


@contextmanager
def working(step: str, as_json: bool) -> Iterator[Callable[[str], None]]:
    """A spinner naming the current step on stderr while a command works, for a person at a
    terminal: nothing with --json or when stderr is not a terminal. Yields `say(step)`."""
    if as_json or not errors.is_terminal:
        yield lambda _step: None
        return
    with errors.status(step) as status:
        yield lambda next_step: status.update(next_step)


class CommandError(Exception):
    def __init__(self, message: str, code: int = FAILED) -> None:
        super().__init__(message)
        self.code = code


def bad_input(message: str) -> CommandError:
    """A refusal: the input, or the run's state, does not allow the command; nothing changed."""
    return CommandError(message, BAD_INPUT)


def emit(as_json: bool, data: Any, render: Callable[[], None]) -> None:
    if as_json:
        sys.stdout.write(json.dumps(data, indent=1, default=str) + "\n")
    else:
        render()


def finish(code: int) -> NoReturn:
    """Leave without running interpreter teardown: the Temporal client's runtime can abort
    a short-lived process at exit (sdk-python#300)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def error_document(message: str, code: int) -> str:
    """The one JSON document of a command that failed or was refused."""
    return json.dumps({"ok": False, "error": message, "exit_code": code}) + "\n"


def fail(error: CommandError, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(error_document(str(error), error.code))
    else:
        errors.print(f"[bold red]error:[/] {error}", highlight=False, soft_wrap=True)
    finish(error.code)


def refuse_usage(error: typer.TyperException, argv: list[str]) -> NoReturn:
    """A usage error Click raised before any command ran (a missing argument, an unknown
    option): Typer's usual message on stderr and, with --json anywhere on the command line,
    the JSON error document on stdout too, so an agent reads it like any other refusal."""
    from typer import rich_utils

    if "--json" in argv:
        message = error.format_message()
        context = getattr(error, "ctx", None)
        if context is not None:
            path = context.command_path
            message = f"{path}: {message.rstrip('.')}; see `{path} --help`."
        sys.stdout.write(error_document(message, error.exit_code))
    rich_utils.rich_format_error(error)  # type: ignore[arg-type]  # Typer's own display
    finish(error.exit_code)


def unexpected(err: Exception) -> str:
    """The one line for an error no step of the command foresaw. A file or directory it could
    not use is named with what to check; anything else is a bug or an outage."""
    if isinstance(err, OSError) and err.filename:
        return (
            f"Cannot use {err.filename} ({err.strerror or err}); check that it exists and that "
            "this user may read and write it, then run the command again."
        )
    return f"unexpected {type(err).__name__}: {err} (set STEWARD_DEBUG=1 for details)"


def command(fn: Callable) -> Callable:
    """Run a command body: map failures to one sentence and an exit code, then leave."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        as_json = bool(kwargs.get("as_json"))
        try:
            fn(*args, **kwargs)
        except CommandError as err:
            fail(err, as_json)
        except KeyboardInterrupt:
            fail(CommandError("interrupted"), as_json)
        except Exception as err:  # a bug or an outage: one line, unless debugging
            if os.environ.get("STEWARD_DEBUG"):
                raise
            fail(CommandError(unexpected(err)), as_json)
        finish(OK)

    return wrapper
