"""Locations: every place Steward reads or writes logs and mirrors may be a local path or an
fsspec URL (s3://..., memory://...).

Local paths get atomic writes and renames; URLs go through Inspect's fsspec helpers. A path
handed back keeps the form it was given in: a local path stays a plain path, never a file://
URL (Inspect names local logs both ways).
"""

from __future__ import annotations

import os
from pathlib import Path


def local_path(location: str) -> str:
    """`location` without a `file://` prefix: a local log named as a path."""
    return location.removeprefix("file://")


def is_url(location: str) -> bool:
    return "://" in location


def join_location(directory: str, name: str) -> str:
    if is_url(directory):
        return directory.rstrip("/") + "/" + name
    return str(Path(directory).expanduser() / name)


def location_name(location: str) -> str:
    """The last part of a path or URL: a log's file name."""
    return location.rstrip("/").rsplit("/", 1)[-1]


def filesystem(location: str):  # type: ignore[no-untyped-def]
    """The fsspec filesystem that holds `location` (local or remote)."""
    from inspect_ai._util.file import filesystem as inspect_filesystem

    return inspect_filesystem(location)


def exists(location: str) -> bool:
    return filesystem(location).exists(location if is_url(location) else local_path(location))


def write_atomic(path: Path, text: str) -> None:
    """Write a local file so that a reader (or a crash) sees the old text or the new, whole."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def unwritable(location: str) -> str | None:
    """Why a local directory cannot be created or written, in the OS's words; None when it can,
    or when it is a URL (a remote store is not probed). It is probed as the workers will use it:
    created if missing, a file written and removed. Directories made for the probe are removed
    again, so a refusal (or a dry run) leaves nothing behind."""
    import tempfile

    if is_url(location):
        return None
    directory = Path(local_path(location)).expanduser()
    made = [d for d in [directory, *directory.parents] if not d.exists()]  # deepest first
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".steward-probe-"):
            pass
    except OSError as err:
        return err.strerror or str(err)
    finally:
        for created in made:
            try:
                created.rmdir()
            except OSError:
                break
    return None
