"""The `.env` files a workspace reads (its own and its parents'), and the refusal of one that
python-dotenv cannot read.

python-dotenv only logs a warning for a line it cannot parse, and silently skips a name
without a value; either way a credential or an option the user meant to set is lost without
a word. Steward refuses such a file instead, naming the file, the line and the fix, and never
echoing the line (it may hold a secret).

Imports nothing heavy: the definition runner uses it before the user's definition runs.
"""

from __future__ import annotations

import os
from pathlib import Path

from dotenv.main import dotenv_values
from dotenv.parser import parse_stream


def dotenv_chain(workspace: Path) -> list[Path]:
    """`.env` files from the root down to the workspace: later (nearer) ones win."""
    found = [d / ".env" for d in [workspace, *workspace.parents] if (d / ".env").is_file()]
    return list(reversed(found))


def workspace_environment(workspace: str) -> dict[str, str]:
    """The environment a worker of `workspace` sees: its .env chain, the process's winning."""
    merged: dict[str, str] = {}
    if workspace:
        for env_file in dotenv_chain(Path(workspace)):
            merged.update({k: v for k, v in dotenv_values(env_file).items() if v is not None})
    merged.update(os.environ)
    return merged


def dotenv_problem(path: Path) -> str | None:
    """Why `path` cannot be read as NAME=value lines, in one sentence; None when it can."""
    try:
        with path.open(encoding="utf-8") as stream:  # python-dotenv's own encoding
            bindings = list(parse_stream(stream))
    except UnicodeDecodeError:
        return f"{path} is not UTF-8 text; save it as UTF-8."
    except OSError as err:
        return f"{path} cannot be read ({err.strerror or err}); make it readable or remove it."
    for binding in bindings:
        # A statement dotenv cannot parse starts at the blank lines before it: skip them.
        text = binding.original.string
        line = binding.original.line + text[: len(text) - len(text.lstrip())].count("\n")
        if binding.error:
            return (
                f"{path} line {line} is not a NAME=value line; fix it or remove it "
                "(a comment starts with #)."
            )
        if binding.key is not None and binding.value is None:
            return (
                f"{path} line {line} names {binding.key} without a value; "
                f"write {binding.key}=value, or remove the line."
            )
    return None
