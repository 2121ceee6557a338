"""A step that can take minutes (resolving a definition runs the user's code), shown while it
runs: on a terminal a spinner naming it with the seconds so far, otherwise (a log, an agent's
pipe) a line once it has taken QUIET_S and another every PLAIN_EVERY_S; with --json nothing, the document
alone says how it ended. All of it on stderr: stdout carries the command's result."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.text import Text

from steward.cli.output import errors

PLAIN_EVERY_S = 30.0
QUIET_S = 5.0


class _Elapsed:
    """The step's text with its seconds so far, re-rendered at each refresh of the spinner."""

    def __init__(self, step: str, started: float) -> None:
        self.step, self.started = step, started

    def __rich__(self) -> Text:
        return Text(f"{self.step} {time.monotonic() - self.started:.0f} s")


@contextmanager
def timed_step(step: str, as_json: bool, every: float = PLAIN_EVERY_S) -> Iterator[None]:
    """Show `step` (e.g. "resolving evalset.py (capture)") until the block ends."""
    if as_json:
        yield
        return
    started = time.monotonic()
    if errors.is_terminal:
        with errors.status(_Elapsed(step, started)):
            yield
        return
    stop = threading.Event()

    def tick() -> None:
        # A step done within QUIET_S says nothing off a terminal (a script's pipe stays clean);
        # a longer one says what it waits for, then again every `every` seconds.
        if stop.wait(QUIET_S):
            return
        errors.print(f"{step} ...", highlight=False, soft_wrap=True)
        while not stop.wait(every):
            seconds = time.monotonic() - started
            errors.print(f"{step}: still going, {seconds:.0f} s", highlight=False, soft_wrap=True)

    ticker = threading.Thread(target=tick, name="step-progress", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
