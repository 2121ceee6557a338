"""Where a definition was when it stopped answering, read from the Python stack dump its runner
wrote on request (faulthandler, registered by worker/definition_runner.py in capture mode).

The dump lists every thread, most recent call first. The thread that matters is the one
running the definition (the runner's main thread); in it, the frames that matter are the
user's: files under the workspace (or the definition's own directory). The innermost of those
is where the definition was, with the line of source it was on; the frames below it say how it
got there, and a library frame above it says what it was waiting in.
"""

from __future__ import annotations

import linecache
import re
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

_THREAD = re.compile(r"^(Current thread|Thread) 0x[0-9a-fA-F]+ \(most recent call first\):\s*$")
_FRAME = re.compile(r'^\s+File "(?P<file>.*)", line (?P<line>\d+) in (?P<function>.+?)\s*$')
RUNNER_FILE = "definition_runner.py"  # the runner's main thread runs the definition from it
CALLERS_SHOWN = 2  # user frames named after the innermost one


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str


@dataclass(frozen=True)
class Thread:
    current: bool  # the thread that took the signal
    frames: list[Frame]  # most recent call first


def parse_dump(text: str) -> list[Thread]:
    """The threads of the faulthandler dumps in `text` (other output around them is skipped)."""
    threads: list[Thread] = []
    frames: list[Frame] | None = None
    for line in text.splitlines():
        header = _THREAD.match(line)
        if header:
            frames = []
            threads.append(Thread(current=header.group(1) == "Current thread", frames=frames))
            continue
        frame = _FRAME.match(line) if frames is not None else None
        if frame and frames is not None:
            frames.append(Frame(frame["file"], int(frame["line"]), frame["function"]))
        elif frames is not None and line.strip() not in ("", "...", "<no Python frame>"):
            frames = None  # the dump ended; what follows is other output
    return threads


def definition_thread(threads: list[Thread]) -> Thread | None:
    """The thread running the definition: the one started from the runner, else the one that
    took the signal, else the last listed (Python lists the main thread last)."""
    for thread in threads:
        if any(Path(f.file).name == RUNNER_FILE for f in thread.frames):
            return thread
    current = [t for t in threads if t.current]
    return current[-1] if current else (threads[-1] if threads else None)


def _absolute(file: str, workspace: Path) -> Path:
    path = Path(file)
    return path if path.is_absolute() else workspace / path


def _is_under(path: Path, roots: list[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def _library_roots() -> list[Path]:
    paths = sysconfig.get_paths()
    return [
        Path(paths[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths
    ]


def shown_path(file: str, workspace: Path, libraries: list[Path]) -> str:
    """A frame's file as a person reads it: relative to the workspace, or to the library
    directory it is in (site-packages, the standard library), else as it is."""
    if file.startswith("<"):
        return file
    path = _absolute(file, workspace)
    for root in [workspace, *sorted(libraries, key=lambda p: len(p.parts), reverse=True)]:
        if path == root or root in path.parents:
            return str(path.relative_to(root))
    return str(path)


def where_it_was(
    dump: str,
    workspace: str,
    definition: str,
    source_line: Callable[[str, int], str] | None = None,
    libraries: list[Path] | None = None,
) -> str | None:
    """One phrase saying where the definition was in `dump`, e.g. "evalset.py:12 in <module>
    (`time.sleep(3600)`)"; None when the dump holds no frame of the thread running it."""
    root = Path(workspace).resolve()
    libraries = _library_roots() if libraries is None else libraries
    read = source_line or (lambda file, line: linecache.getline(file, line))
    thread = definition_thread(parse_dump(dump))
    if thread is None or not thread.frames:
        return None
    # What the runner called, never the runner (nor what started it), even in a workspace
    # that holds Steward's own files.
    runner_at = next(
        (i for i, f in enumerate(thread.frames) if Path(f.file).name == RUNNER_FILE), None
    )
    frames = thread.frames[:runner_at] or thread.frames
    user_roots = [root, _absolute(definition, root).parent]
    mine = [
        f
        for f in frames
        if not f.file.startswith("<")
        and not _is_under(_absolute(f.file, root), libraries)
        and _is_under(_absolute(f.file, root), user_roots)
    ]

    def named(frame: Frame) -> str:
        return f"{shown_path(frame.file, root, libraries)}:{frame.line} in {frame.function}"

    if not mine:  # it never reached the user's code (or left it for good): the innermost frame
        return named(frames[0])
    innermost = mine[0]
    phrase = named(innermost)
    source = read(str(_absolute(innermost.file, root)), innermost.line).strip()
    if source:
        phrase += f" (`{source}`)"
    deeper = frames[0]
    if deeper is not innermost:
        phrase += f", inside {named(deeper)}"
    callers = mine[1 : 1 + CALLERS_SHOWN]
    if callers:
        phrase += ", called from " + ", from ".join(named(f) for f in callers)
    return phrase
